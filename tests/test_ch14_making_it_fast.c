/**
 * @file test_ch14_making_it_fast.c
 * @brief Chapter 14 against PyTorch, and every teaching step of gemm_steps.h
 *        against matmul_naive() on shapes that fit no block.
 *
 * `build/tests/run ch14_making_it_fast` grades a student's matmul_blocked()
 * too (exercise 14): the chapter and the tests below call lib's version, or
 * whatever replaced lib/gemm/gemm_blocked.c at link time.
 *
 * The sizes 1, 7, 33, 65, 130, 300 and 530 are multiples of none of the block
 * sizes (64 rows, 128 values of k, 512 columns, a 4 × 8 tile), so every
 * product ends in blocks and tiles cut short by the edge. The reference is
 * matmul_naive(), itself held to PyTorch by the gemm suite; the chapter's
 * golden holds every step to torch.matmul in float64 directly.
 *
 * The chapter's own arithmetic is pinned too: which verdict a set of speed
 * ratios gets (speed_compare()), the peak on paper, and the first-to-fastest
 * figure over every row of the ladder.
 *
 * The two probes are exercise 14's diagnosis: when
 * matmul_blocked() is wrong they compute what each likely mistake gives (the
 * blocks cut short skipped, a block's column offset forgotten, out never
 * zeroed or zeroed again for every block of k) and name the one that matches
 * with check_hint().
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../chapters/chapters.h"
#include "check.h"
#include "gemm/gemm.h"
#include "gemm/gemm_steps.h"
#include "hints.h"
#include "base/rng.h"

typedef void StepFn(float *out, const float *a, const float *b, int M, int K, int N);

static const int SIZES[] = {1, 7, 33, 65, 130};
enum { N_SIZES = sizeof SIZES / sizeof SIZES[0] };

// Larger shapes that cross the k and column blocks too (K > 128 and 256, N > 512).
static const int LARGE[][3] = {{70, 300, 530}, {129, 257, 1030}, {3, 129, 513}};
enum { N_LARGE = sizeof LARGE / sizeof LARGE[0] };

/** One product's operands and both results, (M,K) · (K,N). */
typedef struct {
    int M, K, N;
    Tensor a, b, want, got;
} Product;

static Product product_new(int M, int K, int N, uint64_t seed) {
    Product p = {M, K, N, tensor_new(2, M, K), tensor_new(2, K, N), tensor_new(2, M, N),
                 tensor_new(2, M, N)};
    Rng rng;
    rng_seed(&rng, seed);
    rng_fill_uniform(&rng, p.a.data, p.a.numel, -1.0f, 1.0f);
    rng_fill_uniform(&rng, p.b.data, p.b.numel, -1.0f, 1.0f);
    // independent: matmul_naive() is held to PyTorch by the gemm suite
    matmul_naive(p.want.data, p.a.data, p.b.data, M, K, N);
    return p;
}

static void product_free(Product *p) {
    tensor_free(&p->a), tensor_free(&p->b), tensor_free(&p->want), tensor_free(&p->got);
}

// Float sums of K terms in another order: a few units in the last place of each.
static bool step_matches(StepFn *step, const char *name, Product *p) {
    for (size_t i = 0; i < p->got.numel; i++) p->got.data[i] = NAN; // every entry must be written
    step(p->got.data, p->a.data, p->b.data, p->M, p->K, p->N);
    char label[96];
    snprintf(label, sizeof label, "%s vs matmul_naive, (%d, %d) · (%d, %d)", name, p->M, p->K,
             p->K, p->N);
    return assert_tensor_close(&p->got, &p->want, 1e-5f * (float)p->K, 1e-5f, label);
}

// Every combination of SIZES, then LARGE; stops at the first failure (one report).
static void check_step(StepFn *step, const char *name) {
    uint64_t seed = 1400;
    for (int i = 0; i < N_SIZES; i++)
        for (int k = 0; k < N_SIZES; k++)
            for (int j = 0; j < N_SIZES; j++) {
                Product p = product_new(SIZES[i], SIZES[k], SIZES[j], seed++);
                bool ok = step_matches(step, name, &p);
                product_free(&p);
                if (!ok) return;
            }
    for (int s = 0; s < N_LARGE; s++) {
        Product p = product_new(LARGE[s][0], LARGE[s][1], LARGE[s][2], seed++);
        bool ok = step_matches(step, name, &p);
        product_free(&p);
        if (!ok) return;
    }
}

static void test_chapter_matches_pytorch(void) {
    check_chapter_against_golden(chapter14_run, "ch14_making_it_fast.safetensors");
}

static void test_ikj_equals_naive(void) { check_step(matmul_ikj, "matmul_ikj"); }
static void test_blocked_equals_naive(void) { check_step(matmul_blocked, "matmul_blocked"); }
static void test_packed_equals_naive(void) { check_step(matmul_packed, "matmul_packed"); }

static void test_empty_sum_is_zero(void) {
    // K = 0: every entry is an empty sum, 0, whatever out held before
    StepFn *steps[] = {matmul_ikj, matmul_blocked, matmul_packed};
    for (int s = 0; s < 3; s++) {
        float out[3 * 5], a[1] = {0}, b[1] = {0};
        for (int i = 0; i < 15; i++) out[i] = 7.0f;
        steps[s](out, a, b, 3, 0, 5);
        for (int i = 0; i < 15; i++) CU_ASSERT_EQUAL(out[i], 0.0f);
    }
}

/* -------------------------------------------------------------- the probes */

// The mistakes a blocked loop can make, each on its own.
enum {
    SKIP_EDGE_M = 1,  // `ic + MC <= M`: the rows of a block cut short never computed
    SKIP_EDGE_K = 2,  // the same for the last, short block of k
    SKIP_EDGE_N = 4,  // the same for the columns
    NO_B_OFFSET = 8,  // b + k·N instead of b + k·N + jc: every column block reads b's first
    NO_OUT_OFFSET = 16, // out + i·N instead of out + i·N + jc: every block adds into the first
    NO_ZERO = 32,     // out never zeroed: the product is added to what it held
    ZERO_PER_K = 64,  // out's block zeroed for every block of k: only the last one counts
};

// The blocked product with some of the mistakes above, in double, added to out's old values
// only with NO_ZERO. (A "skipped" block leaves out as the zeroing left it.)
static void blocked_with(float *out, const float *a, const float *b, int M, int K, int N,
                         int mistakes) {
    enum { MC = GEMM_STEP_MC, KC = GEMM_STEP_KC, NC = GEMM_STEP_NC };
    if (!(mistakes & NO_ZERO)) memset(out, 0, sizeof(float) * M * N);
    for (int jc = 0; jc < N; jc += NC) {
        const int nc = N - jc < NC ? N - jc : NC;
        if ((mistakes & SKIP_EDGE_N) && nc < NC) continue;
        for (int pc = 0; pc < K; pc += KC) {
            const int kc = K - pc < KC ? K - pc : KC;
            if ((mistakes & SKIP_EDGE_K) && kc < KC) continue;
            for (int ic = 0; ic < M; ic += MC) {
                const int mc = M - ic < MC ? M - ic : MC;
                if ((mistakes & SKIP_EDGE_M) && mc < MC) continue;
                for (int i = ic; i < ic + mc; i++) {
                    float *row = out + (size_t)i * N + (mistakes & NO_OUT_OFFSET ? 0 : jc);
                    if (mistakes & ZERO_PER_K) memset(row, 0, sizeof(float) * nc);
                    for (int j = 0; j < nc; j++) {
                        double sum = 0;
                        for (int k = pc; k < pc + kc; k++)
                            sum += (double)a[(size_t)i * K + k] *
                                   b[(size_t)k * N + (mistakes & NO_B_OFFSET ? 0 : jc) + j];
                        row[j] += (float)sum;
                    }
                }
            }
        }
    }
}

// The mistakes worth naming, and what to say.
static const struct {
    int mistakes;
    const char *hint;
} SUSPECTS[] = {
    {NO_ZERO, "out is never zeroed: each block adds its part of the sums, so out must start "
              "at 0 (memset(out, 0, M*N*sizeof(float)) before the loops); yours added the "
              "product to what out held"},
    {ZERO_PER_K, "out is zeroed again for every block of k, so only the last block of k "
                 "(the last KC values of k) is summed: zero out once, before all the loops"},
    {SKIP_EDGE_M | SKIP_EDGE_K | SKIP_EDGE_N,
     "the blocks cut short by the edge are skipped, in rows, k and columns: loop while "
     "ic < M (not ic + MC <= M) and cut the last block to mc = min(MC, M - ic), and the "
     "same for k and the columns"},
    {SKIP_EDGE_M, "the last block of rows, cut short by the edge, is skipped: loop while "
                  "ic < M and cut it to mc = min(MC, M - ic)"},
    {SKIP_EDGE_K, "the last block of k, cut short by the edge, is skipped: loop while pc < K "
                  "and cut it to kc = min(KC, K - pc)"},
    {SKIP_EDGE_N, "the last block of columns, cut short by the edge, is skipped: loop while "
                  "jc < N and cut it to nc = min(NC, N - jc)"},
    {NO_B_OFFSET, "every block of columns reads b's first columns: the block starting at "
                  "column jc reads row k of b from b + k*N + jc"},
    {NO_OUT_OFFSET, "every block of columns is added into out's first columns: the block "
                    "starting at column jc writes row i of out from out + i*N + jc"},
};
enum { N_SUSPECTS = sizeof SUSPECTS / sizeof SUSPECTS[0] };

// Runs matmul_blocked on out prefilled with `before`; on a mismatch names the mistake.
static void probe_blocked(int M, int K, int N, uint64_t seed, const char *what) {
    const float before = 1000.0f; // what out holds before the call: not 0, not NaN
    Product p = product_new(M, K, N, seed);
    for (size_t i = 0; i < p.got.numel; i++) p.got.data[i] = before;
    matmul_blocked(p.got.data, p.a.data, p.b.data, M, K, N);
    if (assert_tensor_close(&p.got, &p.want, 1e-5f * (float)K, 1e-5f, what)) {
        product_free(&p);
        return;
    }
    bool named = false;
    if (hint_all_zero(p.got.data, p.got.numel)) {
        check_hint("matmul_blocked wrote only zeros: is the exercise's placeholder still "
                   "there? (Or are the blocks cut short by the edge skipped? This product %s.)",
                   M < GEMM_STEP_MC && K < GEMM_STEP_KC && N < GEMM_STEP_NC
                       ? "is smaller than one block, so its only block is cut short"
                       : "has whole blocks too, so that alone would not give zeros");
        named = true;
    }
    Tensor maybe = tensor_new(2, M, N);
    for (int s = 0; s < N_SUSPECTS && !named; s++) {
        for (size_t i = 0; i < maybe.numel; i++) maybe.data[i] = before;
        blocked_with(maybe.data, p.a.data, p.b.data, M, K, N, SUSPECTS[s].mistakes);
        if (tensor_near(&p.got, &maybe, 1e-3f, 1e-5f)) {
            check_hint("%s", SUSPECTS[s].hint);
            named = true;
        }
    }
    if (!named)
        check_hint("out[ic:+mc, jc:+nc] += a[ic:+mc, pc:+kc] * b[pc:+kc, jc:+nc] for every "
                   "block, with out zeroed once before: row i of the block adds a[i][k] * "
                   "b[k][jc + j] to out[i][jc + j] for k in pc..pc+kc-1 and j < nc");
    tensor_free(&maybe);
    product_free(&p);
}

static void test_probe_one_block(void) {
    // smaller than every block: only the zeroing and the ikj sums can be wrong
    probe_blocked(5, 7, 9, 1441, "matmul_blocked on one block, (5, 7) · (7, 9)");
}

static void test_probe_every_edge(void) {
    // 70 = 64 + 6 rows, 300 = 2·128 + 44 values of k, 530 = 512 + 18 columns
    probe_blocked(70, 300, 530, 1442,
                  "matmul_blocked across every block edge, (70, 300) · (300, 530)");
}

/* ------------------------------------------- the chapter's verdicts and figures */

// Which words speed_compare() prints for a set of speed ratios, one per round.
static void test_verdict_words(void) {
    static const struct {
        double ratios[5];
        int n;
        SpeedVerdict verdict;
        const char *words; // must appear in the sentence
        const char *not_words; // must not
    } CASES[] = {
        {{7.1, 7.8, 8.3, 7.5, 7.9}, 5, SPEED_FASTER, "7.8 times faster than", "noisy"},
        {{1.2, 1.3, 1.25, 1.4, 1.3}, 5, SPEED_FASTER, "30% faster than", "slower"},
        {{1.1, 1.1, 1.1, 1.1, 1.1}, 5, SPEED_FASTER, "faster than", "noisy"}, // on the margin
        {{0.2, 0.25, 0.3, 0.27, 0.26}, 5, SPEED_SLOWER, "3.8 times slower than", "faster"},
        {{0.8, 0.85, 0.9, 0.88, 0.87}, 5, SPEED_SLOWER, "13% slower than", "faster"},
        {{0.95, 1.0, 1.05, 1.02, 0.98}, 5, SPEED_SAME, "about as fast as", "noisy"},
        {{0.11, 1.76, 0.43, 0.5, 0.4}, 5, SPEED_NOISY, "too noisy to tell", "times"},
        {{1.05, 1.3, 1.2, 1.25, 1.22}, 5, SPEED_NOISY, "too noisy to tell", "faster than"},
        {{0.6, 0.85, 0.8, 0.88, 0.95}, 5, SPEED_NOISY, "too noisy to tell", "slower than"},
        {{1.09, 1.2, 1.3, 1.3, 1.3}, 5, SPEED_NOISY, "every round was faster, but", "faster than"},
        {{0.77, 0.94, 0.8, 0.8, 0.85}, 5, SPEED_NOISY, "every round was slower, but", "slower than"},
        {{0.9, 1.2, 1.0, 1.0, 1.0}, 5, SPEED_NOISY, "some rounds were faster and some slower",
         "about as fast as"},
        {{2.0}, 1, SPEED_FASTER, "2.0 times faster than", "noisy"},
    };
    for (size_t i = 0; i < sizeof CASES / sizeof CASES[0]; i++) {
        char buf[512];
        const SpeedVerdict v =
            speed_compare(buf, sizeof buf, CASES[i].ratios, CASES[i].n, "it was", "the other");
        if (v != CASES[i].verdict || !strstr(buf, CASES[i].words) ||
            strstr(buf, CASES[i].not_words))
            fprintf(stderr, "\n    case %zu: verdict %d (want %d), \"%s\"\n", i, (int)v,
                    (int)CASES[i].verdict, buf);
        CU_ASSERT_EQUAL(v, CASES[i].verdict);
        CU_ASSERT_PTR_NOT_NULL(strstr(buf, CASES[i].words));
        CU_ASSERT_PTR_NULL(strstr(buf, CASES[i].not_words));
    }
}

// The range and the median it reports are the rounds' own.
static void test_verdict_range(void) {
    const double r[5] = {1.4, 0.9, 1.2, 2.0, 1.1};
    double lo, mid, hi;
    CU_ASSERT_EQUAL(speed_verdict(r, 5, &lo, &mid, &hi), SPEED_NOISY);
    CU_ASSERT_DOUBLE_EQUAL(lo, 0.9, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(mid, 1.2, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(hi, 2.0, 1e-12);
    char buf[512];
    speed_compare(buf, sizeof buf, r, 5, "it was", "the other");
    CU_ASSERT_PTR_NOT_NULL(strstr(buf, "from 0.90 to 2.00 (median 1.20)"));
}

// cores × GHz × FMA units × lanes × 2.
static void test_peak_on_paper(void) {
    CU_ASSERT_DOUBLE_EQUAL(ch14_theoretical_gflops(2, 2.6, 2, 8), 166.4, 1e-9);  // AVX2
    CU_ASSERT_DOUBLE_EQUAL(ch14_theoretical_gflops(8, 3.0, 2, 16), 1536.0, 1e-9); // AVX-512
    CU_ASSERT_DOUBLE_EQUAL(ch14_theoretical_gflops(1, 1.0, 1, 4), 8.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(ch14_theoretical_gflops(4, 0.0, 2, 8), 0.0, 0); // no clock, no peak
}

// The first row over the fastest row of the same table, every row counted.
static void test_first_to_fastest(void) {
    // the one-thread row (the 5th) is the fastest, as on a busy machine
    const double t[7] = {145.40, 18.61, 12.15, 8.02, 4.06, 14.99, 8.44};
    double lo = t[0], hi = t[0];
    for (int i = 1; i < 7; i++) {
        if (t[i] < lo) lo = t[i];
        if (t[i] > hi) hi = t[i];
    }
    CU_ASSERT_DOUBLE_EQUAL(ch14_first_to_fastest(t, 7), hi / lo, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(ch14_first_to_fastest(t, 7), 145.40 / 4.06, 1e-12);
    const double last[3] = {10, 5, 2}; // the last row the fastest
    CU_ASSERT_DOUBLE_EQUAL(ch14_first_to_fastest(last, 3), 5.0, 1e-12);
    const double one[1] = {3};
    CU_ASSERT_DOUBLE_EQUAL(ch14_first_to_fastest(one, 1), 1.0, 1e-12);
}

CU_TestInfo tests_ch14_making_it_fast[] = {
    {"chapter matches PyTorch golden", test_chapter_matches_pytorch},
    {"matmul_ikj equals matmul_naive on odd shapes", test_ikj_equals_naive},
    {"matmul_blocked equals matmul_naive on odd shapes", test_blocked_equals_naive},
    {"matmul_packed equals matmul_naive on odd shapes", test_packed_equals_naive},
    {"an empty sum (K = 0) is zero", test_empty_sum_is_zero},
    {"probe: matmul_blocked, one block", test_probe_one_block},
    {"probe: matmul_blocked, every block edge crossed", test_probe_every_edge},
    {"the verdict on a comparison: faster, slower, about as fast, too noisy", test_verdict_words},
    {"the verdict reports the rounds' range and median", test_verdict_range},
    {"the peak on paper: cores x GHz x FMA units x lanes x 2", test_peak_on_paper},
    {"first line to fastest: the table's first row over its fastest", test_first_to_fastest},
    CU_TEST_INFO_NULL,
};
