/**
 * @file rollout.h
 * @brief Where the model looks: attention rollout, its head fusions and
 *        discarding, and gradient-weighted attention.
 *
 * Shape legend: L blocks, H heads, N tokens ([cls] first, then the P = N − 1
 * patches in row-major grid order).
 *
 * One layer's attention says how much each token reads from each other token
 * in that layer alone. But a token's output also carries its own input along
 * the residual connection, and the next layer mixes tokens that are already
 * mixtures. Attention rollout (S. Abnar and W. Zuidema, "Quantifying Attention
 * Flow in Transformers", 2020) follows the mixing through every layer:
 *
 *  1. fuse the heads of layer l into one (N, N) matrix F_l: their mean, max
 *     or min, entry by entry;
 *  2. optionally discard the weakest links: the ⌊r·N²⌋ lowest entries of F_l
 *     are set to 0, except F_l(0, 0), [cls] reading itself, which is kept;
 *  3. add the identity for the residual connection and normalise each row
 *     to sum to 1: A_l = row_normalise(F_l + I);
 *  4. multiply through the layers: J = A_L · … · A_2 · A_1.
 *
 * Row i of J is read as how much of token i's final state came from each
 * input token; its [cls] row over the patches, J(0, 1…P) laid out on the
 * patch grid, is the rollout map. Each row of J sums to 1. That reading is a
 * heuristic, not a derivation: it treats the residual and attention as equal
 * partners and ignores what the MLPs and the values do to the tokens.
 *
 * Gradient-weighted attention (H. Chefer et al.'s idea, as vit-explain's
 * grad_rollout computes it; a heuristic too, whose balance between the
 * attention and the identity depends on the units of the score) replaces step 1 by the mean over heads of
 * max(0, P ⊙ ∂y_c/∂P), the attention weighted by how much the score y_c of
 * the chosen class c moves with it, negatives clamped; steps 2–4 are the same.
 *
 * Three mistakes of a widely copied implementation (vit-explain) that these
 * functions avoid and the tests pin: its rows are divided by a vector that
 * broadcasts along the wrong axis, so they do not sum to 1 once heads are
 * fused by max or min or links are discarded; its gradients, gathered by
 * backward hooks, come in reverse layer order and meet the wrong layer's
 * attention; and it reads attention from hooks that fused attention kernels
 * skip. Here the probabilities and their gradients come from the trace
 * (`blocks.{l}.attn.probs` and `grad.blocks.{l}.attn.probs`, @ref contract),
 * which every forward and backward pass emits under the same names.
 *
 * What an attention map is not: an explanation. It shows where information
 * flows, not what the prediction depends on; Chapter 12 measures how far the
 * two agree (a deletion test).
 */
#ifndef VIT_ROLLOUT_H
#define VIT_ROLLOUT_H

#include <stdbool.h>

#include "base/trace.h"
#include "base/util.h"
#include "model/vit.h"
#include "train/dataset.h"

/** @defgroup rollout Attention rollout
 *  @brief Fusing heads, discarding weak links, rolling attention out through the layers.
 *
 *  With \f$F_l\f$ layer l's fused heads (after discarding):
 *  \f[ A_l = \mathrm{rownorm}(F_l + I), \qquad J = A_L A_{L-1} \cdots A_1,
 *      \qquad \mathrm{map}_p = J_{0,\,p}, \quad p = 1 \ldots N-1 \f]
 *
 *  Taught in @ref chapter12 "chapter 12" (where the model looks). Pinned by the suites
 *  @ref test_rollout.c "rollout", @ref test_attention_floors.c "attention_floors",
 *  @ref test_ch12_attention_maps.c "ch12_attention_maps" (@ref answer_keys "the answer keys").
 *  @{
 */

/** How the H heads of a layer become one (N, N) matrix. */
typedef enum {
    FUSE_MEAN, /**< the heads' mean, entry by entry (the paper's choice) */
    FUSE_MAX,  /**< the largest head at each entry */
    FUSE_MIN,  /**< the smallest head at each entry */
} HeadFuse;

/** What attention_rollout() computes. */
typedef struct {
    HeadFuse fuse;  /**< how the heads are fused (ignored when gradients are given) */
    double discard; /**< the fraction r in [0, 1) of each fused matrix's lowest entries set to 0 */
} RolloutOptions;

/** @brief "mean", "max" or "min". */
const char *head_fuse_name(HeadFuse fuse);
/** @brief The HeadFuse called @p name ("mean", "max", "min"); false for any other name. */
bool head_fuse_parse(const char *name, HeadFuse *fuse);

/**
 * @brief One layer's heads fused entry by entry: out = mean, max or min over h of probs.
 * @param[out] out    (N, N)
 * @param[in]  probs  (H, N, N) one image's attention probabilities in one layer
 */
void attention_fuse_heads(float *out, const float *probs, int H, int N, HeadFuse fuse);

/**
 * @brief One layer's [cls] row: what [cls] reads from each token, for one head or the heads fused.
 * @param[out] out    (N) token 0 ([cls] itself), then the N − 1 patches
 * @param[in]  probs  (H, N, N) one image's attention probabilities in one layer
 * @param[in]  head   the head, 0 to H − 1; −1: the heads fused by @p fuse
 */
void attention_cls_row(float *out, const float *probs, int H, int N, int head, HeadFuse fuse);

/**
 * @brief Gradient-weighted attention of one layer: out = mean over h of max(0, probs ⊙ grad).
 * @param[out] out    (N, N)
 * @param[in]  probs  (H, N, N) the layer's attention probabilities
 * @param[in]  grad   (H, N, N) the gradient of the chosen class's score with respect to them
 */
void attention_grad_fuse(float *out, const float *probs, const float *grad, int H, int N);

/**
 * @brief Set the ⌊ratio·N²⌋ lowest entries of @p a to 0, keeping a(0, 0).
 *
 * The entries are ranked by value, ties by position (row-major), so the result
 * does not depend on the sort. a(0, 0), [cls] reading itself, is kept even
 * when it is among the lowest (as vit-explain does), so one entry fewer may
 * be set to 0. NaN ranks above every number.
 * @param[in,out] a      (N, N)
 * @param[in]     ratio  in [0, 1]
 */
void attention_discard_lowest(float *a, int N, double ratio);

/**
 * @brief One layer of the rollout: joint ← rownorm(fused + I) · joint.
 * @param[in,out] joint   (N, N) the product so far, in double; the identity before layer 0
 * @param[in]     fused   (N, N) the layer's fused (and discarded) attention, entries ≥ 0
 * @param[out]    scratch (2, N, N) working room
 */
void rollout_layer(double *joint, const float *fused, int N, double *scratch);

/**
 * @brief The rollout of one image's attention through L layers.
 *
 * Each layer is fused (attention_fuse_heads(), or attention_grad_fuse() when
 * @p grads is given), discarded (attention_discard_lowest()) and multiplied
 * in (rollout_layer()), layer 0 first.
 * @param[out] joint  (N, N) J; its row 0 from column 1 is the map
 * @param[in]  probs  L pointers, each to (H, N, N): layer l's attention probabilities
 * @param[in]  grads  NULL, or L pointers, each to (H, N, N): layer l's gradients
 * @return VIT_ERR_USAGE for sizes below 1 or a discard ratio outside [0, 1)
 */
VitStatus attention_rollout(float *joint, const float *const *probs, const float *const *grads,
                            int L, int H, int N, const RolloutOptions *opt, VitError *err);

/**
 * @brief attention_rollout() for image @p b of a recorded pass: the layers'
 *        `blocks.{l}.attn.probs` from @p forward, and (when @p backward is not
 *        NULL) their `grad.blocks.{l}.attn.probs` from @p backward.
 * @param[out] joint  J as a new (N, N) tensor (tensor_free() it), N read from the trace
 * @return VIT_ERR_INPUT when a layer's tensors are missing, of another shape
 *         than (B, H, N, N), or b is not below B; else as attention_rollout()
 */
VitStatus rollout_from_trace(Tensor *joint, const TraceRecorder *forward,
                             const TraceRecorder *backward, int layers, int b,
                             const RolloutOptions *opt, VitError *err);

/**
 * @brief A TraceFn that records only `…attn.probs` tensors (and their `grad.`
 *        ones) into the TraceRecorder @p recorder: what a rollout reads, a
 *        fraction of a whole trace.
 */
void rollout_record_probs(void *recorder, const char *name, const Tensor *t);

/** Which score of the chosen class the backward pass of rollout_record_score() differentiates. */
typedef enum {
    SCORE_LOGIT,    /**< the logit y_c (rollout_record()'s) */
    SCORE_PROB,     /**< the probability p_c = softmax(y)_c */
    SCORE_LOG_PROB, /**< its logarithm, log p_c */
} RolloutScore;

/** @brief "logit", "probability" or "log-probability". */
const char *rollout_score_name(RolloutScore score);

/**
 * @brief Run what a rollout reads: the forward's attention probabilities into
 *        @p forward and, when @p backward is not NULL, their gradients for one
 *        class's score per image into @p backward.
 *
 * The gradient is that of the logit y_c (not of a loss): dlogits is 1 at
 * (b, classes[b]) and 0 elsewhere, so each image's gradient is its own class
 * score's. A model not prepared for training is prepared with
 * VIT_KEEP_INPUTS for this batch (the backward recomputes each block; the
 * least memory), and stays so. Both recorders are emptied first.
 * @param[in]  input    (B, C, S, S) normalised pixels
 * @param[in]  classes  (B) each image's class; NULL: each image's predicted class
 * @param[out] chosen   (B) the classes used, when not NULL
 * @return VIT_ERR_INPUT for a class outside [0, Y); else as vit_forward() and vit_backward()
 */
VitStatus rollout_record(Vit *vit, const Tensor *input, const int *classes, int *chosen,
                         TraceRecorder *forward, TraceRecorder *backward, VitError *err);

/**
 * @brief rollout_record() with the gradient of another score of the class:
 *        dlogits is ∂score/∂y, for the logit one-hot, for the probability
 *        p_c(e_c − p), for the log-probability e_c − p.
 */
VitStatus rollout_record_score(Vit *vit, const Tensor *input, const int *classes, int *chosen,
                               RolloutScore score, TraceRecorder *forward,
                               TraceRecorder *backward, VitError *err);

/* ------------------------------------------------------------ measuring */

/**
 * The rankings attention_measure() scores, each an order of the patches for
 * each image: the four attention maps, then baselines that use no model.
 * A baseline tells what a score means: a map that sits on the garment finds
 * patches whose loss hurts the prediction whether or not it knows anything
 * about the model, because more than half of the pixels are black
 * background, and blacking out a background patch changes nothing.
 */
typedef enum {
    MAP_ROLLOUT,        /**< rollout, heads fused by their mean, nothing discarded */
    MAP_ROLLOUT_MAX,    /**< rollout, heads fused by max, the lowest 90 % discarded */
    MAP_LAST_LAYER,     /**< the last layer's [cls] attention, heads averaged */
    MAP_GRAD,           /**< gradient-weighted rollout for the predicted class */
    MAP_RANDOM,         /**< patches in a random order (seeded), averaged over the draws */
    MAP_BRIGHTNESS,     /**< no model: each patch's mean pixel value */
    MAP_GARMENT,        /**< no model: the fraction of each patch's pixels above the threshold */
    MAP_RANDOM_GARMENT, /**< no model: garment patches (at least half their pixels above the
                             threshold) in a random order, then the rest in a random order */
    MAP_OCCLUSION,      /**< a reference, not attention: how far the predicted class's
                             probability falls when the patch alone is blacked out */
    MAP_COUNT
} MapMethod;

/** The first MAP_ATTENTION_COUNT rankings are the attention maps. */
#define MAP_ATTENTION_COUNT 4
/** Without baselines, attention_measure() scores the rankings before MAP_BRIGHTNESS. */
#define MAP_BASIC_COUNT 5
/** With baselines and without occlusion, the rankings before MAP_OCCLUSION. */
#define MAP_BASELINE_COUNT 8

/** @brief Each ranking's name: "rollout (mean)", …, "gradient-weighted", "k random patches",
 *         "brightness (no model)", "garment mask (no model)", "k random garment patches",
 *         "occlusion (reference)". */
const char *rollout_map_method_name(MapMethod m);

/** How many patches the deletion test masks: 1, 5 and 10. */
#define MEASURE_KS 3
/** The deletion test's k values, in patches. */
extern const int rollout_measure_ks[MEASURE_KS];

/** What attention_measure() is to score besides the four attention maps. */
typedef struct {
    int draws;      /**< random orders per image for each random ranking, at least 1 */
    bool baselines; /**< also the model-free rankings, MAP_BRIGHTNESS to MAP_RANDOM_GARMENT */
    bool occlusion; /**< with the baselines, also MAP_OCCLUSION: one more forward pass per
                         patch and batch */
} MeasureOptions;

/** What attention_measure() found, averaged over the images. */
typedef struct {
    int images;                       /**< how many were measured */
    int threshold;                    /**< a pixel above this (0–255) is the garment's */
    int maps;                         /**< how many rankings were scored: MAP_BASIC_COUNT,
                                           MAP_BASELINE_COUNT with the baselines, MAP_COUNT
                                           with occlusion too */
    int draws;                        /**< random orders per image */
    double uniform_mass;              /**< the garment's share of the patches' area: what a
                                           uniform map would put on it */
    double mass[MAP_COUNT];           /**< each map's share on the garment (0 for the random
                                           rankings, which are orders, not values) */
    double prob_full;                 /**< the predicted class's mean probability, nothing masked */
    double prob_top[MAP_COUNT][MEASURE_KS]; /**< with each ranking's first k patches masked (for
                                           a random ranking, the mean over its draws) */
    /** Σ over images of (p_a − mean_a)(p_b − mean_b), for rankings a, b and each k: with
     *  it, attention_measure_paired_se() compares two rankings image by image. */
    double comoment[MAP_COUNT][MAP_COUNT][MEASURE_KS];
} AttentionMeasures;

/**
 * @brief The standard error of prob_top[a][k] − prob_top[b][k], paired over the images.
 *
 * With d_i the difference of the two rankings' probabilities on image i and
 * n images: \f$ \mathrm{SE} = \sqrt{\mathrm{var}(d)/n} \f$, var with n − 1.
 * The same images are under both, so what is common to an image (an easy
 * garment, a sure prediction) cancels, and the SE is that of the difference.
 * @return 0 for fewer than 2 images
 */
double attention_measure_paired_se(const AttentionMeasures *m, MapMethod a, MapMethod b, int k);

/**
 * @brief The baseline that uses no model (random patches, brightness, the
 *        garment mask, random garment patches) with the lowest mean probability
 *        once its first rollout_measure_ks[@p k] patches are black: the yardstick a map must beat.
 * @return MAP_RANDOM when @p m was measured without the baselines (MAP_BASIC_COUNT maps)
 */
MapMethod attention_measure_strongest_baseline(const AttentionMeasures *m, int k);

/**
 * @brief The share of a map on the garment: Σ_p map_p·g_p / Σ_p map_p, with g_p
 *        the fraction of patch p's pixels above @p threshold.
 * @param[in] map     (P) values ≥ 0 over the patches, row-major
 * @param[in] pixels  (S, S) grey bytes of the image
 */
double rollout_map_mass_on_object(const float *map, const unsigned char *pixels, int S, int patch,
                          int threshold);

/**
 * @brief Image @p b's map by one of the attention methods (MAP_ROLLOUT,
 *        MAP_ROLLOUT_MAX, MAP_LAST_LAYER, MAP_GRAD), from a recorded pass
 *        (rollout_record()); MAP_GRAD reads the gradients in @p bwd.
 * @param[out] map  (P) the [cls] row over the patches
 * @param[in]  L    the model's blocks
 * @return as rollout_from_trace()
 */
VitStatus attention_method_map(float *map, MapMethod m, const TraceRecorder *fwd,
                               const TraceRecorder *bwd, int L, int b, VitError *err);

/** @brief The patches in order of decreasing @p map value, ties by index: order is (P). */
void rollout_map_rank(int *order, const float *map, int P);

/**
 * @brief Measure the maps on the first @p count images of @p data (grey, as the
 *        model's input): how much of each map lies on the garment, and the
 *        deletion test, how far the predicted class's probability falls when
 *        the k patches a map ranks highest are blacked out, against k random
 *        patches (drawn from @p seed) and, with @p opt's baselines, against
 *        rankings that use no model.
 * @param[in] mean, std  the model's input normalisation
 * @param[in] batch      images per forward pass (fewer when their patch orders would pass 256 MiB)
 * @param[in] opt        NULL: one random draw per image, no baselines
 * @return VIT_ERR_USAGE for counts below 1 or fewer than 1 draw
 */
VitStatus attention_measure(Vit *vit, const Dataset *data, int count, float mean, float std,
                            int batch, int threshold, uint64_t seed, const MeasureOptions *opt,
                            AttentionMeasures *out, VitError *err);

/** @} */
#endif
