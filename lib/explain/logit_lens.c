/**
 * @file logit_lens.c
 * @brief The logit lens (logit_lens.h): the final LayerNorm and head read at
 *        every depth of the residual stream.
 *
 * Shape legend: B batch, N tokens ([cls] first), D width, L blocks, Y classes.
 */
#include "explain/logit_lens.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"     // layernorm(), ops_linear(), softmax()
#include "train/train.h" // ops_index_of_max()

char *logit_lens_stage(char *buf, size_t size, int d) {
    if (d == 0) snprintf(buf, size, "embed");
    else snprintf(buf, size, "blocks.%d.out", d - 1);
    return buf;
}

// [logit_lens_depth]
void logit_lens_depth(float *probs, const float *stream, const Vit *vit, int B, int N) {
    // stream is (B, N, D), probs is (B, Y): vit_forward()'s steps 5 to 7 on the [cls] rows
    const VitConfig *c = &vit->config;
    const VitWeights *w = &vit->weights;
    const int D = c->dim, Y = c->num_classes;
    float *cls = vit_malloc(sizeof(float) * (size_t)B * D);
    float *logits = vit_malloc(sizeof(float) * (size_t)B * Y);
    for (int b = 0; b < B; b++) // x[:, 0]: LayerNorm is row by row, so only these rows matter
        memcpy(cls + (size_t)b * D, stream + (size_t)b * N * D, sizeof(float) * (size_t)D);
    layernorm(cls, cls, w->norm_w, w->norm_b, B, D, c->ln_eps); // self.norm
    ops_linear_lowp(logits, cls, w->head_w, w->head_lowp, w->head_b, B, D, Y); // self.head
    softmax(probs, logits, B, Y);
    free(logits);
    free(cls);
}
// [logit_lens_depth]

// [logit_lens_settles]
int logit_lens_settles(const float *probs, int depths, int Y) {
    // probs is (depths, Y): walk back from the output while its top class stays on top
    const int answer = ops_index_of_max(probs + (size_t)(depths - 1) * Y, Y);
    int d = depths - 1;
    while (d > 0 && ops_index_of_max(probs + (size_t)(d - 1) * Y, Y) == answer) d--;
    return d;
}
// [logit_lens_settles]

/* ---------------------------------------------------- as the pass goes by */

// The depth stage `name` is read at: 0 for embed, i + 1 for blocks.{i}.out, else -1.
static int depth_of(const char *name) {
    if (!strcmp(name, "embed")) return 0;
    int block;
    const char *rest = trace_split_block(name, &block);
    return rest && block >= 0 && !strcmp(rest, "out") ? block + 1 : -1;
}

void logit_lens_listen(void *user, const char *name, const Tensor *t) {
    LogitLens *lens = user;
    const int d = depth_of(name);
    const int depths = logit_lens_depths(lens->vit->config.depth);
    if (d < 0 || d >= depths || t->ndim != 3) return;
    const int B = t->shape[0], Y = lens->vit->config.num_classes;
    if (d == 0) { // a new pass: a new batch size perhaps
        tensor_free(&lens->probs);
        lens->probs = tensor_new(3, B, depths, Y);
        lens->filled = 0;
    }
    if (!lens->probs.data || lens->probs.shape[0] != B || d != lens->filled) return;
    float *row = vit_malloc(sizeof(float) * (size_t)B * Y);
    logit_lens_depth(row, t->data, lens->vit, B, t->shape[1]);
    for (int b = 0; b < B; b++) // (B, Y) into depth d of (B, depths, Y)
        memcpy(lens->probs.data + ((size_t)b * depths + d) * Y, row + (size_t)b * Y,
               sizeof(float) * (size_t)Y);
    free(row);
    lens->filled = d + 1;
}

void logit_lens_free(LogitLens *lens) {
    tensor_free(&lens->probs);
    lens->filled = 0;
}

// [logit_lens_run]
VitStatus logit_lens_run(Tensor *probs, Vit *vit, const Tensor *input, VitError *err) {
    LogitLens lens = {.vit = vit};
    VitStatus s = vit_forward(vit, input, logit_lens_listen, &lens, err);
    const int depths = logit_lens_depths(vit->config.depth);
    if (s == VIT_OK && lens.filled != depths)
        s = vit_fail(err, VIT_ERR_INPUT, "logit lens: the pass gave %d of the %d depths "
                     "(embed and every blocks.{i}.out)", lens.filled, depths);
    if (s == VIT_OK) *probs = lens.probs;
    else logit_lens_free(&lens);
    return s;
}
// [logit_lens_run]

/* -------------------------------------------------------- from a recording */

VitStatus logit_lens_from_trace(Tensor *probs, const Vit *vit, const TraceRecorder *r,
                                VitError *err) {
    LogitLens lens = {.vit = vit};
    const int depths = logit_lens_depths(vit->config.depth);
    const Tensor *first = NULL;
    for (int d = 0; d < depths; d++) {
        char name[48];
        const Tensor *t = trace_find(r, logit_lens_stage(name, sizeof name, d));
        if (!t || t->ndim != 3 || t->shape[2] != vit->config.dim ||
            (first && !tensor_same_shape(t, first))) {
            logit_lens_free(&lens);
            return vit_fail(err, VIT_ERR_INPUT, "logit lens: the trace has no %s of shape "
                            "(B, N, D=%d)%s", name, vit->config.dim, first ? " like embed's" : "");
        }
        if (!first) first = t;
        logit_lens_listen(&lens, name, t);
    }
    *probs = lens.probs;
    return VIT_OK;
}
