// hint: attention() wrote neither out nor probs
/**
 * @file attention_head.c
 * @brief A wrong attention_head.c for exercise 04 (tests/wrong/): the skeleton as handed out, its placeholders still there.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "attention/attention.h"
#include "ops/ops.h"

#include <stddef.h>
#include <string.h>

void attention(float *out, float *probs, const float *q, const float *k, const float *v,
               const AttentionOptions *opt, int N, int Dh) {
    // q, k, v are (N, Dh), probs is (N, N), out is (N, Dh): one sequence, one head
    // WRONG: the four TODOs never done
    memset(probs, 0, sizeof(float) * (size_t)N * N); // placeholder: delete it
    memset(out, 0, sizeof(float) * (size_t)N * Dh);  // placeholder: delete it
    (void)q, (void)k, (void)v, (void)opt;
}
