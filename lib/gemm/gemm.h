/**
 * @file gemm.h
 * @brief Matrix multiplication, the operation that does ~99% of a ViT's work.
 *
 * Two layouts cover every product in the model:
 *   matmul:    out (M,N) = a (M,K) · b (K,N)      e.g. attention probs · V
 *   matmul_bt: out (M,N) = a (M,K) · b (N,K)ᵀ     e.g. x · Wᵀ in linear, Q · Kᵀ
 * (PyTorch stores a Linear weight as [out, in], so x·Wᵀ is the natural form.)
 * The backward pass adds a third layout, a (K,M)ᵀ · b (K,N), and accumulates:
 * matmul_acc(), matmul_bt_acc() and matmul_at_acc() add their product to out.
 * Here M, K and N are BLAS's letters for a product's rows, inner size and
 * columns, as in cblas_sgemm's documentation: the one place where they do not
 * mean the glossary's MLP width, keys and tokens.
 *
 * Three implementations of each, chosen at run time by gemm_set_backend():
 *   naive  the textbook triple loop, the reference everything is tested against;
 *   tiled  our own: cache blocking, packed panels, a register-tiled micro-kernel
 *          (SIMD chosen at run time: AVX-512, AVX2+FMA or portable SSE2/NEON)
 *          and OpenMP across rectangles of out;
 *   blas   cblas_sgemm from OpenBLAS, when the build found it.
 * matmul() and matmul_bt() use the faster of tiled and blas on this machine,
 * measured on the first product and remembered (gemm_choice()), unless
 * gemm_set_backend() or the VIT_GEMM variable says otherwise. The backends
 * are in gemm.c, the measuring in gemm_choice.c, the products that pick a
 * backend in gemm_dispatch.c; each calls only the ones before it in that list.
 *
 * Threads: every product may be called from several threads at once; called
 * inside an OpenMP parallel region, the tiled kernel runs on the calling
 * thread only. The switches (gemm_set_backend(), gemm_set_tiled_kernel()) are
 * process-wide settings: change them while no product is running.
 */
#ifndef VIT_GEMM_H
#define VIT_GEMM_H

#include <stdbool.h>
#include <stddef.h>

/** @defgroup gemm Matrix multiplication
 *  @brief \f[ \text{out}_{ij} = \sum_{k} a_{ik}\, b_{kj} \f]
 *
 *  Taught in @ref chapter01 "chapter 01" (a matrix product as dot products),
 *  @ref chapter14 "chapter 14" (from matmul_naive() to the fast kernel). Pinned by the suites
 *  @ref test_gemm.c "gemm", @ref test_gemm_choice.c "gemm_choice",
 *  @ref test_ch14_making_it_fast.c "ch14_making_it_fast" (@ref answer_keys "the answer keys").
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

/**
 * The tiled backend's blocking sizes, in floats (Goto and van de Geijn's
 * loops, lib/gemm/gemm.c): a KC × NR sliver of b stays in L1 while an
 * MC × KC block of a streams past it from L2, and a KC × NC panel of b waits
 * in L3. Chapter 14 derives the largest each cache allows on the machine at hand.
 */
enum {
    GEMM_TILED_KC = 256,  /**< depth of a block: how much of k one micro-kernel call sums */
    GEMM_TILED_MC = 144,  /**< rows of a packed per block (rounded down to the tile's MR) */
    GEMM_TILED_NC = 3072, /**< columns of b packed per panel (a multiple of every NR) */
};

/**
 * The tiled backend's small products (an attention head's Q·Kᵀ, 50 × 16 × 50)
 * skip the packing: a product on one thread with at most GEMM_TILED_SMALL_ROWS
 * rows of out, K ≤ GEMM_TILED_KC, and b within GEMM_TILED_SMALL_B floats once
 * its rows are padded to whole vectors, is computed straight from a and b
 * (lib/gemm/gemm.c, "Small products"), with the same bits as the blocking loops.
 */
enum {
    GEMM_TILED_SMALL_ROWS = 256, /**< most rows of out a small product has */
    GEMM_TILED_SMALL_B = 4096,   /**< most floats of b, rows padded, a small product has */
};

/** @brief The tile of out the tiled backend's micro-kernel computes on this CPU: @p mr rows × @p nr columns. */
void gemm_tiled_tile(int *mr, int *nr);

/**
 * @brief Name of the micro-kernel the tiled backend runs on this CPU:
 *        "avx512" (12×32 tile), "avx2" (6×16, AVX2+FMA) or "portable" (4×8, SSE2/NEON).
 *
 * The build targets generic x86-64; the fastest variant the CPU supports is
 * picked at run time (avx2 rather than avx512 on AMD's Zen 4, which splits
 * 512-bit arithmetic in halves; avx512 on Zen 5) unless
 * gemm_set_tiled_kernel() forced one.
 */
const char *gemm_tiled_kernel(void);
/**
 * @brief Force the tiled backend's micro-kernel (tests and benchmarks use this
 *        to exercise every variant).
 * @param[in] name  "avx512", "avx2", "portable", or NULL / "" for the best one
 * @return false (and nothing changes) when the name is unknown or this CPU
 *         cannot run that variant.
 */
bool gemm_set_tiled_kernel(const char *name);

/** @brief true when this build can call OpenBLAS. */
bool gemm_have_blas(void);
/** @brief out (M,N) = a (M,K) · b (K,N) via cblas_sgemm; tiled when built without BLAS. */
void matmul_blas(float *out, const float *a, const float *b, int M, int K, int N);
/** @brief out (M,N) = a (M,K) · b (N,K)ᵀ via cblas_sgemm; tiled when built without BLAS. */
void matmul_bt_blas(float *out, const float *a, const float *b, int M, int K, int N);

/** Products of fewer floating-point operations (2·M·K·N) than this are
 *  "small" and have a default backend of their own (GemmChoice.small_backend):
 *  every product of the shipped model's training shards (at most 79 MFLOP),
 *  and the attention products of each head of ViT-B/16 (5 MFLOP), against
 *  232 MFLOP and more for ViT-B/16's linear layers. */
#define GEMM_SMALL_FLOPS 1e8

/** Which backend matmul() uses by default, and why. */
typedef struct {
    GemmBackend backend;  /**< the default backend for products of GEMM_SMALL_FLOPS or more */
    GemmBackend small_backend; /**< the default for smaller ones */
    const char *how;      /**< why: "measured now", "cached: measured before on this machine",
                               "set by VIT_GEMM", "the only fast backend in this build (no OpenBLAS)"
                               or "measured now, on a busy machine (…): not remembered"; a
                               remembered answer measured again says why after "measured now; " */
    char how_text[320];   /**< where a `how` with numbers in it is kept */
    double tiled_gflops;  /**< the measurement on 197×768×2304 (0 when nothing was timed) */
    double blas_gflops;   /**< the same for OpenBLAS */
    double small_tiled_gflops; /**< the measurement on one block of a training shard (gemm_choice.c), one per thread */
    double small_blas_gflops;  /**< the same for OpenBLAS */
    char blas_core[32];   /**< the kernel OpenBLAS picked for this CPU ("Haswell"), "" without it */
    char cache[4096];     /**< the file that remembers the choice, "" when none */
    bool remembered;      /**< the choice was read from the cache, or written to it now */
    char not_kept[1200];  /**< when the cache does not hold this answer, why, to follow its
                               path: "was left as it was" (a busy machine: `how` says so),
                               "is a symbolic link: left as it was", "could not be written (…)" */
} GemmChoice;

/**
 * @brief The default backend, chosen once per process (thread-safe): VIT_GEMM
 *        when set, else the answer remembered for this machine, else measured.
 *
 * Measuring times tiled and blas on ViT-B/16's QKV projection, and on the
 * products of one block of a training step of the model `vit train` ships,
 * forward and backward for 64 images, the whole list on each thread at once
 * as the training shards run it (about 0.2 s in all; a slow or busy machine
 * gets fewer rounds of timing, not a longer wait),
 * and keeps blas for each size only when it is at least 2 % faster there
 * (GEMM_SMALL_FLOPS draws the line); the answer goes to
 * $XDG_CACHE_HOME/vit-from-scratch/gemm-choice (else ~/.cache/…), or to
 * VIT_GEMM_CACHE (off: nowhere), keyed by the CPU, OpenBLAS's build and
 * kernel, the tiled micro-kernel and the thread count (one answer for each
 * thread count used); unless the machine was busy while it timed (the timing
 * had less than 90 % of its cores, other programs used more than 10 % of them,
 * or its two halves disagree), when it holds for this run only. A remembered
 * answer is checked by timing one product (about 20 ms on a 2-core machine) and
 * measured again when that runs much faster than the figure remembered. The
 * cache is read and replaced only when it is a regular file of this user's that
 * starts with the program's own first line; never through a symbolic link.
 * gemm_choice.c says why.
 */
const GemmChoice *gemm_choice(void);
/** @brief One line for where timings are printed: "blas (measured now; tiled (avx2) 149, blas 168 GFLOP/s …)". */
void gemm_choice_describe(char *buf, size_t size);
/** @brief The kernel OpenBLAS runs on this CPU (openblas_get_corename()), "" without BLAS. */
const char *gemm_blas_core(void);

/** @brief Choose the backend; asking for BLAS in a build without it selects tiled. */
void gemm_set_backend(GemmBackend backend);
/** @brief The backend set by gemm_set_backend(), else the default for large products. */
GemmBackend gemm_get_backend(void);
/** @brief The backend a product of M·K·N calls now: the one gemm_set_backend()
 *         set, else the default for its size (GEMM_SMALL_FLOPS). */
GemmBackend gemm_backend_for(int M, int K, int N);
/** @brief Forget gemm_set_backend(): back to the defaults gemm_choice() chose, by size. */
void gemm_use_choice(void);
/** @brief "naive", "tiled" or "blas". */
const char *gemm_backend_name(GemmBackend backend);

/** @brief out (M,N) = a (M,K) · b (K,N) with the current backend. */
void matmul(float *out, const float *a, const float *b, int M, int K, int N);
/** @brief out (M,N) = a (M,K) · b (N,K)ᵀ with the current backend. */
void matmul_bt(float *out, const float *a, const float *b, int M, int K, int N);

/**
 * @name Accumulating products, for the backward pass
 * A gradient is added to what is already there (a tensor that feeds two
 * operations collects both contributions), and a weight's gradient
 * \f$dW = dY^\top X\f$ reads its left operand transposed, a layout no forward
 * product uses. These add the product to out with the current backend (the
 * tiled kernel differs only in how it packs a; BLAS is cblas_sgemm with
 * beta = 1); each has its textbook twin. Empty products (M, K or N ≤ 0) add nothing.
 * @{
 */
/** @brief out (M,N) += a (M,K) · b (K,N), e.g. dx += dout · W in a linear layer's backward. */
void matmul_acc(float *out, const float *a, const float *b, int M, int K, int N);
/** @brief out (M,N) += a (M,K) · b (N,K)ᵀ, e.g. dprobs += dout · Vᵀ. */
void matmul_bt_acc(float *out, const float *a, const float *b, int M, int K, int N);
/** @brief out (M,N) += a (K,M)ᵀ · b (K,N), e.g. dW += doutᵀ · x. */
void matmul_at_acc(float *out, const float *a, const float *b, int M, int K, int N);
/** @brief out (M,N) += op(a) · op(b) on the given backend, whatever the
 *         default: a is (M,K), or (K,M) when at; b is (K,N), or (N,K) when bt.
 *         The three products above call it with gemm_backend_for()'s backend;
 *         gemm_choice() times the backends with it. */
void gemm_acc_on(GemmBackend backend, float *out, const float *a, const float *b, bool at, bool bt,
                 int M, int K, int N);
/** @brief matmul_acc(), textbook loops. */
void matmul_acc_naive(float *out, const float *a, const float *b, int M, int K, int N);
/** @brief matmul_bt_acc(), textbook loops. */
void matmul_bt_acc_naive(float *out, const float *a, const float *b, int M, int K, int N);
/** @brief matmul_at_acc(), textbook loops. */
void matmul_at_acc_naive(float *out, const float *a, const float *b, int M, int K, int N);
/** @} */

/** @} */
#endif
