/**
 * @file 07_tokens.c
 * @brief Chapter 07 · The [cls] token and position embeddings.
 *
 * After the patch embedding, ViT prepends one learnable token and adds a
 * learnable position vector to every token:
 * \f[ z_0 = [\,x_{cls};\ x_1;\ \ldots;\ x_P\,] + E_{pos},\qquad
 *     x_{cls} \in \mathbb{R}^{D},\ E_{pos} \in \mathbb{R}^{(P+1) \times D} . \f]
 * The chapter builds the (1, 197, 768) input of ViT-Base's first block, with
 * [cls] and \f$E_{pos}\f$ drawn as lib's vit_build_random() draws every
 * parameter (truncated normal, std 0.02; timm differs for [cls] and the patch
 * convolution, and the chapter says how), then
 * shows on a small example why the positions are needed: attention by itself
 * is permutation-equivariant, \f$ \mathrm{MHA}(\Pi X) = \Pi\,\mathrm{MHA}(X) \f$,
 * so without positions a shuffled image looks the same to the [cls] token.
 *
 * Every number printed is pinned by name and checked against PyTorch by
 * tests/test_ch07_tokens.c.
 *
 * Run: `build/chapters/07_tokens`
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
#include "base/util.h"

enum {
    P = 196,   // patches of a 224 × 224 image (chapter 06)
    N = P + 1, // tokens: [cls] + patches
    D = 768,   // width
    SAME_A = 5, SAME_B = 9, // two patches given identical content in section 2
};
static const uint64_t SEED = 7;       // patches, cls, pos (ViT-Base sizes)
static const float INIT_STD = 0.02f;  // cls and positions drawn as vit_build_random() draws
static const float INIT_CUT = 2.0f;   // every weight: truncated normal, std 0.02, cut at ±2
static const int PATCH_LEN = 3 * 16 * 16; // C·p·p inputs of ViT-Base's patch convolution

// The small example of sections 3 and 4: [cls] + 4 patches, width 6, 2 heads.
enum { SN = 5, SD = 6, SH = 2 };
static const uint64_t SMALL_SEED = 77; // x, W_qkv, b_qkv, W_proj, b_proj, pos
static const int SHUFFLE[SN] = {0, 3, 1, 4, 2}; // new row i holds old token SHUFFLE[i]

/* ------------------------------------------------------------ helpers */

static void show_matrix(Chapter *ch, const char *name, float *m, int rows, int cols) {
    Tensor t = tensor_view(m, 2, rows, cols);
    ch_show(ch, name, &t);
}

// [permute_rows]
// out row i = x row perm[i]: reorder the rows (tokens) of an (n, d) matrix.
static void permute_rows(float *out, const float *x, const int *perm, int n, int d) {
    for (int i = 0; i < n; i++) memcpy(&out[i * d], &x[perm[i] * d], sizeof(float) * d);
}
// [permute_rows]

/* ------------------------------------------------- ViT-Base's first input */

static void cls_token(Chapter *ch, float *tokens, const float *patches, const float *cls) {
    if (!ch_section(ch, "1. One more token: [cls]")) return;
    ch_say(ch, "Chapter 06 turned the image into %d patch tokens of width %d. ViT "
               "puts one extra token in front of them, the class token [cls]. It is "
               "not cut from the image: it is a vector of %d learned parameters, the "
               "same for every image. In every block it attends to all the patches "
               "like any other token, and after the last block the classifier reads "
               "its row and nothing else. It starts out knowing nothing, so "
               "everything it ends up holding, it gathered from the image.",
           P, D, D);
    // [prepend]
    // x = torch.cat((self.cls_token.expand(B, -1, -1), x), dim=1): (1, P, D) → (1, N, D)
    memcpy(tokens, cls, sizeof(float) * D);                // row 0: [cls]
    memcpy(tokens + D, patches, sizeof(float) * P * D);    // rows 1…P: the patches, in order
    // [prepend]
    int n = (int)ch_value(ch, "num_tokens", (float)N);
    ch_say(ch, "So the sequence grows from %d to %d tokens, (1, %d, %d) → (1, %d, %d). "
               "The first six numbers of rows 0 and 1, and of the [cls] token and "
               "patch 0 they came from:", P, n, P, D, n, D);
    float rows[4 * 6];
    for (int j = 0; j < 6; j++) {
        rows[0 * 6 + j] = tokens[0 * D + j];
        rows[1 * 6 + j] = tokens[1 * D + j];
        rows[2 * 6 + j] = cls[j];
        rows[3 * 6 + j] = patches[j];
    }
    show_matrix(ch, "rows_0_1_cls_patch0", rows, 4, 6);
    Tensor tc = tensor_view((float *)cls, 1, D);
    ch_say(ch, "The patches here are random stand-ins. The [cls] token is drawn as "
               "lib's vit_build_random() draws every parameter of a new model: from a "
               "normal distribution with standard deviation %.2f, truncated at ±%.0f "
               "(a hundred standard deviations out, so nothing is ever cut), one rule "
               "for the patch projection, [cls], the position table and every linear "
               "layer, with biases 0 and LayerNorms at scale 1 and shift 0. One rule "
               "keeps a new model easy to rebuild: tools/vitrng.py replays the same "
               "PCG32 streams in Python, so PyTorch can check any model lib draws. "
               "These %d numbers have standard deviation %.4f.",
           INIT_STD, INIT_CUT, D, ch_value(ch, "cls_std", (float)tensor_stats(&tc).std));
    ch_say(ch, "timm initialises a new ViT the same way for the position table and "
               "the linear layers, but not for two tensors: its cls_token starts "
               "almost at zero (normal, std 1e-6), and its patch convolution keeps "
               "PyTorch's default, weights and bias uniform in ±1/√(C·p·p) = ±%.4f "
               "for ViT-Base.", ch_value(ch, "conv_default_bound", 1.0f / sqrtf((float)PATCH_LEN)));
}

static void positions(Chapter *ch, float *embed, const float *tokens, const float *pos) {
    if (!ch_section(ch, "2. Where each token came from")) return;
    char count[VIT_NUM_BUF];
    Tensor tp = tensor_view((float *)pos, 2, N, D);
    ch_say(ch, "The patch tokens carry what a patch looks like, but not where it was. "
               "ViT adds a learned position vector to each token: a table E_pos of "
               "shape (%d, %d), row 0 for [cls], row i for patch i - 1, %s parameters "
               "in all, drawn here like [cls] (standard deviation %.4f).",
           N, D, vit_thousands(count, (int64_t)ch_value(ch, "pos_params", (float)(N * D))),
           ch_value(ch, "pos_std", (float)tensor_stats(&tp).std));
    // [pos]
    ops_add(embed, tokens, pos, (size_t)N * D); // x = x + self.pos_embed, (1, N, D)
    // [pos]
    ch_say(ch, "Suppose patches %d and %d look exactly alike, two squares of clear "
               "sky. (The stand-ins were made that way: patch %d is a copy of patch "
               "%d.) Before the positions, their tokens %d and %d differ by %g; after, "
               "by up to %.4f, because they sit in different places.",
           SAME_A, SAME_B, SAME_B, SAME_A, SAME_A + 1, SAME_B + 1,
           ch_max_diff(ch, "same_patches_before", &tokens[(SAME_A + 1) * D],
                       &tokens[(SAME_B + 1) * D], D),
           ch_max_diff(ch, "same_patches_after", &embed[(SAME_A + 1) * D],
                       &embed[(SAME_B + 1) * D], D));
    Tensor t = tensor_view((float *)embed, 3, 1, N, D);
    TensorStats st = tensor_stats(&t);
    ch_say(ch, "This (1, %d, %d) tensor, mean %.4f and standard deviation %.4f, is "
               "what the first encoder block receives.", N, D,
           ch_value(ch, "embed_mean", (float)st.mean), ch_value(ch, "embed_std", (float)st.std));
    ch_say(ch, "Why must the position be added at all? Because attention cannot see "
               "order. The next two sections show it on a small example.");
}

/* ------------------------------------------------------- the symmetry */

// A small multi-head attention layer and its scratch memory.
typedef struct {
    float x[SN * SD];           // (SN, SD): [cls] + 4 patch tokens
    float pos[SN * SD];         // (SN, SD) position table
    float w_qkv[3 * SD * SD], b_qkv[3 * SD], w_proj[SD * SD], b_proj[SD];
    AttentionWeights w;
    float *scratch_mem;
    MhaScratch scratch;
} Small;

static void small_init(Small *s) {
    Rng rng;
    rng_seed(&rng, SMALL_SEED);
    rng_fill_normal(&rng, s->x, SN * SD, 0.0f, 1.0f);
    rng_fill_normal(&rng, s->w_qkv, 3 * SD * SD, 0.0f, 0.4f);
    rng_fill_normal(&rng, s->b_qkv, 3 * SD, 0.0f, 0.1f);
    rng_fill_normal(&rng, s->w_proj, SD * SD, 0.0f, 0.4f);
    rng_fill_normal(&rng, s->b_proj, SD, 0.0f, 0.1f);
    rng_fill_normal(&rng, s->pos, SN * SD, 0.0f, 1.0f);
    s->w = (AttentionWeights){
        .q_w = s->w_qkv, .k_w = s->w_qkv + SD * SD, .v_w = s->w_qkv + 2 * SD * SD,
        .q_b = s->b_qkv, .k_b = s->b_qkv + SD, .v_b = s->b_qkv + 2 * SD,
        .proj_w = s->w_proj, .proj_b = s->b_proj};
    s->scratch_mem = vit_malloc(sizeof(float) * mha_scratch_floats(1, SN, SD, SH));
    mha_scratch_carve(&s->scratch, s->scratch_mem, 1, SN, SD, SH);
}

// out (SN, SD) = multi-head attention of x (SN, SD), one image, no trace.
static void small_mha(Small *s, float *out, const float *x) {
    mha_forward(out, x, &s->w, NULL, &s->scratch, 1, SN, SD, SH, NULL);
}

static void equivariance(Chapter *ch, Small *s) {
    if (!ch_section(ch, "3. Attention alone cannot see order")) return;
    ch_say(ch, "Take %d tokens of width %d, [cls] and 4 patches, and a multi-head "
               "attention layer with %d heads (Chapter 05, random weights):", SN, SD, SH);
    show_matrix(ch, "x", s->x, SN, SD);
    float out[SN * SD], x_shuffled[SN * SD], out_shuffled[SN * SD], out_then_shuffled[SN * SD];
    small_mha(s, out, s->x);
    show_matrix(ch, "out", out, SN, SD);
    ch_say(ch, "Now shuffle the patches like a jigsaw, keeping [cls] first: the new "
               "order of the rows is %d, %d, %d, %d, %d. Run the same layer again:",
           SHUFFLE[0], SHUFFLE[1], SHUFFLE[2], SHUFFLE[3], SHUFFLE[4]);
    // [shuffle]
    permute_rows(x_shuffled, s->x, SHUFFLE, SN, SD);       // shuffle the input tokens
    small_mha(s, out_shuffled, x_shuffled);                // attention on the shuffled tokens
    permute_rows(out_then_shuffled, out, SHUFFLE, SN, SD); // shuffle the first output
    // [shuffle]
    show_matrix(ch, "out_shuffled", out_shuffled, SN, SD);
    float d = ch_max_diff(ch, "equivariance_max_diff", out_shuffled, out_then_shuffled,
                          SN * SD);
    ch_say(ch, "These are the rows of the first output, in the shuffled order: the "
               "largest difference from shuffling the first output is %.1g, rounding. "
               "Attention is permutation-equivariant: shuffle the input tokens and the "
               "output tokens come out shuffled the same way, and otherwise unchanged.", d);
    ch_say(ch, "The reason is in the formula. The projections act on each token "
               "alone. The scores compare contents, not places. Each output is a sum "
               "over all tokens, and a sum does not care about the order of its "
               "terms. Nothing anywhere looks at a token's index.");
    float d_cls = ch_max_diff(ch, "cls_change_without_pos", out_shuffled, out, SD);
    ch_say(ch, "Now look at row 0, the [cls] token, which did not move: its output "
               "changed by %.1g, rounding. Without positions, the [cls] token, and so "
               "the classifier, would give the same answer for an image and any "
               "jigsaw shuffle of its patches.", d_cls);
}

static void positions_break_symmetry(Chapter *ch, Small *s) {
    if (!ch_section(ch, "4. Positions break the symmetry")) return;
    ch_say(ch, "Add a position table (random here, learned in a real model) before "
               "attention. The positions belong to the places, not to the content: "
               "after shuffling, slot i still gets row i of the table.");
    show_matrix(ch, "pos", s->pos, SN, SD);
    float embed[SN * SD], out[SN * SD], x_shuffled[SN * SD], out_shuffled[SN * SD];
    float out_then_shuffled[SN * SD];
    // [with_pos]
    ops_add(embed, s->x, s->pos, SN * SD);                     // x + E_pos
    small_mha(s, out, embed);
    permute_rows(x_shuffled, s->x, SHUFFLE, SN, SD);
    ops_add(embed, x_shuffled, s->pos, SN * SD);               // shuffled x + the same E_pos
    small_mha(s, out_shuffled, embed);
    permute_rows(out_then_shuffled, out, SHUFFLE, SN, SD);
    // [with_pos]
    show_matrix(ch, "out_pos", out, SN, SD);
    show_matrix(ch, "out_pos_shuffled", out_shuffled, SN, SD);
    float d = ch_max_diff(ch, "with_pos_max_diff", out_shuffled, out_then_shuffled, SN * SD);
    float d_cls = ch_max_diff(ch, "cls_change_with_pos", out_shuffled, out, SD);
    ch_say(ch, "Now the shuffled output is no longer a shuffle of the first one "
               "(largest difference %.4f), and the [cls] token's output changed by up "
               "to %.4f. The model can tell an image from its jigsaw. In a trained "
               "ViT the learned table ends up encoding the 14 × 14 grid: positions "
               "that are close in the image get similar vectors.", d, d_cls);
}

static void whats_next(Chapter *ch) {
    if (!ch_section(ch, "What's next")) return;
    ch_say(ch, "The input is ready: %d tokens of width %d that know what they show and "
               "where. Chapter 08 builds the encoder block that ViT-Base applies to "
               "them twelve times: attention and a small MLP, each behind a "
               "LayerNorm and inside a residual connection.", N, D);
}

void chapter07_run(Chapter *ch) {
    ch_title(ch, "07", "The [cls] token and position embeddings");
    ch_say(ch, "Two small additions turn the patch tokens into the input of the "
               "transformer: a token that will speak for the whole image, and a "
               "position vector for every token. The second one matters more than it "
               "looks.");
    float *patches = vit_malloc(sizeof(float) * P * D);
    float *cls = vit_malloc(sizeof(float) * D);
    float *pos = vit_malloc(sizeof(float) * N * D);
    float *tokens = vit_malloc(sizeof(float) * N * D);
    float *embed = vit_malloc(sizeof(float) * N * D);
    // [draw]
    Rng rng;
    rng_seed(&rng, SEED);
    rng_fill_normal(&rng, patches, (size_t)P * D, 0.0f, 1.0f);
    memcpy(&patches[SAME_B * D], &patches[SAME_A * D], sizeof(float) * D); // a repeated patch
    rng_fill_trunc_normal(&rng, cls, D, 0.0f, INIT_STD, -INIT_CUT, INIT_CUT);
    rng_fill_trunc_normal(&rng, pos, (size_t)N * D, 0.0f, INIT_STD, -INIT_CUT, INIT_CUT);
    // [draw]
    cls_token(ch, tokens, patches, cls);
    positions(ch, embed, tokens, pos);

    Small s;
    small_init(&s);
    equivariance(ch, &s);
    positions_break_symmetry(ch, &s);
    whats_next(ch);
    free(s.scratch_mem);
    free(patches);
    free(cls);
    free(pos);
    free(tokens);
    free(embed);
}

#ifndef CHAPTER_NO_MAIN
int main(int argc, char **argv) {
    return chapter_main(argc, argv, chapter07_run,
                        "Chapter 07: the [cls] token, position embeddings, and why attention "
                        "needs them.");
}
#endif
