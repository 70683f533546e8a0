#!/bin/bash
# The ViT-B/16 batch-1 forward beside other work, ours and PyTorch's under the
# same load: nothing, 2 busy loops, 12 busy loops (`yes > /dev/null`), and a
# parallel rebuild of this project (make -B -j8 into a build tree of its own,
# looping). Under each load, in turn: ours as it runs (idle threads sleep while
# they wait: lib sets OMP_WAIT_POLICY=passive), ours with OpenMP's default
# waiting (OMP_WAIT_POLICY unset but GOMP_SPINCOUNT at libgomp's default of
# 300000 spins: what every program did before), and PyTorch at the best of 1
# and 2 threads, its OpenMP threads spinning or asleep. Each figure is `build/bench latency`'s median of 7 passes, or
# the PyTorch script's; the load average is printed beside each row. Exit 0
# unless a program failed.
#
#   benchmarks/shared.sh BUILD [PYTHON [LOAD...]]
#
# LOAD is quiet, loops-N (N busy loops) or rebuild; by default quiet, loops-2,
# loops-12 and rebuild.
# Without PyTorch (PYTHON cannot import torch and torchvision), ours alone.
# make bench runs it. A run takes a few minutes; the rebuild's log is thrown away.
set -u

BUILD=${1:-build}
PYTHON=${2:-/usr/bin/python3}
shift 2 2>/dev/null || shift $#
LOADS=${*:-quiet loops-2 loops-12 rebuild}
BENCH=$BUILD/bench
HERE=$(cd "$(dirname "$0")/.." && pwd)
if [ ! -x "$BENCH" ]; then echo "shared: $BENCH must be built" >&2; exit 2; fi
torch=yes
"$PYTHON" -c 'import torch, torchvision' 2>/dev/null || torch=no

WORK=$(mktemp -d "${TMPDIR:-/tmp}/vit-shared.XXXXXX")
# Job control: each load runs as a job in a process group of its own, which
# stop_load ends whole, but in this script's session. That matters on Linux,
# whose scheduler (autogroup) shares the CPUs fairly between sessions first: 12
# loops started in another terminal (another session) take at most half of the
# machine from us, whatever their number; here they compete thread by thread,
# as the loads of the measurements this bench answers did.
set -m
LOAD_PID=""
stop_load() {
    if [ -n "$LOAD_PID" ]; then
        kill -TERM -- "-$LOAD_PID" 2>/dev/null
        wait "$LOAD_PID" 2>/dev/null
        LOAD_PID=""
    fi
}
cleanup() { stop_load; rm -rf "$WORK"; }
trap cleanup EXIT
trap 'exit 1' INT TERM HUP

# start_load KIND: the work beside the measurement, as one job
start_load() {
    case $1 in
    quiet) return ;;
    loops-*)
        n=${1#loops-}
        bash -c "for i in \$(seq $n); do yes >/dev/null & done; wait" &
        ;;
    rebuild)
        # the project's own build, from scratch, again and again, in a tree of its own
        bash -c "while :; do make -C '$HERE' -s -B -j8 BUILD='$WORK/build' all \
            >/dev/null 2>&1; done" &
        ;;
    esac
    LOAD_PID=$!
    sleep 3 # let the load get going (a rebuild starts with its dependency scan)
}

# ours_ms [ENV...]: the median of `bench latency` under the current load
ours_ms() {
    env "$@" "$BENCH" latency 2>/dev/null | sed -n 's/.*median \([0-9.]*\) ms.*/\1/p'
}

torch_ms() {
    [ "$torch" = yes ] || { echo "-"; return; }
    PYTHONDONTWRITEBYTECODE=1 "$PYTHON" "$HERE/tools/bench_torch_vit.py" --latency --runs 7 \
        2>/dev/null | sed -n 's/^pytorch_ms=\([0-9.]*\).*/\1/p'
}

load_avg() { cut -d' ' -f1 /proc/loadavg; }

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a + 0 > 0 && b + 0 > 0) printf "%.2f", a / b; else print "-" }'; }

echo "The ViT-B/16 forward beside other work (batch 1, medians of 7 passes, ms; each row in turn:"
echo "ours as it runs, ours with OpenMP's default spinning wait, PyTorch at its best of 1 or 2 threads,"
echo "spinning or asleep)"
printf "  %-26s %6s %9s %13s %9s %14s\n" "beside" "load" "ours" "ours spinning" "PyTorch" "ours/PyTorch"
status=0
for kind in $LOADS; do
    case $kind in
    quiet) what="nothing" ;;
    loops-[0-9]*) what="${kind#loops-} busy loops" ;;
    rebuild) what="an 8-job rebuild, looping" ;;
    *) echo "shared: unknown load '$kind' (quiet, loops-N or rebuild)" >&2; exit 2 ;;
    esac
    start_load "$kind"
    ours=$(ours_ms)
    spin=$(ours_ms -u OMP_WAIT_POLICY GOMP_SPINCOUNT=300000)
    theirs=$(torch_ms)
    load=$(load_avg)
    stop_load
    [ -n "$ours" ] && [ -n "$spin" ] && [ -n "$theirs" ] || status=1
    printf "  %-26s %6s %9s %13s %9s %14s\n" "$what" "$load" "${ours:-failed}" "${spin:-failed}" \
        "${theirs:-failed}" "$(ratio "$ours" "$theirs")"
done
[ "$torch" = yes ] || echo "  (PyTorch: $PYTHON cannot import torch and torchvision; ours alone)"
echo "  target beside 12 busy loops and beside the rebuild: ours <= 0.80 x PyTorch's"
exit $status
