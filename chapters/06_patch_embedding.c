/**
 * @file 06_patch_embedding.c
 * @brief Chapter 06 · Patch embedding: an image becomes 196 tokens.
 *
 * A transformer reads a sequence of vectors. ViT makes one from an image by
 * cutting it into \f$P = (S/p)^2\f$ square patches and projecting each
 * flattened patch with one shared linear layer:
 * \f[ x_i = W\,\mathrm{vec}(\text{patch}_i) + b,\qquad W \in \mathbb{R}^{D \times C p^2},
 *     \quad i = 1 \ldots P . \f]
 * For ViT-Base/16, a 224 × 224 RGB image gives 196 patches of 16 × 16 × 3 =
 * 768 numbers, each projected to D = 768. The chapter shows which pixels each
 * patch vector holds (channel-major), and that unfold + linear is exactly
 * the stride-16 convolution timm uses.
 *
 * Every number printed is pinned by name and checked against PyTorch by
 * tests/test_ch06_patch_embedding.c (timings are printed but not pinned).
 *
 * Run: `build/chapters/06_patch_embedding`
 */
#include <stdlib.h>

#include "teach/chapter.h"
#include "chapters.h"
#include "model/patch.h"
#include "base/rng.h"
#include "base/tensor.h"
#include "base/util.h"

enum {
    C = 3,              // colour channels
    S = 224,            // image side in pixels
    PATCH = 16,         // patch side in pixels
    GRID = S / PATCH,   // patches per side: 14
    P = GRID * GRID,    // patches: 196
    PATCH_LEN = C * PATCH * PATCH, // numbers per patch, C·p·p: 768
    D = 768,            // embedding width (ViT-Base)
    CHECKER = 32,       // side of the blue checkerboard squares
    ROUNDS = 5,         // Section 4: timed rounds of both ways, interleaved
};
static const uint64_t WEIGHT_SEED = 6;  // W then b
static const float WEIGHT_RANGE = 0.05f; // W and b uniform in [-0.05, 0.05)

/* ------------------------------------------------------------ helpers */

// [picture]
// The test picture, already normalised to [-1, 1] as a model's input is:
// red grows left to right, green top to bottom, blue is a checkerboard.
// img is (C, S, S), channel-major like PyTorch.
static void make_picture(float *img) {
    for (int y = 0; y < S; y++)
        for (int x = 0; x < S; x++) {
            img[(0 * S + y) * S + x] = 2.0f * x / (S - 1) - 1.0f;
            img[(1 * S + y) * S + x] = 2.0f * y / (S - 1) - 1.0f;
            img[(2 * S + y) * S + x] = (x / CHECKER + y / CHECKER) % 2 ? 0.5f : -0.5f;
        }
}
// [picture]

// [entry]
// The pixel (channel, row, column) that entry k of patch i holds.
static void pixel_of_entry(int *c, int *y, int *x, int i, int k) {
    int gy = i / GRID, gx = i % GRID; // the patch's place in the 14 × 14 grid
    *c = k / (PATCH * PATCH);         // channel-major: all of red, then green, then blue
    *y = gy * PATCH + (k % (PATCH * PATCH)) / PATCH;
    *x = gx * PATCH + k % PATCH;
}
// [entry]

/* ----------------------------------------------------------- sections */

typedef struct {
    float *img;     // (1, C, S, S)
    float *patches; // (1, P, C·p·p)
    float *w;       // (D, C, PATCH, PATCH), read as (D, C·p·p)
    float *b;       // (D)
    float *embed;   // (1, P, D) by unfold + linear
    float *conv;    // (1, P, D) by the naive convolution
} Work;

static void the_picture(Chapter *ch, Work *w) {
    if (!ch_section(ch, "1. An image is a (3, 224, 224) tensor")) return;
    make_picture(w->img);
    char count[VIT_NUM_BUF];
    ch_say(ch, "A colour image of %d × %d pixels is %s numbers: three channels (red, "
               "green, blue), each a %d × %d grid, stored channel after channel. The "
               "chapters work on generated pictures; to run a real photo through "
               "pretrained weights, use build/vit classify (the README's \"Real "
               "weights, real photos\"). Here the pixels tell where they are. After "
               "the usual normalisation to [-1, 1], red "
               "grows from -1 at the left edge to 1 at the right, green from -1 at "
               "the top to 1 at the bottom, and blue is a checkerboard of %d-pixel "
               "squares, -0.5 and 0.5.",
           S, S, vit_thousands(count, (int64_t)ch_value(ch, "image_numbers", (float)(C * S * S))),
           S, S, CHECKER);
    const struct {
        int c, y, x;
    } at[] = {{0, 0, 0}, {0, 0, S - 1}, {1, 0, 0}, {1, S - 1, 0}, {2, 0, 0}, {2, 0, CHECKER}};
    enum { N_AT = sizeof at / sizeof at[0] };
    float values[N_AT];
    ch_line(ch, "    channel  row  column   value");
    for (int i = 0; i < N_AT; i++) {
        values[i] = w->img[(at[i].c * S + at[i].y) * S + at[i].x];
        ch_line(ch, "    %7d  %3d  %6d  %6.2f", at[i].c, at[i].y, at[i].x, values[i]);
    }
    ch_line(ch, "%s", "");
    Tensor t = tensor_view(values, 1, N_AT);
    ch_pin(ch, "pixels", &t);
}

static void cutting(Chapter *ch, Work *w) {
    if (!ch_section(ch, "2. Cutting it into patches")) return;
    int grid = (int)ch_value(ch, "grid", (float)GRID);
    int n = (int)ch_value(ch, "num_patches", (float)P);
    int k = (int)ch_value(ch, "patch_numbers", (float)PATCH_LEN);
    ch_say(ch, "With %d × %d patches, %d / %d = %d fit along each side, so the image "
               "becomes %d × %d = %d patches. Each holds %d × %d pixels × %d channels "
               "= %d numbers. patch_unfold() cuts and flattens them all, giving a "
               "(1, %d, %d) tensor: a sequence of %d vectors, which is what a "
               "transformer reads.",
           PATCH, PATCH, S, PATCH, grid, grid, grid, n, PATCH, PATCH, C, k, n, k, n);
    // [unfold]
    patch_unfold(w->patches, w->img, 1, C, S, PATCH); // (1, C, S, S) → (1, P, C·p·p)
    // [unfold]
    ch_say(ch, "Patches are numbered row by row, like reading a page: patch i sits at "
               "grid row i / %d and column i %% %d, so patch 0 is the top-left corner, "
               "patch %d the top-right and patch %d the bottom-right.",
           GRID, GRID, GRID - 1, P - 1);

    int which = GRID + 1; // patch 15: grid row 1, column 1
    ch_say(ch, "Inside a patch vector the order is channel-major, as in the weight of "
               "a convolution (D, C, p, p): first all %d red values, row by row, then "
               "the %d green ones, then the %d blue ones. Entry k of a patch is "
               "channel k / %d, row (k %% %d) / %d and column k %% %d within the "
               "patch. Here is patch %d (grid row 1, column 1), which covers rows "
               "%d…%d and columns %d…%d of the image:",
           PATCH * PATCH, PATCH * PATCH, PATCH * PATCH, PATCH * PATCH, PATCH * PATCH, PATCH,
           PATCH, which, PATCH, 2 * PATCH - 1, PATCH, 2 * PATCH - 1);
    const int entries[] = {0, 1, 15, 16, 255, 256, 511, 512, 767};
    enum { N_E = sizeof entries / sizeof entries[0] };
    float where[N_E * 3], from_patch[N_E], from_image[N_E];
    ch_line(ch, "    entry   channel  row  column   patch value   image value");
    for (int e = 0; e < N_E; e++) {
        int c, y, x;
        pixel_of_entry(&c, &y, &x, which, entries[e]);
        where[3 * e] = (float)c, where[3 * e + 1] = (float)y, where[3 * e + 2] = (float)x;
        from_patch[e] = w->patches[(size_t)which * PATCH_LEN + entries[e]];
        from_image[e] = w->img[((size_t)c * S + y) * S + x];
        ch_line(ch, "    %5d   %7d  %3d  %6d   %11.4f   %11.4f", entries[e], c, y, x,
                from_patch[e], from_image[e]);
    }
    ch_line(ch, "%s", "");
    Tensor tw = tensor_view(where, 2, N_E, 3), tp = tensor_view(from_patch, 1, N_E);
    Tensor ti = tensor_view(from_image, 1, N_E);
    ch_pin(ch, "patch_15_pixels", &tw);
    ch_pin(ch, "patch_15_entries", &tp);
    ch_pin(ch, "image_at_entries", &ti);

    float *back = vit_malloc(sizeof(float) * C * S * S);
    // [fold]
    patch_fold(back, w->patches, 1, C, S, PATCH); // the inverse: patches back into an image
    // [fold]
    Tensor a = tensor_view(back, 3, C, S, S), b = tensor_view(w->img, 3, C, S, S);
    ch_say(ch, "Nothing is lost or repeated: patch_fold() puts the 196 vectors back "
               "into an image, and it differs from the original by %g.",
           ch_value(ch, "fold_unfold_max_diff", tensor_max_abs_diff(&a, &b)));
    free(back);
}

static void projecting(Chapter *ch, Work *w) {
    if (!ch_section(ch, "3. One linear layer for every patch")) return;
    char count[VIT_NUM_BUF];
    ch_say(ch, "Each patch vector goes through the same linear layer, W of shape "
               "(%d, %d) and a bias of %d: %d × %d + %d = %s parameters shared by all "
               "196 patches (random here, uniform in [-%.2f, %.2f); learned in a "
               "trained model). It is one matrix product, (196, 768) · (768, 768)ᵀ.",
           D, PATCH_LEN, D, D, PATCH_LEN, D,
           vit_thousands(count, (int64_t)ch_value(ch, "params", (float)(D * PATCH_LEN + D))),
           WEIGHT_RANGE, WEIGHT_RANGE);
    Rng rng;
    rng_seed(&rng, WEIGHT_SEED);
    rng_fill_uniform(&rng, w->w, (size_t)D * PATCH_LEN, -WEIGHT_RANGE, WEIGHT_RANGE);
    rng_fill_uniform(&rng, w->b, D, -WEIGHT_RANGE, WEIGHT_RANGE);
    // [embed]
    // x = self.patch_embed(x): unfold, then (1·P, C·p·p) · (D, C·p·p)ᵀ + b → (1, P, D)
    patch_embed(w->embed, w->patches, w->img, w->w, w->b, 1, C, S, PATCH, D);
    // [embed]
    float flops = ch_value(ch, "flops", 2.0f * P * PATCH_LEN * D + (float)P * D);
    ch_say(ch, "That costs 2 · %d · %d · %d + %d · %d = %.1f million floating-point "
               "operations (a multiply and an add per weight per patch, plus the "
               "bias). The result is one token of width %d per patch. The first six "
               "numbers of the tokens of patches 0, 15 and 195:",
           P, PATCH_LEN, D, P, D, flops / 1e6f, D);
    float rows[3 * 6];
    const int pick[3] = {0, GRID + 1, P - 1};
    for (int r = 0; r < 3; r++)
        for (int j = 0; j < 6; j++) rows[r * 6 + j] = w->embed[(size_t)pick[r] * D + j];
    Tensor t = tensor_view(rows, 2, 3, 6);
    ch_show(ch, "patch_tokens", &t);
    Tensor all = tensor_view(w->embed, 3, 1, P, D);
    TensorStats st = tensor_stats(&all);
    ch_say(ch, "Over all %d × %d numbers: mean %.4f, standard deviation %.4f. With "
               "random weights they mean nothing yet; in a trained ViT, W picks out "
               "edges, colours and textures (Chapter 11 trains a ViT).",
           P, D, ch_value(ch, "patch_embed_mean", (float)st.mean),
           ch_value(ch, "patch_embed_std", (float)st.std));
}

// Both ways of computing the layer, timed: once each untimed (memory touched,
// threads started), then ROUNDS rounds of one of each, in turn.
// [time_both]
static void time_both(Work *w, double linear[ROUNDS], double conv[ROUNDS]) {
    patch_embed(w->embed, w->patches, w->img, w->w, w->b, 1, C, S, PATCH, D);
    patch_embed_conv_naive(w->conv, w->img, w->w, w->b, 1, C, S, PATCH, D);
    for (int r = 0; r < ROUNDS; r++) {
        double t0 = vit_now();
        patch_embed(w->embed, w->patches, w->img, w->w, w->b, 1, C, S, PATCH, D);
        linear[r] = vit_now() - t0;
        t0 = vit_now();
        patch_embed_conv_naive(w->conv, w->img, w->w, w->b, 1, C, S, PATCH, D);
        conv[r] = vit_now() - t0;
    }
}
// [time_both]

static void convolution(Chapter *ch, Work *w) {
    if (!ch_section(ch, "4. The same thing as a convolution")) return;
    ch_say(ch, "timm writes the patch embedding as a convolution, "
               "nn.Conv2d(3, %d, kernel_size=%d, stride=%d), followed by "
               "flatten(2).transpose(1, 2). A convolution slides a %d × %d × %d filter "
               "over the image and takes a dot product at each stop; with a stride as "
               "large as the filter, the stops never overlap and land exactly on the "
               "%d patches. Output channel o uses filter o, which is row o of W. So the "
               "convolution computes the same dot products as section 3, in a "
               "different order. lib keeps the textbook loop for comparison:",
           D, PATCH, PATCH, C, PATCH, PATCH, P);
    // [conv]
    // out[0, gy·14 + gx, o] = b[o] + Σ_c Σ_i Σ_j W[o, c, i, j] · img[0, c, 16·gy + i, 16·gx + j]
    patch_embed_conv_naive(w->conv, w->img, w->w, w->b, 1, C, S, PATCH, D);
    // [conv]
    Tensor a = tensor_view(w->embed, 3, 1, P, D), b = tensor_view(w->conv, 3, 1, P, D);
    ch_say(ch, "The two results differ by at most %.2g: only the rounding differs, "
               "because the loop adds up in double precision and in another order.",
           ch_value(ch, "conv_vs_unfold_max_diff", tensor_max_abs_diff(&a, &b)));
    double linear[ROUNDS], conv[ROUNDS], ratios[ROUNDS];
    time_both(w, linear, conv);
    for (int r = 0; r < ROUNDS; r++) ratios[r] = conv[r] / linear[r]; // unfold + linear's speed over the loop's
    ch_say(ch, "Do they take the same time? Each runs once untimed, then %d rounds of one "
               "of each, so that another program coming and going slows both alike; the "
               "median of each one's rounds, on this machine (your numbers will differ):",
           ROUNDS);
    ch_line(ch, "    unfold + linear (one matrix product)   %8.2f ms", 1e3 * speed_median(linear, ROUNDS));
    ch_line(ch, "    naive convolution loop                 %8.2f ms", 1e3 * speed_median(conv, ROUNDS));
    ch_line(ch, "%s", "");
    char sentence[512];
    const SpeedVerdict v = speed_compare(sentence, sizeof sentence, ratios, ROUNDS,
                                         "unfold + linear was", "the naive loop");
    ch_say(ch, "%s", sentence);
    if (v == SPEED_FASTER)
        ch_verdict(ch, "Rearranging the pixels first turns the whole layer into one large "
                   "matrix product, the operation computers are fastest at. That is why "
                   "lib implements the convolution as unfold + linear.");
    else
        ch_verdict(ch, "So this run does not show unfold + linear to be the faster here. lib "
                   "implements the convolution that way because it turns the whole layer "
                   "into one large matrix product, the operation matrix libraries are "
                   "built to make fast (Chapter 14 shows how); run the chapter again on a "
                   "quiet machine to see what it buys on this one.");
}

static void whats_next(Chapter *ch) {
    if (!ch_section(ch, "What's next")) return;
    ch_say(ch, "196 tokens, but two things are missing. Nothing says where in the "
               "image a token came from, and there is no token to speak for the "
               "whole image. Chapter 07 adds the [cls] token and the position "
               "embeddings, and shows why attention needs the positions.");
}

void chapter06_run(Chapter *ch) {
    ch_title(ch, "06", "Patch embedding");
    ch_say(ch, "Attention works on a sequence of vectors. Text comes as a sequence of "
               "words; an image does not. ViT's answer is blunt and effective: cut the "
               "image into squares and treat each square as a word.");
    Work w = {
        .img = vit_malloc(sizeof(float) * C * S * S),
        .patches = vit_malloc(sizeof(float) * P * PATCH_LEN),
        .w = vit_malloc(sizeof(float) * D * PATCH_LEN),
        .b = vit_malloc(sizeof(float) * D),
        .embed = vit_malloc(sizeof(float) * P * D),
        .conv = vit_malloc(sizeof(float) * P * D),
    };
    the_picture(ch, &w);
    cutting(ch, &w);
    projecting(ch, &w);
    convolution(ch, &w);
    whats_next(ch);
    free(w.img);
    free(w.patches);
    free(w.w);
    free(w.b);
    free(w.embed);
    free(w.conv);
}

#ifndef CHAPTER_NO_MAIN
int main(int argc, char **argv) {
    return chapter_main(argc, argv, chapter06_run,
                        "Chapter 06: patch embedding, unfold + linear = a stride-16 convolution.");
}
#endif
