/**
 * @file test_gemm_lowp.c
 * @brief lib/gemm/gemm_lowp.h: the int8 and bf16 products on every path this
 *        CPU runs, the bf16 number format, and int8 quantization.
 *
 * What is checked, and against what (never against the code under test):
 *   - the int8 product, portable path forced and (when the CPU has it) the
 *     AVX-512 VNNI path, equals a plain int64 triple loop written here, bit
 *     for bit, on odd shapes (no multiple of the VNNI path's tiles, or one
 *     past them) and on the extreme values −128 and 127; the two paths equal
 *     each other;
 *   - the 32-bit accumulator's bound for K = 768 and 3072, as arithmetic, and
 *     as products of all-extreme rows whose sums are written out here;
 *   - float → bf16 rounding on values whose bit patterns are written here
 *     (ties to even both ways, the largest finite, NaN, −0.0, subnormals), and
 *     every one of the 65,536 bf16 values back and forth;
 *   - the bf16 product against a double-precision product of the same bf16
 *     values, within the bound a float sum of K terms can be off by;
 *   - quantization: a hand-worked row, the round trip within scale / 2, per
 *     channel beating per tensor on rows of very different ranges, and the
 *     quantized linear layer on values int8 holds exactly, against integer sums.
 * Every test but the ones that compare with the VNNI or BF16 path runs with
 * the portable paths forced, so the suite passes on a CPU without them; the
 * others check those paths only where the CPU has them (this suite's last
 * test says which ran).
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "base/rng.h"
#include "gemm/gemm_lowp.h"

/* ------------------------------------------------------------ helpers */

// The (M, K, N) shapes of the products: a single term, sizes that are no
// multiple of the VNNI path's tiles (12 rows, 32 columns, groups of 4 k,
// blocks of 512 k) and sizes one past them, and ViT-B/16's tokens and width
// with an odd number of outputs.
static const int shapes[][3] = {{1, 1, 1},   {3, 17, 5},   {7, 300, 57}, {12, 64, 32},
                                {13, 65, 9}, {2, 128, 3},  {13, 1030, 33},
                                {197, 768, 65}};
enum { SHAPES = sizeof shapes / sizeof shapes[0] };

// Restores the portable switch as the suite found it (VIT_LOWP may have set it).
static bool portable_before;
static void force_portable(void) {
    portable_before = gemm_lowp_forced_portable();
    gemm_lowp_set_portable(true);
}
static void restore_portable(void) { gemm_lowp_set_portable(portable_before); }

// Uniform integers in lo..hi.
static void fill_s8(Rng *rng, int8_t *x, size_t n, int lo, int hi) {
    for (size_t i = 0; i < n; i++) x[i] = (int8_t)(lo + (int)(rng_u32(rng) % (uint32_t)(hi - lo + 1)));
}

// The definition: out[m][n] = Σ_k a[m][k]·b[n][k], in int64 so that it cannot overflow.
static void triple_loop_s8(int64_t *out, const int8_t *a, const int8_t *b, int M, int K, int N) {
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            int64_t sum = 0;
            for (int k = 0; k < K; k++) sum += (int64_t)a[(size_t)m * K + k] * b[(size_t)n * K + k];
            out[(size_t)m * N + n] = sum;
        }
}

// How many elements of out differ from the reference (printing the first).
static int count_wrong(const int32_t *out, const int64_t *ref, size_t n, const char *what, int M,
                       int K, int N) {
    int wrong = 0;
    for (size_t i = 0; i < n; i++)
        if ((int64_t)out[i] != ref[i] && wrong++ == 0)
            fprintf(stderr, "%s %dx%dx%d: element %zu is %d, expected %lld\n", what, M, K, N, i,
                    out[i], (long long)ref[i]);
    return wrong;
}

/* --------------------------------------------------------- int8 product */

// Elements past the end of out, which no product may write.
enum { GUARD = 64 };
static const int32_t guard_value = 0x5a5a5a5a;
static void fill_guard(int32_t *out, size_t n_out) {
    for (int i = 0; i < GUARD; i++) out[n_out + i] = guard_value;
}
static int guard_broken(const int32_t *out, size_t n_out) {
    int broken = 0;
    for (int i = 0; i < GUARD; i++) broken += out[n_out + i] != guard_value;
    return broken;
}

// Every path this CPU runs against the triple loop, and the paths against each other.
static void check_s8_paths(const int8_t *a, const int8_t *b, int M, int K, int N) {
    const size_t n_out = (size_t)M * N;
    int64_t *ref = malloc(n_out * sizeof *ref);
    int32_t *portable = malloc(n_out * sizeof *portable);
    int32_t *out = malloc((n_out + GUARD) * sizeof *out);
    int32_t *sums = malloc((size_t)N * sizeof *sums);
    triple_loop_s8(ref, a, b, M, K, N);

    gemm_s8_bt_portable(portable, a, b, M, K, N);
    CU_ASSERT_EQUAL(count_wrong(portable, ref, n_out, "portable", M, K, N), 0);

    force_portable(); // the dispatching product with the portable path forced
    memset(out, 0x55, n_out * sizeof *out);
    fill_guard(out, n_out);
    gemm_s8_bt(out, a, b, M, K, N);
    CU_ASSERT_EQUAL(guard_broken(out, n_out), 0);
    CU_ASSERT_STRING_EQUAL(gemm_s8_kernel(), "portable");
    CU_ASSERT_EQUAL(count_wrong(out, ref, n_out, "gemm_s8_bt, portable forced", M, K, N), 0);
    restore_portable();

    if (gemm_cpu_has_vnni()) {
        for (int n = 0; n < N; n++) { // the correction term, summed here
            int32_t s = 0;
            for (int k = 0; k < K; k++) s += b[(size_t)n * K + k];
            sums[n] = s;
        }
        memset(out, 0x55, n_out * sizeof *out);
        fill_guard(out, n_out);
        CU_ASSERT_TRUE(gemm_s8_bt_vnni(out, a, b, sums, M, K, N));
        CU_ASSERT_EQUAL(count_wrong(out, ref, n_out, "vnni", M, K, N), 0);
        CU_ASSERT_EQUAL(guard_broken(out, n_out), 0); // nothing written past the end
        CU_ASSERT_EQUAL(memcmp(out, portable, n_out * sizeof *out), 0); // the same bits

        // b packed once, whole, as a weight is (Int8Weight::packed)
        const size_t bytes = gemm_s8_packed_bytes(N, K);
        CU_ASSERT_EQUAL(bytes, (size_t)((N + 31) / 32 * 32) * (size_t)((K + 3) / 4 * 4));
        int8_t *packed = malloc(bytes + 1);
        gemm_s8_pack_b(packed, b, N, K);
        memset(out, 0x55, n_out * sizeof *out);
        fill_guard(out, n_out);
        CU_ASSERT_TRUE(gemm_s8_bt_vnni_packed(out, a, packed, sums, M, K, N));
        CU_ASSERT_EQUAL(count_wrong(out, ref, n_out, "vnni, b packed once", M, K, N), 0);
        CU_ASSERT_EQUAL(guard_broken(out, n_out), 0);
        free(packed);

        gemm_lowp_set_portable(false); // the dispatching product on the CPU's path
        memset(out, 0x55, n_out * sizeof *out);
        gemm_s8_bt(out, a, b, M, K, N);
        CU_ASSERT_STRING_EQUAL(gemm_s8_kernel(), "avx512-vnni");
        CU_ASSERT_EQUAL(count_wrong(out, ref, n_out, "gemm_s8_bt, vnni", M, K, N), 0);
        restore_portable();
    }
    free(ref), free(portable), free(out), free(sums);
}

static void test_s8_paths_equal_the_triple_loop_on_odd_shapes(void) {
    Rng rng;
    rng_seed(&rng, 37);
    for (int s = 0; s < SHAPES; s++) {
        const int M = shapes[s][0], K = shapes[s][1], N = shapes[s][2];
        int8_t *a = malloc((size_t)M * K), *b = malloc((size_t)N * K);
        fill_s8(&rng, a, (size_t)M * K, -128, 127); // activations: all of int8
        fill_s8(&rng, b, (size_t)N * K, -127, 127); // weights: symmetric
        check_s8_paths(a, b, M, K, N);
        free(a), free(b);
    }
}

static void test_s8_paths_on_extreme_values(void) {
    // rows of −128 and 127 against rows of −127 and 127, every sign pairing,
    // and b's −128 too (the VNNI path's signed operand takes it)
    const int M = 5, K = 131, N = 6;
    const int8_t a_values[] = {-128, 127, -128, 127, 0}, b_values[] = {-127, 127, -128, 1, -1, 127};
    int8_t *a = malloc((size_t)M * K), *b = malloc((size_t)N * K);
    for (int m = 0; m < M; m++) memset(a + (size_t)m * K, (uint8_t)a_values[m], (size_t)K);
    for (int n = 0; n < N; n++) memset(b + (size_t)n * K, (uint8_t)b_values[n], (size_t)K);
    a[K - 1] = 127; // one odd term at the end of row 0: the masked tail counts it
    check_s8_paths(a, b, M, K, N);
    free(a), free(b);
}

static void test_accumulator_holds_vit_sums(void) {
    // the arithmetic: the largest product of two symmetric int8 is 127·127, and
    // with −128 allowed 128·128 = 2¹⁴; K = 3072 of them stay far below 2³¹
    const int64_t int32_limit = 2147483647;
    CU_ASSERT_TRUE((int64_t)127 * 127 * 768 < int32_limit);   // 12,387,072
    CU_ASSERT_TRUE((int64_t)127 * 127 * 3072 < int32_limit);  // 49,549,248
    CU_ASSERT_TRUE((int64_t)128 * 128 * 3072 < int32_limit);  // 50,331,648
    CU_ASSERT_TRUE((int64_t)128 * 128 * 131071 < int32_limit); // the longest sum gemm_lowp.h promises
    CU_ASSERT_FALSE((int64_t)128 * 128 * 131072 < int32_limit);
    // and the products: a row of −128 against rows of −127 and 127, K = 768 and 3072
    const int Ks[] = {768, 3072};
    for (int i = 0; i < 2; i++) {
        const int K = Ks[i];
        int8_t *a = malloc((size_t)K), *b = malloc(2 * (size_t)K);
        memset(a, 0x80, (size_t)K);                       // −128
        memset(b, 0x81, (size_t)K);                       // −127
        memset(b + K, 0x7f, (size_t)K);                   // 127
        const int64_t expected[2] = {128LL * 127 * K, -128LL * 127 * K}; // 49,938,432 for K = 3072
        int32_t out[2];
        force_portable();
        gemm_s8_bt(out, a, b, 1, K, 2);
        CU_ASSERT_EQUAL((int64_t)out[0], expected[0]);
        CU_ASSERT_EQUAL((int64_t)out[1], expected[1]);
        restore_portable();
        if (gemm_cpu_has_vnni()) {
            int32_t sums[2] = {-127 * K, 127 * K};
            out[0] = out[1] = 0;
            CU_ASSERT_TRUE(gemm_s8_bt_vnni(out, a, b, sums, 1, K, 2));
            CU_ASSERT_EQUAL((int64_t)out[0], expected[0]);
            CU_ASSERT_EQUAL((int64_t)out[1], expected[1]);
        }
        free(a), free(b);
    }
}

static void test_s8_empty_sum_is_zero(void) {
    // K = 0: nothing to add, every element 0, on every path
    const int8_t none[1] = {0};
    int32_t out[3 * 2];
    const int32_t sums[2] = {0, 0};
    memset(out, 0x55, sizeof out);
    gemm_s8_bt_portable(out, none, none, 3, 0, 2);
    for (int i = 0; i < 6; i++) CU_ASSERT_EQUAL(out[i], 0);
    if (gemm_cpu_has_vnni()) {
        memset(out, 0x55, sizeof out);
        CU_ASSERT_TRUE(gemm_s8_bt_vnni(out, none, none, sums, 3, 0, 2));
        for (int i = 0; i < 6; i++) CU_ASSERT_EQUAL(out[i], 0);
    }
}

static void test_s8_from_many_threads_at_once(void) {
    // each thread its own product on the CPU's path (inside a parallel region
    // the product runs on the calling thread), all equal to the triple loop
    enum { M = 40, K = 300, N = 401, CALLS = 8 }; // large enough to start threads of its own
    Rng rng;
    rng_seed(&rng, 4);
    int8_t *a = malloc((size_t)M * K), *b = malloc((size_t)N * K);
    fill_s8(&rng, a, (size_t)M * K, -128, 127);
    fill_s8(&rng, b, (size_t)N * K, -127, 127);
    int64_t *ref = malloc((size_t)M * N * sizeof *ref);
    int32_t *out = malloc((size_t)CALLS * M * N * sizeof *out);
    triple_loop_s8(ref, a, b, M, K, N);
    int wrong[CALLS] = {0};
#pragma omp parallel for num_threads(4) schedule(static, 1)
    for (int c = 0; c < CALLS; c++) {
        int32_t *mine = out + (size_t)c * M * N;
        gemm_s8_bt(mine, a, b, M, K, N);
        for (int i = 0; i < M * N; i++) wrong[c] += (int64_t)mine[i] != ref[i];
    }
    for (int c = 0; c < CALLS; c++) CU_ASSERT_EQUAL(wrong[c], 0);
    free(a), free(b), free(ref), free(out);
}

static void test_s8_row_sums(void) {
    const int8_t b[2 * 5] = {1, 2, 3, 4, 5, -128, 127, -127, 0, -1};
    int32_t sums[2];
    gemm_s8_row_sums(sums, b, 2, 5);
    CU_ASSERT_EQUAL(sums[0], 15);
    CU_ASSERT_EQUAL(sums[1], -129);
}

/* ------------------------------------------------------------ bf16 numbers */

static uint32_t float_bits(float x) {
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    return u;
}
static float float_of_bits(uint32_t u) {
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

static void test_bf16_rounds_to_nearest_even(void) {
    static const struct {
        uint32_t in;   // a float's bits
        uint16_t out;  // the bf16 expected
        const char *what;
    } cases[] = {
        {0x3F800000u, 0x3F80, "1.0, exact"},
        {0x3F808000u, 0x3F80, "1 + 2^-8: halfway between 1 and 1 + 2^-7, to the even 1"},
        {0x3F80C000u, 0x3F81, "1 + 3*2^-9: past halfway, up"},
        {0x3F818000u, 0x3F82, "1 + 3*2^-8: halfway above an odd bf16, up to the even one"},
        {0x3F807FFFu, 0x3F80, "just under halfway, down"},
        {0xBF808001u, 0xBF81, "-(just over halfway): away from zero"},
        {0x7F7F0000u, 0x7F7F, "the largest finite bf16, exact"},
        {0x7F7F7FFFu, 0x7F7F, "under half a step above it, down"},
        {0x7F7FFFFFu, 0x7F80, "the largest finite float: infinity"},
        {0x7F800000u, 0x7F80, "infinity"},
        {0xFF800000u, 0xFF80, "-infinity"},
        {0x80000000u, 0x8000, "-0.0 keeps its sign"},
        {0x00000000u, 0x0000, "+0.0"},
        {0x7FC00000u, 0x7FC0, "a quiet NaN"},
        {0x7F800001u, 0x7FC0, "a NaN whose set bits are all cut off stays a NaN"},
        {0xFFFFFFFFu, 0xFFFF, "a NaN with every bit set, not rounded up"},
        {0x00000001u, 0x0000, "the smallest subnormal float: zero"},
        {0x00010000u, 0x0001, "the smallest subnormal bf16, 2^-133, exact"},
        {0x00008000u, 0x0000, "half of it: to the even zero"},
        {0x00018000u, 0x0002, "one and a half of it: to the even two"},
        {0x007FFFFFu, 0x0080, "the largest subnormal float: up to the smallest normal"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const uint16_t got = bf16_from_float(float_of_bits(cases[i].in));
        if (got != cases[i].out)
            fprintf(stderr, "bf16 of 0x%08X (%s): 0x%04X, expected 0x%04X\n", cases[i].in,
                    cases[i].what, got, cases[i].out);
        CU_ASSERT_EQUAL(got, cases[i].out);
    }
    CU_ASSERT_TRUE(isnan(bf16_to_float(bf16_from_float(NAN))));
    CU_ASSERT_EQUAL(bf16_to_float(0x3F80), 1.0f);
    CU_ASSERT_EQUAL(bf16_to_float(0xC000), -2.0f);
    CU_ASSERT_EQUAL(bf16_to_float(0x7F7F), 0x1.FEp127f);
    CU_ASSERT_EQUAL(bf16_to_float(0x0001), 0x1p-133f);
}

static void test_every_bf16_survives_the_round_trip(void) {
    int wrong = 0;
    for (uint32_t h = 0; h <= 0xFFFF; h++) {
        const float x = bf16_to_float((uint16_t)h);
        if (float_bits(x) != h << 16) wrong++; // to float: a shift
        const bool nan = (h & 0x7FFF) > 0x7F80;
        const uint16_t back = bf16_from_float(x);
        if (nan ? !isnan(bf16_to_float(back)) : back != h) wrong++;
    }
    CU_ASSERT_EQUAL(wrong, 0);
    // the array forms are the same function
    const float x[3] = {1.0f, float_of_bits(0x3F818000u), -0.0f};
    uint16_t h[3];
    float back[3];
    bf16_from_floats(h, x, 3);
    bf16_to_floats(back, h, 3);
    CU_ASSERT_TRUE(h[0] == 0x3F80 && h[1] == 0x3F82 && h[2] == 0x8000);
    CU_ASSERT_TRUE(back[0] == 1.0f && float_bits(back[1]) == 0x3F820000u && float_bits(back[2]) == 0x80000000u);
}

/* ------------------------------------------------------------ bf16 product */

// The largest error, in units of the bound, of out against a double-precision
// product of the same bf16 values. Each product of two bf16 (8 significant
// bits each) is exact in float (24 bits); only the K − 1 float additions round,
// each by at most u = 2⁻²⁴ of a partial sum, so in any order
// |out − exact| ≤ K · u · Σ_k |a_k·b_k| (Higham's bound, γ_K ≈ K·u, rounded up).
static double worst_against_double(const float *out, const uint16_t *a, const uint16_t *b, int M,
                                   int K, int N) {
    double worst = 0.0;
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++) {
            double sum = 0.0, magnitude = 0.0;
            for (int k = 0; k < K; k++) {
                const double p = (double)bf16_to_float(a[(size_t)m * K + k]) *
                                 (double)bf16_to_float(b[(size_t)n * K + k]);
                sum += p, magnitude += fabs(p);
            }
            const double bound = (double)K * 0x1p-24 * magnitude + 1e-30;
            const double err = fabs((double)out[(size_t)m * N + n] - sum) / bound;
            worst = err > worst ? err : worst;
        }
    return worst;
}

static void test_bf16_product_within_a_float_sum_of_double(void) {
    Rng rng;
    rng_seed(&rng, 15);
    for (int s = 0; s < SHAPES; s++) {
        const int M = shapes[s][0], K = shapes[s][1], N = shapes[s][2];
        float *af = malloc((size_t)M * K * sizeof *af), *bf = malloc((size_t)N * K * sizeof *bf);
        uint16_t *a = malloc((size_t)M * K * sizeof *a), *b = malloc((size_t)N * K * sizeof *b);
        float *out = malloc((size_t)M * N * sizeof *out), *fast = malloc((size_t)M * N * sizeof *fast);
        rng_fill_uniform(&rng, af, (size_t)M * K, -1.0f, 1.0f);
        rng_fill_uniform(&rng, bf, (size_t)N * K, -1.0f, 1.0f);
        bf16_from_floats(a, af, (size_t)M * K);
        bf16_from_floats(b, bf, (size_t)N * K);

        force_portable();
        gemm_bf16_bt(out, a, b, M, K, N);
        CU_ASSERT_STRING_EQUAL(gemm_bf16_kernel(), "portable");
        const double worst = worst_against_double(out, a, b, M, K, N);
        if (worst > 1.0) fprintf(stderr, "bf16 portable %dx%dx%d: %.2f times the bound\n", M, K, N, worst);
        CU_ASSERT_TRUE(worst <= 1.0);
        restore_portable();

        if (gemm_cpu_has_bf16()) { // vdpbf16ps: also within the bound, so within 2 bounds of portable
            CU_ASSERT_TRUE(gemm_bf16_bt_avx512(fast, a, b, M, K, N));
            const double worst_fast = worst_against_double(fast, a, b, M, K, N);
            if (worst_fast > 1.0)
                fprintf(stderr, "bf16 avx512 %dx%dx%d: %.2f times the bound\n", M, K, N, worst_fast);
            CU_ASSERT_TRUE(worst_fast <= 1.0);
        }
        free(af), free(bf), free(a), free(b), free(out), free(fast);
    }
}

/* ------------------------------------------------------------ quantization */

static void test_quantize_a_row_by_hand(void) {
    // max |x| = 127: scale 1, so q is x rounded, ties to even (0.5 → 0, 1.5 → 2, 2.5 → 2)
    const float x[2][6] = {{127.0f, 0.5f, 1.5f, 2.5f, -0.5f, -126.6f},
                           {0.0f, 0.0f, 0.0f, 0.0f, 0.0f, 0.0f}};
    const int8_t expected[2][6] = {{127, 0, 2, 2, 0, -127}, {0, 0, 0, 0, 0, 0}};
    int8_t q[2][6];
    float scales[2];
    quantize_rows_s8(&q[0][0], scales, &x[0][0], 2, 6);
    CU_ASSERT_EQUAL(scales[0], 1.0f);
    CU_ASSERT_EQUAL(scales[1], 0.0f); // a row of zeros: scale 0, q 0
    CU_ASSERT_EQUAL(memcmp(q, expected, sizeof q), 0);
    // a row whose largest value is −2.54: scale 0.02, and −2.54 is −127
    const float y[4] = {-2.54f, 1.0f, 0.01f, 0.03f};
    int8_t qy[4];
    float sy;
    quantize_rows_s8(qy, &sy, y, 1, 4);
    CU_ASSERT_DOUBLE_EQUAL(sy, 0.02, 1e-8);
    CU_ASSERT_TRUE(qy[0] == -127 && qy[1] == 50 && qy[2] == 0 && qy[3] == 2); // 0.5 → 0, 1.5 → 2
}

// Rows of a (R,K) matrix whose ranges go from 10⁻³ to 10: row r is uniform in ±10^(r·4/(R−1) − 3).
static float *rows_of_many_ranges(Rng *rng, int R, int K) {
    float *x = malloc((size_t)R * K * sizeof *x);
    for (int r = 0; r < R; r++) {
        const float range = powf(10.0f, (float)r * 4.0f / (float)(R - 1) - 3.0f);
        rng_fill_uniform(rng, x + (size_t)r * K, (size_t)K, -range, range);
    }
    return x;
}

static void test_quantize_round_trip_within_half_a_step(void) {
    Rng rng;
    rng_seed(&rng, 8);
    const int R = 9, K = 333;
    float *x = rows_of_many_ranges(&rng, R, K), *back = malloc((size_t)R * K * sizeof *back);
    int8_t *q = malloc((size_t)R * K);
    float scales[9];
    quantize_rows_s8(q, scales, x, R, K);
    dequantize_rows_s8(back, q, scales, R, K);
    int wrong = 0, at_127 = 0;
    for (int r = 0; r < R; r++)
        for (int k = 0; k < K; k++) {
            const size_t i = (size_t)r * K + k;
            // half a step, and the float rounding of x / scale and q · scale
            if (fabsf(back[i] - x[i]) > scales[r] * (0.5f + 1e-5f)) wrong++;
            if (q[i] < -127) wrong++;
            at_127 += q[i] == 127 || q[i] == -127;
            if (back[i] != (float)q[i] * scales[r]) wrong++; // dequantize is q · scale, in float
        }
    CU_ASSERT_EQUAL(wrong, 0);
    CU_ASSERT_TRUE(at_127 >= R); // each row's largest value lands on ±127
    free(x), free(back), free(q);
}

static void test_per_channel_beats_per_tensor(void) {
    Rng rng;
    rng_seed(&rng, 9);
    const int R = 9, K = 256;
    float *x = rows_of_many_ranges(&rng, R, K), *back = malloc((size_t)R * K * sizeof *back);
    int8_t *q = malloc((size_t)R * K);
    float scales[9];
    double per_channel = 0.0, per_tensor = 0.0; // sums of squared errors
    quantize_rows_s8(q, scales, x, R, K);
    dequantize_rows_s8(back, q, scales, R, K);
    for (int i = 0; i < R * K; i++) per_channel += (double)(back[i] - x[i]) * (back[i] - x[i]);
    const float scale = quantize_tensor_s8(q, x, (size_t)R * K);
    for (int i = 0; i < R * K; i++) {
        const double e = (double)q[i] * scale - x[i];
        per_tensor += e * e;
    }
    // the per-tensor step is the widest row's (10/127), so the small rows all
    // become 0; per channel only the widest row has that step
    CU_ASSERT_TRUE(per_channel < per_tensor);
    CU_ASSERT_TRUE(per_channel < 0.5 * per_tensor);
    free(x), free(back), free(q);
}

static void test_linear_s8_against_integer_sums(void) {
    // x = qx · sx and w = qw · sw with power-of-two scales and a ±127 in each
    // row, so quantizing gives back qx and qw exactly; the layer must then be
    // (Σ qx·qw) · sx · sw + bias, the integer sum done here
    Rng rng;
    rng_seed(&rng, 42);
    const int R = 6, D = 77, O = 10;
    int8_t *qx = malloc((size_t)R * D), *qw = malloc((size_t)O * D);
    float *x = malloc((size_t)R * D * sizeof *x), *w = malloc((size_t)O * D * sizeof *w);
    float sx[6], sw[10], bias[10], out[6 * 10];
    fill_s8(&rng, qx, (size_t)R * D, -127, 127);
    fill_s8(&rng, qw, (size_t)O * D, -127, 127);
    for (int r = 0; r < R; r++) {
        qx[(size_t)r * D + r] = r % 2 ? 127 : -127;
        sx[r] = ldexpf(1.0f, -r - 3);
        for (int d = 0; d < D; d++) x[(size_t)r * D + d] = qx[(size_t)r * D + d] * sx[r];
    }
    for (int o = 0; o < O; o++) {
        qw[(size_t)o * D + o] = o % 2 ? -127 : 127;
        sw[o] = ldexpf(1.0f, -o % 4 - 5);
        bias[o] = (float)o - 4.5f;
        for (int d = 0; d < D; d++) w[(size_t)o * D + d] = qw[(size_t)o * D + d] * sw[o];
    }
    Int8Weight iw;
    int8_weight_quantize(&iw, w, O, D);
    CU_ASSERT_EQUAL(memcmp(iw.q, qw, (size_t)O * D), 0);
    for (int paths = 0; paths < 2; paths++) { // portable forced, then the CPU's
        gemm_lowp_set_portable(paths == 0);
        linear_s8(out, x, &iw, bias, R);
        for (int r = 0; r < R; r++)
            for (int o = 0; o < O; o++) {
                int64_t sum = 0;
                for (int d = 0; d < D; d++) sum += (int64_t)qx[(size_t)r * D + d] * qw[(size_t)o * D + d];
                const double expected = (double)sum * sx[r] * sw[o] + bias[o];
                CU_ASSERT_DOUBLE_EQUAL(out[r * O + o], expected, 1e-6 * (fabs(expected) + 1.0));
            }
    }
    gemm_lowp_set_portable(portable_before);
    linear_s8(out, x, &iw, NULL, 1); // no bias: the integer sum scaled, nothing added
    int64_t sum = 0;
    for (int d = 0; d < D; d++) sum += (int64_t)qx[d] * qw[d];
    CU_ASSERT_DOUBLE_EQUAL(out[0], (double)sum * sx[0] * sw[0], 1e-6 * (fabs((double)sum * sx[0] * sw[0]) + 1.0));
    int8_weight_free(&iw);
    CU_ASSERT_PTR_NULL(iw.q);
    free(qx), free(qw), free(x), free(w);
}

/* ------------------------------------------------------------ the paths */

// Does the kernel's own flag list (/proc/cpuinfo) name @p flag, e.g. "avx512_vnni"?
// What the CPU reports, read apart from lib's CPUID check so the two are held
// to each other; false where the file cannot be read (then lib must agree too,
// on a machine without those instructions, or the test says so).
static bool cpuinfo_has(const char *flag) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return false;
    char line[8192];
    bool found = false;
    while (!found && fgets(line, sizeof line, f)) {
        if (strncmp(line, "flags", 5) != 0) continue;
        for (char *w = strtok(strchr(line, ':') ? strchr(line, ':') + 1 : line, " \t\n");
             w && !found; w = strtok(NULL, " \t\n"))
            found = strcmp(w, flag) == 0;
        break; // every core lists the same flags
    }
    fclose(f);
    return found;
}

static void test_forced_portable_and_which_paths_ran(void) {
    const bool vnni = cpuinfo_has("avx512_vnni"), bf16 = cpuinfo_has("avx512_bf16");
    CU_ASSERT_EQUAL(gemm_cpu_has_vnni(), vnni); // lib's CPUID check against the kernel's list
    CU_ASSERT_EQUAL(gemm_cpu_has_bf16(), bf16);
    char line[160];
    force_portable();
    CU_ASSERT_TRUE(gemm_lowp_forced_portable());
    CU_ASSERT_STRING_EQUAL(gemm_s8_kernel(), "portable");
    CU_ASSERT_STRING_EQUAL(gemm_bf16_kernel(), "portable");
    gemm_lowp_describe(line, sizeof line);
    CU_ASSERT_TRUE(strncmp(line, "int8 portable", 13) == 0 && strstr(line, ", bf16 portable"));
    gemm_lowp_set_portable(false);
    CU_ASSERT_STRING_EQUAL(gemm_s8_kernel(), vnni ? "avx512-vnni" : "portable");
    CU_ASSERT_STRING_EQUAL(gemm_bf16_kernel(), bf16 ? "avx512-bf16" : "portable");
    gemm_lowp_describe(line, sizeof line);
    CU_ASSERT_TRUE(strstr(line, vnni ? "int8 avx512-vnni (vpdpbusd)"
                                                    : "int8 portable (no avx512_vnni on this CPU)") != NULL);
    CU_ASSERT_TRUE(strstr(line, bf16 ? "bf16 avx512-bf16 (vdpbf16ps)"
                                                    : "bf16 portable (no avx512_bf16 on this CPU)") != NULL);
    restore_portable();
    // a path the CPU lacks says so and leaves out alone
    int32_t out = 7;
    const int8_t one = 1;
    const int32_t sum = 1;
    CU_ASSERT_EQUAL(gemm_s8_bt_vnni(&out, &one, &one, &sum, 1, 1, 1), vnni);
    CU_ASSERT_EQUAL(out, vnni ? 1 : 7);
    float fout = 7.0f;
    const uint16_t h = 0x3F80;
    CU_ASSERT_EQUAL(gemm_bf16_bt_avx512(&fout, &h, &h, 1, 1, 1), bf16);
    CU_ASSERT_EQUAL(fout, bf16 ? 1.0f : 7.0f);
    fprintf(stderr, "gemm_lowp: %s\n", line);
}

CU_TestInfo tests_gemm_lowp[] = {
    {"int8 paths equal the triple loop on odd shapes", test_s8_paths_equal_the_triple_loop_on_odd_shapes},
    {"int8 paths on extreme values", test_s8_paths_on_extreme_values},
    {"the 32-bit accumulator holds ViT's sums", test_accumulator_holds_vit_sums},
    {"an empty int8 sum is zero", test_s8_empty_sum_is_zero},
    {"int8 products from many threads at once", test_s8_from_many_threads_at_once},
    {"int8 row sums", test_s8_row_sums},
    {"bf16 rounds to nearest even", test_bf16_rounds_to_nearest_even},
    {"every bf16 survives the round trip", test_every_bf16_survives_the_round_trip},
    {"bf16 product within a float sum of double", test_bf16_product_within_a_float_sum_of_double},
    {"quantize a row by hand", test_quantize_a_row_by_hand},
    {"quantize round trip within half a step", test_quantize_round_trip_within_half_a_step},
    {"per channel beats per tensor", test_per_channel_beats_per_tensor},
    {"int8 linear against integer sums", test_linear_s8_against_integer_sums},
    {"forced portable, and which paths ran", test_forced_portable_and_which_paths_ran},
    CU_TEST_INFO_NULL,
};
