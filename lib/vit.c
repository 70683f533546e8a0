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
    if (vit_num_tokens(c) > VIT_MAX_TOKENS) {
        const int grid = c->image_size / c->patch_size;
        char tokens[VIT_NUM_BUF], most[VIT_NUM_BUF];
        return vit_fail(err, VIT_ERR_INPUT, "%d×%d patches and [cls] make %s tokens, more than the "
                        "%s this implementation allows", grid, grid,
                        vit_thousands(tokens, vit_num_tokens(c)), vit_thousands(most, VIT_MAX_TOKENS));
    }
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

// Adds one parameter to the list (when there is a list) and returns the new count.
static int add_param(VitParam *out, int n, const char *name, const float *data, int ndim, int d0,
                     int d1, int d2, int d3) {
    if (out) {
        VitParam *p = &out[n];
        snprintf(p->name, sizeof p->name, "%s", name);
        p->data = data;
        p->ndim = ndim;
        const int shape[4] = {d0, d1, d2, d3};
        p->numel = 1;
        for (int i = 0; i < 4; i++) {
            p->shape[i] = i < ndim ? shape[i] : 0;
            if (i < ndim) p->numel *= (size_t)shape[i];
        }
    }
    return n + 1;
}

int vit_params(const Vit *vit, VitParam *out) {
    const VitConfig *c = &vit->config;
    const VitWeights *w = &vit->weights;
    const int D = c->dim, M = c->mlp_dim, K = c->num_classes, p = c->patch_size;
    int n = 0;
    n = add_param(out, n, "cls_token", w->cls_token, 3, 1, 1, D, 0);
    n = add_param(out, n, "pos_embed", w->pos_embed, 3, 1, vit_num_tokens(c), D, 0);
    n = add_param(out, n, "patch_embed.proj.weight", w->patch_w, 4, D, c->channels, p, p);
    n = add_param(out, n, "patch_embed.proj.bias", w->patch_b, 1, D, 0, 0, 0);
    for (int i = 0; i < c->depth; i++) {
        const VitBlockWeights *b = &w->blocks[i];
        char name[64];
#define BLOCK_PARAM(suffix, data, ...) \
    (snprintf(name, sizeof name, "blocks.%d.%s", i, suffix), \
     n = add_param(out, n, name, data, __VA_ARGS__))
        BLOCK_PARAM("norm1.weight", b->norm1_w, 1, D, 0, 0, 0);
        BLOCK_PARAM("norm1.bias", b->norm1_b, 1, D, 0, 0, 0);
        // q, k and v are consecutive rows of one (3D, D) tensor when built here or loaded
        // from timm/torchvision; Hugging Face keeps them apart, and so does this list then
        const bool fused = b->attn.k_w == b->attn.q_w + (size_t)D * D &&
                           b->attn.v_w == b->attn.q_w + 2 * (size_t)D * D &&
                           b->attn.k_b == b->attn.q_b + D && b->attn.v_b == b->attn.q_b + 2 * D;
        if (fused) {
            BLOCK_PARAM("attn.qkv.weight", b->attn.q_w, 2, 3 * D, D, 0, 0);
            BLOCK_PARAM("attn.qkv.bias", b->attn.q_b, 1, 3 * D, 0, 0, 0);
        } else {
            BLOCK_PARAM("attn.q.weight", b->attn.q_w, 2, D, D, 0, 0);
            BLOCK_PARAM("attn.q.bias", b->attn.q_b, 1, D, 0, 0, 0);
            BLOCK_PARAM("attn.k.weight", b->attn.k_w, 2, D, D, 0, 0);
            BLOCK_PARAM("attn.k.bias", b->attn.k_b, 1, D, 0, 0, 0);
            BLOCK_PARAM("attn.v.weight", b->attn.v_w, 2, D, D, 0, 0);
            BLOCK_PARAM("attn.v.bias", b->attn.v_b, 1, D, 0, 0, 0);
        }
        BLOCK_PARAM("attn.proj.weight", b->attn.proj_w, 2, D, D, 0, 0);
        BLOCK_PARAM("attn.proj.bias", b->attn.proj_b, 1, D, 0, 0, 0);
        BLOCK_PARAM("norm2.weight", b->norm2_w, 1, D, 0, 0, 0);
        BLOCK_PARAM("norm2.bias", b->norm2_b, 1, D, 0, 0, 0);
        BLOCK_PARAM("mlp.fc1.weight", b->fc1_w, 2, M, D, 0, 0);
        BLOCK_PARAM("mlp.fc1.bias", b->fc1_b, 1, M, 0, 0, 0);
        BLOCK_PARAM("mlp.fc2.weight", b->fc2_w, 2, D, M, 0, 0);
        BLOCK_PARAM("mlp.fc2.bias", b->fc2_b, 1, D, 0, 0, 0);
#undef BLOCK_PARAM
    }
    n = add_param(out, n, "norm.weight", w->norm_w, 1, D, 0, 0, 0);
    n = add_param(out, n, "norm.bias", w->norm_b, 1, D, 0, 0, 0);
    n = add_param(out, n, "head.weight", w->head_w, 2, K, D, 0, 0);
    n = add_param(out, n, "head.bias", w->head_b, 1, K, 0, 0, 0);
    return n;
}

VitStatus vit_save(const Vit *vit, const char *path, VitError *err) {
    const VitConfig *c = &vit->config;
    const int count = vit_params(vit, NULL);
    VitParam *params = vit_malloc(sizeof *params * (size_t)count);
    vit_params(vit, params);
    StWriter wr = {0};
    char meta[32];
    snprintf(meta, sizeof meta, "%d", c->heads);
    st_writer_meta(&wr, "num_heads", meta);
    snprintf(meta, sizeof meta, "%g", (double)c->ln_eps);
    st_writer_meta(&wr, "layer_norm_eps", meta);
    st_writer_meta(&wr, "format", "pt");
    VitStatus s = VIT_OK;
    for (int i = 0; i < count && s == VIT_OK; i++) {
        if (strstr(params[i].name, ".attn.q.")) // timm stores one fused qkv; we do not re-fuse
            s = vit_fail(err, VIT_ERR_INPUT,
                         "%s: saving is only supported for fused q/k/v weights", path);
        Tensor t = tensor_view_shape((float *)params[i].data, params[i].ndim, params[i].shape);
        st_writer_add(&wr, params[i].name, &t);
    }
    if (s == VIT_OK) s = st_writer_save(&wr, path, err);
    st_writer_free(&wr);
    free(params);
    return s;
}

/* ------------------------------------------------------------ activations */

// The activation buffers for one image, in floats, in the order acts_ensure() carves them:
// patches, patch_embed, tokens, x[0], x[1], the block, norm, pre_logits, logits.
// Everything is linear in the batch, so a batch of B needs B times these.
enum { ACT_BUFFERS = 9 };
static size_t acts_sizes(const VitConfig *c, size_t sizes[ACT_BUFFERS]) {
    const size_t N = (size_t)vit_num_tokens(c), P = (size_t)vit_num_patches(c);
    const size_t D = (size_t)c->dim, K = (size_t)c->num_classes;
    const size_t patch_in = (size_t)c->channels * c->patch_size * c->patch_size;
    const size_t nd = N * D;
    const size_t per_image[ACT_BUFFERS] = {P * patch_in, P * D, nd, nd, nd,
                                           vit_block_acts_floats(c, 1), nd, D, K};
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
static VitStatus acts_ensure(Vit *vit, int B, VitError *err) {
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
    if ((status = acts_ensure(vit, B, err)) != VIT_OK) return status;
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
