/**
 * @file forward.c
 * @brief Exercise 09: vit_forward(), the whole model as a recipe (lib/model/vit.h), your version.
 *
 * Shape legend: B batch, C channels, S side, p patch, P patches, N = P + 1
 * tokens, D width, Y classes (the book's glossary).
 *
 * The set-up is given: the input is checked, the activations are allocated,
 * the input is handed to the trace. Fill in the seven steps of the recipe, one per line of timm's
 * VisionTransformer.forward. Each TODO's TODO_ZEROS() line stands for the
 * step until you write it: delete it then. The trace lines are given: they
 * hand each stage to whoever listens, under the names of the contract
 * (docs/contract.md), and the tests compare them with PyTorch's, stage by
 * stage. You may call lib's patch_embed() (patch.h),
 * tokens_prepend_cls() and tokens_add_positions() (tokens.h),
 * vit_block_forward() (block.h), layernorm() and ops_linear() (ops.h), and
 * vit_acts_stream() and vit_acts_block() (vit_internal.h) for the blocks' buffers.
 * `make exercise CH=09` grades it; README.md says what the tests check.
 */
#include "model/vit.h"
#include "ops/ops.h"
#include "model/patch.h"
#include "model/vit_internal.h"

#include <stdio.h>
#include <string.h>

// A step not written yet: zeros, so that everything after it still runs.
#define TODO_ZEROS(buf, n) memset((buf), 0, sizeof(float) * (n))

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
    const int P = vit_num_patches(c), N = P + 1, D = c->dim, Y = c->num_classes;
    if ((status = vit_acts_ensure(vit, B, err)) != VIT_OK) return status;
    VitActivations *a = &vit->acts;
    const Tracer tr = {trace, user, NULL};
    // listeners may read, never write, what they are shown
    trace_emit(&tr, "input", input->data, 4, B, C, S, S);

    // [recipe]
    // TODO 1. x = self.patch_embed(x): the stride-p convolution as unfold + linear,
    //         input->data (B, C, S, S) → a->patch_embed (B, P, D), with a->patches
    //         (B, P, C·p·p) as its scratch and the conv weight w->patch_w, w->patch_b.
    TODO_ZEROS(a->patch_embed, (size_t)B * P * D);
    trace_emit(&tr, "patch_embed", a->patch_embed, 3, B, P, D);

    // TODO 2. x = torch.cat((self.cls_token.expand(B, -1, -1), x), dim=1): the learned
    //         [cls] token w->cls_token (D) in front of every image's patches,
    //         a->patch_embed (B, P, D) → a->tokens (B, N, D), row 0 of each image [cls].
    TODO_ZEROS(a->tokens, (size_t)B * N * D);
    trace_emit(&tr, "tokens", a->tokens, 3, B, N, D);

    // TODO 3. x = x + self.pos_embed: the same (N, D) table w->pos_embed added to every
    //         image, row i to token i (row 0 to [cls]): a->tokens → x (B, N, D).
    float *x = vit_acts_stream(a, 0); // the residual stream: block 0's input
    TODO_ZEROS(x, (size_t)B * N * D);
    trace_emit(&tr, "embed", x, 3, B, N, D);

    // TODO 4. x = self.blocks(x): for each block i < c->depth, the stream goes through
    //         vit_block_forward() with the weights w->blocks[i] and the working memory
    //         vit_acts_block(a, i), x (B, N, D) → vit_acts_stream(a, i + 1) (B, N, D);
    //         then that output is x, the stream the following block reads. Take both
    //         buffers from these two functions, not a->x[] and a->block directly: for
    //         inference they ping-pong between a->x[0] and a->x[1] and share a->block,
    //         but a model prepared for training (vit_train_prepare()) keeps every
    //         block's input and working memory apart, for vit_backward() to read.
    //         Give each block a tracer whose prefix is "blocks.{i}.", so its stages
    //         are named blocks.0.norm1 … blocks.{L-1}.out:
    //             char prefix[32];
    //             snprintf(prefix, sizeof prefix, "blocks.%d.", i);
    //             const Tracer block_tr = {trace, user, prefix};
    //         (The blocks trace themselves: nothing to emit here.)

    // TODO 5. x = self.norm(x): the final LayerNorm of every token, w->norm_w, w->norm_b,
    //         eps c->ln_eps, over the B·N rows of D: x → a->norm (B, N, D).
    TODO_ZEROS(a->norm, (size_t)B * N * D);
    trace_emit(&tr, "norm", a->norm, 3, B, N, D);

    // TODO 6. x = x[:, 0]: the [cls] token's row of each image is its summary,
    //         a->norm (B, N, D) → a->pre_logits (B, D); image b's row 0 starts at
    //         a->norm + b·N·D.
    TODO_ZEROS(a->pre_logits, (size_t)B * D);
    trace_emit(&tr, "pre_logits", a->pre_logits, 2, B, D);

    // TODO 7. x = self.head(x): Y class scores per image, a->pre_logits (B, D) · Wᵀ + b
    //         with the head w->head_w (Y, D), w->head_b (Y) → a->logits (B, Y).
    TODO_ZEROS(a->logits, (size_t)B * Y);
    trace_emit(&tr, "logits", a->logits, 2, B, Y);
    // [recipe]
    (void)w, (void)p; // used by the steps: delete this line with the placeholders
    return VIT_OK;
}
