/**
 * @file test_ch03_softmax.c
 * @brief Chapter 03 against PyTorch, and the softmax claims it makes.
 *
 * `build/tests/run ch03_softmax` grades a student's own softmax() too: the
 * claims below call lib's softmax() (or whatever replaced it at link time).
 *
 * The probes at the end are exercise 03's diagnosis: each calls softmax() on
 * the chapter's PyTorch rows (tests/golden/ch03_softmax.safetensors) or on
 * rows whose answer ops.h fixes (masked, NaN, +inf), and when the result is
 * wrong compares it with what each likely mistake gives (the textbook formula
 * without the maximum, the wrong axis, a sum or a maximum carried from row to
 * row, a fully masked row left to 0/0, a partly masked one left undivided),
 * naming the one that matches with check_hint().
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "../chapters/chapters.h"
#include "check.h"
#include "ops/ops.h"
#include "base/trace.h"

// Run the chapter silently, keeping a copy of every value it pins.
static void record_chapter(TraceRecorder *rec) {
    *rec = (TraceRecorder){0};
    Chapter ch = {.out = NULL, .pin = trace_record, .pin_user = rec};
    chapter03_run(&ch);
}

static double row_sum(const float *p, int n) {
    double s = 0;
    for (int j = 0; j < n; j++) s += p[j];
    return s;
}

static void test_chapter_matches_pytorch(void) {
    check_chapter_against_golden(chapter03_run, "ch03_softmax.safetensors");
}

static void test_weights_are_positive_and_sum_to_one(void) {
    float x[5] = {2.0f, 1.0f, 0.1f, -1.0f, -7.5f}, p[5];
    softmax(p, x, 1, 5);
    for (int j = 0; j < 5; j++) CU_ASSERT(p[j] > 0.0f && p[j] < 1.0f);
    for (int j = 1; j < 5; j++) CU_ASSERT(p[j] < p[j - 1]); // order kept
    CU_ASSERT_DOUBLE_EQUAL(row_sum(p, 5), 1.0, 1e-6);
}

static void test_huge_scores_do_not_overflow(void) {
    // the chapter's row moved by ±1000: finite, and equal to the unshifted answer
    float x[4] = {2.0f, 1.0f, 0.1f, -1.0f}, big[4], small[4];
    float p[4], p_big[4], p_small[4];
    for (int j = 0; j < 4; j++) {
        big[j] = x[j] + 1000.0f;
        small[j] = x[j] - 1000.0f;
    }
    softmax(p, x, 1, 4);
    softmax(p_big, big, 1, 4);
    softmax(p_small, small, 1, 4);
    for (int j = 0; j < 4; j++) {
        CU_ASSERT(isfinite(p_big[j]) && isfinite(p_small[j]));
        CU_ASSERT_DOUBLE_EQUAL(p_big[j], p[j], 1e-4); // 1000.1 is not exact in float32
        CU_ASSERT_DOUBLE_EQUAL(p_small[j], p[j], 1e-4);
    }
}

static void test_textbook_formula_overflows(void) {
    TraceRecorder rec;
    record_chapter(&rec);
    const Tensor *exps = trace_find(&rec, "exp_x_big_naive");
    const Tensor *naive = trace_find(&rec, "p_big_naive");
    const Tensor *stable = trace_find(&rec, "p_big");
    CU_ASSERT_PTR_NOT_NULL_FATAL(exps);
    CU_ASSERT_PTR_NOT_NULL_FATAL(naive);
    CU_ASSERT_PTR_NOT_NULL_FATAL(stable);
    for (size_t j = 0; j < naive->numel; j++) {
        CU_ASSERT(isinf(exps->data[j]));
        CU_ASSERT(isnan(naive->data[j]));
        CU_ASSERT(isfinite(stable->data[j]));
    }
    trace_recorder_free(&rec);
}

static void test_fully_masked_row_gives_zeros_not_nan(void) {
    float x[2 * 3] = {-INFINITY, -INFINITY, -INFINITY,  // fully masked
                      0.5f, -INFINITY, 0.5f};           // partly masked
    float p[2 * 3];
    softmax(p, x, 2, 3);
    for (int j = 0; j < 3; j++) CU_ASSERT_EQUAL(p[j], 0.0f); // not NaN
    CU_ASSERT_DOUBLE_EQUAL(p[3], 0.5, 1e-7);
    CU_ASSERT_EQUAL(p[4], 0.0f);
    CU_ASSERT_DOUBLE_EQUAL(p[5], 0.5, 1e-7);
}

static void test_masked_entries_are_exactly_zero(void) {
    TraceRecorder rec;
    record_chapter(&rec);
    const Tensor *padded = trace_find(&rec, "p_padded");
    const Tensor *causal = trace_find(&rec, "p_causal");
    CU_ASSERT_PTR_NOT_NULL_FATAL(padded);
    CU_ASSERT_PTR_NOT_NULL_FATAL(causal);
    int n = padded->shape[0];
    for (int i = 0; i < n; i++) {
        CU_ASSERT_EQUAL(padded->data[i * n + (n - 1)], 0.0f); // the padding key
        for (int j = i + 1; j < n; j++) CU_ASSERT_EQUAL(causal->data[i * n + j], 0.0f);
        CU_ASSERT_DOUBLE_EQUAL(row_sum(&padded->data[i * n], n), 1.0, 1e-6);
        CU_ASSERT_DOUBLE_EQUAL(row_sum(&causal->data[i * n], n), 1.0, 1e-6);
    }
    CU_ASSERT_EQUAL(causal->data[0], 1.0f); // token 0 sees only itself
    trace_recorder_free(&rec);
}

static void test_query_with_nothing_to_see_takes_nothing(void) {
    // the chapter's "earlier keys only" mask hides every key from query 0
    TraceRecorder rec;
    record_chapter(&rec);
    const Tensor *mask = trace_find(&rec, "earlier_mask");
    const Tensor *naive = trace_find(&rec, "p_earlier_naive");
    const Tensor *p = trace_find(&rec, "p_earlier");
    CU_ASSERT_PTR_NOT_NULL_FATAL(mask);
    CU_ASSERT_PTR_NOT_NULL_FATAL(naive);
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    int n = p->shape[0];
    for (int j = 0; j < n; j++) {
        CU_ASSERT(isinf(mask->data[j]) && mask->data[j] < 0); // row 0: all -inf
        CU_ASSERT(isnan(naive->data[j]));                     // 0 / 0
        CU_ASSERT_EQUAL(p->data[j], 0.0f);                    // lib: zeros
    }
    for (int i = 1; i < n; i++) { // the other rows are ordinary distributions
        CU_ASSERT_DOUBLE_EQUAL(row_sum(&p->data[i * n], n), 1.0, 1e-6);
        for (int j = i; j < n; j++) CU_ASSERT_EQUAL(p->data[i * n + j], 0.0f);
    }
    trace_recorder_free(&rec);
}

static void test_temperature_sharpens_and_flattens(void) {
    TraceRecorder rec;
    record_chapter(&rec);
    const char *names[] = {"p_t0_1", "p_t0_5", "p_t1", "p_t2", "p_t10"}; // T ascending
    float previous_top = 2.0f;
    for (int i = 0; i < 5; i++) {
        const Tensor *p = trace_find(&rec, names[i]);
        CU_ASSERT_PTR_NOT_NULL_FATAL(p);
        CU_ASSERT(p->data[0] < previous_top); // hotter: the top score wins less
        previous_top = p->data[0];
        CU_ASSERT_DOUBLE_EQUAL(row_sum(p->data, 4), 1.0, 1e-6);
    }
    const Tensor *cold = trace_find(&rec, "p_t0_1"), *hot = trace_find(&rec, "p_t10");
    CU_ASSERT(cold->data[0] > 0.999f);                // almost a hard max
    for (int j = 0; j < 4; j++) CU_ASSERT(fabsf(hot->data[j] - 0.25f) < 0.05f); // almost uniform
    trace_recorder_free(&rec);
}

static void test_softmax_in_place(void) {
    // ops.h allows out == x
    float x[3] = {1.0f, 2.0f, 3.0f}, expected[3];
    // independent: a property (in place = out of place); the golden pins the values
    softmax(expected, x, 1, 3);
    softmax(x, x, 1, 3);
    for (int j = 0; j < 3; j++) CU_ASSERT_EQUAL(x[j], expected[j]);
}

/* -------------------------------------------------------------- the probes */

static Tensor chapter_golden(const char *name) {
    return golden_tensor("ch03_softmax.safetensors", name);
}

static void fill_nan(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = NAN;
}

// Sum of row r (or column c) of a (rows, cols) matrix, in double.
static double sum_row(const float *p, int cols, int r) { return row_sum(p + (size_t)r * cols, cols); }
static double sum_col(const float *p, int rows, int cols, int c) {
    double s = 0;
    for (int r = 0; r < rows; r++) s += p[(size_t)r * cols + c];
    return s;
}

// Softmax of each row the way a mistake would compute it, in double, into out (rows, cols):
// COLUMNS normalises down each column, GLOBAL over the whole matrix at once, SUM_CARRIED
// divides row r by the sum of rows 0…r (a sum never reset), UNNORMALISED leaves e^(x - max),
// MASKED_UNDIVIDED leaves it so only in the rows that hold a -inf (the division skipped there).
enum { COLUMNS = 1, GLOBAL = 2, SUM_CARRIED = 4, UNNORMALISED = 8, MASKED_UNDIVIDED = 16 };

// Where element k of line l (a row, a column or the whole matrix, of len elements) is.
static size_t line_at(int how, int cols, int len, int l, int k) {
    return how & COLUMNS ? (size_t)k * cols + l : (size_t)l * len + k;
}

static void softmax_like(float *out, const float *x, int rows, int cols, int how) {
    const int lines = how & COLUMNS ? cols : how & GLOBAL ? 1 : rows;
    const int len = how & COLUMNS ? rows : how & GLOBAL ? rows * cols : cols;
    double carried = 0;
    for (int l = 0; l < lines; l++) {
        double m = -INFINITY, sum = 0;
        bool masked = false;
        for (int k = 0; k < len; k++) m = fmax(m, x[line_at(how, cols, len, l, k)]);
        for (int k = 0; k < len; k++) masked |= x[line_at(how, cols, len, l, k)] == -INFINITY;
        for (int k = 0; k < len; k++) sum += exp(x[line_at(how, cols, len, l, k)] - m);
        carried += sum;
        const bool undivided = how & UNNORMALISED || (how & MASKED_UNDIVIDED && masked);
        const double by = undivided ? 1 : how & SUM_CARRIED ? carried : sum;
        for (int k = 0; k < len; k++) {
            const size_t at = line_at(how, cols, len, l, k);
            out[at] = m == -INFINITY ? 0.0f : (float)(exp(x[at] - m) / by);
        }
    }
}


static const char MASKED_UNDIVIDED_HINT[] =
    "the rows with a masked (-inf) score were never divided by their sum: they are "
    "e^(x - max) and sum to more than 1. A -inf adds e^-inf = 0 to the sum, so divide such a "
    "row as any other; only a row that is all -inf (sum 0) is left as zeros";

// softmax() of the (rows, cols) @p x went wrong (want is the right answer): name the mistake.
static void diagnose_rows(const float *got, const float *x, const float *want, int rows,
                          int cols) {
    const size_t n = (size_t)rows * cols;
    size_t nan = 0, zero = 0, nonfinite = 0, want_nonfinite = 0;
    for (size_t i = 0; i < n; i++) {
        nan += isnan(got[i]) != 0, zero += got[i] == 0.0f;
        nonfinite += !isfinite(got[i]), want_nonfinite += !isfinite(want[i]);
    }
    if (nan == n || zero == n) {
        check_hint("softmax() %s: is it still the exercise's placeholder?",
                   nan == n ? "did not write `out` at all" : "wrote only zeros");
        return;
    }
    if (nonfinite > want_nonfinite) {
        check_hint("%zu of the %zu weights came out NaN or inf: subtract the row maximum before "
                   "exp (e^x overflows float32 above 88.7, and inf / inf is NaN)", nonfinite - want_nonfinite, n);
        return;
    }
    Tensor g = tensor_view((float *)got, 2, rows, cols);
    float cand[64];
    if (n > sizeof cand / sizeof cand[0]) return;
    Tensor c = tensor_view(cand, 2, rows, cols);
    bool rows_one = true, cols_one = true;
    for (int r = 0; r < rows; r++) rows_one &= fabs(sum_row(got, cols, r) - 1) < 1e-5;
    for (int k = 0; k < cols; k++) cols_one &= fabs(sum_col(got, rows, cols, k) - 1) < 1e-5;
    softmax_like(cand, x, rows, cols, COLUMNS);
    if ((cols_one && !rows_one) || tensor_near(&g, &c, 1e-6f, 1e-4f)) {
        check_hint("softmax over the wrong axis: the rows do not sum to 1 but the columns do. "
                   "Row r is one query's scores over all the keys, x[r*cols + j] for j < cols: "
                   "normalise each row");
        return;
    }
    softmax_like(cand, x, rows, cols, GLOBAL);
    if (tensor_near(&g, &c, 1e-6f, 1e-4f)) {
        check_hint("the whole matrix sums to 1, not each row: every row needs its own maximum "
                   "and its own sum");
        return;
    }
    softmax_like(cand, x, rows, cols, SUM_CARRIED);
    if (tensor_near(&g, &c, 1e-6f, 1e-4f)) {
        check_hint("row 0 is right but each later row sums to less than 1: its sum was added to "
                   "the previous rows' sums; reset the sum (and the maximum) for every row");
        return;
    }
    softmax_like(cand, x, rows, cols, UNNORMALISED);
    if (tensor_near(&g, &c, 1e-6f, 1e-4f)) {
        check_hint("the weights are e^(x - max) but were never divided by their row's sum: "
                   "p_j = e^(x_j - m) / sum_k e^(x_k - m)");
        return;
    }
    softmax_like(cand, x, rows, cols, MASKED_UNDIVIDED);
    if (tensor_near(&g, &c, 1e-6f, 1e-4f)) {
        check_hint("%s", MASKED_UNDIVIDED_HINT);
        return;
    }
    for (size_t i = 0; i < n; i++)
        if (want[i] == 0.0f && isinf(x[i]) && got[i] != 0.0f) {
            check_hint("a -inf (masked) score got weight %g, not exactly 0: e^(-inf - max) is 0, "
                       "keep the -inf in the exponent", (double)got[i]);
            return;
        }
    if (!rows_one)
        check_hint("the rows do not sum to 1: each row is divided by the sum of its own "
                   "exponentials, p_j = e^(x_j - m) / sum_k e^(x_k - m)");
}

// The chapter's 4 × 4 scores under its causal mask: a square matrix, as attention's are.
static void test_probe_each_row_is_a_distribution(void) {
    Tensor scores = chapter_golden("scores"), mask = chapter_golden("causal_mask");
    Tensor want = chapter_golden("p_causal"); // torch.softmax(scores + causal_mask, dim=-1)
    const int rows = scores.shape[0], cols = scores.shape[1];
    float x[16], got[16];
    CU_ASSERT_FATAL(rows * cols <= 16);
    ops_add(x, scores.data, mask.data, scores.numel);
    fill_nan(got, scores.numel);
    softmax(got, x, rows, cols);
    Tensor g = tensor_view(got, 2, rows, cols);
    if (!assert_tensor_close(&g, &want, 1e-6f, 1e-5f, "softmax(scores + causal mask), 4 x 4"))
        diagnose_rows(got, x, want.data, rows, cols);
    tensor_free(&scores), tensor_free(&mask), tensor_free(&want);
}

// The chapter's row moved by +1000 and by -1000, and as it is, in one (3, 4) call: a row
// maximum that is not subtracted, or not the row's own, turns some rows into NaN.
static void test_probe_huge_scores_subtract_each_rows_maximum(void) {
    const char *in[3] = {"x_big", "x_small", "x"}, *out[3] = {"p_big", "p_small", "p"};
    float x[3 * 4], want[3 * 4], got[3 * 4];
    for (int r = 0; r < 3; r++) {
        Tensor a = chapter_golden(in[r]), b = chapter_golden(out[r]);
        CU_ASSERT_FATAL(a.numel == 4 && b.numel == 4);
        memcpy(&x[r * 4], a.data, sizeof(float) * 4);
        memcpy(&want[r * 4], b.data, sizeof(float) * 4);
        tensor_free(&a), tensor_free(&b);
    }
    fill_nan(got, 12);
    softmax(got, x, 3, 4);
    Tensor g = tensor_view(got, 2, 3, 4), w = tensor_view(want, 2, 3, 4);
    if (assert_tensor_close(&g, &w, 1e-6f, 1e-4f,
                            "softmax of the rows x + 1000, x - 1000 and x (PyTorch: three times p)"))
        return;
    bool bad[3];
    for (int r = 0; r < 3; r++) {
        bad[r] = false;
        for (int j = 0; j < 4; j++) bad[r] |= !isfinite(got[r * 4 + j]);
    }
    if (bad[0] && !bad[2])
        check_hint("subtract the row maximum before exp: the row near +1000 came out NaN "
                   "(e^1002 is inf in float32, inf / inf is NaN)%s, while the ordinary row is "
                   "right; with x - max every exponent is <= 0 and the largest term is e^0 = 1",
                   bad[1] ? " and the row near -1000 too (e^-998 is 0, 0 / 0 is NaN)" : "");
    else if (!bad[0] && bad[1])
        check_hint("row 0 is right but the later rows came out NaN: each row needs its own "
                   "maximum; one carried over from row 0 (about 1002) makes e^(x - max) of row "
                   "1 (about -998) 0, and 0 / 0 is NaN. Set the maximum afresh for every row");
    else
        diagnose_rows(got, x, want, 3, 4);
}

// Rows that are not ordinary numbers (ops.h): all -inf gives zeros, a NaN or a +inf gives
// NaN, each row on its own; PyTorch gives the same except for the all -inf row (NaN).
static void test_probe_masked_nan_and_inf_rows(void) {
    enum { R = 6, C = 3 };
    const float x[R * C] = {
        -INFINITY, -INFINITY, -INFINITY, // fully masked: zeros
        0.5f,      -INFINITY, 0.5f,      // partly masked
        NAN,       -INFINITY, -INFINITY, // a NaN beside masked entries: NaN
        1.0f,      INFINITY,  0.0f,      // a +inf: NaN
        INFINITY,  -INFINITY, -INFINITY, // a +inf among masked entries: NaN
        1.0f,      2.0f,      3.0f,      // ordinary, after all of them
    };
    const float want[R * C] = {0, 0, 0, 0.5f, 0, 0.5f, NAN, NAN, NAN, NAN, NAN, NAN,
                               NAN, NAN, NAN, 0.09003057f, 0.24472848f, 0.66524094f};
    float got[R * C];
    fill_nan(got, R * C);
    softmax(got, x, R, C);
    Tensor g = tensor_view(got, 2, R, C), w = tensor_view((float *)want, 2, R, C);
    if (assert_tensor_close(&g, &w, 1e-7f, 1e-6f,
                            "softmax rows: all -inf, partly -inf, NaN, +inf, +inf, ordinary"))
        return;
    size_t nan = 0, zero = 0;
    for (int i = 0; i < R * C; i++) nan += isnan(got[i]) != 0, zero += got[i] == 0.0f;
    if (nan == R * C || zero == R * C) {
        check_hint("softmax() %s: is it still the exercise's placeholder?",
                   nan == R * C ? "did not write `out` at all" : "wrote only zeros");
        return;
    }
    const float *row0 = got, *row1 = got + C, *row2 = got + 2 * C, *row5 = got + 5 * C;
    bool last_ok = true;
    for (int j = 0; j < C; j++) last_ok &= fabsf(row5[j] - want[5 * C + j]) < 1e-6f;
    if (!last_ok) {
        check_hint("the ordinary last row [1, 2, 3] came out %g %g %g after the masked, NaN and "
                   "+inf rows (PyTorch: 0.0900 0.2447 0.6652): each row is normalised on its "
                   "own, over its own cols entries, and nothing may pass from one row to the "
                   "next (the wrong axis, or a sum or maximum carried over?)",
                   (double)row5[0], (double)row5[1], (double)row5[2]);
        return;
    }
    if (isnan(row0[0]) || isnan(row0[1]) || isnan(row0[2]))
        check_hint("a fully masked row (every score -inf) came out NaN: its maximum is -inf and "
                   "-inf - (-inf) is NaN. ops.h gives such a row zeros: a query with nothing to "
                   "look at takes nothing");
    else if (fabsf(row0[0] - 1.0f / C) < 1e-6f && fabsf(row0[2] - 1.0f / C) < 1e-6f)
        check_hint("a fully masked row (every score -inf) came out as equal weights 1/%d: a "
                   "query with nothing to look at takes nothing, all zeros (ops.h)", C);
    else if (row0[0] != 0.0f || row0[1] != 0.0f || row0[2] != 0.0f)
        check_hint("a fully masked row (every score -inf) must give zeros (ops.h), not %g %g %g",
                   (double)row0[0], (double)row0[1], (double)row0[2]);
    // [0.5, -inf, 0.5] left as e^(x - max) = [1, 0, 1]
    if (row1[0] == 1.0f && row1[1] == 0.0f && row1[2] == 1.0f)
        check_hint("%s", MASKED_UNDIVIDED_HINT);
    else if (row1[1] != 0.0f && !isnan(row1[1]))
        check_hint("a -inf (masked) score got weight %g, not exactly 0: e^(-inf - max) is 0",
                   (double)row1[1]);
    if (row2[0] == 0.0f && row2[1] == 0.0f && row2[2] == 0.0f)
        check_hint("a row with a NaN beside -inf entries came out %g %g %g instead of all NaN: "
                   "NaN > max is false, so the NaN was skipped and the row looked fully masked. "
                   "Look for a NaN (isnan) first: a row with one is all NaN, as in PyTorch",
                   (double)row2[0], (double)row2[1], (double)row2[2]);
    else if (!isnan(row2[0]) || !isnan(row2[1]) || !isnan(row2[2]))
        check_hint("a row with a NaN must be all NaN, as in PyTorch (got %g %g %g): look for "
                   "the NaN with isnan(), NaN > max is always false",
                   (double)row2[0], (double)row2[1], (double)row2[2]);
    bool inf_rows_nan = true;
    for (int i = 3 * C; i < 5 * C; i++) inf_rows_nan &= isnan(got[i]) != 0;
    if (!inf_rows_nan)
        check_hint("a row containing +inf must be all NaN, as in PyTorch (+inf - +inf is NaN): "
                   "only a row that is all -inf gives zeros");
}

CU_TestInfo tests_ch03_softmax[] = {
    {"chapter matches PyTorch golden", test_chapter_matches_pytorch},
    {"weights are positive and sum to one", test_weights_are_positive_and_sum_to_one},
    {"huge scores do not overflow", test_huge_scores_do_not_overflow},
    {"textbook formula overflows to NaN", test_textbook_formula_overflows},
    {"fully masked row gives zeros, not NaN", test_fully_masked_row_gives_zeros_not_nan},
    {"masked entries are exactly zero", test_masked_entries_are_exactly_zero},
    {"a query with every key masked takes nothing", test_query_with_nothing_to_see_takes_nothing},
    {"temperature sharpens and flattens", test_temperature_sharpens_and_flattens},
    {"softmax works in place", test_softmax_in_place},
    {"probe: each row is a distribution", test_probe_each_row_is_a_distribution},
    {"probe: huge scores: subtract each row's maximum",
     test_probe_huge_scores_subtract_each_rows_maximum},
    {"probe: masked, NaN and +inf rows", test_probe_masked_nan_and_inf_rows},
    CU_TEST_INFO_NULL,
};
