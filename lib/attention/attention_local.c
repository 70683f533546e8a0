/**
 * @file attention_local.c
 * @brief Local-window attention: each query reads only the keys near it on
 *        the patch grid (attention.h, attention_local(), attention_mask_window()).
 *
 * Shape legend: B sequences, H heads, N = prefix + rows·cols tokens, Dh = D/H,
 * W(i) the keys query i may see.
 *
 * Exact attention gives every query all N keys; a window keeps the keys of
 * the patches within r rows and r columns of the query's own patch, plus the
 * prefix tokens ([cls]), which see everything and are seen by everyone, so
 * information can still cross the whole image in two steps: patch → [cls] →
 * patch. Within the window the arithmetic is the usual softmax(s·q·k + masks)
 * times V; outside it, the weights that exact attention would have given are
 * simply dropped, and the kept ones renormalised. That is the approximation.
 *
 * Each query gathers its window's keys into a list, scores them, takes
 * softmax() over the list (so hidden and NaN rows behave as softmax() says)
 * and sums the values. A thread keeps one list of indices and one row of
 * scores, at most N long (a prefix query sees every key).
 *
 * Deliberately omitted: the backward, and the blocked layouts that make
 * windowed attention fast on GPUs (Swin's shifted windows, sliding-window
 * kernels): this is the definition, computed directly.
 */
#include "attention/attention.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"

// Does query i see key j? Both are token indices; tokens ≥ prefix are patches.
// [in_window]
static bool in_window(int i, int j, int prefix, int cols, int radius) {
    if (i < prefix || j < prefix) return true;
    const int pi = i - prefix, pj = j - prefix;
    return abs(pi / cols - pj / cols) <= radius && abs(pi % cols - pj % cols) <= radius;
}
// [in_window]

// [attention_mask_window]
void attention_mask_window(float *mask, int prefix, int rows, int cols, int radius) {
    // mask is (N, N), N = prefix + rows·cols
    const int N = prefix + rows * cols;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            mask[(size_t)i * N + j] = in_window(i, j, prefix, cols, radius) ? 0.0f : -INFINITY;
}
// [attention_mask_window]

// The keys query i sees, in increasing order: the prefix, then its window's
// patches row by row. Returns how many; keys has room for N.
// [window_keys]
static int window_keys(int *keys, int i, int prefix, int rows, int cols, int radius) {
    const int N = prefix + rows * cols;
    int n = 0;
    for (int j = 0; j < prefix; j++) keys[n++] = j;
    if (i < prefix) {
        for (int j = prefix; j < N; j++) keys[n++] = j;
        return n;
    }
    const int y = (i - prefix) / cols, x = (i - prefix) % cols;
    const int y0 = y - radius > 0 ? y - radius : 0, y1 = y + radius < rows - 1 ? y + radius : rows - 1;
    const int x0 = x - radius > 0 ? x - radius : 0, x1 = x + radius < cols - 1 ? x + radius : cols - 1;
    for (int yy = y0; yy <= y1; yy++)
        for (int xx = x0; xx <= x1; xx++) keys[n++] = prefix + yy * cols + xx;
    return n;
}
// [window_keys]

// One query row of one head: out (Dh) from q (Dh) and the head's k, v (N, Dh).
// [local_row]
static void local_row(float *out, const float *q, const float *k, const float *v, int i, int N,
                      int Dh, float scale, const float *mask, const float *pad, const int *keys,
                      int n, float *s) {
    for (int m = 0; m < n; m++) {
        const int j = keys[m];
        float x = scale * dot(q, k + (size_t)j * Dh, Dh);
        if (mask) x += mask[(size_t)i * N + j];
        if (pad) x += pad[j];
        s[m] = x;
    }
    softmax(s, s, 1, n); // over the window only: its weights sum to 1
    for (int d = 0; d < Dh; d++) out[d] = 0.0f;
    for (int m = 0; m < n; m++) { // a hidden key weighs 0; a NaN row stays NaN
        const float p = s[m], *vj = v + (size_t)keys[m] * Dh;
        for (int d = 0; d < Dh; d++) out[d] += p * vj[d];
    }
}
// [local_row]

// [attention_local]
void attention_local(float *out, const float *q, const float *k, const float *v,
                     const AttentionOptions *opt, int B, int H, int prefix, int rows, int cols,
                     int Dh, int radius) {
    // q, k, v, out are (B, H, N, Dh) with N = prefix + rows·cols
    const int N = prefix + rows * cols;
    if (B < 1 || H < 1 || N < 1 || Dh < 1 || rows < 1 || cols < 1) return;
    if (radius < 0) radius = 0;
    const float scale = attention_scale(opt, Dh);
    const float *mask = opt ? opt->mask : NULL, *pad = opt ? opt->key_padding_mask : NULL;
    const long rows_total = (long)B * H * N;
#pragma omp parallel if (rows_total > 256)
    {
        int *keys = vit_malloc(sizeof *keys * (size_t)N);
        float *s = vit_malloc(sizeof *s * (size_t)N);
#pragma omp for schedule(static)
        for (long t = 0; t < rows_total; t++) { // (sequence, head, query): independent rows
            const int i = (int)(t % N), b = (int)(t / N / H);
            const size_t head = (size_t)(t / N) * N * Dh;
            const int n = window_keys(keys, i, prefix, rows, cols, radius);
            local_row(out + head + (size_t)i * Dh, q + head + (size_t)i * Dh, k + head, v + head, i,
                      N, Dh, scale, mask, pad ? pad + (size_t)b * N : NULL, keys, n, s);
        }
        free(keys);
        free(s);
    }
}
// [attention_local]
