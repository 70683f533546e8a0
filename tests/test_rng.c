/**
 * @file test_rng.c
 * @brief PCG32 against its published reference output, and the distributions' moments.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "base/rng.h"

static void test_pcg32_reference_stream(void) {
    // pcg32-demo from pcg-random.org, seed 42 on stream 54, "Round 1" 32-bit outputs
    const uint32_t expected[6] = {0xa15c02b7, 0x7b47f409, 0xba1d3330,
                                  0x83d2f293, 0xbfa4784b, 0xcbed606e};
    Rng rng;
    rng_seed(&rng, 42);
    for (int i = 0; i < 6; i++) CU_ASSERT_EQUAL(rng_u32(&rng), expected[i]);
}

static void test_same_seed_same_stream(void) {
    Rng a, b;
    rng_seed(&a, 7);
    rng_seed(&b, 7);
    for (int i = 0; i < 100; i++) CU_ASSERT_EQUAL(rng_u32(&a), rng_u32(&b));
    rng_seed(&b, 8);
    int same = 0;
    for (int i = 0; i < 100; i++) same += rng_u32(&a) == rng_u32(&b);
    CU_ASSERT(same < 3);
}

static void moments(const float *x, int n, double *mean, double *var) {
    double m = 0, v = 0;
    for (int i = 0; i < n; i++) m += x[i];
    m /= n;
    for (int i = 0; i < n; i++) v += (x[i] - m) * (x[i] - m);
    *mean = m;
    *var = v / n;
}

static void test_uniform_range_and_moments(void) {
    enum { N = 200000 };
    float *x = malloc(N * sizeof(float));
    Rng rng;
    rng_seed(&rng, 1);
    rng_fill_uniform(&rng, x, N, -1.0f, 3.0f);
    int outside = 0;
    for (int i = 0; i < N; i++) outside += !(x[i] >= -1.0f && x[i] < 3.0f);
    CU_ASSERT_EQUAL(outside, 0);
    double mean, var;
    moments(x, N, &mean, &var);
    CU_ASSERT_DOUBLE_EQUAL(mean, 1.0, 0.02);       // (a+b)/2
    CU_ASSERT_DOUBLE_EQUAL(var, 16.0 / 12.0, 0.02); // (b-a)²/12
    free(x);
}

static void test_normal_moments(void) {
    enum { N = 200000 };
    float *x = malloc(N * sizeof(float));
    Rng rng;
    rng_seed(&rng, 2);
    rng_fill_normal(&rng, x, N, 2.0f, 0.5f);
    double mean, var;
    moments(x, N, &mean, &var);
    CU_ASSERT_DOUBLE_EQUAL(mean, 2.0, 0.01);
    CU_ASSERT_DOUBLE_EQUAL(var, 0.25, 0.01);
    int within1 = 0; // about 68.27% within one standard deviation
    for (int i = 0; i < N; i++) within1 += fabsf(x[i] - 2.0f) < 0.5f;
    CU_ASSERT_DOUBLE_EQUAL(within1 / (double)N, 0.6827, 0.01);
    free(x);
}

static void test_trunc_normal_stays_inside(void) {
    enum { N = 50000 };
    float *x = malloc(N * sizeof(float));
    Rng rng;
    rng_seed(&rng, 3);
    rng_fill_trunc_normal(&rng, x, N, 0.0f, 1.0f, -0.5f, 1.5f);
    float lo = 9, hi = -9;
    for (int i = 0; i < N; i++) {
        if (x[i] < lo) lo = x[i];
        if (x[i] > hi) hi = x[i];
    }
    CU_ASSERT(lo >= -0.5f && hi <= 1.5f);
    CU_ASSERT(lo < -0.49f && hi > 1.45f); // and fills the interval
    free(x);
}

CU_TestInfo tests_rng[] = {
    {"PCG32 reference stream", test_pcg32_reference_stream},
    {"same seed same stream", test_same_seed_same_stream},
    {"uniform range and moments", test_uniform_range_and_moments},
    {"normal moments", test_normal_moments},
    {"truncated normal stays inside", test_trunc_normal_stays_inside},
    CU_TEST_INFO_NULL,
};
