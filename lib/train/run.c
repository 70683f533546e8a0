/**
 * @file run.c
 * @brief A training run's start: the files checked, the data loaded, the
 *        model drawn or resumed with its logs (run.h). The steps, the
 *        epochs' ends and the end of the run are in run_epoch.c.
 */
#include "train/run.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fileio.h"
#include "train/run_internal.h"

/* ------------------------------------------------------------- files */

// The film's folder: a folder or nothing yet, and none of the run's files.
static VitStatus check_film(const TrainRunSettings *s, const FileRole *files, int n,
                            VitError *err) {
    char shown[512];
    struct stat sb;
    if (stat(s->film, &sb) == 0 && !S_ISDIR(sb.st_mode))
        return vit_fail(err, VIT_ERR_INPUT, "%s: --film names a file that is not a folder: the "
                        "film is a folder of model files", vit_escape(shown, sizeof shown, s->film));
    for (int i = 0; i < n; i++)
        if (files[i].path && file_same(s->film, files[i].path))
            return vit_fail(err, VIT_ERR_USAGE, "--film %s is the file %s names",
                            vit_escape(shown, sizeof shown, s->film), files[i].role);
    return VIT_OK;
}

// Before any work, every file the run writes: distinct files, none of them one
// it reads (the four data files, the checkpoint it resumes; through a link or
// not), each of them writable. Resuming from the checkpoint this run goes on
// writing is the usual case: it is read whole before the first write. A
// failure here is a message now, not after the last epoch.
static VitStatus check_files(const TrainRunSettings *f, VitError *err) {
    const char *resumed = !f->resume                     ? NULL
                          : file_same(f->resume, f->out) ? "out"
                          : file_same(f->resume, f->log) ? "log"
                          : f->layer_log && file_same(f->resume, f->layer_log) ? "layer-log"
                          : f->step_log && file_same(f->resume, f->step_log) ? "step-log"
                                                         : NULL;
    if (resumed) {
        char resume[512], ckpt[512];
        return vit_fail(err, VIT_ERR_USAGE, "--resume %s names the file --%s writes: resume "
                        "from the checkpoint (%s)", vit_escape(resume, sizeof resume, f->resume),
                        resumed, vit_escape(ckpt, sizeof ckpt, f->checkpoint));
    }
    const FileRole outputs[] = {{f->out, "--out"}, {f->checkpoint, "--checkpoint"},
                               {f->log, "--log"}, {f->layer_log, "--layer-log"},
                               {f->step_log, "--step-log"}};
    const int n_out = sizeof outputs / sizeof outputs[0];
    VitStatus s = file_check_distinct(outputs, n_out, err);
    if (s != VIT_OK) return s;
    // what is read: the data (a file not found is the loader's message, later) and --resume
    FashionMnistFiles train, test;
    VitError missing;
    (void)dataset_fashion_mnist_files(&train, f->data_dir, "train", &missing);
    (void)dataset_fashion_mnist_files(&test, f->data_dir, "test", &missing);
    const FileRole reads[] = {{train.images, "the training images (--data)"},
                             {train.labels, "the training labels (--data)"},
                             {test.images, "the test images (--data)"},
                             {test.labels, "the test labels (--data)"},
                             {f->resume, "--resume"}};
    for (int i = 0; i < n_out; i++) {
        if (!outputs[i].path) continue;
        const int n = i == 1 ? 4 : 5; // the checkpoint may be the one resumed
        for (int k = 0; k < n; k++)
            if (reads[k].path && (s = file_check_not_input(outputs[i].path, outputs[i].role,
                                                           reads[k].path, reads[k].role, err)) !=
                                     VIT_OK)
                return s;
        if ((s = outfile_check(outputs[i].path, err)) != VIT_OK) return s;
    }
    if (!f->film) return VIT_OK;
    const FileRole all[] = {outputs[0], outputs[1], outputs[2], outputs[3], outputs[4],
                           reads[0],   reads[1],   reads[2],   reads[3],   reads[4]};
    return check_film(f, all, sizeof all / sizeof all[0], err);
}

/* -------------------------------------------------------------- setup */

// The architecture: the named one, with any sizes the settings override.
static VitStatus read_arch(VitConfig *m, const TrainRunSettings *f, const Dataset *d,
                           VitError *err) {
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
    return vit_fail(err, VIT_ERR_USAGE, "%s", why); // a setting's fault: bad usage
}

// Put the data's folder in front of a message about its contents.
static void name_the_folder(VitError *err, const char *dir) {
    char shown[512], msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err->msg);
    (void)vit_fail(err, VIT_ERR_INPUT, "%s: %s", vit_escape(shown, sizeof shown, dir), msg);
}

// The data: 55,000 images to learn from (or limit of them), the last 5,000
// to validate on, and the test split, loaded now when it will be used, so that
// a missing or foreign test file is found before the first step, not after the last.
static VitStatus load_data(TrainRun *r, const TrainRunSettings *f, VitError *err) {
    const char *dir = f->data_dir;
    VitStatus s = dataset_fashion_mnist_load(&r->all, dir, "train", err);
    if (s != VIT_OK) return s;
    if ((s = dataset_split_validation(&r->train, &r->val, &r->all, FASHION_MNIST_VAL, err)) !=
        VIT_OK) {
        name_the_folder(err, dir);
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

/* ------------------------------------------------------------- resume */

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

// The current epoch's sums as the checkpoint wrote them, and only if they
// fit the run: its steps so far this epoch, a batch of images each, no more
// of them right than seen, a finite loss and time.
static bool parse_epoch_sums(TrainEpochStats *e, const char *text, const Trainer *t) {
    const char *p = text;
    long long correct, seen, steps;
    double loss, seconds;
    const long long batch = t->config.batch, done = t->step % t->steps_per_epoch;
    if (!p || !take_real(&p, 0, 1e30, &loss) || !take_int(&p, 0, LLONG_MAX / 2, &correct) ||
        !take_int(&p, 0, LLONG_MAX / 2, &seen) || !take_int(&p, 0, INT_MAX, &steps) ||
        !take_real(&p, 0, 1e9, &seconds) || *p)
        return false;
    if (steps != done || seen != steps * batch || correct > seen) return false;
    *e = (TrainEpochStats){.loss_sum = loss, .correct = correct, .seen = seen,
                           .steps = (int)steps, .started = vit_now() - seconds};
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

// The log as the checkpoint holds it: the header, then one row per finished
// epoch, numbered from 1, each kept in rows[] when given. Its last row's
// validation accuracy (the 7th column) into acc, "%.4f" as the model's
// metadata gives it.
static bool check_log(const char *log, int epochs, char *acc, size_t size, TrainEpochRow *rows) {
    const size_t header = strlen(TRAIN_CSV_HEADER);
    if (!log || strncmp(log, TRAIN_CSV_HEADER, header) != 0) return false;
    const char *row = log + header;
    for (int k = 1; k <= epochs; k++) {
        const char *end = strchr(row, '\n');
        char *after;
        if (!end || strtol(row, &after, 10) != k || *after != ',') return false;
        const char *field = csv_field(row, end, 6);
        if (!field) return false;
        const double v = strtod(field, &after);
        if (after == field || *after != ',' || !(v >= 0 && v <= 1)) return false;
        if (k == epochs) snprintf(acc, size, "%.4f", v);
        double x[7] = {0}; // lr, train loss, acc, val loss, acc, seconds, img/s: for the history
        for (int c = 0; c < 7; c++) {
            const char *at = csv_field(row, end, c + 2);
            x[c] = at ? strtod(at, NULL) : 0;
        }
        rows[k - 1] = (TrainEpochRow){.lr = x[0], .train_loss = x[1], .train_acc = x[2],
                                      .val_loss = x[3], .val_acc = x[4], .seconds = x[5],
                                      .images_per_s = x[6]};
        row = end + 1;
    }
    return *row == '\0';
}

// The layer log of a checkpoint: absent in one from before it (it starts
// empty), else its header, then whole rows.
static bool check_layer_log(const char *log) {
    const size_t header = strlen(TRAIN_LAYER_CSV_HEADER), n = log ? strlen(log) : 0;
    return !log || (strncmp(log, TRAIN_LAYER_CSV_HEADER, header) == 0 && log[n - 1] == '\n');
}

// The layer groups' sums of the current epoch: "steps g w u g w u …" (one
// triple per group), or nothing: a checkpoint without them sums from here.
static void restore_layer_sums(TrainRun *r, const char *text) {
    const int groups = train_layer_count(&r->model);
    const char *p = text;
    long long steps;
    if (!p || !take_int(&p, 0, INT_MAX, &steps)) return;
    TrainLayerStats *sums = vit_calloc((size_t)groups, sizeof *sums);
    bool ok = true;
    for (int g = 0; g < groups && ok; g++)
        ok = take_real(&p, 0, 1e300, &sums[g].grad_norm) &&
             take_real(&p, 0, 1e300, &sums[g].weight_norm) &&
             take_real(&p, 0, 1e300, &sums[g].update_ratio);
    if (ok && !*p && steps <= r->t.step % r->t.steps_per_epoch) {
        memcpy(r->layer_sums, sums, (size_t)groups * sizeof *sums);
        r->layer_steps = (int)steps;
    }
    free(sums);
}

// Restore the logs, the epoch's sums and the validation accuracy of a
// checkpoint, so the CSVs and the model's metadata continue where it stopped
// (trainer_resume() has checked the weights and the step). Metadata that does
// not parse exactly, or does not fit the run, is refused.
static VitStatus restore_logs(TrainRun *r, const char *path, VitError *err) {
    SafeTensors st;
    VitStatus s = st_open(&st, path, err);
    if (s != VIT_OK) return s;
    const char *log = st_meta(&st, "train.log"), *sums = st_meta(&st, "train.epoch_sums");
    const char *acc = st_meta(&st, "train.val_accuracy");
    const char *layers = st_meta(&st, "train.layer_log");
    const char *steps = st_meta(&st, "train.step_log");
    const int epochs = trainer_epoch(&r->t);
    char shown[512], from_log[32] = "not measured";
    vit_escape(shown, sizeof shown, path);
    if (!check_log(log, epochs, from_log, sizeof from_log, r->epochs))
        s = vit_fail(err, VIT_ERR_INPUT, "%s: its train.log is not the CSV of %d finished "
                     "epoch%s: not a checkpoint of vit train, or damaged", shown, epochs,
                     epochs == 1 ? "" : "s");
    else if (!parse_epoch_sums(&r->epoch, sums, &r->t))
        s = vit_fail(err, VIT_ERR_INPUT, "%s: its train.epoch_sums does not fit step %lld of "
                     "this run (%lld steps into the epoch, %d images each): damaged", shown,
                     (long long)r->t.step, (long long)(r->t.step % r->t.steps_per_epoch),
                     r->t.config.batch);
    else if (!check_layer_log(layers))
        s = vit_fail(err, VIT_ERR_INPUT, "%s: its train.layer_log is not a CSV of layer "
                     "groups: damaged", shown);
    else if (!train_step_log_restore(r, steps, r->settings.layer_log != NULL))
        s = vit_fail(err, VIT_ERR_INPUT, "%s: its train.step_log is not the CSV of steps "
                     "numbered in turn up to step %lld: damaged", shown, (long long)r->t.step);
    if (s == VIT_OK) {
        train_text_append(&r->log, log);
        train_text_append(&r->layer_log, layers ? layers : TRAIN_LAYER_CSV_HEADER);
        restore_layer_sums(r, st_meta(&st, "train.layer_sums"));
        r->epochs_done = epochs;
        // the accuracy as the run saved it; a checkpoint from before it did, from the log
        char *end = NULL;
        const double v = acc ? strtod(acc, &end) : -1;
        const bool exact = acc && end != acc && *end == '\0' && v >= 0 && v <= 1;
        snprintf(r->val_acc, sizeof r->val_acc, "%s", exact ? acc : from_log);
    }
    st_close(&st);
    return s;
}

// The model, drawn from the seed, or the run of a checkpoint; the history's room.
static VitStatus start(TrainRun *r, const TrainRunSettings *f, VitError *err) {
    VitStatus s = read_arch(&r->model, f, &r->train, err);
    if (s == VIT_OK) s = trainer_init(&r->t, &r->model, &f->config, &r->train, err);
    if (s != VIT_OK) return s;
    const int groups = train_layer_count(&r->model);
    r->epochs = vit_calloc((size_t)f->config.epochs, sizeof *r->epochs);
    r->steps = vit_calloc((size_t)trainer_total_steps(&r->t), sizeof *r->steps);
    r->layers = vit_calloc((size_t)groups, sizeof *r->layers);
    r->layer_sums = vit_calloc((size_t)groups, sizeof *r->layer_sums);
    if (!f->resume) {
        train_text_append(&r->log, TRAIN_CSV_HEADER);
        train_text_append(&r->layer_log, TRAIN_LAYER_CSV_HEADER);
        train_step_log_start(r, f->layer_log != NULL); // its layer columns: with a layer log
        return VIT_OK;
    }
    r->resumed = true;
    if ((s = trainer_resume(&r->t, f->resume, err)) != VIT_OK) return s;
    if ((s = restore_logs(r, f->resume, err)) != VIT_OK) return s;
    for (int64_t k = 0; k < r->t.step; k++) r->steps[k].correct = -1; // not seen by this process
    return VIT_OK;
}

VitStatus train_run_open(TrainRun *r, const TrainRunSettings *s, VitError *err) {
    *r = (TrainRun){.settings = *s};
    snprintf(r->val_acc, sizeof r->val_acc, "not measured");
    snprintf(r->test_acc, sizeof r->test_acc, "not measured");
    VitStatus st = check_files(s, err);
    if (st == VIT_OK) st = load_data(r, s, err);
    if (st == VIT_OK) st = start(r, s, err);
    if (st == VIT_OK && s->layer_log) st = train_run_watch_layers(r, err);
    if (st == VIT_OK && s->film && r->t.step == 0) st = train_film_frame(r, 0, err);
    r->started = vit_now();
    r->first_step = r->t.step;
    if (!r->resumed) r->epoch = (TrainEpochStats){.started = r->started};
    return st;
}

VitStatus train_run_watch_layers(TrainRun *r, VitError *err) {
    if (r->watch_layers) return VIT_OK;
    VitStatus s = train_layers_init(&r->watch, &r->t.opt, r->model.depth, err);
    r->watch_layers = s == VIT_OK;
    return s;
}

bool train_run_done(const TrainRun *r) {
    return r->t.step >= trainer_total_steps(&r->t);
}

double train_run_rate(const TrainRun *r) {
    const double seconds = vit_now() - r->started;
    return seconds > 0 ? (double)(r->t.step - r->first_step) * r->t.config.batch / seconds : 0;
}

double train_run_eta(const TrainRun *r) {
    const double rate = train_run_rate(r);
    const int64_t left = trainer_total_steps(&r->t) - r->t.step;
    return rate > 0 ? (double)left * r->t.config.batch / rate : 0;
}

void train_run_free(TrainRun *r) {
    trainer_free(&r->t);
    dataset_free(&r->all);
    dataset_free(&r->test);
    eval_free(&r->last_val);
    train_layers_free(&r->watch);
    free(r->log);
    free(r->layer_log);
    free(r->step_log);
    free(r->epochs);
    free(r->steps);
    free(r->layers);
    free(r->layer_sums);
    *r = (TrainRun){0};
}
