#!/usr/bin/python3
"""Writes data/labels/imagenet1k.txt: the 1000 ImageNet-1k class names, one per
line in class-index order, from the list torchvision ships with its weights'
metadata (torchvision.models._meta._IMAGENET_CATEGORIES)."""
import os

from torchvision.models._meta import _IMAGENET_CATEGORIES

out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "data", "labels", "imagenet1k.txt")
assert len(_IMAGENET_CATEGORIES) == 1000
with open(out, "w") as f:
    f.writelines(name + "\n" for name in _IMAGENET_CATEGORIES)
print("wrote", os.path.normpath(out))
