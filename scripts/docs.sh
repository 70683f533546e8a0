#!/bin/sh
# Builds the book: docs/html, from the Doxyfile. Called by `make docs`.
#
#   1. builds the chapter programs and runs each one, capturing what it prints
#      into build/docs/output/NN_name.txt, cut into one file per section
#      (NN_name.sK.txt), so a chapter page shows each section's real output
#      beside its prose with \verbinclude NN_name.sK.txt (checked: every
#      section once);
#   2. draws the pictures the pages show with `vit attention` (chapter 12's maps);
#   3. writes the answer keys' page list (build/docs/keys: every test file as an
#      example page) and runs doxygen on the folders that exist (lib, chapters,
#      docs, cli, benchmarks, viewer) and the exercises' READMEs, failing on any
#      warning;
#   4. copies Debian's MathJax next to the HTML, so formulas render offline;
#   5. checks the result: no MathJax fetched from the network, no absolute
#      path of this checkout in the pages.
#
# Environment: BUILD (default build) is where the chapters are built, as in
# the Makefile; CHAPTER_TIMEOUT (default 300) seconds each chapter may run.
#
#   scripts/docs.sh --c-filter FILE   (used by doxygen, see FILTER_PATTERNS)
#
# prints FILE with the #define lines of its local macros blanked out: a macro
# the same file #undef's (a helper inside one function, such as an option-table
# row) is not part of any interface, and Doxygen cannot attach a comment to a
# definition inside a function body. Line numbers stay the same, and the source
# pages still show the file as written.
set -eu

if [ "${1:-}" = "--c-filter" ]; then
    awk '
        NR == FNR {     # first pass: the names this file #undef-s
            if ($0 ~ /^[ \t]*#[ \t]*undef[ \t]+[A-Za-z_]/) {
                name = $0
                sub(/^[ \t]*#[ \t]*undef[ \t]+/, "", name)
                sub(/[^A-Za-z0-9_].*$/, "", name)
                local[name] = 1
            }
            next
        }
        continued {     # a continuation line of a blanked #define
            continued = /\\$/
            print ""
            next
        }
        /^[ \t]*#[ \t]*define[ \t]+[A-Za-z_]/ {
            name = $0
            sub(/^[ \t]*#[ \t]*define[ \t]+/, "", name)
            sub(/[^A-Za-z0-9_].*$/, "", name)
            if (name in local) {
                continued = /\\$/
                print ""
                next
            }
        }
        { print }
    ' "$2" "$2"
    exit
fi

cd "$(dirname "$0")/.."
ROOT=$(pwd)
BUILD=${BUILD:-build}
OUT=build/docs/output            # the Doxyfile's EXAMPLE_PATH names this folder
LOG=build/docs/doxygen-warnings.log  # and its WARN_LOGFILE this file
MATHJAX=/usr/share/javascript/mathjax
HTML=docs/html

fail() { echo "docs: $*" >&2; exit 1; }

# ------------------------------------------------------------ tools present?
missing=""
command -v doxygen >/dev/null 2>&1 || missing="$missing doxygen"
command -v dot >/dev/null 2>&1 || missing="$missing graphviz"
[ -f "$MATHJAX/MathJax.js" ] || missing="$missing libjs-mathjax"
[ -z "$missing" ] || fail "missing:$missing; run scripts/deps.sh (or: make deps) first"

# ------------------------------------------------------------ chapter output
# split_sections OUT/NN_name: cuts OUT/NN_name.txt, what a chapter printed,
# into one file per section, so the page can show each section's output beside
# its prose: NN_name.s0.txt (the introduction, under the title), NN_name.sK.txt
# (the section headed "K. ...") and NN_name.next.txt ("What's next"). A heading
# is a line underlined with dashes (ch_section()); the heading and its
# underline stay out (the page has its own), and so do blank lines at either end.
split_sections() {
    awk -v base="$1" '
        { line[n++] = $0 }
        function emit(id, from, to,    i) {
            while (from < to && line[from] == "") from++
            while (to > from && line[to - 1] == "") to--
            if (from == to) return
            file = base "." id ".txt"
            for (i = from; i < to; i++) print line[i] > file
            close(file)
        }
        END {
            id = "s0"; start = 0
            if (n > 1 && line[1] ~ /^=+$/) start = 2   # the title and its underline
            for (i = start; i + 1 < n; i++) {
                if (line[i + 1] !~ /^-+$/) continue
                if (line[i] ~ /^[0-9]+\. /) next_id = "s" substr(line[i], 1, index(line[i], ".") - 1)
                else if (line[i] == "What\047s next") next_id = "next"
                else continue
                emit(id, start, i)
                id = next_id; start = i + 2; i++
            }
            emit(id, start, n)
        }' "$1.txt"
}

# check_page_includes NN_name: the chapter page shows every section's output
# (\verbinclude NN_name.sK.txt, each exactly once), and not the whole
# transcript at the end, which is what the page used to be.
check_page_includes() {
    page=$(ls docs/chapters/"$1".md 2>/dev/null) || return 0
    for part in "$OUT/$1".*.txt; do
        [ -e "$part" ] || continue
        part=$(basename "$part")
        count=$(grep -cxF "\\verbinclude $part" "$page" || true)
        [ "$count" -eq 1 ] ||
            fail "$page shows $part $count times; each section's output belongs once, beside its prose"
    done
    if grep -qxF "\\verbinclude $1.txt" "$page"; then
        fail "$page includes the whole transcript $1.txt; include each section's output (\\verbinclude $1.sK.txt) beside its prose"
    fi
    for ref in $(grep -o "verbinclude $1\.[a-z0-9]*\.txt" "$page" | sed 's/.* //'); do
        [ -e "$OUT/$ref" ] || fail "$page includes $ref, but the chapter printed no such section"
    done
}

mkdir -p build/docs
rm -rf "$OUT"
mkdir -p "$OUT"
if ls chapters/[0-9][0-9]_*.c >/dev/null 2>&1; then
    echo "docs: building the chapters"
    make --no-print-directory BUILD="$BUILD" chapters
    for src in chapters/[0-9][0-9]_*.c; do
        name=$(basename "$src" .c)
        echo "docs: running $BUILD/chapters/$name > $OUT/$name.txt"
        # no colours, no terminal: the page shows plain text
        if ! NO_COLOR=1 TERM=dumb timeout "${CHAPTER_TIMEOUT:-300}" \
                "$BUILD/chapters/$name" >"$OUT/$name.txt" </dev/null; then
            fail "$BUILD/chapters/$name failed; its page would show broken output"
        fi
        split_sections "$OUT/$name"
        check_page_includes "$name"
    done
fi

# ------------------------------------------------------------ pictures
# What the pages show, drawn by the project from its own model and images:
# `vit attention` maps over shipped test images, into build/docs/pictures
# (the IMAGE_PATH appended below), for chapter 12's page.
PICTURES=build/docs/pictures
rm -rf "$PICTURES"
mkdir -p "$PICTURES"
model=data/models/vit-fashion.safetensors
images=data/images/fashion-mnist
if [ -f "$model" ]; then
    echo "docs: drawing attention maps -> $PICTURES"
    make --no-print-directory BUILD="$BUILD" "$BUILD/vit"
    draw() { # out.png, then the flags
        out=$1
        shift
        "$BUILD/vit" attention --weights "$model" "$@" --out "$PICTURES/$out" >/dev/null ||
            fail "vit attention $* failed; its picture would be missing"
    }
    draw rollout-boot.png "$images/0000-ankle-boot.png"
    draw rollout-shirt.png "$images/0004-shirt.png"
    draw grad-boot.png "$images/0000-ankle-boot.png" --grad
    draw grid-boot.png "$images/0000-ankle-boot.png" --grid
fi

# ------------------------------------------------------------ plots
# Curves drawn by gnuplot (Debian's gnuplot-nox; make docs installs it) from the
# project's own numbers: the shipped model's training log, the tables chapter
# 02 printed above, lib's gelu(). The scripts are docs/plots/*.gp.
command -v gnuplot >/dev/null 2>&1 || fail "missing: gnuplot; run scripts/deps.sh gnuplot-nox first"
plot() { # script, data, picture
    gnuplot -e "data='$2'; out='$PICTURES/$3'" "docs/plots/$1" 2>"$PICTURES/$3.log" ||
        { cat "$PICTURES/$3.log" >&2; fail "gnuplot docs/plots/$1 failed"; }
    [ ! -s "$PICTURES/$3.log" ] || { cat "$PICTURES/$3.log" >&2; fail "gnuplot docs/plots/$1 warned"; }
    rm -f "$PICTURES/$3.log"
    [ -s "$PICTURES/$3" ] || fail "gnuplot docs/plots/$1 drew nothing into $3"
}
# rows_of FILE COLUMNS: the lines of FILE that are COLUMNS numbers and nothing else
rows_of() {
    awk -v n="$2" 'NF == n { for (i = 1; i <= NF; i++) if ($i !~ /^-?[0-9.]+$/) next; print }' "$1"
}
echo "docs: plotting -> $PICTURES"
[ -f data/models/vit-fashion.csv ] && plot training_curve.gp data/models/vit-fashion.csv training-curve.png
if [ -f "$OUT/02_scaling.s1.txt" ]; then
    rows_of "$OUT/02_scaling.s1.txt" 5 >"$PICTURES/scaling-variance.dat"
    rows_of "$OUT/02_scaling.s2.txt" 5 >"$PICTURES/scaling-saturation.dat"
    for t in variance saturation; do
        [ "$(wc -l <"$PICTURES/scaling-$t.dat")" -ge 3 ] ||
            fail "chapter 02's $t table was not found in its output ($OUT/02_scaling.s*.txt)"
        plot scaling_$t.gp "$PICTURES/scaling-$t.dat" scaling-$t.png
    done
fi
make --no-print-directory BUILD="$BUILD" "$BUILD/plots/gelu_points"
"$BUILD/plots/gelu_points" >"$PICTURES/gelu-relu.dat"
plot gelu_relu.gp "$PICTURES/gelu-relu.dat" gelu-relu.png

# ------------------------------------------------------------ answer keys
# The tests are in the book: one example page per suite (Doxygen's @example,
# the test file's source with every lib function it calls linked, and on each
# of those functions' pages a link back to the tests that use it). Written
# here from the test files themselves, so a new suite cannot be left out.
KEYS=build/docs/keys
rm -rf "$KEYS"
mkdir -p "$KEYS"
for src in tests/test_*.c; do
    file=$(basename "$src")
    suite=$(sed -n 's/^CU_TestInfo tests_\([a-z0-9_]*\)\[\].*/\1/p' "$src" | head -n 1)
    [ -n "$suite" ] || fail "$src defines no CU_TestInfo tests_NAME[] array"
    # the @brief paragraph, its lines joined: up to the first blank comment line
    brief=$(awk '/^ \* @brief /{on = 1; sub(/^ \* @brief /, "")} on && /^ \*\/?[ \t]*$/{exit}
                 on {sub(/^ \*[ \t]*/, ""); printf "%s%s", sep, $0; sep = " "}' "$src")
    [ -n "$brief" ] || fail "$src has no @brief line in its file comment"
    printf '/**\n * @example %s\n * %s\n *\n * Run it: `build/tests/run %s`.\n */\n' \
        "$file" "$brief" "$suite" >>"$KEYS/answer_keys.dox"
done

# ------------------------------------------------------------ doxygen
# Only folders that exist: doxygen warns (and so fails) on a missing input.
input="lib $KEYS"
for d in chapters docs cli benchmarks viewer; do
    [ -d "$d" ] && input="$input $d"
done
# each exercise's README is a page of the book (md_exercises_NN_name_README);
# the folder's index is GitHub's, the book's is the teachers' table
for f in exercises/[0-9][0-9]_*/README.md; do
    [ -f "$f" ] && input="$input $f"
done
examples="lib tests $OUT"
[ -d chapters ] && examples="chapters $examples"

echo "docs: doxygen -> $HTML"
rm -rf "$HTML"
rm -f "$LOG"
status=0
# The Doxyfile first, then our lines, which override its INPUT, EXAMPLE_PATH and IMAGE_PATH.
{ cat Doxyfile; echo "INPUT = $input"; echo "EXAMPLE_PATH = $examples";
  echo "IMAGE_PATH = docs $PICTURES"; } |
    doxygen - >build/docs/doxygen.out 2>&1 || status=$?

# WARN_AS_ERROR = FAIL_ON_WARNINGS makes doxygen exit non-zero; the log and the
# console are checked as well, so no warning can slip through either way.
if [ -s "$LOG" ] || [ -s build/docs/doxygen.out ] || [ "$status" -ne 0 ]; then
    [ -s "$LOG" ] && cat "$LOG" >&2
    [ -s build/docs/doxygen.out ] && cat build/docs/doxygen.out >&2
    fail "doxygen reported problems (exit $status); warnings are errors in this book"
fi

# ------------------------------------------------------------ MathJax, offline
# Debian's MathJax 2 without what the pages never load (the uncompressed
# sources, the tests, the combined configurations, the SVG output and the STIX
# fonts; Doxygen configures MathJax inline): about 9 MB instead of 54.
mkdir -p "$HTML/mathjax"
(cd "$MATHJAX" && tar -chf - \
    --exclude=./unpacked --exclude=./test --exclude=./config \
    --exclude=./jax/output/SVG --exclude=./fonts/HTML-CSS/STIX-Web \
    --exclude=./jax/output/HTML-CSS/fonts/STIX-Web \
    .) | (cd "$HTML/mathjax" && tar -xf -)
# what the pages' MathJax configuration (TeX in, HTML-CSS out, AMS) loads
for f in MathJax.js extensions/tex2jax.js extensions/TeX/AMSmath.js \
        extensions/TeX/AMSsymbols.js jax/input/TeX/config.js jax/output/HTML-CSS/config.js \
        jax/output/HTML-CSS/fonts/TeX/fontdata.js fonts/HTML-CSS/TeX/woff; do
    [ -e "$HTML/mathjax/$f" ] || fail "MathJax copy lacks $f (is libjs-mathjax complete?)"
done

# ------------------------------------------------------------ full-text index
# fulltext.js: for the page "Search the whole text" (docs/fulltext.md), one
# entry per page, VIT_FULLTEXT.push([file, title, text]), the text being the
# page's contents with its tags, scripts and source listings left out. The
# search itself is docs/fulltext_search.js.
echo "docs: full-text index -> $HTML/fulltext.js"
{
    echo "var VIT_FULLTEXT = [];"
    for page in "$HTML"/*.html; do
        case $(basename "$page") in
            *_source.html | *-members.html | globals*.html | search*.html | md_docs_fulltext.html | \
                dir_*.html | files.html | pages.html | annotated.html | classes.html | \
                modules.html | examples.html | functions*.html) continue ;; # indexes, listings
        esac
        awk -v file="$(basename "$page")" '
            { doc = doc " " $0 }
            END {
                title = doc
                if (!sub(/.*<title>/, "", title)) title = file
                sub(/<\/title>.*/, "", title)
                sub(/^[^:]*: /, "", title)            # "vit-from-scratch: Chapter 03" -> "Chapter 03"
                text = doc
                sub(/.*<div class="contents">/, "", text) || sub(/.*<body[^>]*>/, "", text)
                sub(/<!-- start footer part -->.*/, "", text)
                gsub(/<script[^>]*>[^<]*<\/script>/, " ", text)
                gsub(/<[^>]*>/, " ", text)
                gsub(/This browser is not able to show SVG: try Firefox, Chrome, Safari, or Opera instead\./, "", text)
                gsub(/ More\.\.\./, "", text); gsub(/&#9670;/, "", text)
                gsub(/&#160;|&nbsp;/, " ", text); gsub(/&lt;/, "<", text); gsub(/&gt;/, ">", text)
                gsub(/&quot;/, "\"", text); gsub(/&#39;/, "\047", text); gsub(/&amp;/, "\\&", text)
                gsub(/[ \t\r]+/, " ", text); sub(/^ /, "", text); sub(/ $/, "", text)
                gsub(/&amp;/, "\\&", title)
                if (text == "") exit
                printf "VIT_FULLTEXT.push([%s, %s, %s]);\n", js(file), js(title), js(text)
            }
            # a string for JavaScript without escapes (awk implementations
            # differ on backslashes in a replacement): a backslash is stored
            # as \001 and a double quote as \002, which the search turns back
            function js(s) {
                gsub(/\\/, "\001", s); gsub(/"/, "\002", s)
                return "\"" s "\""
            }' "$page"
    done
} >"$HTML/fulltext.js"
[ -s "$HTML/fulltext_search.js" ] || fail "$HTML/fulltext_search.js is missing (HTML_EXTRA_FILES)"

# ------------------------------------------------------------ self-checks
if grep -rlE 'src="https?://[^"]*[Mm]ath[Jj]ax' "$HTML" --include='*.html' --include='*.js' \
        >build/docs/remote.txt 2>/dev/null; then
    cat build/docs/remote.txt >&2
    fail "these pages load MathJax from the network"
fi
if grep -rlF "$ROOT" "$HTML" --exclude-dir=mathjax >build/docs/abspath.txt 2>/dev/null; then
    cat build/docs/abspath.txt >&2
    fail "these pages contain the absolute path $ROOT"
fi

echo "docs: open $HTML/index.html"
