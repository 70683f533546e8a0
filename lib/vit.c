/**
 * @file vit.c
 * @brief The Vision Transformer forward pass, written as a recipe, plus
 *        configuration, random initialisation, saving and activations.
 */
#include "vit.h"
#include "ops.h"
#include "patch.h"
#include "resample.h"
#include "rng.h"
#include "vit_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------- configuration */

int vit_num_patches(const VitConfig *c) {
    int grid = c->image_size / c->patch_size;
    return grid * grid;
}

int vit_num_tokens(const VitConfig *c) { return vit_num_patches(c) + 1; }

int64_t vit_param_count(const VitConfig *c) {
    int64_t D = c->dim, M = c->mlp_dim, K = c->num_classes;
    int64_t patch = D * c->channels * c->patch_size * c->patch_size + D;
    int64_t embed = D + (int64_t)vit_num_tokens(c) * D; // cls + pos
    int64_t block = 2 * D                    // norm1
                    + 3 * D * D + 3 * D      // q, k, v
                    + D * D + D              // proj
                    + 2 * D                  // norm2
                    + M * D + M + D * M + D; // fc1, fc2
    return patch + embed + c->depth * block + 2 * D + K * D + K;
}

VitStatus vit_config_for_arch(VitConfig *cfg, const char *arch, VitError *err) {
    static const struct {
        const char *name;
        int dim, depth, heads;
    } archs[] = {
        {"vit-base", 768, 12, 12},
        {"vit-small", 384, 12, 6},
        {"vit-tiny", 192, 12, 3},
    };
    for (size_t i = 0; i < sizeof archs / sizeof archs[0]; i++)
        if (strcmp(arch, archs[i].name) == 0) {
            *cfg = (VitConfig){.image_size = 224, .patch_size = 16, .channels = 3,
                               .dim = archs[i].dim, .depth = archs[i].depth,
                               .heads = archs[i].heads, .mlp_dim = 4 * archs[i].dim,
                               .num_classes = 1000, .ln_eps = 1e-6f};
            return VIT_OK;
        }
    return vit_fail(err, VIT_ERR_USAGE,
                    "unknown architecture '%s' (known: vit-base, vit-small, vit-tiny)", arch);
}

VitStatus vit_config_check(const VitConfig *c, VitError *err) {
    const struct {
        const char *name;
        int value, max;
    } sizes[] = {
        {"image size", c->image_size, 4096}, {"patch size", c->patch_size, 1024},
        {"channels", c->channels, 16},       {"width (dim)", c->dim, 16384},
        {"depth", c->depth, 256},            {"heads", c->heads, 1024},
        {"MLP width", c->mlp_dim, 65536},    {"classes", c->num_classes, 1000000},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        if (sizes[i].value < 1 || sizes[i].value > sizes[i].max)
            return vit_fail(err, VIT_ERR_INPUT, "%s %d is out of range [1, %d]", sizes[i].name,
                            sizes[i].value, sizes[i].max);
    if (c->dim % c->heads != 0)
        return vit_fail(err, VIT_ERR_INPUT,
                        "width %d is not divisible by %d heads: each head needs D/H features",
                        c->dim, c->heads);
    if (c->image_size % c->patch_size != 0)
        return vit_fail(err, VIT_ERR_INPUT, "image size %d is not a multiple of patch size %d",
                        c->image_size, c->patch_size);
    if (vit_num_tokens(c) > 16384)
        return vit_fail(err, VIT_ERR_INPUT, "%d tokens is more than 16384",
                        vit_num_tokens(c));
    if (!(c->ln_eps > 0 && c->ln_eps < 1))
        return vit_fail(err, VIT_ERR_INPUT, "LayerNorm eps %g is not in (0, 1)", (double)c->ln_eps);
    return VIT_OK;
}

/* ------------------------------------------------------------ parameters */

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

VitInit vit_init_timm(uint64_t seed) {
    return (VitInit){.seed = seed, .std = 0.02f, .bias_std = 0.0f, .norm_std = 0.0f};
}

// Drawing 86 M numbers takes seconds, so the draws are queued first and filled
// in parallel. Each tensor gets its own PCG32 stream (seeded by its position in
// the queue), so its values never depend on the thread that fills it or on the
// sizes of the tensors before it.
/// Which distribution a queued draw uses.
typedef enum { DRAW_WEIGHT, DRAW_BIAS, DRAW_NORM_SCALE, DRAW_NORM_SHIFT } DrawKind;

typedef struct {
    float *dst;
    size_t n;
    DrawKind kind;
} Draw;

typedef struct {
    Draw *items;
    int count;
} DrawQueue;

static const float *queue_draw(Vit *vit, DrawQueue *q, DrawKind kind, size_t n) {
    float *p = vit_take_params(vit, n);
    q->items[q->count++] = (Draw){p, n, kind};
    return p;
}

static void fill_draw(const Draw *d, const VitInit *init, int index) {
    Rng r;
    rng_seed(&r, init->seed * 1000003u + (uint64_t)index);
    switch (d->kind) {
    case DRAW_WEIGHT: // timm: trunc_normal_(std=.02) with absolute cut-offs at ±2
        rng_fill_trunc_normal(&r, d->dst, d->n, 0.0f, init->std, -2.0f, 2.0f);
        break;
    case DRAW_BIAS: // timm: zeros
        if (init->bias_std > 0) rng_fill_normal(&r, d->dst, d->n, 0.0f, init->bias_std);
        break;
    case DRAW_NORM_SCALE: // timm: ones
    case DRAW_NORM_SHIFT: { // timm: zeros
        float centre = d->kind == DRAW_NORM_SCALE ? 1.0f : 0.0f;
        if (init->norm_std > 0) rng_fill_normal(&r, d->dst, d->n, centre, init->norm_std);
        else for (size_t i = 0; i < d->n; i++) d->dst[i] = centre;
        break;
    }
    }
}

VitStatus vit_build_random(Vit *vit, const VitConfig *cfg, const VitInit *init, VitError *err) {
    memset(vit, 0, sizeof *vit);
    VitStatus s = vit_config_check(cfg, err);
    if (s != VIT_OK) return s;
    vit->config = *cfg;
    snprintf(vit->source, sizeof vit->source, "random");
    vit_alloc_blocks(vit);
    const size_t D = (size_t)cfg->dim, M = (size_t)cfg->mlp_dim, K = (size_t)cfg->num_classes;
    const size_t patch_in = (size_t)cfg->channels * cfg->patch_size * cfg->patch_size;
    VitWeights *w = &vit->weights;
    DrawQueue q = {vit_calloc((size_t)(8 + 16 * cfg->depth), sizeof(Draw)), 0};
    w->patch_w = queue_draw(vit, &q, DRAW_WEIGHT, D * patch_in);
    w->patch_b = queue_draw(vit, &q, DRAW_BIAS, D);
    w->cls_token = queue_draw(vit, &q, DRAW_WEIGHT, D);
    w->pos_embed = queue_draw(vit, &q, DRAW_WEIGHT, (size_t)vit_num_tokens(cfg) * D);
    for (int i = 0; i < cfg->depth; i++) {
        VitBlockWeights *b = &w->blocks[i];
        b->norm1_w = queue_draw(vit, &q, DRAW_NORM_SCALE, D);
        b->norm1_b = queue_draw(vit, &q, DRAW_NORM_SHIFT, D);
        const float *qkv_w = queue_draw(vit, &q, DRAW_WEIGHT, 3 * D * D); // fused, as timm stores it
        const float *qkv_b = queue_draw(vit, &q, DRAW_BIAS, 3 * D);
        b->attn = (AttentionWeights){.q_w = qkv_w, .k_w = qkv_w + D * D, .v_w = qkv_w + 2 * D * D,
                                     .q_b = qkv_b, .k_b = qkv_b + D, .v_b = qkv_b + 2 * D};
        b->attn.proj_w = queue_draw(vit, &q, DRAW_WEIGHT, D * D);
        b->attn.proj_b = queue_draw(vit, &q, DRAW_BIAS, D);
        b->norm2_w = queue_draw(vit, &q, DRAW_NORM_SCALE, D);
        b->norm2_b = queue_draw(vit, &q, DRAW_NORM_SHIFT, D);
        b->fc1_w = queue_draw(vit, &q, DRAW_WEIGHT, M * D);
        b->fc1_b = queue_draw(vit, &q, DRAW_BIAS, M);
        b->fc2_w = queue_draw(vit, &q, DRAW_WEIGHT, D * M);
        b->fc2_b = queue_draw(vit, &q, DRAW_BIAS, D);
    }
    w->norm_w = queue_draw(vit, &q, DRAW_NORM_SCALE, D);
    w->norm_b = queue_draw(vit, &q, DRAW_NORM_SHIFT, D);
    w->head_w = queue_draw(vit, &q, DRAW_WEIGHT, K * D);
    w->head_b = queue_draw(vit, &q, DRAW_BIAS, K);
#pragma omp parallel for schedule(dynamic)
    for (int i = 0; i < q.count; i++) fill_draw(&q.items[i], init, i);
    free(q.items);
    return VIT_OK;
}

/* ----------------------------------------------------------------- saving */

// Queues one parameter under its timm name with the given shape (the writer
// copies the shape and borrows the data).
static void save_param(StWriter *wr, const char *name, const float *data, int ndim, int d0,
                       int d1, int d2, int d3) {
    Tensor t = tensor_view((float *)data, ndim, d0, d1, d2, d3);
    st_writer_add(wr, name, &t);
}

VitStatus vit_save(const Vit *vit, const char *path, VitError *err) {
    const VitConfig *c = &vit->config;
    const VitWeights *w = &vit->weights;
    const int D = c->dim, M = c->mlp_dim, K = c->num_classes, p = c->patch_size;
    StWriter wr = {0};
    char meta[32];
    snprintf(meta, sizeof meta, "%d", c->heads);
    st_writer_meta(&wr, "num_heads", meta);
    snprintf(meta, sizeof meta, "%g", (double)c->ln_eps);
    st_writer_meta(&wr, "layer_norm_eps", meta);
    st_writer_meta(&wr, "format", "pt");

    save_param(&wr, "cls_token", w->cls_token, 3, 1, 1, D, 0);
    save_param(&wr, "pos_embed", w->pos_embed, 3, 1, vit_num_tokens(c), D, 0);
    save_param(&wr, "patch_embed.proj.weight", w->patch_w, 4, D, c->channels, p, p);
    save_param(&wr, "patch_embed.proj.bias", w->patch_b, 1, D, 0, 0, 0);
    char names[16][64];
    for (int i = 0; i < c->depth; i++) {
        const VitBlockWeights *b = &w->blocks[i];
        // q, k and v are consecutive rows of one (3D, D) tensor when built here or loaded
        // from timm/torchvision; a model loaded from separate HF q/k/v is not re-fused.
        if (b->attn.k_w != b->attn.q_w + (size_t)D * D ||
            b->attn.v_w != b->attn.q_w + 2 * (size_t)D * D) {
            st_writer_free(&wr);
            return vit_fail(err, VIT_ERR_INPUT,
                            "%s: saving is only supported for fused q/k/v weights", path);
        }
        const char *fmt[14] = {"norm1.weight", "norm1.bias", "attn.qkv.weight", "attn.qkv.bias",
                               "attn.proj.weight", "attn.proj.bias", "norm2.weight", "norm2.bias",
                               "mlp.fc1.weight", "mlp.fc1.bias", "mlp.fc2.weight", "mlp.fc2.bias"};
        for (int k = 0; k < 12; k++) snprintf(names[k], sizeof names[k], "blocks.%d.%s", i, fmt[k]);
        save_param(&wr, names[0], b->norm1_w, 1, D, 0, 0, 0);
        save_param(&wr, names[1], b->norm1_b, 1, D, 0, 0, 0);
        save_param(&wr, names[2], b->attn.q_w, 2, 3 * D, D, 0, 0);
        save_param(&wr, names[3], b->attn.q_b, 1, 3 * D, 0, 0, 0);
        save_param(&wr, names[4], b->attn.proj_w, 2, D, D, 0, 0);
        save_param(&wr, names[5], b->attn.proj_b, 1, D, 0, 0, 0);
        save_param(&wr, names[6], b->norm2_w, 1, D, 0, 0, 0);
        save_param(&wr, names[7], b->norm2_b, 1, D, 0, 0, 0);
        save_param(&wr, names[8], b->fc1_w, 2, M, D, 0, 0);
        save_param(&wr, names[9], b->fc1_b, 1, M, 0, 0, 0);
        save_param(&wr, names[10], b->fc2_w, 2, D, M, 0, 0);
        save_param(&wr, names[11], b->fc2_b, 1, D, 0, 0, 0);
    }
    save_param(&wr, "norm.weight", w->norm_w, 1, D, 0, 0, 0);
    save_param(&wr, "norm.bias", w->norm_b, 1, D, 0, 0, 0);
    save_param(&wr, "head.weight", w->head_w, 2, K, D, 0, 0);
    save_param(&wr, "head.bias", w->head_b, 1, K, 0, 0, 0);
    VitStatus s = st_writer_save(&wr, path, err);
    st_writer_free(&wr);
    return s;
}

/* ------------------------------------------------------------ activations */

// (Re)allocates the activations for a batch of B and carves the one block into buffers.
static void acts_ensure(Vit *vit, int B) {
    VitActivations *a = &vit->acts;
    if (a->memory && a->batch == B) return;
    free(a->memory);
    const VitConfig *c = &vit->config;
    const size_t N = (size_t)vit_num_tokens(c), P = (size_t)vit_num_patches(c);
    const size_t D = (size_t)c->dim, K = (size_t)c->num_classes;
    const size_t patch_in = (size_t)c->channels * c->patch_size * c->patch_size;
    const size_t bnd = (size_t)B * N * D;
    // patches, patch_embed, tokens, x[0], x[1], the block, norm, pre_logits, logits
    size_t sizes[] = {B * P * patch_in, B * P * D, bnd, bnd, bnd, vit_block_acts_floats(c, B),
                      bnd, B * D, B * K};
    size_t total = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) total += sizes[i];
    float *m = vit_malloc_aligned(total * sizeof(float));
    memset(a, 0, sizeof *a);
    a->memory = m;
    a->floats = total;
    a->batch = B;
    a->patches = m, m += sizes[0];
    a->patch_embed = m, m += sizes[1];
    a->tokens = m, m += sizes[2];
    a->x[0] = m, m += sizes[3];
    a->x[1] = m, m += sizes[4];
    vit_block_acts_carve(&a->block, m, c, B), m += sizes[5];
    a->norm = m, m += sizes[6];
    a->pre_logits = m, m += sizes[7];
    a->logits = m;
}

/* ---------------------------------------------------------- forward pass */

static VitStatus check_input(const Vit *vit, const Tensor *input, VitError *err) {
    const VitConfig *c = &vit->config;
    char got[64];
    if (input->ndim != 4 || input->shape[0] < 1 || input->shape[1] != c->channels ||
        input->shape[2] != c->image_size || input->shape[3] != c->image_size)
        return vit_fail(err, VIT_ERR_INPUT, "input has shape %s, the model expects (B, %d, %d, %d)",
                        tensor_shape_str(input, got, sizeof got), c->channels, c->image_size,
                        c->image_size);
    return VIT_OK;
}

VitStatus vit_forward(Vit *vit, const Tensor *input, TraceFn trace, void *user, VitError *err) {
    VitStatus status = check_input(vit, input, err);
    if (status != VIT_OK) return status;
    const VitConfig *c = &vit->config;
    const VitWeights *w = &vit->weights;
    const int B = input->shape[0], C = c->channels, S = c->image_size, p = c->patch_size;
    const int P = vit_num_patches(c), N = P + 1, D = c->dim, K = c->num_classes;
    acts_ensure(vit, B);
    VitActivations *a = &vit->acts;
    const Tracer tr = {trace, user, NULL};
    // listeners may read, never write, what they are shown
    trace_emit(&tr, "input", input->data, 4, B, C, S, S);

    // 1. x = self.patch_embed(x): stride-p convolution = unfold + linear
    patch_embed(a->patch_embed, a->patches, input->data, w->patch_w, w->patch_b, B, C, S, p, D);
    trace_emit(&tr, "patch_embed", a->patch_embed, 3, B, P, D);

    // 2. x = torch.cat((self.cls_token.expand(B, -1, -1), x), dim=1)
    for (int b = 0; b < B; b++) {
        float *tok = a->tokens + (size_t)b * N * D;
        memcpy(tok, w->cls_token, (size_t)D * sizeof(float));
        memcpy(tok + D, a->patch_embed + (size_t)b * P * D, (size_t)P * D * sizeof(float));
    }
    trace_emit(&tr, "tokens", a->tokens, 3, B, N, D);

    // 3. x = x + self.pos_embed: the same (N, D) table added to every image
    float *x = a->x[0], *next = a->x[1];
    for (int b = 0; b < B; b++)
        add(x + (size_t)b * N * D, a->tokens + (size_t)b * N * D, w->pos_embed, (size_t)N * D);
    trace_emit(&tr, "embed", x, 3, B, N, D);

    // 4. x = self.blocks(x): L pre-norm encoder blocks, the residual stream ping-pongs
    for (int i = 0; i < c->depth; i++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "blocks.%d.", i);
        const Tracer block_tr = {trace, user, prefix};
        vit_block_forward(next, x, &w->blocks[i], c, &a->block, B, &block_tr);
        float *t = x;
        x = next, next = t;
    }

    // 5. x = self.norm(x)
    layernorm(a->norm, x, w->norm_w, w->norm_b, B * N, D, c->ln_eps);
    trace_emit(&tr, "norm", a->norm, 3, B, N, D);

    // 6. x = x[:, 0]: the cls token's row is the image's summary
    for (int b = 0; b < B; b++)
        memcpy(a->pre_logits + (size_t)b * D, a->norm + (size_t)b * N * D,
               (size_t)D * sizeof(float));
    trace_emit(&tr, "pre_logits", a->pre_logits, 2, B, D);

    // 7. x = self.head(x)
    linear(a->logits, a->pre_logits, w->head_w, w->head_b, B, D, K);
    trace_emit(&tr, "logits", a->logits, 2, B, K);
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
    const int D = c.dim, old_grid = c.image_size / c.patch_size;
    const int new_grid = image_size / c.patch_size;
    float *pos = vit_malloc(sizeof(float) * ((size_t)new_grid * new_grid + 1) * D);
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
