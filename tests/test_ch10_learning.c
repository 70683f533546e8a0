/**
 * @file test_ch10_learning.c
 * @brief Chapter 10 against PyTorch, and the claims it makes about gradients, AdamW and
 *        the schedule.
 *
 * `build/tests/run ch10_learning` grades a student's own softmax_backward()
 * and layernorm_backward() too (exercise 10): the claims below call lib's
 * versions, or whatever replaced them at link time.
 *
 * The `derived:` tests are the chapter's derivations, one test each: the formula
 * (p − onehot, the linear layer's three products, GELU' = Φ + x·φ, Adam's step
 * with its bias corrections, …) computed here in double from the golden's
 * inputs, against what autograd or torch.optim computed from the same inputs.
 *
 * The two probes at the end are exercise 10's diagnosis. Each calls the
 * function on crafted rows (an ordinary row, a peaked one, masked entries, a
 * fully masked row, a constant gradient; LayerNorm rows of different means and
 * sizes), first into zeroed buffers, then into prefilled ones (a backward
 * ADDS, ops.h), then with the optional arguments NULL, and compares with the
 * formula written out here in double. When a check fails, the result is
 * compared with what each likely mistake gives (the average of softmax's
 * backward left out or unweighted, the sign flipped, LayerNorm's x̂ term or
 * mean term missing, the mean of dout taken for mean(ĝ), the unbiased
 * variance, γ forgotten, dγ of the last row only, an overwrite instead of +=,
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
#include "train/optim.h"
#include "base/rng.h"

static void test_chapter_matches_pytorch(void) {
    check_chapter_against_golden(chapter10_run, "ch10_learning.safetensors");
}

/* --------------------------------------------------- formulas, in double */

/* softmax_backward() as ops.h says, or with one likely mistake; out is written, not added to. */
enum {
    SM_RIGHT,
    SM_NO_AVERAGE,   // dx = p ⊙ dp
    SM_SIGN,         // dx = p ⊙ (avg − dp)
    SM_UNWEIGHTED,   // avg = mean(dp), not Σ p·dp
    SM_NO_P,         // dx = dp − avg
    SM_DIAGONAL,     // dx = p ⊙ (1 − p) ⊙ dp: the Jacobian's diagonal only
    SM_CARRIED,      // avg summed over this row and every row before it
    SM_MISTAKES,
};
static const char *const SM_HINT[SM_MISTAKES] = {
    NULL,
    "the average sum_j p_j*dp_j is missing: dx_i = p_i*(dp_i - sum_j p_j*dp_j). Raising x_i "
    "also lowers every other p_j (dp_j/dx_i = -p_j*p_i for j != i), and p_i*dp_i alone "
    "leaves that out",
    "the sign is flipped: dx_i = p_i*(dp_i - sum_j p_j*dp_j), not p_i*(sum_j p_j*dp_j - dp_i)",
    "the average must be weighted by p: sum_j p_j*dp_j, the mean of dp under p, not the plain "
    "mean of dp over the row",
    "each term is multiplied by p_i: dx_i = p_i*(dp_i - sum_j p_j*dp_j); without it a masked "
    "entry (p = 0) still gets a gradient",
    "only the diagonal of the Jacobian, p_i*(1 - p_i)*dp_i: the off-diagonal terms "
    "-p_i*p_j*dp_j (j != i) are missing; together they give p_i*(dp_i - sum_j p_j*dp_j)",
    "the average is not reset for each row: sum_j p_j*dp_j runs over one row only, so start "
    "it at 0 for every row",
};

static void softmax_backward_with(float *out, const float *dout, const float *p, int rows,
                                  int cols, int mistake) {
    double carried = 0;
    for (int r = 0; r < rows; r++) {
        const float *pr = p + (size_t)r * cols, *gr = dout + (size_t)r * cols;
        double avg = 0, mean = 0;
        for (int j = 0; j < cols; j++) avg += (double)pr[j] * gr[j], mean += gr[j] / (double)cols;
        carried += avg;
        if (mistake == SM_UNWEIGHTED) avg = mean;
        if (mistake == SM_CARRIED) avg = carried;
        for (int j = 0; j < cols; j++) {
            double v = mistake == SM_NO_AVERAGE ? pr[j] * (double)gr[j]
                       : mistake == SM_SIGN     ? pr[j] * (avg - gr[j])
                       : mistake == SM_NO_P     ? gr[j] - avg
                       : mistake == SM_DIAGONAL ? pr[j] * (1.0 - pr[j]) * gr[j]
                                                : pr[j] * (gr[j] - avg);
            out[(size_t)r * cols + j] = (float)v;
        }
    }
}

/* layernorm_backward() as ops.h says, or with one likely mistake; the outputs are written. */
enum {
    LN_RIGHT,
    LN_NO_XHAT_TERM,  // dx = r·(ĝ − mean ĝ)
    LN_NO_MEAN_TERM,  // dx = r·(ĝ − x̂·mean(ĝ x̂))
    LN_XHAT_SIGN,     // dx = r·(ĝ − mean ĝ + x̂·mean(ĝ x̂))
    LN_MEAN_OF_DOUT,  // dx = r·(ĝ − mean(dout) − x̂·mean(ĝ x̂)): γ left out of the mean term
    LN_UNBIASED,      // σ² = Σ(x − μ)² / (D − 1), in r and x̂
    LN_NO_GAMMA,      // ĝ = dout, γ forgotten (in dx)
    LN_NO_RSTD,       // dx = ĝ − mean ĝ − x̂·mean(ĝ x̂), the factor r forgotten
    LN_LAST_ROW,      // dγ and dβ of the last row only: = instead of += over the rows
    LN_DGAMMA_NO_XHAT, // dγ = Σ dout
    LN_WITH_GAMMA,    // dγ = Σ dout·γ·x̂, dβ = Σ dout·γ
    LN_MISTAKES,
};
static const char *const LN_HINT[LN_MISTAKES] = {
    NULL,
    "the x_hat * mean(g_hat * x_hat) term is missing: dx = r*(g_hat - mean(g_hat) - "
    "x_hat*mean(g_hat*x_hat)), g_hat = dout*gamma. It is the path through the variance: r "
    "depends on x too",
    "the mean(g_hat) term is missing: dx = r*(g_hat - mean(g_hat) - x_hat*mean(g_hat*x_hat)). "
    "It is the path through the mean mu, which every x_j moves by 1/D",
    "the x_hat term has the wrong sign: dx = r*(g_hat - mean(g_hat) - x_hat*mean(g_hat*x_hat)), "
    "minus, since a larger variance makes r smaller",
    "the mean term is the mean of dout, not of g_hat = dout*gamma: dx = r*(g_hat - "
    "mean(g_hat) - x_hat*mean(g_hat*x_hat)), gamma in every term; the sum of dout alone is "
    "dbeta",
    "r and x_hat come from the unbiased variance, / (D - 1): the forward, and so the backward, "
    "uses the biased variance, sum (x - mu)^2 / D, as nn.LayerNorm does",
    "g_hat = dout * gamma: the gradient of x_hat is dout times gamma (y = gamma*x_hat + beta), "
    "not dout alone; dgamma and dbeta take dout itself",
    "every term of dx is multiplied by r = 1/sqrt(var + eps): dx = r*(g_hat - mean(g_hat) - "
    "x_hat*mean(g_hat*x_hat))",
    "dgamma and dbeta hold only the last row's share: every row uses the same gamma and beta, "
    "so each row's dout*x_hat and dout are added to them (+=, over all rows)",
    "dgamma = sum over the rows of dout * x_hat (y = gamma*x_hat + beta); the sum of dout alone "
    "is dbeta",
    "dgamma = sum of dout * x_hat and dbeta = sum of dout, without gamma: y = gamma*x_hat + beta, "
    "so gamma multiplies only what goes back to x",
};

static void layernorm_backward_with(float *dx, float *dgamma, float *dbeta, const float *dout,
                                    const float *x, const float *gamma, int rows, int dim,
                                    double eps, int mistake) {
    if (dgamma) memset(dgamma, 0, sizeof(float) * dim);
    if (dbeta) memset(dbeta, 0, sizeof(float) * dim);
    double *dg = calloc((size_t)dim, sizeof(double)), *db = calloc((size_t)dim, sizeof(double));
    for (int r = 0; r < rows; r++) {
        const float *xr = x + (size_t)r * dim, *gr = dout + (size_t)r * dim;
        double mu = 0, var = 0;
        for (int j = 0; j < dim; j++) mu += xr[j];
        mu /= dim;
        for (int j = 0; j < dim; j++) var += (xr[j] - mu) * (xr[j] - mu);
        var /= mistake == LN_UNBIASED ? dim - 1 : dim;
        const double rstd = 1.0 / sqrt(var + eps);
        double mean_g = 0, mean_gx = 0;
        for (int j = 0; j < dim; j++) {
            const double gm = gamma ? gamma[j] : 1.0;
            const double ghat = mistake == LN_NO_GAMMA ? gr[j] : gr[j] * gm;
            mean_g += (mistake == LN_MEAN_OF_DOUT ? gr[j] : ghat) / dim;
            mean_gx += ghat * (xr[j] - mu) * rstd / dim;
        }
        for (int j = 0; j < dim; j++) {
            const double gm = gamma ? gamma[j] : 1.0;
            const double ghat = mistake == LN_NO_GAMMA ? gr[j] : gr[j] * gm;
            const double xhat = (xr[j] - mu) * rstd;
            double v = mistake == LN_NO_XHAT_TERM ? ghat - mean_g
                       : mistake == LN_NO_MEAN_TERM ? ghat - xhat * mean_gx
                       : mistake == LN_XHAT_SIGN    ? ghat - mean_g + xhat * mean_gx
                                                    : ghat - mean_g - xhat * mean_gx;
            if (mistake != LN_NO_RSTD) v *= rstd;
            if (dx) dx[(size_t)r * dim + j] = (float)v;
            const double share = mistake == LN_WITH_GAMMA ? gr[j] * gm : gr[j];
            if (mistake == LN_LAST_ROW) dg[j] = 0, db[j] = 0;
            dg[j] += share * (mistake == LN_DGAMMA_NO_XHAT ? 1.0 : xhat);
            db[j] += share;
        }
    }
    for (int j = 0; j < dim; j++) {
        if (dgamma) dgamma[j] = (float)dg[j];
        if (dbeta) dbeta[j] = (float)db[j];
    }
    free(dg), free(db);
}

/* ------------------------------------------------------------- the claims */

// A property that zeros satisfy too proves nothing: the gradient must be there at all.
static bool some_gradient(const float *g, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (fabsf(g[i]) > 1e-3f) return true;
    return false;
}

// p (rows, cols) = softmax of random logits of std 2, in double.
static void random_probs(float *p, int rows, int cols, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed);
    rng_fill_normal(&rng, p, (size_t)rows * cols, 0.0f, 2.0f);
    for (int r = 0; r < rows; r++) {
        float *row = p + (size_t)r * cols;
        double m = -INFINITY, s = 0;
        for (int j = 0; j < cols; j++) m = fmax(m, row[j]);
        for (int j = 0; j < cols; j++) s += exp(row[j] - m);
        for (int j = 0; j < cols; j++) row[j] = (float)(exp(row[j] - m) / s);
    }
}

static void test_softmax_backward_rows_sum_to_zero(void) {
    // every row of dx sums to 0; a gradient constant along a row gives 0
    enum { R = 6, C = 9 };
    float p[R * C], dp[R * C], dx[R * C] = {0};
    random_probs(p, R, C, 101);
    Rng rng;
    rng_seed(&rng, 102);
    rng_fill_normal(&rng, dp, R * C, 0.0f, 1.0f);
    softmax_backward(dx, dp, p, R, C);
    CU_ASSERT_TRUE(some_gradient(dx, R * C));
    for (int r = 0; r < R; r++) {
        double s = 0;
        for (int j = 0; j < C; j++) s += dx[r * C + j];
        CU_ASSERT_DOUBLE_EQUAL(s, 0.0, 1e-6);
    }
    for (int i = 0; i < R * C; i++) dp[i] = 0.75f, dx[i] = 0.0f;
    softmax_backward(dx, dp, p, R, C);
    for (int i = 0; i < R * C; i++) CU_ASSERT_DOUBLE_EQUAL(dx[i], 0.0, 1e-7);
}

static void test_softmax_backward_is_the_jacobian_product(void) {
    // dx = J·dp with J_ij = ∂p_j/∂x_i = p_j·(δ_ij − p_i), built in full
    enum { C = 7 };
    float p[C], dp[C], dx[C] = {0};
    random_probs(p, 1, C, 103);
    Rng rng;
    rng_seed(&rng, 104);
    rng_fill_normal(&rng, dp, C, 0.0f, 1.0f);
    softmax_backward(dx, dp, p, 1, C);
    for (int i = 0; i < C; i++) {
        double want = 0;
        for (int j = 0; j < C; j++) want += (double)p[j] * ((i == j) - p[i]) * dp[j];
        CU_ASSERT_DOUBLE_EQUAL(dx[i], want, 1e-6);
    }
}

static void test_layernorm_backward_ignores_shift_and_scale(void) {
    // dx has no part along 1 (a shift) nor, but for ε, along x̂ (a scaling)
    enum { R = 4, D = 16 };
    float x[R * D], gamma[D], dout[R * D], dx[R * D] = {0};
    Rng rng;
    rng_seed(&rng, 105);
    rng_fill_normal(&rng, x, R * D, 1.0f, 3.0f);
    rng_fill_normal(&rng, gamma, D, 1.0f, 0.3f);
    rng_fill_normal(&rng, dout, R * D, 0.0f, 1.0f);
    layernorm_backward(dx, NULL, NULL, dout, x, gamma, R, D, 1e-6f);
    CU_ASSERT_TRUE(some_gradient(dx, R * D));
    for (int r = 0; r < R; r++) {
        const float *xr = x + r * D, *d = dx + r * D;
        double mu = 0, var = 0, sum = 0, along = 0;
        for (int j = 0; j < D; j++) mu += xr[j] / D;
        for (int j = 0; j < D; j++) var += (xr[j] - mu) * (xr[j] - mu) / D;
        for (int j = 0; j < D; j++) sum += d[j], along += d[j] * (xr[j] - mu) / sqrt(var + 1e-6);
        CU_ASSERT_DOUBLE_EQUAL(sum, 0.0, 1e-5);
        CU_ASSERT_DOUBLE_EQUAL(along, 0.0, 1e-5);
    }
}

static void test_layernorm_backward_sums_gamma_and_beta_over_rows(void) {
    // dγ and dβ of R rows at once are the sums of R one-row calls
    enum { R = 5, D = 8 };
    float x[R * D], gamma[D], dout[R * D], dg[D] = {0}, db[D] = {0}, dg1[D] = {0}, db1[D] = {0};
    Rng rng;
    rng_seed(&rng, 106);
    rng_fill_normal(&rng, x, R * D, 0.0f, 2.0f);
    rng_fill_normal(&rng, gamma, D, 1.0f, 0.3f);
    rng_fill_normal(&rng, dout, R * D, 0.0f, 1.0f);
    layernorm_backward(NULL, dg, db, dout, x, gamma, R, D, 1e-6f);
    CU_ASSERT_TRUE(some_gradient(dg, D));
    CU_ASSERT_TRUE(some_gradient(db, D));
    for (int r = 0; r < R; r++)
        layernorm_backward(NULL, dg1, db1, dout + r * D, x + r * D, gamma, 1, D, 1e-6f);
    for (int j = 0; j < D; j++) {
        CU_ASSERT_DOUBLE_EQUAL(dg[j], dg1[j], 1e-5);
        CU_ASSERT_DOUBLE_EQUAL(db[j], db1[j], 1e-5);
    }
}

static void test_adamw_first_step_moves_by_the_learning_rate(void) {
    // m̂/√v̂ = g/|g| at step 1: every parameter moves by η against its gradient's sign
    enum { N = 6 };
    float theta[N] = {0.5f, -1.0f, 2.0f, 0.0f, 3.0f, -0.25f};
    float g[N] = {1e-4f, -3e-3f, 10.0f, -250.0f, 0.5f, 1e-2f}, start[N];
    memcpy(start, theta, sizeof start);
    OptimParam p = {.data = theta, .grad = g, .numel = N, .decay = false};
    AdamW opt;
    VitError err;
    AdamWConfig cfg = adamw_defaults();
    CU_ASSERT_EQUAL_FATAL(adamw_init(&opt, &p, 1, &cfg, &err), VIT_OK);
    adamw_step(&opt, 1e-3);
    for (int i = 0; i < N; i++)
        CU_ASSERT_DOUBLE_EQUAL(start[i] - theta[i], g[i] > 0 ? 1e-3 : -1e-3, 2e-7);
    adamw_free(&opt);
}

static void test_weight_decay_alone_shrinks_geometrically(void) {
    // zero gradients: the decayed tensor is multiplied by (1 − ηλ) each step, the other stays
    float w[3] = {1.0f, -2.0f, 0.5f}, b[3] = {1.0f, -2.0f, 0.5f}, zero[3] = {0};
    OptimParam two[2] = {{.data = w, .grad = zero, .numel = 3, .decay = true},
                         {.data = b, .grad = zero, .numel = 3, .decay = false}};
    AdamW opt;
    VitError err;
    AdamWConfig cfg = adamw_defaults();
    cfg.weight_decay = 0.1;
    CU_ASSERT_EQUAL_FATAL(adamw_init(&opt, two, 2, &cfg, &err), VIT_OK);
    for (int s = 0; s < 200; s++) adamw_step(&opt, 1e-2);
    const double factor = pow(1.0 - 1e-2 * 0.1, 200);
    CU_ASSERT_DOUBLE_EQUAL(w[0], factor, 1e-5);
    CU_ASSERT_DOUBLE_EQUAL(w[1], -2.0 * factor, 1e-5);
    CU_ASSERT_EQUAL(b[0], 1.0f);
    CU_ASSERT_EQUAL(b[1], -2.0f);
    CU_ASSERT_EQUAL(b[2], 0.5f);
    adamw_free(&opt);
}

/* ------------------------------------------- the derivations, against autograd */

/* Each test below computes one of the chapter's derived formulas here, in double, from the
 * inputs stored in the golden, and compares it with what PyTorch's autograd (or
 * torch.optim) computed from the same inputs: an answer key per derivation. */

#define GOLDEN "ch10_learning.safetensors"

// want[i] against the golden tensor @p name, entry by entry.
static void assert_golden(const char *name, const double *want, size_t n, double tol) {
    Tensor g = golden_tensor(GOLDEN, name);
    CU_ASSERT_EQUAL_FATAL(g.numel, n);
    for (size_t i = 0; i < n; i++) CU_ASSERT_DOUBLE_EQUAL(g.data[i], want[i], tol);
    tensor_free(&g);
}

// dℓ/dz = p − q, q the (smoothed) target: the formula of Section 1 from a golden's p.
static void cross_entropy_formula(double *dz, const Tensor *p, int target, double smoothing) {
    const size_t Y = p->numel;
    for (size_t y = 0; y < Y; y++)
        dz[y] = p->data[y] - ((1.0 - smoothing) * ((int)y == target) + smoothing / (double)Y);
}

static void test_cross_entropy_gradient_is_p_minus_target(void) {
    // ∂ℓ/∂z = p − onehot from the softmax's Jacobian; with smoothing ε, p − q
    double dz[16];
    Tensor p = golden_tensor(GOLDEN, "probabilities"); // the ViT's image, class 3
    cross_entropy_formula(dz, &p, 3, 0.0);
    assert_golden("dlogits", dz, p.numel, 1e-6);
    tensor_free(&p);
    p = golden_tensor(GOLDEN, "wrong.p");
    cross_entropy_formula(dz, &p, 1, 0.0);
    assert_golden("wrong.dz_ce", dz, p.numel, 1e-6);
    tensor_free(&p);
    p = golden_tensor(GOLDEN, "smooth.p");
    cross_entropy_formula(dz, &p, 1, 0.0);
    assert_golden("smooth.dz_plain", dz, p.numel, 1e-6);
    cross_entropy_formula(dz, &p, 1, 0.1);
    assert_golden("smooth.dz_smooth", dz, p.numel, 1e-6);
    tensor_free(&p);
}

static void test_squared_error_saturates_where_cross_entropy_does_not(void) {
    // ½‖p − onehot‖² through the Jacobian: dz_i = p_i·((p_i − y_i) − Σ_j p_j·(p_j − y_j))
    Tensor p = golden_tensor(GOLDEN, "wrong.p");
    const int Y = (int)p.numel, t = 1;
    double avg = 0, dz[16];
    for (int j = 0; j < Y; j++) avg += p.data[j] * (p.data[j] - (j == t));
    for (int i = 0; i < Y; i++) dz[i] = p.data[i] * ((p.data[i] - (i == t)) - avg);
    assert_golden("wrong.dz_sq", dz, (size_t)Y, 1e-6);
    // the claim: a hundred times weaker pull on z_t than the cross-entropy's p_t − 1
    CU_ASSERT_TRUE((1.0 - p.data[t]) > 100 * fabs(dz[t]));
    tensor_free(&p);
}

static void test_linear_backward_formula(void) {
    // dx = dout·W, dW = doutᵀ·x, db = Σ_n dout_n
    Tensor x = golden_tensor(GOLDEN, "linear.x"), w = golden_tensor(GOLDEN, "linear.W");
    Tensor dout = golden_tensor(GOLDEN, "linear.dout");
    enum { N = 2, I = 3, O = 2 };
    double dx[N * I] = {0}, dw[O * I] = {0}, db[O] = {0};
    for (int n = 0; n < N; n++)
        for (int k = 0; k < O; k++) {
            const double g = dout.data[n * O + k];
            db[k] += g;
            for (int i = 0; i < I; i++) {
                dx[n * I + i] += g * w.data[k * I + i];
                dw[k * I + i] += g * x.data[n * I + i];
            }
        }
    assert_golden("linear.dx", dx, N * I, 1e-6);
    assert_golden("linear.dW", dw, O * I, 1e-6);
    assert_golden("linear.db", db, O, 1e-6);
    tensor_free(&x), tensor_free(&w), tensor_free(&dout);
}

static void test_gelu_and_residual_backward_formula(void) {
    // GELU'(x) = Φ(x) + x·φ(x); through y = x + GELU(x), 1 + GELU'(x)
    Tensor x = golden_tensor(GOLDEN, "gelu.x");
    double slope[8], through[8];
    for (size_t i = 0; i < x.numel; i++) {
        const double v = x.data[i];
        slope[i] = 0.5 * (1.0 + erf(v / sqrt(2.0))) + v * exp(-0.5 * v * v) / sqrt(2.0 * 3.14159265358979323846);
        through[i] = 1.0 + slope[i];
    }
    assert_golden("gelu.dx", slope, x.numel, 1e-6);
    assert_golden("residual.dx", through, x.numel, 1e-6);
    tensor_free(&x);
}

static void test_cls_and_position_backward_formula(void) {
    // dpos = Σ_b dembed_b; dcls = Σ_b dembed_b[0]; dpatch_b = dembed_b[1…P]
    enum { B = 2, N = 3, D = 3, P = N - 1 };
    Tensor de = golden_tensor(GOLDEN, "tokens.dembed");
    double dpos[N * D] = {0}, dcls[D] = {0}, dpatch[B * P * D];
    for (int b = 0; b < B; b++)
        for (int i = 0; i < N * D; i++) {
            const double g = de.data[b * N * D + i];
            dpos[i] += g;
            if (i < D) dcls[i] += g;
            else dpatch[(b * P * D) + i - D] = g;
        }
    assert_golden("tokens.dpos", dpos, N * D, 1e-6);
    assert_golden("tokens.dcls", dcls, D, 1e-6);
    assert_golden("tokens.dpatch", dpatch, B * P * D, 1e-6);
    tensor_free(&de);
}

/// Adam on one parameter, written out in double: the formula of Section 6.
typedef struct {
    double theta; ///< the parameter
    double m, v;  ///< Adam's running means of g and g²
    int t;        ///< steps taken
} AdamByHand;

// One step with gradient g: clipped to max_norm first (0: not), L2 λ added to g, or decoupled λ.
static void adam_by_hand(AdamByHand *a, double g, double lr, double max_norm, double l2,
                         double decoupled) {
    const double b1 = 0.9, b2 = 0.999, eps = 1e-8;
    if (max_norm > 0) g *= fmin(1.0, max_norm / (fabs(g) + 1e-6)); // clip_grad_norm_
    g += l2 * a->theta;                                              // ∂/∂θ of ½λθ²
    a->theta -= lr * decoupled * a->theta;                           // decoupled: beside Adam
    a->t++;
    a->m = b1 * a->m + (1 - b1) * g;
    a->v = b2 * a->v + (1 - b2) * g * g;
    const double mhat = a->m / (1 - pow(b1, a->t)), vhat = a->v / (1 - pow(b2, a->t));
    a->theta -= lr * mhat / (sqrt(vhat) + eps);
}

static void test_adam_written_out_against_torch(void) {
    // m, v, and θ after steps 1 and 2 of θ = 1, g = 0.2 then 0.05, η = 1e-2
    const double g[2] = {0.2f, 0.05f};
    AdamByHand a = {.theta = 1.0};
    double m[2], v[2], theta[2];
    for (int t = 0; t < 2; t++) {
        adam_by_hand(&a, g[t], 1e-2, 0, 0, 0);
        m[t] = a.m, v[t] = a.v, theta[t] = a.theta;
    }
    assert_golden("adam.m", m, 2, 1e-7);
    assert_golden("adam.v", v, 2, 1e-9);
    assert_golden("adam.theta", theta, 2, 2e-7);
}

// The size of each step, in units of η, of section 6's spike (gradient 0.5, 50 at step 51).
static void spike_by_hand(double *size, double max_norm) {
    AdamByHand a = {.theta = 0.0};
    for (int s = 1; s <= 150; s++) {
        const double before = a.theta;
        adam_by_hand(&a, s == 51 ? 50.0 : 0.5, 1e-3, max_norm, 0, 0);
        size[s - 1] = (before - a.theta) / 1e-3;
    }
}

static void test_clipping_a_spike_against_torch(void) {
    static const int shown[] = {1, 50, 51, 52, 60, 100, 150};
    double raw[150], clipped[150], raw_at[7], clipped_at[7];
    spike_by_hand(raw, 0.0);
    spike_by_hand(clipped, 1.0);
    for (int i = 0; i < 7; i++) raw_at[i] = raw[shown[i] - 1], clipped_at[i] = clipped[shown[i] - 1];
    // torch's θ is float32: each step in units of η is good to about 1e-4
    assert_golden("clip.size_raw", raw_at, 7, 1e-3);
    assert_golden("clip.size_clipped", clipped_at, 7, 1e-3);
    CU_ASSERT_TRUE(raw_at[6] < 0.2 && clipped_at[6] > 0.9); // the claim: the spike stalls θ
}

static void test_l2_decay_is_divided_by_the_gradient_size(void) {
    // θ = 1, gradient ±10 in turn, 100 steps of η = 1e-3, λ = 0.05
    AdamByHand plain = {.theta = 1.0}, l2 = {.theta = 1.0}, decoupled = {.theta = 1.0};
    for (int s = 1; s <= 100; s++) {
        const double g = s % 2 ? 10.0 : -10.0;
        adam_by_hand(&plain, g, 1e-3, 0, 0, 0);
        adam_by_hand(&l2, g, 1e-3, 0, 0.05, 0);
        adam_by_hand(&decoupled, g, 1e-3, 0, 0, 0.05);
    }
    const double shrink_l2 = plain.theta - l2.theta;
    const double shrink_decoupled = plain.theta - decoupled.theta;
    // torch.optim.Adam(weight_decay) and torch.optim.AdamW, on float32 θ
    assert_golden("l2.shrink_l2", &shrink_l2, 1, 2e-6);
    assert_golden("l2.shrink_decoupled", &shrink_decoupled, 1, 2e-6);
    CU_ASSERT_TRUE(shrink_l2 < 0.2 * shrink_decoupled); // the claim: L2's pull ≈ ηλθ/√v̂
}

/* -------------------------------------------------------------- the probes */

// How near a result must be to what a mistake gives to be named as that mistake:
// float32 against double, far tighter than any two mistakes are apart.
#define SUSPECT_ATOL 1e-4f
#define SUSPECT_RTOL 1e-3f
// How near it must be to the right answer: float32 against the formula in double.
#define PROBE_ATOL 1e-5f
#define PROBE_RTOL 1e-4f

static bool near(const float *got, const float *want, size_t n) {
    Tensor g = tensor_view((float *)got, 1, (int)n), w = tensor_view((float *)want, 1, (int)n);
    return tensor_near(&g, &w, SUSPECT_ATOL, SUSPECT_RTOL);
}

// dx = got − prefill: what the call added to a prefilled buffer.
static void added(float *out, const float *got, float prefill, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = got[i] - prefill;
}

/* softmax_backward */

// Five crafted rows of 6: ordinary; peaked (one p ≈ 0.99); partly masked; fully masked
// (p all 0); a gradient constant along the row (dx = 0).
enum { SR = 5, SC = 6 };
static void softmax_rows(float *p, float *dp) {
    const float x[SR][SC] = {
        {1.2f, -0.3f, 0.8f, 2.0f, -1.5f, 0.1f},
        {8.0f, 0.0f, 1.0f, -1.0f, 0.5f, 2.0f},
        {0.4f, 1.1f, -INFINITY, 0.0f, -0.7f, -INFINITY},
        {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY},
        {0.3f, -0.2f, 1.4f, 0.9f, -1.0f, 0.6f},
    };
    const float g[SR][SC] = {
        {0.7f, -1.1f, 0.4f, 0.9f, -0.2f, 0.5f},
        {1.5f, 0.3f, -0.6f, 0.2f, 0.8f, -0.9f},
        {-0.5f, 0.9f, 0.3f, 1.2f, -0.4f, 0.6f},
        {0.2f, -0.3f, 0.4f, 0.1f, -0.8f, 0.5f},
        {0.75f, 0.75f, 0.75f, 0.75f, 0.75f, 0.75f},
    };
    for (int r = 0; r < SR; r++) {
        double m = -INFINITY, s = 0;
        for (int j = 0; j < SC; j++) m = fmax(m, x[r][j]);
        for (int j = 0; j < SC; j++) s += m == -INFINITY ? 0 : exp(x[r][j] - m);
        for (int j = 0; j < SC; j++) {
            p[r * SC + j] = m == -INFINITY ? 0.0f : (float)(exp(x[r][j] - m) / s);
            dp[r * SC + j] = g[r][j];
        }
    }
}

// Name the mistake @p got (what softmax_backward added) shows, if one does; how many did.
static int diagnose_softmax_backward(const float *got, const float *dp, const float *p) {
    if (hint_all_zero(got, SR * SC)) {
        check_hint("softmax_backward added nothing to dx: is the exercise's placeholder still "
                   "there?");
        return 1;
    }
    float maybe[SR * SC];
    int found = 0;
    for (int m = SM_RIGHT + 1; m < SM_MISTAKES; m++) {
        softmax_backward_with(maybe, dp, p, SR, SC, m);
        if (near(got, maybe, SR * SC)) check_hint("%s", SM_HINT[m]), found++;
    }
    return found;
}

static void test_probe_softmax_backward(void) {
    float p[SR * SC], dp[SR * SC], want[SR * SC], got[SR * SC], diff[SR * SC];
    softmax_rows(p, dp);
    softmax_backward_with(want, dp, p, SR, SC, SM_RIGHT);
    Tensor g = tensor_view(got, 2, SR, SC), w = tensor_view(want, 2, SR, SC);
    // 1. into zeros
    memset(got, 0, sizeof got);
    softmax_backward(got, dp, p, SR, SC);
    if (!assert_tensor_close(&g, &w, PROBE_ATOL, PROBE_RTOL,
                             "softmax_backward(dx = 0) vs p*(dp - sum_j p_j*dp_j) in double")) {
        if (!diagnose_softmax_backward(got, dp, p)) {
            for (int j = 0; j < SC; j++)
                if (got[3 * SC + j] != 0.0f) {
                    check_hint("the fully masked row (p all 0) must get a gradient of 0, and "
                               "p*(dp - sum_j p_j*dp_j) is 0 there; got %g", (double)got[3 * SC + j]);
                    return;
                }
        }
        return;
    }
    // 2. into a prefilled buffer: the gradient is added to what dx holds
    const float prefill = 0.5f;
    for (int i = 0; i < SR * SC; i++) got[i] = prefill;
    softmax_backward(got, dp, p, SR, SC);
    added(diff, got, prefill, SR * SC);
    Tensor d = tensor_view(diff, 2, SR, SC);
    if (!assert_tensor_close(&d, &w, PROBE_ATOL, PROBE_RTOL,
                             "softmax_backward into dx = 0.5: what it added")) {
        if (near(got, want, SR * SC))
            check_hint("softmax_backward must ADD to dx (dx[i] += ...), not overwrite it: a "
                       "tensor used twice collects both gradients (ops.h)");
    }
}

/* layernorm_backward */

// Three rows of 8: ordinary; mean 5, small; large and skewed. γ around 1.
enum { LR = 3, LD = 8 };
static const float LN_EPS = 1e-6f;
static void layernorm_rows(float *x, float *gamma, float *dout) {
    const float rows[LR][LD] = {
        {0.3f, -1.2f, 2.0f, 0.7f, -0.4f, 1.1f, -2.2f, 0.9f},
        {5.1f, 4.8f, 5.3f, 4.9f, 5.0f, 5.4f, 4.6f, 5.2f},
        {9.0f, -3.0f, 0.5f, 4.0f, -6.5f, 2.0f, 1.0f, -0.5f},
    };
    const float g[LD] = {1.0f, 0.6f, 1.4f, 0.9f, 1.2f, 0.7f, 1.5f, 0.8f};
    const float d[LR][LD] = {
        {0.5f, -0.8f, 0.3f, 1.1f, -0.6f, 0.2f, 0.9f, -0.4f},
        {-1.0f, 0.4f, 0.7f, -0.3f, 0.8f, -0.5f, 0.1f, 0.6f},
        {0.2f, 0.9f, -0.7f, 0.4f, 0.3f, -1.2f, 0.5f, 0.1f},
    };
    memcpy(x, rows, sizeof rows);
    memcpy(gamma, g, sizeof g);
    memcpy(dout, d, sizeof d);
}

// Name the mistake each output shows (what the call added), if one does; how many did.
static int diagnose_layernorm_backward(const float *dx, const float *dg, const float *db,
                                       const float *x, const float *gamma, const float *dout) {
    if (hint_all_zero(dx, LR * LD) && hint_all_zero(dg, LD) && hint_all_zero(db, LD)) {
        check_hint("layernorm_backward added nothing to dx, dgamma or dbeta: is the exercise's "
                   "placeholder still there?");
        return 1;
    }
    float want_dx[LR * LD], want_dg[LD], want_db[LD];
    layernorm_backward_with(want_dx, want_dg, want_db, dout, x, gamma, LR, LD, LN_EPS, LN_RIGHT);
    const bool dx_ok = near(dx, want_dx, LR * LD), dg_ok = near(dg, want_dg, LD);
    const bool db_ok = near(db, want_db, LD);
    float mdx[LR * LD], mdg[LD], mdb[LD];
    int found = 0;
    for (int m = LN_RIGHT + 1; m < LN_MISTAKES; m++) {
        layernorm_backward_with(mdx, mdg, mdb, dout, x, gamma, LR, LD, LN_EPS, m);
        // a mistake is named when every output it changes came out as it would have
        const bool in_dx = !near(mdx, want_dx, LR * LD), in_dg = !near(mdg, want_dg, LD);
        const bool in_db = !near(mdb, want_db, LD);
        bool match = (in_dx || in_dg || in_db);
        if (in_dx) match &= !dx_ok && near(dx, mdx, LR * LD);
        if (in_dg) match &= !dg_ok && near(dg, mdg, LD);
        if (in_db) match &= !db_ok && near(db, mdb, LD);
        if (match) check_hint("%s", LN_HINT[m]), found++;
    }
    return found;
}

static bool ln_close(const float *got, const float *want, int rows, int dim, const char *what) {
    Tensor g = tensor_view((float *)got, 2, rows, dim), w = tensor_view((float *)want, 2, rows, dim);
    return assert_tensor_close(&g, &w, PROBE_ATOL, PROBE_RTOL, what);
}

static void test_probe_layernorm_backward(void) {
    float x[LR * LD], gamma[LD], dout[LR * LD];
    float want_dx[LR * LD], want_dg[LD], want_db[LD];
    float dx[LR * LD], dg[LD], db[LD];
    layernorm_rows(x, gamma, dout);
    layernorm_backward_with(want_dx, want_dg, want_db, dout, x, gamma, LR, LD, LN_EPS, LN_RIGHT);
    // 1. into zeros
    memset(dx, 0, sizeof dx), memset(dg, 0, sizeof dg), memset(db, 0, sizeof db);
    layernorm_backward(dx, dg, db, dout, x, gamma, LR, LD, LN_EPS);
    bool ok = ln_close(dx, want_dx, LR, LD, "layernorm_backward dx vs the formula in double");
    ok &= ln_close(dg, want_dg, 1, LD, "layernorm_backward dgamma vs sum of dout*x_hat");
    ok &= ln_close(db, want_db, 1, LD, "layernorm_backward dbeta vs sum of dout");
    if (!ok) {
        diagnose_layernorm_backward(dx, dg, db, x, gamma, dout);
        return;
    }
    // 2. into prefilled buffers: every gradient is added to what its buffer holds
    const float prefill = 0.5f;
    float adx[LR * LD], adg[LD], adb[LD];
    for (int i = 0; i < LR * LD; i++) dx[i] = prefill;
    for (int j = 0; j < LD; j++) dg[j] = db[j] = prefill;
    layernorm_backward(dx, dg, db, dout, x, gamma, LR, LD, LN_EPS);
    added(adx, dx, prefill, LR * LD), added(adg, dg, prefill, LD), added(adb, db, prefill, LD);
    ok = ln_close(adx, want_dx, LR, LD, "layernorm_backward into dx = 0.5: what it added");
    ok &= ln_close(adg, want_dg, 1, LD, "layernorm_backward into dgamma = 0.5: what it added");
    ok &= ln_close(adb, want_db, 1, LD, "layernorm_backward into dbeta = 0.5: what it added");
    if (!ok) {
        if (near(dx, want_dx, LR * LD) || near(dg, want_dg, LD) || near(db, want_db, LD))
            check_hint("layernorm_backward must ADD to dx, dgamma and dbeta (+=), not overwrite "
                       "them: a tensor used twice collects both gradients (ops.h)");
        return;
    }
    // 3. gamma NULL means ones; dgamma and dbeta NULL are skipped; then dx NULL
    float want_dx1[LR * LD];
    layernorm_backward_with(want_dx1, NULL, NULL, dout, x, NULL, LR, LD, LN_EPS, LN_RIGHT);
    memset(dx, 0, sizeof dx);
    layernorm_backward(dx, NULL, NULL, dout, x, NULL, LR, LD, LN_EPS);
    if (!ln_close(dx, want_dx1, LR, LD, "layernorm_backward(gamma = NULL): gamma is ones")) {
        check_hint("gamma NULL means gamma = 1 (ops.h): g_hat = dout");
        return;
    }
    memset(dg, 0, sizeof dg), memset(db, 0, sizeof db);
    layernorm_backward(NULL, dg, db, dout, x, gamma, LR, LD, LN_EPS);
    ok = ln_close(dg, want_dg, 1, LD, "layernorm_backward(dx = NULL) dgamma");
    ok &= ln_close(db, want_db, 1, LD, "layernorm_backward(dx = NULL) dbeta");
    if (!ok) check_hint("with dx NULL, dgamma and dbeta must still be computed (ops.h)");
}

CU_TestInfo tests_ch10_learning[] = {
    {"chapter matches PyTorch golden", test_chapter_matches_pytorch},
    {"softmax_backward: rows sum to 0, a constant gradient gives 0",
     test_softmax_backward_rows_sum_to_zero},
    {"softmax_backward is the Jacobian's product", test_softmax_backward_is_the_jacobian_product},
    {"layernorm_backward ignores a shift and a scaling",
     test_layernorm_backward_ignores_shift_and_scale},
    {"layernorm_backward sums dgamma and dbeta over the rows",
     test_layernorm_backward_sums_gamma_and_beta_over_rows},
    {"AdamW's first step moves each parameter by the learning rate",
     test_adamw_first_step_moves_by_the_learning_rate},
    {"weight decay alone shrinks by (1 - lr*wd) per step",
     test_weight_decay_alone_shrinks_geometrically},
    {"derived: dloss/dz = p - onehot (or p - q, smoothed), against autograd",
     test_cross_entropy_gradient_is_p_minus_target},
    {"derived: squared error on p saturates where cross-entropy does not, against autograd",
     test_squared_error_saturates_where_cross_entropy_does_not},
    {"derived: a linear layer's dx, dW, db, against autograd", test_linear_backward_formula},
    {"derived: GELU' = Phi + x*phi, and 1 + GELU' through a residual, against autograd",
     test_gelu_and_residual_backward_formula},
    {"derived: dpos, dcls, dpatch are copies and sums, against autograd",
     test_cls_and_position_backward_formula},
    {"derived: Adam's m, v and step with bias correction, against torch.optim.AdamW",
     test_adam_written_out_against_torch},
    {"derived: a gradient spike stalls Adam unless clipped, against torch",
     test_clipping_a_spike_against_torch},
    {"derived: L2 decay through Adam is divided by sqrt(v), decoupled is not, against torch",
     test_l2_decay_is_divided_by_the_gradient_size},
    {"probe: softmax_backward is p*(dp - sum p*dp), added to dx", test_probe_softmax_backward},
    {"probe: layernorm_backward against the formula, added to dx, dgamma, dbeta",
     test_probe_layernorm_backward},
    CU_TEST_INFO_NULL,
};
