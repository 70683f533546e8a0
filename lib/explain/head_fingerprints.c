/**
 * @file head_fingerprints.c
 * @brief Each head's distance, entropy and share on [cls] (head_fingerprints.h).
 *
 * Shape legend: L layers, H heads, N = prefix + rows·cols tokens, [cls] (the
 * prefix) first; F = 3 numbers per head.
 *
 * The distance is attention_by_distance()'s, not computed again here; the
 * entropy and the [cls] share are one more pass over each head's patch rows.
 * Sums are in double, as there.
 */
#include "explain/head_fingerprints.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "explain/attention_distance.h"

const char *head_fingerprint_name(int column) {
    static const char *const names[HEAD_FINGERPRINT_COLUMNS] = {"distance", "entropy", "cls"};
    return column >= 0 && column < HEAD_FINGERPRINT_COLUMNS ? names[column] : "?";
}

// A query's entropy in nats, −Σ p ln p over its n weights; a weight of 0 adds 0 (p ln p → 0).
static double row_entropy(const float *row, int n) {
    double e = 0;
    for (int j = 0; j < n; j++)
        if (row[j] > 0) e -= row[j] * log((double)row[j]);
    return e;
}

// [head_fingerprints_layer]
void head_fingerprints_layer(float *out, const float *probs, int H, int prefix, int rows,
                             int cols) {
    // out is (H, 3), probs is (H, N, N)
    const int N = prefix + rows * cols, P = rows * cols;
    const int bins = attention_distance_bins(rows, cols);
    double *mass = vit_malloc(sizeof(double) * (size_t)H * (bins + 1));
    double *distance = mass + (size_t)H * bins; // the one figure of attention_by_distance() used
    attention_by_distance(mass, distance, probs, H, prefix, rows, cols);
    for (int h = 0; h < H; h++) {
        double entropy = 0, on_prefix = 0;
        for (int i = prefix; i < N; i++) { // patch queries only, as the distance
            const float *row = probs + ((size_t)h * N + i) * N;
            entropy += row_entropy(row, N);
            for (int j = 0; j < prefix; j++) on_prefix += row[j];
        }
        float *f = out + (size_t)h * HEAD_FINGERPRINT_COLUMNS;
        f[HEAD_FINGERPRINT_DISTANCE] = (float)distance[h];
        f[HEAD_FINGERPRINT_ENTROPY] = P > 0 ? (float)(entropy / P) : 0.0f;
        f[HEAD_FINGERPRINT_CLS] = P > 0 ? (float)(on_prefix / P) : 0.0f;
    }
    free(mass);
}
// [head_fingerprints_layer]

VitStatus head_fingerprints_from_trace(Tensor *out, const VitConfig *cfg, const TraceRecorder *r,
                                       VitError *err) {
    // out is (B, L, H, 3); each blocks.{l}.attn.probs is (B, H, N, N)
    const int L = cfg->depth, H = cfg->heads, N = vit_num_tokens(cfg);
    const int side = cfg->image_size / cfg->patch_size, prefix = N - side * side;
    *out = (Tensor){0};
    int B = 0;
    for (int l = 0; l < L; l++) {
        char name[48];
        snprintf(name, sizeof name, "blocks.%d.attn.probs", l);
        const Tensor *t = trace_find(r, name);
        if (!t || t->ndim != 4 || t->shape[1] != H || t->shape[2] != N || t->shape[3] != N ||
            (l > 0 && t->shape[0] != B)) {
            tensor_free(out);
            return vit_fail(err, VIT_ERR_INPUT, "head fingerprints: the trace has no %s of shape "
                            "(B, H=%d, N=%d, N)%s", name, H, N, l ? " like blocks.0's" : "");
        }
        if (l == 0) B = t->shape[0], *out = tensor_new(4, B, L, H, HEAD_FINGERPRINT_COLUMNS);
        for (int b = 0; b < B; b++)
            head_fingerprints_layer(out->data + ((size_t)b * L + l) * H * HEAD_FINGERPRINT_COLUMNS,
                                    t->data + (size_t)b * H * N * N, H, prefix, side, side);
    }
    return VIT_OK;
}

void head_fingerprints_order(int *order, const float *table, int n, int column) {
    // order is (n), table is (n, 3)
    for (int i = 0; i < n; i++) {
        int at = i; // where row i goes among the i already placed: after every larger or equal one
        if (column >= 0) {
            const float v = table[(size_t)i * HEAD_FINGERPRINT_COLUMNS + column];
            while (at > 0 && table[(size_t)order[at - 1] * HEAD_FINGERPRINT_COLUMNS + column] < v) {
                order[at] = order[at - 1];
                at--;
            }
        }
        order[at] = i;
    }
}
