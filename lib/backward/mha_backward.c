/**
 * @file mha_backward.c
 * @brief Multi-head self-attention backwards (attention.h): mha_forward()'s
 *        steps undone in reverse order, each with the backward of its piece.
 *
 * Shape legend: B batch, N tokens, D width, H heads, Dh = D/H, G = B·H heads in all.
 *
 * The forward (mha.c), and what each line's backward needs:
 *   q, k, v = split(x·W_qᵀ + b_q), …    x (for dW) and W (for dx)
 *   S  = Q·Kᵀ                          Q and K
 *   S' = s·S + mask                    the scale s only
 *   P  = softmax(S')                   P only (not S')
 *   O  = P·V, context = merge(O)       P and V
 *   out = context·W_oᵀ + b_o           context (for dW) and W_o (for dx)
 * so the forward's scores, scaled, heads and flat are never read again.
 * Every gradient buffer in g is zeroed before its backward adds to it.
 *
 * A head switched off (AttentionWeights::head_off) needs no code of its own
 * here: the forward stored its P as 0 (P = m·softmax(S') with m = 0), and the
 * backward reads only that stored P, so dV = Pᵀ·dO is 0 and dS' = P ⊙ (dP −
 * Σ P·dP) is 0, hence dS, dQ, dK and its rows of dW_q, dW_k, dW_v are 0:
 * autograd's gradient for a 0/1 gate exactly (it multiplies d(softmax) by m).
 * dP itself, the gradient of the gated probabilities, is dO·Vᵀ as for any head.
 *
 * Deliberately omitted: dropout (attn_drop, proj_drop), the fused ("flash")
 * backward that recomputes P block by block instead of reading it.
 */
#include "ops/ops.h"
#include "attention/attention.h"

#include <string.h>

static void zero(float *p, size_t n) { memset(p, 0, n * sizeof(float)); }

// Backward of project_heads() in mha.c: the heads merged back to (B, N, D),
// then the projection's backward, adding its input's gradient to dx.
static void project_heads_backward(float *dx, float *dw, float *db, float *dflat,
                                   const float *dheads, const float *x, const float *w, int B,
                                   int N, int D, int H) {
    zero(dflat, (size_t)B * N * D);
    heads_split_backward(dflat, dheads, B, N, H, D / H);
    ops_linear_backward(dx, dw, db, dflat, x, w, B * N, D, D);
}

void mha_backward(float *dx, const AttentionGrads *dw, const float *dout, const float *x,
                  const AttentionWeights *w, const AttentionOptions *opt, const MhaScratch *s,
                  MhaScratch *g, int B, int N, int D, int H, const Tracer *tr) {
    // dout, x and dx are (B, N, D); s holds the forward's q, k, v, probs, context
    const int Dh = D / H, G = B * H;
    const size_t bnd = (size_t)B * N * D, bhnn = (size_t)G * N * N;
    // listeners may read, never write, what they are shown
    trace_emit(tr, "proj", dout, 3, B, N, D);

    // x = self.proj(x): dcontext = dout·W_o, dW_o += doutᵀ·context, db_o += Σ dout
    zero(g->context, bnd);
    ops_linear_backward(g->context, dw->proj_w, dw->proj_b, dout, s->context,
                        w->proj_w, B * N, D, D);
    trace_emit(tr, "context", g->context, 3, B, N, D);

    // x = (attn @ v).transpose(1, 2).reshape(B, N, D): the merge undone (a split),
    // then O = P·V gives dP = dO·Vᵀ and dV = Pᵀ·dO
    zero(g->heads, bnd);
    heads_merge_backward(g->heads, g->context, B, N, H, Dh);
    zero(g->probs, bhnn), zero(g->v, bnd);
    attention_context_backward(g->probs, g->v, g->heads, s->probs, s->v, G, N, Dh);
    trace_emit(tr, "probs", g->probs, 4, B, H, N, N);

    // attn = attn.softmax(dim=-1): dS' = P ⊙ (dP − Σ P·dP), row by row; P is the
    // stored one, 0 for a head switched off, so such a head passes nothing back
    zero(g->scaled, bhnn);
#pragma omp parallel for schedule(static) if (G > 1)
    for (int h = 0; h < G; h++) { // the rows of each head, one thread per head
        const size_t off = (size_t)h * N * N;
        softmax_backward(g->scaled + off, g->probs + off, s->probs + off, N, N);
    }
    trace_emit(tr, "scaled", g->scaled, 4, B, H, N, N);

    // attn = (q @ k.transpose(-2, -1)) * self.scale: dS = s·dS' (a mask passes
    // nothing), then S = Q·Kᵀ gives dQ = dS·K and dK = dSᵀ·Q
    zero(g->scores, bhnn);
    attention_scale_mask_backward(g->scores, g->scaled, opt, B, H, N, Dh);
    trace_emit(tr, "scores", g->scores, 4, B, H, N, N);
    zero(g->q, bnd), zero(g->k, bnd);
    attention_scores_backward(g->q, g->k, g->scores, s->q, s->k, G, N, Dh);

    // qkv = self.qkv(x).reshape(B, N, 3, H, Dh).permute(2, 0, 3, 1, 4): v, k and q,
    // each back through its split and its third of the projection; the same x fed
    // all three, so dx collects all three
    trace_emit(tr, "v", g->v, 4, B, H, N, Dh);
    project_heads_backward(dx, dw->v_w, dw->v_b, g->flat, g->v, x, w->v_w, B, N, D, H);
    trace_emit(tr, "k", g->k, 4, B, H, N, Dh);
    project_heads_backward(dx, dw->k_w, dw->k_b, g->flat, g->k, x, w->k_w, B, N, D, H);
    trace_emit(tr, "q", g->q, 4, B, H, N, Dh);
    project_heads_backward(dx, dw->q_w, dw->q_b, g->flat, g->q, x, w->q_w, B, N, D, H);
}
