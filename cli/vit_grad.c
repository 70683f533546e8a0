/**
 * @file vit_grad.c
 * @brief `vit grad`: one forward and one backward pass, every gradient saved to a file;
 *        and the batch, target and loss flags it shares with `vit step`.
 *
 * The recipe: parse the flags → vit_build() from the weights → read the batch
 * and its targets (memory checked first) → vit_forward_backward() with a
 * recorder listening for the `grad.` stages → write the loss, every parameter's
 * gradient under its timm name and every stage's gradient under its `grad.`
 * name, atomically.
 *
 * The loss is PyTorch's `F.cross_entropy(model(x), targets,
 * label_smoothing=ε)`, the mean over the batch, so the file can be compared
 * tensor by tensor with what autograd leaves in each parameter's `.grad` and,
 * through hooks, in each activation's. A model loaded from a file stays
 * mapped read-only: the gradients live in buffers of their own.
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "model/trace_stages.h"
#include "model/vit.h"
#include "vit_cli.h"

/* ------------------------------------------------------------ targets */

// "3" or "3,1,4": class numbers ≥ 0, separated by commas. Fills out[0…] (when
// out is not NULL) and *count. Bad usage: anything that is not such a list.
static VitStatus parse_targets(int *out, int *count, const char *text, VitError *err) {
    *count = 0;
    const char *p = text;
    for (;;) {
        char *end;
        const char *start = p;
        while (*p == ' ') p++;
        long v = (*p >= '0' && *p <= '9') ? strtol(p, &end, 10) : -1;
        if (v < 0 || end == p || (*end != ',' && *end != '\0') || v > INT_MAX) {
            size_t len = strcspn(start, ",");
            return vit_fail(err, VIT_ERR_USAGE,
                            "--target: '%.*s' is not a class number: give one integer from 0 "
                            "for every image, or one per image separated by commas (3,1,4)",
                            (int)(len > 40 ? 40 : len), start);
        }
        if (*count >= MAX_IMAGES)
            return vit_fail(err, VIT_ERR_USAGE, "--target: more than %d classes; a batch holds "
                            "at most %d images", MAX_IMAGES, MAX_IMAGES);
        if (out) out[*count] = (int)v;
        (*count)++;
        if (*end == '\0') return VIT_OK;
        p = end + 1;
    }
}

/**
 * @brief The checks of a training command line that need no file: either
 *        --input or IMAGE files, and a --target list that is one, or one per IMAGE.
 * @param[in] a        the parsed flags
 * @param[in] command  the command's name, for the message ("grad")
 * @param[out] err     the message
 * @return VIT_OK, or VIT_ERR_USAGE naming the flag.
 */
VitStatus cli_train_check_args(const TrainArgs *a, const char *command, VitError *err) {
    if (!a->input == !a->n_images)
        return vit_fail(err, VIT_ERR_USAGE,
                        "'vit %s' needs either --input FILE or IMAGE files, not %s "
                        "(see 'vit %s --help')", command, a->input ? "both" : "neither", command);
    int n;
    VitStatus s = parse_targets(NULL, &n, a->targets, err);
    if (s == VIT_OK && a->n_images && n != 1 && n != a->n_images)
        s = vit_fail(err, VIT_ERR_USAGE, "--target gives %d classes for %d image%s: give one "
                     "for every image, or one per image", n, a->n_images,
                     a->n_images == 1 ? "" : "s");
    return s;
}

/* -------------------------------------------------------------- batch */

// The 'input' tensor's header: (B, C, S, S) as the model wants, B at most MAX_IMAGES.
static VitStatus check_input_shape(const SafeTensors *st, const StTensor *e, const char *path,
                                   const Vit *vit, const char *weights, VitError *err) {
    const VitConfig *c = &vit->config;
    char text[256];
    if (!e) {
        size_t used = (size_t)snprintf(text, sizeof text, "%s", st->count ? "" : "no tensors at all");
        for (int i = 0; i < st->count && i < 4 && used < sizeof text; i++)
            used += (size_t)snprintf(text + used, sizeof text - used, "%s'%s'", i ? ", " : "",
                                     st->tensors[i].name);
        if (st->count > 4 && used < sizeof text) snprintf(text + used, sizeof text - used, ", ...");
        return vit_fail(err, VIT_ERR_INPUT,
                        "%s: no tensor named 'input' (the file has %s); --input needs the images "
                        "as 'input', shape (B, %d, %d, %d)",
                        path, text, c->channels, c->image_size, c->image_size);
    }
    if (e->ndim != 4 || e->shape[0] < 1 || e->shape[0] > MAX_IMAGES ||
        e->shape[1] != c->channels || e->shape[2] != c->image_size ||
        e->shape[3] != c->image_size)
        return vit_fail(err, VIT_ERR_INPUT,
                        "%s: tensor 'input' has shape %s, but the model in %s expects "
                        "(B, %d, %d, %d)%s", path,
                        tensor_shape_format(text, sizeof text, e->ndim, e->shape, NULL), weights,
                        c->channels, c->image_size, c->image_size,
                        e->ndim == 4 && e->shape[0] > MAX_IMAGES ? " with B at most 256" : "");
    return VIT_OK;
}

// The targets for a batch of B, each a class of the model: bad input when they
// do not fit what the files hold (B from --input, Y from --weights).
static VitStatus read_targets(TrainBatch *tb, const TrainArgs *a, const Vit *vit, VitError *err) {
    const int B = tb->batch, Y = vit->config.num_classes;
    int given[MAX_IMAGES], n;
    VitStatus s = parse_targets(given, &n, a->targets, err);
    if (s != VIT_OK) return s;
    if (n != 1 && n != B)
        return vit_fail(err, VIT_ERR_INPUT, "--target gives %d classes for the %d image%s in %s: "
                        "give one for every image, or one per image", n, B, B == 1 ? "" : "s",
                        a->input);
    for (int i = 0; i < n; i++)
        if (given[i] >= Y)
            return vit_fail(err, VIT_ERR_INPUT, "--target %d%s: the model in %s has Y = %d "
                            "classes, so a target must lie in [0, %d)", given[i],
                            n > 1 ? " (a target in the list)" : "", a->weights, Y, Y);
    tb->targets = vit_malloc(sizeof(int) * (size_t)B);
    for (int b = 0; b < B; b++) tb->targets[b] = given[n == 1 ? 0 : b];
    return VIT_OK;
}

/**
 * @brief Read a training command's batch and targets, after checking that
 *        they fit the model and that the run fits in memory.
 *
 * The batch is --input's tensor 'input' (B, C, S, S), whose shape is checked
 * from the header before a byte is read, or the IMAGE files, preprocessed as
 * `vit classify` does (grey for a model of 1 channel, RGB for 3). The memory
 * check counts the input, the forward's activations and what @p extra says
 * the command keeps besides.
 * @param[out] tb     the batch and targets; free with cli_train_batch_free()
 * @param[in] a       the parsed flags (cli_train_check_args() passed)
 * @param[in] vit     the model
 * @param[in] extra   what the command needs besides, for vit_check_batch()
 * @param[out] err    the message
 * @return VIT_OK, or VIT_ERR_INPUT naming the file or flag.
 */
VitStatus cli_train_batch(TrainBatch *tb, const TrainArgs *a, const Vit *vit,
                          const TrainExtra *extra, VitError *err) {
    memset(tb, 0, sizeof *tb);
    const VitConfig *c = &vit->config;
    SafeTensors st;
    bool open = false;
    VitStatus s = VIT_OK;
    if (a->input) {
        if ((s = st_open(&st, a->input, err)) != VIT_OK) return s;
        open = true;
        const StTensor *e = st_find(&st, "input");
        if ((s = check_input_shape(&st, e, a->input, vit, a->weights, err)) == VIT_OK)
            tb->batch = (int)e->shape[0];
    } else {
        tb->batch = a->n_images;
    }
    if (s == VIT_OK) s = read_targets(tb, a, vit, err);
    if (s == VIT_OK) s = vit_check_batch(c, tb->batch, extra->bytes(vit, tb->batch), extra->what, err);
    if (s == VIT_OK && open) s = st_read_tensor(&st, "input", &tb->images, err);
    if (open) st_close(&st);
    if (s == VIT_OK && !a->input) {
        Preprocess pre;
        s = cli_preprocess(&pre, &a->image, vit, err);
        if (s == VIT_OK) s = cli_load_images(&tb->images, a->images, a->n_images, &pre, err);
    }
    if (s != VIT_OK) cli_train_batch_free(tb);
    return s;
}

/**
 * @brief The start `vit grad` and `vit step` share, after their flags are
 *        checked: the model, at the input size asked for; @p out checked
 *        against every file read (never written over an input); then the
 *        batch and its targets, once there is room for the run (cli_train_batch()).
 * @param[out] vit, tb  the model and the batch: vit_free() and
 *                      cli_train_batch_free() them; on failure nothing is left
 * @param[in] out       the file the command will write, or NULL
 * @return VIT_OK, or the first failure's status (its message in @p err)
 */
VitStatus cli_train_open(Vit *vit, TrainBatch *tb, const TrainArgs *a, const char *out,
                         const TrainExtra *extra, VitError *err) {
    memset(tb, 0, sizeof *tb);
    VitStatus s = vit_build(vit, a->weights, err);
    if (s != VIT_OK) return s;
    CliInput inputs[3 + MAX_IMAGES];
    if ((s = cli_check_output(out, "--out", inputs, cli_train_inputs(inputs, a, vit), err)) ==
            VIT_OK &&
        (s = cli_apply_image_size(vit, &a->image, err)) == VIT_OK)
        s = cli_train_batch(tb, a, vit, extra, err);
    if (s != VIT_OK) vit_free(vit);
    return s;
}

/** @brief Free what cli_train_batch() read (safe on a zeroed one). */
void cli_train_batch_free(TrainBatch *tb) {
    tensor_free(&tb->images);
    free(tb->targets);
    memset(tb, 0, sizeof *tb);
}

/**
 * @brief Every file a training command reads, for cli_check_output().
 * @param[out] in  room for 3 + MAX_IMAGES entries
 * @return how many were filled
 */
int cli_train_inputs(CliInput *in, const TrainArgs *a, const Vit *vit) {
    int n = 0;
    in[n++] = (CliInput){a->weights, "--weights"};
    in[n++] = (CliInput){a->input, "--input"};
    in[n++] = (CliInput){vit->config_json, "the config.json beside --weights"};
    for (int i = 0; i < a->n_images; i++) in[n++] = (CliInput){a->images[i], "IMAGE"};
    return n;
}

/**
 * @brief Bytes one forward and backward pass needs beyond an inference pass's
 *        activations: what the forward keeps for the backward, the backward's
 *        buffers, and a gradient for every parameter.
 */
double cli_train_bytes(const Vit *vit, int B) {
    const VitConfig *c = &vit->config;
    return vit_training_bytes(c, B, VIT_KEEP_DEFAULT) - vit_activation_bytes(c, B) +
           (double)vit_param_count(c) * sizeof(float);
}

/**
 * @brief "3,1,4,1" (the targets of a batch), cut short with "..." if @p size is too small.
 * @return @p buf
 */
char *cli_train_targets_text(char *buf, size_t size, const TrainBatch *tb) {
    size_t used = 0;
    buf[0] = '\0';
    for (int b = 0; b < tb->batch && used < size; b++) {
        int n = snprintf(buf + used, size - used, "%s%d", b ? "," : "", tb->targets[b]);
        if (n < 0 || (size_t)n >= size - used) {
            if (size > 4) snprintf(buf + (used < size - 4 ? used : size - 4), 4, "...");
            break;
        }
        used += (size_t)n;
    }
    return buf;
}

/* --------------------------------------------------------------- grad */

static const char description[] =
    "Runs the model in --weights forward on a batch, measures how wrong it is about\n"
    "the --target class of each image (the cross-entropy loss, averaged over the\n"
    "batch, as PyTorch's F.cross_entropy), and runs backward to find, for every\n"
    "number in the model, how the loss changes when that number changes: its\n"
    "gradient. Training moves each parameter a little against its gradient (see\n"
    "`vit step`); this command saves the gradients, so they can be compared with\n"
    "PyTorch's autograd, tensor by tensor.\n"
    "\n"
    "--out receives, as float32 safetensors:\n"
    "  loss             a scalar: the mean loss over the batch, in nats\n"
    "  <parameter>      the gradient of every parameter, under its timm name and\n"
    "                   shape (blocks.0.attn.qkv.weight, ...); a Hugging Face\n"
    "                   checkpoint keeps q, k and v apart, and so do its gradients\n"
    "                   (blocks.0.attn.q.weight, ...)\n"
    "  grad.<stage>     the gradient of every stage of the forward pass, in the order\n"
    "                   the backward computes them: grad.logits first, grad.input last\n"
    "                   (the stages are those of `vit trace --help`)\n"
    "and in its __metadata__ the producer, the weights, the targets, the label\n"
    "smoothing, the loss and the model's sizes.\n"
    "\n"
    "The batch is either IMAGE files (PNG, JPEG, BMP, PPM/PGM), preprocessed as in\n"
    "`vit classify`, or --input: a safetensors file with one float tensor named\n"
    "'input' of shape (B, C, S, S), already normalised as the model expects.\n";

static const char examples[] =
    "  vit make-weights --arch vit-tiny --depth 2 --classes 10 --seed 1 --out tiny.safetensors\n"
    "  vit grad --weights tiny.safetensors cat.png --target 3 --out grads.safetensors\n"
    "  vit grad --weights tiny.safetensors --input x.safetensors --target 3,1,4,1 \\\n"
    "           --label-smoothing 0.1 --out grads.safetensors\n"
    "In PyTorch, the same numbers:\n"
    "  loss = F.cross_entropy(model(x), torch.tensor([3, 1, 4, 1]), label_smoothing=0.1)\n"
    "  loss.backward()   # then compare each p.grad with the file's tensor of p's name\n";

// Keeps the backward's `grad.` stages only: the forward's are `vit trace`'s business.
static void record_gradients(void *user, const char *name, const Tensor *t) {
    if (strncmp(name, "grad.", 5) == 0) trace_record(user, name, t);
}

// cli_train_bytes() and a copy of every stage's gradient (about a trace's worth).
static double grad_bytes(const Vit *vit, int B) {
    return cli_train_bytes(vit, B) + vit_trace_bytes(&vit->config, B);
}

// The file: the loss, the parameters' gradients (state_dict order), the stages' gradients.
static VitStatus write_gradients(const char *path, float loss, const VitGrads *g,
                                 const TraceRecorder *rec, const Vit *vit, const TrainArgs *a,
                                 const TrainBatch *tb, VitError *err) {
    const VitConfig *c = &vit->config;
    const struct {
        const char *key;
        int value;
    } sizes[] = {
        {"image_size", c->image_size}, {"patch_size", c->patch_size}, {"channels", c->channels},
        {"dim", c->dim}, {"depth", c->depth}, {"num_heads", c->heads}, {"mlp_dim", c->mlp_dim},
        {"num_classes", c->num_classes}, {"batch", tb->batch},
    };
    StWriter w = {0};
    char text[MAX_IMAGES * 12];
    st_writer_meta(&w, "format", "pt");
    st_writer_meta(&w, "producer", "vit grad");
    st_writer_meta(&w, "weights", a->weights);
    st_writer_meta(&w, "weights_names", vit->source);
    st_writer_meta(&w, "targets", cli_train_targets_text(text, sizeof text, tb));
    snprintf(text, sizeof text, "%g", (double)a->smoothing);
    st_writer_meta(&w, "label_smoothing", text);
    snprintf(text, sizeof text, "%.9g", (double)loss);
    st_writer_meta(&w, "loss", text);
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        snprintf(text, sizeof text, "%d", sizes[i].value);
        st_writer_meta(&w, sizes[i].key, text);
    }
    snprintf(text, sizeof text, "%g", (double)c->ln_eps);
    st_writer_meta(&w, "layer_norm_eps", text);

    Tensor loss_t = tensor_view(&loss, 0);
    st_writer_add(&w, "loss", &loss_t);
    const int n = vit_grad_weights_params(NULL, &g->weights, c);
    VitParam *params = vit_malloc(sizeof *params * (size_t)n);
    vit_grad_weights_params(params, &g->weights, c);
    Tensor *views = vit_malloc(sizeof *views * (size_t)n);
    for (int i = 0; i < n; i++) {
        views[i] = tensor_view_shape((float *)params[i].data, params[i].ndim, params[i].shape);
        st_writer_add(&w, params[i].name, &views[i]);
    }
    for (int i = 0; i < rec->count; i++) st_writer_add(&w, rec->entries[i].name, &rec->entries[i].t);
    VitStatus s = st_writer_save(&w, path, err);
    st_writer_free(&w);
    free(views);
    free(params);
    return s;
}

// The L2 norm of every parameter gradient together, as clip_grad_norm_ reports it.
static double gradient_norm(const VitGrads *g) {
    double sum = 0;
    for (size_t i = 0; i < g->floats; i++) sum += (double)g->memory[i] * g->memory[i];
    return sqrt(sum);
}

/**
 * @brief `vit grad`: parse → build → batch and targets → forward, loss, backward → write.
 * @param[in] self        this command's row of the command table
 * @param[in] argc, argv  its command line, argv[0] = "grad"
 * @param[out] err        the message on failure
 * @return the exit status: VIT_OK, VIT_ERR_INPUT or VIT_ERR_USAGE
 */
VitStatus cmd_grad(const VitCommand *self, int argc, char **argv, VitError *err) {
    TrainArgs a = {0};
    const char *out = NULL;
    CliOption options[] = {
        CLI_TRAIN_OPTIONS(&a),
        {"--out", CLI_STRING, &out, "FILE",
         "the safetensors file to write the loss and the gradients to", .required = true},
    };
    CliSpec spec = {.command = self, .description = description, .examples = examples,
                    .options = options, .option_count = sizeof options / sizeof options[0],
                    .positional = "[IMAGE...]", .max_positional = MAX_IMAGES,
                    .positionals = a.images};

    // 1. parse, and what can be checked without a file
    bool help;
    VitStatus s = cli_parse(&spec, argc, argv, &help, err);
    if (s != VIT_OK || help) return s;
    a.n_images = spec.positional_count;
    if ((s = cli_train_check_args(&a, "grad", err)) != VIT_OK) return s;
    cli_apply_threads(&spec, a.threads);

    // 2. the model, never writing over an input; the batch and its targets
    Vit vit;
    TrainBatch tb;
    const TrainExtra extra = {grad_bytes, "the backward pass, the gradients and a copy of "
                                          "every stage's gradient"};
    if ((s = cli_train_open(&vit, &tb, &a, out, &extra, err)) != VIT_OK) return s;

    // 3. forward, loss, backward: the parameters' gradients in grads, the stages' in rec
    VitGrads grads = {0};
    TraceRecorder rec = {0};
    float loss = NAN;
    double seconds = 0;
    if (s == VIT_OK) s = vit_train_prepare(&vit, VIT_KEEP_DEFAULT, tb.batch, err);
    if (s == VIT_OK) s = vit_grads_init(&grads, &vit, err);
    if (s == VIT_OK) {
        double t0 = vit_now();
        s = vit_forward_backward(&vit, &grads, &tb.images, tb.targets, a.smoothing, &loss,
                                 record_gradients, &rec, err);
        seconds = vit_now() - t0;
    }

    // 4. write, and say what was written
    if (s == VIT_OK) s = write_gradients(out, loss, &grads, &rec, &vit, &a, &tb, err);
    if (s == VIT_OK) {
        char path[1024], values[VIT_NUM_BUF];
        printf("%s: loss %.6f over %d image%s, gradient norm %.6g; %d parameter gradients "
               "(%s values) and %d stage gradients, in %.3f s\n",
               vit_escape(path, sizeof path, out), (double)loss, tb.batch,
               tb.batch == 1 ? "" : "s", gradient_norm(&grads), grads.count,
               vit_thousands(values, (long long)grads.floats), rec.count, seconds);
        // NaN gradients are still gradients (they show where NaN starts): warn, loudly
        VitError warning;
        if (!isfinite(loss) && vit_check_finite(&vit, &tb.images, &warning) != VIT_OK)
            vit_print_error("vit: warning", &warning);
        else if (!isfinite(loss))
            fprintf(stderr, "vit: warning: the loss is not finite\n");
    }
    trace_recorder_free(&rec);
    vit_grads_free(&grads);
    cli_train_batch_free(&tb);
    vit_free(&vit);
    return s;
}
