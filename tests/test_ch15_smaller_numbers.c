/**
 * @file test_ch15_smaller_numbers.c
 * @brief Chapter 15 against PyTorch, and exercise 15's functions: the rows'
 *        int8 quantization against torch, the int8 product against a plain
 *        64-bit loop, and probes that name the classic mistakes.
 *
 * `build/tests/run ch15_smaller_numbers` grades a student's quantize_rows.c and
 * gemm_int8_portable.c too (exercise 15): the chapter and the tests below call
 * lib's versions, or whatever replaced those files at link time.
 *
 * The references: tests/golden/ch15_smaller_numbers.safetensors and
 * ch15_quantize.safetensors (tools/gen_golden_ch15.py, PyTorch), and for the
 * integer products a triple loop summing in int64 here, which cannot overflow.
 * The probes compute what each likely mistake would give (a scale from the
 * mean of |x| rather than its largest, rounding by truncation, an int16
 * accumulator, the zero-point correction left out) and name the one that
 * matches with check_hint().
 *
 * Every product runs on the path this CPU takes and on the forced portable one
 * (gemm_lowp_set_portable()), as the gemm_lowp suite does.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../chapters/chapters.h"
#include "check.h"
#include "gemm/gemm_lowp.h"
#include "hints.h"
#include "base/rng.h"
#include "model/vit.h"

static const char GOLDEN_Q[] = "ch15_quantize.safetensors";

static void test_chapter_matches_pytorch(void) {
    check_chapter_against_golden(chapter15_run, "ch15_smaller_numbers.safetensors");
}

/* ------------------------------------------------ quantization against torch */

// x, its q and scales, and q · scale from torch, against quantize_rows_s8()
// and dequantize_rows_s8(); one scale for the whole tensor, quantize_tensor_s8().
static void test_quantize_matches_pytorch(void) {
    Tensor x = golden_tensor(GOLDEN_Q, "x"), q_want = golden_tensor(GOLDEN_Q, "q");
    Tensor s_want = golden_tensor(GOLDEN_Q, "scales"), back_want = golden_tensor(GOLDEN_Q, "back");
    Tensor tq_want = golden_tensor(GOLDEN_Q, "tensor_q"), ts_want = golden_tensor(GOLDEN_Q, "tensor_scale");
    const int R = x.shape[0], K = x.shape[1];
    int8_t *q = malloc((size_t)R * K);
    Tensor q_got = tensor_new(2, R, K), s_got = tensor_new(1, R), back = tensor_new(2, R, K);
    check_poison(s_got.data, s_got.numel);
    check_poison(back.data, back.numel);
    memset(q, 99, (size_t)R * K);
    quantize_rows_s8(q, s_got.data, x.data, R, K);
    for (size_t i = 0; i < q_got.numel; i++) q_got.data[i] = q[i];
    assert_tensor_close(&s_got, &s_want, 0, 1e-6f, "scales: max|row| / 127, one per row");
    assert_tensor_close(&q_got, &q_want, 0, 0, "q = round(x / scale), ties to even, in -127..127");
    dequantize_rows_s8(back.data, q, s_want.data, R, K);
    assert_tensor_close(&back, &back_want, 0, 1e-6f, "dequantized: q * scale, row by row");
    memset(q, 99, (size_t)R * K);
    const float one = quantize_tensor_s8(q, x.data, x.numel);
    for (size_t i = 0; i < q_got.numel; i++) q_got.data[i] = q[i];
    CU_ASSERT_DOUBLE_EQUAL(one, ts_want.data[0], 1e-6 * ts_want.data[0]);
    assert_tensor_close(&q_got, &tq_want, 0, 0, "one scale for the whole tensor");
    free(q);
    tensor_free(&x), tensor_free(&q_want), tensor_free(&s_want), tensor_free(&back_want);
    tensor_free(&tq_want), tensor_free(&ts_want);
    tensor_free(&q_got), tensor_free(&s_got), tensor_free(&back);
}

// A row of zeros: scale 0, and every q 0 (not a division by zero).
static void test_zero_row(void) {
    const float x[2 * 5] = {0, 0, 0, 0, 0, 1, -2, 3, -4, 5};
    int8_t q[10];
    float s[2] = {7, 7};
    memset(q, 99, sizeof q);
    quantize_rows_s8(q, s, x, 2, 5);
    CU_ASSERT_EQUAL(s[0], 0.0f);
    for (int k = 0; k < 5; k++) CU_ASSERT_EQUAL(q[k], 0);
    CU_ASSERT_EQUAL(q[9], 127); // the largest maps to 127
}

/* ------------------------------------------------ the int8 product */

// out (M,N) = a (M,K) · b (N,K)ᵀ summed in int64 here: the reference.
static void product_by_hand(int64_t *out, const int8_t *a, const int8_t *b, int M, int K, int N) {
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            int64_t sum = 0;
            for (int k = 0; k < K; k++) sum += (int64_t)a[(size_t)m * K + k] * b[(size_t)n * K + k];
            out[(size_t)m * N + n] = sum;
        }
}

static void fill_s8(int8_t *x, size_t n, Rng *rng) {
    for (size_t i = 0; i < n; i++) x[i] = (int8_t)((int)(rng_u32(rng) % 255) - 127);
}

typedef void ProductFn(int32_t *out, const int8_t *a, const int8_t *b, const int32_t *sums, int M,
                       int K, int N);
static void plain(int32_t *out, const int8_t *a, const int8_t *b, const int32_t *sums, int M, int K,
                  int N) {
    (void)sums;
    gemm_s8_bt_portable(out, a, b, M, K, N);
}

// The product on odd shapes (no size a multiple of 4, 12 or 32) against the int64 loop.
static void check_product(ProductFn *product, const char *name) {
    static const int SHAPES[][3] = {{1, 1, 1}, {3, 7, 5}, {13, 61, 33}, {12, 64, 32},
                                    {29, 259, 70}, {2, 3072, 3}};
    Rng rng;
    rng_seed(&rng, 1500);
    for (size_t s = 0; s < sizeof SHAPES / sizeof SHAPES[0]; s++) {
        const int M = SHAPES[s][0], K = SHAPES[s][1], N = SHAPES[s][2];
        int8_t *a = malloc((size_t)M * K), *b = malloc((size_t)N * K);
        int32_t *got = malloc(sizeof(int32_t) * M * N), *sums = malloc(sizeof(int32_t) * N);
        int64_t *want = malloc(sizeof(int64_t) * M * N);
        fill_s8(a, (size_t)M * K, &rng);
        fill_s8(b, (size_t)N * K, &rng);
        for (int n = 0; n < N; n++) {
            int32_t t = 0;
            for (int k = 0; k < K; k++) t += b[(size_t)n * K + k];
            sums[n] = t;
        }
        product_by_hand(want, a, b, M, K, N);
        memset(got, 0x5a, sizeof(int32_t) * M * N);
        product(got, a, b, sums, M, K, N);
        int bad = 0;
        for (int i = 0; i < M * N; i++) bad += got[i] != want[i];
        if (bad)
            fprintf(stderr, "\n    %s on (%d, %d) · (%d, %d)ᵀ: %d of %d sums differ; first: %d, "
                    "want %lld\n", name, M, K, N, K, bad, M * N, got[0], (long long)want[0]);
        CU_ASSERT_EQUAL(bad, 0);
        free(a), free(b), free(got), free(sums), free(want);
    }
}

static void test_portable_product(void) { check_product(plain, "gemm_s8_bt_portable"); }
static void test_shifted_product(void) { check_product(gemm_s8_bt_shifted, "gemm_s8_bt_shifted"); }

static void test_row_sums(void) {
    const int8_t b[3 * 4] = {127, 127, 127, 127, -128, -128, 5, 0, 1, -1, 1, -1};
    int32_t sums[3] = {7, 7, 7};
    gemm_s8_row_sums(sums, b, 3, 4);
    CU_ASSERT_EQUAL(sums[0], 508);
    CU_ASSERT_EQUAL(sums[1], -251);
    CU_ASSERT_EQUAL(sums[2], 0);
}

// The CPU's path (VNNI where there is one) and the forced portable one against the loop.
static void both_paths(int32_t *out, const int8_t *a, const int8_t *b, const int32_t *sums, int M,
                       int K, int N) {
    const bool forced = gemm_lowp_forced_portable();
    int32_t *other = malloc(sizeof(int32_t) * M * N);
    gemm_lowp_set_portable(false);
    gemm_s8_bt_summed(out, a, b, sums, M, K, N);
    gemm_lowp_set_portable(true);
    gemm_s8_bt_summed(other, a, b, sums, M, K, N);
    gemm_lowp_set_portable(forced);
    for (int i = 0; i < M * N; i++)
        if (other[i] != out[i]) out[i] = INT32_MIN; // a disagreement fails the comparison
    free(other);
}
static void test_both_paths(void) { check_product(both_paths, "gemm_s8_bt_summed, both paths"); }

/* ------------------------------------------------------------- the probes */

// A row with one large value and many small ones, of both signs: a scale from
// the mean clamps, truncation moves every value that is not a whole step.
static void test_probe_quantize_row(void) {
    enum { K = 40 };
    float x[K];
    for (int k = 0; k < K; k++) x[k] = (float)((k % 7) - 3) * 0.37f + (k % 2 ? 0.11f : -0.05f);
    x[13] = 9.5f; // the row's largest: scale 9.5 / 127
    int8_t q[K];
    float s = -1;
    memset(q, 99, sizeof q);
    quantize_rows_s8(q, &s, x, 1, K);
    // the references, from the rule (arithmetic here)
    const float want_s = 9.5f / 127.0f;
    Tensor got = tensor_new(1, K), want = tensor_new(1, K), maybe = tensor_new(1, K);
    double mean = 0;
    for (int k = 0; k < K; k++) mean += fabsf(x[k]) / K;
    for (int k = 0; k < K; k++) {
        got.data[k] = q[k];
        want.data[k] = nearbyintf(x[k] / want_s);
    }
    const bool scale_ok = fabsf(s - want_s) <= 1e-6f * want_s;
    CU_ASSERT_DOUBLE_EQUAL(s, want_s, 1e-6 * want_s);
    const bool q_ok = assert_tensor_close(&got, &want, 0, 0, "q of a row with one large value");
    if (!scale_ok || !q_ok) {
        bool named = false;
        if (hint_all_zero(got.data, K) && s == 0) {
            check_hint("quantize_rows_s8 wrote only zeros (q and the scale): is the exercise's "
                       "placeholder still there?");
            named = true;
        }
        const float mean_s = (float)mean / 127.0f;
        if (!named && fabsf(s - mean_s) <= 1e-4f * mean_s) {
            check_hint("the scale is mean|x| / 127 (%g), not max|x| / 127 (%g): the scale "
                       "comes from the maximum, so that the largest value maps to 127 and no "
                       "value is clamped; from the mean, every value above the mean is cut "
                       "to +-127", s, want_s);
            named = true;
        }
        for (int k = 0; k < K; k++) maybe.data[k] = truncf(x[k] / want_s);
        if (!named && scale_ok && tensor_near(&got, &maybe, 0, 0)) {
            check_hint("q is x / scale rounded by truncation (toward zero, as a cast to int "
                       "does): round to the nearest integer instead (nearbyintf() or rintf(), "
                       "ties to even), or every value is off by up to a whole step, not half");
            named = true;
        }
        if (!named)
            check_hint("scale = max|x| / 127 for each row, then q = x / scale rounded to the "
                       "nearest integer (ties to even) and clamped to -127..127");
    }
    tensor_free(&got), tensor_free(&want), tensor_free(&maybe);
}

// Sums that need 32 bits: K = 3072 products of 127 · 127 (and −127 · 127),
// 49,548,288 in size, far beyond int16's 32,767.
static void test_probe_accumulator(void) {
    enum { K = 3072, N = 3 };
    int8_t *a = malloc(K), *b = malloc((size_t)N * K);
    for (int k = 0; k < K; k++) {
        a[k] = 127;
        b[k] = 127, b[K + k] = -127, b[2 * K + k] = (int8_t)(k % 2 ? 100 : -3);
    }
    int32_t got[N];
    int64_t want[N];
    product_by_hand(want, a, b, 1, K, N);
    memset(got, 0x5a, sizeof got);
    gemm_s8_bt_portable(got, a, b, 1, K, N);
    bool ok = true;
    for (int n = 0; n < N; n++) ok &= got[n] == want[n];
    CU_ASSERT_EQUAL(got[0], 49548288);
    CU_ASSERT_EQUAL(got[1], -49548288);
    CU_ASSERT_EQUAL(got[2], (int32_t)want[2]);
    if (!ok) {
        bool wrapped16 = true, zero = true;
        for (int n = 0; n < N; n++) {
            wrapped16 &= got[n] == (int16_t)(uint16_t)(want[n] & 0xffff);
            zero &= got[n] == 0;
        }
        if (zero)
            check_hint("gemm_s8_bt_portable wrote only zeros: is the exercise's placeholder "
                       "still there?");
        else if (wrapped16)
            check_hint("the sums wrapped around at 16 bits: the product was accumulated in "
                       "int16 (or short). Each product of two int8 fits in 16 bits, but their "
                       "sum does not (3072 x 127 x 127 = 49,548,288): accumulate in int32");
        else
            check_hint("out[m][n] = the sum over k of a[m][k] * b[n][k], each product and the "
                       "sum in int32 (got %d, want %lld for the first)", got[0],
                       (long long)want[0]);
    }
    free(a), free(b);
}

// The shifted product on values where 128 · Σb is large: without the
// correction every sum is off by exactly 128 · Σ_k b[n][k].
static void test_probe_correction(void) {
    enum { M = 2, K = 9, N = 3 };
    const int8_t a[M * K] = {-5, 3, 127, -127, 0, 9, -1, 2, 44, 7, -7, 1, 100, -100, 3, 3, 0, -128};
    const int8_t b[N * K] = {10, 20, 30, 40, 50, 60, 70, 80, 90, -9, 8, -7, 6, -5, 4, -3, 2, -1,
                             127, 127, 127, -128, 1, 1, 1, 1, 1};
    int32_t sums[N], got[M * N];
    int64_t want[M * N];
    for (int n = 0; n < N; n++) {
        sums[n] = 0;
        for (int k = 0; k < K; k++) sums[n] += b[n * K + k];
    }
    product_by_hand(want, a, b, M, K, N);
    memset(got, 0x5a, sizeof got);
    gemm_s8_bt_shifted(got, a, b, sums, M, K, N);
    bool ok = true;
    for (int i = 0; i < M * N; i++) ok &= got[i] == want[i];
    CU_ASSERT(ok);
    if (!ok) {
        bool no_correction = true, zero = true, plus = true;
        for (int m = 0; m < M; m++)
            for (int n = 0; n < N; n++) {
                const int64_t d = got[m * N + n] - want[m * N + n];
                no_correction &= d == 128 * (int64_t)sums[n];
                plus &= d == 256 * (int64_t)sums[n];
                zero &= got[m * N + n] == 0;
            }
        if (zero)
            check_hint("gemm_s8_bt_shifted wrote only zeros: is the exercise's placeholder "
                       "still there?");
        else if (no_correction)
            check_hint("each sum is off by exactly 128 x the row sum of b: the zero-point "
                       "correction is missing. With a + 128 in place of a, the sum is "
                       "sum (a+128)*b = sum a*b + 128 * sum b, so subtract 128 * b_sums[n]");
        else if (plus)
            check_hint("each sum is off by 256 x the row sum of b: the correction was added, "
                       "not subtracted: out = sum (a+128)*b - 128 * b_sums[n]");
        else
            check_hint("out[m][n] = sum over k of (a[m][k] + 128) * b[n][k], minus 128 * "
                       "b_sums[n]: the same as sum a*b");
    }
}

/* ------------------------------------------------- the chapter's facts */

// The int8 model's logits on both paths: the integer sums are exact, so the
// same bits (the chapter's numbers do not depend on the CPU's instructions).
static void test_int8_model_same_on_both_paths(void) {
    Vit vit = check_shipped_model();
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_set_precision(&vit, LOWP_INT8, &err), VIT_OK);
    const int B = 4, S = vit.config.image_size;
    Tensor x = tensor_new(4, B, 1, S, S);
    Rng rng;
    rng_seed(&rng, 15);
    rng_fill_uniform(&rng, x.data, x.numel, -1.0f, 2.0f);
    const bool forced = gemm_lowp_forced_portable();
    gemm_lowp_set_portable(false);
    CU_ASSERT_EQUAL_FATAL(vit_forward(&vit, &x, NULL, NULL, &err), VIT_OK);
    Tensor cpu = tensor_new(2, B, vit.config.num_classes);
    memcpy(cpu.data, vit_logits(&vit).data, sizeof(float) * cpu.numel);
    gemm_lowp_set_portable(true);
    CU_ASSERT_EQUAL_FATAL(vit_forward(&vit, &x, NULL, NULL, &err), VIT_OK);
    gemm_lowp_set_portable(forced);
    const Tensor portable = vit_logits(&vit);
    // independent: two paths of the same sums must agree bit for bit
    assert_tensor_close(&portable, &cpu, 0, 0, "int8 logits, portable path against the CPU's");
    tensor_free(&x), tensor_free(&cpu);
    vit_free(&vit);
}

CU_TestInfo tests_ch15_smaller_numbers[] = {
    {"chapter matches PyTorch golden", test_chapter_matches_pytorch},
    {"quantize_rows_s8 and dequantize_rows_s8 match PyTorch", test_quantize_matches_pytorch},
    {"a row of zeros has scale 0 and q 0", test_zero_row},
    {"gemm_s8_bt_portable equals an int64 loop on odd shapes", test_portable_product},
    {"gemm_s8_bt_shifted equals an int64 loop on odd shapes", test_shifted_product},
    {"gemm_s8_row_sums adds each row", test_row_sums},
    {"gemm_s8_bt_summed: the CPU's path and the portable one equal the loop", test_both_paths},
    {"probe: quantize_rows_s8, a row with one large value", test_probe_quantize_row},
    {"probe: the int8 product's 32-bit accumulator", test_probe_accumulator},
    {"probe: gemm_s8_bt_shifted's zero-point correction", test_probe_correction},
    {"the int8 model gives the same logits on both paths", test_int8_model_same_on_both_paths},
    CU_TEST_INFO_NULL,
};
