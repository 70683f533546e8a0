/**
 * @file config.c
 * @brief The sizes of a ViT: named architectures, the checks every
 *        configuration passes, and the counts P and N that follow from S and p.
 *
 * Shape legend: S image side, p patch side, P = (S/p)² patches, N = P + 1
 * tokens, D width, H heads, M MLP width, L depth, Y classes.
 *
 * Deliberately omitted: non-square images and patches, and any size that is
 * not read from the tensors or the metadata (dropout rates and the like).
 */
#include "model/config.h"

#include <string.h>

int vit_num_patches(const VitConfig *c) {
    int grid = c->image_size / c->patch_size;
    return grid * grid;
}

int vit_num_tokens(const VitConfig *c) { return vit_num_patches(c) + 1; }

// [vit_config_for_arch]
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
// [vit_config_for_arch]

// [vit_config_check]
VitStatus vit_config_check(const VitConfig *c, VitError *err) {
    // generous limits, but limits: every size later becomes an allocation
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
// [vit_config_check]
