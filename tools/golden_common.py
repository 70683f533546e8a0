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
The metadata always holds where the golden was made:

    "generator"  the script, e.g. "tools/gen_golden_ops.py"
    "torch"      its version, e.g. "1.13.0a0"
    "cpu"        the processor's model name (/proc/cpuinfo), e.g. "AMD EPYC"
    "isa"        the vector instructions: first the set torch's own kernels
                 use (its CPU capability), then the CPU's vector extensions
                 that torch's libraries (oneDNN, the BLAS) choose among,
                 e.g. "torch AVX2; cpu avx f16c fma avx2 avx512f avx512bw
                 avx512vl avx512_vnni avx512_bf16" (one line)

then the function's own entries; an entry given as None is left out. The same
float32 computation on another CPU may round differently (another kernel,
another order of a sum): `make goldens` compares what it made with the files
it replaced, tensor by tensor (tools/compare_goldens.py), and "cpu" and "isa"
say where each side was made. Tensors are stored in their own dtype: float32,
unless a test reads another on purpose. A test image a script makes
(write_image()) is a PNG carrying the same entries as text chunks.

Every script has the same command line:

    tools/gen_golden_TOPIC.py                  regenerate every golden of the script
    tools/gen_golden_TOPIC.py NAME...          regenerate only these
    tools/gen_golden_TOPIC.py --list           print the names
    tools/gen_golden_TOPIC.py --out-dir DIR    write into DIR instead of tests/golden
                                               (and test images instead of tests/data)

`make goldens` runs every script. Run with /usr/bin/python3 (Debian's
python3-torch); the tests never need Python.
"""
import functools
import os
import platform
import re
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stio  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN_DIR = os.path.join(ROOT, "tests", "golden")  # where write() puts the goldens
DATA_DIR = os.path.join(ROOT, "tests", "data")      # where test_data() puts test inputs

GOLDENS = {}  # module name -> {golden name: function}, in definition order
PROGRAM = None  # the golden script being run, relative to the checkout (set by main())

# The CPU's vector extensions that decide how float32 arithmetic is rounded
# (which kernels torch, oneDNN and the BLAS pick), as /proc/cpuinfo names them:
# x86-64's, then arm64's.
ISA_FLAGS = ("avx", "f16c", "fma", "avx2", "avx512f", "avx512bw", "avx512vl", "avx512_vnni",
             "avx512_bf16", "avx512_fp16", "avx_vnni", "amx_tile", "amx_bf16", "amx_int8",
             "asimd", "asimdhp", "asimddp", "sve", "sve2", "bf16", "i8mm")

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


def write_image(filename, image):
    """Save the PIL image as the PNG test input tests/data/FILENAME, with text
    chunks saying where it was made (generator, cpu, isa, and the versions of
    Pillow and NumPy, which drew it); returns the path."""
    import numpy
    import PIL
    from PIL.PngImagePlugin import PngInfo

    info = PngInfo()
    meta = {"generator": PROGRAM, "Pillow": PIL.__version__, "numpy": numpy.__version__,
            **made_on()}
    for k, v in meta.items():
        if v is not None:
            info.add_text(k, str(v))
    path = test_data(filename)
    try:
        image.save(path + ".tmp", format="PNG", pnginfo=info)  # complete, then renamed
        os.replace(path + ".tmp", path)
    finally:
        if os.path.exists(path + ".tmp"):
            os.unlink(path + ".tmp")
    return path


def _cpuinfo():
    """The first value of each field of /proc/cpuinfo ({} where there is none)."""
    fields = {}
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                key, sep, value = line.partition(":")
                if sep:
                    fields.setdefault(key.strip(), value.strip())
    except OSError:
        pass
    return fields


def torch_capability():
    """The vector instruction set torch's own CPU kernels use, e.g. "AVX2", or
    "NO AVX" when none (torch >= 2.0 says it directly; 1.13 in its build
    summary, which honours ATEN_CPU_CAPABILITY), or None."""
    get = getattr(getattr(torch.backends, "cpu", None), "get_cpu_capability", None)
    if get is not None:
        return str(get())
    m = re.search(r"CPU capability usage: *(.*\S)", torch.__config__.show())
    return m.group(1) if m else None


@functools.lru_cache(maxsize=None)
def _machine():
    info = _cpuinfo()
    cpu = info.get("model name") or info.get("Model name") or info.get("Hardware") \
        or platform.processor() or platform.machine() or None
    flags = set((info.get("flags") or info.get("Features") or "").split())
    has = " ".join(f for f in ISA_FLAGS if f in flags)
    cap = torch_capability()
    parts = ([f"torch {cap}"] if cap else []) + ([f"cpu {has}"] if has else [])
    return cpu, "; ".join(parts) or None


def made_on():
    """{"cpu": the processor's model name, "isa": the vector instructions} of
    this machine, the entries every golden carries (see the top of this file)."""
    cpu, isa = _machine()
    return {"cpu": cpu, "isa": isa}


def write(name, fn, program):
    """Compute golden `name` with fn() and save it, with its metadata, as NAME.safetensors."""
    result = fn()
    parts = list(result) if isinstance(result, tuple) else [result]
    tensors, tol, extra = parts + [{}] * (3 - len(parts))
    unknown = set(tol) - set(tensors)
    if unknown:
        raise SystemExit(f"{program}: {name}: tolerance for unknown values {sorted(unknown)}")
    meta = {"generator": program, "torch": torch.__version__, **made_on()}
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
    global GOLDEN_DIR, DATA_DIR, PROGRAM
    script = os.path.abspath(sys.modules["__main__"].__file__)
    program = PROGRAM = os.path.relpath(script, ROOT)
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
