/**
 * @file train_command.c
 * @brief `vit train`'s flags: their table, their defaults, the names made
 *        from --out, the settings of the run, and Ctrl-C (see train_command.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fileio.h"
#include "train/film.h"
#include "train_command.h"

/** The flags of `vit train`, as the table below reads them. */
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
    const char *layer_log;  // --layer-log: the CSV of each epoch's layer groups ("none": off)
    const char *step_log;   // --step-log: the CSV of each step ("none": off)
    const char *film;       // --film: the folder of the kept epochs' models ("none": off)
    int test;               // --test: evaluate the test split at the end (1) or not (0)
    bool watch;             // --watch: vitview --train on a terminal
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
    "Each epoch also adds to the layer log (--layer-log) a row per layer group\n"
    "(patch_embed with [cls] and the positions, blocks.0 ..., norm, head): the\n"
    "mean over the epoch's steps of its gradient norm before clipping, its weight\n"
    "norm after the step and its update ratio ||after - before|| / ||before||.\n"
    "The step log (--step-log) has a row per step: epoch, step, the learning\n"
    "rate it used, the batch's loss and accuracy before the update and the\n"
    "gradient norm before clipping; with a layer log, each layer group's three\n"
    "numbers of that step too, as columns (blocks.0.grad_norm, ...). It is\n"
    "written at each epoch's end and on Ctrl-C, and continues on --resume.\n"
    "The film (--film) is a folder of ordinary model files, epoch-000.safetensors\n"
    "(the initial weights), each power of two and the last epoch, with\n"
    "train.epoch in their metadata. --watch on a terminal hands the run to\n"
    "vitview --train (beside vit); --watch degrades to the progress line when\n"
    "the output is not a terminal.\n"
    "\n"
    "Before the first step every output is checked: five different files, none\n"
    "of them one the run reads (the data, the checkpoint it resumes), each one\n"
    "that can be written, and the film's folder a folder or none yet; the test\n"
    "split is read then too.\n"
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

static TrainConfig read_config(const TrainFlags *f) {
    TrainConfig c = train_defaults();
    c.epochs = f->epochs, c.batch = f->batch, c.lr = f->lr, c.min_lr = f->min_lr;
    c.warmup_epochs = f->warmup, c.weight_decay = f->weight_decay, c.clip = f->clip;
    c.smoothing = f->smoothing, c.seed = (uint64_t)f->seed, c.shards = f->shards;
    c.augment = (Augment){.pad = f->crop_pad, .flip = f->flip != 0};
    return c;
}


// The default names made from --out however long it is: OUT.ckpt, and OUT
// without its .safetensors plus a suffix (vit-fashion.safetensors →
// vit-fashion.csv, vit-fashion.layers.csv, vit-fashion.steps.csv,
// vit-fashion.film). free() them.
static char *default_checkpoint(const char *out) {
    const size_t n = strlen(out);
    char *name = vit_malloc(n + sizeof ".ckpt");
    memcpy(name, out, n);
    memcpy(name + n, ".ckpt", sizeof ".ckpt");
    return name;
}
static char *out_with(const char *out, const char *suffix) {
    const char *ext = ".safetensors";
    size_t n = strlen(out), k = strlen(ext), m = strlen(suffix);
    if (n > k && strcmp(out + n - k, ext) == 0) n -= k;
    char *name = vit_malloc(n + m + 1);
    memcpy(name, out, n);
    memcpy(name + n, suffix, m + 1);
    return name;
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
        {"--warmup", CLI_INT, &f->warmup, "E", "epochs of linear warm-up from 0 (not given: "
         "the default, shortened to E − 1 epochs in a run of E that is shorter)",
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
        {"--layer-log", CLI_STRING, &f->layer_log, "FILE", "the CSV of each epoch's layer "
         "groups: each one's mean over the epoch's steps of its gradient norm (before "
         "clipping), weight norm and update ratio ‖Δθ‖/‖θ‖ (default: OUT without "
         ".safetensors, plus .layers.csv; none: not kept)", .required = false},
        {"--step-log", CLI_STRING, &f->step_log, "FILE", "the CSV of each step: epoch, step, "
         "lr, loss, batch_acc, grad_norm (before clipping) and, with a layer log, each layer "
         "group's numbers of the step (default: OUT without .safetensors, plus .steps.csv; "
         "none: not kept)", .required = false},
        {"--film", CLI_STRING, &f->film, "DIR", "a model file for epoch 0, each power of two "
         "and the last, DIR/epoch-NNN.safetensors (default: OUT without .safetensors, plus "
         ".film; none: no film)", .required = false},
        {"--watch", CLI_FLAG, &f->watch, "", "watch the run in vitview --train; it degrades "
         "to the progress line when the output is not a terminal", .required = false},
        {"--test", CLI_INT, &f->test, "0|1", "evaluate the test split at the end",
         .show_default = true, .lo = 0, .hi = 1},
        CLI_OPTION_THREADS(&f->threads),
    };
    CliSpec spec = {.command = self, .description = description, .examples = examples,
                    .options = options, .option_count = sizeof options / sizeof options[0]};
    VitStatus s = cli_parse(&spec, argc, argv, help, err);
    if (s == VIT_OK && !*help) cli_apply_threads(&spec, f->threads);
    // the default warm-up fits a short run (`--epochs 1` or 2 is a minute's try); one
    // asked for with --warmup is kept, and refused by the run when it is too long
    if (s == VIT_OK && !*help && !cli_given(&spec, "--warmup") && f->warmup >= f->epochs)
        f->warmup = f->epochs - 1;
    return s;
}

VitStatus train_command_parse(TrainCommand *c, const VitCommand *self, int argc, char **argv,
                              bool *help, VitError *err) {
    memset(c, 0, sizeof *c);
    TrainFlags f = default_flags();
    VitStatus s = parse_flags(&f, self, argc, argv, help, err);
    if (s != VIT_OK || *help) return s;
    c->watch = f.watch;
    if (!f.checkpoint) f.checkpoint = c->made[0] = default_checkpoint(f.out);
    if (!f.log) f.log = c->made[1] = out_with(f.out, ".csv");
    if (!f.layer_log) f.layer_log = c->made[2] = out_with(f.out, ".layers.csv");
    if (!f.film) f.film = c->made[3] = film_dir_for(f.out);
    if (!f.step_log) f.step_log = c->made[4] = out_with(f.out, ".steps.csv");
    join_command(c->command, sizeof c->command, argc, argv);
    c->settings = (TrainRunSettings){
        .config = read_config(&f), .arch = f.arch, .patch = f.patch, .dim = f.dim,
        .depth = f.depth, .heads = f.heads, .mlp = f.mlp, .data_dir = cli_data_dir(f.data),
        .limit = f.limit, .out = f.out, .checkpoint = f.checkpoint, .resume = f.resume,
        .log = f.log, .layer_log = strcmp(f.layer_log, "none") ? f.layer_log : NULL,
        .step_log = strcmp(f.step_log, "none") ? f.step_log : NULL,
        .film = strcmp(f.film, "none") ? f.film : NULL, .test = f.test != 0,
        .command = c->command};
    return VIT_OK;
}

void train_command_free(TrainCommand *c) {
    for (int i = 0; i < 5; i++) free(c->made[i]);
    memset(c->made, 0, sizeof c->made);
}

/* ------------------------------------------------------------ signals */

static volatile sig_atomic_t stop_requested;
static void on_stop(int sig) {
    (void)sig;
    stop_requested = 1;
}

void train_stops_catch(struct sigaction old[2]) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_stop;
    sigemptyset(&sa.sa_mask);
    stop_requested = 0;
    const int sigs[2] = {SIGINT, SIGTERM};
    for (int i = 0; i < 2; i++) {
        sigaction(sigs[i], NULL, &old[i]);
        if (old[i].sa_handler != SIG_IGN) sigaction(sigs[i], &sa, NULL);
    }
    file_writes_finish_on_stop(true); // a checkpoint being written when Ctrl-C comes is finished
}

void train_stops_release(const struct sigaction old[2]) {
    file_writes_finish_on_stop(false);
    sigaction(SIGINT, &old[0], NULL);
    sigaction(SIGTERM, &old[1], NULL);
}

bool train_stop_requested(void) {
    return stop_requested != 0;
}
