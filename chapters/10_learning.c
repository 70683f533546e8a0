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
 * value means; derives ∂ℓ/∂z = p − onehot from softmax's Jacobian, shows why
 * the cross-entropy does not saturate when confidently wrong and what label
 * smoothing changes; follows the chain rule through one attention head with
 * real numbers (dprobs, dscaled, dscores, dQ, dK); derives the backward of
 * softmax and of LayerNorm step by step and checks each against central
 * differences; shows the backward of a linear layer, GELU, a residual add, [cls]
 * and the positions on small cases; writes Adam's step out with its bias
 * corrections and shows why gradients are clipped; takes one AdamW step on the
 * whole model and watches the loss fall; and shows what the learning-rate
 * warm-up and weight decay do, and why the decay is decoupled.
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
#include "model/tokens.h"
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
    Vit vit;              // the small ViT of sections 1 and 7
    const VitConfig *cfg;
    Tensor image;         // (B, C, S, S)
    float loss;           // section 1's loss of the image
} Work;

/* ----------------------------------- 1b. why p − onehot, and why it does not saturate */

enum { SY = 4 }; // the small examples of Section 1: four classes
static const float WRONG_Z[SY] = {6.0f, 0.0f, 1.0f, -1.0f}; // confidently wrong: t = 1
static const float RIGHT_Z[SY] = {1.0f, 7.0f, 0.0f, -1.0f}; // confidently right: t = 1
static const int SMALL_TARGET = 1;
static const float SMOOTHING = 0.1f; // ε of label smoothing, timm's usual

// The cross-entropy's gradient from the softmax's Jacobian, in two lines.
static void cross_entropy_derived(Chapter *ch, const float *probs, const float *dlogits, int Y) {
    ch_say(ch, "Why p − onehot? The loss reads one probability, ℓ = −ln p_t, so ∂ℓ/∂p_t = "
               "−1/p_t and every other ∂ℓ/∂p_j is 0. Softmax's Jacobian (Section 3 "
               "derives it) is ∂p_t/∂z_i = p_t·(δ_it − p_i). The chain rule, in two lines:");
    ch_line(ch, "    ∂ℓ/∂z_i = (∂ℓ/∂p_t)·(∂p_t/∂z_i) = −(1/p_t)·p_t·(δ_it − p_i)");
    ch_line(ch, "            = p_i − δ_it");
    ch_line(ch, "%s", "");
    float formula[16]; // Y = 10
    for (int y = 0; y < Y; y++) formula[y] = probs[y] - (y == TARGET); // p − onehot(t)
    ch_say(ch, "The 1/p_t of the logarithm cancels the p_t of the softmax. p − onehot(%d), "
               "taken from the probabilities above, and the gradient loss_cross_entropy() "
               "returned differ by at most %.1e.",
           TARGET, ch_max_diff(ch, "dlogits.formula_max_diff", formula, dlogits, Y));
}

// ½‖p − onehot‖², a loss on the probabilities, and its gradient of the logits.
static float squared_error(float *dz, const float *p, int t, int Y) {
    float dp[SY];
    double loss = 0;
    for (int y = 0; y < Y; y++) {
        dp[y] = p[y] - (y == t); // ∂/∂p of ½(p − onehot)²
        loss += 0.5 * (double)dp[y] * dp[y];
    }
    softmax_backward(dz, dp, p, 1, Y); // through softmax's Jacobian
    return (float)loss;
}

// A confidently wrong prediction: the cross-entropy still pulls hard, squared error does not.
static void no_saturation(Chapter *ch) {
    float p[SY], dce[SY] = {0}, dsq[SY] = {0};
    softmax(p, WRONG_Z, 1, SY);
    const float ce = loss_cross_entropy(dce, WRONG_Z, &SMALL_TARGET, 1, SY, 0.0f);
    const float sq = squared_error(dsq, p, SMALL_TARGET, SY);
    pin_row(ch, "wrong.z", (float *)WRONG_Z, SY);
    pin_row(ch, "wrong.p", p, SY);
    pin_row(ch, "wrong.dz_ce", dce, SY);
    pin_row(ch, "wrong.dz_sq", dsq, SY);
    const int t = SMALL_TARGET;
    ch_say(ch, "That cancellation is why the cross-entropy keeps learning when the model is "
               "confidently wrong. Take %d classes, logits z = (%g, %g, %g, %g) and the "
               "right class t = %d: p_t = %.5f. Against it, a loss that looks just as "
               "reasonable, the squared error ½‖p − onehot(t)‖² on the probabilities, "
               "whose gradient goes back through the same Jacobian with no logarithm to "
               "cancel its p_t:", SY, WRONG_Z[0], WRONG_Z[1], WRONG_Z[2], WRONG_Z[3], t,
           ch_value(ch, "wrong.p_target", p[t]));
    ch_line(ch, "    loss                  value    ∂/∂z_t");
    ch_line(ch, "    cross-entropy      %8.4f  %8.5f", ch_value(ch, "wrong.ce", ce), dce[t]);
    ch_line(ch, "    squared error      %8.4f  %8.5f", ch_value(ch, "wrong.sq", sq), dsq[t]);
    ch_line(ch, "%s", "");
    ch_say(ch, "The cross-entropy pulls z_t up with %.4f, near the −1 it tends to as p_t → 0. "
               "The squared error, though its loss is large, pulls with only %.5f, %.0f "
               "times less: every entry of its gradient carries a factor p_t or p_j from "
               "the Jacobian, and p_t is tiny. It saturates, the softmax flattens its "
               "gradient exactly where the model most needs correcting; the logarithm "
               "undoes that.", dce[t], dsq[t],
           ch_value(ch, "wrong.ratio", dce[t] / dsq[t]));
}

// Label smoothing: a target of 1 − ε + ε/Y, so a confident right answer is pushed back.
static void label_smoothing(Chapter *ch) {
    const int t = SMALL_TARGET;
    float p[SY], q[SY], dplain[SY] = {0}, dsmooth[SY] = {0};
    softmax(p, RIGHT_Z, 1, SY);
    for (int y = 0; y < SY; y++) q[y] = (1.0f - SMOOTHING) * (y == t) + SMOOTHING / SY;
    loss_cross_entropy(dplain, RIGHT_Z, &t, 1, SY, 0.0f);
    loss_cross_entropy(dsmooth, RIGHT_Z, &t, 1, SY, SMOOTHING); // ∂ℓ/∂z = p − q
    pin_row(ch, "smooth.z", (float *)RIGHT_Z, SY);
    pin_row(ch, "smooth.p", p, SY);
    pin_row(ch, "smooth.q", q, SY);
    pin_row(ch, "smooth.dz_plain", dplain, SY);
    pin_row(ch, "smooth.dz_smooth", dsmooth, SY);
    const float gap = logf(q[t] / q[(t + 1) % SY]); // z_t − z_j where p = q
    ch_say(ch, "The other side: the loss is 0 only at p_t = 1, which needs z_t − z_j → ∞, so "
               "on a right answer the plain cross-entropy pushes the logits apart for "
               "ever. Label smoothing (ε = %g, as timm trains) aims at q = (1 − ε)·onehot + "
               "ε/Y instead, and the same two lines give ∂ℓ/∂z = p − q. With logits (%g, %g, "
               "%g, %g), t = %d, p_t = %.4f and q_t = %.4f:", (double)SMOOTHING,
           RIGHT_Z[0], RIGHT_Z[1], RIGHT_Z[2], RIGHT_Z[3], t,
           ch_value(ch, "smooth.p_target", p[t]), q[t]);
    ch_line(ch, "    target            ∂ℓ/∂z");
    ch_line(ch, "    onehot     %8.4f %8.4f %8.4f %8.4f", dplain[0], dplain[1], dplain[2], dplain[3]);
    ch_line(ch, "    smoothed   %8.4f %8.4f %8.4f %8.4f", dsmooth[0], dsmooth[1], dsmooth[2],
            dsmooth[3]);
    ch_line(ch, "%s", "");
    ch_say(ch, "With one-hot targets the gradient on z_t is %.4f: %s. With smoothing it is "
               "%+.4f: %s. The smoothed loss is smallest at p = q, where every wrong logit "
               "sits ln(q_t/q_j) = ln(%.3f/%.3f) = %.2f below the right one: a finite "
               "confidence, which keeps the logits, and the weights making them, from "
               "growing without end.", dplain[t],
           dplain[t] < 0 ? "it still pulls z_t up, however sure the model already is"
                         : "it no longer pulls z_t up",
           dsmooth[t],
           dsmooth[t] > 0 ? "since p_t is above q_t, it pushes z_t back down"
                          : "p_t is still below q_t, so it pulls z_t up, more gently",
           q[t], q[(t + 1) % SY], ch_value(ch, "smooth.gap", gap));
}

/* ------------------------------------------------------ 1. the loss */

static void the_loss(Chapter *ch, Work *w) {
    if (!ch_section(ch, "1. The loss of one image")) return;
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
        ch_verdict(ch, "the forward pass failed: %s", err.msg);
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
    cross_entropy_derived(ch, probs, dlogits, Y);
    no_saturation(ch);
    label_smoothing(ch);
    ch_say(ch, "Everything before the logits gets its gradient from this one by the chain "
               "rule, layer by layer from the last back to the first: backpropagation. "
               "Every forward function of lib has its backward beside it (lib/ops/ops.h, "
               "lib/attention/attention.h), which takes the gradient of its output and adds the "
               "gradients of its inputs. Sections 2 to 5 follow it through attention, "
               "softmax, LayerNorm and the other layers; Section 7 runs the whole model's.");
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
    if (!ch_section(ch, "2. The chain rule through one attention head")) return;
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
               "sums to 0; the largest row sum here is %.1e. Adding one number to a "
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
    if (!ch_section(ch, "3. The backward of softmax")) return;
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
    if (!ch_section(ch, "4. The backward of LayerNorm")) return;
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

/* ---------------------------------------- 5. the backward of the other layers */

static const double PI = 3.14159265358979323846;

// max |a − b| over n values.
static float max_diff(const float *a, const float *b, size_t n) {
    float m = 0;
    for (size_t i = 0; i < n; i++) m = fmaxf(m, fabsf(a[i] - b[i]));
    return m;
}


// A linear layer of 2 rows, 3 inputs, 2 outputs: out = x·Wᵀ + b.
enum { LIN_N = 2, LIN_I = 3, LIN_O = 2 };
static const float LIN_X[LIN_N * LIN_I] = {1.0f, -2.0f, 0.5f, 3.0f, 0.0f, -1.0f};
static const float LIN_W[LIN_O * LIN_I] = {0.2f, -0.1f, 0.4f, -0.3f, 0.5f, 0.1f};
static const float LIN_DOUT[LIN_N * LIN_O] = {1.0f, -0.5f, 0.25f, 2.0f};
// GELU and the residual stream on five values.
enum { GN = 5 };
static const float GELU_X[GN] = {-3.0f, -1.0f, 0.0f, 0.5f, 2.0f};
static const float GELU_DOUT[GN] = {1.0f, 1.0f, 1.0f, 1.0f, 1.0f};
// [cls] and the positions: 2 images of 2 patches of width 3, so N = 3 tokens.
enum { TB = 2, TP = 2, TD = 3, TN = TP + 1 };

static void linear_gradient(Chapter *ch) {
    ch_say(ch, "A linear layer, out = x·Wᵀ + b, is out_nk = Σ_i x_ni·W_ki + b_k. Each x_ni "
               "reaches every output k of its row through W_ki; each W_ki every row n "
               "through x_ni; each b_k every row with weight 1. So, for %d rows of %d "
               "inputs and %d outputs:", LIN_N, LIN_I, LIN_O);
    ch_line(ch, "    dx = dout·W     (N,O)·(O,I) → (N,I)");
    ch_line(ch, "    dW = doutᵀ·x    (O,N)·(N,I) → (O,I)");
    ch_line(ch, "    db = Σ_n dout_n (O)");
    ch_line(ch, "%s", "");
    float dx[LIN_N * LIN_I] = {0}, dw[LIN_O * LIN_I] = {0}, db[LIN_O] = {0};
    float fx[LIN_N * LIN_I] = {0}, fw[LIN_O * LIN_I] = {0}, fb[LIN_O] = {0};
    // [linear_row]
    for (int n = 0; n < LIN_N; n++) // the formula, by hand
        for (int k = 0; k < LIN_O; k++) {
            const float g = LIN_DOUT[n * LIN_O + k];
            fb[k] += g;
            for (int i = 0; i < LIN_I; i++) {
                fx[n * LIN_I + i] += g * LIN_W[k * LIN_I + i];
                fw[k * LIN_I + i] += g * LIN_X[n * LIN_I + i];
            }
        }
    ops_linear_backward(dx, dw, db, LIN_DOUT, LIN_X, LIN_W, LIN_N, LIN_I, LIN_O); // lib
    // [linear_row]
    show(ch, "linear.x", (float *)LIN_X, LIN_N, LIN_I);
    show(ch, "linear.W", (float *)LIN_W, LIN_O, LIN_I);
    show(ch, "linear.dout", (float *)LIN_DOUT, LIN_N, LIN_O);
    show(ch, "linear.dx", dx, LIN_N, LIN_I);
    show(ch, "linear.dW", dw, LIN_O, LIN_I);
    pin_row(ch, "linear.db", db, LIN_O);
    float worst[3] = {max_diff(fx, dx, LIN_N * LIN_I), max_diff(fw, dw, LIN_O * LIN_I),
                      max_diff(fb, db, LIN_O)};
    ch_say(ch, "db = (%.2f, %.2f), the column sums of dout. The three loops above and "
               "ops_linear_backward() agree to within %.1e. These are the matrix products "
               "of Section 2's steps 1 and 4, and every fc1, fc2, qkv, proj and the head "
               "of the model is this.", db[0], db[1],
           ch_value(ch, "linear.by_hand_max_diff", max_abs(worst, 3)));
}

static void gelu_and_residual(Chapter *ch) {
    float phi_cdf[GN], x_pdf[GN], slope[GN], dgelu[GN] = {0}, dres[GN];
    // [gelu_row]
    for (int i = 0; i < GN; i++) { // GELU(x) = x·Φ(x), so GELU'(x) = Φ(x) + x·φ(x)
        const double x = GELU_X[i];
        phi_cdf[i] = (float)(0.5 * (1.0 + erf(x / sqrt(2.0))));
        x_pdf[i] = (float)(x * exp(-0.5 * x * x) / sqrt(2.0 * PI));
        slope[i] = phi_cdf[i] + x_pdf[i];
    }
    gelu_backward(dgelu, GELU_DOUT, GELU_X, GN); // lib, dout = 1: dx = GELU'(x)
    // the residual y = x + GELU(x): the add copies dy to x, GELU's backward adds its share
    memcpy(dres, GELU_DOUT, sizeof dres);
    gelu_backward(dres, GELU_DOUT, GELU_X, GN);
    // [gelu_row]
    pin_row(ch, "gelu.x", (float *)GELU_X, GN);
    pin_row(ch, "gelu.slope", slope, GN);
    pin_row(ch, "gelu.dx", dgelu, GN);
    pin_row(ch, "residual.dx", dres, GN);
    ch_say(ch, "GELU acts on each number alone, so its backward is one multiplication: "
               "GELU(x) = x·Φ(x), Φ the normal distribution's CDF, and by the product rule "
               "GELU'(x) = Φ(x) + x·φ(x), φ its density. A residual add y = x + f(x) passes "
               "dy to both of its terms unchanged (∂(a + b)/∂a = 1), so through y = x + "
               "GELU(x) the gradient is dy·(1 + GELU'(x)). With dy = 1:");
    ch_line(ch, "        x     Φ(x)   x·φ(x)  GELU'(x)  gelu_backward  x + GELU(x)");
    for (int i = 0; i < GN; i++)
        ch_line(ch, "    %5.1f  %7.4f  %7.4f  %8.4f  %13.4f  %11.4f", GELU_X[i], phi_cdf[i],
                x_pdf[i], slope[i], dgelu[i], dres[i]);
    ch_line(ch, "%s", "");
    ch_say(ch, "The formula and gelu_backward() agree to within %.1e. At x = %g GELU "
               "passes back only %.4f of the gradient: a unit that is off lets almost "
               "nothing through. The residual's 1 is what the stream adds: the block's "
               "input gets %.4f there, the gradient of everything above almost undiminished. "
               "That is why a deep stack of blocks still trains: every block's input "
               "hears the loss directly, whatever its sub-layers do.",
           ch_max_diff(ch, "gelu.by_hand_max_diff", slope, dgelu, GN), GELU_X[0],
           ch_value(ch, "gelu.off_slope", dgelu[0]), ch_value(ch, "residual.off_dx", dres[0]));
}

static void tokens_gradient(Chapter *ch) {
    float dembed[TB * TN * TD];
    for (int i = 0; i < TB * TN * TD; i++) dembed[i] = (float)(i % 7) - 3.0f; // a made-up dembed
    float dpos[TN * TD] = {0}, dcls[TD] = {0}, dtokens[TB * TN * TD] = {0};
    float dpatch[TB * TP * TD] = {0}, fpos[TN * TD] = {0}, fcls[TD] = {0};
    // [tokens_row]
    for (int b = 0; b < TB; b++) // the formula: sums over the images
        for (int i = 0; i < TN * TD; i++) {
            fpos[i] += dembed[b * TN * TD + i];           // every image added the same table
            if (i < TD) fcls[i] += dembed[b * TN * TD + i]; // row 0 of every image is [cls]
        }
    tokens_add_positions_backward(dtokens, dpos, dembed, TB, TN, TD);   // lib: embed = tokens + pos
    tokens_prepend_cls_backward(dpatch, dcls, dtokens, TB, TP, TD);     // lib: tokens = [cls; patches]
    // [tokens_row]
    Tensor te = tensor_view(dembed, 3, TB, TN, TD);
    ch_show(ch, "tokens.dembed", &te);
    pin_row(ch, "tokens.dpos", dpos, TN * TD);
    pin_row(ch, "tokens.dcls", dcls, TD);
    Tensor tp = tensor_view(dpatch, 3, TB, TP, TD);
    ch_pin(ch, "tokens.dpatch", &tp);
    float worst[2] = {max_diff(fpos, dpos, TN * TD), max_diff(fcls, dcls, TD)};
    ch_say(ch, "The first step of the forward prepends [cls] and adds the positions: "
               "embed_b = [cls; patches_b] + pos for each image b. Both copy or add, so their "
               "gradients are copies and sums. The add hands dembed unchanged to the tokens "
               "and to pos; pos, one table added to each of the %d images, collects their sum, "
               "dpos = Σ_b dembed_b. Of the tokens, rows 1…%d go back to the patches and row "
               "0 to [cls], which also collects the sum over the images: dcls = Σ_b "
               "dembed_b[0]. For %d images of %d patches of width %d and the dembed above:",
           TB, TP, TB, TP, TD);
    ch_line(ch, "    dpos  row 0 %7.1f %7.1f %7.1f", dpos[0], dpos[1], dpos[2]);
    for (int n = 1; n < TN; n++)
        ch_line(ch, "          row %d %7.1f %7.1f %7.1f", n, dpos[n * TD], dpos[n * TD + 1],
                dpos[n * TD + 2]);
    ch_line(ch, "    dcls        %7.1f %7.1f %7.1f", dcls[0], dcls[1], dcls[2]);
    ch_line(ch, "%s", "");
    ch_say(ch, "dcls is row 0 of dpos, as it must be: both were added to token 0 of every "
               "image. The sums by hand and tokens_add_positions_backward() with "
               "tokens_prepend_cls_backward() agree to within %.1e. Section 7 finds the "
               "same equality in the whole model's gradients.",
           ch_value(ch, "tokens.by_hand_max_diff", max_abs(worst, 2)));
}

static void other_layers(Chapter *ch) {
    if (!ch_section(ch, "5. The backward of the other layers")) return;
    ch_say(ch, "Sections 2–4 undid attention, softmax and LayerNorm. The whole model needs "
               "four more backward functions: the linear layer, GELU, the residual add, and "
               "the first step, [cls] and the positions. Each is short; each is shown here "
               "on a case small enough to check by hand, its formula computed beside lib's "
               "function (PyTorch's autograd gives the same numbers, the chapter's test "
               "checks the formula against it).");
    linear_gradient(ch);
    gelu_and_residual(ch);
    tokens_gradient(ch);
}

/* ----------------------------------------------- 6. Adam, written out */

enum { ADAM_STEPS = 2 };
static const float ADAM_THETA0 = 1.0f;                      // one parameter
static const float ADAM_G[ADAM_STEPS] = {0.2f, 0.05f};      // its gradient at steps 1 and 2
static const double ADAM_LR = 1e-2;
// The spike of the clipping example: a quiet gradient, then one 100 times larger.
enum { SPIKE_AT = 50, SPIKE_STEPS = 150 };
static const float QUIET_G = 0.5f, SPIKE_G = 50.0f;
static const double CLIP_LR = 1e-3;
static const double CLIP_NORM = 1.0; // the length the spike is clipped to, as in Section 7
static const int SPIKE_SHOWN[] = {1, 50, 51, 52, 60, 100, 150}; // steps whose size is printed
enum { SHOWN = sizeof SPIKE_SHOWN / sizeof SPIKE_SHOWN[0] };

static float spike_gradient(int step) { return step == SPIKE_AT + 1 ? SPIKE_G : QUIET_G; }

static void adam_written_out(Chapter *ch) {
    const AdamWConfig cfg = adamw_defaults();
    ch_say(ch, "Section 7 takes an AdamW step on the whole model. First what one step does "
               "to one parameter θ with gradient g, at step t = 1, 2, …, with β1 = %g, β2 = "
               "%g and eps = %g (PyTorch's defaults, adamw_defaults()):",
           cfg.beta1, cfg.beta2, cfg.eps);
    ch_line(ch, "    m ← β1·m + (1 − β1)·g        a running mean of g, from m = 0");
    ch_line(ch, "    v ← β2·v + (1 − β2)·g²       a running mean of g², from v = 0");
    ch_line(ch, "    m̂ = m / (1 − β1^t)           the bias corrections");
    ch_line(ch, "    v̂ = v / (1 − β2^t)");
    ch_line(ch, "    θ ← θ − η·m̂ / (√v̂ + eps)");
    ch_line(ch, "%s", "");
    ch_say(ch, "m and v start at 0, so early on they are too small: after one step m = "
               "(1 − β1)·g, a tenth of g, and v = (1 − β2)·g², a thousandth of g². The "
               "weights of an average, (1 − β)·(1 + β + … + β^(t−1)), add up to 1 − β^t, "
               "not 1: dividing by it is the bias correction. By hand, in double, for θ = "
               "%g, η = %g and gradients %g then %g, beside lib's adamw_step():",
           (double)ADAM_THETA0, ADAM_LR, (double)ADAM_G[0], (double)ADAM_G[1]);
    float theta = ADAM_THETA0, grad = 0, m[ADAM_STEPS], v[ADAM_STEPS], mhat[ADAM_STEPS];
    float vhat[ADAM_STEPS], step[ADAM_STEPS], by_hand[ADAM_STEPS], lib_theta[ADAM_STEPS];
    OptimParam p = {.data = &theta, .grad = &grad, .numel = 1, .decay = false};
    AdamW opt;
    VitError err;
    if (adamw_init(&opt, &p, 1, &cfg, &err) != VIT_OK) {
        ch_verdict(ch, "cannot set up AdamW: %s", err.msg);
        return;
    }
    // [adam_by_hand]
    double mt = 0, vt = 0, th = ADAM_THETA0;
    for (int t = 1; t <= ADAM_STEPS; t++) {
        const double g = ADAM_G[t - 1];
        mt = cfg.beta1 * mt + (1 - cfg.beta1) * g;
        vt = cfg.beta2 * vt + (1 - cfg.beta2) * g * g;
        const double mh = mt / (1 - pow(cfg.beta1, t)), vh = vt / (1 - pow(cfg.beta2, t));
        th -= ADAM_LR * mh / (sqrt(vh) + cfg.eps);
        grad = (float)g;
        adamw_step(&opt, ADAM_LR); // lib
        m[t - 1] = (float)mt, v[t - 1] = (float)vt, mhat[t - 1] = (float)mh;
        vhat[t - 1] = (float)vh, step[t - 1] = (float)(mh / (sqrt(vh) + cfg.eps));
        by_hand[t - 1] = (float)th, lib_theta[t - 1] = theta;
    }
    // [adam_by_hand]
    adamw_free(&opt);
    pin_row(ch, "adam.m", m, ADAM_STEPS);
    pin_row(ch, "adam.v", v, ADAM_STEPS);
    pin_row(ch, "adam.mhat", mhat, ADAM_STEPS);
    pin_row(ch, "adam.vhat", vhat, ADAM_STEPS);
    pin_row(ch, "adam.step", step, ADAM_STEPS);
    pin_row(ch, "adam.theta", lib_theta, ADAM_STEPS);
    ch_line(ch, "    t     g        m           v          m̂         v̂       step/η   θ");
    for (int t = 0; t < ADAM_STEPS; t++)
        ch_line(ch, "    %d  %5.2f  %8.5f  %10.3e  %8.5f  %10.3e  %7.4f  %.6f", t + 1,
                (double)ADAM_G[t], m[t], v[t], mhat[t], vhat[t], step[t], lib_theta[t]);
    ch_line(ch, "%s", "");
    ch_say(ch, "adamw_step() lands on the same θ to within %.1e. At t = 1 the corrections "
               "make m̂ = g and v̂ = g², so the step is g/|g| = 1 times η, whatever g: the "
               "warm-up of Section 8 is about that. Without them it would be m/√v = "
               "(1 − β1)/√(1 − β2) = %.2f times η, three times too large. At t = 2 the "
               "gradient fell to a quarter, and the step to %.4f·η: v̂ still remembers the "
               "larger g of step 1.",
           ch_max_diff(ch, "adam.by_hand_max_diff", by_hand, lib_theta, ADAM_STEPS),
           ch_value(ch, "adam.uncorrected_first_step",
                    (float)((1 - cfg.beta1) / sqrt(1 - cfg.beta2))), step[1]);
}

// θ from 0 under the spike's gradients, clipped to max_norm or not (max_norm 0); the size of
// each step, in units of η, into size (SPIKE_STEPS).
static void spike_run(float *size, double max_norm) {
    float theta = 0.0f, grad = 0.0f;
    OptimParam p = {.data = &theta, .grad = &grad, .numel = 1, .decay = false};
    const AdamWConfig cfg = adamw_defaults();
    AdamW opt;
    VitError err;
    if (adamw_init(&opt, &p, 1, &cfg, &err) != VIT_OK) return;
    for (int s = 1; s <= SPIKE_STEPS; s++) {
        const float before = theta;
        grad = spike_gradient(s);
        if (max_norm > 0) optim_clip_grad_norm(&p, 1, max_norm);
        adamw_step(&opt, CLIP_LR);
        size[s - 1] = (float)((before - theta) / CLIP_LR);
    }
    adamw_free(&opt);
}

static void why_clip(Chapter *ch) {
    float raw[SPIKE_STEPS], clipped[SPIKE_STEPS], raw_at[SHOWN], clipped_at[SHOWN], at[SHOWN];
    spike_run(raw, 0.0);
    spike_run(clipped, CLIP_NORM);
    for (int i = 0; i < SHOWN; i++) {
        at[i] = (float)SPIKE_SHOWN[i];
        raw_at[i] = raw[SPIKE_SHOWN[i] - 1], clipped_at[i] = clipped[SPIKE_SHOWN[i] - 1];
    }
    pin_row(ch, "clip.step", at, SHOWN);
    pin_row(ch, "clip.size_raw", raw_at, SHOWN);
    pin_row(ch, "clip.size_clipped", clipped_at, SHOWN);
    ch_say(ch, "Why clip? Training gradients are noisy, and now and then one batch gives a "
               "gradient far longer than the others. Take one parameter whose gradient is "
               "%g at every step but step %d, where it is %g, a hundred times more, and "
               "η = %g. The size of each step in units of η, as it is, and clipped to "
               "length %g by optim_clip_grad_norm() before each adamw_step():",
           (double)QUIET_G, SPIKE_AT + 1, (double)SPIKE_G, CLIP_LR, CLIP_NORM);
    ch_line(ch, "    step      %s", "   1     50     51     52     60    100    150");
    ch_line(ch, "    as it is  %6.3f %6.3f %6.3f %6.3f %6.3f %6.3f %6.3f", raw_at[0], raw_at[1],
            raw_at[2], raw_at[3], raw_at[4], raw_at[5], raw_at[6]);
    ch_line(ch, "    clipped   %6.3f %6.3f %6.3f %6.3f %6.3f %6.3f %6.3f", clipped_at[0],
            clipped_at[1], clipped_at[2], clipped_at[3], clipped_at[4], clipped_at[5],
            clipped_at[6]);
    ch_line(ch, "%s", "");
    ch_say(ch, "Adam divides by √v̂, so even the spike moves θ by only %.3f·η. The harm "
               "comes after: v, a mean of g² over about 1/(1 − β2) = 1000 steps, now holds "
               "the spike's g² = %g, and every later step is divided by its root. "
               "At step %d, the parameter moves by %.3f·η where it moved by η "
               "before: one bad batch has slowed it for a hundred steps and more. Clipped to "
               "length %g, the spike is a gradient of %g, twice the usual, and the steps "
               "after it stay at %.3f·η.", raw_at[2], (double)(SPIKE_G * SPIKE_G), SPIKE_STEPS,
           ch_value(ch, "clip.raw_at_150", raw_at[6]), CLIP_NORM, CLIP_NORM,
           ch_value(ch, "clip.clipped_at_150", clipped_at[6]));
}

static void adam(Chapter *ch) {
    if (!ch_section(ch, "6. Adam, written out, and why clip")) return;
    adam_written_out(ch);
    why_clip(ch);
}

/* ---------------------------------------------------- 7. one AdamW step */

enum { STEPS = 2 };
static const double STEP_LR[STEPS] = {1e-4, 1e-3}; // the learning rates of section 7's step
static const double STEP_DECAY = 0.05;  // its weight decay, timm's ViT recipes'
static const double MAX_NORM = 1.0;     // the clipping of section 7
// Section 7 lists these tensors' gradients and checks the largest entry of four of them.
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

/// Section 7's working state: the gradients, the optimizer, and flat copies of θ and g.
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
               "block's MLP and attention undone by the functions of Sections 2–5, back "
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
    ch_say(ch, "One step on one image, and the loss falls. As Section 6 showed, Adam's "
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
    if (!ch_section(ch, "7. One AdamW step on the whole model")) return;
    Step s;
    VitError err;
    if (!step_new(&s, w, &err)) {
        ch_verdict(ch, "cannot prepare the model for training: %s", err.msg);
    } else if (step_backward(ch, w, &s)) {
        step_check(ch, w, &s);
        step_update(ch, w, &s);
    }
    step_free(&s);
}

/* ------------------------------------------ 8. warm-up and weight decay */

// L2 against decoupled decay: one weight at 1 whose gradient is ±10, alternately.
enum { L2_STEPS = 100 };
static const float NOISY_G = 10.0f;
static const double L2_LAMBDA = 0.05;

/// How a weight decays, for Section 8's comparison.
typedef enum {
    NO_DECAY,        ///< no decay at all
    L2_DECAY,        ///< λθ added to the gradient: an L2 penalty ½λθ² on the loss
    DECOUPLED_DECAY, ///< θ ← θ − ηλθ beside Adam's step: AdamW
} DecayKind;

// θ after L2_STEPS steps of η = 1e-3 from θ = 1, with the decay of the given kind.
static float noisy_weight(DecayKind kind) {
    float theta = 1.0f, grad = 0.0f;
    OptimParam p = {.data = &theta, .grad = &grad, .numel = 1, .decay = kind == DECOUPLED_DECAY};
    AdamWConfig cfg = adamw_defaults();
    cfg.weight_decay = L2_LAMBDA;
    AdamW opt;
    VitError err;
    if (adamw_init(&opt, &p, 1, &cfg, &err) != VIT_OK) return NAN;
    for (int s = 1; s <= L2_STEPS; s++) {
        grad = s % 2 ? NOISY_G : -NOISY_G;                      // noisy: mean 0, √v̂ ≈ 10
        if (kind == L2_DECAY) grad += (float)L2_LAMBDA * theta; // ∂/∂θ of the penalty ½λθ²
        adamw_step(&opt, 1e-3);
    }
    adamw_free(&opt);
    return theta;
}

static void l2_versus_decoupled(Chapter *ch) {
    // [l2_vs_decoupled]
    const float plain = noisy_weight(NO_DECAY), l2 = noisy_weight(L2_DECAY);
    const float decoupled = noisy_weight(DECOUPLED_DECAY);
    // [l2_vs_decoupled]
    const float by_l2 = ch_value(ch, "l2.shrink_l2", plain - l2);
    const float by_decoupled = ch_value(ch, "l2.shrink_decoupled", plain - decoupled);
    ch_value(ch, "l2.theta_plain", plain);
    ch_say(ch, "Why decoupled? Adam with an L2 penalty ½λθ² adds λθ to the gradient, and "
               "that λθ then goes through Adam's division by √v̂ like the rest. One weight "
               "at 1 whose gradient is noisy, +%g and −%g in turn, so that √v̂ ≈ %g, over "
               "%d steps of η = 1e-3, λ = %g: the decay moves it towards 0 by %.2e "
               "decoupled, by %.2e as an L2 penalty, %.3f times as much (against the run "
               "with no decay at all). Through Adam, L2's pull on a weight is divided by "
               "the size of its gradient, so the weights with the largest gradients are "
               "hardly decayed at all; AdamW's is the same ηλθ for every weight.",
           (double)NOISY_G, (double)NOISY_G, (double)NOISY_G, L2_STEPS, L2_LAMBDA,
           by_decoupled, by_l2, ch_value(ch, "l2.ratio", by_l2 / by_decoupled));
}


static void warmup_and_decay(Chapter *ch, Work *w) {
    if (!ch_section(ch, "8. Warm-up and weight decay")) return;
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
    l2_versus_decoupled(ch);

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
    if (!ch_section(ch, "What's next")) return;
    ch_say(ch, "Training is Section 7's step repeated: a batch of labelled images, "
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
        ch_verdict(ch, "cannot build the model: %s", err.msg);
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
    other_layers(ch);
    adam(ch);
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
