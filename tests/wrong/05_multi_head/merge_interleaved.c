// hint: the heads were interleaved feature by feature
// also: 'context' is the first traced stage that differs
/**
 * @file heads.c
 * @brief A wrong heads.c for exercise 05 (tests/wrong/): heads_merge() interleaves the heads feature by feature, out[b][n][d·H + h].
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "attention/attention.h"

#include <stddef.h>
#include <string.h>

void heads_split(float *out, const float *x, int B, int N, int H, int Dh) {
    // x is (B, N, H·Dh), out is (B, H, N, Dh): out[b][h][n][d] = x[b][n][h·Dh + d]
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int n = 0; n < N; n++) // head h of token n: Dh contiguous values on both sides
                memcpy(out + (((size_t)b * H + h) * N + n) * Dh,
                       x + ((size_t)b * N + n) * H * Dh + (size_t)h * Dh,
                       (size_t)Dh * sizeof(float));
}

void heads_merge(float *out, const float *x, int B, int N, int H, int Dh) {
    // x is (B, H, N, Dh), out is (B, N, H·Dh)
    // WRONG: out[b][n][d·H + h], feature d of every head, then feature d + 1: the axes
    // flattened as (N, Dh, H); a head's Dh features belong together, out[b][n][h·Dh + d]
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int n = 0; n < N; n++)
                for (int d = 0; d < Dh; d++)
                    out[((size_t)b * N + n) * H * Dh + (size_t)d * H + h] =
                        x[(((size_t)b * H + h) * N + n) * Dh + d];
}
