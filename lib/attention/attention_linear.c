/**
 * @file attention_linear.c
 * @brief Linear attention with the feature map elu(x) + 1 (attention.h,
 *        attention_linear()): the keys summed once per head, no N × N matrix.
 *
 * Shape legend: B sequences, H heads, N tokens, Dh = D/H.
 *
 * Softmax attention weighs key j for query i by exp(q_i·k_j/√Dh), and the
 * exponential of a dot product does not split into a part of i times a part
 * of j, so every pair must be scored. Replace the weight by a dot product of
 * features, φ(q_i)·φ(k_j), with φ(x) = elu(x) + 1 > 0 elementwise, and it
 * does split:
 *
 *     out_i = Σ_j (φ(q_i)·φ(k_j)) v_j / Σ_j φ(q_i)·φ(k_j)
 *           = φ(q_i)ᵀ S / φ(q_i)ᵀ z,   S = Σ_j φ(k_j) v_jᵀ  (Dh, Dh),  z = Σ_j φ(k_j)  (Dh).
 *
 * S and z are computed once per head, in N·Dh² steps, and every query then
 * costs Dh² more: linear in N. The weights are positive and sum to 1, as
 * softmax's do, but they are other weights: flatter (φ grows like x, not
 * like e^x), so a model trained with softmax reads something else.
 *
 * Deliberately omitted: the causal (running-sum) form, other feature maps
 * (random features, Performer's), and the backward.
 */
#include "attention/attention.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// The feature map φ(x) = elu(x) + 1: x + 1 above 0, e^x below; NaN stays NaN.
// [feature]
static double feature(float x) { return x > 0 ? (double)x + 1.0 : exp((double)x); }
// [feature]

// One head: out (N, Dh) from q, k, v (N, Dh); pad (N) or NULL. work holds Dh² + 2·Dh doubles.
// [linear_head]
static void linear_head(float *out, const float *q, const float *k, const float *v,
                        const float *pad, int N, int Dh, double *work) {
    double *S = work, *z = work + (size_t)Dh * Dh, *num = z + Dh;
    memset(S, 0, sizeof *S * ((size_t)Dh * Dh + Dh));
    for (int j = 0; j < N; j++) { // S = Σ_j φ(k_j) v_jᵀ, z = Σ_j φ(k_j)
        if (pad && pad[j] == -INFINITY) continue; // a padding key is left out
        const float *kj = k + (size_t)j * Dh, *vj = v + (size_t)j * Dh;
        for (int a = 0; a < Dh; a++) {
            const double f = feature(kj[a]);
            z[a] += f;
            for (int c = 0; c < Dh; c++) S[(size_t)a * Dh + c] += f * vj[c];
        }
    }
    for (int i = 0; i < N; i++) { // out_i = φ(q_i)ᵀ S / φ(q_i)ᵀ z
        const float *qi = q + (size_t)i * Dh;
        double den = 0;
        for (int c = 0; c < Dh; c++) num[c] = 0;
        for (int a = 0; a < Dh; a++) {
            const double f = feature(qi[a]);
            den += f * z[a];
            for (int c = 0; c < Dh; c++) num[c] += f * S[(size_t)a * Dh + c];
        }
        // every key left out: den = 0, and the query takes nothing, as softmax() says
        for (int c = 0; c < Dh; c++)
            out[(size_t)i * Dh + c] = isnan(den) ? NAN : den > 0 ? (float)(num[c] / den) : 0.0f;
    }
}
// [linear_head]

// [attention_linear]
void attention_linear(float *out, const float *q, const float *k, const float *v,
                      const float *key_padding_mask, int B, int H, int N, int Dh) {
    // q, k, v, out are (B, H, N, Dh); key_padding_mask is (B, N) or NULL
    if (B < 1 || H < 1 || N < 1 || Dh < 1) return;
    const int G = B * H;
#pragma omp parallel if (G > 1)
    {
        double *work = vit_malloc(sizeof(double) * ((size_t)Dh * Dh + 2 * (size_t)Dh));
#pragma omp for schedule(static)
        for (int g = 0; g < G; g++) {
            const size_t at = (size_t)g * N * Dh;
            const float *pad = key_padding_mask ? key_padding_mask + (size_t)(g / H) * N : NULL;
            linear_head(out + at, q + at, k + at, v + at, pad, N, Dh, work);
        }
        free(work);
    }
}
// [attention_linear]
