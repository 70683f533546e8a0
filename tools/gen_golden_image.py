#!/usr/bin/python3
"""Test images and preprocessing goldens (suite `image`).

Makes a few small PNG images (tests/data/img_*.png) from PCG32 patterns, then
computes each preset's output with the reference libraries:
  torchvision  transforms.Resize(256 · S/224) + CenterCrop(S) + ToTensor + Normalize(ImageNet)
  timm         transforms.Resize(floor(S / 0.9), BICUBIC) + CenterCrop(S) + ToTensor + Normalize(0.5)
  hf           PIL resize to (S, S) BILINEAR, rescale 1/255, normalise 0.5 — what
               transformers' ViTImageProcessor does (transformers is not packaged in Debian 12)
and writes tests/golden/image.safetensors. Also pins raw Pillow resizes.

    tools/gen_golden_image.py          writes tests/data/img_*.png, then
                                       tests/golden/image.safetensors
    tools/gen_golden_image.py --help   this text, then the options every golden script takes

Run with /usr/bin/python3 (Debian's python3-torch, python3-torchvision, python3-pil).
Tests never need Python.
"""
import math
import os
import sys

import numpy as np
import torch
import torchvision
from PIL import Image
from torchvision import transforms as T

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_common import golden, main, test_data, write_image  # noqa: E402
from vitrng import Rng  # noqa: E402


def pattern(w, h, seed):
    """Smooth gradients + a disc + noise: edges and texture for the resamplers."""
    r = Rng(seed)
    noise = r.fill_uniform(w * h * 3, 0, 48).reshape(h, w, 3)
    y, x = np.mgrid[0:h, 0:w].astype(np.float32)
    img = np.stack([255 * x / max(w - 1, 1), 255 * y / max(h - 1, 1),
                    128 + 100 * np.sin(x / 3.0) * np.cos(y / 5.0)], axis=-1)
    disc = (x - w / 2) ** 2 + (y - h / 2) ** 2 < (min(w, h) / 3) ** 2
    img[disc] = 255 - img[disc]
    return np.clip(img * 0.8 + noise, 0, 255).astype(np.uint8)


def images():
    """Writes the test images tests/data/img_NAME.png (golden_common.write_image()) and
    returns them read back."""
    made = {
        "wide": Image.fromarray(pattern(160, 120, 1)),        # landscape, shrink
        "tall": Image.fromarray(pattern(45, 70, 2)),          # portrait, enlarge
        "square32": Image.fromarray(pattern(32, 32, 3)),      # already S×S for S = 32
        "grey": Image.fromarray(pattern(64, 50, 4)[:, :, 0]),  # 'L' mode
        # 3×4000: resizing its short side to 37 makes a 37×49333 image before the crop
        "strip": Image.fromarray(pattern(3, 4000, 6)),
    }
    rgba = np.concatenate([pattern(40, 40, 5), np.full((40, 40, 1), 77, np.uint8)], axis=-1)
    made["rgba"] = Image.fromarray(rgba, "RGBA")
    for name, im in made.items():
        write_image(f"img_{name}.png", im)  # with where it was made, as text chunks
    return {k: Image.open(test_data(f"img_{k}.png")) for k in made}


def preset(name, S):
    """The reference pipeline; an image already S×S skips resize and crop (docs/contract.md, images),
    where plain torchvision would resample it (e.g. 224 → 256 → crop 224)."""
    full = _preset(name, S)
    tail = _preset(name, S).transforms[-2:] if name != "hf" else None

    def run(im):
        if im.size == (S, S) and tail:
            return T.Compose(tail)(im)
        return full(im)
    return run


def _preset(name, S):
    if name == "torchvision":
        return T.Compose([T.Resize(round(S * 256 / 224)), T.CenterCrop(S), T.ToTensor(),
                          T.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    if name == "timm":
        return T.Compose([T.Resize(math.floor(S / 0.9), interpolation=T.InterpolationMode.BICUBIC),
                          T.CenterCrop(S), T.ToTensor(), T.Normalize([0.5] * 3, [0.5] * 3)])
    if name == "hf":
        def hf(im):
            if im.size != (S, S):
                im = im.resize((S, S), Image.BILINEAR)
            a = np.asarray(im, dtype=np.float32) * np.float32(1 / 255)
            a = (a - np.float32(0.5)) / np.float32(0.5)
            return torch.from_numpy(a.transpose(2, 0, 1).copy())
        return hf
    raise ValueError(name)


@golden
def image():
    """Each test image decoded, through each preset at S = 32 (whole) and S = 224
    (channel sums and 64 samples), and raw Pillow resizes of the wide one."""
    imgs = images()
    g = {}
    for key, im in imgs.items():
        rgb = im.convert("RGB")
        if rgb.size[0] * rgb.size[1] <= 4096:  # decoding is lossless: pin the small ones whole
            g[f"{key}.rgb"] = torch.from_numpy(np.asarray(rgb).astype(np.float32))
        for S in (32, 224):
            for p in ("hf", "timm", "torchvision"):
                out = preset(p, S)(rgb)
                if S == 32:
                    g[f"{key}.{p}.{S}"] = out
                else:  # 224: pin sums per channel and a fixed sample of pixels
                    flat = out.flatten()
                    idx = torch.from_numpy(Rng(99).fill_uniform(64, 0, flat.numel()).astype(np.int64))
                    g[f"{key}.{p}.{S}.sample_idx"] = idx.float()
                    g[f"{key}.{p}.{S}.sample"] = flat[idx]
                    g[f"{key}.{p}.{S}.channel_sum"] = out.double().sum(dim=(1, 2)).float()
    # raw Pillow resizes, uint8 exact
    wide = imgs["wide"].convert("RGB")
    for (w, h, f) in ((97, 61, "bilinear"), (61, 45, "bicubic"), (120, 90, "bicubic"),
                      (160, 37, "bilinear"), (23, 120, "bicubic"), (13, 7, "bilinear")):
        flt = Image.BILINEAR if f == "bilinear" else Image.BICUBIC
        g[f"resize.{w}x{h}.{f}"] = torch.from_numpy(
            np.asarray(wide.resize((w, h), flt)).astype(np.float32))
    # the versions that decide these numbers: Pillow's resamplers, torchvision's transforms
    versions = {"torch": None, "pillow": Image.__version__, "torchvision": torchvision.__version__}
    return g, {}, versions


if __name__ == "__main__":
    sys.exit(main(__doc__))
