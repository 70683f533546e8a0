/**
 * @file pictures.c
 * @brief The shipped pictures, the test images, and how each becomes an input
 *        (see pictures.h).
 */
#include "pictures.h"
#include "defaults.h"
#include "io/labels.h"
#include "base/util.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static int by_name(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static bool is_picture_name(const char *name) {
    const char *dot = strrchr(name, '.');
    if (!dot || name[0] == '.') return false;
    static const char *const known[] = {".png", ".jpg", ".jpeg", ".bmp", ".ppm"};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcasecmp(dot, known[i]) == 0) return true;
    return false;
}

// The pictures in the folder of the model's default picture, sorted by name.
static void list_shipped(Pictures *p, int channels) {
    const char *def = viewer_default_image(channels);
    if (!def) return;
    char path[1024];
    vit_data_path(path, sizeof path, def);
    char *slash = strrchr(path, '/');
    if (!slash) return;
    *slash = '\0';
    DIR *dir = opendir(path);
    if (!dir) return;
    int cap = 0;
    for (struct dirent *e; (e = readdir(dir)) != NULL;) {
        if (!is_picture_name(e->d_name)) continue;
        if (p->count == cap) {
            cap = cap ? 2 * cap : 16;
            p->paths = vit_realloc(p->paths, (size_t)cap * sizeof *p->paths);
        }
        char full[2048];
        snprintf(full, sizeof full, "%s/%s", path, e->d_name);
        p->paths[p->count++] = vit_strdup(full);
    }
    closedir(dir);
    if (p->count) qsort(p->paths, (size_t)p->count, sizeof *p->paths, by_name);
}

VitStatus pictures_init(Pictures *p, const Vit *vit, const char *preset, VitError *err) {
    memset(p, 0, sizeof *p);
    p->current = p->test_index = -1;
    const VitConfig *c = &vit->config;
    p->image_size = c->image_size;
    VitStatus s = image_preprocess_for_model(&p->pre, preset,
                                       viewer_default_preset(vit->source, c->channels),
                                       &vit->file, c->image_size, c->channels, err);
    if (s == VIT_ERR_USAGE) { // the preset the flag named: say which flag, as `vit classify`
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        return vit_fail(err, s, "--preprocess: %s", msg);
    }
    if (s != VIT_OK) return s;
    list_shipped(p, c->channels);
    return VIT_OK;
}

void pictures_free(Pictures *p) {
    for (int i = 0; i < p->count; i++) free(p->paths[i]);
    free(p->paths);
    dataset_free(&p->test);
    memset(p, 0, sizeof *p);
}

// An 8-bit picture into a new (1, C, S, S) input.
static Tensor preprocess_into(const Pictures *p, const Image *img) {
    const int S = p->image_size;
    Tensor input = tensor_new(4, 1, p->pre.channels, S, S);
    image_preprocess(input.data, img, &p->pre);
    return input;
}

VitStatus pictures_load_file(Pictures *p, const char *path, Tensor *input, char *desc,
                             size_t size, VitError *err) {
    Image img;
    VitStatus s = image_load(&img, path, err);
    if (s != VIT_OK) return s;
    *input = preprocess_into(p, &img);
    const char *base = strrchr(path, '/');
    char name[96]; // a file name may hold escape sequences: shown escaped
    snprintf(desc, size, "%s %d×%d (%s preprocessing)",
             vit_escape(name, sizeof name, base ? base + 1 : path), img.width, img.height,
             p->pre.name);
    image_free(&img);
    p->current = -1;
    p->test_index = -1;
    snprintf(p->shown, sizeof p->shown, "%s", path);
    for (int i = 0; i < p->count; i++)
        if (strcmp(p->paths[i], path) == 0) p->current = i;
    return VIT_OK;
}

VitStatus pictures_step(Pictures *p, int delta, Tensor *input, char *desc, size_t size,
                        VitError *err) {
    if (p->count == 0)
        return vit_fail(err, VIT_ERR_INPUT, "no shipped pictures for this model (data/%s's "
                        "folder is empty or missing)", VIEWER_GREY_IMAGE);
    int next = p->current < 0 ? (delta >= 0 ? 0 : p->count - 1)
                              : ((p->current + delta) % p->count + p->count) % p->count;
    return pictures_load_file(p, p->paths[next], input, desc, size, err);
}

VitStatus pictures_load_test(Pictures *p, int index, Tensor *input, char *desc, size_t size,
                             VitError *err) {
    if (!p->test.count) {
        VitStatus s = dataset_fashion_mnist_load(&p->test, p->test_dir, "test", err);
        if (s != VIT_OK) {
            char msg[sizeof err->msg];
            snprintf(msg, sizeof msg, "%s", err->msg);
            return vit_fail(err, s, "%s (sudo apt-get install dataset-fashion-mnist)", msg);
        }
    }
    if (index < 0 || index >= p->test.count)
        return vit_fail(err, VIT_ERR_INPUT, "test image %d: Fashion-MNIST's test images are "
                        "0 to %d", index, p->test.count - 1);
    const Dataset *d = &p->test;
    const size_t one = (size_t)d->channels * d->size * d->size;
    Image img = {d->size, d->size, d->channels, (unsigned char *)d->pixels + (size_t)index * one};
    *input = preprocess_into(p, &img); // borrowed pixels: no image_free()
    const int label = d->labels[index];
    snprintf(desc, size, "test image %d (label: %s)", index,
             d->class_names ? d->class_names[label] : "?");
    p->current = -1;
    p->test_index = index;
    p->shown[0] = '\0';
    return VIT_OK;
}

void pictures_paint_pixel(const Pictures *p, Tensor *input, int y, int x, bool white) {
    const int C = input->shape[1], S = input->shape[2];
    for (int c = 0; c < C; c++)
        input->data[((size_t)c * S + y) * S + x] = ((white ? 1.0f : 0.0f) - p->pre.mean[c]) /
                                                   p->pre.std[c];
}

bool pictures_pixel_light(const Pictures *p, const Tensor *input, int y, int x) {
    const int C = input->shape[1], S = input->shape[2];
    float sum = 0; // back from normalised to 0…1: v · std + mean
    for (int c = 0; c < C; c++)
        sum += input->data[((size_t)c * S + y) * S + x] * p->pre.std[c] + p->pre.mean[c];
    return sum / C > 0.5f;
}

void pictures_mask_patch(const Pictures *p, Tensor *input, int patch_size, int patch) {
    const int C = input->shape[1], S = input->shape[2], side = S / patch_size;
    const int y0 = patch / side * patch_size, x0 = patch % side * patch_size;
    for (int c = 0; c < C; c++) {
        const float black = (0.0f - p->pre.mean[c]) / p->pre.std[c];
        float *plane = input->data + (size_t)c * S * S;
        for (int y = y0; y < y0 + patch_size; y++)
            for (int x = x0; x < x0 + patch_size; x++) plane[(size_t)y * S + x] = black;
    }
}
