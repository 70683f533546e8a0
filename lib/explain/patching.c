/**
 * @file patching.c
 * @brief Activation patching (patching.h): one token's row of B's stream in
 *        A's pass, every (block, token) in turn.
 *
 * Shape legend: L blocks, T tokens, D width, Y classes.
 *
 * Each picture runs once and its stream after every block is kept, (L, T, D)
 * each; then every cell restarts A's pass after block l with one row B's
 * (vit_forward_from(): the model's own recipe from block l + 1 on, not a
 * copy of it). The probabilities are a softmax in double of the float
 * logits, as head importance's: a change of 1e-6 near 1 is still seen.
 */
#include "explain/patching.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "train/train.h" // ops_index_of_max()

// probs = softmax(logits) in double; both are (Y)
static void softmax_double(double *probs, const float *logits, int Y) {
    double top = logits[0], sum = 0;
    for (int j = 1; j < Y; j++)
        if (logits[j] > top) top = logits[j];
    for (int j = 0; j < Y; j++) sum += probs[j] = exp((double)logits[j] - top);
    for (int j = 0; j < Y; j++) probs[j] /= sum;
}

/** Keeps each `blocks.{l}.out` of a pass of one picture. */
typedef struct {
    float *streams; // (L, T, D)
    int layers, filled;
} StreamCopy;

static void keep_stream(void *user, const char *name, const Tensor *t) {
    StreamCopy *sc = user;
    int block;
    const char *rest = trace_split_block(name, &block);
    if (!rest || strcmp(rest, "out") || block < 0 || block >= sc->layers) return;
    const size_t td = (size_t)t->shape[1] * t->shape[2]; // (1, T, D): batch of one
    memcpy(sc->streams + (size_t)block * td, t->data, sizeof(float) * td);
    sc->filled++;
}

VitStatus patching_streams(float *streams, Vit *vit, const Tensor *input, VitError *err) {
    if (input->ndim != 4 || input->shape[0] != 1)
        return vit_fail(err, VIT_ERR_INPUT, "patching: one picture at a time, a batch of 1");
    StreamCopy sc = {streams, vit->config.depth, 0};
    VitStatus s = vit_forward(vit, input, keep_stream, &sc, err);
    if (s == VIT_OK && sc.filled != sc.layers)
        s = vit_fail(err, VIT_ERR_INPUT, "patching: the pass gave %d of the %d blocks.{l}.out",
                     sc.filled, sc.layers);
    return s;
}

// A listener that reads nothing. Its presence matters: with someone listening
// attention forms its probabilities (mha.c), without it runs online, the same
// sums in another order. The streams were recorded with a listener, so every
// patched pass has one too: the same arithmetic as the passes it restarts, so
// that a patch that changes nothing changes nothing, bit for bit.
static void hear_nothing(void *user, const char *name, const Tensor *t) {
    (void)user, (void)name, (void)t;
}

// [patching_one]
VitStatus patching_one(double *probs, Vit *vit, const float *a_out, const float *b_out, int layer,
                       const int *rows, int count, VitError *err) {
    // a_out and b_out are (T, D), probs is (Y)
    const int L = vit->config.depth, T = vit_num_tokens(&vit->config), D = vit->config.dim;
    if (layer < 0 || layer >= L)
        return vit_fail(err, VIT_ERR_USAGE, "patching: block %d of blocks 0 to %d", layer, L - 1);
    for (int i = 0; i < count; i++)
        if (rows[i] < 0 || rows[i] >= T)
            return vit_fail(err, VIT_ERR_USAGE, "patching: token %d of tokens 0 to %d", rows[i],
                            T - 1);
    float *x = vit_malloc(sizeof(float) * (size_t)T * D);
    memcpy(x, a_out, sizeof(float) * (size_t)T * D);
    for (int i = 0; i < count; i++) // row t of A's stream becomes B's
        memcpy(x + (size_t)rows[i] * D, b_out + (size_t)rows[i] * D, sizeof(float) * (size_t)D);
    VitStatus s = vit_forward_from(vit, x, layer + 1, 1, hear_nothing, NULL, err);
    free(x);
    if (s == VIT_OK) softmax_double(probs, vit_logits(vit).data, vit->config.num_classes);
    return s;
}
// [patching_one]

// A's and B's unpatched answers, each from its last block's output as it is
// (a patch of no rows): the class measured and its probability in each.
static VitStatus unpatched(Patching *pt, Vit *vit, const float *a_last, const float *b_last,
                           int cls, VitError *err) {
    const int L = pt->layers, Y = pt->classes;
    double *pa = vit_malloc(sizeof(double) * (size_t)Y), *pb = vit_malloc(sizeof(double) * (size_t)Y);
    VitStatus s = patching_one(pb, vit, b_last, b_last, L - 1, NULL, 0, err);
    if (s == VIT_OK) {
        pt->b_class = ops_index_of_max(vit_logits(vit).data, Y);
        s = patching_one(pa, vit, a_last, a_last, L - 1, NULL, 0, err);
    }
    if (s == VIT_OK) {
        pt->a_class = cls >= 0 ? cls : ops_index_of_max(vit_logits(vit).data, Y);
        pt->a_prob = pa[pt->a_class];
        pt->b_prob = pb[pt->a_class];
    }
    free(pb);
    free(pa);
    return s;
}

// Every cell of the grid, one patched pass each.
static VitStatus every_cell(Patching *pt, Vit *vit, const float *a_streams, const float *b_streams,
                            double *probs, VitError *err) {
    const int L = pt->layers, T = pt->tokens;
    const size_t td = (size_t)T * vit->config.dim;
    VitStatus s = VIT_OK;
    for (int l = 0; l < L && s == VIT_OK; l++)
        for (int t = 0; t < T && s == VIT_OK; t++) {
            s = patching_one(probs, vit, a_streams + l * td, b_streams + l * td, l, &t, 1, err);
            if (s != VIT_OK) continue; // the loops end on it
            pt->prob[(size_t)l * T + t] = (float)probs[pt->a_class];
            pt->top[(size_t)l * T + t] = ops_index_of_max(vit_logits(vit).data, pt->classes);
        }
    return s;
}

VitStatus patching_grid(Patching *out, Vit *vit, const Tensor *a, const Tensor *b, int cls,
                        VitError *err) {
    const int L = vit->config.depth, T = vit_num_tokens(&vit->config), D = vit->config.dim;
    const int Y = vit->config.num_classes;
    memset(out, 0, sizeof *out);
    if (cls < -1 || cls >= Y)
        return vit_fail(err, VIT_ERR_INPUT, "patching: class %d; the model has classes 0 to %d",
                        cls, Y - 1);
    out->layers = L, out->tokens = T, out->classes = Y;
    out->prob = vit_calloc((size_t)L * T, sizeof *out->prob);
    out->top = vit_calloc((size_t)L * T, sizeof *out->top);
    const size_t ltd = (size_t)L * T * D;
    float *a_streams = vit_malloc(sizeof(float) * ltd), *b_streams = vit_malloc(sizeof(float) * ltd);
    double *probs = vit_malloc(sizeof(double) * (size_t)Y);
    VitStatus s = patching_streams(a_streams, vit, a, err);
    if (s == VIT_OK) s = patching_streams(b_streams, vit, b, err);
    const size_t last = (size_t)(L - 1) * T * D;
    if (s == VIT_OK) s = unpatched(out, vit, a_streams + last, b_streams + last, cls, err);
    if (s == VIT_OK) s = every_cell(out, vit, a_streams, b_streams, probs, err);
    free(probs);
    free(b_streams);
    free(a_streams);
    return s;
}

int patching_layer_summary(const Patching *pt, int layer, int *largest_token) {
    const int T = pt->tokens;
    const float *row = pt->prob + (size_t)layer * T;
    const int *top = pt->top + (size_t)layer * T;
    int flips = 0, best = 0;
    for (int t = 0; t < T; t++) {
        flips += top[t] != pt->a_class;
        if (fabs(row[t] - pt->a_prob) > fabs(row[best] - pt->a_prob)) best = t;
    }
    *largest_token = best;
    return flips;
}

void patching_free(Patching *pt) {
    free(pt->prob);
    free(pt->top);
    memset(pt, 0, sizeof *pt);
}
