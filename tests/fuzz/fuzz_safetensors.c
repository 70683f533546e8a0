/**
 * @file fuzz_safetensors.c
 * @brief libFuzzer target: arbitrary bytes as a safetensors weights file.
 *
 * Parses the bytes, converts every float tensor, then tries to build a ViT
 * from them (name mapping, shape checks, config inference) and, when the
 * model is tiny, runs a forward pass and checks its logits for NaN (which
 * re-runs the pass and scans every parameter). Nothing may crash, leak or read out of
 * bounds, whatever the bytes say. Run with `make fuzz`.
 */
#include <stdint.h>
#include <stdlib.h>

#include "io/safetensors.h"
#include "model/vit.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    SafeTensors st;
    VitError err;
    if (st_parse(&st, data, size, "fuzz.safetensors", &err) != VIT_OK) {
        st_close(&st);
        return 0;
    }
    for (int i = 0; i < st.count; i++) {
        const float *f;
        int owned;
        if (st_get_f32(&st, &st.tensors[i], &f, &owned, &err) != VIT_OK) continue;
        volatile float sink = 0;
        for (size_t k = 0; k < st.tensors[i].numel; k++) sink += f[k];
        if (owned) free((void *)f);
    }
    Vit vit;
    if (vit_build_from(&vit, &st, &err) == VIT_OK) {
        if (vit_param_count(&vit.config) < 200000) {
            const VitConfig *c = &vit.config;
            Tensor x = tensor_new(4, 1, c->channels, c->image_size, c->image_size);
            if (vit_forward(&vit, &x, NULL, NULL, &err) == VIT_OK) vit_check_finite(&vit, &x, &err);
            tensor_free(&x);
        }
        vit_free(&vit);
    }
    return 0;
}
