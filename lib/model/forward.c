/**
 * @file forward.c
 * @brief vit_forward(): the whole model as a recipe, one commented step per
 *        stage, each naming the line of timm's VisionTransformer.forward it is.
 *        Alone in its file so a student's version can replace it (exercise 09).
 *
 * Shape legend: B batch, C channels, S side, p patch, P patches, N = P + 1
 * tokens, D width, Y classes (the book's glossary).
 */
#include "ops/ops.h"
#include "model/patch.h"
#include "model/vit.h"
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

// [vit_forward]
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
    // 1. x = self.patch_embed(x): stride-p convolution = unfold + linear
    patch_embed(a->patch_embed, a->patches, input->data, w->patch_w, w->patch_b, B, C, S, p, D);
    trace_emit(&tr, "patch_embed", a->patch_embed, 3, B, P, D);

    // 2. x = torch.cat((self.cls_token.expand(B, -1, -1), x), dim=1)
    tokens_prepend_cls(a->tokens, a->patch_embed, w->cls_token, B, P, D);
    trace_emit(&tr, "tokens", a->tokens, 3, B, N, D);

    // 3. x = x + self.pos_embed: the same (N, D) table added to every image
    float *x = vit_acts_stream(a, 0);
    tokens_add_positions(x, a->tokens, w->pos_embed, B, N, D);
    trace_emit(&tr, "embed", x, 3, B, N, D);

    // 4. x = self.blocks(x): L pre-norm encoder blocks, the residual stream ping-pongs
    //    (a model prepared for training keeps every block's input instead, vit_memory.c)
    for (int i = 0; i < c->depth; i++) {
        char prefix[32];
        snprintf(prefix, sizeof prefix, "blocks.%d.", i);
        const Tracer block_tr = {trace, user, prefix};
        float *out = vit_acts_stream(a, i + 1);
        vit_block_forward(out, x, &w->blocks[i], c, vit_acts_block(a, i), B, &block_tr);
        x = out;
    }

    // 5. x = self.norm(x)
    layernorm(a->norm, x, w->norm_w, w->norm_b, B * N, D, c->ln_eps);
    trace_emit(&tr, "norm", a->norm, 3, B, N, D);

    // 6. x = x[:, 0]: the cls token's row is the image's summary
    for (int b = 0; b < B; b++)
        memcpy(a->pre_logits + (size_t)b * D, a->norm + (size_t)b * N * D,
               (size_t)D * sizeof(float));
    trace_emit(&tr, "pre_logits", a->pre_logits, 2, B, D);

    // 7. x = self.head(x): Y class scores per image
    ops_linear_lowp(a->logits, a->pre_logits, w->head_w, w->head_lowp, w->head_b, B, D, Y);
    trace_emit(&tr, "logits", a->logits, 2, B, Y);
    // [recipe]
    return VIT_OK;
}
// [vit_forward]
