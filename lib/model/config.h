/**
 * @file config.h
 * @brief VitConfig: the handful of sizes that define a Vision Transformer.
 *
 * Shape legend (the book's glossary): C channels, S image side, p patch side,
 * P = (S/p)² patches, N = P + 1 tokens, D width, H heads, Dh = D/H,
 * M MLP width, L depth, Y classes.
 *
 * Everything else (the parameters' shapes, the activations' sizes, the cost of
 * a pass) follows from these numbers. This header needs nothing of the model,
 * so the block (block.h), the parameter table (params.h) and the model (vit.h)
 * can all build on it.
 */
#ifndef VIT_CONFIG_H
#define VIT_CONFIG_H

#include "base/util.h"

/** @addtogroup vit
 *  @{
 */

/** Most tokens N a model may have: N² attention scores per head must stay affordable. */
#define VIT_MAX_TOKENS 16384

/** The sizes that define a ViT. */
typedef struct {
    int image_size;  /**< S, input side in pixels, e.g. 224 */
    int patch_size;  /**< p, patch side in pixels, e.g. 16 */
    int channels;    /**< C, colour channels, e.g. 3 */
    int dim;         /**< D, token width, e.g. 768 */
    int depth;       /**< L, number of encoder blocks, e.g. 12 */
    int heads;       /**< H, attention heads, e.g. 12 (Dh = D/H = 64) */
    int mlp_dim;     /**< M, hidden width of the MLP, e.g. 3072 (4·D) */
    int num_classes; /**< Y, classifier outputs, e.g. 1000 */
    float ln_eps;    /**< LayerNorm epsilon, e.g. 1e-6 (timm, torchvision) or 1e-12 (HF) */
} VitConfig;

/**
 * @brief The configuration of a named architecture.
 * @param[out] cfg  the sizes
 * @param[in] arch  "vit-base" (D 768, L 12, H 12), "vit-small" (384, 12, 6) or
 *                  "vit-tiny" (192, 12, 3); all patch 16, image 224, 1000 classes
 * @param[out] err  the message for an unknown name (may be NULL)
 * @return VIT_ERR_USAGE for an unknown name
 */
VitStatus vit_config_for_arch(VitConfig *cfg, const char *arch, VitError *err);
/** @brief Check a configuration: positive sizes, D divisible by H, S by p. */
VitStatus vit_config_check(const VitConfig *cfg, VitError *err);
/** @brief Patches P = (S/p)². */
int vit_num_patches(const VitConfig *cfg);
/** @brief Tokens N = P + 1. */
int vit_num_tokens(const VitConfig *cfg);

/** @} */
#endif
