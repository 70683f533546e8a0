#!/usr/bin/python3
"""PyTorch goldens for the model's Linear layers in smaller numbers: the whole
trace of tools/gen_golden_vit.py's small ViT with every Linear (q, k, v, proj,
fc1, fc2, head) in int8 and in bf16.

    tools/gen_golden_lowp.py                 write both goldens below
    tools/gen_golden_lowp.py vit_small_int8  only one
    tools/gen_golden_lowp.py --help          this text, then the options every
                                             golden script takes

Writes, into tests/golden/:
  vit_small_int8.safetensors  every trace tensor of the small ViT (S 32, p 8,
                              D 64, H 4, L 2, M 256, Y 10, batch 2), its Linear
                              layers in int8
  vit_small_bf16.safetensors  the same, its Linear layers in bf16
  quantized_small.safetensors the int8 values and scales of the small ViT's Linear
                              weights: what `vit quantize` writes for it
  linear_int8.safetensors     one Linear layer in int8: our scheme computed here,
                              PyTorch's dynamic quantization of the same layer
                              (quantize_dynamic, per-tensor and per-channel
                              weights) and the exact answer

The model, its weights (drawn by the C program, `vit make-weights`) and its
images are gen_golden_vit.py's vit_small's. Every expected value is computed
here, in PyTorch, from the scheme lib/gemm/gemm_lowp.h documents:

  int8  each row (an output channel of a weight, a token of an activation) is
        stored as q * s with s = max|row| / 127 and q = round(x / s), ties to
        even (torch.round), clamped to -127..127; the products of q are summed
        exactly (here in float64, exact below 2^53) and scaled back in float32:
        out = acc * (s_x * s_w) + b.
  bf16  weights and activations rounded to the nearest bfloat16
        (Tensor.to(torch.bfloat16), ties to even), the products summed in
        float64 and rounded to float32, the bias added in float32.

Everything else (LayerNorm, softmax, GELU, the residual additions) is
tools/ref_vit.py's, in float32 this time: a quantization step is a cliff, and
a reference in float64 would put a few values on the other side of one
where the float32 C code does not, for no fault of either.

Run with /usr/bin/python3 (Debian's python3-torch). Tests never need Python.
"""
import os
import sys

import torch
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_golden_vit import SMALL, config_string, image_batch, load_model, rms  # noqa: E402
from golden_common import golden, main  # noqa: E402


def quantize_rows(x):
    """(q, s) of x (..., K): one symmetric scale per row, q in -127..127 (as float)."""
    s = x.abs().amax(dim=-1, keepdim=True) / 127.0
    q = torch.where(s > 0, torch.round(x / torch.where(s > 0, s, torch.ones_like(s))),
                    torch.zeros_like(x)).clamp(-127, 127)
    return q, s


class Int8Linear(nn.Module):
    """nn.Linear with int8 weights per output channel and int8 activations per token."""

    def __init__(self, linear):
        super().__init__()
        self.qw, self.sw = quantize_rows(linear.weight.float())
        self.bias = linear.bias.float()

    def forward(self, x):
        qx, sx = quantize_rows(x.float())
        acc = (qx.double() @ self.qw.double().t()).float()  # exact integers, |acc| < 2^24 here
        return acc * (sx * self.sw.t()) + self.bias


class Bf16Linear(nn.Module):
    """nn.Linear with weights and activations rounded to bfloat16, summed in float64."""

    def __init__(self, linear):
        super().__init__()
        self.w = linear.weight.float().to(torch.bfloat16).double()
        self.bias = linear.bias.float()

    def forward(self, x):
        xb = x.float().to(torch.bfloat16).double()
        return (xb @ self.w.t()).float() + self.bias


def with_linears(model, make):
    """The model with every nn.Linear (qkv, proj, fc1, fc2, head) replaced by make(linear)."""
    for block in model.blocks:
        block.attn.qkv = make(block.attn.qkv)
        block.attn.proj = make(block.attn.proj)
        block.fc1 = make(block.fc1)
        block.fc2 = make(block.fc2)
    model.head = make(model.head)
    return model


# Tolerance per stage: |c - ref| <= atol + rtol |ref|, atol = LOWP_ATOL x rms(ref).
# Where C and PyTorch round the same float32 values, they compute the same
# int8 values and integer sums; the float32 around them differs by a few
# units in the last place (another order of the sums in LayerNorm and in the
# float products), and now and then such a difference moves one value across
# a rounding boundary: one element of one token off by one step, and every
# later stage carries it.
# int8: measured here, no value crossed a boundary (the largest difference,
# 0.3 % of the tolerance below, is float32's); 2e-3 x rms leaves room for one crossing on
# another CPU (a step is max|row| / 127) and is still 17 times below the
# float model's distance from the int8 logits (tests/test_precision.c checks
# it stays more than 2 times below).
# bf16: a step is 2^-8 of the value, 2^15 times finer than int8's grid is
# coarse, so crossings happen in every stage of this model (2,176 values
# after the first LayerNorm: about one crosses), and each moves the later
# stages by about bf16's own error: the full trace cannot be pinned value by
# value. The test compares the logits only, where one crossing's effect was
# 0.0078 (5e-3 x rms), within 8e-3 x rms. That is as large as bf16's whole
# effect on this model's logits (the float model's are 0.0083 rms, 0.014 at
# most, from the bf16 golden's): at this level a bf16 model cannot be told
# from a float one, only from a broken one. bf16's arithmetic is pinned where
# it can be, value by value: the rounding and the product, in the gemm_lowp
# suite.
LOWP_ATOL = {"int8": 2e-3, "bf16": 8e-3}
LOWP_RTOL = 1e-3


def small_trace(precision):
    c = SMALL
    model = load_model(c).float()
    make = Int8Linear if precision == "int8" else Bf16Linear
    model = with_linears(model, make)
    trace = model.trace(image_batch(c).float())
    tol = {name: (LOWP_ATOL[precision] * rms(t), LOWP_RTOL) for name, t in trace.items()}
    meta = {"config": config_string(c), "precision": precision,
            "reference": "tools/ref_vit.py in float32, its Linear layers in %s" % precision}
    return trace, tol, meta


def linear_case():
    """One Linear layer (D 64 -> O 48) and 50 tokens, drawn as a real layer looks: the
    activations normal with two outlier channels (x20 and x12, as LayerNorm outputs
    of trained ViTs have), the weights' rows of very different ranges."""
    g = torch.Generator().manual_seed(15)
    R, D, O = 50, 64, 48
    x = torch.randn(R, D, generator=g)
    x[:, 3] *= 20
    x[:, 17] *= 12
    w = torch.randn(O, D, generator=g) * 0.05 * torch.exp(torch.randn(O, 1, generator=g))
    b = torch.randn(O, generator=g) * 0.02
    linear = nn.Linear(D, O)
    linear.weight.data, linear.bias.data = w.clone(), b.clone()
    return x, linear


@golden
def linear_int8():
    """One Linear layer in int8: our scheme (per token, per output channel, symmetric),
    computed here, beside PyTorch's own dynamic quantization of the same layer
    (torch.ao.quantization.quantize_dynamic, per-tensor and per-channel weights) and
    the exact float answer, so the test can hold ours against PyTorch's."""
    x, linear = linear_case()
    exact = (x.double() @ linear.weight.double().t() + linear.bias.double()).float()
    ours = Int8Linear(linear)(x)
    per_tensor = torch.ao.quantization.quantize_dynamic(
        nn.Sequential(linear), {nn.Linear}, dtype=torch.qint8)(x)
    per_channel = torch.ao.quantization.quantize_dynamic(
        nn.Sequential(linear), {nn.Linear: torch.ao.quantization.per_channel_dynamic_qconfig},
        dtype=torch.qint8)(x)
    tensors = {"x": x, "w": linear.weight.detach(), "b": linear.bias.detach(), "exact": exact,
               "ours": ours, "torch_dynamic": per_tensor.detach(),
               "torch_dynamic_per_channel": per_channel.detach()}
    tol = {"ours": (2e-3 * rms(ours), 1e-3)}
    meta = {"engine": torch.backends.quantized.engine,
            "reference": "ours: gemm_lowp.h's scheme in torch; torch_dynamic: quantize_dynamic"}
    return tensors, tol, meta


@golden
def quantized_small():
    """What `vit quantize` must write for the small ViT: each Linear weight's int8
    values q (stored here as float32, every one an integer) and its scales, one
    per output row, under timm's names, q, k, v fused. Exact: the test compares
    the file's I8 bytes with q and its F32 scales with these bit for bit."""
    model = load_model(SMALL).float()
    linears = {"head": model.head}
    for i, block in enumerate(model.blocks):
        linears.update({f"blocks.{i}.attn.qkv": block.attn.qkv,
                        f"blocks.{i}.attn.proj": block.attn.proj,
                        f"blocks.{i}.mlp.fc1": block.fc1, f"blocks.{i}.mlp.fc2": block.fc2})
    tensors = {}
    for name, linear in linears.items():
        q, s = quantize_rows(linear.weight.detach().float())
        tensors[name + ".weight"] = q
        tensors[name + ".weight_scale"] = s.reshape(-1)
    tol = {name: (0.0, 0.0) for name in tensors}
    meta = {"config": config_string(SMALL), "scheme": "int8-per-channel-symmetric",
            "reference": "quantize_rows() above: max|row| / 127, torch.round, clamp"}
    return tensors, tol, meta


@golden
def vit_small_int8():
    """Every trace tensor of the small ViT, its Linear layers in int8."""
    return small_trace("int8")


@golden
def vit_small_bf16():
    """Every trace tensor of the small ViT, its Linear layers in bf16."""
    return small_trace("bf16")


if __name__ == "__main__":
    sys.exit(main(__doc__))
