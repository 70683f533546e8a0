/**
 * @file test_backward.c
 * @brief Every backward function, three ways: against PyTorch's autograd,
 *        against finite differences of lib's own forward, and for the
 *        accumulation contract.
 *
 * 1. Autograd. tests/golden/backward_{ops,loss,attention,patch}.safetensors
 *    (tools/gen_golden_backward.py) hold the inputs, an upstream gradient and
 *    the gradients torch.autograd computes in float64 on the same float32
 *    inputs; each expected gradient carries its tolerance in the file's
 *    metadata ("tol.NAME" = "ATOL RTOL", the script says why), which the test
 *    requires. Masked attention (causal + key padding, scale 0.3), a fully
 *    masked softmax row, label smoothing and logits of up to ~860 are among them.
 *
 * 2. Finite differences, which owe nothing to PyTorch. For each operation f
 *    and a fixed random g, L(x) = Σ g ⊙ f(x) is a scalar whose gradient is
 *    exactly what the backward computes from dout = g. Each input element is
 *    moved by ±h (h = 1e-3) and L, summed in double over lib's float32
 *    forward, is differenced: (L(x + h) − L(x − h)) / (x₊ − x₋), with x₊ and x₋
 *    the float32 values actually used. Central differences are off by
 *    h²/6·f''' ≈ 2e-7·f''' (nothing, for the linear and bilinear ops); what
 *    limits them is the float32 rounding of f: each output that moves is
 *    rounded twice, ~1e-7·|f|, and divided by 2h = 2e-3, so ~1e-4·|f| per
 *    output, ~1e-4·√n·|f| for n outputs (a LayerNorm or softmax row, a
 *    column of Q·Kᵀ): up to 8e-4 measured, for outputs of ~3. So every check
 *    allows FD_ATOL + FD_RTOL·|fd| = 1e-3 + 1e-3·|fd| (the worst element uses
 *    a third of it), while a wrong gradient (a missing term, a transposed
 *    product, a forgotten scale, n − 1 for n) is off by ~0.05–1. Inputs are
 *    well conditioned: values of ~1, LayerNorm rows
 *    of variance ~4, logits of std 2. A −inf input (a masked score) is not
 *    moved: its gradient must be exactly 0; where f is −inf (masked scaled
 *    scores) g is 0, since the gradient that reaches a hidden score is 0
 *    (its probability is 0).
 *
 * 3. Accumulation: every backward ADDS to its outputs, so calling it twice
 *    doubles the gradient and a prefilled buffer keeps what it held; every
 *    output documented as optional may be NULL, and the others are unchanged.
 *
 * VIT_GOLDEN_REPORT=1 prints the largest difference of every comparison.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attention.h"
#include "check.h"
#include "gemm/gemm.h"
#include "ops/ops.h"
#include "model/patch.h"
#include "base/rng.h"
#include "model/tokens.h"
#include "base/util.h"

// The small odd shapes of the goldens (tools/gen_golden_backward.py)
enum { B = 2, N = 7, D = 12, H = 3, DH = 4, M = 20, Y = 5, C = 3, S = 6, PS = 2 };
enum { P = (S / PS) * (S / PS), K = C * PS * PS, NT = P + 1, G = B * H };

#define FD_STEP 1e-3
#define FD_ATOL 1e-3
#define FD_RTOL 1e-3

/* ------------------------------------------------------------- helpers */

static float *new_floats(size_t n) { return vit_calloc(n ? n : 1, sizeof(float)); }

static float *random_floats(Rng *rng, size_t n, float mean, float std) {
    float *x = new_floats(n);
    rng_fill_normal(rng, x, n, mean, std);
    return x;
}

/* ---------------------------------------------------- 1. autograd goldens */

// The golden's tolerance for NAME ("tol.NAME"); a missing one fails the test.
static bool golden_tolerance(const char *file, const char *name, float *atol, float *rtol) {
    SafeTensors st;
    VitError err;
    char key[160];
    snprintf(key, sizeof key, "tol.%s", name);
    const bool opened = st_open(&st, golden_path(file), &err) == VIT_OK;
    const char *v = opened ? st_meta(&st, key) : NULL;
    const bool ok = v && sscanf(v, "%f %f", atol, rtol) == 2;
    if (opened) st_close(&st);
    if (!ok) fprintf(stderr, "\n    %s: no tolerance %s in its metadata\n", file, key);
    CU_ASSERT_TRUE(ok);
    return ok;
}

// Compare @p got (the golden's shape) with the expected gradient NAME of @p file.
static void check_golden(const char *file, const char *name, const float *got) {
    Tensor want = golden_tensor(file, name);
    float atol = 0, rtol = 0;
    if (golden_tolerance(file, name, &atol, &rtol)) {
        Tensor view = tensor_view_shape((float *)got, want.ndim, want.shape);
        char label[160];
        snprintf(label, sizeof label, "%s %s", file, name);
        assert_tensor_close(&view, &want, atol, rtol, label);
        if (golden_report_wanted())
            fprintf(stderr, "\n      autograd %-24s max |diff| %.2e  (tol %g + %g·|ref|)", name,
                    (double)tensor_max_abs_diff(&view, &want), (double)atol, (double)rtol);
    }
    tensor_free(&want);
}

/// One golden file's tensors, read by name, freed together.
typedef struct {
    const char *file;
    int n;
    Tensor t[24];
} GoldenSet;

static float *gin(GoldenSet *g, const char *name) {
    CU_ASSERT_FATAL(g->n < (int)(sizeof g->t / sizeof g->t[0]));
    g->t[g->n] = golden_tensor(g->file, name);
    return g->t[g->n++].data;
}

static float *gin_case(GoldenSet *g, const char *prefix, const char *name) {
    char full[96];
    snprintf(full, sizeof full, "%s.%s", prefix, name);
    return gin(g, full);
}

static void golden_set_free(GoldenSet *g) {
    for (int i = 0; i < g->n; i++) tensor_free(&g->t[i]);
    g->n = 0;
}

static void test_linear_matches_autograd(void) {
    GoldenSet g = {.file = "backward_ops.safetensors"};
    const float *x = gin(&g, "linear.x"), *w = gin(&g, "linear.w"), *dout = gin(&g, "linear.dout");
    float *dx = new_floats(B * N * D), *dw = new_floats(M * D), *db = new_floats(M);
    ops_linear_backward(dx, dw, db, dout, x, w, B * N, D, M);
    check_golden(g.file, "linear.dx", dx);
    check_golden(g.file, "linear.dw", dw);
    check_golden(g.file, "linear.db", db);
    free(dx), free(dw), free(db), golden_set_free(&g);
}

static void test_layernorm_matches_autograd(void) {
    GoldenSet g = {.file = "backward_ops.safetensors"};
    const float *x = gin(&g, "layernorm.x"), *gamma = gin(&g, "layernorm.gamma");
    const float *dout = gin(&g, "layernorm.dout"), eps = *gin(&g, "layernorm.eps");
    float *dx = new_floats(B * N * D), *dg = new_floats(D), *dbeta = new_floats(D);
    layernorm_backward(dx, dg, dbeta, dout, x, gamma, B * N, D, eps);
    check_golden(g.file, "layernorm.dx", dx);
    check_golden(g.file, "layernorm.dgamma", dg);
    check_golden(g.file, "layernorm.dbeta", dbeta);
    free(dx), free(dg), free(dbeta), golden_set_free(&g);
}

static void test_gelu_matches_autograd(void) {
    GoldenSet g = {.file = "backward_ops.safetensors"};
    const float *x = gin(&g, "gelu.x"), *dout = gin(&g, "gelu.dout");
    float *dx = new_floats(B * N * M);
    gelu_backward(dx, dout, x, B * N * M);
    check_golden(g.file, "gelu.dx", dx);
    free(dx), golden_set_free(&g);
}

static void test_softmax_matches_autograd(void) {
    GoldenSet g = {.file = "backward_ops.safetensors"};
    const float *p = gin(&g, "softmax.p"), *dout = gin(&g, "softmax.dout");
    float *dx = new_floats(12 * N);
    softmax_backward(dx, dout, p, 12, N);
    check_golden(g.file, "softmax.dx", dx); // row 8 fully masked: zeros
    for (int j = 0; j < N; j++) CU_ASSERT_EQUAL(dx[8 * N + j], 0.0f);
    for (int j = 2; j < N; j++) CU_ASSERT_EQUAL(dx[5 * N + j], 0.0f); // masked: exactly 0
    free(dx), golden_set_free(&g);
}

static void test_cross_entropy_matches_pytorch(void) {
    static const char *const cases[] = {"plain", "smooth", "big"};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        GoldenSet g = {.file = "backward_loss.safetensors"};
        const float *z = gin_case(&g, cases[c], "logits"), *t = gin_case(&g, cases[c], "targets");
        const float eps = *gin_case(&g, cases[c], "smoothing");
        int targets[N];
        for (int b = 0; b < N; b++) targets[b] = (int)t[b];
        float *dz = new_floats(N * Y), loss;
        loss = loss_cross_entropy(dz, z, targets, N, Y, eps);
        CU_ASSERT_TRUE(isfinite(loss));
        char name[64];
        snprintf(name, sizeof name, "%s.loss", cases[c]);
        check_golden(g.file, name, &loss);
        snprintf(name, sizeof name, "%s.dlogits", cases[c]);
        check_golden(g.file, name, dz);
        CU_ASSERT_EQUAL(loss_cross_entropy(NULL, z, targets, N, Y, eps), loss); // the same without
        free(dz), golden_set_free(&g);
    }
}

// One attention case of backward_attention.safetensors: each piece fed the
// golden's upstream gradient, so each is pinned on its own; then the pieces
// chained in C from dout alone.
static void check_attention_case(const char *name) {
    GoldenSet g = {.file = "backward_attention.safetensors"};
    const float *q = gin_case(&g, name, "q"), *k = gin_case(&g, name, "k");
    const float *v = gin_case(&g, name, "v"), *dout = gin_case(&g, name, "dout");
    const float *probs = gin_case(&g, name, "probs"), *want_dprobs = gin_case(&g, name, "dprobs");
    const float *want_dscaled = gin_case(&g, name, "dscaled");
    const float *want_dscores = gin_case(&g, name, "dscores");
    const bool masked = strcmp(name, "masked") == 0;
    AttentionOptions opt = {0};
    if (masked) {
        opt.scale = *gin_case(&g, name, "scale");
        opt.mask = gin_case(&g, name, "mask");
        opt.key_padding_mask = gin_case(&g, name, "key_padding_mask");
    }
    const size_t nn = (size_t)G * N * N, nd = (size_t)G * N * DH;
    float *dprobs = new_floats(nn), *dv = new_floats(nd), *dscaled = new_floats(nn);
    float *dscores = new_floats(nn), *dq = new_floats(nd), *dk = new_floats(nd);
    char full[64];
#define CHECK(t) (snprintf(full, sizeof full, "%s.%s", name, #t), check_golden(g.file, full, t))
    attention_context_backward(dprobs, dv, dout, probs, v, G, N, DH);
    CHECK(dprobs);
    CHECK(dv);
    softmax_backward(dscaled, want_dprobs, probs, G * N, N);
    CHECK(dscaled);
    attention_scale_mask_backward(dscores, want_dscaled, &opt, B, H, N, DH);
    CHECK(dscores);
    attention_scores_backward(dq, dk, want_dscores, q, k, G, N, DH);
    CHECK(dq);
    CHECK(dk);
    // chained in C from dout: the same gradients (within the same tolerances)
    memset(dscaled, 0, nn * sizeof(float)), memset(dscores, 0, nn * sizeof(float));
    memset(dq, 0, nd * sizeof(float)), memset(dk, 0, nd * sizeof(float));
    softmax_backward(dscaled, dprobs, probs, G * N, N);
    attention_scale_mask_backward(dscores, dscaled, &opt, B, H, N, DH);
    attention_scores_backward(dq, dk, dscores, q, k, G, N, DH);
    CHECK(dq);
    CHECK(dk);
#undef CHECK
    free(dprobs), free(dv), free(dscaled), free(dscores), free(dq), free(dk);
    golden_set_free(&g);
}

static void test_attention_matches_autograd(void) { check_attention_case("plain"); }
static void test_attention_masked_matches_autograd(void) { check_attention_case("masked"); }

static void test_heads_match_autograd(void) {
    GoldenSet g = {.file = "backward_attention.safetensors"};
    const float *dsplit = gin(&g, "split.dout"), *dmerged = gin(&g, "merge.dout");
    float *dx = new_floats(B * N * D), *dh = new_floats(B * N * D);
    heads_split_backward(dx, dsplit, B, N, H, DH);
    heads_merge_backward(dh, dmerged, B, N, H, DH);
    check_golden(g.file, "split.dx", dx);
    check_golden(g.file, "merge.dx", dh);
    free(dx), free(dh), golden_set_free(&g);
}

static void test_patch_embed_matches_autograd(void) {
    GoldenSet g = {.file = "backward_patch.safetensors"};
    const float *img = gin(&g, "patch.img"), *w = gin(&g, "patch.w");
    const float *dout = gin(&g, "patch.dout");
    float *patches = new_floats(B * P * K), *out = new_floats(B * P * D);
    patch_embed(out, patches, img, w, NULL, B, C, S, PS, D); // leaves the patches
    float *dimg = new_floats(B * C * S * S), *dw = new_floats(D * K), *db = new_floats(D);
    patch_embed_backward(dimg, dw, db, dout, patches, w, B, C, S, PS, D);
    check_golden(g.file, "patch.dimg", dimg);
    check_golden(g.file, "patch.dw", dw);
    check_golden(g.file, "patch.db", db);
    free(patches), free(out), free(dimg), free(dw), free(db), golden_set_free(&g);
}

static void test_tokens_match_autograd(void) {
    GoldenSet g = {.file = "backward_patch.safetensors"};
    const float *dembed = gin(&g, "tokens.dembed"), *want_dtokens = gin(&g, "tokens.dtokens");
    float *dtokens = new_floats(B * NT * D), *dpos = new_floats(NT * D);
    float *dpatch = new_floats(B * P * D), *dcls = new_floats(D);
    tokens_add_positions_backward(dtokens, dpos, dembed, B, NT, D);
    tokens_prepend_cls_backward(dpatch, dcls, want_dtokens, B, P, D);
    check_golden(g.file, "tokens.dtokens", dtokens);
    check_golden(g.file, "tokens.dpos", dpos);
    check_golden(g.file, "tokens.dpatch_embed", dpatch);
    check_golden(g.file, "tokens.dcls", dcls);
    free(dtokens), free(dpos), free(dpatch), free(dcls), golden_set_free(&g);
}

/* ------------------------------------------------ 2. finite differences */

/// L(x) = Σ g ⊙ f(x), f being lib's float32 forward at the inputs ctx points to.
typedef struct {
    void (*forward)(void *ctx, float *out);
    void *ctx;
    size_t nout;    // values f produces
    const float *g; // (nout) the fixed weights; 0 where f is −inf
} Objective;

static double objective(const Objective *o, float *out) {
    o->forward(o->ctx, out);
    double L = 0.0;
    for (size_t j = 0; j < o->nout; j++)
        if (o->g[j] != 0.0f) L += (double)o->g[j] * out[j];
    return L;
}

// grad (n) against central differences of o w.r.t. the n inputs x, moved in place and restored.
static void fd_check(const char *label, const Objective *o, float *x, const float *grad, size_t n) {
    float *out = new_floats(o->nout);
    size_t bad = 0, first_bad = 0, worst_at = 0;
    double worst = 0.0, first_fd = 0.0, used = 0.0; // used: largest diff / tolerance
    for (size_t i = 0; i < n; i++) {
        const float x0 = x[i];
        double fd = 0.0; // a −inf input (a masked score) stays where it is: no gradient
        if (isfinite(x0)) {
            x[i] = (float)(x0 + FD_STEP);
            const double up = x[i], lp = objective(o, out);
            x[i] = (float)(x0 - FD_STEP);
            const double down = x[i], lm = objective(o, out);
            x[i] = x0;
            fd = (lp - lm) / (up - down);
        }
        const double diff = fabs((double)grad[i] - fd);
        if (!(diff <= FD_ATOL + FD_RTOL * fabs(fd))) {
            if (bad++ == 0) first_bad = i, first_fd = fd;
        }
        if (!(diff <= worst)) worst = diff, worst_at = i;
        used = fmax(used, diff / (FD_ATOL + FD_RTOL * fabs(fd)));
    }
    if (bad)
        fprintf(stderr, "\n    %s: %zu of %zu gradients differ from finite differences by more "
                "than %g + %g·|fd|; the first [%zu]: got %.7g, fd %.7g; max |diff| %.3g at [%zu]\n",
                label, bad, n, FD_ATOL, FD_RTOL, first_bad, (double)grad[first_bad], first_fd,
                worst, worst_at);
    else if (golden_report_wanted())
        fprintf(stderr, "\n      fd %-44s max |diff| %.2e, %.2f of its tolerance, over %zu",
                label, worst, used, n);
    CU_ASSERT_EQUAL(bad, 0);
    free(out);
}

/* linear */
typedef struct {
    float *x, *w, *b;
} LinearCtx;
static void linear_fwd(void *c, float *out) {
    LinearCtx *l = c;
    ops_linear(out, l->x, l->w, l->b, B * N, D, M);
}

static void test_linear_finite_differences(void) {
    Rng rng;
    rng_seed(&rng, 11);
    LinearCtx l = {random_floats(&rng, B * N * D, 0, 1), random_floats(&rng, M * D, 0, 0.3f),
                   random_floats(&rng, M, 0, 0.1f)};
    float *g = random_floats(&rng, B * N * M, 0, 1);
    float *dx = new_floats(B * N * D), *dw = new_floats(M * D), *db = new_floats(M);
    ops_linear_backward(dx, dw, db, g, l.x, l.w, B * N, D, M);
    Objective o = {linear_fwd, &l, B * N * M, g};
    fd_check("linear dx", &o, l.x, dx, B * N * D);
    fd_check("linear dw", &o, l.w, dw, M * D);
    fd_check("linear db", &o, l.b, db, M);
    free(l.x), free(l.w), free(l.b), free(g), free(dx), free(dw), free(db);
}

/* layernorm */
typedef struct {
    float *x, *gamma, *beta;
} LayernormCtx;
static void layernorm_fwd(void *c, float *out) {
    LayernormCtx *l = c;
    layernorm(out, l->x, l->gamma, l->beta, B * N, D, 1e-6f);
}

static void test_layernorm_finite_differences(void) {
    Rng rng;
    rng_seed(&rng, 12);
    LayernormCtx l = {random_floats(&rng, B * N * D, 0.5f, 2.0f),
                      random_floats(&rng, D, 1.0f, 0.3f), random_floats(&rng, D, 0, 0.2f)};
    float *g = random_floats(&rng, B * N * D, 0, 1);
    float *dx = new_floats(B * N * D), *dg = new_floats(D), *dbeta = new_floats(D);
    layernorm_backward(dx, dg, dbeta, g, l.x, l.gamma, B * N, D, 1e-6f);
    Objective o = {layernorm_fwd, &l, B * N * D, g};
    fd_check("layernorm dx", &o, l.x, dx, B * N * D);
    fd_check("layernorm dgamma", &o, l.gamma, dg, D);
    fd_check("layernorm dbeta", &o, l.beta, dbeta, D);
    free(l.x), free(l.gamma), free(l.beta), free(g), free(dx), free(dg), free(dbeta);
}

/* gelu */
static void gelu_fwd(void *c, float *out) { gelu(out, c, B * N * M); }

static void test_gelu_finite_differences(void) {
    Rng rng;
    rng_seed(&rng, 13);
    float *x = new_floats(B * N * M);
    rng_fill_uniform(&rng, x, B * N * M, -5.0f, 5.0f);
    float *g = random_floats(&rng, B * N * M, 0, 1), *dx = new_floats(B * N * M);
    gelu_backward(dx, g, x, B * N * M);
    Objective o = {gelu_fwd, x, B * N * M, g};
    fd_check("gelu dx", &o, x, dx, B * N * M);
    free(x), free(g), free(dx);
}

/* softmax, with masked entries and a fully masked row */
enum { SM_ROWS = 9 };
static void softmax_fwd(void *c, float *out) { softmax(out, c, SM_ROWS, N); }

static void test_softmax_finite_differences(void) {
    Rng rng;
    rng_seed(&rng, 14);
    float *x = random_floats(&rng, SM_ROWS * N, 0, 2.0f), *p = new_floats(SM_ROWS * N);
    x[2 * N + 3] = x[2 * N + 6] = -INFINITY; // partly masked
    for (int j = 0; j < N; j++) x[5 * N + j] = -INFINITY; // fully masked: p = 0
    float *g = random_floats(&rng, SM_ROWS * N, 0, 1), *dx = new_floats(SM_ROWS * N);
    softmax(p, x, SM_ROWS, N);
    softmax_backward(dx, g, p, SM_ROWS, N);
    Objective o = {softmax_fwd, x, SM_ROWS * N, g};
    fd_check("softmax dx", &o, x, dx, SM_ROWS * N); // masked entries: exactly 0 wanted
    CU_ASSERT_EQUAL(dx[2 * N + 3], 0.0f);
    for (int j = 0; j < N; j++) CU_ASSERT_EQUAL(dx[5 * N + j], 0.0f);
    free(x), free(p), free(g), free(dx);
}

/* cross-entropy: L is the loss itself (g = 1) */
typedef struct {
    float *logits;
    const int *targets;
    float smoothing;
} LossCtx;
static void loss_fwd(void *c, float *out) {
    LossCtx *l = c;
    out[0] = loss_cross_entropy(NULL, l->logits, l->targets, N, Y, l->smoothing);
}

static void test_cross_entropy_finite_differences(void) {
    static const int targets[N] = {4, 0, 2, 2, 1, 3, 0};
    const float smoothing[] = {0.0f, 0.1f, 1.0f};
    for (size_t s = 0; s < sizeof smoothing / sizeof smoothing[0]; s++) {
        Rng rng;
        rng_seed(&rng, 15);
        LossCtx l = {random_floats(&rng, N * Y, 0, 2.0f), targets, smoothing[s]};
        float *dz = new_floats(N * Y), one = 1.0f;
        loss_cross_entropy(dz, l.logits, targets, N, Y, l.smoothing);
        Objective o = {loss_fwd, &l, 1, &one};
        char label[64];
        snprintf(label, sizeof label, "loss_cross_entropy dlogits (eps %g)", (double)smoothing[s]);
        fd_check(label, &o, l.logits, dz, N * Y);
        free(l.logits), free(dz);
    }
}

/* attention's pieces */
typedef struct {
    float *a, *b;              // scores: q, k; context: probs, v; scale_mask: scores
    const AttentionOptions *opt;
} AttnCtx;
static void scores_fwd(void *c, float *out) {
    AttnCtx *a = c;
    attention_scores(out, a->a, a->b, G, N, DH);
}
static void context_fwd(void *c, float *out) {
    AttnCtx *a = c;
    attention_context(out, a->a, a->b, G, N, DH);
}
static void scale_mask_fwd(void *c, float *out) {
    AttnCtx *a = c;
    attention_scale_mask(out, a->a, a->opt, B, H, N, DH);
}

static void test_attention_scores_finite_differences(void) {
    Rng rng;
    rng_seed(&rng, 16);
    const size_t nd = (size_t)G * N * DH, nn = (size_t)G * N * N;
    AttnCtx a = {random_floats(&rng, nd, 0, 1), random_floats(&rng, nd, 0, 1), NULL};
    float *g = random_floats(&rng, nn, 0, 1), *dq = new_floats(nd), *dk = new_floats(nd);
    attention_scores_backward(dq, dk, g, a.a, a.b, G, N, DH);
    Objective o = {scores_fwd, &a, nn, g};
    fd_check("attention_scores dq", &o, a.a, dq, nd);
    fd_check("attention_scores dk", &o, a.b, dk, nd);
    free(a.a), free(a.b), free(g), free(dq), free(dk);
}

static void test_attention_context_finite_differences(void) {
    Rng rng;
    rng_seed(&rng, 17);
    const size_t nd = (size_t)G * N * DH, nn = (size_t)G * N * N;
    AttnCtx a = {new_floats(nn), random_floats(&rng, nd, 0, 1), NULL};
    rng_fill_uniform(&rng, a.a, nn, 0.0f, 0.3f); // probability-sized, but any values do
    float *g = random_floats(&rng, nd, 0, 1), *dp = new_floats(nn), *dv = new_floats(nd);
    attention_context_backward(dp, dv, g, a.a, a.b, G, N, DH);
    Objective o = {context_fwd, &a, nd, g};
    fd_check("attention_context dprobs", &o, a.a, dp, nn);
    fd_check("attention_context dv", &o, a.b, dv, nd);
    free(a.a), free(a.b), free(g), free(dp), free(dv);
}

// The causal mask and key-padding mask (lengths 7 and 4) the masked tests share.
static void masks_new(float *causal, float *padding) {
    const int lengths[B] = {N, 4};
    attention_mask_causal(causal, N);
    attention_mask_key_padding(padding, lengths, B, N);
}

static void test_attention_scale_mask_finite_differences(void) {
    Rng rng;
    rng_seed(&rng, 18);
    const size_t nn = (size_t)G * N * N;
    float causal[N * N], padding[B * N];
    masks_new(causal, padding);
    const AttentionOptions masked = {.scale = 0.3f, .mask = causal, .key_padding_mask = padding};
    const AttentionOptions *opts[] = {NULL, &masked};
    for (int c = 0; c < 2; c++) {
        AttnCtx a = {random_floats(&rng, nn, 0, 1), NULL, opts[c]};
        float *g = random_floats(&rng, nn, 0, 1), *ds = new_floats(nn), *out = new_floats(nn);
        attention_scale_mask(out, a.a, opts[c], B, H, N, DH);
        for (size_t i = 0; i < nn; i++)
            if (isinf(out[i])) g[i] = 0.0f; // hidden: no gradient reaches it (see the top)
        attention_scale_mask_backward(ds, g, opts[c], B, H, N, DH);
        Objective o = {scale_mask_fwd, &a, nn, g};
        fd_check(c ? "attention_scale_mask dscores (masked, 0.3)" : "attention_scale_mask dscores",
                 &o, a.a, ds, nn);
        free(a.a), free(g), free(ds), free(out);
    }
}

/* the whole of attention, masked: softmax(s·Q·Kᵀ + masks)·V, the pieces chained */
typedef struct {
    float *q, *k, *v, *scores, *probs;
    const AttentionOptions *opt;
} ChainCtx;
static void chain_fwd(void *c, float *out) {
    ChainCtx *a = c;
    attention_scores(a->scores, a->q, a->k, G, N, DH);
    attention_scale_mask(a->scores, a->scores, a->opt, B, H, N, DH);
    softmax(a->probs, a->scores, G * N, N);
    attention_context(out, a->probs, a->v, G, N, DH);
}

static void test_attention_chain_finite_differences(void) {
    Rng rng;
    rng_seed(&rng, 19);
    const size_t nd = (size_t)G * N * DH, nn = (size_t)G * N * N;
    float causal[N * N], padding[B * N];
    masks_new(causal, padding);
    const AttentionOptions opt = {.mask = causal, .key_padding_mask = padding};
    ChainCtx a = {random_floats(&rng, nd, 0, 1), random_floats(&rng, nd, 0, 1),
                  random_floats(&rng, nd, 0, 1), new_floats(nn), new_floats(nn), &opt};
    float *g = random_floats(&rng, nd, 0, 1), *out = new_floats(nd);
    chain_fwd(&a, out); // leaves the probabilities
    float *dp = new_floats(nn), *dscaled = new_floats(nn), *ds = new_floats(nn);
    float *dq = new_floats(nd), *dk = new_floats(nd), *dv = new_floats(nd);
    attention_context_backward(dp, dv, g, a.probs, a.v, G, N, DH);
    softmax_backward(dscaled, dp, a.probs, G * N, N);
    attention_scale_mask_backward(ds, dscaled, &opt, B, H, N, DH);
    attention_scores_backward(dq, dk, ds, a.q, a.k, G, N, DH);
    Objective o = {chain_fwd, &a, nd, g};
    fd_check("attention (masked) dq", &o, a.q, dq, nd);
    fd_check("attention (masked) dk", &o, a.k, dk, nd);
    fd_check("attention (masked) dv", &o, a.v, dv, nd);
    free(a.q), free(a.k), free(a.v), free(a.scores), free(a.probs), free(g), free(out);
    free(dp), free(dscaled), free(ds), free(dq), free(dk), free(dv);
}

/* heads */
static void split_fwd(void *c, float *out) { heads_split(out, c, B, N, H, DH); }
static void merge_fwd(void *c, float *out) { heads_merge(out, c, B, N, H, DH); }

static void test_heads_finite_differences(void) {
    Rng rng;
    rng_seed(&rng, 20);
    const size_t n = (size_t)B * N * D;
    float *x = random_floats(&rng, n, 0, 1), *g = random_floats(&rng, n, 0, 1);
    float *dx = new_floats(n), *dh = new_floats(n);
    heads_split_backward(dx, g, B, N, H, DH); // g read as (B, H, N, Dh)
    heads_merge_backward(dh, g, B, N, H, DH); // g read as (B, N, D)
    Objective split = {split_fwd, x, n, g}, merge = {merge_fwd, x, n, g};
    fd_check("heads_split dx", &split, x, dx, n);
    fd_check("heads_merge dx", &merge, x, dh, n);
    free(x), free(g), free(dx), free(dh);
}

/* patch embedding */
typedef struct {
    float *img, *w, *b, *patches;
} PatchCtx;
static void patch_fwd(void *c, float *out) {
    PatchCtx *p = c;
    patch_embed(out, p->patches, p->img, p->w, p->b, B, C, S, PS, D);
}

static void test_patch_embed_finite_differences(void) {
    Rng rng;
    rng_seed(&rng, 21);
    PatchCtx pc = {random_floats(&rng, B * C * S * S, 0, 1), random_floats(&rng, D * K, 0, 0.3f),
                   random_floats(&rng, D, 0, 0.1f), new_floats(B * P * K)};
    float *g = random_floats(&rng, B * P * D, 0, 1), *out = new_floats(B * P * D);
    patch_fwd(&pc, out);
    float *dimg = new_floats(B * C * S * S), *dw = new_floats(D * K), *db = new_floats(D);
    patch_embed_backward(dimg, dw, db, g, pc.patches, pc.w, B, C, S, PS, D);
    Objective o = {patch_fwd, &pc, B * P * D, g};
    fd_check("patch_embed dimg", &o, pc.img, dimg, B * C * S * S);
    fd_check("patch_embed dw", &o, pc.w, dw, D * K);
    fd_check("patch_embed db", &o, pc.b, db, D);
    free(pc.img), free(pc.w), free(pc.b), free(pc.patches), free(g), free(out);
    free(dimg), free(dw), free(db);
}

/* tokens */
typedef struct {
    float *a, *b; // cls: patch_embed, cls; positions: tokens, pos
} TokensCtx;
static void cls_fwd(void *c, float *out) {
    TokensCtx *t = c;
    tokens_prepend_cls(out, t->a, t->b, B, P, D);
}
static void pos_fwd(void *c, float *out) {
    TokensCtx *t = c;
    tokens_add_positions(out, t->a, t->b, B, NT, D);
}

static void test_tokens_finite_differences(void) {
    Rng rng;
    rng_seed(&rng, 22);
    const size_t nt = (size_t)B * NT * D;
    TokensCtx cls = {random_floats(&rng, B * P * D, 0, 1), random_floats(&rng, D, 0, 1)};
    TokensCtx pos = {random_floats(&rng, nt, 0, 1), random_floats(&rng, NT * D, 0, 1)};
    float *g = random_floats(&rng, nt, 0, 1);
    float *dpatch = new_floats(B * P * D), *dcls = new_floats(D);
    float *dtok = new_floats(nt), *dpos = new_floats(NT * D);
    tokens_prepend_cls_backward(dpatch, dcls, g, B, P, D);
    tokens_add_positions_backward(dtok, dpos, g, B, NT, D);
    Objective oc = {cls_fwd, &cls, nt, g}, op = {pos_fwd, &pos, nt, g};
    fd_check("tokens_prepend_cls dpatch_embed", &oc, cls.a, dpatch, B * P * D);
    fd_check("tokens_prepend_cls dcls", &oc, cls.b, dcls, D);
    fd_check("tokens_add_positions dtokens", &op, pos.a, dtok, nt);
    fd_check("tokens_add_positions dpos", &op, pos.b, dpos, NT * D);
    free(cls.a), free(cls.b), free(pos.a), free(pos.b), free(g);
    free(dpatch), free(dcls), free(dtok), free(dpos);
}

/* ------------------------------------------------ 3. the += contract */

/// The inputs every backward below reads, drawn once per test.
typedef struct {
    float *x, *w, *dout_lin, *gamma, *dout_ln, *gelu_x, *dout_gelu, *p, *dout_sm;
    float *logits, *q, *k, *v, *probs, *dscores, *dout_att, *img, *pw, *patches, *dout_patch;
    float *dtokens;
    int targets[N];
    AttentionOptions opt;
    float causal[N * N], padding[B * N];
} Inputs;

static void inputs_new(Inputs *in) {
    Rng rng;
    rng_seed(&rng, 31);
    const size_t nd = (size_t)G * N * DH, nn = (size_t)G * N * N;
    in->x = random_floats(&rng, B * N * D, 0, 1);
    in->w = random_floats(&rng, M * D, 0, 0.3f);
    in->dout_lin = random_floats(&rng, B * N * M, 0, 1);
    in->gamma = random_floats(&rng, D, 1, 0.3f);
    in->dout_ln = random_floats(&rng, B * N * D, 0, 1);
    in->gelu_x = random_floats(&rng, B * N * M, 0, 2);
    in->dout_gelu = random_floats(&rng, B * N * M, 0, 1);
    in->p = random_floats(&rng, G * N * N, 0, 2);
    softmax(in->p, in->p, G * N, N);
    in->dout_sm = random_floats(&rng, G * N * N, 0, 1);
    in->logits = random_floats(&rng, N * Y, 0, 2);
    for (int b = 0; b < N; b++) in->targets[b] = b % Y;
    in->q = random_floats(&rng, nd, 0, 1), in->k = random_floats(&rng, nd, 0, 1);
    in->v = random_floats(&rng, nd, 0, 1);
    in->probs = in->p;
    in->dscores = random_floats(&rng, nn, 0, 1);
    in->dout_att = random_floats(&rng, nd, 0, 1);
    in->img = random_floats(&rng, B * C * S * S, 0, 1);
    in->pw = random_floats(&rng, D * K, 0, 0.3f);
    in->patches = new_floats(B * P * K);
    patch_unfold(in->patches, in->img, B, C, S, PS);
    in->dout_patch = random_floats(&rng, B * P * D, 0, 1);
    in->dtokens = random_floats(&rng, B * NT * D, 0, 1);
    masks_new(in->causal, in->padding);
    in->opt = (AttentionOptions){.scale = 0.3f, .mask = in->causal,
                                 .key_padding_mask = in->padding};
}

static void inputs_free(Inputs *in) {
    float *all[] = {in->x, in->w, in->dout_lin, in->gamma, in->dout_ln, in->gelu_x,
                    in->dout_gelu, in->p, in->dout_sm, in->logits, in->q, in->k, in->v,
                    in->dscores, in->dout_att, in->img, in->pw, in->patches, in->dout_patch,
                    in->dtokens};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]);
}

/// One backward function, seen as "add gradients into up to three outputs".
typedef struct {
    const char *name;
    int nout;
    size_t size[3];
    bool optional; // every output may be NULL
    void (*run)(const Inputs *in, float **out);
} Backward;

static void run_linear(const Inputs *in, float **o) {
    ops_linear_backward(o[0], o[1], o[2], in->dout_lin, in->x, in->w, B * N, D, M);
}
static void run_layernorm(const Inputs *in, float **o) {
    layernorm_backward(o[0], o[1], o[2], in->dout_ln, in->x, in->gamma, B * N, D, 1e-6f);
}
static void run_gelu(const Inputs *in, float **o) {
    gelu_backward(o[0], in->dout_gelu, in->gelu_x, B * N * M);
}
static void run_softmax(const Inputs *in, float **o) {
    softmax_backward(o[0], in->dout_sm, in->p, G * N, N);
}
static void run_cross_entropy(const Inputs *in, float **o) {
    loss_cross_entropy(o[0], in->logits, in->targets, N, Y, 0.1f);
}
static void run_scale_mask(const Inputs *in, float **o) {
    attention_scale_mask_backward(o[0], in->dscores, &in->opt, B, H, N, DH);
}
static void run_scores(const Inputs *in, float **o) {
    attention_scores_backward(o[0], o[1], in->dscores, in->q, in->k, G, N, DH);
}
static void run_context(const Inputs *in, float **o) {
    attention_context_backward(o[0], o[1], in->dout_att, in->probs, in->v, G, N, DH);
}
static void run_split(const Inputs *in, float **o) {
    heads_split_backward(o[0], in->dout_att, B, N, H, DH);
}
static void run_merge(const Inputs *in, float **o) {
    heads_merge_backward(o[0], in->x, B, N, H, DH);
}
static void run_patch(const Inputs *in, float **o) {
    patch_embed_backward(o[0], o[1], o[2], in->dout_patch, in->patches, in->pw, B, C, S, PS, D);
}
static void run_cls(const Inputs *in, float **o) {
    tokens_prepend_cls_backward(o[0], o[1], in->dtokens, B, P, D);
}
static void run_positions(const Inputs *in, float **o) {
    tokens_add_positions_backward(o[0], o[1], in->dtokens, B, NT, D);
}

static const Backward backwards[] = {
    {"ops_linear_backward", 3, {B * N * D, M * D, M}, true, run_linear},
    {"layernorm_backward", 3, {B * N * D, D, D}, true, run_layernorm},
    {"gelu_backward", 1, {B * N * M}, false, run_gelu},
    {"softmax_backward", 1, {G * N * N}, false, run_softmax},
    {"loss_cross_entropy", 1, {N * Y}, true, run_cross_entropy},
    {"attention_scale_mask_backward", 1, {G * N * N}, false, run_scale_mask},
    {"attention_scores_backward", 2, {G * N * DH, G * N * DH}, true, run_scores},
    {"attention_context_backward", 2, {G * N * N, G * N * DH}, true, run_context},
    {"heads_split_backward", 1, {B * N * D}, false, run_split},
    {"heads_merge_backward", 1, {B * N * D}, false, run_merge},
    {"patch_embed_backward", 3, {B * C * S * S, D * K, D}, true, run_patch},
    {"tokens_prepend_cls_backward", 2, {B * P * D, D}, true, run_cls},
    {"tokens_add_positions_backward", 2, {B * NT * D, NT * D}, true, run_positions},
};
enum { N_BACKWARDS = sizeof backwards / sizeof backwards[0] };

// How many of the n values of got are not within 1e-6·(1 + |want|) of want (one rounding).
static size_t count_off(const float *got, const float *want, size_t n) {
    size_t bad = 0;
    for (size_t i = 0; i < n; i++)
        bad += !(fabsf(got[i] - want[i]) <= 1e-6f * (1.0f + fabsf(want[i])));
    return bad;
}

static void report_off(const char *name, const char *what, int out, size_t bad, size_t n) {
    if (bad)
        fprintf(stderr, "\n    %s, output %d: %s: %zu of %zu values wrong\n", name, out, what,
                bad, n);
    CU_ASSERT_EQUAL(bad, 0);
}

static void test_backward_twice_doubles(void) {
    Inputs in;
    inputs_new(&in);
    for (int f = 0; f < N_BACKWARDS; f++) {
        const Backward *bw = &backwards[f];
        float *once[3] = {0}, *twice[3] = {0}, *pre[3] = {0}, *want[3] = {0};
        for (int o = 0; o < bw->nout; o++) {
            once[o] = new_floats(bw->size[o]), twice[o] = new_floats(bw->size[o]);
            pre[o] = new_floats(bw->size[o]), want[o] = new_floats(bw->size[o]);
            for (size_t i = 0; i < bw->size[o]; i++) pre[o][i] = 0.25f * (float)(i % 7) - 0.5f;
        }
        bw->run(&in, once);
        bw->run(&in, twice);
        bw->run(&in, twice);
        bw->run(&in, pre);
        for (int o = 0; o < bw->nout; o++) {
            size_t nonzero = 0;
            for (size_t i = 0; i < bw->size[o]; i++) {
                nonzero += once[o][i] != 0.0f;
                want[o][i] = 2.0f * once[o][i];
            }
            CU_ASSERT_TRUE(nonzero > 0); // a gradient that is all zeros would prove nothing
            report_off(bw->name, "twice is not 2x once", o,
                       count_off(twice[o], want[o], bw->size[o]), bw->size[o]);
            for (size_t i = 0; i < bw->size[o]; i++)
                want[o][i] = 0.25f * (float)(i % 7) - 0.5f + once[o][i];
            report_off(bw->name, "a prefilled buffer is not prefill + once", o,
                       count_off(pre[o], want[o], bw->size[o]), bw->size[o]);
            free(once[o]), free(twice[o]), free(pre[o]), free(want[o]);
        }
    }
    inputs_free(&in);
}

static void test_backward_null_outputs_are_skipped(void) {
    Inputs in;
    inputs_new(&in);
    for (int f = 0; f < N_BACKWARDS; f++) {
        const Backward *bw = &backwards[f];
        if (!bw->optional) continue;
        float *all[3] = {0};
        for (int o = 0; o < bw->nout; o++) all[o] = new_floats(bw->size[o]);
        bw->run(&in, all);
        for (int skip = 0; skip < bw->nout; skip++) { // each one left out in turn
            float *some[3] = {0};
            for (int o = 0; o < bw->nout; o++)
                if (o != skip) some[o] = new_floats(bw->size[o]);
            bw->run(&in, some);
            for (int o = 0; o < bw->nout; o++)
                if (o != skip) {
                    report_off(bw->name, "changed when another output is NULL", o,
                               count_off(some[o], all[o], bw->size[o]), bw->size[o]);
                    free(some[o]);
                }
        }
        float *none[3] = {0};
        bw->run(&in, none); // nothing wanted: nothing written, nothing read out of bounds
        for (int o = 0; o < bw->nout; o++) free(all[o]);
    }
    inputs_free(&in);
}

/* ---------------------------------------------------- properties */

static void test_layernorm_backward_gamma_null_is_ones(void) {
    Inputs in;
    inputs_new(&in);
    float ones[D], *a = new_floats(B * N * D), *b = new_floats(B * N * D);
    for (int j = 0; j < D; j++) ones[j] = 1.0f;
    layernorm_backward(a, NULL, NULL, in.dout_ln, in.x, NULL, B * N, D, 1e-6f);
    layernorm_backward(b, NULL, NULL, in.dout_ln, in.x, ones, B * N, D, 1e-6f);
    CU_ASSERT_EQUAL(memcmp(a, b, sizeof(float) * B * N * D), 0);
    // each row's dx sums to 0 and is orthogonal to x̂ (the mean and the scale are removed)
    for (int r = 0; r < B * N; r++) {
        double sum = 0;
        for (int j = 0; j < D; j++) sum += a[r * D + j];
        CU_ASSERT_DOUBLE_EQUAL(sum, 0.0, 1e-5);
    }
    free(a), free(b), inputs_free(&in);
}

static void test_softmax_backward_constant_gradient_gives_zero(void) {
    Inputs in;
    inputs_new(&in);
    float *dout = new_floats(G * N * N), *dx = new_floats(G * N * N);
    for (int i = 0; i < G * N * N; i++) dout[i] = 3.5f; // softmax ignores a constant shift
    softmax_backward(dx, dout, in.p, G * N, N);
    for (int i = 0; i < G * N * N; i++) CU_ASSERT_DOUBLE_EQUAL(dx[i], 0.0, 1e-6);
    free(dout), free(dx), inputs_free(&in);
}

static void test_cross_entropy_is_stable_and_exact(void) {
    // logits of ±1e4: e^x is inf in float32 (and e^1e4 in double); the log-sum-exp is not
    const float z[2 * 3] = {1e4f, -1e4f, 0.0f, 5.0f, 5.0f, 5.0f};
    const int t[2] = {1, 2};
    float dz[6] = {0};
    const float loss = loss_cross_entropy(dz, z, t, 2, 3, 0.0f);
    // image 0: lse = 1e4, loss 2e4; image 1: uniform, loss ln 3. Mean of both.
    CU_ASSERT_DOUBLE_EQUAL(loss, (2e4 + log(3.0)) / 2, 1e-2);
    CU_ASSERT_DOUBLE_EQUAL(dz[0], 0.5, 1e-7);  // (1 − 0) / 2
    CU_ASSERT_DOUBLE_EQUAL(dz[1], -0.5, 1e-7); // (0 − 1) / 2
    CU_ASSERT_DOUBLE_EQUAL(dz[5], (1.0 / 3 - 1) / 2, 1e-7);
    // gradient rows sum to 0 (both softmax and q sum to 1), smoothing or not
    float dz2[6] = {0};
    loss_cross_entropy(dz2, z, t, 2, 3, 0.3f);
    CU_ASSERT_DOUBLE_EQUAL(dz2[0] + dz2[1] + dz2[2], 0.0, 1e-7);
    CU_ASSERT_DOUBLE_EQUAL(dz2[1], (0.0 - (0.7 + 0.1)) / 2, 1e-7); // q on target: 1 − ε + ε/Y
    // perfect uniform prediction under full smoothing (ε = 1): q uniform, loss ln Y, no gradient
    const float flat[3] = {2.0f, 2.0f, 2.0f};
    float dflat[3] = {0};
    CU_ASSERT_DOUBLE_EQUAL(loss_cross_entropy(dflat, flat, t, 1, 3, 1.0f), log(3.0), 1e-6);
    for (int y = 0; y < 3; y++) CU_ASSERT_DOUBLE_EQUAL(dflat[y], 0.0, 1e-7);
}

/* ------------------------------------------ the accumulating products */

// matmul_acc, matmul_bt_acc and matmul_at_acc: every backend and tiled kernel
// against the naive loops, on shapes crossing the tiled kernel's blocks (K > 256,
// M > 144) and its tile edges; out prefilled, so the test sees the adding.
static void test_gemm_acc_backends_match_naive(void) {
    static const int shapes[][3] = {{1, 1, 1}, {7, 4, 7}, {37, 300, 45}, {150, 19, 33}};
    static const char *const kernels[] = {"avx512", "avx2", "portable"};
    typedef void Acc(float *, const float *, const float *, int, int, int);
    Acc *fast[3] = {matmul_acc, matmul_bt_acc, matmul_at_acc};
    Acc *naive[3] = {matmul_acc_naive, matmul_bt_acc_naive, matmul_at_acc_naive};
    for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
        const int m = shapes[s][0], k = shapes[s][1], n = shapes[s][2];
        Rng rng;
        rng_seed(&rng, 40 + s);
        float *a = new_floats((size_t)m * k), *b = new_floats((size_t)k * n);
        float *start = new_floats((size_t)m * n), *want = new_floats((size_t)m * n);
        float *got = new_floats((size_t)m * n);
        rng_fill_uniform(&rng, a, (size_t)m * k, -1, 1);
        rng_fill_uniform(&rng, b, (size_t)k * n, -1, 1);
        rng_fill_uniform(&rng, start, (size_t)m * n, -1, 1);
        for (int layout = 0; layout < 3; layout++) {
            memcpy(want, start, sizeof(float) * m * n);
            naive[layout](want, a, b, m, k, n);
            for (int backend = GEMM_NAIVE; backend <= GEMM_BLAS; backend++)
                for (size_t kv = 0; kv < 3; kv++) {
                    if (backend != GEMM_TILED && kv > 0) continue; // one run is enough
                    if (backend == GEMM_TILED && !gemm_set_tiled_kernel(kernels[kv])) continue;
                    gemm_set_backend((GemmBackend)backend);
                    memcpy(got, start, sizeof(float) * m * n);
                    fast[layout](got, a, b, m, k, n);
                    Tensor tg = tensor_view(got, 2, m, n), tw = tensor_view(want, 2, m, n);
                    char label[96];
                    snprintf(label, sizeof label, "%s layout %d, %dx%dx%d, %s",
                             gemm_backend_name((GemmBackend)backend), layout, m, k, n,
                             backend == GEMM_TILED ? kernels[kv] : "");
                    assert_tensor_close(&tg, &tw, 4.0f * 0x1p-24f * (float)(k + 1), 0.0f, label);
                }
            gemm_set_tiled_kernel(NULL);
        }
        free(a), free(b), free(start), free(want), free(got);
    }
    gemm_use_choice(); // the defaults again
    // an empty product adds nothing
    float out[2] = {1.5f, -2.0f};
    matmul_at_acc(out, NULL, NULL, 1, 0, 2);
    CU_ASSERT_EQUAL(out[0], 1.5f);
    CU_ASSERT_EQUAL(out[1], -2.0f);
}

CU_TestInfo tests_backward[] = {
    {"ops_linear_backward matches autograd", test_linear_matches_autograd},
    {"layernorm_backward matches autograd", test_layernorm_matches_autograd},
    {"gelu_backward matches autograd", test_gelu_matches_autograd},
    {"softmax_backward matches autograd (masked rows)", test_softmax_matches_autograd},
    {"loss_cross_entropy matches PyTorch (smoothing, big logits)", test_cross_entropy_matches_pytorch},
    {"attention backward matches autograd", test_attention_matches_autograd},
    {"attention backward matches autograd: causal + key padding, scale 0.3",
     test_attention_masked_matches_autograd},
    {"heads split/merge backward match autograd", test_heads_match_autograd},
    {"patch_embed_backward matches autograd (Conv2d)", test_patch_embed_matches_autograd},
    {"tokens backward matches autograd", test_tokens_match_autograd},
    {"ops_linear_backward: finite differences", test_linear_finite_differences},
    {"layernorm_backward: finite differences", test_layernorm_finite_differences},
    {"gelu_backward: finite differences", test_gelu_finite_differences},
    {"softmax_backward: finite differences (masked rows)", test_softmax_finite_differences},
    {"loss_cross_entropy: finite differences", test_cross_entropy_finite_differences},
    {"attention_scale_mask_backward: finite differences",
     test_attention_scale_mask_finite_differences},
    {"attention_scores_backward: finite differences", test_attention_scores_finite_differences},
    {"attention_context_backward: finite differences", test_attention_context_finite_differences},
    {"attention chained, masked: finite differences", test_attention_chain_finite_differences},
    {"heads split/merge backward: finite differences", test_heads_finite_differences},
    {"patch_embed_backward: finite differences", test_patch_embed_finite_differences},
    {"tokens backward: finite differences", test_tokens_finite_differences},
    {"every backward adds: twice doubles, a prefilled buffer keeps it",
     test_backward_twice_doubles},
    {"every optional gradient may be NULL", test_backward_null_outputs_are_skipped},
    {"layernorm_backward: gamma NULL is ones, rows sum to 0",
     test_layernorm_backward_gamma_null_is_ones},
    {"softmax_backward: a constant gradient gives 0",
     test_softmax_backward_constant_gradient_gives_zero},
    {"loss_cross_entropy: logits of 1e4 are fine, exact cases",
     test_cross_entropy_is_stable_and_exact},
    {"matmul_acc, _bt_acc, _at_acc: every backend equals naive",
     test_gemm_acc_backends_match_naive},
    CU_TEST_INFO_NULL,
};
