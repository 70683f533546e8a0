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
#include "model/patch.h"
#include "prompt_line.h"
#include "train/train.h" // ops_index_of_max()
#include "tui.h"

#include <locale.h>
#include <math.h>
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
    Pictures *pictures;    // what { } T switch to
    Tensor original;       // the picture's input, as loaded (owned)
    Tensor input;          // what the pass sees: the original with the masked patches (owned)
    char model[256];       // the model, for the title row
    char picture[160];     // the picture, for the title row
    UiAction abandon;      // ACT_RESTART, ACT_REQUEST or ACT_QUIT: let the pass run out
    bool rerun;            // this pass runs to stepper.target without stopping on the way
    int keep_selected;     // ... and then shows this node again (-1: the stop itself)
    bool keep_header;      // ... as its block's line
    double resumed_at;     // when the forward pass last resumed, to time each stage
    double last_progress;  // when the screen was last redrawn during a run
    double run_since;      // when the pass running now began or resumed, for its progress
    bool saw_non_finite;   // this pass has stopped at its first NaN or infinity
    double key_at;         // when the key being answered arrived (0: none)
    int key_kind;          // its timing category
    TrainStepView *step;   // a training step's debugger: its one pass (NULL: the picture's)
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

// S: play, a step by itself every 500 ms; again, every 125 ms; again, stop.
static UiAction cmd_play(State *s, int key) {
    if (s->play_ms == 0 && stepper_finished(&s->stepper)) {
        state_message(s, "the pass is finished: r restarts it, then S plays it");
        return ACT_NONE;
    }
    s->play_ms = s->play_ms == 0 ? 500 : s->play_ms == 500 ? 125 : 0;
    if (s->play_ms) state_message(s, "playing: a stage every %d ms (S: %s)", s->play_ms,
                                  s->play_ms == 500 ? "faster" : "stop");
    else state_message(s, "play stopped");
    return ACT_NONE;
}

// Play's next step, when no key came in play_ms: like s, stopping at the end.
static UiAction play_step(State *s) {
    const char *why_not = stepper_command(&s->stepper, RUN_STEP);
    if (why_not) { // the end of the pass
        s->play_ms = 0;
        state_message(s, "played to the end (S plays again after r)");
        return ACT_NONE;
    }
    return ACT_RUN;
}

static UiAction cmd_picture(State *s, int key) {
    if (s->other_pictures == 0) { // a new pass on the same photo would only take time
        state_message(s, "} { have nothing to switch to: the model ships one picture");
        return ACT_NONE;
    }
    s->request = REQ_PICTURE;
    s->request_arg = key == '}' ? 1 : -1;
    return ACT_REQUEST;
}

// ( ): the training's film, the previous or next snapshot on the same picture.
static UiAction cmd_film(State *s, int key) {
    char why[sizeof s->message];
    int to;
    if (!frames_step(&s->film, key == ')' ? 1 : -1, &to, why, sizeof why)) {
        state_message(s, "%s", why);
        return ACT_NONE;
    }
    s->request = REQ_FRAME;
    s->request_arg = to;
    return ACT_REQUEST;
}

static UiAction cmd_test_image(State *s, int key) {
    prompt_line_open(s, PROMPT_TEST_IMAGE);
    return ACT_NONE;
}

static UiAction cmd_undo(State *s, int key) {
    if (!state_whatif(s)) {
        state_message(s, "no what-if to undo (x, X switch heads off; z masks a patch; Q runs "
                      "the Linear layers in bf16 or int8)");
        return ACT_NONE;
    }
    s->request = REQ_UNDO;
    return ACT_REQUEST;
}
// Q: the Linear layers in the next number, fp32 → bf16 → int8 → fp32, compared
// stage by stage with the unmodified pass as every what-if is.
static UiAction cmd_precision(State *s, int key) {
    if (s->backward) {
        state_message(s, "Q compares the forward pass in smaller numbers: d leaves the backward");
        return ACT_NONE;
    }
    s->request = REQ_PRECISION;
    return ACT_REQUEST;
}

// d: the backward pass for the predicted class, or back to the forward pass.
static UiAction cmd_backward(State *s, int key) {
    if (s->backward) {
        s->request = REQ_FORWARD;
        return ACT_REQUEST;
    }
    if (s->precision != LOWP_FP32) {
        state_message(s, "the backward pass needs fp32: Q until fp32, or u undoes the what-ifs");
        return ACT_NONE;
    }
    if (!stepper_finished(&s->stepper)) {
        state_message(s, "the backward pass starts from the logits: c runs the forward to them");
        return ACT_NONE;
    }
    s->request = REQ_BACKWARD;
    s->request_arg = -1;
    return ACT_REQUEST;
}

// D: the backward pass for a class typed in; otherwise as d.
static UiAction cmd_class(State *s, int key) {
    if (s->backward || !stepper_finished(&s->stepper)) return cmd_backward(s, key);
    prompt_line_open(s, PROMPT_CLASS);
    return ACT_NONE;
}

static UiAction cmd_quit(State *s, int key) { return ACT_QUIT; }

// B / e W: a line to type in the status row (tui_prompt.c).
static UiAction cmd_prompt(State *s, int key) {
    prompt_line_open(s, key == '/' ? PROMPT_GOTO : key == 'e' ? PROMPT_EXPORT
                        : key == 'W' ? PROMPT_WATCH : PROMPT_BREAKPOINT);
    return ACT_NONE;
}

// i: the breakpoints of both passes, listed in the title row (as gdb's info breakpoints).
static UiAction cmd_breakpoints(State *s, int key) {
    const Stepper *both[2] = {&s->stepper, &s->other_stepper};
    char list[sizeof s->message] = "";
    int n = 0;
    for (int p = 0; p < 2; p++)
        for (int i = 0; i < both[p]->count; i++)
            if (both[p]->breakpoints[i]) {
                size_t len = strlen(list);
                snprintf(list + len, sizeof list - len, "%s%s", n++ ? ", " : "",
                         both[p]->nodes[i].name);
            }
    if (n) state_message(s, "%d breakpoint%s: %s (B name again clears one, B - all)", n,
                         n == 1 ? "" : "s", list);
    else state_message(s, "no breakpoints (b on a stage, or B and its name)");
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

// t: the tree hidden or shown; the view takes its room.
static UiAction cmd_tree(State *s, int key) {
    s->hide_tree = !s->hide_tree;
    state_resize(s, s->layout.cols, s->layout.rows);
    state_message(s, s->hide_tree ? "the tree is hidden (t shows it)" : "the tree is back");
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
    {{'S'}, "S", "play: a step every 500 ms by itself; again: every 125 ms; again: stop",
     cmd_play},
    {{'B'}, "B", "breakpoint by name: blocks.5.attn.probs, or attn.probs for all", cmd_prompt},
    {{'i'}, "i", "the breakpoints, listed", cmd_breakpoints},
    {{'/'}, "/", "go to a stage by name (Tab completes)", cmd_prompt},
    {{'W'}, "W", "watch: stop where a stage's |value| exceeds a threshold", cmd_prompt},
    {{'e'}, "e", "export the tensor shown to .npy (or .safetensors) for a notebook", cmd_prompt},
    {{'}', '{'}, "} {", "next / previous shipped picture (the same stage, a new pass)", cmd_picture},
    {{'T'}, "T", "a Fashion-MNIST test image by number (0-9999; needs the dataset)",
     cmd_test_image},
    {{'(', ')'}, "( )", "the training's film: previous / next snapshot (epoch 0 1 2 4 …), "
     "the same picture and stage", cmd_film},
    {{'Q'}, "Q", "what-if: the Linear layers in bf16, again: int8, again: fp32 (chapter 15)",
     cmd_precision},
    {{'u'}, "u", "undo every what-if: back to the unmodified pass", cmd_undo},
    {{'d'}, "d", "backward pass of the predicted class's logit; again: the forward",
     cmd_backward},
    {{'D'}, "D", "backward for a class you choose (its number)", cmd_class},
    {{'I'}, "I", "head importance: each head off in turn, Δ p of the predicted class",
     importance_open},
    {{'\t', KEY_BTAB}, "Tab", "arrows move in the tree ↔ in the view", cmd_focus},
    {{'?'}, "?", "this help", cmd_help},
    {{27}, "Esc", "back to the tree, clear the message", cmd_escape},
    {{'t'}, "t", "hide / show the tree: the view gets the room", cmd_tree},
    {{12}, "Ctrl-L", "repaint the screen", cmd_redraw},
    {{'q'}, "q", "quit", cmd_quit},
};

const KeyTable app_keys = {"Running the forward pass", bindings,
                           sizeof bindings / sizeof bindings[0]};

UiAction app_key(State *s, int key) { return keytable_dispatch(&app_keys, s, key); }

// Does `key` open a line to type (/ B W e T D)? The table says, by the action it binds.
static bool opens_prompt(int key) {
    for (int i = 0; i < app_keys.count; i++)
        for (const int *k = app_keys.bindings[i].keys; *k; k++)
            if (*k == key)
                return app_keys.bindings[i].fn == cmd_prompt ||
                       app_keys.bindings[i].fn == cmd_test_image ||
                       app_keys.bindings[i].fn == cmd_class;
    return false;
}

// Who gets a key: the help or prompt when open; the view first when it has the
// focus; then the app, the tree, the view.
static UiAction handle_key(State *s, int key) {
    if (s->help) return help_key(s, key);
    if (s->prompting) return prompt_key(s, key);
    UiAction a = importance_key(s, key); // while open, its cursor has the arrows and Enter
    if (a == ACT_UNHANDLED) a = paint_key(s, key); // while painting: the arrows and space
    if (a == ACT_UNHANDLED) a = fingerprint_key(s, key); // while shown: S and the arrows
    if (a == ACT_UNHANDLED) a = position_key(s, key);    // while shown: the arrows
    if (a != ACT_UNHANDLED) return a;
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

// The step's second half: the backward and the updates, shown or not.
static const Stepper *step_second_half(const State *s) {
    return s->backward ? &s->stepper : &s->other_stepper;
}

// A training step's debugger steps that step only: it cannot restart it or
// change its input or model (the run's next step must stay the run's); d
// switches between the forward and the backward once all is computed.
static UiAction step_refuses(App *app, UiAction a) {
    State *s = &app->state;
    if (!app->step || (a != ACT_REQUEST && a != ACT_RESTART)) return a;
    const Request r = a == ACT_REQUEST ? s->request : REQ_NONE;
    s->request = REQ_NONE;
    if ((r == REQ_FORWARD || r == REQ_BACKWARD) && stepper_finished(step_second_half(s))) {
        state_show(s, !s->backward);
        state_message(s, s->backward ? "the step's backward and AdamW's updates (d: its forward)"
                                     : "the step's forward, on its batch (d: its backward)");
    } else if (r == REQ_FORWARD || r == REQ_BACKWARD) {
        state_message(s, "the step runs its forward, its backward and its updates in one go: "
                      "c runs on");
    } else {
        state_message(s, "a training step's debugger shows the run's next step as it is: no "
                      "restart, what-if or other picture (q goes back to the training)");
    }
    return ACT_NONE;
}

// In a training step's debugger the forward's end is not the pass's: s n f c
// there, and d, go on into the backward (which stops at its first stage).
static bool step_crosses(const App *app, int key) {
    const State *s = &app->state;
    return app->step && !s->backward && !s->help && !s->prompting &&
           stepper_finished(&s->stepper) && s->other_stepper.done == 0 && key && strchr("snfcd", key);
}

// ... and once the step is all computed, they have nothing to run: say what is
// left (the picture's passes say "r restarts it", which this one refuses).
static bool step_done_key(App *app, int key) {
    State *s = &app->state;
    if (!app->step || s->help || s->prompting || !key || !strchr("snfc", key) ||
        !stepper_finished(&s->stepper) || (!s->backward && s->other_stepper.done == 0))
        return false;
    state_message(s, "the step is computed: d shows its %s, q goes back to the training",
                  s->backward ? "forward" : "backward and updates");
    return true;
}

// The UI, until a key resumes the pass (ACT_RUN), restarts it or quits.
static UiAction ui_loop(App *app) {
    State *s = &app->state;
    s->running = false; // whatever ran before has stopped: the status row says so
    for (;;) {
        if (ui_missed_resize()) on_resize(s);
        app_draw(app);
        paint_mouse(s);
        timeout(s->play_ms > 0 ? s->play_ms : -1); // S: no key in time is a step
        const int key = getch();
        timeout(-1);
        if (key == ERR && s->play_ms > 0) {
            const UiAction a = play_step(s);
            if (a != ACT_NONE) return a;
            continue;
        }
        if (key == ERR) continue;
        app->key_at = vit_now();
        app->key_kind = key_kind(key);
        if (key == KEY_RESIZE) {
            on_resize(s);
            continue;
        }
        if (step_crosses(app, key)) return ACT_RUN;
        if (step_done_key(app, key)) continue;
        const UiAction a = step_refuses(app, handle_key(s, key));
        if (a != ACT_NONE) return a;
    }
}

// The keys typed while a pass ran, `first` the one that paused it. Typed
// ahead, "/blocks.11.attn.probs⏎" must not run as / then b, l, o, c … one
// by one: a key that opens a line to type is kept with all that follows, to
// run whole once paused (q too: pause, then quit); any other key only pauses,
// and the keys after it are dropped, and the title says how many.
static void typed_while_running(State *s, int first) {
    enum { KEEP = 100 }; // under ncurses' ungetch queue; more stay queued behind, in order
    int typed[KEEP], n = 0, dropped = 0;
    timeout(30); // what was typed in one burst (a paste, send-keys) is all here by then
    for (int k; n < KEEP && (k = getch()) != ERR;)
        if (k == KEY_RESIZE) on_resize(s);
        else typed[n++] = k;
    timeout(-1);
    if (first == 'q' || opens_prompt(first)) {
        while (n > 0) ungetch(typed[--n]); // ungetch is last in, first out
        ungetch(first);
    } else dropped = n;
    if (dropped)
        state_message(s, "paused; %d key%s typed after it dropped (? says why)", dropped,
                      dropped == 1 ? "" : "s"); // short: the title row has 2/3 of the width
    else state_message(s, "paused");
}

// The screen while a pass runs, its progress in the status row: never frozen.
static void draw_progress(App *app) {
    const double now = vit_now();
    if (now - app->last_progress > 0.05) { // ~20 frames a second is plenty
        app->state.run_seconds = now - app->run_since;
        screen_draw(&app->state);
        app->last_progress = now;
    }
}

// While running: a key pauses, a resize is taken in, the screen shows progress.
static bool poll_while_running(App *app) {
    State *s = &app->state;
    nodelay(stdscr, TRUE);
    const int key = getch();
    nodelay(stdscr, FALSE);
    if (ui_missed_resize()) on_resize(s);
    if (key == KEY_RESIZE) on_resize(s);
    else if (key != ERR) {
        typed_while_running(s, key);
        return true;
    }
    draw_progress(app);
    return false;
}

// The largest |a − b| of two recordings of one stage; NAN when either is gone.
static float max_change(const HistEntry *a, const HistEntry *b) {
    if (!a || !b || !a->kept || !b->kept || a->t.numel != b->t.numel) return NAN;
    float worst = 0;
    for (size_t i = 0; i < a->t.numel; i++) {
        const float d = fabsf(a->t.data[i] - b->t.data[i]);
        if (d > worst || d != d) worst = d; // a NaN on either side counts as changed
    }
    return worst;
}

// After a rerun: back to the stage the learner was looking at, and what changed.
static void rerun_done(App *app) {
    State *s = &app->state;
    Stepper *st = &s->stepper;
    app->rerun = false;
    if (app->keep_selected >= 0) {
        st->selected = app->keep_selected;
        st->sel_header = app->keep_header;
        const int b = st->nodes[st->selected].block;
        if (b >= 0 && !st->sel_header) st->open[b] = true;
    }
    if (state_whatif(s)) state_whatif_summary(s, s->message, sizeof s->message);
}

// Node `node` is computed: record it, and stop here if the stepper or a key says so.
static void stage_computed(App *app, int node, const Tensor *t, double seconds) {
    State *s = &app->state;
    history_record(&s->history, node, t, seconds);
    if (!s->backward) // a what-if is compared on the forward pass
        s->moved[node] = state_whatif(s) ? max_change(history_get(&s->history, node),
                                                      history_get(&s->baseline, node))
                                         : NAN;
    bool stop = stepper_computed(&s->stepper, node);
    if (app->rerun) stop = node >= s->stepper.target; // a rerun passes the breakpoints
    else if (stop && s->stepper.breakpoints[node])
        state_message(s, "breakpoint at %s", s->stepper.nodes[node].name);
    // the first NaN or infinity of a pass is a breakpoint of its own: all after it inherit them
    const TensorStats *st = &history_get(&s->history, node)->stats;
    if (!app->saw_non_finite && st->n_nan + st->n_inf > 0) {
        app->saw_non_finite = stop = true;
        app->rerun = false;
        state_message(s, "stopped at the first NaN or infinity: %s (%zu NaN, %zu Inf)",
                      s->stepper.nodes[node].name, st->n_nan, st->n_inf);
    }
    const float biggest = fmaxf(fabsf(st->min), fabsf(st->max));
    if (!stop && s->watch > 0 && biggest > s->watch) { // W: a value past the threshold
        stop = true;
        app->rerun = false;
        state_message(s, "stopped: %s has |value| up to %.4g, past the watch %g (W 0: off)",
                      s->stepper.nodes[node].name, (double)biggest, (double)s->watch);
    }
    if (!stop && !app->rerun) stop = poll_while_running(app); // a rerun is not interrupted
    else if (!stop) draw_progress(app);                       // ... but shown
    if (!stop) return;
    s->running = false;
    stepper_stopped_at(&s->stepper, node);
    if (app->rerun) rerun_done(app);
    app->rerun = false;
    state_clamp(s);
    const UiAction a = ui_loop(app);
    if (a == ACT_QUIT || a == ACT_RESTART || a == ACT_REQUEST) app->abandon = a;
    s->running = true;
    app->run_since = vit_now();
    if (a == ACT_RESTART || a == ACT_REQUEST) s->run_out = node + 1; // it runs out unseen
    if (a == ACT_QUIT) ui_stop(); // the terminal back at once; the pass runs out unseen
    if (a == ACT_RESTART || a == ACT_REQUEST) { // the rest of this pass takes a moment
        state_message(s, a == ACT_RESTART ? "restarting…" : "running the new pass…");
        screen_draw(s);
    }
}

// "patches" is not traced by vit_forward(): the viewer cuts them from the input.
static Tensor cut_patches(const VitConfig *c, const Tensor *input) {
    const int B = input->shape[0], p = c->patch_size;
    Tensor patches = tensor_new(3, B, vit_num_patches(c), c->channels * p * p);
    patch_unfold(patches.data, input->data, B, c->channels, c->image_size, p);
    return patches;
}

static void patches_computed(App *app, int node, const Tensor *input) {
    const double start = vit_now();
    Tensor patches = cut_patches(app->state.cfg, input);
    stage_computed(app, node, &patches, vit_now() - start);
    tensor_free(&patches);
}

// The TraceFn: every stage of vit_forward() arrives here, in order.
static void on_trace(void *user, const char *name, const Tensor *t) {
    App *app = user;
    if (app->abandon != ACT_NONE) { // restarting or quitting: run out, only counted
        const int node = stepper_find(&app->state.stepper, name);
        if (app->abandon != ACT_QUIT && node >= 0) { // (after q the terminal is given back)
            app->state.run_out = node + 1;
            draw_progress(app);
        }
        return;
    }
    const double seconds = vit_now() - app->resumed_at;
    const int node = stepper_find(&app->state.stepper, name);
    if (node < 0) return; // not in the contract: nothing to show
    stage_computed(app, node, t, seconds);
    if (strcmp(name, "input") == 0 && app->abandon == ACT_NONE)
        patches_computed(app, node + 1, t);
    app->resumed_at = vit_now(); // UI time is not the next stage's compute time
}

// The TraceFn of the unmodified pass a what-if is compared with: record, never stop.
static void on_baseline(void *user, const char *name, const Tensor *t) {
    State *s = user;
    const int node = stepper_find(&s->stepper, name);
    if (node < 0) return;
    history_record(&s->baseline, node, t, 0);
    if (strcmp(name, "input") == 0) {
        Tensor patches = cut_patches(s->cfg, t);
        history_record(&s->baseline, node + 1, &patches, 0);
        tensor_free(&patches);
    }
}

static void restart(App *app) {
    State *s = &app->state;
    history_clear(&s->history);
    stepper_restart(&s->stepper);
    for (int b = 0; b < s->stepper.depth; b++) s->stepper.open[b] = false; // a fresh tree too
    s->stepper.auto_open = -1;
    state_message(s, "restarted: a fresh forward pass, the same breakpoints");
}

// The next pass runs to node `target` without stopping, then shows what was selected.
static void rerun_to(App *app, int target) {
    State *s = &app->state;
    app->keep_selected = s->stepper.selected;
    app->keep_header = s->stepper.sel_header;
    history_clear(&s->history);
    stepper_restart(&s->stepper);
    s->stepper.target = target < 0 ? 0 : target;
    app->rerun = true;
}

// The pass's input: the picture, with the masked patches painted black, then
// the pixels painted by hand.
static void make_input(App *app) {
    const State *s = &app->state;
    const int S = s->cfg->image_size;
    memcpy(app->input.data, app->original.data, app->original.numel * sizeof(float));
    for (int p = 0; p < vit_num_patches(s->cfg); p++)
        if (s->masked[p]) pictures_mask_patch(app->pictures, &app->input, s->cfg->patch_size, p);
    for (int y = 0; y < S; y++)
        for (int x = 0; x < S; x++)
            if (s->painted[y * S + x])
                pictures_paint_pixel(app->pictures, &app->input, y, x, s->painted[y * S + x] > 0);
}

// A failure in the title row, escaped: the message may quote a file name, and a
// name may hold escape sequences.
static void message_error(State *s, const VitError *err) {
    char safe[sizeof s->message];
    state_message(s, "%s", vit_escape(safe, sizeof safe, err->msg));
}

static void set_title(App *app, const char *picture) {
    if (picture != app->picture) snprintf(app->picture, sizeof app->picture, "%s", picture);
    // (the film's frame is added by title_draw() when the row has room for it)
    snprintf(app->state.title, sizeof app->state.title, "%s · %s", app->model, app->picture);
    const Pictures *p = app->pictures; // the title changes with the picture: so does this
    app->state.other_pictures = !p ? 0 : p->count - (p->current >= 0);
}

// Back to the unmodified model and picture.
static void whatif_undo(App *app) {
    state_whatif_clear(&app->state);
    vit_heads_all_on(app->vit);
    VitError ignored; // fp32 cannot be refused: it only frees the copies
    vit_set_precision(app->vit, LOWP_FP32, &ignored);
    make_input(app);
}

// { } T: another picture; what-ifs are undone (they were measured on the old one).
static void new_picture(App *app, Request r, int arg) {
    State *s = &app->state;
    Tensor input = {0};
    char desc[160];
    VitError err;
    VitStatus st = !app->pictures ? vit_fail(&err, VIT_ERR_INPUT, "no pictures to switch to")
                   : r == REQ_PICTURE ? pictures_step(app->pictures, arg, &input, desc,
                                                      sizeof desc, &err)
                                      : pictures_load_test(app->pictures, arg, &input, desc,
                                                           sizeof desc, &err);
    if (st != VIT_OK) {
        message_error(s, &err);
        return;
    }
    const bool had_whatif = state_whatif(s);
    importance_clear(&s->importance); // measured on the old picture
    tensor_free(&app->original);
    app->original = input;
    whatif_undo(app);
    set_title(app, desc);
    const Pictures *p = app->pictures;
    const char *undone = had_whatif ? " · what-ifs undone" : "";
    if (p->current >= 0) {
        const char *base = strrchr(p->paths[p->current], '/');
        char name[96]; // a file name may hold escape sequences: shown escaped
        vit_escape(name, sizeof name, base ? base + 1 : p->paths[p->current]);
        state_message(s, "picture %d of %d: %s (} {)%s", p->current + 1, p->count, name, undone);
    } else {
        const int label = p->test.labels[p->test_index];
        state_message(s, "test image %d: %s (T for another)%s", p->test_index,
                      p->test.class_names ? p->test.class_names[label] : "?", undone);
    }
}

// ( ): the film's place `to` in the model, the picture kept; what-ifs are
// undone (they were of the weights shown), so is head importance.
static void new_frame(App *app, int to) {
    State *s = &app->state;
    const bool had_whatif = state_whatif(s);
    whatif_undo(app); // every head on again before the weights change
    VitError err;
    if (frames_show(&s->film, app->vit, to, &err) != VIT_OK) {
        message_error(s, &err);
        return;
    }
    importance_clear(&s->importance); // measured with the old weights
    s->weights_path = app->vit->file.label; // the file shown, not to be overwritten (e)
    set_title(app, app->picture);
    char frame[96];
    frames_label(&s->film, to, frame, sizeof frame);
    state_message(s, "%s: the same picture, these weights (( ) move)%s", frame,
                  had_whatif ? " · what-ifs undone" : "");
}

// x X z: change the model or the input; the first change records the unmodified pass.
static VitStatus whatif_apply(App *app, Request r, VitError *err) {
    State *s = &app->state;
    const VitConfig *c = s->cfg;
    if (!state_whatif(s)) { // the pass to compare with, before anything changes
        history_clear(&s->baseline);
        VitStatus st = vit_forward(app->vit, &app->input, on_baseline, s, err);
        if (st != VIT_OK) return st;
    }
    if (r == REQ_HEAD) {
        bool *row = s->heads_off + (size_t)s->request_block * c->heads;
        bool off = s->request_head >= 0 ? !row[s->request_head] : false;
        if (s->request_head < 0) // the whole block: off unless it is off already
            for (int h = 0; h < c->heads; h++) off |= !row[h];
        for (int h = 0; h < c->heads; h++)
            if (s->request_head < 0 || h == s->request_head) {
                row[h] = off;
                VitStatus st = vit_set_head_off(app->vit, s->request_block, h, off, err);
                if (st != VIT_OK) return st;
            }
    } else if (r == REQ_PATCH) {
        s->masked[s->request_arg] = !s->masked[s->request_arg];
        make_input(app);
    } else if (r == REQ_PRECISION) {
        const LowpPrecision next = s->precision == LOWP_FP32   ? LOWP_BF16
                                   : s->precision == LOWP_BF16 ? LOWP_INT8
                                                               : LOWP_FP32;
        VitStatus st = vit_set_precision(app->vit, next, err);
        if (st != VIT_OK) return st;
        s->precision = next;
    } else if (r == REQ_PAINT) { // a light pixel turns black, a dark one white
        const int S = c->image_size, at = s->paint_y * S + s->paint_x;
        s->painted[at] = pictures_pixel_light(app->pictures, &app->input, s->paint_y, s->paint_x)
                             ? -1 : 1;
        make_input(app);
    }
    if (!state_whatif(s)) whatif_undo(app); // toggled back: nothing left to compare
    return VIT_OK;
}

// The measure's progress in the title row, about 20 times a second.
static void importance_progress(void *user, int done, int total) {
    App *app = user;
    const double now = vit_now();
    if (now - app->last_progress < 0.05 && done < total) return;
    state_message(&app->state, "head importance: pass %d of %d…", done, total);
    screen_draw(&app->state);
    app->last_progress = now;
}

// I: every head off in turn on the picture as loaded (no masked patch), against
// every head on; the what-ifs' switches are put back by head_importance().
static void importance_measure(App *app) {
    State *s = &app->state;
    VitError err;
    importance_clear(&s->importance);
    s->run_out = 0; // the status row: where the shown pass is, not the one that ran out
    s->running = false;
    importance_progress(app, 0, s->cfg->depth * (s->cfg->heads + 1) + 1);
    const VitStatus st = head_importance_watched(&s->importance.grid, app->vit, &app->original,
                                                 NULL, importance_progress, app, &err);
    s->running = true; // the rerun back to where the pass was comes next
    if (st != VIT_OK) {
        importance_clear(&s->importance);
        message_error(s, &err);
        return;
    }
    state_close_views(s); // one view in place of the stage's at a time
    s->importance.measured = s->importance.shown = true;
    importance_cursor_most(&s->importance);
    state_message(s, "head importance of the picture, every head on but one (I closes)");
}

// O: occlusion beside the attention maps of the input the pass sees, what-ifs included.
static void occlusion_run(App *app) {
    State *s = &app->state;
    VitError err, ignored;
    if (!app->pictures) {
        state_message(s, "occlusion needs the pictures' preprocessing (what black is)");
        return;
    }
    float black[IMAGE_MAX_CHANNELS];
    occlusion_black(black, app->pictures->pre.mean, app->pictures->pre.std, s->cfg->channels);
    const int side = s->cfg->image_size / s->cfg->patch_size;
    const int passes = side * side + 3 + OCCLUSION_MAPS * MEASURE_KS;
    state_message(s, "occlusion: %d passes + a backward…", passes); // said before a long wait
    screen_draw(s);
    const double t0 = vit_now();
    state_close_views(s); // one view in place of the stage's at a time
    VitStatus st = occlusion_compare(&s->occlusion, app->vit, &app->input, black, &err);
    vit_train_prepare(app->vit, VIT_KEEP_NONE, 1, &ignored); // back to inference
    if (st != VIT_OK) message_error(s, &err);
    else state_message(s, "occlusion: %d passes + a backward, %.1f s", passes, vit_now() - t0);
}

// B for C: the shipped picture after the one shown (the first when none is), and its name.
static VitStatus picture_b(App *app, Tensor *b, VitError *err) {
    Pictures *p = app->pictures;
    if (!p || p->count == 0)
        return vit_fail(err, VIT_ERR_INPUT, "patching needs a shipped picture as B: none found");
    const char *path = p->paths[p->current >= 0 ? (p->current + 1) % p->count : 0];
    char desc[160], shown[sizeof p->shown];
    const int current = p->current, test_index = p->test_index;
    memcpy(shown, p->shown, sizeof shown); // loading B must not make it the picture shown
    VitStatus st = pictures_load_file(p, path, b, desc, sizeof desc, err);
    p->current = current, p->test_index = test_index;
    memcpy(p->shown, shown, sizeof shown);
    const char *base = strrchr(path, '/');
    if (st == VIT_OK)
        vit_escape(app->state.patching_b, sizeof app->state.patching_b, base ? base + 1 : path);
    return st;
}

// C: the input the pass sees as A, the next shipped picture as B, every (block, token).
static void patching_run(App *app) {
    State *s = &app->state;
    VitError err;
    Tensor b = {0};
    const int passes = 2 + s->cfg->depth * vit_num_tokens(s->cfg);
    state_message(s, "patching: %d part-passes…", passes); // said before a wait
    screen_draw(s);
    const double t0 = vit_now();
    state_close_views(s); // one view in place of the stage's at a time
    VitStatus st = picture_b(app, &b, &err);
    if (st == VIT_OK) st = patching_grid(&s->patching, app->vit, &app->input, &b, -1, &err);
    tensor_free(&b);
    if (st != VIT_OK) {
        patching_free(&s->patching);
        message_error(s, &err);
        return;
    }
    state_message(s, "patching: %d part-passes, %.1f s (C closes)", passes, vit_now() - t0);
}

// Between passes: do what the key asked, and say where the next pass stops.
static void do_request(App *app) {
    State *s = &app->state;
    const Request r = s->request;
    s->request = REQ_NONE;
    const int frontier = s->stepper.done - 1, end = s->stepper.count - 1;
    if (r == REQ_OCCLUSION) {
        occlusion_run(app);
        rerun_to(app, frontier); // the pass it interrupted, to the same stage
        return;
    }
    if (r == REQ_PATCHING) {
        patching_run(app);
        rerun_to(app, frontier); // the pass it interrupted, to the same stage
        return;
    }
    occlusion_comparison_free(&s->occlusion); // it was of the old picture or model
    patching_free(&s->patching);
    if (r == REQ_FRAME) {
        new_frame(app, s->request_arg);
        rerun_to(app, frontier); // the same stage, with the frame's weights
        return;
    }
    if (r == REQ_PICTURE || r == REQ_TEST_IMAGE) {
        new_picture(app, r, s->request_arg);
        rerun_to(app, frontier); // the same stage, on the new picture
        return;
    }
    if (r == REQ_IMPORTANCE) {
        importance_measure(app);
        rerun_to(app, frontier); // back where the pass was
        return;
    }
    if (r == REQ_UNDO) {
        whatif_undo(app);
        state_message(s, "what-ifs undone: the unmodified pass");
    } else {
        VitError err;
        if (whatif_apply(app, r, &err) != VIT_OK) message_error(s, &err);
    }
    rerun_to(app, state_whatif(s) ? end : frontier); // a what-if shows its logits
}

// The backward pass's stages on the screen, none computed yet, and which logit.
static void show_backward(State *s, int cls) {
    state_show(s, true);
    s->backward_class = cls;
    history_clear(&s->history);
    stepper_restart(&s->stepper);
    s->attn_view = ATTN_MAP;
    const char *name = labels_name(&s->labels, cls);
    char whatif[160] = "";
    if (state_whatif(s)) state_whatif_text(s, whatif, sizeof whatif);
    state_message(s, "backward: the gradients of logit %d (%s), from the logits back%s%s", cls,
                  name && name[0] ? name : "no name", whatif[0] ? ", with " : "", whatif);
}

// d: run the backward pass of logit `cls` (-1: the predicted class) under the
// UI, stage by stage like the forward, then browse it until a key leaves it.
// The model keeps its blocks' inputs for it (VIT_KEEP_INPUTS), only meanwhile.
static VitStatus backward_pass(App *app, int cls, VitError *err) {
    State *s = &app->state;
    Vit *vit = app->vit;
    const int Y = s->cfg->num_classes;
    if (cls >= Y) return vit_fail(err, VIT_ERR_USAGE, "class %d: the model has classes 0 to %d",
                                  cls, Y - 1);
    VitGrads grads = {0};
    float *dlogits = vit_calloc((size_t)Y, sizeof *dlogits);
    VitStatus st = vit_train_prepare(vit, VIT_KEEP_INPUTS, 1, err);
    if (st == VIT_OK) st = vit_forward(vit, &app->input, NULL, NULL, err); // the same pass, kept
    if (st == VIT_OK) st = vit_grads_init(&grads, vit, err);
    if (st == VIT_OK) {
        if (cls < 0) cls = ops_index_of_max(vit_logits(vit).data, Y); // the predicted class
        dlogits[cls] = 1.0f; // d logit_c / d logits: the gradients are of the class's logit
        show_backward(s, cls);
        app->abandon = ACT_NONE;
        app->resumed_at = app->run_since = vit_now();
        s->run_out = 0;
        st = vit_backward(vit, &grads, dlogits, on_trace, app, err);
        while (st == VIT_OK && app->abandon == ACT_NONE) { // finished: browse the gradients
            UiAction a = ui_loop(app);
            if (a == ACT_QUIT || a == ACT_RESTART || a == ACT_REQUEST) app->abandon = a;
        }
        state_show(s, false);
    }
    vit_grads_free(&grads);
    free(dlogits);
    VitError ignored;
    vit_train_prepare(vit, VIT_KEEP_NONE, 1, &ignored); // back to inference
    return st;
}

// What the key that ended a pass asked: the backward pass (d), then whatever
// ended that; a new picture, a what-if, a restart. false: quit.
static bool between_passes(App *app, bool *run_forward) {
    State *s = &app->state;
    while (app->abandon == ACT_REQUEST && s->request == REQ_BACKWARD) {
        s->request = REQ_NONE;
        VitError err;
        if (backward_pass(app, s->request_arg, &err) != VIT_OK) {
            message_error(s, &err);
            app->abandon = ACT_NONE;
        }
    }
    *run_forward = true;
    if (app->abandon == ACT_QUIT) return false;
    if (app->abandon == ACT_REQUEST && s->request == REQ_FORWARD) {
        s->request = REQ_NONE;
        state_message(s, "the forward pass again (d: the backward)");
        *run_forward = false; // it is done: browse it again
    } else if (app->abandon == ACT_REQUEST) do_request(app);
    else if (app->abandon == ACT_RESTART) restart(app);
    else *run_forward = false; // the backward could not start: browse the forward again
    return true;
}

// The passes, one after the other, until q: the forward under the UI (or,
// after the backward, the finished one browsed again), the backward when d
// asks for it, then what the key that ended them asked. Returns the exit status.
static int run_passes(App *app) {
    State *s = &app->state;
    int status = 0;
    bool run_forward = true; // false: the forward pass is done; browse it again
    for (;;) {
        app->abandon = ACT_NONE;
        app->saw_non_finite = false;
        app->resumed_at = app->run_since = vit_now();
        s->run_out = 0;
        VitError err;
        if (run_forward) {
            VitStatus st = vit_forward(app->vit, &app->input, on_trace, app, &err);
            if (st != VIT_OK) {
                ui_stop();
                vit_print_error("vitview", &err);
                status = st;
                break;
            }
            if (app->rerun && app->abandon == ACT_NONE) { // a rerun whose target was never reached
                stepper_stopped_at(&s->stepper, s->stepper.done - 1);
                rerun_done(app);
            }
        }
        while (app->abandon == ACT_NONE) { // finished: browse until restart or quit
            UiAction a = ui_loop(app);
            if (a == ACT_QUIT || a == ACT_RESTART || a == ACT_REQUEST) app->abandon = a;
        }
        if (!between_passes(app, &run_forward)) break;
    }
    return status;
}

void app_restore_terminal(void) { ui_stop(); }

// The viewer's state for the options: what app_run() and a training step's
// debugger share. The labels and the film pass to the state.
static App *app_new(AppOptions *opt) {
    App *app = vit_calloc(1, sizeof *app);
    app->vit = opt->vit;
    app->pictures = opt->pictures;
    app->original = tensor_clone(opt->input);
    app->input = tensor_clone(opt->input);
    app->keep_selected = -1;
    snprintf(app->model, sizeof app->model, "%s", opt->model);
    state_init(&app->state, &opt->vit->config, opt->history_bytes);
    State *s = &app->state;
    s->model = opt->vit; // the logit lens reads its norm and head
    s->labels = opt->labels; // the state owns them now
    opt->labels = (Labels){0};
    s->film = opt->film; // and the film
    opt->film = (FilmView){0};
    set_title(app, opt->picture);
    s->weights_path = opt->vit->file.label; // NULL for random weights
    s->picture_path = opt->pictures ? opt->pictures->shown : NULL;
    if (opt->message) state_message(s, "%s", opt->message);
    return app;
}

static void app_free(App *app) {
    vit_heads_all_on(app->vit);
    tensor_free(&app->original);
    tensor_free(&app->input);
    state_free(&app->state);
    free(app);
}

int app_run(AppOptions *opt) {
    setlocale(LC_ALL, "");
    SCREEN *screen = ui_open_terminal();
    if (!screen) {
        const char *term = getenv("TERM");
        fprintf(stderr, "vitview: cannot drive this terminal (TERM=%s)\n", term ? term : "unset");
        labels_free(&opt->labels);
        frames_free(&opt->film);
        return VIT_ERR_USAGE;
    }
    App *app = app_new(opt);
    ui_start(&app->state, opt->mono);
    const int status = run_passes(app);
    ui_stop();
    delscreen(screen);
    if (opt->timings) timings_write(app, opt->timings);
    app_free(app);
    return status;
}

/* ------------------------------------------- a training step's debugger */

// Its TraceFn: the forward's stages, then, at the first gradient, the second
// pass shown (the backward of the loss, then the updates), stopping at its start.
static void on_step_trace(void *user, const char *name, const Tensor *t) {
    App *app = user;
    State *s = &app->state;
    if (!s->backward && (!strncmp(name, VIT_GRAD_PREFIX, strlen(VIT_GRAD_PREFIX)) ||
                         !strncmp(name, TRAIN_UPDATE_PREFIX, strlen(TRAIN_UPDATE_PREFIX)))) {
        state_show(s, true);
        history_clear(&s->history);
        stepper_restart(&s->stepper);
        if (app->abandon == ACT_NONE)
            state_message(s, "the forward is done: now the gradient of the batch's loss, "
                          "stage by stage back, then AdamW's update of each parameter");
    }
    on_trace(user, name, t);
}

// The step's one pass under the UI, then browsed until q.
static void run_step_pass(App *app) {
    State *s = &app->state;
    app->abandon = ACT_NONE;
    app->resumed_at = app->run_since = vit_now();
    s->run_out = 0;
    VitError err;
    if (train_step_view_run(app->step, on_step_trace, app, &err) != VIT_OK) message_error(s, &err);
    else if (app->abandon == ACT_NONE)
        state_message(s, "step %lld taken on the copy: loss %.4f, %d of %d right, gradient norm "
                      "%.3g before clipping (d: the forward; q: back to the training)",
                      (long long)app->step->step + 1, (double)app->step->result.loss,
                      app->step->result.correct, app->step->copy.config.batch,
                      app->step->result.grad_norm);
    while (app->abandon != ACT_QUIT && ui_loop(app) != ACT_QUIT) {}
}

int app_run_train_step(AppOptions *opt, TrainStepView *step) {
    App *app = app_new(opt);
    app->step = step;
    state_init_train_step(&app->state, step, opt->history_bytes);
    char title[160];
    snprintf(title, sizeof title, "step %lld of the run, on a copy: the batch of %d",
             (long long)step->step + 1, step->copy.config.batch);
    set_title(app, title);
    ui_start(&app->state, opt->mono);
    run_step_pass(app);
    app_free(app);
    return 0;
}
