/**
 * @file test_ch08_encoder_block.c
 * @brief Chapter 08 against PyTorch, and the claims it makes about the encoder block.
 *
 * `build/tests/run ch08_encoder_block` grades a student's own
 * vit_block_forward() too: the claims below call lib's version (or whatever
 * replaced it at link time) on a small random block.
 *
 * The three probes at the end are exercise 08's diagnosis. layernorm() and
 * gelu() run on crafted rows and are compared with the formulas written out
 * here in double; vit_block_forward() runs block 0 of the small ViT that
 * tests/golden/vit_small.safetensors pins (tools/ref_vit.py in float64) and
 * its trace is compared with PyTorch's stage by stage (lib/explain/tracediff.h), so a
 * failure says at which stage the block first went wrong. When a check
 * fails, the result is compared with what each likely mistake gives (the
 * unbiased variance, the tanh GELU, a post-norm block, a missing residual,
 * …), and the one that matches is named with check_hint().
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../chapters/chapters.h"
#include "check.h"
#include "hints.h"
#include "ops/ops.h"
#include "base/rng.h"
#include "base/trace.h"
#include "explain/tracediff.h"
#include "model/vit.h"

// A small block: 8×8 images of 4×4 patches give N = 5 tokens; D 8, H 2, M 32.
enum { B = 2, N = 5, D = 8, H = 2, M = 32 };

typedef struct {
    VitConfig cfg;
    float params[2 * D + 3 * D * D + 3 * D + D * D + D + 2 * D + M * D + M + D * M + D];
    VitBlockWeights w;
    float *mem;
    VitBlockActs acts;
} SmallBlock;

static void small_block(SmallBlock *s, uint64_t seed) {
    s->cfg = (VitConfig){.image_size = 8, .patch_size = 4, .channels = 3, .dim = D, .depth = 1,
                         .heads = H, .mlp_dim = M, .num_classes = 3, .ln_eps = 1e-6f};
    Rng rng;
    rng_seed(&rng, seed);
    rng_fill_normal(&rng, s->params, sizeof s->params / sizeof *s->params, 0.0f, 0.3f);
    float *p = s->params;
    s->w = (VitBlockWeights){0}; // every pointer NULL (no bias, no head switched off) until set
    // LayerNorm scales around 1
    for (int i = 0; i < D; i++) p[i] += 1.0f;
    s->w.norm1_w = p, p += D;
    s->w.norm1_b = p, p += D;
    s->w.attn.q_w = p, s->w.attn.k_w = p + D * D, s->w.attn.v_w = p + 2 * D * D, p += 3 * D * D;
    s->w.attn.q_b = p, s->w.attn.k_b = p + D, s->w.attn.v_b = p + 2 * D, p += 3 * D;
    s->w.attn.proj_w = p, p += D * D;
    s->w.attn.proj_b = p, p += D;
    for (int i = 0; i < D; i++) p[i] += 1.0f;
    s->w.norm2_w = p, p += D;
    s->w.norm2_b = p, p += D;
    s->w.fc1_w = p, p += M * D;
    s->w.fc1_b = p, p += M;
    s->w.fc2_w = p, p += D * M;
    s->w.fc2_b = p;
    size_t bnd = B * N * D, bnm = B * N * M;
    size_t floats = 5 * bnd + 2 * bnm + mha_scratch_floats(B, N, D, H);
    float *m = s->mem = malloc(sizeof(float) * floats);
    s->acts.norm1 = m, m += bnd;
    s->acts.attn = m, m += bnd;
    s->acts.resid1 = m, m += bnd;
    s->acts.norm2 = m, m += bnd;
    s->acts.fc1 = m, m += bnm;
    s->acts.gelu = m, m += bnm;
    s->acts.fc2 = m, m += bnd;
    mha_scratch_carve(&s->acts.mha, m, B, N, D, H);
}

static void random_x(float *x, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed);
    rng_fill_normal(&rng, x, B * N * D, 0.0f, 1.0f);
}

static void test_chapter_matches_pytorch(void) {
    check_chapter_against_golden(chapter08_run, "ch08_encoder_block.safetensors");
}

// block_with() is below, with the probes that use it.
static void block_with(float *out, const float *x, const VitBlockWeights *w, const VitConfig *c,
                       int nb, int mistake);

static void test_block_is_prenorm_attention_then_mlp(void) {
    // the block, written out by hand: LayerNorm and GELU in double here (the
    // chapter's own functions, which the block calls: never its reference),
    // the attention and the linear layers lib's, pinned by their own suites (ops, ch05)
    SmallBlock s;
    small_block(&s, 81);
    float x[B * N * D], out[B * N * D], expected[B * N * D];
    random_x(x, 82);
    vit_block_forward(out, x, &s.w, &s.cfg, &s.acts, B, NULL);
    block_with(expected, x, &s.w, &s.cfg, B, 0); // 0: BLOCK_RIGHT, no mistake
    Tensor a = tensor_view(out, 3, B, N, D), e = tensor_view(expected, 3, B, N, D);
    assert_tensor_close(&a, &e, 1e-5f, 1e-5f, "block vs its pieces");
    free(s.mem);
}

static void test_zero_sublayers_leave_the_stream_alone(void) {
    // with the output projections and fc2 at zero, both sub-layers add nothing:
    // the residual connections pass x through unchanged
    SmallBlock s;
    small_block(&s, 83);
    float zeros_dd[D * D] = {0}, zeros_dm[D * M] = {0}, zeros_d[D] = {0};
    s.w.attn.proj_w = zeros_dd, s.w.attn.proj_b = zeros_d;
    s.w.fc2_w = zeros_dm, s.w.fc2_b = zeros_d;
    float x[B * N * D], out[B * N * D];
    random_x(x, 84);
    vit_block_forward(out, x, &s.w, &s.cfg, &s.acts, B, NULL);
    CU_ASSERT_EQUAL(memcmp(out, x, sizeof x), 0);
    free(s.mem);
}

static void test_sublayers_see_a_normalised_stream(void) {
    // scaling the input by 10 leaves LayerNorm 1's output and attention's output unchanged
    SmallBlock s;
    small_block(&s, 85);
    float x[B * N * D], big[B * N * D], out[B * N * D], attn[B * N * D];
    random_x(x, 86);
    vit_block_forward(out, x, &s.w, &s.cfg, &s.acts, B, NULL);
    memcpy(attn, s.acts.attn, sizeof attn);
    ops_scale(big, x, 10.0f, B * N * D);
    vit_block_forward(out, big, &s.w, &s.cfg, &s.acts, B, NULL);
    for (int i = 0; i < B * N * D; i++) CU_ASSERT_DOUBLE_EQUAL(s.acts.attn[i], attn[i], 1e-4);
    free(s.mem);
}

static void test_trace_names_in_order(void) {
    SmallBlock s;
    small_block(&s, 87);
    float x[B * N * D], out[B * N * D];
    random_x(x, 88);
    TraceRecorder rec = {0};
    Tracer tr = {trace_record, &rec, "blocks.3."};
    vit_block_forward(out, x, &s.w, &s.cfg, &s.acts, B, &tr);
    const char *names[] = {"norm1", "attn.q", "attn.k", "attn.v", "attn.scores", "attn.scaled",
                           "attn.probs", "attn.context", "attn.proj", "resid1", "norm2",
                           "mlp.fc1", "mlp.gelu", "mlp.fc2", "out"};
    CU_ASSERT_EQUAL_FATAL(rec.count, 15);
    for (int i = 0; i < 15; i++) {
        char expected[64];
        snprintf(expected, sizeof expected, "blocks.3.%s", names[i]);
        CU_ASSERT_STRING_EQUAL(rec.entries[i].name, expected);
    }
    const Tensor *last = trace_find(&rec, "blocks.3.out");
    CU_ASSERT_EQUAL(memcmp(last->data, out, sizeof out), 0);
    trace_recorder_free(&rec);
    free(s.mem);
}

static void test_layernorm_epsilon_near_the_variance(void) {
    // a row whose variance equals ε comes out with std 1/√2; ε = 1e-12 still normalises
    // it; a constant row comes out as β, with no NaN; ε caps the gain at 1/√ε
    enum { W = 64 };
    float row[W], y[W], beta[W];
    for (int j = 0; j < W; j++) row[j] = j % 2 ? 1e-3f : -1e-3f, beta[j] = 0.25f; // σ² = 1e-6
    layernorm(y, row, NULL, NULL, 1, W, 1e-6f);
    Tensor t = tensor_view(y, 1, W);
    CU_ASSERT_DOUBLE_EQUAL(tensor_stats(&t).std, 1 / sqrt(2.0), 1e-4);
    layernorm(y, row, NULL, NULL, 1, W, 1e-12f);
    CU_ASSERT_DOUBLE_EQUAL(tensor_stats(&t).std, 1.0, 1e-4);
    for (int j = 0; j < W; j++) row[j] = 1e-5f * (j % 2 ? 1 : -1); // σ² = 1e-10 ≪ ε
    layernorm(y, row, NULL, NULL, 1, W, 1e-6f);
    CU_ASSERT(tensor_stats(&t).std <= 1e-5 / sqrt(1e-6) * (1 + 1e-4));
    for (int j = 0; j < W; j++) row[j] = 3.0f;
    layernorm(y, row, NULL, beta, 1, W, 1e-6f);
    for (int j = 0; j < W; j++) CU_ASSERT_EQUAL(y[j], 0.25f);
}

static void test_gelu_values(void) {
    // exact erf GELU at a few points (values from torch.nn.functional.gelu)
    float x[5] = {-3.0f, -0.75f, 0.0f, 1.0f, 2.0f}, y[5];
    const double expected[5] = {-0.0040497, -0.1699705, 0.0, 0.8413447, 1.9544997};
    gelu(y, x, 5);
    for (int i = 0; i < 5; i++) CU_ASSERT_DOUBLE_EQUAL(y[i], expected[i], 1e-6);
}

/* -------------------------------------------------------------- the probes */

// A hint when @p got is all zeros: the skeleton's placeholder is still there. True if so.
static bool nothing_yet(const Tensor *got, const char *function) {
    if (!hint_all_zero(got->data, got->numel)) return false;
    check_hint("%s wrote only zeros: is the exercise's placeholder still there?", function);
    return true;
}

// How near a result must be to what a mistake gives to be named as that mistake:
// float32 against double, far tighter than any two mistakes are apart (several %).
#define SUSPECT_ATOL 1e-3f
#define SUSPECT_RTOL 1e-3f

/* LayerNorm as the formula says, in double, or with one likely mistake. */
enum {
    LN_RIGHT,
    LN_UNBIASED,     // σ² = Σ(x − μ)² / (D − 1), torch.var()'s default
    LN_NO_EPS,       // 1/√σ²
    LN_EPS_OUTSIDE,  // 1/(√σ² + ε)
    LN_SWAPPED,      // x̂·β + γ
    LN_MISTAKES,
};
static const char *const LN_HINT[LN_MISTAKES] = {
    NULL,
    "off by a factor sqrt(D/(D-1)) = %.4f: LayerNorm divides by the biased variance, "
    "sum (x - mu)^2 / D, as nn.LayerNorm does; yours is the unbiased one, / (D - 1), "
    "torch.var()'s default",
    "LayerNorm ignores eps: y = (x - mu) / sqrt(var + eps) * gamma + beta; without eps a row "
    "whose variance is near eps is blown up to unit size, and a constant row gives NaN",
    "eps is added outside the square root: y = (x - mu) / sqrt(var + eps), not "
    "(x - mu) / (sqrt(var) + eps)",
    "gamma and beta are swapped: gamma (the weight) scales, beta (the bias) shifts, "
    "y = x_hat * gamma + beta",
};

// out (rows, dim) = LayerNorm of x over its last axis, with @p mistake (LN_RIGHT: none).
static void layernorm_with(float *out, const float *x, const float *gamma, const float *beta,
                           int rows, int dim, double eps, int mistake) {
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * dim;
        double mu = 0, var = 0;
        for (int j = 0; j < dim; j++) mu += xr[j];
        mu /= dim;
        for (int j = 0; j < dim; j++) var += (xr[j] - mu) * (xr[j] - mu);
        var /= mistake == LN_UNBIASED ? dim - 1 : dim;
        double inv = mistake == LN_NO_EPS      ? 1 / sqrt(var)
                     : mistake == LN_EPS_OUTSIDE ? 1 / (sqrt(var) + eps)
                                                 : 1 / sqrt(var + eps);
        for (int j = 0; j < dim; j++) {
            double g = gamma ? gamma[j] : 1, b = beta ? beta[j] : 0;
            if (mistake == LN_SWAPPED) {
                double t = g;
                g = b, b = t;
            }
            out[(size_t)r * dim + j] = (float)((xr[j] - mu) * inv * g + b);
        }
    }
}

// Name the LayerNorm mistake @p got (rows, dim) shows, if one does; how many did.
static int diagnose_layernorm(const Tensor *got, const float *x, const float *gamma,
                              const float *beta, int rows, int dim, float eps) {
    Tensor maybe = tensor_new(2, rows, dim), flat = tensor_view(got->data, 2, rows, dim);
    int found = 0;
    for (int m = LN_RIGHT + 1; m < LN_MISTAKES; m++) {
        if (m == LN_SWAPPED && (!gamma || !beta)) continue;
        layernorm_with(maybe.data, x, gamma, beta, rows, dim, eps, m);
        if (tensor_near(&flat, &maybe, SUSPECT_ATOL, SUSPECT_RTOL))
            check_hint(LN_HINT[m], sqrt((double)dim / (dim - 1))), found++;
    }
    if (!found && eps != 1e-6f) { // timm's ε instead of the one asked for
        layernorm_with(maybe.data, x, gamma, beta, rows, dim, 1e-6, LN_RIGHT);
        if (tensor_near(&flat, &maybe, SUSPECT_ATOL, SUSPECT_RTOL))
            check_hint("LayerNorm uses a fixed eps of 1e-6, not the eps argument (%g here: "
                       "Hugging Face's weights use 1e-12)", (double)eps), found++;
    }
    tensor_free(&maybe);
    return found;
}

// Crafted rows of width 8, each for one mistake: an ordinary row; a row whose variance
// is ε (where ε halves the output); one whose variance is far below ε (where ε sets the
// size); one of mean 1000 (where E[x²] − μ² cancels in float); and a constant row.
enum { LN_ROWS = 5, LN_DIM = 8, ROW_OFFSET = 3 };
static void layernorm_rows(float *x) {
    const float ordinary[LN_DIM] = {0.3f, -1.2f, 2.0f, 0.7f, -0.4f, 1.1f, -2.2f, 0.9f};
    for (int j = 0; j < LN_DIM; j++) {
        x[0 * LN_DIM + j] = ordinary[j];
        x[1 * LN_DIM + j] = j % 2 ? 1e-3f : -1e-3f;               // σ² = 1e-6 = ε
        x[2 * LN_DIM + j] = j % 2 ? 1e-6f : -1e-6f;               // σ² = 1e-12 ≪ ε
        x[ROW_OFFSET * LN_DIM + j] = 1000.0f + ordinary[j];       // μ ≈ 1000, σ² ≈ 1.6
        x[4 * LN_DIM + j] = 3.0f;                                 // σ² = 0: the output is β
    }
}

static void test_probe_layernorm(void) {
    float x[LN_ROWS * LN_DIM], gamma[LN_DIM], beta[LN_DIM], got[LN_ROWS * LN_DIM];
    float want[LN_ROWS * LN_DIM];
    layernorm_rows(x);
    for (int j = 0; j < LN_DIM; j++) gamma[j] = 1.0f + 0.1f * j, beta[j] = 0.05f * j - 0.2f;
    Tensor g = tensor_view(got, 2, LN_ROWS, LN_DIM), w = tensor_view(want, 2, LN_ROWS, LN_DIM);
    // float32 against double; the row of mean 1000 loses ~1e-4 to the float mean
    const float atol = 5e-4f, rtol = 1e-4f;
    const struct {
        float eps;
        bool affine, in_place;
        const char *what;
    } calls[] = {
        {1e-6f, true, false, "layernorm(x; gamma, beta, eps = 1e-6) vs the formula in double"},
        {1e-12f, true, false, "layernorm(x; gamma, beta, eps = 1e-12) vs the formula in double"},
        {1e-6f, false, false, "layernorm(x; NULL, NULL, eps = 1e-6): gamma 1 and beta 0"},
        {1e-6f, true, true, "layernorm in place (out == x)"},
    };
    for (size_t c = 0; c < sizeof calls / sizeof calls[0]; c++) {
        const float *gm = calls[c].affine ? gamma : NULL, *bt = calls[c].affine ? beta : NULL;
        layernorm_with(want, x, gm, bt, LN_ROWS, LN_DIM, calls[c].eps, LN_RIGHT);
        if (calls[c].in_place) {
            memcpy(got, x, sizeof got);
            layernorm(got, got, gm, bt, LN_ROWS, LN_DIM, calls[c].eps);
        } else {
            layernorm(got, x, gm, bt, LN_ROWS, LN_DIM, calls[c].eps);
        }
        if (assert_tensor_close(&g, &w, atol, rtol, calls[c].what)) continue;
        if (nothing_yet(&g, "layernorm")) return;
        if (calls[c].in_place) {
            check_hint("layernorm must work in place (out == x, ops.h): take a row's mean and "
                       "variance before writing any of its outputs");
            return;
        }
        if (diagnose_layernorm(&g, x, gm, bt, LN_ROWS, LN_DIM, calls[c].eps)) return;
        int bad_rows = 0;
        bool offset_bad = false;
        for (int r = 0; r < LN_ROWS; r++) {
            Tensor gr = tensor_view(&got[r * LN_DIM], 1, LN_DIM);
            Tensor wr = tensor_view(&want[r * LN_DIM], 1, LN_DIM);
            if (!tensor_near(&gr, &wr, atol, rtol)) bad_rows++, offset_bad |= r == ROW_OFFSET;
        }
        if (bad_rows == 1 && offset_bad)
            check_hint("only the row of mean 1000 is off: compute the variance in two passes, "
                       "the mean first, then sum (x - mu)^2 / D; E[x^2] - mu^2 in float "
                       "cancels away the variance of a row far from 0");
        return;
    }
}

/* GELU and its likely mistakes, in double. */
enum { GELU_RIGHT, GELU_TANH, GELU_SIGMOID, GELU_RELU, GELU_ERF_OF_X, GELU_NO_HALF, GELU_KINDS };
static const char *const GELU_HINT[GELU_KINDS] = {
    NULL,
    "off by up to %.1e, most near |x| = 2.7: exact erf GELU, not the tanh approximation "
    "(nn.GELU(approximate='tanh')); GELU(x) = x/2 * (1 + erf(x/sqrt(2))), as nn.GELU() and timm",
    "that is the sigmoid approximation x * sigmoid(1.702 x), off by up to %.1e: use the exact "
    "erf GELU, x/2 * (1 + erf(x/sqrt(2)))",
    "that is ReLU, max(0, x): GELU is smooth, x * Phi(x) = x/2 * (1 + erf(x/sqrt(2)))",
    "erf takes x/sqrt(2), not x: Phi(x) = (1 + erf(x/sqrt(2))) / 2 is the normal distribution "
    "function",
    "the factor 1/2 is missing: GELU(x) = x/2 * (1 + erf(x/sqrt(2))), so GELU(1) = 0.8413",
};

static double gelu_of(double x, int kind) {
    switch (kind) {
    case GELU_TANH:
        return 0.5 * x * (1 + tanh(sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
    case GELU_SIGMOID: return x / (1 + exp(-1.702 * x));
    case GELU_RELU: return x > 0 ? x : 0;
    case GELU_ERF_OF_X: return 0.5 * x * (1 + erf(x));
    case GELU_NO_HALF: return x * (1 + erf(x / sqrt(2)));
    default: return 0.5 * x * (1 + erf(x / sqrt(2)));
    }
}

static void gelu_with(float *out, const float *x, size_t n, int kind) {
    for (size_t i = 0; i < n; i++) out[i] = (float)gelu_of(x[i], kind);
}

// Name the GELU mistake @p got (n values) shows, if one does; how many did.
static int diagnose_gelu(const Tensor *got, const float *x, size_t n) {
    Tensor maybe = tensor_new(1, (int)n), right = tensor_new(1, (int)n);
    Tensor flat = tensor_view(got->data, 1, (int)n);
    gelu_with(right.data, x, n, GELU_RIGHT);
    int found = 0;
    for (int k = GELU_RIGHT + 1; k < GELU_KINDS; k++) {
        gelu_with(maybe.data, x, n, k);
        // a float32 GELU against double: 1e-6; the mistakes are 1e-4 and more apart
        if (!tensor_near(&flat, &maybe, 2e-6f, 1e-5f)) continue;
        double off = 0;
        for (size_t i = 0; i < n; i++) off = fmax(off, fabs(maybe.data[i] - right.data[i]));
        check_hint(GELU_HINT[k], off), found++;
    }
    tensor_free(&maybe), tensor_free(&right);
    return found;
}

static void test_probe_gelu(void) {
    // x from -6 to 6 in steps of 1/4: the centre, the bend near -0.75 and both tails
    enum { NX = 49 };
    float x[NX], got[NX], want[NX];
    for (int i = 0; i < NX; i++) x[i] = -6.0f + 0.25f * i;
    gelu(got, x, NX);
    gelu_with(want, x, NX, GELU_RIGHT);
    Tensor g = tensor_view(got, 1, NX), w = tensor_view(want, 1, NX);
    // erff() in float32 against erf() in double: ~1e-7
    if (!assert_tensor_close(&g, &w, 1e-6f, 1e-5f, "gelu vs x/2 * (1 + erf(x/sqrt(2))) in double")) {
        if (!nothing_yet(&g, "gelu") && !diagnose_gelu(&g, x, NX))
            check_hint("GELU(x) = x/2 * (1 + erf(x/sqrt(2))), elementwise; erff() is C's erf for "
                       "a float");
        return;
    }
    memcpy(got, x, sizeof got); // out may equal x (ops.h)
    gelu(got, got, NX);
    if (!assert_tensor_close(&g, &w, 1e-6f, 1e-5f, "gelu in place (out == x)"))
        check_hint("gelu must work in place (out == x, ops.h): read x[i] before writing out[i]");
}

/* The block, as timm's Block.forward says, or with one likely mistake. */
enum {
    BLOCK_RIGHT,
    BLOCK_POST_NORM,         // x = LN1(x + attn(x)); x = LN2(x + mlp(x))
    BLOCK_NO_ATTN_RESIDUAL,  // resid1 = attn(norm1(x))
    BLOCK_NO_MLP_RESIDUAL,   // out = mlp(norm2(resid1))
    BLOCK_MLP_RESIDUAL_FROM_X, // out = x + mlp(norm2(resid1))
    BLOCK_NORM2_OF_X,        // norm2 = LN2(x)
    BLOCK_NO_GELU,           // mlp = fc2(fc1(·))
    BLOCK_GELU_AFTER_FC2,    // mlp = gelu(fc2(fc1(·)))
    BLOCK_NORM2_WITH_NORM1,  // norm2 = LN(resid1) with norm1's γ and β
    BLOCK_MISTAKES,
};
static const char *const BLOCK_HINT[BLOCK_MISTAKES] = {
    NULL,
    "the block is post-norm, x = LN(x + sublayer(x)) as in the original Transformer; ViT is "
    "pre-norm: x = x + sublayer(LN(x)), the LayerNorm inside the branch, the stream itself "
    "never normalised",
    "the attention residual is missing: resid1 = x + attn(norm1(x)), not attn alone",
    "the MLP residual is missing: out = resid1 + mlp(norm2(resid1)), not the MLP alone",
    "the MLP residual is taken from x: out = resid1 + mlp(norm2(resid1)), the stream after "
    "attention, not the block's input x",
    "norm2 normalises x: it must normalise resid1 = x + attn, the stream after attention",
    "the GELU is missing: mlp = fc2(gelu(fc1(norm2)))",
    "the GELU comes after fc2: it belongs between the two layers, mlp = fc2(gelu(fc1(norm2)))",
    "norm2 uses norm1's weights: the MLP's LayerNorm has its own, w->norm2_w and w->norm2_b",
};

// out (nb, N, D) = block @p w on x, with @p mistake; LayerNorm and GELU in double, the
// attention and the linear layers lib's.
static void block_with(float *out, const float *x, const VitBlockWeights *w, const VitConfig *c,
                       int nb, int mistake) {
    const int n = nb * vit_num_tokens(c), dim = c->dim, mlp = c->mlp_dim;
    const size_t nd = (size_t)n * dim;
    float *h = malloc(sizeof(float) * nd), *attn = malloc(sizeof(float) * nd);
    float *r1 = malloc(sizeof(float) * nd), *f2 = malloc(sizeof(float) * nd);
    float *f1 = malloc(sizeof(float) * (size_t)n * mlp);
    float *mem = malloc(sizeof(float) * mha_scratch_floats(nb, n / nb, dim, c->heads));
    MhaScratch scratch;
    mha_scratch_carve(&scratch, mem, nb, n / nb, dim, c->heads);
    const bool post = mistake == BLOCK_POST_NORM;
    layernorm_with(h, x, w->norm1_w, w->norm1_b, n, dim, c->ln_eps, LN_RIGHT);
    mha_forward(attn, post ? x : h, &w->attn, NULL, &scratch, nb, n / nb, dim, c->heads, NULL);
    if (mistake == BLOCK_NO_ATTN_RESIDUAL) memcpy(r1, attn, sizeof(float) * nd);
    else ops_add(r1, x, attn, nd);
    if (post) layernorm_with(r1, r1, w->norm1_w, w->norm1_b, n, dim, c->ln_eps, LN_RIGHT);
    const float *mlp_in = post ? r1 : h;
    const bool norm1_again = mistake == BLOCK_NORM2_WITH_NORM1;
    if (!post)
        layernorm_with(h, mistake == BLOCK_NORM2_OF_X ? x : r1, norm1_again ? w->norm1_w : w->norm2_w,
                       norm1_again ? w->norm1_b : w->norm2_b, n, dim, c->ln_eps, LN_RIGHT);
    ops_linear(f1, mlp_in, w->fc1_w, w->fc1_b, n, dim, mlp);
    if (mistake != BLOCK_NO_GELU && mistake != BLOCK_GELU_AFTER_FC2)
        gelu_with(f1, f1, (size_t)n * mlp, GELU_RIGHT);
    ops_linear(f2, f1, w->fc2_w, w->fc2_b, n, mlp, dim);
    if (mistake == BLOCK_GELU_AFTER_FC2) gelu_with(f2, f2, nd, GELU_RIGHT);
    if (mistake == BLOCK_NO_MLP_RESIDUAL) memcpy(out, f2, sizeof(float) * nd);
    else ops_add(out, mistake == BLOCK_MLP_RESIDUAL_FROM_X ? x : r1, f2, nd);
    if (post) layernorm_with(out, out, w->norm2_w, w->norm2_b, n, dim, c->ln_eps, LN_RIGHT);
    free(h), free(attn), free(r1), free(f2), free(f1), free(mem);
}

// The small ViT of tools/gen_golden_vit.py, rebuilt from its seeds; its whole trace on a
// batch of 2 is tests/golden/vit_small.safetensors (PyTorch, float64).
static const VitConfig SMALL = {.image_size = 32, .patch_size = 8, .channels = 3, .dim = 64,
                                .depth = 2, .heads = 4, .mlp_dim = 256, .num_classes = 10,
                                .ln_eps = 1e-6f};
static const VitInit SMALL_INIT = {.seed = 7, .std = 0.2f, .bias_std = 0.02f, .norm_std = 0.1f};
static const char SMALL_GOLDEN[] = "vit_small.safetensors";
static const char SMALL_MADE_WITH[] = "img=32 patch=8 dim=64 depth=2 heads=4 mlp_dim=256 "
                                      "classes=10 seed=7 std=0.2 bias_std=0.02 norm_std=0.1 "
                                      "batch=2 input_seed=11";

// The small ViT and PyTorch's trace of it; false (and the test failed) when either is missing.
static bool open_small(Vit *vit, TraceFile *ref) {
    VitError err;
    if (trace_file_open(ref, golden_path(SMALL_GOLDEN), &err) != VIT_OK) {
        fprintf(stderr, "\n    %s\n", err.msg);
        CU_FAIL("the small ViT's golden trace did not load");
        return false;
    }
    const char *made = st_meta(&ref->st, "config");
    if (!made || strcmp(made, SMALL_MADE_WITH) != 0) {
        fprintf(stderr, "\n    %s was made for '%s', this test builds '%s'\n", SMALL_GOLDEN,
                made ? made : "?", SMALL_MADE_WITH);
        CU_FAIL("the golden trace is of another model");
        trace_file_close(ref);
        return false;
    }
    if (vit_build_random(vit, &SMALL, &SMALL_INIT, &err) != VIT_OK) {
        fprintf(stderr, "\n    %s\n", err.msg);
        CU_FAIL("vit_build_random failed");
        trace_file_close(ref);
        return false;
    }
    return true;
}

// The entry called @p name of a trace, or NULL; @p at receives its index.
static const TraceEntry *entry(const TraceEntry *e, int count, const char *name, int *at) {
    for (int i = 0; i < count; i++)
        if (strcmp(e[i].name, name) == 0) {
            if (at) *at = i;
            return &e[i];
        }
    return NULL;
}

static void test_probe_block(void) {
    Vit vit;
    TraceFile ref;
    if (!open_small(&vit, &ref)) return;
    const VitConfig *c = &vit.config;
    const VitBlockWeights *w = &vit.weights.blocks[0];
    int first = -1, last = -1;
    const TraceEntry *in = entry(ref.entries, ref.count, "embed", NULL); // block 0's input
    const TraceEntry *want = entry(ref.entries, ref.count, "blocks.0.out", &last);
    entry(ref.entries, ref.count, "blocks.0.norm1", &first);
    CU_ASSERT_FATAL(in && want && first >= 0 && last > first);
    const int nb = in->t.shape[0], n = in->t.shape[1], dim = in->t.shape[2]; // B, N, D
    const TraceView pytorch = {"PyTorch's", ref.entries + first, last - first + 1};

    float *mem = malloc(sizeof(float) * vit_block_acts_floats(c, nb));
    VitBlockActs acts;
    vit_block_acts_carve(&acts, mem, c, nb);
    Tensor out = tensor_new(3, nb, n, dim);
    TraceRecorder rec = {0};
    const Tracer tr = {trace_record, &rec, "blocks.0."};
    vit_block_forward(out.data, in->t.data, w, c, &acts, nb, &tr);

    // where it went wrong: the first stage of the trace that differs from PyTorch's
    const TraceView yours = trace_view(&rec, "your trace");
    TraceDiff d;
    VitError err;
    char where[1024] = "", summary[512] = "";
    bool ok = false;
    if (tracediff_compare(&d, &yours, &pytorch, TRACEDIFF_ATOL, TRACEDIFF_RTOL, &err) != VIT_OK) {
        snprintf(where, sizeof where, "%.1000s", err.msg);
        snprintf(summary, sizeof summary, "%.511s", where); // (the start of it)
    } else if (d.differ) {
        tracediff_report(where, sizeof where, &d, "\n      ");
        tracediff_summary(summary, sizeof summary, &d);
    } else if (!tensor_near(&out, &want->t, TRACEDIFF_ATOL, TRACEDIFF_RTOL)) {
        snprintf(where, sizeof where, "every stage of the trace agrees with PyTorch, but what "
                 "vit_block_forward() leaves in out is not blocks.0.out");
        snprintf(summary, sizeof summary, "%.511s", where); // (the start of it)
    } else {
        ok = true;
    }
    if (!ok) {
        fprintf(stderr, "\n    vit_block_forward() against PyTorch, stage by stage:\n      %s\n",
                where);
        const char *at = d.differ ? d.first.name : "";
        const Tensor *norm1 = trace_find(&rec, "blocks.0.norm1"), *norm2 = trace_find(&rec, "blocks.0.norm2");
        const Tensor *resid1 = trace_find(&rec, "blocks.0.resid1"), *fc1 = trace_find(&rec, "blocks.0.mlp.fc1");
        const Tensor *act = trace_find(&rec, "blocks.0.mlp.gelu");
        int found = nothing_yet(&out, "vit_block_forward");
        if (!found && !strcmp(at, "blocks.0.norm1") && norm1 && norm1->numel == out.numel)
            found += diagnose_layernorm(norm1, in->t.data, w->norm1_w, w->norm1_b, nb * n, dim,
                                        c->ln_eps);
        if (!found && !strcmp(at, "blocks.0.norm2") && norm2 && resid1 &&
            norm2->numel == out.numel && resid1->numel == out.numel)
            found += diagnose_layernorm(norm2, resid1->data, w->norm2_w, w->norm2_b, nb * n, dim,
                                        c->ln_eps);
        if (!found && !strcmp(at, "blocks.0.mlp.gelu") && act && fc1 && act->numel == fc1->numel)
            found += diagnose_gelu(act, fc1->data, fc1->numel);
        Tensor maybe = tensor_new(3, nb, n, dim);
        for (int m = BLOCK_RIGHT + 1; m < BLOCK_MISTAKES && !found; m++) {
            block_with(maybe.data, in->t.data, w, c, nb, m);
            if (tensor_near(&out, &maybe, SUSPECT_ATOL, SUSPECT_RTOL))
                check_hint("%s", BLOCK_HINT[m]), found++;
        }
        tensor_free(&maybe);
    }
    CU_assertImplementation(ok, __LINE__, summary, __FILE__, __func__, CU_FALSE);
    trace_recorder_free(&rec);
    tensor_free(&out);
    free(mem);
    vit_free(&vit);
    trace_file_close(&ref);
}

CU_TestInfo tests_ch08_encoder_block[] = {
    {"chapter matches PyTorch golden", test_chapter_matches_pytorch},
    {"block is pre-norm attention, then MLP", test_block_is_prenorm_attention_then_mlp},
    {"zero sub-layers leave the stream alone", test_zero_sublayers_leave_the_stream_alone},
    {"sub-layers see a normalised stream", test_sublayers_see_a_normalised_stream},
    {"trace names in order", test_trace_names_in_order},
    {"LayerNorm's epsilon near the variance", test_layernorm_epsilon_near_the_variance},
    {"exact GELU values", test_gelu_values},
    {"probe: layernorm, row by row", test_probe_layernorm},
    {"probe: gelu is the exact erf GELU", test_probe_gelu},
    {"probe: vit_block_forward, stage by stage against PyTorch", test_probe_block},
    CU_TEST_INFO_NULL,
};
