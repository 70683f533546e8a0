/**
 * @file params.h
 * @brief The model's parameters: VitWeights, where they live, and the one
 *        table that describes every parameter tensor.
 *
 * Shape legend: C channels, p patch side, N tokens, D width, M MLP width,
 * Y classes, L depth (the book's glossary).
 *
 * A ViT-B/16 holds 86,567,656 numbers in 152 tensors: 4 before the blocks
 * (patch projection weight and bias, [cls], positions), 12 in each of the
 * 12 blocks and 4 after them (final LayerNorm, head). One table in params.c
 * lists them, one row per tensor (a block's rows once, for every block):
 *
 * - its timm name, e.g. "attn.qkv.weight" (after "blocks.{i}." in a block);
 * - its shape, in the glossary's letters, e.g. "3D,D";
 * - the field of VitWeights or VitBlockWeights it fills;
 * - its kind (a weight, a bias, a LayerNorm scale or shift), which decides
 *   how vit_build_random() draws it and whether a file may leave it out;
 * - the trace stage that reads it (@ref stages);
 * - its names in Hugging Face and torchvision files.
 *
 * Everything that needs the list of parameters walks this table:
 * random initialisation (init.c), saving and vit_params() (params_save.c), the
 * loader's mapping for all three naming conventions (weights.c), and the two
 * counts, vit_param_count() and vit_stage_params(). To visit every parameter
 * tensor of a model with its name, shape and pointer, use vit_params() (a
 * list) or vit_param_iter() / vit_param_next() (a loop over the table):
 *
 * @code
 * VitParamIter it = vit_param_iter(cfg->depth, VIT_ORDER_FORWARD, VIT_QKV_FUSED);
 * for (const VitParamSpec *s; (s = vit_param_next(&it));) {
 *     char name[64];
 *     int shape[4], ndim = vit_param_shape(s, cfg, shape);
 *     printf("%s has %d dimensions\n", vit_param_name(name, sizeof name, s, it.block), ndim);
 * }
 * @endcode
 *
 * q, k and v come in two forms. timm and torchvision store one fused (3D, D)
 * tensor whose three row blocks are q, k and v: one row of the table in
 * three parts, each filling its own field and read by its own stage.
 * Hugging Face stores three (D, D) tensors: three rows. A model holds one
 * form or the other; VitQkvForm says which rows belong to which.
 *
 * Gradients have their own struct, VitGradWeights: VitWeights' fields, but
 * writable. Each row names its field once and records where it lies in both
 * structs, so the same table walks a model's gradients (vit_param_grad_slot(),
 * vit_grad_weights_params()) as it walks its weights.
 *
 * Deliberately omitted: optimizer state (AdamW keeps its own, optim.h),
 * parameters of ViT variants this project does not build (register tokens,
 * layer scale, …).
 */
#ifndef VIT_PARAMS_H
#define VIT_PARAMS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/block.h"
#include "model/config.h"

/** @defgroup params Parameters
 *  @brief Every parameter tensor of the model, in one table: name, shape,
 *         place, init, the stage that reads it, its names in three ecosystems.
 *
 *  \f[ \text{parameters} = \underbrace{D C p^2 + D}_{\text{patch}} + \underbrace{D + N D}_{\text{cls, pos}}
 *      + L\,(\underbrace{4D}_{\text{norms}} + \underbrace{4D^2 + 4D}_{\text{attention}}
 *      + \underbrace{2MD + M + D}_{\text{MLP}}) + \underbrace{2D}_{\text{norm}} + \underbrace{YD + Y}_{\text{head}} \f]
 *
 *  Taught in @ref chapter09 "chapter 09" (the parameter count). Pinned by the suites
 *  @ref test_params.c "params", @ref test_weights.c "weights" (@ref answer_keys "the answer
 *  keys").
 *  @{
 */

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
    const float *head_b;     /**< (Y) */
    const LowpWeight *head_lowp; /**< head_w in bf16 or int8 (vit_set_precision()), or NULL:
                                      head_w itself, in float. Not a parameter: a copy */
} VitWeights;

/**
 * The gradients of all parameters, d loss / d θ: VitWeights' fields, same
 * names, same order, same shapes, but writable (the backward adds to them).
 * VitGrads (vit.h) owns them.
 */
typedef struct {
    float *patch_w;        /**< (D, C, p, p) */
    float *patch_b;        /**< (D) */
    float *cls_token;      /**< (D) */
    float *pos_embed;      /**< (N, D) */
    VitBlockGrads *blocks; /**< L blocks */
    float *norm_w;         /**< (D) */
    float *norm_b;         /**< (D) */
    float *head_w;         /**< (Y, D) */
    float *head_b;         /**< (Y) */
} VitGradWeights;

/** What kind of number a parameter is: how it is drawn, and whether a file may omit it. */
typedef enum {
    VIT_PARAM_WEIGHT,     /**< a weight, also [cls] and the positions: truncated normal */
    VIT_PARAM_BIAS,       /**< a linear layer's b: zeros; zeros when a file lacks it */
    VIT_PARAM_NORM_SCALE, /**< a LayerNorm's γ: ones */
    VIT_PARAM_NORM_SHIFT, /**< a LayerNorm's β: zeros; zeros when a file lacks it */
} VitParamKind;

/** Which form of q, k and v a row belongs to. */
typedef enum {
    VIT_QKV_ANY,   /**< not part of q, k, v: in every model (as an iterator's form: every row) */
    VIT_QKV_FUSED, /**< one (3D, D) tensor, as timm and torchvision store it */
    VIT_QKV_SPLIT, /**< three (D, D) tensors, as Hugging Face stores them */
} VitQkvForm;

/** The three naming conventions of ViT checkpoints (the contract page, @ref contract). */
typedef enum {
    VIT_NAMES_TIMM,        /**< "blocks.0.attn.qkv.weight": the canonical names */
    VIT_NAMES_HF,          /**< "vit.encoder.layer.0.attention.attention.query.weight" */
    VIT_NAMES_TORCHVISION, /**< "encoder.layers.encoder_layer_0.self_attention.in_proj_weight" */
    VIT_NAMES_COUNT,       /**< how many there are */
} VitNames;

/** Most parts one tensor is made of: the fused q, k, v has three. */
#define VIT_PARAM_MAX_PARTS 3

/**
 * Where one part of a row lives: the offsetof() of its pointer in the weights
 * and in the gradients. The two differ inside a block, because
 * AttentionWeights carries a switch (head_off) that AttentionGrads has not.
 */
typedef struct {
    size_t weights; /**< in VitWeights or (per_block) VitBlockWeights */
    size_t grads;   /**< in VitGradWeights or (per_block) VitBlockGrads */
} VitParamField;

/** One row of the parameter table: one tensor, as every model of any size has it. */
typedef struct {
    const char *name;  /**< timm name, after "blocks.{i}." in a block: "attn.qkv.weight";
                            a split q, k, v row's name ("attn.q.weight") is ours, timm has none */
    bool per_block;    /**< true: every encoder block has one */
    const char *shape; /**< as timm stores it, in glossary letters: "3D,D", "1,1,D" */
    VitParamKind kind; /**< weight, bias, LayerNorm scale or shift */
    bool embedding;    /**< a learned embedding (cls_token, pos_embed): drawn like a weight,
                            but, as timm's no_weight_decay() says, never weight-decayed */
    VitQkvForm qkv;    /**< VIT_QKV_ANY for all but the q, k, v rows */
    VitParamField field[VIT_PARAM_MAX_PARTS]; /**< where the pointer each part fills lies */
    const char *stage[VIT_PARAM_MAX_PARTS]; /**< the stage reading each part; one entry per part */
    const char *hf;          /**< Hugging Face name (after "vit.encoder.layer.{i}."), or NULL */
    const char *torchvision; /**< torchvision name (after "encoder.layers.encoder_layer_{i}."),
                                  or NULL; "a|b": either name is accepted */
} VitParamSpec;

/** @brief Rows in the table (block rows once). */
int vit_param_spec_count(void);
/** @brief The i-th row, in forward order; NULL outside [0, vit_param_spec_count()). */
const VitParamSpec *vit_param_spec_at(int i);
/**
 * @brief The row of a parameter's timm name ("blocks.3.norm1.weight" → "norm1.weight").
 * @param[out] block  the block index, or -1 outside the blocks (may be NULL)
 * @return NULL for a name that is not a parameter of the table
 */
const VitParamSpec *vit_param_find(const char *name, int *block);
/** @brief Parts of a row: 3 for the fused q, k, v (its three row blocks), else 1. */
int vit_param_parts(const VitParamSpec *s);
/**
 * @brief The shape of a row's tensor for this configuration, as timm stores it.
 * @param[out] shape  up to 4 sizes, e.g. (3·D, D) for "3D,D"
 * @return the number of dimensions
 */
int vit_param_shape(const VitParamSpec *s, const VitConfig *cfg, int shape[4]);
/** @brief Values in a row's tensor for this configuration (all its parts). */
int64_t vit_param_numel(const VitParamSpec *s, const VitConfig *cfg);
/**
 * @brief The canonical (timm) name: "blocks.{block}." + name in a block, e.g.
 *        "blocks.3.attn.qkv.weight"; the row's name otherwise.
 * @param[out] buf  receives the name; returned
 */
char *vit_param_name(char *buf, size_t size, const VitParamSpec *s, int block);
/**
 * @brief The name a file of convention @p names gives the tensor.
 *
 * A block's name gets the convention's block prefix (vit_param_block_prefix())
 * and the block number. Where the row lists alternatives ("a|b"), @p alt picks one.
 * @param[out] buf  receives the name
 * @return false when files of that convention do not hold this row (Hugging
 *         Face has no fused q, k, v; timm and torchvision no split ones) or
 *         have no alternative @p alt
 */
bool vit_param_file_name(char *buf, size_t size, const VitParamSpec *s, VitNames names, int block,
                         int alt);
/** @brief What comes before the block number in a convention's names: "blocks.", … */
const char *vit_param_block_prefix(VitNames names);

/**
 * @brief Where part @p part of a row lives in @p w: the address of its pointer,
 *        in w->blocks[block] for a block's row (@p block is ignored otherwise).
 */
const float **vit_param_slot(VitWeights *w, const VitParamSpec *s, int block, int part);
/** @brief The pointer a row's part holds in @p w (what vit_param_slot() points to). */
const float *vit_param_data(const VitWeights *w, const VitParamSpec *s, int block, int part);
/** @brief vit_param_slot() for gradients: the address of the part's pointer in @p g. */
float **vit_param_grad_slot(VitGradWeights *g, const VitParamSpec *s, int block, int part);
/** @brief vit_param_data() for gradients: the part's gradient in @p g, writable. */
float *vit_param_grad_data(const VitGradWeights *g, const VitParamSpec *s, int block, int part);

/** The order in which an iteration visits the parameters. */
typedef enum {
    /** The order the forward pass reads them: patch projection, [cls], positions, the
     *  blocks, final LayerNorm, head. Random init draws them in this order, the loader
     *  maps them in it. */
    VIT_ORDER_FORWARD,
    /** timm's state_dict order, the order of its files: PyTorch lists a module's own
     *  parameters (the names without a dot: cls_token, pos_embed) before its submodules'. */
    VIT_ORDER_STATE_DICT,
} VitParamOrder;

/** A walk over every parameter tensor of a model of depth L; see vit_param_next(). */
typedef struct {
    int depth;           /**< L: how many times the block rows are visited */
    VitParamOrder order; /**< forward or state_dict order */
    VitQkvForm form;     /**< q, k, v rows visited: fused, split, or VIT_QKV_ANY for both */
    int block;           /**< after vit_param_next(): the block of its row, or -1 */
    int index;           /**< after vit_param_next(): rows returned before this one, from 0 */
    int pass;            /**< private: 0 while visiting a state_dict's own parameters */
    int row;             /**< private: the next table row to look at */
    int next_block;      /**< private: the block the walk is in */
} VitParamIter;

/**
 * @brief Start a walk over the tensors of a model of depth @p depth.
 * @param[in] form  VIT_QKV_FUSED or VIT_QKV_SPLIT: the q, k, v rows of that form
 *                  only; VIT_QKV_ANY: both forms
 */
VitParamIter vit_param_iter(int depth, VitParamOrder order, VitQkvForm form);
/** @brief The next row of the walk (its block in it->block), or NULL at the end. */
const VitParamSpec *vit_param_next(VitParamIter *it);

/** @brief Number of parameters, e.g. 86,567,656 for ViT-B/16 with 1000 classes. */
int64_t vit_param_count(const VitConfig *cfg);
/** @brief Number of parameter tensors as timm stores them, 4 + 12·L + 4 (152 for ViT-B/16). */
int vit_param_tensor_count(const VitConfig *cfg);

/** One parameter tensor of a model, under its timm name. */
typedef struct {
    char name[64];      /**< e.g. "blocks.0.attn.qkv.weight" */
    const float *data;  /**< its values (borrowed from the model) */
    int ndim;           /**< dimensions, as timm stores it, e.g. 3 for cls_token (1, 1, D) */
    int shape[4];       /**< sizes */
    size_t numel;       /**< values */
    const VitParamSpec *spec; /**< its row of the parameter table */
    int block;          /**< its block, or -1 outside the blocks */
} VitParam;

/**
 * @brief Every parameter tensor of @p w, in the order of timm's state_dict.
 *
 * q, k and v are one fused "attn.qkv" tensor, as timm stores them, when the
 * three parts lie one after another in memory (built here, or loaded from
 * timm or torchvision); otherwise (Hugging Face) "attn.q", "attn.k" and "attn.v".
 * @param[out] out  as many entries as the return value, or NULL to count them
 * @return the number of parameter tensors, 4 + 12·L + 4 when fused
 */
int vit_weights_params(VitParam *out, const VitWeights *w, const VitConfig *cfg);
/**
 * @brief vit_weights_params() for gradients: every tensor of @p g under its
 *        parameter's name, in the same order, fused or split by the same test.
 *
 * VitParam::data is read-only; vit_param_grad_data() gives a writable pointer.
 */
int vit_grad_weights_params(VitParam *out, const VitGradWeights *g, const VitConfig *cfg);

/** @} */
#endif
