/**
 * @file test_resample.c
 * @brief Position-embedding resampling against timm's resample_abs_pos_embed
 *        (F.interpolate bicubic, antialias=True), and class labels.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "io/labels.h"
#include "io/resample.h"
#include "model/vit.h"


static void test_grid_resample_matches_torch(void) {
    Tensor pos = golden_tensor("posembed.safetensors", "pos"); // (1, 1 + 5·5, 8)
    const int D = 8, old = 5, sizes[] = {7, 3, 12};
    for (int i = 0; i < 3; i++) {
        int n = sizes[i];
        char name[32];
        snprintf(name, sizeof name, "pos.%d", n);
        Tensor want = golden_tensor("posembed.safetensors", name);
        Tensor got = tensor_new(3, 1, 1 + n * n, D);
        memcpy(got.data, pos.data, sizeof(float) * D);
        resample_grid(got.data + D, pos.data + D, old, old, n, n, D, FILTER_BICUBIC);
        // float accumulation over ≤ 9 taps per axis: 1e-6 absolute is ample
        assert_tensor_close(&got, &want, 2e-6f, 1e-6f, name);
        tensor_free(&want), tensor_free(&got);
    }
    tensor_free(&pos);
}

static void test_vit_runs_at_another_size(void) {
    VitConfig c = {.image_size = 32, .patch_size = 8, .channels = 3, .dim = 16, .depth = 1,
                   .heads = 2, .mlp_dim = 32, .num_classes = 5, .ln_eps = 1e-6f};
    VitInit init = vit_init_timm(3);
    Vit vit;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_build_random(&vit, &c, &init, &err), VIT_OK);
    float cls0 = vit.weights.pos_embed[0];
    CU_ASSERT_EQUAL(vit_resize_positions(&vit, 50, &err), VIT_ERR_USAGE); // not a multiple of 8
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "multiple of the patch size 8"));
    CU_ASSERT_EQUAL_FATAL(vit_resize_positions(&vit, 48, &err), VIT_OK);
    CU_ASSERT_EQUAL(vit.config.image_size, 48);
    CU_ASSERT_EQUAL(vit.weights.pos_embed[0], cls0); // cls position kept
    Tensor x = tensor_new(4, 1, 3, 48, 48);
    CU_ASSERT_EQUAL(vit_forward(&vit, &x, NULL, NULL, &err), VIT_OK);
    Tensor small = tensor_new(4, 1, 3, 32, 32);
    CU_ASSERT_EQUAL(vit_forward(&vit, &small, NULL, NULL, &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "expects (B, 3, 48, 48)"));
    tensor_free(&x), tensor_free(&small);
    vit_free(&vit);
}

static void test_imagenet_labels(void) {
    char path[1024];
    Labels l;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(labels_load(&l, vit_data_path(path, sizeof path, "labels/imagenet1k.txt"), &err), VIT_OK);
    CU_ASSERT_EQUAL(l.count, 1000);
    CU_ASSERT_STRING_EQUAL(labels_name(&l, 0), "tench");
    CU_ASSERT_STRING_EQUAL(labels_name(&l, 281), "tabby");
    CU_ASSERT_STRING_EQUAL(labels_name(&l, 999), "toilet tissue");
    CU_ASSERT_PTR_NULL(labels_name(&l, 1000));
    labels_free(&l);
}

static void test_hf_config_labels(void) {
    char path[] = "/tmp/vit-test-configXXXXXX";
    int fd = mkstemp(path);
    const char *json = "{\"id2label\": {\"1\": \"dog\", \"0\": \"cat\"}, \"num_attention_heads\": 2}";
    CU_ASSERT_FATAL(write(fd, json, strlen(json)) == (ssize_t)strlen(json));
    close(fd);
    Labels l;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(labels_load_hf_config(&l, path, &err), VIT_OK);
    CU_ASSERT_EQUAL(l.count, 2);
    CU_ASSERT_STRING_EQUAL(labels_name(&l, 0), "cat");
    CU_ASSERT_STRING_EQUAL(labels_name(&l, 1), "dog");
    labels_free(&l);
    FILE *f = fopen(path, "w");
    fputs("{\"id2label\": {\"0\": \"cat\", \"5\": \"dog\"}}", f); // 5 is out of 0..1
    fclose(f);
    CU_ASSERT_EQUAL(labels_load_hf_config(&l, path, &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "id2label entry \"5\""));
    unlink(path);
}

CU_TestInfo tests_resample[] = {
    {"grid resample matches torch antialiased bicubic", test_grid_resample_matches_torch},
    {"ViT runs at another image size", test_vit_runs_at_another_size},
    {"ImageNet labels", test_imagenet_labels},
    {"Hugging Face id2label", test_hf_config_labels},
    CU_TEST_INFO_NULL,
};
