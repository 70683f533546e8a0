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
 * Ctrl-C (SIGINT) or SIGTERM stops after the current step and saves a
 * checkpoint there; `--resume` with it continues exactly where it stopped.
 */
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fileio.h"
#include "gemm/gemm.h"
#include "train/train.h"
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
    "Before the first step every output is checked: three different files, none\n"
    "of them one the run reads (the data, the checkpoint it resumes), each one\n"
    "that can be written; the test split is read then too.\n"
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
    file_writes_finish_on_stop(true); // a checkpoint being written when Ctrl-C comes is finished
}
static void release_stops(const struct sigaction old[2]) {
    file_writes_finish_on_stop(false);
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

// The checkpoint's and the log's names when no flag gives them, made from
// --out however long it is: OUT.ckpt, and OUT without its .safetensors plus
// .csv (vit-fashion.safetensors → vit-fashion.csv). free() them.
static char *default_checkpoint(const char *out) {
    const size_t n = strlen(out);
    char *name = vit_malloc(n + sizeof ".ckpt");
    memcpy(name, out, n);
    memcpy(name + n, ".ckpt", sizeof ".ckpt");
    return name;
}
static char *default_log(const char *out) {
    const char *suffix = ".safetensors";
    size_t n = strlen(out), k = strlen(suffix);
    if (n > k && strcmp(out + n - k, suffix) == 0) n -= k;
    char *name = vit_malloc(n + sizeof ".csv");
    memcpy(name, out, n);
    memcpy(name + n, ".csv", sizeof ".csv");
    return name;
}

// Before any work, every file the run writes: three files, none of them one it
// reads (the four data files, the checkpoint it resumes; through a link or
// not), each of them writable. Resuming from the checkpoint this run goes on
// writing is the usual case: it is read whole before the first write. A
// failure here is a message now, not after the last epoch.
static VitStatus check_files(const TrainFlags *f, const char *dir, VitError *err) {
    const char *resumed = !f->resume                     ? NULL
                          : file_same(f->resume, f->out) ? "out"
                          : file_same(f->resume, f->log) ? "log"
                                                         : NULL;
    if (resumed) {
        char resume[512], ckpt[512];
        return vit_fail(err, VIT_ERR_USAGE, "--resume %s names the file --%s writes: resume "
                        "from the checkpoint (%s)", vit_escape(resume, sizeof resume, f->resume),
                        resumed, vit_escape(ckpt, sizeof ckpt, f->checkpoint));
    }
    const CliInput outputs[] = {{f->out, "--out"}, {f->checkpoint, "--checkpoint"},
                                {f->log, "--log"}};
    VitStatus s = cli_check_distinct_outputs(outputs, 3, err);
    if (s != VIT_OK) return s;
    // what is read: the data (a file not found is the loader's message, later) and --resume
    FashionMnistFiles train, test;
    VitError missing;
    (void)dataset_fashion_mnist_files(&train, dir, "train", &missing);
    (void)dataset_fashion_mnist_files(&test, dir, "test", &missing);
    const CliInput reads[] = {{train.images, "the training images (--data)"},
                              {train.labels, "the training labels (--data)"},
                              {test.images, "the test images (--data)"},
                              {test.labels, "the test labels (--data)"},
                              {f->resume, "--resume"}};
    for (int i = 0; i < 3; i++) {
        const int n = i == 1 ? 4 : 5; // the checkpoint may be the one resumed
        if ((s = cli_check_output(outputs[i].path, outputs[i].role, reads, n, err)) != VIT_OK ||
            (s = outfile_check(outputs[i].path, err)) != VIT_OK)
            return s;
    }
    return VIT_OK;
}

/* ------------------------------------------------------------ the run */

/** Everything one run holds, freed in one place. */
typedef struct {
    Dataset all, train, val, test;
    Trainer t;
    CsvLog log;
    EpochStats epoch;     // the current epoch so far (a checkpoint keeps it)
    char command[2048];   // the command line, for the model's metadata
    char val_acc[32], test_acc[32]; // as the model's metadata gives them
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
                              {"train.command", r->command}, {"train.epoch_sums", sums},
                              {"train.val_accuracy", r->val_acc}};
    return trainer_save(&r->t, path, true, meta, sizeof meta / sizeof meta[0], err);
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

// One number of a metadata line, then a space or the end: strtoll/strtod
// with nothing skipped and nothing out of range, so a corrupted value is
// refused instead of read in part (sscanf would take "12abc" as 12).
static bool take_int(const char **p, long long lo, long long hi, long long *v) {
    char *end;
    errno = 0;
    *v = strtoll(*p, &end, 10);
    if (end == *p || errno || *v < lo || *v > hi || (*end != ' ' && *end)) return false;
    *p = *end ? end + 1 : end;
    return true;
}
static bool take_real(const char **p, double lo, double hi, double *v) {
    char *end;
    *v = strtod(*p, &end);
    if (end == *p || !(*v >= lo && *v <= hi) || (*end != ' ' && *end)) return false;
    *p = *end ? end + 1 : end;
    return true;
}

// The current epoch's sums as save_checkpoint() wrote them, and only if they
// fit the run: its steps so far this epoch, a batch of images each, no more
// of them right than seen, a finite loss and time.
static bool parse_epoch_sums(EpochStats *e, const char *text, const Trainer *t) {
    const char *p = text;
    long long correct, seen, steps;
    double loss, seconds;
    const long long batch = t->config.batch, done = t->step % t->steps_per_epoch;
    if (!p || !take_real(&p, 0, 1e30, &loss) || !take_int(&p, 0, LLONG_MAX / 2, &correct) ||
        !take_int(&p, 0, LLONG_MAX / 2, &seen) || !take_int(&p, 0, INT_MAX, &steps) ||
        !take_real(&p, 0, 1e9, &seconds) || *p)
        return false;
    if (steps != done || seen != steps * batch || correct > seen) return false;
    *e = (EpochStats){.loss_sum = loss, .correct = correct, .seen = seen, .steps = (int)steps,
                      .started = vit_now() - seconds}; // its time before the stop counts too
    return true;
}

// Field n (from 0) of the CSV row that ends at end, or NULL.
static const char *csv_field(const char *row, const char *end, int n) {
    for (; n > 0 && row; n--) {
        row = memchr(row, ',', (size_t)(end - row));
        if (row) row++;
    }
    return row;
}

// The log as save_checkpoint() wrote it: the header, then one row per
// finished epoch, numbered from 1. Its last row's validation accuracy (the
// 7th column) into acc, "%.4f" as the model's metadata gives it.
static bool check_log(const char *log, int epochs, char *acc, size_t size) {
    if (!log || strncmp(log, CSV_HEADER, strlen(CSV_HEADER)) != 0) return false;
    const char *row = log + strlen(CSV_HEADER);
    for (int k = 1; k <= epochs; k++) {
        const char *end = strchr(row, '\n');
        char *after;
        if (!end || strtol(row, &after, 10) != k || *after != ',') return false;
        const char *field = csv_field(row, end, 6);
        if (!field) return false;
        const double v = strtod(field, &after);
        if (after == field || *after != ',' || !(v >= 0 && v <= 1)) return false;
        if (k == epochs) snprintf(acc, size, "%.4f", v);
        row = end + 1;
    }
    return *row == '\0';
}

// Restore the log, the epoch's sums and the validation accuracy of a
// checkpoint, so the CSV and the model's metadata continue where it stopped
// (trainer_resume() has checked the weights and the step). Metadata that does
// not parse exactly, or does not fit the run, is refused.
static VitStatus restore_log(Run *r, const char *path, VitError *err) {
    SafeTensors st;
    VitStatus s = st_open(&st, path, err);
    if (s != VIT_OK) return s;
    const char *log = st_meta(&st, "train.log"), *sums = st_meta(&st, "train.epoch_sums");
    const char *acc = st_meta(&st, "train.val_accuracy");
    const int epochs = trainer_epoch(&r->t);
    char shown[512], from_log[32] = "not measured";
    vit_escape(shown, sizeof shown, path);
    if (!check_log(log, epochs, from_log, sizeof from_log))
        s = vit_fail(err, VIT_ERR_INPUT, "%s: its train.log is not the CSV of %d finished "
                     "epoch%s: not a checkpoint of vit train, or damaged", shown, epochs,
                     epochs == 1 ? "" : "s");
    else if (!parse_epoch_sums(&r->epoch, sums, &r->t))
        s = vit_fail(err, VIT_ERR_INPUT, "%s: its train.epoch_sums does not fit step %lld of "
                     "this run (%lld steps into the epoch, %d images each): damaged", shown,
                     (long long)r->t.step, (long long)(r->t.step % r->t.steps_per_epoch),
                     r->t.config.batch);
    if (s == VIT_OK) {
        csv_append(&r->log, log);
        // the accuracy as the run saved it; a checkpoint from before it did, from the log
        char *end = NULL;
        const double v = acc ? strtod(acc, &end) : -1;
        const bool exact = acc && end != acc && *end == '\0' && v >= 0 && v <= 1;
        snprintf(r->val_acc, sizeof r->val_acc, "%s", exact ? acc : from_log);
    }
    st_close(&st);
    return s;
}

// The epoch's validation pass and log row; its checkpoint.
static VitStatus end_epoch(Run *r, const TrainFlags *f, const EpochStats *e, VitError *err) {
    const double seconds = vit_now() - e->started; // the training steps' time alone
    EvalResult val;
    VitStatus s = eval_run(&r->t.vit, &r->val, r->t.config.mean, r->t.config.std,
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
    // the checkpoint first: it holds the log too, so a log that cannot be
    // written is made again on --resume, but a log row never lists an epoch
    // that no checkpoint kept
    if ((s = save_checkpoint(r, f->checkpoint, err)) != VIT_OK) return s;
    return csv_write(&r->log, f->log, err);
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

// The data: 55,000 images to learn from (or --limit of them), the last 5,000
// to validate on, and the test split, loaded now when it will be used, so that
// a missing or foreign test file is found before the first step, not after the last.
static VitStatus load_data(Run *r, const TrainFlags *f, const char *dir, VitError *err) {
    VitStatus s = dataset_fashion_mnist_load(&r->all, dir, "train", err);
    if (s != VIT_OK) return s;
    if ((s = dataset_split_validation(&r->train, &r->val, &r->all, FASHION_MNIST_VAL, err)) !=
        VIT_OK) {
        cli_name_the_folder(err, dir);
        return s;
    }
    char shown[512], n[VIT_NUM_BUF];
    if (f->limit > r->train.count)
        return vit_fail(err, VIT_ERR_INPUT, "--limit %d: %s holds %s training images (after "
                        "the %d held out for validation)", f->limit,
                        vit_escape(shown, sizeof shown, dir), vit_thousands(n, r->train.count),
                        FASHION_MNIST_VAL);
    if (f->limit) r->train = dataset_slice(&r->train, 0, f->limit);
    if (!f->test) return VIT_OK;
    if ((s = dataset_fashion_mnist_load(&r->test, dir, "test", err)) != VIT_OK) return s;
    if (r->test.size != r->all.size || r->test.channels != r->all.channels)
        return vit_fail(err, VIT_ERR_INPUT, "%s: the test images are %d×%d, the training "
                        "images %d×%d: not one data set (or give --test 0)",
                        vit_escape(shown, sizeof shown, dir), r->test.size, r->test.size,
                        r->all.size, r->all.size);
    return VIT_OK;
}

// The model, drawn from the seed, or the run of a checkpoint.
static VitStatus start(Run *r, const TrainFlags *f, VitConfig *model, VitError *err) {
    const TrainConfig cfg = read_config(f);
    VitStatus s = read_arch(model, f, &r->train, err);
    if (s == VIT_OK) s = trainer_init(&r->t, model, &cfg, &r->train, err);
    if (s != VIT_OK) return s;
    if (!f->resume) {
        csv_append(&r->log, CSV_HEADER);
        return VIT_OK;
    }
    if ((s = trainer_resume(&r->t, f->resume, err)) != VIT_OK) return s;
    return restore_log(r, f->resume, err);
}

// The test split, once, for the record (the run is over: it chooses nothing).
static VitStatus test_once(Run *r, VitError *err) {
    EvalResult test;
    const TrainConfig *c = &r->t.config;
    VitStatus s = eval_run(&r->t.vit, &r->test, c->mean, c->std, c->batch, &test, err);
    if (s != VIT_OK) return s;
    snprintf(r->test_acc, sizeof r->test_acc, "%.4f", eval_accuracy(&test));
    printf("test accuracy of the final model: %.2f%% (%d of %d)\n", 100 * eval_accuracy(&test),
           test.correct, test.count);
    eval_free(&test);
    return VIT_OK;
}

// The model (→ resume) → the epochs → the test split → the model written.
static VitStatus run(Run *r, const TrainFlags *f, int argc, char **argv, VitError *err) {
    join_command(r->command, sizeof r->command, argc, argv);
    VitConfig model;
    VitStatus s = start(r, f, &model, err);
    if (s != VIT_OK) return s;
    // the epochs (Ctrl-C is caught from the heading on: it saves a checkpoint)
    struct sigaction old[2];
    stop_requested = 0;
    catch_stops(old);
    printf("training a ViT (patch %d, D %d, depth %d, %d heads, MLP %d; %s parameters) on %d "
           "images, validating on %d: %d epochs of %d steps, batch %d in %d shard%s, %d "
           "thread%s%s\n",
           model.patch_size, model.dim, model.depth, model.heads, model.mlp_dim,
           vit_thousands((char[VIT_NUM_BUF]){0}, vit_param_count(&model)), r->train.count,
           r->val.count, f->epochs, r->t.steps_per_epoch, f->batch, f->shards,
           f->shards == 1 ? "" : "s", vit_get_threads(),
           vit_get_threads() == 1 ? "" : "s", f->resume ? "; resumed" : "");
    char gemm[1024];
    gemm_choice_describe(gemm, sizeof gemm);
    printf("matrix products: %s\n", gemm);

    const double started = vit_now();
    s = train_loop(r, f, err);
    release_stops(old);
    if (s == VIT_OK) printf("trained in %.0f s\n", vit_now() - started);
    if (s == VIT_OK && f->test) s = test_once(r, err);
    if (s == VIT_OK) s = save_model(r, f, err);
    if (s == VIT_OK) {
        char shown[1024];
        printf("%s: the model (validation accuracy %s, test %s)\n",
               vit_escape(shown, sizeof shown, f->out), r->val_acc, r->test_acc);
    }
    return s;
}

// The flags before the command line: the shipped recipe (train_defaults()).
static TrainFlags default_flags(void) {
    const TrainConfig d = train_defaults();
    return (TrainFlags){.data = "fashion-mnist", .arch = "vit-fashion", .epochs = d.epochs,
                        .batch = d.batch, .warmup = d.warmup_epochs, .crop_pad = d.augment.pad,
                        .flip = d.augment.flip, .seed = (int)d.seed, .lr = (float)d.lr,
                        .min_lr = (float)d.min_lr, .weight_decay = (float)d.weight_decay,
                        .clip = d.clip, .smoothing = d.smoothing, .shards = d.shards, .test = 1};
}

// The command line into *f (its table of options: `vit train --help` prints it).
static VitStatus parse_flags(TrainFlags *f, const VitCommand *self, int argc, char **argv,
                             bool *help, VitError *err) {
    CliOption options[] = {
        {"--out", CLI_STRING, &f->out, "FILE", "write the trained model here", .required = true},
        {"--data", CLI_STRING, &f->data, "DIR", "fashion-mnist (Debian's files) or a folder "
         "holding the same four .gz files", .show_default = true},
        {"--arch", CLI_STRING, &f->arch, "NAME", "the architecture", .show_default = true},
        {"--patch", CLI_INT, &f->patch, "p", "patch side (default 4: 7×7 patches)", .lo = 1, .hi = 28},
        {"--dim", CLI_INT, &f->dim, "D", "width (default 64)", .lo = 1, .hi = 4096},
        {"--depth", CLI_INT, &f->depth, "L", "blocks (default 6)", .lo = 1, .hi = 64},
        {"--heads", CLI_INT, &f->heads, "H", "heads (default 4)", .lo = 1, .hi = 64},
        {"--mlp", CLI_INT, &f->mlp, "M", "MLP width (default 128)", .lo = 1, .hi = 16384},
        {"--epochs", CLI_INT, &f->epochs, "E", "passes over the training images",
         .show_default = true, .lo = 1, .hi = 10000},
        {"--batch", CLI_INT, &f->batch, "B", "images per step", .show_default = true, .lo = 1,
         .hi = 65536},
        {"--lr", CLI_FLOAT, &f->lr, "LR", "the peak learning rate", .show_default = true,
         .lo = 0, .hi = 10},
        {"--min-lr", CLI_FLOAT, &f->min_lr, "LR", "the learning rate of the last step",
         .show_default = true, .lo = 0, .hi = 10},
        {"--warmup", CLI_INT, &f->warmup, "E", "epochs of linear warm-up from 0",
         .show_default = true, .lo = 0, .hi = 10000},
        {"--weight-decay", CLI_FLOAT, &f->weight_decay, "WD", "AdamW's decoupled weight decay",
         .show_default = true, .lo = 0, .hi = 10},
        {"--clip", CLI_FLOAT, &f->clip, "NORM", "the largest gradient norm; 0: never clip",
         .show_default = true, .lo = 0, .hi = 1e6},
        {"--label-smoothing", CLI_FLOAT, &f->smoothing, "EPS", "label smoothing of the loss",
         .show_default = true, .lo = 0, .hi = 0.99},
        {"--crop-pad", CLI_INT, &f->crop_pad, "N", "random crop after padding by N pixels; 0: "
         "no crop", .show_default = true, .lo = 0, .hi = 14},
        {"--flip", CLI_INT, &f->flip, "0|1", "mirror half the images left-right",
         .show_default = true, .lo = 0, .hi = 1},
        {"--seed", CLI_INT, &f->seed, "S", "of the init, the shuffles and the augmentation",
         .show_default = true, .lo = 0, .hi = 2147483647},
        {"--limit", CLI_INT, &f->limit, "N", "train on the first N of the 55,000 images only",
         .lo = 1, .hi = 55000},
        {"--shards", CLI_INT, &f->shards, "N", "split each batch into N parts, one per thread",
         .show_default = true, .lo = 1, .hi = 64},
        {"--checkpoint", CLI_STRING, &f->checkpoint, "FILE",
         "the checkpoint written each epoch and on Ctrl-C (default: OUT.ckpt)", .required = false},
        {"--resume", CLI_STRING, &f->resume, "FILE", "continue the run of this checkpoint", .required = false},
        {"--log", CLI_STRING, &f->log, "FILE", "the CSV of each epoch (default: OUT without .safetensors, plus .csv)", .required = false},
        {"--test", CLI_INT, &f->test, "0|1", "evaluate the test split at the end",
         .show_default = true, .lo = 0, .hi = 1},
        CLI_OPTION_THREADS(&f->threads),
    };
    CliSpec spec = {.command = self, .description = description, .examples = examples,
                    .options = options, .option_count = sizeof options / sizeof options[0]};
    VitStatus s = cli_parse(&spec, argc, argv, help, err);
    if (s == VIT_OK && !*help) cli_apply_threads(&spec, f->threads);
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
    // 1. parse; the files the run writes, checked before any work
    TrainFlags f = default_flags();
    bool help;
    VitStatus s = parse_flags(&f, self, argc, argv, &help, err);
    if (s != VIT_OK || help) return s;
    char *ckpt = f.checkpoint ? NULL : default_checkpoint(f.out);
    char *csv = f.log ? NULL : default_log(f.out);
    if (ckpt) f.checkpoint = ckpt;
    if (csv) f.log = csv;
    const char *dir = cli_data_dir(f.data);
    Run r = {0};
    snprintf(r.val_acc, sizeof r.val_acc, "not measured");
    snprintf(r.test_acc, sizeof r.test_acc, "not measured");
    if ((s = check_files(&f, dir, err)) == VIT_OK) s = load_data(&r, &f, dir, err);
    if (s == VIT_OK) s = run(&r, &f, argc, argv, err);
    run_free(&r);
    free(ckpt);
    free(csv);
    return s;
}
