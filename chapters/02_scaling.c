/**
 * @file 02_scaling.c
 * @brief Chapter 02 · Scaling by 1/√d: why attention shrinks its scores.
 *
 * If the entries of a query q and a key k are independent with mean 0 and
 * variance 1, each product q_i k_i has variance 1 and the d of them add up:
 * \f[ \operatorname{Var}(q \cdot k) = d, \qquad
 *     \operatorname{Var}\!\left(\frac{q \cdot k}{\sqrt d}\right) = 1 . \f]
 * This chapter measures that on 65,536 random scores for each width from 4 to
 * 768, then shows what unscaled scores do to softmax: at d = 768 one key takes
 * almost all the probability, and dividing by √d brings the spread back.
 *
 * Every number printed is pinned by name and checked against PyTorch by
 * tests/test_ch02_scaling.c.
 *
 * Run: `build/chapters/02_scaling`
 */
#include <math.h>

#include "chapter.h"
#include "chapters.h"
#include "gemm.h"
#include "ops.h"
#include "rng.h"
#include "tensor.h"

static const int WIDTHS[] = {4, 16, 64, 256, 768}; // d, the query/key width
enum {
    N_WIDTHS = sizeof WIDTHS / sizeof WIDTHS[0],
    QUERIES = 1024, // random queries per width
    KEYS = 1024,    // random keys per width: QUERIES × KEYS scores
    ROW_KEYS = 8,   // the softmax examples use query 0 against keys 0…7
};
static const uint64_t SEED = 2; // one stream: Q then K for d = 4, then Q, K for d = 16, …

// What one width leaves behind for the softmax sections.
typedef struct {
    int d;
    float row[ROW_KEYS];          // scores of query 0 against keys 0…7
    float row_scaled[ROW_KEYS];   // the same divided by √d
    float probs_raw[ROW_KEYS];    // softmax(row)
    float probs_scaled[ROW_KEYS]; // softmax(row_scaled)
    float max_raw, entropy_raw;       // largest probability and entropy of probs_raw
    float max_scaled, entropy_scaled; // the same for probs_scaled
    float std;                    // standard deviation of all the raw scores
    float var_div_d;              // variance of the scores divided by d (not √d)
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

// Entropy H = -Σ p ln p in nats: 0 when one entry holds everything, ln n when
// all n are equal. A zero probability contributes nothing (p ln p → 0).
static float entropy(const float *p, int n) {
    double h = 0;
    for (int i = 0; i < n; i++)
        if (p[i] > 0) h -= (double)p[i] * log((double)p[i]);
    return (float)h;
}

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

/* ----------------------------------------------------------- sections */

// Draw QUERIES queries and KEYS keys of width d, score them all, report the
// spread of the scores before and after dividing by √d. One table row.
static void measure_width(Chapter *ch, Rng *rng, Width *w) {
    int d = w->d;
    //! [measure]
    Tensor Q = tensor_new(2, QUERIES, d);            // (1024, d), entries ~ N(0, 1)
    Tensor K = tensor_new(2, KEYS, d);               // (1024, d)
    rng_fill_normal(rng, Q.data, Q.numel, 0.0f, 1.0f);
    rng_fill_normal(rng, K.data, K.numel, 0.0f, 1.0f);
    Tensor scores = tensor_new(2, QUERIES, KEYS);    // (1024, 1024) = Q·Kᵀ
    matmul_bt(scores.data, Q.data, K.data, QUERIES, d, KEYS);
    TensorStats raw = tensor_stats(&scores);

    Tensor scaled = tensor_new(2, QUERIES, KEYS);    // Q·Kᵀ / √d
    scale(scaled.data, scores.data, 1.0f / sqrtf((float)d), scaled.numel);
    //! [measure]

    float mean = ch_valuef(ch, (float)raw.mean, "mean_d%d", d);
    float var = ch_valuef(ch, variance(&scores), "var_d%d", d);
    w->std = ch_valuef(ch, (float)raw.std, "std_d%d", d);
    float var_scaled = ch_valuef(ch, variance(&scaled), "var_scaled_d%d", d);
    ch_line(ch, "    %5d  %8.4f  %10.2f  %10.3f  %15.4f", d, mean, var, w->std, var_scaled);

    for (int j = 0; j < ROW_KEYS; j++) {
        w->row[j] = scores.data[j];      // row 0 of the scores: query 0
        w->row_scaled[j] = scaled.data[j];
    }
    // For the prose: divide by d instead of √d (overwrites `scaled`, no longer needed).
    scale(scaled.data, scores.data, 1.0f / (float)d, scaled.numel);
    w->var_div_d = variance(&scaled);
    tensor_free(&Q);
    tensor_free(&K);
    tensor_free(&scores);
    tensor_free(&scaled);
}

static void variance_grows(Chapter *ch, Width *widths) {
    ch_section(ch, "1. Scores grow with the width");
    ch_say(ch, "Take a query q and a key k of width d whose entries are random, with "
               "mean 0 and variance 1, as they roughly are in a freshly initialised "
               "network. Each product q_i k_i then has mean 0 and variance 1, the d "
               "products are independent, and variances of independent terms add:");
    ch_line(ch, "    Var(q · k) = Var(q₁k₁) + … + Var(q_d k_d) = 1 + … + 1 = d");
    ch_line(ch, "%s", "");
    ch_say(ch, "So the score q · k has mean 0 and variance d: the wider the vectors, "
               "the wider the spread of the scores.");
    ch_say(ch, "Let us measure it. For each width d we draw %d random queries and %d "
               "random keys, compute all %d × %d = %d scores with one matmul_bt(), and "
               "measure their mean and variance. The last column divides every score "
               "by √d first.",
           QUERIES, KEYS, QUERIES, KEYS, QUERIES * KEYS);
    ch_line(ch, "        d      mean  var(q · k)  std(q · k)  var(q · k / √d)");
    Rng rng;
    rng_seed(&rng, SEED);
    for (int i = 0; i < N_WIDTHS; i++) {
        widths[i].d = WIDTHS[i];
        measure_width(ch, &rng, &widths[i]);
    }
    ch_line(ch, "%s", "");

    const Width *w = &widths[N_WIDTHS - 1];
    ch_say(ch, "The variance tracks d closely: multiply the width by 4 and the spread "
               "of the scores multiplies by 4 too, and the standard deviation by 2. At "
               "d = %d a typical score is ±%.1f, against ±%.1f at d = %d. The means "
               "stay near 0, as promised. After dividing by √d every width has "
               "variance close to 1.",
           w->d, w->std, widths[0].std, widths[0].d);
    ch_say(ch, "Why √d and not d? Scaling a number by s scales its variance by s², so "
               "dividing by √d divides the variance by exactly d. Dividing by d would "
               "overshoot: the variance at d = %d would drop to %.5f, every score "
               "would be nearly 0, and softmax could no longer prefer any key.",
           w->d, ch_valuef(ch, w->var_div_d, "var_div_d_d%d", w->d));
}

// Softmax of query 0's eight scores, unscaled and scaled, and how peaked each is.
static void softmax_row(Chapter *ch, Width *w) {
    //! [saturation]
    softmax(w->probs_raw, w->row, 1, ROW_KEYS);
    softmax(w->probs_scaled, w->row_scaled, 1, ROW_KEYS);
    w->max_raw = largest(w->probs_raw, ROW_KEYS);
    w->entropy_raw = entropy(w->probs_raw, ROW_KEYS);
    w->max_scaled = largest(w->probs_scaled, ROW_KEYS);
    w->entropy_scaled = entropy(w->probs_scaled, ROW_KEYS);
    //! [saturation]
    ch_valuef(ch, w->max_raw, "max_prob_raw_d%d", w->d);
    ch_valuef(ch, w->entropy_raw, "entropy_raw_d%d", w->d);
    ch_valuef(ch, w->max_scaled, "max_prob_scaled_d%d", w->d);
    ch_valuef(ch, w->entropy_scaled, "entropy_scaled_d%d", w->d);
    ch_line(ch, "    %5d   %9.4f %9.4f      %9.4f %9.4f", w->d, w->max_raw, w->entropy_raw,
            w->max_scaled, w->entropy_scaled);
}

static void softmax_saturates(Chapter *ch, Width *widths) {
    ch_section(ch, "2. Big scores saturate softmax");
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
    ch_line(ch, "               unscaled scores         divided by √d");
    ch_line(ch, "        d       max p   entropy          max p   entropy");
    for (int i = 0; i < N_WIDTHS; i++) softmax_row(ch, &widths[i]);
    ch_line(ch, "%s", "");
    const Width *w = &widths[N_WIDTHS - 1];
    ch_say(ch, "Without scaling, the softmax gets more peaked as the width grows: at "
               "d = %d the top key takes %.4f of the weight and the entropy is %.4f. "
               "Divided by √d, the rows at every width stay comparably spread.",
           w->d, w->max_raw, w->entropy_raw);
}

static void saturation_up_close(Chapter *ch, const Width *w) {
    ch_section(ch, "3. One row up close");
    Tensor t = tensor_view((float *)w->row, 1, ROW_KEYS);
    ch_pin(ch, "row_d768", &t);
    t = tensor_view((float *)w->probs_raw, 1, ROW_KEYS);
    ch_pin(ch, "probs_raw_d768", &t);
    t = tensor_view((float *)w->row_scaled, 1, ROW_KEYS);
    ch_pin(ch, "row_scaled_d768", &t);
    t = tensor_view((float *)w->probs_scaled, 1, ROW_KEYS);
    ch_pin(ch, "probs_scaled_d768", &t);

    ch_say(ch, "Here is that row at d = %d, key by key:", w->d);
    ch_line(ch, "      key      score    softmax     score/√d    softmax");
    for (int j = 0; j < ROW_KEYS; j++) {
        char p1[32], p2[32];
        ch_line(ch, "    %5d   %8.3f  %s     %8.4f  %s", j, w->row[j],
                fmt_prob(p1, sizeof p1, w->probs_raw[j]), w->row_scaled[j],
                fmt_prob(p2, sizeof p2, w->probs_scaled[j]));
    }
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
           w->d, w->max_scaled, w->entropy_scaled);
    ch_say(ch, "This is the 1/√d_k in the attention formula softmax(Q·Kᵀ/√d_k)·V, "
               "with d_k the width of a query or key.");
}

static void whats_next(Chapter *ch) {
    ch_section(ch, "What's next");
    ch_say(ch, "We used softmax as a black box. Chapter 03 opens it: how to compute it "
               "without overflowing, how masks keep a query away from some keys, and "
               "how a temperature makes it sharper or flatter.");
}

void chapter02_run(Chapter *ch) {
    ch_title(ch, "02", "Scaling by 1/√d");
    ch_say(ch, "Chapter 01 ended with a matrix of raw scores q · k. Before attention "
               "turns them into weights it divides every one by √d_k, the square root "
               "of the vector width. This chapter measures why.");
    Width widths[N_WIDTHS];
    variance_grows(ch, widths);
    softmax_saturates(ch, widths);
    saturation_up_close(ch, &widths[N_WIDTHS - 1]);
    whats_next(ch);
}

#ifndef CHAPTER_NO_MAIN
int main(int argc, char **argv) {
    return chapter_main(argc, argv, chapter02_run,
                        "Chapter 02: why attention divides its scores by the square root "
                        "of the width.");
}
#endif
