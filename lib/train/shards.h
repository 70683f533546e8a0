/**
 * @file shards.h
 * @brief Data-parallel training on one machine: each batch split into shards,
 *        one per thread, each on a replica that shares the model's weights
 *        (shards.c). PyTorch's `DistributedDataParallel(model)` over cores.
 *
 * Shape legend: B batch, C channels, S side, Y classes (the book's glossary).
 *
 * The object belongs to whoever trains (the Trainer of train.h, a benchmark,
 * a test): it holds a model, the model does not know it. A step through it
 * is vit_forward_backward() with the batch split:
 * @code
 * VitShards *sh;
 * vit_shards_new(&sh, &vit, 2, B, &err);              // DDP(model): two replicas
 * vit_grads_zero(&grads);
 * vit_shards_forward_backward(sh, &grads, &images, labels, 0.1f, &loss, &err);
 * Tensor logits = vit_logits(&vit);                   // the whole batch's, in order
 * // ... optim_clip_grad_norm(), adamw_step() on the model's parameters ...
 * vit_shards_free(sh);                                // before vit_free(&vit)
 * @endcode
 */
#ifndef VIT_SHARDS_H
#define VIT_SHARDS_H

#include "model/vit.h"

/** @addtogroup train
 *  @{
 */

/** A model's batch split over replicas, one per thread (shards.c); opaque. */
typedef struct VitShards VitShards;

/**
 * @brief Split the training batches of @p vit (of up to @p B images) into
 *        @p n shards of about B/n images, each run on its own thread over a
 *        replica that shares the model's weights.
 *
 * The point is speed on several cores for a small model, whose operations
 * are too small to split between threads. One shard is the model itself,
 * prepared for training (vit_train_prepare() with VIT_KEEP_DEFAULT): a step
 * is then vit_forward_backward(), bit for bit. The replicas hold the model's
 * weight pointers and its block table (so heads switched off, before or
 * after, hold for them too): make the shards again after
 * vit_resize_positions(), which moves the position table, and free them
 * before the model.
 * @param[out] shards  free with vit_shards_free(); NULL when this fails
 * @param[in]  n       shards, 1 to B
 * @return VIT_ERR_USAGE for n outside [1, B]; VIT_ERR_INPUT when memory is short
 */
VitStatus vit_shards_new(VitShards **shards, Vit *vit, int n, int B, VitError *err);

/**
 * @brief One batch's loss and gradients, the batch split over the shards:
 *        vit_forward_backward() of the model, without a trace.
 *
 * Each shard runs forward, loss and backward on its images; the gradients
 * are added into @p grads weighted by each shard's share of the batch, the
 * loss is their weighted mean, and the logits are left in the model's
 * activations in batch order, where vit_logits() reads them (the model's
 * other activations are not this batch's). The gradients are the batch's
 * within float rounding of the unsharded step's, and the same shards give
 * the same bits on any number of threads.
 * @param[in,out] grads      laid out for the model (vit_grads_init()), added to
 * @param[in]     input      (B, C, S, S) normalised pixels, at least one image per shard
 * @param[in]     targets    (B) the class of each image
 * @param[in]     smoothing  label smoothing ε in [0, 1]
 * @param[out]    loss       the batch's mean loss, in nats
 * @return VIT_ERR_INPUT as vit_forward_backward(), or for fewer images than shards
 */
VitStatus vit_shards_forward_backward(VitShards *sh, VitGrads *grads, const Tensor *input,
                                      const int *targets, float smoothing, float *loss,
                                      VitError *err);

/** @brief Free the shards and their replicas (safe on NULL); the model is untouched. */
void vit_shards_free(VitShards *sh);

/** @} */
#endif
