/**
 * @file pool_backward.c
 * @brief The backward passes of ReLU, 2×2 max pooling and global average
 *        pooling (conv.h).
 *
 * Shape legend: B images, C channels, H×W the input's side, Ho = H/2 and
 * Wo = W/2 the side after max pooling.
 *
 * All three are cheap because each forward output depends on its inputs so
 * simply: ReLU passes a gradient or stops it, a max passes it to one input
 * (the argmax the forward kept), a mean shares it equally among H·W inputs.
 */
#include "ops/conv.h"

void relu_backward(float *restrict dx, const float *restrict dout, const float *restrict x,
                   size_t n) {
    // x, dout and dx are n values: the slope is 1 where x > 0, else 0. Both
    // values are read and one chosen, with no branch: about half the x are
    // positive, at random, so a branch would be mispredicted half the time,
    // while the choice vectorises (the three arrays never overlap).
    for (size_t i = 0; i < n; i++) {
        const float d = dout[i];
        dx[i] += x[i] > 0.0f ? d : 0.0f;
    }
}

void maxpool2d_backward(float *dx, const float *dout, const int *argmax, int B, int C, int H,
                        int W) {
    // dout and argmax are (B, C, Ho, Wo), dx is (B, C, H, W)
    const size_t HWo = (size_t)(H / 2) * (W / 2), HW = (size_t)H * W;
    for (size_t plane = 0; plane < (size_t)B * C; plane++)
        for (size_t o = 0; o < HWo; o++)
            dx[plane * HW + argmax[plane * HWo + o]] += dout[plane * HWo + o];
}

void avgpool2d_global_backward(float *dx, const float *dout, int B, int C, int H, int W) {
    // dout is (B, C), dx is (B, C, H, W)
    const size_t HW = (size_t)H * W;
    for (size_t plane = 0; plane < (size_t)B * C; plane++) {
        const float share = dout[plane] / (float)HW;
        for (size_t p = 0; p < HW; p++) dx[plane * HW + p] += share;
    }
}
