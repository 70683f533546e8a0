/**
 * @file head_importance.h
 * @brief Which attention heads the prediction needs: every head switched off
 *        in turn, and how much the class's probability moves.
 *
 * Shape legend: B images, L layers (blocks), H heads per layer, Y classes.
 *
 * A head's importance here is what the model loses without it (P. Michel, O.
 * Levy and G. Neubig, "Are Sixteen Heads Really Better than One?", 2019,
 * measure it the same way, on a loss rather than a probability): the full
 * model runs once, then once per (layer, head) with that one head switched
 * off (vit_set_head_off(): its attention probabilities × 0 after the softmax,
 * Hugging Face's `head_mask`), and each run's probability of the class is
 * taken from the full model's:
 * \f[ \Delta p_{lh} = p_c(\text{head } h \text{ of layer } l \text{ off}) - p_c(\text{every head on}) \f]
 * Negative: the class needed that head; near 0: the model does as well
 * without it; positive: the head was working against the class. The class c
 * is the one the full model predicts, or one the caller chooses. The same is
 * measured with a whole layer's heads off at once, which is not the sum of its
 * heads' changes: heads can stand in for one another.
 *
 * That is L·H + L + 1 forward passes, each of the whole batch: 31 for the
 * shipped Fashion-MNIST model (6 × 4 heads), 157 for ViT-B/16 (12 × 12).
 *
 * What it omits: heads switched off two at a time (their interactions),
 * gradient estimates of importance (Michel et al.'s first-order proxy, one
 * backward pass instead of L·H forwards), and pruning: a head that is off
 * still computes, its share is multiplied away.
 */
#ifndef VIT_HEAD_IMPORTANCE_H
#define VIT_HEAD_IMPORTANCE_H

#include "base/tensor.h"
#include "base/util.h"
#include "model/vit.h"

/** @defgroup head_importance Head importance
 *  @brief Every head switched off in turn: the change in the class's probability.
 *
 *  With \f$m^{(lh)}\f$ the switches that turn only head h of layer l off
 *  (vit_set_head_off()), and c the class the full model predicts:
 *  \f[ \Delta p_{lh} = \mathrm{softmax}\big(f(x;\, m^{(lh)})\big)_c
 *                    - \mathrm{softmax}\big(f(x;\, \mathbf 1)\big)_c \f]
 *
 *  The question of @ref chapter12 "chapter 12" (what did the model learn?)
 *  asked of the heads instead of the patches; shown by `vit heads` and the
 *  viewer's key I. Pinned by the suite @ref test_head_importance.c
 *  "head_importance" against PyTorch (@ref answer_keys "the answer keys").
 *  @{
 */

/** What head_importance() measured, for a batch of B images. */
typedef struct {
    int batch;          /**< B */
    int layers;         /**< L */
    int heads;          /**< H */
    int *classes;       /**< (B) the class measured in each image */
    double *full;       /**< (B) its probability with every head on */
    float *delta;       /**< (B, L, H) Δp: its probability with head h of layer l off, minus full */
    float *layer_delta; /**< (B, L) the same with every head of layer l off at once */
} HeadImportance;

/**
 * @brief The probability of each image's class in the model as it is
 *        switched now: one forward pass, softmax in double.
 * @param[out] p        (B) softmax(logits_b)[classes[b]]
 * @param[in]  input    (B, C, S, S) normalised pixels
 * @param[in]  classes  (B) each image's class, in [0, Y)
 * @return VIT_ERR_INPUT for a class outside [0, Y); else as vit_forward()
 */
VitStatus head_class_probs(double *p, Vit *vit, const Tensor *input, const int *classes,
                           VitError *err);

/**
 * @brief Every head of @p vit switched off in turn, and every layer's heads
 *        at once: the change in each image's class probability against the
 *        full model (every head on).
 *
 * Whatever heads were switched off before the call, the full model has every
 * head on, and the switches are as they were afterwards, failure or not.
 * @param[out] out      filled (head_importance_free() it, also after a failure)
 * @param[in]  input    (B, C, S, S) normalised pixels
 * @param[in]  classes  (B) the class measured in each image; NULL: the one the full
 *                      model predicts (the first of equal largest logits)
 * @return VIT_ERR_INPUT for a class outside [0, Y); else as vit_forward()
 */
VitStatus head_importance(HeadImportance *out, Vit *vit, const Tensor *input, const int *classes,
                          VitError *err);

/** Told after each forward pass of head_importance_watched(): @p done of @p total. */
typedef void (*HeadImportanceProgress)(void *user, int done, int total);

/**
 * @brief head_importance(), telling @p progress (unless NULL) after each of its
 *        L·H + L + 1 passes: for a caller that shows how far a long measure is.
 */
VitStatus head_importance_watched(HeadImportance *out, Vit *vit, const Tensor *input,
                                  const int *classes, HeadImportanceProgress progress, void *user,
                                  VitError *err);

/**
 * @brief The most important head of image @p b: the one whose switching off
 *        lowers the class's probability the most (the smallest Δp; the first
 *        in layer, then head, order among equals).
 */
void head_importance_most(const HeadImportance *hi, int b, int *layer, int *head);

/** @brief Free what head_importance() allocated and zero @p hi (safe on a zeroed one). */
void head_importance_free(HeadImportance *hi);

/** @} */
#endif
