/**
 * @file test_attention_approx.c
 * @brief attention_local(), attention_mask_window() and attention_linear()
 *        against PyTorch on odd shapes, and their edge cases.
 *
 * The golden, attention_approx.safetensors, is tools/gen_golden_ch13.py's:
 * local attention as torch.softmax over the scores with the window (and the
 * case's other masks) as -inf, times V; linear attention as the formula
 * φ(Q)(φ(K)ᵀV) / φ(Q)(φ(K)ᵀ1) with F.elu; the inputs drawn here with PCG32
 * (normal, std 1.5, q then k then v) and there with tools/vitrng.py. The
 * shapes are odd on purpose: grids of 3 × 5 and 4 × 3, a band in token order
 * (one row), two prefix tokens, Dh of 1, a window of radius 0 (a patch sees
 * itself and [cls]) and one wider than the grid (exact attention), a
 * sequence of one token, and key padding.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attention.h"
#include "check.h"
#include "ops/ops.h"
#include "base/rng.h"

static const char GOLDEN[] = "attention_approx.safetensors";

/** q, k, v of one case, drawn as the generator draws them. */
typedef struct {
    int B, H, N, Dh;
    float *q, *k, *v, *out, *pad;
} Inputs;

static Inputs draw(int B, int H, int N, int Dh, uint64_t seed, int hidden) {
    Inputs x = {.B = B, .H = H, .N = N, .Dh = Dh};
    const size_t n = (size_t)B * H * N * Dh;
    x.q = malloc(n * sizeof *x.q), x.k = malloc(n * sizeof *x.k), x.v = malloc(n * sizeof *x.v);
    x.out = malloc(n * sizeof *x.out);
    Rng rng;
    rng_seed(&rng, seed);
    rng_fill_normal(&rng, x.q, n, 0, 1.5f);
    rng_fill_normal(&rng, x.k, n, 0, 1.5f);
    rng_fill_normal(&rng, x.v, n, 0, 1.5f);
    for (size_t i = 0; i < n; i++) x.out[i] = NAN; // nothing to be found there by chance
    if (hidden) { // the last sequence's last `hidden` keys are padding
        x.pad = calloc((size_t)B * N, sizeof *x.pad);
        for (int j = N - hidden; j < N; j++) x.pad[(size_t)(B - 1) * N + j] = -INFINITY;
    }
    return x;
}

static void inputs_free(Inputs *x) { free(x->q), free(x->k), free(x->v), free(x->out), free(x->pad); }

static void check_against(const Inputs *x, const char *name, const char *label) {
    Tensor want = golden_tensor(GOLDEN, name);
    const Tensor got = tensor_view(x->out, 4, x->B, x->H, x->N, x->Dh);
    assert_tensor_close(&got, &want, 1e-5f, 1e-4f, label);
    tensor_free(&want);
}

/* ---------------------------------------------------------------- local */

static void local_case(const char *name, int B, int H, int prefix, int rows, int cols, int Dh,
                       int radius, float scale_by, uint64_t seed, int hidden, bool causal,
                       const char *label) {
    const int N = prefix + rows * cols;
    Inputs x = draw(B, H, N, Dh, seed, hidden);
    float *mask = NULL;
    if (causal) {
        mask = malloc(sizeof(float) * (size_t)N * N);
        attention_mask_causal(mask, N);
    }
    const AttentionOptions opt = {.scale = scale_by, .mask = mask, .key_padding_mask = x.pad};
    attention_local(x.out, x.q, x.k, x.v, &opt, B, H, prefix, rows, cols, Dh, radius);
    char key[64];
    snprintf(key, sizeof key, "local.%s", name);
    check_against(&x, key, label);
    free(mask);
    inputs_free(&x);
}

static void test_local_matches_pytorch(void) {
    local_case("grid", 2, 3, 1, 3, 5, 7, 1, 0.3f, 31, 4, false,
               "a 3 × 5 grid and [cls], radius 1, scale 0.3, key padding");
    local_case("radius0", 1, 2, 1, 4, 4, 1, 0, 0, 32, 0, false,
               "radius 0: each patch sees itself and [cls]; Dh = 1");
    local_case("everything", 1, 1, 0, 1, 11, 4, 20, 0, 33, 0, false,
               "a window wider than the grid: exact attention");
    local_case("band", 2, 1, 0, 1, 13, 3, 2, 0, 34, 3, true,
               "a band of radius 2 in token order, causal, key padding");
    local_case("prefix2", 1, 2, 2, 4, 3, 5, 1, 0, 35, 0, false, "two prefix tokens on a 4 × 3 grid");
}

static void test_window_mask_matches_pytorch(void) {
    float mask[13 * 13];
    attention_mask_window(mask, 1, 3, 4, 1);
    Tensor want = golden_tensor(GOLDEN, "mask.window");
    const Tensor got = tensor_view(mask, 2, 13, 13);
    assert_tensor_close(&got, &want, 0, 0, "the window of radius 1 on a 3 × 4 grid and [cls]");
    tensor_free(&want);
}

// attention_local() equals the traced path with its own window mask, at ViT's size.
static void test_local_is_exact_attention_with_the_window_mask(void) {
    enum { G = 14, N = G * G + 1, Dh = 16 };
    Inputs x = draw(1, 2, N, Dh, 36, 0);
    float *mask = malloc(sizeof(float) * N * N), *s = malloc(sizeof(float) * 2 * N * N);
    float *want = malloc(sizeof(float) * 2 * N * Dh);
    attention_mask_window(mask, 1, G, G, 2);
    const AttentionOptions opt = {.mask = mask};
    attention_local(x.out, x.q, x.k, x.v, &opt, 1, 2, 1, G, G, Dh, 2); // the mask changes nothing
    attention_scores(s, x.q, x.k, 2, N, Dh);
    attention_scale_mask(s, s, &opt, 1, 2, N, Dh);
    softmax(s, s, 2 * N, N);
    // independent: the traced path, a second road to PyTorch's numbers (chapter 04 pins it)
    attention_context(want, s, x.v, 2, N, Dh);
    const Tensor a = tensor_view(x.out, 2, 2 * N, Dh), b = tensor_view(want, 2, 2 * N, Dh);
    assert_tensor_close(&a, &b, 1e-5f, 1e-4f, "local attention against the masked exact path");
    free(mask), free(s), free(want);
    inputs_free(&x);
}

static void test_local_hidden_rows_and_nan(void) {
    enum { N = 5, Dh = 2 };
    Inputs x = draw(1, 1, N, Dh, 37, 0);
    const float none[N] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    const AttentionOptions hidden = {.key_padding_mask = none};
    attention_local(x.out, x.q, x.k, x.v, &hidden, 1, 1, 1, 2, 2, Dh, 1);
    for (int i = 0; i < N * Dh; i++) CU_ASSERT_EQUAL(x.out[i], 0.0f); // nothing to see: 0
    x.k[2 * Dh] = NAN; // key 2 (patch (0, 1)): the queries that see it become NaN
    attention_local(x.out, x.q, x.k, x.v, NULL, 1, 1, 1, 1, 4, Dh, 0);
    CU_ASSERT(isnan(x.out[0]));          // [cls] sees every key
    CU_ASSERT(isnan(x.out[2 * Dh]));     // patch (0, 1) sees itself
    CU_ASSERT(!isnan(x.out[1 * Dh]) && !isnan(x.out[3 * Dh])); // radius 0: the others do not
    inputs_free(&x);
}

/* ---------------------------------------------------------------- linear */

static void linear_case(const char *name, int B, int H, int N, int Dh, uint64_t seed, int hidden,
                        const char *label) {
    Inputs x = draw(B, H, N, Dh, seed, hidden);
    attention_linear(x.out, x.q, x.k, x.v, x.pad, B, H, N, Dh);
    char key[64];
    snprintf(key, sizeof key, "linear.%s", name);
    check_against(&x, key, label);
    inputs_free(&x);
}

static void test_linear_matches_pytorch(void) {
    linear_case("odd", 2, 2, 13, 5, 41, 4, "13 tokens, Dh = 5, key padding");
    linear_case("one", 1, 1, 1, 3, 42, 0, "one token: its own value");
    linear_case("dh1", 1, 2, 37, 1, 43, 0, "Dh = 1");
    linear_case("wide", 1, 1, 50, 16, 44, 0, "50 tokens, Dh = 16");
}

static void test_linear_weights_are_a_mean(void) {
    // every value the same vector: any positive weights summing to 1 give it back
    enum { N = 9, Dh = 3 };
    Inputs x = draw(1, 1, N, Dh, 45, 0);
    for (int j = 0; j < N; j++)
        for (int d = 0; d < Dh; d++) x.v[j * Dh + d] = (float)(d + 1);
    attention_linear(x.out, x.q, x.k, x.v, NULL, 1, 1, N, Dh);
    for (int i = 0; i < N * Dh; i++) CU_ASSERT_DOUBLE_EQUAL(x.out[i], i % Dh + 1, 1e-5);
    inputs_free(&x);
}

static void test_linear_hidden_and_nan(void) {
    enum { N = 4, Dh = 2 };
    Inputs x = draw(1, 1, N, Dh, 46, 0);
    const float none[N] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY};
    attention_linear(x.out, x.q, x.k, x.v, none, 1, 1, N, Dh);
    for (int i = 0; i < N * Dh; i++) CU_ASSERT_EQUAL(x.out[i], 0.0f);
    x.q[0] = NAN; // query 0 only
    attention_linear(x.out, x.q, x.k, x.v, NULL, 1, 1, N, Dh);
    CU_ASSERT(isnan(x.out[0]) && isnan(x.out[1]));
    CU_ASSERT(!isnan(x.out[Dh]) && !isnan(x.out[(N - 1) * Dh]));
    inputs_free(&x);
}

CU_TestInfo tests_attention_approx[] = {
    {"local attention matches PyTorch on odd shapes", test_local_matches_pytorch},
    {"the window mask matches PyTorch", test_window_mask_matches_pytorch},
    {"local attention is exact attention with the window mask",
     test_local_is_exact_attention_with_the_window_mask},
    {"local attention: hidden rows and NaN", test_local_hidden_rows_and_nan},
    {"linear attention matches PyTorch on odd shapes", test_linear_matches_pytorch},
    {"linear attention of equal values gives them back", test_linear_weights_are_a_mean},
    {"linear attention: hidden keys and NaN", test_linear_hidden_and_nan},
    CU_TEST_INFO_NULL,
};
