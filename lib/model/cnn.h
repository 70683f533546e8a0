/**
 * @file cnn.h
 * @brief A small convolutional network for 28×28 grey images, 10 classes:
 *        the ViT's classic rival, built from the layers of conv.h.
 *
 * The recipe (PyTorch names in brackets), for a batch of B images:
 *
 *     images  (B,  1, 28, 28)
 *     conv1   (B, 16, 28, 28)   3×3, padding 1       [conv1 = nn.Conv2d(1, 16, 3, padding=1)]
 *     relu1   (B, 16, 28, 28)
 *     pool1   (B, 16, 14, 14)   2×2 max              [F.max_pool2d(x, 2)]
 *     conv2   (B, 32, 14, 14)   3×3, padding 1       [conv2 = nn.Conv2d(16, 32, 3, padding=1)]
 *     relu2   (B, 32, 14, 14)
 *     pool2   (B, 32,  7,  7)   2×2 max
 *     gap     (B, 32)           mean of each channel [x.mean(dim=(2, 3))]
 *     logits  (B, 10)                                [fc = nn.Linear(32, 10)]
 *
 * 5,130 parameters: conv1 16·1·9 + 16 = 160, conv2 32·16·9 + 32 = 4,640,
 * fc 32·10 + 10 = 330. Where a ViT lets every patch look at every other from
 * its first layer, a CNN sees a 3×3 neighbourhood per layer and widens its
 * view by pooling: a prior about images (nearby pixels belong together, the
 * same pattern may appear anywhere) built into the architecture.
 *
 * The channel counts are a CnnConfig (cnn_config_default(): 16 and 32, the
 * recipe above); chapter 11 narrows them to match a tiny ViT's multiply-adds.
 *
 * What it omits: batch normalisation, dropout, residual connections, any
 * other image size or number of classes (the sizes are the CNN_* constants).
 */
#ifndef VIT_CNN_H
#define VIT_CNN_H

#include "base/rng.h"

#include <stddef.h>

/** @defgroup cnn A small CNN
 *  @brief conv3×3 → ReLU → maxpool → conv3×3 → ReLU → maxpool → mean → linear,
 *  for 28×28 grey images; 5,130 parameters.
 *
 *  Built from @ref conv "the convolution and pooling ops" the way @ref chapter09 "chapter 09"
 *  builds the ViT from its layers, with its backward layer by layer as in
 *  @ref chapter10 "chapter 10". Pinned by the suite @ref test_cnn.c "cnn"
 *  (@ref answer_keys "the answer keys").
 *  @{
 */

enum {
    CNN_SIDE = 28,    /**< image side, e.g. Fashion-MNIST's 28 */
    CNN_KERNEL = 3,   /**< both convolutions' kernel side (padding 1 keeps the side) */
    CNN_CLASSES = 10, /**< classes, e.g. Fashion-MNIST's 10 */
};

/** The channel counts of a CNN. */
typedef struct {
    int c1; /**< channels after conv1, e.g. 16 */
    int c2; /**< channels after conv2, e.g. 32 */
} CnnConfig;

/** @brief The recipe above: 16 and 32 channels, 5,130 parameters. */
CnnConfig cnn_config_default(void);

/** @brief Multiply-adds of one image's forward pass: the two convolutions,
 *         c1·28²·9 + c2·14²·9·c1, and the linear layer, 10·c2 (ReLU, pooling and
 *         the mean add no products). */
long cnn_macs(CnnConfig c);

/** The parameters (or their gradients: the same shapes), carved from one allocation.
 *  Shapes for the default 16 and 32 channels (C1, C2 in general). */
typedef struct {
    CnnConfig config; /**< the channel counts */
    float *conv1_w; /**< (16, 1, 3, 3) */
    float *conv1_b; /**< (16) */
    float *conv2_w; /**< (32, 16, 3, 3) */
    float *conv2_b; /**< (32) */
    float *fc_w;    /**< (10, 32), nn.Linear's (out, in) */
    float *fc_b;    /**< (10) */
    float *memory;  /**< all of them, in this order: count floats */
    size_t count;   /**< 5,130 */
} CnnParams;

/** What the forward computes for a batch and the backward reads, carved from one allocation. */
typedef struct {
    CnnConfig config; /**< the channel counts, the parameters' */
    int B;          /**< images in the batch */
    float *conv1;   /**< (B, 16, 28, 28) */
    float *relu1;   /**< (B, 16, 28, 28) */
    float *pool1;   /**< (B, 16, 14, 14) */
    int *argmax1;   /**< (B, 16, 14, 14) where each pool1 maximum came from */
    float *conv2;   /**< (B, 32, 14, 14) */
    float *relu2;   /**< (B, 32, 14, 14) */
    float *pool2;   /**< (B, 32, 7, 7) */
    int *argmax2;   /**< (B, 32, 7, 7) */
    float *gap;     /**< (B, 32) */
    float *logits;  /**< (B, 10) */
    float *memory;  /**< the floats above */
    int *indices;   /**< the argmaxes above */
} CnnActs;

/** @brief Zero-filled parameters (or a gradient buffer) of a CNN with @p c's
 *         channels in one allocation; free with cnn_params_free(). */
void cnn_params_new(CnnParams *p, CnnConfig c);
/** @brief Free what cnn_params_new() took; safe on a zeroed struct. */
void cnn_params_free(CnnParams *p);

/**
 * @brief PyTorch's default initialisation of nn.Conv2d and nn.Linear: every
 *        weight and bias uniform in \f$ \pm 1/\sqrt{\text{fan\_in}} \f$
 *        (fan_in = 9, 9·C1 and C2), drawn in the order of CnnParams.
 * @param[out]    p    from cnn_params_new()
 * @param[in,out] rng  the generator, advanced by p->count draws
 */
void cnn_init(CnnParams *p, Rng *rng);

/** @brief Activations of a CNN with @p c's channels for a batch of @p B
 *         images; free with cnn_acts_free(). */
void cnn_acts_new(CnnActs *a, CnnConfig c, int B);
/** @brief Free what cnn_acts_new() took; safe on a zeroed struct. */
void cnn_acts_free(CnnActs *a);

/**
 * @brief The forward pass, every layer's output kept in @p a (a->logits last).
 * @param[in,out] a       from cnn_acts_new(a, c, B)
 * @param[in]     p       the parameters, of the same CnnConfig
 * @param[in]     images  (B, 1, 28, 28), normalised pixels
 */
void cnn_forward(CnnActs *a, const CnnParams *p, const float *images);

/**
 * @brief The backward pass: every parameter's gradient from the gradient of the logits.
 *
 * Each layer's backward in reverse order (cnn_backward.c); no gradient of
 * the images is computed. Gradients are ADDED to @p grads (zero it once per step).
 * @param[in,out] grads    from cnn_params_new(), added to
 * @param[in]     dlogits  (B, 10), e.g. from loss_cross_entropy()
 * @param[in]     a        the forward's activations for this batch
 * @param[in]     p        the parameters the forward used
 * @param[in]     images   (B, 1, 28, 28) the forward's input
 */
void cnn_backward(CnnParams *grads, const float *dlogits, const CnnActs *a, const CnnParams *p,
                  const float *images);

/** @} */
#endif
