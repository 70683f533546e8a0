/**
 * @file block.c
 * @brief Exercise 08: one pre-norm transformer encoder block (lib/model/block.h), your version.
 *
 * Shape legend: B images, N tokens, D width, H heads, M MLP width (4·D).
 *
 * Fill in the TODOs. `make exercise CH=08` grades it with your layernorm.c
 * and gelu.c, which it calls; README.md says what the tests check and what
 * the hints mean. Each TODO's TODO_ZEROS() line stands for the step until
 * you write it: delete it then. The trace lines are given: they hand each
 * result to whoever listens, under the names of the contract (docs/contract.md),
 * and the tests compare them with PyTorch's, stage by stage.
 */
#include "model/block.h"
#include "ops/ops.h"

#include <stdio.h>
#include <string.h>

// A step not written yet: zeros, so that everything after it still runs.
#define TODO_ZEROS(buf, n) memset((buf), 0, sizeof(float) * (n))

void vit_block_forward(float *out, const float *x, const VitBlockWeights *w,
                       const VitConfig *cfg, VitBlockActs *a, int B, const Tracer *tr) {
    // x is (B, N, D), out is (B, N, D); the MLP is D → M → D
    const int N = vit_num_tokens(cfg), D = cfg->dim, M = cfg->mlp_dim, BN = B * N;
    const size_t bnd = (size_t)BN * D, bnm = (size_t)BN * M;
    // Every token is one row: LayerNorm, the linear layers and GELU treat the B·N rows
    // alike, so call them on all BN rows at once. You may call layernorm(), gelu()
    // (yours), and lib's mha_forward(), ops_linear() and ops_add() (ops.h, attention.h).

    // ---- timm: x = x + self.attn(self.norm1(x))

    // TODO 1. norm1 = LayerNorm(x), γ = w->norm1_w, β = w->norm1_b, ε = cfg->ln_eps
    //         (B·N rows of D)                                      timm: self.norm1(x)
    TODO_ZEROS(a->norm1, bnd);
    trace_emit(tr, "norm1", a->norm1, 3, B, N, D);

    // 2. attn = MultiHeadAttention(norm1), chapter 05's, into a->attn (B, N, D): given.
    //    It hands attn.q, .k, .v, .scores, .scaled, .probs, .context, .proj to the trace.
    char attn_prefix[64];
    const Tracer attn_tr = trace_part(tr, attn_prefix, sizeof attn_prefix, "attn.");
    mha_forward(a->attn, a->norm1, &w->attn, NULL, &a->mha, B, N, D, cfg->heads, &attn_tr);

    // TODO 3. resid1 = x + attn: the first residual, (B, N, D)   timm: x = x + ...
    TODO_ZEROS(a->resid1, bnd);
    trace_emit(tr, "resid1", a->resid1, 3, B, N, D);

    // ---- timm: x = x + self.mlp(self.norm2(x)), mlp = fc2(gelu(fc1(·)))

    // TODO 4. norm2 = LayerNorm(resid1), γ = w->norm2_w, β = w->norm2_b, ε = cfg->ln_eps
    TODO_ZEROS(a->norm2, bnd);
    trace_emit(tr, "norm2", a->norm2, 3, B, N, D);

    // TODO 5. fc1 = norm2 · W1ᵀ + b1, W1 = w->fc1_w (M, D), b1 = w->fc1_b: (B·N, D) → (B·N, M)
    TODO_ZEROS(a->fc1, bnm);
    trace_emit(tr, "mlp.fc1", a->fc1, 3, B, N, M);

    // TODO 6. gelu = GELU(fc1), elementwise, (B·N, M)
    TODO_ZEROS(a->gelu, bnm);
    trace_emit(tr, "mlp.gelu", a->gelu, 3, B, N, M);

    // TODO 7. fc2 = gelu · W2ᵀ + b2, W2 = w->fc2_w (D, M), b2 = w->fc2_b: (B·N, M) → (B·N, D)
    TODO_ZEROS(a->fc2, bnd);
    trace_emit(tr, "mlp.fc2", a->fc2, 3, B, N, D);

    // TODO 8. out = resid1 + fc2: the second residual, the block's result (B, N, D)
    TODO_ZEROS(out, bnd);
    trace_emit(tr, "out", out, 3, B, N, D);
    (void)x;
}
