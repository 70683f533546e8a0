// hint: dot() is not defined in your files: did you rename it?
// build: fails
/**
 * @file dot.c
 * @brief A wrong dot.c for exercise 01 (tests/wrong/): right, but called dot_product().
 *
 * Linked before all of lib, as the grader once did, it scored full marks: the
 * runner took lib's own dot(). Now lib is linked without the files the exercise
 * hands out, and a function the student never wrote scores 0.
 */
#include "ops/ops.h"

float dot_product(const float *a, const float *b, int n); // WRONG: the exercise's name is dot
float dot_product(const float *a, const float *b, int n) {
    // a is (n), b is (n)
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += (double)a[i] * (double)b[i];
    return (float)sum;
}
