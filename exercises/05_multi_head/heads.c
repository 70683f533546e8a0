/**
 * @file heads.c
 * @brief Exercise 05: splitting the width into heads and merging it back
 *        (lib/attention/attention.h), your version.
 *
 * Shape legend: B sequences, N tokens, H heads, Dh = D/H the width of one head.
 *
 * Fill in the two TODOs. `make exercise CH=05` grades them with mha.c;
 * README.md says what the tests check and what the hints mean. Until a TODO
 * is done its function writes zeros, so the tests fail without crashing.
 */
#include "attention/attention.h"

#include <stddef.h>
#include <string.h>

void heads_split(float *out, const float *x, int B, int N, int H, int Dh) {
    // x is (B, N, H·Dh), out is (B, H, N, Dh)

    // TODO: PyTorch's x.reshape(B, N, H, Dh).permute(0, 2, 1, 3):
    //
    //   out[b][h][n][d] = x[b][n][h·Dh + d]
    //
    //   for every sequence b < B, head h < H, token n < N and feature d < Dh.
    //   - Head h of token n is the contiguous slice x[b][n][h·Dh … (h+1)·Dh - 1]; the split
    //     gathers, for each head, that slice of every token into an (N, Dh) block of its own.
    //   - The reshape alone moves nothing (a plain copy of x is still (B, N, H, Dh)); the
    //     permute does.
    //   - In memory (row-major): x[b][n][f] is x[(b·N + n)·H·Dh + f] and out[b][h][n][d] is
    //     out[((b·H + h)·N + n)·Dh + d]. Use size_t for the offsets. The Dh values of one
    //     slice are contiguous in both, so one memcpy each will do.
    memset(out, 0, sizeof(float) * (size_t)B * H * N * Dh); // placeholder: delete it
    (void)x;
}

void heads_merge(float *out, const float *x, int B, int N, int H, int Dh) {
    // x is (B, H, N, Dh), out is (B, N, H·Dh)

    // TODO: the inverse of heads_split(), PyTorch's x.transpose(1, 2).reshape(B, N, H·Dh):
    //
    //   out[b][n][h·Dh + d] = x[b][h][n][d]
    //
    //   - Token n's row of out is [head 0's Dh values | head 1's | … | head H-1's]: first the
    //     axes become (B, N, H, Dh), then the last two are flattened into H·Dh.
    //   - A plain copy of x would flatten (H, N, Dh) instead and put head 1's token 0 where
    //     head 0's token 1 belongs.
    memset(out, 0, sizeof(float) * (size_t)B * N * H * Dh); // placeholder: delete it
    (void)x;
}
