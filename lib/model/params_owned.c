/**
 * @file params_owned.c
 * @brief The parameter memory a model owns: vit_take_params() and
 *        vit_alloc_blocks() (vit_internal.h); vit_free() (vit_memory.c) frees it.
 *
 * Most parameters live in the mapped weights file. A model owns the rest: a
 * random model's every tensor (init.c), a file's converted or missing ones
 * (weights.c), and the float weights a quantized file's int8 Linears get when
 * fp32 is asked of them (precision.c). A file of its own, so that precision.c
 * can take parameters without depending on vit_memory.c, which depends on it.
 */
#include "model/vit.h"
#include "model/vit_internal.h"

#include <stdlib.h>

// A new zeroed parameter buffer of n floats, owned (and freed) by the model.
// One buffer per tensor, allocated only once its size has been checked, so a
// file cannot make us reserve memory for tensors it does not hold.
float *vit_take_params(Vit *vit, size_t n) {
    vit->owned = vit_realloc(vit->owned, (size_t)(vit->owned_count + 1) * sizeof(float *));
    float *p = vit_calloc(n, sizeof(float));
    vit->owned[vit->owned_count++] = p;
    return p;
}

void vit_alloc_blocks(Vit *vit) {
    vit->weights.blocks = vit_calloc((size_t)vit->config.depth, sizeof(VitBlockWeights));
}
