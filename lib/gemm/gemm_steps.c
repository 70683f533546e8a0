/**
 * @file gemm_steps.c
 * @brief Two of the teaching steps between matmul_naive() and matmul_tiled():
 *        the ikj loop order, and packing with a plain-C micro-kernel.
 *
 * Shapes: a (M,K), b (K,N), out (M,N), row-major float32 (gemm_steps.h).
 * The step between the two, matmul_blocked(), is alone in gemm_blocked.c so
 * that Chapter 14's exercise can replace it.
 *
 * These are written to be read, not to be fast at any cost: one thread, no
 * SIMD of their own (the compiler may vectorise the innermost loops for the
 * generic x86-64 target, i.e. 128-bit SSE2), no transposed b. lib/gemm/gemm.c's
 * matmul_tiled() is what the same ideas look like when they are pushed to the
 * machine's limits.
 */
#include "gemm/gemm_steps.h"

#include <stdlib.h>
#include <string.h>

#include "base/util.h"

static int min_int(int x, int y) { return x < y ? x : y; }

/* ------------------------------------------------------------ loop order */

// [ikj]
void matmul_ikj(float *out, const float *a, const float *b, int M, int K, int N) {
    // a is (M,K), b is (K,N), out is (M,N)
    memset(out, 0, (size_t)M * N * sizeof *out);
    for (int i = 0; i < M; i++) {
        float *out_row = out + (size_t)i * N;
        for (int k = 0; k < K; k++) {
            const float a_ik = a[(size_t)i * K + k];
            const float *b_row = b + (size_t)k * N;
            for (int j = 0; j < N; j++) out_row[j] += a_ik * b_row[j]; // stride 1, independent
        }
    }
}
// [ikj]

/* ------------------------------------------------------------- packing */

enum { MR = GEMM_STEP_MR, NR = GEMM_STEP_NR };

// a_block ← a[i0:i0+mc, k0:k0+kc] as ceil(mc/MR) slivers, sliver s holding rows
// i0 + s·MR … + MR column by column: a_block[s][k][r] = a[i0 + s·MR + r][k0 + k].
// Rows past the edge are zeros, so the micro-kernel always sees whole slivers.
// [pack_a]
static void pack_a(float *a_block, const float *a, int K, int i0, int mc, int k0, int kc) {
    for (int s = 0; s * MR < mc; s++) {
        float *sliver = a_block + (size_t)s * MR * kc;
        for (int k = 0; k < kc; k++)
            for (int r = 0; r < MR; r++) {
                const int i = s * MR + r;
                sliver[(size_t)k * MR + r] = i < mc ? a[(size_t)(i0 + i) * K + k0 + k] : 0.0f;
            }
    }
}
// [pack_a]

// b_block ← b[k0:k0+kc, j0:j0+nc] as ceil(nc/NR) slivers, sliver s holding
// columns j0 + s·NR … + NR row by row: b_block[s][k][c] = b[k0 + k][j0 + s·NR + c].
// Columns past the edge are zeros.
// [pack_b]
static void pack_b(float *b_block, const float *b, int N, int k0, int kc, int j0, int nc) {
    for (int s = 0; s * NR < nc; s++) {
        float *sliver = b_block + (size_t)s * NR * kc;
        for (int k = 0; k < kc; k++)
            for (int c = 0; c < NR; c++) {
                const int j = s * NR + c;
                sliver[(size_t)k * NR + c] = j < nc ? b[(size_t)(k0 + k) * N + j0 + j] : 0.0f;
            }
    }
}
// [pack_b]

/* -------------------------------------------------------- micro-kernel */

// [micro_kernel]
// tile (MR,NR) = a_sliver (kc,MR)ᵀ · b_sliver (kc,NR), both packed: step k reads
// MR values of a and NR of b, one after the other, and does MR·NR multiply-adds
// into MR·NR independent sums that live in registers for the whole loop.
static void micro_kernel(float tile[MR][NR], const float *a_sliver, const float *b_sliver,
                         int kc) {
    float acc[MR][NR] = {{0}};
    for (int k = 0; k < kc; k++, a_sliver += MR, b_sliver += NR)
#pragma GCC unroll 4 // both loops written out in full, so that acc can live in registers
        for (int r = 0; r < MR; r++)
#pragma GCC unroll 8
            for (int c = 0; c < NR; c++) acc[r][c] += a_sliver[r] * b_sliver[c];
    memcpy(tile, acc, sizeof acc);
}
// [micro_kernel]

// out[i0:i0+mc, j0:j0+nc] += a_block · b_block, one micro-kernel call per tile;
// of a tile cut by the edge of out only the rows and columns inside are added.
// [add_block]
static void add_block(float *out, int N, const float *a_block, const float *b_block, int i0,
                      int mc, int j0, int nc, int kc) {
    for (int jr = 0; jr < nc; jr += NR)
        for (int ir = 0; ir < mc; ir += MR) {
            float tile[MR][NR];
            micro_kernel(tile, a_block + (size_t)ir * kc, b_block + (size_t)jr * kc, kc);
            const int rows = min_int(MR, mc - ir), cols = min_int(NR, nc - jr);
            for (int r = 0; r < rows; r++)
                for (int c = 0; c < cols; c++)
                    out[(size_t)(i0 + ir + r) * N + j0 + jr + c] += tile[r][c];
        }
}
// [add_block]

// [matmul_packed]
void matmul_packed(float *out, const float *a, const float *b, int M, int K, int N) {
    // a is (M,K), b is (K,N), out is (M,N); the blocks of matmul_blocked(), packed
    // (MC and NC are multiples of MR and NR, so whole slivers fill the buffers exactly)
    enum { MC = GEMM_STEP_MC, KC = GEMM_STEP_KC, NC = GEMM_STEP_NC };
    float *a_block = vit_malloc_aligned(sizeof(float) * MC * KC);          // MC×KC, as slivers
    float *b_block = vit_malloc_aligned(sizeof(float) * KC * NC);          // KC×NC, as slivers
    memset(out, 0, (size_t)M * N * sizeof *out);
    for (int jc = 0; jc < N; jc += NC) {
        const int nc = min_int(NC, N - jc);
        for (int pc = 0; pc < K; pc += KC) {
            const int kc = min_int(KC, K - pc);
            pack_b(b_block, b, N, pc, kc, jc, nc); // once per block, used by every row block
            for (int ic = 0; ic < M; ic += MC) {
                const int mc = min_int(MC, M - ic);
                pack_a(a_block, a, K, ic, mc, pc, kc);
                add_block(out, N, a_block, b_block, ic, mc, jc, nc, kc);
            }
        }
    }
    free(a_block);
    free(b_block);
}
// [matmul_packed]
