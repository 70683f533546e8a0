#!/usr/bin/python3
"""PyTorch golden for the logit lens (lib/explain/logit_lens.c, suite `lens`,
tests/test_lens.c): tests/golden/lens.safetensors.

    tools/gen_golden_lens.py         writes it
    tools/gen_golden_lens.py --help  this text, then the options every golden script takes

The lens reads the model's answer at every depth of the residual stream: the
[cls] row of `embed` (depth 0) and of each `blocks.{i}.out` (depth i + 1)
through the final LayerNorm and the head, then a softmax:

    p_d = softmax(head(norm(x_d[:, 0])))

The model is the shipped one, data/models/vit-fashion.safetensors, run by
tools/ref_vit.py's RefViT (torch.nn modules, written from timm's
VisionTransformer, not from the C code) in float64, with its own `norm` and
`head` modules applied to the recorded stream. The batch is two of the
shipped test pictures (IMAGES below), grey bytes v normalised as
(v / 255 − mean) / std with the model file's "mean" and "std", in float32:

  input   (B, 1, 28, 28)     what the test feeds the C model
  lens    (B, L + 1, Y)      the probabilities, depth 0 first
  probs   (B, Y)             softmax of the model's logits: lens[:, L] must equal it,
                             which this script checks

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
# tests/test_lens.c names the same pictures, in this order
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


def lens_of(model, x):
    """(B, L + 1, Y): the model's own norm and head on the [cls] row after each depth."""
    trace = {}
    logits = model(x, lambda name, t: trace.__setitem__(name, t))
    depths = ["embed"] + [f"blocks.{i}.out" for i in range(len(model.blocks))]
    rows = [torch.softmax(model.head(model.norm(trace[d][:, 0])), dim=-1) for d in depths]
    return torch.stack(rows, dim=1), torch.softmax(logits, dim=-1)


@golden
def lens():
    path = os.path.join(ROOT, MODEL)
    meta = stio.load(path)[1]
    mean, std = float(meta.get("mean", 0.2860)), float(meta.get("std", 0.3530))
    model = RefViT.from_safetensors(path).double()
    x = pictures(mean, std)
    p, probs = lens_of(model, x.double())
    assert torch.equal(p[:, -1], probs), "the last depth is not the model's output"
    ones = torch.ones(p.shape[:2], dtype=p.dtype)
    assert torch.allclose(p.sum(-1), ones), "rows not summing to 1"
    tensors = {"input": x, "lens": p.float().contiguous(), "probs": probs.float().contiguous()}
    tol = {"input": (0.0, 0.0), "lens": (ATOL, RTOL), "probs": (ATOL, RTOL)}
    extra = {"model": MODEL, "images": " ".join(IMAGES),
             "reference": "tools/ref_vit.py's RefViT in float64, its norm and head at each depth"}
    return tensors, tol, extra


if __name__ == "__main__":
    sys.exit(main(__doc__))
