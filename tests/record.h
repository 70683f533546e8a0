/**
 * @file record.h
 * @brief What a test checked, written down for a judge in another process.
 *
 * A grade must not be decided where the student's code runs: that code can
 * write to any descriptor, redefine functions, exit early. So in record mode
 * (`run --record FD SUITE/TEST`, which the grader starts) the test runs as
 * usual, but every check it makes is also written to descriptor FD as an
 * entry:
 *
 *  - a tensor comparison (assert_tensor_close(), tensor_close(), a golden's
 *    stage): the label, both tensors, the tolerance;
 *  - a comparison of two numbers (CU_ASSERT_EQUAL, CU_ASSERT_DOUBLE_EQUAL,
 *    which check.h makes record their values): both numbers, as doubles, and
 *    the tolerance (-1 for "equal in C's ==");
 *  - any other CUnit assertion (every CU_ASSERT…, through
 *    CU_assertImplementation()): the file, the line, the condition and
 *    whether it held;
 *  - and last, once the test has returned, an end mark.
 *
 * The grader, which never loads the student's code, reads two records of the
 * same test: one from lib's own code (the reference) and one from the
 * student's, and judges the student's entry by entry (verdict.h). The
 * student's process only hands over what its code computed; what it should
 * have computed, and how close is close enough, come from the reference.
 *
 * Format (host byte order: both ends run on the one machine). Each entry:
 * `u8 kind, u32 line, u16 length + file, u16 length + text`, then for
 * RECORD_BOOL and RECORD_SUM `u8 value`; for RECORD_NUMBER `u8 value, f64 actual, f64
 * expected, f64 tolerance`; for RECORD_TENSOR `f32 atol, f32 rtol` and two
 * tensors (actual, expected), each `u8 ndim, i32 shape[ndim], f32 data[numel]`;
 * nothing more for RECORD_END.
 */
#ifndef VIT_TESTS_RECORD_H
#define VIT_TESTS_RECORD_H

#include <stdbool.h>
#include <stddef.h>

#include "base/tensor.h"

/** The kinds of entry. */
typedef enum {
    RECORD_BOOL = 'B',   /**< an assertion that held or not */
    RECORD_SUM = 'S',    /**< an assertion that sums up tensor comparisons recorded before it
                              (assert_tensor_close, a series, a golden): judged as RECORD_BOOL */
    RECORD_NUMBER = 'N', /**< two numbers compared: CU_ASSERT_EQUAL, CU_ASSERT_DOUBLE_EQUAL */
    RECORD_TENSOR = 'T', /**< two tensors compared */
    RECORD_END = 'Z'     /**< the test returned */
} RecordKind;

/** Longest file or text kept in an entry (a condition is cut there). */
#define RECORD_TEXT_MAX 400

/** Record mode on: every check from now on is written to @p fd (off: -1); returns the one before. */
int record_start(int fd);
/** Whether record mode is on. */
bool record_on(void);
/** A tensor comparison: @p actual against @p expected within atol + rtol·|expected|. */
void record_tensor(const char *label, const Tensor *actual, const Tensor *expected, float atol,
                   float rtol);
/** Two numbers compared at @p file:@p line: equal by C's == (@p tolerance < 0), or within it. */
void record_number(bool value, double actual, double expected, double tolerance, unsigned line,
                   const char *file, const char *condition);
/** An assertion summing up the tensor comparisons recorded before it (RECORD_SUM). */
void record_sum(bool value, unsigned line, const char *file, const char *condition);
/** A CUnit assertion at @p file:@p line that held or not. */
void record_bool(bool value, unsigned line, const char *file, const char *condition);
/** The test returned: the end mark (without it, the record says the test never finished). */
void record_end(void);

/* ---------------------------------------------------------- reading it back */

/** One entry, read back (its strings and tensors point into the record's buffer). */
typedef struct {
    RecordKind kind;
    unsigned line;
    const char *file, *text; // NUL-terminated copies
    bool value;              // RECORD_BOOL, RECORD_NUMBER: whether it held, as the process said
    double actual_number, expected_number, tolerance; // RECORD_NUMBER
    float atol, rtol;        // RECORD_TENSOR
    Tensor actual, expected; // RECORD_TENSOR: views, owns_data false
} RecordEntry;

/** A whole record, read back. */
typedef struct {
    RecordEntry *entries;
    int count;
    bool ended;      /**< the end mark came, last */
    bool damaged;    /**< an entry is malformed, or bytes follow the end mark (not merely
                          a record that stops before its end mark) */
    char *strings;   /**< the entries' strings */
    float *values;   /**< the entries' tensor data, aligned copies */
} Record;

/**
 * @brief Reads the record in @p data (@p size bytes), checking every length
 *        against what is there: a record is written by code under test.
 * @return true when it is whole and well formed; false with @p why (a
 *         sentence) when not, and then @p r holds the entries read before
 *         the damage.
 */
bool record_read(Record *r, const char *data, size_t size, char *why, size_t why_size);
/** Frees what record_read() made. */
void record_free(Record *r);

#endif
