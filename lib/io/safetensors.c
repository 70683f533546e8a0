/**
 * @file safetensors.c
 * @brief Validating safetensors reader (mmap + cJSON) and atomic writer.
 */
#include "io/safetensors.h"
#include "base/fileio.h"

#include <cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/** Largest header we accept: real checkpoints have a few hundred kB. */
#define ST_MAX_HEADER (100u << 20)

static const struct {
    const char *name;
    size_t size;
} dtype_table[] = {
    [ST_F32] = {"F32", 4},  [ST_F16] = {"F16", 2}, [ST_BF16] = {"BF16", 2},
    [ST_F64] = {"F64", 8},  [ST_I64] = {"I64", 8}, [ST_I32] = {"I32", 4},
    [ST_I16] = {"I16", 2},  [ST_I8] = {"I8", 1},   [ST_U8] = {"U8", 1},
    [ST_BOOL] = {"BOOL", 1},
};
enum { DTYPE_COUNT = sizeof dtype_table / sizeof dtype_table[0] };

const char *st_dtype_name(StDtype dtype) { return dtype_table[dtype].name; }
size_t st_dtype_size(StDtype dtype) { return dtype_table[dtype].size; }

static int dtype_from_name(const char *s) {
    for (int i = 0; i < DTYPE_COUNT; i++)
        if (strcmp(s, dtype_table[i].name) == 0) return i;
    return -1;
}

/* ------------------------------------------------------ half conversions */

float st_bf16_to_f32(uint16_t h) {
    uint32_t bits = (uint32_t)h << 16;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

uint16_t st_f32_to_bf16(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    if ((bits & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((bits >> 16) | 0x40); // quiet NaN
    bits += 0x7fffu + ((bits >> 16) & 1u); // round to nearest, ties to even
    return (uint16_t)(bits >> 16);
}

float st_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h >> 15) << 31;
    int exp = (h >> 10) & 0x1f;
    uint32_t mant = h & 0x3ffu;
    float f;
    if (exp == 0) { // zero or subnormal: mant · 2^-24
        f = ldexpf((float)mant, -24);
        return sign ? -f : f;
    }
    uint32_t bits;
    if (exp == 31) bits = sign | 0x7f800000u | (mant << 13); // inf or NaN
    else bits = sign | ((uint32_t)(exp - 15 + 127) << 23) | (mant << 13);
    memcpy(&f, &bits, sizeof f);
    return f;
}

uint16_t st_f32_to_f16(float f) {
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    uint16_t sign = (uint16_t)((bits >> 16) & 0x8000u);
    float a = fabsf(f);
    if (isnan(f)) return sign | 0x7e00u;
    if (a >= 65520.0f) return sign | 0x7c00u; // rounds to infinity
    if (a < 6.103515625e-05f) {               // subnormal half: multiples of 2^-24
        float q = nearbyintf(a * 16777216.0f); // current rounding mode: nearest even
        return sign | (uint16_t)q;
    }
    uint32_t abits = bits & 0x7fffffffu;
    uint32_t exp = (abits >> 23) - 127 + 15;
    uint32_t mant = abits & 0x7fffffu;
    uint32_t half = (exp << 10) | (mant >> 13);
    uint32_t rest = mant & 0x1fffu; // the 13 bits dropped
    if (rest > 0x1000u || (rest == 0x1000u && (half & 1u))) half++;
    return sign | (uint16_t)half;
}

/* --------------------------------------------------------------- reading */

static void st_free_contents(SafeTensors *st) {
    for (int i = 0; i < st->count; i++) free(st->tensors[i].name);
    free(st->tensors);
    for (int i = 0; i < st->meta_count; i++) {
        free(st->meta_keys[i]);
        free(st->meta_values[i]);
    }
    free(st->meta_keys);
    free(st->meta_values);
    free(st->by_name);
    free(st->meta_by_key);
}

void st_close(SafeTensors *st) {
    st_free_contents(st);
    if (st->map) file_unmap(st->map, st->size);
    free(st->label);
    memset(st, 0, sizeof *st);
}

// A JSON number that is a whole, non-negative value below 2^53 (exact in a double).
static bool json_size(const cJSON *item, uint64_t *out) {
    if (!cJSON_IsNumber(item)) return false;
    double v = item->valuedouble;
    if (!(v >= 0 && v < 9007199254740992.0) || v != floor(v)) return false;
    *out = (uint64_t)v;
    return true;
}

static VitStatus parse_metadata(SafeTensors *st, const cJSON *meta, VitError *err) {
    if (!cJSON_IsObject(meta))
        return vit_fail(err, VIT_ERR_INPUT, "%s: __metadata__ is not a JSON object", st->label);
    int n = cJSON_GetArraySize(meta);
    st->meta_keys = vit_calloc((size_t)n, sizeof(char *));
    st->meta_values = vit_calloc((size_t)n, sizeof(char *));
    for (const cJSON *kv = meta->child; kv; kv = kv->next) {
        if (!cJSON_IsString(kv))
            return vit_fail(err, VIT_ERR_INPUT, "%s: __metadata__ value of '%s' is not a string",
                            st->label, kv->string);
        st->meta_keys[st->meta_count] = vit_strdup(kv->string);
        st->meta_values[st->meta_count] = vit_strdup(kv->valuestring);
        st->meta_count++;
    }
    return VIT_OK;
}

static VitStatus parse_entry(SafeTensors *st, const cJSON *item, size_t data_size,
                             StTensor *e, VitError *err) {
    const char *name = item->string;
    if (!cJSON_IsObject(item))
        return vit_fail(err, VIT_ERR_INPUT, "%s: entry '%s' is not a JSON object", st->label, name);
    const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(item, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(item, "shape");
    const cJSON *offs = cJSON_GetObjectItemCaseSensitive(item, "data_offsets");
    if (!cJSON_IsString(dtype) || !cJSON_IsArray(shape) || !cJSON_IsArray(offs))
        return vit_fail(err, VIT_ERR_INPUT,
                        "%s: tensor '%s' needs \"dtype\", \"shape\" and \"data_offsets\"",
                        st->label, name);
    int dt = dtype_from_name(dtype->valuestring);
    if (dt < 0)
        return vit_fail(err, VIT_ERR_INPUT, "%s: tensor '%s' has unknown dtype '%s'", st->label,
                        name, dtype->valuestring);
    e->dtype = (StDtype)dt;

    int ndim = cJSON_GetArraySize(shape);
    if (ndim > ST_MAX_DIMS)
        return vit_fail(err, VIT_ERR_INPUT, "%s: tensor '%s' has %d dimensions (at most %d)",
                        st->label, name, ndim, ST_MAX_DIMS);
    e->ndim = ndim;
    size_t numel = 1;
    int k = 0;
    for (const cJSON *d = shape->child; d; d = d->next, k++) {
        uint64_t v;
        if (!json_size(d, &v) || v > INT32_MAX)
            return vit_fail(err, VIT_ERR_INPUT, "%s: tensor '%s' has an invalid size in its shape",
                            st->label, name);
        e->shape[k] = (int64_t)v;
        if (!vit_checked_mul(&numel, numel, (size_t)v))
            return vit_fail(err, VIT_ERR_INPUT, "%s: tensor '%s' shape overflows", st->label, name);
    }
    e->numel = numel;

    uint64_t begin, end;
    if (cJSON_GetArraySize(offs) != 2 || !json_size(offs->child, &begin) ||
        !json_size(offs->child->next, &end) || begin > end)
        return vit_fail(err, VIT_ERR_INPUT,
                        "%s: tensor '%s' data_offsets must be two sizes [begin, end], begin <= end",
                        st->label, name);
    if (end > data_size)
        return vit_fail(err, VIT_ERR_INPUT,
                        "%s: tensor '%s' data_offsets [%llu, %llu] run past the data section "
                        "(%zu bytes): the file is truncated or corrupt",
                        st->label, name, (unsigned long long)begin, (unsigned long long)end,
                        data_size);
    size_t nbytes;
    if (!vit_checked_mul(&nbytes, numel, st_dtype_size(e->dtype)) || nbytes != end - begin)
        return vit_fail(err, VIT_ERR_INPUT,
                        "%s: tensor '%s' holds %llu bytes but its shape and dtype %s need %zu",
                        st->label, name, (unsigned long long)(end - begin),
                        st_dtype_name(e->dtype), nbytes);
    e->begin = (size_t)begin;
    e->end = (size_t)end;
    e->name = vit_strdup(name);
    return VIT_OK;
}

static int by_begin(const void *a, const void *b) {
    const StTensor *x = *(const StTensor *const *)a, *y = *(const StTensor *const *)b;
    return (x->begin > y->begin) - (x->begin < y->begin);
}

// No two tensors share bytes (empty tensors are allowed anywhere).
static VitStatus check_overlaps(SafeTensors *st, VitError *err) {
    const StTensor **order = vit_malloc((size_t)st->count * sizeof *order + 1);
    for (int i = 0; i < st->count; i++) order[i] = &st->tensors[i];
    qsort(order, (size_t)st->count, sizeof *order, by_begin);
    VitStatus status = VIT_OK;
    const StTensor *prev = NULL;
    for (int i = 0; i < st->count; i++) {
        if (order[i]->begin == order[i]->end) continue;
        if (prev && order[i]->begin < prev->end) {
            status = vit_fail(err, VIT_ERR_INPUT, "%s: tensors '%s' and '%s' overlap", st->label,
                              prev->name, order[i]->name);
            break;
        }
        prev = order[i];
    }
    free(order);
    return status;
}

/*
 * Name lookup. The names are sorted once (n log n) and found by binary
 * search; a sorted list also shows a duplicate as two equal neighbours. A
 * linear search per entry would make parsing quadratic: 100,000 entries
 * would take half a minute, a header of tens of megabytes hours.
 */
/** A name and where it is, sorted together (qsort has no user pointer to reach the names). */
typedef struct {
    const char *name;
    int index;
} NamedIndex;

static int by_name_order(const void *a, const void *b) {
    return strcmp(((const NamedIndex *)a)->name, ((const NamedIndex *)b)->name);
}

// Indices 0 … n−1 ordered by names[i]; *duplicate gets a name that occurs twice, or NULL.
static int *sorted_index(const char *const *names, int n, const char **duplicate) {
    NamedIndex *pairs = vit_malloc(sizeof *pairs * (size_t)(n > 0 ? n : 1));
    for (int i = 0; i < n; i++) pairs[i] = (NamedIndex){names[i], i};
    qsort(pairs, (size_t)n, sizeof *pairs, by_name_order);
    int *order = vit_malloc(sizeof(int) * (size_t)(n > 0 ? n : 1));
    *duplicate = NULL;
    for (int i = 0; i < n; i++) {
        order[i] = pairs[i].index;
        if (i > 0 && !*duplicate && strcmp(pairs[i - 1].name, pairs[i].name) == 0)
            *duplicate = pairs[i].name;
    }
    free(pairs);
    return order;
}

// The position of `key` among names sorted by `order`, or -1.
static int find_sorted(const char *const *names, const int *order, int n, const char *key) {
    int lo = 0, hi = n - 1;
    while (lo <= hi) {
        int mid = lo + (hi - lo) / 2, c = strcmp(names[order[mid]], key);
        if (c == 0) return order[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return -1;
}

static VitStatus build_indexes(SafeTensors *st, VitError *err) {
    const char **names = vit_malloc(sizeof(char *) * (size_t)(st->count + 1));
    for (int i = 0; i < st->count; i++) names[i] = st->tensors[i].name;
    const char *dup;
    st->by_name = sorted_index(names, st->count, &dup);
    free(names);
    if (dup) return vit_fail(err, VIT_ERR_INPUT, "%s: tensor '%s' appears twice", st->label, dup);
    st->meta_by_key = sorted_index((const char *const *)st->meta_keys, st->meta_count, &dup);
    if (dup)
        return vit_fail(err, VIT_ERR_INPUT, "%s: __metadata__ key '%s' appears twice", st->label,
                        dup);
    return VIT_OK;
}

static VitStatus parse_header(SafeTensors *st, const cJSON *root, size_t data_size,
                              VitError *err) {
    if (!cJSON_IsObject(root))
        return vit_fail(err, VIT_ERR_INPUT, "%s: header is not a JSON object", st->label);
    int n = cJSON_GetArraySize(root);
    st->tensors = vit_calloc((size_t)n, sizeof *st->tensors);
    for (const cJSON *item = root->child; item; item = item->next) {
        if (!item->string)
            return vit_fail(err, VIT_ERR_INPUT, "%s: header entry without a name", st->label);
        bool is_meta = strcmp(item->string, "__metadata__") == 0;
        if (is_meta && st->meta_keys)
            return vit_fail(err, VIT_ERR_INPUT, "%s: __metadata__ appears twice", st->label);
        VitStatus s = is_meta ? parse_metadata(st, item, err)
                              : parse_entry(st, item, data_size, &st->tensors[st->count], err);
        if (s != VIT_OK) return s;
        if (!is_meta) st->count++;
    }
    VitStatus s = build_indexes(st, err);
    return s != VIT_OK ? s : check_overlaps(st, err);
}

VitStatus st_parse(SafeTensors *st, const void *data, size_t size, const char *label,
                   VitError *err) {
    memset(st, 0, sizeof *st);
    st->label = vit_strdup(label);
    st->buf = data;
    st->size = size;
    if (size < 8)
        return vit_fail(err, VIT_ERR_INPUT,
                        "%s: %zu bytes is too short for a safetensors file (needs an 8-byte "
                        "header length)", label, size);
    uint64_t header_len = 0;
    for (int i = 7; i >= 0; i--) header_len = (header_len << 8) | st->buf[i]; // little-endian
    if (header_len > size - 8)
        return vit_fail(err, VIT_ERR_INPUT,
                        "%s: header length %llu exceeds the %zu bytes that follow it: not a "
                        "safetensors file, or truncated",
                        label, (unsigned long long)header_len, size - 8);
    if (header_len > ST_MAX_HEADER)
        return vit_fail(err, VIT_ERR_INPUT, "%s: header of %llu bytes is larger than %u",
                        label, (unsigned long long)header_len, ST_MAX_HEADER);
    // cJSON's tree takes about ten times the text, our table of entries a little more
    char what[sizeof err->msg], bytes[VIT_NUM_BUF];
    snprintf(what, sizeof what, "%s: a header of %s", label, vit_bytes(bytes, (double)header_len));
    VitStatus status = vit_check_memory(16.0 * (double)header_len, what, err);
    if (status != VIT_OK) return status;
    cJSON *root = cJSON_ParseWithLength((const char *)st->buf + 8, (size_t)header_len);
    if (!root)
        return vit_fail(err, VIT_ERR_INPUT, "%s: header is not valid JSON", label);
    size_t data_offset = 8 + (size_t)header_len;
    status = parse_header(st, root, size - data_offset, err);
    cJSON_Delete(root);
    if (status != VIT_OK) { // empty, as promised: no half-parsed table to look things up in
        st_free_contents(st);
        st->tensors = NULL, st->count = 0, st->by_name = NULL;
        st->meta_keys = st->meta_values = NULL, st->meta_count = 0, st->meta_by_key = NULL;
        return status;
    }
    for (int i = 0; i < st->count; i++)
        st->tensors[i].bytes = st->buf + data_offset + st->tensors[i].begin;
    return VIT_OK;
}

VitStatus st_open(SafeTensors *st, const char *path, VitError *err) {
    memset(st, 0, sizeof *st);
    const void *map;
    size_t size;
    VitStatus status = file_map(&map, &size, path, "a safetensors file", err);
    if (status != VIT_OK) return status;
    status = st_parse(st, map, size, path, err);
    st->map = (void *)map; // set after st_parse, which zeroes st; st_close unmaps it
    if (status != VIT_OK) {
        st_close(st);
        return status;
    }
    return VIT_OK;
}

char *st_shape_str(char *buf, size_t size, int ndim, const int64_t *shape) {
    return tensor_shape_format(buf, size, ndim, shape, NULL);
}

const StTensor *st_find(const SafeTensors *st, const char *name) {
    if (!st->by_name) return NULL; // not parsed (or parsing failed before the index)
    int lo = 0, hi = st->count - 1;
    while (lo <= hi) { // binary search over the names in sorted order
        int mid = lo + (hi - lo) / 2;
        const StTensor *t = &st->tensors[st->by_name[mid]];
        int c = strcmp(t->name, name);
        if (c == 0) return t;
        if (c < 0) lo = mid + 1;
        else hi = mid - 1;
    }
    return NULL;
}

const char *st_meta(const SafeTensors *st, const char *key) {
    if (!st->meta_by_key) return NULL;
    int i = find_sorted((const char *const *)st->meta_keys, st->meta_by_key, st->meta_count, key);
    return i >= 0 ? st->meta_values[i] : NULL;
}

static uint16_t load_u16(const unsigned char *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

VitStatus st_get_f32(const SafeTensors *st, const StTensor *e, const float **out, int *owned,
                     VitError *err) {
    if (e->dtype == ST_F32 && ((uintptr_t)e->bytes % _Alignof(float)) == 0) {
        *out = (const float *)(const void *)e->bytes;
        *owned = 0;
        return VIT_OK;
    }
    if (e->dtype != ST_F32 && e->dtype != ST_F16 && e->dtype != ST_BF16 && e->dtype != ST_F64)
        return vit_fail(err, VIT_ERR_INPUT, "%s: tensor '%s' has dtype %s, expected a float type",
                        st->label, e->name, st_dtype_name(e->dtype));
    float *f = vit_malloc(e->numel * sizeof(float));
    const unsigned char *p = e->bytes;
    for (size_t i = 0; i < e->numel; i++) {
        switch (e->dtype) {
        case ST_F32: memcpy(&f[i], p + 4 * i, 4); break;
        case ST_F16: f[i] = st_f16_to_f32(load_u16(p + 2 * i)); break;
        case ST_BF16: f[i] = st_bf16_to_f32(load_u16(p + 2 * i)); break;
        default: {
            double d;
            memcpy(&d, p + 8 * i, 8);
            f[i] = (float)d;
        }
        }
    }
    *out = f;
    *owned = 1;
    return VIT_OK;
}

VitStatus st_read_tensor(const SafeTensors *st, const char *name, Tensor *out, VitError *err) {
    const StTensor *e = st_find(st, name);
    if (!e) return vit_fail(err, VIT_ERR_INPUT, "%s: missing tensor '%s'", st->label, name);
    if (e->ndim > TENSOR_MAX_DIMS)
        return vit_fail(err, VIT_ERR_INPUT, "%s: tensor '%s' has %d dimensions (at most %d)",
                        st->label, name, e->ndim, TENSOR_MAX_DIMS);
    const float *f;
    int owned;
    VitStatus s = st_get_f32(st, e, &f, &owned, err);
    if (s != VIT_OK) return s;
    int shape[TENSOR_MAX_DIMS];
    for (int i = 0; i < e->ndim; i++) shape[i] = (int)e->shape[i];
    *out = tensor_from(f, e->ndim, shape);
    if (owned) free((void *)f);
    return VIT_OK;
}

/* --------------------------------------------------------------- writing */

void st_writer_add_as(StWriter *w, const char *name, const Tensor *t, StDtype dtype) {
    if (w->count == w->cap) {
        w->cap = w->cap ? 2 * w->cap : 32;
        w->entries = vit_realloc(w->entries, (size_t)w->cap * sizeof *w->entries);
    }
    StWriterEntry *e = &w->entries[w->count++];
    e->name = vit_strdup(name);
    e->dtype = dtype;
    e->ndim = t->ndim;
    memcpy(e->shape, t->shape, sizeof e->shape);
    e->data = t->data;
    e->raw = NULL;
    e->numel = t->numel;
}

void st_writer_add_raw(StWriter *w, const char *name, StDtype dtype, int ndim, const int *shape,
                       const void *raw) {
    Tensor shape_only = {.ndim = ndim, .numel = 1};
    for (int d = 0; d < ndim; d++) {
        shape_only.shape[d] = shape[d];
        shape_only.numel *= (size_t)shape[d];
    }
    st_writer_add_as(w, name, &shape_only, dtype);
    w->entries[w->count - 1].raw = raw;
}

void st_writer_add(StWriter *w, const char *name, const Tensor *t) {
    st_writer_add_as(w, name, t, ST_F32);
}

void st_writer_meta(StWriter *w, const char *key, const char *value) {
    for (int i = 0; i < w->meta_count; i++) // a key given again: its new value (JSON keys are unique)
        if (strcmp(w->meta_keys[i], key) == 0) {
            free(w->meta_values[i]);
            w->meta_values[i] = vit_strdup(value);
            return;
        }
    w->meta_keys = vit_realloc(w->meta_keys, (size_t)(w->meta_count + 1) * sizeof(char *));
    w->meta_values = vit_realloc(w->meta_values, (size_t)(w->meta_count + 1) * sizeof(char *));
    w->meta_keys[w->meta_count] = vit_strdup(key);
    w->meta_values[w->meta_count] = vit_strdup(value);
    w->meta_count++;
}

void st_writer_free(StWriter *w) {
    for (int i = 0; i < w->count; i++) free(w->entries[i].name);
    free(w->entries);
    for (int i = 0; i < w->meta_count; i++) {
        free(w->meta_keys[i]);
        free(w->meta_values[i]);
    }
    free(w->meta_keys);
    free(w->meta_values);
    memset(w, 0, sizeof *w);
}

// The JSON header, padded with spaces to a multiple of 8 bytes so the data
// section (and every F32 tensor in it) starts aligned.
static char *build_header(const StWriter *w, size_t *len) {
    cJSON *root = cJSON_CreateObject();
    if (w->meta_count) {
        cJSON *meta = cJSON_AddObjectToObject(root, "__metadata__");
        for (int i = 0; i < w->meta_count; i++)
            cJSON_AddStringToObject(meta, w->meta_keys[i], w->meta_values[i]);
    }
    size_t offset = 0;
    for (int i = 0; i < w->count; i++) {
        const StWriterEntry *e = &w->entries[i];
        cJSON *item = cJSON_AddObjectToObject(root, e->name);
        cJSON_AddStringToObject(item, "dtype", st_dtype_name(e->dtype));
        cJSON *shape = cJSON_AddArrayToObject(item, "shape");
        for (int d = 0; d < e->ndim; d++) cJSON_AddItemToArray(shape, cJSON_CreateNumber(e->shape[d]));
        size_t nbytes = e->numel * st_dtype_size(e->dtype);
        cJSON *offs = cJSON_AddArrayToObject(item, "data_offsets");
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)offset));
        cJSON_AddItemToArray(offs, cJSON_CreateNumber((double)(offset + nbytes)));
        offset += nbytes;
    }
    char *json = cJSON_PrintUnformatted(root);
    cJSON_Delete(root);
    if (!json) return NULL;
    size_t n = strlen(json), padded = (n + 7) / 8 * 8;
    char *header = vit_malloc(padded);
    memcpy(header, json, n);
    memset(header + n, ' ', padded - n);
    cJSON_free(json);
    *len = padded;
    return header;
}

static bool write_entry(FILE *f, const StWriterEntry *e) {
    if (e->raw) return fwrite(e->raw, st_dtype_size(e->dtype), e->numel, f) == e->numel;
    if (e->dtype == ST_F32) return fwrite(e->data, sizeof(float), e->numel, f) == e->numel;
    for (size_t i = 0; i < e->numel; i++) {
        uint16_t h = e->dtype == ST_BF16 ? st_f32_to_bf16(e->data[i]) : st_f32_to_f16(e->data[i]);
        unsigned char b[2] = {(unsigned char)(h & 0xff), (unsigned char)(h >> 8)};
        if (fwrite(b, 1, 2, f) != 2) return false;
    }
    return true;
}

VitStatus st_writer_save(const StWriter *w, const char *path, VitError *err) {
    size_t header_len = 0;
    char *header = build_header(w, &header_len);
    if (!header) return vit_fail(err, VIT_ERR_INPUT, "%s: could not build the JSON header", path);
    OutFile out;
    VitStatus status = outfile_open(&out, path, err);
    if (status != VIT_OK) {
        free(header);
        return status;
    }
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)header_len >> (8 * i));
    bool ok = fwrite(len8, 1, 8, out.f) == 8 && fwrite(header, 1, header_len, out.f) == header_len;
    for (int i = 0; ok && i < w->count; i++) ok = write_entry(out.f, &w->entries[i]);
    free(header);
    return outfile_commit(&out, ok, err);
}
