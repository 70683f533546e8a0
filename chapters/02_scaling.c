/**
 * @file 02_scaling.c
 * @brief Chapter 02 · Scaling by 1/√Dh: why attention shrinks its scores.
 *
 * If the entries of a query q and a key k of width \f$D_h\f$ are independent
 * with mean 0 and variances \f$\sigma_q^2\f$ and \f$\sigma_k^2\f$, each
 * product \f$q_i k_i\f$ has variance \f$\sigma_q^2\sigma_k^2\f$ and the
 * \f$D_h\f$ of them add up:
 * \f[ \operatorname{Var}(q \cdot k) = D_h\,\sigma_q^2\sigma_k^2, \qquad
 *     \operatorname{Var}\!\left(\frac{q \cdot k}{\sqrt{D_h}}\right) = \sigma_q^2\sigma_k^2 . \f]
 * The scaling takes the head width out of the spread of the scores. With
 * unit-variance entries the scaled scores have variance 1: the chapter measures
 * that on 1,048,576 random scores (1024 queries × 1024 keys) for each width
 * from 4 to 768, then shows what unscaled scores do to softmax: at
 * \f$D_h\f$ = 768 one key takes almost all the probability, and dividing by
 * \f$\sqrt{D_h}\f$ brings the spread back. Last, it measures what a freshly
 * initialised ViT feeds attention instead: LayerNorm'd tokens through
 * weights of std 0.02 give \f$\sigma_q^2 = \sigma_k^2 \approx 768 \cdot
 * 0.02^2 = 0.31\f$, so scaled scores of standard deviation about 0.31 at every
 * head width, not 1.
 *
 * Every number printed is pinned by name and checked against PyTorch by
 * tests/test_ch02_scaling.c.
 *
 * Run: `build/chapters/02_scaling`
 */
#include <math.h>

#include "attention/attention.h"
#include "teach/chapter.h"
#include "chapters.h"
#include "gemm/gemm.h"
#include "ops/ops.h"
#include "base/rng.h"
#include "base/tensor.h"
#include "base/util.h"

static const int WIDTHS[] = {4, 16, 64, 256, 768}; // Dh, the query/key width
enum {
    N_WIDTHS = sizeof WIDTHS / sizeof WIDTHS[0],
    QUERIES = 1024, // random queries per width
    KEYS = 1024,    // random keys per width: QUERIES × KEYS scores
    ROW_KEYS = 8,   // the softmax examples use query 0 against keys 0…7
};
static const uint64_t SEED = 2; // one stream: Q then K for Dh = 4, then Q, K for Dh = 16, …

// Section 4: a fresh ViT-Base-sized layer. N tokens of width D, LayerNorm'd,
// projected to queries and keys of width Dh by weights drawn as lib's
// vit_build_random() draws every weight.
static const int FRESH_WIDTHS[] = {16, 64, 256}; // Dh = D/H for H = 48, 12, 3
enum {
    N_FRESH = sizeof FRESH_WIDTHS / sizeof FRESH_WIDTHS[0],
    FRESH_N = 197, // tokens of a 224 × 224 image: 196 patches + [cls]
    FRESH_D = 768, // token width of ViT-Base
};
static const uint64_t FRESH_SEED = 22;   // tokens, then W_q, W_k for Dh = 16, 64, 256
static const float INIT_STD = 0.02f;     // std of every weight at initialisation
static const float INIT_CUT = 2.0f;      // ... truncated at ±2 (absolute, as timm's trunc_normal_)
static const float LN_EPS = 1e-6f;       // LayerNorm eps of timm's ViT

// What one width leaves behind for the softmax sections.
typedef struct {
    int dh;
    float row[ROW_KEYS];          // scores of query 0 against keys 0…7
    float row_scaled[ROW_KEYS];   // the same divided by √Dh
    float probs_raw[ROW_KEYS];    // softmax(row)
    float probs_scaled[ROW_KEYS]; // softmax(row_scaled)
    float max_raw, entropy_raw;       // largest probability and entropy of probs_raw
    float max_scaled, entropy_scaled; // the same for probs_scaled
    float std;                    // standard deviation of all the raw scores
    float var_over_dh;            // variance of the scores divided by Dh (not √Dh)
} Width;

/* ------------------------------------------------------------ helpers */

// Variance of all elements (population, as torch.var(unbiased=False)).
static float variance(const Tensor *t) {
    TensorStats s = tensor_stats(t);
    return (float)(s.std * s.std);
}

static float largest(const float *p, int n) {
    float m = p[0];
    for (int i = 1; i < n; i++)
        if (p[i] > m) m = p[i];
    return m;
}

// Entropy H = -Σ p ln p of one row of n weights, in nats (lib's attention_entropy()).
static float entropy(const float *p, int n) {
    float h;
    attention_entropy(&h, p, 1, n);
    return h;
}

// [row_softmax]
// Softmax of each row of s (rows, cols), as its formula says: p_j = e^(s_j − m) / Σ_k
// e^(s_k − m), m the row's largest score (subtracting it changes nothing but keeps
// e^x from overflowing). Chapter 03 builds lib's softmax() and says why; this
// chapter comes before it and keeps its own few lines, so that its numbers are
// its own whatever softmax() does. p may be s.
static void row_softmax(float *p, const float *s, int rows, int cols) {
    for (int r = 0; r < rows; r++) {
        const float *sr = s + (size_t)r * cols;
        float *pr = p + (size_t)r * cols, m = sr[0];
        for (int j = 1; j < cols; j++) m = fmaxf(m, sr[j]);
        double sum = 0;
        for (int j = 0; j < cols; j++) {
            pr[j] = expf(sr[j] - m);
            sum += pr[j];
        }
        for (int j = 0; j < cols; j++) pr[j] = (float)(pr[j] / sum);
    }
}
// [row_softmax]

// [normalise_tokens]
// Each token, a row of x (n, d), to mean 0 and variance 1 over its d entries:
// (x − μ) / √(σ² + ε). That is what LayerNorm does when its γ is 1 and its β 0, as
// at initialisation (chapter 08 builds lib's layernorm(), γ and β included).
static void normalise_tokens(float *x, int n, int d, float eps) {
    for (int i = 0; i < n; i++) {
        float *xi = x + (size_t)i * d;
        double mean = 0, var = 0;
        for (int j = 0; j < d; j++) mean += xi[j];
        mean /= d;
        for (int j = 0; j < d; j++) var += (xi[j] - mean) * (xi[j] - mean);
        var /= d; // biased, as LayerNorm's
        const float mu = (float)mean, rstd = (float)(1.0 / sqrt(var + (double)eps));
        for (int j = 0; j < d; j++) xi[j] = (xi[j] - mu) * rstd;
    }
}
// [normalise_tokens]

// Index of the largest of x[0..n), skipping index `skip` (pass -1 to skip none).
static int top_index(const float *x, int n, int skip) {
    int best = -1;
    for (int i = 0; i < n; i++)
        if (i != skip && (best < 0 || x[i] > x[best])) best = i;
    return best;
}

// A probability in a fixed 9-column field: 0.1234, or 3.2e-11 when tiny.
static const char *fmt_prob(char *buf, size_t size, float p) {
    if (p > 0 && p < 1e-4f) snprintf(buf, size, "%9.1e", p);
    else snprintf(buf, size, "%9.4f", p);
    return buf;
}

// A (rows, cols) tensor of standard normal numbers drawn from rng.
static Tensor random_normal(Rng *rng, int rows, int cols) {
    Tensor t = tensor_new(2, rows, cols);
    rng_fill_normal(rng, t.data, t.numel, 0.0f, 1.0f);
    return t;
}

// A (rows, cols) weight drawn as vit_build_random() draws one: truncated normal, std 0.02.
static Tensor init_weight(Rng *rng, int rows, int cols) {
    Tensor t = tensor_new(2, rows, cols);
    rng_fill_trunc_normal(rng, t.data, t.numel, 0.0f, INIT_STD, -INIT_CUT, INIT_CUT);
    return t;
}

/* ----------------------------------------------------------- sections */

// Draw QUERIES queries and KEYS keys of width Dh, score them all, report the
// spread of the scores before and after dividing by √Dh. One table row.
static void measure_width(Chapter *ch, Rng *rng, Width *w) {
    int dh = w->dh;
    // [measure]
    Tensor Q = random_normal(rng, QUERIES, dh);      // (1024, Dh), entries ~ N(0, 1)
    Tensor K = random_normal(rng, KEYS, dh);         // (1024, Dh)
    Tensor scores = tensor_new(2, QUERIES, KEYS);    // (1024, 1024) = Q·Kᵀ
    matmul_bt(scores.data, Q.data, K.data, QUERIES, dh, KEYS);
    Tensor scaled = tensor_new(2, QUERIES, KEYS);    // Q·Kᵀ / √Dh
    ops_scale(scaled.data, scores.data, 1.0f / sqrtf((float)dh), scaled.numel);
    // [measure]
    TensorStats raw = tensor_stats(&scores);

    float mean = ch_valuef(ch, (float)raw.mean, "mean_dh%d", dh);
    float var = ch_valuef(ch, variance(&scores), "var_dh%d", dh);
    w->std = ch_valuef(ch, (float)raw.std, "std_dh%d", dh);
    float var_scaled = ch_valuef(ch, variance(&scaled), "var_scaled_dh%d", dh);
    ch_line(ch, "    %5d  %8.4f  %10.2f  %10.3f  %16.4f", dh, mean, var, w->std, var_scaled);

    for (int j = 0; j < ROW_KEYS; j++) {
        w->row[j] = scores.data[j];      // row 0 of the scores: query 0
        w->row_scaled[j] = scaled.data[j];
    }
    // For the prose: divide by Dh instead of √Dh (overwrites `scaled`, no longer needed).
    ops_scale(scaled.data, scores.data, 1.0f / (float)dh, scaled.numel);
    w->var_over_dh = variance(&scaled);
    tensor_free(&Q);
    tensor_free(&K);
    tensor_free(&scores);
    tensor_free(&scaled);
}

static void variance_grows(Chapter *ch, Width *widths) {
    if (!ch_section(ch, "1. Scores grow with the width")) return;
    ch_say(ch, "Take a query q and a key k of width Dh whose entries are random and "
               "independent, with mean 0 and variance 1. (Variance 1 is the simplest "
               "case, not what a real network has: section 4 measures a freshly "
               "initialised ViT.) Each product q_i k_i then has mean 0 and variance 1, "
               "the Dh products are independent, and variances of independent terms "
               "add:");
    ch_line(ch, "    Var(q · k) = Var(q₁k₁) + … + Var(q_Dh k_Dh) = 1 + … + 1 = Dh");
    ch_line(ch, "%s", "");
    ch_say(ch, "So the score q · k has mean 0 and variance Dh: the wider the vectors, "
               "the wider the spread of the scores.");
    char count[VIT_NUM_BUF];
    ch_say(ch, "Let us measure it. For each width Dh we draw %d random queries and %d "
               "random keys, compute all %d × %d = %s scores with one matmul_bt(), and "
               "measure their mean and variance. The last column divides every score "
               "by √Dh first.",
           QUERIES, KEYS, QUERIES, KEYS, vit_thousands(count, (int64_t)QUERIES * KEYS));
    ch_line(ch, "       Dh      mean  var(q · k)  std(q · k)  var(q · k / √Dh)");
    Rng rng;
    rng_seed(&rng, SEED);
    for (int i = 0; i < N_WIDTHS; i++) {
        widths[i].dh = WIDTHS[i];
        measure_width(ch, &rng, &widths[i]);
    }
    ch_line(ch, "%s", "");

    const Width *w = &widths[N_WIDTHS - 1];
    ch_say(ch, "The variance tracks Dh closely: multiply the width by 4 and the "
               "variance of the scores multiplies by 4 too, and the standard deviation "
               "by 2. At Dh = %d a typical score is ±%.1f, against ±%.1f at Dh = %d. "
               "The means stay near 0, as promised. After dividing by √Dh every width "
               "has variance close to 1.",
           w->dh, w->std, widths[0].std, widths[0].dh);
    ch_say(ch, "Why √Dh and not Dh? Scaling a number by s scales its variance by s², "
               "so dividing by √Dh divides the variance by exactly Dh. Dividing by Dh "
               "would overshoot: the variance at Dh = %d would drop to %.5f, every "
               "score would be nearly 0, and softmax could no longer prefer any key.",
           w->dh, ch_valuef(ch, w->var_over_dh, "var_over_dh_dh%d", w->dh));
}

// Softmax of query 0's eight scores, unscaled and scaled, and how peaked each is.
static void softmax_row(Chapter *ch, Width *w) {
    // [saturation]
    row_softmax(w->probs_raw, w->row, 1, ROW_KEYS);
    row_softmax(w->probs_scaled, w->row_scaled, 1, ROW_KEYS);
    w->max_raw = largest(w->probs_raw, ROW_KEYS);
    w->entropy_raw = entropy(w->probs_raw, ROW_KEYS);
    w->max_scaled = largest(w->probs_scaled, ROW_KEYS);
    w->entropy_scaled = entropy(w->probs_scaled, ROW_KEYS);
    // [saturation]
    ch_valuef(ch, w->max_raw, "max_prob_raw_dh%d", w->dh);
    ch_valuef(ch, w->entropy_raw, "entropy_raw_dh%d", w->dh);
    ch_valuef(ch, w->max_scaled, "max_prob_scaled_dh%d", w->dh);
    ch_valuef(ch, w->entropy_scaled, "entropy_scaled_dh%d", w->dh);
    ch_line(ch, "    %5d   %9.4f %9.4f      %9.4f %9.4f", w->dh, w->max_raw, w->entropy_raw,
            w->max_scaled, w->entropy_scaled);
}

static void softmax_saturates(Chapter *ch, Width *widths) {
    if (!ch_section(ch, "2. Big scores saturate softmax")) return;
    ch_say(ch, "Attention turns each row of scores s into weights with softmax "
               "(Chapter 03 looks at it closely):");
    ch_line(ch, "    p_j = e^(s_j) / (e^(s_1) + e^(s_2) + … + e^(s_n))");
    ch_line(ch, "%s", "");
    ch_say(ch, "Because of the exponential, softmax cares about differences: each "
               "extra unit of score multiplies a key's weight by e. When scores spread "
               "over tens of units, the largest one takes everything.");
    float uniform = ch_value(ch, "entropy_uniform", logf((float)ROW_KEYS));
    ch_say(ch, "We take query 0 against its first %d keys at every width and measure "
               "how peaked the softmax is, twice: by its largest probability, and by "
               "its entropy", ROW_KEYS);
    ch_line(ch, "    H = -(p_1 ln p_1 + p_2 ln p_2 + … + p_n ln p_n)");
    ch_line(ch, "%s", "");
    ch_say(ch, "which is 0 when one key gets everything and ln %d = %.4f when all %d "
               "keys get the same weight.", ROW_KEYS, uniform, ROW_KEYS);
    ch_line(ch, "               unscaled scores         divided by √Dh");
    ch_line(ch, "       Dh       max p   entropy          max p   entropy");
    for (int i = 0; i < N_WIDTHS; i++) softmax_row(ch, &widths[i]);
    ch_line(ch, "%s", "");
    const Width *w = &widths[N_WIDTHS - 1];
    ch_say(ch, "Without scaling, the softmax gets more peaked as the width grows: at "
               "Dh = %d the top key takes %.4f of the weight and the entropy is %.4f. "
               "Divided by √Dh, the rows at every width stay comparably spread.",
           w->dh, w->max_raw, w->entropy_raw);
}

static void saturation_up_close(Chapter *ch, const Width *w) {
    if (!ch_section(ch, "3. One row up close")) return;
    Tensor t = tensor_view((float *)w->row, 1, ROW_KEYS);
    ch_pin(ch, "row_dh768", &t);
    t = tensor_view((float *)w->probs_raw, 1, ROW_KEYS);
    ch_pin(ch, "probs_raw_dh768", &t);
    t = tensor_view((float *)w->row_scaled, 1, ROW_KEYS);
    ch_pin(ch, "row_scaled_dh768", &t);
    t = tensor_view((float *)w->probs_scaled, 1, ROW_KEYS);
    ch_pin(ch, "probs_scaled_dh768", &t);

    ch_say(ch, "Here is that row at Dh = %d, key by key:", w->dh);
    // [up_close]
    ch_line(ch, "      key      score    softmax    score/√Dh    softmax");
    for (int j = 0; j < ROW_KEYS; j++) {
        char p1[32], p2[32];
        ch_line(ch, "    %5d   %8.3f  %s     %8.4f  %s", j, w->row[j],
                fmt_prob(p1, sizeof p1, w->probs_raw[j]), w->row_scaled[j],
                fmt_prob(p2, sizeof p2, w->probs_scaled[j]));
    }
    // [up_close]
    ch_line(ch, "%s", "");
    int top = top_index(w->row, ROW_KEYS, -1), second = top_index(w->row, ROW_KEYS, top);
    ch_say(ch, "Unscaled, key %d (score %.3f) gets %.4f of the weight and the "
               "runner-up, key %d (score %.3f), only %.1e. The exponential turns a "
               "difference in score into a ratio of weights, and differences of this "
               "size leave the other keys almost nothing. Attention that saturates "
               "like this copies one token and ignores the rest; worse, in training "
               "its gradients vanish, because nudging any score barely moves the "
               "output. Divided by √%d the same row keeps several keys in play "
               "(largest weight %.4f, entropy %.4f), and the network can learn from "
               "all of them.",
           top, w->row[top], w->probs_raw[top], second, w->row[second], w->probs_raw[second],
           w->dh, w->max_scaled, w->entropy_scaled);
    ch_say(ch, "This is the 1/√Dh in the attention formula softmax(Q·Kᵀ/√Dh)·V, "
               "with Dh the width of a query or key.");
}

// One head width of section 4: queries and keys of width Dh from the same
// LayerNorm'd tokens x (N, D), through two fresh (Dh, D) weights. One table
// row; returns the mean over queries of the largest softmax weight.
static float measure_fresh(Chapter *ch, Rng *rng, const Tensor *x, int dh) {
    Tensor w_q = init_weight(rng, dh, FRESH_D), w_k = init_weight(rng, dh, FRESH_D);
    Tensor q = tensor_new(2, FRESH_N, dh), k = tensor_new(2, FRESH_N, dh);
    Tensor scores = tensor_new(2, FRESH_N, FRESH_N), scaled = tensor_new(2, FRESH_N, FRESH_N);
    // [fresh]
    ops_linear(q.data, x->data, w_q.data, NULL, FRESH_N, FRESH_D, dh);  // q = x·W_qᵀ, (N, Dh)
    ops_linear(k.data, x->data, w_k.data, NULL, FRESH_N, FRESH_D, dh);  // k = x·W_kᵀ, (N, Dh)
    matmul_bt(scores.data, q.data, k.data, FRESH_N, dh, FRESH_N);   // Q·Kᵀ, (N, N)
    ops_scale(scaled.data, scores.data, 1.0f / sqrtf((float)dh), scaled.numel); // / √Dh
    // [fresh]
    float var_q = ch_valuef(ch, variance(&q), "fresh_var_q_dh%d", dh);
    float var_k = ch_valuef(ch, variance(&k), "fresh_var_k_dh%d", dh);
    float var_scores = ch_valuef(ch, variance(&scores), "fresh_var_scores_dh%d", dh);
    float std_scaled =
        ch_valuef(ch, (float)tensor_stats(&scaled).std, "fresh_std_scaled_dh%d", dh);
    ch_line(ch, "    %5d   %9.4f %9.4f  %10.3f  %16.4f", dh, var_q, var_k, var_scores, std_scaled);

    // softmax over all N keys: how far from uniform is each query's row?
    row_softmax(scaled.data, scaled.data, FRESH_N, FRESH_N);
    double top_sum = 0;
    for (int i = 0; i < FRESH_N; i++) top_sum += largest(&scaled.data[i * FRESH_N], FRESH_N);
    float mean_max = ch_valuef(ch, (float)(top_sum / FRESH_N), "fresh_mean_max_prob_dh%d", dh);
    tensor_free(&w_q);
    tensor_free(&w_k);
    tensor_free(&q);
    tensor_free(&k);
    tensor_free(&scores);
    tensor_free(&scaled);
    return mean_max;
}

static void fresh_network(Chapter *ch) {
    if (!ch_section(ch, "4. What a fresh ViT feeds attention")) return;
    ch_say(ch, "Section 1 assumed entries of variance 1. In a Vision Transformer the "
               "queries and keys are projections of the tokens, q = x·W_qᵀ and "
               "k = x·W_kᵀ, and each block first normalises every token with "
               "LayerNorm (Chapter 08), which at initialisation leaves it with mean 0 "
               "and variance 1. Every weight starts out drawn with standard deviation "
               "%.2f (lib's "
               "vit_build_random(); timm draws its linear layers the same way). One "
               "query entry is then a sum of D = %d products of a unit-variance "
               "token entry and a weight, so", INIT_STD, FRESH_D);
    float predicted = ch_value(ch, "fresh_predicted_var", FRESH_D * INIT_STD * INIT_STD);
    ch_line(ch, "    Var(q_i) = D · %.2f² · 1 = %d · %.4f = %.4f", INIT_STD, FRESH_D,
            INIT_STD * INIT_STD, predicted);
    ch_line(ch, "%s", "");
    ch_say(ch, "and the same for the keys: not 1. The argument of section 1 still "
               "works with that variance in place of 1: Var(q · k) = Dh · Var(q_i) · "
               "Var(k_i), and after dividing by √Dh the variance is Var(q_i) · "
               "Var(k_i) ≈ %.4f² whatever Dh is, a standard deviation of about %.4f. "
               "To measure it, we take %d tokens of width %d (standard normal, then "
               "LayerNorm) and, for three head widths, fresh (Dh, %d) weights W_q and "
               "W_k:", predicted, predicted, FRESH_N, FRESH_D, FRESH_D);
    Rng rng;
    rng_seed(&rng, FRESH_SEED);
    // [tokens]
    Tensor x = random_normal(&rng, FRESH_N, FRESH_D);
    normalise_tokens(x.data, FRESH_N, FRESH_D, LN_EPS); // mean 0, variance 1
    // [tokens]
    ch_line(ch, "       Dh    var(q_i)  var(k_i)  var(q · k)  std(q · k / √Dh)");
    float mean_max[N_FRESH];
    for (int i = 0; i < N_FRESH; i++) mean_max[i] = measure_fresh(ch, &rng, &x, FRESH_WIDTHS[i]);
    ch_line(ch, "%s", "");
    tensor_free(&x);

    ch_say(ch, "The unscaled variance still grows with Dh, and after dividing by √Dh "
               "the spread is the same at every width, as the scaling promises. But "
               "it is about %.2f, not 1: the scaling takes the head width out of the "
               "scores, and the size that is left is set by the weights. Scores this "
               "close together make softmax almost uniform: over the %d keys, each "
               "query's largest weight is on average %.4f, %.4f and %.4f at Dh = %d, "
               "%d and %d, against 1/%d = %.4f for a perfectly flat row. A fresh ViT "
               "looks almost everywhere at once; training then changes the weights so "
               "that some keys matter more than others.",
           predicted, FRESH_N, mean_max[0], mean_max[1], mean_max[2], FRESH_WIDTHS[0],
           FRESH_WIDTHS[1], FRESH_WIDTHS[2], FRESH_N,
           ch_value(ch, "uniform_prob_197", 1.0f / FRESH_N));
}

static void whats_next(Chapter *ch) {
    if (!ch_section(ch, "What's next")) return;
    ch_say(ch, "We used softmax as a black box. Chapter 03 opens it: how to compute it "
               "without overflowing, how masks keep a query away from some keys, and "
               "how a temperature makes it sharper or flatter.");
}

void chapter02_run(Chapter *ch) {
    ch_title(ch, "02", "Scaling by 1/√Dh");
    ch_say(ch, "Chapter 01 ended with a matrix of raw scores q · k. Before attention "
               "turns them into weights it divides every one by √Dh, the square root "
               "of the width of a query or key. This chapter measures why.");
    Width widths[N_WIDTHS];
    variance_grows(ch, widths);
    softmax_saturates(ch, widths);
    saturation_up_close(ch, &widths[N_WIDTHS - 1]);
    fresh_network(ch);
    whats_next(ch);
}

#ifndef CHAPTER_NO_MAIN
int main(int argc, char **argv) {
    return chapter_main(argc, argv, chapter02_run,
                        "Chapter 02: why attention divides its scores by the square root "
                        "of the head width Dh.");
}
#endif
