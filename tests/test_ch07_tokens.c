/**
 * @file test_ch07_tokens.c
 * @brief Chapter 07 against PyTorch, the symmetry claims it makes, and the
 *        order of the two steps inside lib's real forward pass.
 *
 * `build/tests/run ch07_tokens` checks the property the chapter rests on for
 * lib's mha_forward() (or a student's replacement): shuffling the tokens
 * shuffles the output the same way, unless positions are added first. And it
 * checks the `tokens` and `embed` stages of vit_forward() on a tiny model
 * against a derivation by hand from its own `patch_embed` stage and weights:
 * [cls] is prepended first, then row i gets position i, so a forward pass
 * that added the positions before prepending [cls] fails here.
 *
 * The two probes at the end are exercise 07's diagnosis: each calls
 * tokens_prepend_cls() or tokens_add_positions() on a batch whose numbers say
 * where they came from (image, patch, feature), compares with the rows
 * written out by hand and, when they differ, with what each likely mistake
 * gives ([cls] appended, positions shifted by one, image 0 only, …), naming
 * the one that matches with check_hint().
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../chapters/chapters.h"
#include "attention/attention.h"
#include "check.h"
#include "hints.h"
#include "ops/ops.h"
#include "base/rng.h"
#include "model/tokens.h"
#include "base/trace.h"
#include "model/vit.h"

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
    ops_add(e, s.x, s.pos, N * D);
    mha(out, e, &s);
    permute(xp, s.x);
    ops_add(e, xp, s.pos, N * D); // positions stay with the slots
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

// tokens[b] = [cls; patch_embed[b]] and embed[b] = tokens[b] + pos: the
// chapter's two steps, written out row by row for a (B, P, D) patch_embed.
static void tokens_then_embed(Tensor *tokens, Tensor *embed, const Tensor *patch_embed,
                              const float *cls, const float *pos) {
    const int batch = patch_embed->shape[0], np = patch_embed->shape[1];
    const int dim = patch_embed->shape[2], nt = np + 1; // P patches, N = P + 1 tokens, width D
    for (int b = 0; b < batch; b++)
        for (int i = 0; i < nt; i++)
            for (int d = 0; d < dim; d++) {
                size_t at = ((size_t)b * nt + i) * dim + d;
                float t = i == 0 ? cls[d] : patch_embed->data[((size_t)b * np + i - 1) * dim + d];
                tokens->data[at] = t;
                embed->data[at] = t + pos[(size_t)i * dim + d]; // row i: position i
            }
}

static void test_vit_forward_prepends_cls_then_adds_positions(void) {
    // a tiny ViT: 8 × 8 images in 4 × 4 patches, P = 4, N = 5, D = 8; a batch of 2
    const VitConfig cfg = {.image_size = 8, .patch_size = 4, .channels = 3, .dim = 8,
                           .depth = 1, .heads = 2, .mlp_dim = 16, .num_classes = 3,
                           .ln_eps = 1e-6f};
    enum { B = 2 };
    Vit vit;
    VitError err;
    VitInit init = vit_init_timm(70);
    CU_ASSERT_EQUAL_FATAL(vit_build_random(&vit, &cfg, &init, &err), VIT_OK);
    const int np = vit_num_patches(&cfg), nt = vit_num_tokens(&cfg), dim = cfg.dim; // P, N, D
    Tensor x = tensor_new(4, B, cfg.channels, cfg.image_size, cfg.image_size);
    Rng rng;
    rng_seed(&rng, 71);
    rng_fill_uniform(&rng, x.data, x.numel, -1.0f, 1.0f);
    TraceRecorder rec = {0};
    CU_ASSERT_EQUAL_FATAL(vit_forward(&vit, &x, trace_record, &rec, &err), VIT_OK);
    const Tensor *patch_embed = trace_find(&rec, "patch_embed");
    const Tensor *tokens = trace_find(&rec, "tokens"), *embed = trace_find(&rec, "embed");
    CU_ASSERT_PTR_NOT_NULL_FATAL(patch_embed);
    CU_ASSERT_PTR_NOT_NULL_FATAL(tokens);
    CU_ASSERT_PTR_NOT_NULL_FATAL(embed);
    Tensor pe_shape = tensor_view(NULL, 3, B, np, dim), tok_shape = tensor_view(NULL, 3, B, nt, dim);
    CU_ASSERT_FATAL(tensor_same_shape(patch_embed, &pe_shape));
    CU_ASSERT_FATAL(tensor_same_shape(tokens, &tok_shape));
    CU_ASSERT_FATAL(tensor_same_shape(embed, &tok_shape));

    const float *cls = vit.weights.cls_token, *pos = vit.weights.pos_embed;
    Tensor want_tokens = tensor_new(3, B, nt, dim), want_embed = tensor_new(3, B, nt, dim);
    tokens_then_embed(&want_tokens, &want_embed, patch_embed, cls, pos);
    assert_tensor_close(tokens, &want_tokens, 0.0f, 0.0f,
                        "vit_forward's tokens: row 0 = cls, row i = patch_embed[i - 1]");
    assert_tensor_close_from(embed, &want_embed, 1e-6f, 0.0f,
                             "vit_forward's embed: row 0 = cls + pos[0], row i = patch_embed[i - 1] "
                             "+ pos[i] ([cls] prepended before the positions are added)",
                             {"tokens", &want_tokens});

    // the check can tell the orders apart: positions first would give row 0 = cls
    // and row i = patch_embed[i - 1] + pos[i - 1], far from the right embed
    float worst = 0;
    for (int b = 0; b < B; b++)
        for (int i = 0; i < nt; i++)
            for (int d = 0; d < dim; d++) {
                float wrong = i == 0 ? cls[d]
                                     : patch_embed->data[((size_t)b * np + i - 1) * dim + d] +
                                           pos[(size_t)(i - 1) * dim + d];
                size_t at = ((size_t)b * nt + i) * dim + d;
                worst = fmaxf(worst, fabsf(wrong - want_embed.data[at]));
            }
    CU_ASSERT(worst > 1e-3f);

    trace_recorder_free(&rec);
    tensor_free(&x), tensor_free(&want_tokens), tensor_free(&want_embed);
    vit_free(&vit);
}

/* -------------------------------------------------------------- the probes */

// A batch of 2 images of 3 patches of width 4 whose numbers tell where they are:
// patch t of image n holds 100·(n + 1) + 10·(t + 1) + d in feature d, so image 1's
// patch 2 reads 230, 231, 232, 233; [cls] is -1, -2, -3, -4.
enum { TB = 2, TP = 3, TN = TP + 1, TD = 4 };
static const float UNWRITTEN = -999.0f; // what the outputs hold before the call

// One likely mistake: its hint, and the rows it would have produced.
typedef struct {
    const char *hint;
    float rows[TB * TN * TD];
} Suspect;

// After a failed check: a hint for every suspect that @p got matches; how many did.
static int name_suspects(const Tensor *got, const Suspect *s, int n) {
    int found = 0;
    for (int i = 0; i < n; i++) {
        Tensor t = tensor_view((float *)s[i].rows, 3, TB, TN, TD);
        if (tensor_near(got, &t, 1e-6f, 1e-6f)) check_hint("%s", s[i].hint), found++;
    }
    return found;
}

// A hint when @p got is all zeros: the skeleton's placeholder is still there. True if so.
static bool nothing_yet(const Tensor *got, const char *function) {
    if (!hint_all_zero(got->data, got->numel)) return false;
    check_hint("%s wrote only zeros: is the exercise's placeholder still there?", function);
    return true;
}

static void fill(float *x, size_t n, float v) {
    for (size_t i = 0; i < n; i++) x[i] = v;
}

// rows[n, i, :] = src row, for image n and token i of a (TB, TN, TD) batch.
static void put(float *rows, int n, int i, const float *src) {
    memcpy(&rows[((size_t)n * TN + i) * TD], src, sizeof(float) * TD);
}

static void test_probe_prepend_cls(void) {
    float patches[TB * TP * TD], cls[TD], got[TB * TN * TD], want[TB * TN * TD];
    for (int n = 0; n < TB; n++)
        for (int t = 0; t < TP; t++)
            for (int d = 0; d < TD; d++)
                patches[(n * TP + t) * TD + d] = 100.0f * (n + 1) + 10.0f * (t + 1) + d;
    for (int d = 0; d < TD; d++) cls[d] = -(d + 1.0f);
    fill(got, TB * TN * TD, UNWRITTEN);
    tokens_prepend_cls(got, patches, cls, TB, TP, TD);
    // torch.cat((cls_token.expand(B, -1, -1), x), dim=1): row 0 [cls], row t + 1 patch t
    for (int n = 0; n < TB; n++) {
        put(want, n, 0, cls);
        for (int t = 0; t < TP; t++) put(want, n, t + 1, &patches[(n * TP + t) * TD]);
    }
    Tensor g = tensor_view(got, 3, TB, TN, TD), w = tensor_view(want, 3, TB, TN, TD);
    if (assert_tensor_close(&g, &w, 0.0f, 0.0f,
                            "tokens_prepend_cls: row 0 of image n is [cls], row t + 1 its patch t "
                            "(-999: never written)") ||
        nothing_yet(&g, "tokens_prepend_cls"))
        return;
    static Suspect s[4] = {
        {"[cls] is appended after the patches: timm's torch.cat((cls_token, x), dim=1) puts "
         "it first, row 0 of every image, and the patches in rows 1 ... P", {0}},
        {"image n's tokens start at tokens + n*N*D = n*(P + 1)*D, not n*P*D: every image has "
         "one row more than it has patches", {0}},
        {"every image gets image 0's patches: image n's come from patch_embed + n*P*D", {0}},
        {"only image 0 got [cls]: every image needs its own copy of it, in its row 0", {0}},
    };
    for (int i = 0; i < 4; i++) fill(s[i].rows, TB * TN * TD, UNWRITTEN);
    for (int n = 0; n < TB; n++) {
        for (int t = 0; t < TP; t++) put(s[0].rows, n, t, &patches[(n * TP + t) * TD]);
        put(s[0].rows, n, TP, cls);
        // written at n·P·D: image n + 1 overwrites the last row of image n
        memcpy(&s[1].rows[n * TP * TD], cls, sizeof cls);
        memcpy(&s[1].rows[n * TP * TD + TD], &patches[n * TP * TD], sizeof(float) * TP * TD);
        put(s[2].rows, n, 0, cls);
        if (n == 0) put(s[3].rows, n, 0, cls);
        for (int t = 0; t < TP; t++) {
            put(s[2].rows, n, t + 1, &patches[t * TD]);
            put(s[3].rows, n, t + 1, &patches[(n * TP + t) * TD]);
        }
    }
    name_suspects(&g, s, 4);
}

static void test_probe_add_positions(void) {
    // tokens as tokens_prepend_cls() leaves them: row 0 reads 100·(n + 1) + d, row i
    // 100·(n + 1) + 10·i + d; E_pos row i is 0.5·(i + 1) + 0.01·d, so a shifted row shows
    float tokens[TB * TN * TD], pos[TN * TD], got[TB * TN * TD], want[TB * TN * TD];
    for (int n = 0; n < TB; n++)
        for (int i = 0; i < TN; i++)
            for (int d = 0; d < TD; d++)
                tokens[(n * TN + i) * TD + d] = 100.0f * (n + 1) + 10.0f * i + d;
    for (int i = 0; i < TN; i++)
        for (int d = 0; d < TD; d++) pos[i * TD + d] = 0.5f * (i + 1) + 0.01f * d;
    fill(got, TB * TN * TD, UNWRITTEN);
    tokens_add_positions(got, tokens, pos, TB, TN, TD);
    for (int k = 0; k < TB * TN * TD; k++) want[k] = tokens[k] + pos[k % (TN * TD)];
    Tensor g = tensor_view(got, 3, TB, TN, TD), w = tensor_view(want, 3, TB, TN, TD);
    if (!assert_tensor_close(&g, &w, 0.0f, 0.0f,
                             "tokens_add_positions: embed[n, i] = tokens[n, i] + E_pos[i] "
                             "(-999: never written)")) {
        if (nothing_yet(&g, "tokens_add_positions")) return;
        static Suspect s[5] = {
            {"positions are shifted by one: token i gets E_pos row i, so [cls] (row 0) gets "
             "row 0; yours look added before [cls] was prepended (token i got row i - 1, "
             "[cls] none)", {0}},
            {"only image 0 got the positions: the same (N, D) table is added to every image "
             "of the batch", {0}},
            {"only image 0 got the positions: the same (N, D) table is added to every image "
             "of the batch (image 1 was never written)", {0}},
            {"every token got E_pos row 0: token i gets row i of the table, "
             "pos[i*D + d]", {0}},
            {"embed holds the positions alone: add them to the tokens, "
             "embed[n, i] = tokens[n, i] + E_pos[i]", {0}},
        };
        for (int k = 0; k < TB * TN * TD; k++) {
            int i = k / TD % TN, d = k % TD; // token i, feature d
            s[0].rows[k] = i == 0 ? tokens[k] : tokens[k] + pos[(i - 1) * TD + d];
            s[1].rows[k] = k < TN * TD ? want[k] : tokens[k];
            s[2].rows[k] = k < TN * TD ? want[k] : UNWRITTEN;
            s[3].rows[k] = tokens[k] + pos[d];
            s[4].rows[k] = pos[i * TD + d];
        }
        name_suspects(&g, s, 5);
        return;
    }
    // embed may be the very buffer tokens is (tokens.h): the same sums in place
    memcpy(got, tokens, sizeof got);
    tokens_add_positions(got, got, pos, TB, TN, TD);
    if (!assert_tensor_close(&g, &w, 0.0f, 0.0f, "tokens_add_positions in place (embed == tokens)"))
        check_hint("embed may be the same buffer as tokens (tokens.h): read each token before "
                   "writing embed there, e.g. embed[k] = tokens[k] + pos[k %% (N*D)]");
}

CU_TestInfo tests_ch07_tokens[] = {
    {"chapter matches PyTorch golden", test_chapter_matches_pytorch},
    {"attention is permutation-equivariant", test_attention_is_permutation_equivariant},
    {"positions break the symmetry", test_positions_break_the_symmetry},
    {"identical patches become distinct tokens", test_identical_patches_become_distinct},
    {"vit_forward prepends [cls], then adds the positions",
     test_vit_forward_prepends_cls_then_adds_positions},
    {"probe: tokens_prepend_cls puts [cls] in row 0 of every image", test_probe_prepend_cls},
    {"probe: tokens_add_positions adds E_pos row i to token i of every image",
     test_probe_add_positions},
    CU_TEST_INFO_NULL,
};
