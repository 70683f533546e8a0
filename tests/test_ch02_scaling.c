/**
 * @file test_ch02_scaling.c
 * @brief Chapter 02 against PyTorch, and its claims: Var(q·k) ≈ d, Var(q·k/√d) ≈ 1,
 *        unscaled softmax saturates at large d.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../chapters/chapters.h"
#include "check.h"
#include "ops.h"
#include "trace.h"

static const int WIDTHS[] = {4, 16, 64, 256, 768}; // the widths the chapter measures
enum { N_WIDTHS = sizeof WIDTHS / sizeof WIDTHS[0] };

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

// The recorded scalar named printf-style from `fmt` and the width d.
static float value_at(const char *fmt, int d) {
    char name[64];
    snprintf(name, sizeof name, fmt, d);
    const Tensor *t = trace_find(chapter_values(), name);
    if (!t) {
        fprintf(stderr, "\n    %s was not recorded\n", name);
        CU_FAIL("missing value");
        return NAN;
    }
    return t->data[0];
}

static void test_chapter_matches_pytorch(void) {
    check_chapter_against_golden(chapter02_run, "ch02_scaling.safetensors");
}

static void test_variance_grows_like_d(void) {
    for (int i = 0; i < N_WIDTHS; i++) {
        int d = WIDTHS[i];
        float ratio = value_at("var_d%d", d) / (float)d;
        CU_ASSERT(ratio > 0.9f && ratio < 1.1f);
        // the mean stays near 0 at every width (a few standard errors of √d/1024)
        CU_ASSERT(fabsf(value_at("mean_d%d", d)) < 0.05f * sqrtf((float)d));
    }
    // 192 times wider, about 192 times the variance
    float growth = value_at("var_d%d", 768) / value_at("var_d%d", 4);
    CU_ASSERT(growth > 150.0f && growth < 240.0f);
}

static void test_scaling_brings_variance_to_one(void) {
    for (int i = 0; i < N_WIDTHS; i++) {
        int d = WIDTHS[i];
        float var = value_at("var_d%d", d), var_scaled = value_at("var_scaled_d%d", d);
        CU_ASSERT(var_scaled > 0.9f && var_scaled < 1.1f);
        // dividing by √d divides the variance by exactly d
        CU_ASSERT_DOUBLE_EQUAL(var_scaled * d, var, 1e-4 * var);
    }
    float var_div_d = value_at("var_div_d_d%d", 768);
    CU_ASSERT(var_div_d < 0.01f); // dividing by d instead flattens everything
}

static void test_unscaled_softmax_saturates(void) {
    float uniform = logf(8.0f); // entropy of 8 equal weights
    CU_ASSERT(value_at("max_prob_raw_d%d", 768) > 0.99f);
    CU_ASSERT(value_at("entropy_raw_d%d", 768) < 0.01f);
    // scaled, the same row stays spread: no key above one half, entropy above half of ln 8
    CU_ASSERT(value_at("max_prob_scaled_d%d", 768) < 0.5f);
    CU_ASSERT(value_at("entropy_scaled_d%d", 768) > 0.5f * uniform);
    // unscaled, wider is more peaked
    for (int i = 1; i < N_WIDTHS; i++)
        CU_ASSERT(value_at("entropy_raw_d%d", WIDTHS[i]) <
                  value_at("entropy_raw_d%d", WIDTHS[i - 1]));
}

static void test_softmax_of_scaled_row_is_a_distribution(void) {
    const Tensor *row = trace_find(chapter_values(), "row_scaled_d768");
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
    {"variance of q·k grows like d", test_variance_grows_like_d},
    {"scaling by 1/sqrt(d) brings variance to 1", test_scaling_brings_variance_to_one},
    {"unscaled softmax saturates at d=768", test_unscaled_softmax_saturates},
    {"softmax of the scaled row is a distribution", test_softmax_of_scaled_row_is_a_distribution},
    CU_TEST_INFO_NULL,
};
