/**
 * @file gemm_int8.c
 * @brief The int8 product out (M,N) = a (M,K) · b (N,K)ᵀ in int32: a portable
 *        path, and one on AVX-512 VNNI's vpdpbusd.
 *
 * Shapes: a (M,K) int8 activations, b (N,K) int8 weights (a Linear weight's
 * [out, in] layout), out (M,N) int32, every row K-contiguous.
 *
 * Both paths compute the same exact integer sums, so they give the same bits
 * (as long as the true sums fit in int32: gemm_lowp.h says when). The portable
 * path, the row sums and the VNNI path's arithmetic in plain C
 * (gemm_s8_bt_shifted()) are in gemm_int8_portable.c, the functions exercise
 * 15 hands out; this file holds the VNNI kernel and the dispatch.
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
 * The kernel is the float one's scheme (gemm.c) in bytes. b is packed, a
 * panel of 32 columns at a time, in the order the instruction wants: for
 * each group of 4 k, the 4 bytes of column 0, then of column 1, … of column
 * 31 (128 bytes: two registers of 16 lanes, one lane per column). A tile of
 * 12 rows × 32 columns of out lives in 24 registers; each step of 4 k loads
 * the two registers of b, broadcasts each row's 4 bytes of a' to every lane,
 * and issues 24 vpdpbusd. Each lane is one column of out, so nothing has to
 * be added up across lanes at the end. k is cut in blocks of KC_BYTES so that
 * a panel's block (32 × KC_BYTES bytes) stays in L1 while the rows of a pass;
 * a' (a with its top bits flipped) is made once per call, packed the same way
 * in tiles of 12 rows, so that each row's 4 bytes are at a fixed offset; both
 * are padded with zeros to whole tiles and whole groups of 4.
 *
 * A weight is the same matrix b at every call: gemm_s8_pack_b() packs it once,
 * whole (Int8Weight::packed), and gemm_s8_bt_vnni_packed() reads its panels
 * from there instead of packing each at every call.
 *
 * Deliberately omitted: an AVX2 path (vpdpbusd on 256-bit registers,
 * AVX-VNNI): CPUs without AVX-512 VNNI take the portable path.
 */
#include "gemm/gemm_lowp.h"
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

/* ------------------------------------------------------------------ VNNI */

// The tile of out one micro-kernel call computes (MR rows × NR columns: 24 of
// the 32 zmm registers), and the depth of a block of k, in bytes (a multiple of 4).
enum { MR = 12, NR = 32, KC_BYTES = 512 };

#ifdef VIT_LOWP_X86
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

// The panel of b (N,K) from column n0: NR columns as a run of groups of 4 k,
// each group the NR columns' 4 bytes in a row; zeros past N and past K.
// packed has NR × k_padded bytes.
static void pack_b_panel(int8_t *packed, const int8_t *b, int n0, int N, int K, int k_padded) {
    for (int g = 0; g < k_padded / 4; g++)
        for (int c = 0; c < NR; c++, packed += 4) {
            const int n = n0 + c, k = 4 * g;
            if (n < N && k + 4 <= K) memcpy(packed, b + (size_t)n * K + k, 4);
            else
                for (int t = 0; t < 4; t++) packed[t] = n < N && k + t < K ? b[(size_t)n * K + k + t] : 0;
        }
}

// a' = a + 128 as unsigned bytes (a XOR 0x80), packed in tiles of MR rows,
// each a run of groups of 4 k, each group the MR rows' 4 bytes in a row (the
// order the micro-kernel broadcasts them); zeros past M and past K.
// packed has (M rounded up to MR) × k_padded bytes.
static void pack_a_shifted(uint8_t *packed, const int8_t *a, int M, int K, int k_padded) {
    const int tiles = (M + MR - 1) / MR;
    for (int t = 0; t < tiles; t++)
        for (int g = 0; g < k_padded / 4; g++)
            for (int i = 0; i < MR; i++, packed += 4) {
                const int m = t * MR + i, k = 4 * g;
                if (m < M && k + 4 <= K) { // the 4 bytes' top bits flipped at once
                    uint32_t four;
                    memcpy(&four, a + (size_t)m * K + k, 4);
                    four ^= 0x80808080u;
                    memcpy(packed, &four, 4);
                } else
                    for (int u = 0; u < 4; u++)
                        packed[u] = m < M && k + u < K ? (uint8_t)a[(size_t)m * K + k + u] ^ 0x80u : 0;
            }
}

#define VNNI_TARGET __attribute__((target("avx512f,avx512bw,avx512vnni")))
#if defined(__clang__)
#define UNROLL _Pragma("clang loop unroll(full)")
#else
#define UNROLL _Pragma("GCC unroll 16") ///< unroll the next loop fully: acc stays in registers
#endif

/**
 * One tile: out[i][0..cols) (+)= Σ_k a'[i][k]·b[n0 + j][k] over one block of k.
 * a_block points at the row tile's packed block (groups of MR rows' 4 bytes;
 * only rows < rows are stored), b_block at the panel's (groups of NR columns'
 * 4 bytes). The first block of k (first) stores acc − 128·sums[j], the shift
 * taken back out; the later ones add acc to what out holds.
 */
// [vnni_micro_kernel]
VNNI_TARGET static void vnni_micro_kernel(int32_t *out, size_t ldo, const uint8_t *a_block,
                                          const int8_t *b_block, int groups, const int32_t *sums,
                                          int rows, int cols, bool first) {
    __m512i acc[MR][2];
    UNROLL for (int i = 0; i < MR; i++) acc[i][0] = acc[i][1] = _mm512_setzero_si512();
    for (int g = 0; g < groups; g++, a_block += 4 * MR, b_block += 4 * NR) {
        const __m512i b0 = _mm512_loadu_si512(b_block), b1 = _mm512_loadu_si512(b_block + 64);
        UNROLL for (int i = 0; i < MR; i++) {
            int32_t four; // row i's 4 bytes of a', to every lane
            memcpy(&four, a_block + 4 * i, sizeof four);
            const __m512i ai = _mm512_set1_epi32(four);
            acc[i][0] = _mm512_dpbusd_epi32(acc[i][0], ai, b0);
            acc[i][1] = _mm512_dpbusd_epi32(acc[i][1], ai, b1);
        }
    }
    // the columns that exist, 16 per register
    const __mmask16 m0 = cols >= 16 ? 0xFFFF : (__mmask16)((1u << cols) - 1);
    const __mmask16 m1 = cols >= 32 ? 0xFFFF : cols <= 16 ? 0 : (__mmask16)((1u << (cols - 16)) - 1);
    const __m512i shift0 = _mm512_slli_epi32(_mm512_maskz_loadu_epi32(m0, sums), 7); // 128·sums
    const __m512i shift1 = _mm512_slli_epi32(_mm512_maskz_loadu_epi32(m1, sums + 16), 7);
    // (a loop of MR with a test, not of rows: indexed only by constants once
    // unrolled, acc stays in registers rather than on the stack)
    UNROLL for (int i = 0; i < MR; i++) {
        if (i >= rows) continue;
        int32_t *o = out + (size_t)i * ldo;
        // integer lanes wrap around modulo 2³², as the subtraction should
        __m512i r0 = first ? _mm512_sub_epi32(acc[i][0], shift0)
                           : _mm512_add_epi32(acc[i][0], _mm512_maskz_loadu_epi32(m0, o));
        __m512i r1 = first ? _mm512_sub_epi32(acc[i][1], shift1)
                           : _mm512_add_epi32(acc[i][1], _mm512_maskz_loadu_epi32(m1, o + 16));
        _mm512_mask_storeu_epi32(o, m0, r0);
        _mm512_mask_storeu_epi32(o + 16, m1, r1);
    }
}
// [vnni_micro_kernel]

// Every tile of out: the panels of b are shared out among the threads; each
// thread packs its panel just before using it (so the packing is shared out
// too, and the panel is still in cache), then for each block of k, every tile
// of MR rows. b_packed: every panel packed already (gemm_s8_pack_b()), or NULL.
static void vnni_product(int32_t *out, const uint8_t *a_packed, const int8_t *b,
                         const int8_t *b_packed, const int32_t *sums, int M, int K, int N,
                         int k_padded) {
    const int panels = (N + NR - 1) / NR;
    const int threads = threads_for(M, k_padded, N);
    // num_threads alone, without "if (threads > 1)": LLVM's OpenMP (libomp 14)
    // carries the num_threads of a region an if clause made serial over to the
    // next parallel region, and OpenBLAS's next product (a clang build) then got
    // one thread for work it had split in two, and waited for the other forever
#pragma omp parallel num_threads(threads)
    {
        int8_t *own = b_packed ? NULL : vit_malloc_aligned((size_t)NR * k_padded + 64);
#pragma omp for schedule(static)
        for (int p = 0; p < panels; p++) {
            const int n0 = p * NR, cols = N - n0 < NR ? N - n0 : NR;
            const int8_t *panel = b_packed ? b_packed + (size_t)p * NR * k_padded : own;
            if (!b_packed) pack_b_panel(own, b, n0, N, K, k_padded);
            for (int k0 = 0; k0 < k_padded || k0 == 0; k0 += KC_BYTES) {
                const int kc = k_padded - k0 < KC_BYTES ? k_padded - k0 : KC_BYTES;
                for (int m0 = 0; m0 < M; m0 += MR) {
                    const int rows = M - m0 < MR ? M - m0 : MR;
                    const uint8_t *a_block = a_packed + (size_t)m0 * k_padded + (size_t)k0 * MR;
                    vnni_micro_kernel(out + (size_t)m0 * N + n0, (size_t)N, a_block,
                                      panel + (size_t)k0 * NR, kc / 4, sums + n0, rows, cols,
                                      k0 == 0);
                }
            }
        }
        free(own);
    }
}
#endif

size_t gemm_s8_packed_bytes(int N, int K) {
    if (N <= 0) return 0;
    const size_t panels = (size_t)(N + NR - 1) / NR, k_padded = (size_t)((K > 0 ? K : 0) + 3) / 4 * 4;
    return panels * NR * k_padded;
}

void gemm_s8_pack_b(int8_t *packed, const int8_t *b, int N, int K) {
    // b is (N,K); packed has gemm_s8_packed_bytes(N, K) bytes
#ifdef VIT_LOWP_X86
    if (K < 0) K = 0;
    const int k_padded = (K + 3) / 4 * 4;
    for (int p = 0; p < (N + NR - 1) / NR; p++)
        pack_b_panel(packed + (size_t)p * NR * k_padded, b, p * NR, N, K, k_padded);
#else
    (void)packed, (void)b, (void)N, (void)K;
#endif
}

// gemm_s8_bt_vnni() with b as it is (b_packed NULL) or packed already (b NULL).
static bool vnni_with(int32_t *out, const int8_t *a, const int8_t *b, const int8_t *b_packed,
                      const int32_t *b_sums, int M, int K, int N) {
#ifdef VIT_LOWP_X86
    if (!gemm_cpu_has_vnni()) return false;
    if (M <= 0 || N <= 0) return true;
    if (K < 0) K = 0;
    const int k_padded = (K + 3) / 4 * 4;
    const size_t tiles = (size_t)(M + MR - 1) / MR;
    uint8_t *a_packed = vit_malloc_aligned(tiles * MR * k_padded + 64);
    pack_a_shifted(a_packed, a, M, K, k_padded);
    vnni_product(out, a_packed, b, b_packed, b_sums, M, K, N, k_padded);
    free(a_packed);
    return true;
#else
    (void)b_packed;
    return false;
#endif
}

bool gemm_s8_bt_vnni(int32_t *out, const int8_t *a, const int8_t *b, const int32_t *b_sums,
                     int M, int K, int N) {
    return vnni_with(out, a, b, NULL, b_sums, M, K, N);
}

bool gemm_s8_bt_vnni_packed(int32_t *out, const int8_t *a, const int8_t *b_packed,
                            const int32_t *b_sums, int M, int K, int N) {
    return vnni_with(out, a, NULL, b_packed, b_sums, M, K, N);
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
