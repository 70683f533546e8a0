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
 *
 * A model loaded from a quantized file (vit_save_int8(), quantized.c) starts
 * the other way round: its copies are the file's int8 weights
 * (vit_lowp_take_int8()), and it has no float weights for them
 * (Vit::int8_only). Asked for fp32 or bf16, it first makes them, q · scale
 * (dequantize_loaded()); quantized again, they give the file's integers.
 */
#include "model/params.h"
#include "model/vit.h"
#include "model/vit_internal.h"

#include <stddef.h>
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

// The float weight a copy stands for: slot `index` of Vit::lowp (block by block
// q, k, v, proj, fc1, fc2, then the head).
static const float **float_slot(Vit *vit, int index) {
    const int L = vit->config.depth;
    if (index == L * LINEARS_PER_BLOCK) return &vit->weights.head_w;
    VitBlockWeights *b = &vit->weights.blocks[index / LINEARS_PER_BLOCK];
    const float **in_block[LINEARS_PER_BLOCK] = {&b->attn.q_w,    &b->attn.k_w, &b->attn.v_w,
                                                 &b->attn.proj_w, &b->fc1_w,    &b->fc2_w};
    return in_block[index % LINEARS_PER_BLOCK];
}

int vit_linear_index(const VitParamSpec *s, int block, int part, int depth) {
    static const size_t in_block[LINEARS_PER_BLOCK] = {
        offsetof(VitBlockWeights, attn.q_w),    offsetof(VitBlockWeights, attn.k_w),
        offsetof(VitBlockWeights, attn.v_w),    offsetof(VitBlockWeights, attn.proj_w),
        offsetof(VitBlockWeights, fc1_w),       offsetof(VitBlockWeights, fc2_w)};
    if (s->kind != VIT_PARAM_WEIGHT || part < 0 || part >= vit_param_parts(s)) return -1;
    const size_t at = s->field[part].weights;
    if (!s->per_block) return at == offsetof(VitWeights, head_w) ? depth * LINEARS_PER_BLOCK : -1;
    for (int i = 0; i < LINEARS_PER_BLOCK; i++)
        if (at == in_block[i] && block >= 0 && block < depth) return block * LINEARS_PER_BLOCK + i;
    return -1;
}

void vit_lowp_take_int8(Vit *vit, int index, const int8_t *q, const float *scale, int O, int D) {
    const size_t linears = (size_t)vit->config.depth * LINEARS_PER_BLOCK + 1;
    if (!vit->lowp) vit->lowp = vit_calloc(linears, sizeof *vit->lowp);
    LowpWeight *lw = &vit->lowp[index];
    lowp_weight_free(lw);
    *lw = (LowpWeight){.precision = LOWP_INT8, .O = O, .D = D};
    int8_weight_from(&lw->s8, q, scale, O, D);
}

// The shape (O, D) of Linear `index`: q, k, v and proj (D, D), fc1 (M, D),
// fc2 (D, M), the head (Y, D).
static void linear_shape(const Vit *vit, int index, int *O, int *D) {
    const VitConfig *c = &vit->config;
    const int i = index % LINEARS_PER_BLOCK;
    *O = index == c->depth * LINEARS_PER_BLOCK ? c->num_classes : i == 4 ? c->mlp_dim : c->dim;
    *D = index != c->depth * LINEARS_PER_BLOCK && i == 5 ? c->mlp_dim : c->dim;
}

void vit_lowp_loaded(Vit *vit) {
    if (!vit->lowp) return;
    for (int i = 0; i < vit->config.depth * LINEARS_PER_BLOCK + 1; i++) {
        LowpWeight *lw = &vit->lowp[i];
        if (lw->precision == LOWP_INT8) continue;
        int O, D; // a Linear the file keeps in float runs in float
        linear_shape(vit, i, &O, &D);
        lowp_weight_make(lw, LOWP_FP32, *float_slot(vit, i), O, D);
    }
    vit->precision = LOWP_INT8;
    vit->int8_only = true;
    point_layers(vit, vit->lowp);
}

// Linear `index`'s float weight, from its int8 copy: q · scale, into `w` (O,D).
static void dequantize_into(Vit *vit, int index, float *w) {
    const LowpWeight *lw = &vit->lowp[index];
    dequantize_rows_s8(w, lw->s8.q, lw->s8.scale, lw->O, lw->D);
    *float_slot(vit, index) = w;
}

// A model loaded from a quantized file has its int8 Linears' weights only in
// int8: give them float weights, q · scale, in memory of the model's own; a
// block's q, k and v one after the other, as a fused file's are, so that the
// float pass computes them in one product.
static void dequantize_loaded(Vit *vit) {
    const int linears = vit->config.depth * LINEARS_PER_BLOCK + 1;
    for (int i = 0; i < linears; i++) {
        const LowpWeight *lw = &vit->lowp[i];
        if (lw->precision != LOWP_INT8 || *float_slot(vit, i)) continue;
        const size_t n = (size_t)lw->O * lw->D;
        const bool qkv = i + 1 < linears && i % LINEARS_PER_BLOCK == 0 &&
                         vit->lowp[i + 1].precision == LOWP_INT8 &&
                         vit->lowp[i + 2].precision == LOWP_INT8 && !*float_slot(vit, i + 1) &&
                         !*float_slot(vit, i + 2);
        float *w = vit_take_params(vit, qkv ? 3 * n : n);
        for (int part = 0; part < (qkv ? 3 : 1); part++)
            dequantize_into(vit, i + part, w + (size_t)part * n);
    }
    vit->int8_only = false;
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
    if (vit->int8_only) {
        if (precision == LOWP_INT8) return VIT_OK; // as the file has it
        dequantize_loaded(vit);
    }
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
        if (w->precision == LOWP_INT8) // q (unless a file's), a scale and a sum per output,
            bytes += (w->s8.q_borrowed ? 0 : n) + // q packed for VNNI
                     (size_t)w->O * (sizeof(float) + sizeof(int32_t)) +
                     (w->s8.packed ? gemm_s8_packed_bytes(w->O, w->D) : 0);
        if (w->precision == LOWP_BF16) bytes += n * sizeof(uint16_t);
    }
    return bytes;
}
