/**
 * @file step_view.c
 * @brief The next training step on a copy, with every stage heard (step_view.h):
 *        trainer_step()'s five lines again, with a listener on the forward,
 *        the backward and each parameter's update.
 *
 * Shape legend: B batch, C channels, S side, Y classes.
 */
#include "train/step_view.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/params.h"

// Copies the run's parameters and AdamW's state into the view's trainer,
// whose model was drawn at random: both lists are in state_dict order.
static void copy_state(Trainer *dst, const Trainer *src) {
    for (int i = 0; i < src->opt.count; i++)
        memcpy(dst->opt.params[i].data, src->opt.params[i].data,
               src->opt.params[i].numel * sizeof(float));
    memcpy(dst->opt.memory, src->opt.memory, src->opt.floats * sizeof(float));
    dst->opt.step = src->opt.step;
    dst->step = src->step;
}

VitStatus train_step_view_open(TrainStepView *v, const Trainer *run, VitError *err) {
    memset(v, 0, sizeof *v);
    if (run->step >= trainer_total_steps(run))
        return vit_fail(err, VIT_ERR_INPUT, "the run is over: all %lld steps are taken, "
                        "there is no next step to watch", (long long)trainer_total_steps(run));
    TrainConfig one = run->config;
    one.shards = 1; // the whole batch in one pass, so every stage is heard once
    VitStatus s = trainer_init(&v->copy, &run->vit.config, &one, run->data, err);
    if (s != VIT_OK) return s;
    copy_state(&v->copy, run);
    v->shards = run->config.shards > 1 ? run->config.shards : 1;
    v->step = run->step;
    v->lr = lr_at(&v->copy.schedule, (int)v->step);
    const AdamW *o = &v->copy.opt;
    v->offset = vit_malloc((size_t)o->count * sizeof *v->offset);
    size_t total = 0, largest = 1;
    for (int i = 0; i < o->count; i++) {
        v->offset[i] = total;
        total += o->params[i].numel;
        if (o->params[i].numel > largest) largest = o->params[i].numel;
    }
    v->before = vit_malloc(total * sizeof *v->before);
    v->delta = vit_malloc(largest * sizeof *v->delta);
    trainer_next_batch(&v->copy); // the run's next batch: the same images, crops and flips
    return VIT_OK;
}

// What adamw_step_each() tells after each tensor: its change, as a stage.
typedef struct {
    TrainStepView *view;
    const VitParam *shapes; // (params) the tensors' shapes, state_dict order
    TraceFn trace;
    void *user;
} UpdateListener;

static void on_updated(void *user, const AdamW *opt, int i) {
    UpdateListener *l = user;
    const TrainStepView *v = l->view;
    const OptimParam *p = &opt->params[i];
    const float *before = v->before + v->offset[i];
    for (size_t j = 0; j < p->numel; j++) v->delta[j] = p->data[j] - before[j];
    char name[96];
    snprintf(name, sizeof name, TRAIN_UPDATE_PREFIX "%s", p->name);
    const Tensor t = tensor_view_shape(v->delta, l->shapes[i].ndim, l->shapes[i].shape);
    l->trace(l->user, name, &t);
}

// AdamW's step on the copy, each tensor's update handed to the listener.
static void update(TrainStepView *v, TraceFn trace, void *user) {
    Trainer *t = &v->copy;
    for (int i = 0; i < t->opt.count; i++)
        memcpy(v->before + v->offset[i], t->opt.params[i].data,
               t->opt.params[i].numel * sizeof(float));
    if (!trace) {
        adamw_step_each(&t->opt, v->lr, NULL, NULL);
        return;
    }
    VitParam *shapes = vit_malloc((size_t)t->opt.count * sizeof *shapes);
    vit_weights_params(shapes, &t->vit.weights, &t->vit.config); // the optimizer's order
    UpdateListener l = {v, shapes, trace, user};
    adamw_step_each(&t->opt, v->lr, on_updated, &l);
    free(shapes);
}

// [train_step_view_run]
VitStatus train_step_view_run(TrainStepView *v, TraceFn trace, void *user, VitError *err) {
    Trainer *t = &v->copy;
    const TrainConfig *c = &t->config;
    const VitConfig *m = &t->vit.config;
    if (v->taken) return vit_fail(err, VIT_ERR_INPUT, "step %lld was taken already: open the "
                                  "view again for the next", (long long)v->step + 1);
    const int shape[4] = {c->batch, m->channels, m->image_size, m->image_size};
    const Tensor images = tensor_view_shape(t->images, 4, shape);
    vit_grads_zero(&t->grads);
    float loss;
    VitStatus s = vit_forward_backward(&t->vit, &t->grads, &images, t->labels, c->smoothing,
                                       &loss, trace, user, err); // forward, loss, backward
    if (s != VIT_OK) return s;
    const double norm = c->clip > 0 ? optim_clip_grad_norm(t->opt.params, t->opt.count, c->clip)
                                    : optim_grad_norm(t->opt.params, t->opt.count);
    if (!isfinite(loss) || !isfinite(norm))
        return vit_fail(err, VIT_ERR_INPUT, "step %lld: the %s is not finite; the weights "
                        "were not updated", (long long)v->step + 1,
                        isfinite(loss) ? "gradient norm" : "loss");
    update(v, trace, user); // AdamW, one stage per parameter
    const Tensor logits = vit_logits(&t->vit);
    v->result = (TrainStep){.loss = loss, .grad_norm = norm, .lr = v->lr,
                            .correct = eval_logits_correct(logits.data, t->labels, c->batch,
                                                           m->num_classes)};
    t->step++;
    v->taken = 1;
    return VIT_OK;
}
// [train_step_view_run]

static double norm_of(const float *x, size_t n) {
    double s = 0;
    for (size_t j = 0; j < n; j++) s += (double)x[j] * x[j];
    return sqrt(s);
}

TrainParamUpdate train_step_view_update(const TrainStepView *v, int i) {
    const AdamW *o = &v->copy.opt;
    const OptimParam *p = &o->params[i];
    const float *before = v->before + v->offset[i];
    double diff = 0;
    for (size_t j = 0; j < p->numel; j++) {
        const double d = (double)p->data[j] - before[j];
        diff += d * d;
    }
    TrainParamUpdate u = {.grad = norm_of(p->grad, p->numel),
                          .m = norm_of(o->moments[i].m, p->numel),
                          .v = norm_of(o->moments[i].v, p->numel),
                          .before = norm_of(before, p->numel), .update = sqrt(diff)};
    if (p->decay) u.decay = v->lr * o->config.weight_decay * u.before;
    u.ratio = u.before > 0 ? u.update / u.before : 0;
    return u;
}

int train_step_view_param(const TrainStepView *v, const char *name) {
    const size_t k = strlen(TRAIN_UPDATE_PREFIX);
    if (strncmp(name, TRAIN_UPDATE_PREFIX, k) != 0) return -1;
    for (int i = 0; i < v->copy.opt.count; i++)
        if (!strcmp(v->copy.opt.params[i].name, name + k)) return i;
    return -1;
}

void train_step_view_free(TrainStepView *v) {
    trainer_free(&v->copy);
    free(v->before);
    free(v->offset);
    free(v->delta);
    memset(v, 0, sizeof *v);
}
