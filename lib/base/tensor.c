/**
 * @file tensor.c
 * @brief Tensor construction, statistics and PyTorch-style printing.
 */
#include "base/tensor.h"
#include "base/util.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- making */

static Tensor tensor_shell(int ndim, const int *shape) {
    if (ndim < 0 || ndim > TENSOR_MAX_DIMS) {
        fprintf(stderr, "tensor: %d dimensions requested, at most %d supported\n", ndim,
                TENSOR_MAX_DIMS);
        abort(); // a programming error, never user input
    }
    Tensor t = {0};
    t.ndim = ndim;
    t.numel = 1;
    for (int i = 0; i < ndim; i++) {
        if (shape[i] < 0) {
            fprintf(stderr, "tensor: negative size %d on axis %d\n", shape[i], i);
            abort();
        }
        t.shape[i] = shape[i];
        t.numel *= (size_t)shape[i];
    }
    return t;
}

Tensor tensor_new_shape(int ndim, const int *shape) {
    Tensor t = tensor_shell(ndim, shape);
    t.data = vit_calloc(t.numel, sizeof(float));
    t.owns_data = true;
    return t;
}

/// Collects `ndim` int varargs into an array; shared by tensor_new and tensor_view.
#define COLLECT_SHAPE(shape, ndim)                                      \
    int shape[TENSOR_MAX_DIMS] = {0};                                   \
    do {                                                                \
        va_list ap;                                                     \
        va_start(ap, ndim);                                             \
        for (int i_ = 0; i_ < (ndim) && i_ < TENSOR_MAX_DIMS; i_++)     \
            shape[i_] = va_arg(ap, int);                                \
        va_end(ap);                                                     \
    } while (0)

Tensor tensor_new(int ndim, ...) {
    COLLECT_SHAPE(shape, ndim);
    return tensor_new_shape(ndim, shape);
}

Tensor tensor_view_shape(float *data, int ndim, const int *shape) {
    Tensor t = tensor_shell(ndim, shape);
    t.data = data;
    t.owns_data = false;
    return t;
}

Tensor tensor_view(float *data, int ndim, ...) {
    COLLECT_SHAPE(shape, ndim);
    return tensor_view_shape(data, ndim, shape);
}

Tensor tensor_from(const float *values, int ndim, const int *shape) {
    Tensor t = tensor_new_shape(ndim, shape);
    memcpy(t.data, values, t.numel * sizeof(float));
    return t;
}

Tensor tensor_scalar(float value) {
    Tensor t = tensor_new_shape(0, NULL);
    t.data[0] = value;
    return t;
}

Tensor tensor_clone(const Tensor *src) {
    return tensor_from(src->data, src->ndim, src->shape);
}

void tensor_free(Tensor *t) {
    if (t->owns_data) free(t->data);
    memset(t, 0, sizeof *t);
}

/* ---------------------------------------------------------------- asking */

bool tensor_same_shape(const Tensor *a, const Tensor *b) {
    if (a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++)
        if (a->shape[i] != b->shape[i]) return false;
    return true;
}

char *tensor_shape_format(char *buf, size_t size, int ndim, const int64_t *shape, const char *axes) {
    size_t used = (size_t)snprintf(buf, size, "(");
    const char *a = axes ? axes : "";
    for (int i = 0; i < ndim && used < size; i++) {
        size_t len = strcspn(a, ","); // this axis's name, "" when there are no more
        used += (size_t)snprintf(buf + used, size - used, "%s%.*s%s%lld", i ? ", " : "",
                                 (int)len, a, len ? "=" : "", (long long)shape[i]);
        a += len;
        if (*a == ',') a++;
    }
    if (used < size) snprintf(buf + used, size - used, ")");
    return buf;
}

char *tensor_shape_str(const Tensor *t, char *buf, size_t size) {
    int64_t shape[TENSOR_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++) shape[i] = t->shape[i];
    return tensor_shape_format(buf, size, t->ndim, shape, NULL);
}

TensorStats tensor_stats(const Tensor *t) {
    TensorStats s = {.min = INFINITY, .max = -INFINITY, .count = t->numel};
    double sum = 0, sumsq = 0;
    size_t finite = 0;
    for (size_t i = 0; i < t->numel; i++) {
        float v = t->data[i];
        if (isnan(v)) { s.n_nan++; continue; }
        if (isinf(v)) { s.n_inf++; continue; }
        if (v < s.min) s.min = v;
        if (v > s.max) s.max = v;
        sum += v;
        sumsq += (double)v * v;
        finite++;
    }
    if (finite == 0) {
        s.min = s.max = NAN;
        s.mean = s.std = NAN;
        return s;
    }
    s.mean = sum / (double)finite;
    // second pass for the variance: sum-of-squares minus mean² cancels badly
    double var = 0;
    for (size_t i = 0; i < t->numel; i++) {
        float v = t->data[i];
        if (isfinite(v)) var += ((double)v - s.mean) * ((double)v - s.mean);
    }
    s.std = sqrt(var / (double)finite);
    s.l2 = sqrt(sumsq);
    return s;
}

/* -------------------------------------------------------------- printing */

// PyTorch's defaults: elide above 1000 elements, keep 3 at each edge.
enum { PRINT_THRESHOLD = 1000, PRINT_EDGE = 3 };

typedef struct {
    FILE *f;
    const Tensor *t;
    bool elide;
    bool sci;      // scientific notation when magnitudes are extreme
    int width;     // every number is padded to this width
    int indent;    // column where the outermost bracket opened
} Printer;

static int format_value(char *buf, size_t size, float v, bool sci) {
    if (isnan(v)) return snprintf(buf, size, "nan");
    if (isinf(v)) return snprintf(buf, size, v > 0 ? "inf" : "-inf");
    return snprintf(buf, size, sci ? "%.4e" : "%.4f", (double)v);
}

static bool shown(const Printer *p, int axis, int i) {
    int n = p->t->shape[axis];
    return !p->elide || n <= 2 * PRINT_EDGE || i < PRINT_EDGE || i >= n - PRINT_EDGE;
}

static void print_axis(const Printer *p, int axis, size_t offset, size_t stride) {
    const Tensor *t = p->t;
    int n = t->shape[axis];
    size_t inner = stride / (size_t)n;
    fputc('[', p->f);
    bool skipped = false;
    for (int i = 0; i < n; i++) {
        if (!shown(p, axis, i)) {
            if (!skipped) {
                if (axis == t->ndim - 1) fprintf(p->f, "..., ");
                else fprintf(p->f, "...,\n%*s", p->indent + axis + 1, "");
                skipped = true;
            }
            continue;
        }
        if (axis == t->ndim - 1) {
            char buf[32];
            format_value(buf, sizeof buf, t->data[offset + (size_t)i], p->sci);
            fprintf(p->f, "%*s", p->width, buf);
        } else {
            print_axis(p, axis + 1, offset + (size_t)i * inner, inner);
        }
        if (i < n - 1) {
            if (axis == t->ndim - 1) fprintf(p->f, ", ");
            else {
                // one blank line per extra level, as PyTorch separates matrices
                fprintf(p->f, ",");
                for (int k = axis; k < t->ndim - 1; k++) fputc('\n', p->f);
                fprintf(p->f, "%*s", p->indent + axis + 1, "");
            }
        }
    }
    fputc(']', p->f);
}

void tensor_print(FILE *f, const char *name, const Tensor *t) {
    Printer p = {.f = f, .t = t, .elide = t->numel > PRINT_THRESHOLD};
    if (name) fprintf(f, "%s = ", name);
    p.indent = name ? (int)strlen(name) + 3 : 0;
    if (t->numel == 0) { fprintf(f, "[]\n"); return; }

    // One width for all numbers, chosen from the largest magnitude.
    float big = 0, small = INFINITY;
    for (size_t i = 0; i < t->numel; i++) {
        float a = fabsf(t->data[i]);
        if (!isfinite(a)) continue;
        if (a > big) big = a;
        if (a > 0 && a < small) small = a;
    }
    p.sci = big >= 1e8f || (small < 1e-4f && big / small > 1e3f);
    p.width = 0;
    for (size_t i = 0; i < t->numel; i++) {
        char buf[32];
        int w = format_value(buf, sizeof buf, t->data[i], p.sci);
        if (w > p.width) p.width = w;
    }
    if (t->ndim == 0) {
        char buf[32];
        format_value(buf, sizeof buf, t->data[0], p.sci);
        fprintf(f, "%s\n", buf);
        return;
    }
    print_axis(&p, 0, 0, t->numel);
    fputc('\n', f);
}

float tensor_max_abs_diff(const Tensor *a, const Tensor *b) {
    if (!tensor_same_shape(a, b)) return NAN;
    float worst = 0.0f;
    for (size_t i = 0; i < a->numel; i++) {
        if (a->data[i] == b->data[i]) continue; // also equal infinities (masked scores)
        float d = fabsf(a->data[i] - b->data[i]);
        if (isnan(d)) return NAN;
        if (d > worst) worst = d;
    }
    return worst;
}
