/**
 * @file test_precision.c
 * @brief The model's Linear layers in bf16 and int8 (vit_set_precision(),
 *        lib/model/precision.c) against PyTorch, stage by stage.
 *
 * What is checked, and against what:
 *   - the small ViT of tools/gen_golden_vit.py with every Linear in int8:
 *     every stage of its trace (the recipe) against PyTorch's
 *     (tools/gen_golden_lowp.py, which computes the scheme of gemm_lowp.h
 *     with torch's own rounding and sums), and the logits of the pass nobody
 *     watches (block_fused.c) against the same golden; in bf16, the logits
 *     of both passes, within bf16's own error (the golden's script says why
 *     no closer: at this level a bf16 model can be told from a broken one,
 *     not from a float one; bf16's rounding and product are pinned value by
 *     value in the gemm_lowp suite); on the paths this CPU has, and on the
 *     portable ones forced;
 *   - int8's tolerance has teeth: the same model in float32 lies more than 2
 *     tolerances from the int8 golden's logits, so a Linear layer left in
 *     float would fail;
 *   - back to fp32, the model gives its float logits bit for bit;
 *   - training is refused in either direction (a model prepared for training
 *     cannot take a smaller number, nor a model in one be prepared);
 *   - one Linear layer in int8 (linear_s8()) against the same scheme computed
 *     in PyTorch, and against PyTorch's own dynamic quantization of the same
 *     layer (quantize_dynamic: activations per tensor, asymmetric; weights per
 *     tensor or per channel): its error from the exact answer is no larger
 *     than theirs (a layer with outlier channels, as trained ViTs have).
 *
 * How the tolerances were measured: VIT_GOLDEN_REPORT=1 build/tests/run
 * precision prints each stage's largest difference and the share of its
 * tolerance it uses (tools/gen_golden_lowp.py gives the reasons).
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "base/rng.h"
#include "gemm/gemm_lowp.h"
#include "model/trace_stages.h"
#include "model/vit.h"


// The small model's golden batch (check.h).
static Tensor image_batch(void) {
    return check_image_batch(&check_small_config, CHECK_SMALL_BATCH, CHECK_SMALL_INPUT_SEED);
}

static bool build(Vit *vit, LowpPrecision p) {
    VitError err;
    if (vit_build_random(vit, &check_small_config, &check_small_init, &err) != VIT_OK) {
        fprintf(stderr, "\n    %s\n", err.msg);
        CU_FAIL("vit_build_random failed");
        return false;
    }
    if (vit_set_precision(vit, p, &err) != VIT_OK) {
        fprintf(stderr, "\n    %s\n", err.msg);
        CU_FAIL("vit_set_precision failed");
        vit_free(vit);
        return false;
    }
    return true;
}

static const char *golden_of(LowpPrecision p) {
    return p == LOWP_INT8 ? "vit_small_int8.safetensors" : "vit_small_bf16.safetensors";
}

// Every stage of the traced pass, then the logits of the untraced one, against the golden.
// bf16: only the logits, of the traced pass too (tools/gen_golden_lowp.py says why).
static void logits_check(void *file, const char *name, const Tensor *t) {
    if (strcmp(name, "logits") == 0) expect_golden_tensor(file, "logits", t);
}

static void run_against_golden(LowpPrecision p, bool portable) {
    gemm_lowp_set_portable(portable);
    Vit vit;
    if (!build(&vit, p)) return;
    Tensor x = image_batch();
    GoldenCheck g;
    VitError err;
    if (golden_open(&g, golden_of(p))) {
        CU_ASSERT_STRING_EQUAL(st_meta(&g.golden, "precision"), lowp_precision_name(p));
        if (p == LOWP_INT8) {
            CU_ASSERT_EQUAL(vit_forward(&vit, &x, golden_check, &g, &err), VIT_OK);
            CU_ASSERT_EQUAL(g.checked, TRACE_STAGES(check_small_config.depth));
            golden_finish(&g);
        } else {
            golden_close(&g); // only its metadata was read
            CU_ASSERT_EQUAL(vit_forward(&vit, &x, logits_check, (void *)golden_of(p), &err),
                            VIT_OK);
        }
    }
    CU_ASSERT_EQUAL_FATAL(vit_forward(&vit, &x, NULL, NULL, &err), VIT_OK); // block_fused.c
    const Tensor logits = vit_logits(&vit);
    expect_golden_tensor(golden_of(p), "logits", &logits);
    tensor_free(&x);
    vit_free(&vit);
    gemm_lowp_set_portable(false);
}

static void test_int8_matches_pytorch(void) { run_against_golden(LOWP_INT8, false); }
static void test_int8_portable_matches_pytorch(void) { run_against_golden(LOWP_INT8, true); }
static void test_bf16_matches_pytorch(void) { run_against_golden(LOWP_BF16, false); }
static void test_bf16_portable_matches_pytorch(void) { run_against_golden(LOWP_BF16, true); }

// The largest |a − b| over the logits, in units of the golden's
// own tolerance at that element (atol + rtol |expected|): above 1 means outside it.
static double worst_in_tolerances(const Tensor *actual, const char *file) {
    float atol, rtol;
    golden_meta_tolerance(file, "logits", &atol, &rtol);
    Tensor want = golden_tensor(file, "logits");
    double worst = 0;
    for (size_t i = 0; i < want.numel && i < actual->numel; i++) {
        const double allowed = atol + rtol * fabs(want.data[i]);
        const double d = fabs((double)actual->data[i] - want.data[i]) / allowed;
        worst = d > worst ? d : worst;
    }
    tensor_free(&want);
    return worst;
}

static void test_float_model_lies_outside_the_tolerance(void) {
    Vit vit;
    if (!build(&vit, LOWP_FP32)) return;
    Tensor x = image_batch();
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_forward(&vit, &x, NULL, NULL, &err), VIT_OK);
    const Tensor logits = vit_logits(&vit);
    const double int8 = worst_in_tolerances(&logits, golden_of(LOWP_INT8));
    if (int8 <= 2) fprintf(stderr, "\n    float32 logits: %.2f int8 tolerances away\n", int8);
    CU_ASSERT(int8 > 2); // float32 is more than twice the tolerance from int8's answer
    tensor_free(&x);
    vit_free(&vit);
}

// Every Linear points at a copy in the number asked for; the patch embedding has none.
static void test_every_linear_gets_its_copy(void) {
    for (LowpPrecision p = LOWP_BF16; p <= LOWP_INT8; p++) {
        Vit vit;
        if (!build(&vit, p)) return;
        for (int l = 0; l < check_small_config.depth; l++) {
            const VitBlockWeights *b = &vit.weights.blocks[l];
            const LowpWeight *all[6] = {b->attn.q_lowp, b->attn.k_lowp, b->attn.v_lowp,
                                        b->attn.proj_lowp, b->fc1_lowp, b->fc2_lowp};
            const float *from[6] = {b->attn.q_w, b->attn.k_w, b->attn.v_w, b->attn.proj_w,
                                    b->fc1_w, b->fc2_w};
            for (int i = 0; i < 6; i++) {
                CU_ASSERT_PTR_NOT_NULL_FATAL(all[i]);
                CU_ASSERT_EQUAL(all[i]->precision, p);
                CU_ASSERT_PTR_EQUAL(all[i]->w, from[i]);
            }
            CU_ASSERT_EQUAL(b->fc1_lowp->O, check_small_config.mlp_dim);
            CU_ASSERT_EQUAL(b->fc2_lowp->D, check_small_config.mlp_dim);
        }
        CU_ASSERT_PTR_NOT_NULL_FATAL(vit.weights.head_lowp);
        CU_ASSERT_EQUAL(vit.weights.head_lowp->O, check_small_config.num_classes);
        vit_free(&vit);
    }
}

static void test_back_to_fp32_gives_the_float_bits(void) {
    Vit vit;
    if (!build(&vit, LOWP_FP32)) return;
    Tensor x = image_batch();
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_forward(&vit, &x, NULL, NULL, &err), VIT_OK);
    const Tensor logits = vit_logits(&vit);
    Tensor before = tensor_clone(&logits);
    CU_ASSERT_EQUAL(vit_set_precision(&vit, LOWP_INT8, &err), VIT_OK);
    CU_ASSERT_EQUAL(vit.precision, LOWP_INT8);
    CU_ASSERT(vit_lowp_bytes(&vit) > 0);
    CU_ASSERT_EQUAL_FATAL(vit_forward(&vit, &x, NULL, NULL, &err), VIT_OK);
    Tensor int8 = vit_logits(&vit);
    CU_ASSERT(memcmp(int8.data, before.data, before.numel * sizeof(float)) != 0);
    CU_ASSERT_EQUAL(vit_set_precision(&vit, LOWP_FP32, &err), VIT_OK);
    CU_ASSERT_EQUAL(vit_lowp_bytes(&vit), 0);
    CU_ASSERT_PTR_NULL(vit.weights.head_lowp);
    CU_ASSERT_PTR_NULL(vit.weights.blocks[1].attn.q_lowp);
    CU_ASSERT_EQUAL_FATAL(vit_forward(&vit, &x, NULL, NULL, &err), VIT_OK);
    const Tensor after = vit_logits(&vit);
    CU_ASSERT(memcmp(after.data, before.data, before.numel * sizeof(float)) == 0);
    tensor_free(&before);
    tensor_free(&x);
    vit_free(&vit);
}

// int8 copies: every weight byte once, plus a scale and a row sum per output channel,
// and on a CPU with VNNI every weight packed once more, its outputs rounded up to 32.
static void test_int8_copies_are_a_quarter(void) {
    Vit vit;
    if (!build(&vit, LOWP_INT8)) return;
    const size_t D = 64, M = 256, L = 2, Y = 10;
    const size_t weights = L * (4 * D * D + 2 * M * D) + Y * D;
    const size_t outputs = L * (4 * D + M + D) + Y;
    const size_t packed = L * (4 * D * D + M * D + D * M) + 32 * D; // the head: 10 → 32
    CU_ASSERT_EQUAL(vit_lowp_bytes(&vit),
                    weights + outputs * 8 + (vit.weights.head_lowp->s8.packed ? packed : 0));
    // independent: what the CPU reports decides whether the packed copy is made; checked here
    CU_ASSERT_EQUAL(vit.weights.head_lowp->s8.packed != NULL, gemm_cpu_has_vnni());
    vit_free(&vit);
}

static void test_training_refuses_smaller_numbers(void) {
    VitError err;
    Vit vit;
    if (!build(&vit, LOWP_INT8)) return;
    CU_ASSERT_EQUAL(vit_train_prepare(&vit, VIT_KEEP_ALL, 2, &err), VIT_ERR_USAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "int8"));
    CU_ASSERT_EQUAL(vit_train_prepare(&vit, VIT_KEEP_INPUTS, 2, &err), VIT_ERR_USAGE);
    CU_ASSERT_EQUAL(vit_train_prepare(&vit, VIT_KEEP_NONE, 2, &err), VIT_OK); // inference
    CU_ASSERT_EQUAL(vit_set_precision(&vit, LOWP_FP32, &err), VIT_OK);
    CU_ASSERT_EQUAL(vit_train_prepare(&vit, VIT_KEEP_ALL, 2, &err), VIT_OK);
    CU_ASSERT_EQUAL(vit_set_precision(&vit, LOWP_BF16, &err), VIT_ERR_USAGE);
    CU_ASSERT_PTR_NOT_NULL(strstr(err.msg, "training"));
    CU_ASSERT_EQUAL(vit.precision, LOWP_FP32);
    CU_ASSERT_EQUAL(vit_set_precision(&vit, (LowpPrecision)7, &err), VIT_ERR_USAGE);
    vit_free(&vit);
}

static void test_precision_names(void) {
    LowpPrecision p = LOWP_FP32;
    CU_ASSERT_TRUE(lowp_precision_parse("int8", &p));
    CU_ASSERT_EQUAL(p, LOWP_INT8);
    CU_ASSERT_TRUE(lowp_precision_parse("bf16", &p));
    CU_ASSERT_EQUAL(p, LOWP_BF16);
    CU_ASSERT_TRUE(lowp_precision_parse("fp32", &p));
    CU_ASSERT_EQUAL(p, LOWP_FP32);
    CU_ASSERT_FALSE(lowp_precision_parse("INT8", &p));
    CU_ASSERT_FALSE(lowp_precision_parse("int4", &p));
    CU_ASSERT_FALSE(lowp_precision_parse("", &p));
    CU_ASSERT_STRING_EQUAL(lowp_precision_name(LOWP_BF16), "bf16");
}

// The root mean square of a − b over n values.
static double rms_diff(const float *a, const float *b, size_t n) {
    double s = 0;
    for (size_t i = 0; i < n; i++) s += ((double)a[i] - b[i]) * ((double)a[i] - b[i]);
    return n ? sqrt(s / (double)n) : 0;
}

static void test_int8_linear_against_pytorch_dynamic(void) {
    static const char file[] = "linear_int8.safetensors";
    Tensor x = golden_tensor(file, "x"), w = golden_tensor(file, "w"), b = golden_tensor(file, "b");
    Tensor exact = golden_tensor(file, "exact"), theirs = golden_tensor(file, "torch_dynamic");
    Tensor theirs_pc = golden_tensor(file, "torch_dynamic_per_channel");
    const int R = x.shape[0], D = x.shape[1], O = w.shape[0];
    for (int portable = 0; portable <= 1; portable++) {
        gemm_lowp_set_portable(portable);
        Int8Weight qw;
        int8_weight_quantize(&qw, w.data, O, D);
        Tensor out = tensor_new(2, R, O);
        linear_s8(out.data, x.data, &qw, b.data, R);
        expect_golden_tensor(file, "ours", &out); // the same scheme, computed by PyTorch
        const size_t n = (size_t)R * O;
        const double ours = rms_diff(out.data, exact.data, n);
        const double dynamic = rms_diff(theirs.data, exact.data, n);
        const double per_channel = rms_diff(theirs_pc.data, exact.data, n);
        if (!(ours <= dynamic && ours <= per_channel))
            fprintf(stderr, "\n    rms error from the exact answer: ours %.4g, PyTorch's dynamic "
                    "%.4g (per tensor), %.4g (per channel)\n", ours, dynamic, per_channel);
        CU_ASSERT(ours <= dynamic);
        CU_ASSERT(ours <= per_channel);
        tensor_free(&out);
        int8_weight_free(&qw);
    }
    gemm_lowp_set_portable(false);
    tensor_free(&x), tensor_free(&w), tensor_free(&b), tensor_free(&exact);
    tensor_free(&theirs), tensor_free(&theirs_pc);
}

CU_TestInfo tests_precision[] = {
    {"int8 model matches PyTorch, stage by stage", test_int8_matches_pytorch},
    {"int8 model, portable path, matches PyTorch", test_int8_portable_matches_pytorch},
    {"bf16 model's logits match PyTorch", test_bf16_matches_pytorch},
    {"bf16 model, portable path, logits match PyTorch", test_bf16_portable_matches_pytorch},
    {"the float model lies outside int8's tolerance", test_float_model_lies_outside_the_tolerance},
    {"every Linear gets its copy", test_every_linear_gets_its_copy},
    {"back to fp32 gives the float bits", test_back_to_fp32_gives_the_float_bits},
    {"int8 copies: a byte a weight, and its scales", test_int8_copies_are_a_quarter},
    {"training refuses smaller numbers", test_training_refuses_smaller_numbers},
    {"precision names", test_precision_names},
    {"int8 linear against PyTorch's dynamic quantization", test_int8_linear_against_pytorch_dynamic},
    CU_TEST_INFO_NULL,
};
