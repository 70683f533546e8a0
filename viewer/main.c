/**
 * @file main.c
 * @brief `vitview`: step through a real ViT forward pass in the terminal.
 *
 *     build/vitview [--weights W] [--film DIR] [--threads N] [IMAGE]
 *     build/vitview --train [--paused] [--mono] --out FILE [vit train's flags]
 *
 * With no arguments it opens the project's trained Fashion-MNIST model on one
 * of its test images (defaults.h), or random weights when that model is not
 * there, and says so.
 *
 * Everything that can fail on user input (flags, weights, image, not a
 * terminal) is checked here, before curses takes the screen, so errors are
 * plain lines on stderr, worded as `vit classify` words them (the same library
 * calls make them). Exit status: 0 after q; 1 bad input (weights, image);
 * 2 bad usage (unknown flag, bad number or preset, not a terminal).
 */
#include "app.h"
#include "defaults.h"
#include "base/fileio.h"
#include "history.h"
#include "io/image.h"
#include "io/labels.h"
#include "pictures.h"
#include "synth.h"
#include "tui_train.h"
#include "model/vit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct {
    const char *weights; // NULL: the trained model if it is there, else random weights
    const char *film;    // --film DIR; NULL: the film beside the weights, if any
    const char *arch;    // e.g. "vit-tiny"
    int seed;            // for random weights
    bool random;         // --arch or --seed given: random weights even if the model is there
    int threads;         // 0: all cores
    int history_mb;      // budget for the recorded tensors
    bool mono;           // no colour
    bool generated;      // the generated picture instead of a photo
    const char *preset;  // preprocessing preset; NULL: the one matching the weights
    const char *image;   // NULL: the bundled picture for the model, or the generated one
} Args;

static void usage(FILE *f) {
    fputs("usage: vitview [--weights FILE] [--film DIR] [--threads N] [IMAGE]\n"
          "       vitview --train [--paused] [--mono] --out FILE [vit train's flags]\n"
          "\n"
          "Step through a Vision Transformer's forward pass, stage by stage. With no\n"
          "arguments (make run): the project's trained Fashion-MNIST model on a test\n"
          "image it has never seen.\n"
          "\n"
          "  --weights FILE    a safetensors checkpoint (timm, Hugging Face or torchvision\n"
          "                    names); default: the project's trained Fashion-MNIST model\n"
          "                    data/" VIEWER_SHIPPED_MODEL ", else random\n"
          "                    weights (see --arch, --seed)\n"
          "  --film DIR        the training's film to scrub with ( ): snapshots of the\n"
          "                    model at epochs 0, 1, 2, 4, … (default: FILE.film beside\n"
          "                    the weights, which vit train writes, if it is there)\n"
          "  --arch A          random weights of this architecture: vit-tiny (default),\n"
          "                    vit-small, vit-base\n"
          "  --seed N          random weights from this seed (default 0)\n"
          "  --threads N       threads for the forward pass (default: all cores; at most\n"
          "                    the cores, and OpenBLAS's build maximum)\n"
          "  --history-mb N    most memory for recorded tensors (default 256; a full\n"
          "                    ViT-B/16 pass needs 192)\n"
          "  --mono            no colours (also when NO_COLOR is set)\n"
          "  --preprocess P    hf, timm, torchvision or fashion-mnist (default: the one\n"
          "                    the weights' metadata names, else fashion-mnist for a\n"
          "                    model of one channel, else the one matching the weights'\n"
          "                    naming convention, timm for random weights)\n"
          "  --generated       show the generated test picture (house, tree, sun)\n"
          "  IMAGE             a PNG, JPEG, BMP or PPM picture, in grey for a model of one\n"
          "                    channel. Default: a Fashion-MNIST test image for a model of\n"
          "                    one channel, data/" VIEWER_GREY_IMAGE ";\n"
          "                    the photo data/" VIEWER_RGB_IMAGE " for an RGB one; else the\n"
          "                    generated picture\n"
          "\n"
          "  --train           train a model as vit train does, with the model on the\n"
          "                    screen: curves, [cls] attention, predictions, the layers'\n"
          "                    health, the confusion matrix; vit train's flags\n"
          "                    (vitview --train --help lists them); --paused starts\n"
          "                    before the first step. Keys: space pause, . one step,\n"
          "                    } { picture, j k layer, [ ] head, + - redraw, q stop\n"
          "\n"
          "Keys: s step, n next block, f finish block, c continue, b breakpoint,\n"
          "r restart, } { next/previous picture, ( ) the training's film, T a test image,\n"
          "a attention views, "
          "x X switch heads off, z mask a patch, u undo, ? all keys, q quit.\n"
          "Exit status: 0 ok, 1 bad input, 2 bad usage or not a terminal.\n",
          f);
}

static VitStatus parse_args(Args *a, int argc, char **argv, VitError *err) {
    *a = (Args){.history_mb = (int)(HISTORY_DEFAULT_BUDGET >> 20)};
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        VitStatus s = VIT_OK;
        bool takes_value = true;
        if (!strcmp(arg, "--weights")) a->weights = value;
        else if (!strcmp(arg, "--film")) a->film = value;
        else if (!strcmp(arg, "--arch")) a->arch = value, a->random = true;
        else if (!strcmp(arg, "--seed"))
            s = vit_parse_int(&a->seed, value, 0, 1 << 30, "--seed", err), a->random = true;
        else if (!strcmp(arg, "--threads"))
            s = vit_parse_int(&a->threads, value, 0, 4096, "--threads", err);
        else if (!strcmp(arg, "--history-mb"))
            s = vit_parse_int(&a->history_mb, value, 1, 1 << 20, "--history-mb", err);
        else if (!strcmp(arg, "--preprocess")) a->preset = value;
        else if (!strcmp(arg, "--mono")) a->mono = true, takes_value = false;
        else if (!strcmp(arg, "--generated")) a->generated = true, takes_value = false;
        else if (arg[0] == '-' && arg[1])
            return vit_fail(err, VIT_ERR_USAGE, "unknown option '%s'", arg);
        else if (a->image)
            return vit_fail(err, VIT_ERR_USAGE, "one IMAGE at a time ('%s' and '%s')", a->image,
                            arg);
        else a->image = arg, takes_value = false;
        if (s != VIT_OK) return s;
        if (takes_value && !value) return vit_fail(err, VIT_ERR_USAGE, "%s needs a value", arg);
        if (takes_value) i++;
    }
    return VIT_OK;
}

// "ViT-Ti/16" for the three named sizes, else the sizes themselves.
static void model_name(char *buf, size_t size, const VitConfig *c) {
    static const struct {
        int dim, depth, heads;
        const char *name;
    } known[] = {{192, 12, 3, "ViT-Ti"}, {384, 12, 6, "ViT-S"}, {768, 12, 12, "ViT-B"}};
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (c->dim == known[i].dim && c->depth == known[i].depth && c->heads == known[i].heads) {
            snprintf(buf, size, "%s/%d", known[i].name, c->patch_size);
            return;
        }
    snprintf(buf, size, "ViT D=%d L=%d H=%d /%d", c->dim, c->depth, c->heads, c->patch_size);
}

// The weights: --weights, else the trained model, else random weights (*source says which).
static VitStatus load_model(Vit *vit, const Args *a, WeightsSource *source, char *desc,
                            size_t size, VitError *err) {
    char name[64], shipped[1024];
    vit_data_path(shipped, sizeof shipped, VIEWER_SHIPPED_MODEL);
    *source = viewer_weights_source(a->weights != NULL, a->random, access(shipped, R_OK) == 0);
    if (*source == WEIGHTS_MISSING) { // said before the screen is taken, and on it
        char safe[1024];
        fprintf(stderr, "vitview: no trained model %s (build/vit train --out "
                "data/" VIEWER_SHIPPED_MODEL " makes it): random weights instead\n",
                vit_escape(safe, sizeof safe, shipped));
    }
    if (*source == WEIGHTS_GIVEN || *source == WEIGHTS_SHIPPED) {
        const char *file = *source == WEIGHTS_GIVEN ? a->weights : shipped;
        VitStatus s = vit_build(vit, file, err);
        // A quantized file (vit quantize) runs in int8 as loaded; the viewer's
        // pass is fp32 (its weights q × scale), and Q is the int8 what-if.
        if (s == VIT_OK && vit->int8_only) s = vit_set_precision(vit, LOWP_FP32, err);
        if (s != VIT_OK) return s;
        model_name(name, sizeof name, &vit->config);
        char path[256]; // a file name may hold escape sequences: shown escaped
        if (*source == WEIGHTS_SHIPPED) snprintf(desc, size, "%s vit-fashion", name);
        else snprintf(desc, size, "%s %s (%s)", name, vit_escape(path, sizeof path, a->weights),
                      vit->source);
        return VIT_OK;
    }
    VitConfig cfg;
    VitStatus s = vit_config_for_arch(&cfg, a->arch ? a->arch : "vit-tiny", err);
    if (s != VIT_OK) return s;
    const VitInit init = vit_init_timm((uint64_t)a->seed);
    s = vit_build_random(vit, &cfg, &init, err);
    if (s != VIT_OK) return s;
    model_name(name, sizeof name, &cfg);
    snprintf(desc, size, "%s, random weights (seed %d)", name, a->seed);
    return VIT_OK;
}

// The model's input: IMAGE, else the bundled picture that suits the model (a
// Fashion-MNIST test image for one channel, the photo for three), else (or
// with --generated) the generated picture, which needs no file at all. Decoded
// and preprocessed as `vit classify` does it (pictures.c).
static VitStatus load_input(Tensor *input, Pictures *pictures, const Args *a, const Vit *vit,
                            char *desc, size_t size, VitError *err) {
    VitStatus s = pictures_init(pictures, vit, a->preset, err);
    if (s != VIT_OK) return s;
    char bundled[1024];
    const char *path = a->image, *fallback = viewer_default_image(vit->config.channels);
    if (!path && !a->generated && fallback &&
        access(vit_data_path(bundled, sizeof bundled, fallback), R_OK) == 0)
        path = bundled;
    if (path) return pictures_load_file(pictures, path, input, desc, size, err);
    *input = synth_input(&vit->config);
    snprintf(desc, size, "generated picture %d×%d", vit->config.image_size,
             vit->config.image_size);
    return VIT_OK;
}

// The class names, as `vit classify` finds them (a config.json's id2label, the
// weights' own "class_names", the ImageNet list for 1000 classes), escaped
// once here for the screen: they come from a file.
static VitStatus load_labels(Labels *labels, const Vit *vit, VitError *err) {
    VitStatus s = labels_for_weights(labels, NULL, vit->config_json, &vit->file,
                                     vit->config.num_classes, err);
    for (int i = 0; s == VIT_OK && i < labels->count; i++) {
        char safe[256];
        vit_escape(safe, sizeof safe, labels->names[i]);
        if (strcmp(safe, labels->names[i]) != 0) {
            free(labels->names[i]);
            labels->names[i] = vit_strdup(safe);
        }
    }
    return s;
}

static int fail(VitStatus status, const VitError *err, bool hint) {
    vit_print_error("vitview", err);
    if (hint && status == VIT_ERR_USAGE) fprintf(stderr, "vitview: --help shows the options\n");
    return status;
}

int main(int argc, char **argv) {
    for (int i = 1; i < argc; i++) // --train: the training screen, vit train's flags (tui_train.h)
        if (!strcmp(argv[i], "--train")) return train_main(argc, argv);
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
    VitError err;
    Args args;
    VitStatus s = parse_args(&args, argc, argv, &err);
    if (s != VIT_OK) return fail(s, &err, true);
    vit_set_threads(args.threads);

    Vit vit = {0};
    Tensor input = {0};
    Labels labels = {0};
    Pictures pictures = {0};
    FilmView film = {0};
    char model[256], image[160];
    WeightsSource source = WEIGHTS_GIVEN;
    file_guard_mapped("vitview", app_restore_terminal); // weights cut short under us: a message
    s = load_model(&vit, &args, &source, model, sizeof model, &err);
    // room for the pass and what the viewer keeps of it, before a byte is taken
    const size_t history = (size_t)args.history_mb << 20;
    if (s == VIT_OK) {
        const double kept = history_bytes_for(&vit.config, NULL);
        s = vit_check_batch(&vit.config, 1, kept < (double)history ? kept : (double)history,
                            "the viewer's copies of its stages", &err);
    }
    if (s == VIT_OK) s = load_input(&input, &pictures, &args, &vit, image, sizeof image, &err);
    if (s == VIT_OK) s = load_labels(&labels, &vit, &err);
    if (s == VIT_OK) s = frames_find(&film, vit.file.label, args.film, &vit, &err);
    bool hint = true;
    if (s == VIT_OK && !(isatty(STDIN_FILENO) && isatty(STDOUT_FILENO))) {
        s = vit_fail(&err, VIT_ERR_USAGE, "needs an interactive terminal (stdin and stdout are "
                     "not both a TTY); for a non-interactive run use build/vit");
        hint = false;
    }
    int status = s;
    if (s != VIT_OK) {
        fail(s, &err, hint);
    } else {
        AppOptions opt = {.vit = &vit, .input = &input, .model = model, .picture = image,
                          .pictures = &pictures,
                          .history_bytes = history, .labels = labels,
                          .mono = args.mono, .timings = getenv("VITVIEW_TIMINGS"),
                          .message = source == WEIGHTS_MISSING
                                         ? "no trained model: random weights" : NULL,
                          .film = film};
        labels = (Labels){0}; // app_run owns them now, and the film
        film = (FilmView){0};
        status = app_run(&opt);
    }
    labels_free(&labels);
    frames_free(&film);
    pictures_free(&pictures);
    tensor_free(&input);
    vit_free(&vit);
    return status;
}
