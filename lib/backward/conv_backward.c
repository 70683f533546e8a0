/**
 * @file conv_backward.c
 * @brief The backward pass of a convolution (conv.h): the gradients of its
 *        input, weight and bias.
 *
 * Shape legend: B images, C input channels, O output channels, H×W the
 * input's side, k×k the kernel, Ho×Wo the output's side, K = C·k·k.
 *
 * Per image the forward is out_b = W·cols_b, cols_b = im2col(x_b): a linear
 * layer whose "rows" are the Ho·Wo output pixels. So, as in ops_backward.c:
 *   dW    += dout_b·cols_bᵀ        (O,Ho·Wo)·(Ho·Wo,K), summed over the images
 *   dcols  = Wᵀ·dout_b             (K,O)·(O,Ho·Wo)
 *   dx_b  += col2im(dcols)         each column entry back to the pixel it copied
 *   db[o] += Σ_{b,i,j} dout[b][o][i][j]
 * A pixel copied into several columns (kernels overlap when stride < k)
 * collects the gradient of every copy: col2im adds.
 */
#include "ops/conv.h"
#include "base/util.h"
#include "gemm/gemm.h"

#include <stdlib.h>
#include <string.h>

// db[o] += Σ over images and pixels of dout[b][o], summed in double
static void conv2d_bias_backward(float *db, const float *dout, int B, int O, int HWo) {
    for (int o = 0; o < O; o++) {
        double sum = 0.0;
        for (int n = 0; n < B; n++)
            for (int p = 0; p < HWo; p++) sum += dout[((size_t)n * O + o) * HWo + p];
        db[o] += (float)sum;
    }
}

void conv2d_backward(float *dx, float *dw, float *db, const float *dout, const float *x,
                     const float *w, int B, int C, int H, int W, int O, int k, int stride,
                     int pad) {
    // dout is (B, O, Ho, Wo), x and dx (B, C, H, W), w and dw (O, C, k, k) read as (O, K)
    const int Ho = conv2d_out_size(H, k, stride, pad), Wo = conv2d_out_size(W, k, stride, pad);
    const int K = C * k * k, HWo = Ho * Wo;
    float *cols = vit_malloc((size_t)K * HWo * sizeof(float)); // one image's (K, Ho·Wo) at a time
    for (int n = 0; n < B; n++) {
        const float *dout_n = dout + (size_t)n * O * HWo;
        if (dw) {
            conv2d_im2col(cols, x + (size_t)n * C * H * W, C, H, W, k, stride, pad);
            matmul_bt_acc(dw, dout_n, cols, O, HWo, K); // (O,HWo)·(K,HWo)ᵀ: dW += dout·colsᵀ
        }
        if (dx) {
            memset(cols, 0, (size_t)K * HWo * sizeof(float));
            matmul_at_acc(cols, w, dout_n, K, O, HWo); // (O,K)ᵀ·(O,HWo): dcols = Wᵀ·dout
            conv2d_col2im(dx + (size_t)n * C * H * W, cols, C, H, W, k, stride, pad);
        }
    }
    free(cols);
    if (db) conv2d_bias_backward(db, dout, B, O, HWo);
}
