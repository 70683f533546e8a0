// hint: the state never left ONLINE_SOFTMAX_START
// stage: 09
// With one block of keys the mistake already shows, and lib's forward runs
// attention_online() whenever nothing reads the (N, N) matrices: chapter 09's
// forward without a trace is where it fails first ("// stage: 09"); that test
// says the road without the matrices is the one that differs.
/**
 * @file online_softmax.c
 * @brief A wrong online_softmax.c for exercise 13 (tests/wrong/): the skeleton as handed out, the TODO never done.
 *
 * `make test` checks that the grader fails it and prints the hint above. Where the
 * row holds a NaN or +inf, PyTorch's state is NaN and the untouched one is not: the probe
 * says the NaN was never looked for (nor was anything).
 */
#include "attention/attention.h"

#include <math.h>

float online_softmax_block(OnlineSoftmax *st, float *s, int n) {
    // s: (n) one block of a row's scores, replaced by its weights exp(s_j − m')
    // WRONG: the state left as it is, the scores as they are
    (void)st, (void)s, (void)n;
    return 1.0f;
}
