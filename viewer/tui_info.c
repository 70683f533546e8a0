/**
 * @file tui_info.c
 * @brief The facts of the selected stage: name, formula, PyTorch line, shape
 *        with named axes, statistics, FLOPs, bytes and time.
 */
#include "tui.h"
#include "format.h"

#include <stdio.h>
#include <string.h>

// "shape (B=1, H=3, N=197, N=197) · 116 k values · 465.7 kB"
static void shape_line(const State *s, int y, Rect r, const PipeNode *n, const HistEntry *e) {
    char shape[128], bytes[VIT_NUM_BUF], count[32];
    if (e) {
        fmt_shape_axes(shape, sizeof shape, &e->t, n->stage->axes);
        vit_bytes(bytes, (double)e->t.numel * sizeof(float));
        fmt_si(count, sizeof count, (double)e->t.numel);
        ui_printf(y, r.x, r.w, ROLE_NORMAL, "shape  %s · %s values · %s", shape, count, bytes);
        return;
    }
    if (stepper_is_update(n)) {
        ui_text(y, r.x, r.w, ROLE_PENDING, "shape  the parameter's, when AdamW reaches it");
        return;
    }
    int dims[4];
    int nd = vit_stage_shape(s->cfg, 1, n->name, dims); // 0 for the viewer's own "patches"
    Tensor t = {.ndim = nd};
    memcpy(t.shape, dims, sizeof dims);
    fmt_shape_axes(shape, sizeof shape, &t, n->stage->axes);
    ui_printf(y, r.x, r.w, ROLE_PENDING, "shape  %s when computed", nd ? shape : n->stage->axes);
}

static void stats_line(const State *s, int y, Rect r, const HistEntry *e) {
    if (!e) {
        ui_text(y, r.x, r.w, ROLE_PENDING,
                "not computed yet: s steps, c runs to the next breakpoint");
        return;
    }
    const TensorStats *st = &e->stats;
    char line[256];
    // four significant digits when they fit, else three
    snprintf(line, sizeof line, "min %.4g  max %.4g  mean %.3g  std %.3g  NaN %zu  Inf %zu",
             (double)st->min, (double)st->max, st->mean, st->std, st->n_nan, st->n_inf);
    if ((int)strlen(line) > r.w)
        snprintf(line, sizeof line, "min %.3g max %.3g mean %.2g std %.2g NaN %zu Inf %zu",
                 (double)st->min, (double)st->max, st->mean, st->std, st->n_nan, st->n_inf);
    ui_text(y, r.x, r.w, st->n_nan || st->n_inf ? ROLE_ERROR : ROLE_NORMAL, line);
}

static void cost_line(const State *s, int y, Rect r, const PipeNode *n, const HistEntry *e) {
    char flops[32], took[32];
    double f = vit_stage_flops(s->cfg, 1, n->name);
    if (s->backward) { // the stage table counts the forward's arithmetic only
        if (e) ui_printf(y, r.x, r.w, ROLE_NORMAL, "cost   computed in %s (the backward of this "
                         "stage)", fmt_seconds(took, sizeof took, e->seconds));
        return;
    }
    if (f > 0) {
        fmt_si(flops, sizeof flops, f);
        strcat(flops, "FLOP");
    } else {
        snprintf(flops, sizeof flops, "no arithmetic (moves data)");
    }
    if (e) ui_printf(y, r.x, r.w, ROLE_NORMAL, "cost   %s · computed in %s", flops,
                     fmt_seconds(took, sizeof took, e->seconds));
    else ui_printf(y, r.x, r.w, ROLE_PENDING, "cost   %s", flops);
}

// While a what-if is in force: how far this stage moved from the unmodified pass.
// The stage's description for this model: the table says "p×p" where the
// patch side goes, since the same table serves every model (4×4, 16×16 …).
static const char *stage_what(const State *s, const PipeNode *n, char *buf, size_t size) {
    const char *what = n->stage->what, *p = strstr(what, "p×p");
    if (!p) return what;
    snprintf(buf, size, "%.*s%d×%d%s", (int)(p - what), what, s->cfg->patch_size,
             s->cfg->patch_size, p + strlen("p×p"));
    return buf;
}

static void whatif_line(const State *s, int y, Rect r, int node) {
    const float d = s->moved[node];
    const int first = state_first_moved(s);
    char where[96] = "";
    if (first >= 0) snprintf(where, sizeof where, " · first change %s", s->stepper.nodes[first].name);
    if (d > 0) ui_printf(y, r.x, r.w, ROLE_ERROR, "what-if  max |Δ| %.4g here%s", (double)d, where);
    else if (d == 0) ui_printf(y, r.x, r.w, ROLE_NORMAL, "what-if  unchanged here%s", where);
    else ui_printf(y, r.x, r.w, ROLE_PENDING, "what-if  not compared here (not computed, or "
                   "dropped)%s", where);
}

// A training step's backward: the gradient of the batch's loss, not of a logit.
static void step_grad_lines(const State *s, int *y, Rect r, const PipeNode *n) {
    const TrainConfig *c = &s->step->copy.config;
    int x = r.x + ui_printf(*y, r.x, r.w, ROLE_FORMULA, "∂ loss / ∂ %s",
                            n->name + strlen(VIT_GRAD_PREFIX));
    ui_printf((*y)++, x, r.x + r.w - x, ROLE_DIM, "  — the mean cross-entropy of the batch of %d",
              c->batch);
    if (r.h >= 6)
        ui_printf((*y)++, r.x, r.w, ROLE_DIM, "torch  F.cross_entropy(model(x), y, "
                  "label_smoothing=%g).backward(); the stage's .grad", (double)c->smoothing);
}

// A parameter's update: the formula, AdamW's settings of this step.
static void step_update_lines(const State *s, int *y, Rect r) {
    const TrainStepView *v = s->step;
    const AdamWConfig *c = &v->copy.opt.config;
    int x = r.x + ui_text(*y, r.x, r.w, ROLE_FORMULA, stepper_update_stage.formula);
    ui_printf((*y)++, x, r.x + r.w - x, ROLE_DIM, "  — AdamW, step t = %lld", (long long)v->step + 1);
    if (r.h >= 6)
        ui_printf((*y)++, r.x, r.w, ROLE_DIM, "torch  opt.step(): η %.4g, β1 %g, β2 %g, ε %g, "
                  "λ %g (weights only)", v->lr, c->beta1, c->beta2, c->eps, c->weight_decay);
}

// Once the update is done: its parts, as norms over the tensor.
static void update_norms_line(const State *s, int y, Rect r, const PipeNode *n,
                              const HistEntry *e) {
    const int i = train_step_view_param(s->step, n->name);
    if (!e || i < 0) return;
    const TrainParamUpdate u = train_step_view_update(s->step, i);
    ui_printf(y, r.x, r.w, ROLE_NORMAL, "‖g‖ %.3g  ‖m‖ %.3g  ‖v‖ %.3g  ‖Δθ‖ %.3g = %.3g of ‖θ‖ "
              "%.3g  decay ‖ηλθ‖ %.3g", u.grad, u.m, u.v, u.update, u.ratio, u.before, u.decay);
}

void info_draw(const State *s) {
    const Rect r = s->layout.info;
    const PipeNode *n = state_node(s);
    const HistEntry *e = state_entry(s);
    const Stepper *st = &s->stepper;
    int y = r.y;
    // line 1: name, and its position in the pass
    char pos[32];
    int pos_w = snprintf(pos, sizeof pos, "stage %d/%d", st->selected + 1, st->count);
    int x = r.x + ui_text(y, r.x, r.w - pos_w - 1, ROLE_HEADING, n->name);
    if (st->sel_header)
        ui_text(y, x, r.x + r.w - pos_w - 1 - x, ROLE_DIM,
                s->backward ? " (the block's last gradient)" : " (the block's output)");
    ui_text(y, r.x + r.w - pos_w, pos_w, ROLE_DIM, pos);
    y++;
    // formula — what it is; for a gradient, of which logit, and of what
    const bool update = stepper_is_update(n);
    if (s->step && s->backward) {
        if (update) step_update_lines(s, &y, r);
        else step_grad_lines(s, &y, r, n);
        shape_line(s, y++, r, n, e);
        stats_line(s, y++, r, e);
        if (update) update_norms_line(s, y++, r, n, e);
        else cost_line(s, y++, r, n, e);
        return;
    }
    if (s->backward) {
        const char *cls = labels_name(&s->labels, s->backward_class);
        char what[96];
        snprintf(what, sizeof what, "∂ logit %d%s%s%s / ∂ %s", s->backward_class,
                 cls && cls[0] ? " (" : "", cls && cls[0] ? cls : "", cls && cls[0] ? ")" : "",
                 n->name + strlen(VIT_GRAD_PREFIX));
        x = r.x + ui_text(y, r.x, r.w, ROLE_FORMULA, what);
        ui_printf(y, x, r.x + r.w - x, ROLE_DIM, "  — of %s", n->stage->formula);
    } else {
        x = r.x + ui_text(y, r.x, r.w, ROLE_FORMULA, n->stage->formula);
        char what[96];
        ui_printf(y, x, r.x + r.w - x, ROLE_DIM, "  — %s", stage_what(s, n, what, sizeof what));
    }
    y++;
    if (r.h >= 6 && s->backward)
        ui_printf(y++, r.x, r.w, ROLE_DIM, "torch  logits[0, %d].backward(); the stage's .grad "
                  "(retain_grad())", s->backward_class);
    else if (r.h >= 6) ui_printf(y++, r.x, r.w, ROLE_DIM, "torch  %s", n->stage->torch);
    shape_line(s, y++, r, n, e);
    stats_line(s, y++, r, e);
    if (state_whatif(s) && !s->backward) whatif_line(s, y++, r, st->selected);
    else cost_line(s, y++, r, n, e);
}
