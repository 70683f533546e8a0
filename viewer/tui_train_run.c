/**
 * @file tui_train_run.c
 * @brief `vitview --train`: the run of `vit train`, one step at a time
 *        (train/run.h), with the training screen redrawn between steps.
 *
 * The loop: take a step (unless paused); every TrainView::redraw_ms, run the
 * panel's pictures on the weights as they are (train_panel.c), copy what the
 * run has done into the view, draw it. Keys are read without waiting while
 * the run runs and waiting while it is paused. The layers' health is measured
 * on the first step after each redraw only, and the panel never more often
 * than the screen is drawn, so watching costs a few percent of the time: the
 * status row and the last message say how much. Nothing here writes to the
 * run's model, so its weights are those of `vit train` with the same flags,
 * bit for bit.
 *
 * q (or Ctrl-C) stops the run as Ctrl-C stops `vit train`: a checkpoint at
 * the current step, and the line saying how to resume, printed after the
 * screen is given back.
 */
#include "app.h"
#include "history.h"
#include "tui_train.h"
#include "train_panel.h"
#include "tui.h"
#include "base/fileio.h"
#include "gemm/gemm.h"
#include "train/layer_stats.h"
#include "train/run.h"
#include "train/step_view.h"
#include "../cli/train_command.h"

#include <locale.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------- the watch */

/** Everything the screen's loop holds, freed in one place. */
typedef struct {
    TrainRun run;            // the run itself (train/run.h)
    TrainView view;          // what the screen shows
    TrainPanel panel;        // the pictures, on a probe of the run's model
    TrainLayerWatch layers;  // the weights before a measured step
    TrainLayerStats *stats;  // (groups) its numbers
    bool measure;            // measure the next step's layers (the first after a redraw)
    double last_draw;        // vit_now() at the last redraw
    bool mono;               // --mono, for the debugger too
} Watch;

// What the run keeps that the screen shows, copied in: its place, its speed,
// the last validation's confusion matrix.
static void sync_view(Watch *w) {
    TrainView *v = &w->view;
    const TrainRun *r = &w->run;
    v->step = r->t.step;
    v->images_per_s = train_run_rate(r);
    v->eta_s = train_run_rate(r) > 0 ? train_run_eta(r) : NAN;
    v->finished = train_run_done(r);
    if (r->last_val.confusion && r->last_val.classes == v->classes) {
        const size_t n = (size_t)v->classes * v->classes;
        if (!v->confusion) v->confusion = vit_calloc(n, sizeof *v->confusion);
        memcpy(v->confusion, r->last_val.confusion, n * sizeof *v->confusion);
    }
}

// A step's numbers onto the curves; an epoch's validation onto theirs.
static void add_step(TrainView *v, const TrainRun *r, const TrainRunStep *st) {
    series_push(&v->train_loss, st->step.loss);
    series_push(&v->train_acc, (float)st->step.correct / (float)r->t.config.batch);
    v->lr = st->step.lr;
    v->grad_norm = st->step.grad_norm;
    if (st->epoch_ended && r->epochs_done > 0) {
        const TrainEpochRow *e = &r->epochs[r->epochs_done - 1];
        series_push(&v->val_loss, (float)e->val_loss);
        series_push(&v->val_acc, (float)e->val_acc);
    }
}

// A resumed run's past, from its history: the steps it knows (those before
// the stop are not kept: gaps in the curves) and the finished epochs.
static void add_history(TrainView *v, const TrainRun *r) {
    for (int64_t i = 0; i < r->t.step; i++) {
        const TrainStepPoint *p = &r->steps[i];
        const bool known = p->correct >= 0; // a step before a resume: not kept (zeros)
        series_push(&v->train_loss, known ? p->loss : NAN);
        series_push(&v->train_acc, known ? (float)p->correct / (float)r->t.config.batch : NAN);
    }
    for (int e = 0; e < r->epochs_done; e++) {
        series_push(&v->val_loss, (float)r->epochs[e].val_loss);
        series_push(&v->val_acc, (float)r->epochs[e].val_acc);
    }
}

// The panel's pictures on the weights as they are. A few pictures: one
// thread; more would be woken for it after the trainer's shards, which costs
// half a second once, for nothing. The matrix product is chosen once per
// process, at the thread count of its first product (gemm_choice.c): chosen
// here at one thread, the run's products took the one-thread answer, which
// on a busy machine was not vit train's, and the model differed from vit
// train's in its last bits. So it is chosen first, at the run's count.
static VitStatus panel_pass(Watch *w, VitError *err) {
    (void)gemm_choice();
    const int threads = vit_get_threads();
    vit_set_threads(1);
    const VitStatus s = train_panel_update(&w->panel, &w->view, err);
    vit_set_threads(threads);
    return s;
}

// The panel on the weights as they are, the run's numbers, the screen: the
// cost of watching, timed. @p panel: run the pictures again.
static void redraw(Watch *w, bool panel) {
    const double t0 = vit_now();
    if (panel) {
        VitError err;
        if (panel_pass(w, &err) != VIT_OK) train_view_message(&w->view, "the panel: %s", err.msg);
    }
    sync_view(w);
    train_screen_draw(&w->view);
    w->last_draw = vit_now();
    // what slows the training: redraws while it runs (not those a key asks
    // for while it is paused, nor those after its end)
    if (!w->view.paused && !w->view.finished) w->view.watch_seconds += w->last_draw - t0;
    if (panel) w->view.redraw_seconds = w->last_draw - t0;
    w->measure = true; // the next step's layers are the ones the next redraw shows
}

// One optimizer step; the time inside train_run_step() is training, the
// layers' measure around it is watching. A run that keeps a layer log
// measures every step itself (as vit train does): its numbers are read.
static VitStatus one_step(Watch *w, VitError *err) {
    TrainView *v = &w->view;
    const bool measure = w->measure && w->stats && !w->run.watch_layers;
    const double t0 = vit_now();
    if (measure) train_layers_before(&w->layers, &w->run.t.opt);
    const double t1 = vit_now();
    TrainRunStep st;
    VitStatus s = train_run_step(&w->run, &st, err);
    const double t2 = vit_now();
    v->train_seconds += t2 - t1;
    if (s != VIT_OK) return s;
    if (measure)
        train_layers_after(&w->layers, &w->run.t.opt, st.step.grad_norm, w->run.t.config.clip,
                           w->stats);
    const TrainLayerStats *now = w->run.watch_layers ? w->run.layers : measure ? w->stats : NULL;
    if (now) {
        v->layer_rows = w->layers.groups;
        for (int g = 0; g < v->layer_rows; g++) {
            v->layers[g].grad_norm = now[g].grad_norm;
            v->layers[g].weight_norm = now[g].weight_norm;
            v->layers[g].update_ratio = now[g].update_ratio;
        }
        w->measure = false;
    }
    add_step(v, &w->run, &st);
    v->watch_seconds += (t1 - t0) + (vit_now() - t2);
    return VIT_OK;
}

// The data's class names, for the debugger's logits (it owns them).
static Labels class_labels(const Dataset *d) {
    Labels l = {.names = vit_calloc((size_t)d->classes, sizeof *l.names), .count = d->classes};
    for (int i = 0; i < d->classes; i++) {
        char number[16];
        snprintf(number, sizeof number, "%d", i);
        l.names[i] = vit_strdup(d->class_names ? d->class_names[i] : number);
    }
    return l;
}

// d (paused): the debugger on the run's next step, taken on a copy
// (train/step_view.h). The run is not touched: it goes on from here as if
// nobody had looked, and the step the debugger showed is the one it takes.
static void debug_step(Watch *w) {
    TrainView *v = &w->view;
    VitError err;
    TrainStepView sv;
    if (train_step_view_open(&sv, &w->run.t, &err) != VIT_OK) {
        train_view_message(v, "%s", err.msg);
        return;
    }
    const TrainConfig *c = &sv.copy.config;
    const VitConfig *m = &sv.copy.vit.config;
    const int shape[4] = {c->batch, m->channels, m->image_size, m->image_size};
    const Tensor batch = tensor_view_shape(sv.copy.images, 4, shape); // drawn by the view
    AppOptions opt = {.vit = &sv.copy.vit, .input = &batch, .model = v->model, .picture = "",
                      .history_bytes = HISTORY_DEFAULT_BUDGET,
                      .labels = class_labels(&w->run.all), .mono = w->mono};
    app_run_train_step(&opt, &sv);
    const int64_t next = sv.step + 1;
    train_step_view_free(&sv);
    train_screen_start(v, w->mono); // the training screen's look again
    clearok(curscr, TRUE);
    train_view_message(v, "back from the debugger: the run is where it was, step %lld next "
                       "(. takes it, space resumes)", (long long)next);
}

// A key: arrows as j k, a resize, Ctrl-L; the rest by the view's table.
static TrainAction handle_key(Watch *w, int key) {
    TrainView *v = &w->view;
    if (key == KEY_RESIZE) {
        train_screen_resize(v);
        return TV_NONE;
    }
    if (key == 12) { // Ctrl-L: repaint everything
        clearok(curscr, TRUE);
        return TV_NONE;
    }
    if (key == KEY_DOWN) key = 'j';
    if (key == KEY_UP) key = 'k';
    if (key == KEY_BTAB) key = '\t';
    const TrainAction a = train_view_key(v, key);
    if (a == TV_UNHANDLED) {
        train_view_message(v, "that key does nothing here: ? lists the keys");
        return TV_NONE;
    }
    return a;
}

// Every step of the run under the screen. VIT_OK when they are all taken;
// q or Ctrl-C: the checkpoint, and the message saying how to resume.
static VitStatus watch_loop(Watch *w, VitError *err) {
    TrainView *v = &w->view;
    redraw(w, false); // the panel was computed at the start
    while (!train_run_done(&w->run)) {
        if (train_stop_requested()) return train_run_interrupt(&w->run, err);
        // running: look for a key and go on; paused: wait for one (a fifth of a
        // second at a time, so that Ctrl-C is seen)
        timeout(v->paused ? 200 : 0);
        if (ui_missed_resize()) train_screen_resize(v);
        const int key = getch();
        if (key != ERR) {
            const TrainAction a = handle_key(w, key);
            if (a == TV_QUIT) return train_run_interrupt(&w->run, err);
            if (a == TV_DEBUG) debug_step(w);
            if (a == TV_STEP) {
                VitStatus s = one_step(w, err);
                if (s != VIT_OK) return s;
                train_view_message(v, "one step: step %lld (. again, space resumes)",
                                   (long long)w->run.t.step);
            }
            redraw(w, a == TV_PANEL || a == TV_STEP);
            continue;
        }
        if (v->paused) continue;
        VitStatus s = one_step(w, err);
        if (s != VIT_OK) return s;
        if (train_view_redraw_due(v, vit_now() - w->last_draw)) redraw(w, true);
    }
    return VIT_OK;
}

// The end of a run: the test split and the model written, then the screen
// stays until q so the last curves can be read.
static VitStatus finish(Watch *w, VitError *err) {
    TrainView *v = &w->view;
    train_view_message(v, "finished: the test split, then the model…");
    redraw(w, true);
    VitStatus s = train_run_finish(&w->run, err);
    if (s != VIT_OK) return s;
    train_view_message(v, "written: q leaves");
    redraw(w, false);
    timeout(200);
    for (;;) {
        if (ui_missed_resize()) train_screen_resize(v);
        const int key = getch();
        if (train_stop_requested()) break;
        if (key == ERR) continue;
        if (key == 'q' && !v->help) break;
        if (handle_key(w, key) == TV_PANEL) redraw(w, true);
        else redraw(w, false);
    }
    return VIT_OK;
}

/* ------------------------------------------------------------ setup */

// The view for the run just opened: its sizes, its schedule, its past, its layers.
static VitStatus watch_open(Watch *w, VitError *err) {
    TrainRun *r = &w->run;
    const VitConfig *c = &r->model;
    const int64_t total = trainer_total_steps(&r->t);
    float *schedule = vit_malloc((size_t)(total > 0 ? total : 1) * sizeof *schedule);
    for (int64_t i = 0; i < total; i++) schedule[i] = (float)lr_at(&r->t.schedule, (int)i);
    TrainView *v = &w->view;
    train_view_init(v, c->depth, c->heads, c->num_classes, c->image_size / c->patch_size, total,
                    r->t.steps_per_epoch, r->t.config.epochs, schedule);
    free(schedule);
    snprintf(v->model, sizeof v->model, "ViT D=%d L=%d H=%d /%d", c->dim, c->depth, c->heads,
             c->patch_size);
    add_history(v, r);
    VitStatus s = train_panel_init(&w->panel, v, &r->t.vit, &r->val, r->t.config.mean,
                                   r->t.config.std, err);
    if (s == VIT_OK) s = train_layers_init(&w->layers, &r->t.opt, c->depth, err);
    if (s != VIT_OK) return s;
    v->layer_rows = w->layers.groups;
    v->layers = vit_calloc((size_t)v->layer_rows, sizeof *v->layers);
    w->stats = vit_calloc((size_t)v->layer_rows, sizeof *w->stats);
    for (int g = 0; g < v->layer_rows; g++)
        train_layer_name(v->layers[g].name, sizeof v->layers[g].name, g, c->depth);
    v->layer_rows = 0; // none measured yet: the table says so until the first
    // the panel's first pass, before the first step: its memory taken once, now, not
    // counted against the watching of the steps
    return panel_pass(w, err);
}

static void watch_free(Watch *w) {
    train_panel_free(&w->panel);
    train_layers_free(&w->layers);
    free(w->stats);
    train_view_free(&w->view);
    train_run_free(&w->run);
}

static int fail(VitStatus s, const VitError *err) {
    vit_print_error("vitview", err);
    if (s == VIT_ERR_USAGE) fprintf(stderr, "vitview: vitview --train --help shows the options\n");
    return s;
}

// vitview's own row for the flags' help and messages: they are vit train's.
static const VitCommand train_command = {
    "train", NULL, "the flags vitview --train (the training screen) takes, as vit train does"};

int train_main(int argc, char **argv) {
    // vit train's command line: "train", then every argument but vitview's own
    // (--train; --mono: no colours; --paused: start paused, . steps from step 0)
    static char name[] = "train";
    char **args = vit_calloc((size_t)argc + 1, sizeof *args);
    int n = 0;
    bool mono = false, paused = false, help = false;
    args[n++] = name;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--mono")) mono = true;
        else if (!strcmp(argv[i], "--paused")) paused = true;
        else if (strcmp(argv[i], "--train") != 0) args[n++] = argv[i];
    TrainCommand cmd;
    VitError err;
    VitStatus s = train_command_parse(&cmd, &train_command, n, args, &help, &err);
    free(args);
    if (s != VIT_OK || help) {
        train_command_free(&cmd);
        return s == VIT_OK ? 0 : fail(s, &err);
    }
    if (!(isatty(STDIN_FILENO) && isatty(STDOUT_FILENO))) {
        train_command_free(&cmd);
        vit_fail(&err, VIT_ERR_USAGE, "--train needs an interactive terminal (stdin and stdout "
                 "are not both a TTY); for a run without the screen use build/vit train");
        vit_print_error("vitview", &err);
        return VIT_ERR_USAGE;
    }
    Watch *w = vit_calloc(1, sizeof *w);
    file_guard_mapped("vitview", train_screen_stop); // the data cut short under us: a message
    s = train_run_open(&w->run, &cmd.settings, &err);
    if (s == VIT_OK) s = watch_open(w, &err);
    w->view.paused = paused;
    w->mono = mono;
    if (s != VIT_OK) {
        watch_free(w);
        free(w);
        train_command_free(&cmd);
        return fail(s, &err);
    }
    setlocale(LC_ALL, "");
    SCREEN *screen = ui_open_terminal();
    if (!screen) {
        const char *term = getenv("TERM");
        fprintf(stderr, "vitview: cannot drive this terminal (TERM=%s)\n", term ? term : "unset");
        watch_free(w);
        free(w);
        train_command_free(&cmd);
        return VIT_ERR_USAGE;
    }
    struct sigaction old[2];
    train_stops_catch(old);
    train_screen_start(&w->view, mono);
    const double started = vit_now();
    s = watch_loop(w, &err);
    if (s == VIT_OK) s = finish(w, &err);
    train_screen_stop();
    delscreen(screen);
    train_stops_release(old);
    // after the screen: what vit train says at its end, and what watching cost
    const TrainView *v = &w->view;
    char shown[1024];
    printf("watching took %.1f%% of the time the run ran: %.2f s of redraws, the panel's "
           "passes and the layers' measures beside %.1f s of training steps (%.0f s in all, "
           "pauses included)\n", 100 * train_view_overhead(v), v->watch_seconds,
           v->train_seconds, vit_now() - started);
    if (s == VIT_OK) {
        if (cmd.settings.test)
            printf("test accuracy of the final model: %.2f%% (%d of %d)\n",
                   w->run.test_count ? 100.0 * w->run.test_correct / w->run.test_count : 0.0,
                   w->run.test_correct, w->run.test_count);
        printf("%s: the model (validation accuracy %s, test %s)\n",
               vit_escape(shown, sizeof shown, cmd.settings.out), w->run.val_acc,
               w->run.test_acc);
    }
    watch_free(w);
    free(w);
    train_command_free(&cmd);
    return s == VIT_OK ? 0 : fail(s, &err);
}
