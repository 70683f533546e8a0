#!/usr/bin/python3
"""PyTorch goldens for attention rollout (lib/explain/rollout.c): tests/golden/rollout.safetensors.

    tools/gen_golden_rollout.py        writes it
    tools/gen_golden_rollout.py --help this text, then the options every golden script takes

The model is the shipped one, data/models/vit-fashion.safetensors, run by
tools/ref_vit.py in float64 on two of the shipped test images (IMAGES below),
read as PNGs by torchvision and normalised as lib/io/image.c's fashion-mnist
preset does, in float32: (v/255 - mean)/std. Two kinds of values:

The rollout on a recorded trace. Image 0's probabilities and their gradients
for its predicted class, rounded to float32, are stored as inputs:

  b0.probs, b0.grads   (L, H, N, N)

and the rollout computed here from exactly those numbers, so that the C code,
fed the same inputs, must agree to rounding, discarding included:

  unit.rollout.FUSE            (N, N)  heads fused by FUSE (mean, max, min)
  unit.rollout.FUSE.discard    (N, N)  the same, the lowest DISCARD of each layer set to 0
  unit.grad, unit.grad.discard (N, N)  gradient-weighted: mean over heads of
                                       max(0, probs * grads), then the same steps

and two mistakes of vit-explain's implementation, which the test shows are far
from the right answer, so that it would catch them:

  unit.bug.colnorm.max.discard   rows divided by `a.sum(dim=-1)` without keepdim:
                                 the sums broadcast along the other axis
  unit.bug.reversed.grad         each layer's attention met with the gradient of the
                                 layer at the mirror position (backward hooks fire
                                 from the last layer)

The whole pass. For both images, from PyTorch's own float64 forward and
autograd, against which the C forward, backward and rollout together are checked:

  b{b}.cls_attention   (L, H, N-1)  each layer's and head's [cls] row over the patches
  b{b}.rollout.FUSE    (N, N)       nothing discarded (which entries a discard drops
                                    can flip on a rounding difference)
  b{b}.grad.pred       (N, N)       gradient-weighted, for the predicted class
                                    (metadata b{b}.class)
  b{b}.grad.other      (N, N)       the same for class OTHER

The rollout, as rollout.h states it: fuse the heads (rounded to float32, as
the C code stores them); set the floor(r*N*N) lowest entries to 0, ranked by
value then position, entry (0, 0) spared; A = rownorm(F + I); J = A_L ... A_1.
"""
import os
import sys

import torch
import torchvision.io

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_common import ROOT, golden, main  # noqa: E402
from ref_vit import RefViT  # noqa: E402
import stio  # noqa: E402

MODEL = os.path.join(ROOT, "data", "models", "vit-fashion.safetensors")
IMAGES = ["0000-ankle-boot.png", "0004-shirt.png"]
OTHER = 6           # the class of the second gradient map: Shirt
DISCARD = 0.9
FUSIONS = ("mean", "max", "min")


def load_batch(meta):
    mean, std = float(meta["mean"]), float(meta["std"])
    xs = []
    for name in IMAGES:
        v = torchvision.io.read_image(os.path.join(ROOT, "data", "images", "fashion-mnist", name))
        xs.append((v.float() / 255.0 - mean) / std)  # float32 arithmetic, as lib/io/image.c
    return torch.stack(xs).double()


def fuse(p, how):
    """(H, N, N) -> (N, N): the heads' mean, max or min, rounded to float32."""
    p = p.double()
    f = {"mean": p.mean(0), "max": p.amax(0), "min": p.amin(0)}[how]
    return f.float().double()


def grad_fuse(p, g):
    """(H, N, N) twice -> (N, N): mean over heads of max(0, p * g), rounded to float32."""
    return (p.float() * g.float()).clamp(min=0).double().mean(0).float().double()


def discard(f, ratio):
    """floor(ratio*N*N) lowest entries to 0, ties by position, (0, 0) spared."""
    flat = f.flatten().clone()
    k = int(flat.numel() * ratio)
    low = torch.argsort(flat, stable=True)[:k]
    flat[low[low != 0]] = 0
    return flat.reshape(f.shape)


def roll_out(fused_layers, colnorm_bug=False):
    """J = A_L ... A_1, A = rownorm(F + I); vit-explain's normalisation when colnorm_bug."""
    n = fused_layers[0].shape[0]
    eye = torch.eye(n, dtype=torch.float64)
    joint = eye.clone()
    for f in fused_layers:
        a = (f + eye).unsqueeze(0)  # (1, N, N), as vit-explain holds it
        a = a / (a.sum(-1) if colnorm_bug else a.sum(-1, keepdim=True))
        joint = a[0] @ joint
    return joint


def attention_and_grads(model, x, b, cls):
    """Each layer's probs (H, N, N) for image b, and d logit[b, cls] / d probs, by autograd."""
    probs = {}

    def rec(name, t):
        if name.endswith("attn.probs"):
            t.retain_grad()
            probs[name] = t

    with torch.enable_grad():
        logits = model(x, rec)
        logits[b, cls].backward()
    names = [f"blocks.{i}.attn.probs" for i in range(len(model.blocks))]
    return [probs[n][b].detach() for n in names], [probs[n].grad[b] for n in names]


def unit(probs, grads):
    """The rollouts of one recorded trace, from its float32 values."""
    p32 = [p.float() for p in probs]
    g32 = [g.float() for g in grads]
    out = {"b0.probs": torch.stack(p32), "b0.grads": torch.stack(g32)}
    for how in FUSIONS:
        out[f"unit.rollout.{how}"] = roll_out([fuse(p, how) for p in p32])
        out[f"unit.rollout.{how}.discard"] = roll_out([discard(fuse(p, how), DISCARD)
                                                        for p in p32])
    out["unit.grad"] = roll_out([grad_fuse(p, g) for p, g in zip(p32, g32)])
    out["unit.grad.discard"] = roll_out([discard(grad_fuse(p, g), DISCARD)
                                         for p, g in zip(p32, g32)])
    out["unit.bug.colnorm.max.discard"] = roll_out([discard(fuse(p, "max"), DISCARD)
                                                    for p in p32], colnorm_bug=True)
    out["unit.bug.reversed.grad"] = roll_out([grad_fuse(p, g)
                                              for p, g in zip(p32, reversed(g32))])
    return out


def whole_pass(b, probs, grads, grads_other):
    """From the float64 pass: [cls] rows, rollouts without discarding, gradient maps."""
    out = {f"b{b}.cls_attention": torch.stack([p[:, 0, 1:] for p in probs])}
    for how in FUSIONS:
        out[f"b{b}.rollout.{how}"] = roll_out([fuse(p, how) for p in probs])
    out[f"b{b}.grad.pred"] = roll_out([grad_fuse(p, g) for p, g in zip(probs, grads)])
    out[f"b{b}.grad.other"] = roll_out([grad_fuse(p, g) for p, g in zip(probs, grads_other)])
    return out


@golden
def rollout():
    model = RefViT.from_safetensors(MODEL).double()
    x = load_batch(stio.load(MODEL)[1])
    with torch.no_grad():
        logits = model(x)
    out = {}
    extra = {"model": "data/models/vit-fashion.safetensors", "images": " ".join(IMAGES),
             "discard": str(DISCARD), "other_class": str(OTHER)}
    for b in range(len(IMAGES)):
        pred = int(logits[b].argmax())
        extra[f"b{b}.class"] = str(pred)
        probs, grads = attention_and_grads(model, x, b, pred)
        _, grads_other = attention_and_grads(model, x, b, OTHER)
        if b == 0:
            out.update(unit(probs, grads))
        out.update(whole_pass(b, probs, grads, grads_other))
    tensors = {k: v.float().contiguous() for k, v in out.items()}
    tol = {k: (1e-6, 1e-5) for k in tensors if k.startswith("unit.")}
    tol.update({k: (2e-5, 1e-4) for k in tensors if k.startswith("b") and ".grad." in k})
    return tensors, tol, extra


if __name__ == "__main__":
    sys.exit(main(__doc__))
