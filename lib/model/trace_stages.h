/**
 * @file trace_stages.h
 * @brief The trace contract as data: every stage's name, axes, formula and cost.
 *
 * One table (trace_stages.c) describes each stage vit_forward() emits (@ref contract):
 * the viewer shows its formula and named axes, chapter 09 prints its FLOPs,
 * the tests check names and shapes against it. Block stages are listed once
 * with the suffix after "blocks.{i}.". The backward pass (vit_backward())
 * emits each stage's gradient under "grad." + its name; the lookups here
 * recognise those names as their stage's.
 *
 * FLOP counts are multiply–adds × 2 for matrix products and small constant
 * costs per element for the rest (stated per row in trace_stages.c); they are for
 * comparing stages, not for a cycle-exact model.
 */
#ifndef VIT_STAGES_H
#define VIT_STAGES_H

#include <stdbool.h>

#include "model/vit.h"

/** @defgroup stages Trace stages
 *  @brief Names, axes, formulas and costs of the forward pass's intermediates.
 *
 *  Taught in @ref chapter09 "chapter 09" (where the FLOPs and the time go). Pinned by the
 *  suites @ref test_stages.c "stages" (@ref answer_keys "the answer keys").
 *  @{
 */

/** What a stage is. */
typedef struct {
    const char *name;    /**< "patch_embed", or the block suffix "attn.probs" */
    bool per_block;      /**< true: emitted as "blocks.{i}." + name */
    const char *axes;    /**< named axes, e.g. "B,H,N,N" */
    const char *formula; /**< e.g. "softmax(QKᵀ/√Dh)" */
    const char *what;    /**< one line for a learner */
    const char *torch;   /**< the PyTorch/timm line it corresponds to */
} VitStage;

/** @brief Number of distinct stages (block stages counted once). */
int vit_stage_count(void);
/** @brief The i-th stage in forward order. */
const VitStage *vit_stage_at(int i);
/**
 * @brief The stage a trace name belongs to ("blocks.7.attn.q" → "attn.q").
 *
 * The backward pass's names are recognised too: "grad." + a stage's name is
 * d(loss)/d(that stage), of the same shape, and belongs to that stage
 * ("grad.blocks.7.attn.q" → "attn.q", block 7); vit_stage_is_grad() tells
 * them apart. The shape, axes, bytes and parameters of a gradient are its
 * stage's; vit_stage_flops() counts the stage's forward.
 * @param[out] block  the block index, or -1 for stages outside the blocks (may be NULL)
 * @return NULL for a name that is not part of the contract
 */
const VitStage *vit_stage_find(const char *name, int *block);
/** @brief The prefix of the backward pass's names: "grad." (@ref contract_grad). */
#define VIT_GRAD_PREFIX "grad."
/** @brief true for a gradient's name, "grad." + a stage's (vit_stage_find() finds it). */
bool vit_stage_is_grad(const char *name);
/**
 * @brief The trace name of @p stage's gradient: "grad." + vit_stage_name(),
 *        e.g. "grad.blocks.3.attn.probs".
 * @param[out] buf  receives the name; returned
 */
char *vit_stage_grad_name(char *buf, size_t size, const VitStage *stage, int block);
/**
 * @brief The shape a stage has for this configuration and batch.
 * @param[out] shape  up to 4 sizes
 * @return the number of dimensions, or 0 for an unknown name
 */
int vit_stage_shape(const VitConfig *cfg, int B, const char *name, int shape[4]);
/** @brief Approximate floating-point operations to compute the stage. */
double vit_stage_flops(const VitConfig *cfg, int B, const char *name);
/**
 * @brief Learned parameters the stage reads, e.g. D·D + D for "attn.q".
 *
 * Each parameter belongs to exactly one stage (the cls token to "tokens", the
 * position table to "embed", a third of the fused qkv to each of "attn.q",
 * "attn.k" and "attn.v"), as the parameter table says (params.h), so summing
 * over the stages, block stages L times, gives vit_param_count().
 * @param[in] cfg   the model's sizes
 * @param[in] name  a trace name, e.g. "blocks.0.mlp.fc1" (any block gives the same count)
 * @return the count for one block or stage; 0 for an unknown name or a stage without weights
 */
int64_t vit_stage_params(const VitConfig *cfg, const char *name);
/**
 * @brief The trace name of @p stage: "blocks.{block}." + its name for a block
 *        stage (e.g. "blocks.3.attn.q"), its own name otherwise.
 * @param[out] buf  receives the name; returned
 */
char *vit_stage_name(char *buf, size_t size, const VitStage *stage, int block);
/** @brief Bytes of the stage's float32 tensor for a batch of @p B. */
double vit_stage_bytes(const VitConfig *cfg, int B, const char *name);
/** @brief FLOPs of one forward pass over a batch of @p B: every stage, blocks L times. */
double vit_forward_flops(const VitConfig *cfg, int B);
/** @brief Bytes of every tensor one forward pass emits: what a full trace holds. */
double vit_trace_bytes(const VitConfig *cfg, int B);
/** @brief Number of trace names one forward pass emits: 7 + 15·L; vit_backward()
 *         emits as many, the same names after "grad.". */
int vit_trace_length(const VitConfig *cfg);

/** @} */
#endif
