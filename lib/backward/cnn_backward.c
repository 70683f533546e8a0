/**
 * @file cnn_backward.c
 * @brief The small CNN's backward pass (cnn.h): cnn_forward() read bottom
 *        up, each layer's backward fed the gradient of its output.
 *
 * Shape legend: B images, 28×28 → 14×14 → 7×7 the side after each pooling,
 * C1 and C2 the channels of conv1 and conv2 (16 and 32 by default), 10 classes.
 *
 * The gradients of the activations live in one scratch allocation, zeroed,
 * because every backward adds to its dx (so none may run in place). The images need no gradient, so
 * conv1's backward is asked for dW and db only.
 */
#include "model/cnn.h"
#include "base/util.h"
#include "ops/conv.h"
#include "ops/ops.h"

#include <stdlib.h>

enum { S1 = CNN_SIDE, S2 = CNN_SIDE / 2, S3 = CNN_SIDE / 4 };

// [backward]
void cnn_backward(CnnParams *grads, const float *dlogits, const CnnActs *a, const CnnParams *p,
                  const float *images) {
    const int B = a->B, k = CNN_KERNEL, C1 = a->config.c1, C2 = a->config.c2;
    const size_t n1 = (size_t)B * C1 * S1 * S1, p1 = (size_t)B * C1 * S2 * S2;
    const size_t n2 = (size_t)B * C2 * S2 * S2, p2 = (size_t)B * C2 * S3 * S3;
    float *dgap = vit_calloc((size_t)B * C2 + p2 + 2 * n2 + p1 + 2 * n1, sizeof(float));
    float *dpool2 = dgap + (size_t)B * C2, *drelu2 = dpool2 + p2, *dconv2 = drelu2 + n2;
    float *dpool1 = dconv2 + n2, *drelu1 = dpool1 + p1, *dconv1 = drelu1 + n1;
    // logits (B,10) → gap (B,32), fc.weight, fc.bias
    ops_linear_backward(dgap, grads->fc_w, grads->fc_b, dlogits, a->gap, p->fc_w, B, C2,
                        CNN_CLASSES);
    // gap (B,32) → pool2 (B,32,7,7)
    avgpool2d_global_backward(dpool2, dgap, B, C2, S3, S3);
    // pool2 (B,32,7,7) → relu2 (B,32,14,14) → conv2
    maxpool2d_backward(drelu2, dpool2, a->argmax2, B, C2, S2, S2);
    relu_backward(dconv2, drelu2, a->conv2, n2);
    // conv2 (B,32,14,14) → pool1 (B,16,14,14), conv2.weight, conv2.bias
    conv2d_backward(dpool1, grads->conv2_w, grads->conv2_b, dconv2, a->pool1, p->conv2_w, B,
                    C1, S2, S2, C2, k, 1, 1);
    // pool1 (B,16,14,14) → relu1 (B,16,28,28) → conv1
    maxpool2d_backward(drelu1, dpool1, a->argmax1, B, C1, S1, S1);
    relu_backward(dconv1, drelu1, a->conv1, n1);
    // conv1 (B,16,28,28) → conv1.weight, conv1.bias (the images need none)
    conv2d_backward(NULL, grads->conv1_w, grads->conv1_b, dconv1, images, p->conv1_w, B, 1, S1,
                    S1, C1, k, 1, 1);
    free(dgap);
}
// [backward]
