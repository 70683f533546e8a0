/**
 * @file hints.c
 * @brief Signatures of common mistakes (hints.h): each looks, none prints.
 */
#include "hints.h"

#include <math.h>

static bool close_to(float got, float want, float atol, float rtol) {
    return fabsf(got - want) <= atol + rtol * fabsf(want);
}

bool hint_all_zero(const float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (x[i] != 0.0f) return false;
    return n > 0;
}

bool hint_scaled(float *ratio, const float *got, const float *expected, size_t n, float atol,
                 float rtol) {
    size_t big = 0; // the ratio is read where it is best determined
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(got[i]) || !isfinite(expected[i])) return false;
        if (fabsf(expected[i]) > fabsf(expected[big])) big = i;
    }
    if (n == 0 || expected[big] == 0.0f) return false;
    const float c = got[big] / expected[big];
    for (size_t i = 0; i < n; i++)
        if (!close_to(got[i], c * expected[i], atol, rtol)) return false;
    if (close_to(c, 1.0f, 0.0f, rtol)) return false; // that is just right, not a mistake
    *ratio = c;
    return true;
}

bool hint_shifted(float *shift, const float *got, const float *expected, size_t n, float atol,
                  float rtol) {
    if (n == 0 || !isfinite(got[0]) || !isfinite(expected[0])) return false;
    const float c = got[0] - expected[0];
    for (size_t i = 0; i < n; i++)
        if (!isfinite(got[i]) || !isfinite(expected[i]) ||
            !close_to(got[i], expected[i] + c, atol, rtol))
            return false;
    if (fabsf(c) <= atol) return false;
    *shift = c;
    return true;
}

bool hint_transposed(const float *got, const float *expected, int rows, int cols, float atol,
                     float rtol) {
    bool differs = false; // a symmetric matrix is its own transpose: no sign of a mistake
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
            const size_t at = (size_t)i * cols + j;
            if (!close_to(got[(size_t)j * rows + i], expected[at], atol, rtol)) return false;
            if (!close_to(got[at], expected[at], atol, rtol)) differs = true;
        }
    return differs;
}

bool hint_rows_sum_to_one(const float *x, int rows, int cols, float tol) {
    for (int i = 0; i < rows; i++) {
        double s = 0;
        for (int j = 0; j < cols; j++) s += x[(size_t)i * cols + j];
        if (!(fabs(s - 1.0) <= tol)) return false;
    }
    return rows > 0;
}

bool hint_cols_sum_to_one(const float *x, int rows, int cols, float tol) {
    for (int j = 0; j < cols; j++) {
        double s = 0;
        for (int i = 0; i < rows; i++) s += x[(size_t)i * cols + j];
        if (!(fabs(s - 1.0) <= tol)) return false;
    }
    return cols > 0;
}

bool hint_nonfinite_where_large(const float *got, const float *input, size_t n, float large) {
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        if (isfinite(got[i])) continue;
        if (!(fabsf(input[i]) >= large)) return false;
        any = true;
    }
    return any;
}

bool hint_nonfinite_rows_where_large(const float *got, const float *input, int rows, int cols,
                                     float large) {
    bool any = false;
    for (int i = 0; i < rows; i++) {
        bool bad = false, big = false;
        for (int j = 0; j < cols; j++) {
            const size_t at = (size_t)i * cols + j;
            bad = bad || !isfinite(got[at]);
            big = big || fabsf(input[at]) >= large;
        }
        if (bad && !big) return false;
        any = any || bad;
    }
    return any;
}
