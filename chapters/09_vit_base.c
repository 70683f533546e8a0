/**
 * @file 09_vit_base.c
 * @brief Chapter 09 · ViT-Base/16: the whole model, stage by stage.
 *
 * Everything from chapters 01–08, assembled as timm's `vit_base_patch16_224`:
 * \f[ z_0 = [x_{cls}; x_p W_E] + E_{pos},\qquad
 *     z_\ell = \mathrm{Block}_\ell(z_{\ell-1}),\ \ell = 1 \ldots 12,\qquad
 *     \text{logits} = \mathrm{LN}(z_{12})_0\, W_{head}^\top + b_{head} . \f]
 * The chapter builds ViT-Base with deterministic random weights
 * (vit_build_random() with vit_init_timm(9)), runs it on a generated image
 * while a trace callback times every stage, and prints a table of each
 * stage's shape, parameters, FLOPs and time, the residual stream through the
 * twelve blocks, and the top-5 classes.
 *
 * Every number printed is pinned by name and checked against PyTorch
 * (tools/ref_vit.py on the same weights) by tests/test_ch09_vit_base.c,
 * except the timings, which depend on the machine and are printed only.
 *
 * Run: `build/chapters/09_vit_base`
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "chapter.h"
#include "chapters.h"
#include "ops.h"
#include "rng.h"
#include "stages.h"
#include "tensor.h"
#include "trace.h"
#include "util.h"
#include "vit.h"

enum {
    B = 1,      // one image
    TOP = 5,    // classes listed at the end
    MAX_DEPTH = 12,
    MAX_STAGES = 32,
};
static const uint64_t WEIGHT_SEED = 9;  // the same ViT-Base as chapter 08
static const uint64_t IMAGE_SEED = 99;  // the input pixels

/* ------------------------------------------------------------ the trace */

// What the trace callback gathers while the forward pass runs.
typedef struct {
    const VitConfig *cfg;
    double last;                      // clock at the end of the previous callback
    double seconds[MAX_STAGES];       // time per stage, summed over the blocks
    float block_std[MAX_DEPTH];       // standard deviation of blocks.i.out
    float block_cls_norm[MAX_DEPTH];  // length of the [cls] row of blocks.i.out
    float embed_std, embed_cls_norm;  // the same for the blocks' input
} Timing;

// Index of the stage in vit_stage_at() order.
static int stage_index(const VitStage *s) {
    for (int i = 0; i < vit_stage_count(); i++)
        if (vit_stage_at(i) == s) return i;
    return -1;
}

//! [timing]
// A TraceFn: the time since the previous stage ended is this stage's time.
// The bookkeeping below is excluded by restarting the clock when it is done.
static void on_stage(void *user, const char *name, const Tensor *t) {
    Timing *tm = user;
    double now = vit_now();
    int block;
    const VitStage *stage = vit_stage_find(name, &block);
    tm->seconds[stage_index(stage)] += now - tm->last;
    if (strcmp(stage->name, "out") == 0 || strcmp(stage->name, "embed") == 0) {
        // the residual stream: its spread, and the length of the [cls] token's row
        TensorStats st = tensor_stats(t);
        int D = tm->cfg->dim;
        float cls = sqrtf(dot(t->data, t->data, D));
        if (block >= 0) tm->block_std[block] = (float)st.std, tm->block_cls_norm[block] = cls;
        else tm->embed_std = (float)st.std, tm->embed_cls_norm = cls;
    }
    tm->last = vit_now();
}
//! [timing]

/* ------------------------------------------------------------ helpers */

// Pin a scalar under a name made from a pattern and a string, e.g. "params.%s".
static float pin_named(Chapter *ch, const char *fmt, const char *what, float value) {
    char name[96];
    snprintf(name, sizeof name, fmt, what);
    return ch_value(ch, name, value);
}

/* ----------------------------------------------------------- sections */

typedef struct {
    Vit vit;
    const VitConfig *cfg;
    Tensor image;  // (1, 3, S, S)
    Timing timing;
    double build_seconds, forward_seconds;
    float gflop; // total work of one forward pass (pinned as gflop.total)
} Work;

static void configuration(Chapter *ch, const VitConfig *c) {
    ch_section(ch, "1. The configuration");
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
        {"K", "classes (ImageNet-1k)", "classes", c->num_classes},
    };
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        ch_line(ch, "    %-3s %5d   %s", sizes[i].symbol,
                (int)pin_named(ch, "config.%s", sizes[i].pin, (float)sizes[i].value),
                sizes[i].what);
    ch_line(ch, "%s", "");
    char count[VIT_NUM_BUF], bytes[VIT_NUM_BUF];
    int64_t params = vit_param_count(c);
    ch_value(ch, "param_count", (float)params);
    ch_say(ch, "Those sizes fix the number of parameters, vit_param_count(): %s. "
               "Stored as float32 that is %s bytes, about %.0f MB.",
           vit_thousands(count, params), vit_thousands(bytes, 4 * params),
           ch_value(ch, "param_megabytes", 4.0f * (float)params / 1e6f));
}

static void build(Chapter *ch, Work *w) {
    ch_section(ch, "2. Building it");
    ch_say(ch, "vit_build_random() allocates the parameters and draws every one of "
               "them as timm initialises a new model: a truncated normal with std "
               "0.02 for the weights, the [cls] token and the positions, zeros for "
               "the biases, ones and zeros for the LayerNorms. Each tensor has its "
               "own seeded stream, so the model is the same on every machine and in "
               "PyTorch, which loads the same numbers from the file that "
               "`vit make-weights --arch vit-base --seed %d` writes.", (int)WEIGHT_SEED);
    VitConfig cfg;
    VitError err;
    vit_config_for_arch(&cfg, "vit-base", NULL);
    //! [build]
    VitInit init = vit_init_timm(WEIGHT_SEED);
    double t0 = vit_now();
    VitStatus status = vit_build_random(&w->vit, &cfg, &init, &err);
    w->build_seconds = vit_now() - t0;
    //! [build]
    if (status != VIT_OK) {
        ch_say(ch, "cannot build ViT-Base: %s", err.msg);
        return;
    }
    w->cfg = &w->vit.config;
    ch_say(ch, "How long drawing 86 million numbers takes depends on the machine; "
               "here:");
    ch_line(ch, "    vit_build_random(): %.2f s", w->build_seconds);
    ch_line(ch, "%s", "");
    ch_say(ch, "Trained weights instead of random ones are loaded from a file with "
               "vit_build(); that is for the chapters that follow.");
}

static void run(Chapter *ch, Work *w) {
    ch_section(ch, "3. One forward pass, timed");
    const VitConfig *c = w->cfg;
    ch_say(ch, "The input is an image of random pixels, uniform in [-1, 1) (already "
               "normalised). With random weights the content does not matter; a real "
               "photo goes with real weights. vit_forward() runs the recipe of "
               "Chapters 06–08 and hands every stage to a trace callback. Ours, "
               "on_stage(), mostly reads the clock: each stage's time is the time "
               "since the previous stage was handed over.");
    w->image = tensor_new(4, B, c->channels, c->image_size, c->image_size);
    Rng rng;
    rng_seed(&rng, IMAGE_SEED);
    rng_fill_uniform(&rng, w->image.data, w->image.numel, -1.0f, 1.0f);
    VitError err;
    //! [forward]
    w->timing = (Timing){.cfg = c, .last = vit_now()};
    double t0 = w->timing.last;
    VitStatus status = vit_forward(&w->vit, &w->image, on_stage, &w->timing, &err);
    w->forward_seconds = vit_now() - t0;
    //! [forward]
    if (status != VIT_OK) ch_say(ch, "the forward pass failed: %s", err.msg);
}

static void stage_table(Chapter *ch, Work *w) {
    const VitConfig *c = w->cfg;
    ch_say(ch, "Block stages are listed once and count all %d blocks: their "
               "parameters, FLOPs and times are summed. Shapes are per image; "
               "FLOPs (from vit_stage_flops()) count a multiply and an add as two. "
               "The times are from this run on this machine and will differ on "
               "yours.", c->depth);
    ch_line(ch, "    %-14s %-17s %11s %10s %9s", "stage", "shape", "parameters", "MFLOP", "ms");
    int64_t total_params = 0;
    double total_flops = 0, total_ms = 0, matmul_flops = 0, attention_nn_flops = 0;
    for (int i = 0; i < vit_stage_count(); i++) {
        const VitStage *s = vit_stage_at(i);
        char name[64], shape_text[48] = "(", count[VIT_NUM_BUF];
        vit_stage_name(name, sizeof name, s, 0);
        int shape[4], ndim = vit_stage_shape(c, B, name, shape);
        for (int d = 0; d < ndim; d++) {
            char part[16];
            snprintf(part, sizeof part, "%s%d", d ? ", " : "", shape[d]);
            strcat(shape_text, part);
        }
        strcat(shape_text, ")");
        float dims[4];
        for (int d = 0; d < ndim; d++) dims[d] = (float)shape[d];
        Tensor tshape = tensor_view(dims, 1, ndim);
        char key[96];
        snprintf(key, sizeof key, "shape.%s", s->name);
        ch_pin(ch, key, &tshape);

        int times = s->per_block ? c->depth : 1;
        int64_t params = times * vit_stage_params(c, name);
        double flops = times * vit_stage_flops(c, B, name);
        double ms = 1e3 * w->timing.seconds[i];
        pin_named(ch, "params.%s", s->name, (float)params);
        pin_named(ch, "mflop.%s", s->name, (float)(flops / 1e6));
        total_params += params, total_flops += flops, total_ms += ms;
        if (params > 0 && !strstr(s->name, "norm") && strcmp(s->name, "tokens") &&
            strcmp(s->name, "embed"))
            matmul_flops += flops; // the layers with a weight matrix
        if (!strcmp(s->name, "attn.scores") || !strcmp(s->name, "attn.context"))
            attention_nn_flops += flops;
        if (s->per_block && (i == 0 || !vit_stage_at(i - 1)->per_block))
            ch_line(ch, "    blocks (×%d):", c->depth);
        ch_line(ch, "    %s%-*s %-17s %11s %10.1f %9.2f", s->per_block ? "  " : "",
                s->per_block ? 12 : 14, s->name, shape_text, vit_thousands(count, params),
                flops / 1e6, ms);
    }
    char count[VIT_NUM_BUF];
    ch_line(ch, "    %-14s %-17s %11s %10.1f %9.2f", "total", "",
            vit_thousands(count, total_params), total_flops / 1e6, total_ms);
    ch_line(ch, "%s", "");
    ch_value(ch, "params.total", (float)total_params);
    ch_say(ch, "The parameter column adds up to %s, vit_param_count() again: every "
               "parameter is used by exactly one stage. In all, one image costs "
               "%.1f GFLOP. The whole forward pass, timed from outside, took:",
           count, w->gflop = ch_value(ch, "gflop.total", (float)(total_flops / 1e9)));
    ch_line(ch, "    vit_forward(): %.0f ms, %.1f GFLOP/s", 1e3 * w->forward_seconds,
            w->gflop / w->forward_seconds);
    ch_line(ch, "%s", "");
    double other_flops = total_flops - matmul_flops - attention_nn_flops;
    ch_say(ch, "Where does the work go? The layers with a weight matrix (the patch "
               "embedding, q, k, v, the output projection, fc1, fc2 and the head) do "
               "%.1f%% of the FLOPs, the two N × N products of attention (Q·Kᵀ and "
               "probs·V) %.1f%%, and everything else (LayerNorm, softmax, GELU, "
               "additions) the remaining %.1f%%. That is why a fast matrix product "
               "(lib/gemm.h) is most of what makes a transformer fast. The time "
               "column usually ranks the stages the same way, though on a busy "
               "machine the many small per-head products of attention can take "
               "longer than their FLOPs suggest.",
           ch_value(ch, "matmul_percent", (float)(100 * matmul_flops / total_flops)),
           ch_value(ch, "attention_nn_percent", (float)(100 * attention_nn_flops / total_flops)),
           ch_value(ch, "other_percent", (float)(100 * other_flops / total_flops)));
}

static void stream(Chapter *ch, Work *w) {
    ch_section(ch, "4. The residual stream through twelve blocks");
    ch_say(ch, "Chapter 08 showed one block adding a correction to the stream. Here "
               "are all twelve: the standard deviation of the whole (1, %d, %d) stream "
               "after each block, and the length of the [cls] token's row, which "
               "starts as the [cls] parameter plus its position and gathers the "
               "image through attention.", vit_num_tokens(w->cfg), w->cfg->dim);
    ch_line(ch, "    after        std   |cls|");
    ch_line(ch, "    embed    %7.4f %7.4f", ch_value(ch, "stream.embed.std", w->timing.embed_std),
            ch_value(ch, "stream.embed.cls_norm", w->timing.embed_cls_norm));
    for (int i = 0; i < w->cfg->depth; i++) {
        char name[64];
        snprintf(name, sizeof name, "stream.blocks.%d.std", i);
        float std = ch_value(ch, name, w->timing.block_std[i]);
        snprintf(name, sizeof name, "stream.blocks.%d.cls_norm", i);
        float cls = ch_value(ch, name, w->timing.block_cls_norm[i]);
        ch_line(ch, "    block %2d %7.4f %7.4f", i, std, cls);
    }
    ch_line(ch, "%s", "");
    ch_say(ch, "The stream enters with a standard deviation of %.2f and every block "
               "adds its correction, so it grows steadily, to %.2f after the last "
               "one. The sub-layers do not mind: they read LayerNorm'd copies "
               "(Chapter 08). The [cls] token grows fastest at first: it starts as "
               "a small learned vector and takes in the whole image at block 0.",
           w->timing.embed_std, w->timing.block_std[w->cfg->depth - 1]);
}

static void head(Chapter *ch, Work *w) {
    ch_section(ch, "5. The answer");
    const VitConfig *c = w->cfg;
    Tensor logits = vit_logits(&w->vit);
    TensorStats st = tensor_stats(&logits);
    ch_say(ch, "After the last block comes a final LayerNorm; then only row 0, the "
               "[cls] token's %d numbers, goes to the head, a linear layer to %d class "
               "scores, the logits. Theirs have mean %.4f and standard deviation "
               "%.4f. Softmax (Chapter 03) turns them into probabilities. The five "
               "highest:", c->dim, c->num_classes, ch_value(ch, "logits.mean", (float)st.mean),
           ch_value(ch, "logits.std", (float)st.std));
    float *probs = vit_malloc(sizeof(float) * c->num_classes);
    softmax(probs, logits.data, 1, c->num_classes);
    int best[TOP];
    top_k(best, TOP, logits.data, c->num_classes); // the largest first
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
    ch_section(ch, "What's next");
    ch_say(ch, "This is the whole model. What it lacks is knowledge: the next steps "
               "load trained weights (timm, Hugging Face or torchvision files) with "
               "vit_build(), feed it a real photo preprocessed as those libraries do, "
               "and look inside with the viewer, where every stage of this table can "
               "be stepped through and every attention map drawn over the image.");
}

void chapter09_run(Chapter *ch) {
    ch_title(ch, "09", "ViT-Base/16");
    ch_say(ch, "Chapters 01–08 built every part. This chapter puts them together at "
               "full size, runs one image through, and counts where the parameters "
               "and the work go.");
    Work w = {0};
    VitConfig cfg;
    vit_config_for_arch(&cfg, "vit-base", NULL);
    configuration(ch, &cfg);
    build(ch, &w);
    if (!w.cfg) return;
    run(ch, &w);
    stage_table(ch, &w);
    stream(ch, &w);
    head(ch, &w);
    whats_next(ch);
    tensor_free(&w.image);
    vit_free(&w.vit);
}

#ifndef CHAPTER_NO_MAIN
int main(int argc, char **argv) {
    return chapter_main(argc, argv, chapter09_run,
                        "Chapter 09: ViT-Base/16 end to end, with a per-stage table of shapes, "
                        "parameters, FLOPs and time.");
}
#endif
