/**
 * @file gelu_points.c
 * @brief The points of the book's GELU picture: lib's gelu() on [-4, 4], with ReLU beside it.
 *
 * Prints 161 lines "x GELU(x) ReLU(x)", x from -4 to 4 in steps of 0.05, for
 * docs/plots/gelu_relu.gp; scripts/docs.sh builds and runs it. The values are
 * lib's own gelu(), the function chapter 08 teaches, not a formula of the plotting tool.
 */
#include <stdio.h>

#include "ops/ops.h"

/** x from -4 to 4 in steps of 0.05. */
enum { POINTS = 161 };

/** Prints the points, one line each. */
int main(void) {
    float x[POINTS], y[POINTS];
    for (int i = 0; i < POINTS; i++) x[i] = -4.0f + 0.05f * (float)i;
    gelu(y, x, POINTS);
    for (int i = 0; i < POINTS; i++) printf("%.2f %.6f %.6f\n", x[i], y[i], x[i] > 0 ? x[i] : 0.0f);
    return 0;
}
