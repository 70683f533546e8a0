#!/bin/sh
# The numbers of the book: part of make docs-check (scripts/docs-check.sh runs
# it), after make docs has captured what every chapter prints.
#
#   scripts/docs-numbers.sh               checks every chapter page
#   scripts/docs-numbers.sh --self-test   proves the check fails on a wrong number
#   scripts/docs-numbers.sh --page PAGE OUTPUT   checks one page against a transcript
#
# A chapter page (docs/chapters/NN_name.md) shows its program's real output
# (build/docs/output/NN_name.txt, which scripts/docs.sh captures). Its prose
# must not contradict it: every number the prose writes with a decimal point
# or an exponent (0.463, 84.1 %, 5.1e-10, 1e-6) must appear in that output,
# written the same way (0.46 does not match 0.463: a number is read whole).
# A sign in front is not part of the number (−0.02 matches -0.02). Not
# checked: fenced code, \code and \verbatim blocks, formulas (\f$ \f$,
# \f[ \f], \f{ \f}), `inline code`, HTML comments, links' addresses, and the
# lines that quote files (\snippet, \verbinclude, \include, \image, ...),
# which cannot drift. A number the output does not print fails the check,
# named with its page and line. A number that depends on the machine or on the
# matrix-product backend (a time, a rounding error) does not belong in the
# prose at all: the page includes the output, so the prose can point to it.
#
# Exit status: 0 when every number is in its output, 1 when one is not (each
# printed as "PAGE:LINE: NUMBER ..."), 2 when the output was not captured.
set -eu

cd "$(dirname "$0")/.."
OUT=build/docs/output

# Numbers a page may write although no output prints them: definitions, not
# measurements (a constant such as an epsilon, an initial standard deviation).
# One per line, the number as written, then why. Keep it short. Empty today:
# every definition the pages write, their outputs print too (1e-6, 0.02, ...),
# and a mathematical constant can be written as a formula, which is not checked.
DEFINITIONS='
'

# Pages not checked (space-separated names, each with its reason in a comment
# above it). None: every chapter page is checked.
NUMBERS_SKIP_PAGES=''

# check_page PAGE TRANSCRIPT: prints "PAGE:LINE: NUMBER ..." for every number
# of PAGE's prose that TRANSCRIPT does not print; status 1 if there was one.
check_page() {
    awk -v page="$1" -v transcript="$2" -v definitions="$DEFINITIONS" '
        # every number of s (digits, a decimal part, an exponent) that is not
        # part of a name (x1, fp16) or a version (1.2.3), into list[1..n]
        function numbers(s,    n, pre, tok, after) {
            n = 0
            while (match(s, /[0-9]+(\.[0-9]+)?([eE][-+]?[0-9]+)?/)) {
                pre = RSTART > 1 ? substr(s, RSTART - 1, 1) : ""
                tok = substr(s, RSTART, RLENGTH)
                after = substr(s, RSTART + RLENGTH, 2)
                s = substr(s, RSTART + RLENGTH)
                if (pre ~ /[A-Za-z0-9_.]/ || after ~ /^\.[0-9]/) {
                    sub(/^[0-9.]*/, "", s)        # the rest of the name or version
                    continue
                }
                list[++n] = tok
            }
            return n
        }
        BEGIN {
            split(definitions, def, "\n")
            for (i in def) if (split(def[i], w, " ") > 0) allowed[w[1]] = 1
            # what is not prose, by how it opens and closes (inline code
            # is handled apart: it ends on its line)
            closer["\\f$"] = "\\f$"; closer["\\f["] = "\\f]"; closer["\\f{"] = "\\f}"
            closer["<!--"] = "-->"; closer["`"] = "`"
        }
        # the transcript: every number it prints
        FNR == NR {
            k = numbers($0)
            for (i = 1; i <= k; i++) printed[list[i]] = 1
            next
        }
        # the page: its prose, line by line
        fence { if ($0 ~ /^[ \t]*(```|~~~)/) fence = 0; next }
        $0 ~ /^[ \t]*(```|~~~)/ { fence = 1; next }
        block { if ($0 ~ /[\\@]end(code|verbatim|dot|msc|htmlonly|latexonly)/) block = 0; next }
        state == "" && $0 ~ /^[ \t]*[\\@](code|verbatim|dot|msc|htmlonly|latexonly)([^a-z]|$)/ { block = 1; next }
        state == "" && $0 ~ /^[ \t]*[\\@](snippet|verbinclude|include|htmlinclude|image|dotfile|example)[ \t{]/ { next }
        {
            line = $0; text = ""
            while (line != "") {
                if (state != "") {      # inside a formula or a comment: find its end
                    i = index(line, closer[state])
                    if (!i) { line = ""; break }
                    line = substr(line, i + length(closer[state])); state = ""
                    continue
                }
                # the first thing that is not prose
                best = 0
                for (o in closer) {
                    i = index(line, o)
                    if (i && (!best || i < best)) { best = i; open = o }
                }
                if (!best) { text = text line; break }
                text = text substr(line, 1, best - 1) " "
                line = substr(line, best + length(open))
                if (open == "`") {      # inline code ends on its line
                    i = index(line, "`")
                    line = i ? substr(line, i + 1) : ""
                } else state = open
            }
            gsub(/https?:\/\/[^ \t)>"]*/, " ", text)        # addresses
            gsub(/\]\([^)]*\)/, "] ", text)                  # [text](target)
            gsub(/(src|href)="[^"]*"/, " ", text)
            k = numbers(text)
            for (i = 1; i <= k; i++) {
                x = list[i]
                if (x !~ /[.eE]/ || (x in printed) || (x in allowed)) continue
                printf "%s:%d: %s is not in the chapter'"'"'s output (%s)\n", page, FNR, x, transcript
                bad = 1
            }
        }
        END { exit bad }
    ' "$2" "$1"
}

# check_all: every chapter page against its program's output
check_all() {
    status=0 pages=0
    for page in docs/chapters/[0-9][0-9]_*.md; do
        name=$(basename "$page")
        case " $NUMBERS_SKIP_PAGES " in *" $name "*) continue ;; esac
        transcript=$OUT/${name%.md}.txt
        if [ ! -s "$transcript" ]; then
            echo "$page: its chapter's output $transcript is missing: run make docs first"
            status=2
            continue
        fi
        pages=$((pages + 1))
        check_page "$page" "$transcript" || status=1
    done
    [ "$status" -ne 0 ] || echo "docs-numbers: the numbers of $pages chapter pages are all in their output (skipped:$(printf ' %s' $NUMBERS_SKIP_PAGES))"
    return "$status"
}

# self_test: the check on copies of a page, in a folder of its own that is
# removed on exit. A wrong number planted in the prose must fail it, named
# with its line; the same number in a formula, in inline code, in a comment
# and on a \snippet line must not; nor must it once listed in DEFINITIONS;
# the untouched copy must pass.
self_test() {
    page=docs/chapters/01_dot_product.md
    transcript=$OUT/01_dot_product.txt
    [ -s "$transcript" ] || { echo "docs-numbers --self-test: $transcript is missing: run make docs first"; return 2; }
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/docs-numbers.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT INT TERM HUP
    wrong=987.654321
    grep -q "$wrong" "$transcript" && { echo "docs-numbers --self-test: $wrong is in $transcript; pick another"; return 1; }
    cp "$page" "$tmp/untouched.md"
    # the wrong number on line 3 of the copy, in prose
    { sed -n '1,2p' "$page"; echo "The planted number $wrong is printed by no chapter."; sed -n '3,$p' "$page"; } >"$tmp/planted.md"
    # the same number where the check must not look
    # (printf, not echo: dash's echo would turn \f into a form feed)
    { cat "$page"
      printf '%s\n' "A formula \\f\$x = $wrong\\f\$, code \`$wrong\`, <!-- $wrong -->" \
          '\f[' "y = $wrong" '\f]' "\\snippet 01_dot_product.c $wrong"; } >"$tmp/hidden.md"
    check_page "$tmp/untouched.md" "$transcript" >"$tmp/untouched.out" ||
        { echo "docs-numbers --self-test: the untouched copy of $page fails:"; cat "$tmp/untouched.out"; return 1; }
    if check_page "$tmp/planted.md" "$transcript" >"$tmp/planted.out"; then
        echo "docs-numbers --self-test: a copy of $page with $wrong planted on line 3 passes the check"
        return 1
    fi
    grep -qF "$tmp/planted.md:3: $wrong is not in the chapter's output" "$tmp/planted.out" ||
        { echo "docs-numbers --self-test: the check failed on the planted copy, but did not name line 3 and $wrong:"; cat "$tmp/planted.out"; return 1; }
    check_page "$tmp/hidden.md" "$transcript" >"$tmp/hidden.out" ||
        { echo "docs-numbers --self-test: a number in a formula, code, a comment or a \\snippet line was checked:"; cat "$tmp/hidden.out"; return 1; }
    # and a definition listed in DEFINITIONS passes where it is planted
    (DEFINITIONS="$DEFINITIONS$wrong   the self-test's planted number"
     check_page "$tmp/planted.md" "$transcript") >"$tmp/defined.out" ||
        { echo "docs-numbers --self-test: $wrong, listed in DEFINITIONS, still fails:"; cat "$tmp/defined.out"; return 1; }
    echo "docs-numbers --self-test: a wrong number planted in a copy of $page fails the check, named:"
    sed 's/^/    /' "$tmp/planted.out"
}

case ${1:-} in
    --self-test) self_test ;;
    --page) [ $# -eq 3 ] || { echo "usage: scripts/docs-numbers.sh --page PAGE OUTPUT" >&2; exit 2; }
        check_page "$2" "$3" ;;
    "") check_all ;;
    *) echo "usage: scripts/docs-numbers.sh [--self-test | --page PAGE OUTPUT]" >&2; exit 2 ;;
esac
