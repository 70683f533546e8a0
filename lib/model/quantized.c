/**
 * @file quantized.c
 * @brief Quantized weights files: vit_save_int8() writes one (`vit quantize`),
 *        vit_map_int8() checks and loads its int8 weights for vit_build().
 *
 * Shape legend: O outputs (rows) of a Linear weight, D its inputs; L blocks.
 *
 * The file is an ordinary safetensors file: a Linear weight "X" is stored as
 * an I8 tensor (O, D) with an F32 tensor "X_scale" (O) beside it, weight ≈
 * q · scale row by row, and the metadata names the scheme
 * (VIT_QUANT_KEY = VIT_QUANT_INT8). Any reader that knows safetensors sees
 * standard dtypes; the scheme says how to read them back.
 *
 * What a quantized file can get wrong, each refused with the file and the
 * tensor named: an I8 tensor where no Linear weight is, or in a file that
 * names no scheme or an unknown one; a missing scale; a scale of another
 * dtype or shape; a scale of 0, NaN or infinity (q · scale would be 0 or not
 * a number, silently). A file may keep some Linear weights in float: those
 * layers run in float (vit_lowp_loaded()).
 *
 * Deliberately omitted: other schemes (per-tensor, asymmetric with zero
 * points, 4-bit groups), activations' calibrated ranges (the activations are
 * quantized per token at run time), and quantized embeddings or LayerNorms.
 */
#include "base/fileio.h"
#include "io/labels.h"
#include "model/vit.h"
#include "model/vit_internal.h"

#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- loading */

VitStatus vit_check_quant_scheme(const Vit *vit, VitError *err) {
    const char *scheme = st_meta(&vit->file, VIT_QUANT_KEY);
    if (!scheme || strcmp(scheme, VIT_QUANT_INT8) == 0) return VIT_OK;
    char shown[128];
    return vit_fail(err, VIT_ERR_INPUT,
                    "%s: unknown quantization scheme '%s' (metadata '%s'); this build reads '%s'",
                    vit->file.label, vit_escape(shown, sizeof shown, scheme), VIT_QUANT_KEY,
                    VIT_QUANT_INT8);
}

// The first scale that is not a positive finite number, or -1.
static int bad_scale(const float *scale, int O) {
    for (int o = 0; o < O; o++)
        if (!(scale[o] > 0.0f) || !isfinite(scale[o])) return o;
    return -1;
}

// The scale "name_scale" of an I8 tensor `name` with O rows, checked; *owned
// as st_get_f32() says.
static VitStatus find_scale(const Vit *vit, const char *name, int O, const float **scale,
                            int *owned, VitError *err) {
    const char *path = vit->file.label;
    char scale_name[192];
    snprintf(scale_name, sizeof scale_name, "%s_scale", name);
    const StTensor *e = st_find(&vit->file, scale_name);
    if (!e)
        return vit_fail(err, VIT_ERR_INPUT, "%s: int8 tensor '%s' has no scale: '%s' is missing",
                        path, name, scale_name);
    if (e->dtype != ST_F32 || e->ndim != 1 || e->shape[0] != O) {
        char got[96];
        st_shape_str(got, sizeof got, e->ndim, e->shape);
        return vit_fail(err, VIT_ERR_INPUT,
                        "%s: scale '%s' is %s %s, but '%s' needs F32 (%d): one per output row",
                        path, scale_name, st_dtype_name(e->dtype), got, name, O);
    }
    VitStatus s = st_get_f32(&vit->file, e, scale, owned, err);
    if (s != VIT_OK) return s;
    const int o = bad_scale(*scale, O);
    if (o < 0) return VIT_OK;
    const float v = (*scale)[o];
    const char *what = isnan(v) ? "NaN" : isinf(v) ? "infinite" : v == 0 ? "0" : "negative";
    s = vit_fail(err, VIT_ERR_INPUT,
                 "%s: scale '%s'[%d] is %s: a scale must be a positive finite number "
                 "(q · scale is the weight)",
                 path, scale_name, o, what);
    if (*owned) free((void *)*scale);
    return s;
}

VitStatus vit_map_int8(Vit *vit, const VitParamSpec *s, int block, const StTensor *e,
                       const char *name, VitError *err) {
    const char *path = vit->file.label;
    const int L = vit->config.depth;
    if (!st_meta(&vit->file, VIT_QUANT_KEY))
        return vit_fail(err, VIT_ERR_INPUT,
                        "%s: tensor '%s' is I8, but the file names no quantization scheme "
                        "(metadata '%s', e.g. '%s')",
                        path, name, VIT_QUANT_KEY, VIT_QUANT_INT8);
    if (vit_linear_index(s, block, 0, L) < 0 || e->ndim != 2)
        return vit_fail(err, VIT_ERR_INPUT,
                        "%s: tensor '%s' is I8, but only a Linear layer's weight may be int8",
                        path, name);
    const int parts = vit_param_parts(s), O = (int)e->shape[0], D = (int)e->shape[1];
    const float *scale;
    int owned;
    VitStatus st = find_scale(vit, name, O, &scale, &owned, err);
    if (st != VIT_OK) return st;
    // a fused qkv (3D, D) is three Linears of D rows: one scale per row makes them apart the same
    const int rows = O / parts;
    const int8_t *q = (const int8_t *)e->bytes;
    bool packed = true;
    for (int j = 0; j < parts; j++) {
        const int index = vit_linear_index(s, block, j, L);
        vit_lowp_take_int8(vit, index, q + (size_t)j * rows * D, scale + (size_t)j * rows, rows,
                           D);
        packed &= vit->lowp[index].s8.packed != NULL;
    }
    // packed for VNNI, the products read the packed copy only: the file's bytes
    // may leave memory now (read again from the file if the portable path asks)
    if (packed && vit->file.map) file_map_release(q, (size_t)O * D);
    if (owned) free((void *)scale);
    return VIT_OK;
}

/* ---------------------------------------------------------------- writing */

// A row of zeros has scale 0; stored as 1 (its q are 0 either way), since the
// loader refuses a scale of 0 as it refuses one of NaN.
static void zero_rows_scale_one(float *scale, int O) {
    for (int o = 0; o < O; o++)
        if (scale[o] == 0.0f) scale[o] = 1.0f;
}

// q (O,D) and scale (O) of parameter s of block `block`, its parts one after the
// other: quantized from the float weights, or as a quantized file gave them.
static void int8_of(const Vit *vit, const VitParamSpec *s, int block, int8_t *q, float *scale) {
    int shape[4];
    vit_param_shape(s, &vit->config, shape);
    const int parts = vit_param_parts(s), O = shape[0] / parts, D = shape[1];
    for (int j = 0; j < parts; j++) {
        const float *w = vit_param_data(&vit->weights, s, block, j);
        if (w) {
            quantize_rows_s8(q, scale, w, O, D);
        } else { // an int8-only model's: the file's own q and scales
            const LowpWeight *lw = &vit->lowp[vit_linear_index(s, block, j, vit->config.depth)];
            memcpy(q, lw->s8.q, (size_t)O * D);
            memcpy(scale, lw->s8.scale, (size_t)O * sizeof *scale);
        }
        zero_rows_scale_one(scale, O);
        q += (size_t)O * D, scale += O;
    }
}

// Memory the writer borrows until the file is written.
typedef struct {
    void **bufs;
    int count;
} Held;

static void *hold(Held *h, size_t bytes) {
    h->bufs = vit_realloc(h->bufs, (size_t)(h->count + 1) * sizeof *h->bufs);
    return h->bufs[h->count++] = vit_malloc(bytes + 1);
}

static void release(Held *h) {
    for (int i = 0; i < h->count; i++) free(h->bufs[i]);
    free(h->bufs);
}

// A float parameter's values in one piece: in place when its parts are
// consecutive (a fused file's q, k, v), else gathered (a Hugging Face file's).
static const float *float_of(const Vit *vit, const VitParamSpec *s, int block, Held *h) {
    const int parts = vit_param_parts(s);
    const size_t part = (size_t)vit_param_numel(s, &vit->config) / (size_t)parts;
    const float *first = vit_param_data(&vit->weights, s, block, 0);
    bool consecutive = true;
    for (int j = 1; j < parts; j++)
        consecutive &= vit_param_data(&vit->weights, s, block, j) == first + (size_t)j * part;
    if (consecutive) return first;
    float *all = hold(h, (size_t)parts * part * sizeof *all);
    for (int j = 0; j < parts; j++)
        memcpy(all + (size_t)j * part, vit_param_data(&vit->weights, s, block, j),
               part * sizeof *all);
    return all;
}

// A Hugging Face model's class names, from the config.json beside its file,
// as "class_names" (labels.h): the quantized file is read without that config.
static void add_class_names(StWriter *wr, const Vit *vit) {
    Labels labels = {0};
    VitError ignored; // a config.json without names, or bad ones: the file gets none
    if (!vit->config_json || st_meta(&vit->file, "class_names") ||
        labels_load_hf_config(&labels, vit->config_json, &ignored) != VIT_OK ||
        labels.count != vit->config.num_classes) {
        labels_free(&labels);
        return;
    }
    cJSON *names = cJSON_CreateStringArray((const char *const *)labels.names, labels.count);
    char *json = names ? cJSON_PrintUnformatted(names) : NULL;
    if (json) st_writer_meta(wr, "class_names", json);
    cJSON_free(json);
    cJSON_Delete(names);
    labels_free(&labels);
}

// The metadata: what the model's file had, then the model's own numbers and the scheme.
static void add_metadata(StWriter *wr, const Vit *vit) {
    for (int i = 0; i < vit->file.meta_count; i++)
        st_writer_meta(wr, vit->file.meta_keys[i], vit->file.meta_values[i]);
    vit_writer_meta(wr, vit);
    st_writer_meta(wr, VIT_QUANT_KEY, VIT_QUANT_INT8);
    // the names become timm's: a Hugging Face or torchvision model keeps its own
    // preprocessing by naming it (the loaders take a file's convention's otherwise)
    const bool named = st_meta(&vit->file, "preprocess") != NULL;
    if (!named && vit->config.channels != 1 &&
        (!strcmp(vit->source, "hf") || !strcmp(vit->source, "torchvision")))
        st_writer_meta(wr, "preprocess", vit->source);
    add_class_names(wr, vit);
}

// Every tensor, timm's names, q, k, v fused: the floats (scales among them)
// first, then the int8 weights, so that every F32 tensor stays 4-byte aligned.
static void add_tensors(StWriter *wr, const Vit *vit, Held *h) {
    const int L = vit->config.depth;
    typedef struct {
        char name[64];
        int shape[4];
        const int8_t *q;
    } Int8Entry;
    // at most one per Linear: six a block (q, k, v apart) and the head
    Int8Entry *int8 = hold(h, sizeof *int8 * (size_t)(6 * L + 1));
    int n_int8 = 0;
    VitParamIter it = vit_param_iter(L, VIT_ORDER_STATE_DICT, VIT_QKV_FUSED);
    for (const VitParamSpec *s; (s = vit_param_next(&it));) {
        char name[64];
        int shape[4];
        const int ndim = vit_param_shape(s, &vit->config, shape);
        vit_param_name(name, sizeof name, s, it.block);
        if (vit_linear_index(s, it.block, 0, L) < 0) {
            Tensor t = tensor_view_shape((float *)float_of(vit, s, it.block, h), ndim, shape);
            st_writer_add(wr, name, &t);
            continue;
        }
        Int8Entry *e = &int8[n_int8++];
        int8_t *q = hold(h, (size_t)shape[0] * shape[1]);
        float *scale = hold(h, (size_t)shape[0] * sizeof *scale);
        int8_of(vit, s, it.block, q, scale);
        snprintf(e->name, sizeof e->name, "%s", name);
        memcpy(e->shape, shape, sizeof shape);
        e->q = q;
        char scale_name[80];
        snprintf(scale_name, sizeof scale_name, "%s_scale", name);
        Tensor t = tensor_view_shape(scale, 1, shape);
        st_writer_add(wr, scale_name, &t);
    }
    for (int i = 0; i < n_int8; i++)
        st_writer_add_raw(wr, int8[i].name, ST_I8, 2, int8[i].shape, int8[i].q);
}

VitStatus vit_save_int8(const Vit *vit, const char *path, VitError *err) {
    StWriter wr = {0};
    Held held = {0};
    add_metadata(&wr, vit);
    add_tensors(&wr, vit, &held);
    VitStatus s = st_writer_save(&wr, path, err);
    st_writer_free(&wr);
    release(&held);
    return s;
}
