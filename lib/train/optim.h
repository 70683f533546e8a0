/**
 * @file optim.h
 * @brief Training's last step: AdamW, the learning-rate schedule, gradient clipping.
 *
 * Shape legend: every tensor here is flat, (numel) values; a parameter θ and
 * its gradient g have the same numel, and so have AdamW's two moments m and v.
 * (θ rather than the usual p, which the glossary keeps for the patch side; eps
 * rather than ε, which is LayerNorm's.)
 *
 * One training step, in the order PyTorch runs it:
 *
 * @code
 * AdamW opt;
 * if (adamw_init_vit(&opt, &vit, &grads, &cfg, &err) != VIT_OK) return 1;  // once
 * for (int step = 0; step < schedule.total_steps; step++) {
 *     // ... forward, loss, backward: the gradients are now in grads ...
 *     double norm = optim_clip_grad_norm(opt.params, opt.count, 1.0);   // clip_grad_norm_
 *     adamw_step(&opt, lr_at(&schedule, step));                   // opt.step()
 * }
 * adamw_free(&opt);
 * @endcode
 *
 * AdamW works on a list of tensors (OptimParam: values, gradient, size, and
 * whether weight decay applies), so it runs as well on a few plain arrays
 * (the tests) as on every parameter of a model: adamw_init_vit() builds the
 * list from the parameter table (params.h), walking the model's weights and a
 * gradient buffer laid out the same way side by side.
 *
 * Which tensors decay (adamw_decays()): the weights of the patch projection
 * and of every linear layer. Biases, LayerNorm scales and shifts, [cls] and
 * the position embeddings do not. This is timm's rule: its optimizer factory
 * (create_optimizer_v2 with the default filter_bias_and_bn) calls
 * param_groups_weight_decay(), which puts every tensor with ndim ≤ 1 or a
 * name ending in ".bias", and every name the model's no_weight_decay() lists
 * (VisionTransformer: pos_embed, cls_token, dist_token), into a group with
 * weight decay 0. Decay pulls a value towards 0, which is right for a weight
 * (it keeps the function simple) and wrong for a scale that should stay near
 * 1 or an embedding whose size carries meaning.
 *
 * Precision: the state m, v and the updates are float32, like the
 * parameters, as in PyTorch; the scalars (learning rate, bias corrections)
 * are doubles, as PyTorch's Python floats are; the gradient norm is summed
 * in double, so a hundred million squares add up without losing digits.
 *
 * Deliberately omitted: AMSGrad, maximize, other optimizers (SGD, LAMB),
 * per-group learning rates (layer-wise decay), schedules other than warm-up
 * plus cosine, and other norms than L2 for clipping.
 */
#ifndef VIT_OPTIM_H
#define VIT_OPTIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/vit.h"

/** @defgroup optim Optimisation
 *  @brief AdamW with decoupled weight decay, warm-up plus cosine learning
 *         rate, global gradient-norm clipping.
 *
 *  One AdamW step t = 1, 2, … with learning rate η (torch.optim.AdamW):
 *  decay first, only for tensors that decay (λ is 0 for the others),
 *  \f[ \theta \leftarrow \theta - \eta \lambda \theta \f]
 *  then the moments and the bias-corrected step,
 *  \f[ m \leftarrow \beta_1 m + (1-\beta_1)\, g, \qquad
 *      v \leftarrow \beta_2 v + (1-\beta_2)\, g^2 \f]
 *  \f[ \hat m = \frac{m}{1-\beta_1^t}, \qquad \hat v = \frac{v}{1-\beta_2^t}, \qquad
 *      \theta \leftarrow \theta - \eta\, \frac{\hat m}{\sqrt{\hat v} + \mathrm{eps}} \f]
 *  The decay is *decoupled*: it never passes through m and v, unlike Adam with
 *  an L2 penalty added to the loss, whose decay Adam would rescale away.
 *
 *  The learning rate at step s (lr_at()): a linear warm-up over the first
 *  \f$s_w\f$ steps from the fraction f of the peak, then a cosine down to
 *  the floor at the last step \f$s_e\f$ = total_steps − 1,
 *  \f[ \eta(s) = \begin{cases}
 *      \eta_{peak} \left(f + (1-f)\, \dfrac{s}{s_w}\right) & s < s_w \\[1ex]
 *      \eta_{min} + \dfrac{\eta_{peak} - \eta_{min}}{2}
 *      \left(1 + \cos\left(\pi\, \dfrac{s - s_w}{s_e - s_w}\right)\right) & s_w \le s \le s_e
 *      \end{cases} \f]
 *
 *  Clipping (optim_clip_grad_norm()): one norm over every gradient, as if they were
 *  one vector, and every gradient scaled by the same factor when it is too long,
 *  \f[ \|g\| = \sqrt{\textstyle\sum_i g_i^2}, \qquad
 *      g \leftarrow g \cdot \min\left(1, \frac{c}{\|g\| + 10^{-6}}\right) \f]
 *
 *  Taught in @ref chapter10 "chapter 10" (one AdamW step), @ref chapter11 "chapter 11" (the
 *  schedule of a real run). Pinned by the suites @ref test_optim.c "optim",
 *  @ref test_ch10_learning.c "ch10_learning" (@ref answer_keys "the answer keys").
 *  @{
 */

/** One tensor to optimise: where its values and gradient are, and whether it decays. */
typedef struct {
    float *data;   /**< (numel) the values θ, updated in place by adamw_step() */
    float *grad;   /**< (numel) the gradient g, read by adamw_step(), scaled by optim_clip_grad_norm() */
    size_t numel;  /**< values in each */
    bool decay;    /**< true: weight decay applies (adamw_decays() for a model's tensors) */
    char name[64]; /**< for messages, e.g. "blocks.0.attn.qkv.weight"; may be empty */
} OptimParam;

/** AdamW's constants; the learning rate is given to each adamw_step(). */
typedef struct {
    double beta1;        /**< β1, decay of the first moment, e.g. 0.9 */
    double beta2;        /**< β2, decay of the second moment, e.g. 0.999 */
    double eps;          /**< eps, added to √v̂ so a tiny v cannot blow the step up, e.g. 1e-8 */
    double weight_decay; /**< λ of the tensors that decay, e.g. 0.01 (timm's ViT recipes: 0.05) */
} AdamWConfig;

/** The first and second moment of one tensor, carved from AdamW::memory. */
typedef struct {
    float *m; /**< (numel) running mean of g */
    float *v; /**< (numel) running mean of g² */
} AdamWMoments;

/** An AdamW optimizer over a list of tensors. Set up by adamw_init() or adamw_init_vit(). */
typedef struct {
    AdamWConfig config;    /**< its constants */
    OptimParam *params;    /**< count tensors: a copy of the list it was given */
    AdamWMoments *moments; /**< count pairs, moments[i] for params[i] */
    int count;             /**< tensors */
    int64_t step;          /**< t: steps taken so far (0 before the first adamw_step()) */
    float *memory;         /**< the one allocation: every m in order, then every v */
    size_t floats;         /**< its size in floats, 2 · Σ numel */
} AdamW;

/** @brief PyTorch's defaults: β1 0.9, β2 0.999, eps 1e-8, weight decay 0.01. */
AdamWConfig adamw_defaults(void);

/**
 * @brief Whether a parameter of the table (params.h) gets weight decay: timm's rule.
 *
 * Weights decay; biases, LayerNorm scales and shifts do not (their kind says
 * so), nor do cls_token and pos_embed (timm's VisionTransformer.no_weight_decay()).
 */
bool adamw_decays(const VitParamSpec *s);

/**
 * @brief Set up AdamW for @p count tensors, m and v zero, in one allocation.
 * @param[out] opt     the optimizer; free it with adamw_free()
 * @param[in]  params  the tensors (copied; the arrays they point to are borrowed)
 * @param[in]  cfg     its constants, e.g. adamw_defaults()
 * @return VIT_ERR_INPUT for constants out of range (β in [0, 1), eps > 0,
 *         λ ≥ 0), a tensor without values or gradient, or a state larger than
 *         the memory this process may take (checked before it is taken).
 */
VitStatus adamw_init(AdamW *opt, const OptimParam *params, int count, const AdamWConfig *cfg,
                     VitError *err);

/**
 * @brief Set up AdamW for every parameter of @p vit, with its gradients in @p grads.
 *
 * Both are walked with the parameter table (vit_weights_params(),
 * vit_grad_weights_params()), in timm's state_dict order, so
 * @p grads must be laid out like the weights: the same tensors, q, k and v
 * fused or split alike (a buffer carved by walking the parameter table is).
 * Weight decay follows adamw_decays().
 * @param[in] vit    a model whose parameters it owns (vit_build_random()):
 *                   weights still mapped from a file are read-only, and refused
 * @param[in] grads  the gradients, one tensor for each parameter (VitGrads::weights)
 * @return VIT_ERR_INPUT, naming the tensor, when the layouts differ or a
 *         parameter lies in the mapped file; otherwise as adamw_init().
 */
VitStatus adamw_init_vit(AdamW *opt, Vit *vit, const VitGradWeights *grads,
                         const AdamWConfig *cfg, VitError *err);

/** @brief One AdamW step (t ← t + 1) over every tensor, with learning rate @p lr. */
void adamw_step(AdamW *opt, double lr);

/** Told that tensor @p i of @p opt has just been updated (its values, m and v are new). */
typedef void (*AdamWUpdated)(void *user, const AdamW *opt, int i);

/**
 * @brief adamw_step(), calling @p updated after each tensor's update: the same
 *        arithmetic in the same order, so the same bits, for a debugger to
 *        watch the step one parameter at a time (train/step_view.h).
 * @param[in] updated  NULL: adamw_step() itself
 */
void adamw_step_each(AdamW *opt, double lr, AdamWUpdated updated, void *user);

/** @brief Free the state and the list, and zero @p opt (safe on a zeroed or freed one). */
void adamw_free(AdamW *opt);

/** A warm-up plus cosine learning-rate schedule, read by lr_at(). */
typedef struct {
    double peak_lr;      /**< η_peak, reached at the end of the warm-up, e.g. 1e-3 */
    double min_lr;       /**< η_min, the floor reached at the last step, e.g. 1e-5 */
    double warmup_start; /**< f: the warm-up starts at f · η_peak, e.g. 0 */
    int warmup_steps;    /**< s_w: steps of warm-up, e.g. 5; 0 starts at the peak */
    int total_steps;     /**< steps in the run, e.g. 100; the last is s_e = total_steps − 1 */
} LrSchedule;

/**
 * @brief Check a schedule whose numbers came from a user.
 * @return VIT_ERR_USAGE unless 1 ≤ total_steps, 0 ≤ warmup_steps < total_steps,
 *         0 ≤ min_lr ≤ peak_lr and 0 ≤ warmup_start ≤ 1, all finite.
 */
VitStatus lr_schedule_check(const LrSchedule *s, VitError *err);

/**
 * @brief The learning rate of step @p step (from 0), the formula of @ref optim.
 *
 * Steps before 0 count as 0, steps after the last as the last (η_min).
 * With f = 0 the first step has η = 0: it moves m and v, not the parameters,
 * as PyTorch's LambdaLR warm-up does.
 */
double lr_at(const LrSchedule *s, int step);

/** @brief The L2 norm of every gradient together, summed in double. */
double optim_grad_norm(const OptimParam *params, int count);

/**
 * @brief Scale every gradient down so that their norm is at most @p max_norm
 *        (torch.nn.utils.clip_grad_norm_).
 *
 * The factor is max_norm / (norm + 1e-6), applied only when below 1: a
 * gradient already short enough is left exactly as it is. A norm that is NaN
 * or infinite leaves the gradients alone too (PyTorch would multiply them by
 * NaN): the caller sees it in the result and should skip the step.
 * @return the norm before clipping
 */
double optim_clip_grad_norm(OptimParam *params, int count, double max_norm);

/** @} */
#endif
