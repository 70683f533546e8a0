// hint: dot() is right for n = 5 but gave 54321 for n = 1
/**
 * @file dot.c
 * @brief A wrong dot.c for exercise 01 (tests/wrong/): a fixed length (5, the vectors it was tried on) instead of n.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "ops/ops.h"

float dot(const float *a, const float *b, int n) {
    // a is (n), b is (n)
    double sum = 0.0;
    for (int i = 0; i < 5; i++) sum += (double)a[i] * (double)b[i]; // WRONG: i < n
    (void)n;
    return (float)sum;
}
