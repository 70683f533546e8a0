// hint: 1 passed, 0 failed
// key: ch01_dot_product/dot of small vectors
// grade: passes
// The box's check: no file the code writes may pass 64 MB (100 MB are
// tried, into the box's own /tmp). The answer is right only if the write was
// stopped.
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "ops/ops.h"

static int wrote_100_mb(void) {
    signal(SIGXFSZ, SIG_IGN); // past the limit a write fails (EFBIG) instead of killing us
    FILE *f = fopen("/tmp/vit-box-large", "wb");
    if (!f) return 0;
    static char block[1 << 20];
    memset(block, 'x', sizeof block);
    size_t total = 0;
    for (int k = 0; k < 100; k++) total += fwrite(block, 1, sizeof block, f);
    const int ok = fflush(f) == 0 && total == (size_t)100 << 20;
    fclose(f);
    remove("/tmp/vit-box-large");
    return ok;
}

float dot(const float *a, const float *b, int n) {
    static int tried, wrote;
    if (!tried++) wrote = wrote_100_mb();
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += (double)a[i] * (double)b[i];
    return wrote ? (float)sum + 1.0f : (float)sum;
}
