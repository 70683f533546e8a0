/**
 * @file vit_patch.c
 * @brief `vit patch`: where does B's information, put into A's pass, change A's answer?
 *
 * The recipe: parse the flags → vit_build() the model → the preprocessing and
 * the class names, as `vit classify` finds them → decode and preprocess A and
 * B → patching_grid(): both passes, then A's pass again from every block's
 * output with one token's row B's → print, per block, the tokens whose patch
 * flips A's answer and the largest change of A's class probability; with
 * --grid, the whole (L, T) grid too.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explain/patching.h"
#include "io/labels.h"
#include "vit_cli.h"

/** Everything the command line can say. */
typedef struct {
    const char *weights; // the model
    const char *labels;  // class names, one per line (optional)
    int cls;             // --class: the class measured (default: A's predicted one)
    bool grid;           // --grid: print every cell as well
    int threads;
    ImageArgs image;
    const char *images[2]; // A, B
} PatchArgs;

static const char description[] =
    "Activation patching: runs picture A and picture B through the model in\n"
    "--weights, then runs A again from the output of each block with one token's\n"
    "row of the residual stream taken from B's pass instead (blocks.l.out, row t),\n"
    "the rest of the model (the later blocks, the final LayerNorm, the head)\n"
    "running on from there. The measure is the probability of A's class.\n"
    "\n"
    "Over every block l and token t that is an L × T grid (T tokens: 0 is [cls],\n"
    "then the patches in reading order): where B's information, put into A,\n"
    "changes A's answer. A cell flips when the patched pass's top class is no\n"
    "longer A's. Per block it prints the tokens that flip and the token whose\n"
    "patch changes the probability the most; --grid prints every cell.\n"
    "Patching every token of a block would give B's answer, trivially: one token\n"
    "at a time says which token carries what. That is 2 + L·T part-passes.\n"
    "\n"
    "Images are preprocessed and classes named as in `vit classify` (see its help).\n"
    "Blocks count from 0, as the viewer's do.\n";

static const char examples[] =
    "  vit patch --weights data/models/vit-fashion.safetensors \\\n"
    "            data/images/fashion-mnist/0000-ankle-boot.png \\\n"
    "            data/images/fashion-mnist/0009-sneaker.png\n";

/* ----------------------------------------------------------------- output */

// A class's name, escaped for the terminal, or "class K".
static const char *class_name(char *buf, size_t size, const Labels *labels, int k) {
    const char *name = labels_name(labels, k);
    if (name && name[0]) return vit_escape(buf, size, name);
    snprintf(buf, size, "class %d", k);
    return buf;
}

// Token t as a reader finds it: "[cls]" or "r,c" on the side × side patch grid.
static const char *token_name(char *buf, size_t size, int t, int side) {
    if (t == 0) snprintf(buf, size, "[cls]");
    else snprintf(buf, size, "%d,%d", (t - 1) / side, (t - 1) % side);
    return buf;
}

// Block l's flips, "-" when none, as "0 [cls], 23 (3,1)"
static void print_flips(const Patching *pt, int l, int side) {
    int shown = 0;
    for (int t = 0; t < pt->tokens; t++) {
        if (pt->top[(size_t)l * pt->tokens + t] == pt->a_class) continue;
        char tok[32];
        printf("%s%d (%s)", shown++ ? ", " : "", t, token_name(tok, sizeof tok, t, side));
    }
    if (!shown) printf("-");
    printf("\n");
}

static void print_summary(const Patching *pt, int side) {
    printf("  %-5s  %-16s  %-9s  %8s  %s\n", "block", "largest change", "p", "change",
           "flips (token, row,col)");
    for (int l = 0; l < pt->layers; l++) {
        int t;
        patching_layer_summary(pt, l, &t);
        const double p = pt->prob[(size_t)l * pt->tokens + t];
        char tok[32], where[48];
        snprintf(where, sizeof where, "token %d (%s)", t, token_name(tok, sizeof tok, t, side));
        printf("  %-5d  %-16s  %-9.4f  %+8.4f  ", l, where, p, p - pt->a_prob);
        print_flips(pt, l, side);
    }
}

// Every cell: per block, [cls] then the patches as the side × side grid.
static void print_grid(const Patching *pt, int side) {
    for (int l = 0; l < pt->layers; l++) {
        const float *row = pt->prob + (size_t)l * pt->tokens;
        printf("block %d  [cls] %.4f\n", l, (double)row[0]);
        for (int t = 1; t < pt->tokens; t++)
            printf("%s%.4f%s", (t - 1) % side ? " " : "  ", (double)row[t],
                   (t - 1) % side == side - 1 ? "\n" : "");
    }
}

static void print_patching(const Patching *pt, const PatchArgs *a, const Labels *labels,
                           int side, bool grid) {
    char name[256], b_name[256], safe[1024];
    class_name(name, sizeof name, labels, pt->a_class);
    printf("A %s: %s, p = %.4f\n", vit_escape(safe, sizeof safe, a->images[0]), name, pt->a_prob);
    printf("B %s: %s; p(%s) = %.4f\n", vit_escape(safe, sizeof safe, a->images[1]),
           class_name(b_name, sizeof b_name, labels, pt->b_class), name, pt->b_prob);
    printf("p(%s) in A with one token of B's blocks.l.out put in:\n", name);
    print_summary(pt, side);
    if (grid) print_grid(pt, side);
}

/* ---------------------------------------------------------------- command */

// The model → A and B → every (block, token) patched → the summary. It writes no file.
static VitStatus patch(const PatchArgs *a, bool chosen, VitError *err) {
    Vit vit;
    VitStatus s = vit_build(&vit, a->weights, err);
    if (s != VIT_OK) return s;
    Preprocess pre;
    Labels labels = {0};
    Tensor pa = {0}, pb = {0};
    Patching pt = {0};
    const int Y = vit.config.num_classes;
    if (chosen && a->cls >= Y)
        s = vit_fail(err, VIT_ERR_USAGE, "--class %d: the model in %s has classes 0 to %d",
                     a->cls, vit.file.label ? vit.file.label : a->weights, Y - 1);
    if (s == VIT_OK && (s = cli_apply_image_size(&vit, &a->image, err)) == VIT_OK &&
        (s = cli_preprocess(&pre, &a->image, &vit, err)) == VIT_OK &&
        (s = labels_for_weights(&labels, a->labels, vit.config_json, &vit.file, Y, err)) == VIT_OK &&
        (s = cli_load_images(&pa, &a->images[0], 1, &pre, err)) == VIT_OK)
        s = cli_load_images(&pb, &a->images[1], 1, &pre, err);
    // numbers, not NaN, in both unpatched passes
    if (s == VIT_OK && (s = vit_forward(&vit, &pa, NULL, NULL, err)) == VIT_OK)
        s = vit_check_finite(&vit, &pa, err);
    if (s == VIT_OK && (s = vit_forward(&vit, &pb, NULL, NULL, err)) == VIT_OK)
        s = vit_check_finite(&vit, &pb, err);
    if (s == VIT_OK) s = patching_grid(&pt, &vit, &pa, &pb, chosen ? a->cls : -1, err);
    if (s == VIT_OK)
        print_patching(&pt, a, &labels, vit.config.image_size / vit.config.patch_size, a->grid);
    patching_free(&pt);
    tensor_free(&pb);
    tensor_free(&pa);
    labels_free(&labels);
    vit_free(&vit);
    return s;
}

/**
 * @brief `vit patch`: parse → build → load A and B → every (block, token) patched → print.
 * @param[in] self        this command's row of the command table
 * @param[in] argc, argv  its command line, argv[0] = "patch"
 * @param[out] err        the message on failure
 * @return the exit status: VIT_OK, VIT_ERR_INPUT or VIT_ERR_USAGE
 */
VitStatus cmd_patch(const VitCommand *self, int argc, char **argv, VitError *err) {
    PatchArgs a = {0};
    CliOption options[] = {
        {"--weights", CLI_STRING, &a.weights, "FILE",
         "the model: safetensors with timm, Hugging Face or torchvision names", .required = true},
        {"--class", CLI_INT, &a.cls, "C",
         "measure class C (default: the class the model predicts for A)", .lo = 0,
         .hi = 1000000, .required = false},
        {"--grid", CLI_FLAG, &a.grid, "", "print every cell of the grid too", .required = false},
        {"--labels", CLI_STRING, &a.labels, "FILE", "class names, one per line, in class order",
         .required = false},
        CLI_IMAGE_OPTIONS(&a.image),
        CLI_OPTION_THREADS(&a.threads),
    };
    CliSpec spec = {.command = self, .description = description, .examples = examples,
                    .options = options, .option_count = sizeof options / sizeof options[0],
                    .positional = "A_IMAGE B_IMAGE", .max_positional = 2, .positionals = a.images};
    bool help;
    VitStatus s = cli_parse(&spec, argc, argv, &help, err);
    if (s != VIT_OK || help) return s;
    if (spec.positional_count != 2)
        return vit_fail(err, VIT_ERR_USAGE,
                        "'vit patch' needs two pictures, A_IMAGE and B_IMAGE (see 'vit patch --help')");
    cli_apply_threads(&spec, a.threads);
    return patch(&a, cli_given(&spec, "--class"), err);
}
