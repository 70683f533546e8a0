// hint: 1 passed, 0 failed
// key: ch01_dot_product/dot of small vectors
// grade: passes
// orphan: vit-box-daemon
// The box's check: a child that leaves the test's process group with
// setsid() (and so escaped the old kill of that group) is gone when the grade
// ends: the box's PID namespace ends with it.
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "ops/ops.h"

float dot(const float *a, const float *b, int n) {
    static int started;
    if (!started++ && fork() == 0) {
        setsid();
        prctl(PR_SET_NAME, "vit-box-daemon");
        if (fork() == 0) { // a grandchild, in a session of its own: a daemon
            prctl(PR_SET_NAME, "vit-box-daemon");
            for (;;) pause();
        }
        for (;;) pause();
    }
    double sum = 0.0;
    for (int i = 0; i < n; i++) sum += (double)a[i] * (double)b[i];
    return (float)sum;
}
