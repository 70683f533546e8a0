/**
 * @file record.c
 * @brief Writing a test's checks to a descriptor, and reading them back with
 *        every length checked (record.h).
 */
#include "record.h"

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/util.h"

static int record_fd = -1;

int record_start(int fd) {
    const int before = record_fd;
    record_fd = fd;
    return before;
}
bool record_on(void) { return record_fd >= 0; }

/* ----------------------------------------------------------------- writing */

// An entry is put together here, then written in one go.
typedef struct {
    char *b;
    size_t len, cap;
} Buf;

static void put(Buf *b, const void *p, size_t n) {
    if (b->len + n > b->cap) {
        b->cap = (b->len + n) * 2 + 256;
        b->b = vit_realloc(b->b, b->cap);
    }
    memcpy(b->b + b->len, p, n);
    b->len += n;
}

static void put_u8(Buf *b, uint8_t v) { put(b, &v, 1); }

static void put_text(Buf *b, const char *s) {
    size_t n = s ? strlen(s) : 0;
    if (n > RECORD_TEXT_MAX) n = RECORD_TEXT_MAX;
    uint16_t len = (uint16_t)n;
    put(b, &len, sizeof len);
    put(b, s ? s : "", n);
}

static void put_head(Buf *b, RecordKind kind, unsigned line, const char *file, const char *text) {
    put_u8(b, (uint8_t)kind);
    uint32_t l = line;
    put(b, &l, sizeof l);
    put_text(b, file);
    put_text(b, text);
}

static void put_tensor(Buf *b, const Tensor *t) {
    put_u8(b, (uint8_t)t->ndim);
    for (int i = 0; i < t->ndim; i++) {
        int32_t s = t->shape[i];
        put(b, &s, sizeof s);
    }
    if (t->numel && t->data) put(b, t->data, t->numel * sizeof(float));
}

// All of it, or the process ends trying: a record cut short is judged as damaged.
static void send(Buf *b) {
    for (size_t done = 0; done < b->len;) {
        ssize_t n = write(record_fd, b->b + done, b->len - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += (size_t)n;
    }
    free(b->b);
}

void record_tensor(const char *label, const Tensor *actual, const Tensor *expected, float atol,
                   float rtol) {
    if (record_fd < 0) return;
    Buf b = {0};
    put_head(&b, RECORD_TENSOR, 0, "", label);
    put(&b, &atol, sizeof atol);
    put(&b, &rtol, sizeof rtol);
    put_tensor(&b, actual);
    put_tensor(&b, expected);
    send(&b);
}

static void record_assertion(RecordKind kind, bool value, unsigned line, const char *file,
                             const char *condition) {
    if (record_fd < 0) return;
    Buf b = {0};
    put_head(&b, kind, line, file, condition);
    put_u8(&b, value);
    send(&b);
}

void record_bool(bool value, unsigned line, const char *file, const char *condition) {
    record_assertion(RECORD_BOOL, value, line, file, condition);
}

void record_sum(bool value, unsigned line, const char *file, const char *condition) {
    record_assertion(RECORD_SUM, value, line, file, condition);
}

void record_number(bool value, double actual, double expected, double tolerance, unsigned line,
                   const char *file, const char *condition) {
    if (record_fd < 0) return;
    Buf b = {0};
    put_head(&b, RECORD_NUMBER, line, file, condition);
    put_u8(&b, value);
    put(&b, &actual, sizeof actual);
    put(&b, &expected, sizeof expected);
    put(&b, &tolerance, sizeof tolerance);
    send(&b);
}

void record_end(void) {
    if (record_fd < 0) return;
    Buf b = {0};
    put_head(&b, RECORD_END, 0, "", "");
    send(&b);
}

/* ----------------------------------------------------------------- reading */

// A cursor over the bytes, which never reads past their end.
typedef struct {
    const char *p;
    size_t left;
} Cursor;

static bool take(Cursor *c, void *out, size_t n) {
    if (c->left < n) return false;
    memcpy(out, c->p, n);
    c->p += n;
    c->left -= n;
    return true;
}

// A string into *strings (when filling), counted in *chars.
static bool take_text(Cursor *c, const char **out, char *strings, size_t *chars) {
    uint16_t len;
    if (!take(c, &len, sizeof len) || len > RECORD_TEXT_MAX || c->left < len) return false;
    if (strings) {
        memcpy(strings + *chars, c->p, len);
        strings[*chars + len] = '\0';
        *out = strings + *chars;
    }
    *chars += (size_t)len + 1;
    c->p += len;
    c->left -= len;
    return true;
}

// A tensor's shape and data (copied into *values when filling, counted in *floats).
static bool take_tensor(Cursor *c, Tensor *t, float *values, size_t *floats) {
    uint8_t ndim;
    if (!take(c, &ndim, 1) || ndim > TENSOR_MAX_DIMS) return false;
    Tensor v = {.ndim = ndim, .numel = 1};
    for (int i = 0; i < ndim; i++) {
        int32_t s;
        if (!take(c, &s, sizeof s) || s < 0) return false;
        v.shape[i] = s;
        if (s && v.numel > SIZE_MAX / sizeof(float) / (size_t)s) return false;
        v.numel *= (size_t)s;
    }
    const size_t bytes = v.numel * sizeof(float);
    if (c->left < bytes) return false;
    if (values) {
        v.data = values + *floats;
        memcpy(v.data, c->p, bytes);
        *t = v;
    }
    *floats += v.numel;
    c->p += bytes;
    c->left -= bytes;
    return true;
}

// One pass over the record: counts (fill false) or fills r (fill true).
static bool parse(Record *r, const char *data, size_t size, bool fill, int *entries,
                  size_t *chars, size_t *floats, char *why, size_t why_size) {
    Cursor c = {data, size};
    *entries = 0, *chars = 0, *floats = 0;
    r->ended = r->damaged = false;
    while (c.left > 0) {
        if (r->ended) {
            snprintf(why, why_size, "the record goes on after its end mark");
            r->ended = false;
            r->damaged = true;
            return false;
        }
        RecordEntry e = {0};
        uint8_t kind = 0;
        uint32_t line = 0;
        bool ok = take(&c, &kind, 1) && take(&c, &line, sizeof line) &&
                  take_text(&c, &e.file, fill ? r->strings : NULL, chars) &&
                  take_text(&c, &e.text, fill ? r->strings : NULL, chars);
        e.kind = (RecordKind)kind;
        e.line = line;
        if (ok && (kind == RECORD_BOOL || kind == RECORD_SUM)) {
            uint8_t v;
            ok = take(&c, &v, 1) && v <= 1;
            e.value = v;
        } else if (ok && kind == RECORD_NUMBER) {
            uint8_t v;
            ok = take(&c, &v, 1) && v <= 1 && take(&c, &e.actual_number, sizeof(double)) &&
                 take(&c, &e.expected_number, sizeof(double)) &&
                 take(&c, &e.tolerance, sizeof(double));
            e.value = v;
        } else if (ok && kind == RECORD_TENSOR) {
            ok = take(&c, &e.atol, sizeof e.atol) && take(&c, &e.rtol, sizeof e.rtol) &&
                 take_tensor(&c, &e.actual, fill ? r->values : NULL, floats) &&
                 take_tensor(&c, &e.expected, fill ? r->values : NULL, floats);
        } else if (ok && kind == RECORD_END) {
            r->ended = true;
        } else {
            ok = false;
        }
        if (!ok) {
            snprintf(why, why_size, "entry %d of the record is damaged (%zu bytes in)",
                     *entries + 1, size - c.left);
            r->damaged = true;
            return false;
        }
        if (fill && kind != RECORD_END) r->entries[*entries] = e;
        if (kind != RECORD_END) (*entries)++;
    }
    if (!r->ended) snprintf(why, why_size, "the record has no end mark: the test never returned");
    return r->ended;
}

bool record_read(Record *r, const char *data, size_t size, char *why, size_t why_size) {
    memset(r, 0, sizeof *r);
    int entries;
    size_t chars, floats;
    // first count, then fill: the damaged part is never reached twice differently
    bool whole = parse(r, data, size, false, &entries, &chars, &floats, why, why_size);
    r->entries = vit_calloc((size_t)entries + 1, sizeof *r->entries);
    r->strings = vit_malloc(chars + 1);
    r->values = vit_malloc(floats * sizeof(float) + sizeof(float));
    char ignored[8];
    const bool damaged = r->damaged;
    parse(r, data, size, true, &r->count, &chars, &floats, ignored, sizeof ignored);
    r->count = entries;
    r->ended = whole;
    r->damaged = damaged;
    return whole;
}

void record_free(Record *r) {
    free(r->entries);
    free(r->strings);
    free(r->values);
    memset(r, 0, sizeof *r);
}
