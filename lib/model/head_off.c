/**
 * @file head_off.c
 * @brief "What if": attention heads switched off and on again (vit.h,
 *        vit_set_head_off()), Hugging Face's `head_mask` of 0s and 1s.
 *
 * Shape legend: L layers (blocks), H heads per layer.
 *
 * The switches are one (L, H) table of bools the model owns, Vit::heads_off,
 * taken at the first switch; row l is what block l's attention reads,
 * AttentionWeights::head_off, and mha_forward() multiplies the probabilities
 * of a head that is off by 0 right after the softmax. The block table is the
 * one place the forward and backward passes read weights from, and the one
 * the replicas of vit_shards_new() share, so a switch reaches every pass.
 * vit_resize_positions() replaces the position table only: the switches stay.
 *
 * Deliberately omitted: gates between 0 and 1 (Hugging Face accepts any
 * float; a learner's "what if" is on or off), and removing a head from the
 * weights (pruning): the head still computes, its share is multiplied away.
 */
#include "model/vit.h"

#include <string.h>

// The table, taken (all on) at the first switch and pointed at by every block.
static void take_switches(Vit *vit) {
    const int L = vit->config.depth, H = vit->config.heads;
    vit->heads_off = vit_calloc((size_t)L * (size_t)H, sizeof *vit->heads_off);
    for (int l = 0; l < L; l++)
        vit->weights.blocks[l].attn.head_off = vit->heads_off + (size_t)l * H;
}

VitStatus vit_set_head_off(Vit *vit, int layer, int head, bool off, VitError *err) {
    const int L = vit->config.depth, H = vit->config.heads;
    if (layer < 0 || layer >= L)
        return vit_fail(err, VIT_ERR_USAGE, "layer %d: the model has layers 0 to %d", layer, L - 1);
    if (head < -1 || head >= H)
        return vit_fail(err, VIT_ERR_USAGE, "head %d of layer %d: the model has heads 0 to %d "
                        "(or -1 for all of them)", head, layer, H - 1);
    if (!vit->heads_off) take_switches(vit);
    bool *row = vit->heads_off + (size_t)layer * H;
    for (int h = 0; h < H; h++)
        if (head == -1 || h == head) row[h] = off;
    return VIT_OK;
}

void vit_heads_all_on(Vit *vit) {
    if (vit->heads_off)
        memset(vit->heads_off, 0, (size_t)vit->config.depth * vit->config.heads * sizeof(bool));
}

int vit_heads_off_count(const Vit *vit) {
    if (!vit->heads_off) return 0;
    const size_t n = (size_t)vit->config.depth * vit->config.heads;
    int count = 0;
    for (size_t i = 0; i < n; i++) count += vit->heads_off[i];
    return count;
}
