/**
 * @file pool.c
 * @brief ReLU, 2×2 max pooling and global average pooling (see conv.h for the maths).
 *
 * Shape legend: B images, C channels, H×W the input's side, Ho = H/2 and
 * Wo = W/2 (rounded down) the side after max pooling.
 *
 * Max pooling keeps where each maximum was (argmax): its backward needs
 * nothing else, and a student can see which pixel won each window.
 */
#include "ops/conv.h"

// [relu]
void relu_forward(float *out, const float *x, size_t n) {
    for (size_t i = 0; i < n; i++) out[i] = x[i] > 0.0f ? x[i] : 0.0f;
}
// [relu]

// [maxpool]
void maxpool2d_forward(float *out, int *argmax, const float *x, int B, int C, int H, int W) {
    // x is (B, C, H, W); out and argmax are (B, C, Ho, Wo); argmax is h·W + w in its plane
    const int Ho = H / 2, Wo = W / 2;
    for (size_t plane = 0; plane < (size_t)B * C; plane++) {
        const float *xp = x + plane * H * W;
        for (int i = 0; i < Ho; i++)
            for (int j = 0; j < Wo; j++) {
                int best = 2 * i * W + 2 * j; // the window's top-left pixel
                for (int u = 0; u < 2; u++)
                    for (int v = 0; v < 2; v++) {
                        const int at = (2 * i + u) * W + 2 * j + v;
                        if (xp[at] > xp[best]) best = at; // strictly: a tie keeps the first
                    }
                const size_t o = (plane * Ho + i) * Wo + j;
                out[o] = xp[best];
                argmax[o] = best;
            }
    }
}
// [maxpool]

// [avgpool]
void avgpool2d_global_forward(float *out, const float *x, int B, int C, int H, int W) {
    // x is (B, C, H, W), out is (B, C)
    const size_t HW = (size_t)H * W;
    for (size_t plane = 0; plane < (size_t)B * C; plane++) {
        double sum = 0.0;
        for (size_t p = 0; p < HW; p++) sum += x[plane * HW + p];
        out[plane] = (float)(sum / (double)HW);
    }
}
// [avgpool]
