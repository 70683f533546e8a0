#!/usr/bin/python3
"""PyTorch golden for one attention score taken apart (lib/explain/score_parts.c,
suite `score_parts`, tests/test_score_parts.c): tests/golden/score_parts.safetensors.

    tools/gen_golden_score_parts.py         writes it
    tools/gen_golden_score_parts.py --help  this text, then the options every golden script takes

A cell (layer l, head h, query i, key j) of an attention layer, from the
layer's q and k (B, H, N, Dh), step by step (chapters 01 to 03):

    products = q[0, h, i] * k[0, h, j]          (Dh)
    score    = products.sum()
    scaled   = score * Dh ** -0.5
    row      = q[0, h, i] @ k[0, h].T * Dh ** -0.5    (N) every key
    row_max  = row.max()
    exp      = exp(scaled - row_max)
    row_sum  = exp(row - row_max).sum()
    prob     = exp / row_sum

The model is the shipped one, data/models/vit-fashion.safetensors, run by
tools/ref_vit.py's RefViT (torch.nn modules, written from timm's
VisionTransformer, not from the C code) in float64 on one shipped picture
(IMAGE below), grey bytes v normalised as (v / 255 - mean) / std with the
model file's "mean" and "std", in float32. This script checks that score,
scaled and prob equal RefViT's own recorded `scores`, `scaled` and `probs`
at the cell (its arithmetic step by step against torch's softmax).

  input     (1, 1, 28, 28)   what the test feeds the C model
  cells     (C, 4)           layer, head, query, key of each cell (small integers, exact)
  q, k      (C, Dh)          q_i and k_j of the cell's head
  products  (C, Dh)          q_i * k_j
  parts     (C, 7)           score, scale, scaled, row_max, exp, row_sum, prob
  probs     (C, N)           the query's row of the recorded probs (every key)

Tolerances ("tol.NAME", |c - ref| <= atol + rtol |ref|): the C forward is
float32, within about 1e-6 of float64 here; ATOL and RTOL below leave room
for another CPU's rounding.

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
IMAGE = "data/images/fashion-mnist/0000-ankle-boot.png"  # tests/test_score_parts.c names it too
# (layer, head, query, key); key None: the key the query attends to most, found here
CELLS = [(0, 0, 0, 0), (1, 2, 10, 24), (3, 1, 0, None), (5, 3, 49, 7), (2, 0, 24, 24)]
ATOL, RTOL = 2e-5, 1e-4


def picture(mean, std):
    """The picture as the model sees it: (1, 1, S, S) float32."""
    grey = np.asarray(Image.open(os.path.join(ROOT, IMAGE)).convert("L"), dtype=np.float32)
    x = (grey / np.float32(255) - np.float32(mean)) / np.float32(std)
    return torch.from_numpy(x[None, None].astype(np.float32))


def parts_of(q, k, h, i, j):
    """The parts of score (h, i, j) of image 0, from q and k (1, H, N, Dh)."""
    Dh = q.shape[-1]
    scale = Dh ** -0.5
    products = q[0, h, i] * k[0, h, j]
    score = products.sum()
    scaled = score * scale
    row = (k[0, h] @ q[0, h, i]) * scale
    row_max = row.max()
    exp = torch.exp(scaled - row_max)
    row_sum = torch.exp(row - row_max).sum()
    prob = exp / row_sum
    numbers = torch.stack([score, torch.tensor(scale, dtype=q.dtype), scaled, row_max, exp,
                           row_sum, prob])
    return products, numbers


@golden
def score_parts():
    path = os.path.join(ROOT, MODEL)
    meta = stio.load(path)[1]
    mean, std = float(meta.get("mean", 0.2860)), float(meta.get("std", 0.3530))
    model = RefViT.from_safetensors(path).double()
    x = picture(mean, std)
    trace = {}
    with torch.no_grad():
        model(x.double(), lambda name, t: trace.__setitem__(name, t))
    cells, qs, ks, products, parts, rows = [], [], [], [], [], []
    for layer, h, i, j in CELLS:
        a = f"blocks.{layer}.attn."
        q, k, probs = trace[a + "q"], trace[a + "k"], trace[a + "probs"]
        if j is None:
            j = int(probs[0, h, i].argmax())
        p, numbers = parts_of(q, k, h, i, j)
        # the steps against torch's own matrix product and softmax
        assert torch.allclose(numbers[0], trace[a + "scores"][0, h, i, j], rtol=1e-12, atol=1e-12)
        assert torch.allclose(numbers[2], trace[a + "scaled"][0, h, i, j], rtol=1e-12, atol=1e-12)
        assert torch.allclose(numbers[6], probs[0, h, i, j], rtol=1e-12, atol=1e-15)
        cells.append([layer, h, i, j])
        qs.append(q[0, h, i])
        ks.append(k[0, h, j])
        products.append(p)
        parts.append(numbers)
        rows.append(probs[0, h, i])
    f32 = lambda rows: torch.stack(rows).float().contiguous()  # noqa: E731
    tensors = {"input": x, "cells": torch.tensor(cells, dtype=torch.float32),
               "q": f32(qs), "k": f32(ks), "products": f32(products), "parts": f32(parts),
               "probs": f32(rows)}
    tol = {name: (ATOL, RTOL) for name in ("q", "k", "products", "parts", "probs")}
    tol.update({"input": (0.0, 0.0), "cells": (0.0, 0.0)})
    extra = {"model": MODEL, "images": IMAGE,
             "reference": "tools/ref_vit.py's RefViT in float64, its q and k taken apart"}
    return tensors, tol, extra


if __name__ == "__main__":
    sys.exit(main(__doc__))
