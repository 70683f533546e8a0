/**
 * @file test_attention_online.c
 * @brief attention_online() against the path the trace shows (scores, scaled
 *        and masked, softmax, times V), on odd shapes, key blocks of every size
 *        and the masks: equal to 1e-5 of the largest output, with no N × N matrix.
 *
 * The reference path is itself pinned against PyTorch (suites attention,
 * ch04_attention, ch05_multi_head); this suite holds the online form to it.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "attention/attention.h"
#include "ops/ops.h"
#include "base/rng.h"

// The traced path worked out here, in double: S = s·QKᵀ + masks, P = softmax(S)
// row by row, out = P·V. Not with lib's attention pieces: attention_online()
// shares attention_scale() with them, so a wrong scale would agree with itself.
// q, k, v and out are (B, H, N, Dh).
static void reference(float *out, const float *q, const float *k, const float *v,
                      const AttentionOptions *opt, int B, int H, int N, int Dh) {
    const double s = opt && opt->scale != 0.0f ? opt->scale : 1.0 / sqrt(Dh);
    const float *mask = opt ? opt->mask : NULL, *pad = opt ? opt->key_padding_mask : NULL;
    double *p = malloc(sizeof(double) * N); // one query's row of weights
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++) {
            const size_t at = ((size_t)b * H + h) * N * Dh; // this head's (N, Dh) block
            for (int i = 0; i < N; i++) {
                double max = -INFINITY, sum = 0;
                for (int j = 0; j < N; j++) {
                    double dot = 0;
                    for (int c = 0; c < Dh; c++) dot += (double)q[at + i * Dh + c] * k[at + j * Dh + c];
                    p[j] = s * dot + (mask ? mask[i * N + j] : 0) + (pad ? pad[b * N + j] : 0);
                    max = fmax(max, p[j]);
                }
                for (int j = 0; j < N; j++) sum += p[j] = exp(p[j] - max);
                for (int c = 0; c < Dh; c++) {
                    double o = 0;
                    for (int j = 0; j < N; j++) o += p[j] * v[at + j * Dh + c];
                    out[at + i * Dh + c] = (float)(o / sum);
                }
            }
        }
    free(p);
}

// Largest |online − reference| over the largest |reference|, for one case.
static double relative_gap(int B, int H, int N, int Dh, int key_block, const AttentionOptions *opt,
                           uint64_t seed) {
    const size_t n = (size_t)B * H * N * Dh;
    float *q = malloc(n * sizeof *q), *k = malloc(n * sizeof *k), *v = malloc(n * sizeof *v);
    float *a = malloc(n * sizeof *a), *b = malloc(n * sizeof *b);
    Rng rng;
    rng_seed(&rng, seed);
    rng_fill_normal(&rng, q, n, 0, 1.5f); // big enough for peaked rows
    rng_fill_normal(&rng, k, n, 0, 1.5f);
    rng_fill_normal(&rng, v, n, 0, 1.0f);
    attention_online(a, q, k, v, opt, B, H, N, Dh, key_block);
    reference(b, q, k, v, opt, B, H, N, Dh);
    double worst = 0, scale = 0;
    for (size_t i = 0; i < n; i++) {
        if (isnan(a[i]) != isnan(b[i])) worst = INFINITY;
        else if (!isnan(a[i])) worst = fmax(worst, fabs((double)a[i] - b[i]));
        if (!isnan(b[i])) scale = fmax(scale, fabs(b[i]));
    }
    free(q), free(k), free(v), free(a), free(b);
    return scale > 0 ? worst / scale : worst;
}

static void test_equal_to_the_traced_path_on_odd_shapes(void) {
    const int Ns[] = {1, 2, 7, 50, 197}, Dhs[] = {1, 3, 64};
    for (size_t a = 0; a < sizeof Ns / sizeof *Ns; a++)
        for (size_t d = 0; d < sizeof Dhs / sizeof *Dhs; d++) {
            const int N = Ns[a], Dh = Dhs[d];
            const int blocks[] = {1, 5, 16, N, N + 3};
            for (size_t kb = 0; kb < sizeof blocks / sizeof *blocks; kb++)
                CU_ASSERT(relative_gap(2, 3, N, Dh, blocks[kb], NULL, 7 + a * 10 + d) < 1e-5);
        }
}

static void test_scale_and_masks(void) {
    enum { B = 2, H = 2, N = 9 };
    float causal[N * N], pad[B * N];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) causal[i * N + j] = j <= i ? 0.0f : -INFINITY;
    for (int b = 0; b < B; b++)
        for (int j = 0; j < N; j++) pad[b * N + j] = b == 1 && j >= 6 ? -INFINITY : 0.0f;
    const AttentionOptions scaled = {.scale = 0.3f};
    const AttentionOptions masked = {.scale = 0.3f, .mask = causal, .key_padding_mask = pad};
    CU_ASSERT(relative_gap(B, H, N, 4, 4, &scaled, 3) < 1e-5);
    CU_ASSERT(relative_gap(B, H, N, 4, 4, &masked, 4) < 1e-5);
    CU_ASSERT(relative_gap(B, H, N, 4, 1, &masked, 5) < 1e-5); // a block may be all hidden
}

// Every key hidden: 0, as softmax() gives; a NaN score: NaN, as softmax() gives.
static void test_hidden_rows_and_nan(void) {
    enum { N = 4, Dh = 2 };
    float q[N * Dh], k[N * Dh], v[N * Dh], out[N * Dh];
    for (int i = 0; i < N * Dh; i++) q[i] = k[i] = v[i] = 0.5f + (float)i;
    const float none[N] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    const AttentionOptions hidden = {.key_padding_mask = none};
    attention_online(out, q, k, v, &hidden, 1, 1, N, Dh, 2);
    for (int i = 0; i < N * Dh; i++) CU_ASSERT_EQUAL(out[i], 0.0f);
    q[0] = NAN; // query 0's scores are all NaN
    attention_online(out, q, k, v, NULL, 1, 1, N, Dh, 2);
    CU_ASSERT(isnan(out[0]) && isnan(out[1]));
    CU_ASSERT(!isnan(out[2]) && !isnan(out[Dh * (N - 1)])); // the other queries are fine
    // one key only: all its weight, the value itself
    attention_online(out, q + Dh, k, v, NULL, 1, 1, 1, Dh, 1);
    CU_ASSERT_DOUBLE_EQUAL(out[0], v[0], 1e-7);
}

/* --------------------------------------------- the model's two roads */

// mha_forward() with the matrices kept (the trace's and the backward's road)
// and without (the online road an untraced forward takes): the same output to
// float rounding, on shapes that cut queries and keys into partial blocks
// (N 130: three blocks of 64 queries, two of MHA_KEY_BLOCK keys), with a head
// switched off and both masks; the online road writes no (N, N) buffer.
static double roads_gap(int B, int N, int H, int Dh, const bool *head_off,
                        const AttentionOptions *opt, uint64_t seed) {
    const int D = H * Dh;
    const size_t dd = (size_t)D * D, bnd = (size_t)B * N * D, bhnn = (size_t)B * H * N * N;
    float *w = malloc(4 * (dd + D) * sizeof *w), *x = malloc(bnd * sizeof *x);
    float *out[2] = {malloc(bnd * sizeof(float)), malloc(bnd * sizeof(float))};
    Rng rng;
    rng_seed(&rng, seed);
    rng_fill_normal(&rng, w, 4 * (dd + D), 0, 0.4f);
    rng_fill_normal(&rng, x, bnd, 0, 1.0f);
    const AttentionWeights aw = {.q_w = w, .k_w = w + dd, .v_w = w + 2 * dd, .proj_w = w + 3 * dd,
                                 .q_b = w + 4 * dd, .k_b = w + 4 * dd + D, .v_b = w + 4 * dd + 2 * D,
                                 .proj_b = w + 4 * dd + 3 * D, .head_off = head_off};
    const size_t floats = mha_scratch_floats(B, N, D, H);
    float *mem = malloc(floats * sizeof *mem);
    MhaScratch s;
    mha_scratch_carve(&s, mem, B, N, D, H);
    mha_forward(out[0], x, &aw, opt, &s, B, N, D, H, NULL); // keep_matrices: the default
    for (size_t i = 0; i < bhnn; i++) s.scores[i] = s.scaled[i] = s.probs[i] = NAN;
    s.keep_matrices = false;
    mha_forward(out[1], x, &aw, opt, &s, B, N, D, H, NULL);
    double worst = 0, scale = 0;
    for (size_t i = 0; i < bnd; i++) {
        worst = fmax(worst, fabs((double)out[0][i] - out[1][i]));
        scale = fmax(scale, fabs(out[0][i]));
    }
    size_t written = 0;
    for (size_t i = 0; i < bhnn; i++)
        written += !isnan(s.scores[i]) || !isnan(s.scaled[i]) || !isnan(s.probs[i]);
    if (written) worst = INFINITY;
    free(w), free(x), free(out[0]), free(out[1]), free(mem);
    return scale > 0 ? worst / scale : worst;
}

static void test_the_models_two_roads_agree(void) {
    const int shapes[][4] = {{1, 1, 1, 1}, {2, 7, 3, 5}, {1, 50, 4, 16}, {2, 130, 2, 8}};
    for (size_t c = 0; c < sizeof shapes / sizeof *shapes; c++) {
        const int B = shapes[c][0], N = shapes[c][1], H = shapes[c][2], Dh = shapes[c][3];
        CU_ASSERT(roads_gap(B, N, H, Dh, NULL, NULL, 30 + c) < 1e-5);
        bool off[4] = {false, true, false, false}; // head 1 off (when there is one)
        CU_ASSERT(roads_gap(B, N, H, Dh, H > 1 ? off : NULL, NULL, 40 + c) < 1e-5);
    }
    enum { B = 2, N = 9 };
    float causal[N * N], pad[B * N];
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) causal[i * N + j] = j <= i ? 0.0f : -INFINITY;
    for (int b = 0; b < B; b++)
        for (int j = 0; j < N; j++) pad[b * N + j] = b == 1 && j >= 6 ? -INFINITY : 0.0f;
    const AttentionOptions masked = {.scale = 0.3f, .mask = causal, .key_padding_mask = pad};
    CU_ASSERT(roads_gap(B, N, 2, 4, NULL, &masked, 50) < 1e-5);
}

CU_TestInfo tests_attention_online[] = {
    {"equal to the traced path on odd shapes", test_equal_to_the_traced_path_on_odd_shapes},
    {"scale and masks", test_scale_and_masks},
    {"hidden rows and NaN", test_hidden_rows_and_nan},
    {"mha_forward: the online road equals the kept matrices'", test_the_models_two_roads_agree},
    CU_TEST_INFO_NULL,
};
