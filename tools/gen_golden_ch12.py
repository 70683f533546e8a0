#!/usr/bin/python3
"""PyTorch goldens for chapter 12: tests/golden/ch12_attention_maps.safetensors.

    tools/gen_golden_ch12.py         writes it (after data/models changed, again)
    tools/gen_golden_ch12.py --help  this text, then the options every golden script takes

chapters/12_attention_maps.c pins every number it prints; this script
computes each one again, independently, under the same name. The model is
data/models/vit-fashion.safetensors (VIT_DATA_DIR, as the C code reads it,
else the source tree's data/), run by tools/ref_vit.py in float64 on
Fashion-MNIST's test images read here with gzip and numpy and normalised as
dataset_batch() does (tools/gen_golden_ch11.py's helpers):

  predict.*        the ten shown images' probabilities and how many are right
  layer.*          image 0's [cls] attention per layer, the heads' mean
  rollout.*        its rollout (heads' mean; heads' max with 90 % discarded)
  mistake.*        the row sums of vit-explain's wrong-axis normalisation
  grad.*           its gradient-weighted rollout for the predicted class (autograd)
  grad.units.self  the same map's share on [cls] with the gradient of the class's
                   logit, probability and log-probability
  measure.*        the rankings of lib/explain/rollout_measure.c on the first 200 test
                   images: the four attention maps, random patches, each patch's
                   mean brightness, the garment mask (each patch's fraction of
                   pixels above 32), random garment patches (those at least half
                   above 32 first), and occlusion, the fall of the probability
                   with each patch alone black. Their share on the garment (for
                   occlusion, of its positive falls), the predicted
                   class's probability with each ranking's first 1, 5, 10 patches
                   black (the random ones: tools/vitrng.py's PCG32 and
                   lib/train/dataset.c's shuffle, seed 12, per image 10 shuffles
                   and then 10 more for the garment's, each probability the mean
                   over the 10), and at k = 10 the standard error, paired over
                   the images, of each ranking's difference from the strongest
                   baseline, of each attention map's from random patches, and of
                   the brightness map's from the best attention map

Discarding ranks a layer's fused entries, and the deletion test a map's
patches: where two values differ by less than float32 rounding, the C code
and this script may order them differently. The script checks that image 0's
discarded entries keep a margin, and the deletion figures (means over 200
images, in which one such swap could move a mean by up to about 5e-4) get a
tolerance of 1e-3; the C and PyTorch figures have agreed to 1e-7.
"""
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_common import golden, main  # noqa: E402
from gen_golden_ch11 import batch, shipped_model_and_test, shuffle  # noqa: E402
from gen_golden_rollout import attention_and_grads, fuse, grad_fuse, roll_out  # noqa: E402
from vitrng import Rng  # noqa: E402

SHOWN = [0, 1, 2, 4, 6, 8, 9, 13, 18, 19]
MEASURED, BATCH, GARMENT, SEED = 200, 100, 32, 12
KS = [1, 5, 10]
DRAWS = 10  # random orders per image, for each random baseline
# the rankings, in rollout.h's MapMethod order: the four attention maps, then
RANDOM, BRIGHTNESS, GARMENT_MASK, RANDOM_GARMENT, OCCLUSION, ROWS = 4, 5, 6, 7, 8, 9
DISCARD, MARGIN = 0.9, 1e-6


def discard(f, ratio, check=False):
    """floor(ratio*N*N) lowest entries to 0, ties by position, (0, 0) spared."""
    flat = f.flatten().clone()
    k = int(flat.numel() * ratio)
    order = torch.argsort(flat, stable=True)
    if check:
        gap = (flat[order[k]] - flat[order[k - 1]]).item()
        if gap < MARGIN:
            raise SystemExit(f"gen_golden_ch12: image 0's discard at {ratio}: two entries only "
                             f"{gap:.3g} apart, closer than float32 can tell")
    low = order[:k]
    flat[low[low != 0]] = 0
    return flat.reshape(f.shape)


def wrong_axis(fused_layers):
    """vit-explain's a / a.sum(dim=-1) on (1, N, N): column j divided by row j's sum."""
    return roll_out(fused_layers, colnorm_bug=True)


def maps_of(probs, grads):
    """The four maps of rollout_measure.c for one image, each (P)."""
    L = len(probs)
    mean = roll_out([fuse(p, "mean") for p in probs])[0, 1:]
    mx = roll_out([discard(fuse(p, "max"), DISCARD) for p in probs])[0, 1:]
    last = probs[L - 1].mean(0)[0, 1:]
    grad = roll_out([grad_fuse(p, g) for p, g in zip(probs, grads)])[0, 1:]
    return [mean, mx, last, grad]


def garment_share(m, pixels, patch):
    side = pixels.shape[0] // patch
    frac = (pixels.reshape(side, patch, side, patch) > GARMENT).mean(axis=(1, 3)).reshape(-1)
    frac = torch.from_numpy(frac.astype(np.float64))
    total = float(m.sum())
    return float((m * frac).sum()) / total if total > 0 else 0.0


def rank(m):
    """Patches by decreasing value, ties by index."""
    return sorted(range(len(m)), key=lambda q: (-float(m[q]), q))


def masked(x, order, k, patch, black):
    side = x.shape[-1] // patch
    y = x.clone()
    for q in order[:k]:
        r, c = divmod(q, side)
        y[0, r * patch:(r + 1) * patch, c * patch:(c + 1) * patch] = black
    return y


def probs_at(model, x, pred):
    with torch.no_grad():
        p = torch.softmax(model(x), dim=-1)
    return p[torch.arange(len(pred)), pred]


def patch_stats(pixels, patch):
    """Each patch's mean byte (the brightness map) and fraction above GARMENT, each (P)."""
    side = pixels.shape[0] // patch
    blocks = pixels.reshape(side, patch, side, patch).astype(np.float64)
    bright = blocks.mean(axis=(1, 3)).reshape(-1)
    frac = (blocks > GARMENT).mean(axis=(1, 3)).reshape(-1)
    return torch.from_numpy(bright), torch.from_numpy(frac)


def random_orders(P, rng, garment):
    """DRAWS shuffles of the patches, then DRAWS with the garment's patches (at least
    half above GARMENT) moved to the front, each part in its shuffled order."""
    plain = [shuffle(P, rng) for _ in range(DRAWS)]
    on = []
    for _ in range(DRAWS):
        o = shuffle(P, rng)
        on.append([q for q in o if garment[q] >= 0.5] + [q for q in o if garment[q] < 0.5])
    return plain, on


def measure(model, test_x, table, patch, g):
    """Every ranking of rollout_measure.c, scored image by image."""
    P = (test_x.shape[-1] // patch) ** 2
    black = float(table[0])
    rng = Rng(SEED)
    mass, uniform, full = np.zeros(ROWS), 0.0, 0.0
    per = np.zeros((ROWS, len(KS), MEASURED))  # each image's probability, masked
    for first in range(0, MEASURED, BATCH):
        idx = list(range(first, first + BATCH))
        x = torch.from_numpy(batch(test_x, idx, table)).double()
        with torch.no_grad():
            logits = model(x)
        pred = logits.argmax(-1)
        p_full = torch.softmax(logits, -1)[torch.arange(BATCH), pred]
        full += float(p_full.sum())
        # occlusion: patch q alone black in every image; the fall of the probability
        fall = torch.stack([p_full - probs_at(model, torch.stack([masked(x[b], [q], 1, patch, black)
                                                                   for b in range(BATCH)]), pred)
                            for q in range(P)], dim=1)  # (BATCH, P)
        orders = [[None] * BATCH for _ in range(ROWS)]  # a list of draws per image
        for b in range(BATCH):
            probs, grads = attention_and_grads(model, x[b:b + 1], 0, int(pred[b]))
            pixels = test_x[first + b]
            uniform += garment_share(torch.ones(P, dtype=torch.float64), pixels, patch)
            bright, frac = patch_stats(pixels, patch)
            maps = maps_of(probs, grads)
            for m, mp in zip([0, 1, 2, 3, BRIGHTNESS, GARMENT_MASK], maps + [bright, frac]):
                mass[m] += garment_share(mp, pixels, patch)
                orders[m][b] = [rank(mp)]
            orders[RANDOM][b], orders[RANDOM_GARMENT][b] = random_orders(P, rng, frac.numpy())
            occ = fall[b].float().double()  # the C code keeps the fall in float32
            orders[OCCLUSION][b] = [rank(occ)]
            mass[OCCLUSION] += garment_share(occ.clamp(min=0), pixels, patch)
        for m in range(ROWS):
            for ki, k in enumerate(KS):
                for d in range(len(orders[m][0])):
                    xm = torch.stack([masked(x[b], orders[m][b][d], k, patch, black)
                                      for b in range(BATCH)])
                    per[m, ki, first:first + BATCH] += (probs_at(model, xm, pred).numpy()
                                                        / len(orders[m][0]))
    n = MEASURED
    top = per.mean(axis=2)
    g["measure.mass"] = torch.tensor(mass / n)
    g["measure.prob_top"] = torch.tensor(top.reshape(-1))
    g["measure.uniform"] = torch.tensor(uniform / n)
    g["measure.prob_full"] = torch.tensor(full / n)
    # paired standard errors at k = 10: against the strongest baseline, and against random
    k10 = KS.index(10)
    strongest = min(range(4, OCCLUSION), key=lambda m: (top[m, k10], m))

    def se(a, b):
        d = per[a, k10] - per[b, k10]
        return d.std(ddof=1) / np.sqrt(n)
    g["measure.se_strongest"] = torch.tensor([se(m, strongest) for m in range(ROWS)])
    g["measure.se_random"] = torch.tensor([se(m, RANDOM) for m in range(4)])
    best = min(range(4), key=lambda m: (top[m, k10], m))
    g["measure.se_brightness_best"] = torch.tensor(se(BRIGHTNESS, best))


def score_units(model, x, pred):
    """Image 0's gradient-weighted rollout, J(0, 0), with the gradient of the class's
    logit, probability and log-probability (autograd through softmax)."""
    c = int(pred[0])
    out = []
    for score in (lambda y: y[0, c], lambda y: torch.softmax(y, -1)[0, c],
                  lambda y: torch.log_softmax(y, -1)[0, c]):
        probs = {}

        def rec(name, t):
            if name.endswith("attn.probs"):
                t.retain_grad()
                probs[name] = t

        with torch.enable_grad():
            score(model(x, rec)).backward()
        names = [f"blocks.{i}.attn.probs" for i in range(len(model.blocks))]
        p0 = [probs[n][0].detach() for n in names]
        g0 = [probs[n].grad[0] for n in names]
        out.append(roll_out([grad_fuse(p, q) for p, q in zip(p0, g0)])[0, 0])
    return torch.stack(out)


@golden
def ch12_attention_maps():
    torch.set_num_threads(1)
    model, table, test_x, test_y = shipped_model_and_test()
    patch = model.patch_embed.kernel_size[0]
    g = {}
    x = torch.from_numpy(batch(test_x, SHOWN, table)).double()
    with torch.no_grad():
        logits = model(x)
    probs = torch.softmax(logits, -1)
    pred = logits.argmax(-1)
    g["predict.probs"] = probs.reshape(-1)
    g["predict.right"] = torch.tensor(float((pred == torch.from_numpy(test_y[SHOWN])).sum()))
    # image 0: its layers, rollouts, the mistake, the gradient-weighted map
    p0, g0 = attention_and_grads(model, x, 0, int(pred[0]))
    g["layer.cls"] = torch.stack([p.mean(0)[0, 1:] for p in p0]).reshape(-1)
    g["layer.self"] = torch.stack([p.mean(0)[0, 0] for p in p0])
    g["rollout.cls"] = roll_out([fuse(p, "mean") for p in p0])[0]
    kept = [discard(fuse(p, "max"), DISCARD, check=True) for p in p0]
    g["rollout.max_discard.cls"] = roll_out(kept)[0, 1:]
    g["mistake.row_sums"] = wrong_axis(kept).sum(-1)
    jg = roll_out([grad_fuse(p, q) for p, q in zip(p0, g0)])
    g["grad.pred.cls"] = jg[0, 1:]
    g["grad.pred.self"] = jg[0, 0]
    g["grad.units.self"] = score_units(model, x, pred)
    measure(model, test_x, table, patch, g)
    g = {k: v.float().contiguous() for k, v in g.items()}
    tol = {"measure.prob_top": (1e-3, 0), "measure.se_strongest": (1e-3, 0),
           "measure.se_random": (1e-3, 0), "measure.se_brightness_best": (1e-3, 0), "grad.units.self": (2e-5, 1e-4),
           "measure.mass": (1e-5, 1e-4), "grad.pred.cls": (2e-5, 1e-4), "grad.pred.self": (2e-5, 1e-4)}
    extra = {"model": "data/models/vit-fashion.safetensors", "shown": " ".join(map(str, SHOWN)),
             "measured": str(MEASURED), "reference": "tools/ref_vit.py in float64, autograd"}
    return g, tol, extra


if __name__ == "__main__":
    sys.exit(main(__doc__))
