// hint: is the product of the two sums
/**
 * @file dot.c
 * @brief A wrong dot.c for exercise 01 (tests/wrong/): (Σ a)(Σ b), the product of the sums, instead of Σ a·b.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "ops/ops.h"

float dot(const float *a, const float *b, int n) {
    // a is (n), b is (n)
    double sum_a = 0.0, sum_b = 0.0;
    for (int i = 0; i < n; i++) {
        sum_a += a[i];
        sum_b += b[i];
    }
    return (float)(sum_a * sum_b); // WRONG: sum += a[i] * b[i], the products added up
}
