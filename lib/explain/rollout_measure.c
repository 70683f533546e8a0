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
 *
 * Random patches are a weak yardstick, though: on Fashion-MNIST more than
 * half of an image is black background, and a black patch blacked out
 * changes nothing. So the rankings
 * are also scored against baselines that know nothing of the model (the
 * patches' brightness, the garment mask, random patches on the garment), and
 * the per-image probabilities are kept as co-moments, so that two rankings can
 * be compared image by image (attention_measure_paired_se()). Occlusion, the
 * fall of the probability with each patch alone blacked out, is a reference
 * that asks the model itself, at one forward pass per patch.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "explain/occlusion.h" // occlusion_falls(), class_probability()
#include "explain/rollout.h"
#include "train/train.h" // ops_index_of_max()

const int rollout_measure_ks[MEASURE_KS] = {1, 5, 10};

const char *rollout_map_method_name(MapMethod m) {
    switch (m) {
    case MAP_ROLLOUT: return "rollout (mean)";
    case MAP_ROLLOUT_MAX: return "rollout (max, discard 0.9)";
    case MAP_LAST_LAYER: return "last layer";
    case MAP_GRAD: return "gradient-weighted";
    case MAP_RANDOM: return "k random patches";
    case MAP_BRIGHTNESS: return "brightness (no model)";
    case MAP_GARMENT: return "garment mask (no model)";
    case MAP_RANDOM_GARMENT: return "k random garment patches";
    case MAP_OCCLUSION: return "occlusion (reference)";
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

// The model-free maps of one image, (P): each patch's mean pixel value (0–255), or the
// fraction of its pixels above the threshold.
// [baseline_map]
static void baseline_map(float *map, MapMethod m, const unsigned char *pixels, int S, int patch,
                         int threshold) {
    const int side = S / patch;
    for (int i = 0; i < side; i++)
        for (int j = 0; j < side; j++) {
            int sum = 0, above = 0;
            for (int y = i * patch; y < (i + 1) * patch; y++)
                for (int x = j * patch; x < (j + 1) * patch; x++) {
                    sum += pixels[y * S + x];
                    above += pixels[y * S + x] > threshold;
                }
            map[i * side + j] = (float)(m == MAP_BRIGHTNESS ? sum : above) / (float)(patch * patch);
        }
}
// [baseline_map]

// A random order of the patches with the garment's first: shuffled, then the patches with
// at least half their pixels above the threshold moved to the front, in their shuffled order.
// [garment_first]
static void garment_first(int *order, const float *garment, int P, int *scratch) {
    int n = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int q = 0; q < P; q++)
            if ((garment[order[q]] >= 0.5f) == (pass == 0)) scratch[n++] = order[q];
    memcpy(order, scratch, sizeof(int) * (size_t)P);
}
// [garment_first]

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

/* ------------------------------------------------------- one batch's maps */

// [method_map]
VitStatus attention_method_map(float *map, MapMethod m, const TraceRecorder *fwd,
                               const TraceRecorder *bwd, int L, int b, VitError *err) {
    if (m == MAP_LAST_LAYER) {
        char name[64];
        snprintf(name, sizeof name, "blocks.%d.attn.probs", L - 1);
        const Tensor *t = trace_find(fwd, name); // (B, H, N, N)
        if (!t || t->ndim != 4 || b >= t->shape[0])
            return vit_fail(err, VIT_ERR_INPUT, "the trace has no %s of image %d", name, b);
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

/** What one batch needs: its input, predictions, the rankings and their scores. */
typedef struct {
    int B, P;
    int maps, draws; // rankings scored; random orders per image
    float *input;   // (B, C, S, S)
    float *masked;  // (B, C, S, S)
    int *labels;    // (B), unused but for dataset_batch()
    int *pred;      // (B)
    int *order;     // (MAP_COUNT, draws, B, P): each ranking's orders (one for a map)
    double *prob;   // (MAP_COUNT, MEASURE_KS, B): each image's probability, masked
    float *map;     // (P)
    float *garment; // (P)
    float *occluded; // (B, P): how far each image's probability falls with patch q alone black
    double *full;   // (B): each image's probability, nothing black
    int *scratch;   // (P)
} Batch;

/** The most memory one batch's patch orders may take in attention_measure(): 256 MiB. */
#define ORDER_BUDGET ((size_t)256 << 20)

// Is ranking m random, drawn `draws` times?
static bool is_random(int m) { return m == MAP_RANDOM || m == MAP_RANDOM_GARMENT; }

// Ranking m's d-th order of image b, (P).
static int *order_of(const Batch *bt, int m, int d, int b) {
    return bt->order + (((size_t)m * bt->draws + d) * bt->B + b) * bt->P;
}

// The deletion test on one batch: for each ranking, draw and k, mask, run, keep each
// image's probability (a random ranking's: the mean over its draws).
// [delete_and_rerun]
static VitStatus delete_and_rerun(Vit *vit, Batch *bt, const Tensor *shape, float black,
                                  VitError *err) {
    const VitConfig *c = &vit->config;
    const size_t one = (size_t)c->channels * c->image_size * c->image_size;
    double *p = vit_malloc(sizeof(double) * (size_t)bt->B);
    VitStatus s = VIT_OK;
    for (int m = 0; m < bt->maps && s == VIT_OK; m++) {
        const int draws = is_random(m) ? bt->draws : 1;
        for (int ki = 0; ki < MEASURE_KS && s == VIT_OK; ki++) {
            double *out = bt->prob + ((size_t)m * MEASURE_KS + ki) * bt->B;
            for (int b = 0; b < bt->B; b++) out[b] = 0;
            for (int d = 0; d < draws && s == VIT_OK; d++) {
                memcpy(bt->masked, bt->input, sizeof(float) * one * (size_t)bt->B);
                for (int b = 0; b < bt->B; b++)
                    mask_patches(bt->masked + (size_t)b * one, c->channels, c->image_size,
                                 c->patch_size, order_of(bt, m, d, b), rollout_measure_ks[ki],
                                 black);
                const Tensor x = tensor_view_shape(bt->masked, 4, shape->shape);
                s = vit_forward(vit, &x, NULL, NULL, err);
                if (s != VIT_OK) break;
                class_probability(p, vit, bt->pred, bt->B);
                for (int b = 0; b < bt->B; b++) out[b] += p[b] / draws;
            }
        }
    }
    free(p);
    return s;
}
// [delete_and_rerun]

// Add one batch's probabilities to the sums: Σ p for the means, Σ p_a·p_b for the co-moments.
static void add_up(AttentionMeasures *out, const Batch *bt) {
    for (int ki = 0; ki < MEASURE_KS; ki++)
        for (int a = 0; a < bt->maps; a++) {
            const double *pa = bt->prob + ((size_t)a * MEASURE_KS + ki) * bt->B;
            for (int b = 0; b < bt->B; b++) out->prob_top[a][ki] += pa[b];
            for (int m = 0; m < bt->maps; m++) {
                const double *pm = bt->prob + ((size_t)m * MEASURE_KS + ki) * bt->B;
                for (int b = 0; b < bt->B; b++) out->comoment[a][m][ki] += pa[b] * pm[b];
            }
        }
}

// [measure_batch]
static VitStatus measure_batch(Vit *vit, const Dataset *data, int first, Batch *bt, float mean,
                               float std, int threshold, Rng *rng, AttentionMeasures *out,
                               VitError *err) {
    const VitConfig *c = &vit->config;
    const int S = c->image_size, L = c->depth, patch = c->patch_size;
    int *indices = vit_malloc(sizeof(int) * (size_t)bt->B);
    for (int b = 0; b < bt->B; b++) indices[b] = first + b;
    dataset_batch(bt->input, bt->labels, data, indices, bt->B, mean, std, NULL, NULL);
    free(indices);
    const Tensor x = tensor_view(bt->input, 4, bt->B, c->channels, S, S);
    TraceRecorder fwd = {0}, bwd = {0};
    VitStatus s = rollout_record(vit, &x, NULL, bt->pred, &fwd, &bwd, err);
    if (s == VIT_OK) {
        class_probability(bt->full, vit, bt->pred, bt->B);
        for (int b = 0; b < bt->B; b++) out->prob_full += bt->full[b];
    }
    const float black = (0.0f - mean) / std; // a black pixel, normalised
    if (s == VIT_OK && bt->maps > MAP_OCCLUSION) // the image's one channel, one black
        s = occlusion_falls(bt->occluded, vit, &x, bt->pred, &black, err);
    for (int b = 0; b < bt->B && s == VIT_OK; b++) {
        const unsigned char *pixels = data->pixels + (size_t)(first + b) * S * S;
        out->uniform_mass += uniform_mass(pixels, S, patch, threshold);
        for (int m = 0; m < bt->maps && s == VIT_OK; m++) {
            if (is_random(m)) continue;
            if (m < MAP_ATTENTION_COUNT)
                s = attention_method_map(bt->map, (MapMethod)m, &fwd, &bwd, L, b, err);
            else if (m == MAP_OCCLUSION)
                memcpy(bt->map, bt->occluded + (size_t)b * bt->P, sizeof(float) * (size_t)bt->P);
            else baseline_map(bt->map, (MapMethod)m, pixels, S, patch, threshold);
            rollout_map_rank(order_of(bt, m, 0, b), bt->map, bt->P);
            if (m == MAP_OCCLUSION) // a fall can be negative: the share counts the falls only
                for (int q = 0; q < bt->P; q++) bt->map[q] = fmaxf(bt->map[q], 0.0f);
            out->mass[m] += rollout_map_mass_on_object(bt->map, pixels, S, patch, threshold);
        }
        // the random orders: the draws of MAP_RANDOM, then those of MAP_RANDOM_GARMENT
        for (int d = 0; d < bt->draws; d++) dataset_shuffle(order_of(bt, MAP_RANDOM, d, b), bt->P, rng);
        if (bt->maps > MAP_RANDOM_GARMENT) {
            baseline_map(bt->garment, MAP_GARMENT, pixels, S, patch, threshold);
            for (int d = 0; d < bt->draws; d++) {
                int *o = order_of(bt, MAP_RANDOM_GARMENT, d, b);
                dataset_shuffle(o, bt->P, rng);
                garment_first(o, bt->garment, bt->P, bt->scratch);
            }
        }
    }
    trace_recorder_free(&fwd);
    trace_recorder_free(&bwd);
    if (s == VIT_OK) s = delete_and_rerun(vit, bt, &x, black, err);
    if (s == VIT_OK) add_up(out, bt);
    return s;
}
// [measure_batch]

// [attention_measure]
VitStatus attention_measure(Vit *vit, const Dataset *data, int count, float mean, float std,
                            int batch, int threshold, uint64_t seed, const MeasureOptions *opt,
                            AttentionMeasures *out, VitError *err) {
    const VitConfig *c = &vit->config;
    const MeasureOptions basic = {1, false, false};
    if (!opt) opt = &basic;
    if (data->channels != 1 || c->channels != 1 || data->size != c->image_size)
        return vit_fail(err, VIT_ERR_INPUT, "measuring attention needs grey %d×%d images for "
                        "this model; the data has %d channel(s) of %d×%d", c->image_size,
                        c->image_size, data->channels, data->size, data->size);
    if (count < 1 || count > data->count || batch < 1 || opt->draws < 1 || opt->draws > 1000)
        return vit_fail(err, VIT_ERR_USAGE, "measuring attention on %d of %d images, batches "
                        "of %d, %d random draws (1 to 1000)", count, data->count, batch,
                        opt->draws);
    // Every ranking's orders of a batch, `draws` of them for the random ones, are
    // held at once: (MAP_COUNT, draws, batch, P) ints, 2.4 MB an image at 1000 draws.
    // A batch whose orders would pass ORDER_BUDGET is measured in smaller batches:
    // the orders are drawn image after image in the same sequence either way.
    if (batch > count) batch = count;
    const int side = c->image_size / c->patch_size;
    const size_t per_image = sizeof(int) * (size_t)MAP_COUNT * (size_t)opt->draws * side * side;
    if ((size_t)batch > ORDER_BUDGET / per_image)
        batch = per_image > ORDER_BUDGET ? 1 : (int)(ORDER_BUDGET / per_image);
    VitStatus fits = vit_check_memory((double)per_image * batch, "the patch orders of one image",
                                      err);
    if (fits != VIT_OK) return fits;
    memset(out, 0, sizeof *out);
    out->threshold = threshold;
    out->maps = !opt->baselines ? MAP_BASIC_COUNT : opt->occlusion ? MAP_COUNT : MAP_BASELINE_COUNT;
    out->draws = opt->draws;
    Batch bt = {.P = side * side, .maps = out->maps, .draws = opt->draws};
    const size_t one = (size_t)c->image_size * c->image_size;
    bt.input = vit_malloc(sizeof(float) * one * (size_t)batch);
    bt.masked = vit_malloc(sizeof(float) * one * (size_t)batch);
    bt.labels = vit_malloc(sizeof(int) * (size_t)batch);
    bt.pred = vit_malloc(sizeof(int) * (size_t)batch);
    bt.order = vit_malloc(sizeof(int) * (size_t)MAP_COUNT * bt.draws * batch * bt.P);
    bt.prob = vit_malloc(sizeof(double) * (size_t)MAP_COUNT * MEASURE_KS * batch);
    bt.map = vit_malloc(sizeof(float) * (size_t)bt.P);
    bt.garment = vit_malloc(sizeof(float) * (size_t)bt.P);
    bt.scratch = vit_malloc(sizeof(int) * (size_t)bt.P);
    bt.occluded = vit_malloc(sizeof(float) * (size_t)batch * bt.P);
    bt.full = vit_malloc(sizeof(double) * (size_t)batch);
    Rng rng;
    rng_seed(&rng, seed);
    VitStatus s = VIT_OK;
    for (int first = 0; first < count && s == VIT_OK; first += batch) {
        bt.B = count - first < batch ? count - first : batch;
        s = measure_batch(vit, data, first, &bt, mean, std, threshold, &rng, out, err);
    }
    free(bt.input), free(bt.masked), free(bt.labels), free(bt.pred), free(bt.order);
    free(bt.prob), free(bt.map), free(bt.garment), free(bt.scratch), free(bt.occluded), free(bt.full);
    if (s != VIT_OK) return s;
    // sums to means, and Σ p_a·p_b to Σ (p_a − mean_a)(p_b − mean_b)
    out->images = count;
    out->uniform_mass /= count;
    out->prob_full /= count;
    for (int m = 0; m < out->maps; m++) {
        out->mass[m] /= count;
        for (int k = 0; k < MEASURE_KS; k++) out->prob_top[m][k] /= count;
    }
    for (int a = 0; a < out->maps; a++)
        for (int m = 0; m < out->maps; m++)
            for (int k = 0; k < MEASURE_KS; k++)
                out->comoment[a][m][k] -= count * out->prob_top[a][k] * out->prob_top[m][k];
    return VIT_OK;
}
// [attention_measure]

// [attention_measure_paired_se]
double attention_measure_paired_se(const AttentionMeasures *m, MapMethod a, MapMethod b, int k) {
    // var(p_a − p_b) = (C_aa + C_bb − 2·C_ab) / (n − 1); the mean's SE divides it by n
    const int n = m->images;
    if (n < 2 || k < 0 || k >= MEASURE_KS || (int)a >= m->maps || (int)b >= m->maps) return 0;
    const double c = m->comoment[a][a][k] + m->comoment[b][b][k] - 2 * m->comoment[a][b][k];
    return sqrt(fmax(c, 0) / (n - 1) / n);
}
// [attention_measure_paired_se]

// [attention_measure_strongest_baseline]
MapMethod attention_measure_strongest_baseline(const AttentionMeasures *m, int k) {
    MapMethod strongest = MAP_RANDOM;
    for (int i = MAP_ATTENTION_COUNT; i < m->maps && i < MAP_BASELINE_COUNT; i++)
        if (m->prob_top[i][k] < m->prob_top[strongest][k]) strongest = (MapMethod)i;
    return strongest;
}
// [attention_measure_strongest_baseline]
