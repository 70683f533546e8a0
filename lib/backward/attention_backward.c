/**
 * @file attention_backward.c
 * @brief The backward pass of attention's pieces (attention.h): the scale and
 *        mask, the scores Q·Kᵀ and the weighted sum P·V.
 *
 * Shape legend: G = B·H independent heads, N tokens, Dh per head.
 *
 * The forward, per head: S = Q·Kᵀ, S' = s·S + mask, P = softmax(S') (each row,
 * softmax_backward() in softmax_backward.c), O = P·V. A matrix product
 * C = A·B has the gradients dA = dC·Bᵀ and dB = Aᵀ·dC (each entry of A meets a
 * row of B in the sum, each entry of B a column of A), so:
 *   O = P·V:  dP = dO·Vᵀ   (N,Dh)·(N,Dh)ᵀ,   dV = Pᵀ·dO   (N,N)ᵀ·(N,Dh)
 *   S = Q·Kᵀ: dQ = dS·K    (N,N)·(N,Dh),      dK = dSᵀ·Q   (N,N)ᵀ·(N,Dh)
 * (written out for dK: S_ij = Σ_d Q_id·K_jd, so dK_jd = Σ_i dS_ij·Q_id, row j of dSᵀ·Q)
 *   S' = s·S + mask: dS = s·dS', the mask being a constant.
 * Each gradient is added to what its buffer holds; per head, these are lib's
 * accumulating products (gemm.h), one thread per head.
 *
 * What it omits: dropout on the probabilities, and the fused ("flash")
 * backward that recomputes P block by block instead of keeping it.
 */
#include "gemm/gemm.h"
#include "attention/attention.h"

#include <stddef.h>

// [attention_scale_mask_backward]
void attention_scale_mask_backward(float *dscores, const float *dscaled,
                                   const AttentionOptions *opt, int B, int H, int N, int Dh) {
    // dscaled and dscores are (B, H, N, N): dscores += s·dscaled. The masks add
    // constants (0 or −inf) and pass no gradient to anything.
    const float s = attention_scale(opt, Dh);
    const size_t n = (size_t)B * H * N * N;
    for (size_t i = 0; i < n; i++) dscores[i] += s * dscaled[i];
}
// [attention_scale_mask_backward]

// [attention_scores_backward]
void attention_scores_backward(float *dq, float *dk, const float *dscores, const float *q,
                               const float *k, int G, int N, int Dh) {
    // q, k, dq and dk are (G, N, Dh), dscores is (G, N, N): dQ += dS·K, dK += dSᵀ·Q
#pragma omp parallel for schedule(static) if (G > 1)
    for (int g = 0; g < G; g++) {
        const size_t qk = (size_t)g * N * Dh;
        const float *ds = dscores + (size_t)g * N * N;
        if (dq) matmul_acc(dq + qk, ds, k + qk, N, N, Dh);    // (N,N)·(N,Dh)
        if (dk) matmul_at_acc(dk + qk, ds, q + qk, N, N, Dh); // (N,N)ᵀ·(N,Dh)
    }
}
// [attention_scores_backward]

// [attention_context_backward]
void attention_context_backward(float *dprobs, float *dv, const float *dout, const float *probs,
                                const float *v, int G, int N, int Dh) {
    // probs and dprobs are (G, N, N), v, dv and dout (G, N, Dh): dP += dO·Vᵀ, dV += Pᵀ·dO
#pragma omp parallel for schedule(static) if (G > 1)
    for (int g = 0; g < G; g++) {
        const size_t nd = (size_t)g * N * Dh, nn = (size_t)g * N * N;
        if (dprobs) matmul_bt_acc(dprobs + nn, dout + nd, v + nd, N, Dh, N); // (N,Dh)·(N,Dh)ᵀ
        if (dv) matmul_at_acc(dv + nd, probs + nn, dout + nd, N, N, Dh);    // (N,N)ᵀ·(N,Dh)
    }
}
// [attention_context_backward]
