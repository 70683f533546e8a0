// hint: expected 54321
// also: with it digit by digit
// key: ch01_dot_product
// twice: same
// The grader's own check: a dot() whose sum is never set to 0. Read
// uninitialised, a local variable holds whatever the stack held before, and
// the same code could pass a test in one grade and fail it in the next. The
// student's files are compiled with -ftrivial-auto-var-init=pattern, so the
// sum always starts at the same value (a huge one with gcc, NaN with clang),
// and the grade is the same every time (tests/exercises.sh grades this one
// twice and compares).
#include "ops/ops.h"

float dot(const float *a, const float *b, int n) {
    double sum; // WRONG: never set to 0
    for (int i = 0; i < n; i++) sum += (double)a[i] * (double)b[i];
    return (float)sum;
}
