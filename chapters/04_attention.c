/**
 * @file 04_attention.c
 * @brief Chapter 04 · Attention: one head, start to finish.
 *
 * Chapters 01–03 built the pieces: scores from dot products, scaling by
 * 1/√Dh, softmax. Put together, with three projections of the same tokens in
 * front (self-attention) and a weighted sum behind, they are one attention head:
 * \f[ Q = X W_q^\top,\quad K = X W_k^\top,\quad V = X W_v^\top,\qquad
 *     \mathrm{Attention}(Q,K,V) =
 *         \mathrm{softmax}\!\left(\frac{QK^\top}{\sqrt{D_h}} + \mathrm{mask}\right) V . \f]
 * This chapter runs it on five tokens of width 8 with a head of width 4, so
 * every matrix fits on the screen: the projections, the attention matrix, the
 * weighted sum of the values, what a wrong scale (timm's `qk_scale`) does to
 * the attention matrix, and a padding and a causal mask at work.
 *
 * Every number printed is pinned by name and checked against PyTorch by
 * tests/test_ch04_attention.c.
 *
 * Run: `build/chapters/04_attention`
 */
#include <math.h>

#include "attention/attention.h"
#include "teach/chapter.h"
#include "chapters.h"
#include "ops/ops.h"
#include "base/rng.h"
#include "base/tensor.h"

enum {
    N = 5,  // tokens
    D = 8,  // width of each token
    DH = 4, // width of the head: queries, keys and values have DH entries
};
static const uint64_t SEED = 4;        // X, then W_q, W_k, W_v, from one stream
static const float WEIGHT_STD = 0.5f;  // spread of the projection weights

// Section 4's scales: dividing by Dh, the default 1/√Dh, and no scaling at all.
static const struct {
    float scale;
    const char *label;
} SCALES[] = {{1.0f / DH, "1/Dh"}, {0.5f, "1/√Dh"}, {1.0f, "1"}};
enum { N_SCALES = sizeof SCALES / sizeof SCALES[0] };

/* ------------------------------------------------------------ helpers */

// Pin and print a rows × cols matrix.
static void show_matrix(Chapter *ch, const char *name, float *m, int rows, int cols) {
    Tensor t = tensor_view(m, 2, rows, cols);
    ch_show(ch, name, &t);
}

// The largest weight of each row of an (N, N) attention matrix.
static void row_max(float *out, const float *probs) {
    for (int i = 0; i < N; i++) {
        int j;
        ops_top_k(&j, 1, &probs[i * N], N);
        out[i] = probs[i * N + j];
    }
}

/* ----------------------------------------------------------- the head */

// Everything one head computes, kept for the later sections.
typedef struct {
    float x[N * D];                         // (N, D) the tokens
    float w_q[DH * D], w_k[DH * D], w_v[DH * D]; // (DH, D) each, nn.Linear layout
    float q[N * DH], k[N * DH], v[N * DH];  // (N, DH)
    float scores[N * N];                    // (N, N) Q·Kᵀ
    float scaled[N * N];                    // (N, N) Q·Kᵀ/√DH
    float probs[N * N];                     // (N, N) softmax, row by row
    float out[N * DH];                      // (N, DH) probs·V
} Head;

static void projections(Chapter *ch, Head *h) {
    if (!ch_section(ch, "1. Three projections of the same tokens: self-attention")) return;
    ch_say(ch, "Attention lets every token gather information from the others. Here "
               "are %d tokens, each a vector of width %d, one per row of X (random "
               "numbers standing in for the embedded image patches of later "
               "chapters):", N, D);
    Rng rng;
    rng_seed(&rng, SEED);
    rng_fill_normal(&rng, h->x, N * D, 0.0f, 1.0f);
    rng_fill_normal(&rng, h->w_q, DH * D, 0.0f, WEIGHT_STD);
    rng_fill_normal(&rng, h->w_k, DH * D, 0.0f, WEIGHT_STD);
    rng_fill_normal(&rng, h->w_v, DH * D, 0.0f, WEIGHT_STD);
    show_matrix(ch, "X", h->x, N, D);

    ch_say(ch, "Each token plays three roles, and a learned matrix prepares it for "
               "each. Its query says what it is looking for, its key what it offers "
               "to others' queries, its value what it hands over when chosen. Three "
               "linear layers without bias, each (%d, %d), turn the width %d into the "
               "head width %d:", DH, D, D, DH);
    ch_line(ch, "    Q = X·W_qᵀ    K = X·W_kᵀ    V = X·W_vᵀ      (%d,%d)·(%d,%d) → (%d,%d)", N, D,
            D, DH, N, DH);
    ch_line(ch, "%s", "");
    // [projections]
    ops_linear(h->q, h->x, h->w_q, NULL, N, D, DH); // q is (N, DH)
    ops_linear(h->k, h->x, h->w_k, NULL, N, D, DH);
    ops_linear(h->v, h->x, h->w_v, NULL, N, D, DH);
    // [projections]
    show_matrix(ch, "Q", h->q, N, DH);
    show_matrix(ch, "K", h->k, N, DH);
    show_matrix(ch, "V", h->v, N, DH);
    ch_say(ch, "Row i of Q, K and V all come from token i, but through different "
               "weights, so token i's query need not resemble its own key. Because "
               "the queries, the keys and the values are all made from the same "
               "tokens X, this is self-attention: the tokens attend to each other. "
               "(Cross-attention takes its keys and values from another sequence; a "
               "Vision Transformer has none.)");
}

static void attention_matrix(Chapter *ch, Head *h) {
    if (!ch_section(ch, "2. Scores, scaling, softmax: the attention matrix")) return;
    ch_say(ch, "Every query is compared with every key (Chapter 01), the scores are "
               "divided by √Dh (Chapter 02) and each row goes through softmax "
               "(Chapter 03). lib/attention/attention.h has one function per step, for G "
               "independent heads (here one sequence, one head). attention_scores() "
               "is lib's matmul_bt(), Q times K transposed: timm writes "
               "q @ k.transpose(-2, -1), MindSpore ops.BatchMatMul(transpose_b=True)(q, k).");
    // [steps]
    attention_scores(h->scores, h->q, h->k, 1, N, DH);              // Q·Kᵀ, (N, N)
    attention_scale_mask(h->scaled, h->scores, NULL, 1, 1, N, DH);  // × 1/√Dh, no mask
    softmax(h->probs, h->scaled, N, N);                             // each row sums to 1
    // [steps]
    show_matrix(ch, "scores", h->scores, N, N);
    ch_say(ch, "With Dh = %d the scale is 1/√%d = %g, so the scaled scores are half "
               "the raw ones:", DH, DH, ch_value(ch, "scale", attention_scale(NULL, DH)));
    show_matrix(ch, "scaled", h->scaled, N, N);
    ch_say(ch, "Softmax turns each row into weights. This is the attention matrix: "
               "row i says how much query i takes from each token.");
    show_matrix(ch, "probs", h->probs, N, N);

    float ones[N] = {1, 1, 1, 1, 1}, sums[N];
    ops_linear(sums, h->probs, ones, NULL, N, N, 1); // row sums: a product with a row of ones
    Tensor t = tensor_view(sums, 1, N);
    ch_show(ch, "row_sums", &t);

    float best_key[N], best_weight[N];
    for (int i = 0; i < N; i++) {
        int j;
        ops_top_k(&j, 1, &h->probs[i * N], N); // the largest, the first on ties
        best_key[i] = (float)j;
        best_weight[i] = h->probs[i * N + j];
    }
    Tensor tk = tensor_view(best_key, 1, N), tw = tensor_view(best_weight, 1, N);
    ch_pin(ch, "best_key", &tk);
    ch_pin(ch, "best_weight", &tw);
    ch_say(ch, "Reading the rows:");
    for (int i = 0; i < N; i++)
        ch_line(ch, "    token %d takes most from token %d (weight %.4f)", i, (int)best_key[i],
                best_weight[i]);
    ch_line(ch, "%s", "");
    ch_say(ch, "Nothing forces a token to look at itself, and the matrix is not "
               "symmetric: token 0 gives token 1 the weight %.4f, token 1 gives token "
               "0 the weight %.4f.", h->probs[0 * N + 1], h->probs[1 * N + 0]);
}

static void weighted_sum(Chapter *ch, Head *h) {
    if (!ch_section(ch, "3. The weighted sum of the values")) return;
    ch_say(ch, "The output of token i is the average of all value rows, weighted by "
               "row i of the attention matrix: out = probs·V, (%d,%d)·(%d,%d) → "
               "(%d,%d).", N, N, N, DH, N, DH);
    // [context]
    attention_context(h->out, h->probs, h->v, 1, N, DH); // probs·V, (N, DH)
    // [context]
    show_matrix(ch, "out", h->out, N, DH);

    // Row 0 again, the long way: p_00·v_0 + p_01·v_1 + … with ops_scale() and ops_add().
    // [by_hand]
    float by_hand[DH] = {0}, term[DH];
    for (int j = 0; j < N; j++) {
        ops_scale(term, &h->v[j * DH], h->probs[0 * N + j], DH);
        ops_add(by_hand, by_hand, term, DH);
    }
    // [by_hand]
    ch_say(ch, "Row 0 the long way, adding up p_0j · v_j for j = 0…%d with ops_scale() "
               "and ops_add():", N - 1);
    ch_line(ch, "    out_0 = %.4f·v_0 + %.4f·v_1 + %.4f·v_2 + %.4f·v_3 + %.4f·v_4",
            h->probs[0], h->probs[1], h->probs[2], h->probs[3], h->probs[4]);
    ch_line(ch, "%s", "");
    Tensor t = tensor_view(by_hand, 1, DH);
    ch_show(ch, "out_0_by_hand", &t);
    ch_say(ch, "Because the weights are positive and add up to 1, each output is a "
               "blend that lies between the value rows: a row of weights that was "
               "all on one token would copy that token's value exactly, and an even "
               "spread would give the plain average. This is how tokens exchange "
               "information: token i now carries a mixture of what the tokens it "
               "attended to offered.");

    Head again;
    // [one_call]
    attention(again.out, again.probs, h->q, h->k, h->v, NULL, N, DH); // all steps at once
    // [one_call]
    float d_out = ch_max_diff(ch, "one_call_out_max_diff", again.out, h->out, N * DH);
    float d_probs = ch_max_diff(ch, "one_call_probs_max_diff", again.probs, h->probs, N * N);
    ch_say(ch, "lib's attention() does sections 2 and 3 in one call. Its output and "
               "its attention matrix differ from the step-by-step ones by %g and %g: "
               "it calls the same functions in the same order.", d_out, d_probs);
}

static void the_scale(Chapter *ch, Head *h) {
    if (!ch_section(ch, "4. The scale is a parameter")) return;
    ch_say(ch, "timm's Attention computes its scale once, self.scale = qk_scale or "
               "head_dim ** -0.5: a model may pass its own qk_scale, and 1/√Dh is "
               "only the default. lib's attention takes the same option, "
               "AttentionOptions.scale (0, or no options at all, means 1/√Dh). What "
               "does a wrong scale do to the attention matrix? Here is the same head "
               "with the scale 1, as if the division had been forgotten:");
    float probs[N * N], out[N * DH];
    // [scale]
    AttentionOptions forgot = {.scale = 1.0f}; // timm: Attention(..., qk_scale=1)
    attention(out, probs, h->q, h->k, h->v, &forgot, N, DH);
    // [scale]
    show_matrix(ch, "probs_scale_1", probs, N, N);

    // every row's largest weight and entropy at each scale
    float top[N_SCALES * N], ent[N_SCALES * N], mean_ent[N_SCALES];
    // [by_scale]
    for (int s = 0; s < N_SCALES; s++) {
        AttentionOptions opt = {.scale = SCALES[s].scale};
        attention(out, probs, h->q, h->k, h->v, &opt, N, DH);
        row_max(&top[s * N], probs);
        attention_entropy(&ent[s * N], probs, N, N);
        double sum = 0;
        for (int i = 0; i < N; i++) sum += ent[s * N + i];
        mean_ent[s] = (float)(sum / N);
    }
    // [by_scale]
    Tensor tt = tensor_view(top, 2, N_SCALES, N), te = tensor_view(ent, 2, N_SCALES, N);
    Tensor tm = tensor_view(mean_ent, 1, N_SCALES);
    ch_pin(ch, "row_max_by_scale", &tt);
    ch_pin(ch, "row_entropy_by_scale", &te);
    ch_pin(ch, "mean_entropy_by_scale", &tm);
    float flat = ch_value(ch, "entropy_uniform", logf((float)N));
    ch_say(ch, "Row by row, the largest weight and the entropy (Chapter 02: 0 when "
               "one key takes everything, ln %d = %.4f for a flat row) at three "
               "scales: %s = %g (dividing by Dh instead of √Dh), %s = %g (the "
               "default) and %s:", N, flat, SCALES[0].label, SCALES[0].scale,
           SCALES[1].label, SCALES[1].scale, SCALES[2].label);
    ch_line(ch, "                scale %-5s         scale %-5s         scale %s",
            SCALES[0].label, SCALES[1].label, SCALES[2].label);
    ch_line(ch, "    token   max weight  entropy   max weight  entropy   max weight  entropy");
    for (int i = 0; i < N; i++)
        ch_line(ch, "    %5d   %10.4f  %7.4f   %10.4f  %7.4f   %10.4f  %7.4f", i, top[i],
                ent[i], top[N + i], ent[N + i], top[2 * N + i], ent[2 * N + i]);
    ch_line(ch, "    mean                %7.4f               %7.4f               %7.4f",
            mean_ent[0], mean_ent[1], mean_ent[2]);
    ch_line(ch, "%s", "");
    int least = 0; // the token whose favourite key gets the least weight at 1/√Dh
    for (int i = 1; i < N; i++)
        if (top[N + i] < top[N + least]) least = i;
    ch_say(ch, "A larger scale stretches every row's differences, so every row gets "
               "more peaked: its largest weight grows and its entropy falls, from a "
               "mean of %.4f at scale %s to %.4f at %s and %.4f at %s. Token %d, "
               "whose favourite key gets the least weight at the default scale, puts "
               "%.4f on it there and %.4f without the scale. Here the wrong scales "
               "are off by only a factor of 2, because Dh = %d; in ViT-Base (Dh = "
               "64) forgetting the scale multiplies every score by 8, softmax at a "
               "temperature of 1/8 (Chapter 03), and Chapter 02's table shows how "
               "much more peaked unscaled rows of that width are.",
           mean_ent[0], SCALES[0].label, mean_ent[1], SCALES[1].label, mean_ent[2],
           SCALES[2].label, least, top[N + least], top[2 * N + least], DH);
}

static void masks(Chapter *ch, Head *h) {
    if (!ch_section(ch, "5. Masks at work")) return;
    ch_say(ch, "A mask is added to the scaled scores before softmax: 0 where a "
               "query may look, -inf where it may not (Chapter 03). PyTorch code "
               "often writes the same thing as scores.masked_fill(mask == 0, "
               "float(\"-inf\")), with a mask of ones (look) and zeros (do not): "
               "filling a score with -inf and adding -inf to it give the same "
               "-inf. Suppose the last token, %d, is padding that only fills up a "
               "batch. attention_mask_padding() hides its key from every query:", N - 1);
    float mask[N * N], probs[N * N], out[N * DH];
    // [padding]
    attention_mask_padding(mask, N, N - 1); // tokens 0…3 are real, token 4 is padding
    AttentionOptions padded = {.mask = mask};
    attention(out, probs, h->q, h->k, h->v, &padded, N, DH);
    // [padding]
    show_matrix(ch, "padding_mask", mask, N, N);
    show_matrix(ch, "probs_padding", probs, N, N);
    show_matrix(ch, "out_padding", out, N, DH);
    ch_say(ch, "Column %d is exactly 0, so no output contains any of v_%d: the "
               "padding cannot leak into the real tokens. Row %d (the padding "
               "token's own output) is still computed; whoever reads the batch "
               "ignores it. This (N, N) mask is shared by every sequence of a batch. "
               "Sequences of different lengths need one row per sequence instead, a "
               "(B, N) key-padding mask (AttentionOptions.key_padding_mask): Chapter "
               "05 runs a batch of two.",
           N - 1, N - 1, N - 1);

    ch_say(ch, "A causal mask lets token i see only tokens 0…i, as in a language "
               "model that must not read ahead:");
    // [causal]
    attention_mask_causal(mask, N); // -inf above the diagonal
    AttentionOptions causal = {.mask = mask};
    attention(out, probs, h->q, h->k, h->v, &causal, N, DH);
    // [causal]
    show_matrix(ch, "causal_mask", mask, N, N);
    show_matrix(ch, "probs_causal", probs, N, N);
    show_matrix(ch, "out_causal", out, N, DH);
    float d_first = ch_max_diff(ch, "causal_out_0_minus_v_0", out, h->v, DH);
    float d_last = ch_max_diff(ch, "causal_out_last_minus_unmasked", &out[(N - 1) * DH],
                               &h->out[(N - 1) * DH], DH);
    ch_say(ch, "Two checks. Token 0 sees only itself, so its weight is 1 and its "
               "output is its own value (largest difference from v_0: %g). The last "
               "token sees everything, so its output is the unmasked one from "
               "section 3 (largest difference: %g).", d_first, d_last);
    ch_say(ch, "A Vision Transformer uses no mask: every patch may look at every "
               "other patch, in both directions.");
}

static void whats_next(Chapter *ch) {
    if (!ch_section(ch, "What's next")) return;
    ch_say(ch, "One head with Dh = %d can only look for one kind of relationship at "
               "a time. ViT-Base runs 12 heads of width 64 side by side on tokens of "
               "width 768 and joins their outputs. Chapter 05 builds that multi-head "
               "attention, exactly as timm computes it.", DH);
}

void chapter04_run(Chapter *ch) {
    ch_title(ch, "04", "Attention");
    ch_say(ch, "Chapters 01–03 built the parts: dot-product scores, scaling, softmax. "
               "This chapter assembles them into one attention head and follows %d "
               "tokens through it, one matrix at a time:", N);
    ch_line(ch, "    out = softmax(Q·Kᵀ / √Dh + mask) · V");
    ch_line(ch, "%s", "");
    Head h;
    projections(ch, &h);
    attention_matrix(ch, &h);
    weighted_sum(ch, &h);
    the_scale(ch, &h);
    masks(ch, &h);
    whats_next(ch);
}

#ifndef CHAPTER_NO_MAIN
int main(int argc, char **argv) {
    return chapter_main(argc, argv, chapter04_run,
                        "Chapter 04: one attention head, its attention matrix, its scale, "
                        "and masks.");
}
#endif
