// hint: the first product a[0]*b[0] is missing
/**
 * @file dot.c
 * @brief A wrong dot.c for exercise 01 (tests/wrong/): the loop starts at i = 1.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "ops/ops.h"

float dot(const float *a, const float *b, int n) {
    // a is (n), b is (n)
    double sum = 0.0;
    for (int i = 1; i < n; i++) sum += (double)a[i] * (double)b[i]; // WRONG: i = 0
    return (float)sum;
}
