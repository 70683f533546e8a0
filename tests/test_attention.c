/**
 * @file test_attention.c
 * @brief One attention head against PyTorch, with and without masks
 *        (tests/golden/attn_pieces.safetensors, written by tools/gen_golden_vit.py
 *        in float64), and scores so large that e^x overflows float32
 *        (tests/golden/attention_cases.safetensors, tools/gen_golden.py, float64):
 *        chapter 04's stage. The heads and multi-head attention, chapter 05's,
 *        are test_mha.c's.
 */
#include <CUnit/CUnit.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attention.h"
#include "check.h"
#include "ops/ops.h"

// Float32 against a float64 reference on sums of ≤ 12 terms of size ~1-10:
// a few float32 roundings, ~1e-6; 1e-5 keeps a margin of ~10.
#define ATOL 1e-5f
#define RTOL 1e-5f

/* ---------------------------------------------------------------- golden */

// One tensor of attn_pieces.safetensors, owned (free it).
static Tensor golden(const char *name) { return golden_tensor("attn_pieces.safetensors", name); }

// One tensor of attention_cases.safetensors, owned (free it).
static Tensor golden_case(const char *name) {
    return golden_tensor("attention_cases.safetensors", name);
}

/* -------------------------------------------------------------- one head */

// Runs attention() on the golden q, k, v with an optional mask and compares
// output and probabilities with torch's. Returns the probabilities (owned).
static Tensor check_one_head(const char *label, const char *mask_name) {
    Tensor q = golden("head.q"), k = golden("head.k"), v = golden("head.v");
    Tensor mask = mask_name ? golden(mask_name) : (Tensor){0};
    const int N = q.shape[0], Dh = q.shape[1];
    Tensor out = tensor_new(2, N, Dh), probs = tensor_new(2, N, N);
    AttentionOptions opt = {.mask = mask_name ? mask.data : NULL};
    attention(out.data, probs.data, q.data, k.data, v.data, &opt, N, Dh);
    char name[64];
    snprintf(name, sizeof name, "head.%s.out", label);
    Tensor want_out = golden(name);
    assert_tensor_close(&out, &want_out, ATOL, RTOL, name);
    snprintf(name, sizeof name, "head.%s.probs", label);
    Tensor want_probs = golden(name);
    assert_tensor_close(&probs, &want_probs, ATOL, RTOL, name);
    for (int i = 0; i < N; i++) { // every row a distribution
        double sum = 0;
        for (int j = 0; j < N; j++) sum += probs.data[i * N + j];
        CU_ASSERT_DOUBLE_EQUAL(sum, 1.0, 1e-6);
    }
    tensor_free(&q), tensor_free(&k), tensor_free(&v), tensor_free(&mask);
    tensor_free(&out), tensor_free(&want_out), tensor_free(&want_probs);
    return probs;
}

static void test_one_head_matches_pytorch(void) {
    Tensor probs = check_one_head("plain", NULL);
    tensor_free(&probs);
}

static void test_padding_mask_hides_keys(void) {
    Tensor probs = check_one_head("pad", "head.mask_pad");
    const int N = probs.shape[0];
    // the last two keys are padding: no query may look at them, not even a little
    for (int i = 0; i < N; i++)
        for (int j = N - 2; j < N; j++) CU_ASSERT_EQUAL(probs.data[i * N + j], 0.0f);
    tensor_free(&probs);
}

static void test_causal_mask_hides_the_future(void) {
    Tensor probs = check_one_head("causal", "head.mask_causal");
    const int N = probs.shape[0];
    for (int i = 0; i < N; i++)
        for (int j = i + 1; j < N; j++) CU_ASSERT_EQUAL(probs.data[i * N + j], 0.0f);
    CU_ASSERT_EQUAL(probs.data[0], 1.0f); // the first token can only look at itself
    tensor_free(&probs);
}

/* ------------------------------------------------------ attention options */

// Scaled scores of several hundred: e^x is inf in float32 beyond 88.72, so a
// softmax that does not subtract the row maximum gives inf / inf = NaN here.
static void test_scores_of_several_hundred_do_not_overflow(void) {
    Tensor q = golden_case("overflow.q"), k = golden_case("overflow.k");
    Tensor v = golden_case("overflow.v");
    Tensor want_scaled = golden_case("overflow.scaled"), want_probs = golden_case("overflow.probs");
    Tensor want_out = golden_case("overflow.out");
    const int N = q.shape[0], Dh = q.shape[1];
    Tensor scaled = tensor_new(2, N, N), probs = tensor_new(2, N, N), out = tensor_new(2, N, Dh);
    attention_scores(scaled.data, q.data, k.data, 1, N, Dh);
    attention_scale_mask(scaled.data, scaled.data, NULL, 1, 1, N, Dh);
    assert_tensor_close(&scaled, &want_scaled, 1e-4f, 1e-4f,
                        "attention scaled scores (overflow case)");
    for (int i = 0; i < N; i++) { // every row holds a score whose e^x is inf in float32
        float top = scaled.data[i * N];
        for (int j = 1; j < N; j++) top = fmaxf(top, scaled.data[i * N + j]);
        CU_ASSERT(top > logf(FLT_MAX));
    }
    attention(out.data, probs.data, q.data, k.data, v.data, NULL, N, Dh);
    assert_tensor_close(&probs, &want_probs, 1e-4f, 1e-4f,
                        "attention probs with scaled scores of several hundred (e^x overflows "
                        "float32 unless softmax subtracts each row's maximum first)");
    assert_tensor_close(&out, &want_out, 1e-4f, 1e-4f, "attention output (overflow case)");
    tensor_free(&q), tensor_free(&k), tensor_free(&v), tensor_free(&want_scaled);
    tensor_free(&want_probs), tensor_free(&want_out), tensor_free(&scaled), tensor_free(&probs);
    tensor_free(&out);
}

CU_TestInfo tests_attention[] = {
    {"one head equals PyTorch", test_one_head_matches_pytorch},
    {"padding mask: masked probabilities are exactly 0", test_padding_mask_hides_keys},
    {"causal mask: the future gets exactly 0", test_causal_mask_hides_the_future},
    {"scores of several hundred: probs equal torch (no exp overflow)",
     test_scores_of_several_hundred_do_not_overflow},
    CU_TEST_INFO_NULL,
};
