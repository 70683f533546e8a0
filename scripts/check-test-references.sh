#!/bin/sh
# make test: no test computes its expected value with the code it tests.
#
# A test's reference (what it compares lib's result with) comes from a golden
# written by PyTorch or from arithmetic in the test. Computed by the function
# under test, or by one that function calls, a wrong lib moves the reference
# with it: the test passes, or blames the wrong mistake.
#
# The rule, per test file tests/test_NAME.c:
#
#   its functions under test are every function declared in the lib headers it
#   includes ("attention/attention.h": attention(), attention_scale(), ...),
#   except base/'s (tensors, the random numbers, the trace: the tests' own
#   tools), which count only in their own suite (base/rng.h in test_rng.c).
#
#   An expectation is
#     (a) a variable named want*, expect*, ref*, reference* or golden*
#         assigned a value:              want = attention_scale(&opt, dh);
#     (b) such a variable (or a field of that name) as the first argument of a
#         call that writes it (lib writes its output first; the header's first
#         parameter a pointer, not const):
#                                        softmax_rows(want, x, 4, 8);
#                                        matmul_naive(p.want.data, a, b, M, K, N);
#     (c) the expected argument of a comparison: the second of CU_ASSERT_EQUAL,
#         CU_ASSERT_DOUBLE_EQUAL (and their _FATAL), assert_tensor_close,
#         check_assert_close, tensor_close, tensor_near (the call under test
#         belongs in the first, the actual: CU_ASSERT_EQUAL(dot(a, b, 3), 32.0f));
#     (d) anything inside a helper of the test file that computes one: a
#         function whose name says so (*by_hand*, *reference*, *expected*,
#         *wanted*, *naive*, diagnose_*, the hint probes' candidates).
#
#   A call to a function under test inside an expectation is flagged as
#   "FILE:LINE: FUNCTION computes the expectation of ...".
#
# A comparison that is meant (the fast kernel against its naive twin, which a
# golden pins elsewhere; a whole against the pieces each suite pins, to test
# how it joins them; two functions that must agree) says why on its line or
# the line before, with a comment beginning "independent:"; on the line
# before a helper, the reason covers the whole helper:
#     // independent: matmul_naive() is held to PyTorch by its own test
# The reason is for the reader; the script only looks for the word. A call on
# both sides of one comparison is a property, not a reference, and passes:
#     CU_ASSERT_EQUAL(dot(a, b, 5), dot(b, a, 5));
# Calls that only free or allocate (*_new, *_free, *_close, ...) write no value.
#
# The rule is textual (a statement is read up to its ';' or '{'), so it can
# miss a reference passed through an unnamed variable; it never needs a build.
#
# Usage: scripts/check-test-references.sh [TESTS_DIR [LIB_DIR]]   (tests, lib)
#        scripts/check-test-references.sh --self-test
# Prints "tests: N files, M statements read, no expectation computed by the code
# under test", or each finding and exits 1; exits 2 on a missing folder. --self-test
# runs the check on a small sample with a mistake of each kind (a)-(d) and
# lines that pass (exempt, a property, base/), and fails unless exactly the
# sample's planted lines are found.
set -eu

if [ "${1:-}" = --self-test ]; then
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    mkdir -p "$tmp/lib/ops" "$tmp/lib/base" "$tmp/tests"
    cat >"$tmp/lib/ops/ops.h" <<'EOF'
float ops_scale(int d);
void softmax_rows(float *out, const float *x, int rows, int n);
void softmax_naive(float *out, const float *x, int rows, int n);
EOF
    cat >"$tmp/lib/base/tensor.h" <<'EOF'
Tensor tensor_new(int rank, ...);
EOF
    # each line marked "PLANTED" must be flagged, and nothing else
    cat >"$tmp/tests/test_ops.c" <<'EOF'
#include "ops/ops.h"
#include "base/tensor.h"
typedef struct { Tensor want; } Sample;
static double scale_by_hand(int d) {
    return ops_scale(d);                                     /* PLANTED (d) */
}
static void test_softmax(Sample *s) {
    float x[4] = {1, 2, 3, 4}, got[4], want[4];
    Tensor t = tensor_new(1, 4);                             /* base/: a tool here */
    const float expected_scale = ops_scale(16);              /* PLANTED (a) */
    softmax_rows(want, x, 1, 4);                             /* PLANTED (b) */
    softmax_rows(s->want.data, x, 1, 4);                     /* PLANTED (b), a field */
    softmax_rows(got, x, 1, 4);
    CU_ASSERT_DOUBLE_EQUAL(got[0],                           /* PLANTED (c) */
                           ops_scale(4) * x[0], 1e-6);
    // independent: the naive softmax is held to PyTorch elsewhere
    softmax_naive(want, x, 1, 4);
    CU_ASSERT_EQUAL(ops_scale(16), 0.25f);                   /* actual, not expected */
    "softmax_rows(want, x)";
    CU_ASSERT_EQUAL(ops_scale(4) * 2, ops_scale(1));         /* a property */
}
// independent: the reason covers the helper
static double wanted_scale(int d) { return ops_scale(d); }
EOF
    planted=$(grep -n PLANTED "$tmp/tests/test_ops.c" | cut -d: -f1)
    count=$(printf '%s\n' "$planted" | wc -l)
    out=$("$0" "$tmp/tests" "$tmp/lib" 2>&1) && {
        printf 'check-test-references --self-test: the bad sample passed:\n%s\n' "$out" >&2
        exit 1
    }
    found=$(printf '%s\n' "$out" | grep -c 'computes the expectation' || true)
    for line in $planted; do
        printf '%s\n' "$out" | grep -q "test_ops.c:$line: " || {
            printf 'check-test-references --self-test: line %s of the sample was not flagged:\n%s\n' \
                "$line" "$out" >&2
            exit 1
        }
    done
    [ "$found" -eq "$count" ] || {
        printf 'check-test-references --self-test: %s findings for %s planted:\n%s\n' "$found" \
            "$count" "$out" >&2
        exit 1
    }
    echo "check-test-references: the self-test found the sample's $found planted references, and no other"
    exit 0
fi

TESTS=${1:-tests}
LIB=${2:-lib}
for d in "$TESTS" "$LIB"; do
    [ -d "$d" ] || { printf 'check-test-references: no folder %s\n' "$d" >&2; exit 2; }
done

# "layer/file.h function" for every function a lib header declares
decls=$(for h in "$LIB"/*/*.h; do
    [ -e "$h" ] || continue
    rel=${h#"$LIB"/}
    # a declaration starts a line with its type: "float attention_scale(" or
    # "const Tensor *trace_find("; typedefs, macros and comments do not
    grep -E '^[A-Za-z_][A-Za-z0-9_ ]*[ *]+[a-z_][a-z0-9_]*\(' "$h" |
        grep -vE '^(typedef|static|return|extern "C")' |
        # "name out" when its first parameter is written (a pointer, not const), else "name in"
        sed -E 's/^[^(]*[ *]([a-z_][a-z0-9_]*)\(([^,)]*).*/\1 \2/' |
        awk -v rel="$rel" '{ name = $1; $1 = ""
            print rel, name, ($0 ~ /\*/ && $0 !~ /const/) ? "out" : "in" }'
done)

status=0
files=0
for t in "$TESTS"/test_*.c; do
    [ -e "$t" ] || continue
    files=$((files + 1))
    own=${t##*/}; own=${own#test_}; own=${own%.c}
    # the lib headers this file includes, base/'s only in its own suite
    headers=$(sed -nE 's/^[ \t]*#[ \t]*include[ \t]*"([a-z_]+\/[a-z_0-9]+\.h)".*/\1/p' "$t" |
        while read -r h; do
            case $h in base/"$own".h) echo "$h" ;; base/*) ;; *) echo "$h" ;; esac
        done)
    [ -n "$headers" ] || continue
    under=$(printf '%s\n' "$decls" | awk -v hs="$headers" '
        BEGIN { n = split(hs, H, "\n"); for (i = 1; i <= n; i++) want[H[i]] = 1 }
        ($1 in want) { print $2 ":" $3 }' | sort -u | tr '\n' ' ')
    [ -n "$under" ] || continue
    awk -v under="$under" -v file="$t" '
    BEGIN {
        n = split(under, U, " ")
        for (i = 1; i <= n; i++) { split(U[i], P, ":"); fut[P[1]] = 1; if (P[2] == "out") writes[P[1]] = 1 }
        EXPECT = "(want|expect|expected|ref|reference|golden)([A-Z_0-9][A-Za-z0-9_]*|s)?"
        LIFECYCLE = "_(new|free|close|destroy|release|reset|clear)$"
        depth = 0; incomment = 0; stmt = ""; fn = ""
    }
    # the code of a line: comments, strings and characters blanked
    function code(s,    out, c, i, q) {
        out = ""
        for (i = 1; i <= length(s); i++) {
            c = substr(s, i, 1)
            if (incomment) {
                if (substr(s, i, 2) == "*/") { incomment = 0; i++ }
                continue
            }
            if (substr(s, i, 2) == "/*") { incomment = 1; i++; continue }
            if (substr(s, i, 2) == "//") break
            if (c == "\"" || c == "\047") {
                q = c; out = out " "
                for (i++; i <= length(s) && substr(s, i, 1) != q; i++)
                    if (substr(s, i, 1) == "\\") i++
                continue
            }
            out = out c
        }
        return out
    }
    # the functions under test called in s
    function calls(s,    found, w, rest) {
        found = ""; rest = " " s # a space before the first name (substr at 0 differs between awks)
        while (match(rest, /[A-Za-z_][A-Za-z0-9_]*[ \t]*\(/)) {
            w = substr(rest, RSTART, RLENGTH); sub(/[ \t]*\($/, "", w)
            if ((w in fut) && substr(rest, RSTART - 1, 1) !~ /[A-Za-z0-9_.>]/) found = found " " w
            rest = substr(rest, RSTART + RLENGTH)
        }
        return found
    }
    # the names of list a that are not in list b: a function on both sides of a
    # comparison is a property of it (dot(a, b) == dot(b, a)), not a reference
    function minus(a, b,    out, m, i, A) {
        out = ""; m = split(a, A, " ")
        for (i = 1; i <= m; i++) if (index(b " ", " " A[i] " ") == 0) out = out " " A[i]
        return out
    }
    # the top-level argument k (1-based) of the call whose "(" ends at p in s
    function arg(s, p, k,    d, i, c, n, start) {
        d = 0; n = 1; start = p + 1
        for (i = p + 1; i <= length(s); i++) {
            c = substr(s, i, 1)
            if (c == "(" || c == "[" || c == "{") d++
            else if ((c == ")" || c == "]" || c == "}") && d > 0) d--
            else if ((c == ")" && d == 0) || (c == "," && d == 0)) {
                if (n == k) return substr(s, start, i - start)
                if (c == ")") return ""
                n++; start = i + 1
            }
        }
        return ""
    }
    function flag(line, what, found,    m, i) {
        m = split(found, F, " ")
        for (i = 1; i <= m; i++)
            if (!(line SUBSEP F[i] in seen)) {
                seen[line SUBSEP F[i]] = 1
                printf "%s:%d: %s() computes the expectation of %s: the code under test is no reference (take it from a golden or work it out in the test; or say why not, \"// independent: ...\")\n", file, line, F[i], what
                bad = 1
            }
    }
    function examine(s, line,    rest, w, p, e, before) {
        # (d) a helper that computes a reference
        if (fn ~ /by_hand|reference|expected|wanted|naive|^diagnose_/ && fn !~ /^test_/) flag(line, fn "()", calls(s))
        # (a) want = ...
        rest = s
        while (match(rest, "(^|[^A-Za-z0-9_.>])" EXPECT "(\\[[^]]*\\])*[ \t]*=[^=]")) {
            w = substr(rest, RSTART, RLENGTH); sub(/^[^A-Za-z_]/, "", w); sub(/[ \t\[=].*/, "", w)
            rest = substr(rest, RSTART + RLENGTH - 1) # the value, to the end of the statement
            flag(line, w, calls(rest))
        }
        # (b) fn(want, ...)
        rest = s
        while (match(rest, /[A-Za-z_][A-Za-z0-9_]*[ \t]*\(/)) {
            w = substr(rest, RSTART, RLENGTH); sub(/[ \t]*\($/, "", w)
            p = RSTART + RLENGTH - 1
            before = substr(rest, RSTART - 1, 1)
            if ((w in writes) && w !~ LIFECYCLE && before !~ /[A-Za-z0-9_.>]/) {
                e = arg(rest, p, 1); gsub(/^[ \t&*(]+/, "", e)
                # want, want.data, want + i, or a field named so: p.want.data
                if (e ~ "^([A-Za-z_][A-Za-z0-9_]*(\\.|->))*" EXPECT "([ \t]*([.]data|->data|[[+]|$))") {
                    sub(/[ \t]*$/, "", e); flag(line, e, " " w)
                }
            }
            # (c) the expected argument of a comparison
            if (w ~ /^(CU_ASSERT_EQUAL|CU_ASSERT_EQUAL_FATAL|CU_ASSERT_DOUBLE_EQUAL|CU_ASSERT_DOUBLE_EQUAL_FATAL|assert_tensor_close|check_assert_close|tensor_close|tensor_near)$/)
                flag(line, "a " w "()", minus(calls(arg(rest, p, 2)), calls(arg(rest, p, 1))))
            rest = substr(rest, p + 1) # (calls() moved RSTART)
        }
        seen_stmts++
    }
    {
        raw = $0
        exempt = raw ~ /independent:/ || prev ~ /independent:/
        prev = raw
        c = code(raw)
        # a function starts at depth 0 with its name before "("
        if (depth == 0 && match(c, /[a-z_][a-z0-9_]*[ \t]*\(/) && c !~ /^[ \t]*(#|typedef)/) {
            fn = substr(c, RSTART, RLENGTH); sub(/[ \t]*\($/, "", fn)
            fn_exempt = exempt # the reason above a helper covers all of it
        }
        if (stmt ~ /^[ \t]*$/) { start = FNR; skip = 0 }
        stmt = stmt " " c
        skip = skip || exempt || fn_exempt
        for (i = 1; i <= length(c); i++) {
            ch = substr(c, i, 1)
            if (ch == "{") depth++
            else if (ch == "}") depth--
            else if (ch == "(") paren++
            else if (ch == ")") paren--
        }
        if (paren <= 0 && c ~ /[;{}][ \t]*$/) {
            if (!skip) examine(stmt, start)
            stmt = ""; paren = 0
        }
    }
    END { printf "%d\n", seen_stmts > "/dev/stderr"; exit bad }
    ' "$t" 2>>"${TMPDIR:-/tmp}/check-test-references.$$" || status=1
done
stmts=$(awk '{ s += $1 } END { print s + 0 }' "${TMPDIR:-/tmp}/check-test-references.$$" 2>/dev/null || echo 0)
rm -f "${TMPDIR:-/tmp}/check-test-references.$$"
if [ $status -eq 0 ]; then
    echo "tests: $files files, $stmts statements read, no expectation computed by the code under test"
fi
exit $status
