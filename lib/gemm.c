/**
 * @file gemm.c
 * @brief Matrix multiplication: naive reference, own tiled kernel, OpenBLAS.
 */
#include "gemm.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#ifdef VIT_HAVE_BLAS
#include <cblas.h>
#endif

/* ----------------------------------------------------------------- naive */

void matmul_naive(float *out, const float *a, const float *b, int M, int K, int N) {
    // a is (M,K), b is (K,N), out is (M,N)
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float sum = 0.0f;
            for (int k = 0; k < K; k++) sum += a[(size_t)i * K + k] * b[(size_t)k * N + j];
            out[(size_t)i * N + j] = sum;
        }
}

void matmul_bt_naive(float *out, const float *a, const float *b, int M, int K, int N) {
    // a is (M,K), b is (N,K), out is (M,N)
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float sum = 0.0f;
            for (int k = 0; k < K; k++) sum += a[(size_t)i * K + k] * b[(size_t)j * K + k];
            out[(size_t)i * N + j] = sum;
        }
}

/* ----------------------------------------------------------------- tiled */

// Block sizes: a KC×NC panel of b (packed) stays in L2 while MC rows of a stream past it.
enum { MC = 64, KC = 256, NC = 512 };

// Copies b[k0:k0+kc, j0:j0+nc] into a dense kc×nc panel, whichever layout b has.
static void pack_b(float *panel, const float *b, bool transposed, int K, int N, int k0, int kc,
                   int j0, int nc) {
    for (int k = 0; k < kc; k++)
        for (int j = 0; j < nc; j++)
            panel[(size_t)k * nc + j] = transposed ? b[(size_t)(j0 + j) * K + (k0 + k)]
                                                   : b[(size_t)(k0 + k) * N + (j0 + j)];
}

static void gemm_tiled(float *out, const float *a, const float *b, bool transposed, int M,
                       int K, int N) {
    memset(out, 0, (size_t)M * N * sizeof(float));
    float *panel = vit_malloc_aligned((size_t)KC * NC * sizeof(float));
    for (int j0 = 0; j0 < N; j0 += NC) {
        int nc = N - j0 < NC ? N - j0 : NC;
        for (int k0 = 0; k0 < K; k0 += KC) {
            int kc = K - k0 < KC ? K - k0 : KC;
            pack_b(panel, b, transposed, K, N, k0, kc, j0, nc);
#pragma omp parallel for schedule(static)
            for (int i0 = 0; i0 < M; i0 += MC) {
                int mc = M - i0 < MC ? M - i0 : MC;
                for (int i = i0; i < i0 + mc; i++) {
                    float *o = out + (size_t)i * N + j0;
                    const float *ai = a + (size_t)i * K + k0;
                    for (int k = 0; k < kc; k++) {
                        float aik = ai[k];
                        const float *p = panel + (size_t)k * nc;
                        for (int j = 0; j < nc; j++) o[j] += aik * p[j];
                    }
                }
            }
        }
    }
    free(panel);
}

void matmul_tiled(float *out, const float *a, const float *b, int M, int K, int N) {
    gemm_tiled(out, a, b, false, M, K, N);
}

void matmul_bt_tiled(float *out, const float *a, const float *b, int M, int K, int N) {
    gemm_tiled(out, a, b, true, M, K, N);
}

/* ------------------------------------------------------------------ blas */

bool gemm_have_blas(void) {
#ifdef VIT_HAVE_BLAS
    return true;
#else
    return false;
#endif
}

void matmul_blas(float *out, const float *a, const float *b, int M, int K, int N) {
#ifdef VIT_HAVE_BLAS
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a, K, b, N, 0.0f, out,
                N);
#else
    matmul_tiled(out, a, b, M, K, N);
#endif
}

void matmul_bt_blas(float *out, const float *a, const float *b, int M, int K, int N) {
#ifdef VIT_HAVE_BLAS
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, a, K, b, K, 0.0f, out, N);
#else
    matmul_bt_tiled(out, a, b, M, K, N);
#endif
}

/* -------------------------------------------------------------- dispatch */

static GemmBackend current_backend =
#ifdef VIT_HAVE_BLAS
    GEMM_BLAS;
#else
    GEMM_TILED;
#endif

void gemm_set_backend(GemmBackend backend) {
    if (backend == GEMM_BLAS && !gemm_have_blas()) backend = GEMM_TILED;
    current_backend = backend;
}

GemmBackend gemm_get_backend(void) { return current_backend; }

const char *gemm_backend_name(GemmBackend backend) {
    switch (backend) {
    case GEMM_NAIVE: return "naive";
    case GEMM_TILED: return "tiled";
    case GEMM_BLAS: return "blas";
    }
    return "?";
}

void matmul(float *out, const float *a, const float *b, int M, int K, int N) {
    switch (current_backend) {
    case GEMM_NAIVE: matmul_naive(out, a, b, M, K, N); break;
    case GEMM_TILED: matmul_tiled(out, a, b, M, K, N); break;
    case GEMM_BLAS: matmul_blas(out, a, b, M, K, N); break;
    }
}

void matmul_bt(float *out, const float *a, const float *b, int M, int K, int N) {
    switch (current_backend) {
    case GEMM_NAIVE: matmul_bt_naive(out, a, b, M, K, N); break;
    case GEMM_TILED: matmul_bt_tiled(out, a, b, M, K, N); break;
    case GEMM_BLAS: matmul_bt_blas(out, a, b, M, K, N); break;
    }
}
