/**
 * @file ops_backward.c
 * @brief The backward pass of a linear layer (ops.h): the gradients of its input, weight and bias.
 *
 * Shape legend: N rows (tokens), I input features, O output features.
 *
 * Forward: out = x·Wᵀ + b, i.e. out[n][o] = Σ_i x[n][i]·W[o][i] + b[o]. Each
 * gradient is one chain rule through that sum:
 *   ∂out[n][o]/∂x[n][i] = W[o][i]  →  dx[n][i] = Σ_o dout[n][o]·W[o][i]   dx = dout·W
 *   ∂out[n][o]/∂W[o][i] = x[n][i]  →  dW[o][i] = Σ_n dout[n][o]·x[n][i]   dW = doutᵀ·x
 *   ∂out[n][o]/∂b[o]    = 1        →  db[o]    = Σ_n dout[n][o]
 * dW and db sum over the rows because every row used the same W and b.
 * Every gradient is added to what its buffer holds (the caller zeroes them
 * once per step), so a tensor that feeds two layers collects both.
 *
 * What it omits: dropout, weight decay (the optimizer's business).
 */
#include "gemm/gemm.h"
#include "ops/ops.h"

#include <stddef.h>

enum { BIAS_BLOCK = 64 }; // output features one thread sums at a time

void ops_linear_backward(float *dx, float *dw, float *db, const float *dout, const float *x,
                     const float *w, int N, int I, int O) {
    // x is (N, I), w is (O, I), dout is (N, O); dx is (N, I), dw is (O, I), db is (O)
    if (dx) matmul_acc(dx, dout, w, N, O, I);    // (N,O)·(O,I): dx += dout·W
    if (dw) matmul_at_acc(dw, dout, x, O, N, I); // (N,O)ᵀ·(N,I): dW += doutᵀ·x
    if (!db) return;
    // db[o] += Σ_n dout[n][o], summed in double, in row order: the same bits
    // however many threads share the columns
#pragma omp parallel for schedule(static) if ((size_t)N * O > 65536)
    for (int o0 = 0; o0 < O; o0 += BIAS_BLOCK) {
        const int o1 = o0 + BIAS_BLOCK < O ? o0 + BIAS_BLOCK : O;
        double sum[BIAS_BLOCK] = {0};
        for (int n = 0; n < N; n++)
            for (int o = o0; o < o1; o++) sum[o - o0] += dout[(size_t)n * O + o];
        for (int o = o0; o < o1; o++) db[o] += (float)sum[o - o0];
    }
}
