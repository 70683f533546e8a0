/**
 * @file mha.c
 * @brief Multi-head self-attention (timm's `Attention`), built from the pieces
 *        in attention.c and heads.c, emitting every intermediate.
 *
 * Two roads through the middle: the one that keeps scores, scaled and probs
 * (timm's lines, each (B, H, N, N) matrix written and traced: what the viewer,
 * the trace and the backward read), and, when nobody will read them,
 * attention_online(), which computes the same context without forming them.
 */
#include "ops/ops.h"
#include "attention/attention.h"

#include <stddef.h>
#include <string.h>

// One projection (x·Wᵀ + b), then its width split into heads: (B,N,D) → (B,H,N,Dh).
// lw: w's copy in bf16 or int8 (chapter 15), or NULL for w in float.
// [project_heads]
static void project_heads(float *out, float *flat, const float *x, const float *w,
                          const LowpWeight *lw, const float *b, int B, int N, int D, int H) {
    ops_linear_lowp(flat, x, w, lw, b, B * N, D, D);
    heads_split(out, flat, B, N, H, D / H);
}
// [project_heads]

// The heads head_off switches off look nowhere: their probabilities, (N, N) for
// every sequence, become 0 (Hugging Face's `attention_probs * head_mask`, a 0/1 mask).
static void switch_heads_off(float *probs, const bool *head_off, int B, int H, int N) {
    // probs is (B, H, N, N), head_off (H) or NULL (every head on)
    if (!head_off) return;
    const size_t nn = (size_t)N * N;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            if (head_off[h]) memset(probs + ((size_t)b * H + h) * nn, 0, nn * sizeof *probs);
}

// A switched-off head's context, (N, Dh) for every sequence, is 0: what its
// probabilities of 0 would give (heads is (B, H, N, Dh)).
static void zero_heads_off(float *heads, const bool *head_off, int B, int H, int N, int Dh) {
    if (!head_off) return;
    const size_t nd = (size_t)N * Dh;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            if (head_off[h]) memset(heads + ((size_t)b * H + h) * nd, 0, nd * sizeof *heads);
}

// scores, scaled, probs and the heads' context, every matrix kept and traced.
// [attention_keeping_matrices]
static void attention_keeping_matrices(MhaScratch *s, const AttentionWeights *w,
                                       const AttentionOptions *opt, int B, int N, int H, int Dh,
                                       const Tracer *tr) {
    const int G = B * H;
    // attn = (q @ k.transpose(-2, -1)) * self.scale, plus the masks if any
    attention_scores(s->scores, s->q, s->k, G, N, Dh);
    trace_emit(tr, "scores", s->scores, 4, B, H, N, N);
    attention_scale_mask(s->scaled, s->scores, opt, B, H, N, Dh);
    trace_emit(tr, "scaled", s->scaled, 4, B, H, N, N);

    // attn = attn.softmax(dim=-1); attn_drop is the identity at inference
#pragma omp parallel for schedule(static) if (G > 1)
    for (int g = 0; g < G; g++) // the rows of each head, one thread per head
        softmax(s->probs + (size_t)g * N * N, s->scaled + (size_t)g * N * N, N, N);
    // attn = attn * head_mask (Hugging Face's ViTSelfAttention): heads switched off give 0
    switch_heads_off(s->probs, w->head_off, B, H, N);
    trace_emit(tr, "probs", s->probs, 4, B, H, N, N);

    // x = (attn @ v): each head's rows of probabilities weigh its values
    attention_context(s->heads, s->probs, s->v, G, N, Dh);
}
// [attention_keeping_matrices]

// [mha_forward]
void mha_forward(float *out, const float *x, const AttentionWeights *w,
                 const AttentionOptions *opt, MhaScratch *s, int B, int N, int D, int H,
                 const Tracer *tr) {
    // x is (B, N, D), out is (B, N, D); opt NULL: scale 1/√Dh, no mask.
    // Self-attention: q, k and v are all projections of the same tokens x.
    const int Dh = D / H;

    // qkv = self.qkv(x).reshape(B, N, 3, H, Dh).permute(2, 0, 3, 1, 4)
    project_heads(s->q, s->flat, x, w->q_w, w->q_lowp, w->q_b, B, N, D, H);
    trace_emit(tr, "q", s->q, 4, B, H, N, Dh);
    project_heads(s->k, s->flat, x, w->k_w, w->k_lowp, w->k_b, B, N, D, H);
    trace_emit(tr, "k", s->k, 4, B, H, N, Dh);
    project_heads(s->v, s->flat, x, w->v_w, w->v_lowp, w->v_b, B, N, D, H);
    trace_emit(tr, "v", s->v, 4, B, H, N, Dh);

    if (s->keep_matrices || (tr && tr->fn)) {
        attention_keeping_matrices(s, w, opt, B, N, H, Dh, tr);
    } else {
        // nobody reads the (N, N) matrices: the same sums, online, without them
        attention_online(s->heads, s->q, s->k, s->v, opt, B, H, N, Dh, MHA_KEY_BLOCK);
        zero_heads_off(s->heads, w->head_off, B, H, N, Dh);
    }
    // x = (attn @ v).transpose(1, 2).reshape(B, N, D)
    heads_merge(s->context, s->heads, B, N, H, Dh);
    trace_emit(tr, "context", s->context, 3, B, N, D);

    // x = self.proj(x); proj_drop is the identity at inference
    ops_linear_lowp(out, s->context, w->proj_w, w->proj_lowp, w->proj_b, B * N, D, D);
    trace_emit(tr, "proj", out, 3, B, N, D);
}
// [mha_forward]
