/**
 * @file test_attention_distance.c
 * @brief attention_by_distance() (lib/explain/attention_distance.c): a case
 *        small enough to check by hand, and what it promises on any input.
 *
 *  - By hand: [cls] and a 2 × 2 grid, one head uniform (1/5 everywhere) and
 *    one that reads only its own patch, and one whose patch queries read only
 *    [cls] (mean distance 0: no weight on any patch).
 *  - On random softmax rows (a 1 + 3 × 5 grid, 3 heads): each head's bins sum
 *    to 1, and the weight within distance r equals the weight that
 *    attention_mask_window() keeps for the patch queries, for every r.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdlib.h>

#include "attention/attention.h"
#include "base/rng.h"
#include "explain/attention_distance.h"
#include "ops/ops.h"

#define CLOSE(a, b) CU_ASSERT_DOUBLE_EQUAL((a), (b), 1e-6)

static void test_by_hand(void) {
    enum { H = 3, N = 5, BINS = 3 }; // [cls] + 2 × 2 patches; distances 0 and 1
    CU_ASSERT_EQUAL(attention_distance_bins(2, 2), BINS);
    float probs[H * N * N] = {0};
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            probs[(0 * N + i) * N + j] = 0.2f;                // uniform
            probs[(1 * N + i) * N + j] = i == j ? 1.0f : 0.0f; // itself only
            probs[(2 * N + i) * N + j] = j == 0 ? 1.0f : 0.0f; // [cls] only
        }
    double mass[H * BINS], distance[H];
    attention_by_distance(mass, distance, probs, H, 1, 2, 2);
    // uniform: [cls] 1/5, its own patch 1/5, the other three (all 1 away) 3/5;
    // from a corner of a 2 × 2 grid the patches are 0, 1, 1 and √2 away
    CLOSE(mass[0], 0.2);
    CLOSE(mass[1], 0.2);
    CLOSE(mass[2], 0.6);
    CLOSE(distance[0], (2 + sqrt(2.0)) / 4);
    CLOSE(mass[BINS + 0], 0.0);
    CLOSE(mass[BINS + 1], 1.0);
    CLOSE(mass[BINS + 2], 0.0);
    CLOSE(distance[1], 0.0);
    CLOSE(mass[2 * BINS + 0], 1.0);
    CLOSE(mass[2 * BINS + 1], 0.0);
    CLOSE(distance[2], 0.0);
}

static void test_sums_and_windows(void) {
    enum { H = 3, PREFIX = 1, ROWS = 3, COLS = 5, N = PREFIX + ROWS * COLS };
    const int bins = attention_distance_bins(ROWS, COLS);
    CU_ASSERT_EQUAL(bins, 6);
    float probs[H * N * N], mask[N * N];
    Rng rng;
    rng_seed(&rng, 7);
    rng_fill_normal(&rng, probs, H * N * N, 0.0f, 2.0f);
    softmax(probs, probs, H * N, N);
    double mass[H * 6], distance[H];
    attention_by_distance(mass, distance, probs, H, PREFIX, ROWS, COLS);
    for (int h = 0; h < H; h++) {
        double total = 0;
        for (int b = 0; b < bins; b++) total += mass[h * bins + b];
        CLOSE(total, 1.0);
        CU_ASSERT(distance[h] > 0 && distance[h] < sqrt(2.0 * 4 * 4));
    }
    for (int r = 0; r < bins - 1; r++) {
        attention_mask_window(mask, PREFIX, ROWS, COLS, r);
        for (int h = 0; h < H; h++) {
            double kept = 0, within = 0;
            for (int i = PREFIX; i < N; i++)
                for (int j = 0; j < N; j++)
                    if (mask[i * N + j] == 0.0f) kept += probs[(h * N + i) * N + j];
            for (int b = 0; b <= 1 + r; b++) within += mass[h * bins + b];
            CLOSE(within, kept / (ROWS * COLS));
        }
    }
}

CU_TestInfo tests_attention_distance[] = {
    {"by hand: uniform, itself only, [cls] only", test_by_hand},
    {"random rows: bins sum to 1, windows keep what attention_mask_window() keeps",
     test_sums_and_windows},
    CU_TEST_INFO_NULL,
};
