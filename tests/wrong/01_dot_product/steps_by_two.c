// hint: the products i = 1, 3 are missing
/**
 * @file dot.c
 * @brief A wrong dot.c for exercise 01 (tests/wrong/): the loop steps by two (i += 2), skipping every other product.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "ops/ops.h"

float dot(const float *a, const float *b, int n) {
    // a is (n), b is (n)
    double sum = 0.0;
    for (int i = 0; i < n; i += 2) sum += (double)a[i] * (double)b[i]; // WRONG: i++
    return (float)sum;
}
