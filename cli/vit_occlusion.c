/**
 * @file vit_occlusion.c
 * @brief `vit occlusion`: what the answer rests on, asked of the model itself
 *        (each patch blacked out in turn), beside the attention maps, with
 *        each map's deletion test.
 *
 * The recipe: parse the flags → vit_build() the model → preprocess the image
 * and find the class names (as `vit classify`) → occlusion_compare(): the
 * occlusion map (one forward pass per patch), the last layer's [cls]
 * attention, the rollout and the gradient-weighted rollout, and for each map
 * the predicted class's probability with its top k patches black → print the
 * grid of falls, then a row of deletion probabilities per map.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explain/occlusion.h"
#include "io/labels.h"
#include "vit_cli.h"

/** Everything the command line can say. */
typedef struct {
    const char *weights; // the model
    const char *labels;  // class names, one per line (optional)
    int threads;
    ImageArgs image;
    const char *images[1];
} OcclusionArgs;

static const char description[] =
    "Asks the model what its answer for IMAGE rests on: each patch is blacked\n"
    "out in turn (one forward pass per patch) and the probability of the\n"
    "predicted class is read again. The grid shows how far it fell, patch by\n"
    "patch (negative: the class grew surer without the patch); a patch black\n"
    "already falls by 0. This is occlusion, Captum's Occlusion with a window and\n"
    "stride of one patch and black as the baseline.\n"
    "\n"
    "Then the deletion test of four maps: occlusion itself, the last layer's\n"
    "[cls] attention (heads averaged), the rollout (heads averaged) and the\n"
    "gradient-weighted rollout. For each, the predicted class's probability with\n"
    "the map's top k patches black, for k = 1, 5 and 10: the lower, the more the\n"
    "answer rested on what the map shows. Chapter 12 measures the same over\n"
    "many pictures ('vit eval --attention --occlusion').\n"
    "Images are preprocessed and classes named as `vit classify` does.\n";

static const char examples[] =
    "  vit occlusion --weights data/models/vit-fashion.safetensors \\\n"
    "                data/images/fashion-mnist/0004-shirt.png\n";

/* ----------------------------------------------------------------- output */

// A class's name, escaped for the terminal, or "class K".
static const char *class_name(char *buf, size_t size, const Labels *labels, int k) {
    const char *name = labels_name(labels, k);
    if (name && name[0]) return vit_escape(buf, size, name);
    snprintf(buf, size, "class %d", k);
    return buf;
}

static void print_comparison(const OcclusionComparison *c, const Labels *labels) {
    char name[256];
    class_name(name, sizeof name, labels, c->cls);
    printf("%s, p = %.4f with nothing black.\n\n", name, c->full);
    printf("How far p(%s) falls with each patch alone black (%d×%d patches, row by row):\n",
           name, c->side, c->side);
    for (int q = 0; q < c->P; q++) // row 0 of the maps: occlusion
        printf("%8.4f%s", (double)c->maps.data[q], q % c->side == c->side - 1 ? "\n" : "");
    printf("\np(%s) with each map's top k patches black (lower: the answer rests more\n"
           "on what the map shows):\n  %-24s", name, "map");
    for (int k = 0; k < MEASURE_KS; k++) {
        char head[16];
        snprintf(head, sizeof head, "k = %d", rollout_measure_ks[k]);
        printf("  %8s", head);
    }
    printf("\n");
    for (int m = 0; m < OCCLUSION_MAPS; m++) {
        printf("  %-24s", rollout_map_method_name(occlusion_compared[m]));
        for (int k = 0; k < MEASURE_KS; k++) printf("  %8.4f", c->deletion[m][k]);
        printf("\n");
    }
}

/* ---------------------------------------------------------------- command */

static VitStatus occlusion(const OcclusionArgs *a, VitError *err) {
    // 1. the model, the preprocessing, the class names, the picture
    Vit vit;
    VitStatus s = vit_build(&vit, a->weights, err);
    if (s != VIT_OK) return s;
    Preprocess pre;
    Labels labels = {0};
    Tensor input = {0};
    OcclusionComparison c = {0};
    if ((s = cli_apply_image_size(&vit, &a->image, err)) == VIT_OK &&
        (s = cli_preprocess(&pre, &a->image, &vit, err)) == VIT_OK &&
        (s = labels_for_weights(&labels, a->labels, vit.config_json, &vit.file,
                                vit.config.num_classes, err)) == VIT_OK)
        s = cli_load_images(&input, a->images, 1, &pre, err);
    // 2. numbers, not NaN; then every map and its deletion test, black as the preprocessing has it
    if (s == VIT_OK) s = vit_forward(&vit, &input, NULL, NULL, err);
    if (s == VIT_OK) s = vit_check_finite(&vit, &input, err);
    float black[IMAGE_MAX_CHANNELS];
    occlusion_black(black, pre.mean, pre.std, vit.config.channels);
    if (s == VIT_OK) s = occlusion_compare(&c, &vit, &input, black, err);
    // 3. the grid and the table
    if (s == VIT_OK) {
        char safe[1024];
        printf("%s  (%s preprocessing, %d×%d)\n", vit_escape(safe, sizeof safe, a->images[0]),
               pre.name, vit.config.image_size, vit.config.image_size);
        print_comparison(&c, &labels);
    }
    occlusion_comparison_free(&c);
    tensor_free(&input);
    labels_free(&labels);
    vit_free(&vit);
    return s;
}

/**
 * @brief `vit occlusion`: parse → build → load the image → occlusion and each map's
 *        deletion test → print.
 * @param[in] self        this command's row of the command table
 * @param[in] argc, argv  its command line, argv[0] = "occlusion"
 * @param[out] err        the message on failure
 * @return the exit status: VIT_OK, VIT_ERR_INPUT or VIT_ERR_USAGE
 */
VitStatus cmd_occlusion(const VitCommand *self, int argc, char **argv, VitError *err) {
    OcclusionArgs a = {0};
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
        return vit_fail(err, VIT_ERR_USAGE,
                        "'vit occlusion' needs an IMAGE (see 'vit occlusion --help')");
    cli_apply_threads(&spec, a.threads);
    return occlusion(&a, err);
}
