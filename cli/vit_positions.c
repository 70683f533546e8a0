/**
 * @file vit_positions.c
 * @brief `vit positions`: what did the position embeddings learn? One
 *        patch position's cosine similarity with every other's, on the grid.
 *
 * The recipe: parse the flags → vit_build() the model →
 * position_similarity() of the chosen patch against every patch → print the
 * rows × cols grid. No picture: the embeddings are the same for every one.
 */
#include <stdio.h>
#include <stdlib.h>

#include "explain/position_similarity.h"
#include "vit_cli.h"

/** Everything the command line can say. */
typedef struct {
    const char *weights; // the model
    int row, col;        // --row, --col: the patch compared with the others
} PositionsArgs;

static const char description[] =
    "Prints the cosine similarity of one patch position's embedding (the row of\n"
    "pos_embed added to that patch's token) with every patch position's, as a grid\n"
    "of the patches, a row per grid row. It is 1 at the patch itself; in a trained\n"
    "ViT it is high along the patch's own row and column (the ViT paper's figure 7):\n"
    "the model learned the grid's shape from the pictures alone. The patch is\n"
    "--row, --col, counted from 0 at the top left (default: the centre).\n";

static const char examples[] =
    "  vit positions --weights data/models/vit-fashion.safetensors\n"
    "  vit positions --weights data/models/vit-fashion.safetensors --row 0 --col 6\n";

// The grid (rows × cols) of cosines with patch (row, col), a row per line.
static void print_grid(const float *sim, int side, int row, int col) {
    printf("cosine similarity of patch (%d, %d)'s position embedding with each patch's "
           "(row ↓, column →):\n", row, col);
    printf("     ");
    for (int x = 0; x < side; x++) printf(" %7d", x);
    printf("\n");
    for (int y = 0; y < side; y++) {
        printf("  %-3d", y);
        for (int x = 0; x < side; x++) printf(" %+7.4f", (double)sim[y * side + x]);
        printf("\n");
    }
}

static VitStatus positions(const PositionsArgs *a, bool row_given, bool col_given,
                           VitError *err) {
    Vit vit;
    VitStatus s = vit_build(&vit, a->weights, err);
    if (s != VIT_OK) return s;
    const VitConfig *c = &vit.config;
    const int side = c->image_size / c->patch_size, P = side * side;
    const int row = row_given ? a->row : side / 2, col = col_given ? a->col : side / 2;
    if (s == VIT_OK && (row >= side || col >= side))
        s = vit_fail(err, VIT_ERR_USAGE, "--row %d --col %d: the model's grid is %d×%d (0 to %d)",
                     row, col, side, side, side - 1);
    if (s == VIT_OK) {
        float *sim = vit_malloc(sizeof(float) * (size_t)P);
        position_similarity(sim, vit.weights.pos_embed, vit_num_tokens(c) - P, P, c->dim,
                            row * side + col);
        char safe[1024];
        printf("%s: position embeddings (N=%d, D=%d), patch grid %d×%d\n",
               vit_escape(safe, sizeof safe, a->weights), vit_num_tokens(c), c->dim, side, side);
        print_grid(sim, side, row, col);
        free(sim);
    }
    vit_free(&vit);
    return s;
}

/**
 * @brief `vit positions`: parse → build → one patch's cosines → print the grid.
 * @param[in] self        this command's row of the command table
 * @param[in] argc, argv  its command line, argv[0] = "positions"
 * @param[out] err        the message on failure
 * @return the exit status: VIT_OK, VIT_ERR_INPUT or VIT_ERR_USAGE
 */
VitStatus cmd_positions(const VitCommand *self, int argc, char **argv, VitError *err) {
    PositionsArgs a = {0};
    CliOption options[] = {
        {"--weights", CLI_STRING, &a.weights, "FILE",
         "the model: safetensors with timm, Hugging Face or torchvision names", .required = true},
        {"--row", CLI_INT, &a.row, "R", "the patch's grid row, from 0 at the top", .lo = 0,
         .hi = 100000, .required = false},
        {"--col", CLI_INT, &a.col, "C", "the patch's grid column, from 0 at the left", .lo = 0,
         .hi = 100000, .required = false},
    };
    CliSpec spec = {.command = self, .description = description, .examples = examples,
                    .options = options, .option_count = sizeof options / sizeof options[0]};
    bool help;
    VitStatus s = cli_parse(&spec, argc, argv, &help, err);
    if (s != VIT_OK || help) return s;
    return positions(&a, cli_given(&spec, "--row"), cli_given(&spec, "--col"), err);
}
