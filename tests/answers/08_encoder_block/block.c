/**
 * @file block.c
 * @brief Exercise 08's model answer: vit_block_forward(), one pre-norm encoder block,
 *        written from the skeleton.
 *
 * Shape legend: B images, N tokens, D width, H heads, M MLP width (4·D).
 *
 * make answers-check links it (with this folder's layernorm.c and gelu.c) in
 * place of lib's and runs every suite.
 */
#include "model/block.h"
#include "ops/ops.h"

#include <stdio.h>

void vit_block_forward(float *out, const float *x, const VitBlockWeights *w,
                       const VitConfig *cfg, VitBlockActs *a, int B, const Tracer *tr) {
    // x is (B, N, D), out is (B, N, D); the MLP is D → M → D
    const int N = vit_num_tokens(cfg), D = cfg->dim, M = cfg->mlp_dim, BN = B * N;
    const size_t bnd = (size_t)BN * D, bnm = (size_t)BN * M;
    // Every token is one row: LayerNorm, the linear layers and GELU treat the B·N rows
    // alike, so each is called once on all BN rows: this folder's layernorm() and gelu(),
    // lib's mha_forward(), ops_linear() and ops_add() (ops.h, attention.h).
    // ops_linear_lowp() is ops_linear() but for a weight given a bf16 or int8 copy
    // (chapter 15, w->fc1_lowp …; NULL: ops_linear() itself).

    // ---- timm: x = x + self.attn(self.norm1(x))

    // 1. norm1 = LayerNorm(x): B·N rows of D                      timm: self.norm1(x)
    layernorm(a->norm1, x, w->norm1_w, w->norm1_b, BN, D, cfg->ln_eps);
    trace_emit(tr, "norm1", a->norm1, 3, B, N, D);

    // 2. attn = MultiHeadAttention(norm1), chapter 05's, into a->attn (B, N, D): given.
    //    It hands attn.q, .k, .v, .scores, .scaled, .probs, .context, .proj to the trace.
    char attn_prefix[64];
    const Tracer attn_tr = trace_part(tr, attn_prefix, sizeof attn_prefix, "attn.");
    mha_forward(a->attn, a->norm1, &w->attn, NULL, &a->mha, B, N, D, cfg->heads, &attn_tr);

    // 3. resid1 = x + attn: the first residual, (B, N, D)        timm: x = x + ...
    ops_add(a->resid1, x, a->attn, bnd);
    trace_emit(tr, "resid1", a->resid1, 3, B, N, D);

    // ---- timm: x = x + self.mlp(self.norm2(x)), mlp = fc2(gelu(fc1(·)))

    // 4. norm2 = LayerNorm(resid1): the MLP sees the stream after attention, normalised
    layernorm(a->norm2, a->resid1, w->norm2_w, w->norm2_b, BN, D, cfg->ln_eps);
    trace_emit(tr, "norm2", a->norm2, 3, B, N, D);

    // 5. fc1 = norm2 · W1ᵀ + b1, W1 (M, D): (B·N, D) → (B·N, M)
    ops_linear_lowp(a->fc1, a->norm2, w->fc1_w, w->fc1_lowp, w->fc1_b, BN, D, M);
    trace_emit(tr, "mlp.fc1", a->fc1, 3, B, N, M);

    // 6. gelu = GELU(fc1), elementwise, (B·N, M)
    gelu(a->gelu, a->fc1, bnm);
    trace_emit(tr, "mlp.gelu", a->gelu, 3, B, N, M);

    // 7. fc2 = gelu · W2ᵀ + b2, W2 (D, M): (B·N, M) → (B·N, D)
    ops_linear_lowp(a->fc2, a->gelu, w->fc2_w, w->fc2_lowp, w->fc2_b, BN, M, D);
    trace_emit(tr, "mlp.fc2", a->fc2, 3, B, N, D);

    // 8. out = resid1 + fc2: the second residual, the block's result (B, N, D)
    ops_add(out, a->resid1, a->fc2, bnd);
    trace_emit(tr, "out", out, 3, B, N, D);
}
