#!/usr/bin/python3
"""PyTorch autograd goldens for the backward passes (suite `backward`).

    tools/gen_golden_backward.py          writes tests/golden/backward_*.safetensors
    tools/gen_golden_backward.py --help   this text, then the options every golden script takes

Each golden holds the inputs of one group of backward functions and the
gradients PyTorch's autograd computes for them:

    backward_ops        linear, layernorm, gelu, softmax (with masked entries
                        and a fully masked row)
    backward_loss       cross-entropy: plain, label smoothing 0.1, and logits
                        of up to ~860 with smoothing 0.2 (e^x overflows float32)
    backward_attention  the pieces of attention, scale·Q·Kᵀ + masks → softmax
                        → ·V, with the default scale and no mask ("plain"), and
                        with a causal (N, N) mask, a (B, N) key-padding mask and
                        scale 0.3 ("masked"); the head split and merge
    backward_patch      the patch embedding (as torch's Conv2d, stride = kernel)
                        and the two token steps ([cls] in front, + positions)

The shapes are small and odd so that no two sizes coincide: B = 2 images,
N = 7 tokens, D = 12, H = 3 heads of Dh = 4, M = 20, Y = 5 classes; the
patch embedding cuts 6×6 images of C = 3 channels into 2×2 patches (P = 9).

Inputs are drawn here (tools/vitrng.py's PCG32) and stored in float32 in the
golden; the forward and backward are then run in float64 on those very values,
with torch.autograd.grad and an upstream gradient `dout` that is also stored,
and the gradients are rounded once to float32. The C side never recomputes an
input. Every expected gradient carries its tolerance, "tol.NAME" = "ATOL RTOL"
(|got − want| ≤ ATOL + RTOL·|want|), chosen from what float32 arithmetic
costs on that computation (the comments below): ten to a hundred times what
lib's float32 actually misses by, far below what a wrong formula misses by
(~1e-2 and more). Copies (the head split and merge, the token rows) are exact.

Run with /usr/bin/python3 (Debian's python3-torch). Tests never need Python.
"""
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_common import golden, main  # noqa: E402
from vitrng import Rng  # noqa: E402

B, N, D, H, DH, M, Y = 2, 7, 12, 3, 4, 20, 5
C, S, PATCH = 3, 6, 2
P = (S // PATCH) ** 2


def normal(rng, *shape, mean=0.0, std=1.0):
    """rng_fill_normal as a float32 tensor of this shape."""
    return torch.from_numpy(rng.fill_normal(math.prod(shape), mean, std)).reshape(shape)


def uniform(rng, lo, hi, *shape):
    """rng_fill_uniform as a float32 tensor of this shape."""
    return torch.from_numpy(rng.fill_uniform(math.prod(shape), lo, hi)).reshape(shape)


def leaf(t):
    """A float64 copy of a stored float32 input that autograd differentiates with respect to."""
    return t.double().requires_grad_(True)


def grads(out, inputs, dout):
    """d(Σ dout ⊙ out)/d(inputs), in float64: autograd's vector-Jacobian product."""
    return torch.autograd.grad(out, inputs, grad_outputs=dout.double())


def f32(t):
    return t.detach().float().contiguous()


# ------------------------------------------------------------ ops.h

@golden
def backward_ops():
    """linear, layernorm, gelu and softmax backward on (B·N = 14)-row inputs."""
    g, tol = {}, {}
    with torch.enable_grad():
        # linear: x (14, D), w (M, D), dout (14, M). dx sums M = 20 products,
        # dw and db sum 14 rows: float32 rounding ~1e-6 on values of ~1-10.
        r = Rng(101)
        x, w = normal(r, B * N, D), normal(r, M, D, std=0.3)
        b, dout = normal(r, M, std=0.1), normal(r, B * N, M)
        lx, lw, lb = leaf(x), leaf(w), leaf(b)
        dx, dw, db = grads(F.linear(lx, lw, lb), (lx, lw, lb), dout)
        g.update({"linear.x": x, "linear.w": w, "linear.dout": dout,
                  "linear.dx": f32(dx), "linear.dw": f32(dw), "linear.db": f32(db)})
        tol.update({"linear.dx": (1e-5, 1e-5), "linear.dw": (1e-5, 1e-5),
                    "linear.db": (1e-5, 1e-5)})

        # layernorm: rows of mean 0.5, std 2, gamma around 1, eps 1e-6. dx is
        # r·(ĝ − mean ĝ − x̂·mean(ĝx̂)) with r ≈ 0.5: a cancellation of terms of ~1-3.
        r = Rng(102)
        x = normal(r, B * N, D, mean=0.5, std=2.0)
        gamma, beta = normal(r, D, mean=1.0, std=0.3), normal(r, D, std=0.2)
        dout = normal(r, B * N, D)
        eps = 1e-6
        lx, lg, lb = leaf(x), leaf(gamma), leaf(beta)
        dx, dg, dbeta = grads(F.layer_norm(lx, (D,), lg, lb, eps), (lx, lg, lb), dout)
        g.update({"layernorm.x": x, "layernorm.gamma": gamma, "layernorm.dout": dout,
                  "layernorm.eps": torch.tensor(eps, dtype=torch.float32),
                  "layernorm.dx": f32(dx), "layernorm.dgamma": f32(dg),
                  "layernorm.dbeta": f32(dbeta)})
        tol.update({"layernorm.dx": (2e-6, 1e-5), "layernorm.dgamma": (1e-5, 1e-5),
                    "layernorm.dbeta": (1e-5, 1e-5)})

        # gelu: x uniform in [-5, 5), through the minimum of GELU' (-0.13 at -√2)
        r = Rng(103)
        x, dout = uniform(r, -5.0, 5.0, B * N, M), normal(r, B * N, M)
        lx = leaf(x)
        (dx,) = grads(F.gelu(lx), (lx,), dout)
        g.update({"gelu.x": x, "gelu.dout": dout, "gelu.dx": f32(dx)})
        tol["gelu.dx"] = (1e-6, 1e-5)

        # softmax: 12 rows of N = 7, logits of std 2; row 3 partly masked, row 5
        # causal-like, row 8 entirely masked. p is stored (the backward reads p,
        # not x). For the fully masked row torch gives NaN probabilities and a
        # NaN gradient; lib's convention (ops.h) is p = 0 there, so the
        # gradient is 0, pinned as such.
        r = Rng(104)
        x, dout = normal(r, 12, N, std=2.0), normal(r, 12, N)
        x[3, [1, 4]] = -math.inf
        x[5, 2:] = -math.inf
        x[8, :] = -math.inf
        lx = leaf(x)
        p = torch.softmax(lx, dim=-1)
        (dx,) = grads(p, (lx,), dout)
        assert torch.isnan(p[8]).all() and torch.isnan(dx[8]).all()
        assert not torch.isnan(p[torch.arange(12) != 8]).any()
        p, dx = torch.nan_to_num(p.detach(), nan=0.0), torch.nan_to_num(dx, nan=0.0)
        assert (dx[3, [1, 4]] == 0).all() and (dx[5, 2:] == 0).all()
        g.update({"softmax.p": f32(p), "softmax.dout": dout, "softmax.dx": f32(dx)})
        tol["softmax.dx"] = (1e-6, 1e-5)
    return g, tol


# -------------------------------------------------------------- the loss

@golden
def backward_loss():
    """F.cross_entropy (mean over the batch) and its gradient, three cases."""
    g, tol = {}, {}
    r = Rng(201)
    logits = normal(r, N, Y, std=2.0)      # a batch of N = 7 images, Y = 5 classes
    targets = torch.tensor([0, 3, 4, 1, 1, 2, 4])
    big = 500.0 * normal(r, N, Y)          # |logits| up to ~860: e^x is inf in float32
    cases = (("plain", logits, 0.0), ("smooth", logits, 0.1), ("big", big, 0.2))
    with torch.enable_grad():
        for name, z, eps in cases:
            lz = leaf(z)
            loss = F.cross_entropy(lz, targets, label_smoothing=eps)
            (dz,) = torch.autograd.grad(loss, (lz,))
            g.update({f"{name}.logits": z, f"{name}.targets": targets.float(),
                      f"{name}.smoothing": torch.tensor(eps, dtype=torch.float32),
                      f"{name}.loss": f32(loss), f"{name}.dlogits": f32(dz)})
            # loss: computed in double from the same float32 logits and rounded
            # once (6e-8 relative, also for "big", whose loss is ~460).
            # dlogits: (softmax − q)/B, each a float32 rounding of a double.
            tol[f"{name}.loss"] = (1e-6, 1e-5)
            tol[f"{name}.dlogits"] = (1e-7, 1e-5)
    return g, tol


# -------------------------------------------------------------- attention

@golden
def backward_attention():
    """scale·Q·Kᵀ + masks → softmax → ·V per head, and the head split/merge."""
    g, tol = {}, {}
    idx = torch.arange(N)
    causal = torch.zeros(N, N).masked_fill(idx[None, :] > idx[:, None], -math.inf)
    lengths = torch.tensor([N, 4])         # the second sequence has 3 padding tokens
    padding = torch.zeros(B, N).masked_fill(idx[None, :] >= lengths[:, None], -math.inf)
    cases = (("plain", None, None, 0.0, 301), ("masked", causal, padding, 0.3, 302))
    with torch.enable_grad():
        for name, mask, pad, scale, seed in cases:
            r = Rng(seed)
            q, k, v = (normal(r, B, H, N, DH) for _ in range(3))
            dout = normal(r, B, H, N, DH)  # gradient of each head's context
            lq, lk, lv = leaf(q), leaf(k), leaf(v)
            scores = lq @ lk.transpose(-2, -1)
            s = scale if scale else DH ** -0.5
            scaled = scores * s
            if mask is not None:
                scaled = scaled + mask.double()
            if pad is not None:
                scaled = scaled + pad.double()[:, None, None, :]
            probs = torch.softmax(scaled, dim=-1)
            out = probs @ lv
            for t in (scores, scaled, probs):
                t.retain_grad()
            out.backward(dout.double())
            assert not torch.isnan(probs).any()  # every query sees at least key 0
            g.update({f"{name}.q": q, f"{name}.k": k, f"{name}.v": v, f"{name}.dout": dout,
                      f"{name}.probs": f32(probs),
                      f"{name}.dprobs": f32(probs.grad), f"{name}.dv": f32(lv.grad),
                      f"{name}.dscaled": f32(scaled.grad), f"{name}.dscores": f32(scores.grad),
                      f"{name}.dq": f32(lq.grad), f"{name}.dk": f32(lk.grad)})
            if scale:
                g[f"{name}.scale"] = torch.tensor(scale, dtype=torch.float32)
            if mask is not None:
                g[f"{name}.mask"] = mask
            if pad is not None:
                g[f"{name}.key_padding_mask"] = pad
            # sums of ≤ 7 products of values of ~1: ~1e-6 in float32
            for t in ("dprobs", "dv", "dscaled", "dscores", "dq", "dk"):
                tol[f"{name}.{t}"] = (1e-5, 1e-5)

        # the head split (B, N, D) → (B, H, N, Dh) and the merge back: permutations
        r = Rng(303)
        x, dsplit = normal(r, B, N, D), normal(r, B, H, N, DH)
        lx = leaf(x)
        (dx,) = grads(lx.reshape(B, N, H, DH).permute(0, 2, 1, 3), (lx,), dsplit)
        heads = normal(r, B, H, N, DH)
        dmerged = normal(r, B, N, D)
        lh = leaf(heads)
        (dh,) = grads(lh.transpose(1, 2).reshape(B, N, H * DH), (lh,), dmerged)
        g.update({"split.dout": dsplit, "split.dx": f32(dx),
                  "merge.dout": dmerged, "merge.dx": f32(dh)})
        tol["split.dx"] = tol["merge.dx"] = (0.0, 0.0)  # copies: exact
    return g, tol


# ------------------------------------------------- patches and tokens

@golden
def backward_patch():
    """the patch embedding as torch's Conv2d, and the [cls] and position steps."""
    g, tol = {}, {}
    with torch.enable_grad():
        r = Rng(401)
        img = normal(r, B, C, S, S)
        w, b = normal(r, D, C, PATCH, PATCH, std=0.3), normal(r, D, std=0.1)
        dout = normal(r, B, P, D)
        li, lw, lb = leaf(img), leaf(w), leaf(b)
        out = F.conv2d(li, lw, lb, stride=PATCH).flatten(2).transpose(1, 2)  # timm's PatchEmbed
        dimg, dw, db = grads(out, (li, lw, lb), dout)
        g.update({"patch.img": img, "patch.w": w, "patch.dout": dout,
                  "patch.dimg": f32(dimg), "patch.dw": f32(dw), "patch.db": f32(db)})
        # dimg sums D = 12 products, dw and db B·P = 18 rows
        for t in ("dimg", "dw", "db"):
            tol[f"patch.{t}"] = (1e-5, 1e-5)

        # tokens = cat(cls, patch_embed), embed = tokens + pos: dembed is what comes back
        r = Rng(402)
        pe, cls, pos = normal(r, B, P, D), normal(r, D), normal(r, P + 1, D)
        dembed = normal(r, B, P + 1, D)
        lpe, lcls, lpos = leaf(pe), leaf(cls), leaf(pos)
        tokens = torch.cat((lcls.expand(B, 1, D), lpe), dim=1)
        tokens.retain_grad()
        embed = tokens + lpos
        embed.backward(dembed.double())
        g.update({"tokens.dembed": dembed, "tokens.dtokens": f32(tokens.grad),
                  "tokens.dpos": f32(lpos.grad), "tokens.dpatch_embed": f32(lpe.grad),
                  "tokens.dcls": f32(lcls.grad)})
        tol["tokens.dtokens"] = tol["tokens.dpatch_embed"] = (0.0, 0.0)  # copies: exact
        tol["tokens.dpos"] = tol["tokens.dcls"] = (1e-6, 1e-6)  # sums of B = 2 terms
    return g, tol


if __name__ == "__main__":
    sys.exit(main(__doc__))
