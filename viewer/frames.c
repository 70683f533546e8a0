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
                 "(vit train --out X.safetensors keeps one in X.film/)");
        return VIT_OK;
    }
    char *dir = film_dir_for(weights), shown[96];
    vit_escape(shown, sizeof shown, dir);
    struct stat sb;
    VitError why;
    if (stat(dir, &sb) != 0)
        snprintf(v->none, sizeof v->none, "no film beside the weights (%s): vit train keeps "
                 "one, epochs 0 1 2 4 8 … and the last", shown);
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
    char here[96];
    frames_label(v, v->at, here, sizeof here);
    snprintf(why, size, "%s: the %s of the film, %s", here, dir > 0 ? "end" : "start",
             dir > 0 ? "( goes back" : ") goes on");
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

// "S=28 p=7 C=1 D=64 L=4 H=4 M=128 Y=10": a model's sizes, for a refusal.
static void sizes(char *buf, size_t size, const VitConfig *c) {
    snprintf(buf, size, "S=%d p=%d C=%d D=%d L=%d H=%d M=%d Y=%d", c->image_size, c->patch_size,
             c->channels, c->dim, c->depth, c->heads, c->mlp_dim, c->num_classes);
}

static bool same_architecture(const VitConfig *a, const VitConfig *b) {
    return a->image_size == b->image_size && a->patch_size == b->patch_size &&
           a->channels == b->channels && a->dim == b->dim && a->depth == b->depth &&
           a->heads == b->heads && a->mlp_dim == b->mlp_dim &&
           a->num_classes == b->num_classes && a->ln_eps == b->ln_eps;
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
    if (s == VIT_OK && !same_architecture(&next.config, &vit->config)) {
        char theirs[96], ours[96], shown[160];
        sizes(theirs, sizeof theirs, &next.config);
        sizes(ours, sizeof ours, &vit->config);
        s = vit_fail(err, VIT_ERR_INPUT, "%s: another architecture (%s; the model's %s): "
                     "passed over", vit_escape(shown, sizeof shown, path), theirs, ours);
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
