/**
 * @file gemm_dispatch.c
 * @brief matmul(), matmul_bt() and the accumulating products: each product
 *        sent to a backend (gemm.h), the one gemm_set_backend() set, else the
 *        default gemm_choice() chose for its size.
 *
 * Shapes as in gemm.c: a (M,K), b (K,N) or (N,K) for the _bt forms, out (M,N).
 *
 * The calls go one way (a → b: a calls b):
 *   gemm_dispatch.c → gemm_choice.c → gemm.c,   gemm_dispatch.c → gemm.c
 * Choosing times the backends by name (gemm_acc_on(), matmul_tiled(), …) and
 * never calls back here. It must not: gemm_choice() measures inside
 * pthread_once(), and a timed product that asked for the choice again would
 * wait for itself.
 *
 * Deliberately omitted: a choice finer than the two sizes GEMM_SMALL_FLOPS
 * draws the line between (per shape, per call site).
 */
#include "gemm/gemm.h"

#include <stdio.h>

/* -------------------------------------------------------------- the backend */

// The backend gemm_set_backend() set, or -1: then each product takes the
// default for its size, which gemm_choice() (gemm_choice.c) decides on the
// first product. Atomic because products may come from several threads at once.
static int set_backend = -1;

void gemm_set_backend(GemmBackend backend) {
    if (backend == GEMM_BLAS && !gemm_have_blas()) backend = GEMM_TILED;
    __atomic_store_n(&set_backend, (int)backend, __ATOMIC_RELAXED);
}

void gemm_use_choice(void) { __atomic_store_n(&set_backend, -1, __ATOMIC_RELAXED); }

GemmBackend gemm_get_backend(void) {
    const int set = __atomic_load_n(&set_backend, __ATOMIC_RELAXED);
    return set >= 0 ? (GemmBackend)set : gemm_choice()->backend;
}

// [gemm_backend_for]
GemmBackend gemm_backend_for(int M, int K, int N) {
    const int set = __atomic_load_n(&set_backend, __ATOMIC_RELAXED);
    if (set >= 0) return (GemmBackend)set;
    const GemmChoice *c = gemm_choice();
    return 2.0 * M * K * N < GEMM_SMALL_FLOPS ? c->small_backend : c->backend;
}
// [gemm_backend_for]

// [matmul]
void matmul(float *out, const float *a, const float *b, int M, int K, int N) {
    switch (gemm_backend_for(M, K, N)) {
    case GEMM_NAIVE: matmul_naive(out, a, b, M, K, N); break;
    case GEMM_TILED: matmul_tiled(out, a, b, M, K, N); break;
    case GEMM_BLAS: matmul_blas(out, a, b, M, K, N); break;
    }
}
// [matmul]

// [matmul_bt]
void matmul_bt(float *out, const float *a, const float *b, int M, int K, int N) {
    switch (gemm_backend_for(M, K, N)) {
    case GEMM_NAIVE: matmul_bt_naive(out, a, b, M, K, N); break;
    case GEMM_TILED: matmul_bt_tiled(out, a, b, M, K, N); break;
    case GEMM_BLAS: matmul_bt_blas(out, a, b, M, K, N); break;
    }
}
// [matmul_bt]

/* ------------------------------------------------- accumulating products */

// out (M,N) += op(a)·op(b) with the default backend for its size
static void gemm_acc(float *out, const float *a, const float *b, bool at, bool bt, int M, int K,
                     int N) {
    gemm_acc_on(gemm_backend_for(M, K, N), out, a, b, at, bt, M, K, N);
}

void matmul_acc(float *out, const float *a, const float *b, int M, int K, int N) {
    gemm_acc(out, a, b, false, false, M, K, N);
}

void matmul_bt_acc(float *out, const float *a, const float *b, int M, int K, int N) {
    gemm_acc(out, a, b, false, true, M, K, N);
}

void matmul_at_acc(float *out, const float *a, const float *b, int M, int K, int N) {
    gemm_acc(out, a, b, true, false, M, K, N);
}

/* ---------------------------------------------------------------- describe */

void gemm_choice_describe(char *buf, size_t size) {
    const GemmChoice *c = gemm_choice();
    const GemmBackend now = gemm_get_backend();
    char blas[64] = "", measured[320] = "";
    if (gemm_have_blas()) snprintf(blas, sizeof blas, "OpenBLAS's kernel: %.31s", c->blas_core);
    if (c->tiled_gflops > 0)
        snprintf(measured, sizeof measured,
                 "; tiled (%s) %.0f, blas %.0f GFLOP/s on 197x768x2304; under %.0f MFLOP: "
                 "%s (tiled %.0f, blas %.0f GFLOP/s on a training shard's block, one per thread)",
                 gemm_tiled_kernel(), c->tiled_gflops, c->blas_gflops, GEMM_SMALL_FLOPS / 1e6,
                 gemm_backend_name(c->small_backend), c->small_tiled_gflops,
                 c->small_blas_gflops);
    if (now != c->backend) // bench and the tests switch backends themselves
        snprintf(buf, size, "%s (set by the program%s%s)", gemm_backend_name(now),
                 blas[0] ? "; " : "", blas);
    else
        snprintf(buf, size, "%s (%s%s%s%s)", gemm_backend_name(now), c->how, measured,
                 blas[0] ? "; " : "", blas);
}
