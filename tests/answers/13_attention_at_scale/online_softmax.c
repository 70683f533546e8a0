/**
 * @file online_softmax.c
 * @brief Exercise 13's model answer: online_softmax_block(), written from the skeleton.
 *
 * Shape legend: n scores in the block.
 *
 * make answers-check links it in place of lib's and runs every suite.
 */
#include "attention/attention.h"

#include <math.h>

float online_softmax_block(OnlineSoftmax *st, float *s, int n) {
    // s: (n) one block of a row's scores; st: the row's running max m and sum l so far

    // 1. a NaN or +inf score (now or in an earlier block) breaks the row
    int broken = isnan(st->max);
    for (int j = 0; j < n; j++)
        if (isnan(s[j]) || s[j] == INFINITY) broken = 1;
    if (broken) {
        st->max = st->sum = NAN;
        for (int j = 0; j < n; j++) s[j] = NAN;
        return NAN;
    }

    // 2. the running maximum of the whole row, this block included
    float m = st->max;
    for (int j = 0; j < n; j++)
        if (s[j] > m) m = s[j];

    // 3. every score so far hidden: nothing to weigh yet (-inf - (-inf) would be NaN)
    if (m == -INFINITY) {
        for (int j = 0; j < n; j++) s[j] = 0.0f;
        return 1.0f;
    }

    // 4. the factor for what was accumulated against the old maximum: <= 1, 0 on the first
    const float c = expf(st->max - m);

    // 5. the block's weights against the new maximum (exponents <= 0), summed in a double
    double sum = 0.0;
    for (int j = 0; j < n; j++) {
        s[j] = expf(s[j] - m);
        sum += s[j];
    }

    // 6. the new state: the old sum rescaled, plus this block's
    st->max = m;
    st->sum = (float)(c * (double)st->sum + sum);
    return c;
}
