/**
 * @file 08_encoder_block.c
 * @brief Chapter 08 · The encoder block: LayerNorm, attention and an MLP on a residual stream.
 *
 * A ViT encoder block (timm's `Block`) is two sub-layers, each reading a
 * LayerNorm'd copy of the stream and adding its result back (pre-norm):
 * \f[ x' = x + \mathrm{MHA}(\mathrm{LN}_1(x)),\qquad
 *     y = x' + \mathrm{MLP}(\mathrm{LN}_2(x')),\qquad
 *     \mathrm{MLP}(h) = W_2\,\mathrm{GELU}(W_1 h + b_1) + b_2 , \f]
 * with \f$W_1\f$ of shape (M, D), M = 4D. The chapter first takes LayerNorm
 * apart (mean, biased variance, ε, γ and β, and when ε matters), then
 * assembles block 0 of the ViT-Base that chapter 09 builds (same seed) from
 * chapter 04–05's pieces, shows that it equals lib's vit_block_forward()
 * exactly, follows every traced stage on 197 tokens of width 768, and measures
 * how much each sub-layer changes the residual stream, on standard-normal
 * tokens and on chapter 09's real embedding.
 *
 * Every number printed is pinned by name and checked against PyTorch
 * (tools/ref_vit.py's Block) by tests/test_ch08_encoder_block.c.
 *
 * Run: `build/chapters/08_encoder_block`
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attention.h"
#include "teach/chapter.h"
#include "chapters.h"
#include "ops/ops.h"
#include "base/rng.h"
#include "model/trace_stages.h"
#include "base/tensor.h"
#include "base/trace.h"
#include "base/util.h"
#include "model/vit.h"

enum { B = 1 };                         // one image
static const uint64_t WEIGHT_SEED = 9;  // the weights of chapter 09's ViT-Base
static const uint64_t INPUT_SEED = 8;   // the standard-normal input tokens
static const uint64_t IMAGE_SEED = 99;  // chapter 09's image, for section 6
static const float BIG = 10.0f;         // section 4 runs the block on BIG·x too
static const float EPS_TIMM = 1e-6f;    // LayerNorm ε of timm and torchvision
static const float EPS_HF = 1e-12f;     // and of Hugging Face
// Section 2 shrinks token 0 by these factors, down to a variance near ε.
static const float SHRINK[] = {1.0f, 1e-2f, 1e-3f, 1e-4f};
enum { SHRUNK = sizeof SHRINK / sizeof SHRINK[0] };

/* ------------------------------------------------------------ helpers */

// [memory]
// Working memory of one block, carved out of one allocation by lib (as model/vit_memory.c does).
typedef struct {
    float *memory;
    VitBlockActs acts;
} BlockMemory;

static void block_memory_new(BlockMemory *m, const VitConfig *c) {
    m->memory = vit_malloc(sizeof(float) * vit_block_acts_floats(c, B));
    vit_block_acts_carve(&m->acts, m->memory, c, B);
}
// [memory]

// A tracer that keeps a copy of every stage in rec.
static Tracer recording(TraceRecorder *rec) { return (Tracer){trace_record, rec, NULL}; }

// [measures]
// The mean over rows of each row's length |x_i|: how big a token typically is.
static float mean_row_norm(const float *x, int rows, int dim) {
    double sum = 0;
    for (int i = 0; i < rows; i++) {
        const float *row = &x[(size_t)i * dim];
        sum += sqrt((double)dot(row, row, dim));
    }
    return (float)(sum / rows);
}

// The mean over rows of cos θ between row i of a and row i of b.
static float mean_row_cosine(const float *a, const float *b, int rows, int dim) {
    double sum = 0;
    for (int i = 0; i < rows; i++) {
        const float *u = &a[(size_t)i * dim], *v = &b[(size_t)i * dim];
        sum += dot(u, v, dim) / sqrt((double)dot(u, u, dim) * dot(v, v, dim));
    }
    return (float)(sum / rows);
}
// [measures]

// Pin n values as a 1-D tensor.
static void pin_row(Chapter *ch, const char *name, float *values, int n) {
    Tensor t = tensor_view(values, 1, n);
    ch_pin(ch, name, &t);
}

/* ----------------------------------------------------- the block by hand */

// [by_hand]
// One encoder block from the pieces of chapters 04–05; x and out are (B, N, D).
static void block_by_hand(float *out, const float *x, const VitBlockWeights *w,
                          const VitConfig *c, VitBlockActs *a) {
    const int N = vit_num_tokens(c), D = c->dim, M = c->mlp_dim, H = c->heads;
    const int BN = B * N; // the MLP and the LayerNorms treat every token alike
    // x = x + self.attn(self.norm1(x))
    layernorm(a->norm1, x, w->norm1_w, w->norm1_b, BN, D, c->ln_eps);
    mha_forward(a->attn, a->norm1, &w->attn, NULL, &a->mha, B, N, D, H, NULL);
    ops_add(a->resid1, x, a->attn, (size_t)BN * D);              // the first residual
    // x = x + self.mlp(self.norm2(x)), mlp = fc2(gelu(fc1(·)))
    layernorm(a->norm2, a->resid1, w->norm2_w, w->norm2_b, BN, D, c->ln_eps);
    ops_linear(a->fc1, a->norm2, w->fc1_w, w->fc1_b, BN, D, M);  // (B·N, D) → (B·N, M)
    gelu(a->gelu, a->fc1, (size_t)BN * M);
    ops_linear(a->fc2, a->gelu, w->fc2_w, w->fc2_b, BN, M, D);   // (B·N, M) → (B·N, D)
    ops_add(out, a->resid1, a->fc2, (size_t)BN * D);             // the second residual
}
// [by_hand]

/* ----------------------------------------------------------- sections */

typedef struct {
    Vit vit;                      // a one-block ViT-Base: chapter 09's embedding and block 0
    const VitConfig *cfg;
    const VitBlockWeights *block; // its block 0
    int N, D, M;
    float *x;                     // (B, N, D) the block's input: standard-normal tokens
    float *out;                   // (B, N, D) vit_block_forward()'s output
    float *hand;                  // (B, N, D) block_by_hand()'s output
    BlockMemory mem, hand_mem;    // the working memory of each
    TraceRecorder rec;            // every stage of vit_block_forward() on x
} Work;

static void the_block(Chapter *ch, Work *w) {
    if (!ch_section(ch, "1. What is in a block")) return;
    const VitConfig *c = w->cfg;
    const struct {
        const char *stage, *label;
    } parts[] = {
        {"norm1", "LayerNorm 1: γ, β"},
        {"attn.q", "attention: W_q, b_q"},
        {"attn.k", "attention: W_k, b_k"},
        {"attn.v", "attention: W_v, b_v"},
        {"attn.proj", "attention: W_o, b_o"},
        {"norm2", "LayerNorm 2: γ, β"},
        {"mlp.fc1", "MLP: W_1 (M, D), b_1"},
        {"mlp.fc2", "MLP: W_2 (D, M), b_2"},
    };
    ch_say(ch, "ViT-Base stacks 12 identical blocks. This chapter takes block 0 of the "
               "model Chapter 09 runs, with the same random weights (seed %d, drawn by "
               "lib's one rule, which for a block is also timm's: every weight from a "
               "truncated normal with std 0.02, biases 0, LayerNorm γ = 1 and β = 0). "
               "Its parameters, from vit_stage_params():", (int)WEIGHT_SEED);
    ch_line(ch, "    %-28s %10s", "part", "parameters");
    int64_t total = 0, attention = 0, mlp = 0;
    // [params]
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        char stage[32];
        snprintf(stage, sizeof stage, "blocks.0.%s", parts[i].stage);
        int64_t n = vit_stage_params(c, stage);
        ch_valuef(ch, (float)n, "params.%s", parts[i].stage);
        char count[VIT_NUM_BUF];
        ch_line(ch, "    %-28s %10s", parts[i].label, vit_thousands(count, n));
        total += n;
        if (strncmp(parts[i].stage, "attn.", 5) == 0) attention += n;
        if (strncmp(parts[i].stage, "mlp.", 4) == 0) mlp += n;
    }
    // [params]
    char count[VIT_NUM_BUF];
    ch_value(ch, "params.block", (float)total);
    ch_line(ch, "    %-28s %10s", "total", vit_thousands(count, total));
    ch_line(ch, "%s", "");
    ch_say(ch, "The MLP widens each token from D = %d to M = %d, the \"MLP ratio\" of "
               "%d, and back. That makes it the heavy half: %.1f%% of the block's "
               "parameters, against %.1f%% for attention.",
           c->dim, c->mlp_dim, c->mlp_dim / c->dim,
           ch_value(ch, "mlp_share_percent", 100.0f * (float)mlp / (float)total),
           ch_value(ch, "attention_share_percent", 100.0f * (float)attention / (float)total));
}

static void layer_norm(Chapter *ch, Work *w) {
    if (!ch_section(ch, "2. LayerNorm")) return;
    const int D = w->D;
    const float eps = w->cfg->ln_eps, *x = w->x; // token 0 of the input
    const float *gamma = w->block->norm1_w, *beta = w->block->norm1_b;
    ch_say(ch, "This chapter's input is %d tokens of width D = %d: random stand-ins, "
               "standard normal, for the embedded tokens of Chapter 07 (Section 6 also "
               "uses the real ones). Both sub-layers of the block start with a "
               "LayerNorm. It takes one token, a row x of D numbers, on its own: "
               "subtracts the row's mean μ, divides by its standard deviation, then "
               "scales and shifts every feature j by learned numbers γ_j and β_j:",
           w->N, D);
    ch_line(ch, "    μ = (1/D) Σ_j x_j        σ² = (1/D) Σ_j (x_j − μ)²");
    ch_line(ch, "    y_j = (x_j − μ) / √(σ² + ε) · γ_j + β_j");
    ch_line(ch, "%s", "");
    float *y = vit_malloc(sizeof(float) * 2 * D), *y2 = y + D;
    // [layernorm]
    double mu = 0, var = 0; // token 0, term by term
    for (int j = 0; j < D; j++) mu += x[j];
    mu /= D;
    for (int j = 0; j < D; j++) var += (x[j] - mu) * (x[j] - mu);
    var /= D;                                // biased: divided by D, not D − 1
    double rstd = 1.0 / sqrt(var + eps);     // 1/√(σ² + ε)
    double y0_formula = (x[0] - mu) * rstd * gamma[0] + beta[0];
    layernorm(y, x, gamma, beta, 1, D, eps); // lib: the same for every row
    // [layernorm]
    ch_say(ch, "For token 0 of this chapter's input: μ = %.4f and σ² = %.4f. The "
               "variance is the biased one, divided by D as PyTorch's LayerNorm does; "
               "torch.var()'s default divides by D − 1 and gives %.4f. With ε = %g, "
               "1/√(σ² + ε) = %.4f, so feature 0, x_0 = %.4f, becomes (x_0 − μ) · %.4f "
               "· γ_0 + β_0 = %.4f, and layernorm() gives %.4f.",
           ch_value(ch, "token0_in_mean", (float)mu), ch_value(ch, "token0_var", (float)var),
           ch_value(ch, "token0_var_unbiased", (float)(var * D / (D - 1))), (double)eps,
           ch_value(ch, "token0_rstd", (float)rstd), ch_value(ch, "token0_x0", x[0]),
           (float)rstd, ch_value(ch, "token0_y0_formula", (float)y0_formula),
           ch_value(ch, "token0_y0", y[0]));
    Tensor t_in = tensor_view((float *)x, 1, D), t_ln = tensor_view(y, 1, D);
    TensorStats a = tensor_stats(&t_in), b = tensor_stats(&t_ln);
    ch_say(ch, "Token 0 goes in with mean %.4f and std %.4f and comes out with mean "
               "%.4f and std %.4f. Every token does, whatever its size: that is the "
               "point of the normalisation.",
           (float)a.mean, ch_value(ch, "token0_in_std", (float)a.std),
           ch_value(ch, "token0_ln_mean", (float)b.mean),
           ch_value(ch, "token0_ln_std", (float)b.std));

    // γ and β: the same token with every γ_j = 2 and β_j = 0.5
    float *g2 = vit_malloc(sizeof(float) * 2 * D), *b2 = g2 + D;
    for (int j = 0; j < D; j++) g2[j] = 2.0f, b2[j] = 0.5f;
    layernorm(y2, x, g2, b2, 1, D, eps);
    Tensor t_aff = tensor_view(y2, 1, D);
    TensorStats c = tensor_stats(&t_aff);
    char count[VIT_NUM_BUF];
    ch_say(ch, "γ and β, D numbers each (the %s parameters of a LayerNorm in the table "
               "above), give back what the normalisation took away. The normalisation "
               "makes every token alike, mean 0 and std 1; then feature j is "
               "multiplied by γ_j and shifted by β_j, so training can make one feature "
               "larger than another or move its centre away from 0. Set every γ_j to "
               "2 and β_j to 0.5 and token 0 comes out with mean %.4f and std %.4f. "
               "At initialisation γ = 1 and β = 0: LayerNorm starts as pure "
               "normalisation.",
           vit_thousands(count, (int64_t)ch_value(ch, "params.norm1", (float)(2 * D))),
           ch_value(ch, "token0_affine_mean", (float)c.mean),
           ch_value(ch, "token0_affine_std", (float)c.std));

    // ε: token 0 shrunk until its variance nears ε, normalised with both values
    float *rows = vit_malloc(sizeof(float) * SHRUNK * D);
    float *timm = vit_malloc(sizeof(float) * SHRUNK * D), *hf = vit_malloc(sizeof(float) * SHRUNK * D);
    // [eps]
    for (int r = 0; r < SHRUNK; r++) ops_scale(&rows[r * D], x, SHRINK[r], D); // token 0, shrunk
    layernorm(timm, rows, NULL, NULL, SHRUNK, D, EPS_TIMM); // timm, torchvision
    layernorm(hf, rows, NULL, NULL, SHRUNK, D, EPS_HF);     // Hugging Face
    // [eps]
    float shrink[SHRUNK], variance[SHRUNK], std_timm[SHRUNK], std_hf[SHRUNK], diff[SHRUNK];
    for (int r = 0; r < SHRUNK; r++) {
        Tensor tr = tensor_view(&rows[r * D], 1, D), tt = tensor_view(&timm[r * D], 1, D);
        Tensor th = tensor_view(&hf[r * D], 1, D);
        TensorStats sr = tensor_stats(&tr);
        shrink[r] = SHRINK[r];
        variance[r] = (float)(sr.std * sr.std);
        std_timm[r] = (float)tensor_stats(&tt).std;
        std_hf[r] = (float)tensor_stats(&th).std;
        diff[r] = tensor_max_abs_diff(&tt, &th);
    }
    pin_row(ch, "eps.shrink", shrink, SHRUNK);
    pin_row(ch, "eps.var", variance, SHRUNK);
    pin_row(ch, "eps.std_1e-6", std_timm, SHRUNK);
    pin_row(ch, "eps.std_1e-12", std_hf, SHRUNK);
    pin_row(ch, "eps.max_diff", diff, SHRUNK);
    ch_say(ch, "ε keeps a constant row (σ² = 0) from dividing by zero. Libraries "
               "disagree on it: timm and torchvision use %g, Hugging Face %g. For an "
               "ordinary token the choice is invisible. It matters for rows whose "
               "variance comes near ε: a token that is almost constant across its "
               "features. Shrink token 0 step by step and normalise it with both:",
           (double)EPS_TIMM, (double)EPS_HF);
    ch_line(ch, "    token 0 ×  variance σ²   std out, ε = 1e-6   ε = 1e-12   max |difference|");
    for (int r = 0; r < SHRUNK; r++)
        ch_line(ch, "    %-9g  %.4e   %17.4f   %9.4f   %16.3g", shrink[r], variance[r],
                std_timm[r], std_hf[r], diff[r]);
    ch_line(ch, "%s", "");
    ch_say(ch, "At full size the two outputs differ by at most %.3g, the size of float "
               "rounding. Once σ² reaches ε (%.3g here, against ε = %g), ε = %g counts "
               "as much as the variance itself: the output's std falls to %.4f, about "
               "1/√2, while ε = %g still normalises to %.4f. ε also caps how much "
               "LayerNorm may amplify a row, at 1/√ε: %g times for ε = %g, %g times "
               "for ε = %g. Shrink the row further (σ² = %.3g) and ε = %g lifts it "
               "only to std %.4f, while ε = %g blows it up to unit size, noise and "
               "all. So weights must run with the ε they were trained with; lib reads "
               "it from the file (the contract's weights table), and a wrong one "
               "shows on such nearly constant tokens, by as much as %.3g here.",
           diff[0], variance[2], (double)EPS_TIMM, (double)EPS_TIMM, std_timm[2], (double)EPS_HF,
           std_hf[2], ch_value(ch, "eps.gain_limit_1e-6", 1.0f / sqrtf(EPS_TIMM)),
           (double)EPS_TIMM, ch_value(ch, "eps.gain_limit_1e-12", 1.0f / sqrtf(EPS_HF)),
           (double)EPS_HF, variance[3], (double)EPS_TIMM, std_timm[3], (double)EPS_HF, diff[3]);
    free(rows);
    free(timm);
    free(hf);
    free(g2);
    free(y);
}

static void by_hand(Chapter *ch, Work *w) {
    if (!ch_section(ch, "3. The block, assembled by hand")) return;
    ch_say(ch, "Now the block itself. With the LayerNorm above, mha_forward() from "
               "Chapter 05, ops_add(), ops_linear() and gelu() (Section 5) it is eight calls, "
               "in the order of timm's Block.forward:");
    ch_line(ch, "    x = x + self.attn(self.norm1(x))");
    ch_line(ch, "    x = x + self.mlp(self.norm2(x))      # mlp = fc2(gelu(fc1(.)))");
    ch_line(ch, "%s", "");
    ch_line(ch, "    1. norm1  = layernorm(x; γ1, β1)          (N, D)");
    ch_line(ch, "    2. attn   = mha_forward(norm1)            (N, D), multi-head attention");
    ch_line(ch, "    3. resid1 = x + attn                      the first residual");
    ch_line(ch, "    4. norm2  = layernorm(resid1; γ2, β2)     (N, D)");
    ch_line(ch, "    5. fc1    = ops_linear(norm2; W_1, b_1)       (N, D) → (N, M)");
    ch_line(ch, "    6. gelu   = gelu(fc1)                     (N, M)");
    ch_line(ch, "    7. fc2    = ops_linear(gelu; W_2, b_2)        (N, M) → (N, D)");
    ch_line(ch, "    8. out    = resid1 + fc2                  the second residual");
    ch_line(ch, "%s", "");
    const size_t n = (size_t)B * w->N * w->D;
    Tracer keep = recording(&w->rec);
    // [compare]
    block_by_hand(w->hand, w->x, w->block, w->cfg, &w->hand_mem.acts);
    vit_block_forward(w->out, w->x, w->block, w->cfg, &w->mem.acts, B, &keep);
    float diff = ch_max_diff(ch, "by_hand_max_diff", w->hand, w->out, n);
    // [compare]
    ch_say(ch, "lib's vit_block_forward() (lib/model/block.c) is the same eight calls, with "
               "the trace handed each result. Run both on the same %d tokens: the "
               "largest difference between their outputs is %g. %s",
           w->N, diff, diff == 0.0f
               ? "Not a single bit differs: the same functions on the same numbers in "
                 "the same order give the same floats. Only a change of order, or of "
                 "algorithm, would show, as rounding differences."
               : "That is rounding: the two did not run the same operations in the "
                 "same order.");
    ch_say(ch, "It hands %d intermediate tensors to the trace, in this order. Their "
               "shapes, means and standard deviations:", w->rec.count);
    ch_line(ch, "    %-14s %-20s %9s %9s", "stage", "shape", "mean", "std");
    Tensor input = tensor_view(w->x, 3, B, w->N, w->D);
    for (int i = -1; i < w->rec.count; i++) {
        const char *name = i < 0 ? "input" : w->rec.entries[i].name;
        const Tensor *t = i < 0 ? &input : &w->rec.entries[i].t;
        char shape[48];
        tensor_shape_str(t, shape, sizeof shape);
        float dims[TENSOR_MAX_DIMS];
        for (int d = 0; d < t->ndim; d++) dims[d] = (float)t->shape[d];
        Tensor tshape = tensor_view(dims, 1, t->ndim);
        char key[64];
        snprintf(key, sizeof key, "%s.shape", name);
        ch_pin(ch, key, &tshape);
        TensorStats st = tensor_stats(t);
        float mean = ch_valuef(ch, (float)st.mean, "%s.mean", name);
        float std = ch_valuef(ch, (float)st.std, "%s.std", name);
        ch_line(ch, "    %-14s %-20s %9.4f %9.4f", name, shape, mean, std);
    }
    ch_line(ch, "%s", "");
    const Tensor *probs = trace_find(&w->rec, "attn.probs");
    float top = 0;
    for (size_t r = 0; r < probs->numel / (size_t)w->N; r++) {
        float m = 0;
        for (int j = 0; j < w->N; j++) m = fmaxf(m, probs->data[r * w->N + j]);
        top += m;
    }
    top /= (float)(probs->numel / (size_t)w->N);
    ch_say(ch, "Notice attn.probs: its mean is exactly 1/%d, since every row shares "
               "1 among %d keys, and with these untrained weights the rows are nearly "
               "flat. On average the largest weight in a row is only %.4f. An "
               "untrained attention layer averages over the whole image; training "
               "teaches it where to look.", w->N, w->N, ch_value(ch, "mean_top_prob", top));
}

static void prenorm(Chapter *ch, Work *w) {
    if (!ch_section(ch, "4. LayerNorm first: pre-norm")) return;
    ch_say(ch, "Both sub-layers read a LayerNorm'd copy, never the stream itself, and "
               "add their result to the stream. This is the pre-norm arrangement of "
               "ViT (and GPT-2). The original Transformer normalised after the "
               "addition instead, x = LN(x + sublayer(x)); putting LN first leaves a "
               "clean path from the first block's input to the last block's output, "
               "which makes deep stacks much easier to train.");
    const Tensor *norm1 = trace_find(&w->rec, "norm1");
    // The same block on BIG·x: the sub-layers see the same normalised input.
    size_t n = (size_t)B * w->N * w->D;
    float *big = vit_malloc(sizeof(float) * n), *out = vit_malloc(sizeof(float) * n);
    const Tensor *attn_x = trace_find(&w->rec, "attn.proj");
    // [scaled]
    ops_scale(big, w->x, BIG, n);                                   // the stream, 10 times larger
    vit_block_forward(out, big, w->block, w->cfg, &w->mem.acts, B, NULL);
    // [scaled]
    ch_say(ch, "A consequence: make the stream %g times larger and the attention "
               "sub-layer cannot tell. Running the block on %g·x, LayerNorm 1's output "
               "differs from before by at most %.2g and the attention output by at "
               "most %.2g. The stream keeps its own scale; the sub-layers always see "
               "unit-scale tokens, each feature of std about 1, so of length about "
               "√D = %.2f.", BIG, BIG,
           ch_max_diff(ch, "big_norm1_max_diff", w->mem.acts.norm1, norm1->data, n),
           ch_max_diff(ch, "big_attn_max_diff", w->mem.acts.attn, attn_x->data, n),
           ch_value(ch, "sqrt_d", sqrtf((float)w->D)));
    free(big);
    free(out);
}

static void mlp(Chapter *ch, Work *w) {
    if (!ch_section(ch, "5. The MLP and GELU")) return;
    ch_say(ch, "The MLP works on every token separately: fc1 widens it to %d "
               "numbers, GELU bends them, fc2 brings them back to %d. Attention moves "
               "information between tokens; the MLP processes what each token now "
               "holds. GELU is exact, x·Φ(x) with Φ the normal distribution function, "
               "computed with erf:", w->M, w->D);
    float xs[] = {-3, -2, -1, -0.75f, -0.5f, 0, 0.5f, 1, 2, 3};
    enum { NX = sizeof xs / sizeof xs[0] };
    float ys[NX];
    // [gelu]
    gelu(ys, xs, NX); // GELU(x) = x/2 · (1 + erf(x/√2))
    // [gelu]
    pin_row(ch, "gelu_x", xs, NX);
    pin_row(ch, "gelu_y", ys, NX);
    ch_line(ch, "         x   GELU(x)   ReLU(x)");
    for (int i = 0; i < NX; i++)
        ch_line(ch, "    %6.2f   %7.4f   %7.4f", xs[i], ys[i], fmaxf(xs[i], 0.0f));
    ch_line(ch, "%s", "");
    const Tensor *fc1 = trace_find(&w->rec, "mlp.fc1");
    size_t negative = 0;
    for (size_t i = 0; i < fc1->numel; i++) negative += fc1->data[i] < 0;
    ch_say(ch, "Like ReLU it keeps large positive values and silences large negative "
               "ones, but it is smooth and lets small negative values through a "
               "little (its minimum is about -0.17, near x = -0.75). In this block "
               "%.1f%% of fc1's %d × %d outputs are negative and get squashed towards "
               "zero.", ch_value(ch, "fc1_negative_percent", 100.0f * negative / fc1->numel),
           w->N, w->M);
}

// [chapter09_image]
// Chapter 09's image through the one-block model: its embedding and block 0.
static void run_on_chapter09_image(Work *w, TraceRecorder *rec) {
    const VitConfig *c = w->cfg;
    Tensor image = tensor_new(4, B, c->channels, c->image_size, c->image_size);
    Rng rng;
    rng_seed(&rng, IMAGE_SEED);
    rng_fill_uniform(&rng, image.data, image.numel, -1.0f, 1.0f);
    VitError err;
    if (vit_forward(&w->vit, &image, trace_record, rec, &err) != VIT_OK)
        fprintf(stderr, "08_encoder_block: %s\n", err.msg);
    tensor_free(&image);
}
// [chapter09_image]

static void residual_stream(Chapter *ch, Work *w) {
    if (!ch_section(ch, "6. The residual stream")) return;
    ch_say(ch, "Follow the stream through the block: x, then resid1 = x + attention, "
               "then out = resid1 + MLP. How much does each sub-layer change it? "
               "Average lengths |token| over the %d tokens:", w->N);
    const char *rows[][2] = {
        {"input", "x, the stream coming in"},
        {"attn.proj", "attention's contribution"},
        {"resid1", "x + attention"},
        {"mlp.fc2", "the MLP's contribution"},
        {"out", "resid1 + MLP, the stream going out"},
    };
    float norms[5];
    for (int i = 0; i < 5; i++) {
        const Tensor *t = i == 0 ? NULL : trace_find(&w->rec, rows[i][0]);
        const float *data = t ? t->data : w->x;
        norms[i] = ch_valuef(ch, mean_row_norm(data, w->N, w->D), "%s.mean_norm", rows[i][0]);
        ch_line(ch, "    %-12s %8.4f   %s", rows[i][0], norms[i], rows[i][1]);
    }
    ch_line(ch, "%s", "");
    float cos_io = ch_value(ch, "cos_input_out",
                            mean_row_cosine(w->x, trace_find(&w->rec, "out")->data, w->N, w->D));
    ch_say(ch, "Attention adds a vector about %.3f times as long as the token, the MLP "
               "one about %.3f times as long. Each sub-layer writes a correction into "
               "the stream rather than replacing it: going out, a token still points "
               "almost the same way as coming in (average cos θ = %.4f, Chapter 01). "
               "Attention's share is tiny because its untrained weights average over "
               "all %d tokens, and an average of many random vectors is short.",
           ch_value(ch, "attn_relative", norms[1] / norms[0]),
           ch_value(ch, "mlp_relative", norms[3] / norms[2]), cos_io, w->N);

    // The same block on the input it really gets in chapter 09: the embedded image.
    TraceRecorder rec = {0};
    run_on_chapter09_image(w, &rec);
    const float *embed = trace_find(&rec, "embed")->data, *out = trace_find(&rec, "blocks.0.out")->data;
    Tensor t_embed = tensor_view((float *)embed, 3, B, w->N, w->D);
    const float std = ch_value(ch, "ch09.embed.std", (float)tensor_stats(&t_embed).std);
    const float len = ch_value(ch, "ch09.embed.mean_norm", mean_row_norm(embed, w->N, w->D));
    const float attn = ch_value(ch, "ch09.attn.mean_norm",
                                mean_row_norm(trace_find(&rec, "blocks.0.attn.proj")->data, w->N, w->D));
    const float mlp_len = ch_value(ch, "ch09.mlp.mean_norm",
                                   mean_row_norm(trace_find(&rec, "blocks.0.mlp.fc2")->data, w->N, w->D));
    const float cos_real = ch_value(ch, "ch09.cos_input_out", mean_row_cosine(embed, out, w->N, w->D));
    const float cos_cls = ch_value(ch, "ch09.cls_cos", mean_row_cosine(embed, out, 1, w->D));
    ch_say(ch, "Does a deep stack therefore start close to the identity? Only if its "
               "stream is large. The MLP's correction does not grow or shrink with the "
               "stream: LayerNorm 2 hands fc1 a unit-scale token whatever the stream's "
               "scale, so the MLP adds a vector of about the same length to any "
               "stream. The input above is standard normal, tokens of length %.2f, "
               "and against that a correction of %.2f still leaves cos θ = %.4f. "
               "ViT's real stream starts smaller. Chapter 09 feeds this block the "
               "embedding of its image (same weights): std %.4f, tokens of length "
               "%.2f. Attention adds %.2f, the MLP %.2f, %s the token itself, and "
               "out keeps an average cos θ of only %.4f with its input; for the [cls] "
               "row, %.4f, so the block all but replaces it.",
           norms[0], norms[3], cos_io, std, len, attn, mlp_len,
           mlp_len > len ? "more than" : "less than", cos_real, cos_cls);
    ch_say(ch, "So at initialisation the first blocks change the embedding a lot; they "
               "are far from the identity. Every block's MLP adds a correction of about "
               "the same size to one shared stream, which grows, so each later block "
               "turns it less (Chapter 09 follows the cosine through all twelve "
               "blocks). Training starts from there and grows what is useful.");
    trace_recorder_free(&rec);
}

static void whats_next(Chapter *ch) {
    if (!ch_section(ch, "What's next")) return;
    ch_say(ch, "Stack twelve of these blocks, put the patch embedding and the "
               "[cls] and position tokens in front and a LayerNorm and a classifier "
               "behind, and you have ViT-Base/16. Chapter 09 runs the whole model and "
               "counts where its 86 million parameters and its time go.");
}

void chapter08_run(Chapter *ch) {
    ch_title(ch, "08", "The encoder block");
    ch_say(ch, "Attention (Chapters 04–05) is half of a transformer block. The other "
               "half is a small MLP, and the two are joined by LayerNorms and residual "
               "connections:");
    ch_line(ch, "    x' = x + MHA(LN1(x))");
    ch_line(ch, "    y  = x' + MLP(LN2(x')),    MLP(h) = fc2(GELU(fc1(h)))");
    ch_line(ch, "%s", "");
    Work w = {0};
    // [build]
    VitConfig cfg;
    VitError err;
    vit_config_for_arch(&cfg, "vit-base", NULL);
    cfg.depth = 1; // the embedding and block 0 draw the same numbers as in the 12-block model
    VitInit init = vit_init_timm(WEIGHT_SEED);
    if (vit_build_random(&w.vit, &cfg, &init, &err) != VIT_OK) {
        ch_verdict(ch, "cannot build the block: %s", err.msg);
        return;
    }
    // [build]
    w.cfg = &w.vit.config;
    w.block = &w.vit.weights.blocks[0];
    w.N = vit_num_tokens(w.cfg), w.D = w.cfg->dim, w.M = w.cfg->mlp_dim;
    size_t n = (size_t)B * w.N * w.D;
    w.x = vit_malloc(sizeof(float) * n);
    w.out = vit_malloc(sizeof(float) * n);
    w.hand = vit_malloc(sizeof(float) * n);
    Rng rng;
    rng_seed(&rng, INPUT_SEED);
    rng_fill_normal(&rng, w.x, n, 0.0f, 1.0f);
    block_memory_new(&w.mem, w.cfg);
    block_memory_new(&w.hand_mem, w.cfg);

    the_block(ch, &w);
    layer_norm(ch, &w);
    by_hand(ch, &w);
    prenorm(ch, &w);
    mlp(ch, &w);
    residual_stream(ch, &w);
    whats_next(ch);

    trace_recorder_free(&w.rec);
    free(w.mem.memory);
    free(w.hand_mem.memory);
    free(w.x);
    free(w.out);
    free(w.hand);
    vit_free(&w.vit);
}

#ifndef CHAPTER_NO_MAIN
int main(int argc, char **argv) {
    return chapter_main(argc, argv, chapter08_run,
                        "Chapter 08: LayerNorm and the pre-norm encoder block, built by hand "
                        "and compared with lib's.");
}
#endif
