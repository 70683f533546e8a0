/**
 * @file tui_lens.c
 * @brief The logit lens strip (key Y on a block's stage): the model's answer
 *        read after every block, one row per depth, from the stages the pass
 *        has computed.
 *
 * Depth d is the [cls] row of `embed` (d = 0) or of `blocks.{d−1}.out`
 * through the model's final LayerNorm and head (lib's logit_lens_depth(), so
 * the last row is the logits view's probabilities and `vit lens`'s numbers).
 * A row whose stage is not computed yet (or was dropped from the history)
 * says so; the answer compared with is the top class of the deepest row
 * computed, the model's own once the pass has run to the end.
 */
#include "tui.h"
#include "tui_draw.h"
#include "explain/logit_lens.h"
#include "train/train.h" // ops_index_of_max()

#include <math.h>
#include <stdlib.h>

enum { MARK_W = 2, BLOCK_W = 6, NAME_W = 13, NUM_W = 7 };

bool lens_shown(const State *s) {
    return s->lens && !s->backward && s->model && state_node(s)->block >= 0;
}

// Depth d's entry in the pass shown, or NULL when not computed yet.
static const HistEntry *depth_entry(const State *s, int d) {
    char name[48];
    return history_get(&s->history,
                       stepper_find(&s->stepper, logit_lens_stage(name, sizeof name, d)));
}

// Depth d's stage as recorded, or NULL (not computed, or dropped for the history's budget).
static const Tensor *depth_stream(const State *s, int d) {
    const HistEntry *e = depth_entry(s, d);
    return e && e->kept && e->t.ndim == 3 ? &e->t : NULL;
}

// probs (depths, Y) for every depth computed (picture 0 of the batch); returns how many.
static int lens_rows(const State *s, float *probs, bool *have, int depths, int Y) {
    int count = 0;
    for (int d = 0; d < depths; d++) {
        const Tensor *t = depth_stream(s, d);
        have[d] = t != NULL;
        if (!t) continue;
        logit_lens_depth(probs + (size_t)d * Y, t->data, s->model, 1, t->shape[1]);
        count++;
    }
    return count;
}

static void class_text(const State *s, char *buf, size_t size, int k) {
    const char *name = labels_name(&s->labels, k);
    if (name && name[0]) snprintf(buf, size, "%s", name);
    else snprintf(buf, size, "class %d", k);
}

// One row: marker, block, top class, its probability, the answer's, a bar of the top's.
static void lens_row(const State *s, int y, Rect r, int d, const float *p, int Y, int answer,
                     bool selected) {
    char block[16], name[64];
    if (d == 0) snprintf(block, sizeof block, "embed");
    else snprintf(block, sizeof block, "%d", d - 1);
    int x = r.x;
    if (selected) ui_text(y, x, MARK_W, ROLE_FRONTIER, ui_glyph(s, "▶", ">"));
    x += MARK_W;
    ui_text(y, x, BLOCK_W, ROLE_DIM, block);
    x += BLOCK_W;
    if (!p) {
        ui_text(y, x, r.x + r.w - x, ROLE_PENDING,
                depth_entry(s, d) ? "dropped to keep the history small" : "not computed yet");
        return;
    }
    const int top = ops_index_of_max(p, Y);
    class_text(s, name, sizeof name, top);
    ui_text(y, x, NAME_W, top == answer ? ROLE_HEADING : ROLE_NORMAL, name);
    x += NAME_W + 1;
    x += ui_printf(y, x, NUM_W, ROLE_NORMAL, "%6.4f", (double)p[top]) + 1;
    x += ui_printf(y, x, NUM_W, ROLE_NORMAL, "%6.4f", (double)p[answer]) + 1;
    bar_draw(s, y, x, r.x + r.w - x, p[top]); // 0 to 1 across the rest of the row
}

// The last line: the answer, and from which block it stays on top, or how far the pass is.
static void lens_summary(const State *s, int y, Rect r, const float *probs, int depths, int Y,
                         int count, const char *answer) {
    if (count < depths) {
        ui_printf(y, r.x, r.w, ROLE_DIM, "ans. = %s, the deepest row's top (%d of %d): c runs on",
                  answer, count, depths);
        return;
    }
    const int from = logit_lens_settles(probs, depths, Y);
    if (from == 0) ui_printf(y, r.x, r.w, ROLE_NORMAL, "ans. = %s, on top at every depth", answer);
    else ui_printf(y, r.x, r.w, ROLE_NORMAL, "ans. = %s, on top from block %d on", answer,
                   from - 1);
}

void lens_view(const State *s, Rect r) {
    const int depths = logit_lens_depths(s->cfg->depth), Y = s->cfg->num_classes;
    float *probs = malloc(sizeof(float) * (size_t)depths * Y);
    bool *have = malloc(sizeof(bool) * (size_t)depths);
    if (!probs || !have) goto done;
    const int count = lens_rows(s, probs, have, depths, Y);
    int deepest = depths - 1;
    while (deepest > 0 && !have[deepest]) deepest--;
    const int answer = count ? ops_index_of_max(probs + (size_t)deepest * Y, Y) : 0;
    char name[64];
    class_text(s, name, sizeof name, answer);
    ui_text(r.y, r.x, r.w, ROLE_HEADING, "logit lens: [cls] after each block → norm → head");
    ui_printf(r.y + 1, r.x, r.w, ROLE_DIM, "%*s%-*s%-*s %-*s%-*sbar: p, 0 to 1", MARK_W, "",
              BLOCK_W, "block", NAME_W, "top class", NUM_W, "p", NUM_W + 1, "p(ans.)");
    const int selected = state_node(s)->block + 1;
    for (int d = 0; d < depths && 2 + d < r.h - 1; d++)
        lens_row(s, r.y + 2 + d, r, d, have[d] ? probs + (size_t)d * Y : NULL, Y, answer,
                 d == selected);
    if (count && 2 + depths < r.h)
        lens_summary(s, r.y + 2 + depths, r, probs, depths, Y, count, name);
done:
    free(probs);
    free(have);
}

UiAction cmd_lens(State *s, int key) {
    if (s->backward) {
        state_message(s, "the logit lens reads the forward pass: d goes back to it");
        return ACT_NONE;
    }
    if (!s->lens && state_node(s)->block < 0) {
        state_message(s, "Y shows the logit lens on a block's stage: select one (j k, or /)");
        return ACT_NONE;
    }
    s->lens = !s->lens;
    if (s->lens) { // one view in place of the stage's at a time
        s->importance.shown = false;
        occlusion_comparison_free(&s->occlusion);
        patching_free(&s->patching);
    }
    state_message(s, s->lens ? "logit lens (Y: the stage's own view)"
                             : "the stage's own view (Y: the logit lens)");
    return ACT_NONE;
}
