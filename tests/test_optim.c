/**
 * @file test_optim.c
 * @brief lib/train/optim.h: AdamW, the schedule and clipping against PyTorch
 *        (goldens by tools/gen_golden_optim.py), and against steps worked by hand.
 *
 * What is checked:
 *   - ten steps of AdamW with two param groups, the warm-up plus cosine
 *     schedule and clipping before each step reproduce torch.optim.AdamW's
 *     parameters after every step, and its m and v after the last;
 *   - lr_at() gives PyTorch's schedulers' learning rate at every step of
 *     three schedules (a warm-up from a fraction, from 0, none);
 *   - optim_clip_grad_norm() gives clip_grad_norm_'s result, above and below max_norm;
 *   - by hand: two Adam steps, the first step's size lr·sign(g) whatever |g|
 *     (bias correction), decay skipped where it should be and never in m, v;
 *     the schedule's corners; a norm that needs double; clipping's edge cases;
 *   - a model's tensors: one per parameter, paired with its gradient, decay by
 *     timm's rule, one allocation carved in order, and the refusals.
 *
 * Tolerances. PyTorch runs the same float32 operations as optim.c in the same
 * order, except that its kernels may fuse a multiply and an add (one rounding
 * instead of two): after ten steps the parameters (about 1 in size) differ by
 * at most a few units in the last place, ~1e-7; we allow 1e-6 relative plus
 * 1e-7 absolute (for values that pass near 0). A wrong formula, a missing
 * bias correction, decay in the wrong group or at the wrong time moves them
 * by 1e-3 or more. The learning rates are doubles against float32 goldens
 * (the golden's own rounding, ≤ 6e-8 relative); the norms sum in double
 * against PyTorch's float32 sums (1e-6 relative) or its float64 norm (1e-7).
 * m and v get the parameters' tolerance: they are running means of numbers
 * of size 1 or less, off by an ulp of their largest terms where they cancel.
 * VIT_GOLDEN_REPORT=1 prints the largest differences: parameters 6e-8
 * (2.5e-7 relative), m 3e-8, v 9e-10 (2.6e-7 relative), norms 7e-8 relative.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "train/optim.h"
#include "model/vit.h"

/* ------------------------------------------------------------ helpers */

static const char *const ADAMW_GOLDEN = "optim_adamw.safetensors";

// The run of tools/gen_golden_optim.py: its TENSORS, constants and schedule.
enum { RUN_STEPS = 10, RUN_TENSORS = 4 };
static const struct {
    const char *name;
    bool decay;
} run_tensors[RUN_TENSORS] = {{"w1", true}, {"w2", true}, {"b1", false}, {"g1", false}};
static const AdamWConfig run_config = {.beta1 = 0.9, .beta2 = 0.999, .eps = 1e-8,
                                       .weight_decay = 0.1};
static const LrSchedule run_schedule = {.peak_lr = 0.1, .min_lr = 1e-3, .warmup_start = 0.1,
                                        .warmup_steps = 3, .total_steps = RUN_STEPS};
static const double run_max_norm = 4.0;

static const float PARAM_ATOL = 1e-7f, PARAM_RTOL = 1e-6f;

// Golden tensor "TENSOR.PART" of file, owned (free it).
static Tensor gold(const char *file, const char *tensor, const char *part) {
    char name[64];
    snprintf(name, sizeof name, "%s.%s", tensor, part);
    return golden_tensor(file, name);
}

// |a − b| ≤ rtol·|b|, printing both when not.
static bool near_rel(double a, double b, double rtol, const char *what) {
    if (fabs(a - b) <= rtol * fabs(b)) return true;
    fprintf(stderr, "\n    %s: %.9g, expected %.9g (rel. difference %.3g > %.3g)\n", what, a, b,
            fabs(a - b) / fabs(b), rtol);
    return false;
}

/** The largest differences of a series of comparisons, for VIT_GOLDEN_REPORT=1. */
typedef struct {
    double abs, rel; // largest |a − b|, and largest |a − b| / |b| where b ≠ 0
} Worst;

static void worst_add(Worst *w, const float *a, const float *b, size_t n) {
    for (size_t i = 0; i < n; i++) {
        const double d = fabs((double)a[i] - b[i]);
        w->abs = fmax(w->abs, d);
        if (b[i] != 0) w->rel = fmax(w->rel, d / fabs((double)b[i]));
    }
}

/** A few plain tensors and their gradients, owned by the test. */
typedef struct {
    OptimParam p[RUN_TENSORS];
    int count;
} Plain;

// Adds a tensor of n values, all `value`, with gradient `grad` everywhere.
static void plain_add(Plain *t, size_t n, float value, float grad, bool decay) {
    OptimParam *p = &t->p[t->count++];
    *p = (OptimParam){.data = vit_malloc(n * sizeof(float)),
                      .grad = vit_malloc(n * sizeof(float)), .numel = n, .decay = decay};
    for (size_t i = 0; i < n; i++) p->data[i] = value, p->grad[i] = grad;
}

static void plain_free(Plain *t) {
    for (int i = 0; i < t->count; i++) free(t->p[i].data), free(t->p[i].grad);
}

/* ------------------------------------------------- against PyTorch goldens */

/** The golden run: the parameters, their gradients and what PyTorch made of them. */
typedef struct {
    Tensor theta[RUN_TENSORS], grads[RUN_TENSORS], after[RUN_TENSORS];
    OptimParam list[RUN_TENSORS];
    Tensor lr, norm;
} Run;

static void run_load(Run *r) {
    for (int i = 0; i < RUN_TENSORS; i++) {
        const char *name = run_tensors[i].name;
        r->theta[i] = gold(ADAMW_GOLDEN, name, "init");
        r->grads[i] = gold(ADAMW_GOLDEN, name, "grads");
        r->after[i] = gold(ADAMW_GOLDEN, name, "after");
        r->list[i] = (OptimParam){.data = r->theta[i].data,
                                  .grad = vit_malloc(r->theta[i].numel * sizeof(float)),
                                  .numel = r->theta[i].numel, .decay = run_tensors[i].decay};
        snprintf(r->list[i].name, sizeof r->list[i].name, "%s", name);
    }
    r->lr = golden_tensor(ADAMW_GOLDEN, "lr");
    r->norm = golden_tensor(ADAMW_GOLDEN, "norm");
}

static void run_free(Run *r) {
    for (int i = 0; i < RUN_TENSORS; i++) {
        tensor_free(&r->theta[i]), tensor_free(&r->grads[i]), tensor_free(&r->after[i]);
        free(r->list[i].grad);
    }
    tensor_free(&r->lr), tensor_free(&r->norm);
}

// Compares every parameter after step `step` with PyTorch's.
static void run_compare(Run *r, int step, CheckReport *report, Worst *worst) {
    for (int i = 0; i < RUN_TENSORS; i++) {
        const Tensor *t = &r->theta[i];
        Tensor want = tensor_view_shape(r->after[i].data + (size_t)step * t->numel, t->ndim,
                                        t->shape);
        char label[64];
        snprintf(label, sizeof label, "%s after step %d", run_tensors[i].name, step + 1);
        tensor_close_in(report, t, &want, PARAM_ATOL, PARAM_RTOL, label);
        worst_add(worst, t->data, want.data, t->numel);
    }
}

// m and v after the last step against exp_avg and exp_avg_sq.
static void run_compare_moments(const AdamW *opt, CheckReport *report, Worst worst[2]) {
    for (int i = 0; i < RUN_TENSORS; i++) {
        Tensor want_m = gold(ADAMW_GOLDEN, run_tensors[i].name, "m");
        Tensor want_v = gold(ADAMW_GOLDEN, run_tensors[i].name, "v");
        Tensor m = tensor_view_shape(opt->moments[i].m, want_m.ndim, want_m.shape);
        Tensor v = tensor_view_shape(opt->moments[i].v, want_v.ndim, want_v.shape);
        char label[64];
        snprintf(label, sizeof label, "%s.m", run_tensors[i].name);
        tensor_close_in(report, &m, &want_m, PARAM_ATOL, PARAM_RTOL, label);
        snprintf(label, sizeof label, "%s.v", run_tensors[i].name);
        tensor_close_in(report, &v, &want_v, 1e-12f, PARAM_RTOL, label);
        worst_add(&worst[0], m.data, want_m.data, m.numel);
        worst_add(&worst[1], v.data, want_v.data, v.numel);
        tensor_free(&want_m), tensor_free(&want_v);
    }
}

// Each step as the golden script takes it: the stored gradient, clip, schedule, AdamW.
static void test_ten_steps_equal_pytorch(void) {
    Run r;
    run_load(&r);
    AdamW opt;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(adamw_init(&opt, r.list, RUN_TENSORS, &run_config, &err), VIT_OK);
    CheckReport report = {0};
    Worst worst = {0}, moments[2] = {{0}};
    double worst_norm = 0;
    for (int step = 0; step < RUN_STEPS; step++) {
        for (int i = 0; i < RUN_TENSORS; i++)
            memcpy(r.list[i].grad, r.grads[i].data + (size_t)step * r.list[i].numel,
                   r.list[i].numel * sizeof(float));
        const double norm = optim_clip_grad_norm(opt.params, opt.count, run_max_norm);
        CU_ASSERT_TRUE(near_rel(norm, r.norm.data[step], 1e-6, "the norm before clipping"));
        worst_norm = fmax(worst_norm, fabs(norm - r.norm.data[step]) / r.norm.data[step]);
        const double lr = lr_at(&run_schedule, step);
        CU_ASSERT_TRUE(near_rel(lr, r.lr.data[step], 1e-7, "the learning rate"));
        adamw_step(&opt, lr);
        run_compare(&r, step, &report, &worst);
    }
    run_compare_moments(&opt, &report, moments);
    assert_report_clean(&report, "parameters");
    CU_ASSERT_EQUAL(opt.step, RUN_STEPS);
    if (golden_report_wanted())
        printf("\n    optim_adamw: max |diff| (rel.): parameters %.3g (%.3g), m %.3g (%.3g), "
               "v %.3g (%.3g); norms rel. %.3g\n", worst.abs, worst.rel, moments[0].abs,
               moments[0].rel, moments[1].abs, moments[1].rel, worst_norm);
    adamw_free(&opt);
    run_free(&r);
}

/** A schedule of tests/golden/optim_schedule.safetensors; the same table is SCHEDULES there. */
typedef struct {
    const char *name;
    LrSchedule s;
} ScheduleCase;

static const ScheduleCase schedules[] = {
    {"adamw_run", {.peak_lr = 0.1, .min_lr = 1e-3, .warmup_start = 0.1, .warmup_steps = 3,
                   .total_steps = 10}},
    {"from_zero", {.peak_lr = 5e-4, .min_lr = 1e-5, .warmup_start = 0.0, .warmup_steps = 25,
                   .total_steps = 200}},
    {"no_warmup", {.peak_lr = 1e-3, .min_lr = 0.0, .warmup_start = 0.0, .warmup_steps = 0,
                   .total_steps = 20}},
};

static void test_schedules_equal_pytorch(void) {
    for (size_t k = 0; k < sizeof schedules / sizeof schedules[0]; k++) {
        const ScheduleCase *c = &schedules[k];
        Tensor want = gold("optim_schedule.safetensors", c->name, "lr");
        CU_ASSERT_EQUAL_FATAL(want.numel, (size_t)c->s.total_steps);
        CU_ASSERT_EQUAL(lr_schedule_check(&c->s, NULL), VIT_OK);
        for (int step = 0; step < c->s.total_steps; step++) {
            char what[64];
            snprintf(what, sizeof what, "%s step %d", c->name, step);
            const double got = lr_at(&c->s, step), ref = want.data[step];
            CU_ASSERT_TRUE(ref == 0 ? got == 0 : near_rel(got, ref, 1e-7, what));
        }
        tensor_free(&want);
    }
}

static void test_clipping_equals_pytorch(void) {
    const char *file = "optim_clip.safetensors";
    static const char *const cases[] = {"above", "below"};
    Worst worst = {0};
    double worst_norm = 0;
    for (size_t k = 0; k < 2; k++) {
        Tensor g[3], c[3];
        OptimParam p[3];
        for (int i = 0; i < 3; i++) {
            char part[16];
            snprintf(part, sizeof part, "g%d", i);
            g[i] = gold(file, cases[k], part);
            snprintf(part, sizeof part, "c%d", i);
            c[i] = gold(file, cases[k], part);
            p[i] = (OptimParam){.data = c[i].data, .grad = g[i].data, .numel = g[i].numel};
        }
        Tensor norm = gold(file, cases[k], "norm"), max_norm = gold(file, cases[k], "max_norm");
        const double got = optim_clip_grad_norm(p, 3, max_norm.data[0]);
        CU_ASSERT_TRUE(near_rel(got, norm.data[0], 1e-7, cases[k]));
        worst_norm = fmax(worst_norm, fabs(got - norm.data[0]) / norm.data[0]);
        for (int i = 0; i < 3; i++) {
            assert_tensor_close(&g[i], &c[i], 1e-9f, 1e-6f, cases[k]);
            worst_add(&worst, g[i].data, c[i].data, g[i].numel);
        }
        // clipped to max_norm, or left alone
        const double after = optim_grad_norm(p, 3), cap = max_norm.data[0];
        CU_ASSERT_TRUE(near_rel(after, got > cap ? cap : got, 1e-6, "the norm after clipping"));
        for (int i = 0; i < 3; i++) tensor_free(&g[i]), tensor_free(&c[i]);
        tensor_free(&norm), tensor_free(&max_norm);
    }
    if (golden_report_wanted())
        printf("\n    optim_clip: norms rel. %.3g, clipped gradients max |diff| %.3g (rel. %.3g)\n",
               worst_norm, worst.abs, worst.rel);
}

/* ------------------------------------------------------------ by hand */

// θ = 1, lr = 0.1, defaults; g = 0.5 then −1. Step 1: m = 0.05, v = 0.00025,
// m̂ = 0.05/0.1 = 0.5, v̂ = 0.00025/0.001 = 0.25, θ = 1 − 0.1·0.5/(0.5 + 1e-8) ≈ 0.9.
// Step 2: m = 0.045 − 0.1 = −0.055, v = 0.00024975 + 0.001 = 0.00124975,
// m̂ = −0.055/0.19, v̂ = 0.00124975/0.001999, θ = 0.9 + 0.1·0.289474/0.790688 = 0.936610.
// The decaying copy is multiplied by 1 − 0.1·0.01 first: 0.899, then 0.934711.
static void test_two_steps_by_hand(void) {
    Plain t = {0};
    plain_add(&t, 1, 1.0f, 0.5f, false);
    plain_add(&t, 1, 1.0f, 0.5f, true);
    AdamW opt;
    const AdamWConfig cfg = adamw_defaults();
    CU_ASSERT_EQUAL_FATAL(adamw_init(&opt, t.p, t.count, &cfg, NULL), VIT_OK);
    adamw_step(&opt, 0.1);
    CU_ASSERT_DOUBLE_EQUAL(opt.moments[0].m[0], 0.05, 1e-9);
    CU_ASSERT_DOUBLE_EQUAL(opt.moments[0].v[0], 0.00025, 1e-10); // 0.001f is 0.001·(1 + 5e-8)
    CU_ASSERT_DOUBLE_EQUAL(t.p[0].data[0], 0.9, 1e-7);
    CU_ASSERT_DOUBLE_EQUAL(t.p[1].data[0], 0.899, 1e-7);
    t.p[0].grad[0] = t.p[1].grad[0] = -1.0f;
    adamw_step(&opt, 0.1);
    CU_ASSERT_DOUBLE_EQUAL(opt.moments[0].m[0], -0.055, 1e-8);
    CU_ASSERT_DOUBLE_EQUAL(opt.moments[0].v[0], 0.00124975, 1e-10);
    CU_ASSERT_DOUBLE_EQUAL(t.p[0].data[0], 0.9366103542, 3e-7);
    CU_ASSERT_DOUBLE_EQUAL(t.p[1].data[0], 0.9347113542, 3e-7);
    CU_ASSERT_EQUAL(opt.step, 2);
    adamw_free(&opt);
    plain_free(&t);
}

// At t = 1 the corrections undo the running means' start at 0: m̂ = g and
// v̂ = g², so every value moves by lr·g/(|g| + eps) ≈ lr·sign(g), whatever |g|.
// Without them it would move by lr·0.1·g/(√0.001·|g|) ≈ 3.16·lr.
static void test_bias_correction_at_step_one(void) {
    static const float grads[] = {1e-3f, -1.0f, 1e3f, -7.5f};
    Plain t = {0};
    for (int i = 0; i < 4; i++) plain_add(&t, 3, 2.0f, grads[i], false);
    AdamW opt;
    const AdamWConfig cfg = adamw_defaults();
    CU_ASSERT_EQUAL_FATAL(adamw_init(&opt, t.p, t.count, &cfg, NULL), VIT_OK);
    adamw_step(&opt, 0.01);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 3; j++)
            CU_ASSERT_DOUBLE_EQUAL(t.p[i].data[j], 2.0 - 0.01 * (grads[i] > 0 ? 1 : -1), 2e-7);
    adamw_free(&opt);
    plain_free(&t);
}

// With g = 0, m and v stay 0 and the Adam part of the step is 0/(0 + eps) = 0:
// what is left is the decay, θ·(1 − lr·λ), on the tensors that decay only.
// That m stays 0 is what "decoupled" means: Adam with an L2 penalty would
// have put λ·θ into the gradient, and so into m and v.
static void test_decay_skips_excluded_tensors_and_the_moments(void) {
    Plain t = {0};
    plain_add(&t, 5, 3.0f, 0.0f, true);
    plain_add(&t, 5, 3.0f, 0.0f, false);
    AdamWConfig cfg = adamw_defaults();
    cfg.weight_decay = 0.5;
    AdamW opt;
    CU_ASSERT_EQUAL_FATAL(adamw_init(&opt, t.p, t.count, &cfg, NULL), VIT_OK);
    adamw_step(&opt, 0.1);
    adamw_step(&opt, 0.1);
    for (int j = 0; j < 5; j++) {
        CU_ASSERT_EQUAL(t.p[0].data[j], 3.0f * 0.95f * 0.95f);
        CU_ASSERT_EQUAL(t.p[1].data[j], 3.0f);
        for (int i = 0; i < 2; i++) {
            CU_ASSERT_EQUAL(opt.moments[i].m[j], 0.0f);
            CU_ASSERT_EQUAL(opt.moments[i].v[j], 0.0f);
        }
    }
    adamw_free(&opt);
    plain_free(&t);
}

static void test_defaults_are_pytorchs(void) {
    const AdamWConfig c = adamw_defaults();
    CU_ASSERT_EQUAL(c.beta1, 0.9);
    CU_ASSERT_EQUAL(c.beta2, 0.999);
    CU_ASSERT_EQUAL(c.eps, 1e-8);
    CU_ASSERT_EQUAL(c.weight_decay, 0.01);
}

// Every m, then every v, one after another in the one allocation, all zero.
static void test_state_is_one_allocation_carved_in_order(void) {
    Plain t = {0};
    plain_add(&t, 7, 1.0f, 1.0f, true);
    plain_add(&t, 0, 1.0f, 1.0f, true);
    plain_add(&t, 3, 1.0f, 1.0f, false);
    AdamW opt;
    const AdamWConfig cfg = adamw_defaults();
    CU_ASSERT_EQUAL_FATAL(adamw_init(&opt, t.p, t.count, &cfg, NULL), VIT_OK);
    CU_ASSERT_EQUAL(opt.count, 3);
    CU_ASSERT_EQUAL(opt.floats, 2 * 10u);
    CU_ASSERT_PTR_EQUAL(opt.moments[0].m, opt.memory);
    CU_ASSERT_PTR_EQUAL(opt.moments[1].m, opt.memory + 7);
    CU_ASSERT_PTR_EQUAL(opt.moments[2].m, opt.memory + 7);
    CU_ASSERT_PTR_EQUAL(opt.moments[0].v, opt.memory + 10);
    CU_ASSERT_PTR_EQUAL(opt.moments[2].v, opt.memory + 17);
    for (size_t i = 0; i < opt.floats; i++) CU_ASSERT_EQUAL(opt.memory[i], 0.0f);
    CU_ASSERT_PTR_EQUAL(opt.params[2].data, t.p[2].data); // borrowed, not copied
    adamw_free(&opt);
    CU_ASSERT_PTR_NULL(opt.memory);
    adamw_free(&opt); // twice is harmless
    plain_free(&t);
}

static void test_refuses_bad_constants_and_tensors(void) {
    Plain t = {0};
    plain_add(&t, 4, 1.0f, 1.0f, true);
    AdamW opt;
    VitError err;
    const AdamWConfig ok = adamw_defaults();
    AdamWConfig bad[] = {ok, ok, ok, ok, ok};
    bad[0].beta1 = 1.0, bad[1].beta2 = -0.1, bad[2].eps = 0, bad[3].weight_decay = -1;
    bad[4].beta1 = NAN;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CU_ASSERT_EQUAL(adamw_init(&opt, t.p, t.count, &bad[i], &err), VIT_ERR_INPUT);
        CU_ASSERT_PTR_NULL(opt.memory);
    }
    OptimParam p = t.p[0];
    p.grad = NULL;
    snprintf(p.name, sizeof p.name, "w");
    CU_ASSERT_EQUAL(adamw_init(&opt, &p, 1, &ok, &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "'w' has no gradient"));
    p.grad = p.data;
    CU_ASSERT_EQUAL(adamw_init(&opt, &p, 1, &ok, &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "its own gradient"));
    // a size no machine holds: refused by the memory check, before any allocation
    p = t.p[0];
    p.numel = (size_t)1 << 60;
    CU_ASSERT_EQUAL(adamw_init(&opt, &p, 1, &ok, &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "the AdamW state"));
    CU_ASSERT_PTR_NULL(opt.memory);
    plain_free(&t);
}

static void test_schedule_by_hand(void) {
    const LrSchedule s = {.peak_lr = 1.0, .min_lr = 0.1, .warmup_start = 0.2, .warmup_steps = 4,
                          .total_steps = 25};
    CU_ASSERT_DOUBLE_EQUAL(lr_at(&s, 0), 0.2, 1e-15);           // f · peak
    CU_ASSERT_DOUBLE_EQUAL(lr_at(&s, 2), 0.6, 1e-15);           // half-way up
    CU_ASSERT_DOUBLE_EQUAL(lr_at(&s, 4), 1.0, 1e-15);           // the peak ends the warm-up
    CU_ASSERT_DOUBLE_EQUAL(lr_at(&s, 14), 0.55, 1e-15);         // half-way down: (peak + min)/2
    CU_ASSERT_DOUBLE_EQUAL(lr_at(&s, 24), 0.1, 1e-15);          // the floor at the last step
    CU_ASSERT_DOUBLE_EQUAL(lr_at(&s, 1000), 0.1, 1e-15);        // and after it
    CU_ASSERT_DOUBLE_EQUAL(lr_at(&s, -3), 0.2, 1e-15);          // before 0: step 0
    for (int step = 4; step < 24; step++) CU_ASSERT_TRUE(lr_at(&s, step + 1) < lr_at(&s, step));
    const LrSchedule zero = {.peak_lr = 1e-3, .warmup_steps = 10, .total_steps = 100};
    CU_ASSERT_EQUAL(lr_at(&zero, 0), 0.0);                      // from 0: the first step is 0
    const LrSchedule flat = {.peak_lr = 1e-3, .warmup_steps = 4, .total_steps = 5};
    CU_ASSERT_EQUAL(lr_at(&flat, 4), 1e-3);                     // no step left to decay over
    const LrSchedule one = {.peak_lr = 1e-3, .min_lr = 1e-4, .total_steps = 1};
    CU_ASSERT_EQUAL(lr_at(&one, 0), 1e-3);
}

static void test_schedule_check_refuses_nonsense(void) {
    const LrSchedule ok = {.peak_lr = 1e-3, .min_lr = 1e-5, .warmup_steps = 5, .total_steps = 50};
    CU_ASSERT_EQUAL(lr_schedule_check(&ok, NULL), VIT_OK);
    LrSchedule bad[] = {ok, ok, ok, ok, ok, ok, ok};
    bad[0].total_steps = 0, bad[1].warmup_steps = -1, bad[2].warmup_steps = 50;
    bad[3].min_lr = 1e-2, bad[4].min_lr = -1, bad[5].warmup_start = 1.5, bad[6].peak_lr = INFINITY;
    VitError err;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CU_ASSERT_EQUAL(lr_schedule_check(&bad[i], &err), VIT_ERR_USAGE);
}

// 2^20 gradients of 0.1f: the norm is exactly 1024·0.1f. Summed in float32
// the squares fall below the sum's last place and the norm comes out 0.7% short.
static void test_norm_is_summed_in_double(void) {
    Plain t = {0};
    plain_add(&t, (size_t)1 << 19, 0.0f, 0.1f, true);
    plain_add(&t, (size_t)1 << 19, 0.0f, 0.1f, false);
    CU_ASSERT_DOUBLE_EQUAL(optim_grad_norm(t.p, t.count), 1024.0 * 0.1f, 1e-9);
    plain_free(&t);
}

static void test_clipping_edge_cases(void) {
    Plain t = {0};
    plain_add(&t, 4, 0.0f, 0.5f, true); // norm 1
    CU_ASSERT_DOUBLE_EQUAL(optim_clip_grad_norm(t.p, 1, 2.0), 1.0, 1e-12);
    for (int j = 0; j < 4; j++) CU_ASSERT_EQUAL(t.p[0].grad[j], 0.5f); // short enough: untouched
    CU_ASSERT_DOUBLE_EQUAL(optim_clip_grad_norm(t.p, 1, 0.25), 1.0, 1e-12);
    CU_ASSERT_DOUBLE_EQUAL(optim_grad_norm(t.p, 1), 0.25, 1e-6);
    for (int j = 0; j < 4; j++) t.p[0].grad[j] = 0.0f; // a zero norm divides nothing by 0
    CU_ASSERT_EQUAL(optim_clip_grad_norm(t.p, 1, 1.0), 0.0);
    t.p[0].grad[1] = NAN, t.p[0].grad[2] = 3.0f;  // non-finite: reported, gradients left alone
    CU_ASSERT_TRUE(isnan(optim_clip_grad_norm(t.p, 1, 1.0)));
    CU_ASSERT_EQUAL(t.p[0].grad[2], 3.0f);
    t.p[0].grad[1] = INFINITY;
    CU_ASSERT_TRUE(isinf(optim_clip_grad_norm(t.p, 1, 1.0)));
    CU_ASSERT_EQUAL(t.p[0].grad[2], 3.0f);
    CU_ASSERT_EQUAL(optim_clip_grad_norm(t.p, 0, 1.0), 0.0);
    plain_free(&t);
}

/* --------------------------------------------------------- over a model */

static const VitConfig small_config = {.image_size = 16, .patch_size = 8, .channels = 3,
                                       .dim = 16, .depth = 2, .heads = 2, .mlp_dim = 32,
                                       .num_classes = 5, .ln_eps = 1e-6f};

/** A gradient buffer laid out like the weights: one allocation carved by the table. */
typedef struct {
    VitGradWeights w;
    float *memory;
} Grads;

// Carves the buffer in forward order, q, k and v fused, each part after the last.
static void grads_new(Grads *g, const VitConfig *cfg, float value) {
    g->w = (VitGradWeights){.blocks = vit_calloc((size_t)cfg->depth, sizeof(VitBlockGrads))};
    const size_t total = (size_t)vit_param_count(cfg);
    g->memory = vit_malloc(total * sizeof(float));
    for (size_t i = 0; i < total; i++) g->memory[i] = value;
    float *at = g->memory;
    VitParamIter it = vit_param_iter(cfg->depth, VIT_ORDER_FORWARD, VIT_QKV_FUSED);
    for (const VitParamSpec *s; (s = vit_param_next(&it));) {
        const int parts = vit_param_parts(s);
        const size_t part = (size_t)vit_param_numel(s, cfg) / (size_t)parts;
        for (int j = 0; j < parts; j++, at += part) *vit_param_grad_slot(&g->w, s, it.block, j) = at;
    }
}

static void grads_free(Grads *g) {
    free(g->memory);
    free(g->w.blocks);
}

// timm's param_groups_weight_decay(), from the name and shape alone: no decay
// for ndim ≤ 1, a name ending in ".bias", or one of no_weight_decay()'s names.
static bool timm_decays(const VitParam *p) {
    const size_t len = strlen(p->name);
    const bool bias = len >= 5 && strcmp(p->name + len - 5, ".bias") == 0;
    const bool listed = strcmp(p->name, "cls_token") == 0 || strcmp(p->name, "pos_embed") == 0;
    return !(p->ndim <= 1 || bias || listed);
}

static void test_model_tensors_follow_the_table_and_timm(void) {
    Vit vit;
    VitError err;
    const VitInit init = vit_init_timm(3);
    CU_ASSERT_EQUAL_FATAL(vit_build_random(&vit, &small_config, &init, &err), VIT_OK);
    Grads g;
    grads_new(&g, &small_config, 0.0f);
    AdamW opt;
    const AdamWConfig cfg = adamw_defaults();
    CU_ASSERT_EQUAL_FATAL(adamw_init_vit(&opt, &vit, &g.w, &cfg, &err), VIT_OK);
    const int n = vit_params(&vit, NULL), L = small_config.depth;
    CU_ASSERT_EQUAL_FATAL(opt.count, n);
    CU_ASSERT_EQUAL(n, vit_param_tensor_count(&small_config));
    VitParam *list = vit_calloc((size_t)n, sizeof *list);
    vit_params(&vit, list);
    int decaying = 0;
    size_t values = 0;
    for (int i = 0; i < n; i++) {
        const OptimParam *p = &opt.params[i];
        CU_ASSERT_STRING_EQUAL(p->name, list[i].name);
        CU_ASSERT_PTR_EQUAL(p->data, list[i].data);
        CU_ASSERT_EQUAL(p->numel, list[i].numel);
        CU_ASSERT_EQUAL(p->decay, timm_decays(&list[i]));
        CU_ASSERT_EQUAL(adamw_decays(list[i].spec), timm_decays(&list[i])); // the rule itself
        CU_ASSERT_TRUE(p->grad >= g.memory && p->grad + p->numel <= g.memory + vit_param_count(&small_config));
        decaying += p->decay;
        values += p->numel;
    }
    CU_ASSERT_EQUAL(decaying, 2 + 4 * L); // patch and head weights, 4 linear weights per block
    CU_ASSERT_EQUAL(values, (size_t)vit_param_count(&small_config));
    CU_ASSERT_EQUAL(opt.floats, 2 * values);
    free(list);
    adamw_free(&opt);
    grads_free(&g);
    vit_free(&vit);
}

// One step with every gradient 1 moves every parameter by ≈ −lr (bias
// correction at t = 1), after the decay of those that decay.
static void test_model_step_moves_every_parameter(void) {
    Vit vit, before;
    VitError err;
    const VitInit init = {.seed = 4, .std = 0.5f, .bias_std = 0.5f, .norm_std = 0.5f};
    CU_ASSERT_EQUAL_FATAL(vit_build_random(&vit, &small_config, &init, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(vit_build_random(&before, &small_config, &init, &err), VIT_OK);
    Grads g;
    grads_new(&g, &small_config, 1.0f);
    AdamWConfig cfg = adamw_defaults();
    cfg.weight_decay = 0.5;
    AdamW opt;
    CU_ASSERT_EQUAL_FATAL(adamw_init_vit(&opt, &vit, &g.w, &cfg, &err), VIT_OK);
    const double lr = 0.01;
    adamw_step(&opt, lr);
    const int n = vit_params(&before, NULL);
    VitParam *old = vit_calloc((size_t)n, sizeof *old);
    vit_params(&before, old);
    int wrong = 0;
    for (int i = 0; i < n; i++) {
        const double keep = opt.params[i].decay ? 1.0 - lr * cfg.weight_decay : 1.0;
        for (size_t j = 0; j < old[i].numel; j++)
            wrong += fabs(opt.params[i].data[j] - (old[i].data[j] * keep - lr)) > 1e-6;
    }
    CU_ASSERT_EQUAL(wrong, 0);
    free(old);
    adamw_free(&opt);
    grads_free(&g);
    vit_free(&vit);
    vit_free(&before);
}

static void test_model_refuses_other_gradient_layouts(void) {
    Vit vit;
    VitError err;
    const VitInit init = vit_init_timm(3);
    CU_ASSERT_EQUAL_FATAL(vit_build_random(&vit, &small_config, &init, &err), VIT_OK);
    Grads g;
    grads_new(&g, &small_config, 0.0f);
    AdamW opt;
    const AdamWConfig cfg = adamw_defaults();
    float *head = g.w.head_w;
    g.w.head_w = NULL; // a tensor missing
    CU_ASSERT_EQUAL(adamw_init_vit(&opt, &vit, &g.w, &cfg, &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "no tensor for 'head.weight'"));
    g.w.head_w = head;
    // q, k, v apart (as Hugging Face keeps them) against fused weights
    AttentionGrads *a = &g.w.blocks[1].attn;
    float *k = a->k_w;
    a->k_w = g.memory; // no longer right after q
    CU_ASSERT_EQUAL(adamw_init_vit(&opt, &vit, &g.w, &cfg, &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "not laid out like the weights"));
    a->k_w = k;
    CU_ASSERT_EQUAL(adamw_init_vit(&opt, &vit, &g.w, &cfg, &err), VIT_OK);
    adamw_free(&opt);
    grads_free(&g);
    vit_free(&vit);
}

// Weights mapped in place from a file live in a read-only map: refused, by name.
static void test_model_refuses_mapped_weights(void) {
    char path[256];
    const char *dir = getenv("TMPDIR");
    snprintf(path, sizeof path, "%s/vit-test-optim-%d.safetensors", dir ? dir : "/tmp",
             (int)getpid());
    Vit made, vit;
    VitError err;
    const VitInit init = vit_init_timm(3);
    CU_ASSERT_EQUAL_FATAL(vit_build_random(&made, &small_config, &init, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(vit_save(&made, path, &err), VIT_OK);
    vit_free(&made);
    CU_ASSERT_EQUAL_FATAL(vit_build(&vit, path, &err), VIT_OK);
    Grads g;
    grads_new(&g, &small_config, 0.0f);
    AdamW opt;
    const AdamWConfig cfg = adamw_defaults();
    CU_ASSERT_EQUAL(adamw_init_vit(&opt, &vit, &g.w, &cfg, &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "mapped read-only"));
    CU_ASSERT_PTR_NULL(opt.memory);
    grads_free(&g);
    vit_free(&vit);
    unlink(path);
}

CU_TestInfo tests_optim[] = {
    {"ten AdamW steps equal torch.optim.AdamW", test_ten_steps_equal_pytorch},
    {"schedules equal PyTorch's schedulers", test_schedules_equal_pytorch},
    {"clipping equals clip_grad_norm_", test_clipping_equals_pytorch},
    {"two Adam steps by hand", test_two_steps_by_hand},
    {"bias correction at step 1", test_bias_correction_at_step_one},
    {"decay skips excluded tensors and the moments", test_decay_skips_excluded_tensors_and_the_moments},
    {"defaults are PyTorch's", test_defaults_are_pytorchs},
    {"the state is one allocation carved in order", test_state_is_one_allocation_carved_in_order},
    {"bad constants and tensors are refused", test_refuses_bad_constants_and_tensors},
    {"the schedule by hand", test_schedule_by_hand},
    {"lr_schedule_check refuses nonsense", test_schedule_check_refuses_nonsense},
    {"the norm is summed in double", test_norm_is_summed_in_double},
    {"clipping's edge cases", test_clipping_edge_cases},
    {"a model's tensors follow the table and timm", test_model_tensors_follow_the_table_and_timm},
    {"a model's step moves every parameter", test_model_step_moves_every_parameter},
    {"a model refuses other gradient layouts", test_model_refuses_other_gradient_layouts},
    {"a model refuses weights mapped from a file", test_model_refuses_mapped_weights},
    CU_TEST_INFO_NULL,
};
