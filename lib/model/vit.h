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
 * block.h and params.h, so `#include "model/vit.h"` is all a program needs.
 *
 * Where things are, in lib/model: the forward pass in forward.c, and a pass
 * restarted at any block in forward_rest.c; activations
 * and position resizing in vit_memory.c; loading in weights.c; random
 * initialisation in init.c; saving in params_save.c; the sizes in config.c;
 * the parameter table in params.c; one block in block.c; the switches that
 * turn heads off in head_off.c. The backward pass (@ref backward), declared
 * here and defined in lib/backward: vit_backward() in backward.c, a block's in
 * block_backward.c, attention's in mha_backward.c, the gradient buffers in
 * grads.c. In lib/train: the optimizer (optim.h); training on several threads
 * with the batch split (shards.h) wraps a model from outside: the model does
 * not know it.
 *
 * Deliberately omitted: dropout and drop-path (identity at inference, and
 * left out of training too), distillation tokens, register tokens, global
 * average pooling, layer scale, relative position biases.
 */
#ifndef VIT_VIT_H
#define VIT_VIT_H

#include <stdint.h>

#include "base/tensor.h"
#include "base/trace.h"
#include "base/util.h"
#include "attention/attention.h"
#include "io/safetensors.h"
#include "model/block.h"
#include "model/config.h"
#include "model/params.h"
#include "model/tokens.h"

/** @defgroup vit Vision Transformer
 *  @brief \f$ \text{logits} = \mathrm{head}(\mathrm{LN}(\mathrm{Block}^{L}([x_{cls}; x_p W_E] + E_{pos}))_0) \f$
 *
 *  Taught in @ref chapter07 "chapter 07" (the [cls] token and positions),
 *  @ref chapter08 "chapter 08" (the encoder block), @ref chapter09 "chapter 09" (the whole
 *  forward pass). Pinned by the suites @ref test_vit.c "vit",
 *  @ref test_ch09_vit_base.c "ch09_vit_base", @ref test_head_off.c "head_off" (@ref answer_keys
 *  "the answer keys").
 *  @{
 */

/**
 * What the forward pass keeps for the backward pass (vit_train_prepare()).
 *
 * The backward of a block reads ten of its activations (norm1, q, k, v,
 * probs, context, resid1, norm2, fc1, gelu) and its input. Inference keeps
 * none of them: every block reuses one set of buffers. Training must either
 * keep them for every block, or keep only each block's input and compute the
 * rest again, block by block, during the backward ("activation
 * checkpointing", PyTorch's torch.utils.checkpoint): the same gradients, one
 * more forward pass of the blocks, a fraction of the memory. Per image and
 * block, keeping everything costs 7·N·D + 2·N·M + H·N² floats, keeping the
 * inputs N·D (docs: @ref contract_grad_memory).
 */
typedef enum {
    VIT_KEEP_NONE,   /**< inference (the default): blocks share one set of buffers, no backward */
    VIT_KEEP_ALL,    /**< training: every block keeps what its backward reads; the fastest */
    VIT_KEEP_INPUTS, /**< training: only each block's input is kept, the backward recomputes
                          the rest; one more forward of the blocks, far less memory */
} VitKeep;

/** What vit_train_prepare() chooses when asked for no particular VitKeep, and what
 *  vit_forward_backward() uses on a model not prepared: the faster one (vit_train_prepare()). */
#define VIT_KEEP_DEFAULT VIT_KEEP_ALL

/**
 * The backward pass's working memory: d(loss)/d(activation) for the
 * activations of the same names, carved from VitActivations::memory when a
 * model is prepared for training. Each buffer is handed to the trace as
 * `grad.` + its stage's name.
 */
typedef struct {
    float *logits;      /**< (B, Y) d loss / d logits, what the loss gives */
    float *pre_logits;  /**< (B, D) */
    float *norm;        /**< (B, N, D): zero but for the [cls] rows */
    float *x[2];        /**< (B, N, D) the residual stream's gradient, ping-ponged between blocks */
    VitBlockActs block; /**< a block's gradients under its activations' names, reused by every
                             block; attn and fc2 stay unused, their gradients being
                             those of resid1 and of the block's output */
    float *patch_embed; /**< (B, P, D) */
    float *input;       /**< (B, C, S, S), computed only when a trace listens */
} VitGradActs;

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
    VitKeep keep;       /**< what these buffers keep for the backward (Vit::keep when carved) */
    float *stream;      /**< training: (L + 1, B, N, D), row i the input of block i, row L the
                             last block's output (x[0] and x[1] are its first rows); else NULL */
    size_t stream_floats; /**< B·N·D, one row of stream */
    VitBlockActs *blocks; /**< VIT_KEEP_ALL: (L) each block's own buffers for what its backward
                               reads (the rest shared with block); else NULL */
    VitGradActs grad;   /**< training: the backward's buffers; all NULL for inference */
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
    VitKeep keep;            /**< what vit_forward() keeps for vit_backward(): VIT_KEEP_NONE
                                  (inference) unless vit_train_prepare() said otherwise */
    bool *heads_off;         /**< (L, H) vit_set_head_off(): true where a head is switched
                                  off; row l is block l's AttentionWeights::head_off (owned,
                                  allocated at the first switch), or NULL: every head on */
    LowpPrecision precision; /**< the number its Linear layers run in (vit_set_precision()):
                                  LOWP_FP32, the default, or LOWP_BF16, LOWP_INT8 */
    LowpWeight *lowp;        /**< (6·L + 1) the Linear weights' copies in that number, block by
                                  block q, k, v, proj, fc1, fc2, then the head (owned); NULL in fp32 */
    bool int8_only;          /**< loaded from a quantized file (vit_save_int8()): its int8
                                  Linears have no float weight (their pointers are NULL) until
                                  vit_set_precision() asks for fp32 or bf16 */
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
 *        in the order of timm's state_dict (params_save.c; vit_weights_params() on
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
 * @brief Queue the parameters with timm's names, and the num_heads,
 *        layer_norm_eps and format metadata, on @p wr: vit_save() without the
 *        write, for a file that carries more (a training checkpoint, train.h).
 * @return VIT_ERR_INPUT for a model whose q, k and v are apart (not re-fused)
 */
VitStatus vit_writer_add(StWriter *wr, const Vit *vit, VitError *err);
/** @brief The metadata every weights file we write carries: num_heads and
 *         layer_norm_eps (in no tensor's shape) and format "pt". */
void vit_writer_meta(StWriter *wr, const Vit *vit);

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
 * @brief The rest of a pass from a given residual stream: blocks @p first …
 *        L−1, the final LayerNorm, the [cls] rows and the head (forward_rest.c).
 *
 * vit_forward()'s steps 4 to 7 started at block @p first instead of block 0,
 * on a stream the caller hands in: "what would the model answer if the stream
 * entering block @p first were this?" (activation patching, patching.h).
 * They are written again in forward_rest.c, so that forward.c stays one
 * recipe (and the one file exercise 09 asks for); the suite `patching` holds
 * the two to the same bits: given the stream a pass had there, the logits are
 * that pass's.
 * @param[in] stream  (B, N, D) the residual stream entering block @p first
 *                    (for @p first = L: the last block's output)
 * @param[in] first   0 … L
 * @param[in] B       images in @p stream, ≥ 1
 * @param[in] trace   hears the stages from blocks.{first} on (NULL: nobody listens)
 * @return VIT_ERR_USAGE for @p first outside 0 … L or @p B < 1; VIT_ERR_INPUT when the
 *         activations cannot be had. Otherwise the logits are in vit_logits().
 */
VitStatus vit_forward_from(Vit *vit, const float *stream, int first, int B, TraceFn trace,
                           void *user, VitError *err);
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

/**
 * @brief "What if this head were not there?": switch head @p head of layer
 *        @p layer off (or on again) for the passes that follow (head_off.c).
 *
 * A head that is off keeps its scores and its softmax, and then has its
 * probabilities multiplied by 0, as Hugging Face's `head_mask` does with a 0
 * (Michel et al. 2019, "Are Sixteen Heads Really Better than One?"):
 * \f[ P_{lh} = m_{lh}\,\mathrm{softmax}(S'_{lh}), \qquad m_{lh} \in \{0, 1\} \f]
 * so its context is 0 and it adds nothing through the output projection. The
 * trace shows it: that head's `attn.probs` are 0 (its rows sum to 0, not 1)
 * and its Dh-wide band of `attn.context` is 0. Heads that are on are computed
 * bit for bit as in a model with every head on. vit_backward() gives the
 * gradient of the switched model (autograd's for the 0/1 mask): nothing flows
 * through a head that is off, so its rows of the q, k and v weights get 0.
 *
 * The switches live in the model (Vit::heads_off) and in its block table, so
 * they hold across vit_resize_positions(), and for the replicas of
 * vit_shards_new() (shards.h), which share that table, whether they were made
 * before or after the switch. Training with a head off trains the rest without it
 * (its own weights get no gradient, though AdamW's weight decay still shrinks
 * them). The switches are not parameters: vit_save() does not write them.
 * @param[in] layer  the block, 0 … L−1
 * @param[in] head   the head, 0 … H−1, or −1 for every head of the layer
 * @param[in] off    true: switch it off; false: on again
 * @return VIT_ERR_USAGE for a layer or head outside the model (the message
 *         says which there are), with nothing changed
 */
VitStatus vit_set_head_off(Vit *vit, int layer, int head, bool off, VitError *err);
/**
 * @brief Run the model's Linear layers in a smaller number: every block's q,
 *        k, v, proj, fc1 and fc2 and the head (chapter 15, precision.c).
 *
 * LOWP_INT8: each weight quantized once, symmetric, one scale per output
 * channel; each activation row (token) quantized at every call with its own
 * scale, the products summed exactly in int32 (linear_s8(), PyTorch's
 * dynamic quantization but per token and per channel). LOWP_BF16: weights
 * and activations rounded to bf16, the products summed in float
 * (linear_bf16()). LOWP_FP32 drops the copies: the model as loaded. The patch
 * embedding (a convolution, as PyTorch's dynamic quantization leaves it),
 * LayerNorm, softmax, GELU and the residual additions stay in float; the
 * float weights stay too, for the parameter table and vit_save().
 *
 * A model loaded from a quantized file (Vit::int8_only) is in int8 as
 * loaded, and LOWP_INT8 leaves it so; LOWP_FP32 or LOWP_BF16 first gives its
 * int8 Linears float weights, q · scale, which the model then keeps.
 *
 * Inference only: a model prepared for training (vit_train_prepare()) is
 * refused, and vit_train_prepare() refuses to prepare a model in bf16 or
 * int8 for training (VIT_KEEP_NONE, inference, it accepts). The copies are
 * of the weights as they are at the call: a model whose weights change
 * afterwards (a film's frame) is to be set to fp32 first, then again. Pinned against
 * PyTorch by the suite @ref test_precision.c "precision".
 * @return VIT_ERR_USAGE, with nothing changed, for a model prepared for
 *         training or a precision that is none of the three
 */
VitStatus vit_set_precision(Vit *vit, LowpPrecision precision, VitError *err);
/** The `__metadata__` key naming a quantized file's scheme (vit_save_int8()). */
#define VIT_QUANT_KEY "quantization"
/** The one scheme this build writes and reads: int8 weights (ST_I8), symmetric, one float32
 *  scale per output channel stored beside each as "<name>_scale" (O). */
#define VIT_QUANT_INT8 "int8-per-channel-symmetric"
/**
 * @brief Write the model to @p path with every Linear weight in int8 (`vit quantize`).
 *
 * Each block's qkv, proj, fc1 and fc2 weight and the head's become an I8
 * tensor (O, D) quantized as vit_set_precision(LOWP_INT8) quantizes it, with a
 * float32 tensor "<name>_scale" (O) beside it; everything else (the patch
 * embedding, the tokens, LayerNorms, biases) stays float32, under timm's
 * names, with q, k and v fused. The metadata keeps the model's own
 * (num_heads, layer_norm_eps, and whatever else the file it came from had)
 * and adds VIT_QUANT_KEY = VIT_QUANT_INT8, and "preprocess" for a Hugging
 * Face or torchvision model (whose images are prepared as its ecosystem does,
 * which its names no longer say), and "class_names" from the config.json
 * beside a Hugging Face file (id2label), which the new file has not beside it. A row of zeros, whose scale would
 * be 0, is stored with scale 1 (its q are 0 either way): the loader refuses a
 * scale that is not a positive finite number. vit_build() loads the file:
 * the model runs in int8 straight from the stored weights, without float
 * copies (Vit::int8_only). Written atomically, like vit_save().
 */
VitStatus vit_save_int8(const Vit *vit, const char *path, VitError *err);
/** @brief Bytes of the copies vit_set_precision() made (0 in fp32): for int8, the
 *         weights, their scales and row sums, and the weights packed once for the VNNI path. */
size_t vit_lowp_bytes(const Vit *vit);

/** @brief Switch every head of every layer on again: the model computes as before any switch. */
void vit_heads_all_on(Vit *vit);
/** @brief How many heads are switched off, over all layers: 0 when none is. */
int vit_heads_off_count(const Vit *vit);

/** @} */

/** @defgroup backward Backward pass
 *  @brief The gradient of the loss with respect to every parameter and every
 *         stage: the forward recipe run backwards, one chain rule per stage.
 *
 *  Each stage \f$y = f(x, \theta)\f$ of the forward pass, run backwards, turns
 *  the gradient of its output into the gradients of its input and of its parameters,
 *  \f[ \frac{\partial \ell}{\partial x} = \Big(\frac{\partial y}{\partial x}\Big)^{\!\top}
 *      \frac{\partial \ell}{\partial y}, \qquad
 *      \frac{\partial \ell}{\partial \theta} \mathrel{+}=
 *      \Big(\frac{\partial y}{\partial \theta}\Big)^{\!\top} \frac{\partial \ell}{\partial y} \f]
 *  and a tensor that feeds two stages (the residual stream feeds a sub-layer
 *  and the add after it) gets the sum of both gradients. The stages' own
 *  backward functions are beside their forwards (ops.h, attention.h, patch.h,
 *  tokens.h); this group chains them: attention (mha_backward()), a block
 *  (vit_block_backward()), the model (vit_backward()).
 *
 *  A training step (optim.h does the last line):
 *  @code
 *  VitGrads grads;
 *  vit_train_prepare(&vit, VIT_KEEP_DEFAULT, B, &err);  // keep what the backward reads
 *  vit_grads_init(&grads, &vit, &err);
 *  vit_grads_zero(&grads);                             // gradients accumulate
 *  float loss;
 *  vit_forward_backward(&vit, &grads, &images, labels, 0.1f, &loss, NULL, NULL, &err);
 *  // ... optim_clip_grad_norm(), adamw_step() ...
 *  @endcode
 *
 *  Taught in @ref chapter10 "chapter 10" (the chain rule through the model). Pinned by the
 *  suites @ref test_vit_backward.c "vit_backward", @ref test_backward.c "backward",
 *  @ref test_ch10_learning.c "ch10_learning" (@ref answer_keys "the answer keys").
 *  @{
 */

/**
 * @brief Gradient buffers: d loss / d θ for every parameter θ of a model, one
 *        allocation carved like its weights.
 *
 * weights is a VitGradWeights: VitWeights' fields with writable pointers, q, k
 * and v fused or split as the model holds them, each tensor in one piece. So
 * the parameter table walks it as it walks the weights:
 * vit_grad_weights_params() lists the gradients under the parameters' (timm)
 * names, and adamw_init_vit() pairs each with its parameter.
 */
typedef struct {
    VitGradWeights weights; /**< the gradient of each parameter, in the parameter's field */
    float *memory;      /**< the one allocation: the tensors in timm's state_dict order */
    size_t floats;      /**< its size in floats, vit_param_count() */
    int count;          /**< tensors, as vit_weights_params() counts the model's */
} VitGrads;

/**
 * @brief Allocate zeroed gradients for every parameter of @p vit, laid out like its weights.
 *
 * The tensors are the model's own list (vit_weights_params(), the parameter
 * table): nothing is listed twice. Build them again after vit_resize_positions().
 * @param[out] g  free with vit_grads_free()
 * @return VIT_ERR_INPUT when the memory cannot be had (checked before it is taken)
 */
VitStatus vit_grads_init(VitGrads *g, const Vit *vit, VitError *err);
/** @brief Set every gradient to 0: once per step, since the backward adds to them. */
void vit_grads_zero(VitGrads *g);
/** @brief Free the gradients and zero @p g (safe on a zeroed or freed one). */
void vit_grads_free(VitGrads *g);

/**
 * @brief Prepare a model for training: from now on vit_forward() keeps what
 *        vit_backward() needs, as @p keep says, for batches of @p B.
 *
 * The activations are allocated now (their memory checked first), so a
 * batch that does not fit is known before the first step; another batch size
 * reallocates them at the next vit_forward(). VIT_KEEP_NONE returns the model
 * to inference (its buffers freed and carved again, smaller). Measured on the
 * Fashion-MNIST configuration (@ref contract_grad_memory), VIT_KEEP_ALL is the
 * faster, VIT_KEEP_INPUTS the smaller; the logits are the same either way.
 * @param[in] keep  VIT_KEEP_ALL, VIT_KEEP_INPUTS, or VIT_KEEP_NONE
 * @param[in] B     the batch size, ≥ 1
 * @return VIT_ERR_INPUT when the activations do not fit (the message says how much they need)
 */
VitStatus vit_train_prepare(Vit *vit, VitKeep keep, int B, VitError *err);

/**
 * @brief Bytes of the activations for a batch of @p B when keeping @p keep:
 *        vit_activation_bytes() for VIT_KEEP_NONE; for training, every block's
 *        input or every block's activations besides, and the backward's buffers.
 */
double vit_training_bytes(const VitConfig *cfg, int B, VitKeep keep);

/**
 * @brief The backward pass: from d loss / d logits, the gradient of every
 *        parameter (added to @p grads) and of every stage (handed to @p trace).
 *
 * Runs after a vit_forward() of a model prepared for training, on the batch
 * that forward saw. The gradients are ADDED to @p grads (zero them once per
 * step with vit_grads_zero(); several batches in a row accumulate, as
 * PyTorch's .grad does). Each stage's gradient goes to @p trace as `grad.` +
 * the stage's name, in backward order: `grad.logits` first, then
 * `grad.pre_logits`, `grad.norm`, each block from the last, and `grad.input`
 * last; `grad.input` is only computed when someone listens (training needs no
 * gradient of the pixels). The names are in the contract (@ref contract_grad).
 * @param[in,out] grads    laid out for this model (vit_grads_init()), added to
 * @param[in]     dlogits  (B, Y) d loss / d logits, e.g. from loss_cross_entropy()
 * @param[in]     trace    receives each stage's gradient (NULL: nobody listens)
 * @return VIT_ERR_INPUT when the model was not prepared for training, the last
 *         forward kept nothing, or @p grads belongs to another layout
 */
VitStatus vit_backward(Vit *vit, VitGrads *grads, const float *dlogits, TraceFn trace, void *user,
                       VitError *err);

/**
 * @brief One batch's loss and gradients: vit_forward(), loss_cross_entropy(), vit_backward().
 *
 * What a training step computes before the optimizer: PyTorch's
 * `loss = F.cross_entropy(model(x), targets, label_smoothing=smoothing);
 * loss.backward()`. A model not prepared for training is prepared with
 * VIT_KEEP_DEFAULT. The gradients are added to @p grads (zero them first).
 * @p trace hears the forward's stages, then the backward's `grad.` ones.
 * @param[in]  input      (B, C, S, S) normalised pixels
 * @param[in]  targets    (B) the class of each image, each in [0, Y)
 * @param[in]  smoothing  label smoothing ε in [0, 1]; 0 for the plain cross-entropy
 * @param[out] loss       the batch's mean loss, in nats
 * @return VIT_ERR_INPUT for a target outside [0, Y), a smoothing outside
 *         [0, 1], or as vit_forward() and vit_backward()
 */
VitStatus vit_forward_backward(Vit *vit, VitGrads *grads, const Tensor *input, const int *targets,
                               float smoothing, float *loss, TraceFn trace, void *user,
                               VitError *err);

/** @} */
#endif
