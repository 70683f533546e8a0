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
 * The step itself is online_softmax_block() (online_softmax.c). Here a block
 * of queries meets a block of keys at a time, so both products are matrix
 * products: S = Q_b·K_bᵀ (rows × keys) and acc += W·V_b, where W holds the
 * block's weights; a thread keeps one S, one acc and one state per query row.
 *
 * Deliberately omitted: the backward (it would recompute the blocks from the
 * row's m and l, as FlashAttention's does), so training and a trace that asks
 * for the probabilities take the path that keeps them.
 */
#include "attention/attention.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "gemm/gemm.h"

enum { QUERY_BLOCK = 64 }; // query rows a thread takes at once

/** One thread's working room: a block of scores, outputs and row states. */
typedef struct {
    float *s;         // (QUERY_BLOCK, key_block) scores, then weights
    float *acc;       // (QUERY_BLOCK, Dh) running Σ weight·v
    OnlineSoftmax *st; // (QUERY_BLOCK)
} OnlineScratch;

// Scale and mask a block of scores as attention_scale_mask() does: s is
// (rows, cols), for queries i0 … and keys j0 … of a sequence whose (N, N)
// mask row i starts at mask + i·N and whose key-padding row is pad.
static void scale_mask_block(float *s, int rows, int cols, float scale, const float *mask,
                             const float *pad, int i0, int j0, int N) {
    for (int r = 0; r < rows; r++) {
        float *sr = s + (size_t)r * cols;
        const float *mr = mask ? mask + (size_t)(i0 + r) * N + j0 : NULL;
        for (int c = 0; c < cols; c++) {
            float x = scale * sr[c];
            if (mr) x += mr[c];
            if (pad) x += pad[j0 + c];
            sr[c] = x;
        }
    }
}

// out (rows, Dh) for queries q (rows, Dh) of one head against all N keys.
// [online_query_block]
static void online_query_block(float *out, const float *q, const float *k, const float *v,
                               int rows, int N, int Dh, int Kb, float scale, const float *mask,
                               const float *pad, int i0, OnlineScratch *w) {
    memset(w->acc, 0, (size_t)rows * Dh * sizeof *w->acc);
    for (int r = 0; r < rows; r++) w->st[r] = ONLINE_SOFTMAX_START;
    for (int j0 = 0; j0 < N; j0 += Kb) {
        const int cols = j0 + Kb < N ? Kb : N - j0;
        matmul_bt(w->s, q, k + (size_t)j0 * Dh, rows, Dh, cols); // S = Q_b·K_bᵀ
        scale_mask_block(w->s, rows, cols, scale, mask, pad, i0, j0, N);
        for (int r = 0; r < rows; r++) {
            const float c = online_softmax_block(&w->st[r], w->s + (size_t)r * cols, cols);
            if (c != 1.0f)
                for (int d = 0; d < Dh; d++) w->acc[(size_t)r * Dh + d] *= c;
        }
        matmul_acc(w->acc, w->s, v + (size_t)j0 * Dh, rows, cols, Dh); // acc += W·V_b
    }
    for (int r = 0; r < rows; r++) { // out = acc / l; a hidden row 0, a broken one NaN
        const float l = w->st[r].sum;
        for (int d = 0; d < Dh; d++)
            out[(size_t)r * Dh + d] = isnan(l) ? NAN : l > 0 ? w->acc[(size_t)r * Dh + d] / l : 0.0f;
    }
}
// [online_query_block]

// [attention_online]
void attention_online(float *out, const float *q, const float *k, const float *v,
                      const AttentionOptions *opt, int B, int H, int N, int Dh, int key_block) {
    // q, k, v, out are (B, H, N, Dh); key_block ≥ 1 keys at a time (N or more: one block)
    if (B < 1 || H < 1 || N < 1 || Dh < 1) return;
    const float scale = attention_scale(opt, Dh);
    const int Kb = key_block < 1 ? 1 : key_block < N ? key_block : N;
    const int query_blocks = (N + QUERY_BLOCK - 1) / QUERY_BLOCK, tasks = B * H * query_blocks;
    const float *mask = opt ? opt->mask : NULL, *pad = opt ? opt->key_padding_mask : NULL;
#pragma omp parallel if (tasks > 1)
    {
        OnlineScratch w = {vit_malloc((size_t)QUERY_BLOCK * Kb * sizeof *w.s),
                           vit_malloc((size_t)QUERY_BLOCK * Dh * sizeof *w.acc),
                           vit_malloc(QUERY_BLOCK * sizeof *w.st)};
#pragma omp for schedule(static)
        for (int t = 0; t < tasks; t++) { // (head, block of queries): independent of each other
            const int g = t / query_blocks, b = g / H, i0 = (t % query_blocks) * QUERY_BLOCK;
            const int rows = i0 + QUERY_BLOCK < N ? QUERY_BLOCK : N - i0;
            const size_t head = (size_t)g * N * Dh, at = head + (size_t)i0 * Dh;
            online_query_block(out + at, q + at, k + head, v + head, rows, N, Dh, Kb, scale, mask,
                               pad ? pad + (size_t)b * N : NULL, i0, &w);
        }
        free(w.s);
        free(w.acc);
        free(w.st);
    }
}
// [attention_online]
