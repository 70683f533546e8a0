/**
 * @file tracediff.h
 * @brief Two traces of a forward pass, compared stage by stage: where do they part ways?
 *
 * A trace is the stream of named tensors one forward pass hands to its
 * TraceFn (@ref contract), kept in memory by a TraceRecorder or written to a
 * safetensors file by `vit trace`. Comparing two of them, a student's and a
 * reference, stage by stage in forward order, finds the first stage where
 * they disagree, which is where the bug is: every stage after it inherits the
 * difference, so "everything differs" says nothing, "blocks.3.attn.probs is
 * the first to differ" says where to look.
 *
 * Shape legend: a stage has the shape the contract gives it, e.g. (B, H, N, N)
 * for `blocks.{i}.attn.probs`; the comparison itself treats every stage as a
 * flat array of numel floats and turns the worst element's flat index back
 * into one index per axis.
 *
 * The recipe: tracediff_compare() first checks that the two traces can be
 * compared at all (the same stage names, each with the same shape in both),
 * then walks the reference's stages in order, comparing every element, and
 * fills a ::TraceDiff: the first stage that differs in detail, how many
 * differ after it, the largest differences seen. tracediff_report() and
 * tracediff_summary() turn that into the lines `vit diff` prints.
 *
 * What it omits: aligning traces whose stage names differ (another depth,
 * another naming scheme), comparing only some stages, per-stage tolerances
 * (the golden files of the tests have those, tests/check.h), and any
 * statistics beyond the largest differences.
 */
#ifndef VIT_TRACEDIFF_H
#define VIT_TRACEDIFF_H

#include <stdbool.h>
#include <stddef.h>

#include "base/tensor.h"
#include "base/trace.h"
#include "base/util.h"
#include "io/safetensors.h"

/** @defgroup tracediff Trace comparison
 *  @brief The first stage where two traces of a forward pass disagree.
 *
 *  Element \f$a\f$ of the trace agrees with element \f$b\f$ of the reference when
 *  \f[ |a - b| \le \text{atol} + \text{rtol} \cdot |b| \f]
 *  (the tolerance of tests/check.h, llm.c's check_tensor). It is not
 *  symmetric: the reference's magnitude sets the relative part. A NaN agrees
 *  only with a NaN, an infinity only with the same infinity; a NaN or an
 *  infinity against a number is always a difference.
 *
 *  The tool behind `vit diff`, and behind the answer keys of @ref chapter08 "chapter 08" and
 *  @ref chapter09 "chapter 09", which compare every stage with PyTorch's. Pinned by the suites
 *  @ref test_diff.c "diff" (@ref answer_keys "the answer keys").
 *  @{
 */

/**
 * Default absolute tolerance of `vit diff`: ten times tests/check.h's CHECK_ATOL.
 *
 * The tests compare float32 with float64 references; `vit diff` compares two
 * float32 passes, each rounding in its own way, and rounding grows through
 * the blocks. The project's own GEMM and OpenBLAS, on the same random
 * ViT-B/16 and image, differ by up to 1.9e-05 in the attention scores of
 * block 5: outside CHECK_ATOL + CHECK_RTOL·|b|, inside these defaults. A real
 * mistake (a missing bias, a transposed weight) is off by about the values'
 * own size, far outside either.
 */
#define TRACEDIFF_ATOL 1e-4f
/** Default relative tolerance of `vit diff`: ten times tests/check.h's CHECK_RTOL. */
#define TRACEDIFF_RTOL 1e-3f

/** One side of a comparison: the stages of a trace in forward order, borrowed. */
typedef struct {
    const char *label;         /**< how messages name the trace, e.g. its file's path */
    const TraceEntry *stages;  /**< count stages (name and tensor) in forward order */
    int count;                 /**< how many */
} TraceView;

/** What the comparison of one stage found. */
typedef struct {
    const char *name;   /**< the stage, e.g. "blocks.3.attn.probs" (borrowed from the reference) */
    int index;          /**< its place in the reference's forward order, 0 for the first */
    int ndim;           /**< its number of axes, 0 … 4 */
    int shape[TENSOR_MAX_DIMS]; /**< its sizes, e.g. {1, 12, 197, 197} */
    size_t numel;       /**< elements compared: the product of shape */
    size_t bad;         /**< elements outside the tolerance */
    size_t worst;       /**< flat index of the worst of them: the first NaN or infinity that
                             differs, else the largest |a − b| (valid when bad > 0) */
    int worst_at[TENSOR_MAX_DIMS]; /**< worst as one index per axis, e.g. {0, 5, 10, 3} */
    float a;            /**< the trace's value there */
    float b;            /**< the reference's value there */
    double max_abs;     /**< largest |a − b| over the elements finite on both sides */
    double max_rel;     /**< largest |a − b| / |b| over those where rtol·|b| ≥ atol, so that the
                             relative part of the tolerance is the one that judges them */
    double max_used;    /**< largest |a − b| / (atol + rtol·|b|) over the finite ones: how much
                             of the tolerance the closest call uses (above 1 is outside) */
    size_t finite;      /**< how many elements are finite on both sides */
} TraceStageDiff;

/** What comparing two whole traces found. */
typedef struct {
    float atol;             /**< the tolerance used: atol + rtol·|b| */
    float rtol;             /**< (see atol) */
    int stages;             /**< stages compared: all of the reference's */
    int differ;             /**< how many of them differ; 0 when the traces agree */
    TraceStageDiff first;   /**< the first stage in forward order that differs (differ > 0) */
    TraceStageDiff last;    /**< the reference's last stage (the logits, in a full trace) */
    double max_abs;         /**< largest |a − b| of any stage (finite pairs) */
    const char *max_abs_stage; /**< the stage it was in, or NULL when every pair was equal */
    double max_rel;         /**< largest relative difference of any stage (TraceStageDiff::max_rel) */
    const char *max_rel_stage; /**< the stage it was in, or NULL */
    double max_used;        /**< most of the tolerance any element uses (TraceStageDiff::max_used) */
    const char *max_used_stage; /**< the stage it was in, or NULL */
} TraceDiff;

/**
 * @brief A recorded pass as one side of a comparison.
 * @param[in] rec    what trace_record() kept (borrowed: it must outlive the view)
 * @param[in] label  how messages name it, e.g. "yours" or "reference"
 */
TraceView trace_view(const TraceRecorder *rec, const char *label);

/**
 * @brief Compare @p trace with @p ref, stage by stage in @p ref's order.
 *
 * Every element of every stage is compared, so @p d also says how many
 * stages after the first difference differ too, and how large the largest
 * differences were when none does.
 * @param[out] d      what was found; its names are borrowed from @p ref
 * @param[in] trace   the trace under test (a in the formula)
 * @param[in] ref     the reference (b in the formula)
 * @param[in] atol, rtol  the tolerance, both ≥ 0
 * @param[out] err    why the traces cannot be compared: a stage appears twice in one
 *                    of them, one has a stage the other lacks (the message names the first
 *                    missing one in forward order), or a stage's shapes differ (the
 *                    message names the stage, both shapes and, for a contract stage,
 *                    the axes that differ, e.g. "a different batch B (2 vs 1)")
 * @return VIT_OK when the traces could be compared, whether or not they agree
 *         (d->differ says), or VIT_ERR_INPUT when they cannot be compared.
 */
VitStatus tracediff_compare(TraceDiff *d, const TraceView *trace, const TraceView *ref,
                            float atol, float rtol, VitError *err);

/**
 * @brief The comparison of one stage: a and b have the same shape, e.g. (B, H, N, N).
 * @param[out] s       what was found: everything but name and index, left to the caller
 * @param[in] a        the trace's tensor
 * @param[in] b        the reference's, of the same shape (if not, nothing is compared
 *                     and every element counts as outside the tolerance)
 * @param[in] atol, rtol  the tolerance
 * @return true when every element agrees.
 */
bool tracediff_stage(TraceStageDiff *s, const Tensor *a, const Tensor *b, float atol,
                     float rtol);

/**
 * @brief The first difference as a few clauses joined by @p sep, e.g. with "; ":
 *
 *     first difference at blocks.3.attn.probs (1, 12, 197, 197): 1,234 of 465,708
 *     elements outside 0.0001 + 0.001·|ref|; worst at [0, 5, 10, 3]: 0.0123 vs 0.0051
 *     in the reference (max |diff| 0.0072); the 55 stages before it agree; 131 later
 *     stages differ too
 *
 * or, when no stage differs, "no stage differs: all 187 stages within 0.0001 + 0.001·|ref|".
 * The stage name is escaped (vit_escape()), since it comes from a file, so the
 * text is safe to print as it is.
 * @param[out] buf  receives the text; returned
 * @param[in] d     what tracediff_compare() found
 * @param[in] sep   between the clauses: "; " for one line, "\n  " for indented lines
 */
char *tracediff_report(char *buf, size_t size, const TraceDiff *d, const char *sep);

/**
 * @brief One line that sums the comparison up, e.g.
 *        "7 of 37 stages differ, the first blocks.1.mlp.fc1 (stage 31 of 37); the last,
 *        logits, differs too, by up to 0.031"
 *        or "0 of 187 stages differ; largest |diff| 1.87e-05 (blocks.5.attn.scores), largest
 *        relative difference 0.000144 (blocks.11.attn.scores); the closest call uses 14% of
 *        the tolerance (blocks.8.attn.scores)". Names are escaped, as in tracediff_report().
 * @param[out] buf  receives the text; returned
 * @param[in] d     what tracediff_compare() found
 */
char *tracediff_summary(char *buf, size_t size, const TraceDiff *d);

/** A trace read from a safetensors file, such as `vit trace` writes. */
typedef struct {
    SafeTensors st;        /**< the open file */
    TraceEntry *entries;   /**< one per tensor, in the file's order: the name is the file's,
                                the data in place in the map or (F16, BF16, F64) a copy */
    int count;             /**< how many */
} TraceFile;

/**
 * @brief Open a trace file (st_open(): FIFOs and devices are refused) and view its tensors.
 * @param[out] f     the trace; left empty and closable on failure
 * @param[in] path   the file
 * @param[out] err   why it cannot be read, or is not a trace: no tensor is named
 *                   like a stage of the contract (weights, say), or a tensor is not
 *                   a float type or has more than 4 dimensions
 * @return VIT_OK, or VIT_ERR_INPUT.
 */
VitStatus trace_file_open(TraceFile *f, const char *path, VitError *err);
/** @brief The file's stages as one side of a comparison, labelled with its path. */
TraceView trace_file_view(const TraceFile *f);
/** @brief Free the copies and close the file; safe on a zeroed or failed TraceFile. */
void trace_file_close(TraceFile *f);

/** @} */
#endif
