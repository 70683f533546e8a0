/**
 * @file run_epoch.c
 * @brief A training run's steps, its epochs' ends (validation, CSV rows,
 *        checkpoint, film frame) and its end (the test split, the model)
 *        (run.h).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "base/fileio.h"
#include "gemm/gemm.h"
#include "train/run.h"
#include "train/film.h"
#include "train/run_internal.h"

/* ------------------------------------------------------------- files */

const char TRAIN_CSV_HEADER[] =
    "epoch,step,lr,train_loss,train_acc,val_loss,val_acc,seconds,images_per_s\n";
const char TRAIN_LAYER_CSV_HEADER[] =
    "epoch,step,layer,grad_norm,weight_norm,update_ratio\n";

void train_text_append(char **text, const char *more) {
    const size_t have = *text ? strlen(*text) : 0, n = strlen(more);
    *text = vit_realloc(*text, have + n + 1);
    memcpy(*text + have, more, n + 1);
}


static VitStatus write_text(const char *text, const char *path, VitError *err) {
    OutFile out;
    VitStatus s = outfile_open(&out, path, err);
    if (s != VIT_OK) return s;
    const size_t n = strlen(text);
    return outfile_commit(&out, fwrite(text, 1, n, out.f) == n, err);
}

// The checkpoint: the model, AdamW's state, the logs so far (the step log's
// rows up to this step) and the current epoch's sums (so an epoch
// interrupted and resumed logs all of its steps).
static VitStatus save_checkpoint(const TrainRun *r, VitError *err) {
    char sums[160];
    const TrainEpochStats *e = &r->epoch;
    const double seconds = e->steps ? vit_now() - e->started : 0; // no step yet: no time
    snprintf(sums, sizeof sums, "%.17g %lld %lld %d %.3f", e->loss_sum, (long long)e->correct,
             (long long)e->seen, e->steps, seconds);
    // the layer groups' sums: "steps" then "g w u" per group, %.17g to resume exactly
    const int groups = train_layer_count(&r->model);
    char *layer_sums = vit_malloc((size_t)groups * 3 * 26 + 16);
    int at = sprintf(layer_sums, "%d", r->layer_steps);
    for (int g = 0; g < groups; g++)
        at += sprintf(layer_sums + at, " %.17g %.17g %.17g", r->layer_sums[g].grad_norm,
                      r->layer_sums[g].weight_norm, r->layer_sums[g].update_ratio);
    const TrainMeta meta[] = {{"train.log", r->log}, {"train.command", r->settings.command},
                              {"train.epoch_sums", sums}, {"train.val_accuracy", r->val_acc},
                              {"train.layer_log", r->layer_log},
                              {"train.layer_sums", layer_sums},
                              {"train.step_log", r->step_log}};
    VitStatus s = trainer_save(&r->t, r->settings.checkpoint, true, meta,
                               sizeof meta / sizeof meta[0], err);
    free(layer_sums);
    return s;
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
static const char *train_gemm(const TrainRun *r) {
    const VitConfig *c = &r->t.vit.config;
    const int batch = r->t.config.batch, shards = r->t.config.shards;
    const int tokens = vit_num_tokens(c);
    const int rows = (batch + shards - 1) / shards * tokens;
    const int widest = 3 * c->dim > c->mlp_dim ? 3 * c->dim : c->mlp_dim;
    const GemmBackend largest = gemm_backend_for(rows, c->dim, widest);
    const GemmBackend smallest = gemm_backend_for(tokens, c->dim / c->heads, tokens);
    return largest == smallest ? gemm_backend_name(largest) : "tiled and blas, by size";
}

// The model alone with every program's metadata, at path; a film frame adds
// its epoch and the run's epochs (epoch < 0: the final model, without them).
static VitStatus save_model(const TrainRun *r, const char *path, int epoch, VitError *err) {
    char names[512], epochs[16], seed[32], mean[32], stdev[32], threads[16], side[16], chans[16];
    char shards[16], this_epoch[16];
    const TrainConfig *c = &r->t.config;
    class_names_json(names, sizeof names, &r->train);
    snprintf(threads, sizeof threads, "%d", vit_get_threads());
    snprintf(shards, sizeof shards, "%d", c->shards);
    snprintf(side, sizeof side, "%d", r->t.vit.config.image_size);
    snprintf(chans, sizeof chans, "%d", r->t.vit.config.channels);
    snprintf(epochs, sizeof epochs, "%d", c->epochs);
    snprintf(seed, sizeof seed, "%d", (int)c->seed);
    snprintf(mean, sizeof mean, "%.4f", (double)c->mean);
    snprintf(stdev, sizeof stdev, "%.4f", (double)c->std);
    snprintf(this_epoch, sizeof this_epoch, "%d", epoch);
    const TrainMeta meta[] = {
        {"class_names", names},       {"preprocess", "fashion-mnist"},
        {"mean", mean},               {"std", stdev},
        {"image_size", side},         {"channels", chans},
        {"train.command", r->settings.command}, {"train.seed", seed}, {"train.shards", shards},
        {"train.threads", threads},   {"train.gemm", train_gemm(r)},
        {"train.epochs", epochs},     {"train.val_accuracy", r->val_acc},
        {"train.test_accuracy", r->test_acc}, {"train.log", r->log},
        {"train.data", "Fashion-MNIST (Debian dataset-fashion-mnist): trained on the first "
                       "55,000 training images, validated on the last 5,000"},
        {"train.epoch", this_epoch}, // a film frame's own: left out of the final model
    };
    const int count = sizeof meta / sizeof meta[0] - (epoch < 0);
    return trainer_save(&r->t, path, false, meta, count, err);
}

VitStatus train_film_frame(const TrainRun *r, int epoch, VitError *err) {
    const char *dir = r->settings.film;
    char shown[512];
    if (mkdir(dir, 0777) != 0) {
        struct stat sb;
        if (stat(dir, &sb) != 0 || !S_ISDIR(sb.st_mode))
            return vit_fail(err, VIT_ERR_INPUT, "%s: cannot make the film's folder",
                            vit_escape(shown, sizeof shown, dir));
    }
    char *path = film_frame_path(dir, epoch); // film.h: the one place frames are named
    VitStatus s = save_model(r, path, epoch, err);
    free(path);
    return s;
}

/* ------------------------------------------------------- an epoch's end */

// The epoch's row of the layer log: each group's mean over its steps.
static void log_layers(TrainRun *r) {
    const int groups = train_layer_count(&r->model), depth = r->model.depth;
    const double n = r->layer_steps > 0 ? r->layer_steps : 1;
    for (int g = 0; g < groups && r->layer_steps > 0; g++) {
        char name[32], row[256];
        train_layer_name(name, sizeof name, g, depth);
        const TrainLayerStats *s = &r->layer_sums[g];
        snprintf(row, sizeof row, "%d,%lld,%s,%.6g,%.6g,%.6g\n", trainer_epoch(&r->t),
                 (long long)r->t.step, name, s->grad_norm / n, s->weight_norm / n,
                 s->update_ratio / n);
        train_text_append(&r->layer_log, row);
    }
    memset(r->layer_sums, 0, (size_t)groups * sizeof *r->layer_sums);
    r->layer_steps = 0;
}

// The epoch's validation pass, its log rows; its checkpoint, logs and film frame.
static VitStatus end_epoch(TrainRun *r, TrainRunStep *out, VitError *err) {
    const TrainEpochStats *e = &out->done;
    const double seconds = out->seconds; // the training steps' time alone
    eval_free(&r->last_val);
    VitStatus s = eval_run(&r->t.vit, &r->val, r->t.config.mean, r->t.config.std,
                           r->t.config.batch, &r->last_val, err);
    if (s != VIT_OK) return s;
    const EvalResult *val = &r->last_val;
    const TrainEpochRow row = {
        .train_loss = e->loss_sum / e->steps, .train_acc = (double)e->correct / e->seen,
        .val_loss = val->loss, .val_acc = eval_accuracy(val),
        .lr = lr_at(&r->t.schedule, (int)r->t.step - 1), .seconds = seconds,
        .images_per_s = seconds > 0 ? e->seen / seconds : 0.0};
    char line[256];
    snprintf(line, sizeof line, "%d,%lld,%.6g,%.5f,%.5f,%.5f,%.5f,%.1f,%.1f\n",
             trainer_epoch(&r->t), (long long)r->t.step, row.lr, row.train_loss, row.train_acc,
             row.val_loss, row.val_acc, row.seconds, row.images_per_s);
    train_text_append(&r->log, line);
    if (r->watch_layers) log_layers(r);
    r->epochs[r->epochs_done++] = row;
    snprintf(r->val_acc, sizeof r->val_acc, "%.4f", eval_accuracy(val));
    out->epoch_ended = true;
    out->val_count = val->count;
    // the checkpoint first: it holds the logs too, so a log that cannot be
    // written is made again on --resume, but a log row never lists an epoch
    // that no checkpoint kept
    const TrainRunSettings *f = &r->settings;
    if ((s = save_checkpoint(r, err)) != VIT_OK) return s;
    if ((s = write_text(r->log, f->log, err)) != VIT_OK) return s;
    if (f->layer_log && (s = write_text(r->layer_log, f->layer_log, err)) != VIT_OK) return s;
    if (f->step_log && (s = write_text(r->step_log, f->step_log, err)) != VIT_OK) return s;
    const int epoch = trainer_epoch(&r->t);
    if (f->film && film_keeps_epoch(epoch, f->config.epochs)) s = train_film_frame(r, epoch, err);
    return s;
}

/* ------------------------------------------------------------ a step */

VitStatus train_run_step(TrainRun *r, TrainRunStep *out, VitError *err) {
    Trainer *t = &r->t;
    *out = (TrainRunStep){0};
    if (r->watch_layers) train_layers_before(&r->watch, &t->opt);
    const int64_t k = t->step;
    VitStatus s = trainer_step(t, &out->step, err);
    if (s != VIT_OK) return s;
    TrainEpochStats *e = &r->epoch;
    e->loss_sum += out->step.loss, e->correct += out->step.correct;
    e->seen += t->config.batch, e->steps++;
    r->steps[k] = (TrainStepPoint){.loss = out->step.loss, .lr = (float)out->step.lr,
                                   .grad_norm = (float)out->step.grad_norm,
                                   .correct = out->step.correct};
    if (r->watch_layers) {
        train_layers_after(&r->watch, &t->opt, out->step.grad_norm, t->config.clip, r->layers);
        for (int g = 0; g < r->watch.groups; g++) {
            r->layer_sums[g].grad_norm += r->layers[g].grad_norm;
            r->layer_sums[g].weight_norm += r->layers[g].weight_norm;
            r->layer_sums[g].update_ratio += r->layers[g].update_ratio;
        }
        r->layer_steps++;
    }
    train_step_log_row(r, &out->step);
    if (t->step % t->steps_per_epoch != 0) return VIT_OK;
    // the epoch is complete: its checkpoint holds the next epoch, empty (and
    // started now, not at time 0: a run resumed from it times that epoch right)
    out->done = *e;
    out->seconds = vit_now() - e->started;
    *e = (TrainEpochStats){.started = vit_now()};
    s = end_epoch(r, out, err);
    e->started = vit_now();
    return s;
}

VitStatus train_run_interrupt(TrainRun *r, VitError *err) {
    VitStatus s = save_checkpoint(r, err);
    // the step log up to the stop (a resume rewrites it whole: no row twice)
    if (s == VIT_OK && r->settings.step_log)
        s = write_text(r->step_log, r->settings.step_log, err);
    if (s != VIT_OK) return s;
    char shown[1024];
    return vit_fail(err, VIT_ERR_INPUT, "interrupted at step %lld of %lld: checkpoint saved to "
                    "%s; continue with the same flags and --resume %s", (long long)r->t.step,
                    (long long)trainer_total_steps(&r->t),
                    vit_escape(shown, sizeof shown, r->settings.checkpoint), shown);
}

/* ------------------------------------------------------------ the end */

VitStatus train_run_finish(TrainRun *r, VitError *err) {
    if (r->settings.test) {
        // the test split, once, for the record (the run is over: it chooses nothing)
        EvalResult test;
        const TrainConfig *c = &r->t.config;
        VitStatus s = eval_run(&r->t.vit, &r->test, c->mean, c->std, c->batch, &test, err);
        if (s != VIT_OK) return s;
        snprintf(r->test_acc, sizeof r->test_acc, "%.4f", eval_accuracy(&test));
        r->test_correct = test.correct, r->test_count = test.count;
        eval_free(&test);
    }
    return save_model(r, r->settings.out, -1, err);
}
