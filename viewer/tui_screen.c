/**
 * @file tui_screen.c
 * @brief The whole screen: title row, separators, status row, help and the
 *        breakpoint prompt; the note for a terminal that is too small.
 */
#include "tui.h"
#include "format.h"

#include <stdlib.h>
#include <string.h>

static void too_small_draw(const State *s) {
    const Layout *l = &s->layout;
    const char *lines[3];
    char size[64], need[64];
    snprintf(size, sizeof size, "terminal %d×%d is too small", l->cols, l->rows);
    snprintf(need, sizeof need, "vitview needs %d×%d", LAYOUT_MIN_COLS, LAYOUT_MIN_ROWS);
    lines[0] = size, lines[1] = need, lines[2] = "enlarge it, or press q";
    for (int i = 0; i < 3 && i < l->rows; i++) {
        int y = l->rows / 2 - 1 + i;
        if (y < 0) y = i;
        int len = (int)strlen(lines[i]);
        int x = (l->cols - len) / 2;
        ui_text(y, x < 0 ? 0 : x, l->cols, i == 0 ? ROLE_ERROR : ROLE_NORMAL, lines[i]);
    }
}

void screen_draw(const State *s) {
    const Layout *l = &s->layout;
    erase();
    if (l->too_small) {
        too_small_draw(s);
        refresh();
        return;
    }
    title_draw(s);
    attrset(ui_role(ROLE_DIM));
    if (l->tree.w > 0) { // hidden with t: the view takes its room
        tree_draw(s);
        attrset(ui_role(ROLE_DIM));
        mvvline(l->tree.y, l->sep_x, ACS_VLINE, l->tree.h);
    }
    mvhline(l->sep_y, l->info.x, ACS_HLINE, l->info.w);
    attrset(A_NORMAL);
    info_draw(s);
    view_draw(s);
    status_draw(s);
    if (s->help) help_draw(s);
    refresh();
}

// Columns a UTF-8 string takes: one per character (the titles hold no wide ones).
static int columns(const char *text) {
    int n = 0;
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) n += (*c & 0xC0) != 0x80;
    return n;
}

void title_draw(const State *s) {
    const Rect r = s->layout.title;
    attrset(ui_role(ROLE_TITLE));
    mvhline(r.y, r.x, ' ', r.w);
    int msg_w = s->message[0] ? (int)strlen(s->message) + 2 : 0;
    if (msg_w > r.w * 2 / 3) msg_w = r.w * 2 / 3;
    // the film's frame after the model and the picture, when all of it fits:
    // the status row always shows it, and a cut title must keep the model's name
    char frame[96];
    frames_label(&s->film, s->film.at, frame, sizeof frame);
    const bool room = frame[0] && columns(" vitview │ ") + columns(s->title) + 3 +
                                      columns(frame) <= r.w - msg_w;
    ui_printf(r.y, r.x, r.w - msg_w, ROLE_TITLE, " vitview │ %s%s%s", s->title,
              room ? " · " : "", room ? frame : "");
    if (msg_w) ui_printf(r.y, r.x + r.w - msg_w, msg_w, ROLE_MESSAGE, " %s ", s->message);
}

/* ------------------------------------------------------------- status */

// "at blocks.3.attn.probs 57/188 · viewing blocks.2.norm1": where the pass is and what is shown.
static void where_text(const State *s, char *buf, size_t size) {
    const Stepper *st = &s->stepper;
    const char *at = st->done > 0 ? st->nodes[st->done - 1].name : "(start)";
    int n = snprintf(buf, size, "%s%s %s %d/%d", s->backward ? "backward: " : "",
                     s->running ? "running" :
                     stepper_finished(st) ? "finished at" : "paused at",
                     at, st->done, st->count);
    if (s->run_out > 0) // a stopped pass finishing unseen: its stages, not the stepper's
        n = snprintf(buf, size, "finishing the stopped pass %d/%d", s->run_out, st->count);
    if (!s->running && st->selected != st->done - 1 && n > 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, " · viewing %s", st->nodes[st->selected].name);
    else if (s->running && s->run_seconds >= 0.3 && n > 0 && (size_t)n < size) { // a long pass
        char bar[64];
        const int done = s->run_out > 0 ? s->run_out : st->done;
        snprintf(buf + n, size - (size_t)n, " %s",
                 fmt_progress(bar, sizeof bar, done, st->count, 10, s->run_seconds, s->utf8));
    }
    char frame[96]; // the training's film: which snapshot's weights these are, ( ) scrub
    frames_label(&s->film, s->film.at, frame, sizeof frame);
    const size_t len = strlen(buf);
    if (frame[0] && len < size) snprintf(buf + len, size - len, " · %s", frame);
}


void status_draw(const State *s) {
    const Rect r = s->layout.status;
    attrset(ui_role(ROLE_STATUS));
    mvhline(r.y, r.x, ' ', r.w);
    if (s->prompting) {
        prompt_draw(s, r);
        return;
    }
    static const char *const hints[][2] = {
        {"s", "step"}, {"n", "block"}, {"f", "finish"}, {"c", "cont"}, {"b", "break"},
        {"r", "restart"}, {"Tab", "focus"}, {"?", "help"}, {"q", "quit"},
    };
    enum { HINTS = sizeof hints / sizeof hints[0] };
    if (s->running) {
        char where[160];
        where_text(s, where, sizeof where);
        ui_printf(r.y, r.x, r.w, ROLE_STATUS, " %s · any key pauses", where);
        return;
    }
    // the hints that fit after the position, always keeping "? help" and "q quit"
    int widths[HINTS], total = 0;
    for (int i = 0; i < HINTS; i++)
        total += widths[i] = (int)(strlen(hints[i][0]) + strlen(hints[i][1]) + 2);
    char where[200];
    where_text(s, where, sizeof where);
    int room = r.w - (int)strlen(where) - 2;
    bool shown[HINTS];
    for (int i = 0; i < HINTS; i++) shown[i] = true;
    for (int i = HINTS - 3; i >= 0 && total > room; i--) shown[i] = false, total -= widths[i];
    if (total > r.w - 20) total = 0; // hopelessly narrow: the position matters more
    ui_printf(r.y, r.x, r.w - total, ROLE_STATUS, " %s", where);
    int x = r.x + r.w - total;
    for (int i = 0; i < HINTS && total; i++) {
        if (!shown[i]) continue;
        x += ui_text(r.y, x, r.x + r.w - x, ROLE_MESSAGE, hints[i][0]);
        x += ui_printf(r.y, x, r.x + r.w - x, ROLE_STATUS, " %s ", hints[i][1]);
    }
}

/* --------------------------------------------------------------- help */

// Columns a UTF-8 string takes (every character one column: arrows, Δ, ·).
static int utf8_columns(const char *text) {
    int n = 0;
    for (const unsigned char *c = (const unsigned char *)text; *c; c++) n += (*c & 0xC0) != 0x80;
    return n;
}

const KeyTable *const all_key_tables[] = {&app_keys,        &tree_keys,  &view_keys,
                                          &importance_keys, &paint_keys, &fingerprint_keys,
                                          &position_keys,   NULL};

// One line of the help: a heading, a binding (key label and what it does) or a note.
typedef struct {
    Role role;         // ROLE_HEADING, ROLE_KEY (a binding) or ROLE_NORMAL/ROLE_DIM (a note)
    const char *label; // the keys, for a binding
    const char *text;  // the heading, what the keys do, or the note
} HelpLine;

enum { HELP_MAX_LINES = 96 };

// Every line of the help, generated from the key tables; returns how many.
static int help_collect(HelpLine *lines) {
    static const char *const notes[] = {
        "The tree's marks: ▶ how far the pass has run · ● a breakpoint · Δ moved in a",
        "what-if · › the selection while the view has the keys · dim: not computed yet.",
        "While a pass runs (n f c, or after r), any key pauses it at the next stage; keys",
        "typed after that one are dropped (the title says how many), except after / B W e T D,",
        "whose line is kept whole and runs once paused. A rerun ({ } x z …) takes no keys: they",
        "wait and run after it, in order.",
        "A pass also stops by itself at the first NaN or infinity, and where W's watch is passed.",
        "Colours: signed values blue < 0 (white) < red; one-signed values dark → yellow.",
        "NO_COLOR or --mono: an ASCII ramp \" .:-=+*#%@\", light to dense.",
    };
    int n = 0;
    for (const KeyTable *const *t = all_key_tables; *t && n < HELP_MAX_LINES; t++) {
        lines[n++] = (HelpLine){ROLE_HEADING, "", (*t)->title};
        for (int i = 0; i < (*t)->count && n < HELP_MAX_LINES; i++)
            if ((*t)->bindings[i].label[0]) // an empty label: keys listed with the binding before
                lines[n++] = (HelpLine){ROLE_KEY, (*t)->bindings[i].label, (*t)->bindings[i].help};
    }
    lines[n++] = (HelpLine){ROLE_NORMAL, "", ""};
    for (size_t i = 0; i < sizeof notes / sizeof notes[0]; i++)
        lines[n++] = (HelpLine){ROLE_NORMAL, "", notes[i]};
    lines[n++] = (HelpLine){ROLE_DIM, "", "? Esc q close this help · j k ↑ ↓ scroll it"};
    return n;
}

// The help's frame: centred, at most 110 columns, the height of the screen.
static Rect help_frame(const State *s) {
    const Layout *l = &s->layout;
    const int w = l->cols - 4 < 110 ? l->cols - 4 : 110;
    return (Rect){1, (l->cols - w) / 2, l->rows - 2, w};
}

// The first line shown for a scroll position, so the last page stays full.
static int help_first(const State *s, int total) {
    const int visible = help_frame(s).h - 2;
    int first = s->help_scroll;
    if (first > total - visible) first = total - visible;
    return first < 0 ? 0 : first;
}

void help_draw(const State *s) {
    const Rect frame = help_frame(s);
    ui_clear(frame);
    attrset(ui_role(ROLE_HEADING));
    mvhline(frame.y, frame.x, ACS_HLINE, frame.w);
    mvhline(frame.y + frame.h - 1, frame.x, ACS_HLINE, frame.w);
    mvvline(frame.y, frame.x, ACS_VLINE, frame.h);
    mvvline(frame.y, frame.x + frame.w - 1, ACS_VLINE, frame.h);
    attrset(A_NORMAL);
    ui_text(frame.y, frame.x + 2, frame.w - 4, ROLE_HEADING, " keys ");
    const Rect in = {frame.y + 1, frame.x + 2, frame.h - 2, frame.w - 4};
    HelpLine lines[HELP_MAX_LINES + 8];
    const int n = help_collect(lines), first = help_first(s, n);
    int label_w = 0; // the widest key label, in columns (UTF-8 arrows count one)
    for (int i = 0; i < n; i++)
        if (lines[i].role == ROLE_KEY && utf8_columns(lines[i].label) > label_w)
            label_w = utf8_columns(lines[i].label);
    for (int i = 0; i < in.h && first + i < n; i++) {
        const HelpLine *h = &lines[first + i];
        if (h->role == ROLE_KEY) {
            ui_text(in.y + i, in.x + 1, label_w, ROLE_KEY, h->label);
            ui_text(in.y + i, in.x + 2 + label_w, in.w - 2 - label_w, ROLE_NORMAL, h->text);
        } else {
            ui_text(in.y + i, in.x, in.w, h->role, h->text);
        }
    }
    if (first + in.h < n) // more below: say how to get there
        ui_text(frame.y + frame.h - 1, frame.x + frame.w - 16, 14, ROLE_HEADING, " more: j ↓ ");
}

UiAction help_key(State *s, int key) {
    HelpLine lines[HELP_MAX_LINES + 8];
    const int n = help_collect(lines);
    s->help_scroll = help_first(s, n); // forget scrolling past the end
    switch (key) {
    case 'j': case KEY_DOWN: s->help_scroll++; break;
    case 'k': case KEY_UP: s->help_scroll--; break;
    case KEY_NPAGE: s->help_scroll += 10; break;
    case KEY_PPAGE: s->help_scroll -= 10; break;
    case KEY_RESIZE: break;
    default: s->help = false; // any other key closes it
    }
    s->help_scroll = help_first(s, n);
    return ACT_NONE;
}
