#!/usr/bin/python3
"""PyTorch goldens for chapters 04-09: tests/golden/chNN_NAME.safetensors.

    tools/gen_golden_chapters.py              regenerate every golden below
    tools/gen_golden_chapters.py NAME...      regenerate only these, e.g. ch04_attention
    tools/gen_golden_chapters.py --list       print the names

The same structure and rules as tools/gen_golden.py (chapters 01-03): one
function per golden file, registered with @golden under its own name,
returning {pinned name: tensor} or ({pinned name: tensor}, {name: (atol, rtol)}).

  * Inputs are rebuilt from the chapters' seeds with tools/vitrng.py, which
    reproduces lib/base/rng.c bit for bit.
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
from gen_golden import f32, golden, normal  # noqa: E402
import golden_common  # noqa: E402
from ref_vit import Attention, Block, RefViT  # noqa: E402
from vitrng import Rng  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


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

    # a wrong scale (timm's qk_scale): 1/Dh, the default 1/sqrt(Dh), and 1
    by_scale = [torch.softmax(scores * s, dim=-1) for s in (1 / DH, DH ** -0.5, 1.0)]
    g["probs_scale_1"] = by_scale[2]
    g["row_max_by_scale"] = torch.stack([p.max(dim=-1).values for p in by_scale])
    g["row_entropy_by_scale"] = torch.stack([torch.special.entr(p).sum(dim=-1) for p in by_scale])
    g["mean_entropy_by_scale"] = g["row_entropy_by_scale"].double().mean(dim=-1)
    g["entropy_uniform"] = torch.log(f32(N))

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

    # a batch of two: sequence 0 is x, sequence 1 has 3 real tokens and one of padding
    lengths = torch.tensor([4, 3])
    xb = torch.cat((x, normal(Rng(57), 1, N, D)))                     # (2, N, D)
    g["x_batch"] = xb
    qkv_b = F.linear(xb, w_qkv, b_qkv)                                # (2, N, 3D)
    heads_b = qkv_b.reshape(2, N, 3, H, DH).permute(2, 0, 3, 1, 4)    # (3, 2, H, N, DH)
    q_b, k_b, v_b = heads_b.unbind(0)
    g["batch_qkv_1_2_13"], g["batch_v_1_0_2_1"] = qkv_b[1, 2, 13], v_b[1, 0, 2, 1]
    # splitting 3D into 3H heads: (2, 3H, N, DH); its first B*H heads taken for q
    split_3h = qkv_b.reshape(2, N, 3 * H, DH).permute(0, 2, 1, 3).reshape(-1)
    g["split_3h_q_vs_q_max_diff"] = max_abs_diff(split_3h[:q_b.numel()], q_b.reshape(-1))
    half = q_b.numel() // 2
    g["split_3h_q_image_1_vs_k_image_0_max_diff"] = max_abs_diff(split_3h[half:2 * half],
                                                                 k_b[0].reshape(-1))
    # key padding: keep[b, j] = j < lengths[b]; masked_fill(keep == 0, -inf) is adding -inf
    keep = torch.arange(N)[None, :] < lengths[:, None]                # (2, N)
    g["key_padding_mask"] = torch.zeros(2, N).masked_fill(keep == 0, -math.inf)
    scores_b = (q_b @ k_b.transpose(-2, -1)) * DH ** -0.5
    probs_b = scores_b.masked_fill(keep[:, None, None, :] == 0, -math.inf).softmax(dim=-1)
    out_b = F.linear((probs_b @ v_b).transpose(1, 2).reshape(2, N, D), w_proj, b_proj)
    # the same with torch's own nn.MultiheadAttention and its key_padding_mask
    mha = torch.nn.MultiheadAttention(D, H, batch_first=True).eval()
    mha.load_state_dict({"in_proj_weight": w_qkv, "in_proj_bias": b_qkv,
                         "out_proj.weight": w_proj, "out_proj.bias": b_proj})
    out_t, probs_t = mha(xb, xb, xb, key_padding_mask=~keep, need_weights=True,
                         average_attn_weights=False)
    assert torch.allclose(out_t, out_b, atol=1e-6) and torch.allclose(probs_t, probs_b, atol=1e-6)
    g["batch_probs"], g["batch_out"] = probs_b, out_b
    g["batch_probs_seq_1"] = probs_b[1:]
    g["batch_seq_0_probs_vs_alone_max_diff"] = max_abs_diff(probs_b[0], rec["probs"][0])
    g["batch_seq_0_vs_alone_max_diff"] = max_abs_diff(out_b[0], out[0])
    out_1 = run_recorded(attn, xb[1:, :3])[0]                         # its 3 tokens alone
    g["batch_seq_1_vs_alone_max_diff"] = max_abs_diff(out_b[1, :3], out_1[0])

    g["vit_base_head_width"] = f32(768 // 12)
    # PyTorch refuses 768 features in 5 heads too; lib reports VIT_ERR_INPUT = 1
    try:
        torch.nn.MultiheadAttention(768, 5)
        raise SystemExit("gen_golden_chapters: torch accepted 768 features in 5 heads")
    except AssertionError:
        pass
    g["bad_heads_status"] = f32(1)
    return g, {"fused_vs_separate_max_diff": (1e-6, 0),
               "batch_seq_0_probs_vs_alone_max_diff": (1e-6, 0),
               "batch_seq_0_vs_alone_max_diff": (1e-6, 0),
               "batch_seq_1_vs_alone_max_diff": (1e-6, 0)}


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
    grid, patch_len = S // p, C * p * p             # numbers per patch, C·p·p
    P = grid * grid
    img = test_picture(S)
    g["image_numbers"] = f32(img.numel())
    g["pixels"] = torch.stack([img[0, 0, 0, 0], img[0, 0, 0, S - 1], img[0, 1, 0, 0],
                               img[0, 1, S - 1, 0], img[0, 2, 0, 0], img[0, 2, 0, 32]])
    g["grid"], g["num_patches"], g["patch_numbers"] = f32(grid), f32(P), f32(patch_len)

    patches = F.unfold(img, kernel_size=p, stride=p).transpose(1, 2)   # (1, P, C·p·p)
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
    g["flops"] = f32(2 * P * patch_len * D + P * D)
    g["patch_tokens"] = embed[0, [0, which, P - 1], :6]
    g["patch_embed_mean"] = embed.double().mean()
    g["patch_embed_std"] = embed.double().std(unbiased=False)
    # unfold + linear in torch, against the convolution: rounding-level
    linear = F.linear(patches, w.reshape(D, patch_len), b)
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
    # drawn as lib's vit_build_random() draws every parameter: truncated normal, std 0.02, +-2
    cls = torch.from_numpy(rng.fill_trunc_normal(D, 0.0, 0.02, -2.0, 2.0)).reshape(1, 1, D)
    pos = torch.from_numpy(rng.fill_trunc_normal(N * D, 0.0, 0.02, -2.0, 2.0)).reshape(1, N, D)
    g["cls_std"] = cls.double().std(unbiased=False)
    g["pos_std"] = pos.double().std(unbiased=False)
    # timm leaves the patch convolution at PyTorch's default: weight and bias
    # uniform in +-1/sqrt(fan_in), fan_in = C·p·p = 768 for ViT-Base
    bound = 1 / math.sqrt(3 * 16 * 16)
    conv = torch.nn.Conv2d(3, D, kernel_size=16, stride=16)
    assert conv.weight.abs().max() <= bound and conv.bias.abs().max() <= bound
    assert conv.weight.abs().max() > 0.99 * bound  # and it does reach out that far
    g["conv_default_bound"] = f32(bound)
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

    The weights are the model's input, drawn by lib/model/vit_memory.c's generator; every
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
        model = RefViT.from_safetensors(path)  # chapter 09's embedding and block 0

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

    # LayerNorm term by term on token 0, then with gamma 2 and beta 0.5
    t0 = x[0, 0].double()
    var, rstd = t0.var(unbiased=False), 1 / torch.sqrt(t0.var(unbiased=False) + 1e-6)
    g["token0_var"], g["token0_var_unbiased"], g["token0_rstd"] = var, t0.var(), rstd
    g["token0_x0"] = x[0, 0, 0]
    g["token0_y0_formula"] = ((t0[0] - t0.mean()) * rstd * block.norm1.weight[0].double()
                              + block.norm1.bias[0].double())
    g["token0_y0"] = trace["norm1"][0, 0, 0]
    affine = F.layer_norm(x[0, 0], (D,), torch.full((D,), 2.0), torch.full((D,), 0.5), 1e-6)
    g["token0_affine_mean"] = affine.double().mean()
    g["token0_affine_std"] = affine.double().std(unbiased=False)
    # epsilon: token 0 shrunk until its variance nears it, normalised with timm's and HF's
    shrink = f32([1, 1e-2, 1e-3, 1e-4])
    rows = shrink[:, None] * x[0, 0][None, :]
    by_eps = {eps: F.layer_norm(rows, (D,), eps=eps) for eps in (1e-6, 1e-12)}
    g["eps.shrink"] = shrink
    g["eps.var"] = rows.double().var(dim=1, unbiased=False)
    g["eps.std_1e-6"] = by_eps[1e-6].double().std(dim=1, unbiased=False)
    g["eps.std_1e-12"] = by_eps[1e-12].double().std(dim=1, unbiased=False)
    g["eps.max_diff"] = (by_eps[1e-6] - by_eps[1e-12]).abs().max(dim=1).values
    g["eps.gain_limit_1e-6"], g["eps.gain_limit_1e-12"] = f32(1e-6 ** -0.5), f32(1e-12 ** -0.5)
    g["params.norm1"] = f32(2 * D)

    # the block assembled by hand from torch functions, in Block.forward's order
    h = F.layer_norm(x, (D,), block.norm1.weight, block.norm1.bias, 1e-6)
    resid1 = x + block.attn(h, lambda name, t: None, "")
    h = F.layer_norm(resid1, (D,), block.norm2.weight, block.norm2.bias, 1e-6)
    g["by_hand_max_diff"] = max_abs_diff(resid1 + block.fc2(F.gelu(block.fc1(h))), trace["out"])
    g["sqrt_d"] = f32(math.sqrt(D))
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

    # the same block on the stream it really gets: chapter 09's embedded image
    real = model.trace(uniform(Rng(99), -1.0, 1.0, 1, 3, 224, 224))
    embed, out = real["embed"][0].double(), real["blocks.0.out"][0].double()
    g["ch09.embed.std"] = embed.std(unbiased=False)
    g["ch09.embed.mean_norm"] = mean_norm(real["embed"])
    g["ch09.attn.mean_norm"] = mean_norm(real["blocks.0.attn.proj"])
    g["ch09.mlp.mean_norm"] = mean_norm(real["blocks.0.mlp.fc2"])
    g["ch09.cos_input_out"] = F.cosine_similarity(embed, out, dim=-1).mean()
    g["ch09.cls_cos"] = F.cosine_similarity(embed[0], out[0], dim=0)

    # float32 through a 768-wide block: statistics agree to ~1e-6 relative;
    # means of zero-mean tensors need an absolute tolerance
    tol = {k: (1e-5, 1e-4) for k in g if k.endswith((".mean", ".std"))}
    tol.update({"big_norm1_max_diff": (1e-5, 0), "big_attn_max_diff": (1e-6, 0),
                "token0_ln_mean": (1e-6, 0), "mean_top_prob": (1e-6, 1e-4),
                "fc1_negative_percent": (0.01, 0),
                # the same functions in the same order: not one bit may differ
                "by_hand_max_diff": (0, 0),
                # variances down to 1e-8, and differences of float rounding at full size
                "eps.var": (0, 1e-4), "eps.max_diff": (1e-5, 1e-3)})
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
    5 for softmax, 8 for LayerNorm and for GELU (the convention lib/model/trace_stages.h
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
    # timm leaves the patch convolution at PyTorch's default: kaiming_uniform_(a=sqrt(5))
    fan_in, _ = torch.nn.init._calculate_fan_in_and_fan_out(model.patch_embed.weight)
    bound = torch.nn.init.calculate_gain("leaky_relu", math.sqrt(5)) * math.sqrt(3 / fan_in)
    g["timm_patch_bound"], g["timm_patch_std"] = f32(bound), f32(bound / math.sqrt(3))

    image = uniform(Rng(99), -1.0, 1.0, 1, 3, S, S)
    trace = model.trace(image)
    g["trace_count"] = f32(len(trace))
    g["trace_count.per_block"] = f32(sum(k.startswith("blocks.0.") for k in trace))
    g["trace_count.outside"] = f32(sum(not k.startswith("blocks.") for k in trace))

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
    g["flop_ratio.scores_per_softmax"] = f32(stage_flops(model, trace, "attn.scores")
                                             / stage_flops(model, trace, "attn.probs"))

    def stream(name):
        t = trace[name]
        return t.double().std(unbiased=False), torch.linalg.norm(t[0, 0].double())

    g["stream.embed.std"], g["stream.embed.cls_norm"] = stream("embed")
    for i in range(L):
        g[f"stream.blocks.{i}.std"], g[f"stream.blocks.{i}.cls_norm"] = stream(f"blocks.{i}.out")
        # what attention and the MLP add to the [cls] row, and how far the block turns the stream
        for part, stage in (("cls_attn", "attn.proj"), ("cls_mlp", "mlp.fc2")):
            g[f"stream.blocks.{i}.{part}"] = torch.linalg.norm(trace[f"blocks.{i}.{stage}"][0, 0].double())
        before = trace["embed" if i == 0 else f"blocks.{i - 1}.out"][0].double()
        cos = F.cosine_similarity(before, trace[f"blocks.{i}.out"][0].double(), dim=-1)
        g[f"stream.blocks.{i}.cos"] = cos.mean()
        if i == 0:
            g["stream.blocks.0.cls_cos"] = cos[0]

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
    sys.exit(golden_common.main(__doc__))
