/**
 * @file vit_internal.h
 * @brief Helpers shared by vit.c and weights.c, not part of the public API.
 */
#ifndef VIT_VIT_INTERNAL_H
#define VIT_VIT_INTERNAL_H

#include "vit.h"

/** @brief Allocate the model's own (zeroed) parameter memory and the block table. */
void vit_alloc_params(Vit *vit);
/** @brief Hand out @p n zeroed floats of that memory. */
float *vit_take_params(Vit *vit, size_t n);

#endif
