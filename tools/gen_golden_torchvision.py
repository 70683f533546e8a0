#!/usr/bin/python3
"""Goldens for reading a model torchvision wrote itself (suite `torchvision`).

Builds torchvision's own VisionTransformer (small: 32×32 images, 8×8 patches,
2 layers, 4 heads, width 64, MLP 128, 10 classes), gives every parameter a
random value (torchvision initialises the head to zeros), saves its state
dict with torch.save as torchvision's weights are distributed, converts that
.pth with tools/to_safetensors.py, and records torchvision's own forward pass
on a fixed input.

    tools/gen_golden_torchvision.py         writes tests/golden/torchvision_small.safetensors
                                            (weights) and torchvision_small_io.safetensors
                                            (input, logits)
    tools/gen_golden_torchvision.py --help  this text, then the options every golden
                                            script takes

Run with /usr/bin/python3 (Debian's python3-torch, python3-torchvision).
Tests never need Python.
"""
import os
import subprocess
import sys
import tempfile

import torch
import torchvision
from torchvision.models.vision_transformer import VisionTransformer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import stio  # noqa: E402
from golden_common import golden, main  # noqa: E402
from vitrng import Rng  # noqa: E402


def small_model():
    """The model, the same one every call: torch's generator seeded with 0."""
    torch.manual_seed(0)
    model = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4,
                              hidden_dim=64, mlp_dim=128, num_classes=10).eval()
    with torch.no_grad():
        for p in model.parameters():  # every parameter matters, none is zero or one
            p.copy_(torch.randn_like(p) * 0.2)
    return model


@golden
def torchvision_small():
    """The weights as a user gets them: torch.save(model.state_dict()), then
    tools/to_safetensors.py --meta num_heads=4. The file is the converter's,
    its metadata too (no generator entry), but for where it was made ("cpu"
    and "isa": torch.randn may round otherwise on another CPU)."""
    with tempfile.TemporaryDirectory() as tmp:
        pth = os.path.join(tmp, "vit_small.pth")
        out = os.path.join(tmp, "torchvision_small.safetensors")
        torch.save(small_model().state_dict(), pth)
        subprocess.run([sys.executable, os.path.join(HERE, "to_safetensors.py"),
                        "--meta", "num_heads=4", pth, out], check=True, stdout=subprocess.DEVNULL)
        tensors, meta = stio.load(out)
    return tensors, {}, {"generator": None, "torch": None, **meta}


@golden
def torchvision_small_io():
    """torchvision's forward pass on 2 images uniform in [-1, 1) (seed 31)."""
    x = torch.from_numpy(Rng(31).fill_uniform(2 * 3 * 32 * 32, -1, 1)).reshape(2, 3, 32, 32)
    logits = small_model()(x)
    return {"input": x, "logits": logits}, {}, {"torchvision": torchvision.__version__}


if __name__ == "__main__":
    sys.exit(main(__doc__))
