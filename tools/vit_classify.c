/**
 * @file vit_classify.c
 * @brief `vit classify`: what does the model see in these images?
 *
 * The recipe: parse the flags → vit_build() the model (at --img-size if asked)
 * → decode and preprocess every image into one batch → vit_forward() (with a
 * recorder when --trace asks for the intermediates) → softmax over each
 * image's logits → print the top K with their class names.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "labels.h"
#include "ops.h"
#include "vit_cli.h"

/** Everything the command line can say. */
typedef struct {
    const char *weights; // the model
    const char *labels;  // class names, one per line (optional)
    const char *trace;   // where to write the intermediates (optional)
    int top;             // how many classes to print per image
    int threads;
    ImageArgs image;
    const char *images[256];
} ClassifyArgs;

static const char description[] =
    "Classifies each IMAGE (PNG, JPEG, BMP, PPM/PGM) with the model in --weights\n"
    "and prints, per image, the K most probable classes as `rank probability label`.\n"
    "\n"
    "Each image is resized, centre-cropped and normalised as the preset says (the\n"
    "one matching the weights' naming convention unless --preprocess names another):\n"
    "  hf           resize to S×S (bilinear), mean = std = 0.5\n"
    "  timm         shorter side to S/0.9 (bicubic), centre crop S, mean = std = 0.5\n"
    "  torchvision  shorter side to 256 (bilinear), centre crop 224, ImageNet mean/std\n"
    "An image that is already S×S is used as it is. Class names come from --labels,\n"
    "else from the config.json beside Hugging Face weights, else, for 1000 classes,\n"
    "from the ImageNet-1k list in data/labels/imagenet1k.txt.\n";

static const char examples[] =
    "  scripts/fetch-weights.sh            # google/vit-base-patch16-224 and a timm ViT-B/16\n"
    "  vit classify --weights data/models/google-vit-base-patch16-224/model.safetensors \\\n"
    "               cat.jpg --top 5\n"
    "  vit classify --weights w.safetensors a.png b.png --trace trace.safetensors\n";

/* ----------------------------------------------------------------- labels */

// The class names: --labels, else a Hugging Face config.json's id2label, else
// ImageNet-1k for a 1000-class head; none otherwise (then "class N" is printed).
static VitStatus load_labels(Labels *labels, const ClassifyArgs *a, const Vit *vit,
                             VitError *err) {
    memset(labels, 0, sizeof *labels);
    const int K = vit->config.num_classes;
    VitStatus s = VIT_OK;
    if (a->labels) {
        s = labels_load(labels, a->labels, err);
        if (s == VIT_OK && labels->count != K) {
            s = vit_fail(err, VIT_ERR_INPUT, "%s: has %d labels but the model has %d classes",
                         a->labels, labels->count, K);
            labels_free(labels);
        }
        return s;
    }
    if (vit->config_json[0]) {
        VitError ignored; // a config.json without id2label is fine
        if (labels_load_hf_config(labels, vit->config_json, &ignored) == VIT_OK &&
            labels->count == K)
            return VIT_OK;
        labels_free(labels);
    }
    if (K == 1000) {
        char path[1024];
        VitError ignored; // a missing list only costs the names
        if (labels_load(labels, vit_data_path(path, sizeof path, "labels/imagenet1k.txt"),
                        &ignored) == VIT_OK && labels->count == K)
            return VIT_OK;
        labels_free(labels);
    }
    return VIT_OK;
}

/* ----------------------------------------------------------------- output */

static void print_top(const char *path, const float *probs, int K, int top, const Labels *labels,
                      const Preprocess *pre, int S) {
    int *index = vit_malloc(sizeof(int) * (size_t)top);
    top_k(index, top, probs, K);
    printf("%s  (%s preprocessing, %d×%d)\n", path, pre->name, S, S);
    printf("  rank  probability  label\n");
    for (int r = 0; r < top; r++) {
        const char *name = labels_name(labels, index[r]);
        char fallback[32];
        if (!name) snprintf(fallback, sizeof fallback, "class %d", index[r]);
        printf("  %4d  %11.4f  %s\n", r + 1, (double)probs[index[r]], name ? name : fallback);
    }
    free(index);
}

/* ---------------------------------------------------------------- command */

// Writes what the recorder holds to `path` (float32, forward order), atomically.
static VitStatus write_recording(const char *path, const TraceRecorder *rec, VitError *err) {
    StWriter w = {0};
    st_writer_meta(&w, "format", "pt");
    st_writer_meta(&w, "producer", "vit classify");
    for (int i = 0; i < rec->count; i++) st_writer_add(&w, rec->entries[i].name, &rec->entries[i].t);
    VitStatus s = st_writer_save(&w, path, err);
    st_writer_free(&w);
    return s;
}

static VitStatus classify(const ClassifyArgs *a, int n_images, VitError *err) {
    // 1. the model, at the input size asked for
    Vit vit;
    VitStatus s = vit_build(&vit, a->weights, err);
    if (s != VIT_OK) return s;
    Preprocess pre;
    Labels labels = {0};
    Tensor batch = {0};
    TraceRecorder rec = {0};
    if ((s = cli_apply_image_size(&vit, &a->image, err)) == VIT_OK &&
        (s = cli_preprocess(&pre, &a->image, &vit, err)) == VIT_OK &&
        (s = load_labels(&labels, a, &vit, err)) == VIT_OK)
        // 2. every image, decoded and preprocessed into one batch
        s = cli_load_images(&batch, a->images, n_images, &pre, err);
    // 3. one forward pass over the batch, recorded if --trace asks
    if (s == VIT_OK) s = vit_forward(&vit, &batch, a->trace ? trace_record : NULL, &rec, err);
    if (s == VIT_OK && a->trace) s = write_recording(a->trace, &rec, err);
    // 4. probabilities, and the most probable classes of each image
    if (s == VIT_OK) {
        const int K = vit.config.num_classes, top = a->top < K ? a->top : K;
        Tensor logits = vit_logits(&vit);
        float *probs = vit_malloc(sizeof(float) * (size_t)K);
        for (int i = 0; i < n_images; i++) {
            softmax(probs, logits.data + (size_t)i * K, 1, K);
            if (i) printf("\n");
            print_top(a->images[i], probs, K, top, &labels, &pre, vit.config.image_size);
        }
        free(probs);
    }
    trace_recorder_free(&rec);
    tensor_free(&batch);
    labels_free(&labels);
    vit_free(&vit);
    return s;
}

/**
 * @brief `vit classify`: parse → build → load the images → forward → print the top K.
 * @param[in] self        this command's row of the command table
 * @param[in] argc, argv  its command line, argv[0] = "classify"
 * @param[out] err        the message on failure
 * @return the exit status: VIT_OK, VIT_ERR_INPUT or VIT_ERR_USAGE
 */
VitStatus cmd_classify(const VitCommand *self, int argc, char **argv, VitError *err) {
    ClassifyArgs a = {.top = 5};
    CliOption options[] = {
        {"--weights", CLI_STRING, &a.weights, "FILE",
         "the model: safetensors with timm, Hugging Face or torchvision names", .required = true},
        {"--top", CLI_INT, &a.top, "K", "how many classes to print per image",
         .show_default = true, .lo = 1, .hi = 1000000},
        {"--labels", CLI_STRING, &a.labels, "FILE", "class names, one per line, in class order",
         .required = false},
        {"--trace", CLI_STRING, &a.trace, "FILE",
         "also save every intermediate tensor of the pass to FILE (see vit trace --help)",
         .required = false},
        CLI_IMAGE_OPTIONS(&a.image),
        CLI_OPTION_THREADS(&a.threads),
    };
    CliSpec spec = {.command = self, .description = description, .examples = examples,
                    .options = options, .option_count = sizeof options / sizeof options[0],
                    .positional = "IMAGE...", .max_positional = 256, .positionals = a.images};
    bool help;
    VitStatus s = cli_parse(&spec, argc, argv, &help, err);
    if (s != VIT_OK || help) return s;
    if (spec.positional_count == 0)
        return vit_fail(err, VIT_ERR_USAGE,
                        "'vit classify' needs at least one IMAGE (see 'vit classify --help')");
    cli_apply_threads(&spec, a.threads);
    return classify(&a, spec.positional_count, err);
}
