/**
 * @file rollout_layer.c
 * @brief Exercise 12: one layer of attention rollout, rollout_layer() (lib/explain/rollout.h), your version.
 *
 * Shape legend: N tokens.
 *
 * Fill in the TODO. `make exercise CH=12` grades it: Chapter 12, the
 * rollout suite and the probes all call your rollout_layer(). README.md says
 * what the tests check and what the hints mean. Until the TODO is done the
 * function leaves joint as it is (the identity), so the tests fail without
 * crashing.
 */
#include "explain/rollout.h"

#include <string.h>

void rollout_layer(double *joint, const float *fused, int N, double *scratch) {
    // joint and fused are (N, N), row-major; scratch is (2, N, N) doubles of working room

    // TODO: one layer of the rollout, J ← rownorm(F + I) · J:
    //
    //   1. A = F + I: fused, with 1 added on the diagonal (the residual connection,
    //      x + Attention(x): every token also keeps itself)
    //   2. divide each row of A by its own sum, so each row sums to 1
    //   3. J' = A · J: the new layer on the LEFT (it reads what the earlier layers made);
    //      write the product into scratch, then copy it into joint
    //
    // Use scratch for A and the product (2·N·N doubles), never joint while you read it.
    (void)joint, (void)fused, (void)N, (void)scratch;
}
