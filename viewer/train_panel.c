/**
 * @file train_panel.c
 * @brief The training screen's pictures and attention, on a probe of the
 *        model being trained (see train_panel.h).
 */
#include "train_panel.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "ops/ops.h"
#include "train/train.h" // ops_index_of_max()

int train_panel_pick(int *indices, const Dataset *d, int max) {
    int n = 0;
    for (int c = 0; c < d->classes && n < max; c++)
        for (int i = 0; i < d->count; i++)
            if (d->labels[i] == c) {
                indices[n++] = i;
                break;
            }
    return n;
}

VitStatus train_panel_init(TrainPanel *p, TrainView *v, const Vit *model, const Dataset *d,
                           float mean, float std, VitError *err) {
    *p = (TrainPanel){0};
    const VitConfig *c = &model->config;
    if (d->size != c->image_size || d->channels != c->channels)
        return vit_fail(err, VIT_ERR_INPUT, "the panel's pictures are %d×%d, the model takes %d×%d",
                        d->size, d->size, c->image_size, c->image_size);
    int indices[TRAIN_PANEL_MAX];
    const int P = train_panel_pick(indices, d, TRAIN_PANEL_MAX), S = d->size, C = d->channels;
    v->pictures = P, v->S = S;
    v->thumbs = vit_calloc((size_t)(P ? P : 1) * S * S, sizeof *v->thumbs);
    v->truth = vit_calloc((size_t)(P ? P : 1), sizeof *v->truth);
    v->predicted = vit_calloc((size_t)(P ? P : 1), sizeof *v->predicted);
    v->prob = vit_calloc((size_t)(P ? P : 1), sizeof *v->prob);
    for (int i = 0; i < P; i++) // the thumbnails: channel 0 as grey, or the RGB pixels
        for (int k = 0; k < S * S; k++) {
            const unsigned char *px = d->pixels + (size_t)indices[i] * C * S * S;
            const unsigned char g = px[k];
            v->thumbs[(size_t)i * S * S + k] =
                C == 3 ? (Rgb){px[k], px[S * S + k], px[2 * S * S + k]} : (Rgb){g, g, g};
        }
    for (int y = 0; y < d->classes && y < v->classes; y++)
        if (d->class_names && d->class_names[y])
            snprintf(v->class_names[y], sizeof v->class_names[y], "%s", d->class_names[y]);
    if (P == 0) return VIT_OK;
    p->input = tensor_new(4, P, C, S, S);
    dataset_batch(p->input.data, v->truth, d, indices, P, mean, std, NULL, NULL);
    // the probe: the model's sizes, its weights borrowed (as a shard's replica borrows them)
    p->probe.config = model->config;
    p->probe.weights = model->weights;
    snprintf(p->probe.source, sizeof p->probe.source, "%s", model->source);
    return VIT_OK;
}

// The trace of the panel's pass: keep [cls]'s row of the chosen layer, head and picture.
static void on_probe_trace(void *user, const char *name, const Tensor *t) {
    TrainPanel *p = user;
    char wanted[48];
    snprintf(wanted, sizeof wanted, "blocks.%d.attn.probs", p->wanted_layer);
    if (strcmp(name, wanted) != 0) return;
    // t is (P, H, N, N); [cls] is query row 0, its keys are [cls] then the patches
    const int H = t->shape[1], N = t->shape[2];
    const float *row = t->data + (((size_t)p->wanted_picture * H + p->wanted_head) * N) * N;
    TrainView *v = p->view;
    v->attention_cls = row[0];
    for (int k = 1; k < N && k - 1 < v->grid * v->grid; k++) v->attention[k - 1] = row[k];
}

VitStatus train_panel_update(TrainPanel *p, TrainView *v, VitError *err) {
    if (v->pictures == 0) return VIT_OK;
    p->wanted_layer = v->layer, p->wanted_head = v->head, p->wanted_picture = v->picture;
    p->view = v;
    VitStatus s = vit_forward(&p->probe, &p->input, on_probe_trace, p, err);
    p->view = NULL;
    if (s != VIT_OK) return s;
    const Tensor logits = vit_logits(&p->probe); // (P, Y)
    const int Y = logits.shape[1];
    float *probs = vit_malloc((size_t)Y * sizeof *probs);
    for (int i = 0; i < v->pictures; i++) {
        softmax(probs, logits.data + (size_t)i * Y, 1, Y);
        v->predicted[i] = ops_index_of_max(probs, Y);
        v->prob[i] = probs[v->predicted[i]];
    }
    free(probs);
    v->has_panel = true;
    return VIT_OK;
}

void train_panel_free(TrainPanel *p) {
    p->probe.weights = (VitWeights){0}; // borrowed: vit_free() must not free them
    vit_free(&p->probe);
    tensor_free(&p->input);
    memset(p, 0, sizeof *p);
}
