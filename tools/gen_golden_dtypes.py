#!/usr/bin/python3
"""Goldens for half-precision conversion: the same values stored by PyTorch as
F32, F16 and BF16, so the C reader's conversions can be checked against
torch's own rounding.  Writes tests/golden/dtypes.safetensors."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stio  # noqa: E402
from vitrng import Rng  # noqa: E402

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden", "dtypes.safetensors")

specials = torch.tensor([0.0, -0.0, 1.0, -2.5, 65504.0, 70000.0, 1e-8, 6.1e-5, 3.0e-6,
                         1.0009765625, 1.00048828125, 3.14159265, float("inf"), float("-inf")])
values = torch.cat([specials, torch.from_numpy(Rng(7).fill_normal(200, 0.0, 10.0))])
stio.save(OUT, {
    "f32": values,
    "as_f16": values.to(torch.float16),          # stored as F16
    "as_bf16": values.to(torch.bfloat16),        # stored as BF16
    "f16_back": values.to(torch.float16).float(),   # what F16 decodes to
    "bf16_back": values.to(torch.bfloat16).float(), # what BF16 decodes to
}, {"generator": "tools/gen_golden_dtypes.py"})
print("wrote", os.path.normpath(OUT))
