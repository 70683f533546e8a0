/**
 * @file layer_stats.c
 * @brief Each layer group's gradient norm, weight norm and update ratio of
 *        one step (layer_stats.h).
 */
#include "train/layer_stats.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int train_layer_count(const VitConfig *c) {
    return c->depth + 3;
}

// timm's names: patch_embed.*, cls_token, pos_embed | blocks.i.* | norm.* | head.*
int train_layer_of(const char *name, int depth) {
    if (strncmp(name, "patch_embed.", 12) == 0 || strcmp(name, "cls_token") == 0 ||
        strcmp(name, "pos_embed") == 0)
        return 0;
    if (strncmp(name, "blocks.", 7) == 0) {
        char *end;
        const long i = strtol(name + 7, &end, 10);
        return end != name + 7 && *end == '.' && i >= 0 && i < depth ? 1 + (int)i : -1;
    }
    if (strncmp(name, "norm.", 5) == 0) return depth + 1;
    if (strncmp(name, "head.", 5) == 0) return depth + 2;
    return -1;
}

void train_layer_name(char *buf, size_t size, int g, int depth) {
    if (g == 0) snprintf(buf, size, "patch_embed");
    else if (g <= depth) snprintf(buf, size, "blocks.%d", g - 1);
    else snprintf(buf, size, g == depth + 1 ? "norm" : "head");
}

VitStatus train_layers_init(TrainLayerWatch *w, const AdamW *opt, int depth, VitError *err) {
    *w = (TrainLayerWatch){.groups = depth + 3, .params = opt->count};
    w->group_of = vit_malloc((size_t)w->params * sizeof *w->group_of);
    for (int i = 0; i < w->params; i++) {
        w->group_of[i] = train_layer_of(opt->params[i].name, depth);
        if (w->group_of[i] < 0) {
            char name[sizeof opt->params[i].name];
            snprintf(name, sizeof name, "%s", opt->params[i].name);
            train_layers_free(w);
            return vit_fail(err, VIT_ERR_INPUT, "parameter %s belongs to no layer group", name);
        }
        w->floats += opt->params[i].numel;
    }
    w->before = vit_malloc(w->floats * sizeof *w->before);
    w->sums = vit_malloc((size_t)w->groups * 4 * sizeof *w->sums);
    return VIT_OK;
}

void train_layers_before(TrainLayerWatch *w, const AdamW *opt) {
    size_t at = 0;
    for (int i = 0; i < w->params; i++) {
        const OptimParam *p = &opt->params[i];
        memcpy(w->before + at, p->data, p->numel * sizeof *p->data);
        at += p->numel;
    }
}

// The factor optim_clip_grad_norm() multiplied the gradients by: 1 unless
// the norm passed the clip. Its float, as the gradients were scaled by it.
static double clip_scale(double norm, float clip) {
    const double coef = clip / (norm + 1e-6);
    return clip > 0 && isfinite(norm) && coef < 1.0 ? (double)(float)coef : 1.0;
}

void train_layers_after(TrainLayerWatch *w, const AdamW *opt, double grad_norm, float clip,
                        TrainLayerStats *out) {
    // Σ g², Σ θ², Σ (Δθ)², Σ θ_before² of each group, in double
    double *sums = w->sums;
    memset(sums, 0, (size_t)w->groups * 4 * sizeof *sums);
    size_t at = 0;
    for (int i = 0; i < w->params; i++) {
        const OptimParam *p = &opt->params[i];
        double *s = sums + 4 * w->group_of[i];
        for (size_t j = 0; j < p->numel; j++) {
            const double g = p->grad[j], now = p->data[j], was = w->before[at + j];
            s[0] += g * g, s[1] += now * now, s[2] += (now - was) * (now - was), s[3] += was * was;
        }
        at += p->numel;
    }
    const double scale = clip_scale(grad_norm, clip); // undone: the norms before clipping
    for (int g = 0; g < w->groups; g++) {
        const double *s = sums + 4 * g;
        out[g] = (TrainLayerStats){.grad_norm = sqrt(s[0]) / scale, .weight_norm = sqrt(s[1]),
                                   .update_ratio = s[3] > 0 ? sqrt(s[2]) / sqrt(s[3]) : 0};
    }
}

void train_layers_free(TrainLayerWatch *w) {
    free(w->group_of);
    free(w->before);
    free(w->sums);
    *w = (TrainLayerWatch){0};
}
