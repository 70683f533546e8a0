/**
 * @file test_check_diagnose.c
 * @brief diagnose.h on small hand-made tensors: each mistake made by hand is recognised
 *        as itself, and noise, or the right answer, as nothing.
 *
 * Every "got" here is the expected tensor changed by the arithmetic of one mistake,
 * written out in the test; none comes from the library. And the golden comparison
 * of a chapter: its first wrong value stops the chapter at its next section.
 */
#include <CUnit/CUnit.h>
#include <fcntl.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../chapters/chapters.h"
#include "base/rng.h"
#include "check.h"
#include "diagnose.h"

enum { WORDS = 256 };

// True when diagnose() says something holding `part` (and prints it, for a failing test).
static bool says(const char *stage, const Tensor *got, const Tensor *expected,
                 const DiagnoseContext *ctx, const char *part) {
    char words[WORDS];
    const bool said = diagnose(words, sizeof words, stage, got, expected, 1e-5f, 1e-4f, ctx);
    if (!said || !strstr(words, part))
        fprintf(stderr, "\n    %s: said \"%s\", wanted \"%s\"", stage, words, part);
    return said && strstr(words, part) != NULL;
}

static bool says_nothing(const char *stage, const Tensor *got, const Tensor *expected,
                         const DiagnoseContext *ctx) {
    char words[WORDS];
    const bool said = diagnose(words, sizeof words, stage, got, expected, 1e-5f, 1e-4f, ctx);
    if (said) fprintf(stderr, "\n    %s: said \"%s\", wanted nothing", stage, words);
    return !said && words[0] == '\0';
}

// The other stages a test knows, by name, for DiagnoseContext.expected_of.
typedef struct {
    const char *name[2];
    const Tensor *t[2];
} Stages;

// The same over a CheckStage list (check.h), by exact name.
static bool known_of(void *user, const char *name, Tensor *out) {
    for (const CheckStage *k = user; k->name; k++)
        if (!strcmp(k->name, name)) {
            *out = tensor_clone(k->expected);
            return true;
        }
    return false;
}

static bool stages_expected_of(void *user, const char *name, Tensor *out) {
    const Stages *s = user;
    for (int i = 0; i < 2; i++)
        if (s->name[i] && !strcmp(s->name[i], name)) {
            *out = tensor_clone(s->t[i]);
            return true;
        }
    return false;
}

// A (2, 3, 3) tensor with nothing symmetric about it: 0.1·(9o + 3i + j + 1) − 1.
static Tensor ramp(void) {
    Tensor t = tensor_new(3, 2, 3, 3);
    for (size_t i = 0; i < t.numel; i++) t.data[i] = 0.1f * (float)(i + 1) - 1.05f;
    return t;
}

static void test_factor_of_sqrt_dh(void) {
    Tensor want = ramp(), got = ramp();
    const DiagnoseContext dh64 = {.head_dim = 64};
    for (size_t i = 0; i < got.numel; i++) got.data[i] = 8.0f * want.data[i]; // never × 1/8
    CU_ASSERT_TRUE(says("blocks.0.attn.scaled", &got, &want, &dh64, "√Dh = 8 (Dh = 64): the scores were not scaled"));
    for (size_t i = 0; i < got.numel; i++) got.data[i] = want.data[i] / 8.0f; // × 1/8 twice
    CU_ASSERT_TRUE(says("blocks.0.attn.scaled", &got, &want, &dh64, "applied twice"));
    for (size_t i = 0; i < got.numel; i++) got.data[i] = 3.0f * want.data[i];
    CU_ASSERT_TRUE(says("x", &got, &want, NULL, "exactly 3 times the expected"));
    // one number of the scaled scores (chapter 08's std) is named only at √Dh, 1/√Dh or Dh
    Tensor std_want = tensor_scalar(0.3f), std_got = tensor_scalar(0.3f * 8);
    CU_ASSERT_TRUE(says("attn.scaled.std", &std_got, &std_want, &dh64, "√Dh = 8 (Dh = 64)"));
    std_got.data[0] = 0.3f * 3;
    CU_ASSERT_TRUE(says_nothing("attn.scaled.std", &std_got, &std_want, &dh64));
    tensor_free(&std_want);
    tensor_free(&std_got);
    tensor_free(&want);
    tensor_free(&got);
}

static void test_transposed(void) {
    Tensor want = ramp(), got = ramp();
    for (int o = 0; o < 2; o++) // got[o][i][j] = want[o][j][i]
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) got.data[o * 9 + i * 3 + j] = want.data[o * 9 + j * 3 + i];
    CU_ASSERT_TRUE(says("blocks.0.attn.scores", &got, &want, NULL, "queries and keys swapped"));
    CU_ASSERT_TRUE(says("x", &got, &want, NULL, "last two axes swapped"));
    const float sym[4] = {1, 2, 2, 5}, other[4] = {1, 2, 2, 6}; // symmetric: no transpose to see
    Tensor s = tensor_from(sym, 2, (int[]){2, 2}), t = tensor_from(other, 2, (int[]){2, 2});
    CU_ASSERT_TRUE(says_nothing("x", &t, &s, NULL));
    tensor_free(&s);
    tensor_free(&t);
    tensor_free(&want);
    tensor_free(&got);
}

static void test_shifted_by_one(void) {
    const float want[8] = {1, 2, 3, 4, 5, 6, 7, 8}; // (4, 2): row i holds 2i+1, 2i+2
    const float late[8] = {3, 4, 5, 6, 7, 8, 0, 0}; // row i is row i + 1: the last unwritten
    Tensor w = tensor_from(want, 2, (int[]){4, 2}), g = tensor_from(late, 2, (int[]){4, 2});
    CU_ASSERT_TRUE(says("x", &g, &w, NULL, "shifted by one along axis 0 (got[i] = expected[i + 1])"));
    tensor_free(&w);
    tensor_free(&g);
}

static void test_offsets(void) {
    const float want[6] = {1, -2, 3, 0.5f, 4, -1}; // (2, 3)
    const float all[6] = {1.5f, -1.5f, 3.5f, 1, 4.5f, -0.5f};  // + 0.5 everywhere
    const float rows[6] = {2, -1, 4, 0.25f, 3.75f, -1.25f};   // + 1 in row 0, − 0.25 in row 1
    const float cols[6] = {1.1f, -1.8f, 3.3f, 0.6f, 4.2f, -0.7f}; // + (0.1, 0.2, 0.3) per feature
    Tensor w = tensor_from(want, 2, (int[]){2, 3});
    Tensor a = tensor_from(all, 2, (int[]){2, 3}), r = tensor_from(rows, 2, (int[]){2, 3});
    Tensor c = tensor_from(cols, 2, (int[]){2, 3});
    CU_ASSERT_TRUE(says("x", &a, &w, NULL, "one constant, 0.5, everywhere"));
    CU_ASSERT_TRUE(says("blocks.0.norm1", &r, &w, NULL, "the row's mean not subtracted"));
    CU_ASSERT_TRUE(says("x", &c, &w, NULL, "a bias vector missing or added twice"));
    tensor_free(&w);
    tensor_free(&a);
    tensor_free(&r);
    tensor_free(&c);
}

static void test_softmax_mistakes(void) {
    // rows sum to 1; "over" has columns summing to 1 instead, and is not want's transpose
    const float want[9] = {0.5f, 0.5f, 0, 0.2f, 0.3f, 0.5f, 0.1f, 0.1f, 0.8f};
    const float over[9] = {0.5f, 0.2f, 0.1f, 0.25f, 0.3f, 0.1f, 0.25f, 0.5f, 0.8f};
    float undivided[9];
    for (int i = 0; i < 9; i++) undivided[i] = want[i] * (float)(2 + i / 3); // rows × 2, 3, 4
    Tensor w = tensor_from(want, 2, (int[]){3, 3}), o = tensor_from(over, 2, (int[]){3, 3});
    Tensor u = tensor_from(undivided, 2, (int[]){3, 3});
    CU_ASSERT_TRUE(says("blocks.0.attn.probs", &o, &w, NULL, "softmax ran over the wrong axis"));
    CU_ASSERT_TRUE(says("blocks.0.attn.probs", &u, &w, NULL, "not divided by their sum"));
    tensor_free(&w);
    tensor_free(&o);
    tensor_free(&u);
}

static void test_softmax_of_unscaled_scores(void) {
    const float scores[4] = {1, 3, -2, 0}; // (2, 2); Dh = 4, so the scale is 1/2
    float want[4], got[4];
    for (int r = 0; r < 2; r++) { // softmax of each row of scores/2 and of scores, by hand
        const float *s = scores + 2 * r;
        const double a = exp(s[0] / 2.0), b = exp(s[1] / 2.0), c = exp(s[0]), d = exp(s[1]);
        want[2 * r] = (float)(a / (a + b)), want[2 * r + 1] = (float)(b / (a + b));
        got[2 * r] = (float)(c / (c + d)), got[2 * r + 1] = (float)(d / (c + d));
    }
    Tensor s = tensor_from(scores, 2, (int[]){2, 2});
    Tensor w = tensor_from(want, 2, (int[]){2, 2}), g = tensor_from(got, 2, (int[]){2, 2});
    Stages known = {{"blocks.0.attn.scores"}, {&s}};
    const DiagnoseContext ctx = {.expected_of = stages_expected_of, .user = &known};
    CU_ASSERT_TRUE(says("blocks.0.attn.probs", &g, &w, &ctx, "softmax of the unscaled blocks.0.attn.scores"));
    // no scores stage, but q and k (N = 2, Dh = 4): the scores are Q·Kᵀ, the scale 1/2
    const float q[8] = {1, 1, 1, 1, -1, 0, 0, 0}, k[8] = {0.25f, 0.25f, 0.25f, 0.25f, 1, 1, 0.5f, 0.5f};
    float qk[4];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 2; j++) {
            qk[2 * i + j] = 0;
            for (int d = 0; d < 4; d++) qk[2 * i + j] += q[4 * i + d] * k[4 * j + d];
        }
    float want2[4], got2[4];
    for (int r = 0; r < 2; r++) {
        const float *s2 = qk + 2 * r;
        const double a = exp(s2[0] / 2.0), b = exp(s2[1] / 2.0), c = exp(s2[0]), d = exp(s2[1]);
        want2[2 * r] = (float)(a / (a + b)), want2[2 * r + 1] = (float)(b / (a + b));
        got2[2 * r] = (float)(c / (c + d)), got2[2 * r + 1] = (float)(d / (c + d));
    }
    Tensor tq = tensor_from(q, 2, (int[]){2, 4}), tk = tensor_from(k, 2, (int[]){2, 4});
    Tensor w2 = tensor_from(want2, 2, (int[]){2, 2}), g2 = tensor_from(got2, 2, (int[]){2, 2});
    Stages qk_known = {{"q", "k"}, {&tq, &tk}};
    const DiagnoseContext qk_ctx = {.expected_of = stages_expected_of, .user = &qk_known};
    CU_ASSERT_TRUE(says("probs", &g2, &w2, &qk_ctx, "softmax of the unscaled scores Q·Kᵀ"));
    for (int r = 0; r < 2; r++) { // K·Qᵀ/2: row r holds the scores of column r
        const double a = exp(qk[r] / 2.0), b = exp(qk[2 + r] / 2.0);
        g2.data[2 * r] = (float)(a / (a + b)), g2.data[2 * r + 1] = (float)(b / (a + b));
    }
    CU_ASSERT_TRUE(says("probs", &g2, &w2, &qk_ctx, "queries and keys swapped"));
    for (int r = 0; r < 2; r++) { // Q·Kᵀ/4: divided by Dh
        const double a = exp(qk[2 * r] / 4.0), b = exp(qk[2 * r + 1] / 4.0);
        g2.data[2 * r] = (float)(a / (a + b)), g2.data[2 * r + 1] = (float)(b / (a + b));
    }
    CU_ASSERT_TRUE(says("probs", &g2, &w2, &qk_ctx, "divided by Dh, not √Dh"));
    tensor_free(&tq), tensor_free(&tk), tensor_free(&w2), tensor_free(&g2);
    tensor_free(&s);
    tensor_free(&w);
    tensor_free(&g);
}

static void test_gelu_forms(void) {
    const float x[5] = {-3, -1, -0.25f, 0.5f, 2};
    float erf_form[5], tanh_form[5], relu[5];
    for (int i = 0; i < 5; i++) {
        const double v = x[i];
        erf_form[i] = (float)(0.5 * v * (1 + erf(v / sqrt(2.0))));
        tanh_form[i] = (float)(0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * v * v * v))));
        relu[i] = v > 0 ? (float)v : 0.0f;
    }
    Tensor in = tensor_from(x, 1, (int[]){5}), want = tensor_from(erf_form, 1, (int[]){5});
    Tensor t = tensor_from(tanh_form, 1, (int[]){5}), r = tensor_from(relu, 1, (int[]){5});
    Stages known = {{"blocks.0.mlp.fc1"}, {&in}};
    const DiagnoseContext ctx = {.expected_of = stages_expected_of, .user = &known};
    CU_ASSERT_TRUE(says("blocks.0.mlp.gelu", &t, &want, &ctx, "tanh approximation"));
    CU_ASSERT_TRUE(says("blocks.0.mlp.gelu", &r, &want, &ctx, "ReLU, not GELU"));
    CU_ASSERT_TRUE(says("blocks.0.mlp.gelu", &in, &want, &ctx, "the GELU was never applied"));
    tensor_free(&in);
    tensor_free(&want);
    tensor_free(&t);
    tensor_free(&r);
}

static void test_weight_not_transposed(void) {
    const float x[4] = {1, 2, -1, 0.5f};             // (2, 2): two rows of two inputs
    const float w[4] = {3, -1, 0.5f, 2}, b[2] = {0.25f, -0.75f}; // (O = 2, I = 2), bias (2)
    float want[4], got[4];
    for (int n = 0; n < 2; n++)
        for (int o = 0; o < 2; o++) { // want = x·Wᵀ + b; got = x·W + b (W's rows taken as columns)
            want[n * 2 + o] = x[n * 2] * w[o * 2] + x[n * 2 + 1] * w[o * 2 + 1] + b[o];
            got[n * 2 + o] = x[n * 2] * w[o] + x[n * 2 + 1] * w[2 + o] + b[o];
        }
    Tensor tx = tensor_from(x, 2, (int[]){2, 2}), tw = tensor_from(w, 2, (int[]){2, 2});
    Tensor tw_ = tensor_from(want, 2, (int[]){2, 2}), tg = tensor_from(got, 2, (int[]){2, 2});
    const CheckStage known[] = {{"x", &tx}, {"w", &tw}, {NULL, NULL}};
    DiagnoseContext ctx = {.expected_of = known_of, .user = (void *)known};
    CU_ASSERT_TRUE(says("linear", &tg, &tw_, &ctx, "the weight was not transposed"));
    tensor_free(&tx), tensor_free(&tw), tensor_free(&tw_), tensor_free(&tg);
}

static void test_layernorm_forms(void) {
    const float x[6] = {1, 2, 6, -1, 0, 4}; // (2, 3); row means 3 and 1
    float want[6], no_mean[6];
    for (int r = 0; r < 2; r++) { // γ = 1, β = 0, ε = 1e-6, by hand
        const float *xr = x + 3 * r;
        const double mean = (xr[0] + xr[1] + xr[2]) / 3.0;
        double var = 0, sq = 0;
        for (int j = 0; j < 3; j++) var += (xr[j] - mean) * (xr[j] - mean), sq += xr[j] * xr[j];
        for (int j = 0; j < 3; j++) {
            want[3 * r + j] = (float)((xr[j] - mean) / sqrt(var / 3 + 1e-6));
            no_mean[3 * r + j] = (float)(xr[j] / sqrt(sq / 3 + 1e-6));
        }
    }
    Tensor tx = tensor_from(x, 2, (int[]){2, 3}), eps = tensor_scalar(1e-6f);
    Tensor w = tensor_from(want, 2, (int[]){2, 3}), g = tensor_from(no_mean, 2, (int[]){2, 3});
    const CheckStage known[] = {{"x", &tx}, {"eps", &eps}, {NULL, NULL}};
    DiagnoseContext ctx = {.expected_of = known_of, .user = (void *)known};
    CU_ASSERT_TRUE(says("layernorm", &g, &w, &ctx, "without the mean subtracted"));
    tensor_free(&tx), tensor_free(&eps), tensor_free(&w), tensor_free(&g);
}

// A trace's norm1, whose input is the stage before it (embed) and whose γ, β the
// diagnosis does not know: LayerNorm without its mean is still recognised.
static void test_trace_layernorm_without_mean(void) {
    const float x[12] = {1, 2, 6, -1, 0, 4, 3, 3.5f, -2, 0.5f, 1, 1.25f}; // (4, 3)
    const float gamma[3] = {2, 1, 0.5f}, beta[3] = {0.1f, 0, -0.2f};
    float want[12], no_mean[12];
    for (int r = 0; r < 4; r++) {
        const float *xr = x + 3 * r;
        const double mean = (xr[0] + xr[1] + xr[2]) / 3.0;
        double var = 0, sq = 0;
        for (int j = 0; j < 3; j++) var += (xr[j] - mean) * (xr[j] - mean), sq += xr[j] * xr[j];
        for (int j = 0; j < 3; j++) {
            want[3 * r + j] = (float)((xr[j] - mean) / sqrt(var / 3 + 1e-6) * gamma[j] + beta[j]);
            no_mean[3 * r + j] = (float)(xr[j] / sqrt(sq / 3 + 1e-6) * gamma[j] + beta[j]);
        }
    }
    Tensor tx = tensor_from(x, 2, (int[]){4, 3});
    Tensor w = tensor_from(want, 2, (int[]){4, 3}), g = tensor_from(no_mean, 2, (int[]){4, 3});
    Stages known = {{"embed"}, {&tx}};
    const DiagnoseContext ctx = {.expected_of = stages_expected_of, .user = &known, .previous = "embed"};
    CU_ASSERT_TRUE(says("blocks.0.norm1", &g, &w, &ctx, "LayerNorm of the expected embed without the mean"));
    tensor_free(&tx), tensor_free(&w), tensor_free(&g);
}

static void test_a_step_left_out(void) {
    const float tokens[4] = {1, 2, 3, 4}, pos[4] = {0.5f, -0.5f, 0.25f, 0};
    float embed[4];
    for (int i = 0; i < 4; i++) embed[i] = tokens[i] + pos[i];
    Tensor t = tensor_from(tokens, 2, (int[]){2, 2}), e = tensor_from(embed, 2, (int[]){2, 2});
    Stages known = {{"tokens", "norm"}, {&t, &e}};
    DiagnoseContext ctx = {.expected_of = stages_expected_of, .user = &known};
    CU_ASSERT_TRUE(says("embed", &t, &e, &ctx, "the position embedding was not added"));
    ctx.previous = "norm"; // a stage the table does not know: only the stream's order tells
    CU_ASSERT_TRUE(says("something", &e, &t, &ctx, "the expected norm, the stage compared before it"));
    tensor_free(&t);
    tensor_free(&e);
}

static void test_unwritten(void) {
    Tensor want = ramp(), got = tensor_new(3, 2, 3, 3);
    CU_ASSERT_TRUE(says("x", &got, &want, NULL, "every element is exactly 0"));
    for (size_t i = 0; i < got.numel; i++) got.data[i] = NAN;
    CU_ASSERT_TRUE(says("x", &got, &want, NULL, "every element is NaN"));
    for (size_t i = 0; i < got.numel; i++) got.data[i] = i / 3 == 4 ? 0.0f : want.data[i];
    CU_ASSERT_TRUE(says("x", &got, &want, NULL, "1 of 6 rows (of the last axis) are all 0 or NaN, the first row 4"));
    tensor_free(&want);
    tensor_free(&got);
}

static void test_scale_and_layernorm_pins(void) {
    Tensor want = tensor_scalar(0.125f), got = tensor_scalar(1.0f); // 1/√64
    CU_ASSERT_TRUE(says("scale", &got, &want, NULL, "the scores are not scaled (Dh = 64"));
    got.data[0] = 1.0f / 64;
    CU_ASSERT_TRUE(says("scale", &got, &want, NULL, "1/Dh, not 1/√Dh"));
    got.data[0] = 8.0f;
    CU_ASSERT_TRUE(says("scale", &got, &want, NULL, "inverted"));
    got.data[0] = 0.3f;
    CU_ASSERT_TRUE(says_nothing("scale", &got, &want, NULL));
    const float std_eps[3] = {1, 0.7f, 0.1f}, ones[3] = {1, 1, 1};
    Tensor s = tensor_from(std_eps, 1, (int[]){3}), o = tensor_from(ones, 1, (int[]){3});
    CU_ASSERT_TRUE(says("eps.std_1e-6", &o, &s, NULL, "the ε in 1/√(var + ε) is missing"));
    Tensor zero = tensor_scalar(0.0f), mean = tensor_scalar(0.02f);
    CU_ASSERT_TRUE(says("token0_ln_mean", &mean, &zero, NULL, "the mean was not subtracted"));
    tensor_free(&want);
    tensor_free(&got);
    tensor_free(&s);
    tensor_free(&o);
    tensor_free(&zero);
    tensor_free(&mean);
}

static void test_noise_is_nothing(void) {
    Tensor want = tensor_new(3, 2, 4, 4), got = tensor_new(3, 2, 4, 4);
    Rng rng;
    rng_seed(&rng, 5);
    rng_fill_normal(&rng, want.data, want.numel, 0.0f, 1.0f);
    rng_fill_normal(&rng, got.data, got.numel, 0.0f, 1.0f);
    for (const char *const *s = (const char *const[]){"x", "blocks.0.attn.scaled",
                                                        "blocks.0.attn.probs", "blocks.0.mlp.gelu",
                                                        "embed", "blocks.0.out", NULL}; *s; s++) {
        CU_ASSERT_TRUE(says_nothing(*s, &got, &want, NULL));
        CU_ASSERT_TRUE(says_nothing(*s, &want, &want, NULL)); // the right answer is no mistake
    }
    // nearly right: each row off by its own factor of 1 + 1e-4·(r + 1), within 4 tolerances
    for (size_t i = 0; i < got.numel; i++) got.data[i] = want.data[i] * (1.0f + 1e-4f * (float)(i / 4 + 1));
    CU_ASSERT_TRUE(says_nothing("blocks.1.attn.q", &got, &want, NULL));
    Tensor a = tensor_scalar(2.0f), b = tensor_scalar(3.0f); // one number is a multiple of any
    CU_ASSERT_TRUE(says_nothing("x", &a, &b, NULL));
    tensor_free(&want);
    tensor_free(&got);
    tensor_free(&a);
    tensor_free(&b);
}

/* ------------------------------------------ a chapter stopped when wrong */

typedef struct {
    GoldenCheck golden;
    int pinned;  // values the chapter pinned
    bool spoil;  // make the first value wrong: +1 on its first element
} Spoiler;

static void pin_spoiled(void *user, const char *name, const Tensor *t) {
    Spoiler *s = user;
    Tensor copy = tensor_clone(t);
    if (s->spoil && s->pinned == 0 && copy.numel) copy.data[0] += 1.0f;
    s->pinned++;
    golden_check(&s->golden, name, &copy);
    tensor_free(&copy);
}

// Chapter 01 against its golden, its first value spoiled or not: how many
// values it pinned, and how many of the golden's it never produced.
static int run_chapter01(bool spoil, int *never_produced) {
    Spoiler s = {.spoil = spoil};
    *never_produced = -1;
    if (!golden_open(&s.golden, "ch01_dot_product.safetensors")) return 0;
    Chapter ch = {.out = NULL, .pin = pin_spoiled, .pin_user = &s};
    s.golden.stop = &ch.stop;
    const int err = dup(STDERR_FILENO), null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, STDERR_FILENO); // the spoiled value's report is not this test's
    chapter01_run(&ch);
    fflush(stderr);
    if (err >= 0) dup2(err, STDERR_FILENO), close(err);
    if (null >= 0) close(null);
    *never_produced = 0;
    for (int i = 0; i < s.golden.golden.count; i++) *never_produced += !s.golden.seen[i];
    CU_ASSERT_EQUAL(s.golden.mismatches, spoil ? 1 : 0); // only the spoiled value differs
    CU_ASSERT_EQUAL(ch.stop, spoil);
    CU_ASSERT_EQUAL(ch_section(&ch, "one more"), !spoil); // a stopped chapter runs no more sections
    golden_close(&s.golden);
    return s.pinned;
}

static void test_a_wrong_value_stops_the_chapter(void) {
    int missing_whole, missing_stopped;
    const int whole = run_chapter01(false, &missing_whole);
    const int stopped = run_chapter01(true, &missing_stopped);
    CU_ASSERT_EQUAL(missing_whole, 0); // unspoiled, it produces every value of the golden
    CU_ASSERT_TRUE(stopped >= 1);
    CU_ASSERT_TRUE(stopped < whole); // spoiled, the sections after the first are skipped
    CU_ASSERT_EQUAL(missing_stopped, whole - stopped);
}

CU_TestInfo tests_check_diagnose[] = {
    {"a factor, named √Dh in the scaled scores", test_factor_of_sqrt_dh},
    {"a transposed copy, and a symmetric one is not", test_transposed},
    {"shifted by one along an axis", test_shifted_by_one},
    {"an offset: overall, per row, per feature", test_offsets},
    {"the wrong softmax axis; rows never divided", test_softmax_mistakes},
    {"the softmax of the unscaled, over-scaled or swapped scores", test_softmax_of_unscaled_scores},
    {"GELU's tanh form, ReLU, no GELU at all", test_gelu_forms},
    {"a weight not transposed", test_weight_not_transposed},
    {"LayerNorm without its mean", test_layernorm_forms},
    {"a trace's LayerNorm without its mean, γ and β fitted", test_trace_layernorm_without_mean},
    {"a step left out: the stage before it", test_a_step_left_out},
    {"an output never written: all 0, all NaN, some rows", test_unwritten},
    {"the scale's value; LayerNorm's ε and mean", test_scale_and_layernorm_pins},
    {"noise, the nearly right and the right answer are nothing", test_noise_is_nothing},
    {"a chapter's first wrong value stops it at its next section",
     test_a_wrong_value_stops_the_chapter},
    CU_TEST_INFO_NULL,
};
