// hint: crashed: SIGSEGV (a read or write outside an array?)
// key: ch01_dot_product/dot of small vectors
// The grader's own check: a function that writes outside any array crashes
// its test's process, never the grader, and the grader says so.
#include <stddef.h>

#include "ops/ops.h"

float dot(const float *a, const float *b, int n) {
    volatile float *nowhere = NULL;
    *nowhere = a[0] * b[0] * (float)n;
    return 0.0f;
}
