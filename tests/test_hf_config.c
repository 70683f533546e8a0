/**
 * @file test_hf_config.c
 * @brief A Hugging Face checkpoint takes its head count, LayerNorm eps and
 *        class names from the config.json beside model.safetensors; a
 *        config.json that contradicts the weights is refused, naming it.
 *
 * The weights are the tiny Hugging Face-named seed of the fuzzer
 * (tests/fuzz/seeds/safetensors/hf_f16.safetensors: D 8, one block, 8×8
 * images in 4×4 patches, 3 classes), copied next to a config.json the test writes.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "cli_run.h"
#include "base/fileio.h"
#include "io/labels.h"
#include "model/vit.h"

enum { PATH_SIZE = 256 };

// A scratch folder holding model.safetensors (the seed) and config.json (`json`).
static bool hf_folder(ScratchDir *dir, const char *json, char *model) {
    if (!scratch_make(dir)) return false;
    char seed[PATH_SIZE], config[PATH_SIZE];
    snprintf(seed, sizeof seed, "%s/fuzz/seeds/safetensors/hf_f16.safetensors", VIT_TEST_DIR);
    size_t n;
    char *bytes = read_whole_file(seed, &n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bytes);
    scratch_file(dir, "model.safetensors", model, PATH_SIZE);
    FILE *f = fopen(model, "wb");
    fwrite(bytes, 1, n, f);
    fclose(f);
    free(bytes);
    f = fopen(scratch_file(dir, "config.json", config, sizeof config), "w");
    fputs(json, f);
    fclose(f);
    return true;
}

static void test_heads_eps_and_labels_from_config(void) {
    ScratchDir dir;
    char model[PATH_SIZE], img[PATH_SIZE];
    CU_ASSERT_FATAL(hf_folder(&dir, "{\"num_attention_heads\": 4, \"layer_norm_eps\": 1e-05, "
                                    "\"hidden_size\": 8, \"image_size\": 8, \"patch_size\": 4, "
                                    "\"id2label\": {\"0\": \"cat\", \"1\": \"dog\", \"2\": \"bird\"}}",
                              model));
    Vit vit;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_build(&vit, model, &err), VIT_OK);
    CU_ASSERT_STRING_EQUAL(vit.source, "hf");
    CU_ASSERT_EQUAL(vit.config.heads, 4);                 // D/64 would say 1
    CU_ASSERT_DOUBLE_EQUAL(vit.config.ln_eps, 1e-5, 1e-12); // the hf default would be 1e-12
    CU_ASSERT_STRING_EQUAL(vit.heads_from, "config.json num_attention_heads");
    vit_free(&vit);
    snprintf(img, sizeof img, "%s/data/img_wide.png", VIT_TEST_DIR);
    CliResult r = VIT_RUN("classify", "--weights", model, img, "--top", "3");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "(hf preprocessing, 8×8)")); // the preset follows the names
    for (const char *const *name = (const char *const[]){"  cat\n", "  dog\n", "  bird\n", NULL};
         *name; name++)
        CU_ASSERT_PTR_NOT_NULL(strstr(r.out, *name));
    cli_result_free(&r);
    scratch_remove(&dir);
}

static void test_contradicting_config_is_refused(void) {
    const struct {
        const char *json, *needle;
    } cases[] = {
        {"{\"hidden_size\": 16}", "says hidden_size 16"},
        {"{\"num_attention_heads\": 3}", "not divisible by 3 heads"},
        {"{\"layer_norm_eps\": -1}", "\"layer_norm_eps\" is not in (0, 1)"},
        {"{\"num_attention_heads\": \"four\"}", "\"num_attention_heads\" is not a positive integer"},
        {"{oops", "not valid JSON (the parser stopped at byte offset 2)"},
        {"{\"layer_norm_eps\": 1e-50}", "\"layer_norm_eps\" is too small for float32 (it rounds to 0)"},
        {"[1, 2]", "is valid JSON but not an object"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ScratchDir dir;
        char model[PATH_SIZE];
        CU_ASSERT_FATAL(hf_folder(&dir, cases[i].json, model));
        Vit vit;
        VitError err;
        CU_ASSERT_EQUAL(vit_build(&vit, model, &err), VIT_ERR_INPUT);
        bool named = strstr(err.msg, cases[i].needle) && strstr(err.msg, dir.path);
        if (!named) fprintf(stderr, "\n    case %zu: %s\n", i, err.msg);
        CU_ASSERT(named);
        scratch_remove(&dir);
    }
}

// vit_build() fails on `model` with a message naming `path` and containing `needle`.
static void build_fails(const char *model, const char *path, const char *needle) {
    Vit vit;
    VitError err = {{0}};
    CU_ASSERT_EQUAL(vit_build(&vit, model, &err), VIT_ERR_INPUT);
    bool named = strstr(err.msg, needle) && strstr(err.msg, path);
    if (!named) fprintf(stderr, "\n    expected '%s' about %s, got: %s\n", needle, path, err.msg);
    CU_ASSERT(named);
}

// A config.json that is there but cannot be read is an error that says why,
// never silently skipped (the model would then run with D/64 heads and no names).
static void test_unreadable_config_is_an_error(void) {
    ScratchDir dir;
    char model[PATH_SIZE], config[PATH_SIZE];
    CU_ASSERT_FATAL(hf_folder(&dir, "{}", model));
    scratch_file(&dir, "config.json", config, sizeof config);
    CU_ASSERT_EQUAL_FATAL(unlink(config), 0);
    CU_ASSERT_EQUAL_FATAL(mkdir(config, 0700), 0);
    build_fails(model, config, "is a directory, not a JSON file");
    CU_ASSERT_EQUAL_FATAL(rmdir(config), 0);
    CU_ASSERT_EQUAL_FATAL(mkfifo(config, 0600), 0); // would block a plain fopen for ever
    build_fails(model, config, "is a FIFO (named pipe), not a JSON file");
    // and through the program, which must not hang either
    CliResult r = VIT_RUN("info", "--weights", model);
    CU_ASSERT_EQUAL(r.status, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "is a FIFO (named pipe), not a JSON file"));
    cli_result_free(&r);
    CU_ASSERT_EQUAL_FATAL(unlink(config), 0);
    // larger than any config.json: refused by its size, before reading (a sparse file)
    FILE *f = fopen(config, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(ftruncate(fileno(f), (off_t)FILE_MAX_JSON + 1), 0);
    fclose(f);
    build_fails(model, config, "is larger than the 67.1 MB a JSON file may have");
    // no permission (root reads anyway, so only as another user)
    f = fopen(config, "w");
    fputs("{\"num_attention_heads\": 2}", f);
    fclose(f);
    CU_ASSERT_EQUAL(chmod(config, 0), 0);
    if (geteuid() != 0) build_fails(model, config, "cannot open: Permission denied");
    scratch_remove(&dir);
}

// A valid config.json of megabytes, and one behind a path of hundreds of
// characters, are read like any other (no fixed-size buffers).
static void test_large_config_and_long_path_are_read(void) {
    ScratchDir dir;
    char model[PATH_SIZE];
    size_t pad = 2u << 20;
    char *json = malloc(pad + 128);
    CU_ASSERT_PTR_NOT_NULL_FATAL(json);
    int n = sprintf(json, "{\"_comment\": \"");
    memset(json + n, 'x', pad);
    strcpy(json + n + pad, "\", \"num_attention_heads\": 4}");
    CU_ASSERT_FATAL(hf_folder(&dir, json, model));
    free(json);
    Vit vit;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_build(&vit, model, &err), VIT_OK);
    CU_ASSERT_EQUAL(vit.config.heads, 4);
    vit_free(&vit);

    // the same folder moved under a path of 600+ characters
    char deep[1024], moved[1100];
    int len = snprintf(deep, sizeof deep, "%s", dir.path);
    while (len < 600) {
        len += snprintf(deep + len, sizeof deep - (size_t)len, "/%s", "a-rather-long-folder-name");
        CU_ASSERT_EQUAL_FATAL(mkdir(deep, 0700), 0);
    }
    char config[PATH_SIZE], deep_config[1100];
    snprintf(moved, sizeof moved, "%s/model.safetensors", deep);
    snprintf(deep_config, sizeof deep_config, "%s/config.json", deep);
    CU_ASSERT_EQUAL_FATAL(rename(model, moved), 0);
    CU_ASSERT_EQUAL_FATAL(rename(scratch_file(&dir, "config.json", config, sizeof config),
                                 deep_config), 0);
    CU_ASSERT_EQUAL_FATAL(vit_build(&vit, moved, &err), VIT_OK);
    CU_ASSERT_EQUAL(vit.config.heads, 4);
    CU_ASSERT_STRING_EQUAL(vit.config_json, deep_config);
    vit_free(&vit);
    // remove the tree from the bottom up
    unlink(moved), unlink(deep_config);
    while (strlen(deep) > strlen(dir.path)) {
        rmdir(deep);
        *strrchr(deep, '/') = '\0';
    }
    scratch_remove(&dir);
}

// Class names that are there but wrong are refused, naming the key; they never
// silently become "class N".
static void test_bad_id2label_is_refused(void) {
    const struct {
        const char *json, *needle;
    } cases[] = {
        {"{\"id2label\": {\"0\": \"cat\", \"x\": \"dog\", \"2\": \"bird\"}}",
         "id2label entry \"x\" is not a unique id in 0..2 with a name"},
        {"{\"id2label\": {\"0\": \"cat\", \"\": \"dog\", \"2\": \"bird\"}}",
         "id2label entry \"\" is not a unique id"},
        {"{\"id2label\": {\"0\": \"cat\", \"1\": 7, \"2\": \"bird\"}}",
         "id2label entry \"1\" is not a unique id"},
        {"{\"id2label\": [\"cat\", \"dog\", \"bird\"]}", "\"id2label\" is not an object"},
        {"{\"id2label\": {\"0\": \"cat\", \"1\": \"dog\"}}",
         "id2label has 2 labels but the model has 3 classes"},
    };
    char img[PATH_SIZE];
    snprintf(img, sizeof img, "%s/data/img_wide.png", VIT_TEST_DIR);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        ScratchDir dir;
        char model[PATH_SIZE];
        CU_ASSERT_FATAL(hf_folder(&dir, cases[i].json, model));
        const char *const programs[2] = {cli_program(), cli_viewer_program()};
        for (int p = 0; p < 2; p++) {
            CliResult r = p == 0 ? VIT_RUN("classify", "--weights", model, img)
                                 : cli_run_program(programs[p],
                                                   (const char *const[]){"--weights", model, img, NULL});
            bool named = r.status == 1 && strstr(r.err, cases[i].needle) &&
                         strstr(r.err, "config.json") && !strstr(r.out, "class 1");
            if (!named) fprintf(stderr, "\n    case %zu, %s: exit %d, %s", i, programs[p], r.status,
                                r.err);
            CU_ASSERT(named);
            cli_result_free(&r);
        }
        scratch_remove(&dir);
    }
}

// The config.json beside the weights is an input: no output may replace it.
static void test_config_is_never_overwritten(void) {
    ScratchDir dir;
    char model[PATH_SIZE], config[PATH_SIZE], img[PATH_SIZE];
    const char *json = "{\"num_attention_heads\": 2, \"layer_norm_eps\": 1e-05}";
    CU_ASSERT_FATAL(hf_folder(&dir, json, model));
    scratch_file(&dir, "config.json", config, sizeof config);
    snprintf(img, sizeof img, "%s/data/img_wide.png", VIT_TEST_DIR);
    CliResult r = VIT_RUN("trace", "--weights", model, img, "--out", config);
    CU_ASSERT_EQUAL(r.status, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "--out is the same file as the config.json beside --weights"));
    cli_result_free(&r);
    r = VIT_RUN("classify", "--weights", model, img, "--trace", config);
    CU_ASSERT_EQUAL(r.status, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "--trace is the same file as the config.json"));
    cli_result_free(&r);
    char *kept = read_whole_file(config, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(kept);
    CU_ASSERT_STRING_EQUAL(kept, json);
    free(kept);
    scratch_remove(&dir);
}

// vit quantize writes timm's names into a file with no config.json beside it:
// the config's heads, eps and class names travel in its metadata.
static void test_quantized_copy_keeps_the_config(void) {
    ScratchDir dir, other;
    char model[PATH_SIZE], out[PATH_SIZE];
    CU_ASSERT_FATAL(hf_folder(&dir, "{\"num_attention_heads\": 4, \"layer_norm_eps\": 1e-05, "
                                    "\"id2label\": {\"0\": \"cat\", \"1\": \"dog\", \"2\": \"bird\"}}",
                              model));
    CU_ASSERT_FATAL(scratch_make(&other));
    scratch_file(&other, "int8.safetensors", out, sizeof out);
    Vit vit;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_build(&vit, model, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(vit_save_int8(&vit, out, &err), VIT_OK);
    vit_free(&vit);
    CU_ASSERT_EQUAL_FATAL(vit_build(&vit, out, &err), VIT_OK);
    CU_ASSERT_EQUAL(vit.config.heads, 4);
    CU_ASSERT_DOUBLE_EQUAL(vit.config.ln_eps, 1e-5, 1e-12);
    CU_ASSERT_STRING_EQUAL(st_meta(&vit.file, "preprocess"), "hf");
    Labels labels;
    CU_ASSERT_EQUAL_FATAL(labels_load_metadata(&labels, &vit.file, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(labels.count, 3);
    CU_ASSERT_STRING_EQUAL(labels.names[2], "bird");
    labels_free(&labels);
    vit_free(&vit);
    scratch_remove(&other);
    scratch_remove(&dir);
}

CU_TestInfo tests_hf_config[] = {
    {"heads, eps and labels from config.json", test_heads_eps_and_labels_from_config},
    {"a contradicting config.json is refused", test_contradicting_config_is_refused},
    {"an unreadable config.json is an error", test_unreadable_config_is_an_error},
    {"a large config.json, a long path: read", test_large_config_and_long_path_are_read},
    {"a malformed id2label is refused", test_bad_id2label_is_refused},
    {"config.json is never overwritten", test_config_is_never_overwritten},
    {"a quantized copy keeps heads, eps and names", test_quantized_copy_keeps_the_config},
    CU_TEST_INFO_NULL,
};
