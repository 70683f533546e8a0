/**
 * @file 03_softmax.c
 * @brief Chapter 03 · Softmax: from scores to weights, safely.
 *
 * Softmax turns a row of scores into probabilities:
 * \f[ \mathrm{softmax}(x)_j = \frac{e^{x_j}}{\sum_k e^{x_k}}
 *                          = \frac{e^{x_j - m}}{\sum_k e^{x_k - m}},\quad m = \max_k x_k . \f]
 * The two forms are equal on paper, but only the second survives float32:
 * this chapter shows the first one overflowing to NaN, then lib's stable
 * softmax() getting the right answer. It also covers masking (a -inf score
 * gets exactly zero weight; a query whose every key is masked gets zeros
 * from lib, NaN from PyTorch) and temperature (dividing the scores by T).
 *
 * Every number printed is pinned by name and checked against PyTorch by
 * tests/test_ch03_softmax.c.
 *
 * Run: `build/chapters/03_softmax`
 */
#include <float.h>
#include <math.h>

#include "attention/attention.h"
#include "teach/chapter.h"
#include "chapters.h"
#include "gemm/gemm.h"
#include "ops/ops.h"
#include "base/rng.h"
#include "base/tensor.h"

enum {
    N = 4,      // scores per row in every example
    TOKENS = 4, // the masking examples use a 4 × 4 score matrix
};
static const uint64_t SCORES_SEED = 3; // the random scores of the masking section

/* ------------------------------------------------------------ helpers */

// [naive]
// WHAT GOES WRONG: the textbook formula taken literally, with plain expf.
// Shown to fail on purpose; never use it. expf(x) overflows to inf for
// x above 88.7 (then inf / inf = NaN) and underflows to 0 for x below
// about -104 (then 0 / 0 = NaN). exps[] receives e^x, the return value is the sum.
static float softmax_textbook(float *p, float *exps, const float *x, int n) {
    float sum = 0.0f;
    for (int j = 0; j < n; j++) {
        exps[j] = expf(x[j]);
        sum += exps[j];
    }
    for (int j = 0; j < n; j++) p[j] = exps[j] / sum;
    return sum;
}
// [naive]

// Pin and print a row of N values.
static void show_row(Chapter *ch, const char *name, float *v) {
    Tensor t = tensor_view(v, 1, N);
    ch_show(ch, name, &t);
}

// mask (TOKENS, TOKENS): query i may look only at the keys before it, j < i
// (the causal mask moved one step right). Query 0 sees nothing at all.
static void mask_earlier_only(float *mask) {
    for (int i = 0; i < TOKENS; i++)
        for (int j = 0; j < TOKENS; j++) mask[i * TOKENS + j] = j < i ? 0.0f : -INFINITY;
}

// Pin and print a TOKENS × TOKENS matrix.
static void show_matrix(Chapter *ch, const char *name, float *m) {
    Tensor t = tensor_view(m, 2, TOKENS, TOKENS);
    ch_show(ch, name, &t);
}

// out[j] = x[j] + c: move every score by the same amount.
static void shift(float *out, const float *x, float c, int n) {
    for (int j = 0; j < n; j++) out[j] = x[j] + c;
}

static float largest(const float *x, int n) {
    float m = x[0];
    for (int j = 1; j < n; j++)
        if (x[j] > m) m = x[j];
    return m;
}

/* ----------------------------------------------------------- sections */

static const float SCORES[N] = {2.0f, 1.0f, 0.1f, -1.0f}; // the running example

static void definition(Chapter *ch) {
    if (!ch_section(ch, "1. From scores to weights")) return;
    ch_say(ch, "Attention needs weights: non-negative numbers that add up to 1, one "
               "per key, saying how much of each key's value to take. Softmax makes "
               "them from any row of scores x: exponentiate each score, then divide "
               "by the total.");
    ch_line(ch, "    softmax(x)_j = e^(x_j) / (e^(x_1) + e^(x_2) + … + e^(x_n))");
    ch_line(ch, "%s", "");

    float x[N], exps[N], p_textbook[N], p[N];
    for (int j = 0; j < N; j++) x[j] = SCORES[j];
    show_row(ch, "x", x);
    float sum = softmax_textbook(p_textbook, exps, x, N);
    show_row(ch, "exp_x", exps);
    ch_say(ch, "The exponentials are all positive and add up to %.4f. Dividing by that "
               "sum gives the weights. Here they come from lib's softmax():",
           ch_value(ch, "exp_sum", sum));
    // [softmax]
    softmax(p, x, 1, N); // one row of N scores
    // [softmax]
    show_row(ch, "p", p);

    // Adding up a row is a product with a column of ones.
    float ones[N] = {1, 1, 1, 1}, total;
    matmul(&total, p, ones, 1, N, 1);
    ch_say(ch, "The weights add up to %.4f and keep the order of the scores: the "
               "highest score gets the most weight (%.4f), but the others keep some. "
               "That is the \"soft\" in softmax; a hard max would give 1, 0, 0, 0.",
           ch_value(ch, "p_sum", total), p[0]);

    float x_plus[N], p_plus[N];
    shift(x_plus, x, 100.0f, N);
    softmax(p_plus, x_plus, 1, N);
    ch_say(ch, "Only the differences between scores matter. Adding 100 to every score "
               "multiplies every exponential by the same e^100, which cancels in the "
               "division:");
    show_row(ch, "p_shift_100", p_plus);
}

static void overflow(Chapter *ch) {
    if (!ch_section(ch, "2. What goes wrong: overflow")) return;
    float biggest = ch_value(ch, "float_max", FLT_MAX);
    float limit = ch_value(ch, "exp_overflow_at", logf(FLT_MAX));
    ch_say(ch, "The largest float32 is about %.1e, so expf(x) overflows to infinity "
               "for any x above %.2f. Attention scores have no upper bound, so nothing "
               "stops a score from passing that. Here is our example row moved up by "
               "1000, computed with the textbook formula (softmax_textbook() in this "
               "file, labelled WHAT GOES WRONG):", biggest, limit);

    float x_big[N], exps[N], p_naive[N];
    shift(x_big, SCORES, 1000.0f, N);
    show_row(ch, "x_big", x_big);
    softmax_textbook(p_naive, exps, x_big, N);
    show_row(ch, "exp_x_big_naive", exps);
    show_row(ch, "p_big_naive", p_naive);
    ch_say(ch, "Every exponential is inf, their sum is inf, and inf / inf is NaN (not a "
               "number). One NaN in attention spreads through every later layer.");

    float x_small[N];
    shift(x_small, SCORES, -1000.0f, N);
    show_row(ch, "x_small", x_small);
    softmax_textbook(p_naive, exps, x_small, N);
    show_row(ch, "exp_x_small_naive", exps);
    show_row(ch, "p_small_naive", p_naive);
    ch_say(ch, "Moved down by 1000 it fails the other way: every exponential "
               "underflows to 0, and 0 / 0 is NaN too.");

    ch_say(ch, "The fix follows from section 1: only differences matter, so subtract "
               "the row's largest score m before exponentiating. Then every exponent "
               "is at most 0, so no e^x exceeds 1, and the largest one is exactly "
               "e^0 = 1, so the sum is at least 1 and the division is safe. For x_big, "
               "m = %g and the exponents become:", largest(x_big, N));
    float x_minus_max[N];
    shift(x_minus_max, x_big, -largest(x_big, N), N);
    show_row(ch, "x_big_minus_max", x_minus_max);
    ch_say(ch, "lib's softmax() does exactly this, and gets the same weights as in "
               "section 1 from both rows:");
    float p_big[N], p_small[N];
    // [stable]
    softmax(p_big, x_big, 1, N);     // no overflow: the exponents are x - max ≤ 0
    softmax(p_small, x_small, 1, N); // no 0/0: the largest term is e^0 = 1
    // [stable]
    show_row(ch, "p_big", p_big);
    show_row(ch, "p_small", p_small);
}

static void masking(Chapter *ch) {
    if (!ch_section(ch, "3. Masking with -inf")) return;
    ch_say(ch, "Sometimes a query must not look at some keys. The clean way is to add "
               "a mask to the scores before softmax: 0 where looking is allowed, "
               "-inf where it is not. Since e^(-inf) = 0 exactly, a masked key gets "
               "exactly zero weight and the remaining weights still add up to 1. "
               "Here is a random %d × %d score matrix to mask:", TOKENS, TOKENS);

    Rng rng;
    rng_seed(&rng, SCORES_SEED);
    float scores[TOKENS * TOKENS], mask[TOKENS * TOKENS], masked[TOKENS * TOKENS];
    float p[TOKENS * TOKENS];
    rng_fill_normal(&rng, scores, TOKENS * TOKENS, 0.0f, 1.0f);
    show_matrix(ch, "scores", scores);

    ch_say(ch, "A padding mask. When sequences of different lengths share a batch, "
               "the short ones are padded with dummy tokens that nobody should attend "
               "to. Say token %d is padding: its column is masked in every row.",
           TOKENS - 1);
    // [mask]
    attention_mask_padding(mask, TOKENS, TOKENS - 1);       // keys 0…2 real, key 3 padding
    ops_add(masked, scores, mask, TOKENS * TOKENS);             // scores + mask
    softmax(p, masked, TOKENS, TOKENS);                     // row by row
    // [mask]
    show_matrix(ch, "padding_mask", mask);
    show_matrix(ch, "p_padded", p);
    float ones[TOKENS] = {1, 1, 1, 1}, sums[TOKENS];
    matmul(sums, p, ones, TOKENS, TOKENS, 1); // row sums: a product with a column of ones
    Tensor t = tensor_view(sums, 1, TOKENS);
    ch_show(ch, "row_sums_padded", &t);
    ch_say(ch, "Column %d is exactly 0 and every row still adds up to 1: the weight "
               "key %d would have had is shared among the real keys.",
           TOKENS - 1, TOKENS - 1);

    ch_say(ch, "A causal mask. A model that generates a sequence one token at a "
               "time (a language model) must not let token i see the tokens after it, "
               "so everything above the diagonal is masked:");
    // [causal]
    attention_mask_causal(mask, TOKENS); // 0 on and below the diagonal, -inf above
    ops_add(masked, scores, mask, TOKENS * TOKENS);
    softmax(p, masked, TOKENS, TOKENS);
    // [causal]
    show_matrix(ch, "causal_mask", mask);
    show_matrix(ch, "p_causal", p);
    ch_say(ch, "Token 0 can only look at itself, so it gives itself weight %.4f; the "
               "last token sees everything. A Vision Transformer uses neither mask: "
               "every patch of an image may look at every other patch. But both "
               "masks go through the same softmax, and lib's attention accepts them "
               "(Chapters 04 and 05).",
           p[0]);

    ch_say(ch, "Can a whole row be masked? Not by the padding mask: it hides keys, so "
               "even the padding token's own query, row %d above, still sees the real "
               "keys. But move the causal mask one step to the right, so that query i "
               "may only look at the keys before it (j < i), as when token i must be "
               "guessed from the tokens before it. Then query 0 has nothing to look "
               "at: every score in its row is -inf.", TOKENS - 1);
    float p_naive[TOKENS * TOKENS], exps[TOKENS];
    mask_earlier_only(mask);
    ops_add(masked, scores, mask, TOKENS * TOKENS);
    show_matrix(ch, "earlier_mask", mask);
    for (int i = 0; i < TOKENS; i++) // the textbook formula, row by row
        softmax_textbook(&p_naive[i * TOKENS], exps, &masked[i * TOKENS], TOKENS);
    ch_say(ch, "The textbook formula computes 0 / 0 for row 0 and gives NaN; the other "
               "rows are fine. PyTorch's torch.softmax gives NaN for row 0 too:");
    show_matrix(ch, "p_earlier_naive", p_naive);
    // [all_masked]
    softmax(p, masked, TOKENS, TOKENS); // row 0 is all -inf: lib gives it zeros
    // [all_masked]
    ch_say(ch, "lib's softmax() gives zeros instead: a query with nothing to look at "
               "takes nothing, and no NaN leaks into the layers after it. Its row sums "
               "to 0 while the others still sum to 1:");
    show_matrix(ch, "p_earlier", p);
    matmul(sums, p, ones, TOKENS, TOKENS, 1);
    t = tensor_view(sums, 1, TOKENS);
    ch_show(ch, "row_sums_earlier", &t);
}

static void temperature(Chapter *ch) {
    if (!ch_section(ch, "4. Temperature")) return;
    ch_say(ch, "Dividing the scores by a temperature T before softmax changes how "
               "decisive it is without changing the order. T < 1 stretches the gaps "
               "between scores, so the top one wins more clearly; T > 1 shrinks them "
               "and the weights flatten towards uniform (1/%d = %.2f each here).",
           N, ch_value(ch, "p_uniform", 1.0f / N));
    const struct {
        float T;
        const char *name; // pinned name of softmax(x / T)
    } temps[] = {{0.1f, "p_t0_1"}, {0.5f, "p_t0_5"}, {1.0f, "p_t1"}, {2.0f, "p_t2"},
                 {10.0f, "p_t10"}};
    ch_line(ch, "    x = [%.1f, %.1f, %.1f, %.1f]", SCORES[0], SCORES[1], SCORES[2], SCORES[3]);
    ch_line(ch, "%s", "");
    ch_line(ch, "        T      p_0      p_1      p_2      p_3");
    float first[2] = {0}; // p_0 at the coldest and hottest temperature, for the prose
    int n_temps = (int)(sizeof temps / sizeof temps[0]);
    for (int i = 0; i < n_temps; i++) {
        float xt[N], p[N];
        // [temperature]
        ops_scale(xt, SCORES, 1.0f / temps[i].T, N); // x / T
        softmax(p, xt, 1, N);
        // [temperature]
        Tensor t = tensor_view(p, 1, N);
        ch_pin(ch, temps[i].name, &t);
        ch_line(ch, "    %5.1f   %6.4f   %6.4f   %6.4f   %6.4f", temps[i].T, p[0], p[1], p[2],
                p[3]);
        if (i == 0) first[0] = p[0];
        if (i == n_temps - 1) first[1] = p[0];
    }
    ch_line(ch, "%s", "");
    ch_say(ch, "T = 1 is plain softmax. At T = %.1f the top score takes %.5f of the "
               "weight, almost a hard max; at T = %.0f it takes only %.4f, close to "
               "uniform.",
           temps[0].T, first[0], temps[n_temps - 1].T, first[1]);
    ch_say(ch, "Chapter 02's scaling is a temperature too: dividing the scores by √Dh "
               "is softmax at T = √Dh, chosen so that the spread of the scores no "
               "longer grows with the head width Dh (variance 1 when the entries of "
               "the queries and keys have variance 1).");
}

static void whats_next(Chapter *ch) {
    if (!ch_section(ch, "What's next")) return;
    ch_say(ch, "We now have every piece of one attention head: scores Q·Kᵀ "
               "(Chapter 01), divided by √Dh (Chapter 02), masked and turned into "
               "weights by softmax (this chapter). Chapter 04 puts them together and "
               "uses the weights to mix the values V: softmax(Q·Kᵀ/√Dh + mask)·V.");
}

void chapter03_run(Chapter *ch) {
    ch_title(ch, "03", "Softmax");
    ch_say(ch, "Scores can be any size and any sign. Attention needs weights that are "
               "positive and add up to 1. Softmax is the bridge, and it has to be "
               "built carefully: the obvious formula breaks in float32.");
    definition(ch);
    overflow(ch);
    masking(ch);
    temperature(ch);
    whats_next(ch);
}

#ifndef CHAPTER_NO_MAIN
int main(int argc, char **argv) {
    return chapter_main(argc, argv, chapter03_run,
                        "Chapter 03: softmax, its overflow trap, masking and temperature.");
}
#endif
