/**
 * @file vit_train.c
 * @brief `vit train`: a ViT trained from scratch on Fashion-MNIST, with a
 *        validation pass and a checkpoint each epoch, resumable, logged.
 *
 * The recipe: parse the flags → load the 60,000 training images and split
 * off the last 5,000 for validation → draw a model from the seed → (resume
 * from a checkpoint) → for each epoch: every batch is one trainer_step()
 * (train.h), with a progress line; then evaluate() on the validation split,
 * a row of the CSV log and a checkpoint, each written atomically → at the
 * end, the test split once, for the record, and the model with its
 * metadata. The test images never choose anything: the run is fixed before
 * they are seen, and their accuracy is reported for the final model only.
 *
 * Ctrl-C (SIGINT) or SIGTERM stops after the current step and saves a
 * checkpoint there; `--resume` with it continues exactly where it stopped.
 */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fileio.h"
#include "gemm.h"
#include "train.h"
#include "vit_cli.h"

/** The flags of `vit train`. */
typedef struct {
    const char *data;       // --data: "fashion-mnist" or the folder of its four files
    const char *arch;       // --arch: the named architecture
    int patch, dim, depth, heads, mlp; // overrides of the architecture; 0: the arch's
    int epochs, batch, warmup, crop_pad, flip, seed, limit, shards, threads;
    float lr, min_lr, weight_decay, clip, smoothing;
    const char *out;        // --out: the trained model
    const char *checkpoint; // --checkpoint: where each epoch's checkpoint goes
    const char *resume;     // --resume: a checkpoint to continue from
    const char *log;        // --log: the CSV of each epoch
    int test;               // --test: evaluate the test split at the end (1) or not (0)
} TrainFlags;

static const char description[] =
    "Trains a small Vision Transformer from scratch on Fashion-MNIST (Debian's\n"
    "dataset-fashion-mnist: 60,000 training and 10,000 test images of clothes,\n"
    "28×28 grey, 10 classes). The last 5,000 training images are held out for\n"
    "validation; the model learns from the first 55,000 (or --limit of them).\n"
    "\n"
    "Each step takes a batch in a shuffled order, augmented: a random crop after\n"
    "padding by --crop-pad pixels (1 by default) and half of the images mirrored\n"
    "left-right (--flip 1, the default); data/models/experiments/ compares these\n"
    "choices on the validation split. It runs forward\n"
    "and backward (cross-entropy with --label-smoothing), clips the gradient at\n"
    "--clip and takes an AdamW step (decoupled weight decay on the weights only).\n"
    "The learning rate rises linearly for --warmup epochs, then falls along a\n"
    "cosine to --min-lr. After each epoch: the validation accuracy, a row of the\n"
    "CSV --log, and a checkpoint (--checkpoint), each written to a temporary file\n"
    "and renamed. Ctrl-C saves a checkpoint at the current step; --resume with it\n"
    "continues the run exactly, as if it had never stopped.\n"
    "\n"
    "Each batch is split into --shards parts, one per thread, each run forward and\n"
    "backward on its own copy of the activations (the model's operations are too\n"
    "small to share between threads); their gradients are added, weighted by their\n"
    "share of the batch. The same flags and seed give the same weights bit for bit,\n"
    "on any number of threads; another --shards gives other last bits.\n"
    "\n"
    "At the end the test split is evaluated once (--test 0: not at all) and the\n"
    "model is written to --out, with the command, the accuracies, the class\n"
    "names and the normalisation in its metadata, ready for `vit classify`,\n"
    "`vit eval` and vitview.\n";

static const char examples[] =
    "  vit train --epochs 2 --limit 5000 --out quick.safetensors   # a minute's try\n"
    "  vit train --out m.safetensors --resume m.safetensors.ckpt   # after Ctrl-C\n"
    "  vit train --out data/models/vit-fashion.safetensors --threads 2   # the shipped model\n";

/* ------------------------------------------------------------ signals */

static volatile sig_atomic_t stop_requested;
static void on_stop(int sig) {
    (void)sig;
    stop_requested = 1;
}

// SIGINT and SIGTERM ask the loop to stop after the step it is in. A signal
// the process was started ignoring (SIGINT in a shell's background job, as
// after `nohup … &`) stays ignored, as the shell meant.
static void catch_stops(struct sigaction old[2]) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    const int sigs[2] = {SIGINT, SIGTERM};
    for (int i = 0; i < 2; i++) {
        sigaction(sigs[i], NULL, &old[i]);
        if (old[i].sa_handler != SIG_IGN) sigaction(sigs[i], &sa, NULL);
    }
}
static void release_stops(const struct sigaction old[2]) {
    sigaction(SIGINT, &old[0], NULL);
    sigaction(SIGTERM, &old[1], NULL);
}

/* ------------------------------------------------------------- setup */

// The architecture: the named one, with any sizes the flags override.
static VitStatus read_arch(VitConfig *m, const TrainFlags *f, const Dataset *d, VitError *err) {
    if (strcmp(f->arch, "vit-fashion") != 0)
        return vit_fail(err, VIT_ERR_USAGE, "--arch %s: the architecture trained here is "
                        "vit-fashion (patch 4, D 64, depth 6, 4 heads, MLP 128); change its "
                        "sizes with --patch, --dim, --depth, --heads, --mlp", f->arch);
    *m = (VitConfig){.image_size = d->size, .channels = d->channels, .num_classes = d->classes,
                     .patch_size = f->patch ? f->patch : 4, .dim = f->dim ? f->dim : 64,
                     .depth = f->depth ? f->depth : 6, .heads = f->heads ? f->heads : 4,
                     .mlp_dim = f->mlp ? f->mlp : 128, .ln_eps = 1e-6f};
    if (vit_config_check(m, err) == VIT_OK) return VIT_OK;
    char why[sizeof err->msg];
    snprintf(why, sizeof why, "%s", err->msg);
    return vit_fail(err, VIT_ERR_USAGE, "%s", why); // a flag's fault: bad usage
}

static TrainConfig read_config(const TrainFlags *f) {
    TrainConfig c = train_defaults();
    c.epochs = f->epochs, c.batch = f->batch, c.lr = f->lr, c.min_lr = f->min_lr;
    c.warmup_epochs = f->warmup, c.weight_decay = f->weight_decay, c.clip = f->clip;
    c.smoothing = f->smoothing, c.seed = (uint64_t)f->seed, c.shards = f->shards;
    c.augment = (Augment){.pad = f->crop_pad, .flip = f->flip != 0};
    return c;
}

// "fashion-mnist" is Debian's folder; anything else is a folder holding the same four files.
static const char *data_dir(const char *data) {
    return strcmp(data, "fashion-mnist") == 0 ? FASHION_MNIST_DIR : data;
}

/* ------------------------------------------------------------ progress */

/** What the progress line and the log know of the current epoch. */
typedef struct {
    double loss_sum;  // Σ of the steps' losses this epoch
    int64_t correct;  // images right this epoch (before each step's update)
    int64_t seen;     // images this epoch
    int steps;        // steps this epoch
    double started;   // vit_now() at the epoch's first step (earlier after a resume: its
                      // time before the stop counts)
} EpochStats;

static void format_eta(char *buf, size_t size, double seconds) {
    if (!(seconds >= 0) || seconds > 359999) seconds = 0;
    const int s = (int)(seconds + 0.5);
    snprintf(buf, size, "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
}

// One line: epoch, step, loss, accuracy, images/s, time left. On a terminal it
// redraws itself ("\r"); otherwise a line at every tenth of an epoch.
static void show_progress(const Trainer *t, const EpochStats *e, bool tty, double run_rate) {
    // the step just taken is t->step − 1: epoch `epoch` (from 1), step `i` of it (from 1)
    const int spe = t->steps_per_epoch;
    const int epoch = (int)((t->step - 1) / spe) + 1, i = (int)((t->step - 1) % spe) + 1;
    if (!tty && i % (spe / 10 ? spe / 10 : 1) != 0 && i != spe) return;
    const double elapsed = vit_now() - e->started;
    const double rate = elapsed > 0 ? e->seen / elapsed : 0;
    const int64_t left = trainer_total_steps(t) - t->step;
    char eta[16];
    format_eta(eta, sizeof eta, run_rate > 0 ? left * t->config.batch / run_rate : 0);
    char bar[21];
    const int filled = (int)(20.0 * i / spe);
    for (int k = 0; k < 20; k++) bar[k] = k < filled ? '#' : '.';
    bar[20] = 0;
    printf("%sepoch %d/%d [%s] step %d/%d  loss %.4f  acc %5.1f%%  %.0f img/s  ETA %s%s",
           tty ? "\r" : "", epoch, t->config.epochs, bar, i, spe, e->loss_sum / e->steps,
           100.0 * e->correct / e->seen, rate, eta, tty ? "\033[K" : "\n");
    fflush(stdout);
}

/* ----------------------------------------------------------------- log */

/** The CSV log, kept in memory and rewritten whole each epoch (atomically). */
typedef struct {
    char *text;
    size_t len;
} CsvLog;

static const char CSV_HEADER[] =
    "epoch,step,lr,train_loss,train_acc,val_loss,val_acc,seconds,images_per_s\n";

static void csv_append(CsvLog *log, const char *row) {
    const size_t n = strlen(row);
    log->text = vit_realloc(log->text, log->len + n + 1);
    memcpy(log->text + log->len, row, n + 1);
    log->len += n;
}

static VitStatus csv_write(const CsvLog *log, const char *path, VitError *err) {
    OutFile out;
    VitStatus s = outfile_open(&out, path, err);
    if (s != VIT_OK) return s;
    return outfile_commit(&out, fwrite(log->text, 1, log->len, out.f) == log->len, err);
}

// OUT.csv beside OUT, without its .safetensors: vit-fashion.safetensors → vit-fashion.csv.
static void default_log(char *buf, size_t size, const char *out) {
    const char *suffix = ".safetensors";
    size_t n = strlen(out), k = strlen(suffix);
    if (n > k && strcmp(out + n - k, suffix) == 0) n -= k;
    snprintf(buf, size, "%.*s.csv", (int)n, out);
}

/* ------------------------------------------------------------ the run */

/** Everything one run holds, freed in one place. */
typedef struct {
    Dataset all, train, val, test;
    Trainer t;
    CsvLog log;
    EpochStats epoch;     // the current epoch so far (a checkpoint keeps it)
    char command[2048];   // the command line, for the model's metadata
    char val_acc[32], test_acc[32];
} Run;

static void run_free(Run *r) {
    trainer_free(&r->t);
    dataset_free(&r->all);
    dataset_free(&r->test);
    free(r->log.text);
}

// The command line as one string, each argument quoted when it needs it.
// Settings in the environment that change the weights' last bits (which
// matrix product runs, which OpenBLAS kernel) come first, as a shell writes
// them, so that the command in the metadata is the whole recipe.
static void join_command(char *buf, size_t size, int argc, char **argv) {
    static const char *const SETTINGS[] = {"VIT_GEMM", "OPENBLAS_CORETYPE"};
    size_t at = 0;
    buf[0] = '\0';
    for (size_t k = 0; k < sizeof SETTINGS / sizeof SETTINGS[0] && at < size; k++) {
        const char *v = getenv(SETTINGS[k]);
        if (!v || !*v) continue;
        const bool plain = strcspn(v, " \t\"'\\$") == strlen(v);
        at += (size_t)snprintf(buf + at, size - at, plain ? "%s=%s " : "%s='%s' ", SETTINGS[k], v);
    }
    if (at < size) at += (size_t)snprintf(buf + at, size - at, "vit");
    for (int i = 0; i < argc && at < size; i++) {
        const bool plain = argv[i][0] && strcspn(argv[i], " \t\"'\\$") == strlen(argv[i]);
        at += (size_t)snprintf(buf + at, size - at, plain ? " %s" : " '%s'", argv[i]);
    }
}

// The checkpoint: the model, AdamW's state, the log so far and the current
// epoch's sums (so an epoch interrupted and resumed logs all of its steps).
static VitStatus save_checkpoint(const Run *r, const char *path, VitError *err) {
    char sums[160];
    const EpochStats *e = &r->epoch;
    snprintf(sums, sizeof sums, "%.17g %lld %lld %d %.3f", e->loss_sum, (long long)e->correct,
             (long long)e->seen, e->steps, vit_now() - e->started);
    const TrainMeta meta[] = {{"train.log", r->log.text ? r->log.text : CSV_HEADER},
                              {"train.command", r->command}, {"train.epoch_sums", sums}};
    return trainer_save(&r->t, path, true, meta, 3, err);
}

// The class names as a JSON array, for the model's metadata.
static void class_names_json(char *buf, size_t size, const Dataset *d) {
    size_t at = (size_t)snprintf(buf, size, "[");
    for (int y = 0; y < d->classes && at < size; y++)
        at += (size_t)snprintf(buf + at, size - at, "%s\"%s\"", y ? ", " : "", d->class_names[y]);
    if (at < size) snprintf(buf + at, size - at, "]");
}

// The matrix-product backend the run's products used. By default it depends
// on a product's size (gemm_backend_for()): the largest here is a shard's q, k,
// v projection or fc1, the smallest one head's attention scores.
static const char *train_gemm(const Run *r, const TrainFlags *f) {
    const VitConfig *c = &r->t.vit.config;
    const int tokens = vit_num_tokens(c);
    const int rows = (f->batch + f->shards - 1) / f->shards * tokens;
    const int widest = 3 * c->dim > c->mlp_dim ? 3 * c->dim : c->mlp_dim;
    const GemmBackend largest = gemm_backend_for(rows, c->dim, widest);
    const GemmBackend smallest = gemm_backend_for(tokens, c->dim / c->heads, tokens);
    return largest == smallest ? gemm_backend_name(largest) : "tiled and blas, by size";
}

static VitStatus save_model(const Run *r, const TrainFlags *f, VitError *err) {
    char names[512], epochs[16], seed[32], mean[32], stdev[32], threads[16], side[16], chans[16];
    char shards[16];
    class_names_json(names, sizeof names, &r->train);
    snprintf(threads, sizeof threads, "%d", vit_get_threads());
    snprintf(shards, sizeof shards, "%d", f->shards);
    snprintf(side, sizeof side, "%d", r->t.vit.config.image_size);
    snprintf(chans, sizeof chans, "%d", r->t.vit.config.channels);
    snprintf(epochs, sizeof epochs, "%d", f->epochs);
    snprintf(seed, sizeof seed, "%d", f->seed);
    snprintf(mean, sizeof mean, "%.4f", (double)r->t.config.mean);
    snprintf(stdev, sizeof stdev, "%.4f", (double)r->t.config.std);
    const TrainMeta meta[] = {
        {"class_names", names},       {"preprocess", "fashion-mnist"},
        {"mean", mean},               {"std", stdev},
        {"image_size", side},         {"channels", chans},
        {"train.command", r->command}, {"train.seed", seed}, {"train.shards", shards},
        {"train.threads", threads},   {"train.gemm", train_gemm(r, f)},
        {"train.epochs", epochs},     {"train.val_accuracy", r->val_acc},
        {"train.test_accuracy", r->test_acc}, {"train.log", r->log.text},
        {"train.data", "Fashion-MNIST (Debian dataset-fashion-mnist): trained on the first "
                       "55,000 training images, validated on the last 5,000"},
    };
    return trainer_save(&r->t, f->out, false, meta, sizeof meta / sizeof meta[0], err);
}

// Restore the log rows and the epoch's sums of a checkpoint, so the CSV
// continues where it stopped (trainer_resume() has checked the file).
static VitStatus restore_log(Run *r, const char *path, VitError *err) {
    SafeTensors st;
    VitStatus s = st_open(&st, path, err);
    if (s != VIT_OK) return s;
    const char *log = st_meta(&st, "train.log"), *sums = st_meta(&st, "train.epoch_sums");
    csv_append(&r->log, log ? log : CSV_HEADER);
    EpochStats *e = &r->epoch;
    long long correct, seen;
    double seconds;
    *e = (EpochStats){.started = vit_now()};
    if (sums && sscanf(sums, "%lg %lld %lld %d %lg", &e->loss_sum, &correct, &seen, &e->steps,
                       &seconds) == 5 && seen >= 0 && correct >= 0 && e->steps >= 0) {
        e->correct = correct, e->seen = seen;
        e->started -= seconds; // the epoch's seconds count its time before the stop too
    } else {
        *e = (EpochStats){.started = vit_now()};
    }
    st_close(&st);
    return VIT_OK;
}

// The epoch's validation pass and log row; its checkpoint.
static VitStatus end_epoch(Run *r, const TrainFlags *f, const EpochStats *e, VitError *err) {
    const double seconds = vit_now() - e->started; // the training steps' time alone
    EvalResult val;
    VitStatus s = evaluate(&r->t.vit, &r->val, r->t.config.mean, r->t.config.std,
                           r->t.config.batch, &val, err);
    if (s != VIT_OK) return s;
    char row[256];
    snprintf(row, sizeof row, "%d,%lld,%.6g,%.5f,%.5f,%.5f,%.5f,%.1f,%.1f\n", trainer_epoch(&r->t),
             (long long)r->t.step, lr_at(&r->t.schedule, (int)r->t.step - 1), e->loss_sum / e->steps,
             (double)e->correct / e->seen, val.loss, eval_accuracy(&val), seconds,
             seconds > 0 ? e->seen / seconds : 0.0);
    csv_append(&r->log, row);
    snprintf(r->val_acc, sizeof r->val_acc, "%.4f", eval_accuracy(&val));
    printf("epoch %d/%d: train loss %.4f, acc %.2f%%; validation loss %.4f, acc %.2f%% (%d "
           "images); %.0f s\n", trainer_epoch(&r->t), f->epochs, e->loss_sum / e->steps,
           100.0 * e->correct / e->seen, val.loss, 100 * eval_accuracy(&val), val.count, seconds);
    eval_free(&val);
    if ((s = csv_write(&r->log, f->log, err)) != VIT_OK) return s;
    return save_checkpoint(r, f->checkpoint, err);
}

// Every remaining step, epoch by epoch; stops early, with a checkpoint, on a signal.
static VitStatus train_loop(Run *r, const TrainFlags *f, VitError *err) {
    Trainer *t = &r->t;
    const bool tty = isatty(STDOUT_FILENO);
    const double run_started = vit_now();
    const int64_t first_step = t->step;
    EpochStats *e = &r->epoch;
    if (!f->resume) *e = (EpochStats){.started = vit_now()};
    VitStatus s = VIT_OK;
    while (t->step < trainer_total_steps(t) && s == VIT_OK) {
        TrainStep st;
        if ((s = trainer_step(t, &st, err)) != VIT_OK) break;
        e->loss_sum += st.loss, e->correct += st.correct, e->seen += t->config.batch, e->steps++;
        const double run_time = vit_now() - run_started;
        show_progress(t, e, tty, run_time > 0 ? (t->step - first_step) * t->config.batch / run_time : 0);
        if (t->step % t->steps_per_epoch == 0) { // the epoch is complete
            if (tty) printf("\n");
            const EpochStats done = *e;
            *e = (EpochStats){0}; // the epoch's checkpoint holds the next epoch, empty
            s = end_epoch(r, f, &done, err);
            e->started = vit_now();
        }
        if (stop_requested && s == VIT_OK) {
            char shown[1024];
            if (tty) printf("\n");
            s = save_checkpoint(r, f->checkpoint, err);
            if (s == VIT_OK)
                s = vit_fail(err, VIT_ERR_INPUT, "interrupted at step %lld of %lld: checkpoint "
                             "saved to %s; continue with the same flags and --resume %s",
                             (long long)t->step, (long long)trainer_total_steps(t),
                             vit_escape(shown, sizeof shown, f->checkpoint), shown);
        }
    }
    return s;
}

/**
 * @brief `vit train`: parse → data → model (→ resume) → epochs → test → write.
 * @param[in] self        this command's row of the command table
 * @param[in] argc, argv  its command line, argv[0] = "train"
 * @param[out] err        the message on failure
 * @return the exit status: VIT_OK, VIT_ERR_INPUT or VIT_ERR_USAGE
 */
VitStatus cmd_train(const VitCommand *self, int argc, char **argv, VitError *err) {
    const TrainConfig d = train_defaults();
    TrainFlags f = {.data = "fashion-mnist", .arch = "vit-fashion", .epochs = d.epochs,
                    .batch = d.batch, .warmup = d.warmup_epochs, .crop_pad = d.augment.pad,
                    .flip = d.augment.flip, .seed = (int)d.seed, .lr = (float)d.lr,
                    .min_lr = (float)d.min_lr, .weight_decay = (float)d.weight_decay,
                    .clip = d.clip, .smoothing = d.smoothing, .shards = d.shards, .test = 1};
    CliOption options[] = {
        {"--out", CLI_STRING, &f.out, "FILE", "write the trained model here", .required = true},
        {"--data", CLI_STRING, &f.data, "DIR", "fashion-mnist (Debian's files) or a folder "
         "holding the same four .gz files", .show_default = true},
        {"--arch", CLI_STRING, &f.arch, "NAME", "the architecture", .show_default = true},
        {"--patch", CLI_INT, &f.patch, "p", "patch side (default 4: 7×7 patches)", .lo = 1, .hi = 28},
        {"--dim", CLI_INT, &f.dim, "D", "width (default 64)", .lo = 1, .hi = 4096},
        {"--depth", CLI_INT, &f.depth, "L", "blocks (default 6)", .lo = 1, .hi = 64},
        {"--heads", CLI_INT, &f.heads, "H", "heads (default 4)", .lo = 1, .hi = 64},
        {"--mlp", CLI_INT, &f.mlp, "M", "MLP width (default 128)", .lo = 1, .hi = 16384},
        {"--epochs", CLI_INT, &f.epochs, "E", "passes over the training images",
         .show_default = true, .lo = 1, .hi = 10000},
        {"--batch", CLI_INT, &f.batch, "B", "images per step", .show_default = true, .lo = 1,
         .hi = 65536},
        {"--lr", CLI_FLOAT, &f.lr, "LR", "the peak learning rate", .show_default = true,
         .lo = 0, .hi = 10},
        {"--min-lr", CLI_FLOAT, &f.min_lr, "LR", "the learning rate of the last step",
         .show_default = true, .lo = 0, .hi = 10},
        {"--warmup", CLI_INT, &f.warmup, "E", "epochs of linear warm-up from 0",
         .show_default = true, .lo = 0, .hi = 10000},
        {"--weight-decay", CLI_FLOAT, &f.weight_decay, "WD", "AdamW's decoupled weight decay",
         .show_default = true, .lo = 0, .hi = 10},
        {"--clip", CLI_FLOAT, &f.clip, "NORM", "the largest gradient norm; 0: never clip",
         .show_default = true, .lo = 0, .hi = 1e6},
        {"--label-smoothing", CLI_FLOAT, &f.smoothing, "EPS", "label smoothing of the loss",
         .show_default = true, .lo = 0, .hi = 0.99},
        {"--crop-pad", CLI_INT, &f.crop_pad, "N", "random crop after padding by N pixels; 0: "
         "no crop", .show_default = true, .lo = 0, .hi = 14},
        {"--flip", CLI_INT, &f.flip, "0|1", "mirror half the images left-right",
         .show_default = true, .lo = 0, .hi = 1},
        {"--seed", CLI_INT, &f.seed, "S", "of the init, the shuffles and the augmentation",
         .show_default = true, .lo = 0, .hi = 2147483647},
        {"--limit", CLI_INT, &f.limit, "N", "train on the first N of the 55,000 images only",
         .lo = 1, .hi = 55000},
        {"--shards", CLI_INT, &f.shards, "N", "split each batch into N parts, one per thread",
         .show_default = true, .lo = 1, .hi = 64},
        {"--checkpoint", CLI_STRING, &f.checkpoint, "FILE",
         "the checkpoint written each epoch and on Ctrl-C (default: OUT.ckpt)", .required = false},
        {"--resume", CLI_STRING, &f.resume, "FILE", "continue the run of this checkpoint", .required = false},
        {"--log", CLI_STRING, &f.log, "FILE", "the CSV of each epoch (default: OUT without .safetensors, plus .csv)", .required = false},
        {"--test", CLI_INT, &f.test, "0|1", "evaluate the test split at the end",
         .show_default = true, .lo = 0, .hi = 1},
        CLI_OPTION_THREADS(&f.threads),
    };
    CliSpec spec = {.command = self, .description = description, .examples = examples,
                    .options = options, .option_count = sizeof options / sizeof options[0]};

    // 1. parse; the files the run writes, none of them one it reads
    bool help;
    VitStatus s = cli_parse(&spec, argc, argv, &help, err);
    if (s != VIT_OK || help) return s;
    cli_apply_threads(&spec, f.threads);
    char ckpt[1024], csv[1024];
    if (!f.checkpoint) snprintf(ckpt, sizeof ckpt, "%s.ckpt", f.out), f.checkpoint = ckpt;
    if (!f.log) default_log(csv, sizeof csv, f.out), f.log = csv;
    // resuming from the checkpoint this run goes on writing is the usual case: it is
    // read whole before the first write; the model and the log are not checkpoints
    if (f.resume && (!strcmp(f.resume, f.out) || !strcmp(f.resume, f.log)))
        return vit_fail(err, VIT_ERR_USAGE, "--resume %s names the file --%s writes: resume "
                        "from the checkpoint (%s)", f.resume, strcmp(f.resume, f.out) ? "log" : "out",
                        f.checkpoint);
    const CliInput reads[] = {{f.resume, "--resume"}};
    if ((s = cli_check_output(f.out, "--out", reads, 1, err)) != VIT_OK ||
        (s = cli_check_output(f.log, "--log", reads, 1, err)) != VIT_OK)
        return s;
    if (!strcmp(f.out, f.checkpoint) || !strcmp(f.out, f.log) || !strcmp(f.log, f.checkpoint))
        return vit_fail(err, VIT_ERR_USAGE, "--out, --checkpoint and --log must be three "
                        "different files");

    // 2. the data: 55,000 to learn from, the last 5,000 to validate on
    Run r = {0};
    join_command(r.command, sizeof r.command, argc, argv);
    snprintf(r.test_acc, sizeof r.test_acc, "not measured");
    const char *dir = data_dir(f.data);
    if ((s = fashion_mnist_load(&r.all, dir, "train", err)) != VIT_OK) return s;
    dataset_split_validation(&r.train, &r.val, &r.all, FASHION_MNIST_VAL);
    if (f.limit) r.train = dataset_slice(&r.train, 0, f.limit);

    // 3. the model, drawn from the seed; or the run of a checkpoint
    VitConfig model;
    const TrainConfig cfg = read_config(&f);
    if ((s = read_arch(&model, &f, &r.train, err)) == VIT_OK)
        s = trainer_init(&r.t, &model, &cfg, &r.train, err);
    if (s == VIT_OK && f.resume) {
        s = trainer_resume(&r.t, f.resume, err);
        if (s == VIT_OK) s = restore_log(&r, f.resume, err);
    } else if (s == VIT_OK) {
        csv_append(&r.log, CSV_HEADER);
    }
    if (s != VIT_OK) {
        run_free(&r);
        return s;
    }
    // 4. the epochs (Ctrl-C is caught from the heading on: it saves a checkpoint)
    struct sigaction old[2];
    stop_requested = 0;
    catch_stops(old);
    printf("training a ViT (patch %d, D %d, depth %d, %d heads, MLP %d; %s parameters) on %d "
           "images, validating on %d: %d epochs of %d steps, batch %d in %d shard%s, %d "
           "thread%s%s\n",
           model.patch_size, model.dim, model.depth, model.heads, model.mlp_dim,
           vit_thousands((char[VIT_NUM_BUF]){0}, vit_param_count(&model)), r.train.count,
           r.val.count, f.epochs, r.t.steps_per_epoch, f.batch, f.shards,
           f.shards == 1 ? "" : "s", vit_get_threads(),
           vit_get_threads() == 1 ? "" : "s", f.resume ? "; resumed" : "");
    char gemm[1024];
    gemm_choice_describe(gemm, sizeof gemm);
    printf("matrix products: %s\n", gemm);

    const double started = vit_now();
    s = train_loop(&r, &f, err);
    release_stops(old);
    if (s == VIT_OK) printf("trained in %.0f s\n", vit_now() - started);

    // 5. the test split, once, for the record; then the model
    if (s == VIT_OK && f.test) {
        EvalResult test;
        if ((s = fashion_mnist_load(&r.test, dir, "test", err)) == VIT_OK)
            s = evaluate(&r.t.vit, &r.test, cfg.mean, cfg.std, cfg.batch, &test, err);
        if (s == VIT_OK) {
            snprintf(r.test_acc, sizeof r.test_acc, "%.4f", eval_accuracy(&test));
            printf("test accuracy of the final model: %.2f%% (%d of %d)\n",
                   100 * eval_accuracy(&test), test.correct, test.count);
            eval_free(&test);
        }
    }
    if (s == VIT_OK) s = save_model(&r, &f, err);
    if (s == VIT_OK) {
        char shown[1024];
        printf("%s: the model (validation accuracy %s, test %s)\n",
               vit_escape(shown, sizeof shown, f.out), r.val_acc, r.test_acc);
    }
    run_free(&r);
    return s;
}
