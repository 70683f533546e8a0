#!/usr/bin/python3
"""PyTorch goldens for chapter 10: tests/golden/ch10_learning.safetensors.

    tools/gen_golden_ch10.py          writes tests/golden/ch10_learning.safetensors
    tools/gen_golden_ch10.py --help   this text, then the options every golden script takes

chapters/10_learning.c pins every number it prints; this script computes each
one independently, under the same name:

  * the small ViT (S 32, p 8, D 64, H 4, L 2, M 256, Y 10, seed 10, std 0.02)
    is the C generator's output, the model's *input*, written by `build/vit
    make-weights` (set VIT_BIN for another binary) and run by tools/ref_vit.py
    in float64; the loss is F.cross_entropy and every gradient comes from
    torch.autograd; the AdamW step is torch.optim.AdamW with timm's two
    parameter groups (no decay for biases, norms, cls_token and pos_embed);
  * the attention head, the softmax row and the LayerNorm row are rebuilt from
    the chapter's seeds and constants (tools/vitrng.py reproduces lib/base/rng.c),
    and differentiated by autograd in float64;
  * the central differences are taken here too, in float64 at the very float32
    inputs the chapter uses (x ± h rounded to float32, divided by their
    difference), so they hold only the h²/6·f''' truncation error. The
    chapter's own are float32 forward passes, off by up to a few 1e-4 more
    (rounding divided by 2h): those values, and the largest differences between
    them and the gradients, carry a tolerance of 5e-4, still a hundred times
    below what a wrong formula gives;
  * the learning rates come from PyTorch's schedulers (gen_golden_optim.py's
    scheduler()), the first step and the weight decay from torch.optim.AdamW.

Run with /usr/bin/python3 (Debian's python3-torch). Tests never need Python.
"""
import contextlib
import math
import os
import subprocess
import sys
import tempfile

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from golden_common import ROOT, golden, main  # noqa: E402
from gen_golden_optim import schedule_values  # noqa: E402
from ref_vit import RefViT  # noqa: E402
import stio  # noqa: E402
from vitrng import Rng  # noqa: E402

# The chapter's constants (chapters/10_learning.c).
MODEL = dict(img=32, patch=8, dim=64, depth=2, heads=4, mlp_dim=256, classes=10, seed=10)
IMAGE_SEED, TARGET = 100, 3
HEAD_SEED, HN, HDH = 11, 4, 3
H = 1e-3  # FD_STEP, a float32 in C
SM_X = [2.0, 1.0, 0.1, -1.0, 0.5]
SM_DP = [0.5, -1.0, 0.25, 0.8, -0.3]
LN_X = [1.2, -0.5, 3.0, 0.4, -2.1, 0.9]
LN_GAMMA = [1.0, 0.5, 2.0, 1.5, 0.8, 1.2]
LN_BETA = [0.1, -0.2, 0.0, 0.3, 0.05, -0.1]
LN_DOUT = [0.3, -1.2, 0.7, 0.5, -0.4, 1.0]
LN_EPS = 1e-6
SCHEDULE = dict(peak=1e-3, min_lr=1e-5, start=0.0, warm=10, total=100)
SCHEDULE_AT = [0, 1, 2, 5, 9, 10, 25, 50, 75, 99]
ETA, DECAY, DECAY_STEPS = 1e-3, 0.05, 1000
STEP_LRS, STEP_DECAY, MAX_NORM = [1e-4, 1e-3], 0.05, 1.0
LISTED = ["patch_embed.proj.weight", "cls_token", "pos_embed", "blocks.0.attn.qkv.weight",
          "blocks.0.mlp.fc1.weight", "blocks.1.attn.proj.weight", "blocks.1.mlp.fc2.weight",
          "norm.weight", "head.weight", "head.bias"]
CHECKED = ["head.bias", "head.weight", "blocks.1.mlp.fc2.weight", "blocks.0.attn.qkv.weight",
           "pos_embed", "patch_embed.proj.weight"]
DECAY_START = [1.0, -0.5, 2.0, 0.25]
# Section 1's small examples: four classes, the right one t = 1
WRONG_Z, RIGHT_Z, SMALL_TARGET, SMOOTHING = [6.0, 0.0, 1.0, -1.0], [1.0, 7.0, 0.0, -1.0], 1, 0.1
# Section 5's small cases
LIN_X = [[1.0, -2.0, 0.5], [3.0, 0.0, -1.0]]
LIN_W = [[0.2, -0.1, 0.4], [-0.3, 0.5, 0.1]]
LIN_DOUT = [[1.0, -0.5], [0.25, 2.0]]
GELU_X = [-3.0, -1.0, 0.0, 0.5, 2.0]
TB, TP, TD = 2, 2, 3
# Section 6: Adam on one parameter, and the spike
ADAM_THETA0, ADAM_G, ADAM_LR = 1.0, [0.2, 0.05], 1e-2
QUIET_G, SPIKE_G, SPIKE_AT, SPIKE_STEPS, CLIP_LR, CLIP_NORM = 0.5, 50.0, 50, 150, 1e-3, 1.0
SPIKE_SHOWN = [1, 50, 51, 52, 60, 100, 150]
# Section 8: L2 against decoupled decay
NOISY_G, L2_LAMBDA, L2_STEPS, L2_LR = 10.0, 0.05, 100, 1e-3

FD_TOL = (5e-4, 0.0)  # a float32 central difference against the float64 one


def f32(x):
    """A contiguous float32 tensor from a tensor or a number."""
    if not torch.is_tensor(x):
        x = torch.tensor(x, dtype=torch.float64)
    return x.detach().to(torch.float32).contiguous()


def floats(values):
    """Numbers written as float32 literals in C, e.g. 0.1f."""
    return torch.tensor(values, dtype=torch.float32)


@contextlib.contextmanager
def made_weights():
    """`vit make-weights` for the chapter's model, into a temporary file."""
    vit = os.environ.get("VIT_BIN", os.path.join(ROOT, "build", "vit"))
    if not os.access(vit, os.X_OK):
        raise SystemExit(f"gen_golden_ch10: {vit} not found; run make first")
    flags = ["--dim", MODEL["dim"], "--depth", MODEL["depth"], "--heads", MODEL["heads"],
             "--mlp-dim", MODEL["mlp_dim"], "--img", MODEL["img"], "--patch", MODEL["patch"],
             "--classes", MODEL["classes"], "--seed", MODEL["seed"]]
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "w.safetensors")
        subprocess.run([vit, "make-weights", *map(str, flags), "--out", path], check=True,
                       stdout=subprocess.DEVNULL)
        yield path


def central_differences(loss, x):
    """(L(x + h e_i) − L(x − h e_i)) / (x₊ − x₋) for each entry of the float32 tensor x,
    x₊ and x₋ rounded to float32 as the chapter's are, L evaluated in float64."""
    h = torch.tensor(H, dtype=torch.float32)
    fd = torch.empty(x.numel(), dtype=torch.float64)
    flat = x.reshape(-1)
    for i in range(flat.numel()):
        up, down = flat.clone(), flat.clone()
        up[i] = flat[i] + h
        down[i] = flat[i] - h
        lp = loss(up.reshape(x.shape).double())
        lm = loss(down.reshape(x.shape).double())
        fd[i] = (lp - lm) / (up[i].double() - down[i].double())
    return fd.reshape(x.shape)


def max_abs_diff(a, b):
    return (a.double() - b.double()).abs().max()


def timm_decays(name, t):
    """timm's param_groups_weight_decay with VisionTransformer.no_weight_decay()."""
    return not (t.ndim <= 1 or name.endswith(".bias") or name in ("cls_token", "pos_embed"))


# ---------------------------------------------------------------- sections

def the_loss(g, model, weights):
    """Section 1: the logits, probabilities, loss and dlogits of one image."""
    c = MODEL
    image = torch.from_numpy(Rng(IMAGE_SEED).fill_uniform(3 * c["img"] ** 2, -1.0, 1.0))
    image = image.reshape(1, 3, c["img"], c["img"]).double()
    target = torch.tensor([TARGET])
    with torch.enable_grad():
        logits = model(image).detach().requires_grad_(True)
        loss = F.cross_entropy(logits, target)
        (dlogits,) = torch.autograd.grad(loss, (logits,))
    logits = logits.detach()
    probs = torch.softmax(logits, dim=-1)
    g["model.params"] = f32(sum(t.numel() for t in weights.values()))
    g["logits"], g["probabilities"], g["dlogits"] = f32(logits), f32(probs), f32(dlogits)
    g["loss"], g["p_target"] = f32(loss), f32(probs[0, TARGET])
    g["ln_classes"] = f32(math.log(c["classes"]))
    g["logits_std"] = f32(logits.std(unbiased=False))
    pt = floats([0.01, 0.1, 0.5, 0.9, 0.99])
    g["table.p"], g["table.loss"] = pt, f32(-pt.double().log())
    g["dlogits_target"], g["dlogits_sum"] = f32(dlogits[0, TARGET]), f32(dlogits.sum())
    onehot = F.one_hot(target, c["classes"]).double()
    g["dlogits.formula_max_diff"] = f32(max_abs_diff(probs - onehot, dlogits))
    return image, target


def logit_gradient(loss_of, z):
    """∂loss/∂z by autograd, in float64, at the float32 logits z."""
    with torch.enable_grad():
        lz = z.double().requires_grad_(True)
        loss = loss_of(lz)
        (dz,) = torch.autograd.grad(loss, (lz,))
    return loss.detach(), dz


def small_losses(g):
    """Section 1's small examples: a confidently wrong prediction under the cross-entropy and
    under squared error on the probabilities; label smoothing at a confident right one."""
    t = torch.tensor([SMALL_TARGET])
    z = floats(WRONG_Z)
    onehot = F.one_hot(t, z.numel())[0].double()
    ce, dce = logit_gradient(lambda lz: F.cross_entropy(lz[None], t), z)
    sq, dsq = logit_gradient(lambda lz: 0.5 * ((torch.softmax(lz, -1) - onehot) ** 2).sum(), z)
    p = torch.softmax(z.double(), -1)
    g.update({"wrong.z": z, "wrong.p": f32(p), "wrong.dz_ce": f32(dce), "wrong.dz_sq": f32(dsq),
              "wrong.p_target": f32(p[SMALL_TARGET]), "wrong.ce": f32(ce), "wrong.sq": f32(sq),
              "wrong.ratio": f32(dce[SMALL_TARGET] / dsq[SMALL_TARGET])})
    z = floats(RIGHT_Z)
    Y = z.numel()
    _, dplain = logit_gradient(lambda lz: F.cross_entropy(lz[None], t), z)
    _, dsmooth = logit_gradient(
        lambda lz: F.cross_entropy(lz[None], t, label_smoothing=SMOOTHING), z)
    p = torch.softmax(z.double(), -1)
    q = (1 - SMOOTHING) * onehot + SMOOTHING / Y
    g.update({"smooth.z": z, "smooth.p": f32(p), "smooth.q": f32(q),
              "smooth.dz_plain": f32(dplain), "smooth.dz_smooth": f32(dsmooth),
              "smooth.p_target": f32(p[SMALL_TARGET]),
              "smooth.gap": f32(math.log((1 - SMOOTHING + SMOOTHING / Y) / (SMOOTHING / Y)))})


def the_head(g, tol):
    """Section 2: one head's forward and every gradient of its backward, by autograd."""
    r = Rng(HEAD_SEED)
    q, k, v, dcontext = (torch.from_numpy(r.fill_normal(HN * HDH, 0.0, 1.0)).reshape(HN, HDH)
                         for _ in range(4))
    scale = HDH ** -0.5

    def forward(q, k, v):
        scores = q @ k.T
        scaled = scores * scale
        probs = torch.softmax(scaled, dim=-1)
        return scores, scaled, probs, probs @ v

    with torch.enable_grad():
        lq, lk, lv = (t.double().requires_grad_(True) for t in (q, k, v))
        scores, scaled, probs, context = forward(lq, lk, lv)
        for t in (scores, scaled, probs):
            t.retain_grad()
        context.backward(dcontext.double())
    g.update({"Q": q, "K": k, "V": v, "dcontext": dcontext, "probs": f32(probs),
              "dprobs": f32(probs.grad), "dV": f32(lv.grad), "dscaled": f32(scaled.grad),
              "dscores": f32(scores.grad), "dQ": f32(lq.grad), "dK": f32(lk.grad),
              "scale": f32(scale)})
    g["dscaled_max_row_sum"] = f32(scaled.grad.sum(dim=-1).abs().max())

    def loss_of(which):
        def loss(x):
            args = [q.double(), k.double(), v.double()]
            args[which] = x
            return (dcontext.double() * forward(*args)[3]).sum()
        return loss

    for which, (name, grad) in enumerate((("dQ", lq.grad), ("dK", lk.grad), ("dV", lv.grad))):
        fd = central_differences(loss_of(which), (q, k, v)[which])
        g[f"{name}.fd_max_diff"] = f32(max_abs_diff(grad, fd))
        tol[f"{name}.fd_max_diff"] = FD_TOL


def the_softmax(g, tol):
    """Section 3: one softmax row, its gradient by autograd, the Jacobian, the check."""
    x, dp = floats(SM_X), floats(SM_DP)
    with torch.enable_grad():
        lx = x.double().requires_grad_(True)
        p = torch.softmax(lx, dim=-1)
        (dx,) = torch.autograd.grad(p, (lx,), grad_outputs=dp.double())
    p = p.detach()
    # jac[i][j] = ∂p_j/∂x_i, as the chapter builds it (torch's is ∂p_a/∂x_b: transposed)
    jac = torch.autograd.functional.jacobian(lambda t: torch.softmax(t, dim=-1), x.double()).T
    fd = central_differences(lambda t: (dp.double() * torch.softmax(t, dim=-1)).sum(), x)
    assert max_abs_diff(dx, fd) < 1e-6, "the truncation error is not small: the prose says it is"
    g.update({"softmax.x": x, "softmax.p": f32(p), "softmax.dp": dp, "softmax.dx": f32(dx),
              "softmax.avg": f32((p * dp.double()).sum()), "jacobian": f32(jac),
              "softmax.jacobian_max_diff": f32(max_abs_diff(jac @ dp.double(), dx)),
              "softmax.fd": f32(fd), "softmax.fd_max_diff": f32(max_abs_diff(dx, fd)),
              "softmax.no_avg_error": f32(max_abs_diff(p * dp.double(), dx)),
              "softmax.dx_sum": f32(dx.sum())})
    tol["softmax.fd"] = tol["softmax.fd_max_diff"] = FD_TOL


def the_layernorm(g, tol):
    """Section 4: one LayerNorm row, its three gradients by autograd, two mistakes, the check."""
    x, gamma, beta, dout = floats(LN_X), floats(LN_GAMMA), floats(LN_BETA), floats(LN_DOUT)
    D = x.numel()

    def ln(x, gamma, beta):
        return F.layer_norm(x, (D,), gamma, beta, LN_EPS)

    with torch.enable_grad():
        lx, lg, lb = (t.double().requires_grad_(True) for t in (x, gamma, beta))
        dx, dgamma, dbeta = torch.autograd.grad(ln(lx, lg, lb), (lx, lg, lb),
                                                grad_outputs=dout.double())
    xd = x.double()
    mu, var = xd.mean(), xd.var(unbiased=False)
    rstd = 1.0 / torch.sqrt(var + LN_EPS)
    xhat = (xd - mu) * rstd
    ghat = dout.double() * gamma.double()
    mean_g, mean_gx = ghat.mean(), (ghat * xhat).mean()
    # two likely mistakes in the backward's formula: r and x̂ from the unbiased variance
    # (torch.var()'s default), and the x̂·mean(ĝ ⊙ x̂) term left out
    rstd_u = 1.0 / torch.sqrt(xd.var(unbiased=True) + LN_EPS)
    xhat_u = (xd - mu) * rstd_u
    dx_unbiased = rstd_u * (ghat - mean_g - xhat_u * (ghat * xhat_u).mean())
    no_xhat = rstd * (ghat - mean_g)

    def loss_of(which):
        def loss(t):
            args = [x.double(), gamma.double(), beta.double()]
            args[which] = t
            return (dout.double() * ln(*args)).sum()
        return loss

    fds = [central_differences(loss_of(i), t) for i, t in enumerate((x, gamma, beta))]
    g.update({"layernorm.x": x, "layernorm.gamma": gamma, "layernorm.dout": dout,
              "layernorm.xhat": f32(xhat), "layernorm.ghat": f32(ghat),
              "layernorm.dx": f32(dx), "layernorm.dgamma": f32(dgamma),
              "layernorm.dbeta": f32(dbeta), "layernorm.mean": f32(mu),
              "layernorm.var": f32(var), "layernorm.rstd": f32(rstd),
              "layernorm.mean_ghat": f32(mean_g), "layernorm.mean_ghat_xhat": f32(mean_gx),
              "layernorm.by_hand_max_diff": f32(max_abs_diff(rstd * (ghat - mean_g - xhat * mean_gx), dx)),
              "layernorm.dx_sum": f32(dx.sum()), "layernorm.dx_dot_xhat": f32((dx * xhat).sum()),
              "layernorm.dx_dot_xhat_eps": f32(rstd * LN_EPS / (var + LN_EPS) * (ghat * xhat).sum()),
              "layernorm.fd": f32(fds[0]),
              "layernorm.fd_max_diff": f32(max_abs_diff(dx, fds[0])),
              "layernorm.dgamma_fd_max_diff": f32(max_abs_diff(dgamma, fds[1])),
              "layernorm.dbeta_fd_max_diff": f32(max_abs_diff(dbeta, fds[2])),
              "layernorm.unbiased_error": f32(max_abs_diff(dx_unbiased, dx)),
              "layernorm.no_xhat_term_error": f32(max_abs_diff(no_xhat, dx))})
    for name in ("fd", "fd_max_diff", "dgamma_fd_max_diff", "dbeta_fd_max_diff"):
        tol[f"layernorm.{name}"] = FD_TOL


def other_layers(g):
    """Section 5: a linear layer, GELU, a residual add, [cls] and the positions, by autograd."""
    x, w, dout = floats(LIN_X), floats(LIN_W), floats(LIN_DOUT)
    with torch.enable_grad():
        lx, lw = x.double().requires_grad_(True), w.double().requires_grad_(True)
        lb = torch.zeros(w.shape[0], dtype=torch.float64, requires_grad=True)
        dx, dw, db = torch.autograd.grad(F.linear(lx, lw, lb), (lx, lw, lb),
                                         grad_outputs=dout.double())
    g.update({"linear.x": x, "linear.W": w, "linear.dout": dout, "linear.dx": f32(dx),
              "linear.dW": f32(dw), "linear.db": f32(db), "linear.by_hand_max_diff": f32(0.0)})

    x = floats(GELU_X)
    with torch.enable_grad():
        lx = x.double().requires_grad_(True)
        (dgelu,) = torch.autograd.grad(F.gelu(lx).sum(), (lx,))
        lx = x.double().requires_grad_(True)
        (dres,) = torch.autograd.grad((lx + F.gelu(lx)).sum(), (lx,))
    g.update({"gelu.x": x, "gelu.slope": f32(dgelu), "gelu.dx": f32(dgelu),
              "residual.dx": f32(dres), "gelu.by_hand_max_diff": f32(0.0),
              "gelu.off_slope": f32(dgelu[0]), "residual.off_dx": f32(dres[0])})

    # embed = cat(cls, patches) + pos for TB images; the chapter's made-up dembed
    N = TP + 1
    dembed = torch.tensor([(i % 7) - 3.0 for i in range(TB * N * TD)]).reshape(TB, N, TD)
    with torch.enable_grad():
        cls = torch.zeros(TD, dtype=torch.float64, requires_grad=True)
        pos = torch.zeros(N, TD, dtype=torch.float64, requires_grad=True)
        patches = torch.zeros(TB, TP, TD, dtype=torch.float64, requires_grad=True)
        embed = torch.cat((cls.expand(TB, 1, TD), patches), dim=1) + pos
        dcls, dpos, dpatch = torch.autograd.grad(embed, (cls, pos, patches),
                                                 grad_outputs=dembed.double())
    g.update({"tokens.dembed": f32(dembed), "tokens.dpos": f32(dpos.reshape(-1)),
              "tokens.dcls": f32(dcls), "tokens.dpatch": f32(dpatch),
              "tokens.by_hand_max_diff": f32(0.0)})


def adam_steps(grads, lr, theta0, max_norm=None, opt_class=torch.optim.AdamW, weight_decay=0.0):
    """θ after each step of torch's optimizer on one parameter, and its state (m, v) after each."""
    theta = torch.nn.Parameter(torch.tensor([theta0], dtype=torch.float32))
    opt = opt_class([theta], lr=lr, weight_decay=weight_decay, foreach=False)
    thetas, ms, vs = [], [], []
    for grad in grads:
        theta.grad = torch.tensor([grad], dtype=torch.float32)
        if max_norm is not None:
            torch.nn.utils.clip_grad_norm_([theta], max_norm)
        opt.step()
        state = opt.state[theta]
        thetas.append(theta.detach().double()[0].clone())
        ms.append(state["exp_avg"].double()[0].clone())
        vs.append(state["exp_avg_sq"].double()[0].clone())
    return torch.stack(thetas), torch.stack(ms), torch.stack(vs)


def adam_written_out(g):
    """Section 6: torch.optim.AdamW's m, v and θ over two steps; the spike, clipped or not."""
    beta1, beta2, eps = 0.9, 0.999, 1e-8
    theta, m, v = adam_steps(ADAM_G, ADAM_LR, ADAM_THETA0)
    t = torch.arange(1, len(ADAM_G) + 1, dtype=torch.float64)
    mhat, vhat = m / (1 - beta1 ** t), v / (1 - beta2 ** t)
    before = torch.cat([torch.tensor([ADAM_THETA0], dtype=torch.float64), theta[:-1]])
    g.update({"adam.m": f32(m), "adam.v": f32(v), "adam.mhat": f32(mhat), "adam.vhat": f32(vhat),
              "adam.step": f32((before - theta) / ADAM_LR), "adam.theta": f32(theta),
              "adam.by_hand_max_diff": f32(0.0),
              "adam.uncorrected_first_step": f32((1 - beta1) / math.sqrt(1 - beta2))})
    # float32 θ rounds each step by up to ~6e-8 of 1: the step in units of η to ~1e-4
    grads = [SPIKE_G if s == SPIKE_AT + 1 else QUIET_G for s in range(1, SPIKE_STEPS + 1)]
    shown = [s - 1 for s in SPIKE_SHOWN]
    for name, max_norm in (("raw", None), ("clipped", CLIP_NORM)):
        theta = adam_steps(grads, CLIP_LR, 0.0, max_norm)[0]
        before = torch.cat([torch.zeros(1, dtype=torch.float64), theta[:-1]])
        size = ((before - theta) / CLIP_LR)[shown]
        g[f"clip.size_{name}"] = f32(size)
        g[f"clip.{name}_at_150"] = f32(size[-1])
    g["clip.step"] = floats(SPIKE_SHOWN)


def l2_versus_decoupled(g):
    """Section 8: torch.optim.Adam's L2 weight decay against torch.optim.AdamW's decoupled one."""
    grads = [NOISY_G if s % 2 else -NOISY_G for s in range(1, L2_STEPS + 1)]
    plain = adam_steps(grads, L2_LR, 1.0)[0][-1]
    l2 = adam_steps(grads, L2_LR, 1.0, opt_class=torch.optim.Adam, weight_decay=L2_LAMBDA)[0][-1]
    decoupled = adam_steps(grads, L2_LR, 1.0, weight_decay=L2_LAMBDA)[0][-1]
    g.update({"l2.theta_plain": f32(plain), "l2.shrink_l2": f32(plain - l2),
              "l2.shrink_decoupled": f32(plain - decoupled),
              "l2.ratio": f32((plain - l2) / (plain - decoupled))})


def ref_name(timm):
    """tools/ref_vit.py's parameter name for a timm name."""
    return timm.replace("patch_embed.proj.", "patch_embed.").replace("mlp.", "")


def one_step(g, tol, model, weights, image, target):
    """Section 5: autograd through the whole model, central differences of six entries,
    and torch.optim.AdamW's first step at two learning rates from the same weights."""
    params = dict(model.named_parameters())
    names = list(weights)  # timm's state_dict order, as the chapter lists them
    theta0 = {n: params[ref_name(n)].detach().clone() for n in names}

    def loss_at():
        return F.cross_entropy(model(image), target)

    with torch.enable_grad():
        model.zero_grad()
        loss = loss_at()
        loss.backward()
    grads = {n: params[ref_name(n)].grad.detach().clone() for n in names}
    flat = torch.cat([grads[n].reshape(-1) for n in names])
    g["step.loss_before"] = f32(loss)
    g["step.grad_norm"] = g["step.clip_norm"] = f32(flat.norm())
    bias = torch.stack([grads[f"blocks.{b}.attn.qkv.bias"].reshape(3, -1)
                        for b in range(MODEL["depth"])])  # (L, q k v, D)
    for part, name in enumerate(("query", "key", "value")):
        g[f"step.{name}_bias_grad_norm"] = f32(bias[:, part].norm())
    for n in LISTED:
        g[f"grad_norm.{n}"] = f32(grads[n].norm())
        g[f"norm.{n}"] = f32(theta0[n].norm())
    with torch.no_grad():
        probs = torch.softmax(model(image), dim=-1)
        dlogits = probs[0] - F.one_hot(target, MODEL["classes"])[0]
    D = MODEL["dim"]
    dpos, dcls = grads["pos_embed"].reshape(-1, D), grads["cls_token"].reshape(D)
    g["step.head_bias_vs_dlogits"] = f32(max_abs_diff(grads["head.bias"], dlogits))
    g["step.pos0_vs_cls"] = f32(max_abs_diff(dpos[0], dcls))
    g["step.pos_rest_norm"] = f32(dpos[1:].norm())

    # the entry of largest gradient in six tensors, and its central difference in float64
    h = torch.tensor(H, dtype=torch.float32)
    index, grad, fd = [], [], []
    for n in CHECKED:
        a = grads[n].reshape(-1).abs()
        top = torch.topk(a, 2).values
        assert top[1] < 0.999 * top[0], f"{n}: two entries nearly tie for the largest gradient"
        i = int(a.argmax())
        p = params[ref_name(n)].data.view(-1)
        x0 = theta0[n].reshape(-1)[i].float()
        up, down = (x0 + h).double(), (x0 - h).double()
        with torch.no_grad():
            p[i] = up
            lp = loss_at()
            p[i] = down
            lm = loss_at()
            p[i] = x0.double()
        index.append(i), grad.append(grads[n].reshape(-1)[i]), fd.append((lp - lm) / (up - down))
    index, grad, fd = torch.tensor(index), torch.stack(grad), torch.stack(fd)
    g["check.index"], g["check.grad"], g["check.fd"] = f32(index), f32(grad), f32(fd)
    g["check.max_diff"] = f32(max_abs_diff(grad, fd))
    tol["check.fd"] = tol["check.max_diff"] = FD_TOL

    # AdamW: timm's two groups, clip_grad_norm_ first, from θ0 with a fresh optimizer each time
    after, p_after, first_order, near_eta = [], [], [], []
    ordered = [params[ref_name(n)] for n in names]
    for lr in STEP_LRS:
        with torch.no_grad():
            for n in names:
                params[ref_name(n)].copy_(theta0[n])
                params[ref_name(n)].grad = grads[n].clone()
        decay = [params[ref_name(n)] for n in names if timm_decays(n, weights[n])]
        rest = [params[ref_name(n)] for n in names if not timm_decays(n, weights[n])]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": STEP_DECAY},
                                 {"params": rest, "weight_decay": 0.0}], lr=lr, foreach=False)
        torch.nn.utils.clip_grad_norm_(ordered, MAX_NORM)
        opt.step()
        with torch.no_grad():
            out = model(image)
            after.append(F.cross_entropy(out, target))
            p_after.append(torch.softmax(out, dim=-1)[0, TARGET])
            delta = torch.cat([(params[ref_name(n)] - theta0[n]).reshape(-1) for n in names])
            first_order.append((flat * delta).sum())
            near = (delta.abs() - lr).abs() <= 0.01 * lr
            near_eta.append(100.0 * near.double().mean())
            slow = flat.abs()[~near].max()
    g["step.lr"] = f32(torch.tensor(STEP_LRS, dtype=torch.float64))
    g["step.loss_after"] = f32(torch.stack(after))
    g["step.p_after"] = f32(torch.stack(p_after))
    g["step.change"] = f32(torch.stack(after) - loss.detach())
    g["step.first_order"] = f32(torch.stack(first_order))
    g["step.about_eta_percent"] = f32(torch.stack(near_eta))
    g["step.p_before"] = f32(torch.exp(-loss.detach()))
    g["step.slow_max_grad"] = f32(slow)  # at the last learning rate, as the chapter says
    g["step.slow_max_grad_clipped"] = f32(slow * MAX_NORM / (flat.norm() + 1e-6))
    # a parameter whose gradient is within float32's rounding of eps = 1e-8 may move by
    # less than 0.99 η in one and not the other: a few of 114,250 (1e-3 %)
    tol["step.about_eta_percent"] = (0.01, 0.0)
    # the largest gradient of those: a parameter at the 1 % edge may fall either side
    tol["step.slow_max_grad"] = tol["step.slow_max_grad_clipped"] = (0.0, 0.2)
    # the loss after the step: float32 weights stepped by ±η, against float64
    tol["step.loss_after"] = tol["step.change"] = (1e-4, 1e-4)
    tol["step.p_after"] = (1e-5, 1e-4)
    tol["step.first_order"] = (1e-4, 1e-4)


def warmup_and_decay(g, weights):
    """Section 6: the schedule, Adam's first step, weight decay alone, timm's groups."""
    s = SCHEDULE
    lrs = schedule_values(s["peak"], s["min_lr"], s["start"], s["warm"], s["total"])
    g["schedule.step"] = floats(SCHEDULE_AT)
    g["schedule.lr"] = f32(torch.tensor([lrs[i] for i in SCHEDULE_AT], dtype=torch.float64))

    # one step of torch's AdamW on two parameters at 1, gradients 1e-4 and 10
    small, big = torch.nn.Parameter(torch.ones(1)), torch.nn.Parameter(torch.ones(1))
    opt = torch.optim.AdamW([small, big], lr=ETA, weight_decay=0.0, foreach=False)
    small.grad, big.grad = torch.full((1,), 1e-4), torch.full((1,), 10.0)
    opt.step()
    g["first_step.small_grad"] = f32(1.0 - small.detach().double()[0])
    g["first_step.big_grad"] = f32(1.0 - big.detach().double()[0])

    # weight decay alone: zero gradients, λ = 0.05 for one copy and 0 for the other
    weight = torch.nn.Parameter(floats(DECAY_START))
    bias = torch.nn.Parameter(floats(DECAY_START))
    opt = torch.optim.AdamW([{"params": [weight], "weight_decay": DECAY},
                             {"params": [bias], "weight_decay": 0.0}], lr=ETA, foreach=False)
    for _ in range(DECAY_STEPS):
        weight.grad, bias.grad = torch.zeros(4), torch.zeros(4)
        opt.step()
    g["decay.weight"], g["decay.bias"] = f32(weight), f32(bias)
    g["decay.factor"] = f32((1.0 - ETA * DECAY) ** DECAY_STEPS)

    decaying = [n for n, t in weights.items() if timm_decays(n, t)]
    values = sum(weights[n].numel() for n in decaying)
    total = sum(t.numel() for t in weights.values())
    g["decay.tensors"] = f32(len(weights))
    g["decay.decaying_tensors"] = f32(len(decaying))
    g["decay.decaying_values"] = f32(values)
    g["decay.percent"] = f32(100.0 * values / total)


@golden
def ch10_learning():
    """chapters/10_learning.c: the loss, a head's backward, softmax and LayerNorm checked,
    AdamW's step, the schedule and weight decay."""
    g, tol = {}, {}
    with made_weights() as path:
        weights = stio.load(path)[0]
        model = RefViT.from_safetensors(path).double()
    image, target = the_loss(g, model, weights)
    small_losses(g)
    the_head(g, tol)
    the_softmax(g, tol)
    the_layernorm(g, tol)
    other_layers(g)
    adam_written_out(g)
    l2_versus_decoupled(g)
    one_step(g, tol, model, weights, image, target)
    warmup_and_decay(g, weights)
    g = {k: f32(v) for k, v in g.items()}
    meta = {"model": " ".join(f"{k}={v}" for k, v in MODEL.items()) + " std=0.02"}
    return g, tol, meta


if __name__ == "__main__":
    sys.exit(main(__doc__))
