/**
 * @file test_ch06_patch_embedding.c
 * @brief Chapter 06 against PyTorch, and the claims it makes about patch embedding.
 *
 * `build/tests/run ch06_patch_embedding` grades a student's own
 * patch_unfold(), patch_fold() and patch_embed() too: the claims below call
 * lib's versions (or whatever replaced them at link time).
 *
 * The two probes at the end are exercise 06's diagnosis: each runs the
 * function on the PyTorch case of tests/golden/patch_pieces.safetensors
 * (F.unfold and nn.Conv2d, tools/gen_golden_vit.py) and, when it fails,
 * compares the result with what each likely mistake gives (pixels flattened
 * channels-last, the grid transposed, W read transposed, …), naming the one
 * that matches with check_hint().
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../chapters/chapters.h"
#include "check.h"
#include "hints.h"
#include "model/patch.h"
#include "base/rng.h"

// Small sizes that still have several patches, channels and images.
enum {
    B = 2, C = 3, S = 12, PATCH = 4, D = 5,
    GRID = S / PATCH, P = GRID * GRID, PATCH_LEN = C * PATCH * PATCH, // C·p·p
};

static void random_fill(float *x, size_t n, uint64_t seed) {
    Rng rng;
    rng_seed(&rng, seed);
    rng_fill_normal(&rng, x, n, 0.0f, 1.0f);
}

static void test_chapter_matches_pytorch(void) {
    check_chapter_against_golden(chapter06_run, "ch06_patch_embedding.safetensors");
}

static void test_unfold_layout_is_channel_major(void) {
    // patches[b, gy·GRID + gx, (c·p + i)·p + j] = img[b, c, gy·p + i, gx·p + j]
    float img[B * C * S * S], patches[B * P * PATCH_LEN];
    random_fill(img, sizeof img / sizeof *img, 61);
    patch_unfold(patches, img, B, C, S, PATCH);
    for (int b = 0; b < B; b++)
        for (int gy = 0; gy < GRID; gy++)
            for (int gx = 0; gx < GRID; gx++)
                for (int c = 0; c < C; c++)
                    for (int i = 0; i < PATCH; i++)
                        for (int j = 0; j < PATCH; j++)
                            CU_ASSERT_EQUAL(patches[(b * P + gy * GRID + gx) * PATCH_LEN +
                                                    (c * PATCH + i) * PATCH + j],
                                            img[((b * C + c) * S + gy * PATCH + i) * S +
                                                gx * PATCH + j]);
}

static void test_fold_inverts_unfold(void) {
    float img[B * C * S * S], patches[B * P * PATCH_LEN], back[B * C * S * S];
    random_fill(img, sizeof img / sizeof *img, 62);
    patch_unfold(patches, img, B, C, S, PATCH);
    patch_fold(back, patches, B, C, S, PATCH);
    CU_ASSERT_EQUAL(memcmp(back, img, sizeof img), 0);
}

static void test_embed_equals_convolution(void) {
    float img[B * C * S * S], w[D * PATCH_LEN], bias[D], patches[B * P * PATCH_LEN];
    float embed[B * P * D], conv[B * P * D];
    random_fill(img, sizeof img / sizeof *img, 63);
    random_fill(w, sizeof w / sizeof *w, 64);
    random_fill(bias, D, 65);
    // NaN before each pass: an element a pass never writes fails, not the last pass's number
    check_poison(embed, B * P * D), check_poison(conv, B * P * D);
    patch_embed(embed, patches, img, w, bias, B, C, S, PATCH, D);
    patch_embed_conv_naive(conv, img, w, bias, B, C, S, PATCH, D);
    Tensor a = tensor_view(embed, 3, B, P, D), e = tensor_view(conv, 3, B, P, D);
    assert_tensor_close(&a, &e, 1e-4f, 1e-5f, "patch_embed vs conv");
    check_poison(embed, B * P * D), check_poison(conv, B * P * D);
    patch_embed(embed, patches, img, w, NULL, B, C, S, PATCH, D); // no bias
    patch_embed_conv_naive(conv, img, w, NULL, B, C, S, PATCH, D);
    assert_tensor_close(&a, &e, 1e-4f, 1e-5f, "patch_embed vs conv, no bias");
}

static void test_one_patch_changes_one_token(void) {
    // the patches do not overlap: changing one pixel changes exactly one token
    float img[B * C * S * S], w[D * PATCH_LEN], patches[B * P * PATCH_LEN];
    float before[B * P * D], after[B * P * D];
    random_fill(img, sizeof img / sizeof *img, 66);
    random_fill(w, sizeof w / sizeof *w, 67);
    patch_embed(before, patches, img, w, NULL, B, C, S, PATCH, D);
    int y = PATCH + 1, x = 2 * PATCH + 3; // inside patch (1, 2) of image 1, channel 2
    img[((1 * C + 2) * S + y) * S + x] += 1.0f;
    patch_embed(after, patches, img, w, NULL, B, C, S, PATCH, D);
    int changed = 1 * P + 1 * GRID + 2;
    for (int t = 0; t < B * P; t++) {
        bool same = memcmp(&before[t * D], &after[t * D], D * sizeof(float)) == 0;
        CU_ASSERT_EQUAL(same, t != changed);
    }
}

/* -------------------------------------------------------------- the probes */

// One likely mistake: its hint, and the tensor it would have produced.
typedef struct {
    const char *hint;
    Tensor t;
} Suspect;

// After a failed check: a hint for every suspect that @p got matches; how many did.
static int name_suspects(const Tensor *got, Suspect *s, int n, float atol, float rtol) {
    int found = 0;
    for (int i = 0; i < n; i++) {
        if (tensor_near(got, &s[i].t, atol, rtol)) check_hint("%s", s[i].hint), found++;
        tensor_free(&s[i].t);
    }
    return found;
}

// A hint when @p got is all zeros: the skeleton's placeholder is still there. True if so.
static bool nothing_yet(const Tensor *got, const char *function) {
    if (!hint_all_zero(got->data, got->numel)) return false;
    check_hint("%s wrote only zeros: is the exercise's placeholder still there?", function);
    return true;
}

static Tensor pieces(const char *name) { return golden_tensor("patch_pieces.safetensors", name); }

// The three orders patch_unfold() fixes, each of which can be got wrong on its own.
enum {
    CHANNELS_LAST = 1,    // entry (i·p + j)·C + c: pixel by pixel, as an (S, S, C) image stores them
    GRID_TRANSPOSED = 2,  // patch gx·grid + gy: the grid read column by column
    PATCH_TRANSPOSED = 4, // entry (c·p + j)·p + i: rows and columns swapped inside the patch
    ORDERS = 8,           // every combination of the three
};
static const char *const ORDER_HINT[3] = {
    "each patch is flattened channels-last (p, p, C), pixel by pixel as an (S, S, C) image "
    "stores it; F.unfold and the conv weight (D, C, p, p) are channel-major (C, p, p): all of "
    "the patch's channel 0 first, entry (c*p + i)*p + j",
    "the patch grid is transposed: patch index = row * (S/p) + column, row by row like a page "
    "(timm's flatten(2)); yours numbers the patches column by column",
    "rows and columns are swapped inside each patch: entry (c*p + i)*p + j holds row i, "
    "column j of the patch",
};

// patch_unfold() with the given mistakes (0: none), written out pixel by pixel.
static void unfold_with(float *patches, const float *img, int nb, int nc, int side, int p,
                        int mistakes) {
    const int grid = side / p, np = grid * grid, k = nc * p * p; // grid, P, C·p·p
    for (int b = 0; b < nb; b++)
        for (int gy = 0; gy < grid; gy++)
            for (int gx = 0; gx < grid; gx++)
                for (int c = 0; c < nc; c++)
                    for (int i = 0; i < p; i++)
                        for (int j = 0; j < p; j++) {
                            int patch = mistakes & GRID_TRANSPOSED ? gx * grid + gy : gy * grid + gx;
                            int r = i, q = j; // where in the patch the pixel is written
                            if (mistakes & PATCH_TRANSPOSED) r = j, q = i;
                            int entry = mistakes & CHANNELS_LAST ? (r * p + q) * nc + c
                                                                 : (c * p + r) * p + q;
                            patches[((size_t)b * np + patch) * k + entry] =
                                img[(((size_t)b * nc + c) * side + gy * p + i) * side + gx * p + j];
                        }
}

static void test_probe_unfold(void) {
    // the PyTorch case: 2 images (3, 12, 12) in 4 × 4 patches; F.unfold(img, 4, stride=4).transpose(1, 2)
    Tensor img = pieces("img"), w = pieces("w"), want = pieces("patches");
    const int nb = img.shape[0], nc = img.shape[1], side = img.shape[2], p = w.shape[2];
    const int np = want.shape[1], k = want.shape[2]; // P, C·p·p
    Tensor got = tensor_new(3, nb, np, k), maybe = tensor_new(3, nb, np, k);
    patch_unfold(got.data, img.data, nb, nc, side, p);
    if (!assert_tensor_close(&got, &want, 0.0f, 0.0f,
                             "patch_unfold vs F.unfold (patches are copies: exact)")) {
        bool named = nothing_yet(&got, "patch_unfold");
        for (int m = 1; m < ORDERS && !named; m++) { // every combination of the three mistakes
            unfold_with(maybe.data, img.data, nb, nc, side, p, m);
            if (!tensor_near(&got, &maybe, 0.0f, 0.0f)) continue;
            for (int f = 0; f < 3; f++)
                if (m & (1 << f)) check_hint("%s", ORDER_HINT[f]);
            named = true;
        }
        // every image cut from image 0: the image's offset b·C·S·S forgotten
        for (int b = 0; b < nb; b++)
            unfold_with(maybe.data + (size_t)b * np * k, img.data, 1, nc, side, p, 0);
        if (!named && tensor_near(&got, &maybe, 0.0f, 0.0f)) {
            check_hint("every image gets image 0's patches: image b's pixels start at "
                       "img + b*C*S*S, its patches at patches + b*P*C*p*p");
            named = true;
        }
        if (!named)
            check_hint("patch i holds the pixels of grid row i / (S/p), column i %% (S/p): "
                       "patches[b, i, (c*p + y)*p + x] = img[b, c, (i / (S/p))*p + y, "
                       "(i %% (S/p))*p + x]");
    }
    tensor_free(&img), tensor_free(&w), tensor_free(&want), tensor_free(&got), tensor_free(&maybe);
}

// out[b, t, o] = bias[o] + Σ_k w(o, k) · patches[b, t, k] in double, with w(o, k) read as
// (D, C·p·p) — or transposed, as a (C·p·p, D) matrix: w[k·D + o].
static void linear_with(float *out, const float *patches, const float *w, const float *bias,
                        int rows, int k, int d, bool transposed) {
    for (int r = 0; r < rows; r++)
        for (int o = 0; o < d; o++) {
            double sum = bias ? bias[o] : 0.0;
            for (int i = 0; i < k; i++)
                sum += (double)(transposed ? w[(size_t)i * d + o] : w[(size_t)o * k + i]) *
                       patches[(size_t)r * k + i];
            out[(size_t)r * d + o] = (float)sum;
        }
}

static void test_probe_embed(void) {
    // the PyTorch case: nn.Conv2d(3, 5, kernel_size=4, stride=4) on 2 images (3, 12, 12)
    Tensor img = pieces("img"), w = pieces("w"), bias = pieces("b"), want = pieces("embed");
    Tensor patches = pieces("patches");
    const int nb = img.shape[0], nc = img.shape[1], side = img.shape[2], p = w.shape[2];
    const int d = w.shape[0], np = want.shape[1], k = nc * p * p;
    Tensor got = tensor_new(3, nb, np, d), scratch = tensor_new(3, nb, np, k);
    patch_embed(got.data, scratch.data, img.data, w.data, bias.data, nb, nc, side, p, d);
    // 48-long float32 sums against float64: ~1e-7
    if (!assert_tensor_close(&got, &want, 1e-5f, 1e-4f,
                             "patch_embed vs nn.Conv2d(kernel_size=p, stride=p)") &&
        !nothing_yet(&got, "patch_embed")) {
        Tensor own = tensor_new(3, nb, np, d), wt = tensor_new(3, nb, np, d);
        Tensor nobias = tensor_new(3, nb, np, d), one = tensor_new(3, nb, np, d);
        Tensor sv = tensor_view(scratch.data, 3, nb, np, k);
        linear_with(own.data, scratch.data, w.data, bias.data, nb * np, k, d, false);
        linear_with(wt.data, patches.data, w.data, bias.data, nb * np, k, d, true);
        linear_with(nobias.data, patches.data, w.data, NULL, nb * np, k, d, false);
        linear_with(one.data, patches.data, w.data, bias.data, np, k, d, false); // image 0 only
        bool own_patches_wrong = !tensor_near(&sv, &patches, 0.0f, 0.0f);
        Suspect s[] = {
            {"W is read transposed: the conv weight (D, C, p, p) is an nn.Linear weight (D, "
             "C*p*p), out = patches * W^T + b: ops_linear(out, patches, w, b, B*P, C*p*p, D)", wt},
            {"the bias is missing: out = patches * W^T + b (b may be NULL: then there is none)",
             nobias},
            {"only image 0 is embedded: the linear layer runs over all B*P patches, "
             "(B*P, C*p*p) -> (B*P, D)", one},
        };
        int found = name_suspects(&got, s, 3, 1e-5f, 1e-4f);
        // is it the unfolding itself, or patch_embed() not calling it?
        Tensor unfolded = tensor_new(3, nb, np, k);
        patch_unfold(unfolded.data, img.data, nb, nc, side, p);
        const bool unfold_right = tensor_near(&unfolded, &patches, 0.0f, 0.0f);
        tensor_free(&unfolded);
        if (own_patches_wrong && tensor_near(&got, &own, 1e-5f, 1e-4f) && unfold_right)
            check_hint("the linear layer is right, but the patches it multiplies are not: "
                       "patch_embed() must unfold with patch_unfold() first, into the scratch "
                       "it then multiplies (patch_unfold() itself is right)");
        else if (own_patches_wrong && tensor_near(&got, &own, 1e-5f, 1e-4f))
            check_hint("the linear layer is right, but the patches it multiplies are not: "
                       "patch_embed() must unfold with patch_unfold() first, and "
                       "patch_unfold() is wrong (see its probe)");
        else if (!found)
            check_hint("patch_embed = patch_unfold into the scratch, then one linear layer: "
                       "out[n, t, o] = b[o] + sum_k W[o, k] * patches[n, t, k]");
        tensor_free(&own);
    }
    tensor_free(&img), tensor_free(&w), tensor_free(&bias), tensor_free(&want);
    tensor_free(&patches), tensor_free(&got), tensor_free(&scratch);
}

CU_TestInfo tests_ch06_patch_embedding[] = {
    {"chapter matches PyTorch golden", test_chapter_matches_pytorch},
    {"unfold layout is channel-major", test_unfold_layout_is_channel_major},
    {"fold inverts unfold", test_fold_inverts_unfold},
    {"unfold + linear equals the convolution", test_embed_equals_convolution},
    {"one patch changes one token", test_one_patch_changes_one_token},
    {"probe: patch_unfold's order of channels, pixels and patches", test_probe_unfold},
    {"probe: patch_embed is unfold, then x W^T + b", test_probe_embed},
    CU_TEST_INFO_NULL,
};
