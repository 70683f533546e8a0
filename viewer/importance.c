/**
 * @file importance.c
 * @brief The head-importance view's data and cursor (importance.h).
 *
 * Shape legend: L layers, H heads; the grid is (1, L, H), the layers' column (1, L).
 */
#include "importance.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

void importance_clear(ImportanceView *v) {
    head_importance_free(&v->grid);
    v->measured = v->shown = false;
}

static int clamp(int x, int lo, int hi) { return x < lo ? lo : x > hi ? hi : x; }

void importance_move(ImportanceView *v, int dl, int dh) {
    if (!v->measured) return;
    v->layer = clamp(v->layer + dl, 0, v->grid.layers - 1);
    v->head = clamp(v->head + dh, 0, v->grid.heads - 1);
}

void importance_cursor_most(ImportanceView *v) {
    if (v->measured) head_importance_most(&v->grid, 0, &v->layer, &v->head);
}

float importance_at(const ImportanceView *v, int layer, int head) {
    if (!v->measured) return NAN;
    return v->grid.delta[(size_t)layer * v->grid.heads + head];
}

float importance_extent(const ImportanceView *v) {
    if (!v->measured) return 0;
    const int L = v->grid.layers, H = v->grid.heads;
    float extent = 0;
    for (int i = 0; i < L * H; i++) extent = fmaxf(extent, fabsf(v->grid.delta[i]));
    for (int l = 0; l < L; l++) extent = fmaxf(extent, fabsf(v->grid.layer_delta[l]));
    return extent;
}

void importance_cell_text(char *buf, size_t size, float delta) {
    snprintf(buf, size, "%+.4f", (double)delta);
}

void importance_stage_name(char *buf, size_t size, int layer) {
    snprintf(buf, size, "blocks.%d.attn.probs", layer);
}
