// hint: heads_split copied x as it is
/**
 * @file heads.c
 * @brief A wrong heads.c for exercise 05 (tests/wrong/): heads_split() reshapes but never permutes.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "attention/attention.h"

#include <stddef.h>
#include <string.h>

void heads_split(float *out, const float *x, int B, int N, int H, int Dh) {
    // x is (B, N, H·Dh), out is (B, H, N, Dh)
    // WRONG: x.reshape(B, N, H, Dh) without .permute(0, 2, 1, 3) is still token-major
    memcpy(out, x, sizeof(float) * (size_t)B * N * H * Dh);
}

void heads_merge(float *out, const float *x, int B, int N, int H, int Dh) {
    // x is (B, H, N, Dh), out is (B, N, H·Dh)
    const int D = H * Dh;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int n = 0; n < N; n++)
                memcpy(out + ((size_t)b * N + n) * D + (size_t)h * Dh,
                       x + (((size_t)b * H + h) * N + n) * Dh, (size_t)Dh * sizeof(float));
}
