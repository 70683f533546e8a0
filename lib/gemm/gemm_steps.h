/**
 * @file gemm_steps.h
 * @brief The road from matmul_naive() to the fast kernel, one idea per
 *        function: loop order, cache blocking, packing with a micro-kernel.
 *
 * Chapter 14 times each of these on the reader's machine. They are teaching
 * versions: each adds exactly one idea to the one before, in short plain C,
 * single-threaded, b always (K,N). lib's real kernel, matmul_tiled() in
 * lib/gemm/gemm.c, is the last step of the same road (SIMD micro-kernels chosen at
 * run time, OpenMP across rectangles of out, matmul_bt's transposed b); read
 * the long comment that opens its "tiled" section after these.
 *
 * Shapes (row-major, float32), BLAS's letters as in gemm.h:
 *   a (M,K)    left operand
 *   b (K,N)    right operand
 *   out (M,N)  the product, overwritten
 *
 * Every step computes the same sums as matmul_naive(), in another order, so
 * the results differ from it only by float rounding (a few units in the last
 * place of a sum of K products); the tests hold each to matmul_naive() on
 * shapes that are not multiples of any block size.
 *
 * Deliberately omitted: threads, SIMD intrinsics, a transposed b, and
 * accumulating into out; lib/gemm/gemm.c has them all.
 */
#ifndef VIT_GEMM_STEPS_H
#define VIT_GEMM_STEPS_H

/** @defgroup gemm_steps Making a matrix product fast, step by step
 *  @brief \f[ \text{out}_{ij} = \sum_{k=0}^{K-1} a_{ik}\, b_{kj},
 *             \qquad 2MKN \text{ floating-point operations} \f]
 *
 *  The three steps, in the order Chapter 14 takes them:
 *  - matmul_ikj(): the same triple loop with k outside j, so the innermost
 *    loop walks a row of b and a row of out with stride 1;
 *  - matmul_blocked(): the ikj loops on blocks of b small enough to stay in
 *    a cache while every row of a uses them;
 *  - matmul_packed(): blocks copied into the order a register-tiled
 *    micro-kernel reads them, a GEMM_STEP_MR × GEMM_STEP_NR tile of out
 *    summed in local variables (plain C: no SIMD of its own).
 *
 *  Taught in @ref chapter14 "chapter 14" (each step of the ladder). Pinned by the suites
 *  @ref test_ch14_making_it_fast.c "ch14_making_it_fast" (@ref answer_keys "the answer keys").
 *  @{
 */

/**
 * Block sizes of matmul_blocked() and matmul_packed(), in floats. The b block
 * they reuse is GEMM_STEP_KC × GEMM_STEP_NC floats = 128 × 512 × 4 bytes =
 * 256 KiB, meant to stay in a core's L2 cache (Chapter 14 prints the size of
 * this machine's); a row of it, 2 KiB, and a row of out stay in L1.
 */
enum {
    GEMM_STEP_MC = 64,  /**< rows of a (and out) per block */
    GEMM_STEP_KC = 128, /**< depth of a block: the slice of k one pass sums */
    GEMM_STEP_NC = 512, /**< columns of b (and out) per block */
    GEMM_STEP_MR = 4,   /**< rows of the micro-kernel's tile of out */
    GEMM_STEP_NR = 8,   /**< columns of the micro-kernel's tile of out */
};

/**
 * @brief out (M,N) = a (M,K) · b (K,N), loops in the order i, k, j.
 *
 * \f[ \text{out}_{i,:} = \sum_k a_{ik}\, b_{k,:} \f]
 * Row i of out is a sum of rows of b, each scaled by one number of a. The
 * inner loop reads b and writes out with stride 1, and its N updates do not
 * depend on each other, so the compiler may run several at once (SIMD).
 */
void matmul_ikj(float *out, const float *a, const float *b, int M, int K, int N);

/**
 * @brief out (M,N) = a (M,K) · b (K,N), the ikj loops on cache-sized blocks.
 *
 * out is zeroed, then for every block of GEMM_STEP_NC columns (jc), of
 * GEMM_STEP_KC values of k (pc) and of GEMM_STEP_MC rows (ic):
 * \f[ \text{out}[ic{:}ic{+}mc,\ jc{:}jc{+}nc] \mathrel{+}=
 *     a[ic{:}ic{+}mc,\ pc{:}pc{+}kc] \cdot b[pc{:}pc{+}kc,\ jc{:}jc{+}nc] \f]
 * in the ikj order, where the last block in each direction is cut short by
 * the edge (mc, kc, nc ≤ the block size). Alone in lib/gemm/gemm_blocked.c: it is
 * Chapter 14's exercise.
 */
void matmul_blocked(float *out, const float *a, const float *b, int M, int K, int N);

/**
 * @brief out (M,N) = a (M,K) · b (K,N): blocked, packed, register-tiled.
 *
 * The blocks of matmul_blocked(), each first copied ("packed") into slivers:
 * b's block as GEMM_STEP_NR-wide slivers stored row by row, a's as
 * GEMM_STEP_MR-tall slivers stored column by column, edges padded with zeros.
 * A micro-kernel then computes one MR × NR tile of out with its MR·NR sums in
 * local variables for the whole depth of the block:
 * \f[ c_{rs} = \sum_{k<kc} \bar a_{k r}\, \bar b_{k s}, \qquad r < MR,\ s < NR, \f]
 * reading both slivers strictly in order, and adds the tile to out.
 */
void matmul_packed(float *out, const float *a, const float *b, int M, int K, int N);

/** @} */
#endif
