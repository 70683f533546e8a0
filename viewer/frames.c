/**
 * @file frames.c
 * @brief The training's film in the viewer (see frames.h).
 */
#include "frames.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "io/safetensors.h"

// The run's epochs, from the model's metadata; -1 when it has none (not one of
// vit train's, or random weights).
static int run_epochs(const Vit *model) {
    const char *text = model && model->file.label ? st_meta(&model->file, "train.epochs") : NULL;
    int epochs;
    VitError ignored;
    if (!text || vit_parse_int(&epochs, text, 0, 1 << 30, "train.epochs", &ignored) != VIT_OK)
        return -1;
    return epochs;
}

// The places, once the film is open: the frames, then the model as loaded,
// unless the last frame is the run's last epoch (the same weights as the model).
static void frames_place(FilmView *v, const Vit *model) {
    const int n = v->film.count, last = v->film.frames[n - 1].epoch;
    v->run_epochs = run_epochs(model);
    v->places = v->run_epochs == last ? n : n + 1;
    v->loaded = v->at = v->places - 1;
    v->epochs = v->run_epochs >= last ? v->run_epochs : last;
    v->refused = vit_calloc((size_t)v->places, sizeof *v->refused);
}

VitStatus frames_find(FilmView *v, const char *weights, const char *film_dir, const Vit *model,
                      VitError *err) {
    *v = (FilmView){0};
    if (film_dir) { // asked for: it must be a film
        VitStatus s = film_open(&v->film, film_dir, err);
        if (s == VIT_OK) frames_place(v, model);
        return s;
    }
    if (!weights) {
        snprintf(v->none, sizeof v->none, "no film: random weights were never trained "
                 "(vit train writes one)"); // short: the title row shows it
        return VIT_OK;
    }
    char *dir = film_dir_for(weights), shown[96];
    const char *base = strrchr(dir, '/'); // the folder's own name: the title row is short
    vit_escape(shown, sizeof shown, base ? base + 1 : dir);
    struct stat sb;
    VitError why;
    if (stat(dir, &sb) != 0)
        snprintf(v->none, sizeof v->none, "no film beside the weights (vit train writes one: "
                 "X.film/); no %s", shown);
    else if (film_open(&v->film, dir, &why) != VIT_OK)
        vit_escape(v->none, sizeof v->none, why.msg);
    else frames_place(v, model);
    free(dir);
    return VIT_OK;
}

bool frames_any(const FilmView *v) { return v->film.count > 0; }

bool frames_step(const FilmView *v, int dir, int *to, char *why, size_t size) {
    if (!frames_any(v)) {
        snprintf(why, size, "%s", v->none);
        return false;
    }
    for (int p = v->at + dir; p >= 0 && p < v->places; p += dir)
        if (!v->refused[p]) {
            *to = p;
            return true;
        }
    snprintf(why, size, "the %s of the film: %s", dir > 0 ? "end" : "start",
             dir > 0 ? "( goes back" : ") goes on"); // the title row says which frame
    return false;
}

// The epoch of place p: a frame's, or for the model as loaded after the frames, the run's.
static int place_epoch(const FilmView *v, int p) {
    return p < v->film.count ? v->film.frames[p].epoch : v->epochs;
}

void frames_label(const FilmView *v, int place, char *buf, size_t size) {
    if (!frames_any(v)) {
        buf[0] = '\0';
        return;
    }
    if (place == v->loaded && v->run_epochs < 0) // not of vit train's: its epoch is not known
        snprintf(buf, size, "the model as loaded · frame %d/%d", place + 1, v->places);
    else snprintf(buf, size, "epoch %d of %d · frame %d/%d%s", place_epoch(v, place), v->epochs,
                  place + 1, v->places, place == v->loaded ? " · the model as loaded" : "");
}

// How two architectures differ, size by size: "L=1 (the model's 2)", "" when
// they are the same. Short: the title row shows it.
static void differences(char *buf, size_t size, const VitConfig *a, const VitConfig *b) {
    const struct {
        const char *name;
        int a, b;
    } sizes[] = {{"S", a->image_size, b->image_size}, {"p", a->patch_size, b->patch_size},
                 {"C", a->channels, b->channels},     {"D", a->dim, b->dim},
                 {"L", a->depth, b->depth},           {"H", a->heads, b->heads},
                 {"M", a->mlp_dim, b->mlp_dim},       {"Y", a->num_classes, b->num_classes}};
    size_t len = 0;
    buf[0] = '\0';
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0] && len < size; i++)
        if (sizes[i].a != sizes[i].b)
            len += (size_t)snprintf(buf + len, size - len, "%s%s=%d (the model's %d)",
                                    len ? ", " : "", sizes[i].name, sizes[i].a, sizes[i].b);
    if (!buf[0] && a->ln_eps != b->ln_eps && size > 0)
        snprintf(buf, size, "LayerNorm eps %g (the model's %g)", (double)a->ln_eps,
                 (double)b->ln_eps);
}

VitStatus frames_show(FilmView *v, Vit *vit, int to, VitError *err) {
    if (to == v->at) return VIT_OK;
    if (to == v->loaded) { // back to the model as loaded, kept since it was left
        vit_free(vit);
        *vit = v->kept;
        v->kept = (Vit){0};
        v->at = to;
        return VIT_OK;
    }
    const char *path = v->film.frames[to].path;
    Vit next = {0};
    VitStatus s = vit_build(&next, path, err);
    char differ[200];
    if (s == VIT_OK) differences(differ, sizeof differ, &next.config, &vit->config);
    if (s == VIT_OK && differ[0]) { // the file's name only: the title row is short
        const char *base = strrchr(path, '/');
        char shown[64];
        s = vit_fail(err, VIT_ERR_INPUT, "%s: another architecture, %s: passed over",
                     vit_escape(shown, sizeof shown, base ? base + 1 : path), differ);
    }
    if (s != VIT_OK) {
        vit_free(&next);
        v->refused[to] = true;
        return s;
    }
    if (v->at == v->loaded) v->kept = *vit; // the model as loaded, until ( ) come back to it
    else vit_free(vit);                      // the frame shown until now
    *vit = next;
    v->at = to;
    return VIT_OK;
}

void frames_free(FilmView *v) {
    film_free(&v->film);
    free(v->refused);
    vit_free(&v->kept);
    *v = (FilmView){0};
}
