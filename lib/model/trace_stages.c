/**
 * @file trace_stages.c
 * @brief The table of trace stages (the trace contract, docs/contract.md) and their costs.
 *
 * Shape legend: B batch, C channels, S image side, P patches, N tokens,
 * D width, H heads, Dh = D/H, M MLP width, Y classes (the glossary's letters,
 * which the axes strings below use).
 *
 * Deliberately omitted: memory traffic and cache effects; the costs count
 * arithmetic only. Which stage reads which parameter is not kept here but in
 * the parameter table (params.c), which vit_stage_params() reads.
 */
#include "model/trace_stages.h"
#include "model/params.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const VitStage stages[] = {
    {"input", false, "B,C,S,S", "x", "normalised pixels", "x"},
    {"patch_embed", false, "B,P,D", "W_E·patch + b", "each p×p patch projected to D numbers",
     "x = self.patch_embed(x)"},
    {"tokens", false, "B,N,D", "[x_cls; x_1 … x_P]", "the learnable [cls] token prepended",
     "x = torch.cat((cls_token.expand(B, -1, -1), x), dim=1)"},
    {"embed", false, "B,N,D", "tokens + E_pos", "position embeddings added",
     "x = x + self.pos_embed"},
    {"norm1", true, "B,N,D", "LN(x)", "LayerNorm before attention", "self.norm1(x)"},
    {"attn.q", true, "B,H,N,Dh", "Q = LN(x)·W_qᵀ + b_q", "queries, split into heads",
     "q = qkv[0]"},
    {"attn.k", true, "B,H,N,Dh", "K = LN(x)·W_kᵀ + b_k", "keys, split into heads", "k = qkv[1]"},
    {"attn.v", true, "B,H,N,Dh", "V = LN(x)·W_vᵀ + b_v", "values, split into heads",
     "v = qkv[2]"},
    {"attn.scores", true, "B,H,N,N", "Q·Kᵀ", "how well each query matches each key",
     "q @ k.transpose(-2, -1)"},
    {"attn.scaled", true, "B,H,N,N", "Q·Kᵀ/√Dh", "scores scaled to unit variance",
     "attn = (q @ k.transpose(-2, -1)) * self.scale"},
    {"attn.probs", true, "B,H,N,N", "softmax(Q·Kᵀ/√Dh)", "where each token looks (rows sum to 1)",
     "attn = attn.softmax(dim=-1)"},
    {"attn.context", true, "B,N,D", "concat_h(P_h·V_h)", "values mixed by attention, heads merged",
     "x = (attn @ v).transpose(1, 2).reshape(B, N, C)"},
    {"attn.proj", true, "B,N,D", "context·W_oᵀ + b_o", "output projection mixes the heads",
     "x = self.proj(x)"},
    {"resid1", true, "B,N,D", "x + attn", "attention added to the residual stream",
     "x = x + self.attn(self.norm1(x))"},
    {"norm2", true, "B,N,D", "LN(x)", "LayerNorm before the MLP", "self.norm2(x)"},
    {"mlp.fc1", true, "B,N,M", "LN(x)·W_1ᵀ + b_1", "expand each token to 4·D",
     "x = self.fc1(x)"},
    {"mlp.gelu", true, "B,N,M", "GELU(h) = h·Φ(h)", "smooth non-linearity (exact erf form)",
     "x = self.act(x)"},
    {"mlp.fc2", true, "B,N,D", "GELU(h)·W_2ᵀ + b_2", "project back to D", "x = self.fc2(x)"},
    {"out", true, "B,N,D", "x + MLP(LN(x))", "the block's output, the residual stream",
     "x = x + self.mlp(self.norm2(x))"},
    {"norm", false, "B,N,D", "LN(x)", "final LayerNorm", "x = self.norm(x)"},
    {"pre_logits", false, "B,D", "x[:, 0]", "the [cls] token's row summarises the image",
     "x = x[:, 0]"},
    {"logits", false, "B,Y", "x_cls·W_headᵀ + b", "one score per class", "x = self.head(x)"},
};
enum { STAGE_COUNT = sizeof stages / sizeof stages[0] };

int vit_stage_count(void) { return STAGE_COUNT; }

const VitStage *vit_stage_at(int i) { return i >= 0 && i < STAGE_COUNT ? &stages[i] : NULL; }

bool vit_stage_is_grad(const char *name) {
    return strncmp(name, VIT_GRAD_PREFIX, strlen(VIT_GRAD_PREFIX)) == 0 &&
           vit_stage_find(name, NULL) != NULL;
}

const VitStage *vit_stage_find(const char *name, int *block) {
    // a gradient belongs to its stage: "grad.blocks.3.attn.q" is blocks.3.attn.q's
    if (strncmp(name, VIT_GRAD_PREFIX, strlen(VIT_GRAD_PREFIX)) == 0)
        name += strlen(VIT_GRAD_PREFIX);
    int index;
    const char *suffix = trace_split_block(name, &index);
    if (!suffix) return NULL;
    for (int i = 0; i < STAGE_COUNT; i++)
        if (stages[i].per_block == (index >= 0) && strcmp(stages[i].name, suffix) == 0) {
            if (block) *block = index;
            return &stages[i];
        }
    return NULL;
}

// The size of one named axis for this configuration.
static int axis_size(const VitConfig *c, int B, const char *axis, size_t len) {
#define IS(s) (len == strlen(s) && strncmp(axis, s, len) == 0)
    if (IS("B")) return B;
    if (IS("C")) return c->channels;
    if (IS("S")) return c->image_size;
    if (IS("P")) return vit_num_patches(c);
    if (IS("N")) return vit_num_tokens(c);
    if (IS("D")) return c->dim;
    if (IS("H")) return c->heads;
    if (IS("Dh")) return c->dim / c->heads;
    if (IS("M")) return c->mlp_dim;
    if (IS("Y")) return c->num_classes;
#undef IS
    return -1;
}

int vit_stage_shape(const VitConfig *cfg, int B, const char *name, int shape[4]) {
    const VitStage *s = vit_stage_find(name, NULL);
    if (!s) return 0;
    int ndim = 0;
    for (const char *a = s->axes; *a && ndim < 4;) {
        size_t len = strcspn(a, ",");
        shape[ndim++] = axis_size(cfg, B, a, len);
        a += len;
        if (*a == ',') a++;
    }
    return ndim;
}

// [vit_stage_flops]
double vit_stage_flops(const VitConfig *c, int B, const char *name) {
    const VitStage *s = vit_stage_find(name, NULL);
    if (!s) return 0;
    const double N = vit_num_tokens(c), P = vit_num_patches(c), D = c->dim, H = c->heads;
    const double Dh = D / H, M = c->mlp_dim, Y = c->num_classes;
    const double patch_in = (double)c->channels * c->patch_size * c->patch_size;
    const double BND = B * N * D;
    const char *n = s->name;
    // matrix products: 2 per multiply–add, plus 1 per output for a bias
    if (!strcmp(n, "patch_embed")) return B * P * D * (2 * patch_in + 1);
    if (!strcmp(n, "attn.q") || !strcmp(n, "attn.k") || !strcmp(n, "attn.v") ||
        !strcmp(n, "attn.proj"))
        return BND * (2 * D + 1);
    if (!strcmp(n, "attn.scores") || !strcmp(n, "attn.context")) return 2 * B * H * N * N * Dh;
    if (!strcmp(n, "mlp.fc1")) return B * N * M * (2 * D + 1);
    if (!strcmp(n, "mlp.fc2")) return BND * (2 * M + 1);
    if (!strcmp(n, "logits")) return B * Y * (2 * D + 1);
    // elementwise: 1 per element for a scale or an add
    if (!strcmp(n, "attn.scaled")) return B * H * N * N;
    if (!strcmp(n, "embed") || !strcmp(n, "resid1") || !strcmp(n, "out")) return BND;
    // softmax ≈ 5 per element (max, subtract, exp, sum, divide)
    if (!strcmp(n, "attn.probs")) return 5 * B * H * N * N;
    // LayerNorm ≈ 8 per element (mean, variance, normalise, scale, shift)
    if (!strcmp(n, "norm1") || !strcmp(n, "norm2") || !strcmp(n, "norm")) return 8 * BND;
    // exact GELU ≈ 8 per element, counting erf as one
    if (!strcmp(n, "mlp.gelu")) return 8 * B * N * M;
    return 0; // input, tokens, pre_logits only move data
}
// [vit_stage_flops]

// [vit_stage_params]
int64_t vit_stage_params(const VitConfig *cfg, const char *name) {
    const VitStage *stage = vit_stage_find(name, NULL);
    if (!stage) return 0;
    // the parameter table says which stage reads each tensor, or each part of
    // one: the fused (3D, D) q, k, v gives a third to attn.q, attn.k and attn.v
    int64_t total = 0;
    for (int i = 0; i < vit_param_spec_count(); i++) {
        const VitParamSpec *s = vit_param_spec_at(i);
        if (s->qkv == VIT_QKV_SPLIT || s->per_block != stage->per_block) continue; // fused, once
        const int parts = vit_param_parts(s);
        for (int j = 0; j < parts; j++)
            if (strcmp(s->stage[j], stage->name) == 0) total += vit_param_numel(s, cfg) / parts;
    }
    return total;
}
// [vit_stage_params]

char *vit_stage_name(char *buf, size_t size, const VitStage *stage, int block) {
    if (stage->per_block) snprintf(buf, size, "blocks.%d.%s", block, stage->name);
    else snprintf(buf, size, "%s", stage->name);
    return buf;
}

char *vit_stage_grad_name(char *buf, size_t size, const VitStage *stage, int block) {
    char name[64];
    snprintf(buf, size, VIT_GRAD_PREFIX "%s", vit_stage_name(name, sizeof name, stage, block));
    return buf;
}

double vit_stage_bytes(const VitConfig *cfg, int B, const char *name) {
    int shape[4], ndim = vit_stage_shape(cfg, B, name, shape);
    double numel = ndim > 0 ? 1 : 0;
    for (int d = 0; d < ndim; d++) numel *= shape[d];
    return numel * sizeof(float);
}

// Sum of a per-stage measure over one forward pass: block stages once per block
// (every block has the same shapes, so block 0 stands for all).
static double sum_over_pass(const VitConfig *cfg, int B,
                            double (*measure)(const VitConfig *, int, const char *)) {
    double total = 0;
    for (int i = 0; i < STAGE_COUNT; i++) {
        char name[64];
        vit_stage_name(name, sizeof name, &stages[i], 0);
        total += measure(cfg, B, name) * (stages[i].per_block ? cfg->depth : 1);
    }
    return total;
}

double vit_forward_flops(const VitConfig *cfg, int B) {
    return sum_over_pass(cfg, B, vit_stage_flops);
}

double vit_trace_bytes(const VitConfig *cfg, int B) {
    return sum_over_pass(cfg, B, vit_stage_bytes);
}

int vit_trace_length(const VitConfig *cfg) {
    int per_block = 0, outside = 0;
    for (int i = 0; i < STAGE_COUNT; i++) {
        if (stages[i].per_block) per_block++;
        else outside++;
    }
    return outside + per_block * cfg->depth;
}
