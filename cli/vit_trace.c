/**
 * @file vit_trace.c
 * @brief `vit trace`: one forward pass, every intermediate tensor saved to a file.
 *
 * The recipe: parse the flags → vit_build() from the weights → read the batch
 * → vit_forward() with a TraceRecorder listening → write what it recorded,
 * in the order it arrived, under the contract's names (the book's contract page, docs/contract.md, and
 * lib/model/trace_stages.h), atomically.
 *
 * The batch comes from a safetensors file (--input) or from image files,
 * preprocessed as `vit classify` does (vit_images.c).
 */
#include <stdio.h>
#include <string.h>

#include "model/trace_stages.h"
#include "model/vit.h"
#include "vit_cli.h"

/** Everything the command line can say. */
typedef struct {
    const char *weights; // the model
    const char *input;   // safetensors file holding "input" (B, C, S, S), or
    const char *images[MAX_IMAGES]; // image files, preprocessed into the batch
    int n_images;
    ImageArgs image;     // how images are preprocessed
    const char *out;     // where the trace goes
    const char *precision; // --precision: fp32, bf16 or int8 (NULL: the weights file's)
    int threads;
} TraceArgs;

static const char description[] =
    "Runs the model in --weights on the images in --input, once, and saves every\n"
    "intermediate tensor of that forward pass to --out: the patch embeddings, the\n"
    "tokens, each block's LayerNorms, queries, keys, values, attention scores and\n"
    "probabilities, MLP activations and outputs, and finally the logits. They are\n"
    "stored as float32 under the names listed below, in the order they were\n"
    "computed, with the model's configuration in the file's __metadata__. Load the\n"
    "file in Python to compare each stage with PyTorch's, and find where two\n"
    "implementations part ways.\n"
    "\n"
    "The batch is either IMAGE files (PNG, JPEG, BMP, PPM/PGM), preprocessed as in\n"
    "`vit classify`, or --input: a safetensors file with one float tensor named\n"
    "'input' of shape (B, 3, S, S), already normalised as the model expects. From\n"
    "PyTorch, with tools/stio.py:\n"
    "  stio.save('x.safetensors', {'input': torch.randn(1, 3, 224, 224)})\n"
    "\n"
    "--precision bf16 or int8 runs every Linear layer in that number (chapter 15);\n"
    "the stages stay float32, and the file's metadata says which it was. `vit diff`\n"
    "of an int8 trace against an fp32 one shows where the error enters and grows.\n";

static const char examples[] =
    "  vit make-weights --arch vit-tiny --seed 1 --out tiny.safetensors\n"
    "  vit trace --weights tiny.safetensors --input x.safetensors \\\n"
    "            --out trace.safetensors\n"
    "  vit trace --weights tiny.safetensors cat.png --out trace.safetensors\n"
    "  vit trace --weights tiny.safetensors cat.png --precision int8 --out int8.safetensors\n"
    "  vit diff trace.safetensors int8.safetensors\n";

// The stage table, so the help can never list names the code does not emit.
static void print_stages(FILE *f) {
    fprintf(f, "what the trace holds, in order (B images, N tokens, D width, H heads, Dh = D/H,\n"
               "P patches, M MLP width, Y classes; blocks.{i}.* repeats for every block):\n");
    for (int i = 0; i < vit_stage_count(); i++) {
        const VitStage *s = vit_stage_at(i);
        char name[64];
        snprintf(name, sizeof name, "%s%s", s->per_block ? "blocks.{i}." : "", s->name);
        char axes[32];
        snprintf(axes, sizeof axes, "(%s)", s->axes);
        fprintf(f, "  %-23s %-10s %s\n", name, axes, s->what);
    }
}

/* ------------------------------------------------------------------ input */

// "a, b, c, …": the first few tensor names of a file, for a message.
static void some_names(char *buf, size_t size, const SafeTensors *st) {
    size_t used = (size_t)snprintf(buf, size, "%s", st->count ? "" : "no tensors at all");
    for (int i = 0; i < st->count && i < 4 && used < size; i++)
        used += (size_t)snprintf(buf + used, size - used, "%s'%s'", i ? ", " : "",
                                 st->tensors[i].name);
    if (st->count > 4 && used < size) snprintf(buf + used, size - used, ", ...");
}

// The tensor "input" of a safetensors file, checked against the model's (B, C, S, S)
// from the header alone, and the memory for the run, before a byte of it is copied.
static VitStatus read_input_file(Tensor *batch, const char *path, const Vit *vit,
                                 const char *weights, VitError *err) {
    const VitConfig *c = &vit->config;
    SafeTensors st;
    VitStatus s = st_open(&st, path, err);
    if (s != VIT_OK) return s;
    const StTensor *e = st_find(&st, "input");
    char text[256];
    if (!e) {
        some_names(text, sizeof text, &st);
        s = vit_fail(err, VIT_ERR_INPUT,
                     "%s: no tensor named 'input' (the file has %s); --input needs the images "
                     "as 'input', shape (B, %d, %d, %d)",
                     path, text, c->channels, c->image_size, c->image_size);
    } else if (e->ndim != 4 || e->shape[0] < 1 || e->shape[0] > MAX_IMAGES ||
               e->shape[1] != c->channels || e->shape[2] != c->image_size ||
               e->shape[3] != c->image_size) {
        s = vit_fail(err, VIT_ERR_INPUT,
                     "%s: tensor 'input' has shape %s, but the model in %s expects (B, %d, %d, %d)"
                     "%s", path, tensor_shape_format(text, sizeof text, e->ndim, e->shape, NULL), weights,
                     c->channels, c->image_size, c->image_size,
                     e->ndim == 4 && e->shape[0] > MAX_IMAGES ? " with B at most 256" : "");
    } else {
        const int B = (int)e->shape[0];
        s = vit_check_batch(c, B, vit_trace_bytes(c, B), "a copy of every stage", err);
        if (s == VIT_OK) s = st_read_tensor(&st, "input", batch, err);
    }
    st_close(&st);
    return s;
}

// The batch to run, (B, C, S, S) normalised pixels: from --input, or IMAGE files.
static VitStatus load_batch(Tensor *batch, const TraceArgs *a, const Vit *vit, VitError *err) {
    if (a->input) return read_input_file(batch, a->input, vit, a->weights, err);
    Preprocess pre;
    VitStatus s = cli_preprocess(&pre, &a->image, vit, err);
    if (s == VIT_OK)
        s = vit_check_batch(&vit->config, a->n_images, vit_trace_bytes(&vit->config, a->n_images),
                            "a copy of every stage", err);
    return s != VIT_OK ? s : cli_load_images(batch, a->images, a->n_images, &pre, err);
}

// Every file the command reads, for cli_check_output().
static int inputs_of(CliInput *in, const TraceArgs *a, const Vit *vit) {
    int n = 0;
    in[n++] = (CliInput){a->weights, "--weights"};
    in[n++] = (CliInput){a->input, "--input"};
    in[n++] = (CliInput){vit->config_json, "the config.json beside --weights"};
    for (int i = 0; i < a->n_images; i++) in[n++] = (CliInput){a->images[i], "IMAGE"};
    return n;
}

/* ------------------------------------------------------------------ trace */

// The trace file: every recorded tensor in arrival order, the configuration as metadata.
static VitStatus write_trace(const char *path, const TraceRecorder *rec, const Vit *vit,
                             const char *weights, VitError *err) {
    const VitConfig *c = &vit->config;
    const struct {
        const char *key;
        int value;
    } sizes[] = {
        {"image_size", c->image_size}, {"patch_size", c->patch_size}, {"channels", c->channels},
        {"dim", c->dim}, {"depth", c->depth}, {"num_heads", c->heads}, {"mlp_dim", c->mlp_dim},
        {"num_classes", c->num_classes}, {"batch", vit->acts.batch},
    };
    StWriter w = {0};
    char text[64];
    st_writer_meta(&w, "format", "pt");
    st_writer_meta(&w, "producer", "vit trace");
    st_writer_meta(&w, "weights", weights);
    st_writer_meta(&w, "weights_names", vit->source);
    st_writer_meta(&w, "precision", lowp_precision_name(vit->precision)); // of the Linear layers
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        snprintf(text, sizeof text, "%d", sizes[i].value);
        st_writer_meta(&w, sizes[i].key, text);
    }
    snprintf(text, sizeof text, "%g", (double)c->ln_eps);
    st_writer_meta(&w, "layer_norm_eps", text);
    for (int i = 0; i < rec->count; i++) st_writer_add(&w, rec->entries[i].name, &rec->entries[i].t);
    VitStatus s = st_writer_save(&w, path, err);
    st_writer_free(&w);
    return s;
}

/**
 * @brief `vit trace`: parse → build → load the batch → forward with a recorder → write.
 * @param[in] self        this command's row of the command table
 * @param[in] argc, argv  its command line, argv[0] = "trace"
 * @param[out] err        the message on failure
 * @return the exit status: VIT_OK, VIT_ERR_INPUT or VIT_ERR_USAGE
 */
VitStatus cmd_trace(const VitCommand *self, int argc, char **argv, VitError *err) {
    TraceArgs a = {0};
    CliOption options[] = {
        {"--weights", CLI_STRING, &a.weights, "FILE",
         "the model: safetensors with timm, Hugging Face or torchvision names", .required = true},
        {"--input", CLI_STRING, &a.input, "FILE",
         "safetensors holding the images as 'input', shape (B, 3, S, S) (instead of IMAGE)",
         .required = false},
        {"--out", CLI_STRING, &a.out, "FILE", "the safetensors file to write the trace to",
         .required = true},
        CLI_IMAGE_OPTIONS(&a.image),
        CLI_OPTION_PRECISION(&a.precision),
        CLI_OPTION_THREADS(&a.threads),
    };
    CliSpec spec = {.command = self, .description = description, .examples = examples,
                    .more_help = print_stages, .options = options,
                    .option_count = sizeof options / sizeof options[0],
                    .positional = "[IMAGE...]", .max_positional = MAX_IMAGES, .positionals = a.images};

    // 1. parse
    bool help;
    VitStatus s = cli_parse(&spec, argc, argv, &help, err);
    if (s != VIT_OK || help) return s;
    a.n_images = spec.positional_count;
    if (!a.input == !a.n_images)
        return vit_fail(err, VIT_ERR_USAGE,
                        "'vit trace' needs either --input FILE or IMAGE files, not %s "
                        "(see 'vit trace --help')", a.input ? "both" : "neither");
    LowpPrecision precision; // checked before any file is read
    if ((s = cli_precision(&precision, a.precision, err)) != VIT_OK) return s;
    cli_apply_threads(&spec, a.threads);

    // 2. build the model from its weights, at the input size asked for; never write over an input
    Vit vit;
    if ((s = vit_build(&vit, a.weights, err)) != VIT_OK) return s;
    CliInput inputs[3 + MAX_IMAGES];
    if ((s = cli_check_output(a.out, "--out", inputs, inputs_of(inputs, &a, &vit), err)) != VIT_OK ||
        (s = cli_apply_image_size(&vit, &a.image, err)) != VIT_OK ||
        (s = cli_set_precision(&vit, a.precision, err)) != VIT_OK) {
        vit_free(&vit);
        return s;
    }

    // 3. the batch, once there is room for it and everything the pass will emit
    Tensor batch = {0};
    s = load_batch(&batch, &a, &vit, err);

    // 4. run, keeping a copy of every intermediate, then write them
    TraceRecorder rec = {0};
    double seconds = 0;
    if (s == VIT_OK) {
        double t0 = vit_now();
        s = vit_forward(&vit, &batch, trace_record, &rec, err);
        seconds = vit_now() - t0;
    }
    if (s == VIT_OK) s = write_trace(a.out, &rec, &vit, a.weights, err);
    if (s == VIT_OK) {
        char bytes[VIT_NUM_BUF], out[1024];
        printf("%s: %d tensors from one forward pass over %d image%s (%s) in %.3f s\n",
               vit_escape(out, sizeof out, a.out), rec.count, batch.shape[0],
               batch.shape[0] == 1 ? "" : "s",
               vit_bytes(bytes, vit_trace_bytes(&vit.config, batch.shape[0])), seconds);
        // 5. a trace of NaN is still a trace (it shows where they start): warn, loudly
        VitError warning;
        if (vit_check_finite(&vit, &batch, &warning) != VIT_OK)
            vit_print_error("vit: warning", &warning);
    }
    trace_recorder_free(&rec);
    tensor_free(&batch);
    vit_free(&vit);
    return s;
}
