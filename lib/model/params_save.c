/**
 * @file params_save.c
 * @brief vit_params(), vit_writer_add() and vit_save(): a model's parameters
 *        under timm's names, listed, queued and written to a safetensors file.
 *
 * Shape legend: the parameter table's (params.h); tensors keep the shapes
 * timm stores, cls_token (1, 1, D) and pos_embed (1, N, D) included, so timm
 * and tools/ref_vit.py read the file as it is.
 *
 * Deliberately omitted: writing Hugging Face or torchvision names, and
 * re-fusing a model whose q, k and v are apart (loaded from Hugging Face).
 */
#include "model/vit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int vit_params(const Vit *vit, VitParam *out) {
    return vit_weights_params(out, &vit->weights, &vit->config);
}

void vit_writer_meta(StWriter *wr, const Vit *vit) {
    // heads and eps are not in any shape: the metadata carries them
    char meta[32];
    snprintf(meta, sizeof meta, "%d", vit->config.heads);
    st_writer_meta(wr, "num_heads", meta);
    snprintf(meta, sizeof meta, "%g", (double)vit->config.ln_eps);
    st_writer_meta(wr, "layer_norm_eps", meta);
    st_writer_meta(wr, "format", "pt");
}

VitStatus vit_writer_add(StWriter *wr, const Vit *vit, VitError *err) {
    const int count = vit_params(vit, NULL);
    VitParam *params = vit_malloc(sizeof *params * (size_t)count);
    vit_params(vit, params);
    VitStatus s = VIT_OK;
    if (vit->int8_only)
        s = vit_fail(err, VIT_ERR_USAGE, "the model's Linear weights are in int8 only (it was "
                     "loaded from a quantized file): vit_save_int8() writes them as they are, "
                     "or set it to fp32 first");
    for (int i = 0; i < count && s == VIT_OK; i++)
        if (params[i].spec->qkv == VIT_QKV_SPLIT) // timm stores one fused qkv; we do not re-fuse
            s = vit_fail(err, VIT_ERR_INPUT, "saving is only supported for fused q/k/v weights");
    if (s == VIT_OK) {
        vit_writer_meta(wr, vit);
        for (int i = 0; i < count; i++) {
            Tensor t = tensor_view_shape((float *)params[i].data, params[i].ndim, params[i].shape);
            st_writer_add(wr, params[i].name, &t);
        }
    }
    free(params);
    return s;
}

VitStatus vit_save(const Vit *vit, const char *path, VitError *err) {
    StWriter wr = {0};
    VitStatus s = vit_writer_add(&wr, vit, err);
    if (s != VIT_OK) {
        char shown[1024], why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        s = vit_fail(err, s, "%s: %s", vit_escape(shown, sizeof shown, path), why);
    } else {
        s = st_writer_save(&wr, path, err);
    }
    st_writer_free(&wr);
    return s;
}
