/**
 * @file forward_rest.c
 * @brief vit_forward_from(): the second half of vit_forward()'s recipe (steps
 *        4 to 7: the blocks, the final LayerNorm, the [cls] row, the head) from
 *        any block on, on a stream the caller hands in.
 *
 * Shape legend: B batch, N = P + 1 tokens, D width, L blocks, Y classes.
 *
 * The four steps are forward.c's, written again from block `first`: forward.c
 * stays one recipe to read top to bottom (and the one file exercise 09 asks a
 * student for), and activation patching (patching.h) restarts a pass halfway.
 * The suite `patching` holds the two to the same bits (a pass restarted at
 * any block from its own stream gives its own logits).
 */
#include "ops/ops.h"
#include "model/vit.h"
#include "model/vit_internal.h"

#include <stdio.h>
#include <string.h>

// Steps 4 to 7 on the stream already in vit_acts_stream(a, first).
static void forward_rest(Vit *vit, int first, int B, TraceFn trace, void *user) {
    const VitConfig *c = &vit->config;
    const VitWeights *w = &vit->weights;
    const int N = vit_num_tokens(c), D = c->dim, Y = c->num_classes;
    VitActivations *a = &vit->acts;
    const Tracer tr = {trace, user, NULL};
    float *x = vit_acts_stream(a, first); // (B, N, D) the stream entering block `first`

    // 4. x = self.blocks(x): L pre-norm encoder blocks, the residual stream ping-pongs
    //    (a model prepared for training keeps every block's input instead, vit_memory.c)
    for (int i = first; i < c->depth; i++) {
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
}

VitStatus vit_forward_from(Vit *vit, const float *stream, int first, int B, TraceFn trace,
                           void *user, VitError *err) {
    // stream is (B, N, D), the input of block `first`
    const VitConfig *c = &vit->config;
    if (first < 0 || first > c->depth || B < 1)
        return vit_fail(err, VIT_ERR_USAGE, "vit_forward_from: block %d of a %d-block model, "
                        "batch %d (blocks 0 to %d, a batch of at least 1)", first, c->depth, B,
                        c->depth);
    VitStatus s = vit_acts_ensure(vit, B, err);
    if (s != VIT_OK) return s;
    const size_t bnd = (size_t)B * vit_num_tokens(c) * c->dim;
    memcpy(vit_acts_stream(&vit->acts, first), stream, sizeof(float) * bnd);
    forward_rest(vit, first, B, trace, user);
    return VIT_OK;
}
