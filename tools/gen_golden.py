#!/usr/bin/python3
"""PyTorch goldens for the CUnit suites: tests/golden/NAME.safetensors.

    tools/gen_golden.py              regenerate every golden
    tools/gen_golden.py NAME...      regenerate only these, e.g. ch03_softmax
    tools/gen_golden.py --list       print the names

Each golden file is made by one function below, registered with @golden under
its own name. A function returns {pinned name: tensor}, or a pair
({pinned name: tensor}, {pinned name: (atol, rtol)}) when some value needs a
tolerance other than the checker's default; that becomes the metadata entry
"tol.NAME" = "ATOL RTOL" read by tests/check.c.

The rules:
  * Inputs are rebuilt from the same seeds with tools/vitrng.py, which
    reproduces lib/rng.c bit for bit, so both sides see identical numbers.
  * Expected values are computed here with torch ops (torch.dot,
    torch.matmul, torch.softmax, torch.var, ...), never copied from the C code.
  * Every value a chapter pins must appear here under the same name, and
    nothing else: the checker fails on values produced but not pinned, and on
    values pinned but never produced.
  * Keep files small: pin statistics and samples of big tensors, not the tensors.

Run with /usr/bin/python3 (Debian's python3-torch). Tests never need Python.
"""
import math
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stio  # noqa: E402
from vitrng import Rng  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
GOLDEN_DIR = os.path.join(ROOT, "tests", "golden")

GOLDENS = {}  # name -> function, in definition order


def golden(fn):
    """Register fn as the maker of tests/golden/<fn.__name__>.safetensors."""
    GOLDENS[fn.__name__] = fn
    return fn


def f32(x):
    """A float32 tensor from a number, list or tensor (0-d for a plain number)."""
    return torch.as_tensor(x, dtype=torch.float32) if not torch.is_tensor(x) else x.float()


def normal(rng, *shape):
    """rng_fill_normal(rng, x, numel, 0, 1) from lib/rng.h, as a float32 tensor."""
    n = math.prod(shape)
    return torch.from_numpy(rng.fill_normal(n, 0.0, 1.0)).reshape(shape)


# --------------------------------------------------------------- chapter 01

@golden
def ch01_dot_product():
    """chapters/01_dot_product.c: dot products, lengths, angles, a matmul, Q·Kᵀ."""
    g = {}
    a = f32([1, 2, 3])
    b = f32([4, -5, 6])
    g["a"], g["b"] = a, b
    g["dot_a_b"] = torch.dot(a, b)

    # Geometry in float64, as the chapter computes it, then stored as float32.
    def length(v):
        return torch.linalg.norm(v.double())

    def cosine(u, v):
        return (torch.dot(u.double(), v.double()) / (length(u) * length(v))).clamp(-1, 1)

    def angle(u, v):
        return torch.rad2deg(torch.acos(cosine(u, v)))

    g["norm_a"], g["norm_b"] = length(a), length(b)
    g["cos_a_b"], g["angle_a_b"] = cosine(a, b), angle(a, b)
    partners = {"twice_a": 2 * a, "c": f32([3, 0, -1]), "neg_a": -a}
    for key, v in partners.items():
        g[f"dot_a_{key}"] = torch.dot(a, v)
        g[f"cos_a_{key}"] = cosine(a, v)
        g[f"angle_a_{key}"] = angle(a, v)

    A = f32([[1, 2, 3], [4, 5, 6]])
    B = f32([[1, 0], [0, 1], [1, -1]])
    g["A"], g["B"], g["C"] = A, B, torch.matmul(A, B)
    g["c10_by_dot"] = torch.dot(A[1], B[:, 0])

    rng = Rng(1)                   # QK_SEED: Q first, then K
    Q, K = normal(rng, 4, 8), normal(rng, 4, 8)
    scores = torch.matmul(Q, K.T)
    g["Q"], g["K"], g["scores"] = Q, K, scores
    g["score_2_1_by_dot"] = torch.dot(Q[2], K[1])
    best_score, best_key = scores.max(dim=1)
    g["best_key"], g["best_score"] = best_key, best_score
    return g


# --------------------------------------------------------------- chapter 02

@golden
def ch02_scaling():
    """chapters/02_scaling.c: variance of q·k against width, softmax saturation."""
    g = {}
    queries = keys = 1024
    row_keys = 8
    rng = Rng(2)                   # one stream: Q then K for each width in turn
    rows = {}
    for d in (4, 16, 64, 256, 768):
        Q, K = normal(rng, queries, d), normal(rng, keys, d)
        scores = torch.matmul(Q, K.T)
        scaled = scores / math.sqrt(d)
        g[f"mean_d{d}"] = scores.double().mean()  # float64 sums: the C side uses double too
        g[f"var_d{d}"] = torch.var(scores, unbiased=False)
        g[f"std_d{d}"] = torch.std(scores, unbiased=False)
        g[f"var_scaled_d{d}"] = torch.var(scaled, unbiased=False)
        rows[d] = (scores[0, :row_keys], scaled[0, :row_keys])
        if d == 768:
            g["var_div_d_d768"] = torch.var(scores / d, unbiased=False)

    g["entropy_uniform"] = torch.log(f32(row_keys))

    def entropy(p):
        return torch.special.entr(p).sum()  # -p ln p, with 0 ln 0 = 0

    for d, (row, row_scaled) in rows.items():
        p_raw, p_scaled = torch.softmax(row, dim=0), torch.softmax(row_scaled, dim=0)
        g[f"max_prob_raw_d{d}"] = p_raw.max()
        g[f"entropy_raw_d{d}"] = entropy(p_raw)
        g[f"max_prob_scaled_d{d}"] = p_scaled.max()
        g[f"entropy_scaled_d{d}"] = entropy(p_scaled)
        if d == 768:
            g["row_d768"], g["row_scaled_d768"] = row, row_scaled
            g["probs_raw_d768"], g["probs_scaled_d768"] = p_raw, p_scaled

    return g


# --------------------------------------------------------------- chapter 03

@golden
def ch03_softmax():
    """chapters/03_softmax.c: softmax, its overflow, masking, temperature."""
    g = {}
    x = f32([2.0, 1.0, 0.1, -1.0])
    g["x"] = x
    g["exp_x"] = torch.exp(x)
    g["exp_sum"] = torch.exp(x).sum()
    g["p"] = torch.softmax(x, dim=0)
    g["p_sum"] = torch.softmax(x, dim=0).sum()
    g["p_shift_100"] = torch.softmax(x + 100, dim=0)

    # What goes wrong: the textbook formula exp(x) / sum(exp(x)) in float32.
    def textbook(v):
        e = torch.exp(v)
        return e, e / e.sum()

    g["float_max"] = f32(torch.finfo(torch.float32).max)
    g["exp_overflow_at"] = torch.log(g["float_max"])
    x_big, x_small = x + 1000, x - 1000
    g["x_big"], g["x_small"] = x_big, x_small
    g["exp_x_big_naive"], g["p_big_naive"] = textbook(x_big)        # inf, NaN
    g["exp_x_small_naive"], g["p_small_naive"] = textbook(x_small)  # 0, NaN
    g["x_big_minus_max"] = x_big - x_big.max()
    g["p_big"] = torch.softmax(x_big, dim=0)
    g["p_small"] = torch.softmax(x_small, dim=0)

    rng = Rng(3)                   # SCORES_SEED
    scores = normal(rng, 4, 4)
    g["scores"] = scores
    idx = torch.arange(4)
    padding = torch.zeros(4, 4).masked_fill(idx[None, :] >= 3, -math.inf)
    causal = torch.zeros(4, 4).masked_fill(idx[None, :] > idx[:, None], -math.inf)
    g["padding_mask"], g["causal_mask"] = padding, causal
    g["p_padded"] = torch.softmax(scores + padding, dim=-1)
    g["row_sums_padded"] = g["p_padded"].sum(dim=-1)
    g["p_causal"] = torch.softmax(scores + causal, dim=-1)

    all_masked = torch.full((4,), -math.inf)
    g["p_all_masked_naive"] = textbook(all_masked)[1]               # 0/0 = NaN
    # torch.softmax gives NaN for a fully masked row as well. lib's convention
    # (lib/ops.h) is a row of zeros; pin that convention explicitly.
    p_torch = torch.softmax(all_masked, dim=0)
    assert torch.isnan(p_torch).all()
    g["p_all_masked"] = torch.nan_to_num(p_torch, nan=0.0)

    g["p_uniform"] = f32(1 / 4)
    for label, T in (("0_1", 0.1), ("0_5", 0.5), ("1", 1.0), ("2", 2.0), ("10", 10.0)):
        g[f"p_t{label}"] = torch.softmax(x / T, dim=0)
    return g


# --------------------------------------------------------------------- main

def write(name, goldens=GOLDENS, program="tools/gen_golden.py"):
    """Compute golden `name` of `goldens` and save it with its tolerances as metadata."""
    result = goldens[name]()
    tensors, tol = result if isinstance(result, tuple) else (result, {})
    tensors = {k: f32(v).contiguous() for k, v in tensors.items()}
    unknown = set(tol) - set(tensors)
    if unknown:
        raise SystemExit(f"{program}: {name}: tolerance for unknown values {sorted(unknown)}")
    meta = {"generator": f"{program} {name}", "torch": torch.__version__}
    meta.update({f"tol.{k}": f"{a:g} {r:g}" for k, (a, r) in tol.items()})
    os.makedirs(GOLDEN_DIR, exist_ok=True)
    path = os.path.join(GOLDEN_DIR, f"{name}.safetensors")
    stio.save(path, tensors, meta)
    print(f"{os.path.relpath(path, ROOT)}: {len(tensors)} values, {os.path.getsize(path)} bytes")


def main(argv, goldens=GOLDENS, program="tools/gen_golden.py", doc=__doc__):
    """The command line of a golden script: [NAME...], --list, --help."""
    if "-h" in argv or "--help" in argv:
        print(doc.strip())
        return 0
    if "--list" in argv:
        print("\n".join(goldens))
        return 0
    names = argv or list(goldens)
    unknown = [n for n in names if n not in goldens]
    if unknown:
        print(f"{program}: unknown golden {', '.join(unknown)}; known: {', '.join(goldens)}",
              file=sys.stderr)
        return 2
    torch.set_grad_enabled(False)
    for n in names:
        write(n, goldens, program)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
