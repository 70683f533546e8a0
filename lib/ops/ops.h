/**
 * @file ops.h
 * @brief The small operations a transformer is made of, one function each.
 *
 * Convention (llm.c): outputs first, then inputs, then sizes; the first
 * comment of each function gives the shapes. `out` may be the same pointer as
 * the input for the elementwise and row-wise ops (in-place is allowed).
 *
 * Shape legend: N rows (tokens), D features, I/O linear in/out features.
 *
 * Each forward has its backward beside it (the `*_backward` functions, and
 * loss_cross_entropy(), the loss with its gradient): given the gradient of the
 * output, they ADD the gradients of the inputs to their buffers (`+=`), so a
 * tensor used twice collects both contributions; zero them once per step.
 *
 * What it omits: broadcasting, dtypes other than float32.
 * dot(), softmax(), softmax_backward() and layernorm_backward() live in their
 * own files (dot.c, softmax.c, …) so a student's version can replace them at link time.
 */
#ifndef VIT_OPS_H
#define VIT_OPS_H

#include <stddef.h>

#include "gemm/gemm_lowp.h"

/** @defgroup ops Elementary operations
 *  @brief Dot product, scaling, adding, softmax, LayerNorm, GELU, linear layers, top K;
 *         their gradients and the cross-entropy loss.
 *
 *  Taught in @ref chapter01 "chapter 01" (dot()), @ref chapter02 "chapter 02" (ops_scale()),
 *  @ref chapter03 "chapter 03" (softmax()), @ref chapter08 "chapter 08" (layernorm(), gelu()),
 *  @ref chapter10 "chapter 10" (the backward of softmax and LayerNorm, the loss). Pinned by the
 *  suites @ref test_ops.c "ops", @ref test_dot.c "dot", @ref test_softmax.c "softmax",
 *  @ref test_layernorm.c "layernorm", @ref test_gelu.c "gelu", @ref test_backward.c "backward",
 *  @ref test_ch03_softmax.c "ch03_softmax", @ref test_ch08_encoder_block.c "ch08_encoder_block"
 *  (@ref answer_keys "the answer keys").
 *  @{
 */

/**
 * @brief Dot product \f$ a \cdot b = \sum_i a_i b_i \f$ (accumulated in double).
 * @param[in] a, b  vectors of length n
 * @param[in] n     number of elements
 */
float dot(const float *a, const float *b, int n);

/** @brief out[i] = s · x[i] for n elements. */
void ops_scale(float *out, const float *x, float s, size_t n);

/** @brief out[i] = a[i] + b[i] for n elements. */
void ops_add(float *out, const float *a, const float *b, size_t n);

/**
 * @brief Row-wise softmax, numerically stable.
 *
 * \f[ \mathrm{softmax}(x)_j = \frac{e^{x_j - m}}{\sum_k e^{x_k - m}},\quad m = \max_k x_k \f]
 * Subtracting the row maximum changes nothing mathematically but keeps every
 * exponent ≤ 0, so nothing overflows.
 *
 * Rows that are not ordinary numbers, each row on its own:
 * - a row containing a NaN, or a +inf, gives all NaN, as PyTorch's
 *   torch.softmax does (+inf − +inf is NaN): bad input shows, it does not
 *   pass for probabilities;
 * - otherwise a row that is entirely -inf (fully masked) gives all zeros,
 *   where PyTorch gives NaN: a query with nothing to look at takes nothing.
 *   A partly masked row gives its -inf entries exactly 0.
 * @param[out] out  (rows, cols)
 * @param[in]  x    (rows, cols); may equal out
 * @param[in]  rows, cols  sizes
 */
void softmax(float *out, const float *x, int rows, int cols);

/**
 * @brief Backward of softmax(): the gradient of each row's input from the
 *        gradient of its output and the probabilities the forward gave.
 *
 * \f[ dx_i \mathrel{+}= p_i \Big( \text{dout}_i - \sum_j p_j\, \text{dout}_j \Big) \f]
 * per row: the Jacobian \f$\partial p_j/\partial x_i = p_j(\delta_{ij} - p_i)\f$
 * applied in O(cols), without building it (softmax_backward.c derives it).
 * Only p is needed, not x. A masked entry (p = 0) gets 0, and a fully masked
 * row (all p = 0, softmax()'s convention) a row of zeros.
 * @param[in,out] dx    (rows, cols) gradient of the input, added to
 * @param[in]     dout  (rows, cols) gradient of the output
 * @param[in]     p     (rows, cols) softmax()'s output
 * @param[in]     rows, cols  sizes
 */
void softmax_backward(float *dx, const float *dout, const float *p, int rows, int cols);

/**
 * @brief Mean cross-entropy of logits against class labels, with label
 *        smoothing, and its gradient (PyTorch's `F.cross_entropy(logits, targets,
 *        label_smoothing=smoothing)`).
 *
 * \f[ \ell = \frac1B \sum_b \Big( -\sum_y q_{b,y} \log \mathrm{softmax}(z_b)_y \Big),
 *     \quad q_{b,y} = (1-\varepsilon)\,[y = t_b] + \varepsilon / Y \f]
 * computed as \f$\mathrm{lse}(z_b) - \sum_y q_{b,y} z_{b,y}\f$ with the
 * log-sum-exp \f$\mathrm{lse}(z) = m + \log\sum_y e^{z_y - m}\f$, \f$m = \max_y z_y\f$,
 * in double, so no logit is too large or too small (±1e4 is fine). The gradient is
 * \f[ \frac{\partial \ell}{\partial z_{b,y}} = \frac{\mathrm{softmax}(z_b)_y - q_{b,y}}{B}. \f]
 * A target outside [0, Y) is a programming error that the caller checks
 * (the data loader, when it reads the labels): it is not checked here, and
 * though nothing is read out of bounds, the loss and gradient are then
 * meaningless (no class gets the 1 − ε). A NaN or +inf logit gives a NaN loss.
 * @param[in,out] dlogits  (B, Y) gradient, added to; NULL for the loss alone
 * @param[in]     logits   (B, Y) scores, before any softmax
 * @param[in]     targets  (B) class of each image, each in [0, Y)
 * @param[in]     B, Y     images (≥ 1) and classes (≥ 1)
 * @param[in]     smoothing  ε in [0, 1]: 0 for the plain cross-entropy, 0.1 is usual
 * @return the mean loss over the batch, in nats
 */
float loss_cross_entropy(float *dlogits, const float *logits, const int *targets, int B, int Y,
                    float smoothing);

/**
 * @brief LayerNorm over the last axis.
 *
 * \f[ y = \frac{x - \mu}{\sqrt{\sigma^2 + \varepsilon}}\,\gamma + \beta \f]
 * with \f$\mu, \sigma^2\f$ the mean and (biased) variance of each row.
 * @param[out] out    (rows, dim)
 * @param[in]  x      (rows, dim); may equal out
 * @param[in]  gamma  (dim) scale, or NULL for ones
 * @param[in]  beta   (dim) shift, or NULL for zeros
 * @param[in]  rows, dim  sizes
 * @param[in]  eps    1e-6 in timm and torchvision, 1e-12 in Hugging Face
 */
void layernorm(float *out, const float *x, const float *gamma, const float *beta, int rows,
               int dim, float eps);

/**
 * @brief Backward of layernorm(): the gradients of its input, scale and shift.
 *
 * With \f$\hat x = (x-\mu)\,r\f$, \f$r = 1/\sqrt{\sigma^2+\varepsilon}\f$ and
 * \f$\hat g = \text{dout} \odot \gamma\f$, per row:
 * \f[ dx \mathrel{+}= r\,\big(\hat g - \mathrm{mean}(\hat g)
 *                     - \hat x \cdot \mathrm{mean}(\hat g \odot \hat x)\big),
 *     \qquad d\gamma \mathrel{+}= \sum_{\text{rows}} \text{dout} \odot \hat x,
 *     \qquad d\beta \mathrel{+}= \sum_{\text{rows}} \text{dout} \f]
 * (derived step by step in layernorm_backward.c). μ and r are recomputed
 * from x exactly as the forward computes them, so nothing needs keeping but x.
 * @param[in,out] dx      (rows, dim) gradient of the input, added to; or NULL
 * @param[in,out] dgamma  (dim), added to; or NULL
 * @param[in,out] dbeta   (dim), added to; or NULL
 * @param[in]     dout    (rows, dim) gradient of the output
 * @param[in]     x       (rows, dim) the forward's input
 * @param[in]     gamma   (dim) the scale, or NULL for ones
 * @param[in]     rows, dim  sizes
 * @param[in]     eps     the forward's ε
 */
void layernorm_backward(float *dx, float *dgamma, float *dbeta, const float *dout, const float *x,
                        const float *gamma, int rows, int dim, float eps);

/**
 * @brief Exact GELU: \f$ \mathrm{GELU}(x) = \tfrac12 x\,(1 + \mathrm{erf}(x/\sqrt2)) \f$.
 * @param[out] out  n values; may equal x
 * @param[in]  x    n values
 * @param[in]  n    number of elements
 */
void gelu(float *out, const float *x, size_t n);

/**
 * @brief Backward of gelu():
 *        \f$ dx \mathrel{+}= \text{dout} \cdot \big(\Phi(x) + x\,\varphi(x)\big) \f$.
 *
 * \f$\Phi\f$ is the standard normal CDF, \f$\tfrac12(1 + \mathrm{erf}(x/\sqrt2))\f$,
 * and \f$\varphi(x) = e^{-x^2/2}/\sqrt{2\pi}\f$ its density: the product rule on
 * \f$x\,\Phi(x)\f$.
 * @param[in,out] dx    n values, added to
 * @param[in]     dout  n values, the gradient of the output
 * @param[in]     x     n values, the forward's input
 * @param[in]     n     number of elements
 */
void gelu_backward(float *dx, const float *dout, const float *x, size_t n);

/**
 * @brief Fully connected layer, \f$ \text{out} = x W^\top + b \f$.
 * @param[out] out  (N, O)
 * @param[in]  x    (N, I)
 * @param[in]  w    (O, I), PyTorch's nn.Linear layout
 * @param[in]  b    (O), or NULL for no bias
 * @param[in]  N, I, O  rows, input features, output features
 */
void ops_linear(float *out, const float *x, const float *w, const float *b, int N, int I, int O);

/**
 * @brief ops_linear() in the precision of @p lw when there is one (bf16 or
 *        int8, linear_lowp()), else ops_linear() itself: the call every
 *        Linear of the model makes, whose weight may have a smaller copy
 *        (vit_set_precision()).
 * @param[in] lw  w's copy in a smaller number, or NULL: w in float
 */
void ops_linear_lowp(float *out, const float *x, const float *w, const LowpWeight *lw,
                     const float *b, int N, int I, int O);

/**
 * @brief Backward of ops_linear(): the gradients of its input, weight and bias.
 *
 * \f[ dx \mathrel{+}= \text{dout}\, W, \qquad dW \mathrel{+}= \text{dout}^\top x,
 *     \qquad db \mathrel{+}= \sum_n \text{dout}_n \f]
 * Every gradient is added to what its buffer holds (zero them once per step),
 * so a tensor or weight used twice collects both contributions.
 * @param[in,out] dx    (N, I), added to; or NULL
 * @param[in,out] dw    (O, I), added to; or NULL
 * @param[in,out] db    (O), added to; or NULL
 * @param[in]     dout  (N, O) gradient of the output
 * @param[in]     x     (N, I) the forward's input (only read for dw)
 * @param[in]     w     (O, I) the weight (only read for dx)
 * @param[in]     N, I, O  rows, input features, output features
 */
void ops_linear_backward(float *dx, float *dw, float *db, const float *dout, const float *x,
                     const float *w, int N, int I, int O);

/**
 * @brief Indices of the @p k largest of @p n values, largest first (NaN last;
 *        ties: the lower index first), e.g. the top classes of the logits.
 *
 * O(n log k) time with a heap of the k best; no memory beyond @p idx. The
 * order is a total one, so the result is unique: it equals the first k of
 * all n indices sorted by it.
 * @param[out] idx  min(k, n) indices; not touched when k ≤ 0
 * @param[in]  k    how many are wanted; k > n gives all n, k ≤ 0 gives none
 * @param[in]  v    n values
 * @param[in]  n    number of values
 * @return min(k, n), or 0 when k ≤ 0
 */
int ops_top_k(int *idx, int k, const float *v, int n);

/** @} */
#endif
