/**
 * @file test_viewer_frames.c
 * @brief The viewer's film (viewer/frames.h), without a terminal: where ( )
 *        go, how a place is named, loading a frame's weights and coming back
 *        to the model as loaded, and what the viewer says without a film.
 *
 * A film is written here: frames of small random models, each from its own
 * seed, so a frame's weights are told apart by a number (the first weight of
 * the head), compared with a model built from the same seed by
 * vit_build_random(), not by the code under test.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "check.h"
#include "cli_run.h"
#include "../viewer/frames.h"
#include "io/safetensors.h"
#include "model/vit.h"
#include "train/film.h"

static const VitConfig tiny = {.image_size = 8, .patch_size = 4, .channels = 1, .dim = 8,
                               .depth = 1, .heads = 2, .mlp_dim = 16, .num_classes = 3,
                               .ln_eps = 1e-6f};

// A model file of random weights from `seed`, of `depth` blocks, with train.epochs
// metadata when epochs ≥ 0.
static void write_model(const char *path, int seed, int depth, int epochs) {
    Vit vit = {0};
    VitError err;
    VitConfig c = tiny;
    c.depth = depth;
    const VitInit init = vit_init_timm((uint64_t)seed);
    StWriter w = {0};
    char total[16];
    snprintf(total, sizeof total, "%d", epochs);
    CU_ASSERT_EQUAL_FATAL(vit_build_random(&vit, &c, &init, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(vit_writer_add(&w, &vit, &err), VIT_OK);
    if (epochs >= 0) st_writer_meta(&w, "train.epochs", total);
    CU_ASSERT_EQUAL_FATAL(st_writer_save(&w, path, &err), VIT_OK);
    st_writer_free(&w);
    vit_free(&vit);
}

// The first weight of the head of the model random seed `seed` draws.
static float head_of_seed(int seed) {
    Vit vit = {0};
    VitError err;
    const VitInit init = vit_init_timm((uint64_t)seed);
    CU_ASSERT_EQUAL_FATAL(vit_build_random(&vit, &tiny, &init, &err), VIT_OK);
    const float w = vit.weights.head_w[0];
    vit_free(&vit);
    return w;
}

// model.safetensors (seed 50, train.epochs `epochs`) and model.film/ with
// frames 0, 1, 2 (seeds 10, 11, 12), and 4 of two blocks (another architecture).
static void write_film(const ScratchDir *d, int epochs) {
    char path[1024];
    write_model(scratch_file(d, "model.safetensors", path, sizeof path), 50, 1, epochs);
    CU_ASSERT_EQUAL_FATAL(mkdir(scratch_file(d, "model.film", path, sizeof path), 0700), 0);
    write_model(scratch_file(d, "model.film/epoch-000.safetensors", path, sizeof path), 10, 1, 4);
    write_model(scratch_file(d, "model.film/epoch-001.safetensors", path, sizeof path), 11, 1, 4);
    write_model(scratch_file(d, "model.film/epoch-002.safetensors", path, sizeof path), 12, 1, 4);
    write_model(scratch_file(d, "model.film/epoch-004.safetensors", path, sizeof path), 13, 2, 4);
}

static void expect_label(const FilmView *v, int place, const char *want) {
    char got[128];
    frames_label(v, place, got, sizeof got);
    if (strcmp(got, want)) fprintf(stderr, "\n    label '%s', want '%s'\n", got, want);
    CU_ASSERT_STRING_EQUAL(got, want);
}

static void test_places_and_labels(void) {
    ScratchDir d;
    CU_ASSERT_TRUE_FATAL(scratch_make(&d));
    write_film(&d, -1); // the model is not vit train's: it comes after the frames
    char path[1024];
    Vit model = {0};
    VitError err;
    FilmView v;
    CU_ASSERT_EQUAL_FATAL(vit_build(&model, scratch_file(&d, "model.safetensors", path,
                                                         sizeof path), &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(frames_find(&v, model.file.label, NULL, &model, &err), VIT_OK);
    CU_ASSERT_TRUE(frames_any(&v));
    CU_ASSERT_EQUAL(v.places, 5);
    CU_ASSERT_EQUAL(v.at, 4);
    expect_label(&v, 0, "epoch 0 of 4 · frame 1/5");
    expect_label(&v, 3, "epoch 4 of 4 · frame 4/5");
    expect_label(&v, 4, "the model as loaded · frame 5/5");
    int to = -1;
    char why[200];
    CU_ASSERT_FALSE(frames_step(&v, 1, &to, why, sizeof why));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "the end of the film"));
    CU_ASSERT_TRUE(frames_step(&v, -1, &to, why, sizeof why));
    CU_ASSERT_EQUAL(to, 3);
    frames_free(&v);
    vit_free(&model);

    // a model of vit train whose run ended at the last frame: it is that frame
    write_model(path, 50, 1, 4);
    CU_ASSERT_EQUAL_FATAL(vit_build(&model, path, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(frames_find(&v, path, NULL, &model, &err), VIT_OK);
    CU_ASSERT_EQUAL(v.places, 4);
    CU_ASSERT_EQUAL(v.at, 3);
    expect_label(&v, 3, "epoch 4 of 4 · frame 4/4 · the model as loaded");
    expect_label(&v, 1, "epoch 1 of 4 · frame 2/4");
    frames_free(&v);
    vit_free(&model);

    // a run of 36 epochs whose film stops at 4: the model after them
    write_model(path, 50, 1, 36);
    CU_ASSERT_EQUAL_FATAL(vit_build(&model, path, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(frames_find(&v, path, NULL, &model, &err), VIT_OK);
    CU_ASSERT_EQUAL(v.places, 5);
    expect_label(&v, 4, "epoch 36 of 36 · frame 5/5 · the model as loaded");
    expect_label(&v, 2, "epoch 2 of 36 · frame 3/5");
    frames_free(&v);
    vit_free(&model);
    scratch_remove(&d);
}

static void test_show_loads_frames_and_comes_back(void) {
    ScratchDir d;
    CU_ASSERT_TRUE_FATAL(scratch_make(&d));
    write_film(&d, -1);
    char path[1024], why[200];
    Vit vit = {0};
    VitError err;
    FilmView v;
    CU_ASSERT_EQUAL_FATAL(vit_build(&vit, scratch_file(&d, "model.safetensors", path,
                                                       sizeof path), &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(frames_find(&v, path, NULL, &vit, &err), VIT_OK);
    const float *loaded_head = vit.weights.head_w;
    CU_ASSERT_EQUAL(loaded_head[0], head_of_seed(50));

    // epoch 4 has two blocks: refused, the model unchanged, and passed over after
    CU_ASSERT_EQUAL(frames_show(&v, &vit, 3, &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "epoch-004.safetensors: another architecture, L=2 (the model's 1): passed over"));
    CU_ASSERT_EQUAL(v.at, 4);
    CU_ASSERT_PTR_EQUAL(vit.weights.head_w, loaded_head);
    int to = -1;
    CU_ASSERT_TRUE(frames_step(&v, -1, &to, why, sizeof why));
    CU_ASSERT_EQUAL(to, 2);

    // epoch 2, then 0: each frame's own weights
    CU_ASSERT_EQUAL_FATAL(frames_show(&v, &vit, 2, &err), VIT_OK);
    CU_ASSERT_EQUAL(v.at, 2);
    CU_ASSERT_EQUAL(vit.weights.head_w[0], head_of_seed(12));
    CU_ASSERT_EQUAL(vit.config.dim, tiny.dim);
    CU_ASSERT_EQUAL_FATAL(frames_show(&v, &vit, 0, &err), VIT_OK);
    CU_ASSERT_EQUAL(vit.weights.head_w[0], head_of_seed(10));
    CU_ASSERT_FALSE(frames_step(&v, -1, &to, why, sizeof why));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "the start of the film"));

    // forward from epoch 2: over the refused epoch 4, to the model as loaded, as it was
    CU_ASSERT_EQUAL_FATAL(frames_show(&v, &vit, 2, &err), VIT_OK);
    CU_ASSERT_TRUE(frames_step(&v, 1, &to, why, sizeof why));
    CU_ASSERT_EQUAL(to, 4);
    CU_ASSERT_EQUAL_FATAL(frames_show(&v, &vit, 4, &err), VIT_OK);
    CU_ASSERT_PTR_EQUAL(vit.weights.head_w, loaded_head); // the same model, not read again
    CU_ASSERT_EQUAL(vit.weights.head_w[0], head_of_seed(50));
    CU_ASSERT_STRING_EQUAL(vit.file.label, path);
    Tensor in = tensor_new(4, 1, 1, 8, 8);
    CU_ASSERT_EQUAL(vit_forward(&vit, &in, NULL, NULL, &err), VIT_OK); // it still runs
    tensor_free(&in);

    // leaving it again and freeing with a frame shown frees both (no leak under ASan)
    CU_ASSERT_EQUAL_FATAL(frames_show(&v, &vit, 1, &err), VIT_OK);
    CU_ASSERT_EQUAL(vit.weights.head_w[0], head_of_seed(11));
    frames_free(&v);
    vit_free(&vit);
    scratch_remove(&d);
}

static void test_without_a_film(void) {
    ScratchDir d;
    CU_ASSERT_TRUE_FATAL(scratch_make(&d));
    char path[1024], dir[1024], why[200];
    VitError err;
    FilmView v;
    int to;
    write_model(scratch_file(&d, "alone.safetensors", path, sizeof path), 1, 1, -1);
    CU_ASSERT_EQUAL(frames_find(&v, path, NULL, NULL, &err), VIT_OK);
    CU_ASSERT_FALSE(frames_any(&v));
    CU_ASSERT_FALSE(frames_step(&v, 1, &to, why, sizeof why));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "no film beside the weights"));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "vit train writes one: X.film/); no alone.film"));
    frames_label(&v, 0, why, sizeof why);
    CU_ASSERT_STRING_EQUAL(why, ""); // the title has no frame
    frames_free(&v);

    CU_ASSERT_EQUAL(frames_find(&v, NULL, NULL, NULL, &err), VIT_OK); // random weights
    CU_ASSERT_FALSE(frames_step(&v, -1, &to, why, sizeof why));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "random weights were never trained (vit train writes"));
    frames_free(&v);

    // a folder beside the weights without frames: no film, and why
    CU_ASSERT_EQUAL_FATAL(mkdir(scratch_file(&d, "alone.film", dir, sizeof dir), 0700), 0);
    CU_ASSERT_EQUAL(frames_find(&v, path, NULL, NULL, &err), VIT_OK);
    CU_ASSERT_FALSE(frames_step(&v, 1, &to, why, sizeof why));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "no frames"));
    frames_free(&v);
    // ... and --film naming it: bad input
    CU_ASSERT_EQUAL(frames_find(&v, path, dir, NULL, &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "alone.film: no frames"));
    CU_ASSERT_FALSE(frames_any(&v));
    frames_free(&v);
    scratch_remove(&d);
}

CU_TestInfo tests_viewer_frames[] = {
    {"the film's places and their names", test_places_and_labels},
    {"( ) load frames and come back to the model as loaded",
     test_show_loads_frames_and_comes_back},
    {"without a film ( ) say why", test_without_a_film},
    CU_TEST_INFO_NULL,
};
