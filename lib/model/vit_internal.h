/**
 * @file vit_internal.h
 * @brief Helpers shared by vit_memory.c, forward.c, backward.c, weights.c, init.c,
 *        precision.c, quantized.c and shards.c, not part of the public API: the
 *        memory a Vit owns (handed out by params_owned.c, freed by vit_free()), the
 *        Linear layers' copies in smaller numbers (precision.c, quantized.c), and the
 *        checks of a training step (backward.c).
 */
#ifndef VIT_VIT_INTERNAL_H
#define VIT_VIT_INTERNAL_H

#include "model/vit.h"

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
/** @brief Slot of Vit::lowp for part @p part of parameter @p s in block @p block
 *         (block by block q, k, v, proj, fc1, fc2, then the head), or -1: not a Linear weight. */
int vit_linear_index(const VitParamSpec *s, int block, int part, int depth);
/** @brief Put a quantized file's int8 weight q (O,D) (borrowed) and scales (O) in slot
 *         @p index of Vit::lowp, allocating the table at the first. */
void vit_lowp_take_int8(Vit *vit, int index, const int8_t *q, const float *scale, int O, int D);
/** @brief After loading a quantized file: the Linears it keeps in float run in
 *         float, the model in int8 (Vit::int8_only). Nothing for a float file. */
void vit_lowp_loaded(Vit *vit);
/** @brief A file's quantization scheme, if it names one, is one this build reads. */
VitStatus vit_check_quant_scheme(const Vit *vit, VitError *err);
/**
 * @brief Load the I8 tensor @p e (found as @p name) for part(s) of parameter
 *        @p s of block @p block, with its "<name>_scale": every check of a
 *        quantized weight (the scheme, a Linear weight, the scale's dtype,
 *        shape and values), then vit_lowp_take_int8().
 */
VitStatus vit_map_int8(Vit *vit, const VitParamSpec *s, int block, const StTensor *e,
                       const char *name, VitError *err);
/** @brief Free the Linear weights' bf16 or int8 copies (precision.c) and point every layer back at its float weight. */
void vit_lowp_free(Vit *vit);

/**
 * @brief What vit_forward_backward() checks before any pass, and the shards
 *        (shards.c) before they split a batch: a label smoothing in [0, 1],
 *        and each of the @p B targets a class of the model.
 * @return VIT_ERR_INPUT naming the first bad target by its image in the batch
 */
VitStatus vit_check_targets(const Vit *vit, int B, const int *targets, float smoothing,
                            VitError *err);

#endif
