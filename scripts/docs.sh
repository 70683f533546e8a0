#!/bin/sh
# Builds the book: docs/html, from the Doxyfile. Called by `make docs`.
#
#   1. builds the chapter programs and runs each one, capturing what it prints
#      into build/docs/output/NN_name.txt, cut into one file per section
#      (NN_name.sK.txt), so a chapter page shows each section's real output
#      beside its prose with \verbinclude NN_name.sK.txt (checked: every
#      section once);
#   2. draws the pictures the pages show: `vit attention` (chapter 12's maps),
#      gnuplot and graphviz from the chapters' printed numbers and from small
#      programs linked with lib (docs/plots/), vitview's screens;
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
# pages still show the file as written. It then does what --prose-filter does.
#
#   scripts/docs.sh --prose-filter FILE   (doxygen's filter for *.h, *.md, *.dox)
#
# prints FILE with "Chapter NN" written "%Chapter NN" outside code spans and
# code blocks: the chapter, not the narrator struct Chapter that Doxygen's
# autolink would link the word to. The sources stay as a reader of the file or
# of GitHub sees them ("Chapter 02", no escape); the link text of an @ref or a
# @subpage ("Chapter 02 · Scaling") is left as written (Doxygen never links it).
set -eu

# prose_filter: stdin to stdout, the "Chapter NN" of --prose-filter escaped
prose_filter() {
    awk '
        # fenced blocks (``` or ~~~) and @code / @verbatim blocks are code
        /^[ \t]*(```|~~~)/ { fence = !fence; print; next }
        fence || block { if ($0 ~ /[@\\]end(code|verbatim)/) block = 0; print; next }
        /[@\\](code|verbatim)([^a-z]|$)/ { if ($0 !~ /[@\\]end(code|verbatim)/) block = 1; print; next }
        {
            # the pieces between backticks: the 1st, 3rd, … are prose, the others code spans
            n = split($0, piece, "`"); line = ""
            for (i = 1; i <= n; i++)
                line = line (i > 1 ? "`" : "") (i % 2 ? escape(piece[i]) : piece[i])
            print line
        }
        function escape(s,    out, pre) {
            out = ""
            while (match(s, /Chapter [0-9]/)) {
                pre = out substr(s, 1, RSTART - 1)
                out = pre
                if (pre !~ /[%A-Za-z0-9_]$/ && pre !~ /[@\\](ref|subpage)[ \t]+[A-Za-z0-9_.]+[ \t]+"$/)
                    out = out "%"
                out = out "Chapter"
                s = substr(s, RSTART + 7)
            }
            return out s
        }'
}

if [ "${1:-}" = "--prose-filter" ]; then
    prose_filter <"$2"
    exit
fi

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
    ' "$2" "$2" | prose_filter
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
split_sections() { # OUT/NN_name FILE: the sections of FILE, named after OUT/NN_name
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
        }' "$2"
}

# boxes_only OUT/NN_name: what the page's boxes show of the capture
# OUT/NN_name.raw, whose prose lines (ch_say()) start with the record
# separator (VIT_CHAPTER_PROSE=marked). The page carries the explanation, so
# of the prose a box keeps only the sentences that give a measured value (a
# number with a decimal point, an exponent or a percent sign: a value the
# page's prose reads), rewrapped; tables, matrices and values stay. The whole transcript,
# prose included, is OUT/NN_name.txt (the book's numbers are checked against
# it, scripts/docs-numbers.sh). A verdict the data decides (ch_verdict()) is
# not marked and stays whole. Runs of blank lines left behind become one.
# "What's next" is the program's own text, which the page does not say
# again: it stays whole.
boxes_only() {
    awk -v mark="$(printf '\036')" '
        function has_value(t) { return t ~ /[0-9]\.[0-9]|[0-9]e[-+]?[0-9]|[0-9] ?%/ }
        # the sentences of the paragraph that give a value, wrapped at 78 columns
        function flush(   rest, cut, sentence, kept, k, words, i, line) {
            rest = para; kept = ""
            while (rest != "") {
                # a sentence ends at . ! ? (and a closing bracket) before a space and a capital
                if (match(rest, /[.!?][)]? [A-Z(]/)) {
                    cut = RSTART + RLENGTH - 2
                    sentence = substr(rest, 1, cut - 1); rest = substr(rest, cut + 1)
                }
                else { sentence = rest; rest = "" }
                if (has_value(sentence)) kept = kept (kept ? " " : "") sentence
            }
            np = 0; para = ""
            if (kept == "") return
            k = split(kept, words, " "); line = ""
            for (i = 1; i <= k; i++) {
                if (line != "" && length(line) + 1 + length(words[i]) > 78) { out(line); line = "" }
                line = line (line ? " " : "") words[i]
            }
            out(line); out("")
        }
        function out(s) {
            if (s == "" && last_blank) return
            print s; last_blank = (s == "")
        }
        index($0, mark) == 1 && next_section { print substr($0, length(mark) + 1); next }
        index($0, mark) == 1 {
            s = substr($0, length(mark) + 1)
            if (s == "") { flush(); next }
            np++; para = para (para ? " " : "") s
            next
        }
        { if (np) flush(); out($0); if ($0 == "What\047s next") next_section = 1 }
        END { if (np) flush() }' "$1.raw"
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
FULL=$OUT/full                   # each section whole, prose included (not shown)
mkdir -p "$OUT" "$FULL"
if ls chapters/[0-9][0-9]_*.c >/dev/null 2>&1; then
    echo "docs: building the chapters"
    make --no-print-directory BUILD="$BUILD" chapters
    for src in chapters/[0-9][0-9]_*.c; do
        name=$(basename "$src" .c)
        echo "docs: running $BUILD/chapters/$name > $OUT/$name.txt"
        # no colours, no terminal: the page shows plain text
        if ! NO_COLOR=1 TERM=dumb VIT_CHAPTER_PROSE=marked timeout "${CHAPTER_TIMEOUT:-300}" \
                "$BUILD/chapters/$name" >"$OUT/$name.raw" </dev/null; then
            fail "$BUILD/chapters/$name failed; its page would show broken output"
        fi
        tr -d '\036' <"$OUT/$name.raw" >"$OUT/$name.txt" # all of it, as a terminal shows it
        boxes_only "$OUT/$name" >"$OUT/$name.boxes"
        split_sections "$OUT/$name" "$OUT/$name.boxes"
        split_sections "$FULL/$name" "$OUT/$name.txt" # whole, for the pictures drawn from it
        # the introduction is the page's own: what is left of the program's
        # (a formula in ASCII) the page writes in TeX
        rm -f "$OUT/$name.s0.txt"
        rm -f "$OUT/$name.raw" "$OUT/$name.boxes"
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
plot() { # script, data, picture, then any more gnuplot assignments ("name=value; ...")
    gnuplot -e "data='$2'; out='$PICTURES/$3'; ${4:-}" "docs/plots/$1" 2>"$PICTURES/$3.log" ||
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
if [ -f "$FULL/02_scaling.s1.txt" ]; then
    rows_of "$FULL/02_scaling.s1.txt" 5 >"$PICTURES/scaling-variance.dat"
    rows_of "$FULL/02_scaling.s2.txt" 5 >"$PICTURES/scaling-saturation.dat"
    for t in variance saturation; do
        [ "$(wc -l <"$PICTURES/scaling-$t.dat")" -ge 3 ] ||
            fail "chapter 02's $t table was not found in its output ($FULL/02_scaling.s*.txt)"
        plot scaling_$t.gp "$PICTURES/scaling-$t.dat" scaling-$t.png
    done
fi
make --no-print-directory BUILD="$BUILD" "$BUILD/plots/gelu_points"
"$BUILD/plots/gelu_points" >"$PICTURES/gelu-relu.dat"
plot gelu_relu.gp "$PICTURES/gelu-relu.dat" gelu-relu.png

# ------------------------------------------------------------ the chapters' own numbers, drawn
# A picture for the chapters whose page would otherwise be all text, drawn from
# what the chapter printed above ($FULL/NN_name.sK.txt): its matrices as
# heatmaps, its tables as bars and curves. Timings (chapters 13 and 14) are
# the ones this machine measured while the book was built.
# matrix_of FILE NAME: the rows of the matrix the chapter printed as
# "NAME = [[...], ...]", one line of numbers per row (-inf kept as written)
matrix_of() {
    awk -v name="$2" '
        index($0, name " = [[") == 1 { on = 1; sub(/^[^[]*/, "") }
        on { line = $0; gsub(/[][,]/, " ", line); print line; if ($0 ~ /]]$/) exit }' "$1"
}
# need FILE LINES WHAT: fails unless FILE has at least LINES lines
need() {
    [ "$(wc -l <"$1")" -ge "$2" ] || fail "$3 was not found in the chapter's output (for $1)"
}
echo "docs: drawing the chapters' numbers -> $PICTURES"
if [ -f "$FULL/01_dot_product.s4.txt" ]; then
    matrix_of "$FULL/01_dot_product.s4.txt" scores >"$PICTURES/dot-scores.dat"
    need "$PICTURES/dot-scores.dat" 2 "chapter 01's scores"
    plot dot_scores.gp "$PICTURES/dot-scores.dat" dot-scores.png
fi
if [ -f "$FULL/03_softmax.s4.txt" ]; then
    {
        # the header names each key by its score, from the row "x = [...]" printed above the table
        grep -m1 '^ *x = \[' "$FULL/03_softmax.s4.txt" | sed 's/.*\[//; s/\].*//; s/,/ /g' |
            awk '{ printf "T"; for (i = 1; i <= NF; i++) printf " \"key %d: %s\"", i - 1, $i; print "" }'
        rows_of "$FULL/03_softmax.s4.txt" 5
    } >"$PICTURES/softmax-temperature.dat"
    need "$PICTURES/softmax-temperature.dat" 4 "chapter 03's temperature table"
    plot softmax_temperature.gp "$PICTURES/softmax-temperature.dat" softmax-temperature.png
fi
if [ -f "$FULL/04_attention.s5.txt" ]; then
    matrix_of "$FULL/04_attention.s2.txt" probs >"$PICTURES/attention.probs"
    matrix_of "$FULL/04_attention.s5.txt" causal_mask |
        awk '{ for (i = 1; i <= NF; i++) $i = ($i == "-inf") ? 1 : 0; print }' >"$PICTURES/attention.mask"
    matrix_of "$FULL/04_attention.s5.txt" probs_causal >"$PICTURES/attention.causal"
    for part in probs mask causal; do need "$PICTURES/attention.$part" 2 "chapter 04's $part"; done
    plot attention_masks.gp "$PICTURES/attention" attention-masks.png
fi
if [ -f "$model" ]; then
    # chapter 07's positions are random; the shipped model's were learned
    make --no-print-directory BUILD="$BUILD" "$BUILD/plots/pos_similarity"
    "$BUILD/plots/pos_similarity" "$model" >"$PICTURES/pos-similarity.dat" ||
        fail "$BUILD/plots/pos_similarity failed; chapter 07's picture would be missing"
    plot pos_similarity.gp "$PICTURES/pos-similarity.dat" pos-similarity.png
fi
if [ -f "$FULL/10_learning.s8.txt" ]; then
    # the schedule as the chapter states it ("... over the first W steps ... For a run of
    # T steps, peak P and floor F:"), then lib's lr_at() at every step of it
    set -- $(awk '{ printf "%s ", $0 } /floor [0-9.e+-]+:$/ { exit }' "$FULL/10_learning.s8.txt" |
        sed -n 's/.*over the first \([0-9]*\) steps.*a run of \([0-9]*\) steps, peak \([0-9.e+-]*\) and floor \([0-9.e+-]*\):.*/\2 \1 \3 \4/p')
    [ $# -eq 4 ] || fail "chapter 10's schedule (steps, warm-up, peak, floor) was not found in its section 8"
    make --no-print-directory BUILD="$BUILD" "$BUILD/plots/lr_points"
    "$BUILD/plots/lr_points" "$@" >"$PICTURES/lr-schedule.dat" || fail "$BUILD/plots/lr_points $* failed"
    grep -E '^ +[0-9]+ +[0-9.]+e[-+][0-9]+$' "$FULL/10_learning.s8.txt" >"$PICTURES/lr-table.dat" || true
    need "$PICTURES/lr-table.dat" 3 "chapter 10's table of the learning rate"
    plot lr_schedule.gp "$PICTURES/lr-schedule.dat" lr-schedule.png "table='$PICTURES/lr-table.dat'"
fi
if [ -f "$FULL/10_learning.s2.txt" ]; then
    # the head's forward and backward as a graph, each tensor with the shape the chapter printed
    fill=""
    for name in Q K V probs dcontext dprobs dV dscaled dscores dQ dK; do
        shape=$(matrix_of "$FULL/10_learning.s2.txt" "$name" | awk 'NF { r++; c = NF } END { if (r) printf "(%d, %d)", r, c }')
        [ -n "$shape" ] || fail "chapter 10's $name was not found in its section 2"
        fill="$fill s/@$name@/$shape/g;"
    done
    sed "$fill" docs/plots/head_backward.dot.in >"$PICTURES/head-backward.dot"
    ! grep -v '^ *//' "$PICTURES/head-backward.dot" | grep -q '@[A-Za-z]*@' || fail "docs/plots/head_backward.dot.in names a shape not filled in"
    dot -Tsvg "$PICTURES/head-backward.dot" -o "$PICTURES/head-backward.svg" 2>"$PICTURES/head-backward.log" ||
        { cat "$PICTURES/head-backward.log" >&2; fail "dot could not draw $PICTURES/head-backward.dot"; }
    [ ! -s "$PICTURES/head-backward.log" ] ||
        { cat "$PICTURES/head-backward.log" >&2; fail "dot warned on $PICTURES/head-backward.dot"; }
    rm -f "$PICTURES/head-backward.log"
fi
if [ -f "$FULL/13_attention_at_scale.s5.txt" ]; then
    # the tables of sections 2 to 5 joined on N: sizes in MB and times in ms, units and commas dropped
    for k in 2 3 4 5; do
        grep -E '^ +[0-9]+ px ' "$FULL/13_attention_at_scale.s$k.txt" | tr -d ',%' >"$PICTURES/scale-s$k.rows"
    done
    awk 'FILENAME ~ /s2.rows$/ { one[$3] = $5; heads[$3] = $7; traced[$3] = $9; exact[$3] = $11; order[n++] = $3 }
         FILENAME ~ /s3.rows$/ { held[$3] = $5; chunks[$3] = $7 }
         FILENAME ~ /s4.rows$/ { online[$3] = $5 }
         FILENAME ~ /s5.rows$/ { local[$3] = $6 }
         END { for (i = 0; i < n; i++) { N = order[i]
                   if (!(N in held) || !(N in online) || !(N in local)) exit 1
                   print N, one[N], heads[N], traced[N], held[N], exact[N], chunks[N], online[N], local[N] } }' \
        "$PICTURES"/scale-s[2345].rows >"$PICTURES/attention-scale.dat" ||
        fail "chapter 13's tables of sections 2 to 5 do not list the same sizes"
    rm -f "$PICTURES"/scale-s[2345].rows
    need "$PICTURES/attention-scale.dat" 3 "chapter 13's tables"
    plot attention_scale.gp "$PICTURES/attention-scale.dat" attention-scale.png
fi
if [ -f "$FULL/14_making_it_fast.s10.txt" ]; then
    # the ladder: "name (what it changes)<TAB>GFLOP/s", from the table after "The whole ladder"
    awk '/^The whole ladder/ { on = 1 }
         on && /^    matmul_/ { d = $2; for (i = 3; i <= NF - 4; i++) d = d " " $i
                                printf "%s (%s)\t%s\n", $1, d, $(NF - 1) }' \
        "$FULL/14_making_it_fast.s9.txt" >"$PICTURES/gflops-ladder.dat"
    need "$PICTURES/gflops-ladder.dat" 5 "chapter 14's ladder"
    best=$(sed -n 's/.*best measured \([0-9.]*\).*/\1/p' "$FULL/14_making_it_fast.s10.txt" | head -n 1)
    peak=$(sed -n 's/.* = \([0-9.]*\) GFLOP\/s on paper.*/\1/p' "$FULL/14_making_it_fast.s10.txt" | head -n 1)
    [ -n "$best" ] || fail "chapter 14's best measured speed was not found in its section 10"
    plot gflops_ladder.gp "$PICTURES/gflops-ladder.dat" gflops-ladder.png "best=$best; peak=${peak:-0}"
fi
if [ -f "$FULL/15_smaller_numbers.s7.txt" ]; then
    # the table of section 7, one row per stage and block: index, block, stage, percent
    awk 'BEGIN { s = 0 }
         /^    stage +block 0/ { on = 1; L = NF - 1; next }
         on && /^    [a-z]/ && NF == L / 2 + 1 && $2 ~ /%$/ {
             stage[s] = $1; for (b = 0; b < L / 2; b++) { v = $(b + 2); sub(/%/, "", v); err[s, b] = v }; s++ }
         on && /^$/ && s { exit }
         END { n = 0; for (b = 0; b < L / 2; b++) for (k = 0; k < s; k++) print n++, b, stage[k], err[k, b] }' \
        "$FULL/15_smaller_numbers.s7.txt" >"$PICTURES/int8-error.dat"
    need "$PICTURES/int8-error.dat" 10 "chapter 15's table of section 7"
    plot int8_error.gp "$PICTURES/int8-error.dat" int8-error.png
fi

# ------------------------------------------------------------ lib's own pictures
# Two pictures drawn by small programs linked with lib (docs/plots/*.c), so
# they show what lib's code does: heads-layout.svg, chapter 05's memory of a
# tiny fused qkv buffer before and after heads_split_qkv() (a graph that
# graphviz's dot lays out), and patch-grid.png, chapter 06's photo as ViT-B/16
# receives it, cut into patches numbered by patch_unfold().
echo "docs: drawing the heads' layout and the patch grid -> $PICTURES"
make --no-print-directory BUILD="$BUILD" "$BUILD/plots/heads_layout" "$BUILD/plots/patch_grid"
"$BUILD/plots/heads_layout" >"$PICTURES/heads-layout.dot" ||
    fail "$BUILD/plots/heads_layout failed; chapter 05's picture would be missing"
dot -Tsvg "$PICTURES/heads-layout.dot" -o "$PICTURES/heads-layout.svg" 2>"$PICTURES/heads-layout.log" ||
    { cat "$PICTURES/heads-layout.log" >&2; fail "dot could not draw $PICTURES/heads-layout.dot"; }
[ ! -s "$PICTURES/heads-layout.log" ] ||
    { cat "$PICTURES/heads-layout.log" >&2; fail "dot warned on $PICTURES/heads-layout.dot"; }
rm -f "$PICTURES/heads-layout.log"
"$BUILD/plots/patch_grid" data/images/chelsea.jpg "$PICTURES/patch-grid.png" ||
    fail "$BUILD/plots/patch_grid failed; chapter 06's picture would be missing"
for picture in heads-layout.svg patch-grid.png; do
    [ -s "$PICTURES/$picture" ] || fail "$PICTURES/$picture is empty"
done

# ------------------------------------------------------------ the viewer, captured
# Two screens of vitview as a colour terminal shows them, for the viewer page
# (docs/viewer.md): tmux runs build/vitview with no arguments, which opens the
# shipped model on the shipped test image 0000-ankle-boot.png (what `make run`
# shows), at 100×30 on a tmux server of its own (its socket in a temporary
# folder; the server and the folder are removed on any exit); the keys lead to
# each screen as in tests/viewer_tmux.sh, and once the screen has settled
# `tmux capture-pane -e` reads it back with its colours. Debian's aha (make docs
# installs it) turns that into HTML: $PICTURES/vitview-NAME.html, one <pre> with
# inline styles only (a black terminal, monospace, no style sheet), which the
# page shows with \htmlinclude (EXAMPLE_PATH, below, names $PICTURES). Each wait
# also checks that the screen shows what the page's caption says of it (a new
# model changes the numbers: then the captions and these patterns change). The
# build fails when vitview ends early, a screen does not appear or does not
# settle within VIEWER_TIMEOUT (default 60) seconds, or a capture is empty.
VV=""
VV_TIMEOUT=${VIEWER_TIMEOUT:-60}
# the terminal: black, light grey text, a monospace font whose block and line
# characters fill the cell (line-height normal), a scroll bar when the page is narrow
VV_STYLE="display:inline-block; box-sizing:border-box; max-width:100%; overflow-x:auto; margin:12px 0 4px;"
VV_STYLE="$VV_STYLE padding:8px 10px; border-radius:4px; background-color:#000; color:#e5e5e5;"
VV_STYLE="$VV_STYLE text-align:left; white-space:pre; font-size:12px; line-height:normal;"
VV_STYLE="$VV_STYLE font-family:'DejaVu Sans Mono', 'Liberation Mono', monospace"
VV_ESC=$(printf '\033')
vv_tmux() { tmux -u -S "$VV/tmux.sock" -f /dev/null "$@"; }
vv_cleanup() {
    [ -n "$VV" ] || return 0
    vv_tmux kill-server >/dev/null 2>&1 || true
    rm -rf "$VV"
    VV=""
}
# vv_fail MESSAGE: fails, showing the last screen read and what vitview said
vv_fail() {
    echo "docs: $1" >&2
    if [ -s "$VV/screen.txt" ]; then
        echo "docs: the screen was:" >&2
        sed 's/^/    | /' "$VV/screen.txt" >&2
    fi
    if [ -s "$VV/exit" ]; then
        echo "docs: vitview ended, $(cat "$VV/exit"); its stderr:" >&2
        sed 's/^/    | /' "$VV/stderr" >&2 2>/dev/null || true
    fi
    exit 1
}
# vv_wait WHAT PATTERN...: waits until every extended regex PATTERN matches
# the screen and the screen, colours included, has stayed the same for half a
# second; then $VV/screen.ansi holds it
vv_wait() {
    vv_what=$1
    shift
    vv_tries=$((VV_TIMEOUT * 10)) vv_still=0 vv_missing="tmux could not read it"
    : >"$VV/screen.ansi"
    while [ "$vv_tries" -gt 0 ]; do
        [ ! -s "$VV/exit" ] || vv_fail "vitview ended before the screen showed $vv_what"
        if vv_tmux capture-pane -e -p -t vitview >"$VV/now.ansi" 2>/dev/null; then
            sed "s/$VV_ESC\[[0-9;]*m//g" "$VV/now.ansi" >"$VV/screen.txt"
            vv_missing=""
            for vv_pattern; do
                grep -Eq -- "$vv_pattern" "$VV/screen.txt" || { vv_missing="no match for '$vv_pattern'"; break; }
            done
            if [ -z "$vv_missing" ] && cmp -s "$VV/now.ansi" "$VV/screen.ansi"; then
                vv_still=$((vv_still + 1))
                [ "$vv_still" -lt 5 ] || return 0
            else
                vv_still=0
            fi
            mv "$VV/now.ansi" "$VV/screen.ansi"
        fi
        sleep 0.1
        vv_tries=$((vv_tries - 1))
    done
    [ ! -s "$VV/exit" ] || vv_fail "vitview ended before the screen showed $vv_what"
    [ -n "$vv_missing" ] || vv_fail "the screen showing $vv_what did not settle in $VV_TIMEOUT s"
    vv_fail "the screen did not show $vv_what in $VV_TIMEOUT s ($vv_missing)"
}
# vv_capture NAME: the settled screen as $PICTURES/vitview-NAME.html. aha has
# no faint and draws black text dim grey (for a black page): it is given the
# 256 colours' black instead, and a grey for the faint of the stages not
# computed yet, as a terminal draws them.
vv_capture() {
    sed -e "s/$VV_ESC\[30m/$VV_ESC[38;5;16m/g" -e "s/$VV_ESC\[2m/$VV_ESC[38;5;244m/g" \
        "$VV/screen.ansi" | aha --no-header --black >"$VV/$1.html" ||
        vv_fail "aha could not convert the screen $1"
    grep -q '[^ ]' "$VV/$1.html" && grep -q 'style="[^"]*color:' "$VV/$1.html" ||
        vv_fail "the screen $1 came out empty or without colours"
    {
        printf '<pre class="vitview-screen" style="%s">' "$VV_STYLE"
        cat "$VV/$1.html"
        printf '</pre>\n'
    } >"$PICTURES/vitview-$1.html"
}
command -v tmux >/dev/null 2>&1 || fail "missing: tmux; run scripts/deps.sh first"
command -v aha >/dev/null 2>&1 || fail "missing: aha; run scripts/deps.sh aha first"
[ -f data/models/vit-fashion.safetensors ] ||
    fail "data/models/vit-fashion.safetensors is missing: the viewer page's captured screens show that model"
echo "docs: capturing vitview's screens -> $PICTURES/vitview-*.html"
make --no-print-directory BUILD="$BUILD" "$BUILD/vitview"
VV_TERM=tmux-256color # as tests/viewer_tmux.sh: xterm's 256 colours
infocmp "$VV_TERM" >/dev/null 2>&1 || VV_TERM=screen-256color
VV=$(mktemp -d)
trap vv_cleanup EXIT
trap 'exit 1' INT TERM HUP
vv_tmux new-session -d -s vitview -x 100 -y 30 -c "$ROOT" \
    "env -u NO_COLOR TERM=$VV_TERM LANG=C.UTF-8 LC_ALL=C.UTF-8 VIT_DATA_DIR='$ROOT/data' \
     '$BUILD/vitview' --threads 2 2>'$VV/stderr'; echo EXIT=\$? >'$VV/exit'" ||
    fail "tmux could not start a session for vitview"
vv_wait "the shipped model paused at its input" \
    "vit-fashion · 0000-ankle-boot\.png" "paused at input 1/[0-9]+"
# a breakpoint on the last block's attention probabilities, then continue
vv_tmux send-keys -t vitview B
vv_tmux send-keys -t vitview -l "blocks.5.attn.probs"
vv_tmux send-keys -t vitview Enter c
# (what the caption says: head 0, [cls] gives 0.0042 to itself and 0.54 to token 32)
vv_wait "the attention of blocks.5 as the page's caption describes it" \
    "paused at blocks\.5\.attn\.probs [0-9]+/[0-9]+" "●▶ +attn\.probs" \
    "shape +\(B=1, H=4, N=50, N=50\)" "head 0 of 4 .* query cls" "to cls 0\.004[0-9]* *$" \
    "most to token 32 \(4,3\)" "= 0\.(53[5-9]|54[0-9])[0-9]* *$"
vv_capture attention
# on to the end of the pass
vv_tmux send-keys -t vitview c
# (the caption: Ankle boot first with 0.90, Pullover next with 0.01, ● on blocks.5)
vv_wait "the logits as the page's caption describes them" \
    "finished at logits [0-9]+/[0-9]+" "top of 10 classes" "● +▸ blocks\.5 " \
    "│ +1 Ankle boot +-?[0-9.]+ +0\.(89[5-9]|90[0-4])[0-9]* " \
    "│ +2 Pullover +-?[0-9.]+ +0\.(00[5-9]|01[0-4])[0-9]* "
vv_capture logits
vv_tmux send-keys -t vitview q
vv_tries=$((VV_TIMEOUT * 10))
while [ ! -s "$VV/exit" ] && [ "$vv_tries" -gt 0 ]; do sleep 0.1; vv_tries=$((vv_tries - 1)); done
grep -qx "EXIT=0" "$VV/exit" 2>/dev/null || vv_fail "vitview did not quit with status 0 on q"
vv_cleanup
trap - EXIT INT TERM HUP

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

# ------------------------------------------------------------ links both ways
# function_links.dox: on each lib function's documentation, the chapters whose
# pages teach it (they name it, NAME(), or quote its body, \snippet dir/x.c NAME
# with lib/dir/x.c one of lib's), the chapters whose programs also call it, and the suites
# that pin it (they call it). Written from the sources on every build, so the links
# follow the code; Doxygen adds an "@fn NAME" block to NAME's own documentation.
# lib's functions, "NAME<tab>PROTOTYPE": every prototype (or inline definition)
# in lib/*/*.h, outside comments, its lines joined. The @fn needs the parameter
# list: without it Doxygen cannot match a function declared in a header and
# defined in a .c file. Not vecmath.h, which declares only libm's expf and erff.
awk '
    /\/\*/ {c = 1} c && /\*\// {c = 0; next} c {next}
    !proto && /^[A-Za-z_][A-Za-z0-9_ *]*[ *][a-z][a-z0-9_]*\(/ && !/^(typedef|return) / {
        proto = 1; text = ""
    }
    proto {
        line = $0; sub(/^[ \t]+/, " ", line); text = text line
        if (text !~ /\)[^()]*(;|\{)/) next          # the prototype goes on
        sub(/[ \t]*(;|\{).*$/, "", text)
        gsub(/__attribute__\(\(([^()]|\([^()]*\))*\)\)/, "", text)
        gsub(/[ \t]+/, " ", text); sub(/ $/, "", text)
        name = text; sub(/\(.*/, "", name); sub(/.*[ *]/, "", name)
        print name "\t" text
        proto = 0
    }' $(ls lib/*/*.h | grep -v '^lib/ops/vecmath\.h$') | sort -u >"$KEYS/functions.txt"
[ -s "$KEYS/functions.txt" ] || fail "found no function prototypes in lib/*/*.h"
# "page|program|suite FILE NAME" for every NAME( in a chapter page, chapter program or test
for f in docs/chapters/[0-9][0-9]_*.md chapters/[0-9][0-9]_*.c tests/test_*.c; do
    [ -e "$f" ] || continue
    case $f in docs/*) kind=page ;; chapters/*) kind=program ;; *) kind=suite ;; esac
    # a page names a function as name() (prose such as "the softmax (…)" is not
    # a call); code may put a space before the parenthesis
    space='[[:space:]]*'
    [ $kind = page ] && space=''
    grep -oE "\\b[a-z][a-z0-9_]*$space\\(" "$f" | tr -d '( \t' | sed "s|^|$kind $f |"
    # and a page that quotes a lib function's body, \snippet DIR/FILE.c NAME
    # with lib/DIR/FILE.c one of lib's, teaches it
    if [ $kind = page ]; then
        sed -n 's|^\\snippet \([a-z0-9_/]*\.c\) \([a-z0-9_]*\)$|\1 \2|p' "$f" |
            while read -r file marker; do
                if [ -e "lib/$file" ]; then echo "page $f $marker"; fi
            done
    fi
done | sort -u >"$KEYS/uses.txt"
awk '
    FILENAME ~ /functions\.txt$/ { split($0, part, "\t"); lib[part[1]] = part[2]; next }
    !($3 in lib) { next }
    $1 == "suite" {
        suite = $2; sub(/^tests\/test_/, "", suite); sub(/\.c$/, "", suite)
        pins[$3] = pins[$3] (pins[$3] == "" ? "" : ", ") "@ref test_" suite ".c \"" suite "\""
        next
    }
    {   # a chapter: "NN" from docs/chapters/NN_name.md or chapters/NN_name.c
        nn = $2; sub(/^.*\//, "", nn); nn = substr(nn, 1, 2)
        if ($1 == "page" && !(($3, nn) in taught)) { taught[$3, nn] = 1; pages[$3] = pages[$3] " " nn }
        if ($1 == "program") programs[$3] = programs[$3] " " nn
    }
    # the chapters of list, as links; with skip_taught, those not already taught
    function chapters(list, f, skip_taught,    n, a, i, k, kept) {
        n = split(list, a, " "); k = 0
        for (i = 1; i <= n; i++)
            if (!(skip_taught && ((f, a[i]) in taught))) kept[++k] = "@ref chapter" a[i] " \"" a[i] "\""
        return words(kept, k)
    }
    # "x", "x and y", "x, y and z"; the count in last_count
    function words(item, k,    i, out) {
        out = ""
        for (i = 1; i <= k; i++) out = out (i == 1 ? "" : i == k ? " and " : ", ") item[i]
        last_count = k
        return out
    }
    function plural(word) { return last_count == 1 ? word : word "s" }
    END {
        for (f in lib) {
            out = ""
            t = chapters(pages[f], f, 0)
            if (t != "") out = out sprintf(" * @par Taught in\n * %s %s.\n", plural("chapter"), t)
            c = chapters(programs[f], f, 1)
            if (c != "") out = out sprintf(" * @par %s\n * the %s of %s %s.\n",
                                           t == "" ? "Called in" : "Also called in",
                                           plural("program"), plural("chapter"), c)
            k = split(pins[f], pinned, ", "); p = words(pinned, k)
            if (p != "") out = out sprintf(" * @par Pinned by\n * the %s %s (@ref answer_keys \"the answer keys\").\n",
                                           plural("suite"), p)
            if (out != "") printf "/** @fn %s\n%s */\n", lib[f], out
        }
    }' "$KEYS/functions.txt" "$KEYS/uses.txt" >"$KEYS/function_links.dox"

# folders.dox: the text of the directory pages, which would otherwise only list
# files: docs/folders.dox's for the project's folders, and here the exercises'
# and the build's. An @dir names its folder by the end of its path, so "chapters"
# would match docs/chapters too: each is written as an absolute path here (the
# pages show it relative), which is why the Doxyfile leaves docs/folders.dox out.
sed "s|^/\*\* @dir |/** @dir $ROOT/|" docs/folders.dox >"$KEYS/folders.dox"
for d in exercises/[0-9][0-9]_*; do
    [ -f "$d/README.md" ] || continue
    name=$(basename "$d")
    title=$(sed -n '1s/^# //p' "$d/README.md")
    printf '/** @dir %s\n * @brief %s: its functions to fill, and @ref md_exercises_%s_README "what to write".\n */\n' \
        "$ROOT/$d" "$title" "$name"
done >>"$KEYS/folders.dox"
printf '/** @dir %s\n * @brief Pages the docs build writes: the answer keys (%s) and the links of each\n * lib function to its chapters and suites (%s).\n */\n' \
    "$ROOT/$KEYS" "answer_keys.dox" "function_links.dox" >>"$KEYS/folders.dox"
for d in build/docs build; do
    printf '/** @dir %s\n * @brief The build tree, where make docs writes the pages above.\n */\n' "$ROOT/$d"
done >>"$KEYS/folders.dox"

# every group of lib and the viewer is in docs/modules.dox, which sets the
# order of the Modules page; lib's groups name their chapters and suites
for h in lib/*/*.h viewer/*.h; do
    [ -e "$h" ] || continue
    for g in $(sed -n 's/.*@defgroup \([a-z_0-9]*\) .*/\1/p' "$h"); do
        grep -q "@defgroup $g " docs/modules.dox ||
            fail "group $g ($h) is missing from docs/modules.dox, which lists the modules in reading order"
        case $h in lib/*)
            awk -v g="$g" '$0 ~ "@defgroup " g " " {on = 1} on {text = text $0} on && /@\{/ {exit}
                END {exit !(text ~ /@ref chapter[0-9][0-9]/ && text ~ /@ref test_[a-z0-9_]*\.c/)}' "$h" ||
                fail "group $g ($h) does not link the chapter that teaches it and the suite that pins it"
        esac
    done
done

# ------------------------------------------------------------ doxygen
# Only folders that exist: doxygen warns (and so fails) on a missing input.
input="docs/modules.dox lib $KEYS"
for d in chapters docs cli benchmarks viewer; do
    [ -d "$d" ] && input="$input $d"
done
# each exercise's README is a page of the book (md_exercises_NN_name_README);
# the folder's index is GitHub's, the book's is the teachers' table
for f in exercises/[0-9][0-9]_*/README.md; do
    [ -f "$f" ] && input="$input $f"
done
examples="lib tests $OUT $PICTURES" # $PICTURES: the viewer screens docs/viewer.md includes
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
# no directory page that only lists files: each has its description
for page in "$HTML"/dir_*.html; do
    case $(basename "$page") in dir_*_*.html) continue ;; esac # dependencies between two folders
    grep -q '<h2 class="groupheader">Detailed Description</h2>' "$page" ||
        fail "$page ($(sed -n 's/.*<title>[^:]*: \(.*\) Directory Reference.*/\1/p' "$page")) has no description: add an @dir to docs/folders.dox"
done
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
