/**
 * @file tui_app.c
 * @brief The main loop: vit_forward() runs with a trace callback that records
 *        each stage and, when the stepper says stop, runs the UI until a key
 *        resumes the pass. A callback that enters the UI loop is a breakpoint.
 *
 * Restart and quit cannot unwind vit_forward() from inside a callback, so they
 * set `abandon`: the remaining callbacks of this pass return at once, the pass
 * finishes (for ViT-B/16 in under a second), and the loop starts a new pass or
 * exits.
 */
#include "app.h"
#include "format.h"
#include "patch.h"
#include "tui.h"

#include <locale.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --------------------------------------------------------------- timings */

// Key-to-screen latency, by kind of key, for `VITVIEW_TIMINGS=file` (see docs/viewer.md).
enum { T_STEP, T_RUN, T_SELECT, T_HEAD, T_VIEW, T_RESIZE, T_OTHER, T_COUNT };
static const char *const timing_names[T_COUNT] = {
    "step (s): compute one stage + draw", "run (n f c): compute + draw",
    "select a stage (j k , . g G)", "head ([ ] 0-9 m)", "view (v < > Tab arrows)", "resize",
    "other"};

typedef struct {
    int count;
    double sum, max;
} Latency;

// Everything the callback needs: the state, the model, the input, and the run's flags.
typedef struct {
    State state;
    Vit *vit;
    const Tensor *input;
    UiAction abandon;      // ACT_RESTART or ACT_QUIT: let the rest of the pass run out
    double resumed_at;     // when the forward pass last resumed, to time each stage
    double last_progress;  // when the screen was last redrawn during a run
    bool saw_non_finite;   // this pass has stopped at its first NaN or infinity
    double key_at;         // when the key being answered arrived (0: none)
    int key_kind;          // its timing category
    Latency latency[T_COUNT];
} App;

static int key_kind(int key) {
    switch (key) {
    case 's': return T_STEP;
    case 'n': case 'f': case 'c': return T_RUN;
    case 'j': case 'k': case ',': case '.': case 'g': case 'G': case KEY_UP: case KEY_DOWN:
        return T_SELECT;
    case '[': case ']': case 'm': return T_HEAD;
    case 'v': case '<': case '>': case '\t': case KEY_LEFT: case KEY_RIGHT: return T_VIEW;
    case KEY_RESIZE: return T_RESIZE;
    default: return key >= '0' && key <= '9' ? T_HEAD : T_OTHER;
    }
}

// Redraw, and if this answers a key, note how long the answer took.
static void app_draw(App *app) {
    screen_draw(&app->state);
    if (app->key_at > 0) {
        double dt = vit_now() - app->key_at;
        Latency *l = &app->latency[app->key_kind];
        l->count++, l->sum += dt;
        if (dt > l->max) l->max = dt;
        app->key_at = 0;
    }
}

static void timings_write(const App *app, const char *path) {
    FILE *f = fopen(path, "w");
    if (!f) return;
    fprintf(f, "# key-to-screen latency in ms: kind, count, mean, max\n");
    for (int i = 0; i < T_COUNT; i++) {
        const Latency *l = &app->latency[i];
        if (l->count)
            fprintf(f, "%-32s %5d %8.2f %8.2f\n", timing_names[i], l->count,
                    1e3 * l->sum / l->count, 1e3 * l->max);
    }
    fclose(f);
}

/* ------------------------------------------------------------- the keys */

// The one place a terminal resize is handled.
static void on_resize(State *s) { state_resize(s, COLS, LINES); }

static UiAction cmd_run(State *s, int key) {
    const RunCommand cmd = key == 's' ? RUN_STEP : key == 'n' ? RUN_NEXT_BLOCK
                         : key == 'f' ? RUN_FINISH_BLOCK : RUN_CONTINUE;
    const char *why_not = stepper_command(&s->stepper, cmd);
    if (why_not) {
        state_message(s, "%s", why_not);
        return ACT_NONE;
    }
    s->message[0] = '\0';
    return ACT_RUN;
}

static UiAction cmd_restart(State *s, int key) { return ACT_RESTART; }
static UiAction cmd_quit(State *s, int key) { return ACT_QUIT; }

static UiAction cmd_prompt(State *s, int key) {
    s->prompting = true;
    s->prompt[0] = '\0';
    return ACT_NONE;
}

static UiAction cmd_help(State *s, int key) {
    s->help = true;
    s->help_scroll = 0;
    return ACT_NONE;
}

static UiAction cmd_focus(State *s, int key) {
    s->focus = s->focus == FOCUS_TREE ? FOCUS_VIEW : FOCUS_TREE;
    state_message(s, s->focus == FOCUS_VIEW ? "arrows move in the view (Tab: back to the tree)"
                                            : "arrows move in the tree");
    return ACT_NONE;
}

static UiAction cmd_escape(State *s, int key) {
    s->focus = FOCUS_TREE;
    s->message[0] = '\0';
    return ACT_NONE;
}

static UiAction cmd_redraw(State *s, int key) {
    clearok(curscr, TRUE); // Ctrl-L: repaint everything, as in every curses program
    return ACT_NONE;
}

static const KeyBinding bindings[] = {
    {{'s'}, "s", "step: compute the next stage", cmd_run},
    {{'n'}, "n", "next block: run through the next block, stop at its out", cmd_run},
    {{'f'}, "f", "finish the block the next stage is in, stop at its out", cmd_run},
    {{'c'}, "c", "continue to the next breakpoint, or to the logits", cmd_run},
    {{'r'}, "r", "restart the forward pass (breakpoints stay)", cmd_restart},
    {{'B'}, "B", "breakpoint by name: blocks.5.attn.probs, or attn.probs for all", cmd_prompt},
    {{'\t', KEY_BTAB}, "Tab", "arrows move in the tree ↔ in the view", cmd_focus},
    {{'?'}, "?", "this help", cmd_help},
    {{27}, "Esc", "back to the tree, clear the message", cmd_escape},
    {{12}, "Ctrl-L", "repaint the screen", cmd_redraw},
    {{'q'}, "q", "quit", cmd_quit},
};

const KeyTable app_keys = {"Running the forward pass", bindings,
                           sizeof bindings / sizeof bindings[0]};

UiAction app_key(State *s, int key) { return keytable_dispatch(&app_keys, s, key); }

// Who gets a key: the help or prompt when open; the view first when it has the
// focus; then the app, the tree, the view.
static UiAction handle_key(State *s, int key) {
    if (s->help) return help_key(s, key);
    if (s->prompting) return prompt_key(s, key);
    UiAction a = ACT_UNHANDLED;
    if (s->focus == FOCUS_VIEW) a = view_key(s, key);
    if (a == ACT_UNHANDLED) a = app_key(s, key);
    if (a == ACT_UNHANDLED) a = tree_key(s, key);
    if (a == ACT_UNHANDLED) a = view_key(s, key);
    if (a == ACT_UNHANDLED) {
        state_message(s, "that key does nothing here: ? lists the keys");
        a = ACT_NONE;
    }
    return a;
}

/* ------------------------------------------------------------- the loop */

// The UI, until a key resumes the pass (ACT_RUN), restarts it or quits.
static UiAction ui_loop(App *app) {
    State *s = &app->state;
    for (;;) {
        app_draw(app);
        const int key = getch();
        if (key == ERR) continue;
        app->key_at = vit_now();
        app->key_kind = key_kind(key);
        if (key == KEY_RESIZE) {
            on_resize(s);
            continue;
        }
        const UiAction a = handle_key(s, key);
        if (a != ACT_NONE) return a;
    }
}

// While running: a key pauses, a resize is taken in, the screen shows progress.
static bool poll_while_running(App *app) {
    State *s = &app->state;
    nodelay(stdscr, TRUE);
    const int key = getch();
    nodelay(stdscr, FALSE);
    if (key == KEY_RESIZE) on_resize(s);
    else if (key != ERR) {
        if (key == 'q') ungetch(key); // pause, then quit as asked
        state_message(s, "paused");
        return true;
    }
    const double now = vit_now();
    if (now - app->last_progress > 0.05) { // ~20 frames a second is plenty
        screen_draw(s);
        app->last_progress = now;
    }
    return false;
}

// Node `node` is computed: record it, and stop here if the stepper or a key says so.
static void stage_computed(App *app, int node, const Tensor *t, double seconds) {
    State *s = &app->state;
    history_record(&s->history, node, t, seconds);
    bool stop = stepper_computed(&s->stepper, node);
    if (stop && s->stepper.breakpoints[node])
        state_message(s, "breakpoint at %s", s->stepper.nodes[node].name);
    // the first NaN or infinity of a pass is a breakpoint of its own: all after it inherit them
    const TensorStats *st = &history_get(&s->history, node)->stats;
    if (!app->saw_non_finite && st->n_nan + st->n_inf > 0) {
        app->saw_non_finite = stop = true;
        state_message(s, "stopped at the first NaN or infinity: %s (%zu NaN, %zu Inf)",
                      s->stepper.nodes[node].name, st->n_nan, st->n_inf);
    }
    if (!stop) stop = poll_while_running(app);
    if (!stop) return;
    s->running = false;
    stepper_stopped_at(&s->stepper, node);
    state_clamp(s);
    const UiAction a = ui_loop(app);
    if (a == ACT_QUIT || a == ACT_RESTART) app->abandon = a;
    s->running = true;
    if (a == ACT_QUIT) ui_stop(); // the terminal back at once; the pass runs out unseen
    if (a == ACT_RESTART) {       // the rest of this pass takes a moment on a big model
        state_message(s, "restarting…");
        screen_draw(s);
    }
}

// "patches" is not traced by vit_forward(): cut them from the input here.
static void patches_computed(App *app, int node, const Tensor *input) {
    const VitConfig *c = app->state.cfg;
    const double start = vit_now();
    const int B = input->shape[0], p = c->patch_size;
    Tensor patches = tensor_new(3, B, vit_num_patches(c), c->channels * p * p);
    patch_unfold(patches.data, input->data, B, c->channels, c->image_size, p);
    stage_computed(app, node, &patches, vit_now() - start);
    tensor_free(&patches);
}

// The TraceFn: every stage of vit_forward() arrives here, in order.
static void on_trace(void *user, const char *name, const Tensor *t) {
    App *app = user;
    if (app->abandon != ACT_NONE) return; // restarting or quitting: run out quietly
    const double seconds = vit_now() - app->resumed_at;
    const int node = stepper_find(&app->state.stepper, name);
    if (node < 0) return; // not in the contract: nothing to show
    stage_computed(app, node, t, seconds);
    if (strcmp(name, "input") == 0 && app->abandon == ACT_NONE)
        patches_computed(app, node + 1, t);
    app->resumed_at = vit_now(); // UI time is not the next stage's compute time
}

static void restart(App *app) {
    State *s = &app->state;
    history_clear(&s->history);
    stepper_restart(&s->stepper);
    state_message(s, "restarted: a fresh forward pass, the same breakpoints");
}

void app_restore_terminal(void) { ui_stop(); }

int app_run(AppOptions *opt) {
    setlocale(LC_ALL, "");
    SCREEN *screen = newterm(NULL, stdout, stdin);
    if (!screen) {
        const char *term = getenv("TERM");
        fprintf(stderr, "vitview: cannot drive this terminal (TERM=%s)\n", term ? term : "unset");
        labels_free(&opt->labels);
        return VIT_ERR_USAGE;
    }
    App *app = vit_calloc(1, sizeof *app);
    app->vit = opt->vit;
    app->input = opt->input;
    state_init(&app->state, &opt->vit->config, opt->history_bytes);
    app->state.labels = opt->labels; // the state owns them now
    opt->labels = (Labels){0};
    snprintf(app->state.title, sizeof app->state.title, "%s", opt->title);
    if (opt->message) state_message(&app->state, "%s", opt->message);
    ui_start(&app->state, opt->mono);
    int status = 0;
    for (;;) {
        app->abandon = ACT_NONE;
        app->saw_non_finite = false;
        app->resumed_at = vit_now();
        VitError err;
        VitStatus st = vit_forward(app->vit, app->input, on_trace, app, &err);
        if (st != VIT_OK) {
            ui_stop();
            vit_print_error("vitview", &err);
            status = st;
            break;
        }
        while (app->abandon == ACT_NONE) { // finished: browse until restart or quit
            UiAction a = ui_loop(app);
            if (a == ACT_QUIT || a == ACT_RESTART) app->abandon = a;
        }
        if (app->abandon == ACT_QUIT) break;
        restart(app);
    }
    ui_stop();
    delscreen(screen);
    if (opt->timings) timings_write(app, opt->timings);
    state_free(&app->state);
    free(app);
    return status;
}
