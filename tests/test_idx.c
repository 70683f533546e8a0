/**
 * @file test_idx.c
 * @brief IDX files (lib/io/idx_format.h): tiny files written here, plain and gzip,
 *        decode to the exact bytes; every bad file is refused with a message
 *        that names it and the problem, and leaves the output zeroed.
 *
 * The gzip files are made with zlib's deflate (gzip wrapper), so a test can
 * cut one short or flip one of its bytes.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <zlib.h>

#include "check.h"
#include "cli_run.h"
#include "io/idx_format.h"

enum { PATH_SIZE = 512, IMG_N = 3, IMG_ROWS = 2, IMG_COLS = 4, IMG_BYTES = IMG_N * IMG_ROWS * IMG_COLS };

static void put_be32(unsigned char *p, uint32_t v) {
    p[0] = (unsigned char)(v >> 24), p[1] = (unsigned char)(v >> 16);
    p[2] = (unsigned char)(v >> 8), p[3] = (unsigned char)v;
}

// An IDX file in memory: the magic, ndim sizes, then n data bytes (owned).
static unsigned char *idx_bytes(size_t *size, uint32_t magic, int ndim, const uint32_t *dims,
                                const unsigned char *data, size_t n) {
    size_t header = 4 + 4 * (size_t)ndim;
    unsigned char *b = malloc(header + n + 1);
    put_be32(b, magic);
    for (int i = 0; i < ndim; i++) put_be32(b + 4 + 4 * i, dims[i]);
    if (n) memcpy(b + header, data, n);
    *size = header + n;
    return b;
}

// The same bytes as a gzip file in memory (owned).
static unsigned char *gzip_bytes(size_t *out_size, const unsigned char *in, size_t n) {
    z_stream z;
    memset(&z, 0, sizeof z);
    CU_ASSERT_EQUAL_FATAL(deflateInit2(&z, 9, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = deflateBound(&z, (uLong)n) + 64;
    unsigned char *out = malloc(cap);
    z.next_in = (Bytef *)in, z.avail_in = (uInt)n;
    z.next_out = out, z.avail_out = (uInt)cap;
    CU_ASSERT_EQUAL(deflate(&z, Z_FINISH), Z_STREAM_END);
    *out_size = cap - z.avail_out;
    deflateEnd(&z);
    return out;
}

static void write_bytes(const char *path, const unsigned char *b, size_t n) {
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fwrite(b, 1, n, f), n);
    fclose(f);
}

// Write an IDX file at DIR/name, gzip-compressed when gz; the path in path.
static void write_idx(const ScratchDir *dir, const char *name, char *path, bool gz, uint32_t magic,
                      int ndim, const uint32_t *dims, const unsigned char *data, size_t n) {
    scratch_file(dir, name, path, PATH_SIZE);
    size_t size;
    unsigned char *b = idx_bytes(&size, magic, ndim, dims, data, n);
    if (gz) {
        size_t zn;
        unsigned char *z = gzip_bytes(&zn, b, size);
        write_bytes(path, z, zn);
        free(z);
    } else {
        write_bytes(path, b, size);
    }
    free(b);
}

// Three 2×4 images: byte k is 37·k + 11 (mod 256), the first 0 and the last 255.
static void test_pixels(unsigned char *p) {
    for (int k = 0; k < IMG_BYTES; k++) p[k] = (unsigned char)(37 * k + 11);
    p[0] = 0, p[IMG_BYTES - 1] = 255;
}


// Refused: VIT_ERR_INPUT, the output all zero, the message naming the file and what is wrong.
static void expect_bad_images(const char *path, const char *problem) {
    IdxImages x;
    memset(&x, 0x5a, sizeof x); // whatever was there before is overwritten
    VitError err = {{0}};
    CU_ASSERT_EQUAL(idx_read_images(&x, path, &err), VIT_ERR_INPUT);
    CU_ASSERT(x.count == 0 && x.rows == 0 && x.cols == 0 && x.pixels == NULL);
    CU_ASSERT(mentions(&err, path, problem));
}

static void expect_bad_labels(const char *path, const char *problem) {
    IdxLabels x;
    memset(&x, 0x5a, sizeof x);
    VitError err = {{0}};
    CU_ASSERT_EQUAL(idx_read_labels(&x, path, &err), VIT_ERR_INPUT);
    CU_ASSERT(x.count == 0 && x.labels == NULL);
    CU_ASSERT(mentions(&err, path, problem));
}

static const uint32_t IMG_DIMS[3] = {IMG_N, IMG_ROWS, IMG_COLS};

/* ------------------------------------------------------------- good files */

static void test_images_decode_exactly(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    unsigned char px[IMG_BYTES];
    test_pixels(px);
    for (int gz = 0; gz <= 1; gz++) {
        char path[PATH_SIZE];
        write_idx(&dir, gz ? "img.gz" : "img", path, gz, IDX_MAGIC_IMAGES, 3, IMG_DIMS, px,
                  sizeof px);
        IdxImages x;
        VitError err = {{0}};
        CU_ASSERT_EQUAL_FATAL(idx_read_images(&x, path, &err), VIT_OK);
        CU_ASSERT_EQUAL(x.count, IMG_N);
        CU_ASSERT_EQUAL(x.rows, IMG_ROWS);
        CU_ASSERT_EQUAL(x.cols, IMG_COLS);
        CU_ASSERT_EQUAL(memcmp(x.pixels, px, sizeof px), 0);
        // image 1, row 1, column 2 is byte (1·2 + 1)·4 + 2 = 14 of the data
        CU_ASSERT_EQUAL(x.pixels[(1 * IMG_ROWS + 1) * IMG_COLS + 2], (unsigned char)(37 * 14 + 11));
        idx_images_free(&x);
        CU_ASSERT(x.count == 0 && x.pixels == NULL);
        idx_images_free(&x); // twice is harmless
    }
    // the largest side there may be: one image of 1×1024
    unsigned char wide[IDX_MAX_SIDE];
    for (int i = 0; i < IDX_MAX_SIDE; i++) wide[i] = (unsigned char)(i * 7);
    char path[PATH_SIZE];
    write_idx(&dir, "wide.gz", path, true, IDX_MAGIC_IMAGES, 3, (uint32_t[]){1, 1, IDX_MAX_SIDE},
              wide, sizeof wide);
    IdxImages x;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(idx_read_images(&x, path, &err), VIT_OK);
    CU_ASSERT(x.count == 1 && x.rows == 1 && x.cols == IDX_MAX_SIDE);
    CU_ASSERT_EQUAL(memcmp(x.pixels, wide, sizeof wide), 0);
    idx_images_free(&x);
    scratch_remove(&dir);
}

static void test_labels_decode_exactly(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    const unsigned char lab[5] = {9, 0, 0, 3, 255};
    for (int gz = 0; gz <= 1; gz++) {
        char path[PATH_SIZE];
        write_idx(&dir, gz ? "lab.gz" : "lab", path, gz, IDX_MAGIC_LABELS, 1, (uint32_t[]){5},
                  lab, sizeof lab);
        IdxLabels x;
        VitError err = {{0}};
        CU_ASSERT_EQUAL_FATAL(idx_read_labels(&x, path, &err), VIT_OK);
        CU_ASSERT_EQUAL(x.count, 5);
        CU_ASSERT_EQUAL(memcmp(x.labels, lab, sizeof lab), 0);
        idx_labels_free(&x);
        CU_ASSERT(x.count == 0 && x.labels == NULL);
    }
    scratch_remove(&dir);
}

// The installed Fashion-MNIST label files (small: 30 kB), read directly.
static void test_real_label_files(void) {
    const struct { const char *file; int count; } files[] = {
        {"/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz", 60000},
        {"/usr/share/datasets/fashion-mnist/t10k-labels-idx1-ubyte.gz", 10000},
    };
    for (int f = 0; f < 2; f++) {
        IdxLabels x;
        VitError err = {{0}};
        VitStatus s = idx_read_labels(&x, files[f].file, &err);
        if (s != VIT_OK) fprintf(stderr, "\n    %s (run scripts/deps.sh)\n", err.msg);
        CU_ASSERT_EQUAL_FATAL(s, VIT_OK);
        CU_ASSERT_EQUAL(x.count, files[f].count);
        CU_ASSERT_EQUAL(x.labels[0], 9); // both sets start with an ankle boot
        int per_class[256] = {0};
        for (int i = 0; i < x.count; i++) per_class[x.labels[i]]++;
        for (int c = 0; c < 10; c++) CU_ASSERT_EQUAL(per_class[c], files[f].count / 10);
        idx_labels_free(&x);
        // and an images file is not labels
        expect_bad_labels("/usr/share/datasets/fashion-mnist/t10k-images-idx3-ubyte.gz",
                          "is an images file, not labels");
    }
}

/* --------------------------------------------------- the first images only */

// The first n of the three test images (and of five labels), plain and gzip:
// the same bytes as the whole file's first n.
static void test_first_images_and_labels(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    unsigned char px[IMG_BYTES];
    test_pixels(px);
    const unsigned char lab[5] = {9, 0, 0, 3, 255};
    for (int gz = 0; gz <= 1; gz++) {
        char images[PATH_SIZE], labels[PATH_SIZE];
        write_idx(&dir, gz ? "img.gz" : "img", images, gz, IDX_MAGIC_IMAGES, 3, IMG_DIMS, px,
                  sizeof px);
        write_idx(&dir, gz ? "lab.gz" : "lab", labels, gz, IDX_MAGIC_LABELS, 1, (uint32_t[]){5},
                  lab, sizeof lab);
        for (int n = 1; n <= IMG_N; n++) {
            IdxImages x;
            VitError err = {{0}};
            CU_ASSERT_EQUAL_FATAL(idx_read_images_first(&x, images, n, &err), VIT_OK);
            CU_ASSERT(x.count == n && x.rows == IMG_ROWS && x.cols == IMG_COLS);
            CU_ASSERT_EQUAL(memcmp(x.pixels, px, (size_t)n * IMG_ROWS * IMG_COLS), 0);
            idx_images_free(&x);
        }
        for (int n = 1; n <= 5; n++) {
            IdxLabels y;
            VitError err = {{0}};
            CU_ASSERT_EQUAL_FATAL(idx_read_labels_first(&y, labels, n, &err), VIT_OK);
            CU_ASSERT_EQUAL(y.count, n);
            CU_ASSERT_EQUAL(memcmp(y.labels, lab, (size_t)n), 0);
            idx_labels_free(&y);
        }
    }
    scratch_remove(&dir);
}

// Refused as expect_bad_images() refuses, reading only the first count.
static void expect_bad_first_images(const char *path, int count, const char *problem) {
    IdxImages x;
    memset(&x, 0x5a, sizeof x);
    VitError err = {{0}};
    CU_ASSERT_EQUAL(idx_read_images_first(&x, path, count, &err), VIT_ERR_INPUT);
    CU_ASSERT(x.count == 0 && x.rows == 0 && x.cols == 0 && x.pixels == NULL);
    CU_ASSERT(mentions(&err, path, problem));
}

static void expect_bad_first_labels(const char *path, int count, const char *problem) {
    IdxLabels x;
    memset(&x, 0x5a, sizeof x);
    VitError err = {{0}};
    CU_ASSERT_EQUAL(idx_read_labels_first(&x, path, count, &err), VIT_ERR_INPUT);
    CU_ASSERT(x.count == 0 && x.labels == NULL);
    CU_ASSERT(mentions(&err, path, problem));
}

// Asking for none, or for more than the file holds, names the file; the
// header is checked as for the whole file.
static void test_first_count_out_of_range(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    unsigned char px[IMG_BYTES];
    test_pixels(px);
    char path[PATH_SIZE];
    for (int gz = 0; gz <= 1; gz++) {
        write_idx(&dir, gz ? "img.gz" : "img", path, gz, IDX_MAGIC_IMAGES, 3, IMG_DIMS, px,
                  sizeof px);
        expect_bad_first_images(path, 4, "holds 3 images, fewer than the 4 asked for");
        expect_bad_first_images(path, 0, "asked for the first 0 images; ask for 1 or more");
        expect_bad_first_images(path, -1, "asked for the first -1 images");
        write_idx(&dir, gz ? "lab.gz" : "lab", path, gz, IDX_MAGIC_LABELS, 1, (uint32_t[]){3}, px,
                  3);
        expect_bad_first_labels(path, 4, "holds 3 labels, fewer than the 4 asked for");
        expect_bad_first_labels(path, 0, "asked for the first 0 labels");
    }
    // the header's count is checked before any data: 10,000 announced, none there
    write_idx(&dir, "big.gz", path, true, IDX_MAGIC_IMAGES, 3, (uint32_t[]){10000, 2, 2}, px, 4);
    expect_bad_first_images(path, 20000, "holds 10,000 images, fewer than the 20,000 asked for");
    // every header check still applies
    write_idx(&dir, "labels.gz", path, true, IDX_MAGIC_LABELS, 1, (uint32_t[]){3}, px, 3);
    expect_bad_first_images(path, 1, "is a labels file, not images");
    write_idx(&dir, "cols", path, false, IDX_MAGIC_IMAGES, 3, (uint32_t[]){1, 2, 1025}, px, 16);
    expect_bad_first_images(path, 1, "images of 2×1025 pixels");
    write_idx(&dir, "count0", path, false, IDX_MAGIC_IMAGES, 3, (uint32_t[]){0, 2, 2}, px, 0);
    expect_bad_first_images(path, 1, "0 images; a file may hold 1 to 16,777,216");
    scratch_remove(&dir);
}

// What a prefix checks and what it cannot: images missing before the count
// are refused; bytes after the last image lie beyond what is read, so they are
// refused only when every image is asked for. (The gzip trailer's CRC is not
// tested here: zlib decompresses ahead, so in a file this small it reaches the
// trailer, and checks it, even for a prefix.)
static void test_first_checks_what_it_reads(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    unsigned char px[IMG_BYTES + 1];
    test_pixels(px);
    px[IMG_BYTES] = 42;
    char path[PATH_SIZE];
    write_idx(&dir, "short", path, false, IDX_MAGIC_IMAGES, 3, IMG_DIMS, px, IMG_ROWS * IMG_COLS);
    expect_bad_first_images(path, 2, "ends after 1 of 3 images");
    IdxImages x;
    VitError err;
    CU_ASSERT_EQUAL(idx_read_images_first(&x, path, 1, &err), VIT_OK);
    idx_images_free(&x);
    write_idx(&dir, "more.gz", path, true, IDX_MAGIC_IMAGES, 3, IMG_DIMS, px, sizeof px);
    CU_ASSERT_EQUAL(idx_read_images_first(&x, path, 2, &err), VIT_OK);
    idx_images_free(&x);
    expect_bad_first_images(path, IMG_N, "more data follows its 3 images");
    scratch_remove(&dir);
}

// The installed training labels: the first 1,000 are the whole file's first 1,000.
static void test_first_of_real_labels(void) {
    const char *file = "/usr/share/datasets/fashion-mnist/train-labels-idx1-ubyte.gz";
    IdxLabels all, first;
    VitError err = {{0}};
    CU_ASSERT_EQUAL_FATAL(idx_read_labels(&all, file, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(idx_read_labels_first(&first, file, 1000, &err), VIT_OK);
    CU_ASSERT_EQUAL(first.count, 1000);
    CU_ASSERT_EQUAL(memcmp(first.labels, all.labels, 1000), 0);
    idx_labels_free(&first);
    idx_labels_free(&all);
    expect_bad_first_labels(file, 60001, "holds 60,000 labels, fewer than the 60,001 asked for");
}

/* -------------------------------------------------------------- bad files */

static void test_missing_directory_and_fifo(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char missing[PATH_SIZE], fifo[PATH_SIZE];
    scratch_file(&dir, "missing.gz", missing, sizeof missing);
    expect_bad_images(missing, "cannot open: No such file or directory");
    expect_bad_labels(missing, "cannot open: No such file or directory");
    expect_bad_images(dir.path, "is a directory, not an IDX images file");
    expect_bad_labels(dir.path, "is a directory, not an IDX labels file");
    // a FIFO with no writer: refused at once, never waited on
    scratch_file(&dir, "pipe", fifo, sizeof fifo);
    CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
    expect_bad_images(fifo, "is a FIFO (named pipe), not an IDX images file");
    expect_bad_labels(fifo, "is a FIFO (named pipe), not an IDX labels file");
    expect_bad_images("/dev/zero", "is a character device");
    scratch_remove(&dir);
}

static void test_wrong_kind(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    unsigned char px[IMG_BYTES];
    test_pixels(px);
    char images[PATH_SIZE], labels[PATH_SIZE];
    write_idx(&dir, "images.gz", images, true, IDX_MAGIC_IMAGES, 3, IMG_DIMS, px, sizeof px);
    write_idx(&dir, "labels.gz", labels, true, IDX_MAGIC_LABELS, 1, (uint32_t[]){3}, px, 3);
    expect_bad_images(labels, "is a labels file, not images (magic 0x00000801; images have "
                      "0x00000803)");
    expect_bad_labels(images, "is an images file, not labels (magic 0x00000803; labels have "
                      "0x00000801)");
    scratch_remove(&dir);
}

static void test_not_idx_or_other_type(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char path[PATH_SIZE];
    scratch_file(&dir, "notes.txt", path, sizeof path);
    const char *text = "hello, this is not an IDX file at all\n";
    write_bytes(path, (const unsigned char *)text, strlen(text));
    expect_bad_images(path, "not an IDX file (it starts 0x68656c6c; IDX images start 0x00000803)");
    expect_bad_labels(path, "not an IDX file");
    // IDX, but floats; and unsigned bytes in 2 dimensions
    unsigned char zero[64] = {0};
    write_idx(&dir, "floats", path, false, 0x00000D03, 3, (uint32_t[]){1, 2, 2}, zero, 16);
    expect_bad_images(path, "IDX data of floats in 3 dimensions (magic 0x00000d03), not images");
    write_idx(&dir, "matrix.gz", path, true, 0x00000802, 2, (uint32_t[]){2, 2}, zero, 4);
    expect_bad_images(path, "IDX data of unsigned bytes in 2 dimensions");
    expect_bad_labels(path, "not labels: unsigned bytes in 1 (0x00000801)");
    scratch_remove(&dir);
}

static void test_sizes_out_of_range(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char path[PATH_SIZE];
    unsigned char px[16] = {0};
    write_idx(&dir, "rows0", path, false, IDX_MAGIC_IMAGES, 3, (uint32_t[]){1, 0, 4}, px, 0);
    expect_bad_images(path, "images of 0×4 pixels; rows and columns must be 1 to 1024");
    write_idx(&dir, "cols", path, false, IDX_MAGIC_IMAGES, 3, (uint32_t[]){1, 2, 1025}, px, 16);
    expect_bad_images(path, "images of 2×1025 pixels");
    write_idx(&dir, "huge.gz", path, true, IDX_MAGIC_IMAGES, 3,
              (uint32_t[]){1, 0xffffffffu, 0xffffffffu}, px, 16);
    expect_bad_images(path, "images of 4294967295×4294967295 pixels");
    write_idx(&dir, "count0", path, false, IDX_MAGIC_IMAGES, 3, (uint32_t[]){0, 2, 2}, px, 0);
    expect_bad_images(path, "0 images; a file may hold 1 to 16,777,216");
    write_idx(&dir, "count", path, false, IDX_MAGIC_IMAGES, 3,
              (uint32_t[]){IDX_MAX_COUNT + 1, 2, 2}, px, 16);
    expect_bad_images(path, "16,777,217 images; a file may hold 1 to 16,777,216");
    write_idx(&dir, "labels", path, false, IDX_MAGIC_LABELS, 1, (uint32_t[]){0xffffffffu}, px, 16);
    expect_bad_labels(path, "4,294,967,295 labels; a file may hold 1 to 16,777,216");
    // within every limit, but 16,777,216 images of 1024×1024 are 17.6 TB: refused
    // before anything is allocated, by the memory check
    write_idx(&dir, "big.gz", path, true, IDX_MAGIC_IMAGES, 3,
              (uint32_t[]){IDX_MAX_COUNT, IDX_MAX_SIDE, IDX_MAX_SIDE}, px, 16);
    expect_bad_images(path, "16,777,216 images of 1024×1024 would need 17.6 TB of memory");
    scratch_remove(&dir);
}

static void test_truncated(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    unsigned char px[IMG_BYTES];
    test_pixels(px);
    char path[PATH_SIZE];
    // 2½ of 3 images: the half image does not count
    write_idx(&dir, "short", path, false, IDX_MAGIC_IMAGES, 3, IMG_DIMS, px,
              2 * IMG_ROWS * IMG_COLS + 4);
    expect_bad_images(path, "ends after 2 of 3 images");
    write_idx(&dir, "short.gz", path, true, IDX_MAGIC_IMAGES, 3, IMG_DIMS, px, 3);
    expect_bad_images(path, "ends after 0 of 3 images");
    write_idx(&dir, "labels", path, false, IDX_MAGIC_LABELS, 1, (uint32_t[]){7}, px, 6);
    expect_bad_labels(path, "ends after 6 of 7 labels");
    // the header itself cut short, and nothing at all
    size_t size;
    unsigned char *b = idx_bytes(&size, IDX_MAGIC_IMAGES, 3, IMG_DIMS, px, 0);
    scratch_file(&dir, "header", path, sizeof path);
    write_bytes(path, b, 10);
    expect_bad_images(path, "ends inside the IDX header (10 of 16 bytes)");
    write_bytes(path, b, 2);
    expect_bad_images(path, "ends inside the IDX header (2 of 16 bytes)");
    expect_bad_labels(path, "ends inside the IDX header (2 of 8 bytes)");
    free(b);
    scratch_file(&dir, "empty", path, sizeof path);
    write_bytes(path, px, 0);
    expect_bad_images(path, "file is empty, not an IDX images file");
    // a gzip file cut in the middle of its compressed data
    b = idx_bytes(&size, IDX_MAGIC_IMAGES, 3, IMG_DIMS, px, sizeof px);
    size_t zn;
    unsigned char *z = gzip_bytes(&zn, b, size);
    scratch_file(&dir, "cut.gz", path, sizeof path);
    write_bytes(path, z, zn / 2);
    IdxImages x;
    VitError err;
    CU_ASSERT_EQUAL(idx_read_images(&x, path, &err), VIT_ERR_INPUT);
    CU_ASSERT(x.pixels == NULL && x.count == 0);
    CU_ASSERT(mentions(&err, path, NULL));
    CU_ASSERT(strstr(err.msg, "ends ") != NULL || strstr(err.msg, "unexpected end of file"));
    // cut after the data but before the gzip trailer (the CRC and the length)
    write_bytes(path, z, zn - 4);
    expect_bad_images(path, "corrupt gzip data (zlib: unexpected end of file)");
    free(z);
    free(b);
    scratch_remove(&dir);
}

static void test_trailing_bytes(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    unsigned char px[IMG_BYTES + 1];
    test_pixels(px);
    px[IMG_BYTES] = 42;
    char path[PATH_SIZE];
    for (int gz = 0; gz <= 1; gz++) {
        write_idx(&dir, gz ? "more.gz" : "more", path, gz, IDX_MAGIC_IMAGES, 3, IMG_DIMS, px,
                  sizeof px);
        expect_bad_images(path, "more data follows its 3 images (the header says there are 3)");
        write_idx(&dir, gz ? "lab.gz" : "lab", path, gz, IDX_MAGIC_LABELS, 1, (uint32_t[]){2}, px,
                  3);
        expect_bad_labels(path, "more data follows its 2 labels");
    }
    scratch_remove(&dir);
}

static void test_corrupt_gzip(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    unsigned char px[IMG_BYTES];
    test_pixels(px);
    size_t size, zn;
    unsigned char *b = idx_bytes(&size, IDX_MAGIC_IMAGES, 3, IMG_DIMS, px, sizeof px);
    unsigned char *z = gzip_bytes(&zn, b, size);
    char path[PATH_SIZE];
    scratch_file(&dir, "crc.gz", path, sizeof path);
    z[zn - 8] ^= 0x01; // the CRC-32 of the data no longer matches
    write_bytes(path, z, zn);
    expect_bad_images(path, "corrupt gzip data (zlib: incorrect data check)");
    // a gzip header, then a deflate block of the reserved type 3
    const unsigned char bad[] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 3, 0xff, 0xff, 0xff, 0xff};
    scratch_file(&dir, "block.gz", path, sizeof path);
    write_bytes(path, bad, sizeof bad);
    expect_bad_images(path, "corrupt gzip data (zlib: invalid block type)");
    expect_bad_labels(path, "corrupt gzip data (zlib: invalid block type)");
    // gzip with an unknown compression method
    unsigned char method[sizeof bad];
    memcpy(method, bad, sizeof bad);
    method[2] = 7;
    scratch_file(&dir, "method.gz", path, sizeof path);
    write_bytes(path, method, sizeof method);
    expect_bad_images(path, "corrupt gzip data (zlib: unknown compression method)");
    free(z);
    free(b);
    scratch_remove(&dir);
}

// A file name with a newline and an escape character reaches the message escaped.
static void test_names_are_escaped(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char path[PATH_SIZE];
    scratch_file(&dir, "bad\n\033[2Jname", path, sizeof path);
    write_bytes(path, (const unsigned char *)"junk", 4);
    IdxImages x;
    VitError err;
    CU_ASSERT_EQUAL(idx_read_images(&x, path, &err), VIT_ERR_INPUT);
    CU_ASSERT(strstr(err.msg, "bad\\n\\x1b[2Jname: not an IDX file") != NULL);
    CU_ASSERT(strchr(err.msg, '\n') == NULL && strchr(err.msg, '\033') == NULL);
    scratch_remove(&dir);
}

CU_TestInfo tests_idx[] = {
    {"images decode to the exact bytes, plain and gzip", test_images_decode_exactly},
    {"labels decode to the exact bytes, plain and gzip", test_labels_decode_exactly},
    {"the installed Fashion-MNIST label files", test_real_label_files},
    {"the first images and labels are the whole file's first", test_first_images_and_labels},
    {"the first none, or more than the file holds, are refused", test_first_count_out_of_range},
    {"the first images: what is checked and what cannot be", test_first_checks_what_it_reads},
    {"the first of the installed Fashion-MNIST labels", test_first_of_real_labels},
    {"missing file, directory and FIFO are refused", test_missing_directory_and_fifo},
    {"labels are not images, images not labels", test_wrong_kind},
    {"not IDX, or IDX of another type", test_not_idx_or_other_type},
    {"sizes out of range, before memory is taken", test_sizes_out_of_range},
    {"truncated files say how far they got", test_truncated},
    {"bytes after the data are refused", test_trailing_bytes},
    {"corrupt gzip is refused with zlib's message", test_corrupt_gzip},
    {"file names in messages are escaped", test_names_are_escaped},
    CU_TEST_INFO_NULL,
};
