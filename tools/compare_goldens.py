#!/usr/bin/python3
"""Compare goldens made again with the ones they replace: which files changed, and by how much.

    tools/compare_goldens.py DIR...                    DIR's files against the committed ones
                                                       (tests/golden, then tests/data)
    tools/compare_goldens.py --old DIR... NEWDIR...    against the files of these folders
                                                       (--old once per folder)

`make goldens` runs it after the golden scripts: GOLDEN_DIR=dir against the
committed files; in place, against the files as they were before. Files are
matched by name across the folders of each side (the first folder holding a name
wins); only the files directly in a folder count (tests/data/bad/ is not made by
the scripts). For each file it prints one of

    identical   same bytes
    same values every tensor (or pixel) the same (bit for bit, or but for the sign
                of a NaN or of a zero, which the tests do not see); the metadata differs,
                each key that does is shown old | new (e.g. "cpu" and "isa": where
                each side was made, tools/golden_common.py)
    rounding    some values differ, each within its tolerance
    BEYOND      some value differs by more than its tolerance, a tensor is added or
                missing or changed its shape or dtype, or a test image's pixels differ

and, for a tensor that differs, its name, the largest absolute difference, the
largest relative one (|new - old| / |old|), and how much of its tolerance that
is: max |new - old| / (atol + rtol |old|) over the elements, the tests' own rule
(tests/check.h). The tolerance is the golden's "tol.NAME" metadata entry
(the new file's, else the old one's), else the checker's default, 1e-05 + 1e-04
|old|; a test that compares a value with a tighter tolerance of its own is not
seen here, which is why `make test` has the last word. Integer and boolean
tensors have no tolerance: any difference is beyond it. A .npy file is compared
as an array, a PNG image by its pixels and its text chunks (where it was made),
any other file byte for byte.

The last line sums it up: N identical, M differ at rounding level (within
tolerance), K differ beyond tolerance (and files added or missing). Exit status:
0 when nothing differs beyond tolerance, 1 when something does (or a file is
added or missing), 2 on a usage error or a file that does not read.

Run with /usr/bin/python3 (Debian's python3-torch; Pillow for the images).
"""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stio  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMITTED = [os.path.join(ROOT, "tests", "golden"), os.path.join(ROOT, "tests", "data")]
DEFAULT_TOL = (1e-5, 1e-4)  # tests/check.h: CHECK_ATOL, CHECK_RTOL
SHOWN = 120                 # a metadata value longer than this is cut short


class Unreadable(Exception):
    pass


def files_of(dirs):
    """{name: path} of the files directly in dirs, the first folder holding a name winning."""
    out = {}
    for d in dirs:
        for name in sorted(os.listdir(d)):
            path = os.path.join(d, name)
            if os.path.isfile(path) and not name.endswith(".tmp"):
                out.setdefault(name, path)
    return out


def shown(value):
    if value is None:
        return "(none)"
    return value if len(value) <= SHOWN else value[:SHOWN - 1] + "…"


def meta_lines(old, new):
    """One line per metadata key whose value differs: 'meta KEY: OLD | NEW'."""
    lines = []
    for k in sorted(set(old) | set(new)):
        if old.get(k) != new.get(k):
            lines.append(f"meta {k}: {shown(old.get(k))} | {shown(new.get(k))}")
    return lines


def tolerance(name, old_meta, new_meta):
    """(atol, rtol, where from) of tensor `name`: its tol.NAME entry, else the default."""
    for meta in (new_meta, old_meta):
        v = meta.get(f"tol.{name}")
        if v is not None:
            try:
                atol, rtol = (float(x) for x in v.split())
                return atol, rtol, "its"
            except ValueError:
                pass
    return DEFAULT_TOL + ("the default",)


def raw(t):
    """The bytes of t as stored."""
    t = t.contiguous().reshape(-1)
    return (t.view(torch.int16) if t.dtype == torch.bfloat16 else t).numpy().tobytes()


def tensor_change(name, a, b, tol):
    """None when a and b are the same bits, else (kind, text), kind "bits" (the same
    values in other bits), "rounding" (within tolerance) or "BEYOND"."""
    if a.dtype != b.dtype or tuple(a.shape) != tuple(b.shape):
        return "BEYOND", (f"{name}: {str(a.dtype).replace('torch.', '')}{list(a.shape)} -> "
                      f"{str(b.dtype).replace('torch.', '')}{list(b.shape)}")
    if raw(a) == raw(b):
        return None
    if not a.is_floating_point():  # integers and booleans: exact or wrong
        differ = int((a != b).sum())
        worst = (a.long() - b.long()).abs().max().item()
        return "BEYOND", f"{name}: {differ} of {a.numel()} differ, max |diff| {worst}, no tolerance"
    x, y = a.double().flatten(), b.double().flatten()
    atol, rtol, whose = tol
    both_nan = torch.isnan(x) & torch.isnan(y)
    equal = (x == y) | both_nan   # equal infinities too
    finite = torch.isfinite(x) & torch.isfinite(y)
    odd = int((~equal & ~finite).sum())  # a NaN or an infinity against something else
    differ = int((~equal).sum())
    if differ == 0:  # other bits, same values: a NaN's sign or payload, -0 for +0
        return "bits", f"{name}: same values, other bits (the sign of a NaN or of a zero)"
    zero = torch.zeros_like(x)
    d = torch.where(finite, (x - y).abs(), zero)
    max_abs = d.max().item()
    nonzero = finite & (x != 0)
    rel = (d[nonzero] / x[nonzero].abs()).max().item() if bool(nonzero.any()) else 0.0
    if bool((finite & (x == 0) & (d > 0)).any()):
        rel = math.inf
    used = torch.where(finite, d / (atol + rtol * x.abs()), zero).max().item()
    kind = "BEYOND" if odd > 0 or used > 1 else "rounding"
    text = (f"{name}: {differ} of {x.numel()} differ, max |diff| {max_abs:.3g}, "
            f"max rel {rel:.3g}, {used:.2g} of {whose} tolerance ({atol:.3g} + {rtol:g}·|old|)")
    if odd:
        text += f"; {odd} NaN or infinities that do not match"
    return kind, text


def load_tensors(path):
    """({name: tensor}, metadata) of a safetensors or .npy file."""
    try:
        if path.endswith(".npy"):
            import numpy as np
            return {"(array)": torch.from_numpy(np.load(path, allow_pickle=False).copy())}, {}
        return stio.load(path)
    except Exception as e:  # noqa: BLE001 - any damage: say which file
        raise Unreadable(f"{path}: does not read ({e})")


def compare_tensors(old_path, new_path):
    """(verdict, lines) for two tensor files."""
    (old, old_meta), (new, new_meta) = load_tensors(old_path), load_tensors(new_path)
    lines, beyond, changed = [], False, False
    for name in old:
        if name not in new:
            lines.append(f"{name}: missing in the new file")
            beyond = True
    for name in new:
        if name not in old:
            lines.append(f"{name}: added in the new file")
            beyond = True
            continue
        found = tensor_change(name, old[name], new[name], tolerance(name, old_meta, new_meta))
        if found:
            changed |= found[0] != "bits"
            beyond |= found[0] == "BEYOND"
            lines.append(found[1])
    lines += meta_lines(old_meta, new_meta)
    verdict = "BEYOND" if beyond else "rounding" if changed else "same values"
    return verdict, lines


def compare_png(old_path, new_path):
    """(verdict, lines) for two PNG images: their pixels, then their text chunks."""
    try:
        from PIL import Image
        with Image.open(old_path) as a, Image.open(new_path) as b:
            old_px, new_px = (a.mode, a.size, a.tobytes()), (b.mode, b.size, b.tobytes())
            old_meta, new_meta = dict(getattr(a, "text", {})), dict(getattr(b, "text", {}))
    except ImportError:
        return "BEYOND", ["(no Pillow to look inside: the bytes differ)"]
    except Exception as e:  # noqa: BLE001
        raise Unreadable(f"{new_path}: does not read as an image ({e})")
    lines = []
    if old_px[:2] != new_px[:2]:
        lines.append(f"pixels: {old_px[0]} {old_px[1]} -> {new_px[0]} {new_px[1]}")
    elif old_px[2] != new_px[2]:
        x = torch.frombuffer(bytearray(old_px[2]), dtype=torch.uint8).int()
        y = torch.frombuffer(bytearray(new_px[2]), dtype=torch.uint8).int()
        lines.append(f"pixels: {int((x != y).sum())} of {x.numel()} values differ, "
                     f"max |diff| {(x - y).abs().max().item()}, no tolerance")
    verdict = "BEYOND" if lines else "same values"
    lines += meta_lines(old_meta, new_meta)
    return verdict, lines


def compare(old_path, new_path):
    """(verdict, lines): identical, same values, rounding or BEYOND, and why."""
    with open(old_path, "rb") as f:
        old_bytes = f.read()
    with open(new_path, "rb") as f:
        new_bytes = f.read()
    if old_bytes == new_bytes:
        return "identical", []
    if new_path.endswith((".safetensors", ".npy")):
        return compare_tensors(old_path, new_path)
    if new_path.endswith(".png"):
        return compare_png(old_path, new_path)
    return "BEYOND", [f"the bytes differ ({len(old_bytes)} -> {len(new_bytes)} bytes)"]


def main(argv):
    if "-h" in argv or "--help" in argv:
        print(__doc__.strip())
        return 0
    old_dirs, new_dirs, args = [], [], list(argv)
    while args:
        a = args.pop(0)
        if a == "--old":
            if not args:
                print("compare_goldens: --old needs a folder", file=sys.stderr)
                return 2
            old_dirs.append(args.pop(0))
        elif a.startswith("-"):
            print(f"compare_goldens: unknown option {a} (see --help)", file=sys.stderr)
            return 2
        else:
            new_dirs.append(a)
    if not new_dirs:
        print("usage: tools/compare_goldens.py [--old DIR]... DIR... (see --help)", file=sys.stderr)
        return 2
    old_dirs = old_dirs or COMMITTED
    for d in old_dirs + new_dirs:
        if not os.path.isdir(d):
            print(f"compare_goldens: {d}: not a folder", file=sys.stderr)
            return 2
    old, new = files_of(old_dirs), files_of(new_dirs)
    print(f"goldens: {' '.join(new_dirs)} against {' '.join(old_dirs)} (old | new)")
    counts = {"identical": 0, "same values": 0, "rounding": 0, "BEYOND": 0}
    added = sorted(set(new) - set(old))
    missing = sorted(set(old) - set(new))
    unreadable = 0
    for name in sorted(set(old) & set(new)):
        try:
            verdict, lines = compare(old[name], new[name])
        except Unreadable as e:
            print(f"  UNREADABLE  {name}: {e}")
            unreadable += 1
            continue
        counts[verdict] += 1
        print(f"  {verdict:<11} {name}")
        for line in lines:
            print(f"      {line}")
    for name in added:
        print(f"  added       {name} (no old file)")
    for name in missing:
        print(f"  missing     {name} (not made)")
    same = counts["identical"] + counts["same values"]
    summary = (f"goldens: {same} identical ({counts['same values']} of them in values only, "
               f"the metadata differs), {counts['rounding']} differ at rounding level "
               f"(within tolerance), {counts['BEYOND']} differ beyond tolerance")
    for n, what in ((len(added), "added"), (len(missing), "missing"), (unreadable, "unreadable")):
        if n:
            summary += f", {n} {what}"
    print(summary)
    if unreadable:
        return 2
    return 1 if counts["BEYOND"] or added or missing else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
