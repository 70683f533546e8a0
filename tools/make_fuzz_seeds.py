#!/usr/bin/python3
"""Seed corpora for `make fuzz`: a few small valid inputs the fuzzers mutate.

tests/fuzz/seeds/safetensors/: tiny ViTs under timm, Hugging Face and
torchvision names, in F32 and BF16; tests/fuzz/seeds/image/: small PNG
(RGB, grey, RGBA), JPEG, BMP, PPM and PGM images."""
import os
import sys

import numpy as np
import torch
from PIL import Image

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import stio  # noqa: E402

SEEDS = os.path.join(HERE, "..", "tests", "fuzz", "seeds")


def tiny_timm(D=8, H=2, S=8, p=4, K=3, depth=1):
    g = torch.Generator().manual_seed(0)
    r = lambda *s: torch.randn(*s, generator=g) * 0.1  # noqa: E731
    n = (S // p) ** 2 + 1
    w = {"cls_token": r(1, 1, D), "pos_embed": r(1, n, D),
         "patch_embed.proj.weight": r(D, 3, p, p), "patch_embed.proj.bias": r(D)}
    for i in range(depth):
        b = f"blocks.{i}."
        w.update({b + "norm1.weight": 1 + r(D), b + "norm1.bias": r(D),
                  b + "attn.qkv.weight": r(3 * D, D), b + "attn.qkv.bias": r(3 * D),
                  b + "attn.proj.weight": r(D, D), b + "attn.proj.bias": r(D),
                  b + "norm2.weight": 1 + r(D), b + "norm2.bias": r(D),
                  b + "mlp.fc1.weight": r(4 * D, D), b + "mlp.fc1.bias": r(4 * D),
                  b + "mlp.fc2.weight": r(D, 4 * D), b + "mlp.fc2.bias": r(D)})
    w.update({"norm.weight": 1 + r(D), "norm.bias": r(D), "head.weight": r(K, D), "head.bias": r(K)})
    return w


def to_hf(w, D):
    out = {"vit.embeddings.cls_token": w["cls_token"],
           "vit.embeddings.position_embeddings": w["pos_embed"],
           "vit.embeddings.patch_embeddings.projection.weight": w["patch_embed.proj.weight"],
           "vit.embeddings.patch_embeddings.projection.bias": w["patch_embed.proj.bias"],
           "vit.layernorm.weight": w["norm.weight"], "vit.layernorm.bias": w["norm.bias"],
           "classifier.weight": w["head.weight"], "classifier.bias": w["head.bias"]}
    b, h = "blocks.0.", "vit.encoder.layer.0."
    q, k, v = w[b + "attn.qkv.weight"].split(D)
    qb, kb, vb = w[b + "attn.qkv.bias"].split(D)
    out.update({h + "layernorm_before.weight": w[b + "norm1.weight"],
                h + "layernorm_before.bias": w[b + "norm1.bias"],
                h + "attention.attention.query.weight": q, h + "attention.attention.query.bias": qb,
                h + "attention.attention.key.weight": k, h + "attention.attention.key.bias": kb,
                h + "attention.attention.value.weight": v, h + "attention.attention.value.bias": vb,
                h + "attention.output.dense.weight": w[b + "attn.proj.weight"],
                h + "attention.output.dense.bias": w[b + "attn.proj.bias"],
                h + "layernorm_after.weight": w[b + "norm2.weight"],
                h + "layernorm_after.bias": w[b + "norm2.bias"],
                h + "intermediate.dense.weight": w[b + "mlp.fc1.weight"],
                h + "intermediate.dense.bias": w[b + "mlp.fc1.bias"],
                h + "output.dense.weight": w[b + "mlp.fc2.weight"],
                h + "output.dense.bias": w[b + "mlp.fc2.bias"]})
    return out


def to_torchvision(w):
    out = {"class_token": w["cls_token"], "encoder.pos_embedding": w["pos_embed"],
           "conv_proj.weight": w["patch_embed.proj.weight"], "conv_proj.bias": w["patch_embed.proj.bias"],
           "encoder.ln.weight": w["norm.weight"], "encoder.ln.bias": w["norm.bias"],
           "heads.head.weight": w["head.weight"], "heads.head.bias": w["head.bias"]}
    b, t = "blocks.0.", "encoder.layers.encoder_layer_0."
    out.update({t + "ln_1.weight": w[b + "norm1.weight"], t + "ln_1.bias": w[b + "norm1.bias"],
                t + "self_attention.in_proj_weight": w[b + "attn.qkv.weight"],
                t + "self_attention.in_proj_bias": w[b + "attn.qkv.bias"],
                t + "self_attention.out_proj.weight": w[b + "attn.proj.weight"],
                t + "self_attention.out_proj.bias": w[b + "attn.proj.bias"],
                t + "ln_2.weight": w[b + "norm2.weight"], t + "ln_2.bias": w[b + "norm2.bias"],
                t + "mlp.0.weight": w[b + "mlp.fc1.weight"], t + "mlp.0.bias": w[b + "mlp.fc1.bias"],
                t + "mlp.3.weight": w[b + "mlp.fc2.weight"], t + "mlp.3.bias": w[b + "mlp.fc2.bias"]})
    return out


def main():
    st_dir, img_dir = os.path.join(SEEDS, "safetensors"), os.path.join(SEEDS, "image")
    os.makedirs(st_dir, exist_ok=True)
    os.makedirs(img_dir, exist_ok=True)
    w = tiny_timm()
    meta = {"num_heads": "2", "layer_norm_eps": "1e-06"}
    stio.save(os.path.join(st_dir, "timm.safetensors"), w, meta)
    stio.save(os.path.join(st_dir, "timm_bf16.safetensors"), {k: v.bfloat16() for k, v in w.items()})
    stio.save(os.path.join(st_dir, "hf_f16.safetensors"), {k: v.half() for k, v in to_hf(w, 8).items()})
    stio.save(os.path.join(st_dir, "torchvision.safetensors"), to_torchvision(w))
    stio.save(os.path.join(st_dir, "scalar.safetensors"), {"x": torch.tensor(1.5)}, {"k": "v"})

    y, x = np.mgrid[0:12, 0:10]
    rgb = np.stack([x * 25, y * 20, (x + y) * 12], -1).astype(np.uint8)
    Image.fromarray(rgb).save(os.path.join(img_dir, "rgb.png"))
    Image.fromarray(rgb[:, :, 0]).save(os.path.join(img_dir, "grey.png"))
    Image.fromarray(np.dstack([rgb, rgb[:, :, :1]]), "RGBA").save(os.path.join(img_dir, "rgba.png"))
    Image.fromarray(rgb).save(os.path.join(img_dir, "rgb.jpg"), quality=80)
    Image.fromarray(rgb).save(os.path.join(img_dir, "progressive.jpg"), quality=70, progressive=True)
    Image.fromarray(rgb[:, :, 2]).save(os.path.join(img_dir, "grey.jpg"), quality=90)
    Image.fromarray(rgb).save(os.path.join(img_dir, "rgb.bmp"))
    Image.fromarray(rgb).save(os.path.join(img_dir, "rgb.ppm"))
    Image.fromarray(rgb[:, :, 1]).save(os.path.join(img_dir, "grey.pgm"))
    print("seeds written to", os.path.normpath(SEEDS))


if __name__ == "__main__":
    main()
