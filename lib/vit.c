/**
 * @file vit.c
 * @brief The model's memory: its activations (checked, then carved), position
 *        resizing, and what a Vit owns.
 *
 * Shape legend: B batch, C channels, S image side, p patch side, P patches,
 * N = P + 1 tokens, D width, H heads, Y classes (vit.h).
 *
 * The rest of the model lives beside it: the forward recipe in forward.c, the
 * sizes in config.c, one block in block.c, the parameter table in params.c, loading in weights.c, random
 * initialisation in init.c, saving in save.c.
 *
 * Deliberately omitted (vit.h lists it): dropout and drop-path, distillation
 * and register tokens, pooling other than the [cls] row, training.
 */
#include "vit.h"
#include "ops.h"
#include "patch.h"
#include "resample.h"
#include "vit_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------- what the model owns */

// A new zeroed parameter buffer of n floats, owned (and freed) by the model.
// One buffer per tensor, allocated only once its size has been checked, so a
// file cannot make us reserve memory for tensors it does not hold.
float *vit_take_params(Vit *vit, size_t n) {
    vit->owned = vit_realloc(vit->owned, (size_t)(vit->owned_count + 1) * sizeof(float *));
    float *p = vit_calloc(n, sizeof(float));
    vit->owned[vit->owned_count++] = p;
    return p;
}

void vit_alloc_blocks(Vit *vit) {
    vit->weights.blocks = vit_calloc((size_t)vit->config.depth, sizeof(VitBlockWeights));
}

/* ------------------------------------------------------------ activations */

// The activation buffers for one image, in floats, in the order acts_ensure() carves them:
// patches, patch_embed, tokens, x[0], x[1], the block, norm, pre_logits, logits.
// Everything is linear in the batch, so a batch of B needs B times these.
enum { ACT_BUFFERS = 9 };
static size_t acts_sizes(const VitConfig *c, size_t sizes[ACT_BUFFERS]) {
    const size_t N = (size_t)vit_num_tokens(c), P = (size_t)vit_num_patches(c);
    const size_t D = (size_t)c->dim, Y = (size_t)c->num_classes;
    const size_t patch_in = (size_t)c->channels * c->patch_size * c->patch_size;
    const size_t nd = N * D;
    const size_t per_image[ACT_BUFFERS] = {P * patch_in, P * D, nd, nd, nd,
                                           vit_block_acts_floats(c, 1), nd, D, Y};
    size_t total = 0;
    for (int i = 0; i < ACT_BUFFERS; i++) total += sizes[i] = per_image[i];
    return total;
}

double vit_activation_bytes(const VitConfig *c, int B) {
    size_t sizes[ACT_BUFFERS];
    return (double)B * (double)acts_sizes(c, sizes) * sizeof(float);
}

// "a forward pass over 2 images of 224×224 pixels (197 tokens, 12 heads; the attention
// scores alone take 11.2 MB)", for messages about memory.
static void describe_batch(char *buf, size_t size, const VitConfig *c, int B) {
    const double N = vit_num_tokens(c);
    // scores, scaled and probs: three (B, H, N, N) tensors, quadratic in the tokens
    double scores = 3.0 * B * c->heads * N * N * sizeof(float);
    char tokens[VIT_NUM_BUF], bytes[VIT_NUM_BUF];
    snprintf(buf, size, "a forward pass over %d image%s of %d×%d pixels (%s tokens, %d head%s; "
             "the attention scores alone take %s, growing with the square of the tokens)",
             B, B == 1 ? "" : "s", c->image_size, c->image_size,
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
    describe_batch(what, sizeof what, c, B);
    if (extra_bytes > 0 && extra_what)
        snprintf(what + strlen(what), sizeof what - strlen(what), ", with %s", extra_what);
    return vit_check_memory(input + vit_activation_bytes(c, B) + extra_bytes, what, err);
}

// (Re)allocates the activations for a batch of B and carves the one block into
// buffers. The size was chosen by whoever chose B and the image size, so it is
// checked before it is taken, and a failed allocation is a message.
VitStatus vit_acts_ensure(Vit *vit, int B, VitError *err) {
    VitActivations *a = &vit->acts;
    if (a->memory && a->batch == B) return VIT_OK;
    free(a->memory);
    memset(a, 0, sizeof *a);
    const VitConfig *c = &vit->config;
    char what[384];
    describe_batch(what, sizeof what, c, B);
    const double bytes = vit_activation_bytes(c, B);
    VitStatus s = vit_check_memory(bytes, what, err);
    if (s != VIT_OK) return s;
    size_t sizes[ACT_BUFFERS], total = (size_t)B * acts_sizes(c, sizes); // fits: checked above
    float *m = vit_try_malloc_aligned(total * sizeof(float));
    if (!m) {
        char have[VIT_NUM_BUF];
        return vit_fail(err, VIT_ERR_INPUT, "%s: cannot allocate %s: out of memory", what,
                        vit_bytes(have, bytes));
    }
    a->memory = m;
    a->floats = total;
    a->batch = B;
    for (int i = 0; i < ACT_BUFFERS; i++) sizes[i] *= (size_t)B;
    a->patches = m, m += sizes[0];
    a->patch_embed = m, m += sizes[1];
    a->tokens = m, m += sizes[2];
    a->x[0] = m, m += sizes[3];
    a->x[1] = m, m += sizes[4];
    vit_block_acts_carve(&a->block, m, c, B), m += sizes[5];
    a->norm = m, m += sizes[6];
    a->pre_logits = m, m += sizes[7];
    a->logits = m;
    return VIT_OK;
}

Tensor vit_logits(const Vit *vit) {
    return tensor_view(vit->acts.logits, 2, vit->acts.batch, vit->config.num_classes);
}

void vit_free(Vit *vit) {
    free(vit->acts.memory);
    for (int i = 0; i < vit->owned_count; i++) free(vit->owned[i]);
    free(vit->owned);
    free(vit->weights.blocks);
    free(vit->map);
    free(vit->pos_resized);
    free(vit->config_json);
    st_close(&vit->file);
    memset(vit, 0, sizeof *vit);
}

/* ---------------------------------------------------- other input sizes */

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
    free(vit->acts.memory); // sized for the old N
    memset(&vit->acts, 0, sizeof vit->acts);
    return VIT_OK;
}
