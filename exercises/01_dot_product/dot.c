/**
 * @file dot.c
 * @brief Exercise 01: the dot product (lib/ops/ops.h), your version.
 *
 * Fill in the TODO. `make exercise CH=01` grades it; README.md says what the
 * tests check and what the hints mean. Until the TODO is done dot() returns
 * 0, so the tests fail without crashing.
 */
#include "ops/ops.h"

float dot(const float *a, const float *b, int n) {
    // a is (n), b is (n)

    // TODO: return a · b = a[0]·b[0] + a[1]·b[1] + … + a[n-1]·b[n-1]:
    //   - every one of the n products exactly once, i = 0 … n-1; n = 0 is an empty sum, 0;
    //   - add them up in a double, not a float, and convert to float once, at the return:
    //     a float keeps only 24 bits, so in float 16777216 + 1 is 16777216 again, and a long
    //     sum whose large terms cancel loses its small ones (ops.h: "accumulated in double").
    (void)a, (void)b, (void)n;
    return 0.0f; // placeholder: delete it
}
