/**
 * @file test_ch09_vit_base.c
 * @brief Chapter 09 against PyTorch, and the stage table and stopwatch it prints.
 *
 * The chapter builds and runs the full ViT-Base (a few seconds), so it runs
 * once, in the first test; the other tests check the bookkeeping the table
 * relies on (lib/stages.h, and lib/report.h's stopwatch) on several
 * configurations, which is cheap. Times are never compared with a number.
 */
#include <CUnit/CUnit.h>
#include <string.h>

#include "../chapters/chapters.h"
#include "check.h"
#include "report.h"
#include "stages.h"
#include "util.h"
#include "vit.h"

static void test_chapter_matches_pytorch(void) {
    check_chapter_against_golden(chapter09_run, "ch09_vit_base.safetensors");
}

// Sum of a per-stage quantity over one forward pass: block stages L times.
static double sum_over_stages(const VitConfig *c, bool params) {
    double total = 0;
    for (int i = 0; i < vit_stage_count(); i++) {
        const VitStage *s = vit_stage_at(i);
        char name[64];
        snprintf(name, sizeof name, "%s%s", s->per_block ? "blocks.0." : "", s->name);
        double v = params ? (double)vit_stage_params(c, name) : vit_stage_flops(c, 1, name);
        total += s->per_block ? c->depth * v : v;
    }
    return total;
}

static void test_vit_base_has_86567656_parameters(void) {
    VitConfig c;
    CU_ASSERT_EQUAL_FATAL(vit_config_for_arch(&c, "vit-base", NULL), VIT_OK);
    CU_ASSERT_EQUAL(vit_param_count(&c), 86567656);
    c.num_classes = 21843; // the ImageNet-21k head
    CU_ASSERT_EQUAL(vit_param_count(&c), 86567656 + (int64_t)(21843 - 1000) * 769);
}

static void test_every_parameter_belongs_to_one_stage(void) {
    const char *archs[] = {"vit-base", "vit-small", "vit-tiny"};
    for (int a = 0; a < 3; a++) {
        VitConfig c;
        CU_ASSERT_EQUAL_FATAL(vit_config_for_arch(&c, archs[a], NULL), VIT_OK);
        CU_ASSERT_EQUAL((int64_t)sum_over_stages(&c, true), vit_param_count(&c));
    }
    VitConfig odd = {.image_size = 32, .patch_size = 8, .channels = 3, .dim = 24, .depth = 3,
                     .heads = 4, .mlp_dim = 40, .num_classes = 7, .ln_eps = 1e-6f};
    CU_ASSERT_EQUAL((int64_t)sum_over_stages(&odd, true), vit_param_count(&odd));
}

static void test_vit_base_costs_35_gflop(void) {
    // 2 × 17.6 G multiply-adds, the figure usually quoted for ViT-B/16 at 224
    VitConfig c;
    vit_config_for_arch(&c, "vit-base", NULL);
    double gflop = sum_over_stages(&c, false) / 1e9;
    CU_ASSERT(gflop > 35.0 && gflop < 35.5);
    // the FLOPs of a batch grow linearly with it
    CU_ASSERT_DOUBLE_EQUAL(vit_stage_flops(&c, 4, "blocks.5.mlp.fc1"),
                           4 * vit_stage_flops(&c, 1, "blocks.5.mlp.fc1"), 1.0);
}

static void test_stage_names_outside_the_contract(void) {
    VitConfig c;
    vit_config_for_arch(&c, "vit-base", NULL);
    CU_ASSERT_EQUAL(vit_stage_params(&c, "attn.q"), 0);      // a block stage needs its block
    CU_ASSERT_EQUAL(vit_stage_params(&c, "blocks.x.norm1"), 0);
    CU_ASSERT_EQUAL(vit_stage_params(&c, "nonsense"), 0);
    CU_ASSERT_EQUAL(vit_stage_params(&c, "blocks.11.attn.probs"), 0); // no weights of its own
    CU_ASSERT_EQUAL(vit_stage_params(&c, "blocks.11.mlp.fc1"), 3072 * 768 + 3072);
}

// A listener behind the stopwatch: counts what it is handed, in order.
typedef struct {
    int count;
    char first[32], last[32];
} Seen;

static void seen(void *user, const char *name, const Tensor *t) {
    Seen *s = user;
    if (s->count++ == 0) snprintf(s->first, sizeof s->first, "%s", name);
    snprintf(s->last, sizeof s->last, "%s", name);
    (void)t;
}

static void test_stage_clock_times_every_stage_and_passes_it_on(void) {
    // lib/report.h, which the chapter's table reads: on a small model every stage is
    // timed, block stages summed, and the listener behind it sees the whole trace
    VitConfig c = {.image_size = 32, .patch_size = 8, .channels = 3, .dim = 24, .depth = 3,
                   .heads = 4, .mlp_dim = 40, .num_classes = 7, .ln_eps = 1e-6f};
    Vit vit;
    VitInit init = vit_init_timm(5);
    CU_ASSERT_EQUAL_FATAL(vit_build_random(&vit, &c, &init, NULL), VIT_OK);
    Tensor image = tensor_new(4, 1, 3, 32, 32);
    Seen s = {0};
    StageClock clock;
    double t0 = vit_now();
    stage_clock_start(&clock, seen, &s);
    CU_ASSERT_EQUAL(vit_forward(&vit, &image, stage_clock_trace, &clock, NULL), VIT_OK);
    double wall = vit_now() - t0, sum = 0;
    CU_ASSERT_EQUAL(s.count, vit_trace_length(&c));
    CU_ASSERT_STRING_EQUAL(s.first, "input");
    CU_ASSERT_STRING_EQUAL(s.last, "logits");
    for (int i = 0; i < vit_stage_count(); i++) {
        CU_ASSERT(clock.seconds[i] >= 0);
        sum += clock.seconds[i];
    }
    CU_ASSERT(sum <= wall);
    CU_ASSERT_EQUAL(stage_clock_seconds(&clock, "attn.probs"),
                    stage_clock_seconds(&clock, "blocks.2.attn.probs")); // all blocks together
    CU_ASSERT_EQUAL(stage_clock_seconds(&clock, "nonsense"), 0.0);
    // a name outside the contract is passed on, not timed
    stage_clock_trace(&clock, "my.own.stage", &image);
    CU_ASSERT_EQUAL(s.count, vit_trace_length(&c) + 1);
    tensor_free(&image);
    vit_free(&vit);
}

CU_TestInfo tests_ch09_vit_base[] = {
    {"chapter matches PyTorch golden", test_chapter_matches_pytorch},
    {"ViT-Base has 86,567,656 parameters", test_vit_base_has_86567656_parameters},
    {"every parameter belongs to one stage", test_every_parameter_belongs_to_one_stage},
    {"ViT-Base costs about 35 GFLOP", test_vit_base_costs_35_gflop},
    {"stage names outside the contract", test_stage_names_outside_the_contract},
    {"the stage clock times every stage and passes it on",
     test_stage_clock_times_every_stage_and_passes_it_on},
    CU_TEST_INFO_NULL,
};
