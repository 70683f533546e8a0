/**
 * @file tensor.h
 * @brief The one container: a float32, contiguous, row-major array with a shape.
 *
 * Shape legend used across the library (the book's glossary, docs/glossary.md):
 *   B batch, C channels, S image side, P patches, N tokens (incl. cls),
 *   D width, H heads, Dh = D/H, M MLP width, L depth, Y classes.
 *
 * What it deliberately omits: strides, views with offsets,
 * other dtypes, broadcasting, autograd, lazy graphs. Every op in ops.h takes
 * plain `float*` plus sizes so the arithmetic stays on the page; a Tensor is
 * what carries a shape to printing, statistics, tracing and files.
 */
#ifndef VIT_TENSOR_H
#define VIT_TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/** @defgroup tensor Tensors
 *  @brief A float32 array with up to four dimensions, row-major and contiguous.
 *
 *  Element (i0, i1, i2, i3) of a 4-d tensor lives at
 *  \f[ \text{data}[((i_0 s_1 + i_1) s_2 + i_2) s_3 + i_3] \f]
 *  where \f$s_k\f$ is `shape[k]`.
 *
 *  Used from @ref chapter01 "chapter 01" on, where every vector and activation is a Tensor
 *  (chapter 08's block, chapter 09's model). Pinned by the suites @ref test_tensor.c "tensor"
 *  (@ref answer_keys "the answer keys").
 *  @{
 */

/** Most dimensions a tensor can have: (B, H, N, N) is the largest we need. */
#define TENSOR_MAX_DIMS 4

/** A float32 array with a shape. Copy the struct freely; free only the owner. */
typedef struct {
    float *data;                 /**< numel floats, row-major */
    int ndim;                    /**< 0 (a scalar) to TENSOR_MAX_DIMS */
    int shape[TENSOR_MAX_DIMS];  /**< sizes of the first ndim axes, e.g. {1, 197, 768} */
    size_t numel;                /**< product of the shape (1 for a scalar) */
    bool owns_data;              /**< true when tensor_free() must free data */
} Tensor;

/** Summary statistics of a tensor, NaN and Inf counted apart. */
typedef struct {
    float min;        /**< smallest finite value */
    float max;        /**< largest finite value */
    double mean;      /**< mean of finite values */
    double std;       /**< population standard deviation of finite values */
    double l2;        /**< Euclidean norm of finite values */
    size_t n_nan;     /**< how many NaN */
    size_t n_inf;     /**< how many +Inf or -Inf */
    size_t count;     /**< numel */
} TensorStats;

/**
 * @brief A new zero-filled tensor, e.g. `tensor_new(3, B, N, D)`.
 * @param[in] ndim  number of dimensions (0–4), followed by that many int sizes
 */
Tensor tensor_new(int ndim, ...);
/** @brief A new zero-filled tensor with the shape given as an array. */
Tensor tensor_new_shape(int ndim, const int *shape);
/** @brief A new tensor holding a copy of @p values (numel floats). */
Tensor tensor_from(const float *values, int ndim, const int *shape);
/** @brief A scalar (0-d) tensor holding @p value. */
Tensor tensor_scalar(float value);
/** @brief A deep copy of @p t that owns its data. */
Tensor tensor_clone(const Tensor *t);
/**
 * @brief A tensor that borrows @p data (not freed by tensor_free()),
 *        e.g. `tensor_view(x, 2, N, D)`.
 */
Tensor tensor_view(float *data, int ndim, ...);
/** @brief A tensor that borrows @p data, with the shape given as an array. */
Tensor tensor_view_shape(float *data, int ndim, const int *shape);
/** @brief Free the data if owned and zero the struct; safe on a zeroed tensor. */
void tensor_free(Tensor *t);

/** @brief true when both tensors have the same ndim and sizes. */
bool tensor_same_shape(const Tensor *a, const Tensor *b);
/**
 * @brief The one way shapes are written: "(1, 197, 768)", or with named axes
 *        "(B=1, N=197, D=768)".
 * @param[out] buf   receives the text; returned
 * @param[in] ndim, shape  the sizes (int64, as safetensors stores them)
 * @param[in] axes   comma-separated axis names, e.g. "B,N,D", or NULL for none
 */
char *tensor_shape_format(char *buf, size_t size, int ndim, const int64_t *shape, const char *axes);
/** @brief tensor_shape_format() of a tensor's shape: "(1, 197, 768)"; returns @p buf. */
char *tensor_shape_str(const Tensor *t, char *buf, size_t size);
/** @brief Statistics over all elements; NaN and Inf are counted, not averaged. */
TensorStats tensor_stats(const Tensor *t);
/**
 * @brief The largest elementwise difference \f$ \max_i |a_i - b_i| \f$, e.g. to
 *        show that two ways of computing something agree.
 * Equal elements count as 0, equal infinities included.
 * @param[in] a, b  the two tensors, of the same shape
 * @return NaN when the shapes differ or any difference is NaN.
 */
float tensor_max_abs_diff(const Tensor *a, const Tensor *b);

/**
 * @brief Print like PyTorch: nested brackets, 4 decimals, and tensors with
 *        more than 1000 elements elided to the first and last 3 per axis.
 * @param[in] f     where to print
 * @param[in] name  printed before " = ", or NULL for just the values
 * @param[in] t     the tensor
 */
void tensor_print(FILE *f, const char *name, const Tensor *t);

/** @} */
#endif
