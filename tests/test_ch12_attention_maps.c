/**
 * @file test_ch12_attention_maps.c
 * @brief Chapter 12 against PyTorch, and the probes of exercise 12's rollout_layer().
 *
 * `build/tests/run ch12_attention_maps` grades a student's rollout_layer()
 * (exercise 12) too: the chapter and the probes call lib's version, or
 * whatever replaced lib/explain/rollout_layer.c at link time.
 *
 * The golden, ch12_attention_maps.safetensors, holds every number the
 * chapter prints, each computed again by tools/gen_golden_ch12.py in PyTorch
 * (the shipped model in float64, autograd's gradients, the rollouts and the
 * measurements repeated there).
 *
 * The probes feed rollout_layer() PyTorch's recorded attention of the
 * shipped model (tests/golden/rollout.safetensors: image 0's probabilities,
 * tools/gen_golden_rollout.py) and compare its rollouts with PyTorch's.
 * When they differ, each likely mistake (the residual's identity forgotten,
 * no normalisation, rows divided by the sums of the other axis, as a widely
 * copied implementation does, the normalisation before the identity is
 * added, the new layer multiplied on the right) is computed here from the
 * same layers, and the one that lands where the student's did is named with
 * check_hint(); when several land there, or the rollout has NaN, one small
 * layer on which no two mistakes agree names the one.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../chapters/chapters.h"
#include "check.h"
#include "explain/rollout.h"

static void test_chapter_matches_pytorch(void) {
    check_chapter_against_golden(chapter12_run, "ch12_attention_maps.safetensors");
}

/* ------------------------------------------------- the probes' mistakes */

/** How a rollout layer may go wrong. */
typedef enum {
    RIGHT,               // J ← rownorm(F + I) · J
    NO_IDENTITY,         // J ← rownorm(F) · J
    NO_NORMALISATION,    // J ← (F + I) · J
    WRONG_AXIS,          // entry (i, j) divided by row j's sum
    NORMALISED_BEFORE_I, // J ← (rownorm(F) + I) · J
    RIGHT_MULTIPLIED,    // J ← J · rownorm(F + I)
    UNCHANGED,           // J ← J: nothing written (the skeleton)
    COLUMNS_NORMALISED,  // each column of F + I divided by its own sum
    LAST_LAYER_ONLY,     // J ← rownorm(F + I): the product forgotten
    J_TRANSPOSED,        // J ← rownorm(F + I) · Jᵀ
    IN_PLACE,            // J ← A · J written into J while J is still read
    MISTAKES
} Way;

static const char *const hint_of[MISTAKES] = {
    [NO_IDENTITY] = "the identity is missing: a block computes x + Attention(x), so each "
                    "token also keeps itself; add 1 on the diagonal before normalising",
    [NO_NORMALISATION] = "the rows are not normalised: after adding the identity each row "
                         "sums to 2 (or more), so the product grows with every layer; divide "
                         "each row by its own sum",
    [WRONG_AXIS] = "each row is divided by the sum of the row with the column's index (the "
                   "sums along the wrong axis, vit-explain's a / a.sum(dim=-1) without "
                   "keepdim): divide row i by row i's sum",
    [NORMALISED_BEFORE_I] = "the identity is added after normalising, so the rows sum to 2: "
                            "add it first, then divide each row by its sum",
    [RIGHT_MULTIPLIED] = "the new layer is multiplied on the right (J · A): it must come on "
                         "the left, J' = A · J, since the new layer reads what the earlier "
                         "ones made",
    [UNCHANGED] = "joint never changed: is rollout_layer() still the exercise's placeholder? "
                  "J' = rownorm(F + I) · J, written back into joint",
    [COLUMNS_NORMALISED] = "each column is normalised, not each row: row i of F + I is token "
                           "i's mix, divide it by its own sum",
    [LAST_LAYER_ONLY] = "joint holds only the last layer's A: multiply, J' = A · J, so every "
                        "earlier layer stays in the product",
    [J_TRANSPOSED] = "J is read transposed in the product: J'[i][j] = sum_m A[i][m]·J[m][j], "
                     "row m of J, not column m",
    [IN_PLACE] = "the product was written into joint while joint was still being read: "
                 "compute A · J into scratch, then copy it into joint",
};

// One layer done `way`; joint and fused are (N, N).
static void layer_done(double *joint, const float *fused, int N, Way way) {
    const size_t nn = (size_t)N * N;
    double *a = calloc(nn, sizeof *a), *out = calloc(nn, sizeof *out), *sums = calloc((size_t)N, sizeof *sums);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            const double eye = way == NO_IDENTITY || way == NORMALISED_BEFORE_I ? 0 : (i == j);
            a[(size_t)i * N + j] = fused[(size_t)i * N + j] + eye;
            sums[i] += a[(size_t)i * N + j];
        }
    double *col_sums = calloc((size_t)N, sizeof *col_sums);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) col_sums[j] += a[(size_t)i * N + j];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            double *e = &a[(size_t)i * N + j];
            if (way == WRONG_AXIS) *e /= sums[j];
            else if (way == COLUMNS_NORMALISED) *e /= col_sums[j];
            else if (way != NO_NORMALISATION) *e /= sums[i];
            if (way == NORMALISED_BEFORE_I) *e += i == j;
        }
    free(col_sums);
    if (way == UNCHANGED) memcpy(out, joint, nn * sizeof *joint);
    if (way == LAST_LAYER_ONLY) memcpy(out, a, nn * sizeof *a);
    for (int i = 0; i < N && way != UNCHANGED && way != LAST_LAYER_ONLY; i++)
        for (int j = 0; j < N; j++) {
            double s = 0;
            for (int m = 0; m < N; m++)
                s += way == RIGHT_MULTIPLIED ? joint[(size_t)i * N + m] * a[(size_t)m * N + j]
                     : way == J_TRANSPOSED   ? a[(size_t)i * N + m] * joint[(size_t)j * N + m]
                                             : a[(size_t)i * N + m] * joint[(size_t)m * N + j];
            if (way == IN_PLACE) joint[(size_t)i * N + j] = s; // read again below: the bug
            out[(size_t)i * N + j] = s;
        }
    memcpy(joint, out, nn * sizeof *joint);
    free(a), free(out), free(sums);
}

/** PyTorch's recorded probabilities of image 0, fused per layer, (L, N, N). */
typedef struct {
    int L, N;
    float *fused;
} Layers;

static Layers recorded_layers(HeadFuse fuse, double discard) {
    Tensor probs = golden_tensor("rollout.safetensors", "b0.probs"); // (L, H, N, N)
    Layers r = {probs.shape[0], probs.shape[2], NULL};
    const int H = probs.shape[1];
    const size_t nn = (size_t)r.N * r.N;
    r.fused = malloc(sizeof(float) * nn * (size_t)r.L);
    for (int l = 0; l < r.L; l++) {
        attention_fuse_heads(r.fused + l * nn, probs.data + (size_t)l * H * nn, H, r.N, fuse);
        attention_discard_lowest(r.fused + l * nn, r.N, discard);
    }
    tensor_free(&probs);
    return r;
}

// The rollout through every layer, by the student's rollout_layer() (way RIGHT) or by a mistake.
static Tensor roll(const Layers *r, Way way, bool students) {
    const size_t nn = (size_t)r->N * r->N;
    double *joint = malloc(nn * sizeof *joint), *scratch = malloc(2 * nn * sizeof *scratch);
    for (size_t e = 0; e < nn; e++) joint[e] = e % ((size_t)r->N + 1) == 0;
    for (int l = 0; l < r->L; l++) {
        if (students) {
            for (size_t e = 0; e < 2 * nn; e++) scratch[e] = NAN; // nothing to be read from it
            rollout_layer(joint, r->fused + l * nn, r->N, scratch);
        } else layer_done(joint, r->fused + l * nn, r->N, way);
    }
    Tensor t = tensor_new(2, r->N, r->N);
    for (size_t e = 0; e < nn; e++) t.data[e] = (float)joint[e];
    free(joint), free(scratch);
    return t;
}

/* A small layer on which no two mistakes land on the same numbers: F's rows sum to 0.4,
 * 1.5 and 0.9, not 1 (so the identity added before or after normalising differ), none to 0
 * (so nothing is divided by 0), and J is neither the identity nor symmetric (so A · J,
 * J · A, A · Jᵀ and A alone differ). The recorded layers cannot always tell mistakes apart
 * (with the heads' mean, F's rows already sum to 1); this one can. */
enum { SMALL_N = 3, SMALL_NN = SMALL_N * SMALL_N };
static const float SMALL_F[SMALL_NN] = {0.1f, 0.2f, 0.1f, 0.5f, 0.3f, 0.7f, 0.2f, 0.6f, 0.1f};
static const double SMALL_J[SMALL_NN] = {0.5, 0.3, 0.2, 0.1, 0.6, 0.3, 0.25, 0.25, 0.5};

// The student's rollout_layer() on the small layer, into joint (SMALL_N, SMALL_N).
static void small_layer_students(double *joint) {
    double scratch[2 * SMALL_NN];
    for (int e = 0; e < 2 * SMALL_NN; e++) scratch[e] = NAN; // nothing to be read from it
    memcpy(joint, SMALL_J, sizeof SMALL_J);
    rollout_layer(joint, SMALL_F, SMALL_N, scratch);
}

// Does @p got (the student's small layer) land where `way` does?
static bool small_layer_is(const double *got, Way way) {
    double joint[SMALL_NN];
    memcpy(joint, SMALL_J, sizeof SMALL_J);
    layer_done(joint, SMALL_F, SMALL_N, way);
    for (int e = 0; e < SMALL_NN; e++)
        if (!(fabs(got[e] - joint[e]) <= 1e-9 + 1e-7 * fabs(joint[e]))) return false;
    return true;
}

// Of the n mistakes that landed where the student did, the one that does on the small
// layer too; MISTAKES when none or several do.
static Way the_one_mistake(const Way *matched, int n) {
    if (n == 1) return matched[0];
    double small[SMALL_NN];
    small_layer_students(small);
    int kept = 0;
    Way one = MISTAKES;
    for (int k = 0; k < n; k++)
        if (small_layer_is(small, matched[k])) one = matched[k], kept++;
    return kept == 1 ? one : MISTAKES;
}

// A rollout with NaN or inf cannot be compared with the mistakes: the small layer names it.
static void diagnose_not_finite(void) {
    double got[SMALL_NN];
    small_layer_students(got);
    bool finite = true;
    for (int e = 0; e < SMALL_NN; e++) finite &= isfinite(got[e]) != 0;
    int found = MISTAKES;
    for (int w = NO_IDENTITY; w < MISTAKES && finite; w++)
        if (small_layer_is(got, (Way)w)) found = w;
    if (!finite)
        check_hint("rollout_layer() gives NaN or inf even on a small layer where no row sums to "
                   "0: is scratch (NaN in the probes) read before it is written?");
    else if (found < MISTAKES) // the NaN: a row of F all 0 after discarding, divided by its sum
        check_hint("the rollout has NaN or inf, as a row of F that discarding left all 0 gives "
                   "when divided by its own sum: %s", hint_of[found]);
    else
        check_hint("the rollout has NaN or inf where PyTorch's has none: after discarding, a row "
                   "of F can be all 0, and only the identity keeps its sum above 0");
}

// The student's rollout against PyTorch's golden NAME; on a miss, the mistake it matches.
static void probe(HeadFuse fuse, double discard, const char *golden, const char *label) {
    Layers r = recorded_layers(fuse, discard);
    Tensor got = roll(&r, RIGHT, true), want = golden_tensor("rollout.safetensors", golden);
    if (!assert_tensor_close(&got, &want, 1e-6f, 1e-5f, label)) {
        bool finite = true;
        for (size_t e = 0; e < got.numel; e++) finite &= isfinite(got.data[e]) != 0;
        Way matched[MISTAKES] = {0};
        int n = 0;
        for (int w = NO_IDENTITY; w < MISTAKES && finite; w++) {
            Tensor wrong = roll(&r, (Way)w, false);
            if (tensor_near(&got, &wrong, 1e-6f, 1e-5f)) matched[n++] = (Way)w;
            tensor_free(&wrong);
        }
        const Way one = the_one_mistake(matched, n);
        if (!finite)
            diagnose_not_finite();
        else if (one < MISTAKES)
            check_hint("%s", hint_of[one]);
        else
            check_hint("rollout_layer(): A = rownorm(F + I), each row of F plus the identity "
                       "divided by its own sum, then J' = A · J");
    }
    tensor_free(&got), tensor_free(&want);
    free(r.fused);
}

static void test_probe_rollout_mean(void) {
    probe(FUSE_MEAN, 0, "unit.rollout.mean", "rollout of the heads' mean, six layers (PyTorch's)");
}

static void test_probe_rollout_max_discarded(void) {
    // with max fusion and discarding, the rows of F no longer sum to 1: the normalisation shows
    probe(FUSE_MAX, 0.9, "unit.rollout.max.discard",
          "rollout of the heads' max, the lowest 90% discarded (PyTorch's)");
}

static void test_probe_one_layer_by_hand(void) {
    // F = [[0.3, 0.7], [0.6, 0.4]]: A = [[1.3, 0.7], [0.6, 1.4]] / 2; then A · A
    const float fused[4] = {0.3f, 0.7f, 0.6f, 0.4f};
    double joint[4] = {1, 0, 0, 1}, scratch[8];
    rollout_layer(joint, fused, 2, scratch);
    const double once[4] = {0.65, 0.35, 0.3, 0.7};
    bool ok = true;
    for (int e = 0; e < 4; e++) ok &= fabs(joint[e] - once[e]) < 1e-7;
    CU_ASSERT(ok);
    if (ok) return;
    Way matched[MISTAKES]; // the mistakes that give the same numbers from the identity
    int n = 0;
    for (int w = NO_IDENTITY; w < MISTAKES; w++) {
        double wrong[4] = {1, 0, 0, 1};
        layer_done(wrong, fused, 2, (Way)w);
        bool same = true;
        for (int e = 0; e < 4; e++) same &= fabs(joint[e] - wrong[e]) < 1e-7;
        if (same) matched[n++] = (Way)w;
    }
    const Way one = the_one_mistake(matched, n);
    check_hint("one layer from the identity should give A = rownorm(F + I) = "
               "[[0.65, 0.35], [0.3, 0.7]]; got [[%.4g, %.4g], [%.4g, %.4g]]%s%s", joint[0],
               joint[1], joint[2], joint[3], one < MISTAKES ? ": " : "",
               one < MISTAKES ? hint_of[one] : "");
}

CU_TestInfo tests_ch12_attention_maps[] = {
    {"chapter matches PyTorch golden", test_chapter_matches_pytorch},
    {"probe: rollout_layer, one layer by hand", test_probe_one_layer_by_hand},
    {"probe: rollout_layer through six layers, heads averaged", test_probe_rollout_mean},
    {"probe: rollout_layer with max fusion and discarding", test_probe_rollout_max_discarded},
    CU_TEST_INFO_NULL,
};
