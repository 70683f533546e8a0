/**
 * @file grads.c
 * @brief Gradient buffers (vit.h, @ref backward): one allocation, carved like
 *        the model's weights by walking the parameter table.
 *
 * Shape legend: every tensor has its parameter's shape (params.h).
 *
 * VitGrads::weights is a VitGradWeights: VitWeights' fields, leading to
 * gradients instead of weights. It is carved from the model's own list of tensors
 * (vit_weights_params(): the table's rows, in timm's state_dict order, q, k
 * and v fused or split as the model holds them), each tensor in one piece and
 * each part of a fused q, k, v at its row block, exactly where the weights
 * keep theirs. So anything that walks a model's weights walks its gradients
 * the same way: vit_grad_weights_params() names them, adamw_init_vit() pairs them.
 *
 * Deliberately omitted: a second list of the parameters; gradients in
 * another precision than float32.
 */
#include "model/vit.h"

#include <stdlib.h>
#include <string.h>

VitStatus vit_grads_init(VitGrads *g, const Vit *vit, VitError *err) {
    memset(g, 0, sizeof *g);
    const VitConfig *c = &vit->config;
    const int n = vit_weights_params(NULL, &vit->weights, c);
    VitParam *list = vit_calloc((size_t)n, sizeof *list);
    vit_weights_params(list, &vit->weights, c);
    size_t floats = 0;
    for (int i = 0; i < n; i++) floats += list[i].numel;
    VitStatus s = vit_check_memory((double)floats * sizeof(float),
                                   "the gradients (4 bytes for each parameter)", err);
    float *m = s == VIT_OK ? vit_try_malloc_aligned((floats ? floats : 1) * sizeof(float)) : NULL;
    if (!m) {
        free(list);
        char need[VIT_NUM_BUF];
        return s != VIT_OK ? s : vit_fail(err, VIT_ERR_INPUT, "cannot allocate the gradients, "
                                          "%s: out of memory",
                                          vit_bytes(need, (double)floats * sizeof(float)));
    }
    memset(m, 0, floats * sizeof(float));
    *g = (VitGrads){.memory = m, .floats = floats, .count = n};
    g->weights.blocks = vit_calloc(c->depth > 0 ? (size_t)c->depth : 1, sizeof(VitBlockGrads));
    for (int i = 0; i < n; i++) {
        // a fused q, k, v is one tensor in three parts, each at its row block
        const int parts = vit_param_parts(list[i].spec);
        for (int part = 0; part < parts; part++)
            *vit_param_grad_slot(&g->weights, list[i].spec, list[i].block, part) =
                m + (size_t)part * (list[i].numel / (size_t)parts);
        m += list[i].numel;
    }
    free(list);
    return VIT_OK;
}

void vit_grads_zero(VitGrads *g) {
    if (g->memory) memset(g->memory, 0, g->floats * sizeof(float));
}

void vit_grads_free(VitGrads *g) {
    free(g->memory);
    free(g->weights.blocks);
    memset(g, 0, sizeof *g);
}
