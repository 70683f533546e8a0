// hint: dot() returned 0 where a · b = 54321
/**
 * @file dot.c
 * @brief A wrong dot.c for exercise 01 (tests/wrong/): the loop is written, the placeholder `return 0` kept.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "ops/ops.h"

float dot(const float *a, const float *b, int n) {
    // a is (n), b is (n)
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += (double)a[i] * (double)b[i];
    (void)sum;
    return 0.0f; // WRONG: the placeholder, still there; return (float)sum
}
