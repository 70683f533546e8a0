// hint: every value of x is there, in the wrong place
// also: 'q' is the first traced stage that differs
/**
 * @file heads.c
 * @brief A wrong heads.c for exercise 05 (tests/wrong/): heads_split() gives head h every H-th feature, x[b][n][d·H + h].
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "attention/attention.h"

#include <stddef.h>
#include <string.h>

void heads_split(float *out, const float *x, int B, int N, int H, int Dh) {
    // x is (B, N, H·Dh), out is (B, H, N, Dh)
    // WRONG: x read as (B, N, Dh, H), head h taking every H-th feature, x[b][n][d·H + h];
    // head h's features are the contiguous slice x[b][n][h·Dh … (h+1)·Dh - 1]
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int n = 0; n < N; n++)
                for (int d = 0; d < Dh; d++)
                    out[(((size_t)b * H + h) * N + n) * Dh + d] =
                        x[((size_t)b * N + n) * H * Dh + (size_t)d * H + h];
}

void heads_merge(float *out, const float *x, int B, int N, int H, int Dh) {
    // x is (B, H, N, Dh), out is (B, N, H·Dh): out[b][n][h·Dh + d] = x[b][h][n][d],
    // token n's row is [head 0 | head 1 | … | head H-1]
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int n = 0; n < N; n++)
                memcpy(out + ((size_t)b * N + n) * H * Dh + (size_t)h * Dh,
                       x + (((size_t)b * H + h) * N + n) * Dh,
                       (size_t)Dh * sizeof(float));
}
