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
 * What it omits: broadcasting, dtypes other than float32, backward passes.
 * dot() and softmax() live in their own files (dot.c, softmax.c) so a
 * student's version can replace them at link time.
 */
#ifndef VIT_OPS_H
#define VIT_OPS_H

#include <stddef.h>

/** @defgroup ops Elementary operations
 *  @brief Dot product, scaling, adding, softmax, LayerNorm, GELU, linear layers, top K.
 *  @{
 */

/**
 * @brief Dot product \f$ a \cdot b = \sum_i a_i b_i \f$ (accumulated in double).
 * @param[in] a, b  vectors of length n
 * @param[in] n     number of elements
 */
float dot(const float *a, const float *b, int n);

/** @brief out[i] = s · x[i] for n elements. */
void scale(float *out, const float *x, float s, size_t n);

/** @brief out[i] = a[i] + b[i] for n elements. */
void add(float *out, const float *a, const float *b, size_t n);

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
 * @brief Exact GELU: \f$ \mathrm{GELU}(x) = \tfrac12 x\,(1 + \mathrm{erf}(x/\sqrt2)) \f$.
 * @param[out] out  n values; may equal x
 * @param[in]  x    n values
 * @param[in]  n    number of elements
 */
void gelu(float *out, const float *x, size_t n);

/**
 * @brief Fully connected layer, \f$ \text{out} = x W^\top + b \f$.
 * @param[out] out  (N, O)
 * @param[in]  x    (N, I)
 * @param[in]  w    (O, I), PyTorch's nn.Linear layout
 * @param[in]  b    (O), or NULL for no bias
 * @param[in]  N, I, O  rows, input features, output features
 */
void linear(float *out, const float *x, const float *w, const float *b, int N, int I, int O);

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
int top_k(int *idx, int k, const float *v, int n);

/** @} */
#endif
