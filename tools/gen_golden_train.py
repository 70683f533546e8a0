#!/usr/bin/python3
"""PyTorch autograd goldens for the whole model's backward pass and ten AdamW
steps (suite `vit_backward`, tests/test_vit_backward.c).

    tools/gen_golden_train.py           writes tests/golden/train_*.safetensors
    tools/gen_golden_train.py --help    this text, then the options every golden script takes

One small ViT with sizes that never coincide (TRAIN below: S 12, p 4, so
P 9 and N 10; D 24, H 3 heads of Dh 8, L 2, M 40, Y 7) on a batch of 3:

  train_vit_timm          its parameters under timm's names (fused attn.qkv), with
                          "num_heads" and "layer_norm_eps" in the metadata, as the
                          project's files carry them
  train_vit_hf            the same numbers under Hugging Face's names (separate
                          query, key, value)
  train_vit_torchvision   the same numbers as torchvision's own VisionTransformer
                          stores them (fused in_proj); its autograd gradients are
                          checked here to equal the reference's, which proves the mapping
  train_batch             the images (3, 3, 12, 12) and their targets (3), as floats
  train_grads             for F.cross_entropy(model(x), targets): "loss", the
                          gradient of every trace stage under "grad." + its name
                          (grad.logits … grad.input, the trace contract) and of
                          every parameter under its timm name
  train_grads_smooth      the same with label_smoothing=0.1
  train_adamw             ten steps of torch.optim.AdamW on that batch (label
                          smoothing 0.1, clip_grad_norm_ to 1.0, a LinearLR warm-up
                          then CosineAnnealingLR, joined by SequentialLR), with
                          timm's two param groups: weight decay for the weights of
                          the patch projection and of every linear layer, none for
                          biases, LayerNorms, cls_token and pos_embed.
                          "loss" (11): the loss before each step and after the last;
                          "lr" (10) and "norm" (10): each step's learning rate and
                          the gradient norm clip_grad_norm_ returned
  train_layers            the first of those steps, measured per layer group
                          (patch_embed with cls_token and pos_embed, blocks.0,
                          blocks.1, norm, head; suite `train_run`):
                          "grad_norm" (5) each group's gradient norm before
                          clipping, "weight_norm" (5) its weights' norm after the
                          step, "update_ratio" (5) ‖θ_after − θ_before‖ / ‖θ_before‖

Weights and images are drawn here with torch's generator (seed TRAIN["seed"]),
rounded to float32 (what the files hold), and the reference
(tools/ref_vit.py's RefViT, independent of the C code) runs in float64 on
those very numbers, so a golden is the exact answer rounded once to float32
and a test's difference is the C code's own float32 error. The stage
gradients are read with retain_grad() on the very tensors RefViT hands to
its recorder.

Tolerances (|c − ref| ≤ atol + rtol·|ref|, "tol.NAME" in the metadata): the
gradients get atol = GRAD_ATOL × rms(ref) and rtol GRAD_RTOL, the comments
at those constants say why; the loss 1e-6 relative. The AdamW run's losses
are compared within 1e-4 relative (the test's), and the script measures and
stores how far PyTorch's own float32 run lands from its float64 one
("float32_gap"), the size of difference float32 arithmetic alone makes.

Run with /usr/bin/python3 (Debian's python3-torch). Tests never need Python.
"""
import math
import os
import sys
import warnings

import torch
import torch.nn.functional as F
from torchvision.models.vision_transformer import VisionTransformer

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_golden_keys import hf_state, timm_state  # noqa: E402
from golden_common import golden, main  # noqa: E402
from ref_vit import RefViT  # noqa: E402

# The model, the batch and how the weights are drawn. tests/test_vit_backward.c
# repeats the sizes and compares this line with the golden's "config".
# Weights of std 0.25 (twelve times timm's) so that attention is far from
# uniform and the MLP far from linear; every bias and LayerNorm scale/shift is
# perturbed, so that each of their gradients differs from the plain init's.
TRAIN = dict(img=12, patch=4, dim=24, depth=2, heads=3, mlp_dim=40, classes=7, batch=3,
             seed=61, std=0.25, bias_std=0.1, norm_std=0.1)
EPS = 1e-6  # LayerNorm ε, timm's and torchvision's, written into every file
TARGETS = [5, 0, 3]
SMOOTHING = 0.1

# Gradient tolerance: atol = GRAD_ATOL × rms(ref), rtol GRAD_RTOL. The float32 C
# backward against this float64 reference is off by 1e-7 to 2e-6 × rms (the
# largest in the attention scores' gradients and the patch projection's, sums
# over every token of every image); 3e-5 leaves a margin of 15 or more for
# other BLAS kernels, thread counts and compilers, while a real mistake (a
# missing residual, a transposed product, a forgotten scale, q and k
# exchanged) is off by 0.1 to 1 × rms.
GRAD_ATOL = 3e-5
GRAD_RTOL = 1e-4
LOSS_RTOL = 1e-6

# The AdamW run; tests/test_vit_backward.c has the same numbers.
STEPS = 10
PEAK_LR, MIN_LR, WARMUP_START, WARMUP_STEPS = 3e-3, 1e-4, 0.1, 3
BETAS, ADAM_EPS, WEIGHT_DECAY, MAX_NORM = (0.9, 0.999), 1e-8, 0.05, 1.0


def config_string():
    """The one-line description stored as metadata "config" (the test compares it)."""
    return " ".join(f"{k}={v}" for k, v in TRAIN.items())


def rms(t):
    return float(t.double().pow(2).mean().sqrt())


def f32(tensors):
    return {k: v.detach().float().contiguous() for k, v in tensors.items()}


def new_model():
    """RefViT in float64 with TRAIN's parameters (float32 values), its batch and targets."""
    c = TRAIN
    m = RefViT(c["img"], c["patch"], 3, c["dim"], c["depth"], c["heads"], c["mlp_dim"],
               c["classes"], eps=EPS).double().eval()
    gen = torch.Generator().manual_seed(c["seed"])
    with torch.no_grad():
        for name, p in m.named_parameters():
            noise = torch.randn(p.shape, generator=gen, dtype=torch.float64)
            if name.endswith(("norm1.weight", "norm2.weight")) or name == "norm.weight":
                p.copy_(1 + c["norm_std"] * noise)
            elif "norm" in name:
                p.copy_(c["norm_std"] * noise)
            elif name.endswith(".bias"):
                p.copy_(c["bias_std"] * noise)
            else:
                p.copy_(c["std"] * noise)
            p.copy_(p.float().double())  # the float32 numbers the files hold
        shape = (c["batch"], 3, c["img"], c["img"])
        x = (torch.rand(shape, generator=gen, dtype=torch.float64) * 2 - 1).float().double()
    return m, x, torch.tensor(TARGETS)


def timm_name(refvit_name):
    """timm's name of a RefViT parameter (ref_vit.py drops the "proj" and "mlp" levels)."""
    return (refvit_name.replace("patch_embed.", "patch_embed.proj.")
            .replace(".fc1.", ".mlp.fc1.").replace(".fc2.", ".mlp.fc2."))


def autograd(m, x, targets, smoothing):
    """loss, {grad.STAGE: d loss/d stage} in backward order, {timm name: d loss/d param}."""
    stages = {}

    def rec(name, t):
        t.retain_grad()
        stages[name] = t

    with torch.enable_grad():
        m.zero_grad(set_to_none=True)
        x = x.clone().requires_grad_(True)
        loss = F.cross_entropy(m(x, rec), targets, label_smoothing=smoothing)
        loss.backward()
    trace = {"grad." + n: stages[n].grad for n in reversed(list(stages))}
    params = {timm_name(n): p.grad for n, p in m.named_parameters()}
    return loss.detach(), trace, params


def torchvision_model(m):
    """torchvision's VisionTransformer holding m's parameters (float64)."""
    c = TRAIN
    tv = VisionTransformer(image_size=c["img"], patch_size=c["patch"], num_layers=c["depth"],
                           num_heads=c["heads"], hidden_dim=c["dim"], mlp_dim=c["mlp_dim"],
                           num_classes=c["classes"]).double().eval()
    s = m.state_dict()
    state = {"class_token": s["cls_token"], "conv_proj.weight": s["patch_embed.weight"],
             "conv_proj.bias": s["patch_embed.bias"], "encoder.pos_embedding": s["pos_embed"],
             "encoder.ln.weight": s["norm.weight"], "encoder.ln.bias": s["norm.bias"],
             "heads.head.weight": s["head.weight"], "heads.head.bias": s["head.bias"]}
    for i in range(len(m.blocks)):
        b, t = f"blocks.{i}.", f"encoder.layers.encoder_layer_{i}."
        pairs = {"ln_1": "norm1", "ln_2": "norm2", "mlp.0": "fc1", "mlp.3": "fc2",
                 "self_attention.out_proj": "attn.proj"}
        for tv_name, ref_name in pairs.items():
            state[t + tv_name + ".weight"] = s[b + ref_name + ".weight"]
            state[t + tv_name + ".bias"] = s[b + ref_name + ".bias"]
        state[t + "self_attention.in_proj_weight"] = s[b + "attn.qkv.weight"]
        state[t + "self_attention.in_proj_bias"] = s[b + "attn.qkv.bias"]
    tv.load_state_dict(state, strict=True)  # every name and shape is torchvision's
    return tv, state


def check_torchvision_gradients(m, x, targets):
    """torchvision's own autograd on its own modules gives the reference's parameter gradients."""
    tv, _ = torchvision_model(m)
    _, _, want = autograd(m, x, targets, 0.0)
    with torch.enable_grad():
        loss = F.cross_entropy(tv(x), targets)
        loss.backward()
    got = dict(tv.named_parameters())
    # the mapping of torchvision_model(), read backwards: torchvision name -> timm name
    pairs = {"class_token": "cls_token", "conv_proj.weight": "patch_embed.proj.weight",
             "conv_proj.bias": "patch_embed.proj.bias", "encoder.pos_embedding": "pos_embed",
             "encoder.ln.weight": "norm.weight", "encoder.ln.bias": "norm.bias",
             "heads.head.weight": "head.weight", "heads.head.bias": "head.bias"}
    for i in range(TRAIN["depth"]):
        t, b = f"encoder.layers.encoder_layer_{i}.", f"blocks.{i}."
        for tv_part, timm_part in {"ln_1": "norm1", "ln_2": "norm2", "mlp.0": "mlp.fc1",
                                   "mlp.3": "mlp.fc2", "self_attention.out_proj": "attn.proj"}.items():
            for kind in ("weight", "bias"):
                pairs[f"{t}{tv_part}.{kind}"] = f"{b}{timm_part}.{kind}"
        pairs[t + "self_attention.in_proj_weight"] = b + "attn.qkv.weight"
        pairs[t + "self_attention.in_proj_bias"] = b + "attn.qkv.bias"
    assert set(pairs) == set(got), "every torchvision parameter is mapped"
    gap = max(float((got[k].grad - want[v].reshape(got[k].shape)).abs().max())
              for k, v in pairs.items())
    assert gap < 1e-12, f"torchvision's gradients differ from the reference's by {gap}"
    return gap


def checkpoint_meta(convention):
    return {"num_heads": str(TRAIN["heads"]), "layer_norm_eps": f"{EPS:g}",
            "convention": convention, "config": config_string()}


# ------------------------------------------------------------- weights

@golden
def train_vit_timm():
    """The model's parameters with timm's names (fused blocks.N.attn.qkv)."""
    m, _, _ = new_model()
    return f32(timm_state(m)), {}, checkpoint_meta("timm")


@golden
def train_vit_hf():
    """The same parameters with Hugging Face's names (separate query, key, value)."""
    m, _, _ = new_model()
    return f32(hf_state(m)), {}, checkpoint_meta("hf")


@golden
def train_vit_torchvision():
    """The same parameters as torchvision's VisionTransformer stores them (fused in_proj)."""
    m, x, targets = new_model()
    gap = check_torchvision_gradients(m, x, targets)
    tv, _ = torchvision_model(m)
    meta = checkpoint_meta("torchvision")
    meta["gradients_vs_reference"] = f"{gap:.1e} (torchvision's autograd, float64)"
    return f32(dict(tv.state_dict())), {}, meta


@golden
def train_batch():
    """The images and their targets (as float32)."""
    _, x, targets = new_model()
    return f32({"input": x, "targets": targets.double()}), {}, {"config": config_string()}


# ----------------------------------------------------------- gradients

def grads_golden(smoothing):
    m, x, targets = new_model()
    loss, trace, params = autograd(m, x, targets, smoothing)
    tensors = {"loss": loss.reshape(1)}
    tensors.update(trace)
    tensors.update(params)
    tol = {"loss": (0.0, LOSS_RTOL)}
    for name, t in list(trace.items()) + list(params.items()):
        tol[name] = (GRAD_ATOL * rms(t), GRAD_RTOL)
    meta = {"config": config_string(), "smoothing": f"{smoothing:g}",
            "reference": "tools/ref_vit.py in float64, torch.autograd"}
    return f32(tensors), tol, meta


@golden
def train_grads():
    """The loss, every stage's gradient and every parameter's, plain cross-entropy."""
    return grads_golden(0.0)


@golden
def train_grads_smooth():
    """The same with label smoothing 0.1."""
    return grads_golden(SMOOTHING)


# ---------------------------------------------------------------- AdamW

def no_decay(name, p):
    """timm's param_groups_weight_decay: ndim ≤ 1, a bias, or in no_weight_decay()."""
    return p.ndim <= 1 or name.endswith(".bias") or name in ("cls_token", "pos_embed")


def adamw_run(dtype):
    """Ten AdamW steps on the batch in @p dtype: the 11 losses, the 10 lrs and norms."""
    m, x, targets = new_model()
    m = m.to(dtype)
    x = x.to(dtype)
    named = list(m.named_parameters())
    groups = [{"params": [p for n, p in named if not no_decay(n, p)], "weight_decay": WEIGHT_DECAY},
              {"params": [p for n, p in named if no_decay(n, p)], "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=PEAK_LR, betas=BETAS, eps=ADAM_EPS)
    warmup = torch.optim.lr_scheduler.LinearLR(opt, start_factor=WARMUP_START, end_factor=1.0,
                                               total_iters=WARMUP_STEPS)
    cosine = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=STEPS - 1 - WARMUP_STEPS,
                                                        eta_min=MIN_LR)
    with warnings.catch_warnings():  # SequentialLR's own step(0) is "deprecated"
        warnings.simplefilter("ignore")
        sched = torch.optim.lr_scheduler.SequentialLR(opt, [warmup, cosine],
                                                      milestones=[WARMUP_STEPS])
    losses, lrs, norms = [], [], []
    with torch.enable_grad(), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for step in range(STEPS + 1):
            opt.zero_grad(set_to_none=True)
            loss = F.cross_entropy(m(x), targets, label_smoothing=SMOOTHING)
            losses.append(float(loss))
            if step == STEPS:
                break
            loss.backward()
            norms.append(float(torch.nn.utils.clip_grad_norm_(m.parameters(), MAX_NORM)))
            lrs.append(opt.param_groups[0]["lr"])
            opt.step()
            sched.step()
    return losses, lrs, norms


@golden
def train_adamw():
    """Ten AdamW steps: the losses, learning rates and gradient norms, in float64."""
    losses, lrs, norms = adamw_run(torch.float64)
    losses32, _, _ = adamw_run(torch.float32)
    gap = max(abs(a - b) / abs(b) for a, b in zip(losses32, losses))
    assert losses[-1] < 0.8 * losses[0], "the run must learn something"
    meta = {"config": config_string(), "steps": str(STEPS), "smoothing": f"{SMOOTHING:g}",
            "schedule": f"peak_lr={PEAK_LR:g} min_lr={MIN_LR:g} warmup_start={WARMUP_START:g} "
                        f"warmup_steps={WARMUP_STEPS}",
            "adamw": f"beta1={BETAS[0]:g} beta2={BETAS[1]:g} eps={ADAM_EPS:g} "
                     f"weight_decay={WEIGHT_DECAY:g} max_norm={MAX_NORM:g}",
            "float32_gap": f"{gap:.1e} (largest relative difference of PyTorch's float32 "
                           f"losses from its float64 ones)",
            "reference": "torch.optim.AdamW, tools/ref_vit.py in float64"}
    tensors = {"loss": torch.tensor(losses), "lr": torch.tensor(lrs), "norm": torch.tensor(norms)}
    return f32(tensors), {}, meta


LAYER_GROUPS = ["patch_embed"] + [f"blocks.{i}" for i in range(2)] + ["norm", "head"]


def layer_group(timm):
    """The group of a timm parameter name, as lib/train/layer_stats.h lists them."""
    if timm.startswith("patch_embed.") or timm in ("cls_token", "pos_embed"):
        return 0
    if timm.startswith("blocks."):
        return 1 + int(timm.split(".")[1])
    return LAYER_GROUPS.index(timm.split(".")[0])


@golden
def train_layers():
    """The first AdamW step of train_adamw, per layer group, in float64."""
    assert TRAIN["depth"] == 2, "LAYER_GROUPS names two blocks"
    m, x, targets = new_model()
    named = list(m.named_parameters())
    groups = [{"params": [p for n, p in named if not no_decay(n, p)], "weight_decay": WEIGHT_DECAY},
              {"params": [p for n, p in named if no_decay(n, p)], "weight_decay": 0.0}]
    lr = PEAK_LR * WARMUP_START  # the schedule's first step
    opt = torch.optim.AdamW(groups, lr=lr, betas=BETAS, eps=ADAM_EPS)
    before = {n: p.detach().clone() for n, p in named}
    with torch.enable_grad():
        loss = F.cross_entropy(m(x), targets, label_smoothing=SMOOTHING)
        loss.backward()
    g2 = [0.0] * len(LAYER_GROUPS)
    for n, p in named:
        g2[layer_group(timm_name(n))] += float(p.grad.pow(2).sum())
    norm = float(torch.nn.utils.clip_grad_norm_(m.parameters(), MAX_NORM))
    assert norm > MAX_NORM, "the step must clip, so the golden pins the norms before it"
    opt.step()
    w2, d2, b2 = [0.0] * len(LAYER_GROUPS), [0.0] * len(LAYER_GROUPS), [0.0] * len(LAYER_GROUPS)
    for n, p in named:
        k = layer_group(timm_name(n))
        w2[k] += float(p.detach().pow(2).sum())
        d2[k] += float((p.detach() - before[n]).pow(2).sum())
        b2[k] += float(before[n].pow(2).sum())
    tensors = {"grad_norm": torch.tensor(g2).sqrt(), "weight_norm": torch.tensor(w2).sqrt(),
               "update_ratio": (torch.tensor(d2) / torch.tensor(b2)).sqrt()}
    meta = {"config": config_string(), "smoothing": f"{SMOOTHING:g}", "lr": f"{lr:g}",
            "adamw": f"beta1={BETAS[0]:g} beta2={BETAS[1]:g} eps={ADAM_EPS:g} "
                     f"weight_decay={WEIGHT_DECAY:g} max_norm={MAX_NORM:g}",
            "groups": " ".join(LAYER_GROUPS), "global_norm": f"{norm:.9g}",
            "reference": "torch.optim.AdamW, clip_grad_norm_, tools/ref_vit.py in float64"}
    return f32(tensors), {}, meta


if __name__ == "__main__":
    sys.exit(main(__doc__))
