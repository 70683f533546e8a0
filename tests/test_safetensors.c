/**
 * @file test_safetensors.c
 * @brief Reading, writing and refusing safetensors files.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "io/safetensors.h"

/* ------------------------------------------------------------- helpers */

// A temporary path in the build's temp dir; caller unlinks.
static void temp_path(char *buf, size_t n, const char *stem) {
    const char *dir = getenv("TMPDIR");
    snprintf(buf, n, "%s/vit-test-%s-%d.safetensors", dir ? dir : "/tmp", stem, (int)getpid());
}

// Builds a safetensors image in memory: header JSON then `data_len` data bytes.
static unsigned char *make_file(const char *json, size_t data_len, size_t *size) {
    size_t h = strlen(json);
    *size = 8 + h + data_len;
    unsigned char *buf = calloc(1, *size);
    for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)h >> (8 * i));
    memcpy(buf + 8, json, h);
    return buf;
}

// Parses a header with some data bytes; returns the status and the message.
static VitStatus parse_json(const char *json, size_t data_len, char *msg, size_t n) {
    size_t size;
    unsigned char *buf = make_file(json, data_len, &size);
    SafeTensors st;
    VitError err = {{0}};
    VitStatus s = st_parse(&st, buf, size, "bad.safetensors", &err);
    snprintf(msg, n, "%s", err.msg);
    st_close(&st);
    free(buf);
    return s;
}

/* ------------------------------------------------- large headers, in memory */

/*
 * Headers of 100,000 entries pin down the name index (st_find()'s binary
 * search, duplicates found as equal neighbours after one sort). Tensor i is
 * called "t<i>", so names are each other's prefixes ("t1", "t10", "t100"), and
 * entries are written in a scrambled order: header position k holds tensor
 * (k·STRIDE) mod n, which is neither sorted nor reverse-sorted. The
 * metadata keys "k<j>" are scrambled the same way.
 */
// 7919 is a prime that divides neither count, so k -> k·7919 mod n is a permutation
enum { BIG_N = 100000, BIG_META = 1000, STRIDE = 7919 };

// A growing text buffer for building header JSON.
typedef struct {
    char *s;
    size_t len, cap;
} Text;

static void text_add(Text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void text_add(Text *t, const char *fmt, ...) {
    if (!t->s) t->s = vit_malloc(t->cap = 1 << 16);
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        int n = vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
        va_end(ap);
        if (n >= 0 && (size_t)n < t->cap - t->len) {
            t->len += (size_t)n;
            return;
        }
        t->cap = 2 * t->cap + (size_t)n;
        t->s = vit_realloc(t->s, t->cap);
    }
}

// The tensor at header position k of n.
static int scrambled(int k, int n) { return (int)((long long)k * STRIDE % n); }

// Tensor i's dtype and shape: scalars, 1-d (some empty) and 2-d, of four dtypes.
static const StDtype big_dtypes[4] = {ST_F32, ST_F16, ST_BF16, ST_U8};
static int big_shape(int i, int64_t shape[2]) {
    int ndim = i % 3;
    if (ndim == 1) shape[0] = i % 4; // 0 for every fourth: an empty tensor
    if (ndim == 2) shape[0] = i % 2 + 1, shape[1] = 2;
    return ndim;
}

static void add_big_entry(Text *t, int i, size_t *offset, size_t *begin) {
    int64_t shape[2];
    int ndim = big_shape(i, shape);
    size_t numel = 1;
    for (int d = 0; d < ndim; d++) numel *= (size_t)shape[d];
    size_t bytes = numel * st_dtype_size(big_dtypes[i % 4]);
    text_add(t, "\"t%d\":{\"dtype\":\"%s\",\"shape\":[", i, st_dtype_name(big_dtypes[i % 4]));
    for (int d = 0; d < ndim; d++) text_add(t, "%s%lld", d ? "," : "", (long long)shape[d]);
    text_add(t, "],\"data_offsets\":[%zu,%zu]},", *offset, *offset + bytes);
    if (begin) *begin = *offset;
    *offset += bytes;
}

/**
 * A header of @p n tensors and @p n_meta metadata pairs (in the middle of the
 * header), scrambled. With @p dup_tensor the tensor at header position 1
 * appears again as the last entry (with its own, non-overlapping bytes); with
 * @p dup_meta the metadata key at position 1 appears again as the last key.
 * Returns the JSON; *data_len gets the data section's size and begin[i] (if
 * not NULL) tensor i's first byte.
 */
static char *big_header(int n, int n_meta, bool dup_tensor, bool dup_meta, size_t *data_len,
                        size_t *begin) {
    Text t = {0};
    size_t offset = 0;
    text_add(&t, "{");
    for (int k = 0; k < n; k++) {
        if (k == n / 2) {
            text_add(&t, "\"__metadata__\":{");
            for (int m = 0; m < n_meta; m++) {
                int j = scrambled(m, n_meta);
                text_add(&t, "%s\"k%d\":\"v%d\"", m ? "," : "", j, j);
            }
            if (dup_meta) text_add(&t, ",\"k%d\":\"again\"", scrambled(1, n_meta));
            text_add(&t, "},");
        }
        int i = scrambled(k, n);
        add_big_entry(&t, i, &offset, begin ? &begin[i] : NULL);
    }
    if (dup_tensor) add_big_entry(&t, scrambled(1, n), &offset, NULL);
    t.s[t.len - 1] = '}'; // the last entry's comma
    *data_len = offset;
    return t.s;
}

/* --------------------------------------------------------------- tests */

static void test_round_trip(void) {
    char path[256];
    temp_path(path, sizeof path, "roundtrip");
    Tensor a = tensor_new(2, 3, 5), s = tensor_scalar(-7.25f), e = tensor_new(2, 0, 4);
    for (size_t i = 0; i < a.numel; i++) a.data[i] = (float)i * 0.5f - 3.0f;
    StWriter w = {0};
    st_writer_add(&w, "a", &a);
    st_writer_add(&w, "scalar", &s);
    st_writer_add(&w, "empty", &e);
    st_writer_meta(&w, "num_heads", "8");
    st_writer_meta(&w, "num_heads", "12"); // given again: the last value, once (the reader
                                            // refuses a header with a key twice)
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_writer_save(&w, path, &err), VIT_OK);
    st_writer_free(&w);

    SafeTensors st;
    CU_ASSERT_EQUAL_FATAL(st_open(&st, path, &err), VIT_OK);
    CU_ASSERT_EQUAL(st.count, 3);
    CU_ASSERT_EQUAL(st.meta_count, 1);
    CU_ASSERT_STRING_EQUAL(st_meta(&st, "num_heads"), "12");
    Tensor back;
    CU_ASSERT_EQUAL_FATAL(st_read_tensor(&st, "a", &back, &err), VIT_OK);
    assert_tensor_close(&back, &a, 0, 0, "a round trip");
    tensor_free(&back);
    CU_ASSERT_EQUAL_FATAL(st_read_tensor(&st, "scalar", &back, &err), VIT_OK);
    CU_ASSERT_EQUAL(back.ndim, 0);
    CU_ASSERT_EQUAL(back.data[0], -7.25f);
    tensor_free(&back);
    // F32 data is used in place: the pointer lies inside the mapping
    const float *f;
    int owned;
    CU_ASSERT_EQUAL(st_get_f32(&st, st_find(&st, "a"), &f, &owned, &err), VIT_OK);
    CU_ASSERT_EQUAL(owned, 0);
    CU_ASSERT((const unsigned char *)f > st.buf && (const unsigned char *)f < st.buf + st.size);
    st_close(&st);
    unlink(path);
    tensor_free(&a), tensor_free(&s), tensor_free(&e);
}

// PyTorch stored the same values as F32, F16 and BF16; our decoding must match torch's.
static void test_half_types_decode_like_pytorch(void) {
    SafeTensors st;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_open(&st, golden_path("dtypes.safetensors"), &err), VIT_OK);
    Tensor f16, bf16, f16_ref, bf16_ref;
    CU_ASSERT_EQUAL(st_find(&st, "as_f16")->dtype, ST_F16);
    CU_ASSERT_EQUAL(st_find(&st, "as_bf16")->dtype, ST_BF16);
    CU_ASSERT_EQUAL_FATAL(st_read_tensor(&st, "as_f16", &f16, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(st_read_tensor(&st, "as_bf16", &bf16, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(st_read_tensor(&st, "f16_back", &f16_ref, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(st_read_tensor(&st, "bf16_back", &bf16_ref, &err), VIT_OK);
    assert_tensor_close(&f16, &f16_ref, 0, 0, "F16 decode");   // exact
    assert_tensor_close(&bf16, &bf16_ref, 0, 0, "BF16 decode"); // exact
    tensor_free(&f16), tensor_free(&bf16), tensor_free(&f16_ref), tensor_free(&bf16_ref);
    st_close(&st);
}

// Our float→half rounding must agree with torch's .to(float16/bfloat16) bit for bit.
static void test_half_types_encode_like_pytorch(void) {
    SafeTensors st;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_open(&st, golden_path("dtypes.safetensors"), &err), VIT_OK);
    Tensor x;
    CU_ASSERT_EQUAL_FATAL(st_read_tensor(&st, "f32", &x, &err), VIT_OK);
    const StTensor *h = st_find(&st, "as_f16"), *b = st_find(&st, "as_bf16");
    int bad_h = 0, bad_b = 0;
    for (size_t i = 0; i < x.numel; i++) {
        uint16_t want_h = (uint16_t)(h->bytes[2 * i] | h->bytes[2 * i + 1] << 8);
        uint16_t want_b = (uint16_t)(b->bytes[2 * i] | b->bytes[2 * i + 1] << 8);
        bad_h += st_f32_to_f16(x.data[i]) != want_h;
        bad_b += st_f32_to_bf16(x.data[i]) != want_b;
    }
    CU_ASSERT_EQUAL(bad_h, 0);
    CU_ASSERT_EQUAL(bad_b, 0);
    tensor_free(&x);
    st_close(&st);
}

static void test_write_half_types_round_trip(void) {
    char path[256];
    temp_path(path, sizeof path, "half");
    float v[4] = {1.0f, -0.5f, 1024.0f, 0.099975586f};
    Tensor t = tensor_view(v, 1, 4);
    StWriter w = {0};
    st_writer_add_as(&w, "h", &t, ST_F16);
    st_writer_add_as(&w, "b", &t, ST_BF16);
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_writer_save(&w, path, &err), VIT_OK);
    st_writer_free(&w);
    SafeTensors st;
    CU_ASSERT_EQUAL_FATAL(st_open(&st, path, &err), VIT_OK);
    Tensor h, b;
    CU_ASSERT_EQUAL_FATAL(st_read_tensor(&st, "h", &h, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(st_read_tensor(&st, "b", &b, &err), VIT_OK);
    assert_tensor_close(&h, &t, 0, 1e-3f, "F16 round trip");
    assert_tensor_close(&b, &t, 0, 8e-3f, "BF16 round trip");
    tensor_free(&h), tensor_free(&b);
    st_close(&st);
    unlink(path);
}

static void test_refuses_malformed_headers(void) {
    struct {
        const char *json;
        size_t data;
        const char *needle; // expected in the message
    } cases[] = {
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}", 8, "not valid JSON"},
        {"[1,2]", 0, "not a JSON object"},
        {"{\"a\":{\"dtype\":\"Q7\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "unknown dtype 'Q7'"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,8]}}", 8, "need 12"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4, "past the data"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
         "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, "overlap"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, "invalid size"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8, "begin <= end"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, "data_offsets"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
         "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8, "appears twice"},
        {"{\"__metadata__\":{\"k\":5}}", 0, "not a string"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}", 8,
         "invalid size"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char msg[sizeof(VitError)];
        VitStatus s = parse_json(cases[i].json, cases[i].data, msg, sizeof msg);
        CU_ASSERT_EQUAL(s, VIT_ERR_INPUT);
        bool named = strstr(msg, "bad.safetensors") && strstr(msg, cases[i].needle);
        if (!named) fprintf(stderr, "\n    case %zu: message was: %s\n", i, msg);
        CU_ASSERT(named);
    }
}

static void test_refuses_short_and_lying_files(void) {
    SafeTensors st;
    VitError err;
    unsigned char tiny[4] = {1, 2, 3, 4};
    CU_ASSERT_EQUAL(st_parse(&st, tiny, 4, "tiny", &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "too short"));
    st_close(&st);
    unsigned char lying[16] = {0xff, 0xff, 0xff, 0x7f, 0, 0, 0, 0, '{', '}'};
    CU_ASSERT_EQUAL(st_parse(&st, lying, sizeof lying, "lying", &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "exceeds"));
    st_close(&st);
}

static void test_open_names_missing_file_and_directory(void) {
    SafeTensors st;
    VitError err;
    CU_ASSERT_EQUAL(st_open(&st, "/nonexistent/w.safetensors", &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "/nonexistent/w.safetensors: cannot open"));
    CU_ASSERT_EQUAL(st_open(&st, "/tmp", &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "is a directory"));
    char path[256];
    temp_path(path, sizeof path, "empty");
    FILE *f = fopen(path, "wb");
    fclose(f);
    CU_ASSERT_EQUAL(st_open(&st, path, &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "is empty"));
    unlink(path);
}

static void test_failed_write_leaves_nothing(void) {
    Tensor t = tensor_new(1, 3);
    StWriter w = {0};
    st_writer_add(&w, "t", &t);
    VitError err;
    CU_ASSERT_EQUAL(st_writer_save(&w, "/nonexistent-dir/out.safetensors", &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "/nonexistent-dir/out.safetensors"));
    st_writer_free(&w);
    tensor_free(&t);
}

static void test_missing_tensor_is_named(void) {
    size_t size;
    unsigned char *buf =
        make_file("{\"a\":{\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4, &size);
    SafeTensors st;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_parse(&st, buf, size, "m.safetensors", &err), VIT_OK);
    Tensor t;
    CU_ASSERT_EQUAL(st_read_tensor(&st, "head.weight", &t, &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "missing tensor 'head.weight'"));
    CU_ASSERT_EQUAL(st_read_tensor(&st, "a", &t, &err), VIT_ERR_INPUT); // I32 is not float
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "expected a float type"));
    st_close(&st);
    free(buf);
}

// Every one of 100,000 scrambled names is found, pointing at its own entry;
// absent names (prefixes, names sorting between existing ones) are not.
static void test_large_header_lookup(void) {
    size_t data_len, *begin = calloc(BIG_N, sizeof *begin), size;
    char *json = big_header(BIG_N, BIG_META, false, false, &data_len, begin);
    unsigned char *buf = make_file(json, data_len, &size);
    const unsigned char *data = buf + 8 + strlen(json);
    SafeTensors st;
    VitError err = {{0}};
    VitStatus s = st_parse(&st, buf, size, "big.safetensors", &err);
    if (s != VIT_OK) fprintf(stderr, "\n    %s\n", err.msg);
    CU_ASSERT_EQUAL_FATAL(s, VIT_OK);
    CU_ASSERT_EQUAL(st.count, BIG_N);
    CU_ASSERT_EQUAL(st.meta_count, BIG_META);

    int wrong = 0; // names not found, or found pointing at another entry
    for (int k = 0; k < BIG_N; k++) {
        int i = scrambled(k, BIG_N);
        char name[32];
        snprintf(name, sizeof name, "t%d", i);
        const StTensor *e = st_find(&st, name);
        int64_t shape[2];
        int ndim = big_shape(i, shape);
        bool ok = e && e == &st.tensors[k] && strcmp(e->name, name) == 0 &&
                  e->dtype == big_dtypes[i % 4] && e->ndim == ndim && e->begin == begin[i] &&
                  e->end == begin[i] + e->numel * st_dtype_size(e->dtype) &&
                  e->bytes == data + begin[i];
        for (int d = 0; ok && d < ndim; d++) ok = e->shape[d] == shape[d];
        if (!ok && wrong++ < 5) fprintf(stderr, "\n    '%s' at header position %d: %s", name, k,
                                        e ? "found with the wrong entry" : "not found");
    }
    if (wrong) fprintf(stderr, "\n    %d of %d names wrong\n", wrong, BIG_N);
    CU_ASSERT_EQUAL(wrong, 0);

    // absent: prefixes of every name, names sorting between neighbours, past
    // either end, other case, a metadata key, a trailing byte, non-ASCII
    const char *absent[] = {"", "t", "s", "u", "T1", "t01", "t00", "t-1", "t100000", "t99999x",
                            "t1 ", "t5.", "t12345\x7f", "t\xc3\xbc", "k5", "__metadata__",
                            "t1000000", "t099999"};
    for (size_t a = 0; a < sizeof absent / sizeof absent[0]; a++) {
        const StTensor *e = st_find(&st, absent[a]);
        if (e) fprintf(stderr, "\n    absent name '%s' found as '%s'", absent[a], e->name);
        CU_ASSERT_PTR_NULL(e);
    }
    // the first and last names in sorted order, and names that prefix others
    CU_ASSERT_PTR_NOT_NULL(st_find(&st, "t0"));
    CU_ASSERT_PTR_NOT_NULL(st_find(&st, "t99999"));
    CU_ASSERT_PTR_NOT_NULL(st_find(&st, "t1"));
    CU_ASSERT_PTR_NOT_NULL(st_find(&st, "t10000"));

    int meta_wrong = 0;
    for (int j = 0; j < BIG_META; j++) {
        char key[32], value[32];
        snprintf(key, sizeof key, "k%d", j);
        snprintf(value, sizeof value, "v%d", j);
        const char *v = st_meta(&st, key);
        if (!v || strcmp(v, value) != 0) meta_wrong++;
    }
    CU_ASSERT_EQUAL(meta_wrong, 0);
    const char *absent_keys[] = {"", "k", "k01", "k1000", "k999x", "t5", "v5", "K5"};
    for (size_t a = 0; a < sizeof absent_keys / sizeof absent_keys[0]; a++)
        CU_ASSERT_PTR_NULL(st_meta(&st, absent_keys[a]));
    st_close(&st);
    free(buf);
    free(json);
    free(begin);
}

// Parses @p json (with @p data_len data bytes), expecting a refusal whose message holds @p needle.
static void assert_refused(const char *json, size_t data_len, const char *needle) {
    size_t size;
    unsigned char *buf = make_file(json, data_len, &size);
    SafeTensors st;
    VitError err = {{0}};
    CU_ASSERT_EQUAL(st_parse(&st, buf, size, "big.safetensors", &err), VIT_ERR_INPUT);
    bool named = strstr(err.msg, "big.safetensors") && strstr(err.msg, needle);
    if (!named) fprintf(stderr, "\n    wanted \"%s\", message was: %s\n", needle, err.msg);
    CU_ASSERT(named);
    st_close(&st);
    free(buf);
}

// A name written first and again last, 100,000 entries apart, is caught and named.
static void test_large_header_duplicate_tensor(void) {
    size_t data_len;
    char *json = big_header(BIG_N, BIG_META, true, false, &data_len, NULL);
    char needle[64];
    snprintf(needle, sizeof needle, "tensor 't%d' appears twice", scrambled(1, BIG_N));
    assert_refused(json, data_len, needle);
    free(json);
}

// The same for a metadata key, 1,000 keys apart.
static void test_large_header_duplicate_metadata_key(void) {
    size_t data_len;
    char *json = big_header(BIG_N / 10, BIG_META, false, true, &data_len, NULL);
    char needle[64];
    snprintf(needle, sizeof needle, "__metadata__ key 'k%d' appears twice", scrambled(1, BIG_META));
    assert_refused(json, data_len, needle);
    free(json);
}

// Under `ulimit -v`, a header whose JSON tree would not fit is refused by its
// size before cJSON starts (cJSON's failed allocation would read as "not
// valid JSON", ours as an abort). In a child, whose limit is set to what it
// uses plus 200 MB; not under the sanitizers, which reserve terabytes of
// address space and cannot start under such a limit.
static void test_header_memory_is_checked_first(void) {
    const char *san = getenv("VIT_SANITIZE");
    if (san && *san && strcmp(san, "0") != 0) return;
    fflush(NULL);
    int fds[2];
    CU_ASSERT_EQUAL_FATAL(pipe(fds), 0);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        const size_t header = 40u << 20; // 40 MB of spaces: a tree of about 640 MB
        unsigned char *buf = malloc(8 + header);
        if (!buf) _exit(3);
        memset(buf + 8, ' ', header);
        for (int i = 0; i < 8; i++) buf[i] = (unsigned char)((uint64_t)header >> (8 * i));
        long pages = 0;
        FILE *f = fopen("/proc/self/statm", "r");
        if (!f || fscanf(f, "%ld", &pages) != 1) _exit(4);
        fclose(f);
        rlim_t limit = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + (200u << 20);
        struct rlimit rl = {limit, limit};
        if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(5);
        SafeTensors st;
        VitError err = {{0}};
        VitStatus s = st_parse(&st, buf, 8 + header, "big.safetensors", &err);
        st_close(&st);
        if (write(fds[1], err.msg, strlen(err.msg)) < 0) _exit(6);
        _exit(s == VIT_ERR_INPUT ? 0 : 7);
    }
    close(fds[1]);
    char msg[sizeof(VitError)] = {0};
    ssize_t n = read(fds[0], msg, sizeof msg - 1);
    close(fds[0]);
    int status;
    waitpid(pid, &status, 0);
    CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    CU_ASSERT_TRUE(n > 0);
    const char *want = "big.safetensors: a header of 41.9 MB would need 671.1 MB of memory, more "
                       "than the ";
    if (strncmp(msg, want, strlen(want)) != 0) fprintf(stderr, "\n    got '%s'\n", msg);
    CU_ASSERT_EQUAL(strncmp(msg, want, strlen(want)), 0);
}

// A failed parse leaves nothing to look things up in (it used to keep half a table).
static void test_failed_parse_is_empty(void) {
    size_t size;
    unsigned char *buf = make_file("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":"
                                   "[0,4]},\"a\":{\"dtype\":\"F32\",\"shape\":[1],"
                                   "\"data_offsets\":[4,8]}}", 8, &size);
    SafeTensors st;
    VitError err;
    CU_ASSERT_EQUAL(st_parse(&st, buf, size, "dup.safetensors", &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "tensor 'a' appears twice"));
    CU_ASSERT_EQUAL(st.count, 0);
    CU_ASSERT_PTR_NULL(st_find(&st, "a"));
    st_close(&st);
    free(buf);
}

CU_TestInfo tests_safetensors[] = {
    {"a failed parse is empty", test_failed_parse_is_empty},
    {"header memory is checked before parsing", test_header_memory_is_checked_first},
    {"round trip", test_round_trip},
    {"F16/BF16 decode like PyTorch", test_half_types_decode_like_pytorch},
    {"F16/BF16 encode like PyTorch", test_half_types_encode_like_pytorch},
    {"F16/BF16 written and read back", test_write_half_types_round_trip},
    {"refuses malformed headers", test_refuses_malformed_headers},
    {"refuses short and lying files", test_refuses_short_and_lying_files},
    {"names missing file, directory, empty file", test_open_names_missing_file_and_directory},
    {"failed write leaves nothing", test_failed_write_leaves_nothing},
    {"missing tensor is named", test_missing_tensor_is_named},
    {"100,000 scrambled names all found, absent ones not", test_large_header_lookup},
    {"duplicate name 100,000 entries apart is named", test_large_header_duplicate_tensor},
    {"duplicate metadata key far apart is named", test_large_header_duplicate_metadata_key},
    CU_TEST_INFO_NULL,
};
