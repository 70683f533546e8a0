#!/usr/bin/python3
"""PyTorch goldens for chapter 15 and exercise 15.

    tools/gen_golden_ch15.py         writes both goldens below
    tools/gen_golden_ch15.py --help  this text, then the options every golden script takes

Writes, into tests/golden/:
  ch15_smaller_numbers.safetensors  every number chapters/15_smaller_numbers.c prints
  ch15_quantize.safetensors         a matrix with rows of very different ranges and
                                    halfway cases, quantized per row in torch: the
                                    exercise's functions against PyTorch

chapters/15_smaller_numbers.c pins every number it prints; this script computes
each one again, independently, under the same name. The model is
data/models/vit-fashion.safetensors (read with tools/stio.py), run by
tools/ref_vit.py in float32, its Linear layers in int8 or bf16 as
tools/gen_golden_lowp.py computes them (Int8Linear, Bf16Linear), on
Fashion-MNIST's test images read with gzip and numpy and normalised as
dataset_batch() does (tools/gen_golden_ch11.py's helpers):

  float.*   three weights of block 0's fc1 (its first, its largest in size, its
            smallest not zero) and their fields, from the bits (numpy's view)
  bf16.*    the same weights in bfloat16 (Tensor.to(torch.bfloat16), ties to
            even), two halfway cases, and the relative error over all the
            model's Linear weights (largest and rms)
  int8.*    row 0 of that fc1 quantized per row (scale max|x| / 127, torch.round)
  act.*     test image 0's [cls] token at blocks.0.norm2, quantized the same way
  acc.*     the accumulator's arithmetic: 127², 768·127², 3072·127², ...
  trick.*   the unsigned-times-signed sums of the first four values, and the
            whole row's integer dot product, scaled back, and the exact one
  scale.*   every Linear weight of the file quantized per tensor and per row:
            rms error over rms weight
  stage.*   the first 100 test images through the model in float32 and in int8:
            each stage's rms(int8 - fp32) / rms(fp32), each Linear input's mean
            crest factor (max|x| / rms(x) per token)
  keep.*    the logits' distance from fp32 with each kind of Linear kept in float
  agree.*   fp32, bf16, int8 on the first 1,000 test images: right answers,
            agreement with fp32, and the images only one of the two gets right
  bytes.*   the file's float bytes, with its Linear weights in int8, and the same
            ratio for ViT-B/16 counted from its shapes

Tolerances. The int8 sums are exact integers on both sides; the float32 around
them (LayerNorm, attention, the scaling back) differs between C and torch by a
few units in the last place, which can move a value across a rounding boundary
now and then. Measured here (AVX-512 VNNI and BF16, and the portable paths):
the counts agree exactly, the stage errors to 0.4 % of their size, the
logits' distances (stage.out_error, keep.error) to 1.3 %; the tolerances
leave room for more crossings on another CPU: 3 % of a stage's error, 5 % of
a logits distance, one image in the 100 (keep.same) and two in the 1,000
(agree.*: bf16's products are summed in another order on the AVX-512 BF16
path, the portable one and here, in float64). A wrong quantization moves
these by far more: truncation instead of rounding doubles every error.

Run with /usr/bin/python3 (Debian's python3-torch). Tests never need Python.
"""
import copy
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stio  # noqa: E402
from gen_golden_ch11 import batch, data_dir, fashion, lut  # noqa: E402
from gen_golden_lowp import Bf16Linear, Int8Linear, quantize_rows  # noqa: E402
from golden_common import golden, main  # noqa: E402
from ref_vit import RefViT  # noqa: E402

TRACED, AGREED, SHOWN = 100, 1000, 6
STAGES = ["norm1", "attn.q", "attn.context", "attn.proj", "resid1", "norm2", "mlp.fc1",
          "mlp.gelu", "mlp.fc2", "out"]
INPUTS = ["norm1", "attn.context", "norm2", "mlp.gelu"]
KINDS = ["attn.qkv", "attn.proj", "mlp.fc1", "mlp.fc2", "head"]


def f(x):
    return torch.tensor(float(x), dtype=torch.float32)


def vec(xs):
    return torch.tensor([float(x) for x in xs], dtype=torch.float32)


def shipped():
    """(model in float32, file tensors in order, normalisation table, test images, labels)."""
    path = os.path.join(data_dir(), "models", "vit-fashion.safetensors")
    tensors, meta = stio.load(path)
    model = RefViT.from_safetensors(path).float()
    table = lut(float(meta.get("mean", 0.2860)), float(meta.get("std", 0.3530)))
    test_x, test_y = fashion("t10k")
    return model, tensors, table, test_x, test_y


def linear_weights(tensors):
    """The file's Linear weights in the chapter's order: each block's qkv, proj, fc1, fc2, then head."""
    names = [n for n in tensors if n.endswith(".weight") and tensors[n].dim() == 2
             and any(k in n for k in KINDS)]
    depth = sum(1 for n in tensors if n.endswith(".norm1.weight"))
    order = [f"blocks.{l}.{k}.weight" for l in range(depth) for k in KINDS[:4]] + ["head.weight"]
    assert sorted(order) == sorted(names), names
    return [(n, tensors[n].float()) for n in order]


def bits(x):
    return int(np.array([x], dtype=np.float32).view(np.uint32)[0])


def bf16(x):
    """(top-half bits, value) of the bfloat16 nearest x."""
    b = torch.tensor([x], dtype=torch.float32).to(torch.bfloat16)
    return int(b.view(torch.int16).item()) & 0xFFFF, float(b.float().item())


def example_weights(fc1):
    """fc1's first weight, its largest in size (first of equals), its smallest not zero."""
    flat = fc1.flatten().numpy()
    first = flat[0]
    largest = flat[int(np.argmax(np.abs(flat)))]
    nz = np.where(flat != 0)[0]
    smallest = flat[nz[int(np.argmin(np.abs(flat[nz])))]]
    return [float(first), float(largest), float(smallest)]


def rel_rms(a, ref):
    a, ref = a.double(), ref.double()
    return math.sqrt(float(((a - ref) ** 2).sum()) / float((ref ** 2).sum()))


def crest(x):
    """Mean over the rows of x (..., D) of max|row| / rms(row), rows of zeros left out."""
    x = x.double().reshape(-1, x.shape[-1])
    rms = x.pow(2).mean(1).sqrt()
    keep = rms > 0
    return float((x.abs().amax(1)[keep] / rms[keep]).mean())


def with_int8(model, keep=None):
    """The model with every Linear in int8 but the kind `keep` (an index of KINDS)."""
    m = copy.deepcopy(model)
    for b in m.blocks:
        if keep != 0:
            b.attn.qkv = Int8Linear(b.attn.qkv)
        if keep != 1:
            b.attn.proj = Int8Linear(b.attn.proj)
        if keep != 2:
            b.fc1 = Int8Linear(b.fc1)
        if keep != 3:
            b.fc2 = Int8Linear(b.fc2)
    if keep != 4:
        m.head = Int8Linear(m.head)
    return m


def with_bf16(model):
    m = copy.deepcopy(model)
    for b in m.blocks:
        b.attn.qkv, b.attn.proj = Bf16Linear(b.attn.qkv), Bf16Linear(b.attn.proj)
        b.fc1, b.fc2 = Bf16Linear(b.fc1), Bf16Linear(b.fc2)
    m.head = Bf16Linear(m.head)
    return m


def vit_base_int8_share():
    D, L, M, Y, P, patch = 768, 12, 3072, 1000, 196, 3 * 16 * 16
    linear = L * (3 * D * D + D * D + M * D + D * M) + Y * D
    rows = L * (3 * D + D + M + D) + Y
    rest = patch * D + D + D + (P + 1) * D + L * (4 * D + 3 * D + D + M + D) + 2 * D + Y
    return (linear + 4 * rows + 4 * rest) / (4 * (linear + rest))


def pins_of_the_numbers(g, model, tensors, table, test_x):
    fc1 = tensors["blocks.0.mlp.fc1.weight"].float()
    v = example_weights(fc1)
    g["float.value"] = vec(v)
    b = [bits(x) for x in v]
    g["float.sign"] = vec([x >> 31 for x in b])
    g["float.exponent"] = vec([(x >> 23) & 0xFF for x in b])
    g["float.mantissa"] = vec([x & 0x7FFFFF for x in b])
    h = [bf16(x) for x in v]
    g["bf16.bits"] = vec([x[0] for x in h])
    g["bf16.value"] = vec([x[1] for x in h])
    g["bf16.relative_error"] = vec([abs(x[1] - y) / abs(y) for x, y in zip(h, v)])
    ties = [1 + 2 ** -8, 1 + 3 * 2 ** -8]
    g["bf16.tie_in"] = vec(ties)
    g["bf16.tie_kept"] = vec([bits(x) >> 16 for x in ties])
    g["bf16.tie_out"] = vec([bf16(x)[1] for x in ties])
    w = torch.cat([t.flatten() for _, t in linear_weights(tensors)])
    w = w[w != 0]
    rel = ((w.to(torch.bfloat16).double() - w.double()).abs() / w.double().abs())
    g["bf16.model_largest"] = f(rel.max())
    g["bf16.model_rms"] = f(rel.pow(2).mean().sqrt())

    q, s = quantize_rows(fc1)                      # (M, D), (M, 1)
    back = q[0] * s[0]
    g["int8.row_x"] = fc1[0, :SHOWN]
    g["int8.row_q"] = q[0, :SHOWN]
    g["int8.row_back"] = back[:SHOWN]
    g["int8.row_scale"] = f(s[0, 0])
    g["int8.row_worst"] = f((back - fc1[0]).abs().max())
    g["int8.scales_range"] = vec([s.min(), s.max()])

    x = torch.from_numpy(batch(test_x, [0], table))
    token = model.trace(x)["blocks.0.norm2"][0, 0]  # (D) the [cls] token fc1 reads
    qx, sx = quantize_rows(token)
    g["act.x"] = token[:SHOWN]
    g["act.q"] = qx[:SHOWN]
    g["act.scale"] = f(sx)
    g["act.relative_error"] = f(rel_rms(qx * sx, token))

    product = 127 * 127
    g["acc.product"] = f(product)
    g["acc.sum_768"] = f(768 * product)
    g["acc.sum_3072"] = f(3072 * product)
    g["acc.headroom"] = f((2 ** 31 - 1) / (3072 * product))
    g["acc.terms"] = f((2 ** 31 - 1) // product)
    g["acc.int16_terms"] = f((2 ** 15 - 1) // product)

    a = [int(t) for t in qx[:4]]
    bq = [int(t) for t in q[0, :4]]
    shifted = sum((ai + 128) * bi for ai, bi in zip(a, bq))
    g["trick.a"], g["trick.b"] = vec(a), vec(bq)
    g["trick.shifted"] = f(shifted)
    g["trick.b_sum"] = f(sum(bq))
    g["trick.corrected"] = f(shifted - 128 * sum(bq))
    g["trick.direct"] = f(sum(ai * bi for ai, bi in zip(a, bq)))
    row = int((qx.long() * q[0].long()).sum())
    for name in ("trick.row_plain", "trick.row_shifted", "trick.row_cpu"):
        g[name] = f(row)
    g["trick.row_back"] = f(torch.tensor(float(row), dtype=torch.float32) * (sx * s[0, 0]))
    g["trick.row_exact"] = f((token.double() * fc1[0].double()).sum())

    per_tensor, per_channel = [], []
    for _, t in linear_weights(tensors):
        st = t.abs().max() / 127.0
        per_tensor.append(rel_rms(torch.round(t / st).clamp(-127, 127) * st, t))
        qc, sc = quantize_rows(t)
        per_channel.append(rel_rms(qc * sc, t))
    g["scale.per_tensor"], g["scale.per_channel"] = vec(per_tensor), vec(per_channel)


def pins_of_the_stages(g, model, table, test_x):
    x = torch.from_numpy(batch(test_x, list(range(TRACED)), table))
    fp32 = model.trace(x)
    int8 = with_int8(model).trace(x)
    L = len(model.blocks)
    g["stage.error"] = vec([rel_rms(int8[f"blocks.{l}.{s}"], fp32[f"blocks.{l}.{s}"])
                            for l in range(L) for s in STAGES])
    g["stage.out_error"] = vec([rel_rms(int8[n], fp32[n]) for n in ("norm", "logits")])
    crests = [[crest(fp32[f"blocks.{l}.{i}"]) for i in INPUTS] for l in range(L)]
    g["stage.crest"] = vec([c for row in crests for c in row])
    g["stage.head_crest"] = f(crest(fp32["pre_logits"]))
    mean = [sum(crests[l][i] for l in range(L)) / L for i in range(len(INPUTS))]
    g["stage.spiky_noise"] = f(max(mean) / (127 * math.sqrt(12)))

    with torch.no_grad():
        ref = model(x)
        logits = [with_int8(model)(x)] + [with_int8(model, keep=k)(x) for k in range(len(KINDS))]
    g["keep.error"] = vec([rel_rms(t, ref) for t in logits])
    g["keep.same"] = vec([int((t.argmax(1) == ref.argmax(1)).sum()) for t in logits])
    D, M, Y = model.norm.weight.shape[0], model.blocks[0].fc1.out_features, model.head.out_features
    per_kind = [L * 3 * D * D, L * D * D, L * M * D, L * D * M, Y * D]
    g["keep.share"] = vec([k / sum(per_kind) for k in per_kind])


def pins_of_the_table(g, model, tensors, table, test_x, test_y):
    x = torch.from_numpy(batch(test_x, list(range(AGREED)), table))
    y = torch.from_numpy(test_y[:AGREED])
    with torch.no_grad():
        pred = [m(x).argmax(1) for m in (model, with_bf16(model), with_int8(model))]
    g["agree.right"] = vec([int((p == y).sum()) for p in pred])
    g["agree.same"] = vec([int((p == pred[0]).sum()) for p in pred])
    only = []
    for p in pred[1:]:
        low, fp = p == y, pred[0] == y
        only += [int((low & ~fp).sum()), int((fp & ~low).sum())]
    g["agree.only"] = vec(only)
    kinds = {n for n, _ in linear_weights(tensors)}
    fp32 = sum(4 * t.numel() for t in tensors.values())
    int8 = sum(t.numel() + 4 * t.shape[0] if n in kinds else 4 * t.numel()
               for n, t in tensors.items())
    g["bytes.fp32"], g["bytes.int8"] = f(fp32), f(int8)
    g["bytes.ratio"] = f(int8 / fp32)
    g["bytes.vitb_ratio"] = f(vit_base_int8_share())


@golden
def ch15_smaller_numbers():
    """chapters/15_smaller_numbers.c: every number it prints."""
    model, tensors, table, test_x, test_y = shipped()
    g = {}
    with torch.no_grad():
        pins_of_the_numbers(g, model, tensors, table, test_x)
        pins_of_the_stages(g, model, table, test_x)
        pins_of_the_table(g, model, tensors, table, test_x, test_y)
    tol = {}
    for name in ("stage.error", "stage.out_error"):
        tol[name] = (1e-5, 3e-2)
    tol["keep.error"] = (1e-5, 5e-2)
    tol["keep.same"] = (1.0, 0.0)
    for name in ("agree.right", "agree.same", "agree.only"):
        tol[name] = (2.0, 0.0)
    meta = {"images": f"traced {TRACED}, agreement {AGREED}",
            "reference": "tools/ref_vit.py in float32; Linear layers as tools/gen_golden_lowp.py"}
    return g, tol, meta


@golden
def ch15_quantize():
    """Rows of very different ranges, a row of zeros, halfway cases and negative
    halfway cases, quantized per row in torch: q, scales and q · scale."""
    gen = torch.Generator().manual_seed(15)
    R, K = 37, 53
    x = torch.randn(R, K, generator=gen) * torch.exp(2 * torch.randn(R, 1, generator=gen))
    x[5] = 0                                     # a row of zeros: scale 0, q 0
    x[7, :] = torch.arange(K, dtype=torch.float32) - 26   # max 27: scale 27/127
    x[9, 0] = 127.0                              # scale exactly 1: halfway cases below
    x[9, 1:9] = torch.tensor([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 3.49, -3.51])
    x[11] = x[11].abs()                          # all positive
    q, s = quantize_rows(x)
    st = x.abs().max() / 127.0
    qt = torch.round(x / st).clamp(-127, 127)
    return {"x": x, "q": q, "scales": s.reshape(R), "back": q * s,
            "tensor_q": qt, "tensor_scale": f(st)}


if __name__ == "__main__":
    sys.exit(main(__doc__))
