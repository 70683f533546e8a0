/**
 * @file vit.h
 * @brief The Vision Transformer: the model, its lifecycle and its forward pass.
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
 * Three structs (llama2.c, llm.c): VitConfig (sizes, config.h), VitWeights
 * (borrowed pointers, usually into the mmap of a safetensors file, params.h),
 * VitActivations (one allocation carved into named buffers, here). Vit holds
 * all three and owns what they point to. This header includes config.h,
 * block.h and params.h, so `#include "vit.h"` is all a program needs.
 *
 * Where things are: the forward pass, activations and position resizing in
 * vit.c; loading in weights.c; random initialisation in init.c; saving in
 * save.c; the sizes in config.c; the parameter table in params.c; one block
 * in block.c.
 *
 * Deliberately omitted: dropout and drop-path (identity at inference),
 * distillation tokens, register tokens, global average pooling, layer scale,
 * relative position biases, training.
 */
#ifndef VIT_VIT_H
#define VIT_VIT_H

#include <stdint.h>

#include "attention.h"
#include "block.h"
#include "config.h"
#include "params.h"
#include "safetensors.h"
#include "tensor.h"
#include "tokens.h"
#include "trace.h"
#include "util.h"

/** @defgroup vit Vision Transformer
 *  @brief \f$ \text{logits} = \mathrm{head}(\mathrm{LN}(\mathrm{Block}^{L}([x_{cls}; x_p W_E] + E_{pos}))_0) \f$
 *  @{
 */

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

/**
 * How vit_build_random() draws the parameters (init.c).
 *
 * One rule for every weight: the patch projection, cls_token, pos_embed and
 * every linear layer (q, k, v, proj, fc1, fc2, head) are drawn from one
 * truncated normal, mean 0 and standard deviation VitInit::std (0.02), cut
 * at ±2 (absolute values, as timm's trunc_normal_ cuts them: 100 standard
 * deviations at 0.02, so hardly ever reached). Biases are zero, LayerNorm
 * scales 1 and shifts 0, unless bias_std or norm_std ask for noise (the
 * tests do, so that every tensor matters).
 *
 * This is close to timm's init, not the same. Current timm
 * (VisionTransformer.init_weights, default mode) draws cls_token from a
 * normal with std 1e-6, pos_embed and every linear layer's weight from a
 * truncated normal with std 0.02 (linear biases zero, LayerNorms 1 and 0),
 * and leaves the patch convolution patch_embed.proj at PyTorch's default
 * for a Conv2d: kaiming-uniform weights and a uniform bias, both within
 * ±1/√(C·p·p). We keep one rule for every weight because it is one sentence
 * to learn, and because each tensor comes from its own PCG32 stream (rng.h),
 * which tools/vitrng.py reproduces bit for bit in Python, so the PyTorch
 * goldens are made from exactly these numbers. Changing the rule would
 * change every number the chapters print.
 */
typedef struct {
    uint64_t seed;   /**< PCG32 seed: tensor i of the forward order uses seed·1000003 + i */
    float std;       /**< trunc-normal std of every weight (patch, cls, pos, linear), e.g. 0.02 */
    float bias_std;  /**< normal std of biases: 0 in timm's init; > 0 exercises them in tests */
    float norm_std;  /**< noise on LayerNorm scale/shift around 1/0: 0 in timm; > 0 in tests */
} VitInit;

/**
 * @brief The init the chapters and `vit make-weights` use: every weight
 *        trunc-normal with std 0.02 (cut at ±2), zero biases, LayerNorm
 *        scale 1 and shift 0.
 *
 * timm's own init differs in three tensors: cls_token (normal, std 1e-6) and
 * the patch convolution's weight and bias (PyTorch's kaiming-uniform
 * default); see VitInit for why we draw them like every other weight.
 */
VitInit vit_init_timm(uint64_t seed);

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
/**
 * @brief Build a model with freshly drawn parameters (init.c), as @p init says.
 *
 * The tensors are the rows of the parameter table (params.h) in forward
 * order, q, k and v fused as timm stores them; tensor i is drawn from its own
 * PCG32 stream seeded init->seed·1000003 + i, so the values do not depend on
 * threads or on the other tensors.
 * @return VIT_ERR_INPUT for a configuration vit_config_check() refuses
 */
VitStatus vit_build_random(Vit *vit, const VitConfig *cfg, const VitInit *init, VitError *err);
/**
 * @brief Every parameter tensor of the model with its name, shape and values,
 *        in the order of timm's state_dict (save.c; vit_weights_params() on
 *        the model's weights).
 *
 * q, k and v are one fused "attn.qkv" tensor, as timm stores them, unless the
 * model keeps them apart (loaded from Hugging Face): then "attn.q", "attn.k"
 * and "attn.v". Each entry names its row of the parameter table (params.h).
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

/** @} */
#endif
