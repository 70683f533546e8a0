/**
 * @file block_backward.c
 * @brief One pre-norm encoder block backwards (block.h): vit_block_forward()'s
 *        lines undone from the last, the gradient flowing through both residuals.
 *
 * Shape legend: B batch, N tokens, D width, M MLP width.
 *
 * The forward (block.c) is two residual sub-layers:
 *   resid1 = x + attn(norm1(x))
 *   out    = resid1 + fc2(gelu(fc1(norm2(resid1))))
 * An add y = a + b passes its gradient to a and to b unchanged, so d(resid1)
 * is d(out) straight down the stream plus what comes back through the MLP,
 * and d(x) is d(resid1) plus what comes back through the attention. The
 * stream is why deep networks train: every block's input receives the
 * output's gradient undiminished, whatever the sub-layers do to it.
 *
 * What the backward reads of the forward's buffers: norm1 (for q, k, v's dW),
 * attention's q, k, v, probs and context, resid1 (LayerNorm 2's input), norm2
 * (fc1's dW), fc1 (GELU's input) and gelu (fc2's dW); and the block's input x
 * (LayerNorm 1's). LayerNorm keeps no mean or variance: layernorm_backward()
 * recomputes them from its input.
 *
 * Deliberately omitted: dropout and drop-path (stochastic depth), layer scale.
 */
#include "ops/ops.h"
#include "model/block.h"

#include <string.h>

static void zero(float *p, size_t n) { memset(p, 0, n * sizeof(float)); }

void vit_block_backward(float *dx, const VitBlockGrads *dw, const float *dout, const float *x,
                        const VitBlockWeights *w, const VitConfig *cfg, const VitBlockActs *a,
                        VitBlockActs *g, int B, const Tracer *tr) {
    // dout, x and dx are (B, N, D); the MLP's gradients are (B, N, M)
    const int N = vit_num_tokens(cfg), D = cfg->dim, M = cfg->mlp_dim, BN = B * N;
    const size_t bnd = (size_t)BN * D, bnm = (size_t)BN * M;
    // listeners may read, never write, what they are shown
    trace_emit(tr, "out", dout, 3, B, N, D);

    // [block_backward]
    // x = x + self.mlp(self.norm2(x)): the add hands d(out) to the MLP's fc2 ...
    trace_emit(tr, "mlp.fc2", dout, 3, B, N, D);
    zero(g->gelu, bnm);
    ops_linear_backward(g->gelu, dw->fc2_w, dw->fc2_b, dout, a->gelu, w->fc2_w, BN, M, D);
    trace_emit(tr, "mlp.gelu", g->gelu, 3, B, N, M);
    zero(g->fc1, bnm);
    gelu_backward(g->fc1, g->gelu, a->fc1, bnm);
    trace_emit(tr, "mlp.fc1", g->fc1, 3, B, N, M);
    zero(g->norm2, bnd);
    ops_linear_backward(g->norm2, dw->fc1_w, dw->fc1_b, g->fc1, a->norm2, w->fc1_w, BN, D, M);
    trace_emit(tr, "norm2", g->norm2, 3, B, N, D);
    // ... and to resid1 unchanged, where the MLP's share comes back through LayerNorm 2
    memcpy(g->resid1, dout, bnd * sizeof(float));
    layernorm_backward(g->resid1, dw->norm2_w, dw->norm2_b, g->norm2,
                       a->resid1, w->norm2_w, BN, D, cfg->ln_eps);
    trace_emit(tr, "resid1", g->resid1, 3, B, N, D);

    // x = x + self.attn(self.norm1(x)): the add hands d(resid1) to the attention ...
    char attn_prefix[64];
    const Tracer attn_tr = trace_part(tr, attn_prefix, sizeof attn_prefix, "attn.");
    zero(g->norm1, bnd);
    mha_backward(g->norm1, &dw->attn, g->resid1, a->norm1, &w->attn, NULL, &a->mha, &g->mha, B,
                 N, D, cfg->heads, &attn_tr);
    trace_emit(tr, "norm1", g->norm1, 3, B, N, D);
    // ... and to x unchanged, where the attention's share comes back through LayerNorm 1
    ops_add(dx, dx, g->resid1, bnd);
    layernorm_backward(dx, dw->norm1_w, dw->norm1_b, g->norm1, x, w->norm1_w, BN, D, cfg->ln_eps);
    // [block_backward]
}
