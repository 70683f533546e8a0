// hint: norm2 normalises x
/**
 * @file block.c
 * @brief A wrong block.c for exercise 08 (tests/wrong/): LayerNorm 2 of the block's input instead of resid1.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "model/block.h"
#include "ops/ops.h"

#include <stdio.h>

void vit_block_forward(float *out, const float *x, const VitBlockWeights *w,
                       const VitConfig *cfg, VitBlockActs *a, int B, const Tracer *tr) {
    // x is (B, N, D), out is (B, N, D); the MLP is D → M → D
    const int N = vit_num_tokens(cfg), D = cfg->dim, M = cfg->mlp_dim, BN = B * N;
    const size_t bnd = (size_t)BN * D;
    char attn_prefix[64];
    const Tracer attn_tr = trace_part(tr, attn_prefix, sizeof attn_prefix, "attn.");
    layernorm(a->norm1, x, w->norm1_w, w->norm1_b, BN, D, cfg->ln_eps);
    trace_emit(tr, "norm1", a->norm1, 3, B, N, D);
    mha_forward(a->attn, a->norm1, &w->attn, NULL, &a->mha, B, N, D, cfg->heads, &attn_tr);
    ops_add(a->resid1, x, a->attn, bnd);
    trace_emit(tr, "resid1", a->resid1, 3, B, N, D);
    layernorm(a->norm2, x, w->norm2_w, w->norm2_b, BN, D, cfg->ln_eps);
    trace_emit(tr, "norm2", a->norm2, 3, B, N, D);
    ops_linear(a->fc1, a->norm2, w->fc1_w, w->fc1_b, BN, D, M);
    trace_emit(tr, "mlp.fc1", a->fc1, 3, B, N, M);
    gelu(a->gelu, a->fc1, (size_t)BN * M);
    trace_emit(tr, "mlp.gelu", a->gelu, 3, B, N, M);
    ops_linear(a->fc2, a->gelu, w->fc2_w, w->fc2_b, BN, M, D);
    trace_emit(tr, "mlp.fc2", a->fc2, 3, B, N, D);
    ops_add(out, a->resid1, a->fc2, bnd);
    trace_emit(tr, "out", out, 3, B, N, D);
}
