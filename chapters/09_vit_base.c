/**
 * @file 09_vit_base.c
 * @brief Chapter 09 · ViT-Base/16: the whole model, stage by stage.
 *
 * Everything from chapters 01–08, assembled as timm's `vit_base_patch16_224`:
 * \f[ z_0 = [x_{cls}; x_p W_E] + E_{pos},\qquad
 *     z_\ell = \mathrm{Block}_\ell(z_{\ell-1}),\ \ell = 1 \ldots L,\qquad
 *     \text{logits} = \mathrm{LN}(z_L)_0\, W_{head}^\top + b_{head} . \f]
 * The chapter builds ViT-Base with deterministic random weights
 * (vit_build_random(), one initialisation rule for every weight), runs it on a
 * generated image, prints the seven steps of vit_forward()'s recipe as the
 * trace hands them over, a table of each stage's shape, parameters, FLOPs and
 * time, the residual stream and the [cls] row through the twelve blocks, and
 * the top-5 classes.
 *
 * Every number printed is pinned by name and checked against PyTorch
 * (tools/ref_vit.py on the same weights) by tests/test_ch09_vit_base.c,
 * except the timings and the thread count, which depend on the machine and
 * are printed only. The stopwatch is lib/model/trace_timing.h; the table and the
 * listener that measures the stream are plumbing, at the end of this file.
 *
 * Run: `build/chapters/09_vit_base`
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "teach/chapter.h"
#include "chapters.h"
#include "ops/ops.h"
#include "model/trace_timing.h"
#include "base/rng.h"
#include "model/trace_stages.h"
#include "base/tensor.h"
#include "base/trace.h"
#include "base/util.h"
#include "model/vit.h"

enum {
    B = 1,      // one image
    TOP = 5,    // classes listed at the end
    MAX_DEPTH = 12,
    STEPS = 7,  // the steps of vit_forward()'s recipe
};
static const uint64_t WEIGHT_SEED = 9;  // the same ViT-Base as chapter 08
static const uint64_t IMAGE_SEED = 99;  // the input pixels

// The seven steps of vit_forward() (lib/model/forward.c), each with the stage it hands
// to the trace and the line of timm's VisionTransformer.forward it is.
static const struct {
    const char *stage, *timm;
} RECIPE[STEPS] = {
    {"patch_embed", "x = self.patch_embed(x)"},
    {"tokens", "x = torch.cat((cls_token, x), dim=1)"},
    {"embed", "x = x + self.pos_embed"},
    {"out", "x = self.blocks(x)"},
    {"norm", "x = self.norm(x)"},
    {"pre_logits", "x = x[:, 0]"},
    {"logits", "x = self.head(x)"},
};

/* ------------------------------------------------------------ the work */

// What the listener measures on the residual stream as vit_forward() runs.
typedef struct {
    const VitConfig *cfg;
    int count, per_block;           // tensors handed over; of those, block 0's
    int ndim[STEPS], shape[STEPS][4]; // the shape each recipe step handed over
    char last_out[32];              // the name of step 4's tensor, "blocks.11.out"
    float *prev;                    // (N, D) copy of the stream entering the current block
    float embed_std, embed_cls;     // std of embed, length of its [cls] row
    float std[MAX_DEPTH], cls[MAX_DEPTH]; // the same after each block
    float cls_attn[MAX_DEPTH], cls_mlp[MAX_DEPTH]; // what attention and the MLP add to [cls]
    float cos[MAX_DEPTH];           // mean cos θ between each block's input and output rows
    float cls_cos[MAX_DEPTH];       // cos θ of the [cls] row
} Watch;

typedef struct {
    Vit vit;
    const VitConfig *cfg;
    Tensor image;       // (1, C, S, S)
    Watch watch;        // the stream, as the listener saw it
    StageClock clock;   // time per stage (lib/model/trace_timing.h)
    double build_seconds, forward_seconds;
    float gflop;        // total work of one forward pass (pinned as gflop.total)
} Work;

// Totals of the stage table, by kind of stage.
typedef struct {
    int64_t params;
    double flops, ms;
    double matmul_flops, matmul_ms; // stages with a weight matrix
    double nn_flops, nn_ms;         // the two N × N products of attention
} StageTotals;

static void watch_stream(void *user, const char *name, const Tensor *t);
static void stage_table(Chapter *ch, Work *w, StageTotals *tot);

/* ----------------------------------------------------------- sections */

static void configuration(Chapter *ch, const VitConfig *c) {
    if (!ch_section(ch, "1. The configuration")) return;
    ch_say(ch, "vit_config_for_arch(\"vit-base\") gives the sizes of "
               "vit_base_patch16_224, the model of the original ViT paper:");
    const struct {
        const char *symbol, *what, *pin;
        int value;
    } sizes[] = {
        {"S", "image side, pixels", "image_size", c->image_size},
        {"p", "patch side, pixels", "patch_size", c->patch_size},
        {"P", "patches, (S/p)²", "patches", vit_num_patches(c)},
        {"N", "tokens, P + 1", "tokens", vit_num_tokens(c)},
        {"D", "width of every token", "dim", c->dim},
        {"L", "encoder blocks", "depth", c->depth},
        {"H", "attention heads", "heads", c->heads},
        {"Dh", "width per head, D/H", "head_dim", c->dim / c->heads},
        {"M", "MLP width, 4·D", "mlp_dim", c->mlp_dim},
        {"Y", "classes (ImageNet-1k)", "classes", c->num_classes},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        ch_line(ch, "    %-3s %5d   %s", sizes[i].symbol,
                (int)ch_valuef(ch, (float)sizes[i].value, "config.%s", sizes[i].pin),
                sizes[i].what);
    ch_line(ch, "%s", "");
    char count[VIT_NUM_BUF], bytes[VIT_NUM_BUF];
    // [param_count]
    int64_t params = vit_param_count(c);
    // [param_count]
    ch_value(ch, "param_count", (float)params);
    ch_say(ch, "Those sizes fix the number of parameters, vit_param_count(): %s. "
               "Stored as float32 that is %s bytes, about %.0f MB.",
           vit_thousands(count, params), vit_thousands(bytes, 4 * params),
           ch_value(ch, "param_megabytes", 4.0f * (float)params / 1e6f));
}

static void build(Chapter *ch, Work *w) {
    if (!ch_section(ch, "2. Building it")) return;
    VitConfig cfg;
    VitError err;
    vit_config_for_arch(&cfg, "vit-base", NULL);
    const int fan_in = cfg.channels * cfg.patch_size * cfg.patch_size;
    ch_say(ch, "vit_build_random() allocates the parameters and draws them all by one "
               "rule: every weight (the patch projection, the [cls] token, the position "
               "table and every linear layer) from a normal distribution with std 0.02, "
               "cut at ±2, so far out in the tails that the cut never happens; "
               "every bias 0; every LayerNorm γ = 1 and β = 0. One rule, so that it is "
               "easy to reproduce: each tensor draws from its own PCG32 stream "
               "(lib/base/rng.h), seeded by its place in the model, so the model is the "
               "same on every machine and with any number of threads, and "
               "tools/vitrng.py draws the same numbers in Python. The tests go one "
               "step further: PyTorch loads the file that `vit make-weights --arch "
               "vit-base --seed %d` writes and computes every pinned number from it.",
           (int)WEIGHT_SEED);
    ch_say(ch, "vit_init_timm() is named after timm because the rule is timm's rule "
               "for linear layers. The timm library itself departs from it in two "
               "places: it draws "
               "the [cls] token from a normal with std 1e-6, so that [cls] starts as "
               "almost nothing (the positions it draws as here, trunc-normal with std "
               "0.02), and it leaves the patch convolution at PyTorch's default, "
               "uniform in ±1/√(C·p·p) = ±%.4f, a std of %.4f, with a bias uniform in "
               "the same range. With random weights that changes the numbers below, "
               "not the lesson.",
           ch_value(ch, "timm_patch_bound", 1.0f / sqrtf((float)fan_in)),
           ch_value(ch, "timm_patch_std", 1.0f / sqrtf(3.0f * (float)fan_in)));
    double t0 = vit_now();
    // [build]
    VitInit init = vit_init_timm(WEIGHT_SEED); // std 0.02, biases 0, LayerNorms 1 and 0
    VitStatus status = vit_build_random(&w->vit, &cfg, &init, &err);
    // [build]
    w->build_seconds = vit_now() - t0;
    if (status != VIT_OK) {
        ch_verdict(ch, "cannot build ViT-Base: %s", err.msg);
        return;
    }
    w->cfg = &w->vit.config;
    ch_say(ch, "How long drawing 86 million numbers takes depends on the machine and "
               "varies from run to run; this run uses %d threads (%s):",
           vit_get_threads(), vit_build_info());
    ch_line(ch, "    vit_build_random(): %.2f s", w->build_seconds);
    ch_line(ch, "%s", "");
    ch_say(ch, "Trained weights are loaded from a file instead, with vit_build(); "
               "`build/vit classify` does that for a real photo (see the README).");
}

static void recipe(Chapter *ch, Work *w) {
    if (!ch_section(ch, "3. The recipe: vit_forward()")) return;
    const VitConfig *c = w->cfg;
    ch_say(ch, "The input is an image of random pixels, uniform in [-1, 1) (already "
               "normalised). With random weights the content does not matter; a real "
               "photo goes with real weights. vit_forward() (lib/model/forward.c) is written as "
               "a recipe of seven steps, each commented with the line of timm's "
               "VisionTransformer.forward it is, and it hands the result of every "
               "stage to a trace callback. Ours is a stopwatch (lib/model/trace_timing.h) that "
               "passes each stage on to watch_stream(), which measures the stream.");
    w->image = tensor_new(4, B, c->channels, c->image_size, c->image_size);
    Rng rng;
    rng_seed(&rng, IMAGE_SEED);
    rng_fill_uniform(&rng, w->image.data, w->image.numel, -1.0f, 1.0f);
    w->watch = (Watch){.cfg = c, .prev = vit_malloc(sizeof(float) * vit_num_tokens(c) * c->dim)};
    VitError err;
    double t0 = vit_now();
    // [forward]
    stage_clock_start(&w->clock, watch_stream, &w->watch); // time each stage, then watch it
    VitStatus status = vit_forward(&w->vit, &w->image, stage_clock_trace, &w->clock, &err);
    // [forward]
    w->forward_seconds = vit_now() - t0;
    if (status != VIT_OK) {
        ch_verdict(ch, "the forward pass failed: %s", err.msg);
        return;
    }
    const Watch *s = &w->watch;
    const int count = (int)ch_value(ch, "trace_count", (float)s->count);
    const int each = (int)ch_value(ch, "trace_count.per_block", (float)s->per_block);
    ch_say(ch, "It handed over %d tensors: %d from each of the %d blocks and %d around "
               "them. The seven steps, with what each handed over:", count, each,
           c->depth, (int)ch_value(ch, "trace_count.outside", (float)(count - c->depth * each)));
    ch_line(ch, "    step  stage           shape              timm");
    for (int i = 0; i < STEPS; i++) {
        char key[64], shape_text[48] = "(";
        float dims[4];
        for (int d = 0; d < s->ndim[i]; d++) {
            char part[16];
            snprintf(part, sizeof part, "%s%d", d ? ", " : "", s->shape[i][d]);
            strcat(shape_text, part);
            dims[d] = (float)s->shape[i][d];
        }
        strcat(shape_text, ")");
        Tensor tshape = tensor_view(dims, 1, s->ndim[i]);
        snprintf(key, sizeof key, "shape.%s", RECIPE[i].stage);
        ch_pin(ch, key, &tshape);
        const char *name = strcmp(RECIPE[i].stage, "out") == 0 ? s->last_out : RECIPE[i].stage;
        ch_line(ch, "    %4d  %-15s %-18s %s", i + 1, name, shape_text, RECIPE[i].timm);
    }
    ch_line(ch, "%s", "");
    ch_say(ch, "Step 4 is the loop over the blocks of Chapter 08: each block reads the "
               "stream and writes the next one, and only the last block's output, %s, "
               "goes on to step 5.", s->last_out);
}

static void cost(Chapter *ch, Work *w) {
    if (!ch_section(ch, "4. Where the parameters, the FLOPs and the time go")) return;
    const VitConfig *c = w->cfg;
    ch_say(ch, "Block stages are listed once and count all %d blocks: their "
               "parameters, FLOPs and times are summed. Shapes are per image; "
               "FLOPs (from vit_stage_flops()) count a multiply and an add as two. "
               "Each time is the time from the previous stage's hand-over to this "
               "one's.", c->depth);
    StageTotals tot;
    stage_table(ch, w, &tot);
    char count[VIT_NUM_BUF];
    ch_value(ch, "params.total", (float)tot.params);
    ch_say(ch, "The parameter column adds up to %s, vit_param_count() again: every "
               "parameter is used by exactly one stage. In all, one image costs "
               "%.1f GFLOP. The whole forward pass, timed from outside (the listener's "
               "measurements included), took:", vit_thousands(count, tot.params),
           w->gflop = ch_value(ch, "gflop.total", (float)(tot.flops / 1e9)));
    ch_line(ch, "    vit_forward(): %.0f ms, %.1f GFLOP/s, %d threads", 1e3 * w->forward_seconds,
            w->gflop / w->forward_seconds, vit_get_threads());
    ch_line(ch, "%s", "");
    ch_say(ch, "These times are from this run on this machine: they vary from run to "
               "run and from machine to machine, which is why the tests pin the "
               "shapes, parameters and FLOPs but no time.");

    const double other_flops = tot.flops - tot.matmul_flops - tot.nn_flops;
    const double other_ms = tot.ms - tot.matmul_ms - tot.nn_ms;
    ch_say(ch, "Where does the work go? The layers with a weight matrix (the patch "
               "embedding, q, k, v, the output projection, fc1, fc2 and the head) do "
               "%.1f%% of the FLOPs, the two N × N products of attention (Q·Kᵀ and "
               "probs·V) %.1f%%, and everything else (LayerNorm, softmax, GELU, "
               "additions) the remaining %.1f%%. Of this run's time they took %.0f%%, "
               "%.0f%% and %.0f%%.",
           ch_value(ch, "matmul_percent", (float)(100 * tot.matmul_flops / tot.flops)),
           ch_value(ch, "attention_nn_percent", (float)(100 * tot.nn_flops / tot.flops)),
           ch_value(ch, "other_percent", (float)(100 * other_flops / tot.flops)),
           100 * tot.matmul_ms / tot.ms, 100 * tot.nn_ms / tot.ms, 100 * other_ms / tot.ms);

    // FLOPs are pinned; times are measured, so the sentence follows the measurement.
    // [flop_ratio]
    const double f_scores = vit_stage_flops(c, B, "blocks.0.attn.scores");
    const double f_probs = vit_stage_flops(c, B, "blocks.0.attn.probs");
    const float flop_ratio = ch_value(ch, "flop_ratio.scores_per_softmax", (float)(f_scores / f_probs));
    const double ms_scores = 1e3 * stage_clock_seconds(&w->clock, "attn.scores");
    const double ms_probs = 1e3 * stage_clock_seconds(&w->clock, "attn.probs");
    const double time_ratio = ms_scores / ms_probs, slower = flop_ratio / time_ratio;
    // [flop_ratio]
    char took[96];
    if (slower < 3)
        snprintf(took, sizeof took, "and in this run it took %.1f times as long", time_ratio);
    else if (time_ratio > 1.25)
        snprintf(took, sizeof took, "yet in this run it took only %.1f times as long", time_ratio);
    else if (time_ratio >= 0.8)
        snprintf(took, sizeof took, "yet in this run it took about as long");
    else
        snprintf(took, sizeof took, "yet in this run it took less time than the softmax");
    ch_say(ch, "FLOPs are not time. Compare two neighbours in the table: Q·Kᵀ "
               "(attn.scores) does %.1f times the FLOPs of the softmax that follows it "
               "(attn.probs), %s: %.1f ms against %.1f ms. Per FLOP the softmax ran "
               "%.1f times slower.", flop_ratio, took, ms_scores, ms_probs, slower);
    if (slower >= 3)
        ch_say(ch, "The softmax does little arithmetic for each number it touches: it "
                   "reads the scores, takes an exp() of each and writes the "
                   "probabilities back. Its time goes into moving those numbers "
                   "between memory and the processor (and into exp(), which costs more "
                   "than the one FLOP the count gives it), not into multiply-adds: it "
                   "is memory-bound. A matrix product uses every number it loads many "
                   "times (each query's Dh numbers meet all N keys), so it keeps the "
                   "multiply-add units busy instead of waiting for memory. Counting "
                   "FLOPs estimates the work; for a memory-bound stage the time is set "
                   "by the bytes it moves.");
    else
        ch_verdict(ch, "On this run the difference per FLOP is small: this machine moved "
                   "the softmax's numbers about as fast as it did the matrix product's "
                   "arithmetic. Usually a softmax is memory-bound, since it does a few "
                   "operations per number it reads and writes, where a matrix product "
                   "uses every number it loads many times.");
}

static void stream(Chapter *ch, Work *w) {
    if (!ch_section(ch, "5. The residual stream through twelve blocks")) return;
    const Watch *s = &w->watch;
    const int L = w->cfg->depth;
    ch_say(ch, "Chapter 08 took one block apart. Here are all %d, as watch_stream() saw "
               "them: the standard deviation of the whole (1, %d, %d) stream after each "
               "block; the length of the [cls] row, which starts as the [cls] "
               "parameter plus its position; the lengths of what attention and the MLP "
               "add to that row; and the mean cos θ between each block's input and "
               "output rows.", L, vit_num_tokens(w->cfg), w->cfg->dim);
    ch_line(ch, "    after        std   |cls|  +attn to cls  +MLP to cls  cos θ in→out");
    ch_line(ch, "    embed    %7.4f %7.4f", ch_value(ch, "stream.embed.std", s->embed_std),
            ch_value(ch, "stream.embed.cls_norm", s->embed_cls));
    float mlp_lo = INFINITY, mlp_hi = 0;
    for (int i = 0; i < L; i++) {
        float std = ch_valuef(ch, s->std[i], "stream.blocks.%d.std", i);
        float cls = ch_valuef(ch, s->cls[i], "stream.blocks.%d.cls_norm", i);
        float attn = ch_valuef(ch, s->cls_attn[i], "stream.blocks.%d.cls_attn", i);
        float mlp = ch_valuef(ch, s->cls_mlp[i], "stream.blocks.%d.cls_mlp", i);
        float cos = ch_valuef(ch, s->cos[i], "stream.blocks.%d.cos", i);
        ch_line(ch, "    block %2d %7.4f %7.4f  %12.4f  %11.4f  %12.4f", i, std, cls, attn, mlp, cos);
        mlp_lo = fminf(mlp_lo, mlp), mlp_hi = fmaxf(mlp_hi, mlp);
    }
    ch_line(ch, "%s", "");
    ch_say(ch, "The stream enters with a standard deviation of %.2f and every block "
               "adds its correction, so it grows, to %.2f after the last one. The "
               "sub-layers do not mind: they read LayerNorm'd copies (Chapter 08).",
           s->embed_std, s->std[L - 1]);
    ch_say(ch, "Now the [cls] row at block 0: its length goes from %.2f to %.2f. That "
               "is not [cls] taking in the image. Attention, the only way [cls] can see "
               "the patches, adds a vector of length only %.2f: its untrained weights "
               "are nearly uniform, so it averages all %d tokens, and an average of "
               "random vectors is short. The MLP adds %.2f. It sees [cls] alone, "
               "LayerNorm'd to unit scale however small it was, and writes a vector "
               "of its usual length into a row that was short. Coming out, the [cls] "
               "row has cos θ = %.2f with what went in: it is mostly the MLP's "
               "response to the [cls] parameter, not a summary of the image.",
           s->embed_cls, s->cls[0], s->cls_attn[0], vit_num_tokens(w->cfg), s->cls_mlp[0],
           ch_value(ch, "stream.blocks.0.cls_cos", s->cls_cos[0]));
    ch_say(ch, "Further down, the MLP adds between %.2f and %.2f to [cls] in every "
               "block, while what attention adds rises to %.2f by block %d. And the last "
               "column is Chapter 08's point: the MLP's correction stays about the "
               "same size while the stream grows, so each block turns it less, cos θ "
               "going "
               "from %.2f in block 0 to %.2f in block %d. What [cls] should gather "
               "from the image, training has to teach.",
           mlp_lo, mlp_hi, s->cls_attn[L - 1], L - 1, s->cos[0], s->cos[L - 1], L - 1);
}

static void head(Chapter *ch, Work *w) {
    if (!ch_section(ch, "6. The answer")) return;
    const VitConfig *c = w->cfg;
    Tensor logits = vit_logits(&w->vit);
    TensorStats st = tensor_stats(&logits);
    ch_say(ch, "After the last block comes a final LayerNorm; then only row 0, the "
               "[cls] token's %d numbers, goes to the head, a linear layer to Y = %d "
               "class scores, the logits. Theirs have mean %.4f and standard deviation "
               "%.4f. Softmax (Chapter 03) turns them into probabilities. The five "
               "highest:", c->dim, c->num_classes, ch_value(ch, "logits.mean", (float)st.mean),
           ch_value(ch, "logits.std", (float)st.std));
    // [answer]
    float *probs = vit_malloc(sizeof(float) * c->num_classes);
    softmax(probs, logits.data, 1, c->num_classes);
    int best[TOP];
    ops_top_k(best, TOP, logits.data, c->num_classes); // the largest first
    // [answer]
    float index[TOP], value[TOP], prob[TOP];
    for (int r = 0; r < TOP; r++)
        index[r] = (float)best[r], value[r] = logits.data[best[r]], prob[r] = probs[best[r]];
    Tensor ti = tensor_view(index, 1, TOP), tv = tensor_view(value, 1, TOP);
    Tensor tp = tensor_view(prob, 1, TOP);
    ch_pin(ch, "top5.class", &ti);
    ch_pin(ch, "top5.logit", &tv);
    ch_pin(ch, "top5.prob", &tp);
    ch_line(ch, "    rank  class   logit   probability");
    for (int r = 0; r < TOP; r++)
        ch_line(ch, "    %4d  %5d  %6.4f   %.6f", r + 1, (int)index[r], value[r], prob[r]);
    ch_line(ch, "%s", "");
    ch_say(ch, "A uniform guess would give every class %.4f. With random weights the "
               "model has learned nothing, so the probabilities are nearly uniform and "
               "the classes mean nothing: the point is that 86 million parameters and "
               "%.1f GFLOP went into these five lines and PyTorch, computing "
               "independently from the same weights, gets the same numbers.",
           ch_value(ch, "uniform_prob", 1.0f / c->num_classes), w->gflop);
    free(probs);
}

static void whats_next(Chapter *ch) {
    if (!ch_section(ch, "What's next")) return;
    ch_say(ch, "This is the whole model. What it lacks is knowledge: its weights are "
               "random. Chapter 10 computes the gradient that learning needs, and chapter "
               "11 trains a small ViT with it. To see this same code answer with "
               "pretrained ViT-B/16 weights, fetch a checkpoint with "
               "scripts/fetch-weights.sh and run "
               "`build/vit classify` on a photo, as the README's \"Real weights, real "
               "photos\" shows: timm, Hugging Face and torchvision files all load, "
               "preprocessed as those libraries do. `build/vitview` steps through "
               "every stage of the table above, drawing each attention map over the "
               "image.");
}

void chapter09_run(Chapter *ch) {
    ch_title(ch, "09", "ViT-Base/16");
    ch_say(ch, "Chapters 01–08 built every part. This chapter puts them together at "
               "full size, runs one image through, and counts where the parameters "
               "and the work go.");
    Work w = {0};
    // [config]
    VitConfig cfg;
    vit_config_for_arch(&cfg, "vit-base", NULL);
    // [config]
    configuration(ch, &cfg);
    build(ch, &w);
    if (!w.cfg) return;
    recipe(ch, &w);
    if (w.watch.count == vit_trace_length(w.cfg)) { // the pass ran to the end
        cost(ch, &w);
        stream(ch, &w);
        head(ch, &w);
        whats_next(ch);
    }
    free(w.watch.prev);
    tensor_free(&w.image);
    vit_free(&w.vit);
}

/* =====================================================================
 * Plumbing, not part of the lesson: the listener that measures the
 * stream, and the printing of the stage table.
 * ===================================================================== */

static float row_norm(const float *row, int D) { return sqrtf(dot(row, row, D)); }

// A TraceFn (called by the StageClock, outside the timing): records the
// shapes of the recipe's steps and measures the residual stream.
static void watch_stream(void *user, const char *name, const Tensor *t) {
    Watch *s = user;
    const int N = vit_num_tokens(s->cfg), D = s->cfg->dim;
    int block;
    const VitStage *stage = vit_stage_find(name, &block);
    s->count++;
    if (!stage) return;
    if (block == 0) s->per_block++;
    for (int i = 0; i < STEPS; i++)
        if (strcmp(stage->name, RECIPE[i].stage) == 0) {
            s->ndim[i] = t->ndim;
            for (int d = 0; d < t->ndim && d < 4; d++) s->shape[i][d] = t->shape[d];
            if (block >= 0) snprintf(s->last_out, sizeof s->last_out, "%s", name);
        }
    // [watch]
    const bool in_blocks = block >= 0 && block < MAX_DEPTH;
    if (!strcmp(stage->name, "embed")) {
        s->embed_std = (float)tensor_stats(t).std;
        s->embed_cls = row_norm(t->data, D);
        memcpy(s->prev, t->data, sizeof(float) * N * D);
    } else if (in_blocks && !strcmp(stage->name, "attn.proj")) {
        s->cls_attn[block] = row_norm(t->data, D); // row 0 of image 0 is its [cls]
    } else if (in_blocks && !strcmp(stage->name, "mlp.fc2")) {
        s->cls_mlp[block] = row_norm(t->data, D);
    } else if (in_blocks && !strcmp(stage->name, "out")) {
        s->std[block] = (float)tensor_stats(t).std;
        s->cls[block] = row_norm(t->data, D);
        double sum = 0;
        for (int r = 0; r < N; r++) {
            const float *u = &s->prev[(size_t)r * D], *v = &t->data[(size_t)r * D];
            float c = dot(u, v, D) / (row_norm(u, D) * row_norm(v, D));
            sum += c;
            if (r == 0) s->cls_cos[block] = c;
        }
        s->cos[block] = (float)(sum / N);
        memcpy(s->prev, t->data, sizeof(float) * N * D);
    }
    // [watch]
}

// The table of every stage: shape, parameters, FLOPs (pinned) and time (not).
static void stage_table(Chapter *ch, Work *w, StageTotals *tot) {
    const VitConfig *c = w->cfg;
    memset(tot, 0, sizeof *tot);
    ch_line(ch, "    %-14s %-17s %11s %10s %9s", "stage", "shape", "parameters", "MFLOP", "ms");
    for (int i = 0; i < vit_stage_count(); i++) {
        const VitStage *s = vit_stage_at(i);
        char name[64], shape_text[48] = "(", count[VIT_NUM_BUF];
        vit_stage_name(name, sizeof name, s, 0);
        int shape[4], ndim = vit_stage_shape(c, B, name, shape);
        float dims[4];
        for (int d = 0; d < ndim; d++) {
            char part[16];
            snprintf(part, sizeof part, "%s%d", d ? ", " : "", shape[d]);
            strcat(shape_text, part);
            dims[d] = (float)shape[d];
        }
        strcat(shape_text, ")");
        Tensor tshape = tensor_view(dims, 1, ndim);
        char key[96];
        snprintf(key, sizeof key, "shape.%s", s->name);
        ch_pin(ch, key, &tshape);

        // [stage_costs]
        int times = s->per_block ? c->depth : 1;
        int64_t params = times * vit_stage_params(c, name);
        double flops = times * vit_stage_flops(c, B, name);
        double ms = 1e3 * stage_clock_seconds(&w->clock, name);
        // [stage_costs]
        ch_valuef(ch, (float)params, "params.%s", s->name);
        ch_valuef(ch, (float)(flops / 1e6), "mflop.%s", s->name);
        tot->params += params, tot->flops += flops, tot->ms += ms;
        if (params > 0 && !strstr(s->name, "norm") && strcmp(s->name, "tokens") &&
            strcmp(s->name, "embed"))
            tot->matmul_flops += flops, tot->matmul_ms += ms; // the layers with a weight matrix
        if (!strcmp(s->name, "attn.scores") || !strcmp(s->name, "attn.context"))
            tot->nn_flops += flops, tot->nn_ms += ms;
        if (s->per_block && (i == 0 || !vit_stage_at(i - 1)->per_block))
            ch_line(ch, "    blocks (×%d):", c->depth);
        ch_line(ch, "    %s%-*s %-17s %11s %10.1f %9.2f", s->per_block ? "  " : "",
                s->per_block ? 12 : 14, s->name, shape_text, vit_thousands(count, params),
                flops / 1e6, ms);
    }
    char count[VIT_NUM_BUF];
    ch_line(ch, "    %-14s %-17s %11s %10.1f %9.2f", "total", "",
            vit_thousands(count, tot->params), tot->flops / 1e6, tot->ms);
    ch_line(ch, "%s", "");
}

#ifndef CHAPTER_NO_MAIN
int main(int argc, char **argv) {
    return chapter_main(argc, argv, chapter09_run,
                        "Chapter 09: ViT-Base/16 end to end: vit_forward()'s recipe, a "
                        "per-stage table of shapes, parameters, FLOPs and time, and the "
                        "residual stream.");
}
#endif
