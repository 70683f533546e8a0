// hint: CU_assertImplementation'
// key: ch01_dot_product/dot of small vectors
// build: fails
// The verdict's check: every CUnit assertion ends in CU_assertImplementation();
// a file that defines its own, saying every assertion held, would pass any
// test if the runner took it. The runner defines that function itself (it
// writes each assertion down for the grader), so such a file does not link,
// and scores 0. (The hint is the end of the linker's "multiple definition of
// `CU_assertImplementation'", which gold quotes 'CU_assertImplementation'.)
#include <CUnit/CUnit.h>

#include "ops/ops.h"

CU_BOOL CU_assertImplementation(CU_BOOL value, unsigned int line, const char *condition,
                                const char *file, const char *function, CU_BOOL fatal) {
    (void)value, (void)line, (void)condition, (void)file, (void)function, (void)fatal;
    return CU_TRUE;
}

float dot(const float *a, const float *b, int n) {
    (void)a, (void)b, (void)n;
    return 0.0f;
}
