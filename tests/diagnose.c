/**
 * @file diagnose.c
 * @brief A failed comparison's mistake in words (diagnose.h): the stage table, then one
 *        function per diagnosis, each a test over every element.
 *
 * Shapes: a tensor is seen as (outer, rows, cols) over its last two axes when it has two
 * or more (a (B, H, N, N) probs is B·H matrices of N rows), as one row when it has one.
 */
#include "diagnose.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

/* ------------------------------------------------------------- the stage table */

/** What is special about a stage, beyond the diagnoses every stage gets. */
typedef enum {
    STAGE_PLAIN,
    STAGE_SCALE,   /* the scalar 1/√Dh */
    STAGE_SCORES,  /* Q·Kᵀ, before the scale */
    STAGE_SCALED,  /* the scores × 1/√Dh */
    STAGE_PROBS,   /* softmax over the last axis */
    STAGE_GELU,    /* exact erf GELU of its first earlier stage */
    STAGE_EPS_STD, /* standard deviations of LayerNorm outputs for variances near ε */
    STAGE_LN_MEAN, /* the mean of a LayerNorm's output row, 0 */
    STAGE_LAYERNORM, /* LayerNorm of a known x, gamma, beta (and eps) */
    STAGE_LINEAR,  /* x·Wᵀ + b of a known x (N, I) and w (O, I) */
    STAGE_NORM,    /* a trace's LayerNorm of the stage before it, γ and β unknown */
} StageKind;

/** A stage this one is computed from: got equal to its expected tensor says what was left out. */
typedef struct {
    const char *stage; /* replaces the matched word in the stage's name */
    const char *words;
} Earlier;

typedef struct {
    const char *word;       /* matched as a word of the stage's name, between '.' or '_' */
    StageKind kind;
    const char *factor;     /* what one constant factor means here, or NULL for the plain words */
    const char *offset;     /* what a constant offset (overall, per row or per feature) means here */
    const char *transposed; /* what the last two axes swapped mean here */
    Earlier earlier[2];
} StageInfo;

// The per-stage knowledge: which diagnoses fit and what they mean there. The names
// are the trace's (blocks.{i}.attn.scaled …) and the chapters' pins (scaled, gelu_y …).
static const StageInfo STAGES[] = {
    {"scale", STAGE_SCALE, NULL, NULL, NULL, {{NULL, NULL}}},
    {"scores", STAGE_SCORES, "the scores are Q·Kᵀ before any scale; was 1/√Dh applied here, or to Q or K?",
     NULL, "K·Qᵀ, not Q·Kᵀ: queries and keys swapped", {{NULL, NULL}}},
    {"scaled", STAGE_SCALED, NULL, "a mask added where none belongs, or one left out",
     "K·Qᵀ, not Q·Kᵀ: queries and keys swapped", {{"scores", "the 1/√Dh scale was never applied"}}},
    {"probs", STAGE_PROBS, "the values were not divided by their sum, or by another sum",
     "probabilities moved by a constant: a term added after the softmax",
     "the probabilities are written keys by queries: queries and keys swapped",
     {{"scaled", "the softmax was never applied"}}},
    {"p", STAGE_PROBS, "the values were not divided by their sum, or by another sum", NULL,
     "the probabilities are written keys by queries: queries and keys swapped",
     {{NULL, NULL}}}, // chapter 03's p, p_padded, p_causal
    {"norm", STAGE_NORM, NULL, "a term missing or extra: the row's mean not subtracted, or β", NULL,
     {{NULL, NULL}}},
    {"norm1", STAGE_NORM, NULL, "a term missing or extra: the row's mean not subtracted, or β", NULL,
     {{NULL, NULL}}},
    {"norm2", STAGE_NORM, NULL, "a term missing or extra: the row's mean not subtracted, or β", NULL,
     {{"resid1", "the LayerNorm was never applied"}}},
    {"gelu", STAGE_GELU, NULL, NULL, NULL,
     {{"fc1", "the GELU was never applied"}, {"x", "the GELU was never applied"}}},
    {"layernorm", STAGE_LAYERNORM, NULL, "a term missing or extra: the row's mean not subtracted, or β",
     NULL, {{"x", "the LayerNorm was never applied"}}},
    {"linear", STAGE_LINEAR, NULL, NULL, NULL, {{NULL, NULL}}},
    {"gelu_y", STAGE_GELU, NULL, NULL, NULL, {{"gelu_x", "the GELU was never applied"}}},
    {"resid1", STAGE_PLAIN, NULL, NULL, NULL,
     {{"attn.proj", "the residual was not added: resid1 = x + attention"}}},
    {"out", STAGE_PLAIN, NULL, NULL, NULL,
     {{"mlp.fc2", "the residual was not added: out = resid1 + MLP"},
      {"resid1", "the MLP's output was not added: out = resid1 + MLP"}}},
    {"embed", STAGE_PLAIN, NULL, "the position embedding added to the wrong tokens, or one row of it to all", NULL,
     {{"tokens", "the position embedding was not added"}}},
    {"eps.std", STAGE_EPS_STD, NULL, NULL, NULL, {{NULL, NULL}}},
    {"ln_mean", STAGE_LN_MEAN, NULL, NULL, NULL, {{NULL, NULL}}},
};

// What may stand around a word of a name: "blocks.0.attn.probs", "p_padded", or a test's
// label such as "the chapter's head: probs".
static bool is_word_edge(char c) { return c == '\0' || strchr("._ :,()", c) != NULL; }

// Where `word` stands as a whole word in `name` (an edge or an end on both sides), or -1.
static int word_at(const char *name, const char *word) {
    const size_t n = strlen(word);
    for (const char *p = strstr(name, word); p; p = strstr(p + 1, word))
        if ((p == name || is_word_edge(p[-1])) && is_word_edge(p[n])) return (int)(p - name);
    return -1;
}

// The table's row for `stage`: the word found first in its name, the longer on a tie
// ("gelu_y" over "gelu"); NULL when none is. `*at` is where it was found.
static const StageInfo *stage_info(const char *stage, int *at) {
    const StageInfo *best = NULL;
    for (size_t i = 0; i < sizeof STAGES / sizeof STAGES[0]; i++) {
        const int p = word_at(stage, STAGES[i].word);
        if (p < 0) continue;
        if (!best || p < *at || (p == *at && strlen(STAGES[i].word) > strlen(best->word))) {
            best = &STAGES[i];
            *at = p;
        }
    }
    return best;
}

/* ------------------------------------------------------------ what is compared */

// How far from right a factor or an offset must be to be named: 1 % of the values. Near a
// tolerance's edge, a tensor that is almost right fits many small factors and offsets.
#define MISTAKE_SIZE 1e-2f

/** One diagnosis's inputs, gathered once. */
typedef struct {
    const char *stage;
    const Tensor *got, *expected;
    float atol, rtol;
    const DiagnoseContext *ctx;
    const StageInfo *info; /* NULL: a stage the table does not know */
    int word_at;           /* where info's word is in the stage's name */
    size_t outer, rows, cols; /* (outer, rows, cols): the last two axes, see the top */
} Case;

// |a − b| within atol + rtol·|b|, `slack` times over; NaN is never near.
static bool near(float a, float b, float atol, float rtol, float slack) {
    return fabsf(a - b) <= slack * (atol + rtol * fabsf(b));
}

// Every element of got within the tolerance of candidate[i], `slack` times over; a NaN
// matches a NaN (a candidate's 0/0 where got has one too).
static bool all_near(const Case *c, const float *candidate, float slack) {
    for (size_t i = 0; i < c->got->numel; i++)
        if (!near(c->got->data[i], candidate[i], c->atol, c->rtol, slack) &&
            !(isnan(c->got->data[i]) && isnan(candidate[i])))
            return false;
    return true;
}

static bool all_finite(const Tensor *t) {
    for (size_t i = 0; i < t->numel; i++)
        if (!isfinite(t->data[i])) return false;
    return true;
}

// The expected tensor of stage `name`, of any shape, into `out`; false when unknown.
static bool expected_any(const Case *c, const char *name, Tensor *out) {
    return c->ctx && c->ctx->expected_of && name && c->ctx->expected_of(c->ctx->user, name, out);
}

// The expected tensor of stage `name` with got's shape, into `out`; false when unknown.
static bool expected_of(const Case *c, const char *name, Tensor *out) {
    if (!expected_any(c, name, out)) return false;
    if (tensor_same_shape(out, c->got)) return true;
    tensor_free(out);
    return false;
}

// `stage` with the table's word replaced by `word`: "blocks.0.attn.scaled" → "blocks.0.attn.scores".
static const char *renamed(char *buf, size_t size, const Case *c, const char *word) {
    snprintf(buf, size, "%.*s%s%s", c->word_at, c->stage, word,
             c->stage + c->word_at + strlen(c->info->word));
    return buf;
}

/* ------------------------------------------------------------------ unwritten */

static bool say_unwritten(char *words, size_t size, const Case *c) {
    size_t nan = 0, zero = 0, expected_zero = 0;
    for (size_t i = 0; i < c->got->numel; i++) {
        nan += isnan(c->got->data[i]) != 0;
        zero += c->got->data[i] == 0.0f;
        expected_zero += c->expected->data[i] == 0.0f;
    }
    if (nan == c->got->numel) {
        snprintf(words, size, "every element is NaN: the output was never written (where a"
                 " test fills it with NaN first), or it was computed from a NaN");
        return true;
    }
    if (zero == c->got->numel && expected_zero < c->got->numel && c->got->numel > 1) {
        snprintf(words, size, "every element is exactly 0, unlike the expected: the output was"
                 " never written, or every term cancelled");
        return true;
    }
    return false;
}

// Some rows (of the last axis) all 0 or all NaN where the expected's are not, every other
// row right: those rows were never written.
static bool say_unwritten_rows(char *words, size_t size, const Case *c) {
    const size_t rows = c->got->numel / c->cols;
    size_t blank = 0, first = 0;
    bool any_nan = false; // NaN in a row may be written: an overflow, a 0/0
    if (rows < 2) return false;
    for (size_t r = 0; r < rows; r++) {
        const float *g = c->got->data + r * c->cols, *e = c->expected->data + r * c->cols;
        bool empty = true, right = true, expected_empty = true;
        for (size_t j = 0; j < c->cols; j++) {
            empty = empty && (g[j] == 0.0f || isnan(g[j]));
            any_nan = any_nan || isnan(g[j]);
            expected_empty = expected_empty && e[j] == 0.0f;
            right = right && near(g[j], e[j], c->atol, c->rtol, 1.0f);
        }
        if (right) continue;
        if (!empty || expected_empty) return false;
        if (blank++ == 0) first = r;
    }
    if (blank == 0 || blank == rows) return false;
    snprintf(words, size, "%zu of %zu rows (of the last axis) are all 0 or NaN, the first row %zu,"
             " and every other row is right: those rows were never written%s", blank, rows, first,
             any_nan ? ", or something in them overflowed or divided 0 by 0" : "");
    return true;
}

/* ------------------------------------------------------------- a stage before */

// got equal to the expected tensor of the stage it is computed from: that step was left out.
static bool say_earlier(char *words, size_t size, const Case *c) {
    if (!c->info || c->got->numel < 2) return false;
    for (int e = 0; e < 2 && c->info->earlier[e].stage; e++) {
        char name[160];
        Tensor before;
        if (!expected_of(c, renamed(name, sizeof name, c, c->info->earlier[e].stage), &before))
            continue;
        const bool same = all_near(c, before.data, 1.0f);
        tensor_free(&before);
        if (same) { // a stream's stage by its name, a test's label by the table's word
            snprintf(words, size, "got is exactly the expected %s: %s",
                     strchr(name, ' ') ? c->info->earlier[e].stage : name,
                     c->info->earlier[e].words);
            return true;
        }
    }
    return false;
}

// got equal to the expected tensor of the stage compared just before it.
static bool say_previous(char *words, size_t size, const Case *c) {
    const char *prev = c->ctx ? c->ctx->previous : NULL;
    Tensor before;
    if (!prev || c->got->numel < 2 || !expected_of(c, prev, &before)) return false;
    const bool same = all_near(c, before.data, 1.0f);
    tensor_free(&before);
    if (same)
        snprintf(words, size, "got is exactly the expected %s, the stage compared before it:"
                 " this stage's own step changed nothing", prev);
    return same;
}

/* -------------------------------------------------------------------- a factor */

// got = k · expected for one constant k ≠ 1; k is read where |expected| is largest.
static bool one_factor(const Case *c, float *k) {
    const Tensor *e = c->expected;
    size_t big = 0, nonzero = 0;
    for (size_t i = 0; i < e->numel; i++) {
        if (!isfinite(e->data[i]) || !isfinite(c->got->data[i])) return false;
        if (fabsf(e->data[i]) > fabsf(e->data[big])) big = i;
        nonzero += e->data[i] != 0.0f;
    }
    if (nonzero < 2) return false; // one number is a multiple of any other: proves nothing
    *k = c->got->data[big] / e->data[big];
    if (!(fabsf(*k - 1.0f) > MISTAKE_SIZE)) return false; // nearly right is no mistake of this kind
    for (size_t i = 0; i < e->numel; i++)
        if (!near(c->got->data[i], *k * e->data[i], c->atol, c->rtol, 4.0f)) return false;
    return true;
}

// The scaled scores' factor named against Dh: √Dh is the scale missing, 1/√Dh applied twice.
static bool say_scale_factor(char *words, size_t size, float k, int dh) {
    if (dh < 2) {
        snprintf(words, size, "every value is exactly %.6g times the expected one:"
                 " the 1/√Dh scale is missing or wrong", (double)k);
        return true;
    }
    const float root = sqrtf((float)dh);
    if (near(k, root, 0.0f, 1e-3f, 1.0f))
        snprintf(words, size, "a factor of exactly √Dh = %g (Dh = %d): the scores were not"
                 " scaled by 1/√Dh", (double)root, dh);
    else if (near(k, 1.0f / root, 0.0f, 1e-3f, 1.0f))
        snprintf(words, size, "a factor of exactly 1/√Dh = %g (Dh = %d): the scale was applied"
                 " twice, or the scores divided by Dh instead of √Dh", 1.0 / root, dh);
    else if (near(k, (float)dh, 0.0f, 1e-3f, 1.0f))
        snprintf(words, size, "a factor of exactly Dh = %d: the scores were multiplied by √Dh"
                 " instead of divided", dh);
    else
        snprintf(words, size, "every value is exactly %.6g times the expected one (√Dh = %g):"
                 " the 1/√Dh scale is wrong", (double)k, (double)root);
    return true;
}

// A single number of the scaled scores (a mean, a standard deviation) off by exactly √Dh,
// 1/√Dh or Dh: those scale with the scores, and a random ratio is none of them.
static bool say_scaled_pin(char *words, size_t size, const Case *c) {
    const int dh = c->ctx ? c->ctx->head_dim : 0;
    const float e = c->expected->data[0], k = c->got->data[0] / e;
    if (dh < 2 || !isfinite(k) || e == 0.0f) return false;
    const float root = sqrtf((float)dh);
    const bool named = near(k, root, 0, 1e-3f, 1) || near(k, 1 / root, 0, 1e-3f, 1) ||
                       near(k, (float)dh, 0, 1e-3f, 1);
    return named && say_scale_factor(words, size, k, dh);
}

static bool say_factor(char *words, size_t size, const Case *c) {
    float k;
    if (c->got->numel == 1 && c->info && c->info->kind == STAGE_SCALED)
        return say_scaled_pin(words, size, c);
    if (c->got->numel < 2 || !one_factor(c, &k)) return false;
    if (c->info && c->info->kind == STAGE_SCALED)
        return say_scale_factor(words, size, k, c->ctx ? c->ctx->head_dim : 0);
    if (c->info && c->info->kind == STAGE_GELU && (near(k, 2.0f, 0, 1e-3f, 1) || near(k, 0.5f, 0, 1e-3f, 1))) {
        snprintf(words, size, "every value is exactly %g times the expected one: the ½ of"
                 " ½·x·(1 + erf(x/√2)) is missing, or taken twice", (double)k);
        return true;
    }
    const char *why = c->info && c->info->factor ? c->info->factor
                                                  : "as a scale missing, doubled or inverted would make";
    snprintf(words, size, "every value is exactly %.6g times the expected one: %s", (double)k, why);
    return true;
}

/* ------------------------------------------------------------------ transposed */

// got[o][i][j] = expected[o][j][i] over square last two axes, and got is not expected.
static bool say_transposed(char *words, size_t size, const Case *c) {
    const size_t n = c->rows;
    if (n < 2 || c->rows != c->cols) return false;
    bool differs = false; // a symmetric matrix is its own transpose: no sign of a mistake
    for (size_t o = 0; o < c->outer; o++)
        for (size_t i = 0; i < n; i++)
            for (size_t j = 0; j < n; j++) {
                const size_t at = (o * n + i) * n + j, mirror = (o * n + j) * n + i;
                if (!near(c->got->data[at], c->expected->data[mirror], c->atol, c->rtol, 1.0f))
                    return false;
                differs = differs || !near(c->got->data[at], c->expected->data[at], c->atol,
                                           c->rtol, 1.0f);
            }
    if (!differs) return false;
    snprintf(words, size, "got is the expected with its last two axes swapped (transposed)%s%s",
             c->info && c->info->transposed ? ": " : "",
             c->info && c->info->transposed ? c->info->transposed : "");
    return true;
}

/* -------------------------------------------------------------- shifted by one */

// got[…, i, …] = expected[…, i + s, …] along `axis` wherever i + s is inside it.
static bool shifted(const Case *c, int axis, int s) {
    const Tensor *t = c->got;
    size_t outer = 1, inner = 1;
    const size_t n = (size_t)t->shape[axis];
    for (int a = 0; a < axis; a++) outer *= (size_t)t->shape[a];
    for (int a = axis + 1; a < t->ndim; a++) inner *= (size_t)t->shape[a];
    bool differs = false;
    for (size_t o = 0; o < outer; o++)
        for (size_t i = 0; i < n; i++) {
            const long from = (long)i + s;
            if (from < 0 || from >= (long)n) continue;
            for (size_t k = 0; k < inner; k++) {
                const float g = t->data[(o * n + i) * inner + k];
                if (!near(g, c->expected->data[(o * n + (size_t)from) * inner + k], c->atol,
                          c->rtol, 1.0f))
                    return false;
                differs = differs || !near(g, c->expected->data[(o * n + i) * inner + k],
                                           c->atol, c->rtol, 1.0f);
            }
        }
    return differs;
}

static bool say_shifted(char *words, size_t size, const Case *c) {
    for (int axis = 0; axis < c->got->ndim; axis++) {
        if (c->got->shape[axis] < 3) continue; // two rows swapped is not a shift
        for (int s = -1; s <= 1; s += 2)
            if (shifted(c, axis, s)) {
                snprintf(words, size, "got is the expected shifted by one along axis %d"
                         " (got[i] = expected[i %c 1]), as an index off by one would make", axis,
                         s > 0 ? '+' : '-');
                return true;
            }
    }
    return false;
}

/* --------------------------------------------------------------------- offsets */

// got − expected is one constant within each group of elements: overall, per row (the
// last axis), or per feature (the same column of every row).
typedef enum { OFFSET_ALL, OFFSET_PER_ROW, OFFSET_PER_FEATURE } OffsetKind;

// The first element of element i's group, where that group's constant is read.
static size_t offset_first(const Case *c, OffsetKind kind, size_t i) {
    if (kind == OFFSET_ALL) return 0;
    return kind == OFFSET_PER_ROW ? i - i % c->cols : i % c->cols;
}

// True when got − expected is constant within each group and not 0 everywhere; for the
// per-row and per-feature kinds, not one constant overall either (OFFSET_ALL says that).
static bool offset_holds(const Case *c, OffsetKind kind) {
    const float *g = c->got->data, *e = c->expected->data;
    float largest = 0; // |expected| at its largest: an offset is named when 1 % of it or more
    for (size_t i = 0; i < c->got->numel; i++) largest = fmaxf(largest, fabsf(e[i]));
    bool moved = false, varies = false;
    for (size_t i = 0; i < c->got->numel; i++) {
        const size_t first = offset_first(c, kind, i);
        const float shift = g[first] - e[first];
        if (!isfinite(shift) || !near(g[i], e[i] + shift, c->atol, c->rtol, 4.0f)) return false;
        moved = moved || (fabsf(shift) > c->atol && fabsf(shift) > MISTAKE_SIZE * largest);
        varies = varies || !near(shift, g[0] - e[0], c->atol, c->rtol, 1.0f);
    }
    return moved && (kind == OFFSET_ALL || varies);
}

static bool say_offset(char *words, size_t size, const Case *c) {
    static const char *what[] = {
        "got − expected is one constant, %.4g, everywhere",
        "got − expected is one constant along each row (of the last axis), different between rows",
        "got − expected is one constant per feature (the last axis), the same in every row",
    };
    static const char *plain[] = {"as a term missing or extra would make",
                                  "as a per-row term missing or extra would make",
                                  "as a bias vector missing or added twice would make"};
    if (c->got->numel < 2) return false;
    for (OffsetKind k = OFFSET_ALL; k <= OFFSET_PER_FEATURE; k++) {
        if (k != OFFSET_ALL && (c->cols < 2 || c->got->numel / c->cols < 2)) break;
        if (!offset_holds(c, k)) continue;
        char fact[160];
        snprintf(fact, sizeof fact, what[k], (double)(c->got->data[0] - c->expected->data[0]));
        snprintf(words, size, "%s: %s", fact,
                 c->info && c->info->offset ? c->info->offset : plain[k]);
        return true;
    }
    return false;
}

/* ---------------------------------------------------------- a factor per row */

static bool say_row_factor(char *words, size_t size, const Case *c) {
    if (c->cols < 2 || c->got->numel / c->cols < 2) return false;
    bool varies = false, wrong = false;
    float first = NAN;
    for (size_t r = 0; r < c->got->numel / c->cols; r++) {
        const float *g = c->got->data + r * c->cols, *e = c->expected->data + r * c->cols;
        size_t big = 0;
        for (size_t j = 0; j < c->cols; j++)
            if (fabsf(e[j]) > fabsf(e[big])) big = j;
        if (e[big] == 0.0f) continue; // an all-zero row (masked) fits any factor
        const float k = g[big] / e[big];
        if (!(fabsf(k) > MISTAKE_SIZE)) return false; // a row of zeros: say_unwritten_rows()'s
        for (size_t j = 0; j < c->cols; j++)
            if (!near(g[j], k * e[j], c->atol, c->rtol, 4.0f)) return false;
        if (isnan(first)) first = k;
        varies = varies || !near(k, first, 0.0f, c->rtol, 1.0f);
        wrong = wrong || fabsf(k - 1.0f) > MISTAKE_SIZE;
    }
    if (!varies || !wrong) return false;
    snprintf(words, size, "each row is the expected times a constant of its own: %s",
             c->info && c->info->kind == STAGE_PROBS
                 ? "the rows were not divided by their sum (the softmax's normalisation)"
                 : "as a per-row normalisation missing or wrong would make");
    return true;
}

/* ---------------------------------------------------------- the stages' own */

// Each row of the expected sums to 1, or to 0 (a row with every key masked).
static bool expected_rows_normalised(const Case *c) {
    for (size_t r = 0; r < c->expected->numel / c->cols; r++) {
        double s = 0;
        for (size_t j = 0; j < c->cols; j++) s += c->expected->data[r * c->cols + j];
        if (!(fabs(s - 1.0) <= 1e-3 || s == 0.0)) return false;
    }
    return true;
}

// probs whose columns sum to 1 (all-NaN columns aside) while the expected's rows do.
static bool say_wrong_axis(char *words, size_t size, const Case *c) {
    const size_t n = c->rows, m = c->cols;
    if (n < 2 || m < 2) return false;
    size_t summed = 0, nan_columns = 0;
    bool rows_sum_to_one = true;
    for (size_t o = 0; o < c->outer; o++) {
        const float *g = c->got->data + o * n * m;
        for (size_t j = 0; j < m; j++) {
            double s = 0;
            size_t nan = 0;
            for (size_t i = 0; i < n; i++) {
                nan += isnan(g[i * m + j]) != 0;
                s += g[i * m + j];
            }
            if (nan == n) { nan_columns++; continue; }
            if (nan || !(fabs(s - 1.0) <= 1e-3)) return false;
            summed++;
        }
        for (size_t i = 0; i < n; i++) {
            double s = 0;
            for (size_t j = 0; j < m; j++) s += g[i * m + j];
            rows_sum_to_one = rows_sum_to_one && fabs(s - 1.0) <= 1e-3;
        }
    }
    if (summed < 2 || rows_sum_to_one || !expected_rows_normalised(c)) return false;
    char aside[64] = "";
    if (nan_columns)
        snprintf(aside, sizeof aside, " (%zu all-NaN column%s aside)", nan_columns,
                 nan_columns > 1 ? "s" : "");
    snprintf(words, size, "each column sums to 1%s, not each row: the softmax ran over the wrong"
             " axis (over the queries, not the keys)", aside);
    return true;
}

// The unscaled scores Q·Kᵀ from the expected q and k (…, N, Dh), each (…, N, N)
// matrix of got's shape, and Dh; false when the stage has no q and k beside it.
static bool scores_from_q_k(const Case *c, Tensor *s, int *dh) {
    char name[160];
    Tensor q, k;
    if (!expected_any(c, renamed(name, sizeof name, c, "q"), &q)) return false;
    const bool have_k = expected_any(c, renamed(name, sizeof name, c, "k"), &k);
    const size_t n = c->rows, d = q.ndim ? (size_t)q.shape[q.ndim - 1] : 0;
    const bool fits = have_k && c->rows == c->cols && tensor_same_shape(&q, &k) &&
                      q.numel == c->outer * n * d;
    if (fits) {
        *s = tensor_clone(c->got);
        *dh = (int)d;
        for (size_t o = 0; o < c->outer; o++)
            for (size_t i = 0; i < n; i++)
                for (size_t j = 0; j < n; j++) {
                    double dot = 0;
                    for (size_t e = 0; e < d; e++)
                        dot += (double)q.data[(o * n + i) * d + e] * k.data[(o * n + j) * d + e];
                    s->data[(o * n + i) * n + j] = (float)dot;
                }
    }
    tensor_free(&q);
    if (have_k) tensor_free(&k);
    return fits;
}

// The softmax over the last axis of `scale` · each (n, n) matrix of `scores`, read
// transposed when `swap` (K·Qᵀ for Q·Kᵀ), into a new tensor; in double, as a reference.
static Tensor softmax_of(const Tensor *scores, size_t outer, size_t n, float scale, bool swap) {
    Tensor p = tensor_clone(scores);
    for (size_t o = 0; o < outer; o++)
        for (size_t i = 0; i < n; i++) {
            const float *m = scores->data + o * n * n;
            float *row = p.data + (o * n + i) * n;
            double max = -INFINITY, sum = 0;
            for (size_t j = 0; j < n; j++) max = fmax(max, scale * (swap ? m[j * n + i] : m[i * n + j]));
            for (size_t j = 0; j < n; j++) sum += exp(scale * (swap ? m[j * n + i] : m[i * n + j]) - max);
            for (size_t j = 0; j < n; j++)
                row[j] = (float)(exp(scale * (swap ? m[j * n + i] : m[i * n + j]) - max) / sum);
        }
    return p;
}

// probs as the softmax of the scores scaled wrongly, or of K·Qᵀ: the scores stage's expected
// tensor, or Q·Kᵀ from the expected q and k (which also give Dh).
static bool say_scores_softmax(char *words, size_t size, const Case *c) {
    char name[160];
    Tensor s;
    int dh = c->ctx ? c->ctx->head_dim : 0;
    if (c->rows != c->cols || c->rows < 2) return false;
    if (!expected_of(c, renamed(name, sizeof name, c, "scores"), &s)) {
        if (!scores_from_q_k(c, &s, &dh)) return false;
        snprintf(name, sizeof name, "scores Q·Kᵀ");
    }
    const struct { float scale; bool swap; const char *what; } tries[] = {
        {1.0f, false, "got is the softmax of the unscaled %s: the 1/√Dh scale was left out"},
        {dh > 1 ? 1.0f / (float)dh : 0.0f, false,
         "got is the softmax of the %s divided by Dh: divided by Dh, not √Dh (or the scale applied twice)"},
        {dh > 1 ? 1.0f / sqrtf((float)dh) : 0.0f, true,
         "got is the softmax of the %s transposed (K·Qᵀ): queries and keys swapped"},
    };
    bool said = false;
    for (size_t t = 0; t < sizeof tries / sizeof tries[0] && !said; t++) {
        if (tries[t].scale == 0.0f) continue; // Dh unknown
        Tensor p = softmax_of(&s, c->outer, c->rows, tries[t].scale, tries[t].swap);
        if ((said = all_near(c, p.data, 4.0f))) snprintf(words, size, tries[t].what, name);
        tensor_free(&p);
    }
    tensor_free(&s);
    return said;
}

// GELU's tanh approximation (or ReLU) of the stage's input, for the exact erf form.
static bool say_gelu_form(char *words, size_t size, const Case *c) {
    char name[160];
    Tensor x;
    int e = 0;
    while (e < 2 && c->info->earlier[e].stage &&
           !expected_of(c, renamed(name, sizeof name, c, c->info->earlier[e].stage), &x))
        e++;
    if (e == 2 || !c->info->earlier[e].stage) return false;
    Tensor relu = tensor_clone(&x);
    for (size_t i = 0; i < x.numel; i++) {
        const double v = x.data[i];
        x.data[i] = (float)(0.5 * v * (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v))));
        relu.data[i] = v > 0 ? (float)v : 0.0f;
    }
    const char *form = all_near(c, x.data, 4.0f) ? "GELU's tanh approximation, not the exact erf form"
                       : all_near(c, relu.data, 1.0f) ? "ReLU, not GELU" : NULL;
    tensor_free(&x);
    tensor_free(&relu);
    if (form) snprintf(words, size, "got is %s of the expected %s", form, name);
    return form != NULL;
}

// The scalar scale, which should be 1/√Dh: 1, 1/Dh or √Dh instead.
static bool say_scale_value(char *words, size_t size, const Case *c) {
    if (c->got->numel != 1) return false;
    const float want = c->expected->data[0], got = c->got->data[0];
    const float dh = 1.0f / (want * want);
    if (!(want > 0) || dh < 2 || !near(dh, roundf(dh), 0.0f, 1e-3f, 1.0f)) return false;
    const char *what = near(got, 1.0f, c->atol, c->rtol, 1.0f)          ? "the scale is 1: the scores are not scaled"
                       : near(got, want * want, c->atol, c->rtol, 1.0f) ? "the scale is 1/Dh, not 1/√Dh"
                       : near(got, 1.0f / want, c->atol, c->rtol, 1.0f) ? "the scale is √Dh, not 1/√Dh: inverted"
                                                                         : NULL;
    if (what) snprintf(words, size, "%s (Dh = %.0f, 1/√Dh = %g)", what, (double)dh, (double)want);
    return what != NULL;
}

// LayerNorm outputs' standard deviations pinned for variances near ε: all 1 means no ε.
static bool say_eps_missing(char *words, size_t size, const Case *c) {
    bool below_one = false;
    for (size_t i = 0; i < c->got->numel; i++) {
        if (!near(c->got->data[i], 1.0f, c->atol, c->rtol, 1.0f)) return false;
        below_one = below_one || !near(c->expected->data[i], 1.0f, c->atol, c->rtol, 1.0f);
    }
    if (below_one)
        snprintf(words, size, "every standard deviation is 1, even for variances far below ε:"
                 " the ε in 1/√(var + ε) is missing");
    return below_one;
}

// A LayerNorm output's mean, which is 0: not 0 means the mean was not subtracted.
static bool say_mean_kept(char *words, size_t size, const Case *c) {
    if (c->got->numel != 1 || !(fabsf(c->expected->data[0]) <= c->atol)) return false;
    snprintf(words, size, "the normalised row's mean is %.4g, not 0: the mean was not subtracted",
             (double)c->got->data[0]);
    return true;
}

// x·W + b with the weight's memory read as (I, O), for the layer's x·Wᵀ + b with W (O, I):
// got − x·W the same in every row (b, or 0) says the weight was not transposed.
static bool say_weight_not_transposed(char *words, size_t size, const Case *c) {
    Tensor x, w;
    if (!expected_any(c, "x", &x)) return false;
    if (!expected_any(c, "w", &w)) { tensor_free(&x); return false; }
    const size_t rows = c->got->numel / c->cols, o_n = c->cols;
    const size_t in = x.numel / (rows ? rows : 1);
    bool holds = x.numel == rows * in && w.numel == in * o_n;
    if (holds) {
        Tensor xw = tensor_clone(c->got);
        for (size_t r = 0; r < rows; r++)
            for (size_t o = 0; o < o_n; o++) {
                double sum = 0;
                for (size_t i = 0; i < in; i++) sum += (double)x.data[r * in + i] * w.data[i * o_n + o];
                xw.data[r * o_n + o] = (float)sum;
            }
        for (size_t i = 0; i < xw.numel && holds; i++) { // got − x·W: row 0's (the bias) in each row
            const size_t j = i % o_n;
            const float bias = c->got->data[j] - xw.data[j];
            holds = near(c->got->data[i], xw.data[i] + bias, c->atol, c->rtol, 4.0f);
        }
        tensor_free(&xw);
    }
    tensor_free(&x);
    tensor_free(&w);
    if (holds)
        snprintf(words, size, "got is x·W + b with the weight read as (in, out): the weight was"
                 " not transposed (the layer is x·Wᵀ + b, W being (out, in))");
    return holds;
}

// LayerNorm of the known x (rows, D) by the known gamma and beta, one way or another:
// each row normalised as (x − mean)/√(var + eps) (`centre`, `eps`), or x/√(mean(x²))
// (no centre). Returns the candidate (got's shape), or a zeroed tensor.
static Tensor layernorm_candidate(const Case *c, bool centre, float eps) {
    Tensor x, g, b, y = {0};
    if (!expected_of(c, "x", &x)) return y;
    const bool affine = expected_any(c, "gamma", &g);
    if (affine && !expected_any(c, "beta", &b)) { tensor_free(&g); tensor_free(&x); return y; }
    const size_t d = c->cols;
    y = tensor_clone(c->got);
    for (size_t r = 0; r < x.numel / d; r++) {
        const float *xr = x.data + r * d;
        double mean = 0, var = 0;
        for (size_t j = 0; j < d; j++) mean += xr[j];
        mean = centre ? mean / (double)d : 0.0;
        for (size_t j = 0; j < d; j++) var += (xr[j] - mean) * (xr[j] - mean);
        const double rstd = 1.0 / sqrt(var / (double)d + eps);
        for (size_t j = 0; j < d; j++)
            y.data[r * d + j] = (float)((xr[j] - mean) * rstd * (affine ? g.data[j] : 1.0f) +
                                        (affine ? b.data[j] : 0.0f));
    }
    tensor_free(&x);
    if (affine) { tensor_free(&g); tensor_free(&b); }
    return y;
}

static bool say_layernorm_form(char *words, size_t size, const Case *c) {
    Tensor eps_t;
    float eps = 0.0f; // unknown: only the mean's candidate (ε moves it by far less than the mean)
    const bool eps_known = expected_any(c, "eps", &eps_t);
    if (eps_known) {
        eps = eps_t.data[0];
        tensor_free(&eps_t);
    }
    static const char *what[2] = {
        "got is the LayerNorm of x without the mean subtracted (x/√(mean(x²) + ε)): the mean is missing",
        "got is the LayerNorm of x without ε ((x − mean)/√var): the ε in √(var + ε) is missing"};
    for (int k = 0; k < (eps_known ? 2 : 1); k++) {
        Tensor y = layernorm_candidate(c, k == 1, k == 1 ? 0.0f : eps);
        const bool holds = y.data && all_near(c, y.data, 4.0f);
        tensor_free(&y);
        if (holds) {
            snprintf(words, size, "%s", what[k]);
            return true;
        }
    }
    return false;
}

// γ_j and β_j of a LayerNorm whose output is `y` and normalised input `xh` (rows, d):
// the least-squares line of column j; false when a column is constant (nothing to fit).
static bool fit_affine(float *gamma, float *beta, const float *xh, const float *y, size_t rows,
                       size_t d) {
    for (size_t j = 0; j < d; j++) {
        double mx = 0, my = 0, sxx = 0, sxy = 0;
        for (size_t r = 0; r < rows; r++) mx += xh[r * d + j], my += y[r * d + j];
        mx /= (double)rows, my /= (double)rows;
        for (size_t r = 0; r < rows; r++) {
            const double dx = xh[r * d + j] - mx;
            sxx += dx * dx, sxy += dx * (y[r * d + j] - my);
        }
        if (!(sxx > 0)) return false;
        gamma[j] = (float)(sxy / sxx), beta[j] = (float)(my - sxy / sxx * mx);
    }
    return true;
}

// Each row of x (rows, d) normalised into `out`: (x − mean)/√(var + ε), or without the
// mean (centre false) x/√(mean(x²) + ε). ε is timm's 1e-6: it moves nothing here.
static void normalise_rows(float *out, const float *x, size_t rows, size_t d, bool centre) {
    for (size_t r = 0; r < rows; r++) {
        double mean = 0, var = 0;
        for (size_t j = 0; j < d; j++) mean += x[r * d + j];
        mean = centre ? mean / (double)d : 0.0;
        for (size_t j = 0; j < d; j++) var += (x[r * d + j] - mean) * (x[r * d + j] - mean);
        const double rstd = 1.0 / sqrt(var / (double)d + 1e-6);
        for (size_t j = 0; j < d; j++) out[r * d + j] = (float)((x[r * d + j] - mean) * rstd);
    }
}

// A trace's LayerNorm whose input is the stage compared before it: γ and β are fitted to
// the expected output, then got is compared with the same γ, β over x/√(mean(x²)):
// the mean left out. Says nothing unless the fit gives back the expected tensor.
static bool say_norm_without_mean(char *words, size_t size, const Case *c) {
    const char *prev = c->ctx ? c->ctx->previous : NULL;
    const size_t d = c->cols, rows = c->got->numel / c->cols;
    Tensor x;
    if (!prev || rows < 3 || d < 2 || !expected_of(c, prev, &x)) return false;
    Tensor xh = tensor_clone(&x), fit = tensor_clone(&x);
    float *gamma = fit.data, *beta = fit.data + d; // (rows ≥ 3: room for both)
    normalise_rows(xh.data, x.data, rows, d, true);
    bool holds = fit_affine(gamma, beta, xh.data, c->expected->data, rows, d);
    for (size_t i = 0; holds && i < x.numel; i++) // the fit is the expected: x is its input
        holds = near(gamma[i % d] * xh.data[i] + beta[i % d], c->expected->data[i], c->atol,
                     c->rtol, 4.0f);
    normalise_rows(xh.data, x.data, rows, d, false);
    for (size_t i = 0; holds && i < x.numel; i++)
        xh.data[i] = gamma[i % d] * xh.data[i] + beta[i % d];
    holds = holds && all_near(c, xh.data, 4.0f);
    tensor_free(&x), tensor_free(&xh), tensor_free(&fit);
    if (holds)
        snprintf(words, size, "got is the LayerNorm of the expected %s without the mean"
                 " subtracted (x/√(mean(x²) + ε), then γ, β): the mean is missing", prev);
    return holds;
}

static bool say_stage_own(char *words, size_t size, const Case *c) {
    switch (c->info ? c->info->kind : STAGE_PLAIN) {
    case STAGE_SCALE: return say_scale_value(words, size, c);
    case STAGE_PROBS: // (a single number fits any formula: tensors only)
        return c->got->numel > 1 &&
               (say_wrong_axis(words, size, c) || say_scores_softmax(words, size, c));
    case STAGE_GELU: return c->got->numel > 1 && say_gelu_form(words, size, c);
    case STAGE_EPS_STD: return say_eps_missing(words, size, c);
    case STAGE_LN_MEAN: return say_mean_kept(words, size, c);
    case STAGE_LAYERNORM: return c->got->numel > 1 && say_layernorm_form(words, size, c);
    case STAGE_LINEAR: return c->got->numel > 1 && say_weight_not_transposed(words, size, c);
    case STAGE_NORM: return c->got->numel > 1 && say_norm_without_mean(words, size, c);
    default: return false;
    }
}

/* ----------------------------------------------------------------- in order */

bool diagnose(char *words, size_t size, const char *stage, const Tensor *got,
              const Tensor *expected, float atol, float rtol, const DiagnoseContext *ctx) {
    words[0] = '\0';
    if (!tensor_same_shape(got, expected) || got->numel == 0) return false;
    Case c = {.stage = stage, .got = got, .expected = expected, .atol = atol, .rtol = rtol,
              .ctx = ctx, .rows = 1, .cols = got->ndim ? (size_t)got->shape[got->ndim - 1] : 1};
    c.info = stage_info(stage, &c.word_at);
    if (got->ndim >= 2) c.rows = (size_t)got->shape[got->ndim - 2];
    c.outer = got->numel / (c.rows * c.cols);
    if (say_unwritten(words, size, &c) || say_unwritten_rows(words, size, &c) ||
        say_stage_own(words, size, &c))
        return true;
    if (!all_finite(expected)) return false; // the rest compare finite numbers only
    // the most specific first: a step left out, then the shapes of a wrong formula
    return say_earlier(words, size, &c) || say_previous(words, size, &c) ||
           say_factor(words, size, &c) || say_transposed(words, size, &c) ||
           say_shifted(words, size, &c) || say_offset(words, size, &c) ||
           say_row_factor(words, size, &c);
}
