/**
 * @file conv.h
 * @brief The operations a small convolutional network is made of: a 2-D
 *        convolution as im2col + one matrix product, ReLU, 2×2 max pooling and
 *        global average pooling, each with its backward.
 *
 * Layout NCHW, as PyTorch's: x[b][c][h][w] at ((b·C + c)·H + h)·W + w.
 * Shape legend: B images, C input channels, O output channels (filters),
 * H×W the input's side, k×k the kernel, Ho×Wo the output's side,
 * Ho = (H + 2·pad − k)/stride + 1 (rounded down, as PyTorch does).
 *
 * The forwards write their output; the backwards (in lib/backward/, the
 * `*_backward` functions) ADD the gradients of their inputs to their buffers
 * (`+=`), like every backward of ops.h: zero them once per step.
 *
 * What it omits: dilation, groups, padding other than zeros, pooling windows
 * other than 2×2 with stride 2, and any fast convolution that skips im2col
 * (Winograd, FFT, direct kernels): here a convolution IS a matrix product.
 */
#ifndef VIT_CONV_H
#define VIT_CONV_H

#include <stddef.h>

/** @defgroup conv Convolution and pooling
 *  @brief \f[ \text{out}_{b,o,i,j} = b_o + \sum_{c,u,v} W_{o,c,u,v}\;
 *             x_{b,\,c,\,i s + u - p,\,j s + v - p} \f]
 *  computed as one matrix product per image, \f$ W\,(O, Ck^2) \cdot
 *  \mathrm{im2col}(x)\,(Ck^2, H_oW_o) \f$; ReLU, max and average pooling;
 *  and their gradients. The layers of the small CNN (cnn.h) that chapter 11
 *  trains beside the ViT.
 *
 *  @ref chapter06 "Chapter 06"'s patch embedding is the special case kernel = stride,
 *  where the windows do not overlap and im2col is patch_unfold(); its backward follows
 *  @ref chapter10 "chapter 10"'s recipe. Pinned by the suite @ref test_cnn.c "cnn"
 *  (@ref answer_keys "the answer keys").
 *  @{
 */

/** @brief The side of a convolution's output: (n + 2·pad − k)/stride + 1, rounded down. */
int conv2d_out_size(int n, int k, int stride, int pad);

/**
 * @brief Unfold one image into the columns a convolution multiplies
 *        ("image to columns").
 *
 * Row (c·k + u)·k + v of @p cols holds, for every output pixel (i, j), the
 * input pixel the kernel's tap (u, v) of channel c lands on:
 * \f[ \text{cols}_{(c,u,v),\,(i,j)} = x_{c,\; i s + u - p,\; j s + v - p} \f]
 * and 0 where that falls in the padding. Each input pixel is copied up to
 * k² times: memory traded for one large matrix product.
 * @param[out] cols  (C·k·k, Ho·Wo)
 * @param[in]  x     (C, H, W), one image
 * @param[in]  C, H, W     channels and side of the image
 * @param[in]  k, stride, pad  kernel side, step and zero padding
 */
void conv2d_im2col(float *cols, const float *x, int C, int H, int W, int k, int stride, int pad);

/**
 * @brief The adjoint of conv2d_im2col(): fold columns back into an image,
 *        ADDING every entry to the pixel it was copied from.
 *
 * A pixel copied into several columns collects all of their values, so
 * \f$ \langle \mathrm{im2col}(x), y \rangle = \langle x, \mathrm{col2im}(y) \rangle \f$;
 * entries that came from the padding are dropped.
 * @param[in,out] x     (C, H, W), added to
 * @param[in]     cols  (C·k·k, Ho·Wo)
 * @param[in]     C, H, W     channels and side of the image
 * @param[in]     k, stride, pad  kernel side, step and zero padding
 */
void conv2d_col2im(float *x, const float *cols, int C, int H, int W, int k, int stride, int pad);

/**
 * @brief 2-D convolution with zero padding (PyTorch's `F.conv2d(x, w, b, stride, pad)`).
 *
 * \f[ \text{out}_{b,o,i,j} = b_o + \sum_{c=0}^{C-1}\sum_{u,v=0}^{k-1} W_{o,c,u,v}\,
 *     x_{b,\,c,\,i s + u - p,\,j s + v - p} \f]
 * (x is 0 outside the image). Per image: cols = conv2d_im2col(x_b), then
 * \f$ \text{out}_b = W \cdot \text{cols} \f$ with W read as an (O, C·k·k)
 * matrix: the matrix product of lib/gemm does the work.
 * @param[out] out  (B, O, Ho, Wo)
 * @param[in]  x    (B, C, H, W)
 * @param[in]  w    (O, C, k, k), PyTorch's nn.Conv2d layout
 * @param[in]  b    (O), or NULL for no bias
 * @param[in]  B, C, H, W, O   images, input channels, side, output channels
 * @param[in]  k, stride, pad  kernel side, step and zero padding
 */
void conv2d_forward(float *out, const float *x, const float *w, const float *b, int B, int C,
                    int H, int W, int O, int k, int stride, int pad);

/**
 * @brief Backward of conv2d_forward(): the gradients of its input, weight and bias.
 *
 * Per image, with cols = im2col(x_b) and dout_b read as (O, Ho·Wo), the
 * convolution is a linear layer over the columns, so
 * \f[ dW \mathrel{+}= \sum_b \text{dout}_b\,\text{cols}_b^\top, \qquad
 *     dx_b \mathrel{+}= \mathrm{col2im}\big(W^\top \text{dout}_b\big), \qquad
 *     db_o \mathrel{+}= \sum_{b,i,j} \text{dout}_{b,o,i,j} \f]
 * The columns are unfolded again from x rather than kept from the forward.
 * @param[in,out] dx    (B, C, H, W), added to; or NULL
 * @param[in,out] dw    (O, C, k, k), added to; or NULL
 * @param[in,out] db    (O), added to; or NULL
 * @param[in]     dout  (B, O, Ho, Wo) gradient of the output
 * @param[in]     x     (B, C, H, W) the forward's input (only read for dw)
 * @param[in]     w     (O, C, k, k) the weight (only read for dx)
 * @param[in]     B, C, H, W, O   images, input channels, side, output channels
 * @param[in]     k, stride, pad  kernel side, step and zero padding
 */
void conv2d_backward(float *dx, float *dw, float *db, const float *dout, const float *x,
                     const float *w, int B, int C, int H, int W, int O, int k, int stride,
                     int pad);

/**
 * @brief ReLU, \f$ \mathrm{relu}(x) = \max(x, 0) \f$.
 * @param[out] out  n values; may equal x
 * @param[in]  x    n values
 * @param[in]  n    number of elements
 */
void relu_forward(float *out, const float *x, size_t n);

/**
 * @brief Backward of relu_forward():
 *        \f$ dx \mathrel{+}= \text{dout} \cdot [x > 0] \f$ (0 at x = 0, as PyTorch).
 * @param[in,out] dx    n values, added to
 * @param[in]     dout  n values, the gradient of the output
 * @param[in]     x     n values, the forward's input (or its output: same sign test)
 * @param[in]     n     number of elements
 *
 * The three arrays must not overlap (`restrict`): the loop is then vectorised.
 */
void relu_backward(float *restrict dx, const float *restrict dout, const float *restrict x,
                   size_t n);

/**
 * @brief 2×2 max pooling with stride 2 (PyTorch's `F.max_pool2d(x, 2)`).
 *
 * \f[ \text{out}_{b,c,i,j} = \max_{u,v \in \{0,1\}} x_{b,\,c,\,2i+u,\,2j+v} \f]
 * with Ho = H/2, Wo = W/2 rounded down: an odd last row or column is dropped.
 * The position of each maximum is kept for the backward; a tie goes to the
 * first in row order, as PyTorch.
 * @param[out] out     (B, C, Ho, Wo)
 * @param[out] argmax  (B, C, Ho, Wo): where in its (H, W) plane each maximum
 *                     was, h·W + w (PyTorch's `return_indices=True`)
 * @param[in]  x       (B, C, H, W)
 * @param[in]  B, C, H, W  images, channels and side
 */
void maxpool2d_forward(float *out, int *argmax, const float *x, int B, int C, int H, int W);

/**
 * @brief Backward of maxpool2d_forward(): each output's gradient goes to the
 *        input that was its maximum, the other three get nothing.
 *
 * \f[ dx_{b,c,h,w} \mathrel{+}= \sum_{(i,j):\ \mathrm{argmax}_{b,c,i,j} = (h,w)}
 *     \text{dout}_{b,c,i,j} \f]
 * @param[in,out] dx      (B, C, H, W), added to
 * @param[in]     dout    (B, C, Ho, Wo) gradient of the output
 * @param[in]     argmax  (B, C, Ho, Wo) from maxpool2d_forward()
 * @param[in]     B, C, H, W  images, channels and the INPUT's side
 */
void maxpool2d_backward(float *dx, const float *dout, const int *argmax, int B, int C, int H,
                        int W);

/**
 * @brief Global average pooling: the mean of each channel's plane
 *        (PyTorch's `x.mean(dim=(2, 3))`, or `F.adaptive_avg_pool2d(x, 1)` flattened).
 *
 * \f[ \text{out}_{b,c} = \frac{1}{HW} \sum_{h,w} x_{b,c,h,w} \f]
 * summed in double.
 * @param[out] out  (B, C)
 * @param[in]  x    (B, C, H, W)
 * @param[in]  B, C, H, W  images, channels and side
 */
void avgpool2d_global_forward(float *out, const float *x, int B, int C, int H, int W);

/**
 * @brief Backward of avgpool2d_global_forward(): every pixel of a plane took
 *        the same share of its mean,
 *        \f$ dx_{b,c,h,w} \mathrel{+}= \text{dout}_{b,c} / (HW) \f$.
 * @param[in,out] dx    (B, C, H, W), added to
 * @param[in]     dout  (B, C) gradient of the output
 * @param[in]     B, C, H, W  images, channels and side
 */
void avgpool2d_global_backward(float *dx, const float *dout, int B, int C, int H, int W);

/** @} */
#endif
