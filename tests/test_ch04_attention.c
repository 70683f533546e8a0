/**
 * @file test_ch04_attention.c
 * @brief Chapter 04 against PyTorch, and the claims it makes about one attention head.
 *
 * `build/tests/run ch04_attention` grades a student's own attention pieces
 * too: the claims below call attention_scores(), attention_scale_mask(),
 * attention_context(), attention() and attention_entropy() from lib (or
 * whatever replaced them).
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <string.h>

#include "../chapters/chapters.h"
#include "attention.h"
#include "check.h"
#include "ops.h"
#include "rng.h"
#include "trace.h"

enum { N = 6, DH = 5 };

// Random q, k, v of shape (N, DH) from one seed.
static void random_qkv(float *q, float *k, float *v, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed);
    rng_fill_normal(&rng, q, N * DH, 0.0f, 1.0f);
    rng_fill_normal(&rng, k, N * DH, 0.0f, 1.0f);
    rng_fill_normal(&rng, v, N * DH, 0.0f, 1.0f);
}

static void test_chapter_matches_pytorch(void) {
    check_chapter_against_golden(chapter04_run, "ch04_attention.safetensors");
}

static void test_rows_are_probabilities(void) {
    float q[N * DH], k[N * DH], v[N * DH], out[N * DH], probs[N * N];
    random_qkv(q, k, v, 41);
    attention(out, probs, q, k, v, NULL, N, DH);
    for (int i = 0; i < N; i++) {
        double sum = 0;
        for (int j = 0; j < N; j++) {
            CU_ASSERT(probs[i * N + j] > 0.0f);
            sum += probs[i * N + j];
        }
        CU_ASSERT_DOUBLE_EQUAL(sum, 1.0, 1e-6);
    }
}

static void test_scale_is_one_over_sqrt_dh(void) {
    float scores[2 * 2] = {4.0f, -2.0f, 0.0f, 8.0f}, scaled[4];
    float mask[4] = {0.0f, -INFINITY, 0.0f, 0.0f};
    attention_scale_mask(scaled, scores, NULL, 1, 1, 2, 16); // 1/√16 = 0.25
    CU_ASSERT_EQUAL(scaled[0], 1.0f);
    CU_ASSERT_EQUAL(scaled[1], -0.5f);
    CU_ASSERT_EQUAL(scaled[3], 2.0f);
    attention_scale_mask(scaled, scores, &(AttentionOptions){.mask = mask}, 1, 1, 2, 16);
    CU_ASSERT(isinf(scaled[1]) && scaled[1] < 0);
    CU_ASSERT_EQUAL(scaled[0], 1.0f);
    CU_ASSERT_EQUAL(attention_scale(NULL, 16), 0.25f);
    CU_ASSERT_EQUAL(attention_scale(&(AttentionOptions){0}, 16), 0.25f); // 0: the default
}

static void test_a_chosen_scale_replaces_the_default(void) {
    // timm's qk_scale: scores × scale, whatever Dh is
    float scores[2 * 2] = {4.0f, -2.0f, 0.0f, 8.0f}, scaled[4];
    AttentionOptions opt = {.scale = 2.0f};
    CU_ASSERT_EQUAL(attention_scale(&opt, 16), 2.0f);
    attention_scale_mask(scaled, scores, &opt, 1, 1, 2, 16);
    for (int i = 0; i < 4; i++) CU_ASSERT_EQUAL(scaled[i], 2.0f * scores[i]);
    // attention() with scale 1/√Dh spelled out equals attention() with no options
    float q[N * DH], k[N * DH], v[N * DH], out1[N * DH], out2[N * DH], p1[N * N], p2[N * N];
    random_qkv(q, k, v, 46);
    attention(out1, p1, q, k, v, NULL, N, DH);
    attention(out2, p2, q, k, v, &(AttentionOptions){.scale = 1.0f / sqrtf((float)DH)}, N, DH);
    CU_ASSERT_EQUAL(memcmp(p1, p2, sizeof p1), 0);
    CU_ASSERT_EQUAL(memcmp(out1, out2, sizeof out1), 0);
}

static void test_larger_scale_sharpens_every_row(void) {
    // the chapter's claim: at scales 1/Dh < 1/√Dh < 1 every row's largest
    // weight grows and its entropy falls
    TraceRecorder rec = {0};
    Chapter ch = {.out = NULL, .pin = trace_record, .pin_user = &rec};
    chapter04_run(&ch);
    const Tensor *top = trace_find(&rec, "row_max_by_scale");
    const Tensor *ent = trace_find(&rec, "row_entropy_by_scale");
    CU_ASSERT_PTR_NOT_NULL_FATAL(top);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ent);
    CU_ASSERT_EQUAL_FATAL(top->shape[0], 3);
    int n = top->shape[1];
    for (int s = 1; s < 3; s++)
        for (int i = 0; i < n; i++) {
            CU_ASSERT(top->data[s * n + i] > top->data[(s - 1) * n + i]);
            CU_ASSERT(ent->data[s * n + i] < ent->data[(s - 1) * n + i]);
        }
    trace_recorder_free(&rec);
}

static void test_entropy_of_rows(void) {
    float p[3 * 4] = {1, 0, 0, 0, 0.25f, 0.25f, 0.25f, 0.25f, 0.5f, 0.5f, 0, 0}, h[3];
    attention_entropy(h, p, 3, 4);
    CU_ASSERT_EQUAL(h[0], 0.0f); // one key takes everything (0 ln 0 counts 0)
    CU_ASSERT_DOUBLE_EQUAL(h[1], log(4.0), 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(h[2], log(2.0), 1e-6);
}

static void test_equal_keys_give_the_average_value(void) {
    // every key the same: every score in a row is equal, softmax is uniform,
    // and each output is the plain mean of the value rows
    float q[N * DH], k[N * DH], v[N * DH], out[N * DH], probs[N * N];
    random_qkv(q, k, v, 42);
    for (int j = 1; j < N; j++) memcpy(&k[j * DH], k, DH * sizeof(float));
    attention(out, probs, q, k, v, NULL, N, DH);
    for (int d = 0; d < DH; d++) {
        double mean = 0;
        for (int j = 0; j < N; j++) mean += v[j * DH + d];
        mean /= N;
        for (int i = 0; i < N; i++) CU_ASSERT_DOUBLE_EQUAL(out[i * DH + d], mean, 1e-5);
    }
}

static void test_one_call_equals_the_steps(void) {
    float q[N * DH], k[N * DH], v[N * DH], out[N * DH], probs[N * N];
    float scores[N * N], scaled[N * N], p[N * N], o[N * DH];
    random_qkv(q, k, v, 43);
    attention(out, probs, q, k, v, NULL, N, DH);
    attention_scores(scores, q, k, 1, N, DH);
    attention_scale_mask(scaled, scores, NULL, 1, 1, N, DH);
    softmax(p, scaled, N, N);
    attention_context(o, p, v, 1, N, DH);
    for (int i = 0; i < N * N; i++) CU_ASSERT_DOUBLE_EQUAL(probs[i], p[i], 1e-6);
    for (int i = 0; i < N * DH; i++) CU_ASSERT_DOUBLE_EQUAL(out[i], o[i], 1e-6);
}

static void test_padding_cannot_leak(void) {
    // changing a padded token's value must not change any real token's output
    float q[N * DH], k[N * DH], v[N * DH], mask[N * N];
    float out1[N * DH], out2[N * DH], probs[N * N];
    random_qkv(q, k, v, 44);
    attention_mask_padding(mask, N, N - 2); // the last two tokens are padding
    AttentionOptions opt = {.mask = mask};
    attention(out1, probs, q, k, v, &opt, N, DH);
    for (int i = 0; i < N; i++) {
        CU_ASSERT_EQUAL(probs[i * N + N - 1], 0.0f);
        CU_ASSERT_EQUAL(probs[i * N + N - 2], 0.0f);
    }
    for (int d = 0; d < DH; d++) v[(N - 1) * DH + d] += 100.0f;
    attention(out2, probs, q, k, v, &opt, N, DH);
    for (int i = 0; i < N * DH; i++) CU_ASSERT_EQUAL(out1[i], out2[i]);
}

static void test_causal_mask_hides_the_future(void) {
    float q[N * DH], k[N * DH], v[N * DH], mask[N * N], out[N * DH], probs[N * N];
    random_qkv(q, k, v, 45);
    attention_mask_causal(mask, N);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            if (j <= i) {
                CU_ASSERT_EQUAL(mask[i * N + j], 0.0f);
            } else {
                CU_ASSERT(isinf(mask[i * N + j]) && mask[i * N + j] < 0);
            }
        }
    attention(out, probs, q, k, v, &(AttentionOptions){.mask = mask}, N, DH);
    for (int i = 0; i < N; i++)
        for (int j = i + 1; j < N; j++) CU_ASSERT_EQUAL(probs[i * N + j], 0.0f);
    for (int d = 0; d < DH; d++) CU_ASSERT_DOUBLE_EQUAL(out[d], v[d], 1e-6); // token 0 copies v_0
}

static void test_a_key_padding_row_equals_the_shared_mask(void) {
    // one sequence: a (1, N) key-padding mask acts as the (N, N) padding mask
    float q[N * DH], k[N * DH], v[N * DH], mask[N * N], pad[N];
    float out1[N * DH], out2[N * DH], p1[N * N], p2[N * N];
    random_qkv(q, k, v, 47);
    int length = N - 2;
    attention_mask_padding(mask, N, length);
    attention_mask_key_padding(pad, &length, 1, N);
    attention(out1, p1, q, k, v, &(AttentionOptions){.mask = mask}, N, DH);
    attention(out2, p2, q, k, v, &(AttentionOptions){.key_padding_mask = pad}, N, DH);
    CU_ASSERT_EQUAL(memcmp(p1, p2, sizeof p1), 0);
    CU_ASSERT_EQUAL(memcmp(out1, out2, sizeof out1), 0);
}

static void test_padding_mask_layout(void) {
    float mask[3 * 3];
    attention_mask_padding(mask, 3, 2);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(mask[i * 3 + 0], 0.0f);
        CU_ASSERT_EQUAL(mask[i * 3 + 1], 0.0f);
        CU_ASSERT(isinf(mask[i * 3 + 2]) && mask[i * 3 + 2] < 0);
    }
    attention_mask_padding(mask, 3, 3); // nothing padded: all zeros
    for (int i = 0; i < 9; i++) CU_ASSERT_EQUAL(mask[i], 0.0f);
    // a key-padding mask: one row per sequence, (B, N)
    const int lengths[3] = {3, 1, 0};
    float pad[3 * 3];
    attention_mask_key_padding(pad, lengths, 3, 3);
    for (int b = 0; b < 3; b++)
        for (int j = 0; j < 3; j++) {
            if (j < lengths[b]) {
                CU_ASSERT_EQUAL(pad[b * 3 + j], 0.0f);
            } else {
                CU_ASSERT(isinf(pad[b * 3 + j]) && pad[b * 3 + j] < 0);
            }
        }
}

CU_TestInfo tests_ch04_attention[] = {
    {"chapter matches PyTorch golden", test_chapter_matches_pytorch},
    {"attention rows are probabilities", test_rows_are_probabilities},
    {"scores are scaled by 1/sqrt(Dh), then masked", test_scale_is_one_over_sqrt_dh},
    {"a chosen scale (qk_scale) replaces 1/sqrt(Dh)", test_a_chosen_scale_replaces_the_default},
    {"a larger scale sharpens every row", test_larger_scale_sharpens_every_row},
    {"entropy of attention rows", test_entropy_of_rows},
    {"equal keys give the average value", test_equal_keys_give_the_average_value},
    {"attention() equals its steps", test_one_call_equals_the_steps},
    {"padding cannot leak into real tokens", test_padding_cannot_leak},
    {"causal mask hides the future", test_causal_mask_hides_the_future},
    {"a (1, N) key-padding mask equals the (N, N) padding mask",
     test_a_key_padding_row_equals_the_shared_mask},
    {"padding and key-padding mask layout", test_padding_mask_layout},
    CU_TEST_INFO_NULL,
};
