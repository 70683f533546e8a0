/**
 * @file test_ch09_vit_base.c
 * @brief Chapter 09 against PyTorch, and the stage table and stopwatch it prints.
 *
 * The chapter builds and runs the full ViT-Base (a few seconds), so it runs
 * once, in the first test; the other tests check the bookkeeping the table
 * relies on (lib/model/trace_stages.h, and lib/model/trace_timing.h's stopwatch) on several
 * configurations, which is cheap. Times are never compared with a number.
 *
 * The probe at the end is exercise 09's diagnosis: vit_forward() (lib's, or
 * a student's at link time) runs the small ViT that
 * tests/golden/vit_small.safetensors pins (tools/ref_vit.py in float64), and
 * its whole trace is compared with PyTorch's stage by stage
 * (lib/explain/tracediff.h), so a failure says at which stage of the recipe the pass
 * first went wrong. Then the stages are compared with what each likely
 * mistake gives, built from PyTorch's own stages ([cls] after the patches,
 * the positions added before [cls], blocks that all read the embedding, the
 * final LayerNorm forgotten, pre_logits from the last token, …), and the one
 * that matches is named with check_hint().
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../chapters/chapters.h"
#include "check.h"
#include "hints.h"
#include "model/trace_timing.h"
#include "ops/ops.h"
#include "base/rng.h"
#include "model/trace_stages.h"
#include "explain/tracediff.h"
#include "base/util.h"
#include "model/vit.h"

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
    // lib/model/trace_timing.h, which the chapter's table reads: on a small model every stage is
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
    CU_ASSERT_EQUAL(s.count, TRACE_STAGES(c.depth));
    CU_ASSERT_STRING_EQUAL(s.first, "input");
    CU_ASSERT_STRING_EQUAL(s.last, "logits");
    for (int i = 0; i < vit_stage_count(); i++) {
        CU_ASSERT(clock.seconds[i] >= 0);
        sum += clock.seconds[i];
    }
    CU_ASSERT(sum <= wall);
    // all blocks together. Times, not lib's numbers: a plain assertion, which the
    // grader takes as it held (CU_ASSERT_EQUAL's numbers it would hold against lib's times)
    CU_ASSERT(stage_clock_seconds(&clock, "attn.probs") ==
              stage_clock_seconds(&clock, "blocks.2.attn.probs"));
    CU_ASSERT_EQUAL(stage_clock_seconds(&clock, "nonsense"), 0.0);
    // a name outside the contract is passed on, not timed
    stage_clock_trace(&clock, "my.own.stage", &image);
    CU_ASSERT_EQUAL(s.count, TRACE_STAGES(c.depth) + 1);
    tensor_free(&image);
    vit_free(&vit);
}

/* -------------------------------------------------------------- the probe */

// The small ViT of tools/gen_golden_vit.py, rebuilt from its seeds; its whole trace on a
// batch of 2 is tests/golden/vit_small.safetensors (PyTorch, float64).
static const VitConfig SMALL = {.image_size = 32, .patch_size = 8, .channels = 3, .dim = 64,
                                .depth = 2, .heads = 4, .mlp_dim = 256, .num_classes = 10,
                                .ln_eps = 1e-6f};
static const VitInit SMALL_INIT = {.seed = 7, .std = 0.2f, .bias_std = 0.02f, .norm_std = 0.1f};
static const char SMALL_GOLDEN[] = "vit_small.safetensors";
static const char SMALL_MADE_WITH[] = "img=32 patch=8 dim=64 depth=2 heads=4 mlp_dim=256 "
                                      "classes=10 seed=7 std=0.2 bias_std=0.02 norm_std=0.1 "
                                      "batch=2 input_seed=11";

// The small ViT and PyTorch's trace of it; false (and the test failed) when either is missing.
static bool open_small(Vit *vit, TraceFile *ref) {
    VitError err;
    if (trace_file_open(ref, golden_path(SMALL_GOLDEN), &err) != VIT_OK) {
        fprintf(stderr, "\n    %s\n", err.msg);
        CU_FAIL("the small ViT's golden trace did not load");
        return false;
    }
    const char *made = st_meta(&ref->st, "config");
    if (!made || strcmp(made, SMALL_MADE_WITH) != 0) {
        fprintf(stderr, "\n    %s was made for '%s', this test builds '%s'\n", SMALL_GOLDEN,
                made ? made : "?", SMALL_MADE_WITH);
        CU_FAIL("the golden trace is of another model");
        trace_file_close(ref);
        return false;
    }
    if (vit_build_random(vit, &SMALL, &SMALL_INIT, &err) != VIT_OK) {
        fprintf(stderr, "\n    %s\n", err.msg);
        CU_FAIL("vit_build_random failed");
        trace_file_close(ref);
        return false;
    }
    return true;
}

// PyTorch's stage @p name; the test stops if the golden lacks it.
static const Tensor *pytorch_stage(const TraceFile *ref, const char *name) {
    for (int i = 0; i < ref->count; i++)
        if (strcmp(ref->entries[i].name, name) == 0) return &ref->entries[i].t;
    CU_FAIL_FATAL("the golden trace lacks a stage the probe needs");
    return NULL;
}

// How near a stage must be to what a mistake gives to be named as that mistake: far
// tighter than any two of them are apart, far looser than float32 against float64.
#define SUSPECT_ATOL 1e-3f
#define SUSPECT_RTOL 1e-3f

// One likely mistake of the recipe: the stage it shows in, its hint.
typedef enum {
    CLS_APPENDED, POS_BEFORE_CLS, NO_POSITIONS, BLOCKS_NOT_CHAINED, NO_FINAL_NORM,
    NO_FINAL_NORM_ROW, LAST_TOKEN, MEAN_OF_TOKENS, IMAGE_0_ROW, RECIPE_MISTAKES,
} RecipeMistake;
static const struct {
    const char *stage, *hint;
} RECIPE_MISTAKE[RECIPE_MISTAKES] = {
    {"tokens", "[cls] was appended after the patches (torch.cat((x, cls), dim=1)): it goes in "
               "front, row 0 of every image, the patches in rows 1 ... N - 1, as "
               "tokens_prepend_cls() does; x[:, 0] (step 6) reads it there"},
    {"embed", "the positions were added before [cls] was prepended: token i got E_pos row "
              "i - 1 and [cls] none; prepend [cls] first (step 2), then add the (N, D) table "
              "(step 3), row i to token i, row 0 to [cls]"},
    {"embed", "the position embeddings are missing: step 3, x = x + self.pos_embed, adds "
              "w->pos_embed (N, D) to the tokens of every image"},
    {"blocks.1.norm1", "every block reads the embedding: block i must read block i - 1's "
                       "output, so after each block the stream moves on (swap x and next: "
                       "it ping-pongs between a->x[0] and a->x[1])"},
    {"norm", "the final LayerNorm is missing: step 5, x = self.norm(x) (w->norm_w, w->norm_b, "
             "eps c->ln_eps), comes between the last block and the [cls] row"},
    {"pre_logits", "the final LayerNorm is missing: pre_logits is the [cls] row of "
                   "norm(x), x = self.norm(x) (step 5) comes before x = x[:, 0]"},
    {"pre_logits", "pre_logits is the last token's row: x[:, 0] is the [cls] token, row 0 "
                   "of each image, at a->norm + b*N*D"},
    {"pre_logits", "pre_logits is the mean of the tokens (global average pooling, timm's "
                   "global_pool='avg'): ViT-Base reads the [cls] row, x[:, 0]"},
    {"pre_logits", "every image's pre_logits is image 0's [cls] row: image b's is row 0 of "
                   "its own tokens, at a->norm + b*N*D"},
};

// What stage RECIPE_MISTAKE[m].stage would hold after mistake m, from PyTorch's stages.
static void recipe_with(Tensor *out, const TraceFile *ref, const Vit *vit, RecipeMistake m) {
    const VitConfig *c = &vit->config;
    const VitWeights *w = &vit->weights;
    const int nb = out->shape[0], n = vit_num_tokens(c), np = n - 1, dim = c->dim;
    const Tensor *pe = pytorch_stage(ref, "patch_embed"), *norm = pytorch_stage(ref, "norm");
    char last[32];
    snprintf(last, sizeof last, "blocks.%d.out", c->depth - 1);
    for (int b = 0; b < nb; b++) {
        float *o = out->data + (size_t)b * (out->numel / nb); // image b's part of the stage
        const float *nr = norm->data + (size_t)b * n * dim; // image b's rows of norm
        switch (m) {
        case CLS_APPENDED: // rows 0 … P − 1 = the patches, row P = cls
            memcpy(o, pe->data + (size_t)b * np * dim, sizeof(float) * np * dim);
            memcpy(o + (size_t)np * dim, w->cls_token, sizeof(float) * dim);
            break;
        case POS_BEFORE_CLS: // row 0 = cls, row i = patch i - 1 + pos[i - 1]
        case NO_POSITIONS:   // row 0 = cls, row i = patch i - 1
            memcpy(o, w->cls_token, sizeof(float) * dim);
            for (size_t k = 0; k < (size_t)np * dim; k++)
                o[dim + k] = pe->data[(size_t)b * np * dim + k] +
                             (m == POS_BEFORE_CLS ? w->pos_embed[k] : 0.0f);
            break;
        case NO_FINAL_NORM_ROW:
            memcpy(o, pytorch_stage(ref, last)->data + (size_t)b * n * dim, sizeof(float) * dim);
            break;
        case LAST_TOKEN: memcpy(o, nr + (size_t)(n - 1) * dim, sizeof(float) * dim); break;
        case MEAN_OF_TOKENS:
            for (int d = 0; d < dim; d++) {
                double sum = 0;
                for (int i = 0; i < n; i++) sum += nr[(size_t)i * dim + d];
                o[d] = (float)(sum / n);
            }
            break;
        case IMAGE_0_ROW: memcpy(o, norm->data, sizeof(float) * dim); break;
        default: break;
        }
    }
    if (m == BLOCKS_NOT_CHAINED) // block 1 given the embedding: its norm1 is LN1 of embed
        layernorm(out->data, pytorch_stage(ref, "embed")->data, w->blocks[1].norm1_w,
                  w->blocks[1].norm1_b, nb * n, dim, c->ln_eps);
    if (m == NO_FINAL_NORM) memcpy(out->data, pytorch_stage(ref, last)->data, sizeof(float) * out->numel);
}

// Name every mistake whose stage the trace holds and matches; how many did.
static int diagnose_recipe(const TraceRecorder *yours, const TraceFile *ref, const Vit *vit) {
    int found = 0;
    for (int m = 0; m < RECIPE_MISTAKES; m++) {
        const char *stage = RECIPE_MISTAKE[m].stage;
        const Tensor *got = trace_find(yours, stage);
        if (!got || (m == BLOCKS_NOT_CHAINED && vit->config.depth < 2)) continue;
        const Tensor *want = pytorch_stage(ref, stage);
        if (!tensor_same_shape(got, want) || tensor_near(got, want, SUSPECT_ATOL, SUSPECT_RTOL))
            continue; // a stage that is right is no mistake
        Tensor maybe = tensor_new_shape(want->ndim, want->shape);
        recipe_with(&maybe, ref, vit, (RecipeMistake)m);
        if (tensor_near(got, &maybe, SUSPECT_ATOL, SUSPECT_RTOL))
            check_hint("%s", RECIPE_MISTAKE[m].hint), found++;
        tensor_free(&maybe);
    }
    return found;
}

static void test_probe_forward(void) {
    Vit vit;
    TraceFile ref;
    if (!open_small(&vit, &ref)) return;
    const Tensor *input = pytorch_stage(&ref, "input"), *want = pytorch_stage(&ref, "logits");
    TraceRecorder rec = {0};
    VitError err;
    VitStatus status = vit_forward(&vit, input, trace_record, &rec, &err);
    if (status != VIT_OK) fprintf(stderr, "\n    vit_forward() failed: %s\n", err.msg);
    CU_ASSERT_EQUAL(status, VIT_OK);

    // where it went wrong: the first stage of the trace that differs from PyTorch's
    const TraceView yours = trace_view(&rec, "your trace");
    const TraceView pytorch = {"PyTorch's", ref.entries, ref.count};
    TraceDiff d;
    char where[1024] = "", summary[1024] = "";
    Tensor logits = vit_logits(&vit);
    bool ok = false;
    if (tracediff_compare(&d, &yours, &pytorch, TRACEDIFF_ATOL, TRACEDIFF_RTOL, &err) != VIT_OK) {
        snprintf(where, sizeof where, "%.1000s", err.msg);
        snprintf(summary, sizeof summary, "%s", where);
    } else if (d.differ) {
        tracediff_report(where, sizeof where, &d, "\n      ");
        tracediff_summary(summary, sizeof summary, &d);
    } else if (!tensor_near(&logits, want, TRACEDIFF_ATOL, TRACEDIFF_RTOL)) {
        snprintf(where, sizeof where, "every stage of the trace agrees with PyTorch, but the "
                 "logits vit_forward() leaves in vit->acts.logits are not the traced ones");
        snprintf(summary, sizeof summary, "%s", where);
    } else {
        ok = true;
    }
    if (!ok) {
        fprintf(stderr, "\n    vit_forward() against PyTorch, stage by stage:\n      %s\n", where);
        if (hint_all_zero(logits.data, logits.numel))
            check_hint("vit_forward left the logits all zeros: is the exercise's placeholder "
                       "still there?");
        else
            diagnose_recipe(&rec, &ref, &vit);
    }
    CU_assertImplementation(ok, __LINE__, summary, __FILE__, __func__, CU_FALSE);
    trace_recorder_free(&rec);
    vit_free(&vit);
    trace_file_close(&ref);
}

/* The final LayerNorm's epsilon: the model's c->ln_eps (timm's ViT: 1e-6), not
 * nn.LayerNorm's default 1e-5. On ViT-B's tokens the two differ by less than the
 * golden's tolerance, so a model with ε = 0.5, as large as the variance of its
 * tokens, shows which one was used. */
typedef struct {
    int last;              // blocks.{last}.out is the final norm's input
    Tensor stream, normed; // copies of blocks.{last}.out and norm
} FinalNorm;

static void keep_final_norm(void *user, const char *name, const Tensor *t) {
    FinalNorm *f = user;
    char last[32];
    snprintf(last, sizeof last, "blocks.%d.out", f->last);
    Tensor *keep = strcmp(name, last) == 0 ? &f->stream : strcmp(name, "norm") == 0 ? &f->normed : NULL;
    if (!keep) return;
    tensor_free(keep);
    *keep = tensor_new(t->ndim, t->shape[0], t->shape[1], t->shape[2]);
    memcpy(keep->data, t->data, t->numel * sizeof(float));
}

static void test_probe_final_norm_epsilon(void) {
    VitConfig c = {.image_size = 16, .patch_size = 8, .channels = 3, .dim = 16, .depth = 2,
                   .heads = 2, .mlp_dim = 32, .num_classes = 5, .ln_eps = 0.5f};
    Vit vit;
    VitInit init = vit_init_timm(9);
    CU_ASSERT_EQUAL_FATAL(vit_build_random(&vit, &c, &init, NULL), VIT_OK);
    Tensor image = tensor_new(4, 2, 3, 16, 16);
    Rng rng;
    rng_seed(&rng, 9);
    rng_fill_normal(&rng, image.data, image.numel, 0.0f, 1.0f);
    FinalNorm f = {.last = c.depth - 1};
    CU_ASSERT_EQUAL_FATAL(vit_forward(&vit, &image, keep_final_norm, &f, NULL), VIT_OK);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f.stream.data);
    CU_ASSERT_PTR_NOT_NULL_FATAL(f.normed.data);
    const int rows = f.stream.shape[0] * f.stream.shape[1];
    Tensor want = tensor_new(3, f.stream.shape[0], f.stream.shape[1], c.dim);
    // independent: which ε the model hands layernorm(), itself held to PyTorch in ch08
    layernorm(want.data, f.stream.data, vit.weights.norm_w, vit.weights.norm_b, rows, c.dim,
              c.ln_eps);
    if (!assert_tensor_close(&f.normed, &want, 1e-6f, 1e-5f,
                             "norm: the last block's output normalised with the model's ε = 0.5")) {
        static const float defaults[] = {1e-5f, 1e-6f, 0.0f};
        for (int k = 0; k < 3; k++) {
            // independent: the same layernorm() with a wrong ε, as the hint says
            layernorm(want.data, f.stream.data, vit.weights.norm_w, vit.weights.norm_b, rows,
                      c.dim, defaults[k]);
            if (tensor_near(&f.normed, &want, 1e-6f, 1e-5f)) {
                check_hint("the final LayerNorm used ε = %g, not the model's c->ln_eps (0.5 "
                           "here, 1e-6 in timm's ViT): layernorm(..., c->ln_eps)",
                           (double)defaults[k]);
                break;
            }
        }
    }
    tensor_free(&want), tensor_free(&f.stream), tensor_free(&f.normed), tensor_free(&image);
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
    {"probe: vit_forward, stage by stage against PyTorch", test_probe_forward},
    {"probe: the final LayerNorm uses the model's epsilon", test_probe_final_norm_epsilon},
    CU_TEST_INFO_NULL,
};
