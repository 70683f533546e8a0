/**
 * @file test_ch04_attention.c
 * @brief Chapter 04 against PyTorch, and the claims it makes about one attention head.
 *
 * `build/tests/run ch04_attention` grades a student's own attention pieces
 * too: the claims below call attention_scores(), attention_scale_mask(),
 * attention_context(), attention() and attention_entropy() from lib (or
 * whatever replaced them).
 *
 * The probes at the end are exercise 04's diagnosis: each runs attention() on
 * a PyTorch case (the chapter's head in tests/golden/ch04_attention.safetensors,
 * the overflow head of attention_cases.safetensors) and, when it fails,
 * compares probs and out with what each likely mistake gives, computed here by
 * a small attention by hand with that mistake switched on (no scale, Dh for
 * √Dh, Q and K swapped, the softmax down the columns, the mask after the
 * softmax, the key-padding mask left out, probs·V read transposed), naming the
 * one that matches with check_hint().
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "../chapters/chapters.h"
#include "attention/attention.h"
#include "check.h"
#include "ops/ops.h"
#include "base/rng.h"
#include "base/trace.h"

enum { N = 6, DH = 5 };

// Random q, k, v of shape (N, DH) from one seed.
static void random_qkv(float *q, float *k, float *v, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed);
    rng_fill_normal(&rng, q, N * DH, 0.0f, 1.0f);
    rng_fill_normal(&rng, k, N * DH, 0.0f, 1.0f);
    rng_fill_normal(&rng, v, N * DH, 0.0f, 1.0f);
}

// Two outputs equal element by element, none left NaN (NaN ≠ NaN): with both
// buffers poisoned first, an element neither call wrote fails, where memcmp()
// would find the two NaNs alike.
static bool same_and_written(const float *a, const float *b, int n) {
    for (int i = 0; i < n; i++)
        if (!(a[i] == b[i])) return false;
    return true;
}

static void test_chapter_matches_pytorch(void) {
    check_chapter_against_golden(chapter04_run, "ch04_attention.safetensors");
}

static void test_rows_are_probabilities(void) {
    float q[N * DH], k[N * DH], v[N * DH], out[N * DH], probs[N * N];
    random_qkv(q, k, v, 41);
    attention(out, probs, q, k, v, NULL, N, DH);
    for (int i = 0; i < N; i++) {
        double sum = 0;
        for (int j = 0; j < N; j++) {
            CU_ASSERT(probs[i * N + j] > 0.0f);
            sum += probs[i * N + j];
        }
        CU_ASSERT_DOUBLE_EQUAL(sum, 1.0, 1e-6);
    }
}

static void test_scale_is_one_over_sqrt_dh(void) {
    float scores[2 * 2] = {4.0f, -2.0f, 0.0f, 8.0f}, scaled[4];
    float mask[4] = {0.0f, -INFINITY, 0.0f, 0.0f};
    attention_scale_mask(scaled, scores, NULL, 1, 1, 2, 16); // 1/√16 = 0.25
    CU_ASSERT_EQUAL(scaled[0], 1.0f);
    CU_ASSERT_EQUAL(scaled[1], -0.5f);
    CU_ASSERT_EQUAL(scaled[3], 2.0f);
    attention_scale_mask(scaled, scores, &(AttentionOptions){.mask = mask}, 1, 1, 2, 16);
    CU_ASSERT(isinf(scaled[1]) && scaled[1] < 0);
    CU_ASSERT_EQUAL(scaled[0], 1.0f);
    CU_ASSERT_EQUAL(attention_scale(NULL, 16), 0.25f);
    CU_ASSERT_EQUAL(attention_scale(&(AttentionOptions){0}, 16), 0.25f); // 0: the default
}

static void test_a_chosen_scale_replaces_the_default(void) {
    // timm's qk_scale: scores × scale, whatever Dh is
    float scores[2 * 2] = {4.0f, -2.0f, 0.0f, 8.0f}, scaled[4];
    AttentionOptions opt = {.scale = 2.0f};
    CU_ASSERT_EQUAL(attention_scale(&opt, 16), 2.0f);
    attention_scale_mask(scaled, scores, &opt, 1, 1, 2, 16);
    for (int i = 0; i < 4; i++) CU_ASSERT_EQUAL(scaled[i], 2.0f * scores[i]);
    // attention() with scale 1/√Dh spelled out equals attention() with no options
    float q[N * DH], k[N * DH], v[N * DH], out1[N * DH], out2[N * DH], p1[N * N], p2[N * N];
    random_qkv(q, k, v, 46);
    check_poison(out1, N * DH), check_poison(out2, N * DH); // NaN: see same_and_written()
    check_poison(p1, N * N), check_poison(p2, N * N);
    attention(out1, p1, q, k, v, NULL, N, DH);
    attention(out2, p2, q, k, v, &(AttentionOptions){.scale = 1.0f / sqrtf((float)DH)}, N, DH);
    CU_ASSERT_TRUE(same_and_written(p1, p2, N * N));
    CU_ASSERT_TRUE(same_and_written(out1, out2, N * DH));
}

static void test_larger_scale_sharpens_every_row(void) {
    // the chapter's claim: at scales 1/Dh < 1/√Dh < 1 every row's largest
    // weight grows and its entropy falls
    TraceRecorder rec = {0};
    Chapter ch = {.out = NULL, .pin = trace_record, .pin_user = &rec};
    chapter04_run(&ch);
    const Tensor *top = trace_find(&rec, "row_max_by_scale");
    const Tensor *ent = trace_find(&rec, "row_entropy_by_scale");
    CU_ASSERT_PTR_NOT_NULL_FATAL(top);
    CU_ASSERT_PTR_NOT_NULL_FATAL(ent);
    CU_ASSERT_EQUAL_FATAL(top->shape[0], 3);
    int n = top->shape[1];
    for (int s = 1; s < 3; s++)
        for (int i = 0; i < n; i++) {
            CU_ASSERT(top->data[s * n + i] > top->data[(s - 1) * n + i]);
            CU_ASSERT(ent->data[s * n + i] < ent->data[(s - 1) * n + i]);
        }
    trace_recorder_free(&rec);
}

static void test_entropy_of_rows(void) {
    float p[3 * 4] = {1, 0, 0, 0, 0.25f, 0.25f, 0.25f, 0.25f, 0.5f, 0.5f, 0, 0}, h[3];
    attention_entropy(h, p, 3, 4);
    CU_ASSERT_EQUAL(h[0], 0.0f); // one key takes everything (0 ln 0 counts 0)
    CU_ASSERT_DOUBLE_EQUAL(h[1], log(4.0), 1e-6);
    CU_ASSERT_DOUBLE_EQUAL(h[2], log(2.0), 1e-6);
}

static void test_equal_keys_give_the_average_value(void) {
    // every key the same: every score in a row is equal, softmax is uniform,
    // and each output is the plain mean of the value rows
    float q[N * DH], k[N * DH], v[N * DH], out[N * DH], probs[N * N];
    random_qkv(q, k, v, 42);
    for (int j = 1; j < N; j++) memcpy(&k[j * DH], k, DH * sizeof(float));
    attention(out, probs, q, k, v, NULL, N, DH);
    for (int d = 0; d < DH; d++) {
        double mean = 0;
        for (int j = 0; j < N; j++) mean += v[j * DH + d];
        mean /= N;
        for (int i = 0; i < N; i++) CU_ASSERT_DOUBLE_EQUAL(out[i * DH + d], mean, 1e-5);
    }
}

static void test_one_call_equals_the_steps(void) {
    float q[N * DH], k[N * DH], v[N * DH], out[N * DH], probs[N * N];
    float scores[N * N], scaled[N * N], p[N * N], o[N * DH];
    random_qkv(q, k, v, 43);
    attention(out, probs, q, k, v, NULL, N, DH);
    attention_scores(scores, q, k, 1, N, DH);
    attention_scale_mask(scaled, scores, NULL, 1, 1, N, DH);
    softmax(p, scaled, N, N);
    attention_context(o, p, v, 1, N, DH);
    for (int i = 0; i < N * N; i++) CU_ASSERT_DOUBLE_EQUAL(probs[i], p[i], 1e-6);
    for (int i = 0; i < N * DH; i++) CU_ASSERT_DOUBLE_EQUAL(out[i], o[i], 1e-6);
}

static void test_padding_cannot_leak(void) {
    // changing a padded token's value must not change any real token's output
    float q[N * DH], k[N * DH], v[N * DH], mask[N * N];
    float out1[N * DH], out2[N * DH], probs[N * N];
    random_qkv(q, k, v, 44);
    attention_mask_padding(mask, N, N - 2); // the last two tokens are padding
    AttentionOptions opt = {.mask = mask};
    attention(out1, probs, q, k, v, &opt, N, DH);
    for (int i = 0; i < N; i++) {
        CU_ASSERT_EQUAL(probs[i * N + N - 1], 0.0f);
        CU_ASSERT_EQUAL(probs[i * N + N - 2], 0.0f);
    }
    for (int d = 0; d < DH; d++) v[(N - 1) * DH + d] += 100.0f;
    attention(out2, probs, q, k, v, &opt, N, DH);
    for (int i = 0; i < N * DH; i++) CU_ASSERT_EQUAL(out1[i], out2[i]);
}

static void test_causal_mask_hides_the_future(void) {
    float q[N * DH], k[N * DH], v[N * DH], mask[N * N], out[N * DH], probs[N * N];
    random_qkv(q, k, v, 45);
    attention_mask_causal(mask, N);
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            if (j <= i) {
                CU_ASSERT_EQUAL(mask[i * N + j], 0.0f);
            } else {
                CU_ASSERT(isinf(mask[i * N + j]) && mask[i * N + j] < 0);
            }
        }
    attention(out, probs, q, k, v, &(AttentionOptions){.mask = mask}, N, DH);
    for (int i = 0; i < N; i++)
        for (int j = i + 1; j < N; j++) CU_ASSERT_EQUAL(probs[i * N + j], 0.0f);
    for (int d = 0; d < DH; d++) CU_ASSERT_DOUBLE_EQUAL(out[d], v[d], 1e-6); // token 0 copies v_0
}

static void test_a_key_padding_row_equals_the_shared_mask(void) {
    // one sequence: a (1, N) key-padding mask acts as the (N, N) padding mask
    float q[N * DH], k[N * DH], v[N * DH], mask[N * N], pad[N];
    float out1[N * DH], out2[N * DH], p1[N * N], p2[N * N];
    random_qkv(q, k, v, 47);
    int length = N - 2;
    attention_mask_padding(mask, N, length);
    attention_mask_key_padding(pad, &length, 1, N);
    check_poison(out1, N * DH), check_poison(out2, N * DH); // NaN: see same_and_written()
    check_poison(p1, N * N), check_poison(p2, N * N);
    attention(out1, p1, q, k, v, &(AttentionOptions){.mask = mask}, N, DH);
    attention(out2, p2, q, k, v, &(AttentionOptions){.key_padding_mask = pad}, N, DH);
    CU_ASSERT_TRUE(same_and_written(p1, p2, N * N));
    CU_ASSERT_TRUE(same_and_written(out1, out2, N * DH));
}

static void test_padding_mask_layout(void) {
    float mask[3 * 3];
    attention_mask_padding(mask, 3, 2);
    for (int i = 0; i < 3; i++) {
        CU_ASSERT_EQUAL(mask[i * 3 + 0], 0.0f);
        CU_ASSERT_EQUAL(mask[i * 3 + 1], 0.0f);
        CU_ASSERT(isinf(mask[i * 3 + 2]) && mask[i * 3 + 2] < 0);
    }
    attention_mask_padding(mask, 3, 3); // nothing padded: all zeros
    for (int i = 0; i < 9; i++) CU_ASSERT_EQUAL(mask[i], 0.0f);
    // a key-padding mask: one row per sequence, (B, N)
    const int lengths[3] = {3, 1, 0};
    float pad[3 * 3];
    attention_mask_key_padding(pad, lengths, 3, 3);
    for (int b = 0; b < 3; b++)
        for (int j = 0; j < 3; j++) {
            if (j < lengths[b]) {
                CU_ASSERT_EQUAL(pad[b * 3 + j], 0.0f);
            } else {
                CU_ASSERT(isinf(pad[b * 3 + j]) && pad[b * 3 + j] < 0);
            }
        }
}

/* -------------------------------------------------------------- the probes */

static Tensor chapter_golden(const char *name) {
    return golden_tensor("ch04_attention.safetensors", name);
}

// The mistakes the hand-made head below can make, one bit each.
enum {
    SWAP_QK = 1,      // scores[i][j] = k_i · q_j: Q and K swapped (K·Qᵀ)
    COLUMNS = 2,      // softmax down each column instead of along each row
    MASK_AFTER = 4,   // the mask added to the probabilities, after the softmax
    ZERO_AFTER = 8,   // masked probabilities set to 0 after the softmax (masked_fill)
    NO_SOFTMAX = 16,  // probs = the scaled scores
    PROBS_T = 32,     // out[i] = Σ_j probs[j][i]·v_j: column i of probs instead of row i
};
enum { MAXN = 8, MAXDH = 8 }; // the probes' heads are at most (8, 8)

// One head by hand, in double: probs = softmax(s·Q·Kᵀ + mask + pad), out = probs·V, with
// the mistakes in `how` switched on. mask is (N, N) or NULL, pad (N) or NULL.
static void head_by_hand(float *out, float *probs, const float *q, const float *k,
                         const float *v, const float *mask, const float *pad, double s, int n,
                         int dh, int how) {
    double p[MAXN][MAXN];
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            const float *a = how & SWAP_QK ? k : q, *b = how & SWAP_QK ? q : k;
            double dot_ij = 0;
            for (int d = 0; d < dh; d++) dot_ij += (double)a[i * dh + d] * b[j * dh + d];
            double m = mask && !(how & (MASK_AFTER | ZERO_AFTER)) ? mask[i * n + j] : 0;
            p[i][j] = s * dot_ij + m + (pad ? pad[j] : 0);
        }
    if (!(how & NO_SOFTMAX))
        for (int l = 0; l < n; l++) { // row l, or column l
            double m = -INFINITY, sum = 0;
            for (int t = 0; t < n; t++) m = fmax(m, how & COLUMNS ? p[t][l] : p[l][t]);
            for (int t = 0; t < n; t++) sum += exp((how & COLUMNS ? p[t][l] : p[l][t]) - m);
            for (int t = 0; t < n; t++) {
                double *e = how & COLUMNS ? &p[t][l] : &p[l][t];
                *e = m == -INFINITY ? 0 : exp(*e - m) / sum;
            }
        }
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++) {
            if (mask && how & MASK_AFTER) p[i][j] += mask[i * n + j];
            if (mask && how & ZERO_AFTER && isinf(mask[i * n + j])) p[i][j] = 0;
            probs[i * n + j] = (float)p[i][j];
        }
    for (int i = 0; i < n; i++)
        for (int d = 0; d < dh; d++) {
            double o = 0;
            for (int j = 0; j < n; j++) o += (how & PROBS_T ? p[j][i] : p[i][j]) * v[j * dh + d];
            out[i * dh + d] = (float)o;
        }
}

// One probe case: the inputs, the options, and what PyTorch says.
typedef struct {
    const char *label;
    const float *q, *k, *v;
    int n, dh;
    AttentionOptions opt;
    const float *pad_as_mask; // the key-padding row spread to (N, N), when opt has one
    const Tensor *want_probs, *want_out; // want_out may be NULL
    float atol, rtol;
} HeadCase;


static bool near_n(const float *a, const float *b, int n, float atol, float rtol) {
    Tensor ta = tensor_view((float *)a, 1, n), tb = tensor_view((float *)b, 1, n);
    return tensor_near(&ta, &tb, atol, rtol);
}

static void fill_nan(float *x, int n) {
    for (int i = 0; i < n; i++) x[i] = NAN;
}

// The scale @p opt asks for, worked out here: opt->scale, or 1/√Dh when that is 0.
// Not lib's attention_scale(): a broken scale there would move the reference
// with it, and the probe would blame the mask for the scale's mistake.
static double scale_wanted(const AttentionOptions *opt, int dh) {
    return opt && opt->scale != 0.0f ? opt->scale : 1.0 / sqrt(dh);
}

// attention() on the case failed: say which mistake its probs and out look like.
static void diagnose_head(const HeadCase *c, const float *out, const float *probs) {
    const int n = c->n, dh = c->dh, nn = n * n;
    const float *mask = c->opt.mask ? c->opt.mask : c->pad_as_mask;
    const float *want = c->want_probs->data;
    const double s = scale_wanted(&c->opt, dh);
    float co[MAXN * MAXDH], cp[MAXN * MAXN];
    int nan_p = 0, nan_o = 0, zero_p = 0, zero_o = 0, nonfinite = 0, want_nonfinite = 0;
    for (int i = 0; i < nn; i++) {
        nan_p += isnan(probs[i]) != 0, zero_p += probs[i] == 0.0f;
        nonfinite += !isfinite(probs[i]), want_nonfinite += !isfinite(want[i]);
    }
    for (int i = 0; i < n * dh; i++) nan_o += isnan(out[i]) != 0, zero_o += out[i] == 0.0f;
    const bool probs_empty = nan_p == nn || zero_p == nn;
    const bool out_empty = nan_o == n * dh || zero_o == n * dh;
    if (probs_empty && out_empty) {
        check_hint("attention() wrote neither out nor probs (all %s): is it still the exercise's "
                   "placeholder?", nan_p == nn ? "untouched" : "zeros");
        return;
    }
    const bool probs_ok = near_n(probs, want, nn, c->atol, c->rtol);
    if (probs_empty) {
        check_hint("probs was not written: attention() hands back the attention matrix too, "
                   "probs[i][j] = how much query i takes from key j (work in it, as lib does)");
        return;
    }
    if (probs_ok) {
        head_by_hand(co, cp, c->q, c->k, c->v, c->opt.mask, c->opt.key_padding_mask, s, n, dh,
                     PROBS_T);
        if (out_empty)
            check_hint("probs are right but out was not written: out = probs·V, "
                       "out[i][d] = sum_j probs[i][j]*v[j][d]");
        else if (near_n(out, co, n * dh, c->atol, c->rtol))
            check_hint("probs are right but out used column i of probs: out row i is "
                       "sum_j probs[i][j]*v_j, row i of probs (query i's weights) times V");
        else
            check_hint("probs are right but out is not: out = probs·V, (N, N)·(N, Dh), "
                       "out[i][d] = sum_j probs[i][j]*v[j][d]");
        return;
    }
    // masked keys must get exactly 0. (An infinity there is no probability at all: the
    // softmax left out, or the mask added after it; the candidates below name those.)
    if (mask) {
        bool leak = false, zero_masked = true;
        for (int i = 0; i < nn; i++)
            if (isinf(mask[i])) {
                leak |= probs[i] != 0.0f && !isinf(probs[i]);
                zero_masked &= probs[i] == 0.0f;
            }
        if (leak && c->opt.key_padding_mask) {
            head_by_hand(co, cp, c->q, c->k, c->v, NULL, NULL, s, n, dh, 0);
            if (near_n(probs, cp, nn, c->atol, c->rtol))
                check_hint("the key-padding mask was ignored: opt->key_padding_mask is (1, N) "
                           "here, added to every row i, scaled[i][j] += key_padding_mask[j]");
            else
                check_hint("masked keys got non-zero probability: add the key-padding mask "
                           "key_padding_mask[j] to every query row i before the softmax");
            return;
        }
        if (leak) {
            check_hint("masked positions got non-zero probability: add the mask before the "
                       "softmax, to the scaled scores (-inf there makes e^x exactly 0 and the "
                       "other weights share the rest)");
            return;
        }
        head_by_hand(co, cp, c->q, c->k, c->v, mask, NULL, s, n, dh, ZERO_AFTER);
        if (zero_masked && near_n(probs, cp, nn, c->atol, c->rtol)) {
            check_hint("the masked weights were zeroed after the softmax, so the rows no longer "
                       "sum to 1: add the mask before the softmax (-inf), which shares the "
                       "weight among the visible keys");
            return;
        }
    }
    const struct {
        double scale;
        int how;
        const char *hint;
    } wrong[] = {
        {1.0, 0, "did you divide by √Dh? probs are the softmax of the unscaled scores Q·Kᵀ: "
                 "multiply every score by s = attention_scale(opt, Dh) first"},
        {1.0 / dh, 0, "√Dh, not Dh: the scores were divided by Dh, so softmax saw them √Dh "
                      "times too small; the scale is 1/√Dh (attention_scale(opt, Dh))"},
        {0.0, 0, "probs are uniform, as for a scale of 0: opt->scale = 0 means the default "
                 "1/√Dh (attention_scale(opt, Dh) returns the right one)"},
        {-1.0, 0, "opt->scale was ignored: a non-zero opt->scale (timm's qk_scale) replaces "
                  "1/√Dh; attention_scale(opt, Dh) returns the scale to use"},
        {s, SWAP_QK, "probs look like softmax(K·Qᵀ): Q and K swapped. scores[i][j] is q_i · k_j, "
                     "query i (row i of q) against key j (row j of k)"},
        {s, COLUMNS, "softmax over the wrong axis: the rows of probs do not sum to 1 but the "
                     "columns do; softmax each row i, query i's scores over all the keys j"},
        {s, NO_SOFTMAX, "probs are the scaled scores: softmax each row into probabilities"},
        {s, MASK_AFTER, "masked positions got non-zero probability: add the mask before the "
                        "softmax"},
    };
    for (size_t w = 0; w < sizeof wrong / sizeof wrong[0]; w++) {
        double ws = wrong[w].scale == -1.0 ? 1.0 / sqrt(dh) : wrong[w].scale;
        if (wrong[w].scale == -1.0 && c->opt.scale == 0.0f) continue; // nothing to ignore
        if (wrong[w].how == 0 && fabs(ws - s) < 1e-12) continue;
        head_by_hand(co, cp, c->q, c->k, c->v, mask, NULL, ws, n, dh, wrong[w].how);
        if (near_n(probs, cp, nn, c->atol, c->rtol)) {
            check_hint("%s", wrong[w].hint);
            return;
        }
    }
    // after the candidates: the softmax left out also leaves the masks' -inf in probs
    if (nonfinite > want_nonfinite) {
        check_hint("%d of the %d probabilities came out NaN or inf: subtract the row maximum "
                   "before exp (scaled scores of several hundred overflow e^x in float32)",
                   nonfinite - want_nonfinite, nn);
        return;
    }
    bool rows_one = true, cols_one = true;
    for (int i = 0; i < n; i++) {
        double r = 0, col = 0;
        for (int j = 0; j < n; j++) r += probs[i * n + j], col += probs[j * n + i];
        rows_one &= fabs(r - 1) < 1e-5 || fabs(r) < 1e-7;
        cols_one &= fabs(col - 1) < 1e-5;
    }
    if (cols_one && !rows_one)
        check_hint("softmax over the wrong axis: the rows of probs do not sum to 1 but the "
                   "columns do; softmax each row i, query i's scores over all the keys j");
    else if (!rows_one)
        check_hint("the rows of probs do not sum to 1: softmax each row of the scaled, masked "
                   "scores (chapter 03)");
}

// attention() on one case, compared with PyTorch; diagnosed when wrong.
static void probe_head(const HeadCase *c) {
    const int n = c->n, dh = c->dh;
    float out[MAXN * MAXDH], probs[MAXN * MAXN];
    CU_ASSERT_FATAL(n <= MAXN && dh <= MAXDH);
    fill_nan(out, n * dh);
    fill_nan(probs, n * n);
    attention(out, probs, c->q, c->k, c->v, &c->opt, n, dh);
    char label[160];
    snprintf(label, sizeof label, "%s: probs", c->label);
    Tensor tp = tensor_view(probs, 2, n, n), to = tensor_view(out, 2, n, dh);
    // q and k, so a failure can be said in words (check.h): e.g. the unscaled Q·Kᵀ's softmax
    Tensor tq = tensor_view((float *)c->q, 2, n, dh), tk = tensor_view((float *)c->k, 2, n, dh);
    bool ok = assert_tensor_close_from(&tp, c->want_probs, c->atol, c->rtol, label, {"q", &tq},
                                       {"k", &tk});
    if (c->want_out) {
        snprintf(label, sizeof label, "%s: out", c->label);
        ok &= assert_tensor_close(&to, c->want_out, c->atol, c->rtol, label);
    }
    if (!ok) diagnose_head(c, out, probs);
}

// The chapter's q, k, v: 5 tokens, Dh = 4 (scale 1/2).
typedef struct {
    Tensor q, k, v;
} ChapterHead;

static ChapterHead chapter_head(void) {
    return (ChapterHead){chapter_golden("Q"), chapter_golden("K"), chapter_golden("V")};
}

static void chapter_head_free(ChapterHead *h) {
    tensor_free(&h->q), tensor_free(&h->k), tensor_free(&h->v);
}

static void test_probe_the_chapters_head(void) {
    ChapterHead h = chapter_head();
    Tensor probs = chapter_golden("probs"), out = chapter_golden("out");
    HeadCase c = {"the chapter's head, no options", h.q.data, h.k.data, h.v.data,
                  h.q.shape[0], h.q.shape[1], {.scale = 0}, NULL, &probs, &out, 1e-5f, 1e-4f};
    probe_head(&c);
    tensor_free(&probs), tensor_free(&out);
    chapter_head_free(&h);
}

static void test_probe_masks_go_in_before_the_softmax(void) {
    ChapterHead h = chapter_head();
    const char *names[2][3] = {{"padding_mask", "probs_padding", "out_padding"},
                               {"causal_mask", "probs_causal", "out_causal"}};
    for (int m = 0; m < 2; m++) {
        Tensor mask = chapter_golden(names[m][0]), probs = chapter_golden(names[m][1]);
        Tensor out = chapter_golden(names[m][2]);
        HeadCase c = {m ? "the chapter's head, causal mask" : "the chapter's head, padding mask",
                      h.q.data, h.k.data, h.v.data, h.q.shape[0], h.q.shape[1],
                      {.mask = mask.data}, NULL, &probs, &out, 1e-5f, 1e-4f};
        probe_head(&c);
        tensor_free(&mask), tensor_free(&probs), tensor_free(&out);
    }
    chapter_head_free(&h);
}

// One sequence's key-padding mask, (1, N): row 0 of the chapter's padding mask.
static void test_probe_a_key_padding_row_hides_keys(void) {
    ChapterHead h = chapter_head();
    Tensor mask = chapter_golden("padding_mask"), probs = chapter_golden("probs_padding");
    Tensor out = chapter_golden("out_padding");
    HeadCase c = {"the chapter's head, key-padding mask (1, N)", h.q.data, h.k.data, h.v.data,
                  h.q.shape[0], h.q.shape[1], {.key_padding_mask = mask.data}, mask.data,
                  &probs, &out, 1e-5f, 1e-4f};
    probe_head(&c);
    tensor_free(&mask), tensor_free(&probs), tensor_free(&out);
    chapter_head_free(&h);
}

static void test_probe_a_chosen_scale(void) {
    ChapterHead h = chapter_head();
    Tensor probs = chapter_golden("probs_scale_1"); // torch.softmax(Q @ K.T * 1, dim=-1)
    HeadCase c = {"the chapter's head, opt->scale = 1", h.q.data, h.k.data, h.v.data,
                  h.q.shape[0], h.q.shape[1], {.scale = 1.0f}, NULL, &probs, NULL, 1e-5f, 1e-4f};
    probe_head(&c);
    tensor_free(&probs);
    chapter_head_free(&h);
}

static void test_probe_scores_of_several_hundred(void) {
    Tensor q = golden_tensor("attention_cases.safetensors", "overflow.q");
    Tensor k = golden_tensor("attention_cases.safetensors", "overflow.k");
    Tensor v = golden_tensor("attention_cases.safetensors", "overflow.v");
    Tensor probs = golden_tensor("attention_cases.safetensors", "overflow.probs");
    Tensor out = golden_tensor("attention_cases.safetensors", "overflow.out");
    HeadCase c = {"scaled scores of several hundred", q.data, k.data, v.data, q.shape[0],
                  q.shape[1], {.scale = 0}, NULL, &probs, &out, 1e-4f, 1e-4f};
    probe_head(&c);
    tensor_free(&q), tensor_free(&k), tensor_free(&v), tensor_free(&probs), tensor_free(&out);
}

CU_TestInfo tests_ch04_attention[] = {
    {"chapter matches PyTorch golden", test_chapter_matches_pytorch},
    {"attention rows are probabilities", test_rows_are_probabilities},
    {"scores are scaled by 1/sqrt(Dh), then masked", test_scale_is_one_over_sqrt_dh},
    {"a chosen scale (qk_scale) replaces 1/sqrt(Dh)", test_a_chosen_scale_replaces_the_default},
    {"a larger scale sharpens every row", test_larger_scale_sharpens_every_row},
    {"entropy of attention rows", test_entropy_of_rows},
    {"equal keys give the average value", test_equal_keys_give_the_average_value},
    {"attention() equals its steps", test_one_call_equals_the_steps},
    {"padding cannot leak into real tokens", test_padding_cannot_leak},
    {"causal mask hides the future", test_causal_mask_hides_the_future},
    {"a (1, N) key-padding mask equals the (N, N) padding mask",
     test_a_key_padding_row_equals_the_shared_mask},
    {"padding and key-padding mask layout", test_padding_mask_layout},
    {"probe: the chapter's head", test_probe_the_chapters_head},
    {"probe: masks go in before the softmax", test_probe_masks_go_in_before_the_softmax},
    {"probe: a (1, N) key-padding mask hides keys", test_probe_a_key_padding_row_hides_keys},
    {"probe: a chosen scale replaces 1/sqrt(Dh)", test_probe_a_chosen_scale},
    {"probe: scaled scores of several hundred", test_probe_scores_of_several_hundred},
    CU_TEST_INFO_NULL,
};
