// hint: the last product a[n-1]*b[n-1] is missing
/**
 * @file dot.c
 * @brief A wrong dot.c for exercise 01 (tests/wrong/): the loop stops one short (i < n - 1).
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "ops/ops.h"

float dot(const float *a, const float *b, int n) {
    // a is (n), b is (n)
    double sum = 0.0;
    for (int i = 0; i < n - 1; i++) sum += (double)a[i] * (double)b[i]; // WRONG: i < n
    return (float)sum;
}
