/**
 * @file test_position_similarity.c
 * @brief Position similarity (lib/explain/position_similarity.c) by hand and
 *        on the shipped model, and `vit positions` printing lib's numbers.
 *
 *  - By hand: a vector's cosine with itself is 1, with an orthogonal one 0,
 *    with its opposite −1, with itself scaled 1; against a zero vector, 0;
 *    the prefix ([cls]) row is skipped.
 *  - On the shipped model (data/models/vit-fashion.safetensors, a 7 × 7
 *    grid): every patch is 1 with itself and at most 1 with any other, and
 *    the table is symmetric, within 1e-6.
 *  - `vit positions` prints lib's numbers, to the 4 decimals it shows, for
 *    the centre and a corner, and refuses a patch off the grid.
 */
#include <CUnit/CUnit.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "cli_run.h"
#include "explain/position_similarity.h"
#include "io/labels.h" // vit_data_path()
#include "model/vit.h"

enum { SIDE = 7, P = SIDE * SIDE, PATH_SIZE = 512 };

static void test_by_hand(void) {
    // a [cls] row, then 5 patches of width 3: a, a·2.5, −a, one orthogonal to a, zero
    const float pos[6 * 3] = {9, 9, 9, /**/ 1, 2, 2, /**/ 2.5f, 5, 5, /**/ -1, -2, -2,
                              /**/ 2, -1, 0, /**/ 0, 0, 0};
    float sim[5];
    position_similarity(sim, pos, 1, 5, 3, 0);
    CU_ASSERT_DOUBLE_EQUAL(sim[0], 1.0, 1e-7); // itself
    CU_ASSERT_DOUBLE_EQUAL(sim[1], 1.0, 1e-7); // scaled
    CU_ASSERT_DOUBLE_EQUAL(sim[2], -1.0, 1e-7);
    CU_ASSERT_DOUBLE_EQUAL(sim[3], 0.0, 1e-7);
    CU_ASSERT_EQUAL(sim[4], 0.0f); // a zero vector has no direction: 0, not NaN
    position_similarity(sim, pos, 1, 5, 3, 4); // from the zero vector: 0 everywhere
    for (int j = 0; j < 5; j++) CU_ASSERT_EQUAL(sim[j], 0.0f);
    // a 2-d example with a 45° angle: cos = 1/√2
    const float two[2 * 2] = {1, 0, 1, 1};
    position_similarity(sim, two, 0, 2, 2, 0);
    CU_ASSERT_DOUBLE_EQUAL(sim[1], 1 / sqrt(2.0), 1e-7);
}

static Vit shipped(void) {
    char path[PATH_SIZE];
    Vit vit;
    VitError err;
    vit_data_path(path, sizeof path, "models/vit-fashion.safetensors");
    CU_ASSERT_FATAL(vit_build(&vit, path, &err) == VIT_OK);
    CU_ASSERT_EQUAL_FATAL(vit.config.image_size / vit.config.patch_size, SIDE);
    CU_ASSERT_EQUAL_FATAL(vit_num_tokens(&vit.config), 1 + P);
    return vit;
}

static void test_shipped_model(void) {
    Vit vit = shipped();
    static float table[P][P];
    for (int q = 0; q < P; q++)
        position_similarity(table[q], vit.weights.pos_embed, 1, P, vit.config.dim, q);
    for (int q = 0; q < P; q++) {
        CU_ASSERT_DOUBLE_EQUAL(table[q][q], 1.0, 1e-6);
        for (int j = 0; j < P; j++) {
            CU_ASSERT(table[q][j] <= 1.0f + 1e-6f && table[q][j] >= -1.0f - 1e-6f);
            CU_ASSERT_DOUBLE_EQUAL(table[q][j], table[j][q], 1e-6);
        }
    }
    vit_free(&vit);
}

// The grid `vit positions` prints: after the column numbers, SIDE rows of "  ROW  v v v …".
static int parse_grid(const char *out, float *grid) {
    const char *line = strstr(out, "(row ↓, column →):\n");
    if (!line || !(line = strchr(line, '\n')) || !(line = strchr(line + 1, '\n'))) return 0;
    int n = 0;
    for (int y = 0; y < SIDE && line; y++, line = strchr(line + 1, '\n')) {
        int row, used;
        const char *p = line + 1;
        if (sscanf(p, "%d%n", &row, &used) != 1 || row != y) break;
        p += used;
        for (int x = 0; x < SIDE; x++, n++) {
            if (sscanf(p, "%f%n", &grid[y * SIDE + x], &used) != 1) return n;
            p += used;
        }
    }
    return n;
}

static void test_cli_prints_libs_numbers(void) {
    Vit vit = shipped();
    char model[PATH_SIZE];
    vit_data_path(model, sizeof model, "models/vit-fashion.safetensors");
    const struct { const char *row, *col; int q; } cases[] = {{NULL, NULL, 3 * SIDE + 3},
                                                             {"0", "6", 6}};
    for (int c = 0; c < 2; c++) {
        CliResult r = cases[c].row ? VIT_RUN("positions", "--weights", model, "--row", cases[c].row,
                                             "--col", cases[c].col)
                                   : VIT_RUN("positions", "--weights", model);
        if (r.status != 0) fprintf(stderr, "\n    %s", r.err);
        CU_ASSERT_EQUAL_FATAL(r.status, 0);
        float printed[P], sim[P];
        CU_ASSERT_EQUAL_FATAL(parse_grid(r.out, printed), P);
        position_similarity(sim, vit.weights.pos_embed, 1, P, vit.config.dim, cases[c].q);
        for (int j = 0; j < P; j++) CU_ASSERT_DOUBLE_EQUAL(printed[j], sim[j], 0.5e-4 + 1e-6);
        CU_ASSERT_DOUBLE_EQUAL(printed[cases[c].q], 1.0, 1e-9); // "+1.0000" at the patch
        cli_result_free(&r);
    }
    vit_free(&vit);
}

static void test_cli_refusals(void) {
    char model[PATH_SIZE];
    vit_data_path(model, sizeof model, "models/vit-fashion.safetensors");
    EXPECT_FAILURE(VIT_RUN("positions", "--weights", model, "--row", "7"), 2, "grid is 7×7");
    EXPECT_FAILURE(VIT_RUN("positions", "--weights", model, "--col", "-1"), 2, "--col");
    EXPECT_FAILURE(VIT_RUN("positions", "--weights", "no-such-model.safetensors"), 1,
                   "no-such-model.safetensors");
    EXPECT_FAILURE(VIT_RUN("positions"), 2, "--weights");
}

CU_TestInfo tests_position_similarity[] = {
    {"cosines by hand: itself 1, scaled 1, opposite −1, orthogonal 0, zero 0", test_by_hand},
    {"the shipped model: 1 on the diagonal, symmetric, within [−1, 1]", test_shipped_model},
    {"vit positions prints lib's numbers", test_cli_prints_libs_numbers},
    {"vit positions refuses a patch off the grid", test_cli_refusals},
    CU_TEST_INFO_NULL,
};
