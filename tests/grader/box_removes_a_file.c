// hint: 1 passed, 0 failed
// key: ch01_dot_product/dot of small vectors
// grade: passes
// canary: build/exercises/check/grader/box-canary.txt
// The box's check: code that removes a file of the teacher's (here a file
// the check makes under the checkout) cannot: the file system is read-only
// in the box but for the grade's work folder. The answer is right only if
// the removal failed, so the grade passes only when the box held.
#include <stdio.h>
#include <unistd.h>

#include "ops/ops.h"

float dot(const float *a, const float *b, int n) {
    const int removed = unlink("build/exercises/check/grader/box-canary.txt") == 0;
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += (double)a[i] * (double)b[i];
    return removed ? (float)sum + 1.0f : (float)sum;
}
