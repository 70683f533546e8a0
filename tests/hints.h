/**
 * @file hints.h
 * @brief Signatures of common mistakes, for probe tests that name the bug.
 *
 * A probe test runs a student's function on an input chosen so that each
 * likely mistake leaves a recognisable mark on the output, then says which
 * one with check_hint() (check.h). These helpers recognise the marks that
 * recur across chapters; each only looks, prints nothing and asserts nothing:
 *
 * | helper | true when | typical mistake |
 * | --- | --- | --- |
 * | hint_all_zero() | every value is 0 | the skeleton's placeholder still there, output never written |
 * | hint_scaled() | got = c · expected for one constant c ≠ 1 | a scale applied twice, inverted, or missing |
 * | hint_shifted() | got = expected + c for one constant c ≠ 0 | a missing bias, mean, or max subtraction undone |
 * | hint_transposed() | got is expected (rows, cols) written as (cols, rows) | the wrong index order, Kᵀ for K |
 * | hint_rows_sum_to_one() | every row sums to 1 | (with the next) which axis was normalised |
 * | hint_cols_sum_to_one() | every column sums to 1 | softmax over the wrong axis |
 * | hint_nonfinite_where_large() | some value is NaN/inf, each where an input is large | exp() overflowed: no max subtraction |
 * | hint_nonfinite_rows_where_large() | the same, row by row | |
 *
 * All take plain float arrays (a Tensor's `data` and `numel` work as they
 * are); "equal" means within atol + rtol·|expected|, as in check.h. A typical
 * probe:
 *
 * @code
 * float ratio;
 * if (hint_all_zero(out, n))
 *     check_hint("every output is 0: is the function still the exercise's placeholder?");
 * else if (hint_scaled(&ratio, out, want, n, 1e-5f, 1e-4f))
 *     check_hint("every value is %g times the expected one: divided by Dh, not sqrt(Dh)?", ratio);
 * @endcode
 */
#ifndef VIT_TESTS_HINTS_H
#define VIT_TESTS_HINTS_H

#include <stdbool.h>
#include <stddef.h>

/** @brief true when all @p n values are exactly 0 (and n > 0). */
bool hint_all_zero(const float *x, size_t n);

/**
 * @brief true when @p got is one constant times @p expected, the constant not 1.
 * @param[out] ratio  the constant got/expected (taken where |expected| is largest)
 * @param[in] got, expected  n values each; a non-finite value anywhere: false
 * @param[in] atol, rtol     how close got must be to ratio·expected
 */
bool hint_scaled(float *ratio, const float *got, const float *expected, size_t n, float atol,
                 float rtol);

/**
 * @brief true when @p got is @p expected plus one constant, the constant not 0.
 * @param[out] shift  the constant got − expected (from the first element)
 */
bool hint_shifted(float *shift, const float *got, const float *expected, size_t n, float atol,
                  float rtol);

/**
 * @brief true when @p got holds @p expected (rows, cols) transposed: got is
 *        (cols, rows) with got[j·rows + i] = expected[i·cols + j], and the
 *        two are not simply equal (a symmetric matrix proves nothing).
 */
bool hint_transposed(const float *got, const float *expected, int rows, int cols, float atol,
                     float rtol);

/** @brief true when every row of @p x (rows, cols) sums to 1 within @p tol. */
bool hint_rows_sum_to_one(const float *x, int rows, int cols, float tol);
/** @brief true when every column of @p x (rows, cols) sums to 1 within @p tol. */
bool hint_cols_sum_to_one(const float *x, int rows, int cols, float tol);

/**
 * @brief true when @p got holds a NaN or an infinity, and each is at a place
 *        where |input| ≥ @p large (e.g. 88: e^88.7 is the largest float).
 */
bool hint_nonfinite_where_large(const float *got, const float *input, size_t n, float large);
/**
 * @brief The same for rows: some row of @p got (rows, cols) is not finite, and
 *        each such row has an input of |x| ≥ @p large (a softmax's NaN spreads
 *        over its whole row).
 */
bool hint_nonfinite_rows_where_large(const float *got, const float *input, int rows, int cols,
                                     float large);

#endif
