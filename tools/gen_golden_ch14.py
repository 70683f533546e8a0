#!/usr/bin/python3
"""PyTorch golden for chapter 14: tests/golden/ch14_making_it_fast.safetensors.

    tools/gen_golden_ch14.py         writes it
    tools/gen_golden_ch14.py --help  this text, then the options every golden script takes

chapters/14_making_it_fast.c times the steps from matmul_naive() to the fast
kernels; the times are printed, never pinned. What it pins is computed here
again, under the same names:

  check.STEP.sample, check.STEP.sum
                 every step's product (70, 300) · (300, 530), a and b uniform
                 in [-1, 1) from PCG32 seed 14 (tools/vitrng.py, a then b),
                 computed by torch.matmul in float64: the entries at rows
                 0, 63, 64, 69 and columns 0-7, 508-515, 522-529 (both sides
                 of every block edge), and the sum of all 37,100. The same
                 values for every step: they all compute this one product.
  timed.*, blocked.*, packed.*, naive.*, ikj.*, simd.*, peak.*
                 the sizes, FLOPs, bytes and counts the chapter derives from
                 its shapes and the block sizes of lib/gemm/gemm_steps.h, counted
                 here from the same shapes.
  vit.*          ViT-B/16's forward FLOPs for one image by the convention
                 lib/model/trace_stages.h states (2 per multiply-add plus 1 per bias; per
                 element 1 for an add or a scale, 5 for softmax, 8 for
                 LayerNorm and GELU), counted from the model's shapes; its
                 weights' bytes; its tokens and head width.

A float32 sum of 300 products differs from the float64 one by about 1e-6;
the sum of 37,100 such entries, about 1e-3: the sums get a tolerance of 2e-2.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_common import golden, main  # noqa: E402
from vitrng import Rng  # noqa: E402

STEPS = ["naive", "ikj", "blocked", "packed", "tiled_1", "tiled", "blas"]
CHECK = (70, 300, 530)          # M, K, N of the checked product
TIMED = (197, 768, 768)         # M, K, N of the timed product
QKV = (197, 768, 2304)          # ViT-B/16's q, k, v projection
SQUARE = 1024
MC, KC, NC, MR, NR = 64, 128, 512, 4, 8   # lib/gemm/gemm_steps.h
TILED_KC, TILED_MC, TILED_NC = 256, 144, 3072  # lib/gemm/gemm.h: the tiled backend's blocks
ROWS = [0, 63, 64, 69]
COLS = list(range(0, 8)) + list(range(508, 516)) + list(range(522, 530))
CACHE_LINE = 64                 # bytes, x86-64


def vit_base_flops(S=224, p=16, C=3, D=768, L=12, H=12, M=3072, Y=1000):
    """One image through ViT-B/16, stage by stage, by lib/model/trace_stages.h's convention."""
    P = (S // p) ** 2
    N = P + 1
    Dh = D // H
    linear = lambda rows, fan_in, outs: rows * outs * (2 * fan_in + 1)  # noqa: E731
    outside = (linear(P, C * p * p, D)      # patch_embed
               + N * D                      # embed: + positions
               + N * D * 8                  # final norm
               + linear(1, D, Y))           # head
    block = (N * D * 8                      # norm1
             + 3 * linear(N, D, D)          # q, k, v
             + H * N * N * 2 * Dh           # scores: dot products of length Dh
             + H * N * N                    # scaled
             + H * N * N * 5                # softmax
             + N * D * 2 * N                # context: sums over N tokens
             + linear(N, D, D)              # proj
             + N * D                        # resid1
             + N * D * 8                    # norm2
             + linear(N, D, M)              # fc1
             + N * M * 8                    # gelu
             + linear(N, M, D)              # fc2
             + N * D)                       # out
    return outside + L * block


def vit_base_params(S=224, p=16, C=3, D=768, L=12, M=3072, Y=1000):
    N = (S // p) ** 2 + 1
    block = 4 * D + 4 * D * D + 4 * D + 2 * M * D + M + D
    return D * C * p * p + D + D + N * D + L * block + 2 * D + Y * D + Y


def f(x):
    return torch.tensor(float(x), dtype=torch.float32)


def vec(*xs):
    return torch.tensor([float(x) for x in xs], dtype=torch.float32)


@golden
def ch14_making_it_fast():
    """chapters/14_making_it_fast.c: the steps' products and the chapter's arithmetic."""
    g = {}
    m, k, n = CHECK
    rng = Rng(14)
    a = torch.from_numpy(rng.fill_uniform(m * k, -1.0, 1.0)).reshape(m, k).double()
    b = torch.from_numpy(rng.fill_uniform(k * n, -1.0, 1.0)).reshape(k, n).double()
    out = a @ b
    sample = out[ROWS][:, COLS].float()
    for s in STEPS:
        g[f"check.{s}.sample"] = sample
        g[f"check.{s}.sum"] = f(out.sum().item())
    g["check.shape"] = vec(*CHECK)
    g["blocks"] = vec(MC, KC, NC, MR, NR)

    tm, tk, tn = TIMED
    g["timed.shape"] = vec(*TIMED)
    g["timed.flops"] = f(2 * tm * tk * tn)
    g["timed.b_bytes"] = f(4 * tk * tn)
    g["timed.bytes"] = f(4 * (tm * tk + tk * tn + tm * tn))
    g["naive.column_stride_bytes"] = f(4 * tn)
    g["cache_line_floats"] = f(CACHE_LINE // 4)
    g["ikj.memory_ops_per_madd"] = f(3)      # load b[k][j], load out[i][j], store out[i][j]
    g["blocked.b_reads_ikj"] = f(tm * tk * tn)
    g["blocked.b_reads_blocked"] = f(tk * tn)
    g["blocked.reuse"] = f(tm)
    g["blocked.b_block_bytes"] = f(4 * KC * NC)
    # arithmetic intensity: FLOPs per byte of b each loop brings from afar
    g["blocked.intensity_ikj"] = f(2 * tm * tk * tn / (4 * tm * tk * tn))
    g["blocked.intensity_blocked"] = f(2 * tm * tk * tn / (4 * tk * tn))
    g["packed.tile"] = vec(MR, NR)
    g["packed.sums"] = f(MR * NR)
    g["packed.loads_per_k"] = f(MR + NR)
    g["packed.loads_per_madd"] = f((MR + NR) / (MR * NR))
    g["packed.b_sliver_bytes"] = f(4 * KC * NR)
    g["simd.floats_per_vector"] = vec(128 // 32, 256 // 32, 512 // 32)
    g["simd.tiled_blocks"] = vec(TILED_KC, TILED_MC, TILED_NC)

    g["peak.square_n"] = f(SQUARE)
    g["peak.square_flops"] = f(2 * SQUARE ** 3)
    g["peak.qkv_shape"] = vec(*QKV)
    g["peak.qkv_flops"] = f(2 * QKV[0] * QKV[1] * QKV[2])

    g["vit.gflop"] = f(vit_base_flops() / 1e9)
    g["vit.weight_bytes"] = f(4 * vit_base_params())
    g["vit.tokens"] = f((224 // 16) ** 2 + 1)
    g["vit.head_dim"] = f(768 // 12)
    tol = {f"check.{s}.sum": (2e-2, 1e-5) for s in STEPS}
    extra = {"check": "x".join(map(str, CHECK)), "seed": "14",
             "reference": "torch.matmul in float64"}
    return g, tol, extra


if __name__ == "__main__":
    sys.exit(main(__doc__))
