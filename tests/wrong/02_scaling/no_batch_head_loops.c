// hint: 3 of the B*H = 4 (N, N) blocks of `scaled` were never written
/**
 * @file scale_mask.c
 * @brief A wrong scale_mask.c for exercise 02 (tests/wrong/): no loop over the sequences b and the heads h, so only block (0, 0) is scaled, as if scores were one (N, N) matrix.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "attention/attention.h"

#include <stddef.h>

void attention_scale_mask(float *scaled, const float *scores, const AttentionOptions *opt, int B,
                          int H, int N, int Dh) {
    // scores and scaled are (B, H, N, N); opt->mask is (N, N), opt->key_padding_mask (B, N).
    const float s = attention_scale(opt, Dh);
    const float *mask = opt ? opt->mask : NULL;
    const float *pad = opt ? opt->key_padding_mask : NULL;
    for (int i = 0; i < N; i++) // WRONG: for every b < B and h < H around these loops
        for (int j = 0; j < N; j++) {
            const size_t ij = (size_t)i * N + j;
            float v = scores[ij] * s;
            if (mask) v += mask[ij];
            if (pad) v += pad[j];
            scaled[ij] = v;
        }
    (void)B, (void)H;
}
