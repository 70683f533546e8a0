/*
 * vit_cli.h — what the files of the `vit` program share.
 *
 *   vit.c               main(): the table of subcommands, `vit --help`
 *   vit_cli.c           the option parser and help printer every subcommand uses,
 *                       and the checks every command makes of its files
 *   vit_make_weights.c  `vit make-weights`
 *   vit_classify.c      `vit classify`
 *   vit_trace.c         `vit trace`
 *   vit_images.c        the image flags and image loading classify and trace share
 *   vit_info.c          `vit info`
 *   vit_diff.c          `vit diff`
 *   vit_grad.c          `vit grad`, and the batch, targets and loss flags it shares
 *                       with `vit step`
 *   vit_step.c          `vit step`
 *   vit_train.c         `vit train`
 *   vit_eval.c          `vit eval`
 *   vit_attention.c     `vit attention`
 *   vit_lens.c          `vit lens`
 *   vit_heads.c         `vit heads`
 *   vit_occlusion.c     `vit occlusion`
 *   vit_score.c         `vit score`
 *   vit_fingerprints.c  `vit fingerprints`
 *   vit_positions.c     `vit positions`
 *   vit_patch.c         `vit patch`
 *
 * A subcommand declares its flags as a table of CliOption rows, each pointing
 * at one of its own variables; cli_parse() fills the variables from argv and
 * cli_print_help() writes --help from the same table, so a flag and its
 * documentation cannot drift apart.
 *
 * Functions are documented (Doxygen) where they are defined, in the .c files.
 */
#ifndef VIT_TOOLS_VIT_CLI_H
#define VIT_TOOLS_VIT_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/fileio.h"
#include "io/image.h"
#include "base/util.h"
#include "model/vit.h"

/* ------------------------------------------------------------ subcommands */

typedef struct VitCommand VitCommand;

/** One row of the subcommand table in vit.c. */
struct VitCommand {
    const char *name;    /**< what the user types, e.g. "trace" */
    /** Runs the command; argv[0] is the command's name. Returns the exit status. */
    VitStatus (*run)(const VitCommand *self, int argc, char **argv, VitError *err);
    const char *summary; /**< one line for `vit --help` */
};

VitStatus cmd_make_weights(const VitCommand *self, int argc, char **argv, VitError *err);
VitStatus cmd_trace(const VitCommand *self, int argc, char **argv, VitError *err);
VitStatus cmd_info(const VitCommand *self, int argc, char **argv, VitError *err);
VitStatus cmd_classify(const VitCommand *self, int argc, char **argv, VitError *err);
VitStatus cmd_diff(const VitCommand *self, int argc, char **argv, VitError *err);
VitStatus cmd_grad(const VitCommand *self, int argc, char **argv, VitError *err);
VitStatus cmd_step(const VitCommand *self, int argc, char **argv, VitError *err);
VitStatus cmd_train(const VitCommand *self, int argc, char **argv, VitError *err);
VitStatus cmd_eval(const VitCommand *self, int argc, char **argv, VitError *err);
VitStatus cmd_attention(const VitCommand *self, int argc, char **argv, VitError *err);
VitStatus cmd_lens(const VitCommand *self, int argc, char **argv, VitError *err);
VitStatus cmd_heads(const VitCommand *self, int argc, char **argv, VitError *err);
VitStatus cmd_occlusion(const VitCommand *self, int argc, char **argv, VitError *err);
VitStatus cmd_score(const VitCommand *self, int argc, char **argv, VitError *err);
VitStatus cmd_fingerprints(const VitCommand *self, int argc, char **argv, VitError *err);
VitStatus cmd_positions(const VitCommand *self, int argc, char **argv, VitError *err);
VitStatus cmd_patch(const VitCommand *self, int argc, char **argv, VitError *err);
VitStatus cmd_quantize(const VitCommand *self, int argc, char **argv, VitError *err);

/* ------------------------------------------------------------------ flags */

/** What kind of value a flag takes, and so what CliOption.value points to. */
typedef enum {
    CLI_STRING, /**< const char ** (borrowed from argv) */
    CLI_INT,    /**< int *, parsed with vit_parse_int within [lo, hi] */
    CLI_FLOAT,  /**< float *, parsed with vit_parse_float within [lo, hi] */
    CLI_FLAG,   /**< bool *, set to true by the flag alone (it takes no value; metavar "") */
} CliKind;

/** One flag of a subcommand. */
typedef struct {
    const char *flag;    /**< e.g. "--weights" */
    CliKind kind;        /**< the value's type */
    void *value;         /**< the variable the value goes to */
    const char *metavar; /**< its placeholder in the help, e.g. "FILE" */
    const char *help;    /**< one sentence for the help */
    bool required;       /**< must be given */
    bool show_default;   /**< the help prints the variable's initial value as the default */
    double lo;           /**< smallest value a number may take */
    double hi;           /**< largest value a number may take */
    bool given;          /**< set by cli_parse() when the flag appeared */
} CliOption;

/** `--threads N`, the same in every command that computes. */
#define CLI_OPTION_THREADS(ptr)                                                               \
    {"--threads", CLI_INT, (ptr), "N",                                                        \
     "threads for the computation; 0 = all cores (default $OMP_NUM_THREADS, else all cores); " \
     "capped at the cores and at OpenBLAS's build maximum",                                   \
     .lo = 0, .hi = 4096}

/** `--precision P`, the same in every command that runs the model forward. */
#define CLI_OPTION_PRECISION(ptr)                                                            \
    {"--precision", CLI_STRING, (ptr), "P",                                                  \
     "fp32, bf16 or int8: the number the model's Linear layers run in (chapter 15; "        \
     "default: the weights file's, int8 for one 'vit quantize' wrote, else fp32)",          \
     .required = false}

/** A subcommand's command line: its flags, and its help. */
typedef struct {
    const VitCommand *command; /**< name and one-line summary */
    const char *description;   /**< what the command does, for a learner ('\n'-terminated lines) */
    const char *examples;      /**< example command lines, one per line */
    void (*more_help)(FILE *f);/**< prints an extra section after the options, or NULL */
    CliOption *options;        /**< the flags */
    int option_count;          /**< how many */
    const char *positional;    /**< placeholder of positional arguments, or NULL for none */
    int max_positional;        /**< how many positional arguments are accepted */
    const char **positionals;  /**< filled with them (max_positional slots) */
    int positional_count;      /**< set by cli_parse() */
} CliSpec;

VitStatus cli_parse(CliSpec *spec, int argc, char **argv, bool *help_shown, VitError *err);
void cli_print_help(FILE *f, const CliSpec *spec);
bool cli_given(const CliSpec *spec, const char *flag);
void cli_apply_threads(const CliSpec *spec, int threads);
VitStatus cli_precision(LowpPrecision *p, const char *name, VitError *err);
VitStatus cli_set_precision(Vit *vit, const char *name, VitError *err);

/* ------------------------------------------------------------------ files */

/** A file a command reads, as cli_check_output() compares it with the output (fileio.h). */
typedef FileRole CliInput;

VitStatus cli_check_output(const char *out, const char *out_role, const CliInput *inputs, int n,
                           VitError *err);
VitStatus cli_check_distinct_outputs(const CliInput *outputs, int n, VitError *err);

/* ------------------------------------------------------------ Fashion-MNIST */

const char *cli_data_dir(const char *data);
void cli_name_the_folder(VitError *err, const char *dir);

/* ----------------------------------------------------------------- images */

/** Most images one command accepts (their batch is held in memory at once). */
#define MAX_IMAGES 256

/** The image flags of `vit classify`, `vit trace`, `vit grad` and `vit step` (vit_images.c). */
typedef struct {
    const char *preset; /**< --preprocess; NULL: the weights' "preprocess" metadata, else the
                             preset of the weights' convention (fashion-mnist for 1 channel) */
    const char *mean;   /**< --mean: one value, or one per channel ("R,G,B"), or NULL */
    const char *std;    /**< --std: one value, or one per channel ("R,G,B"), or NULL */
    int img_size;       /**< --img-size; 0: the size the model was trained at */
} ImageArgs;

/** The CliOption rows of ImageArgs, for a command's option table. */
#define CLI_IMAGE_OPTIONS(a)                                                                   \
    {"--preprocess", CLI_STRING, &(a)->preset, "PRESET",                                      \
     "hf, timm, torchvision or fashion-mnist: how images are resized, cropped and "         \
     "normalised (default: the one the weights' metadata names, else fashion-mnist for a "  \
     "grey model, else the one matching the weights' names)",                                 \
     .required = false},                                                                      \
    {"--mean", CLI_STRING, &(a)->mean, "MEAN",                                                \
     "replace the mean subtracted (the weights' or the preset's): one value, or one per "   \
     "channel (R,G,B)", .required = false},                                                   \
    {"--std", CLI_STRING, &(a)->std, "STD",                                                   \
     "replace the std divided by (the weights' or the preset's): one value, or one per "    \
     "channel", .required = false},                                                           \
    {"--img-size", CLI_INT, &(a)->img_size, "S",                                              \
     "run at S×S pixels, resampling the position embeddings (bicubic, as timm)", .lo = 1,    \
     .hi = 4096}

VitStatus cli_apply_image_size(Vit *vit, const ImageArgs *a, VitError *err);
VitStatus cli_preprocess(Preprocess *p, const ImageArgs *a, const Vit *vit, VitError *err);
VitStatus cli_load_images(Tensor *batch, const char *const *paths, int n, const Preprocess *p,
                          VitError *err);

/* --------------------------------------------------------------- training */

/** What `vit grad` and `vit step` learn from: the model, a batch and its targets (vit_grad.c). */
typedef struct {
    const char *weights;            /**< --weights: the model */
    const char *input;              /**< --input: safetensors holding 'input' (B, C, S, S), or */
    const char *images[MAX_IMAGES]; /**< IMAGE files, preprocessed into the batch */
    int n_images;                   /**< how many IMAGE files */
    ImageArgs image;                /**< how images are preprocessed */
    const char *targets;            /**< --target: "3" for every image, or "3,1,4" one per image */
    float smoothing;                /**< --label-smoothing ε in [0, 1] */
    int threads;                    /**< --threads */
} TrainArgs;

/** The CliOption rows of TrainArgs, for a command's option table (after its own). */
#define CLI_TRAIN_OPTIONS(a)                                                                   \
    {"--weights", CLI_STRING, &(a)->weights, "FILE",                                          \
     "the model: safetensors with timm, Hugging Face or torchvision names", .required = true}, \
    {"--input", CLI_STRING, &(a)->input, "FILE",                                              \
     "safetensors holding the images as 'input', shape (B, C, S, S), already normalised "   \
     "(instead of IMAGE)", .required = false},                                                \
    {"--target", CLI_STRING, &(a)->targets, "Y[,Y...]",                                       \
     "the class each image should be: one for every image, or one per image, in order "     \
     "(0 to Y-1)", .required = true},                                                          \
    {"--label-smoothing", CLI_FLOAT, &(a)->smoothing, "E",                                    \
     "spread E of each target's probability over all classes, as PyTorch's "                 \
     "label_smoothing", .show_default = true, .lo = 0, .hi = 1},                              \
    CLI_IMAGE_OPTIONS(&(a)->image),                                                            \
    CLI_OPTION_THREADS(&(a)->threads)

/** A run's batch and its targets, read by cli_train_batch(). */
typedef struct {
    Tensor images; /**< (B, C, S, S) normalised pixels, owned */
    int *targets;  /**< (B) the class of each image, owned */
    int batch;     /**< B */
} TrainBatch;

/** What a training command keeps besides the forward's activations, for its memory check. */
typedef struct {
    double (*bytes)(const Vit *vit, int B); /**< bytes for a batch of B, e.g. the gradients */
    const char *what;                       /**< what they are, for the message */
} TrainExtra;

VitStatus cli_train_check_args(const TrainArgs *a, const char *command, VitError *err);
VitStatus cli_train_batch(TrainBatch *tb, const TrainArgs *a, const Vit *vit,
                          const TrainExtra *extra, VitError *err);
void cli_train_batch_free(TrainBatch *tb);
VitStatus cli_train_open(Vit *vit, TrainBatch *tb, const TrainArgs *a, const char *out,
                         const TrainExtra *extra, VitError *err);
int cli_train_inputs(CliInput *in, const TrainArgs *a, const Vit *vit);
double cli_train_bytes(const Vit *vit, int B);
char *cli_train_targets_text(char *buf, size_t size, const TrainBatch *tb);

/** The exit statuses, as every help page states them. */
#define CLI_EXIT_HELP                                                                          \
    "exit status:\n"                                                                           \
    "  0  success\n"                                                                           \
    "  1  bad input: a file that cannot be read or written, a tensor of the wrong\n"         \
    "     shape, a configuration that cannot be built (e.g. D not divisible by H)\n"          \
    "  2  bad usage: an unknown command or flag, a missing flag or value, a value\n"          \
    "     that is not a number in the accepted range (e.g. --threads abc, --dim 0)\n"          \
    "  128+N  killed by signal N (Ctrl-C: 130)\n\n"                                           \
    "An output file is written to a temporary file beside it and renamed into place\n"     \
    "when complete: a failure or a signal leaves the old file as it was. An output\n"       \
    "that is one of the inputs, or not a regular file (/dev/null, a FIFO), is refused,\n" \
    "and so are two outputs that are one file.\n"

#endif
