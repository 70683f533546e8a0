#!/usr/bin/python3
"""PyTorch goldens for the convolution and pooling ops and the small CNN (suite `cnn`).

    tools/gen_golden_cnn.py          writes tests/golden/cnn.safetensors
    tools/gen_golden_cnn.py --help   this text, then the options every golden script takes

One file, the values of each group under its prefix:

    conv_a.*   F.conv2d on B = 2 images of C = 3 channels, 5×7 (odd, not
               square), O = 4 filters of 3×3, stride 2, padding 1
    conv_b.*   F.conv2d with an even 2×2 kernel, stride 1, no padding, on
               2 images of 2 channels, 6×5, O = 5 filters
    relu.*     F.relu on (2, 3, 5, 7)
    maxpool.*  F.max_pool2d(x, 2, return_indices=True) on (2, 3, 5, 7): the
               odd last row and column are dropped
    gap.*      x.mean(dim=(2, 3)) on (2, 3, 5, 7)
    cnn.*      lib's small CNN (lib/model/cnn.h) on B = 4 random 28×28
               images: its weights (drawn as cnn_init(seed 7) draws them),
               the pooled features, the logits, the cross-entropy loss
               against fixed targets and every parameter's gradient

For each op: its inputs x, w, b and an upstream gradient dout, its output
out and the gradients dx, dw, db autograd computes. Inputs are drawn here
(tools/vitrng.py's PCG32) and stored in float32; the computation runs in
float64 on those very values and is rounded once to float32. Tolerances,
"tol.NAME" = "ATOL RTOL", follow from what float32 arithmetic costs (the
comments below). The max pooling and its backward are copies: exact.

The CNN's inputs are checked to keep lib's float32 away from a different
branch than float64 takes: no 2×2 window whose two largest values are
within 2e-6 of each other, no pre-ReLU value within 2e-6 of 0
(lib misses the float64 values by ~1e-7).

Run with /usr/bin/python3 (Debian's python3-torch). Tests never need Python.
"""
import math
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_common import golden, main  # noqa: E402
from vitrng import Rng  # noqa: E402


def normal(rng, *shape):
    """rng_fill_normal as a float32 tensor of this shape."""
    return torch.from_numpy(rng.fill_normal(math.prod(shape))).reshape(shape)


def uniform(rng, lo, hi, *shape):
    """rng_fill_uniform as a float32 tensor of this shape."""
    return torch.from_numpy(rng.fill_uniform(math.prod(shape), lo, hi)).reshape(shape)


def leaf(t):
    """A float64 copy of a stored float32 input that autograd differentiates with respect to."""
    return t.double().requires_grad_(True)


def f32(t):
    return t.detach().float().contiguous()


def conv_case(g, tol, name, seed, B, C, H, W, O, k, stride, pad):
    """F.conv2d and its three gradients on inputs drawn from seed."""
    r = Rng(seed)
    x, w, b = normal(r, B, C, H, W), normal(r, O, C, k, k), normal(r, O)
    lx, lw, lb = leaf(x), leaf(w), leaf(b)
    out = F.conv2d(lx, lw, lb, stride=stride, padding=pad)
    dout = normal(r, *out.shape)
    dx, dw, db = torch.autograd.grad(out, (lx, lw, lb), grad_outputs=dout.double())
    g.update({f"{name}.x": x, f"{name}.w": w, f"{name}.b": b, f"{name}.dout": dout,
              f"{name}.out": f32(out), f"{name}.dx": f32(dx), f"{name}.dw": f32(dw),
              f"{name}.db": f32(db),
              f"{name}.geometry": torch.tensor([k, stride, pad], dtype=torch.float32)})
    # out and dx sum C·k·k ≤ 27 products of values ~1 (float32 ~1e-6); dw sums
    # B·Ho·Wo ≤ 60, db the same number of plain values
    for t in ("out", "dx", "dw", "db"):
        tol[f"{name}.{t}"] = (1e-5, 1e-5)


@golden
def cnn():
    """The ops one by one, then the small CNN end to end."""
    g, tol = {}, {}
    with torch.enable_grad():
        conv_case(g, tol, "conv_a", 401, B=2, C=3, H=5, W=7, O=4, k=3, stride=2, pad=1)
        conv_case(g, tol, "conv_b", 402, B=2, C=2, H=6, W=5, O=5, k=2, stride=1, pad=0)
        pool_cases(g, tol)
        cnn_case(g, tol)
    return g, tol


def pool_cases(g, tol):
    """ReLU, 2×2 max pooling and global average pooling on one (2, 3, 5, 7) input."""
    r = Rng(403)
    x = normal(r, 2, 3, 5, 7)
    dout_relu, dout_max, dout_gap = normal(r, 2, 3, 5, 7), normal(r, 2, 3, 2, 3), normal(r, 2, 3)
    lx = leaf(x)
    (dx,) = torch.autograd.grad(F.relu(lx), (lx,), grad_outputs=dout_relu.double())
    g.update({"relu.x": x, "relu.dout": dout_relu, "relu.out": f32(F.relu(x)),
              "relu.dx": f32(dx)})
    tol.update({"relu.out": (0, 0), "relu.dx": (0, 0)})

    out, idx = F.max_pool2d(lx, 2, return_indices=True)
    (dx,) = torch.autograd.grad(out, (lx,), grad_outputs=dout_max.double())
    g.update({"maxpool.x": x, "maxpool.dout": dout_max, "maxpool.out": f32(out),
              "maxpool.argmax": idx.float(), "maxpool.dx": f32(dx)})
    tol.update({"maxpool.out": (0, 0), "maxpool.argmax": (0, 0), "maxpool.dx": (0, 0)})

    out = lx.mean(dim=(2, 3))
    (dx,) = torch.autograd.grad(out, (lx,), grad_outputs=dout_gap.double())
    g.update({"gap.x": x, "gap.dout": dout_gap, "gap.out": f32(out), "gap.dx": f32(dx)})
    # a mean of 35 values summed in double; dx = dout/35, one float32 division
    tol.update({"gap.out": (1e-7, 1e-6), "gap.dx": (1e-8, 1e-6)})


def cnn_weights(seed):
    """cnn_init(): each layer's weight then bias, uniform in ±1/√fan_in, in float32 as lib draws them."""
    r = Rng(seed)
    shapes = (("conv1", (16, 1, 3, 3), 9), ("conv2", (32, 16, 3, 3), 144), ("fc", (10, 32), 32))
    params = {}
    for name, shape, fan_in in shapes:
        bound = np.float32(1.0) / np.sqrt(np.float32(fan_in))
        params[f"{name}.weight"] = uniform(r, -bound, bound, *shape)
        params[f"{name}.bias"] = uniform(r, -bound, bound, shape[0])
    return params


def assert_no_near_ties(pre_relu, relu_out):
    """Float32 and float64 must take the same branch at every ReLU and every max."""
    assert (pre_relu.abs() > 2e-6).all(), "a pre-ReLU value within 2e-6 of 0"
    windows = F.unfold(relu_out.flatten(0, 1)[:, None], 2, stride=2)  # (B·C, 4, windows)
    top2 = windows.topk(2, dim=1).values
    positive = top2[:, 0] > 0  # a window of zeros ties harmlessly: its gradient dies in the ReLU
    assert ((top2[:, 0] - top2[:, 1])[positive] > 2e-6).all(), "a near tie in a max pooling window"


def cnn_case(g, tol):
    """lib's small CNN on 4 random images: logits, loss and every parameter's gradient."""
    params = cnn_weights(7)
    r = Rng(404)
    images = normal(r, 4, 1, 28, 28)
    targets = torch.tensor([3, 0, 7, 9])
    p = {k: leaf(v) for k, v in params.items()}
    conv1 = F.conv2d(images.double(), p["conv1.weight"], p["conv1.bias"], padding=1)
    pool1 = F.max_pool2d(F.relu(conv1), 2)
    conv2 = F.conv2d(pool1, p["conv2.weight"], p["conv2.bias"], padding=1)
    pool2 = F.max_pool2d(F.relu(conv2), 2)
    gap = pool2.mean(dim=(2, 3))
    logits = F.linear(gap, p["fc.weight"], p["fc.bias"])
    loss = F.cross_entropy(logits, targets)
    assert_no_near_ties(conv1, F.relu(conv1))
    assert_no_near_ties(conv2, F.relu(conv2))
    grads = torch.autograd.grad(loss, tuple(p.values()))
    g.update({"cnn.images": images, "cnn.targets": targets.float()})
    g.update({f"cnn.{k}": v for k, v in params.items()})
    g.update({"cnn.pool2": f32(pool2), "cnn.gap": f32(gap), "cnn.logits": f32(logits),
              "cnn.loss": f32(loss)})
    g.update({f"cnn.grad.{k}": f32(d) for k, d in zip(p, grads)})
    # float32 through two convolutions (sums of 9 and 144 products), pooling
    # and a linear layer: ~1e-6 relative on the way (pool2 misses by ~7e-7
    # on values up to 1.6). The gradients are ~0.01-0.1 and sum 4·196 and
    # 4·784 terms for conv2 and conv1; lib misses them by ~2e-8, so 1e-6
    # absolute is ~50 times that and still 1% of a typical gradient
    for name in ("pool2", "gap", "logits", "loss"):
        tol[f"cnn.{name}"] = (1e-5, 1e-4)
    for k in p:
        tol[f"cnn.grad.{k}"] = (1e-6, 1e-4)


if __name__ == "__main__":
    sys.exit(main(__doc__))
