// hint: joint never changed: is rollout_layer() still the exercise
/**
 * @file rollout_layer.c
 * @brief A wrong rollout_layer.c for exercise 12 (tests/wrong/): nothing written: joint stays as it was.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "explain/rollout.h"

#include <string.h>

void rollout_layer(double *joint, const float *fused, int N, double *scratch) {
    // joint and fused are (N, N), row-major; scratch is (2, N, N)
    (void)joint, (void)fused, (void)N, (void)scratch; // WRONG: the TODOs still to do
}
