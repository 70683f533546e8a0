/**
 * @file attention_online.c
 * @brief Attention without the N × N matrix: the softmax computed online, a
 *        block of keys at a time (attention.h, attention_online()).
 *
 * Shape legend: B sequences, H heads, N tokens, Dh = D/H.
 *
 * For one query row, softmax(s)·V needs the row's maximum (for a stable
 * exponent) and its sum before any weight is known. The online form keeps a
 * running maximum m, a running sum l and a running weighted sum of values a;
 * each new block of keys with scores s_j moves the maximum to m' and rescales
 * what came before:
 *
 *     m' = max(m, max_j s_j),  c = exp(m − m'),
 *     l' = c·l + Σ_j exp(s_j − m'),  a' = c·a + Σ_j exp(s_j − m')·v_j,
 *
 * and at the end the row's output is a / l. This is exact, not an
 * approximation (the "memory-efficient attention" of Rabe & Staats, 2021;
 * FlashAttention's inner loop): only the arithmetic's order differs from
 * softmax() then the product with V. Memory per query: one block of scores and
 * Dh accumulators, instead of a whole row of the N × N matrix for every query.
 *
 * Deliberately omitted: the backward (it would recompute the blocks from the
 * row's m and l, as FlashAttention's does); the model's forward still takes the
 * path that keeps the probabilities, which the trace and the backward read.
 */
#include "attention.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

// Query row i of sequence b, one head: its scores against keys j0 … j1−1,
// scaled and masked as attention_scale_mask() does.
static void block_scores(float *s, const float *qi, const float *k, int j0, int j1, int Dh,
                         float scale, const float *mask_row, const float *pad_row) {
    for (int j = j0; j < j1; j++) {
        const float *kj = k + (size_t)j * Dh;
        float dot = 0;
        for (int d = 0; d < Dh; d++) dot += qi[d] * kj[d];
        float v = scale * dot;
        if (mask_row) v += mask_row[j];
        if (pad_row) v += pad_row[j];
        s[j - j0] = v;
    }
}

// One query row through every block of keys: out (Dh) = softmax(scores) · V.
static void online_row(float *out, const float *qi, const float *k, const float *v, int N, int Dh,
                       float scale, const float *mask_row, const float *pad_row, int key_block,
                       float *s, double *acc) {
    double m = -INFINITY, l = 0;
    bool broken = false; // a NaN or +inf score: the row is meaningless, as softmax() says
    memset(acc, 0, (size_t)Dh * sizeof *acc);
    for (int j0 = 0; j0 < N; j0 += key_block) {
        const int j1 = j0 + key_block < N ? j0 + key_block : N;
        block_scores(s, qi, k, j0, j1, Dh, scale, mask_row, pad_row);
        double block_max = -INFINITY;
        for (int j = 0; j < j1 - j0; j++) {
            if (isnan(s[j]) || s[j] == INFINITY) broken = true;
            else if (s[j] > block_max) block_max = s[j];
        }
        if (broken || block_max == -INFINITY) continue; // all hidden so far: nothing to add
        const double m_new = block_max > m ? block_max : m;
        const double c = exp(m - m_new); // exp(−inf) = 0 for the first block
        l *= c;
        for (int d = 0; d < Dh; d++) acc[d] *= c;
        for (int j = j0; j < j1; j++) {
            const double p = exp((double)s[j - j0] - m_new); // ≤ 1: cannot overflow
            l += p;
            const float *vj = v + (size_t)j * Dh;
            for (int d = 0; d < Dh; d++) acc[d] += p * vj[d];
        }
        m = m_new;
    }
    for (int d = 0; d < Dh; d++)
        out[d] = broken ? NAN : l > 0 ? (float)(acc[d] / l) : 0.0f; // fully hidden: 0, as softmax()
}

void attention_online(float *out, const float *q, const float *k, const float *v,
                      const AttentionOptions *opt, int B, int H, int N, int Dh, int key_block) {
    // q, k, v, out are (B, H, N, Dh); key_block ≥ 1 keys at a time (N or more: one block)
    const float scale = attention_scale(opt, Dh);
    const int G = B * H, Kb = key_block < 1 ? 1 : key_block < N ? key_block : N;
#pragma omp parallel for schedule(static) if (G > 1)
    for (int g = 0; g < G; g++) { // the heads are independent: one thread each
        const int b = g / H;
        const size_t at = (size_t)g * N * Dh;
        float *s = malloc((size_t)Kb * sizeof *s);
        double *acc = malloc((size_t)Dh * sizeof *acc);
        if (!s || !acc) abort(); // a few kB; vit_malloc()'s policy without its message
        for (int i = 0; i < N; i++)
            online_row(out + at + (size_t)i * Dh, q + at + (size_t)i * Dh, k + at, v + at, N, Dh,
                       scale, opt && opt->mask ? opt->mask + (size_t)i * N : NULL,
                       opt && opt->key_padding_mask ? opt->key_padding_mask + (size_t)b * N : NULL,
                       Kb, s, acc);
        free(s);
        free(acc);
    }
}
