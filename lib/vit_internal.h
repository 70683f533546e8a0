/**
 * @file vit_internal.h
 * @brief Helpers shared by vit.c, weights.c and init.c, not part of the public API:
 *        the memory a Vit owns (defined in vit.c, freed by vit_free()).
 */
#ifndef VIT_VIT_INTERNAL_H
#define VIT_VIT_INTERNAL_H

#include "vit.h"

/** @brief Allocate the table of block weights (config.depth entries). */
void vit_alloc_blocks(Vit *vit);
/** @brief A new zeroed buffer of @p n floats that the model owns and frees. */
float *vit_take_params(Vit *vit, size_t n);

/**
 * @brief (Re)allocate the activations for a batch of @p B, checking their
 *        memory first (vit_check_batch()'s rule); what vit_forward() starts with.
 */
VitStatus vit_acts_ensure(Vit *vit, int B, VitError *err);

#endif
