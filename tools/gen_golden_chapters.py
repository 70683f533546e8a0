#!/usr/bin/python3
"""PyTorch goldens for chapters 04-09: tests/golden/chNN_NAME.safetensors.

    tools/gen_golden_chapters.py              regenerate every golden below
    tools/gen_golden_chapters.py NAME...      regenerate only these, e.g. ch04_attention
    tools/gen_golden_chapters.py --list       print the names

The same structure and rules as tools/gen_golden.py (chapters 01-03): one
function per golden file, registered with @golden under its own name,
returning {pinned name: tensor} or ({pinned name: tensor}, {name: (atol, rtol)}).

  * Inputs are rebuilt from the chapters' seeds with tools/vitrng.py, which
    reproduces lib/rng.c bit for bit.
  * Expected values are computed here with torch (torch.nn.functional,
    nn.Linear, nn.Conv2d, tools/ref_vit.py for blocks and the whole model),
    never copied from the C code.
  * ViT-Base weights (chapters 08 and 09) are the C generator's output, the
    model's *input*: they are written by `build/vit make-weights --arch vit-base
    --seed 9 --out FILE` (set VIT_BIN to use another binary with the same
    flags) and read back with tools/stio.py.
  * Every value a chapter pins must appear here under the same name, and
    nothing else. Keep files small: statistics and samples of big tensors.

Run with /usr/bin/python3 (Debian's python3-torch). Tests never need Python.
"""
import contextlib
import math
import os
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stio  # noqa: E402
import gen_golden  # noqa: E402
from gen_golden import f32, normal  # noqa: E402
from ref_vit import Attention, Block, RefViT  # noqa: E402
from vitrng import Rng  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN_DIR = os.path.join(ROOT, "tests", "golden")

GOLDENS = {}  # name -> function, in definition order


def golden(fn):
    """Register fn as the maker of tests/golden/<fn.__name__>.safetensors."""
    GOLDENS[fn.__name__] = fn
    return fn


def normal_std(rng, std, *shape):
    """rng_fill_normal(rng, x, numel, 0, std) as a float32 tensor."""
    n = math.prod(shape)
    return torch.from_numpy(rng.fill_normal(n, 0.0, std)).reshape(shape)


def uniform(rng, lo, hi, *shape):
    """rng_fill_uniform(rng, x, numel, lo, hi) as a float32 tensor."""
    n = math.prod(shape)
    return torch.from_numpy(rng.fill_uniform(n, lo, hi)).reshape(shape)


def max_abs_diff(a, b):
    """Largest |a - b|, equal elements (also equal infinities) counting 0."""
    d = (a - b).abs()
    d[a == b] = 0
    return d.max()


# --------------------------------------------------------------- chapter 04

@golden
def ch04_attention():
    """chapters/04_attention.c: one head, its attention matrix, two masks."""
    g = {}
    N, D, DH = 5, 8, 4
    rng = Rng(4)                   # X, then W_q, W_k, W_v
    X = normal(rng, N, D)
    w_q, w_k, w_v = (normal_std(rng, 0.5, DH, D) for _ in range(3))
    Q, K, V = F.linear(X, w_q), F.linear(X, w_k), F.linear(X, w_v)
    g["X"], g["Q"], g["K"], g["V"] = X, Q, K, V

    scores = Q @ K.T
    scale = DH ** -0.5
    scaled = scores * scale
    probs = torch.softmax(scaled, dim=-1)
    out = probs @ V
    g["scores"], g["scale"], g["scaled"], g["probs"] = scores, f32(scale), scaled, probs
    g["row_sums"] = probs.sum(dim=-1)
    g["best_weight"], g["best_key"] = probs.max(dim=-1)
    g["out"] = out
    g["out_0_by_hand"] = (probs[0, :, None] * V).sum(dim=0)
    g["one_call_out_max_diff"] = f32(0)      # the same calls in the same order
    g["one_call_probs_max_diff"] = f32(0)

    idx = torch.arange(N)
    padding = torch.zeros(N, N).masked_fill(idx[None, :] >= N - 1, -math.inf)
    causal = torch.zeros(N, N).masked_fill(idx[None, :] > idx[:, None], -math.inf)
    for label, mask in (("padding", padding), ("causal", causal)):
        p = torch.softmax(scaled + mask, dim=-1)
        g[f"{label}_mask"], g[f"probs_{label}"], g[f"out_{label}"] = mask, p, p @ V
    g["causal_out_0_minus_v_0"] = max_abs_diff(g["out_causal"][0], V[0])
    g["causal_out_last_minus_unmasked"] = max_abs_diff(g["out_causal"][-1], out[-1])
    # the C side computes the same quantities in a different order
    tol = {"causal_out_0_minus_v_0": (1e-6, 0), "causal_out_last_minus_unmasked": (1e-5, 0)}
    return g, tol


# --------------------------------------------------------------- chapter 05

def attention_module(dim, heads, w_qkv, b_qkv, w_proj, b_proj):
    """tools/ref_vit.py's timm-style Attention holding the given weights."""
    attn = Attention(dim, heads)
    attn.load_state_dict({"qkv.weight": w_qkv, "qkv.bias": b_qkv,
                          "proj.weight": w_proj, "proj.bias": b_proj})
    return attn.eval()


def run_recorded(module, x):
    """Run an ref_vit Attention on x; return (output, {trace name: tensor})."""
    rec = {}
    out = module(x, lambda name, t: rec.__setitem__(name, t.detach().clone()), "")
    return out, rec


@golden
def ch05_multi_head():
    """chapters/05_multi_head.c: fused QKV, permute, heads, merge, projection, dropout."""
    g = {}
    B, N, D, H = 1, 4, 6, 2
    DH = D // H
    rng = Rng(5)                   # x, W_qkv, b_qkv, W_proj, b_proj
    x = normal(rng, B, N, D)
    w_qkv, b_qkv = normal_std(rng, 0.35, 3 * D, D), normal_std(rng, 0.1, 3 * D)
    w_proj, b_proj = normal_std(rng, 0.35, D, D), normal_std(rng, 0.1, D)
    g["x"] = x

    qkv = F.linear(x, w_qkv, b_qkv)                      # (B, N, 3D)
    g["qkv_token_0"] = qkv[0, 0].reshape(3, H, DH)
    attn = attention_module(D, H, w_qkv, b_qkv, w_proj, b_proj)
    out, rec = run_recorded(attn, x)
    g["q"], g["k"], g["v"] = rec["q"], rec["k"], rec["v"]
    g["qkv_0_2_11"] = qkv[0, 2, 11]
    g["k_0_1_2_2"] = rec["k"][0, 1, 2, 2]

    # three separate nn.Linear(D, D) give the same as the slices of the fused one
    worst = f32(0)
    for s, name in enumerate(("q", "k", "v")):
        separate = F.linear(x, w_qkv[s * D:(s + 1) * D], b_qkv[s * D:(s + 1) * D])
        separate = separate.reshape(B, N, H, DH).transpose(1, 2)      # (B, H, N, DH)
        worst = torch.maximum(worst, max_abs_diff(separate, rec[name]))
    g["fused_vs_separate_max_diff"] = worst

    g["probs"] = rec["probs"]
    g["heads"] = rec["probs"] @ rec["v"]
    g["context"], g["out"] = rec["context"], out
    g["mha_forward_out_max_diff"] = f32(0)    # the same calls in the same order
    g["mha_forward_probs_max_diff"] = f32(0)

    # dropout as nn.Dropout computes it in training: zero with probability p,
    # scale the survivors by 1/(1-p); the keep decisions replay the C stream
    p = 0.25
    g["dropout_p"] = f32(p)
    row = rec["probs"][0, 0, 0]
    g["probs_row"] = row
    drng = Rng(55)
    draws = 10000
    keep = torch.from_numpy(drng.fill_uniform(draws * N, 0.0, 1.0)).reshape(draws, N) >= p
    dropped = torch.where(keep, row / (1 - torch.tensor(p)), torch.zeros(()))
    g["probs_row_dropped"] = dropped[0]
    g["probs_row_dropout_mean"] = dropped.double().mean(dim=0)
    # and at inference dropout is the identity
    drop = torch.nn.Dropout(p).eval()
    assert torch.equal(drop(row), row)

    g["vit_base_head_width"] = f32(768 // 12)
    # PyTorch refuses 768 features in 5 heads too; lib reports VIT_ERR_INPUT = 1
    try:
        torch.nn.MultiheadAttention(768, 5)
        raise SystemExit("gen_golden_chapters: torch accepted 768 features in 5 heads")
    except AssertionError:
        pass
    g["bad_heads_status"] = f32(1)
    return g, {"fused_vs_separate_max_diff": (1e-6, 0)}


# --------------------------------------------------------------- chapter 06

def test_picture(size=224, checker=32):
    """chapters/06_patch_embedding.c's picture, (1, 3, S, S): red ramp left to
    right, green ramp top to bottom, blue checkerboard of +-0.5."""
    ramp = 2 * torch.arange(size, dtype=torch.float32) / (size - 1) - 1
    red = ramp[None, :].expand(size, size)
    green = ramp[:, None].expand(size, size)
    cells = torch.arange(size) // checker
    blue = torch.where((cells[:, None] + cells[None, :]) % 2 == 1,
                       torch.tensor(0.5), torch.tensor(-0.5))
    return torch.stack((red, green, blue))[None].contiguous()


@golden
def ch06_patch_embedding():
    """chapters/06_patch_embedding.c: unfold, what a patch holds, linear = conv."""
    g = {}
    C, S, p, D = 3, 224, 16, 768
    grid, K = S // p, C * p * p
    P = grid * grid
    img = test_picture(S)
    g["image_numbers"] = f32(img.numel())
    g["pixels"] = torch.stack([img[0, 0, 0, 0], img[0, 0, 0, S - 1], img[0, 1, 0, 0],
                               img[0, 1, S - 1, 0], img[0, 2, 0, 0], img[0, 2, 0, 32]])
    g["grid"], g["num_patches"], g["patch_numbers"] = f32(grid), f32(P), f32(K)

    patches = F.unfold(img, kernel_size=p, stride=p).transpose(1, 2)   # (1, P, K)
    which = grid + 1
    entries = [0, 1, 15, 16, 255, 256, 511, 512, 767]
    # which pixel each entry holds: unfold an image whose "pixels" are their own
    # flat index c·S·S + y·S + x, then read the index back as (c, y, x)
    index = torch.arange(C * S * S, dtype=torch.float64).reshape(1, C, S, S)
    flat = F.unfold(index, kernel_size=p, stride=p).transpose(1, 2)[0, which, entries].long()
    g["patch_15_pixels"] = torch.stack((flat // (S * S), flat % (S * S) // S, flat % S), dim=1)
    g["patch_15_entries"] = patches[0, which, entries]
    g["image_at_entries"] = torch.stack([img[0, int(c), int(y), int(x)]
                                         for c, y, x in g["patch_15_pixels"]])
    folded = F.fold(patches.transpose(1, 2), output_size=S, kernel_size=p, stride=p)
    g["fold_unfold_max_diff"] = max_abs_diff(folded, img)

    rng = Rng(6)                   # W, then b, uniform in [-0.05, 0.05)
    w = uniform(rng, -0.05, 0.05, D, C, p, p)
    b = uniform(rng, -0.05, 0.05, D)
    g["params"] = f32(w.numel() + b.numel())
    conv = torch.nn.Conv2d(C, D, kernel_size=p, stride=p)
    conv.load_state_dict({"weight": w, "bias": b})
    embed = conv(img).flatten(2).transpose(1, 2)                        # (1, P, D)
    g["flops"] = f32(2 * P * K * D + P * D)
    g["patch_tokens"] = embed[0, [0, which, P - 1], :6]
    g["patch_embed_mean"] = embed.double().mean()
    g["patch_embed_std"] = embed.double().std(unbiased=False)
    # unfold + linear in torch, against the convolution: rounding-level
    linear = F.linear(patches, w.reshape(D, K), b)
    g["conv_vs_unfold_max_diff"] = max_abs_diff(linear, embed)
    tol = {"patch_tokens": (1e-5, 1e-4), "conv_vs_unfold_max_diff": (1e-5, 0)}
    return g, tol


# --------------------------------------------------------------- chapter 07

@golden
def ch07_tokens():
    """chapters/07_tokens.c: [cls], position embeddings, permutation equivariance."""
    g = {}
    P, D = 196, 768
    N = P + 1
    rng = Rng(7)                   # patches, cls, pos
    patches = normal(rng, 1, P, D)
    patches[0, 9] = patches[0, 5]  # the repeated patch
    cls = normal_std(rng, 0.02, 1, 1, D)
    pos = normal_std(rng, 0.02, 1, N, D)
    tokens = torch.cat((cls, patches), dim=1)
    embed = tokens + pos
    g["num_tokens"] = f32(tokens.shape[1])
    g["rows_0_1_cls_patch0"] = torch.stack((tokens[0, 0, :6], tokens[0, 1, :6],
                                            cls[0, 0, :6], patches[0, 0, :6]))
    g["pos_params"] = f32(pos.numel())
    g["same_patches_before"] = max_abs_diff(tokens[0, 6], tokens[0, 10])
    g["same_patches_after"] = max_abs_diff(embed[0, 6], embed[0, 10])
    g["embed_mean"] = embed.double().mean()
    g["embed_std"] = embed.double().std(unbiased=False)

    SN, SD, SH = 5, 6, 2
    srng = Rng(77)                 # x, W_qkv, b_qkv, W_proj, b_proj, pos
    x = normal(srng, 1, SN, SD)
    w_qkv, b_qkv = normal_std(srng, 0.4, 3 * SD, SD), normal_std(srng, 0.1, 3 * SD)
    w_proj, b_proj = normal_std(srng, 0.4, SD, SD), normal_std(srng, 0.1, SD)
    spos = normal(srng, 1, SN, SD)
    attn = attention_module(SD, SH, w_qkv, b_qkv, w_proj, b_proj)
    shuffle = torch.tensor([0, 3, 1, 4, 2])

    def mha(t):
        return run_recorded(attn, t)[0]

    out = mha(x)
    out_shuffled = mha(x[:, shuffle])
    g["x"], g["out"], g["out_shuffled"] = x[0], out[0], out_shuffled[0]
    g["equivariance_max_diff"] = max_abs_diff(out_shuffled, out[:, shuffle])
    g["cls_change_without_pos"] = max_abs_diff(out_shuffled[0, 0], out[0, 0])

    out_pos = mha(x + spos)
    out_pos_shuffled = mha(x[:, shuffle] + spos)
    g["pos"], g["out_pos"], g["out_pos_shuffled"] = spos[0], out_pos[0], out_pos_shuffled[0]
    g["with_pos_max_diff"] = max_abs_diff(out_pos_shuffled, out_pos[:, shuffle])
    g["cls_change_with_pos"] = max_abs_diff(out_pos_shuffled[0, 0], out_pos[0, 0])
    # rounding-level differences: pinned as "tiny", not as exact values
    tol = {"equivariance_max_diff": (1e-5, 0), "cls_change_without_pos": (1e-5, 0)}
    return g, tol


# ------------------------------------------------------- ViT-Base weights

WEIGHT_SEED = 9  # chapters 08 and 09: the same ViT-Base


@contextlib.contextmanager
def made_weights(*flags):
    """Run `vit make-weights FLAGS --out TMP` and yield TMP, removed afterwards.

    The weights are the model's input, drawn by lib/vit.c's generator; every
    value the goldens pin is then computed from them by PyTorch."""
    vit = os.environ.get("VIT_BIN", os.path.join(ROOT, "build", "vit"))
    if not os.access(vit, os.X_OK):
        raise SystemExit(f"gen_golden_chapters: {vit} not found; run make first")
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "w.safetensors")
        subprocess.run([vit, "make-weights", *flags, "--out", path], check=True,
                       stdout=subprocess.DEVNULL)
        yield path


def block_from(weights, index, dim, heads, mlp_dim, eps=1e-6):
    """tools/ref_vit.py's Block holding blocks.INDEX.* of a timm-named state dict."""
    block = Block(dim, heads, mlp_dim, eps)
    prefix = f"blocks.{index}."
    block.load_state_dict({k[len(prefix):].replace("mlp.", ""): v.float()
                           for k, v in weights.items() if k.startswith(prefix)})
    return block.eval()


# --------------------------------------------------------------- chapter 08

@golden
def ch08_encoder_block():
    """chapters/08_encoder_block.c: block 0 of the seed-9 ViT-Base on random tokens."""
    g = {}
    D, H, M, N = 768, 12, 3072, 197
    with made_weights("--arch", "vit-base", "--depth", "1", "--seed", str(WEIGHT_SEED)) as path:
        block = block_from(stio.load(path)[0], 0, D, H, M)

    count = {name: sum(p.numel() for p in module.parameters())
             for name, module in (("norm1", block.norm1), ("norm2", block.norm2),
                                  ("mlp.fc1", block.fc1), ("mlp.fc2", block.fc2),
                                  ("attn.proj", block.attn.proj))}
    qkv = block.attn.qkv
    for s, name in enumerate(("attn.q", "attn.k", "attn.v")):
        count[name] = qkv.weight[s * D:(s + 1) * D].numel() + qkv.bias[s * D:(s + 1) * D].numel()
    for name, n in count.items():
        g[f"params.{name}"] = f32(n)
    total = sum(p.numel() for p in block.parameters())
    g["params.block"] = f32(total)
    attention = sum(p.numel() for p in block.attn.parameters())
    mlp = sum(p.numel() for m in (block.fc1, block.fc2) for p in m.parameters())
    g["mlp_share_percent"] = f32(100 * mlp / total)
    g["attention_share_percent"] = f32(100 * attention / total)

    x = normal(Rng(8), 1, N, D)
    trace = {"input": x}
    block(x, lambda name, t: trace.__setitem__(name, t.detach().clone()), "")
    for name, t in trace.items():
        g[f"{name}.shape"] = f32(list(t.shape))
        g[f"{name}.mean"] = t.double().mean()
        g[f"{name}.std"] = t.double().std(unbiased=False)
    g["mean_top_prob"] = trace["attn.probs"].max(dim=-1).values.double().mean()

    for label, row in (("in", x[0, 0]), ("ln", trace["norm1"][0, 0])):
        g[f"token0_{label}_mean"] = row.double().mean()
        g[f"token0_{label}_std"] = row.double().std(unbiased=False)
    big = {}
    block(10 * x, lambda name, t: big.__setitem__(name, t.detach().clone()), "")
    g["big_norm1_max_diff"] = max_abs_diff(big["norm1"], trace["norm1"])
    g["big_attn_max_diff"] = max_abs_diff(big["attn.proj"], trace["attn.proj"])

    xs = f32([-3, -2, -1, -0.75, -0.5, 0, 0.5, 1, 2, 3])
    g["gelu_x"], g["gelu_y"] = xs, F.gelu(xs)
    g["fc1_negative_percent"] = 100 * (trace["mlp.fc1"] < 0).double().mean()

    def mean_norm(t):
        return torch.linalg.norm(t[0].double(), dim=-1).mean()

    for name in ("input", "attn.proj", "resid1", "mlp.fc2", "out"):
        g[f"{name}.mean_norm"] = mean_norm(trace[name])
    g["cos_input_out"] = F.cosine_similarity(x[0].double(), trace["out"][0].double(), dim=-1).mean()
    g["attn_relative"] = g["attn.proj.mean_norm"] / g["input.mean_norm"]
    g["mlp_relative"] = g["mlp.fc2.mean_norm"] / g["resid1.mean_norm"]

    # float32 through a 768-wide block: statistics agree to ~1e-6 relative;
    # means of zero-mean tensors need an absolute tolerance
    tol = {k: (1e-5, 1e-4) for k in g if k.endswith((".mean", ".std"))}
    tol.update({"big_norm1_max_diff": (1e-5, 0), "big_attn_max_diff": (1e-6, 0),
                "token0_ln_mean": (1e-6, 0), "mean_top_prob": (1e-6, 1e-4),
                "fc1_negative_percent": (0.01, 0)})
    return g, tol


# --------------------------------------------------------------- chapter 09

# The trace stages in forward order (docs/contract.md); block stages once.
STAGES = ["input", "patch_embed", "tokens", "embed", "norm1", "attn.q", "attn.k", "attn.v",
          "attn.scores", "attn.scaled", "attn.probs", "attn.context", "attn.proj", "resid1",
          "norm2", "mlp.fc1", "mlp.gelu", "mlp.fc2", "out", "norm", "pre_logits", "logits"]
BLOCK_STAGES = STAGES[4:19]


def stage_params(model, stage):
    """Parameters each stage reads, counted from the torch modules, all blocks summed."""
    D = model.pos_embed.shape[-1]

    def blocks(fn):
        return sum(fn(b) for b in model.blocks)

    def numel(module):
        return sum(p.numel() for p in module.parameters())

    qkv_part = {"attn.q": 0, "attn.k": 1, "attn.v": 2}
    if stage == "patch_embed":
        return numel(model.patch_embed)
    if stage == "tokens":
        return model.cls_token.numel()
    if stage == "embed":
        return model.pos_embed.numel()
    if stage in qkv_part:
        s = qkv_part[stage]
        return blocks(lambda b: b.attn.qkv.weight[s * D:(s + 1) * D].numel()
                      + b.attn.qkv.bias[s * D:(s + 1) * D].numel())
    per_block = {"norm1": lambda b: b.norm1, "attn.proj": lambda b: b.attn.proj,
                 "norm2": lambda b: b.norm2, "mlp.fc1": lambda b: b.fc1,
                 "mlp.fc2": lambda b: b.fc2}
    if stage in per_block:
        return blocks(lambda b: numel(per_block[stage](b)))
    if stage in ("norm", "logits"):
        return numel(model.norm if stage == "norm" else model.head)
    return 0


def stage_flops(model, trace, stage):
    """FLOPs of a stage for one image, from its output shape: 2 per multiply-add
    plus 1 per bias for matrix products; per element 1 for an add or a scale,
    5 for softmax, 8 for LayerNorm and for GELU (the convention lib/stages.h
    states); all blocks summed."""
    L = len(model.blocks)
    name = f"blocks.0.{stage}" if stage in BLOCK_STAGES else stage
    out = trace[name].numel()
    b0 = model.blocks[0]
    D = model.pos_embed.shape[-1]
    linear_in = {"attn.q": D, "attn.k": D, "attn.v": D, "attn.proj": D,
                 "mlp.fc1": b0.fc1.in_features, "mlp.fc2": b0.fc2.in_features}
    per_element = {"attn.scaled": 1, "embed": 1, "resid1": 1, "out": 1, "attn.probs": 5,
                   "norm1": 8, "norm2": 8, "norm": 8, "mlp.gelu": 8}
    if stage == "patch_embed":
        w = model.patch_embed.weight
        flops = out * (2 * w[0].numel() + 1)
    elif stage in linear_in:
        flops = out * (2 * linear_in[stage] + 1)
    elif stage == "logits":
        flops = out * (2 * model.head.in_features + 1)
    elif stage == "attn.scores":           # each score: a dot product of length Dh
        flops = out * 2 * trace["blocks.0.attn.q"].shape[-1]
    elif stage == "attn.context":          # each output: a weighted sum over N tokens
        flops = out * 2 * trace["blocks.0.attn.probs"].shape[-1]
    else:
        flops = out * per_element.get(stage, 0)
    return flops * (L if stage in BLOCK_STAGES else 1)


@golden
def ch09_vit_base():
    """chapters/09_vit_base.c: the seed-9 ViT-Base on a random image, by tools/ref_vit.py."""
    g = {}
    with made_weights("--arch", "vit-base", "--seed", str(WEIGHT_SEED)) as path:
        model = RefViT.from_safetensors(path)
    D, L = model.pos_embed.shape[-1], len(model.blocks)
    H = model.blocks[0].attn.heads
    S = int(round(math.sqrt(model.pos_embed.shape[1] - 1))) * model.patch_embed.kernel_size[0]
    config = {"image_size": S, "patch_size": model.patch_embed.kernel_size[0],
              "patches": model.pos_embed.shape[1] - 1, "tokens": model.pos_embed.shape[1],
              "dim": D, "depth": L, "heads": H, "head_dim": D // H,
              "mlp_dim": model.blocks[0].fc1.out_features, "classes": model.head.out_features}
    for k, v in config.items():
        g[f"config.{k}"] = f32(v)
    params = sum(p.numel() for p in model.parameters())
    assert params == 86_567_656, params
    g["param_count"] = f32(params)
    g["param_megabytes"] = f32(4 * params / 1e6)

    image = uniform(Rng(99), -1.0, 1.0, 1, 3, S, S)
    trace = model.trace(image)

    total_flops = matmul = attention_nn = 0
    for stage in STAGES:
        name = f"blocks.0.{stage}" if stage in BLOCK_STAGES else stage
        g[f"shape.{stage}"] = f32(list(trace[name].shape))
        n = stage_params(model, stage)
        flops = stage_flops(model, trace, stage)
        g[f"params.{stage}"] = f32(n)
        g[f"mflop.{stage}"] = f32(flops / 1e6)
        total_flops += flops
        if stage in ("patch_embed", "attn.q", "attn.k", "attn.v", "attn.proj", "mlp.fc1",
                     "mlp.fc2", "logits"):
            matmul += flops
        if stage in ("attn.scores", "attn.context"):
            attention_nn += flops
    assert sum(stage_params(model, s) for s in STAGES) == params
    g["params.total"] = f32(params)
    g["gflop.total"] = f32(total_flops / 1e9)
    g["matmul_percent"] = f32(100 * matmul / total_flops)
    g["attention_nn_percent"] = f32(100 * attention_nn / total_flops)
    g["other_percent"] = f32(100 * (total_flops - matmul - attention_nn) / total_flops)

    def stream(name):
        t = trace[name]
        return t.double().std(unbiased=False), torch.linalg.norm(t[0, 0].double())

    g["stream.embed.std"], g["stream.embed.cls_norm"] = stream("embed")
    for i in range(L):
        g[f"stream.blocks.{i}.std"], g[f"stream.blocks.{i}.cls_norm"] = stream(f"blocks.{i}.out")

    logits = trace["logits"][0]
    g["logits.mean"] = logits.double().mean()
    g["logits.std"] = logits.double().std(unbiased=False)
    top = torch.topk(logits, 6)
    gaps = top.values[:-1] - top.values[1:]
    # the ranking is pinned exactly, so neighbours must be far apart compared
    # with float32 differences between two implementations (~1e-5 here)
    assert gaps.min() > 1e-3, f"top-5 logits too close to pin their order: {gaps}"
    g["top5.class"] = top.indices[:5]
    g["top5.logit"] = top.values[:5]
    g["top5.prob"] = torch.softmax(logits, dim=0)[top.indices[:5]]
    g["uniform_prob"] = f32(1 / logits.numel())

    # twelve float32 blocks: BLAS and torch sum in different orders
    tol = {k: (2e-4, 1e-3) for k in g if k.startswith(("stream.", "logits.", "top5.logit"))}
    tol["top5.prob"] = (1e-6, 1e-3)
    return g, tol


# --------------------------------------------------------------------- main

if __name__ == "__main__":
    sys.exit(gen_golden.main(sys.argv[1:], GOLDENS, "tools/gen_golden_chapters.py", __doc__))
