/**
 * @file gemm.h
 * @brief Matrix multiplication, the operation that does ~99% of a ViT's work.
 *
 * Two layouts cover every product in the model:
 *   matmul:    out (M,N) = a (M,K) · b (K,N)      e.g. attention probs · V
 *   matmul_bt: out (M,N) = a (M,K) · b (N,K)ᵀ     e.g. x · Wᵀ in linear, Q · Kᵀ
 * (PyTorch stores a Linear weight as [out, in], so x·Wᵀ is the natural form.)
 *
 * Three implementations of each, chosen at run time by gemm_set_backend():
 *   naive  the textbook triple loop, the reference everything is tested against;
 *   tiled  our own: cache blocking, packed panels, a register-tiled micro-kernel
 *          and OpenMP across row blocks;
 *   blas   cblas_sgemm from OpenBLAS, when the build found it.
 * matmul() and matmul_bt() use the fastest backend available unless told otherwise.
 */
#ifndef VIT_GEMM_H
#define VIT_GEMM_H

#include <stdbool.h>

/** @defgroup gemm Matrix multiplication
 *  @brief \f[ \text{out}_{ij} = \sum_{k} a_{ik}\, b_{kj} \f]
 *  @{
 */

/** Which implementation matmul() and matmul_bt() call. */
typedef enum {
    GEMM_NAIVE, /**< triple loop */
    GEMM_TILED, /**< own cache-blocked, register-tiled, OpenMP kernel */
    GEMM_BLAS,  /**< cblas_sgemm (only when built with OpenBLAS) */
} GemmBackend;

/** @brief out (M,N) = a (M,K) · b (K,N), textbook loops. */
void matmul_naive(float *out, const float *a, const float *b, int M, int K, int N);
/** @brief out (M,N) = a (M,K) · b (N,K)ᵀ, textbook loops. */
void matmul_bt_naive(float *out, const float *a, const float *b, int M, int K, int N);

/** @brief out (M,N) = a (M,K) · b (K,N), own blocked kernel with OpenMP. */
void matmul_tiled(float *out, const float *a, const float *b, int M, int K, int N);
/** @brief out (M,N) = a (M,K) · b (N,K)ᵀ, own blocked kernel with OpenMP. */
void matmul_bt_tiled(float *out, const float *a, const float *b, int M, int K, int N);

/** @brief true when this build can call OpenBLAS. */
bool gemm_have_blas(void);
/** @brief out (M,N) = a (M,K) · b (K,N) via cblas_sgemm; tiled when built without BLAS. */
void matmul_blas(float *out, const float *a, const float *b, int M, int K, int N);
/** @brief out (M,N) = a (M,K) · b (N,K)ᵀ via cblas_sgemm; tiled when built without BLAS. */
void matmul_bt_blas(float *out, const float *a, const float *b, int M, int K, int N);

/** @brief Choose the backend; asking for BLAS in a build without it selects tiled. */
void gemm_set_backend(GemmBackend backend);
/** @brief The backend matmul() and matmul_bt() call now. */
GemmBackend gemm_get_backend(void);
/** @brief "naive", "tiled" or "blas". */
const char *gemm_backend_name(GemmBackend backend);

/** @brief out (M,N) = a (M,K) · b (K,N) with the current backend. */
void matmul(float *out, const float *a, const float *b, int M, int K, int N);
/** @brief out (M,N) = a (M,K) · b (N,K)ᵀ with the current backend. */
void matmul_bt(float *out, const float *a, const float *b, int M, int K, int N);

/** @} */
#endif
