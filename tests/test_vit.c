/**
 * @file test_vit.c
 * @brief The whole forward pass against PyTorch, stage by stage, and the trace contract.
 *
 * Two models, both rebuilt here with vit_build_random() from the seeds that
 * tools/gen_golden_vit.py used (it had the same C code write them to a file,
 * then ran tools/ref_vit.py, an independent PyTorch ViT, in float64):
 *   - a small ViT (S 32, p 8, D 64, H 4, L 2, K 10) on a batch of 2, whose every
 *     trace tensor is pinned in full (tests/golden/vit_small.safetensors);
 *   - ViT-B/16, whose 187 trace tensors are pinned by shape, mean, std, L2 norm,
 *     min, max and 8 elements at stored indices (vit_base_stats.safetensors).
 * Tolerances: the small model's come with its golden, per stage, as
 * "tol.NAME" = 1e-4·rms(ref) absolute + 1e-4 relative (reasoned in
 * tools/gen_golden_vit.py); ViT-B's are BASE_TOL below. The expected trace
 * names and shapes are written out below from the contract's table (docs/contract.md): this
 * test is the contract's executable form.
 *
 * Two more answer keys that point at the stage: pre_logits must be each
 * image's [cls] row of norm and the logits head(pre_logits), derived by hand
 * from the trace of a batch of 3; and a model whose scaled attention scores
 * reach the hundreds (tests/golden/keys_overflow*.safetensors, from
 * tools/gen_golden_keys.py) must match PyTorch stage by stage, so a softmax
 * whose exp() overflows fails at blocks.0.attn.probs. A failing comparison
 * prints its first failing stage in full, then a line for each further one.
 *
 * Set VIT_GOLDEN_REPORT=1 to print every stage's largest difference from PyTorch.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "gemm/gemm.h"
#include "base/rng.h"
#include "model/trace_stages.h"
#include "model/vit.h"

/* ------------------------------------------------------------ the models */


// ViT-B/16 of tools/gen_golden_vit.py (BASE there).
static const VitInit base_init = {.seed = 5, .std = 0.02f, .bias_std = 0.02f, .norm_std = 0.1f};
enum { BASE_BATCH = 1, BASE_INPUT_SEED = 12 };

static bool report_wanted(void) { return golden_report_wanted(); }

static bool build(Vit *vit, const VitConfig *c, const VitInit *init) {
    VitError err;
    if (vit_build_random(vit, c, init, &err) != VIT_OK) {
        fprintf(stderr, "\n    %s\n", err.msg);
        CU_FAIL("vit_build_random failed");
        return false;
    }
    return true;
}

// The description tools/gen_golden_vit.py stores as metadata "config".
static void config_string(char *buf, size_t n, const VitConfig *c, const VitInit *init, int B,
                          int input_seed) {
    snprintf(buf, n,
             "img=%d patch=%d dim=%d depth=%d heads=%d mlp_dim=%d classes=%d seed=%d std=%g "
             "bias_std=%g norm_std=%g batch=%d input_seed=%d",
             c->image_size, c->patch_size, c->dim, c->depth, c->heads, c->mlp_dim,
             c->num_classes, (int)init->seed, (double)init->std, (double)init->bias_std,
             (double)init->norm_std, B, input_seed);
}

static void assert_golden_describes(const SafeTensors *g, const VitConfig *c,
                                    const VitInit *init, int B, int seed) {
    char want[512];
    config_string(want, sizeof want, c, init, B, seed);
    const char *got = st_meta(g, "config");
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    if (strcmp(got, want) != 0)
        fprintf(stderr, "\n    golden made for '%s',\n    test builds    '%s'\n", got, want);
    CU_ASSERT_STRING_EQUAL(got, want);
}

static double rms(const Tensor *t) {
    double s = 0;
    for (size_t i = 0; i < t->numel; i++) s += (double)t->data[i] * t->data[i];
    return t->numel ? sqrt(s / (double)t->numel) : 0.0;
}

/* -------------------------------------------------- probabilities sum to 1 */

// Every row of a (B, H, N, N) probability tensor is a distribution.
static bool probs_are_distributions(const char *name, const Tensor *t) {
    size_t N = (size_t)t->shape[3], rows = t->numel / N, bad = 0;
    for (size_t r = 0; r < rows; r++) {
        double sum = 0;
        for (size_t j = 0; j < N; j++) {
            float p = t->data[r * N + j];
            if (!(p >= 0.0f && p <= 1.0f)) bad++;
            sum += p;
        }
        if (fabs(sum - 1.0) > 1e-5) bad++;
    }
    if (bad) fprintf(stderr, "\n    %s: %zu rows are not distributions\n", name, bad);
    return bad == 0;
}

static bool is_probs(const char *name) {
    size_t n = strlen(name);
    return n >= 10 && strcmp(name + n - 10, "attn.probs") == 0;
}

/* ------------------------------------------------- small model vs PyTorch */

// Compares with the golden (golden_check) and, on request, reports the difference.
typedef struct {
    GoldenCheck g;
    int probs_checked;
    bool probs_ok;
} SmallCheck;

static void small_check(void *user, const char *name, const Tensor *t) {
    SmallCheck *s = user;
    golden_check(&s->g, name, t); // prints each stage's difference when VIT_GOLDEN_REPORT=1
    if (is_probs(name)) {
        s->probs_checked++;
        if (!probs_are_distributions(name, t)) s->probs_ok = false;
    }
}

static void run_small_against_golden(GemmBackend backend) {
    gemm_set_backend(backend);
    Vit vit;
    if (!build(&vit, &check_small_config, &check_small_init)) return;
    Tensor x = check_image_batch(&check_small_config, CHECK_SMALL_BATCH, CHECK_SMALL_INPUT_SEED);
    SmallCheck s = {.probs_ok = true};
    if (golden_open(&s.g, "vit_small.safetensors")) {
        assert_golden_describes(&s.g.golden, &check_small_config, &check_small_init,
                                CHECK_SMALL_BATCH, CHECK_SMALL_INPUT_SEED);
        if (report_wanted()) fprintf(stderr, "\n    [%s]", gemm_backend_name(backend));
        VitError err;
        CU_ASSERT_EQUAL(vit_forward(&vit, &x, small_check, &s, &err), VIT_OK);
        CU_ASSERT_EQUAL(s.g.checked, TRACE_STAGES(check_small_config.depth));
        CU_ASSERT_EQUAL(s.probs_checked, check_small_config.depth);
        CU_ASSERT_TRUE(s.probs_ok);
        golden_finish(&s.g);
    }
    tensor_free(&x);
    vit_free(&vit);
    gemm_use_choice(); // the defaults again
}

static void test_small_matches_pytorch(void) { run_small_against_golden(gemm_get_backend()); }
static void test_small_matches_pytorch_naive(void) { run_small_against_golden(GEMM_NAIVE); }
static void test_small_matches_pytorch_tiled(void) { run_small_against_golden(GEMM_TILED); }

/* -------------------------------------------------------- the contract */

// The contract's table (docs/contract.md), row by row. Axes: B batch, 3 colour channels, S side, P patches,
// N tokens, D width, H heads, Dh = D/H, 4D MLP width, C classes.
typedef struct {
    const char *name;
    const char *shape;
} ContractRow;

static const ContractRow contract_before[] = {
    {"input", "B,3,S,S"}, {"patch_embed", "B,P,D"}, {"tokens", "B,N,D"}, {"embed", "B,N,D"},
};
static const ContractRow contract_block[] = { // each prefixed "blocks.{i}."
    {"norm1", "B,N,D"},        {"attn.q", "B,H,N,Dh"},     {"attn.k", "B,H,N,Dh"},
    {"attn.v", "B,H,N,Dh"},    {"attn.scores", "B,H,N,N"}, {"attn.scaled", "B,H,N,N"},
    {"attn.probs", "B,H,N,N"}, {"attn.context", "B,N,D"},  {"attn.proj", "B,N,D"},
    {"resid1", "B,N,D"},       {"norm2", "B,N,D"},         {"mlp.fc1", "B,N,4D"},
    {"mlp.gelu", "B,N,4D"},    {"mlp.fc2", "B,N,D"},       {"out", "B,N,D"},
};
static const ContractRow contract_after[] = {
    {"norm", "B,N,D"}, {"pre_logits", "B,D"}, {"logits", "B,C"},
};
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))

static int axis(const VitConfig *c, int B, const char *a) {
    int P = (c->image_size / c->patch_size) * (c->image_size / c->patch_size);
    if (!strcmp(a, "B")) return B;
    if (!strcmp(a, "3")) return 3;
    if (!strcmp(a, "S")) return c->image_size;
    if (!strcmp(a, "P")) return P;
    if (!strcmp(a, "N")) return P + 1;
    if (!strcmp(a, "D")) return c->dim;
    if (!strcmp(a, "H")) return c->heads;
    if (!strcmp(a, "Dh")) return c->dim / c->heads;
    if (!strcmp(a, "4D")) return 4 * c->dim;
    if (!strcmp(a, "C")) return c->num_classes;
    CU_FAIL("unknown axis in the contract table");
    return -1;
}

// The contract's shape "B,H,N,Dh" as numbers; returns ndim.
static int contract_shape(const VitConfig *c, int B, const char *spec, int shape[4]) {
    char buf[32];
    snprintf(buf, sizeof buf, "%s", spec);
    int n = 0;
    for (char *save, *a = strtok_r(buf, ",", &save); a && n < 4; a = strtok_r(NULL, ",", &save))
        shape[n++] = axis(c, B, a);
    return n;
}

/** The contract unrolled for one configuration: names and shapes in order. */
typedef struct {
    char name[64];
    int ndim, shape[4];
} Expected;

static int contract_expand(Expected *out, const VitConfig *c, int B) {
    int n = 0;
    for (int i = 0; i < COUNT(contract_before); i++, n++) {
        snprintf(out[n].name, sizeof out[n].name, "%s", contract_before[i].name);
        out[n].ndim = contract_shape(c, B, contract_before[i].shape, out[n].shape);
    }
    for (int L = 0; L < c->depth; L++)
        for (int i = 0; i < COUNT(contract_block); i++, n++) {
            snprintf(out[n].name, sizeof out[n].name, "blocks.%d.%s", L, contract_block[i].name);
            out[n].ndim = contract_shape(c, B, contract_block[i].shape, out[n].shape);
        }
    for (int i = 0; i < COUNT(contract_after); i++, n++) {
        snprintf(out[n].name, sizeof out[n].name, "%s", contract_after[i].name);
        out[n].ndim = contract_shape(c, B, contract_after[i].shape, out[n].shape);
    }
    return n;
}

// Records the order, names and shapes a forward pass emits.
typedef struct {
    Expected got[512];
    int count;
} NameLog;

static void log_names(void *user, const char *name, const Tensor *t) {
    NameLog *log = user;
    if (log->count >= COUNT(log->got)) return;
    Expected *e = &log->got[log->count++];
    snprintf(e->name, sizeof e->name, "%s", name);
    e->ndim = t->ndim;
    for (int i = 0; i < 4; i++) e->shape[i] = i < t->ndim ? t->shape[i] : 0;
}

static void shape_text(char *buf, size_t n, int ndim, const int *shape) {
    size_t used = (size_t)snprintf(buf, n, "(");
    for (int i = 0; i < ndim; i++)
        used += (size_t)snprintf(buf + used, n - used, "%s%d", i ? ", " : "", shape[i]);
    snprintf(buf + used, n - used, ")");
}

static bool same_shape(int ndim_a, const int *a, int ndim_b, const int *b) {
    if (ndim_a != ndim_b) return false;
    for (int i = 0; i < ndim_a; i++)
        if (a[i] != b[i]) return false;
    return true;
}

static void check_contract(const VitConfig *c, int B) {
    static Expected want[512];
    static NameLog log;
    memset(&log, 0, sizeof log);
    int n = contract_expand(want, c, B);
    CU_ASSERT_EQUAL(n, 7 + 15 * c->depth);

    Vit vit;
    if (!build(&vit, c, &check_small_init)) return;
    Tensor x = check_image_batch(c, B, 3);
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_forward(&vit, &x, log_names, &log, &err), VIT_OK);
    CU_ASSERT_EQUAL(log.count, n);
    for (int i = 0; i < n && i < log.count; i++) {
        char a[64], b[64];
        shape_text(a, sizeof a, log.got[i].ndim, log.got[i].shape);
        shape_text(b, sizeof b, want[i].ndim, want[i].shape);
        bool name_ok = strcmp(log.got[i].name, want[i].name) == 0;
        bool shape_ok = same_shape(log.got[i].ndim, log.got[i].shape, want[i].ndim, want[i].shape);
        if (!name_ok || !shape_ok)
            fprintf(stderr, "\n    trace #%d: %s %s, the contract says %s %s", i, log.got[i].name,
                    a, want[i].name, b);
        CU_ASSERT_TRUE(name_ok && shape_ok);

        // lib/model/trace_stages.c must agree with the contract too
        int block = -2, shape[4] = {0};
        const VitStage *st = vit_stage_find(want[i].name, &block);
        CU_ASSERT_PTR_NOT_NULL(st);
        int nd = vit_stage_shape(c, B, want[i].name, shape);
        if (!same_shape(nd, shape, want[i].ndim, want[i].shape)) {
            shape_text(a, sizeof a, nd, shape);
            fprintf(stderr, "\n    vit_stage_shape(%s) = %s, the contract says %s", want[i].name,
                    a, b);
            CU_FAIL("vit_stage_shape disagrees with the contract");
        }
        int want_block = -1;
        if (strncmp(want[i].name, "blocks.", 7) == 0) want_block = atoi(want[i].name + 7);
        CU_ASSERT_EQUAL(block, want_block);
    }
    CU_ASSERT_EQUAL(vit_trace_length(c), n);
    tensor_free(&x);
    vit_free(&vit);
}

static void test_trace_is_the_contract(void) {
    check_contract(&check_small_config, CHECK_SMALL_BATCH);
    // another model (3 blocks, 2 heads, 36 patches) on a single image; its MLP
    // keeps the contract's width 4D
    VitConfig c = {.image_size = 24, .patch_size = 4, .channels = 3, .dim = 32, .depth = 3,
                   .heads = 2, .mlp_dim = 128, .num_classes = 7, .ln_eps = 1e-6f};
    check_contract(&c, 1);
}

/* ---------------------------------------------------------------- batches */

static void record_all(void *user, const char *name, const Tensor *t) {
    trace_record(user, name, t);
}

// Every stage of a batch of 2 equals, item by item, the same stage of two runs of 1:
// images in a batch never mix.
static void test_batch_items_do_not_mix(void) {
    Vit vit;
    if (!build(&vit, &check_small_config, &check_small_init)) return;
    Tensor pair = check_image_batch(&check_small_config, 2, 31);
    const size_t per_image = pair.numel / 2;
    TraceRecorder both = {0}, one[2] = {{0}};
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_forward(&vit, &pair, record_all, &both, &err), VIT_OK);
    for (int b = 0; b < 2; b++) {
        Tensor x = tensor_view(pair.data + b * per_image, 4, 1, 3, check_small_config.image_size,
                               check_small_config.image_size);
        CU_ASSERT_EQUAL_FATAL(vit_forward(&vit, &x, record_all, &one[b], &err), VIT_OK);
    }
    CU_ASSERT_EQUAL(both.count, one[0].count);
    CheckReport report = {0};
    for (int i = 0; i < both.count && i < one[0].count; i++) {
        const Tensor *t = &both.entries[i].t;
        CU_ASSERT_EQUAL(t->shape[0], 2);
        for (int b = 0; b < 2; b++) {
            const Tensor *single = &one[b].entries[i].t;
            Tensor item = *single;
            item.data = t->data + (size_t)b * single->numel;
            item.owns_data = false;
            char label[96];
            snprintf(label, sizeof label, "%s [item %d of 2 vs alone]", both.entries[i].name, b);
            // the same arithmetic on the same rows, but BLAS may block a GEMM of 2N
            // rows differently from one of N: ~3e-6 x rms apart, as far as each is
            // from PyTorch; a mixed-up image would be ~1 x rms off
            tensor_close_in(&report, &item, single, (float)(5e-5 * rms(single)), 1e-5f, label);
        }
    }
    assert_report_clean(&report, "stage items");
    // and the two images really differ, so the check above means something
    CU_ASSERT_NOT_EQUAL(one[0].entries[one[0].count - 1].t.data[0],
                        one[1].entries[one[1].count - 1].t.data[0]);
    trace_recorder_free(&both);
    trace_recorder_free(&one[0]);
    trace_recorder_free(&one[1]);
    tensor_free(&pair);
    vit_free(&vit);
}

/* ------------------------------------------------------ the [cls] row */

// pre_logits is x[:, 0] of the final norm, the [cls] row of every image, and the
// logits are head(pre_logits): both derived here by hand from the trace of one
// forward pass over a batch of 3 (so an image's row cannot stand in for another's).
static void test_pre_logits_is_the_cls_row(void) {
    enum { B = 3 };
    Vit vit;
    if (!build(&vit, &check_small_config, &check_small_init)) return;
    Tensor x = check_image_batch(&check_small_config, B, 21);
    TraceRecorder r = {0};
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_forward(&vit, &x, record_all, &r, &err), VIT_OK);
    const Tensor *norm = trace_find(&r, "norm"), *pre = trace_find(&r, "pre_logits");
    const Tensor *logits = trace_find(&r, "logits");
    CU_ASSERT_PTR_NOT_NULL_FATAL(norm);
    CU_ASSERT_PTR_NOT_NULL_FATAL(pre);
    CU_ASSERT_PTR_NOT_NULL_FATAL(logits);
    const int N = vit_num_tokens(&check_small_config), D = check_small_config.dim;
    const int Y = check_small_config.num_classes;
    Tensor want_pre = tensor_new(2, B, D), want_logits = tensor_new(2, B, Y);
    for (int b = 0; b < B; b++)
        memcpy(want_pre.data + (size_t)b * D, norm->data + (size_t)b * N * D, sizeof(float) * D);
    // a copy: exact
    assert_tensor_close(pre, &want_pre, 0.0f, 0.0f, "pre_logits vs norm[:, 0, :], the [cls] rows");
    // logits[b, y] = head_b[y] + Σ_d head_w[y, d] · pre_logits[b, d], in double; of the
    // traced pre_logits, so a wrong row fails above and only there
    const VitWeights *w = &vit.weights;
    if (pre->numel == (size_t)B * D)
        for (int b = 0; b < B; b++)
            for (int y = 0; y < Y; y++) {
                double sum = w->head_b[y];
                for (int d = 0; d < D; d++)
                    sum += (double)w->head_w[(size_t)y * D + d] * pre->data[(size_t)b * D + d];
                want_logits.data[(size_t)b * Y + y] = (float)sum;
            }
    // 64-long float32 dot products of order-1 values: ~1e-6 from the double sums
    assert_tensor_close(logits, &want_logits, 2e-5f, 1e-5f, "logits vs head(pre_logits)");
    tensor_free(&want_pre);
    tensor_free(&want_logits);
    trace_recorder_free(&r);
    tensor_free(&x);
    vit_free(&vit);
}

/* -------------------------------------------- scores that overflow exp() */

// tests/golden/keys_overflow*.safetensors (tools/gen_golden_keys.py): a one-block
// model (S 8, p 4, D 16, H 2) whose q and k weights are ten times the others,
// so the scaled scores reach 295 and most rows hold one above 88.7, where
// exp() overflows float32. A softmax that does not subtract each row's maximum
// first gives inf/inf = NaN there; PyTorch's (float64) trace pins every stage.
static void test_overflowing_scores_match_pytorch(void) {
    const char *trace = "keys_overflow.safetensors";
    Tensor scaled = golden_tensor(trace, "blocks.0.attn.scaled");
    float top = -INFINITY;
    for (size_t i = 0; i < scaled.numel; i++) top = fmaxf(top, scaled.data[i]);
    CU_ASSERT_TRUE(top > 88.73f); // the fixture does overflow a naive exp()
    tensor_free(&scaled);
    Vit vit;
    VitError err;
    if (vit_build(&vit, golden_path("keys_overflow_timm.safetensors"), &err) != VIT_OK) {
        fprintf(stderr, "\n    %s\n", err.msg);
        CU_FAIL("the overflow model did not load");
        return;
    }
    CU_ASSERT_EQUAL(vit.config.heads, 2);
    Tensor x = golden_tensor(trace, "input");
    GoldenCheck g;
    if (golden_open(&g, trace)) {
        CU_ASSERT_EQUAL(vit_forward(&vit, &x, golden_check, &g, &err), VIT_OK);
        golden_finish(&g);
    }
    tensor_free(&x);
    vit_free(&vit);
}

/* ----------------------------------------------------- listening or not */

// Untraced, a forward pass takes attention_online(): the same logits to float
// rounding (the sums in another order), and the (N, N) buffers, which it has no
// use for, are left exactly as they were (here: NaN, which would show anywhere).
static void test_forward_without_trace_gives_same_logits(void) {
    Vit vit;
    if (!build(&vit, &check_small_config, &check_small_init)) return;
    Tensor x = check_image_batch(&check_small_config, 2, 5);
    TraceRecorder r = {0};
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_forward(&vit, &x, record_all, &r, &err), VIT_OK);
    const MhaScratch *m = &vit.acts.block.mha;
    CU_ASSERT_FALSE(m->keep_matrices); // a model not prepared for training
    const int N = vit_num_tokens(&check_small_config);
    const size_t bhnn = (size_t)2 * check_small_config.heads * N * N;
    for (size_t i = 0; i < bhnn; i++) m->scores[i] = m->scaled[i] = m->probs[i] = NAN;
    CU_ASSERT_EQUAL_FATAL(vit_forward(&vit, &x, NULL, NULL, &err), VIT_OK);
    Tensor quiet = vit_logits(&vit);
    const Tensor *traced = trace_find(&r, "logits");
    CU_ASSERT_PTR_NOT_NULL_FATAL(traced);
    if (!assert_tensor_close(&quiet, traced, 1e-5f, 1e-5f, "logits without a trace") &&
        !check_attention_online_by_hand())
        check_hint("attention_online() (chapter 13), which the forward runs when nothing reads "
                   "the (N, N) matrices, is not softmax(q·kᵀ/√Dh)·v on a small case done by "
                   "hand: start there, and at online_softmax_block(), which it calls");
    size_t written = 0;
    for (size_t i = 0; i < bhnn; i++)
        written += !isnan(m->scores[i]) || !isnan(m->scaled[i]) || !isnan(m->probs[i]);
    CU_ASSERT_EQUAL(written, 0);
    // traced again: the matrices are back, and the logits are the first trace's, bit for bit
    TraceRecorder again = {0};
    CU_ASSERT_EQUAL_FATAL(vit_forward(&vit, &x, record_all, &again, &err), VIT_OK);
    const Tensor *second = trace_find(&again, "logits");
    CU_ASSERT_PTR_NOT_NULL_FATAL(second);
    assert_tensor_close(second, traced, 0.0f, 0.0f, "logits traced twice");
    CU_ASSERT_FALSE(isnan(m->probs[0]));
    trace_recorder_free(&again);
    trace_recorder_free(&r);
    tensor_free(&x);
    vit_free(&vit);
}

/* ------------------------------------------------------ the fused block */

// How a test makes vit_block_forward_fused() project q, k and v.
typedef enum {
    QKV_ONE_PRODUCT,  // timm's fused (3D, D) weight: one product
    QKV_SPLIT,        // q, k and v's weights apart (as Hugging Face stores them): three
    QKV_NO_ROOM,      // no room for the (B, N, 3D) output (acts.qkv NULL): three
} QkvRoad;

// A block's inference buffers for a batch of B, NaN everywhere, so a buffer the
// fused pass reads before writing shows up as NaN in its output.
static float *inference_acts(VitBlockActs *a, const VitConfig *c, int B, QkvRoad road) {
    const size_t floats = vit_block_acts_floats(c, B);
    float *mem = malloc(sizeof(float) * floats);
    CU_ASSERT_PTR_NOT_NULL_FATAL(mem);
    for (size_t i = 0; i < floats; i++) mem[i] = NAN;
    vit_block_acts_carve(a, mem, c, B);
    a->mha.keep_matrices = false; // what vit_acts_ensure() sets for a forward pass only
    if (road == QKV_NO_ROOM) a->qkv = NULL;
    return mem;
}

// w with q, k and v's weights copied apart, so they are no longer one matrix; the
// copies go to @p apart (3·D·D floats), laid out v, q, k so no third follows another.
static VitBlockWeights with_qkv_apart(const VitBlockWeights *w, float *apart, int D) {
    const size_t dd = (size_t)D * D;
    VitBlockWeights split = *w;
    memcpy(apart, w->attn.v_w, dd * sizeof(float));
    memcpy(apart + dd, w->attn.q_w, dd * sizeof(float));
    memcpy(apart + 2 * dd, w->attn.k_w, dd * sizeof(float));
    split.attn.v_w = apart, split.attn.q_w = apart + dd, split.attn.k_w = apart + 2 * dd;
    return split;
}

// Each block of the small ViT, fused, on PyTorch's input to it: its resid1 and its
// output against PyTorch's, within the golden's tolerance for them.
static void run_fused_block_against_golden(QkvRoad road, GemmBackend backend) {
    gemm_set_backend(backend);
    Vit vit;
    if (!build(&vit, &check_small_config, &check_small_init)) return;
    const VitConfig *c = &vit.config;
    const int D = c->dim;
    float *apart = malloc(sizeof(float) * 3 * (size_t)D * D);
    for (int i = 0; i < c->depth; i++) {
        char in_name[32], resid_name[32], out_name[32];
        if (i == 0) snprintf(in_name, sizeof in_name, "embed");
        else snprintf(in_name, sizeof in_name, "blocks.%d.out", i - 1);
        snprintf(resid_name, sizeof resid_name, "blocks.%d.resid1", i);
        snprintf(out_name, sizeof out_name, "blocks.%d.out", i);
        Tensor x = golden_tensor("vit_small.safetensors", in_name);
        const int B = x.shape[0];
        VitBlockActs a;
        float *mem = inference_acts(&a, c, B, road);
        VitBlockWeights w = vit.weights.blocks[i];
        if (road == QKV_SPLIT) w = with_qkv_apart(&w, apart, D);
        CU_ASSERT_TRUE(vit_block_fusable(&a, NULL));
        Tensor out = tensor_new(3, B, x.shape[1], D);
        vit_block_forward_fused(out.data, x.data, &w, c, &a, B);
        Tensor resid1 = {.data = a.resid1, .ndim = 3, .shape = {B, x.shape[1], D},
                         .numel = out.numel};
        expect_golden_tensor("vit_small.safetensors", resid_name, &resid1);
        expect_golden_tensor("vit_small.safetensors", out_name, &out);
        tensor_free(&out), tensor_free(&x), free(mem);
    }
    free(apart);
    vit_free(&vit);
    gemm_use_choice();
}

static void test_fused_block_one_product(void) {
    run_fused_block_against_golden(QKV_ONE_PRODUCT, GEMM_NAIVE);
    run_fused_block_against_golden(QKV_ONE_PRODUCT, GEMM_TILED);
    if (gemm_have_blas()) run_fused_block_against_golden(QKV_ONE_PRODUCT, GEMM_BLAS);
}
static void test_fused_block_split_qkv(void) {
    run_fused_block_against_golden(QKV_SPLIT, gemm_get_backend());
}
static void test_fused_block_no_room(void) {
    run_fused_block_against_golden(QKV_NO_ROOM, gemm_get_backend());
}

// An odd model (N = 26 tokens, D = 36, 3 heads of 12, M = 60, batch 3): the fused
// block against the recipe, which the goldens pin stage by stage, to float rounding,
// on each road for q, k and v, and with a head switched off.
static void test_fused_block_odd_shapes(void) {
    const VitConfig odd = {.image_size = 20, .patch_size = 4, .channels = 3, .dim = 36,
                           .depth = 1, .heads = 3, .mlp_dim = 60, .num_classes = 5,
                           .ln_eps = 1e-6f};
    Vit vit;
    if (!build(&vit, &odd, &check_small_init)) return;
    const int B = 3, N = vit_num_tokens(&odd), D = odd.dim;
    Tensor x = tensor_new(3, B, N, D);
    Rng rng;
    rng_seed(&rng, 3);
    rng_fill_uniform(&rng, x.data, x.numel, -2.0f, 2.0f);
    const VitBlockWeights *w = &vit.weights.blocks[0];
    float *apart = malloc(sizeof(float) * 3 * (size_t)D * D);
    const QkvRoad roads[] = {QKV_ONE_PRODUCT, QKV_SPLIT, QKV_NO_ROOM, QKV_ONE_PRODUCT};
    const bool middle_head_off[3] = {false, true, false};
    for (size_t r = 0; r < sizeof roads / sizeof roads[0]; r++) {
        VitBlockActs a;
        float *mem = inference_acts(&a, &odd, B, roads[r]);
        VitBlockWeights wr = roads[r] == QKV_SPLIT ? with_qkv_apart(w, apart, D) : *w;
        if (r == 3) wr.attn.head_off = middle_head_off; // its context 0 on both roads
        Tensor fused = tensor_new(3, B, N, D), recipe = tensor_new(3, B, N, D);
        vit_block_forward_fused(fused.data, x.data, &wr, &odd, &a, B);
        TraceRecorder rec = {0};
        const Tracer listening = {record_all, &rec, "blocks.0."}; // a listener: the recipe
        CU_ASSERT_FALSE(vit_block_fusable(&a, &listening));
        vit_block_forward(recipe.data, x.data, &wr, &odd, &a, B, &listening);
        assert_tensor_close(&fused, &recipe, 1e-5f, 1e-5f, "fused block against the recipe");
        trace_recorder_free(&rec);
        tensor_free(&fused), tensor_free(&recipe), free(mem);
    }
    free(apart);
    tensor_free(&x);
    vit_free(&vit);
}

static void test_forward_refuses_wrong_input(void) {
    Vit vit;
    if (!build(&vit, &check_small_config, &check_small_init)) return;
    Tensor x = tensor_new(4, 1, 3, 16, 16), y = tensor_new(3, 3, 32, 32);
    VitError err = {{0}};
    CU_ASSERT_EQUAL(vit_forward(&vit, &x, NULL, NULL, &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "(1, 3, 16, 16)"));
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "(B, 3, 32, 32)"));
    CU_ASSERT_EQUAL(vit_forward(&vit, &y, NULL, NULL, &err), VIT_ERR_INPUT);
    tensor_free(&x);
    tensor_free(&y);
    vit_free(&vit);
}

/* --------------------------------------------------- ViT-B/16 statistics */

// Tolerance for ViT-B against the float64 PyTorch reference, relative to a scale
// of the tensor: its rms (L2/√n) for the mean and the samples, itself for std
// and L2, the largest |min|, |max| for min and max. Measured with OpenBLAS:
// mean 4e-8, std and L2 1e-7, min and max 8e-7, samples 3e-6 (float32 over 12
// blocks of 768- and 3072-long dot products). 5e-5 leaves a margin of 15 for
// other BLAS kernels and thread counts; a wrong weight, index or bias anywhere
// moves these by 1e-2 or more.
#define BASE_TOL 5e-5

// One statistic of one stage that is off.
typedef struct {
    char what[24]; // "mean", "std", "L2", "min", "max", "[1234]"
    double got, want, ratio, scale;
} StatMiss;

enum { BASE_MAX_STATS = 5 + 16 };

typedef struct {
    SafeTensors g;
    char **names;      // the golden's stage names, in order
    int rows;          // how many
    Tensor stats;      // (rows, 5) mean, std, l2, min, max
    Tensor value;      // (rows, 8) sampled elements
    const int64_t *shape; // (rows, 4), raw from the file
    const int64_t *index; // (rows, 8), raw from the file
    int samples;
    int seen, probs_checked;
    bool probs_ok;
    CheckReport report; // failing stages: the first in full, then a line each
    StatMiss miss[BASE_MAX_STATS]; // the current stage's statistics that are off
    int misses, compared;
    double worst[4];   // largest error / tolerance scale: mean, std+l2, min+max, samples
} BaseCheck;

static bool base_open(BaseCheck *b) {
    memset(b, 0, sizeof *b);
    b->probs_ok = true;
    VitError err;
    if (st_open(&b->g, golden_path("vit_base_stats.safetensors"), &err) != VIT_OK) {
        fprintf(stderr, "\n    %s\n", err.msg);
        CU_FAIL("ViT-B golden did not load");
        return false;
    }
    const StTensor *shape = st_find(&b->g, "shape"), *index = st_find(&b->g, "index");
    const char *stages = st_meta(&b->g, "stages");
    if (!shape || !index || !stages || shape->dtype != ST_I64 || index->dtype != ST_I64 ||
        st_read_tensor(&b->g, "stats", &b->stats, &err) != VIT_OK ||
        st_read_tensor(&b->g, "value", &b->value, &err) != VIT_OK) {
        CU_FAIL("ViT-B golden lacks shape/stats/index/value or the stage list");
        st_close(&b->g);
        return false;
    }
    b->rows = (int)shape->shape[0];
    b->samples = (int)index->shape[1];
    CU_ASSERT_FATAL(5 + b->samples <= BASE_MAX_STATS);
    // the file is little-endian and 8-byte aligned (header padded to 8, I64 first)
    b->shape = (const int64_t *)(const void *)shape->bytes;
    b->index = (const int64_t *)(const void *)index->bytes;
    b->names = calloc((size_t)b->rows, sizeof(char *));
    char *list = strdup(stages), *save = NULL;
    int n = 0;
    for (char *s = strtok_r(list, ",", &save); s && n < b->rows; s = strtok_r(NULL, ",", &save))
        b->names[n++] = strdup(s);
    free(list);
    CU_ASSERT_EQUAL(n, b->rows);
    return true;
}

static void base_close(BaseCheck *b) {
    for (int i = 0; i < b->rows; i++) free(b->names[i]);
    free(b->names);
    tensor_free(&b->stats);
    tensor_free(&b->value);
    st_close(&b->g);
}

// One statistic: |got - want| <= BASE_TOL · scale; tracks the worst ratio, keeps what is off.
static void base_compare(BaseCheck *b, const char *what, double got, double want, double scale,
                         int kind) {
    double ratio = fabs(got - want) / scale;
    b->compared++;
    if (ratio > b->worst[kind]) b->worst[kind] = ratio;
    if (ratio <= BASE_TOL) return; // NaN falls through: it is off
    if (b->misses >= BASE_MAX_STATS) return;
    StatMiss *m = &b->miss[b->misses++];
    snprintf(m->what, sizeof m->what, "%s", what);
    m->got = got, m->want = want, m->ratio = ratio, m->scale = scale;
}

// A stage that fails for another reason than its statistics (order, shape), in one line.
static void base_stage_broken(BaseCheck *b, const char *name, const char *why) {
    b->report.compared++;
    if (check_report_fail(&b->report, name) != CHECK_QUIET) fprintf(stderr, "\n    %s\n", why);
}

// After a stage's statistics: report it, the first failing stage in full, later ones in a line.
static void base_stage_done(BaseCheck *b, const char *name, const Tensor *t) {
    b->report.compared++;
    if (b->misses == 0) return;
    char shape[64];
    tensor_shape_str(t, shape, sizeof shape);
    CheckDetail detail = check_report_fail(&b->report, name);
    int worst = 0;
    for (int i = 1; i < b->misses; i++)
        if (!(b->miss[i].ratio <= b->miss[worst].ratio)) worst = i;
    if (detail == CHECK_FULL) {
        fprintf(stderr, "\n    %s %s: %d of %d statistics differ from PyTorch's by more than %.0e"
                " x scale\n", name, shape, b->misses, b->compared, BASE_TOL);
        for (int i = 0; i < b->misses; i++) {
            const StatMiss *m = &b->miss[i];
            fprintf(stderr, "      %-8s got %.8g, PyTorch %.8g (diff %.2e x scale %.3g)\n",
                    m->what, m->got, m->want, m->ratio, m->scale);
        }
    } else if (detail == CHECK_LINE) {
        const StatMiss *m = &b->miss[worst];
        fprintf(stderr, "    also %s %s: %d of %d statistics differ, worst %s: got %.8g, PyTorch "
                "%.8g (diff %.2e x scale)\n", name, shape, b->misses, b->compared, m->what, m->got,
                m->want, m->ratio);
    }
}

static void base_check(void *user, const char *name, const Tensor *t) {
    BaseCheck *b = user;
    int row = b->seen++;
    b->misses = b->compared = 0;
    char why[256];
    if (row >= b->rows || strcmp(name, b->names[row]) != 0) {
        snprintf(why, sizeof why, "trace #%d is %s, the golden has %s", row, name,
                 row < b->rows ? b->names[row] : "nothing more");
        base_stage_broken(b, name, why);
        return;
    }
    if (is_probs(name)) {
        b->probs_checked++;
        if (!probs_are_distributions(name, t)) b->probs_ok = false;
    }
    const int64_t *shape = b->shape + 4 * row;
    for (int i = 0; i < 4; i++) {
        int64_t want = i < t->ndim ? t->shape[i] : 0;
        if (shape[i] != want) {
            snprintf(why, sizeof why, "%s: dimension %d is %lld, PyTorch %lld", name, i,
                     (long long)want, (long long)shape[i]);
            base_stage_broken(b, name, why);
            return;
        }
    }
    // statistics in double, computed here rather than by the library under test
    double sum = 0, sq = 0, lo = INFINITY, hi = -INFINITY;
    for (size_t i = 0; i < t->numel; i++) {
        double v = t->data[i];
        sum += v;
        sq += v * v;
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
    }
    double n = (double)t->numel, mean = sum / n, l2 = sqrt(sq);
    double std = 0;
    for (size_t i = 0; i < t->numel; i++) std += (t->data[i] - mean) * (t->data[i] - mean);
    std = sqrt(std / n);
    const float *want = b->stats.data + 5 * row;
    double scale = want[2] / sqrt(n); // PyTorch's rms
    base_compare(b, "mean", mean, want[0], scale, 0);
    base_compare(b, "std", std, want[1], want[1], 1);
    base_compare(b, "L2", l2, want[2], want[2], 1);
    double extent = fmax(fabs(want[3]), fabs(want[4]));
    base_compare(b, "min", lo, want[3], extent, 2);
    base_compare(b, "max", hi, want[4], extent, 2);
    for (int k = 0; k < b->samples; k++) {
        int64_t at = b->index[row * b->samples + k];
        char what[24];
        snprintf(what, sizeof what, "[%lld]", (long long)at);
        if (at < 0 || (size_t)at >= t->numel) {
            base_compare(b, what, NAN, 0, 1, 3);
            continue;
        }
        base_compare(b, what, t->data[at], b->value.data[row * b->samples + k], scale, 3);
    }
    base_stage_done(b, name, t);
}

static void test_vit_base_matches_pytorch(void) {
    VitConfig c;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_config_for_arch(&c, "vit-base", &err), VIT_OK);
    BaseCheck b;
    if (!base_open(&b)) return;
    assert_golden_describes(&b.g, &c, &base_init, BASE_BATCH, BASE_INPUT_SEED);
    CU_ASSERT_EQUAL(b.rows, 187);
    CU_ASSERT_EQUAL(vit_trace_length(&c), 187);
    Vit vit;
    double t0 = vit_now();
    if (build(&vit, &c, &base_init)) {
        double t1 = vit_now();
        Tensor x = check_image_batch(&c, BASE_BATCH, BASE_INPUT_SEED);
        CU_ASSERT_EQUAL(vit_forward(&vit, &x, base_check, &b, &err), VIT_OK);
        CU_ASSERT_EQUAL(b.seen, b.rows);
        assert_report_clean(&b.report, "stages");
        CU_ASSERT_EQUAL(b.probs_checked, 12);
        CU_ASSERT_TRUE(b.probs_ok);
        if (report_wanted() || b.report.failures)
            fprintf(stderr,
                    "\n    ViT-B/16: build %.2f s, forward %.2f s; worst error / scale: mean %.2e,"
                    " std & L2 %.2e, min & max %.2e, samples %.2e (tolerance %.0e)",
                    t1 - t0, vit_now() - t1, b.worst[0], b.worst[1], b.worst[2], b.worst[3],
                    BASE_TOL);
        tensor_free(&x);
        vit_free(&vit);
    }
    base_close(&b);
}

CU_TestInfo tests_vit[] = {
    {"small ViT: every stage equals PyTorch", test_small_matches_pytorch},
    {"small ViT: naive GEMM equals PyTorch", test_small_matches_pytorch_naive},
    {"small ViT: tiled GEMM equals PyTorch", test_small_matches_pytorch_tiled},
    {"trace names and shapes are the contract", test_trace_is_the_contract},
    {"batch items do not mix", test_batch_items_do_not_mix},
    {"pre_logits is each image's [cls] row, logits its head", test_pre_logits_is_the_cls_row},
    {"scores that overflow exp(): every stage equals PyTorch", test_overflowing_scores_match_pytorch},
    {"no listener: online attention, same logits", test_forward_without_trace_gives_same_logits},
    {"fused block, one qkv product: each block equals PyTorch (every backend)",
     test_fused_block_one_product},
    {"fused block, q k v apart: each block equals PyTorch", test_fused_block_split_qkv},
    {"fused block, no room for qkv: each block equals PyTorch", test_fused_block_no_room},
    {"fused block on odd shapes, a head off too, equals the recipe", test_fused_block_odd_shapes},
    {"wrong input shape is refused", test_forward_refuses_wrong_input},
    {"ViT-B/16: every stage's statistics equal PyTorch", test_vit_base_matches_pytorch},
    CU_TEST_INFO_NULL,
};
