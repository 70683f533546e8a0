/**
 * @file block.c
 * @brief One pre-norm transformer encoder block, alone in its file so a
 *        student's version can replace it.
 *
 * Shape legend: B batch, N tokens, D width, M MLP width (block.h).
 */
#include "model/block.h"
#include "ops/ops.h"

#include <stdio.h>

// [vit_block_forward]
void vit_block_forward(float *out, const float *x, const VitBlockWeights *w,
                       const VitConfig *cfg, VitBlockActs *a, int B, const Tracer *tr) {
    // x is (B, N, D), out is (B, N, D); the MLP is D → M → D
    const int N = vit_num_tokens(cfg), D = cfg->dim, M = cfg->mlp_dim, BN = B * N;
    const size_t bnd = (size_t)BN * D;
    // nobody watches and no backward will read the buffers: the same sums in
    // fewer passes over memory (block_fused.c)
    if (vit_block_fusable(a, tr)) {
        vit_block_forward_fused(out, x, w, cfg, a, B);
        return;
    }

    // x = x + self.attn(self.norm1(x))
    layernorm(a->norm1, x, w->norm1_w, w->norm1_b, BN, D, cfg->ln_eps);
    trace_emit(tr, "norm1", a->norm1, 3, B, N, D);
    char attn_prefix[64];
    const Tracer attn_tr = trace_part(tr, attn_prefix, sizeof attn_prefix, "attn.");
    mha_forward(a->attn, a->norm1, &w->attn, NULL, &a->mha, B, N, D, cfg->heads, &attn_tr);
    ops_add(a->resid1, x, a->attn, bnd);
    trace_emit(tr, "resid1", a->resid1, 3, B, N, D);

    // x = x + self.mlp(self.norm2(x)), mlp = fc2(gelu(fc1(·)))
    layernorm(a->norm2, a->resid1, w->norm2_w, w->norm2_b, BN, D, cfg->ln_eps);
    trace_emit(tr, "norm2", a->norm2, 3, B, N, D);
    ops_linear_lowp(a->fc1, a->norm2, w->fc1_w, w->fc1_lowp, w->fc1_b, BN, D, M);
    trace_emit(tr, "mlp.fc1", a->fc1, 3, B, N, M);
    gelu(a->gelu, a->fc1, (size_t)BN * M);
    trace_emit(tr, "mlp.gelu", a->gelu, 3, B, N, M);
    ops_linear_lowp(a->fc2, a->gelu, w->fc2_w, w->fc2_lowp, w->fc2_b, BN, M, D);
    trace_emit(tr, "mlp.fc2", a->fc2, 3, B, N, D);
    ops_add(out, a->resid1, a->fc2, bnd);
    trace_emit(tr, "out", out, 3, B, N, D);
}
// [vit_block_forward]
