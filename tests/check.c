/**
 * @file check.c
 * @brief Tensor comparison and golden-file checking for the CUnit suites.
 */
#include "check.h"

#include <CUnit/TestRun.h>
#include <dlfcn.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/rng.h"
#include "diagnose.h"
#include "record.h"
#include "io/labels.h"
#include "attention/attention.h"
#include "base/rng.h"

#ifndef VIT_TEST_DIR
#define VIT_TEST_DIR "tests"
#endif

enum { HEAD_VALUES = 6 }; // first values shown of each side

// A value as a student reads it: "NaN" whatever its sign bit, "inf", "-inf", else %.8g.
static const char *num(char *buf, size_t size, double v) {
    if (isnan(v)) snprintf(buf, size, "NaN");
    else snprintf(buf, size, "%.8g", v);
    return buf;
}

const char *golden_path(const char *file) {
    static char path[1024];
    const char *dir = getenv("VIT_GOLDEN_DIR");
    snprintf(path, sizeof path, "%s/%s", dir ? dir : VIT_TEST_DIR "/golden", file);
    return path;
}

Tensor golden_tensor_at(const char *file, const char *name, const char *src, int line) {
    SafeTensors st;
    VitError err;
    Tensor t = {0};
    if (st_open(&st, golden_path(file), &err) != VIT_OK ||
        st_read_tensor(&st, name, &t, &err) != VIT_OK) {
        fprintf(stderr, "\n    %s\n", err.msg);
        st_close(&st);
        char msg[512];
        snprintf(msg, sizeof msg, "golden tensor '%s' of %s is missing", name, file);
        CU_assertImplementation(CU_FALSE, (unsigned)line, msg, src, "", CU_TRUE);
    }
    st_close(&st);
    return t;
}

/* ------------------------------------------------------- every assertion */

// Every CU_ASSERT of every test ends here, before CUnit's own: in record mode
// (record.h) the assertion is also written down for the grader, which judges
// it in a process of its own. Defined in the runner, so a student's file that
// defines it too does not link.
typedef CU_BOOL (*AssertFn)(CU_BOOL, unsigned int, const char *, const char *, const char *,
                            CU_BOOL);

// CUnit's own CU_assertImplementation(), which this file's replaces.
static AssertFn cunit_assert(void) {
    static AssertFn cunit;
    if (!cunit) {
        void *found = dlsym(RTLD_NEXT, "CU_assertImplementation");
        memcpy(&cunit, &found, sizeof cunit); // a data pointer to a function pointer, as POSIX allows
        if (!cunit) {
            fprintf(stderr, "check: CUnit's CU_assertImplementation() is not found\n");
            abort();
        }
    }
    return cunit;
}

CU_BOOL CU_assertImplementation(CU_BOOL value, unsigned int line, const char *condition,
                                const char *file, const char *function, CU_BOOL fatal) {
    record_bool(value, line, file, condition);
    return cunit_assert()(value, line, condition, file, function, fatal);
}

// An assertion that sums up the tensor comparisons just recorded: written down
// as such (RECORD_SUM), so the grader can tell a near miss from other failures.
static void assert_sum(bool held, int line, const char *condition, const char *file,
                       const char *function) {
    record_sum(held, (unsigned)line, file, condition);
    cunit_assert()(held ? CU_TRUE : CU_FALSE, (unsigned)line, condition, file, function, CU_FALSE);
}

void check_assert_number(bool held, double actual, double expected, double tolerance,
                         const char *condition, const char *file, int line, CU_BOOL fatal) {
    record_number(held, actual, expected, tolerance, (unsigned)line, file, condition);
    cunit_assert()(held ? CU_TRUE : CU_FALSE, (unsigned)line, condition, file, "", fatal);
}

void check_assert_within(double actual, double expected, double granularity,
                         const char *condition, const char *file, int line, CU_BOOL fatal) {
    const bool held = fabs(actual - expected) <= fabs(granularity);
    check_assert_number(held, actual, expected, fabs(granularity), condition, file, line, fatal);
}

/* ------------------------------------------------------------ one comparison */

// "[1, 0, 16, 3]": the position of flat index i in t's shape.
static const char *index_str(char *buf, size_t size, const Tensor *t, size_t i) {
    int at[TENSOR_MAX_DIMS] = {0};
    for (int k = t->ndim - 1; k >= 0; k--) {
        size_t n = t->shape[k] > 0 ? (size_t)t->shape[k] : 1;
        at[k] = (int)(i % n);
        i /= n;
    }
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int k = 0; k < t->ndim && used < size; k++)
        used += (size_t)snprintf(buf + used, size - used, "%s%d", k ? ", " : "", at[k]);
    if (used < size) snprintf(buf + used, size - used, "]");
    return buf;
}

bool tensor_diff(TensorDiff *d, const Tensor *actual, const Tensor *expected, float atol,
                 float rtol) {
    memset(d, 0, sizeof *d);
    d->shape_ok = tensor_same_shape(actual, expected);
    d->numel = actual->numel;
    if (!d->shape_ok) return false;
    const Tensor *side[2] = {actual, expected};
    double worst_excess = 0;
    bool worst_nonfinite = false;
    for (size_t i = 0; i < actual->numel; i++) {
        for (int s = 0; s < 2; s++) {
            float v = side[s]->data[i];
            if (isnan(v) && d->nan[s]++ == 0) d->first_nan[s] = i;
            if (isinf(v) && d->inf[s]++ == 0) d->first_inf[s] = i;
        }
        double a = actual->data[i], e = expected->data[i];
        if (isnan(e) && isnan(a)) continue;
        if (isinf(e) && a == e) continue;
        if (!isfinite(a) || !isfinite(e)) { // one side NaN or ±Inf, the other not the same
            if (!worst_nonfinite) d->worst = i;
            worst_nonfinite = true;
            if (d->bad++ == 0) d->first_bad = i;
            continue;
        }
        double diff = fabs(a - e);
        d->finite_pairs++;
        if (diff > d->max_diff) d->max_diff = diff;
        double excess = diff - (atol + rtol * fabs(e));
        if (excess > 0) {
            if (!worst_nonfinite && (d->bad == 0 || excess > worst_excess)) {
                worst_excess = excess;
                d->worst = i;
            }
            if (d->bad++ == 0) d->first_bad = i;
        }
    }
    return d->bad == 0;
}

// "NaN: got 14 (first at [0, 0, 0, 3]), expected none; Inf: ...", or "" when neither side has any.
static void nonfinite_str(char *buf, size_t size, const TensorDiff *d, const Tensor *actual) {
    buf[0] = '\0';
    size_t used = 0;
    const char *kind[2] = {"NaN", "Inf"};
    for (int k = 0; k < 2; k++) {
        const size_t *count = k ? d->inf : d->nan, *first = k ? d->first_inf : d->first_nan;
        if (!count[0] && !count[1]) continue;
        used += (size_t)snprintf(buf + used, size - used, "%s%s:", used ? "; " : "", kind[k]);
        for (int s = 0; s < 2 && used < size; s++) {
            char at[64];
            if (count[s])
                used += (size_t)snprintf(buf + used, size - used, " %s %zu (first at %s)%s",
                                         s ? "expected" : "got", count[s],
                                         index_str(at, sizeof at, actual, first[s]), s ? "" : ",");
            else
                used += (size_t)snprintf(buf + used, size - used, " %s none%s",
                                         s ? "expected" : "got", s ? "" : ",");
        }
        if (used >= size) return;
    }
}

// "max |diff| 0.83", with `where` when some pairs are not finite, or "no pair is finite on both sides".
static void max_diff_str(char *buf, size_t size, const TensorDiff *d, const char *where) {
    if (d->finite_pairs == 0) snprintf(buf, size, "no pair is finite on both sides");
    else snprintf(buf, size, "max |diff| %.3g%s", d->max_diff,
                  d->finite_pairs < d->numel ? where : "");
}

void tensor_diff_summary(char *buf, size_t size, const TensorDiff *d, const Tensor *actual,
                         const Tensor *expected, float atol, float rtol) {
    char sa[64], se[64];
    if (!d->shape_ok) {
        snprintf(buf, size, "shape %s, expected %s", tensor_shape_str(actual, sa, sizeof sa),
                 tensor_shape_str(expected, se, sizeof se));
        return;
    }
    char nf[256], at[64], va[32], ve[32], md[64];
    nonfinite_str(nf, sizeof nf, d, actual);
    max_diff_str(md, sizeof md, d, " (finite pairs)");
    snprintf(buf, size,
             "%s: %zu of %zu elements outside %g + %g·|ref|, %s, worst at %s: "
             "got %s, expected %s%s%s",
             tensor_shape_str(actual, sa, sizeof sa), d->bad, d->numel, (double)atol,
             (double)rtol, md,
             index_str(at, sizeof at, actual, d->worst), num(va, sizeof va, actual->data[d->worst]),
             num(ve, sizeof ve, expected->data[d->worst]), nf[0] ? "; " : "", nf);
}

// "      got      [0, 0, 0]: 1 2 3 4 5 6 ...": HEAD_VALUES values from flat index `from`.
static void print_head(const char *label, const Tensor *t, size_t from) {
    char at[64];
    fprintf(stderr, "      %s %s:", label, index_str(at, sizeof at, t, from));
    for (size_t i = from; i < t->numel && i < from + HEAD_VALUES; i++)
        if (isnan(t->data[i])) fprintf(stderr, " NaN");
        else fprintf(stderr, " %.6g", (double)t->data[i]);
    fprintf(stderr, t->numel > from + HEAD_VALUES ? " ...\n" : "\n");
}

void tensor_diff_print(const TensorDiff *d, const Tensor *actual, const Tensor *expected,
                       float atol, float rtol, const char *label, CheckDetail detail) {
    char sa[64], se[64];
    if (detail == CHECK_QUIET) return;
    if (!d->shape_ok) {
        fprintf(stderr, "%s%s: shape %s, expected %s\n", detail == CHECK_LINE ? "    also " : "\n    ",
                label, tensor_shape_str(actual, sa, sizeof sa),
                tensor_shape_str(expected, se, sizeof se));
        return;
    }
    if (detail == CHECK_LINE) {
        char line[640];
        tensor_diff_summary(line, sizeof line, d, actual, expected, atol, rtol);
        fprintf(stderr, "    also %s %s\n", label, line);
        return;
    }
    char at[64], nf[256], va[32], ve[32], md[64];
    const bool nonfinite = d->nan[0] + d->nan[1] + d->inf[0] + d->inf[1] > 0;
    max_diff_str(md, sizeof md, d, " (over the pairs where both are finite)");
    fprintf(stderr, "\n    %s %s: %zu of %zu elements outside %g + %g·|ref|, the first at %s;"
            " %s\n",
            label, tensor_shape_str(actual, sa, sizeof sa), d->bad, d->numel, (double)atol,
            (double)rtol, index_str(at, sizeof at, actual, d->first_bad), md);
    fprintf(stderr, "      worst at %s (flat %zu): got %s, expected %s\n",
            index_str(at, sizeof at, actual, d->worst), d->worst,
            num(va, sizeof va, actual->data[d->worst]), num(ve, sizeof ve, expected->data[d->worst]));
    if (nonfinite) {
        nonfinite_str(nf, sizeof nf, d, actual);
        fprintf(stderr, "      %s\n", nf);
    }
    print_head("got     ", actual, 0);
    print_head("expected", expected, 0);
    if (d->first_bad >= HEAD_VALUES) { // the first values agree: show where the trouble starts
        print_head("got     ", actual, d->first_bad);
        print_head("expected", expected, d->first_bad);
    }
}

// The failure in words, when a diagnosis holds (diagnose.h): printed under its report,
// kept in r->said when it is the series' first. Returns the words ("" when none).
static const char *say_in_words(char *words, size_t size, const char *label,
                                const Tensor *actual, const Tensor *expected, float atol,
                                float rtol, const DiagnoseContext *ctx, CheckReport *r) {
    if (!diagnose(words, size, label, actual, expected, atol, rtol, ctx)) return words;
    fprintf(stderr, "      in words: %s\n", words);
    if (r && !r->said[0]) snprintf(r->said, sizeof r->said, "%.100s: %.250s", label, words);
    return words;
}

bool tensor_near(const Tensor *actual, const Tensor *candidate, float atol, float rtol) {
    if (!tensor_same_shape(actual, candidate)) return false;
    for (size_t i = 0; i < actual->numel; i++) {
        const float a = actual->data[i], c = candidate->data[i];
        if (isnan(a) || isnan(c)) {
            if (isnan(a) != isnan(c)) return false;
            continue;
        }
        if (a == c) continue; // equal infinities too
        if (isinf(a) || isinf(c)) return false; // rtol·|inf| would let any number match
        if (!(fabsf(a - c) <= atol + rtol * fabsf(c))) return false;
    }
    return true;
}

void check_hint(const char *fmt, ...) {
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    printf("    hint: %s\n", text);
    fflush(stdout);
}

bool tensor_close(const Tensor *actual, const Tensor *expected, float atol, float rtol,
                  const char *label) {
    TensorDiff d;
    record_tensor(label, actual, expected, atol, rtol);
    if (tensor_diff(&d, actual, expected, atol, rtol)) return true;
    tensor_diff_print(&d, actual, expected, atol, rtol, label, CHECK_FULL);
    char words[256];
    say_in_words(words, sizeof words, label, actual, expected, atol, rtol, NULL, NULL);
    return false;
}

// diagnose.h's expected_of over the stages a test holds (a list ended by a NULL name):
// the one whose name is a word of `name` (the diagnoses ask for "….tokens", "x", …).
static bool known_expected_of(void *user, const char *name, Tensor *out) {
    for (const CheckStage *k = user; k->name; k++) {
        const size_t n = strlen(k->name);
        for (const char *p = strstr(name, k->name); p; p = strstr(p + 1, k->name))
            if ((p == name || strchr("._ :,()", p[-1])) && (!p[n] || strchr("._ :,()", p[n]))) {
                *out = tensor_clone(k->expected);
                return true;
            }
    }
    return false;
}

static bool assert_close_in_words(const Tensor *actual, const Tensor *expected, float atol,
                                  float rtol, const char *label, const DiagnoseContext *ctx,
                                  const char *src, int line, const char *func);

bool check_assert_close_from(const Tensor *actual, const Tensor *expected, float atol,
                             float rtol, const char *label, const CheckStage *known,
                             const char *src, int line, const char *func) {
    const DiagnoseContext ctx = {.expected_of = known_expected_of, .user = (void *)known};
    return assert_close_in_words(actual, expected, atol, rtol, label, &ctx, src, line, func);
}

bool check_assert_close(const Tensor *actual, const Tensor *expected, float atol, float rtol,
                        const char *label, const char *src, int line, const char *func) {
    return assert_close_in_words(actual, expected, atol, rtol, label, NULL, src, line, func);
}

// check_assert_close()'s work, its diagnoses knowing what ctx holds (or NULL).
static bool assert_close_in_words(const Tensor *actual, const Tensor *expected, float atol,
                                  float rtol, const char *label, const DiagnoseContext *ctx,
                                  const char *src, int line, const char *func) {
    TensorDiff d;
    record_tensor(label, actual, expected, atol, rtol);
    bool ok = tensor_diff(&d, actual, expected, atol, rtol);
    char msg[1200] = "";
    if (!ok) {
        tensor_diff_print(&d, actual, expected, atol, rtol, label, CHECK_FULL);
        char summary[640], words[256];
        tensor_diff_summary(summary, sizeof summary, &d, actual, expected, atol, rtol);
        say_in_words(words, sizeof words, label, actual, expected, atol, rtol, ctx, NULL);
        snprintf(msg, sizeof msg, "assert_tensor_close(%s) %s%s%s", label, summary,
                 words[0] ? "; in words: " : "", words);
    }
    assert_sum(ok, line, msg, src, func);
    return ok;
}

/* ------------------------------------------------------- a series of them */

CheckDetail check_report_fail(CheckReport *r, const char *name) {
    if (r->failures++ == 0) {
        snprintf(r->first, sizeof r->first, "%s", name);
        return CHECK_FULL;
    }
    return r->failures <= 1 + CHECK_LINES ? CHECK_LINE : CHECK_QUIET;
}

void check_report_end(const CheckReport *r, const char *what) {
    if (r->failures > 1 + CHECK_LINES)
        fprintf(stderr, "    ... and %d more %s differ (%d of %d in all; the first was %s)\n",
                r->failures - 1 - CHECK_LINES, what, r->failures, r->compared, r->first);
}

// tensor_close_in() with what the diagnoses may know besides the two tensors (or NULL);
// the diagnoses run only for the failures that are printed.
static bool close_in(CheckReport *r, const Tensor *actual, const Tensor *expected, float atol,
                     float rtol, const char *label, const DiagnoseContext *ctx) {
    TensorDiff d;
    r->compared++;
    record_tensor(label, actual, expected, atol, rtol);
    if (tensor_diff(&d, actual, expected, atol, rtol)) return true;
    const CheckDetail detail = check_report_fail(r, label);
    tensor_diff_print(&d, actual, expected, atol, rtol, label, detail);
    char words[256];
    if (detail != CHECK_QUIET)
        say_in_words(words, sizeof words, label, actual, expected, atol, rtol, ctx, r);
    return false;
}

bool tensor_close_in(CheckReport *r, const Tensor *actual, const Tensor *expected, float atol,
                     float rtol, const char *label) {
    return close_in(r, actual, expected, atol, rtol, label, NULL);
}

bool check_assert_report(const CheckReport *r, const char *what, const char *src, int line,
                         const char *func) {
    check_report_end(r, what);
    char msg[768] = "";
    if (r->failures)
        snprintf(msg, sizeof msg, "%d of %d %s differ, the first is %s%s%s", r->failures,
                 r->compared, what, r->first, r->said[0] ? "; in words, " : "", r->said);
    assert_sum(r->failures == 0, line, msg, src, func);
    return r->failures == 0;
}

/* ------------------------------------------------------------ golden files */

bool golden_open_at(GoldenCheck *g, const char *file, const char *src, int line) {
    memset(g, 0, sizeof *g);
    g->atol = CHECK_ATOL;
    g->rtol = CHECK_RTOL;
    snprintf(g->file, sizeof g->file, "%s", file);
    VitError err;
    if (st_open(&g->golden, golden_path(file), &err) != VIT_OK) {
        fprintf(stderr, "\n    %s\n", err.msg);
        char msg[256];
        snprintf(msg, sizeof msg, "golden file %s did not load", file);
        CU_assertImplementation(CU_FALSE, (unsigned)line, msg, src, "", CU_FALSE);
        return false;
    }
    g->seen = calloc((size_t)g->golden.count + 1, sizeof(bool));
    g->loaded = true;
    return true;
}

bool golden_report_wanted(void) {
    const char *r = getenv("VIT_GOLDEN_REPORT");
    return r && *r && strcmp(r, "0") != 0;
}

static void tolerance_for(const GoldenCheck *g, const char *name, float *atol, float *rtol) {
    char key[300];
    snprintf(key, sizeof key, "tol.%s", name);
    const char *v = st_meta(&g->golden, key);
    *atol = g->atol;
    *rtol = g->rtol;
    if (v && sscanf(v, "%f %f", atol, rtol) != 2) {
        *atol = g->atol;
        *rtol = g->rtol;
    }
}

// For the diagnoses: the golden's tensor `name` (any stage's expected value), into `out`.
static bool golden_expected_of(void *user, const char *name, Tensor *out) {
    GoldenCheck *g = user;
    VitError err;
    return st_find(&g->golden, name) && st_read_tensor(&g->golden, name, out, &err) == VIT_OK;
}

// Dh, the head width, when the golden holds the queries: "q" or "Q" (N, Dh), or a trace's
// "….attn.q" (B, H, N, Dh); else 0. A factor of √Dh is then named as the scale's.
static int golden_head_dim(GoldenCheck *g) {
    for (int i = 0; i < g->golden.count; i++) {
        const StTensor *e = &g->golden.tensors[i];
        const size_t n = strlen(e->name);
        const bool queries = !strcmp(e->name, "q") || !strcmp(e->name, "Q") ||
                             (n >= 7 && !strcmp(e->name + n - 7, ".attn.q"));
        if (queries && e->ndim >= 2) return (int)e->shape[e->ndim - 1];
    }
    // chapter 08 pins the shapes only: "attn.q.shape" holds (B, H, N, Dh)
    Tensor shape;
    VitError err;
    if (!st_find(&g->golden, "attn.q.shape") ||
        st_read_tensor(&g->golden, "attn.q.shape", &shape, &err) != VIT_OK)
        return 0;
    const int dh = shape.numel == 4 ? (int)shape.data[3] : 0;
    tensor_free(&shape);
    return dh;
}

void golden_check(void *user, const char *name, const Tensor *t) {
    GoldenCheck *g = user;
    if (!g->loaded) return;
    const StTensor *e = st_find(&g->golden, name);
    if (!e) {
        if (g->unpinned++ == 0) snprintf(g->first_unpinned, sizeof g->first_unpinned, "%s", name);
        if (g->unpinned <= CHECK_LINES)
            fprintf(stderr, "\n    %s: produced but no golden pins it\n", name);
        return;
    }
    g->seen[e - g->golden.tensors] = true;
    Tensor expected;
    VitError err;
    if (st_read_tensor(&g->golden, name, &expected, &err) != VIT_OK) {
        fprintf(stderr, "\n    %s\n", err.msg);
        g->mismatches++;
        return;
    }
    float atol, rtol;
    tolerance_for(g, name, &atol, &rtol);
    g->checked++;
    if (!g->head_dim_looked) { // once per golden: the diagnoses name a factor of √Dh by it
        g->head_dim = golden_head_dim(g);
        g->head_dim_looked = true;
    }
    const DiagnoseContext ctx = {.head_dim = g->head_dim, .expected_of = golden_expected_of,
                                 .user = g, .previous = g->previous[0] ? g->previous : NULL};
    if (!close_in(&g->report, t, &expected, atol, rtol, name, &ctx)) {
        g->mismatches++;
        if (g->stop) *g->stop = true; // the chapter's later sections rest on this value
    }
    snprintf(g->previous, sizeof g->previous, "%s", name);
    if (golden_report_wanted() && tensor_same_shape(t, &expected)) {
        double worst = 0, used = 0; // largest |diff| and largest |diff| / (atol + rtol·|ref|)
        for (size_t i = 0; i < t->numel; i++) {
            double d = fabs((double)t->data[i] - expected.data[i]);
            if (isnan(d)) continue;
            worst = fmax(worst, d);
            used = fmax(used, d / (atol + rtol * fabs(expected.data[i])));
        }
        fprintf(stderr, "\n      %-26s max |diff| %.2e, %.2g of its tolerance", name, worst, used);
    }
    tensor_free(&expected);
}

// "    ch05_multi_head.safetensors: golden made on AMD EPYC (torch AVX2; cpu avx ...), torch
// 1.13.0a0": under a failure, so a learner on another machine sees where the expected values
// were computed (tools/golden_common.py records it). Nothing when the golden does not say.
static void golden_origin_print(const GoldenCheck *g) {
    const char *cpu = st_meta(&g->golden, "cpu");
    if (!cpu) return;
    const char *isa = st_meta(&g->golden, "isa"), *torch = st_meta(&g->golden, "torch");
    fprintf(stderr, "    %s: golden made on %s%s%s%s%s%s\n", g->file, cpu, isa ? " (" : "",
            isa ? isa : "", isa ? ")" : "", torch ? ", torch " : "", torch ? torch : "");
}

void golden_finish_at(GoldenCheck *g, const char *src, int line) {
    if (!g->loaded) return;
    const bool stopped = g->stop && *g->stop;
    int missing = 0;
    const char *first_missing = "";
    for (int i = 0; i < g->golden.count; i++)
        if (!g->seen[i]) {
            if (missing++ == 0) first_missing = g->golden.tensors[i].name;
            if (missing <= CHECK_LINES && !stopped)
                fprintf(stderr, "\n    %s: pinned by the golden but never produced\n",
                        g->golden.tensors[i].name);
        }
    if (stopped && missing)
        fprintf(stderr, "\n    %s: the chapter stopped after the section of its first wrong "
                "value; %d values of its later sections were not compared\n", g->file, missing);
    check_report_end(&g->report, "stages");
    if (g->mismatches) golden_origin_print(g);
    char msg[1024];
    snprintf(msg, sizeof msg, "%s: nothing was compared", g->file);
    CU_assertImplementation(g->checked > 0, (unsigned)line, msg, src, "", CU_FALSE);
    snprintf(msg, sizeof msg, "%s: %d of %d compared differ from the golden, the first is %s%s%s",
             g->file, g->mismatches, g->checked, g->report.failures ? g->report.first : "unreadable",
             g->report.said[0] ? "; in words, " : "", g->report.said);
    assert_sum(g->mismatches == 0, line, msg, src, "");
    snprintf(msg, sizeof msg, "%s: %d produced but not pinned, the first is %s", g->file,
             g->unpinned, g->first_unpinned);
    CU_assertImplementation(g->unpinned == 0, (unsigned)line, msg, src, "", CU_FALSE);
    snprintf(msg, sizeof msg, "%s: %d pinned but never produced, the first is %s", g->file,
             missing, first_missing);
    CU_assertImplementation(missing == 0 || stopped, (unsigned)line, msg, src, "", CU_FALSE);
    golden_close(g);
}

void golden_close(GoldenCheck *g) {
    if (!g->loaded) return;
    free(g->seen);
    g->seen = NULL;
    st_close(&g->golden);
    g->loaded = false;
}

void check_chapter_against_golden_at(ChapterFn run, const char *file, const char *src, int line) {
    GoldenCheck g;
    if (!golden_open_at(&g, file, src, line)) return;
    Chapter ch = {.out = NULL, .pin = golden_check, .pin_user = &g};
    g.stop = &ch.stop;
    run(&ch);
    golden_finish_at(&g, src, line);
}

void golden_meta_tolerance(const char *file, const char *name, float *atol, float *rtol) {
    SafeTensors st;
    VitError err;
    char key[300];
    snprintf(key, sizeof key, "tol.%s", name);
    CU_ASSERT_FATAL(st_open(&st, golden_path(file), &err) == VIT_OK);
    const char *v = st_meta(&st, key);
    const bool found = v && sscanf(v, "%f %f", atol, rtol) == 2;
    st_close(&st);
    if (!found) fprintf(stderr, "\n    %s has no \"%s\" = \"ATOL RTOL\"\n", file, key);
    CU_ASSERT_FATAL(found);
}

void expect_golden_tensor(const char *file, const char *name, const Tensor *actual) {
    float atol, rtol;
    golden_meta_tolerance(file, name, &atol, &rtol);
    Tensor expected = golden_tensor(file, name);
    assert_tensor_close(actual, &expected, atol, rtol, name);
    if (golden_report_wanted() && tensor_same_shape(actual, &expected))
        fprintf(stderr, "\n    %s: max |diff| %.3g (atol %.3g)", name,
                (double)tensor_max_abs_diff(actual, &expected), (double)atol);
    tensor_free(&expected);
}

const VitConfig check_small_config = {.image_size = 32, .patch_size = 8, .channels = 3,
                                      .dim = 64, .depth = 2, .heads = 4, .mlp_dim = 256,
                                      .num_classes = 10, .ln_eps = 1e-6f};
const VitInit check_small_init = {.seed = 7, .std = 0.2f, .bias_std = 0.02f, .norm_std = 0.1f};

Tensor check_image_batch(const VitConfig *c, int B, uint64_t seed) {
    Tensor x = tensor_new(4, B, c->channels, c->image_size, c->image_size);
    Rng rng;
    rng_seed(&rng, seed);
    rng_fill_uniform(&rng, x.data, x.numel, -1.0f, 1.0f);
    return x;
}

Vit check_shipped_model(void) {
    char path[1024];
    Vit vit = {0};
    VitError err;
    vit_data_path(path, sizeof path, "models/vit-fashion.safetensors");
    VitStatus s = vit_build(&vit, path, &err);
    if (s != VIT_OK) fprintf(stderr, "\n    %s\n", err.msg);
    CU_ASSERT_FATAL(s == VIT_OK);
    return vit;
}

void check_poison(float *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = NAN;
}

bool check_attention_online_by_hand(void) {
    enum { B = 2, H = 2, N = 5, Dh = 4, ROWS = B * H * N };
    float q[ROWS * Dh], k[ROWS * Dh], v[ROWS * Dh], got[ROWS * Dh], want[ROWS * Dh];
    Rng rng;
    rng_seed(&rng, 65);
    rng_fill_normal(&rng, q, ROWS * Dh, 0.0f, 1.0f);
    rng_fill_normal(&rng, k, ROWS * Dh, 0.0f, 1.0f);
    rng_fill_normal(&rng, v, ROWS * Dh, 0.0f, 1.0f);
    for (int bh = 0; bh < B * H; bh++) {
        const float *K = k + bh * N * Dh, *V = v + bh * N * Dh;
        for (int i = 0; i < N; i++) {
            const float *qi = q + (bh * N + i) * Dh;
            double p[N], top = -INFINITY, sum = 0;
            for (int j = 0; j < N; j++) { // the scaled scores of query i
                double dot = 0;
                for (int d = 0; d < Dh; d++) dot += (double)qi[d] * K[j * Dh + d];
                p[j] = dot / sqrt((double)Dh);
                top = p[j] > top ? p[j] : top;
            }
            for (int j = 0; j < N; j++) sum += p[j] = exp(p[j] - top);
            for (int d = 0; d < Dh; d++) { // its weights times the values
                double o = 0;
                for (int j = 0; j < N; j++) o += p[j] / sum * V[j * Dh + d];
                want[(bh * N + i) * Dh + d] = (float)o;
            }
        }
    }
    for (int e = 0; e < ROWS * Dh; e++) got[e] = NAN; // an element never written fails
    attention_online(got, q, k, v, NULL, B, H, N, Dh, MHA_KEY_BLOCK);
    for (int e = 0; e < ROWS * Dh; e++)
        if (!(fabsf(got[e] - want[e]) <= 1e-5f + 1e-4f * fabsf(want[e]))) return false;
    return true;
}
