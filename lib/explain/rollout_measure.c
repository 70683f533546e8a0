/**
 * @file rollout_measure.c
 * @brief Measuring attention maps (rollout.h): how much of each map lies on
 *        the garment, and what blacking out the patches it ranks highest does
 *        to the prediction (the deletion test), against chance.
 *
 * Shape legend: B batch, S side, p patch side, P = (S/p)² patches, N = P + 1 tokens.
 *
 * A map that "shows where the model looks" makes two testable claims. If it
 * is about the object, its mass should lie on the object's pixels more than a
 * uniform map's would. If the model depends on what it shows, removing the
 * patches it ranks highest should hurt the prediction more than removing as
 * many patches at random. The second is the stronger test: a map can sit on
 * the object and still not be what the decision rests on.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "explain/rollout.h"
#include "train/train.h" // ops_index_of_max()

const int rollout_measure_ks[MEASURE_KS] = {1, 5, 10};

const char *rollout_map_method_name(MapMethod m) {
    switch (m) {
    case MAP_ROLLOUT: return "rollout (mean)";
    case MAP_ROLLOUT_MAX: return "rollout (max, discard 0.9)";
    case MAP_LAST_LAYER: return "last layer";
    case MAP_GRAD: return "gradient-weighted";
    case MAP_COUNT: break;
    }
    return "?";
}

// [rollout_map_mass_on_object]
double rollout_map_mass_on_object(const float *map, const unsigned char *pixels, int S, int patch,
                          int threshold) {
    // map is (P) over the (S/p, S/p) grid, pixels is (S, S)
    const int side = S / patch;
    double on = 0, total = 0;
    for (int i = 0; i < side; i++)
        for (int j = 0; j < side; j++) {
            int above = 0;
            for (int y = i * patch; y < (i + 1) * patch; y++)
                for (int x = j * patch; x < (j + 1) * patch; x++) above += pixels[y * S + x] > threshold;
            const double m = map[i * side + j];
            on += m * above / (patch * patch);
            total += m;
        }
    return total > 0 ? on / total : 0;
}
// [rollout_map_mass_on_object]

// The uniform map's share: the fraction of the patches' pixels above the threshold.
static double uniform_mass(const unsigned char *pixels, int S, int patch, int threshold) {
    const int side = S / patch, P = side * side;
    float *ones = vit_malloc(sizeof(float) * (size_t)P);
    for (int q = 0; q < P; q++) ones[q] = 1.0f;
    const double m = rollout_map_mass_on_object(ones, pixels, S, patch, threshold);
    free(ones);
    return m;
}

/** One patch's value and index, sorted by value (descending), then index. */
typedef struct {
    float value;
    int index;
} Ranked;

static int by_value_down(const void *pa, const void *pb) {
    const Ranked *a = pa, *b = pb;
    if (a->value != b->value) return a->value > b->value ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

void rollout_map_rank(int *order, const float *map, int P) {
    Ranked *r = vit_malloc(sizeof *r * (size_t)P);
    for (int q = 0; q < P; q++) r[q] = (Ranked){isnan(map[q]) ? -INFINITY : map[q], q};
    qsort(r, (size_t)P, sizeof *r, by_value_down);
    for (int q = 0; q < P; q++) order[q] = r[q].index;
    free(r);
}

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

/* ------------------------------------------------------- one batch's maps */

// Image b's map by method m, (P), from the recorded pass.
// [method_map]
static VitStatus method_map(float *map, MapMethod m, const TraceRecorder *fwd,
                            const TraceRecorder *bwd, int L, int b, VitError *err) {
    if (m == MAP_LAST_LAYER) {
        char name[64];
        snprintf(name, sizeof name, "blocks.%d.attn.probs", L - 1);
        const Tensor *t = trace_find(fwd, name); // (B, H, N, N)
        const int H = t->shape[1], N = t->shape[2];
        float *row = vit_malloc(sizeof(float) * (size_t)N);
        attention_cls_row(row, t->data + (size_t)b * H * N * N, H, N, -1, FUSE_MEAN);
        memcpy(map, row + 1, sizeof(float) * (size_t)(N - 1)); // the patches, not [cls]
        free(row);
        return VIT_OK;
    }
    const RolloutOptions o = {m == MAP_ROLLOUT_MAX ? FUSE_MAX : FUSE_MEAN,
                              m == MAP_ROLLOUT_MAX ? 0.9 : 0};
    Tensor joint;
    VitStatus s = rollout_from_trace(&joint, fwd, m == MAP_GRAD ? bwd : NULL, L, b, &o, err);
    if (s != VIT_OK) return s;
    memcpy(map, joint.data + 1, sizeof(float) * (size_t)(joint.shape[0] - 1)); // [cls] row
    tensor_free(&joint);
    return VIT_OK;
}
// [method_map]

/** What one batch needs: its input, predictions and each method's patch order. */
typedef struct {
    int B, P;
    float *input;   // (B, C, S, S)
    float *masked;  // (B, C, S, S)
    int *labels;    // (B), unused but for dataset_batch()
    int *pred;      // (B)
    int *order;     // (MAP_COUNT + 1, B, P): each method's ranking, then the random one
    float *map;     // (P)
} Batch;

// The predicted class's probability for each image of the last forward, summed.
static double predicted_probability(const Vit *vit, const int *pred, int B) {
    const Tensor logits = vit_logits(vit);
    const int Y = vit->config.num_classes;
    float *p = vit_malloc(sizeof(float) * (size_t)Y);
    double sum = 0;
    for (int b = 0; b < B; b++) {
        softmax(p, logits.data + (size_t)b * Y, 1, Y);
        sum += p[pred[b]];
    }
    free(p);
    return sum;
}

// The deletion test on one batch: for each ranking and k, mask, run, add up.
// [delete_and_rerun]
static VitStatus delete_and_rerun(Vit *vit, Batch *bt, const Tensor *shape, float black,
                                  AttentionMeasures *out, VitError *err) {
    const VitConfig *c = &vit->config;
    const size_t one = (size_t)c->channels * c->image_size * c->image_size;
    for (int m = 0; m <= MAP_COUNT; m++)
        for (int ki = 0; ki < MEASURE_KS; ki++) {
            memcpy(bt->masked, bt->input, sizeof(float) * one * (size_t)bt->B);
            for (int b = 0; b < bt->B; b++)
                mask_patches(bt->masked + (size_t)b * one, c->channels, c->image_size,
                             c->patch_size, bt->order + ((size_t)m * bt->B + b) * bt->P,
                             rollout_measure_ks[ki], black);
            const Tensor x = tensor_view_shape(bt->masked, 4, shape->shape);
            VitStatus s = vit_forward(vit, &x, NULL, NULL, err);
            if (s != VIT_OK) return s;
            const double p = predicted_probability(vit, bt->pred, bt->B);
            if (m < MAP_COUNT) out->prob_top[m][ki] += p;
            else out->prob_random[ki] += p;
        }
    return VIT_OK;
}
// [delete_and_rerun]

// [measure_batch]
static VitStatus measure_batch(Vit *vit, const Dataset *data, int first, Batch *bt, float mean,
                               float std, int threshold, Rng *rng, AttentionMeasures *out,
                               VitError *err) {
    const VitConfig *c = &vit->config;
    const int S = c->image_size, L = c->depth;
    int *indices = vit_malloc(sizeof(int) * (size_t)bt->B);
    for (int b = 0; b < bt->B; b++) indices[b] = first + b;
    dataset_batch(bt->input, bt->labels, data, indices, bt->B, mean, std, NULL, NULL);
    free(indices);
    const Tensor x = tensor_view(bt->input, 4, bt->B, c->channels, S, S);
    TraceRecorder fwd = {0}, bwd = {0};
    VitStatus s = rollout_record(vit, &x, NULL, bt->pred, &fwd, &bwd, err);
    if (s == VIT_OK) out->prob_full += predicted_probability(vit, bt->pred, bt->B);
    for (int b = 0; b < bt->B && s == VIT_OK; b++) {
        const unsigned char *pixels = data->pixels + (size_t)(first + b) * S * S;
        out->uniform_mass += uniform_mass(pixels, S, c->patch_size, threshold);
        for (int m = 0; m < MAP_COUNT && s == VIT_OK; m++) {
            s = method_map(bt->map, (MapMethod)m, &fwd, &bwd, L, b, err);
            out->mass[m] += rollout_map_mass_on_object(bt->map, pixels, S, c->patch_size, threshold);
            rollout_map_rank(bt->order + ((size_t)m * bt->B + b) * bt->P, bt->map, bt->P);
        }
        dataset_shuffle(bt->order + ((size_t)MAP_COUNT * bt->B + b) * bt->P, bt->P, rng);
    }
    trace_recorder_free(&fwd);
    trace_recorder_free(&bwd);
    if (s == VIT_OK) s = delete_and_rerun(vit, bt, &x, (0.0f - mean) / std, out, err);
    return s;
}
// [measure_batch]

// [attention_measure]
VitStatus attention_measure(Vit *vit, const Dataset *data, int count, float mean, float std,
                            int batch, int threshold, uint64_t seed, AttentionMeasures *out,
                            VitError *err) {
    const VitConfig *c = &vit->config;
    if (data->channels != 1 || c->channels != 1 || data->size != c->image_size)
        return vit_fail(err, VIT_ERR_INPUT, "measuring attention needs grey %d×%d images for "
                        "this model; the data has %d channel(s) of %d×%d", c->image_size,
                        c->image_size, data->channels, data->size, data->size);
    if (count < 1 || count > data->count || batch < 1)
        return vit_fail(err, VIT_ERR_USAGE, "measuring attention on %d of %d images, batches "
                        "of %d", count, data->count, batch);
    memset(out, 0, sizeof *out);
    out->threshold = threshold;
    const int side = c->image_size / c->patch_size;
    Batch bt = {.P = side * side};
    const size_t one = (size_t)c->image_size * c->image_size;
    bt.input = vit_malloc(sizeof(float) * one * (size_t)batch);
    bt.masked = vit_malloc(sizeof(float) * one * (size_t)batch);
    bt.labels = vit_malloc(sizeof(int) * (size_t)batch);
    bt.pred = vit_malloc(sizeof(int) * (size_t)batch);
    bt.order = vit_malloc(sizeof(int) * (size_t)(MAP_COUNT + 1) * batch * bt.P);
    bt.map = vit_malloc(sizeof(float) * (size_t)bt.P);
    Rng rng;
    rng_seed(&rng, seed);
    VitStatus s = VIT_OK;
    for (int first = 0; first < count && s == VIT_OK; first += batch) {
        bt.B = count - first < batch ? count - first : batch;
        s = measure_batch(vit, data, first, &bt, mean, std, threshold, &rng, out, err);
    }
    free(bt.input), free(bt.masked), free(bt.labels), free(bt.pred), free(bt.order), free(bt.map);
    if (s != VIT_OK) return s;
    // sums to means
    out->images = count;
    out->uniform_mass /= count;
    out->prob_full /= count;
    for (int m = 0; m < MAP_COUNT; m++) {
        out->mass[m] /= count;
        for (int k = 0; k < MEASURE_KS; k++) out->prob_top[m][k] /= count;
    }
    for (int k = 0; k < MEASURE_KS; k++) out->prob_random[k] /= count;
    return VIT_OK;
}
// [attention_measure]
