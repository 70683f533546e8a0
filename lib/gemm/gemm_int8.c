/**
 * @file gemm_int8.c
 * @brief The int8 product out (M,N) = a (M,K) · b (N,K)ᵀ in int32: a portable
 *        path, and one on AVX-512 VNNI's vpdpbusd.
 *
 * Shapes: a (M,K) int8 activations, b (N,K) int8 weights (a Linear weight's
 * [out, in] layout), out (M,N) int32, every row K-contiguous.
 *
 * Both paths compute the same exact integer sums, so they give the same bits
 * (as long as the true sums fit in int32: gemm_lowp.h says when).
 *
 * The VNNI path. vpdpbusd (_mm512_dpbusd_epi32) takes 64 unsigned bytes u and
 * 64 signed bytes s, and adds to each of 16 int32 lanes the sum of 4 products,
 *   acc[l] += u[4l]·s[4l] + u[4l+1]·s[4l+1] + u[4l+2]·s[4l+2] + u[4l+3]·s[4l+3],
 * 64 multiply-adds in one instruction where float has 16 FMAs. Our a is
 * signed, so it goes in shifted: a' = a + 128 (0..255, the same byte with its
 * top bit flipped), and since Σ_k a'·b = Σ_k a·b + 128·Σ_k b, the shift comes
 * back out with b's row sum: out[m][n] = Σ_k a'[m][k]·b[n][k] − 128·sums[n].
 * The sums wrap around modulo 2³² inside the instruction and in the
 * subtraction, so even an intermediate that left int32 gives the right answer.
 *
 * The kernel treats a 4 × 4 tile of out at once: for each 64 bytes of k it
 * loads 4 rows of a and 4 rows of b and issues 16 vpdpbusd, each into its own
 * accumulator (16 independent chains); at the end each accumulator's 16 lanes
 * are added up. No packing: each row is already K-contiguous. The last,
 * shorter step of k loads with a mask (missing bytes read as 0: b's zero
 * makes their product 0 whatever a' is).
 *
 * Deliberately omitted: cache blocking beyond the tile (a tile of 4 rows of b,
 * 3 KB at K = 768, stays in L1 while a streams past it from L2).
 */
#include "gemm/gemm_lowp.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#define VIT_LOWP_X86 1
#include <immintrin.h>
#endif

/* -------------------------------------------------------------- portable */

// Σ_k a[k]·b[k] in int32: each product fits in 16 bits, the compiler widens
// and vectorises the loop (pmaddwd on SSE2).
static int32_t dot_s8(const int8_t *a, const int8_t *b, int K) {
    int32_t sum = 0;
    for (int k = 0; k < K; k++) sum += (int32_t)a[k] * (int32_t)b[k];
    return sum;
}

// [gemm_s8_bt_portable]
void gemm_s8_bt_portable(int32_t *out, const int8_t *a, const int8_t *b, int M, int K, int N) {
    // a is (M,K), b is (N,K), out is (M,N)
    for (int m = 0; m < M; m++)
        for (int n = 0; n < N; n++)
            out[(size_t)m * N + n] = dot_s8(a + (size_t)m * K, b + (size_t)n * K, K);
}
// [gemm_s8_bt_portable]

void gemm_s8_row_sums(int32_t *sums, const int8_t *b, int N, int K) {
    // b is (N,K), sums is (N)
    for (int n = 0; n < N; n++) {
        int32_t s = 0;
        for (int k = 0; k < K; k++) s += b[(size_t)n * K + k];
        sums[n] = s;
    }
}

/* ------------------------------------------------------------------ VNNI */

enum { TILE = 4 }; // rows of a and rows of b per tile: 16 accumulators of 32 zmm

#ifdef VIT_LOWP_X86
#define VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vnni")))

// The bytes k..k+63 that exist of a row of K: all 64, or a mask of the rest.
VNNI_TARGET static __mmask64 bytes_left(int K, int k) {
    return K - k >= 64 ? ~(__mmask64)0 : (((__mmask64)1 << (K - k)) - 1);
}

// One tile: out[i][j] = Σ_k a'[i][k]·b[j][k] − 128·sums[j] for i < rows, j < cols.
// a_rows and b_rows hold TILE pointers each; a short tile repeats a row, and
// only the valid part of the result is stored. out has row stride ldo.
// [vnni_tile]
VNNI_TARGET static void vnni_tile(int32_t *out, size_t ldo, const int8_t *const *a_rows,
                                  const int8_t *const *b_rows, const int32_t *sums, int K,
                                  int rows, int cols) {
    const __m512i flip = _mm512_set1_epi8((char)0x80); // a XOR 0x80 = a + 128 as unsigned
    __m512i acc[TILE][TILE];
    for (int i = 0; i < TILE; i++)
        for (int j = 0; j < TILE; j++) acc[i][j] = _mm512_setzero_si512();
    for (int k = 0; k < K; k += 64) {
        const __mmask64 mask = bytes_left(K, k);
        __m512i av[TILE], bv[TILE];
        for (int i = 0; i < TILE; i++)
            av[i] = _mm512_xor_si512(_mm512_maskz_loadu_epi8(mask, a_rows[i] + k), flip);
        for (int j = 0; j < TILE; j++) bv[j] = _mm512_maskz_loadu_epi8(mask, b_rows[j] + k);
        for (int i = 0; i < TILE; i++)
            for (int j = 0; j < TILE; j++) acc[i][j] = _mm512_dpbusd_epi32(acc[i][j], av[i], bv[j]);
    }
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) {
            // unsigned arithmetic: the wrap-around modulo 2³² the instruction also does
            const uint32_t shifted = (uint32_t)_mm512_reduce_add_epi32(acc[i][j]);
            out[(size_t)i * ldo + j] = (int32_t)(shifted - 128u * (uint32_t)sums[j]);
        }
}
// [vnni_tile]

// Tiles of out: 4 rows of b (a column tile) at a time, each against every
// row tile of a; the column tiles are shared out among the threads.
VNNI_TARGET static void vnni_product(int32_t *out, const int8_t *a, const int8_t *b,
                                     const int32_t *sums, int M, int K, int N) {
    const int col_tiles = (N + TILE - 1) / TILE;
    const double work = (double)M * K * N;
#pragma omp parallel for schedule(static) if (work > 4e6)
    for (int t = 0; t < col_tiles; t++) {
        const int n0 = t * TILE, cols = N - n0 < TILE ? N - n0 : TILE;
        const int8_t *b_rows[TILE];
        for (int j = 0; j < TILE; j++) b_rows[j] = b + (size_t)(n0 + (j < cols ? j : 0)) * K;
        for (int m0 = 0; m0 < M; m0 += TILE) {
            const int rows = M - m0 < TILE ? M - m0 : TILE;
            const int8_t *a_rows[TILE];
            for (int i = 0; i < TILE; i++) a_rows[i] = a + (size_t)(m0 + (i < rows ? i : 0)) * K;
            vnni_tile(out + (size_t)m0 * N + n0, (size_t)N, a_rows, b_rows, sums + n0, K, rows,
                      cols);
        }
    }
}
#endif

bool gemm_s8_bt_vnni(int32_t *out, const int8_t *a, const int8_t *b, const int32_t *b_sums,
                     int M, int K, int N) {
#ifdef VIT_LOWP_X86
    if (!gemm_cpu_has_vnni()) return false;
    if (M <= 0 || N <= 0) return true;
    vnni_product(out, a, b, b_sums, M, K < 0 ? 0 : K, N);
    return true;
#else
    return false;
#endif
}

/* -------------------------------------------------------------- dispatch */

void gemm_s8_bt_summed(int32_t *out, const int8_t *a, const int8_t *b, const int32_t *b_sums,
                       int M, int K, int N) {
    if (strcmp(gemm_s8_kernel(), "avx512-vnni") == 0 &&
        gemm_s8_bt_vnni(out, a, b, b_sums, M, K, N))
        return;
    gemm_s8_bt_portable(out, a, b, M, K, N);
}

void gemm_s8_bt(int32_t *out, const int8_t *a, const int8_t *b, int M, int K, int N) {
    if (strcmp(gemm_s8_kernel(), "avx512-vnni") != 0 || N <= 0) {
        gemm_s8_bt_portable(out, a, b, M, K, N);
        return;
    }
    int32_t *sums = vit_malloc((size_t)N * sizeof *sums);
    gemm_s8_row_sums(sums, b, N, K);
    gemm_s8_bt_summed(out, a, b, sums, M, K, N);
    free(sums);
}
