/**
 * @file test_ch08_encoder_block.c
 * @brief Chapter 08 against PyTorch, and the claims it makes about the encoder block.
 *
 * `build/tests/run ch08_encoder_block` grades a student's own
 * vit_block_forward() too: the claims below call lib's version (or whatever
 * replaced it at link time) on a small random block.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../chapters/chapters.h"
#include "check.h"
#include "ops.h"
#include "rng.h"
#include "trace.h"
#include "vit.h"

// A small block: 8×8 images of 4×4 patches give N = 5 tokens; D 8, H 2, M 32.
enum { B = 2, N = 5, D = 8, H = 2, M = 32 };

typedef struct {
    VitConfig cfg;
    float params[2 * D + 3 * D * D + 3 * D + D * D + D + 2 * D + M * D + M + D * M + D];
    VitBlockWeights w;
    float *mem;
    VitBlockActs acts;
} SmallBlock;

static void small_block(SmallBlock *s, uint64_t seed) {
    s->cfg = (VitConfig){.image_size = 8, .patch_size = 4, .channels = 3, .dim = D, .depth = 1,
                         .heads = H, .mlp_dim = M, .num_classes = 3, .ln_eps = 1e-6f};
    Rng rng;
    rng_seed(&rng, seed);
    rng_fill_normal(&rng, s->params, sizeof s->params / sizeof *s->params, 0.0f, 0.3f);
    float *p = s->params;
    // LayerNorm scales around 1
    for (int i = 0; i < D; i++) p[i] += 1.0f;
    s->w.norm1_w = p, p += D;
    s->w.norm1_b = p, p += D;
    s->w.attn.q_w = p, s->w.attn.k_w = p + D * D, s->w.attn.v_w = p + 2 * D * D, p += 3 * D * D;
    s->w.attn.q_b = p, s->w.attn.k_b = p + D, s->w.attn.v_b = p + 2 * D, p += 3 * D;
    s->w.attn.proj_w = p, p += D * D;
    s->w.attn.proj_b = p, p += D;
    for (int i = 0; i < D; i++) p[i] += 1.0f;
    s->w.norm2_w = p, p += D;
    s->w.norm2_b = p, p += D;
    s->w.fc1_w = p, p += M * D;
    s->w.fc1_b = p, p += M;
    s->w.fc2_w = p, p += D * M;
    s->w.fc2_b = p;
    size_t bnd = B * N * D, bnm = B * N * M;
    size_t floats = 5 * bnd + 2 * bnm + mha_scratch_floats(B, N, D, H);
    float *m = s->mem = malloc(sizeof(float) * floats);
    s->acts.norm1 = m, m += bnd;
    s->acts.attn = m, m += bnd;
    s->acts.resid1 = m, m += bnd;
    s->acts.norm2 = m, m += bnd;
    s->acts.fc1 = m, m += bnm;
    s->acts.gelu = m, m += bnm;
    s->acts.fc2 = m, m += bnd;
    mha_scratch_carve(&s->acts.mha, m, B, N, D, H);
}

static void random_x(float *x, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed);
    rng_fill_normal(&rng, x, B * N * D, 0.0f, 1.0f);
}

static void test_chapter_matches_pytorch(void) {
    check_chapter_against_golden(chapter08_run, "ch08_encoder_block.safetensors");
}

static void test_block_is_prenorm_attention_then_mlp(void) {
    // the block, written out from lib's pieces, gives the same result
    SmallBlock s;
    small_block(&s, 81);
    float x[B * N * D], out[B * N * D];
    random_x(x, 82);
    vit_block_forward(out, x, &s.w, &s.cfg, &s.acts, B, NULL);

    float ln[B * N * D], attn[B * N * D], r1[B * N * D], h[B * N * M], f[B * N * D];
    float expected[B * N * D];
    float *mem = malloc(sizeof(float) * mha_scratch_floats(B, N, D, H));
    MhaScratch scratch;
    mha_scratch_carve(&scratch, mem, B, N, D, H);
    layernorm(ln, x, s.w.norm1_w, s.w.norm1_b, B * N, D, 1e-6f);
    mha_forward(attn, ln, &s.w.attn, NULL, &scratch, B, N, D, H, NULL);
    add(r1, x, attn, B * N * D);
    layernorm(ln, r1, s.w.norm2_w, s.w.norm2_b, B * N, D, 1e-6f);
    linear(h, ln, s.w.fc1_w, s.w.fc1_b, B * N, D, M);
    gelu(h, h, B * N * M);
    linear(f, h, s.w.fc2_w, s.w.fc2_b, B * N, M, D);
    add(expected, r1, f, B * N * D);
    Tensor a = tensor_view(out, 3, B, N, D), e = tensor_view(expected, 3, B, N, D);
    assert_tensor_close(&a, &e, 1e-5f, 1e-5f, "block vs its pieces");
    free(mem);
    free(s.mem);
}

static void test_zero_sublayers_leave_the_stream_alone(void) {
    // with the output projections and fc2 at zero, both sub-layers add nothing:
    // the residual connections pass x through unchanged
    SmallBlock s;
    small_block(&s, 83);
    float zeros_dd[D * D] = {0}, zeros_dm[D * M] = {0}, zeros_d[D] = {0};
    s.w.attn.proj_w = zeros_dd, s.w.attn.proj_b = zeros_d;
    s.w.fc2_w = zeros_dm, s.w.fc2_b = zeros_d;
    float x[B * N * D], out[B * N * D];
    random_x(x, 84);
    vit_block_forward(out, x, &s.w, &s.cfg, &s.acts, B, NULL);
    CU_ASSERT_EQUAL(memcmp(out, x, sizeof x), 0);
    free(s.mem);
}

static void test_sublayers_see_a_normalised_stream(void) {
    // scaling the input by 10 leaves LayerNorm 1's output and attention's output unchanged
    SmallBlock s;
    small_block(&s, 85);
    float x[B * N * D], big[B * N * D], out[B * N * D], attn[B * N * D];
    random_x(x, 86);
    vit_block_forward(out, x, &s.w, &s.cfg, &s.acts, B, NULL);
    memcpy(attn, s.acts.attn, sizeof attn);
    scale(big, x, 10.0f, B * N * D);
    vit_block_forward(out, big, &s.w, &s.cfg, &s.acts, B, NULL);
    for (int i = 0; i < B * N * D; i++) CU_ASSERT_DOUBLE_EQUAL(s.acts.attn[i], attn[i], 1e-4);
    free(s.mem);
}

static void test_trace_names_in_order(void) {
    SmallBlock s;
    small_block(&s, 87);
    float x[B * N * D], out[B * N * D];
    random_x(x, 88);
    TraceRecorder rec = {0};
    Tracer tr = {trace_record, &rec, "blocks.3."};
    vit_block_forward(out, x, &s.w, &s.cfg, &s.acts, B, &tr);
    const char *names[] = {"norm1", "attn.q", "attn.k", "attn.v", "attn.scores", "attn.scaled",
                           "attn.probs", "attn.context", "attn.proj", "resid1", "norm2",
                           "mlp.fc1", "mlp.gelu", "mlp.fc2", "out"};
    CU_ASSERT_EQUAL_FATAL(rec.count, 15);
    for (int i = 0; i < 15; i++) {
        char expected[64];
        snprintf(expected, sizeof expected, "blocks.3.%s", names[i]);
        CU_ASSERT_STRING_EQUAL(rec.entries[i].name, expected);
    }
    const Tensor *last = trace_find(&rec, "blocks.3.out");
    CU_ASSERT_EQUAL(memcmp(last->data, out, sizeof out), 0);
    trace_recorder_free(&rec);
    free(s.mem);
}

static void test_layernorm_epsilon_near_the_variance(void) {
    // a row whose variance equals ε comes out with std 1/√2; ε = 1e-12 still normalises
    // it; a constant row comes out as β, with no NaN; ε caps the gain at 1/√ε
    enum { W = 64 };
    float row[W], y[W], beta[W];
    for (int j = 0; j < W; j++) row[j] = j % 2 ? 1e-3f : -1e-3f, beta[j] = 0.25f; // σ² = 1e-6
    layernorm(y, row, NULL, NULL, 1, W, 1e-6f);
    Tensor t = tensor_view(y, 1, W);
    CU_ASSERT_DOUBLE_EQUAL(tensor_stats(&t).std, 1 / sqrt(2.0), 1e-4);
    layernorm(y, row, NULL, NULL, 1, W, 1e-12f);
    CU_ASSERT_DOUBLE_EQUAL(tensor_stats(&t).std, 1.0, 1e-4);
    for (int j = 0; j < W; j++) row[j] = 1e-5f * (j % 2 ? 1 : -1); // σ² = 1e-10 ≪ ε
    layernorm(y, row, NULL, NULL, 1, W, 1e-6f);
    CU_ASSERT(tensor_stats(&t).std <= 1e-5 / sqrt(1e-6) * (1 + 1e-4));
    for (int j = 0; j < W; j++) row[j] = 3.0f;
    layernorm(y, row, NULL, beta, 1, W, 1e-6f);
    for (int j = 0; j < W; j++) CU_ASSERT_EQUAL(y[j], 0.25f);
}

static void test_gelu_values(void) {
    // exact erf GELU at a few points (values from torch.nn.functional.gelu)
    float x[5] = {-3.0f, -0.75f, 0.0f, 1.0f, 2.0f}, y[5];
    const double expected[5] = {-0.0040497, -0.1699705, 0.0, 0.8413447, 1.9544997};
    gelu(y, x, 5);
    for (int i = 0; i < 5; i++) CU_ASSERT_DOUBLE_EQUAL(y[i], expected[i], 1e-6);
}

CU_TestInfo tests_ch08_encoder_block[] = {
    {"chapter matches PyTorch golden", test_chapter_matches_pytorch},
    {"block is pre-norm attention, then MLP", test_block_is_prenorm_attention_then_mlp},
    {"zero sub-layers leave the stream alone", test_zero_sublayers_leave_the_stream_alone},
    {"sub-layers see a normalised stream", test_sublayers_see_a_normalised_stream},
    {"trace names in order", test_trace_names_in_order},
    {"LayerNorm's epsilon near the variance", test_layernorm_epsilon_near_the_variance},
    {"exact GELU values", test_gelu_values},
    CU_TEST_INFO_NULL,
};
