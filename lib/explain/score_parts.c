/**
 * @file score_parts.c
 * @brief One attention score taken apart (score_parts.h): products, sum,
 *        scale, the row's softmax, each checked against the recorded stages.
 *
 * Shape legend: B batch, H heads, N tokens, Dh per head.
 */
#include "explain/score_parts.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// Is t a (B, H, N, Dh) tensor like q? (k must be q's shape; Dh may differ from N.)
static bool heads_shaped(const Tensor *t) { return t && t->ndim == 4 && t->numel > 0; }

static VitStatus check_cell(const Tensor *q, const Tensor *k, ScoreCell at, VitError *err) {
    if (!heads_shaped(q) || !tensor_same_shape(q, k))
        return vit_fail(err, VIT_ERR_INPUT, "score parts: q and k must both be (B, H, N, Dh)");
    const int B = q->shape[0], H = q->shape[1], N = q->shape[2];
    if (at.image < 0 || at.image >= B)
        return vit_fail(err, VIT_ERR_INPUT, "image %d is outside the batch: 0 … %d", at.image,
                        B - 1);
    if (at.head < 0 || at.head >= H)
        return vit_fail(err, VIT_ERR_INPUT, "head %d is outside 0 … %d", at.head, H - 1);
    if (at.query < 0 || at.query >= N)
        return vit_fail(err, VIT_ERR_INPUT, "query %d is outside the tokens 0 … %d", at.query,
                        N - 1);
    if (at.key < 0 || at.key >= N)
        return vit_fail(err, VIT_ERR_INPUT, "key %d is outside the tokens 0 … %d", at.key, N - 1);
    return VIT_OK;
}

// q_i · k_j summed in double, rounded once; *abs_sum = Σ_d |q_i[d] k_j[d]| (for the bound).
static float dot_exact(const float *qi, const float *kj, int Dh, double *abs_sum) {
    double sum = 0, abs = 0;
    for (int d = 0; d < Dh; d++) {
        const double p = (double)qi[d] * kj[d];
        sum += p;
        abs += fabs(p);
    }
    *abs_sum = abs;
    return (float)sum;
}

// What the masks add at (b, i, j): 0 without masks, −inf where one hides the key.
static float mask_at(const AttentionOptions *opt, int b, int i, int j, int N) {
    float m = 0;
    if (opt && opt->mask) m += opt->mask[(size_t)i * N + j];
    if (opt && opt->key_padding_mask) m += opt->key_padding_mask[(size_t)b * N + j];
    return m;
}

// The query's row of scaled scores, every key: row is (N); returns the largest score bound.
static float scaled_row(float *row, const float *qi, const float *k_head,
                        const AttentionOptions *opt, int b, int i, int N, int Dh, float scale) {
    // k_head is (N, Dh), head h of image b
    double worst = 0;
    for (int j = 0; j < N; j++) {
        double abs;
        const float score = dot_exact(qi, k_head + (size_t)j * Dh, Dh, &abs);
        row[j] = score * scale + mask_at(opt, b, i, j, N);
        worst = fmax(worst, abs);
    }
    return (float)(Dh * (double)FLT_EPSILON * worst * scale);
}

// The softmax of the row at key j, step by step, as softmax() computes it.
static void row_softmax(ScoreParts *p, int j) {
    int best = 0;
    for (int c = 1; c < p->N; c++)
        if (p->row[c] > p->row[best]) best = c;
    p->row_max = p->row[best];
    p->row_argmax = best;
    if (p->row_max == -INFINITY) { // every key hidden: no mass anywhere, as softmax()
        p->exp = p->row_sum = p->prob = 0;
        return;
    }
    double sum = 0;
    for (int c = 0; c < p->N; c++) sum += expf(p->row[c] - p->row_max);
    p->exp = expf(p->row[j] - p->row_max);
    p->row_sum = (float)sum;
    p->prob = (float)(p->exp / sum);
}

// [score_parts]
VitStatus score_parts(ScoreParts *parts, const Tensor *q, const Tensor *k,
                      const AttentionOptions *opt, ScoreCell at, VitError *err) {
    // q, k are (B, H, N, Dh); parts->q, k, products are (Dh), parts->row (N)
    memset(parts, 0, sizeof *parts);
    VitStatus s = check_cell(q, k, at, err);
    if (s != VIT_OK) return s;
    const int H = q->shape[1], N = q->shape[2], Dh = q->shape[3];
    const size_t head = ((size_t)at.image * H + at.head) * N * Dh; // (N, Dh) of this head
    const float *qi = q->data + head + (size_t)at.query * Dh; // (Dh)
    const float *kj = k->data + head + (size_t)at.key * Dh;   // (Dh)
    parts->Dh = Dh, parts->N = N;
    parts->q = vit_malloc(sizeof(float) * (size_t)Dh);
    parts->k = vit_malloc(sizeof(float) * (size_t)Dh);
    parts->products = vit_malloc(sizeof(float) * (size_t)Dh);
    parts->row = vit_malloc(sizeof(float) * (size_t)N);
    memcpy(parts->q, qi, sizeof(float) * (size_t)Dh);
    memcpy(parts->k, kj, sizeof(float) * (size_t)Dh);
    for (int d = 0; d < Dh; d++) parts->products[d] = qi[d] * kj[d]; // chapter 01: q ⊙ k
    double abs;
    parts->score = dot_exact(qi, kj, Dh, &abs);                       // Σ q ⊙ k
    parts->bound = (float)(Dh * (double)FLT_EPSILON * abs);
    parts->scale = attention_scale(opt, Dh);                          // chapter 02: ÷ √Dh
    parts->mask = mask_at(opt, at.image, at.query, at.key, N);
    parts->scaled = parts->score * parts->scale + parts->mask;
    parts->row_bound = scaled_row(parts->row, qi, k->data + head, opt, at.image, at.query, N, Dh,
                                  parts->scale);
    row_softmax(parts, at.key);                                       // chapter 03: softmax
    return VIT_OK;
}
// [score_parts]

void score_parts_free(ScoreParts *parts) {
    free(parts->q), free(parts->k), free(parts->products), free(parts->row);
    memset(parts, 0, sizeof *parts);
}

/* ------------------------------------------------------------ the checks */

// The value of a (B, H, N, N) stage at the cell, or NaN when it is missing or not that shape.
static float stage_at(const Tensor *t, ScoreCell at, int N) {
    if (!t || t->ndim != 4 || t->shape[2] != N || t->shape[3] != N || at.image >= t->shape[0] ||
        at.head >= t->shape[1])
        return NAN;
    const int H = t->shape[1];
    return t->data[(((size_t)at.image * H + at.head) * N + at.query) * N + at.key];
}

static bool part_check(PartCheck *c, float part, float recorded, float tol) {
    c->recorded = recorded;
    c->tol = tol;
    c->diff = part - recorded;
    // equal values match outright (−inf against −inf for a hidden key); NaN never does
    c->matches = part == recorded || fabsf(c->diff) <= tol;
    return c->matches;
}

// [score_parts_check]
bool score_parts_check(ScoreChecks *checks, const ScoreParts *parts, const Tensor *scores,
                       const Tensor *scaled, const Tensor *probs, ScoreCell at) {
    const float eps = FLT_EPSILON, p = parts->prob;
    const float scaled_tol = parts->bound * parts->scale + eps * fabsf(parts->scaled);
    bool ok = part_check(&checks->score, parts->score, stage_at(scores, at, parts->N),
                         parts->bound);
    ok &= part_check(&checks->scaled, parts->scaled, stage_at(scaled, at, parts->N), scaled_tol);
    ok &= part_check(&checks->prob, p, stage_at(probs, at, parts->N),
                     p * (2 * parts->row_bound + 8 * eps) + 1e-12f);
    return ok;
}
// [score_parts_check]

char *score_parts_stage(char *buf, size_t size, int layer, const char *what) {
    snprintf(buf, size, "blocks.%d.attn.%s", layer, what);
    return buf;
}

VitStatus score_parts_from_trace(ScoreParts *parts, ScoreChecks *checks, const TraceRecorder *r,
                                 int layer, ScoreCell at, VitError *err) {
    static const char *const stages[] = {"q", "k", "scores", "scaled", "probs"};
    const Tensor *t[5];
    memset(parts, 0, sizeof *parts);
    for (int s = 0; s < 5; s++) {
        char name[64];
        t[s] = trace_find(r, score_parts_stage(name, sizeof name, layer, stages[s]));
        if (!t[s]) return vit_fail(err, VIT_ERR_INPUT, "the pass recorded no %s", name);
    }
    VitStatus s = score_parts(parts, t[0], t[1], NULL, at, err);
    if (s == VIT_OK) score_parts_check(checks, parts, t[2], t[3], t[4], at);
    return s;
}
