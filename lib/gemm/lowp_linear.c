/**
 * @file lowp_linear.c
 * @brief A linear layer's weight kept in bf16 or int8, and the layer run in
 *        that number: what vit_set_precision() gives every Linear of a model.
 *
 * Shapes: x (R,D) tokens, w (O,D) the weight as PyTorch's Linear stores it,
 * bias (O), out (R,O).
 *
 * The weight is converted once, when the model is told its precision; the
 * activations are converted at every call, as they change with every image:
 * int8 per token with its own scale (linear_s8(), "dynamic" quantization),
 * bf16 by rounding each value to nearest even. Either way the output is
 * float again, so the LayerNorms, softmax, GELU and residual additions
 * between the products stay in float, as in PyTorch's dynamic quantization.
 */
#include "gemm/gemm_lowp.h"
#include "gemm/gemm.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

static const char *const precision_names[] = {"fp32", "bf16", "int8"};

const char *lowp_precision_name(LowpPrecision p) {
    return p >= LOWP_FP32 && p <= LOWP_INT8 ? precision_names[p] : "?";
}

bool lowp_precision_parse(const char *name, LowpPrecision *p) {
    for (int i = LOWP_FP32; i <= LOWP_INT8; i++)
        if (strcmp(name, precision_names[i]) == 0) {
            *p = (LowpPrecision)i;
            return true;
        }
    return false;
}

void lowp_weight_make(LowpWeight *lw, LowpPrecision p, const float *w, int O, int D) {
    // w is (O,D)
    *lw = (LowpWeight){.precision = p, .w = w, .O = O, .D = D};
    if (p == LOWP_INT8) int8_weight_quantize(&lw->s8, w, O, D);
    if (p == LOWP_BF16) {
        lw->bf16 = vit_malloc((size_t)O * D * sizeof *lw->bf16 + 1);
        bf16_from_floats(lw->bf16, w, (size_t)O * D);
    }
}

void lowp_weight_free(LowpWeight *lw) {
    int8_weight_free(&lw->s8);
    free(lw->bf16);
    *lw = (LowpWeight){0};
}

// out (R,O) += bias, row by row (bias NULL: nothing).
static void add_bias(float *out, const float *bias, int R, int O) {
    if (!bias) return;
    for (int r = 0; r < R; r++)
        for (int o = 0; o < O; o++) out[(size_t)r * O + o] += bias[o];
}

// [linear_bf16]
void linear_bf16(float *out, const float *x, const uint16_t *w, const float *bias, int R, int D,
                 int O) {
    // x is (R,D), w is (O,D) in bf16, bias is (O), out is (R,O)
    uint16_t *xb = vit_malloc((size_t)R * D * sizeof *xb + 1);
    bf16_from_floats(xb, x, (size_t)R * D); // each activation to the nearest bf16
    gemm_bf16_bt(out, xb, w, R, D, O);      // products of bf16, summed in float
    add_bias(out, bias, R, O);
    free(xb);
}
// [linear_bf16]

void linear_lowp(float *out, const float *x, const LowpWeight *lw, const float *bias, int R) {
    switch (lw->precision) {
    case LOWP_INT8: linear_s8(out, x, &lw->s8, bias, R); return;
    case LOWP_BF16: linear_bf16(out, x, lw->bf16, bias, R, lw->D, lw->O); return;
    case LOWP_FP32: break;
    }
    matmul_bt(out, x, lw->w, R, lw->D, lw->O);
    add_bias(out, bias, R, lw->O);
}
