/**
 * @file test_ch13_attention_at_scale.c
 * @brief Chapter 13 against PyTorch, and the probes of exercise 13's online_softmax_block().
 *
 * `build/tests/run ch13_attention_at_scale` grades a student's
 * online_softmax_block() (exercise 13) too: the chapter's worked row and
 * attention_online() call lib's version, or whatever replaced
 * lib/attention/online_softmax.c at link time.
 *
 * The golden, ch13_attention_at_scale.safetensors, holds every number the
 * chapter pins, each computed again by tools/gen_golden_ch13.py in PyTorch
 * (float64): the memory figures from the shapes, the worked row's running
 * max, sum and factors from their definitions, the approximations' errors
 * against exact attention, where the trained model's attention looks (per
 * layer and head: the share on [cls], what the 3 × 3 and 5 × 5 windows keep,
 * the mean attention distance, and uniform attention's), and the trained
 * model with its attention swapped.
 *
 * The probes feed online_softmax_block() rows of scores a block at a time
 * (ch13_online_softmax.safetensors: the maximum rising, falling, a row
 * hidden at first, huge scores, a NaN, a +inf, one score at a time) and
 * compare, after each block, the factor c it returns, the state (m, l) and
 * the weights it writes, and the probabilities they make at the end, with
 * PyTorch's. When they differ, the marks of the likely mistakes (the sum not
 * rescaled, c inverted, the old maximum subtracted, the block's maximum
 * instead of the running one, a hidden block turned into NaN, a NaN
 * overlooked) are looked for, and each one found is named with check_hint().
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../chapters/chapters.h"
#include "attention/attention.h"
#include "check.h"

static const char PROBES[] = "ch13_online_softmax.safetensors";

static void test_chapter_matches_pytorch(void) {
    check_chapter_against_golden(chapter13_run, "ch13_attention_at_scale.safetensors");
}

/* ------------------------------------------------------------- a probe */

enum { MAX_ROW = 32, MAX_BLOCKS = 16 };

/** One row, its blocks, and what happened after each block. */
typedef struct {
    int n, blocks, size[MAX_BLOCKS];
    float scores[MAX_ROW];
    float c[MAX_BLOCKS], max[MAX_BLOCKS], sum[MAX_BLOCKS]; // after each block
    float weights[MAX_ROW];                                // as each block left them
    float probs[MAX_ROW];                                  // weight · later c's / final sum
} Row;

/** PyTorch's numbers for the same row (the golden). */
typedef struct {
    Tensor c, max, sum, weights, probs;
} Expected;

// The row `name` taken by the student's online_softmax_block(), block by block.
static void run_student(Row *r, const char *name) {
    char key[64];
    snprintf(key, sizeof key, "%s.scores", name);
    Tensor s = golden_tensor(PROBES, key);
    snprintf(key, sizeof key, "%s.blocks", name);
    Tensor b = golden_tensor(PROBES, key);
    memset(r, 0, sizeof *r);
    r->n = (int)s.numel, r->blocks = (int)b.numel;
    memcpy(r->scores, s.data, sizeof(float) * s.numel);
    for (int k = 0; k < r->blocks; k++) r->size[k] = (int)b.data[k];
    tensor_free(&s), tensor_free(&b);
    float work[MAX_ROW];
    memcpy(work, r->scores, sizeof work);
    OnlineSoftmax st = ONLINE_SOFTMAX_START;
    for (int k = 0, at = 0; k < r->blocks; at += r->size[k++]) {
        r->c[k] = online_softmax_block(&st, work + at, r->size[k]);
        r->max[k] = st.max, r->sum[k] = st.sum;
        memcpy(r->weights + at, work + at, sizeof(float) * (size_t)r->size[k]);
    }
    for (int k = 0, at = 0; k < r->blocks; at += r->size[k++]) // p_j = w_j · Π later c / l
        for (int j = at; j < at + r->size[k]; j++) {
            float p = r->weights[j];
            for (int later = k + 1; later < r->blocks; later++) p *= r->c[later];
            r->probs[j] = p / r->sum[r->blocks - 1];
        }
}

static Expected expected_of(const char *name) {
    char key[64];
    Expected e;
    Tensor *t[5] = {&e.c, &e.max, &e.sum, &e.weights, &e.probs};
    const char *part[5] = {"c", "max", "sum", "weights", "probs"};
    for (int i = 0; i < 5; i++) {
        snprintf(key, sizeof key, "%s.%s", name, part[i]);
        *t[i] = golden_tensor(PROBES, key);
    }
    return e;
}

static void expected_free(Expected *e) {
    tensor_free(&e->c), tensor_free(&e->max), tensor_free(&e->sum);
    tensor_free(&e->weights), tensor_free(&e->probs);
}

static bool near(const float *got, const float *want, int n) {
    const Tensor a = tensor_view((float *)got, 1, n), b = tensor_view((float *)want, 1, n);
    return tensor_near(&a, &b, 1e-6f, 1e-5f);
}

/* ---------------------------------------------------- the mistakes' marks */

// The state never moved from ONLINE_SOFTMAX_START, though the row has visible scores.
static bool untouched(const Row *r, const Expected *e) {
    const int last = r->blocks - 1;
    // (a row PyTorch leaves at -inf, all hidden, is right untouched; a NaN row is not)
    return r->max[last] == -INFINITY && r->sum[last] == 0.0f && e->max.data[last] != -INFINITY;
}

// Some block left the state's max at the block's own max, below the running one.
static bool block_max_only(const Row *r, const Expected *e) {
    for (int k = 1, at = r->size[0]; k < r->blocks; at += r->size[k++]) {
        float own = -INFINITY;
        for (int j = at; j < at + r->size[k]; j++) own = fmaxf(own, r->scores[j]);
        const float running = e->max.data[k];
        if (isfinite(own) && isfinite(running) && own < running && r->max[k] == own) return true;
    }
    return false;
}

// c came back as e^(m' − m), the inverse: 1/c wherever the right c is strictly
// between 0 and 1. Not where it is 0 (the first block's, from an empty state):
// its inverse is infinite, and |c − inf| <= 1e-5·inf held for every finite c,
// so any mistake at all was reported as this one.
static bool inverted_factor(const Row *r, const Expected *e) {
    int checked = 0;
    for (int k = 0; k < r->blocks; k++) {
        const float want = e->c.data[k];
        if (!(want > 0.0f && want < 1.0f)) continue; // c = 0, 1 or NaN: no mark
        const float inverse = 1.0f / want;
        if (!(r->c[k] == inverse || fabsf(r->c[k] - inverse) <= 1e-5f * inverse)) return false;
        checked++;
    }
    return checked > 0;
}

// The weights of a block that raised the maximum are e^(s − m) with the old m. Only
// where that old m is a number: before the first visible block it is -inf, and
// e^(s - (-inf)) is inf, as e^s of no maximum at all would be (no_max_subtracted()).
static bool old_max_subtracted(const Row *r, const Expected *e) {
    float before = -INFINITY;
    for (int k = 0, at = 0; k < r->blocks; at += r->size[k++]) {
        if (isfinite(before) && e->c.data[k] < 1.0f && !isnan(e->max.data[k])) { // it raised the max
            float old[MAX_ROW];
            for (int j = 0; j < r->size[k]; j++) old[j] = expf(r->scores[at + j] - before);
            if (near(r->weights + at, old, r->size[k]) && !near(old, e->weights.data + at, r->size[k]))
                return true;
        }
        before = e->max.data[k];
    }
    return false;
}

// The weights are e^s, no maximum subtracted at all (e^1000 is inf).
static bool no_max_subtracted(const Row *r, const Expected *e) {
    float raw[MAX_ROW];
    for (int j = 0; j < r->n; j++) raw[j] = expf(r->scores[j]);
    return near(r->weights, raw, r->n) && !near(raw, e->weights.data, r->n);
}

// l' = l + Σ w: the sum before not multiplied by c where c < 1 (the student's own numbers).
static bool sum_not_rescaled(const Row *r, const Expected *e) {
    for (int k = 1, at = r->size[0]; k < r->blocks; at += r->size[k++]) {
        if (!(e->c.data[k] < 1.0f) || !(r->sum[k - 1] > 0)) continue;
        double added = 0;
        for (int j = at; j < at + r->size[k]; j++) added += r->weights[j];
        const double plain = r->sum[k - 1] + added, rescaled = r->c[k] * r->sum[k - 1] + added;
        if (fabs(r->sum[k] - plain) <= 1e-5 * plain && fabs(r->sum[k] - rescaled) > 1e-5 * plain)
            return true;
    }
    return false;
}

// Where PyTorch's numbers are finite, some of the student's are NaN (or inf).
static bool broken_where_finite(const Row *r, const Expected *e) {
    for (int k = 0; k < r->blocks; k++)
        if (isfinite(e->sum.data[k]) && !isfinite(r->sum[k])) return true;
    return false;
}

// Where PyTorch's state is NaN (a NaN or +inf score seen), the student's is a number.
static bool nan_overlooked(const Row *r, const Expected *e) {
    if (untouched(r, e)) return false; // nothing was looked at: untouched() says so
    for (int k = 0; k < r->blocks; k++)
        if (isnan(e->max.data[k]) && !(isnan(r->max[k]) && isnan(r->sum[k]))) return true;
    return false;
}

/** A mistake: how to spot it, and what to tell the student. */
typedef struct {
    bool (*seen)(const Row *, const Expected *);
    const char *hint;
} Mistake;

static const Mistake MISTAKES[] = {
    {untouched, "the state never left ONLINE_SOFTMAX_START (max -inf, sum 0): is "
                "online_softmax_block() still the exercise's placeholder?"},
    {block_max_only, "the state's max is the block's own maximum, below the running one: "
                     "m' = max(m, max_j s_j) keeps the largest score of the whole row so far (below it, "
                     "e^(s - m') of an earlier score can overflow)"},
    {inverted_factor, "c is e^(m' - m), the inverse of the factor: return c = e^(m - m'), "
                      "at most 1 (0 for the first block, whose m is -inf)"},
    {old_max_subtracted, "the new block's weights are e^(s_j - m) with the old maximum: "
                         "update the maximum first, then subtract the new m'"},
    {no_max_subtracted, "the weights are e^(s_j), no maximum subtracted: e^1000 is inf in "
                        "float; use e^(s_j - m')"},
    {sum_not_rescaled, "the sum is not rescaled when the maximum rises: l' = c·l + Σ_j "
                       "e^(s_j - m'), the old sum multiplied by c"},
    {nan_overlooked, "a NaN or +inf score must break the row: the state, the weights and every "
                     "c after it NaN (NaN > m is false, so look for it with isnan())"},
};

// The student's row against PyTorch's; on a miss, each mistake whose mark is there.
static void probe(const char *name, const char *label) {
    Row r;
    run_student(&r, name);
    Expected e = expected_of(name);
    const struct { const char *part; const float *got; const Tensor *want; } parts[] = {
        {"c returned", r.c, &e.c}, {"state max", r.max, &e.max}, {"state sum", r.sum, &e.sum},
        {"weights written", r.weights, &e.weights}, {"probabilities at the end", r.probs, &e.probs},
    };
    bool ok = true;
    for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
        char what[160];
        snprintf(what, sizeof what, "%s: %s", label, parts[i].part);
        const Tensor got = tensor_view((float *)parts[i].got, 1, (int)parts[i].want->numel);
        ok &= assert_tensor_close(&got, parts[i].want, 1e-6f, 1e-5f, what);
    }
    if (!ok) {
        int named = 0;
        for (size_t m = 0; m < sizeof MISTAKES / sizeof *MISTAKES; m++)
            if (MISTAKES[m].seen(&r, &e)) check_hint("%s%s", named++ ? "or: " : "", MISTAKES[m].hint);
        if (!named && broken_where_finite(&r, &e))
            check_hint("NaN or inf where PyTorch has numbers: a block whose scores are all -inf "
                       "while m is still -inf gives -inf - (-inf) = NaN; such a block keeps "
                       "max -inf and sum 0, writes weights 0 and returns c = 1");
        else if (!named)
            check_hint("online_softmax_block(): m' = max(m, max_j s_j), c = e^(m - m'), "
                       "l' = c·l + Σ_j e^(s_j - m'), each s_j replaced by e^(s_j - m')");
    }
    expected_free(&e);
}

static void test_probe_rising(void) { probe("rising", "the maximum rising in every block"); }
static void test_probe_falling(void) { probe("falling", "the maximum in the first block"); }
static void test_probe_hidden(void) { probe("hidden", "a first block all -inf, then a partly hidden one"); }
static void test_probe_huge(void) { probe("huge", "scores around 1000"); }
static void test_probe_nan(void) { probe("nan", "a NaN in the second block"); }
static void test_probe_inf(void) { probe("inf", "+inf in the second block"); }
static void test_probe_single(void) { probe("single", "one score at a time"); }

CU_TestInfo tests_ch13_attention_at_scale[] = {
    {"chapter matches PyTorch golden", test_chapter_matches_pytorch},
    {"probe: online softmax, the maximum rising", test_probe_rising},
    {"probe: online softmax, the maximum in the first block", test_probe_falling},
    {"probe: online softmax, a row hidden at first", test_probe_hidden},
    {"probe: online softmax, huge scores", test_probe_huge},
    {"probe: online softmax, a NaN score", test_probe_nan},
    {"probe: online softmax, a +inf score", test_probe_inf},
    {"probe: online softmax, one score at a time", test_probe_single},
    CU_TEST_INFO_NULL,
};
