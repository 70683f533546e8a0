#!/usr/bin/python3
"""PyTorch goldens for lib/gemm/gemm.h (suite `gemm` in tests/test_gemm.c).

Every case draws its inputs from lib/base/rng.h's PCG32 (reproduced bit for bit by
vitrng.py): rng_seed(seed), then a (M,K) and then b, uniform in [-1, 1), b
stored as (K,N) for `ab` cases (matmul) and as (N,K) for `abt` cases
(matmul_bt, b like a Linear weight). The C test rebuilds the same inputs from
the same seeds, so no input is stored. Products are computed by torch.matmul
in float64 and rounded once to float32: the expected values carry no float32
accumulation error, only the C code's own error is measured.

    tools/gen_golden_gemm.py           writes tests/golden/gemm_small.safetensors
                                       and tests/golden/gemm_vitb_qkv.safetensors
    tools/gen_golden_gemm.py --help    this text, then the options every golden script takes

gemm_small: the full product of each small case, named like "abt_17x33x65".
gemm_vitb_qkv: x (197,768) · W (2304,768)ᵀ, the fused q,k,v projection of one
ViT-B/16 image. Its 454k outputs would be 1.8 MB, so it pins instead
  qkv.sample_index (64,2)  (row, column) of 64 fixed elements (float, exact)
  qkv.samples      (64)    those elements
  qkv.row_sums     (197)   Σ_j out[i][j]  (every element counts in one)
  qkv.col_sums     (2304)  Σ_i out[i][j]  (… and in another)
~10 kB that no wrong element can hide from: a wrong value moves its row sum
and its column sum.

Run with /usr/bin/python3 (Debian's python3-torch). Tests never need Python.
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_common import golden, main  # noqa: E402
from vitrng import Rng  # noqa: E402

# (name, M, K, N, b transposed?, seed) — the same table is in tests/test_gemm.c.
# Shapes cross every block size of the tiled kernel at least once:
# K > KC=256, M > MC=144, N not a multiple of any tile width.
SMALL_CASES = [
    ("ab_1x1x1", 1, 1, 1, False, 11),
    ("abt_1x1x1", 1, 1, 1, True, 12),
    ("ab_1x7x1", 1, 7, 1, False, 13),
    ("abt_1x7x1", 1, 7, 1, True, 14),
    ("ab_3x5x7", 3, 5, 7, False, 15),
    ("abt_3x5x7", 3, 5, 7, True, 16),
    ("ab_17x33x65", 17, 33, 65, False, 17),
    ("abt_17x33x65", 17, 33, 65, True, 18),
    ("ab_65x257x513", 65, 257, 513, False, 19),
    ("abt_150x300x37", 150, 300, 37, True, 20),
]
QKV = ("qkv", 197, 768, 2304, True, 21)


def inputs(M, K, N, transposed, seed):
    """a (M,K) and b as float64 (K,N) — drawn exactly as the C test draws them."""
    r = Rng(seed)
    a = r.fill_uniform(M * K, -1.0, 1.0).reshape(M, K)
    b = r.fill_uniform(K * N, -1.0, 1.0)
    b = b.reshape(N, K).T if transposed else b.reshape(K, N)
    return torch.from_numpy(a).double(), torch.from_numpy(np.ascontiguousarray(b)).double()


def product(case):
    _, M, K, N, transposed, seed = case
    a, b = inputs(M, K, N, transposed, seed)
    return torch.matmul(a, b)  # float64 throughout


def sample_positions(M, N, count):
    """Tile corners every kernel variant has (multiples of 4, 6, 8, 12, 16, 32 and
    their neighbours), the last row and column, then fixed random ones."""
    rows = [0, 1, 3, 4, 5, 6, 11, 12, 143, 144, M - 2, M - 1]
    cols = [0, 7, 8, 15, 16, 31, 32, N // 2 - 1, N // 2, N - 1]
    picked = [(rows[i % len(rows)], cols[(i * 7) % len(cols)]) for i in range(24)]
    rng = np.random.default_rng(2304)
    while len(picked) < count:
        p = (int(rng.integers(M)), int(rng.integers(N)))
        if p not in picked:
            picked.append(p)
    return picked


INPUTS = "rng_seed(seed); a then b uniform in [-1,1)"


@golden
def gemm_small():
    """The full product of each small case, named like "abt_17x33x65"."""
    small = {case[0]: product(case).float() for case in SMALL_CASES}
    return small, {}, {"inputs": INPUTS}


@golden
def gemm_vitb_qkv():
    """x (197,768) · W (2304,768)ᵀ: 64 samples, every row sum and every column sum."""
    name, M, K, N, _, seed = QKV
    out = product(QKV)
    pos = sample_positions(M, N, 64)
    idx = torch.tensor(pos, dtype=torch.float32)  # small integers: exact in float32
    pinned = {
        f"{name}.sample_index": idx,
        f"{name}.samples": torch.stack([out[i, j] for i, j in pos]).float(),
        f"{name}.row_sums": out.sum(dim=1).float(),
        f"{name}.col_sums": out.sum(dim=0).float(),
    }
    return pinned, {}, {"case": f"{name} M={M} K={K} N={N} b transposed seed={seed}"}


if __name__ == "__main__":
    sys.exit(main(__doc__))
