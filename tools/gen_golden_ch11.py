#!/usr/bin/python3
"""PyTorch goldens for chapter 11: tests/golden/ch11_training.safetensors (the data
and the runs) and tests/golden/ch11_shipped.safetensors (data/models: the logs, the model).

    tools/gen_golden_ch11.py          writes both
    tools/gen_golden_ch11.py ch11_shipped   only the second, after data/models changed
    tools/gen_golden_ch11.py --check  also runs every training run again in float32, and
                                      prints how far it lands from the float64 one
    tools/gen_golden_ch11.py --help   this text, then the options every golden script takes

chapters/11_training.c pins every number of its data and its runs; this
script computes each one again, independently, under the same name:

  * the data: Debian's Fashion-MNIST IDX files, read here with gzip and numpy;
    the counts per class, the validation split (the last 5,000 training images),
    the pixel mean and standard deviation in float64, training image 0, and its
    crop and flip (tools/vitrng.py reproduces lib/base/rng.c; the offsets are drawn
    as lib/train/dataset.c draws them, Lemire's multiply-and-reject);
  * the runs: the tiny ViT's initial weights are drawn here from the chapter's
    seed by lib/model/init.c's rule (one PCG32 stream per tensor, a normal of std 0.02
    cut at ±2 for every weight, zero biases, LayerNorms 1 and 0), each epoch's
    order and each step's augmentation come from the streams train.c seeds (the
    seed, the purpose, the epoch or step, mixed as splitmix64), and the steps are
    PyTorch's own: tools/ref_vit.py in float64, F.cross_entropy with label
    smoothing, loss.backward(), clip_grad_norm_, and torch.optim.AdamW with
    timm's two parameter groups, its learning rate from PyTorch's schedulers
    (gen_golden_optim.py's scheduler(): LambdaLR warm-up from 0, then
    CosineAnnealingLR). The evaluations are the same model on the same images;
  * the logs (data/models/vit-fashion.csv and data/models/experiments/*.csv), when
    they are there, read with Python's csv module;
  * the shipped model (data/models/vit-fashion.safetensors), when it is there,
    run by tools/ref_vit.py in float64 on the first 1,000 test images;
  * its film (data/models/vit-fashion.film/, epochs 0, 1, 4 and 36), each frame
    run the same way, with the last block's attention probabilities from
    ref_vit.py's record; and its layer log (vit-fashion.layers.csv), read with
    the csv module.

The logs and the model are data/'s (VIT_DATA_DIR, as the C code reads it,
else the source tree's data/). ch11_shipped records what was there
("log.present", "model.present", "experiments.count"); when data/models no
longer holds the same files, the test says so and leaves those numbers
unchecked until this script makes ch11_shipped again.

Tolerances. A training run is a long chain of float arithmetic: the C code's
float32 and this float64 reference drift apart a little at each step, and the
drift grows as the run goes on. `--check` repeats every run in float32 here and
prints how far PyTorch's own float32 run lands from its float64 one, the size
of the difference float32 alone makes; the tolerances below are a few times
that (RUN_TOL), below what a mistake in a step does to a run (points of
accuracy); the probes of tests/test_ch11_training.c catch a wrong step
exactly. The first steps' losses and gradient norms are pinned tightly
(FIRST_TOL): there the two runs have not drifted yet.

Run with /usr/bin/python3 (Debian's python3-torch). Tests never need Python.
"""
import csv
import gzip
import math
import os
import re
import sys
import warnings

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_common import ROOT, golden, main  # noqa: E402
from gen_golden_optim import scheduler  # noqa: E402
from ref_vit import RefViT  # noqa: E402
import stio  # noqa: E402
from vitrng import Rng  # noqa: E402

# The chapter's constants (chapters/11_training.c).
FASHION_DIR = "/usr/share/datasets/fashion-mnist"
VAL_SPLIT = 5000
MEAN, STD = 0.2860, 0.3530           # train_defaults()
SHOWN, AUGMENT_SEED, AUGMENT = 0, 12, dict(pad=2, flip=True)
TINY = dict(img=28, patch=7, chans=1, dim=32, depth=2, heads=2, mlp_dim=64, classes=10, eps=1e-6)
SEED = 11
SEEDS = 3  # Section 5 runs each from SEED, SEED + 1 and SEED + 2
BATCH, STEPS, WARMUP, PEAK_LR, MIN_LR = 32, 192, 64, 3e-3, 1e-5
WEIGHT_DECAY, CLIP, SMOOTHING = 0.05, 1.0, 0.1
BETAS, ADAM_EPS = (0.9, 0.999), 1e-8
VAL_IMAGES, FIT_IMAGES, FIRST = 1000, 1000, 5
# (images, augmented, evaluated every … epochs), in the chapter's order of RUN
SIZES = 4  # RUNS[:SIZES]: more and more images, the CNN's runs too
SMALL_CNN = (8, 20)  # the CNN's channels (chapters/11_training.c's SMALL_CNN)
RUNS = [(128, False, 8), (512, False, 12), (2048, False, 1), (6144, False, 1), (512, True, 12)]
TEST_IMAGES, MISTAKES = 1000, 4
# Section 6: the film's frames shown, the test image they are shown on, the share
# of the top patches, and the layer log's epochs and groups tabulated
FILM_EPOCHS, FILM_IMAGE, FILM_TOP = [0, 1, 4, 36], 0, 5
RATIO_EPOCHS, RATIO_GROUPS = [1, 2, 4, 8, 16, 36], ["patch_embed", "blocks.2", "head"]
LAYER_COLUMNS = ["epoch", "step", "layer", "grad_norm", "weight_norm", "update_ratio"]
LOG_COLUMNS = ["epoch", "step", "lr", "train_loss", "train_acc", "val_loss", "val_acc",
               "seconds", "images_per_s"]
LOG_PINNED = ["epoch", "step", "lr", "train_loss", "train_acc", "val_loss", "val_acc"]

# Tolerances (atol, rtol); see the docstring. The first steps have not drifted:
FIRST_TOL = (1e-4, 1e-4)      # the first five steps' losses and gradient norms
MODEL_TOL = (1e-4, 1e-4)      # the shipped model on the test images: one forward pass
# A run's losses (nats) and accuracies (fractions), by run. Measured with --check
# (PyTorch float32 against float64) and against the C code: the runs on 128, 2,048
# and 6,144 images stay within 2e-5 and the same accuracies; the two on 512 images
# drift most, up to 9e-3 (float32 PyTorch) and 1.3e-2 (C) in a loss and 0.7 and
# 1.6 points in an accuracy. The tolerances are a few times that, and far below
# what a wrong step changes (points, and tenths of a nat).
RUN_TOL = {"run128": (2e-3, 5e-3), "run512": (0.05, 0.03), "run2048": (2e-3, 5e-3),
           "run6144": (2e-3, 5e-3), "run512_augmented": (0.05, 0.04)}

# The CNN's final accuracies (fractions), by run. Measured with --check (PyTorch
# float32 against float64) and against the C code: every one of the 24 lands within
# 0.002 (two images of the validation thousand, one of 512 own images), most exactly;
# the tolerance is five times that, and a mean's and a spread's scale with it
# (pins_of_the_seeds()).
CNN_TOL = {"cnn128": 0.01, "cnn512": 0.01, "cnn2048": 0.01, "cnn6144": 0.01}

MASK64 = (1 << 64) - 1


def data_dir():
    """data/ as lib/io/labels.c's vit_data_path() finds it."""
    return os.environ.get("VIT_DATA_DIR") or os.path.join(ROOT, "data")


# ------------------------------------------------------------------ the data

def read_idx(path):
    with gzip.open(path, "rb") as f:
        raw = f.read()
    magic = int.from_bytes(raw[:4], "big")
    dims = [int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(magic & 0xFF)]
    return np.frombuffer(raw, dtype=np.uint8, offset=4 + 4 * len(dims)).reshape(dims)


def fashion(split):
    """(images (n, 28, 28) uint8, labels (n) int) of "train" or "t10k"."""
    images = read_idx(os.path.join(FASHION_DIR, f"{split}-images-idx3-ubyte.gz"))
    labels = read_idx(os.path.join(FASHION_DIR, f"{split}-labels-idx1-ubyte.gz"))
    return images, labels.astype(np.int64)


def below(rng, n):
    """lib/train/dataset.c's rng_below(): uniform in [0, n), Lemire's multiply-and-reject."""
    m = rng.u32() * n
    low = m & 0xFFFFFFFF
    if low < n:
        threshold = ((1 << 32) - n) % n
        while low < threshold:
            m = rng.u32() * n
            low = m & 0xFFFFFFFF
    return m >> 32


def augment_draw(rng, pad, flip):
    dy = dx = pad
    if pad > 0:
        dy, dx = below(rng, 2 * pad + 1), below(rng, 2 * pad + 1)
    flipped = bool(rng.u32() >> 31) if flip else False
    return dy, dx, flipped


def lut(mean, std):
    """Every byte's normalised value, in float32 as dataset_batch() computes it."""
    v = np.arange(256, dtype=np.float32)
    return (v / np.float32(255.0) - np.float32(mean)) / np.float32(std)


def shipped_model_and_test():
    """The shipped model in float64, its normalisation table and the test images:
    (model, table, test_x, test_y), as chapters 12 and 13 read them."""
    path = os.path.join(data_dir(), "models", "vit-fashion.safetensors")
    model = RefViT.from_safetensors(path).double()
    meta = stio.load(path)[1]
    table = lut(float(meta.get("mean", 0.2860)), float(meta.get("std", 0.3530)))
    test_x, test_y = fashion("t10k")
    return model, table, test_x, test_y


def batch(images, indices, table, aug=None, rng=None):
    """dataset_batch(): (B, 1, S, S) float32, each image padded, cropped, mirrored as drawn."""
    S = images.shape[-1]
    out = np.empty((len(indices), 1, S, S), dtype=np.float32)
    for b, i in enumerate(indices):
        img = table[images[i]]
        if aug:
            pad = aug["pad"]
            dy, dx, flipped = augment_draw(rng, pad, aug["flip"])
            padded = np.full((S + 2 * pad, S + 2 * pad), table[0], dtype=np.float32)
            padded[pad:pad + S, pad:pad + S] = img
            img = padded[dy:dy + S, dx:dx + S]
            if flipped:  # out(y, x) = padded(y + dy, S − 1 − x + dx)
                img = img[:, ::-1]
        out[b, 0] = img
    return out


def pins_of_the_data(g, train_x, train_y, test_x, test_y):
    per = lambda y: torch.tensor(np.bincount(y, minlength=10), dtype=torch.float32)  # noqa: E731
    g["data.train_per_class"], g["data.test_per_class"] = per(train_y), per(test_y)
    g["data.val_per_class"] = per(train_y[-VAL_SPLIT:])
    g["data.train_images"] = torch.tensor(float(len(train_y)))
    g["data.test_images"] = torch.tensor(float(len(test_y)))
    g["data.split_train"] = torch.tensor(float(len(train_y) - VAL_SPLIT))
    g["data.split_val"] = torch.tensor(float(VAL_SPLIT))
    for prefix, x in (("data.", train_x), ("data.split_", train_x[:-VAL_SPLIT])):
        p = x.astype(np.float64) / 255.0
        g[prefix + "mean"], g[prefix + "std"] = torch.tensor(p.mean()), torch.tensor(p.std())
    g["image.pixels"] = torch.tensor(train_x[SHOWN], dtype=torch.float32)
    g["image.label"] = torch.tensor(float(train_y[SHOWN]))
    draw = augment_draw(Rng(AUGMENT_SEED), AUGMENT["pad"], AUGMENT["flip"])
    g["augment.draw"] = torch.tensor([float(v) for v in draw])
    moved = batch(train_x, [SHOWN], lut(0.0, 1.0), AUGMENT, Rng(AUGMENT_SEED))
    g["augment.pixels"] = torch.from_numpy(moved[0, 0].copy())


# ------------------------------------------------------------------ the runs

def init_weights(cfg, seed):
    """lib/model/init.c's vit_build_random() with vit_init_timm(seed), as timm-named float32 tensors."""
    D, M, Y, C, p = cfg["dim"], cfg["mlp_dim"], cfg["classes"], cfg["chans"], cfg["patch"]
    N = (cfg["img"] // p) ** 2 + 1
    shapes = [("patch_embed.proj.weight", (D, C, p, p), "w"), ("patch_embed.proj.bias", (D,), "b"),
              ("cls_token", (1, 1, D), "w"), ("pos_embed", (1, N, D), "w")]
    for i in range(cfg["depth"]):
        b = f"blocks.{i}."
        shapes += [(b + "norm1.weight", (D,), "1"), (b + "norm1.bias", (D,), "b"),
                   (b + "attn.qkv.weight", (3 * D, D), "w"), (b + "attn.qkv.bias", (3 * D,), "b"),
                   (b + "attn.proj.weight", (D, D), "w"), (b + "attn.proj.bias", (D,), "b"),
                   (b + "norm2.weight", (D,), "1"), (b + "norm2.bias", (D,), "b"),
                   (b + "mlp.fc1.weight", (M, D), "w"), (b + "mlp.fc1.bias", (M,), "b"),
                   (b + "mlp.fc2.weight", (D, M), "w"), (b + "mlp.fc2.bias", (D,), "b")]
    shapes += [("norm.weight", (D,), "1"), ("norm.bias", (D,), "b"),
               ("head.weight", (Y, D), "w"), ("head.bias", (Y,), "b")]
    out = {}
    for index, (name, shape, kind) in enumerate(shapes):
        n = int(np.prod(shape))
        if kind == "w":
            rng = Rng((seed * 1000003 + index) & MASK64)
            v = rng.fill_trunc_normal(n, 0.0, 0.02, -2.0, 2.0)
        else:
            v = np.full(n, 1.0 if kind == "1" else 0.0, dtype=np.float32)
        out[name] = torch.from_numpy(v.reshape(shape))
    return out


def ref_model(weights, cfg, dtype):
    m = RefViT(cfg["img"], cfg["patch"], cfg["chans"], cfg["dim"], cfg["depth"], cfg["heads"],
               cfg["mlp_dim"], cfg["classes"], eps=cfg["eps"])
    state = {}
    for k, v in weights.items():
        k = k.replace("patch_embed.proj.", "patch_embed.").replace("mlp.", "")
        state[k] = v
    m.load_state_dict(state)
    return m.to(dtype)


def stream(seed, purpose, index):
    """train.c's seed_stream(): splitmix64 of the seed, the purpose and the index."""
    z = (seed * 0x9E3779B97F4A7C15 + purpose * 0xBF58476D1CE4E5B9 + index) & MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return Rng(z ^ (z >> 31))


def shuffle(n, rng):
    order = list(range(n))
    for i in range(n - 1, 0, -1):
        j = below(rng, i + 1)
        order[i], order[j] = order[j], order[i]
    return order


def no_decay(name, p):
    """timm's param_groups_weight_decay with VisionTransformer.no_weight_decay()."""
    return p.ndim <= 1 or name.endswith(".bias") or name in ("cls_token", "pos_embed")


def evaluate(model, images, labels, table, dtype):
    """evaluate(): (mean loss, accuracy) over the images, un-augmented."""
    x = torch.from_numpy(batch(images, range(len(labels)), table)).to(dtype)
    with torch.no_grad():
        z = model(x)
    y = torch.from_numpy(labels)
    return float(F.cross_entropy(z, y)), float((z.argmax(dim=1) == y).double().mean())


class SmallCNN(torch.nn.Module):
    """lib/model/cnn.h with SMALL_CNN's channels: conv3×3 → ReLU → maxpool, twice, mean, linear."""

    def __init__(self, c1, c2):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(1, c1, 3, padding=1)
        self.conv2 = torch.nn.Conv2d(c1, c2, 3, padding=1)
        self.fc = torch.nn.Linear(c2, 10)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.conv1(x)), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        return self.fc(x.mean(dim=(2, 3)))


def cnn_model(seed, dtype):
    """cnn_init() with Rng(seed): each layer's weight then bias, uniform in ±1/√fan_in, float32."""
    c1, c2 = SMALL_CNN
    m = SmallCNN(c1, c2)
    r = Rng(seed)
    state = {}
    for name, shape, fan_in in (("conv1", (c1, 1, 3, 3), 9), ("conv2", (c2, c1, 3, 3), 9 * c1),
                                ("fc", (10, c2), c2)):
        bound = np.float32(1.0) / np.sqrt(np.float32(fan_in))
        for part, sh in (("weight", shape), ("bias", (shape[0],))):
            v = r.fill_uniform(int(np.prod(sh)), -bound, bound)
            state[f"{name}.{part}"] = torch.from_numpy(np.asarray(v).reshape(sh))
    m.load_state_dict(state)
    return m.to(dtype)


def macs(model, x, attention=0):
    """Multiply-adds of one forward pass, counted on the layers as they run: each output
    value of a convolution or a linear layer is one dot product of its input's length;
    `attention` adds the products of Q·Kᵀ and probs·V, which are no layers."""
    total = [attention]

    def count(layer, inputs, out):
        if isinstance(layer, torch.nn.Conv2d):
            total[0] += out.numel() * layer.in_channels * layer.kernel_size[0] * layer.kernel_size[1]
        elif isinstance(layer, torch.nn.Linear):
            total[0] += out.numel() * layer.in_features

    hooks = [m.register_forward_hook(count) for m in model.modules()]
    with torch.no_grad():
        model(x)
    for h in hooks:
        h.remove()
    return total[0]


def train_run(images, labels, val_x, val_y, n, augment, every, dtype, seed=SEED, cnn=False):
    """One of the chapter's runs, in PyTorch: its per-epoch log and its first steps."""
    model = cnn_model(seed, dtype) if cnn else ref_model(init_weights(TINY, seed), TINY, dtype)
    x, y = images[:n], labels[:n]
    named = list(model.named_parameters())
    groups = [{"params": [p for k, p in named if not no_decay(k, p)], "weight_decay": WEIGHT_DECAY},
              {"params": [p for k, p in named if no_decay(k, p)], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=PEAK_LR, betas=BETAS, eps=ADAM_EPS)
    sched = scheduler(opt, PEAK_LR, MIN_LR, 0.0, WARMUP, STEPS)
    table = lut(MEAN, STD)
    spe = n // BATCH
    epochs = STEPS // spe
    log = {k: [] for k in ("epoch", "train_loss", "train_acc", "val_loss", "val_acc")}
    first = {"first_loss": [], "first_lr": [], "first_grad_norm": []}
    step = 0
    with torch.enable_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SequentialLR's own step(0) is "deprecated"
        for epoch in range(epochs):
            order = shuffle(n, stream(seed, 1, epoch))
            loss_sum, correct = 0.0, 0
            for i in range(spe):
                rows = order[i * BATCH:(i + 1) * BATCH]
                xb = batch(x, rows, table, AUGMENT if augment else None, stream(seed, 2, step))
                xb, yb = torch.from_numpy(xb).to(dtype), torch.from_numpy(y[rows])
                lr = opt.param_groups[0]["lr"]
                opt.zero_grad(set_to_none=True)
                z = model(xb)
                loss = F.cross_entropy(z, yb, label_smoothing=SMOOTHING)
                loss.backward()
                norm = float(torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP))
                opt.step()
                sched.step()
                loss_sum += float(np.float32(float(loss)))  # the C code sums float losses
                correct += int((z.detach().argmax(dim=1) == yb).sum())
                if step < FIRST:
                    first["first_loss"].append(float(loss))
                    first["first_lr"].append(lr)
                    first["first_grad_norm"].append(norm)
                step += 1
            if (epoch + 1) % every or cnn:  # the CNN's runs log only their end
                continue
            vl, va = evaluate(model, val_x, val_y, table, dtype)
            log["epoch"].append(epoch + 1)
            log["train_loss"].append(loss_sum / spe)
            log["train_acc"].append(correct / (spe * BATCH))
            log["val_loss"].append(vl)
            log["val_acc"].append(va)
    fit_n = min(n, FIT_IMAGES)
    fit_loss, fit_acc = evaluate(model, x[:fit_n], y[:fit_n], table, dtype)
    if cnn:
        log["val_acc"].append(evaluate(model, val_x, val_y, table, dtype)[1])
    return log, first, fit_loss, fit_acc


def mean_and_sd(v):
    v = np.asarray(v, dtype=np.float64)
    return float(v.mean()), float(v.std(ddof=1))


def pins_of_the_seeds(g, tol, name, val, fit, acc_tol, others):
    """Section 5: every seed's final accuracies, and their means and spreads in points."""
    vals = [val] + [o[0]["val_acc"][-1] for o in others]
    fits = [fit] + [o[3] for o in others]
    g[f"{name}.seeds.val_acc"] = torch.tensor(vals, dtype=torch.float32)
    g[f"{name}.seeds.fit_acc"] = torch.tensor(fits, dtype=torch.float32)
    tol[f"{name}.seeds.val_acc"] = tol[f"{name}.seeds.fit_acc"] = (acc_tol, 0.0)
    points = {"val": [100 * v for v in vals], "fit": [100 * f for f in fits],
              "gap": [100 * (f - v) for f, v in zip(fits, vals)]}
    for what, v in points.items():
        mean, sd = mean_and_sd(v)
        g[f"{name}.{what}_mean" if what != "gap" else f"{name}.gap"] = torch.tensor(mean)
        g[f"{name}.{what}_sd"] = torch.tensor(sd)
        # points; a gap is two accuracies, and a spread moves by up to twice its values' drift
        scale = 200 if what == "gap" else 100
        tol[f"{name}.{what}_mean" if what != "gap" else f"{name}.gap"] = (scale * acc_tol, 0.0)
        tol[f"{name}.{what}_sd"] = (2 * scale * acc_tol, 0.0)


def pins_of_the_cnn(g, tol, train_x, train_y, check):
    """Section 5's CNN: its size, and its runs of the four sizes from every seed."""
    split_x, split_y = train_x[:-VAL_SPLIT], train_y[:-VAL_SPLIT]
    val_x, val_y = train_x[-VAL_SPLIT:][:VAL_IMAGES], train_y[-VAL_SPLIT:][:VAL_IMAGES]
    cnn, vit = cnn_model(SEED, torch.float32), ref_model(init_weights(TINY, SEED), TINY, torch.float32)
    x = torch.zeros(1, 1, 28, 28)
    g["cnn.params"] = torch.tensor(float(sum(p.numel() for p in cnn.parameters())))
    g["vit.params"] = torch.tensor(float(sum(p.numel() for p in vit.parameters())))
    N, D = (TINY["img"] // TINY["patch"]) ** 2 + 1, TINY["dim"]
    g["cnn.macs"] = torch.tensor(float(macs(cnn, x)))
    g["vit.macs"] = torch.tensor(float(macs(vit, x, attention=TINY["depth"] * 2 * N * N * D)))
    for n, augment, every in RUNS[:SIZES]:
        name = f"cnn{n}"
        runs = [train_run(split_x, split_y, val_x, val_y, n, augment, every, torch.float64,
                          SEED + k, cnn=True) for k in range(SEEDS)]
        pins_of_the_seeds(g, tol, name, runs[0][0]["val_acc"][-1], runs[0][3], CNN_TOL[name],
                          runs[1:])
        if check:
            for k in range(SEEDS):
                r32 = train_run(split_x, split_y, val_x, val_y, n, augment, every, torch.float32,
                                SEED + k, cnn=True)
                print(f"  {name} seed {SEED + k}: float32 vs float64: val "
                      f"{abs(r32[0]['val_acc'][-1] - runs[k][0]['val_acc'][-1]):.4f}, fit "
                      f"{abs(r32[3] - runs[k][3]):.4f}", flush=True)


def pins_of_the_runs(g, tol, train_x, train_y, check):
    split_x, split_y = train_x[:-VAL_SPLIT], train_y[:-VAL_SPLIT]
    val_x, val_y = train_x[-VAL_SPLIT:][:VAL_IMAGES], train_y[-VAL_SPLIT:][:VAL_IMAGES]
    for n, augment, every in RUNS:
        name = f"run{n}{'_augmented' if augment else ''}"
        log, first, fit_loss, fit_acc = train_run(split_x, split_y, val_x, val_y, n, augment,
                                                  every, torch.float64)
        for k, v in log.items():
            g[f"{name}.{k}"] = torch.tensor(v, dtype=torch.float32)
        for k, v in first.items():
            g[f"{name}.{k}"] = torch.tensor(v, dtype=torch.float32)
            tol[f"{name}.{k}"] = FIRST_TOL
        g[f"{name}.fit_loss"] = torch.tensor(fit_loss, dtype=torch.float32)
        g[f"{name}.fit_acc"] = torch.tensor(fit_acc, dtype=torch.float32)
        loss_tol, acc_tol = RUN_TOL[name]
        for k in ("train_loss", "val_loss", "fit_loss"):
            tol[f"{name}.{k}"] = (loss_tol, 0.0)
        for k in ("train_acc", "val_acc", "fit_acc"):
            tol[f"{name}.{k}"] = (acc_tol, 0.0)
        pins_of_the_seeds(g, tol, name, log["val_acc"][-1], fit_acc, acc_tol,
                          [train_run(split_x, split_y, val_x, val_y, n, augment, every,
                                     torch.float64, SEED + k) for k in range(1, SEEDS)])
        if check:
            log32, first32, fl32, fa32 = train_run(split_x, split_y, val_x, val_y, n, augment,
                                                   every, torch.float32)
            loss_gap = max(abs(a - b) for k in ("train_loss", "val_loss")
                           for a, b in zip(log[k], log32[k]))
            acc_gap = max(abs(a - b) for k in ("train_acc", "val_acc")
                          for a, b in zip(log[k], log32[k]))
            first_gap = max(abs(a - b) / abs(b) for k in first for a, b in zip(first[k], first32[k])
                            if b)
            print(f"  {name}: float32 vs float64: losses {loss_gap:.2e}, accuracies "
                  f"{acc_gap:.4f}, fit {abs(fl32 - fit_loss):.2e} / {abs(fa32 - fit_acc):.4f}, "
                  f"first steps {first_gap:.1e} (relative)", flush=True)


# --------------------------------------------------------- the logs and the model

def read_log(path):
    """The rows of a `vit train` CSV log as {column: [float]}, or None."""
    try:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
    except OSError:
        return None
    if not rows or rows[0] != LOG_COLUMNS:
        return None
    body = [r for r in rows[1:] if r]
    try:
        cols = {c: [float(r[i]) for r in body] for i, c in enumerate(LOG_COLUMNS)}
    except (ValueError, IndexError):
        return None
    return cols if body else None


def pins_of_the_logs(g):
    path = os.path.join(data_dir(), "models", "vit-fashion.csv")
    g["log.present"] = torch.tensor(1.0 if os.path.exists(path) else 0.0)
    if os.path.exists(path):
        log = read_log(path)
        g["log.rows"] = torch.tensor(float(len(log["epoch"]) if log else 0))
        if log:
            for c in LOG_PINNED:
                g[f"log.{c}"] = torch.tensor(log[c], dtype=torch.float32)
            g["log.seconds"] = torch.tensor(sum(log["seconds"]), dtype=torch.float32)
    folder = os.path.join(data_dir(), "models", "experiments")
    names = []
    if os.path.isdir(folder):
        names = sorted(f[:-4] for f in os.listdir(folder)
                       if f.endswith(".csv") and re.fullmatch(r"[A-Za-z0-9_-]{1,63}", f[:-4]))
    names = names[:24]
    g["experiments.count"] = torch.tensor(float(len(names)))
    finals = {}
    for name in names:
        log = read_log(os.path.join(folder, name + ".csv"))
        g[f"experiment.{name}.rows"] = torch.tensor(float(len(log["epoch"]) if log else 0))
        if log:
            g[f"experiment.{name}.val_acc"] = torch.tensor(log["val_acc"][-1])
            g[f"experiment.{name}.train_acc"] = torch.tensor(log["train_acc"][-1])
            finals[name] = log["val_acc"][-1]
    # accuracy against minutes (accuracy_against_minutes() in the chapter): the best
    # final validation accuracy at each length of 18 epochs or more, and its minutes
    # at the shipped log's speed (55,000 training images an epoch)
    shipped = read_log(path) if os.path.exists(path) else None
    epochs = {name: len(read_log(os.path.join(folder, name + ".csv"))["epoch"]) for name in finals}
    lengths = sorted({e for e in epochs.values() if e >= 18})
    if shipped and sum(shipped["seconds"]) > 0 and len(lengths) >= 2:
        speed = 55000 * len(shipped["epoch"]) / sum(shipped["seconds"])
        best_in_budget = 0.0
        for e in lengths:
            minutes = e * 55000 / speed / 60
            best = max(finals[n] for n in finals if epochs[n] == e)
            g[f"frontier.{e}.minutes"] = torch.tensor(minutes, dtype=torch.float32)
            g[f"frontier.{e}.val_acc"] = torch.tensor(best, dtype=torch.float32)
            if minutes <= 30:
                best_in_budget = max(best_in_budget, best)
        g["frontier.best_in_budget"] = torch.tensor(best_in_budget, dtype=torch.float32)
    # the shipped recipe from three seeds (SEED_RUNS in the chapter), when all three are there
    seeds = [finals.get(n) for n in ("full36-crop1-flip", "full36-seed2", "full36-seed3")]
    if all(s is not None for s in seeds):
        g["experiments.seeds.mean"] = torch.tensor(sum(seeds) / 3, dtype=torch.float32)
        g["experiments.seeds.spread"] = torch.tensor(max(seeds) - min(seeds), dtype=torch.float32)


def pos_similarity(pos, grid):
    """Mean cosine similarity of the position embeddings of patches next to each other
    (Manhattan distance 1) and far apart (distance ≥ grid // 2); pos is (P, D)."""
    p = pos.double()
    unit = p / p.norm(dim=1, keepdim=True)
    cos = unit @ unit.T
    near, far = [], []
    for a in range(grid * grid):
        for b in range(a + 1, grid * grid):
            d = abs(a // grid - b // grid) + abs(a % grid - b % grid)
            if d == 1:
                near.append(float(cos[a, b]))
            elif d >= grid // 2:
                far.append(float(cos[a, b]))
    return sum(near) / len(near), sum(far) / len(far)


def pins_of_the_model(g, tol, test_x, test_y):
    path = os.path.join(data_dir(), "models", "vit-fashion.safetensors")
    g["model.present"] = torch.tensor(1.0 if os.path.exists(path) else 0.0)
    if not os.path.exists(path):
        return
    model = RefViT.from_safetensors(path).double()
    weights, meta = stio.load(path)
    mean, std = float(meta.get("mean", MEAN)), float(meta.get("std", STD))
    g["model.params"] = torch.tensor(float(sum(t.numel() for t in weights.values())))
    x = torch.from_numpy(batch(test_x, range(TEST_IMAGES), lut(mean, std))).double()
    y = torch.from_numpy(test_y[:TEST_IMAGES])
    with torch.no_grad():
        z = model(x)
    probs = torch.softmax(z, dim=1)
    chosen = z.argmax(dim=1)
    top2 = torch.topk(z, 2, dim=1).values
    assert float((top2[:, 0] - top2[:, 1]).min()) > 1e-4, "a test image's two best classes tie"
    conf = torch.zeros(10, 10)
    for t, c in zip(y.tolist(), chosen.tolist()):
        conf[t, c] += 1
    g["test.confusion"] = conf
    g["test.correct"] = torch.tensor(float((chosen == y).sum()))
    g["test.accuracy"] = torch.tensor(float((chosen == y).double().mean()))
    g["test.loss"] = torch.tensor(float(F.cross_entropy(z, y)))
    tol["test.loss"] = MODEL_TOL
    g["test.per_class"] = (conf.diag() / conf.sum(dim=1)).float()
    wrong = [i for i in range(TEST_IMAGES) if int(chosen[i]) != int(y[i])][:MISTAKES]
    g["mistakes.index"] = torch.tensor(wrong, dtype=torch.float32)
    g["mistakes.true"] = torch.tensor([float(y[i]) for i in wrong])
    g["mistakes.chosen"] = torch.tensor([float(chosen[i]) for i in wrong])
    g["mistakes.p_chosen"] = torch.tensor([float(probs[i, chosen[i]]) for i in wrong])
    g["mistakes.p_true"] = torch.tensor([float(probs[i, y[i]]) for i in wrong])
    tol["mistakes.p_chosen"] = tol["mistakes.p_true"] = MODEL_TOL
    # the position embeddings, trained and as lib/model/init.c draws them from the chapter's seed
    # (pos_embed is tensor 3 of the forward order: its own stream)
    n, dim = model.pos_embed.shape[1], model.pos_embed.shape[2]
    grid = int(round(math.sqrt(n - 1)))
    near, far = pos_similarity(weights["pos_embed"].reshape(n, dim)[1:], grid)
    drawn = Rng((SEED * 1000003 + 3) & MASK64).fill_trunc_normal(n * dim, 0.0, 0.02, -2.0, 2.0)
    near0, far0 = pos_similarity(torch.from_numpy(drawn).reshape(n, dim)[1:], grid)
    g["model.pos_cos_near"], g["model.pos_cos_far"] = torch.tensor(near), torch.tensor(far)
    g["model.pos_cos_near_init"], g["model.pos_cos_far_init"] = torch.tensor(near0), torch.tensor(far0)


def film_frame(path, test_x, test_y):
    """One frame of the film in float64: its accuracy on the first TEST_IMAGES test
    images, and for FILM_IMAGE the class chosen, its probability, the true class's,
    and the last block's [cls] row of attention, the heads' mean: ([cls], patches)."""
    model = RefViT.from_safetensors(path).double()
    meta = stio.load(path)[1]
    table = lut(float(meta.get("mean", MEAN)), float(meta.get("std", STD)))
    x = torch.from_numpy(batch(test_x, range(TEST_IMAGES), table)).double()
    probs = {}
    with torch.no_grad():
        z = model(x, lambda name, t: probs.__setitem__(name, t) if name.endswith("attn.probs")
                  else None)
    top2 = torch.topk(z, 2, dim=1).values
    gap = top2[:, 0] - top2[:, 1]
    assert float(gap[FILM_IMAGE]) > 1e-4, f"{path}: the image's two best classes tie"
    ties = int((gap < 1e-4).sum())  # images whose choice float32 may make otherwise
    accuracy = float((z.argmax(dim=1) == torch.from_numpy(test_y[:TEST_IMAGES])).double().mean())
    p = torch.softmax(z[FILM_IMAGE], dim=0)
    last = probs[f"blocks.{len(model.blocks) - 1}.attn.probs"][FILM_IMAGE]  # (H, N, N)
    row = last.mean(dim=0)[0]  # (N): [cls] reading [cls], then the patches
    return accuracy, int(p.argmax()), float(p.max()), float(p[test_y[FILM_IMAGE]]), row, ties


def pins_of_the_film(g, tol, test_x, test_y):
    """Section 6's first part: four frames of data/models/vit-fashion.film/."""
    folder = os.path.join(data_dir(), "models", "vit-fashion.film")
    paths = [os.path.join(folder, f"epoch-{e:03d}.safetensors") for e in FILM_EPOCHS]
    present = all(os.path.exists(p) for p in paths)
    g["film.present"] = torch.tensor(1.0 if present else 0.0)
    if not present:
        return
    frames = [film_frame(p, test_x, test_y) for p in paths]
    g["film.epoch"] = torch.tensor([float(e) for e in FILM_EPOCHS])
    for i, name in enumerate(["accuracy", "chosen", "p_chosen", "p_true"]):
        g[f"film.{name}"] = torch.tensor([float(f[i]) for f in frames])
    rows = [f[4] for f in frames]
    g["film.cls"] = torch.cat([r[1:] for r in rows]).float()
    g["film.self"] = torch.tensor([float(r[0]) for r in rows])
    shares = [r[1:] / r[1:].sum() for r in rows]  # the patches' shares renormalised to sum 1
    g["film.bits"] = torch.tensor([float(-(s * torch.log2(s)).sum()) for s in shares])
    g["film.top5"] = torch.tensor([float(s.sort(descending=True).values[:FILM_TOP].sum())
                                   for s in shares])
    for name in ["p_chosen", "p_true", "cls", "self", "bits", "top5"]:
        tol[f"film.{name}"] = MODEL_TOL
    # The initial weights' logits are all near 0: at epoch 0 one of the 1,000
    # images has its two best classes 1.2e-5 apart, where float32 may choose the
    # other. The accuracy may differ by one image per such near tie, no more.
    tol["film.accuracy"] = (max(f[5] for f in frames) / TEST_IMAGES + 1e-6, 0.0)


def pins_of_the_layer_log(g):
    """Section 6's second part: update ratios from data/models/vit-fashion.layers.csv,
    and each epoch's learning rate from data/models/vit-fashion.csv."""
    path = os.path.join(data_dir(), "models", "vit-fashion.layers.csv")
    log = read_log(os.path.join(data_dir(), "models", "vit-fashion.csv"))
    ratio = {}
    try:
        with open(path, newline="") as f:
            rows = list(csv.reader(f))
        if rows and rows[0] == LAYER_COLUMNS:
            for r in rows[1:]:
                if len(r) == len(LAYER_COLUMNS):
                    ratio[(int(r[0]), r[2])] = float(r[5])
    except OSError:
        pass
    lr = {int(e): v for e, v in zip(log["epoch"], log["lr"])} if log else {}
    present = all((e, grp) in ratio for e in RATIO_EPOCHS for grp in RATIO_GROUPS) and \
        all(e in lr for e in RATIO_EPOCHS)
    g["layers.present"] = torch.tensor(1.0 if present else 0.0)
    if present:
        g["layers.ratio"] = torch.tensor([ratio[(e, grp)] for e in RATIO_EPOCHS
                                          for grp in RATIO_GROUPS])
        g["layers.lr"] = torch.tensor([lr[e] for e in RATIO_EPOCHS])


@golden
def ch11_training():
    """Chapter 11's data and runs: every number that depends on Fashion-MNIST alone."""
    torch.set_num_threads(1)
    train_x, train_y = fashion("train")
    test_x, test_y = fashion("t10k")
    g, tol = {}, {}
    pins_of_the_data(g, train_x, train_y, test_x, test_y)
    pins_of_the_runs(g, tol, train_x, train_y, CHECK)
    pins_of_the_cnn(g, tol, train_x, train_y, CHECK)
    g = {k: v.float().contiguous() for k, v in g.items()}
    meta = {"data": FASHION_DIR, "runs": " ".join(f"{n}{'+aug' if a else ''}" for n, a, _ in RUNS),
            "reference": "tools/ref_vit.py in float64, torch.optim.AdamW, PyTorch's schedulers"}
    return g, tol, meta


@golden
def ch11_shipped():
    """Chapter 11's numbers of data/models: the training logs and the shipped model."""
    torch.set_num_threads(1)
    test_x, test_y = fashion("t10k")
    g, tol = {}, {}
    pins_of_the_logs(g)
    pins_of_the_model(g, tol, test_x, test_y)
    pins_of_the_film(g, tol, test_x, test_y)
    pins_of_the_layer_log(g)
    g = {k: v.float().contiguous() for k, v in g.items()}
    meta = {"data": "data/models (VIT_DATA_DIR when set)",
            "reference": "Python's csv module; tools/ref_vit.py in float64"}
    return g, tol, meta


CHECK = "--check" in sys.argv
if __name__ == "__main__":
    if CHECK:
        sys.argv.remove("--check")
    sys.exit(main(__doc__))
