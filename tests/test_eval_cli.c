/**
 * @file test_eval_cli.c
 * @brief `vit eval`, run for real on Fashion-MNIST: the report's parts and
 *        their sums, against the labels of the images and against eval_run()
 *        called here; the weights' own names and normalisation; the splits and
 *        a folder of the same files; and every refusal, one line each.
 *
 * The model is random (made by `vit make-weights`, or written here with
 * metadata), so its accuracy means nothing, but every count it prints can be
 * checked: each class's images are the labels of the first --limit images of
 * the split, each row of the confusion matrix adds up to its class's images,
 * the diagonal is what it got right, the hardest pairs are the largest sums
 * of a cell and its mirror. The images come from Debian's
 * dataset-fashion-mnist, which scripts/deps.sh installs for `make test`.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "cli_run.h"
#include "train/dataset.h"
#include "io/image.h"
#include "io/labels.h"
#include "io/safetensors.h"
#include "explain/rollout.h"
#include "train/train.h"
#include "model/vit.h"

enum { PATH_SIZE = 512, MSG_SIZE = 3 * PATH_SIZE, Y = 10 };

/* ---------------------------------------------------------------- helpers */

// `vit make-weights` for a grey 28×28 model of `classes` classes (D 64, L 2, H 4, p 4).
static void make_grey(const char *out, const char *classes) {
    CliResult r = VIT_RUN("make-weights", "--dim", "64", "--depth", "2", "--heads", "4", "--img",
                          "28", "--patch", "4", "--channels", "1", "--classes", classes,
                          "--std", "0.2", "--seed", "1", "--out", out);
    if (r.status != 0) fprintf(stderr, "\n    make-weights failed (%d): %s", r.status, r.err);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    cli_result_free(&r);
}

// The same shape of model written here, with the __metadata__ pairs given (key, value, ..., NULL).
static void write_grey(const char *path, const char *const *meta) {
    const VitConfig c = {.image_size = 28, .patch_size = 7, .channels = 1, .dim = 32, .depth = 1,
                         .heads = 2, .mlp_dim = 64, .num_classes = Y, .ln_eps = 1e-6f};
    VitInit init = vit_init_timm(2);
    init.std = 0.2f, init.bias_std = 0.05f;
    Vit vit;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_build_random(&vit, &c, &init, &err), VIT_OK);
    StWriter w = {0};
    CU_ASSERT_EQUAL_FATAL(vit_writer_add(&w, &vit, &err), VIT_OK);
    for (int i = 0; meta && meta[i]; i += 2) st_writer_meta(&w, meta[i], meta[i + 1]);
    CU_ASSERT_EQUAL_FATAL(st_writer_save(&w, path, &err), VIT_OK);
    st_writer_free(&w);
    vit_free(&vit);
}
#define WRITE_GREY(path, ...) write_grey((path), (const char *const[]){__VA_ARGS__, NULL})

// Runs a command that must succeed: exit 0, nothing on stderr. Returns its stdout (owned).
static char *run_ok(const char *const *args) {
    CliResult r = cli_run(args);
    if (r.status != 0 || r.err[0])
        fprintf(stderr, "\n    vit %s failed (%d): %s", args[0], r.status, r.err);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_STRING_EQUAL(r.err, "");
    char *out = r.out;
    r.out = NULL;
    cli_result_free(&r);
    return out;
}
#define RUN_OK(...) run_ok((const char *const[]){__VA_ARGS__, NULL})

// A split of the installed Fashion-MNIST ("test" or "train"), owned.
static Dataset load(const char *split) {
    Dataset d;
    VitError err;
    if (dataset_fashion_mnist_load(&d, NULL, split, &err) != VIT_OK) {
        fprintf(stderr, "\n    %s (scripts/deps.sh installs dataset-fashion-mnist)\n", err.msg);
        CU_FAIL_FATAL("Fashion-MNIST is not installed");
    }
    return d;
}

// How many of images first … first + n − 1 have each label.
static void label_counts(int counts[Y], const Dataset *d, int first, int n) {
    memset(counts, 0, sizeof(int) * Y);
    for (int i = first; i < first + n; i++) counts[d->labels[i]]++;
}

/* -------------------------------------------------------- reading the report */

/** What `vit eval` printed, read back. */
typedef struct {
    int correct, count;         // from the accuracy line
    double accuracy;            // its percentage
    int images[Y], right[Y];    // the per-class table
    int rows;                   // its rows read
    int matrix[Y][Y];           // the confusion matrix
    int matrix_rows;            // its rows read
    int pairs;                  // hardest pairs read
    int pair_a[5], pair_b[5], pair_n[5], pair_ab[5], pair_ba[5];
} Report;

// The class whose name `p` starts with, followed by `after` (longest name first: no
// name here is a prefix of another, but be safe); -1 if none.
static int name_at(const char *p, const char *const names[Y], const char *after, size_t *len) {
    int best = -1;
    size_t best_len = 0;
    for (int y = 0; y < Y; y++) {
        const size_t n = strlen(names[y]);
        if (strncmp(p, names[y], n) == 0 && strncmp(p + n, after, strlen(after)) == 0 &&
            n > best_len)
            best = y, best_len = n;
    }
    *len = best_len;
    return best;
}

// The next line after `p`, or NULL at the end.
static const char *next_line(const char *p) {
    p = strchr(p, '\n');
    return p ? p + 1 : NULL;
}

static Report read_report(const char *out, const char *const names[Y]) {
    Report r;
    memset(&r, 0, sizeof r);
    const char *p = strstr(out, "accuracy: ");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    CU_ASSERT_EQUAL(sscanf(p, "accuracy: %lf%% (%d of %d)", &r.accuracy, &r.correct, &r.count), 3);
    // per class: "  NAME   images  correct  accuracy  ..."
    p = strstr(out, "\nper class:\n");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    p = next_line(next_line(p + 1)); // past the title and the heading
    for (; p && r.rows < Y; p = next_line(p)) {
        size_t len;
        const int y = name_at(p + 2, names, " ", &len);
        if (y != r.rows) break; // in class order
        CU_ASSERT_EQUAL(sscanf(p + 2 + len, "%d %d", &r.images[y], &r.right[y]), 2);
        r.rows++;
    }
    // the matrix: a heading line, then "  ABBR  n n n ..." per class
    p = strstr(out, "\nconfusion matrix (");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    p = next_line(next_line(p + 1));
    for (; p && r.matrix_rows < Y; p = next_line(p)) {
        const char *q = p;
        while (*q == ' ') q++;
        while (*q && *q != ' ') q++; // the abbreviation
        int n = 0, at;
        for (int c = 0; c < Y && sscanf(q, "%d%n", &r.matrix[r.matrix_rows][c], &at) == 1; c++)
            n++, q += at;
        if (n != Y) break;
        r.matrix_rows++;
    }
    // "  1.    27  A → B x, B → A y"
    p = strstr(out, "\nthe hardest pairs to tell apart");
    CU_ASSERT_PTR_NOT_NULL_FATAL(p);
    for (p = next_line(p + 1); p && r.pairs < 5; p = next_line(p)) {
        int k, total, at;
        size_t la, lb;
        if (sscanf(p, " %d. %d %n", &k, &total, &at) != 2 || k != r.pairs + 1) break;
        const char *q = p + at;
        const int a = name_at(q, names, " → ", &la);
        if (a < 0) break;
        q += la + strlen(" → ");
        const int b = name_at(q, names, " ", &lb);
        if (b < 0) break;
        const int i = r.pairs++;
        r.pair_a[i] = a, r.pair_b[i] = b, r.pair_n[i] = total;
        CU_ASSERT_EQUAL(sscanf(q + lb, " %d", &r.pair_ab[i]), 1);
        q = strstr(q, ", ");
        CU_ASSERT_PTR_NOT_NULL_FATAL(q);
        q += 2;
        CU_ASSERT_EQUAL(name_at(q, names, " → ", &lb), b); // then the other way
        q += lb + strlen(" → ");
        CU_ASSERT_EQUAL(name_at(q, names, " ", &la), a);
        CU_ASSERT_EQUAL(sscanf(q + la, " %d", &r.pair_ba[i]), 1);
    }
    return r;
}

// Every line at most 80 columns (a UTF-8 character is one column), but
// the one naming the weights file, whose path is as long as it is.
static void expect_narrow(const char *out, const char *path) {
    int widest = 0;
    for (const char *line = out; line && *line; line = next_line(line)) {
        const char *end = strchr(line, '\n');
        if (!end) end = line + strlen(line);
        int col = 0;
        for (const char *p = line; p < end; p++) col += ((unsigned char)*p & 0xC0) != 0x80;
        const char *at = strstr(line, path);
        if (!(at && at < end)) widest = col > widest ? col : widest;
    }
    if (widest > 80) fprintf(stderr, "\n    a line of %d columns\n", widest);
    CU_ASSERT(widest <= 80);
}

// The parts of a report agree with each other, with the images' labels
// (want_images), and with the confusion matrix eval_run() gives (want).
static void expect_consistent(const Report *r, int n, const int want_images[Y],
                              const EvalResult *want) {
    CU_ASSERT_EQUAL(r->count, n);
    CU_ASSERT_EQUAL_FATAL(r->rows, Y);
    CU_ASSERT_EQUAL_FATAL(r->matrix_rows, Y);
    int images = 0, right = 0;
    for (int t = 0; t < Y; t++) {
        images += r->images[t], right += r->right[t];
        CU_ASSERT_EQUAL(r->images[t], want_images[t]); // the labels of the images
        int row = 0;
        for (int p = 0; p < Y; p++) row += r->matrix[t][p];
        CU_ASSERT_EQUAL(row, r->images[t]);          // a row adds up to its class
        CU_ASSERT_EQUAL(r->matrix[t][t], r->right[t]); // the diagonal is what was right
        for (int p = 0; p < Y; p++) CU_ASSERT_EQUAL(r->matrix[t][p], want->confusion[t * Y + p]);
    }
    CU_ASSERT_EQUAL(images, n);
    CU_ASSERT_EQUAL(right, r->correct);
    CU_ASSERT_EQUAL(r->correct, want->correct);
    CU_ASSERT_DOUBLE_EQUAL(r->accuracy, 100.0 * r->correct / n, 0.005 + 1e-9);
    // the hardest pairs: the largest cell + mirror sums, largest first, at most five
    int listed_min = 1 << 30;
    for (int i = 0; i < r->pairs; i++) {
        const int a = r->pair_a[i], b = r->pair_b[i];
        CU_ASSERT(a != b);
        CU_ASSERT_EQUAL(r->pair_ab[i], r->matrix[a][b]);
        CU_ASSERT_EQUAL(r->pair_ba[i], r->matrix[b][a]);
        CU_ASSERT_EQUAL(r->pair_n[i], r->matrix[a][b] + r->matrix[b][a]);
        CU_ASSERT(r->pair_ab[i] >= r->pair_ba[i]); // the more frequent mistake first
        CU_ASSERT(r->pair_n[i] > 0);
        if (i) CU_ASSERT(r->pair_n[i] <= r->pair_n[i - 1]);
        listed_min = r->pair_n[i] < listed_min ? r->pair_n[i] : listed_min;
    }
    int nonzero = 0;
    for (int a = 0; a < Y; a++)
        for (int b = a + 1; b < Y; b++) {
            const int sum = r->matrix[a][b] + r->matrix[b][a];
            nonzero += sum > 0;
            bool listed = false;
            for (int i = 0; i < r->pairs; i++)
                listed |= (r->pair_a[i] == a && r->pair_b[i] == b) ||
                          (r->pair_a[i] == b && r->pair_b[i] == a);
            if (!listed && r->pairs == 5) CU_ASSERT(sum <= listed_min); // none left out is larger
        }
    CU_ASSERT_EQUAL(r->pairs, nonzero < 5 ? nonzero : 5);
}

// eval_run() on images first … first + n − 1 of `d`, with the model in `path`.
static EvalResult library_eval(const char *path, const Dataset *d, int first, int n, float mean,
                               float std) {
    Vit vit;
    VitError err;
    EvalResult r = {0};
    CU_ASSERT_EQUAL_FATAL(vit_build(&vit, path, &err), VIT_OK);
    const Dataset part = dataset_slice(d, first, n);
    if (eval_run(&vit, &part, mean, std, 64, &r, &err) != VIT_OK) {
        fprintf(stderr, "\n    %s\n", err.msg);
        CU_FAIL("eval_run() failed");
    }
    vit_free(&vit);
    return r;
}

/* ------------------------------------------------------------------ tests */

static void test_help_of_eval(void) {
    char *overview = RUN_OK("--help");
    CU_ASSERT_PTR_NOT_NULL(strstr(overview, "\n  eval "));
    free(overview);
    char *help = RUN_OK("eval", "--help");
    const char *const needles[] = {"vit eval: ", "usage: vit eval --weights FILE [--data DIR]",
                                   "--split SPLIT", "--limit N", "--batch N", "--threads N",
                                   "confusion matrix", "examples:\n", "exit status:"};
    for (size_t i = 0; i < sizeof needles / sizeof needles[0]; i++)
        CU_ASSERT_PTR_NOT_NULL(strstr(help, needles[i]));
    CU_ASSERT_EQUAL(strncmp(help, "vit eval: ", 10), 0);
    free(help);
}

// A random model on the first 200 test images: the report's structure, its
// sums, the labels and the library's confusion matrix.
static void test_eval_a_random_model(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char w[PATH_SIZE], head[MSG_SIZE];
    scratch_file(&dir, "random.safetensors", w, sizeof w);
    make_grey(w, "10");
    char *out = RUN_OK("eval", "--weights", w, "--limit", "200", "--batch", "64");
    snprintf(head, sizeof head, "%s on Fashion-MNIST test: the first 200 of its 10,000 images\n"
             "  normalised with mean 0.2860, std 0.3530 (the fashion-mnist preset)\n"
             "  batches of 64: ", w);
    CU_ASSERT_EQUAL(strncmp(out, head, strlen(head)), 0);
    const char *const parts[] = {
        "\naccuracy: ", "mean cross-entropy ",
        "\nper class:\n  class        images  correct  accuracy  most often taken for\n",
        "\n  T-shirt/top ", "\n  Ankle boot  ",
        "\nconfusion matrix (row: the true class, column: the class the model chose):\n",
        " T-shi Trous Pullo Dress  Coat Sanda Shirt Sneak   Bag Ankle\n",
        "  legend: T-shi = T-shirt/top, Trous = Trouser, Pullo = Pullover,",
        "Ankle = Ankle boot\n", "\nthe hardest pairs to tell apart (mistakes both ways; A → B: A taken for B):\n  1. ",
    };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (!strstr(out, parts[i])) fprintf(stderr, "\n    missing: '%s'\n", parts[i]);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, parts[i]));
    }
    expect_narrow(out, w);
    Dataset test = load("test");
    int want_images[Y];
    label_counts(want_images, &test, 0, 200);
    EvalResult want = library_eval(w, &test, 0, 200, 0.2860f, 0.3530f);
    const Report r = read_report(out, DATASET_FASHION_MNIST_CLASSES);
    expect_consistent(&r, 200, want_images, &want);
    CU_ASSERT(r.pairs >= 1); // a random model mistakes many
    eval_free(&want);
    dataset_free(&test);
    free(out);
    scratch_remove(&dir);
}

// The weights' own class names and normalisation are used, and said to be;
// names whose first letters clash are numbered in the matrix instead.
static void test_eval_uses_the_weights_metadata(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char w[PATH_SIZE];
    scratch_file(&dir, "named.safetensors", w, sizeof w);
    static const char *const names[Y] = {"zero", "one", "two", "three", "four",
                                         "five", "six", "seven", "eight", "nine"};
    WRITE_GREY(w, "class_names", "[\"zero\", \"one\", \"two\", \"three\", \"four\", \"five\", "
               "\"six\", \"seven\", \"eight\", \"nine\"]", "preprocess", "fashion-mnist", "mean",
               "0.5", "std", "0.25");
    char *out = RUN_OK("eval", "--weights", w, "--limit", "120");
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "normalised with mean 0.5000, std 0.2500 (the weights' "
                                       "metadata)\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\n  zero "));
    CU_ASSERT_PTR_NULL(strstr(out, "T-shirt"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "legend: zero = zero, one = one,"));
    Dataset test = load("test");
    int want_images[Y];
    label_counts(want_images, &test, 0, 120);
    EvalResult want = library_eval(w, &test, 0, 120, 0.5f, 0.25f);
    const Report r = read_report(out, names);
    expect_consistent(&r, 120, want_images, &want);
    eval_free(&want);
    free(out);
    // "class 0" … "class 9" all begin "class": the columns are c0 … c9
    static const char *const clash[Y] = {"class 0", "class 1", "class 2", "class 3", "class 4",
                                         "class 5", "class 6", "class 7", "class 8", "class 9"};
    WRITE_GREY(w, "class_names", "[\"class 0\", \"class 1\", \"class 2\", \"class 3\", "
               "\"class 4\", \"class 5\", \"class 6\", \"class 7\", \"class 8\", \"class 9\"]");
    out = RUN_OK("eval", "--weights", w, "--limit", "50");
    const char *head = strstr(out, " c0 ");
    CU_ASSERT_PTR_NOT_NULL_FATAL(head);
    for (int y = 1; y < Y; y++) { // c1 … c9 follow on the same line, in order
        char col[8];
        snprintf(col, sizeof col, " c%d%s", y, y + 1 < Y ? " " : "\n");
        const char *next = strstr(head, col);
        CU_ASSERT_TRUE_FATAL(next && !memchr(head, '\n', (size_t)(next - head)));
        head = next;
    }
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "legend: c0 = class 0, c1 = class 1,"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "(the fashion-mnist preset)"));
    label_counts(want_images, &test, 0, 50);
    want = library_eval(w, &test, 0, 50, 0.2860f, 0.3530f);
    const Report r2 = read_report(out, clash);
    expect_consistent(&r2, 50, want_images, &want);
    eval_free(&want);
    free(out);
    dataset_free(&test);
    scratch_remove(&dir);
}

// val is the last 5,000 training images and train the first 55,000, as `vit train` splits them.
static void test_eval_splits(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char w[PATH_SIZE];
    scratch_file(&dir, "random.safetensors", w, sizeof w);
    make_grey(w, "10");
    Dataset all = load("train");
    CU_ASSERT_EQUAL_FATAL(all.count, 60000);
    const struct {
        const char *split, *limit, *head;
        int first, n;
    } cases[] = {
        {"val", "60", "on Fashion-MNIST val: the first 60 of its 5,000 images\n", 55000, 60},
        {"train", "40", "on Fashion-MNIST train: the first 40 of its 55,000 images\n", 0, 40},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char *out = RUN_OK("eval", "--weights", w, "--split", cases[i].split, "--limit",
                           cases[i].limit, "--threads", "1");
        CU_ASSERT_PTR_NOT_NULL(strstr(out, cases[i].head));
        int want_images[Y];
        label_counts(want_images, &all, cases[i].first, cases[i].n);
        EvalResult want = library_eval(w, &all, cases[i].first, cases[i].n, 0.2860f, 0.3530f);
        const Report r = read_report(out, DATASET_FASHION_MNIST_CLASSES);
        expect_consistent(&r, cases[i].n, want_images, &want);
        eval_free(&want);
        free(out);
    }
    dataset_free(&all);
    scratch_remove(&dir);
}

static unsigned char *put_be32(unsigned char *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (unsigned char)(v >> (24 - 8 * i));
    return p + 4;
}

// IDX files of the first n images of `d` (uncompressed), under the test set's names in `dir`.
static void write_idx(const ScratchDir *dir, const Dataset *d, int n) {
    char path[PATH_SIZE];
    const size_t pixels = (size_t)n * 28 * 28;
    unsigned char *buf = malloc(16 + pixels);
    unsigned char *p = put_be32(put_be32(put_be32(put_be32(buf, 0x803), (uint32_t)n), 28), 28);
    memcpy(p, d->pixels, pixels);
    FILE *f = fopen(scratch_file(dir, "t10k-images-idx3-ubyte", path, sizeof path), "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fwrite(buf, 1, 16 + pixels, f), 16 + pixels);
    fclose(f);
    p = put_be32(put_be32(buf, 0x801), (uint32_t)n);
    memcpy(p, d->labels, (size_t)n);
    f = fopen(scratch_file(dir, "t10k-labels-idx1-ubyte", path, sizeof path), "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fwrite(buf, 1, 8 + (size_t)n, f), 8 + (size_t)n);
    fclose(f);
    free(buf);
}

// --data DIR: a folder of the same files; all its images when there is no --limit.
static void test_eval_a_folder_of_files(void) {
    ScratchDir dir, data;
    CU_ASSERT_FATAL(scratch_make(&dir));
    CU_ASSERT_FATAL(scratch_make(&data));
    char w[PATH_SIZE];
    scratch_file(&dir, "random.safetensors", w, sizeof w);
    make_grey(w, "10");
    Dataset test = load("test");
    write_idx(&data, &test, 37);
    char *out = RUN_OK("eval", "--weights", w, "--data", data.path);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "on Fashion-MNIST test: all 37 images\n"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "batches of 37: ")); // no larger than the set
    int want_images[Y];
    label_counts(want_images, &test, 0, 37);
    EvalResult want = library_eval(w, &test, 0, 37, 0.2860f, 0.3530f);
    const Report r = read_report(out, DATASET_FASHION_MNIST_CLASSES);
    expect_consistent(&r, 37, want_images, &want);
    eval_free(&want);
    free(out);
    dataset_free(&test);
    scratch_remove(&data);
    scratch_remove(&dir);
}

// Each refusal: one line naming the file or flag and the problem; 1 bad input, 2 bad usage.
static void test_eval_refusals(void) {
    ScratchDir dir, empty;
    CU_ASSERT_FATAL(scratch_make(&dir));
    CU_ASSERT_FATAL(scratch_make(&empty));
    char w[PATH_SIZE], rgb[PATH_SIZE], seven[PATH_SIZE], missing[PATH_SIZE], msg[MSG_SIZE];
    scratch_file(&dir, "random.safetensors", w, sizeof w);
    scratch_file(&dir, "rgb.safetensors", rgb, sizeof rgb);
    scratch_file(&dir, "seven.safetensors", seven, sizeof seven);
    scratch_file(&dir, "missing.safetensors", missing, sizeof missing);
    make_grey(w, "10");
    make_grey(seven, "7");
    CliResult r = VIT_RUN("make-weights", "--dim", "32", "--depth", "1", "--heads", "2", "--img",
                          "32", "--patch", "8", "--classes", "10", "--seed", "1", "--out", rgb);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    cli_result_free(&r);
    // bad input
    snprintf(msg, sizeof msg, "%s: cannot open", missing);
    EXPECT_FAILURE(VIT_RUN("eval", "--weights", missing), 1, msg);
    snprintf(msg, sizeof msg, "%s: the model reads 3×32×32 images (C×S×S); Fashion-MNIST's are "
             "1×28×28", rgb);
    EXPECT_FAILURE(VIT_RUN("eval", "--weights", rgb, "--limit", "10"), 1, msg);
    snprintf(msg, sizeof msg, "%s: the model has 7 classes; Fashion-MNIST has 10", seven);
    EXPECT_FAILURE(VIT_RUN("eval", "--weights", seven, "--limit", "10"), 1, msg);
    snprintf(msg, sizeof msg, "%s/t10k-images-idx3-ubyte.gz: cannot open", empty.path);
    EXPECT_FAILURE(VIT_RUN("eval", "--weights", w, "--data", empty.path), 1, msg,
                   "dataset-fashion-mnist");
    snprintf(msg, sizeof msg, "%s/train-images-idx3-ubyte.gz: cannot open", empty.path);
    EXPECT_FAILURE(VIT_RUN("eval", "--weights", w, "--data", empty.path, "--split", "val"), 1, msg);
    WRITE_GREY(w, "class_names", "[\"a\", \"b\"]");
    snprintf(msg, sizeof msg, "%s: __metadata__ \"class_names\" has 2 names but the model has 10 "
             "classes", w);
    EXPECT_FAILURE(VIT_RUN("eval", "--weights", w, "--limit", "10"), 1, msg);
    WRITE_GREY(w, "std", "-1");
    EXPECT_FAILURE(VIT_RUN("eval", "--weights", w, "--limit", "10"), 1,
                   "__metadata__ \"std\": -1 must be greater than 0");
    // bad usage
    EXPECT_FAILURE(VIT_RUN("eval"), 2, "--weights");
    EXPECT_FAILURE(VIT_RUN("eval", "--weights", w, "--split", "dev"), 2,
                   "--split: 'dev' is not a split (test, val or train)");
    EXPECT_FAILURE(VIT_RUN("eval", "--weights", w, "--batch", "0"), 2, "--batch");
    EXPECT_FAILURE(VIT_RUN("eval", "--weights", w, "--limit", "-1"), 2, "--limit");
    EXPECT_FAILURE(VIT_RUN("eval", "--weights", w, "--data", ""), 2, "--data");
    EXPECT_FAILURE(VIT_RUN("eval", "--weights", w, "--no-such-flag"), 2, "--no-such-flag");
    EXPECT_FAILURE(VIT_RUN("eval", "--weights", w, "--precision", "int4"), 2,
                   "--precision: 'int4' is not fp32, bf16 or int8");
    EXPECT_FAILURE(VIT_RUN("eval", "--weights", w, "--precision", "int8", "--attention"), 2,
                   "--attention takes a backward pass, which needs fp32");
    EXPECT_FAILURE(VIT_RUN("eval", "--weights", w, "extra.png"), 2, "extra.png");
    CU_ASSERT_EQUAL(scratch_count(&empty), 0); // nothing written anywhere
    scratch_remove(&empty);
    scratch_remove(&dir);
}

// The shipped model in int8 and bf16 on the first 300 test images: the accuracy and
// the agreement with fp32 the library gives for the same images and weights.
static void test_eval_precision_agreement(void) {
    char w[1024];
    vit_data_path(w, sizeof w, "models/vit-fashion.safetensors");
    Dataset test = load("test");
    const Dataset part = dataset_slice(&test, 0, 300);
    VitError err;
    Vit f32;
    EvalResult want_f32 = {0};
    CU_ASSERT_EQUAL_FATAL(vit_build(&f32, w, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(eval_run(&f32, &part, 0.2860f, 0.3530f, 100, &want_f32, &err), VIT_OK);
    const char *const names[] = {"bf16", "int8"};
    const LowpPrecision precisions[] = {LOWP_BF16, LOWP_INT8};
    for (int i = 0; i < 2; i++) {
        Vit low;
        EvalResult want = {0};
        CU_ASSERT_EQUAL_FATAL(vit_build(&low, w, &err), VIT_OK);
        CU_ASSERT_EQUAL_FATAL(vit_set_precision(&low, precisions[i], &err), VIT_OK);
        CU_ASSERT_EQUAL_FATAL(eval_run(&low, &part, 0.2860f, 0.3530f, 100, &want, &err), VIT_OK);
        const int same = eval_agreement(&want, &want_f32);
        CU_ASSERT(same >= 290); // the shipped model hardly changes its mind (99.8 % on all 10,000)
        char *out = RUN_OK("eval", "--weights", w, "--limit", "300", "--batch", "100",
                           "--precision", names[i]);
        char line[256];
        snprintf(line, sizeof line, "Linear layers in %s\n", names[i]);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, line));
        snprintf(line, sizeof line, "\naccuracy: %.2f%% (%d of 300)", 100.0 * want.correct / 300,
                 want.correct);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, line));
        snprintf(line, sizeof line, "\nagainst the same model in fp32 on the same images:\n"
                 "  fp32 accuracy: %.2f%%; %s: %.2f%%, a difference of %+.2f points\n"
                 "  top-1 agreement: %.2f%% (the same class for %d of 300 images)\n",
                 100.0 * want_f32.correct / 300, names[i], 100.0 * want.correct / 300,
                 100.0 * (want.correct - want_f32.correct) / 300, 100.0 * same / 300, same);
        if (!strstr(out, line)) fprintf(stderr, "\n    missing:\n%s\n    in:\n%s\n", line, out);
        CU_ASSERT_PTR_NOT_NULL(strstr(out, line));
        free(out);
        eval_free(&want);
        vit_free(&low);
    }
    eval_free(&want_f32);
    vit_free(&f32);
    dataset_free(&test);
}

// The line of `out` after `from` that starts with "  NAME" (the name padded to 28
// columns, as the tables print it), or NULL.
static const char *table_row(const char *out, const char *from, const char *name) {
    char key[64];
    snprintf(key, sizeof key, "\n  %-28s", name);
    const char *at = strstr(out, from);
    return at ? strstr(at, key) : NULL;
}

// The k = 1, 5, 10 columns of a map's row in the first table (its last three numbers).
static bool deletion_row(const char *out, const char *name, double v[MEASURE_KS]) {
    const char *row = table_row(out, "  map ", name);
    if (!row) return false;
    const char *end = strchr(row + 1, '\n');
    char line[160];
    snprintf(line, sizeof line, "%.*s", end ? (int)(end - row - 1) : 150, row + 1);
    for (int k = MEASURE_KS - 1; k >= 0; k--) {
        size_t n = strlen(line);
        while (n > 0 && line[n - 1] == ' ') line[--n] = '\0'; // the padding between columns
        char *last = strrchr(line, ' ');
        if (!last) return false;
        v[k] = strtod(last + 1, NULL);
        *last = '\0';
    }
    return true;
}

// vit eval --attention on the shipped model: every map and model-free baseline in the
// table, with lib's figures for the same images; each map set against the strongest
// baseline at k = 10, its verdict the rule's (beats it only by more than 2 SE).
static void test_eval_attention_against_baselines(void) {
    char w[1024];
    vit_data_path(w, sizeof w, "models/vit-fashion.safetensors");
    // one thread here and there: the same product, the same sums, the same rankings
    char *out = RUN_OK("eval", "--weights", w, "--attention", "--limit", "40", "--draws", "3",
                       "--batch", "20", "--threads", "1");
    const int threads = vit_get_threads();
    vit_set_threads(1);
    // the same measurement in this process: what the table must show
    Vit vit = {0};
    Dataset test = load("test");
    Preprocess pre;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_build(&vit, w, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(image_preprocess_for_model(&pre, NULL, "fashion-mnist", &vit.file, 28, 1,
                                                     &err), VIT_OK);
    const Dataset first = dataset_slice(&test, 0, 40);
    const MeasureOptions opt = {.draws = 3, .baselines = true, .occlusion = false};
    AttentionMeasures m;
    CU_ASSERT_EQUAL_FATAL(attention_measure(&vit, &first, 40, pre.mean[0], pre.std[0], 20, 32, 12,
                                            &opt, &m, &err), VIT_OK);
    const int k10 = MEASURE_KS - 1;
    for (int i = 0; i < MAP_BASELINE_COUNT; i++) {
        const char *name = rollout_map_method_name((MapMethod)i);
        double v[MEASURE_KS] = {0};
        const bool found = deletion_row(out, name, v);
        if (!found) fprintf(stderr, "\n    no row for %s in:\n%s\n", name, out);
        CU_ASSERT(found);
        for (int k = 0; k < MEASURE_KS && found; k++) {
            if (fabs(v[k] - m.prob_top[i][k]) > 6e-4)
                fprintf(stderr, "\n    %s, k = %d: printed %.3f, lib %.4f", name,
                        rollout_measure_ks[k], v[k], m.prob_top[i][k]);
            CU_ASSERT_DOUBLE_EQUAL(v[k], m.prob_top[i][k], 6e-4); // printed to 3 decimals
        }
    }
    CU_ASSERT_PTR_NULL(table_row(out, "  map ", rollout_map_method_name(MAP_OCCLUSION)));
    const MapMethod strongest = attention_measure_strongest_baseline(&m, k10);
    char line[200];
    snprintf(line, sizeof line, "against the strongest baseline at k = 10, the %s, %.3f:",
             rollout_map_method_name(strongest), m.prob_top[strongest][k10]);
    CU_ASSERT_PTR_NOT_NULL(strstr(out, line));
    for (int i = 0; i < MAP_ATTENTION_COUNT; i++) {
        const char *row = table_row(out, "against the strongest", rollout_map_method_name((MapMethod)i));
        CU_ASSERT_PTR_NOT_NULL_FATAL(row);
        double d = 0, se = 0;
        CU_ASSERT_EQUAL(sscanf(row + 3 + 28, "%lf %lf", &d, &se), 2);
        const char *verdict = d < -2 * se ? "beats it" : d > 2 * se ? "worse than it" : "within 2 SE";
        const char *eol = strchr(row + 1, '\n');
        const char *said = strstr(row, verdict);
        CU_ASSERT(said != NULL && (!eol || said < eol));
    }
    vit_set_threads(threads);
    dataset_free(&test);
    vit_free(&vit);
    free(out);
}


// The measurement with one seed on 4 images, in batches of @p batch.
static VitStatus measure_four(AttentionMeasures *m, int batch, int draws, VitError *err) {
    char w[1024];
    vit_data_path(w, sizeof w, "models/vit-fashion.safetensors");
    Vit vit = {0};
    Dataset test = load("test");
    VitStatus s = vit_build(&vit, w, err);
    const Dataset first = dataset_slice(&test, 0, 4);
    const MeasureOptions opt = {.draws = draws, .baselines = true, .occlusion = false};
    if (s == VIT_OK) s = attention_measure(&vit, &first, 4, 0.286f, 0.353f, batch, 32, 5, &opt, m, err);
    dataset_free(&test);
    vit_free(&vit);
    return s;
}

// A batch is a chunk, not part of the answer: the random orders are drawn image after
// image in one sequence, so batches of 1 and of 10,000 give the same measures. And a
// batch of 10,000 at 50 draws, whose orders alone would take 1.2 GB, is measured in
// smaller batches (a child under `ulimit -v` of what it uses plus 400 MB; not under the
// sanitizers, which reserve terabytes of address space).
static void test_eval_attention_batch_is_a_chunk(void) {
    AttentionMeasures one, all;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(measure_four(&one, 1, 3, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(measure_four(&all, 10000, 3, &err), VIT_OK);
    for (int m = 0; m < one.maps; m++)
        for (int k = 0; k < MEASURE_KS; k++)
            CU_ASSERT_DOUBLE_EQUAL(one.prob_top[m][k], all.prob_top[m][k], 1e-5);
    const char *san = getenv("VIT_SANITIZE");
    if (san && *san && strcmp(san, "0") != 0) return;
    fflush(NULL);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        long pages = 0;
        FILE *f = fopen("/proc/self/statm", "r");
        if (!f || fscanf(f, "%ld", &pages) != 1) _exit(4);
        fclose(f);
        rlim_t limit = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE) + (400u << 20);
        struct rlimit rl = {limit, limit};
        if (setrlimit(RLIMIT_AS, &rl) != 0) _exit(5);
        vit_set_threads(1);
        AttentionMeasures big;
        VitError e;
        _exit(measure_four(&big, 10000, 50, &e) == VIT_OK ? 0 : 6);
    }
    int status;
    waitpid(pid, &status, 0);
    CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

CU_TestInfo tests_eval_cli[] = {
    {"help of eval", test_help_of_eval},
    {"eval --attention: a batch is a chunk, held to 256 MiB of orders", test_eval_attention_batch_is_a_chunk},
    {"eval a random model: structure and sums", test_eval_a_random_model},
    {"eval uses the weights' metadata", test_eval_uses_the_weights_metadata},
    {"eval splits: val and train", test_eval_splits},
    {"eval a folder of files", test_eval_a_folder_of_files},
    {"eval refusals", test_eval_refusals},
    {"eval --precision: accuracy and agreement with fp32", test_eval_precision_agreement},
    {"eval --attention: maps against model-free baselines", test_eval_attention_against_baselines},
    CU_TEST_INFO_NULL,
};
