/**
 * @file mha.c
 * @brief Exercise 05's model answer: mha_forward(), multi-head self-attention
 *        (timm's `Attention`), written from the skeleton.
 *
 * Shape legend: B sequences, N tokens, D width, H heads, Dh = D/H per head.
 *
 * make answers-check links it in place of lib's and runs every suite.
 */
#include "attention/attention.h"
#include "ops/ops.h"

#include <stddef.h>
#include <string.h>

void mha_forward(float *out, const float *x, const AttentionWeights *w,
                 const AttentionOptions *opt, MhaScratch *s, int B, int N, int D, int H,
                 const Tracer *tr) {
    // x is (B, N, D), out is (B, N, D); opt NULL: scale 1/√Dh, no mask.
    // Self-attention: q, k and v are all projections of the same tokens x.
    const int Dh = D / H, G = B * H; // G independent (N, Dh) heads

    // q, k, v: x·Wᵀ + b (B·N rows, D → D) into s->flat, then split (B, N, D) → (B, H, N, Dh).
    // ops_linear_lowp() is the skeleton's ops_linear() but for a weight given a bf16 or
    // int8 copy (chapter 15, w->q_lowp …; NULL: ops_linear() itself), so the model's
    // smaller numbers pass through this answer too.
    ops_linear_lowp(s->flat, x, w->q_w, w->q_lowp, w->q_b, B * N, D, D);
    heads_split(s->q, s->flat, B, N, H, Dh);
    trace_emit(tr, "q", s->q, 4, B, H, N, Dh);
    ops_linear_lowp(s->flat, x, w->k_w, w->k_lowp, w->k_b, B * N, D, D);
    heads_split(s->k, s->flat, B, N, H, Dh);
    trace_emit(tr, "k", s->k, 4, B, H, N, Dh);
    ops_linear_lowp(s->flat, x, w->v_w, w->v_lowp, w->v_b, B * N, D, D);
    heads_split(s->v, s->flat, B, N, H, Dh);
    trace_emit(tr, "v", s->v, 4, B, H, N, Dh);

    if (s->keep_matrices || trace_active(tr)) {
        // the road that keeps the (N, N) matrices: the trace and the backward read them
        // scores = q·kᵀ per head, (N, Dh)·(Dh, N) → (N, N)
        attention_scores(s->scores, s->q, s->k, G, N, Dh);
        trace_emit(tr, "scores", s->scores, 4, B, H, N, N);
        // scaled = scale·scores + masks; opt carries both (NULL: 1/√Dh, no mask)
        attention_scale_mask(s->scaled, s->scores, opt, B, H, N, Dh);
        trace_emit(tr, "scaled", s->scaled, 4, B, H, N, N);
        // probs = softmax of each row of N keys, B·H·N rows in all; a head switched off
        // looks nowhere: its (N, N) block is 0 in every sequence
        softmax(s->probs, s->scaled, G * N, N);
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++)
                if (w->head_off && w->head_off[h])
                    memset(s->probs + ((size_t)b * H + h) * N * N, 0, sizeof(float) * N * N);
        trace_emit(tr, "probs", s->probs, 4, B, H, N, N);
        // each head's probs·V, (N, N)·(N, Dh) → (N, Dh)
        attention_context(s->heads, s->probs, s->v, G, N, Dh);
    } else {
        // nobody reads scores, scaled or probs: the same heads online, those buffers untouched;
        // a head switched off gets a context of 0, as its probabilities of 0 would give
        attention_online(s->heads, s->q, s->k, s->v, opt, B, H, N, Dh, MHA_KEY_BLOCK);
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++)
                if (w->head_off && w->head_off[h])
                    memset(s->heads + ((size_t)b * H + h) * N * Dh, 0, sizeof(float) * N * Dh);
    }

    // context: the heads side by side again, (B, H, N, Dh) → (B, N, D)
    heads_merge(s->context, s->heads, B, N, H, Dh);
    trace_emit(tr, "context", s->context, 3, B, N, D);

    // proj: the output projection mixes the heads
    ops_linear_lowp(out, s->context, w->proj_w, w->proj_lowp, w->proj_b, B * N, D, D);
    trace_emit(tr, "proj", out, 3, B, N, D);
}
