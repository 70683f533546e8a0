/**
 * @file occlusion_compare.c
 * @brief One picture's occlusion map beside its attention maps, each with its
 *        deletion curve (occlusion.h): what `vit occlusion` prints and the
 *        viewer's O shows.
 *
 * Shape legend: C channels, S side, P patches, K = MEASURE_KS.
 *
 * Apart from occlusion.c because it uses the rankings and maps of
 * rollout_measure.c, which itself uses occlusion.c's falls: the two files in
 * one would make a link cycle.
 */
#include "explain/occlusion.h"

#include <stdlib.h>
#include <string.h>

#include "train/train.h" // ops_index_of_max()

const MapMethod occlusion_compared[OCCLUSION_MAPS] = {MAP_OCCLUSION, MAP_LAST_LAYER, MAP_ROLLOUT,
                                                      MAP_GRAD};

// [deletion_curve]
VitStatus deletion_curve(double *probs, Vit *vit, const Tensor *image, const float *map, int cls,
                         const float *black, VitError *err) {
    // image is (1, C, S, S), map is (P), probs is (K)
    const VitConfig *c = &vit->config;
    const int side = c->image_size / c->patch_size, P = side * side;
    const size_t one = (size_t)c->channels * c->image_size * c->image_size;
    int *order = vit_malloc(sizeof(int) * (size_t)P);
    float *masked = vit_malloc(sizeof(float) * one);
    rollout_map_rank(order, map, P);
    const Tensor x = tensor_view_shape(masked, 4, image->shape);
    VitStatus s = VIT_OK;
    for (int ki = 0; ki < MEASURE_KS && s == VIT_OK; ki++) {
        memcpy(masked, image->data, sizeof(float) * one);
        occlusion_black_out(masked, c, order, rollout_measure_ks[ki], black);
        s = vit_forward(vit, &x, NULL, NULL, err);
        if (s == VIT_OK) class_probability(&probs[ki], vit, &cls, 1);
    }
    free(masked), free(order);
    return s;
}
// [deletion_curve]

/* ------------------------------------------------------- the comparison */

// The attention maps of the picture, rows 1 … of out->maps, from one recorded pass and its
// backward.
static VitStatus attention_maps(OcclusionComparison *out, Vit *vit, const Tensor *image,
                                VitError *err) {
    TraceRecorder fwd = {0}, bwd = {0};
    VitStatus s = rollout_record(vit, image, &out->cls, NULL, &fwd, &bwd, err);
    for (int m = 1; m < OCCLUSION_MAPS && s == VIT_OK; m++)
        s = attention_method_map(out->maps.data + (size_t)m * out->P, occlusion_compared[m], &fwd,
                                 &bwd, vit->config.depth, 0, err);
    trace_recorder_free(&fwd);
    trace_recorder_free(&bwd);
    return s;
}

// [occlusion_compare]
VitStatus occlusion_compare(OcclusionComparison *out, Vit *vit, const Tensor *image,
                            const float *black, VitError *err) {
    const VitConfig *c = &vit->config;
    memset(out, 0, sizeof *out);
    if (image->ndim != 4 || image->shape[0] != 1 || image->shape[1] != c->channels ||
        image->shape[2] != c->image_size || image->shape[3] != c->image_size)
        return vit_fail(err, VIT_ERR_INPUT, "occlusion needs one (1, %d, %d, %d) picture",
                        c->channels, c->image_size, c->image_size);
    out->side = c->image_size / c->patch_size;
    out->P = out->side * out->side;
    out->maps = tensor_new(2, OCCLUSION_MAPS, out->P);
    // 1. the predicted class c and p_c, nothing black
    VitStatus s = vit_forward(vit, image, NULL, NULL, err);
    if (s == VIT_OK) {
        out->cls = ops_index_of_max(vit_logits(vit).data, c->num_classes);
        class_probability(&out->full, vit, &out->cls, 1);
    }
    // 2. the maps: occlusion first, then the attention maps for the same class
    if (s == VIT_OK) s = occlusion_falls(out->maps.data, vit, image, &out->cls, black, err);
    if (s == VIT_OK) s = attention_maps(out, vit, image, err);
    // 3. each map's deletion curve
    for (int m = 0; m < OCCLUSION_MAPS && s == VIT_OK; m++)
        s = deletion_curve(out->deletion[m], vit, image, out->maps.data + (size_t)m * out->P,
                           out->cls, black, err);
    if (s != VIT_OK) occlusion_comparison_free(out);
    return s;
}
// [occlusion_compare]

void occlusion_comparison_free(OcclusionComparison *c) {
    tensor_free(&c->maps);
    memset(c, 0, sizeof *c);
}
