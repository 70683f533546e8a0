/**
 * @file occlusion.c
 * @brief Occlusion (occlusion.h): each patch blacked out in turn and the fall
 *        of the predicted class's probability; the batched pieces attention_measure()
 *        uses too (occlusion_compare.c sets one picture's maps side by side).
 *
 * Shape legend: B batch, C channels, S side, p patch side, P = (S/p)² patches,
 * Y classes, K = MEASURE_KS.
 */
#include "explain/occlusion.h"

#include <stdlib.h>
#include <string.h>

#include "ops/ops.h" // softmax()

void occlusion_black(float *black, const float *mean, const float *std, int C) {
    for (int c = 0; c < C; c++) black[c] = (0.0f - mean[c]) / std[c];
}

// [class_probability]
void class_probability(double *p, const Vit *vit, const int *classes, int B) {
    // the last pass's logits are (B, Y)
    const Tensor logits = vit_logits(vit);
    const int Y = vit->config.num_classes;
    float *q = vit_malloc(sizeof(float) * (size_t)Y);
    for (int b = 0; b < B; b++) {
        softmax(q, logits.data + (size_t)b * Y, 1, Y);
        p[b] = q[classes[b]];
    }
    free(q);
}
// [class_probability]

// [mask_patches]
void mask_patches(float *input, int C, int S, int patch, const int *order, int k, float value) {
    // input is (C, S, S); patch q covers rows (q / side)·p … and columns (q % side)·p …
    const int side = S / patch;
    for (int r = 0; r < k; r++) {
        const int y0 = order[r] / side * patch, x0 = order[r] % side * patch;
        for (int c = 0; c < C; c++)
            for (int y = y0; y < y0 + patch; y++)
                for (int x = x0; x < x0 + patch; x++) input[((size_t)c * S + y) * S + x] = value;
    }
}
// [mask_patches]

void occlusion_black_out(float *image, const VitConfig *c, const int *order, int k,
                         const float *black) {
    // image is (C, S, S), black is (C): each channel's plane in its own black
    const size_t plane = (size_t)c->image_size * c->image_size;
    for (int ch = 0; ch < c->channels; ch++)
        mask_patches(image + ch * plane, 1, c->image_size, c->patch_size, order, k, black[ch]);
}

// Run the batch `x` and read each image's class probability into p (B).
static VitStatus run_and_read(double *p, Vit *vit, const Tensor *x, const int *classes,
                              VitError *err) {
    VitStatus s = vit_forward(vit, x, NULL, NULL, err);
    if (s == VIT_OK) class_probability(p, vit, classes, x->shape[0]);
    return s;
}

// [occlusion_falls]
VitStatus occlusion_falls(float *falls, Vit *vit, const Tensor *input, const int *classes,
                          const float *black, VitError *err) {
    // input is (B, C, S, S), falls is (B, P): one pass for the whole batch per patch
    const VitConfig *c = &vit->config;
    const int B = input->shape[0], side = c->image_size / c->patch_size, P = side * side;
    const size_t one = (size_t)c->channels * c->image_size * c->image_size;
    float *masked = vit_malloc(sizeof(float) * one * (size_t)B);
    double *full = vit_malloc(sizeof(double) * (size_t)B);
    double *p = vit_malloc(sizeof(double) * (size_t)B);
    const Tensor x = tensor_view_shape(masked, 4, input->shape);
    // p_c(x) from a pass run as the masked ones are: a patch black already falls by 0 exactly
    memcpy(masked, input->data, sizeof(float) * one * (size_t)B);
    VitStatus s = run_and_read(full, vit, &x, classes, err);
    for (int q = 0; q < P && s == VIT_OK; q++) {
        memcpy(masked, input->data, sizeof(float) * one * (size_t)B);
        for (int b = 0; b < B; b++) occlusion_black_out(masked + (size_t)b * one, c, &q, 1, black);
        s = run_and_read(p, vit, &x, classes, err);
        for (int b = 0; b < B && s == VIT_OK; b++)
            falls[(size_t)b * P + q] = (float)(full[b] - p[b]);
    }
    free(p), free(full), free(masked);
    return s;
}
// [occlusion_falls]

