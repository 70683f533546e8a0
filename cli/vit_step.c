/**
 * @file vit_step.c
 * @brief `vit step`: N AdamW steps on one batch, the loss of each printed;
 *        the trained weights written with timm's names.
 *
 * The recipe: parse the flags → vit_build() from the weights → copy the
 * parameters into memory of our own (a model loaded from a file is mapped
 * read-only, and AdamW writes its parameters in place) → read the batch and
 * its targets → N times: zero the gradients, forward + loss + backward,
 * clip the gradients' norm, one AdamW step at the schedule's learning rate
 * → print each step's loss → optionally write the weights, atomically.
 *
 * It is PyTorch's loop, line for line, so the two can be compared step by step:
 *
 *     opt = torch.optim.AdamW(groups, lr=LR, weight_decay=WD)  # timm's two groups
 *     for step in range(N):
 *         for g in opt.param_groups: g["lr"] = lr_at(step)     # warm-up + cosine
 *         opt.zero_grad()
 *         loss = F.cross_entropy(model(x), targets, label_smoothing=E)
 *         loss.backward()
 *         torch.nn.utils.clip_grad_norm_(model.parameters(), CLIP)
 *         opt.step()
 *
 * The same batch every step: the loss must fall (the model learns these few
 * images by heart), which makes this a check of the whole training path
 * rather than a way to train a model.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops/ops.h"
#include "train/optim.h"
#include "model/vit.h"
#include "vit_cli.h"

/** What `vit step` adds to the training flags. */
typedef struct {
    int steps;          // --steps N
    float lr;           // --lr: the peak learning rate
    float min_lr;       // --min-lr: the floor the cosine ends at
    int warmup;         // --warmup: steps of linear warm-up from 0
    float weight_decay; // --weight-decay: λ of the weights that decay
    float clip;         // --clip: the largest gradient norm; 0: no clipping
    const char *out;    // --out: the trained weights, or NULL
} StepArgs;

static const char description[] =
    "Trains the model in --weights on one batch for --steps steps and prints the\n"
    "loss of each: every step runs forward and backward (as `vit grad`), scales\n"
    "the gradients down when their norm is above --clip, and moves every\n"
    "parameter with AdamW (decoupled weight decay on the weights, none on the\n"
    "biases, LayerNorms, [cls] and positions, as timm's recipes do) at a learning\n"
    "rate that rises linearly for --warmup steps, from 0 to --lr, then falls along a\n"
    "cosine to --min-lr at the last step. On the same batch again and again the loss\n"
    "falls as the model learns these images by heart: the whole training path at\n"
    "work, step by step as torch.optim.AdamW takes it, so the printed losses can be\n"
    "compared with PyTorch's.\n"
    "\n"
    "The weights are copied into memory first (a file is only read), so the file\n"
    "in --weights is never changed; --out writes the trained model with timm's\n"
    "names (q, k and v fused, also for a Hugging Face checkpoint), ready for\n"
    "`vit classify` or timm. Each printed line: the step (from 1), its learning\n"
    "rate, the loss before its update, and the gradient norm before clipping.\n"
    "\n"
    "The batch is either IMAGE files (PNG, JPEG, BMP, PPM/PGM), preprocessed as in\n"
    "`vit classify`, or --input: a safetensors file with one float tensor named\n"
    "'input' of shape (B, C, S, S), already normalised as the model expects.\n";

static const char examples[] =
    "  vit make-weights --arch vit-tiny --depth 2 --classes 10 --seed 1 --out tiny.safetensors\n"
    "  vit step --weights tiny.safetensors cat.png dog.png --target 3,5 --steps 10\n"
    "  vit step --weights tiny.safetensors --input x.safetensors --target 3,1,4,1 \\\n"
    "           --steps 50 --lr 3e-4 --warmup 5 --weight-decay 0.05 --out trained.safetensors\n";

/* -------------------------------------------------- owned parameters */

/*
 * Copies every parameter into one allocation of our own, in timm's
 * state_dict order with q, k and v fused (each part at its row block, as
 * timm stores them), and points the model's weights at the copies. AdamW
 * can then update them in place (a mapped file is read-only), vit_save()
 * writes them with timm's names whichever convention the file had, and the
 * file itself is never written. *memory is the caller's to free, after
 * vit_free().
 */
static VitStatus own_parameters(float **memory, Vit *vit, VitError *err) {
    const VitConfig *c = &vit->config;
    const double bytes = (double)vit_param_count(c) * sizeof(float);
    VitStatus s = vit_check_memory(bytes, "a copy of the weights to train", err);
    float *m = s == VIT_OK ? vit_try_malloc_aligned((size_t)bytes ? (size_t)bytes : 1) : NULL;
    if (!m) {
        char need[VIT_NUM_BUF];
        return s != VIT_OK ? s : vit_fail(err, VIT_ERR_INPUT, "cannot copy the weights to "
                                          "train, %s: out of memory", vit_bytes(need, bytes));
    }
    *memory = m;
    VitParamIter it = vit_param_iter(c->depth, VIT_ORDER_STATE_DICT, VIT_QKV_FUSED);
    for (const VitParamSpec *spec; (spec = vit_param_next(&it));) {
        const int parts = vit_param_parts(spec);
        const size_t part = (size_t)vit_param_numel(spec, c) / (size_t)parts;
        for (int k = 0; k < parts; k++) {
            const float **slot = vit_param_slot(&vit->weights, spec, it.block, k);
            memcpy(m, *slot, part * sizeof(float));
            *slot = m;
            m += part;
        }
    }
    return VIT_OK;
}

// Bytes besides the forward's activations: the training buffers and gradients,
// AdamW's two moments and the copy of the weights.
static double step_bytes(const Vit *vit, int B) {
    return cli_train_bytes(vit, B) + 3.0 * (double)vit_param_count(&vit->config) * sizeof(float);
}

/* ------------------------------------------------------------- steps */

/** Everything a run of steps works with. */
typedef struct {
    Vit *vit;
    VitGrads *grads;
    AdamW *opt;
    const TrainBatch *tb;
    float smoothing;
} StepRun;

// One step: zero, forward + loss + backward, clip, AdamW. Fills the loss and the norm
// before clipping; a loss or norm that is not finite stops the run before the update.
static VitStatus train_step(const StepRun *t, const StepArgs *sa, double lr, int step,
                            float *loss, double *norm, VitError *err) {
    vit_grads_zero(t->grads);
    VitStatus s = vit_forward_backward(t->vit, t->grads, &t->tb->images, t->tb->targets,
                                       t->smoothing, loss, NULL, NULL, err);
    if (s != VIT_OK) return s;
    *norm = sa->clip > 0 ? optim_clip_grad_norm(t->opt->params, t->opt->count, sa->clip)
                         : optim_grad_norm(t->opt->params, t->opt->count);
    if (!isfinite(*loss) || !isfinite(*norm)) {
        VitError why;
        bool named = vit_check_finite(t->vit, &t->tb->images, &why) != VIT_OK;
        return vit_fail(err, VIT_ERR_INPUT, "step %d: the %s is not finite (%g); stopped "
                        "before updating the weights%s%s%s", step,
                        isfinite(*loss) ? "gradient norm" : "loss",
                        isfinite(*loss) ? *norm : (double)*loss, sa->out ? ", nothing written" : "",
                        named ? ": " : "", named ? why.msg : "");
    }
    adamw_step(t->opt, lr);
    return VIT_OK;
}

// The schedule and the optimizer's constants, from the flags (bad usage when they disagree).
static VitStatus read_schedule(LrSchedule *sched, AdamWConfig *cfg, const StepArgs *sa,
                               VitError *err) {
    *sched = (LrSchedule){.peak_lr = sa->lr, .min_lr = sa->min_lr, .warmup_start = 0,
                          .warmup_steps = sa->warmup, .total_steps = sa->steps};
    if (sa->warmup >= sa->steps)
        return vit_fail(err, VIT_ERR_USAGE, "--warmup %d: the warm-up must be shorter than the "
                        "run, --steps %d", sa->warmup, sa->steps);
    if (sa->min_lr > sa->lr)
        return vit_fail(err, VIT_ERR_USAGE, "--min-lr %g is above --lr %g: the cosine falls from "
                        "--lr to --min-lr", (double)sa->min_lr, (double)sa->lr);
    *cfg = adamw_defaults();
    cfg->weight_decay = sa->weight_decay;
    return lr_schedule_check(sched, err);
}

// What the run is, and the table's heading.
static void print_heading(const TrainArgs *a, const StepArgs *sa, int B) {
    char path[1024], clip[32];
    snprintf(clip, sizeof clip, "%g", (double)sa->clip);
    printf("training %s on %d image%s: %d AdamW step%s, lr %g after %d warm-up step%s, cosine to "
           "%g; weight decay %g; clip at %s; label smoothing %g\n",
           vit_escape(path, sizeof path, a->weights), B, B == 1 ? "" : "s", sa->steps,
           sa->steps == 1 ? "" : "s", (double)sa->lr, sa->warmup, sa->warmup == 1 ? "" : "s",
           (double)sa->min_lr, (double)sa->weight_decay, sa->clip > 0 ? clip : "never",
           (double)a->smoothing);
    printf("%6s %12s %12s %12s\n", "step", "lr", "loss", "grad norm");
}

/**
 * @brief `vit step`: parse → build → own the weights → batch → N steps, printed → write.
 * @param[in] self        this command's row of the command table
 * @param[in] argc, argv  its command line, argv[0] = "step"
 * @param[out] err        the message on failure
 * @return the exit status: VIT_OK, VIT_ERR_INPUT or VIT_ERR_USAGE
 */
VitStatus cmd_step(const VitCommand *self, int argc, char **argv, VitError *err) {
    TrainArgs a = {0};
    StepArgs sa = {.lr = 1e-3f, .weight_decay = 0.01f, .clip = 1.0f};
    CliOption options[] = {
        CLI_TRAIN_OPTIONS(&a),
        {"--steps", CLI_INT, &sa.steps, "N", "how many AdamW steps to take", .required = true,
         .lo = 1, .hi = 1000000},
        {"--lr", CLI_FLOAT, &sa.lr, "LR", "the peak learning rate, reached after the warm-up",
         .show_default = true, .lo = 0, .hi = 10},
        {"--min-lr", CLI_FLOAT, &sa.min_lr, "LR", "the learning rate of the last step",
         .show_default = true, .lo = 0, .hi = 10},
        {"--warmup", CLI_INT, &sa.warmup, "N",
         "steps over which the learning rate rises linearly from 0 to --lr", .show_default = true,
         .lo = 0, .hi = 1000000},
        {"--weight-decay", CLI_FLOAT, &sa.weight_decay, "WD",
         "AdamW's decoupled weight decay λ of the weights (not of biases, norms, [cls], "
         "positions)", .show_default = true, .lo = 0, .hi = 10},
        {"--clip", CLI_FLOAT, &sa.clip, "NORM",
         "scale the gradients down to this norm when longer (clip_grad_norm_); 0: never",
         .show_default = true, .lo = 0, .hi = 1e6},
        {"--out", CLI_STRING, &sa.out, "FILE",
         "write the trained weights here, with timm's names", .required = false},
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
    LrSchedule sched;
    AdamWConfig adamw;
    if ((s = cli_train_check_args(&a, "step", err)) != VIT_OK ||
        (s = read_schedule(&sched, &adamw, &sa, err)) != VIT_OK)
        return s;
    cli_apply_threads(&spec, a.threads);

    // 2. the model, never writing over an input; the batch and its targets
    Vit vit;
    TrainBatch tb;
    const TrainExtra extra = {step_bytes, "the backward pass, the gradients, AdamW's state and "
                                          "a copy of the weights"};
    if ((s = cli_train_open(&vit, &tb, &a, sa.out, &extra, err)) != VIT_OK) return s;

    // 3. the weights in memory of our own, their gradients and AdamW's state
    float *owned = NULL;
    VitGrads grads = {0};
    AdamW opt = {0};
    if (s == VIT_OK) s = own_parameters(&owned, &vit, err);
    if (s == VIT_OK) s = vit_train_prepare(&vit, VIT_KEEP_DEFAULT, tb.batch, err);
    if (s == VIT_OK) s = vit_grads_init(&grads, &vit, err);
    if (s == VIT_OK) s = adamw_init_vit(&opt, &vit, &grads.weights, &adamw, err);

    // 4. the steps, one line each (the heading once the first step went well: a
    //    run that cannot start says so in one line)
    const StepRun t = {&vit, &grads, &opt, &tb, a.smoothing};
    double t0 = vit_now();
    for (int step = 0; step < sa.steps && s == VIT_OK; step++) {
        const double lr = lr_at(&sched, step);
        float loss;
        double norm;
        s = train_step(&t, &sa, lr, step + 1, &loss, &norm, err);
        if (s == VIT_OK && step == 0) print_heading(&a, &sa, tb.batch);
        if (s == VIT_OK) printf("%6d %12.6g %12.6f %12.6g\n", step + 1, lr, (double)loss, norm);
        fflush(stdout);
    }
    const double seconds = vit_now() - t0;

    // 5. where the steps led: the loss after the last update; the weights, if asked
    if (s == VIT_OK) s = vit_forward(&vit, &tb.images, NULL, NULL, err);
    if (s == VIT_OK) {
        Tensor logits = vit_logits(&vit);
        const float after = loss_cross_entropy(NULL, logits.data, tb.targets, tb.batch,
                                          vit.config.num_classes, a.smoothing);
        printf("loss after %d step%s: %.6f (%.1f images/s)\n", sa.steps, sa.steps == 1 ? "" : "s",
               (double)after, seconds > 0 ? tb.batch * sa.steps / seconds : 0.0);
    }
    if (s == VIT_OK && sa.out) {
        s = vit_save(&vit, sa.out, err);
        char path[1024];
        if (s == VIT_OK) printf("%s: the trained weights, timm names\n",
                                vit_escape(path, sizeof path, sa.out));
    }
    adamw_free(&opt);
    vit_grads_free(&grads);
    cli_train_batch_free(&tb);
    vit_free(&vit);
    free(owned);
    return s;
}
