#!/usr/bin/python3
"""Goldens for the viewer's export (suite `viewer_export`): small float32
arrays written by numpy.save itself, so the C writer's .npy files can be
compared with NumPy's byte for byte.

    tools/gen_golden_export.py                  writes tests/golden/export_*.npy
    tools/gen_golden_export.py NAME...          only these (see --list)
    tools/gen_golden_export.py --list           print the names
    tools/gen_golden_export.py --out-dir DIR    write into DIR instead of tests/golden

Unlike the other golden scripts these are .npy files, not safetensors, and
need NumPy only. The values are exact in float32 (multiples of 1/4), so no
rounding stands between this script and the C test that builds them again.
NumPy 1.24 lays the header out as the C writer does; another version that
pads differently would show up as a changed file under `make goldens`. A .npy
file has no room for metadata (an extra header key would break that byte for
byte comparison), so these, alone among the goldens, do not say where they were
made: being exact, they are the same on every CPU.

Run with /usr/bin/python3 (Debian's python3-numpy). Tests never need Python.
"""
import os
import sys

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def export_small():
    """Shape (2, 3, 4): arange(24) * 0.25 - 1, i.e. -1, -0.75, …, 4.75."""
    return (np.arange(24, dtype=np.float32) * np.float32(0.25) - np.float32(1)).reshape(2, 3, 4)


def export_vec():
    """Shape (5,), written (5,): 1.5 - 0.75 * arange(5), i.e. 1.5, 0.75, 0, -0.75, -1.5."""
    return np.float32(1.5) - np.arange(5, dtype=np.float32) * np.float32(0.75)


def export_probs():
    """Shape (1, 2, 3, 3), an attention map's (B, H, N, N): each row one of
    (1, 0, 0), (0.5, 0.5, 0), (0.25, 0.25, 0.5)."""
    rows = np.array([[1, 0, 0], [0.5, 0.5, 0], [0.25, 0.25, 0.5]], dtype=np.float32)
    return np.stack([rows, rows[::-1]])[None]


def export_scalar():
    """A 0-d array, shape (): 2.5."""
    return np.array(2.5, dtype=np.float32)


GOLDENS = {f.__name__: f for f in (export_small, export_vec, export_probs, export_scalar)}


def write(out_dir, name):
    path = os.path.join(out_dir, name + ".npy")
    before = open(path, "rb").read() if os.path.exists(path) else None
    array = GOLDENS[name]()
    assert array.dtype == np.float32
    try:
        with open(path + ".tmp", "wb") as f:  # complete, then renamed into place
            np.save(f, array)
        os.replace(path + ".tmp", path)
    finally:
        if os.path.exists(path + ".tmp"):
            os.unlink(path + ".tmp")
    after = open(path, "rb").read()
    change = "new" if before is None else "unchanged" if before == after else "changed"
    rel = os.path.relpath(path, ROOT)
    shown = path if rel.startswith("..") else rel
    print(f"{shown}: shape {array.shape}, {len(after)} bytes, {change}", flush=True)


def main():
    program = os.path.relpath(os.path.abspath(__file__), ROOT)
    args = sys.argv[1:]
    if "-h" in args or "--help" in args:
        print(__doc__.strip())
        return 0
    if "--list" in args:
        print("\n".join(GOLDENS))
        return 0
    out_dir = os.path.join(ROOT, "tests", "golden")
    if "--out-dir" in args:
        i = args.index("--out-dir")
        if i + 1 >= len(args):
            print(f"{program}: --out-dir needs a directory", file=sys.stderr)
            return 2
        out_dir = os.path.abspath(args[i + 1])
        del args[i:i + 2]
    names = args or list(GOLDENS)
    unknown = [n for n in names if n not in GOLDENS]
    if unknown:
        print(f"{program}: unknown golden {', '.join(unknown)}; known: {', '.join(GOLDENS)}",
              file=sys.stderr)
        return 2
    os.makedirs(out_dir, exist_ok=True)
    print(f"numpy {np.__version__}")
    for n in names:
        write(out_dir, n)
    return 0


if __name__ == "__main__":
    sys.exit(main())
