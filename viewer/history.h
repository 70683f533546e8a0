/**
 * @file history.h
 * @brief Every stage computed so far: a copy of its tensor, its statistics and
 *        how long it took, within a memory budget.
 *
 * The forward pass reuses its buffers (one block's scratch serves all L
 * blocks), so to move back through stages the viewer keeps its own copy of
 * each traced tensor. Memory, for one image (B = 1), in float32:
 *
 * | model     | per block | whole pass (188 stages) |
 * | --------- | --------- | ----------------------- |
 * | ViT-Ti/16 |   4.1 MB  |  51 MB (49 MiB)         |
 * | ViT-S/16  |   8.2 MB  | 101 MB (97 MiB)         |
 * | ViT-B/16  |  16.5 MB  | 201 MB (192 MiB)        |
 *
 * For ViT-B a block holds 7 (N,D) tensors, q/k/v (3·N·D), three (H,N,N)
 * attention maps of 1.86 MB each and two (N,4D) MLP tensors; see
 * history_bytes_for().
 *
 * The budget (256 MiB by default, `--history-mb`) bounds this for any model:
 * when a new copy would exceed it, the oldest copies are dropped (statistics
 * and timings stay; "input" is never dropped, the attention overlay needs it),
 * and the view says the values are gone. A full ViT-B pass fits.
 */
#ifndef VIEWER_HISTORY_H
#define VIEWER_HISTORY_H

#include <stdbool.h>
#include <stddef.h>

#include "base/tensor.h"
#include "model/vit.h"

/** @defgroup viewer_history Viewer history
 *  @brief Copies of computed stages under a memory budget.
 *  @{
 */

/** Default budget for the copies, in bytes: 256 MiB. */
#define HISTORY_DEFAULT_BUDGET ((size_t)256 << 20)

/** One computed stage. */
typedef struct {
    bool recorded;     /**< computed in this pass */
    bool kept;         /**< its values are still held (false: dropped for the budget) */
    Tensor t;          /**< the copy; t.data is NULL once dropped, shape stays */
    TensorStats stats; /**< min, max, mean, std, NaN/Inf of the whole tensor */
    double seconds;    /**< time the forward pass spent computing it */
    long order;        /**< when it was recorded, for dropping the oldest first */
} HistEntry;

/** The copies of one forward pass. */
typedef struct {
    HistEntry *entries; /**< one per pipeline node */
    int count;          /**< number of nodes */
    size_t budget;      /**< most bytes of values held at once */
    size_t held;        /**< bytes of values held now */
    int pinned;         /**< a node never dropped (the input), or -1 */
    long clock;         /**< recording counter */
} History;

/** @brief An empty history for @p count nodes; @p pinned is never dropped (-1: none). */
void history_init(History *h, int count, size_t budget, int pinned);
/** @brief Free every copy. */
void history_free(History *h);
/** @brief Forget every stage (for a restart); keeps count, budget and pin. */
void history_clear(History *h);
/**
 * @brief Copy @p t as node @p node's tensor, with its statistics, dropping the
 *        oldest copies if the budget requires.
 * @param[in] seconds  how long the stage took to compute
 */
void history_record(History *h, int node, const Tensor *t, double seconds);
/** @brief Node @p node's entry, or NULL when not computed in this pass. */
const HistEntry *history_get(const History *h, int node);

/**
 * @brief Bytes of one full pass's copies for a model, B = 1 (the table above).
 * @param[out] per_block  bytes of one block's stages (may be NULL)
 */
size_t history_bytes_for(const VitConfig *cfg, size_t *per_block);

/** @} */
#endif
