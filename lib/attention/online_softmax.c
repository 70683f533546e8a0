/**
 * @file online_softmax.c
 * @brief One step of the online softmax, alone in its file so a student's
 *        version (exercise 13) can replace it at link time.
 *
 * A row of scores arrives a block at a time. The state keeps the largest score
 * seen so far (m) and the sum of exp(s − m) over the scores seen (l); a new
 * block may raise the maximum to m', and everything summed before was summed
 * against the old m, so it is multiplied by c = exp(m − m'):
 *
 *     m' = max(m, max_j s_j),   l' = c·l + Σ_j exp(s_j − m'),   c = exp(m − m').
 *
 * The caller multiplies its running output by the same c before adding the
 * block's exp(s_j − m')·v_j; at the end, out = acc / l equals softmax(s)·V.
 */
#include "ops/vecmath.h"
#include "attention/attention.h"

// [online_softmax_block]
// (VIT_VECTOR_CLONES: compiled for AVX2 too, where expf() runs 8 floats at a time)
VIT_VECTOR_CLONES float online_softmax_block(OnlineSoftmax *st, float *s, int n) {
    // s: (n) one block of a row's scores, replaced by its weights exp(s_j − m')
    float block_max = -INFINITY;
    for (int j = 0; j < n; j++) {
        if (isnan(s[j]) || s[j] == INFINITY) st->max = NAN; // the row is meaningless
        else if (s[j] > block_max) block_max = s[j];
    }
    if (isnan(st->max)) { // once broken, every weight and factor says so
        for (int j = 0; j < n; j++) s[j] = NAN;
        st->sum = NAN;
        return NAN;
    }
    const float m_new = block_max > st->max ? block_max : st->max;
    if (m_new == -INFINITY) { // every score so far hidden: nothing to weigh yet
        for (int j = 0; j < n; j++) s[j] = 0.0f;
        return 1.0f;
    }
    const float c = expf(st->max - m_new); // exp(−inf) = 0 on the first visible block
    double block_sum = 0.0;
    VIT_SIMD_SUM(block_sum) // several exponentials at once (vecmath.h)
    for (int j = 0; j < n; j++) {
        s[j] = expf(s[j] - m_new); // exponent ≤ 0: cannot overflow; exp(−inf) = 0
        block_sum += s[j];
    }
    st->sum = (float)((double)c * st->sum + block_sum);
    st->max = m_new;
    return c;
}
// [online_softmax_block]
