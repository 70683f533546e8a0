/**
 * @file block_acts.c
 * @brief A block's working memory: its size and its carving into buffers (block.h).
 */
#include "model/block.h"

// [vit_block_acts_floats]
size_t vit_block_acts_floats(const VitConfig *c, int B) {
    const size_t N = (size_t)vit_num_tokens(c), D = (size_t)c->dim, M = (size_t)c->mlp_dim;
    const size_t bnd = (size_t)B * N * D, bnm = (size_t)B * N * M;
    // norm1, attn, resid1, norm2, fc2 are (B,N,D); fc1 and gelu are (B,N,M)
    return 5 * bnd + 2 * bnm + mha_scratch_floats(B, (int)N, (int)D, c->heads);
}
// [vit_block_acts_floats]

// [vit_block_acts_carve]
void vit_block_acts_carve(VitBlockActs *a, float *mem, const VitConfig *c, int B) {
    const size_t N = (size_t)vit_num_tokens(c), D = (size_t)c->dim, M = (size_t)c->mlp_dim;
    const size_t bnd = (size_t)B * N * D, bnm = (size_t)B * N * M;
    a->norm1 = mem, mem += bnd;
    a->attn = mem, mem += bnd;
    a->resid1 = mem, mem += bnd;
    a->norm2 = mem, mem += bnd;
    a->fc1 = mem, mem += bnm;
    a->gelu = mem, mem += bnm;
    a->fc2 = mem, mem += bnd;
    // the fused pass's q, k, v before their split live where fc1 and gelu will,
    // free until the MLP, when there is room (2M ≥ 3D: ViT-B/16's 2·3072 ≥ 3·768)
    a->qkv = 2 * M >= 3 * D ? a->fc1 : NULL;
    mha_scratch_carve(&a->mha, mem, B, (int)N, (int)D, c->heads);
}
// [vit_block_acts_carve]
