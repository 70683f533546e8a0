/**
 * @file test_quantize.c
 * @brief Quantized weights files: vit_save_int8() and `vit quantize` write them,
 *        vit_build() loads them (lib/model/quantized.c).
 *
 * What is checked, and against what:
 *   - the file's contents: for the small ViT of tools/gen_golden_vit.py, every
 *     Linear weight's I8 bytes and F32 scales equal PyTorch's quantization of
 *     the same weights bit for bit (tools/gen_golden_lowp.py, quantized_small);
 *     the other tensors are the float ones, unchanged; the metadata names the
 *     scheme;
 *   - the loaded file runs in int8 with no float Linear weights, and its every
 *     stage matches PyTorch's int8 model (the golden the precision suite uses),
 *     on the VNNI path and on the portable one;
 *   - fp32 asked of it gives float weights q · scale; quantized again they give
 *     the same integers and scales: nothing drifts through a round trip;
 *   - the size: a ViT with ViT-B/16's proportions in int8 is at most 27 % of its
 *     float file;
 *   - bad files are refused with the file and the problem named: a missing
 *     scale, a scale of 0, NaN, infinity or below 0, a scale of another shape
 *     or dtype, an unknown scheme, I8 with no scheme, I8 where no Linear weight is;
 *   - `vit quantize`: writes the file, refuses to write over its input (which
 *     stays as it was) and leaves nothing behind when the input is bad.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "cli_run.h"
#include "base/rng.h"
#include "gemm/gemm_lowp.h"
#include "model/trace_stages.h"
#include "model/vit.h"


// The small model's golden batch (check.h).
static Tensor image_batch(void) {
    return check_image_batch(&check_small_config, CHECK_SMALL_BATCH, CHECK_SMALL_INPUT_SEED);
}

static bool ok(VitStatus s, const VitError *err, const char *what) {
    if (s != VIT_OK) fprintf(stderr, "\n    %s: %s\n", what, err->msg);
    CU_ASSERT_EQUAL(s, VIT_OK);
    return s == VIT_OK;
}

// The small ViT in float, written to `path` in int8; false (and a failure) if not.
static bool write_small_int8(const char *path) {
    Vit vit;
    VitError err;
    if (!ok(vit_build_random(&vit, &check_small_config, &check_small_init, &err), &err, "build"))
        return false;
    const bool written = ok(vit_save_int8(&vit, path, &err), &err, "vit_save_int8");
    vit_free(&vit);
    return written;
}

/* ----------------------------------------------------------- the contents */

// Every Linear weight's q and scales in `path` against the golden, bit for bit.
static void expect_int8_tensors_as_golden(const char *path) {
    SafeTensors file, golden;
    VitError err;
    if (!ok(st_open(&file, path, &err), &err, "st_open")) return;
    if (!ok(st_open(&golden, golden_path("quantized_small.safetensors"), &err), &err, "golden")) {
        st_close(&file);
        return;
    }
    int compared = 0;
    for (int i = 0; i < golden.count; i++) {
        const StTensor *want = &golden.tensors[i], *got = st_find(&file, want->name);
        CU_ASSERT_PTR_NOT_NULL_FATAL(got);
        const bool is_scale = strstr(want->name, "_scale") != NULL;
        CU_ASSERT(got->dtype == (is_scale ? ST_F32 : ST_I8));
        CU_ASSERT_EQUAL_FATAL(got->numel, want->numel);
        const float *expected = (const float *)want->bytes;
        size_t differ = 0;
        for (size_t k = 0; k < want->numel; k++) {
            const float value = is_scale ? ((const float *)got->bytes)[k]
                                         : (float)((const int8_t *)got->bytes)[k];
            differ += value != expected[k];
        }
        if (differ)
            fprintf(stderr, "\n    %s: %zu of %zu values differ from PyTorch's\n", want->name,
                    differ, want->numel);
        CU_ASSERT_EQUAL(differ, 0);
        compared++;
    }
    CU_ASSERT_EQUAL(compared, 2 * (4 * check_small_config.depth + 1)); // q and scales of 9 Linears
    CU_ASSERT_STRING_EQUAL(st_meta(&file, VIT_QUANT_KEY), VIT_QUANT_INT8);
    CU_ASSERT_STRING_EQUAL(st_meta(&file, "num_heads"), "4");
    st_close(&golden);
    st_close(&file);
}

static void test_file_holds_pytorchs_integers(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) return;
    char path[512];
    scratch_file(&dir, "small-int8.safetensors", path, sizeof path);
    if (write_small_int8(path)) expect_int8_tensors_as_golden(path);
    scratch_remove(&dir);
}

// The tensors that are not Linear weights stay the model's float ones, value for value.
static void test_other_tensors_stay_float(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) return;
    char path[512];
    scratch_file(&dir, "small-int8.safetensors", path, sizeof path);
    Vit vit;
    VitError err;
    SafeTensors file;
    if (write_small_int8(path) &&
        ok(vit_build_random(&vit, &check_small_config, &check_small_init, &err), &err, "build")) {
        if (ok(st_open(&file, path, &err), &err, "st_open")) {
            const char *names[] = {"patch_embed.proj.weight", "cls_token", "pos_embed",
                                   "blocks.1.norm2.weight", "blocks.0.attn.qkv.bias", "head.bias"};
            for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
                const StTensor *e = st_find(&file, names[i]);
                CU_ASSERT_PTR_NOT_NULL_FATAL(e);
                CU_ASSERT_EQUAL(e->dtype, ST_F32);
                int block;
                const VitParamSpec *s = vit_param_find(names[i], &block);
                CU_ASSERT_PTR_NOT_NULL_FATAL(s);
                // independent: the model's own weights, written as they are, not computed
                const float *want = vit_param_data(&vit.weights, s, block, 0);
                CU_ASSERT_EQUAL(memcmp(e->bytes, want, e->numel * sizeof(float)), 0);
            }
            st_close(&file);
        }
        vit_free(&vit);
    }
    scratch_remove(&dir);
}

/* ------------------------------------------------------------- the model */

static void run_loaded_against_golden(bool portable) {
    ScratchDir dir;
    if (!scratch_make(&dir)) return;
    char path[512];
    scratch_file(&dir, "small-int8.safetensors", path, sizeof path);
    gemm_lowp_set_portable(portable);
    Vit vit;
    VitError err;
    if (write_small_int8(path) && ok(vit_build(&vit, path, &err), &err, "vit_build")) {
        CU_ASSERT(vit.int8_only);
        CU_ASSERT_EQUAL(vit.precision, LOWP_INT8);
        CU_ASSERT_PTR_NULL(vit.weights.blocks[0].attn.q_w); // no float copy of any Linear
        CU_ASSERT_PTR_NULL(vit.weights.blocks[1].fc2_w);
        CU_ASSERT_PTR_NULL(vit.weights.head_w);
        Tensor x = image_batch();
        GoldenCheck g;
        if (golden_open(&g, "vit_small_int8.safetensors")) {
            CU_ASSERT_EQUAL(vit_forward(&vit, &x, golden_check, &g, &err), VIT_OK);
            CU_ASSERT_EQUAL(g.checked, TRACE_STAGES(check_small_config.depth));
            golden_finish(&g);
        }
        CU_ASSERT_EQUAL_FATAL(vit_forward(&vit, &x, NULL, NULL, &err), VIT_OK); // block_fused.c
        const Tensor logits = vit_logits(&vit);
        expect_golden_tensor("vit_small_int8.safetensors", "logits", &logits);
        tensor_free(&x);
        vit_free(&vit);
    }
    gemm_lowp_set_portable(false);
    scratch_remove(&dir);
}

static void test_loaded_file_matches_pytorch(void) { run_loaded_against_golden(false); }
static void test_loaded_file_portable_matches_pytorch(void) { run_loaded_against_golden(true); }

// fp32 asked of a loaded file: float weights q · scale (checked against the
// golden's q and scales); quantized again, the same file.
static void test_round_trip_gives_the_same_integers(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) return;
    char first[512], second[512];
    scratch_file(&dir, "first.safetensors", first, sizeof first);
    scratch_file(&dir, "second.safetensors", second, sizeof second);
    Vit vit;
    VitError err;
    if (write_small_int8(first) && ok(vit_build(&vit, first, &err), &err, "vit_build")) {
        CU_ASSERT_EQUAL(vit_set_precision(&vit, LOWP_FP32, &err), VIT_OK);
        CU_ASSERT(!vit.int8_only);
        CU_ASSERT_PTR_NOT_NULL_FATAL(vit.weights.blocks[0].attn.q_w);
        Tensor q = golden_tensor("quantized_small.safetensors", "blocks.0.attn.qkv.weight");
        Tensor s = golden_tensor("quantized_small.safetensors", "blocks.0.attn.qkv.weight_scale");
        const int D = check_small_config.dim;
        size_t differ = 0; // q's first third is q_w's rows: each q · scale in float
        for (int o = 0; o < D; o++)
            for (int d = 0; d < D; d++)
                differ += vit.weights.blocks[0].attn.q_w[(size_t)o * D + d] !=
                          q.data[(size_t)o * D + d] * s.data[o];
        CU_ASSERT_EQUAL(differ, 0);
        CU_ASSERT(vit.weights.blocks[0].attn.k_w == vit.weights.blocks[0].attn.q_w + D * D);
        CU_ASSERT(ok(vit_save_int8(&vit, second, &err), &err, "vit_save_int8 again"));
        expect_int8_tensors_as_golden(second);
        tensor_free(&q), tensor_free(&s);
        vit_free(&vit);
    }
    scratch_remove(&dir);
}

// An int8 model saves as int8 only, and not for training.
static void test_int8_model_refuses_float_save_and_training(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) return;
    char path[512], out[512];
    scratch_file(&dir, "small-int8.safetensors", path, sizeof path);
    scratch_file(&dir, "float.safetensors", out, sizeof out);
    Vit vit;
    VitError err;
    if (write_small_int8(path) && ok(vit_build(&vit, path, &err), &err, "vit_build")) {
        CU_ASSERT_EQUAL(vit_save(&vit, out, &err), VIT_ERR_USAGE);
        CU_ASSERT(mentions(&err, "int8", "fp32"));
        CU_ASSERT_NOT_EQUAL(vit_train_prepare(&vit, VIT_KEEP_ALL, 2, &err), VIT_OK);
        CU_ASSERT_EQUAL(scratch_count(&dir), 1);
        CU_ASSERT_EQUAL(vit_set_precision(&vit, LOWP_BF16, &err), VIT_OK); // bf16 of q · scale
        CU_ASSERT_PTR_NOT_NULL(vit.weights.head_w);
        vit_free(&vit);
    }
    scratch_remove(&dir);
}

// A Hugging Face and a torchvision file (q, k, v apart in the first) quantized:
// timm's names, their preprocessing named, and the same int8 model bit for bit.
static void test_other_conventions_quantize_alike(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) return;
    const char *sources[] = {"keys_loader_hf.safetensors", "keys_loader_torchvision.safetensors"};
    const char *presets[] = {"hf", "torchvision"};
    for (int i = 0; i < 2; i++) {
        char out[512];
        scratch_file(&dir, "int8.safetensors", out, sizeof out);
        Vit a, b;
        VitError err;
        if (!ok(vit_build(&a, golden_path(sources[i]), &err), &err, sources[i])) continue;
        CU_ASSERT(ok(vit_save_int8(&a, out, &err), &err, "vit_save_int8"));
        CU_ASSERT(ok(vit_set_precision(&a, LOWP_INT8, &err), &err, "int8"));
        if (ok(vit_build(&b, out, &err), &err, "the int8 file")) {
            CU_ASSERT_STRING_EQUAL(b.source, "timm");
            CU_ASSERT_STRING_EQUAL(st_meta(&b.file, "preprocess"), presets[i]);
            const VitConfig *c = &a.config;
            Tensor x = tensor_new(4, 1, c->channels, c->image_size, c->image_size);
            Rng rng;
            rng_seed(&rng, 5);
            rng_fill_uniform(&rng, x.data, x.numel, -1.0f, 1.0f);
            CU_ASSERT_EQUAL_FATAL(vit_forward(&a, &x, NULL, NULL, &err), VIT_OK);
            CU_ASSERT_EQUAL_FATAL(vit_forward(&b, &x, NULL, NULL, &err), VIT_OK);
            // independent: the same model quantized in memory, whose int8 pass the precision suite holds to PyTorch
            const Tensor want = vit_logits(&a), got = vit_logits(&b);
            CU_ASSERT_EQUAL(memcmp(got.data, want.data, want.numel * sizeof(float)), 0);
            tensor_free(&x);
            vit_free(&b);
        }
        vit_free(&a);
    }
    scratch_remove(&dir);
}

/* ------------------------------------------------------------------ size */

// Bytes of the tensors of a model with `cfg` in int8: each Linear weight a byte
// a value and a 4-byte scale a row, every other parameter 4 bytes.
static double int8_data_bytes(const VitConfig *c) {
    const double L = c->depth, D = c->dim, M = c->mlp_dim, Y = c->num_classes;
    const double linear_values = L * (4 * D * D + 2 * D * M) + Y * D;
    const double linear_rows = L * (3 * D + D + M + D) + Y;
    return linear_values + 4 * linear_rows + 4 * ((double)vit_param_count(c) - linear_values);
}

// The small ViT's file is its header and exactly those bytes; by the same
// count, ViT-B/16's int8 file is at most 27 % of its float one.
static void test_file_is_at_most_27_percent(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) return;
    char path[512];
    scratch_file(&dir, "small-int8.safetensors", path, sizeof path);
    SafeTensors file;
    VitError err;
    if (write_small_int8(path) && ok(st_open(&file, path, &err), &err, "st_open")) {
        size_t data = 0;
        for (int i = 0; i < file.count; i++) data += file.tensors[i].end - file.tensors[i].begin;
        CU_ASSERT_EQUAL(data, (size_t)int8_data_bytes(&check_small_config));
        st_close(&file);
    }
    VitConfig base;
    vit_config_for_arch(&base, "vit-base", NULL);
    const double float_bytes = 4.0 * (double)vit_param_count(&base);
    const double ratio = int8_data_bytes(&base) / float_bytes;
    if (ratio > 0.27) fprintf(stderr, "\n    ViT-B/16 in int8: %.1f %% of float\n", 100 * ratio);
    CU_ASSERT(ratio <= 0.27);
    CU_ASSERT(ratio >= 0.25); // a byte a weight and no less
    scratch_remove(&dir);
}

/* ------------------------------------------------------------- bad files */

/** One way to spoil a good int8 file, and what the error must say. */
typedef struct {
    const char *what;   // for the failure message
    const char *tensor; // the tensor changed (or left out)
    enum { DROP, SCALE_VALUE, SCALE_SHAPE, AS_INT8, SCHEME } how;
    float value;        // SCALE_VALUE: the scale's new value at row 5
    const char *scheme; // SCHEME: the metadata's scheme, NULL for none
    const char *says;   // a part of the message, beside the file's name
} Spoil;

static const Spoil spoils[] = {
    {"a missing scale", "blocks.1.mlp.fc1.weight_scale", DROP, 0, VIT_QUANT_INT8,
     "has no scale"},
    {"a scale of 0", "blocks.0.attn.proj.weight_scale", SCALE_VALUE, 0.0f, VIT_QUANT_INT8, "is 0"},
    {"a scale of NaN", "head.weight_scale", SCALE_VALUE, NAN, VIT_QUANT_INT8, "is NaN"},
    {"an infinite scale", "blocks.0.attn.qkv.weight_scale", SCALE_VALUE, INFINITY,
     VIT_QUANT_INT8, "is infinite"},
    {"a negative scale", "blocks.1.mlp.fc2.weight_scale", SCALE_VALUE, -0.01f, VIT_QUANT_INT8,
     "negative"},
    {"a scale of the wrong shape", "blocks.0.mlp.fc1.weight_scale", SCALE_SHAPE, 0,
     VIT_QUANT_INT8, "needs F32 (256)"},
    {"an unknown scheme", "", SCHEME, 0, "int4-groups-of-32", "unknown quantization scheme"},
    {"I8 and no scheme", "", SCHEME, 0, NULL, "names no quantization scheme"},
    {"I8 where no Linear weight is", "pos_embed", AS_INT8, 0, VIT_QUANT_INT8,
     "only a Linear layer's weight"},
};

// `good` copied to `bad`, spoilt as `sp` says.
static void write_spoilt(const char *good, const char *bad, const Spoil *sp) {
    SafeTensors file;
    VitError err;
    if (!ok(st_open(&file, good, &err), &err, "st_open")) return;
    StWriter wr = {0};
    for (int i = 0; i < file.meta_count; i++)
        if (strcmp(file.meta_keys[i], VIT_QUANT_KEY) != 0)
            st_writer_meta(&wr, file.meta_keys[i], file.meta_values[i]);
    if (sp->scheme) st_writer_meta(&wr, VIT_QUANT_KEY, sp->scheme);
    float changed[1024];
    int8_t zeros[4096] = {0};
    for (int i = 0; i < file.count; i++) {
        const StTensor *e = &file.tensors[i];
        int shape[ST_MAX_DIMS];
        for (int d = 0; d < e->ndim; d++) shape[d] = (int)e->shape[d];
        const bool this_one = strcmp(e->name, sp->tensor) == 0;
        const void *bytes = e->bytes;
        StDtype dtype = e->dtype;
        if (this_one && sp->how == DROP) continue;
        if (this_one && (sp->how == SCALE_VALUE || sp->how == SCALE_SHAPE)) {
            CU_ASSERT_FATAL(e->numel + 1 <= sizeof changed / sizeof changed[0]);
            memcpy(changed, e->bytes, e->numel * sizeof(float));
            changed[e->numel] = 1.0f;
            if (sp->how == SCALE_VALUE) changed[5] = sp->value;
            else shape[0] += 1;
            bytes = changed;
        }
        if (this_one && sp->how == AS_INT8) {
            CU_ASSERT_FATAL(e->numel <= sizeof zeros);
            bytes = zeros, dtype = ST_I8;
        }
        st_writer_add_raw(&wr, e->name, dtype, e->ndim, shape, bytes);
    }
    CU_ASSERT(ok(st_writer_save(&wr, bad, &err), &err, "st_writer_save"));
    st_writer_free(&wr);
    st_close(&file);
}

static void test_bad_files_are_refused(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) return;
    char good[512], bad[512];
    scratch_file(&dir, "good.safetensors", good, sizeof good);
    scratch_file(&dir, "bad.safetensors", bad, sizeof bad);
    if (!write_small_int8(good)) return scratch_remove(&dir);
    for (size_t i = 0; i < sizeof spoils / sizeof spoils[0]; i++) {
        const Spoil *sp = &spoils[i];
        write_spoilt(good, bad, sp);
        Vit vit;
        VitError err = {0};
        const VitStatus s = vit_build(&vit, bad, &err);
        if (s != VIT_ERR_INPUT || !mentions(&err, bad, sp->says))
            fprintf(stderr, "\n    %s: status %d, \"%s\"\n", sp->what, (int)s, err.msg);
        CU_ASSERT_EQUAL(s, VIT_ERR_INPUT);
        CU_ASSERT(mentions(&err, bad, sp->says));
        if (s == VIT_OK) vit_free(&vit);
        if (*sp->tensor && sp->how != DROP) CU_ASSERT(mentions(&err, sp->tensor, NULL));
    }
    scratch_remove(&dir);
}

/* --------------------------------------------------------- vit quantize */

static void test_vit_quantize_writes_and_refuses(void) {
    ScratchDir dir;
    if (!scratch_make(&dir)) return;
    char in[512], out[512], copy[512], trace[512], x[512];
    scratch_file(&dir, "float.safetensors", in, sizeof in);
    scratch_file(&dir, "int8.safetensors", out, sizeof out);
    scratch_file(&dir, "copy.safetensors", copy, sizeof copy);
    scratch_file(&dir, "trace.safetensors", trace, sizeof trace);
    scratch_file(&dir, "x.safetensors", x, sizeof x);
    Vit vit;
    VitError err;
    if (!ok(vit_build_random(&vit, &check_small_config, &check_small_init, &err), &err, "build"))
        return scratch_remove(&dir);
    CU_ASSERT(ok(vit_save(&vit, in, &err), &err, "vit_save"));
    vit_free(&vit);
    StWriter wr = {0};
    Tensor batch = image_batch();
    st_writer_add(&wr, "input", &batch);
    CU_ASSERT(ok(st_writer_save(&wr, x, &err), &err, "input"));
    st_writer_free(&wr);
    tensor_free(&batch);

    // written, and what it holds is PyTorch's integers
    CliResult r = VIT_RUN("quantize", in, out);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "% of"));
    cli_result_free(&r);
    expect_int8_tensors_as_golden(out);

    // every command loads it: a trace runs in int8 and says so
    r = VIT_RUN("trace", "--weights", out, "--input", x, "--out", trace);
    CU_ASSERT_EQUAL(r.status, 0);
    cli_result_free(&r);
    SafeTensors t;
    if (ok(st_open(&t, trace, &err), &err, "trace")) {
        CU_ASSERT_STRING_EQUAL(st_meta(&t, "precision"), "int8");
        Tensor logits;
        if (ok(st_read_tensor(&t, "logits", &logits, &err), &err, "logits")) {
            expect_golden_tensor("vit_small_int8.safetensors", "logits", &logits);
            tensor_free(&logits);
        }
        st_close(&t);
    }

    // never over its input, which stays as it was
    copy_file(in, copy);
    EXPECT_FAILURE(VIT_RUN("quantize", in, in), 1, "refusing to overwrite");
    CU_ASSERT(same_bytes(in, copy));
    // a bad input: an error naming it, and no output left behind
    const int files = scratch_count(&dir);
    write_text(copy, "not a safetensors file");
    char none[512];
    scratch_file(&dir, "none.safetensors", none, sizeof none);
    EXPECT_FAILURE(VIT_RUN("quantize", copy, none), 1, copy);
    CU_ASSERT_EQUAL(scratch_count(&dir), files);
    EXPECT_FAILURE(VIT_RUN("quantize", in), 2, "IN and OUT");
    scratch_remove(&dir);
}

CU_TestInfo tests_quantize[] = {
    {"the file holds PyTorch's int8 values and scales", test_file_holds_pytorchs_integers},
    {"other tensors stay float", test_other_tensors_stay_float},
    {"the loaded file matches PyTorch's int8 model", test_loaded_file_matches_pytorch},
    {"the loaded file, portable path, matches PyTorch", test_loaded_file_portable_matches_pytorch},
    {"dequantized and quantized again: the same integers", test_round_trip_gives_the_same_integers},
    {"an int8 model saves only in int8, trains not", test_int8_model_refuses_float_save_and_training},
    {"Hugging Face and torchvision files quantize alike", test_other_conventions_quantize_alike},
    {"ViT-B/16 in int8: at most 27 % of the float file", test_file_is_at_most_27_percent},
    {"bad quantized files are refused, named", test_bad_files_are_refused},
    {"vit quantize writes, refuses to overwrite its input", test_vit_quantize_writes_and_refuses},
    CU_TEST_INFO_NULL,
};
