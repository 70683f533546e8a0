#!/usr/bin/python3
"""Golden for position-embedding resampling (suite `resample`): timm's
resample_abs_pos_embed, i.e. F.interpolate(mode="bicubic", antialias=True) on
the patch grid, cls row kept. Writes tests/golden/posembed.safetensors."""
import os
import sys

import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import stio  # noqa: E402
from vitrng import Rng  # noqa: E402

OUT = os.path.join(HERE, "..", "tests", "golden", "posembed.safetensors")


def resample(pos, old, new):
    """timm.layers.pos_embed.resample_abs_pos_embed with one prefix token."""
    D = pos.shape[-1]
    prefix, grid = pos[:, :1], pos[:, 1:]
    grid = grid.reshape(1, old, old, D).permute(0, 3, 1, 2)
    grid = F.interpolate(grid, size=(new, new), mode="bicubic", antialias=True, align_corners=False)
    grid = grid.permute(0, 2, 3, 1).reshape(1, -1, D)
    return torch.cat([prefix, grid], dim=1)


g = {}
D, old = 8, 5
pos = torch.from_numpy(Rng(21).fill_normal((1 + old * old) * D)).reshape(1, 1 + old * old, D)
g["pos"] = pos
for new in (7, 3, 12):
    g[f"pos.{new}"] = resample(pos, old, new)
stio.save(OUT, g, {"generator": "tools/gen_golden_posembed.py", "torch": torch.__version__})
print("wrote", os.path.normpath(OUT))
