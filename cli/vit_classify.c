/**
 * @file vit_classify.c
 * @brief `vit classify`: what does the model see in these images?
 *
 * The recipe: parse the flags → vit_build() the model (at --img-size if asked)
 * → the preprocessing (the flags', else the model file's own metadata, else
 * its convention's preset) and the class names (--labels, config.json, the
 * file's "class_names") → decode and preprocess every image into one batch
 * (grey for a model of one channel) → vit_forward() (with a recorder when
 * --trace asks for the intermediates) → softmax over each image's logits →
 * print the top K with their class names.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "io/labels.h"
#include "ops/ops.h"
#include "model/trace_stages.h"
#include "vit_cli.h"

/** Everything the command line can say. */
typedef struct {
    const char *weights; // the model
    const char *labels;  // class names, one per line (optional)
    const char *trace;   // where to write the intermediates (optional)
    int top;             // how many classes to print per image
    float temperature;   // the softmax's temperature: probabilities of logits / T
    const char *precision; // --precision: fp32, bf16 or int8 (NULL: the weights file's)
    int threads;
    ImageArgs image;
    const char *images[MAX_IMAGES];
} ClassifyArgs;

static const char description[] =
    "Classifies each IMAGE (PNG, JPEG, BMP, PPM/PGM) with the model in --weights\n"
    "and prints, per image, the COUNT most probable classes (--top) as\n"
    "`rank probability label`.\n"
    "\n"
    "Each image is resized, centre-cropped and normalised as the preset says: the\n"
    "one --preprocess names, else the one the weights' own metadata names\n"
    "(\"preprocess\"), else fashion-mnist for a model of one channel, else the one\n"
    "matching the weights' naming convention:\n"
    "  hf             resize to S×S (bilinear); mean = std = 0.5\n"
    "  timm           shorter side to S/0.9 (bicubic), crop S; mean = std = 0.5\n"
    "  torchvision    shorter side to 256 (bilinear), crop 224; ImageNet's mean, std\n"
    "  fashion-mnist  grey; shorter side to S (bilinear), crop S; 0.2860, 0.3530\n"
    "A model of one channel sees the image in grey, made as Pillow's convert(\"L\").\n"
    "The mean and std in the weights' metadata (\"mean\", \"std\"), when there, replace\n"
    "the preset's; --mean and --std replace both. An image that is already S×S is\n"
    "used as it is. Class names come from --labels, else from the config.json beside\n"
    "Hugging Face weights, else from the weights' metadata (\"class_names\"), else,\n"
    "for 1000 classes, from the ImageNet-1k list in data/labels/imagenet1k.txt.\n";

static const char examples[] =
    "  scripts/fetch-weights.sh            # google/vit-base-patch16-224 and a timm ViT-B/16\n"
    "  vit classify --weights data/models/google-vit-base-patch16-224/model.safetensors \\\n"
    "               cat.jpg --top 5\n"
    "  vit classify --weights w.safetensors a.png b.png --trace trace.safetensors\n"
    "  vit classify --weights data/models/vit-fashion.safetensors shirt.png\n";

/* ----------------------------------------------------------------- output */

static void print_top(const char *path, const float *probs, int K, int top, const Labels *labels,
                      const Preprocess *pre, int S) {
    int *index = vit_malloc(sizeof(int) * (size_t)top);
    ops_top_k(index, top, probs, K);
    char safe[1024]; // paths and names come from the user's files: escaped for the terminal
    printf("%s  (%s preprocessing, %d×%d)\n", vit_escape(safe, sizeof safe, path), pre->name, S, S);
    printf("  rank  probability  label\n");
    for (int r = 0; r < top; r++) {
        const char *name = labels_name(labels, index[r]);
        if (name) vit_escape(safe, sizeof safe, name);
        else snprintf(safe, sizeof safe, "class %d", index[r]);
        printf("  %4d  %11.4f  %s\n", r + 1, (double)probs[index[r]], safe);
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

// Every file the command reads, for cli_check_output().
static int inputs_of(CliInput *in, const ClassifyArgs *a, int n_images, const Vit *vit) {
    int n = 0;
    in[n++] = (CliInput){a->weights, "--weights"};
    in[n++] = (CliInput){a->labels, "--labels"};
    in[n++] = (CliInput){vit->config_json, "the config.json beside --weights"};
    for (int i = 0; i < n_images; i++) in[n++] = (CliInput){a->images[i], "IMAGE"};
    return n;
}

static VitStatus classify(const ClassifyArgs *a, int n_images, VitError *err) {
    // 1. the model, at the input size asked for; --trace must not overwrite what we read
    Vit vit;
    VitStatus s = vit_build(&vit, a->weights, err);
    if (s != VIT_OK) return s;
    if ((s = cli_set_precision(&vit, a->precision, err)) != VIT_OK) {
        vit_free(&vit);
        return s;
    }
    CliInput inputs[3 + MAX_IMAGES];
    Preprocess pre;
    Labels labels = {0};
    Tensor batch = {0};
    TraceRecorder rec = {0};
    const double record = a->trace ? vit_trace_bytes(&vit.config, n_images) : 0;
    if ((s = cli_check_output(a->trace, "--trace", inputs, inputs_of(inputs, a, n_images, &vit),
                              err)) == VIT_OK &&
        (s = cli_apply_image_size(&vit, &a->image, err)) == VIT_OK &&
        (s = cli_preprocess(&pre, &a->image, &vit, err)) == VIT_OK &&
        (s = labels_for_weights(&labels, a->labels, vit.config_json, &vit.file,
                                vit.config.num_classes, err)) == VIT_OK &&
        // 2. room for it all, then every image decoded and preprocessed into one batch
        (s = vit_check_batch(&vit.config, n_images, record, "a copy of every stage", err)) == VIT_OK)
        s = cli_load_images(&batch, a->images, n_images, &pre, err);
    // 3. one forward pass over the batch, recorded if --trace asks
    if (s == VIT_OK) s = vit_forward(&vit, &batch, a->trace ? trace_record : NULL, &rec, err);
    if (s == VIT_OK && a->trace) s = write_recording(a->trace, &rec, err);
    // 4. numbers, not NaN; then probabilities and the most probable classes of each image
    if (s == VIT_OK) s = vit_check_finite(&vit, &batch, err);
    if (s == VIT_OK) {
        const int K = vit.config.num_classes, top = a->top < K ? a->top : K;
        Tensor logits = vit_logits(&vit);
        float *probs = vit_malloc(sizeof(float) * (size_t)K);
        for (int i = 0; i < n_images; i++) {
            // softmax(z / T): the same order at every T, only how sure it sounds
            for (int k = 0; k < K; k++) probs[k] = logits.data[(size_t)i * K + k] / a->temperature;
            softmax(probs, probs, 1, K);
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
    ClassifyArgs a = {.top = 5, .temperature = 1.0f};
    CliOption options[] = {
        {"--weights", CLI_STRING, &a.weights, "FILE",
         "the model: safetensors with timm, Hugging Face or torchvision names", .required = true},
        {"--top", CLI_INT, &a.top, "COUNT", "how many classes to print per image",
         .show_default = true, .lo = 1, .hi = 1000000},
        {"--labels", CLI_STRING, &a.labels, "FILE", "class names, one per line, in class order",
         .required = false},
        {"--temperature", CLI_FLOAT, &a.temperature, "T",
         "probabilities of logits / T: T < 1 sharpens, T > 1 flattens (the viewer's + -)",
         .show_default = true, .lo = 0.01, .hi = 100},
        {"--trace", CLI_STRING, &a.trace, "FILE",
         "also save every intermediate tensor of the pass to FILE (see vit trace --help)",
         .required = false},
        CLI_IMAGE_OPTIONS(&a.image),
        CLI_OPTION_PRECISION(&a.precision),
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
                        "'vit classify' needs at least one IMAGE (see 'vit classify --help')");
    LowpPrecision precision;
    if ((s = cli_precision(&precision, a.precision, err)) != VIT_OK) return s; // before any file
    cli_apply_threads(&spec, a.threads);
    return classify(&a, spec.positional_count, err);
}
