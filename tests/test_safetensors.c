/**
 * @file test_safetensors.c
 * @brief Reading, writing and refusing safetensors files.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "safetensors.h"

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
    st_writer_meta(&w, "num_heads", "12");
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_writer_save(&w, path, &err), VIT_OK);
    st_writer_free(&w);

    SafeTensors st;
    CU_ASSERT_EQUAL_FATAL(st_open(&st, path, &err), VIT_OK);
    CU_ASSERT_EQUAL(st.count, 3);
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

CU_TestInfo tests_safetensors[] = {
    {"round trip", test_round_trip},
    {"F16/BF16 decode like PyTorch", test_half_types_decode_like_pytorch},
    {"F16/BF16 encode like PyTorch", test_half_types_encode_like_pytorch},
    {"F16/BF16 written and read back", test_write_half_types_round_trip},
    {"refuses malformed headers", test_refuses_malformed_headers},
    {"refuses short and lying files", test_refuses_short_and_lying_files},
    {"names missing file, directory, empty file", test_open_names_missing_file_and_directory},
    {"failed write leaves nothing", test_failed_write_leaves_nothing},
    {"missing tensor is named", test_missing_tensor_is_named},
    CU_TEST_INFO_NULL,
};
