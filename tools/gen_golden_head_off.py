#!/usr/bin/python3
"""PyTorch goldens for switching attention heads off (lib/model/head_off.c, suite
`head_off`, tests/test_head_off.c): tests/golden/head_off.safetensors; and for
switching each off in turn (lib/explain/head_importance.c, suite
`head_importance`): tests/golden/head_importance.safetensors.

    tools/gen_golden_head_off.py         writes them
    tools/gen_golden_head_off.py --help  this text, then the options every golden script takes

A head that is off has its attention probabilities multiplied by 0 after the
softmax, Hugging Face's `head_mask` (ViTSelfAttention: `attention_probs =
attention_probs * head_mask`) with 0/1 values (Michel et al. 2019, "Are
Sixteen Heads Really Better than One?"). The model here is written for this
script, from timm's VisionTransformer semantics with torch.nn.functional,
with that mask: an implementation of its own, not the C code's, and not
tools/ref_vit.py's (which has no mask).

The model (CONFIG below: S 12, p 4, so N 10; D 24, H 3 heads of Dh 8, L 3,
M 40, Y 7) is lib/model/init.c's vit_build_random() with VitInit{seed, std,
bias_std, norm_std}, redrawn here bit for bit with tools/vitrng.py (tensor i
of the forward order from PCG32 seeded seed·1000003 + i); the test builds it
in C and checks one drawn tensor against "weights.blocks.1.attn.qkv.weight".
The batch, (2, 3, 12, 12), is rng_fill_uniform(-1, 1) seeded INPUT_SEED.
The reference runs in float64, so a golden is the exact answer rounded once
to float32 and a test's difference is the C code's own float32 error.

Three switchings (CASES), each stored under its name:

  one     head 1 of layer 1 off
  layer   every head of layer 0 off
  none    every head on (the mask all ones): must equal the plain forward,
          which this script checks, bit for bit

  CASE.logits                    (B, Y)
  CASE.blocks.{l}.attn.probs     (B, H, N, N) of the switched layer l (after the mask)
  CASE.blocks.{l}.attn.context   (B, N, D)    of that layer
  CASE.blocks.{l+1}.attn.probs   (B, H, N, N) of the layer after it

and, for `one`, autograd's gradients of sum_b logits[b, CLASSES[b]] (what
lib/explain/rollout.c's rollout_record() asks vit_backward() for: a one-hot
d loss / d logits per image):

  one.grad.input                        (B, 3, S, S)
  one.grad.blocks.1.attn.qkv.weight     (3D, D); the rows of the head that is
                                        off are exactly 0 in q, k and v

A second golden, tests/golden/head_importance.safetensors (suite
`head_importance`, tests/test_head_importance.c, lib/explain/head_importance.c),
switches every head off in turn on the same model and batch, and gives the
change in each image's class probability against the model with every head on
(softmax in float64):

  full.probs     (B, Y)     the full model's probabilities
  predicted      (B)        the class it predicts (argmax), as floats
  grid           (B, L, H)  p[predicted] with head h of layer l off, minus the full one
  layer          (B, L)     the same with every head of layer l off (layer 0 is the
                            `layer` case above)
  chosen.grid    (B, L, H)  the grid for the classes CLASSES instead
  chosen.layer   (B, L)     and its layers

Tolerances (|c - ref| <= atol + rtol |ref|, "tol.NAME" in the metadata):
atol = ATOL x rms(ref) and rtol RTOL for the forward's values, GRAD_ATOL x
rms(ref) for the gradients, as tools/gen_golden_vit.py and
tools/gen_golden_train.py pin the same model pieces; a tensor that is all 0
gets atol 0 (the C code must give 0 exactly).

Run with /usr/bin/python3 (Debian's python3-torch). Tests never need Python.
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_common import golden, main  # noqa: E402
from vitrng import MASK64, Rng  # noqa: E402

# tests/test_head_off.c repeats these numbers and compares this line with the
# golden's "config", so the C side cannot silently test another model.
# Weights of std 0.25 so that attention is far from uniform; every bias and
# LayerNorm scale/shift perturbed so that each of them matters.
CONFIG = dict(img=12, patch=4, chans=3, dim=24, depth=3, heads=3, mlp_dim=40, classes=7,
              batch=2, seed=91, std=0.25, bias_std=0.1, norm_std=0.1, input_seed=92)
EPS = 1e-6
CASES = {"one": (1, [1]), "layer": (0, [0, 1, 2]), "none": (None, [])}  # layer, heads off
CLASSES = [3, 5]  # the class whose logit is differentiated, per image
GRAD_LAYER = 1    # whose qkv weight's gradient is stored

ATOL, RTOL = 1e-4, 1e-4  # x rms: the float32 C forward is off by ~1e-6 x rms here
GRAD_ATOL, GRAD_RTOL = 3e-5, 1e-4


def config_string(c=CONFIG):
    return " ".join(f"{k}={c[k]:g}" if isinstance(c[k], float) else f"{k}={c[k]}" for k in c)


def param_shapes(c):
    """The parameter table's forward order (lib/model/params.c), q, k, v fused: (name, shape, kind)."""
    D, M, Y, C, p = c["dim"], c["mlp_dim"], c["classes"], c["chans"], c["patch"]
    N = (c["img"] // p) ** 2 + 1
    rows = [("patch_embed.proj.weight", (D, C, p, p), "w"), ("patch_embed.proj.bias", (D,), "b"),
            ("cls_token", (1, 1, D), "w"), ("pos_embed", (1, N, D), "w")]
    for i in range(c["depth"]):
        b = f"blocks.{i}."
        rows += [(b + "norm1.weight", (D,), "1"), (b + "norm1.bias", (D,), "0"),
                 (b + "attn.qkv.weight", (3 * D, D), "w"), (b + "attn.qkv.bias", (3 * D,), "b"),
                 (b + "attn.proj.weight", (D, D), "w"), (b + "attn.proj.bias", (D,), "b"),
                 (b + "norm2.weight", (D,), "1"), (b + "norm2.bias", (D,), "0"),
                 (b + "mlp.fc1.weight", (M, D), "w"), (b + "mlp.fc1.bias", (M,), "b"),
                 (b + "mlp.fc2.weight", (D, M), "w"), (b + "mlp.fc2.bias", (D,), "b")]
    rows += [("norm.weight", (D,), "1"), ("norm.bias", (D,), "0"),
             ("head.weight", (Y, D), "w"), ("head.bias", (Y,), "b")]
    return rows


def init_weights(c):
    """lib/model/init.c's draws: weights trunc-normal(0, std) cut at +-2, biases normal(0,
    bias_std), LayerNorm scales normal(1, norm_std) and shifts normal(0, norm_std)."""
    out = {}
    for index, (name, shape, kind) in enumerate(param_shapes(c)):
        n = math.prod(shape)
        rng = Rng((c["seed"] * 1000003 + index) & MASK64)
        if kind == "w":
            v = rng.fill_trunc_normal(n, 0.0, c["std"], -2.0, 2.0)
        elif kind == "b":
            v = rng.fill_normal(n, 0.0, c["bias_std"])
        else:
            v = rng.fill_normal(n, 1.0 if kind == "1" else 0.0, c["norm_std"])
        out[name] = torch.from_numpy(np.asarray(v, dtype=np.float32).reshape(shape))
    return out


def image_batch(c):
    shape = (c["batch"], c["chans"], c["img"], c["img"])
    values = Rng(c["input_seed"]).fill_uniform(math.prod(shape), -1.0, 1.0)
    return torch.from_numpy(values).reshape(shape)


def attention(x, w, prefix, mask_row, rec):
    """timm's Attention with Hugging Face's head_mask: probs * mask_row[h] before @ v."""
    B, N, D = x.shape
    H = CONFIG["heads"]
    Dh = D // H
    qkv = F.linear(x, w[prefix + "qkv.weight"], w[prefix + "qkv.bias"])
    q, k, v = qkv.reshape(B, N, 3, H, Dh).permute(2, 0, 3, 1, 4).unbind(0)
    probs = torch.softmax(q @ k.transpose(-2, -1) * Dh ** -0.5, dim=-1)
    if mask_row is not None:
        probs = probs * mask_row.view(1, H, 1, 1)
    rec(prefix + "probs", probs)
    context = (probs @ v).transpose(1, 2).reshape(B, N, D)
    rec(prefix + "context", context)
    return F.linear(context, w[prefix + "proj.weight"], w[prefix + "proj.bias"])


def forward(w, x, head_mask, rec=lambda name, t: None):
    """The ViT (pre-norm blocks, [cls] pooling); head_mask (L, H) of 0/1, or None."""
    c = CONFIG
    D, p = c["dim"], c["patch"]
    B = x.shape[0]
    t = F.conv2d(x, w["patch_embed.proj.weight"], w["patch_embed.proj.bias"], stride=p)
    t = t.flatten(2).transpose(1, 2)
    t = torch.cat((w["cls_token"].expand(B, -1, -1), t), dim=1) + w["pos_embed"]
    for i in range(c["depth"]):
        b = f"blocks.{i}."
        h = F.layer_norm(t, (D,), w[b + "norm1.weight"], w[b + "norm1.bias"], EPS)
        row = None if head_mask is None else head_mask[i]
        t = t + attention(h, w, b + "attn.", row, rec)
        h = F.layer_norm(t, (D,), w[b + "norm2.weight"], w[b + "norm2.bias"], EPS)
        h = F.linear(F.gelu(F.linear(h, w[b + "mlp.fc1.weight"], w[b + "mlp.fc1.bias"])),
                     w[b + "mlp.fc2.weight"], w[b + "mlp.fc2.bias"])
        t = t + h
    t = F.layer_norm(t, (D,), w["norm.weight"], w["norm.bias"], EPS)
    return F.linear(t[:, 0], w["head.weight"], w["head.bias"])


def mask_for(layer, heads):
    m = torch.ones(CONFIG["depth"], CONFIG["heads"], dtype=torch.float64)
    for h in heads:
        m[layer, h] = 0.0
    return m


def rms(t):
    return float(t.double().pow(2).mean().sqrt())


@golden
def head_off():
    c = CONFIG
    w32 = init_weights(c)
    w = {k: v.double() for k, v in w32.items()}
    x = image_batch(c).double()
    plain = forward(w, x, None)
    out = {"weights.blocks.1.attn.qkv.weight": w32["blocks.1.attn.qkv.weight"]}
    for case, (layer, heads) in CASES.items():
        trace = {}
        logits = forward(w, x, mask_for(layer if layer is not None else 0, heads),
                         lambda name, t: trace.__setitem__(name, t.clone()))
        out[f"{case}.logits"] = logits
        if layer is None:  # every head on: the mask of ones changes no bit
            assert torch.equal(logits, plain), "a mask of ones changed the forward pass"
            continue
        for name in (f"blocks.{layer}.attn.probs", f"blocks.{layer}.attn.context",
                     f"blocks.{layer + 1}.attn.probs"):
            out[f"{case}.{name}"] = trace[name]

    # d sum_b logits[b, CLASSES[b]] for case one, by autograd
    layer, heads = CASES["one"]
    with torch.enable_grad():
        xg = x.clone().requires_grad_(True)
        wg = dict(w)
        qkv = f"blocks.{GRAD_LAYER}.attn.qkv.weight"
        wg[qkv] = w[qkv].clone().requires_grad_(True)
        logits = forward(wg, xg, mask_for(layer, heads))
        logits[torch.arange(c["batch"]), torch.tensor(CLASSES)].sum().backward()
    out["one.grad.input"] = xg.grad
    out[f"one.grad.{qkv}"] = wg[qkv].grad
    D, Dh = c["dim"], c["dim"] // c["heads"]
    if GRAD_LAYER == layer:
        for third in range(3):  # q, k, v rows of the head that is off: no gradient at all
            for h in heads:
                rows = wg[qkv].grad[third * D + h * Dh: third * D + (h + 1) * Dh]
                assert torch.count_nonzero(rows) == 0, "a head that is off got a gradient"

    tensors = {k: v.detach().float().contiguous() for k, v in out.items()}
    tol = {}
    for k, v in out.items():
        if k.startswith("weights."):
            tol[k] = (0.0, 0.0)
        elif not torch.any(v != 0):
            tol[k] = (0.0, 0.0)
        elif ".grad." in k:
            tol[k] = (GRAD_ATOL * rms(v), GRAD_RTOL)
        else:
            tol[k] = (ATOL * rms(v), RTOL)
    meta = {"config": config_string(), "classes": " ".join(map(str, CLASSES)),
            "cases": "one: layer 1 head 1 off; layer: layer 0 all heads off; none: all on",
            "reference": "tools/gen_golden_head_off.py's own ViT with head_mask, float64"}
    return tensors, tol, meta


# A probability change is a difference of two softmax outputs of float32 logits:
# the C code's is off by ~1e-7 here; the changes themselves are ~1e-3 to 1e-1.
DELTA_ATOL, DELTA_RTOL = 2e-6, 1e-4


def class_probs(w, x, mask, classes):
    """softmax(logits)[b, classes[b]] for each image b, with the head_mask `mask` (or None)."""
    p = torch.softmax(forward(w, x, mask), dim=-1)
    return p[torch.arange(x.shape[0]), classes]


def importance(w, x, full, classes):
    """(B, L, H) and (B, L): each head, then each layer's heads, off; minus the full model."""
    c = CONFIG
    B, L, H = x.shape[0], c["depth"], c["heads"]
    base = full[torch.arange(B), classes]
    grid = torch.zeros(B, L, H, dtype=torch.float64)
    layer = torch.zeros(B, L, dtype=torch.float64)
    for lyr in range(L):
        for h in range(H):
            grid[:, lyr, h] = class_probs(w, x, mask_for(lyr, [h]), classes) - base
        layer[:, lyr] = class_probs(w, x, mask_for(lyr, range(H)), classes) - base
    return grid, layer


@golden
def head_importance():
    c = CONFIG
    w = {k: v.double() for k, v in init_weights(c).items()}
    x = image_batch(c).double()
    full = torch.softmax(forward(w, x, None), dim=-1)
    predicted = full.argmax(dim=-1)
    top2 = full.topk(2, dim=-1).values
    assert torch.all(top2[:, 0] - top2[:, 1] > 1e-3), "a near tie: the predicted class is fragile"
    grid, layer = importance(w, x, full, predicted)
    chosen_grid, chosen_layer = importance(w, x, full, torch.tensor(CLASSES))
    out = {"full.probs": full, "predicted": predicted.double(), "grid": grid, "layer": layer,
           "chosen.grid": chosen_grid, "chosen.layer": chosen_layer}
    tensors = {k: v.detach().float().contiguous() for k, v in out.items()}
    tol = {k: (DELTA_ATOL, DELTA_RTOL) for k in out}
    tol["predicted"] = (0.0, 0.0)
    meta = {"config": config_string(), "classes": " ".join(map(str, CLASSES)),
            "reference": "tools/gen_golden_head_off.py's own ViT with head_mask, float64"}
    return tensors, tol, meta


if __name__ == "__main__":
    sys.exit(main(__doc__))
