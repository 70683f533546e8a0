/**
 * @file 12_attention_maps.c
 * @brief Chapter 12 · What did it learn? Where the trained model's [cls]
 *        token looks, layer by layer and rolled out, and how far that tells
 *        what the prediction rests on.
 *
 * The model of Chapter 11 reads 49 patches of a garment and names it. Its
 * attention probabilities say, in every layer, how much [cls] reads from
 * each patch; attention rollout follows the mixing through all the layers:
 * \f[ A_l = \mathrm{rownorm}(\bar P_l + I), \qquad J = A_L \cdots A_1,
 *     \qquad \mathrm{map}_p = J_{0,p}. \f]
 * The chapter prints the model's predictions on ten test images, one
 * image's [cls] attention in each layer as a 7×7 grid, its rollout, the head
 * fusions and discarding that implementations offer (and a mistake a widely
 * copied one makes), the gradient-weighted map of a class, and then measures
 * the maps on 200 test images: how much of each lies on the garment, and
 * what blacking out the patches it ranks highest does to the prediction,
 * against patches chosen at random and against maps that use no model.
 *
 * Every number is pinned by name and checked by tests/test_ch12_attention_maps.c
 * against tools/gen_golden_ch12.py, which runs the same model in PyTorch
 * (tools/ref_vit.py, float64), takes the gradients from autograd and repeats
 * every rollout and measurement there.
 *
 * Run: `build/chapters/12_attention_maps`
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "teach/chapter.h"
#include "chapters.h"
#include "train/dataset.h"
#include "io/labels.h"
#include "ops/ops.h"
#include "explain/rollout.h"
#include "train/train.h"
#include "model/vit.h"

enum {
    SHOWN = 10,          // the test images of Section 1 (the shipped PNGs are these)
    MEASURE_BATCH = 100, // Section 6 measures in batches of 100
    GARMENT = 32,        // a pixel above 32 of 255 is the garment's
};
// Section 6's experiment, as the book runs it; a learner may change each from
// the command line (build/chapters/12_attention_maps --help).
// [knobs]
enum { KNOB_IMAGES, KNOB_DRAWS, KNOB_SEED, KNOBS };
static ChapterKnob knobs[KNOBS] = {
    [KNOB_IMAGES] = {.name = "images", .meaning = "the first test images the maps are measured on",
                      .value = 200, .min = 1, .max = 10000},
    [KNOB_DRAWS] = {.name = "draws", .meaning = "random orders per image for each random baseline",
                     .value = 10, .min = 1, .max = 1000},
    [KNOB_SEED] = {.name = "seed", .meaning = "the seed of those random orders",
                    .value = 12, .min = 0, .max = 2147483647},
};
// [knobs]
// The test images data/images/fashion-mnist/ holds as PNGs, by index.
static const int SHOWN_INDEX[SHOWN] = {0, 1, 2, 4, 6, 8, 9, 13, 18, 19};
static const char MODEL_FILE[] = "models/vit-fashion.safetensors"; // under data/

/** What every section works on. */
typedef struct {
    Vit vit;
    Dataset test;
    Labels labels;
    float mean, std;
    int side, P, N, L, H, Y; // the patch grid's side, patches, tokens, layers, heads, classes
    Tensor input;            // (SHOWN, 1, S, S) the ten images, normalised
    int pred[SHOWN];         // the model's class for each
    TraceRecorder fwd, bwd;  // the ten images' probabilities, and their gradients for pred
    float layer_peak_min;    // Section 2: the smallest of the layers' largest shares
    float rollout_peak;      // Section 3: the rollout's largest share
    int rollout_peak_at;     // and where
} Work;

/* ------------------------------------------------------------- printing */

// Class c's name, from the model file's "class_names", else Fashion-MNIST's.
static const char *class_name(const Work *w, int c) {
    const char *name = labels_name(&w->labels, c);
    return name ? name : c >= 0 && c < w->test.classes && w->test.class_names
                             ? w->test.class_names[c] : "?";
}

// A map over the patch grid as rows of numbers: percent of [cls]'s attention.
static void print_grid(Chapter *ch, const float *map, int side, const char *caption) {
    ch_line(ch, "    %s", caption);
    char line[512];
    for (int i = 0; i < side; i++) {
        int at = snprintf(line, sizeof line, "    ");
        for (int j = 0; j < side; j++)
            at += snprintf(line + at, sizeof line - (size_t)at, " %5.1f", 100 * map[i * side + j]);
        ch_line(ch, "%s", line);
    }
    ch_line(ch, "%s", "");
}

// The largest entry of a map, its row and column, and its multiple of uniform.
static int peak_of(const float *map, int P) {
    int best = 0;
    for (int p = 1; p < P; p++)
        if (map[p] > map[best]) best = p;
    return best;
}

static void pin_row(Chapter *ch, const char *name, const float *v, int n) {
    const Tensor t = tensor_view((float *)v, 1, n);
    ch_pin(ch, name, &t);
}

// Image b's [cls] row of the rollout, (P): J(0, 1 … P).
// [rollout_row]
static bool rollout_row(Chapter *ch, float *map, float *self, const Work *w, int b,
                        HeadFuse fuse, double discard, bool grad) {
    Tensor joint;
    VitError err;
    const RolloutOptions o = {fuse, discard};
    if (rollout_from_trace(&joint, &w->fwd, grad ? &w->bwd : NULL, w->L, b, &o, &err) != VIT_OK) {
        ch_verdict(ch, "the rollout failed: %s", err.msg);
        return false;
    }
    memcpy(map, joint.data + 1, sizeof(float) * (size_t)w->P);
    if (self) *self = joint.data[0];
    tensor_free(&joint);
    return true;
}
// [rollout_row]

/* ------------------------------------------------- 1. what the model says */

static void the_predictions(Chapter *ch, Work *w) {
    if (!ch_section(ch, "1. Ten test images, and what the model says")) return;
    // [predict]
    const Tensor logits = vit_logits(&w->vit);
    float probs[SHOWN * 16];
    for (int b = 0; b < SHOWN; b++) softmax(probs + b * w->Y, logits.data + b * w->Y, 1, w->Y);
    // [predict]
    pin_row(ch, "predict.probs", probs, SHOWN * w->Y);
    ch_say(ch, "The model of Chapter 11 (data/%s) on the ten test images that "
               "data/images/fashion-mnist/ holds as PNGs, each the garment's test index, its "
               "true class, the class the model gives the highest probability, and that "
               "probability:", MODEL_FILE);
    int right = 0;
    for (int b = 0; b < SHOWN; b++) {
        const int i = SHOWN_INDEX[b], t = w->test.labels[i], p = w->pred[b];
        right += p == t;
        ch_line(ch, "    %4d  %-12s -> %-12s %5.1f%%%s", i, class_name(w, t),
                class_name(w, p), 100 * probs[b * w->Y + p], p == t ? "" : "  (wrong)");
    }
    ch_line(ch, "%s", "");
    right = (int)ch_value(ch, "predict.right", (float)right);
    char said[32];
    if (right == SHOWN) snprintf(said, sizeof said, "All ten are right.");
    else snprintf(said, sizeof said, "%d of the ten are right.", right);
    ch_say(ch, "%s The rest of the chapter asks where, in each image, the model looked: the "
               "attention of its [cls] token, whose final state alone the classifier reads.",
           said);
}

/* ------------------------------------------------- 2. layer by layer */

static void layer_by_layer(Chapter *ch, Work *w) {
    if (!ch_section(ch, "2. Where [cls] looks, one layer at a time")) return;
    const int P = w->P, N = w->N, H = w->H;
    float *cls = vit_malloc(sizeof(float) * (size_t)w->L * P), self[64], row[256];
    // [layer_rows]
    for (int l = 0; l < w->L; l++) {
        char name[64];
        snprintf(name, sizeof name, "blocks.%d.attn.probs", l);
        const Tensor *t = trace_find(&w->fwd, name); // (SHOWN, H, N, N); image 0's heads first
        attention_cls_row(row, t->data, H, N, -1, FUSE_MEAN); // (N): [cls], then the patches
        self[l] = row[0];
        memcpy(cls + l * P, row + 1, sizeof(float) * (size_t)P);
    }
    // [layer_rows]
    pin_row(ch, "layer.cls", cls, w->L * P);
    pin_row(ch, "layer.self", self, w->L);
    const int i = SHOWN_INDEX[0];
    ch_say(ch, "Test image %d, of class %s. In each layer, the [cls] token's attention is a "
               "probability over the N = %d tokens: itself and the %d patches. Averaged over "
               "the %d heads, here is each layer's share for each patch, in percent, laid "
               "out as the patches are on the %d×%d grid. If [cls] read every token "
               "equally, each would get 1/N = %.1f%%.", i,
           class_name(w, w->test.labels[i]), N, P, H, w->side, w->side, 100.0 / N);
    for (int l = 0; l < w->L; l++) {
        char caption[160];
        const int q = peak_of(cls + l * P, P);
        snprintf(caption, sizeof caption, "layer %d: [cls] keeps %.1f%% for itself; the most, "
                 "%.1f%% (%.1f× uniform), goes to the patch at row %d, column %d", l,
                 100 * self[l], 100 * cls[l * P + q], cls[l * P + q] * N, q / w->side, q % w->side);
        print_grid(ch, cls + l * P, w->side, caption);
    }
    int distinct = 0; // how many different patches the layers look at most
    for (int l = 0; l < w->L; l++) {
        bool seen = false;
        for (int k = 0; k < l; k++) seen |= peak_of(cls + k * P, P) == peak_of(cls + l * P, P);
        distinct += !seen;
    }
    w->layer_peak_min = 1;
    for (int l = 0; l < w->L; l++)
        w->layer_peak_min = fminf(w->layer_peak_min, cls[l * P + peak_of(cls + l * P, P)]);
    ch_say(ch, "The %d layers look hardest at %d different patches. None of these grids "
               "says what the model as a whole read: what layer %d's [cls] reads is no "
               "longer the patches, but tokens that earlier layers have already mixed.",
           w->L, distinct, w->L - 1);
    free(cls);
}

/* ------------------------------------------------------------ 3. rollout */

static void rolled_out(Chapter *ch, Work *w) {
    if (!ch_section(ch, "3. Rollout: the mixing followed through every layer")) return;
    const int P = w->P;
    float *map = vit_malloc(sizeof(float) * (size_t)P), self;
    // [plain_rollout]
    if (!rollout_row(ch, map, &self, w, 0, FUSE_MEAN, 0, false)) {
        free(map);
        return;
    }
    // [plain_rollout]
    float row[128];
    row[0] = self;
    memcpy(row + 1, map, sizeof(float) * (size_t)P);
    pin_row(ch, "rollout.cls", row, P + 1);
    ch_say(ch, "A block adds what attention brings to what each token already holds, "
               "x + Attention(x), so a token's new state is part itself, part the tokens it "
               "read. Rollout (Abnar and Zuidema, 2020) is a heuristic built on that: it "
               "writes each layer as a matrix, the heads' mean plus the identity, each row "
               "divided by its sum, A = rownorm(P̄ + I), and multiplies them, J = A_%d ··· "
               "A_0 (rollout_layer(), lib/explain/rollout_layer.c). Row i of J is then read "
               "as the fraction of token i's final state that came from each input token. "
               "That reading is an assumption, not something the model computes: it gives "
               "the residual and attention equal weight and ignores what the values and "
               "the MLPs do.", w->L - 1);
    const int q = peak_of(map, P);
    double on_patches = 0;
    for (int p = 0; p < P; p++) on_patches += map[p];
    char caption[160];
    snprintf(caption, sizeof caption, "rollout, [cls] row: %.1f%% on the patches, %.1f%% on "
             "[cls] itself; the most, %.1f%%, at row %d, column %d", 100 * on_patches,
             100 * self, 100 * map[q], q / w->side, q % w->side);
    print_grid(ch, map, w->side, caption);
    w->rollout_peak = map[q], w->rollout_peak_at = q;
    if (map[q] < w->layer_peak_min)
        ch_verdict(ch, "The rollout is flatter than any one layer: its largest share, %.1f%%, is "
                   "below the smallest of the layers' largest (%.1f%%). Every layer's residual "
                   "keeps part of each token where it was, and multiplying the layers spreads "
                   "what each one concentrated. It is the map `vit attention` draws by default.",
               100 * map[q], 100 * w->layer_peak_min);
    else
        ch_verdict(ch, "Its largest share, %.1f%%, is not below every layer's largest (the smallest "
                   "of those is %.1f%%): here the layers concentrate on the same region and the "
                   "product keeps it. It is the map `vit attention` draws by default.",
               100 * map[q], 100 * w->layer_peak_min);
    free(map);
}

/* ---------------------------------------------- 4. fusions and a mistake */

// vit-explain's normalisation: a / a.sum(dim=-1) on a (1, N, N) tensor divides
// column j by row j's sum. One layer of the rollout done that way.
// [rollout_layer_wrong_axis]
static void rollout_layer_wrong_axis(double *joint, const float *fused, int N, double *scratch) {
    double *a = scratch, *product = scratch + (size_t)N * N, *sums = product + (size_t)N * N;
    for (int i = 0; i < N; i++) {
        sums[i] = 0;
        for (int j = 0; j < N; j++) sums[i] += (double)fused[(size_t)i * N + j] + (i == j);
    }
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            a[(size_t)i * N + j] = ((double)fused[(size_t)i * N + j] + (i == j)) / sums[j];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int m = 0; m < N; m++) s += a[(size_t)i * N + m] * joint[(size_t)m * N + j];
            product[(size_t)i * N + j] = s;
        }
    memcpy(joint, product, (size_t)N * N * sizeof *joint);
}
// [rollout_layer_wrong_axis]

static void fusions_and_a_mistake(Chapter *ch, Work *w) {
    if (!ch_section(ch, "4. Fusing heads, discarding weak links, and a mistake to avoid")) return;
    const int P = w->P, N = w->N;
    float *map = vit_malloc(sizeof(float) * (size_t)P), self;
    // [max_discard]
    if (!rollout_row(ch, map, &self, w, 0, FUSE_MAX, 0.9, false)) {
        free(map);
        return;
    }
    // [max_discard]
    pin_row(ch, "rollout.max_discard.cls", map, P);
    const int q = peak_of(map, P);
    ch_say(ch, "Implementations let one fuse the heads by their max or min instead of "
               "their mean, and discard the weakest links: in each layer, the lowest 90%% "
               "of the N² fused entries set to 0 ([cls] reading itself always kept). The "
               "rows are normalised after, so they still sum to 1. The heads fused by max, "
               "90%% discarded, %s: its largest share is %.1f%% against the plain rollout's "
               "%.1f%%.", map[q] > w->rollout_peak ? "is sharper" : "is not sharper here",
           100 * map[q], 100 * w->rollout_peak);
    char caption[160];
    snprintf(caption, sizeof caption, "rollout (max, discard 0.9): the most, %.1f%%, at row %d, "
             "column %d", 100 * map[q], q / w->side, q % w->side);
    print_grid(ch, map, w->side, caption);
    // the same layers, normalised along the wrong axis
    const size_t nn = (size_t)N * N;
    double *joint = vit_malloc(sizeof(double) * nn), *scratch = vit_malloc(sizeof(double) * (2 * nn + N));
    float *fused = vit_malloc(sizeof(float) * nn);
    // [mistake_layers]
    for (size_t e = 0; e < nn; e++) joint[e] = e % ((size_t)N + 1) == 0;
    for (int l = 0; l < w->L; l++) {
        char name[64];
        snprintf(name, sizeof name, "blocks.%d.attn.probs", l);
        attention_fuse_heads(fused, trace_find(&w->fwd, name)->data, w->H, N, FUSE_MAX);
        attention_discard_lowest(fused, N, 0.9);
        rollout_layer_wrong_axis(joint, fused, N, scratch);
    }
    // [mistake_layers]
    float sums[256];
    float lo = INFINITY, hi = -INFINITY;
    for (int i = 0; i < N; i++) {
        double s = 0;
        for (int j = 0; j < N; j++) s += joint[(size_t)i * N + j];
        sums[i] = (float)s;
        lo = fminf(lo, sums[i]), hi = fmaxf(hi, sums[i]);
    }
    pin_row(ch, "mistake.row_sums", sums, N);
    ch_say(ch, "A widely copied implementation (vit-explain) divides by a.sum(dim=-1) "
               "without keepdim. On its (1, N, N) tensor the N sums broadcast along the "
               "other axis: entry (i, j) is divided by row j's sum, not row i's. With the "
               "heads' mean and nothing discarded every row already sums to 1 and the "
               "mistake does nothing; with max or discarding it does. On these layers the "
               "rows of its J sum to between %.3f and %.3f instead of 1: the map's numbers "
               "are no longer fractions of anything. tests/test_rollout.c checks that ours "
               "is not that.", lo, hi);
    free(fused), free(scratch), free(joint), free(map);
}

/* ---------------------------------------------- 5. gradient-weighted */

// The gradient-weighted rollout's share on [cls] for image 0, with the gradient of the
// chosen class's logit, probability and log-probability.
static void score_units(Chapter *ch, Work *w) {
    const RolloutScore scores[3] = {SCORE_LOGIT, SCORE_PROB, SCORE_LOG_PROB};
    float self[3];
    TraceRecorder fwd = {0}, bwd = {0};
    VitError err;
    for (int u = 0; u < 3; u++) {
        // [score_units]
        if (rollout_record_score(&w->vit, &w->input, w->pred, NULL, scores[u], &fwd, &bwd,
                                 &err) != VIT_OK) {
            ch_say(ch, "the pass failed: %s", err.msg);
            break;
        }
        Tensor joint;
        const RolloutOptions o = {FUSE_MEAN, 0};
        if (rollout_from_trace(&joint, &fwd, &bwd, w->L, 0, &o, &err) != VIT_OK) {
            ch_verdict(ch, "the rollout failed: %s", err.msg);
            break;
        }
        self[u] = joint.data[0]; // J(0, 0): what [cls] keeps of itself
        tensor_free(&joint);
        // [score_units]
        if (u == 2) {
            pin_row(ch, "grad.units.self", self, 3);
            float lo = fminf(self[0], fminf(self[1], self[2]));
            float hi = fmaxf(self[0], fmaxf(self[1], self[2]));
            ch_say(ch, "The gradient-weighted rollout is a heuristic too, and one with a free "
                       "parameter: the identity each layer adds is 1 whatever the score, while "
                       "P ⊙ ∂y_c/∂P grows with the score's scale. The same map of the same "
                       "image and class, with the gradient of three scores of that class:");
            ch_line(ch, "    %-18s %18s", "score of the class", "share on [cls]");
            for (int v = 0; v < 3; v++)
                ch_line(ch, "    %-18s %17.1f%%", rollout_score_name(scores[v]), 100 * self[v]);
            ch_line(ch, "%s", "");
            ch_say(ch, "Its share on [cls] runs from %.1f%% to %.1f%% with the choice of units "
                       "alone. How much of such a map is on [cls] and how much on the patches "
                       "is a matter of units, not a finding about the model.",
                   100 * lo, 100 * hi);
        }
    }
    trace_recorder_free(&fwd);
    trace_recorder_free(&bwd);
}

static void gradient_weighted(Chapter *ch, Work *w) {
    if (!ch_section(ch, "5. Attention that matters for a class: gradient-weighted")) return;
    const int P = w->P;
    float *map = vit_malloc(sizeof(float) * (size_t)P), self;
    // [grad_rollout]
    if (!rollout_row(ch, map, &self, w, 0, FUSE_MEAN, 0, true)) {
        free(map);
        return;
    }
    // [grad_rollout]
    pin_row(ch, "grad.pred.cls", map, P);
    ch_value(ch, "grad.pred.self", self);
    const int c = w->pred[0];
    ch_say(ch, "Attention says where information flows, whatever the class. Weighting each "
               "probability by its gradient, ∂y_c/∂P, says which of those flows move the "
               "score y_c of one class: in each layer the heads become the mean of "
               "max(0, P ⊙ ∂y_c/∂P), then the rollout goes on as before. The backward pass "
               "of Chapter 10 gives the gradients (rollout_record()). For the class the "
               "model chose, %s:", class_name(w, c));
    double on = 0;
    for (int p = 0; p < P; p++) on += map[p];
    char caption[160];
    const int q = peak_of(map, P);
    snprintf(caption, sizeof caption, "gradient-weighted rollout: %.1f%% on the patches, %.1f%% "
             "on [cls]; the most, %.2f%%, at row %d, column %d", 100 * on, 100 * self,
             100 * map[q], q / w->side, q % w->side);
    print_grid(ch, map, w->side, caption);
    ch_say(ch, "%s Its most weighted patch is %s the plain rollout's (row %d, column %d).",
           self > 0.5f ? "Most of the weight stays on [cls] itself: the positive products are "
                         "small beside the identity each layer adds for the residual."
                       : "Most of the weight is on the patches.",
           q == w->rollout_peak_at ? "the same as" : "not",
           w->rollout_peak_at / w->side, w->rollout_peak_at % w->side);
    free(map);
    score_units(ch, w);
}

/* ---------------------------------------------- 6. measured */

// "a", "a and b", "a, b and c": the names of the n rankings in list.
static void name_list(char *out, size_t size, const int *list, int n) {
    int at = 0;
    out[0] = 0;
    for (int i = 0; i < n && at < (int)size; i++)
        at += snprintf(out + at, size - (size_t)at, "%s%s", i == 0 ? "" : i == n - 1 ? " and " : ", ",
                       rollout_map_method_name((MapMethod)list[i]));
}

static void measured(Chapter *ch, Work *w) {
    if (!ch_section(ch, "6. Measured: on the garment, and what deleting patches does")) return;
    AttentionMeasures m;
    VitError err;
    // [measure]
    const int measured = knobs[KNOB_IMAGES].value, draws = knobs[KNOB_DRAWS].value;
    const MeasureOptions opt = {.draws = draws, .baselines = true, .occlusion = true};
    if (attention_measure(&w->vit, &w->test, measured, w->mean, w->std, MEASURE_BATCH, GARMENT,
                          (uint64_t)knobs[KNOB_SEED].value, &opt, &m, &err) != VIT_OK) {
        ch_say(ch, "the measurement failed: %s", err.msg);
        return;
    }
    // [measure]
    float mass[MAP_COUNT], top[MAP_COUNT * MEASURE_KS];
    for (int i = 0; i < MAP_COUNT; i++) {
        mass[i] = (float)m.mass[i];
        for (int k = 0; k < MEASURE_KS; k++) top[i * MEASURE_KS + k] = (float)m.prob_top[i][k];
    }
    pin_row(ch, "measure.mass", mass, MAP_COUNT);
    pin_row(ch, "measure.prob_top", top, MAP_COUNT * MEASURE_KS);
    const float uniform = ch_value(ch, "measure.uniform", (float)m.uniform_mass);
    const float full = ch_value(ch, "measure.prob_full", (float)m.prob_full);
    ch_say(ch, "Two claims a map makes can be tested on many images. The first %d test "
               "images, four maps each (attention_measure()). On the garment: a pixel "
               "above %d of 255 is the garment's; a map's share on the garment is the sum "
               "over patches of its value times the fraction of the patch that is "
               "garment, over its total. A uniform map would put %.3f there, the share of "
               "the image the garment covers. Deletion: the patches a map ranks highest "
               "are blacked out, the model runs again, and the probability of the class "
               "it had chosen is averaged (%.3f with nothing blacked out).",
           measured, GARMENT, uniform, full);
    ch_say(ch, "A score means little without a yardstick, so the same test runs on four "
               "baselines that know nothing of the model: each patch's mean brightness; the "
               "garment mask (the fraction of each patch above %d, the same fraction as "
               "above); k patches at random; and k patches at random among the garment's "
               "(those at least half garment, then the rest). Each random baseline is the "
               "mean over %d draws per image. (`vit eval --attention` runs the same test "
               "on any split, occlusion with --occlusion.)",
           GARMENT, draws);
    ch_line(ch, "    %-28s %8s %9s   %7s %7s %7s", "map", "garment", "x uniform", "k = 1", "k = 5",
            "k = 10");
    for (int i = 0; i < MAP_COUNT; i++) {
        if (i == MAP_ATTENTION_COUNT) ch_line(ch, "    %s", "baselines, no model:");
        if (i == MAP_OCCLUSION) ch_line(ch, "    %s", "a reference that asks the model:");
        if (i == MAP_RANDOM || i == MAP_RANDOM_GARMENT)
            ch_line(ch, "    %-28s %8s %9s   %7.3f %7.3f %7.3f", rollout_map_method_name((MapMethod)i),
                    "", "", top[i * MEASURE_KS], top[i * MEASURE_KS + 1], top[i * MEASURE_KS + 2]);
        else
            ch_line(ch, "    %-28s %8.3f %8.2fx   %7.3f %7.3f %7.3f",
                    rollout_map_method_name((MapMethod)i), mass[i], mass[i] / uniform,
                    top[i * MEASURE_KS], top[i * MEASURE_KS + 1], top[i * MEASURE_KS + 2]);
    }
    ch_line(ch, "%s", "");
    // [paired]
    const int k10 = MEASURE_KS - 1; // k = 10
    const int strongest = attention_measure_strongest_baseline(&m, k10);
    int best = 0, most_on = 0; // of the attention maps
    for (int i = 1; i < MAP_ATTENTION_COUNT; i++) {
        if (top[i * MEASURE_KS + k10] < top[best * MEASURE_KS + k10]) best = i;
        if (mass[i] > mass[most_on]) most_on = i;
    }
    float diff[MAP_COUNT], se[MAP_COUNT], se_random[MAP_ATTENTION_COUNT];
    for (int i = 0; i < MAP_COUNT; i++) { // against the strongest baseline: < 0 is better
        diff[i] = top[i * MEASURE_KS + k10] - top[strongest * MEASURE_KS + k10];
        se[i] = (float)attention_measure_paired_se(&m, (MapMethod)i, (MapMethod)strongest, k10);
    }
    for (int i = 0; i < MAP_ATTENTION_COUNT; i++)
        se_random[i] = (float)attention_measure_paired_se(&m, (MapMethod)i, MAP_RANDOM, k10);
    // [paired]
    pin_row(ch, "measure.se_strongest", se, MAP_COUNT);
    pin_row(ch, "measure.se_random", se_random, MAP_ATTENTION_COUNT);
    int against_random = 0;
    for (int i = 0; i < MAP_ATTENTION_COUNT; i++)
        against_random += top[MAP_RANDOM * MEASURE_KS + k10] - top[i * MEASURE_KS + k10] >
                          2 * se_random[i];
    ch_say(ch, "The map with the most on the garment is the %s, %.2f times what a uniform "
               "map puts there; the garment mask puts %.2f times, and the brightness map "
               "%.2f times. Blacking out 10 patches, %d of the 4 attention maps lower the "
               "probability more than 10 random patches do (%.3f) by more than 2 standard "
               "errors. But the strongest baseline at k = 10 is the %s, %.3f, and it uses "
               "no model at all. Each map against it, image by image (the difference of "
               "the means, and its standard error over the %d images, paired):",
           rollout_map_method_name((MapMethod)most_on), mass[most_on] / uniform,
           mass[MAP_GARMENT] / uniform, mass[MAP_BRIGHTNESS] / uniform, against_random,
           top[MAP_RANDOM * MEASURE_KS + k10], rollout_map_method_name((MapMethod)strongest),
           top[strongest * MEASURE_KS + k10], measured);
    ch_line(ch, "    %-28s %11s %7s %10s", "k = 10", "difference", "SE", "diff / SE");
    for (int i = 0; i < MAP_COUNT; i++)
        if (i != strongest)
            ch_line(ch, "    %-28s %+11.3f %7.3f %+10.1f", rollout_map_method_name((MapMethod)i),
                    diff[i], se[i], se[i] > 0 ? diff[i] / se[i] : 0.0f);
    ch_line(ch, "%s", "");
    // the verdict: better or worse than the strongest baseline by more than 2 SE, or neither
    int better[MAP_ATTENTION_COUNT], worse[MAP_ATTENTION_COUNT], even[MAP_ATTENTION_COUNT];
    int nb = 0, nw = 0, ne = 0;
    for (int i = 0; i < MAP_ATTENTION_COUNT; i++) {
        if (diff[i] < -2 * se[i]) better[nb++] = i;
        else if (diff[i] > 2 * se[i]) worse[nw++] = i;
        else even[ne++] = i;
    }
    char names[256], verdict[768];
    int at = 0;
    if (nb > 0) {
        name_list(names, sizeof names, better, nb);
        at += snprintf(verdict + at, sizeof verdict - (size_t)at, "Against the %s, the %s %s "
                       "it by more than 2 standard errors", rollout_map_method_name((MapMethod)strongest),
                       names, nb == 1 ? "beats" : "beat");
    } else
        at += snprintf(verdict + at, sizeof verdict - (size_t)at, "Against the %s, none of the "
                       "attention maps beats it by more than 2 standard errors",
                       rollout_map_method_name((MapMethod)strongest));
    if (nw == MAP_ATTENTION_COUNT) // all of them: no names to list
        at += snprintf(verdict + at, sizeof verdict - (size_t)at, "; all %d do worse than it "
                       "by more than 2 standard errors", nw), nw = 0;
    if (ne > 0) {
        name_list(names, sizeof names, even, ne);
        at += snprintf(verdict + at, sizeof verdict - (size_t)at, "; the %s %s within 2 "
                       "standard errors of it, which does not beat it", names,
                       ne == 1 ? "lies" : "lie");
    }
    if (nw > 0) {
        name_list(names, sizeof names, worse, nw);
        at += snprintf(verdict + at, sizeof verdict - (size_t)at, "; the %s %s worse than it "
                       "by more than 2 standard errors", names, nw == 1 ? "does" : "do");
    }
    const float bright = top[MAP_BRIGHTNESS * MEASURE_KS + k10];
    const float se_bright = ch_value(ch, "measure.se_brightness_best",
        (float)attention_measure_paired_se(&m, MAP_BRIGHTNESS, (MapMethod)best, k10));
    ch_say(ch, "%s. The best attention map at k = 10, the %s (%.3f), is %.3f %s the %s; "
               "the brightness map alone takes the probability to %.3f, %.3f %s the %s "
               "(SE %.3f, paired).", verdict,
           rollout_map_method_name((MapMethod)best), top[best * MEASURE_KS + k10],
           fabsf(diff[best]), diff[best] < 0 ? "below" : "above",
           rollout_map_method_name((MapMethod)strongest), bright,
           fabsf(bright - top[best * MEASURE_KS + k10]),
           bright < top[best * MEASURE_KS + k10] ? "below" : "above",
           rollout_map_method_name((MapMethod)best), se_bright);
    const float occ = top[MAP_OCCLUSION * MEASURE_KS + k10];
    const bool occ_better = diff[MAP_OCCLUSION] < -2 * se[MAP_OCCLUSION];
    ch_say(ch, "Occlusion is the reference: it blacks out each patch alone, runs the model, "
               "and ranks the patches by how far the probability fell, %d forward passes per "
               "image. With it, 10 patches take the probability to %.3f, %.3f %s the %s's "
               "%.3f, %.1f standard errors: %s",
           w->P, occ, fabsf(diff[MAP_OCCLUSION]), diff[MAP_OCCLUSION] < 0 ? "below" : "above",
           rollout_map_method_name((MapMethod)strongest), top[strongest * MEASURE_KS + k10],
           se[MAP_OCCLUSION] > 0 ? fabsf(diff[MAP_OCCLUSION]) / se[MAP_OCCLUSION] : 0.0f,
           !occ_better ? "even asking the model patch by patch does not beat the baseline by "
                         "more than 2 standard errors here."
           : nb == 0   ? "a ranking that asks the model what it needs can beat the garment's "
                         "outline, and none of the attention maps does."
                       : "a ranking that asks the model what it needs can beat the garment's "
                         "outline.");
    ch_say(ch, "Beating random patches shows little more than that a map sits on the "
               "garment: the garment covers %.3f of the image, and a patch of black "
               "background blacked out changes nothing. An attention map shows where information flowed, not "
               "what the decision rests on; whether it knows more than where the garment "
               "is, is a question for a baseline like these, not for how plausible the map "
               "looks.", uniform);
}

/* ------------------------------------------------------------ the chapter */

static bool load(Chapter *ch, Work *w) {
    char path[1024];
    VitError err;
    if (dataset_fashion_mnist_load(&w->test, NULL, "test", &err) != VIT_OK) {
        ch_verdict(ch, "Fashion-MNIST cannot be loaded (%s). Install Debian's "
                   "dataset-fashion-mnist (scripts/deps.sh does) and run the chapter again.",
               err.msg);
        return false;
    }
    if (vit_build(&w->vit, vit_data_path(path, sizeof path, MODEL_FILE), &err) != VIT_OK) {
        ch_verdict(ch, "data/%s cannot be loaded (%s).", MODEL_FILE, err.msg);
        return false;
    }
    const VitConfig *c = &w->vit.config;
    w->side = c->image_size / c->patch_size, w->P = w->side * w->side, w->N = w->P + 1;
    w->L = c->depth, w->H = c->heads, w->Y = c->num_classes;
    const char *m = st_meta(&w->vit.file, "mean"), *s = st_meta(&w->vit.file, "std");
    w->mean = m ? (float)atof(m) : 0.2860f, w->std = s ? (float)atof(s) : 0.3530f;
    labels_for_weights(&w->labels, NULL, NULL, &w->vit.file, w->Y, &err);
    int labels[SHOWN];
    w->input = tensor_new(4, SHOWN, 1, c->image_size, c->image_size);
    // [record]
    dataset_batch(w->input.data, labels, &w->test, SHOWN_INDEX, SHOWN, w->mean, w->std, NULL, NULL);
    if (rollout_record(&w->vit, &w->input, NULL, w->pred, &w->fwd, &w->bwd, &err) != VIT_OK) {
        ch_verdict(ch, "the pass failed: %s", err.msg);
        return false;
    }
    // [record]
    return true;
}

void chapter12_run(Chapter *ch) {
    ch_title(ch, "12", "What did it learn?");
    ch_say(ch, "Chapter 11 trained a ViT on Fashion-MNIST. It names garments it has never "
               "seen; this chapter asks where it looks to do so, with the tools people use "
               "for that (attention maps, attention rollout, gradient-weighted attention), "
               "and then tests those tools.");
    const int threads = vit_get_threads();
    vit_set_threads(1); // every number the same on any machine
    Work w = {0};
    if (load(ch, &w)) {
        the_predictions(ch, &w);
        layer_by_layer(ch, &w);
        rolled_out(ch, &w);
        fusions_and_a_mistake(ch, &w);
        gradient_weighted(ch, &w);
        measured(ch, &w);
        ch_section(ch, "What's next");
        ch_say(ch, "Every map here came from the N × N attention matrices, which grow "
                   "with the square of the tokens. Chapter 13 makes that cost visible, and "
                   "computes attention without ever holding the matrix.");
    }
    trace_recorder_free(&w.fwd);
    trace_recorder_free(&w.bwd);
    tensor_free(&w.input);
    labels_free(&w.labels);
    dataset_free(&w.test);
    vit_free(&w.vit);
    vit_set_threads(threads);
}

#ifndef CHAPTER_NO_MAIN
int main(int argc, char **argv) {
    return chapter_main_knobs(argc, argv, chapter12_run,
                              "Chapter 12: where the trained model's [cls] token looks, layer by "
                              "layer and rolled out; head fusions, discarding, a common mistake; "
                              "gradient-weighted maps; and how far the maps hold up when tested.",
                              knobs, KNOBS);
}
#endif
