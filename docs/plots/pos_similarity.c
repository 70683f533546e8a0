/**
 * @file pos_similarity.c
 * @brief The points of the book's position-embedding picture: how alike the trained model's
 *        position vectors are, as in the ViT paper's figure 7.
 *
 *     pos_similarity WEIGHTS
 *
 * loads WEIGHTS with vit_build() and, for every patch position of its G × G
 * grid, the cosine similarity of its row of pos_embed with every other patch
 * position's row (the [cls] row left out), each with lib's dot(). Prints one
 * line "G r c i j cosine" per pair, for docs/plots/pos_similarity.gp, which
 * draws G × G tiles laid out as the grid: tile (r, c) holds the similarities of
 * position (r, c) with every position (i, j). Exit 1 when the model cannot be
 * read.
 */
#include <math.h>
#include <stdio.h>

#include "model/vit.h"
#include "ops/ops.h"

/** Prints the cosine similarity of every pair of the model's patch positions. */
int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: pos_similarity WEIGHTS\n");
        return 2;
    }
    Vit vit = {0};
    VitError err;
    if (vit_build(&vit, argv[1], &err) != VIT_OK) {
        fprintf(stderr, "pos_similarity: %s\n", err.msg);
        return 1;
    }
    const int G = vit.config.image_size / vit.config.patch_size, D = vit.config.dim;
    const float *pos = vit.weights.pos_embed + D; // row 0 is [cls]'s
    for (int r = 0; r < G; r++)         // tile (r, c): position (r, c) against the grid
        for (int c = 0; c < G; c++)
            for (int i = 0; i < G; i++)  // cell (i, j) of the tile: against position (i, j)
                for (int j = 0; j < G; j++) {
                    const float *a = pos + (size_t)(r * G + c) * D;
                    const float *b = pos + (size_t)(i * G + j) * D;
                    const double cosine = dot(a, b, D) / sqrt((double)dot(a, a, D) * dot(b, b, D));
                    printf("%d %d %d %d %d %.4f\n", G, r, c, i, j, cosine);
                }
    vit_free(&vit);
    return 0;
}
