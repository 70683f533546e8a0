#!/usr/bin/python3
"""PyTorch goldens for chapter 13 and for local and linear attention.

    tools/gen_golden_ch13.py         writes the three goldens below
    tools/gen_golden_ch13.py --help  this text, then the options every golden script takes

ch13_attention_at_scale: every number chapters/13_attention_at_scale.c pins,
computed again here in float64 under the same name:

  tokens.*         N for ViT-B/16 at 224 … 1024 px
  pos.samples      a (197, 768) position table (tools/vitrng.py's PCG32, seed
                   1313, normal with std 0.02) resampled to each grid as timm's
                   resample_abs_pos_embed does (F.interpolate, bicubic, antialias):
                   four values of the first and of the last patch per size
  matrix.MB, heads.MB, layer.MB, chunked.MB, online.bytes_per_query, linear.bytes
                   the memory figures, from the shapes
  chunked.*, online.max_diff, local.vs_masked, online.row.vs_softmax,
  model.recipe_max_diff
                   differences between two exact computations: 0 here, and a
                   tolerance for the C code's float rounding
  online.row.*     the running max, sum and factor of the worked row, from
                   their definitions (max and sum over the prefix seen so far)
  local.*, linear.*, uniform.*
                   one head's q, k, v (seed 13, normal, N = 4097 rows, Dh = 64;
                   each size uses the first N rows): the weight exact attention
                   puts in the 7 × 7 window, and the relative errors of local
                   attention (a masked softmax here), of linear attention
                   (the formula) and of the plain mean of V
  model.*          the trained Fashion-MNIST model (tools/ref_vit.py, float64) on
                   the first 100 test images, every layer's attention exact,
                   local (radius 1 and 2, [cls] global; radius 2 with [cls]
                   reading only the centre 5 × 5 patches) or linear: how many are
                   right, and how many agree with the model's own prediction;
                   model.cls_reach, the 5 × 5 window's right answers less those of
                   the same window with [cls] local too
  looks.*          where the same model's exact attention looks on those images,
                   per layer and head, averaged over the 49 patch queries: the
                   share on [cls], the share within the 3 × 3 and 5 × 5 windows
                   ([cls] included), the mean Euclidean distance in patches to
                   the patches read (each query's patch weights renormalised);
                   looks.uniform the same four for weights 1/N; the heads whose
                   3 × 3 share is at least twice uniform's; the means over heads

ch13_online_softmax: rows of scores for the probes of exercise 13's
online_softmax_block(), each taken in blocks: after each block the running
max, sum and factor c, the block's weights, and torch.softmax of the row.

attention_approx: attention_local(), attention_mask_window() and
attention_linear() on odd shapes (tests/test_attention_approx.c), inputs from
PCG32 as the C test draws them.
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_common import golden, main  # noqa: E402
from gen_golden_ch11 import batch, shipped_model_and_test  # noqa: E402
from vitrng import Rng  # noqa: E402

SIDES = [224, 384, 512, 768, 1024]
PATCH, WIDTH, HEADS, DH, TRAINED_GRID = 16, 768, 12, 64, 14
QUERY_CHUNK, KEY_BLOCK, RADIUS = 64, 128, 3
QKV_SEED, POS_SEED = 13, 1313
MEASURED, BATCH = 100, 100
LOCAL_TIMES = 2  # a head is local when its 3 × 3 window keeps twice uniform's share
ROW = [1.2, -0.3, 2.5, 0.7, 3.1, 0.2, -1.0, 2.9, 0.4, 3.6]
ROW_BLOCK = [4, 4, 2]
EXACT_TOL = (1e-5, 0)
# The smallest gap between a prediction's top two logits we accept. A float32
# forward of the shipped model lands within 3e-6 of the float64 one on these
# 100 images, for every attention below (measured with PyTorch in float32), so a
# gap of 3e-4, a hundred times that, cannot make float32 choose the other class.
MARGIN = 3e-4


def f32(values):
    """Values as the C code's float constants are."""
    return torch.tensor(np.array(values, dtype=np.float32), dtype=torch.float64)


def window_mask(prefix, rows, cols, radius):
    """(N, N) bool: may query i see key j? The prefix sees and is seen by all."""
    n = prefix + rows * cols
    y = torch.arange(rows).repeat_interleave(cols)
    x = torch.arange(cols).repeat(rows)
    near = ((y[:, None] - y[None, :]).abs() <= radius) & ((x[:, None] - x[None, :]).abs() <= radius)
    keep = torch.ones(n, n, dtype=torch.bool)
    keep[prefix:, prefix:] = near
    return keep


def exact_probs(q, k, scale, keep=None, pad=None):
    """softmax(scale·q·kᵀ + masks) over the last axis; keep/pad hide with -inf."""
    s = scale * (q @ k.transpose(-2, -1))
    if keep is not None:
        s = s.masked_fill(~keep, float("-inf"))
    if pad is not None:
        s = s + pad[..., None, :]
    p = torch.softmax(s, dim=-1)
    return torch.nan_to_num(p, nan=0.0) if (keep is not None or pad is not None) else p


def linear_attention(q, k, v, pad=None):
    """φ(Q)(φ(K)ᵀV) / φ(Q)(φ(K)ᵀ1), φ = elu + 1; a padded key left out."""
    fq, fk = F.elu(q) + 1, F.elu(k) + 1
    if pad is not None:
        fk = fk * (pad[..., :, None] != float("-inf"))
    kv = fk.transpose(-2, -1) @ v
    z = fk.sum(-2)
    den = (fq * z[..., None, :]).sum(-1, keepdim=True)
    out = (fq @ kv) / den
    return torch.where(den > 0, out, torch.zeros_like(out))


def rel_error(a, e):
    return float(torch.linalg.norm(a - e) / torch.linalg.norm(e))


def resample(pos, old, new):
    """timm's resample_abs_pos_embed with one prefix token."""
    D = pos.shape[-1]
    grid = pos[1:].reshape(1, old, old, D).permute(0, 3, 1, 2)
    grid = F.interpolate(grid, size=(new, new), mode="bicubic", antialias=True, align_corners=False)
    return torch.cat([pos[:1], grid.permute(0, 2, 3, 1).reshape(-1, D)])


def online_row(scores, blocks):
    """After each block: the running max, sum and factor, by their definitions, and the weights."""
    s = torch.tensor(scores, dtype=torch.float64)
    maxes, sums, cs, weights = [], [], [], []
    before, end = float("-inf"), 0
    broken = False
    for n in blocks:
        seen, block = s[:end + n], s[end:end + n]
        broken = broken or bool(torch.isnan(seen).any() or (seen == float("inf")).any())
        if broken:
            m, l, c, w = math.nan, math.nan, math.nan, torch.full((n,), math.nan)
        else:
            m = float(seen.max())
            if m == float("-inf"):
                l, c, w = 0.0, 1.0, torch.zeros(n)
            else:
                l = float(torch.exp(seen - m).sum())
                c = math.exp(before - m)
                w = torch.exp(block - m)
            before = m
        maxes.append(m), sums.append(l), cs.append(c), weights.append(w)
        end += n
    t = lambda v: torch.tensor(v, dtype=torch.float64)  # noqa: E731
    return t(maxes), t(sums), t(cs), torch.cat(weights)


# ------------------------------------------------------------ the chapter


def qkv_head(n):
    rng = Rng(QKV_SEED)
    q, k, v = (torch.from_numpy(rng.fill_normal(n * DH)).double().reshape(n, DH) for _ in range(3))
    return q, k, v


def scale_pins(g, tol):
    tokens = [(s // PATCH) ** 2 + 1 for s in SIDES]
    for s, n in zip(SIDES, tokens):
        g[f"tokens.{s}"] = torch.tensor(float(n))
    pos = torch.from_numpy(Rng(POS_SEED).fill_normal((TRAINED_GRID ** 2 + 1) * WIDTH, 0, 0.02))
    pos = pos.double().reshape(-1, WIDTH)
    samples = []
    for s in SIDES:
        r = resample(pos, TRAINED_GRID, s // PATCH)
        samples += [r[1, :4], r[-1, :4]]
    g["pos.samples"] = torch.cat(samples)
    n = torch.tensor(tokens, dtype=torch.float64)
    g["matrix.MB"] = 4 * n * n / 1e6
    g["heads.MB"] = 4 * HEADS * n * n / 1e6  # one (N, N) matrix per head, every head at once
    g["layer.MB"] = 4 * (6 * n * WIDTH + 3 * HEADS * n * n) / 1e6  # flat, q, k, v, heads, context; 3 N×N
    g["chunked.MB"] = 4 * QUERY_CHUNK * n / 1e6
    g["online.bytes_per_query"] = torch.tensor(4.0 * (KEY_BLOCK + DH + 2))
    g["linear.bytes"] = torch.tensor(8.0 * (DH * DH + DH))
    g["local.keys"] = torch.tensor(1.0 + (2 * RADIUS + 1) ** 2)
    for name in ("chunked.max_diff", "online.max_diff"):
        g[name] = torch.zeros(len(SIDES))
        tol[name] = EXACT_TOL
    g["local.vs_masked"] = torch.tensor(0.0)
    tol["local.vs_masked"] = EXACT_TOL
    # the worked row
    m, l, c, _ = online_row(f32(ROW).tolist(), ROW_BLOCK)
    g["online.row.max"], g["online.row.sum"], g["online.row.c"] = m, l, c
    g["online.row.probs"] = torch.softmax(f32(ROW), 0)
    g["online.row.vs_softmax"] = torch.tensor(0.0)
    tol["online.row.vs_softmax"] = (1e-6, 0)
    # one head at every size
    q, k, v = qkv_head(tokens[-1])
    kept, local, linear, uniform = [], [], [], []
    for s, n in zip(SIDES, tokens):
        grid = s // PATCH
        qn, kn, vn = q[:n], k[:n], v[:n]
        p = exact_probs(qn, kn, DH ** -0.5)
        exact = p @ vn
        keep = window_mask(1, grid, grid, RADIUS)
        kept.append(float((p * keep).sum() / n))
        local.append(rel_error(exact_probs(qn, kn, DH ** -0.5, keep) @ vn, exact))
        linear.append(rel_error(linear_attention(qn, kn, vn), exact))
        uniform.append(rel_error(vn.mean(0, keepdim=True).expand(n, DH), exact))
        del p, keep
    g["local.kept"] = torch.tensor(kept)
    g["local.rel_error"] = torch.tensor(local)
    g["linear.rel_error"] = torch.tensor(linear)
    g["uniform.rel_error"] = torch.tensor(uniform)
    for name in ("local.kept", "local.rel_error", "linear.rel_error", "uniform.rel_error"):
        tol[name] = (1e-5, 1e-3)


def swapped_forward(model, x, attend):
    """RefViT's forward with every block's attention computed by attend(q, k, v)."""
    B = x.shape[0]
    t = model.patch_embed(x).flatten(2).transpose(1, 2)
    t = torch.cat((model.cls_token.expand(B, -1, -1), t), dim=1) + model.pos_embed
    for blk in model.blocks:
        h = blk.norm1(t)
        N, D = h.shape[1], h.shape[2]
        H = blk.attn.heads
        q, k, v = blk.attn.qkv(h).reshape(B, N, 3, H, D // H).permute(2, 0, 3, 1, 4).unbind(0)
        ctx = attend(q, k, v).transpose(1, 2).reshape(B, N, D)
        t = t + blk.attn.proj(ctx)
        t = t + blk.fc2(F.gelu(blk.fc1(blk.norm2(t))))
    return model.head(model.norm(t)[:, 0])


def reach(p, side):
    """p (..., N, N), [cls] first: over the patch queries, the mean share on [cls],
    within Chebyshev distance 1 and 2 ([cls] included), and the mean Euclidean
    distance to the patches read, each query's patch weights renormalised."""
    y = torch.arange(side).repeat_interleave(side)
    x = torch.arange(side).repeat(side)
    dy, dx = (y[:, None] - y[None, :]).abs(), (x[:, None] - x[None, :]).abs()
    chebyshev = torch.maximum(dy, dx)
    euclid = torch.sqrt((dy ** 2 + dx ** 2).double())
    queries = p[..., 1:, :]                       # the patch queries' rows
    on_cls, on_patches = queries[..., 0], queries[..., 1:]
    within = lambda r: on_cls + (on_patches * (chebyshev <= r)).sum(-1)  # noqa: E731
    distance = (on_patches * euclid).sum(-1) / on_patches.sum(-1)
    return [t.mean(-1) for t in (on_cls, within(1), within(2), distance)]


def looks_pins(g, tol, probs, side):
    """probs: per layer, (images, H, N, N) of exact attention."""
    per_layer = [torch.stack(reach(p, side)).mean(1) for p in probs]  # each (4, H): mean over images
    cls, w3, w5, dist = torch.stack(per_layer, 1)                    # each (L, H)
    n = side * side + 1
    uniform = torch.stack(reach(torch.full((n, n), 1.0 / n, dtype=torch.float64), side))
    g["looks.cls"], g["looks.window3"] = cls.flatten(), w3.flatten()
    g["looks.window5"], g["looks.distance"] = w5.flatten(), dist.flatten()
    g["looks.uniform"] = uniform
    g["looks.local_heads"] = torch.tensor(float((w3 >= LOCAL_TIMES * uniform[1]).sum()))
    g["looks.window3_mean"] = w3.mean()
    g["looks.window5_mean"] = w5.mean()
    for name in ("looks.cls", "looks.window3", "looks.window5", "looks.distance", "looks.uniform",
                 "looks.window3_mean", "looks.window5_mean"):
        tol[name] = (1e-5, 1e-4)


def model_pins(g, tol):
    torch.set_num_threads(1)
    model, table, test_x, test_y = shipped_model_and_test()
    side = int(model.pos_embed.shape[1] - 1) ** 0.5
    side = int(round(side))
    scale = model.blocks[0].attn.scale

    recorded = []  # exact attention's probabilities, layer after layer, when recording

    def exact(q, k, v):
        p = exact_probs(q, k, scale)
        recorded.append(p)
        return p @ v

    def local(r):
        keep = window_mask(1, side, side, r)
        return lambda q, k, v: exact_probs(q, k, scale, keep) @ v

    def cls_local_too(r):
        """radius r, and [cls] reads only itself and the patches within r of the grid's centre."""
        keep = window_mask(1, side, side, r)
        y, x = torch.arange(side).repeat_interleave(side), torch.arange(side).repeat(side)
        centre = side // 2
        keep[0, 1:] = ((y - centre).abs() <= r) & ((x - centre).abs() <= r)
        return lambda q, k, v: exact_probs(q, k, scale, keep) @ v

    attends = [exact, local(1), local(2), cls_local_too(2),
               lambda q, k, v: linear_attention(q, k, v)]
    right, agree = np.zeros(len(attends)), np.zeros(len(attends))
    right_model, narrowest = 0, math.inf
    for first in range(0, MEASURED, BATCH):
        idx = list(range(first, first + BATCH))
        x = torch.from_numpy(batch(test_x, idx, table)).double()
        y = torch.from_numpy(test_y[idx])
        with torch.no_grad():
            ref = model(x)
        pred = ref.argmax(-1)
        right_model += int((pred == y).sum())
        for a, attend in enumerate(attends):
            with torch.no_grad():
                z = swapped_forward(model, x, attend)
            if a == 0:  # exact: one (B, H, N, N) per layer
                probs = [torch.cat(pair) for pair in zip(probs, recorded)] if first else recorded[:]
                recorded.clear()
            top2 = z.topk(2, dim=-1).values
            narrowest = min(narrowest, float((top2[:, 0] - top2[:, 1]).min()))
            right[a] += int((z.argmax(-1) == y).sum())
            agree[a] += int((z.argmax(-1) == pred).sum())
    if narrowest < MARGIN:
        raise SystemExit(f"gen_golden_ch13: two logits only {narrowest:.3g} apart: float32 "
                         "could choose the other class")
    looks_pins(g, tol, probs, side)
    g["model.right"] = torch.tensor(float(right_model))
    g["model.with.right"] = torch.tensor(right)
    g["model.with.agree"] = torch.tensor(agree)
    g["model.cls_reach"] = torch.tensor(right[2] - right[3])  # the 5 × 5 window, [cls] global or not
    g["model.recipe_max_diff"] = torch.tensor(0.0)
    tol["model.recipe_max_diff"] = (1e-4, 0)


@golden
def ch13_attention_at_scale():
    g, tol = {}, {}
    scale_pins(g, tol)
    model_pins(g, tol)
    g = {k: v.float().contiguous() for k, v in g.items()}
    extra = {"model": "data/models/vit-fashion.safetensors", "measured": str(MEASURED),
             "reference": "float64; tools/ref_vit.py for the model"}
    return g, tol, extra


# ------------------------------------------------------ the probes' rows

NAN, INF = math.nan, math.inf
PROBE_ROWS = {
    # the maximum rises in every block: every c below 1
    "rising": ([0.5, -1.0, 1.5, 2.0, 0.0, 2.5, -0.5, 1.0, 4.0, 3.5, 0.25, -2.0], [3, 4, 5]),
    # the maximum is in the first block: later blocks leave it, c = 1
    "falling": ([1.0, 5.0, 2.0, -1.0, 3.0, 0.5, 4.5, -3.0, 2.5, 1.5], [4, 3, 3]),
    # nothing visible in the first block, then some of the second
    "hidden": ([-INF, -INF, -INF, -INF, 0.75, -INF, 2.0, -1.0], [3, 3, 2]),
    # around 1000: e^1000 overflows float
    "huge": ([1000.0, 999.0, 1001.5, 998.0, 1000.5], [2, 3]),
    # a NaN in the second block: from there on, everything NaN
    "nan": ([0.5, 1.0, NAN, 0.2, 3.0, 1.0], [2, 2, 2]),
    # +inf is no number either
    "inf": ([1.0, 2.0, INF, 0.0, 1.0, 1.0], [2, 2, 2]),
    # one score at a time, the maximum moving up and down
    "single": ([0.3, 1.1, -0.4, 2.2, 2.2, 0.9, 3.0, -1.5, 2.9], [1] * 9),
}


@golden
def ch13_online_softmax():
    g = {}
    for name, (scores, blocks) in PROBE_ROWS.items():
        s = f32(scores)
        m, l, c, w = online_row(s.tolist(), blocks)
        g[f"{name}.scores"] = s
        g[f"{name}.blocks"] = torch.tensor([float(b) for b in blocks])
        g[f"{name}.max"], g[f"{name}.sum"], g[f"{name}.c"], g[f"{name}.weights"] = m, l, c, w
        g[f"{name}.probs"] = torch.softmax(s, 0)
    return {k: v.float().contiguous() for k, v in g.items()}


# ------------------------------------------------- local and linear, odd shapes

# name: (B, H, prefix, rows, cols, Dh, radius, scale, seed, padded keys of the last sequence)
LOCAL_CASES = {
    "grid": (2, 3, 1, 3, 5, 7, 1, 0.3, 31, 4),
    "radius0": (1, 2, 1, 4, 4, 1, 0, 0.0, 32, 0),
    "everything": (1, 1, 0, 1, 11, 4, 20, 0.0, 33, 0),
    "band": (2, 1, 0, 1, 13, 3, 2, 0.0, 34, 3),
    "prefix2": (1, 2, 2, 4, 3, 5, 1, 0.0, 35, 0),
}
# name: (B, H, N, Dh, seed, padded keys of the last sequence)
LINEAR_CASES = {
    "odd": (2, 2, 13, 5, 41, 4),
    "one": (1, 1, 1, 3, 42, 0),
    "dh1": (1, 2, 37, 1, 43, 0),
    "wide": (1, 1, 50, 16, 44, 0),
}


def draw(seed, *shape):
    """q, k, v as the C test draws them: rng_fill_normal (0, 1.5) three times, one stream."""
    rng = Rng(seed)
    n = int(np.prod(shape))
    return [torch.from_numpy(rng.fill_normal(n, 0, 1.5)).double().reshape(shape) for _ in range(3)]


def padding(B, N, hidden):
    """(B, N): the last sequence's last `hidden` keys -inf."""
    pad = torch.zeros(B, N, dtype=torch.float64)
    if hidden:
        pad[-1, N - hidden:] = float("-inf")
    return pad


@golden
def attention_approx():
    g = {}
    for name, (B, H, prefix, rows, cols, Dh, r, scale, seed, hidden) in LOCAL_CASES.items():
        N = prefix + rows * cols
        q, k, v = draw(seed, B, H, N, Dh)
        keep = window_mask(prefix, rows, cols, r)
        pad = padding(B, N, hidden)[:, None] if hidden else None
        s = scale if scale else Dh ** -0.5
        if name == "band":  # with a causal mask too: the band's lower half
            keep = keep & torch.tril(torch.ones(N, N, dtype=torch.bool))
        g[f"local.{name}"] = exact_probs(q, k, s, keep, pad) @ v
    g["mask.window"] = torch.where(window_mask(1, 3, 4, 1), 0.0, float("-inf"))
    for name, (B, H, N, Dh, seed, hidden) in LINEAR_CASES.items():
        q, k, v = draw(seed, B, H, N, Dh)
        pad = padding(B, N, hidden)[:, None] if hidden else None
        g[f"linear.{name}"] = linear_attention(q, k, v, pad)
    return {k: v.float().contiguous() for k, v in g.items()}


if __name__ == "__main__":
    sys.exit(main(__doc__))
