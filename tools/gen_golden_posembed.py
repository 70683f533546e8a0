#!/usr/bin/python3
"""Golden for position-embedding resampling (suite `resample`): timm's
resample_abs_pos_embed, i.e. F.interpolate(mode="bicubic", antialias=True) on
the patch grid, cls row kept.

    tools/gen_golden_posembed.py         writes tests/golden/posembed.safetensors
    tools/gen_golden_posembed.py --help  this text, then the options every golden script takes

Run with /usr/bin/python3 (Debian's python3-torch). Tests never need Python.
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_common import golden, main  # noqa: E402
from vitrng import Rng  # noqa: E402


def resample(pos, old, new):
    """timm.layers.pos_embed.resample_abs_pos_embed with one prefix token."""
    D = pos.shape[-1]
    prefix, grid = pos[:, :1], pos[:, 1:]
    grid = grid.reshape(1, old, old, D).permute(0, 3, 1, 2)
    grid = F.interpolate(grid, size=(new, new), mode="bicubic", antialias=True, align_corners=False)
    grid = grid.permute(0, 2, 3, 1).reshape(1, -1, D)
    return torch.cat([prefix, grid], dim=1)


@golden
def posembed():
    """A (1, 1 + 5·5, 8) embedding (seed 21) resampled to grids of 7, 3 and 12."""
    g = {}
    D, old = 8, 5
    pos = torch.from_numpy(Rng(21).fill_normal((1 + old * old) * D)).reshape(1, 1 + old * old, D)
    g["pos"] = pos
    for new in (7, 3, 12):
        g[f"pos.{new}"] = resample(pos, old, new)
    return g


if __name__ == "__main__":
    sys.exit(main(__doc__))
