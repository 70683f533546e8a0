/**
 * @file head_importance.c
 * @brief Every head switched off in turn (head_importance.h).
 *
 * Shape legend: B images, L layers, H heads, Y classes.
 *
 * The switches are the model's own (Vit::heads_off, head_off.c): a copy of
 * them is taken first, every head is switched on for the full model, each
 * (layer, head) is switched off for one pass and on again, and the copy is
 * put back at the end, so a caller (the viewer's what-ifs) finds its switches
 * as it left them. The probabilities are a softmax in double of the float
 * logits: a change of 1e-6 in a probability near 1 is still seen.
 */
#include "explain/head_importance.h"

#include "train/train.h" // ops_index_of_max()

#include <math.h>
#include <stdlib.h>
#include <string.h>

// softmax(logits)[c] in double; logits is (Y)
static double class_probability(const float *logits, int Y, int c) {
    double top = logits[0], sum = 0;
    for (int j = 1; j < Y; j++)
        if (logits[j] > top) top = logits[j];
    for (int j = 0; j < Y; j++) sum += exp((double)logits[j] - top);
    return exp((double)logits[c] - top) / sum;
}

// p[b] = softmax(logits_b)[classes[b]] from the last pass's (B, Y) logits
static void probs_of_logits(double *p, const Vit *vit, int B, const int *classes) {
    const int Y = vit->config.num_classes;
    const float *logits = vit_logits(vit).data;
    for (int b = 0; b < B; b++) p[b] = class_probability(logits + (size_t)b * Y, Y, classes[b]);
}

VitStatus head_class_probs(double *p, Vit *vit, const Tensor *input, const int *classes,
                           VitError *err) {
    // p is (B), input is (B, C, S, S), classes is (B)
    const int B = input->shape[0], Y = vit->config.num_classes;
    for (int b = 0; b < B; b++)
        if (classes[b] < 0 || classes[b] >= Y)
            return vit_fail(err, VIT_ERR_INPUT, "class %d of image %d: the model has classes 0 "
                            "to %d", classes[b], b, Y - 1);
    VitStatus s = vit_forward(vit, input, NULL, NULL, err);
    if (s == VIT_OK) probs_of_logits(p, vit, B, classes);
    return s;
}

// The full model's pass: the class of each image (the predicted one unless
// given) and its probability.
static VitStatus full_model(HeadImportance *hi, Vit *vit, const Tensor *input, const int *classes,
                            VitError *err) {
    const int B = hi->batch, Y = vit->config.num_classes;
    if (classes) {
        memcpy(hi->classes, classes, sizeof(int) * (size_t)B);
        return head_class_probs(hi->full, vit, input, hi->classes, err);
    }
    VitStatus s = vit_forward(vit, input, NULL, NULL, err);
    if (s != VIT_OK) return s;
    const float *logits = vit_logits(vit).data; // (B, Y)
    for (int b = 0; b < B; b++) hi->classes[b] = ops_index_of_max(logits + (size_t)b * Y, Y);
    probs_of_logits(hi->full, vit, B, hi->classes);
    return VIT_OK;
}

// Δp of each image with head `head` of layer `layer` off (−1: all its heads),
// written to out[b · stride]; every head is on again afterwards.
static VitStatus switched_off(float *out, size_t stride, HeadImportance *hi, Vit *vit,
                              const Tensor *input, int layer, int head, double *p,
                              VitError *err) {
    VitStatus s = vit_set_head_off(vit, layer, head, true, err);
    if (s == VIT_OK) s = head_class_probs(p, vit, input, hi->classes, err);
    vit_heads_all_on(vit);
    if (s != VIT_OK) return s;
    for (int b = 0; b < hi->batch; b++) out[(size_t)b * stride] = (float)(p[b] - hi->full[b]);
    return VIT_OK;
}

/** Who hears of each pass, and how many there are. */
typedef struct {
    HeadImportanceProgress fn; // NULL: nobody
    void *user;
    int done, total;
} Passes;

static void pass_done(Passes *passes) {
    passes->done++;
    if (passes->fn) passes->fn(passes->user, passes->done, passes->total);
}

// The grid and the layers' column, against the full model; every head on throughout.
static VitStatus measure(HeadImportance *hi, Vit *vit, const Tensor *input, const int *classes,
                         Passes *passes, VitError *err) {
    const int L = hi->layers, H = hi->heads;
    double *p = vit_malloc(sizeof(double) * (size_t)hi->batch);
    VitStatus s = full_model(hi, vit, input, classes, err);
    if (s == VIT_OK) pass_done(passes);
    for (int l = 0; l < L && s == VIT_OK; l++) {
        for (int h = 0; h <= H && s == VIT_OK; h++) { // head H: the layer's heads all at once
            s = h < H ? switched_off(hi->delta + (size_t)l * H + h, (size_t)L * H, hi, vit, input,
                                     l, h, p, err)
                      : switched_off(hi->layer_delta + l, (size_t)L, hi, vit, input, l, -1, p,
                                     err);
            if (s == VIT_OK) pass_done(passes);
        }
    }
    free(p);
    return s;
}

VitStatus head_importance(HeadImportance *out, Vit *vit, const Tensor *input, const int *classes,
                          VitError *err) {
    return head_importance_watched(out, vit, input, classes, NULL, NULL, err);
}

VitStatus head_importance_watched(HeadImportance *out, Vit *vit, const Tensor *input,
                                  const int *classes, HeadImportanceProgress progress, void *user,
                                  VitError *err) {
    const int B = input->shape[0], L = vit->config.depth, H = vit->config.heads;
    memset(out, 0, sizeof *out);
    out->batch = B, out->layers = L, out->heads = H;
    out->classes = vit_calloc((size_t)B, sizeof *out->classes);
    out->full = vit_calloc((size_t)B, sizeof *out->full);
    out->delta = vit_calloc((size_t)B * L * H, sizeof *out->delta);
    out->layer_delta = vit_calloc((size_t)B * L, sizeof *out->layer_delta);
    // the caller's switches, kept aside and put back: the full model has every head on
    const size_t n = (size_t)L * H;
    bool *before = NULL;
    if (vit->heads_off) {
        before = vit_malloc(n * sizeof *before);
        memcpy(before, vit->heads_off, n * sizeof *before);
        vit_heads_all_on(vit);
    }
    Passes passes = {progress, user, 0, L * H + L + 1};
    VitStatus s = measure(out, vit, input, classes, &passes, err);
    if (before) memcpy(vit->heads_off, before, n * sizeof *before);
    free(before);
    return s;
}

void head_importance_most(const HeadImportance *hi, int b, int *layer, int *head) {
    const int L = hi->layers, H = hi->heads;
    const float *grid = hi->delta + (size_t)b * L * H; // (L, H)
    int best = 0;
    for (int i = 1; i < L * H; i++)
        if (grid[i] < grid[best]) best = i;
    *layer = best / H, *head = best % H;
}

void head_importance_free(HeadImportance *hi) {
    free(hi->classes);
    free(hi->full);
    free(hi->delta);
    free(hi->layer_delta);
    memset(hi, 0, sizeof *hi);
}
