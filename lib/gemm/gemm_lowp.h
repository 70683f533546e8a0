/**
 * @file gemm_lowp.h
 * @brief Matrix products on smaller numbers: int8 with a 32-bit accumulator,
 *        bf16 with a float accumulator, and the int8 quantization around them.
 *
 * Shape legend (row-major, every operand K-contiguous, as in matmul_bt()):
 *   a (M,K)    left operand: activations, one row per token
 *   b (N,K)    right operand stored like a Linear weight [out, in]: out = a · bᵀ
 *   out (M,N)  the product
 *   x (R,D), w (O,D), out (R,O) for the quantized linear layer (tokens, width, outputs)
 *
 * int8: out[m][n] = Σ_k a[m][k] · b[n][k], each product and the sum exact in
 * int32. Both operands are symmetric int8 (−127..127, zero point 0; −128 is
 * accepted too); a float is q · scale, one scale per row of a (per token,
 * computed on the fly: "dynamic") and one per row of b (per output channel).
 * Why 32 bits never overflow here: |a·b| ≤ 128·128 = 2¹⁴, so a sum of
 * K < 2¹⁷ = 131,072 terms stays below 2³¹; ViT-B/16's longest sum is K = 3072
 * (with −127..127 on both sides, at most 3072 · 127² = 49,548,288).
 *
 * bf16 ("brain float") is a float's top 16 bits: its sign, its 8-bit exponent
 * and 7 of its 23 mantissa bits. Same range as float, about 3 significant
 * digits; converting to float is exact, from float rounds to nearest even.
 *
 * Each product has two paths, chosen at run time from what the CPU reports:
 *   int8  "avx512-vnni" (vpdpbusd: 64 byte products summed into 16 int32 per
 *         instruction) or "portable" (plain C the compiler vectorises);
 *         both give the same int32 bits, as integer sums are exact in any order;
 *   bf16  "avx512-bf16" (vdpbf16ps: 32 bf16 products into 16 floats) or
 *         "portable" (converted to float, then matmul_bt()); these agree to a
 *         float sum's rounding, not bit for bit: the order of the sums differs.
 * VIT_LOWP=portable in the environment, or gemm_lowp_set_portable(true),
 * forces the portable paths (tests use it to run what a CPU without these
 * instructions runs).
 *
 * Threads: as gemm.h's products, these may be called from several threads at
 * once; the AVX-512 paths share their columns out with OpenMP (on the calling
 * thread only inside a parallel region), the portable bf16 path through
 * matmul_bt(). The switch is process-wide: change it while no product runs.
 *
 * Deliberately omitted: zero points (asymmetric int8), int4, fp16, fp8, and
 * any layout but a · bᵀ.
 */
#ifndef VIT_GEMM_LOWP_H
#define VIT_GEMM_LOWP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/** @defgroup gemm_lowp Products on smaller numbers: int8 and bf16
 *  @brief \f[ \text{out}_{mn} = \sum_k a_{mk}\, b_{nk}, \qquad
 *             x \approx s_x\, q_x,\quad q_x = \operatorname{round}(x / s_x),\quad
 *             s_x = \max_k |x_k| / 127 \f]
 *
 *  The int8 and bf16 products, their number formats, the quantization of a
 *  row, and a Linear layer in either number (what vit_set_precision() gives a
 *  model): @ref chapter14 "chapter 14"'s float product on smaller numbers,
 *  taught in @ref chapter15 "chapter 15" (exercise 15 writes the rows'
 *  quantization and the portable int8 product). Pinned by the suites
 *  @ref test_ch15_smaller_numbers.c "ch15_smaller_numbers", @ref test_gemm_lowp.c
 *  "gemm_lowp" and @ref test_precision.c "precision" (the layer and the model
 *  against PyTorch, its dynamic quantization too).
 *  @{
 */

/**
 * @name Choosing the path
 * @{
 */
/** @brief Does this CPU (and build) have AVX-512 VNNI, vpdpbusd? */
bool gemm_cpu_has_vnni(void);
/** @brief Does this CPU (and build) have AVX-512 BF16, vdpbf16ps? */
bool gemm_cpu_has_bf16(void);
/** @brief The int8 product's path on this CPU now: "avx512-vnni" or "portable". */
const char *gemm_s8_kernel(void);
/** @brief The bf16 product's path on this CPU now: "avx512-bf16" or "portable". */
const char *gemm_bf16_kernel(void);
/**
 * @brief Force the portable paths (true) or go back to the fastest the CPU
 *        has (false). A process-wide switch: change it while no product runs.
 *        The variable VIT_LOWP=portable forces them from the start.
 */
void gemm_lowp_set_portable(bool portable);
/** @brief Are the portable paths forced (VIT_LOWP=portable, gemm_lowp_set_portable())? */
bool gemm_lowp_forced_portable(void);
/**
 * @brief One line for `vit info` and `make bench`, e.g.
 *        "int8 avx512-vnni (vpdpbusd), bf16 portable (no avx512_bf16 on this CPU)".
 */
void gemm_lowp_describe(char *buf, size_t size);
/** @} */

/**
 * @name int8 products
 * @{
 */
/**
 * @brief out (M,N) = a (M,K) · b (N,K)ᵀ in int32, on the path gemm_s8_kernel() names.
 *
 * Computes b's row sums itself (the VNNI path needs them, see
 * gemm_s8_bt_summed()): N·K additions against M·N·K multiply-adds.
 */
void gemm_s8_bt(int32_t *out, const int8_t *a, const int8_t *b, int M, int K, int N);
/**
 * @brief gemm_s8_bt() with b's row sums given: @p b_sums (N) = Σ_k b[n][k]
 *        (gemm_s8_row_sums()), computed once per weight matrix.
 *
 * vpdpbusd multiplies an unsigned byte by a signed one. So the VNNI path
 * shifts a into unsigned bytes, a' = a + 128 (0..255), and takes the shift
 * back out: Σ_k a'·b = Σ_k a·b + 128 · Σ_k b, so out = Σ_k a'·b − 128·b_sums[n].
 * The portable path ignores @p b_sums.
 */
void gemm_s8_bt_summed(int32_t *out, const int8_t *a, const int8_t *b, const int32_t *b_sums,
                       int M, int K, int N);
/** @brief Bytes of b (N,K) packed for the VNNI path: N and K rounded up to its panels (32) and groups (4). */
size_t gemm_s8_packed_bytes(int N, int K);
/** @brief b (N,K) packed, whole, in the VNNI path's order (gemm_s8_packed_bytes() bytes): a weight packed once. */
void gemm_s8_pack_b(int8_t *packed, const int8_t *b, int N, int K);
/**
 * @brief gemm_s8_bt_vnni() with b packed already (gemm_s8_pack_b()); false (and
 *        out untouched) when this CPU or build has no AVX-512 VNNI.
 */
bool gemm_s8_bt_vnni_packed(int32_t *out, const int8_t *a, const int8_t *b_packed,
                            const int32_t *b_sums, int M, int K, int N);
/** @brief sums (N) = Σ_k b[n][k] of b (N,K), the VNNI path's correction term. */
void gemm_s8_row_sums(int32_t *sums, const int8_t *b, int N, int K);
/** @brief gemm_s8_bt() on the portable path, whatever the CPU has. */
void gemm_s8_bt_portable(int32_t *out, const int8_t *a, const int8_t *b, int M, int K, int N);
/**
 * @brief What the VNNI path computes, in plain C: out (M,N) = Σ_k (a + 128)·b
 *        − 128·b_sums[n], a + 128 read as an unsigned byte, as vpdpbusd reads it.
 *
 * The same int32 as gemm_s8_bt_portable() (for K up to 65,793, where the
 * shifted sums fit): the reference the VNNI kernel is held to, and chapter
 * 15's worked example of the correction.
 * @param[in] b_sums  (N) Σ_k b[n][k] (gemm_s8_row_sums())
 */
void gemm_s8_bt_shifted(int32_t *out, const int8_t *a, const int8_t *b, const int32_t *b_sums,
                        int M, int K, int N);
/**
 * @brief gemm_s8_bt_summed() with vpdpbusd; false (and out untouched) when this
 *        CPU or build has no AVX-512 VNNI.
 */
bool gemm_s8_bt_vnni(int32_t *out, const int8_t *a, const int8_t *b, const int32_t *b_sums,
                     int M, int K, int N);
/** @} */

/**
 * @name bf16 numbers and products
 * @{
 */
/**
 * @brief The bf16 nearest to @p x, ties to the even one (the top 16 bits of
 *        float after rounding); a NaN stays a NaN (quiet), an infinity stays one,
 *        and a float above the largest bf16 (by half a step or more) becomes infinity.
 */
uint16_t bf16_from_float(float x);
/** @brief The float a bf16 stands for: its bits shifted into a float's top half (exact). */
float bf16_to_float(uint16_t h);
/** @brief out[i] = bf16_from_float(x[i]) for n values. */
void bf16_from_floats(uint16_t *out, const float *x, size_t n);
/** @brief out[i] = bf16_to_float(h[i]) for n values. */
void bf16_to_floats(float *out, const uint16_t *h, size_t n);

/** @brief out (M,N) = a (M,K) · b (N,K)ᵀ of bf16 operands, summed in float, on the path gemm_bf16_kernel() names. */
void gemm_bf16_bt(float *out, const uint16_t *a, const uint16_t *b, int M, int K, int N);
/** @brief gemm_bf16_bt() on the portable path: both operands to float, then matmul_bt(). */
void gemm_bf16_bt_portable(float *out, const uint16_t *a, const uint16_t *b, int M, int K, int N);
/**
 * @brief gemm_bf16_bt() with vdpbf16ps; false (and out untouched) when this CPU
 *        or build has no AVX-512 BF16.
 */
bool gemm_bf16_bt_avx512(float *out, const uint16_t *a, const uint16_t *b, int M, int K, int N);
/** @} */

/**
 * @name Symmetric int8 quantization
 * One scale per row: a weight's row is an output channel, an activation's row
 * a token. scale = max|row| / 127 and q = round(x / scale) to nearest, ties
 * to even (as PyTorch's torch.round), clamped to −127..127; a row of zeros has
 * scale 0 and q 0. Dequantized, x ≈ q · scale, off by at most scale / 2.
 * @{
 */
/** @brief q (R,K) and scales (R) of x (R,K), one scale per row. */
void quantize_rows_s8(int8_t *q, float *scales, const float *x, int R, int K);
/** @brief q (n) of x (n) with one scale for the whole tensor; returns the scale. */
float quantize_tensor_s8(int8_t *q, const float *x, size_t n);
/** @brief x (R,K) = q (R,K) · scales (R), row by row. */
void dequantize_rows_s8(float *x, const int8_t *q, const float *scales, int R, int K);

/** A Linear weight (O,D) in int8: quantized once, per output channel. */
typedef struct {
    const int8_t *q; /**< (O,D) the quantized weight: owned, or borrowed from a mapped
                          file (int8_weight_from()) */
    bool q_borrowed; /**< q is borrowed: int8_weight_free() leaves it */
    float *scale;    /**< (O) one scale per output channel */
    int32_t *sums;   /**< (O) Σ_d q[o][d], the VNNI path's correction (gemm_s8_bt_summed()) */
    int8_t *packed;  /**< q packed once for the VNNI path (gemm_s8_pack_b()), when this CPU
                          has it; else NULL */
    int O;           /**< outputs, rows of the weight, e.g. 2304 for ViT-B/16's qkv */
    int D;           /**< inputs, the width, e.g. 768 */
} Int8Weight;

/** @brief Quantize w (O,D) into @p qw, allocating its arrays; free with int8_weight_free(). */
void int8_weight_quantize(Int8Weight *qw, const float *w, int O, int D);
/**
 * @brief Make @p qw from a weight already quantized (a quantized file's q (O,D)
 *        and scales (O)): q borrowed, as it is, scale copied; the row sums and
 *        the VNNI packing made as int8_weight_quantize() makes them.
 */
void int8_weight_from(Int8Weight *qw, const int8_t *q, const float *scale, int O, int D);
/** @brief Free the arrays of int8_weight_quantize() or int8_weight_from() (a zeroed Int8Weight is fine too). */
void int8_weight_free(Int8Weight *qw);
/**
 * @brief out (R,O) = dequant(int8 x · int8 Wᵀ) + bias, the dynamically
 *        quantized linear layer (PyTorch's torch.ao.nn.quantized.dynamic.Linear).
 *
 * x (R,D) is quantized per row on the fly (scale s_x[r]); the int32 product
 * acc (R,O) is then scaled back: out[r][o] = acc[r][o] · s_x[r] · s_w[o] + bias[o].
 * @param[in] bias  (O), or NULL for none
 */
void linear_s8(float *out, const float *x, const Int8Weight *w, const float *bias, int R);
/** @} */

/**
 * @name A linear layer's weight in a smaller number
 * What a model keeps to run a Linear layer in bf16 or int8 (vit_set_precision()):
 * the float weight it stands for, and its copy in the smaller number, made once.
 * @{
 */
/** The number a linear layer's product runs in. */
typedef enum {
    LOWP_FP32, /**< float weights and activations: the model as trained */
    LOWP_BF16, /**< weights and activations rounded to bf16, products summed in float */
    LOWP_INT8, /**< int8 weights per output channel, activations per token ("dynamic") */
} LowpPrecision;

/** @brief "fp32", "bf16" or "int8". */
const char *lowp_precision_name(LowpPrecision p);
/** @brief The precision @p name names ("fp32", "bf16", "int8"); false for anything else. */
bool lowp_precision_parse(const char *name, LowpPrecision *p);

/** A Linear weight (O,D) and its copy in a smaller number. */
typedef struct {
    LowpPrecision precision; /**< which copy there is */
    const float *w;          /**< (O,D) the float weight it was made from (borrowed) */
    Int8Weight s8;           /**< LOWP_INT8: the int8 copy, one scale per output channel */
    uint16_t *bf16;          /**< LOWP_BF16: (O,D) the weight rounded to bf16 (owned) */
    int O;                   /**< outputs, rows of the weight */
    int D;                   /**< inputs, the width */
} LowpWeight;

/** @brief Make @p lw, w (O,D) in precision @p p (LOWP_FP32: no copy, w alone); free with lowp_weight_free(). */
void lowp_weight_make(LowpWeight *lw, LowpPrecision p, const float *w, int O, int D);
/** @brief Free the copy lowp_weight_make() made (a zeroed LowpWeight is fine too). */
void lowp_weight_free(LowpWeight *lw);
/**
 * @brief out (R,O) = bf16(x) · bf16(W)ᵀ + bias: x (R,D) rounded to bf16 row by
 *        row, the product summed in float (gemm_bf16_bt()), the bias added in float.
 * @param[in] w     (O,D) the weight already in bf16
 * @param[in] bias  (O), or NULL
 */
void linear_bf16(float *out, const float *x, const uint16_t *w, const float *bias, int R, int D,
                 int O);
/**
 * @brief out (R,O) = x (R,D) · Wᵀ + bias in @p lw's precision: linear_s8(),
 *        linear_bf16(), or the float product.
 */
void linear_lowp(float *out, const float *x, const LowpWeight *lw, const float *bias, int R);
/** @} */

/** @} */
#endif
