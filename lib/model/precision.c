/**
 * @file precision.c
 * @brief The model's Linear layers in bf16 or int8 (vit.h, vit_set_precision()).
 *
 * Shape legend: L blocks, D width, M MLP width, Y classes.
 *
 * Every Linear weight gets a copy in the smaller number, made once here: per
 * block q, k, v (D, D) each, proj (D, D), fc1 (M, D), fc2 (D, M), then the
 * head (Y, D). The block table points each layer at its copy
 * (AttentionWeights::q_lowp …, VitBlockWeights::fc1_lowp, VitWeights::head_lowp),
 * and the forward pass's ops_linear_lowp() runs the layer in the copy's
 * number whenever there is one. The float weights stay where they were: the
 * parameter table, vit_save() and the copies themselves read them.
 *
 * q, k and v are three copies even where the file holds one (3D, D) matrix:
 * one scale per output channel makes quantizing the thirds apart the same as
 * quantizing the whole.
 */
#include "model/vit.h"
#include "model/vit_internal.h"

#include <stdlib.h>

enum { LINEARS_PER_BLOCK = 6 }; // q, k, v, proj, fc1, fc2

// Point every layer of the block table at its copy in lowp (NULL: float again).
static void point_layers(Vit *vit, const LowpWeight *lowp) {
    for (int l = 0; l < vit->config.depth; l++) {
        VitBlockWeights *b = &vit->weights.blocks[l];
        const LowpWeight *at = lowp ? lowp + (size_t)l * LINEARS_PER_BLOCK : NULL;
        b->attn.q_lowp = at ? at + 0 : NULL;
        b->attn.k_lowp = at ? at + 1 : NULL;
        b->attn.v_lowp = at ? at + 2 : NULL;
        b->attn.proj_lowp = at ? at + 3 : NULL;
        b->fc1_lowp = at ? at + 4 : NULL;
        b->fc2_lowp = at ? at + 5 : NULL;
    }
    vit->weights.head_lowp = lowp ? lowp + (size_t)vit->config.depth * LINEARS_PER_BLOCK : NULL;
}

void vit_lowp_free(Vit *vit) {
    if (vit->weights.blocks) point_layers(vit, NULL);
    for (int i = 0; vit->lowp && i < vit->config.depth * LINEARS_PER_BLOCK + 1; i++)
        lowp_weight_free(&vit->lowp[i]);
    free(vit->lowp);
    vit->lowp = NULL;
    vit->precision = LOWP_FP32;
}

// [vit_set_precision]
VitStatus vit_set_precision(Vit *vit, LowpPrecision precision, VitError *err) {
    if (precision != LOWP_FP32 && precision != LOWP_BF16 && precision != LOWP_INT8)
        return vit_fail(err, VIT_ERR_USAGE, "unknown precision %d (fp32, bf16 or int8)",
                        (int)precision);
    if (vit->keep != VIT_KEEP_NONE && precision != LOWP_FP32)
        return vit_fail(err, VIT_ERR_USAGE, "the model is prepared for training, which needs "
                        "fp32: %s is for inference only", lowp_precision_name(precision));
    vit_lowp_free(vit);
    if (precision == LOWP_FP32) return VIT_OK;
    const int L = vit->config.depth, D = vit->config.dim, M = vit->config.mlp_dim;
    LowpWeight *lowp = vit_calloc((size_t)L * LINEARS_PER_BLOCK + 1, sizeof *lowp);
    for (int l = 0; l < L; l++) {
        const VitBlockWeights *b = &vit->weights.blocks[l];
        LowpWeight *at = lowp + (size_t)l * LINEARS_PER_BLOCK;
        lowp_weight_make(&at[0], precision, b->attn.q_w, D, D);
        lowp_weight_make(&at[1], precision, b->attn.k_w, D, D);
        lowp_weight_make(&at[2], precision, b->attn.v_w, D, D);
        lowp_weight_make(&at[3], precision, b->attn.proj_w, D, D);
        lowp_weight_make(&at[4], precision, b->fc1_w, M, D);
        lowp_weight_make(&at[5], precision, b->fc2_w, D, M);
    }
    lowp_weight_make(&lowp[(size_t)L * LINEARS_PER_BLOCK], precision, vit->weights.head_w,
                     vit->config.num_classes, D);
    vit->lowp = lowp;
    vit->precision = precision;
    point_layers(vit, lowp);
    return VIT_OK;
}
// [vit_set_precision]

size_t vit_lowp_bytes(const Vit *vit) {
    size_t bytes = 0;
    for (int i = 0; vit->lowp && i < vit->config.depth * LINEARS_PER_BLOCK + 1; i++) {
        const LowpWeight *w = &vit->lowp[i];
        const size_t n = (size_t)w->O * w->D;
        if (w->precision == LOWP_INT8) // q, a scale and a sum per output, q packed for VNNI
            bytes += n + (size_t)w->O * (sizeof(float) + sizeof(int32_t)) +
                     (w->s8.packed ? gemm_s8_packed_bytes(w->O, w->D) : 0);
        if (w->precision == LOWP_BF16) bytes += n * sizeof(uint16_t);
    }
    return bytes;
}
