#!/usr/bin/python3
"""PCG32 exactly as lib/base/rng.c, so PyTorch goldens can rebuild the C inputs.

The float arithmetic is done in float32 (numpy) wherever the C code works in
float, and in double where the C code uses double, so streams match bit for bit.
"""
import math

import numpy as np

MASK64 = (1 << 64) - 1
MULT = 6364136223846793005


class Rng:
    def __init__(self, seed):
        self.state = 0
        self.inc = (54 << 1) | 1
        self.u32()
        self.state = (self.state + seed) & MASK64
        self.u32()

    def u32(self):
        old = self.state
        self.state = (old * MULT + self.inc) & MASK64
        xorshifted = (((old >> 18) ^ old) >> 27) & 0xFFFFFFFF
        rot = old >> 59
        return ((xorshifted >> rot) | (xorshifted << ((-rot) & 31))) & 0xFFFFFFFF

    def uniform(self):
        """float32 in [0, 1): (u32 >> 8) * 2^-24, exact in float32."""
        return np.float32((self.u32() >> 8) * (1.0 / 16777216.0))

    def normal(self):
        u1 = 1.0 - float(self.uniform())
        u2 = float(self.uniform())
        return np.float32(math.sqrt(-2.0 * math.log(u1)) * math.cos(2.0 * math.pi * u2))

    def fill_uniform(self, n, lo, hi):
        lo, hi = np.float32(lo), np.float32(hi)
        out = np.empty(n, dtype=np.float32)
        for i in range(n):
            out[i] = lo + (hi - lo) * self.uniform()
        return out

    def fill_normal(self, n, mean=0.0, std=1.0):
        mean, std = np.float32(mean), np.float32(std)
        out = np.empty(n, dtype=np.float32)
        for i in range(n):
            out[i] = mean + std * self.normal()
        return out

    def fill_trunc_normal(self, n, mean, std, lo, hi):
        mean, std = np.float32(mean), np.float32(std)
        lo, hi = np.float32(lo), np.float32(hi)
        out = np.empty(n, dtype=np.float32)
        for i in range(n):
            while True:
                v = mean + std * self.normal()
                if lo <= v <= hi:
                    break
            out[i] = v
        return out
