/**
 * @file test_ch05_multi_head.c
 * @brief Chapter 05 against PyTorch, and the claims it makes about multi-head attention.
 *
 * `build/tests/run ch05_multi_head` grades a student's own heads_split(),
 * heads_split_qkv(), heads_merge() and mha_forward() too: the claims below
 * call lib's versions (or whatever replaced them at link time).
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../chapters/chapters.h"
#include "attention.h"
#include "check.h"
#include "ops.h"
#include "rng.h"
#include "trace.h"
#include "vit.h"

// A random multi-head attention layer of width D: fused qkv (3D, D) + proj.
typedef struct {
    int D, H;
    float *w_qkv, *b_qkv, *w_proj, *b_proj;
    AttentionWeights w;
} RandomLayer;

static RandomLayer layer_new(int D, int H, uint64_t seed) {
    RandomLayer L = {.D = D, .H = H};
    L.w_qkv = malloc(sizeof(float) * 3 * D * D);
    L.b_qkv = malloc(sizeof(float) * 3 * D);
    L.w_proj = malloc(sizeof(float) * D * D);
    L.b_proj = malloc(sizeof(float) * D);
    Rng rng;
    rng_seed(&rng, seed);
    rng_fill_normal(&rng, L.w_qkv, 3 * D * D, 0.0f, 0.3f);
    rng_fill_normal(&rng, L.b_qkv, 3 * D, 0.0f, 0.1f);
    rng_fill_normal(&rng, L.w_proj, D * D, 0.0f, 0.3f);
    rng_fill_normal(&rng, L.b_proj, D, 0.0f, 0.1f);
    L.w = (AttentionWeights){.q_w = L.w_qkv, .k_w = L.w_qkv + D * D, .v_w = L.w_qkv + 2 * D * D,
                             .q_b = L.b_qkv, .k_b = L.b_qkv + D, .v_b = L.b_qkv + 2 * D,
                             .proj_w = L.w_proj, .proj_b = L.b_proj};
    return L;
}

static void layer_free(RandomLayer *L) {
    free(L->w_qkv);
    free(L->b_qkv);
    free(L->w_proj);
    free(L->b_proj);
}

// out (B, N, D) = mha_forward(x) with options (NULL: none), its own scratch; trace optional.
static void run_mha_with(float *out, const float *x, const RandomLayer *L,
                         const AttentionOptions *opt, int B, int N, const Tracer *tr) {
    float *mem = malloc(sizeof(float) * mha_scratch_floats(B, N, L->D, L->H));
    MhaScratch s;
    mha_scratch_carve(&s, mem, B, N, L->D, L->H);
    mha_forward(out, x, &L->w, opt, &s, B, N, L->D, L->H, tr);
    free(mem);
}

static void run_mha(float *out, const float *x, const RandomLayer *L, int B, int N,
                    const Tracer *tr) {
    run_mha_with(out, x, L, NULL, B, N, tr);
}

static void test_chapter_matches_pytorch(void) {
    check_chapter_against_golden(chapter05_run, "ch05_multi_head.safetensors");
}

static void test_heads_split_layout(void) {
    // out[b, h, n, d] = x[b, n, h·Dh + d]
    enum { B = 2, N = 3, H = 4, DH = 2, D = H * DH };
    float x[B * N * D], out[B * H * N * DH];
    for (int i = 0; i < B * N * D; i++) x[i] = (float)i;
    heads_split(out, x, B, N, H, DH);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int n = 0; n < N; n++)
                for (int d = 0; d < DH; d++)
                    CU_ASSERT_EQUAL(out[((b * H + h) * N + n) * DH + d],
                                    x[(b * N + n) * D + h * DH + d]);
}

static void test_heads_split_qkv_is_the_permute(void) {
    // out[s, b, h, n, d] = qkv[b, n, s·D + h·Dh + d]: (B, N, 3, H, Dh) → (3, B, H, N, Dh)
    enum { B = 2, N = 3, H = 2, DH = 2, D = H * DH };
    float qkv[B * N * 3 * D], out[3 * B * H * N * DH], split[B * 3 * H * N * DH];
    for (int i = 0; i < B * N * 3 * D; i++) qkv[i] = (float)i;
    heads_split_qkv(out, qkv, B, N, H, DH);
    for (int s = 0; s < 3; s++)
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++)
                for (int n = 0; n < N; n++)
                    for (int d = 0; d < DH; d++)
                        CU_ASSERT_EQUAL(out[(((s * B + b) * H + h) * N + n) * DH + d],
                                        qkv[(b * N + n) * 3 * D + s * D + h * DH + d]);
    // for one image it is a split into 3H heads; for two it is not
    heads_split(split, qkv, 1, N, 3 * H, DH);
    heads_split_qkv(out, qkv, 1, N, H, DH);
    CU_ASSERT_EQUAL(memcmp(split, out, sizeof(float) * 3 * H * N * DH), 0);
    heads_split(split, qkv, B, N, 3 * H, DH);
    heads_split_qkv(out, qkv, B, N, H, DH);
    CU_ASSERT_NOT_EQUAL(memcmp(split, out, sizeof split), 0);
}

static void test_key_padding_hides_each_sequence_its_own_padding(void) {
    // a batch of two, N = 5: sequence 0 whole, sequence 1 with 3 real tokens
    enum { B = 2, N = 5, D = 6, H = 2, LEN1 = 3 };
    const int lengths[B] = {N, LEN1};
    RandomLayer L = layer_new(D, H, 57);
    float x[B * N * D], pad[B * N], out[B * N * D], again[B * N * D], alone[LEN1 * D];
    Rng rng;
    rng_seed(&rng, 58);
    rng_fill_normal(&rng, x, B * N * D, 0.0f, 1.0f);
    attention_mask_key_padding(pad, lengths, B, N);
    AttentionOptions opt = {.key_padding_mask = pad};
    TraceRecorder rec = {0};
    Tracer tr = {trace_record, &rec, NULL};
    run_mha_with(out, x, &L, &opt, B, N, &tr);
    const Tensor *probs = trace_find(&rec, "probs"); // (B, H, N, N)
    CU_ASSERT_PTR_NOT_NULL_FATAL(probs);
    for (int b = 0; b < B; b++)
        for (int h = 0; h < H; h++)
            for (int i = 0; i < N; i++)
                for (int j = 0; j < N; j++) {
                    float p = probs->data[(((size_t)b * H + h) * N + i) * N + j];
                    if (j < lengths[b]) {
                        CU_ASSERT(p > 0.0f); // a real key: seen (sequence 0 hides nothing)
                    } else {
                        CU_ASSERT_EQUAL(p, 0.0f); // padding: hidden in every head and query
                    }
                }
    // whatever the padding holds, no real token of either sequence changes
    for (int i = (N + LEN1) * D; i < B * N * D; i++) x[i] += 100.0f;
    run_mha_with(again, x, &L, &opt, B, N, NULL);
    CU_ASSERT_EQUAL(memcmp(again, out, sizeof(float) * (N + LEN1) * D), 0);
    // and sequence 1's real tokens get what they get alone, unpadded
    run_mha(alone, x + N * D, &L, 1, LEN1, NULL);
    for (int i = 0; i < LEN1 * D; i++) CU_ASSERT_DOUBLE_EQUAL(out[N * D + i], alone[i], 1e-6);
    trace_recorder_free(&rec);
    layer_free(&L);
}

static void test_heads_merge_inverts_split(void) {
    enum { B = 2, N = 5, H = 3, DH = 4, D = H * DH };
    float x[B * N * D], heads[B * H * N * DH], back[B * N * D];
    Rng rng;
    rng_seed(&rng, 51);
    rng_fill_normal(&rng, x, B * N * D, 0.0f, 1.0f);
    heads_split(heads, x, B, N, H, DH);
    heads_merge(back, heads, B, N, H, DH);
    CU_ASSERT_EQUAL(memcmp(back, x, sizeof x), 0);
}

static void test_one_head_is_chapter_04_attention(void) {
    // with H = 1, mha_forward = project, attention(), project
    enum { N = 5, D = 4 };
    RandomLayer L = layer_new(D, 1, 52);
    float x[N * D], q[N * D], k[N * D], v[N * D], ctx[N * D], probs[N * N];
    float expected[N * D], out[N * D];
    Rng rng;
    rng_seed(&rng, 53);
    rng_fill_normal(&rng, x, N * D, 0.0f, 1.0f);
    linear(q, x, L.w.q_w, L.w.q_b, N, D, D);
    linear(k, x, L.w.k_w, L.w.k_b, N, D, D);
    linear(v, x, L.w.v_w, L.w.v_b, N, D, D);
    attention(ctx, probs, q, k, v, NULL, N, D);
    linear(expected, ctx, L.w.proj_w, L.w.proj_b, N, D, D);
    run_mha(out, x, &L, 1, N, NULL);
    for (int i = 0; i < N * D; i++) CU_ASSERT_DOUBLE_EQUAL(out[i], expected[i], 1e-5);
    layer_free(&L);
}

static void test_images_in_a_batch_do_not_mix(void) {
    // a batch of two gives each image what it gets alone
    enum { N = 4, D = 6, H = 2 };
    RandomLayer L = layer_new(D, H, 54);
    float x[2 * N * D], out[2 * N * D], alone[N * D];
    Rng rng;
    rng_seed(&rng, 55);
    rng_fill_normal(&rng, x, 2 * N * D, 0.0f, 1.0f);
    run_mha(out, x, &L, 2, N, NULL);
    for (int b = 0; b < 2; b++) {
        run_mha(alone, x + b * N * D, &L, 1, N, NULL);
        for (int i = 0; i < N * D; i++) CU_ASSERT_DOUBLE_EQUAL(out[b * N * D + i], alone[i], 1e-5);
    }
    layer_free(&L);
}

static void test_trace_names_and_shapes(void) {
    enum { B = 2, N = 3, D = 8, H = 4, DH = D / H };
    RandomLayer L = layer_new(D, H, 56);
    float x[B * N * D], out[B * N * D];
    for (int i = 0; i < B * N * D; i++) x[i] = sinf((float)i);
    TraceRecorder rec = {0};
    Tracer tr = {trace_record, &rec, "attn."};
    run_mha(out, x, &L, B, N, &tr);
    const struct {
        const char *name;
        int ndim, shape[4];
    } expect[] = {
        {"attn.q", 4, {B, H, N, DH}},      {"attn.k", 4, {B, H, N, DH}},
        {"attn.v", 4, {B, H, N, DH}},      {"attn.scores", 4, {B, H, N, N}},
        {"attn.scaled", 4, {B, H, N, N}},  {"attn.probs", 4, {B, H, N, N}},
        {"attn.context", 3, {B, N, D}},    {"attn.proj", 3, {B, N, D}},
    };
    CU_ASSERT_EQUAL(rec.count, 8);
    for (int i = 0; i < 8 && i < rec.count; i++) {
        CU_ASSERT_STRING_EQUAL(rec.entries[i].name, expect[i].name);
        CU_ASSERT_EQUAL(rec.entries[i].t.ndim, expect[i].ndim);
        for (int d = 0; d < expect[i].ndim; d++)
            CU_ASSERT_EQUAL(rec.entries[i].t.shape[d], expect[i].shape[d]);
    }
    const Tensor *proj = trace_find(&rec, "attn.proj");
    CU_ASSERT_PTR_NOT_NULL_FATAL(proj);
    CU_ASSERT_EQUAL(memcmp(proj->data, out, sizeof out), 0);
    trace_recorder_free(&rec);
    layer_free(&L);
}

static void test_heads_must_divide_width(void) {
    VitConfig cfg;
    VitError err = {{0}};
    CU_ASSERT_EQUAL(vit_config_for_arch(&cfg, "vit-base", &err), VIT_OK);
    CU_ASSERT_EQUAL(vit_config_check(&cfg, &err), VIT_OK);
    cfg.heads = 5;
    CU_ASSERT_EQUAL(vit_config_check(&cfg, &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "divisible"));
    Vit vit;
    VitInit init = vit_init_timm(1);
    CU_ASSERT_EQUAL(vit_build_random(&vit, &cfg, &init, &err), VIT_ERR_INPUT); // refuses early
}

CU_TestInfo tests_ch05_multi_head[] = {
    {"chapter matches PyTorch golden", test_chapter_matches_pytorch},
    {"heads_split layout", test_heads_split_layout},
    {"heads_split_qkv is the (B,N,3,H,Dh) -> (3,B,H,N,Dh) permute",
     test_heads_split_qkv_is_the_permute},
    {"heads_merge inverts heads_split", test_heads_merge_inverts_split},
    {"one head is chapter 04's attention", test_one_head_is_chapter_04_attention},
    {"images in a batch do not mix", test_images_in_a_batch_do_not_mix},
    {"a key-padding mask hides each sequence its own padding",
     test_key_padding_hides_each_sequence_its_own_padding},
    {"trace names and shapes", test_trace_names_and_shapes},
    {"heads must divide the width", test_heads_must_divide_width},
    CU_TEST_INFO_NULL,
};
