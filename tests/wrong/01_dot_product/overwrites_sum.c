// hint: only the last product survived
/**
 * @file dot.c
 * @brief A wrong dot.c for exercise 01 (tests/wrong/): `=` where `+=` belongs.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "ops/ops.h"

float dot(const float *a, const float *b, int n) {
    // a is (n), b is (n)
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum = (double)a[i] * (double)b[i]; // WRONG: sum +=
    return (float)sum;
}
