// hint: (N, H, Dh) before flattening, not (H, N, Dh)
/**
 * @file heads.c
 * @brief A wrong heads.c for exercise 05 (tests/wrong/): heads_merge() copies (B, H, N, Dh) as it is.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "attention/attention.h"

#include <stddef.h>
#include <string.h>

void heads_split(float *out, const float *x, int B, int N, int H, int Dh) {
    // x is (B, N, H·Dh), out is (B, H, N, Dh)
    const int D = H * Dh;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int n = 0; n < N; n++)
                memcpy(out + (((size_t)b * H + h) * N + n) * Dh,
                       x + ((size_t)b * N + n) * D + (size_t)h * Dh, (size_t)Dh * sizeof(float));
}

void heads_merge(float *out, const float *x, int B, int N, int H, int Dh) {
    // x is (B, H, N, Dh), out is (B, N, H·Dh)
    // WRONG: a reshape without the transpose(1, 2): flattens (H, N, Dh), not (N, H, Dh)
    memcpy(out, x, sizeof(float) * (size_t)B * H * N * Dh);
}
