/**
 * @file history.c
 * @brief Copies of computed stages under a memory budget (see history.h).
 */
#include "history.h"
#include "model/trace_stages.h"
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void history_init(History *h, int count, size_t budget, int pinned) {
    memset(h, 0, sizeof *h);
    h->entries = vit_calloc((size_t)count, sizeof *h->entries);
    h->count = count;
    h->budget = budget;
    h->pinned = pinned;
}

void history_clear(History *h) {
    for (int i = 0; i < h->count; i++) {
        tensor_free(&h->entries[i].t);
        memset(&h->entries[i], 0, sizeof h->entries[i]);
    }
    h->held = 0;
    h->clock = 0;
}

void history_free(History *h) {
    if (h->entries) history_clear(h);
    free(h->entries);
    memset(h, 0, sizeof *h);
}

static size_t tensor_bytes(const Tensor *t) { return t->numel * sizeof(float); }

// Drop the values of the oldest droppable copy; false when there is none.
static bool drop_oldest(History *h) {
    int oldest = -1;
    for (int i = 0; i < h->count; i++) {
        const HistEntry *e = &h->entries[i];
        if (!e->kept || i == h->pinned) continue;
        if (oldest < 0 || e->order < h->entries[oldest].order) oldest = i;
    }
    if (oldest < 0) return false;
    HistEntry *e = &h->entries[oldest];
    h->held -= tensor_bytes(&e->t);
    free(e->t.data); // keep the shape for the info pane
    e->t.data = NULL;
    e->t.owns_data = false;
    e->kept = false;
    return true;
}

void history_record(History *h, int node, const Tensor *t, double seconds) {
    if (node < 0 || node >= h->count) return;
    HistEntry *e = &h->entries[node];
    if (e->kept) h->held -= tensor_bytes(&e->t);
    tensor_free(&e->t);
    e->recorded = true;
    e->stats = tensor_stats(t);
    e->seconds = seconds;
    e->order = h->clock++;
    const size_t bytes = tensor_bytes(t);
    const bool fits = bytes <= h->budget;
    if (fits)
        while (h->held + bytes > h->budget && drop_oldest(h)) {}
    if ((fits && h->held + bytes <= h->budget) || node == h->pinned) {
        e->t = tensor_clone(t);
        e->kept = true;
        h->held += bytes;
    } else { // larger than the whole budget: statistics only
        e->t = *t;
        e->t.data = NULL;
        e->t.owns_data = false;
        e->kept = false;
    }
}

const HistEntry *history_get(const History *h, int node) {
    if (node < 0 || node >= h->count || !h->entries[node].recorded) return NULL;
    return &h->entries[node];
}

size_t history_bytes_for(const VitConfig *cfg, size_t *per_block) {
    size_t block = 0;
    for (int i = 0; i < vit_stage_count(); i++) {
        const VitStage *st = vit_stage_at(i);
        char name[64];
        if (st->per_block)
            block += (size_t)vit_stage_bytes(cfg, 1, vit_stage_name(name, sizeof name, st, 0));
    }
    // the whole trace, plus "patches" (the viewer's own node), as large as the input
    size_t total = (size_t)vit_trace_bytes(cfg, 1) +
                   (size_t)cfg->channels * cfg->image_size * cfg->image_size * sizeof(float);
    if (per_block) *per_block = block;
    return total;
}
