/**
 * @file idx_format.c
 * @brief Reading IDX images and labels through zlib, every header field checked
 *        before memory is taken for it (see idx_format.h).
 */
#include "io/idx_format.h"
#include "base/fileio.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

// What one kind of IDX file is, for the checks and the messages.
typedef struct {
    uint32_t magic;    // IDX_MAGIC_IMAGES or IDX_MAGIC_LABELS
    int ndim;          // 3 or 1
    const char *what;  // for file_open_regular: "an IDX images file"
    const char *noun;  // "images"
} IdxKind;

static const IdxKind IMAGES = {IDX_MAGIC_IMAGES, 3, "an IDX images file", "images"};
static const IdxKind LABELS = {IDX_MAGIC_LABELS, 1, "an IDX labels file", "labels"};

// An open IDX file: zlib's handle and the file's name, escaped for messages.
typedef struct {
    gzFile gz;
    char name[512];
} IdxFile;

static uint32_t load_be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static VitStatus idx_open(IdxFile *f, const char *path, const IdxKind *kind, VitError *err) {
    f->gz = NULL;
    vit_escape(f->name, sizeof f->name, path);
    int fd;
    size_t size;
    // a regular file only: gzopen() itself would wait for ever on a FIFO
    VitStatus s = file_open_regular(&fd, &size, path, kind->what, err);
    if (s != VIT_OK) return s;
    if (size == 0) {
        close(fd);
        return vit_fail(err, VIT_ERR_INPUT, "%s: file is empty, not %s", f->name, kind->what);
    }
    f->gz = gzdopen(fd, "rb"); // reads gzip, and passes a plain file through as it is
    if (!f->gz) {
        close(fd);
        return vit_fail(err, VIT_ERR_INPUT, "%s: cannot read: out of memory", f->name);
    }
    gzbuffer(f->gz, 1 << 17); // before the first read: larger reads, fewer system calls
    return VIT_OK;
}

// zlib's message for the last failure, without the "<fd:3>: " it puts first.
static VitStatus zlib_failure(const IdxFile *f, VitError *err) {
    int code;
    const char *msg = gzerror(f->gz, &code);
    if (code == Z_ERRNO)
        return vit_fail(err, VIT_ERR_INPUT, "%s: read failed: %s", f->name, strerror(errno));
    if (msg && msg[0] == '<' && strstr(msg, ": ")) msg = strstr(msg, ": ") + 2;
    return vit_fail(err, VIT_ERR_INPUT, "%s: corrupt gzip data (zlib: %s)", f->name,
                    msg && *msg ? msg : "unknown error");
}

// Read up to n bytes; *got says how many came before the end of the data.
// A stream cut short (zlib's "unexpected end of file") is a short read here:
// the caller says how much was missing. Any other zlib error is a failure.
static VitStatus idx_read(IdxFile *f, void *buf, size_t n, size_t *got, VitError *err) {
    *got = 0;
    while (*got < n) {
        size_t left = n - *got;
        unsigned chunk = left > (1u << 30) ? (1u << 30) : (unsigned)left;
        int r = gzread(f->gz, (unsigned char *)buf + *got, chunk);
        if (r < 0) return zlib_failure(f, err);
        if (r == 0) break;
        *got += (size_t)r;
    }
    if (*got < n) {
        int code;
        gzerror(f->gz, &code);
        if (code != Z_OK && code != Z_BUF_ERROR) return zlib_failure(f, err);
    }
    return VIT_OK;
}

static const char *type_name(int type) {
    switch (type) {
    case 0x08: return "unsigned bytes";
    case 0x09: return "signed bytes";
    case 0x0B: return "16-bit integers";
    case 0x0C: return "32-bit integers";
    case 0x0D: return "floats";
    case 0x0E: return "doubles";
    default: return "an unknown type";
    }
}

// The header: the magic number, then kind->ndim sizes into dims.
static VitStatus read_header(IdxFile *f, const IdxKind *kind, uint32_t *dims, VitError *err) {
    int header = 4 + 4 * kind->ndim;
    unsigned char h[16];
    size_t got;
    VitStatus s = idx_read(f, h, 4, &got, err);
    if (s != VIT_OK) return s;
    if (got < 4)
        return vit_fail(err, VIT_ERR_INPUT, "%s: ends inside the IDX header (%zu of %d bytes)",
                        f->name, got, header);
    uint32_t magic = load_be32(h);
    if (h[0] != 0 || h[1] != 0)
        return vit_fail(err, VIT_ERR_INPUT, "%s: not an IDX file (it starts 0x%08x; IDX %s start "
                        "0x%08x)", f->name, magic, kind->noun, kind->magic);
    if (magic != kind->magic) {
        const IdxKind *other = kind == &IMAGES ? &LABELS : &IMAGES;
        if (magic == other->magic)
            return vit_fail(err, VIT_ERR_INPUT, "%s: is %s file, not %s (magic 0x%08x; %s have "
                            "0x%08x)", f->name, other == &LABELS ? "a labels" : "an images",
                            kind->noun, magic, kind->noun, kind->magic);
        return vit_fail(err, VIT_ERR_INPUT, "%s: IDX data of %s in %d dimensions (magic 0x%08x), "
                        "not %s: unsigned bytes in %d (0x%08x)", f->name, type_name(h[2]), h[3],
                        magic, kind->noun, kind->ndim, kind->magic);
    }
    s = idx_read(f, h + 4, (size_t)header - 4, &got, err);
    if (s != VIT_OK) return s;
    if (got < (size_t)header - 4)
        return vit_fail(err, VIT_ERR_INPUT, "%s: ends inside the IDX header (%zu of %d bytes)",
                        f->name, 4 + got, header);
    for (int i = 0; i < kind->ndim; i++) dims[i] = load_be32(h + 4 + 4 * i);
    return VIT_OK;
}

// The sizes in the header, before any memory is taken: rows and columns
// (images only: dims is count, rows, cols), then the count (dims[0]).
static VitStatus check_sizes(const IdxFile *f, const IdxKind *kind, const uint32_t *dims,
                             VitError *err) {
    if (kind->ndim == 3 && (dims[1] < 1 || dims[1] > IDX_MAX_SIDE || dims[2] < 1 ||
                            dims[2] > IDX_MAX_SIDE))
        return vit_fail(err, VIT_ERR_INPUT, "%s: images of %u×%u pixels; rows and columns must "
                        "be 1 to %d", f->name, dims[1], dims[2], IDX_MAX_SIDE);
    if (dims[0] < 1 || dims[0] > IDX_MAX_COUNT) {
        char n[VIT_NUM_BUF], most[VIT_NUM_BUF];
        return vit_fail(err, VIT_ERR_INPUT, "%s: %s %s; a file may hold 1 to %s", f->name,
                        vit_thousands(n, dims[0]), kind->noun, vit_thousands(most, IDX_MAX_COUNT));
    }
    return VIT_OK;
}

// How many items to read: all the file holds (in_file) when whole, else the
// first count, which must be 1 to in_file.
static VitStatus items_to_read(size_t *n, const IdxFile *f, const IdxKind *kind, uint32_t in_file,
                               bool whole, int count, VitError *err) {
    *n = 0;
    if (whole) {
        *n = in_file;
        return VIT_OK;
    }
    char asked[VIT_NUM_BUF], holds[VIT_NUM_BUF];
    if (count < 1)
        return vit_fail(err, VIT_ERR_INPUT, "%s: asked for the first %d %s; ask for 1 or more",
                        f->name, count, kind->noun);
    if ((uint32_t)count > in_file)
        return vit_fail(err, VIT_ERR_INPUT, "%s: holds %s %s, fewer than the %s asked for",
                        f->name, vit_thousands(holds, in_file), kind->noun,
                        vit_thousands(asked, count));
    *n = (size_t)count;
    return VIT_OK;
}

// After the header: the first n of the file's in_file items, item_bytes each.
// When n is all of them, nothing may follow, and reading on to the end of the
// stream lets zlib check the gzip trailer (the CRC-32 and the length); a
// prefix stops before both, so neither is checked.
static VitStatus read_data(IdxFile *f, const IdxKind *kind, unsigned char **data, size_t n,
                           size_t in_file, size_t item_bytes, const char *shape, VitError *err) {
    *data = NULL;
    size_t total;
    char n_s[VIT_NUM_BUF], in_file_s[VIT_NUM_BUF], what[sizeof f->name + 96];
    vit_thousands(n_s, (int64_t)n);
    vit_thousands(in_file_s, (int64_t)in_file);
    if (!vit_checked_mul(&total, n, item_bytes))
        return vit_fail(err, VIT_ERR_INPUT, "%s: %s %s%s are too large to address", f->name, n_s,
                        kind->noun, shape);
    snprintf(what, sizeof what, "%s: %s %s%s", f->name, n_s, kind->noun, shape);
    VitStatus s = vit_check_memory((double)total, what, err);
    if (s != VIT_OK) return s;
    unsigned char *buf = vit_try_malloc_aligned(total);
    if (!buf) {
        char b[VIT_NUM_BUF];
        return vit_fail(err, VIT_ERR_INPUT, "%s: cannot take %s of memory for its %s", f->name,
                        vit_bytes(b, (double)total), kind->noun);
    }
    size_t got;
    s = idx_read(f, buf, total, &got, err);
    if (s == VIT_OK && got < total) {
        char got_s[VIT_NUM_BUF];
        s = vit_fail(err, VIT_ERR_INPUT, "%s: ends after %s of %s %s", f->name,
                     vit_thousands(got_s, (int64_t)(got / item_bytes)), in_file_s, kind->noun);
    }
    if (s == VIT_OK && n == in_file) { // one byte more: there must be none
        unsigned char extra;
        int r = gzread(f->gz, &extra, 1);
        int code = Z_OK;
        if (r == 0) gzerror(f->gz, &code);
        if (r < 0 || code != Z_OK) s = zlib_failure(f, err); // e.g. the gzip trailer's check
        else if (r > 0)
            s = vit_fail(err, VIT_ERR_INPUT, "%s: more data follows its %s %s (the header says "
                         "there are %s)", f->name, n_s, kind->noun, n_s);
    }
    if (s != VIT_OK) {
        free(buf);
        return s;
    }
    *data = buf;
    return VIT_OK;
}

// One IDX file of the given kind: the header checked, then every item (whole)
// or the first count. dims gets the header's sizes, dims[0] the count read.
static VitStatus read_idx(const IdxKind *kind, const char *path, bool whole, int count,
                          uint32_t *dims, unsigned char **data, VitError *err) {
    *data = NULL;
    IdxFile f;
    VitStatus s = idx_open(&f, path, kind, err);
    if (s != VIT_OK) return s;
    s = read_header(&f, kind, dims, err);
    if (s == VIT_OK) s = check_sizes(&f, kind, dims, err);
    size_t n = 0;
    if (s == VIT_OK) s = items_to_read(&n, &f, kind, dims[0], whole, count, err);
    if (s == VIT_OK) {
        size_t item_bytes = kind->ndim == 3 ? (size_t)dims[1] * dims[2] : 1;
        char shape[64] = "";
        if (kind->ndim == 3) snprintf(shape, sizeof shape, " of %u×%u", dims[1], dims[2]);
        s = read_data(&f, kind, data, n, dims[0], item_bytes, shape, err);
    }
    gzclose(f.gz);
    dims[0] = (uint32_t)n;
    return s;
}

static VitStatus read_images(IdxImages *out, const char *path, bool whole, int count,
                             VitError *err) {
    memset(out, 0, sizeof *out);
    uint32_t dims[3];
    unsigned char *pixels;
    VitStatus s = read_idx(&IMAGES, path, whole, count, dims, &pixels, err);
    if (s != VIT_OK) return s;
    out->count = (int)dims[0];
    out->rows = (int)dims[1];
    out->cols = (int)dims[2];
    out->pixels = pixels;
    return VIT_OK;
}

static VitStatus read_labels(IdxLabels *out, const char *path, bool whole, int count,
                             VitError *err) {
    memset(out, 0, sizeof *out);
    uint32_t n;
    unsigned char *labels;
    VitStatus s = read_idx(&LABELS, path, whole, count, &n, &labels, err);
    if (s != VIT_OK) return s;
    out->count = (int)n;
    out->labels = labels;
    return VIT_OK;
}

VitStatus idx_read_images(IdxImages *out, const char *path, VitError *err) {
    return read_images(out, path, true, 0, err);
}

VitStatus idx_read_images_first(IdxImages *out, const char *path, int count, VitError *err) {
    return read_images(out, path, false, count, err);
}

VitStatus idx_read_labels(IdxLabels *out, const char *path, VitError *err) {
    return read_labels(out, path, true, 0, err);
}

VitStatus idx_read_labels_first(IdxLabels *out, const char *path, int count, VitError *err) {
    return read_labels(out, path, false, count, err);
}

void idx_images_free(IdxImages *x) {
    if (!x) return;
    free(x->pixels);
    memset(x, 0, sizeof *x);
}

void idx_labels_free(IdxLabels *x) {
    if (!x) return;
    free(x->labels);
    memset(x, 0, sizeof *x);
}
