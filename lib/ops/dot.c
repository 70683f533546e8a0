/**
 * @file dot.c
 * @brief The dot product, alone in its file so a student's version can replace it.
 */
#include "ops/ops.h"

// [dot]
float dot(const float *a, const float *b, int n) {
    // a is (n), b is (n)
    double sum = 0.0; // double: a long sum of floats loses digits otherwise
    for (int i = 0; i < n; i++) sum += (double)a[i] * (double)b[i];
    return (float)sum;
}
// [dot]
