/**
 * @file weights.c
 * @brief vit_build(): map a safetensors checkpoint from timm, Hugging Face or
 *        torchvision onto VitWeights, inferring the configuration from shapes.
 *
 * Shape legend: the parameter table's letters (params.h); C, p, D, N, M, Y
 * are read from the tensors' shapes, H and eps from metadata.
 *
 * The three ecosystems store the same ViT under different names (the book's
 * contract page, docs/contract.md). The parameter table (params.c) gives
 * each tensor's name in each of them; a file's convention is recognised by
 * its name for the [cls] token, which only it uses. Weights stay in the mmap
 * wherever they are float32 and aligned; anything else (BF16/F16/F64,
 * misaligned) is converted once into the model's own memory. A quantized
 * file's int8 Linear weights (vit_save_int8()) stay in the mmap as they are,
 * checked by quantized.c, and the model runs them in int8.
 *
 * Deliberately omitted: other ViT families' names (DeiT's dist_token, BEiT,
 * …), and guessing a convention from anything but the [cls] token.
 */
#include "base/fileio.h"
#include "model/vit.h"
#include "model/vit_internal.h"

#include <cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/** One ecosystem's checkpoints: a column of the parameter table and its defaults. */
typedef struct {
    const char *name; // "timm": Vit.source, and messages
    VitNames names;   // the column of the parameter table (params.c) that names its tensors
    float ln_eps;     // its LayerNorm epsilon unless metadata says otherwise
} WeightLayout;

// Each is recognised by its name for the [cls] token, which only it uses.
static const WeightLayout layouts[] = {
    {"timm", VIT_NAMES_TIMM, 1e-6f},
    {"hf", VIT_NAMES_HF, 1e-12f},
    {"torchvision", VIT_NAMES_TORCHVISION, 1e-6f},
};

/** Everything the loader needs while it works. */
typedef struct {
    Vit *vit;
    const WeightLayout *layout;
    VitError *err;
} Loader;

/* ------------------------------------------------------------------ names */

// The row of the parameter table with this timm name; the names asked for are ours.
static const VitParamSpec *row(const char *timm_name) { return vit_param_find(timm_name, NULL); }

// The file's entry for row s of block `block`, or NULL; `found` gets the name
// that matched (or the first alternative, for messages).
static const StTensor *lookup(const Loader *ld, const VitParamSpec *s, int block, char *found,
                              size_t size) {
    const VitNames names = ld->layout->names;
    char name[160];
    vit_param_file_name(found, size, s, names, block, 0);
    for (int alt = 0; vit_param_file_name(name, sizeof name, s, names, block, alt); alt++) {
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
    // names longer than the fields are cut (the table is for reading, not for lookups)
    snprintf(m->canonical, sizeof m->canonical, "%.*s", (int)sizeof m->canonical - 1, canonical);
    snprintf(m->source, sizeof m->source, "%.*s", (int)sizeof m->source - 1, source);
    m->how = how;
}

// A missing bias (a linear layer's b, a LayerNorm's β) is zeros; anything else must be there.
static bool may_be_missing(const VitParamSpec *s) {
    return s->kind == VIT_PARAM_BIAS || s->kind == VIT_PARAM_NORM_SHIFT;
}

// The shape the model uses: timm's, without the leading axes the table writes
// as "1" (cls_token is stored (1, 1, D) and used as (D), pos_embed (1, N, D) as (N, D)).
static int model_shape(const VitParamSpec *s, const VitConfig *c, int64_t want[4]) {
    int shape[4], ndim = vit_param_shape(s, c, shape), skip = 0;
    for (const char *a = s->shape; strncmp(a, "1,", 2) == 0; a += 2) skip++;
    for (int i = skip; i < ndim; i++) want[i - skip] = shape[i];
    return ndim - skip;
}

// Maps one tensor: checks its shape, then uses it in place or converts it.
// A missing bias becomes zeros; any other missing tensor is an error.
static VitStatus map_param(Loader *ld, const VitParamSpec *s, int block, const float **out) {
    Vit *vit = ld->vit;
    char canonical[64], name[160];
    vit_param_name(canonical, sizeof canonical, s, block);
    int64_t want[4];
    const int ndim = model_shape(s, &vit->config, want);
    const size_t numel = (size_t)vit_param_numel(s, &vit->config);
    const StTensor *e = lookup(ld, s, block, name, sizeof name);
    if (!e) {
        if (!may_be_missing(s))
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
    if (e->dtype == ST_I8) { // a quantized file's Linear weight: no float weight at all
        *out = NULL;
        VitStatus st = vit_map_int8(vit, s, block, e, name, ld->err);
        if (st == VIT_OK) record(ld, canonical, name, "I8 with per-row F32 scales, in place");
        return st;
    }
    const float *f;
    int owned;
    VitStatus st = st_get_f32(&vit->file, e, &f, &owned, ld->err);
    if (st != VIT_OK) return st;
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

// Blocks are counted by their first tensor, norm1.weight.
static int count_blocks(const Loader *ld) {
    const VitParamSpec *norm1 = row("blocks.0.norm1.weight");
    char name[160];
    int n = 0;
    while (n < 10000 && lookup(ld, norm1, n, name, sizeof name)) n++;
    return n;
}

// Blocks are counted from 0 until one is missing. A tensor of a later block
// means a gap (blocks 0 and 2, no 1): refuse it rather than silently build a
// shallower model. The block prefix is the convention's, e.g. "blocks.".
static VitStatus check_block_numbers(const Loader *ld, int depth) {
    const char *blocks = vit_param_block_prefix(ld->layout->names);
    const size_t prefix = strlen(blocks);
    const SafeTensors *f = &ld->vit->file;
    for (int i = 0; i < f->count; i++) {
        const char *name = f->tensors[i].name;
        if (strncmp(name, blocks, prefix) != 0 || !isdigit((unsigned char)name[prefix])) continue;
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

// A required tensor for inferring sizes (block 0's, in a block), with at least `ndim` dimensions.
static VitStatus need(const Loader *ld, const char *timm_name, int ndim, const StTensor **out) {
    char name[160];
    *out = lookup(ld, row(timm_name), 0, name, sizeof name);
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
// L by counting blocks, M from fc1, Y from the head; heads and eps from
// __metadata__, or a Hugging Face config.json beside the weights.
static VitStatus infer_config(Loader *ld, VitConfig *c) {
    const WeightLayout *layout = ld->layout;
    const StTensor *patch, *pos, *fc1, *head;
    const int depth = count_blocks(ld);
    VitStatus s;
    if ((s = check_block_numbers(ld, depth)) ||
        (s = need(ld, "patch_embed.proj.weight", 4, &patch)) ||
        (s = need(ld, "pos_embed", 2, &pos)) ||
        (s = need(ld, "blocks.0.mlp.fc1.weight", 2, &fc1)) ||
        (s = need(ld, "head.weight", 2, &head)))
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
        .num_classes = (int)head->shape[0], .ln_eps = layout->ln_eps,
    };
    c->heads = c->dim >= 64 && c->dim % 64 == 0 ? c->dim / 64 : 1; // ViT convention: Dh = 64
    Vit *vit = ld->vit;
    snprintf(vit->heads_from, sizeof vit->heads_from, "not in the file: assumed D/64");
    snprintf(vit->eps_from, sizeof vit->eps_from, "not in the file: the %s default", layout->name);
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

/* ------------------------------------------------------------ the mapping */

// Maps one row of the table: its tensor, and the fields its parts fill (the
// fused q, k, v: three row blocks of the one (3D, D) tensor).
static VitStatus map_row(Loader *ld, const VitParamSpec *s, int block) {
    const float *data = NULL;
    VitStatus st = map_param(ld, s, block, &data);
    if (st != VIT_OK) return st;
    const int parts = vit_param_parts(s);
    const size_t part_numel = (size_t)vit_param_numel(s, &ld->vit->config) / (size_t)parts;
    for (int j = 0; j < parts && data; j++) // (an int8 weight has none: vit_map_int8())
        *vit_param_slot(&ld->vit->weights, s, block, j) = data + (size_t)j * part_numel;
    return VIT_OK;
}

// Every tensor this convention stores, in forward order: q, k, v fused for
// timm and torchvision, split for Hugging Face (the rows with a name in it).
static VitStatus map_all(Loader *ld) {
    VitParamIter it = vit_param_iter(ld->vit->config.depth, VIT_ORDER_FORWARD, VIT_QKV_ANY);
    for (const VitParamSpec *s; (s = vit_param_next(&it));) {
        char name[160];
        if (!vit_param_file_name(name, sizeof name, s, ld->layout->names, it.block, 0)) continue;
        VitStatus st = map_row(ld, s, it.block);
        if (st != VIT_OK) return st;
    }
    return VIT_OK;
}

// Maps an already-validated file (mmap'ed or in memory) onto vit; takes ownership of it.
VitStatus vit_build_from(Vit *vit, SafeTensors *file, VitError *err) {
    memset(vit, 0, sizeof *vit);
    vit->file = *file;
    memset(file, 0, sizeof *file);
    const char *path = vit->file.label;
    Loader ld = {.vit = vit, .err = err};
    for (size_t i = 0; i < sizeof layouts / sizeof layouts[0] && !ld.layout; i++) {
        char cls[64];
        vit_param_file_name(cls, sizeof cls, row("cls_token"), layouts[i].names, -1, 0);
        if (st_find(&vit->file, cls)) ld.layout = &layouts[i];
    }
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
    if ((s = vit_check_quant_scheme(vit, err)) == VIT_OK &&
        (s = infer_config(&ld, &vit->config)) == VIT_OK) {
        vit_alloc_blocks(vit);
        if ((s = map_all(&ld)) == VIT_OK) vit_lowp_loaded(vit);
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
