/**
 * @file backward.c
 * @brief vit_backward(): the forward recipe (forward.c) read backwards, one
 *        commented step per stage, each naming the line of timm's
 *        VisionTransformer.forward it undoes; and vit_forward_backward(),
 *        forward + loss + backward for a batch (shards.c splits it over threads,
 *        from outside).
 *
 * Shape legend: B batch, C channels, S side, p patch, P patches, N = P + 1
 * tokens, D width, Y classes (the book's glossary).
 *
 * What the backward needs from the forward. Every stage's backward reads the
 * stage's input (a LayerNorm's x, a linear layer's x for its dW) or output
 * (the softmax's probabilities, GELU's input), so the forward must leave
 * them somewhere. Inference reuses one set of block buffers for every
 * block; a model prepared for training (vit_train_prepare()) keeps instead,
 * as VitKeep says:
 *   - VIT_KEEP_ALL: every block's input and the ten activations its backward
 *     reads (norm1, q, k, v, probs, context, resid1, norm2, fc1, gelu):
 *     7·N·D + 2·N·M + H·N² floats per image and block;
 *   - VIT_KEEP_INPUTS: only every block's input (N·D per image and block);
 *     the backward runs each block's forward again, into the shared buffers,
 *     just before that block's backward ("activation checkpointing"): one
 *     more forward pass of the blocks (L − 1 of them: the last block's
 *     buffers still hold its activations), a fraction of the memory.
 * The gradients are the same bit for bit (the recomputed forward does the
 * same arithmetic). On the Fashion-MNIST training configuration (p 4 on
 * 28×28, D 64, L 6, H 4, M 128, batch 128) the activations take 243 MB
 * keeping everything, 104 MB keeping the inputs (49 MB for inference), and a
 * step takes about 207 ms against 284 ms on two cores: keeping everything is
 * a quarter faster for 139 MB, so it is VIT_KEEP_DEFAULT (the contract page,
 * @ref contract_grad_memory, has the measurements). Outside the blocks
 * everything is kept either way: the unfolded patches, the final norm's
 * input, pre_logits, the logits.
 *
 * Deliberately omitted: dropout and drop-path, mixed precision, a gradient
 * of the attention masks (a ViT has none).
 */
#include "ops/ops.h"
#include "model/patch.h"
#include "model/vit.h"
#include "model/vit_internal.h"

#include <stdio.h>
#include <string.h>

static void zero(float *p, size_t n) { memset(p, 0, n * sizeof(float)); }

// The last forward kept what the backward needs, and the gradients fit the model.
static VitStatus check_ready(const Vit *vit, const VitGrads *g, VitError *err) {
    const VitActivations *a = &vit->acts;
    if (!a->memory || a->keep == VIT_KEEP_NONE)
        return vit_fail(err, VIT_ERR_INPUT, "the backward pass needs a forward pass that kept "
                        "its activations: call vit_train_prepare() before vit_forward()");
    if (!g->memory || !g->weights.blocks ||
        g->count != vit_weights_params(NULL, &vit->weights, &vit->config) ||
        g->floats != (size_t)vit_param_count(&vit->config))
        return vit_fail(err, VIT_ERR_INPUT, "the gradients are not laid out for this model "
                        "(%d tensors of %zu values, the model has %d of %lld): vit_grads_init() "
                        "makes them", g->count, g->floats,
                        vit_weights_params(NULL, &vit->weights, &vit->config),
                        (long long)vit_param_count(&vit->config));
    return VIT_OK;
}

// [vit_backward]
VitStatus vit_backward(Vit *vit, VitGrads *grads, const float *dlogits, TraceFn trace, void *user,
                       VitError *err) {
    VitStatus status = check_ready(vit, grads, err);
    if (status != VIT_OK) return status;
    const VitConfig *c = &vit->config;
    const VitWeights *w = &vit->weights;
    const VitGradWeights *dw = &grads->weights;
    VitActivations *a = &vit->acts;
    VitGradActs *d = &a->grad;
    const int B = a->batch, C = c->channels, S = c->image_size, p = c->patch_size;
    const int P = vit_num_patches(c), N = P + 1, D = c->dim, Y = c->num_classes, L = c->depth;
    const size_t bnd = (size_t)B * N * D;
    const Tracer tr = {trace, user, "grad."};
    // listeners may read, never write, what they are shown
    trace_emit(&tr, "logits", dlogits, 2, B, Y);

    // [recipe]
    // 7. x = self.head(x): dpre_logits = dlogits·W, dW += dlogitsᵀ·pre_logits, db += Σ dlogits
    zero(d->pre_logits, (size_t)B * D);
    ops_linear_backward(d->pre_logits, dw->head_w, dw->head_b, dlogits,
                        a->pre_logits, w->head_w, B, D, Y);
    trace_emit(&tr, "pre_logits", d->pre_logits, 2, B, D);

    // 6. x = x[:, 0]: only the [cls] rows were read, so only they get a gradient
    zero(d->norm, bnd);
    for (int b = 0; b < B; b++)
        memcpy(d->norm + (size_t)b * N * D, d->pre_logits + (size_t)b * D,
               (size_t)D * sizeof(float));
    trace_emit(&tr, "norm", d->norm, 3, B, N, D);

    // 5. x = self.norm(x): into the gradient of the last block's output
    float *dx = d->x[0], *dnext = d->x[1];
    zero(dx, bnd);
    layernorm_backward(dx, dw->norm_w, dw->norm_b, d->norm,
                       vit_acts_stream(a, L), w->norm_w, B * N, D, c->ln_eps);

    // 4. x = self.blocks(x), from the last block to the first: the gradient of a
    //    block's input is the gradient of the output of the block before it
    for (int i = L - 1; i >= 0; i--) {
        char prefix[40];
        snprintf(prefix, sizeof prefix, "grad.blocks.%d.", i);
        const Tracer block_tr = {trace, user, prefix};
        const float *x = vit_acts_stream(a, i);
        VitBlockActs *acts = vit_acts_block(a, i);
        // kept inputs only: run the block again to have its activations (the
        // last block's are still there from the forward)
        if (a->keep == VIT_KEEP_INPUTS && i < L - 1)
            vit_block_forward(vit_acts_stream(a, i + 1), x, &w->blocks[i], c, acts, B, NULL);
        zero(dnext, bnd);
        vit_block_backward(dnext, &dw->blocks[i], dx, x, &w->blocks[i], c, acts, &d->block, B,
                           &block_tr);
        float *t = dx;
        dx = dnext, dnext = t;
    }
    trace_emit(&tr, "embed", dx, 3, B, N, D);

    // 3. x = x + self.pos_embed: dpos += Σ_b dembed; the tokens' gradient is dembed itself
    tokens_add_positions_backward(NULL, dw->pos_embed, dx, B, N, D);
    const float *dtokens = dx;
    trace_emit(&tr, "tokens", dtokens, 3, B, N, D);

    // 2. x = torch.cat((self.cls_token.expand(B, -1, -1), x), dim=1): rows 0 to the
    //    [cls] token, summed over the images; the other rows to their patches
    zero(d->patch_embed, (size_t)B * P * D);
    tokens_prepend_cls_backward(d->patch_embed, dw->cls_token, dtokens, B, P, D);
    trace_emit(&tr, "patch_embed", d->patch_embed, 3, B, P, D);

    // 1. x = self.patch_embed(x): dW += doutᵀ·patches, db += Σ dout; the pixels'
    //    gradient, fold(dout·W), only when someone listens: training needs none
    float *dinput = trace ? d->input : NULL;
    if (dinput) zero(dinput, (size_t)B * C * S * S);
    patch_embed_backward(dinput, dw->patch_w, dw->patch_b, d->patch_embed,
                         a->patches, w->patch_w, B, C, S, p, D);
    if (dinput) trace_emit(&tr, "input", dinput, 4, B, C, S, S);
    // [recipe]
    return VIT_OK;
}
// [vit_backward]

VitStatus vit_check_targets(const Vit *vit, int B, const int *targets, float smoothing,
                            VitError *err) {
    const int Y = vit->config.num_classes;
    if (!(smoothing >= 0.0f && smoothing <= 1.0f))
        return vit_fail(err, VIT_ERR_INPUT, "label smoothing must lie in [0, 1], not %g",
                        (double)smoothing);
    for (int b = 0; b < B; b++)
        if (targets[b] < 0 || targets[b] >= Y)
            return vit_fail(err, VIT_ERR_INPUT, "the target of image %d is class %d; the "
                            "model has %d classes, 0 to %d", b, targets[b], Y, Y - 1);
    return VIT_OK;
}

VitStatus vit_forward_backward(Vit *vit, VitGrads *grads, const Tensor *input, const int *targets,
                               float smoothing, float *loss, TraceFn trace, void *user,
                               VitError *err) {
    const int Y = vit->config.num_classes;
    // otherwise vit_forward() says what is wrong with the shape
    const int B = input->ndim == 4 ? input->shape[0] : 0;
    VitStatus s = vit_check_targets(vit, B, targets, smoothing, err);
    if (s != VIT_OK) return s;
    if (vit->keep == VIT_KEEP_NONE) vit->keep = VIT_KEEP_DEFAULT;
    if ((s = vit_forward(vit, input, trace, user, err)) != VIT_OK) return s;
    VitActivations *a = &vit->acts;
    // loss = F.cross_entropy(logits, targets, label_smoothing=smoothing), and its gradient
    zero(a->grad.logits, (size_t)a->batch * Y);
    *loss = loss_cross_entropy(a->grad.logits, a->logits, targets, a->batch, Y, smoothing);
    return vit_backward(vit, grads, a->grad.logits, trace, user, err);
}
