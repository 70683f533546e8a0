/**
 * @file 08_encoder_block.c
 * @brief Chapter 08 · The encoder block: attention and an MLP on a residual stream.
 *
 * A ViT encoder block (timm's `Block`) is two sub-layers, each reading a
 * LayerNorm'd copy of the stream and adding its result back (pre-norm):
 * \f[ x' = x + \mathrm{MSA}(\mathrm{LN}_1(x)),\qquad
 *     y = x' + \mathrm{MLP}(\mathrm{LN}_2(x')),\qquad
 *     \mathrm{MLP}(h) = W_2\,\mathrm{GELU}(W_1 h + b_1) + b_2 , \f]
 * with \f$W_1\f$ of shape (4D, D): the MLP ratio is 4. The chapter runs block
 * 0 of the ViT-Base that chapter 09 builds (same seed) on 197 tokens of width
 * 768, follows every traced stage, shows what the LayerNorms and GELU do, and
 * measures how much each sub-layer changes the residual stream.
 *
 * Every number printed is pinned by name and checked against PyTorch
 * (tools/ref_vit.py's Block) by tests/test_ch08_encoder_block.c.
 *
 * Run: `build/chapters/08_encoder_block`
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention.h"
#include "chapter.h"
#include "chapters.h"
#include "ops.h"
#include "rng.h"
#include "stages.h"
#include "tensor.h"
#include "trace.h"
#include "util.h"
#include "vit.h"

enum { B = 1 };                         // one image
static const uint64_t WEIGHT_SEED = 9;  // the weights of chapter 09's ViT-Base
static const uint64_t INPUT_SEED = 8;   // the input tokens
static const float BIG = 10.0f;         // section 3 runs the block on BIG·x too

/* ------------------------------------------------------------ helpers */

// Working memory of one block, carved out of one allocation by lib (as vit.c does).
typedef struct {
    float *memory;
    VitBlockActs acts;
} BlockMemory;

static void block_memory_new(BlockMemory *m, const VitConfig *c) {
    m->memory = vit_malloc(sizeof(float) * vit_block_acts_floats(c, B));
    vit_block_acts_carve(&m->acts, m->memory, c, B);
}

// The mean over rows of each row's length |x_i|: how big a token typically is.
static float mean_row_norm(const float *x, int rows, int dim) {
    double sum = 0;
    for (int i = 0; i < rows; i++) {
        const float *row = &x[(size_t)i * dim];
        sum += sqrt((double)dot(row, row, dim));
    }
    return (float)(sum / rows);
}

// The mean over rows of cos θ between row i of a and row i of b.
static float mean_row_cosine(const float *a, const float *b, int rows, int dim) {
    double sum = 0;
    for (int i = 0; i < rows; i++) {
        const float *u = &a[(size_t)i * dim], *v = &b[(size_t)i * dim];
        sum += dot(u, v, dim) / sqrt((double)dot(u, u, dim) * dot(v, v, dim));
    }
    return (float)(sum / rows);
}

// Pin a named scalar made from a prefix and a suffix, e.g. "attn.probs" + ".mean".
static float pin2(Chapter *ch, const char *a, const char *b, float value) {
    char name[96];
    snprintf(name, sizeof name, "%s%s", a, b);
    return ch_value(ch, name, value);
}

/* ----------------------------------------------------------- sections */

typedef struct {
    Vit vit;             // a one-block ViT-Base: only blocks[0] is used
    const VitConfig *cfg;
    int N, D, M;
    float *x;            // (B, N, D) the block's input
    float *out;          // (B, N, D) its output
    BlockMemory mem;
    TraceRecorder rec;   // every stage of the block on x
} Work;

static void the_block(Chapter *ch, Work *w) {
    ch_section(ch, "1. What is in a block");
    const VitConfig *c = w->cfg;
    const struct {
        const char *stage, *label;
    } parts[] = {
        {"norm1", "LayerNorm 1 (scale, shift)"},
        {"attn.q", "attention: W_q, b_q"},
        {"attn.k", "attention: W_k, b_k"},
        {"attn.v", "attention: W_v, b_v"},
        {"attn.proj", "attention: W_o, b_o"},
        {"norm2", "LayerNorm 2 (scale, shift)"},
        {"mlp.fc1", "MLP: W_1 (4D, D), b_1"},
        {"mlp.fc2", "MLP: W_2 (D, 4D), b_2"},
    };
    ch_say(ch, "ViT-Base stacks 12 identical blocks. This chapter takes block 0 of the "
               "model Chapter 09 runs, with the same random weights (seed %d, drawn as "
               "timm initialises a new model: weights with std 0.02, zero biases, "
               "LayerNorm scale 1 and shift 0). Its parameters, from "
               "vit_stage_params():", (int)WEIGHT_SEED);
    ch_line(ch, "    %-28s %10s", "part", "parameters");
    int64_t total = 0, attention = 0, mlp = 0;
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        char stage[32];
        snprintf(stage, sizeof stage, "blocks.0.%s", parts[i].stage);
        int64_t n = vit_stage_params(c, stage);
        pin2(ch, "params.", parts[i].stage, (float)n);
        char count[VIT_NUM_BUF];
        ch_line(ch, "    %-28s %10s", parts[i].label, vit_thousands(count, n));
        total += n;
        if (strncmp(parts[i].stage, "attn.", 5) == 0) attention += n;
        if (strncmp(parts[i].stage, "mlp.", 4) == 0) mlp += n;
    }
    char count[VIT_NUM_BUF];
    ch_value(ch, "params.block", (float)total);
    ch_line(ch, "    %-28s %10s", "total", vit_thousands(count, total));
    ch_line(ch, "%s", "");
    ch_say(ch, "The MLP widens each token from D = %d to M = %d, the \"MLP ratio\" of "
               "%d, and back. That makes it the heavy half: %.1f%% of the block's "
               "parameters, against %.1f%% for attention.",
           c->dim, c->mlp_dim, c->mlp_dim / c->dim,
           ch_value(ch, "mlp_share_percent", 100.0f * (float)mlp / (float)total),
           ch_value(ch, "attention_share_percent", 100.0f * (float)attention / (float)total));
}

static void run_block(Chapter *ch, Work *w) {
    ch_section(ch, "2. One pass through the block");
    ch_say(ch, "The input is %d tokens of width %d: random stand-ins, standard "
               "normal, for the embedded tokens of Chapter 07. lib's "
               "vit_block_forward() is timm's Block.forward:", w->N, w->D);
    ch_line(ch, "    x = x + self.attn(self.norm1(x))");
    ch_line(ch, "    x = x + self.mlp(self.norm2(x))      # mlp = fc2(gelu(fc1(.)))");
    ch_line(ch, "%s", "");
    //! [block]
    Tracer tr = {trace_record, &w->rec, NULL}; // keep a copy of every stage
    vit_block_forward(w->out, w->x, &w->vit.weights.blocks[0], w->cfg, &w->mem.acts, B, &tr);
    //! [block]
    ch_say(ch, "It hands %d intermediate tensors to the trace, in this order. Their "
               "shapes, means and standard deviations:", w->rec.count);
    ch_line(ch, "    %-14s %-20s %9s %9s", "stage", "shape", "mean", "std");
    Tensor input = tensor_view(w->x, 3, B, w->N, w->D);
    for (int i = -1; i < w->rec.count; i++) {
        const char *name = i < 0 ? "input" : w->rec.entries[i].name;
        const Tensor *t = i < 0 ? &input : &w->rec.entries[i].t;
        char shape[48];
        tensor_shape_str(t, shape, sizeof shape);
        float dims[TENSOR_MAX_DIMS];
        for (int d = 0; d < t->ndim; d++) dims[d] = (float)t->shape[d];
        Tensor tshape = tensor_view(dims, 1, t->ndim);
        char key[64];
        snprintf(key, sizeof key, "%s.shape", name);
        ch_pin(ch, key, &tshape);
        TensorStats st = tensor_stats(t);
        float mean = pin2(ch, name, ".mean", (float)st.mean);
        float std = pin2(ch, name, ".std", (float)st.std);
        ch_line(ch, "    %-14s %-20s %9.4f %9.4f", name, shape, mean, std);
    }
    ch_line(ch, "%s", "");
    const Tensor *probs = trace_find(&w->rec, "attn.probs");
    float top = 0;
    for (size_t r = 0; r < probs->numel / (size_t)w->N; r++) {
        float m = 0;
        for (int j = 0; j < w->N; j++) m = fmaxf(m, probs->data[r * w->N + j]);
        top += m;
    }
    top /= (float)(probs->numel / (size_t)w->N);
    ch_say(ch, "Notice attn.probs: its mean is exactly 1/%d, since every row shares "
               "1 among %d keys, and with these untrained weights the rows are nearly "
               "flat. On average the largest weight in a row is only %.4f. An "
               "untrained attention layer averages over the whole image; training "
               "teaches it where to look.", w->N, w->N, ch_value(ch, "mean_top_prob", top));
}

static void prenorm(Chapter *ch, Work *w) {
    ch_section(ch, "3. LayerNorm first: pre-norm");
    const Tensor *norm1 = trace_find(&w->rec, "norm1");
    Tensor row_in = tensor_view(w->x, 1, w->D), row_ln = tensor_view(norm1->data, 1, w->D);
    TensorStats a = tensor_stats(&row_in), b = tensor_stats(&row_ln);
    ch_say(ch, "LayerNorm rescales each token on its own to mean 0 and standard "
               "deviation 1, then applies a learned scale and shift (here 1 and 0). "
               "Token 0 goes in with mean %.4f and std %.4f and comes out with mean "
               "%.4f and std %.4f.",
           ch_value(ch, "token0_in_mean", (float)a.mean),
           ch_value(ch, "token0_in_std", (float)a.std),
           ch_value(ch, "token0_ln_mean", (float)b.mean),
           ch_value(ch, "token0_ln_std", (float)b.std));
    ch_say(ch, "Both sub-layers read such a normalised copy, never the stream itself, "
               "and add their result to the stream. This is the pre-norm arrangement "
               "of ViT (and GPT-2). The original Transformer normalised after the "
               "addition instead, x = LN(x + sublayer(x)); putting LN first leaves a "
               "clean path from the first block's input to the last block's output, "
               "which makes deep stacks much easier to train.");

    // The same block on BIG·x: the sub-layers see the same normalised input.
    size_t n = (size_t)B * w->N * w->D;
    float *big = vit_malloc(sizeof(float) * n), *out = vit_malloc(sizeof(float) * n);
    float *attn = vit_malloc(sizeof(float) * n);
    const Tensor *attn_x = trace_find(&w->rec, "attn.proj");
    //! [scaled]
    scale(big, w->x, BIG, n);                                   // the stream, 10 times larger
    vit_block_forward(out, big, &w->vit.weights.blocks[0], w->cfg, &w->mem.acts, B, NULL);
    //! [scaled]
    memcpy(attn, w->mem.acts.attn, sizeof(float) * n);
    Tensor t_attn = tensor_view(attn, 1, (int)n), t_attn_x = tensor_view(attn_x->data, 1, (int)n);
    Tensor t_ln = tensor_view(w->mem.acts.norm1, 1, (int)n);
    Tensor t_ln_x = tensor_view(norm1->data, 1, (int)n);
    ch_say(ch, "A consequence: make the stream %g times larger and the attention "
               "sub-layer cannot tell. Running the block on %g·x, LayerNorm 1's output "
               "differs from before by at most %.2g and the attention output by at "
               "most %.2g. The stream keeps its own scale; the sub-layers always see "
               "tokens of size about 1.", BIG, BIG,
           ch_value(ch, "big_norm1_max_diff", tensor_max_abs_diff(&t_ln, &t_ln_x)),
           ch_value(ch, "big_attn_max_diff", tensor_max_abs_diff(&t_attn, &t_attn_x)));
    free(big);
    free(out);
    free(attn);
}

static void mlp(Chapter *ch, Work *w) {
    ch_section(ch, "4. The MLP and GELU");
    ch_say(ch, "The MLP works on every token separately: fc1 widens it to %d "
               "numbers, GELU bends them, fc2 brings them back to %d. Attention moves "
               "information between tokens; the MLP processes what each token now "
               "holds. GELU is exact, x·Φ(x) with Φ the normal distribution function, "
               "computed with erf:", w->M, w->D);
    float xs[] = {-3, -2, -1, -0.75f, -0.5f, 0, 0.5f, 1, 2, 3};
    enum { NX = sizeof xs / sizeof xs[0] };
    float ys[NX];
    //! [gelu]
    gelu(ys, xs, NX); // GELU(x) = x/2 · (1 + erf(x/√2))
    //! [gelu]
    Tensor tx = tensor_view(xs, 1, NX), ty = tensor_view(ys, 1, NX);
    ch_pin(ch, "gelu_x", &tx);
    ch_pin(ch, "gelu_y", &ty);
    ch_line(ch, "         x   GELU(x)   ReLU(x)");
    for (int i = 0; i < NX; i++)
        ch_line(ch, "    %6.2f   %7.4f   %7.4f", xs[i], ys[i], fmaxf(xs[i], 0.0f));
    ch_line(ch, "%s", "");
    const Tensor *fc1 = trace_find(&w->rec, "mlp.fc1");
    size_t negative = 0;
    for (size_t i = 0; i < fc1->numel; i++) negative += fc1->data[i] < 0;
    ch_say(ch, "Like ReLU it keeps large positive values and silences large negative "
               "ones, but it is smooth and lets small negative values through a "
               "little (its minimum is about -0.17, near x = -0.75). In this block "
               "%.1f%% of fc1's %d × %d outputs are negative and get squashed towards "
               "zero.", ch_value(ch, "fc1_negative_percent", 100.0f * negative / fc1->numel),
           w->N, w->M);
}

static void residual_stream(Chapter *ch, Work *w) {
    ch_section(ch, "5. The residual stream");
    ch_say(ch, "Follow the stream through the block: x, then resid1 = x + attention, "
               "then out = resid1 + MLP. How much does each sub-layer change it? "
               "Average lengths |token| over the %d tokens:", w->N);
    const char *rows[][2] = {
        {"input", "x, the stream coming in"},
        {"attn.proj", "attention's contribution"},
        {"resid1", "x + attention"},
        {"mlp.fc2", "the MLP's contribution"},
        {"out", "resid1 + MLP, the stream going out"},
    };
    float norms[5];
    for (int i = 0; i < 5; i++) {
        const Tensor *t = i == 0 ? NULL : trace_find(&w->rec, rows[i][0]);
        const float *data = t ? t->data : w->x;
        norms[i] = pin2(ch, rows[i][0], ".mean_norm", mean_row_norm(data, w->N, w->D));
        ch_line(ch, "    %-12s %8.4f   %s", rows[i][0], norms[i], rows[i][1]);
    }
    ch_line(ch, "%s", "");
    float cos_io = ch_value(ch, "cos_input_out",
                            mean_row_cosine(w->x, trace_find(&w->rec, "out")->data, w->N, w->D));
    ch_say(ch, "Attention adds a vector about %.3f times as long as the token, the MLP "
               "one about %.3f times as long. Each sub-layer writes a correction into "
               "the stream rather than replacing it: going out, a token still points "
               "almost the same way as coming in (average cos θ = %.4f, Chapter 01).",
           ch_value(ch, "attn_relative", norms[1] / norms[0]),
           ch_value(ch, "mlp_relative", norms[3] / norms[2]), cos_io);
    ch_say(ch, "That is the design. Twelve blocks each add their reading of the image "
               "to one shared stream, and what any block wrote can be read by every "
               "later block. At initialisation the corrections are small, so a deep "
               "stack starts close to the identity, and training grows what is "
               "useful. Attention's share is tiny here because its untrained weights "
               "average over all %d tokens, and an average of many random vectors is "
               "short.", w->N);
}

static void whats_next(Chapter *ch) {
    ch_section(ch, "What's next");
    ch_say(ch, "Stack twelve of these blocks, put the patch embedding and the "
               "[cls] and position tokens in front and a LayerNorm and a classifier "
               "behind, and you have ViT-Base/16. Chapter 09 runs the whole model and "
               "counts where its 86 million parameters and its time go.");
}

void chapter08_run(Chapter *ch) {
    ch_title(ch, "08", "The encoder block");
    ch_say(ch, "Attention (Chapters 04–05) is half of a transformer block. The other "
               "half is a small MLP, and the two are joined by LayerNorms and residual "
               "connections:");
    ch_line(ch, "    x' = x + MSA(LN1(x))");
    ch_line(ch, "    y  = x' + MLP(LN2(x')),    MLP(h) = fc2(GELU(fc1(h)))");
    ch_line(ch, "%s", "");
    Work w = {0};
    VitConfig cfg;
    VitError err;
    vit_config_for_arch(&cfg, "vit-base", NULL);
    cfg.depth = 1; // block 0 draws the same numbers as in the 12-block model
    VitInit init = vit_init_timm(WEIGHT_SEED);
    if (vit_build_random(&w.vit, &cfg, &init, &err) != VIT_OK) {
        ch_say(ch, "cannot build the block: %s", err.msg);
        return;
    }
    w.cfg = &w.vit.config;
    w.N = vit_num_tokens(w.cfg), w.D = w.cfg->dim, w.M = w.cfg->mlp_dim;
    size_t n = (size_t)B * w.N * w.D;
    w.x = vit_malloc(sizeof(float) * n);
    w.out = vit_malloc(sizeof(float) * n);
    Rng rng;
    rng_seed(&rng, INPUT_SEED);
    rng_fill_normal(&rng, w.x, n, 0.0f, 1.0f);
    block_memory_new(&w.mem, w.cfg);

    the_block(ch, &w);
    run_block(ch, &w);
    prenorm(ch, &w);
    mlp(ch, &w);
    residual_stream(ch, &w);
    whats_next(ch);

    trace_recorder_free(&w.rec);
    free(w.mem.memory);
    free(w.x);
    free(w.out);
    vit_free(&w.vit);
}

#ifndef CHAPTER_NO_MAIN
int main(int argc, char **argv) {
    return chapter_main(argc, argv, chapter08_run,
                        "Chapter 08: the pre-norm encoder block and its residual stream.");
}
#endif
