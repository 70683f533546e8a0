#!/usr/bin/python3
"""PyTorch goldens for lib/train/optim.h (suite `optim` in tests/test_optim.c).

Every expected value comes from PyTorch's own pieces, never from a formula
typed again here: torch.optim.AdamW, the lr_scheduler classes and
torch.nn.utils.clip_grad_norm_. The inputs (parameters, gradients) are drawn
with torch.randn from fixed seeds and stored, so the C test reads them.

    tools/gen_golden_optim.py           writes tests/golden/optim_adamw.safetensors,
                                        optim_schedule.safetensors, optim_clip.safetensors
    tools/gen_golden_optim.py --help    this text, then the options every golden script takes

optim_adamw: ten steps of torch.optim.AdamW over four small float32 tensors in
two param groups, as timm makes them: "w1" (4,3) and "w2" (2,5) with weight
decay, "b1" (6) and "g1" (3) without. Each step sets every .grad to that
step's stored gradient, clips the four together with clip_grad_norm_, steps
the optimizer, then the schedule (LinearLR warm-up from 0.1 of the peak, then
CosineAnnealingLR, joined by SequentialLR). b1's first gradient is always 0
and its second tiny (1e-9), so eps and the 0/eps path matter. Pinned:
  NAME.init         (shape)      the parameter before the first step
  NAME.grads        (10, shape)  the gradient of each step, before clipping
  NAME.after        (10, shape)  the parameter after each step
  NAME.m, NAME.v    (shape)      AdamW's exp_avg and exp_avg_sq after the last step
  lr                (10)         the learning rate each step used
  norm              (10)         what clip_grad_norm_ returned each step
optim_schedule: the learning rate of every step of three schedules (SCHEDULES).
optim_clip: clip_grad_norm_ over three tensors, once with a max_norm below
their norm ("above") and once above it ("below"): NAME.g0..g2 the gradients,
NAME.c0..c2 after clipping, NAME.norm the norm in float64 (stored as float32),
NAME.max_norm.

Run with /usr/bin/python3 (Debian's python3-torch). Tests never need Python.
"""
import math
import os
import sys
import warnings

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_common import golden, main  # noqa: E402

# The AdamW run; the same numbers are in tests/test_optim.c.
STEPS = 10
PEAK_LR, MIN_LR, WARMUP_START, WARMUP_STEPS = 0.1, 1e-3, 0.1, 3
BETAS, EPS, WEIGHT_DECAY, MAX_NORM = (0.9, 0.999), 1e-8, 0.1, 4.0
TENSORS = [("w1", (4, 3), True), ("w2", (2, 5), True), ("b1", (6,), False), ("g1", (3,), False)]
# Gradient size of each step: the norm of the four (31 values) is about
# 5.6 times this, so max_norm 4 clips some steps and leaves others.
GRAD_SCALE = [1.0, 0.2, 3.0, 0.5, 1.0, 2.0, 0.1, 1.5, 0.3, 1.0]

# (name, peak, min, warm-up start, warm-up steps, total steps); also in tests/test_optim.c.
SCHEDULES = [
    ("adamw_run", PEAK_LR, MIN_LR, WARMUP_START, WARMUP_STEPS, STEPS),
    ("from_zero", 5e-4, 1e-5, 0.0, 25, 200),
    ("no_warmup", 1e-3, 0.0, 0.0, 0, 20),
]


def scheduler(opt, peak, min_lr, start, warm, total):
    """PyTorch's own warm-up then cosine, ending at min_lr on step total - 1.
    LinearLR refuses a start factor of 0, so a warm-up from 0 is a LambdaLR."""
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=total - 1 - warm, eta_min=min_lr)
    if warm == 0:
        return cosine
    if start > 0:
        warmup = torch.optim.lr_scheduler.LinearLR(opt, start_factor=start, end_factor=1.0,
                                                   total_iters=warm)
    else:
        warmup = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: s / warm)
    return torch.optim.lr_scheduler.SequentialLR(opt, [warmup, cosine], milestones=[warm])


def closed_form(s, peak, min_lr, start, warm, total):
    """optim.h's formula, only to check that PyTorch's schedulers mean the same."""
    if s < warm:
        return peak * (start + (1 - start) * s / warm)
    return min_lr + (peak - min_lr) * 0.5 * (1 + math.cos(math.pi * (s - warm) / (total - 1 - warm)))


def schedule_values(peak, min_lr, start, warm, total):
    """The learning rate each of the total steps uses, as PyTorch's schedulers set it."""
    opt = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=peak)
    with warnings.catch_warnings():  # SequentialLR's own step(0) is "deprecated"
        warnings.simplefilter("ignore")
        sched = scheduler(opt, peak, min_lr, start, warm, total)
        lrs = []
        for _ in range(total):
            lrs.append(opt.param_groups[0]["lr"])
            opt.step()
            sched.step()
    want = [closed_form(s, peak, min_lr, start, warm, total) for s in range(total)]
    worst = max(abs(a - b) / max(b, 1e-300) for a, b in zip(lrs, want) if b > 0)
    assert worst < 1e-12, f"torch's schedule and optim.h's formula differ by {worst:g}"
    return lrs


def adamw_inputs():
    """The four tensors and their STEPS gradients, drawn from seed 11."""
    g = torch.Generator().manual_seed(11)
    params, grads = {}, {}
    for name, shape, _ in TENSORS:
        params[name] = torch.randn(shape, generator=g)
        grads[name] = torch.stack([torch.randn(shape, generator=g) * s for s in GRAD_SCALE])
    params["g1"] += 1.0  # a LayerNorm scale lives near 1
    grads["b1"][:, 0] = 0.0
    grads["b1"][:, 1] *= 1e-9
    return params, grads


@golden
def optim_adamw():
    """Ten AdamW steps with two param groups, warm-up plus cosine and clipping."""
    init, grads = adamw_inputs()
    params = {n: torch.nn.Parameter(init[n].clone()) for n, _, _ in TENSORS}
    groups = [
        {"params": [params[n] for n, _, d in TENSORS if d], "weight_decay": WEIGHT_DECAY},
        {"params": [params[n] for n, _, d in TENSORS if not d], "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups, lr=PEAK_LR, betas=BETAS, eps=EPS, foreach=False)
    with warnings.catch_warnings():  # SequentialLR's own step(0) is "deprecated"
        warnings.simplefilter("ignore")
        sched = scheduler(opt, PEAK_LR, MIN_LR, WARMUP_START, WARMUP_STEPS, STEPS)
    after = {n: [] for n in params}
    lrs, norms = [], []
    for step in range(STEPS):
        for n, p in params.items():
            p.grad = grads[n][step].clone()
        norms.append(float(torch.nn.utils.clip_grad_norm_(list(params.values()), MAX_NORM)))
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sched.step()
        for n, p in params.items():
            after[n].append(p.detach().clone())
    assert any(x > MAX_NORM for x in norms) and any(x < MAX_NORM for x in norms)
    pinned = {}
    for n, p in params.items():
        pinned[f"{n}.init"] = init[n]
        pinned[f"{n}.grads"] = grads[n]
        pinned[f"{n}.after"] = torch.stack(after[n])
        pinned[f"{n}.m"] = opt.state[p]["exp_avg"]
        pinned[f"{n}.v"] = opt.state[p]["exp_avg_sq"]
    pinned["lr"] = torch.tensor(lrs, dtype=torch.float32)
    pinned["norm"] = torch.tensor(norms, dtype=torch.float32)
    meta = {
        "adamw": f"lr={PEAK_LR} betas={BETAS} eps={EPS} weight_decay={WEIGHT_DECAY} "
                 "(w1, w2; 0 for b1, g1) foreach=False",
        "schedule": f"LinearLR(start_factor={WARMUP_START}, total_iters={WARMUP_STEPS}) then "
                    f"CosineAnnealingLR(T_max={STEPS - 1 - WARMUP_STEPS}, eta_min={MIN_LR})",
        "clip": f"clip_grad_norm_(all four, max_norm={MAX_NORM}) before each step",
        "inputs": "torch.randn, Generator seed 11: each tensor, then its gradients",
    }
    return pinned, {}, meta


@golden
def optim_schedule():
    """The learning rate of every step of each schedule in SCHEDULES, named NAME.lr."""
    pinned, meta = {}, {}
    for name, peak, min_lr, start, warm, total in SCHEDULES:
        pinned[f"{name}.lr"] = torch.tensor(schedule_values(peak, min_lr, start, warm, total),
                                            dtype=torch.float64).float()
        meta[name] = (f"peak={peak} min={min_lr} warmup_start={start} warmup_steps={warm} "
                      f"total_steps={total}")
    return pinned, {}, meta


def clip_case(scale, max_norm, seed):
    """Three gradients drawn from seed and scaled, clipped together to max_norm."""
    g = torch.Generator().manual_seed(seed)
    grads = [torch.randn(shape, generator=g) * scale for shape in [(3, 4), (5,), (2, 2, 2)]]
    params = [torch.nn.Parameter(torch.zeros_like(x)) for x in grads]
    for p, x in zip(params, grads):
        p.grad = x.clone()
    torch.nn.utils.clip_grad_norm_(params, max_norm)
    exact = torch.linalg.vector_norm(torch.cat([x.double().flatten() for x in grads]))
    return grads, [p.grad for p in params], exact


@golden
def optim_clip():
    """clip_grad_norm_ with a norm above max_norm ("above") and below it ("below")."""
    pinned = {}
    for name, scale, max_norm, seed in [("above", 2.0, 1.0, 21), ("below", 0.1, 100.0, 22)]:
        grads, clipped, exact = clip_case(scale, max_norm, seed)
        for i, (g, c) in enumerate(zip(grads, clipped)):
            pinned[f"{name}.g{i}"] = g
            pinned[f"{name}.c{i}"] = c
        pinned[f"{name}.norm"] = exact.float().reshape(1)
        pinned[f"{name}.max_norm"] = torch.tensor([max_norm])
    return pinned, {}, {"norm": "torch.linalg.vector_norm of every gradient, in float64"}


if __name__ == "__main__":
    sys.exit(main(__doc__))
