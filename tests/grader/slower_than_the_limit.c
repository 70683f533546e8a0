// hint: lib's own code took
// key: ch08_encoder_block/chapter matches PyTorch golden
// timeout: 0.1
// grade: passes
// The grader's own check: a right answer whose test takes longer than the
// time limit because the test itself is long (here a whole chapter replayed,
// about a second, against a limit of 0.1 s) is not failed for it. The grader
// times lib's own code on the same test, here and now, finds that five times
// that is more than the limit, and runs the test again with that long; the
// PASS line says so. On a busy machine lib's ViT-B/16 tests take 14 to 25 s,
// and a right answer must not lose its point to the machine.
#include "ops/ops.h"

float dot(const float *a, const float *b, int n) {
    // a is (n), b is (n)
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += (double)a[i] * (double)b[i];
    return (float)sum;
}
