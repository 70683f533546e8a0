/**
 * @file check.c
 * @brief Tensor comparison and golden-file checking for the CUnit suites.
 */
#include "check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef VIT_TEST_DIR
#define VIT_TEST_DIR "tests"
#endif

const char *golden_path(const char *file) {
    static char path[1024];
    const char *dir = getenv("VIT_GOLDEN_DIR");
    snprintf(path, sizeof path, "%s/%s", dir ? dir : VIT_TEST_DIR "/golden", file);
    return path;
}

Tensor golden_tensor(const char *file, const char *name) {
    SafeTensors st;
    VitError err;
    Tensor t = {0};
    if (st_open(&st, golden_path(file), &err) != VIT_OK ||
        st_read_tensor(&st, name, &t, &err) != VIT_OK) {
        fprintf(stderr, "\n    %s\n", err.msg);
        st_close(&st);
        CU_FAIL_FATAL("golden tensor missing");
    }
    st_close(&st);
    return t;
}

static void print_head(const char *label, const Tensor *t) {
    fprintf(stderr, "      %s:", label);
    for (size_t i = 0; i < t->numel && i < 6; i++) fprintf(stderr, " %.6g", (double)t->data[i]);
    fprintf(stderr, t->numel > 6 ? " ...\n" : "\n");
}

bool tensor_close(const Tensor *actual, const Tensor *expected, float atol, float rtol,
                  const char *label) {
    char sa[64], se[64];
    if (!tensor_same_shape(actual, expected)) {
        fprintf(stderr, "\n    %s: shape %s, expected %s\n", label,
                tensor_shape_str(actual, sa, sizeof sa), tensor_shape_str(expected, se, sizeof se));
        return false;
    }
    double worst = 0, worst_excess = 0;
    size_t worst_i = 0, bad = 0;
    for (size_t i = 0; i < actual->numel; i++) {
        double a = actual->data[i], e = expected->data[i];
        if (isnan(e) && isnan(a)) continue;
        if (isinf(e) && a == e) continue;
        double diff = fabs(a - e);
        double excess = diff - (atol + rtol * fabs(e));
        if (!(excess <= 0)) { // also catches NaN
            bad++;
            if (!(excess <= worst_excess) || isnan(excess)) { worst_excess = excess; worst_i = i; }
        }
        if (diff > worst) worst = diff;
    }
    if (bad == 0) return true;
    fprintf(stderr, "\n    %s %s: %zu of %zu elements outside %g + %g·|ref|; max |diff| %.3g;"
            " worst at [%zu]: %.8g vs %.8g\n", label, tensor_shape_str(actual, sa, sizeof sa),
            bad, actual->numel, (double)atol, (double)rtol, worst, worst_i,
            (double)actual->data[worst_i], (double)expected->data[worst_i]);
    print_head("got     ", actual);
    print_head("expected", expected);
    return false;
}

bool golden_open(GoldenCheck *g, const char *file) {
    memset(g, 0, sizeof *g);
    g->atol = CHECK_ATOL;
    g->rtol = CHECK_RTOL;
    VitError err;
    if (st_open(&g->golden, golden_path(file), &err) != VIT_OK) {
        fprintf(stderr, "\n    %s\n", err.msg);
        CU_FAIL("golden file did not load");
        return false;
    }
    g->seen = calloc((size_t)g->golden.count + 1, sizeof(bool));
    g->loaded = true;
    return true;
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

void golden_check(void *user, const char *name, const Tensor *t) {
    GoldenCheck *g = user;
    if (!g->loaded) return;
    const StTensor *e = st_find(&g->golden, name);
    if (!e) {
        fprintf(stderr, "\n    %s: produced but no golden pins it\n", name);
        g->unpinned++;
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
    if (!tensor_close(t, &expected, atol, rtol, name)) g->mismatches++;
    tensor_free(&expected);
}

void golden_finish(GoldenCheck *g) {
    if (!g->loaded) return;
    int missing = 0;
    for (int i = 0; i < g->golden.count; i++)
        if (!g->seen[i]) {
            fprintf(stderr, "\n    %s: pinned by the golden but never produced\n",
                    g->golden.tensors[i].name);
            missing++;
        }
    CU_ASSERT(g->checked > 0);
    CU_ASSERT_EQUAL(g->mismatches, 0);
    CU_ASSERT_EQUAL(g->unpinned, 0);
    CU_ASSERT_EQUAL(missing, 0);
    free(g->seen);
    st_close(&g->golden);
    g->loaded = false;
}

void check_chapter_against_golden(ChapterFn run, const char *file) {
    GoldenCheck g;
    if (!golden_open(&g, file)) return;
    Chapter ch = {.out = NULL, .pin = golden_check, .pin_user = &g};
    run(&ch);
    golden_finish(&g);
}
