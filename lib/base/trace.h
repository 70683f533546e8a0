/**
 * @file trace.h
 * @brief The trace: one stream of named tensors that every consumer reads.
 *
 * vit_forward() (and every chapter) hands each intermediate tensor to a
 * TraceFn supplied by the caller. Chapters print the stream, tests compare it
 * with PyTorch goldens, the viewer records it and stops on it (a callback that
 * enters the UI loop is a breakpoint), and `vit trace` writes it to a file.
 * Names and shapes are a public contract: @ref contract.
 *
 * The tensor handed to a TraceFn is only valid during the call; copy it to keep it.
 */
#ifndef VIT_TRACE_H
#define VIT_TRACE_H

#include "base/tensor.h"

/** @defgroup trace Trace
 *  @brief Named intermediate tensors, streamed to whoever listens.
 *
 *  Taught in @ref chapter05 "chapter 05" (reading the stages of one attention layer), @ref chapter08
 *  "chapter 08" (a block's stages) and @ref chapter12 "chapter 12" (the maps); the rules are @ref contract.
 *  Pinned by the suites @ref test_vit.c "vit" and @ref test_ch05_multi_head.c "ch05_multi_head"
 *  (@ref answer_keys "the answer keys").
 *  @{
 */

/** Receives one named intermediate; @p t is borrowed for the duration of the call. */
typedef void (*TraceFn)(void *user, const char *name, const Tensor *t);

/** Where a forward pass sends its intermediates: a TraceFn, its user pointer and a name prefix. */
typedef struct {
    TraceFn fn;         /**< NULL: nobody listens, nothing is emitted */
    void *user;         /**< passed back to fn */
    const char *prefix; /**< prepended to every name, e.g. "blocks.3."; NULL for none */
} Tracer;

/**
 * @brief Emit `prefix + name` with @p data viewed as a tensor of the given shape,
 *        e.g. `trace_emit(tr, "attn.probs", probs, 4, B, H, N, N)`. No-op when tr->fn is NULL.
 *        The listener only reads it (a `const Tensor *`), so @p data is const.
 */
void trace_emit(const Tracer *tr, const char *name, const float *data, int ndim, ...);

/**
 * @brief A tracer for a part of what @p tr traces: the same listener, its
 *        prefix followed by @p part ("blocks.3." + "attn." = "blocks.3.attn.").
 * @param[out] prefix  room for the new prefix (it must outlive the returned tracer)
 */
Tracer trace_part(const Tracer *tr, char *prefix, size_t size, const char *part);

/**
 * @brief Split a name of the form "blocks.{i}.suffix" (a block's stage or parameter).
 * @param[out] block  i, or -1 for a name outside the blocks ("embed", "head.weight")
 * @return the suffix ("attn.probs"), the whole name outside the blocks, or NULL
 *         for a malformed index (a sign, a leading zero, no dot after it)
 */
const char *trace_split_block(const char *name, int *block);

/** @brief true when someone listens (so optional intermediates are worth computing). */
static inline bool trace_active(const Tracer *tr) { return tr && tr->fn; }

/** One recorded tensor. */
typedef struct {
    char *name;  /**< e.g. "blocks.3.attn.probs" */
    Tensor t;    /**< an owned copy */
} TraceEntry;

/** A TraceFn target that keeps a copy of everything it is given, in order. */
typedef struct {
    TraceEntry *entries; /**< count entries in arrival order */
    int count;           /**< how many recorded */
    int cap;             /**< allocated slots */
} TraceRecorder;

/** @brief A TraceFn: pass it with a TraceRecorder* as user to record a copy of each tensor. */
void trace_record(void *recorder, const char *name, const Tensor *t);
/** @brief The recorded tensor called @p name, or NULL. */
const Tensor *trace_find(const TraceRecorder *r, const char *name);
/** @brief Free every recorded copy and empty the recorder. */
void trace_recorder_free(TraceRecorder *r);

/** @} */
#endif
