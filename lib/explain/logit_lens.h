/**
 * @file logit_lens.h
 * @brief The logit lens: what the model would answer if it stopped after
 *        block l, at every depth of the residual stream.
 *
 * Shape legend: B batch, N tokens ([cls] first), D width, L blocks,
 * Y classes; depth d = 0 … L counts the blocks the stream has passed
 * through (0: the embedding, `embed`; d ≥ 1: the output of block d − 1,
 * `blocks.{d−1}.out`).
 *
 * The model reads its answer once, at the end: the [cls] row of the last
 * block's output goes through the final LayerNorm and the head. The lens
 * (nostalgebraist, "interpreting GPT: the logit lens", 2020) reads it at
 * every depth, with the same LayerNorm and head:
 *
 *     p_d = softmax(head(norm(x_d[:, 0])))
 *
 * so the probabilities of the last depth are the model's own output, and the
 * depths before it say when the answer appears ("an ankle boot from block 3
 * on"). The stream is read from the trace (`embed` and `blocks.{i}.out`,
 * @ref contract): from a pass already recorded (logit_lens_from_trace()), or
 * as a pass runs (logit_lens_listen(), logit_lens_run()), which keeps only
 * B·(L + 1)·Y floats instead of the stages.
 *
 * What it is not: the model's belief at that depth. The final LayerNorm and
 * head were trained on the last block's output only; an earlier stream lives
 * in another basis, and a lens that reads nothing there may miss what the
 * next blocks will read from it (the "tuned lens" trains a map per depth;
 * left out here). It omits the patch tokens' rows, which the head never reads.
 */
#ifndef VIT_LOGIT_LENS_H
#define VIT_LOGIT_LENS_H

#include "base/tensor.h"
#include "base/trace.h"
#include "base/util.h"
#include "model/vit.h"

/** @defgroup logit_lens Logit lens
 *  @brief The model's final LayerNorm and head read at every depth of the residual stream.
 *
 *  With \f$x_d\f$ the stream after d blocks (\f$x_0\f$ the embedding):
 *  \f[ p_d = \mathrm{softmax}\big(\mathrm{head}(\mathrm{LN}(x_{d,\,\mathrm{cls}}))\big),
 *      \qquad d = 0 \ldots L, \qquad p_L = \text{the model's output} \f]
 *
 *  Beside @ref chapter12 "chapter 12" (what the model learned), which does not teach it
 *  yet: `vit lens` prints it and the viewer shows it (key Y). Pinned by the suite
 *  @ref test_lens.c "lens" (@ref answer_keys "the answer keys").
 *  @{
 */

/** @brief The depths of a model of @p L blocks: L + 1 (the embedding and each block's output). */
static inline int logit_lens_depths(int L) { return L + 1; }

/**
 * @brief The stage read at depth @p d: "embed" for 0, "blocks.{d−1}.out" after.
 * @return @p buf
 */
char *logit_lens_stage(char *buf, size_t size, int d);

/**
 * @brief The lens at one depth: probs = softmax(head(norm(stream[:, 0]))).
 *
 * The same LayerNorm, linear layer and softmax as vit_forward() and `vit
 * classify`, on a (B, D) matrix as they see it, so that at the last depth the
 * probabilities are the model's own, bit for bit.
 * @param[out] probs   (B, Y)
 * @param[in]  stream  (B, N, D) the residual stream at that depth
 */
void logit_lens_depth(float *probs, const float *stream, const Vit *vit, int B, int N);

/**
 * @brief The first depth from which the last depth's top class stays the top
 *        class at every depth after it: "the answer, from depth d on".
 * @param[in] probs  (depths, Y) one image's lens
 * @return 0 … depths − 1 (depths − 1: only the model's output has it on top)
 */
int logit_lens_settles(const float *probs, int depths, int Y);

/** The lens of a batch, filled as a forward pass goes by (logit_lens_listen()). */
typedef struct {
    const Vit *vit; /**< whose norm and head are read (borrowed) */
    Tensor probs;   /**< (B, L + 1, Y), allocated at `embed` (owned; logit_lens_free()) */
    int filled;     /**< how many depths have been read, 0 … L + 1 */
} LogitLens;

/**
 * @brief A TraceFn: pass it with a LogitLens* as user; reads `embed` and each
 *        `blocks.{i}.out` into LogitLens::probs and ignores every other stage.
 */
void logit_lens_listen(void *lens, const char *name, const Tensor *t);
/** @brief Free the probabilities and zero the lens. */
void logit_lens_free(LogitLens *lens);

/**
 * @brief Run the model on @p input and read the lens as it goes.
 * @param[out] probs  (B, L + 1, Y) a new tensor (tensor_free() it)
 * @param[in]  input  (B, C, S, S) normalised pixels
 * @return as vit_forward(); VIT_ERR_INPUT when a depth never came by
 */
VitStatus logit_lens_run(Tensor *probs, Vit *vit, const Tensor *input, VitError *err);

/**
 * @brief The lens from a recorded pass: its `embed` and `blocks.{i}.out`.
 * @param[out] probs  (B, L + 1, Y) a new tensor (tensor_free() it)
 * @return VIT_ERR_INPUT when a depth is missing or not (B, N, D) like `embed`
 */
VitStatus logit_lens_from_trace(Tensor *probs, const Vit *vit, const TraceRecorder *r,
                                VitError *err);

/** @} */
#endif
