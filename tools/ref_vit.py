#!/usr/bin/python3
"""An independent PyTorch Vision Transformer, for goldens.

Written from timm's VisionTransformer semantics with torch.nn building blocks
(nn.Conv2d patch embedding, nn.LayerNorm, nn.Linear, nn.GELU), not from the C
code. It loads a safetensors file with timm names and records every
intermediate under the trace names of docs/contract.md.

    from ref_vit import RefViT
    model = RefViT.from_safetensors("w.safetensors")
    trace = model.trace(x)          # {name: tensor}, in forward order
"""
import math
import os
import sys

import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import stio  # noqa: E402


class Attention(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.heads = heads
        self.scale = (dim // heads) ** -0.5
        self.qkv = nn.Linear(dim, 3 * dim)
        self.proj = nn.Linear(dim, dim)

    def forward(self, x, rec, prefix):
        B, N, D = x.shape
        H, Dh = self.heads, D // self.heads
        qkv = self.qkv(x).reshape(B, N, 3, H, Dh).permute(2, 0, 3, 1, 4)
        q, k, v = qkv.unbind(0)
        rec(prefix + "q", q)
        rec(prefix + "k", k)
        rec(prefix + "v", v)
        scores = q @ k.transpose(-2, -1)
        rec(prefix + "scores", scores)
        scaled = scores * self.scale
        rec(prefix + "scaled", scaled)
        probs = scaled.softmax(dim=-1)
        rec(prefix + "probs", probs)
        context = (probs @ v).transpose(1, 2).reshape(B, N, D)
        rec(prefix + "context", context)
        out = self.proj(context)
        rec(prefix + "proj", out)
        return out


class Block(nn.Module):
    def __init__(self, dim, heads, mlp_dim, eps):
        super().__init__()
        self.norm1 = nn.LayerNorm(dim, eps=eps)
        self.attn = Attention(dim, heads)
        self.norm2 = nn.LayerNorm(dim, eps=eps)
        self.fc1 = nn.Linear(dim, mlp_dim)
        self.fc2 = nn.Linear(mlp_dim, dim)

    def forward(self, x, rec, prefix):
        h = self.norm1(x)
        rec(prefix + "norm1", h)
        x = x + self.attn(h, rec, prefix + "attn.")
        rec(prefix + "resid1", x)
        h = self.norm2(x)
        rec(prefix + "norm2", h)
        h = self.fc1(h)
        rec(prefix + "mlp.fc1", h)
        h = F.gelu(h)  # exact erf form
        rec(prefix + "mlp.gelu", h)
        h = self.fc2(h)
        rec(prefix + "mlp.fc2", h)
        x = x + h
        rec(prefix + "out", x)
        return x


class RefViT(nn.Module):
    def __init__(self, img, patch, chans, dim, depth, heads, mlp_dim, classes, eps=1e-6):
        super().__init__()
        self.patch_embed = nn.Conv2d(chans, dim, kernel_size=patch, stride=patch)
        n = (img // patch) ** 2 + 1
        self.cls_token = nn.Parameter(torch.zeros(1, 1, dim))
        self.pos_embed = nn.Parameter(torch.zeros(1, n, dim))
        self.blocks = nn.ModuleList(Block(dim, heads, mlp_dim, eps) for _ in range(depth))
        self.norm = nn.LayerNorm(dim, eps=eps)
        self.head = nn.Linear(dim, classes)

    @classmethod
    def from_safetensors(cls, path, heads=None, eps=None):
        w, meta = stio.load(path)
        dim, chans, patch, _ = w["patch_embed.proj.weight"].shape
        n = w["pos_embed"].shape[-2]
        img = int(round(math.sqrt(n - 1))) * patch
        depth = sum(1 for k in w if k.endswith(".norm1.weight"))
        heads = heads or int(meta.get("num_heads", dim // 64))
        eps = eps or float(meta.get("layer_norm_eps", 1e-6))
        model = cls(img, patch, chans, dim, depth, heads, w["blocks.0.mlp.fc1.weight"].shape[0],
                    w["head.weight"].shape[0], eps)
        state = {"patch_embed.weight": w["patch_embed.proj.weight"],
                 "patch_embed.bias": w["patch_embed.proj.bias"],
                 "cls_token": w["cls_token"].reshape(1, 1, dim),
                 "pos_embed": w["pos_embed"].reshape(1, n, dim)}
        for k, v in w.items():
            if k.startswith("blocks."):
                state[k.replace("mlp.", "")] = v
            elif k.startswith(("norm.", "head.")):
                state[k] = v
        model.load_state_dict({k: v.float() for k, v in state.items()})
        return model.eval()

    def forward(self, x, rec=lambda name, t: None):
        rec("input", x)
        B = x.shape[0]
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        rec("patch_embed", x)
        x = torch.cat((self.cls_token.expand(B, -1, -1), x), dim=1)
        rec("tokens", x)
        x = x + self.pos_embed
        rec("embed", x)
        for i, block in enumerate(self.blocks):
            x = block(x, rec, f"blocks.{i}.")
        x = self.norm(x)
        rec("norm", x)
        x = x[:, 0]
        rec("pre_logits", x)
        x = self.head(x)
        rec("logits", x)
        return x

    @torch.no_grad()
    def trace(self, x):
        """Run forward and return {trace name: contiguous float32 tensor} in order."""
        out = {}
        self.forward(x, lambda name, t: out.__setitem__(name, t.detach().contiguous().clone()))
        return out
