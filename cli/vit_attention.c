/**
 * @file vit_attention.c
 * @brief `vit attention`: where does the model look? A map over the image, as a PNG.
 *
 * The recipe: parse the flags → vit_build() the model → preprocess the image
 * → run the pass the map needs, recording only the attention probabilities
 * (and, for --grad, their gradients: rollout_record()) → compute the map (a
 * rollout, or one layer's [cls] row) → lay it over the image the model saw,
 * with a colour bar, and write the PNG (--out) and the numbers (--raw).
 */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fileio.h"
#include "io/labels.h"
#include "ops/ops.h"
#include "io/picture.h"
#include "explain/rollout.h"
#include "train/train.h" // ops_index_of_max()
#include "vit_cli.h"

/** Everything the command line can say. */
typedef struct {
    const char *weights, *out, *raw, *fuse_name, *labels;
    bool rollout, grid, grad;
    int layer, head, cls, threads;
    float discard, opacity;
    ImageArgs image;
    const char *images[1];
} AttentionArgs;

static const char description[] =
    "Draws where the [cls] token looks in IMAGE: a map over the patch grid, laid\n"
    "over the image as the model saw it (after preprocessing), with a colour bar\n"
    "from 0 to the map's largest value (or to 1/N, if that is larger) and a tick\n"
    "at 1/N, the share each of the N tokens would get if attention were uniform.\n"
    "It also prints the predicted class and where the map's mass lies.\n"
    "\n"
    "The map is one of:\n"
    "  --rollout (default)  attention rollout: each layer's heads fused (--fuse),\n"
    "                       the lowest --discard of its entries set to 0, the\n"
    "                       identity added for the residual connection, rows\n"
    "                       normalised, multiplied through the layers; the map is\n"
    "                       the [cls] row of the product over the patches\n"
    "  --grad               the same, each layer's heads replaced by the mean over\n"
    "                       heads of max(0, attention × its gradient) for the score\n"
    "                       of --class (default: the predicted class)\n"
    "  --layer L            layer L's own attention from [cls] to each patch, for\n"
    "                       --head H, or the heads fused by --fuse\n"
    "  --grid               every layer's and head's [cls] attention in one picture:\n"
    "                       a row per layer, a column per head and one for their mean,\n"
    "                       on one colour scale\n"
    "Layers and heads count from 0. An attention map shows where information flows,\n"
    "not what the prediction depends on: chapter 12 measures the difference.\n";

static const char examples[] =
    "  vit attention --weights data/models/vit-fashion.safetensors \\\n"
    "                data/images/fashion-mnist/0000-ankle-boot.png --out rollout.png\n"
    "  vit attention --weights W IMAGE --layer 5 --head 2 --out l5h2.png\n"
    "  vit attention --weights W IMAGE --grad --class 9 --discard 0.9 --out grad.png\n"
    "  vit attention --weights W IMAGE --grid --out heads.png --raw heads.safetensors\n";

/* ------------------------------------------------------------ the maps */

/** One map over the patch grid, and what it is. */
typedef struct {
    float *values;    // (rows, cols)
    int rows, cols;
    char title[128];  // e.g. "rollout, heads fused by mean, discard 0"
} Map;

// Layer l's [cls] row over the patches for image 0: head h, or the heads fused (h < 0).
static void layer_map(float *out, const Tensor *probs, int h, HeadFuse fuse) {
    // probs is (1, H, N, N); out is (N − 1)
    const int H = probs->shape[1], N = probs->shape[2];
    float *row = vit_malloc(sizeof(float) * (size_t)N);
    attention_cls_row(row, probs->data, H, N, h, fuse);
    memcpy(out, row + 1, sizeof(float) * (size_t)(N - 1));
    free(row);
}

static const Tensor *probs_of(const TraceRecorder *fwd, int l) {
    char name[64];
    snprintf(name, sizeof name, "blocks.%d.attn.probs", l);
    return trace_find(fwd, name);
}

/* --------------------------------------------------------------- drawing */

enum { MARGIN = 10, BAR_W = 12, BAR_GAP = 12, LABELS_W = 56 };

static const Rgb ink = {0, 0, 0};

// Picture pixels per image pixel: the image about `target` pixels wide.
static int scale_for(int side, int target) { return side >= target ? 1 : (target + side - 1) / side; }

static float max_of(const float *x, size_t n) {
    float m = 0;
    for (size_t i = 0; i < n; i++)
        if (x[i] > m) m = x[i];
    return m;
}

// One map over the image, two lines of title above, a colour bar beside.
static Image draw_single(const Image *img, const Map *m, const char *caption, float uniform,
                         float opacity) {
    const int scale = scale_for(img->width, 224), side = img->width * scale;
    const int th = picture_text_height(1), top = MARGIN + 2 * th + 6;
    const int width = MARGIN + side + BAR_GAP + BAR_W + LABELS_W + MARGIN;
    int text_w = MARGIN + picture_text_width(m->title, 1) + MARGIN;
    if (MARGIN + picture_text_width(caption, 1) + MARGIN > text_w)
        text_w = MARGIN + picture_text_width(caption, 1) + MARGIN;
    Image pic = picture_new(width > text_w ? width : text_w, top + side + MARGIN);
    picture_text(&pic, MARGIN, MARGIN, 1, m->title, ink);
    picture_text(&pic, MARGIN, MARGIN + th + 2, 1, caption, ink);
    // the scale reaches the uniform level at least, so a map below it looks dim
    const float hi = fmaxf(max_of(m->values, (size_t)m->rows * m->cols), uniform);
    const Overlay o = {MARGIN, top, scale, 0, hi, opacity};
    picture_overlay(&pic, &o, img, m->values, m->rows, m->cols);
    picture_colour_bar(&pic, MARGIN + side + BAR_GAP, top, BAR_W, side, 0, o.hi, uniform, "1/N");
    return pic;
}

// Every layer × head (and the heads' mean) as a grid of small maps, one colour scale.
static Image draw_grid(const Image *img, const float *maps, int L, int H, int rows, int cols,
                       const char *caption, float uniform, float opacity) {
    // maps is (L, H + 1, rows, cols): column H holds the mean of the heads
    const int scale = scale_for(img->width, 96), cell = img->width * scale, gap = 6;
    const int th = picture_text_height(1), label_w = 56, top = MARGIN + 2 * th + 8 + th + 4;
    const int grid_w = (H + 1) * (cell + gap), grid_h = L * (cell + gap);
    Image pic = picture_new(MARGIN + label_w + grid_w + BAR_GAP + BAR_W + LABELS_W + MARGIN,
                            top + grid_h + MARGIN);
    picture_text(&pic, MARGIN, MARGIN, 1, "[cls] attention to each patch: layers x heads", ink);
    picture_text(&pic, MARGIN, MARGIN + th + 2, 1, caption, ink);
    const size_t per = (size_t)rows * cols;
    const float hi = fmaxf(max_of(maps, (size_t)L * (H + 1) * per), uniform);
    char label[32];
    for (int h = 0; h <= H; h++) {
        if (h < H) snprintf(label, sizeof label, "head %d", h);
        else snprintf(label, sizeof label, "mean");
        picture_text(&pic, MARGIN + label_w + h * (cell + gap), top - th - 2, 1, label, ink);
    }
    for (int l = 0; l < L; l++) {
        snprintf(label, sizeof label, "layer %d", l);
        const int y = top + l * (cell + gap);
        picture_text(&pic, MARGIN, y + cell / 2 - th / 2, 1, label, ink);
        for (int h = 0; h <= H; h++) {
            const Overlay o = {MARGIN + label_w + h * (cell + gap), y, scale, 0, hi, opacity};
            picture_overlay(&pic, &o, img, maps + ((size_t)l * (H + 1) + h) * per, rows, cols);
        }
    }
    picture_colour_bar(&pic, MARGIN + label_w + grid_w + BAR_GAP, top, BAR_W, grid_h - gap, 0,
                       hi, uniform, "1/N");
    return pic;
}

/* --------------------------------------------------------------- writing */

static VitStatus write_raw(const char *path, const AttentionArgs *a, const Tensor *map,
                           const Tensor *joint, const char *title, int cls, VitError *err) {
    StWriter w = {0};
    st_writer_meta(&w, "format", "pt");
    st_writer_meta(&w, "producer", "vit attention");
    st_writer_meta(&w, "map", title);
    st_writer_meta(&w, "image", a->images[0]);
    char c[16];
    snprintf(c, sizeof c, "%d", cls);
    st_writer_meta(&w, "class", c);
    st_writer_add(&w, a->grid ? "maps" : "map", map);
    if (joint) st_writer_add(&w, "joint", joint);
    VitStatus s = st_writer_save(&w, path, err);
    st_writer_free(&w);
    return s;
}

// What the map says in numbers: its total, its peak and where, against uniform.
static void print_summary(const Map *m, float cls_self, float uniform) {
    const size_t n = (size_t)m->rows * m->cols;
    double total = 0;
    size_t peak = 0;
    for (size_t i = 0; i < n; i++) {
        total += m->values[i];
        if (m->values[i] > m->values[peak]) peak = i;
    }
    printf("  %s\n", m->title);
    if (!isnan(cls_self))
        printf("  [cls] row: %.4f on the %zu patches, %.4f on [cls] itself\n", total, n,
               (double)cls_self);
    else printf("  the %zu patches hold %.4f of [cls]'s attention\n", n, total);
    printf("  largest: token %zu, the patch at row %zu, column %zu: %.6f, %.2f× the uniform "
           "1/N = %.6f\n", peak + 1, peak / (size_t)m->cols, peak % (size_t)m->cols,
           (double)m->values[peak], (double)(m->values[peak] / uniform), (double)uniform);
}

/* ---------------------------------------------------------------- command */

static VitStatus check_args(const AttentionArgs *a, const CliSpec *spec, VitError *err) {
    const bool layer = cli_given(spec, "--layer");
    if (!a->out && !a->raw)
        return vit_fail(err, VIT_ERR_USAGE, "'vit attention' needs --out FILE.png, --raw "
                        "FILE.safetensors or both (see 'vit attention --help')");
    // --raw is written after --out: were they one file (x.png and ./x.png, or a
    // link to the other), the numbers would silently replace the picture
    const CliInput outputs[2] = {{a->out, "--out"}, {a->raw, "--raw"}};
    VitStatus s = cli_check_distinct_outputs(outputs, 2, err);
    if (s != VIT_OK) return s;
    if (layer + a->rollout + a->grid > 1)
        return vit_fail(err, VIT_ERR_USAGE, "--rollout, --layer and --grid each draw another "
                        "map: give one");
    if (cli_given(spec, "--head") && !layer)
        return vit_fail(err, VIT_ERR_USAGE, "--head picks one head of --layer L's attention "
                        "(a rollout fuses the heads: --fuse)");
    if (cli_given(spec, "--head") && cli_given(spec, "--fuse"))
        return vit_fail(err, VIT_ERR_USAGE, "--head and --fuse both say what to do with the "
                        "heads: give one");
    if ((a->grad || cli_given(spec, "--discard")) && (layer || a->grid))
        return vit_fail(err, VIT_ERR_USAGE, "--%s belongs to the rollout, not to %s",
                        a->grad ? "grad" : "discard", layer ? "--layer" : "--grid");
    if (cli_given(spec, "--class") && !a->grad)
        return vit_fail(err, VIT_ERR_USAGE, "--class chooses the class of --grad's gradient: "
                        "add --grad");
    if (a->grad && cli_given(spec, "--fuse"))
        return vit_fail(err, VIT_ERR_USAGE, "--grad fuses the heads by their gradient-weighted "
                        "mean: --fuse does not apply");
    return VIT_OK;
}

/** What one run of the command holds, from the model to the picture. */
typedef struct {
    Vit vit;
    HeadFuse fuse;
    Preprocess pre;
    Labels labels;
    Tensor input;      // (1, C, S, S) the image as the model sees it
    TraceRecorder fwd; // the attention probabilities of every layer
    TraceRecorder bwd; // --grad: their gradients
    int cls;           // the class of the gradients (--grad)
    Map m;             // the one map, (side, side), and its title
    float *grid;       // --grid: (L, H + 1, side, side) every head's map and the mean
    Tensor joint;      // the rollout's (N, N) product
    Tensor raw;        // what --raw writes: a view of m.values or of grid
    float cls_self;    // [cls]'s attention to itself, where the map has one
    Image seen, pic;   // the image as seen, and the picture drawn over it
} AttentionRun;

static void attention_run_free(AttentionRun *r) {
    if (r->pic.pixels) image_free(&r->pic);
    if (r->seen.pixels) image_free(&r->seen);
    free(r->grid);
    free(r->m.values);
    tensor_free(&r->joint);
    trace_recorder_free(&r->fwd);
    trace_recorder_free(&r->bwd);
    tensor_free(&r->input);
    labels_free(&r->labels);
    vit_free(&r->vit);
}

// The flags that depend on the model (layer, head and class in range), and the
// files to write: never over an input, and each writable before the pass (a
// folder that is not there, or a link to nothing that --out could bring to
// life before --raw follows it).
static VitStatus check_against_model(AttentionRun *r, const AttentionArgs *a, const CliSpec *spec,
                                     VitError *err) {
    const VitConfig *c = &r->vit.config;
    r->fuse = FUSE_MEAN;
    if (a->fuse_name && !head_fuse_parse(a->fuse_name, &r->fuse))
        return vit_fail(err, VIT_ERR_USAGE, "--fuse: '%s' is not mean, max or min", a->fuse_name);
    if (cli_given(spec, "--layer") && a->layer >= c->depth)
        return vit_fail(err, VIT_ERR_USAGE, "--layer %d: %s has layers 0 to %d", a->layer,
                        a->weights, c->depth - 1);
    if (cli_given(spec, "--head") && a->head >= c->heads)
        return vit_fail(err, VIT_ERR_USAGE, "--head %d: %s has heads 0 to %d", a->head,
                        a->weights, c->heads - 1);
    if (a->grad && cli_given(spec, "--class") && a->cls >= c->num_classes)
        return vit_fail(err, VIT_ERR_USAGE, "--class %d: %s has classes 0 to %d", a->cls,
                        a->weights, c->num_classes - 1);
    CliInput inputs[4] = {{a->weights, "--weights"}, {a->images[0], "IMAGE"},
                          {a->labels, "--labels"}, {r->vit.config_json, "config.json"}};
    VitStatus s = cli_check_output(a->out, "--out", inputs, 4, err);
    if (s == VIT_OK) s = cli_check_output(a->raw, "--raw", inputs, 4, err);
    if (s == VIT_OK && a->out) s = outfile_check(a->out, err);
    if (s == VIT_OK && a->raw) s = outfile_check(a->raw, err);
    return s;
}

// The image at the model's input size, the class names, then the pass:
// probabilities (and their gradients for --grad), nothing else kept.
static VitStatus read_and_pass(AttentionRun *r, AttentionArgs *a, const CliSpec *spec,
                               VitError *err) {
    VitStatus s = cli_apply_image_size(&r->vit, &a->image, err);
    if (s == VIT_OK) s = cli_preprocess(&r->pre, &a->image, &r->vit, err);
    if (s == VIT_OK)
        s = labels_for_weights(&r->labels, a->labels, r->vit.config_json, &r->vit.file,
                               r->vit.config.num_classes, err);
    if (s == VIT_OK) s = cli_load_images(&r->input, a->images, 1, &r->pre, err);
    const int wanted = a->cls;
    r->cls = -1;
    if (s == VIT_OK)
        s = rollout_record(&r->vit, &r->input,
                           a->grad && cli_given(spec, "--class") ? &wanted : NULL, &r->cls,
                           &r->fwd, a->grad ? &r->bwd : NULL, err);
    if (s == VIT_OK) s = vit_check_finite(&r->vit, &r->input, err);
    return s;
}

// --grid: every layer's and head's [cls] row, and each layer's mean.
static void grid_maps(AttentionRun *r, int side) {
    const VitConfig *c = &r->vit.config;
    const int L = c->depth, H = c->heads, P = side * side;
    r->grid = vit_malloc(sizeof(float) * (size_t)L * (H + 1) * P);
    for (int l = 0; l < L; l++)
        for (int h = 0; h <= H; h++)
            layer_map(r->grid + ((size_t)l * (H + 1) + h) * P, probs_of(&r->fwd, l),
                      h < H ? h : -1, FUSE_MEAN);
    r->raw = tensor_view(r->grid, 4, L, H + 1, side, side);
    snprintf(r->m.title, sizeof r->m.title, "[cls] attention, %d layers x %d heads and their mean",
             L, H);
}

// --layer L: that layer's [cls] row, for one head or the heads fused.
static void layer_maps(AttentionRun *r, const AttentionArgs *a, const CliSpec *spec, int side) {
    const int N = side * side + 1;
    r->m.values = vit_malloc(sizeof(float) * (size_t)(N - 1));
    const Tensor *p = probs_of(&r->fwd, a->layer);
    const bool one_head = cli_given(spec, "--head");
    layer_map(r->m.values, p, one_head ? a->head : -1, r->fuse);
    if (one_head) {
        r->cls_self = p->data[(size_t)a->head * N * N]; // head h's row 0, column 0
        snprintf(r->m.title, sizeof r->m.title, "layer %d, head %d: [cls] attention", a->layer,
                 a->head);
    } else {
        snprintf(r->m.title, sizeof r->m.title, "layer %d: [cls] attention, heads fused by %s",
                 a->layer, head_fuse_name(r->fuse));
    }
}

// The rollout (gradient-weighted for --grad): the [cls] row of the product over the patches.
static VitStatus rollout_maps(AttentionRun *r, const AttentionArgs *a, int side, VitError *err) {
    const RolloutOptions o = {r->fuse, a->discard};
    VitStatus s = rollout_from_trace(&r->joint, &r->fwd, a->grad ? &r->bwd : NULL,
                                     r->vit.config.depth, 0, &o, err);
    if (s != VIT_OK) return s;
    const int P = side * side;
    r->m.values = vit_malloc(sizeof(float) * (size_t)P);
    memcpy(r->m.values, r->joint.data + 1, sizeof(float) * (size_t)P); // row 0, columns 1..P
    r->cls_self = r->joint.data[0];
    if (a->grad)
        snprintf(r->m.title, sizeof r->m.title, "gradient-weighted rollout for class %d, "
                 "discard %g", r->cls, (double)a->discard);
    else
        snprintf(r->m.title, sizeof r->m.title, "rollout, heads fused by %s, discard %g",
                 head_fuse_name(r->fuse), (double)a->discard);
    return VIT_OK;
}

// What the model predicted, printed, and the picture drawn. Every file name
// printed goes through vit_escape(): a name may hold escape sequences or a
// newline, and each such byte becomes at most four characters ("\x1b"), so a
// path of PATH_MAX bytes fits whole.
static void predict_and_draw(AttentionRun *r, const AttentionArgs *a, int side) {
    const VitConfig *c = &r->vit.config;
    const float uniform = 1.0f / (float)(side * side + 1);
    const Tensor logits = vit_logits(&r->vit);
    float *prob = vit_malloc(sizeof(float) * (size_t)c->num_classes);
    softmax(prob, logits.data, 1, c->num_classes);
    const int pred = ops_index_of_max(prob, c->num_classes);
    const char *name = labels_name(&r->labels, pred);
    char caption[192], safe[128], shown[4 * PATH_MAX];
    snprintf(caption, sizeof caption, "predicted: %s (%.1f%%)",
             name ? vit_escape(safe, sizeof safe, name) : "?", 100.0 * prob[pred]);
    printf("%s: %s\n", vit_escape(shown, sizeof shown, a->images[0]), caption);
    free(prob);
    if (!a->grid) print_summary(&r->m, r->cls_self, uniform);
    else printf("  %s\n", r->m.title);
    r->seen = picture_from_input(r->input.data, c->channels, c->image_size, r->pre.mean,
                                 r->pre.std);
    r->pic = a->grid ? draw_grid(&r->seen, r->grid, c->depth, c->heads, side, side, caption,
                                 uniform, a->opacity)
                     : draw_single(&r->seen, &r->m, caption, uniform, a->opacity);
}

// --out (the PNG) and --raw (the numbers), each said when written.
static VitStatus write_files(const AttentionRun *r, const AttentionArgs *a, VitError *err) {
    char shown[4 * PATH_MAX];
    VitStatus s = VIT_OK;
    if (a->out && (s = picture_write_png(&r->pic, a->out, err)) == VIT_OK)
        printf("  wrote %s (%d×%d)\n", vit_escape(shown, sizeof shown, a->out), r->pic.width,
               r->pic.height);
    if (s == VIT_OK && a->raw &&
        (s = write_raw(a->raw, a, &r->raw, r->joint.data ? &r->joint : NULL, r->m.title, r->cls,
                       err)) == VIT_OK)
        printf("  wrote %s\n", vit_escape(shown, sizeof shown, a->raw));
    return s;
}

/** The model → its checks → the pass → the map → the prediction and picture → the files. */
static VitStatus draw_attention(AttentionArgs *a, const CliSpec *spec, VitError *err) {
    AttentionRun r = {.cls_self = NAN, .cls = -1};
    VitStatus s = vit_build(&r.vit, a->weights, err);
    if (s != VIT_OK) return s;
    if ((s = check_against_model(&r, a, spec, err)) == VIT_OK)
        s = read_and_pass(&r, a, spec, err);
    // patches a side, at the input size the image was read at (--image-size may change it)
    const int side = r.vit.config.image_size / r.vit.config.patch_size;
    if (s == VIT_OK && a->grid) grid_maps(&r, side);
    else if (s == VIT_OK && cli_given(spec, "--layer")) layer_maps(&r, a, spec, side);
    else if (s == VIT_OK) s = rollout_maps(&r, a, side, err);
    r.m.rows = r.m.cols = side;
    if (s == VIT_OK && !a->grid) r.raw = tensor_view(r.m.values, 2, side, side);
    if (s == VIT_OK) predict_and_draw(&r, a, side);
    if (s == VIT_OK) s = write_files(&r, a, err);
    attention_run_free(&r);
    return s;
}

/**
 * @brief `vit attention`: parse → build → one recorded pass → the map → PNG and numbers.
 * @param[in] self        this command's row of the command table
 * @param[in] argc, argv  its command line, argv[0] = "attention"
 * @param[out] err        the message on failure
 * @return the exit status: VIT_OK, VIT_ERR_INPUT or VIT_ERR_USAGE
 */
VitStatus cmd_attention(const VitCommand *self, int argc, char **argv, VitError *err) {
    AttentionArgs a = {.opacity = 0.6f};
    CliOption options[] = {
        {"--weights", CLI_STRING, &a.weights, "FILE", "the model", .required = true},
        {"--out", CLI_STRING, &a.out, "FILE", "write the picture here (PNG)", .required = false},
        {"--raw", CLI_STRING, &a.raw, "FILE",
         "write the map's numbers here (safetensors: 'map' (rows, cols), or 'maps' (L, H + 1, "
         "rows, cols) for --grid, and the rollout's 'joint' (N, N))", .required = false},
        {"--rollout", CLI_FLAG, &a.rollout, "", "attention rollout through every layer (the default)", .required = false},
        {"--layer", CLI_INT, &a.layer, "L", "one layer's own [cls] attention", .lo = 0, .hi = 4096, .required = false},
        {"--head", CLI_INT, &a.head, "H", "with --layer: one head, not their fusion", .lo = 0,
         .hi = 4096, .required = false},
        {"--fuse", CLI_STRING, &a.fuse_name, "mean|max|min",
         "how a layer's heads become one map (default mean)", .required = false},
        {"--discard", CLI_FLOAT, &a.discard, "R",
         "rollout: set the lowest fraction R of each layer's fused entries to 0 ([cls] to itself "
         "kept)", .show_default = true, .lo = 0,
         // the bound as a float, as the value is parsed: 0.999 itself rounds up to
         // 0.99900001 and would be refused by its own range
         .hi = (double)0.999f, .required = false},
        {"--grad", CLI_FLAG, &a.grad, "",
         "rollout of the attention weighted by its gradient for --class", .required = false},
        {"--class", CLI_INT, &a.cls, "C", "with --grad: the class whose score is differentiated "
         "(default: the predicted one)", .lo = 0, .hi = 1000000, .required = false},
        {"--grid", CLI_FLAG, &a.grid, "", "every layer's and head's [cls] attention in one picture", .required = false},
        {"--opacity", CLI_FLOAT, &a.opacity, "A",
         "how much the map covers the image: 0 only the image, 1 only the map",
         .show_default = true, .lo = 0, .hi = 1, .required = false},
        {"--labels", CLI_STRING, &a.labels, "FILE", "class names, one per line, in class order", .required = false},
        CLI_IMAGE_OPTIONS(&a.image),
        CLI_OPTION_THREADS(&a.threads),
    };
    CliSpec spec = {.command = self, .description = description, .examples = examples,
                    .options = options, .option_count = sizeof options / sizeof options[0],
                    .positional = "IMAGE", .max_positional = 1, .positionals = a.images};
    bool help;
    VitStatus s = cli_parse(&spec, argc, argv, &help, err);
    if (s != VIT_OK || help) return s;
    if (spec.positional_count != 1)
        return vit_fail(err, VIT_ERR_USAGE,
                        "'vit attention' needs one IMAGE (see 'vit attention --help')");
    if ((s = check_args(&a, &spec, err)) != VIT_OK) return s;
    cli_apply_threads(&spec, a.threads);
    return draw_attention(&a, &spec, err);
}
