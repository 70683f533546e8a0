/**
 * @file 10_learning.c
 * @brief Chapter 10 · Learning by gradient: the loss, backpropagation, and one AdamW step.
 *
 * Training needs one number saying how wrong the model is, the loss, and for
 * every parameter the direction in which it grows, the gradient:
 * \f[ \ell = -\ln \mathrm{softmax}(z)_t,\qquad
 *     \frac{\partial \ell}{\partial z_y} = \mathrm{softmax}(z)_y - [y = t], \f]
 * and, by the chain rule, every layer's gradient from the one above it. The
 * chapter computes the loss of one image on a small random ViT and what its
 * value means; follows the chain rule through one attention head with real
 * numbers (dprobs, dscaled, dscores, dQ, dK); derives the backward of softmax
 * and of LayerNorm step by step and checks each against central differences;
 * takes one AdamW step on the whole model and watches the loss fall; and shows
 * what the learning-rate warm-up and weight decay do.
 *
 * Every number printed is pinned by name and checked against PyTorch
 * (autograd for every gradient, torch.optim.AdamW for the step) by
 * tests/test_ch10_learning.c.
 *
 * Run: `build/chapters/10_learning`
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attention.h"
#include "teach/chapter.h"
#include "chapters.h"
#include "ops/ops.h"
#include "train/optim.h"
#include "base/rng.h"
#include "base/tensor.h"
#include "base/util.h"
#include "model/vit.h"

enum { B = 1 };                          // one image
static const uint64_t MODEL_SEED = 10;   // the small ViT's weights
static const uint64_t IMAGE_SEED = 100;  // its image
static const int TARGET = 3;             // the image's label
static const uint64_t HEAD_SEED = 11;    // Q, K, V and the gradient of section 2
static const float FD_STEP = 1e-3f;      // h of every central difference

/* ------------------------------------------------------------ helpers */

// Pin n values as a 1-D tensor.
static void pin_row(Chapter *ch, const char *name, float *values, int n) {
    Tensor t = tensor_view(values, 1, n);
    ch_pin(ch, name, &t);
}

// Print and pin a (rows, cols) matrix.
static void show(Chapter *ch, const char *name, float *values, int rows, int cols) {
    Tensor t = tensor_view(values, 2, rows, cols);
    ch_show(ch, name, &t);
}

/// A scalar function of some float32 inputs, evaluated by lib's forward, summed in double.
typedef struct {
    double (*at)(void *ctx); // L at the inputs' current values
    void *ctx;
} Objective;

// [central]
// fd[i] = (L(x + h·e_i) − L(x − h·e_i)) / 2h for each of the n inputs x, moved in place
// and restored. 2h is taken as the float32 values really used, x₊ − x₋.
static void central_differences(float *fd, float *x, size_t n, const Objective *L) {
    for (size_t i = 0; i < n; i++) {
        const float x0 = x[i];
        x[i] = x0 + FD_STEP;
        const double up = x[i], l_up = L->at(L->ctx);
        x[i] = x0 - FD_STEP;
        const double down = x[i], l_down = L->at(L->ctx);
        x[i] = x0;
        fd[i] = (float)((l_up - l_down) / (up - down));
    }
}
// [central]

/* ----------------------------------------------------------- the work */

typedef struct {
    Vit vit;              // the small ViT of sections 1 and 5
    const VitConfig *cfg;
    Tensor image;         // (B, C, S, S)
    float loss;           // section 1's loss of the image
} Work;

/* ------------------------------------------------------ 1. the loss */

static void the_loss(Chapter *ch, Work *w) {
    ch_section(ch, "1. The loss of one image");
    const VitConfig *c = w->cfg;
    const int Y = c->num_classes;
    char count[VIT_NUM_BUF];
    ch_say(ch, "The model of this chapter is a ViT like Chapter 09's, only small: "
               "%d×%d images cut into %d×%d patches, so N = %d tokens, of width D = %d, "
               "H = %d heads, M = %d, L = %d blocks and Y = %d classes, %s parameters in all. "
               "Its weights are drawn by Chapter 09's rule (seed %d: std 0.02, biases 0, "
               "LayerNorms 1 and 0). It sees one image of random pixels (seed %d), "
               "whose label we declare to be class %d.",
           c->image_size, c->image_size, c->patch_size, c->patch_size, vit_num_tokens(c),
           c->dim, c->heads, c->mlp_dim, c->depth, Y,
           vit_thousands(count, (int64_t)ch_value(ch, "model.params", (float)vit_param_count(c))),
           (int)MODEL_SEED, (int)IMAGE_SEED, TARGET);
    float *probs = vit_malloc(sizeof(float) * Y), *dlogits = vit_calloc(Y, sizeof(float));
    VitError err;
    // [loss]
    if (vit_forward(&w->vit, &w->image, NULL, NULL, &err) != VIT_OK) {
        ch_say(ch, "the forward pass failed: %s", err.msg);
        free(probs), free(dlogits);
        return;
    }
    Tensor logits = vit_logits(&w->vit);          // (B, Y): one score per class
    const float loss = loss_cross_entropy(dlogits, logits.data, &TARGET, B, Y, 0.0f);
    // [loss]
    softmax(probs, logits.data, B, Y);
    ch_show(ch, "logits", &logits);
    Tensor tp = tensor_view(probs, 2, B, Y), td = tensor_view(dlogits, 2, B, Y);
    ch_show(ch, "probabilities", &tp);
    w->loss = ch_value(ch, "loss", loss);
    ch_say(ch, "The loss is the cross-entropy: minus the logarithm of the probability "
               "the model gives the right class, ℓ = −ln softmax(z)_t. Here p_%d = %.4f, so "
               "ℓ = −ln %.4f = %.4f. loss_cross_entropy() (lib/ops/loss.c) computes it as "
               "log Σ_y e^(z_y) − z_t, the log-sum-exp, which never takes the logarithm of "
               "a probability too small for a float.",
           TARGET, ch_value(ch, "p_target", probs[TARGET]), probs[TARGET], loss);
    Tensor tl = tensor_view(logits.data, 1, Y);
    ch_say(ch, "What does %.4f mean? A model that knows nothing and spreads its belief "
               "evenly, p = 1/Y for every class, has a loss of ln Y = ln %d = %.4f. Ours "
               "is near it because its logits are small (std %.4f): weights of std 0.02 "
               "make every class about equally likely. A loss near ln Y before any "
               "training is what a healthy initialisation gives; a loss far above it "
               "would mean the model starts out confidently wrong. The loss reaches 0 "
               "only as p_t reaches 1:",
           loss, Y, ch_value(ch, "ln_classes", logf((float)Y)),
           ch_value(ch, "logits_std", (float)tensor_stats(&tl).std));
    float pt[] = {0.01f, 0.1f, 0.5f, 0.9f, 0.99f}, lt[5];
    ch_line(ch, "    p_t      %7s %7s %7s %7s %7s", "0.01", "0.1", "0.5", "0.9", "0.99");
    for (int i = 0; i < 5; i++) lt[i] = -logf(pt[i]);
    pin_row(ch, "table.p", pt, 5);
    pin_row(ch, "table.loss", lt, 5);
    ch_line(ch, "    −ln p_t  %7.4f %7.4f %7.4f %7.4f %7.4f", lt[0], lt[1], lt[2], lt[3], lt[4]);
    ch_line(ch, "%s", "");
    double sum = 0;
    for (int y = 0; y < Y; y++) sum += dlogits[y];
    ch_say(ch, "To lower the loss, the model must know which way each logit should move. "
               "The gradient of ℓ with respect to the logits is simply p − onehot(t) "
               "(ops.h): every wrong class is pushed down by its own probability, the "
               "right one pulled up by 1 − p_t = %.4f, and the %d entries sum to 0 (here "
               "%.1e): raising every logit alike changes no probability.",
           -ch_value(ch, "dlogits_target", dlogits[TARGET]), Y,
           ch_value(ch, "dlogits_sum", (float)sum));
    ch_show(ch, "dlogits", &td);
    ch_say(ch, "Everything before the logits gets its gradient from this one by the chain "
               "rule, layer by layer from the last back to the first: backpropagation. "
               "Every forward function of lib has its backward beside it (lib/ops/ops.h, "
               "lib/attention/attention.h), which takes the gradient of its output and adds the "
               "gradients of its inputs. Sections 2 to 4 follow it through attention, "
               "softmax and LayerNorm; Section 5 runs the whole model's.");
    free(probs), free(dlogits);
}

/* ------------------------------------------- 2. through one attention head */

enum { HN = 4, HDH = 3 }; // the head of section 2: 4 tokens of width 3

typedef struct {
    float q[HN * HDH], k[HN * HDH], v[HN * HDH], dcontext[HN * HDH];
    float scores[HN * HN], scaled[HN * HN], probs[HN * HN], context[HN * HDH];
} Head;

// [head_forward]
// One head (chapter 04): context = softmax(Q·Kᵀ/√Dh)·V, for N = 4 tokens of width Dh = 3.
static void head_forward(Head *h) {
    attention_scores(h->scores, h->q, h->k, 1, HN, HDH);             // Q·Kᵀ
    attention_scale_mask(h->scaled, h->scores, NULL, 1, 1, HN, HDH); // ÷ √Dh
    softmax(h->probs, h->scaled, HN, HN);                            // each row
    attention_context(h->context, h->probs, h->v, 1, HN, HDH);       // probs·V
}
// [head_forward]

// L = Σ dcontext ⊙ context: the loss whose gradient of the context is dcontext.
static double head_objective(void *ctx) {
    Head *h = ctx;
    head_forward(h);
    double L = 0;
    for (int i = 0; i < HN * HDH; i++) L += (double)h->dcontext[i] * h->context[i];
    return L;
}

static float max_abs(const float *x, size_t n) {
    float m = 0;
    for (size_t i = 0; i < n; i++) m = fmaxf(m, fabsf(x[i]));
    return m;
}

static void through_a_head(Chapter *ch) {
    ch_section(ch, "2. The chain rule through one attention head");
    Head h;
    Rng rng;
    rng_seed(&rng, HEAD_SEED);
    rng_fill_normal(&rng, h.q, HN * HDH, 0.0f, 1.0f);
    rng_fill_normal(&rng, h.k, HN * HDH, 0.0f, 1.0f);
    rng_fill_normal(&rng, h.v, HN * HDH, 0.0f, 1.0f);
    rng_fill_normal(&rng, h.dcontext, HN * HDH, 0.0f, 1.0f);
    head_forward(&h);
    ch_say(ch, "Backpropagation is the chain rule applied one operation at a time, from "
               "the output back. Take one head of Chapter 04, %d tokens of width Dh = %d, "
               "with random queries, keys and values:", HN, HDH);
    show(ch, "Q", h.q, HN, HDH);
    show(ch, "K", h.k, HN, HDH);
    show(ch, "V", h.v, HN, HDH);
    ch_say(ch, "Forward, as in Chapter 04: scores = Q·Kᵀ, scaled = scores/√Dh, probs = "
               "softmax(scaled) row by row, context = probs·V. The attention matrix:");
    show(ch, "probs", h.probs, HN, HN);
    ch_say(ch, "Say the layers above hand back this gradient of the context, dcontext = "
               "∂L/∂context (random here; in a model it comes from the output "
               "projection's backward):");
    show(ch, "dcontext", h.dcontext, HN, HDH);
    float dprobs[HN * HN] = {0}, dv[HN * HDH] = {0}, dscaled[HN * HN] = {0};
    float dscores[HN * HN] = {0}, dq[HN * HDH] = {0}, dk[HN * HDH] = {0};
    // [head_backward]
    // The four steps of the forward, undone in reverse order; each backward ADDS.
    attention_context_backward(dprobs, dv, h.dcontext, h.probs, h.v, 1, HN, HDH);
    softmax_backward(dscaled, dprobs, h.probs, HN, HN);
    attention_scale_mask_backward(dscores, dscaled, NULL, 1, 1, HN, HDH);
    attention_scores_backward(dq, dk, dscores, h.q, h.k, 1, HN, HDH);
    // [head_backward]
    ch_say(ch, "Step 1, back through context = probs·V. Row i of the context is a "
               "weighted sum of the value rows, context_i = Σ_j p_ij·v_j. So the weight "
               "p_ij gets the dot product of dcontext row i with value row j, dprobs = "
               "dcontext·Vᵀ, and value row j collects from every query that looked at it, "
               "dV = probsᵀ·dcontext (attention_context_backward()):");
    show(ch, "dprobs", dprobs, HN, HN);
    show(ch, "dV", dv, HN, HDH);
    float row_sum[HN];
    for (int i = 0; i < HN; i++) {
        double s = 0;
        for (int j = 0; j < HN; j++) s += dscaled[i * HN + j];
        row_sum[i] = (float)s;
    }
    ch_say(ch, "Step 2, back through the softmax, row by row (Section 3 derives it): "
               "dscaled_ij = p_ij·(dprobs_ij − Σ_k p_ik·dprobs_ik). Every row of dscaled "
               "sums to 0 (the largest row sum here is %.1e): adding one number to a "
               "whole row of scores changes no probability, so no gradient points that "
               "way.", ch_value(ch, "dscaled_max_row_sum", max_abs(row_sum, HN)));
    show(ch, "dscaled", dscaled, HN, HN);
    ch_say(ch, "Step 3, back through the scale: scaled = scores·s with s = 1/√%d = %.4f, so "
               "dscores = s·dscaled (attention_scale_mask_backward()):", HDH,
           ch_value(ch, "scale", attention_scale(NULL, HDH)));
    show(ch, "dscores", dscores, HN, HN);
    ch_say(ch, "Step 4, back through scores = Q·Kᵀ, score_ij = q_i·k_j: query i collects "
               "the keys it was compared with, each weighted by that score's gradient, "
               "dQ = dscores·K, and key j the queries, dK = dscoresᵀ·Q "
               "(attention_scores_backward()):");
    show(ch, "dQ", dq, HN, HDH);
    show(ch, "dK", dk, HN, HDH);
    // The check: move each input by ±h and run the forward again.
    float fd[HN * HDH];
    const Objective L = {head_objective, &h};
    central_differences(fd, h.q, HN * HDH, &L);
    const float diff_q = ch_max_diff(ch, "dQ.fd_max_diff", dq, fd, HN * HDH);
    central_differences(fd, h.k, HN * HDH, &L);
    const float diff_k = ch_max_diff(ch, "dK.fd_max_diff", dk, fd, HN * HDH);
    central_differences(fd, h.v, HN * HDH, &L);
    const float diff_v = ch_max_diff(ch, "dV.fd_max_diff", dv, fd, HN * HDH);
    ch_say(ch, "Is it right? With L = Σ dcontext ⊙ context, whose gradient of the context "
               "is dcontext by construction, move one entry of Q by ±h = %g, run the "
               "forward twice and divide the change in L by 2h: a central difference, "
               "which owes nothing to the chain rule. Over every entry, the largest "
               "difference from the gradients above is %.1e for dQ, %.1e for dK and %.1e "
               "for dV, float32's rounding (Section 3 says why), where a wrong formula "
               "would be off by a tenth or more. PyTorch's autograd, running the same "
               "forward in float64, gives the same six gradients; the chapter's test "
               "checks every entry.", (double)FD_STEP, diff_q, diff_k, diff_v);
}

/* -------------------------------------------------- 3. softmax's backward */

enum { SM = 5 }; // one row of 5 scores
static const float SM_X[SM] = {2.0f, 1.0f, 0.1f, -1.0f, 0.5f};
static const float SM_DP[SM] = {0.5f, -1.0f, 0.25f, 0.8f, -0.3f};

typedef struct {
    float x[SM], p[SM];
} SoftmaxRow;

// L = Σ dp ⊙ softmax(x).
static double softmax_objective(void *ctx) {
    SoftmaxRow *s = ctx;
    softmax(s->p, s->x, 1, SM);
    double L = 0;
    for (int j = 0; j < SM; j++) L += (double)SM_DP[j] * s->p[j];
    return L;
}

static void softmax_gradient(Chapter *ch) {
    ch_section(ch, "3. The backward of softmax");
    ch_say(ch, "p = softmax(x) makes each p_j depend on every x_i, through the sum in "
               "its denominator. With S = Σ_k e^(x_k) and the quotient rule:");
    ch_line(ch, "    p_j = e^(x_j) / S");
    ch_line(ch, "    ∂p_i/∂x_i = (e^(x_i)·S − e^(x_i)·e^(x_i)) / S² = p_i − p_i²");
    ch_line(ch, "    ∂p_j/∂x_i = −e^(x_j)·e^(x_i) / S² = −p_j·p_i            (j ≠ i)");
    ch_line(ch, "    together: ∂p_j/∂x_i = p_j·(δ_ij − p_i)");
    ch_line(ch, "%s", "");
    ch_say(ch, "Raising x_i raises p_i and takes from every other p_j in proportion to "
               "p_j. Given the gradient dp = ∂L/∂p of the output, the chain rule sums "
               "over the outputs:");
    ch_line(ch, "    dx_i = Σ_j dp_j·∂p_j/∂x_i = p_i·dp_i − p_i·Σ_j p_j·dp_j");
    ch_line(ch, "         = p_i·(dp_i − Σ_j p_j·dp_j)");
    ch_line(ch, "%s", "");
    ch_say(ch, "Σ_j p_j·dp_j is the average of dp under p: each x_i is pushed by how much "
               "its own dp_i exceeds that average, scaled by p_i. One dot product and one "
               "pass over the row, never the %d × %d Jacobian. That is all of "
               "softmax_backward(), lib/backward/softmax_backward.c:", SM, SM);
    SoftmaxRow s;
    memcpy(s.x, SM_X, sizeof s.x);
    softmax(s.p, s.x, 1, SM);
    float dx[SM] = {0}, dp[SM];
    memcpy(dp, SM_DP, sizeof dp);
    // [softmax_row]
    double avg = 0; // Σ_j p_j·dp_j, by hand
    for (int j = 0; j < SM; j++) avg += (double)s.p[j] * dp[j];
    softmax_backward(dx, dp, s.p, 1, SM); // lib: dx += p ⊙ (dp − avg)
    // [softmax_row]
    pin_row(ch, "softmax.x", s.x, SM);
    pin_row(ch, "softmax.p", s.p, SM);
    pin_row(ch, "softmax.dp", dp, SM);
    pin_row(ch, "softmax.dx", dx, SM);
    ch_say(ch, "One row of %d scores x, a gradient dp from above, and Σ_j p_j·dp_j = %.4f:",
           SM, ch_value(ch, "softmax.avg", (float)avg));
    ch_line(ch, "     j       x       p      dp   dp − avg        dx");
    double dx_sum = 0;
    for (int j = 0; j < SM; j++) {
        ch_line(ch, "    %2d  %6.3f  %6.4f  %6.3f   %8.4f  %8.5f", j, s.x[j], s.p[j], dp[j],
                dp[j] - avg, dx[j]);
        dx_sum += dx[j];
    }
    ch_line(ch, "%s", "");
    // The Jacobian, built once to show it is what the formula applies.
    float jac[SM * SM], jdx[SM];
    for (int i = 0; i < SM; i++)
        for (int j = 0; j < SM; j++) jac[i * SM + j] = s.p[j] * ((i == j) - s.p[i]);
    for (int i = 0; i < SM; i++) {
        double acc = 0;
        for (int j = 0; j < SM; j++) acc += (double)jac[i * SM + j] * dp[j];
        jdx[i] = (float)acc;
    }
    ch_say(ch, "The Jacobian itself, built here only to be looked at, is symmetric, "
               "p_i·δ_ij − p_i·p_j; every row sums to 0. Multiplying it by dp gives the "
               "same dx to within %.1e.", ch_max_diff(ch, "softmax.jacobian_max_diff", jdx, dx, SM));
    show(ch, "jacobian", jac, SM, SM);
    const float no_avg = (float)fabs(avg) * max_abs(s.p, SM); // how far dx = p ⊙ dp is off
    float fd[SM];
    const Objective L = {softmax_objective, &s};
    central_differences(fd, s.x, SM, &L);
    pin_row(ch, "softmax.fd", fd, SM);
    // [check]
    // A check that owes nothing to the derivation: the formula against L's slope.
    const float diff = ch_max_diff(ch, "softmax.fd_max_diff", dx, fd, SM);
    // [check]
    ch_say(ch, "The check. With L(x) = Σ_j dp_j·softmax(x)_j, dp is ∂L/∂p by "
               "construction, so dx must be L's slope along each x_i. The central "
               "difference measures that slope with nothing but the forward: (L(x + h·e_i) "
               "− L(x − h·e_i)) / 2h, with h = %g:", (double)FD_STEP);
    ch_line(ch, "     j    analytic   central diff   difference");
    for (int j = 0; j < SM; j++)
        ch_line(ch, "    %2d  %10.6f     %10.6f      %8.1e", j, dx[j], fd[j], fabsf(dx[j] - fd[j]));
    ch_line(ch, "%s", "");
    ch_say(ch, "The largest difference is %.1e. A central difference is off by "
               "h²/6 ≈ 1.7e-7 times L's third derivative, which is small here, and by "
               "float32's rounding: each L carries an error of about 1e-7 times the size "
               "of its terms, and dividing by 2h = %g multiplies it by 500, so a float32 "
               "central difference is good to a few 1e-5 times the size of L's terms, no "
               "better. A mistake in the formula shows far above it: leaving out "
               "the average, dx = p ⊙ dp, is off by %.4f here. And the entries of dx sum "
               "to %.1e, 0 up to rounding, like the rows of dscaled in Section 2.",
           diff, 2 * (double)FD_STEP,
           ch_value(ch, "softmax.no_avg_error", no_avg),
           ch_value(ch, "softmax.dx_sum", (float)dx_sum));
}

/* ------------------------------------------------ 4. LayerNorm's backward */

enum { LN = 6 }; // one token of width 6
static const float LN_X[LN] = {1.2f, -0.5f, 3.0f, 0.4f, -2.1f, 0.9f};
static const float LN_GAMMA[LN] = {1.0f, 0.5f, 2.0f, 1.5f, 0.8f, 1.2f};
static const float LN_BETA[LN] = {0.1f, -0.2f, 0.0f, 0.3f, 0.05f, -0.1f};
static const float LN_DOUT[LN] = {0.3f, -1.2f, 0.7f, 0.5f, -0.4f, 1.0f};
static const float LN_EPS = 1e-6f;

typedef struct {
    float x[LN], gamma[LN], beta[LN], y[LN];
} LayerNormRow;

// L = Σ dout ⊙ layernorm(x; γ, β).
static double layernorm_objective(void *ctx) {
    LayerNormRow *r = ctx;
    layernorm(r->y, r->x, r->gamma, r->beta, 1, LN, LN_EPS);
    double L = 0;
    for (int j = 0; j < LN; j++) L += (double)LN_DOUT[j] * r->y[j];
    return L;
}

static void layernorm_gradient(Chapter *ch) {
    ch_section(ch, "4. The backward of LayerNorm");
    ch_say(ch, "LayerNorm (Chapter 08) is harder, because every output depends on every "
               "input twice more: through the mean and through the variance. The forward, "
               "for one row x of D numbers:");
    ch_line(ch, "    μ = (1/D) Σ_j x_j     σ² = (1/D) Σ_j (x_j − μ)²     r = 1/√(σ² + ε)");
    ch_line(ch, "    x̂_j = (x_j − μ)·r     y_j = γ_j·x̂_j + β_j");
    ch_line(ch, "%s", "");
    ch_say(ch, "The backward in four steps, dy = ∂L/∂y given:");
    ch_line(ch, "    1. dβ_j = dy_j,  dγ_j = dy_j·x̂_j        (summed over the rows: they share γ, β)");
    ch_line(ch, "    2. ĝ_j = dy_j·γ_j                       the gradient of x̂");
    ch_line(ch, "    3. ∂μ/∂x_i = 1/D,  ∂σ²/∂x_i = (2/D)·(x_i − μ),  so ∂r/∂x_i = −r²·x̂_i / D,");
    ch_line(ch, "       ∂x̂_j/∂x_i = r·(δ_ij − 1/D) + (x_j − μ)·∂r/∂x_i");
    ch_line(ch, "                 = (r/D)·(D·δ_ij − 1 − x̂_j·x̂_i)");
    ch_line(ch, "    4. dx_i = Σ_j ĝ_j·∂x̂_j/∂x_i = r·(ĝ_i − mean(ĝ) − x̂_i·mean(ĝ ⊙ x̂))");
    ch_line(ch, "%s", "");
    ch_say(ch, "In step 3 the variance's dependence on μ drops out: Σ_j (x_j − μ) = 0. "
               "Step 4 reads: of the gradient ĝ, LayerNorm passes back only the part that "
               "is neither a constant shift of the row (mean(ĝ): the subtraction of μ "
               "removes any shift) nor a multiple of x̂ (the division by σ removes any "
               "rescaling), times r. lib/backward/layernorm_backward.c is these lines. By hand, in "
               "double, for one row:");
    LayerNormRow r;
    memcpy(r.x, LN_X, sizeof r.x);
    memcpy(r.gamma, LN_GAMMA, sizeof r.gamma);
    memcpy(r.beta, LN_BETA, sizeof r.beta);
    float dout[LN], xhat[LN], ghat[LN], by_hand[LN];
    memcpy(dout, LN_DOUT, sizeof dout);
    // [layernorm_row]
    double mu = 0, var = 0, mean_g = 0, mean_gx = 0;
    for (int j = 0; j < LN; j++) mu += r.x[j];
    mu /= LN;
    for (int j = 0; j < LN; j++) var += (r.x[j] - mu) * (r.x[j] - mu);
    var /= LN;                                            // biased, as the forward
    const double rstd = 1.0 / sqrt(var + LN_EPS);
    for (int j = 0; j < LN; j++) {
        xhat[j] = (float)((r.x[j] - mu) * rstd);
        ghat[j] = dout[j] * r.gamma[j];                   // step 2
        mean_g += ghat[j] / (double)LN;
        mean_gx += (double)ghat[j] * xhat[j] / LN;
    }
    for (int j = 0; j < LN; j++)                          // step 4
        by_hand[j] = (float)(rstd * (ghat[j] - mean_g - xhat[j] * mean_gx));
    float dx[LN] = {0}, dgamma[LN] = {0}, dbeta[LN] = {0};
    layernorm_backward(dx, dgamma, dbeta, dout, r.x, r.gamma, 1, LN, LN_EPS); // lib
    // [layernorm_row]
    pin_row(ch, "layernorm.x", r.x, LN);
    pin_row(ch, "layernorm.gamma", r.gamma, LN);
    pin_row(ch, "layernorm.dout", dout, LN);
    pin_row(ch, "layernorm.xhat", xhat, LN);
    pin_row(ch, "layernorm.ghat", ghat, LN);
    pin_row(ch, "layernorm.dx", dx, LN);
    pin_row(ch, "layernorm.dgamma", dgamma, LN);
    pin_row(ch, "layernorm.dbeta", dbeta, LN);
    ch_say(ch, "μ = %.4f, σ² = %.4f, r = %.4f; mean(ĝ) = %.4f and mean(ĝ ⊙ x̂) = %.4f:",
           ch_value(ch, "layernorm.mean", (float)mu), ch_value(ch, "layernorm.var", (float)var),
           ch_value(ch, "layernorm.rstd", (float)rstd),
           ch_value(ch, "layernorm.mean_ghat", (float)mean_g),
           ch_value(ch, "layernorm.mean_ghat_xhat", (float)mean_gx));
    ch_line(ch, "     j       x       x̂      dy      γ       ĝ        dx");
    for (int j = 0; j < LN; j++)
        ch_line(ch, "    %2d  %6.3f  %6.3f  %6.3f  %5.2f  %6.3f  %8.5f", j, r.x[j], xhat[j],
                dout[j], r.gamma[j], ghat[j], dx[j]);
    ch_line(ch, "%s", "");
    double sum_dx = 0, dot_dx = 0;
    for (int j = 0; j < LN; j++) sum_dx += dx[j], dot_dx += (double)dx[j] * xhat[j];
    ch_say(ch, "layernorm_backward() gives the same dx to within %.1e. The two directions "
               "LayerNorm cannot see are absent from it, as step 4 promised: Σ_j dx_j = "
               "%.1e and Σ_j dx_j·x̂_j = %.1e. Shift a token, or scale it, and LayerNorm's "
               "output does not move, so its gradient has no part along 1 or along x̂. "
               "(Scaling moves it a little, because of ε: step 4 gives Σ_j dx_j·x̂_j = "
               "r·ε/(σ² + ε)·Σ_j ĝ_j·x̂_j exactly, %.1e here. That, not rounding, is most "
               "of the second number.)",
           ch_max_diff(ch, "layernorm.by_hand_max_diff", by_hand, dx, LN),
           ch_value(ch, "layernorm.dx_sum", (float)sum_dx),
           ch_value(ch, "layernorm.dx_dot_xhat", (float)dot_dx),
           ch_value(ch, "layernorm.dx_dot_xhat_eps",
                    (float)(rstd * LN_EPS / (var + LN_EPS) * mean_gx * LN)));
    float fd[LN], fd_gamma[LN], fd_beta[LN];
    const Objective L = {layernorm_objective, &r};
    central_differences(fd, r.x, LN, &L);
    central_differences(fd_gamma, r.gamma, LN, &L);
    central_differences(fd_beta, r.beta, LN, &L);
    pin_row(ch, "layernorm.fd", fd, LN);
    ch_say(ch, "And the check against central differences of L = Σ dy ⊙ layernorm(x; γ, "
               "β), h = %g, moving each x_j:", (double)FD_STEP);
    ch_line(ch, "     j    analytic   central diff   difference");
    for (int j = 0; j < LN; j++)
        ch_line(ch, "    %2d  %10.6f     %10.6f      %8.1e", j, dx[j], fd[j], fabsf(dx[j] - fd[j]));
    ch_line(ch, "%s", "");
    // Two likely mistakes, computed here to show how far off they land.
    double var_u = var * LN / (LN - 1), r_u = 1.0 / sqrt(var_u + LN_EPS), mean_gxu = 0;
    for (int j = 0; j < LN; j++) mean_gxu += ghat[j] * ((r.x[j] - mu) * r_u) / LN;
    float unbiased[LN], no_xhat[LN];
    for (int j = 0; j < LN; j++) {
        unbiased[j] = (float)(r_u * (ghat[j] - mean_g - (r.x[j] - mu) * r_u * mean_gxu));
        no_xhat[j] = (float)(rstd * (ghat[j] - mean_g));
    }
    ch_say(ch, "The largest difference is %.1e for dx, %.1e for dγ and %.1e for dβ, "
               "moving each γ_j and β_j the same way. The mistakes one makes here land "
               "far away: r and x̂ from the unbiased variance (÷ (D − 1), torch.var()'s "
               "default) are off by %.4f, and leaving out the x̂·mean(ĝ ⊙ x̂) term by %.4f.",
           ch_max_diff(ch, "layernorm.fd_max_diff", dx, fd, LN),
           ch_max_diff(ch, "layernorm.dgamma_fd_max_diff", dgamma, fd_gamma, LN),
           ch_max_diff(ch, "layernorm.dbeta_fd_max_diff", dbeta, fd_beta, LN),
           ch_max_diff(ch, "layernorm.unbiased_error", unbiased, dx, LN),
           ch_max_diff(ch, "layernorm.no_xhat_term_error", no_xhat, dx, LN));
}

/* ---------------------------------------------------- 5. one AdamW step */

enum { STEPS = 2 };
static const double STEP_LR[STEPS] = {1e-4, 1e-3}; // the learning rates of section 5's step
static const double STEP_DECAY = 0.05;  // its weight decay, timm's ViT recipes'
static const double MAX_NORM = 1.0;     // the clipping of section 5
// Section 5 lists these tensors' gradients and checks the largest entry of four of them.
static const char *const LISTED[] = {
    "patch_embed.proj.weight", "cls_token", "pos_embed", "blocks.0.attn.qkv.weight",
    "blocks.0.mlp.fc1.weight", "blocks.1.attn.proj.weight", "blocks.1.mlp.fc2.weight",
    "norm.weight", "head.weight", "head.bias",
};
static const char *const CHECKED[] = {
    "head.bias", "head.weight", "blocks.1.mlp.fc2.weight", "blocks.0.attn.qkv.weight",
    "pos_embed", "patch_embed.proj.weight",
};

// The loss of the image, in double from the float32 logits (no rounding of ℓ to float).
static double model_loss(void *ctx) {
    Work *w = ctx;
    VitError err;
    if (vit_forward(&w->vit, &w->image, NULL, NULL, &err) != VIT_OK) return NAN;
    const Tensor z = vit_logits(&w->vit);
    double m = -INFINITY, sum = 0;
    for (int y = 0; y < w->cfg->num_classes; y++) m = fmax(m, z.data[y]);
    for (int y = 0; y < w->cfg->num_classes; y++) sum += exp(z.data[y] - m);
    return m + log(sum) - z.data[TARGET];
}

static const VitParam *param_named(const VitParam *p, int count, const char *name) {
    for (int i = 0; i < count; i++)
        if (strcmp(p[i].name, name) == 0) return &p[i];
    return NULL;
}

static double l2(const float *x, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += (double)x[i] * x[i];
    return sqrt(s);
}

// Where each of the model's tensors starts in one flat copy of all of them.
static size_t *flat_offsets(const VitParam *p, int count) {
    size_t *at = vit_malloc(sizeof(size_t) * (count + 1));
    at[0] = 0;
    for (int i = 0; i < count; i++) at[i + 1] = at[i] + p[i].numel;
    return at;
}

/// Section 5's working state: the gradients, the optimizer, and flat copies of θ and g.
typedef struct {
    VitGrads grads;
    AdamW opt;
    AdamWConfig cfg;
    int count;                 // the model's tensors
    VitParam *params, *gp;     // (count) the weights and the gradients, by name
    size_t *at, total;         // where tensor i starts in the flat copies; how many values
    float *theta0, *g0;        // (total) the weights before the step, the gradient
    float dlogits[16];         // (Y) ∂ℓ/∂z; Y = 10
    float loss;                // ℓ before the step
    char values[VIT_NUM_BUF];  // total, written out
} Step;

static bool step_new(Step *s, Work *w, VitError *err) {
    memset(s, 0, sizeof *s);
    s->cfg = adamw_defaults();
    s->cfg.weight_decay = STEP_DECAY;
    if (vit_train_prepare(&w->vit, VIT_KEEP_DEFAULT, B, err) != VIT_OK ||
        vit_grads_init(&s->grads, &w->vit, err) != VIT_OK ||
        adamw_init_vit(&s->opt, &w->vit, &s->grads.weights, &s->cfg, err) != VIT_OK)
        return false;
    s->count = vit_params(&w->vit, NULL);
    s->params = vit_malloc(sizeof(VitParam) * s->count);
    s->gp = vit_malloc(sizeof(VitParam) * s->count);
    vit_params(&w->vit, s->params);
    vit_grad_weights_params(s->gp, &s->grads.weights, w->cfg);
    s->at = flat_offsets(s->params, s->count);
    s->total = s->at[s->count];
    s->theta0 = vit_malloc(sizeof(float) * s->total);
    s->g0 = vit_malloc(sizeof(float) * s->total);
    for (int i = 0; i < s->count; i++)
        memcpy(s->theta0 + s->at[i], s->params[i].data, sizeof(float) * s->params[i].numel);
    vit_thousands(s->values, (int64_t)s->total);
    return true;
}

static void step_free(Step *s) {
    free(s->params), free(s->gp), free(s->at), free(s->theta0), free(s->g0);
    vit_grads_free(&s->grads);
    adamw_free(&s->opt);
}

// The entries of tensor i of the flat copy x.
static const float *tensor_in(const Step *s, const float *x, const VitParam *p) {
    return x + s->at[p - s->params];
}

static bool failed(Chapter *ch, const VitError *err) {
    ch_say(ch, "the step failed: %s", err->msg);
    return false;
}

// The forward, the loss and the backward; what the gradient looks like.
static bool step_backward(Chapter *ch, Work *w, Step *s) {
    const VitConfig *c = w->cfg;
    const int Y = c->num_classes;
    VitError err;
    VitGrads *grads = &s->grads;
    float *dlogits = s->dlogits;
    ch_say(ch, "Now the whole model, on Section 1's image. vit_backward() (lib/backward/backward.c) "
               "is vit_forward()'s recipe run backwards: from dlogits through the head, "
               "the final LayerNorm and the blocks from the last to the first, each "
               "block's MLP and attention undone by the functions of Sections 2–4, back "
               "to the position table, [cls] and the patch projection. It adds ∂ℓ/∂θ for "
               "every parameter θ into a VitGrads, laid out like the weights:");
    // [backward]
    vit_grads_zero(grads);                                  // the backward adds: zero first
    if (vit_forward(&w->vit, &w->image, NULL, NULL, &err) != VIT_OK) return failed(ch, &err);
    Tensor logits = vit_logits(&w->vit);                    // (B, Y)
    s->loss = loss_cross_entropy(dlogits, logits.data, &TARGET, B, Y, 0.0f); // ℓ and ∂ℓ/∂z
    if (vit_backward(&w->vit, grads, dlogits, NULL, NULL, &err) != VIT_OK) return failed(ch, &err);
    // [backward]
    for (int i = 0; i < s->count; i++)
        memcpy(s->g0 + s->at[i], s->gp[i].data, sizeof(float) * s->gp[i].numel);
    ch_say(ch, "The loss is Section 1's again, %.4f (vit_train_prepare() makes the forward "
               "keep what the backward reads; it computes the same numbers). All %s "
               "gradients together form one vector of length %.4f. Some of its tensors:",
           ch_value(ch, "step.loss_before", s->loss), s->values,
           ch_value(ch, "step.grad_norm", (float)l2(s->g0, s->total)));
    ch_line(ch, "    %-26s %8s  %10s  %10s", "tensor", "values", "|gradient|", "|tensor|");
    for (size_t k = 0; k < sizeof LISTED / sizeof LISTED[0]; k++) {
        const VitParam *p = param_named(s->params, s->count, LISTED[k]);
        if (!p) continue;
        char n[VIT_NUM_BUF];
        const float gn = ch_valuef(ch, (float)l2(tensor_in(s, s->g0, p), p->numel),
                                   "grad_norm.%s", LISTED[k]);
        const float tn = ch_valuef(ch, (float)l2(tensor_in(s, s->theta0, p), p->numel),
                                   "norm.%s", LISTED[k]);
        ch_line(ch, "    %-26s %8s  %10.6f  %10.4f", LISTED[k],
                vit_thousands(n, (int64_t)p->numel), gn, tn);
    }
    ch_line(ch, "%s", "");
    const VitParam *pos = param_named(s->params, s->count, "pos_embed");
    const float *dcls = tensor_in(s, s->g0, param_named(s->params, s->count, "cls_token"));
    const float *dpos = tensor_in(s, s->g0, pos);
    const float *dbias = tensor_in(s, s->g0, param_named(s->params, s->count, "head.bias"));
    ch_say(ch, "The head's bias gets dlogits itself (logits = W·x + b, so ∂ℓ/∂b = ∂ℓ/∂z), "
               "to within %.1e. Row 0 of pos_embed gets exactly [cls]'s gradient (to within "
               "%.1e), since both are added to token 0, and that row is almost all of "
               "pos_embed's: the other %d rows together have a gradient of length only "
               "%.4f. The head reads token 0 alone; the patches reach it only through "
               "attention, which in an untrained model passes little (Chapter 08).",
           ch_max_diff(ch, "step.head_bias_vs_dlogits", dbias, dlogits, Y),
           ch_max_diff(ch, "step.pos0_vs_cls", dpos, dcls, (size_t)c->dim),
           vit_num_tokens(c) - 1,
           ch_value(ch, "step.pos_rest_norm",
                    (float)l2(dpos + c->dim, pos->numel - (size_t)c->dim)));
    // q, k and v's biases: rows 0…D−1, D…2D−1 and 2D…3D−1 of each block's qkv.bias
    double bias_sq[3] = {0};
    for (int b = 0; b < c->depth; b++) {
        char name[64];
        snprintf(name, sizeof name, "blocks.%d.attn.qkv.bias", b);
        const float *g = tensor_in(s, s->g0, param_named(s->params, s->count, name));
        for (int part = 0; part < 3; part++)
            for (int j = 0; j < c->dim; j++)
                bias_sq[part] += (double)g[part * c->dim + j] * g[part * c->dim + j];
    }
    ch_say(ch, "And one gradient is 0 but for rounding: the keys' bias. Its gradient, over "
               "both blocks, has length %.1e, against %.4f for the queries' bias and %.4f "
               "for the values'. Adding a vector b to every key adds q_i·b to the whole "
               "row i of scores, the same number to every score of the row, and softmax "
               "ignores that: the rows of dscaled sum to 0, as in Section 2. Self-attention "
               "needs no key bias; timm's has one all the same, since q, k and v come out of "
               "one nn.Linear(D, 3D) with a bias.",
           ch_value(ch, "step.key_bias_grad_norm", (float)sqrt(bias_sq[1])),
           ch_value(ch, "step.query_bias_grad_norm", (float)sqrt(bias_sq[0])),
           ch_value(ch, "step.value_bias_grad_norm", (float)sqrt(bias_sq[2])));
    return true;
}

// One entry of six tensors, against a central difference of the whole model's loss.
static void step_check(Chapter *ch, Work *w, Step *s) {
    enum { CK = sizeof CHECKED / sizeof CHECKED[0] };
    float idx[CK], analytic[CK], fd[CK];
    const Objective L = {model_loss, w};
    for (int k = 0; k < CK; k++) {
        const VitParam *p = param_named(s->params, s->count, CHECKED[k]);
        const float *g = tensor_in(s, s->g0, p);
        size_t best = 0; // the entry with the largest gradient
        for (size_t j = 1; j < p->numel; j++)
            if (fabsf(g[j]) > fabsf(g[best])) best = j;
        idx[k] = (float)best, analytic[k] = g[best];
        central_differences(&fd[k], (float *)p->data + best, 1, &L); // the model owns its weights
    }
    pin_row(ch, "check.index", idx, CK);
    pin_row(ch, "check.grad", analytic, CK);
    pin_row(ch, "check.fd", fd, CK);
    ch_say(ch, "Is it right? The same check as before, now through both blocks: in each of "
               "six tensors take the entry with the largest gradient, move it by ±h and run "
               "the whole forward pass again (the loss in double, from the logits):");
    ch_line(ch, "    %-26s %6s  %11s  %12s  %10s", "tensor", "entry", "vit_backward",
            "central diff", "difference");
    for (int k = 0; k < CK; k++)
        ch_line(ch, "    %-26s %6d  %11.6f  %12.6f  %10.1e", CHECKED[k], (int)idx[k], analytic[k],
                fd[k], fabsf(analytic[k] - fd[k]));
    ch_line(ch, "%s", "");
    ch_say(ch, "The largest difference is %.1e: the backward is the slope of the loss, "
               "entry by entry, from the head back to the patch projection. PyTorch's "
               "autograd, on the same weights, gives the same gradients: the chapter's "
               "test compares the norms of the table above and these six entries.",
           ch_max_diff(ch, "check.max_diff", analytic, fd, CK));
}

// The update, twice from the same start: η = 1e-4, then 1e-3.
static void step_update(Chapter *ch, Work *w, Step *s) {
    const int Y = w->cfg->num_classes;
    float lrs[STEPS], after[STEPS], p_after[STEPS], first_order[STEPS], about_eta[STEPS];
    float change[STEPS], slow_grad = 0;
    double norm = 0;
    for (int r = 0; r < STEPS; r++) {
        for (int i = 0; i < s->count; i++) { // back to θ0, and to the gradient before clipping
            memcpy((float *)s->params[i].data, s->theta0 + s->at[i],
                   sizeof(float) * s->params[i].numel);
            memcpy((float *)s->gp[i].data, s->g0 + s->at[i], sizeof(float) * s->gp[i].numel);
        }
        AdamW *opt = &s->opt;
        VitError err;
        adamw_free(opt); // a fresh optimizer: its first step
        if (adamw_init_vit(opt, &w->vit, &s->grads.weights, &s->cfg, &err) != VIT_OK) {
            failed(ch, &err);
            return;
        }
        const double eta = STEP_LR[r];
        // [update]
        norm = optim_clip_grad_norm(opt->params, opt->count, MAX_NORM); // the gradient's length ≤ 1
        adamw_step(opt, eta);                                     // θ ← θ − η·(…)
        // [update]
        after[r] = (float)model_loss(w);
        float probs[16]; // Y = 10
        softmax(probs, vit_logits(&w->vit).data, 1, Y);
        double predicted = 0; // Σ g·Δθ: the change a straight line through θ0 predicts
        size_t near_eta = 0;
        slow_grad = 0; // the largest |g| of a parameter that moved by less than 0.99·η
        for (size_t k = 0, i = 0; i < (size_t)s->count; i++)
            for (size_t j = 0; j < s->params[i].numel; j++, k++) {
                const double d = (double)s->params[i].data[j] - s->theta0[k];
                predicted += s->g0[k] * d;
                if (fabs(fabs(d) - eta) <= 0.01 * eta) near_eta++;
                else slow_grad = fmaxf(slow_grad, fabsf(s->g0[k]));
            }
        lrs[r] = (float)eta, p_after[r] = probs[TARGET], first_order[r] = (float)predicted;
        change[r] = after[r] - s->loss;
        about_eta[r] = (float)(100.0 * near_eta / s->total);
    }
    pin_row(ch, "step.lr", lrs, STEPS);
    pin_row(ch, "step.loss_after", after, STEPS);
    pin_row(ch, "step.p_after", p_after, STEPS);
    pin_row(ch, "step.change", change, STEPS);
    pin_row(ch, "step.first_order", first_order, STEPS);
    pin_row(ch, "step.about_eta_percent", about_eta, STEPS);
    ch_say(ch, "Then the update. optim_clip_grad_norm() scales the whole gradient down to length "
               "%g: it was %.4f. (At the first step that hardly matters to AdamW: its step "
               "is then g/(|g| + eps), whatever g's scale, as long as |g| is far above eps "
               "= 1e-8.) Then adamw_step(), with λ = %g. Twice here, each time from the "
               "same weights and a fresh optimizer, with two learning rates:", MAX_NORM,
           ch_value(ch, "step.clip_norm", (float)norm), STEP_DECAY);
    ch_line(ch, "    η              loss       p_%d         change     Σ g·Δθ", TARGET);
    ch_line(ch, "    %-8s %10.4f %9.4f", "before", s->loss,
            ch_value(ch, "step.p_before", (float)exp(-(double)s->loss)));
    for (int r = 0; r < STEPS; r++)
        ch_line(ch, "    %-8g %10.4f %9.4f %14.4f %10.4f", lrs[r], after[r], p_after[r],
                change[r], first_order[r]);
    ch_line(ch, "%s", "");
    ch_say(ch, "One step on one image, and the loss falls. As Section 6 shows, Adam's "
               "first step moves every parameter by about η against its gradient's sign: "
               "with η = %g, %.1f%% of the %s moved by η to within 1%%. The others all have "
               "small gradients, below %.1e (below %.1e after clipping), small enough that "
               "eps in g/(|g| + eps) holds them back, the keys' bias among them. To first "
               "order the loss changes by Σ g·Δθ, the gradient times the step. With η = %g "
               "that is close to what happened; with %g, ten times the step, the loss "
               "falls further but by much less than the straight line promised, because "
               "the slope itself changes on the way when all %s parameters move at once. "
               "The gradient says which way is down here, not how far down keeps going: "
               "that is why the steps stay small.",
           lrs[STEPS - 1], about_eta[STEPS - 1], s->values,
           ch_value(ch, "step.slow_max_grad", slow_grad),
           ch_value(ch, "step.slow_max_grad_clipped",
                    slow_grad * (float)(MAX_NORM / (norm + 1e-6))),
           lrs[0], lrs[STEPS - 1], s->values);
}

static void one_step(Chapter *ch, Work *w) {
    ch_section(ch, "5. One AdamW step on the whole model");
    Step s;
    VitError err;
    if (!step_new(&s, w, &err)) {
        ch_say(ch, "cannot prepare the model for training: %s", err.msg);
    } else if (step_backward(ch, w, &s)) {
        step_check(ch, w, &s);
        step_update(ch, w, &s);
    }
    step_free(&s);
}

/* ------------------------------------------ 6. warm-up and weight decay */

static void warmup_and_decay(Chapter *ch, Work *w) {
    ch_section(ch, "6. Warm-up and weight decay");
    // [schedule]
    const LrSchedule schedule = {.peak_lr = 1e-3, .min_lr = 1e-5, .warmup_start = 0.0,
                                 .warmup_steps = 10, .total_steps = 100};
    // [schedule]
    static const int at[] = {0, 1, 2, 5, 9, 10, 25, 50, 75, 99};
    enum { AT = sizeof at / sizeof at[0] };
    float steps[AT], lr[AT];
    for (int i = 0; i < AT; i++) steps[i] = (float)at[i], lr[i] = (float)lr_at(&schedule, at[i]);
    pin_row(ch, "schedule.step", steps, AT);
    pin_row(ch, "schedule.lr", lr, AT);
    ch_say(ch, "A training run does not use one learning rate throughout. lr_at() "
               "(lib/train/optim.h) gives timm's usual schedule: a linear warm-up from 0 to the "
               "peak over the first %d steps, then a cosine down to the floor at the last "
               "step. For a run of %d steps, peak %g and floor %g:",
           schedule.warmup_steps, schedule.total_steps, schedule.peak_lr, schedule.min_lr);
    ch_line(ch, "    step  %s", "learning rate");
    for (int i = 0; i < AT; i++) ch_line(ch, "    %4d  %.3e", at[i], lr[i]);
    ch_line(ch, "%s", "");

    // Why warm up: Adam's first step moves every parameter by η, whatever its gradient.
    float small[1] = {1.0f}, big[1] = {1.0f}, g_small[1] = {1e-4f}, g_big[1] = {10.0f};
    OptimParam two[2] = {{.data = small, .grad = g_small, .numel = 1, .decay = false},
                         {.data = big, .grad = g_big, .numel = 1, .decay = false}};
    AdamW opt;
    VitError err;
    AdamWConfig cfg = adamw_defaults();
    const double eta = 1e-3;
    // [first_step]
    if (adamw_init(&opt, two, 2, &cfg, &err) == VIT_OK) {
        adamw_step(&opt, eta);
        adamw_free(&opt);
    }
    // [first_step]
    ch_say(ch, "Why start low? Adam divides each step by the square root of its running "
               "mean of g², and at the first step that mean is g² itself: m̂/√v̂ = "
               "g/|g|. So the first step moves every parameter by the full learning rate "
               "η, against its gradient's sign, whatever the gradient's size. Two "
               "parameters at 1, one with gradient 1e-4 and one with gradient 10, after "
               "one adamw_step() with η = %g: they moved by %.6f and %.6f. The step "
               "says nothing yet about how large a move each parameter deserves; only "
               "over many steps do m and v average out into a step that does. The "
               "warm-up keeps those first, poorly informed steps small.", eta,
           ch_value(ch, "first_step.small_grad", 1.0f - small[0]),
           ch_value(ch, "first_step.big_grad", 1.0f - big[0]));

    // Weight decay: with no gradient at all, only the decay moves a parameter.
    enum { WD = 4, WD_STEPS = 1000 };
    float weight[WD] = {1.0f, -0.5f, 2.0f, 0.25f}, bias[WD], zero[WD] = {0};
    memcpy(bias, weight, sizeof bias);
    OptimParam pair[2] = {{.data = weight, .grad = zero, .numel = WD, .decay = true},
                          {.data = bias, .grad = zero, .numel = WD, .decay = false}};
    cfg.weight_decay = 0.05; // timm's ViT recipes
    // [decay]
    if (adamw_init(&opt, pair, 2, &cfg, &err) == VIT_OK) {
        for (int s = 0; s < WD_STEPS; s++) adamw_step(&opt, eta); // θ ← θ − ηλθ, and Adam's 0
        adamw_free(&opt);
    }
    // [decay]
    pin_row(ch, "decay.weight", weight, WD);
    pin_row(ch, "decay.bias", bias, WD);
    ch_say(ch, "Weight decay pulls a parameter towards 0 at every step, θ ← θ − ηλθ, "
               "beside Adam's step and not through it (that is the W in AdamW: Adam "
               "with an L2 penalty added to the loss would divide the penalty's "
               "gradient by √v̂ too). Two copies of the same four numbers, one that "
               "decays and one that does not, given a gradient of 0 for %d steps with "
               "η = %g and λ = %g: Adam's own step is then exactly 0, and only the "
               "decay acts.", WD_STEPS, eta, cfg.weight_decay);
    ch_line(ch, "    start     %8.4f %8.4f %8.4f %8.4f", 1.0f, -0.5f, 2.0f, 0.25f);
    ch_line(ch, "    decayed   %8.4f %8.4f %8.4f %8.4f", weight[0], weight[1], weight[2], weight[3]);
    ch_line(ch, "    no decay  %8.4f %8.4f %8.4f %8.4f", bias[0], bias[1], bias[2], bias[3]);
    ch_line(ch, "%s", "");
    ch_say(ch, "Each decayed value is multiplied by (1 − ηλ)^%d = %.4f: a weight that no "
               "gradient defends shrinks away, which keeps the function the network "
               "computes simple. The other copy has not moved at all.", WD_STEPS,
           ch_value(ch, "decay.factor", (float)pow(1.0 - eta * cfg.weight_decay, WD_STEPS)));

    // Which of the model's tensors decay: timm's rule, adamw_decays().
    const int count = vit_params(&w->vit, NULL);
    VitParam *params = vit_malloc(sizeof(VitParam) * count);
    vit_params(&w->vit, params);
    int decaying = 0;
    int64_t decayed_values = 0, all_values = 0;
    // [decays]
    for (int i = 0; i < count; i++) {
        all_values += (int64_t)params[i].numel;
        if (adamw_decays(params[i].spec)) decaying++, decayed_values += (int64_t)params[i].numel;
    }
    // [decays]
    char a[VIT_NUM_BUF], b[VIT_NUM_BUF];
    ch_say(ch, "Which parameters should decay? timm's rule (adamw_decays()): the weight "
               "matrices, those of the patch projection, of q, k, v and the output "
               "projection, fc1 and fc2 in every block, and of the head. Not the biases, "
               "not LayerNorm's γ and β, whose right size is 1 and 0 rather than "
               "nothing, and not [cls] and the position embeddings, whose size carries "
               "meaning. Of this model's %d tensors, %d decay, holding %s of its %s "
               "parameters (%.1f%%).", (int)ch_value(ch, "decay.tensors", (float)count),
           (int)ch_value(ch, "decay.decaying_tensors", (float)decaying),
           vit_thousands(a, (int64_t)ch_value(ch, "decay.decaying_values", (float)decayed_values)),
           vit_thousands(b, all_values),
           ch_value(ch, "decay.percent", 100.0f * (float)decayed_values / (float)all_values));
    free(params);
}

static void whats_next(Chapter *ch) {
    ch_section(ch, "What's next");
    ch_say(ch, "Training is Section 5's step repeated: a batch of labelled images, "
               "forward, loss, backward, clip, AdamW, a learning rate from the schedule, "
               "thousands of times. Each gradient in it is one of the backward functions "
               "this chapter checked, chained in the reverse order of the forward.");
}

void chapter10_run(Chapter *ch) {
    ch_title(ch, "10", "Learning by gradient");
    ch_say(ch, "Chapters 01–09 built a model that answers; with random weights it knows "
               "nothing. Learning changes the weights a little at a time, each in the "
               "direction that makes the right answer more likely. This chapter measures "
               "how wrong the model is, finds that direction for every weight by the "
               "chain rule, checks it against the plain slope of the loss, and takes one "
               "step.");
    Work w = {0};
    const VitConfig cfg = {.image_size = 32, .patch_size = 8, .channels = 3, .dim = 64,
                           .depth = 2, .heads = 4, .mlp_dim = 256, .num_classes = 10,
                           .ln_eps = 1e-6f};
    VitInit init = vit_init_timm(MODEL_SEED);
    VitError err;
    if (vit_build_random(&w.vit, &cfg, &init, &err) != VIT_OK) {
        ch_say(ch, "cannot build the model: %s", err.msg);
        return;
    }
    w.cfg = &w.vit.config;
    w.image = tensor_new(4, B, cfg.channels, cfg.image_size, cfg.image_size);
    Rng rng;
    rng_seed(&rng, IMAGE_SEED);
    rng_fill_uniform(&rng, w.image.data, w.image.numel, -1.0f, 1.0f);

    the_loss(ch, &w);
    through_a_head(ch);
    softmax_gradient(ch);
    layernorm_gradient(ch);
    one_step(ch, &w);
    warmup_and_decay(ch, &w);
    whats_next(ch);

    tensor_free(&w.image);
    vit_free(&w.vit);
}

#ifndef CHAPTER_NO_MAIN
int main(int argc, char **argv) {
    return chapter_main(argc, argv, chapter10_run,
                        "Chapter 10: the loss of one image, backpropagation through attention, "
                        "softmax and LayerNorm checked against finite differences, one AdamW "
                        "step, warm-up and weight decay.");
}
#endif
