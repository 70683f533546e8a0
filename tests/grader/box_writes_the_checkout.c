// hint: 1 passed, 0 failed
// key: ch01_dot_product/dot of small vectors
// grade: passes
// The box's check: code that writes into the grading checkout (so that the
// next student would be graded by a changed tree) cannot. The answer is right
// only if every write failed.
#include <stdio.h>

#include "ops/ops.h"

static int wrote(const char *path) {
    FILE *f = fopen(path, "a");
    if (!f) return 0;
    fclose(f);
    return 1;
}

float dot(const float *a, const float *b, int n) {
    const int changed = wrote("tests/test_ch01_dot_product.c") + wrote("lib/ops/dot.c") +
                        wrote("build/libvit.a");
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += (double)a[i] * (double)b[i];
    return changed ? (float)sum + 1.0f : (float)sum;
}
