#!/usr/bin/python3
"""Golden for reading a model torchvision wrote itself (suite `torchvision`).

Builds torchvision's own VisionTransformer (small: 32×32 images, 8×8 patches,
2 layers, 4 heads, width 64, MLP 128, 10 classes), gives every parameter a
random value (torchvision initialises the head to zeros), saves its state
dict with torch.save as torchvision's weights are distributed, converts that
.pth with tools/to_safetensors.py, and records torchvision's own forward pass
on a fixed input. Writes tests/golden/torchvision_small.safetensors (weights)
and tests/golden/torchvision_small_io.safetensors (input, logits).
"""
import os
import subprocess
import sys
import tempfile

import torch
from torchvision.models.vision_transformer import VisionTransformer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import stio  # noqa: E402
from vitrng import Rng  # noqa: E402

GOLDEN = os.path.join(HERE, "..", "tests", "golden")


def main():
    torch.manual_seed(0)
    model = VisionTransformer(image_size=32, patch_size=8, num_layers=2, num_heads=4,
                              hidden_dim=64, mlp_dim=128, num_classes=10).eval()
    with torch.no_grad():
        for p in model.parameters():  # every parameter matters, none is zero or one
            p.copy_(torch.randn_like(p) * 0.2)
    with tempfile.TemporaryDirectory() as tmp:
        pth = os.path.join(tmp, "vit_small.pth")
        torch.save(model.state_dict(), pth)
        out = os.path.join(GOLDEN, "torchvision_small.safetensors")
        subprocess.run([sys.executable, os.path.join(HERE, "to_safetensors.py"),
                        "--meta", "num_heads=4", pth, out], check=True)
    x = torch.from_numpy(Rng(31).fill_uniform(2 * 3 * 32 * 32, -1, 1)).reshape(2, 3, 32, 32)
    with torch.no_grad():
        logits = model(x)
    stio.save(os.path.join(GOLDEN, "torchvision_small_io.safetensors"),
              {"input": x, "logits": logits},
              {"generator": "tools/gen_golden_torchvision.py", "torch": torch.__version__,
               "torchvision": __import__("torchvision").__version__})
    print("logits[0,:4]", logits[0, :4].tolist())


if __name__ == "__main__":
    main()
