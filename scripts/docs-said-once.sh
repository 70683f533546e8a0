#!/bin/sh
# Each point said once: part of make docs-check (scripts/docs-check.sh runs
# it), after make docs has cut every chapter's output into the boxes its page
# shows (build/docs/output/NN_name.sK.txt, scripts/docs.sh).
#
#   scripts/docs-said-once.sh               checks every chapter page
#   scripts/docs-said-once.sh --self-test   proves it finds a repeated paragraph
#
# A chapter page carries the explanation; its boxes show the numbers. A box's
# paragraph repeats the page when most of its runs of five words are also in
# the page's own prose: at least half of them, and at least three. Words are
# letters only, lowercased, so the numbers between them do not matter, and a
# paragraph of fewer than twelve words (a table's caption, a value's
# sentence) is too short to be an essay. Not the page's prose: code
# (\snippet, fenced and \code blocks, `inline code`), formulas and the lines
# that include files. "What's next" is the program's text alone (the page
# does not say it again) and is not compared. That the boxes hold numbers
# and not a second essay is built in, not checked here: the book's capture
# leaves out ch_say()'s prose but for its sentences that give a value
# (scripts/docs.sh), and keeps whole only what the data decides (ch_verdict():
# a verdict, a branch taken on the numbers).
#
# Exit status: 0 when no box repeats its page, 1 when one does (each printed
# as "PAGE: BOX: paragraph ..."), 2 when the output was not captured.
set -eu

cd "$(dirname "$0")/.."
OUT=${DOCS_OUTPUT:-build/docs/output}

# The page's prose, one word a line (letters only, lowercased).
page_words() {
    awk '
        /^```/ || /^\\code/ || /^\\endcode/ { code = !code; next }
        code { next }
        /^\\(snippet|verbinclude|include|image|dotfile|htmlonly|endhtmlonly)/ { next }
        { print }' "$1" |
        sed -e 's/\\f\$[^$]*\\f\$//g' -e 's/`[^`]*`//g' |
        awk '/\\f\[/ { f = 1 } f { if (/\\f\]/) f = 0; next } { print }' |
        tr 'A-Z' 'a-z' | tr -cs 'a-z' '\n' | grep .
}

# check_page PAGE BOX...: prints each box paragraph that repeats PAGE.
check_page() {
    page=$1
    shift
    page_words "$page" >"$tmp/page.words"
    for box in "$@"; do
        awk -v page="$page" -v box="$(basename "$box")" '
            FNR == NR { w[n++] = $0; next }
            FNR == 1 { for (i = 0; i + 4 < n; i++) seen[w[i] " " w[i+1] " " w[i+2] " " w[i+3] " " w[i+4]] = 1 }
            function judge(   i, k, shared, total, g) {
                if (nw >= 12) {
                    for (i = 0; i + 4 < nw; i++) {
                        g = p[i] " " p[i+1] " " p[i+2] " " p[i+3] " " p[i+4]
                        total++
                        if (g in seen) shared++
                    }
                    if (shared >= 3 && shared * 2 >= total)
                        printf "%s: %s: a paragraph the page already says (%d of %d runs of five words): %s\n",
                               page, box, shared, total, substr(text, 1, 100)
                }
                nw = 0; text = ""
            }
            /^[ \t]*$/ { judge(); next }
            {
                text = text (text ? " " : "") $0
                line = tolower($0)
                gsub(/[^a-z]+/, " ", line)
                k = split(line, ws, " ")
                for (i = 1; i <= k; i++) p[nw++] = ws[i]
            }
            END { judge() }' "$tmp/page.words" "$box"
    done
}

check_all() {
    found=0
    for page in docs/chapters/[0-9][0-9]_*.md; do
        name=$(basename "$page" .md)
        ls "$OUT/$name".s*.txt >/dev/null 2>&1 || { echo "docs-said-once: no output of $name; run make docs" >&2; exit 2; }
        out=$(check_page "$page" "$OUT/$name".s*.txt)
        [ -z "$out" ] || { echo "$out"; found=1; }
    done
    return "$found"
}

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if [ "${1:-}" = "--self-test" ]; then
    # a page, and a box that says its second paragraph again (with other numbers)
    printf '%s\n' "Softmax turns each row of scores into weights that are positive" \
        "and sum to one, so a row says how much each query takes from each token." >"$tmp/page.md"
    printf '%s\n' "probs = [[0.1, 0.9]]" "" \
        "Softmax turns each row of scores into weights that are positive and sum" \
        "to one (here 2 of them), so a row says how much each query takes." >"$tmp/box.txt"
    out=$(check_page "$tmp/page.md" "$tmp/box.txt")
    case $out in *"a paragraph the page already says"*) ;; *)
        echo "docs-said-once: FAILED: the self-test's repeated paragraph was not found" >&2; exit 1 ;;
    esac
    printf '%s\n' "probs = [[0.1, 0.9]]" "" "token 0 takes most from token 1 (weight 0.9)" >"$tmp/box.txt"
    [ -z "$(check_page "$tmp/page.md" "$tmp/box.txt")" ] ||
        { echo "docs-said-once: FAILED: the self-test's box of numbers was called a repeat" >&2; exit 1; }
    echo "docs-said-once: self-test passed (a repeated paragraph found, a box of numbers passed)"
    exit 0
fi

if check_all; then
    echo "docs-said-once: no box repeats its page's prose ($(ls docs/chapters/[0-9][0-9]_*.md | wc -l) chapter pages)"
else
    echo "docs-said-once: the boxes above say again what their page says; the page carries the explanation, the box the numbers" >&2
    exit 1
fi
