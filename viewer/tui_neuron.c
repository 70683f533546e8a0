/**
 * @file tui_neuron.c
 * @brief The neuron view (key N on an attention stage): the arithmetic of the
 *        one score under the cursor, chapters 01 to 03 on a real pass.
 *
 * The cell is the cursor's: block l of the stage, head [ ], query < >, key
 * H J K L. From the block's recorded q and k (B, H, N, Dh), lib's
 * score_parts() gives q_i, k_j and q⊙k (Dh numbers each, drawn as bars: up
 * for positive, down for negative, each vector on its own scale), the sum,
 * the scale 1/√Dh, and across the query's row the max, exp(s − max), the row
 * sum and the probability; score_parts_check() holds the sum, the scaled score
 * and the probability against the recorded scores, scaled and probs. The
 * numbers are printed as `vit score` prints them (%.6g), so they can be
 * compared by eye or by a script.
 */
#include "tui.h"
#include "tui_draw.h"
#include "explain/score_parts.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

// two-line bars need the 14 rows below the heading: 6 of bars, 7 numbers, a verdict
// a bar row: its label, Dh cells, " ±1.23e-05" (its scale)
enum { LABEL_W = 6, ROWS_TWO_LINE_BARS = 14, SCALE_W = 10 };

bool neuron_shown(const State *s) {
    return s->neuron && !s->backward && view_kind_for(state_node(s)->stage) == VIEW_ATTENTION;
}

// Stage `what` of the block in the forward history, or NULL with *why saying what is missing.
static const Tensor *block_tensor(const State *s, int block, const char *what, const char **why) {
    char name[64];
    score_parts_stage(name, sizeof name, block, what);
    const HistEntry *e = history_get(state_forward_history(s),
                                     stepper_find(state_forward_stepper(s), name));
    if (e && e->kept) return &e->t;
    *why = e ? "dropped for the history budget" : "not computed yet (s steps)";
    return NULL;
}

/* ------------------------------------------------------------------ bars */

// A cell of a bar hanging down from the top by m eighths: a lower block of
// 8 − m eighths in reverse video (its empty part is the bar).
static void hanging_cell(const State *s, int y, int x, int m) {
    static const char *const lower[] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    if (m <= 0) return;
    if (!s->utf8) {
        ui_text(y, x, 1, ROLE_BAR, m >= 4 ? "#" : ".");
        return;
    }
    if (m >= 8) {
        ui_text(y, x, 1, ROLE_BAR, "█");
        return;
    }
    attrset(ui_role(ROLE_BAR) | A_REVERSE);
    mvaddstr(y, x, lower[8 - m]);
    attrset(A_NORMAL);
}

// A cell of a bar standing on the bottom, m eighths tall.
static void standing_cell(const State *s, int y, int x, int m) {
    static const char *const lower[] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    if (m <= 0) return;
    if (!s->utf8) ui_text(y, x, 1, ROLE_BAR, m >= 4 ? "#" : ".");
    else ui_text(y, x, 1, ROLE_BAR, lower[m > 8 ? 8 : m]);
}

// One vector v (n) as bars at (y, x), cw columns a value, on the scale 0 to max |v|:
// positive values stand on the line between the two rows, negative ones hang
// below it; with one row (two == false), negative ones hang from its top.
static float vector_bars(const State *s, int y, int x, int cw, const float *v, int n, bool two) {
    float hi = 0;
    for (int d = 0; d < n; d++) hi = fmaxf(hi, fabsf(v[d]));
    for (int d = 0; d < n; d++) {
        const int m = hi > 0 ? (int)lroundf(fabsf(v[d]) / hi * 8) : 0;
        for (int c = 0; c < cw; c++) {
            if (v[d] >= 0) standing_cell(s, y, x + d * cw + c, m);
            else hanging_cell(s, two ? y + 1 : y, x + d * cw + c, m);
        }
    }
    return hi;
}

// q_i, k_j and q⊙k, a bar per dimension each; returns the rows used.
static int bars_draw(const State *s, Rect r, const ScoreParts *p) {
    const bool two = r.h >= ROWS_TWO_LINE_BARS;
    const int cw = LABEL_W + 2 * p->Dh + SCALE_W <= r.w ? 2 : 1;
    if (LABEL_W + cw * p->Dh + SCALE_W > r.w) { // ViT-B's Dh = 64 at 80 columns: t hides the tree
        ui_printf(r.y, r.x, r.w, ROLE_DIM, "the bars of Dh = %d need %d columns (t: hide the tree)",
                  p->Dh, LABEL_W + p->Dh + SCALE_W);
        return 1;
    }
    const char *const labels[] = {"q_i", "k_j", "q⊙k"};
    const float *const vectors[] = {p->q, p->k, p->products};
    int y = r.y;
    for (int v = 0; v < 3; v++) {
        ui_text(y, r.x, LABEL_W, v == 2 ? ROLE_HEADING : ROLE_NORMAL, labels[v]);
        const float hi = vector_bars(s, y, r.x + LABEL_W, cw, vectors[v], p->Dh, two);
        ui_printf(y, r.x + LABEL_W + cw * p->Dh + 1, SCALE_W - 1, ROLE_DIM, "±%.3g", (double)hi);
        y += two ? 2 : 1;
    }
    return y - r.y;
}

/* --------------------------------------------------------------- numbers */

// "✓ scores" when the part matches its stage, else the recorded value and the difference.
static void check_text(char *buf, size_t size, const PartCheck *c, const char *stage) {
    if (c->matches) snprintf(buf, size, "✓ %s", stage);
    else if (isnan(c->recorded)) snprintf(buf, size, "%s not computed yet", stage);
    else snprintf(buf, size, "≠ %s %.6g, Δ %.2g", stage, (double)c->recorded, (double)c->diff);
}

// One line of the arithmetic: name, formula, value (%.6g, as `vit score`), and a check or a note.
static void number_line(int y, Rect r, const char *name, const char *formula, float v,
                        const char *note, bool bad) {
    ui_text(y, r.x, 8, ROLE_HEADING, name);
    ui_text(y, r.x + 8, 15, ROLE_FORMULA, formula);
    int x = r.x + 23;
    x += ui_printf(y, x, r.x + r.w - x, ROLE_NORMAL, "%.6g", (double)v) + 2;
    if (x < r.x + r.w) ui_text(y, x, r.x + r.w - x, bad ? ROLE_ERROR : ROLE_DIM, note);
}

static void numbers_draw(Rect r, const ScoreParts *p, const ScoreChecks *c) {
    char note[3][64], scale[24], max_note[24], keys[24];
    check_text(note[0], sizeof note[0], &c->score, "scores");
    check_text(note[1], sizeof note[1], &c->scaled, "scaled");
    check_text(note[2], sizeof note[2], &c->prob, "probs");
    snprintf(scale, sizeof scale, "1/√%d", p->Dh);
    snprintf(max_note, sizeof max_note, "key %d", p->row_argmax);
    snprintf(keys, sizeof keys, "%d keys", p->N);
    // the names are `vit score`'s, in its order
    const struct {
        const char *name, *formula;
        float value;
        const char *note;
        bool bad;
    } lines[] = {
        {"sum", "Σ_d q⊙k", p->score, note[0], !c->score.matches},
        {"scale", scale, p->scale, "", false},
        {"scaled", "sum × scale", p->scaled, note[1], !c->scaled.matches},
        {"row max", "max_j scaled", p->row_max, max_note, false},
        {"exp", "exp(s − max)", p->exp, "", false},
        {"row sum", "Σ_j exp", p->row_sum, keys, false},
        {"prob", "exp ÷ row sum", p->prob, note[2], !c->prob.matches},
    };
    for (int i = 0; i < (int)(sizeof lines / sizeof lines[0]) && i < r.h; i++)
        number_line(r.y + i, r, lines[i].name, lines[i].formula, lines[i].value, lines[i].note,
                    lines[i].bad);
}

// The last line: the verdict, or why the probabilities differ.
static void verdict_draw(const State *s, int y, Rect r, const ScoreChecks *c, int block) {
    const int H = s->cfg->heads;
    if (s->heads_off && s->heads_off[block * H + s->plane])
        ui_printf(y, r.x, r.w, ROLE_DIM, "head %d is off (x): its recorded probs are 0", s->plane);
    else if (c->score.matches && c->scaled.matches && c->prob.matches)
        ui_printf(y, r.x, r.w, ROLE_NORMAL, "✓ matches the recorded stage · N: back");
    else if (isnan(c->score.recorded) || isnan(c->scaled.recorded) || isnan(c->prob.recorded))
        ui_printf(y, r.x, r.w, ROLE_DIM, "later stages not computed yet: s steps · N: back");
    else ui_printf(y, r.x, r.w, ROLE_DIM, "≠: the recorded stage differs by Δ · N: back");
}

void neuron_view(const State *s, Rect r) {
    const int block = state_node(s)->block;
    const char *why = "";
    const Tensor *q = block_tensor(s, block, "q", &why), *k = q ? block_tensor(s, block, "k", &why)
                                                                : NULL;
    if (!q || !k) {
        ui_printf(r.y, r.x, r.w, ROLE_ERROR, "the neuron view needs blocks.%d.attn.q and k: %s",
                  block, why);
        return;
    }
    const ScoreCell at = {0, s->plane, s->query, s->key};
    ScoreParts p;
    ScoreChecks c;
    VitError err;
    if (score_parts(&p, q, k, NULL, at, &err) != VIT_OK) {
        ui_text(r.y, r.x, r.w, ROLE_ERROR, err.msg);
        return;
    }
    // a stage not computed yet (or dropped) is NULL: its check says so
    score_parts_check(&c, &p, block_tensor(s, block, "scores", &why),
                      block_tensor(s, block, "scaled", &why), block_tensor(s, block, "probs", &why),
                      at);
    char query[48], key[48];
    token_label(query, sizeof query, s->query, state_grid(s));
    token_label(key, sizeof key, s->key, state_grid(s));
    ui_printf(r.y, r.x, r.w, ROLE_HEADING, "b%d h%d · q %s → k %s · [ ] < > H J K L", block,
              s->plane, query, key);
    const int used = 1 + bars_draw(s, (Rect){r.y + 1, r.x, r.h - 1, r.w}, &p);
    numbers_draw((Rect){r.y + used, r.x, r.h - used - 1, r.w}, &p, &c);
    if (used + 7 < r.h) verdict_draw(s, r.y + used + 7, r, &c, block);
    score_parts_free(&p);
}

UiAction cmd_neuron(State *s, int key) {
    (void)key;
    if (s->backward) {
        state_message(s, "the neuron view reads the forward pass: d goes back to it");
        return ACT_NONE;
    }
    if (!s->neuron && view_kind_for(state_node(s)->stage) != VIEW_ATTENTION) {
        state_message(s, "N takes one score apart on an attention stage (attn.scores, scaled, "
                      "probs): select one");
        return ACT_NONE;
    }
    const bool open = !s->neuron;
    state_close_views(s); // one view in place of the stage's at a time
    s->neuron = open;
    state_message(s, s->neuron ? "neuron view: the score under the cursor (N: the map)"
                               : "the attention map (N: the neuron view)");
    return ACT_NONE;
}
