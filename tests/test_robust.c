/**
 * @file test_robust.c
 * @brief Nothing lost, nothing hung: `vit` and `vitview` against a hostile user.
 *
 * Each test runs the real programs (cli_run.h) the way someone careless or
 * malicious would: an output that is one of the inputs, an output that is a
 * device, a FIFO or a link, a signal in the middle of a write, a FIFO where a
 * file should be, a request for terabytes, NaN in the weights, escape bytes
 * in a file's names. Every case must end in one clear line and the right
 * exit status (1 bad input, 2 bad usage, or death by the signal sent), with
 * every file as it was and no temporary file left. Under `make sanitize` the
 * programs run with AddressSanitizer and UndefinedBehaviorSanitizer too.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "check.h"
#include "cli_run.h"
#include "io/safetensors.h"
#include "base/util.h"

enum { PATH_SIZE = 512 };

/* ---------------------------------------------------------------- helpers */

// `vit make-weights` with the given size flags (NULL-terminated) and seed 1.
static void make_weights(const char *out, const char *const *sizes) {
    const char *args[32] = {"make-weights"};
    int n = 1;
    for (int i = 0; sizes[i] && n < 28; i++) args[n++] = sizes[i];
    args[n++] = "--seed", args[n++] = "1", args[n++] = "--out", args[n++] = out;
    args[n] = NULL;
    CliResult r = cli_run(args);
    if (r.status != 0) fprintf(stderr, "\n    make-weights failed: %s", r.err);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    cli_result_free(&r);
}

#define SIZES(...) ((const char *const[]){__VA_ARGS__, NULL})
/** The small model: D 64, L 2, H 4, 32×32 images in 8×8 patches, 10 classes. */
#define SMALL SIZES("--dim", "64", "--depth", "2", "--heads", "4", "--img", "32", "--patch", "8", \
                    "--classes", "10")

static const char *test_image(char *buf) {
    snprintf(buf, PATH_SIZE, "%s/data/img_wide.png", VIT_TEST_DIR);
    return buf;
}

#define VIEWER(...) cli_run_program(cli_viewer_program(), (const char *const[]){__VA_ARGS__, NULL})

// Names in the directory that look like our temporary files ("NAME.tmpXXXXXX").
static int temporaries(const ScratchDir *d) {
    DIR *dir = opendir(d->path);
    if (!dir) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(dir));) n += strstr(e->d_name, ".tmp") != NULL;
    closedir(dir);
    return n;
}

/* --------------------------------------------------------- outputs, inputs */

// --out or --trace naming an input (its path, another spelling, a link to it):
// refused before any work, the input intact.
static void test_an_output_is_never_an_input(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char w[PATH_SIZE], keep[PATH_SIZE], img[PATH_SIZE], x[PATH_SIZE], labels[PATH_SIZE];
    char link_w[PATH_SIZE], hard_w[PATH_SIZE], dotted_w[PATH_SIZE], png[PATH_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    scratch_file(&dir, "keep.safetensors", keep, sizeof keep);
    scratch_file(&dir, "cat.png", img, sizeof img);
    scratch_file(&dir, "x.safetensors", x, sizeof x);
    scratch_file(&dir, "labels.txt", labels, sizeof labels);
    scratch_file(&dir, "link.safetensors", link_w, sizeof link_w);
    scratch_file(&dir, "hard.safetensors", hard_w, sizeof hard_w);
    scratch_file(&dir, "./w.safetensors", dotted_w, sizeof dotted_w);
    make_weights(w, SMALL);
    copy_file(w, keep);
    copy_file(test_image(png), img);
    FILE *f = fopen(labels, "w");
    for (int i = 0; i < 10; i++) fprintf(f, "class number %d\n", i);
    fclose(f);
    CU_ASSERT_EQUAL_FATAL(symlink("w.safetensors", link_w), 0);
    CU_ASSERT_EQUAL_FATAL(link(w, hard_w), 0);
    // an input batch, from a trace's own 'input' (a real file, right shape)
    CliResult r = VIT_RUN("trace", "--weights", w, img, "--out", x);
    CU_ASSERT_EQUAL_FATAL(r.status, 0);
    cli_result_free(&r);

    const char *as_weights[] = {w, dotted_w, link_w, hard_w};
    for (int i = 0; i < 4; i++)
        EXPECT_FAILURE(VIT_RUN("trace", "--weights", w, img, "--out", as_weights[i]), 1,
                       "--out is the same file as --weights", as_weights[i]);
    EXPECT_FAILURE(VIT_RUN("trace", "--weights", w, "--input", x, "--out", x), 1,
                   "--out is the same file as --input");
    EXPECT_FAILURE(VIT_RUN("trace", "--weights", w, img, "--out", img), 1,
                   "--out is the same file as IMAGE");
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, img, "--trace", img), 1,
                   "--trace is the same file as IMAGE");
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, img, "--trace", link_w), 1,
                   "--trace is the same file as --weights");
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, img, "--labels", labels, "--trace", labels),
                   1, "--trace is the same file as --labels");
    CU_ASSERT_TRUE(same_bytes(w, keep));
    CU_ASSERT_TRUE(same_bytes(img, png));
    CU_ASSERT_EQUAL(temporaries(&dir), 0);
    scratch_remove(&dir);
}

// Outputs to a FIFO, a device node (made here; root only), a link to either,
// a link to nothing: refused, each still what it was. A link to a file: written
// through it. New files get 0666 minus the umask; replaced ones keep their mode.
static void test_outputs_respect_what_is_there(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char w[PATH_SIZE], img[PATH_SIZE], fifo[PATH_SIZE], dev[PATH_SIZE], to_dev[PATH_SIZE];
    char dangling[PATH_SIZE], target[PATH_SIZE], to_target[PATH_SIZE], fresh[PATH_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    scratch_file(&dir, "pipe", fifo, sizeof fifo);
    scratch_file(&dir, "null", dev, sizeof dev);
    scratch_file(&dir, "to-null", to_dev, sizeof to_dev);
    scratch_file(&dir, "dangling", dangling, sizeof dangling);
    scratch_file(&dir, "target.safetensors", target, sizeof target);
    scratch_file(&dir, "to-target", to_target, sizeof to_target);
    scratch_file(&dir, "fresh.safetensors", fresh, sizeof fresh);
    make_weights(w, SMALL);
    test_image(img);
    CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
    bool have_dev = mknod(dev, S_IFCHR | 0666, makedev(1, 3)) == 0; // like /dev/null
    CU_ASSERT_EQUAL_FATAL(symlink(have_dev ? "null" : "pipe", to_dev), 0);
    CU_ASSERT_EQUAL_FATAL(symlink("missing.safetensors", dangling), 0);
    EXPECT_FAILURE(VIT_RUN("trace", "--weights", w, img, "--out", fifo), 1, fifo,
                   "is a FIFO (named pipe), not a regular file: refusing to replace it");
    EXPECT_FAILURE(VIT_RUN("make-weights", "--arch", "vit-tiny", "--depth", "1", "--seed", "1",
                           "--out", to_dev),
                   1, to_dev, have_dev ? "is a character device" : "is a FIFO");
    if (have_dev)
        EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, img, "--trace", dev), 1, dev,
                       "is a character device, not a regular file");
    EXPECT_FAILURE(VIT_RUN("trace", "--weights", w, img, "--out", dangling), 1, dangling,
                   "is a symbolic link to a file that does not exist");
    struct stat sb;
    CU_ASSERT_EQUAL(stat(fifo, &sb), 0);
    CU_ASSERT_TRUE(S_ISFIFO(sb.st_mode));
    if (have_dev) CU_ASSERT_TRUE(stat(dev, &sb) == 0 && S_ISCHR(sb.st_mode));
    CU_ASSERT_TRUE(lstat(dangling, &sb) == 0 && S_ISLNK(sb.st_mode));

    // through a link to a regular file, which keeps its mode 0604
    FILE *f = fopen(target, "w");
    fputs("old", f);
    fclose(f);
    CU_ASSERT_EQUAL(chmod(target, 0604), 0);
    CU_ASSERT_EQUAL_FATAL(symlink("target.safetensors", to_target), 0);
    CliResult r = VIT_RUN("trace", "--weights", w, img, "--out", to_target);
    CU_ASSERT_EQUAL(r.status, 0);
    cli_result_free(&r);
    CU_ASSERT_TRUE(lstat(to_target, &sb) == 0 && S_ISLNK(sb.st_mode));
    CU_ASSERT_TRUE(stat(target, &sb) == 0 && (sb.st_mode & 07777) == 0604);
    SafeTensors st;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_open(&st, target, &err), VIT_OK);
    CU_ASSERT_PTR_NOT_NULL(st_find(&st, "logits"));
    st_close(&st);
    // a new file under umask 077 is 0600, as any tool makes it
    mode_t old = umask(077);
    r = VIT_RUN("trace", "--weights", w, img, "--out", fresh);
    umask(old);
    CU_ASSERT_EQUAL(r.status, 0);
    cli_result_free(&r);
    CU_ASSERT_TRUE(stat(fresh, &sb) == 0 && (sb.st_mode & 07777) == 0600);
    CU_ASSERT_EQUAL(temporaries(&dir), 0);
    scratch_remove(&dir);
}

// SIGINT or SIGTERM while a trace of some hundred MB is being written: the
// program dies of the signal, the temporary file goes with it, and the file
// that was at --out before is untouched.
static void interrupt_a_write(int sig) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char w[PATH_SIZE], img[PATH_SIZE], out[PATH_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    scratch_file(&dir, "trace.safetensors", out, sizeof out);
    make_weights(w, SIZES("--arch", "vit-tiny", "--depth", "2", "--classes", "10"));
    FILE *f = fopen(out, "w");
    fputs("the previous trace", f);
    fclose(f);
    // 24 images of 224×224: a trace of about 240 MB
    const char *args[40] = {"trace", "--weights", w, "--out", out};
    int n = 5;
    for (int i = 0; i < 24; i++) args[n++] = test_image(img);
    args[n] = NULL;
    CliChild child;
    CU_ASSERT_FATAL(cli_start(&child, cli_program(), args));
    // wait for the temporary file to appear, then interrupt
    bool seen = false;
    const struct timespec tick = {0, 1000 * 1000};
    for (double t0 = vit_now(); !seen && vit_now() - t0 < CLI_TIMEOUT;) {
        seen = temporaries(&dir) > 0;
        if (!seen && kill(child.pid, 0) != 0) break; // it ended already
        if (!seen) nanosleep(&tick, NULL);
    }
    if (seen) kill(child.pid, sig);
    CliResult r = cli_finish(&child);
    if (!seen) fprintf(stderr, "\n    the write finished before it could be interrupted: %s", r.err);
    CU_ASSERT_TRUE(seen);
    CU_ASSERT_EQUAL(r.status, 128 + sig);
    cli_result_free(&r);
    CU_ASSERT_EQUAL(temporaries(&dir), 0);
    char *kept = read_whole_file(out, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(kept);
    CU_ASSERT_STRING_EQUAL(kept, "the previous trace");
    free(kept);
    scratch_remove(&dir);
}

static void test_a_signal_mid_write_leaves_nothing(void) {
    interrupt_a_write(SIGINT);
    interrupt_a_write(SIGTERM);
}

/* ---------------------------------------------------------- reading, hangs */

// A FIFO where a file should be: refused at once, nothing waits for a writer.
static void test_a_fifo_never_hangs(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char w[PATH_SIZE], img[PATH_SIZE], fifo[PATH_SIZE], out[PATH_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    scratch_file(&dir, "pipe", fifo, sizeof fifo);
    scratch_file(&dir, "out.safetensors", out, sizeof out);
    make_weights(w, SMALL);
    test_image(img);
    CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
    const char *kind = "is a FIFO (named pipe), not ";
    EXPECT_FAILURE(VIT_RUN("info", "--weights", fifo), 1, fifo, kind, "a safetensors file");
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", fifo, img), 1, kind, "a safetensors file");
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, fifo), 1, fifo, kind, "an image");
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, img, "--labels", fifo), 1, kind,
                   "a labels file");
    EXPECT_FAILURE(VIT_RUN("trace", "--weights", w, "--input", fifo, "--out", out), 1, kind,
                   "a safetensors file");
    EXPECT_FAILURE(VIT_RUN("trace", "--weights", w, fifo, "--out", out), 1, kind, "an image");
    EXPECT_VIEWER_FAILURE(VIEWER("--weights", fifo), 1, kind, "a safetensors file");
    EXPECT_VIEWER_FAILURE(VIEWER("--weights", w, fifo), 1, kind, "an image");
    // /dev/zero is endless, not empty
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, img, "--labels", "/dev/zero"), 1,
                   "/dev/zero: is a character device, not a labels file");
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, "/dev/zero"), 1,
                   "/dev/zero: is a character device, not an image");
    CU_ASSERT_EQUAL(scratch_count(&dir), 2); // w and the FIFO: no output
    scratch_remove(&dir);
}

/* ------------------------------------------------------------------ memory */

// Runs that would need terabytes: refused by every command before anything is
// allocated, with the tokens, heads and bytes in the message.
static void test_memory_is_checked_before_it_is_taken(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char w[PATH_SIZE], img[PATH_SIZE], out[PATH_SIZE], x[PATH_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    scratch_file(&dir, "out.safetensors", out, sizeof out);
    scratch_file(&dir, "x.safetensors", x, sizeof x);
    test_image(img);
    // 16,130 tokens and 1,024 heads: 3.2 TB of attention scores for one image
    make_weights(w, SIZES("--dim", "1024", "--heads", "1024", "--mlp-dim", "4", "--depth", "1",
                          "--img", "1016", "--patch", "8", "--classes", "2"));
    const char *need = "a forward pass over 1 image of 1016×1016 pixels (16,130 tokens, 1024 heads;";
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, img), 1, need, "of memory, more than the");
    EXPECT_FAILURE(VIT_RUN("trace", "--weights", w, img, "--out", out), 1, need,
                   "with a copy of every stage");
    EXPECT_VIEWER_FAILURE(VIEWER("--weights", w), 1, need, "of memory, more than the");
    // --img-size beyond the token limit
    char small[PATH_SIZE];
    scratch_file(&dir, "small.safetensors", small, sizeof small);
    make_weights(small, SMALL);
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", small, img, "--img-size", "4096"), 1,
                   "--img-size: image size 4096: 512×512 patches and [cls] make 262,145 tokens, "
                   "more than the 16,384 this implementation allows");
    // an --input claiming 200,000 images, as a sparse file: refused from its header
    char header[256];
    const size_t data = (size_t)200000 * 3 * 32 * 32 * 4;
    int h = snprintf(header, sizeof header, "{\"input\":{\"dtype\":\"F32\",\"shape\":[200000,3,32,"
                     "32],\"data_offsets\":[0,%zu]}}", data);
    FILE *f = fopen(x, "wb");
    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)h >> (8 * i));
    fwrite(len8, 1, 8, f);
    fwrite(header, 1, (size_t)h, f);
    CU_ASSERT_EQUAL(ftruncate(fileno(f), (off_t)(8 + (size_t)h + data)), 0);
    fclose(f);
    EXPECT_FAILURE(VIT_RUN("trace", "--weights", small, "--input", x, "--out", out), 1,
                   "tensor 'input' has shape (200000, 3, 32, 32)", "with B at most 256");
    CU_ASSERT_EQUAL(scratch_count(&dir), 3); // no output of any kind
    scratch_remove(&dir);
}

// --top K over 200,000 classes: a heap, not K passes over the logits.
static void test_top_k_of_many_classes(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char w[PATH_SIZE], img[PATH_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    make_weights(w, SIZES("--dim", "8", "--heads", "1", "--depth", "1", "--img", "16", "--patch",
                          "8", "--classes", "200000", "--std", "1"));
    CliResult r = VIT_RUN("classify", "--weights", w, test_image(img), "--top", "200000");
    CU_ASSERT_EQUAL(r.status, 0);
    int rows = 0;
    double last = 2;
    bool descending = true;
    for (const char *line = strstr(r.out, "label\n"); line && (line = strchr(line, '\n'));) {
        line++;
        char *end; // strtol and strtod, not sscanf, which measures the whole rest of the output
        long rank = strtol(line, &end, 10);
        if (end == line) break;
        double p = strtod(end, &end);
        rows++;
        descending = descending && p <= last && rank == rows;
        last = p;
    }
    CU_ASSERT_EQUAL(rows, 200000);
    CU_ASSERT_TRUE(descending); // every class once, most probable first
    cli_result_free(&r);
    scratch_remove(&dir);
}

/* ----------------------------------------------------------------- numbers */

/** How rewrite_weights() changes a tensor on its way through, or NULL for not at all. */
typedef void (*EditFn)(const char *name, Tensor *t, void *user);

// Copies the weights in `src` to `dst` (metadata too), each tensor passed
// through edit(), and adds a small tensor named `extra` when it is given.
static void rewrite_weights(const char *src, const char *dst, EditFn edit, void *user,
                            const char *extra) {
    SafeTensors st;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_open(&st, src, &err), VIT_OK);
    Tensor *copies = calloc((size_t)st.count + 1, sizeof(Tensor));
    StWriter w = {0};
    for (int i = 0; i < st.meta_count; i++) st_writer_meta(&w, st.meta_keys[i], st.meta_values[i]);
    for (int i = 0; i < st.count; i++) {
        CU_ASSERT_EQUAL_FATAL(st_read_tensor(&st, st.tensors[i].name, &copies[i], &err), VIT_OK);
        if (edit) edit(st.tensors[i].name, &copies[i], user);
        st_writer_add(&w, st.tensors[i].name, &copies[i]);
    }
    if (extra) {
        copies[st.count] = tensor_new(1, 2);
        st_writer_add(&w, extra, &copies[st.count]);
    }
    CU_ASSERT_EQUAL(st_writer_save(&w, dst, &err), VIT_OK);
    st_writer_free(&w);
    for (int i = 0; i <= st.count; i++) tensor_free(&copies[i]);
    free(copies);
    st_close(&st);
}

/** One value of one tensor to replace. */
typedef struct {
    const char *tensor;
    size_t index;
    float value;
} Poison;

static void poison_one(const char *name, Tensor *t, void *user) {
    const Poison *p = user;
    if (!strcmp(name, p->tensor)) t->data[p->index] = p->value;
}

// The weights with one value made NaN or infinite.
static void poison(const char *src, const char *dst, const char *tensor, size_t index, float v) {
    Poison p = {tensor, index, v};
    rewrite_weights(src, dst, poison_one, &p, NULL);
}

// NaN anywhere ends as NaN logits: never "0.0000 class 0", but where it started.
static void test_non_finite_numbers_are_named(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char w[PATH_SIZE], bad[PATH_SIZE], img[PATH_SIZE], out[PATH_SIZE], x[PATH_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    scratch_file(&dir, "bad.safetensors", bad, sizeof bad);
    scratch_file(&dir, "trace.safetensors", out, sizeof out);
    scratch_file(&dir, "x.safetensors", x, sizeof x);
    make_weights(w, SMALL);
    test_image(img);
    // row 5 of the fused qkv weight is a query row: q is the first stage to hold NaN
    poison(w, bad, "blocks.0.attn.qkv.weight", 5 * 64 + 7, NAN);
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", bad, img), 1,
                   "the logits are not finite (10 NaN of 10): the first stage with NaN or "
                   "infinity is blocks.0.attn.q (17 NaN)",
                   "the weights hold them, first in 'blocks.0.attn.qkv.weight' (1 NaN of 12,288 "
                   "values)");
    // an infinite head weight reaches only the logits
    poison(w, bad, "head.weight", 3, INFINITY);
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", bad, img), 1, "is logits (",
                   "first in 'head.weight' (1 infinite value of 640 values)");
    // a trace of NaN is still written (it is how one finds them), with a warning
    poison(w, bad, "blocks.1.mlp.fc2.bias", 0, NAN);
    CliResult r = VIT_RUN("trace", "--weights", bad, img, "--out", out);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "vit: warning: the logits are not finite"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "is blocks.1.mlp.fc2 (17 NaN)"));
    cli_result_free(&r);
    SafeTensors st;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(st_open(&st, out, &err), VIT_OK);
    CU_ASSERT_PTR_NOT_NULL(st_find(&st, "logits"));
    // the trace's own input, with one pixel made infinite, as --input
    Tensor input;
    CU_ASSERT_EQUAL_FATAL(st_read_tensor(&st, "input", &input, &err), VIT_OK);
    st_close(&st);
    input.data[100] = -INFINITY;
    StWriter wr = {0};
    st_writer_add(&wr, "input", &input);
    CU_ASSERT_EQUAL(st_writer_save(&wr, x, &err), VIT_OK);
    st_writer_free(&wr);
    tensor_free(&input);
    r = VIT_RUN("trace", "--weights", w, "--input", x, "--out", out);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "is input (1 infinite value); the input already holds them"));
    cli_result_free(&r);
    // a mean that overflows float32 on the way in
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", w, img, "--mean", "3e38"), 1,
                   "the first stage with NaN or infinity is input");
    scratch_remove(&dir);
}

/* ---------------------------------------------------------------- terminal */

// Escape bytes and newlines in a file's tensor names, labels and file names
// reach the terminal written out, never raw: no retitled or cleared terminal,
// no message split in two.
static void test_hostile_strings_are_escaped(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char w[PATH_SIZE], evil[PATH_SIZE], img[PATH_SIZE], labels[PATH_SIZE], png[PATH_SIZE];
    scratch_file(&dir, "w.safetensors", w, sizeof w);
    scratch_file(&dir, "evil.safetensors", evil, sizeof evil);
    scratch_file(&dir, "labels.txt", labels, sizeof labels);
    scratch_file(&dir, "cat\x1b[2J\nnewline.png", img, sizeof img);
    make_weights(w, SMALL);
    copy_file(test_image(png), img);
    // an extra tensor whose name retitles the terminal and breaks the line
    rewrite_weights(w, evil, NULL, NULL, "evil\x1b]0;pwned\x07\nname");

    CliResult r = VIT_RUN("info", "--weights", evil);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "\n  evil\\x1b]0;pwned\\x07\\nname\n"));
    CU_ASSERT_PTR_NULL(strchr(r.out, '\x1b'));
    CU_ASSERT_PTR_NULL(strchr(r.out, '\x07'));
    cli_result_free(&r);
    // a header whose dtype is an escape sequence: one line, escaped
    FILE *f = fopen(evil, "wb");
    const char *json = "{\"x\":{\"dtype\":\"\\u001b[2J\\n\",\"shape\":[1],\"data_offsets\":[0,4]}}";
    unsigned char len8[8] = {(unsigned char)strlen(json)};
    fwrite(len8, 1, 8, f);
    fputs(json, f);
    fwrite("\0\0\0\0", 1, 4, f);
    fclose(f);
    EXPECT_FAILURE(VIT_RUN("info", "--weights", evil), 1, "has unknown dtype '\\x1b[2J\\n'");
    EXPECT_VIEWER_FAILURE(VIEWER("--weights", evil), 1, "has unknown dtype '\\x1b[2J\\n'");
    // labels and the image's own name, on stdout
    f = fopen(labels, "w");
    for (int i = 0; i < 10; i++) fprintf(f, "label %d \x1b[31mred\x1b[0m\n", i);
    fclose(f);
    r = VIT_RUN("classify", "--weights", w, img, "--labels", labels, "--top", "10");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "cat\\x1b[2J\\nnewline.png  (timm preprocessing"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "label 0 \\x1b[31mred\\x1b[0m\n"));
    CU_ASSERT_PTR_NULL(strchr(r.out, '\x1b'));
    cli_result_free(&r);
    // an error naming the file: still one line
    EXPECT_FAILURE(VIT_RUN("classify", "--weights", img, img), 1, "cat\\x1b[2J\\nnewline.png: ");
    scratch_remove(&dir);
}

CU_TestInfo tests_robust[] = {
    {"an output is never an input", test_an_output_is_never_an_input},
    {"outputs respect what is there", test_outputs_respect_what_is_there},
    {"a signal mid-write leaves nothing", test_a_signal_mid_write_leaves_nothing},
    {"a FIFO never hangs", test_a_fifo_never_hangs},
    {"memory is checked before it is taken", test_memory_is_checked_before_it_is_taken},
    {"top K of 200,000 classes", test_top_k_of_many_classes},
    {"non-finite numbers are named", test_non_finite_numbers_are_named},
    {"hostile strings are escaped", test_hostile_strings_are_escaped},
    CU_TEST_INFO_NULL,
};
