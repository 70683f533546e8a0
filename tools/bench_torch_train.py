#!/usr/bin/python3
"""The PyTorch side of `make bench`'s training section: the same step, timed the same way.

One training step of a small ViT on a fixed batch -- forward, cross-entropy,
backward, gradient clipping, AdamW -- written in plain torch.nn (not timm, not
the C code): the architecture of benchmarks/bench.c's "train" section,

    28x28 images, 1 channel, patch 4 (49 patches + [cls] = 50 tokens),
    D 64, depth 6, 4 heads, MLP 128, 10 classes, batch 128, float32,

pre-norm blocks with LayerNorm eps 1e-6, fused qkv, exact (erf) GELU, the
[cls] row into the head. The optimizer is torch.optim.AdamW with timm's two
parameter groups (weights decay, biases / norms / cls_token / pos_embed do not),
the learning rate of a warm-up + cosine schedule set before each step, and
torch.nn.utils.clip_grad_norm_(max_norm=1) before it, so PyTorch does the same
work as lib/train/optim.

Each step is split into three timed parts, as the C side splits it:

    forward    model(x) and F.cross_entropy
    backward   loss.backward()
    optimizer  clip_grad_norm_, opt.step(), opt.zero_grad(set_to_none=False)

and every figure is the median over --steps timed steps after --warmup untimed
ones. It runs once per setting, each in a process of its own: PyTorch at every
core as installed (the comparison the issue asks for), at 1 thread, and with
the knobs that decide its speed on a small machine -- torch.set_num_threads,
OPENBLAS_NUM_THREADS (Debian's PyTorch calls libblas.so.3, by default the
pthreads build of OpenBLAS, whose own threads compete with PyTorch's OpenMP
ones) and OMP_WAIT_POLICY -- and names the fastest. With --c-result FILE
(written by `build/bench --train-result FILE train`) it prints the C figures
beside its own and the ratios.

Dev-time only, with Debian's PyTorch: /usr/bin/python3, python3-torch.

    /usr/bin/python3 tools/bench_torch_train.py [--steps 20] [--warmup 3] [--quick]
                     [--c-result build/bench-train.txt]
"""
import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# The benchmark's model and batch: keep in step with benchmarks/bench.c (train section).
IMAGE, PATCH, CHANNELS = 28, 4, 1
DIM, DEPTH, HEADS, MLP, CLASSES = 64, 6, 4, 128, 10
BATCH = 128
EPS = 1e-6
LR, WEIGHT_DECAY, WARMUP, CLIP = 1e-3, 0.05, 5, 1.0


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x):
        B, N, D = x.shape
        H = self.heads
        q, k, v = self.qkv(x).reshape(B, N, 3, H, D // H).permute(2, 0, 3, 1, 4).unbind(0)
        probs = ((q @ k.transpose(-2, -1)) * self.scale).softmax(dim=-1)
        return self.proj((probs @ v).transpose(1, 2).reshape(B, N, D))


class Block(nn.Module):
    def __init__(self, dim, heads, mlp):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=EPS)
        self.attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim, eps=EPS)
        self.fc1 = nn.Linear(dim, mlp)
        self.fc2 = nn.Linear(mlp, dim)

    def forward(self, x):
        x = x + self.attn(self.norm1(x))
        return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))


class ViT(nn.Module):
    def __init__(self):
        super().__init__()
        tokens = (IMAGE // PATCH) ** 2 + 1
        self.patch = nn.Conv2d(CHANNELS, DIM, PATCH, stride=PATCH)
        self.cls_token = nn.Parameter(torch.randn(1, 1, DIM) * 0.02)
        self.pos_embed = nn.Parameter(torch.randn(1, tokens, DIM) * 0.02)
        self.blocks = nn.ModuleList(Block(DIM, HEADS, MLP) for _ in range(DEPTH))
        self.norm = nn.LayerNorm(DIM, eps=EPS)
        self.head = nn.Linear(DIM, CLASSES)

    def forward(self, img):
        x = self.patch(img).flatten(2).transpose(1, 2)            # (B, P, D)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        for block in self.blocks:
            x = block(x)
        return self.head(self.norm(x)[:, 0])


def param_groups(model):
    """timm's param_groups_weight_decay: 1-d tensors, biases and the embeddings do not decay."""
    decay, no_decay = [], []
    for name, p in model.named_parameters():
        skip = p.ndim <= 1 or name.endswith(".bias") or name in ("cls_token", "pos_embed")
        (no_decay if skip else decay).append(p)
    return [{"params": decay, "weight_decay": WEIGHT_DECAY},
            {"params": no_decay, "weight_decay": 0.0}]


def lr_at(step, total):
    """Linear warm-up from 0 over WARMUP steps, then cosine to 0 at the last step."""
    if step < WARMUP:
        return LR * step / WARMUP
    return 0.5 * LR * (1 + math.cos(math.pi * (step - WARMUP) / max(1, total - 1 - WARMUP)))


def bench(threads, warmup, steps):
    """Median seconds of (forward, backward, optimizer, whole step) at `threads` threads."""
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    model = ViT()
    opt = torch.optim.AdamW(param_groups(model), lr=LR)
    x = torch.randn(BATCH, CHANNELS, IMAGE, IMAGE)
    y = torch.randint(0, CLASSES, (BATCH,))
    times = []
    total = warmup + steps
    for step in range(total):
        t0 = time.perf_counter()
        loss = F.cross_entropy(model(x), y)
        t1 = time.perf_counter()
        loss.backward()
        t2 = time.perf_counter()
        torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
        for g in opt.param_groups:
            g["lr"] = lr_at(step, total)
        opt.step()
        opt.zero_grad(set_to_none=False)
        t3 = time.perf_counter()
        if step >= warmup:
            times.append((t1 - t0, t2 - t1, t3 - t2, t3 - t0))
        if not math.isfinite(loss.item()):
            sys.exit("bench_torch_train: the loss is not finite")
    return [statistics.median(t[i] for t in times) for i in range(4)]


def blas_library():
    """The BLAS library this process mapped (PyTorch calls it for every matrix product)."""
    torch.ones(64, 64) @ torch.ones(64, 64)
    try:
        with open("/proc/self/maps") as f:
            libs = {line.split()[-1] for line in f if "blas" in line.rsplit("/", 1)[-1]}
    except OSError:
        return "unknown"
    real = sorted({os.path.realpath(p) for p in libs if p.startswith("/")})
    return ", ".join(real) if real else "none mapped"


def read_c_result(path):
    """The key=value lines `build/bench train --train-result FILE` writes."""
    out = {}
    with open(path) as f:
        for line in f:
            key, sep, value = line.strip().partition("=")
            if sep:
                out[key] = value
    return out


HEADER = (f"  {'':<44} {'images/s':>9} {'step ms':>8} {'fwd ms':>8} {'bwd ms':>8} "
          f"{'optim ms':>8}   fwd/bwd/opt %")


def row(label, fwd, bwd, opt, step):
    """One line of the table; bwd None: fwd holds forward and backward together."""
    if bwd is None:
        return (f"  {label:<44} {BATCH / step:9.0f} {1e3 * step:8.1f} {1e3 * fwd:8.1f} "
                f"{'(in fwd)':>8} {1e3 * opt:8.1f}   {100 * fwd / step:3.0f}+bwd/"
                f"{100 * opt / step:3.0f}")
    return (f"  {label:<44} {BATCH / step:9.0f} {1e3 * step:8.1f} {1e3 * fwd:8.1f} "
            f"{1e3 * bwd:8.1f} {1e3 * opt:8.1f}   {100 * fwd / step:3.0f}/{100 * bwd / step:3.0f}"
            f"/{100 * opt / step:3.0f}")


class Setting:
    """One way to run PyTorch: its intra-op threads and the environment of its process."""

    def __init__(self, threads, blas_threads=None, passive=False):
        self.threads, self.blas_threads, self.passive = threads, blas_threads, passive

    def env(self):
        env = dict(os.environ)
        for key in ("OPENBLAS_NUM_THREADS", "OMP_WAIT_POLICY"):
            env.pop(key, None)
        if self.blas_threads:
            env["OPENBLAS_NUM_THREADS"] = str(self.blas_threads)
        if self.passive:
            env["OMP_WAIT_POLICY"] = "passive"
        return env

    def label(self):
        text = f"torch {self.threads} thread{'s' if self.threads > 1 else ''}"
        text += f", OpenBLAS {self.blas_threads or 'default'}"
        return text + (", OMP passive" if self.passive else "")


def run_setting(setting, a):
    """Times one setting in a process of its own (the environment must be set before
    PyTorch starts its thread pools); returns its medians."""
    cmd = [sys.executable, os.path.abspath(__file__), "--child", str(setting.threads),
           "--steps", str(a.steps), "--warmup", str(a.warmup)]
    out = subprocess.run(cmd, env=setting.env(), capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"bench_torch_train: {setting.label()} failed: {out.stderr.strip()}")
    return json.loads(out.stdout)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--steps", type=int, default=20, help="timed steps per setting")
    ap.add_argument("--warmup", type=int, default=3, help="untimed steps first")
    ap.add_argument("--c-result", help="the C side's figures, to print beside and compare")
    ap.add_argument("--quick", action="store_true",
                    help="only the default setting at every core, and 1 thread")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.steps < 1 or a.warmup < 0:
        ap.error("--steps needs at least 1, --warmup 0 or more")
    if a.child:
        fwd, bwd, opt, step = bench(a.child, a.warmup, a.steps)
        print(json.dumps({"fwd": fwd, "bwd": bwd, "opt": opt, "step": step,
                          "blas": blas_library()}))
        return

    cores = os.cpu_count() or 1
    # the brief's comparison first (PyTorch at every core, as installed), then the
    # other thread settings, to find PyTorch's best on this machine
    settings = [Setting(cores), Setting(1)]
    if not a.quick and cores > 1:
        settings += [Setting(1, 1), Setting(cores, 1), Setting(cores, cores),
                     Setting(cores, None, True), Setting(cores, 1, True)]
    backend = next((l.split(":", 1)[1].strip() for l in
                    torch.__config__.parallel_info().splitlines() if "parallel backend" in l),
                   "?")
    print(f"PyTorch {torch.__version__} from {os.path.dirname(torch.__file__)}, float32, eager "
          f"torch.nn, torch.optim.AdamW (default: per-tensor loop), intra-op backend {backend}, "
          f"MKL-DNN {'on' if torch.backends.mkldnn.is_available() else 'off'}; {cores} cores; "
          f"median of {a.steps} steps after {a.warmup} warm-up steps, each setting in its own "
          f"process")
    print(HEADER)
    results = []
    for s in settings:
        r = run_setting(s, a)
        results.append((s, r))
        print(row(s.label(), r["fwd"], r["bwd"], r["opt"], r["step"]), flush=True)
    print(f"  BLAS library PyTorch calls: {results[0][1]['blas']}")
    print("  (OpenBLAS default: its own pthreads, one per core, whatever torch's thread count; "
          "OMP passive: OMP_WAIT_POLICY=passive)")
    best_s, best = min(results, key=lambda sr: sr[1]["step"])
    default = results[0][1]
    print(f"  best setting: {best_s.label()}, {BATCH / best['step']:.0f} images/s")

    if a.c_result:
        try:
            c = read_c_result(a.c_result)
            fwd, bwd, opt, step = (float(c[k]) for k in ("forward_s", "backward_s",
                                                           "optimizer_s", "step_s"))
        except (OSError, KeyError, ValueError) as e:
            sys.exit(f"bench_torch_train: {a.c_result}: no C result to compare with ({e})")
        print("\ntraining step, side by side (the same model, batch and optimizer; medians):")
        print(HEADER)
        shards = int(c.get("shards", "1"))
        label = f"C, {c.get('threads', '?')} threads ({c.get('backend', '?')}"
        label += f", {shards} shards)" if shards > 1 else ")"
        print(row(label, fwd, None if shards > 1 else bwd, opt, step))
        print(row(f"PyTorch, {settings[0].label()}", default["fwd"], default["bwd"],
                  default["opt"], default["step"]))
        print(row(f"PyTorch best: {best_s.label()}", best["fwd"], best["bwd"], best["opt"],
                  best["step"]))
        for what, r in ((f"PyTorch at {cores} threads", default), ("PyTorch's best", best)):
            ratio = r["step"] / step
            verdict = "met" if ratio >= 3 else f"missed: {3 / ratio:.2f}x short"
            print(f"  C / {what}: {ratio:.2f}x the images per second (target 3x: {verdict})")


if __name__ == "__main__":
    main()
