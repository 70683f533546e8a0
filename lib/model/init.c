/**
 * @file init.c
 * @brief vit_build_random(): a model with freshly drawn parameters, one
 *        PCG32 stream per tensor, walking the parameter table (params.h).
 *
 * Shape legend: the table's letters (C, p, N, D, M, Y); every tensor has
 * the shape timm stores it in, q, k and v fused into one (3D, D).
 *
 * The rule (VitInit in vit.h says how it differs from timm's): every weight
 * from one truncated normal, biases zero, LayerNorms 1 and 0. The tensors
 * are drawn in the table's forward order, and tensor number i of that order
 * gets its own generator, seeded seed·1000003 + i, so tools/vitrng.py can
 * redraw any tensor in Python without drawing the ones before it.
 *
 * Deliberately omitted: timm's other init modes ("jax", "moco"), fan-in
 * scaled inits, and drawing a separate q, k, v layout (we always draw them
 * fused, as timm stores them).
 */
#include "base/rng.h"
#include "model/vit.h"
#include "model/vit_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// [vit_init_timm]
VitInit vit_init_timm(uint64_t seed) {
    return (VitInit){.seed = seed, .std = 0.02f, .bias_std = 0.0f, .norm_std = 0.0f};
}
// [vit_init_timm]

/** One tensor waiting to be filled. */
typedef struct {
    float *dst;        /**< the tensor's values (zeroed) */
    size_t n;          /**< how many */
    VitParamKind kind; /**< which distribution */
} Draw;

// Fills one tensor from its own stream: tensor number `index` of the forward order.
// [fill_draw]
static void fill_draw(const Draw *d, const VitInit *init, int index) {
    Rng r;
    rng_seed(&r, init->seed * 1000003u + (uint64_t)index);
    switch (d->kind) {
    case VIT_PARAM_WEIGHT: // trunc_normal_(std=.02) with absolute cut-offs at ±2, as timm's
        rng_fill_trunc_normal(&r, d->dst, d->n, 0.0f, init->std, -2.0f, 2.0f);
        break;
    case VIT_PARAM_BIAS: // timm: zeros (the buffer already is)
        if (init->bias_std > 0) rng_fill_normal(&r, d->dst, d->n, 0.0f, init->bias_std);
        break;
    case VIT_PARAM_NORM_SCALE: // ones
    case VIT_PARAM_NORM_SHIFT: { // zeros
        float centre = d->kind == VIT_PARAM_NORM_SCALE ? 1.0f : 0.0f;
        if (init->norm_std > 0) rng_fill_normal(&r, d->dst, d->n, centre, init->norm_std);
        else for (size_t i = 0; i < d->n; i++) d->dst[i] = centre;
        break;
    }
    }
}
// [fill_draw]

// Takes a buffer for every tensor and points its parts (q, k, v: three row
// blocks of one buffer) at it; queues its draw in q, in forward order.
static void queue_draws(Vit *vit, Draw *q) {
    const VitConfig *cfg = &vit->config;
    VitParamIter it = vit_param_iter(cfg->depth, VIT_ORDER_FORWARD, VIT_QKV_FUSED);
    for (const VitParamSpec *s; (s = vit_param_next(&it));) {
        const size_t n = (size_t)vit_param_numel(s, cfg);
        const int parts = vit_param_parts(s);
        float *p = vit_take_params(vit, n);
        for (int j = 0; j < parts; j++)
            *vit_param_slot(&vit->weights, s, it.block, j) = p + (size_t)j * (n / (size_t)parts);
        q[it.index] = (Draw){p, n, s->kind};
    }
}

// [vit_build_random]
VitStatus vit_build_random(Vit *vit, const VitConfig *cfg, const VitInit *init, VitError *err) {
    memset(vit, 0, sizeof *vit);
    VitStatus s = vit_config_check(cfg, err);
    if (s != VIT_OK) return s;
    vit->config = *cfg;
    snprintf(vit->source, sizeof vit->source, "random");
    vit_alloc_blocks(vit);
    // Drawing 86 M numbers takes seconds, so the draws are queued first and
    // filled in parallel: a tensor's values depend on its index alone, never
    // on the thread that fills it or on the sizes of the tensors before it.
    const int count = vit_param_tensor_count(cfg);
    Draw *q = vit_calloc((size_t)count, sizeof *q);
    queue_draws(vit, q);
#pragma omp parallel for schedule(dynamic)
    for (int i = 0; i < count; i++) fill_draw(&q[i], init, i);
    free(q);
    return VIT_OK;
}
// [vit_build_random]
