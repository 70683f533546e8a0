/**
 * @file scale_mask.c
 * @brief Exercise 02: scores × the scale, plus the masks (lib/attention/attention.h), your version.
 *
 * Shape legend: B sequences, H heads, N tokens, Dh = D/H the width of one head.
 *
 * Fill in the TODO. `make exercise CH=02` grades it; README.md says what the
 * tests check and what the hints mean. Until the TODO is done `scaled` is
 * all zeros, so the tests fail without crashing.
 */
#include "attention/attention.h"

#include <stddef.h>
#include <string.h>

void attention_scale_mask(float *scaled, const float *scores, const AttentionOptions *opt, int B,
                          int H, int N, int Dh) {
    // scores and scaled are (B, H, N, N); opt->mask is (N, N), opt->key_padding_mask (B, N).

    // TODO: for every sequence b < B, head h < H, query i < N and key j < N:
    //
    //   scaled[b][h][i][j] = s · scores[b][h][i][j] + mask[i][j] + key_padding_mask[b][j]
    //
    //   - s, the scale: opt->scale when opt is not NULL and opt->scale is not 0 (timm's
    //     qk_scale), otherwise 1/√Dh (chapter 02: it brings unit-variance scores back to
    //     variance 1). lib's attention_scale(opt, Dh) returns exactly that; call it.
    //   - mask (N, N) is opt->mask, shared by every sequence and head; add it only when opt
    //     and opt->mask are not NULL. 0 keeps a score, -inf hides it.
    //   - key_padding_mask (B, N) is opt->key_padding_mask: row b belongs to sequence b and
    //     is added to every query row i of every head h; j is the key. Only when not NULL.
    //   - In memory (row-major): [b][h][i][j] is ((b·H + h)·N + i)·N + j, mask[i][j] is
    //     i·N + j, key_padding_mask[b][j] is b·N + j. Use size_t for the offsets.
    //   - scaled may be the same pointer as scores (mha_forward() scales in place).
    memset(scaled, 0, sizeof(float) * (size_t)B * H * N * N); // placeholder: delete it
    (void)scores, (void)opt, (void)Dh;
}
