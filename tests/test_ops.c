/**
 * @file test_ops.c
 * @brief lib/ops/ops.h against PyTorch goldens, plus the properties each op promises.
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

static void test_softmax_matches_pytorch(void) {
    Tensor x = golden("softmax.x"), want = golden("softmax.out");
    Tensor got = tensor_new_shape(x.ndim, x.shape);
    softmax(got.data, x.data, x.shape[0], x.shape[1]);
    assert_tensor_close(&got, &want, 1e-7f, 1e-5f, "softmax");
    tensor_free(&x), tensor_free(&want), tensor_free(&got);
}

static void test_layernorm_matches_pytorch(void) {
    Tensor x = golden("layernorm.x"), g = golden("layernorm.gamma"), b = golden("layernorm.beta");
    Tensor want = golden("layernorm.out");
    Tensor got = tensor_new_shape(x.ndim, x.shape);
    layernorm(got.data, x.data, g.data, b.data, x.shape[0], x.shape[1], 1e-6f);
    Tensor eps = tensor_scalar(1e-6f);
    assert_tensor_close_from(&got, &want, 1e-5f, 1e-5f, "layernorm", {"x", &x}, {"gamma", &g},
                             {"beta", &b}, {"eps", &eps});
    tensor_free(&x), tensor_free(&g), tensor_free(&b), tensor_free(&want), tensor_free(&got);
    tensor_free(&eps);
}

// Rows whose variance is near ε, where ε is what keeps the division finite
// (tools/gen_golden_keys.py, keys_layernorm_eps): constant rows plus noise of
// variance 1e-7 to 1e-5 and one exactly constant row, with ε = 1e-6 and 1e-5,
// against F.layer_norm in float64. Near ε, float32 rounding of the mean is
// magnified by 1/sqrt(var + ε) (up to 950): lib's layernorm is off by 4.5e-6,
// PyTorch's own float32 F.layer_norm by 4.3e-5, a plain float32 two-pass one by
// 4.8e-5 (measured). Ignoring ε multiplies a row by sqrt((var + ε) / var),
// moving these outputs by 0.135 at the least (var 1e-5, ε 1e-6) and turning the
// constant row into 0/0 = NaN. 5e-4 + 1e-4·|ref| admits any float32 version
// like PyTorch's with a margin of 10 and misses ignored ε by a factor of 270.
static void test_layernorm_near_eps_matches_pytorch(void) {
    static const char *const keys[] = {"eps1e-06", "eps1e-05"};
    const char *file = "keys_layernorm_eps.safetensors";
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        char name[64], label[128];
#define LN_GOLDEN(part) (snprintf(name, sizeof name, "%s.%s", keys[k], part), golden_tensor(file, name))
        Tensor x = LN_GOLDEN("x"), g = LN_GOLDEN("gamma"), b = LN_GOLDEN("beta");
        Tensor eps = LN_GOLDEN("eps"), var = LN_GOLDEN("var"), want = LN_GOLDEN("out");
#undef LN_GOLDEN
        // the fixture is what it claims: every row's variance within 10x of ε, or exactly 0
        float most = 0;
        for (size_t i = 0; i < var.numel; i++) most = fmaxf(most, var.data[i]);
        CU_ASSERT_TRUE(most <= 1.01e-5f && var.data[var.numel - 1] == 0.0f);
        Tensor got = tensor_new_shape(x.ndim, x.shape);
        layernorm(got.data, x.data, g.data, b.data, x.shape[0], x.shape[1], eps.data[0]);
        snprintf(label, sizeof label, "layernorm (eps %g, row variances 0 to 1e-05)",
                 (double)eps.data[0]);
        assert_tensor_close_from(&got, &want, 5e-4f, 1e-4f, label, {"x", &x}, {"gamma", &g},
                                 {"beta", &b}, {"eps", &eps});
        if (getenv("VIT_GOLDEN_REPORT"))
            fprintf(stderr, "\n    %s: max |diff| %.2e", label, (double)tensor_max_abs_diff(&got, &want));
        tensor_free(&x), tensor_free(&g), tensor_free(&b), tensor_free(&eps), tensor_free(&var);
        tensor_free(&want), tensor_free(&got);
    }
}

static void test_gelu_matches_pytorch(void) {
    Tensor x = golden("gelu.x"), want = golden("gelu.out");
    Tensor got = tensor_new_shape(x.ndim, x.shape);
    gelu(got.data, x.data, x.numel);
    assert_tensor_close_from(&got, &want, 1e-6f, 1e-5f, "gelu", {"x", &x});
    tensor_free(&x), tensor_free(&want), tensor_free(&got);
}

static void test_linear_matches_pytorch(void) {
    Tensor x = golden("linear.x"), w = golden("linear.w"), b = golden("linear.b");
    Tensor want = golden("linear.out");
    Tensor got = tensor_new(2, x.shape[0], w.shape[0]);
    ops_linear(got.data, x.data, w.data, b.data, x.shape[0], x.shape[1], w.shape[0]);
    assert_tensor_close_from(&got, &want, 1e-5f, 1e-4f, "linear", {"x", &x}, {"w", &w});
    tensor_free(&x), tensor_free(&w), tensor_free(&b), tensor_free(&want), tensor_free(&got);
}

static void test_dot_matches_pytorch(void) {
    Tensor a = golden("dot.a"), b = golden("dot.b"), want = golden("dot.out");
    CU_ASSERT_DOUBLE_EQUAL(dot(a.data, b.data, (int)a.numel), want.data[0],
                           1e-5 * fabs(want.data[0]) + 1e-5);
    tensor_free(&a), tensor_free(&b), tensor_free(&want);
}

/* ---------------------------------------------------------- properties */

static void test_softmax_rows_sum_to_one(void) {
    enum { R = 8, C = 50 };
    float x[R * C], y[R * C];
    Rng rng;
    rng_seed(&rng, 11);
    rng_fill_uniform(&rng, x, R * C, -30, 30);
    softmax(y, x, R, C);
    for (int r = 0; r < R; r++) {
        double sum = 0;
        for (int j = 0; j < C; j++) {
            CU_ASSERT(y[r * C + j] >= 0.0f && y[r * C + j] <= 1.0f);
            sum += y[r * C + j];
        }
        CU_ASSERT_DOUBLE_EQUAL(sum, 1.0, 1e-6);
    }
}

static void test_softmax_ignores_added_constant(void) {
    enum { C = 20 };
    float x[C], shifted[C], y[C], z[C];
    Rng rng;
    rng_seed(&rng, 12);
    rng_fill_uniform(&rng, x, C, -5, 5);
    for (int j = 0; j < C; j++) shifted[j] = x[j] + 100.0f; // exactly representable shift
    softmax(y, x, 1, C);
    softmax(z, shifted, 1, C);
    for (int j = 0; j < C; j++) CU_ASSERT_DOUBLE_EQUAL(y[j], z[j], 1e-6);
}

static void test_softmax_survives_huge_inputs(void) {
    float x[4] = {1e30f, -1e30f, 1e30f, 0.0f}, y[4];
    softmax(y, x, 1, 4);
    for (int j = 0; j < 4; j++) CU_ASSERT_FALSE(isnan(y[j]));
    CU_ASSERT_DOUBLE_EQUAL(y[0], 0.5, 1e-7);
    CU_ASSERT_DOUBLE_EQUAL(y[2], 0.5, 1e-7);
    CU_ASSERT_EQUAL(y[1], 0.0f);
    float z[3] = {-1e30f, -1e30f, -1e30f}, w[3];
    softmax(w, z, 1, 3); // equal huge negatives: uniform, not NaN
    for (int j = 0; j < 3; j++) CU_ASSERT_DOUBLE_EQUAL(w[j], 1.0 / 3.0, 1e-7);
}

static void test_softmax_fully_masked_row_is_zero(void) {
    float x[6] = {-INFINITY, -INFINITY, -INFINITY, 1.0f, -INFINITY, 2.0f}, y[6];
    softmax(y, x, 2, 3);
    for (int j = 0; j < 3; j++) CU_ASSERT_EQUAL(y[j], 0.0f);
    CU_ASSERT_EQUAL(y[4], 0.0f); // a masked entry gets exactly zero
    CU_ASSERT_DOUBLE_EQUAL(y[3] + y[5], 1.0, 1e-7);
}

// Expected values below are PyTorch's (torch 1.13, torch.softmax(x, dim=-1)), except where
// a row is entirely -inf: there PyTorch gives NaN and we give zeros, by convention (ops.h).

// Is every one of the n values NaN? Counts them, so a failure says how many were not.
static int count_nan(const float *y, int n) {
    int c = 0;
    for (int j = 0; j < n; j++) c += isnan(y[j]) != 0;
    return c;
}

static void test_softmax_row_with_a_nan_is_nan(void) {
    float x[4] = {1.0f, NAN, 2.0f, -1.0f}, y[4];
    softmax(y, x, 1, 4);
    CU_ASSERT_EQUAL(count_nan(y, 4), 4); // PyTorch: [nan, nan, nan, nan]
    float masked[2] = {NAN, -INFINITY}; // a NaN beside masked entries is still a NaN
    softmax(y, masked, 1, 2);
    CU_ASSERT_EQUAL(count_nan(y, 2), 2); // PyTorch: [nan, nan]; not a "fully masked" row
}

static void test_softmax_row_of_nan_is_nan(void) {
    float x[3] = {NAN, NAN, NAN}, y[3] = {0, 0, 0};
    softmax(y, x, 1, 3);
    CU_ASSERT_EQUAL(count_nan(y, 3), 3); // PyTorch: [nan, nan, nan]; zeros would hide it
}

static void test_softmax_row_with_plus_inf_is_nan(void) {
    float x[2] = {1.0f, INFINITY}, y[3];
    softmax(y, x, 1, 2);
    CU_ASSERT_EQUAL(count_nan(y, 2), 2); // PyTorch: [nan, nan], not [0, 1] nor [0, nan]
    float two[3] = {INFINITY, INFINITY, 2.0f};
    softmax(y, two, 1, 3);
    CU_ASSERT_EQUAL(count_nan(y, 3), 3); // PyTorch: [nan, nan, nan]
    float with_masked[3] = {INFINITY, -INFINITY, -INFINITY};
    softmax(y, with_masked, 1, 3);
    CU_ASSERT_EQUAL(count_nan(y, 3), 3); // PyTorch: [nan, nan, nan]
}

// Each row on its own: one bad row does not touch its neighbours, in place or not.
static void test_softmax_mixed_rows_are_independent(void) {
    enum { R = 8, C = 3 };
    const float x[R * C] = {
        1.0f,      2.0f,      3.0f,      // ordinary
        NAN,       -INFINITY, -INFINITY, // a NaN
        -INFINITY, -INFINITY, -INFINITY, // fully masked
        1.0f,      INFINITY,  0.0f,      // a +inf
        -INFINITY, -INFINITY, 1.0f,      // partly masked
        0.5f,      -INFINITY, 0.5f,      // partly masked
        INFINITY,  -INFINITY, -INFINITY, // a +inf among masked entries
        NAN,       NAN,       NAN,       // all NaN
    };
    const float want[R * C] = {
        0.09003057f, 0.24472848f, 0.66524094f, // PyTorch's values
        NAN,         NAN,         NAN,
        0.0f,        0.0f,        0.0f, // PyTorch: NaN; ours: zeros (fully masked)
        NAN,         NAN,         NAN,
        0.0f,        0.0f,        1.0f,
        0.5f,        0.0f,        0.5f,
        NAN,         NAN,         NAN,
        NAN,         NAN,         NAN,
    };
    float y[R * C], inplace[R * C];
    softmax(y, x, R, C);
    for (int i = 0; i < R * C; i++) inplace[i] = x[i];
    softmax(inplace, inplace, R, C);
    for (int r = 0; r < R; r++) {
        for (int j = 0; j < C; j++) {
            const int i = r * C + j;
            if (isnan(want[i])) {
                CU_ASSERT(isnan(y[i]) && isnan(inplace[i]));
            } else {
                CU_ASSERT_DOUBLE_EQUAL(y[i], want[i], 1e-7);
                CU_ASSERT_EQUAL(inplace[i], y[i]);
                if (want[i] == 0.0f) CU_ASSERT_EQUAL(y[i], 0.0f); // masked: exactly zero
            }
            if (isnan(want[i]) != isnan(y[i]))
                fprintf(stderr, "\nsoftmax row %d col %d: got %g, want %g\n", r, j, (double)y[i],
                        (double)want[i]);
        }
    }
}

static void test_softmax_in_place(void) {
    float x[3] = {1, 2, 3}, y[3];
    softmax(y, x, 1, 3);
    softmax(x, x, 1, 3);
    for (int j = 0; j < 3; j++) CU_ASSERT_EQUAL(x[j], y[j]);
}

static void test_layernorm_normalises(void) {
    enum { R = 4, D = 768 };
    float *x = malloc(sizeof(float) * R * D), *y = malloc(sizeof(float) * R * D);
    Rng rng;
    rng_seed(&rng, 13);
    rng_fill_normal(&rng, x, R * D, 3.0f, 7.0f);
    layernorm(y, x, NULL, NULL, R, D, 1e-6f);
    for (int r = 0; r < R; r++) {
        double mean = 0, var = 0;
        for (int j = 0; j < D; j++) mean += y[r * D + j];
        mean /= D;
        for (int j = 0; j < D; j++) var += (y[r * D + j] - mean) * (y[r * D + j] - mean);
        var /= D;
        CU_ASSERT_DOUBLE_EQUAL(mean, 0.0, 1e-6);
        CU_ASSERT_DOUBLE_EQUAL(var, 1.0, 1e-5);
    }
    free(x), free(y);
}

static void test_layernorm_constant_row_uses_eps(void) {
    float x[4] = {5, 5, 5, 5}, y[4];
    layernorm(y, x, NULL, NULL, 1, 4, 1e-6f);
    for (int j = 0; j < 4; j++) CU_ASSERT_EQUAL(y[j], 0.0f); // no division by zero
}

static void test_gelu_known_values(void) {
    // GELU(x) = x·Φ(x): Φ(0) = 1/2, Φ(1) = 0.8413447461, Φ(-1) = 0.1586552539, Φ(3) = 0.9986501020
    float x[5] = {0.0f, 1.0f, -1.0f, 3.0f, -10.0f}, y[5];
    gelu(y, x, 5);
    CU_ASSERT_EQUAL(y[0], 0.0f);
    CU_ASSERT_DOUBLE_EQUAL(y[1], 0.8413447461, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(y[2], -0.1586552539, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(y[3], 2.9959503060, 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(y[4], 0.0, 1e-20); // -10·Φ(-10) ≈ -7.6e-23
}

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
    {"softmax matches PyTorch", test_softmax_matches_pytorch},
    {"layernorm matches PyTorch", test_layernorm_matches_pytorch},
    {"layernorm with variance near eps matches PyTorch", test_layernorm_near_eps_matches_pytorch},
    {"gelu matches PyTorch", test_gelu_matches_pytorch},
    {"linear matches PyTorch", test_linear_matches_pytorch},
    {"dot matches PyTorch", test_dot_matches_pytorch},
    {"softmax rows sum to 1", test_softmax_rows_sum_to_one},
    {"softmax ignores an added constant", test_softmax_ignores_added_constant},
    {"softmax survives +-1e30", test_softmax_survives_huge_inputs},
    {"softmax fully masked row is zeros", test_softmax_fully_masked_row_is_zero},
    {"softmax row with a NaN is NaN", test_softmax_row_with_a_nan_is_nan},
    {"softmax row of NaN is NaN, not zeros", test_softmax_row_of_nan_is_nan},
    {"softmax row with +inf is NaN (as PyTorch)", test_softmax_row_with_plus_inf_is_nan},
    {"softmax mixed rows are independent", test_softmax_mixed_rows_are_independent},
    {"softmax in place", test_softmax_in_place},
    {"layernorm gives mean 0 variance 1", test_layernorm_normalises},
    {"layernorm constant row is finite", test_layernorm_constant_row_uses_eps},
    {"gelu known values", test_gelu_known_values},
    {"scale and add", test_scale_and_add},
    {"the checker names NaN and Inf on either side", test_checker_names_nan_and_inf},
    {"top K: largest first, ties by index, NaN last", test_top_k_orders_nan_last_ties_by_index},
    {"top K equals sorting: n <= 1000, every k", test_top_k_matches_sorting_small},
    {"top K: all equal, all NaN", test_top_k_all_equal_or_all_nan},
    {"top K equals sorting: n = 200,000", test_top_k_matches_sorting_large},
    CU_TEST_INFO_NULL,
};
