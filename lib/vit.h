/**
 * @file vit.h
 * @brief The Vision Transformer: configuration, weights, activations, forward pass.
 *
 * Shape legend: B batch, C channels (3), S image side, p patch side,
 * P = (S/p)² patches, N = P + 1 tokens (cls first), D width, H heads,
 * Dh = D/H, M = MLP width (4D), L depth, Y classes (the book's glossary).
 *
 * The forward pass (vit_forward) reads as timm's VisionTransformer.forward:
 *   patch_embed → prepend cls → + pos_embed → L × block → norm → x[:, 0] → head
 * and a block as timm's Block (pre-norm):
 *   x = x + attn(norm1(x));  x = x + mlp(norm2(x)),  mlp = fc2(gelu(fc1(·)))
 * Every intermediate is handed to a TraceFn under the names of the trace contract (@ref contract).
 *
 * Three structs (llama2.c, llm.c): VitConfig (sizes), VitWeights (borrowed
 * pointers, usually into the mmap of a safetensors file), VitActivations (one
 * allocation carved into named buffers). Vit holds all three and owns what
 * they point to.
 *
 * Deliberately omitted: dropout and drop-path (identity at inference),
 * distillation tokens, register tokens, global average pooling, layer scale,
 * relative position biases, training.
 */
#ifndef VIT_VIT_H
#define VIT_VIT_H

#include <stdint.h>

#include "attention.h"
#include "safetensors.h"
#include "tensor.h"
#include "trace.h"
#include "util.h"

/** @defgroup vit Vision Transformer
 *  @brief \f$ \text{logits} = \mathrm{head}(\mathrm{LN}(\mathrm{Block}^{L}([x_{cls}; x_p W_E] + E_{pos}))_0) \f$
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

/** One encoder block's parameters; borrowed pointers. */
typedef struct {
    const float *norm1_w;  /**< (D) LayerNorm 1 scale */
    const float *norm1_b;  /**< (D) LayerNorm 1 shift */
    AttentionWeights attn; /**< q/k/v (D,D) + (D), proj (D,D) + (D) */
    const float *norm2_w;  /**< (D) LayerNorm 2 scale */
    const float *norm2_b;  /**< (D) LayerNorm 2 shift */
    const float *fc1_w;    /**< (M, D) */
    const float *fc1_b;    /**< (M) */
    const float *fc2_w;    /**< (D, M) */
    const float *fc2_b;    /**< (D) */
} VitBlockWeights;

/** All parameters; borrowed pointers (into a mapped file or Vit's own memory). */
typedef struct {
    const float *patch_w;    /**< (D, C, p, p) patch projection (a stride-p convolution) */
    const float *patch_b;    /**< (D) */
    const float *cls_token;  /**< (D) the learnable [cls] token */
    const float *pos_embed;  /**< (N, D) position embeddings, cls position first */
    VitBlockWeights *blocks; /**< L blocks */
    const float *norm_w;     /**< (D) final LayerNorm scale */
    const float *norm_b;     /**< (D) final LayerNorm shift */
    const float *head_w;     /**< (Y, D) classifier */
    const float *head_b;     /**< (K) */
} VitWeights;

/** Working memory of one block; every buffer is traced. */
typedef struct {
    float *norm1;   /**< (B, N, D) */
    MhaScratch mha; /**< q, k, v, scores, scaled, probs, context */
    float *attn;    /**< (B, N, D) attention output (after proj) */
    float *resid1;  /**< (B, N, D) x + attn */
    float *norm2;   /**< (B, N, D) */
    float *fc1;     /**< (B, N, M) */
    float *gelu;    /**< (B, N, M) */
    float *fc2;     /**< (B, N, D) */
} VitBlockActs;

/** Activations for a batch of B images: one allocation, carved. */
typedef struct {
    int batch;          /**< B these buffers are sized for */
    float *memory;      /**< the one allocation */
    size_t floats;      /**< its size in floats */
    float *patches;     /**< (B, P, C·p·p) unfolded patches */
    float *patch_embed; /**< (B, P, D) */
    float *tokens;      /**< (B, N, D) cls prepended */
    float *x[2];        /**< (B, N, D) the residual stream, ping-ponged between blocks */
    VitBlockActs block; /**< reused by every block */
    float *norm;        /**< (B, N, D) final LayerNorm */
    float *pre_logits;  /**< (B, D) cls rows */
    float *logits;      /**< (B, Y) */
} VitActivations;

/** How one canonical (timm) parameter was found in the weights file. */
typedef struct {
    char canonical[64]; /**< timm name, e.g. "blocks.0.attn.qkv.weight" */
    char source[96];    /**< name in the file, e.g. "vit.encoder.layer.0.attention.attention.query.weight" */
    const char *how;    /**< "mapped in place", "converted from BF16", "zeros (missing bias)", … */
} VitMapEntry;

/** A ready-to-run model. Zero-initialise, then vit_build() or vit_build_random(). */
typedef struct {
    VitConfig config;        /**< sizes */
    VitWeights weights;      /**< pointers into the file or into owned buffers */
    VitActivations acts;     /**< working memory, grown on demand */
    SafeTensors file;        /**< the mapped weights file, when loaded from one */
    float **owned;           /**< parameter buffers the model allocated: random init,
                                  converted (BF16/F16) or zero (missing bias) tensors */
    int owned_count;         /**< entries in owned */
    char source[32];         /**< "timm", "hf", "torchvision" or "random" */
    float *pos_resized;      /**< owned position table after vit_resize_positions(), or NULL */
    char *config_json;       /**< the Hugging Face config.json that was read (owned), or NULL */
    char heads_from[64];     /**< where vit_build() found H, e.g. "__metadata__ num_heads" */
    char eps_from[64];       /**< where it found the LayerNorm eps */
    VitMapEntry *map;        /**< what vit_build() mapped, for `vit info` */
    int map_count;           /**< entries in map */
} Vit;

/** How vit_build_random() draws the parameters. */
typedef struct {
    uint64_t seed;   /**< PCG32 seed */
    float std;       /**< trunc-normal std of weights, cls and pos, e.g. 0.02 (timm) */
    float bias_std;  /**< normal std of biases: 0 in timm's init; > 0 exercises them in tests */
    float norm_std;  /**< noise on LayerNorm scale/shift around 1/0: 0 in timm; > 0 in tests */
} VitInit;

/** @brief timm's init: std 0.02, zero biases, identity LayerNorms. */
VitInit vit_init_timm(uint64_t seed);

/**
 * @brief The configuration of a named architecture.
 * @param[in] arch  "vit-base" (D 768, L 12, H 12), "vit-small" (384, 12, 6) or
 *                  "vit-tiny" (192, 12, 3); all patch 16, image 224, 1000 classes
 * @return VIT_ERR_USAGE for an unknown name
 */
VitStatus vit_config_for_arch(VitConfig *cfg, const char *arch, VitError *err);
/** @brief Check a configuration: positive sizes, D divisible by H, S by p. */
VitStatus vit_config_check(const VitConfig *cfg, VitError *err);
/** @brief Patches P = (S/p)². */
int vit_num_patches(const VitConfig *cfg);
/** @brief Tokens N = P + 1. */
int vit_num_tokens(const VitConfig *cfg);
/** @brief Number of parameters, e.g. 86,567,656 for ViT-B/16 with 1000 classes. */
int64_t vit_param_count(const VitConfig *cfg);

/**
 * @brief Load a model from a safetensors file (timm, Hugging Face or torchvision names).
 * @return VIT_ERR_INPUT with a message naming the file and the problem.
 */
VitStatus vit_build(Vit *vit, const char *weights_path, VitError *err);
/**
 * @brief Like vit_build() for a file already opened with st_open() or st_parse();
 *        the Vit takes it over (and closes it in vit_free()), whatever the outcome.
 */
VitStatus vit_build_from(Vit *vit, SafeTensors *file, VitError *err);
/**
 * @brief Run the model at another input size by resampling the position embeddings.
 *
 * The P = (S/p)² patch positions form a grid; they are resized to the new grid
 * with antialiased bicubic interpolation (timm's resample_abs_pos_embed, which
 * calls F.interpolate(mode="bicubic", antialias=True)); the cls position is kept.
 * @param[in] image_size  the new S, a multiple of the patch size
 */
VitStatus vit_resize_positions(Vit *vit, int image_size, VitError *err);
/** @brief Build a model with freshly drawn parameters. */
VitStatus vit_build_random(Vit *vit, const VitConfig *cfg, const VitInit *init, VitError *err);
/** One parameter tensor of a model, under its timm name. */
typedef struct {
    char name[64];      /**< e.g. "blocks.0.attn.qkv.weight" */
    const float *data;  /**< its values (borrowed from the model) */
    int ndim;           /**< dimensions, as timm stores it, e.g. 3 for cls_token (1, 1, D) */
    int shape[4];       /**< sizes */
    size_t numel;       /**< values */
} VitParam;

/**
 * @brief Every parameter tensor, in the order of timm's state_dict.
 *
 * q, k and v are one fused "attn.qkv" tensor, as timm stores them, unless the
 * model keeps them apart (loaded from Hugging Face): then "attn.q", "attn.k"
 * and "attn.v".
 * @param[out] out  vit_params(vit, NULL) entries, or NULL to count them
 * @return the number of parameter tensors, 4 + 12·L + 4 when fused
 */
int vit_params(const Vit *vit, VitParam *out);
/** @brief Write the parameters with timm's names (and num_heads/layer_norm_eps metadata). */
VitStatus vit_save(const Vit *vit, const char *path, VitError *err);

/**
 * @brief Run the model on a batch; every intermediate goes to @p trace.
 * @param[in] input  (B, C, S, S) normalised pixels, B ≥ 1
 * @param[in] trace  receives each stage (NULL: nobody listens)
 * @return VIT_ERR_INPUT if the input shape does not fit the configuration, or
 *         the activations for this batch cannot be had (the message says how
 *         much they need). Otherwise the logits are in vit->acts.logits, see vit_logits().
 */
VitStatus vit_forward(Vit *vit, const Tensor *input, TraceFn trace, void *user, VitError *err);
/**
 * @brief After vit_forward(): VIT_OK when every logit is a finite number.
 *
 * Otherwise the pass is run again on the same @p input with a listener that
 * finds the first stage holding a NaN or an infinity, and the parameters are
 * searched for one, so the message says where the trouble starts: "the
 * logits are not finite (10 NaN of 10): the first stage with NaN or infinity
 * is blocks.0.attn.q (64 NaN); the weights hold them, first in
 * 'blocks.0.attn.qkv.weight' (1 NaN of 12,288 values)".
 * @return VIT_OK, or VIT_ERR_INPUT with that message.
 */
VitStatus vit_check_finite(Vit *vit, const Tensor *input, VitError *err);
/** @brief The logits of the last forward pass, a view (B, Y) into the activations. */
Tensor vit_logits(const Vit *vit);
/** @brief Free everything the model owns and zero it. */
void vit_free(Vit *vit);

/** @brief Bytes of the activations vit_forward() allocates for a batch of @p B. */
double vit_activation_bytes(const VitConfig *cfg, int B);
/**
 * @brief Can this process run a batch of @p B at all? The one place that
 *        checks the token limit and the memory of a run, before anything is allocated.
 *
 * Counts the input batch (B, C, S, S), the activations and @p extra_bytes,
 * what the caller keeps besides (e.g. a copy of every stage, described by
 * @p extra_what: "a copy of every stage").
 * vit_forward() makes the same check of its activations; commands call this
 * first, before they decode images into a batch.
 * @return VIT_OK, or VIT_ERR_INPUT with a message that gives the tokens, the
 *         heads and the memory needed.
 */
VitStatus vit_check_batch(const VitConfig *cfg, int B, double extra_bytes, const char *extra_what,
                          VitError *err);

/** @brief Floats vit_block_acts_carve() needs for a batch of @p B. */
size_t vit_block_acts_floats(const VitConfig *cfg, int B);
/** @brief Point a block's buffers into @p mem (vit_block_acts_floats() floats). */
void vit_block_acts_carve(VitBlockActs *a, float *mem, const VitConfig *cfg, int B);

/**
 * @brief One pre-norm encoder block (timm `Block.forward`).
 *
 * Emits with the tracer's prefix (e.g. "blocks.3."): norm1, attn.{q,k,v,scores,
 * scaled,probs,context,proj}, resid1, norm2, mlp.fc1, mlp.gelu, mlp.fc2, out.
 * @param[out] out  (B, N, D)
 * @param[in]  x    (B, N, D)
 */
void vit_block_forward(float *out, const float *x, const VitBlockWeights *w,
                       const VitConfig *cfg, VitBlockActs *a, int B, const Tracer *tr);

/** @} */
#endif
