// hint: accumulate in a double
/**
 * @file dot.c
 * @brief A wrong dot.c for exercise 01 (tests/wrong/): the sum is kept in a float.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "ops/ops.h"

float dot(const float *a, const float *b, int n) {
    // a is (n), b is (n)
    float sum = 0.0f; // WRONG: a float drops the small terms of a long sum
    for (int i = 0; i < n; i++) sum += a[i] * b[i];
    return sum;
}
