#!/usr/bin/python3
"""PyTorch goldens for the model: the whole trace of a small ViT, per-stage
statistics of ViT-Base/16, and the pieces (attention, heads, patch embedding).

    tools/gen_golden_vit.py                        write every golden below
    tools/gen_golden_vit.py vit_small attn_pieces  only some of them
    tools/gen_golden_vit.py --help                 this text, then the options every
                                                   golden script takes

Writes, into tests/golden/:
  vit_small.safetensors   every trace tensor, in full, of a small ViT
                          (S 32, p 8, D 64, H 4, L 2, M 256, Y 10) on a batch of 2
  vit_base_stats.safetensors
                          ViT-B/16 (S 224, p 16, D 768, H 12, L 12, Y 1000): for
                          each of the 187 trace stages its shape, mean, std, L2
                          norm, min, max and 8 elements at stored flat indices
  attn_pieces.safetensors one attention head with and without masks, heads
                          split/merge, multi-head attention (torch's own
                          nn.MultiheadAttention)
  patch_pieces.safetensors
                          F.unfold patches and an nn.Conv2d patch embedding

Where the numbers come from:
  * Weights: the C side draws them with vit_build_random() (PCG32, one stream
    per tensor) and the tests rebuild the same model in-process. Python cannot
    redraw 86 M numbers quickly, so this script asks the C program to write
    them to a file first:
        build/vit make-weights --dim 64 --depth 2 --heads 4 --mlp-dim 256 \\
            --img 32 --patch 8 --classes 10 --seed 7 --std 0.2 \\
            --bias-std 0.02 --norm-std 0.1 --out /tmp/vit_small.safetensors
    (see SMALL and BASE below for the exact flags; set VIT_BIN to use another
    binary with the same flags). Only the parameters come from C: they are
    inputs, like an image. Every expected value is computed here by
    tools/ref_vit.py, an independent PyTorch ViT.
  * Images: PCG32 uniform in [-1, 1), rebuilt bit for bit by vitrng.py.
  * The reference runs in float64, so a golden holds the exact answer rounded
    to float32 and a test's difference is the C code's own float32 error.

Run with /usr/bin/python3 (Debian's python3-torch). Tests never need Python.
"""
import math
import os
import subprocess
import sys
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_common import ROOT, golden, main  # noqa: E402
from ref_vit import RefViT  # noqa: E402
from vitrng import Rng  # noqa: E402

# The two models. tests/test_vit.c repeats these numbers and checks them against
# the "config" metadata, so the C side cannot silently test another model.
#
# Small: weight std 0.2 (ten times timm's) so that attention is far from
# uniform and the MLP is far from linear; biases and LayerNorm scale/shift are
# perturbed (0.02, 0.1) so that each of them changes the answer.
SMALL = dict(img=32, patch=8, dim=64, depth=2, heads=4, mlp_dim=256, classes=10,
             seed=7, std=0.2, bias_std=0.02, norm_std=0.1, batch=2, input_seed=11)
# ViT-B: timm's weight std 0.02, the scale of `vit make-weights --arch
# vit-base` and of a real checkpoint's early training, so values stay in the
# range the float32 kernels meet in practice (scaled scores +-1.6, attention
# 0.001-0.02 around 1/197: mild, not uniform). The sharp-attention semantics
# are the small model's job; this one pins the big GEMM paths, 12 heads and 12
# blocks. Biases and LayerNorms get the small model's perturbation, because
# with timm's zeros and ones every bias add and every LayerNorm scale/shift of
# the full-size paths would go unobserved.
BASE = dict(arch="vit-base", img=224, patch=16, dim=768, depth=12, heads=12, mlp_dim=3072,
            classes=1000, seed=5, std=0.02, bias_std=0.02, norm_std=0.1, batch=1, input_seed=12)

BASE_SAMPLES = 8  # sampled elements per ViT-B stage


def config_string(c):
    """The one-line description stored as metadata "config" (test_vit.c compares it)."""
    return ("img=%d patch=%d dim=%d depth=%d heads=%d mlp_dim=%d classes=%d seed=%d std=%g "
            "bias_std=%g norm_std=%g batch=%d input_seed=%d" %
            (c["img"], c["patch"], c["dim"], c["depth"], c["heads"], c["mlp_dim"], c["classes"],
             c["seed"], c["std"], c["bias_std"], c["norm_std"], c["batch"], c["input_seed"]))


def make_weights(c, path):
    """Have the C program (vit make-weights) draw the parameters into a timm-named file."""
    program = os.environ.get("VIT_BIN", os.path.join(ROOT, "build", "vit"))
    cmd = [program, "make-weights"]
    if "arch" in c:
        cmd += ["--arch", c["arch"]]
    cmd += ["--dim", c["dim"], "--depth", c["depth"], "--heads", c["heads"],
            "--mlp-dim", c["mlp_dim"], "--img", c["img"], "--patch", c["patch"],
            "--classes", c["classes"], "--seed", c["seed"], "--std", c["std"],
            "--bias-std", c["bias_std"], "--norm-std", c["norm_std"], "--out", path]
    cmd = [str(a) for a in cmd]
    if not os.access(program, os.X_OK):
        sys.exit("gen_golden_vit.py: %s not found: run `make` first (or set VIT_BIN)" % program)
    print("  $", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True)


def load_model(c):
    """tools/ref_vit.py's RefViT, in float64, holding the C program's weights for config c."""
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "weights.safetensors")
        make_weights(c, path)
        model = RefViT.from_safetensors(path).double()
    assert model.head.weight.shape == (c["classes"], c["dim"]), "weights file has another shape"
    assert len(model.blocks) == c["depth"] and model.blocks[0].attn.heads == c["heads"]
    return model


def image_batch(c):
    """(B, 3, S, S) uniform in [-1, 1): rng_fill_uniform(seed input_seed) in lib/base/rng.h."""
    shape = (c["batch"], 3, c["img"], c["img"])
    values = Rng(c["input_seed"]).fill_uniform(math.prod(shape), -1.0, 1.0)
    return torch.from_numpy(values).reshape(shape)


def rms(t):
    return float(t.double().pow(2).mean().sqrt())


# ---------------------------------------------------------------- small ViT

# Tolerance of the small model, per stage: |c - ref| <= atol + rtol |ref| with
# atol = SMALL_ATOL x rms(ref). Against this float64 reference the float32 C
# forward pass is off by 1e-6 to 7e-6 x rms in every stage (weights ten times
# timm's make the scores reach +-20), and by up to 2e-5 x rms in the attention
# probabilities, whose rms is small next to their largest entries (there the
# rtol term covers it). 1e-4 leaves a margin of about 10 for other BLAS
# kernels, thread counts and compilers, while any real mistake (a wrong index,
# a missing bias, a transposed weight) is off by about 1 x rms.
SMALL_ATOL = 1e-4
SMALL_RTOL = 1e-4


@golden
def vit_small():
    """Every trace tensor of the small ViT, in full, each with its own tolerance."""
    c = SMALL
    model = load_model(c)
    x = image_batch(c)
    trace = model.trace(x.double())
    tensors = {name: t.float() for name, t in trace.items()}
    tol = {name: (SMALL_ATOL * rms(t), SMALL_RTOL) for name, t in trace.items()}
    meta = {"config": config_string(c), "reference": "tools/ref_vit.py in float64"}
    return tensors, tol, meta


# ------------------------------------------------------------------ ViT-B/16

def sample_indices(row, n):
    """First, last and 6 pseudo-random flat indices (PCG32 seeded by the row)."""
    r = Rng(1000 + row)
    middle = [r.u32() % n for _ in range(BASE_SAMPLES - 2)]
    return [0] + middle + [n - 1]


@golden
def vit_base_stats():
    """ViT-B/16: per trace stage its shape, 5 statistics and 8 sampled elements."""
    c = BASE
    model = load_model(c)
    x = image_batch(c)
    trace = model.trace(x.double())
    names = list(trace)
    rows = len(names)
    shape = torch.zeros(rows, 4, dtype=torch.int64)
    stats = torch.zeros(rows, 5, dtype=torch.float64)
    index = torch.zeros(rows, BASE_SAMPLES, dtype=torch.int64)
    value = torch.zeros(rows, BASE_SAMPLES, dtype=torch.float64)
    for i, name in enumerate(names):
        t = trace[name]
        shape[i, :t.dim()] = torch.tensor(t.shape)
        flat = t.reshape(-1)
        stats[i] = torch.stack([flat.mean(), flat.std(unbiased=False), flat.norm(), flat.min(),
                                flat.max()])
        index[i] = torch.tensor(sample_indices(i, flat.numel()))
        value[i] = flat[index[i]]
    meta = {"config": config_string(c), "reference": "tools/ref_vit.py in float64",
            "stages": ",".join(names),
            "columns.stats": "mean,std,l2,min,max"}
    tensors = {"shape": shape, "stats": stats, "index": index, "value": value}
    return tensors, {}, meta


# -------------------------------------------------------------- the pieces

def normal(r, *shape, std=1.0):
    return torch.from_numpy(r.fill_normal(math.prod(shape), 0.0, std)).reshape(shape)


def one_head(q, k, v, mask):
    """softmax(Q Kᵀ / √Dh + mask) V by the textbook, in float64."""
    scaled = q.double() @ k.double().T / math.sqrt(q.shape[-1])
    if mask is not None:
        scaled = scaled + mask.double()
    probs = torch.softmax(scaled, dim=-1)
    return probs @ v.double(), probs


@golden
def attn_pieces():
    """One head with and without masks, heads split, nn.MultiheadAttention."""
    g = {}
    # one head: N 7 tokens, Dh 5 (seed 21); scaled so softmax is peaked
    N, Dh = 7, 5
    r = Rng(21)
    q, k, v = normal(r, N, Dh, std=2.0), normal(r, N, Dh, std=2.0), normal(r, N, Dh)
    g["head.q"], g["head.k"], g["head.v"] = q, k, v
    # a padding mask (the last 2 keys are padding) and a causal one (j > i hidden)
    pad = torch.zeros(N, N)
    pad[:, N - 2:] = float("-inf")
    causal = torch.triu(torch.full((N, N), float("-inf")), diagonal=1)
    g["head.mask_pad"], g["head.mask_causal"] = pad, causal
    for label, mask in (("plain", None), ("pad", pad), ("causal", causal)):
        out, probs = one_head(q, k, v, mask)
        g["head.%s.out" % label] = out.float()
        g["head.%s.probs" % label] = probs.float()

    # heads split and merge: x (B 2, N 5, D 12) with H 3, Dh 4 (seed 22)
    B, N, H, Dh = 2, 5, 3, 4
    x = normal(Rng(22), B, N, H * Dh)
    g["heads.x"] = x
    g["heads.split"] = x.reshape(B, N, H, Dh).permute(0, 2, 1, 3).contiguous()

    # multi-head attention by torch's own nn.MultiheadAttention, whose in_proj
    # is the fused (3D, D) [W_q; W_k; W_v] that timm calls qkv (seed 23)
    B, N, D, H = 2, 6, 12, 3
    r = Rng(23)
    x = normal(r, B, N, D)
    qkv_w, qkv_b = normal(r, 3 * D, D, std=0.5), normal(r, 3 * D, std=0.1)
    proj_w, proj_b = normal(r, D, D, std=0.5), normal(r, D, std=0.1)
    mha = nn.MultiheadAttention(D, H, batch_first=True).double().eval()
    with torch.no_grad():
        mha.in_proj_weight.copy_(qkv_w)
        mha.in_proj_bias.copy_(qkv_b)
        mha.out_proj.weight.copy_(proj_w)
        mha.out_proj.bias.copy_(proj_b)
        g["mha.x"], g["mha.qkv_w"], g["mha.qkv_b"] = x, qkv_w, qkv_b
        g["mha.proj_w"], g["mha.proj_b"] = proj_w, proj_b
        causal = torch.triu(torch.full((N, N), float("-inf")), diagonal=1)
        g["mha.mask_causal"] = causal
        for label, mask in (("plain", None), ("causal", causal)):
            xd = x.double()
            out, probs = mha(xd, xd, xd, attn_mask=None if mask is None else mask.double(),
                             need_weights=True, average_attn_weights=False)
            g["mha.%s.out" % label] = out.float()       # (B, N, D)
            g["mha.%s.probs" % label] = probs.float()   # (B, H, N, N)
    return g


@golden
def patch_pieces():
    """F.unfold patches and an nn.Conv2d patch embedding of 2 small images."""
    g = {}
    # 2 images 3 x 12 x 12, patch 4 (9 patches), D 5 (seed 31)
    B, C, S, p, D = 2, 3, 12, 4, 5
    r = Rng(31)
    img = torch.from_numpy(r.fill_uniform(B * C * S * S, -1.0, 1.0)).reshape(B, C, S, S)
    w, b = normal(r, D, C, p, p, std=0.3), normal(r, D, std=0.1)
    g["img"], g["w"], g["b"] = img, w, b
    # what patch_unfold promises: F.unfold(img, p, stride=p).transpose(1, 2)
    g["patches"] = F.unfold(img, p, stride=p).transpose(1, 2).contiguous()
    conv = nn.Conv2d(C, D, kernel_size=p, stride=p).double()
    with torch.no_grad():
        conv.weight.copy_(w)
        conv.bias.copy_(b)
        out = conv(img.double()).flatten(2).transpose(1, 2)  # timm's PatchEmbed
    g["embed"] = out.float().contiguous()
    return g


if __name__ == "__main__":
    sys.exit(main(__doc__))
