/**
 * @file 05_multi_head.c
 * @brief Chapter 05 · Multi-head attention, exactly as timm computes it.
 *
 * H heads of width \f$D_h = D/H\f$ attend side by side, each on its own slice
 * of one fused projection, and their outputs are joined and projected:
 * \f[ [Q\,|\,K\,|\,V] = X W_{qkv}^\top + b_{qkv},\qquad
 *     \mathrm{head}_h = \mathrm{softmax}\!\left(\frac{Q_h K_h^\top}{\sqrt{D_h}}\right) V_h,\qquad
 *     \mathrm{MHA}(X) = [\mathrm{head}_1 \cdots \mathrm{head}_H]\, W_o^\top + b_o . \f]
 * The chapter follows timm's `Attention.forward` line by line on 4 tokens of
 * width 6 with 2 heads: the fused QKV projection, the reshape
 * (B,N,3,H,Dh) → permute (3,B,H,N,Dh), attention per head, the merge, the
 * output projection; it shows that the fused weight equals three separate
 * ones and where dropout would go. Then a batch of two sequences of different
 * lengths: the permute for B = 2, where it is more than a split into 3H heads,
 * and a (B, N) key-padding mask that hides one sequence's padding from it
 * alone. Last, what happens when D is not divisible by H.
 *
 * Every number printed is pinned by name and checked against PyTorch by
 * tests/test_ch05_multi_head.c.
 *
 * Run: `build/chapters/05_multi_head`
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attention.h"
#include "teach/chapter.h"
#include "chapters.h"
#include "ops/ops.h"
#include "base/rng.h"
#include "base/tensor.h"
#include "base/trace.h"
#include "model/vit.h"

enum {
    B = 1,       // images in the batch
    N = 4,       // tokens
    D = 6,       // width
    H = 2,       // heads
    DH = D / H,  // width per head: 3
    DRAWS = 10000, // dropout masks averaged in section 6
};
static const uint64_t SEED = 5;          // x, W_qkv, b_qkv, W_proj, b_proj from one stream
static const uint64_t DROPOUT_SEED = 55; // the dropout masks
static const float DROP_P = 0.25f;       // dropout probability in the demonstration
static const float WEIGHT_STD = 0.35f;   // spread of the projection weights

// Section 7: a batch of two sequences of N tokens, the second one padded.
enum { BATCH = 2 };
static const int LENGTHS[BATCH] = {4, 3}; // real tokens of each sequence; the rest is padding
static const uint64_t BATCH_SEED = 57;    // sequence 1's N tokens, its padding row included

/* ------------------------------------------------------------ helpers */

// Pin and print a tensor of up to four dimensions given as sizes.
static void show4(Chapter *ch, const char *name, float *data, int d0, int d1, int d2, int d3) {
    Tensor t = tensor_view(data, 4, d0, d1, d2, d3);
    ch_show(ch, name, &t);
}

static void show3(Chapter *ch, const char *name, float *data, int d0, int d1, int d2) {
    Tensor t = tensor_view(data, 3, d0, d1, d2);
    ch_show(ch, name, &t);
}

// [mha_run]
// What mha_forward() needs besides its inputs: scratch memory for `batch`
// sequences of n tokens, and a tracer that records every tensor it hands over.
typedef struct {
    float *mem;         // mha_scratch_floats() floats
    MhaScratch scratch; // q, k, v, scores, … carved out of mem
    TraceRecorder rec;  // what mha_forward() traced, by name
    Tracer tracer;      // feeds rec
} MhaRun;

static void mha_run_init(MhaRun *r, int batch, int n) {
    r->mem = vit_malloc(mha_scratch_floats(batch, n, D, H) * sizeof(float));
    mha_scratch_carve(&r->scratch, r->mem, batch, n, D, H);
    r->rec = (TraceRecorder){0};
    r->tracer = (Tracer){trace_record, &r->rec, NULL};
}
// [mha_run]

static void mha_run_free(MhaRun *r) {
    trace_recorder_free(&r->rec);
    free(r->mem);
}

/* ----------------------------------------------------------- the layer */

// One multi-head attention layer and everything computed from it.
typedef struct {
    float x[B * N * D];          // (B, N, D) input tokens
    float w_qkv[3 * D * D];      // (3D, D) fused projection: W_q, W_k, W_v stacked
    float b_qkv[3 * D];          // (3D)
    float w_proj[D * D];         // (D, D) output projection
    float b_proj[D];             // (D)
    float qkv[B * N * 3 * D];    // (B, N, 3D) = (B, N, 3, H, DH) viewed
    float qkv_heads[3 * B * H * N * DH]; // (3, B, H, N, DH) after the permute
    AttentionWeights w;          // W_q, W_k, W_v: row blocks of w_qkv; b_q, b_k, b_v of b_qkv
    float *q, *k, *v;            // (B, H, N, DH) each: the three slices of qkv_heads
    float scores[B * H * N * N]; // (B, H, N, N)
    float probs[B * H * N * N];  // (B, H, N, N)
    float heads[B * H * N * DH]; // (B, H, N, DH) per-head outputs
    float context[B * N * D];    // (B, N, D) heads merged
    float out[B * N * D];        // (B, N, D) after the output projection
} Layer;

static void fused_projection(Chapter *ch, Layer *L) {
    if (!ch_section(ch, "1. One projection for Q, K and V")) return;
    ch_say(ch, "Chapter 04 used three weight matrices. timm stores them as one: "
               "qkv.weight of shape (3D, D) = (%d, %d), W_q on top, W_k in the middle, "
               "W_v at the bottom, with one bias of length 3D (ViT-Base: (2304, 768)). "
               "One linear layer then produces all three for every token: %d tokens "
               "of width %d in, %d numbers per token out.", 3 * D, D, N, D, 3 * D);
    Rng rng;
    rng_seed(&rng, SEED);
    rng_fill_normal(&rng, L->x, B * N * D, 0.0f, 1.0f);
    rng_fill_normal(&rng, L->w_qkv, 3 * D * D, 0.0f, WEIGHT_STD);
    rng_fill_normal(&rng, L->b_qkv, 3 * D, 0.0f, 0.1f);
    rng_fill_normal(&rng, L->w_proj, D * D, 0.0f, WEIGHT_STD);
    rng_fill_normal(&rng, L->b_proj, D, 0.0f, 0.1f);
    L->w = (AttentionWeights){
        .q_w = L->w_qkv, .k_w = L->w_qkv + D * D, .v_w = L->w_qkv + 2 * D * D,
        .q_b = L->b_qkv, .k_b = L->b_qkv + D,     .v_b = L->b_qkv + 2 * D,
        .proj_w = L->w_proj, .proj_b = L->b_proj,
    };
    show3(ch, "x", L->x, B, N, D);
    // [fused]
    // qkv = self.qkv(x): (B·N, D) · (3D, D)ᵀ + b → (B·N, 3D)
    ops_linear(L->qkv, L->x, L->w_qkv, L->b_qkv, B * N, D, 3 * D);
    // [fused]
    ch_say(ch, "The %d numbers of one token are laid out as [q | k | v], and each "
               "third as [head 0 | head 1]. Token 0's row, viewed as (3, H, Dh) = "
               "(3, %d, %d):", 3 * D, H, DH);
    show3(ch, "qkv_token_0", L->qkv, 3, H, DH);
}

static void split_heads(Chapter *ch, Layer *L) {
    if (!ch_section(ch, "2. The reshape and permute")) return;
    ch_say(ch, "timm's next line separates the heads and brings them forward:");
    ch_line(ch, "    qkv.reshape(B, N, 3, H, Dh).permute(2, 0, 3, 1, 4)   # (3, B, H, N, Dh)");
    ch_line(ch, "    q, k, v = qkv.unbind(0)                                # (B, H, N, Dh) each");
    ch_line(ch, "%s", "");
    ch_say(ch, "The reshape only renames the axes of the numbers already in memory: "
               "entry [b, n, s·D + h·Dh + d] of qkv becomes [b, n, s, h, d]. The "
               "permute moves them so that every (which-of-q/k/v, image, head) triple "
               "owns one contiguous (N, Dh) matrix, ready for a matrix product, and "
               "unbind(0) cuts the result into three (B, H, N, Dh) blocks. lib's "
               "heads_split_qkv() is that permute, for any B:");
    // [permute]
    // (B, N, 3·H·DH) viewed as (B, N, 3, H, DH) → (3, B, H, N, DH)
    heads_split_qkv(L->qkv_heads, L->qkv, B, N, H, DH);
    L->q = L->qkv_heads;                      // qkv[0], (B, H, N, DH)
    L->k = L->qkv_heads + 1 * B * H * N * DH; // qkv[1]
    L->v = L->qkv_heads + 2 * B * H * N * DH; // qkv[2]
    // [permute]
    show4(ch, "q", L->q, B, H, N, DH);
    show4(ch, "k", L->k, B, H, N, DH);
    show4(ch, "v", L->v, B, H, N, DH);

    // One entry followed through the permute: k[b=0, h=1, n=2, d=2] = qkv[0, 2, 1·D + 1·DH + 2].
    int s = 1, h = 1, n = 2, d = 2;
    float from_qkv = ch_value(ch, "qkv_0_2_11", L->qkv[n * 3 * D + s * D + h * DH + d]);
    float from_k = ch_value(ch, "k_0_1_2_2", L->k[(h * N + n) * DH + d]);
    ch_say(ch, "Follow one number: k[0, %d, %d, %d] (head %d, token %d, entry %d) is "
               "qkv[0, %d, %d·%d + %d·%d + %d] = qkv[0, %d, %d]: %.4f and %.4f.",
           h, n, d, h, n, d, n, s, D, h, DH, d, n, s * D + h * DH + d, from_k, from_qkv);
    ch_say(ch, "With one image (B = 1) the permute is the same as splitting the width "
               "3D into 3H heads with heads_split(), the first H being Q's, the next H "
               "K's and the last H V's. With more images it is not; section 7 shows "
               "why.");
}

static void fused_equals_separate(Chapter *ch, Layer *L) {
    if (!ch_section(ch, "3. Fused equals separate")) return;
    ch_say(ch, "Is one (3D, D) projection really the same as three (D, D) ones? Each "
               "output number of a linear layer is one weight row dotted with the "
               "input, so stacking weight rows just stacks outputs. lib's mha_forward() "
               "uses the separate form: W_q is rows 0…%d of qkv.weight, W_k rows "
               "%d…%d, W_v rows %d…%d.", D - 1, D, 2 * D - 1, 2 * D, 3 * D - 1);
    float flat[B * N * D], separate[B * H * N * DH];
    float worst = 0;
    for (int s = 0; s < 3; s++) {
        // [separate]
        const float *w = L->w_qkv + s * D * D, *b = L->b_qkv + s * D; // W_q, W_k or W_v
        ops_linear(flat, L->x, w, b, B * N, D, D);                       // (B, N, D)
        heads_split(separate, flat, B, N, H, DH);                    // (B, H, N, DH)
        // [separate]
        Tensor a = tensor_view(separate, 1, B * H * N * DH);
        Tensor f = tensor_view(L->qkv_heads + s * B * H * N * DH, 1, B * H * N * DH);
        float diff = tensor_max_abs_diff(&a, &f);
        if (diff > worst) worst = diff;
    }
    ch_say(ch, "Computing Q, K and V separately that way and comparing with the slices "
               "of the fused result, the largest difference is %g. Fusing is only "
               "faster: one big matrix product instead of three small ones.",
           ch_value(ch, "fused_vs_separate_max_diff", worst));
}

static void heads_attend(Chapter *ch, Layer *L) {
    if (!ch_section(ch, "4. Every head attends on its own")) return;
    ch_say(ch, "Now each head is Chapter 04's attention on its own (N, Dh) slices. "
               "The B·H = %d heads are independent, so attention_scores(), "
               "attention_scale_mask() and attention_context() simply loop over "
               "B·H of them; the scale is 1/√Dh = 1/√%d.", B * H, DH);
    // [heads]
    attention_scores(L->scores, L->q, L->k, B * H, N, DH);          // (B, H, N, N)
    attention_scale_mask(L->scores, L->scores, NULL, B, H, N, DH);  // × 1/√Dh, in place
    softmax(L->probs, L->scores, B * H * N, N);                      // every row
    attention_context(L->heads, L->probs, L->v, B * H, N, DH);       // (B, H, N, DH)
    // [heads]
    show4(ch, "probs", L->probs, B, H, N, N);
    ch_say(ch, "The two heads attend differently to the same tokens: token 0 takes "
               "%.4f of its input from token 0 in head 0 but %.4f in head 1. With "
               "learned weights, heads specialise: some look at neighbours, some at "
               "similar colours, some at the whole image.", L->probs[0], L->probs[N * N]);
    show4(ch, "heads", L->heads, B, H, N, DH);
}

static void merge_and_project(Chapter *ch, Layer *L) {
    if (!ch_section(ch, "5. Merge the heads, project the result")) return;
    ch_say(ch, "The heads are put back side by side, token by token: "
               "(attn @ v).transpose(1, 2).reshape(B, N, D) in timm, heads_merge() in "
               "lib. Token n's row becomes [head 0's output | head 1's output], width "
               "H·Dh = %d again.", D);
    // [merge]
    heads_merge(L->context, L->heads, B, N, H, DH);                   // (B, N, D)
    ops_linear(L->out, L->context, L->w_proj, L->b_proj, B * N, D, D);    // self.proj
    // [merge]
    show3(ch, "context", L->context, B, N, D);
    ch_say(ch, "Each head only saw its own %d columns. The output projection "
               "W_o (%d, %d) mixes all %d, so what one head found can reach every "
               "feature of the result:", DH, D, D, D);
    show3(ch, "out", L->out, B, N, D);
}

static void whole_layer(Chapter *ch, Layer *L) {
    if (!ch_section(ch, "6. The whole layer in one call, and dropout")) return;
    ch_say(ch, "lib's mha_forward() is sections 1–5 in one function, with Q, K and V "
               "read straight out of the fused weight. A TraceRecorder keeps what it "
               "hands to the trace, under these names:");
    MhaRun run;
    mha_run_init(&run, B, N);
    float out[B * N * D];
    // [mha]
    // W_q, W_k, W_v are row blocks of the fused qkv.weight (section 3); no options
    mha_forward(out, L->x, &L->w, NULL, &run.scratch, B, N, D, H, &run.tracer);
    // [mha]
    char names[128] = "";
    for (int i = 0; i < run.rec.count; i++) {
        strcat(names, "    ");
        strcat(names, run.rec.entries[i].name);
    }
    ch_line(ch, "%s", names);
    ch_line(ch, "%s", "");
    const Tensor *probs = trace_find(&run.rec, "probs");
    float d_out = ch_max_diff(ch, "mha_forward_out_max_diff", out, L->out, B * N * D);
    float d_probs = ch_max_diff(ch, "mha_forward_probs_max_diff", probs->data, L->probs,
                                B * H * N * N);
    ch_say(ch, "Its output differs from section 5's by %g and its attention "
               "probabilities by %g.", d_out, d_probs);
    mha_run_free(&run);

    ch_say(ch, "timm's Attention has two dropout layers, which lib leaves out. "
               "attn_drop acts on the probabilities right after softmax, proj_drop on "
               "the output right after the projection. During training, dropout with "
               "probability p zeroes each number with probability p and divides the "
               "survivors by 1 - p. Here is head 0's row 0 with p = %.2f, once:",
           ch_value(ch, "dropout_p", DROP_P));
    Tensor row = tensor_view(L->probs, 1, N);
    ch_show(ch, "probs_row", &row);
    Rng rng;
    rng_seed(&rng, DROPOUT_SEED);
    float dropped[N], mean[N];
    double sum[N] = {0};
    for (int draw = 0; draw < DRAWS; draw++) {
        // [dropout]
        // training only: keep each weight with probability 1 - p, scaled up by 1/(1 - p)
        for (int j = 0; j < N; j++)
            dropped[j] = rng_uniform(&rng) < DROP_P ? 0.0f : L->probs[j] / (1.0f - DROP_P);
        // [dropout]
        if (draw == 0) {
            Tensor t = tensor_view(dropped, 1, N);
            ch_show(ch, "probs_row_dropped", &t);
        }
        for (int j = 0; j < N; j++) sum[j] += dropped[j];
    }
    for (int j = 0; j < N; j++) mean[j] = (float)(sum[j] / DRAWS);
    ch_say(ch, "That row no longer sums to 1, and a different row comes out every "
               "time. But dividing by 1 - p makes every entry right on average: over "
               "%d draws the mean is", DRAWS);
    Tensor tm = tensor_view(mean, 1, N);
    ch_show(ch, "probs_row_dropout_mean", &tm);
    ch_say(ch, "which is the row without dropout, up to sampling noise. At inference "
               "(model.eval() in PyTorch) dropout is switched off and passes its input "
               "through unchanged: the network then sees exactly the average it was "
               "trained towards, and the same image always gives the same answer. "
               "lib has no dropout at all: at inference it would change nothing, and "
               "lib's training (Chapter 11) leaves it out too, because the small model "
               "trained there reaches its accuracy without it.");
}

// Section 7's batch: two sequences of N tokens, and what is computed from them.
typedef struct {
    float x[BATCH * N * D];                  // (2, N, D): sequence 0 is section 1's x
    float qkv[BATCH * N * 3 * D];            // (2, N, 3D) = (2, N, 3, H, DH) viewed
    float qkv_heads[3 * BATCH * H * N * DH]; // (3, 2, H, N, DH) after the permute
    float split_3h[BATCH * 3 * H * N * DH];  // (2, 3H, N, DH): heads_split() into 3H heads
    float pad[BATCH * N];                    // (2, N) key-padding mask
    float out[BATCH * N * D];                // (2, N, D)
} Batch;

static void batch_permute(Chapter *ch, const Layer *L, Batch *b) {
    if (!ch_section(ch, "7. A batch of two sequences of different lengths")) return;
    memcpy(b->x, L->x, sizeof L->x);
    Rng rng;
    rng_seed(&rng, BATCH_SEED);
    rng_fill_normal(&rng, b->x + N * D, N * D, 0.0f, 1.0f);
    ch_say(ch, "A batch stacks sequences: x becomes (B, N, D), here with B = %d. "
               "Sequence 0 is section 1's x. Sequence 1 has only %d real tokens, so "
               "it is padded to N = %d with a row that means nothing (random numbers "
               "here, to show that they cannot leak):", BATCH, LENGTHS[1], N);
    show3(ch, "x_batch", b->x, BATCH, N, D);
    ch_say(ch, "The fused projection treats all B·N = %d rows alike, and the permute "
               "now really moves blocks across images: (B, N, 3, H, Dh) → "
               "(3, B, H, N, Dh) puts all of Q first, image 0's heads then image "
               "1's, then all of K, then all of V.", BATCH * N);
    // [permute_batch]
    ops_linear(b->qkv, b->x, L->w_qkv, L->b_qkv, BATCH * N, D, 3 * D); // (2, N, 3D)
    heads_split_qkv(b->qkv_heads, b->qkv, BATCH, N, H, DH);         // (3, 2, H, N, DH)
    // [permute_batch]
    const size_t block = (size_t)BATCH * H * N * DH; // one of q, k, v: (2, H, N, DH)
    const float *q = b->qkv_heads, *k = b->qkv_heads + block, *v = b->qkv_heads + 2 * block;
    // follow v[1, 0, 2, 1] = qkv[1, 2, 2·D + 0·DH + 1]
    int bb = 1, h = 0, n = 2, d = 1, part = 2;
    float from_qkv = ch_value(ch, "batch_qkv_1_2_13",
                              b->qkv[((size_t)bb * N + n) * 3 * D + part * D + h * DH + d]);
    float from_v = ch_value(ch, "batch_v_1_0_2_1", v[(((size_t)bb * H + h) * N + n) * DH + d]);
    ch_say(ch, "Follow one number of image 1: v[%d, %d, %d, %d] (image %d, head %d, "
               "token %d, entry %d) is qkv[%d, %d, %d·%d + %d·%d + %d] = "
               "qkv[%d, %d, %d]: %.4f and %.4f.",
           bb, h, n, d, bb, h, n, d, bb, n, part, D, h, DH, d, bb, n, part * D + h * DH + d,
           from_v, from_qkv);

    heads_split(b->split_3h, b->qkv, BATCH, N, 3 * H, DH); // the B = 1 shortcut, (2, 3H, N, DH)
    float wrong = ch_max_diff(ch, "split_3h_q_vs_q_max_diff", b->split_3h, q, block);
    float is_k = ch_max_diff(ch, "split_3h_q_image_1_vs_k_image_0_max_diff",
                             b->split_3h + block / 2, k, block / 2);
    ch_say(ch, "Splitting 3D into 3H heads, section 2's shortcut, gives (B, 3H, N, Dh) "
               "instead: image 0's Q, K and V heads, then image 1's. Its first B·H "
               "heads, where Q should be, differ from the real Q by up to %.4f: the "
               "second half of them is image 0's K (largest difference %g), not "
               "image 1's Q.", wrong, is_k);
}

static void batch_padding(Chapter *ch, const Layer *L, Batch *b) {
    ch_say(ch, "Sequence 1's last token is padding: none of sequence 1's queries may "
               "look at it, in either head, while sequence 0 has nothing to hide. One "
               "(N, N) mask shared by the batch cannot say that. A key-padding mask has "
               "one row per sequence, shape (B, N), and attention adds row b to every "
               "query row of every head of sequence b. attention_mask_key_padding() "
               "builds it from the lengths %d and %d, and mha_forward() takes it in "
               "its options:", LENGTHS[0], LENGTHS[1]);
    MhaRun run;
    mha_run_init(&run, BATCH, N);
    // [key_padding]
    attention_mask_key_padding(b->pad, LENGTHS, BATCH, N); // (2, N): 0 for a token, -inf after
    AttentionOptions opt = {.key_padding_mask = b->pad};
    mha_forward(b->out, b->x, &L->w, &opt, &run.scratch, BATCH, N, D, H, &run.tracer);
    // [key_padding]
    Tensor tp = tensor_view(b->pad, 2, BATCH, N);
    ch_show(ch, "key_padding_mask", &tp);
    const Tensor *probs = trace_find(&run.rec, "probs"); // (2, H, N, N)
    ch_pin(ch, "batch_probs", probs);
    Tensor out = tensor_view(b->out, 3, BATCH, N, D);
    ch_pin(ch, "batch_out", &out);
    ch_say(ch, "The attention probabilities of sequence 1, both heads:");
    show4(ch, "batch_probs_seq_1", probs->data + (size_t)H * N * N, 1, H, N, N);

    // the same sequences alone: sequence 0 is section 5's, sequence 1 without its padding
    MhaRun alone;
    mha_run_init(&alone, 1, LENGTHS[1]);
    float out_1[N * D];
    mha_forward(out_1, b->x + N * D, &L->w, NULL, &alone.scratch, 1, LENGTHS[1], D, H, NULL);
    mha_run_free(&alone);
    float p0 = ch_max_diff(ch, "batch_seq_0_probs_vs_alone_max_diff", probs->data, L->probs,
                           (size_t)H * N * N);
    float d0 = ch_max_diff(ch, "batch_seq_0_vs_alone_max_diff", b->out, L->out, N * D);
    float d1 = ch_max_diff(ch, "batch_seq_1_vs_alone_max_diff", b->out + N * D, out_1,
                           (size_t)LENGTHS[1] * D);
    ch_say(ch, "In both heads the column of the padding key, %d, is exactly 0, and "
               "every row still sums to 1. Sequence 0's row of the mask is all zeros: "
               "its probabilities and its output differ from sections 4 and 5, where "
               "it was alone, by %g and %g. And the outputs of sequence 1's %d real "
               "tokens differ from running those %d tokens alone (N = %d, no mask) by "
               "%g. The padding costs work but changes nothing. Its own row is still "
               "computed, a query that looks at the real tokens like any other; "
               "whoever reads the batch ignores it.",
           LENGTHS[1], p0, d0, LENGTHS[1], LENGTHS[1], LENGTHS[1], d1);
    mha_run_free(&run);
}

static void heads_must_divide(Chapter *ch) {
    if (!ch_section(ch, "8. D must be divisible by H")) return;
    VitConfig cfg;
    VitError err;
    vit_config_for_arch(&cfg, "vit-base", NULL);
    int dh = (int)ch_value(ch, "vit_base_head_width", (float)(cfg.dim / cfg.heads));
    ch_say(ch, "Every head gets D/H features, so H must divide D. ViT-Base splits "
               "%d into %d heads of %d. Ask for 5 heads and there is no whole number "
               "of features per head; lib's vit_config_check() refuses the "
               "configuration and says why:", cfg.dim, cfg.heads, dh);
    // [divisible]
    cfg.heads = 5;                                     // 768 / 5 = 153.6
    VitStatus status = vit_config_check(&cfg, &err);   // VIT_ERR_INPUT, message in err
    // [divisible]
    ch_line(ch, "  status %d: %s", (int)ch_value(ch, "bad_heads_status", (float)status),
            err.msg);
    ch_line(ch, "%s", "");
    ch_say(ch, "vit_build() and vit_build_random() run this check before anything "
               "else, so a bad configuration stops with that message (exit code 1 in "
               "the tools) instead of silently dropping features. PyTorch's "
               "nn.MultiheadAttention refuses it the same way.");
}

static void whats_next(Chapter *ch) {
    if (!ch_section(ch, "What's next")) return;
    ch_say(ch, "Attention mixes tokens, but where do the tokens of an image come "
               "from? Chapter 06 cuts a 224 × 224 picture into 196 patches of "
               "16 × 16 pixels and turns each into one token of width 768.");
}

void chapter05_run(Chapter *ch) {
    ch_title(ch, "05", "Multi-head attention");
    ch_say(ch, "One head computes one attention pattern. A transformer runs H of them "
               "side by side, each on a slice of width Dh = D/H, for the price of "
               "one: the projections are the same size as for a single head of "
               "width D. Here D = %d, H = %d, Dh = %d, with %d tokens and one image "
               "(B = %d; section 7 takes two). The code follows timm's "
               "Attention.forward line by line.",
           D, H, DH, N, B);
    Layer L;
    fused_projection(ch, &L);
    split_heads(ch, &L);
    fused_equals_separate(ch, &L);
    heads_attend(ch, &L);
    merge_and_project(ch, &L);
    whole_layer(ch, &L);
    Batch batch;
    batch_permute(ch, &L, &batch);
    batch_padding(ch, &L, &batch);
    heads_must_divide(ch);
    whats_next(ch);
}

#ifndef CHAPTER_NO_MAIN
int main(int argc, char **argv) {
    return chapter_main(argc, argv, chapter05_run,
                        "Chapter 05: multi-head attention as timm computes it.");
}
#endif
