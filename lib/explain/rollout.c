/**
 * @file rollout.c
 * @brief Attention rollout (rollout.h): fuse the heads, discard the weakest
 *        links, add the residual, normalise the rows, multiply through the layers.
 *
 * Shape legend: L blocks, H heads, N tokens ([cls] first).
 */
#include "explain/rollout.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"          // softmax()
#include "train/train.h" // ops_index_of_max()

static const char *const fuse_names[] = {"mean", "max", "min"};

const char *head_fuse_name(HeadFuse fuse) {
    return fuse >= FUSE_MEAN && fuse <= FUSE_MIN ? fuse_names[fuse] : "?";
}

bool head_fuse_parse(const char *name, HeadFuse *fuse) {
    for (int f = FUSE_MEAN; f <= FUSE_MIN; f++)
        if (!strcmp(name, fuse_names[f])) {
            *fuse = (HeadFuse)f;
            return true;
        }
    return false;
}

/* ------------------------------------------------------------ fusing heads */

// The H heads' values at one entry fused: p[h·plane] for h = 0 … H − 1.
// [fuse_entry]
static float fuse_entry(const float *p, size_t plane, int H, HeadFuse fuse) {
    double sum = 0.0;
    float lo = p[0], hi = p[0];
    for (int h = 0; h < H; h++) {
        const float v = p[(size_t)h * plane];
        sum += v;
        lo = fminf(lo, v);
        hi = fmaxf(hi, v);
    }
    return fuse == FUSE_MAX ? hi : fuse == FUSE_MIN ? lo : (float)(sum / H);
}
// [fuse_entry]

// [attention_fuse_heads]
void attention_fuse_heads(float *out, const float *probs, int H, int N, HeadFuse fuse) {
    // probs is (H, N, N), out is (N, N): one value per (query, key) from the H heads'
    const size_t nn = (size_t)N * N;
    for (size_t e = 0; e < nn; e++) out[e] = fuse_entry(probs + e, nn, H, fuse);
}
// [attention_fuse_heads]

// [attention_cls_row]
void attention_cls_row(float *out, const float *probs, int H, int N, int head, HeadFuse fuse) {
    // probs is (H, N, N), out is (N): row 0 of head `head`, or of the heads fused (head < 0)
    const size_t nn = (size_t)N * N;
    for (int j = 0; j < N; j++)
        out[j] = head >= 0 ? probs[(size_t)head * nn + (size_t)j] : fuse_entry(probs + j, nn, H, fuse);
}
// [attention_cls_row]

// [attention_grad_fuse]
void attention_grad_fuse(float *out, const float *probs, const float *grad, int H, int N) {
    // probs and grad are (H, N, N), out is (N, N): mean over h of max(0, p · g)
    const size_t nn = (size_t)N * N;
    for (size_t e = 0; e < nn; e++) {
        double sum = 0.0;
        for (int h = 0; h < H; h++) {
            const size_t i = (size_t)h * nn + e;
            const float pg = probs[i] * grad[i];
            if (pg > 0) sum += pg; // clamp(min = 0); a NaN fails the test and is dropped too
        }
        out[e] = (float)(sum / H);
    }
}
// [attention_grad_fuse]

/* ------------------------------------------------------ discarding entries */

// Rank entries by value, then by position: a total order, whatever qsort does with ties.
typedef struct {
    float value;
    int index;
} Entry;

static int entry_order(const void *pa, const void *pb) {
    const Entry *a = pa, *b = pb;
    const bool na = isnan(a->value), nb = isnan(b->value);
    if (na != nb) return na ? 1 : -1; // NaN above every number
    if (!na && a->value != b->value) return a->value < b->value ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

// [attention_discard_lowest]
void attention_discard_lowest(float *a, int N, double ratio) {
    // a is (N, N); vit-explain: flat.topk(int(N·N·r), largest=False), index 0 spared
    const int count = N * N;
    const int k = (int)floor((double)count * ratio);
    if (k <= 0) return;
    Entry *order = vit_malloc((size_t)count * sizeof *order);
    for (int e = 0; e < count; e++) order[e] = (Entry){a[e], e};
    qsort(order, (size_t)count, sizeof *order, entry_order);
    for (int r = 0; r < k && r < count; r++)
        if (order[r].index != 0) a[order[r].index] = 0.0f;
    free(order);
}
// [attention_discard_lowest]

/* ------------------------------------------------- rolling out, layer by layer */

// [attention_rollout]
VitStatus attention_rollout(float *joint, const float *const *probs, const float *const *grads,
                            int L, int H, int N, const RolloutOptions *opt, VitError *err) {
    // probs[l] and grads[l] are (H, N, N), joint is (N, N)
    if (L < 1 || H < 1 || N < 1)
        return vit_fail(err, VIT_ERR_USAGE, "rollout: %d layers, %d heads and %d tokens: each "
                        "must be at least 1", L, H, N);
    if (!(opt->discard >= 0 && opt->discard < 1))
        return vit_fail(err, VIT_ERR_USAGE, "rollout: discard ratio %g: it must be in [0, 1)",
                        opt->discard);
    const size_t nn = (size_t)N * N;
    double *acc = vit_malloc(3 * nn * sizeof *acc); // joint so far, then rollout_layer's room
    float *fused = vit_malloc(nn * sizeof *fused);
    for (size_t e = 0; e < nn; e++) acc[e] = e % ((size_t)N + 1) == 0; // the identity
    for (int l = 0; l < L; l++) {
        if (grads) attention_grad_fuse(fused, probs[l], grads[l], H, N);
        else attention_fuse_heads(fused, probs[l], H, N, opt->fuse);
        attention_discard_lowest(fused, N, opt->discard);
        rollout_layer(acc, fused, N, acc + nn);
    }
    for (size_t e = 0; e < nn; e++) joint[e] = (float)acc[e];
    free(fused);
    free(acc);
    return VIT_OK;
}
// [attention_rollout]

/* --------------------------------------------------------- from a trace */

// Layer l's (B, H, N, N) tensor called prefix + "blocks.{l}.attn.probs", checked.
static VitStatus layer_probs(const Tensor **out, const TraceRecorder *r, const char *prefix, int l,
                             int b, const Tensor *like, VitError *err) {
    char name[64];
    snprintf(name, sizeof name, "%sblocks.%d.attn.probs", prefix, l);
    const Tensor *t = trace_find(r, name);
    if (!t) return vit_fail(err, VIT_ERR_INPUT, "rollout: the trace has no %s", name);
    if (t->ndim != 4 || t->shape[2] != t->shape[3])
        return vit_fail(err, VIT_ERR_INPUT, "rollout: %s has %d axes, not (B, H, N, N)", name,
                        t->ndim);
    if (like && !tensor_same_shape(t, like))
        return vit_fail(err, VIT_ERR_INPUT, "rollout: %s is (%d, %d, %d, %d), unlike layer 0's",
                        name, t->shape[0], t->shape[1], t->shape[2], t->shape[3]);
    if (b < 0 || b >= t->shape[0])
        return vit_fail(err, VIT_ERR_INPUT, "rollout: image %d of a batch of %d", b, t->shape[0]);
    *out = t;
    return VIT_OK;
}

// [rollout_from_trace]
VitStatus rollout_from_trace(Tensor *joint, const TraceRecorder *forward,
                             const TraceRecorder *backward, int layers, int b,
                             const RolloutOptions *opt, VitError *err) {
    if (layers < 1)
        return vit_fail(err, VIT_ERR_USAGE, "rollout: %d layers: at least 1", layers);
    const float **probs = vit_calloc((size_t)layers, sizeof *probs);
    const float **grads = backward ? vit_calloc((size_t)layers, sizeof *grads) : NULL;
    const Tensor *first = NULL;
    VitStatus s = VIT_OK;
    for (int l = 0; l < layers && s == VIT_OK; l++) {
        const Tensor *p = NULL, *g = NULL;
        s = layer_probs(&p, forward, "", l, b, first, err);
        if (s == VIT_OK && backward) s = layer_probs(&g, backward, "grad.", l, b, p, err);
        if (s != VIT_OK) break;
        if (!first) first = p;
        const size_t image = p->numel / (size_t)p->shape[0]; // H·N·N
        probs[l] = p->data + (size_t)b * image;
        if (g) grads[l] = g->data + (size_t)b * image;
    }
    if (s == VIT_OK) {
        const int H = first->shape[1], N = first->shape[2];
        *joint = tensor_new(2, N, N);
        s = attention_rollout(joint->data, probs, grads, layers, H, N, opt, err);
        if (s != VIT_OK) tensor_free(joint);
    }
    free(grads);
    free(probs);
    return s;
}
// [rollout_from_trace]

/* ------------------------------------------------ recording what it reads */

// [rollout_record_probs]
void rollout_record_probs(void *recorder, const char *name, const Tensor *t) {
    const size_t n = strlen(name), suffix = strlen("attn.probs");
    if (n >= suffix && !strcmp(name + n - suffix, "attn.probs")) trace_record(recorder, name, t);
}
// [rollout_record_probs]

const char *rollout_score_name(RolloutScore score) {
    return score == SCORE_PROB ? "probability" : score == SCORE_LOG_PROB ? "log-probability" : "logit";
}

// [rollout_record]
VitStatus rollout_record(Vit *vit, const Tensor *input, const int *classes, int *chosen,
                         TraceRecorder *forward, TraceRecorder *backward, VitError *err) {
    return rollout_record_score(vit, input, classes, chosen, SCORE_LOGIT, forward, backward, err);
}

VitStatus rollout_record_score(Vit *vit, const Tensor *input, const int *classes, int *chosen,
                               RolloutScore score, TraceRecorder *forward,
                               TraceRecorder *backward, VitError *err) {
    // input is (B, C, S, S); classes and chosen are (B)
    trace_recorder_free(forward);
    if (backward) trace_recorder_free(backward);
    const int B = input->ndim == 4 ? input->shape[0] : 0, Y = vit->config.num_classes;
    if (backward && vit->keep == VIT_KEEP_NONE) {
        VitStatus s = vit_train_prepare(vit, VIT_KEEP_INPUTS, B > 0 ? B : 1, err);
        if (s != VIT_OK) return s;
    }
    VitStatus s = vit_forward(vit, input, rollout_record_probs, forward, err);
    if (s != VIT_OK) return s;
    const Tensor logits = vit_logits(vit); // (B, Y)
    float *dlogits = vit_calloc((size_t)B * (size_t)Y, sizeof *dlogits);
    for (int b = 0; b < B; b++) {
        const float *y = logits.data + (size_t)b * Y;
        float *d = dlogits + (size_t)b * Y;
        const int c = classes ? classes[b] : ops_index_of_max(y, Y);
        if (c < 0 || c >= Y) {
            s = vit_fail(err, VIT_ERR_INPUT, "class %d for image %d: the model has classes 0 "
                         "to %d", c, b, Y - 1);
            break;
        }
        if (score == SCORE_LOGIT) d[c] = 1.0f; // d y_c / d logits
        else {
            softmax(d, y, 1, Y); // p; then d log p_c / d y = e_c − p, d p_c / d y = p_c (e_c − p)
            const float pc = d[c];
            for (int j = 0; j < Y; j++) d[j] = (j == c) - d[j];
            if (score == SCORE_PROB)
                for (int j = 0; j < Y; j++) d[j] *= pc;
        }
        if (chosen) chosen[b] = c;
    }
    if (s == VIT_OK && backward) {
        VitGrads grads = {0};
        s = vit_grads_init(&grads, vit, err);
        if (s == VIT_OK) s = vit_backward(vit, &grads, dlogits, rollout_record_probs, backward, err);
        vit_grads_free(&grads);
    }
    free(dlogits);
    return s;
}
// [rollout_record]
