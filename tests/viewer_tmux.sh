#!/bin/sh
# The viewer in a real terminal: tmux runs vitview at 100×30, the script sends
# keys, reads the screen back with capture-pane and checks what a learner
# would see — stage names and shapes, a heatmap, attention, the top-K labels,
# the help — then resizes to 60×20 and back, shrinks below the minimum, and
# quits with q, which must exit 0. Two runs on weights the script writes with
# the `vit` beside vitview: one holding a NaN (the viewer must stop at the
# first stage it reaches), one truncated by another process while vitview has
# it mapped (a message and exit 1, not "Bus error"); a training's film beside
# weights (( ) scrub through its frames, the logits changing with them) and
# weights without one. Then the default demo:
# vitview with no arguments opens the trained Fashion-MNIST model
# (data/models/vit-fashion.safetensors; while it is not there, a small one the
# script trains with `vit train` in a data folder of its own, VIT_DATA_DIR) on
# a grey 28×28 test image, at 100×30, 80×24 and 160×50, down to the class
# names on the logits, at 80×24 its logit lens (Y) against `vit lens`, the
# head importance (I) with the numbers `vit heads` prints, its occlusion
# beside attention (O) against `vit occlusion`, its neuron view (N) against
# `vit score`, its head fingerprints (F) against `vit fingerprints`, its
# position similarity (E on embed) against `vit positions` and its activation
# patching (C) against `vit patch`; and without the
# model it says so and uses random weights.
#
#   tests/viewer_tmux.sh build/vitview
#
# Runs on its own tmux server (a private socket in a temporary directory), so
# it never touches a user's sessions, and removes both on any exit. Prints one
# PASS/FAIL line; exit status 0 when every check passed, 1 otherwise, 2 for
# bad usage or a missing tmux. Takes a few seconds. A second, shorter run
# with NO_COLOR set checks the ASCII fallback.
set -u

VITVIEW=${1:-}
if [ -z "$VITVIEW" ] || [ ! -x "$VITVIEW" ]; then
    echo "usage: $0 path/to/vitview" >&2
    exit 2
fi
command -v tmux >/dev/null 2>&1 || { echo "viewer_tmux: FAIL: tmux is not installed" >&2; exit 2; }

# UTF-8 everywhere: the half blocks of the heatmaps are "▀" (U+2580)
export LANG=C.UTF-8 LC_ALL=C.UTF-8
TERM_INSIDE=tmux-256color
infocmp "$TERM_INSIDE" >/dev/null 2>&1 || TERM_INSIDE=screen-256color
infocmp "$TERM_INSIDE" >/dev/null 2>&1 || TERM_INSIDE=screen

VIT=$(dirname "$VITVIEW")/vit
ARGS="" # extra arguments for the next start

SESSION=""
WORK=$(mktemp -d "${TMPDIR:-/tmp}/vitview-test.XXXXXX")
# the server's socket lives in WORK, so removing WORK leaves nothing behind
TMUX_CMD="tmux -u -S $WORK/tmux.sock -f /dev/null"
# One matrix product for every vit and vitview started here: measured by the
# first and kept in WORK however busy the machine is (VIT_GEMM_QUIET=0). Each
# measuring again, beside make test's other work, vit train and vitview --train
# picked different products (on an AMD EPYC the two are close) and their models
# differed in the last bits: the checks "bit for bit" below failed.
export VIT_GEMM_CACHE="$WORK/gemm-choice" VIT_GEMM_QUIET=0
FAILED=0
PASSED=0
LAST_FAILURE=""

# shellcheck disable=SC2317 # run by the trap
cleanup() {
    $TMUX_CMD kill-server >/dev/null 2>&1
    rm -rf "$WORK"
}
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

screen_text() { $TMUX_CMD capture-pane -p -t "$SESSION" 2>/dev/null; }

# pause_from_start, then pause between two looks at the screen: 20 ms at first
# (at 100 ms, the 169 checks waited 4 s in all for screens already drawn), then
# twice as long each time, up to 160 ms. Each look starts tmux and grep: looked
# at 50 times a second, a screen that takes seconds (a training's epoch) cost
# the CPU the viewer draws it with (perf: tmux's clients, grep, sleep and this
# script took 44 % of the 39 s of CPU the checks used; 35 s with the pauses).
# PAUSED: the milliseconds paused since pause_from_start.
pause_from_start() { PAUSE_MS=20 PAUSE_S=0.02 PAUSED=0; }
pause() {
    sleep "$PAUSE_S"
    PAUSED=$((PAUSED + PAUSE_MS))
    case $PAUSE_MS in
        20) PAUSE_MS=40 PAUSE_S=0.04 ;;
        40) PAUSE_MS=80 PAUSE_S=0.08 ;;
        *) PAUSE_MS=160 PAUSE_S=0.16 ;;
    esac
}
# paused_less_than SECONDS: whether pause() has waited less than that in all
paused_less_than() { [ "$PAUSED" -lt "$(($1 * 1000))" ]; }

# wait_for PATTERN [SECONDS]: until the screen matches the extended regex
wait_for() {
    pause_from_start
    while :; do
        screen_text >"$WORK/screen.txt"
        grep -Eq -- "$1" "$WORK/screen.txt" && return 0
        [ -s "$WORK/exit" ] && return 1 # vitview has ended: nothing more will appear
        paused_less_than "${2:-5}" || return 1
        pause
    done
}

# screen_settled: until two captures 0.1 s apart agree (at most 10 s); the
# last capture in screen.txt
screen_settled() {
    s_tries=100
    screen_text >"$WORK/screen.txt"
    while [ "$s_tries" -gt 0 ]; do
        sleep 0.1
        screen_text >"$WORK/screen.next"
        cmp -s "$WORK/screen.txt" "$WORK/screen.next" && return 0
        mv "$WORK/screen.next" "$WORK/screen.txt"
        s_tries=$((s_tries - 1))
    done
}

# help_page_to PATTERN PAGES: pages down the open help (PgDn, ten lines at a
# time) until PATTERN is on the screen, at most PAGES times, each page drawn
# in full before the next key. (Paging on after a second without the line, a
# busy machine's slow page took two keys, and the line's page was skipped.)
help_page_to() {
    p_left=$2
    screen_settled
    until grep -Eq -- "$1" "$WORK/screen.txt"; do
        [ "$p_left" -gt 0 ] || return 1
        p_left=$((p_left - 1))
        cp "$WORK/screen.txt" "$WORK/page.txt"
        keys NPage
        pause_from_start # until the page moves (10 s); at the help's end it does not
        while screen_text >"$WORK/screen.txt" && cmp -s "$WORK/page.txt" "$WORK/screen.txt"; do
            paused_less_than 10 || return 1
            pause
        done
        screen_settled
    done
}

# check NAME PATTERN [SECONDS]: one named expectation on the screen
check() {
    if wait_for "$2" "${3:-5}"; then
        PASSED=$((PASSED + 1))
    else
        FAILED=$((FAILED + 1))
        LAST_FAILURE=$1
        echo "viewer_tmux: FAILED: $1 (no match for '$2'); the screen was:" >&2
        sed 's/^/    | /' "$WORK/screen.txt" >&2
        if [ -s "$WORK/exit" ]; then
            echo "viewer_tmux: vitview ended early, $(cat "$WORK/exit"); its stderr:" >&2
            sed 's/^/    | /' "$WORK/stderr" >&2
            echo "viewer_tmux: FAIL (vitview ended during: $1)"
            exit 1
        fi
    fi
}

keys() { $TMUX_CMD send-keys -t "$SESSION" "$@"; }

# check_rows NAME PATTERN COUNT [SECONDS]: until exactly COUNT lines of the screen match
check_rows() {
    pause_from_start
    while :; do
        screen_text >"$WORK/screen.txt"
        n=$(grep -Ec -- "$2" "$WORK/screen.txt")
        [ "$n" -eq "$3" ] && { PASSED=$((PASSED + 1)); return 0; }
        paused_less_than "${4:-5}" && [ ! -s "$WORK/exit" ] || break
        pause
    done
    FAILED=$((FAILED + 1))
    LAST_FAILURE=$1
    echo "viewer_tmux: FAILED: $1 ($n lines match '$2', not $3); the screen was:" >&2
    sed 's/^/    | /' "$WORK/screen.txt" >&2
}


# start NAME [ENV...]: a new session running vitview at 100×30 with extra environment
# settings; vitview runs inside sh so that its exit status lands in a file
start() {
    SESSION="vitview$$-$1"
    shift
    rm -f "$WORK/exit" "$WORK/stderr"
    # The server exits with its last session; on a loaded machine it may still be
    # exiting when the next session asks it ("server exited unexpectedly"): a few tries.
    tries=0
    until $TMUX_CMD new-session -d -s "$SESSION" -x 100 -y 30 \
        "env -u NO_COLOR -u COLORTERM TERM=$TERM_INSIDE LANG=C.UTF-8 LC_ALL=C.UTF-8 $* $VITVIEW --threads 2 \
         $ARGS 2>'$WORK/stderr'; echo EXIT=\$? >'$WORK/exit'"; do
        tries=$((tries + 1))
        [ "$tries" -lt 5 ] || { echo "viewer_tmux: FAIL: tmux could not start a session" >&2; exit 1; }
        sleep 1
    done
}

# check_colours NAME PATTERN: until the screen's colour escapes (capture-pane -e) match
check_colours() {
    pause_from_start
    while paused_less_than 5; do
        $TMUX_CMD capture-pane -p -e -t "$SESSION" >"$WORK/escapes.txt" 2>/dev/null
        grep -Eq -- "$2" "$WORK/escapes.txt" && { PASSED=$((PASSED + 1)); return 0; }
        [ -s "$WORK/exit" ] && break
        pause
    done
    FAILED=$((FAILED + 1))
    LAST_FAILURE=$1
    echo "viewer_tmux: FAILED: $1 (no escape matches '$2'); the colours used were:" >&2
    grep -Eo '[34]8;[0-9;]+m' "$WORK/escapes.txt" | sort | uniq -c | sort -rn | head -5 >&2
}

# quit NAME: press q and expect exit status 0
quit() {
    keys q
    tries=50
    while [ ! -s "$WORK/exit" ] && [ "$tries" -gt 0 ]; do sleep 0.1; tries=$((tries - 1)); done
    if grep -qx "EXIT=0" "$WORK/exit" 2>/dev/null; then
        PASSED=$((PASSED + 1))
    else
        FAILED=$((FAILED + 1))
        LAST_FAILURE="$1 (got $(cat "$WORK/exit" 2>/dev/null || echo nothing))"
        echo "viewer_tmux: FAILED: $LAST_FAILURE" >&2
        cat "$WORK/stderr" >&2 2>/dev/null
    fi
}

# ------------------------------------------------------------ in colour
ARGS="--arch vit-tiny" # random ViT-Ti/16 on the photo, whatever data/models holds
start colour

check "starts paused at the input" "paused at input 1/188" 15
check "input shape with named axes" "shape +\(B=1, C=3, S=224, S=224\)"
check "pipeline tree" "patch_embed"
check "image drawn with half blocks" "▀{20}"
check "the image view: RGB pixels, 14×14 patches" "224×224 pixels · 14×14 patches of 16 px"
keys ']'
check "[ ] on the input names the channel" "channel 1 of 3 \(G\)"
keys '['
check "the status bar says Tab moves the focus" "Tab focus"

keys s
check "step to patches" "paused at patches 2/188"
check "patches shape" "\(B=1, P=196, C·p·p=768\)"

# a breakpoint by name, then continue to it
keys B
keys -l "blocks.0.attn.probs"
keys Enter
check "breakpoint by name" "breakpoint set on blocks.0.attn.probs"
keys c
check "continue stops at the breakpoint" "paused at blocks.0.attn.probs 12/188"
check "attention shape" "\(B=1, H=3, N=197, N=197\)"
check "formula" "softmax\(Q·Kᵀ/√Dh\)"
check "attention heatmap" "queries ↓ keys →"
check "heatmap cells" "▀{30}"
check "breakpoint mark in the tree" "●.* attn.probs"
keys ']'
check "next head" "head 1 of 3"
check "the head's own statistics" "shown: mean 0\.00[0-9]+ std [0-9.e-]+"
keys Z
check "Z: the map at full resolution around the cursor" "zoom \(Z\): queries 0–[0-9]+, keys 0–[0-9]+"
keys Z
# zoomed on a later query, the rows are labelled with the window's own first and
# last query, as the caption says (they read 0 and 196)
for i in $(seq 120); do keys '>'; done
keys Z
check "Z on query 120" "zoom \(Z\): queries [1-9][0-9]*–[0-9]+, "
first=$(sed -n 's/.*zoom (Z): queries \([0-9]*\)–\([0-9]*\),.*/\1/p' "$WORK/screen.txt")
last=$(sed -n 's/.*zoom (Z): queries \([0-9]*\)–\([0-9]*\),.*/\2/p' "$WORK/screen.txt")
check "the zoom's first row is labelled with its query" "│ *$first +▀"
check "the zoom's last row is labelled with its query" "│ *$last +▀"
keys Z
for i in $(seq 120); do keys '<'; done
check "back to the query cls" "query cls < >"
keys m
check "mean over heads" "mean over heads"
keys k k k k k
check "q shows one head, and says the maps are averaged" "head 1 of 3 \(\[ \]; the maps: mean\)"
keys j j j j j
# End with the view focused moves the query to the last token, not the tree to logits
keys Tab End
check "End in the view: the last token" "query token 196 \(13,13\)"
check "... and the tree stays" "paused at blocks.0.attn.probs 12/188 *[^·]*$"
keys Home Tab

# the numeric grid
keys v
check "numbers view, of the mode shown (bug: it showed head 0)" "values · mean over heads · rows 0–"
check "the numbers label the cls key column" "^.*│ +cls +1 +2 +3"
keys v

# history: move back and forth through computed stages
keys k k k k k k
check "a matrix's shown statistics" "shown: min -?[0-9.e-]+ max -?[0-9.e-]+ mean"
keys j j j j j
check "select a computed stage" "viewing blocks.0.attn.scaled"
keys j

# run to the end: the logits as a top-K chart with labels
keys c
check "finished" "finished at logits 188/188" 10
check "top-K chart" "top of 1000 classes"
check "top-K labels" "^.*│ +1 [A-Za-z].* -?[0-9]+\.[0-9]{3} +0\.[0-9]{4}"
check "the logits' entropy" "entropy [0-9.]+ nats"
keys + +
check "+ on the logits: their softmax at a temperature" "softmax\(logit / T\) at T = 2 \(\+ −\) · entropy [0-9.]+ nats"
keys - -
check "back to T = 1" "top of 1000 classes · entropy [0-9.]+ nats · logit"
keys '}' # an RGB model ships one picture: a new pass would show the same photo
check "} with one picture says so (bug: it reran the pass)" "\} \{ have nothing to switch to: the model ships one picture"
keys m
check "m where there are no heads says so" "m combines the heads of an attention map"
keys 3
check "a digit where there are no heads says so" "logits has no heads: \[ \] and 0-9 choose a head"
keys g
check "the input after the pass: the patches are there" "j or \. shows the patches\."
keys G

# resize: smaller, back, and below the minimum
$TMUX_CMD resize-window -t "$SESSION" -x 60 -y 20
check "60x20 redraws" "stage 188/188"
check "60x20 status line" "finished at logits"
check "60x20 keeps the tree" "pre_logits +│"
$TMUX_CMD resize-window -t "$SESSION" -x 100 -y 30
check "back to 100x30" "top of 1000 classes"
$TMUX_CMD resize-window -t "$SESSION" -x 40 -y 10
check "too small says so" "too small"
$TMUX_CMD resize-window -t "$SESSION" -x 100 -y 30
check "and recovers" "top of 1000 classes"

# help lists every key
keys '?'
check "help" "Running the forward pass"
check "help lists ( ), the training's film" "\( \) +the training's film: previous / next snapshot"
keys NPage NPage NPage NPage NPage
check "the help's labels are whole" "PgUp PgDn Home End +\(view focused\)"
# the notes after the key tables: paged to until the last one shows, however
# many keys the tables above them hold
help_page_to "stops by itself at the first NaN or infinity" 4
check "the help explains the tree's marks" "The tree's marks: ▶ how far the pass has run"
check "the help says any key pauses a run" "While a pass runs \(n f c, or after r\), any key pauses it"
check "the help says what becomes of keys typed during a run" "except after / B W e T D,"
check "the help says a pass stops at the first NaN" "stops by itself at the first NaN or infinity"
keys Escape
check "help closes" "top of 1000 classes"

# restart runs a fresh pass
keys r
check "restart" "paused at input 1/188"
check_rows "restart closes the blocks browsing opened" "▾ blocks" 0

# keys typed while the pass runs (one send-keys: they arrive as one burst)
$TMUX_CMD send-keys -t "$SESSION" c "/input" Enter
check "/ typed during a run is kept whole (bug: i n p u t ran as keys)" \
    "paused at [a-z_.0-9]+ [0-9]+/188 · viewing input( |\$)"
$TMUX_CMD send-keys -t "$SESSION" c t t
check "other keys typed during a run are dropped, and said so" \
    "paused; 1 key typed after it dropped \(\? says why\)"
check "... so the tree is still shown (bug: the second t hid it)" "embed +│"

# q quits cleanly with status 0
quit "q exits 0"

# ------------------------------------------- without colour (NO_COLOR set)
ARGS="--arch vit-tiny"
start mono NO_COLOR=1
check "NO_COLOR starts" "paused at input 1/188" 15
keys B
keys -l "blocks.0.attn.probs"
keys Enter
keys c
check "NO_COLOR attention" "paused at blocks.0.attn.probs"
check "ASCII ramp legend" " \.:=\+#%@ "
check "ASCII heatmap" "│cls.[ .:=+*#%@-]{20}"
quit "q exits 0 without colour"

# --------------------------------------- weights with a NaN, and cut short
if [ -x "$VIT" ]; then
    "$VIT" make-weights --arch vit-tiny --depth 2 --classes 10 --seed 3 --out "$WORK/nan.safetensors" \
        >/dev/null || { echo "viewer_tmux: FAIL: $VIT make-weights failed" >&2; exit 1; }
    cp "$WORK/nan.safetensors" "$WORK/cut.safetensors"
    # the first tensor of the data section is cls_token: make its first value a NaN
    header=$(od -An -t u8 -N 8 "$WORK/nan.safetensors" | tr -d ' ')
    printf '\377\377\377\377' |
        dd of="$WORK/nan.safetensors" bs=1 seek=$((8 + header)) conv=notrunc 2>/dev/null
    ARGS="--weights $WORK/nan.safetensors"
    start nan
    check "NaN weights start" "paused at input 1/38" 15
    keys c
    check "stops at the first NaN" "stopped at the first NaN or infinity: tokens \(1 NaN, 0 Inf\)" 10
    check "its statistics count it" "NaN 1  Inf 0"
    # an export never replaces the weights the pass reads (a scratch copy here)
    cp "$WORK/nan.safetensors" "$WORK/nan.before"
    keys e
    keys -l "$WORK/nan.safetensors"
    keys Enter
    check "e refuses to overwrite the weights" "nan\.safetensors: the export is the same"
    if cmp -s "$WORK/nan.safetensors" "$WORK/nan.before"; then PASSED=$((PASSED + 1)); else
        FAILED=$((FAILED + 1)); LAST_FAILURE="the weights changed under an export"
        echo "viewer_tmux: FAILED: $LAST_FAILURE" >&2
    fi
    quit "q exits 0 after a NaN"

    ARGS="--weights $WORK/cut.safetensors"
    start cut
    check "weights to be cut start" "paused at input 1/38" 15
    : >"$WORK/cut.safetensors" # another process truncates the file vitview has mapped
    keys c
    tries=100
    while [ ! -s "$WORK/exit" ] && [ "$tries" -gt 0 ]; do sleep 0.1; tries=$((tries - 1)); done
    if grep -qx "EXIT=1" "$WORK/exit" 2>/dev/null &&
        grep -q "cut.safetensors: the file was truncated or replaced while it was in use" \
            "$WORK/stderr"; then
        PASSED=$((PASSED + 1))
    else
        FAILED=$((FAILED + 1))
        LAST_FAILURE="weights cut short: $(cat "$WORK/exit" 2>/dev/null || echo no exit)"
        echo "viewer_tmux: FAILED: $LAST_FAILURE; stderr:" >&2
        sed 's/^/    | /' "$WORK/stderr" >&2
    fi

    # The training's film: film.film/ beside film.safetensors holds frames of
    # epochs 0, 1 and 2 (random weights of other seeds; epoch 2 a copy of the
    # model) and one of another architecture (epoch 4, one block): ( ) scrub
    # through them on the same picture, the logits changing with the weights,
    # epoch 4 passed over with a message, and back at the end the numbers are
    # the model's as loaded.
    mkdir -p "$WORK/film.film"
    # film_model FILE SEED DEPTH: random weights (biases too: the logits differ plainly)
    film_model() {
        "$VIT" make-weights --arch vit-tiny --depth "$3" --classes 10 --seed "$2" \
            --bias-std 0.5 --out "$WORK/$1" >/dev/null ||
            { echo "viewer_tmux: FAIL: $VIT make-weights failed" >&2; exit 1; }
    }
    film_model film.safetensors 11 2
    film_model film.film/epoch-000.safetensors 21 2
    film_model film.film/epoch-001.safetensors 22 2
    film_model film.film/epoch-004.safetensors 23 1
    cp "$WORK/film.safetensors" "$WORK/film.film/epoch-002.safetensors"
    # logits: the logit and probability columns of the logits view, one line
    logits_now() { screen_text | grep -Eo -- '-?[0-9]+\.[0-9]{3}  [0-9]\.[0-9]{4}' | tr '\n' ' '; }
    # logits: the logits once the screen holds still (two readings 0.1 s apart agree,
    # for up to 3 s): a capture can catch a redraw half done, old rows beside new ones
    logits() {
        l_tries=30
        l_then=$(logits_now)
        while [ "$l_tries" -gt 0 ]; do
            sleep 0.1
            l_now=$(logits_now)
            [ -n "$l_now" ] && [ "$l_now" = "$l_then" ] && break
            l_then=$l_now
            l_tries=$((l_tries - 1))
        done
        printf '%s' "$l_then"
    }
    # same_logits NAME WANT(yes/no) REFERENCE: this screen's logits against another's,
    # looked at until they agree, 15 readings (the status row may be drawn before the
    # logits are, and capture-pane can catch the screen between the two)
    same_logits() {
        tries=15
        pause_from_start
        while :; do
            now=$(logits)
            if { [ "$2" = yes ] && [ "$now" = "$3" ]; } || { [ "$2" = no ] && [ "$now" != "$3" ]; }; then
                break
            fi
            tries=$((tries - 1))
            [ "$tries" -gt 0 ] || break
            pause
        done
        if { [ "$2" = yes ] && [ "$now" = "$3" ]; } || { [ "$2" = no ] && [ "$now" != "$3" ]; }; then
            PASSED=$((PASSED + 1))
        else
            FAILED=$((FAILED + 1)); LAST_FAILURE=$1
            echo "viewer_tmux: FAILED: $1: logits '$now' against '$3'" >&2
        fi
    }
    ARGS="--weights $WORK/film.safetensors"
    start film
    check "a film beside the weights: the status row says where" \
        "paused at input 1/38 · the model as loaded · frame 5/5" 15
    $TMUX_CMD resize-window -t "$SESSION" -x 200 -y 30
    check "... and, where it has room, the title after the model and the picture" \
        "vitview │ ViT .*film\.safetensors .* · chelsea\.jpg .* · the model as loaded · frame 5/5"
    $TMUX_CMD resize-window -t "$SESSION" -x 100 -y 30
    keys c
    check "the film's model runs to the logits" "finished at logits 38/38" 10
    check "its logits shown" "1 class [0-9]"
    loaded=$(logits)
    keys ')'
    check ") at the last place says so" "the end of the film: \( goes back"
    keys '('
    check "( passes over a frame of another architecture, saying so" \
        "epoch-004\.safetensors: another architecture, L=1 \(the model's 2\)" 10
    check "... and stays on the model" "finished at logits 38/38 · the model as loaded · frame 5/5"
    keys '('
    check "( shows epoch 2, frame 3 of 5, at the same stage, the logits" \
        "finished at logits 38/38 · epoch 2 of 4 · frame 3/5" 10
    $TMUX_CMD resize-window -t "$SESSION" -x 200 -y 30
    check "... the title row says so too, where it has room" "chelsea\.jpg .*epoch 2 of 4 · frame 3/5"
    $TMUX_CMD resize-window -t "$SESSION" -x 100 -y 30
    same_logits "epoch 2 (a copy of the model) has the model's logits" yes "$loaded"
    keys '('
    check "( shows epoch 1, frame 2 of 5, the logits recomputed" \
        "finished at logits 38/38 · epoch 1 of 4 · frame 2/5" 10
    same_logits "epoch 1's weights give other logits" no "$loaded"
    epoch1=$(logits)
    keys '('
    check "( shows epoch 0, frame 1 of 5, the logits recomputed" \
        "finished at logits 38/38 · epoch 0 of 4 · frame 1/5" 10
    same_logits "epoch 0's logits are not epoch 1's" no "$epoch1"
    keys '('
    check "( at the first frame says so" "the start of the film: \) goes on"
    keys ')'
    check ") goes forward again, the logits recomputed" \
        "finished at logits 38/38 · epoch 1 of 4 · frame 2/5" 10
    same_logits ") shows epoch 1's logits again" yes "$epoch1"
    keys ')' ')'
    check ") ) back to the model as loaded, over epoch 4, the logits recomputed" \
        "finished at logits 38/38 · the model as loaded · frame 5/5" 10
    same_logits "the model as loaded: its own logits again" yes "$loaded"
    quit "q exits 0 after the film"

    # without a film: ( ) say so, and how to make one
    ARGS="--weights $WORK/film.film/epoch-001.safetensors"
    start no-film
    check "weights without a film start" "paused at input 1/38" 15
    keys ')'
    check ") without a film says so, and how to make one" \
        "no film beside the weights \(vit train writes one: X\.film/\)"
    quit "q exits 0 without a film"

    # --film on a folder without frames: bad input, said before the screen is taken
    mkdir -p "$WORK/empty.film"
    rc=0
    "$VITVIEW" --weights "$WORK/film.safetensors" --film "$WORK/empty.film" </dev/null \
        >/dev/null 2>"$WORK/film.err" || rc=$?
    if [ "$rc" -eq 1 ] && grep -q "empty\.film: no frames in the film's folder" "$WORK/film.err"; then
        PASSED=$((PASSED + 1))
    else
        FAILED=$((FAILED + 1)); LAST_FAILURE="--film on an empty folder (exit $rc)"
        echo "viewer_tmux: FAILED: $LAST_FAILURE; stderr:" >&2
        sed 's/^/    | /' "$WORK/film.err" >&2
    fi
    ARGS=""
fi

# ------------------------------------------- the default: the trained model
# With no arguments vitview opens data/models/vit-fashion.safetensors on
# data/images/fashion-mnist/0000-ankle-boot.png. Before that model exists, a
# data folder of the script's own holds a small one trained here (two blocks,
# 256 images: seconds), beside links to the real images and labels.
DATA=$(cd "$(dirname "$0")/.." && pwd)/data
DEMO=""
DEMO_WHAT="not run: no model and no vit to train one"
if [ -r "$DATA/models/vit-fashion.safetensors" ]; then
    DEMO="VIT_DATA_DIR=$DATA"
    DEMO_MODEL="$DATA/models/vit-fashion.safetensors"
    DEMO_WHAT="data/models/vit-fashion.safetensors"
elif [ -x "$VIT" ]; then
    mkdir -p "$WORK/data/models"
    ln -s "$DATA/images" "$WORK/data/images"
    ln -s "$DATA/labels" "$WORK/data/labels"
    if OMP_NUM_THREADS=1 "$VIT" train --epochs 1 --warmup 0 --limit 256 --depth 2 --test 0 \
        --threads 1 --out "$WORK/data/models/vit-fashion.safetensors" >"$WORK/train.log" 2>&1; then
        DEMO="VIT_DATA_DIR=$WORK/data"
        DEMO_MODEL="$WORK/data/models/vit-fashion.safetensors"
        DEMO_WHAT="a small model trained here (no data/models/vit-fashion.safetensors yet)"
    else
        FAILED=$((FAILED + 1))
        LAST_FAILURE="vit train for the default model"
        echo "viewer_tmux: FAILED: $VIT train could not make a model:" >&2
        sed 's/^/    | /' "$WORK/train.log" >&2
    fi
fi
CLASSES="(T-shirt/top|Trouser|Pullover|Dress|Coat|Sandal|Shirt|Sneaker|Bag|Ankle boot)"

# check_head_importance: at 80×24, I shows for the ankle boot the numbers `vit heads`
# prints for it, row by row (a cell is " -0.0090 ", or "[-0.2620]" under the cursor),
# the cursor on the head it names most important; Enter goes to that head's map.
check_head_importance() {
    boot="$DATA/images/fashion-mnist/0000-ankle-boot.png"
    if ! "$VIT" heads --weights "$DEMO_MODEL" "$boot" >"$WORK/heads.txt" 2>&1; then
        FAILED=$((FAILED + 1))
        LAST_FAILURE="vit heads on the default model"
        sed 's/^/    | /' "$WORK/heads.txt" >&2
        return
    fi
    awk '/^  layer /{ s = "│layer " $2; for (i = 3; i <= NF; i++) { v = $i
             gsub(/[.+]/, "\\\\&", v); s = s "[][ ]+" v } print s }' "$WORK/heads.txt" \
        >"$WORK/heads_rows.txt"
    most=$(sed -n 's/^  most important: \(layer [0-9]*, head [0-9]*\): \([0-9.]*\) → \([0-9.]*\) (\([-+0-9.]*\))$/\1 off: \2 → \3 (\4)/p' \
        "$WORK/heads.txt" | sed 's/[.+()]/\\&/g')
    $TMUX_CMD resize-window -t "$SESSION" -x 80 -y 24
    keys I
    check "I: head importance for the picture" \
        "head importance: Δ p\($CLASSES\) with one head off" 20
    check_rows "I: a row per layer" "│layer [0-9]+ " "$(wc -l <"$WORK/heads_rows.txt")"
    while read -r row; do
        check "I: the numbers vit heads prints ($(printf "%s" "$row" | cut -c4-10))" "$row"
    done <"$WORK/heads_rows.txt"
    check "I: the cursor on the most important head" "│$most · the m"
    layer=$(printf "%s\n" "$most" | sed 's/^layer \([0-9]*\).*/\1/')
    head=$(printf "%s\n" "$most" | sed 's/^layer [0-9]*, head \([0-9]*\).*/\1/')
    keys Enter
    check "Enter: that layer's attention" "blocks\.$layer\.attn\.probs, head $head \(I: back"
    check "Enter: that head shown" "head $head of [0-9]+ \(\[ \] m\)"
    $TMUX_CMD resize-window -t "$SESSION" -x 100 -y 30
    keys / ; keys -l "blocks.0.attn.probs" ; keys Enter 0 # where the checks after it expect
    check "back to blocks.0's head 0" "head 0 of [0-9]+ \(\[ \] m\)"
}
# check_patching: on blocks.0's stage, C patches the ankle boot (A) with the next
# shipped picture (B, the pullover) and shows the numbers `vit patch` prints for
# block 0 and, on blocks.1's stage, for block 1, whose [cls] flips the answer.
check_patching() {
    boot="$DATA/images/fashion-mnist/0000-ankle-boot.png"
    pullover="$DATA/images/fashion-mnist/0001-pullover.png"
    if ! "$VIT" patch --weights "$DEMO_MODEL" "$boot" "$pullover" >"$WORK/patch.txt" 2>&1; then
        FAILED=$((FAILED + 1))
        LAST_FAILURE="vit patch on the default model"
        sed 's/^/    | /' "$WORK/patch.txt" >&2
        return
    fi
    # "  0      token 23 (3,1)    0.5732      -0.3270  -" → "largest change: patch 3,1 0.5732 (-0.3270)"
    expect_row() {
        awk -v l="$1" '$1 == l && $2 == "token" { where = $4; gsub(/[()]/, "", where)
            if (where == "[cls]") w = "\\[cls\\]"; else w = "patch " where
            v = $5; c = $6; gsub(/[.+]/, "\\\\&", v); gsub(/[.+]/, "\\\\&", c)
            print "largest change: " w " " v " \\(" c "\\)" }' "$WORK/patch.txt"
    }
    a_prob=$(sed -n 's/^A .*: .*, p = \([0-9.]*\)$/\1/p' "$WORK/patch.txt" | sed 's/\./\\./')
    keys C
    check "C: patching with the next shipped picture" \
        "patching, block 0: p\(Ankle boot\) in A, $a_prob" 20
    check "C: B is the pullover" "B 0001-pullover\.png \(Pullover\) · \[cls\] 0\.[0-9]{4}"
    check "C: block 0's largest change, as vit patch prints it" "$(expect_row 0)"
    check "C: no flip in block 0" "flips: 0"
    keys / ; keys -l "blocks.1.out" ; keys Enter
    check "C: block 1's row on its stage" "$(expect_row 1)"
    check "C: [cls] flips it there" "\[cls\] 0\.[0-9]{4} x flips"
    keys Y
    check "Y closes patching for the lens" "logit lens \(Y: the stage's own view\)"
    keys Y
    check_rows "patching stays closed" "patching: p\(" 0
    keys / ; keys -l "blocks.0.attn.probs" ; keys Enter # where the checks after it expect
    check "back to blocks.0.attn.probs" "viewing blocks\.0\.attn\.probs"
}
if [ -n "$DEMO" ]; then
    ARGS=""
    start fashion "$DEMO"
    check "no arguments: the Fashion-MNIST model" "paused at input 1/[0-9]+" 15
    check "its title names the model and the test image" \
        "vit-fashion · 0000-ankle-boot\.png 28×28 \(fashion-mnist preprocessing\)"
    check "one grey channel of 28×28" "shape +\(B=1, C=1, S=28, S=28\)"
    check "the image view: grey pixels, 7×7 patches" "28×28 grey pixels · 7×7 patches of 4 px"
    # at 100×30 the image is drawn 1:1, a pixel per half block: 28 columns × 14 rows
    check_rows "a 28×28 image at 100x30" "│▀{28}( |\$)" 14
    $TMUX_CMD resize-window -t "$SESSION" -x 80 -y 24
    check "80x24 redraws" "stage 1/[0-9]+"
    check_rows "a 28×28 image at 80x24" "│▀{28}( |\$)" 14
    $TMUX_CMD resize-window -t "$SESSION" -x 160 -y 50
    check "160x50 redraws" "stage 1/[0-9]+"
    check_rows "the image twice as large at 160x50" "│▀{56}( |\$)" 28
    $TMUX_CMD resize-window -t "$SESSION" -x 100 -y 30
    keys s
    check "grey patches" "\(B=1, P=49, C·p·p=16\)"
    keys s
    check "patch_embed names the model's patch side (bug: 16×16 on any model)" \
        "each 4×4 patch projected to D numbers"
    keys B
    keys -l "blocks.0.attn.probs"
    keys Enter
    keys c
    check "attention over 50 tokens" "\(B=1, H=4, N=50, N=50\)"
    # a / that misses, then one that finds: the miss's error goes (bug: it stayed in the title)
    keys / ; keys -l "blocks.0.nosuch" ; keys Enter
    check "/ of an unknown stage says so" "no stage is called 'blocks\.0\.nosuch'"
    keys / ; keys -l "blocks.0.attn.probs" ; keys Enter
    check_rows "a / that finds its stage clears the old error" "no stage is called" 0
    check "the query's attention over the image" "most to token [0-9]+ \([0-6],[0-6]\)"
    $TMUX_CMD resize-window -t "$SESSION" -x 80 -y 24
    check "80x24: the query's numbers are whole" "most to token [0-9]+ \([0-6],[0-6]\) *$"
    check "80x24: and its value" "│ +.* = 0\.[0-9]+ *$"
    $TMUX_CMD resize-window -t "$SESSION" -x 100 -y 30
    # what did it learn: every head at once, and the rollout
    keys a
    check "every head's [cls] row, one scale" "every head · query cls < > · one scale, 0 to"
    check "each head labelled with its peak" "h3 max [0-9.e-]+"
    keys a
    check "the rollout through this block" "rollout, blocks 0–0 · heads' mean"
    check "what the rollout is" "A_l = rownorm\(mean of heads \+ I\)"
    check "one block's rollout is J = A_0 (bug: A_0 ··· A_0)" "J = A_0: how much of token"
    check "a leads from the rollout to the softmax (bug: 'a: the map')" "· a: softmax"
    keys '>'
    check "a patch's share from cls is not 'itself'" "from cls [0-9.e-]+, patches"
    keys '<'
    check "cls's own share is" "from cls itself [0-9.e-]+, patches"
    # the softmax, live: the query's row through scores, scaled, probs, and at a temperature
    keys a
    check "the softmax view" "softmax of query cls, head 0 \(\[ \] < >\) · T = 1"
    check "at T = 1 it is the recorded row" "at T = 1 the live row is the recorded probs, bit for bit"
    keys + +
    check "a higher temperature" "T = 2 \(\+ -\)"
    check "what T does" "T → 0: all on the largest score · T → ∞: uniform"
    check "its entropy" "entropy [0-9.]+ nats · e\^H = [0-9.]+ of 50 keys"
    check "where it peaks" "max [0-9.]+ on token [0-9]+ \([0-6],[0-6]\)"
    keys - -
    check "back to T = 1" "at T = 1 the live row is the recorded probs"
    keys a
    check "every layer and head for the query, only the layers computed so far" \
        "every layer × head · 1 of 6 layers computed · query cls < >"
    # at 80×24 a layer has two rows: each 7×7 grid is pooled to 4×4 pixels, the
    # same along both axes (it was squashed into 7 wide by 4 high, said "1×1")
    $TMUX_CMD resize-window -t "$SESSION" -x 80 -y 24
    check "the tiles keep the grid square and say how it is pooled" "cell ≈ mean of 2×2 patches"
    $TMUX_CMD resize-window -t "$SESSION" -x 100 -y 30
    keys a m m
    check "back to the map" "max over heads \(\[ \] m\) · queries ↓ keys →"
    keys m
    keys L L
    check "the key cursor reads out one cell" "q cls → k token 2 \(0,1\) = [0-9.e-]+"
    $TMUX_CMD resize-window -t "$SESSION" -x 160 -y 40 # the captions whole
    check "the map says how its cells are averaged" "cell ≈ mean of 1×1 · scale its range \(A\)"
    keys A
    check "A: 0 to the largest value" "scale 0 to its max \(A\)"
    keys A
    check "A: 0 to 1, uniform ticked" "scale 0 to 1 \(A\)"
    check "the uniform level said under the legend" "0 .{8} 1  1/N 0\.02"
    keys A o
    $TMUX_CMD resize-window -t "$SESSION" -x 100 -y 30
    check "o: how much the overlay covers the image" "overlay: 90% colour, 10% image"
    keys o o o
    keys t
    check "t hides the tree" "the tree is hidden \(t shows it\)"
    check_rows "no tree: the view starts at column 0" "^ *norm1 " 0
    keys t
    # what-if: head 0 off, then its whole block; the pass reruns to the logits
    keys x
    check "a head off: the outcome, first" \
        "what-if: $CLASSES [01]\.[0-9]{4} → [01]\.[0-9]{4}.* head 0 of blocks\.0 off" 10
    check "the rerun went to the logits, the view stayed" \
        "finished at logits [0-9]+/[0-9]+ · viewing blocks\.0\.attn\.probs"
    check "the first change is the head's probabilities" \
        "what-if  max \|Δ\| [0-9.e-]+ here · first change blocks\.0\.attn\.probs"
    check "changed stages are marked" "Δ +attn\.context"
    check "the head is marked off" "head 0 of 4 \(off\)"
    keys X
    check "the whole block off: every probability 0" "min 0  max 0  mean 0  std 0  NaN 0" 10
    keys u
    check "undo" "what-ifs undone: the unmodified pass" 10
    check_rows "undo: nothing marked" "Δ" 0
    # the Linear layers in bf16, then int8, then fp32 again: the first change is the first
    # Linear's output, blocks.0.attn.q
    keys Q
    check "Q: bf16, the outcome first" \
        "what-if: $CLASSES [01]\.[0-9]{4} → [01]\.[0-9]{4} · Linear layers in bf16" 10
    check "bf16: the first change is the first Linear's output" \
        "what-if  max \|Δ\| [0-9.e-]+ here · first change blocks\.0\.attn\.q"
    keys Q
    check "Q again: int8" "what-if: $CLASSES [01]\.[0-9]{4} → [01]\.[0-9]{4} · Linear layers in int8" 10
    keys Q
    check "Q a third time: fp32, nothing left to compare" "finished at logits" 10
    check_rows "fp32 again: nothing marked" "Δ" 0
    # the query onto the boot: arrows in the view move it over the 7×7 grid (from
    # cls, the first move enters the grid at token 1, row 0, column 0)
    keys Tab Down Down Down Down Down Down Right Right Right Right Right Right Right Tab
    check "a patch as the query, the arrows stopping at the grid's edge" "query token 42 \(5,6\)"
    keys z
    check "a masked patch changes the input first" "what-if  .*here · first change input" 10
    check "the masked patch is named" "token 42 \(5,6\) masked"
    keys u
    check "undo the mask" "what-ifs undone" 10
    # painting: P on the input, the cursor to a pixel of the boot, space; the pass
    # reruns and the title gives the new probability after the stroke
    keys g P
    check "P paints the input" "painting \(P\): pixel \(0, 0\) · space paints · 0 painted"
    keys Down Down Down Down Down Down Down Down Down Down Down Down Down Down Down Down Down \
        Right Right Right Right Right Right Right Right Right Right Right Right Right Right
    check "the cursor moves pixel by pixel" "painting \(P\): pixel \(17, 14\)"
    keys Space
    check "a stroke changes the prediction line" \
        "what-if: Ankle boot 0\.9002 → 0\.[0-9]{4} · 1 pixel painted" 10
    check "its count in the view" "painting \(P\): pixel \(17, 14\) · space paints · 1 painted"
    # a click (an xterm mouse report, X10 form: ESC [ M, then button, column and
    # row, each + 32, counted from 1) 8 cells below the picture's first row (the
    # one under the caption) and 14 columns right of its left edge: pixel (16, 14)
    line=$(grep -n "painting (P): pixel" "$WORK/screen.txt" | head -n 1 | cut -d: -f1)
    left=$(sed -n "${line}p" "$WORK/screen.txt" | sed 's/│.*//' | wc -m) # the columns before │, and │
    keys -l "$(printf "\033[M \\$(printf %o $((32 + left + 14 + 1)))\\$(printf %o $((32 + line + 9)))")"
    check "a click paints the pixel under it" "painting \(P\): pixel \(16, 14\) · space paints · 2 painted"
    check "its stroke in the title" "what-if: Ankle boot 0\.9002 → 0\.[0-9]{4} · 2 pixels painted" 10
    keys P u
    check "undo the strokes" "what-ifs undone" 10
    keys '/'
    keys -l "blocks.0.attn.probs"
    keys Enter
    check "back to the attention stage" "viewing blocks\.0\.attn\.probs"
    check_head_importance
    check_patching
    # other pictures: the shipped ones in order, and a test image by number
    keys '}'
    check "the next shipped picture, which of how many" "picture 2 of 10: 0001-pullover\.png" 10
    check "its title" "vit-fashion · 0001-pullove"
    check "the same stage on the new picture" "viewing blocks\.0\.attn\.probs"
    keys '{' '{'
    check "back past the first: the last" "picture 10 of 10: 0019-t-shirt-top\.png" 10
    if [ -r /usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz ]; then
        keys T
        check "the test image prompt" "Fashion-MNIST test image \(0-9999\): _"
        keys -l "123"
        keys Enter
        check "a test image by number, with its label" "test image 123: Ankle boot" 10
        keys T
        keys -l "10000"
        keys Enter
        check "a test image out of range" "test image 10000: Fashion-MNIST's test images are 0 to 9999"
    fi
    keys G
    check "the Fashion model finishes" "finished at logits [0-9]+/[0-9]+" 10
    check "ten classes" "top of 10 classes"
    $TMUX_CMD resize-window -t "$SESSION" -x 160 -y 40 # the captions whole
    check "the bars are probabilities, uniform marked" "bar: 0 to 1, │ = 1/10"
    $TMUX_CMD resize-window -t "$SESSION" -x 100 -y 30
    check "a class name from the weights' metadata" \
        "│ +1 $CLASSES +-?[0-9]+\.[0-9]{3} +[01]\.[0-9]{4}"
    check_rows "every class named" "│ +[0-9]+ $CLASSES +-?[0-9]" 10
    # the backward pass, stage by stage, from the predicted class's logit to the pixels
    keys d
    check "the backward starts at the logits' gradient" "backward: paused at grad\.logits 1/[0-9]+" 10
    check "of the predicted class's logit" "∂ logit [0-9] \($CLASSES\) / ∂ logits"
    keys s
    check "one step back" "backward: paused at grad\.pre_logits 2/"
    keys n
    check "the next block back is the last one" "backward: paused at grad\.blocks\.[0-9]+\.norm1"
    keys c
    check "the backward reaches the pixels" "backward: finished at grad\.input" 10
    check "the saliency map" "saliency: \|∂ logit\($CLASSES\) / ∂ pixel\|"
    check "its busiest patch" "most: token [0-9]+ \([0-6],[0-6]\), [0-9.]+% of the total"
    keys d
    check "d: the forward again" "the forward pass again \(d: the backward\)"
    # a class of one's choice, stopped at a gradient's breakpoint set from the forward
    keys B
    keys -l "grad.blocks.0.attn.probs"
    keys Enter
    check "a breakpoint on a gradient" "breakpoint set on grad\.blocks\.0\.attn\.probs"
    keys D
    check "the class prompt" "backward of the logit of class \(0-9\): _"
    keys -l "7"
    keys Enter
    check "the backward of class 7" "∂ logit 7 \(Sneaker\) / ∂ logits" 10
    keys c
    check "stops at the gradient's breakpoint" "backward: paused at grad\.blocks\.0\.attn\.probs" 10
    keys a
    check "the gradient-weighted rollout" "gradient-weighted rollout, blocks 0–[0-9]+ · query"
    keys d
    check "back to the forward" "the forward pass again" 10
    # debugger basics: go to a stage by name, compare two stages, the cell cursor,
    # Tab completion, the breakpoints listed, export, a watch
    keys /
    keys -l "embed"
    keys Enter
    check "/ goes to a stage" "viewing embed"
    keys =
    check "= makes it the reference" "minus embed"
    keys /
    keys -l "blocks.0.resid"
    keys Tab
    check "Tab completes a unique name" "go to stage \(Tab completes\): blocks\.0\.resid1_"
    keys Enter
    check "a stage minus the reference" "blocks\.0\.resid1 − embed \(= off\)"
    $TMUX_CMD resize-window -t "$SESSION" -x 160 -y 40 # the captions whole
    keys '#'
    check "# holds the colour scale" "every matrix now on blocks\.0\.resid1's scale"
    check "and the caption says so" "scale held \(#\)"
    keys '#'
    $TMUX_CMD resize-window -t "$SESSION" -x 100 -y 30
    keys /
    keys -l "blocks.0.attn.context"
    keys Enter
    check "the heads' bands of attn.context are labelled" "│h0 +│h1 +│h2 +│h3"
    keys /
    keys -l "blocks.0.resid1"
    keys Enter
    keys Tab Down Down Right
    check "the cell cursor's readout" "token 2 \(0,1\) · column 1 = -?[0-9.e-]+ · arrows move it"
    check "the token's patch lit on a thumbnail" "its patch"
    keys Z
    check "Z zooms a matrix around the cursor" "zoom \(Z\) from row [0-9]+, column [0-9]+"
    check "the cursor still reads out" "token 2 \(0,1\) · column 1 = "
    keys Z
    keys Tab
    keys /
    keys -l "blocks.0.attn.sc"
    keys Tab
    check "Tab lists what a prefix could be" "blocks\.0\.attn\.scaled  blocks\.0\.attn\.scores"
    keys Escape
    keys i
    check "i lists the breakpoints" "2 breakpoints: blocks\.0\.attn\.probs, grad\.blocks\.0\.attn\.probs"
    keys e
    keys -l "$WORK/resid1.npy"
    keys Enter
    check "e exports the tensor shown" "wrote .*resid1\.npy \(blocks\.0\.resid1"
    if [ "$(wc -c <"$WORK/resid1.npy" 2>/dev/null)" = "12928" ]; then # 128-byte header + 50×64 floats
        PASSED=$((PASSED + 1))
    else
        FAILED=$((FAILED + 1)); LAST_FAILURE="the exported .npy has the wrong size"
        echo "viewer_tmux: FAILED: $LAST_FAILURE" >&2
    fi
    # a name longer than the 255 characters the line once held is written whole,
    # not cut short into another file (a folder of 150 characters, a file of 164)
    long_dir=$WORK/$(printf '%0150d' 0)
    long_name=$long_dir/$(printf '%0160d' 1).npy
    mkdir -p "$long_dir"
    keys e
    keys -l "$long_name"
    keys Enter
    check "e exports under a name of over 300 characters" "wrote …0+1"
    if [ "$(wc -c <"$long_name" 2>/dev/null)" = "12928" ] &&
        [ "$(find "$long_dir" -type f | wc -l)" -eq 1 ]; then
        PASSED=$((PASSED + 1))
    else
        FAILED=$((FAILED + 1)); LAST_FAILURE="a long export name was not written whole"
        echo "viewer_tmux: FAILED: $LAST_FAILURE" >&2
    fi
    keys B
    keys -l "-"
    keys Enter
    check "B - clears every breakpoint" "2 breakpoints cleared"
    keys W
    keys -l "2"
    keys Enter
    check "a watch" "the pass stops at a stage whose \|value\| exceeds 2"
    keys r
    check "restart with the watch" "paused at input 1/" 10
    keys c
    check "the watch stops the pass" "stopped: [a-z_.0-9]+ has \|value\| up to [0-9.]+, past the watch 2" 10
    quit "q exits 0 on the Fashion model"

    # the logit lens (Y) at 80×24: every row `vit lens` prints for the picture,
    # block, top class and the two probabilities, is on the screen
    lens_data=${DEMO#VIT_DATA_DIR=}
    if "$VIT" lens --weights "$lens_data/models/vit-fashion.safetensors" \
        "$lens_data/images/fashion-mnist/0000-ankle-boot.png" >"$WORK/lens.txt" 2>&1; then
        PASSED=$((PASSED + 1))
    else
        FAILED=$((FAILED + 1)); LAST_FAILURE="vit lens on the default model"
        echo "viewer_tmux: FAILED: $LAST_FAILURE:" >&2
        sed 's/^/    | /' "$WORK/lens.txt" >&2
    fi
    start lens "$DEMO"
    $TMUX_CMD resize-window -t "$SESSION" -x 80 -y 24
    check "lens: paused at the input" "paused at input 1/[0-9]+" 15
    # play (S): the pass steps by itself, a stage every 500 ms, then 125; S stops.
    # (Checked as any stage past the first, then any of a block's: one stage is
    # on the screen for 500 or 125 ms only, and a check that waits looks at the
    # screen a few times a second, pause())
    keys S
    check "S plays" "playing: a stage every 500 ms \(S: faster\)"
    check "it steps by itself" "paused at [a-z0-9_.]+ ([2-9]|[1-9][0-9])/[0-9]+" 5
    keys S
    check "S again: faster" "playing: a stage every 125 ms \(S: stop\)"
    check "it goes on" "paused at blocks\.[0-9]+\.[a-z0-9_.]+ [0-9]+/[0-9]+" 5
    keys S
    check "S a third time stops" "play stopped"
    keys r
    check "lens: restarted at the input" "paused at input 1/[0-9]+" 10
    keys Y
    check "lens: Y outside a block says where it works" "Y shows the logit lens on a block's stage"
    keys c
    check "lens: the pass finishes" "finished at logits [0-9]+/[0-9]+" 10
    keys / ; keys -l "blocks.0.out" ; keys Enter
    keys Y
    check "lens: Y shows the strip" "logit lens: \[cls\] after each block → norm → head"
    # "  BLOCK  NAME  P  P_ANSWER" rows as a regex each: the block, the name
    # (its characters escaped), the two numbers; the first row is the one selected
    awk 'f && NF >= 4 && $NF ~ /^[01]\.[0-9]+$/ {
             name = ""; for (i = 2; i <= NF - 2; i++) name = name (i > 2 ? " " : "") $i
             print $1 "\t" name "\t" $(NF - 1) "\t" $NF }
         /^  block / { f = 1 }' "$WORK/lens.txt" >"$WORK/lens.rows"
    check_rows "lens: as many rows as vit lens prints" "│(▶ |  )(embed|[0-9]+) " \
        "$(wc -l <"$WORK/lens.rows")"
    while IFS="$(printf '\t')" read -r block name p p_answer; do
        name_re=$(printf '%s' "$name" | sed 's/[][\.*^$(){}+?|/]/\\&/g')
        check "lens: block $block as vit lens prints it ($name $p $p_answer)" \
            "│(▶ |  )$block +$name_re +$p $p_answer( |\$)"
    done <"$WORK/lens.rows"
    answer=$(sed -n 's/^\(.*\) is on top from block \([0-9]*\) on\.$/\1, on top from block \2 on/p' \
        "$WORK/lens.txt")
    [ -n "$answer" ] || answer=$(sed -n 's/^\(.*\) is on top at every depth.*/\1, on top at every depth/p' \
        "$WORK/lens.txt")
    check "lens: the answer settles where vit lens says ($answer)" "ans\. = $answer"
    keys Y
    check "lens: Y again, the stage's own view" "the stage's own view \(Y: the logit lens\)"
    quit "q exits 0 after the logit lens"

    # head fingerprints (F) at 80×24: the rows `vit fingerprints` prints for the
    # picture, as many as the pane holds, in layer order, then the first rows
    # of each sort S cycles to, as `vit fingerprints --sort` prints them
    fp_model="$lens_data/models/vit-fashion.safetensors"
    fp_image="$lens_data/images/fashion-mnist/0000-ankle-boot.png"
    for sort in layer distance entropy cls; do
        sort_flag=; [ "$sort" = layer ] || sort_flag="--sort $sort"
        # shellcheck disable=SC2086 # sort_flag is two words or none
        if "$VIT" fingerprints --weights "$fp_model" $sort_flag "$fp_image" \
            >"$WORK/fp-$sort.txt" 2>&1; then PASSED=$((PASSED + 1))
        else
            FAILED=$((FAILED + 1)); LAST_FAILURE="vit fingerprints $sort_flag on the default model"
            echo "viewer_tmux: FAILED: $LAST_FAILURE:" >&2
            sed 's/^/    | /' "$WORK/fp-$sort.txt" >&2
        fi
    done
    start fingerprints "$DEMO"
    $TMUX_CMD resize-window -t "$SESSION" -x 80 -y 24
    check "fingerprints: paused at the input" "paused at input 1/[0-9]+" 15
    keys F
    check "fingerprints: F before any block says how far the pass is" \
        "0 of 6 layers computed: c runs on"
    keys c
    check "fingerprints: the pass finishes" "finished at logits [0-9]+/[0-9]+" 10
    check "fingerprints: F shows the table" "head fingerprints \(patch queries, \[cls\] left out\)"
    check "fingerprints: entropy of uniform attention, as vit fingerprints says" \
        "entropy ln 50 = 3\.9120 uniform"
    # "  LAYER  HEAD  DISTANCE  ENTROPY  CLS" rows; the pane holds 12 of them at 80×24
    for sort in layer distance entropy cls; do
        [ "$sort" = layer ] || keys S
        [ "$sort" = layer ] || check "fingerprints: S sorts by $sort" "fingerprints by $sort"
        awk 'f && NF == 5 { print } /^  layer / { f = 1 }' "$WORK/fp-$sort.txt" | \
            head -n "$([ "$sort" = layer ] && echo 12 || echo 3)" >"$WORK/fp-$sort.rows"
        while read -r l h d e c; do
            check "fingerprints ($sort): layer $l head $h as vit fingerprints prints it ($d $e $c)" \
                "│$l +$h +$d +$e +$c( |\$)"
        done <"$WORK/fp-$sort.rows"
    done
    keys F
    check "fingerprints: F again, the stage's own view" \
        "the stage's own view \(F: head fingerprints\)"
    quit "q exits 0 after the fingerprints"

    # position similarity (E on embed) at 80×24: every row `vit positions`
    # prints for the centre patch, then for the top right corner after the
    # arrows move there; the viewer shows each cosine as %7.4f, cells abutting
    start positions "$DEMO"
    $TMUX_CMD resize-window -t "$SESSION" -x 80 -y 24
    check "positions: paused at the input" "paused at input 1/[0-9]+" 15
    keys E
    check "positions: E off embed says where it works" "E shows position similarity on the embed stage"
    keys / ; keys -l "embed" ; keys Enter
    keys c
    check "positions: the pass finishes" "finished at logits [0-9]+/[0-9]+" 10
    keys / ; keys -l "embed" ; keys Enter
    keys E
    for at in 3,3 0,6; do
        pr=${at%,*} pc=${at#*,}
        if [ "$pr" = 0 ]; then keys Up Up Up Right Right Right; fi
        if "$VIT" positions --weights "$fp_model" --row "$pr" --col "$pc" >"$WORK/pos.txt" 2>&1
        then PASSED=$((PASSED + 1))
        else
            FAILED=$((FAILED + 1)); LAST_FAILURE="vit positions --row $pr --col $pc"
            echo "viewer_tmux: FAILED: $LAST_FAILURE:" >&2
            sed 's/^/    | /' "$WORK/pos.txt" >&2
        fi
        check "positions: the patch ($pr, $pc) in the heading" \
            "position similarity: patch \($pr, $pc\) against each"
        awk 'f && NF == 8 { row = $1 "  "; for (i = 2; i <= 8; i++) row = row $i; print row }
             /column →/ { getline; f = 1 }' "$WORK/pos.txt" | tr '+' ' ' >"$WORK/pos.rows"
        check_rows "positions ($pr, $pc): as many grid rows as vit positions prints" \
            "│[0-9]+ +-?[01]\.[0-9]{4}" "$(wc -l <"$WORK/pos.rows")"
        while read -r row; do
            re=$(printf '%s' "$row" | sed 's/\./\\./g')
            check "positions ($pr, $pc): row ${row%% *} as vit positions prints it" "│$re"
        done <"$WORK/pos.rows"
    done
    keys E
    check "positions: E again, the stage's own view" \
        "the stage's own view \(E: position similarity\)"
    quit "q exits 0 after position similarity"

    # occlusion beside attention (O) at 80×24: the probability and every map's
    # deletion numbers `vit occlusion` prints for the picture, one screen row per k
    if "$VIT" occlusion --weights "$lens_data/models/vit-fashion.safetensors" \
        "$lens_data/images/fashion-mnist/0000-ankle-boot.png" >"$WORK/occlusion.txt" 2>&1; then
        PASSED=$((PASSED + 1))
    else
        FAILED=$((FAILED + 1)); LAST_FAILURE="vit occlusion on the default model"
        echo "viewer_tmux: FAILED: $LAST_FAILURE:" >&2
        sed 's/^/    | /' "$WORK/occlusion.txt" >&2
    fi
    start occlusion "$DEMO"
    $TMUX_CMD resize-window -t "$SESSION" -x 80 -y 24
    check "occlusion: paused at the input" "paused at input 1/[0-9]+" 15
    keys c
    check "occlusion: the pass finishes" "finished at logits [0-9]+/[0-9]+" 10
    keys O
    check "occlusion: O on the logits says where it works" \
        "O works on the input or an attention stage"
    keys / ; keys -l "blocks.5.attn.probs" ; keys Enter
    keys O
    p_full=$(sed -n 's/^Ankle boot, p = \([0-9.]*\) with nothing black\.$/\1/p' \
        "$WORK/occlusion.txt")
    check "occlusion: O shows the maps, p = $p_full as vit occlusion prints it" \
        "occlusion beside attention: p\(Ankle boot\) = $p_full" 20
    # per k, the four maps' numbers in the table's order (occlusion, last layer, rollout, gradient)
    awk 'f && NF >= 4 { for (i = 1; i <= 3; i++) v[i] = v[i] " " $(NF - 3 + i) }
         /^  map / { f = 1 }
         END { for (i = 1; i <= 3; i++) print substr(v[i], 2) }' "$WORK/occlusion.txt" \
        >"$WORK/occlusion.cols"
    ks=$(sed -n 's/^  map //p' "$WORK/occlusion.txt" | grep -o 'k = [0-9]*' | sed 's/k = //')
    for k in $ks; do
        read -r a b c d || break
        check "occlusion: k = $k as vit occlusion prints it ($a $b $c $d)" \
            " ?$k: $a +$k: $b +$k: $c +$k: $d( |\$)"
    done <"$WORK/occlusion.cols"
    keys O
    check "occlusion: O again, the stage's own view" \
        "the stage's own view \(O: occlusion\)"
    quit "q exits 0 after occlusion"
    # the neuron view (N) at 80×24: blocks.2, head 1, query token 3, key token 2
    # taken apart; every number `vit score` prints for that cell is on the
    # screen, each stage it checks said to match
    if "$VIT" score --weights "$lens_data/models/vit-fashion.safetensors" \
        "$lens_data/images/fashion-mnist/0000-ankle-boot.png" \
        --layer 2 --head 1 --query 3 --key 2 >"$WORK/score.txt" 2>&1; then
        PASSED=$((PASSED + 1))
    else
        FAILED=$((FAILED + 1)); LAST_FAILURE="vit score on the default model"
        echo "viewer_tmux: FAILED: $LAST_FAILURE:" >&2
        sed 's/^/    | /' "$WORK/score.txt" >&2
    fi
    start neuron "$DEMO"
    $TMUX_CMD resize-window -t "$SESSION" -x 80 -y 24
    check "neuron: paused at the input" "paused at input 1/[0-9]+" 15
    keys '?'
    check "neuron: the help opens" "─ keys ─"
    help_n="N +neuron view: the cursor's score, q⊙k to probability"
    help_page_to "$help_n" 6 # the view's keys come after the app's and the tree's
    check "neuron: the help lists N (its line in the key table)" "$help_n"
    keys Escape
    # every view of the lab is reached from ? at 80×24: its key has its line
    for line in "Y +logit lens: on a block's stage" "I +head importance: each head off in turn" \
        "O +occlusion \(each patch blacked out\)" "P +on the input: paint it by hand" \
        "S +play: a step every 500 ms by itself"; do
        keys '?'
        # the help open before paging: a slow build (the sanitizers) took the
        # page keys as the pass's own, and the help then showed its first page
        wait_for "─ keys ─" 10
        help_page_to "$line" 8
        check "the help at 80×24 lists '$line'" "$line"
        keys Escape
    done
    keys N
    check "neuron: N outside attention says where it works" "N takes one score apart on an attention stage"
    keys c
    check "neuron: the pass finishes" "finished at logits [0-9]+/[0-9]+" 10
    keys / ; keys -l "blocks.2.attn.probs" ; keys Enter
    keys ']' ; keys '>' '>' '>' ; keys L L ; keys N
    check "neuron: N shows the cell under the cursor" "b2 h1 · q token 3 \(0,2\) → k token 2 \(0,1\)"
    # "NAME  VALUE ..." lines of vit score: the same value on the line of that name
    sed -n 's/^\(sum\|scale\|scaled\|row max\|exp\|row sum\|prob\)  *\([^ ]*\).*/\1\t\2/p' \
        "$WORK/score.txt" >"$WORK/score.rows"
    [ "$(wc -l <"$WORK/score.rows")" -eq 7 ] && PASSED=$((PASSED + 1)) || {
        FAILED=$((FAILED + 1)); LAST_FAILURE="vit score printed 7 parts"
        echo "viewer_tmux: FAILED: $LAST_FAILURE:" >&2; sed 's/^/    | /' "$WORK/score.txt" >&2; }
    while IFS="$(printf '\t')" read -r name value; do
        value_re=$(printf '%s' "$value" | sed 's/[].[*^$+]/\\&/g')
        check "neuron: $name as vit score prints it ($value)" "│$name +[^│]* $value_re( |\$)"
    done <"$WORK/score.rows"
    for stage in scores scaled probs; do
        check "neuron: $stage matches the recorded stage" "✓ $stage\$"
    done
    check "neuron: the verdict" "✓ matches the recorded stage"
    keys N
    check "neuron: N again, the map" "the attention map \(N: the neuron view\)"
    quit "q exits 0 after the neuron view"

    if infocmp xterm-direct >/dev/null 2>&1; then # Debian's ncurses-term describes it
        # tmux does not switch to the VT100 line set xterm-direct asks for: ncurses
        # draws the lines in Unicode instead (NCURSES_NO_UTF8_ACS), as in a real xterm
        start fashion-direct TERM=xterm-direct NCURSES_NO_UTF8_ACS=1 "$DEMO"
        check "true colour (TERM=xterm-direct) starts" "paused at input 1/[0-9]+" 15
        check_rows "true colour: the 28×28 image" "│▀{28}( |\$)" 14
        quit "q exits 0 in true colour"
    fi
    # COLORTERM=truecolor beside a 256-colour TERM, as most terminals set them:
    # TERM's -direct entry, when there is one, and 24-bit colours
    if infocmp "${TERM_INSIDE%%-*}-direct" >/dev/null 2>&1; then
        start fashion-colorterm COLORTERM=truecolor "$DEMO"
        check "COLORTERM=truecolor starts" "paused at input 1/[0-9]+" 15
        check_rows "COLORTERM=truecolor: the 28×28 image" "│▀{28}( |\$)" 14
        check_colours "COLORTERM=truecolor: 24-bit colours (bug: it was ignored)" \
            "[34]8;2;[0-9]+;[0-9]+;[0-9]+m"
        quit "q exits 0 with COLORTERM=truecolor"
    fi

    start fashion-mono NO_COLOR=1 "$DEMO"
    check "NO_COLOR on the Fashion model" "paused at input 1/[0-9]+" 15
    check "the grey image in ASCII" "│[ .:=+*#%@-]{28}( |\$)"
    keys B
    keys -l "blocks.0.attn.probs"
    keys Enter
    keys c
    check "NO_COLOR: at the attention" "paused at blocks.0.attn.probs" 10
    keys a
    check "NO_COLOR: every head in ASCII" "every head · query cls"
    check "NO_COLOR: heads drawn as characters" "│[ .:=+*#%@-]{12}" 
    keys x
    check "NO_COLOR: changed stages marked" "Δ +attn\.context" 10
    quit "q exits 0 on the Fashion model without colour"
fi

# ------------------------------------------- the training screen (--train)
# vitview --train runs vit train's run with the model on the screen. At 80×24
# and 160×50: the curves grow (more braille dots in a later capture), the
# attention panel's numbers change after a step; started --paused the step
# counter stays at 0, . takes exactly one step, space resumes; the watching costs
# under 5 % (its last line says how much); and the model written is, tensor
# for tensor and bit for bit, the one vit train writes with the same flags
# (the files' data after their headers: only the metadata's command differs);
# q stops it with a checkpoint, and the run resumed in vitview ends with it too.
# A small model (2 blocks of width 32) on 6,400 images (50 steps) keeps it short.
TRAIN_DATA=/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz
TRAIN_FLAGS="--epochs 1 --warmup 0 --limit 6400 --depth 2 --dim 32 --heads 2 --mlp 64 --test 0 --film none"
# the bytes of a safetensors file after its 8-byte length and its JSON header
tensor_bytes() {
    n=$(od -An -tu8 -N8 "$1" | tr -d ' ')
    tail -c +$((9 + n)) "$1"
}
# braille cells on the screen (U+2800 to U+28FF, bytes e2 a0-a3 80-bf): the
# curves and the schedule
BRAILLE=$(printf '\342[\240-\243][\200-\277]')
braille_count() { screen_text | LC_ALL=C grep -o "$BRAILLE" | wc -l; }

check_train_screen() { # COLS ROWS
    size="$1x$2"
    ARGS="--train --paused $TRAIN_FLAGS --out $WORK/train/watch-$size.safetensors"
    start "train-$size"
    $TMUX_CMD set-option -t "$SESSION" remain-on-exit on >/dev/null
    $TMUX_CMD resize-window -t "$SESSION" -x "$1" -y "$2"
    check "$size --train: the curves and the schedule" "learning rate .* now, peak" 30
    check "$size --train --paused: paused at step 0" " paused · step 0 " 10
    check "$size --train: the layout's last pane" "(confusion|layers)"
    dots0=$(braille_count)
    keys .
    check "$size --train: . takes exactly one step" " paused · step 1 " 10
    check "$size --train: . says so" "one step: step 1"
    attention=$(screen_text | grep -o 'to itself [0-9.]* · most [0-9.]*')
    keys .
    check "$size --train: . again, step 2" " paused · step 2 " 10
    sleep 0.5
    check "$size --train: paused, the step counter stays" " paused · step 2 "
    if [ -n "$attention" ] && screen_text | grep -q 'to itself' &&
        ! screen_text | grep -qF "$attention"; then PASSED=$((PASSED + 1)); else
        FAILED=$((FAILED + 1)); LAST_FAILURE="$size --train: the attention changes after a step"
        echo "viewer_tmux: FAILED: $LAST_FAILURE (still '$attention')" >&2
        screen_text | sed 's/^/    | /' >&2
    fi
    dots2=$(braille_count)
    keys '?'
    check "$size --train: ? lists the keys" "keys of the training screen"
    keys x
    keys Space
    check "$size --train: space resumes, the run ends, the model written" \
        "written: q leaves" 120
    dots_end=$(braille_count)
    if [ "$dots0" -lt "$dots2" ] && [ "$dots2" -lt "$dots_end" ]; then PASSED=$((PASSED + 1)); else
        FAILED=$((FAILED + 1))
        LAST_FAILURE="$size --train: the curves grow (dots $dots0 → $dots2 → $dots_end)"
        echo "viewer_tmux: FAILED: $LAST_FAILURE" >&2
    fi
    check "$size --train: the last validation in the curves' titles" "◆ val [0-9.]+"
    keys q
    # (printed after the screen closes, a line longer than the terminal: read with
    # the pane's history and its wrapped lines joined, as the terminal may scroll it)
    pause_from_start
    until $TMUX_CMD capture-pane -p -J -S - -t "$SESSION" >"$WORK/screen.txt" 2>/dev/null &&
        grep -Eq "watching took [0-9.]+% of the time" "$WORK/screen.txt"; do
        paused_less_than 10 || break
        pause
    done
    if grep -Eq "watching took [0-9.]+% of the time" "$WORK/screen.txt"; then
        PASSED=$((PASSED + 1))
    else
        FAILED=$((FAILED + 1))
        LAST_FAILURE="$size --train: the cost of watching, printed at the end"
        echo "viewer_tmux: FAILED: $LAST_FAILURE; the pane and its history were:" >&2
        sed 's/^/    | /' "$WORK/screen.txt" >&2
    fi
    cost=$(sed -n 's/.*watching took \([0-9.]*\)%.*/\1/p' "$WORK/screen.txt" | head -1)
    tries=100 # until vitview's exit status is written
    while [ ! -s "$WORK/exit" ] && [ "$tries" -gt 0 ]; do sleep 0.1; tries=$((tries - 1)); done
    if awk -v c="$cost" 'BEGIN { exit !(c != "" && c < 5) }'; then PASSED=$((PASSED + 1)); else
        FAILED=$((FAILED + 1)); LAST_FAILURE="$size --train: watching costs under 5 % (it took $cost %)"
        echo "viewer_tmux: FAILED: $LAST_FAILURE" >&2
    fi
    if grep -qx "EXIT=0" "$WORK/exit" 2>/dev/null &&
        tensor_bytes "$WORK/train/watch-$size.safetensors" | cmp -s - "$WORK/train/ref.data"; then
        PASSED=$((PASSED + 1))
    else
        FAILED=$((FAILED + 1))
        LAST_FAILURE="$size --train: the model is vit train's bit for bit ($(cat "$WORK/exit" 2>/dev/null))"
        echo "viewer_tmux: FAILED: $LAST_FAILURE" >&2
        sed 's/^/    | /' "$WORK/stderr" >&2
    fi
    $TMUX_CMD kill-session -t "$SESSION" 2>/dev/null
    ARGS=""
}

# q stops the run as Ctrl-C stops vit train: a checkpoint at the step, the way
# to resume said after the screen closes, exit status 1; resumed in vitview,
# the run ends with vit train's model all the same.
check_train_stop_resume() {
    out="$WORK/train/stopped.safetensors"
    ARGS="--train --paused $TRAIN_FLAGS --out $out"
    start train-stop
    $TMUX_CMD resize-window -t "$SESSION" -x 80 -y 24
    check "--train: paused at step 0" " paused · step 0 " 30
    keys .
    check "--train: step 1" " paused · step 1 " 10
    keys .
    check "--train: step 2" " paused · step 2 " 10
    keys q
    tries=100
    while [ ! -s "$WORK/exit" ] && [ "$tries" -gt 0 ]; do sleep 0.1; tries=$((tries - 1)); done
    if grep -qx "EXIT=1" "$WORK/exit" 2>/dev/null &&
        grep -q "interrupted at step 2 of [0-9]*: checkpoint saved to .*--resume" "$WORK/stderr" &&
        [ -s "$out.ckpt" ]; then PASSED=$((PASSED + 1)); else
        FAILED=$((FAILED + 1)); LAST_FAILURE="--train: q saves a checkpoint and says so ($(cat "$WORK/exit" 2>/dev/null))"
        echo "viewer_tmux: FAILED: $LAST_FAILURE" >&2
        sed 's/^/    | /' "$WORK/stderr" >&2
    fi
    ARGS="--train $TRAIN_FLAGS --out $out --resume $out.ckpt"
    start train-resume
    check "--train --resume: the run goes on and ends" "written: q leaves" 120
    quit "--train --resume: q exits 0 at the end"
    if tensor_bytes "$out" | cmp -s - "$WORK/train/ref.data"; then PASSED=$((PASSED + 1)); else
        FAILED=$((FAILED + 1)); LAST_FAILURE="--train stopped and resumed: vit train's model bit for bit"
        echo "viewer_tmux: FAILED: $LAST_FAILURE" >&2
    fi
    ARGS=""
}

# d, paused, opens the debugger on the run's next step, taken on a copy: its
# forward on the whole batch, the backward of its loss, AdamW's update of each
# parameter, stepped like any pass; r (a restart) is refused there, d shows the
# forward again once all is computed, q goes back to the training screen where
# it was. The run then ends with vit train's model bit for bit: looking at a
# step changed nothing.
check_train_debugger() {
    out="$WORK/train/debugged.safetensors"
    ARGS="--train --paused $TRAIN_FLAGS --out $out"
    start train-debug
    $TMUX_CMD resize-window -t "$SESSION" -x 160 -y 50
    check "--train: paused at step 0, for the debugger" " paused · step 0 " 30
    keys .
    check "--train: step 1, then d" " paused · step 1 " 10
    keys d
    check "--train d: the debugger on step 2, on a copy" "step 2 of the run, on a copy: the batch of 128" 15
    check "--train d: it stops at the batch's input" "paused at input 1/" 10
    check "--train d: the whole batch" "shape  \(B=128, C=1, S=28, S=28\)"
    keys r
    check "--train d: r is refused there" "no restart, what-if or other picture"
    keys c
    check "--train d: the forward runs to the logits" "finished at logits" 10
    keys c
    check "--train d: then the backward of the loss" "∂ loss / ∂ logits" 10
    check "--train d: stopped at the backward's first stage" "paused at grad\.logits 1/"
    keys c
    check "--train d: AdamW's updates, one per parameter" "finished at optim\.update\.head\.bias" 20
    check "--train d: the update's parts" "‖g‖ [0-9.e-]+  ‖m‖ [0-9.e-]+  ‖v‖"
    keys c
    check "--train d: computed, c says what is left" "the step is computed: d shows its forward"
    keys d
    check "--train d: d shows the step's forward again" "the step's forward, on its batch" 10
    keys q
    check "--train d: q goes back to the training, where it was" \
        "back from the debugger: the run is where it was, step 2 next" 10
    check "--train d: still paused at step 1" " paused · step 1 " 10
    keys ' '
    check "--train d: space resumes, the run ends" "written: q leaves" 120
    quit "--train d: q exits 0 at the end"
    if tensor_bytes "$out" | cmp -s - "$WORK/train/ref.data"; then PASSED=$((PASSED + 1)); else
        FAILED=$((FAILED + 1)); LAST_FAILURE="--train with the debugger opened on step 2: vit train's model bit for bit"
        echo "viewer_tmux: FAILED: $LAST_FAILURE" >&2
    fi
    ARGS=""
}

if [ -x "$VIT" ] && [ -r "$TRAIN_DATA" ]; then
    mkdir -p "$WORK/train"
    # the training's own cache of the product's choice, with the trap below
    VIT_GEMM_CACHE="$WORK/train/gemm-choice"
    # shellcheck disable=SC2086 # the flags are words
    if "$VIT" train $TRAIN_FLAGS --threads 2 --out "$WORK/train/ref.safetensors" \
        >"$WORK/train/ref.log" 2>&1; then
        tensor_bytes "$WORK/train/ref.safetensors" >"$WORK/train/ref.data"
        # A trap: the cache's answer for one thread made the other backend's.
        # The product is chosen once per process; a vitview that chose it at
        # the panel's one thread trained on the other backend, and its model
        # differed from vit train's in the last bits (seen on a busy machine,
        # where the one-thread timing went the other way).
        other=blas
        grep -q '^choice=blas$' "$VIT_GEMM_CACHE" && other=tiled
        if grep -q '^threads=2$' "$VIT_GEMM_CACHE"; then
            sed -e '1d' -e 's/^threads=2$/threads=1/' -e "s/^choice=.*/choice=$other/" \
                -e "s/^small_choice=.*/small_choice=$other/" "$VIT_GEMM_CACHE" >"$WORK/one-thread"
            cat "$WORK/one-thread" >>"$VIT_GEMM_CACHE"
        fi
        check_train_screen 80 24
        check_train_screen 160 50
        check_train_stop_resume
        check_train_debugger
    else
        FAILED=$((FAILED + 1))
        LAST_FAILURE="vit train for the training screen's reference"
        echo "viewer_tmux: FAILED: $LAST_FAILURE:" >&2
        sed 's/^/    | /' "$WORK/train/ref.log" >&2
    fi
    VIT_GEMM_CACHE="$WORK/gemm-choice"
fi

# without the trained model: random weights, and a line saying so
mkdir -p "$WORK/no-model"
ARGS=""
start no-model "VIT_DATA_DIR=$WORK/no-model"
check "no trained model: random weights" "paused at input 1/188" 15
check "the title row says so" "no trained model: random weights"
quit "q exits 0 on random weights"
if grep -q "no trained model .*random weights instead" "$WORK/stderr" 2>/dev/null; then
    PASSED=$((PASSED + 1))
else
    FAILED=$((FAILED + 1))
    LAST_FAILURE="no trained model: the line on stderr"
    echo "viewer_tmux: FAILED: $LAST_FAILURE; stderr:" >&2
    sed 's/^/    | /' "$WORK/stderr" >&2
fi

if [ "$FAILED" -eq 0 ]; then
    echo "viewer_tmux: PASS ($PASSED checks, $VITVIEW at 100x30, 60x20, 40x10, NO_COLOR, NaN, cut weights, a training's film; the default Fashion-MNIST model, $DEMO_WHAT, at 100x30, 80x24, 160x50; --train at 80x24 and 160x50, its debugger of a step; no model)"
    exit 0
fi
echo "viewer_tmux: FAIL ($FAILED of $((PASSED + FAILED)) checks failed, last: $LAST_FAILURE)"
exit 1
