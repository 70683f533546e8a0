/**
 * @file verdict.h
 * @brief The grader's judgement of one test: the student's record against
 *        lib's, in a process that never loaded the student's code.
 *
 * Both records come from the same test (record.h): one run with lib's code,
 * one with the student's. They are walked side by side; the student's passes
 * only when
 *
 *  - it is whole (its end mark came: the test returned) and took the same
 *    path: the same checks, in the same order, as lib's;
 *  - every comparison of two numbers (CU_ASSERT_EQUAL, CU_ASSERT_DOUBLE_EQUAL)
 *    is right by the reference's measure, as below: for C's ==, the student's
 *    number must be the one lib's code computed (which made the == hold);
 *  - every other CUnit assertion in it held (as the student's process says:
 *    a condition such as `p != NULL` leaves nothing else to compare);
 *  - every tensor it compared is right by the reference's measure: when the
 *    test's expected side is the same in both runs (a golden, an input), the
 *    student's actual side is compared with it, within the reference's
 *    tolerance. When the expected side was computed by the student's code too
 *    (two of its outputs compared with each other), the test's own comparison
 *    is made again here, and that expected side must also be close to lib's
 *    (within ten times the test's tolerance, and at least 1e-4 + 1e-3·|lib's|).
 *
 * A failure is a *near miss* when every check that failed is a comparison
 * against the reference's expected side that would hold within VERDICT_NEAR
 * times its tolerance (a tanh GELU, 4.7e-4 from the erf one), and nothing
 * else went wrong: the grader gives it half its points.
 *
 * So nothing the student's process says about itself decides: not its exit
 * status, not CUnit's count of failures, not a line it prints.
 */
#ifndef VIT_TESTS_VERDICT_H
#define VIT_TESTS_VERDICT_H

#include <stdbool.h>

#include "record.h"

/** Failures listed (the rest counted). */
#define VERDICT_LINES 5
/** A near miss: every failed comparison holds within this many times its tolerance. */
#define VERDICT_NEAR 100

/** What the judgement found. */
typedef struct {
    bool passed;
    int checked;                 /**< entries judged */
    int failed;                  /**< of them, how many failed */
    int listed;                  /**< lines in line[] */
    char line[VERDICT_LINES][480]; /**< the first failures, one sentence each */
    unsigned times[VERDICT_LINES]; /**< how often each failed (a check in a loop) */
    bool reference_failed;       /**< lib's own record fails: the test, not the student, is wrong */
    bool near_miss;              /**< failed, but only by comparisons of numbers or tensors that
                                      hold within VERDICT_NEAR times their tolerance (a tanh GELU
                                      where the erf one belongs), on the path lib's code took */
} Verdict;

/** Judges @p student against @p reference (both read with record_read()). */
Verdict verdict_judge(const Record *student, const Record *reference);

#endif
