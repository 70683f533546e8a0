/**
 * @file loss.c
 * @brief Cross-entropy of logits against class labels, with label smoothing, and its gradient (ops.h).
 *
 * Shape legend: B images, Y classes (the glossary).
 *
 * One image, logits z (Y), target t, smoothing ε. The target distribution is
 * q = (1 − ε)·onehot(t) + ε/Y (PyTorch's `label_smoothing`: ε spread evenly
 * over all Y classes, the target's included), and the loss is
 *   ℓ = −Σ_y q_y·log softmax(z)_y = −Σ_y q_y·(z_y − lse(z)) = lse(z) − Σ_y q_y·z_y,
 * because Σ_y q_y = 1; lse(z) = log Σ_y e^(z_y) = m + log Σ_y e^(z_y − m), m = max_y z_y,
 * the log-sum-exp, which never overflows (every exponent ≤ 0) and never
 * takes the log of 0 (the largest term is e^0 = 1). The batch's loss is the
 * mean of the B losses.
 *
 * The gradient: ∂lse/∂z_y = softmax(z)_y, so ∂ℓ/∂z_y = softmax(z)_y − q_y, and
 * the mean divides by B. Softmax and cross-entropy are differentiated
 * together: the product of the softmax Jacobian with −q/p collapses to p − q,
 * which is exact, cheaper and finite where p underflows to 0.
 *
 * What it omits: class weights, ignore_index, reductions other than the mean.
 */
#include "ops/ops.h"

#include <math.h>
#include <stddef.h>

// [loss_cross_entropy]
float loss_cross_entropy(float *dlogits, const float *logits, const int *targets, int B, int Y,
                    float smoothing) {
    // logits and dlogits are (B, Y), targets is (B), each in [0, Y)
    const double eps = smoothing, off = eps / Y, on = 1.0 - eps + off; // q_y off and on target
    double total = 0.0;
    for (int b = 0; b < B; b++) {
        const float *z = logits + (size_t)b * Y;
        const int t = targets[b];
        double m = -INFINITY;
        for (int y = 0; y < Y; y++) m = z[y] > m ? z[y] : m;
        double sum = 0.0, qz = 0.0; // Σ e^(z − m) and Σ q·z
        for (int y = 0; y < Y; y++) {
            sum += exp(z[y] - m);
            qz += (y == t ? on : off) * z[y];
        }
        const double lse = m + log(sum);
        total += lse - qz;
        if (!dlogits) continue;
        float *dz = dlogits + (size_t)b * Y;
        for (int y = 0; y < Y; y++) // (softmax − q) / B
            dz[y] += (float)((exp(z[y] - lse) - (y == t ? on : off)) / B);
    }
    return (float)(total / B);
}
// [loss_cross_entropy]
