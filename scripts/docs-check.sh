#!/bin/sh
# make docs-check: the book as a reader's browser shows it. Called after `make docs`.
#
# Opens the main page, every chapter page and the viewer page in headless
# Chromium (Debian's chromium; file:// pages, no network), saves what the
# browser rendered (build/docs/check/dom/) and a screenshot of each
# (build/docs/check/screens/), and fails when a page
#   - has a formula MathJax did not typeset (one left as TeX, or an error box);
#   - shows a picture whose file is missing or empty, or a captured viewer
#     screen (docs.sh's tmux capture) that is missing or empty;
#   - links to a page or an anchor that does not exist (the rendered page's
#     links, menus included, and every entry of the navigation tree);
#   - says "snippet not found" (Doxygen's text for a \snippet whose marker is gone);
#   - links the word of "Chapter NN" to the struct Chapter (Doxygen's autolink),
#     or any capitalised word followed by a number to a struct of that name:
#     checked on every page of the book as Doxygen wrote it (file pages and
#     the tests' pages too);
#   - writes, in a chapter page's prose, a number with a decimal point or an
#     exponent that the chapter's captured output does not print
#     (scripts/docs-numbers.sh, which names the page, the line and the number;
#     its --self-test, run here too, plants a wrong number in a copy of a page
#     and fails unless the check catches it);
#   - shows, in a chapter's output box, a paragraph its page already says
#     (scripts/docs-said-once.sh).
# Then one more Chromium reads every narrative page in turn (the main page,
# every Markdown page: chapters, glossary, teachers', answer keys, contract,
# viewer, full-text search, the exercises' READMEs; the modules and the folder
# pages) and runs the full-text search, with scripts/docs-check.js, and fails,
# naming the page and quoting the text, when a page's text (outside code)
#   - shows Markdown that Doxygen left as text: "**", a backtick (a code span
#     not closed), a *word* or *a few words* (emphasis not read, as d*name*),
#     or a ‘…’ that Doxygen made of a code span with a ' before its closing
#     backtick (write such a span with double backticks);
#   - links a plain capitalised word to the struct of that name ("Chapter",
#     "Tensor", "State") in the page's own text: the rule is that prose there
#     means the English word (write %Word, or "Chapter NN", which docs.sh's
#     --prose-filter escapes), and a type is named as code (`Tensor`);
#   - has a formula MathJax did not typeset, or an error box;
# and when the full-text search (md_docs_fulltext.html?q=…) does not list
# chapter 08 first for LayerNorm and chapter 10 first for AdamW, shows TeX in
# an excerpt, or lists for "online softmax" (in quotes) a page without that
# phrase (or misses one with it).
#
# Self-test, run every time: a copy of the glossary with one mistake of each
# kind planted in its text (build/docs/check/planted.html: literal **, an open
# backtick, d*name*, a ‘quotation’ and "Chapter 02" linked to the struct)
# goes through the same check; docs-check fails unless each is named (what
# was said of the copy: build/docs/check/planted.txt). To see a real failure
# by hand, plant the same in a built page and run only this script (make
# docs-check would build the book again first, and so undo the planting):
#     make -s docs
#     sed -i 's|<div class="textblock">|&<p>**x** under`gdb <a class="el" href="structChapter.html">Chapter</a> 02</p>|' \
#         docs/html/md_docs_teachers.html
#     scripts/docs-check.sh   # fails, naming md_docs_teachers.html and each text
#     make -s docs            # puts the page back
# It prints how many pages, formulas, pictures and links it checked.
#
# Environment: CHROMIUM (default: chromium on the PATH); DOCS_CHECK_BUDGET
# (default 15000) milliseconds of virtual time each page gets to run its scripts.
set -eu

cd "$(dirname "$0")/.."
ROOT=$(pwd)
HTML=docs/html
OUT=build/docs/check
BUDGET=${DOCS_CHECK_BUDGET:-15000}
CHROMIUM=${CHROMIUM:-$(command -v chromium || true)}

fail() { printf 'docs-check: %s\n' "$*" >&2; exit 1; }

[ -n "$CHROMIUM" ] || fail "no chromium on the PATH (scripts/deps.sh chromium installs Debian's)"
[ -f "$HTML/index.html" ] || fail "$HTML/index.html is missing: run make docs first"
rm -rf "$OUT"
mkdir -p "$OUT/dom" "$OUT/screens" "$OUT/profile"

# The pages a reader opens first: the main page, the chapters, the viewer.
pages="index.html $(cd "$HTML" && ls md_docs_chapters_*.html) md_docs_viewer.html"

# A sandbox without network: no first-run work, no sync, no GPU, a profile of our own.
browse() {
    # (its crash reports go under XDG_CONFIG_HOME: kept in the build tree too)
    XDG_CONFIG_HOME="$ROOT/$OUT/profile" "$CHROMIUM" --headless=new --no-sandbox --disable-gpu --disable-dev-shm-usage \
        --no-first-run --no-default-browser-check --disable-extensions --disable-sync \
        --disable-background-networking --user-data-dir="$ROOT/$OUT/profile" \
        --virtual-time-budget="$BUDGET" "$@" 2>>"$OUT/chromium.log"
}

problems=$OUT/problems.txt
: >"$problems"

# The numbers of the chapter pages' prose, against what the chapters printed
# (no browser needed), and the proof that the check catches a wrong one.
scripts/docs-numbers.sh >"$OUT/numbers.txt" 2>&1 || cat "$OUT/numbers.txt" >>"$problems"
scripts/docs-numbers.sh --self-test >"$OUT/numbers-self-test.txt" 2>&1 ||
    sed 's/^/numbers self-test: /' "$OUT/numbers-self-test.txt" >>"$problems"
# each point said once: no box repeats its page's prose (scripts/docs-said-once.sh), and its self-test
{ scripts/docs-said-once.sh && scripts/docs-said-once.sh --self-test; } >"$OUT/said-once.txt" 2>&1 || cat "$OUT/said-once.txt" >>"$problems"
formulas=0 pictures=0 npages=0
for page in $pages; do
    [ -f "$HTML/$page" ] || { echo "$page: the page is missing" >>"$problems"; continue; }
    npages=$((npages + 1))
    dom=$OUT/dom/$page
    browse --dump-dom "file://$ROOT/$HTML/$page" >"$dom" ||
        { echo "$page: chromium could not open it" >>"$problems"; continue; }
    browse --window-size=1280,2400 --screenshot="$ROOT/$OUT/screens/${page%.html}.png" \
        "file://$ROOT/$HTML/$page" >/dev/null || echo "$page: no screenshot" >>"$problems"

    # formulas: Doxygen writes each as \( … \) or \[ … \] into the page; MathJax 2
    # replaces each by its rendering, id MathJax-Element-N-Frame (none when
    # MathJax did not load or run)
    tex=$(grep -o '\\(\|\\\[' "$HTML/$page" | wc -l)
    typeset=$(grep -o 'id="MathJax-Element-[0-9]*-Frame"' "$dom" | wc -l)
    formulas=$((formulas + tex))
    [ "$tex" -eq "$typeset" ] ||
        echo "$page: $tex formulas, $typeset typeset by MathJax" >>"$problems"
    if grep -q 'class="merror"\|class="mjx-merror"\|class="MathJax_Error"' "$dom"; then
        echo "$page: MathJax shows an error box" >>"$problems"
    fi
    # "Chapter 02" is a chapter, not the narrator struct Doxygen would link the word to
    if grep -q 'href="structChapter.html">Chapter</a> [0-9]' "$dom"; then
        echo "$page: \"Chapter NN\" links to the struct Chapter (write %Chapter)" >>"$problems"
    fi
    if grep -qi 'snippet not found' "$dom"; then
        echo "$page: says \"snippet not found\"" >>"$problems"
    fi

    # pictures: every <img> names a file that is there and not empty, and so
    # does every diagram (Doxygen shows a graphviz SVG in an <iframe> or <object>)
    for src in $( { grep -o '<img[^>]* src="[^"]*"' "$dom" | sed 's/.* src="\([^"]*\)"/\1/'
                    grep -o '<iframe[^>]* src="[^"]*\.svg"' "$dom" | sed 's/.* src="\([^"]*\)"/\1/'
                    grep -o '<object[^>]* data="[^"]*\.svg"' "$dom" | sed 's/.* data="\([^"]*\)"/\1/'; } ); do
        case $src in http:* | https:* | data:*) continue ;; esac
        pictures=$((pictures + 1))
        [ -s "$HTML/${src%%[?#]*}" ] || echo "$page: picture $src is missing or empty" >>"$problems"
    done
    # and every captured viewer screen: a <div class="... vitview-capture"> of
    # the page holds a <pre class="vitview-screen"> (docs.sh's capture, included
    # with \htmlinclude) of at least 10 lines with text, some of it coloured
    screens=$(awk -v page="$page" -v problems="$problems" '
        { doc = doc $0 "\n" }
        END {
            n = 0
            while (match(doc, /<div class="[^"]*vitview-capture[^"]*"[^>]*>/)) {
                doc = substr(doc, RSTART + RLENGTH)
                n++
                rest = doc
                sub(/^[ \t\n]*/, "", rest)
                if (rest !~ /^<pre class="vitview-screen"/ || !index(rest, "</pre>")) {
                    print page ": captured viewer screen " n " is missing" >> problems
                    continue
                }
                pre = substr(rest, 1, index(rest, "</pre>") - 1)
                coloured = gsub(/<span style="[^"]*color:/, "&", pre)
                gsub(/<[^>]*>/, "", pre)
                lines = 0
                rows = split(pre, row, "\n")
                for (i = 1; i <= rows; i++) if (row[i] ~ /[^ \t]/) lines++
                if (lines < 10 || coloured == 0)
                    print page ": captured viewer screen " n " is empty (" lines " lines with text, " \
                        coloured " coloured runs)" >> problems
            }
            print n
        }' "$dom")
    pictures=$((pictures + screens))
    # the page's links, for the link check below
    grep -o 'href="[^"]*"' "$dom" | sed 's/^href="\(.*\)"$/\1/' |
        sed "s|^|$page |" >>"$OUT/links.txt"
done

# The full-text search: the page, asked for a word the index must have (the
# residual stream is in chapters 08 and 09), lists chapter pages among its hits.
search_dom=$OUT/dom/fulltext-residual.html
if [ ! -f "$HTML/md_docs_fulltext.html" ] || [ ! -s "$HTML/fulltext.js" ]; then
    echo "md_docs_fulltext.html: the full-text search page or its index (fulltext.js) is missing" >>"$problems"
elif browse --dump-dom "file://$ROOT/$HTML/md_docs_fulltext.html?q=residual" >"$search_dom"; then
    hits=$(grep -o 'class="fulltext-hit"' "$search_dom" | wc -l)
    [ "$hits" -gt 0 ] || echo "md_docs_fulltext.html?q=residual: no page found" >>"$problems"
    grep -q 'class="fulltext-hit" href="md_docs_chapters_08_encoder_block.html"' "$search_dom" ||
        echo "md_docs_fulltext.html?q=residual: chapter 08's page (the residual stream) is not among the hits" >>"$problems"
    grep -o 'href="[^"]*"' "$search_dom" | sed 's/^href="\(.*\)"$/\1/' |
        sed "s|^|md_docs_fulltext.html |" >>"$OUT/links.txt"
    browse --window-size=1280,2400 --screenshot="$ROOT/$OUT/screens/fulltext-residual.png" \
        "file://$ROOT/$HTML/md_docs_fulltext.html?q=residual" >/dev/null ||
        echo "md_docs_fulltext.html: no screenshot" >>"$problems"
    npages=$((npages + 1))
else
    echo "md_docs_fulltext.html: chromium could not open it" >>"$problems"
fi

# The narrative pages as a reader's browser shows them, in one Chromium: the
# main page, every Markdown page (chapters, glossary, teachers', answer keys,
# contract, viewer, full-text search, the exercises' READMEs), the modules and
# the folders, and the full-text searches below. scripts/docs-check.js does the
# reading (see its comment for what it checks); the page that runs it is
# written here.
narrative="index.html $(cd "$HTML" && ls md_*.html) modules.html $(cd "$HTML" && ls dir_*.html | grep -v '^dir_[^_]*_[^_]*\.html$')"
js_list() { printf '%s\n' "$@" | sed 's/\\/\\\\/g; s/"/\\"/g; s/^/"/; s/$/",/'; }
nnarrative=0
for page in $narrative; do nnarrative=$((nnarrative + 1)); done
{
    echo '<!DOCTYPE html><html><head><meta charset="utf-8"><title>docs-check</title></head><body>'
    echo '<pre id="report"></pre><script>'
    echo "var DOCS_CHECK_BASE = \"file://$ROOT/$HTML/\";"
    echo "var DOCS_CHECK_PLANTED = \"file://$ROOT/$OUT/planted.html\";"
    echo "var DOCS_CHECK_PAGES = ["
    js_list $narrative
    echo "];"
    # [query, the page that must come first (or ""), ...]: LayerNorm is chapter
    # 08's, AdamW chapter 10's; the formulas of softmax and LayerNorm must come
    # out as text; "online softmax" is a phrase (chapter 13), not two words
    echo 'var DOCS_CHECK_SEARCHES = ['
    echo '    ["LayerNorm", "md_docs_chapters_08_encoder_block.html"],'
    echo '    ["AdamW", "md_docs_chapters_10_learning.html"],'
    echo '    ["softmax", ""], ["variance", ""], ["gradient", ""],'
    echo '    ["\"online softmax\"", ""]'
    echo '];'
    echo "</script><script src=\"file://$ROOT/scripts/docs-check.js\"></script></body></html>"
} >"$OUT/pages.html"
# The self-test: a copy of the glossary (build/docs/check/planted.html, its
# links and scripts still the book's) with one mistake of each kind in its
# text. The check must name each one, or docs-check fails; the lines it
# writes for the copy are expected and set aside ($OUT/planted.txt).
PLANTED='<p>Planted: **bold** as text; a span left open under`gdb; d*name* as text; ‘x’ from a broken span; <a class="el" href="structChapter.html">Chapter</a> 02 linked.</p>'
if [ -f "$HTML/md_docs_glossary.html" ]; then
    awk -v base="file://$ROOT/$HTML/" -v planted="$PLANTED" '
        /<head>/ { sub(/<head>/, "<head><base href=\"" base "\">") }
        /<div class="textblock">/ && !done { sub(/<div class="textblock">/, "&" planted); done = 1 }
        { print }' "$HTML/md_docs_glossary.html" >"$OUT/planted.html"
else
    echo "md_docs_glossary.html: the page is missing (docs-check's self-test plants its mistakes in a copy)" >>"$problems"
fi
# each page gets the budget's share of virtual time, and MathJax its time to typeset
browse --allow-file-access-from-files --virtual-time-budget=$((BUDGET + 3000 * (nnarrative + 6))) \
    --dump-dom "file://$ROOT/$OUT/pages.html" >"$OUT/dom/pages.html" ||
    echo "$OUT/pages.html: chromium could not open it" >>"$problems"
if grep -q '<pre id="report" data-done=' "$OUT/dom/pages.html"; then
    sed -n '/<pre id="report"/,/<\/pre>/p' "$OUT/dom/pages.html" |
        sed -e 's/^<pre id="report"[^>]*>//' -e 's|</pre>.*||' -e '/^$/d' \
            -e 's/&lt;/</g; s/&gt;/>/g; s/&quot;/"/g; s/&nbsp;/ /g; s/&amp;/\&/g' \
            -e 's/\t/: /' >"$OUT/pages.txt"
    grep -v '^planted: ' "$OUT/pages.txt" >>"$problems" || true
    grep '^planted: ' "$OUT/pages.txt" >"$OUT/planted.txt" || true
    for kind in 'literal \*\*.*\*\*bold\*\*' 'a backtick left in the text.*under`gdb' \
            'a literal \*word\*.*d\*name\*' 'quotation.*‘x’' 'the word “Chapter” links to the struct Chapter'; do
        grep -q "$kind" "$OUT/planted.txt" ||
            echo "docs-check's self-test: the mistake matching /$kind/ planted in $OUT/planted.html was not reported" >>"$problems"
    done
else
    echo "$OUT/pages.html: the narrative pages' check did not finish (DOCS_CHECK_BUDGET?)" >>"$problems"
fi

# Every page of the book, as Doxygen wrote it: no capitalised word followed by
# a number (Chapter 02) links to a struct, in prose or in a file's brief
# (scripts/docs.sh --prose-filter writes "Chapter NN" as %Chapter NN for Doxygen).
grep -o 'href="struct[A-Za-z0-9_]*\.html"[^>]*>[A-Z][a-z]*</a>\(&#160;\| \)[0-9][0-9]*' "$HTML"/*.html |
    sed 's|^[^:]*/\([^/:]*\):.*>\([A-Z][a-z]*\)</a>[^0-9]*\([0-9]*\)$|\1: "\2 \3" links the word \2 to the struct \2 (write %\2)|' \
    >>"$problems" || true

# the navigation tree's entries: "file.html#anchor":[…] in navtreeindex*.js
for js in "$HTML"/navtreeindex*.js; do
    grep -o '^"[^"]*":' "$js" | sed 's/^"\(.*\)":$/\1/' | sed "s|^|navtree |"
done >>"$OUT/links.txt"

# Every link inside the book: its file must exist, and its anchor must be an
# id= or name= in that file. One awk pass reads every page's anchors first.
links=$(awk -v html="$HTML" -v problems="$problems" '
    FNR == 1 && FILENAME != "-" { file = FILENAME; sub(".*/", "", file) }
    FILENAME != "-" {
        line = $0
        while (match(line, /(id|name)="[^"]*"/)) {
            a = substr(line, RSTART, RLENGTH); sub(/^(id|name)="/, "", a); sub(/"$/, "", a)
            anchor[file "#" a] = 1
            line = substr(line, RSTART + RLENGTH)
        }
        exists[file] = 1
        next
    }
    {
        from = $1; target = $2
        if (target ~ /^(https?|mailto|javascript|ftp):/ || target == "" ) next
        if (target ~ /^#/) target = (from == "navtree" ? "index.html" : from) target
        split(target, part, "#"); f = part[1]; a = part[2]
        sub(/\?.*/, "", f)
        if (f ~ /^file:/ || f ~ /^\//) { print from ": an absolute link " target >> problems; next }
        n++
        if (f !~ /\.html$/) {           # a picture, a script, a style sheet
            if ((getline junk < (html "/" f)) < 0) print from ": links to " f ", which is missing" >> problems
            else close(html "/" f)
            next
        }
        if (!(f in exists)) { print from ": links to " f ", which is missing" >> problems; next }
        if (a != "" && !((f "#" a) in anchor))
            print from ": links to " target ", an anchor " f " does not have" >> problems
    }
    END { print n + 0 }
' "$HTML"/*.html - <"$OUT/links.txt")

if [ -s "$problems" ]; then
    sort -u "$problems" | head -50 >&2
    fail "$(sort -u "$problems" | wc -l) problems in the book (all of them: $problems)"
fi
echo "docs-check: $npages pages opened in Chromium, $formulas formulas typeset, $pictures pictures and $links links checked"
echo "docs-check: $nnarrative narrative pages read for Markdown left as text and words linked to structs, 6 searches run, the 5 mistakes planted in its self-test named"
sed 's/^/docs-check: /' "$OUT/numbers.txt"
sed 's/^/docs-check: /' "$OUT/said-once.txt"
echo "docs-check: screenshots in $OUT/screens/, the rendered pages in $OUT/dom/"
scripts/docs-pictures.sh  # pictures per chapter page; fails on a page with none
