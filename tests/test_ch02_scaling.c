/**
 * @file test_ch02_scaling.c
 * @brief Chapter 02 against PyTorch, and its claims: Var(q·k) ≈ Dh and
 *        Var(q·k/√Dh) ≈ 1 for unit-variance entries, unscaled softmax saturates
 *        at large Dh, and a fresh ViT's scaled scores have the same spread
 *        (about D·0.02² ≈ 0.31, not 1) at every head width.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../chapters/chapters.h"
#include "check.h"
#include "ops.h"
#include "trace.h"

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
    const Tensor *row = trace_find(chapter_values(), "row_scaled_dh768");
    CU_ASSERT_PTR_NOT_NULL_FATAL(row);
    float p[8];
    CU_ASSERT_EQUAL_FATAL(row->numel, 8u);
    softmax(p, row->data, 1, 8);
    double sum = 0;
    for (int j = 0; j < 8; j++) {
        CU_ASSERT(p[j] > 0.0f && p[j] < 1.0f);
        sum += p[j];
    }
    CU_ASSERT_DOUBLE_EQUAL(sum, 1.0, 1e-6);
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
    CU_TEST_INFO_NULL,
};
