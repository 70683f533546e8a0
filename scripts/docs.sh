#!/bin/sh
# Builds the book: docs/html, from the Doxyfile. Called by `make docs`.
#
#   1. builds the chapter programs and runs each one, capturing what it prints
#      into build/docs/output/NN_name.txt, so a chapter page can include its
#      chapter's real output with \verbinclude NN_name.txt;
#   2. draws the pictures the pages show with `vit attention` (chapter 12's maps);
#   3. runs doxygen on the folders that exist (lib, chapters, docs, cli, benchmarks,
#      viewer), failing on any warning;
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

# ------------------------------------------------------------ doxygen
# Only folders that exist: doxygen warns (and so fails) on a missing input.
input="lib"
for d in chapters docs cli benchmarks viewer; do
    [ -d "$d" ] && input="$input $d"
done
examples="lib $OUT"
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
