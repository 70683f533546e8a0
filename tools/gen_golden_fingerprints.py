#!/usr/bin/python3
"""PyTorch golden for the head fingerprints (lib/explain/head_fingerprints.c,
suite `head_fingerprints`, tests/test_head_fingerprints.c):
tests/golden/fingerprints.safetensors.

    tools/gen_golden_fingerprints.py         writes it
    tools/gen_golden_fingerprints.py --help  this text, then the options every golden script takes

A head's fingerprint is three numbers, each averaged over the patch queries
i (the [cls] query has no place on the grid and is left out), with p_ij the
attention probabilities of `blocks.{l}.attn.probs`:

    distance  Σ_j∈patches p_ij |u_i − u_j|₂ / Σ_j∈patches p_ij   (u: the patch's (row, col))
    entropy   −Σ_j p_ij ln p_ij over all N keys, in nats
    cls       p_i,cls

The model is the shipped one, data/models/vit-fashion.safetensors, run by
tools/ref_vit.py's RefViT (torch.nn modules, written from timm's
VisionTransformer, not from the C code) in float64, for two of the shipped
test pictures (IMAGES below), grey bytes v normalised as (v / 255 − mean) /
std with the model file's "mean" and "std", in float32:

  input         (B, 1, 28, 28)   what the test feeds the C model
  fingerprints  (B, L, H, 3)     distance, entropy, cls share per layer and head

Tolerances ("tol.NAME", |c − ref| <= atol + rtol |ref|): the C forward is
float32, its probabilities about 1e-7 off these; distances are up to ~4
patches and entropies up to ln 50 ≈ 3.9, so ATOL and RTOL below leave room
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
# tests/test_head_fingerprints.c names the same pictures, in this order
IMAGES = ["data/images/fashion-mnist/0000-ankle-boot.png",
          "data/images/fashion-mnist/0004-shirt.png"]
ATOL, RTOL = 2e-5, 1e-4


def pictures(mean, std):
    """The pictures as the model sees them: (B, 1, S, S) float32."""
    rows = []
    for path in IMAGES:
        grey = np.asarray(Image.open(os.path.join(ROOT, path)).convert("L"), dtype=np.float32)
        rows.append((grey / np.float32(255) - np.float32(mean)) / np.float32(std))
    return torch.from_numpy(np.stack(rows)[:, None].astype(np.float32))


def grid_distances(side):
    """(P, P): the Euclidean distance between patch i and patch j, in patch sides."""
    yx = torch.tensor([(y, x) for y in range(side) for x in range(side)], dtype=torch.float64)
    return torch.cdist(yx, yx)


def fingerprints_of(probs, side):
    """(B, H, 3) from one layer's (B, H, N, N), [cls] the first token."""
    patch_rows = probs[:, :, 1:, :]                      # (B, H, P, N): patch queries
    on_patches = patch_rows[..., 1:]                     # (B, H, P, P)
    dist = (on_patches * grid_distances(side)).sum(-1) / on_patches.sum(-1)
    plogp = torch.where(patch_rows > 0, patch_rows * torch.log(patch_rows),
                        torch.zeros_like(patch_rows))
    entropy = -plogp.sum(-1)
    cls = patch_rows[..., 0]
    return torch.stack([dist.mean(-1), entropy.mean(-1), cls.mean(-1)], dim=-1)


@golden
def fingerprints():
    path = os.path.join(ROOT, MODEL)
    meta = stio.load(path)[1]
    mean, std = float(meta.get("mean", 0.2860)), float(meta.get("std", 0.3530))
    model = RefViT.from_safetensors(path).double()
    x = pictures(mean, std)
    trace = {}
    model(x.double(), lambda name, t: trace.__setitem__(name, t))
    side = x.shape[-1] // model.patch_embed.stride[0]  # 28 / 4 = 7
    L = len(model.blocks)
    table = torch.stack([fingerprints_of(trace[f"blocks.{l}.attn.probs"], side)
                         for l in range(L)], dim=1)  # (B, L, H, 3)
    assert trace["blocks.0.attn.probs"].shape[-1] == side * side + 1, "not one [cls] + the grid"
    tensors = {"input": x, "fingerprints": table.float().contiguous()}
    tol = {"input": (0.0, 0.0), "fingerprints": (ATOL, RTOL)}
    extra = {"model": MODEL, "images": " ".join(IMAGES),
             "reference": "tools/ref_vit.py's RefViT in float64; distance, entropy and cls share "
                          "computed here from its blocks.{l}.attn.probs"}
    return tensors, tol, extra


if __name__ == "__main__":
    sys.exit(main(__doc__))
