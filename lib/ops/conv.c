/**
 * @file conv.c
 * @brief A 2-D convolution as im2col + one matrix product (see conv.h for the maths).
 *
 * Shape legend: B images, C input channels, O output channels, H×W the
 * input's side, k×k the kernel, Ho×Wo the output's side, K = C·k·k the
 * numbers one output pixel reads (one column of the unfolded image).
 *
 * Why im2col: a convolution slides the same O×K weights over every output
 * pixel. Copying, for each pixel, the K input numbers it reads into one
 * column turns all those small dot products into one matrix product,
 * (O, K)·(K, Ho·Wo), which lib/gemm does fast. The price is memory: each
 * input pixel is copied up to k² times. The unfolding and its adjoint,
 * col2im (the backward's way back into the image), share one loop order.
 */
#include "ops/conv.h"
#include "base/util.h"
#include "gemm/gemm.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

int conv2d_out_size(int n, int k, int stride, int pad) { return (n + 2 * pad - k) / stride + 1; }

// [im2col]
void conv2d_im2col(float *cols, const float *x, int C, int H, int W, int k, int stride, int pad) {
    // x is (C, H, W), cols is (C·k·k, Ho·Wo): row (c, u, v), column (i, j)
    const int Ho = conv2d_out_size(H, k, stride, pad), Wo = conv2d_out_size(W, k, stride, pad);
    for (int c = 0; c < C; c++)
        for (int u = 0; u < k; u++)
            for (int v = 0; v < k; v++) {
                float *row = cols + (((size_t)c * k + u) * k + v) * Ho * Wo;
                for (int i = 0; i < Ho; i++) {
                    float *out = row + (size_t)i * Wo;
                    const int h = i * stride + u - pad; // the input row tap (u, v) reads
                    if (h < 0 || h >= H) { // a padding row: zeros
                        memset(out, 0, sizeof(float) * (size_t)Wo);
                        continue;
                    }
                    const float *in = x + ((size_t)c * H + h) * W;
                    if (stride == 1) { // the columns inside the image are one run: copy it
                        const int j0 = pad > v ? pad - v : 0, end = W + pad - v;
                        const int j1 = end < Wo ? end : Wo;
                        for (int j = 0; j < j0; j++) out[j] = 0.0f;
                        if (j1 > j0) memcpy(out + j0, in + j0 + v - pad, sizeof(float) * (size_t)(j1 - j0));
                        for (int j = j1 > j0 ? j1 : j0; j < Wo; j++) out[j] = 0.0f;
                        continue;
                    }
                    for (int j = 0; j < Wo; j++) {
                        const int w = j * stride + v - pad;
                        out[j] = w >= 0 && w < W ? in[w] : 0.0f;
                    }
                }
            }
}
// [im2col]

// [col2im]
void conv2d_col2im(float *x, const float *cols, int C, int H, int W, int k, int stride, int pad) {
    // cols is (C·k·k, Ho·Wo), x is (C, H, W): the same walk as im2col, adding where it copied
    const int Ho = conv2d_out_size(H, k, stride, pad), Wo = conv2d_out_size(W, k, stride, pad);
    for (int c = 0; c < C; c++)
        for (int u = 0; u < k; u++)
            for (int v = 0; v < k; v++) {
                const float *row = cols + (((size_t)c * k + u) * k + v) * Ho * Wo;
                for (int i = 0; i < Ho; i++) {
                    const int h = i * stride + u - pad;
                    if (h < 0 || h >= H) continue; // a padding row: nothing to give back
                    for (int j = 0; j < Wo; j++) {
                        const int w = j * stride + v - pad;
                        if (w >= 0 && w < W) x[((size_t)c * H + h) * W + w] += row[(size_t)i * Wo + j];
                    }
                }
            }
}
// [col2im]

// [conv2d]
void conv2d_forward(float *out, const float *x, const float *w, const float *b, int B, int C,
                    int H, int W, int O, int k, int stride, int pad) {
    // x is (B, C, H, W), w is (O, C, k, k) read as (O, K), b is (O), out is (B, O, Ho, Wo)
    const int Ho = conv2d_out_size(H, k, stride, pad), Wo = conv2d_out_size(W, k, stride, pad);
    const int K = C * k * k, HWo = Ho * Wo;
    float *cols = vit_malloc((size_t)K * HWo * sizeof(float)); // one image's columns at a time
    for (int n = 0; n < B; n++) {
        float *out_n = out + (size_t)n * O * HWo;
        conv2d_im2col(cols, x + (size_t)n * C * H * W, C, H, W, k, stride, pad);
        matmul(out_n, w, cols, O, K, HWo); // (O,K)·(K,Ho·Wo): out_n = W·cols
        if (b)
            for (int o = 0; o < O; o++)
                for (int p = 0; p < HWo; p++) out_n[(size_t)o * HWo + p] += b[o];
    }
    free(cols);
}
// [conv2d]
