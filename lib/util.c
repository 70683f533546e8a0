/**
 * @file util.c
 * @brief Errors, memory, clocks, number parsing and thread control.
 */
#include "util.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef VIT_HAVE_BLAS
#include <cblas.h>
#endif

VitStatus vit_fail(VitError *err, VitStatus status, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return status;
}

static void out_of_memory(size_t bytes) {
    fprintf(stderr, "vit: out of memory allocating %zu bytes\n", bytes);
    abort();
}

void *vit_malloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) out_of_memory(bytes);
    return p;
}

void *vit_calloc(size_t count, size_t size) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) out_of_memory(count * size);
    return p;
}

void *vit_realloc(void *p, size_t bytes) {
    void *q = realloc(p, bytes ? bytes : 1);
    if (!q) out_of_memory(bytes);
    return q;
}

char *vit_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = vit_malloc(n);
    memcpy(p, s, n);
    return p;
}

void *vit_malloc_aligned(size_t bytes) {
    // aligned_alloc wants a size that is a multiple of the alignment
    size_t rounded = (bytes + 63) / 64 * 64;
    void *p = aligned_alloc(64, rounded ? rounded : 64);
    if (!p) out_of_memory(bytes);
    return p;
}

bool vit_checked_mul(size_t *out, size_t a, size_t b) {
    if (a != 0 && b > SIZE_MAX / a) return false;
    *out = a * b;
    return true;
}

double vit_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

VitStatus vit_parse_int(int *out, const char *s, int lo, int hi, const char *what, VitError *err) {
    if (!s || !*s) return vit_fail(err, VIT_ERR_USAGE, "%s: expected an integer, got nothing", what);
    errno = 0;
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (errno || *end != '\0')
        return vit_fail(err, VIT_ERR_USAGE, "%s: '%s' is not an integer", what, s);
    if (v < lo || v > hi)
        return vit_fail(err, VIT_ERR_USAGE, "%s: %ld is out of range [%d, %d]", what, v, lo, hi);
    *out = (int)v;
    return VIT_OK;
}

VitStatus vit_parse_float(float *out, const char *s, const char *what, VitError *err) {
    if (!s || !*s) return vit_fail(err, VIT_ERR_USAGE, "%s: expected a number, got nothing", what);
    errno = 0;
    char *end = NULL;
    double v = strtod(s, &end);
    if (errno || *end != '\0' || !isfinite(v) || fabs(v) > 3.4e38)
        return vit_fail(err, VIT_ERR_USAGE, "%s: '%s' is not a finite number", what, s);
    *out = (float)v;
    return VIT_OK;
}

char *vit_thousands(char buf[VIT_NUM_BUF], int64_t n) {
    char digits[VIT_NUM_BUF];
    // the magnitude as unsigned, so that INT64_MIN has one too
    uint64_t magnitude = n < 0 ? -(uint64_t)n : (uint64_t)n;
    int len = snprintf(digits, sizeof digits, "%llu", (unsigned long long)magnitude);
    char *p = buf;
    if (n < 0) *p++ = '-';
    for (int i = 0; i < len; i++) {
        if (i > 0 && (len - i) % 3 == 0) *p++ = ',';
        *p++ = digits[i];
    }
    *p = '\0';
    return buf;
}

void vit_set_threads(int n) {
#ifdef _OPENMP
    if (n <= 0) n = omp_get_num_procs();
    omp_set_num_threads(n);
#endif
#ifdef VIT_HAVE_BLAS
    if (n <= 0) n = 1;
    openblas_set_num_threads(n);
#endif
    (void)n;
}

int vit_get_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

const char *vit_build_info(void) {
#if defined(_OPENMP) && defined(VIT_HAVE_BLAS)
    return "OpenMP + OpenBLAS";
#elif defined(_OPENMP)
    return "OpenMP, no BLAS (own tiled GEMM)";
#elif defined(VIT_HAVE_BLAS)
    return "OpenBLAS, no OpenMP";
#else
    return "single-threaded, no BLAS (own tiled GEMM)";
#endif
}
