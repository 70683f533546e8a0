/**
 * @file trace.c
 * @brief A recorder that keeps copies of traced tensors.
 */
#include "base/trace.h"
#include "base/util.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *trace_split_block(const char *name, int *block) {
    *block = -1;
    if (strncmp(name, "blocks.", 7) != 0) return name;
    // the index as vit_forward() writes it: digits, no sign, space or leading zero
    const char *digits = name + 7;
    if (!isdigit((unsigned char)digits[0]) || (digits[0] == '0' && isdigit((unsigned char)digits[1])))
        return NULL;
    char *end;
    long i = strtol(digits, &end, 10);
    if (*end != '.' || i > 1000000) return NULL;
    *block = (int)i;
    return end + 1;
}

Tracer trace_part(const Tracer *tr, char *prefix, size_t size, const char *part) {
    snprintf(prefix, size, "%s%s", tr && tr->prefix ? tr->prefix : "", part);
    return (Tracer){tr ? tr->fn : NULL, tr ? tr->user : NULL, prefix};
}

void trace_emit(const Tracer *tr, const char *name, const float *data, int ndim, ...) {
    if (!trace_active(tr)) return;
    int shape[TENSOR_MAX_DIMS] = {0};
    va_list ap;
    va_start(ap, ndim);
    for (int i = 0; i < ndim && i < TENSOR_MAX_DIMS; i++) shape[i] = va_arg(ap, int);
    va_end(ap);
    // a Tensor's data is not const, but the listener gets a const Tensor *: it only reads
    Tensor t = tensor_view_shape((float *)data, ndim, shape);
    char full[128];
    snprintf(full, sizeof full, "%s%s", tr->prefix ? tr->prefix : "", name);
    tr->fn(tr->user, full, &t);
}

void trace_record(void *recorder, const char *name, const Tensor *t) {
    TraceRecorder *r = recorder;
    if (r->count == r->cap) {
        r->cap = r->cap ? 2 * r->cap : 64;
        r->entries = vit_realloc(r->entries, (size_t)r->cap * sizeof *r->entries);
    }
    r->entries[r->count].name = vit_strdup(name);
    r->entries[r->count].t = tensor_clone(t);
    r->count++;
}

const Tensor *trace_find(const TraceRecorder *r, const char *name) {
    for (int i = 0; i < r->count; i++)
        if (strcmp(r->entries[i].name, name) == 0) return &r->entries[i].t;
    return NULL;
}

void trace_recorder_free(TraceRecorder *r) {
    for (int i = 0; i < r->count; i++) {
        free(r->entries[i].name);
        tensor_free(&r->entries[i].t);
    }
    free(r->entries);
    memset(r, 0, sizeof *r);
}
