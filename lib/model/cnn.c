/**
 * @file cnn.c
 * @brief The small CNN's parameters, activations and forward pass (see cnn.h
 *        for the recipe; cnn_backward.c is its backward, layer by layer in reverse).
 *
 * Shape legend: B images, 28×28 → 14×14 → 7×7 the side after each pooling,
 * C1 and C2 the channels of conv1 and conv2 (16 and 32 by default), 10 classes.
 */
#include "model/cnn.h"
#include "base/util.h"
#include "ops/conv.h"
#include "ops/ops.h"

#include <math.h>
#include <stdlib.h>

// the side before, between and after the two poolings: 28, 14, 7
enum { S1 = CNN_SIDE, S2 = CNN_SIDE / 2, S3 = CNN_SIDE / 4 };

CnnConfig cnn_config_default(void) { return (CnnConfig){.c1 = 16, .c2 = 32}; }

long cnn_macs(CnnConfig c) {
    const long k2 = CNN_KERNEL * CNN_KERNEL;
    return (long)c.c1 * S1 * S1 * k2 + (long)c.c2 * S2 * S2 * k2 * c.c1 + (long)CNN_CLASSES * c.c2;
}

void cnn_params_new(CnnParams *p, CnnConfig c) {
    const size_t k2 = CNN_KERNEL * CNN_KERNEL;
    const size_t sizes[6] = {c.c1 * k2, c.c1, (size_t)c.c2 * c.c1 * k2, c.c2,
                             (size_t)CNN_CLASSES * c.c2, CNN_CLASSES};
    p->config = c;
    float **slots[6] = {&p->conv1_w, &p->conv1_b, &p->conv2_w, &p->conv2_b, &p->fc_w, &p->fc_b};
    p->count = 0;
    for (int i = 0; i < 6; i++) p->count += sizes[i];
    p->memory = vit_calloc(p->count, sizeof(float));
    float *next = p->memory;
    for (int i = 0; i < 6; i++) *slots[i] = next, next += sizes[i];
}

void cnn_params_free(CnnParams *p) {
    free(p->memory);
    *p = (CnnParams){0};
}

// weights then bias of one layer, uniform in ±1/√fan_in (nn.Conv2d's and nn.Linear's default)
static void init_layer(float *w, size_t nw, float *b, size_t nb, int fan_in, Rng *rng) {
    const float bound = 1.0f / sqrtf((float)fan_in);
    rng_fill_uniform(rng, w, nw, -bound, bound);
    rng_fill_uniform(rng, b, nb, -bound, bound);
}

void cnn_init(CnnParams *p, Rng *rng) {
    const int k2 = CNN_KERNEL * CNN_KERNEL, C1 = p->config.c1, C2 = p->config.c2;
    init_layer(p->conv1_w, (size_t)C1 * k2, p->conv1_b, C1, 1 * k2, rng);
    init_layer(p->conv2_w, (size_t)C2 * C1 * k2, p->conv2_b, C2, C1 * k2, rng);
    init_layer(p->fc_w, (size_t)CNN_CLASSES * C2, p->fc_b, CNN_CLASSES, C2, rng);
}

void cnn_acts_new(CnnActs *a, CnnConfig c, int B) {
    const size_t n1 = (size_t)B * c.c1 * S1 * S1, p1 = (size_t)B * c.c1 * S2 * S2;
    const size_t n2 = (size_t)B * c.c2 * S2 * S2, p2 = (size_t)B * c.c2 * S3 * S3;
    a->config = c, a->B = B;
    a->memory = vit_malloc((2 * n1 + p1 + 2 * n2 + p2 + (size_t)B * (c.c2 + CNN_CLASSES)) *
                           sizeof(float));
    a->conv1 = a->memory, a->relu1 = a->conv1 + n1, a->pool1 = a->relu1 + n1;
    a->conv2 = a->pool1 + p1, a->relu2 = a->conv2 + n2, a->pool2 = a->relu2 + n2;
    a->gap = a->pool2 + p2, a->logits = a->gap + (size_t)B * c.c2;
    a->indices = vit_malloc((p1 + p2) * sizeof(int));
    a->argmax1 = a->indices, a->argmax2 = a->indices + p1;
}

void cnn_acts_free(CnnActs *a) {
    free(a->memory);
    free(a->indices);
    *a = (CnnActs){0};
}

// [forward]
void cnn_forward(CnnActs *a, const CnnParams *p, const float *images) {
    const int B = a->B, k = CNN_KERNEL, C1 = a->config.c1, C2 = a->config.c2;
    // the shapes for the default 16 and 32 channels (C1 and C2)
    // images (B,1,28,28) → conv1 (B,16,28,28): nn.Conv2d(1, 16, 3, padding=1)
    conv2d_forward(a->conv1, images, p->conv1_w, p->conv1_b, B, 1, S1, S1, C1, k, 1, 1);
    relu_forward(a->relu1, a->conv1, (size_t)B * C1 * S1 * S1);
    // (B,16,28,28) → pool1 (B,16,14,14): F.max_pool2d(x, 2)
    maxpool2d_forward(a->pool1, a->argmax1, a->relu1, B, C1, S1, S1);
    // (B,16,14,14) → conv2 (B,32,14,14): nn.Conv2d(16, 32, 3, padding=1)
    conv2d_forward(a->conv2, a->pool1, p->conv2_w, p->conv2_b, B, C1, S2, S2, C2, k, 1, 1);
    relu_forward(a->relu2, a->conv2, (size_t)B * C2 * S2 * S2);
    // (B,32,14,14) → pool2 (B,32,7,7)
    maxpool2d_forward(a->pool2, a->argmax2, a->relu2, B, C2, S2, S2);
    // (B,32,7,7) → gap (B,32): the mean of each channel, x.mean(dim=(2, 3))
    avgpool2d_global_forward(a->gap, a->pool2, B, C2, S3, S3);
    // (B,32) → logits (B,10): nn.Linear(32, 10)
    ops_linear(a->logits, a->gap, p->fc_w, p->fc_b, B, C2, CNN_CLASSES);
}
// [forward]
