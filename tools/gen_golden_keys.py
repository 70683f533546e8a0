#!/usr/bin/python3
"""PyTorch goldens that make an answer key point at the bug: tests/golden/keys_*.safetensors.

    tools/gen_golden_keys.py              regenerate every golden below
    tools/gen_golden_keys.py NAME...      regenerate only these, e.g. keys_layernorm_eps
    tools/gen_golden_keys.py --help       this text, then the options every golden script takes

One function per golden file, registered with @golden under its own name
(tools/golden_common.py), returning {name: tensor}, or with tolerances
({name: tensor}, {name: (atol, rtol)}), and metadata as a third element: the
checkpoints below carry their "num_heads" and "layer_norm_eps" there, as the
project's files do.

  * keys_loader_timm, keys_loader_hf, keys_loader_torchvision: one small ViT
    (S 16, p 4, D 16, H 2, L 2, M 64, Y 5) written under each naming
    convention: timm's fused qkv, Hugging Face's separate query/key/value,
    torchvision's fused in_proj (torchvision's own VisionTransformer state dict,
    whose forward pass is checked here against the reference).
    keys_loader: its whole trace on a batch of 2, by tools/ref_vit.py in
    float64; all three files must reproduce it stage by stage (suite weights).
  * keys_layernorm_eps: rows whose variance is near the LayerNorm ε (constant
    rows plus noise of variance 1e-7 to 1e-5, and one exactly constant row),
    with ε = 1e-6 and 1e-5: torch.nn.functional.layer_norm in float64 (suite ops).
  * keys_overflow_timm, keys_overflow: a one-block ViT whose q and k weights
    are scaled up until the scaled attention scores reach the hundreds, where
    exp() overflows float32 (at 88.7), and its whole trace (suite vit).

Weights and inputs are drawn here with torch's generator and committed: the
tests read them, so nothing depends on the C code's random numbers. Expected
values are computed in float64 and stored as float32.

Run with /usr/bin/python3 (Debian's python3-torch). Tests never need Python.
"""
import functools
import math
import os
import sys

import torch
import torch.nn.functional as F
from torchvision.models.vision_transformer import VisionTransformer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_common import golden, main  # noqa: E402
from ref_vit import RefViT  # noqa: E402


def f32(tensors):
    """{name: tensor} stored as float32, the dtype every test here reads."""
    return {k: v.float().contiguous() for k, v in tensors.items()}


def rms(t):
    return float(t.double().pow(2).mean().sqrt())


# ------------------------------------------------------------ small models

# The loader's model. Weights of std 0.3 (fifteen times timm's) so attention is
# far from uniform and q, k and v differ clearly; every bias and LayerNorm
# scale/shift is perturbed so each of them changes the answer.
LOADER = dict(img=16, patch=4, dim=16, depth=2, heads=2, mlp_dim=64, classes=5, batch=2,
              seed=41, std=0.3, bias_std=0.1, norm_std=0.1, qk_gain=1.0)
# The overflow model: one block, 4 patches, q and k weights 10 x 0.3, so q and k
# have an rms of 11, q·k over Dh 8 reaches 835 and the scaled scores (÷ √8) a row
# maximum of 15 to 295: 16 of the 20 rows hold a score above 88.7, where exp()
# overflows float32, and every image and head has such rows.
OVERFLOW = dict(img=8, patch=4, dim=16, depth=1, heads=2, mlp_dim=64, classes=3, batch=2,
                seed=43, std=0.3, bias_std=0.1, norm_std=0.1, qk_gain=10.0)
EPS = 1e-6  # timm's and torchvision's LayerNorm ε, written into every checkpoint


def config_string(c):
    """The one-line description stored as metadata "config"."""
    return " ".join(f"{k}={v}" for k, v in c.items())


@functools.lru_cache(maxsize=None)
def model(which):
    """RefViT (float64) with freshly drawn parameters, its input batch and its trace."""
    c = LOADER if which == "loader" else OVERFLOW
    m = RefViT(c["img"], c["patch"], 3, c["dim"], c["depth"], c["heads"], c["mlp_dim"],
               c["classes"], eps=EPS).double().eval()
    gen = torch.Generator().manual_seed(c["seed"])
    D = c["dim"]
    with torch.no_grad():
        for name, p in m.named_parameters():
            noise = torch.randn(p.shape, generator=gen, dtype=torch.float64)
            if name.endswith("norm1.weight") or name.endswith("norm2.weight") or name == "norm.weight":
                p.copy_(1 + c["norm_std"] * noise)
            elif "norm" in name:
                p.copy_(c["norm_std"] * noise)
            elif name.endswith(".bias"):
                p.copy_(c["bias_std"] * noise)
            else:
                p.copy_(c["std"] * noise)
            if name.endswith("attn.qkv.weight"):
                p[:2 * D] *= c["qk_gain"]  # rows of q and k; v keeps its scale
            # float32 is what the files hold: the reference computes on those very numbers
            p.copy_(p.float().double())
        shape = (c["batch"], 3, c["img"], c["img"])
        x = (torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1).float().double()
        trace = m.trace(x)
    return m, x, trace


def timm_state(m):
    """timm's names for RefViT's parameters (ref_vit.py drops the "proj"/"mlp" levels)."""
    out = {}
    for k, v in m.state_dict().items():
        k = k.replace("patch_embed.", "patch_embed.proj.")
        k = k.replace(".fc1.", ".mlp.fc1.").replace(".fc2.", ".mlp.fc2.")
        out[k] = v
    return out


def hf_state(m):
    """Hugging Face ViTForImageClassification's names: q, k and v as three (D, D) Linears."""
    D = m.cls_token.shape[-1]
    s = m.state_dict()
    out = {"vit.embeddings.cls_token": s["cls_token"],
           "vit.embeddings.position_embeddings": s["pos_embed"],
           "vit.embeddings.patch_embeddings.projection.weight": s["patch_embed.weight"],
           "vit.embeddings.patch_embeddings.projection.bias": s["patch_embed.bias"]}
    for i in range(len(m.blocks)):
        b, h = f"blocks.{i}.", f"vit.encoder.layer.{i}."
        out[h + "layernorm_before.weight"] = s[b + "norm1.weight"]
        out[h + "layernorm_before.bias"] = s[b + "norm1.bias"]
        for part, what in enumerate(("query", "key", "value")):  # qkv's row blocks, in order
            out[h + f"attention.attention.{what}.weight"] = s[b + "attn.qkv.weight"][part * D:(part + 1) * D]
            out[h + f"attention.attention.{what}.bias"] = s[b + "attn.qkv.bias"][part * D:(part + 1) * D]
        out[h + "attention.output.dense.weight"] = s[b + "attn.proj.weight"]
        out[h + "attention.output.dense.bias"] = s[b + "attn.proj.bias"]
        out[h + "layernorm_after.weight"] = s[b + "norm2.weight"]
        out[h + "layernorm_after.bias"] = s[b + "norm2.bias"]
        out[h + "intermediate.dense.weight"] = s[b + "fc1.weight"]
        out[h + "intermediate.dense.bias"] = s[b + "fc1.bias"]
        out[h + "output.dense.weight"] = s[b + "fc2.weight"]
        out[h + "output.dense.bias"] = s[b + "fc2.bias"]
    out["vit.layernorm.weight"], out["vit.layernorm.bias"] = s["norm.weight"], s["norm.bias"]
    out["classifier.weight"], out["classifier.bias"] = s["head.weight"], s["head.bias"]
    return out


def torchvision_state(m, x, trace):
    """torchvision's own VisionTransformer holding the same parameters: its state dict.

    Its nn.MultiheadAttention keeps q, k, v as one fused in_proj [W_q; W_k; W_v]; its
    forward pass (float64) must give the reference's logits, which proves the mapping.
    """
    c = LOADER
    tv = VisionTransformer(image_size=c["img"], patch_size=c["patch"], num_layers=c["depth"],
                           num_heads=c["heads"], hidden_dim=c["dim"], mlp_dim=c["mlp_dim"],
                           num_classes=c["classes"]).double().eval()
    s = m.state_dict()
    state = {"class_token": s["cls_token"], "conv_proj.weight": s["patch_embed.weight"],
             "conv_proj.bias": s["patch_embed.bias"], "encoder.pos_embedding": s["pos_embed"],
             "encoder.ln.weight": s["norm.weight"], "encoder.ln.bias": s["norm.bias"],
             "heads.head.weight": s["head.weight"], "heads.head.bias": s["head.bias"]}
    for i in range(len(m.blocks)):
        b, t = f"blocks.{i}.", f"encoder.layers.encoder_layer_{i}."
        state.update({t + "ln_1.weight": s[b + "norm1.weight"], t + "ln_1.bias": s[b + "norm1.bias"],
                      t + "self_attention.in_proj_weight": s[b + "attn.qkv.weight"],
                      t + "self_attention.in_proj_bias": s[b + "attn.qkv.bias"],
                      t + "self_attention.out_proj.weight": s[b + "attn.proj.weight"],
                      t + "self_attention.out_proj.bias": s[b + "attn.proj.bias"],
                      t + "ln_2.weight": s[b + "norm2.weight"], t + "ln_2.bias": s[b + "norm2.bias"],
                      t + "mlp.0.weight": s[b + "fc1.weight"], t + "mlp.0.bias": s[b + "fc1.bias"],
                      t + "mlp.3.weight": s[b + "fc2.weight"], t + "mlp.3.bias": s[b + "fc2.bias"]})
    tv.load_state_dict(state, strict=True)  # every name and shape is torchvision's
    with torch.no_grad():
        logits = tv(x)
    gap = float((logits - trace["logits"]).abs().max())
    assert gap < 1e-10, f"torchvision's forward differs from the reference by {gap}"
    return dict(tv.state_dict())


def checkpoint_meta(which, convention):
    c = LOADER if which == "loader" else OVERFLOW
    return {"num_heads": str(c["heads"]), "layer_norm_eps": f"{EPS:g}",
            "convention": convention, "config": config_string(c)}


# Tolerance of a trace, per stage, as tools/gen_golden_vit.py reasons for its small
# model: atol = 1e-4 x rms(ref), rtol 1e-4. The float32 C forward pass is off by
# about 1e-6 x rms in every stage; a real mistake (q and k exchanged, a wrong
# index, a missing bias) is off by about 1 x rms.
TRACE_ATOL, TRACE_RTOL = 1e-4, 1e-4


def trace_golden(which):
    _, _, trace = model(which)
    tol = {name: (TRACE_ATOL * rms(t), TRACE_RTOL) for name, t in trace.items()}
    meta = {"config": config_string(LOADER if which == "loader" else OVERFLOW),
            "reference": "tools/ref_vit.py in float64"}
    return f32(trace), tol, meta


# ------------------------------------------------------------------ loader

@golden
def keys_loader():
    """Every stage of the loader's model on its batch of 2 (input included)."""
    return trace_golden("loader")


@golden
def keys_loader_timm():
    """The loader's model with timm's names (fused blocks.N.attn.qkv)."""
    m, _, _ = model("loader")
    return f32(timm_state(m)), {}, checkpoint_meta("loader", "timm")


@golden
def keys_loader_hf():
    """The loader's model with Hugging Face's names (separate query, key, value)."""
    m, _, _ = model("loader")
    return f32(hf_state(m)), {}, checkpoint_meta("loader", "hf")


@golden
def keys_loader_torchvision():
    """The loader's model as torchvision's VisionTransformer stores it (fused in_proj)."""
    m, x, trace = model("loader")
    return f32(torchvision_state(m, x, trace)), {}, checkpoint_meta("loader", "torchvision")


# --------------------------------------------------------------- LayerNorm

# Row variances around ε: ignoring ε changes the output by a factor
# sqrt((var + ε) / var), from 1.05 (var 1e-5, ε 1e-6) to 3.3 (var 1e-7, ε 1e-6),
# and an exactly constant row (var 0) becomes 0/0.
LN_VARIANCES = (1e-7, 3e-7, 1e-6, 3e-6, 1e-5, 0.0)
LN_CENTRES = (0.0, 1.0, -0.5, 0.25, -1.5, 0.75)
LN_DIM = 64


@golden
def keys_layernorm_eps():
    """x, gamma, beta and F.layer_norm(x) for each ε, rows of variance 0 to 1e-5.

    The tolerance is the test's (tests/test_ops.c), reasoned there from the float32
    error this reference measures.
    """
    gen = torch.Generator().manual_seed(51)
    g = {}
    for eps in (1e-6, 1e-5):
        rows = []
        for var, centre in zip(LN_VARIANCES, LN_CENTRES):
            noise = torch.randn(LN_DIM, generator=gen, dtype=torch.float64)
            noise = (noise - noise.mean()) / noise.std(unbiased=False)  # variance exactly 1
            rows.append(centre + math.sqrt(var) * noise)
        x = torch.stack(rows).float()  # the float32 numbers both sides use
        gamma = (1 + 0.2 * torch.randn(LN_DIM, generator=gen, dtype=torch.float64)).float()
        beta = (0.1 * torch.randn(LN_DIM, generator=gen, dtype=torch.float64)).float()
        key = f"eps{eps:g}"
        g[key + ".x"], g[key + ".gamma"], g[key + ".beta"] = x, gamma, beta
        g[key + ".eps"] = torch.tensor(eps)
        g[key + ".var"] = x.double().var(dim=1, unbiased=False)  # what the rows really hold
        g[key + ".out"] = F.layer_norm(x.double(), (LN_DIM,), gamma.double(), beta.double(), eps)
    return f32(g)


# ----------------------------------------------------------------- overflow

@golden
def keys_overflow_timm():
    """The overflow model with timm's names."""
    m, _, _ = model("overflow")
    return f32(timm_state(m)), {}, checkpoint_meta("overflow", "timm")


@golden
def keys_overflow():
    """Every stage of the overflow model on a batch of 2: scaled scores in the hundreds."""
    tensors, tol, meta = trace_golden("overflow")
    top = tensors["blocks.0.attn.scaled"].max(dim=-1).values  # (B, H): each row's largest
    overflow = math.log(torch.finfo(torch.float32).max)     # 88.72
    assert bool((top.max(dim=-1).values > overflow).all()), "each image and head must overflow"
    meta["scaled.row_max"] = f"{float(top.min()):.0f} to {float(top.max()):.0f}"
    meta["scaled.rows_over_88.7"] = f"{int((top > overflow).sum())} of {top.numel()}"
    return tensors, tol, meta


# --------------------------------------------------------------------- main

if __name__ == "__main__":
    sys.exit(main(__doc__))
