/**
 * @file quantize.c
 * @brief An int8 weight, quantized once per output channel, and the
 *        dynamically quantized linear layer built on the int8 product.
 *
 * Shapes: x (R,K) rows to quantize, q (R,K) int8, scales (R); for the linear
 * layer x (R,D) tokens, w (O,D) the weight, out (R,O).
 *
 * The rows themselves are quantized by quantize_rows.c (scale = max|x| / 127,
 * q = round(x / scale), one scale per row), the functions exercise 15 hands
 * out; here a weight is quantized once, with what its product needs beside
 * it, and the linear layer runs on it.
 *
 * Deliberately omitted: asymmetric (zero-point) schemes, calibration of the
 * activations' ranges ahead of time (static quantization), and NaN or
 * infinite inputs (the values must be finite).
 */
#include "gemm/gemm_lowp.h"
#include "base/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// The row sums and, where the VNNI path runs, the packing of qw->q (O,D).
static void int8_weight_prepare(Int8Weight *qw) {
    const int O = qw->O, D = qw->D;
    qw->sums = vit_malloc((size_t)O * sizeof(int32_t) + 1);
    gemm_s8_row_sums(qw->sums, qw->q, O, D);
    qw->packed = NULL;
    if (gemm_cpu_has_vnni()) { // every call would pack the same weight again
        qw->packed = vit_malloc_aligned(gemm_s8_packed_bytes(O, D) + 64);
        gemm_s8_pack_b(qw->packed, qw->q, O, D);
    }
}

void int8_weight_quantize(Int8Weight *qw, const float *w, int O, int D) {
    // w is (O,D)
    *qw = (Int8Weight){.O = O, .D = D};
    int8_t *q = vit_malloc((size_t)O * D + 1);
    qw->scale = vit_malloc((size_t)O * sizeof(float) + 1);
    quantize_rows_s8(q, qw->scale, w, O, D);
    qw->q = q;
    int8_weight_prepare(qw);
}

void int8_weight_from(Int8Weight *qw, const int8_t *q, const float *scale, int O, int D) {
    // q is (O,D), scale (O)
    *qw = (Int8Weight){.O = O, .D = D, .q = q, .q_borrowed = true};
    qw->scale = vit_malloc((size_t)O * sizeof(float) + 1);
    memcpy(qw->scale, scale, (size_t)O * sizeof(float));
    int8_weight_prepare(qw);
}

void int8_weight_free(Int8Weight *qw) {
    if (!qw->q_borrowed) free((void *)qw->q);
    free(qw->scale);
    free(qw->sums);
    free(qw->packed);
    *qw = (Int8Weight){0};
}

// [linear_s8]
void linear_s8(float *out, const float *x, const Int8Weight *w, const float *bias, int R) {
    // x is (R,D), w is (O,D), bias is (O), out is (R,O)
    const int D = w->D, O = w->O;
    int8_t *qx = vit_malloc((size_t)R * D + 1);
    float *sx = vit_malloc((size_t)R * sizeof(float) + 1);
    // The int32 sums (R,O) go into out itself, 4 bytes for 4 bytes, and become
    // floats in place: no second (R,O) buffer (2.4 MB for ViT-B's fc1).
    int32_t *acc = (int32_t *)(void *)out;
    quantize_rows_s8(qx, sx, x, R, D);                  // per token, now: "dynamic"
    // exact integer sums, from the weight packed once when the VNNI path runs
    if (!(w->packed && strcmp(gemm_s8_kernel(), "avx512-vnni") == 0 &&
          gemm_s8_bt_vnni_packed(acc, qx, w->packed, w->sums, R, D, O)))
        gemm_s8_bt_summed(acc, qx, w->q, w->sums, R, D, O);
#pragma omp parallel for schedule(static) if ((size_t)R * O > 65536)
    for (int r = 0; r < R; r++)
        for (int o = 0; o < O; o++) { // back to float: both scales
            float *y = out + (size_t)r * O + o;
            int32_t sum; // read as the int32 the product wrote there (memcpy: no aliasing)
            memcpy(&sum, y, sizeof sum);
            *y = (float)sum * (sx[r] * w->scale[o]) + (bias ? bias[o] : 0.0f);
        }
    free(qx);
    free(sx);
}
// [linear_s8]
