/**
 * @file test_mha.c
 * @brief Multi-head attention against PyTorch, chapter 05's stage: the head
 *        split/merge and mha_forward() against torch's own nn.MultiheadAttention
 *        (tests/golden/attn_pieces.safetensors, written by tools/gen_golden_vit.py
 *        in float64); and the options (tests/golden/attention_cases.safetensors,
 *        tools/gen_golden.py, float64): a (B, N) key-padding mask alone and with a
 *        causal mask, a chosen scale, the fused-qkv permute. One head, chapter
 *        04's, is test_attention.c's.
 */
#include <CUnit/CUnit.h>
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

// One tensor of attn_pieces.safetensors, owned (free it).
static Tensor golden(const char *name) { return golden_tensor("attn_pieces.safetensors", name); }

// One tensor of attention_cases.safetensors, owned (free it).
static Tensor golden_case(const char *name) {
    return golden_tensor("attention_cases.safetensors", name);
}

/* ------------------------------------------------------ heads split/merge */

static void test_heads_split_is_reshape_permute(void) {
    Tensor x = golden("heads.x"), want = golden("heads.split");
    const int B = want.shape[0], H = want.shape[1], N = want.shape[2], Dh = want.shape[3];
    Tensor split = tensor_new(4, B, H, N, Dh), merged = tensor_new(3, B, N, H * Dh);
    heads_split(split.data, x.data, B, N, H, Dh);
    assert_tensor_close(&split, &want, 0.0f, 0.0f, "heads_split"); // pure data movement: exact
    heads_merge(merged.data, want.data, B, N, H, Dh);
    assert_tensor_close(&merged, &x, 0.0f, 0.0f, "heads_merge(torch's split)");
    tensor_free(&x), tensor_free(&want), tensor_free(&split), tensor_free(&merged);
}

static void test_merge_after_split_is_identity(void) {
    enum { B = 3, N = 7, H = 4, Dh = 5 };
    Tensor x = tensor_new(3, B, N, H * Dh), s = tensor_new(4, B, H, N, Dh);
    Tensor back = tensor_new(3, B, N, H * Dh), again = tensor_new(4, B, H, N, Dh);
    for (size_t i = 0; i < x.numel; i++) x.data[i] = (float)i; // every element distinct
    heads_split(s.data, x.data, B, N, H, Dh);
    heads_merge(back.data, s.data, B, N, H, Dh);
    assert_tensor_close(&back, &x, 0.0f, 0.0f, "merge(split(x))");
    heads_split(again.data, back.data, B, N, H, Dh);
    assert_tensor_close(&again, &s, 0.0f, 0.0f, "split(merge(y))");
    // and split really moves things: head 1 of token 0 starts at feature Dh
    CU_ASSERT_EQUAL(s.data[(size_t)1 * N * Dh], (float)Dh);
    tensor_free(&x), tensor_free(&s), tensor_free(&back), tensor_free(&again);
}

/* ------------------------------------------------------------ many heads */

/** Multi-head attention on the golden input, recording every traced stage. */
typedef struct {
    Tensor x, qkv_w, qkv_b, proj_w, proj_b;
    int B, N, D, H;
} MhaCase;

static MhaCase mha_case(void) {
    MhaCase c = {golden("mha.x"), golden("mha.qkv_w"), golden("mha.qkv_b"), golden("mha.proj_w"),
                 golden("mha.proj_b"), 0, 0, 0, 3};
    c.B = c.x.shape[0], c.N = c.x.shape[1], c.D = c.x.shape[2];
    return c;
}

static void mha_case_free(MhaCase *c) {
    tensor_free(&c->x), tensor_free(&c->qkv_w), tensor_free(&c->qkv_b);
    tensor_free(&c->proj_w), tensor_free(&c->proj_b);
}

// timm's layout: q, k, v are row blocks of one fused (3D, D) weight.
static AttentionWeights fused(const MhaCase *c) {
    const size_t DD = (size_t)c->D * c->D;
    return (AttentionWeights){.q_w = c->qkv_w.data, .k_w = c->qkv_w.data + DD,
                              .v_w = c->qkv_w.data + 2 * DD, .q_b = c->qkv_b.data,
                              .k_b = c->qkv_b.data + c->D, .v_b = c->qkv_b.data + 2 * c->D,
                              .proj_w = c->proj_w.data, .proj_b = c->proj_b.data};
}

static void record(void *user, const char *name, const Tensor *t) { trace_record(user, name, t); }

// Runs mha_forward; returns its output (owned) and fills the recorder.
static Tensor run_mha(const MhaCase *c, const AttentionWeights *w, const float *mask,
                      TraceRecorder *rec) {
    float *mem = malloc(mha_scratch_floats(c->B, c->N, c->D, c->H) * sizeof(float));
    MhaScratch s;
    mha_scratch_carve(&s, mem, c->B, c->N, c->D, c->H);
    Tensor out = tensor_new(3, c->B, c->N, c->D);
    // out and the scratch start as NaN: an element never written fails
    check_poison(out.data, out.numel);
    check_poison(mem, mha_scratch_floats(c->B, c->N, c->D, c->H));
    Tracer tr = {rec ? record : NULL, rec, "attn."};
    AttentionOptions opt = {.mask = mask};
    mha_forward(out.data, c->x.data, w, &opt, &s, c->B, c->N, c->D, c->H, &tr);
    free(mem);
    return out;
}

static void check_mha(const char *label, const char *mask_name) {
    MhaCase c = mha_case();
    AttentionWeights w = fused(&c);
    Tensor mask = mask_name ? golden(mask_name) : (Tensor){0};
    TraceRecorder rec = {0};
    Tensor out = run_mha(&c, &w, mask_name ? mask.data : NULL, &rec);
    char name[64];
    snprintf(name, sizeof name, "mha.%s.out", label);
    Tensor want = golden(name);
    assert_tensor_close(&out, &want, ATOL, RTOL, name);
    snprintf(name, sizeof name, "mha.%s.probs", label);
    Tensor want_probs = golden(name);
    const Tensor *probs = trace_find(&rec, "attn.probs");
    CU_ASSERT_PTR_NOT_NULL_FATAL(probs);
    assert_tensor_close(probs, &want_probs, ATOL, RTOL, name);
    // the traced projection is the output
    const Tensor *proj = trace_find(&rec, "attn.proj");
    CU_ASSERT_PTR_NOT_NULL_FATAL(proj);
    assert_tensor_close(proj, &out, 0.0f, 0.0f, "attn.proj is the output");
    trace_recorder_free(&rec);
    tensor_free(&out), tensor_free(&want), tensor_free(&want_probs), tensor_free(&mask);
    mha_case_free(&c);
}

static void test_mha_matches_torch_multihead_attention(void) { check_mha("plain", NULL); }
static void test_mha_with_causal_mask_matches_torch(void) {
    check_mha("causal", "mha.mask_causal");
}

static void test_mha_emits_every_stage_in_order(void) {
    MhaCase c = mha_case();
    AttentionWeights w = fused(&c);
    TraceRecorder rec = {0};
    Tensor out = run_mha(&c, &w, NULL, &rec);
    static const char *const names[] = {"attn.q",      "attn.k",      "attn.v",
                                        "attn.scores", "attn.scaled", "attn.probs",
                                        "attn.context", "attn.proj"};
    const int B = c.B, H = c.H, N = c.N, D = c.D, Dh = D / H;
    const int shapes[8][4] = {{B, H, N, Dh}, {B, H, N, Dh}, {B, H, N, Dh}, {B, H, N, N},
                              {B, H, N, N},  {B, H, N, N},  {B, N, D},     {B, N, D}};
    CU_ASSERT_EQUAL_FATAL(rec.count, 8);
    for (int i = 0; i < 8; i++) {
        CU_ASSERT_STRING_EQUAL(rec.entries[i].name, names[i]);
        Tensor want = tensor_view(NULL, i < 6 ? 4 : 3, shapes[i][0], shapes[i][1], shapes[i][2],
                                  shapes[i][3]);
        CU_ASSERT_TRUE(tensor_same_shape(&rec.entries[i].t, &want));
    }
    // scaled is scores / √Dh
    const Tensor *scores = trace_find(&rec, "attn.scores"), *scaled = trace_find(&rec, "attn.scaled");
    for (size_t i = 0; i < scores->numel; i++)
        CU_ASSERT_DOUBLE_EQUAL(scaled->data[i], scores->data[i] / sqrt(Dh),
                               1e-6 * (1 + fabs(scores->data[i])));
    trace_recorder_free(&rec);
    tensor_free(&out);
    mha_case_free(&c);
}

// timm's fused (3D, D) qkv and three separate (D, D) weights (Hugging Face's
// query/key/value) are the same layer: same output, bit for bit.
static void test_fused_qkv_equals_separate_weights(void) {
    MhaCase c = mha_case();
    AttentionWeights w = fused(&c);
    const size_t DD = (size_t)c.D * c.D;
    float *q = malloc(DD * sizeof(float)), *k = malloc(DD * sizeof(float));
    float *v = malloc(DD * sizeof(float)), *b = malloc(3 * (size_t)c.D * sizeof(float));
    memcpy(q, w.q_w, DD * sizeof(float));
    memcpy(k, w.k_w, DD * sizeof(float));
    memcpy(v, w.v_w, DD * sizeof(float));
    memcpy(b, c.qkv_b.data, 3 * (size_t)c.D * sizeof(float));
    AttentionWeights sep = {.q_w = q, .k_w = k, .v_w = v, .q_b = b + 2 * c.D, .k_b = b + c.D,
                            .v_b = b, .proj_w = w.proj_w, .proj_b = w.proj_b};
    // biases deliberately stored in another order: only the pointers matter
    memcpy(b + 2 * c.D, c.qkv_b.data, (size_t)c.D * sizeof(float));
    memcpy(b, c.qkv_b.data + 2 * c.D, (size_t)c.D * sizeof(float));
    Tensor a = run_mha(&c, &w, NULL, NULL), s = run_mha(&c, &sep, NULL, NULL);
    assert_tensor_close(&s, &a, 0.0f, 0.0f, "separate q/k/v vs fused qkv");
    free(q), free(k), free(v), free(b);
    tensor_free(&a), tensor_free(&s);
    mha_case_free(&c);
}

static void test_missing_biases_are_zeros(void) {
    MhaCase c = mha_case();
    AttentionWeights w = fused(&c), none = w;
    none.q_b = none.k_b = none.v_b = none.proj_b = NULL;
    float *zeros = calloc(3 * (size_t)c.D, sizeof(float));
    w.q_b = zeros, w.k_b = zeros + c.D, w.v_b = zeros + 2 * c.D, w.proj_b = zeros;
    Tensor a = run_mha(&c, &w, NULL, NULL), b = run_mha(&c, &none, NULL, NULL);
    assert_tensor_close(&b, &a, 0.0f, 0.0f, "NULL biases vs zero biases");
    free(zeros);
    tensor_free(&a), tensor_free(&b);
    mha_case_free(&c);
}

/* ------------------------------------------------------ attention options */

/** The batch of attention_cases.safetensors: two sequences of lengths 5 and 2. */
typedef struct {
    Tensor x, qkv_w, qkv_b, proj_w, proj_b, lengths, causal;
    int B, N, D, H;
    AttentionWeights w;
} PadCase;

static PadCase pad_case(void) {
    PadCase c = {golden_case("pad.x"), golden_case("pad.qkv_w"), golden_case("pad.qkv_b"),
                 golden_case("pad.proj_w"), golden_case("pad.proj_b"),
                 golden_case("pad.lengths"), golden_case("pad.causal"), 0, 0, 0, 2, {0}};
    c.B = c.x.shape[0], c.N = c.x.shape[1], c.D = c.x.shape[2];
    const size_t DD = (size_t)c.D * c.D;
    c.w = (AttentionWeights){.q_w = c.qkv_w.data, .k_w = c.qkv_w.data + DD,
                             .v_w = c.qkv_w.data + 2 * DD, .q_b = c.qkv_b.data,
                             .k_b = c.qkv_b.data + c.D, .v_b = c.qkv_b.data + 2 * c.D,
                             .proj_w = c.proj_w.data, .proj_b = c.proj_b.data};
    return c;
}

static void pad_case_free(PadCase *c) {
    tensor_free(&c->x), tensor_free(&c->qkv_w), tensor_free(&c->qkv_b);
    tensor_free(&c->proj_w), tensor_free(&c->proj_b), tensor_free(&c->lengths);
    tensor_free(&c->causal);
}

// mha_forward() on the batch with `opt`; compares output and probs with the golden `label`.
static void check_pad_case(const PadCase *c, const AttentionOptions *opt, const char *label) {
    float *mem = malloc(mha_scratch_floats(c->B, c->N, c->D, c->H) * sizeof(float));
    MhaScratch s;
    mha_scratch_carve(&s, mem, c->B, c->N, c->D, c->H);
    TraceRecorder rec = {0};
    Tracer tr = {record, &rec, NULL};
    Tensor out = tensor_new(3, c->B, c->N, c->D);
    check_poison(out.data, out.numel); // an element never written fails
    check_poison(mem, mha_scratch_floats(c->B, c->N, c->D, c->H));
    mha_forward(out.data, c->x.data, &c->w, opt, &s, c->B, c->N, c->D, c->H, &tr);
    char name[64];
    snprintf(name, sizeof name, "%s.out", label);
    Tensor want = golden_case(name);
    assert_tensor_close(&out, &want, ATOL, RTOL, name);
    snprintf(name, sizeof name, "%s.probs", label);
    Tensor want_probs = golden_case(name);
    const Tensor *probs = trace_find(&rec, "probs");
    CU_ASSERT_PTR_NOT_NULL_FATAL(probs);
    assert_tensor_close(probs, &want_probs, ATOL, RTOL, name);
    trace_recorder_free(&rec);
    tensor_free(&out), tensor_free(&want), tensor_free(&want_probs);
    free(mem);
}

static void test_key_padding_mask_matches_torch(void) {
    PadCase c = pad_case();
    int lengths[2] = {(int)c.lengths.data[0], (int)c.lengths.data[1]};
    float pad[2 * 5];
    CU_ASSERT_EQUAL_FATAL(c.B * c.N, 2 * 5);
    attention_mask_key_padding(pad, lengths, c.B, c.N);
    // nn.MultiheadAttention(key_padding_mask=~keep): True hides a key
    check_pad_case(&c, &(AttentionOptions){.key_padding_mask = pad}, "pad.pad");
    // both masks at once: nn.MultiheadAttention(attn_mask=causal, key_padding_mask=~keep)
    check_pad_case(&c, &(AttentionOptions){.key_padding_mask = pad, .mask = c.causal.data},
                   "pad.pad_causal");
    pad_case_free(&c);
}

static void test_chosen_scale_matches_torch(void) {
    PadCase c = pad_case();
    check_pad_case(&c, &(AttentionOptions){.scale = 1.0f}, "scale1"); // timm's qk_scale=1
    pad_case_free(&c);
}

static void test_heads_split_qkv_is_torch_permute(void) {
    Tensor x = golden_case("qkv.x"), want = golden_case("qkv.split"); // (3·B, H, N, Dh)
    const int B = want.shape[0] / 3, H = want.shape[1], N = want.shape[2], Dh = want.shape[3];
    Tensor split = tensor_new(4, 3 * B, H, N, Dh); // (3, B, H, N, Dh) with q, k, v stacked
    heads_split_qkv(split.data, x.data, B, N, H, Dh);
    assert_tensor_close(&split, &want, 0.0f, 0.0f, "heads_split_qkv"); // data movement: exact
    tensor_free(&x), tensor_free(&want), tensor_free(&split);
}
CU_TestInfo tests_mha[] = {
    {"heads split/merge equal torch reshape/permute", test_heads_split_is_reshape_permute},
    {"merge after split is the identity", test_merge_after_split_is_identity},
    {"multi-head equals torch nn.MultiheadAttention", test_mha_matches_torch_multihead_attention},
    {"multi-head with causal mask equals torch", test_mha_with_causal_mask_matches_torch},
    {"multi-head emits q k v scores scaled probs context proj", test_mha_emits_every_stage_in_order},
    {"fused qkv equals separate q/k/v weights", test_fused_qkv_equals_separate_weights},
    {"NULL biases act as zeros", test_missing_biases_are_zeros},
    {"(B, N) key-padding mask, alone and with a causal mask, equals torch",
     test_key_padding_mask_matches_torch},
    {"a chosen scale (qk_scale = 1) equals torch", test_chosen_scale_matches_torch},
    {"heads_split_qkv equals torch reshape/permute for B = 2",
     test_heads_split_qkv_is_torch_permute},
    CU_TEST_INFO_NULL,
};
