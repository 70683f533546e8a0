/**
 * @file run_steps.c
 * @brief The step log: one CSV row per optimizer step of a training run
 *        (run.h), kept in memory and in the checkpoint, written at each
 *        epoch's end and on an interrupt.
 *
 * Layout, one row per step, one file:
 *
 *     epoch,step,lr,loss,batch_acc,grad_norm[,G.grad_norm,G.weight_norm,G.update_ratio …]
 *
 * `step` counts the steps taken, from 1 (the epoch log's `step` of an epoch
 * is its last step's); `lr` is the rate that step used, lr_at(step − 1);
 * `loss` and `batch_acc` are the batch's before the update; `grad_norm` is
 * the global norm before clipping. When the run keeps a layer log, each
 * layer group G (patch_embed, blocks.0 …, norm, head) adds its three
 * numbers of that step (layer_stats.h), wide, not one row per group: a step
 * stays one row, so a script reads it with one read_csv and plots a column
 * by name, with no join on the step; the epoch's layer log (long, a row per
 * group) is the one to group by layer. The columns are fixed when the run
 * starts and a resume keeps them: a step whose layers were not measured (a
 * resume with --layer-log none) leaves their cells empty.
 *
 * The rows are kept whether or not the file is written, in the checkpoint
 * as train.step_log, so that a resumed run continues the file with no step
 * missing and none twice. A checkpoint from before the step log resumes it
 * from its step on.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/run_internal.h"

/** The columns every step log has. */
static const char STEP_COLUMNS[] = "epoch,step,lr,loss,batch_acc,grad_norm";

// Append n bytes to the step log, its room doubled when it is full: the log
// grows a row per step, so a strlen() and realloc per row would be quadratic.
static void step_log_add(TrainRun *r, const char *text, size_t n) {
    if (r->step_log_size + n + 1 > r->step_log_room) {
        size_t room = r->step_log_room ? r->step_log_room : 4096;
        while (room < r->step_log_size + n + 1) room *= 2;
        r->step_log = vit_realloc(r->step_log, room);
        r->step_log_room = room;
    }
    memcpy(r->step_log + r->step_log_size, text, n);
    r->step_log_size += n;
    r->step_log[r->step_log_size] = '\0';
}

// The header, with the layer groups' columns or without; free() it.
static char *step_log_header(const VitConfig *model, bool layers) {
    const int groups = train_layer_count(model);
    char *header = vit_malloc(sizeof STEP_COLUMNS + (size_t)groups * 3 * 48 + 2);
    int at = sprintf(header, "%s", STEP_COLUMNS);
    for (int g = 0; g < groups && layers; g++) {
        char name[32];
        train_layer_name(name, sizeof name, g, model->depth);
        at += sprintf(header + at, ",%s.grad_norm,%s.weight_norm,%s.update_ratio", name, name,
                      name);
    }
    sprintf(header + at, "\n");
    return header;
}

void train_step_log_start(TrainRun *r, bool layers) {
    char *header = step_log_header(&r->model, layers);
    r->step_log_size = 0;
    step_log_add(r, header, strlen(header));
    r->step_layers = layers;
    free(header);
}

// Whether the rows after the header are whole rows of steps numbered one
// after another, the last one `last` (none: last is 0 or the log is new).
static bool rows_end_at(const char *rows, int64_t last) {
    int64_t prev = -1;
    for (const char *row = rows; *row;) {
        const char *end = strchr(row, '\n'), *comma = strchr(row, ',');
        char *after;
        if (!end || !comma || comma > end) return false;
        const long long step = strtoll(comma + 1, &after, 10);
        if (after == comma + 1 || *after != ',' || (prev >= 0 && step != prev + 1)) return false;
        prev = step;
        row = end + 1;
    }
    return prev < 0 || prev == last;
}

bool train_step_log_restore(TrainRun *r, const char *text, bool layers) {
    if (!text) { // a checkpoint from before the step log: from its step on
        train_step_log_start(r, layers);
        return true;
    }
    for (int with = 0; with < 2; with++) { // the columns the run started with
        char *header = step_log_header(&r->model, with);
        const size_t n = strlen(header);
        const bool match = strncmp(text, header, n) == 0 && rows_end_at(text + n, r->t.step);
        free(header);
        if (match) {
            r->step_log_size = 0;
            step_log_add(r, text, strlen(text));
            r->step_layers = with;
            return true;
        }
    }
    return false;
}

void train_step_log_row(TrainRun *r, const TrainStep *st) {
    const Trainer *t = &r->t;
    char row[192]; // the widest row part: two integers and four %.6g, under 100 bytes
    // t->step is already past this step: it is the step's number from 1
    int n = snprintf(row, sizeof row, "%lld,%" PRId64 ",%.6g,%.6g,%.6g,%.6g",
                     (long long)((t->step - 1) / t->steps_per_epoch + 1), t->step, st->lr,
                     (double)st->loss, (double)st->correct / t->config.batch, st->grad_norm);
    step_log_add(r, row, (size_t)n);
    for (int g = 0; g < train_layer_count(&r->model) && r->step_layers; g++) {
        if (r->watch_layers) {
            const TrainLayerStats *s = &r->layers[g];
            n = snprintf(row, sizeof row, ",%.6g,%.6g,%.6g", s->grad_norm, s->weight_norm,
                         s->update_ratio);
        } else {
            n = snprintf(row, sizeof row, ",,,"); // not measured (r->layers may be NULL)
        }
        step_log_add(r, row, (size_t)n);
    }
    step_log_add(r, "\n", 1);
}
