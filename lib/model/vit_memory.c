/**
 * @file vit_memory.c
 * @brief The model's memory: its activations (checked, then carved), position
 *        resizing, and what a Vit owns.
 *
 * Shape legend: B batch, C channels, S image side, p patch side, P patches,
 * N = P + 1 tokens, D width, H heads, Y classes (vit.h).
 *
 * The parameters it owns are handed out by params_owned.c (vit_take_params())
 * and freed here, with everything else, by vit_free(). The rest of the model
 * lives beside it: the forward recipe in forward.c, the
 * sizes in config.c, one block in block.c, the parameter table in params.c, loading in weights.c, random
 * initialisation in init.c, saving in params_save.c.
 *
 * A model prepared for training (vit_train_prepare()) carves more from the
 * same allocation: every block's input, every block's activations when they
 * are kept, and the backward's gradient buffers (acts_sizes() says which).
 *
 * Deliberately omitted (vit.h lists it): dropout and drop-path, distillation
 * and register tokens, pooling other than the [cls] row.
 */
#include "ops/ops.h"
#include "io/resample.h"
#include "model/patch.h"
#include "model/vit.h"
#include "model/vit_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ activations */

// The activation buffers for one image, in floats, in the order vit_acts_ensure()
// carves them. Everything is linear in the batch, so a batch of B needs B times these.
//
// Inference: patches, patch_embed, tokens, x[0], x[1], the block (shared by every
// block), norm, pre_logits, logits; nothing else.
//
// Training adds what the backward reads, and the backward's own buffers:
// - the stream, L + 1 rows of (N, D): each block's input, and the last block's
//   output (the final norm's input). x[0] and x[1] become its first two rows.
// - VIT_KEEP_ALL: each block's own copy of the ten buffers its backward reads
//   (kept_block_floats()); the rest of a block's buffers (scores, scaled, flat,
//   heads, attn, fc2) are written and never read back, so all blocks share them.
//   VIT_KEEP_INPUTS keeps no more than the stream: the backward runs each
//   block's forward again into the shared buffers just before its backward.
// - the gradients (VitGradActs): logits, pre_logits, norm, x[2], a block's
//   worth, patch_embed, input.
enum {
    ACT_PATCHES, ACT_PATCH_EMBED, ACT_TOKENS, ACT_X0, ACT_X1, ACT_BLOCK, ACT_NORM, ACT_PRE_LOGITS,
    ACT_LOGITS, ACT_STREAM, ACT_KEPT, ACT_GRAD, ACT_BUFFERS
};

// What a block keeps for its backward, per image: norm1, q, k, v, context, resid1,
// norm2 (N, D each), fc1, gelu (N, M each) and the probabilities (H, N, N).
static size_t kept_block_floats(const VitConfig *c) {
    const size_t N = (size_t)vit_num_tokens(c), D = (size_t)c->dim, M = (size_t)c->mlp_dim;
    return 7 * N * D + 2 * N * M + (size_t)c->heads * N * N;
}

// The backward's buffers (VitGradActs), per image.
static size_t grad_floats(const VitConfig *c) {
    const size_t N = (size_t)vit_num_tokens(c), P = (size_t)vit_num_patches(c);
    const size_t D = (size_t)c->dim, Y = (size_t)c->num_classes, S = (size_t)c->image_size;
    return Y + D + 3 * N * D + vit_block_acts_floats(c, 1) + P * D + (size_t)c->channels * S * S;
}

static size_t acts_sizes(const VitConfig *c, VitKeep keep, size_t sizes[ACT_BUFFERS]) {
    const size_t N = (size_t)vit_num_tokens(c), P = (size_t)vit_num_patches(c);
    const size_t D = (size_t)c->dim, Y = (size_t)c->num_classes, L = (size_t)c->depth;
    const size_t patch_in = (size_t)c->channels * c->patch_size * c->patch_size;
    const size_t nd = N * D;
    const bool train = keep != VIT_KEEP_NONE;
    const size_t per_image[ACT_BUFFERS] = {
        [ACT_PATCHES] = P * patch_in, [ACT_PATCH_EMBED] = P * D, [ACT_TOKENS] = nd,
        [ACT_X0] = train ? 0 : nd, [ACT_X1] = train ? 0 : nd, // training: rows of the stream
        [ACT_BLOCK] = vit_block_acts_floats(c, 1), [ACT_NORM] = nd, [ACT_PRE_LOGITS] = D,
        [ACT_LOGITS] = Y,
        [ACT_STREAM] = train ? (L + 1) * nd : 0,
        [ACT_KEPT] = keep == VIT_KEEP_ALL ? L * kept_block_floats(c) : 0,
        [ACT_GRAD] = train ? grad_floats(c) : 0,
    };
    size_t total = 0;
    for (int i = 0; i < ACT_BUFFERS; i++) total += sizes[i] = per_image[i];
    return total;
}

double vit_training_bytes(const VitConfig *c, int B, VitKeep keep) {
    size_t sizes[ACT_BUFFERS];
    return (double)B * (double)acts_sizes(c, keep, sizes) * sizeof(float);
}

double vit_activation_bytes(const VitConfig *c, int B) {
    return vit_training_bytes(c, B, VIT_KEEP_NONE);
}

// "a forward pass over 2 images of 224×224 pixels (197 tokens, 12 heads; the attention
// scores alone take 11.2 MB)", for messages about memory; a training pass says what it keeps.
static void describe_batch(char *buf, size_t size, const VitConfig *c, int B, VitKeep keep) {
    const double N = vit_num_tokens(c);
    // scores, scaled and probs: three (B, H, N, N) tensors, quadratic in the tokens
    double scores = 3.0 * B * c->heads * N * N * sizeof(float);
    char tokens[VIT_NUM_BUF], bytes[VIT_NUM_BUF];
    static const char *const pass[] = {
        [VIT_KEEP_NONE] = "a forward pass",
        [VIT_KEEP_ALL] = "a training pass (every block's activations kept for the backward)",
        [VIT_KEEP_INPUTS] = "a training pass (every block's input kept for the backward)",
    };
    snprintf(buf, size, "%s over %d image%s of %d×%d pixels (%s tokens, %d head%s; "
             "the attention scores alone take %s, growing with the square of the tokens)",
             pass[keep], B, B == 1 ? "" : "s", c->image_size, c->image_size,
             vit_thousands(tokens, vit_num_tokens(c)), c->heads, c->heads == 1 ? "" : "s",
             vit_bytes(bytes, scores));
}

VitStatus vit_check_batch(const VitConfig *c, int B, double extra_bytes, const char *extra_what,
                          VitError *err) {
    VitStatus s = vit_config_check(c, err);
    if (s != VIT_OK) return s;
    if (B < 1) return vit_fail(err, VIT_ERR_INPUT, "a batch needs at least one image, not %d", B);
    const double input = (double)B * c->channels * c->image_size * c->image_size * sizeof(float);
    char what[384];
    describe_batch(what, sizeof what, c, B, VIT_KEEP_NONE);
    if (extra_bytes > 0 && extra_what)
        snprintf(what + strlen(what), sizeof what - strlen(what), ", with %s", extra_what);
    return vit_check_memory(input + vit_activation_bytes(c, B) + extra_bytes, what, err);
}

// Block i's buffers when every block keeps its own (VIT_KEEP_ALL): a copy of the
// shared set, with the ten buffers the backward reads pointed at memory of their
// own; the rest stay shared. Returns the memory after them.
static float *carve_kept_block(VitBlockActs *k, const VitBlockActs *shared, float *m,
                               const VitConfig *c, int B) {
    const size_t N = (size_t)vit_num_tokens(c), D = (size_t)c->dim, M = (size_t)c->mlp_dim;
    const size_t bnd = (size_t)B * N * D, bnm = (size_t)B * N * M;
    const size_t bhnn = (size_t)B * c->heads * N * N;
    *k = *shared;
    k->norm1 = m, m += bnd;
    k->mha.q = m, m += bnd;
    k->mha.k = m, m += bnd;
    k->mha.v = m, m += bnd;
    k->mha.probs = m, m += bhnn;
    k->mha.context = m, m += bnd;
    k->resid1 = m, m += bnd;
    k->norm2 = m, m += bnd;
    k->fc1 = m, m += bnm;
    k->gelu = m, m += bnm;
    return m;
}

// The backward's buffers, in the order grad_floats() counts them.
static void carve_grads(VitGradActs *g, float *m, const VitConfig *c, int B) {
    const size_t N = (size_t)vit_num_tokens(c), P = (size_t)vit_num_patches(c);
    const size_t D = (size_t)c->dim, bnd = (size_t)B * N * D;
    g->logits = m, m += (size_t)B * c->num_classes;
    g->pre_logits = m, m += (size_t)B * D;
    g->norm = m, m += bnd;
    g->x[0] = m, m += bnd;
    g->x[1] = m, m += bnd;
    vit_block_acts_carve(&g->block, m, c, B), m += vit_block_acts_floats(c, B);
    g->patch_embed = m, m += (size_t)B * P * D;
    g->input = m;
}

static void acts_free(VitActivations *a) {
    free(a->memory);
    free(a->blocks);
    memset(a, 0, sizeof *a);
}

// (Re)allocates the activations for a batch of B, keeping what vit->keep says, and
// carves the one block into buffers. The size was chosen by whoever chose B and
// the image size, so it is checked before it is taken, and a failed allocation
// is a message.
VitStatus vit_acts_ensure(Vit *vit, int B, VitError *err) {
    VitActivations *a = &vit->acts;
    const VitKeep keep = vit->keep;
    if (a->memory && a->batch == B && a->keep == keep) return VIT_OK;
    acts_free(a);
    const VitConfig *c = &vit->config;
    char what[384];
    describe_batch(what, sizeof what, c, B, keep);
    const double bytes = vit_training_bytes(c, B, keep);
    VitStatus s = vit_check_memory(bytes, what, err);
    if (s != VIT_OK) return s;
    size_t sizes[ACT_BUFFERS], total = (size_t)B * acts_sizes(c, keep, sizes); // fits: checked
    float *m = vit_try_malloc_aligned(total * sizeof(float));
    if (!m) {
        char have[VIT_NUM_BUF];
        return vit_fail(err, VIT_ERR_INPUT, "%s: cannot allocate %s: out of memory", what,
                        vit_bytes(have, bytes));
    }
    a->memory = m;
    a->floats = total;
    a->batch = B;
    a->keep = keep;
    for (int i = 0; i < ACT_BUFFERS; i++) sizes[i] *= (size_t)B;
    a->patches = m, m += sizes[ACT_PATCHES];
    a->patch_embed = m, m += sizes[ACT_PATCH_EMBED];
    a->tokens = m, m += sizes[ACT_TOKENS];
    a->x[0] = m, m += sizes[ACT_X0];
    a->x[1] = m, m += sizes[ACT_X1];
    vit_block_acts_carve(&a->block, m, c, B), m += sizes[ACT_BLOCK];
    // a forward pass only (no backward will read them): an untraced pass never writes
    // the (N, N) matrices, so their pages are never touched (mha_forward())
    a->block.mha.keep_matrices = keep != VIT_KEEP_NONE;
    a->norm = m, m += sizes[ACT_NORM];
    a->pre_logits = m, m += sizes[ACT_PRE_LOGITS];
    a->logits = m, m += sizes[ACT_LOGITS];
    if (keep == VIT_KEEP_NONE) return VIT_OK;
    a->stream_floats = (size_t)B * vit_num_tokens(c) * c->dim;
    a->stream = m, m += sizes[ACT_STREAM];
    a->x[0] = a->stream; // still valid for code that ping-pongs by hand
    a->x[1] = a->stream + a->stream_floats;
    if (keep == VIT_KEEP_ALL) {
        a->blocks = vit_calloc((size_t)c->depth, sizeof *a->blocks);
        for (int i = 0; i < c->depth; i++) m = carve_kept_block(&a->blocks[i], &a->block, m, c, B);
    }
    carve_grads(&a->grad, m, c, B);
    return VIT_OK;
}

float *vit_acts_stream(const VitActivations *a, int i) {
    return a->stream ? a->stream + (size_t)i * a->stream_floats : a->x[i & 1];
}

VitBlockActs *vit_acts_block(VitActivations *a, int i) {
    return a->blocks ? &a->blocks[i] : &a->block;
}

VitStatus vit_train_prepare(Vit *vit, VitKeep keep, int B, VitError *err) {
    if ((unsigned)keep > VIT_KEEP_INPUTS)
        return vit_fail(err, VIT_ERR_USAGE, "unknown activation keeping %d", (int)keep);
    if (vit->precision != LOWP_FP32 && keep != VIT_KEEP_NONE)
        return vit_fail(err, VIT_ERR_USAGE, "the model runs in %s: the backward pass and training "
                        "need it in fp32 (vit_set_precision())", lowp_precision_name(vit->precision));
    VitStatus s = vit_check_batch(&vit->config, B, 0, NULL, err); // the config, B ≥ 1, tokens
    if (s != VIT_OK) return s;
    vit->keep = keep;
    return vit_acts_ensure(vit, B, err);
}

// [vit_logits]
Tensor vit_logits(const Vit *vit) {
    return tensor_view(vit->acts.logits, 2, vit->acts.batch, vit->config.num_classes);
}
// [vit_logits]

void vit_acts_free(Vit *vit) { acts_free(&vit->acts); }

void vit_free(Vit *vit) {
    vit_lowp_free(vit); // while the block table it points into is still there
    acts_free(&vit->acts);
    for (int i = 0; i < vit->owned_count; i++) free(vit->owned[i]);
    free(vit->owned);
    free(vit->weights.blocks);
    free(vit->map);
    free(vit->pos_resized);
    free(vit->config_json);
    free(vit->heads_off);
    st_close(&vit->file);
    memset(vit, 0, sizeof *vit);
}

/* ---------------------------------------------------- other input sizes */

// [vit_resize_positions]
VitStatus vit_resize_positions(Vit *vit, int image_size, VitError *err) {
    VitConfig c = vit->config;
    if (image_size == c.image_size) return VIT_OK;
    if (image_size < c.patch_size || image_size % c.patch_size != 0 || image_size > 4096)
        return vit_fail(err, VIT_ERR_USAGE,
                        "image size %d must be a multiple of the patch size %d (at most 4096)",
                        image_size, c.patch_size);
    c.image_size = image_size; // the same limits as any model (tokens above all)
    VitError why;
    if (vit_config_check(&c, &why) != VIT_OK)
        return vit_fail(err, VIT_ERR_INPUT, "image size %d: %s", image_size, why.msg);
    c.image_size = vit->config.image_size;
    const int D = c.dim, old_grid = c.image_size / c.patch_size;
    const int new_grid = image_size / c.patch_size;
    const double bytes = sizeof(float) * ((double)new_grid * new_grid + 1) * D;
    VitStatus s = vit_check_memory(bytes, "the resampled position table", err);
    float *pos = s == VIT_OK ? vit_try_malloc_aligned((size_t)bytes) : NULL;
    if (!pos)
        return s != VIT_OK ? s : vit_fail(err, VIT_ERR_INPUT, "image size %d: no memory for the "
                                          "resampled position table", image_size);
    memcpy(pos, vit->weights.pos_embed, sizeof(float) * (size_t)D); // cls keeps its position
    // rows 1… form an (old_grid, old_grid, D) grid: resize it like an image with D channels
    resample_grid(pos + D, vit->weights.pos_embed + D, old_grid, old_grid, new_grid, new_grid, D,
                  FILTER_BICUBIC);
    free(vit->pos_resized);
    vit->pos_resized = pos;
    vit->weights.pos_embed = pos;
    vit->config.image_size = image_size;
    acts_free(&vit->acts); // sized for the old N
    return VIT_OK;
}
// [vit_resize_positions]
