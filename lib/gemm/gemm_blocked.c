/**
 * @file gemm_blocked.c
 * @brief matmul_blocked() (gemm_steps.h): the ikj loops on cache-sized blocks,
 *        alone in its file so that a student's version can replace it
 *        (Chapter 14's exercise).
 *
 * Shapes: a (M,K), b (K,N), out (M,N), row-major float32.
 *
 * Why blocks. In matmul_ikj() every row of a walks the whole of b: for the
 * ViT's (768, 2304) weight that is 7 MB, read again for each of the 197 rows,
 * from L3 cache or memory. Cut b into blocks of GEMM_STEP_KC rows and
 * GEMM_STEP_NC columns (256 KiB) and let every row of a use one block before
 * moving on to the next: the block is read from far away once and then from
 * the L2 cache, by all the rows. The sums are the same; only their order
 * changes, so out is zeroed first and every block adds its part.
 */
#include "gemm/gemm_steps.h"

#include <string.h>

// [blocked]
void matmul_blocked(float *out, const float *a, const float *b, int M, int K, int N) {
    // a is (M,K), b is (K,N), out is (M,N)
    enum { MC = GEMM_STEP_MC, KC = GEMM_STEP_KC, NC = GEMM_STEP_NC };
    memset(out, 0, (size_t)M * N * sizeof *out); // every block adds its part of the sums
    for (int jc = 0; jc < N; jc += NC) {
        const int nc = N - jc < NC ? N - jc : NC; // the last block may be cut short
        for (int pc = 0; pc < K; pc += KC) {
            const int kc = K - pc < KC ? K - pc : KC;
            for (int ic = 0; ic < M; ic += MC) {
                const int mc = M - ic < MC ? M - ic : MC;
                // out[ic:+mc, jc:+nc] += a[ic:+mc, pc:+kc] · b[pc:+kc, jc:+nc], in ikj order
                for (int i = ic; i < ic + mc; i++)
                    for (int k = pc; k < pc + kc; k++) {
                        const float a_ik = a[(size_t)i * K + k];
                        const float *b_row = b + (size_t)k * N + jc;
                        float *out_row = out + (size_t)i * N + jc;
                        for (int j = 0; j < nc; j++) out_row[j] += a_ik * b_row[j];
                    }
            }
        }
    }
}
// [blocked]
