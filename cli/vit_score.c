/**
 * @file vit_score.c
 * @brief `vit score`: one attention score taken apart, from q_i and k_j to the probability.
 *
 * The recipe: parse the flags → vit_build() the model → preprocess the image
 * (as `vit classify`) → one forward pass that records only the layer's q, k,
 * scores, scaled and probs → score_parts_from_trace() → print q_i, k_j and
 * q⊙k per dimension, then the sum, the scale, the row's max, exp, sum and the
 * probability, each recorded stage's check beside its number.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "explain/score_parts.h"
#include "vit_cli.h"

/** Everything the command line can say. */
typedef struct {
    const char *weights; // the model
    int layer, head, query, key;
    int threads;
    ImageArgs image;
    const char *images[1];
} ScoreArgs;

static const char description[] =
    "Takes one attention score of IMAGE's forward pass apart: layer L, head H,\n"
    "query token I, key token J (token 0 is [cls], token t the patch t − 1 in\n"
    "reading order). It prints q_I and k_J of that head, their product in each\n"
    "of the Dh dimensions, and then the arithmetic of chapters 01 to 03:\n"
    "\n"
    "  sum      Σ q⊙k, the dot product           (blocks.L.attn.scores)\n"
    "  scale    1/√Dh\n"
    "  scaled   sum × scale                      (blocks.L.attn.scaled)\n"
    "  row max  the largest scaled score of query I's row\n"
    "  exp      exp(scaled − row max)\n"
    "  row sum  Σ over the row's keys of exp(scaled − row max)\n"
    "  prob     exp ÷ row sum                    (blocks.L.attn.probs)\n"
    "\n"
    "Each of sum, scaled and prob is checked against the stage the pass\n"
    "recorded: it says \"matches the recorded stage\" when they agree within\n"
    "float32's rounding, else the recorded value and the difference.\n"
    "Images are preprocessed as `vit classify` does.\n";

static const char examples[] =
    "  vit score --weights data/models/vit-fashion.safetensors \\\n"
    "            data/images/fashion-mnist/0000-ankle-boot.png \\\n"
    "            --layer 3 --head 1 --query 0 --key 25\n";

/* ----------------------------------------------------- recording one layer */

/** Records only the five stages of one layer that the parts read. */
typedef struct {
    TraceRecorder recorder;
    char prefix[32]; // "blocks.L.attn."
} LayerRecorder;

static void record_layer(void *user, const char *name, const Tensor *t) {
    LayerRecorder *lr = user;
    if (!strncmp(name, lr->prefix, strlen(lr->prefix))) trace_record(&lr->recorder, name, t);
}

/* ----------------------------------------------------------------- output */

static void print_check(const char *stage, const PartCheck *c) {
    if (c->matches) printf("  %s: matches the recorded stage\n", stage);
    else printf("  %s: recorded %.6g, differs by %.3g\n", stage, (double)c->recorded,
                (double)c->diff);
}

static void print_parts(const ScoreParts *p, const ScoreChecks *c, int layer) {
    // q, k, products are (Dh): one row per dimension
    printf("  %3s  %12s  %12s  %14s\n", "d", "q_i", "k_j", "q⊙k"); // ⊙: 3 bytes, 1 column
    for (int d = 0; d < p->Dh; d++)
        printf("  %3d  %12.6g  %12.6g  %12.6g\n", d, (double)p->q[d], (double)p->k[d],
               (double)p->products[d]);
    char stage[64];
    printf("sum      %.6g", (double)p->score);
    print_check(score_parts_stage(stage, sizeof stage, layer, "scores"), &c->score);
    printf("scale    %.6g  (1/√%d)\n", (double)p->scale, p->Dh);
    printf("scaled   %.6g", (double)p->scaled);
    print_check(score_parts_stage(stage, sizeof stage, layer, "scaled"), &c->scaled);
    printf("row max  %.6g  (key %d)\n", (double)p->row_max, p->row_argmax);
    printf("exp      %.6g\n", (double)p->exp);
    printf("row sum  %.6g  (%d keys)\n", (double)p->row_sum, p->N);
    printf("prob     %.6g", (double)p->prob);
    print_check(score_parts_stage(stage, sizeof stage, layer, "probs"), &c->prob);
}

/* ---------------------------------------------------------------- command */

// The layer must be one of the model's; the rest score_parts() checks against q's shape.
static VitStatus check_layer(const ScoreArgs *a, const Vit *vit, VitError *err) {
    if (a->layer < vit->config.depth) return VIT_OK;
    return vit_fail(err, VIT_ERR_INPUT, "%s has %d layers: --layer %d is outside 0 … %d",
                    a->weights, vit->config.depth, a->layer, vit->config.depth - 1);
}

static VitStatus score(const ScoreArgs *a, VitError *err) {
    // 1. the model, the preprocessing, the picture
    Vit vit;
    VitStatus s = vit_build(&vit, a->weights, err);
    if (s != VIT_OK) return s;
    Preprocess pre;
    Tensor input = {0};
    LayerRecorder lr = {0};
    ScoreParts parts = {0};
    ScoreChecks checks;
    snprintf(lr.prefix, sizeof lr.prefix, "blocks.%d.attn.", a->layer);
    if ((s = check_layer(a, &vit, err)) == VIT_OK &&
        (s = cli_apply_image_size(&vit, &a->image, err)) == VIT_OK &&
        (s = cli_preprocess(&pre, &a->image, &vit, err)) == VIT_OK)
        s = cli_load_images(&input, a->images, 1, &pre, err);
    // 2. one pass, the layer's stages recorded; 3. the score taken apart
    if (s == VIT_OK) s = vit_forward(&vit, &input, record_layer, &lr, err);
    const ScoreCell at = {0, a->head, a->query, a->key};
    if (s == VIT_OK && (s = score_parts_from_trace(&parts, &checks, &lr.recorder, a->layer, at,
                                                   err)) != VIT_OK) {
        char cause[sizeof err->msg];
        memcpy(cause, err->msg, sizeof cause); // name the model the cell is outside
        vit_fail(err, s, "%s: %s", a->weights, cause);
    }
    // 4. the numbers
    if (s == VIT_OK) {
        char safe[1024];
        printf("%s  (%s preprocessing, %d×%d)\n", vit_escape(safe, sizeof safe, a->images[0]),
               pre.name, vit.config.image_size, vit.config.image_size);
        printf("blocks.%d.attn  head %d  query %d  key %d  (Dh %d, N %d)\n", a->layer, a->head,
               a->query, a->key, parts.Dh, parts.N);
        print_parts(&parts, &checks, a->layer);
    }
    score_parts_free(&parts);
    trace_recorder_free(&lr.recorder);
    tensor_free(&input);
    vit_free(&vit);
    return s;
}

/**
 * @brief `vit score`: parse → build → load the image → one layer recorded → the parts → print.
 * @param[in] self        this command's row of the command table
 * @param[in] argc, argv  its command line, argv[0] = "score"
 * @param[out] err        the message on failure
 * @return the exit status: VIT_OK, VIT_ERR_INPUT or VIT_ERR_USAGE
 */
VitStatus cmd_score(const VitCommand *self, int argc, char **argv, VitError *err) {
    ScoreArgs a = {0};
    CliOption options[] = {
        {"--weights", CLI_STRING, &a.weights, "FILE",
         "the model: safetensors with timm, Hugging Face or torchvision names", .required = true},
        {"--layer", CLI_INT, &a.layer, "L", "the attention layer (block), from 0", .lo = 0,
         .hi = 4096, .required = true},
        {"--head", CLI_INT, &a.head, "H", "the head, from 0", .lo = 0, .hi = 4096,
         .required = true},
        {"--query", CLI_INT, &a.query, "I", "the query token: 0 is [cls], t the patch t − 1",
         .lo = 0, .hi = 1 << 20, .required = true},
        {"--key", CLI_INT, &a.key, "J", "the key token: 0 is [cls], t the patch t − 1", .lo = 0,
         .hi = 1 << 20, .required = true},
        CLI_IMAGE_OPTIONS(&a.image),
        CLI_OPTION_THREADS(&a.threads),
    };
    CliSpec spec = {.command = self, .description = description, .examples = examples,
                    .options = options, .option_count = sizeof options / sizeof options[0],
                    .positional = "IMAGE", .max_positional = 1, .positionals = a.images};
    bool help;
    VitStatus s = cli_parse(&spec, argc, argv, &help, err);
    if (s != VIT_OK || help) return s;
    if (spec.positional_count == 0)
        return vit_fail(err, VIT_ERR_USAGE, "'vit score' needs an IMAGE (see 'vit score --help')");
    cli_apply_threads(&spec, a.threads);
    return score(&a, err);
}
