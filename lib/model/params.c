/**
 * @file params.c
 * @brief The table of parameters (params.h), and the walks and counts built on it.
 *
 * Shape legend: C channels, p patch side, N tokens, D width, M MLP width, Y classes.
 *
 * The rows are in the order the forward pass reads them; a block's rows come
 * once and stand for every block. Each row says where its tensor lives with
 * offsetof(): the byte offset of a `const float *` field inside VitWeights
 * (outside the blocks) or inside VitBlockWeights (in a block), so one
 * function, vit_param_slot(), can reach any parameter of any model. The
 * gradients' structs (VitGradWeights, VitBlockGrads) have the same field
 * names, so the same row also records the offset of its `float *` there:
 * vit_param_grad_slot() reaches any gradient the same way.
 *
 * Deliberately omitted: a second list anywhere else. Initialisation, saving,
 * loading and both parameter counts read these rows; only the tests keep
 * their own hand-written lists, to check them.
 */
#include "model/params.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// The field a row fills: in VitWeights itself, or in every block's VitBlockWeights;
// and the field of the same name in the gradients (a name missing there does not compile).
#define IN_MODEL(field) {offsetof(VitWeights, field), offsetof(VitGradWeights, field)}
#define IN_BLOCK(field) {offsetof(VitBlockWeights, field), offsetof(VitBlockGrads, field)}

// The gradients' structs mirror the weights' one for one: as many pointers
// (less the attention's head_off switch and the weights' copies in smaller
// numbers, which have no gradient), so no field is missing from either side
// of the table.
_Static_assert(sizeof(VitGradWeights) == sizeof(VitWeights) - sizeof(const LowpWeight *),
               "VitGradWeights has one field for each parameter of VitWeights");
_Static_assert(sizeof(VitBlockGrads) ==
                   sizeof(VitBlockWeights) - sizeof(const bool *) - 6 * sizeof(const LowpWeight *),
               "VitBlockGrads has one field for each parameter of VitBlockWeights");

static const VitParamSpec table[] = {
    /* ----------------------------------------------- before the blocks */
    {.name = "patch_embed.proj.weight", .shape = "D,C,p,p", .kind = VIT_PARAM_WEIGHT,
     .field = {IN_MODEL(patch_w)}, .stage = {"patch_embed"},
     .hf = "vit.embeddings.patch_embeddings.projection.weight", .torchvision = "conv_proj.weight"},
    {.name = "patch_embed.proj.bias", .shape = "D", .kind = VIT_PARAM_BIAS,
     .field = {IN_MODEL(patch_b)}, .stage = {"patch_embed"},
     .hf = "vit.embeddings.patch_embeddings.projection.bias", .torchvision = "conv_proj.bias"},
    {.name = "cls_token", .shape = "1,1,D", .kind = VIT_PARAM_WEIGHT, .embedding = true,
     .field = {IN_MODEL(cls_token)}, .stage = {"tokens"},
     .hf = "vit.embeddings.cls_token", .torchvision = "class_token"},
    {.name = "pos_embed", .shape = "1,N,D", .kind = VIT_PARAM_WEIGHT, .embedding = true,
     .field = {IN_MODEL(pos_embed)}, .stage = {"embed"},
     .hf = "vit.embeddings.position_embeddings", .torchvision = "encoder.pos_embedding"},

    /* ---------------------------------------------- in every block */
    {.name = "norm1.weight", .per_block = true, .shape = "D", .kind = VIT_PARAM_NORM_SCALE,
     .field = {IN_BLOCK(norm1_w)}, .stage = {"norm1"},
     .hf = "layernorm_before.weight", .torchvision = "ln_1.weight"},
    {.name = "norm1.bias", .per_block = true, .shape = "D", .kind = VIT_PARAM_NORM_SHIFT,
     .field = {IN_BLOCK(norm1_b)}, .stage = {"norm1"},
     .hf = "layernorm_before.bias", .torchvision = "ln_1.bias"},
    // q, k, v fused (timm, torchvision): the rows of W_q, then W_k, then W_v
    {.name = "attn.qkv.weight", .per_block = true, .shape = "3D,D", .kind = VIT_PARAM_WEIGHT,
     .qkv = VIT_QKV_FUSED,
     .field = {IN_BLOCK(attn.q_w), IN_BLOCK(attn.k_w), IN_BLOCK(attn.v_w)},
     .stage = {"attn.q", "attn.k", "attn.v"},
     .torchvision = "self_attention.in_proj_weight"},
    {.name = "attn.qkv.bias", .per_block = true, .shape = "3D", .kind = VIT_PARAM_BIAS,
     .qkv = VIT_QKV_FUSED,
     .field = {IN_BLOCK(attn.q_b), IN_BLOCK(attn.k_b), IN_BLOCK(attn.v_b)},
     .stage = {"attn.q", "attn.k", "attn.v"},
     .torchvision = "self_attention.in_proj_bias"},
    // q, k, v split (Hugging Face)
    {.name = "attn.q.weight", .per_block = true, .shape = "D,D", .kind = VIT_PARAM_WEIGHT,
     .qkv = VIT_QKV_SPLIT, .field = {IN_BLOCK(attn.q_w)}, .stage = {"attn.q"},
     .hf = "attention.attention.query.weight"},
    {.name = "attn.q.bias", .per_block = true, .shape = "D", .kind = VIT_PARAM_BIAS,
     .qkv = VIT_QKV_SPLIT, .field = {IN_BLOCK(attn.q_b)}, .stage = {"attn.q"},
     .hf = "attention.attention.query.bias"},
    {.name = "attn.k.weight", .per_block = true, .shape = "D,D", .kind = VIT_PARAM_WEIGHT,
     .qkv = VIT_QKV_SPLIT, .field = {IN_BLOCK(attn.k_w)}, .stage = {"attn.k"},
     .hf = "attention.attention.key.weight"},
    {.name = "attn.k.bias", .per_block = true, .shape = "D", .kind = VIT_PARAM_BIAS,
     .qkv = VIT_QKV_SPLIT, .field = {IN_BLOCK(attn.k_b)}, .stage = {"attn.k"},
     .hf = "attention.attention.key.bias"},
    {.name = "attn.v.weight", .per_block = true, .shape = "D,D", .kind = VIT_PARAM_WEIGHT,
     .qkv = VIT_QKV_SPLIT, .field = {IN_BLOCK(attn.v_w)}, .stage = {"attn.v"},
     .hf = "attention.attention.value.weight"},
    {.name = "attn.v.bias", .per_block = true, .shape = "D", .kind = VIT_PARAM_BIAS,
     .qkv = VIT_QKV_SPLIT, .field = {IN_BLOCK(attn.v_b)}, .stage = {"attn.v"},
     .hf = "attention.attention.value.bias"},
    // the rest of the block, the same in every convention's structure
    {.name = "attn.proj.weight", .per_block = true, .shape = "D,D", .kind = VIT_PARAM_WEIGHT,
     .field = {IN_BLOCK(attn.proj_w)}, .stage = {"attn.proj"},
     .hf = "attention.output.dense.weight", .torchvision = "self_attention.out_proj.weight"},
    {.name = "attn.proj.bias", .per_block = true, .shape = "D", .kind = VIT_PARAM_BIAS,
     .field = {IN_BLOCK(attn.proj_b)}, .stage = {"attn.proj"},
     .hf = "attention.output.dense.bias", .torchvision = "self_attention.out_proj.bias"},
    {.name = "norm2.weight", .per_block = true, .shape = "D", .kind = VIT_PARAM_NORM_SCALE,
     .field = {IN_BLOCK(norm2_w)}, .stage = {"norm2"},
     .hf = "layernorm_after.weight", .torchvision = "ln_2.weight"},
    {.name = "norm2.bias", .per_block = true, .shape = "D", .kind = VIT_PARAM_NORM_SHIFT,
     .field = {IN_BLOCK(norm2_b)}, .stage = {"norm2"},
     .hf = "layernorm_after.bias", .torchvision = "ln_2.bias"},
    // torchvision ≥ 0.13 names the MLP's layers by index; older checkpoints linear_1/2
    {.name = "mlp.fc1.weight", .per_block = true, .shape = "M,D", .kind = VIT_PARAM_WEIGHT,
     .field = {IN_BLOCK(fc1_w)}, .stage = {"mlp.fc1"},
     .hf = "intermediate.dense.weight", .torchvision = "mlp.0.weight|mlp.linear_1.weight"},
    {.name = "mlp.fc1.bias", .per_block = true, .shape = "M", .kind = VIT_PARAM_BIAS,
     .field = {IN_BLOCK(fc1_b)}, .stage = {"mlp.fc1"},
     .hf = "intermediate.dense.bias", .torchvision = "mlp.0.bias|mlp.linear_1.bias"},
    {.name = "mlp.fc2.weight", .per_block = true, .shape = "D,M", .kind = VIT_PARAM_WEIGHT,
     .field = {IN_BLOCK(fc2_w)}, .stage = {"mlp.fc2"},
     .hf = "output.dense.weight", .torchvision = "mlp.3.weight|mlp.linear_2.weight"},
    {.name = "mlp.fc2.bias", .per_block = true, .shape = "D", .kind = VIT_PARAM_BIAS,
     .field = {IN_BLOCK(fc2_b)}, .stage = {"mlp.fc2"},
     .hf = "output.dense.bias", .torchvision = "mlp.3.bias|mlp.linear_2.bias"},

    /* ------------------------------------------------ after the blocks */
    {.name = "norm.weight", .shape = "D", .kind = VIT_PARAM_NORM_SCALE,
     .field = {IN_MODEL(norm_w)}, .stage = {"norm"},
     .hf = "vit.layernorm.weight", .torchvision = "encoder.ln.weight"},
    {.name = "norm.bias", .shape = "D", .kind = VIT_PARAM_NORM_SHIFT,
     .field = {IN_MODEL(norm_b)}, .stage = {"norm"},
     .hf = "vit.layernorm.bias", .torchvision = "encoder.ln.bias"},
    {.name = "head.weight", .shape = "Y,D", .kind = VIT_PARAM_WEIGHT,
     .field = {IN_MODEL(head_w)}, .stage = {"logits"},
     .hf = "classifier.weight", .torchvision = "heads.head.weight"},
    {.name = "head.bias", .shape = "Y", .kind = VIT_PARAM_BIAS,
     .field = {IN_MODEL(head_b)}, .stage = {"logits"},
     .hf = "classifier.bias", .torchvision = "heads.head.bias"},
};
#undef IN_MODEL
#undef IN_BLOCK
enum { ROWS = sizeof table / sizeof table[0] };

/* ------------------------------------------------------------- the rows */

int vit_param_spec_count(void) { return ROWS; }

const VitParamSpec *vit_param_spec_at(int i) { return i >= 0 && i < ROWS ? &table[i] : NULL; }

const VitParamSpec *vit_param_find(const char *name, int *block) {
    int index;
    const char *suffix = trace_split_block(name, &index);
    if (!suffix) return NULL;
    for (int i = 0; i < ROWS; i++)
        if (table[i].per_block == (index >= 0) && strcmp(table[i].name, suffix) == 0) {
            if (block) *block = index;
            return &table[i];
        }
    return NULL;
}

int vit_param_parts(const VitParamSpec *s) {
    int parts = 0;
    while (parts < VIT_PARAM_MAX_PARTS && s->stage[parts]) parts++;
    return parts;
}

// The size of one axis of a shape string: a whole number ("1"), a glossary
// letter ("D"), or a number times a letter ("3D"); -1 for anything else.
static int axis_size(const char *axis, size_t len, const VitConfig *c) {
    int factor = 0;
    size_t i = 0;
    for (; i < len && isdigit((unsigned char)axis[i]); i++) factor = 10 * factor + (axis[i] - '0');
    if (i == len) return i > 0 ? factor : -1;
    if (i == 0) factor = 1;
    const struct {
        const char *letter;
        int size;
    } letters[] = {{"C", c->channels}, {"p", c->patch_size}, {"N", vit_num_tokens(c)},
                   {"D", c->dim},      {"M", c->mlp_dim},    {"Y", c->num_classes}};
    for (size_t k = 0; k < sizeof letters / sizeof letters[0]; k++)
        if (len - i == strlen(letters[k].letter) && !strncmp(axis + i, letters[k].letter, len - i))
            return factor * letters[k].size;
    return -1;
}

int vit_param_shape(const VitParamSpec *s, const VitConfig *cfg, int shape[4]) {
    int ndim = 0;
    for (const char *a = s->shape; *a && ndim < 4;) {
        size_t len = strcspn(a, ",");
        shape[ndim++] = axis_size(a, len, cfg);
        a += len;
        if (*a == ',') a++;
    }
    return ndim;
}

int64_t vit_param_numel(const VitParamSpec *s, const VitConfig *cfg) {
    int shape[4], ndim = vit_param_shape(s, cfg, shape);
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    return n;
}

/* ---------------------------------------------------------------- names */

char *vit_param_name(char *buf, size_t size, const VitParamSpec *s, int block) {
    if (s->per_block) snprintf(buf, size, "blocks.%d.%s", block, s->name);
    else snprintf(buf, size, "%s", s->name);
    return buf;
}

const char *vit_param_block_prefix(VitNames names) {
    static const char *const prefix[VIT_NAMES_COUNT] = {
        [VIT_NAMES_TIMM] = "blocks.",
        [VIT_NAMES_HF] = "vit.encoder.layer.",
        [VIT_NAMES_TORCHVISION] = "encoder.layers.encoder_layer_",
    };
    return (unsigned)names < VIT_NAMES_COUNT ? prefix[names] : NULL;
}

bool vit_param_file_name(char *buf, size_t size, const VitParamSpec *s, VitNames names, int block,
                         int alt) {
    const char *name = names == VIT_NAMES_HF            ? s->hf
                       : names == VIT_NAMES_TORCHVISION ? s->torchvision
                       : s->qkv == VIT_QKV_SPLIT        ? NULL // timm fuses q, k, v
                                                        : s->name;
    for (int k = 0; name && k < alt; k++) {
        name = strchr(name, '|');
        if (name) name++;
    }
    if (!name) return false;
    const int len = (int)strcspn(name, "|");
    if (s->per_block)
        snprintf(buf, size, "%s%d.%.*s", vit_param_block_prefix(names), block, len, name);
    else
        snprintf(buf, size, "%.*s", len, name);
    return true;
}

/* ----------------------------------------------------- where they live */

const float **vit_param_slot(VitWeights *w, const VitParamSpec *s, int block, int part) {
    char *base = s->per_block ? (char *)&w->blocks[block] : (char *)w;
    return (const float **)(base + s->field[part].weights);
}

const float *vit_param_data(const VitWeights *w, const VitParamSpec *s, int block, int part) {
    const char *base = s->per_block ? (const char *)&w->blocks[block] : (const char *)w;
    return *(const float *const *)(base + s->field[part].weights);
}

float **vit_param_grad_slot(VitGradWeights *g, const VitParamSpec *s, int block, int part) {
    char *base = s->per_block ? (char *)&g->blocks[block] : (char *)g;
    return (float **)(base + s->field[part].grads);
}

float *vit_param_grad_data(const VitGradWeights *g, const VitParamSpec *s, int block, int part) {
    const char *base = s->per_block ? (const char *)&g->blocks[block] : (const char *)g;
    return *(float *const *)(base + s->field[part].grads);
}

/* ------------------------------------------------------------ the walk */

// A model's own parameters, which PyTorch's state_dict lists before its
// submodules': at the top level, the names without a dot.
static bool own_parameter(const VitParamSpec *s) {
    return !s->per_block && strchr(s->name, '.') == NULL;
}

static bool in_form(const VitParamSpec *s, VitQkvForm form) {
    return form == VIT_QKV_ANY || s->qkv == VIT_QKV_ANY || s->qkv == form;
}

static int first_block_row(void) {
    int r = 0;
    while (r < ROWS && !table[r].per_block) r++;
    return r;
}

VitParamIter vit_param_iter(int depth, VitParamOrder order, VitQkvForm form) {
    // the state_dict order takes two passes: the model's own parameters, then the rest
    return (VitParamIter){.depth = depth, .order = order, .form = form, .block = -1,
                          .index = -1, .pass = order == VIT_ORDER_STATE_DICT ? 0 : 1};
}

// Moves the walk past row s: to the next row, or back to the first block row
// for the next block when s ends the block rows. (The block rows are consecutive.)
static void step(VitParamIter *it, const VitParamSpec *s) {
    const bool ends_block = it->row + 1 == ROWS || !table[it->row + 1].per_block;
    if (!s->per_block || it->pass == 0 || !ends_block) it->row++;
    else if (++it->next_block < it->depth) it->row = first_block_row();
    else it->row++, it->next_block = 0;
}

// Whether the walk visits row s (of block `block`) in its current pass: rows
// of the other q, k, v form never; in state_dict order the model's own
// parameters in pass 0 and everything else in pass 1.
static bool visits(const VitParamIter *it, const VitParamSpec *s, int block) {
    if (!in_form(s, it->form)) return false;
    if (s->per_block) return it->pass == 1 && block < it->depth;
    return it->order == VIT_ORDER_FORWARD || (it->pass == 0) == own_parameter(s);
}

const VitParamSpec *vit_param_next(VitParamIter *it) {
    while (it->pass < 2) {
        if (it->row == ROWS) { // the end of a pass
            it->pass++, it->row = 0;
            continue;
        }
        const VitParamSpec *s = &table[it->row];
        const int block = s->per_block ? it->next_block : -1;
        step(it, s);
        if (visits(it, s, block)) {
            it->block = block;
            it->index++;
            return s;
        }
    }
    return NULL;
}

/* --------------------------------------------------------------- counts */

// [vit_param_count]
int64_t vit_param_count(const VitConfig *cfg) {
    int64_t total = 0;
    for (int i = 0; i < ROWS; i++)
        if (in_form(&table[i], VIT_QKV_FUSED)) // either form holds the same numbers
            total += vit_param_numel(&table[i], cfg) * (table[i].per_block ? cfg->depth : 1);
    return total;
}
// [vit_param_count]

int vit_param_tensor_count(const VitConfig *cfg) {
    VitParamIter it = vit_param_iter(cfg->depth, VIT_ORDER_FORWARD, VIT_QKV_FUSED);
    int n = 0;
    while (vit_param_next(&it)) n++;
    return n;
}

/* ---------------------------------------------------------- the listing */

/** The listing serves the weights and the gradients alike: it reads a part's
 *  pointer through one of the two below, `model` being a VitWeights or a VitGradWeights. */
typedef const float *(*PartReader)(const void *model, const VitParamSpec *s, int block, int part);

static const float *weights_part(const void *model, const VitParamSpec *s, int block, int part) {
    return vit_param_data(model, s, block, part);
}

static const float *grads_part(const void *model, const VitParamSpec *s, int block, int part) {
    return vit_param_grad_data(model, s, block, part);
}

// q, k and v are fused in a block when each fused row's parts lie one after
// another in memory, as one (3D, D) tensor: built here, or mapped from a
// timm or torchvision file (and, by chance of layout, from some HF files).
static bool block_is_fused(const void *w, PartReader part_of, const VitConfig *cfg, int block) {
    for (int i = 0; i < ROWS; i++) {
        const VitParamSpec *s = &table[i];
        if (s->qkv != VIT_QKV_FUSED) continue;
        const int parts = vit_param_parts(s);
        const size_t part_numel = (size_t)vit_param_numel(s, cfg) / (size_t)parts;
        const float *first = part_of(w, s, block, 0);
        if (!first) return false;
        for (int j = 1; j < parts; j++)
            if (part_of(w, s, block, j) != first + j * part_numel) return false;
    }
    return true;
}

static void fill_param(VitParam *p, const void *w, PartReader part_of, const VitConfig *cfg,
                       const VitParamSpec *s, int block) {
    vit_param_name(p->name, sizeof p->name, s, block);
    p->data = part_of(w, s, block, 0);
    int shape[4] = {0, 0, 0, 0};
    p->ndim = vit_param_shape(s, cfg, shape);
    memcpy(p->shape, shape, sizeof shape);
    p->numel = (size_t)vit_param_numel(s, cfg);
    p->spec = s;
    p->block = block;
}

static int list_params(VitParam *out, const void *w, PartReader part_of, const VitConfig *cfg) {
    VitParamIter it = vit_param_iter(cfg->depth, VIT_ORDER_STATE_DICT, VIT_QKV_ANY);
    int n = 0, decided = -1;
    bool fused = true;
    for (const VitParamSpec *s; (s = vit_param_next(&it));) {
        if (s->per_block && it.block != decided) // each block decides its q, k, v form
            fused = block_is_fused(w, part_of, cfg, decided = it.block);
        if (s->qkv == (fused ? VIT_QKV_SPLIT : VIT_QKV_FUSED)) continue;
        if (out) fill_param(&out[n], w, part_of, cfg, s, it.block);
        n++;
    }
    return n;
}

int vit_weights_params(VitParam *out, const VitWeights *w, const VitConfig *cfg) {
    return list_params(out, w, weights_part, cfg);
}

int vit_grad_weights_params(VitParam *out, const VitGradWeights *g, const VitConfig *cfg) {
    return list_params(out, g, grads_part, cfg);
}
