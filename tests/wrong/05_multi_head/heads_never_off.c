// hint: a head switched off (w->head_off[h]) still attends on the road that keeps the matrices
// also: the (N, N) matrices were computed with keep_matrices false and no listener
// mha_forward() written as exercise 05's skeleton once said: every head's
// (N, N) matrices, always. The chapter's tests pass; but a head switched off
// (w->head_off, PyTorch's head_mask) still attends, and an untraced pass
// writes the (N, N) buffers the online road leaves alone. The key runs the
// head_off and online tests for that.
/**
 * @file mha.c
 * @brief A wrong mha_forward(): no head switched off, no online road (see the first lines).
 */
#include "attention/attention.h"
#include "ops/ops.h"

#include <stddef.h>

void mha_forward(float *out, const float *x, const AttentionWeights *w,
                 const AttentionOptions *opt, MhaScratch *s, int B, int N, int D, int H,
                 const Tracer *tr) {
    // x is (B, N, D), out is (B, N, D); opt NULL: scale 1/√Dh, no mask.
    // Self-attention: q, k and v are all projections of the same tokens x.
    const int Dh = D / H, G = B * H; // G independent (N, Dh) heads

    // q, k, v: x·Wᵀ + b (B·N rows, D → D) into s->flat, then split (B, N, D) → (B, H, N, Dh)
    ops_linear(s->flat, x, w->q_w, w->q_b, B * N, D, D);
    heads_split(s->q, s->flat, B, N, H, Dh);
    trace_emit(tr, "q", s->q, 4, B, H, N, Dh);
    ops_linear(s->flat, x, w->k_w, w->k_b, B * N, D, D);
    heads_split(s->k, s->flat, B, N, H, Dh);
    trace_emit(tr, "k", s->k, 4, B, H, N, Dh);
    ops_linear(s->flat, x, w->v_w, w->v_b, B * N, D, D);
    heads_split(s->v, s->flat, B, N, H, Dh);
    trace_emit(tr, "v", s->v, 4, B, H, N, Dh);

    // written as exercise 05's skeleton once said: always the (N, N) matrices, and
    // no head ever switched off
    attention_scores(s->scores, s->q, s->k, G, N, Dh);
    trace_emit(tr, "scores", s->scores, 4, B, H, N, N);
    attention_scale_mask(s->scaled, s->scores, opt, B, H, N, Dh);
    trace_emit(tr, "scaled", s->scaled, 4, B, H, N, N);
    softmax(s->probs, s->scaled, G * N, N);
    trace_emit(tr, "probs", s->probs, 4, B, H, N, N);
    attention_context(s->heads, s->probs, s->v, G, N, Dh);

    // context: the heads side by side again, (B, H, N, Dh) → (B, N, D)
    heads_merge(s->context, s->heads, B, N, H, Dh);
    trace_emit(tr, "context", s->context, 3, B, N, D);

    // proj: the output projection mixes the heads
    ops_linear(out, s->context, w->proj_w, w->proj_b, B * N, D, D);
    trace_emit(tr, "proj", out, 3, B, N, D);
}
