/**
 * @file mha_scratch.c
 * @brief Working memory for mha_forward(): its size and its carving (attention.h).
 */
#include "attention/attention.h"

#include <stddef.h>

// [mha_scratch_floats]
size_t mha_scratch_floats(int B, int N, int D, int H) {
    size_t bnd = (size_t)B * N * D, bhnn = (size_t)B * H * N * N;
    return 6 * bnd + 3 * bhnn; // flat, q, k, v, heads, context + scores, scaled, probs
}
// [mha_scratch_floats]

// [mha_scratch_carve]
void mha_scratch_carve(MhaScratch *s, float *mem, int B, int N, int D, int H) {
    size_t bnd = (size_t)B * N * D, bhnn = (size_t)B * H * N * N;
    s->flat = mem, mem += bnd;
    s->q = mem, mem += bnd;
    s->k = mem, mem += bnd;
    s->v = mem, mem += bnd;
    s->heads = mem, mem += bnd;
    s->context = mem, mem += bnd;
    s->scores = mem, mem += bhnn;
    s->scaled = mem, mem += bhnn;
    s->probs = mem;
    s->keep_matrices = true;
}
// [mha_scratch_carve]
