#!/bin/sh
# Counts the pictures of each chapter page of the built book (docs/html,
# after `make docs`) and fails, naming them, when a chapter page has none.
# Called by scripts/docs-check.sh.
#
# A picture is what Doxygen writes for \image (a <div class="image">, the PNG
# or SVG docs.sh drew from the chapter's numbers) or for \dotfile (a
# <div class="dotgraph">); the page's own furniture (the search box's icon)
# is not counted. Prints one line per chapter page, "NN_name: K pictures",
# then the total.
set -eu

cd "$(dirname "$0")/.."
HTML=${HTML:-docs/html}

fail() { printf 'docs-pictures: %s\n' "$*" >&2; exit 1; }

ls "$HTML"/md_docs_chapters_[0-9][0-9]_*.html >/dev/null 2>&1 ||
    fail "no chapter page in $HTML: run make docs first"
total=0
bare=""
for page in "$HTML"/md_docs_chapters_[0-9][0-9]_*.html; do
    name=$(basename "$page" .html)
    name=${name#md_docs_chapters_}
    count=$(grep -o 'class="image"\|class="dotgraph"' "$page" | wc -l)
    printf 'docs-pictures: %s: %d picture%s\n' "$name" "$count" "$([ "$count" -eq 1 ] || echo s)"
    total=$((total + count))
    [ "$count" -gt 0 ] || bare="$bare $name"
done
printf 'docs-pictures: %d pictures on the chapter pages\n' "$total"
[ -z "$bare" ] || fail "chapter pages without a picture:$bare"
