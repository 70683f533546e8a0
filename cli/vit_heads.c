/**
 * @file vit_heads.c
 * @brief `vit heads`: which attention heads does the prediction need?
 *
 * The recipe: parse the flags → vit_build() the model (at --img-size if asked)
 * → the preprocessing and the class names, as `vit classify` finds them →
 * decode and preprocess every image into one batch → head_importance(): the
 * full model once, then each (layer, head) switched off in turn, and each
 * layer's heads at once → print, per image, the L × H grid of the change in
 * the class's probability, and the head whose loss costs it the most.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explain/head_importance.h"
#include "io/labels.h"
#include "vit_cli.h"

/** Everything the command line can say. */
typedef struct {
    const char *weights; // the model
    const char *labels;  // class names, one per line (optional)
    int cls;             // --class: the class measured (default: each image's predicted one)
    int threads;
    ImageArgs image;
    const char *images[MAX_IMAGES];
} HeadsArgs;

static const char description[] =
    "Switches every attention head of the model in --weights off in turn (its\n"
    "attention probabilities multiplied by 0 after the softmax, as Hugging Face's\n"
    "head_mask does) and prints, for each IMAGE, how much the probability of the\n"
    "class changes without it: an L × H grid, a row per layer and a column per\n"
    "head, then a column with all of that layer's heads off at once.\n"
    "\n"
    "Each number is p(class, that head off) − p(class, every head on): negative\n"
    "where the class needed the head, near 0 where the model does as well without\n"
    "it. The class is the one the full model predicts for the image, or --class.\n"
    "The most important head is the one whose loss lowers the probability the\n"
    "most. That is L·H + L + 1 forward passes of the batch: a moment for the\n"
    "shipped Fashion-MNIST model, minutes for ViT-B/16.\n"
    "\n"
    "Images are preprocessed and classes named as in `vit classify` (see its help).\n"
    "Layers and heads count from 0, as the viewer's blocks and heads do.\n";

static const char examples[] =
    "  vit heads --weights data/models/vit-fashion.safetensors \\\n"
    "            data/images/fashion-mnist/0000-ankle-boot.png\n"
    "  vit heads --weights data/models/vit-fashion.safetensors --class 7 shirt.png\n";

/* ----------------------------------------------------------------- output */

// The class's name, escaped for the terminal, or "class N".
static const char *class_name(char *buf, size_t size, const Labels *labels, int c) {
    const char *name = labels_name(labels, c);
    if (name && name[0]) return vit_escape(buf, size, name);
    snprintf(buf, size, "class %d", c);
    return buf;
}

// One image's grid: a row per layer, its heads, then its heads all off.
static void print_grid(const HeadImportance *hi, int b) {
    const int L = hi->layers, H = hi->heads;
    printf("           ");
    for (int h = 0; h < H; h++) {
        char label[16];
        snprintf(label, sizeof label, "head %d", h);
        printf(" %8s", label);
    }
    printf("  all heads\n");
    for (int l = 0; l < L; l++) {
        printf("  layer %-3d", l);
        for (int h = 0; h < H; h++)
            printf(" %+8.4f", (double)hi->delta[((size_t)b * L + l) * H + h]);
        printf("  %+9.4f\n", (double)hi->layer_delta[(size_t)b * L + l]);
    }
}

static void print_image(const HeadImportance *hi, int b, const char *path, const Labels *labels,
                        const Preprocess *pre, int S, bool chosen) {
    char safe[1024], name[256]; // paths and names come from the user's files: escaped
    const int c = hi->classes[b];
    const double full = hi->full[b];
    class_name(name, sizeof name, labels, c);
    printf("%s  (%s preprocessing, %d×%d)\n", vit_escape(safe, sizeof safe, path), pre->name, S, S);
    printf("  %s (class %d): probability %.4f with every head on%s\n", name, c, full,
           chosen ? " (--class)" : ", the prediction");
    printf("  change in the probability of %s with the head off (layer ↓, head →):\n", name);
    print_grid(hi, b);
    int layer, head;
    head_importance_most(hi, b, &layer, &head);
    const double delta = hi->delta[((size_t)b * hi->layers + layer) * hi->heads + head];
    printf("  most important: layer %d, head %d: %.4f → %.4f (%+.4f)\n", layer, head, full,
           full + delta, delta);
}

/* ---------------------------------------------------------------- command */

// The model → the batch → every head off in turn → each image's grid. It writes no file.
static VitStatus heads(const HeadsArgs *a, bool chosen, int n_images, VitError *err) {
    // 1. the model, at the input size asked for, its preprocessing and class names
    Vit vit;
    VitStatus s = vit_build(&vit, a->weights, err);
    if (s != VIT_OK) return s;
    Preprocess pre;
    Labels labels = {0};
    Tensor batch = {0};
    HeadImportance hi = {0};
    const int Y = vit.config.num_classes;
    if (chosen && a->cls >= Y)
        s = vit_fail(err, VIT_ERR_USAGE, "--class %d: the model in %s has classes 0 to %d",
                     a->cls, vit.file.label ? vit.file.label : a->weights, Y - 1);
    if (s == VIT_OK && (s = cli_apply_image_size(&vit, &a->image, err)) == VIT_OK &&
        (s = cli_preprocess(&pre, &a->image, &vit, err)) == VIT_OK &&
        (s = labels_for_weights(&labels, a->labels, vit.config_json, &vit.file, Y, err)) == VIT_OK &&
        // 2. room for the batch, then every image decoded and preprocessed into it
        (s = vit_check_batch(&vit.config, n_images, 0, NULL, err)) == VIT_OK)
        s = cli_load_images(&batch, a->images, n_images, &pre, err);
    // 3. numbers, not NaN, in the full model; then every head off in turn
    if (s == VIT_OK && (s = vit_forward(&vit, &batch, NULL, NULL, err)) == VIT_OK)
        s = vit_check_finite(&vit, &batch, err);
    int *classes = NULL;
    if (s == VIT_OK && chosen) {
        classes = vit_malloc(sizeof(int) * (size_t)n_images);
        for (int i = 0; i < n_images; i++) classes[i] = a->cls;
    }
    if (s == VIT_OK) s = head_importance(&hi, &vit, &batch, classes, err);
    // 4. each image's grid
    for (int i = 0; s == VIT_OK && i < n_images; i++) {
        if (i) printf("\n");
        print_image(&hi, i, a->images[i], &labels, &pre, vit.config.image_size, chosen);
    }
    free(classes);
    head_importance_free(&hi);
    tensor_free(&batch);
    labels_free(&labels);
    vit_free(&vit);
    return s;
}

/**
 * @brief `vit heads`: parse → build → load the images → every head off in turn → print.
 * @param[in] self        this command's row of the command table
 * @param[in] argc, argv  its command line, argv[0] = "heads"
 * @param[out] err        the message on failure
 * @return the exit status: VIT_OK, VIT_ERR_INPUT or VIT_ERR_USAGE
 */
VitStatus cmd_heads(const VitCommand *self, int argc, char **argv, VitError *err) {
    HeadsArgs a = {0};
    CliOption options[] = {
        {"--weights", CLI_STRING, &a.weights, "FILE",
         "the model: safetensors with timm, Hugging Face or torchvision names", .required = true},
        {"--class", CLI_INT, &a.cls, "C",
         "measure class C in every image (default: the class the model predicts for each)",
         .lo = 0, .hi = 1000000, .required = false},
        {"--labels", CLI_STRING, &a.labels, "FILE", "class names, one per line, in class order",
         .required = false},
        CLI_IMAGE_OPTIONS(&a.image),
        CLI_OPTION_THREADS(&a.threads),
    };
    CliSpec spec = {.command = self, .description = description, .examples = examples,
                    .options = options, .option_count = sizeof options / sizeof options[0],
                    .positional = "IMAGE...", .max_positional = MAX_IMAGES, .positionals = a.images};
    bool help;
    VitStatus s = cli_parse(&spec, argc, argv, &help, err);
    if (s != VIT_OK || help) return s;
    if (spec.positional_count == 0)
        return vit_fail(err, VIT_ERR_USAGE,
                        "'vit heads' needs at least one IMAGE (see 'vit heads --help')");
    cli_apply_threads(&spec, a.threads);
    return heads(&a, cli_given(&spec, "--class"), spec.positional_count, err);
}
