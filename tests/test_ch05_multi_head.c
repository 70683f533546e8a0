/**
 * @file test_ch05_multi_head.c
 * @brief Chapter 05 against PyTorch, and the claims it makes about multi-head attention.
 *
 * `build/tests/run ch05_multi_head` grades a student's own heads_split(),
 * heads_split_qkv(), heads_merge() and mha_forward() too: the claims below
 * call lib's versions (or whatever replaced them at link time).
 *
 * The probes at the end are exercise 05's diagnosis. Two run heads_split()
 * and heads_merge() on torch's reshape/permute (tests/golden/attn_pieces.safetensors);
 * two run mha_forward() on torch's nn.MultiheadAttention, plain and with a
 * key-padding mask (attn_pieces, attention_cases), and compare every traced
 * stage, q to proj, with a multi-head attention computed here by hand. When
 * something differs, the first stage that does is compared with what each
 * likely mistake gives there (a split without the permute, a bias or the
 * scale or the options left out, one softmax per head, the heads merged in
 * (H, N, Dh) order, the output projection forgotten), and check_hint() names
 * the one that matches; a right out with a stage never traced is named too.
 * The last two run mha_forward() on both of its roads: one checks that the
 * (N, N) matrices are written exactly when someone reads them
 * (s->keep_matrices || trace_active(tr)) and names the choice of road made
 * instead, the other that a head switched off (w->head_off) looks nowhere on
 * either road.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../chapters/chapters.h"
#include "attention/attention.h"
#include "check.h"
#include "ops/ops.h"
#include "base/rng.h"
#include "base/trace.h"
#include "model/vit.h"

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
    ops_linear(q, x, L.w.q_w, L.w.q_b, N, D, D);
    ops_linear(k, x, L.w.k_w, L.w.k_b, N, D, D);
    ops_linear(v, x, L.w.v_w, L.w.v_b, N, D, D);
    attention(ctx, probs, q, k, v, NULL, N, D);
    // independent: mha_forward() against the pieces, each held to PyTorch in its own suite
    ops_linear(expected, ctx, L.w.proj_w, L.w.proj_b, N, D, D);
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

/* -------------------------------------------------------------- the probes */

static Tensor pieces(const char *name) { return golden_tensor("attn_pieces.safetensors", name); }

static void fill_nan(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = NAN;
}

// Are the n values of a the n values of b in some order? (A layout mistake moves values
// around without changing them.)
static int compare_floats(const void *a, const void *b) {
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}
static bool same_values(const float *a, const float *b, size_t n) {
    float *sa = malloc(n * sizeof(float)), *sb = malloc(n * sizeof(float));
    memcpy(sa, a, n * sizeof(float)), memcpy(sb, b, n * sizeof(float));
    qsort(sa, n, sizeof(float), compare_floats), qsort(sb, n, sizeof(float), compare_floats);
    bool same = memcmp(sa, sb, n * sizeof(float)) == 0;
    free(sa), free(sb);
    return same;
}

static bool all_zero_or_nan(const float *x, size_t n) {
    size_t zero = 0, nan = 0;
    for (size_t i = 0; i < n; i++) zero += x[i] == 0.0f, nan += isnan(x[i]) != 0;
    return zero == n || nan == n;
}

static const char SPLIT_COPY_HINT[] =
    "heads_split copied x as it is: reshape (B, N, H*Dh) to (B, N, H, Dh), then permute to "
    "(B, H, N, Dh): out[b][h][n][d] = x[b][n][h*Dh + d], head h's Dh features of token n are "
    "the slice h*Dh … (h+1)*Dh - 1";
static const char MERGE_HND_HINT[] =
    "(N, H, Dh) before flattening, not (H, N, Dh): the values are right but in the wrong places; "
    "token n's row is [head 0 | head 1 | …], out[b][n][h*Dh + d] = x[b][h][n][d], which a plain "
    "copy of (B, H, N, Dh) is not";

static void test_probe_heads_split_is_torchs_permute(void) {
    Tensor x = pieces("heads.x"), want = pieces("heads.split"); // x.reshape(B,N,H,Dh).permute(0,2,1,3)
    const int B = want.shape[0], H = want.shape[1], N = want.shape[2], DH = want.shape[3];
    Tensor got = tensor_new(4, B, H, N, DH);
    fill_nan(got.data, got.numel);
    heads_split(got.data, x.data, B, N, H, DH);
    if (!assert_tensor_close(&got, &want, 0.0f, 0.0f, "heads_split vs torch reshape + permute")) {
        if (all_zero_or_nan(got.data, got.numel))
            check_hint("heads_split() wrote nothing (or only zeros): is it still the exercise's "
                       "placeholder?");
        else if (memcmp(got.data, x.data, x.numel * sizeof(float)) == 0)
            check_hint("%s", SPLIT_COPY_HINT);
        else if (same_values(got.data, x.data, x.numel))
            check_hint("every value of x is there, in the wrong place: out[b][h][n][d] is "
                       "out[((b*H + h)*N + n)*Dh + d] and comes from x[(b*N + n)*H*Dh + h*Dh + d]");
        else
            check_hint("heads_split() only moves values, it computes nothing: every out value "
                       "must be one of x's (this one has others, or loses some)");
    }
    tensor_free(&x), tensor_free(&want), tensor_free(&got);
}

static void test_probe_heads_merge_puts_heads_side_by_side(void) {
    Tensor heads = pieces("heads.split"), want = pieces("heads.x"); // (B, H, N, Dh) → (B, N, D)
    const int B = heads.shape[0], H = heads.shape[1], N = heads.shape[2], DH = heads.shape[3];
    Tensor got = tensor_new(3, B, N, H * DH);
    fill_nan(got.data, got.numel);
    heads_merge(got.data, heads.data, B, N, H, DH);
    if (!assert_tensor_close(&got, &want, 0.0f, 0.0f,
                             "heads_merge vs torch transpose(1, 2).reshape(B, N, D)")) {
        Tensor interleaved = tensor_new(3, B, N, H * DH); // feature d of every head, then d + 1
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++)
                for (int n = 0; n < N; n++)
                    for (int d = 0; d < DH; d++)
                        interleaved.data[((size_t)b * N + n) * H * DH + (size_t)d * H + h] =
                            heads.data[(((size_t)b * H + h) * N + n) * DH + d];
        if (all_zero_or_nan(got.data, got.numel))
            check_hint("heads_merge() wrote nothing (or only zeros): is it still the exercise's "
                       "placeholder?");
        else if (memcmp(got.data, heads.data, heads.numel * sizeof(float)) == 0)
            check_hint("%s", MERGE_HND_HINT);
        else if (tensor_near(&got, &interleaved, 0.0f, 0.0f))
            check_hint("the heads were interleaved feature by feature (out[b][n][d*H + h]): a "
                       "head's Dh features stay together, out[b][n][h*Dh + d]");
        else if (same_values(got.data, heads.data, heads.numel))
            check_hint("every value is there, in the wrong place: out[(b*N + n)*H*Dh + h*Dh + d] "
                       "= x[((b*H + h)*N + n)*Dh + d]");
        tensor_free(&interleaved);
    }
    tensor_free(&heads), tensor_free(&want), tensor_free(&got);
}

/* Multi-head attention by hand, every stage kept, with mistakes to switch on. */

enum {
    SPLIT_COPY = 1,        // q, k, v: the projection copied, not split into heads
    NO_QKV_BIAS = 2,       // q, k, v without their biases
    NO_SCALE = 4,          // scaled = scores (+ masks)
    NO_OPTIONS = 8,        // the options ignored: 1/√Dh, no mask
    SOFTMAX_PER_HEAD = 16, // one softmax over each head's N·N scores
    MERGE_COPY = 32,       // context: the (B, H, N, Dh) heads copied as they are
    NO_PROJ = 64,          // out = context
    NO_PROJ_BIAS = 128,    // out = context·Wᵀ
    HEADS_ON = 256,        // w->head_off ignored: every head attends
    N_STAGES = 8,
};
static const char *const STAGE[N_STAGES] = {"q", "k", "v", "scores", "scaled", "probs",
                                            "context", "proj"};

typedef struct {
    Tensor t[N_STAGES]; // in STAGE's order
    Tensor heads;       // (B, H, N, Dh), not traced
} Stages;

static void stages_free(Stages *st) {
    for (int i = 0; i < N_STAGES; i++) tensor_free(&st->t[i]);
    tensor_free(&st->heads);
}

// out (rows, O) = x (rows, I)·Wᵀ + b (b may be NULL), in double.
static void linear_by_hand(float *out, const float *x, const float *w, const float *b, int rows,
                           int in, int o) {
    for (int r = 0; r < rows; r++)
        for (int j = 0; j < o; j++) {
            double acc = b ? b[j] : 0;
            for (int i = 0; i < in; i++) acc += (double)x[(size_t)r * in + i] * w[(size_t)j * in + i];
            out[(size_t)r * o + j] = (float)acc;
        }
}

static Stages mha_by_hand(const float *x, const AttentionWeights *w, const AttentionOptions *opt,
                          int B, int N, int D, int H, int how) {
    const int DH = D / H, G = B * H;
    Stages st;
    for (int i = 0; i < 3; i++) st.t[i] = tensor_new(4, B, H, N, DH);
    for (int i = 3; i < 6; i++) st.t[i] = tensor_new(4, B, H, N, N);
    st.t[6] = tensor_new(3, B, N, D), st.t[7] = tensor_new(3, B, N, D);
    st.heads = tensor_new(4, B, H, N, DH);
    const float *ws[3] = {w->q_w, w->k_w, w->v_w}, *bs[3] = {w->q_b, w->k_b, w->v_b};
    float *flat = malloc(sizeof(float) * B * N * D);
    for (int p = 0; p < 3; p++) {
        linear_by_hand(flat, x, ws[p], how & NO_QKV_BIAS ? NULL : bs[p], B * N, D, D);
        float *out = st.t[p].data;
        if (how & SPLIT_COPY) memcpy(out, flat, sizeof(float) * B * N * D);
        else
            for (int b = 0; b < B; b++)
                for (int h = 0; h < H; h++)
                    for (int n = 0; n < N; n++)
                        for (int d = 0; d < DH; d++)
                            out[(((size_t)b * H + h) * N + n) * DH + d] =
                                flat[((size_t)b * N + n) * D + h * DH + d];
    }
    free(flat);
    const float *q = st.t[0].data, *k = st.t[1].data, *v = st.t[2].data;
    float *scores = st.t[3].data, *scaled = st.t[4].data, *probs = st.t[5].data;
    const AttentionOptions *o = how & NO_OPTIONS ? NULL : opt;
    // the scale worked out here, not by lib's attention_scale() (the code under test)
    const double sc = how & NO_SCALE ? 1.0 : o && o->scale != 0.0f ? o->scale : 1.0 / sqrt(DH);
    for (int g = 0; g < G; g++)
        for (int i = 0; i < N; i++)
            for (int j = 0; j < N; j++) {
                double acc = 0;
                for (int d = 0; d < DH; d++)
                    acc += (double)q[((size_t)g * N + i) * DH + d] * k[((size_t)g * N + j) * DH + d];
                size_t at = ((size_t)g * N + i) * N + j;
                scores[at] = (float)acc;
                double m = (o && o->mask ? o->mask[i * N + j] : 0) +
                           (o && o->key_padding_mask ? o->key_padding_mask[(g / H) * N + j] : 0);
                scaled[at] = (float)(sc * scores[at] + m);
            }
    const int rows = how & SOFTMAX_PER_HEAD ? G : G * N, len = how & SOFTMAX_PER_HEAD ? N * N : N;
    for (int r = 0; r < rows; r++) {
        const float *xr = scaled + (size_t)r * len;
        double m = -INFINITY, sum = 0;
        for (int j = 0; j < len; j++) m = fmax(m, xr[j]);
        for (int j = 0; j < len; j++) sum += exp(xr[j] - m);
        for (int j = 0; j < len; j++)
            probs[(size_t)r * len + j] = m == -INFINITY ? 0.0f : (float)(exp(xr[j] - m) / sum);
    }
    // a head switched off (w->head_off, Hugging Face's head_mask of 0) looks nowhere
    for (int g = 0; g < G && w->head_off && !(how & HEADS_ON); g++)
        if (w->head_off[g % H]) memset(probs + (size_t)g * N * N, 0, sizeof(float) * N * N);
    for (int g = 0; g < G; g++)
        for (int i = 0; i < N; i++)
            for (int d = 0; d < DH; d++) {
                double acc = 0;
                for (int j = 0; j < N; j++)
                    acc += (double)probs[((size_t)g * N + i) * N + j] * v[((size_t)g * N + j) * DH + d];
                st.heads.data[((size_t)g * N + i) * DH + d] = (float)acc;
            }
    float *context = st.t[6].data;
    if (how & MERGE_COPY) memcpy(context, st.heads.data, sizeof(float) * B * N * D);
    else
        for (int b = 0; b < B; b++)
            for (int h = 0; h < H; h++)
                for (int n = 0; n < N; n++)
                    memcpy(context + ((size_t)b * N + n) * D + h * DH,
                           st.heads.data + (((size_t)b * H + h) * N + n) * DH, sizeof(float) * DH);
    if (how & NO_PROJ) memcpy(st.t[7].data, context, sizeof(float) * B * N * D);
    else linear_by_hand(st.t[7].data, context, w->proj_w, how & NO_PROJ_BIAS ? NULL : w->proj_b,
                        B * N, D, D);
    return st;
}

// One mistake at one stage: its hint, and what it turns that stage into.
typedef struct {
    int stage, how;
    const char *hint;
} StageMistake;

static const StageMistake MISTAKES[] = {
    {0, SPLIT_COPY, "q is the projection x*q_w^T + q_b not split into heads. %s"},
    {0, NO_QKV_BIAS, "q lacks its bias: q = x*q_w^T + q_b (ops_linear() with w->q_b; NULL means none)"},
    {1, NO_QKV_BIAS, "k lacks its bias: k = x*k_w^T + k_b (ops_linear() with w->k_b)"},
    {2, NO_QKV_BIAS, "v lacks its bias: v = x*v_w^T + v_b (ops_linear() with w->v_b)"},
    {4, NO_SCALE, "did you divide by √Dh? scaled equals scores (plus the masks): "
                  "attention_scale_mask() multiplies every score by 1/√Dh"},
    {4, NO_OPTIONS, "mha_forward() ignored opt: its masks (and scale) reach the scores only if "
                    "you pass opt to attention_scale_mask(s->scaled, s->scores, opt, B, H, N, Dh)"},
    {5, SOFTMAX_PER_HEAD, "softmax of each row of N keys, not of each (N, N) head: every query "
                          "row sums to 1, softmax(s->probs, s->scaled, B*H*N, N)"},
    {6, MERGE_COPY, "context: %s"},
    {7, NO_PROJ, "out equals the merged heads (context): the output projection is missing, "
                 "out = context*proj_w^T + proj_b (ops_linear())"},
    {7, NO_PROJ_BIAS, "the output projection lacks its bias: out = context*proj_w^T + proj_b"},
};


static bool stage_near(const Tensor *a, const Tensor *b) { return tensor_near(a, b, 1e-4f, 1e-4f); }

static const char TRACED_NOTHING_HINT[] =
    "mha_forward() traced nothing: keep the skeleton's trace_emit() lines, the tests read q, "
    "k, v, scores, scaled, probs, context and proj from them";

// Did nothing write x (n floats filled with NaN beforehand)?
static bool never_written(const float *x, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!isnan(x[i])) return false;
    return true;
}

// The first of the eight stages the trace lacks, or -1 when every one is there.
static int first_untraced(const TraceRecorder *rec) {
    for (int i = 0; i < N_STAGES; i++)
        if (!trace_find(rec, STAGE[i])) return i;
    return -1;
}

// mha_forward() went wrong on this input: find the first stage that differs and name it.
static void diagnose_mha(const TraceRecorder *rec, const Tensor *out, const float *x,
                         const AttentionWeights *w, const AttentionOptions *opt, int B, int N,
                         int D, int H) {
    Stages ref = mha_by_hand(x, w, opt, B, N, D, H, 0);
    if (rec->count == 0) {
        check_hint("%s", TRACED_NOTHING_HINT);
        Stages no_proj = mha_by_hand(x, w, opt, B, N, D, H, NO_PROJ);
        if (stage_near(out, &no_proj.t[7])) check_hint("%s", MISTAKES[8].hint);
        stages_free(&no_proj);
        stages_free(&ref);
        return;
    }
    int first = -1;
    for (int i = 0; i < N_STAGES && first < 0; i++) {
        const Tensor *t = trace_find(rec, STAGE[i]);
        if (!t) {
            check_hint("stage '%s' was never traced: keep every trace_emit() line of the "
                       "skeleton, in order", STAGE[i]);
            stages_free(&ref);
            return;
        }
        if (!stage_near(t, &ref.t[i])) first = i;
    }
    if (first < 0) { // every stage right: then out is not the traced proj
        check_hint("every traced stage is right but out is not: write the projection into out, "
                   "then trace_emit(tr, \"proj\", out, 3, B, N, D)");
        stages_free(&ref);
        return;
    }
    const Tensor *got = trace_find(rec, STAGE[first]);
    if (all_zero_or_nan(got->data, got->numel)) {
        check_hint("'%s' is all zeros: the first stage still to compute (the TODO before its "
                   "trace_emit())", STAGE[first]);
        stages_free(&ref);
        return;
    }
    for (size_t m = 0; m < sizeof MISTAKES / sizeof MISTAKES[0]; m++) {
        if (MISTAKES[m].stage != first) continue;
        if (MISTAKES[m].how == NO_OPTIONS && !opt) continue;
        Stages cand = mha_by_hand(x, w, opt, B, N, D, H, MISTAKES[m].how);
        bool match = stage_near(got, &cand.t[first]);
        stages_free(&cand);
        if (match) {
            check_hint(MISTAKES[m].hint, MISTAKES[m].how == SPLIT_COPY ? SPLIT_COPY_HINT
                                                                       : MERGE_HND_HINT);
            stages_free(&ref);
            return;
        }
    }
    // a projection with another's weight: k or v equal to what q (or k) should be
    for (int i = 1; i < 3 && first == i; i++)
        for (int j = 0; j < 3; j++)
            if (j != i && stage_near(got, &ref.t[j])) {
                check_hint("%s came out equal to %s: each has its own weight and bias, "
                           "%s = x*%s_w^T + %s_b", STAGE[i], STAGE[j], STAGE[i], STAGE[i],
                           STAGE[i]);
                stages_free(&ref);
                return;
            }
    if (first == 6 && same_values(got->data, ref.heads.data, got->numel))
        check_hint("context: %s", MERGE_HND_HINT);
    else if (first == 5) {
        Tensor g0 = tensor_view(got->data, 1, N * N), r0 = tensor_view(ref.t[5].data, 1, N * N);
        bool head0 = tensor_near(&g0, &r0, 1e-4f, 1e-4f);
        if (head0)
            check_hint("only the first head's rows of probs are right: there are B*H*N rows of N "
                       "keys to softmax, softmax(s->probs, s->scaled, B*H*N, N)");
        else
            check_hint("probs is the first stage that differs: it is the softmax of each row of "
                       "scaled (chapter 03)");
    } else
        check_hint("'%s' is the first traced stage that differs from the hand-made "
                   "multi-head attention: compare it with the formula in the README",
                   STAGE[first]);
    stages_free(&ref);
}

// mha_forward() on (x, w, opt) against torch's out and probs; diagnosed when wrong.
static void probe_mha(const char *label, const float *x, const AttentionWeights *w,
                      const AttentionOptions *opt, int B, int N, int D, int H,
                      const Tensor *want_out, const Tensor *want_probs) {
    float *mem = malloc(sizeof(float) * mha_scratch_floats(B, N, D, H));
    MhaScratch sc;
    mha_scratch_carve(&sc, mem, B, N, D, H);
    fill_nan(mem, mha_scratch_floats(B, N, D, H));
    TraceRecorder rec = {0};
    Tracer tr = {trace_record, &rec, NULL};
    Tensor out = tensor_new(3, B, N, D);
    fill_nan(out.data, out.numel);
    mha_forward(out.data, x, w, opt, &sc, B, N, D, H, &tr);
    // the hand-made attention is what the diagnosis compares stages with: it must be torch's
    Stages ref = mha_by_hand(x, w, opt, B, N, D, H, 0);
    CU_ASSERT(tensor_near(&ref.t[7], want_out, 1e-5f, 1e-4f));
    stages_free(&ref);
    char name[160];
    snprintf(name, sizeof name, "%s: out", label);
    bool ok = assert_tensor_close(&out, want_out, 1e-5f, 1e-5f, name);
    const Tensor *probs = trace_find(&rec, "probs");
    if (probs) {
        snprintf(name, sizeof name, "%s: probs", label);
        ok &= assert_tensor_close(probs, want_probs, 1e-5f, 1e-5f, name);
    }
    if (!ok) {
        const Tensor *q = trace_find(&rec, "q");
        if (all_zero_or_nan(out.data, out.numel) && (!q || all_zero_or_nan(q->data, q->numel)))
            check_hint("mha_forward() wrote nothing into out (or only zeros): is it still the "
                       "exercise's placeholder?");
        else
            diagnose_mha(&rec, &out, x, w, opt, B, N, D, H);
    } else if (first_untraced(&rec) >= 0) { // out right, but the tests read every stage
        const int missing = first_untraced(&rec);
        CU_FAIL("mha_forward() did not trace every stage");
        fprintf(stderr, "\n    %s: stage '%s' was not traced (%d traced)\n", label,
                STAGE[missing], rec.count);
        // the (N, N) stages untraced because the online road was taken under a listener:
        // the probe of the roads names that
        const bool kept = !never_written(sc.probs, (size_t)B * H * N * N);
        if (rec.count == 0 && kept)
            check_hint("%s", TRACED_NOTHING_HINT);
        else if (kept)
            check_hint("stage '%s' was never traced: keep every trace_emit() line of the "
                       "skeleton, in order", STAGE[missing]);
    }
    trace_recorder_free(&rec);
    tensor_free(&out);
    free(mem);
}

static void test_probe_mha_matches_torch_stage_by_stage(void) {
    Tensor x = pieces("mha.x"), qkv_w = pieces("mha.qkv_w"), qkv_b = pieces("mha.qkv_b");
    Tensor proj_w = pieces("mha.proj_w"), proj_b = pieces("mha.proj_b");
    Tensor want = pieces("mha.plain.out"), want_probs = pieces("mha.plain.probs");
    const int B = x.shape[0], N = x.shape[1], D = x.shape[2], H = want_probs.shape[1];
    const size_t DD = (size_t)D * D;
    AttentionWeights w = {.q_w = qkv_w.data, .k_w = qkv_w.data + DD, .v_w = qkv_w.data + 2 * DD,
                          .q_b = qkv_b.data, .k_b = qkv_b.data + D, .v_b = qkv_b.data + 2 * D,
                          .proj_w = proj_w.data, .proj_b = proj_b.data};
    probe_mha("mha_forward vs torch nn.MultiheadAttention", x.data, &w, NULL, B, N, D, H, &want,
              &want_probs);
    tensor_free(&x), tensor_free(&qkv_w), tensor_free(&qkv_b), tensor_free(&proj_w);
    tensor_free(&proj_b), tensor_free(&want), tensor_free(&want_probs);
}

static void test_probe_mha_takes_the_key_padding_mask(void) {
    const char *f = "attention_cases.safetensors";
    Tensor x = golden_tensor(f, "pad.x"), qkv_w = golden_tensor(f, "pad.qkv_w");
    Tensor qkv_b = golden_tensor(f, "pad.qkv_b"), proj_w = golden_tensor(f, "pad.proj_w");
    Tensor proj_b = golden_tensor(f, "pad.proj_b"), lengths = golden_tensor(f, "pad.lengths");
    Tensor want = golden_tensor(f, "pad.pad.out"), want_probs = golden_tensor(f, "pad.pad.probs");
    const int B = x.shape[0], N = x.shape[1], D = x.shape[2], H = want_probs.shape[1];
    const size_t DD = (size_t)D * D;
    AttentionWeights w = {.q_w = qkv_w.data, .k_w = qkv_w.data + DD, .v_w = qkv_w.data + 2 * DD,
                          .q_b = qkv_b.data, .k_b = qkv_b.data + D, .v_b = qkv_b.data + 2 * D,
                          .proj_w = proj_w.data, .proj_b = proj_b.data};
    int len[8];
    float pad[64];
    CU_ASSERT_FATAL(B <= 8 && B * N <= 64);
    for (int b = 0; b < B; b++) len[b] = (int)lengths.data[b];
    attention_mask_key_padding(pad, len, B, N);
    probe_mha("mha_forward with a (B, N) key-padding mask vs torch", x.data, &w,
              &(AttentionOptions){.key_padding_mask = pad}, B, N, D, H, &want, &want_probs);
    tensor_free(&x), tensor_free(&qkv_w), tensor_free(&qkv_b), tensor_free(&proj_w);
    tensor_free(&proj_b), tensor_free(&lengths), tensor_free(&want), tensor_free(&want_probs);
}

/* The two roads (README, "Two roads"): the (N, N) matrices are computed, kept and traced
 * exactly when somebody reads them, s->keep_matrices || trace_active(tr); otherwise the
 * online road leaves s->scores, s->scaled and s->probs as they were. */

// One run of mha_forward() on a random layer, the scratch and out filled with NaN first:
// which road it took, and whether out is `want` (and `alt`, another answer, when given).
typedef struct {
    bool kept;    // scores, scaled or probs written: the road that keeps the matrices
    bool out_ok;  // out equals want
    bool out_alt; // out equals alt
    bool out_nan; // out never written
} RoadRun;

static RoadRun run_road(const AttentionWeights *w, const float *x, int B, int N, int D, int H,
                        bool keep, bool listener, const Tensor *want, const Tensor *alt) {
    const size_t floats = mha_scratch_floats(B, N, D, H), bhnn = (size_t)B * H * N * N;
    float *mem = malloc(sizeof(float) * floats);
    MhaScratch s;
    mha_scratch_carve(&s, mem, B, N, D, H);
    fill_nan(mem, floats);
    s.keep_matrices = keep;
    TraceRecorder rec = {0};
    Tracer tr = {trace_record, &rec, NULL};
    Tensor out = tensor_new(3, B, N, D);
    fill_nan(out.data, out.numel);
    mha_forward(out.data, x, w, NULL, &s, B, N, D, H, listener ? &tr : NULL);
    RoadRun r = {.kept = !never_written(s.scores, bhnn) || !never_written(s.scaled, bhnn) ||
                         !never_written(s.probs, bhnn),
                 .out_ok = stage_near(&out, want),
                 .out_alt = alt && stage_near(&out, alt),
                 .out_nan = never_written(out.data, out.numel)};
    trace_recorder_free(&rec);
    tensor_free(&out);
    free(mem);
    return r;
}

// The road a run should take, and what each wrong choice of roads looks like: which of the
// four runs (keep_matrices false/true × no listener/a listener, run c = 2·keep + listener)
// kept the matrices, one bit per run.
enum { ROADS_RIGHT = 0xE }; // kept in runs 1, 2 and 3: every run but the unread one
static const struct {
    unsigned kept;
    const char *hint;
} WRONG_ROADS[] = {
    {0xF, "the (N, N) matrices were computed with keep_matrices false and no listener, when "
          "nobody reads them: that run takes the online road, attention_online() (TODO 8), "
          "under the skeleton's if (s->keep_matrices || trace_active(tr))"},
    {0x0, "the online road was taken even when the (N, N) matrices are read (keep_matrices "
          "true, or a listener): compute scores, scaled and probs there (TODOs 4-7), under the "
          "skeleton's if (s->keep_matrices || trace_active(tr))"},
    {0xC, "the online road was taken with a listener and keep_matrices false: the trace reads "
          "scores, scaled and probs too, so the road's test is s->keep_matrices || "
          "trace_active(tr), not s->keep_matrices alone"},
    {0xA, "the online road was taken with keep_matrices true and no listener: the backward "
          "reads s->probs, so the road's test is s->keep_matrices || trace_active(tr), not "
          "trace_active(tr) alone"},
    {0x8, "the (N, N) matrices were kept only when keep_matrices is true and a listener is "
          "there both: either is enough, s->keep_matrices || trace_active(tr), not &&"},
    {0x1, "the two roads are swapped: the (N, N) matrices were computed only when nobody reads "
          "them (keep_matrices false, no listener); if (s->keep_matrices || trace_active(tr)) "
          "keeps them, else the online road"},
};

// What the four runs did against what they should: which road each took wrongly (on
// stderr), and the one wrong choice of roads it matches.
static const char *wrong_roads(const RoadRun run[4], unsigned kept) {
    fprintf(stderr, "\n");
    for (int c = 0; c < 4; c++)
        if (run[c].kept != ((ROADS_RIGHT >> c) & 1))
            fprintf(stderr, "    keep_matrices %s, %s: the (N, N) matrices %s, they should %s\n",
                    c & 2 ? "true" : "false", c & 1 ? "a listener" : "no listener",
                    run[c].kept ? "were computed" : "were not", run[c].kept ? "not" : "be");
    for (size_t k = 0; k < sizeof WRONG_ROADS / sizeof WRONG_ROADS[0]; k++)
        if (WRONG_ROADS[k].kept == kept) return WRONG_ROADS[k].hint;
    return "the road taken does not follow the skeleton's if (s->keep_matrices || "
           "trace_active(tr)): the (N, N) matrices are computed exactly when one of them holds";
}

static void test_probe_mha_takes_the_right_road(void) {
    enum { B = 2, N = 5, D = 8, H = 2 };
    RandomLayer L = layer_new(D, H, 61);
    float x[B * N * D];
    Rng rng;
    rng_seed(&rng, 62);
    rng_fill_normal(&rng, x, B * N * D, 0.0f, 1.0f);
    Stages ref = mha_by_hand(x, &L.w, NULL, B, N, D, H, 0);
    RoadRun run[4];
    unsigned kept = 0;
    bool outs_ok = true;
    for (int c = 0; c < 4; c++) {
        run[c] = run_road(&L.w, x, B, N, D, H, c & 2, c & 1, &ref.t[7], NULL);
        kept |= (unsigned)run[c].kept << c;
        outs_ok &= run[c].out_ok;
    }
    CU_ASSERT_EQUAL(kept, ROADS_RIGHT);
    const bool online_checked = check_attention_online_by_hand();
    if (online_checked) CU_ASSERT(run[0].out_ok); // the probes above check the other road's
    if (!online_checked) outs_ok = run[1].out_ok && run[2].out_ok && run[3].out_ok;
    const char *hint = kept != ROADS_RIGHT ? wrong_roads(run, kept) : NULL;
    if (hint && outs_ok) { // every out right: the choice of road alone is wrong
        check_hint("%s", hint);
    } else if (online_checked && kept == ROADS_RIGHT && !run[0].out_ok && run[1].out_ok &&
               run[2].out_ok && run[3].out_ok) {
        check_hint("the online road (keep_matrices false, no listener) gives %s, while the road "
                   "that keeps the matrices is right: TODO 8, attention_online(s->heads, s->q, "
                   "s->k, s->v, opt, B, H, N, Dh, MHA_KEY_BLOCK)",
                   run[0].out_nan ? "no out at all (s->heads never written)" : "another out");
    }
    stages_free(&ref);
    layer_free(&L);
}

// Head 1 switched off (w->head_off, Hugging Face's head_mask), on either road.
static void test_probe_mha_switches_heads_off(void) {
    enum { B = 2, N = 5, D = 8, H = 2 };
    RandomLayer L = layer_new(D, H, 63);
    const bool off[H] = {false, true};
    AttentionWeights w = L.w;
    w.head_off = off;
    float x[B * N * D];
    Rng rng;
    rng_seed(&rng, 64);
    rng_fill_normal(&rng, x, B * N * D, 0.0f, 1.0f);
    Stages ref = mha_by_hand(x, &w, NULL, B, N, D, H, 0), on = mha_by_hand(x, &w, NULL, B, N, D, H, HEADS_ON);
    const RoadRun kept = run_road(&w, x, B, N, D, H, true, false, &ref.t[7], &on.t[7]);
    const RoadRun online = run_road(&w, x, B, N, D, H, false, false, &ref.t[7], &on.t[7]);
    const bool online_checked = check_attention_online_by_hand();
    CU_ASSERT(kept.out_ok);                       // keep_matrices true: the matrices' road
    if (online_checked) CU_ASSERT(online.out_ok); // keep_matrices false, no listener: online
    // out as if every head were on, the rest right: the switch was ignored, on which road?
    // (a run meant for the online road that kept the matrices took the other road)
    bool kept_on = !kept.out_ok && kept.out_alt;
    bool online_on = online_checked && !online.out_ok && online.out_alt;
    if (online.kept) kept_on |= online_on, online_on = false;
    if (kept_on && online_on)
        check_hint("a head switched off (w->head_off[h]) still attends, on both roads: its (N, N) "
                   "probabilities become 0 after the softmax (TODO 6), and on the online road "
                   "its context becomes 0 after attention_online() (TODO 8)");
    else if (kept_on)
        check_hint("a head switched off (w->head_off[h]) still attends on the road that keeps "
                   "the matrices: after the softmax, set its (N, N) probabilities to 0 in every "
                   "sequence b, s->probs + (b*H + h)*N*N (TODO 6)");
    else if (online_on)
        check_hint("a head switched off (w->head_off[h]) still attends on the online road: after "
                   "attention_online(), set its context to 0 in every sequence b, s->heads + "
                   "(b*H + h)*N*Dh (TODO 8)");
    stages_free(&ref);
    stages_free(&on);
    layer_free(&L);
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
    {"probe: heads_split is torch's reshape and permute", test_probe_heads_split_is_torchs_permute},
    {"probe: heads_merge puts the heads of a token side by side",
     test_probe_heads_merge_puts_heads_side_by_side},
    {"probe: mha_forward equals torch, stage by stage",
     test_probe_mha_matches_torch_stage_by_stage},
    {"probe: mha_forward takes the key-padding mask", test_probe_mha_takes_the_key_padding_mask},
    {"probe: mha_forward keeps the (N, N) matrices only when they are read",
     test_probe_mha_takes_the_right_road},
    {"probe: mha_forward switches heads off on both roads", test_probe_mha_switches_heads_off},
    CU_TEST_INFO_NULL,
};
