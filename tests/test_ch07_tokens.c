/**
 * @file test_ch07_tokens.c
 * @brief Chapter 07 against PyTorch, and the symmetry claims it makes.
 *
 * `build/tests/run ch07_tokens` checks the property the chapter rests on for
 * lib's mha_forward() (or a student's replacement): shuffling the tokens
 * shuffles the output the same way, unless positions are added first.
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

enum { N = 7, D = 8, H = 2 };
static const int PERM[N] = {0, 4, 2, 6, 1, 5, 3}; // [cls] stays, patches shuffled

typedef struct {
    float w_qkv[3 * D * D], b_qkv[3 * D], w_proj[D * D], b_proj[D];
    float x[N * D], pos[N * D];
    AttentionWeights w;
} Setup;

static void setup(Setup *s, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed);
    rng_fill_normal(&rng, s->w_qkv, 3 * D * D, 0.0f, 0.4f);
    rng_fill_normal(&rng, s->b_qkv, 3 * D, 0.0f, 0.1f);
    rng_fill_normal(&rng, s->w_proj, D * D, 0.0f, 0.4f);
    rng_fill_normal(&rng, s->b_proj, D, 0.0f, 0.1f);
    rng_fill_normal(&rng, s->x, N * D, 0.0f, 1.0f);
    rng_fill_normal(&rng, s->pos, N * D, 0.0f, 1.0f);
    s->w = (AttentionWeights){.q_w = s->w_qkv, .k_w = s->w_qkv + D * D,
                              .v_w = s->w_qkv + 2 * D * D, .q_b = s->b_qkv,
                              .k_b = s->b_qkv + D, .v_b = s->b_qkv + 2 * D,
                              .proj_w = s->w_proj, .proj_b = s->b_proj};
}

static void mha(float *out, const float *x, const Setup *s) {
    float *mem = malloc(sizeof(float) * mha_scratch_floats(1, N, D, H));
    MhaScratch scratch;
    mha_scratch_carve(&scratch, mem, 1, N, D, H);
    mha_forward(out, x, &s->w, NULL, &scratch, 1, N, D, H, NULL);
    free(mem);
}

static void permute(float *out, const float *x) {
    for (int i = 0; i < N; i++) memcpy(&out[i * D], &x[PERM[i] * D], sizeof(float) * D);
}

static float max_diff(const float *a, const float *b, int n) {
    float worst = 0;
    for (int i = 0; i < n; i++) worst = fmaxf(worst, fabsf(a[i] - b[i]));
    return worst;
}

static void test_chapter_matches_pytorch(void) {
    check_chapter_against_golden(chapter07_run, "ch07_tokens.safetensors");
}

static void test_attention_is_permutation_equivariant(void) {
    Setup s;
    setup(&s, 71);
    float out[N * D], xp[N * D], out_p[N * D], expected[N * D];
    mha(out, s.x, &s);
    permute(xp, s.x);
    mha(out_p, xp, &s);
    permute(expected, out);
    CU_ASSERT(max_diff(out_p, expected, N * D) < 1e-5f);
    CU_ASSERT(max_diff(out_p, out, D) < 1e-5f); // the [cls] row did not move or change
}

static void test_positions_break_the_symmetry(void) {
    Setup s;
    setup(&s, 72);
    float e[N * D], out[N * D], xp[N * D], out_p[N * D], expected[N * D];
    add(e, s.x, s.pos, N * D);
    mha(out, e, &s);
    permute(xp, s.x);
    add(e, xp, s.pos, N * D); // positions stay with the slots
    mha(out_p, e, &s);
    permute(expected, out);
    CU_ASSERT(max_diff(out_p, expected, N * D) > 1e-2f);
    CU_ASSERT(max_diff(out_p, out, D) > 1e-3f); // [cls] now sees the shuffle
}

static void test_identical_patches_become_distinct(void) {
    TraceRecorder rec = {0};
    Chapter ch = {.out = NULL, .pin = trace_record, .pin_user = &rec};
    chapter07_run(&ch);
    const Tensor *before = trace_find(&rec, "same_patches_before");
    const Tensor *after = trace_find(&rec, "same_patches_after");
    CU_ASSERT_PTR_NOT_NULL_FATAL(before);
    CU_ASSERT_PTR_NOT_NULL_FATAL(after);
    CU_ASSERT_EQUAL(before->data[0], 0.0f);
    CU_ASSERT(after->data[0] > 0.01f);
    trace_recorder_free(&rec);
}

CU_TestInfo tests_ch07_tokens[] = {
    {"chapter matches PyTorch golden", test_chapter_matches_pytorch},
    {"attention is permutation-equivariant", test_attention_is_permutation_equivariant},
    {"positions break the symmetry", test_positions_break_the_symmetry},
    {"identical patches become distinct tokens", test_identical_patches_become_distinct},
    CU_TEST_INFO_NULL,
};
