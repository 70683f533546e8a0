/**
 * @file weights.c
 * @brief vit_build(): map a safetensors checkpoint from timm, Hugging Face or
 *        torchvision onto VitWeights, inferring the configuration from shapes.
 *
 * The three ecosystems store the same ViT under different names (the book's contract page, docs/contract.md).
 * A WeightLayout lists, for each of our parameters, the name it has in one
 * ecosystem; the layout is recognised by one tensor that only it has. Weights
 * stay in the mmap wherever they are float32 and aligned; anything else
 * (BF16/F16/F64, misaligned) is converted once into the model's own memory.
 */
#include "vit.h"
#include "fileio.h"
#include "vit_internal.h"

#include <cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/** Where each parameter lives in one ecosystem's checkpoints. "%d" is the block index. */
typedef struct {
    const char *name;    // "timm"
    const char *probe;   // a tensor only this layout has
    float ln_eps;        // its LayerNorm epsilon unless metadata says otherwise
    const char *patch_w, *patch_b, *cls, *pos, *norm_w, *norm_b, *head_w, *head_b;
    const char *norm1_w, *norm1_b;
    const char *qkv_w, *qkv_b;               // fused (3D, D), or NULL when separate
    const char *q_w, *q_b, *k_w, *k_b, *v_w, *v_b; // separate (D, D), or NULL when fused
    const char *proj_w, *proj_b, *norm2_w, *norm2_b;
    const char *fc1_w, *fc1_b, *fc2_w, *fc2_b; // "a|b": either name is accepted
} WeightLayout;

static const WeightLayout layouts[] = {
    {
        .name = "timm", .probe = "cls_token", .ln_eps = 1e-6f,
        .patch_w = "patch_embed.proj.weight", .patch_b = "patch_embed.proj.bias",
        .cls = "cls_token", .pos = "pos_embed",
        .norm_w = "norm.weight", .norm_b = "norm.bias",
        .head_w = "head.weight", .head_b = "head.bias",
        .norm1_w = "blocks.%d.norm1.weight", .norm1_b = "blocks.%d.norm1.bias",
        .qkv_w = "blocks.%d.attn.qkv.weight", .qkv_b = "blocks.%d.attn.qkv.bias",
        .proj_w = "blocks.%d.attn.proj.weight", .proj_b = "blocks.%d.attn.proj.bias",
        .norm2_w = "blocks.%d.norm2.weight", .norm2_b = "blocks.%d.norm2.bias",
        .fc1_w = "blocks.%d.mlp.fc1.weight", .fc1_b = "blocks.%d.mlp.fc1.bias",
        .fc2_w = "blocks.%d.mlp.fc2.weight", .fc2_b = "blocks.%d.mlp.fc2.bias",
    },
    {
        .name = "hf", .probe = "vit.embeddings.cls_token", .ln_eps = 1e-12f,
        .patch_w = "vit.embeddings.patch_embeddings.projection.weight",
        .patch_b = "vit.embeddings.patch_embeddings.projection.bias",
        .cls = "vit.embeddings.cls_token", .pos = "vit.embeddings.position_embeddings",
        .norm_w = "vit.layernorm.weight", .norm_b = "vit.layernorm.bias",
        .head_w = "classifier.weight", .head_b = "classifier.bias",
        .norm1_w = "vit.encoder.layer.%d.layernorm_before.weight",
        .norm1_b = "vit.encoder.layer.%d.layernorm_before.bias",
        .q_w = "vit.encoder.layer.%d.attention.attention.query.weight",
        .q_b = "vit.encoder.layer.%d.attention.attention.query.bias",
        .k_w = "vit.encoder.layer.%d.attention.attention.key.weight",
        .k_b = "vit.encoder.layer.%d.attention.attention.key.bias",
        .v_w = "vit.encoder.layer.%d.attention.attention.value.weight",
        .v_b = "vit.encoder.layer.%d.attention.attention.value.bias",
        .proj_w = "vit.encoder.layer.%d.attention.output.dense.weight",
        .proj_b = "vit.encoder.layer.%d.attention.output.dense.bias",
        .norm2_w = "vit.encoder.layer.%d.layernorm_after.weight",
        .norm2_b = "vit.encoder.layer.%d.layernorm_after.bias",
        .fc1_w = "vit.encoder.layer.%d.intermediate.dense.weight",
        .fc1_b = "vit.encoder.layer.%d.intermediate.dense.bias",
        .fc2_w = "vit.encoder.layer.%d.output.dense.weight",
        .fc2_b = "vit.encoder.layer.%d.output.dense.bias",
    },
    {
        .name = "torchvision", .probe = "class_token", .ln_eps = 1e-6f,
        .patch_w = "conv_proj.weight", .patch_b = "conv_proj.bias",
        .cls = "class_token", .pos = "encoder.pos_embedding",
        .norm_w = "encoder.ln.weight", .norm_b = "encoder.ln.bias",
        .head_w = "heads.head.weight", .head_b = "heads.head.bias",
        .norm1_w = "encoder.layers.encoder_layer_%d.ln_1.weight",
        .norm1_b = "encoder.layers.encoder_layer_%d.ln_1.bias",
        .qkv_w = "encoder.layers.encoder_layer_%d.self_attention.in_proj_weight",
        .qkv_b = "encoder.layers.encoder_layer_%d.self_attention.in_proj_bias",
        .proj_w = "encoder.layers.encoder_layer_%d.self_attention.out_proj.weight",
        .proj_b = "encoder.layers.encoder_layer_%d.self_attention.out_proj.bias",
        .norm2_w = "encoder.layers.encoder_layer_%d.ln_2.weight",
        .norm2_b = "encoder.layers.encoder_layer_%d.ln_2.bias",
        // torchvision ≥ 0.13 names the MLP layers by index; older checkpoints linear_1/2
        .fc1_w = "encoder.layers.encoder_layer_%d.mlp.0.weight|"
                 "encoder.layers.encoder_layer_%d.mlp.linear_1.weight",
        .fc1_b = "encoder.layers.encoder_layer_%d.mlp.0.bias|"
                 "encoder.layers.encoder_layer_%d.mlp.linear_1.bias",
        .fc2_w = "encoder.layers.encoder_layer_%d.mlp.3.weight|"
                 "encoder.layers.encoder_layer_%d.mlp.linear_2.weight",
        .fc2_b = "encoder.layers.encoder_layer_%d.mlp.3.bias|"
                 "encoder.layers.encoder_layer_%d.mlp.linear_2.bias",
    },
};

/** Everything the loader needs while it works. */
typedef struct {
    Vit *vit;
    const WeightLayout *layout;
    VitError *err;
} Loader;

/* ------------------------------------------------------------------ names */

// Fills `out` with the i-th alternative of a template ("a|b"), the block index
// substituted for %d. Returns false when there is no such alternative.
static bool template_name(char *out, size_t size, const char *tmpl, int alt, int block) {
    for (int k = 0; k < alt; k++) {
        tmpl = strchr(tmpl, '|');
        if (!tmpl) return false;
        tmpl++;
    }
    size_t len = strcspn(tmpl, "|");
    char fmt[160];
    snprintf(fmt, sizeof fmt, "%.*s", (int)len, tmpl);
    // only our own templates reach here: each has at most one %d
    snprintf(out, size, fmt, block);
    return true;
}

// The file's entry for a template, or NULL; `found` gets the name that matched
// (or the first alternative, for messages).
static const StTensor *lookup(const Loader *ld, const char *tmpl, int block, char *found,
                              size_t size) {
    char name[160];
    template_name(found, size, tmpl, 0, block);
    for (int alt = 0; template_name(name, sizeof name, tmpl, alt, block); alt++) {
        const StTensor *e = st_find(&ld->vit->file, name);
        if (e) {
            snprintf(found, size, "%s", name);
            return e;
        }
    }
    return NULL;
}

/* ----------------------------------------------------------------- shapes */

// Shapes agree once leading 1s are dropped: cls may be stored (1, 1, D), (1, D) or (D).
static bool shape_matches(const StTensor *e, int ndim, const int64_t *want) {
    int i = 0, j = 0;
    while (i < e->ndim - 1 && e->shape[i] == 1 && e->ndim - i > ndim - j) i++;
    while (j < ndim - 1 && want[j] == 1 && ndim - j > e->ndim - i) j++;
    if (e->ndim - i != ndim - j) return false;
    for (; i < e->ndim; i++, j++)
        if (e->shape[i] != want[j]) return false;
    return true;
}

/* --------------------------------------------------------------- mapping */

static void record(Loader *ld, const char *canonical, const char *source, const char *how) {
    Vit *v = ld->vit;
    v->map = vit_realloc(v->map, (size_t)(v->map_count + 1) * sizeof *v->map);
    VitMapEntry *m = &v->map[v->map_count++];
    snprintf(m->canonical, sizeof m->canonical, "%s", canonical);
    snprintf(m->source, sizeof m->source, "%s", source);
    m->how = how;
}

// Maps one parameter: checks its shape, then uses it in place or converts it.
// A missing optional tensor (a bias) becomes zeros; a missing required one is an error.
static VitStatus map_param(Loader *ld, const float **out, const char *canonical, const char *tmpl,
                           int block, bool optional, int ndim, ...) {
    int64_t want[4];
    va_list ap;
    va_start(ap, ndim);
    size_t numel = 1;
    for (int i = 0; i < ndim; i++) {
        want[i] = va_arg(ap, int);
        numel *= (size_t)want[i];
    }
    va_end(ap);
    Vit *vit = ld->vit;
    char name[160];
    const StTensor *e = lookup(ld, tmpl, block, name, sizeof name);
    if (!e) {
        if (!optional)
            return vit_fail(ld->err, VIT_ERR_INPUT, "%s: missing tensor '%s' (a %s checkpoint)",
                            vit->file.label, name, ld->layout->name);
        *out = vit_take_params(vit, numel); // zeros
        record(ld, canonical, "-", "zeros (missing bias)");
        return VIT_OK;
    }
    if (!shape_matches(e, ndim, want)) {
        char got[96], expected[96];
        st_shape_str(got, sizeof got, e->ndim, e->shape);
        st_shape_str(expected, sizeof expected, ndim, want);
        return vit_fail(ld->err, VIT_ERR_INPUT,
                        "%s: tensor '%s' has shape %s, but the configuration needs %s",
                        vit->file.label, name, got, expected);
    }
    const float *f;
    int owned;
    VitStatus s = st_get_f32(&vit->file, e, &f, &owned, ld->err);
    if (s != VIT_OK) return s;
    if (!owned) {
        *out = f;
        record(ld, canonical, name, "F32, in place");
        return VIT_OK;
    }
    float *dst = vit_take_params(vit, numel);
    memcpy(dst, f, numel * sizeof(float));
    free((void *)f);
    *out = dst;
    static const char *const converted[] = {
        [ST_F32] = "F32, copied (misaligned)", [ST_F16] = "converted from F16",
        [ST_BF16] = "converted from BF16", [ST_F64] = "converted from F64"};
    record(ld, canonical, name, converted[e->dtype]);
    return VIT_OK;
}

/* ----------------------------------------------------------- the config */

static int count_blocks(const Loader *ld) {
    char name[160];
    int n = 0;
    while (n < 10000 && lookup(ld, ld->layout->norm1_w, n, name, sizeof name)) n++;
    return n;
}

// Blocks are counted from 0 until one is missing. A tensor of a later block
// means a gap (blocks 0 and 2, no 1): refuse it rather than silently build a
// shallower model. The block prefix is the layout's up to "%d", e.g. "blocks.".
static VitStatus check_block_numbers(const Loader *ld, int depth) {
    const char *tmpl = ld->layout->norm1_w;
    const size_t prefix = (size_t)(strstr(tmpl, "%d") - tmpl);
    const SafeTensors *f = &ld->vit->file;
    for (int i = 0; i < f->count; i++) {
        const char *name = f->tensors[i].name;
        if (strncmp(name, tmpl, prefix) != 0 || !isdigit((unsigned char)name[prefix])) continue;
        char *end;
        unsigned long block = strtoul(name + prefix, &end, 10);
        if (*end == '.' && block >= (unsigned long)depth)
            return vit_fail(ld->err, VIT_ERR_INPUT,
                            "%s: tensor '%s' belongs to block %lu, but block %d is missing: "
                            "blocks must be numbered 0, 1, 2, … without a gap",
                            f->label, name, block, depth);
    }
    return VIT_OK;
}

// Reads a positive integer from __metadata__, if present.
static VitStatus meta_int(const Loader *ld, const char *key, int *out) {
    const char *v = st_meta(&ld->vit->file, key);
    if (!v) return VIT_OK;
    VitError e;
    if (vit_parse_int(out, v, 1, 1 << 20, key, &e) != VIT_OK)
        return vit_fail(ld->err, VIT_ERR_INPUT, "%s: __metadata__ %s", ld->vit->file.label, e.msg);
    return VIT_OK;
}

// A LayerNorm epsilon as float32: in (0, 1), and not so small that it rounds to 0.
// Returns NULL when it is fine, else what is wrong with it.
static const char *eps_problem(double d) {
    if (!(d > 0 && d < 1)) return "is not in (0, 1)";
    if (!((float)d > 0)) return "is too small for float32 (it rounds to 0)";
    return NULL;
}

static VitStatus meta_eps(const Loader *ld, float *out) {
    const char *v = st_meta(&ld->vit->file, "layer_norm_eps");
    if (!v) return VIT_OK;
    char *end;
    double d = strtod(v, &end);
    const char *problem = *end || end == v ? "is not a number" : eps_problem(d);
    if (problem)
        return vit_fail(ld->err, VIT_ERR_INPUT, "%s: __metadata__ layer_norm_eps '%s' %s",
                        ld->vit->file.label, v, problem);
    *out = (float)d;
    return VIT_OK;
}

// A required tensor for inferring sizes, with at least `ndim` dimensions.
static VitStatus need(const Loader *ld, const char *tmpl, int ndim, const StTensor **out) {
    char name[160];
    *out = lookup(ld, tmpl, 0, name, sizeof name);
    if (!*out)
        return vit_fail(ld->err, VIT_ERR_INPUT, "%s: missing tensor '%s' (a %s checkpoint)",
                        ld->vit->file.label, name, ld->layout->name);
    if ((*out)->ndim < ndim)
        return vit_fail(ld->err, VIT_ERR_INPUT, "%s: tensor '%s' has %d dimensions, expected %d",
                        ld->vit->file.label, name, (*out)->ndim, ndim);
    return VIT_OK;
}

// The config.json beside a Hugging Face model.safetensors, or NULL when there is
// none. Anything at that name counts as there (a directory, a FIFO, a file we
// may not read): reading it then fails with a message that says why, instead
// of the model silently running with the wrong heads or labels.
static char *sibling_config(const char *weights_path) {
    const char *slash = strrchr(weights_path, '/');
    size_t dir_len = slash ? (size_t)(slash - weights_path) + 1 : 0;
    char *path = vit_malloc(dir_len + sizeof "config.json");
    memcpy(path, weights_path, dir_len);
    memcpy(path + dir_len, "config.json", sizeof "config.json");
    struct stat sb;
    if (lstat(path, &sb) != 0 && errno == ENOENT) {
        free(path);
        return NULL;
    }
    return path;
}

// A whole-number field of a JSON object, when present and sensible.
static VitStatus json_int(const cJSON *root, const char *key, int *out, const char *path,
                          VitError *err) {
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(root, key);
    if (!v) return VIT_OK; // absent: *out keeps its value
    if (!cJSON_IsNumber(v) || v->valuedouble < 1 || v->valuedouble > 1 << 20 ||
        v->valuedouble != floor(v->valuedouble))
        return vit_fail(err, VIT_ERR_INPUT, "%s: \"%s\" is not a positive integer", path, key);
    *out = (int)v->valuedouble;
    return VIT_OK;
}

// Hugging Face keeps heads and LayerNorm eps in config.json, not in the weights.
// Its sizes must agree with what the tensors say.
static VitStatus read_hf_config(Loader *ld, VitConfig *c) {
    const char *path = ld->vit->config_json;
    cJSON *root;
    VitStatus s = file_read_json(&root, path, ld->err);
    if (s != VIT_OK) return s;
    if (!cJSON_IsObject(root)) {
        cJSON_Delete(root);
        return vit_fail(ld->err, VIT_ERR_INPUT, "%s: is valid JSON but not an object", path);
    }
    int hidden = c->dim, image = c->image_size, patch = c->patch_size;
    Vit *vit = ld->vit;
    if (cJSON_GetObjectItemCaseSensitive(root, "num_attention_heads"))
        snprintf(vit->heads_from, sizeof vit->heads_from, "config.json num_attention_heads");
    if (cJSON_GetObjectItemCaseSensitive(root, "layer_norm_eps"))
        snprintf(vit->eps_from, sizeof vit->eps_from, "config.json layer_norm_eps");
    if ((s = json_int(root, "num_attention_heads", &c->heads, path, ld->err)) ||
        (s = json_int(root, "hidden_size", &hidden, path, ld->err)) ||
        (s = json_int(root, "image_size", &image, path, ld->err)) ||
        (s = json_int(root, "patch_size", &patch, path, ld->err))) {
        cJSON_Delete(root);
        return s;
    }
    const cJSON *eps = cJSON_GetObjectItemCaseSensitive(root, "layer_norm_eps");
    const char *problem = !eps ? NULL : !cJSON_IsNumber(eps) ? "is not a number"
                                                             : eps_problem(eps->valuedouble);
    if (problem)
        s = vit_fail(ld->err, VIT_ERR_INPUT, "%s: \"layer_norm_eps\" %s", path, problem);
    else if (eps)
        c->ln_eps = (float)eps->valuedouble;
    cJSON_Delete(root);
    if (s == VIT_OK && (hidden != c->dim || image != c->image_size || patch != c->patch_size))
        s = vit_fail(ld->err, VIT_ERR_INPUT,
                     "%s: says hidden_size %d, image_size %d, patch_size %d but the weights have "
                     "%d, %d, %d",
                     path, hidden, image, patch, c->dim, c->image_size, c->patch_size);
    return s;
}

// Sizes from shapes: D and p from the patch weight, N from the position table,
// L by counting blocks, M from fc1, K from the head; heads and eps from
// __metadata__, or a Hugging Face config.json beside the weights.
static VitStatus infer_config(Loader *ld, VitConfig *c) {
    const WeightLayout *L = ld->layout;
    const StTensor *patch, *pos, *fc1, *head;
    const int depth = count_blocks(ld);
    VitStatus s;
    if ((s = check_block_numbers(ld, depth)) || (s = need(ld, L->patch_w, 4, &patch)) ||
        (s = need(ld, L->pos, 2, &pos)) ||
        (s = need(ld, L->fc1_w, 2, &fc1)) || (s = need(ld, L->head_w, 2, &head)))
        return s;
    const char *file = ld->vit->file.label;
    if (patch->shape[2] != patch->shape[3])
        return vit_fail(ld->err, VIT_ERR_INPUT, "%s: patch weight is not square", file);
    int64_t n_tokens = pos->shape[pos->ndim - 2];
    int64_t grid = (int64_t)llround(sqrt((double)(n_tokens - 1)));
    if (n_tokens < 2 || grid * grid != n_tokens - 1)
        return vit_fail(ld->err, VIT_ERR_INPUT,
                        "%s: position table has %lld rows: not 1 + a square number of patches",
                        file, (long long)n_tokens);
    *c = (VitConfig){
        .dim = (int)patch->shape[0], .channels = (int)patch->shape[1],
        .patch_size = (int)patch->shape[2], .image_size = (int)(grid * patch->shape[2]),
        .depth = depth, .mlp_dim = (int)fc1->shape[0],
        .num_classes = (int)head->shape[0], .ln_eps = L->ln_eps,
    };
    c->heads = c->dim >= 64 && c->dim % 64 == 0 ? c->dim / 64 : 1; // ViT convention: Dh = 64
    Vit *vit = ld->vit;
    snprintf(vit->heads_from, sizeof vit->heads_from, "not in the file: assumed D/64");
    snprintf(vit->eps_from, sizeof vit->eps_from, "not in the file: the %s default", L->name);
    if (st_meta(&vit->file, "num_heads"))
        snprintf(vit->heads_from, sizeof vit->heads_from, "__metadata__ num_heads");
    if (st_meta(&vit->file, "layer_norm_eps"))
        snprintf(vit->eps_from, sizeof vit->eps_from, "__metadata__ layer_norm_eps");
    if ((s = meta_int(ld, "num_heads", &c->heads)) || (s = meta_eps(ld, &c->ln_eps))) return s;
    if (ld->vit->config_json && (s = read_hf_config(ld, c))) return s;
    if (c->depth == 0)
        return vit_fail(ld->err, VIT_ERR_INPUT, "%s: no encoder blocks found", file);
    VitError e;
    if (vit_config_check(c, &e) != VIT_OK)
        return vit_fail(ld->err, VIT_ERR_INPUT, "%s: %s", file, e.msg);
    return VIT_OK;
}

/* ------------------------------------------------------------- the blocks */

static VitStatus map_block(Loader *ld, int i) {
    const WeightLayout *L = ld->layout;
    const VitConfig *c = &ld->vit->config;
    VitBlockWeights *b = &ld->vit->weights.blocks[i];
    const int D = c->dim, M = c->mlp_dim;
    char canon[64];
    VitStatus s = VIT_OK;
#define MAP(field, suffix, tmpl, optional, ...)                                            \
    do {                                                                                   \
        snprintf(canon, sizeof canon, "blocks.%d.%s", i, suffix);                          \
        if ((s = map_param(ld, &b->field, canon, tmpl, i, optional, __VA_ARGS__))) return s; \
    } while (0)
    MAP(norm1_w, "norm1.weight", L->norm1_w, false, 1, D);
    MAP(norm1_b, "norm1.bias", L->norm1_b, true, 1, D);
    if (L->qkv_w) { // fused (3D, D): q, k, v are its three row blocks
        const float *qkv_w, *qkv_b;
        snprintf(canon, sizeof canon, "blocks.%d.attn.qkv.weight", i);
        if ((s = map_param(ld, &qkv_w, canon, L->qkv_w, i, false, 2, 3 * D, D))) return s;
        snprintf(canon, sizeof canon, "blocks.%d.attn.qkv.bias", i);
        if ((s = map_param(ld, &qkv_b, canon, L->qkv_b, i, true, 1, 3 * D))) return s;
        b->attn.q_w = qkv_w, b->attn.k_w = qkv_w + (size_t)D * D, b->attn.v_w = qkv_w + 2 * (size_t)D * D;
        b->attn.q_b = qkv_b, b->attn.k_b = qkv_b + D, b->attn.v_b = qkv_b + 2 * D;
    } else { // separate (D, D) each
        MAP(attn.q_w, "attn.q.weight", L->q_w, false, 2, D, D);
        MAP(attn.q_b, "attn.q.bias", L->q_b, true, 1, D);
        MAP(attn.k_w, "attn.k.weight", L->k_w, false, 2, D, D);
        MAP(attn.k_b, "attn.k.bias", L->k_b, true, 1, D);
        MAP(attn.v_w, "attn.v.weight", L->v_w, false, 2, D, D);
        MAP(attn.v_b, "attn.v.bias", L->v_b, true, 1, D);
    }
    MAP(attn.proj_w, "attn.proj.weight", L->proj_w, false, 2, D, D);
    MAP(attn.proj_b, "attn.proj.bias", L->proj_b, true, 1, D);
    MAP(norm2_w, "norm2.weight", L->norm2_w, false, 1, D);
    MAP(norm2_b, "norm2.bias", L->norm2_b, true, 1, D);
    MAP(fc1_w, "mlp.fc1.weight", L->fc1_w, false, 2, M, D);
    MAP(fc1_b, "mlp.fc1.bias", L->fc1_b, true, 1, M);
    MAP(fc2_w, "mlp.fc2.weight", L->fc2_w, false, 2, D, M);
    MAP(fc2_b, "mlp.fc2.bias", L->fc2_b, true, 1, D);
#undef MAP
    return VIT_OK;
}

static VitStatus map_all(Loader *ld) {
    const WeightLayout *L = ld->layout;
    const VitConfig *c = &ld->vit->config;
    VitWeights *w = &ld->vit->weights;
    const int D = c->dim, N = vit_num_tokens(c), K = c->num_classes, p = c->patch_size;
    VitStatus s;
    if ((s = map_param(ld, &w->patch_w, "patch_embed.proj.weight", L->patch_w, 0, false, 4, D,
                       c->channels, p, p)) ||
        (s = map_param(ld, &w->patch_b, "patch_embed.proj.bias", L->patch_b, 0, true, 1, D)) ||
        (s = map_param(ld, &w->cls_token, "cls_token", L->cls, 0, false, 1, D)) ||
        (s = map_param(ld, &w->pos_embed, "pos_embed", L->pos, 0, false, 2, N, D)))
        return s;
    for (int i = 0; i < c->depth; i++)
        if ((s = map_block(ld, i))) return s;
    if ((s = map_param(ld, &w->norm_w, "norm.weight", L->norm_w, 0, false, 1, D)) ||
        (s = map_param(ld, &w->norm_b, "norm.bias", L->norm_b, 0, true, 1, D)) ||
        (s = map_param(ld, &w->head_w, "head.weight", L->head_w, 0, false, 2, K, D)) ||
        (s = map_param(ld, &w->head_b, "head.bias", L->head_b, 0, true, 1, K)))
        return s;
    return VIT_OK;
}

// Maps an already-validated file (mmap'ed or in memory) onto vit; takes ownership of it.
VitStatus vit_build_from(Vit *vit, SafeTensors *file, VitError *err) {
    memset(vit, 0, sizeof *vit);
    vit->file = *file;
    memset(file, 0, sizeof *file);
    const char *path = vit->file.label;
    Loader ld = {.vit = vit, .err = err};
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0] && !ld.layout; i++)
        if (st_find(&vit->file, layouts[i].probe)) ld.layout = &layouts[i];
    VitStatus s;
    if (!ld.layout) {
        s = vit_fail(err, VIT_ERR_INPUT,
                     "%s: not a ViT checkpoint I recognise: no 'cls_token' (timm), "
                     "'vit.embeddings.cls_token' (Hugging Face) or 'class_token' (torchvision)",
                     path);
        vit_free(vit);
        return s;
    }
    snprintf(vit->source, sizeof vit->source, "%s", ld.layout->name);
    if (strcmp(ld.layout->name, "hf") == 0 && vit->file.map) // a real file, not a buffer
        vit->config_json = sibling_config(path);
    if ((s = infer_config(&ld, &vit->config)) == VIT_OK) {
        vit_alloc_blocks(vit);
        s = map_all(&ld);
    }
    if (s != VIT_OK) vit_free(vit);
    return s;
}

VitStatus vit_build(Vit *vit, const char *path, VitError *err) {
    memset(vit, 0, sizeof *vit);
    SafeTensors file;
    VitStatus s = st_open(&file, path, err);
    if (s != VIT_OK) return s;
    return vit_build_from(vit, &file, err);
}
