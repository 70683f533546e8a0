// hint: the test went another way than with lib's code
// key: ch01_dot_product/dot of small vectors
// The verdict's check: a wrong dot() that writes a record of its own on
// descriptor 3, in the grader's format (tests/record.h: one assertion that
// held, then the end mark), and ends the process before the test can check
// anything. The grader compares the record with lib's own record of the same
// test, made in a process of its own: one check where lib's code made more is
// a failure, scored 0.
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "ops/ops.h"

// One entry: kind, line, file, text (record.h), then what the kind adds.
static size_t entry(char *p, char kind, const char *text) {
    size_t n = 0;
    const uint32_t line = 1;
    const uint16_t none = 0, len = (uint16_t)strlen(text);
    p[n++] = kind;
    memcpy(p + n, &line, 4), n += 4;
    memcpy(p + n, &none, 2), n += 2;
    memcpy(p + n, &len, 2), n += 2;
    memcpy(p + n, text, len), n += len;
    if (kind == 'B') p[n++] = 1; // it held
    return n;
}

float dot(const float *a, const float *b, int n) {
    (void)a, (void)b, (void)n;
    char record[256];
    size_t len = entry(record, 'B', "everything is right");
    len += entry(record + len, 'Z', "");
    ssize_t w = write(3, record, len);
    (void)w;
    _exit(0);
}
