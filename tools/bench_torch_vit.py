#!/usr/bin/python3
"""The PyTorch side of `make bench`'s ViT-B/16 targets: torchvision's vit_b_16, timed.

torchvision.models.vit_b_16() (random weights: speed does not depend on
them), float32, eval mode under torch.inference_mode(), on random 224x224
images: the batch-1 latency (median of --runs timed calls after a warm-up)
and the batch-8 throughput (median of 3). The same model as benchmarks/bench.c's
vit section: 12 blocks, D 768, 12 heads, MLP 3072, 197 tokens.

A fair comparison gives PyTorch its best setting, so it runs once per
setting, each in a process of its own (the variables below are read when the
libraries load):

  threads    torch.set_num_threads(1) and (all cores)
  OPENBLAS_NUM_THREADS
             unset, or 1: Debian's PyTorch calls libblas.so.3, the pthreads
             build of OpenBLAS, whose own threads compete with PyTorch's
             OpenMP ones
  OPENBLAS_CORETYPE
             as installed, and the kernel set `build/bench blas-kernels` found
             fastest on this CPU (--c-result's best_core): OpenBLAS 0.3.21 does
             not know every new CPU and may fall back to its SSE3 kernels

and the best of them is compared with the C figures of --c-result (written by
`build/bench --vit-result FILE`): our batch-1 latency against 0.9 x PyTorch's,
our batch-8 throughput against PyTorch's.

Dev-time only, with Debian's PyTorch: /usr/bin/python3, python3-torch,
python3-torchvision.

    /usr/bin/python3 tools/bench_torch_vit.py [--runs 10] [--c-result build/bench-vit.txt]
    /usr/bin/python3 tools/bench_torch_vit.py --latency [--runs 7]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def time_setting(runs):
    """In the child: the two figures for this process's setting, as JSON on stdout."""
    import torch
    import torchvision

    threads = int(os.environ["BENCH_TORCH_THREADS"])
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = torchvision.models.vit_b_16().eval()

    def median_seconds(x, n):
        with torch.inference_mode():
            model(x)  # warm-up: first-call allocations, thread start
            times = []
            for _ in range(n):
                t0 = time.perf_counter()
                model(x)
                times.append(time.perf_counter() - t0)
        return statistics.median(times)

    batch1 = median_seconds(torch.randn(1, 3, 224, 224), runs)
    if os.environ.get("BENCH_TORCH_LATENCY_ONLY"):
        print(json.dumps({"batch1_ms": 1e3 * batch1}))
        return
    batch8 = median_seconds(torch.randn(8, 3, 224, 224), 3)
    print(json.dumps({"batch1_ms": 1e3 * batch1, "batch8_images_per_s": 8 / batch8,
                      "torch": torch.__version__, "torchvision": torchvision.__version__}))


def read_c_result(path):
    figures = {}
    with open(path) as f:
        for line in f:
            key, _, value = line.strip().partition("=")
            figures[key] = value
    return figures


def settings(cores, best_core):
    for core in dict.fromkeys([None, best_core]):  # as installed, then the best, once each
        for blas_threads in (None, "1"):
            for threads in sorted({1, cores}):
                yield {"threads": threads, "OPENBLAS_NUM_THREADS": blas_threads,
                       "OPENBLAS_CORETYPE": core}


def describe(s):
    return "torch threads %d, OPENBLAS_NUM_THREADS %s, OPENBLAS_CORETYPE %s" % (
        s["threads"], s["OPENBLAS_NUM_THREADS"] or "unset", s["OPENBLAS_CORETYPE"] or "as installed")


def run_setting(s, runs, latency_only=False):
    env = dict(os.environ, BENCH_TORCH_THREADS=str(s["threads"]))
    if latency_only:
        env["BENCH_TORCH_LATENCY_ONLY"] = "1"
    env.pop("OMP_WAIT_POLICY", None)
    if s.get("OMP_WAIT_POLICY"):
        env["OMP_WAIT_POLICY"] = s["OMP_WAIT_POLICY"]
    for var in ("OPENBLAS_NUM_THREADS", "OPENBLAS_CORETYPE"):
        env.pop(var, None)
        if s[var]:
            env[var] = s[var]
    out = subprocess.run([sys.executable, os.path.abspath(__file__), "--child", "--runs", str(runs)],
                         env=env, capture_output=True, text=True)
    if out.returncode != 0:
        print("  %s: failed\n%s" % (describe(s), out.stderr[-2000:]))
        return None
    return json.loads(out.stdout.strip().splitlines()[-1])


def latency(runs):
    """The best batch-1 latency of 1 and all threads, OpenMP's threads spinning
    (its default) or asleep while they wait (OMP_WAIT_POLICY=passive, as ours),
    each in a process of its own."""
    cores = os.cpu_count() or 1
    best = None
    for threads in sorted({1, cores}):
        for wait in (None, "passive"):
            s = {"threads": threads, "OPENBLAS_NUM_THREADS": None, "OPENBLAS_CORETYPE": None,
                 "OMP_WAIT_POLICY": wait}
            r = run_setting(s, runs, latency_only=True)
            if r and (best is None or r["batch1_ms"] < best[2]):
                best = (threads, wait, r["batch1_ms"])
    if best is None:
        print("pytorch_ms=nan")
        return 1
    print("pytorch_ms=%.1f threads=%d wait=%s" % (best[2], best[0], best[1] or "default"))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--runs", type=int, default=10, help="timed batch-1 calls per setting")
    ap.add_argument("--c-result", help="the C figures (build/bench --vit-result FILE)")
    ap.add_argument("--latency", action="store_true",
                    help="only the batch-1 latency, at 1 and at all threads, OpenMP's "
                         "threads spinning or asleep (OpenBLAS as installed), the best "
                         "printed as 'pytorch_ms=...' (for benchmarks/shared.sh)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        time_setting(args.runs)
        return 0
    if args.latency:
        return latency(args.runs)

    c = read_c_result(args.c_result) if args.c_result else {}
    cores = os.cpu_count() or 1
    print("PyTorch: torchvision's vit_b_16, batch 1 (median of %d) and batch 8 (median of 3),"
          " one process per setting" % args.runs)
    print("  %-78s %10s %12s" % ("setting", "batch 1 ms", "batch 8 img/s"))
    results = []
    for s in settings(cores, c.get("best_core")):
        r = run_setting(s, args.runs)
        if r is None:
            continue
        results.append((s, r))
        print("  %-78s %10.1f %12.2f" % (describe(s), r["batch1_ms"], r["batch8_images_per_s"]),
              flush=True)
    if not results:
        print("  no setting ran")
        return 1
    lat_s, lat = min(results, key=lambda sr: sr[1]["batch1_ms"])
    thr_s, thr = max(results, key=lambda sr: sr[1]["batch8_images_per_s"])
    print("  best batch 1: %.1f ms (%s)" % (lat["batch1_ms"], describe(lat_s)))
    print("  best batch 8: %.2f images/s (%s)" % (thr["batch8_images_per_s"], describe(thr_s)))
    print("  (torch %s, torchvision %s)" % (lat["torch"], lat["torchvision"]))
    if not c:
        return 0
    ours1, ours8 = float(c["batch1_ms"]), float(c["batch8_images_per_s"])
    print("ViT-B/16 against PyTorch (ours: %s GEMM, %s threads)" % (c.get("gemm"), c.get("threads")))
    ratio1 = ours1 / lat["batch1_ms"]
    print("  batch-1 latency: ours %.1f ms, PyTorch %.1f ms: %.2f x PyTorch's, target <= 0.90: %s"
          % (ours1, lat["batch1_ms"], ratio1, "met" if ratio1 <= 0.90 else "MISSED"))
    ratio8 = ours8 / thr["batch8_images_per_s"]
    print("  batch-8 throughput: ours %.2f images/s, PyTorch %.2f: %.2f x PyTorch's, "
          "target >= 1.00: %s" % (ours8, thr["batch8_images_per_s"], ratio8,
                                  "met" if ratio8 >= 1.0 else "MISSED"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
