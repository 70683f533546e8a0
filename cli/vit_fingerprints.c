/**
 * @file vit_fingerprints.c
 * @brief `vit fingerprints`: what kind of head is each? Its distance, entropy
 *        and share on [cls] for one picture.
 *
 * The recipe: parse the flags → vit_build() the model → preprocess the image
 * (as `vit classify`) → one forward pass, recording only each layer's
 * `blocks.{l}.attn.probs` → head_fingerprints_from_trace() → print a row per
 * (layer, head), in layer order or sorted by one column (--sort).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explain/head_fingerprints.h"
#include "vit_cli.h"

/** Everything the command line can say. */
typedef struct {
    const char *weights; // the model
    const char *sort;    // --sort: a column's name, or NULL for layer order
    int threads;
    ImageArgs image;
    const char *images[1];
} FingerprintsArgs;

static const char description[] =
    "Prints, for IMAGE, three numbers per attention head of the model in --weights,\n"
    "each averaged over the patch queries ([cls] has no place on the grid):\n"
    "\n"
    "  distance  the mean attention distance, in patch sides: how far on the grid\n"
    "            a patch looks, its weights on the patches summing to 1 (the ViT\n"
    "            paper's figure 7); small for a local head\n"
    "  entropy   of a query's weights over all N tokens, in nats: 0 for a head\n"
    "            that looks at one token, ln N for one that looks at all alike\n"
    "  cls       the weight on the [cls] token\n"
    "\n"
    "One row per layer and head, in layer order, or from the largest to the\n"
    "smallest of one column with --sort. One forward pass; only each layer's\n"
    "attention probabilities are kept. Images are preprocessed as `vit classify`\n"
    "does. Layers and heads count from 0, as the viewer's blocks and heads do.\n";

static const char examples[] =
    "  vit fingerprints --weights data/models/vit-fashion.safetensors \\\n"
    "                   data/images/fashion-mnist/0000-ankle-boot.png\n"
    "  vit fingerprints --weights data/models/vit-fashion.safetensors --sort cls shirt.png\n";

/* ----------------------------------------------------------------- the pass */

// A TraceFn that records only the attention probabilities: (B, H, N, N) per layer, not every stage.
static void record_probs(void *recorder, const char *name, const Tensor *t) {
    const char *tail = ".attn.probs";
    const size_t n = strlen(name), m = strlen(tail);
    if (n > m && strcmp(name + n - m, tail) == 0) trace_record(recorder, name, t);
}

/* ----------------------------------------------------------------- output */

// The table (L·H rows of 3), in layer order (column < 0) or sorted by a column.
static void print_table(const float *table, int L, int H, int column) {
    int *order = vit_malloc(sizeof(int) * (size_t)L * H);
    head_fingerprints_order(order, table, L * H, column);
    printf("  %-5s  %-4s  %8s  %8s  %8s\n", "layer", "head", "distance", "entropy", "cls");
    for (int i = 0; i < L * H; i++) {
        const float *f = table + (size_t)order[i] * HEAD_FINGERPRINT_COLUMNS;
        printf("  %-5d  %-4d  %8.4f  %8.4f  %8.4f\n", order[i] / H, order[i] % H,
               (double)f[HEAD_FINGERPRINT_DISTANCE], (double)f[HEAD_FINGERPRINT_ENTROPY],
               (double)f[HEAD_FINGERPRINT_CLS]);
    }
    free(order);
}

/* ---------------------------------------------------------------- command */

static VitStatus fingerprints(const FingerprintsArgs *a, int column, VitError *err) {
    // 1. the model, the preprocessing, the picture
    Vit vit;
    VitStatus s = vit_build(&vit, a->weights, err);
    if (s != VIT_OK) return s;
    Preprocess pre;
    Tensor input = {0}, table = {0};
    TraceRecorder probs = {0};
    if ((s = cli_apply_image_size(&vit, &a->image, err)) == VIT_OK &&
        (s = cli_preprocess(&pre, &a->image, &vit, err)) == VIT_OK)
        s = cli_load_images(&input, a->images, 1, &pre, err);
    // 2. one pass, the attention probabilities kept; numbers, not NaN; the table
    if (s == VIT_OK) s = vit_forward(&vit, &input, record_probs, &probs, err);
    if (s == VIT_OK) s = vit_check_finite(&vit, &input, err);
    if (s == VIT_OK) s = head_fingerprints_from_trace(&table, &vit.config, &probs, err);
    // 3. print it
    if (s == VIT_OK) {
        const VitConfig *c = &vit.config;
        const int side = c->image_size / c->patch_size, N = vit_num_tokens(c);
        char safe[1024];
        printf("%s  (%s preprocessing, %d×%d)\n", vit_escape(safe, sizeof safe, a->images[0]),
               pre.name, c->image_size, c->image_size);
        printf("  distance in patch sides on the %d×%d grid; entropy in nats (ln %d = %.4f: "
               "uniform); cls: the weight on [cls]\n", side, side, N, log((double)N));
        print_table(table.data, c->depth, c->heads, column);
    }
    tensor_free(&table);
    trace_recorder_free(&probs);
    tensor_free(&input);
    vit_free(&vit);
    return s;
}

// --sort NAME → the column, or −1 (layer order); NAME must be a column's name.
static VitStatus sort_column_of(int *column, const char *name, VitError *err) {
    *column = -1;
    if (!name) return VIT_OK;
    for (int k = 0; k < HEAD_FINGERPRINT_COLUMNS; k++)
        if (strcmp(name, head_fingerprint_name(k)) == 0) return *column = k, VIT_OK;
    char safe[64];
    return vit_fail(err, VIT_ERR_USAGE, "--sort %s: sorts by distance, entropy or cls",
                    vit_escape(safe, sizeof safe, name));
}

/**
 * @brief `vit fingerprints`: parse → build → load the image → one pass → the table.
 * @param[in] self        this command's row of the command table
 * @param[in] argc, argv  its command line, argv[0] = "fingerprints"
 * @param[out] err        the message on failure
 * @return the exit status: VIT_OK, VIT_ERR_INPUT or VIT_ERR_USAGE
 */
VitStatus cmd_fingerprints(const VitCommand *self, int argc, char **argv, VitError *err) {
    FingerprintsArgs a = {0};
    CliOption options[] = {
        {"--weights", CLI_STRING, &a.weights, "FILE",
         "the model: safetensors with timm, Hugging Face or torchvision names", .required = true},
        {"--sort", CLI_STRING, &a.sort, "COLUMN",
         "distance, entropy or cls: rows from the largest down (default: layer order)",
         .required = false},
        CLI_IMAGE_OPTIONS(&a.image),
        CLI_OPTION_THREADS(&a.threads),
    };
    CliSpec spec = {.command = self, .description = description, .examples = examples,
                    .options = options, .option_count = sizeof options / sizeof options[0],
                    .positional = "IMAGE", .max_positional = 1, .positionals = a.images};
    bool help;
    VitStatus s = cli_parse(&spec, argc, argv, &help, err);
    if (s != VIT_OK || help) return s;
    if (spec.positional_count == 0)
        return vit_fail(err, VIT_ERR_USAGE,
                        "'vit fingerprints' needs an IMAGE (see 'vit fingerprints --help')");
    int column;
    if ((s = sort_column_of(&column, a.sort, err)) != VIT_OK) return s;
    cli_apply_threads(&spec, a.threads);
    return fingerprints(&a, column, err);
}
