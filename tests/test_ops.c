/**
 * @file test_ops.c
 * @brief lib/ops/ops.h's base operations (linear, scale, add, top K) against PyTorch
 *        goldens and the properties each promises, and the answer keys' own checker.
 *
 * The ops a chapter teaches and an exercise hands out have suites of their own at
 * that chapter's stage, so that a mistake in one first fails there: dot()
 * (test_dot.c, chapter 01), softmax() (test_softmax.c, chapter 03), layernorm()
 * and gelu() (test_layernorm.c, test_gelu.c, chapter 08).
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "ops/ops.h"
#include "base/rng.h"

// One tensor of tests/golden/ops.safetensors, owned (free it).
static Tensor golden(const char *name) { return golden_tensor("ops.safetensors", name); }

static void test_linear_matches_pytorch(void) {
    Tensor x = golden("linear.x"), w = golden("linear.w"), b = golden("linear.b");
    Tensor want = golden("linear.out");
    Tensor got = tensor_new(2, x.shape[0], w.shape[0]);
    ops_linear(got.data, x.data, w.data, b.data, x.shape[0], x.shape[1], w.shape[0]);
    assert_tensor_close_from(&got, &want, 1e-5f, 1e-4f, "linear", {"x", &x}, {"w", &w});
    tensor_free(&x), tensor_free(&w), tensor_free(&b), tensor_free(&want), tensor_free(&got);
}

/* ---------------------------------------------------------- properties */

static void test_scale_and_add(void) {
    float a[3] = {1, 2, 3}, b[3] = {10, 20, 30}, y[3];
    check_poison(y, 3); // before each call: each must write all of y
    ops_scale(y, a, 0.5f, 3);
    CU_ASSERT_EQUAL(y[0], 0.5f);
    CU_ASSERT_EQUAL(y[1], 1.0f);
    CU_ASSERT_EQUAL(y[2], 1.5f);
    check_poison(y, 3);
    ops_add(y, a, b, 3);
    CU_ASSERT_EQUAL(y[1], 22.0f);
    CU_ASSERT_EQUAL(y[0], 11.0f);
    CU_ASSERT_EQUAL(y[2], 33.0f);
}

static void test_top_k_orders_nan_last_ties_by_index(void) {
    const float v[6] = {0.5f, 2, NAN, 2, -1, 3};
    int idx[6];
    CU_ASSERT_EQUAL(ops_top_k(idx, 3, v, 6), 3);
    CU_ASSERT_EQUAL(idx[0], 5);
    CU_ASSERT_EQUAL(idx[1], 1); // ties: the lower index first
    CU_ASSERT_EQUAL(idx[2], 3);
    CU_ASSERT_EQUAL(ops_top_k(idx, 10, v, 6), 6);
    CU_ASSERT_EQUAL(idx[4], 4);
    CU_ASSERT_EQUAL(idx[5], 2); // NaN last
}

/* ---------------------------------------- the answer keys' own checker */

// tests/check.c, which every suite's comparisons go through, tested beside the ops
// it checks: NaN and infinities are counted on each side and where they first
// are, never hidden as "max |diff| 0"; the worst element is the first that is
// not finite where the other side is.
static void test_checker_names_nan_and_inf(void) {
    float a[6] = {1.0f, NAN, 3.0f, INFINITY, NAN, -INFINITY};
    float e[6] = {1.5f, 2.0f, NAN, 4.0f, NAN, -INFINITY};
    int shape[2] = {2, 3};
    Tensor got = tensor_view_shape(a, 2, shape), want = tensor_view_shape(e, 2, shape);
    TensorDiff d;
    CU_ASSERT_FALSE(tensor_diff(&d, &got, &want, 1e-3f, 0.0f));
    CU_ASSERT_EQUAL(d.bad, 4);           // [0] off by 0.5, [1] NaN, [2] NaN expected, [3] inf
    CU_ASSERT_EQUAL(d.first_bad, 0);
    CU_ASSERT_EQUAL(d.worst, 1);         // the first non-finite mismatch
    CU_ASSERT_EQUAL(d.nan[0], 2);        // got: [1] and [4]
    CU_ASSERT_EQUAL(d.first_nan[0], 1);
    CU_ASSERT_EQUAL(d.nan[1], 2);        // expected: [2] and [4]
    CU_ASSERT_EQUAL(d.first_nan[1], 2);
    CU_ASSERT_EQUAL(d.inf[0], 2);        // got: +inf at [3], -inf at [5]
    CU_ASSERT_EQUAL(d.first_inf[0], 3);
    CU_ASSERT_EQUAL(d.inf[1], 1);        // expected: -inf at [5], matched
    CU_ASSERT_DOUBLE_EQUAL(d.max_diff, 0.5, 1e-12); // over the finite pairs only
    char line[640];
    tensor_diff_summary(line, sizeof line, &d, &got, &want, 1e-3f, 0.0f);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "4 of 6 elements"));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "worst at [0, 1]: got NaN, expected 2"));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "NaN: got 2 (first at [0, 1]), expected 2 (first at [0, 2])"));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "Inf: got 2 (first at [1, 0]), expected 1 (first at [1, 2])"));
    // NaN against NaN and an infinity against the same one agree
    float same[3] = {NAN, INFINITY, -INFINITY};
    Tensor s = tensor_view(same, 1, 3);
    CU_ASSERT_TRUE(tensor_diff(&d, &s, &s, 0.0f, 0.0f));
    // a series: the first failure in full, the next CHECK_LINES in a line, the rest counted
    CheckReport r = {0};
    CU_ASSERT_EQUAL(check_report_fail(&r, "blocks.0.attn.q"), CHECK_FULL);
    for (int i = 0; i < CHECK_LINES; i++) CU_ASSERT_EQUAL(check_report_fail(&r, "later"), CHECK_LINE);
    CU_ASSERT_EQUAL(check_report_fail(&r, "much later"), CHECK_QUIET);
    CU_ASSERT_EQUAL(r.failures, CHECK_LINES + 2);
    CU_ASSERT_STRING_EQUAL(r.first, "blocks.0.attn.q");
}

/* ------------------------------------------- top K against a plain sort */

// One value and where it came from, for the reference order.
typedef struct {
    float v;
    int i;
} Ranked;

// qsort's comparison for ops_top_k()'s promise: larger first, NaN last, lower index on ties.
static int ranked_order(const void *pa, const void *pb) {
    const Ranked *a = pa, *b = pb;
    if (isnan(a->v) != isnan(b->v)) return isnan(a->v) ? 1 : -1;
    if (!isnan(a->v) && a->v != b->v) return a->v > b->v ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

// The plain reference: order is (n), all indices of v sorted by the promise; O(n log n).
// The top k are its first k.
static void top_k_naive(int *order, const float *v, int n) {
    Ranked *r = malloc(sizeof *r * (size_t)(n > 0 ? n : 1));
    for (int i = 0; i < n; i++) r[i] = (Ranked){v[i], i};
    qsort(r, (size_t)n, sizeof *r, ranked_order);
    for (int i = 0; i < n; i++) order[i] = r[i].i;
    free(r);
}

// v is (n): few distinct values, so ties are everywhere, and some NaN, ±inf and -0 beside 0.
static void fill_with_ties(float *v, int n, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed);
    for (int i = 0; i < n; i++) {
        uint32_t u = rng_u32(&rng) % 20;
        v[i] = u == 0 ? NAN : u == 1 ? INFINITY : u == 2 ? -INFINITY : u == 3 ? -0.0f
                                                                      : (float)(u % 6) - 2.0f;
    }
}

// ops_top_k(k) must be the first min(k, n) of the reference order, and write nothing after them.
static void check_top_k(const float *v, const int *order, int n, int k) {
    const int want = k <= 0 ? 0 : k < n ? k : n, room = (k > n ? k : n) + 1;
    const int untouched = -7;
    int *idx = malloc(sizeof *idx * (size_t)room);
    for (int j = 0; j < room; j++) idx[j] = untouched;
    const int got = ops_top_k(idx, k, v, n);
    CU_ASSERT_EQUAL(got, want);
    int bad = -1; // the first wrong position
    for (int j = 0; j < room && bad < 0; j++)
        if (idx[j] != (j < want ? order[j] : untouched)) bad = j;
    CU_ASSERT_EQUAL(bad, -1);
    if (got != want || bad >= 0)
        fprintf(stderr, "\ntop_k(n=%d, k=%d) returned %d (want %d); idx[%d] = %d, the sort says %d\n",
                n, k, got, want, bad, bad >= 0 ? idx[bad] : 0,
                bad >= 0 ? (bad < want ? order[bad] : untouched) : 0);
    free(idx);
}

// Every k that matters for one n: none, negative, one, some, all, more than all.
static void check_top_k_all_k(int n, uint64_t seed) {
    float *v = malloc(sizeof *v * (size_t)(n > 0 ? n : 1));
    int *order = malloc(sizeof *order * (size_t)(n > 0 ? n : 1));
    fill_with_ties(v, n, seed);
    top_k_naive(order, v, n);
    const int ks[] = {-1, 0, 1, 2, 3, n / 2, n - 1, n, n + 1, 2 * n + 5};
    for (size_t t = 0; t < sizeof ks / sizeof ks[0]; t++) check_top_k(v, order, n, ks[t]);
    free(v), free(order);
}

static void test_top_k_matches_sorting_small(void) {
    const int ns[] = {0, 1, 2, 3, 7, 8, 31, 100, 1000};
    for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) check_top_k_all_k(ns[t], 100 + t);
}

static void test_top_k_all_equal_or_all_nan(void) {
    enum { N = 50 };
    float v[N];
    int order[N];
    for (int i = 0; i < N; i++) order[i] = i; // every value ties: index order
    for (int i = 0; i < N; i++) v[i] = 1.5f;
    check_top_k(v, order, N, 10);
    check_top_k(v, order, N, N);
    for (int i = 0; i < N; i++) v[i] = NAN;
    check_top_k(v, order, N, 10);
    check_top_k(v, order, N, N);
}

// n = 200,000: the old O(n·k) insertion took minutes for k = n; the heap takes milliseconds.
// No timing is asserted (that belongs in a benchmark), only the answers.
static void test_top_k_matches_sorting_large(void) {
    enum { N = 200000 };
    float *v = malloc(sizeof *v * N);
    int *order = malloc(sizeof *order * N);
    fill_with_ties(v, N, 7);
    top_k_naive(order, v, N);
    check_top_k(v, order, N, 1);
    check_top_k(v, order, N, 1000);
    check_top_k(v, order, N, N);
    check_top_k(v, order, N, N + 1);
    free(v), free(order);
}

CU_TestInfo tests_ops[] = {
    {"linear matches PyTorch", test_linear_matches_pytorch},
    {"scale and add", test_scale_and_add},
    {"the checker names NaN and Inf on either side", test_checker_names_nan_and_inf},
    {"top K: largest first, ties by index, NaN last", test_top_k_orders_nan_last_ties_by_index},
    {"top K equals sorting: n <= 1000, every k", test_top_k_matches_sorting_small},
    {"top K: all equal, all NaN", test_top_k_all_equal_or_all_nan},
    {"top K equals sorting: n = 200,000", test_top_k_matches_sorting_large},
    CU_TEST_INFO_NULL,
};
