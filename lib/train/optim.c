/**
 * @file optim.c
 * @brief AdamW, the warm-up plus cosine schedule and gradient clipping (optim.h).
 *
 * Shape legend: flat tensors of numel values; θ parameters, g gradients,
 * m and v AdamW's moments, all (numel).
 *
 * The update follows torch.optim.AdamW's single-tensor loop (PyTorch 1.13,
 * torch/optim/adamw.py) operation for operation: decay, m, v, then the step
 * with the bias corrections folded into two scalars. Doing the same float32
 * operations in the same order is what lets the tests hold ten steps to
 * PyTorch's parameters within a few units in the last place.
 *
 * Deliberately omitted: fused or vectorised kernels (the loop is memory-bound
 * and the compiler vectorises it), AMSGrad, saving the optimizer's state.
 */
#include "train/optim.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------- AdamW */

AdamWConfig adamw_defaults(void) {
    return (AdamWConfig){.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8, .weight_decay = 0.01};
}

// [adamw_decays]
bool adamw_decays(const VitParamSpec *s) {
    // timm's param groups: matrices decay; biases, norms (one dimension) and the
    // embeddings its VisionTransformer.no_weight_decay() names do not
    return s->kind == VIT_PARAM_WEIGHT && !s->embedding;
}
// [adamw_decays]

// The constants PyTorch's AdamW accepts, but eps > 0: with eps = 0 a value
// whose gradient was always 0 would step by 0/0.
static VitStatus check_config(const AdamWConfig *c, VitError *err) {
    if (!(c->beta1 >= 0 && c->beta1 < 1) || !(c->beta2 >= 0 && c->beta2 < 1))
        return vit_fail(err, VIT_ERR_INPUT, "AdamW: beta1 and beta2 must be in [0, 1), not %g and %g",
                        c->beta1, c->beta2);
    if (!(c->eps > 0 && isfinite(c->eps)))
        return vit_fail(err, VIT_ERR_INPUT, "AdamW: eps must be a positive number, not %g", c->eps);
    if (!(c->weight_decay >= 0 && isfinite(c->weight_decay)))
        return vit_fail(err, VIT_ERR_INPUT, "AdamW: weight decay must be 0 or more, not %g",
                        c->weight_decay);
    return VIT_OK;
}

// Σ numel of the list, refusing missing arrays and a total that overflows.
static VitStatus count_values(size_t *total, const OptimParam *p, int count, VitError *err) {
    *total = 0;
    for (int i = 0; i < count; i++) {
        const char *name = p[i].name[0] ? p[i].name : "(unnamed)";
        if (p[i].numel && (!p[i].data || !p[i].grad))
            return vit_fail(err, VIT_ERR_INPUT, "AdamW: tensor %d '%s' has no %s", i, name,
                            p[i].data ? "gradient" : "values");
        if (p[i].numel && p[i].data == p[i].grad)
            return vit_fail(err, VIT_ERR_INPUT,
                            "AdamW: tensor %d '%s' is its own gradient (the same array)", i, name);
        if (p[i].numel > SIZE_MAX / 2 - *total)
            return vit_fail(err, VIT_ERR_INPUT, "AdamW: the tensors hold more values than fit "
                            "in memory");
        *total += p[i].numel;
    }
    return VIT_OK;
}

// Points each tensor's m and v into the one allocation: every m, then every v.
static void carve_moments(AdamW *opt, size_t values) {
    float *m = opt->memory, *v = opt->memory + values;
    for (int i = 0; i < opt->count; i++) {
        opt->moments[i] = (AdamWMoments){m, v};
        m += opt->params[i].numel;
        v += opt->params[i].numel;
    }
}

VitStatus adamw_init(AdamW *opt, const OptimParam *params, int count, const AdamWConfig *cfg,
                     VitError *err) {
    memset(opt, 0, sizeof *opt);
    if (count < 0) return vit_fail(err, VIT_ERR_INPUT, "AdamW: %d tensors", count);
    size_t values;
    VitStatus s = check_config(cfg, err);
    if (s == VIT_OK) s = count_values(&values, params, count, err);
    if (s == VIT_OK) // the state is two floats for every parameter: 8 bytes each
        s = vit_check_memory(2.0 * (double)values * sizeof(float),
                             "the AdamW state (m and v, 8 bytes for each parameter)", err);
    if (s != VIT_OK) return s;
    float *memory = vit_try_malloc_aligned((values ? 2 * values : 1) * sizeof(float));
    if (!memory) {
        char need[VIT_NUM_BUF];
        return vit_fail(err, VIT_ERR_INPUT, "AdamW: cannot allocate its state, %s: out of memory",
                        vit_bytes(need, 2.0 * (double)values * sizeof(float)));
    }
    memset(memory, 0, 2 * values * sizeof(float)); // m and v start at 0, as in PyTorch
    *opt = (AdamW){.config = *cfg, .count = count, .memory = memory, .floats = 2 * values};
    opt->params = vit_calloc(count ? (size_t)count : 1, sizeof *opt->params);
    opt->moments = vit_calloc(count ? (size_t)count : 1, sizeof *opt->moments);
    if (count) memcpy(opt->params, params, (size_t)count * sizeof *params);
    carve_moments(opt, values);
    return VIT_OK;
}

/** The scalars of one step, the same for every tensor (computed in double, as PyTorch does). */
typedef struct {
    float decay;      /**< 1 − η λ, the factor weight decay multiplies θ by */
    float beta1, one_minus_beta1, beta2, one_minus_beta2;
    float step_size;  /**< η / (1 − β1^t): m̂ folded into the step */
    float bc2_sqrt;   /**< √(1 − β2^t): √v̂ = √v / bc2_sqrt */
    float eps;
} StepScalars;

// θ ← decay·θ; m, v ← running means; θ ← θ − step_size · m / (√v / bc2_sqrt + eps).
// The same float32 operations in the same order as PyTorch's loop. Each value
// is updated on its own, so the result is the same for any number of threads.
// [adamw_update]
static void adamw_update(float *theta, float *m, float *v, const float *g, size_t n,
                         const StepScalars *k, bool decay) {
#pragma omp parallel for if (n >= 65536) schedule(static)
    for (size_t i = 0; i < n; i++) {
        if (decay) theta[i] *= k->decay;
        m[i] = m[i] * k->beta1 + k->one_minus_beta1 * g[i];
        v[i] = v[i] * k->beta2 + k->one_minus_beta2 * g[i] * g[i];
        const float denom = sqrtf(v[i]) / k->bc2_sqrt + k->eps;
        theta[i] -= k->step_size * m[i] / denom;
    }
}
// [adamw_update]

// [adamw_step]
void adamw_step_each(AdamW *opt, double lr, AdamWUpdated updated, void *user) {
    const AdamWConfig *c = &opt->config;
    const double t = (double)++opt->step;
    const StepScalars k = {
        .decay = (float)(1.0 - lr * c->weight_decay),
        .beta1 = (float)c->beta1, .one_minus_beta1 = (float)(1.0 - c->beta1),
        .beta2 = (float)c->beta2, .one_minus_beta2 = (float)(1.0 - c->beta2),
        .step_size = (float)(lr / (1.0 - pow(c->beta1, t))),
        .bc2_sqrt = (float)sqrt(1.0 - pow(c->beta2, t)),
        .eps = (float)c->eps,
    };
    for (int i = 0; i < opt->count; i++) {
        const OptimParam *p = &opt->params[i];
        const bool decay = p->decay && c->weight_decay > 0;
        adamw_update(p->data, opt->moments[i].m, opt->moments[i].v, p->grad, p->numel, &k, decay);
        if (updated) updated(user, opt, i); // a debugger watching (NULL in training)
    }
}

void adamw_step(AdamW *opt, double lr) { adamw_step_each(opt, lr, NULL, NULL); }
// [adamw_step]

void adamw_free(AdamW *opt) {
    free(opt->memory);
    free(opt->params);
    free(opt->moments);
    memset(opt, 0, sizeof *opt);
}

/* ------------------------------------------------ AdamW over a model */

// A parameter still in the mapped file cannot be written: the map is read-only.
static bool in_file(const Vit *vit, const float *data) {
    const unsigned char *b = (const unsigned char *)data, *f = vit->file.buf;
    return f && b >= f && b < f + vit->file.size;
}

// Fills out[i] from the i-th weight and the i-th gradient g (listed from
// grads, which gives its writable pointer), after checking that the two lists
// describe the same tensor and that the weight is writable.
static VitStatus pair_tensor(OptimParam *out, const Vit *vit, const VitParam *w,
                             const VitGradWeights *grads, const VitParam *g, VitError *err) {
    if (!g->data)
        return vit_fail(err, VIT_ERR_INPUT, "AdamW: the gradients have no tensor for '%s'",
                        w->name);
    if (g->spec != w->spec || g->block != w->block)
        return vit_fail(err, VIT_ERR_INPUT, "AdamW: the gradients are not laid out like the "
                        "weights: '%s' in the gradients where the weights have '%s'",
                        g->name, w->name);
    if (in_file(vit, w->data))
        return vit_fail(err, VIT_ERR_INPUT, "AdamW: '%s' is mapped read-only from the weights "
                        "file %s; AdamW updates parameters in place, so it needs a model that "
                        "owns them (vit_build_random())", w->name,
                        vit->file.label ? vit->file.label : "");
    // VitWeights holds const pointers because a model usually borrows a
    // read-only map; this one points into a buffer the model owns.
    *out = (OptimParam){.data = (float *)w->data,
                        .grad = vit_param_grad_data(grads, g->spec, g->block, 0),
                        .numel = w->numel, .decay = adamw_decays(w->spec)};
    snprintf(out->name, sizeof out->name, "%s", w->name);
    return VIT_OK;
}

// The list of a model's tensors: weights and gradients paired, in state_dict order.
static VitStatus vit_tensors(OptimParam *out, int n, const Vit *vit,
                             const VitGradWeights *grads, VitError *err) {
    VitParam *w = vit_calloc((size_t)n, sizeof *w), *g = vit_calloc((size_t)n, sizeof *g);
    vit_weights_params(w, &vit->weights, &vit->config);
    vit_grad_weights_params(g, grads, &vit->config);
    VitStatus s = VIT_OK;
    for (int i = 0; i < n && s == VIT_OK; i++)
        s = pair_tensor(&out[i], vit, &w[i], grads, &g[i], err);
    free(w);
    free(g);
    return s;
}

VitStatus adamw_init_vit(AdamW *opt, Vit *vit, const VitGradWeights *grads,
                         const AdamWConfig *cfg, VitError *err) {
    memset(opt, 0, sizeof *opt);
    const int n = vit_weights_params(NULL, &vit->weights, &vit->config);
    const int n_grads = grads->blocks || vit->config.depth == 0
                            ? vit_grad_weights_params(NULL, grads, &vit->config) : -1;
    if (n_grads < 0)
        return vit_fail(err, VIT_ERR_INPUT, "AdamW: the gradients have no blocks");
    if (n_grads != n) // the same rows count the same: q, k, v fused in one, split in the other
        return vit_fail(err, VIT_ERR_INPUT, "AdamW: the gradients are not laid out like the "
                        "weights: %d tensors where the model has %d (q, k and v fused in one "
                        "and split in the other?)", n_grads, n);
    OptimParam *list = vit_calloc((size_t)n, sizeof *list);
    VitStatus s = vit_tensors(list, n, vit, grads, err);
    if (s == VIT_OK) s = adamw_init(opt, list, n, cfg, err);
    free(list);
    return s;
}

/* ------------------------------------------------------ the schedule */

VitStatus lr_schedule_check(const LrSchedule *s, VitError *err) {
    if (s->total_steps < 1 || s->warmup_steps < 0 || s->warmup_steps >= s->total_steps)
        return vit_fail(err, VIT_ERR_USAGE, "learning-rate schedule: %d warm-up steps of %d in "
                        "all; the warm-up needs 0 or more steps and fewer than the run",
                        s->warmup_steps, s->total_steps);
    if (!(s->min_lr >= 0 && s->min_lr <= s->peak_lr && isfinite(s->peak_lr)))
        return vit_fail(err, VIT_ERR_USAGE, "learning-rate schedule: the floor %g must lie "
                        "between 0 and the peak %g", s->min_lr, s->peak_lr);
    if (!(s->warmup_start >= 0 && s->warmup_start <= 1))
        return vit_fail(err, VIT_ERR_USAGE, "learning-rate schedule: the warm-up starts at a "
                        "fraction of the peak in [0, 1], not %g", s->warmup_start);
    return VIT_OK;
}

// [lr_at]
double lr_at(const LrSchedule *s, int step) {
    const int warm = s->warmup_steps, last = s->total_steps - 1;
    if (step > last) step = last;
    if (step < 0) step = 0;
    if (step < warm) // a straight line from f·peak at step 0 to the peak at step warm
        return s->peak_lr * (s->warmup_start + (1.0 - s->warmup_start) * step / warm);
    if (last <= warm) return s->peak_lr; // no step left to decay over
    const double progress = (double)(step - warm) / (last - warm); // 0 … 1
    return s->min_lr + (s->peak_lr - s->min_lr) * 0.5 * (1.0 + cos(M_PI * progress));
}
// [lr_at]

/* ------------------------------------------------------- clipping */

// Summed in double, one value after another: float32 would drop the small
// squares once the sum is large, and a fixed order gives the same bits on
// every run and any number of threads.
// [optim_grad_norm]
double optim_grad_norm(const OptimParam *params, int count) {
    double sum = 0;
    for (int i = 0; i < count; i++)
        for (size_t j = 0; j < params[i].numel; j++) {
            const double g = params[i].grad[j];
            sum += g * g;
        }
    return sqrt(sum);
}
// [optim_grad_norm]

// [optim_clip_grad_norm]
double optim_clip_grad_norm(OptimParam *params, int count, double max_norm) {
    const double norm = optim_grad_norm(params, count);
    const double coef = max_norm / (norm + 1e-6); // torch's 1e-6 keeps a zero norm finite
    if (!isfinite(norm) || !(coef < 1.0)) return norm;
    const float scale = (float)coef;
    for (int i = 0; i < count; i++)
        for (size_t j = 0; j < params[i].numel; j++) params[i].grad[j] *= scale;
    return norm;
}
// [optim_clip_grad_norm]
