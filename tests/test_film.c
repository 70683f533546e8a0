/**
 * @file test_film.c
 * @brief lib/train/film.h: a training's film, the snapshots kept beside a model.
 *
 * What is checked:
 *   - the names: a model's film folder ("X.safetensors" → "X.film", any other
 *     path + ".film") and a frame's file (epoch-NNN.safetensors), written out
 *     by hand here;
 *   - the epochs a run keeps (0, the powers of two, the last), against lists
 *     written by hand and a plain loop over the epochs;
 *   - film_open() on a folder this test writes: frames written by lib's
 *     safetensors writer from small random models, in no order, among names
 *     that only look like frames (two digits, four, a suffix, a capital, a
 *     folder): the frames and only they, sorted by epoch, each a model that
 *     loads with the numbers it was written with;
 *   - the refusals, VIT_ERR_INPUT naming the folder (escaped): a missing
 *     folder, a file in its place, an empty folder, one with only junk.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "cli_run.h"
#include "io/safetensors.h"
#include "model/vit.h"
#include "train/film.h"

static void expect_string(char *got, const char *want) {
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    if (strcmp(got, want) != 0) fprintf(stderr, "\n    got '%s', want '%s'\n", got, want);
    CU_ASSERT_STRING_EQUAL(got, want);
    free(got);
}

static void test_folder_names(void) {
    expect_string(film_dir_for("runs/fashion.safetensors"), "runs/fashion.film");
    expect_string(film_dir_for("fashion.safetensors"), "fashion.film");
    expect_string(film_dir_for("/a.b/c.d.safetensors"), "/a.b/c.d.film");
    expect_string(film_dir_for("model.bin"), "model.bin.film");
    expect_string(film_dir_for("a.safetensors.bak"), "a.safetensors.bak.film");
    expect_string(film_dir_for("model"), "model.film");
    expect_string(film_dir_for(".safetensors"), ".safetensors.film"); // no empty name
}

static void test_frame_names(void) {
    expect_string(film_frame_path("runs/fashion.film", 0), "runs/fashion.film/epoch-000.safetensors");
    expect_string(film_frame_path("runs/fashion.film", 4), "runs/fashion.film/epoch-004.safetensors");
    expect_string(film_frame_path("f", 36), "f/epoch-036.safetensors");
    expect_string(film_frame_path("f", 999), "f/epoch-999.safetensors");
}

// The epochs film_keeps_epoch() keeps out of 0 … epochs + 1 (and −1), as a list.
static int kept(int epochs, int *out) {
    int n = 0;
    for (int e = -1; e <= epochs + 1; e++)
        if (film_keeps_epoch(e, epochs)) out[n++] = e;
    return n;
}

static void expect_kept(int epochs, const int *want, int count) {
    int got[64];
    const int n = kept(epochs, got);
    CU_ASSERT_EQUAL(n, count);
    for (int i = 0; i < n && i < count; i++) CU_ASSERT_EQUAL(got[i], want[i]);
}

static void test_kept_epochs_by_hand(void) {
    expect_kept(36, (const int[]){0, 1, 2, 4, 8, 16, 32, 36}, 8);
    expect_kept(32, (const int[]){0, 1, 2, 4, 8, 16, 32}, 7); // the last is a power of two
    expect_kept(1, (const int[]){0, 1}, 2);
    expect_kept(3, (const int[]){0, 1, 2, 3}, 4);
    expect_kept(0, (const int[]){0}, 1);
    expect_kept(5, (const int[]){0, 1, 2, 4, 5}, 5);
}

// Every run up to 1100 epochs: a kept epoch is 0, the last, or has one bit
// set (counted bit by bit here), and three digits hold it.
static void test_kept_epochs_by_bits(void) {
    for (int epochs = 0; epochs <= 1100; epochs++)
        for (int e = 0; e <= epochs; e++) {
            int bits = 0;
            for (int v = e; v; v >>= 1) bits += v & 1;
            const bool want = e <= 999 && (e == 0 || e == epochs || bits == 1);
            if (film_keeps_epoch(e, epochs) != want) {
                CU_FAIL("film_keeps_epoch against the bits");
                fprintf(stderr, "\n    epoch %d of %d\n", e, epochs);
                return;
            }
        }
    CU_ASSERT_FALSE(film_keeps_epoch(1024, 2000)); // no name holds it
    CU_ASSERT_FALSE(film_keeps_epoch(-1, 10));
    CU_ASSERT_FALSE(film_keeps_epoch(16, 10));
}

static const VitConfig tiny = {.image_size = 8, .patch_size = 4, .channels = 1, .dim = 8,
                               .depth = 1, .heads = 2, .mlp_dim = 16, .num_classes = 3,
                               .ln_eps = 1e-6f};

// A frame: random weights from `seed`, and the film's two metadata keys.
static bool write_frame(const char *path, int seed, int epoch, int epochs) {
    Vit vit = {0};
    VitError err;
    const VitInit init = vit_init_timm((uint64_t)seed);
    StWriter w = {0};
    char e[16], total[16];
    snprintf(e, sizeof e, "%d", epoch);
    snprintf(total, sizeof total, "%d", epochs);
    bool ok = vit_build_random(&vit, &tiny, &init, &err) == VIT_OK &&
              vit_writer_add(&w, &vit, &err) == VIT_OK;
    st_writer_meta(&w, "train.epoch", e);
    st_writer_meta(&w, "train.epochs", total);
    ok = ok && st_writer_save(&w, path, &err) == VIT_OK;
    if (!ok) fprintf(stderr, "\n    %s\n", err.msg);
    st_writer_free(&w);
    vit_free(&vit);
    return ok;
}

static void touch(const ScratchDir *d, const char *name) {
    char path[1024];
    FILE *f = fopen(scratch_file(d, name, path, sizeof path), "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs("not a frame\n", f);
    fclose(f);
}

static void test_open_lists_the_frames_sorted(void) {
    ScratchDir d;
    CU_ASSERT_TRUE_FATAL(scratch_make(&d));
    static const int epochs[] = {4, 0, 10, 2, 1, 8}; // written out of order
    char path[1024], want[1024];
    for (int i = 0; i < 6; i++) {
        snprintf(want, sizeof want, "epoch-%03d.safetensors", epochs[i]);
        CU_ASSERT_TRUE_FATAL(write_frame(scratch_file(&d, want, path, sizeof path),
                                         100 + epochs[i], epochs[i], 10));
    }
    // names that only look like frames
    static const char *const junk[] = {"epoch-4.safetensors", "epoch-0003.safetensors",
                                       "epoch-003.safetensors.tmp", "Epoch-005.safetensors",
                                       "epoch-00a.safetensors", "epoch-+03.safetensors",
                                       "epoch-003.safetensor", "xepoch-003.safetensors",
                                       "epoch-003", "notes.txt"};
    for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) touch(&d, junk[i]);
    CU_ASSERT_EQUAL(mkdir(scratch_file(&d, "epoch-006.safetensors", path, sizeof path), 0700), 0);

    Film f;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(film_open(&f, d.path, &err), VIT_OK);
    static const int sorted[] = {0, 1, 2, 4, 8, 10};
    CU_ASSERT_EQUAL_FATAL(f.count, 6);
    CU_ASSERT_STRING_EQUAL(f.dir, d.path);
    for (int i = 0; i < 6; i++) {
        CU_ASSERT_EQUAL(f.frames[i].epoch, sorted[i]);
        snprintf(want, sizeof want, "%s/epoch-%03d.safetensors", d.path, sorted[i]);
        CU_ASSERT_STRING_EQUAL(f.frames[i].path, want);
        // each frame is the model written for its epoch: the same first number
        Vit got = {0}, expected = {0};
        const VitInit init = vit_init_timm((uint64_t)(100 + sorted[i]));
        CU_ASSERT_EQUAL_FATAL(vit_build(&got, f.frames[i].path, &err), VIT_OK);
        CU_ASSERT_EQUAL_FATAL(vit_build_random(&expected, &tiny, &init, &err), VIT_OK);
        CU_ASSERT_EQUAL(got.config.dim, tiny.dim);
        CU_ASSERT_EQUAL(got.weights.head_w[0], expected.weights.head_w[0]);
        char e[16];
        snprintf(e, sizeof e, "%d", sorted[i]);
        CU_ASSERT_STRING_EQUAL(st_meta(&got.file, "train.epoch"), e);
        vit_free(&got);
        vit_free(&expected);
    }
    film_free(&f);
    CU_ASSERT_EQUAL(f.count, 0);
    CU_ASSERT_PTR_NULL(f.frames);
    film_free(&f); // twice is harmless
    scratch_remove(&d);
}

// film_open() refuses with VIT_ERR_INPUT, the message naming the folder and saying `why`.
static void expect_refused(const char *dir, const char *why) {
    Film f;
    VitError err;
    CU_ASSERT_EQUAL(film_open(&f, dir, &err), VIT_ERR_INPUT);
    CU_ASSERT_EQUAL(f.count, 0);
    CU_ASSERT_PTR_NULL(f.frames);
    CU_ASSERT_PTR_NULL(f.dir);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, why));
    if (!strstr(err.msg, why)) fprintf(stderr, "\n    message: %s\n", err.msg);
    film_free(&f);
}

static void test_refusals(void) {
    ScratchDir d;
    CU_ASSERT_TRUE_FATAL(scratch_make(&d));
    char missing[1024], file[1024], junk[1024], msg[1100];
    scratch_file(&d, "gone.film", missing, sizeof missing);
    snprintf(msg, sizeof msg, "%s: cannot open", missing);
    expect_refused(missing, msg);
    snprintf(msg, sizeof msg, "%s: no frames", d.path); // empty
    expect_refused(d.path, msg);
    touch(&d, "notes.txt");
    touch(&d, "epoch-1.safetensors");
    snprintf(msg, sizeof msg, "%s: no frames", d.path); // only junk
    expect_refused(d.path, msg);
    scratch_file(&d, "notes.txt", file, sizeof file); // a file where the folder should be
    snprintf(msg, sizeof msg, "%s: cannot open", file);
    expect_refused(file, msg);
    // a name holding an escape sequence is printed escaped
    scratch_file(&d, "bad\033]0;x\007.film", junk, sizeof junk);
    snprintf(msg, sizeof msg, "%s/bad\\x1b]0;x\\x07.film: cannot open", d.path);
    expect_refused(junk, msg);
    scratch_remove(&d);
}

CU_TestInfo tests_film[] = {
    {"a model's film folder", test_folder_names},
    {"a frame's file name", test_frame_names},
    {"the kept epochs, by hand", test_kept_epochs_by_hand},
    {"the kept epochs, by their bits", test_kept_epochs_by_bits},
    {"film_open lists the frames, sorted, and only them", test_open_lists_the_frames_sorted},
    {"film_open refuses missing, empty and junk folders", test_refusals},
    CU_TEST_INFO_NULL,
};
