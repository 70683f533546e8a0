/**
 * @file state.c
 * @brief The viewer state's pure operations (see state.h).
 */
#include "state.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "train/train.h" // ops_index_of_max()
#include "base/util.h"

void state_init(State *s, const VitConfig *cfg, size_t budget) {
    memset(s, 0, sizeof *s);
    s->cfg = cfg;
    stepper_init(&s->stepper, cfg->depth);
    history_init(&s->history, s->stepper.count, budget, stepper_find(&s->stepper, "input"));
    history_init(&s->baseline, s->stepper.count, budget, stepper_find(&s->stepper, "input"));
    stepper_init_backward(&s->other_stepper, &s->stepper);
    history_init(&s->other_history, s->other_stepper.count, budget, -1);
    s->heads_off = vit_calloc((size_t)cfg->depth * (size_t)cfg->heads, sizeof *s->heads_off);
    s->masked = vit_calloc((size_t)vit_num_patches(cfg), sizeof *s->masked);
    s->painted = vit_calloc((size_t)cfg->image_size * cfg->image_size, sizeof *s->painted);
    s->moved = vit_malloc((size_t)s->stepper.count * sizeof *s->moved);
    for (int i = 0; i < s->stepper.count; i++) s->moved[i] = NAN;
    s->focus = FOCUS_TREE;
    s->colour = COLOUR_MONO;
    s->temperature = 1.0f;
    s->fingerprint_sort = -1; // layer order
    s->pos_y = s->pos_x = 3;  // near the middle of a grid (held inside it when shown)
    s->opacity = 0.7f;
}

void state_init_train_step(State *s, const TrainStepView *step, size_t budget) {
    const AdamW *opt = &step->copy.opt;
    const char **names = vit_malloc((size_t)opt->count * sizeof *names);
    for (int i = 0; i < opt->count; i++) names[i] = opt->params[i].name;
    stepper_free(&s->other_stepper);
    stepper_init_train_step(&s->other_stepper, &s->stepper, names, opt->count);
    free(names);
    history_free(&s->other_history);
    history_init(&s->other_history, s->other_stepper.count, budget, -1);
    s->step = step;
}

void state_free(State *s) {
    history_free(&s->history);
    history_free(&s->baseline);
    history_free(&s->other_history);
    stepper_free(&s->other_stepper);
    free(s->heads_off);
    free(s->masked);
    free(s->painted);
    free(s->moved);
    stepper_free(&s->stepper);
    labels_free(&s->labels);
    importance_clear(&s->importance);
    occlusion_comparison_free(&s->occlusion);
    patching_free(&s->patching);
    frames_free(&s->film);
}

void state_resize(State *s, int cols, int rows) {
    s->layout = s->hide_tree ? layout_compute_wide(cols, rows) : layout_compute(cols, rows);
}

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

// Does the selected stage show an attention map, whose heads m combines?
static bool shows_attention(const State *s) {
    return view_kind_for(state_node(s)->stage) == VIEW_ATTENTION;
}

Mat state_shown_matrix(const State *s, const Tensor *t, float *scratch) {
    if (stepper_is_update(state_node(s)) && t->ndim == 2) // a weight's update: all of it
        return (Mat){t->data, t->shape[0], t->shape[1]};
    if (shows_attention(s) && s->heads != HEADS_ONE) return attention_map(t, 0, s->heads, scratch);
    return tensor_slice(t, s->plane);
}

void state_plane_name(const State *s, const Tensor *t, char *buf, size_t size) {
    static const char *const rgb[] = {"R", "G", "B"};
    buf[0] = '\0';
    if (t->ndim != 4) return;
    const int planes = t->shape[1];
    if (!strcmp(state_node(s)->stage->name, "input"))
        snprintf(buf, size, "channel %d of %d (%s)", s->plane, planes,
                 planes == 3 ? rgb[s->plane % 3] : "grey");
    else if (shows_attention(s) && s->heads != HEADS_ONE)
        snprintf(buf, size, "%s over heads", s->heads == HEADS_MEAN ? "mean" : "max");
    else snprintf(buf, size, "head %d of %d", s->plane, planes);
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
    s->cursor_row = clampi(s->cursor_row, 0, m.rows - 1);
    s->cursor_col = clampi(s->cursor_col, 0, m.cols - 1);
    s->key = clampi(s->key, 0, vit_num_tokens(s->cfg) - 1);
}

void state_show(State *s, bool backward) {
    if (s->backward == backward) return;
    const Stepper st = s->stepper;
    const History h = s->history;
    s->stepper = s->other_stepper, s->other_stepper = st;
    s->history = s->other_history, s->other_history = h;
    s->backward = backward;
    state_clamp(s);
}

const History *state_forward_history(const State *s) {
    return s->backward ? &s->other_history : &s->history;
}

const Stepper *state_forward_stepper(const State *s) {
    return s->backward ? &s->other_stepper : &s->stepper;
}

const HistEntry *state_gradient_of(const State *s, const char *forward_name) {
    const Stepper *st = s->backward ? &s->stepper : &s->other_stepper;
    const History *h = s->backward ? &s->history : &s->other_history;
    char name[64];
    snprintf(name, sizeof name, VIT_GRAD_PREFIX "%s", forward_name);
    return history_get(h, stepper_find(st, name));
}

float state_moved(const State *s, int node) { return s->backward ? NAN : s->moved[node]; }

bool state_compare(const State *s, const HistEntry *e, float *out) {
    if (!s->compare[0] || !e || !e->kept) return false;
    const HistEntry *ref = history_get(&s->history, stepper_find(&s->stepper, s->compare));
    if (!ref || !ref->kept || ref == e || ref->t.ndim != e->t.ndim) return false;
    for (int d = 0; d < e->t.ndim; d++)
        if (ref->t.shape[d] != e->t.shape[d]) return false;
    for (size_t i = 0; i < e->t.numel; i++) out[i] = e->t.data[i] - ref->t.data[i];
    return true;
}

void state_cursor_text(const State *s, Mat m, char *buf, size_t size) {
    const int grid = state_grid(s), N = vit_num_tokens(s->cfg);
    char row[48], col[48];
    if (view_kind_for(state_node(s)->stage) == VIEW_ATTENTION) {
        token_label(row, sizeof row, s->query, grid);
        token_label(col, sizeof col, s->key, grid);
        const float v = s->query < m.rows && s->key < m.cols ? m.data[(size_t)s->query * m.cols + s->key]
                                                             : NAN;
        snprintf(buf, size, "q %s → k %s = %.9g", row, col, (double)v); // the caption names the head
        return;
    }
    const int r = s->cursor_row < m.rows ? s->cursor_row : m.rows - 1;
    const int c = s->cursor_col < m.cols ? s->cursor_col : m.cols - 1;
    if (m.rows == N) token_label(row, sizeof row, r, grid);
    else snprintf(row, sizeof row, "row %d", r);
    snprintf(col, sizeof col, "column %d", c);
    char plane[48] = ""; // q, k, v: which head; the input: which channel
    const HistEntry *e = state_entry(s);
    if (e && e->t.ndim == 4) state_plane_name(s, &e->t, plane, sizeof plane);
    snprintf(buf, size, "%s%s%s · %s = %.9g", plane, plane[0] ? " · " : "", row, col,
             (double)m.data[(size_t)r * m.cols + c]);
}

MatStats mat_stats(Mat m) {
    MatStats st = {0};
    double sum = 0, sq = 0;
    size_t n = 0;
    st.min = INFINITY, st.max = -INFINITY;
    for (size_t i = 0; i < (size_t)m.rows * m.cols; i++) {
        const float v = m.data[i];
        if (!isfinite(v)) continue;
        st.min = fminf(st.min, v), st.max = fmaxf(st.max, v);
        sum += v, sq += (double)v * v, n++;
    }
    if (!n) return (MatStats){0};
    st.mean = sum / (double)n;
    st.std = sqrt(fmax(0, sq / (double)n - st.mean * st.mean));
    return st;
}

// The first index of a window of `size` out of `total` that keeps `at` central.
static int window_start(int at, int size, int total) {
    if (size >= total) return 0;
    int start = at - size / 2;
    return start < 0 ? 0 : start + size > total ? total - size : start;
}

Mat mat_window(Mat m, int row, int col, int rows, int cols, float *buf, int *r0, int *c0) {
    rows = rows < m.rows ? rows : m.rows, cols = cols < m.cols ? cols : m.cols;
    *r0 = window_start(row, rows, m.rows), *c0 = window_start(col, cols, m.cols);
    for (int i = 0; i < rows; i++)
        memcpy(buf + (size_t)i * cols, m.data + (size_t)(*r0 + i) * m.cols + *c0,
               (size_t)cols * sizeof *buf);
    return (Mat){buf, rows, cols};
}

void softmax_at_temperature(float *out, const float *scaled, int N, float T) {
    for (int k = 0; k < N; k++) out[k] = scaled[k] / T; // exact at T = 1
    softmax(out, out, 1, N);
}

double entropy_nats(const float *p, int N) {
    double h = 0;
    for (int k = 0; k < N; k++)
        if (p[k] > 0) h -= p[k] * log(p[k]);
    return h;
}

void token_label(char *buf, size_t size, int token, int grid) {
    if (token == 0) snprintf(buf, size, "cls");
    else snprintf(buf, size, "token %d (%d,%d)", token, (token - 1) / grid, (token - 1) % grid);
}

int token_step(int token, int dr, int dc, int grid) {
    if (token == 0) return dr || dc ? 1 : 0; // cls sits outside the grid: enter it
    int row = (token - 1) / grid + dr, col = (token - 1) % grid + dc;
    row = row < 0 ? 0 : row >= grid ? grid - 1 : row;
    col = col < 0 ? 0 : col >= grid ? grid - 1 : col;
    return 1 + row * grid + col;
}

bool state_whatif(const State *s) {
    const int LH = s->cfg->depth * s->cfg->heads, P = vit_num_patches(s->cfg);
    for (int i = 0; i < LH; i++)
        if (s->heads_off[i]) return true;
    for (int p = 0; p < P; p++)
        if (s->masked[p]) return true;
    return state_painted(s) > 0 || s->precision != LOWP_FP32;
}

void state_close_views(State *s) {
    s->lens = s->neuron = s->fingerprints = s->positions = s->painting = false;
    s->importance.shown = false;
    occlusion_comparison_free(&s->occlusion);
    patching_free(&s->patching);
}

int state_painted(const State *s) {
    const int n = s->cfg->image_size * s->cfg->image_size;
    int painted = 0;
    for (int i = 0; i < n; i++) painted += s->painted[i] != 0;
    return painted;
}

int state_first_moved(const State *s) {
    const Stepper *st = state_forward_stepper(s);
    for (int i = 0; i < st->count; i++)
        if (s->moved[i] > 0) return i;
    return -1;
}

// Append "item" to buf, comma-separated; after `most` items only count the rest.
static void list_add(char *buf, size_t size, int *items, int most, int *more, const char *item) {
    if (*items >= most) {
        (*more)++;
        return;
    }
    size_t len = strlen(buf);
    snprintf(buf + len, size - len, "%s%s", *items ? ", " : "", item);
    (*items)++;
}

void state_whatif_text(const State *s, char *buf, size_t size) {
    const int L = s->cfg->depth, H = s->cfg->heads, P = vit_num_patches(s->cfg);
    int items = 0, more = 0;
    char item[96];
    buf[0] = '\0';
    if (s->precision != LOWP_FP32) { // first: it changes every stage from the first Linear on
        snprintf(item, sizeof item, "Linear layers in %s", lowp_precision_name(s->precision));
        list_add(buf, size, &items, 3, &more, item);
    }
    for (int l = 0; l < L; l++) {
        int off = 0;
        for (int h = 0; h < H; h++) off += s->heads_off[l * H + h];
        if (off == H) {
            snprintf(item, sizeof item, "blocks.%d's attention off", l);
            list_add(buf, size, &items, 3, &more, item);
        } else
            for (int h = 0; h < H; h++)
                if (s->heads_off[l * H + h]) {
                    snprintf(item, sizeof item, "head %d of blocks.%d off", h, l);
                    list_add(buf, size, &items, 3, &more, item);
                }
    }
    for (int p = 0; p < P; p++)
        if (s->masked[p]) {
            char token[48];
            token_label(token, sizeof token, p + 1, state_grid(s));
            snprintf(item, sizeof item, "%s masked", token);
            list_add(buf, size, &items, 3, &more, item);
        }
    const int painted = state_painted(s);
    if (painted) {
        snprintf(item, sizeof item, "%d pixel%s painted", painted, painted == 1 ? "" : "s");
        list_add(buf, size, &items, 3, &more, item);
    }
    if (more) {
        size_t len = strlen(buf);
        snprintf(buf + len, size - len, " and %d more", more);
    }
}

void logits_probs(double *p, const Tensor *logits) { logits_probs_at(p, logits, 1.0); }

void logits_probs_at(double *p, const Tensor *logits, double T) {
    const int Y = logits->shape[logits->ndim - 1];
    const float *z = logits->data;
    double zmax = -INFINITY, sum = 0;
    for (int k = 0; k < Y; k++) zmax = fmax(zmax, z[k]);
    // (z − max) / T: the largest exponent is 0 at every T; dividing by 1 is exact
    for (int k = 0; k < Y; k++) sum += p[k] = exp((z[k] - zmax) / T);
    for (int k = 0; k < Y; k++) p[k] /= sum;
}

// "Ankle boot 0.9954 → 0.9721", and the new prediction if it changed.
static void logits_change(const State *s, char *buf, size_t size) {
    const int node = stepper_find(state_forward_stepper(s), "logits");
    const HistEntry *now = history_get(state_forward_history(s), node),
                    *was = history_get(&s->baseline, node);
    buf[0] = '\0';
    if (!now || !was || !now->kept || !was->kept) return;
    const int Y = s->cfg->num_classes;
    double *p = vit_malloc(2 * (size_t)Y * sizeof *p), *q = p + Y;
    logits_probs(p, &was->t);
    logits_probs(q, &now->t);
    // the largest probability is the largest logit's
    const int top = ops_index_of_max(was->t.data, Y), now_top = ops_index_of_max(now->t.data, Y);
    char a[64], b[64];
    const char *name = labels_name(&s->labels, top), *now_name = labels_name(&s->labels, now_top);
    if (!name || !name[0]) snprintf(a, sizeof a, "class %d", top), name = a;
    if (!now_name || !now_name[0]) snprintf(b, sizeof b, "class %d", now_top), now_name = b;
    int n = snprintf(buf, size, "%s %.4f → %.4f", name, p[top], q[top]);
    if (now_top != top && n > 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, " · now %s (%.4f)", now_name, q[now_top]);
    free(p);
}

void state_whatif_summary(const State *s, char *buf, size_t size) {
    char what[160], logits[160];
    state_whatif_text(s, what, sizeof what);
    logits_change(s, logits, sizeof logits);
    const int first = state_first_moved(s);
    // the outcome first: the title row may cut the end
    if (first < 0) snprintf(buf, size, "what-if: %s%snothing changed · %s · u undoes", logits,
                            logits[0] ? " · " : "", what);
    else snprintf(buf, size, "what-if: %s%s%s · first change: %s · u undoes", logits,
                  logits[0] ? " · " : "", what, state_forward_stepper(s)->nodes[first].name);
}

void state_whatif_clear(State *s) {
    memset(s->heads_off, 0, (size_t)s->cfg->depth * s->cfg->heads * sizeof *s->heads_off);
    memset(s->masked, 0, (size_t)vit_num_patches(s->cfg) * sizeof *s->masked);
    memset(s->painted, 0, (size_t)s->cfg->image_size * s->cfg->image_size * sizeof *s->painted);
    s->precision = LOWP_FP32;
    history_clear(&s->baseline);
    for (int i = 0; i < state_forward_stepper(s)->count; i++) s->moved[i] = NAN;
}

int state_grid(const State *s) { return s->cfg->image_size / s->cfg->patch_size; }
