/**
 * @file test_params.c
 * @brief The parameter table (lib/model/params.h) against facts counted by hand:
 *        the size of ViT-B/16, every row's shape, the fields each row fills,
 *        the names in three conventions, the two orders of the walk.
 *
 * Nothing here is derived from the table under test: the expected shapes,
 * names, orders and fields are written out below, from timm's, Hugging
 * Face's and torchvision's own state_dicts.
 */
#include <CUnit/CUnit.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "model/trace_stages.h"
#include "model/vit.h"

// Every size a different number, so a row that uses the wrong letter shows:
// C 3, p 4, N 26 (S 20), D 24, M 40, Y 7, L 2.
static const VitConfig odd = {.image_size = 20, .patch_size = 4, .channels = 3, .dim = 24,
                              .depth = 2, .heads = 4, .mlp_dim = 40, .num_classes = 7,
                              .ln_eps = 1e-6f};

static VitConfig arch(const char *name) {
    VitConfig c;
    CU_ASSERT_EQUAL_FATAL(vit_config_for_arch(&c, name, NULL), VIT_OK);
    return c;
}

/* ------------------------------------------------------------- ViT-B/16 */

// Counted by hand: D 768, C 3, p 16, N 197, M 3072, Y 1000, L 12.
static void test_vit_base_has_86567656_parameters_in_152_tensors(void) {
    const VitConfig c = arch("vit-base");
    const int64_t patch = 768 * 3 * 16 * 16 + 768;            // 590,592
    const int64_t cls_pos = 768 + 197 * 768;                  // 152,064
    const int64_t block = 2 * 768                             // norm1
                          + 3 * 768 * 768 + 3 * 768           // q, k, v
                          + 768 * 768 + 768                   // proj
                          + 2 * 768                           // norm2
                          + 3072 * 768 + 3072 + 768 * 3072 + 768; // fc1, fc2: 7,087,872
    const int64_t after = 2 * 768 + 1000 * 768 + 1000;        // norm, head: 770,536
    CU_ASSERT_EQUAL(patch + cls_pos + 12 * block + after, 86567656);
    CU_ASSERT_EQUAL(vit_param_count(&c), 86567656);
    CU_ASSERT_EQUAL(vit_param_tensor_count(&c), 4 + 12 * 12 + 4);
    CU_ASSERT_EQUAL(vit_param_tensor_count(&c), 152);
    const VitConfig small = arch("vit-small"), tiny = arch("vit-tiny");
    CU_ASSERT_EQUAL(vit_param_count(&small), 22050664); // timm's vit_small_patch16_224
    CU_ASSERT_EQUAL(vit_param_count(&tiny), 5717416);   // timm's vit_tiny_patch16_224
    VitConfig shallow = odd;
    shallow.depth = 1;
    CU_ASSERT_EQUAL(vit_param_tensor_count(&shallow), 4 + 12 + 4);
}

/* --------------------------------------------------------------- shapes */

/** One tensor's shape as timm stores it, for the config `odd`. */
typedef struct {
    const char *name;
    int ndim, shape[4];
} Expected;

// Every row, both forms of q, k, v, written out for C 3, p 4, N 26, D 24, M 40, Y 7.
static const Expected odd_shapes[] = {
    {"patch_embed.proj.weight", 4, {24, 3, 4, 4}},
    {"patch_embed.proj.bias", 1, {24}},
    {"cls_token", 3, {1, 1, 24}},
    {"pos_embed", 3, {1, 26, 24}},
    {"blocks.0.norm1.weight", 1, {24}},
    {"blocks.0.norm1.bias", 1, {24}},
    {"blocks.0.attn.qkv.weight", 2, {72, 24}},
    {"blocks.0.attn.qkv.bias", 1, {72}},
    {"blocks.0.attn.q.weight", 2, {24, 24}},
    {"blocks.0.attn.q.bias", 1, {24}},
    {"blocks.0.attn.k.weight", 2, {24, 24}},
    {"blocks.0.attn.k.bias", 1, {24}},
    {"blocks.0.attn.v.weight", 2, {24, 24}},
    {"blocks.0.attn.v.bias", 1, {24}},
    {"blocks.0.attn.proj.weight", 2, {24, 24}},
    {"blocks.0.attn.proj.bias", 1, {24}},
    {"blocks.0.norm2.weight", 1, {24}},
    {"blocks.0.norm2.bias", 1, {24}},
    {"blocks.0.mlp.fc1.weight", 2, {40, 24}},
    {"blocks.0.mlp.fc1.bias", 1, {40}},
    {"blocks.0.mlp.fc2.weight", 2, {24, 40}},
    {"blocks.0.mlp.fc2.bias", 1, {24}},
    {"norm.weight", 1, {24}},
    {"norm.bias", 1, {24}},
    {"head.weight", 2, {7, 24}},
    {"head.bias", 1, {7}},
};
enum { ODD_ROWS = sizeof odd_shapes / sizeof odd_shapes[0] };

static void test_every_row_has_its_shape(void) {
    CU_ASSERT_EQUAL(vit_param_spec_count(), ODD_ROWS);
    for (int i = 0; i < ODD_ROWS; i++) {
        const Expected *e = &odd_shapes[i];
        int block = -2;
        const VitParamSpec *s = vit_param_find(e->name, &block);
        if (!s) fprintf(stderr, "\n    no row for %s\n", e->name);
        CU_ASSERT_PTR_NOT_NULL_FATAL(s);
        CU_ASSERT_EQUAL(block, strncmp(e->name, "blocks.", 7) == 0 ? 0 : -1);
        int shape[4] = {0};
        const int ndim = vit_param_shape(s, &odd, shape);
        bool same = ndim == e->ndim;
        for (int d = 0; same && d < ndim; d++) same = shape[d] == e->shape[d];
        if (!same)
            fprintf(stderr, "\n    %s: (%d, %d, %d, %d) in %d dimensions\n", e->name, shape[0],
                    shape[1], shape[2], shape[3], ndim);
        CU_ASSERT_TRUE(same);
        int64_t numel = 1;
        for (int d = 0; d < e->ndim; d++) numel *= e->shape[d];
        CU_ASSERT_EQUAL(vit_param_numel(s, &odd), numel);
    }
}

// The count is the sum of the shapes (either form of q, k, v), and the sum of
// what the stages read, block stages L times.
static void test_counts_agree_with_shapes_and_stages(void) {
    const VitConfig configs[] = {odd, arch("vit-base"), arch("vit-tiny")};
    for (size_t k = 0; k < sizeof configs / sizeof configs[0]; k++) {
        const VitConfig *c = &configs[k];
        int64_t fused = 0, split = 0;
        for (int i = 0; i < vit_param_spec_count(); i++) {
            const VitParamSpec *s = vit_param_spec_at(i);
            int shape[4], ndim = vit_param_shape(s, c, shape);
            int64_t n = s->per_block ? c->depth : 1;
            for (int d = 0; d < ndim; d++) n *= shape[d];
            if (s->qkv != VIT_QKV_SPLIT) fused += n;
            if (s->qkv != VIT_QKV_FUSED) split += n;
        }
        CU_ASSERT_EQUAL(fused, vit_param_count(c));
        CU_ASSERT_EQUAL(split, vit_param_count(c));
        int64_t stages = 0;
        for (int i = 0; i < vit_stage_count(); i++) {
            const VitStage *st = vit_stage_at(i);
            char name[64];
            vit_stage_name(name, sizeof name, st, 0);
            stages += vit_stage_params(c, name) * (st->per_block ? c->depth : 1);
        }
        CU_ASSERT_EQUAL(stages, vit_param_count(c));
    }
    // by hand, for odd: patch 24·48 + 24, cls 24, pos 26·24, 2 blocks of
    // 2·24 + 72·24 + 72 + 24·24 + 24 + 2·24 + 40·24 + 40 + 24·40 + 24 = 4480,
    // norm 2·24, head 7·24 + 7
    CU_ASSERT_EQUAL(vit_param_count(&odd), 1176 + 24 + 624 + 2 * 4480 + 48 + 175);
    // a (D, D) weight and its bias per projection
    CU_ASSERT_EQUAL(vit_stage_params(&odd, "blocks.1.attn.k"), 24 * 24 + 24);
    CU_ASSERT_EQUAL(vit_stage_params(&odd, "blocks.0.mlp.fc2"), 24 * 40 + 24);
    CU_ASSERT_EQUAL(vit_stage_params(&odd, "tokens"), 24);
    CU_ASSERT_EQUAL(vit_stage_params(&odd, "embed"), 26 * 24);
    CU_ASSERT_EQUAL(vit_stage_params(&odd, "logits"), 7 * 24 + 7);
    CU_ASSERT_EQUAL(vit_stage_params(&odd, "blocks.0.attn.probs"), 0);
}

/* ---------------------------------------------------------------- names */

static void test_names_are_unique_in_every_convention(void) {
    char seen[64][160];
    for (int names = 0; names <= VIT_NAMES_COUNT; names++) { // the last pass: our names
        int n = 0;
        for (int i = 0; i < vit_param_spec_count(); i++) {
            const VitParamSpec *s = vit_param_spec_at(i);
            for (int alt = 0; n < 64; alt++) {
                char name[160];
                if (names == VIT_NAMES_COUNT) {
                    if (alt > 0) break;
                    vit_param_name(name, sizeof name, s, 0);
                } else if (!vit_param_file_name(name, sizeof name, s, (VitNames)names, 0, alt))
                    break;
                for (int j = 0; j < n; j++)
                    if (strcmp(seen[j], name) == 0) fprintf(stderr, "\n    %s twice\n", name);
                for (int j = 0; j < n; j++) CU_ASSERT_STRING_NOT_EQUAL(seen[j], name);
                snprintf(seen[n++], sizeof seen[0], "%s", name);
            }
        }
    }
}

static void check_file_name(const char *timm, VitNames names, int alt, const char *want) {
    int block = -1;
    const VitParamSpec *s = vit_param_find(timm, &block);
    CU_ASSERT_PTR_NOT_NULL_FATAL(s);
    char got[160] = "";
    const bool found = vit_param_file_name(got, sizeof got, s, names, block, alt);
    CU_ASSERT_EQUAL(found, want != NULL);
    if (want && found) {
        if (strcmp(got, want) != 0) fprintf(stderr, "\n    %s: '%s', not '%s'\n", timm, got, want);
        CU_ASSERT_STRING_EQUAL(got, want);
    }
}

// Names as the three libraries' state_dicts spell them.
static void test_names_in_the_three_conventions(void) {
    check_file_name("blocks.7.attn.qkv.weight", VIT_NAMES_TIMM, 0, "blocks.7.attn.qkv.weight");
    check_file_name("blocks.7.attn.qkv.weight", VIT_NAMES_HF, 0, NULL); // HF keeps them apart
    check_file_name("blocks.7.attn.qkv.weight", VIT_NAMES_TORCHVISION, 0,
                    "encoder.layers.encoder_layer_7.self_attention.in_proj_weight");
    check_file_name("blocks.7.attn.qkv.bias", VIT_NAMES_TORCHVISION, 0,
                    "encoder.layers.encoder_layer_7.self_attention.in_proj_bias");
    check_file_name("blocks.2.attn.k.weight", VIT_NAMES_TIMM, 0, NULL); // timm fuses them
    check_file_name("blocks.2.attn.k.weight", VIT_NAMES_TORCHVISION, 0, NULL);
    check_file_name("blocks.2.attn.k.weight", VIT_NAMES_HF, 0,
                    "vit.encoder.layer.2.attention.attention.key.weight");
    check_file_name("blocks.2.attn.v.bias", VIT_NAMES_HF, 0,
                    "vit.encoder.layer.2.attention.attention.value.bias");
    check_file_name("blocks.0.mlp.fc1.weight", VIT_NAMES_TORCHVISION, 0,
                    "encoder.layers.encoder_layer_0.mlp.0.weight");
    check_file_name("blocks.0.mlp.fc1.weight", VIT_NAMES_TORCHVISION, 1,
                    "encoder.layers.encoder_layer_0.mlp.linear_1.weight");
    check_file_name("blocks.0.mlp.fc1.weight", VIT_NAMES_TORCHVISION, 2, NULL);
    check_file_name("blocks.11.mlp.fc2.bias", VIT_NAMES_HF, 0,
                    "vit.encoder.layer.11.output.dense.bias");
    check_file_name("blocks.11.norm2.weight", VIT_NAMES_TORCHVISION, 0,
                    "encoder.layers.encoder_layer_11.ln_2.weight");
    check_file_name("cls_token", VIT_NAMES_HF, 0, "vit.embeddings.cls_token");
    check_file_name("cls_token", VIT_NAMES_TORCHVISION, 0, "class_token");
    check_file_name("pos_embed", VIT_NAMES_TORCHVISION, 0, "encoder.pos_embedding");
    check_file_name("patch_embed.proj.weight", VIT_NAMES_HF, 0,
                    "vit.embeddings.patch_embeddings.projection.weight");
    check_file_name("norm.bias", VIT_NAMES_HF, 0, "vit.layernorm.bias");
    check_file_name("head.weight", VIT_NAMES_HF, 0, "classifier.weight");
    check_file_name("head.bias", VIT_NAMES_TORCHVISION, 0, "heads.head.bias");
    CU_ASSERT_STRING_EQUAL(vit_param_block_prefix(VIT_NAMES_HF), "vit.encoder.layer.");
}

static void test_find_reads_names_as_written(void) {
    int block = 99;
    CU_ASSERT_PTR_NOT_NULL(vit_param_find("blocks.11.attn.proj.bias", &block));
    CU_ASSERT_EQUAL(block, 11);
    CU_ASSERT_PTR_NOT_NULL(vit_param_find("head.weight", &block));
    CU_ASSERT_EQUAL(block, -1);
    CU_ASSERT_PTR_NULL(vit_param_find("norm1.weight", NULL));        // a block's, without its block
    CU_ASSERT_PTR_NULL(vit_param_find("blocks.0.head.weight", NULL)); // not a block's
    CU_ASSERT_PTR_NULL(vit_param_find("blocks.01.norm1.weight", NULL));
    CU_ASSERT_PTR_NULL(vit_param_find("blocks.x.norm1.weight", NULL));
    CU_ASSERT_PTR_NULL(vit_param_find("blocks.0.attn.qkv", NULL));
}

// A bias (a linear layer's b, a LayerNorm's β) is drawn as zeros and may be
// missing from a file; a LayerNorm's rows are the norm* names.
static void test_kinds_follow_the_names(void) {
    for (int i = 0; i < vit_param_spec_count(); i++) {
        const VitParamSpec *s = vit_param_spec_at(i);
        const size_t len = strlen(s->name);
        const bool bias = len > 5 && strcmp(s->name + len - 5, ".bias") == 0;
        const bool norm = strncmp(s->name, "norm", 4) == 0;
        const VitParamKind want = norm ? (bias ? VIT_PARAM_NORM_SHIFT : VIT_PARAM_NORM_SCALE)
                                       : (bias ? VIT_PARAM_BIAS : VIT_PARAM_WEIGHT);
        if (s->kind != want) fprintf(stderr, "\n    %s has kind %d\n", s->name, (int)s->kind);
        CU_ASSERT_EQUAL(s->kind, want);
    }
}

// Every part names a stage of the trace contract, inside or outside the blocks as the row is.
static void test_every_part_is_read_by_a_stage(void) {
    for (int i = 0; i < vit_param_spec_count(); i++) {
        const VitParamSpec *s = vit_param_spec_at(i);
        CU_ASSERT_EQUAL(vit_param_parts(s), s->qkv == VIT_QKV_FUSED ? 3 : 1);
        for (int j = 0; j < vit_param_parts(s); j++) {
            char name[64];
            snprintf(name, sizeof name, "%s%s", s->per_block ? "blocks.0." : "", s->stage[j]);
            const VitStage *stage = vit_stage_find(name, NULL);
            if (!stage) fprintf(stderr, "\n    %s: no stage %s\n", s->name, name);
            CU_ASSERT_PTR_NOT_NULL(stage);
        }
    }
    const char *const qkv[] = {"attn.q", "attn.k", "attn.v"};
    const VitParamSpec *fused = vit_param_find("blocks.0.attn.qkv.weight", NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(fused);
    for (int j = 0; j < 3; j++) CU_ASSERT_STRING_EQUAL(fused->stage[j], qkv[j]);
}

/* --------------------------------------------------------------- fields */

/** A pointer field of VitWeights or VitBlockWeights, written out by hand. */
typedef struct {
    const char *what;
    bool per_block;
    size_t offset;
} Field;

static const Field fields[] = {
    {"patch_w", false, offsetof(VitWeights, patch_w)},
    {"patch_b", false, offsetof(VitWeights, patch_b)},
    {"cls_token", false, offsetof(VitWeights, cls_token)},
    {"pos_embed", false, offsetof(VitWeights, pos_embed)},
    {"norm_w", false, offsetof(VitWeights, norm_w)},
    {"norm_b", false, offsetof(VitWeights, norm_b)},
    {"head_w", false, offsetof(VitWeights, head_w)},
    {"head_b", false, offsetof(VitWeights, head_b)},
    {"norm1_w", true, offsetof(VitBlockWeights, norm1_w)},
    {"norm1_b", true, offsetof(VitBlockWeights, norm1_b)},
    {"attn.q_w", true, offsetof(VitBlockWeights, attn.q_w)},
    {"attn.k_w", true, offsetof(VitBlockWeights, attn.k_w)},
    {"attn.v_w", true, offsetof(VitBlockWeights, attn.v_w)},
    {"attn.q_b", true, offsetof(VitBlockWeights, attn.q_b)},
    {"attn.k_b", true, offsetof(VitBlockWeights, attn.k_b)},
    {"attn.v_b", true, offsetof(VitBlockWeights, attn.v_b)},
    {"attn.proj_w", true, offsetof(VitBlockWeights, attn.proj_w)},
    {"attn.proj_b", true, offsetof(VitBlockWeights, attn.proj_b)},
    {"norm2_w", true, offsetof(VitBlockWeights, norm2_w)},
    {"norm2_b", true, offsetof(VitBlockWeights, norm2_b)},
    {"fc1_w", true, offsetof(VitBlockWeights, fc1_w)},
    {"fc1_b", true, offsetof(VitBlockWeights, fc1_b)},
    {"fc2_w", true, offsetof(VitBlockWeights, fc2_w)},
    {"fc2_b", true, offsetof(VitBlockWeights, fc2_b)},
};
enum { FIELDS = sizeof fields / sizeof fields[0] };

// Every pointer of the two structs is one of the fields above (no field forgotten here).
static void test_the_field_list_covers_the_structs(void) {
    // 8 fields + blocks + head_lowp, a copy in a smaller number (vit_set_precision())
    CU_ASSERT_EQUAL(sizeof(VitWeights), 10 * sizeof(void *));
    // 16 fields + attn.head_off, a switch (vit_set_head_off()), not a parameter, and the
    // copies in a smaller number of q, k, v, proj, fc1 and fc2 (vit_set_precision())
    CU_ASSERT_EQUAL(sizeof(VitBlockWeights), 23 * sizeof(void *));
}

// Which rows a model holds: one form of q, k, v, or one convention's files.
typedef bool (*RowFilter)(const VitParamSpec *s, int which);

static bool in_form(const VitParamSpec *s, int form) {
    return s->qkv == VIT_QKV_ANY || s->qkv == (VitQkvForm)form;
}

static bool in_files(const VitParamSpec *s, int names) {
    char name[160];
    return vit_param_file_name(name, sizeof name, s, (VitNames)names, 0, 0);
}

// Each field is filled by exactly one part of one row, and every part fills one of them.
static void check_each_field_once(RowFilter keep, int which, const char *what) {
    int filled[FIELDS] = {0}, parts = 0;
    for (int i = 0; i < vit_param_spec_count(); i++) {
        const VitParamSpec *s = vit_param_spec_at(i);
        if (!keep(s, which)) continue;
        for (int j = 0; j < vit_param_parts(s); j++, parts++)
            for (int f = 0; f < FIELDS; f++)
                if (fields[f].per_block == s->per_block && fields[f].offset == s->field[j].weights)
                    filled[f]++;
    }
    for (int f = 0; f < FIELDS; f++) {
        if (filled[f] != 1)
            fprintf(stderr, "\n    %s: %s filled %d times\n", what, fields[f].what, filled[f]);
        CU_ASSERT_EQUAL(filled[f], 1);
    }
    CU_ASSERT_EQUAL(parts, FIELDS);
}

static void test_every_field_is_filled_by_one_row(void) {
    check_each_field_once(in_form, VIT_QKV_FUSED, "q, k, v fused");
    check_each_field_once(in_form, VIT_QKV_SPLIT, "q, k, v split");
    check_each_field_once(in_files, VIT_NAMES_TIMM, "timm files");
    check_each_field_once(in_files, VIT_NAMES_HF, "Hugging Face files");
    check_each_field_once(in_files, VIT_NAMES_TORCHVISION, "torchvision files");
}

// vit_param_slot() reaches the very field a row names, in the model or in block i.
static void test_slots_are_the_struct_fields(void) {
    VitBlockWeights blocks[2];
    VitWeights w = {.blocks = blocks};
    CU_ASSERT_PTR_EQUAL(vit_param_slot(&w, vit_param_find("head.bias", NULL), -1, 0), &w.head_b);
    CU_ASSERT_PTR_EQUAL(vit_param_slot(&w, vit_param_find("cls_token", NULL), -1, 0), &w.cls_token);
    const VitParamSpec *qkv = vit_param_find("blocks.1.attn.qkv.weight", NULL);
    CU_ASSERT_PTR_EQUAL(vit_param_slot(&w, qkv, 1, 0), &blocks[1].attn.q_w);
    CU_ASSERT_PTR_EQUAL(vit_param_slot(&w, qkv, 1, 1), &blocks[1].attn.k_w);
    CU_ASSERT_PTR_EQUAL(vit_param_slot(&w, qkv, 1, 2), &blocks[1].attn.v_w);
    const VitParamSpec *fc2 = vit_param_find("blocks.0.mlp.fc2.bias", NULL);
    CU_ASSERT_PTR_EQUAL(vit_param_slot(&w, fc2, 0, 0), &blocks[0].fc2_b);
    static const float x = 1.0f;
    blocks[0].fc2_b = &x;
    CU_ASSERT_PTR_EQUAL(vit_param_data(&w, fc2, 0, 0), &x);
}

// vit_param_grad_slot() reaches the field of the same name in the gradients,
// past the attention's head_off, which the gradients do not have.
static void test_grad_slots_are_the_struct_fields(void) {
    VitBlockGrads blocks[2];
    VitGradWeights g = {.blocks = blocks};
    CU_ASSERT_PTR_EQUAL(vit_param_grad_slot(&g, vit_param_find("head.bias", NULL), -1, 0),
                        &g.head_b);
    CU_ASSERT_PTR_EQUAL(vit_param_grad_slot(&g, vit_param_find("pos_embed", NULL), -1, 0),
                        &g.pos_embed);
    const VitParamSpec *qkv = vit_param_find("blocks.1.attn.qkv.weight", NULL);
    CU_ASSERT_PTR_EQUAL(vit_param_grad_slot(&g, qkv, 1, 0), &blocks[1].attn.q_w);
    CU_ASSERT_PTR_EQUAL(vit_param_grad_slot(&g, qkv, 1, 2), &blocks[1].attn.v_w);
    const VitParamSpec *norm2 = vit_param_find("blocks.1.norm2.weight", NULL);
    CU_ASSERT_PTR_EQUAL(vit_param_grad_slot(&g, norm2, 1, 0), &blocks[1].norm2_w);
    const VitParamSpec *fc2 = vit_param_find("blocks.0.mlp.fc2.bias", NULL);
    CU_ASSERT_PTR_EQUAL(vit_param_grad_slot(&g, fc2, 0, 0), &blocks[0].fc2_b);
    float x = 1.0f;
    blocks[0].fc2_b = &x;
    CU_ASSERT_PTR_EQUAL(vit_param_grad_data(&g, fc2, 0, 0), &x);
}

/* --------------------------------------------------------------- orders */

// Two blocks of a fused model, written out: the forward order reads the patch
// projection first; timm's state_dict puts the model's own cls_token and
// pos_embed first.
static const char *const forward_order[] = {
    "patch_embed.proj.weight", "patch_embed.proj.bias", "cls_token", "pos_embed",
    "blocks.0.norm1.weight", "blocks.0.norm1.bias", "blocks.0.attn.qkv.weight",
    "blocks.0.attn.qkv.bias", "blocks.0.attn.proj.weight", "blocks.0.attn.proj.bias",
    "blocks.0.norm2.weight", "blocks.0.norm2.bias", "blocks.0.mlp.fc1.weight",
    "blocks.0.mlp.fc1.bias", "blocks.0.mlp.fc2.weight", "blocks.0.mlp.fc2.bias",
    "blocks.1.norm1.weight", "blocks.1.norm1.bias", "blocks.1.attn.qkv.weight",
    "blocks.1.attn.qkv.bias", "blocks.1.attn.proj.weight", "blocks.1.attn.proj.bias",
    "blocks.1.norm2.weight", "blocks.1.norm2.bias", "blocks.1.mlp.fc1.weight",
    "blocks.1.mlp.fc1.bias", "blocks.1.mlp.fc2.weight", "blocks.1.mlp.fc2.bias",
    "norm.weight", "norm.bias", "head.weight", "head.bias",
};
enum { ORDER_LEN = sizeof forward_order / sizeof forward_order[0] };

static void check_walk(VitParamOrder order, const char *const *want, int count) {
    VitParamIter it = vit_param_iter(2, order, VIT_QKV_FUSED);
    int n = 0;
    for (const VitParamSpec *s; (s = vit_param_next(&it)); n++) {
        CU_ASSERT_EQUAL(it.index, n);
        if (n >= count) continue;
        char name[64];
        vit_param_name(name, sizeof name, s, it.block);
        if (strcmp(name, want[n]) != 0) fprintf(stderr, "\n    %d: %s, not %s\n", n, name, want[n]);
        CU_ASSERT_STRING_EQUAL(name, want[n]);
    }
    CU_ASSERT_EQUAL(n, count);
    CU_ASSERT_PTR_NULL(vit_param_next(&it)); // and stays at the end
}

static void test_the_two_orders(void) {
    check_walk(VIT_ORDER_FORWARD, forward_order, ORDER_LEN);
    const char *state_dict[ORDER_LEN] = {"cls_token", "pos_embed", "patch_embed.proj.weight",
                                         "patch_embed.proj.bias"};
    for (int i = 4; i < ORDER_LEN; i++) state_dict[i] = forward_order[i];
    check_walk(VIT_ORDER_STATE_DICT, state_dict, ORDER_LEN);
    // no blocks at all: the 8 tensors around them
    VitParamIter it = vit_param_iter(0, VIT_ORDER_FORWARD, VIT_QKV_ANY);
    int n = 0;
    while (vit_param_next(&it)) n++;
    CU_ASSERT_EQUAL(n, 8);
    // both forms: 12 + 6 tensors per block (the split q, k, v after the fused)
    it = vit_param_iter(3, VIT_ORDER_FORWARD, VIT_QKV_ANY);
    for (n = 0; vit_param_next(&it);) n++;
    CU_ASSERT_EQUAL(n, 8 + 3 * 18);
    it = vit_param_iter(3, VIT_ORDER_STATE_DICT, VIT_QKV_SPLIT);
    for (n = 0; vit_param_next(&it);) n++;
    CU_ASSERT_EQUAL(n, 8 + 3 * 16);
}

/* -------------------------------------------------------------- listing */

// vit_params() of a random model: timm's names and order, its shapes, and
// the very pointers of its VitWeights.
static void test_vit_params_lists_the_model(void) {
    Vit vit;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_build_random(&vit, &odd, &(VitInit){.seed = 1, .std = 0.02f}, &err),
                          VIT_OK);
    VitParam p[64];
    const int n = vit_params(&vit, NULL);
    CU_ASSERT_EQUAL_FATAL(n, 4 + 12 * 2 + 4);
    CU_ASSERT_EQUAL(vit_params(&vit, p), n);
    const VitWeights *w = &vit.weights;
    CU_ASSERT_STRING_EQUAL(p[0].name, "cls_token");
    CU_ASSERT_PTR_EQUAL(p[0].data, w->cls_token);
    CU_ASSERT_EQUAL(p[0].ndim, 3);
    CU_ASSERT_EQUAL(p[0].numel, 24);
    CU_ASSERT_STRING_EQUAL(p[2].name, "patch_embed.proj.weight");
    CU_ASSERT_PTR_EQUAL(p[2].data, w->patch_w);
    CU_ASSERT_EQUAL(p[2].numel, 24 * 3 * 4 * 4);
    CU_ASSERT_STRING_EQUAL(p[18].name, "blocks.1.attn.qkv.weight");
    CU_ASSERT_PTR_EQUAL(p[18].data, w->blocks[1].attn.q_w);
    CU_ASSERT_EQUAL(p[18].shape[0], 72);
    CU_ASSERT_EQUAL(p[18].block, 1);
    // q, k, v are three row blocks of the one tensor
    CU_ASSERT_PTR_EQUAL(w->blocks[1].attn.k_w, w->blocks[1].attn.q_w + 24 * 24);
    CU_ASSERT_PTR_EQUAL(w->blocks[1].attn.v_b, w->blocks[1].attn.q_b + 2 * 24);
    CU_ASSERT_STRING_EQUAL(p[n - 1].name, "head.bias");
    CU_ASSERT_PTR_EQUAL(p[n - 1].data, w->head_b);
    size_t total = 0;
    for (int i = 0; i < n; i++) total += p[i].numel;
    CU_ASSERT_EQUAL((int64_t)total, vit_param_count(&odd));

    // a block whose q, k, v do not lie one after another is listed apart
    VitBlockWeights blocks[2] = {w->blocks[0], w->blocks[1]};
    static float elsewhere[24];
    blocks[0].attn.k_b = elsewhere;
    VitWeights apart = *w;
    apart.blocks = blocks;
    VitParam q[64];
    CU_ASSERT_EQUAL_FATAL(vit_weights_params(q, &apart, &odd), n + 4);
    const char *const block0[] = {"blocks.0.norm1.weight", "blocks.0.norm1.bias",
                                  "blocks.0.attn.q.weight", "blocks.0.attn.q.bias",
                                  "blocks.0.attn.k.weight", "blocks.0.attn.k.bias",
                                  "blocks.0.attn.v.weight", "blocks.0.attn.v.bias",
                                  "blocks.0.attn.proj.weight"};
    for (int i = 0; i < 9; i++) CU_ASSERT_STRING_EQUAL(q[4 + i].name, block0[i]);
    CU_ASSERT_PTR_EQUAL(q[9].data, elsewhere);
    CU_ASSERT_EQUAL(q[6].ndim, 2);
    CU_ASSERT_EQUAL(q[6].shape[1], 24);
    CU_ASSERT_STRING_EQUAL(q[4 + 16 + 2].name, "blocks.1.attn.qkv.weight"); // block 1 still fused
    VitError save_err = {{0}};
    Vit copy = vit;
    copy.weights = apart;
    CU_ASSERT_EQUAL(vit_save(&copy, "/nonexistent/x.safetensors", &save_err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(save_err.msg, "fused q/k/v"));
    vit_free(&vit);
}

CU_TestInfo tests_params[] = {
    {"ViT-B/16 has 86,567,656 parameters in 152 tensors",
     test_vit_base_has_86567656_parameters_in_152_tensors},
    {"every row has its shape", test_every_row_has_its_shape},
    {"counts agree with the shapes and the stages", test_counts_agree_with_shapes_and_stages},
    {"names are unique in every convention", test_names_are_unique_in_every_convention},
    {"names in timm, Hugging Face and torchvision", test_names_in_the_three_conventions},
    {"vit_param_find reads names as written", test_find_reads_names_as_written},
    {"kinds follow the names", test_kinds_follow_the_names},
    {"every part is read by a stage", test_every_part_is_read_by_a_stage},
    {"the field list covers the structs", test_the_field_list_covers_the_structs},
    {"every field is filled by exactly one row", test_every_field_is_filled_by_one_row},
    {"slots are the struct fields", test_slots_are_the_struct_fields},
    {"gradient slots are the struct fields", test_grad_slots_are_the_struct_fields},
    {"forward and state_dict orders", test_the_two_orders},
    {"vit_params lists the model", test_vit_params_lists_the_model},
    CU_TEST_INFO_NULL,
};
