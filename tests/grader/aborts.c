// hint: crashed: SIGABRT
// key: ch01_dot_product/dot of small vectors
// key: ch01_dot_product/dot is symmetric and linear
// The grader's own check: an assert() that fails (SIGABRT) is a crash of
// that test alone, each of the key's tests in a process of its own.
#include <assert.h>

#include "ops/ops.h"

float dot(const float *a, const float *b, int n) {
    assert(n < 0 && "a student's own check that fails");
    return a[0] * b[0];
}
