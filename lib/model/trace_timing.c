/**
 * @file trace_timing.c
 * @brief The trace stopwatch: wall time per stage of a forward pass.
 */
#include "model/trace_timing.h"
#include "base/util.h"
#include "model/trace_stages.h"

#include <stdio.h>
#include <string.h>

// Index of a trace name's stage in vit_stage_at() order, or -1.
static int stage_index(const char *name) {
    const VitStage *stage = vit_stage_find(name, NULL);
    if (!stage) { // a block stage named by its suffix alone, "attn.probs"
        char full[96];
        snprintf(full, sizeof full, "blocks.0.%s", name);
        stage = vit_stage_find(full, NULL);
    }
    for (int i = 0; stage && i < vit_stage_count() && i < STAGE_CLOCK_MAX; i++)
        if (vit_stage_at(i) == stage) return i;
    return -1;
}

// [stage_clock_start]
void stage_clock_start(StageClock *clock, TraceFn next, void *next_user) {
    memset(clock, 0, sizeof *clock);
    clock->next = next;
    clock->next_user = next_user;
    clock->last = vit_now();
}
// [stage_clock_start]

// [stage_clock_trace]
void stage_clock_trace(void *user_clock, const char *name, const Tensor *t) {
    StageClock *clock = user_clock;
    const double now = vit_now();
    const int i = stage_index(name);
    if (i >= 0) clock->seconds[i] += now - clock->last;
    if (clock->next) clock->next(clock->next_user, name, t);
    clock->last = vit_now(); // the listener's own work is not charged to the next stage
}
// [stage_clock_trace]

// [stage_clock_seconds]
double stage_clock_seconds(const StageClock *clock, const char *stage) {
    const int i = stage_index(stage);
    return i >= 0 ? clock->seconds[i] : 0.0;
}
// [stage_clock_seconds]
