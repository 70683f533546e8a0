/**
 * @file vit_quantize.c
 * @brief `vit quantize IN OUT`: a weights file with every Linear weight in int8.
 *
 * The recipe: parse → vit_build(IN) (timm, Hugging Face, torchvision or one
 * of ours; a file already quantized is read as it is) → vit_save_int8(OUT)
 * (atomic) → say what was written: the sizes of both files, and how far the
 * int8 weights are from the float ones.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "model/vit.h"
#include "vit_cli.h"

static const char description[] =
    "Writes a copy of a ViT's weights file with every Linear layer's weight in int8:\n"
    "each block's qkv, proj, fc1 and fc2 and the classifier head. Each output row of\n"
    "a weight gets its own scale, max|row| / 127, and its values become the nearest\n"
    "integers of weight / scale (-127 to 127, ties to even): symmetric, per output\n"
    "channel, as 'vit eval --precision int8' runs the model. The weight is stored as\n"
    "an I8 tensor with an F32 tensor '<name>_scale' beside it, and the metadata says\n"
    "\"quantization\": \"" VIT_QUANT_INT8 "\". The patch embedding, the [cls]\n"
    "token, the positions, LayerNorms and biases stay float32; names are timm's.\n"
    "\n"
    "Every command loads the file (--weights OUT): the model then runs its Linear\n"
    "layers in int8 from the stored integers, without float copies, so it takes about\n"
    "a quarter of the memory for them. --precision fp32 or bf16 gives it float\n"
    "weights again, q x scale, which are not the original ones: int8 lost the rest.\n"
    "Quantizing those dequantized weights again gives the same integers.\n"
    "\n"
    "The activations are not in the file: they are quantized per token as the model\n"
    "runs ('dynamic' quantization).\n";

static const char examples[] =
    "  vit quantize data/models/vit-fashion.safetensors /tmp/vit-fashion-int8.safetensors\n"
    "  vit eval --weights /tmp/vit-fashion-int8.safetensors\n"
    "  vit info --weights /tmp/vit-fashion-int8.safetensors\n";

// The size of `path` in bytes, or -1.
static double file_bytes(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? (double)st.st_size : -1.0;
}

// Largest |w − q·scale| over every Linear weight, relative to that weight's
// largest |w|: how much int8 took from the model (0 for a file already in int8).
static double worst_relative_error(const Vit *vit) {
    if (vit->int8_only) return 0.0;
    double worst = 0.0;
    const int count = vit_params(vit, NULL);
    VitParam *params = vit_malloc(sizeof *params * (size_t)count);
    vit_params(vit, params);
    for (int i = 0; i < count; i++) {
        const VitParam *p = &params[i];
        if (p->ndim != 2 || p->spec->kind != VIT_PARAM_WEIGHT || p->spec->embedding) continue;
        const int O = p->shape[0], D = p->shape[1];
        int8_t *q = vit_malloc((size_t)O * D);
        float *scale = vit_malloc((size_t)O * sizeof *scale);
        quantize_rows_s8(q, scale, p->data, O, D);
        double err = 0.0, top = 0.0;
        for (size_t k = 0; k < (size_t)O * D; k++) {
            err = fmax(err, fabs((double)p->data[k] - (double)q[k] * scale[k / D]));
            top = fmax(top, fabs((double)p->data[k]));
        }
        if (top > 0) worst = fmax(worst, err / top);
        free(q);
        free(scale);
    }
    free(params);
    return worst;
}

/**
 * @brief `vit quantize IN OUT`: load → write in int8 → report.
 * @param[in] self        this command's row of the command table
 * @param[in] argc, argv  its command line, argv[0] = "quantize"
 * @param[out] err        the message on failure
 * @return the exit status: VIT_OK, VIT_ERR_INPUT or VIT_ERR_USAGE
 */
VitStatus cmd_quantize(const VitCommand *self, int argc, char **argv, VitError *err) {
    const char *paths[2] = {NULL, NULL};
    int threads = 0;
    CliOption options[] = {CLI_OPTION_THREADS(&threads)};
    CliSpec spec = {.command = self, .description = description, .examples = examples,
                    .options = options, .option_count = sizeof options / sizeof options[0],
                    .positional = "IN OUT", .max_positional = 2, .positionals = paths};

    // 1. parse: two files, the output not the input
    bool help;
    VitStatus s = cli_parse(&spec, argc, argv, &help, err);
    if (s != VIT_OK || help) return s;
    if (spec.positional_count != 2)
        return vit_fail(err, VIT_ERR_USAGE,
                        "'vit quantize' needs two files, IN and OUT, got %d (see 'vit quantize "
                        "--help')", spec.positional_count);
    cli_apply_threads(&spec, threads);
    CliInput inputs[] = {{paths[0], "IN"}};
    if ((s = cli_check_output(paths[1], "OUT", inputs, 1, err)) != VIT_OK) return s;

    // 2. load, 3. write atomically
    double t0 = vit_now();
    Vit vit;
    if ((s = vit_build(&vit, paths[0], err)) != VIT_OK) return s;
    const double worst = worst_relative_error(&vit);
    s = vit_save_int8(&vit, paths[1], err);
    const bool was_int8 = vit.int8_only;
    vit_free(&vit);
    if (s != VIT_OK) return s;

    // 4. what was written
    char in[1024], out[1024], in_size[VIT_NUM_BUF], out_size[VIT_NUM_BUF];
    const double a = file_bytes(paths[0]), b = file_bytes(paths[1]);
    printf("%s: %s, %.1f %% of %s (%s), %.2f s\n", vit_escape(out, sizeof out, paths[1]),
           vit_bytes(out_size, b), 100.0 * b / a, vit_escape(in, sizeof in, paths[0]),
           vit_bytes(in_size, a), vit_now() - t0);
    if (was_int8)
        printf("  %s was already in int8: its integers and scales are copied as they are\n", in);
    else
        printf("  the Linear weights in int8, one scale per output row; the largest error of a\n"
               "  weight is %.2f %% of its layer's largest |weight| (at most half a step, 1/254 = "
               "0.39 %%)\n", 100.0 * worst);
    return VIT_OK;
}
