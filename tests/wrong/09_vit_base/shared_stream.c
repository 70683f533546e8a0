// hint: vit_backward/every gradient equals autograd
// stage: 10
// A forward pass written as exercise 09's skeleton once said: the stream in
// a->x[0] and a->x[1], swapped, one a->block shared by every block. Every
// stage of an inference is right, so the chapter's tests pass; a model
// prepared for training then loses each block's input and activations, and
// its gradients are wrong. The key runs the backward's tests for that, and its
// first failure is at chapter 10's stage, the backward ("// stage: 10").
/**
 * @file forward.c
 * @brief A wrong vit_forward(): the old skeleton's buffers (see the first lines).
 */
#include "model/vit.h"
#include "ops/ops.h"
#include "model/patch.h"
#include "model/vit_internal.h"

#include <stdio.h>
#include <string.h>

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
    // 1. x = self.patch_embed(x): the stride-p convolution as unfold + linear,
    //    (B, C, S, S) → a->patch_embed (B, P, D), a->patches (B, P, C·p·p) its scratch
    patch_embed(a->patch_embed, a->patches, input->data, w->patch_w, w->patch_b, B, C, S, p, D);
    trace_emit(&tr, "patch_embed", a->patch_embed, 3, B, P, D);

    // 2. x = torch.cat((self.cls_token.expand(B, -1, -1), x), dim=1): the learned [cls]
    //    token in front of every image's patches, (B, P, D) → a->tokens (B, N, D)
    tokens_prepend_cls(a->tokens, a->patch_embed, w->cls_token, B, P, D);
    trace_emit(&tr, "tokens", a->tokens, 3, B, N, D);

    // 3. x = x + self.pos_embed: the same (N, D) table added to every image, row i to
    //    token i (row 0 to [cls]), after the cat: a->tokens → x (B, N, D)
    float *x = a->x[0], *next = a->x[1];
    tokens_add_positions(x, a->tokens, w->pos_embed, B, N, D);
    trace_emit(&tr, "embed", x, 3, B, N, D);

    // 4. the blocks, written as the skeleton once said: two buffers swapped, one
    //    working memory for all. Right for inference; a model prepared for training
    //    loses every block's input and activations but the last.
    for (int i = 0; i < c->depth; i++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "blocks.%d.", i);
        const Tracer block_tr = {trace, user, prefix};
        vit_block_forward(next, x, &w->blocks[i], c, &a->block, B, &block_tr);
        float *t = x;
        x = next, next = t;
    }

    // 5. x = self.norm(x): the final LayerNorm of every token, B·N rows of D
    layernorm(a->norm, x, w->norm_w, w->norm_b, B * N, D, c->ln_eps);
    trace_emit(&tr, "norm", a->norm, 3, B, N, D);

    // 6. x = x[:, 0]: the [cls] token's row of each image is its summary,
    //    (B, N, D) → a->pre_logits (B, D); image b's row 0 starts at a->norm + b·N·D
    for (int b = 0; b < B; b++)
        memcpy(a->pre_logits + (size_t)b * D, a->norm + (size_t)b * N * D, sizeof(float) * D);
    trace_emit(&tr, "pre_logits", a->pre_logits, 2, B, D);

    // 7. x = self.head(x): Y class scores per image, (B, D) · W_headᵀ (D, Y) + b → (B, Y)
    ops_linear(a->logits, a->pre_logits, w->head_w, w->head_b, B, D, Y);
    trace_emit(&tr, "logits", a->logits, 2, B, Y);
    // [recipe]
    return VIT_OK;
}
