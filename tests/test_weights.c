/**
 * @file test_weights.c
 * @brief vit_save() and vit_build(): round trips, half-precision files, the
 *        three naming schemes (timm, Hugging Face, torchvision), metadata, and
 *        the messages for broken checkpoints.
 *
 * Most checkpoints here are made by the test itself: a small random model is
 * saved with timm's names, then rewritten tensor by tensor (renamed, split,
 * converted, dropped or reshaped) into the file under test. The first tests
 * read one small model that PyTorch wrote under each convention
 * (tools/gen_golden_keys.py) and compare every stage of its forward pass with
 * PyTorch's, so a loader that mixes up q, k and v fails at blocks.0.attn.q.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "base/rng.h"
#include "model/vit.h"

/* ---------------------------------------------------------------- helpers */

// Small enough to be instant, big enough for every code path: 2 blocks, 4 heads.
static const VitConfig small_config = {.image_size = 32, .patch_size = 8, .channels = 3,
                                       .dim = 64, .depth = 2, .heads = 4, .mlp_dim = 256,
                                       .num_classes = 10, .ln_eps = 1e-6f};
// Weights ten times timm's and perturbed biases/LayerNorms, so every tensor matters.
static const VitInit small_init = {.seed = 17, .std = 0.2f, .bias_std = 0.02f, .norm_std = 0.1f};

// A temporary file name; the caller unlinks it.
static void temp_path(char *buf, size_t n, const char *stem) {
    const char *dir = getenv("TMPDIR");
    snprintf(buf, n, "%s/vit-test-weights-%s-%d.safetensors", dir ? dir : "/tmp", stem,
             (int)getpid());
}

static Tensor images(void) {
    Tensor x = tensor_new(4, 2, 3, small_config.image_size, small_config.image_size);
    Rng rng;
    rng_seed(&rng, 99);
    rng_fill_uniform(&rng, x.data, x.numel, -1.0f, 1.0f);
    return x;
}

// The logits of @p vit on the test images, as an owned tensor.
static Tensor logits_of(Vit *vit) {
    Tensor x = images();
    VitError err;
    VitStatus s = vit_forward(vit, &x, NULL, NULL, &err);
    tensor_free(&x);
    if (s != VIT_OK) {
        fprintf(stderr, "\n    %s\n", err.msg);
        CU_FAIL("vit_forward failed");
        return tensor_new(2, 1, 1);
    }
    Tensor l = vit_logits(vit);
    return tensor_clone(&l);
}

static void build_random(Vit *vit) {
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_build_random(vit, &small_config, &small_init, &err), VIT_OK);
}

// Saves the small random model with timm's names to @p path; returns its logits.
static Tensor save_small(const char *path) {
    Vit vit;
    build_random(&vit);
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_save(&vit, path, &err), VIT_OK);
    Tensor l = logits_of(&vit);
    vit_free(&vit);
    return l;
}

// vit_build() that must succeed.
static bool load(Vit *vit, const char *path) {
    VitError err;
    if (vit_build(vit, path, &err) != VIT_OK) {
        fprintf(stderr, "\n    %s\n", err.msg);
        CU_FAIL("vit_build failed");
        return false;
    }
    return true;
}

// vit_build() that must fail with VIT_ERR_INPUT; the message goes to @p msg.
static void load_fails(const char *path, char *msg, size_t n) {
    Vit vit;
    VitError err = {{0}};
    VitStatus s = vit_build(&vit, path, &err);
    CU_ASSERT_EQUAL(s, VIT_ERR_INPUT);
    if (s == VIT_OK) vit_free(&vit);
    snprintf(msg, n, "%s", err.msg);
}

static void assert_mentions(const char *msg, const char *part) {
    if (!strstr(msg, part)) fprintf(stderr, "\n    message '%s' does not mention '%s'\n", msg, part);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, part));
}

static bool same_config(const VitConfig *a, const VitConfig *b) {
    return a->image_size == b->image_size && a->patch_size == b->patch_size &&
           a->channels == b->channels && a->dim == b->dim && a->depth == b->depth &&
           a->heads == b->heads && a->mlp_dim == b->mlp_dim && a->num_classes == b->num_classes &&
           a->ln_eps == b->ln_eps;
}

/* -------------------------------------------------- rewriting checkpoints */

/**
 * How a test turns one checkpoint into another: called for each tensor of the
 * source (an owned copy that lives until the file is written), it queues zero
 * or more tensors on the writer.
 */
typedef void (*RewriteFn)(StWriter *w, const char *name, const Tensor *t, void *user);

/**
 * Copies @p src to @p dst through @p fn. Metadata: @p meta ("key", "value", …,
 * NULL) replaces the source's when given, else the source's is copied.
 */
static void rewrite(const char *src, const char *dst, RewriteFn fn, void *user,
                    const char *const *meta) {
    SafeTensors st;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_open(&st, src, &err), VIT_OK);
    Tensor *copies = calloc((size_t)st.count, sizeof(Tensor));
    StWriter w = {0};
    if (meta)
        for (int i = 0; meta[i]; i += 2) st_writer_meta(&w, meta[i], meta[i + 1]);
    else
        for (int i = 0; i < st.meta_count; i++)
            st_writer_meta(&w, st.meta_keys[i], st.meta_values[i]);
    for (int i = 0; i < st.count; i++) {
        CU_ASSERT_EQUAL_FATAL(st_read_tensor(&st, st.tensors[i].name, &copies[i], &err), VIT_OK);
        fn(&w, st.tensors[i].name, &copies[i], user);
    }
    CU_ASSERT_EQUAL(st_writer_save(&w, dst, &err), VIT_OK);
    st_writer_free(&w);
    for (int i = 0; i < st.count; i++) tensor_free(&copies[i]);
    free(copies);
    st_close(&st);
}

static void keep(StWriter *w, const char *name, const Tensor *t, void *user) {
    (void)user;
    st_writer_add(w, name, t);
}

static void as_dtype(StWriter *w, const char *name, const Tensor *t, void *user) {
    st_writer_add_as(w, name, t, *(const StDtype *)user);
}

// Stores each tensor as float32 after rounding it to *user (ST_BF16 or ST_F16)
// and back, i.e. the exact values a half-precision file holds.
static void rounded_to(StWriter *w, const char *name, const Tensor *t, void *user) {
    StDtype dtype = *(const StDtype *)user;
    for (size_t i = 0; i < t->numel; i++)
        t->data[i] = dtype == ST_BF16 ? st_bf16_to_f32(st_f32_to_bf16(t->data[i]))
                                      : st_f16_to_f32(st_f32_to_f16(t->data[i]));
    st_writer_add(w, name, t);
}

static void drop(StWriter *w, const char *name, const Tensor *t, void *user) {
    if (strcmp(name, (const char *)user) != 0) st_writer_add(w, name, t);
}

/** Replaces one tensor by another (zeros, of the same or another shape). */
typedef struct {
    const char *name;
    Tensor replacement;
} Replace;

static void replace_one(StWriter *w, const char *name, const Tensor *t, void *user) {
    Replace *r = user;
    st_writer_add(w, name, strcmp(name, r->name) == 0 ? &r->replacement : t);
}

/* timm → Hugging Face / torchvision, one table per scheme ("%d" is the block). */
typedef struct {
    const char *timm, *other;
} NamePair;

static const NamePair hf_names[] = {
    {"cls_token", "vit.embeddings.cls_token"},
    {"pos_embed", "vit.embeddings.position_embeddings"},
    {"patch_embed.proj.weight", "vit.embeddings.patch_embeddings.projection.weight"},
    {"patch_embed.proj.bias", "vit.embeddings.patch_embeddings.projection.bias"},
    {"norm1.weight", "vit.encoder.layer.%d.layernorm_before.weight"},
    {"norm1.bias", "vit.encoder.layer.%d.layernorm_before.bias"},
    {"attn.proj.weight", "vit.encoder.layer.%d.attention.output.dense.weight"},
    {"attn.proj.bias", "vit.encoder.layer.%d.attention.output.dense.bias"},
    {"norm2.weight", "vit.encoder.layer.%d.layernorm_after.weight"},
    {"norm2.bias", "vit.encoder.layer.%d.layernorm_after.bias"},
    {"mlp.fc1.weight", "vit.encoder.layer.%d.intermediate.dense.weight"},
    {"mlp.fc1.bias", "vit.encoder.layer.%d.intermediate.dense.bias"},
    {"mlp.fc2.weight", "vit.encoder.layer.%d.output.dense.weight"},
    {"mlp.fc2.bias", "vit.encoder.layer.%d.output.dense.bias"},
    {"norm.weight", "vit.layernorm.weight"},
    {"norm.bias", "vit.layernorm.bias"},
    {"head.weight", "classifier.weight"},
    {"head.bias", "classifier.bias"},
    {NULL, NULL},
};

static const NamePair torchvision_names[] = {
    {"cls_token", "class_token"},
    {"pos_embed", "encoder.pos_embedding"},
    {"patch_embed.proj.weight", "conv_proj.weight"},
    {"patch_embed.proj.bias", "conv_proj.bias"},
    {"norm1.weight", "encoder.layers.encoder_layer_%d.ln_1.weight"},
    {"norm1.bias", "encoder.layers.encoder_layer_%d.ln_1.bias"},
    {"attn.qkv.weight", "encoder.layers.encoder_layer_%d.self_attention.in_proj_weight"},
    {"attn.qkv.bias", "encoder.layers.encoder_layer_%d.self_attention.in_proj_bias"},
    {"attn.proj.weight", "encoder.layers.encoder_layer_%d.self_attention.out_proj.weight"},
    {"attn.proj.bias", "encoder.layers.encoder_layer_%d.self_attention.out_proj.bias"},
    {"norm2.weight", "encoder.layers.encoder_layer_%d.ln_2.weight"},
    {"norm2.bias", "encoder.layers.encoder_layer_%d.ln_2.bias"},
    {"mlp.fc1.weight", "encoder.layers.encoder_layer_%d.mlp.0.weight"},
    {"mlp.fc1.bias", "encoder.layers.encoder_layer_%d.mlp.0.bias"},
    {"mlp.fc2.weight", "encoder.layers.encoder_layer_%d.mlp.3.weight"},
    {"mlp.fc2.bias", "encoder.layers.encoder_layer_%d.mlp.3.bias"},
    {"norm.weight", "encoder.ln.weight"},
    {"norm.bias", "encoder.ln.bias"},
    {"head.weight", "heads.head.weight"},
    {"head.bias", "heads.head.bias"},
    {NULL, NULL},
};

// The other scheme's name for a timm name, or false when the table lacks it.
static bool translate(const NamePair *table, const char *timm, char *out, size_t n) {
    int block = -1, used = 0;
    const char *suffix = timm;
    if (sscanf(timm, "blocks.%d.%n", &block, &used) == 1 && used > 0) suffix = timm + used;
    for (int i = 0; table[i].timm; i++)
        if (strcmp(table[i].timm, suffix) == 0 && (block >= 0) == (strstr(table[i].other, "%d") != NULL)) {
            snprintf(out, n, table[i].other, block);
            return true;
        }
    return false;
}

static void to_torchvision(StWriter *w, const char *name, const Tensor *t, void *user) {
    (void)user;
    char other[160];
    CU_ASSERT_TRUE_FATAL(translate(torchvision_names, name, other, sizeof other));
    st_writer_add(w, other, t);
}

// Hugging Face stores q, k and v apart: timm's fused (3D, D) qkv is split into
// its three (D, D) row blocks, the (3D) bias into three (D).
static void to_hf(StWriter *w, const char *name, const Tensor *t, void *user) {
    (void)user;
    int block, used = 0;
    char what[16], other[160];
    if (sscanf(name, "blocks.%d.attn.qkv.%15s%n", &block, what, &used) == 2) {
        static const char *const part[3] = {"query", "key", "value"};
        const int D = t->shape[0] / 3;
        for (int k = 0; k < 3; k++) {
            snprintf(other, sizeof other, "vit.encoder.layer.%d.attention.attention.%s.%s", block,
                     part[k], what);
            Tensor piece = t->ndim == 2 ? tensor_view(t->data + (size_t)k * D * D, 2, D, D)
                                        : tensor_view(t->data + (size_t)k * D, 1, D);
            st_writer_add(w, other, &piece);
        }
        return;
    }
    CU_ASSERT_TRUE_FATAL(translate(hf_names, name, other, sizeof other));
    st_writer_add(w, other, t);
}

/* ------------------------------------- each convention, stage by stage */

// tests/golden/keys_loader_{timm,hf,torchvision}.safetensors hold one model
// (S 16, p 4, D 16, H 2, L 2, M 64, Y 5) under timm's names (fused qkv), Hugging
// Face's (separate query/key/value) and torchvision's (fused in_proj, from
// torchvision's own VisionTransformer); keys_loader.safetensors holds its input
// batch and every stage of its forward pass by tools/ref_vit.py in float64.
// Each file, loaded, must reproduce that trace stage by stage.
static void check_convention_against_pytorch(const char *file, const char *source) {
    Vit vit;
    VitError err;
    if (vit_build(&vit, golden_path(file), &err) != VIT_OK) {
        fprintf(stderr, "\n    %s\n", err.msg);
        CU_FAIL("the golden checkpoint did not load");
        return;
    }
    CU_ASSERT_STRING_EQUAL(vit.source, source);
    const VitConfig want = {.image_size = 16, .patch_size = 4, .channels = 3, .dim = 16,
                            .depth = 2, .heads = 2, .mlp_dim = 64, .num_classes = 5,
                            .ln_eps = 1e-6f};
    CU_ASSERT_TRUE(same_config(&vit.config, &want));
    Tensor x = golden_tensor("keys_loader.safetensors", "input");
    GoldenCheck g;
    if (golden_open(&g, "keys_loader.safetensors")) {
        CU_ASSERT_EQUAL(vit_forward(&vit, &x, golden_check, &g, &err), VIT_OK);
        golden_finish(&g);
    }
    tensor_free(&x);
    vit_free(&vit);
}

static void test_timm_file_matches_pytorch(void) {
    check_convention_against_pytorch("keys_loader_timm.safetensors", "timm");
}

static void test_hf_file_matches_pytorch(void) {
    check_convention_against_pytorch("keys_loader_hf.safetensors", "hf");
}

static void test_torchvision_file_matches_pytorch(void) {
    check_convention_against_pytorch("keys_loader_torchvision.safetensors", "torchvision");
}

/* ------------------------------------------------------------ round trips */

static void test_save_then_build_gives_same_model(void) {
    char path[256];
    temp_path(path, sizeof path, "roundtrip");
    Tensor want = save_small(path);
    Vit vit;
    if (load(&vit, path)) {
        CU_ASSERT_TRUE(same_config(&vit.config, &small_config));
        CU_ASSERT_STRING_EQUAL(vit.source, "timm");
        Tensor got = logits_of(&vit);
        assert_tensor_close(&got, &want, 0.0f, 0.0f, "logits after save + build");
        tensor_free(&got);
        vit_free(&vit);
    }
    tensor_free(&want);
    unlink(path);
}

/** One parameter array of a model: where it is and how many floats. */
typedef struct {
    const float *data;
    size_t numel;
} Param;

// Every parameter array of @p vit in a fixed order; returns how many (≤ max).
static int collect_params(const Vit *vit, Param *out, int max) {
    const VitConfig *c = &vit->config;
    const size_t D = (size_t)c->dim, M = (size_t)c->mlp_dim, K = (size_t)c->num_classes;
    const size_t N = (size_t)vit_num_tokens(c), patch_in = (size_t)c->channels * c->patch_size *
                                                            c->patch_size;
    const VitWeights *w = &vit->weights;
    int n = 0;
#define PARAM(ptr, count) \
    if (n < max) out[n++] = (Param){(ptr), (count)}
    PARAM(w->patch_w, D * patch_in);
    PARAM(w->patch_b, D);
    PARAM(w->cls_token, D);
    PARAM(w->pos_embed, N * D);
    for (int b = 0; b < c->depth; b++) {
        const VitBlockWeights *bw = &w->blocks[b];
        PARAM(bw->norm1_w, D);
        PARAM(bw->norm1_b, D);
        PARAM(bw->attn.q_w, D * D);
        PARAM(bw->attn.k_w, D * D);
        PARAM(bw->attn.v_w, D * D);
        PARAM(bw->attn.q_b, D);
        PARAM(bw->attn.k_b, D);
        PARAM(bw->attn.v_b, D);
        PARAM(bw->attn.proj_w, D * D);
        PARAM(bw->attn.proj_b, D);
        PARAM(bw->norm2_w, D);
        PARAM(bw->norm2_b, D);
        PARAM(bw->fc1_w, M * D);
        PARAM(bw->fc1_b, M);
        PARAM(bw->fc2_w, D * M);
        PARAM(bw->fc2_b, D);
    }
    PARAM(w->norm_w, D);
    PARAM(w->norm_b, D);
    PARAM(w->head_w, K * D);
    PARAM(w->head_b, K);
#undef PARAM
    return n;
}

// Written then read, every parameter array holds the same bits.
static void test_save_then_build_gives_same_tensors(void) {
    char path[256];
    temp_path(path, sizeof path, "tensors");
    Vit made, loaded;
    build_random(&made);
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_save(&made, path, &err), VIT_OK);
    if (load(&loaded, path)) {
        Param a[128], b[128];
        int na = collect_params(&made, a, 128), nb = collect_params(&loaded, b, 128);
        CU_ASSERT_EQUAL(na, 8 + 16 * small_config.depth);
        CU_ASSERT_EQUAL_FATAL(na, nb);
        for (int i = 0; i < na; i++) {
            CU_ASSERT_EQUAL(a[i].numel, b[i].numel);
            CU_ASSERT_EQUAL(memcmp(a[i].data, b[i].data, a[i].numel * sizeof(float)), 0);
        }
        vit_free(&loaded);
    }
    vit_free(&made);
    unlink(path);
}

// F32 weights are not copied: every pointer lies inside the file's mapping.
static void test_f32_weights_are_mapped_in_place(void) {
    char path[256];
    temp_path(path, sizeof path, "inplace");
    Tensor l = save_small(path);
    Vit vit;
    if (load(&vit, path)) {
        const int L = vit.config.depth;
        CU_ASSERT_EQUAL(vit.map_count, 4 + 12 * L + 4);
        for (int i = 0; i < vit.map_count; i++) {
            if (strcmp(vit.map[i].how, "F32, in place") != 0)
                fprintf(stderr, "\n    %s: %s\n", vit.map[i].canonical, vit.map[i].how);
            CU_ASSERT_STRING_EQUAL(vit.map[i].how, "F32, in place");
            CU_ASSERT_STRING_EQUAL(vit.map[i].canonical, vit.map[i].source); // timm names
        }
        Param p[128];
        int n = collect_params(&vit, p, 128);
        const unsigned char *lo = vit.file.buf, *hi = vit.file.buf + vit.file.size;
        for (int i = 0; i < n; i++) {
            const unsigned char *begin = (const unsigned char *)p[i].data;
            const unsigned char *end = (const unsigned char *)(p[i].data + p[i].numel);
            CU_ASSERT_TRUE(begin >= lo && end <= hi);
            CU_ASSERT_EQUAL((uintptr_t)begin % sizeof(float), 0);
        }
        vit_free(&vit);
    }
    tensor_free(&l);
    unlink(path);
}

/* ---------------------------------------------------- half-precision files */

// Loads the model saved as @p dtype; checks it was converted, then compares its
// logits with (1) the F32 model whose parameters were rounded to @p dtype —
// the same numbers, so exactly the same logits — and (2) the F32 model itself.
static void check_half_precision(StDtype dtype, const char *how, double max_drift) {
    char f32[256], half[256], rounded[256];
    temp_path(f32, sizeof f32, "f32");
    temp_path(half, sizeof half, st_dtype_name(dtype));
    temp_path(rounded, sizeof rounded, "rounded");
    Tensor exact = save_small(f32);
    rewrite(f32, half, as_dtype, &dtype, NULL);
    rewrite(f32, rounded, rounded_to, &dtype, NULL);
    Vit vit, ref;
    if (load(&vit, half) && load(&ref, rounded)) {
        for (int i = 0; i < vit.map_count; i++) CU_ASSERT_STRING_EQUAL(vit.map[i].how, how);
        Tensor got = logits_of(&vit), want = logits_of(&ref);
        assert_tensor_close(&got, &want, 0.0f, 0.0f, "logits of the file vs rounded model");

        double worst = 0, norm = 0;
        for (size_t i = 0; i < got.numel; i++) {
            worst = fmax(worst, fabs((double)got.data[i] - exact.data[i]));
            norm += (double)exact.data[i] * exact.data[i];
        }
        double drift = worst / sqrt(norm / (double)exact.numel);
        if (!(drift <= max_drift) || getenv("VIT_GOLDEN_REPORT"))
            fprintf(stderr, "\n    %s logits drift %.3g x rms from F32, allowed %.3g\n",
                    st_dtype_name(dtype), drift, max_drift);
        CU_ASSERT_TRUE(drift <= max_drift);
        CU_ASSERT_TRUE(drift > 0); // rounding did change the weights
        tensor_free(&got), tensor_free(&want);
        vit_free(&ref);
        vit_free(&vit);
    }
    tensor_free(&exact);
    unlink(f32);
    unlink(half);
    unlink(rounded);
}

// How far rounding the weights moves the logits, relative to the logits' rms:
// each weight moves by up to 2^-9 (BF16, 8-bit significand) or 2^-12 (F16,
// 11 bits) of itself, randomly signed; summed over 64-256 inputs per output the
// relative change of a layer's output is ~2^-9/√3 ≈ 1e-3 (BF16) and about 8
// times less for F16, and 2 blocks with sharp attention amplify it a few times.
// Measured: BF16 1.5e-2, F16 2.3e-3. The bounds (4e-2, 6e-3) are ~2.6x that;
// loading the wrong bits (a byte swap, F16 read as BF16) is off by ~1 x rms.
static void test_bf16_file_loads_converted(void) {
    check_half_precision(ST_BF16, "converted from BF16", 4e-2);
}

static void test_f16_file_loads_converted(void) {
    check_half_precision(ST_F16, "converted from F16", 6e-3);
}

/* ---------------------------------------------------------- naming schemes */

static void check_other_scheme(RewriteFn fn, const char *source, const char *stem) {
    char timm[256], other[256];
    temp_path(timm, sizeof timm, "timm");
    temp_path(other, sizeof other, stem);
    Tensor want = save_small(timm);
    rewrite(timm, other, fn, NULL, NULL); // metadata (heads, eps) kept
    Vit vit;
    if (load(&vit, other)) {
        CU_ASSERT_STRING_EQUAL(vit.source, source);
        CU_ASSERT_TRUE(same_config(&vit.config, &small_config));
        Tensor got = logits_of(&vit);
        // the same numbers through the same arithmetic
        assert_tensor_close(&got, &want, 0.0f, 0.0f, source);
        tensor_free(&got);
        vit_free(&vit);
    }
    tensor_free(&want);
    unlink(timm);
    unlink(other);
}

static void test_hf_names_give_same_logits(void) { check_other_scheme(to_hf, "hf", "hf"); }

static void test_torchvision_names_give_same_logits(void) {
    check_other_scheme(to_torchvision, "torchvision", "tv");
}

static void test_unknown_scheme_is_refused(void) {
    char timm[256], other[256], msg[sizeof(VitError)];
    temp_path(timm, sizeof timm, "timm");
    temp_path(other, sizeof other, "nocls");
    Tensor l = save_small(timm);
    rewrite(timm, other, drop, (void *)"cls_token", NULL);
    load_fails(other, msg, sizeof msg);
    assert_mentions(msg, "cls_token");
    tensor_free(&l);
    unlink(timm);
    unlink(other);
}

/* --------------------------------------------------------------- metadata */

// Loads @p src rewritten by @p fn with metadata @p meta; returns the config read.
static VitConfig config_with(const char *src, RewriteFn fn, const char *const *meta) {
    char path[256];
    temp_path(path, sizeof path, "meta");
    rewrite(src, path, fn, NULL, meta);
    Vit vit;
    VitConfig c = {0};
    if (load(&vit, path)) {
        c = vit.config;
        vit_free(&vit);
    }
    unlink(path);
    return c;
}

static void test_heads_and_eps_from_metadata(void) {
    char timm[256];
    temp_path(timm, sizeof timm, "timm");
    Tensor l = save_small(timm);
    const char *const none[] = {NULL};
    const char *const heads8[] = {"num_heads", "8", NULL};
    const char *const eps[] = {"layer_norm_eps", "1e-05", NULL};

    VitConfig c = config_with(timm, keep, heads8);
    CU_ASSERT_EQUAL(c.heads, 8);
    c = config_with(timm, keep, none);
    CU_ASSERT_EQUAL(c.heads, 64 / 64); // no metadata: D/64, the ViT convention
    CU_ASSERT_EQUAL(c.ln_eps, 1e-6f);  // timm's default
    c = config_with(timm, keep, eps);
    CU_ASSERT_EQUAL(c.ln_eps, 1e-5f);
    c = config_with(timm, to_hf, none);
    CU_ASSERT_EQUAL(c.ln_eps, 1e-12f); // Hugging Face's default
    c = config_with(timm, to_hf, eps);
    CU_ASSERT_EQUAL(c.ln_eps, 1e-5f);
    c = config_with(timm, to_torchvision, none);
    CU_ASSERT_EQUAL(c.ln_eps, 1e-6f); // torchvision's
    tensor_free(&l);
    unlink(timm);
}

// A wider model without metadata gets D/64 heads.
static void test_heads_default_to_d_over_64(void) {
    VitConfig cfg = small_config;
    cfg.dim = 192, cfg.mlp_dim = 768, cfg.heads = 3, cfg.depth = 1;
    Vit vit;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_build_random(&vit, &cfg, &small_init, &err), VIT_OK);
    char timm[256];
    temp_path(timm, sizeof timm, "wide");
    CU_ASSERT_EQUAL_FATAL(vit_save(&vit, timm, &err), VIT_OK);
    vit_free(&vit);
    const char *const none[] = {NULL};
    VitConfig c = config_with(timm, keep, none);
    CU_ASSERT_EQUAL(c.heads, 3);
    CU_ASSERT_EQUAL(c.dim, 192);
    unlink(timm);
}

/* ------------------------------------------------------- broken checkpoints */

static void test_missing_bias_becomes_zeros(void) {
    char timm[256], path[256], zeroed[256];
    temp_path(timm, sizeof timm, "timm");
    temp_path(path, sizeof path, "nobias");
    temp_path(zeroed, sizeof zeroed, "zerobias");
    Tensor l = save_small(timm);
    rewrite(timm, path, drop, (void *)"blocks.1.attn.proj.bias", NULL);
    // the expected model: the same file with that bias stored as zeros
    Replace r = {"blocks.1.attn.proj.bias", tensor_new(1, small_config.dim)};
    rewrite(timm, zeroed, replace_one, &r, NULL);
    Vit vit, ref;
    if (load(&vit, path) && load(&ref, zeroed)) {
        int found = 0;
        for (int i = 0; i < vit.map_count; i++)
            if (strcmp(vit.map[i].canonical, "blocks.1.attn.proj.bias") == 0) {
                CU_ASSERT_STRING_EQUAL(vit.map[i].how, "zeros (missing bias)");
                found++;
            }
        CU_ASSERT_EQUAL(found, 1);
        Tensor got = logits_of(&vit), want = logits_of(&ref);
        assert_tensor_close(&got, &want, 0.0f, 0.0f, "logits with a missing bias");
        CU_ASSERT_TRUE(fabsf(want.data[0] - l.data[0]) > 0); // the bias mattered
        tensor_free(&got), tensor_free(&want);
        vit_free(&ref);
        vit_free(&vit);
    }
    tensor_free(&r.replacement);
    tensor_free(&l);
    unlink(timm);
    unlink(path);
    unlink(zeroed);
}

static void test_missing_weight_is_named(void) {
    char timm[256], path[256], msg[sizeof(VitError)];
    temp_path(timm, sizeof timm, "timm");
    temp_path(path, sizeof path, "noweight");
    Tensor l = save_small(timm);
    rewrite(timm, path, drop, (void *)"blocks.1.mlp.fc2.weight", NULL);
    load_fails(path, msg, sizeof msg);
    assert_mentions(msg, "blocks.1.mlp.fc2.weight");
    assert_mentions(msg, path);
    rewrite(timm, path, drop, (void *)"norm.weight", NULL);
    load_fails(path, msg, sizeof msg);
    assert_mentions(msg, "'norm.weight'");
    // in a Hugging Face file the message uses Hugging Face's name
    char hf[256];
    temp_path(hf, sizeof hf, "hf");
    rewrite(timm, hf, to_hf, NULL, NULL);
    rewrite(hf, path, drop, (void *)"vit.encoder.layer.0.attention.attention.key.weight", NULL);
    load_fails(path, msg, sizeof msg);
    assert_mentions(msg, "vit.encoder.layer.0.attention.attention.key.weight");
    tensor_free(&l);
    unlink(timm);
    unlink(path);
    unlink(hf);
}

static void test_shape_mismatch_is_named(void) {
    char timm[256], path[256], msg[sizeof(VitError)];
    temp_path(timm, sizeof timm, "timm");
    temp_path(path, sizeof path, "shape");
    Tensor l = save_small(timm);
    const int D = small_config.dim, M = small_config.mlp_dim;
    Replace r = {"blocks.0.mlp.fc1.bias", tensor_new(1, M + 1)};
    rewrite(timm, path, replace_one, &r, NULL);
    load_fails(path, msg, sizeof msg);
    assert_mentions(msg, "blocks.0.mlp.fc1.bias");
    assert_mentions(msg, "(257)");
    assert_mentions(msg, "(256)");
    tensor_free(&r.replacement);

    r = (Replace){"blocks.1.attn.proj.weight", tensor_new(2, D, D + 1)};
    rewrite(timm, path, replace_one, &r, NULL);
    load_fails(path, msg, sizeof msg);
    assert_mentions(msg, "blocks.1.attn.proj.weight");
    assert_mentions(msg, "(64, 65)");
    assert_mentions(msg, "(64, 64)");
    tensor_free(&r.replacement);
    tensor_free(&l);
    unlink(timm);
    unlink(path);
}

static void test_width_not_divisible_by_heads(void) {
    char timm[256], path[256], msg[sizeof(VitError)];
    temp_path(timm, sizeof timm, "timm");
    temp_path(path, sizeof path, "heads5");
    Tensor l = save_small(timm);
    const char *const heads5[] = {"num_heads", "5", NULL};
    rewrite(timm, path, keep, NULL, heads5);
    load_fails(path, msg, sizeof msg);
    assert_mentions(msg, "not divisible");
    assert_mentions(msg, "5 heads");
    assert_mentions(msg, path);
    // the same rule for a model made in memory
    VitConfig c = small_config;
    c.heads = 5;
    Vit vit;
    VitError err = {{0}};
    CU_ASSERT_EQUAL(vit_build_random(&vit, &c, &small_init, &err), VIT_ERR_INPUT);
    assert_mentions(err.msg, "not divisible");
    tensor_free(&l);
    unlink(timm);
    unlink(path);
}

// Renames every tensor of block `from` to block `to` (user: int[2]), in timm or HF names.
static void renumber_block(StWriter *w, const char *name, const Tensor *t, void *user) {
    const int *blocks = user;
    const char *prefixes[] = {"blocks.", "vit.encoder.layer."};
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) {
        size_t n = strlen(prefixes[i]);
        char *end;
        if (strncmp(name, prefixes[i], n) != 0 || strtol(name + n, &end, 10) != blocks[0] ||
            *end != '.')
            continue;
        char renamed[160];
        snprintf(renamed, sizeof renamed, "%s%d%s", prefixes[i], blocks[1], end);
        st_writer_add(w, renamed, t);
        return;
    }
    st_writer_add(w, name, t);
}

// Blocks 0 and 2 without 1 would silently make a one-block model: refused, naming the tensor.
static void test_a_gap_in_the_blocks_is_refused(void) {
    char timm[256], path[256], hf[256], msg[sizeof(VitError)];
    temp_path(timm, sizeof timm, "timm");
    temp_path(path, sizeof path, "gap");
    temp_path(hf, sizeof hf, "hf");
    Tensor l = save_small(timm);
    int one_to_two[2] = {1, 2};
    rewrite(timm, path, renumber_block, one_to_two, NULL);
    load_fails(path, msg, sizeof msg);
    assert_mentions(msg, path);
    assert_mentions(msg, "tensor 'blocks.2.");
    assert_mentions(msg, "belongs to block 2, but block 1 is missing");
    // no block 0 at all: the same, not "no encoder blocks"
    int zero_to_two[2] = {0, 2};
    rewrite(timm, path, renumber_block, zero_to_two, NULL);
    load_fails(path, msg, sizeof msg);
    assert_mentions(msg, "but block 0 is missing");
    // Hugging Face names: its own prefix
    rewrite(timm, hf, to_hf, NULL, NULL);
    int one_to_five[2] = {1, 5};
    rewrite(hf, path, renumber_block, one_to_five, NULL);
    load_fails(path, msg, sizeof msg);
    assert_mentions(msg, "tensor 'vit.encoder.layer.5.");
    assert_mentions(msg, "belongs to block 5, but block 1 is missing");
    tensor_free(&l);
    unlink(timm);
    unlink(path);
    unlink(hf);
}

// An eps float32 cannot hold is named as the file wrote it, not as the 0 it rounds to.
static void test_eps_is_quoted_as_written(void) {
    char timm[256], path[256], msg[sizeof(VitError)];
    temp_path(timm, sizeof timm, "timm");
    temp_path(path, sizeof path, "eps");
    Tensor l = save_small(timm);
    const struct {
        const char *eps, *problem;
    } cases[] = {
        {"1e-50", "__metadata__ layer_norm_eps '1e-50' is too small for float32 (it rounds to 0)"},
        {"2", "__metadata__ layer_norm_eps '2' is not in (0, 1)"},
        {"tiny", "__metadata__ layer_norm_eps 'tiny' is not a number"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *const meta[] = {"layer_norm_eps", cases[i].eps, NULL};
        rewrite(timm, path, keep, NULL, meta);
        load_fails(path, msg, sizeof msg);
        assert_mentions(msg, cases[i].problem);
    }
    tensor_free(&l);
    unlink(timm);
    unlink(path);
}

CU_TestInfo tests_weights[] = {
    {"timm file: every stage equals PyTorch", test_timm_file_matches_pytorch},
    {"Hugging Face file: every stage equals PyTorch", test_hf_file_matches_pytorch},
    {"torchvision file: every stage equals PyTorch", test_torchvision_file_matches_pytorch},
    {"save then build gives the same logits", test_save_then_build_gives_same_model},
    {"save then build gives the same tensors", test_save_then_build_gives_same_tensors},
    {"F32 weights are mapped in place", test_f32_weights_are_mapped_in_place},
    {"BF16 file converts like rounding the weights", test_bf16_file_loads_converted},
    {"F16 file converts like rounding the weights", test_f16_file_loads_converted},
    {"Hugging Face names give the same logits", test_hf_names_give_same_logits},
    {"torchvision names give the same logits", test_torchvision_names_give_same_logits},
    {"a file of no known scheme is refused", test_unknown_scheme_is_refused},
    {"heads and eps from metadata, else defaults", test_heads_and_eps_from_metadata},
    {"heads default to D/64", test_heads_default_to_d_over_64},
    {"a missing bias becomes zeros", test_missing_bias_becomes_zeros},
    {"a missing weight is named", test_missing_weight_is_named},
    {"a shape mismatch names tensor and shapes", test_shape_mismatch_is_named},
    {"width not divisible by heads is refused", test_width_not_divisible_by_heads},
    {"a gap in the blocks is refused", test_a_gap_in_the_blocks_is_refused},
    {"an eps is quoted as written", test_eps_is_quoted_as_written},
    CU_TEST_INFO_NULL,
};
