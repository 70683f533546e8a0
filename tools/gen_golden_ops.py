#!/usr/bin/python3
"""PyTorch goldens for the elementary ops in lib/ops/ops.h (suite `ops`).

    tools/gen_golden_ops.py            writes tests/golden/ops.safetensors
    tools/gen_golden_ops.py --help     this text, then the options every golden script takes

Inputs come from lib/base/rng.h's PCG32 (reproduced by vitrng.py), so the C test
rebuilds exactly the same inputs; outputs come from torch.nn.functional, in
float64, rounded once to float32.

Run with /usr/bin/python3 (Debian's python3-torch). Tests never need Python.
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_common import golden, main  # noqa: E402
from vitrng import Rng  # noqa: E402


def t(values, *shape):
    return torch.from_numpy(values).reshape(*shape)


@golden
def ops():
    """softmax, layernorm, gelu, linear and dot, each on its own seed."""
    g = {}
    # softmax: 5 rows of 37, values in [-8, 8) (seed 1)
    x = t(Rng(1).fill_uniform(5 * 37, -8, 8), 5, 37)
    g["softmax.x"] = x
    g["softmax.out"] = torch.softmax(x.double(), dim=-1).float()

    # layernorm: 7 rows of 96, gamma/beta random (seed 2)
    r = Rng(2)
    x = t(r.fill_normal(7 * 96, 0.5, 3.0), 7, 96)
    gamma = t(r.fill_normal(96, 1.0, 0.2), 96)
    beta = t(r.fill_normal(96, 0.0, 0.2), 96)
    g["layernorm.x"], g["layernorm.gamma"], g["layernorm.beta"] = x, gamma, beta
    g["layernorm.out"] = F.layer_norm(x.double(), (96,), gamma.double(), beta.double(), 1e-6).float()

    # gelu (exact erf form), values in [-6, 6) (seed 3)
    x = t(Rng(3).fill_uniform(301, -6, 6), 301)
    g["gelu.x"] = x
    g["gelu.out"] = F.gelu(x.double()).float()

    # linear: x (9, 40), w (24, 40), b (24) (seed 4)
    r = Rng(4)
    x = t(r.fill_normal(9 * 40), 9, 40)
    w = t(r.fill_normal(24 * 40, 0.0, 0.1), 24, 40)
    b = t(r.fill_normal(24), 24)
    g["linear.x"], g["linear.w"], g["linear.b"] = x, w, b
    g["linear.out"] = F.linear(x.double(), w.double(), b.double()).float()

    # dot of two length-1000 vectors (seed 5)
    r = Rng(5)
    a, b = t(r.fill_normal(1000), 1000), t(r.fill_normal(1000), 1000)
    g["dot.a"], g["dot.b"] = a, b
    g["dot.out"] = torch.dot(a.double(), b.double()).float()
    return g


if __name__ == "__main__":
    sys.exit(main(__doc__))
