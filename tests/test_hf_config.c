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

#include "check.h"
#include "cli_run.h"
#include "vit.h"

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

CU_TestInfo tests_hf_config[] = {
    {"heads, eps and labels from config.json", test_heads_eps_and_labels_from_config},
    {"a contradicting config.json is refused", test_contradicting_config_is_refused},
    CU_TEST_INFO_NULL,
};
