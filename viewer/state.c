/**
 * @file state.c
 * @brief The viewer state's pure operations (see state.h).
 */
#include "state.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void state_init(State *s, const VitConfig *cfg, size_t budget) {
    memset(s, 0, sizeof *s);
    s->cfg = cfg;
    stepper_init(&s->stepper, cfg->depth);
    history_init(&s->history, s->stepper.count, budget, stepper_find(&s->stepper, "input"));
    s->focus = FOCUS_TREE;
    s->colour = COLOUR_MONO;
}

void state_free(State *s) {
    history_free(&s->history);
    stepper_free(&s->stepper);
    labels_free(&s->labels);
}

void state_resize(State *s, int cols, int rows) { s->layout = layout_compute(cols, rows); }

void state_message(State *s, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->message, sizeof s->message, fmt, ap);
    va_end(ap);
}

const PipeNode *state_node(const State *s) { return &s->stepper.nodes[s->stepper.selected]; }

const HistEntry *state_entry(const State *s) {
    return history_get(&s->history, s->stepper.selected);
}

ViewKind view_kind_for(const VitStage *stage) {
    const char *n = stage->name;
    if (!strcmp(n, "input")) return VIEW_IMAGE;
    if (!strcmp(n, "patches")) return VIEW_PATCHES;
    if (!strcmp(n, "attn.scores") || !strcmp(n, "attn.scaled") || !strcmp(n, "attn.probs"))
        return VIEW_ATTENTION;
    if (!strcmp(n, "pre_logits")) return VIEW_VECTOR;
    if (!strcmp(n, "logits")) return VIEW_LOGITS;
    return VIEW_MATRIX;
}

int tensor_planes(const Tensor *t) { return t->ndim == 4 ? t->shape[1] : 1; }

Mat tensor_slice(const Tensor *t, int plane) {
    switch (t->ndim) {
    case 4: { // (B, H, R, C): batch 0, plane `plane`
        size_t size = (size_t)t->shape[2] * t->shape[3];
        return (Mat){t->data + (size_t)plane * size, t->shape[2], t->shape[3]};
    }
    case 3: return (Mat){t->data, t->shape[1], t->shape[2]}; // (B, R, C): batch 0
    case 2: return (Mat){t->data, 1, t->shape[1]};           // (B, X): one row
    case 1: return (Mat){t->data, 1, t->shape[0]};
    default: return (Mat){t->data, 1, 1};
    }
}

Mat attention_map(const Tensor *t, int plane, HeadMode mode, float *scratch) {
    if (mode == HEADS_ONE || t->ndim != 4) return tensor_slice(t, plane);
    const int H = t->shape[1];
    const size_t nn = (size_t)t->shape[2] * t->shape[3];
    for (size_t i = 0; i < nn; i++) {
        float acc = mode == HEADS_MAX ? -INFINITY : 0.0f;
        for (int h = 0; h < H; h++) {
            float v = t->data[(size_t)h * nn + i];
            acc = mode == HEADS_MAX ? fmaxf(acc, v) : acc + v;
        }
        scratch[i] = mode == HEADS_MAX ? acc : acc / (float)H;
    }
    return (Mat){scratch, t->shape[2], t->shape[3]};
}

int numbers_rows(Mat m) {
    return m.rows == 1 ? (m.cols + NUMBERS_PER_LINE - 1) / NUMBERS_PER_LINE : m.rows;
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

void state_clamp(State *s) {
    const HistEntry *e = state_entry(s);
    if (!e) return;
    s->plane = clampi(s->plane, 0, tensor_planes(&e->t) - 1);
    s->query = clampi(s->query, 0, vit_num_tokens(s->cfg) - 1);
    Mat m = tensor_slice(&e->t, s->plane);
    s->scroll_row = clampi(s->scroll_row, 0, numbers_rows(m) - 1);
    s->scroll_col = clampi(s->scroll_col, 0, m.rows == 1 ? 0 : m.cols - 1);
    s->rank_offset = clampi(s->rank_offset, 0, s->cfg->num_classes - 1);
}

int state_grid(const State *s) { return s->cfg->image_size / s->cfg->patch_size; }
