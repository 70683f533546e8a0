"""What the golden scripts share: @golden, write() and the command line.

A golden script, tools/gen_golden_TOPIC.py, is a list of functions, each
registered with @golden under the name of the file it makes,
tests/golden/<name>.safetensors, and each computing its expected values with
PyTorch. As in tools/gen_golden.py, a function returns

    {pinned name: tensor}
    ({pinned name: tensor}, {pinned name: (atol, rtol)})
    ({pinned name: tensor}, {pinned name: (atol, rtol)}, {metadata key: value})

A tolerance becomes the metadata entry "tol.NAME" = "ATOL RTOL", read by
tests/check.c, for a value that needs another one than the checker's default.
The metadata always holds "generator" (the script) and "torch" (its version),
then the function's own entries; an entry given as None is left out. Tensors
are stored in their own dtype: float32, unless a test reads another on purpose.

Every script has the same command line:

    tools/gen_golden_TOPIC.py                  regenerate every golden of the script
    tools/gen_golden_TOPIC.py NAME...          regenerate only these
    tools/gen_golden_TOPIC.py --list           print the names
    tools/gen_golden_TOPIC.py --out-dir DIR    write into DIR instead of tests/golden
                                               (and test images instead of tests/data)

`make goldens` runs every script. Run with /usr/bin/python3 (Debian's
python3-torch); the tests never need Python.
"""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stio  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN_DIR = os.path.join(ROOT, "tests", "golden")  # where write() puts the goldens
DATA_DIR = os.path.join(ROOT, "tests", "data")      # where test_data() puts test inputs

GOLDENS = {}  # module name -> {golden name: function}, in definition order

USAGE = """\
Every golden script takes:
  NAME...        regenerate only these goldens (default: all of this script's)
  --list         print the names
  --out-dir DIR  write into DIR instead of tests/golden (and test images instead of tests/data)
  --help         this text"""


def golden(fn):
    """Register fn as the maker of tests/golden/<fn.__name__>.safetensors."""
    GOLDENS.setdefault(fn.__module__, {})[fn.__name__] = fn
    return fn


def test_data(filename):
    """The path of a test input a golden script makes (e.g. an image), in tests/data."""
    os.makedirs(DATA_DIR, exist_ok=True)
    return os.path.join(DATA_DIR, filename)


def write(name, fn, program):
    """Compute golden `name` with fn() and save it, with its metadata, as NAME.safetensors."""
    result = fn()
    parts = list(result) if isinstance(result, tuple) else [result]
    tensors, tol, extra = parts + [{}] * (3 - len(parts))
    unknown = set(tol) - set(tensors)
    if unknown:
        raise SystemExit(f"{program}: {name}: tolerance for unknown values {sorted(unknown)}")
    meta = {"generator": program, "torch": torch.__version__}
    meta.update(extra)
    meta.update({f"tol.{k}": f"{a:.3g} {r:g}" for k, (a, r) in tol.items()})
    meta = {k: str(v) for k, v in meta.items() if v is not None}
    os.makedirs(GOLDEN_DIR, exist_ok=True)
    path = os.path.join(GOLDEN_DIR, f"{name}.safetensors")
    before = _read(path)
    try:
        stio.save(path + ".tmp", tensors, meta)  # complete, then renamed into place
        os.replace(path + ".tmp", path)
    finally:
        if os.path.exists(path + ".tmp"):
            os.unlink(path + ".tmp")
    after = _read(path)
    change = "new" if before is None else "unchanged" if before == after else "changed"
    print(f"{_shown(path)}: {len(tensors)} values, {len(after)} bytes, {change}", flush=True)


def main(doc):
    """The command line of the golden script being run: [NAME...], --list, --out-dir DIR."""
    global GOLDEN_DIR, DATA_DIR
    script = os.path.abspath(sys.modules["__main__"].__file__)
    program = os.path.relpath(script, ROOT)
    goldens = GOLDENS.get("__main__", {})
    args = sys.argv[1:]
    if "-h" in args or "--help" in args:
        print(doc.strip() + "\n\n" + USAGE)
        return 0
    if "--list" in args:
        print("\n".join(goldens))
        return 0
    if "--out-dir" in args:
        i = args.index("--out-dir")
        if i + 1 >= len(args):
            print(f"{program}: --out-dir needs a directory", file=sys.stderr)
            return 2
        GOLDEN_DIR = DATA_DIR = os.path.abspath(args[i + 1])
        del args[i:i + 2]
    names = args or list(goldens)
    unknown = [n for n in names if n not in goldens]
    if unknown:
        print(f"{program}: unknown golden {', '.join(unknown)}; known: {', '.join(goldens)}",
              file=sys.stderr)
        return 2
    torch.set_grad_enabled(False)
    for n in names:
        write(n, goldens[n], program)
    return 0


def _read(path):
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return None


def _shown(path):
    """path relative to the checkout when inside it, else as it is."""
    rel = os.path.relpath(path, ROOT)
    return path if rel.startswith("..") else rel
