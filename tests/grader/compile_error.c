// hint: the code did not compile
// key: ch01_dot_product/dot of small vectors
// build: fails
// The grader's own check: code that does not compile is reported as the
// result (every test failed, the compiler's messages shown), not as a crash.
#include "ops/ops.h"

float dot(const float *a, const float *b, int n) {
    return a[0] * b[0] * n  // the semicolon is missing
}
