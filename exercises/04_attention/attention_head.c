/**
 * @file attention_head.c
 * @brief Exercise 04: one attention head, start to finish (lib/attention/attention.h), your version.
 *
 * Shape legend: N tokens, Dh the width of the head (of every query, key and value).
 *
 * Fill in the four TODOs. `make exercise CH=04` grades them; README.md says
 * what the tests check, what you may call and what the hints mean. Until the
 * TODOs are done out and probs are all zeros, so the tests fail without
 * crashing.
 */
#include "attention/attention.h"
#include "ops/ops.h"

#include <stddef.h>
#include <string.h>

void attention(float *out, float *probs, const float *q, const float *k, const float *v,
               const AttentionOptions *opt, int N, int Dh) {
    // q, k, v are (N, Dh), probs is (N, N), out is (N, Dh): one sequence, one head
    //
    //   out = softmax(s · Q·Kᵀ + mask + key_padding_mask) · V
    //
    // Work in probs: it holds the scores, then the scaled scores, then the probabilities.
    // In memory (row-major): q[i][d] is q[i·Dh + d], probs[i][j] is probs[i·N + j].

    // TODO 1, the scores (chapter 01): every query i against every key j,
    //   probs[i][j] = q_i · k_j = sum over d < Dh of q[i][d]·k[j][d]
    //   Row i is query i; q_i and k_j are rows of q and k, so dot(q + i·Dh, k + j·Dh, Dh).

    // TODO 2, the scale and the masks (chapter 02), before the softmax:
    //   probs[i][j] = s · probs[i][j] + mask[i][j] + key_padding_mask[j]
    //   s = attention_scale(opt, Dh): opt->scale when it is non-zero, else 1/√Dh.
    //   mask is opt->mask (N, N), key_padding_mask is opt->key_padding_mask, (1, N) here,
    //   the same for every query i; each only when opt and it are not NULL. 0 keeps a
    //   score, -inf hides it: after the softmax a hidden key gets exactly 0.

    // TODO 3, the softmax (chapter 03) of each row i, over the keys j: every row of probs
    //   sums to 1 (or is all 0 when every key is hidden). softmax(probs, probs, N, N).

    // TODO 4, the weighted sum of the values (chapter 04, section 3):
    //   out[i][d] = sum over j < N of probs[i][j] · v[j][d]      (N, N)·(N, Dh) → (N, Dh)
    memset(probs, 0, sizeof(float) * (size_t)N * N); // placeholder: delete it
    memset(out, 0, sizeof(float) * (size_t)N * Dh);  // placeholder: delete it
    (void)q, (void)k, (void)v, (void)opt;
}
