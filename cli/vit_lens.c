/**
 * @file vit_lens.c
 * @brief `vit lens`: when does the model know? Its answer read after every block.
 *
 * The recipe: parse the flags → vit_build() the model → preprocess the image
 * and find the class names (as `vit classify`) → one forward pass that reads
 * the logit lens as it goes (logit_lens_run(): the [cls] row of `embed` and
 * of each `blocks.{i}.out` through the final LayerNorm and head) → print a
 * row per depth: the top class, its probability, and the probability of the
 * model's final answer; then the depth from which that answer stays on top.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explain/logit_lens.h"
#include "io/labels.h"
#include "train/train.h" // ops_index_of_max()
#include "vit_cli.h"

/** Everything the command line can say. */
typedef struct {
    const char *weights; // the model
    const char *labels;  // class names, one per line (optional)
    int threads;
    ImageArgs image;
    const char *images[1];
} LensArgs;

static const char description[] =
    "Reads the model's answer for IMAGE after every block, not only at the end:\n"
    "the [cls] row of the residual stream after d blocks (d = 0: the embedding)\n"
    "goes through the model's own final LayerNorm and head, and a softmax gives\n"
    "class probabilities (the \"logit lens\"). At the last block they are the\n"
    "model's output, the probabilities `vit classify` prints.\n"
    "\n"
    "It prints one row per depth: the block whose output is read (embed before\n"
    "the first), the class on top there and its probability, and the probability\n"
    "of the model's final answer; then the block from which that answer stays on\n"
    "top. The head was trained on the last block's output only, so an early\n"
    "block's row says what that head reads there, not what the model believes.\n"
    "Images are preprocessed and classes named as `vit classify` does.\n";

static const char examples[] =
    "  vit lens --weights data/models/vit-fashion.safetensors \\\n"
    "           data/images/fashion-mnist/0000-ankle-boot.png\n";

/* ----------------------------------------------------------------- output */

// A class's name, escaped for the terminal, or "class K".
static const char *class_name(char *buf, size_t size, const Labels *labels, int k) {
    const char *name = labels_name(labels, k);
    if (name && name[0]) return vit_escape(buf, size, name);
    snprintf(buf, size, "class %d", k);
    return buf;
}

static void print_lens(const float *probs, int depths, int Y, const Labels *labels) {
    // probs is (depths, Y), depth 0 the embedding
    const int answer = ops_index_of_max(probs + (size_t)(depths - 1) * Y, Y);
    char name[256], top_name[256];
    class_name(name, sizeof name, labels, answer);
    printf("  %-6s  %-24s  %6s  p(%s)\n", "block", "top class", "p", name);
    for (int d = 0; d < depths; d++) {
        const float *p = probs + (size_t)d * Y;
        const int top = ops_index_of_max(p, Y);
        char block[16];
        if (d == 0) snprintf(block, sizeof block, "embed");
        else snprintf(block, sizeof block, "%d", d - 1);
        printf("  %-6s  %-24s  %6.4f  %6.4f\n", block,
               class_name(top_name, sizeof top_name, labels, top), (double)p[top],
               (double)p[answer]);
    }
    const int from = logit_lens_settles(probs, depths, Y);
    if (from == 0) printf("%s is on top at every depth, from the embedding on.\n", name);
    else printf("%s is on top from block %d on.\n", name, from - 1);
}

/* ---------------------------------------------------------------- command */

static VitStatus lens(const LensArgs *a, VitError *err) {
    // 1. the model, the preprocessing, the class names, the picture
    Vit vit;
    VitStatus s = vit_build(&vit, a->weights, err);
    if (s != VIT_OK) return s;
    Preprocess pre;
    Labels labels = {0};
    Tensor input = {0}, probs = {0};
    if ((s = cli_apply_image_size(&vit, &a->image, err)) == VIT_OK &&
        (s = cli_preprocess(&pre, &a->image, &vit, err)) == VIT_OK &&
        (s = labels_for_weights(&labels, a->labels, vit.config_json, &vit.file,
                                vit.config.num_classes, err)) == VIT_OK)
        s = cli_load_images(&input, a->images, 1, &pre, err);
    // 2. one pass, the lens read at every depth; numbers, not NaN
    if (s == VIT_OK) s = logit_lens_run(&probs, &vit, &input, err);
    if (s == VIT_OK) s = vit_check_finite(&vit, &input, err);
    // 3. the table
    if (s == VIT_OK) {
        char safe[1024];
        printf("%s  (%s preprocessing, %d×%d)\n", vit_escape(safe, sizeof safe, a->images[0]),
               pre.name, vit.config.image_size, vit.config.image_size);
        print_lens(probs.data, probs.shape[1], probs.shape[2], &labels);
    }
    tensor_free(&probs);
    tensor_free(&input);
    labels_free(&labels);
    vit_free(&vit);
    return s;
}

/**
 * @brief `vit lens`: parse → build → load the image → the lens at every depth → print.
 * @param[in] self        this command's row of the command table
 * @param[in] argc, argv  its command line, argv[0] = "lens"
 * @param[out] err        the message on failure
 * @return the exit status: VIT_OK, VIT_ERR_INPUT or VIT_ERR_USAGE
 */
VitStatus cmd_lens(const VitCommand *self, int argc, char **argv, VitError *err) {
    LensArgs a = {0};
    CliOption options[] = {
        {"--weights", CLI_STRING, &a.weights, "FILE",
         "the model: safetensors with timm, Hugging Face or torchvision names", .required = true},
        {"--labels", CLI_STRING, &a.labels, "FILE", "class names, one per line, in class order",
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
        return vit_fail(err, VIT_ERR_USAGE, "'vit lens' needs an IMAGE (see 'vit lens --help')");
    cli_apply_threads(&spec, a.threads);
    return lens(&a, err);
}
