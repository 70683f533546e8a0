#!/usr/bin/python3
"""PyTorch goldens for the CUnit suites: tests/golden/NAME.safetensors.

    tools/gen_golden.py              regenerate every golden
    tools/gen_golden.py NAME...      regenerate only these, e.g. ch03_softmax
    tools/gen_golden.py --list       print the names
    tools/gen_golden.py --out-dir D  write into D instead of tests/golden

Each golden file is made by one function below, registered with @golden under
its own name (tools/golden_common.py holds the registry, write() and the
command line that every golden script shares). A function returns {pinned name: tensor}, or a pair
({pinned name: tensor}, {pinned name: (atol, rtol)}) when some value needs a
tolerance other than the checker's default; that becomes the metadata entry
"tol.NAME" = "ATOL RTOL" read by tests/check.c.

The rules:
  * Inputs are rebuilt from the same seeds with tools/vitrng.py, which
    reproduces lib/base/rng.c bit for bit, so both sides see identical numbers.
  * Expected values are computed here with torch ops (torch.dot,
    torch.matmul, torch.softmax, torch.var, ...), never copied from the C code.
  * Every value a chapter pins must appear here under the same name, and
    nothing else: the checker fails on values produced but not pinned, and on
    values pinned but never produced.
  * Keep files small: pin statistics and samples of big tensors, not the tensors.

Run with /usr/bin/python3 (Debian's python3-torch). Tests never need Python.
"""
import functools
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import golden_common  # noqa: E402
from vitrng import Rng  # noqa: E402



def golden(fn):
    """Register fn with golden_common, its tensors stored as float32 like every chapter pin."""
    @functools.wraps(fn)
    def as_float32():
        result = fn()
        parts = list(result) if isinstance(result, tuple) else [result]
        parts[0] = {k: f32(v).contiguous() for k, v in parts[0].items()}
        return tuple(parts) if len(parts) > 1 else parts[0]
    return golden_common.golden(as_float32)


def f32(x):
    """A float32 tensor from a number, list or tensor (0-d for a plain number)."""
    return torch.as_tensor(x, dtype=torch.float32) if not torch.is_tensor(x) else x.float()


def normal(rng, *shape):
    """rng_fill_normal(rng, x, numel, 0, 1) from lib/base/rng.h, as a float32 tensor."""
    n = math.prod(shape)
    return torch.from_numpy(rng.fill_normal(n, 0.0, 1.0)).reshape(shape)


# --------------------------------------------------------------- chapter 01

@golden
def ch01_dot_product():
    """chapters/01_dot_product.c: dot products, lengths, angles, a matmul, Q·Kᵀ."""
    g = {}
    a = f32([1, 2, 3])
    b = f32([4, -5, 6])
    g["a"], g["b"] = a, b
    g["dot_a_b"] = torch.dot(a, b)

    # Geometry in float64, as the chapter computes it, then stored as float32.
    def length(v):
        return torch.linalg.norm(v.double())

    def cosine(u, v):
        return (torch.dot(u.double(), v.double()) / (length(u) * length(v))).clamp(-1, 1)

    def angle(u, v):
        return torch.rad2deg(torch.acos(cosine(u, v)))

    g["norm_a"], g["norm_b"] = length(a), length(b)
    g["cos_a_b"], g["angle_a_b"] = cosine(a, b), angle(a, b)
    partners = {"twice_a": 2 * a, "c": f32([3, 0, -1]), "neg_a": -a}
    for key, v in partners.items():
        g[f"dot_a_{key}"] = torch.dot(a, v)
        g[f"cos_a_{key}"] = cosine(a, v)
        g[f"angle_a_{key}"] = angle(a, v)

    A = f32([[1, 2, 3], [4, 5, 6]])
    B = f32([[1, 0], [0, 1], [1, -1]])
    g["A"], g["B"], g["C"] = A, B, torch.matmul(A, B)
    g["c10_by_dot"] = torch.dot(A[1], B[:, 0])

    rng = Rng(1)                   # QK_SEED: Q first, then K
    Q, K = normal(rng, 4, 8), normal(rng, 4, 8)
    scores = torch.matmul(Q, K.T)
    g["Q"], g["K"], g["scores"] = Q, K, scores
    g["score_2_1_by_dot"] = torch.dot(Q[2], K[1])
    best_score, best_key = scores.max(dim=1)
    g["best_key"], g["best_score"] = best_key, best_score
    return g


# --------------------------------------------------------------- chapter 02

@golden
def ch02_scaling():
    """chapters/02_scaling.c: variance of q·k against the head width Dh, softmax
    saturation, and the scores of a freshly initialised ViT layer."""
    g = {}
    queries = keys = 1024
    row_keys = 8
    rng = Rng(2)                   # one stream: Q then K for each width in turn
    rows = {}
    for dh in (4, 16, 64, 256, 768):
        Q, K = normal(rng, queries, dh), normal(rng, keys, dh)
        scores = torch.matmul(Q, K.T)
        scaled = scores / math.sqrt(dh)
        g[f"mean_dh{dh}"] = scores.double().mean()  # float64 sums: the C side uses double too
        g[f"var_dh{dh}"] = torch.var(scores, unbiased=False)
        g[f"std_dh{dh}"] = torch.std(scores, unbiased=False)
        g[f"var_scaled_dh{dh}"] = torch.var(scaled, unbiased=False)
        rows[dh] = (scores[0, :row_keys], scaled[0, :row_keys])
        if dh == 768:
            g["var_over_dh_dh768"] = torch.var(scores / dh, unbiased=False)

    g["entropy_uniform"] = torch.log(f32(row_keys))

    def entropy(p):
        return torch.special.entr(p).sum()  # -p ln p, with 0 ln 0 = 0

    for dh, (row, row_scaled) in rows.items():
        p_raw, p_scaled = torch.softmax(row, dim=0), torch.softmax(row_scaled, dim=0)
        g[f"max_prob_raw_dh{dh}"] = p_raw.max()
        g[f"entropy_raw_dh{dh}"] = entropy(p_raw)
        g[f"max_prob_scaled_dh{dh}"] = p_scaled.max()
        g[f"entropy_scaled_dh{dh}"] = entropy(p_scaled)
        if dh == 768:
            g["row_dh768"], g["row_scaled_dh768"] = row, row_scaled
            g["probs_raw_dh768"], g["probs_scaled_dh768"] = p_raw, p_scaled

    # Section 4: LayerNorm'd tokens through fresh weights (truncated normal,
    # std 0.02, cut at +-2, as lib's vit_build_random() draws every weight).
    N, D, std = 197, 768, 0.02
    rng = Rng(22)                  # tokens, then W_q, W_k for each head width
    x = F.layer_norm(normal(rng, N, D), (D,), eps=1e-6)
    g["fresh_predicted_var"] = f32(D * std ** 2)
    for dh in (16, 64, 256):
        w_q = torch.from_numpy(rng.fill_trunc_normal(dh * D, 0.0, std, -2.0, 2.0)).reshape(dh, D)
        w_k = torch.from_numpy(rng.fill_trunc_normal(dh * D, 0.0, std, -2.0, 2.0)).reshape(dh, D)
        q, k = F.linear(x, w_q), F.linear(x, w_k)
        scores = q @ k.T
        scaled = scores * dh ** -0.5
        g[f"fresh_var_q_dh{dh}"] = torch.var(q.double(), unbiased=False)
        g[f"fresh_var_k_dh{dh}"] = torch.var(k.double(), unbiased=False)
        g[f"fresh_var_scores_dh{dh}"] = torch.var(scores.double(), unbiased=False)
        g[f"fresh_std_scaled_dh{dh}"] = torch.std(scaled.double(), unbiased=False)
        g[f"fresh_mean_max_prob_dh{dh}"] = torch.softmax(scaled, dim=-1).max(dim=-1).values.mean()
    g["uniform_prob_197"] = f32(1 / N)
    return g


# --------------------------------------------------------------- chapter 03

@golden
def ch03_softmax():
    """chapters/03_softmax.c: softmax, its overflow, masking, temperature."""
    g = {}
    x = f32([2.0, 1.0, 0.1, -1.0])
    g["x"] = x
    g["exp_x"] = torch.exp(x)
    g["exp_sum"] = torch.exp(x).sum()
    g["p"] = torch.softmax(x, dim=0)
    g["p_sum"] = torch.softmax(x, dim=0).sum()
    g["p_shift_100"] = torch.softmax(x + 100, dim=0)

    # What goes wrong: the textbook formula exp(x) / sum(exp(x)) in float32.
    def textbook(v):
        e = torch.exp(v)
        return e, e / e.sum()

    g["float_max"] = f32(torch.finfo(torch.float32).max)
    g["exp_overflow_at"] = torch.log(g["float_max"])
    x_big, x_small = x + 1000, x - 1000
    g["x_big"], g["x_small"] = x_big, x_small
    g["exp_x_big_naive"], g["p_big_naive"] = textbook(x_big)        # inf, NaN
    g["exp_x_small_naive"], g["p_small_naive"] = textbook(x_small)  # 0, NaN
    g["x_big_minus_max"] = x_big - x_big.max()
    g["p_big"] = torch.softmax(x_big, dim=0)
    g["p_small"] = torch.softmax(x_small, dim=0)

    rng = Rng(3)                   # SCORES_SEED
    scores = normal(rng, 4, 4)
    g["scores"] = scores
    idx = torch.arange(4)
    padding = torch.zeros(4, 4).masked_fill(idx[None, :] >= 3, -math.inf)
    causal = torch.zeros(4, 4).masked_fill(idx[None, :] > idx[:, None], -math.inf)
    g["padding_mask"], g["causal_mask"] = padding, causal
    g["p_padded"] = torch.softmax(scores + padding, dim=-1)
    g["row_sums_padded"] = g["p_padded"].sum(dim=-1)
    g["p_causal"] = torch.softmax(scores + causal, dim=-1)

    # query i sees only the keys before it (j < i): row 0 is masked entirely
    earlier = torch.zeros(4, 4).masked_fill(idx[None, :] >= idx[:, None], -math.inf)
    g["earlier_mask"] = earlier
    e = torch.exp(scores + earlier)                                 # the textbook formula,
    g["p_earlier_naive"] = e / e.sum(dim=-1, keepdim=True)          # row by row: 0/0 in row 0
    # torch.softmax gives NaN for the fully masked row too. lib's convention
    # (lib/ops/ops.h) is a row of zeros; pin that convention explicitly.
    p_torch = torch.softmax(scores + earlier, dim=-1)
    assert torch.isnan(p_torch[0]).all() and not torch.isnan(p_torch[1:]).any()
    g["p_earlier"] = torch.nan_to_num(p_torch, nan=0.0)
    g["row_sums_earlier"] = g["p_earlier"].sum(dim=-1)

    g["p_uniform"] = f32(1 / 4)
    for label, T in (("0_1", 0.1), ("0_5", 0.5), ("1", 1.0), ("2", 2.0), ("10", 10.0)):
        g[f"p_t{label}"] = torch.softmax(x / T, dim=0)
    return g


# ------------------------------------------------------- attention, lib/attention/attention.h

@golden
def attention_cases():
    """tests/test_attention.c: lib's attention options against PyTorch.

    overflow.*  one head whose scaled scores are several hundred, so that e^x
                overflows float32 unless softmax subtracts the row maximum;
    pad.*       multi-head attention on a batch of two sequences of different
                lengths, with a (B, N) key-padding mask and, separately, with
                the key-padding mask and a causal (N, N) mask together, against
                torch.nn.MultiheadAttention;
    scale1.*    the same layer with scale 1 instead of 1/sqrt(Dh) (timm's
                qk_scale), computed with torch ops;
    qkv.*       a fused projection of a batch of two and its
                reshape(B, N, 3, H, Dh).permute(2, 0, 3, 1, 4).
    Inputs are stored in the file; expected values are computed in float64.
    """
    g, tol = {}, {}
    # overflow: q and k with entries of std 15, Dh = 8: scaled scores of std ~225
    N, DH = 6, 8
    rng = Rng(41)
    q, k, v = (15 * normal(rng, N, DH), 15 * normal(rng, N, DH), normal(rng, N, DH))
    scaled = (q.double() @ k.double().T) * DH ** -0.5
    assert (scaled.max(dim=-1).values > 100).all(), "every row must overflow exp() in float32"
    assert torch.isinf(torch.exp(scaled.float())).any()
    probs = torch.softmax(scaled, dim=-1)
    g["overflow.q"], g["overflow.k"], g["overflow.v"] = q, k, v
    g["overflow.scaled"], g["overflow.probs"] = scaled, probs
    g["overflow.out"] = probs @ v.double()
    # float32 rounding of scores this size (~3e-5) moves exponents by as much
    for name in ("overflow.scaled", "overflow.probs", "overflow.out"):
        tol[name] = (1e-4, 1e-4)

    # a batch of two: sequence 0 has all 5 tokens, sequence 1 only 2
    B, N, D, H = 2, 5, 8, 2
    DH = D // H
    rng = Rng(32)
    x = normal(rng, B, N, D)
    qkv_w, qkv_b = 0.3 * normal(rng, 3 * D, D), 0.1 * normal(rng, 3 * D)
    proj_w, proj_b = 0.3 * normal(rng, D, D), 0.1 * normal(rng, D)
    lengths = torch.tensor([5, 2])
    keep = torch.arange(N)[None, :] < lengths[:, None]                  # (B, N)
    causal = torch.zeros(N, N).masked_fill(torch.ones(N, N).triu(1) == 1, -math.inf)
    g["pad.x"], g["pad.qkv_w"], g["pad.qkv_b"] = x, qkv_w, qkv_b
    g["pad.proj_w"], g["pad.proj_b"] = proj_w, proj_b
    g["pad.lengths"] = lengths
    g["pad.causal"] = causal
    mha = torch.nn.MultiheadAttention(D, H, batch_first=True).double().eval()
    mha.load_state_dict({"in_proj_weight": qkv_w.double(), "in_proj_bias": qkv_b.double(),
                         "out_proj.weight": proj_w.double(), "out_proj.bias": proj_b.double()})
    xd = x.double()
    for label, attn_mask in (("pad", None), ("pad_causal", causal.double())):
        out, probs = mha(xd, xd, xd, key_padding_mask=~keep, attn_mask=attn_mask,
                         need_weights=True, average_attn_weights=False)
        g[f"pad.{label}.out"], g[f"pad.{label}.probs"] = out, probs

    # scale 1: timm's Attention(..., qk_scale=1), by hand
    qkv = F.linear(xd, qkv_w.double(), qkv_b.double()).reshape(B, N, 3, H, DH)
    qh, kh, vh = qkv.permute(2, 0, 3, 1, 4).unbind(0)
    probs = torch.softmax((qh @ kh.transpose(-2, -1)) * 1.0, dim=-1)
    g["scale1.probs"] = probs
    g["scale1.out"] = F.linear((probs @ vh).transpose(1, 2).reshape(B, N, D),
                               proj_w.double(), proj_b.double())

    # the permute of a fused projection, B = 2
    flat = normal(Rng(33), B, 3, 3 * 2 * 2)                             # (B, N=3, 3·H·Dh), H=Dh=2
    g["qkv.x"] = flat
    split = flat.reshape(B, 3, 3, 2, 2).permute(2, 0, 3, 1, 4)          # (3, B, H, N, Dh)
    g["qkv.split"] = split.reshape(3 * B, 2, 3, 2)                     # stored 4-d: (3·B, H, N, Dh)
    return g, tol


# --------------------------------------------------------------------- main

if __name__ == "__main__":
    sys.exit(golden_common.main(__doc__))
