/**
 * @file dot.c
 * @brief Exercise 01's model answer: dot(), written from the skeleton.
 *
 * make answers-check links it in place of lib's and runs every suite.
 */
#include "ops/ops.h"

float dot(const float *a, const float *b, int n) {
    // a is (n), b is (n); the sum in a double, one rounding to float at the end
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += (double)a[i] * b[i];
    return (float)sum;
}
