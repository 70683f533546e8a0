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
 * The AVX-512 path is gemm_int8.c's VNNI scheme in pairs of bf16: b packed a
 * panel of 32 columns at a time, for each pair of k the 2 values of column 0,
 * then of column 1, … (64 values: two registers of 16 lanes, one lane per
 * column of out); a packed in tiles of 12 rows; a tile of 12 × 32 of out in
 * 24 registers, each step broadcasting a row's pair to every lane and issuing
 * 24 vdpbf16ps; k cut in blocks of 256 so a panel's block stays in L1. Each
 * lane sums its column's products over k in order, a pair at a time.
 *
 * Deliberately omitted: bf16 outputs (the sums stay float), and keeping b
 * packed between calls.
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

// The tile of out one micro-kernel call computes (MR rows × NR columns: 24 of
// the 32 zmm registers), and the depth of a block of k, in values (even).
enum { MR = 12, NR = 32, KC = 256 };

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

// v[k] of a row of K values, 0 past its end (+0.0 in bf16).
static uint16_t value_or_zero(const uint16_t *row, int k, int K) { return k < K ? row[k] : 0; }

// The panel of b (N,K) from column n0: NR columns as a run of pairs of k, each
// pair the NR columns' 2 values in a row; zeros past N and past K. packed has
// NR × k_padded values.
static void pack_b_panel(uint16_t *packed, const uint16_t *b, int n0, int N, int K, int k_padded) {
    for (int g = 0; g < k_padded / 2; g++)
        for (int c = 0; c < NR; c++, packed += 2) {
            const int n = n0 + c;
            const uint16_t *row = b + (size_t)n * K;
            packed[0] = n < N ? value_or_zero(row, 2 * g, K) : 0;
            packed[1] = n < N ? value_or_zero(row, 2 * g + 1, K) : 0;
        }
}

// a packed in tiles of MR rows, each a run of pairs of k, each pair the MR
// rows' 2 values in a row (the order the micro-kernel broadcasts them); zeros
// past M and past K. packed has (M rounded up to MR) × k_padded values.
static void pack_a(uint16_t *packed, const uint16_t *a, int M, int K, int k_padded) {
    const int tiles = (M + MR - 1) / MR;
    for (int t = 0; t < tiles; t++)
        for (int g = 0; g < k_padded / 2; g++)
            for (int i = 0; i < MR; i++, packed += 2) {
                const int m = t * MR + i;
                const uint16_t *row = a + (size_t)m * K;
                packed[0] = m < M ? value_or_zero(row, 2 * g, K) : 0;
                packed[1] = m < M ? value_or_zero(row, 2 * g + 1, K) : 0;
            }
}

#define BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512bf16")))
#if defined(__clang__)
#define UNROLL _Pragma("clang loop unroll(full)")
#else
#define UNROLL _Pragma("GCC unroll 16") ///< unroll the next loop fully: acc stays in registers
#endif

/**
 * One tile: out[i][0..cols) (+)= Σ_k a[i][k]·b[n0 + j][k] over one block of k.
 * a_block points at the row tile's packed block (pairs of MR rows' values),
 * b_block at the panel's (pairs of NR columns' values). Each vdpbf16ps adds
 * to every lane (one column of out) the two products of its pair. The first
 * block of k (first) stores the sums; the later ones add them to out.
 */
// [bf16_micro_kernel]
BF16_TARGET static void bf16_micro_kernel(float *out, size_t ldo, const uint16_t *a_block,
                                          const uint16_t *b_block, int pairs, int rows, int cols,
                                          bool first) {
    __m512 acc[MR][2];
    UNROLL for (int i = 0; i < MR; i++) acc[i][0] = acc[i][1] = _mm512_setzero_ps();
    for (int g = 0; g < pairs; g++, a_block += 2 * MR, b_block += 2 * NR) {
        const __m512bh b0 = (__m512bh)_mm512_loadu_si512(b_block);
        const __m512bh b1 = (__m512bh)_mm512_loadu_si512(b_block + 32);
        UNROLL for (int i = 0; i < MR; i++) {
            int32_t two; // row i's pair of values, to every lane
            memcpy(&two, a_block + 2 * i, sizeof two);
            const __m512bh ai = (__m512bh)_mm512_set1_epi32(two);
            acc[i][0] = _mm512_dpbf16_ps(acc[i][0], ai, b0);
            acc[i][1] = _mm512_dpbf16_ps(acc[i][1], ai, b1);
        }
    }
    // the columns that exist, 16 per register
    const __mmask16 m0 = cols >= 16 ? 0xFFFF : (__mmask16)((1u << cols) - 1);
    const __mmask16 m1 = cols >= 32 ? 0xFFFF : cols <= 16 ? 0 : (__mmask16)((1u << (cols - 16)) - 1);
    // (a loop of MR with a test, not of rows: indexed only by constants once
    // unrolled, acc stays in registers rather than on the stack)
    UNROLL for (int i = 0; i < MR; i++) {
        if (i >= rows) continue;
        float *o = out + (size_t)i * ldo;
        const __m512 r0 = first ? acc[i][0] : _mm512_add_ps(acc[i][0], _mm512_maskz_loadu_ps(m0, o));
        const __m512 r1 =
            first ? acc[i][1] : _mm512_add_ps(acc[i][1], _mm512_maskz_loadu_ps(m1, o + 16));
        _mm512_mask_storeu_ps(o, m0, r0);
        _mm512_mask_storeu_ps(o + 16, m1, r1);
    }
}
// [bf16_micro_kernel]

// Every tile of out: the panels of b are shared out among the threads; each
// thread packs its panel just before using it, then for each block of k,
// every tile of MR rows (gemm_int8.c's VNNI path, in pairs of bf16).
static void bf16_product(float *out, const uint16_t *a_packed, const uint16_t *b, int M, int K,
                         int N, int k_padded) {
    const int panels = (N + NR - 1) / NR;
    const int threads = threads_for(M, k_padded, N);
    // num_threads alone, without "if (threads > 1)": LLVM's OpenMP (libomp 14)
    // carries the num_threads of a region an if clause made serial over to the
    // next parallel region, and OpenBLAS's next product (a clang build) then got
    // one thread for work it had split in two, and waited for the other forever
#pragma omp parallel num_threads(threads)
    {
        uint16_t *panel = vit_malloc_aligned((size_t)NR * k_padded * sizeof *panel + 64);
#pragma omp for schedule(static)
        for (int p = 0; p < panels; p++) {
            const int n0 = p * NR, cols = N - n0 < NR ? N - n0 : NR;
            pack_b_panel(panel, b, n0, N, K, k_padded);
            for (int k0 = 0; k0 < k_padded || k0 == 0; k0 += KC) {
                const int kc = k_padded - k0 < KC ? k_padded - k0 : KC;
                for (int m0 = 0; m0 < M; m0 += MR) {
                    const int rows = M - m0 < MR ? M - m0 : MR;
                    const uint16_t *a_block = a_packed + (size_t)m0 * k_padded + (size_t)k0 * MR;
                    bf16_micro_kernel(out + (size_t)m0 * N + n0, (size_t)N, a_block,
                                      panel + (size_t)k0 * NR, kc / 2, rows, cols, k0 == 0);
                }
            }
        }
        free(panel);
    }
}
#endif

bool gemm_bf16_bt_avx512(float *out, const uint16_t *a, const uint16_t *b, int M, int K, int N) {
#ifdef VIT_LOWP_BF16
    if (!gemm_cpu_has_bf16()) return false;
    if (M <= 0 || N <= 0) return true;
    if (K < 0) K = 0;
    const int k_padded = (K + 1) / 2 * 2;
    const size_t tiles = (size_t)(M + MR - 1) / MR;
    uint16_t *a_packed = vit_malloc_aligned(tiles * MR * k_padded * sizeof *a_packed + 64);
    pack_a(a_packed, a, M, K, k_padded);
    bf16_product(out, a_packed, b, M, K, N, k_padded);
    free(a_packed);
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
