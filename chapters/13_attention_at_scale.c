/**
 * @file 13_attention_at_scale.c
 * @brief Chapter 13 · Attention at scale: what the N × N matrix costs as
 *        images grow, two ways to compute exact attention without it, and two
 *        approximations that are cheaper still, and what they do to a model.
 *
 * A ViT-B/16 reads a 224-pixel image as N = 197 tokens; at 1024 pixels it is
 * 4097, and every head of every layer scores all N² pairs:
 * \f[ \mathrm{Attention}(Q,K,V) = \mathrm{softmax}\!\left(QK^\top/\sqrt{D_h}\right)V. \f]
 * The chapter measures that matrix's memory and time, then computes the same
 * output a chunk of queries at a time and with the online softmax
 * (online_softmax_block(), attention_online()), which never hold it, and
 * then two approximations: local-window attention (attention_local()) and
 * linear attention with φ(x) = elu(x) + 1 (attention_linear()), their errors,
 * their times, where the trained model of Chapter 11 really looks
 * (attention_by_distance()), and what each approximation does to it.
 *
 * Every number is pinned by name and checked by
 * tests/test_ch13_attention_at_scale.c against tools/gen_golden_ch13.py,
 * which recomputes each in PyTorch (float64); the times are printed, not
 * pinned: they are this machine's.
 *
 * Run: `build/chapters/13_attention_at_scale`
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "attention/attention.h"
#include "teach/chapter.h"
#include "chapters.h"
#include "train/dataset.h"
#include "gemm/gemm.h"
#include "io/labels.h"
#include "ops/ops.h"
#include "io/resample.h"
#include "base/rng.h"
#include "model/vit.h"
#include "explain/attention_distance.h"

enum {
    SIZES = 5,         // the image sizes of Section 1
    PATCH = 16,        // ViT-B/16's patch side
    WIDTH = 768,       // its D
    HEADS = 12,        // its H
    DH = 64,           // its Dh = D/H
    DEPTH = 12,        // its layers
    TRAINED_GRID = 14, // the position table is trained for 224 px: 14 × 14 patches
    QUERY_CHUNK = 64,  // Section 3: query rows per chunk
    KEY_BLOCK = 128,   // Section 4: keys per block of attention_online()
    RADIUS = 3,        // Section 5: a 7 × 7 window of patches
    POS_SEED = 1313,   // the position table
    MEASURE_BATCH = 100, // Section 7 runs the test images in batches of 100
    LOCAL_TIMES = 2,   // Section 7: a head is local when its 3 × 3 window keeps 2× uniform's share
};
// The chapter's two numbers a learner may change from the command line
// (build/chapters/13_attention_at_scale --help); the book's are the defaults.
// [knobs]
enum { KNOB_IMAGES, KNOB_SEED, KNOBS };
static ChapterKnob knobs[KNOBS] = {
    [KNOB_IMAGES] = {.name = "images", .meaning = "Section 7's first test images of Fashion-MNIST",
                     .value = 100, .min = MEASURE_BATCH, .max = 10000, .multiple = MEASURE_BATCH},
    [KNOB_SEED] = {.name = "seed", .meaning = "the seed of one head's q, k, v (Sections 2 to 6)",
                   .value = 13, .min = 0, .max = 2147483647},
};
// [knobs]
static int measured(void) { return knobs[KNOB_IMAGES].value; }
static const double NEAR_SHARE = 0.75; // Section 7: a mean distance below 3/4 of uniform's is near
static const int SIDE[SIZES] = {224, 384, 512, 768, 1024}; // image sides, in pixels
// Section 4's worked example: one row of scores, taken in blocks of 4, 4 and 2.
enum { ROW = 10, ROW_BLOCKS = 3 };
static const float ROW_SCORES[ROW] = {1.2f, -0.3f, 2.5f, 0.7f, 3.1f, 0.2f, -1.0f, 2.9f, 0.4f, 3.6f};
static const int ROW_BLOCK[ROW_BLOCKS] = {4, 4, 2};
static const char MODEL_FILE[] = "models/vit-fashion.safetensors"; // under data/

/** The ways of computing one head's attention that the chapter times. */
typedef enum {
    EXACT,   /**< the whole (N, N) matrix: scores, scale, softmax, times V */
    CHUNKED, /**< a chunk of 64 queries at a time, each row's scores whole */
    ONLINE,  /**< attention_online(): blocks of keys, the softmax online */
    LOCAL,   /**< attention_local(): a window of patches (an approximation) */
    LINEAR,  /**< attention_linear(): elu + 1 features (another function) */
    METHODS  /**< how many there are */
} Method;

/** What every section works on. */
typedef struct {
    int grid[SIZES], N[SIZES]; // patches per side and tokens, per image size
    float *q, *k, *v;          // (N_max, Dh) one head; size i uses the first N[i] rows
    float *exact[SIZES];       // (N, Dh) exact attention's output at each size
    float *scratch;            // (N_max, N_max) room for the scores
    float kept[SIZES];         // Section 2: exact attention's weight inside the local window
    double seconds[METHODS][SIZES];
} Work;

/* ------------------------------------------------------------- helpers */

static void pin_row(Chapter *ch, const char *name, const float *v, int n) {
    const Tensor t = tensor_view((float *)v, 1, n);
    ch_pin(ch, name, &t);
}

static double megabytes(double bytes) { return bytes / 1e6; }

// Columns a UTF-8 string takes on a terminal: its bytes but the continuation bytes.
static int columns(const char *s) {
    int n = 0;
    for (; *s; s++) n += ((unsigned char)*s & 0xc0) != 0x80;
    return n;
}

// ‖a − e‖ / ‖e‖ over n values, in double: how far an approximation lands.
// [relative_error]
static float relative_error(const float *a, const float *e, size_t n) {
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        const double d = (double)a[i] - e[i];
        num += d * d, den += (double)e[i] * e[i];
    }
    return (float)sqrt(num / den);
}
// [relative_error]

// Exact attention the textbook way, one head: the (N, N) scores in s, then softmax, then V.
// [attention_exact]
static void attention_exact(float *out, const float *q, const float *k, const float *v, int N,
                            float *s) {
    attention_scores(s, q, k, 1, N, DH);              // S = Q·Kᵀ, (N, N)
    attention_scale_mask(s, s, NULL, 1, 1, N, DH);    // × 1/√Dh
    softmax(s, s, N, N);                              // each row a distribution
    attention_context(out, s, v, 1, N, DH);           // P·V, (N, Dh)
}
// [attention_exact]

// [chunks]
// The same, QUERY_CHUNK query rows at a time: s holds (chunk, N) scores, never (N, N).
// Each row's softmax needs only that row, so chunking changes nothing but memory.
static void attention_query_chunks(float *out, const float *q, const float *k, const float *v,
                                   int N, int chunk, float *s) {
    const float scale_by = attention_scale(NULL, DH);
    for (int i0 = 0; i0 < N; i0 += chunk) {
        const int rows = i0 + chunk < N ? chunk : N - i0;
        matmul_bt(s, q + (size_t)i0 * DH, k, rows, DH, N); // (rows, N) = Q_c·Kᵀ
        ops_scale(s, s, scale_by, (size_t)rows * N);
        softmax(s, s, rows, N);
        matmul(out + (size_t)i0 * DH, s, v, rows, N, DH);  // (rows, Dh) = P_c·V
    }
}
// [chunks]

static void run_method(const Work *w, Method m, int i, float *out) {
    const int N = w->N[i], g = w->grid[i];
    switch (m) {
    case EXACT: attention_exact(out, w->q, w->k, w->v, N, w->scratch); break;
    case CHUNKED: attention_query_chunks(out, w->q, w->k, w->v, N, QUERY_CHUNK, w->scratch); break;
    case ONLINE: attention_online(out, w->q, w->k, w->v, NULL, 1, 1, N, DH, KEY_BLOCK); break;
    case LOCAL: attention_local(out, w->q, w->k, w->v, NULL, 1, 1, 1, g, g, DH, RADIUS); break;
    case LINEAR: attention_linear(out, w->q, w->k, w->v, NULL, 1, 1, N, DH); break;
    default: break;
    }
}

// Run method m at size i, best of a few runs at small N and one at large: seconds (not pinned).
// [timed]
static double timed(Work *w, Method m, int i, float *out) {
    const int runs = w->N[i] <= 1025 ? 3 : 1;
    double best = INFINITY;
    for (int r = 0; r < runs; r++) {
        const double t0 = vit_now();
        run_method(w, m, i, out);
        best = fmin(best, vit_now() - t0);
    }
    w->seconds[m][i] = best;
    return best;
}
// [timed]

static double ms(double seconds) { return 1e3 * seconds; }

/* ------------------------------------------------- 1. more tokens */

static void more_tokens(Chapter *ch, Work *w) {
    if (!ch_section(ch, "1. More pixels, more tokens")) return;
    ch_say(ch, "ViT-B/16 cuts an image into %d × %d patches. At %d pixels that is a "
               "%d × %d grid, %d patches, and with [cls] N = %d tokens. None of its weights "
               "depends on N but one: the position table, one row of %d numbers per token, "
               "trained for %d. To read a bigger image, timm resamples the table's %d × %d "
               "grid of rows to the new grid (resample_abs_pos_embed: bicubic, antialiased) "
               "and keeps [cls]'s row; lib's vit_resize_positions() does the same with "
               "resample_grid() (lib/io/resample.c). Here is a table of that shape, drawn at "
               "random (normal, std 0.02), resampled for each size:",
           PATCH, PATCH, SIDE[0], TRAINED_GRID, TRAINED_GRID, TRAINED_GRID * TRAINED_GRID,
           TRAINED_GRID * TRAINED_GRID + 1, WIDTH, TRAINED_GRID * TRAINED_GRID + 1, TRAINED_GRID,
           TRAINED_GRID);
    const int P0 = TRAINED_GRID * TRAINED_GRID;
    float *pos = vit_malloc(sizeof(float) * (size_t)(P0 + 1) * WIDTH);
    Rng rng;
    rng_seed(&rng, POS_SEED);
    rng_fill_normal(&rng, pos, (size_t)(P0 + 1) * WIDTH, 0.0f, 0.02f);
    float tokens[SIZES], sample[SIZES * 2 * 4]; // per size: 4 values of the first and last patch
    ch_line(ch, "    %7s  %9s  %7s  %6s   %s", "image", "grid", "patches", "N", "position table");
    // [resize]
    for (int i = 0; i < SIZES; i++) {
        const int g = w->grid[i] = SIDE[i] / PATCH, N = g * g + 1;
        w->N[i] = (int)ch_valuef(ch, (float)N, "tokens.%d", SIDE[i]);
        float *resized = vit_malloc(sizeof(float) * (size_t)N * WIDTH);
        memcpy(resized, pos, sizeof(float) * WIDTH); // [cls] keeps its row
        resample_grid(resized + WIDTH, pos + WIDTH, TRAINED_GRID, TRAINED_GRID, g, g, WIDTH,
                      FILTER_BICUBIC);
        memcpy(sample + i * 8, resized + WIDTH, 4 * sizeof(float));
        memcpy(sample + i * 8 + 4, resized + (size_t)(N - 1) * WIDTH, 4 * sizeof(float));
        tokens[i] = (float)N;
        ch_line(ch, "    %4d px  %4d × %-3d  %7d  %6d   (%d, %d)", SIDE[i], g, g, g * g, N, N, WIDTH);
        free(resized);
    }
    // [resize]
    ch_line(ch, "%s", "");
    pin_row(ch, "pos.samples", sample, SIZES * 8);
    ch_say(ch, "From %d to %d px the side grows %.2f×, the tokens %.1f×. The model is the "
               "same %d layers of %d heads; only the attention inside each head grows faster "
               "than the tokens.",
           SIDE[0], SIDE[SIZES - 1], (double)SIDE[SIZES - 1] / SIDE[0],
           (double)tokens[SIZES - 1] / tokens[0], DEPTH, HEADS);
    free(pos);
}

/* ------------------------------------------------- 2. the N × N matrix */

// Exact attention's share of weight inside the local window, averaged over the queries.
// [weight_in_window]
static float weight_in_window(const float *probs, int N, int g, float *mask) {
    attention_mask_window(mask, 1, g, g, RADIUS);
    double kept = 0;
    for (size_t e = 0; e < (size_t)N * N; e++)
        if (mask[e] == 0.0f) kept += probs[e];
    return (float)(kept / N);
}
// [weight_in_window]

static void the_matrix(Chapter *ch, Work *w) {
    if (!ch_section(ch, "2. The N × N matrix: memory and time")) return;
    ch_say(ch, "Each head scores every query against every key: an (N, N) matrix of float32, "
               "4·N² bytes. Attention itself needs one per head while the head is computed "
               "(the scores, turned into probabilities in place, as attention_exact() below "
               "does); a layer that computes its %d heads at once needs %d of them per image, "
               "and a batch of B images B times that. lib's traced path (mha_forward()) keeps "
               "three per head, the scores, the scaled scores and the probabilities, so that a "
               "trace can show each, besides six (N, %d) buffers (mha_scratch_floats()): the "
               "last column. The times are for one head, Dh = %d, with q, k and v drawn at "
               "random (normal, std 1): the scores, the scale, the softmax and the product "
               "with V, on one core of this machine (yours will differ), as are all the "
               "chapter's times.", HEADS, HEADS, WIDTH, DH);
    float one[SIZES], heads[SIZES], traced[SIZES];
    float *mask = vit_malloc(sizeof(float) * (size_t)w->N[SIZES - 1] * w->N[SIZES - 1]);
    ch_line(ch, "    %7s  %5s  %12s  %11s  %12s  %12s  %9s", "image", "N", "N²", "one matrix",
            "12 heads", "traced layer", "exact, ms");
    for (int i = 0; i < SIZES; i++) {
        const int N = w->N[i];
        one[i] = (float)megabytes(4.0 * N * N);
        heads[i] = (float)megabytes(4.0 * HEADS * N * N); // one image, every head at once
        traced[i] = (float)megabytes(4.0 * (double)mha_scratch_floats(1, N, WIDTH, HEADS));
        w->exact[i] = vit_malloc(sizeof(float) * (size_t)N * DH);
        timed(w, EXACT, i, w->exact[i]);
        w->kept[i] = weight_in_window(w->scratch, N, w->grid[i], mask); // the probabilities
        char n2[VIT_NUM_BUF];
        ch_line(ch, "    %4d px  %5d  %12s  %8.1f MB  %9.1f MB  %9.1f MB  %9.2f", SIDE[i], N,
                vit_thousands(n2, (int64_t)N * N), one[i], heads[i], traced[i],
                ms(w->seconds[EXACT][i]));
    }
    ch_line(ch, "%s", "");
    free(mask);
    pin_row(ch, "matrix.MB", one, SIZES);
    pin_row(ch, "heads.MB", heads, SIZES);
    pin_row(ch, "layer.MB", traced, SIZES);
    const int last = SIZES - 1;
    const double n_ratio = (double)w->N[last] / w->N[0], n2_ratio = n_ratio * n_ratio;
    const double t_ratio = w->seconds[EXACT][last] / w->seconds[EXACT][0];
    const bool like_n2 = t_ratio >= 0.7 * n2_ratio && t_ratio <= 1.4 * n2_ratio;
    ch_say(ch, "N grew %.1f× and N² %.0f×, and the memory with it: at %d px one head's matrix "
               "is %.1f MB, a layer's %d heads at once need %.2f GB per image, and the traced "
               "path's buffers for a layer take %.2f GB. The time of one head grew %.0f× here, "
               "%s.", n_ratio, n2_ratio, SIDE[last], one[last], HEADS, heads[last] / 1e3,
           traced[last] / 1e3, t_ratio,
           like_n2 ? "about as N² did: the N² scores, their exponentials and the N²·Dh "
                     "products are the work"
           : t_ratio < 0.7 * n2_ratio
               ? "less than N² did; the chapter does not measure why (the largest sizes are timed "
                 "once, on a machine that may be busy with other work)"
               : "more than N² did; the chapter does not measure why (the largest sizes are timed "
                 "once, on a machine that may be busy with other work)");
}

/* ------------------------------------------------- 3. query chunks */

static void query_chunks(Chapter *ch, Work *w) {
    if (!ch_section(ch, "3. Exact, a chunk of queries at a time")) return;
    ch_say(ch, "A row of the softmax needs its own row of scores and nothing else. So the "
               "queries can be taken %d at a time: score the chunk against every key, a "
               "(%d, N) matrix, take its softmax and multiply by V, write the chunk's %d rows "
               "of output, and reuse the memory for the next chunk. This is the "
               "\"memory-efficient\" forward pass, and it is exact: the arithmetic of each "
               "row is the same as before.", QUERY_CHUNK, QUERY_CHUNK, QUERY_CHUNK);
    ch_line(ch, "    // attention_query_chunks(), chapters/13_attention_at_scale.c");
    ch_line(ch, "    for (int i0 = 0; i0 < N; i0 += chunk) {");
    ch_line(ch, "        matmul_bt(s, q + i0·Dh, k, rows, Dh, N);    // (rows, N) = Q_c·Kᵀ");
    ch_line(ch, "        ops_scale(s, s, 1/√Dh, rows·N);  softmax(s, s, rows, N);");
    ch_line(ch, "        matmul(out + i0·Dh, s, v, rows, N, Dh);     // (rows, Dh) = P_c·V");
    ch_line(ch, "    }");
    ch_line(ch, "%s", "");
    float diff[SIZES], mem[SIZES];
    float *out = vit_malloc(sizeof(float) * (size_t)w->N[SIZES - 1] * DH);
    ch_line(ch, "    %7s  %5s  %16s  %12s  %11s  %10s", "image", "N", "max |diff|", "scores held",
            "chunks, ms", "exact, ms");
    for (int i = 0; i < SIZES; i++) {
        const int N = w->N[i];
        timed(w, CHUNKED, i, out);
        const Tensor a = tensor_view(out, 2, N, DH), e = tensor_view(w->exact[i], 2, N, DH);
        diff[i] = tensor_max_abs_diff(&a, &e);
        mem[i] = (float)megabytes(4.0 * QUERY_CHUNK * N);
        ch_line(ch, "    %4d px  %5d  %16.2g  %9.2f MB  %11.2f  %10.2f", SIDE[i], N, diff[i], mem[i],
                ms(w->seconds[CHUNKED][i]), ms(w->seconds[EXACT][i]));
    }
    ch_line(ch, "%s", "");
    pin_row(ch, "chunked.max_diff", diff, SIZES);
    pin_row(ch, "chunked.MB", mem, SIZES);
    const int last = SIZES - 1;
    const double speed = w->seconds[EXACT][last] / w->seconds[CHUNKED][last];
    ch_say(ch, "The outputs agree with exact attention's to float rounding (the largest "
               "difference above). The scores held fall from N² to %d·N: %.2f MB instead of "
               "%.1f MB at %d px. The work is the same; at %d px the chunks took %.2f× the "
               "time of the whole matrix here (%s). Both are timed once at that size, and "
               "why they differ (the caches, the shapes of the matrix products) is not "
               "measured here.", QUERY_CHUNK, mem[last],
           megabytes(4.0 * w->N[last] * w->N[last]), SIDE[last], SIDE[last], 1 / speed,
           speed > 1.1 ? "faster" : speed < 0.9 ? "slower" : "about the same");
    free(out);
}

/* ------------------------------------------------- 4. online softmax */

// Section 4's row taken block by block with online_softmax_block(); the weights
// are rescaled by every later c and divided by the final sum, as attention_online() does.
// [online_by_hand]
static void online_by_hand(Chapter *ch) {
    float s[ROW], probs[ROW], max[ROW_BLOCKS], sum[ROW_BLOCKS], c[ROW_BLOCKS];
    memcpy(s, ROW_SCORES, sizeof s);
    OnlineSoftmax st = ONLINE_SOFTMAX_START;
    ch_line(ch, "    %-6s  %-26s  %9s  %7s  %6s  %7s", "block", "scores", "block max", "m'", "c",
            "l'");
    for (int b = 0, at = 0; b < ROW_BLOCKS; at += ROW_BLOCK[b++]) {
        float block_max = -INFINITY;
        char text[96];
        int used = 0;
        for (int j = at; j < at + ROW_BLOCK[b]; j++) {
            block_max = fmaxf(block_max, s[j]);
            used += snprintf(text + used, sizeof text - (size_t)used, "%s%.1f", j > at ? " " : "", s[j]);
        }
        c[b] = online_softmax_block(&st, s + at, ROW_BLOCK[b]);
        for (int j = 0; j < at; j++) s[j] *= c[b]; // the weights before this block, rescaled
        max[b] = st.max, sum[b] = st.sum;
        ch_line(ch, "    %-6d  %-26s  %9.1f  %7.2f  %6.3f  %7.4f", b, text, block_max, st.max,
                c[b], st.sum);
    }
    ch_line(ch, "%s", "");
    for (int j = 0; j < ROW; j++) probs[j] = s[j] / st.sum;
    float want[ROW];
    softmax(want, ROW_SCORES, 1, ROW);
    pin_row(ch, "online.row.max", max, ROW_BLOCKS);
    pin_row(ch, "online.row.sum", sum, ROW_BLOCKS);
    pin_row(ch, "online.row.c", c, ROW_BLOCKS);
    pin_row(ch, "online.row.probs", probs, ROW);
    ch_say(ch, "The first block's c is %.0f: there was nothing before it (m = -inf, and "
               "e^(-inf) = 0). Each later block that raises the maximum multiplies what was "
               "summed before by c < 1; a block that does not leaves c = 1. At the end, weight "
               "j times the c of every block after its own, over l = %.4f, is its probability: "
               "it differs from softmax() over the whole row by at most %.2g.",
           c[0], sum[ROW_BLOCKS - 1], ch_max_diff(ch, "online.row.vs_softmax", probs, want, ROW));
}
// [online_by_hand]

static void online(Chapter *ch, Work *w) {
    if (!ch_section(ch, "4. Exact, one block of keys at a time: the online softmax")) return;
    ch_say(ch, "A chunk of queries still holds a whole row of N scores per query, because "
               "the softmax needs the row's maximum and its sum before any weight is known. "
               "The online softmax does without: it keeps, per query, the largest score seen "
               "so far m and the sum l of e^(s - m) over the scores seen, and takes the keys "
               "a block at a time. A block may raise the maximum to m'; everything summed "
               "before was summed against the old m, so it is multiplied by c = e^(m - m'):");
    ch_line(ch, "    m' = max(m, max_j s_j),   c = e^(m - m'),   l' = c·l + Σ_j e^(s_j - m')");
    ch_line(ch, "    acc' = c·acc + Σ_j e^(s_j - m')·v_j,          and at the end  out = acc / l");
    ch_line(ch, "%s", "");
    ch_say(ch, "online_softmax_block() (lib/attention/online_softmax.c) is that step for one block of "
               "one row. A row of %d scores in blocks of %d, %d and %d:", ROW, ROW_BLOCK[0],
           ROW_BLOCK[1], ROW_BLOCK[2]);
    online_by_hand(ch);
    ch_say(ch, "attention_online() (lib/attention/attention_online.c) runs that step for every query "
               "of a block of queries against a block of %d keys at a time, so both of its "
               "products are matrix products. Per query it keeps %d scores, %d accumulators "
               "and m and l: %d bytes, whatever N is. The same head as above:", KEY_BLOCK,
           KEY_BLOCK, DH, 4 * (KEY_BLOCK + DH + 2));
    ch_value(ch, "online.bytes_per_query", (float)(4 * (KEY_BLOCK + DH + 2)));
    float diff[SIZES];
    float *out = vit_malloc(sizeof(float) * (size_t)w->N[SIZES - 1] * DH);
    ch_line(ch, "    %7s  %5s  %16s  %11s  %10s", "image", "N", "max |diff|", "online, ms",
            "exact, ms");
    for (int i = 0; i < SIZES; i++) {
        const int N = w->N[i];
        timed(w, ONLINE, i, out);
        const Tensor a = tensor_view(out, 2, N, DH), e = tensor_view(w->exact[i], 2, N, DH);
        diff[i] = tensor_max_abs_diff(&a, &e);
        ch_line(ch, "    %4d px  %5d  %16.2g  %11.2f  %10.2f", SIDE[i], N, diff[i],
                ms(w->seconds[ONLINE][i]), ms(w->seconds[EXACT][i]));
    }
    ch_line(ch, "%s", "");
    pin_row(ch, "online.max_diff", diff, SIZES);
    const int last = SIZES - 1;
    const double ratio = w->seconds[ONLINE][last] / w->seconds[EXACT][last];
    ch_say(ch, "Exact again: only the order of the additions differs. It does the same N² "
               "work (at %d px it took %.2f× the time of the whole matrix here), and never "
               "holds more than one block of scores. This is the inner loop of "
               "FlashAttention, which on a GPU also keeps each block in the fast on-chip "
               "memory.", SIDE[last], ratio);
    free(out);
}

/* ------------------------------------------------- 5. local attention */

// attention_local() at N[0] against exact attention with the window as a mask.
// [local_vs_masked]
static float local_vs_masked(Chapter *ch, Work *w, float *out) {
    const int N0 = w->N[0], g0 = w->grid[0];
    float *mask = vit_malloc(sizeof(float) * (size_t)N0 * N0);
    float *masked = vit_malloc(sizeof(float) * (size_t)N0 * DH);
    attention_mask_window(mask, 1, g0, g0, RADIUS);
    const AttentionOptions window = {.mask = mask};
    attention(masked, w->scratch, w->q, w->k, w->v, &window, N0, DH);
    run_method(w, LOCAL, 0, out);
    const float diff = ch_max_diff(ch, "local.vs_masked", out, masked, (size_t)N0 * DH);
    free(mask), free(masked);
    return diff;
}
// [local_vs_masked]

// Every query given the plain mean of the values, as if attention were uniform: its error.
static float uniform_error(const Work *w, int i, float *out) {
    const int N = w->N[i];
    double mean[DH] = {0};
    for (int j = 0; j < N; j++)
        for (int d = 0; d < DH; d++) mean[d] += w->v[(size_t)j * DH + d];
    for (int j = 0; j < N; j++)
        for (int d = 0; d < DH; d++) out[(size_t)j * DH + d] = (float)(mean[d] / N);
    return relative_error(out, w->exact[i], (size_t)N * DH);
}

static void local(Chapter *ch, Work *w) {
    if (!ch_section(ch, "5. An approximation: local attention")) return;
    const int side = 2 * RADIUS + 1, keys = 1 + side * side;
    float *out = vit_malloc(sizeof(float) * (size_t)w->N[SIZES - 1] * DH);
    const float same = local_vs_masked(ch, w, out);
    ch_say(ch, "Cheaper still is to score fewer pairs. Local attention lets each patch see "
               "only the patches within %d rows and %d columns of its own, a %d × %d window "
               "on the patch grid (cut off at the edges), and [cls]; [cls] still sees every "
               "token, and every token sees [cls], so information can cross the image in "
               "two steps, patch to [cls] to patch. A patch's query scores at most %d keys "
               "whatever N is: the work grows like N, not N² (attention_local(), "
               "lib/attention/attention_local.c). Within the window it is the exact softmax: the same "
               "as exact attention with the window as a mask (attention_mask_window()), which "
               "at N = %d it equals to %.2g. The weights outside the window are dropped and "
               "the window's renormalised to sum to 1. That is the approximation:", RADIUS,
           RADIUS, side, side, (int)ch_value(ch, "local.keys", (float)keys), w->N[0], same);
    float err[SIZES], uniform[SIZES];
    ch_line(ch, "    %7s  %5s  %16s  %14s  %10s  %10s", "image", "N", "weight in window",
            "relative error", "local, ms", "exact, ms");
    for (int i = 0; i < SIZES; i++) {
        const int N = w->N[i];
        timed(w, LOCAL, i, out);
        err[i] = relative_error(out, w->exact[i], (size_t)N * DH);
        ch_line(ch, "    %4d px  %5d  %15.1f%%  %14.3f  %10.2f  %10.2f", SIDE[i], N,
                100 * w->kept[i], err[i], ms(w->seconds[LOCAL][i]), ms(w->seconds[EXACT][i]));
        uniform[i] = uniform_error(w, i, out);
    }
    ch_line(ch, "%s", "");
    pin_row(ch, "local.kept", w->kept, SIZES);
    pin_row(ch, "local.rel_error", err, SIZES);
    pin_row(ch, "uniform.rel_error", uniform, SIZES);
    const int last = SIZES - 1;
    ch_say(ch, "\"Weight in window\" is the share of exact attention's probability that falls "
               "inside the window, averaged over the queries; the relative error is "
               "‖out − exact‖ / ‖exact‖. These q and k are random: nothing makes nearby "
               "patches more alike, so exact attention spreads its weight over the whole image "
               "and the window catches %.1f%% of it at %d px, where the error is %.2f: exact "
               "attention's output, an average over nearly all N values, is small, while the "
               "window averages a few dozen. (Giving "
               "every query the plain mean of the values would be off by %.2f at %d px and "
               "%.2f at %d px.) How good a window is depends on where attention really "
               "looks, which Section 7 asks of a trained model.", 100 * w->kept[last],
           SIDE[last], err[last], uniform[0], SIDE[0], uniform[last], SIDE[last]);
    free(out);
}

/* ------------------------------------------------- 6. linear attention */

static void linear_attention(Chapter *ch, Work *w) {
    if (!ch_section(ch, "6. An approximation: linear attention")) return;
    ch_say(ch, "The N² comes from the softmax: e^(q·k) does not split into a part of q times "
               "a part of k, so every pair must be scored. Linear attention (Katharopoulos et "
               "al., 2020) replaces the weight by a product of features, φ(q_i)·φ(k_j) with "
               "φ(x) = elu(x) + 1 (x + 1 above 0, e^x below: always positive), and then the "
               "sum over keys can be taken first, once per head:");
    ch_line(ch, "    out_i = φ(q_i)ᵀ (Σ_j φ(k_j) v_jᵀ) / φ(q_i)ᵀ (Σ_j φ(k_j))");
    ch_line(ch, "          = [φ(Q) (φ(K)ᵀ V)]_i / [φ(Q) (φ(K)ᵀ 1)]_i");
    ch_line(ch, "%s", "");
    const float bytes = ch_value(ch, "linear.bytes", (float)(8 * (DH * DH + DH)));
    ch_say(ch, "φ(K)ᵀV is a (%d, %d) matrix and φ(K)ᵀ1 a vector of %d: %.0f bytes per head in "
               "double, whatever N is, and the work is N·Dh² instead of N²·Dh "
               "(attention_linear(), lib/attention/attention_linear.c). The weights are still positive "
               "and sum to 1, but they are other weights: φ grows like x where e^x grows "
               "exponentially, so they are much flatter.", DH, DH, DH, bytes);
    float err[SIZES];
    float *out = vit_malloc(sizeof(float) * (size_t)w->N[SIZES - 1] * DH);
    ch_line(ch, "    %7s  %5s  %14s  %11s  %10s", "image", "N", "relative error", "linear, ms",
            "exact, ms");
    // [linear_errors]
    for (int i = 0; i < SIZES; i++) {
        const int N = w->N[i];
        timed(w, LINEAR, i, out);
        err[i] = relative_error(out, w->exact[i], (size_t)N * DH);
        ch_line(ch, "    %4d px  %5d  %14.3f  %11.2f  %10.2f", SIDE[i], N, err[i],
                ms(w->seconds[LINEAR][i]), ms(w->seconds[EXACT][i]));
    }
    // [linear_errors]
    ch_line(ch, "%s", "");
    pin_row(ch, "linear.rel_error", err, SIZES);
    const int last = SIZES - 1;
    const double t_ratio = w->seconds[LINEAR][last] / w->seconds[LINEAR][0];
    ch_say(ch, "From %d to %d tokens its time grew %.0f× here (N grew %.1f×), where exact "
               "attention's grew %.0f×. Its error is not a rounding error: linear attention is "
               "another function, and on these inputs its output is off by %.2f at %d px.",
           w->N[0], w->N[last], t_ratio, (double)w->N[last] / w->N[0],
           w->seconds[EXACT][last] / w->seconds[EXACT][0], err[last], SIDE[last]);
    free(out);
}

/* ------------------------------------------------- 7. the trained model */

/** The attention a pass of Section 7 uses in every layer. */
typedef enum {
    WITH_EXACT,     /**< exact attention, through the chapter's recipe */
    WITH_LOCAL1,    /**< local attention, a 3 × 3 window */
    WITH_LOCAL2,    /**< local attention, a 5 × 5 window */
    WITH_CLS_LOCAL, /**< the 5 × 5 window, and [cls] reads only the grid's centre 5 × 5 */
    WITH_LINEAR,    /**< linear attention, elu + 1 */
    WITHS           /**< how many there are */
} With;
static const char *const WITH_NAME[WITHS] = {"exact (the recipe)", "local, 3 × 3 window",
                                             "local, 5 × 5 window", "5 × 5, [cls] local too",
                                             "linear, elu + 1"};
static const char *const WITH_PROSE[WITHS] = {"exact attention", "the 3 × 3 window",
                                              "the 5 × 5 window",
                                              "the 5 × 5 window with [cls] local too",
                                              "linear attention"};

/** Section 7's buffers for one batch of B images. */
typedef struct {
    const Vit *vit;
    int B, N, D, H, M, side;
    float *x, *h, *flat, *q, *k, *v, *heads, *mlp, *scores; // (B,N,D) ×3, (B,H,N,Dh) ×4, (B,N,M), (B,H,N,N)
    float *cls_centre; // (N, N) a mask: [cls]'s row hides the patches outside the centre 5 × 5
} Pass;

// An additive (N, N) mask that leaves every row alone but [cls]'s, which may read
// [cls] and the patches within `radius` rows and columns of the grid's centre:
// as many patches as an inner patch's window, so [cls] loses its global reach.
// [cls_centre_mask]
static void cls_centre_mask(float *mask, int side, int radius) {
    const int N = 1 + side * side, centre = side / 2;
    memset(mask, 0, sizeof(float) * (size_t)N * N);
    for (int j = 1; j < N; j++) {
        const int y = (j - 1) / side, x = (j - 1) % side;
        if (abs(y - centre) > radius || abs(x - centre) > radius) mask[j] = -INFINITY; // row 0
    }
}
// [cls_centre_mask]

static void pass_init(Pass *p, const Vit *vit, int B) {
    const VitConfig *c = &vit->config;
    *p = (Pass){.vit = vit, .B = B, .N = vit_num_tokens(c), .D = c->dim, .H = c->heads,
                .M = c->mlp_dim, .side = c->image_size / c->patch_size};
    const size_t bnd = (size_t)B * p->N * p->D;
    p->x = vit_malloc(sizeof(float) * bnd), p->h = vit_malloc(sizeof(float) * bnd);
    p->flat = vit_malloc(sizeof(float) * bnd), p->heads = vit_malloc(sizeof(float) * bnd);
    p->q = vit_malloc(sizeof(float) * bnd), p->k = vit_malloc(sizeof(float) * bnd);
    p->v = vit_malloc(sizeof(float) * bnd);
    p->mlp = vit_malloc(sizeof(float) * (size_t)B * p->N * p->M);
    p->scores = vit_malloc(sizeof(float) * (size_t)B * p->H * p->N * p->N);
    p->cls_centre = vit_malloc(sizeof(float) * (size_t)p->N * p->N);
    cls_centre_mask(p->cls_centre, p->side, 2);
}

static void pass_free(Pass *p) {
    free(p->x), free(p->h), free(p->flat), free(p->heads), free(p->q), free(p->k), free(p->v);
    free(p->mlp), free(p->scores), free(p->cls_centre);
}

// Attention in every head, as `with` says: heads (B,H,N,Dh) from q, k, v.
// [attend]
static void attend(Pass *p, With with) {
    const int B = p->B, H = p->H, N = p->N, Dh = p->D / p->H, g = p->side;
    switch (with) {
    case WITH_EXACT:
        attention_scores(p->scores, p->q, p->k, B * H, N, Dh);
        attention_scale_mask(p->scores, p->scores, NULL, B, H, N, Dh);
        softmax(p->scores, p->scores, B * H * N, N);
        attention_context(p->heads, p->scores, p->v, B * H, N, Dh);
        break;
    case WITH_LOCAL1: attention_local(p->heads, p->q, p->k, p->v, NULL, B, H, 1, g, g, Dh, 1); break;
    case WITH_LOCAL2: attention_local(p->heads, p->q, p->k, p->v, NULL, B, H, 1, g, g, Dh, 2); break;
    case WITH_CLS_LOCAL: {
        const AttentionOptions cls_too = {.mask = p->cls_centre};
        attention_local(p->heads, p->q, p->k, p->v, &cls_too, B, H, 1, g, g, Dh, 2);
        break;
    }
    case WITH_LINEAR: attention_linear(p->heads, p->q, p->k, p->v, NULL, B, H, N, Dh); break;
    default: break;
    }
}
// [attend]

// [block]
// One encoder block on p->x (B, N, D), its attention swapped for `with`:
// x = x + proj(attend(norm1(x))),  x = x + fc2(gelu(fc1(norm2(x)))).
static void block_with(Pass *p, const VitBlockWeights *w, With with) {
    const int BN = p->B * p->N, D = p->D, H = p->H, Dh = D / H, M = p->M;
    const float eps = p->vit->config.ln_eps;
    layernorm(p->h, p->x, w->norm1_w, w->norm1_b, BN, D, eps);
    const float *proj_w[3] = {w->attn.q_w, w->attn.k_w, w->attn.v_w};
    const float *proj_b[3] = {w->attn.q_b, w->attn.k_b, w->attn.v_b};
    float *heads[3] = {p->q, p->k, p->v};
    for (int t = 0; t < 3; t++) { // q, k, v: project, then split into heads (B, H, N, Dh)
        ops_linear(p->flat, p->h, proj_w[t], proj_b[t], BN, D, D);
        heads_split(heads[t], p->flat, p->B, p->N, H, Dh);
    }
    attend(p, with);                                  // the only line that differs
    heads_merge(p->flat, p->heads, p->B, p->N, H, Dh);
    ops_linear(p->h, p->flat, w->attn.proj_w, w->attn.proj_b, BN, D, D);
    ops_add(p->x, p->x, p->h, (size_t)BN * D);
    layernorm(p->h, p->x, w->norm2_w, w->norm2_b, BN, D, eps);
    ops_linear(p->mlp, p->h, w->fc1_w, w->fc1_b, BN, D, M);
    gelu(p->mlp, p->mlp, (size_t)BN * M);
    ops_linear(p->h, p->mlp, w->fc2_w, w->fc2_b, BN, M, D);
    ops_add(p->x, p->x, p->h, (size_t)BN * D);
}
// [block]

// From the embedded tokens to the logits (B, Y), every block's attention swapped.
// [pass_run]
static void pass_run(Pass *p, const float *embed, With with, float *logits) {
    const VitWeights *wt = &p->vit->weights;
    const VitConfig *c = &p->vit->config;
    const int D = p->D, N = p->N;
    memcpy(p->x, embed, sizeof(float) * (size_t)p->B * N * D);
    for (int l = 0; l < c->depth; l++) block_with(p, &wt->blocks[l], with);
    for (int b = 0; b < p->B; b++) { // the final norm of [cls] only, then the head
        layernorm(p->h, p->x + (size_t)b * N * D, wt->norm_w, wt->norm_b, 1, D, c->ln_eps);
        ops_linear(logits + (size_t)b * c->num_classes, p->h, wt->head_w, wt->head_b, 1, D,
               c->num_classes);
    }
}
// [pass_run]

/** What Section 7 keeps of vit_forward()'s trace. */
typedef struct {
    float *embed;      // (B, N, D) the embedded tokens, the one stage the swapped passes start from
    double *mass;      // (L, H, bins) Σ over images of attention_by_distance()'s bins
    double *distance;  // (L, H) Σ over images of the mean attention distance
    double *one_mass;  // (H, bins) one image's, before it is added
    double *one_dist;  // (H)
    int H, side, bins; // heads; patches per side of the grid; bins per head
} Looks;

// A TraceFn: the embedded tokens copied, each layer's probabilities (B, H, N, N)
// summed by grid distance, image by image, into looks->mass and looks->distance.
// [looks_trace]
static void looks_trace(void *user, const char *name, const Tensor *t) {
    Looks *looks = user;
    int layer, end = 0;
    if (strcmp(name, "embed") == 0) memcpy(looks->embed, t->data, sizeof(float) * t->numel);
    if (sscanf(name, "blocks.%d.attn.probs%n", &layer, &end) != 1 || name[end]) return;
    const int B = t->shape[0], H = looks->H, N = t->shape[3], bins = looks->bins;
    for (int b = 0; b < B; b++) {
        attention_by_distance(looks->one_mass, looks->one_dist, t->data + (size_t)b * H * N * N,
                              H, 1, looks->side, looks->side);
        for (int e = 0; e < H * bins; e++) looks->mass[(size_t)layer * H * bins + e] += looks->one_mass[e];
        for (int h = 0; h < H; h++) looks->distance[layer * H + h] += looks->one_dist[h];
    }
}
// [looks_trace]

static int argmax(const float *v, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (v[i] > v[best]) best = i;
    return best;
}

/** Where one head's patch queries look: what the window keeps and how far they reach. */
typedef struct {
    float cls;      // the share on [cls]
    float window3;  // the share a 3 × 3 window keeps, [cls] included (as attention_local() keeps it)
    float window5;  // the share a 5 × 5 window keeps, [cls] included
    float distance; // the mean attention distance, in patches
} Reach;

// One head's bins (attention_by_distance()) read as what the chapter's windows keep.
// [reach_of]
static Reach reach_of(const double *mass, double distance) {
    // mass is (bins): [cls], then the patches 0, 1, 2, … rows or columns away
    return (Reach){.cls = (float)mass[0],
                   .window3 = (float)(mass[0] + mass[1] + mass[2]),            // radius 1
                   .window5 = (float)(mass[0] + mass[1] + mass[2] + mass[3]), // radius 2
                   .distance = (float)distance};
}
// [reach_of]

// What uniform attention over the same N keys gives, edges included: the same
// measure of a matrix whose every weight is 1/N.
static Reach uniform_reach(int N, int side, int bins) {
    float *probs = vit_malloc(sizeof(float) * (size_t)N * N);
    double *mass = vit_malloc(sizeof(double) * (size_t)bins), distance;
    for (size_t e = 0; e < (size_t)N * N; e++) probs[e] = 1.0f / N;
    attention_by_distance(mass, &distance, probs, 1, 1, side, side);
    const Reach r = reach_of(mass, distance);
    free(probs), free(mass);
    return r;
}

static float min_of(const float *v, int n) {
    float m = v[0];
    for (int i = 1; i < n; i++) m = fminf(m, v[i]);
    return m;
}

static float max_of(const float *v, int n) {
    float m = v[0];
    for (int i = 1; i < n; i++) m = fmaxf(m, v[i]);
    return m;
}

static float mean_of(const float *v, int n) {
    double sum = 0;
    for (int i = 0; i < n; i++) sum += v[i];
    return (float)(sum / n);
}

// How many of the n values are at least `times` × `of`.
static int count_at_least(const float *v, int n, double times, double of) {
    int count = 0;
    for (int i = 0; i < n; i++) count += v[i] >= times * of;
    return count;
}

/** Section 7's measures of where the model looks, per layer and head, and uniform's. */
typedef struct {
    int L, H;
    float cls[64], window3[64], window5[64], distance[64]; // (L, H), L·H at most 64
    Reach uniform;
    int local_heads;   // heads whose 3 × 3 window keeps at least LOCAL_TIMES uniform's share
    bool hardly_local; // no local head, and no head's mean distance below NEAR_SHARE of uniform's
} Where;

// Section 7's second table: each attention in every layer, how many right, and why, from `where`.
// [swapped]
static void swapped(Chapter *ch, const Where *where, const int *right, const int *agree,
                    float recipe_diff, const VitConfig *c, int N, int side) {
    ch_say(ch, "The model of Chapter 11 (data/%s: %d layers, %d heads, N = %d tokens on a "
               "%d × %d grid) was trained with exact attention. Its attention layer can be "
               "swapped for another by rebuilding each block from lib's pieces, with one line "
               "changed:", MODEL_FILE, c->depth, c->heads, N, side, side);
    ch_line(ch, "    layernorm → q, k, v = linear + heads_split → attend(q, k, v) → heads_merge");
    ch_line(ch, "    → proj → + x → layernorm → fc1 → gelu → fc2 → + x");
    ch_line(ch, "%s", "");
    ch_say(ch, "With exact attention the recipe gives vit_forward()'s logits to %.2g. Each "
               "variant runs on the first %d test images, every layer's attention swapped; the "
               "model itself, through vit_forward(), gets %d of them right:",
           ch_value(ch, "model.recipe_max_diff", recipe_diff), measured(),
           (int)ch_value(ch, "model.right", (float)right[WITHS]));
    float rights[WITHS], agrees[WITHS];
    ch_line(ch, "    %-26s  %8s  %26s", "attention in every layer", "right", "same class as the model");
    for (int with = 0; with < WITHS; with++) {
        rights[with] = (float)right[with], agrees[with] = (float)agree[with];
        // %-26s counts bytes, and × takes two: pad by columns
        const int cols = columns(WITH_NAME[with]);
        ch_line(ch, "    %s%*s  %4d/%-3d  %22d/%-3d", WITH_NAME[with], cols < 26 ? 26 - cols : 0, "",
                right[with], measured(), agree[with], measured());
    }
    ch_line(ch, "%s", "");
    pin_row(ch, "model.with.right", rights, WITHS);
    pin_row(ch, "model.with.agree", agrees, WITHS);
    // what the windows drop of a patch query's attention, averaged over the heads
    const int LH = where->L * where->H;
    const float keeps3 = ch_value(ch, "looks.window3_mean", mean_of(where->window3, LH));
    const float keeps5 = ch_value(ch, "looks.window5_mean", mean_of(where->window5, LH));
    // the right answers the 5 × 5 window loses when [cls] is windowed too
    const int cls_reach = (int)ch_value(ch, "model.cls_reach",
                                        (float)(right[WITH_LOCAL2] - right[WITH_CLS_LOCAL]));
    char reach[160];
    if (cls_reach > 0)
        snprintf(reach, sizeof reach, "on these images, [cls]'s global reach is worth %d of the "
                 "wider window's %d right answers", cls_reach, right[WITH_LOCAL2]);
    else
        snprintf(reach, sizeof reach, "[cls]'s global reach is not what carries the wider "
                 "window on these images");
    ch_say(ch, "The first table says what the windows do to this model. Averaged over the "
               "heads, the 3 × 3 window drops %.0f%% of a patch query's attention and the "
               "5 × 5 window %.0f%%, and keeping more does %s (%d against %d right)%s. %s "
               "What no window cuts is [cls]'s own row: attention_local() lets [cls] read "
               "every token in every layer, and the prediction is read from [cls] after the "
               "last. Cut that too, [cls] reading only itself and the 5 × 5 patches at the "
               "grid's centre (as many as an inner patch's window), and the 5 × 5 window gets "
               "%d right instead of %d: %s.",
           100 * (1 - keeps3), 100 * (1 - keeps5),
           right[WITH_LOCAL2] > right[WITH_LOCAL1]   ? "better"
           : right[WITH_LOCAL2] < right[WITH_LOCAL1] ? "worse"
                                                     : "no better",
           right[WITH_LOCAL2], right[WITH_LOCAL1],
           keeps5 < 0.5f ? ", though even the wider window throws away most of what each "
                           "patch read"
                         : "",
           where->hardly_local
               ? "The model is hardly local, so a window does not keep what it learned to "
                 "read, only a part of it picked by place."
               : "What each head loses is in the first table: 1 minus what its window "
                 "keeps; the nearer a head looks, the less.",
           right[WITH_CLS_LOCAL], right[WITH_LOCAL2], reach);
    int worst = WITH_LOCAL1;
    for (int with = WITH_LOCAL1; with < WITHS; with++)
        if (right[with] < right[worst]) worst = with;
    ch_say(ch, "The weights after each attention layer (the projection, the MLP, the next "
               "layers) were trained on what exact attention hands them. An approximation "
               "hands them something else, and every layer passes the difference on: here the "
               "worst, %s, gets %d of %d right where exact attention gets %d. An approximate attention "
               "is a different model: it has to be trained (or at least fine-tuned) with the "
               "approximation in place, and whether it then does as well is a question of the "
               "task. Chunks and the online softmax have no such cost: they compute the same "
               "numbers.", WITH_PROSE[worst], right[worst], measured(), right[WITH_EXACT]);
}
// [swapped]

// The Looks summed over `images` images, averaged into per-head Reach, and uniform's beside it.
static void where_of(Where *w, const Looks *looks, int L, int images, int N) {
    w->L = L, w->H = looks->H;
    for (int e = 0; e < L * looks->H; e++) {
        double mass[16];
        for (int b = 0; b < looks->bins; b++) mass[b] = looks->mass[(size_t)e * looks->bins + b] / images;
        const Reach r = reach_of(mass, looks->distance[e] / images);
        w->cls[e] = r.cls, w->window3[e] = r.window3, w->window5[e] = r.window5;
        w->distance[e] = r.distance;
    }
    w->uniform = uniform_reach(N, looks->side, looks->bins);
}

// [where_it_looks]
static void where_it_looks(Chapter *ch, Where *w, int side) {
    const int LH = w->L * w->H;
    const Reach u = w->uniform;
    ch_say(ch, "Section 5 asked where a trained model's attention really looks. The trace of "
               "vit_forward() holds every layer's probabilities (blocks.L.attn.probs); "
               "attention_by_distance() (lib/explain/attention_distance.c) sums each patch "
               "query's weights by how many rows or columns away each key patch lies, with "
               "[cls] apart. Averaged over the %d patch queries of the %d images, per "
               "layer and head: the share on [cls]; the share a 3 × 3 and a 5 × 5 window "
               "keep, [cls] included, as attention_local() keeps it; and the mean attention "
               "distance, the weighted distance in patches to the patches read (Dosovitskiy "
               "et al. 2021, figure 7). The last row is uniform attention over the same %d "
               "keys, each query's window cut off at the grid's edges as the model's is:",
           side * side, measured(), side * side + 1);
    ch_line(ch, "    %5s  %4s  %7s  %12s  %12s  %13s", "layer", "head", "[cls]", "3 × 3 keeps",
            "5 × 5 keeps", "mean distance");
    for (int l = 0; l < w->L; l++)
        for (int h = 0; h < w->H; h++) {
            const int e = l * w->H + h;
            ch_line(ch, "    %5d  %4d  %7.3f  %12.3f  %12.3f  %13.2f", l, h, w->cls[e],
                    w->window3[e], w->window5[e], w->distance[e]);
        }
    ch_line(ch, "    %-11s  %7.3f  %12.3f  %12.3f  %13.2f", "uniform", u.cls, u.window3, u.window5,
            u.distance);
    ch_line(ch, "%s", "");
    pin_row(ch, "looks.cls", w->cls, LH);
    pin_row(ch, "looks.window3", w->window3, LH);
    pin_row(ch, "looks.window5", w->window5, LH);
    pin_row(ch, "looks.distance", w->distance, LH);
    const float uniform[4] = {u.cls, u.window3, u.window5, u.distance};
    pin_row(ch, "looks.uniform", uniform, 4);
    w->local_heads = (int)ch_value(ch, "looks.local_heads",
                                   (float)count_at_least(w->window3, LH, LOCAL_TIMES, u.window3));
    ch_say(ch, "The patch queries put between %.3f and %.3f of their attention on [cls] "
               "(uniform: %.3f). The 3 × 3 window keeps between %.3f and %.3f of their attention (uniform: "
               "%.3f), the 5 × 5 window between %.3f and %.3f (uniform: %.3f), and the mean "
               "distance lies between %.2f and %.2f patches (uniform: %.2f).",
           min_of(w->cls, LH), max_of(w->cls, LH), u.cls, min_of(w->window3, LH),
           max_of(w->window3, LH), u.window3, min_of(w->window5, LH), max_of(w->window5, LH),
           u.window5, min_of(w->distance, LH), max_of(w->distance, LH), u.distance);
    // hardly local: no head is local, and none reads much nearer than uniform attention
    w->hardly_local = w->local_heads == 0 && min_of(w->distance, LH) >= NEAR_SHARE * u.distance;
    if (w->hardly_local)
        ch_verdict(ch, "No head keeps even %d× uniform's share in the 3 × 3 window, and the "
                   "nearest-looking head reads from %.2f patches away on average where uniform "
                   "attention reads from %.2f: this model is hardly local. Its heads read from "
                   "all over the %d × %d grid; distance does not say which patches they pick.",
               LOCAL_TIMES, min_of(w->distance, LH), u.distance, side, side);
    else if (w->local_heads == 0)
        ch_verdict(ch, "No head keeps even %d× uniform's share in the 3 × 3 window, but the "
                   "nearest-looking head reads from %.2f patches away on average where uniform "
                   "attention reads from %.2f: some heads lean towards nearby patches without "
                   "keeping to a window.", LOCAL_TIMES, min_of(w->distance, LH), u.distance);
    else
        ch_verdict(ch, "%d of the %d heads keep at least %d× uniform's share in the 3 × 3 window: "
                   "local heads, the kind a window suits; the others read from all over the "
                   "%d × %d grid.", w->local_heads, LH, LOCAL_TIMES, side, side);
}
// [where_it_looks]

static void trained_model(Chapter *ch) {
    if (!ch_section(ch, "7. Where the trained model looks, and what it expects")) return;
    Vit vit = {0};
    Dataset test = {0};
    VitError err;
    char path[1024];
    if (dataset_fashion_mnist_load(&test, NULL, "test", &err) != VIT_OK) {
        ch_verdict(ch, "Fashion-MNIST cannot be loaded (%s). Install Debian's "
                   "dataset-fashion-mnist (scripts/deps.sh does) and run the chapter again.",
               err.msg);
        return;
    }
    if (vit_build(&vit, vit_data_path(path, sizeof path, MODEL_FILE), &err) != VIT_OK) {
        ch_verdict(ch, "data/%s cannot be loaded (%s).", MODEL_FILE, err.msg);
        dataset_free(&test);
        return;
    }
    const VitConfig *c = &vit.config;
    const char *m = st_meta(&vit.file, "mean"), *s = st_meta(&vit.file, "std");
    const float mean = m ? (float)atof(m) : 0.2860f, std = s ? (float)atof(s) : 0.3530f;
    const int B = MEASURE_BATCH, N = vit_num_tokens(c), D = c->dim, Y = c->num_classes;
    Pass p;
    pass_init(&p, &vit, B);
    const int L = c->depth, H = c->heads, bins = attention_distance_bins(p.side, p.side);
    if (L * H > 64 || bins > 16) { // Where's arrays and where_of()'s bins
        ch_say(ch, "data/%s has more heads or patches than Section 7 measures.", MODEL_FILE);
        pass_free(&p), vit_free(&vit), dataset_free(&test);
        return;
    }
    Looks looks = {.embed = vit_malloc(sizeof(float) * (size_t)B * N * D),
                   .mass = calloc((size_t)L * H * bins, sizeof(double)),
                   .distance = calloc((size_t)L * H, sizeof(double)),
                   .one_mass = vit_malloc(sizeof(double) * (size_t)H * bins),
                   .one_dist = vit_malloc(sizeof(double) * (size_t)H),
                   .H = H, .side = p.side, .bins = bins};
    float *input = vit_malloc(sizeof(float) * (size_t)B * c->channels * c->image_size * c->image_size);
    float *logits = vit_malloc(sizeof(float) * (size_t)B * Y);
    int right[WITHS + 1] = {0}, agree[WITHS] = {0}, index[MEASURE_BATCH], labels[MEASURE_BATCH];
    float recipe_diff = 0;
    for (int first = 0; first < measured(); first += B) {
        for (int b = 0; b < B; b++) index[b] = first + b;
        dataset_batch(input, labels, &test, index, B, mean, std, NULL, NULL);
        const Tensor x = tensor_view(input, 4, B, c->channels, c->image_size, c->image_size);
        if (vit_forward(&vit, &x, looks_trace, &looks, &err) != VIT_OK) {
            ch_verdict(ch, "the pass failed: %s", err.msg);
            break;
        }
        const Tensor model = vit_logits(&vit);
        int pred[MEASURE_BATCH];
        for (int b = 0; b < B; b++) {
            pred[b] = argmax(model.data + (size_t)b * Y, Y);
            right[WITHS] += pred[b] == labels[b];
        }
        for (int with = 0; with < WITHS; with++) {
            pass_run(&p, looks.embed, (With)with, logits);
            if (with == WITH_EXACT)
                for (size_t e = 0; e < (size_t)B * Y; e++)
                    recipe_diff = fmaxf(recipe_diff, fabsf(logits[e] - model.data[e]));
            for (int b = 0; b < B; b++) {
                const int y = argmax(logits + (size_t)b * Y, Y);
                right[with] += y == labels[b];
                agree[with] += y == pred[b];
            }
        }
    }
    Where where;
    where_of(&where, &looks, L, measured(), N);
    where_it_looks(ch, &where, p.side);
    swapped(ch, &where, right, agree, recipe_diff, c, N, p.side);
    free(input), free(logits);
    free(looks.embed), free(looks.mass), free(looks.distance), free(looks.one_mass), free(looks.one_dist);
    pass_free(&p);
    vit_free(&vit);
    dataset_free(&test);
}

/* ------------------------------------------------------------ the chapter */

void chapter13_run(Chapter *ch) {
    ch_title(ch, "13", "Attention at scale");
    ch_say(ch, "Attention compares every token with every other: N tokens, N² scores per "
               "head. At 197 tokens that is nothing; on a bigger image it is most of the "
               "memory and the time. This chapter measures it, computes exact attention "
               "without ever holding the N × N matrix, and tries two cheaper attentions that "
               "are not exact.");
    const int threads = vit_get_threads();
    vit_set_threads(1); // one core: every method timed alike, none waiting for a busy thread
    Work w = {0};
    more_tokens(ch, &w);
    const int N_max = w.N[SIZES - 1];
    const size_t n = (size_t)N_max * DH;
    w.q = vit_malloc(sizeof(float) * n), w.k = vit_malloc(sizeof(float) * n);
    w.v = vit_malloc(sizeof(float) * n);
    w.scratch = vit_malloc(sizeof(float) * (size_t)N_max * N_max);
    Rng rng;
    rng_seed(&rng, (uint64_t)knobs[KNOB_SEED].value);
    rng_fill_normal(&rng, w.q, n, 0.0f, 1.0f);
    rng_fill_normal(&rng, w.k, n, 0.0f, 1.0f);
    rng_fill_normal(&rng, w.v, n, 0.0f, 1.0f);
    the_matrix(ch, &w);
    query_chunks(ch, &w);
    online(ch, &w);
    local(ch, &w);
    linear_attention(ch, &w);
    trained_model(ch);
    ch_section(ch, "What's next");
    ch_say(ch, "The two exact methods do the same N² work as the whole matrix: they save "
               "memory, not arithmetic. Chapter 14 makes the arithmetic itself fast, from the "
               "textbook loops to the best kernel it can measure, beside the peak on paper.");
    for (int i = 0; i < SIZES; i++) free(w.exact[i]);
    free(w.q), free(w.k), free(w.v), free(w.scratch);
    vit_set_threads(threads);
}

#ifndef CHAPTER_NO_MAIN
int main(int argc, char **argv) {
    return chapter_main_knobs(argc, argv, chapter13_run,
                              "Chapter 13: the N x N attention matrix's memory and time as "
                              "images grow; exact attention by query chunks and by the online "
                              "softmax; local-window and linear attention, their errors and "
                              "times; where the trained model's attention looks, and what they "
                              "do to it.",
                              knobs, KNOBS);
}
#endif
