#!/bin/sh
# What watching a training run costs: the same run, `vit train` without a
# screen and `vitview --train` with one (in a tmux of 160×50, redrawing at its
# default interval), timed from the start to the model file written, in
# alternating rounds (A B A B …: a machine that gets busier or quieter during
# the bench moves both alike). Prints each round and its ratio, then the median
# of the rounds' ratios (one round alone varies by several per cent either
# way: the median of five is the figure) against the 5 % the screen promises,
# with the rounds' range beside it; exit 0 unless a run failed.
#
#   benchmarks/watch_cost.sh build [ROUNDS]
#
# The run: the shipped recipe's model on the first 6,400 training images for
# one epoch, no test split (the flags below); both include loading the data
# and the validation pass, the same work. make bench runs it.
set -u

BUILD=${1:-build}
ROUNDS=${2:-5}
VIT=$BUILD/vit
VITVIEW=$BUILD/vitview
FLAGS="--epochs 1 --limit 6400 --test 0"
if [ ! -x "$VIT" ] || [ ! -x "$VITVIEW" ]; then echo "watch_cost: $VIT and $VITVIEW must be built" >&2; exit 2; fi
command -v tmux >/dev/null 2>&1 || { echo "watch_cost: tmux is not installed (scripts/deps.sh installs it)" >&2; exit 2; }

WORK=$(mktemp -d "${TMPDIR:-/tmp}/watch-cost.XXXXXX")
TMUX_CMD="tmux -u -S $WORK/tmux.sock -f /dev/null"
cleanup() { $TMUX_CMD kill-server >/dev/null 2>&1; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

now() { date +%s.%N; }
minus() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.3f\n", a - b }'; }

# without: vit train, its wall time
plain() {
    rm -rf "$WORK/a"*
    t0=$(now)
    # shellcheck disable=SC2086 # FLAGS is a list of flags
    "$VIT" train $FLAGS --out "$WORK/a.safetensors" >"$WORK/a.log" 2>&1 || { cat "$WORK/a.log" >&2; return 1; }
    minus "$(now)" "$t0"
}

# with: vitview --train in tmux until its model file is written (the run's
# end: the screen then waits for q, which the time leaves out)
watched() {
    rm -rf "$WORK/b"*
    t0=$(now)
    # (its stdout must be the terminal: what it prints after the screen closes is
    # read back from the pane, which stays open a moment for that)
    $TMUX_CMD new-session -d -s watch -x 160 -y 50 \
        "TERM=tmux-256color LANG=C.UTF-8 $VITVIEW --train $FLAGS --out $WORK/b.safetensors 2>$WORK/b.err; echo \$? >$WORK/b.exit; sleep 60"
    while [ ! -s "$WORK/b.safetensors" ] && [ ! -s "$WORK/b.exit" ]; do sleep 0.05; done
    t1=$(now)
    [ -s "$WORK/b.exit" ] || $TMUX_CMD send-keys -t watch q
    while [ ! -s "$WORK/b.exit" ]; do sleep 0.05; done
    $TMUX_CMD capture-pane -p -J -t watch >"$WORK/b.log"
    $TMUX_CMD kill-session -t watch
    [ "$(cat "$WORK/b.exit")" = 0 ] || { cat "$WORK/b.err" "$WORK/b.log" >&2; return 1; }
    minus "$t1" "$t0"
}

median() { sort -n | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }

echo "Watching a training run: vit train against vitview --train (160x50), $FLAGS, $ROUNDS rounds"
: >"$WORK/plain.txt"
: >"$WORK/watched.txt"
i=1
while [ "$i" -le "$ROUNDS" ]; do
    a=$(plain) || exit 1
    b=$(watched) || exit 1
    echo "$a" >>"$WORK/plain.txt"
    echo "$b" >>"$WORK/watched.txt"
    printf '  round %d: vit train %.2f s, vitview --train %.2f s; the screen said: %s\n' "$i" "$a" "$b" \
        "$(grep -o 'watching took [0-9.]*%' "$WORK/b.log")"
    i=$((i + 1))
done
paste "$WORK/plain.txt" "$WORK/watched.txt" | awk '{print $2 / $1}' >"$WORK/ratios.txt"
ratio=$(median <"$WORK/ratios.txt")
lo=$(sort -n "$WORK/ratios.txt" | head -n 1)
hi=$(sort -n "$WORK/ratios.txt" | tail -n 1)
awk -v r="$ratio" -v lo="$lo" -v hi="$hi" -v a="$(median <"$WORK/plain.txt")" \
    -v b="$(median <"$WORK/watched.txt")" 'BEGIN {
    printf "  medians: vit train %.2f s, vitview --train %.2f s; of the rounds'"'"' ratios %+.1f%% (from %+.1f%% to %+.1f%%):",
           a, b, 100 * (r - 1), 100 * (lo - 1), 100 * (hi - 1)
    printf " watching costs %s the 5%% promised\n", r - 1 < 0.05 ? "less than" : "MORE than"
}'
