/**
 * @file test_stages.c
 * @brief The stage table (lib/model/trace_stages.h): costs, parameter counts, shapes and
 *        name lookup, checked against figures worked out here from first principles.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "model/trace_stages.h"
#include "model/vit.h"

static VitConfig arch(const char *name) {
    VitConfig c;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_config_for_arch(&c, name, &err), VIT_OK);
    return c;
}

// Sums a per-stage quantity over one forward pass: block stages once per block.
static double sum_flops(const VitConfig *c, int B) {
    double total = 0;
    for (int i = 0; i < vit_stage_count(); i++) {
        const VitStage *s = vit_stage_at(i);
        char name[64];
        snprintf(name, sizeof name, s->per_block ? "blocks.0.%s" : "%s", s->name);
        total += vit_stage_flops(c, B, name) * (s->per_block ? c->depth : 1);
    }
    return total;
}

static int64_t sum_params(const VitConfig *c) {
    int64_t total = 0;
    for (int i = 0; i < vit_stage_count(); i++) {
        const VitStage *s = vit_stage_at(i);
        char name[64];
        snprintf(name, sizeof name, s->per_block ? "blocks.0.%s" : "%s", s->name);
        total += vit_stage_params(c, name) * (s->per_block ? c->depth : 1);
    }
    return total;
}

/* ------------------------------------------------------------------ FLOPs */

// ViT-B/16 on one 224×224 image, counted by hand:
//   multiply–adds (MACs) of the matrix products, then the conventions of
//   trace_stages.h: 2 FLOPs per MAC, 1 per bias add, 1 per scale or residual add,
//   5 per softmax element, 8 per LayerNorm element, 8 per GELU element.
static void test_vit_base_flops_from_first_principles(void) {
    VitConfig c = arch("vit-base");
    const double P = 196, N = 197, D = 768, H = 12, Dh = 64, M = 3072, K = 1000, L = 12;
    const double patch_in = 3 * 16 * 16;

    double macs = P * D * patch_in                  // patch embedding (a 16×16 conv)
                  + L * (3 * N * D * D              // q, k, v
                         + 2 * H * N * N * Dh       // Q·Kᵀ and P·V
                         + N * D * D                // output projection
                         + 2 * N * D * M)           // fc1, fc2
                  + D * K;                          // head
    CU_ASSERT_DOUBLE_EQUAL(macs, 17563828224.0, 0.5); // the well-known "17.6 GMACs"

    double bias = P * D + L * (4 * N * D + N * M + N * D) + K;
    double elementwise = N * D                                    // + position embedding
                         + L * (H * N * N                         // × 1/√Dh
                                + 5 * H * N * N                   // softmax
                                + 2 * 8 * N * D                   // norm1, norm2
                                + 8 * N * M                       // GELU
                                + 2 * N * D)                      // two residual adds
                         + 8 * N * D;                             // final norm
    double expected = 2 * macs + bias + elementwise;

    CU_ASSERT_DOUBLE_EQUAL(vit_forward_flops(&c, 1), sum_flops(&c, 1), 1e-9 * expected);
    double got = sum_flops(&c, 1);
    if (fabs(got - expected) > 1e-9 * expected)
        fprintf(stderr, "\n    stages sum to %.0f FLOPs, first principles give %.0f\n", got,
                expected);
    CU_ASSERT_DOUBLE_EQUAL(got, expected, 1e-9 * expected);
    // 35.13 GFLOP of matrix products; everything else adds under 1 %
    CU_ASSERT_DOUBLE_EQUAL(2 * macs / 1e9, 35.13, 0.01);
    CU_ASSERT_TRUE((bias + elementwise) / (2 * macs) < 0.01);
}

// Every tensor of one ViT-B/16 pass, float32, counted by hand from the contract's table (docs/contract.md).
static void test_vit_base_trace_bytes(void) {
    VitConfig c = arch("vit-base");
    const double S = 224, P = 196, N = 197, D = 768, H = 12, M = 3072, K = 1000, L = 12;
    double per_block = 10 * N * D          // norm1, q, k, v, context, proj, resid1, norm2, fc2, out
                       + 2 * N * M         // fc1, gelu
                       + 3 * H * N * N;    // scores, scaled, probs
    double outside = 3 * S * S + P * D + 3 * N * D + D + K; // input … embed, norm, pre_logits, logits
    CU_ASSERT_DOUBLE_EQUAL(vit_trace_bytes(&c, 1), 4 * (outside + L * per_block), 0.5);
    CU_ASSERT_DOUBLE_EQUAL(vit_trace_bytes(&c, 2), 2 * vit_trace_bytes(&c, 1), 0.5);
    char name[64];
    CU_ASSERT_STRING_EQUAL(vit_stage_name(name, sizeof name, vit_stage_find("blocks.0.attn.q", NULL), 7),
                           "blocks.7.attn.q");
    CU_ASSERT_STRING_EQUAL(vit_stage_name(name, sizeof name, vit_stage_find("logits", NULL), 7), "logits");
}

static void test_flops_grow_with_batch(void) {
    VitConfig c = arch("vit-base");
    CU_ASSERT_DOUBLE_EQUAL(sum_flops(&c, 4), 4 * sum_flops(&c, 1), 1e-6 * sum_flops(&c, 4));
    // per stage: attention scores grow with N², the MLP with N
    CU_ASSERT_DOUBLE_EQUAL(vit_stage_flops(&c, 1, "blocks.3.attn.scores"), 2.0 * 12 * 197 * 197 * 64,
                           0.5);
    CU_ASSERT_DOUBLE_EQUAL(vit_stage_flops(&c, 1, "blocks.3.mlp.fc1"), 197.0 * 3072 * (2 * 768 + 1),
                           0.5);
    CU_ASSERT_EQUAL(vit_stage_flops(&c, 1, "input"), 0.0);
    CU_ASSERT_EQUAL(vit_stage_flops(&c, 1, "no.such.stage"), 0.0);
}

/* ------------------------------------------------------------- parameters */

static void test_vit_base_has_86567656_parameters(void) {
    VitConfig c = arch("vit-base");
    const int64_t D = 768, M = 3072, K = 1000, N = 197, L = 12;
    int64_t by_hand = (D * 3 * 16 * 16 + D)                        // patch embedding
                      + D + N * D                                   // cls, positions
                      + L * (2 * D + (3 * D * D + 3 * D) + (D * D + D) + 2 * D +
                             (M * D + M) + (D * M + D))             // blocks
                      + 2 * D + (K * D + K);                        // norm, head
    CU_ASSERT_EQUAL(by_hand, 86567656);
    CU_ASSERT_EQUAL(vit_param_count(&c), 86567656);
    CU_ASSERT_EQUAL(sum_params(&c), 86567656); // every parameter in exactly one stage
    // timm's published counts for the smaller siblings
    VitConfig s = arch("vit-small"), t = arch("vit-tiny");
    CU_ASSERT_EQUAL(vit_param_count(&s), 22050664);
    CU_ASSERT_EQUAL(vit_param_count(&t), 5717416);
    CU_ASSERT_EQUAL(sum_params(&s), 22050664);
    CU_ASSERT_EQUAL(vit_stage_params(&c, "blocks.5.attn.q"), D * D + D);
    CU_ASSERT_EQUAL(vit_stage_params(&c, "blocks.5.attn.probs"), 0);
}

/* ----------------------------------------------------------------- shapes */

static void test_vit_base_shapes(void) {
    VitConfig c = arch("vit-base");
    static const struct {
        const char *name;
        int ndim, shape[4];
    } rows[] = {
        {"input", 4, {1, 3, 224, 224}},         {"patch_embed", 3, {1, 196, 768}},
        {"tokens", 3, {1, 197, 768}},           {"embed", 3, {1, 197, 768}},
        {"blocks.0.norm1", 3, {1, 197, 768}},   {"blocks.0.attn.q", 4, {1, 12, 197, 64}},
        {"blocks.4.attn.k", 4, {1, 12, 197, 64}}, {"blocks.11.attn.v", 4, {1, 12, 197, 64}},
        {"blocks.1.attn.scores", 4, {1, 12, 197, 197}},
        {"blocks.1.attn.scaled", 4, {1, 12, 197, 197}},
        {"blocks.1.attn.probs", 4, {1, 12, 197, 197}},
        {"blocks.2.attn.context", 3, {1, 197, 768}}, {"blocks.2.attn.proj", 3, {1, 197, 768}},
        {"blocks.2.resid1", 3, {1, 197, 768}},  {"blocks.2.norm2", 3, {1, 197, 768}},
        {"blocks.9.mlp.fc1", 3, {1, 197, 3072}}, {"blocks.9.mlp.gelu", 3, {1, 197, 3072}},
        {"blocks.9.mlp.fc2", 3, {1, 197, 768}}, {"blocks.11.out", 3, {1, 197, 768}},
        {"norm", 3, {1, 197, 768}},             {"pre_logits", 2, {1, 768}},
        {"logits", 2, {1, 1000}},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        int shape[4] = {0};
        int nd = vit_stage_shape(&c, 1, rows[i].name, shape);
        bool ok = nd == rows[i].ndim;
        for (int d = 0; ok && d < nd; d++) ok = shape[d] == rows[i].shape[d];
        if (!ok) fprintf(stderr, "\n    vit_stage_shape(%s) is wrong\n", rows[i].name);
        CU_ASSERT_TRUE(ok);
    }
    int shape[4];
    CU_ASSERT_EQUAL(vit_stage_shape(&c, 8, "blocks.0.attn.probs", shape), 4);
    CU_ASSERT_EQUAL(shape[0], 8); // the batch axis follows B
    CU_ASSERT_EQUAL(vit_stage_shape(&c, 1, "logit", shape), 0);
}

/* ----------------------------------------------------------------- lookup */

static void test_stage_lookup(void) {
    int block = -5;
    const VitStage *s = vit_stage_find("blocks.7.attn.q", &block);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_STRING_EQUAL(s->name, "attn.q");
    CU_ASSERT_EQUAL(block, 7);
    s = vit_stage_find("norm", &block);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    CU_ASSERT_FALSE(s->per_block);
    CU_ASSERT_EQUAL(block, -1);
    CU_ASSERT_PTR_NOT_NULL(vit_stage_find("blocks.11.out", NULL));
    // not in the contract
    const char *bad[] = {"attn.q",          "blocks.3.norm",    "blocks.x.norm1",
                         "blocks.-1.norm1", "blocks.+1.norm1",  "blocks. 1.norm1",
                         "blocks.01.norm1", "blocks.99999999999.norm1",
                         "blocks.2",        "blocks.2.",        "Norm",
                         "",                "logits.0"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        if (vit_stage_find(bad[i], NULL)) fprintf(stderr, "\n    '%s' was found\n", bad[i]);
        CU_ASSERT_PTR_NULL(vit_stage_find(bad[i], NULL));
    }
}

static void test_table_is_complete(void) {
    VitConfig c = arch("vit-base");
    CU_ASSERT_EQUAL(vit_stage_count(), 4 + 15 + 3);
    CU_ASSERT_EQUAL(vit_trace_length(&c), 187);
    CU_ASSERT_PTR_NULL(vit_stage_at(-1));
    CU_ASSERT_PTR_NULL(vit_stage_at(vit_stage_count()));
    int per_block = 0;
    for (int i = 0; i < vit_stage_count(); i++) {
        const VitStage *s = vit_stage_at(i);
        CU_ASSERT_TRUE(s->name && *s->name && s->axes && *s->axes && s->formula && *s->formula &&
                       s->what && *s->what && s->torch && *s->torch);
        per_block += s->per_block;
        // each stage's axes give as many dimensions as its shape has
        char name[64];
        snprintf(name, sizeof name, s->per_block ? "blocks.0.%s" : "%s", s->name);
        int shape[4], commas = 0;
        for (const char *a = s->axes; *a; a++) commas += *a == ',';
        CU_ASSERT_EQUAL(vit_stage_shape(&c, 1, name, shape), commas + 1);
    }
    CU_ASSERT_EQUAL(per_block, 15);
}

CU_TestInfo tests_stages[] = {
    {"ViT-B FLOPs equal the count from first principles", test_vit_base_flops_from_first_principles},
    {"ViT-B trace bytes equal the count by hand", test_vit_base_trace_bytes},
    {"FLOPs grow with batch and tokens", test_flops_grow_with_batch},
    {"ViT-B has 86,567,656 parameters", test_vit_base_has_86567656_parameters},
    {"ViT-B shapes per stage", test_vit_base_shapes},
    {"stage lookup by trace name", test_stage_lookup},
    {"the table is complete", test_table_is_complete},
    CU_TEST_INFO_NULL,
};
