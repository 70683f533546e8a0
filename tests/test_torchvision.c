/**
 * @file test_torchvision.c
 * @brief A model written by torchvision itself: its own VisionTransformer class,
 *        saved with torch.save, converted by tools/to_safetensors.py; our logits
 *        must equal torchvision's forward (tools/gen_golden_torchvision.py).
 */
#include <CUnit/CUnit.h>
#include <string.h>

#include "check.h"
#include "model/vit.h"

static void test_logits_match_torchvision(void) {
    Vit vit;
    VitError err;
    if (vit_build(&vit, golden_path("torchvision_small.safetensors"), &err) != VIT_OK) {
        fprintf(stderr, "\n    %s\n", err.msg);
        CU_FAIL_FATAL("torchvision weights did not load");
    }
    CU_ASSERT_STRING_EQUAL(vit.source, "torchvision");
    CU_ASSERT_EQUAL(vit.config.heads, 4); // from the converter's --meta num_heads=4
    CU_ASSERT_EQUAL(vit.config.depth, 2);
    CU_ASSERT_EQUAL(vit.config.mlp_dim, 128);
    CU_ASSERT_DOUBLE_EQUAL(vit.config.ln_eps, 1e-6, 1e-12);
    SafeTensors io;
    CU_ASSERT_FATAL(st_open(&io, golden_path("torchvision_small_io.safetensors"), &err) == VIT_OK);
    Tensor input, want;
    CU_ASSERT_FATAL(st_read_tensor(&io, "input", &input, &err) == VIT_OK);
    CU_ASSERT_FATAL(st_read_tensor(&io, "logits", &want, &err) == VIT_OK);
    CU_ASSERT_EQUAL_FATAL(vit_forward(&vit, &input, NULL, NULL, &err), VIT_OK);
    Tensor got = vit_logits(&vit);
    // weights of std 0.2 through two blocks: logits of order 1, float32 noise ~1e-6
    assert_tensor_close(&got, &want, 2e-5f, 1e-4f, "logits vs torchvision");
    tensor_free(&input), tensor_free(&want);
    st_close(&io);
    vit_free(&vit);
}

CU_TestInfo tests_torchvision[] = {
    {"logits match torchvision's own VisionTransformer", test_logits_match_torchvision},
    CU_TEST_INFO_NULL,
};
