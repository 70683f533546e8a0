#!/usr/bin/python3
"""Convert a PyTorch checkpoint (.pth / .pt / .bin) to safetensors.

    tools/to_safetensors.py vit_b_16-c867db91.pth vit_b_16.safetensors
    tools/to_safetensors.py --bf16 model.pth model.safetensors
    tools/to_safetensors.py --meta num_heads=4 small_vit.pth small_vit.safetensors

Reads the file with torch.load on the CPU (weights_only where this torch
supports it), takes the state dict (also when it is wrapped as
{"state_dict": …} or {"model": …}, or is a whole nn.Module), and writes every
tensor, contiguous, in its own dtype (or converted with --f32/--bf16/--f16),
with the source file and any --meta KEY=VALUE pairs in __metadata__ (a
state dict does not say how many heads a ViT has; `vit` assumes D/64 unless
num_heads is given this way). Non-tensor entries are skipped
and listed. Writes to a temporary file and renames it, so a failure leaves
nothing half-written. Dev-time only: the C code never needs Python.
"""
import argparse
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import stio  # noqa: E402


def load_state_dict(path):
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except TypeError:  # torch < 1.13 has no weights_only
        obj = torch.load(path, map_location="cpu")
    if isinstance(obj, torch.nn.Module):
        obj = obj.state_dict()
    for key in ("state_dict", "model", "model_state"):
        if isinstance(obj, dict) and isinstance(obj.get(key), dict):
            obj = obj[key]
    if not isinstance(obj, dict):
        raise SystemExit(f"{path}: not a state dict (got {type(obj).__name__})")
    return obj


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("src")
    ap.add_argument("dst")
    group = ap.add_mutually_exclusive_group()
    for dt in ("f32", "bf16", "f16"):
        group.add_argument(f"--{dt}", action="store_const", const=dt, dest="dtype")
    ap.add_argument("--meta", action="append", default=[], metavar="KEY=VALUE",
                    help="add a __metadata__ entry, e.g. num_heads=4 or layer_norm_eps=1e-6")
    args = ap.parse_args()
    meta = {"format": "pt", "converted_from": os.path.basename(args.src)}
    for kv in args.meta:
        key, sep, value = kv.partition("=")
        if not sep or not key:
            ap.error(f"--meta wants KEY=VALUE, got {kv!r}")
        meta[key] = value
    dtypes = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}

    state = load_state_dict(args.src)
    tensors, skipped = {}, []
    for name, value in state.items():
        if not torch.is_tensor(value):
            skipped.append(name)
            continue
        t = value.detach().cpu().contiguous()
        if args.dtype and t.is_floating_point():
            t = t.to(dtypes[args.dtype])
        tensors[name] = t
    tmp = args.dst + ".tmp"
    stio.save(tmp, tensors, meta)
    os.replace(tmp, args.dst)
    print(f"{args.dst}: {len(tensors)} tensors" + (f"; skipped {skipped}" if skipped else ""))


if __name__ == "__main__":
    main()
