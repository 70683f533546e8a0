#!/usr/bin/python3
"""Writes data/images/fashion-mnist/: the first image of each of the ten
Fashion-MNIST classes in the TEST split, as 28x28 grey PNGs named by test
index and class (0000-ankle-boot.png), and the README.md that says where they
come from. Dev-time only: the files are committed, nothing at build or test
time runs this.

Reads Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist/
t10k-images-idx3-ubyte.gz and t10k-labels-idx1-ubyte.gz) with gzip and numpy;
writes with Pillow. The test split, because the project's model is trained
on the training split only: these are pictures it has never seen.

    tools/export_fashion_images.py [--dataset DIR] [--out DIR]

The output is the same on every run (same pixels, same bytes)."""
import argparse
import gzip
import os
import re
import struct
import sys

import numpy as np
from PIL import Image

# The class names in label order, as Zalando's README gives them (and as the
# trained model's "class_names" metadata holds them).
CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat",
           "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.normpath(os.path.join(HERE, "..", "data", "images", "fashion-mnist"))
DEFAULT_DATASET = "/usr/share/datasets/fashion-mnist"


def read_idx(path, magic, ndim):
    """An IDX file (gzip) as a numpy uint8 array; its header checked."""
    with gzip.open(path, "rb") as f:
        data = f.read()
    got, = struct.unpack(">I", data[:4])
    if got != magic:
        sys.exit(f"{path}: magic {got:#x}, expected {magic:#x}")
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    body = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    if body.size != int(np.prod(dims)):
        sys.exit(f"{path}: {body.size} bytes of data for a {dims} array")
    return body.reshape(dims)


def slug(name):
    """'T-shirt/top' -> 't-shirt-top', 'Ankle boot' -> 'ankle-boot'."""
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def file_name(index, label):
    return f"{index:04d}-{slug(CLASSES[label])}.png"


README = """# Fashion-MNIST test images

Ten pictures from the **test split** of Fashion-MNIST (the 10,000 images of
`t10k-images-idx3-ubyte`): the first image of each class, in the order of the
test set. Each is the dataset's own 28×28 grey image, unchanged (white garment
on black), saved as an 8-bit grey PNG named by its test index and its class.
The project's model is trained on the training split only, so it has never
seen these. `vitview` (and `make run`) shows `{default}` when it opens the
trained model `data/models/vit-fashion.safetensors`.

| file | test index | label | class |
| --- | --- | --- | --- |
{rows}

Licence: MIT ("Expat"), copyright 2017 Zalando SE — Fashion-MNIST by Zalando
Research (Han Xiao, Kashif Rasul, Roland Vollgraf), as Debian's
`dataset-fashion-mnist` package states in
`/usr/share/doc/dataset-fashion-mnist/copyright`:

> Permission is hereby granted, free of charge, to any person obtaining a
> copy of this software and associated documentation files (the "Software"),
> to deal in the Software without restriction, including without limitation
> the rights to use, copy, modify, merge, publish, distribute, sublicense,
> and/or sell copies of the Software, and to permit persons to whom the
> Software is furnished to do so, subject to the following conditions:
>
> The above copyright notice and this permission notice shall be included
> in all copies or substantial portions of the Software.
>
> THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS
> OR IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF
> MERCHANTABILITY, FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT.
> IN NO EVENT SHALL THE AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY
> CLAIM, DAMAGES OR OTHER LIABILITY, WHETHER IN AN ACTION OF CONTRACT,
> TORT OR OTHERWISE, ARISING FROM, OUT OF OR IN CONNECTION WITH THE
> SOFTWARE OR THE USE OR OTHER DEALINGS IN THE SOFTWARE.

How they were made: `tools/export_fashion_images.py` read
`/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz` and
`t10k-labels-idx1-ubyte.gz` (Debian 12's `dataset-fashion-mnist`) with Python's
gzip and numpy, and wrote each image with Pillow (`Image.fromarray(pixels,
"L").save(...)`) and this README. To make them again:

    apt-get install dataset-fashion-mnist python3-numpy python3-pil
    tools/export_fashion_images.py
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default=DEFAULT_DATASET,
                    help="folder of the IDX files (default: %(default)s)")
    ap.add_argument("--out", default=DEFAULT_OUT, help="where to write (default: %(default)s)")
    args = ap.parse_args()

    images = read_idx(os.path.join(args.dataset, "t10k-images-idx3-ubyte.gz"), 0x803, 3)
    labels = read_idx(os.path.join(args.dataset, "t10k-labels-idx1-ubyte.gz"), 0x801, 1)
    if images.shape != (10000, 28, 28) or labels.shape != (10000,):
        sys.exit(f"unexpected test split: images {images.shape}, labels {labels.shape}")

    # the first test index of each class, written in test order
    first = sorted(int(np.argmax(labels == c)) for c in range(len(CLASSES)))
    os.makedirs(args.out, exist_ok=True)
    rows = []
    for i in first:
        name = file_name(i, int(labels[i]))
        Image.fromarray(images[i], "L").save(os.path.join(args.out, name))
        rows.append(f"| `{name}` | {i} | {labels[i]} | {CLASSES[labels[i]]} |")
        print("wrote", os.path.join(args.out, name))
    default = file_name(first[0], int(labels[first[0]]))
    with open(os.path.join(args.out, "README.md"), "w") as f:
        f.write(README.replace("{rows}", "\n".join(rows)).replace("{default}", default))
    print("wrote", os.path.join(args.out, "README.md"))


if __name__ == "__main__":
    main()
