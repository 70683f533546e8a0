// hint: (an endless loop? lib's own code took
// key: ch01_dot_product/dot of small vectors
// timeout: 1
// The grader's own check: a function that never returns is killed at the
// time limit and reported with lib's own time on the same test (a fraction
// of a second: five times that is still within the limit, so it is not run
// again), and the next test still runs.
#include "ops/ops.h"

float dot(const float *a, const float *b, int n) {
    volatile float sum = 0.0f;
    for (int i = 0; i < n; i += 0) sum += a[i] * b[i]; // i never moves
    return sum;
}
