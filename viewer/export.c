/**
 * @file export.c
 * @brief export_npy(), export_safetensors() and export_default_path() (see export.h).
 */
#include "export.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "base/fileio.h"
#include "io/safetensors.h"

enum {
    NPY_PREFIX = 10,      // magic (6) + version (2) + header length (2)
    NPY_ALIGN = 64,       // numpy's ARRAY_ALIGN: the data starts at a multiple of this
    NPY_GROWTH_DIGITS = 21, // numpy's GROWTH_AXIS_MAX_DIGITS: room to grow the first axis
};

// A tensor with nothing to write (a copy the history dropped) is refused before
// any file is touched.
static VitStatus check_values(const Tensor *t, const char *path, VitError *err) {
    if (!t || (!t->data && t->numel > 0))
        return vit_fail(err, VIT_ERR_INPUT, "%s: not written: there are no values to export",
                        path);
    if (t->ndim < 0 || t->ndim > TENSOR_MAX_DIMS)
        return vit_fail(err, VIT_ERR_INPUT, "%s: not written: a tensor of %d dimensions", path,
                        t->ndim);
    return VIT_OK;
}

// The header after the length field: the dict, numpy's spare spaces, the
// padding to NPY_ALIGN and the '\n', as numpy.lib.format._write_array_header
// and _wrap_header build it. Returns its length H (10 + H is a multiple of 64).
static size_t npy_header(char *buf, size_t size, const Tensor *t) {
    char shape[TENSOR_MAX_DIMS * 12 + 8] = "(";
    size_t n = 1;
    for (int d = 0; d < t->ndim; d++)
        n += (size_t)snprintf(shape + n, sizeof shape - n, d ? ", %d" : "%d", t->shape[d]);
    snprintf(shape + n, sizeof shape - n, t->ndim == 1 ? ",)" : ")"); // Python's (5,) and ()
    int len = snprintf(buf, size, "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }",
                       shape);
    if (t->ndim > 0) { // numpy leaves room for the first size to grow to 21 digits
        char first[16];
        int digits = snprintf(first, sizeof first, "%d", t->shape[0]);
        for (int i = digits; i < NPY_GROWTH_DIGITS; i++) buf[len++] = ' ';
    }
    // at least one space, then '\n', so that the whole prefix ends on the alignment
    const int pad = NPY_ALIGN - (NPY_PREFIX + len + 1) % NPY_ALIGN; // 1 … 64, as numpy's
    for (int i = 0; i < pad; i++) buf[len++] = ' ';
    buf[len++] = '\n';
    return (size_t)len;
}

VitStatus export_npy(const Tensor *t, const char *path, VitError *err) {
    VitStatus s = check_values(t, path, err);
    if (s != VIT_OK) return s;
    // the dict is under 120 bytes with four 10-digit sizes; 21 + 64 more at most
    char header[256];
    const size_t len = npy_header(header, sizeof header, t);
    unsigned char prefix[NPY_PREFIX] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                                        (unsigned char)(len & 0xff), (unsigned char)(len >> 8)};
    OutFile o;
    s = outfile_open(&o, path, err);
    if (s != VIT_OK) return s;
    bool ok = fwrite(prefix, 1, sizeof prefix, o.f) == sizeof prefix &&
              fwrite(header, 1, len, o.f) == len;
    if (ok && t->numel > 0) ok = fwrite(t->data, sizeof(float), t->numel, o.f) == t->numel;
    return outfile_commit(&o, ok && !ferror(o.f), err);
}

VitStatus export_safetensors(const Tensor *t, const char *name, const char *path, VitError *err) {
    VitStatus s = check_values(t, path, err);
    if (s != VIT_OK) return s;
    StWriter w = {0};
    st_writer_meta(&w, "stage", name);
    st_writer_meta(&w, "producer", "vitview");
    st_writer_add(&w, name, t);
    s = st_writer_save(&w, path, err);
    st_writer_free(&w);
    return s;
}

static bool plain(char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
           c == '.' || c == '_' || c == '-';
}

// Appends @p s to buf[*n], each character outside [A-Za-z0-9._-] as '_', keeping room for the NUL.
static void append_plain(char *buf, size_t size, size_t *n, const char *s) {
    for (; *s && *n + 1 < size; s++) buf[(*n)++] = plain(*s) ? *s : '_';
}

void export_default_path(char *buf, size_t size, const char *stage, const char *ext) {
    if (size == 0) return;
    size_t n = 0;
    append_plain(buf, size, &n, "vitview-");
    append_plain(buf, size, &n, stage && *stage ? stage : "tensor");
    if (ext && *ext) {
        append_plain(buf, size, &n, ".");
        append_plain(buf, size, &n, ext);
    }
    buf[n] = '\0';
}
