/**
 * @file block_fused.c
 * @brief The encoder block once more, for a pass nobody watches: the sums of
 *        vit_block_forward()'s recipe in fewer passes over memory (block.h).
 *
 * Shape legend: B batch, N tokens, D width, H heads, Dh = D/H, M MLP width.
 *
 * The recipe writes every stage the trace names, each in a pass of its own:
 * a product, then its bias added, then the residual added, then GELU into
 * another buffer. The products are compute-bound (hundreds of GFLOP/s), the
 * passes around them memory-bound (about 1 to 15 GFLOP/s, `make bench`'s
 * profile): together they were a tenth of the ViT-B/16 forward. Here:
 *
 * - q, k and v are one product of (B·N, D) by the fused (3D, D) weight, as
 *   timm stores it, instead of three products a third as wide;
 * - a product starts from its bias (and from the residual, for the two that
 *   end a residual branch) and adds its sum to it (matmul_bt_acc()): the
 *   bias and residual passes disappear into the pass the product makes anyway
 *   (a BLAS product with β = 0 first zeroes its output);
 * - GELU runs in place on fc1's output;
 * - attention runs online (attention_online()), never forming the (N, N)
 *   matrices.
 *
 * Only the order of the additions changes: (x + b) + Σ instead of x + (Σ + b),
 * a difference of float rounding, pinned against the recipe by the vit suite.
 * The recipe stays the reference: whenever a listener is there, or a backward
 * will read the buffers, vit_block_forward() is the recipe itself.
 *
 * Deliberately omitted: a GELU inside the product's own micro-kernel (OpenBLAS
 * has no epilogue; the in-place pass reads what the product has just left in
 * the cache), fusing LayerNorm into the products that follow it.
 */
#include "model/block.h"
#include "gemm/gemm.h"
#include "ops/ops.h"

#include <stddef.h>
#include <string.h>

// out (R, O) = base + b, row by row, the start of a product that adds its sum to it.
// base (R, O) or NULL (0), b (O) or NULL (0); out may be base.
static void start_from(float *out, const float *base, const float *b, int R, int O) {
#pragma omp parallel for schedule(static) if ((size_t)R * O > 65536)
    for (int r = 0; r < R; r++) {
        float *row = out + (size_t)r * O;
        const float *from = base ? base + (size_t)r * O : NULL;
        for (int o = 0; o < O; o++) row[o] = (from ? from[o] : 0.0f) + (b ? b[o] : 0.0f);
    }
}

// out (R, O) = base + x·wᵀ + b: a linear layer whose output starts from its
// bias and its residual. x is (R, I), w (O, I), b (O) or NULL, base (R, O) or NULL.
// lw: w's copy in bf16 or int8 (chapter 15), whose product writes its own
// output (bias included), the residual added after it; NULL: w in float.
static void linear_onto(float *out, const float *base, const float *x, const float *w,
                        const LowpWeight *lw, const float *b, int R, int I, int O) {
    if (lw && lw->precision != LOWP_FP32) {
        linear_lowp(out, x, lw, b, R);
        if (base) ops_add(out, out, base, (size_t)R * O);
        return;
    }
    start_from(out, base, b, R, O);
    matmul_bt_acc(out, x, w, R, I, O);
}

// Are q, k and v's weights the three thirds of one (3D, D) matrix, as timm and
// torchvision store them (Hugging Face's separate query, key and value are not),
// in float (a model in bf16 or int8 keeps a copy of each third, and one loaded
// from an int8 file has no float weights at all: q_w is NULL)?
static bool qkv_is_one_matrix(const AttentionWeights *w, int D) {
    const size_t dd = (size_t)D * D;
    return !w->q_lowp && w->k_w == w->q_w + dd && w->v_w == w->k_w + dd;
}

// q, k, v (B, H, N, Dh each, one after the other in the scratch) of x (B, N, D).
// The one product writes its (B, N, 3D) output into qkv (NULL: no room for it).
static void project_qkv(MhaScratch *s, float *qkv, const float *x, const AttentionWeights *w,
                        int B, int N, int D, int H) {
    const int BN = B * N, Dh = D / H;
    const size_t bhnd = (size_t)BN * D;
    const bool consecutive = s->k == s->q + bhnd && s->v == s->k + bhnd; // as heads_split_qkv() writes
    if (!qkv || !qkv_is_one_matrix(w, D) || !consecutive) {
        // three products, as the recipe, each from its bias
        const float *wt[3] = {w->q_w, w->k_w, w->v_w}, *bias[3] = {w->q_b, w->k_b, w->v_b};
        const LowpWeight *lw[3] = {w->q_lowp, w->k_lowp, w->v_lowp};
        float *heads[3] = {s->q, s->k, s->v};
        for (int part = 0; part < 3; part++) {
            linear_onto(s->flat, NULL, x, wt[part], lw[part], bias[part], BN, D, D);
            heads_split(heads[part], s->flat, B, N, H, Dh);
        }
        return;
    }
    // one product: every row of qkv (B, N, 3D) starts as [q_b | k_b | v_b]
    const float *bias[3] = {w->q_b, w->k_b, w->v_b};
    for (int part = 0; part < 3; part++)
        for (int o = 0; o < D; o++) qkv[(size_t)part * D + o] = bias[part] ? bias[part][o] : 0.0f;
    for (int r = 1; r < BN; r++)
        memcpy(qkv + (size_t)r * 3 * D, qkv, (size_t)3 * D * sizeof(float));
    matmul_bt_acc(qkv, x, w->q_w, BN, D, 3 * D);
    heads_split_qkv(s->q, qkv, B, N, H, Dh); // (3, B, H, N, Dh): q, then k, then v
}

// A head switched off (head_off.c) looks nowhere: its context, (N, Dh) for every
// sequence, is 0, as mha_forward()'s online road makes it. heads is (B, H, N, Dh).
static void heads_off_to_zero(float *heads, const bool *head_off, int B, int H, int N, int Dh) {
    if (!head_off) return;
    const size_t nd = (size_t)N * Dh;
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            if (head_off[h]) memset(heads + ((size_t)b * H + h) * nd, 0, nd * sizeof *heads);
}

bool vit_block_fusable(const VitBlockActs *a, const Tracer *tr) {
    // a listener reads every stage and a backward reads the buffers: the recipe writes them
    return (!tr || !tr->fn) && !a->mha.keep_matrices;
}

// [vit_block_forward_fused]
void vit_block_forward_fused(float *out, const float *x, const VitBlockWeights *w,
                             const VitConfig *cfg, VitBlockActs *a, int B) {
    // x is (B, N, D), out is (B, N, D); the MLP is D → M → D
    const int N = vit_num_tokens(cfg), D = cfg->dim, M = cfg->mlp_dim, H = cfg->heads;
    const int BN = B * N;
    MhaScratch *s = &a->mha;

    // x = x + self.attn(self.norm1(x)), the projection starting from x + its bias
    layernorm(a->norm1, x, w->norm1_w, w->norm1_b, BN, D, cfg->ln_eps);
    project_qkv(s, a->qkv, a->norm1, &w->attn, B, N, D, H);
    attention_online(s->heads, s->q, s->k, s->v, NULL, B, H, N, D / H, MHA_KEY_BLOCK);
    heads_off_to_zero(s->heads, w->attn.head_off, B, H, N, D / H);
    heads_merge(s->context, s->heads, B, N, H, D / H);
    linear_onto(a->resid1, x, s->context, w->attn.proj_w, w->attn.proj_lowp, w->attn.proj_b,
                BN, D, D);

    // x = x + self.mlp(self.norm2(x)), x now resid1: fc1 from its bias, GELU in place,
    // fc2 from resid1 + its bias
    layernorm(a->norm2, a->resid1, w->norm2_w, w->norm2_b, BN, D, cfg->ln_eps);
    linear_onto(a->fc1, NULL, a->norm2, w->fc1_w, w->fc1_lowp, w->fc1_b, BN, D, M);
    gelu(a->fc1, a->fc1, (size_t)BN * M);
    linear_onto(out, a->resid1, a->fc1, w->fc2_w, w->fc2_lowp, w->fc2_b, BN, M, D);
}
// [vit_block_forward_fused]
