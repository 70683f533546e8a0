// hint: 'q' is all zeros: the first stage still to compute
// also: heads_split() wrote nothing (or only zeros): is it still the exercise's placeholder?
/**
 * @file heads.c
 * @brief A wrong heads.c for exercise 05 (tests/wrong/): heads_merge() done, heads_split() still the skeleton's placeholder.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "attention/attention.h"

#include <stddef.h>
#include <string.h>

void heads_split(float *out, const float *x, int B, int N, int H, int Dh) {
    // x is (B, N, H·Dh), out is (B, H, N, Dh)
    // WRONG: the TODO not done yet, the skeleton's placeholder still there
    memset(out, 0, sizeof(float) * (size_t)B * H * N * Dh); // placeholder: delete it
    (void)x;
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
