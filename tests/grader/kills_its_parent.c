// hint: the process that started it ended too (does the code kill other processes?)
// key: ch01_dot_product/dot of small vectors
// key: ch01_dot_product/dot is symmetric and linear
// The grader's own check: a test's process is started by the grade's test
// server (tests/serve.h), in the box. Code that kills its parent, the server,
// fails that test, with a message that says so, and the next test is started
// by a new server (here it fails the same way, not with "could not run").
#include <signal.h>
#include <unistd.h>

#include "ops/ops.h"

float dot(const float *a, const float *b, int n) {
    kill(getppid(), SIGKILL);
    pause(); // the server's end takes this process with it (and its box, when boxed)
    return a[0] * b[0] * (float)n;
}
