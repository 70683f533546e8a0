/**
 * @file vit_internal.h
 * @brief Helpers shared by vit.c, forward.c, backward.c, weights.c and init.c, not
 *        part of the public API: the memory a Vit owns (defined in vit.c, freed by
 *        vit_free()).
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
 *        They keep what Vit::keep says (vit_train_prepare()).
 */
VitStatus vit_acts_ensure(Vit *vit, int B, VitError *err);

/**
 * @brief The residual stream before block @p i (i = L: after the last block), (B, N, D).
 *
 * Training keeps every block's input (row i of VitActivations::stream); inference
 * ping-pongs between two buffers, x[i % 2], so only the last two are valid.
 */
float *vit_acts_stream(const VitActivations *a, int i);
/**
 * @brief The buffers block @p i works in: its own when every block's are kept
 *        (VIT_KEEP_ALL), else the one set all blocks share.
 */
VitBlockActs *vit_acts_block(VitActivations *a, int i);

/** @brief Free the activations only (a replica's weights are another model's). */
void vit_acts_free(Vit *vit);

/* ------------------------------------------------- shards (shards.c) */

/** @brief vit_forward_backward() of a model with shards (vit_train_shards()), no trace. */
VitStatus vit_forward_backward_sharded(Vit *vit, VitGrads *grads, const Tensor *input,
                                       const int *targets, float smoothing, float *loss,
                                       VitError *err);
/** @brief Free the shards and their replicas; the model is as before vit_train_shards(). */
void vit_shards_free(Vit *vit);
/** @brief The last sharded step's logits (B, Y) when they are newer than the model's own, else NULL. */
const float *vit_shards_logits(const Vit *vit, int *B);
/** @brief The model's own forward ran: its logits are the newer. */
void vit_shards_stale(Vit *vit);

#endif
