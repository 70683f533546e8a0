/**
 * @file 01_dot_product.c
 * @brief Chapter 01 · The dot product: how a transformer measures similarity.
 *
 * The whole of attention starts with one question asked many times: how
 * similar are these two vectors? The answer is the dot product
 * \f[ a \cdot b = \sum_i a_i b_i = |a|\,|b|\cos\theta . \f]
 * This chapter computes it for two small vectors, reads its geometry (length
 * and angle), shows that a matrix product is a table of dot products, and
 * ends with a first score matrix \f$ Q K^\top \f$ for four tokens (lib's
 * matmul_bt(): timm's `q @ k.transpose(-2, -1)`, MindSpore's
 * `ops.BatchMatMul(transpose_b=True)`).
 *
 * Every number printed is pinned by name and checked against PyTorch by
 * tests/test_ch01_dot_product.c.
 *
 * Run: `build/chapters/01_dot_product`
 */
#include <math.h>
#include <string.h>

#include "teach/chapter.h"
#include "chapters.h"
#include "gemm/gemm.h"
#include "ops/ops.h"
#include "base/rng.h"
#include "base/tensor.h"

enum {
    TOKENS = 4,  // tokens in the Q·Kᵀ example
    WIDTH = 8,   // Dh: entries per query and key vector
};
static const uint64_t QK_SEED = 1; // Q then K are drawn from this stream

/* ------------------------------------------------------------ helpers */

// Pin and print a short vector under `name`.
static void show_vector(Chapter *ch, const char *name, float *v, int n) {
    Tensor t = tensor_view(v, 1, n);
    ch_show(ch, name, &t);
}

// The length |v| = √(v·v). Computed in double so that the angles below stay
// exact for parallel vectors (acos is very steep near ±1).
static double length(const float *v, int n) {
    return sqrt((double)dot(v, v, n));
}

// cos θ = a·b / (|a| |b|), clamped to [-1, 1] against rounding.
static double cosine(const float *a, const float *b, int n) {
    double c = (double)dot(a, b, n) / (length(a, n) * length(b, n));
    return c > 1 ? 1 : c < -1 ? -1 : c;
}

static double degrees(double radians) { return radians * 180.0 / M_PI; }

// A (rows, cols) tensor of standard normal numbers, one vector per row.
static Tensor random_rows(Rng *rng, int rows, int cols) {
    Tensor t = tensor_new(2, rows, cols);
    rng_fill_normal(rng, t.data, t.numel, 0.0f, 1.0f);
    return t;
}

/* ----------------------------------------------------------- sections */

static void two_vectors(Chapter *ch) {
    if (!ch_section(ch, "1. Two vectors, one number")) return;
    ch_say(ch, "A transformer decides how much one token should listen to another by "
               "comparing two vectors of numbers. The comparison it uses is the dot "
               "product: multiply the vectors entry by entry and add up the products.");
    ch_line(ch, "    a · b = a₁b₁ + a₂b₂ + a₃b₃ + …   (one product per entry)");
    ch_line(ch, "%s", "");

    // [dot]
    float a[3] = {1, 2, 3};
    float b[3] = {4, -5, 6};
    float ab = dot(a, b, 3); // 1×4 + 2×(-5) + 3×6
    // [dot]
    show_vector(ch, "a", a, 3);
    show_vector(ch, "b", b, 3);
    ch_value(ch, "dot_a_b", ab);
    ch_line(ch, "    a · b = %g×%g + %g×(%g) + %g×%g = %g", a[0], b[0], a[1], b[1], a[2], b[2], ab);
    ch_line(ch, "%s", "");
    ch_say(ch, "One number comes out, however long the vectors are. It is large and "
               "positive when the two vectors have big entries of the same sign in the "
               "same places, negative when their signs disagree, and near zero when "
               "they have nothing in common. Here the middle entries disagree "
               "(2 against -5) and pull the total down to %g.", ab);
}

static void length_and_angle(Chapter *ch) {
    float a[3] = {1, 2, 3};
    float b[3] = {4, -5, 6};
    if (!ch_section(ch, "2. Length and angle")) return;
    ch_say(ch, "The dot product has a geometric meaning. A vector's length is the "
               "square root of its dot product with itself, |a| = √(a·a), and for any "
               "two vectors");
    ch_line(ch, "    a · b = |a| |b| cos θ");
    ch_line(ch, "%s", "");
    ch_say(ch, "where θ is the angle between them. So the dot product mixes two things: "
               "how long the vectors are, and how closely they point the same way. "
               "Dividing out the lengths leaves the cosine, a pure measure of direction "
               "between -1 and 1.");

    // [geometry]
    double len_a = length(a, 3), len_b = length(b, 3); // |v| = √(v · v)
    double cos_theta = cosine(a, b, 3);                // a · b / (|a| |b|)
    double theta = degrees(acos(cos_theta));
    // [geometry]
    float norm_a = ch_value(ch, "norm_a", (float)len_a);
    float norm_b = ch_value(ch, "norm_b", (float)len_b);
    float cos_ab = ch_value(ch, "cos_a_b", (float)cos_theta);
    float angle_ab = ch_value(ch, "angle_a_b", (float)theta);
    ch_say(ch, "For our a and b:");
    ch_line(ch, "    |a| = √(a · a) = %.4f      |b| = √(b · b) = %.4f", norm_a, norm_b);
    ch_line(ch, "    cos θ = a · b / (|a| |b|) = %g / (%.4f × %.4f) = %.4f", dot(a, b, 3), norm_a,
            norm_b, cos_ab);
    ch_line(ch, "    θ = acos(%.4f) = %.1f degrees", cos_ab, angle_ab);
    ch_line(ch, "%s", "");

    ch_say(ch, "Three partners for a show the extremes. Twice a points the same way "
               "(θ = 0, cos θ = 1), c = [3, 0, -1] is at a right angle to a "
               "(orthogonal: the products 3, 0 and -3 cancel), and -a points exactly "
               "the other way (θ = 180 degrees):");

    // The partners, built with lib's ops_scale() where they derive from a.
    // [partners]
    float twice_a[3], neg_a[3], c[3] = {3, 0, -1};
    ops_scale(twice_a, a, 2.0f, 3);
    ops_scale(neg_a, a, -1.0f, 3);
    // [partners]
    const struct {
        const char *key;   // used in the pinned names, e.g. "dot_a_c"
        const char *label; // shown in the table
        const float *v;
    } partners[] = {
        {"b", "b  = [4, -5, 6]", b},
        {"twice_a", "2a = [2, 4, 6]", twice_a},
        {"c", "c  = [3, 0, -1]", c},
        {"neg_a", "-a = [-1, -2, -3]", neg_a},
    };
    ch_line(ch, "    partner v              a · v     cos θ   θ (degrees)");
    for (size_t i = 0; i < sizeof partners / sizeof partners[0]; i++) {
        char name[3][32];
        snprintf(name[0], sizeof name[0], "dot_a_%s", partners[i].key);
        snprintf(name[1], sizeof name[1], "cos_a_%s", partners[i].key);
        snprintf(name[2], sizeof name[2], "angle_a_%s", partners[i].key);
        // "dot_a_b", "cos_a_b" and "angle_a_b" were pinned above: print them only
        bool fresh = strcmp(partners[i].key, "b") != 0;
        float av = dot(a, partners[i].v, 3);
        double cs = cosine(a, partners[i].v, 3);
        float deg = (float)degrees(acos(cs));
        if (fresh) {
            av = ch_value(ch, name[0], av);
            ch_value(ch, name[1], (float)cs);
            deg = ch_value(ch, name[2], deg);
        }
        ch_line(ch, "    %-20s %8.2f %9.4f %10.1f", partners[i].label, av, (float)cs, deg);
    }
    ch_line(ch, "%s", "");
    ch_say(ch, "Notice that a · 2a is twice a · a: the dot product grows with length, "
               "the cosine does not. Attention uses the raw dot product, so long "
               "vectors shout louder. Chapter 02 shows why that forces a rescaling.");
}

static void matrix_product(Chapter *ch) {
    if (!ch_section(ch, "3. A matrix product is many dot products")) return;
    ch_say(ch, "Multiplying a matrix A of shape (rows, inner) by a matrix B of shape "
               "(inner, cols) gives a (rows, cols) matrix C whose entry C[i][j] is the "
               "dot product of row i of A with column j of B. One matrix product is "
               "rows × cols dot products of length inner, done in one call.");

    // [matmul]
    float A[2 * 3] = {1, 2, 3,
                      4, 5, 6};   // (2, 3)
    float B[3 * 2] = {1, 0,
                      0, 1,
                      1, -1};     // (3, 2)
    float C[2 * 2];               // (2, 2)
    matmul(C, A, B, 2, 3, 2);
    // [matmul]
    Tensor tA = tensor_view(A, 2, 2, 3), tB = tensor_view(B, 2, 3, 2), tC = tensor_view(C, 2, 2, 2);
    ch_show(ch, "A", &tA);
    ch_show(ch, "B", &tB);
    ch_show(ch, "C", &tC);

    // Check one entry by hand: row 1 of A against column 0 of B.
    float column0[3] = {B[0 * 2 + 0], B[1 * 2 + 0], B[2 * 2 + 0]};
    float c10 = ch_value(ch, "c10_by_dot", dot(&A[1 * 3], column0, 3));
    ch_say(ch, "Check one entry with dot(): row 1 of A against column 0 of B gives "
               "C[1][0].");
    ch_line(ch, "    [%g, %g, %g] · [%g, %g, %g] = %g", A[3], A[4], A[5], column0[0], column0[1],
            column0[2], c10);
    ch_line(ch, "%s", "");
    ch_say(ch, "Often both matrices hold vectors as rows, like a list of tokens. Then "
               "we want every row of A against every row of B, which is A times the "
               "transpose of B, written A·Bᵀ. lib/gemm/gemm.h provides it as matmul_bt() "
               "(PyTorch writes a @ b.transpose(-2, -1)), and it is exactly the "
               "product attention needs next.");
}

static void first_scores(Chapter *ch) {
    if (!ch_section(ch, "4. A first look at Q·Kᵀ")) return;
    ch_say(ch, "In attention every token carries two vectors: a query (what it is "
               "looking for) and a key (what it offers). How much token i attends to "
               "token j starts from the score q_i · k_j. When the queries and the keys "
               "(and the values of Chapter 04) are all computed from the same tokens, "
               "as in every block of a Vision Transformer, this is called "
               "self-attention: the tokens attend to each other. Here are random "
               "queries and keys for %d tokens, each a vector of width Dh = %d (the "
               "book's letter for the width of a query or key), stored one vector per "
               "row.",
           TOKENS, WIDTH);

    Rng rng;
    rng_seed(&rng, QK_SEED);
    // [scores]
    Tensor Q = random_rows(&rng, TOKENS, WIDTH);   // (4, 8), one query per row
    Tensor K = random_rows(&rng, TOKENS, WIDTH);   // (4, 8), one key per row
    Tensor scores = tensor_new(2, TOKENS, TOKENS); // (4, 4): scores[i][j] = q_i · k_j
    matmul_bt(scores.data, Q.data, K.data, TOKENS, WIDTH, TOKENS); // Q·Kᵀ
    // [scores]
    ch_show(ch, "Q", &Q);
    ch_show(ch, "K", &K);
    ch_say(ch, "One call to matmul_bt(Q, K) computes all %d × %d scores at once (timm "
               "writes q @ k.transpose(-2, -1), MindSpore "
               "ops.BatchMatMul(transpose_b=True)(q, k)). Row i holds query i against "
               "every key:", TOKENS, TOKENS);
    ch_show(ch, "scores", &scores);

    const float *q2 = &Q.data[2 * WIDTH], *k1 = &K.data[1 * WIDTH]; // rows 2 of Q and 1 of K
    float s21 = ch_value(ch, "score_2_1_by_dot", dot(q2, k1, WIDTH));
    ch_say(ch, "Each entry really is a dot product: dot(q_2, k_1) = %.4f, which is "
               "the entry in row 2, column 1.", s21);

    // Which key does each query score highest?
    // [best_key]
    Tensor best_key = tensor_new(1, TOKENS), best_score = tensor_new(1, TOKENS);
    for (int i = 0; i < TOKENS; i++) {
        int j;
        ops_top_k(&j, 1, &scores.data[i * TOKENS], TOKENS); // the largest, the first on ties
        best_key.data[i] = (float)j;
        best_score.data[i] = scores.data[i * TOKENS + j];
    }
    // [best_key]
    ch_pin(ch, "best_key", &best_key);
    ch_pin(ch, "best_score", &best_score);
    ch_say(ch, "Reading along each row tells us which key each query likes most:");
    for (int i = 0; i < TOKENS; i++)
        ch_line(ch, "    query %d likes key %d most (score %7.4f)", i, (int)best_key.data[i],
                best_score.data[i]);
    ch_line(ch, "%s", "");
    int other = 0; // the first query whose favourite key is not its own
    while (other < TOKENS - 1 && (int)best_key.data[other] == other) other++;
    ch_say(ch, "These vectors are random, so the preferences mean nothing yet; in a "
               "trained model the queries and keys are learned so that the right tokens "
               "find each other. Three things are already visible. A token need not "
               "like itself best: query %d prefers key %d. The scores are not "
               "symmetric: scores[0][1] is %.4f but scores[1][0] is %.4f, because "
               "q_i · k_j and q_j · k_i use different vectors. And the scores are raw "
               "numbers of any size; nothing yet turns them into weights that add up "
               "to one.",
           other, (int)best_key.data[other], scores.data[0 * TOKENS + 1],
           scores.data[1 * TOKENS + 0]);

    tensor_free(&Q);
    tensor_free(&K);
    tensor_free(&scores);
    tensor_free(&best_key);
    tensor_free(&best_score);
}

static void whats_next(Chapter *ch) {
    if (!ch_section(ch, "What's next")) return;
    ch_say(ch, "The scores above came from vectors of width Dh = %d. ViT-Base uses "
               "Dh = 64 per attention head, and the scores get bigger as the vectors "
               "get longer. Chapter 02 measures exactly how much bigger, and why "
               "attention divides every score by √Dh before using it.", WIDTH);
}

void chapter01_run(Chapter *ch) {
    ch_title(ch, "01", "The dot product");
    ch_say(ch, "Attention, the heart of a Vision Transformer, is built from one "
               "operation repeated millions of times: the dot product of two vectors. "
               "This chapter takes it apart.");
    two_vectors(ch);
    length_and_angle(ch);
    matrix_product(ch);
    first_scores(ch);
    whats_next(ch);
}

#ifndef CHAPTER_NO_MAIN
int main(int argc, char **argv) {
    return chapter_main(argc, argv, chapter01_run,
                        "Chapter 01: the dot product, its geometry, and a first Q·Kᵀ.");
}
#endif
