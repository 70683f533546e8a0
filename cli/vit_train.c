/**
 * @file vit_train.c
 * @brief `vit train`: a ViT trained from scratch on Fashion-MNIST, with a
 *        validation pass and a checkpoint each epoch, resumable, logged.
 *
 * The recipe: parse the flags → load the 60,000 training images and split
 * off the last 5,000 for validation → draw a model from the seed → (resume
 * from a checkpoint) → for each epoch: every batch is one trainer_step()
 * (train.h), with a progress line; then eval_run() on the validation split,
 * a row of the CSV log and a checkpoint, each written atomically → at the
 * end, the test split once, for the record, and the model with its
 * metadata. The test images never choose anything: the run is fixed before
 * they are seen, and their accuracy is reported for the final model only.
 *
 * Each epoch also adds its layer groups' health to the layer log, its
 * steps' rows to the step log and, for epoch 0, each power of two and the
 * last, a model file to the film.
 *
 * The run itself is lib/train/run.h (train_run_open(), train_run_step(), …),
 * which a live screen drives the same way; this file parses the flags, makes
 * the default names, catches Ctrl-C and prints.
 *
 * Ctrl-C (SIGINT) or SIGTERM stops after the current step and saves a
 * checkpoint there; `--resume` with it continues exactly where it stopped.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fileio.h"
#include "gemm/gemm.h"
#include "train/run.h"
#include "train_command.h"
#include "vit_cli.h"

/* ------------------------------------------------------------- setup */


/* ------------------------------------------------------------ progress */

static void format_eta(char *buf, size_t size, double seconds) {
    if (!(seconds >= 0) || seconds > 359999) seconds = 0;
    const int s = (int)(seconds + 0.5);
    snprintf(buf, size, "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
}

// One line: epoch, step, loss, accuracy, images/s, time left. On a terminal it
// redraws itself ("\r"); otherwise a line at every tenth of an epoch.
static void show_progress(const TrainRun *r, const TrainEpochStats *e, double elapsed, bool tty) {
    const Trainer *t = &r->t;
    // the step just taken is t->step − 1: epoch `epoch` (from 1), step `i` of it (from 1)
    const int spe = t->steps_per_epoch;
    const int epoch = (int)((t->step - 1) / spe) + 1, i = (int)((t->step - 1) % spe) + 1;
    if (!tty && i % (spe / 10 ? spe / 10 : 1) != 0 && i != spe) return;
    const double rate = elapsed > 0 ? e->seen / elapsed : 0;
    char eta[16];
    format_eta(eta, sizeof eta, train_run_eta(r));
    char bar[21];
    const int filled = (int)(20.0 * i / spe);
    for (int k = 0; k < 20; k++) bar[k] = k < filled ? '#' : '.';
    bar[20] = 0;
    printf("%sepoch %d/%d [%s] step %d/%d  loss %.4f  acc %5.1f%%  %.0f img/s  ETA %s%s",
           tty ? "\r" : "", epoch, t->config.epochs, bar, i, spe, e->loss_sum / e->steps,
           100.0 * e->correct / e->seen, rate, eta, tty ? "\033[K" : "\n");
    fflush(stdout);
}

/* ------------------------------------------------------------ the run */

// The heading: the model, the data, the epochs; the matrix products.
static void show_heading(const TrainRun *r) {
    const VitConfig *m = &r->model;
    const TrainConfig *c = &r->t.config;
    printf("training a ViT (patch %d, D %d, depth %d, %d heads, MLP %d; %s parameters) on %d "
           "images, validating on %d: %d epochs of %d steps, batch %d in %d shard%s, %d "
           "thread%s%s\n",
           m->patch_size, m->dim, m->depth, m->heads, m->mlp_dim,
           vit_thousands((char[VIT_NUM_BUF]){0}, vit_param_count(m)), r->train.count,
           r->val.count, c->epochs, r->t.steps_per_epoch, c->batch, c->shards,
           c->shards == 1 ? "" : "s", vit_get_threads(),
           vit_get_threads() == 1 ? "" : "s", r->resumed ? "; resumed" : "");
    char gemm[1024];
    gemm_choice_describe(gemm, sizeof gemm);
    printf("matrix products: %s\n", gemm);
}

// An epoch's summary line, once it is validated.
static void show_epoch(const TrainRun *r, const TrainRunStep *st) {
    const TrainEpochStats *e = &st->done;
    const TrainEpochRow *row = &r->epochs[r->epochs_done - 1];
    printf("epoch %d/%d: train loss %.4f, acc %.2f%%; validation loss %.4f, acc %.2f%% (%d "
           "images); %.0f s\n", trainer_epoch(&r->t), r->t.config.epochs, e->loss_sum / e->steps,
           100.0 * e->correct / e->seen, row->val_loss, 100 * row->val_acc, st->val_count,
           row->seconds);
}

// Every remaining step, epoch by epoch; stops early, with a checkpoint, on a signal.
static VitStatus train_loop(TrainRun *r, VitError *err) {
    const bool tty = isatty(STDOUT_FILENO);
    VitStatus s = VIT_OK;
    while (!train_run_done(r) && s == VIT_OK) {
        TrainRunStep st;
        s = train_run_step(r, &st, err);
        if (s != VIT_OK && !st.epoch_ended) break;
        if (st.epoch_ended) // its sums and time as they were before the validation
            show_progress(r, &st.done, st.seconds, tty);
        else
            show_progress(r, &r->epoch, vit_now() - r->epoch.started, tty);
        if (st.epoch_ended) {
            if (tty) printf("\n");
            show_epoch(r, &st);
        }
        if (train_stop_requested() && s == VIT_OK) {
            if (tty) printf("\n");
            s = train_run_interrupt(r, err);
        }
    }
    return s;
}

// The model (→ resume) → the epochs → the test split → the model written.
static VitStatus run(TrainRun *r, VitError *err) {
    // the epochs (Ctrl-C is caught from the heading on: it saves a checkpoint)
    struct sigaction old[2];
    train_stops_catch(old);
    show_heading(r);
    const double started = vit_now();
    VitStatus s = train_loop(r, err);
    train_stops_release(old);
    if (s == VIT_OK) printf("trained in %.0f s\n", vit_now() - started);
    if (s == VIT_OK) s = train_run_finish(r, err);
    if (r->test_count)
        printf("test accuracy of the final model: %.2f%% (%d of %d)\n",
               100.0 * r->test_correct / r->test_count, r->test_correct, r->test_count);
    if (s == VIT_OK) {
        char shown[1024];
        printf("%s: the model (validation accuracy %s, test %s)\n",
               vit_escape(shown, sizeof shown, r->settings.out), r->val_acc, r->test_acc);
    }
    return s;
}

// --watch on a terminal: vitview --train, beside this program, with the same
// arguments. Returns only when it cannot be started.
static VitStatus exec_viewer(int argc, char **argv, VitError *err) {
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0 || n >= (ssize_t)sizeof self - 16)
        return vit_fail(err, VIT_ERR_INPUT, "--watch: cannot find this program's folder "
                        "(/proc/self/exe) to start vitview beside it");
    self[n] = '\0';
    char *slash = strrchr(self, '/');
    snprintf(slash ? slash + 1 : self, sizeof self - (size_t)(slash ? slash + 1 - self : 0),
             "vitview");
    char **args = vit_calloc((size_t)argc + 3, sizeof *args);
    args[0] = self, args[1] = "--train";
    int k = 2;
    for (int i = 1; i < argc; i++) // argv[0] is "train"; vitview is the watching
        if (strcmp(argv[i], "--watch") != 0) args[k++] = argv[i];
    fflush(stdout);
    execv(self, args);
    const int why = errno;
    free(args);
    char shown[512];
    return vit_fail(err, VIT_ERR_INPUT, "--watch: cannot start %s: %s (it is built beside vit "
                    "by make; without a terminal --watch shows the progress line)",
                    vit_escape(shown, sizeof shown, self), strerror(why));
}

/**
 * @brief `vit train`: parse → data → model (→ resume) → epochs → test → write.
 * @param[in] self        this command's row of the command table
 * @param[in] argc, argv  its command line, argv[0] = "train"
 * @param[out] err        the message on failure
 * @return the exit status: VIT_OK, VIT_ERR_INPUT or VIT_ERR_USAGE
 */
VitStatus cmd_train(const VitCommand *self, int argc, char **argv, VitError *err) {
    // 1. parse (train_command.c); --watch on a terminal hands the run to vitview
    TrainCommand cmd;
    bool help;
    VitStatus s = train_command_parse(&cmd, self, argc, argv, &help, err);
    if (s != VIT_OK || help || (cmd.watch && isatty(STDOUT_FILENO))) {
        train_command_free(&cmd);
        return s != VIT_OK || help ? s : exec_viewer(argc, argv, err);
    }
    // 2. the run: files checked, data, model (→ resume)
    TrainRun r;
    s = train_run_open(&r, &cmd.settings, err);
    // 3. the epochs → the test split → the model
    if (s == VIT_OK) s = run(&r, err);
    train_run_free(&r);
    train_command_free(&cmd);
    return s;
}
