// hint: each s_j replaced by e^(s_j - m')
// stage: 09
// With one block of keys the mistake already shows, and lib's forward runs
// attention_online() whenever nothing reads the (N, N) matrices: chapter 09's
// forward without a trace is where it fails first ("// stage: 09"); that test
// says the road without the matrices is the one that differs.
/**
 * @file online_softmax.c
 * @brief A wrong online_softmax.c for exercise 13 (tests/wrong/): the weights summed but never written back into s.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "attention/attention.h"

#include <math.h>

float online_softmax_block(OnlineSoftmax *st, float *s, int n) {
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
    for (int j = 0; j < n; j++) {
        block_sum += expf(s[j] - m_new); // WRONG: s[j] = expf(s[j] - m_new) first
    }
    st->sum = (float)((double)c * st->sum + block_sum);
    st->max = m_new;
    return c;
}
