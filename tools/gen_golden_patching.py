#!/usr/bin/python3
"""PyTorch golden for activation patching (lib/explain/patching.c, suite
`patching`, tests/test_patching.c): tests/golden/patching.safetensors.

    tools/gen_golden_patching.py         writes it
    tools/gen_golden_patching.py --help  this text, then the options every golden script takes

Two pictures, A and B, each run through the model. Then, for every block l
and token t, A's pass is run again from the output of block l with row t of
`blocks.{l}.out` taken from B's pass, through the blocks after l, the final
norm and the head; the measure is the probability of A's class c (the one the
model predicts for A):

    p[l, t] = softmax(head(norm(blocks[l+1:](x_A,l with row t <- x_B,l,t))[:, 0]))[c]

The model is the shipped one, data/models/vit-fashion.safetensors, run by
tools/ref_vit.py's RefViT (torch.nn modules, written from timm's
VisionTransformer, not from the C code) in float64; the patched passes call
its own blocks, norm and head modules. A is the ankle boot, B the sneaker
(IMAGES below), grey bytes v normalised as (v / 255 − mean) / std with the
model file's "mean" and "std", in float32:

  a, b      (1, 1, 28, 28)   what the test feeds the C model
  prob      (L, T)           p[l, t], A's class probability after the patch
  top       (L, T)           the patched pass's predicted class, as float32
  probs_a   (Y)              A's own probabilities (unpatched)
  probs_b   (Y)              B's own probabilities (unpatched)
  class     (1)              c, as float32

The script checks two properties on the way: patching every row of block
L − 1 gives B's probabilities, and patching A with itself gives A's.

Tolerances ("tol.NAME", |c − ref| <= atol + rtol |ref|): probabilities are in
[0, 1] and the C forward is float32, about 1e-6 off here; ATOL and RTOL
below leave room for another CPU's rounding.

Run with /usr/bin/python3 (Debian's python3-torch and python3-pil). Tests never need Python.
"""
import os
import sys

import numpy as np
import torch
from PIL import Image

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stio  # noqa: E402
from golden_common import ROOT, golden, main  # noqa: E402
from ref_vit import RefViT  # noqa: E402

MODEL = "data/models/vit-fashion.safetensors"
# tests/test_patching.c names the same pictures: A, then B
IMAGES = ["data/images/fashion-mnist/0000-ankle-boot.png",
          "data/images/fashion-mnist/0009-sneaker.png"]
ATOL, RTOL = 2e-5, 1e-4


def picture(path, mean, std):
    """One picture as the model sees it: (1, 1, S, S) float32."""
    grey = np.asarray(Image.open(os.path.join(ROOT, path)).convert("L"), dtype=np.float32)
    x = (grey / np.float32(255) - np.float32(mean)) / np.float32(std)
    return torch.from_numpy(x[None, None].astype(np.float32))


def streams(model, x):
    """[blocks.{l}.out for every l], each (1, T, D), and the model's probabilities."""
    trace = {}
    logits = model(x, lambda name, t: trace.__setitem__(name, t))
    return [trace[f"blocks.{i}.out"] for i in range(len(model.blocks))], \
        torch.softmax(logits, dim=-1)[0]


def run_on(model, x, layer):
    """The model's probabilities with x as block `layer`'s output: its later blocks, norm, head."""
    no_trace = lambda name, t: None  # noqa: E731
    for i in range(layer + 1, len(model.blocks)):
        x = model.blocks[i](x, no_trace, f"blocks.{i}.")
    return torch.softmax(model.head(model.norm(x)[:, 0]), dim=-1)[0]


def patched(model, xa, xb, layer, rows):
    """A's stream after `layer` with the given rows B's, run on."""
    x = xa[layer].clone()
    x[:, rows] = xb[layer][:, rows]
    return run_on(model, x, layer)


@golden
def patching():
    path = os.path.join(ROOT, MODEL)
    meta = stio.load(path)[1]
    mean, std = float(meta.get("mean", 0.2860)), float(meta.get("std", 0.3530))
    model = RefViT.from_safetensors(path).double()
    a, b = (picture(p, mean, std) for p in IMAGES)
    with torch.no_grad():
        xa, pa = streams(model, a.double())
        xb, pb = streams(model, b.double())
        L, T = len(xa), xa[0].shape[1]
        c = int(torch.argmax(pa))
        everything = patched(model, xa, xb, L - 1, list(range(T)))
        assert torch.allclose(everything, pb, atol=1e-12), "every row of B is not B"
        assert torch.allclose(patched(model, xa, xa, 0, [0]), pa, atol=1e-12), "A into A moved"
        prob = torch.zeros(L, T, dtype=torch.float64)
        top = torch.zeros(L, T, dtype=torch.float64)
        for l in range(L):
            for t in range(T):
                p = patched(model, xa, xb, l, [t])
                prob[l, t], top[l, t] = p[c], float(torch.argmax(p))
    tensors = {"a": a, "b": b, "prob": prob.float(), "top": top.float(),
               "probs_a": pa.float(), "probs_b": pb.float(),
               "class": torch.tensor([float(c)], dtype=torch.float32)}
    tol = {"a": (0.0, 0.0), "b": (0.0, 0.0), "prob": (ATOL, RTOL), "top": (0.0, 0.0),
           "probs_a": (ATOL, RTOL), "probs_b": (ATOL, RTOL), "class": (0.0, 0.0)}
    extra = {"model": MODEL, "images": " ".join(IMAGES),
             "reference": "tools/ref_vit.py's RefViT in float64, its own later blocks, norm "
                          "and head run on the patched stream"}
    return tensors, tol, extra


if __name__ == "__main__":
    sys.exit(main(__doc__))
