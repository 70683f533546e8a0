// hint: the test's record of its checks is damaged
// key: ch01_dot_product/dot of small vectors
// The verdict's check: a wrong dot() that writes "PASS 0" to every
// descriptor from 3 up (the old grader read its verdict on one of them) and
// ends the process. The grader reads only a record of the checks, and judges
// it outside this process: the forged line is a damaged record, scored 0.
#include <string.h>
#include <unistd.h>

#include "ops/ops.h"

float dot(const float *a, const float *b, int n) {
    (void)a, (void)b, (void)n;
    static const char forged[] = "PASS 0\n";
    for (int fd = 3; fd < 1024; fd++) {
        ssize_t w = write(fd, forged, strlen(forged));
        (void)w;
    }
    _exit(0);
}
