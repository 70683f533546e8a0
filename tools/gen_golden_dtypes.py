#!/usr/bin/python3
"""Goldens for half-precision conversion (suite `safetensors`): the same values
stored by PyTorch as F32, F16 and BF16, so the C reader's conversions can be
checked against torch's own rounding.

    tools/gen_golden_dtypes.py         writes tests/golden/dtypes.safetensors
    tools/gen_golden_dtypes.py --help  this text, then the options every golden script takes

Run with /usr/bin/python3 (Debian's python3-torch). Tests never need Python.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_common import golden, main  # noqa: E402
from vitrng import Rng  # noqa: E402


@golden
def dtypes():
    """Special values (signed zero, F16's largest, overflow, subnormals, ties,
    infinities), then 200 normal values of std 10 (seed 7)."""
    specials = torch.tensor([0.0, -0.0, 1.0, -2.5, 65504.0, 70000.0, 1e-8, 6.1e-5, 3.0e-6,
                             1.0009765625, 1.00048828125, 3.14159265, float("inf"), float("-inf")])
    values = torch.cat([specials, torch.from_numpy(Rng(7).fill_normal(200, 0.0, 10.0))])
    g = {
        "f32": values,
        "as_f16": values.to(torch.float16),              # stored as F16
        "as_bf16": values.to(torch.bfloat16),            # stored as BF16
        "f16_back": values.to(torch.float16).float(),    # what F16 decodes to
        "bf16_back": values.to(torch.bfloat16).float(),  # what BF16 decodes to
    }
    # no torch version entry: both conversions round to nearest even, as IEEE 754 says
    return g, {}, {"torch": None}


if __name__ == "__main__":
    sys.exit(main(__doc__))
