/**
 * @file gemm_bf16.c
 * @brief bf16 numbers (float's top half) and the bf16 product
 *        out (M,N) = a (M,K) · b (N,K)ᵀ summed in float: a portable path, and
 *        one on AVX-512 BF16's vdpbf16ps.
 *
 * Shapes: a (M,K) and b (N,K) bf16, each a uint16_t holding the bits; out
 * (M,N) float; every row K-contiguous.
 *
 * A float is 1 sign bit, 8 exponent bits and 23 mantissa bits; bf16 keeps the
 * first 16 of those 32: the sign, the whole exponent (the same range as
 * float, up to ~3.4·10³⁸) and 7 mantissa bits (a relative step of 2⁻⁸, about
 * 3 significant digits). So bf16 → float is a shift, exact; float → bf16
 * rounds away the low 16 bits, to the nearest bf16, ties to the one whose
 * last bit is 0 (even), as float arithmetic rounds.
 *
 * The paths agree to a float sum's rounding, not bit for bit: the portable
 * one converts both operands to float (exact) and calls the float product
 * matmul_bt(), which sums the K products in its own blocked order; vdpbf16ps
 * (_mm512_dpbf16_ps) adds pairs of products into 16 float lanes, which are
 * added up at the end, another order. vdpbf16ps also reads subnormal bf16
 * (below 2⁻¹²⁶ in size) as zero and flushes subnormal results to zero, which
 * the portable path does not: the two differ there by less than 2⁻¹²⁶ a term.
 *
 * The AVX-512 path keeps it simple: a tile of 4 rows of a against 4 rows of
 * b, 16 accumulators of 16 lanes, each step 32 values of k from each row; at
 * the end each accumulator's 16 lanes are added up into one element of out.
 *
 * Deliberately omitted: bf16 outputs (the sums stay float), and the packed
 * layout of gemm_int8.c's VNNI path (no sums across lanes, blocks of k): the
 * machine this was written on has no AVX-512 BF16 to measure it on.
 */
#include "gemm/gemm_lowp.h"
#include "gemm/gemm.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#define VIT_LOWP_X86 1
#include <immintrin.h>
#endif
// The BF16 instructions need GCC 10 or Clang; older compilers get the portable path only.
#if defined(VIT_LOWP_X86) && (defined(__clang__) || __GNUC__ >= 10)
#define VIT_LOWP_BF16 1
#endif

/* ------------------------------------------------------------- numbers */

// [bf16_from_float]
uint16_t bf16_from_float(float x) {
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    if ((bits & 0x7fffffffu) > 0x7f800000u)           // NaN: rounding could make it infinity,
        return (uint16_t)((bits >> 16) | 0x0040u);     // so truncate and keep it a (quiet) NaN
    // Round to nearest, ties to even: add just under half of the low 16 bits'
    // step (0x7fff), plus 1 when the bit kept last is odd; a carry rounds up.
    const uint32_t last_kept = (bits >> 16) & 1u;
    bits += 0x7fffu + last_kept;
    return (uint16_t)(bits >> 16);
}
// [bf16_from_float]

float bf16_to_float(uint16_t h) {
    const uint32_t bits = (uint32_t)h << 16;
    float x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

void bf16_from_floats(uint16_t *out, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = bf16_from_float(x[i]);
}

void bf16_to_floats(float *out, const uint16_t *h, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = bf16_to_float(h[i]);
}

/* ------------------------------------------------------------ portable */

// [gemm_bf16_bt_portable]
void gemm_bf16_bt_portable(float *out, const uint16_t *a, const uint16_t *b, int M, int K, int N) {
    // a is (M,K), b is (N,K), out is (M,N)
    if (M <= 0 || N <= 0) return;
    const size_t a_count = (size_t)M * (K > 0 ? K : 0), b_count = (size_t)N * (K > 0 ? K : 0);
    float *af = vit_malloc((a_count + b_count + 1) * sizeof(float)), *bf = af + a_count;
    bf16_to_floats(af, a, a_count); // exact: each bf16 is a float
    bf16_to_floats(bf, b, b_count);
    matmul_bt(out, af, bf, M, K, N);
    free(af);
}
// [gemm_bf16_bt_portable]

/* ---------------------------------------------------------- AVX-512 BF16 */

enum { TILE = 4 }; // rows of a and rows of b per tile: 16 accumulators

#ifdef VIT_LOWP_BF16
// Threads for a product of M·K·N multiply-adds: one for a small one (a team
// costs more than it saves) or inside a parallel region (the caller's threads
// are already busy), else vit_get_threads(), as gemm.c's tiled kernel.
static int threads_for(int M, int K, int N) {
    if ((double)M * K * N < 4e6) return 1;
#ifdef _OPENMP
    if (omp_in_parallel()) return 1;
#endif
    return vit_get_threads();
}

#define BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512bf16")))
#if defined(__clang__)
#define UNROLL _Pragma("clang loop unroll(full)")
#else
#define UNROLL _Pragma("GCC unroll 16") ///< unroll the next loop fully: acc stays in registers
#endif

// The bf16 values k..k+31 that exist of a row of K: all 32, or a mask of the rest.
BF16_TARGET static __mmask32 values_left(int K, int k) {
    return K - k >= 32 ? ~(__mmask32)0 : (((__mmask32)1 << (K - k)) - 1);
}

// One tile: out[i][j] = Σ_k a[i][k]·b[j][k] for i < rows, j < cols. a_rows and
// b_rows hold TILE pointers each; a short tile repeats a row, and only the
// valid part of the result is stored. out has row stride ldo.
BF16_TARGET static void bf16_tile(float *out, size_t ldo, const uint16_t *const *a_rows,
                                  const uint16_t *const *b_rows, int K, int rows, int cols) {
    __m512 acc[TILE][TILE];
    UNROLL for (int i = 0; i < TILE; i++)
        UNROLL for (int j = 0; j < TILE; j++) acc[i][j] = _mm512_setzero_ps();
    for (int k = 0; k < K; k += 32) {
        const __mmask32 mask = values_left(K, k); // missing values read as +0.0
        __m512i av[TILE], bv[TILE];
        for (int i = 0; i < TILE; i++) av[i] = _mm512_maskz_loadu_epi16(mask, a_rows[i] + k);
        for (int j = 0; j < TILE; j++) bv[j] = _mm512_maskz_loadu_epi16(mask, b_rows[j] + k);
        UNROLL for (int i = 0; i < TILE; i++)
            UNROLL for (int j = 0; j < TILE; j++)
                acc[i][j] = _mm512_dpbf16_ps(acc[i][j], (__m512bh)av[i], (__m512bh)bv[j]);
    }
    // loops of TILE with a test, not of rows and cols: indexed only by
    // constants once unrolled, acc stays in registers rather than on the stack
    UNROLL for (int i = 0; i < TILE; i++)
        UNROLL for (int j = 0; j < TILE; j++)
            if (i < rows && j < cols) out[(size_t)i * ldo + j] = _mm512_reduce_add_ps(acc[i][j]);
}

BF16_TARGET static void bf16_product(float *out, const uint16_t *a, const uint16_t *b, int M,
                                     int K, int N) {
    const int col_tiles = (N + TILE - 1) / TILE;
    const int threads = threads_for(M, K, N);
#pragma omp parallel for schedule(static) num_threads(threads) if (threads > 1)
    for (int t = 0; t < col_tiles; t++) {
        const int n0 = t * TILE, cols = N - n0 < TILE ? N - n0 : TILE;
        const uint16_t *b_rows[TILE];
        for (int j = 0; j < TILE; j++) b_rows[j] = b + (size_t)(n0 + (j < cols ? j : 0)) * K;
        for (int m0 = 0; m0 < M; m0 += TILE) {
            const int rows = M - m0 < TILE ? M - m0 : TILE;
            const uint16_t *a_rows[TILE];
            for (int i = 0; i < TILE; i++) a_rows[i] = a + (size_t)(m0 + (i < rows ? i : 0)) * K;
            bf16_tile(out + (size_t)m0 * N + n0, (size_t)N, a_rows, b_rows, K, rows, cols);
        }
    }
}
#endif

bool gemm_bf16_bt_avx512(float *out, const uint16_t *a, const uint16_t *b, int M, int K, int N) {
#ifdef VIT_LOWP_BF16
    if (!gemm_cpu_has_bf16()) return false;
    if (M <= 0 || N <= 0) return true;
    bf16_product(out, a, b, M, K < 0 ? 0 : K, N);
    return true;
#else
    return false;
#endif
}

/* -------------------------------------------------------------- dispatch */

void gemm_bf16_bt(float *out, const uint16_t *a, const uint16_t *b, int M, int K, int N) {
    if (strcmp(gemm_bf16_kernel(), "avx512-bf16") == 0 && gemm_bf16_bt_avx512(out, a, b, M, K, N))
        return;
    gemm_bf16_bt_portable(out, a, b, M, K, N);
}
