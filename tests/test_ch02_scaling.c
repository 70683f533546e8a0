/**
 * @file test_ch02_scaling.c
 * @brief Chapter 02 against PyTorch, and its claims: Var(q·k) ≈ Dh and
 *        Var(q·k/√Dh) ≈ 1 for unit-variance entries, unscaled softmax saturates
 *        at large Dh, and a fresh ViT's scaled scores have the same spread
 *        (about D·0.02² ≈ 0.31, not 1) at every head width.
 *
 * The probes at the end are exercise 02's diagnosis: chapter 02's scaling, and
 * the masks of chapters 03–05, as attention_scale_mask() does them (lib's, or
 * a student's at link time). Each builds scores whose scaled values are exact
 * in float and derived by hand (√16 = 4), and when the result is wrong
 * compares it with what each likely mistake gives (no scale, Dh for √Dh, the
 * chosen scale ignored, a mask left out or on the wrong axis), naming the one
 * that matches with check_hint().
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../chapters/chapters.h"
#include "attention/attention.h"
#include "check.h"
#include "gemm/gemm.h"
#include "ops/ops.h"
#include "base/rng.h"
#include "base/trace.h"

static const int WIDTHS[] = {4, 16, 64, 256, 768}; // the head widths Dh the chapter measures
enum { N_WIDTHS = sizeof WIDTHS / sizeof WIDTHS[0] };
static const int FRESH_WIDTHS[] = {16, 64, 256};   // section 4's head widths

// The chapter draws 4.5M random numbers, so the claim tests share one
// recorded run, made on first use and freed at exit.
static TraceRecorder recording;
static bool recorded;

static void release_recording(void) { trace_recorder_free(&recording); }

static const TraceRecorder *chapter_values(void) {
    if (!recorded) {
        Chapter ch = {.out = NULL, .pin = trace_record, .pin_user = &recording};
        chapter02_run(&ch);
        recorded = true;
        atexit(release_recording);
    }
    return &recording;
}

// The recorded scalar called `name`; NaN (and a failed assertion) when missing.
static float value_of(const char *name) {
    const Tensor *t = trace_find(chapter_values(), name);
    if (!t) {
        fprintf(stderr, "\n    %s was not recorded\n", name);
        CU_FAIL("missing value");
        return NAN;
    }
    return t->data[0];
}

// The recorded scalar named printf-style from `fmt` and the width Dh.
static float value_at(const char *fmt, int dh) {
    char name[64];
    snprintf(name, sizeof name, fmt, dh);
    return value_of(name);
}

static void test_chapter_matches_pytorch(void) {
    check_chapter_against_golden(chapter02_run, "ch02_scaling.safetensors");
}

static void test_variance_grows_like_dh(void) {
    for (int i = 0; i < N_WIDTHS; i++) {
        int dh = WIDTHS[i];
        float ratio = value_at("var_dh%d", dh) / (float)dh;
        CU_ASSERT(ratio > 0.9f && ratio < 1.1f);
        // the mean stays near 0 at every width (a few standard errors of √Dh/1024)
        CU_ASSERT(fabsf(value_at("mean_dh%d", dh)) < 0.05f * sqrtf((float)dh));
    }
    // 192 times wider, about 192 times the variance
    float growth = value_at("var_dh%d", 768) / value_at("var_dh%d", 4);
    CU_ASSERT(growth > 150.0f && growth < 240.0f);
}

static void test_scaling_brings_variance_to_one(void) {
    for (int i = 0; i < N_WIDTHS; i++) {
        int dh = WIDTHS[i];
        float var = value_at("var_dh%d", dh), var_scaled = value_at("var_scaled_dh%d", dh);
        CU_ASSERT(var_scaled > 0.9f && var_scaled < 1.1f);
        // dividing by √Dh divides the variance by exactly Dh
        CU_ASSERT_DOUBLE_EQUAL(var_scaled * dh, var, 1e-4 * var);
    }
    float var_over_dh = value_at("var_over_dh_dh%d", 768);
    CU_ASSERT(var_over_dh < 0.01f); // dividing by Dh instead flattens everything
}

static void test_unscaled_softmax_saturates(void) {
    float uniform = logf(8.0f); // entropy of 8 equal weights
    CU_ASSERT(value_at("max_prob_raw_dh%d", 768) > 0.99f);
    CU_ASSERT(value_at("entropy_raw_dh%d", 768) < 0.01f);
    // scaled, the same row stays spread: no key above one half, entropy above half of ln 8
    CU_ASSERT(value_at("max_prob_scaled_dh%d", 768) < 0.5f);
    CU_ASSERT(value_at("entropy_scaled_dh%d", 768) > 0.5f * uniform);
    // unscaled, wider is more peaked
    for (int i = 1; i < N_WIDTHS; i++)
        CU_ASSERT(value_at("entropy_raw_dh%d", WIDTHS[i]) <
                  value_at("entropy_raw_dh%d", WIDTHS[i - 1]));
}

static void test_fresh_scores_keep_one_spread_that_is_not_one(void) {
    // section 4: Var(q_i) ≈ D·0.02², the scaled std ≈ Var(q_i) at every Dh, far below 1
    float predicted = value_of("fresh_predicted_var");
    CU_ASSERT_DOUBLE_EQUAL(predicted, 768 * 0.02 * 0.02, 1e-6);
    for (int i = 0; i < 3; i++) {
        int dh = FRESH_WIDTHS[i];
        CU_ASSERT(fabsf(value_at("fresh_var_q_dh%d", dh) / predicted - 1) < 0.05f);
        CU_ASSERT(fabsf(value_at("fresh_var_k_dh%d", dh) / predicted - 1) < 0.05f);
        float std_scaled = value_at("fresh_std_scaled_dh%d", dh);
        CU_ASSERT(fabsf(std_scaled / predicted - 1) < 0.05f);
        CU_ASSERT(std_scaled < 0.5f); // not the unit variance of section 1
        // unscaled, the variance still grows like Dh
        CU_ASSERT(fabsf(value_at("fresh_var_scores_dh%d", dh) / (dh * predicted * predicted) - 1) <
                  0.1f);
        // nearly uniform rows: the top weight is within a factor 3 of 1/197
        float top = value_at("fresh_mean_max_prob_dh%d", dh);
        CU_ASSERT(top > 1.0f / 197 && top < 3.0f / 197);
    }
}

static void test_softmax_of_scaled_row_is_a_distribution(void) {
    // the chapter's scaled row at Dh = 768 through softmax's formula, here in double
    // (not lib's softmax(): chapter 03's, which a mistake there must not fail here):
    // every weight strictly between 0 and 1, and the largest the one the chapter printed
    const Tensor *row = trace_find(chapter_values(), "row_scaled_dh768");
    CU_ASSERT_PTR_NOT_NULL_FATAL(row);
    CU_ASSERT_EQUAL_FATAL(row->numel, 8u);
    double m = row->data[0], e[8], sum = 0, top = 0;
    for (int j = 1; j < 8; j++) m = fmax(m, row->data[j]);
    for (int j = 0; j < 8; j++) {
        e[j] = exp(row->data[j] - m);
        sum += e[j];
    }
    for (int j = 0; j < 8; j++) {
        CU_ASSERT(e[j] / sum > 0.0 && e[j] / sum < 1.0);
        top = fmax(top, e[j] / sum);
    }
    CU_ASSERT_DOUBLE_EQUAL(value_at("max_prob_scaled_dh%d", 768), top, 1e-6);
}

/* -------------------------------------------------------------- the probes */

// Two sequences, two heads, three tokens, Dh = 16: s = 1/√16 = 0.25 and every score
// below is a half-integer, so s·score, score/Dh and score·√Dh are all exact in float.
enum { PB = 2, PH = 2, PN = 3, PDH = 16, PNN = PN * PN, PSIZE = PB * PH * PNN };
static const float PSCALE = 0.25f; // 1/√PDH

// The probes' scores (B, H, N, N): -17.5, -16.5, …, 17.5, none zero, all different.
static void probe_scores(float *scores) {
    for (int i = 0; i < PSIZE; i++) scores[i] = (float)i - 17.5f;
}

// NaN everywhere: what the function does not write stays NaN.
static void fill_nan(float *x, int n) {
    for (int i = 0; i < n; i++) x[i] = NAN;
}

// out = s·scores + mask[i][j] + pad[b][j], the formula, by hand (a NULL mask adds nothing).
static void probe_expected(float *out, const float *scores, float s, const float *mask,
                           const float *pad) {
    for (int b = 0; b < PB; b++)
        for (int h = 0; h < PH; h++)
            for (int i = 0; i < PN; i++)
                for (int j = 0; j < PN; j++) {
                    int at = ((b * PH + h) * PN + i) * PN + j;
                    out[at] = s * scores[at] + (mask ? mask[i * PN + j] : 0.0f) +
                              (pad ? pad[b * PN + j] : 0.0f);
                }
}


static bool probe_near(const float *got, const float *candidate) {
    Tensor g = tensor_view((float *)got, 4, PB, PH, PN, PN);
    Tensor c = tensor_view((float *)candidate, 4, PB, PH, PN, PN);
    return tensor_near(&g, &c, 1e-6f, 1e-6f);
}

// Compare @p got with @p want; on a mismatch print the report under @p label and return false.
static bool probe_check(const float *got, const float *want, const char *label) {
    Tensor g = tensor_view((float *)got, 4, PB, PH, PN, PN);
    Tensor w = tensor_view((float *)want, 4, PB, PH, PN, PN);
    return assert_tensor_close(&g, &w, 1e-6f, 1e-6f, label);
}

static const char INT_DIVISION_HINT[] =
    "every scaled score is 0: the scale came out 0 (an integer division? 1 / 4 is 0 in C, "
    "1.0f / sqrtf(Dh) is 0.25)";

// The causal (N, N) mask in a buffer of B·H·N·N floats, NaN after its N·N: code that
// reads past the mask (indexing it by head) reads NaN, the same every run, never
// whatever the stack held beside a mask of N·N.
static void padded_causal(float mask[PSIZE]) {
    fill_nan(mask, PSIZE);
    attention_mask_causal(mask, PN); // query i sees keys 0…i
}

// attention_scale_mask() on the probe's scores with @p opt (NULL or a causal mask only):
// is the result exactly what a scale of 0 gives (0, plus the mask)?
static bool gives_scale_zero(bool with_mask) {
    float scores[PSIZE], got[PSIZE], want[PSIZE], causal[PSIZE];
    probe_scores(scores);
    padded_causal(causal);
    const AttentionOptions mask_only = {.mask = causal};
    fill_nan(got, PSIZE);
    attention_scale_mask(got, scores, with_mask ? &mask_only : NULL, PB, PH, PN, PDH);
    probe_expected(want, scores, 0.0f, with_mask ? causal : NULL, NULL);
    return probe_near(got, want);
}

// A scale of 0 whatever opt says, the mask still added: the scale itself computes to 0
// (1 / (int)sqrtf(Dh)), not the placeholder (which adds no mask either) nor a
// misread opt->scale (which a NULL opt would not reach).
static bool scale_is_zero_everywhere(void) { return gives_scale_zero(false) && gives_scale_zero(true); }

// Does attention_scale_mask() write every value when no mask is given (opt NULL)? A
// probe's NaN that a mask brought in is the mask's misreading only when it does: NaN
// left in blocks that are never written at all is the loops' fault.
static bool writes_every_block(void) {
    float scores[PSIZE], got[PSIZE];
    probe_scores(scores);
    fill_nan(got, PSIZE);
    attention_scale_mask(got, scores, NULL, PB, PH, PN, PDH);
    for (int i = 0; i < PSIZE; i++)
        if (isnan(got[i])) return false;
    return true;
}

// Did attention_scale_mask() write nothing, or only part? Hints and true when so.
static bool diagnose_unwritten(const float *got) {
    int nan = 0, zero = 0, blocks_nan = 0;
    char which[64] = ""; // the blocks never written, "(b, h)" each
    for (int g = 0; g < PB * PH; g++) {
        int in_block = 0;
        for (int ij = 0; ij < PNN; ij++) in_block += isnan(got[g * PNN + ij]) != 0;
        nan += in_block;
        if (in_block == PNN) {
            size_t at = strlen(which);
            snprintf(which + at, sizeof which - at, "%s(%d, %d)", blocks_nan ? ", " : "",
                     g / PH, g % PH);
            blocks_nan++;
        }
    }
    for (int i = 0; i < PSIZE; i++) zero += got[i] == 0.0f;
    if (nan && nan < PSIZE && writes_every_block()) return false; // NaN a mask brought in
    if (zero == PSIZE && scale_is_zero_everywhere()) {
        check_hint("%s", INT_DIVISION_HINT);
        return true;
    }
    if (nan == PSIZE || zero == PSIZE) {
        check_hint("attention_scale_mask() %s: is it still the exercise's placeholder?",
                   nan == PSIZE ? "did not write `scaled` at all" : "wrote only zeros");
        return true;
    }
    if (blocks_nan) {
        check_hint("%d of the B*H = %d (N, N) blocks of `scaled` were never written, (b, h) = "
                   "%s: every sequence b and head h has its own, scaled[((b*H + h)*N + i)*N + j]",
                   blocks_nan, PB * PH, which);
        return true;
    }
    if (nan) {
        check_hint("%d of the %d values of `scaled` were never written: loop over every b < B, "
                   "h < H, query i < N and key j < N", nan, PSIZE);
        return true;
    }
    return false;
}

static const char NO_MASK_HINT[] =
    "the (N, N) mask was not added: scaled[b][h][i][j] = s*scores[b][h][i][j] + "
    "opt->mask[i][j] (0 keeps a score, -inf hides it)";
static const char NO_PAD_HINT[] =
    "the key-padding mask was not added: key_padding_mask[b][j] hides key j of sequence b "
    "from every head and query, scaled[b][h][i][j] += key_padding_mask[b*N + j]";

// The scaled scores are wrong: the scale (something else than s), or a mask left out?
static void diagnose_scale(const float *got, const float *scores, float s, const float *mask,
                           const float *pad, bool opt_given) {
    if (diagnose_unwritten(got)) return;
    const struct {
        float scale;
        const char *hint;
    } wrong[] = {
        {1.0f, "did you divide by √Dh? The scaled scores equal the raw scores, exactly √Dh = 4 "
               "times too large: multiply each by s = 1/√Dh (attention_scale(opt, Dh))"},
        {1.0f / PDH, "√Dh, not Dh: the scores were divided by Dh = 16, so they are √Dh = 4 "
                     "times too small; the scale is 1/√Dh = 0.25"},
        {4.0f, "the scores were multiplied by √Dh = 4 instead of divided by it: the scale is "
               "1/√Dh = 0.25"},
        {1.0f / PN, "the scores were divided by N = 3, the number of tokens: the scale comes "
                    "from the head width, 1/√Dh"},
        {0.0f, opt_given && !scale_is_zero_everywhere()
                   ? "every scaled score is 0 (plus the masks): the scale came out 0; "
                     "opt->scale = 0 means the default 1/√Dh, not a scale of 0 "
                     "(attention_scale(opt, Dh) returns the right one)"
                   : INT_DIVISION_HINT},
    };
    float cand[PSIZE];
    for (size_t w = 0; w < sizeof wrong / sizeof wrong[0]; w++) {
        if (wrong[w].scale == s) continue;
        probe_expected(cand, scores, wrong[w].scale, mask, pad);
        if (probe_near(got, cand)) {
            check_hint("%s", wrong[w].hint);
            return;
        }
    }
    // the scale right, a mask left out
    if (mask) {
        probe_expected(cand, scores, s, NULL, pad);
        if (probe_near(got, cand)) {
            check_hint("%s", NO_MASK_HINT);
            return;
        }
    }
    if (pad) {
        probe_expected(cand, scores, s, mask, NULL);
        if (probe_near(got, cand)) {
            check_hint("%s", NO_PAD_HINT);
            return;
        }
    }
    // one factor for all: the scale used
    double ratio = (double)got[0] / ((double)s * scores[0]);
    probe_expected(cand, scores, (float)(ratio * s), mask, pad);
    if (isfinite(ratio) && fabs(ratio - 1) > 1e-4 && probe_near(got, cand))
        check_hint("every scaled score is %.6g times what it should be: the scale used was "
                   "%.6g, not %.6g", ratio, ratio * s, (double)s);
}

static void test_probe_scores_are_scaled_by_one_over_sqrt_dh(void) {
    float scores[PSIZE], scaled[PSIZE], want[PSIZE];
    probe_scores(scores);
    probe_expected(want, scores, PSCALE, NULL, NULL);
    fill_nan(scaled, PSIZE);
    attention_scale_mask(scaled, scores, NULL, PB, PH, PN, PDH); // opt NULL: 1/√Dh, no mask
    if (!probe_check(scaled, want, "scaled = scores / sqrt(16), opt NULL"))
        diagnose_scale(scaled, scores, PSCALE, NULL, NULL, false);
    // in place, as mha_forward() and attention() call it
    float inplace[PSIZE];
    memcpy(inplace, scores, sizeof inplace);
    attention_scale_mask(inplace, inplace, NULL, PB, PH, PN, PDH);
    if (probe_near(scaled, want) && !probe_check(inplace, want, "the same in place"))
        check_hint("right into a separate buffer, wrong in place (scaled == scores): read each "
                   "score before writing its scaled value, and read nothing already written");
}

static void test_probe_a_chosen_scale_replaces_the_default(void) {
    float scores[PSIZE], scaled[PSIZE], want[PSIZE];
    probe_scores(scores);
    // timm's qk_scale: any non-zero scale replaces 1/√Dh
    AttentionOptions chosen = {.scale = 2.0f};
    probe_expected(want, scores, 2.0f, NULL, NULL);
    fill_nan(scaled, PSIZE);
    attention_scale_mask(scaled, scores, &chosen, PB, PH, PN, PDH);
    float cand[PSIZE];
    if (!probe_check(scaled, want, "scaled with opt->scale = 2")) {
        probe_expected(cand, scores, PSCALE, NULL, NULL);
        if (diagnose_unwritten(scaled))
            return;
        else if (probe_near(scaled, cand))
            check_hint("opt->scale = 2 was ignored, the scores got 1/√Dh: a non-zero "
                       "opt->scale (timm's qk_scale) replaces 1/√Dh; attention_scale(opt, Dh) "
                       "returns the scale to use");
        else
            diagnose_scale(scaled, scores, 2.0f, NULL, NULL, true);
        return; // one failure, one diagnosis
    }
    // options that only carry a mask: .scale = 0 means the default
    float causal[PSIZE];
    padded_causal(causal);
    AttentionOptions mask_only = {.mask = causal};
    probe_expected(want, scores, PSCALE, causal, NULL);
    fill_nan(scaled, PSIZE);
    attention_scale_mask(scaled, scores, &mask_only, PB, PH, PN, PDH);
    if (!probe_check(scaled, want, "scaled with options {.mask = causal}, .scale = 0")) {
        probe_expected(cand, scores, 0.0f, causal, NULL);
        if (diagnose_unwritten(scaled))
            return;
        else if (probe_near(scaled, cand) && scale_is_zero_everywhere())
            check_hint("%s", INT_DIVISION_HINT);
        else if (probe_near(scaled, cand))
            check_hint("opt->scale = 0 means the default 1/√Dh, not a scale of 0: options "
                       "that only carry a mask leave .scale at 0; attention_scale(opt, Dh) "
                       "handles it");
        else
            diagnose_scale(scaled, scores, PSCALE, causal, NULL, true);
    }
}

// The (N, N) mask, given in a buffer of B·H·N·N floats whose first N·N are the mask and
// the rest NaN: reading past the mask (indexing it by head) shows as NaN.
static void test_probe_the_mask_is_added_to_every_head(void) {
    float scores[PSIZE], scaled[PSIZE], want[PSIZE], mask[PSIZE];
    probe_scores(scores);
    fill_nan(mask, PSIZE);
    attention_mask_causal(mask, PN); // query i sees keys 0…i
    probe_expected(want, scores, PSCALE, mask, NULL);
    fill_nan(scaled, PSIZE);
    attention_scale_mask(scaled, scores, &(AttentionOptions){.mask = mask}, PB, PH, PN, PDH);
    if (probe_check(scaled, want, "scaled + causal mask")) return;
    float cand[PSIZE], transposed[PNN];
    probe_expected(cand, scores, PSCALE, NULL, NULL);
    for (int i = 0; i < PN; i++)
        for (int j = 0; j < PN; j++) transposed[i * PN + j] = mask[j * PN + i];
    bool later_nan = false, first_ok = true;
    for (int i = PNN; i < PSIZE; i++) later_nan |= isnan(scaled[i]) != 0;
    for (int i = 0; i < PNN; i++) first_ok &= scaled[i] == want[i]; // -inf == -inf too
    if (probe_near(scaled, cand)) {
        check_hint("%s", NO_MASK_HINT);
    } else if (later_nan && first_ok && writes_every_block()) { // NaN only with the mask
        check_hint("the (N, N) mask is shared by every sequence and head: index it by i*N + j, "
                   "not by the position in `scaled` (it has only N*N values; the probe's "
                   "values after them are NaN)");
    } else {
        probe_expected(cand, scores, PSCALE, transposed, NULL);
        if (probe_near(scaled, cand))
            check_hint("the mask was added transposed: mask[i][j] is for query i (row i) and "
                       "key j (column j), mask[i*N + j]");
        else
            diagnose_scale(scaled, scores, PSCALE, mask, NULL, true);
    }
}

// The (B, N) key-padding mask: sequence 0 hides its last key, sequence 1 its last two.
// Given in a buffer of B·H rows whose rows ≥ B are NaN: a row per head shows as NaN.
static void test_probe_key_padding_hides_keys_of_its_sequence(void) {
    float scores[PSIZE], scaled[PSIZE], want[PSIZE], pad[PB * PH * PN], causal[PSIZE];
    probe_scores(scores);
    fill_nan(pad, PB * PH * PN);
    const int lengths[PB] = {2, 1};
    attention_mask_key_padding(pad, lengths, PB, PN);
    probe_expected(want, scores, PSCALE, NULL, pad);
    fill_nan(scaled, PSIZE);
    attention_scale_mask(scaled, scores, &(AttentionOptions){.key_padding_mask = pad}, PB, PH,
                         PN, PDH);
    if (!probe_check(scaled, want, "scaled + key-padding mask (B, N)")) {
        float cand[PSIZE], first[PB * PN];
        bool found = false;
        probe_expected(cand, scores, PSCALE, NULL, NULL);
        if (probe_near(scaled, cand)) {
            check_hint("%s", NO_PAD_HINT);
            found = true;
        }
        // the mask on the queries: row i hidden instead of column j
        for (int b = 0; b < PB; b++)
            for (int h = 0; h < PH; h++)
                for (int i = 0; i < PN; i++)
                    for (int j = 0; j < PN; j++) {
                        int at = ((b * PH + h) * PN + i) * PN + j;
                        cand[at] = PSCALE * scores[at] + pad[b * PN + i];
                    }
        if (!found && probe_near(scaled, cand)) {
            check_hint("the key-padding mask hid queries (rows) instead of keys (columns): add "
                       "key_padding_mask[b*N + j], j the key, to every query i");
            found = true;
        }
        for (int b = 0; b < PB; b++) memcpy(&first[b * PN], pad, PN * sizeof(float));
        probe_expected(cand, scores, PSCALE, NULL, first);
        if (!found && probe_near(scaled, cand)) {
            check_hint("every sequence got row 0 of the key-padding mask: it is (B, N), and "
                       "sequence b's row starts at key_padding_mask + b*N");
            found = true;
        }
        // NaN in sequence 1 only with the mask, every block written without it: the
        // mask's rows past B (NaN) were read, one per head
        bool nan_in_seq1 = false;
        for (int i = PH * PNN; i < PSIZE; i++) nan_in_seq1 |= isnan(scaled[i]) != 0;
        if (!found && nan_in_seq1 && writes_every_block()) {
            check_hint("the key-padding mask was read per head, row b*H + h: it is (B, N), one "
                       "row per sequence shared by its H heads, key_padding_mask[b*N + j]");
            found = true;
        }
        if (!found) diagnose_scale(scaled, scores, PSCALE, NULL, pad, true);
        return;
    }
    // both masks at once: both are added
    padded_causal(causal);
    probe_expected(want, scores, PSCALE, causal, pad);
    fill_nan(scaled, PSIZE);
    attention_scale_mask(scaled, scores, &(AttentionOptions){.mask = causal, .key_padding_mask = pad},
                         PB, PH, PN, PDH);
    if (!probe_check(scaled, want, "scaled + causal mask + key-padding mask")) {
        float only_mask[PSIZE], only_pad[PSIZE];
        probe_expected(only_mask, scores, PSCALE, causal, NULL);
        probe_expected(only_pad, scores, PSCALE, NULL, pad);
        if (probe_near(scaled, only_mask) || probe_near(scaled, only_pad))
            check_hint("with both masks given, only the %s was added: add opt->mask[i][j] and "
                       "key_padding_mask[b][j], each when it is not NULL",
                       probe_near(scaled, only_mask) ? "(N, N) mask" : "key-padding mask");
    }
}

// Chapter 02's claim, through attention_scale_mask(): unit-variance q and k of width 64
// give scores of variance ≈ 64, and the scaled scores variance ≈ 1.
static void test_probe_scaled_unit_scores_have_variance_one(void) {
    enum { VN = 256, VDH = 64 };
    float *q = malloc(sizeof(float) * VN * VDH), *k = malloc(sizeof(float) * VN * VDH);
    float *scores = malloc(sizeof(float) * VN * VN), *scaled = malloc(sizeof(float) * VN * VN);
    Rng rng;
    rng_seed(&rng, 202);
    rng_fill_normal(&rng, q, VN * VDH, 0.0f, 1.0f);
    rng_fill_normal(&rng, k, VN * VDH, 0.0f, 1.0f);
    matmul_bt(scores, q, k, VN, VDH, VN);
    fill_nan(scaled, VN * VN);
    attention_scale_mask(scaled, scores, NULL, 1, 1, VN, VDH);
    Tensor raw = tensor_view(scores, 2, VN, VN), out = tensor_view(scaled, 2, VN, VN);
    TensorStats sr = tensor_stats(&raw), so = tensor_stats(&out);
    double var_raw = sr.std * sr.std, var = so.std * so.std;
    CU_ASSERT(var_raw > 0.9 * VDH && var_raw < 1.1 * VDH); // the chapter's Var(q·k) ≈ Dh
    bool ok = so.n_nan == 0 && so.n_inf == 0 && var > 0.9 && var < 1.1;
    CU_ASSERT(ok);
    if (!ok) {
        if (so.n_nan == 0 && so.min == 0.0f && so.max == 0.0f && scale_is_zero_everywhere())
            check_hint("%s", INT_DIVISION_HINT);
        else if (so.n_nan == (size_t)VN * VN || (so.min == 0.0f && so.max == 0.0f))
            check_hint("attention_scale_mask() %s: is it still the exercise's placeholder?",
                       so.n_nan ? "did not write `scaled` at all" : "wrote only zeros");
        else if (fabs(var / var_raw - 1) < 0.01)
            check_hint("did you divide by √Dh? The scaled scores of unit-variance q·k (Dh = 64) "
                       "have variance %.3g ≈ Dh, as the raw ones: multiply by 1/√Dh to bring it "
                       "to 1", var);
        else if (fabs(var * VDH * VDH / var_raw - 1) < 0.01)
            check_hint("√Dh, not Dh: the scaled scores have variance %.3g ≈ 1/Dh; dividing by Dh "
                       "divides the variance by Dh², by √Dh divides it by Dh, to 1", var);
        else
            check_hint("the scaled scores have variance %.4g (expected about 1, as chapter 02 "
                       "measures); the raw ones %.4g", var, var_raw);
    }
    free(q), free(k), free(scores), free(scaled);
}

CU_TestInfo tests_ch02_scaling[] = {
    {"chapter matches PyTorch golden", test_chapter_matches_pytorch},
    {"variance of q·k grows like Dh", test_variance_grows_like_dh},
    {"scaling by 1/sqrt(Dh) brings unit-variance scores to variance 1",
     test_scaling_brings_variance_to_one},
    {"unscaled softmax saturates at Dh=768", test_unscaled_softmax_saturates},
    {"fresh ViT scores: one spread at every Dh, about 0.31, not 1",
     test_fresh_scores_keep_one_spread_that_is_not_one},
    {"softmax of the scaled row is a distribution", test_softmax_of_scaled_row_is_a_distribution},
    {"probe: scores are scaled by 1/sqrt(Dh)", test_probe_scores_are_scaled_by_one_over_sqrt_dh},
    {"probe: a chosen scale replaces 1/sqrt(Dh); 0 means the default",
     test_probe_a_chosen_scale_replaces_the_default},
    {"probe: the (N, N) mask is added to every head", test_probe_the_mask_is_added_to_every_head},
    {"probe: a (B, N) key-padding mask hides keys of its own sequence",
     test_probe_key_padding_hides_keys_of_its_sequence},
    {"probe: scaled unit-variance scores have variance 1",
     test_probe_scaled_unit_scores_have_variance_one},
    CU_TEST_INFO_NULL,
};
