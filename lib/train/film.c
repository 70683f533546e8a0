/**
 * @file film.c
 * @brief A training's film: its folder, its frames' names, which epochs it
 *        keeps, and its frames listed (see film.h).
 */
#include "train/film.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static const char model_ext[] = ".safetensors";

char *film_dir_for(const char *model_path) {
    const size_t n = strlen(model_path), ext = sizeof model_ext - 1;
    // "X.safetensors" → "X"; a path that is only ".safetensors" keeps it (no empty name)
    const size_t stem = n > ext && !strcmp(model_path + n - ext, model_ext) ? n - ext : n;
    char *dir = vit_malloc(stem + sizeof ".film");
    memcpy(dir, model_path, stem);
    memcpy(dir + stem, ".film", sizeof ".film");
    return dir;
}

char *film_frame_path(const char *dir, int epoch) {
    const size_t size = strlen(dir) + sizeof "/epoch-000" + sizeof model_ext + 16;
    char *path = vit_malloc(size);
    snprintf(path, size, "%s/epoch-%03d%s", dir, epoch, model_ext);
    return path;
}

bool film_keeps_epoch(int epoch, int epochs) {
    if (epoch < 0 || epoch > epochs || epoch > FILM_MAX_EPOCH) return false;
    const bool power_of_two = epoch > 0 && (epoch & (epoch - 1)) == 0;
    return epoch == 0 || power_of_two || epoch == epochs;
}

// "epoch-004.safetensors" → 4; -1 for any other name (two digits, four, a
// sign, a space, "epoch-004.safetensors.tmp" are not frames).
static int frame_epoch(const char *name) {
    static const char prefix[] = "epoch-";
    const size_t p = sizeof prefix - 1;
    if (strncmp(name, prefix, p) != 0) return -1;
    for (size_t i = p; i < p + 3; i++)
        if (name[i] < '0' || name[i] > '9') return -1;
    if (strcmp(name + p + 3, model_ext) != 0) return -1;
    return (name[p] - '0') * 100 + (name[p + 1] - '0') * 10 + (name[p + 2] - '0');
}

static int by_epoch(const void *a, const void *b) {
    const FilmFrame *x = a, *y = b;
    return (x->epoch > y->epoch) - (x->epoch < y->epoch);
}

// Frame `name` of `dir` added to f, if it is a regular file (a folder named
// like a frame is not one).
static void add_frame(Film *f, int *room, const char *dir, int epoch) {
    char *path = film_frame_path(dir, epoch);
    struct stat sb;
    if (stat(path, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        free(path);
        return;
    }
    if (f->count == *room) {
        *room = *room ? 2 * *room : 16;
        f->frames = vit_realloc(f->frames, (size_t)*room * sizeof *f->frames);
    }
    f->frames[f->count++] = (FilmFrame){.epoch = epoch, .path = path};
}

VitStatus film_open(Film *f, const char *dir, VitError *err) {
    *f = (Film){0};
    char shown[512]; // a folder's name may hold escape sequences: printed escaped
    vit_escape(shown, sizeof shown, dir);
    DIR *d = opendir(dir);
    if (!d) return vit_fail(err, VIT_ERR_INPUT, "%s: cannot open the film's folder: %s", shown,
                            strerror(errno));
    int room = 0;
    for (struct dirent *e; (e = readdir(d));) {
        const int epoch = frame_epoch(e->d_name);
        if (epoch >= 0) add_frame(f, &room, dir, epoch);
    }
    closedir(d);
    if (f->count == 0) {
        film_free(f);
        return vit_fail(err, VIT_ERR_INPUT, "%s: no frames in the film's folder (files named "
                        "epoch-NNN.safetensors; vit train writes them)", shown);
    }
    qsort(f->frames, (size_t)f->count, sizeof *f->frames, by_epoch);
    f->dir = vit_strdup(dir);
    return VIT_OK;
}

void film_free(Film *f) {
    for (int i = 0; i < f->count; i++) free(f->frames[i].path);
    free(f->frames);
    free(f->dir);
    *f = (Film){0};
}
