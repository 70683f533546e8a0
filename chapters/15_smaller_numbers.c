/**
 * @file 15_smaller_numbers.c
 * @brief Chapter 15 · Smaller numbers: bf16 and int8 inference from the bits
 *        up, and what they cost the trained model, stage by stage.
 *
 * A float is 32 bits; bf16 keeps its top 16, int8 keeps 8 bits and a scale:
 * \f[ x \approx s\,q, \qquad s = \frac{\max_k |x_k|}{127}, \qquad
 *     q = \operatorname{round}(x / s) \in [-127, 127]. \f]
 * The chapter takes real weights of the shipped Fashion-MNIST model apart
 * bit by bit, rounds them to bf16 and to int8, shows why an int8 product can
 * sum in 32 bits and how the CPU's vpdpbusd multiplies an unsigned byte by a
 * signed one, compares one scale per tensor with one per output channel,
 * follows the int8 model's error through every stage of the forward pass,
 * and ends with the agreement table: fp32, bf16 and int8 on the test images.
 *
 * Every number printed is pinned by name and checked against PyTorch by
 * tests/test_ch15_smaller_numbers.c (tools/gen_golden_ch15.py), which does the
 * same rounding and quantization in torch and runs the same model there
 * (tools/ref_vit.py in float32, its Linear layers in int8 or bf16 as
 * tools/gen_golden_lowp.py computes them). The integer sums of the int8
 * product are exact, so they are the same on every CPU and either path; the
 * chapter runs on one thread so that its float sums are too.
 *
 * Run: `build/chapters/15_smaller_numbers` (and `--images 10000` for the
 * agreement table on the whole test set).
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "teach/chapter.h"
#include "chapters.h"
#include "gemm/gemm_lowp.h"
#include "io/labels.h"
#include "io/safetensors.h"
#include "model/vit.h"
#include "train/dataset.h"

enum {
    BATCH = 100,    // images per forward pass in Section 9
    TRACED = 100,   // the test images whose every stage Sections 7 and 8 compare
    TRACE_BATCH = 10, // ... in passes of 10 (a whole trace of 10 images: some 18 MB)
    SHOWN = 6,      // values of a row shown in Section 3
    MAX_LAYERS = 16, // blocks the tables have room for
    STAGES = 10,    // the stages of a block Section 7 follows
    INPUTS = 4,     // the inputs of a block's Linear layers
    KINDS = 5,      // qkv, proj, fc1, fc2, head
};
// The agreement table's test images; a learner may ask for all 10,000.
enum { KNOB_IMAGES, KNOBS };
static ChapterKnob knobs[KNOBS] = {
    [KNOB_IMAGES] = {.name = "images", .meaning = "the first test images of the agreement table",
                      .value = 1000, .min = BATCH, .max = 10000, .multiple = BATCH},
};
static const char MODEL_FILE[] = "models/vit-fashion.safetensors"; // under data/

// The stages of a block Section 7 follows, in the forward's order.
static const char *const STAGE[STAGES] = {"norm1", "attn.q", "attn.context", "attn.proj",
                                          "resid1", "norm2", "mlp.fc1", "mlp.gelu",
                                          "mlp.fc2", "out"};
// The inputs of a block's Linear layers, and the layers that read them.
static const char *const INPUT[INPUTS] = {"norm1", "attn.context", "norm2", "mlp.gelu"};
static const char *const READ_BY[INPUTS] = {"q, k, v", "proj", "fc1", "fc2"};
// The Linear layers by kind, as the file names them.
static const char *const KIND[KINDS] = {"attn.qkv", "attn.proj", "mlp.fc1", "mlp.fc2", "head"};

/** What every section works on. */
typedef struct {
    Vit vit;
    Dataset test;
    float mean, std;  // the images' normalisation, from the model file
    int L, D, M, Y, N; // blocks, width, MLP width, classes, tokens
    float *token;     // (D) image 0's blocks.0.norm2, token 0: fc1's input
} Work;

/* -------------------------------------------------------------- helpers */

static void pin_row(Chapter *ch, const char *name, const float *v, int n) {
    const Tensor t = tensor_view((float *)v, 1, n);
    ch_pin(ch, name, &t);
}

static uint32_t float_bits(float x) {
    uint32_t b;
    memcpy(&b, &x, sizeof b);
    return b;
}

// "0 01111011 0100…": a float's 32 bits as sign, exponent and mantissa.
static const char *bit_string(char buf[40], uint32_t bits) {
    int at = 0;
    for (int i = 31; i >= 0; i--) {
        buf[at++] = (char)('0' + ((bits >> i) & 1));
        if (i == 31 || i == 23) buf[at++] = ' ';
    }
    buf[at] = 0;
    return buf;
}

static int argmax(const float *v, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[best]) best = i;
    return best;
}

// The normalised test images first .. first + B - 1, as a (B, 1, S, S) tensor in x.
static Tensor test_batch(const Work *w, float *x, int *labels, int first, int B) {
    int index[BATCH];
    for (int b = 0; b < B; b++) index[b] = first + b;
    dataset_batch(x, labels, &w->test, index, B, w->mean, w->std, NULL, NULL);
    const int S = w->vit.config.image_size;
    return tensor_view(x, 4, B, 1, S, S);
}

/* ------------------------------------------------------ 1. what a float is */

// The three weights Sections 1 and 2 take apart: block 0's fc1, its first
// weight, its largest in size and its smallest (not zero).
static void example_weights(const Work *w, float v[3]) {
    const float *fc1 = w->vit.weights.blocks[0].fc1_w;
    const size_t n = (size_t)w->M * w->D;
    v[0] = fc1[0], v[1] = fc1[0], v[2] = fc1[0];
    for (size_t i = 1; i < n; i++) {
        if (fabsf(fc1[i]) > fabsf(v[1])) v[1] = fc1[i];
        if (fc1[i] != 0 && (v[2] == 0 || fabsf(fc1[i]) < fabsf(v[2]))) v[2] = fc1[i];
    }
}

static void what_a_float_is(Chapter *ch, Work *w) {
    if (!ch_section(ch, "1. What a float is")) return;
    float v[3], sign[3], exponent[3], mantissa[3];
    example_weights(w, v);
    pin_row(ch, "float.value", v, 3);
    // [float_fields]
    for (int i = 0; i < 3; i++) {
        const uint32_t bits = float_bits(v[i]);
        sign[i] = (float)(bits >> 31);              // 1 bit
        exponent[i] = (float)((bits >> 23) & 0xff); // 8 bits, stored plus 127
        mantissa[i] = (float)(bits & 0x7fffff);     // 23 bits after an implicit 1.
    }
    // [float_fields]
    pin_row(ch, "float.sign", sign, 3);
    pin_row(ch, "float.exponent", exponent, 3);
    pin_row(ch, "float.mantissa", mantissa, 3);
    ch_say(ch, "A float is 32 bits: 1 for the sign, 8 for the exponent, 23 for the "
               "mantissa. A normal float is (-1)^sign x 1.mantissa x 2^(exponent - 127), "
               "the mantissa read as a binary fraction after an implicit 1. Here are "
               "three weights of the shipped model (data/%s), all from block 0's fc1: "
               "its first, its largest in size, and its smallest:", MODEL_FILE);
    static const char *const what[3] = {"first", "largest", "smallest"};
    ch_line(ch, "    %-9s %14s   %-34s %5s %9s", "", "value", "bits: sign exponent mantissa",
            "2^e", "1.m");
    for (int i = 0; i < 3; i++) {
        char bits[40];
        ch_line(ch, "    %-9s %14.9g   %-34s %5d %9.7f", what[i], v[i],
                bit_string(bits, float_bits(v[i])), (int)exponent[i] - 127,
                1.0 + mantissa[i] / 8388608.0);
    }
    ch_line(ch, "%s", "");
    ch_say(ch, "The exponent sets the size, the mantissa the digits within it: between "
               "two powers of two a float has 2^23 = 8,388,608 evenly spaced values, a "
               "relative step of 2^-23 (about 1.2e-7), seven significant digits. How many "
               "of them the model needs is what the rest of the chapter measures.");
}

/* ---------------------------------------------------------- 2. bf16 */

// |bf16(w) - w| / |w| over every Linear weight of the model: the largest and the rms.
static void bf16_model_error(const Work *w, float *largest, float *rms) {
    double sum = 0, worst = 0;
    size_t n = 0;
    for (int l = 0; l <= w->L; l++) {
        const VitBlockWeights *b = l < w->L ? &w->vit.weights.blocks[l] : NULL;
        const float *ws[6] = {b ? b->attn.q_w : w->vit.weights.head_w, b ? b->attn.k_w : NULL,
                              b ? b->attn.v_w : NULL, b ? b->attn.proj_w : NULL,
                              b ? b->fc1_w : NULL, b ? b->fc2_w : NULL};
        const size_t sizes[6] = {b ? (size_t)w->D * w->D : (size_t)w->Y * w->D,
                                 (size_t)w->D * w->D, (size_t)w->D * w->D,
                                 (size_t)w->D * w->D, (size_t)w->M * w->D, (size_t)w->D * w->M};
        for (int k = 0; k < 6; k++)
            for (size_t i = 0; ws[k] && i < sizes[k]; i++) {
                const float x = ws[k][i];
                if (x == 0) continue;
                const double e = fabs((double)bf16_to_float(bf16_from_float(x)) - x) / fabs(x);
                sum += e * e, worst = e > worst ? e : worst, n++;
            }
    }
    *largest = (float)worst, *rms = (float)sqrt(sum / (double)(n ? n : 1));
}

static void bf16_half_a_float(Chapter *ch, Work *w) {
    if (!ch_section(ch, "2. bf16: the top half of a float")) return;
    float v[3], bits[3], back[3], rel[3];
    example_weights(w, v);
    for (int i = 0; i < 3; i++) {
        const uint16_t h = bf16_from_float(v[i]);
        bits[i] = h, back[i] = bf16_to_float(h);
        rel[i] = fabsf(back[i] - v[i]) / fabsf(v[i]);
    }
    pin_row(ch, "bf16.bits", bits, 3);
    pin_row(ch, "bf16.value", back, 3);
    pin_row(ch, "bf16.relative_error", rel, 3);
    ch_say(ch, "bf16 (\"brain float\") keeps a float's first 16 bits: the sign, the whole "
               "8-bit exponent, and 7 of the 23 mantissa bits. So it has float's range "
               "(up to about 3.4e38) and about three significant digits: 2^7 = 128 values "
               "between two powers of two. Going back to float is a shift, exact. Going "
               "to bf16 rounds away the low 16 bits, to the nearest bf16 "
               "(bf16_from_float(), lib/gemm/gemm_bf16.c):");
    ch_line(ch, "    %14s   %-10s %14s %12s", "float", "bf16 bits", "bf16 value", "rel. error");
    for (int i = 0; i < 3; i++) {
        char b[40];
        bit_string(b, (uint32_t)bits[i] << 16);
        b[18] = 0; // sign, exponent, 7 mantissa bits
        ch_line(ch, "    %14.9g   %-19s %14.9g %12.3g", v[i], b, back[i], rel[i]);
    }
    ch_line(ch, "%s", "");
    // [ties]
    const float ties[2] = {1.00390625f, 1.01171875f}; // 1 + 2^-8, 1 + 3·2^-8: halfway cases
    float tie_bits[2], tie_out[2];
    for (int i = 0; i < 2; i++) {
        tie_bits[i] = (float)(float_bits(ties[i]) >> 16);
        tie_out[i] = bf16_to_float(bf16_from_float(ties[i]));
    }
    // [ties]
    pin_row(ch, "bf16.tie_in", ties, 2);
    pin_row(ch, "bf16.tie_kept", tie_bits, 2);
    pin_row(ch, "bf16.tie_out", tie_out, 2);
    ch_say(ch, "A value exactly halfway between two bf16 goes to the one whose last bit is "
               "0, the even one (IEEE's default rounding, the same as float arithmetic's): "
               "%.8g (top half 0x%04X, even) stays at %.8g, while %.8g (top half 0x%04X, odd) "
               "goes up to %.8g. Always rounding halves up would push every sum a little "
               "upwards; ties to even goes up half the time and down half the time.",
           ties[0], (unsigned)tie_bits[0], tie_out[0], ties[1], (unsigned)tie_bits[1],
           tie_out[1]);
    float largest, rms;
    bf16_model_error(w, &largest, &rms);
    largest = ch_value(ch, "bf16.model_largest", largest);
    rms = ch_value(ch, "bf16.model_rms", rms);
    ch_say(ch, "Over all the model's Linear weights, rounding to bf16 moved each by at "
               "most %.3g of its size (the bound is half a step: 2^-8 = %.3g of a value "
               "just above a power of two) and by %.3g in rms.", largest, ldexp(1.0, -8), rms);
}

/* ------------------------------------------------------ 3. int8 and a scale */

// Keeps image 0's token 0 of blocks.0.norm2 (the input of block 0's fc1).
static void keep_token(void *user, const char *name, const Tensor *t) {
    Work *w = user;
    if (strcmp(name, "blocks.0.norm2") == 0) memcpy(w->token, t->data, sizeof(float) * w->D);
}

static void weights_per_channel(Chapter *ch, const Work *w) {
    const float *fc1 = w->vit.weights.blocks[0].fc1_w; // (M, D)
    const int M = w->M, D = w->D;
    int8_t *q = vit_malloc((size_t)M * D);
    float *scales = vit_malloc(sizeof(float) * M), *back = vit_malloc(sizeof(float) * D);
    // [quantize_weight]
    quantize_rows_s8(q, scales, fc1, M, D); // one scale per output channel (row)
    dequantize_rows_s8(back, q, scales, 1, D); // row 0 back to float
    // [quantize_weight]
    float qs[SHOWN], worst = 0, lo = scales[0], hi = scales[0];
    for (int k = 0; k < SHOWN; k++) qs[k] = q[k];
    for (int k = 0; k < D; k++) worst = fmaxf(worst, fabsf(back[k] - fc1[k]));
    for (int r = 1; r < M; r++) lo = fminf(lo, scales[r]), hi = fmaxf(hi, scales[r]);
    pin_row(ch, "int8.row_x", fc1, SHOWN);
    pin_row(ch, "int8.row_q", qs, SHOWN);
    pin_row(ch, "int8.row_back", back, SHOWN);
    const float scale = ch_value(ch, "int8.row_scale", scales[0]);
    worst = ch_value(ch, "int8.row_worst", worst);
    const float range[2] = {lo, hi};
    pin_row(ch, "int8.scales_range", range, 2);
    ch_say(ch, "int8 keeps 8 bits and a scale. Each row x of a weight (one output "
               "channel: the weights of one output) is stored as q x s, with s = max|x| / "
               "127 and q = round(x / s): the largest weight in size becomes +-127, every "
               "other the nearest multiple of s. Symmetric: 0 stays exactly 0, and -128 is "
               "never used (quantize_rows_s8(), lib/gemm/quantize_rows.c). Row 0 of block 0's "
               "fc1 has max|x| = %.6g, so s = %.6g; its first %d weights:", 127 * scale,
           scale, SHOWN);
    ch_line(ch, "    %-12s %s", "weight x", "  q = round(x / s)   q x s");
    for (int k = 0; k < SHOWN; k++)
        ch_line(ch, "    %12.7f %8d %19.7f", fc1[k], (int)qs[k], back[k]);
    ch_line(ch, "%s", "");
    ch_say(ch, "Each is off by at most half a step: over the row's %d weights the largest "
               "error is %.4g, under s / 2 = %.4g. One scale per row, not one for the "
               "whole matrix, because rows differ: the %d rows of this fc1 have scales "
               "from %.4g to %.4g, %.1f times apart. One scale for all would give the "
               "row of small weights the large row's coarse steps (Section 6 measures it).",
           D, worst, scale / 2, M, range[0], range[1], range[1] / range[0]);
    free(q), free(scales), free(back);
}

static void activations_per_token(Chapter *ch, Work *w) {
    const int D = w->D;
    float *x = vit_malloc(sizeof(float) * 28 * 28);
    int label;
    VitError err;
    const Tensor image = test_batch(w, x, &label, 0, 1);
    if (vit_forward(&w->vit, &image, keep_token, w, &err) != VIT_OK) {
        ch_verdict(ch, "the forward pass failed: %s", err.msg);
        free(x);
        return;
    }
    free(x);
    int8_t q[1024];
    float s, back[1024], qs[SHOWN];
    quantize_rows_s8(q, &s, w->token, 1, D);
    dequantize_rows_s8(back, q, &s, 1, D);
    double e2 = 0, x2 = 0;
    for (int k = 0; k < D; k++) {
        e2 += (double)(back[k] - w->token[k]) * (back[k] - w->token[k]);
        x2 += (double)w->token[k] * w->token[k];
    }
    for (int k = 0; k < SHOWN; k++) qs[k] = q[k];
    pin_row(ch, "act.x", w->token, SHOWN);
    pin_row(ch, "act.q", qs, SHOWN);
    s = ch_value(ch, "act.scale", s);
    const float rel = ch_value(ch, "act.relative_error", (float)sqrt(e2 / x2));
    ch_say(ch, "A weight is quantized once. An activation changes with every image, so "
               "it is quantized at every call, one scale per token (per row of the "
               "Linear's input), computed from that token's own largest value: "
               "\"dynamic\" quantization (PyTorch's quantize_dynamic computes one scale "
               "for its whole input instead). The [cls] token of test image 0, as "
               "block 0's fc1 reads it (after norm2), has s = %.5g; its first values:", s);
    for (int k = 0; k < SHOWN; k++)
        ch_line(ch, "    %12.6f -> %5d -> %10.6f", w->token[k], (int)qs[k], back[k]);
    ch_line(ch, "%s", "");
    ch_say(ch, "Over its %d values the rounding error is %.3g of the token's size (rms "
               "over rms).", D, rel);
}

static void int8_and_a_scale(Chapter *ch, Work *w) {
    if (!ch_section(ch, "3. int8: 8 bits and a scale")) return;
    weights_per_channel(ch, w);
    activations_per_token(ch, w);
}

/* --------------------------------------------------- 4. the accumulator */

static void the_accumulator(Chapter *ch) {
    if (!ch_section(ch, "4. The 32-bit accumulator")) return;
    char a[VIT_NUM_BUF], b[VIT_NUM_BUF], c[VIT_NUM_BUF], d[VIT_NUM_BUF], e[VIT_NUM_BUF];
    // [accumulator]
    const int64_t product = 127 * 127;               // the largest |q_x · q_w|
    const int64_t sum_768 = 768 * product, sum_3072 = 3072 * product; // ViT-B/16's sums
    const int64_t fits = INT32_MAX / product;        // terms an int32 holds at worst
    // [accumulator]
    ch_value(ch, "acc.product", (float)product);
    ch_value(ch, "acc.sum_768", (float)sum_768);
    ch_value(ch, "acc.sum_3072", (float)sum_3072);
    const float headroom = ch_value(ch, "acc.headroom", (float)((double)INT32_MAX / sum_3072));
    ch_value(ch, "acc.terms", (float)fits);
    const float int16_terms = ch_value(ch, "acc.int16_terms", (float)(INT16_MAX / product));
    ch_say(ch, "The int8 product sums q_x x q_w over the width, in integers. Each product "
               "is at most 127 x 127 = %s in size. ViT-B/16's longest sums are 768 terms "
               "(q, k, v, proj, fc1) and 3072 (fc2, over the MLP's width):", vit_thousands(a, product));
    ch_line(ch, "    768 x 127 x 127  = %12s", vit_thousands(a, sum_768));
    ch_line(ch, "    3072 x 127 x 127 = %12s", vit_thousands(b, sum_3072));
    ch_line(ch, "    int32's largest  = %12s  (2^31 - 1)", vit_thousands(c, INT32_MAX));
    ch_line(ch, "%s", "");
    ch_say(ch, "Even with every term at its largest and of one sign, fc2's sum uses 1/%.1f "
               "of an int32: a sum of up to %s such terms fits, so a 32-bit accumulator "
               "never overflows for any width a ViT has. int16 would hold %.0f of them "
               "(32,767 / %s): it overflows on the third term. The sums are exact, so the "
               "integer product gives the same bits in any order, on any CPU, in any "
               "number of threads: only the scaling back to float rounds.",
           headroom, vit_thousands(d, fits), int16_terms, vit_thousands(e, product));
}

/* ------------------------------------------- 5. unsigned times signed */

static void unsigned_times_signed(Chapter *ch, Work *w) {
    if (!ch_section(ch, "5. vpdpbusd: unsigned times signed, and the correction")) return;
    const int D = w->D;
    const float *row = w->vit.weights.blocks[0].fc1_w; // (D) fc1's row 0
    int8_t qx[1024], qw[1024];
    float sx, sw;
    quantize_rows_s8(qx, &sx, w->token, 1, D);
    quantize_rows_s8(qw, &sw, row, 1, D);
    // [trick_by_hand]
    int32_t shifted = 0, b_sum = 0, direct = 0;
    for (int k = 0; k < 4; k++) {
        shifted += (qx[k] + 128) * qw[k]; // a' = a + 128 is 0..255: an unsigned byte
        b_sum += qw[k];
        direct += qx[k] * qw[k];
    }
    const int32_t corrected = shifted - 128 * b_sum; // Σ(a+128)·b − 128·Σb = Σ a·b
    // [trick_by_hand]
    float a4[4], b4[4];
    for (int k = 0; k < 4; k++) a4[k] = qx[k], b4[k] = qw[k];
    pin_row(ch, "trick.a", a4, 4);
    pin_row(ch, "trick.b", b4, 4);
    ch_value(ch, "trick.shifted", (float)shifted);
    ch_value(ch, "trick.b_sum", (float)b_sum);
    ch_value(ch, "trick.corrected", (float)corrected);
    ch_value(ch, "trick.direct", (float)direct);
    ch_say(ch, "AVX-512 VNNI's vpdpbusd adds 64 byte products into 16 int32 lanes in one "
               "instruction (float's FMA does 16), but it multiplies an unsigned byte "
               "(0..255) by a signed one (-128..127). Our activations are signed. So "
               "the VNNI path (lib/gemm/gemm_int8.c) feeds a' = a + 128 and takes the "
               "shift back out: Σ a'·b = Σ a·b + 128·Σ b. The first four values of the "
               "token of Section 3 (a) and of fc1's row 0 (b), both quantized:");
    ch_line(ch, "    a       = %5d %5d %5d %5d", qx[0], qx[1], qx[2], qx[3]);
    ch_line(ch, "    a + 128 = %5d %5d %5d %5d", qx[0] + 128, qx[1] + 128, qx[2] + 128,
            qx[3] + 128);
    ch_line(ch, "    b       = %5d %5d %5d %5d", qw[0], qw[1], qw[2], qw[3]);
    ch_line(ch, "    Σ (a+128)·b = %d;  128 · Σ b = 128 · (%d) = %d", shifted, b_sum, 128 * b_sum);
    ch_line(ch, "    (%d) - (%d) = %d = Σ a·b (%d, summed directly)", shifted, 128 * b_sum,
            corrected, direct);
    ch_line(ch, "%s", "");
    // [trick_whole_row]
    int32_t plain, shifted_row, cpu, sums;
    gemm_s8_bt_portable(&plain, qx, qw, 1, D, 1);     // Σ a·b in C
    gemm_s8_row_sums(&sums, qw, 1, D);                // Σ b, once per weight
    gemm_s8_bt_shifted(&shifted_row, qx, qw, &sums, 1, D, 1); // vpdpbusd's sums, in C
    gemm_s8_bt_summed(&cpu, qx, qw, &sums, 1, D, 1);  // the path this CPU takes
    // [trick_whole_row]
    double exact = 0;
    for (int k = 0; k < D; k++) exact += (double)w->token[k] * row[k];
    ch_value(ch, "trick.row_plain", (float)plain);
    ch_value(ch, "trick.row_shifted", (float)shifted_row);
    ch_value(ch, "trick.row_cpu", (float)cpu);
    const float back = ch_value(ch, "trick.row_back", (float)plain * (sx * sw));
    const float want = ch_value(ch, "trick.row_exact", (float)exact);
    ch_say(ch, "The correction is one number per output channel, 128 x its row sum, "
               "computed once when the weight is quantized (Int8Weight::sums). Over the "
               "whole row of %d, the plain sum (gemm_s8_bt_portable()), the shifted one "
               "corrected (gemm_s8_bt_shifted(), vpdpbusd's arithmetic in C) and this "
               "CPU's path (%s) all give %d. Scaled back, %d x s_x x s_w = %.6f, against "
               "%.6f for the float dot product of the unrounded values.",
           D, gemm_s8_kernel(), plain, plain, back, want);
}

/* --------------------------------------- 6. per tensor or per channel */

// rms(dequant(quant(w)) − w) / rms(w) for w (O, D): one scale per row, or one for all.
static float quant_error(const float *wt, int O, int D, bool per_channel) {
    const size_t n = (size_t)O * D;
    int8_t *q = vit_malloc(n);
    float *s = vit_malloc(sizeof(float) * O), *back = vit_malloc(sizeof(float) * n);
    if (per_channel) quantize_rows_s8(q, s, wt, O, D);
    else {
        const float one = quantize_tensor_s8(q, wt, n);
        for (int r = 0; r < O; r++) s[r] = one;
    }
    dequantize_rows_s8(back, q, s, O, D);
    double e2 = 0, w2 = 0;
    for (size_t i = 0; i < n; i++) {
        e2 += (double)(back[i] - wt[i]) * (back[i] - wt[i]);
        w2 += (double)wt[i] * wt[i];
    }
    free(q), free(s), free(back);
    return (float)sqrt(e2 / w2);
}

static void per_tensor_or_channel(Chapter *ch, Work *w) {
    if (!ch_section(ch, "6. One scale per tensor, or one per output channel")) return;
    float tensor_err[MAX_LAYERS * KINDS], channel_err[MAX_LAYERS * KINDS];
    int n = 0;
    ch_say(ch, "Each Linear weight of the model as the file stores it, quantized with one "
               "scale for the whole tensor and with one per output channel (row), then "
               "dequantized: the rms of the error over the rms of the weights.");
    ch_line(ch, "    %-26s %11s %12s %13s %7s", "weight", "shape", "per tensor", "per channel",
            "ratio");
    for (int l = 0; l <= w->L && n < MAX_LAYERS * KINDS; l++)
        for (int k = 0; k < KINDS; k++) {
            if ((l < w->L) == (k == KINDS - 1)) continue; // the head once, after the blocks
            char name[64];
            if (l < w->L) snprintf(name, sizeof name, "blocks.%d.%s.weight", l, KIND[k]);
            else snprintf(name, sizeof name, "%s.weight", KIND[k]);
            Tensor t;
            VitError err;
            if (st_read_tensor(&w->vit.file, name, &t, &err) != VIT_OK || t.ndim != 2) {
                ch_verdict(ch, "data/%s has no Linear weight %s.", MODEL_FILE, name);
                return;
            }
            // [per_tensor_or_channel]
            tensor_err[n] = quant_error(t.data, t.shape[0], t.shape[1], false);
            channel_err[n] = quant_error(t.data, t.shape[0], t.shape[1], true);
            // [per_tensor_or_channel]
            char shape[32];
            snprintf(shape, sizeof shape, "(%d, %d)", t.shape[0], t.shape[1]);
            ch_line(ch, "    %-26s %11s %11.3f%% %12.3f%% %7.2f", name, shape,
                    100 * tensor_err[n], 100 * channel_err[n], tensor_err[n] / channel_err[n]);
            tensor_free(&t);
            n++;
        }
    ch_line(ch, "%s", "");
    pin_row(ch, "scale.per_tensor", tensor_err, n);
    pin_row(ch, "scale.per_channel", channel_err, n);
    int lo = 0, hi = 0, better = 0;
    for (int i = 0; i < n; i++) {
        const float r = tensor_err[i] / channel_err[i];
        if (r < tensor_err[lo] / channel_err[lo]) lo = i;
        if (r > tensor_err[hi] / channel_err[hi]) hi = i;
        better += channel_err[i] < tensor_err[i];
    }
    ch_verdict(ch, "One scale per channel gave the smaller error for %d of the %d weights; "
               "per tensor, the error was %.2f to %.2f times as large. It costs one float "
               "per row (%d bytes for fc1's %d rows, beside its %d bytes of int8).",
               better, n, tensor_err[lo] / channel_err[lo], tensor_err[hi] / channel_err[hi],
               4 * w->M, w->M, w->M * w->D);
}

/* ----------------------------------------- 7. where the error goes */

/** Section 7's sums, from the fp32 and the int8 passes over the traced images. */
typedef struct {
    const TraceRecorder *fp32; // the fp32 pass of this batch, every stage
    double err2[MAX_LAYERS][STAGES], ref2[MAX_LAYERS][STAGES]; // Σ (int8 − fp32)², Σ fp32²
    double out_err2[2], out_ref2[2]; // the same for norm and logits
    int L;
} StageErrors;

static void add_squares(double *err2, double *ref2, const Tensor *got, const Tensor *ref) {
    for (size_t i = 0; i < got->numel && i < ref->numel; i++) {
        const double d = (double)got->data[i] - ref->data[i];
        *err2 += d * d, *ref2 += (double)ref->data[i] * ref->data[i];
    }
}

// A TraceFn for the int8 pass: each stage against the same stage of the fp32 pass.
static void stage_errors(void *user, const char *name, const Tensor *t) {
    StageErrors *e = user;
    const Tensor *ref = trace_find(e->fp32, name);
    if (!ref) return;
    if (strcmp(name, "norm") == 0) add_squares(&e->out_err2[0], &e->out_ref2[0], t, ref);
    if (strcmp(name, "logits") == 0) add_squares(&e->out_err2[1], &e->out_ref2[1], t, ref);
    int block;
    const char *stage = trace_split_block(name, &block);
    for (int s = 0; stage && block >= 0 && block < e->L && s < STAGES; s++)
        if (strcmp(stage, STAGE[s]) == 0)
            add_squares(&e->err2[block][s], &e->ref2[block][s], t, ref);
}

// Σ over the rows of x (R, D) of max|row| / rms(row), added to *sum; R added to *rows.
static void add_crest(double *sum, double *rows, const Tensor *x) {
    const int D = x->shape[x->ndim - 1];
    const size_t R = x->numel / (size_t)D;
    for (size_t r = 0; r < R; r++) {
        double m = 0, s2 = 0;
        for (int k = 0; k < D; k++) {
            const double v = x->data[r * D + k];
            m = fabs(v) > m ? fabs(v) : m, s2 += v * v;
        }
        if (s2 > 0) *sum += m / sqrt(s2 / D), *rows += 1;
    }
}

/** What Section 7 measured. */
typedef struct {
    float error[MAX_LAYERS * STAGES]; // (L, STAGES) rms(int8 − fp32) / rms(fp32), per stage
    float out_error[2];               // norm, logits
    float crest[MAX_LAYERS * INPUTS]; // (L, INPUTS) mean over tokens of max|x| / rms(x)
    float head_crest;                 // the head's input, pre_logits
    int spiky;                        // the input with the largest mean crest (INPUT's index)
} Where;

static bool measure_stages(Work *w, Where *where, VitError *err) {
    StageErrors e = {.L = w->L};
    double crest[MAX_LAYERS][INPUTS] = {{0}}, rows[MAX_LAYERS][INPUTS] = {{0}}, head = 0,
           head_rows = 0;
    float *x = vit_malloc(sizeof(float) * TRACE_BATCH * 28 * 28);
    int labels[TRACE_BATCH];
    bool ok = true;
    for (int first = 0; first < TRACED && ok; first += TRACE_BATCH) {
        const Tensor image = test_batch(w, x, labels, first, TRACE_BATCH);
        TraceRecorder fp32 = {0};
        // [two_passes]
        ok = vit_set_precision(&w->vit, LOWP_FP32, err) == VIT_OK &&
             vit_forward(&w->vit, &image, trace_record, &fp32, err) == VIT_OK;
        e.fp32 = &fp32;
        ok = ok && vit_set_precision(&w->vit, LOWP_INT8, err) == VIT_OK &&
             vit_forward(&w->vit, &image, stage_errors, &e, err) == VIT_OK;
        // [two_passes]
        for (int l = 0; ok && l < w->L; l++)
            for (int i = 0; i < INPUTS; i++) {
                char name[64];
                snprintf(name, sizeof name, "blocks.%d.%s", l, INPUT[i]);
                const Tensor *t = trace_find(&fp32, name);
                if (t) add_crest(&crest[l][i], &rows[l][i], t);
            }
        const Tensor *pre = trace_find(&fp32, "pre_logits");
        if (ok && pre) add_crest(&head, &head_rows, pre);
        trace_recorder_free(&fp32);
    }
    free(x);
    ok = ok && vit_set_precision(&w->vit, LOWP_FP32, err) == VIT_OK;
    for (int l = 0; l < w->L; l++) {
        for (int s = 0; s < STAGES; s++)
            where->error[l * STAGES + s] =
                e.ref2[l][s] > 0 ? (float)sqrt(e.err2[l][s] / e.ref2[l][s]) : 0;
        for (int i = 0; i < INPUTS; i++)
            where->crest[l * INPUTS + i] = rows[l][i] > 0 ? (float)(crest[l][i] / rows[l][i]) : 0;
    }
    for (int i = 0; i < 2; i++)
        where->out_error[i] = e.out_ref2[i] > 0 ? (float)sqrt(e.out_err2[i] / e.out_ref2[i]) : 0;
    where->head_crest = head_rows > 0 ? (float)(head / head_rows) : 0;
    return ok;
}

static void where_the_error_goes(Chapter *ch, Work *w, Where *where) {
    if (!ch_section(ch, "7. Where the error goes, stage by stage")) return;
    VitError err;
    if (!measure_stages(w, where, &err)) {
        ch_verdict(ch, "the forward pass failed: %s", err.msg);
        return;
    }
    const int L = w->L;
    pin_row(ch, "stage.error", where->error, L * STAGES);
    pin_row(ch, "stage.out_error", where->out_error, 2);
    pin_row(ch, "stage.crest", where->crest, L * INPUTS);
    ch_value(ch, "stage.head_crest", where->head_crest);
    ch_say(ch, "vit_set_precision(vit, LOWP_INT8) runs every Linear layer of the model (q, "
               "k, v, proj, fc1, fc2, the head) in int8: weights per channel, activations "
               "per token, sums in int32. The patch embedding, LayerNorm, softmax, GELU "
               "and the residual additions stay in float. Here are the first %d test "
               "images through the model in fp32 and in int8, both traced, and at each "
               "stage the int8 pass's distance from the fp32 one, rms(int8 - fp32) / "
               "rms(fp32), in percent:", TRACED);
    char line[256];
    int at = snprintf(line, sizeof line, "    %-14s", "stage");
    for (int l = 0; l < L; l++) at += snprintf(line + at, sizeof line - (size_t)at, " block %d", l);
    ch_line(ch, "%s", line);
    int worst = 0;
    for (int s = 0; s < STAGES; s++) {
        at = snprintf(line, sizeof line, "    %-14s", STAGE[s]);
        for (int l = 0; l < L; l++) {
            at += snprintf(line + at, sizeof line - (size_t)at, " %6.2f%%", 100 * where->error[l * STAGES + s]);
            if (where->error[l * STAGES + s] > where->error[worst]) worst = l * STAGES + s;
        }
        ch_line(ch, "%s", line);
    }
    ch_line(ch, "    %-14s %6.2f%%", "norm", 100 * where->out_error[0]);
    ch_line(ch, "    %-14s %6.2f%%", "logits", 100 * where->out_error[1]);
    ch_line(ch, "%s", "");
    bool growing = true; // does every block's output end further off than the one before?
    for (int l = 1; l < L; l++)
        growing &= where->error[l * STAGES + STAGES - 1] > where->error[(l - 1) * STAGES + STAGES - 1];
    ch_verdict(ch, "Block 0's norm1 is %.2f%% off: only float came before it. From block 0's "
               "first Linear on, the int8 pass drifts from the fp32 one, and the residual "
               "stream carries each block's rounding into the next: block 0's output is "
               "%.2f%% off, block %d's %.2f%%, %s. The largest distance is at blocks.%d.%s, "
               "%.2f%%. The logits end %.2f%% off.",
               100 * where->error[0], 100 * where->error[STAGES - 1], L - 1,
               100 * where->error[(L - 1) * STAGES + STAGES - 1],
               growing ? "further off after every block" : "though not further off after every block",
               worst / STAGES,
               STAGE[worst % STAGES], 100 * where->error[worst], 100 * where->out_error[1]);
    // which input of the Linear layers has the largest outliers, over the blocks
    double mean[INPUTS] = {0};
    for (int i = 0; i < INPUTS; i++) {
        for (int l = 0; l < L; l++) mean[i] += where->crest[l * INPUTS + i] / L;
    }
    int spiky = 0;
    for (int i = 1; i < INPUTS; i++)
        if (mean[i] > mean[spiky]) spiky = i;
    where->spiky = spiky;
    ch_say(ch, "Why there? A token's step is its largest value / 127, so a token with one "
               "value far above the rest (an outlier) gets coarse steps for all its "
               "others. The ratio max|x| / rms(x) of each token (its crest factor) "
               "measures that; rounding to a step of max / 127 then adds noise of about "
               "crest / (127 x sqrt(12)) = crest / 440 of the token's rms. Averaged over "
               "the tokens, for the input of each Linear layer:");
    at = snprintf(line, sizeof line, "    %-26s", "input (read by)");
    for (int l = 0; l < L; l++) at += snprintf(line + at, sizeof line - (size_t)at, " block %d", l);
    ch_line(ch, "%s", line);
    for (int i = 0; i < INPUTS; i++) {
        char label[64];
        snprintf(label, sizeof label, "%s (%s)", INPUT[i], READ_BY[i]);
        at = snprintf(line, sizeof line, "    %-26s", label);
        for (int l = 0; l < L; l++)
            at += snprintf(line + at, sizeof line - (size_t)at, " %7.2f", where->crest[l * INPUTS + i]);
        ch_line(ch, "%s", line);
    }
    ch_line(ch, "    %-26s %7.2f", "pre_logits (head)", where->head_crest);
    ch_line(ch, "%s", "");
    const float noise = ch_value(ch, "stage.spiky_noise", (float)(mean[spiky] / (127 * sqrt(12.0))));
    ch_verdict(ch, "The input with the largest outliers is %s, read by %s: its tokens' "
               "largest values are %.1f times their rms on average over the blocks, so "
               "rounding it alone adds about %.2f%% noise to it. GELU's output is like that: "
               "it cuts the negative half of fc1's outputs to near zero and lets the "
               "positive tail through, a few large values among many small ones.",
               INPUT[spiky], READ_BY[spiky], mean[spiky], 100 * noise);
}

/* ----------------------------------------- 8. keeping a layer in float */

// Every block's Linear layers of one kind back to float (its copy's pointer
// cleared: ops_linear_lowp() then runs the float weight); kind KINDS - 1, the head.
// [keep_in_float]
static void keep_in_float(Vit *vit, int kind) {
    for (int l = 0; l < vit->config.depth; l++) {
        VitBlockWeights *b = &vit->weights.blocks[l];
        if (kind == 0) b->attn.q_lowp = b->attn.k_lowp = b->attn.v_lowp = NULL;
        if (kind == 1) b->attn.proj_lowp = NULL;
        if (kind == 2) b->fc1_lowp = NULL;
        if (kind == 3) b->fc2_lowp = NULL;
    }
    if (kind == KINDS - 1) vit->weights.head_lowp = NULL;
}
// [keep_in_float]

// The logits of the traced images in the model's precision now, no trace.
static bool traced_logits(Work *w, float *logits, VitError *err) {
    float *x = vit_malloc(sizeof(float) * TRACED * 28 * 28);
    int labels[TRACED];
    const Tensor image = test_batch(w, x, labels, 0, TRACED);
    const bool ok = vit_forward(&w->vit, &image, NULL, NULL, err) == VIT_OK;
    if (ok) memcpy(logits, vit_logits(&w->vit).data, sizeof(float) * TRACED * w->Y);
    free(x);
    return ok;
}

static float relative_distance(const float *a, const float *ref, size_t n) {
    double e2 = 0, r2 = 0;
    for (size_t i = 0; i < n; i++) e2 += (double)(a[i] - ref[i]) * (a[i] - ref[i]), r2 += (double)ref[i] * ref[i];
    return (float)sqrt(e2 / r2);
}

static void keeping_a_layer(Chapter *ch, Work *w, const Where *where) {
    if (!ch_section(ch, "8. What keeping a layer in float buys")) return;
    const size_t n = (size_t)TRACED * w->Y;
    float *ref = vit_malloc(sizeof(float) * n), *got = vit_malloc(sizeof(float) * n);
    float error[KINDS + 1], share[KINDS];
    int same[KINDS + 1];
    VitError err;
    bool ok = vit_set_precision(&w->vit, LOWP_FP32, &err) == VIT_OK && traced_logits(w, ref, &err);
    for (int k = -1; ok && k < KINDS; k++) { // -1: every Linear in int8
        ok = vit_set_precision(&w->vit, LOWP_INT8, &err) == VIT_OK;
        if (ok && k >= 0) keep_in_float(&w->vit, k);
        ok = ok && traced_logits(w, got, &err);
        error[k + 1] = relative_distance(got, ref, n);
        same[k + 1] = 0;
        for (int b = 0; b < TRACED; b++)
            same[k + 1] += argmax(got + b * w->Y, w->Y) == argmax(ref + b * w->Y, w->Y);
    }
    ok = ok && vit_set_precision(&w->vit, LOWP_FP32, &err) == VIT_OK;
    free(ref), free(got);
    if (!ok) {
        ch_verdict(ch, "the forward pass failed: %s", err.msg);
        return;
    }
    const double per_block[4] = {3.0 * w->D * w->D, (double)w->D * w->D, (double)w->M * w->D,
                                 (double)w->D * w->M};
    const double total = w->L * (per_block[0] + per_block[1] + per_block[2] + per_block[3]) +
                         (double)w->Y * w->D;
    for (int k = 0; k < KINDS; k++)
        share[k] = (float)((k < 4 ? w->L * per_block[k] : (double)w->Y * w->D) / total);
    pin_row(ch, "keep.error", error, KINDS + 1);
    pin_row(ch, "keep.share", share, KINDS);
    float same_f[KINDS + 1];
    for (int k = 0; k <= KINDS; k++) same_f[k] = (float)same[k];
    pin_row(ch, "keep.same", same_f, KINDS + 1);
    ch_say(ch, "vit_set_precision() gives every Linear layer its int8 copy; clearing one "
               "kind's pointers (AttentionWeights::q_lowp, VitBlockWeights::fc2_lowp, ...) "
               "sends that kind back to its float weight in every block. The logits of "
               "the same %d images, their distance from the fp32 model's, and how many "
               "images keep fp32's class:", TRACED);
    ch_line(ch, "    %-30s %14s %12s %10s", "in float", "int8 weights", "logits off", "same class");
    ch_line(ch, "    %-30s %14s %11.3f%% %6d/%d", "nothing (all int8)", "100%", 100 * error[0],
            same[0], TRACED);
    int best = 0;
    for (int k = 0; k < KINDS; k++) {
        char label[64], kept[16];
        snprintf(label, sizeof label, "%s%s", KIND[k], k < KINDS - 1 ? ", every block" : "");
        snprintf(kept, sizeof kept, "%.1f%%", 100 * (1 - share[k]));
        ch_line(ch, "    %-30s %14s %11.3f%% %6d/%d", label, kept, 100 * error[k + 1],
                same[k + 1], TRACED);
        if (error[k + 1] < error[best + 1]) best = k;
    }
    ch_line(ch, "%s", "");
    ch_verdict(ch, "Keeping %s in float helps the logits most: their distance from fp32's goes "
               "from %.3f%% to %.3f%%, for %.1f%% of the Linear weights back in float (4 "
               "bytes each instead of 1). %s",
               KIND[best], 100 * error[0], 100 * error[best + 1], 100 * share[best],
               best == where->spiky ? "It is the layer whose input Section 7 found the "
                                      "spikiest."
                                    : "It is not the layer whose input Section 7 found the "
                                      "spikiest: outliers are not the whole story.");
    const int moved = same[best + 1] - same[0];
    if (moved == 0)
        ch_verdict(ch, "The classes do not change: %d of the %d images keep fp32's class "
                   "either way. What the float layer buys is not visible in decisions here.",
                   same[0], TRACED);
    else
        ch_verdict(ch, "In decisions it %s: %d of the %d images keep fp32's class, against %d "
                   "with every layer in int8. A difference of %d image%s, near a tie between "
                   "two classes that any rounding can tip either way: these %d images cannot "
                   "show a gain or a loss in decisions.",
                   moved > 0 ? "gains" : "does not gain", same[best + 1], TRACED, same[0],
                   abs(moved), abs(moved) == 1 ? "" : "s", TRACED);
}

/* -------------------------------------------- 9. the agreement table */

static bool classify_all(Work *w, LowpPrecision p, int n, int *pred, int *right, VitError *err) {
    float *x = vit_malloc(sizeof(float) * BATCH * 28 * 28);
    int labels[BATCH];
    bool ok = vit_set_precision(&w->vit, p, err) == VIT_OK;
    *right = 0;
    for (int first = 0; ok && first < n; first += BATCH) {
        const Tensor image = test_batch(w, x, labels, first, BATCH);
        ok = vit_forward(&w->vit, &image, NULL, NULL, err) == VIT_OK;
        const Tensor logits = vit_logits(&w->vit);
        for (int b = 0; ok && b < BATCH; b++) {
            pred[first + b] = argmax(logits.data + (size_t)b * w->Y, w->Y);
            *right += pred[first + b] == labels[b];
        }
    }
    free(x);
    return ok && vit_set_precision(&w->vit, LOWP_FP32, err) == VIT_OK;
}

// The file's bytes of float data, and what they would be with every Linear weight
// in int8 with one float scale per row.
static void file_bytes(const Work *w, double *fp32, double *int8) {
    *fp32 = *int8 = 0;
    for (int i = 0; i < w->vit.file.count; i++) {
        const StTensor *t = &w->vit.file.tensors[i];
        bool linear = false;
        for (int k = 0; k < KINDS; k++)
            linear |= t->ndim == 2 && strstr(t->name, KIND[k]) && strstr(t->name, ".weight");
        *fp32 += 4.0 * (double)t->numel;
        *int8 += linear ? (double)t->numel + 4.0 * (double)t->shape[0] : 4.0 * (double)t->numel;
    }
}

// ViT-B/16's bytes with every Linear weight in int8 (and a float scale per row)
// over its bytes in float32, counted from its shapes: D 768, L 12, M 3072,
// 1000 classes, 196 patches of 3 × 16 × 16.
// [vit_base_int8_share]
static double vit_base_int8_share(void) {
    const double D = 768, L = 12, M = 3072, Y = 1000, P = 196, patch = 3 * 16 * 16;
    const double linear = L * (3 * D * D + D * D + M * D + D * M) + Y * D; // weights
    const double rows = L * (3 * D + D + M + D) + Y;                      // their scales
    const double rest = patch * D + D + D + (P + 1) * D                   // patch_embed, cls, pos
                        + L * (4 * D + 3 * D + D + M + D)                 // norms, biases
                        + 2 * D + Y;                                      // final norm, head bias
    return (linear + 4 * rows + 4 * rest) / (4 * (linear + rest));
}
// [vit_base_int8_share]

static void agreement_table(Chapter *ch, Work *w) {
    if (!ch_section(ch, "9. The agreement table")) return;
    const int n = knobs[KNOB_IMAGES].value;
    if (n > w->test.count) {
        ch_verdict(ch, "Only %d test images were loaded.", w->test.count);
        return;
    }
    int *pred[3], right[3], same[3] = {n, 0, 0}, only_low[3] = {0}, only_fp32[3] = {0};
    static const LowpPrecision P[3] = {LOWP_FP32, LOWP_BF16, LOWP_INT8};
    VitError err;
    bool ok = true;
    for (int p = 0; p < 3; p++) {
        pred[p] = vit_malloc(sizeof(int) * n);
        ok = ok && classify_all(w, P[p], n, pred[p], &right[p], &err);
    }
    for (int p = 1; ok && p < 3; p++)
        for (int i = 0; i < n; i++) {
            const bool low = pred[p][i] == w->test.labels[i], fp = pred[0][i] == w->test.labels[i];
            same[p] += pred[p][i] == pred[0][i];
            only_low[p] += low && !fp, only_fp32[p] += fp && !low;
        }
    for (int p = 0; p < 3; p++) free(pred[p]);
    if (!ok) {
        ch_verdict(ch, "the forward pass failed: %s", err.msg);
        return;
    }
    float f[3];
    for (int p = 0; p < 3; p++) f[p] = (float)right[p];
    pin_row(ch, "agree.right", f, 3);
    for (int p = 0; p < 3; p++) f[p] = (float)same[p];
    pin_row(ch, "agree.same", f, 3);
    const float only[4] = {(float)only_low[1], (float)only_fp32[1], (float)only_low[2],
                           (float)only_fp32[2]};
    pin_row(ch, "agree.only", only, 4);
    char a[VIT_NUM_BUF];
    ch_say(ch, "The model in each precision on the first %s test images: its accuracy, and "
               "its top-1 agreement with fp32 (the same class for the same image, right "
               "or wrong):", vit_thousands(a, n));
    ch_line(ch, "    %-10s %10s %16s", "precision", "accuracy", "agrees with fp32");
    for (int p = 0; p < 3; p++)
        ch_line(ch, "    %-10s %9.2f%% %15.2f%%", lowp_precision_name(P[p]), 100.0 * right[p] / n,
                100.0 * same[p] / n);
    ch_line(ch, "%s", "");
    for (int p = 1; p < 3; p++) {
        const int d = n - same[p];
        if (d == 0) {
            ch_verdict(ch, "%s gives fp32's class for every one of the %s images: on these, the "
                       "two cannot be told apart.", lowp_precision_name(P[p]), vit_thousands(a, n));
            continue;
        }
        // a difference in right answers is only the images where the two disagree;
        // with no real difference, each such image is as likely to favour either
        const bool decided = abs(only_low[p] - only_fp32[p]) > 2 * sqrt((double)(only_low[p] + only_fp32[p]));
        ch_verdict(ch, "%s and fp32 disagree on %d image%s. %s alone is right on %d of them, "
                   "fp32 alone on %d (on the rest both are wrong): the accuracies differ by "
                   "%+.2f points. %s",
                   lowp_precision_name(P[p]), d, d == 1 ? "" : "s", lowp_precision_name(P[p]), only_low[p],
                   only_fp32[p], 100.0 * (right[p] - right[0]) / n,
                   decided ? "That split is lopsided beyond two standard deviations of a fair "
                             "coin's: the evidence says the smaller number changes accuracy."
                           : "That split is within two standard deviations of a fair coin's: "
                             "these images cannot tell whether the smaller number is any more "
                             "or less accurate, only how often it changes a decision.");
    }
    double fp32_bytes, int8_bytes;
    file_bytes(w, &fp32_bytes, &int8_bytes);
    const float ratio = ch_value(ch, "bytes.ratio", (float)(int8_bytes / fp32_bytes));
    char b[VIT_NUM_BUF], c[VIT_NUM_BUF];
    ch_value(ch, "bytes.fp32", (float)fp32_bytes);
    ch_value(ch, "bytes.int8", (float)int8_bytes);
    const float vitb = ch_value(ch, "bytes.vitb_ratio", (float)vit_base_int8_share());
    ch_say(ch, "The weights: the file holds %s bytes of float32. With every Linear weight "
               "in int8 and one float scale per row, it would hold %s, %.1f%% of it: the "
               "patch embedding, the position table, the LayerNorms and the biases stay "
               "in float, and in so small a model they are a good part of it. ViT-B/16's "
               "Linear weights are nearly all of its parameters; counted from its shapes, "
               "the same scheme keeps %.1f%% of its bytes.",
           vit_thousands(b, (int64_t)fp32_bytes), vit_thousands(c, (int64_t)int8_bytes),
           100 * ratio, 100 * vitb);
    ch_line(ch, "    Measured earlier with `build/vit eval --precision P --weights "
            "data/models/vit-fashion.safetensors`");
    ch_line(ch, "    on all 10,000 test images (quoted here, not computed by this run; "
            "--images 10000 computes it):");
    ch_line(ch, "      fp32 91.12%%;  bf16 91.11%%, agreement 99.93%%;  int8 91.13%%, "
            "agreement 99.81%%");
    ch_line(ch, "%s", "");
}

/* ------------------------------------------------------------ the chapter */

static bool load(Chapter *ch, Work *w) {
    char path[1024];
    VitError err;
    if (dataset_fashion_mnist_load_first(&w->test, NULL, "test", knobs[KNOB_IMAGES].value, &err) !=
        VIT_OK) {
        ch_verdict(ch, "Fashion-MNIST cannot be loaded (%s). Install Debian's "
                   "dataset-fashion-mnist (scripts/deps.sh does) and run the chapter again.",
                   err.msg);
        return false;
    }
    if (vit_build(&w->vit, vit_data_path(path, sizeof path, MODEL_FILE), &err) != VIT_OK) {
        ch_verdict(ch, "data/%s cannot be loaded (%s).", MODEL_FILE, err.msg);
        return false;
    }
    const VitConfig *c = &w->vit.config;
    w->L = c->depth, w->D = c->dim, w->M = c->mlp_dim, w->Y = c->num_classes;
    w->N = vit_num_tokens(c);
    if (w->L > MAX_LAYERS || w->D > 1024 || c->channels != 1 || c->image_size != 28) {
        ch_verdict(ch, "data/%s is not the 28 x 28 model this chapter reads.", MODEL_FILE);
        return false;
    }
    const char *m = st_meta(&w->vit.file, "mean"), *s = st_meta(&w->vit.file, "std");
    w->mean = m ? (float)atof(m) : 0.2860f, w->std = s ? (float)atof(s) : 0.3530f;
    w->token = vit_malloc(sizeof(float) * w->D);
    return true;
}

void chapter15_run(Chapter *ch) {
    ch_title(ch, "15", "Smaller numbers");
    ch_say(ch, "Chapter 14 made the float product fast. The next factor comes from "
               "smaller numbers: half the bits (bf16) or a quarter (int8) move half or a "
               "quarter of the bytes, and the CPU's dot-product instructions do two or four "
               "times the multiply-adds per instruction. This chapter builds both from the "
               "bits up and measures what they cost the trained model.");
    const int threads = vit_get_threads();
    vit_set_threads(1); // every float sum in the same order on any machine
    Work w = {0};
    if (load(ch, &w)) {
        Where where = {0};
        what_a_float_is(ch, &w);
        bf16_half_a_float(ch, &w);
        int8_and_a_scale(ch, &w);
        the_accumulator(ch);
        unsigned_times_signed(ch, &w);
        per_tensor_or_channel(ch, &w);
        where_the_error_goes(ch, &w, &where);
        keeping_a_layer(ch, &w, &where);
        agreement_table(ch, &w);
        if (ch_section(ch, "What's next"))
            ch_say(ch, "The kernels are in lib/gemm/gemm_int8.c and lib/gemm/gemm_bf16.c, the "
                       "quantization in lib/gemm/quantize_rows.c, the model's switch in "
                       "lib/model/precision.c; `vit eval --precision int8` and `make bench` "
                       "measure the same at full size, and exercise 15 asks you to write the "
                       "quantization and the int8 product yourself.");
    }
    free(w.token);
    dataset_free(&w.test);
    vit_free(&w.vit);
    vit_set_threads(threads);
}

#ifndef CHAPTER_NO_MAIN
int main(int argc, char **argv) {
    return chapter_main_knobs(argc, argv, chapter15_run,
                              "Chapter 15: bf16 and int8 from the bits up, and what they cost "
                              "the trained model, stage by stage.",
                              knobs, KNOBS);
}
#endif
