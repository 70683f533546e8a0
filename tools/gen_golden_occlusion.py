#!/usr/bin/python3
"""PyTorch golden for occlusion (lib/explain/occlusion.c, suite `occlusion`,
tests/test_occlusion.c): tests/golden/occlusion.safetensors.

    tools/gen_golden_occlusion.py         writes it
    tools/gen_golden_occlusion.py --help  this text, then the options every golden script takes

Occlusion blacks out one patch at a time and reads how far the predicted
class's probability falls:

    fall_q = p_c(x) - p_c(x with patch q black),   c = argmax p(x)

which is Captum's Occlusion with a window and a stride of one patch, black as
the baseline and softmax's class c as the target (written out here with
plain tensor indexing, so the golden needs nothing but torch). Its deletion
curve blacks out the k patches of highest fall (ties by index) together and
reads p_c again, for k = 1, 5, 10 (rollout_measure_ks).

The model is the shipped one, data/models/vit-fashion.safetensors, run by
tools/ref_vit.py's RefViT (torch.nn modules, written from timm's
VisionTransformer, not from the C code) in float64. The pictures are two of
the shipped test pictures (IMAGES below), grey bytes v normalised as
(v / 255 - mean) / std with the model file's "mean" and "std", in float32;
black is (0 - mean) / std in float32, as the C code computes it:

  input      (B, 1, 28, 28)  what the test feeds the C model, one picture at a time
  black      (1)             a black pixel, normalised
  classes    (B)             the predicted class c of each picture (as float)
  full       (B)             p_c, nothing black
  occlusion  (B, P)          the falls, patch-major on the 7x7 grid
  deletion   (B, K)          p_c with the occlusion map's top k patches black

Tolerances ("tol.NAME", |c - ref| <= atol + rtol |ref|): probabilities and
their differences are in [-1, 1] and the C forward is float32, about 1e-6 off
here; ATOL and RTOL below leave room for another CPU's rounding. The script
checks that the k-th and (k+1)-th highest falls are more than ATOL apart (the
nearest, the ankle boot's at k = 10, are 7e-5 apart), so the C code's top k
patches are these.

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
# tests/test_occlusion.c names the same pictures, in this order
IMAGES = ["data/images/fashion-mnist/0000-ankle-boot.png",
          "data/images/fashion-mnist/0004-shirt.png"]
KS = [1, 5, 10]  # rollout_measure_ks
ATOL, RTOL = 2e-5, 1e-4


def pictures(mean, std):
    """The pictures as the model sees them: (B, 1, S, S) float32."""
    rows = []
    for path in IMAGES:
        grey = np.asarray(Image.open(os.path.join(ROOT, path)).convert("L"), dtype=np.float32)
        rows.append((grey / np.float32(255) - np.float32(mean)) / np.float32(std))
    return torch.from_numpy(np.stack(rows)[:, None].astype(np.float32))


def blacked(x, patches, p, black):
    """x (1, C, S, S) with each patch of `patches` (row-major on the grid) set to black."""
    out = x.clone()
    side = x.shape[-1] // p
    for q in patches:
        i, j = divmod(q, side)
        out[:, :, i * p:(i + 1) * p, j * p:(j + 1) * p] = black
    return out


def prob(model, x, c):
    return torch.softmax(model(x), dim=-1)[0, c].item()


def occlusion_of(model, x, p, black):
    """One picture (1, C, S, S): its class, p_c, its falls (P) and deletion curve (K)."""
    with torch.no_grad():
        c = int(torch.argmax(model(x), dim=-1)[0])
        full = prob(model, x, c)
        P = (x.shape[-1] // p) ** 2
        falls = [full - prob(model, blacked(x, [q], p, black), c) for q in range(P)]
        order = sorted(range(P), key=lambda q: (-falls[q], q))
        for k in KS:  # the k-th and (k+1)-th falls are further apart than the C code's error
            assert falls[order[k - 1]] - falls[order[k]] > ATOL or \
                falls[order[k - 1]] == falls[order[k]], f"falls too close at k = {k}"
        deletion = [prob(model, blacked(x, order[:k], p, black), c) for k in KS]
    return c, full, falls, deletion


@golden
def occlusion():
    path = os.path.join(ROOT, MODEL)
    meta = stio.load(path)[1]
    mean, std = float(meta.get("mean", 0.2860)), float(meta.get("std", 0.3530))
    model = RefViT.from_safetensors(path).double()
    p = model.patch_embed.kernel_size[0]
    x = pictures(mean, std)
    black = (np.float32(0) - np.float32(mean)) / np.float32(std)
    rows = [occlusion_of(model, x[b:b + 1].double(), p, float(black)) for b in range(len(IMAGES))]
    for b, (_, _, falls, _) in enumerate(rows):  # a patch black already falls by 0 exactly
        grey = x[b, 0] == torch.tensor(black)
        side = x.shape[-1] // p
        for q in range(side * side):
            i, j = divmod(q, side)
            if bool(grey[i * p:(i + 1) * p, j * p:(j + 1) * p].all()):
                assert falls[q] == 0.0, f"picture {b}, black patch {q} falls by {falls[q]}"
    f32 = torch.float32
    tensors = {
        "input": x,
        "black": torch.tensor([black], dtype=f32),
        "classes": torch.tensor([r[0] for r in rows], dtype=f32),
        "full": torch.tensor([r[1] for r in rows], dtype=f32),
        "occlusion": torch.tensor([r[2] for r in rows], dtype=f32),
        "deletion": torch.tensor([r[3] for r in rows], dtype=f32),
    }
    tol = {"input": (0.0, 0.0), "black": (0.0, 0.0), "classes": (0.0, 0.0),
           "full": (ATOL, RTOL), "occlusion": (ATOL, RTOL), "deletion": (ATOL, RTOL)}
    extra = {"model": MODEL, "images": " ".join(IMAGES), "ks": " ".join(map(str, KS)),
             "reference": "tools/ref_vit.py's RefViT in float64, each patch blacked out in turn"}
    return tensors, tol, extra


if __name__ == "__main__":
    sys.exit(main(__doc__))
