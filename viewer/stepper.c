/**
 * @file stepper.c
 * @brief Progress, run commands, breakpoints and the tree (see stepper.h).
 */
#include "stepper.h"
#include "base/util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const VitStage stepper_patches_stage = {
    "patches", false, "B,P,C·p·p", "unfold(x, p, stride p)",
    "the image cut into p×p patches, each flattened (the viewer cuts them itself)",
    "F.unfold(x, p, stride=p).transpose(1, 2)"};

const VitStage stepper_update_stage = {
    "optim.update", false, "", "Δθ = −η·m̂/(√v̂ + ε) − η·λ·θ",
    "AdamW's change to one parameter: the step from m and v, and the weight decay",
    "opt.step()"};

static void add_node(Stepper *s, const VitStage *stage, int block) {
    PipeNode *n = &s->nodes[s->count++];
    n->stage = stage;
    n->block = block;
    if (block >= 0) snprintf(n->name, sizeof n->name, "blocks.%d.%s", block, stage->name);
    else snprintf(n->name, sizeof n->name, "%s", stage->name);
}

// Breakpoints, blocks folded, nothing computed: the parts both passes' nodes share.
static void stepper_alloc_rest(Stepper *s) {
    s->breakpoints = vit_calloc((size_t)s->count, sizeof(bool));
    s->open = vit_calloc((size_t)(s->depth > 0 ? s->depth : 1), sizeof(bool));
    s->auto_open = -1;
    stepper_restart(s);
}

void stepper_init(Stepper *s, int depth) {
    memset(s, 0, sizeof *s);
    const int stages = vit_stage_count();
    s->depth = depth;
    s->nodes = vit_calloc((size_t)(stages * depth + 1), sizeof *s->nodes); // generous
    // the stage table lists block stages once, in one run: repeat that run per block
    for (int i = 0; i < stages; i++) {
        const VitStage *st = vit_stage_at(i);
        if (!st->per_block) {
            add_node(s, st, -1);
            if (strcmp(st->name, "input") == 0) add_node(s, &stepper_patches_stage, -1);
            continue;
        }
        int end = i;
        while (end < stages && vit_stage_at(end)->per_block) end++;
        for (int b = 0; b < depth; b++)
            for (int k = i; k < end; k++) add_node(s, vit_stage_at(k), b);
        i = end - 1;
    }
    stepper_alloc_rest(s);
}

void stepper_init_backward(Stepper *s, const Stepper *forward) {
    memset(s, 0, sizeof *s);
    s->depth = forward->depth;
    s->nodes = vit_calloc((size_t)forward->count, sizeof *s->nodes);
    for (int i = forward->count - 1; i >= 0; i--) { // the gradients flow from the logits back
        const PipeNode *f = &forward->nodes[i];
        if (f->stage == &stepper_patches_stage) continue; // the viewer's own: no gradient
        PipeNode *n = &s->nodes[s->count++];
        n->stage = f->stage;
        n->block = f->block;
        snprintf(n->name, sizeof n->name, VIT_GRAD_PREFIX "%.50s", f->name);
    }
    stepper_alloc_rest(s);
}

void stepper_init_train_step(Stepper *s, const Stepper *forward, const char *const *params,
                             int count) {
    Stepper backward;
    stepper_init_backward(&backward, forward);
    memset(s, 0, sizeof *s);
    s->depth = backward.depth;
    s->nodes = vit_calloc((size_t)(backward.count + count), sizeof *s->nodes);
    memcpy(s->nodes, backward.nodes, (size_t)backward.count * sizeof *s->nodes);
    s->count = backward.count;
    stepper_free(&backward);
    for (int i = 0; i < count; i++) { // outside the blocks' folds: one line each
        PipeNode *n = &s->nodes[s->count++];
        n->stage = &stepper_update_stage;
        n->block = -1;
        snprintf(n->name, sizeof n->name, "optim.update.%.42s", params[i]);
    }
    stepper_alloc_rest(s);
}

bool stepper_is_update(const PipeNode *n) { return n->stage == &stepper_update_stage; }

void stepper_free(Stepper *s) {
    free(s->nodes);
    free(s->breakpoints);
    free(s->open);
    memset(s, 0, sizeof *s);
}

int stepper_find(const Stepper *s, const char *name) {
    for (int i = 0; i < s->count; i++)
        if (strcmp(s->nodes[i].name, name) == 0) return i;
    return -1;
}

int stepper_block_first(const Stepper *s, int b) {
    for (int i = 0; i < s->count; i++)
        if (s->nodes[i].block == b) return i;
    return -1;
}

int stepper_block_last(const Stepper *s, int b) {
    for (int i = s->count - 1; i >= 0; i--)
        if (s->nodes[i].block == b) return i;
    return -1;
}

bool stepper_finished(const Stepper *s) { return s->done >= s->count; }

// `n`: the last stage of the block after the one the last computed node is in
// (the first block when the blocks have not started; the end once they are
// over). Blocks are found in node order, so the backward's run L-1 … 0.
static int next_block_target(const Stepper *s, int cur) {
    const int b = cur >= 0 ? s->nodes[cur].block : -1;
    for (int i = cur + 1; i < s->count; i++)
        if (s->nodes[i].block >= 0 && s->nodes[i].block != b)
            return stepper_block_last(s, s->nodes[i].block);
    return s->count - 1;
}

const char *stepper_command(Stepper *s, RunCommand cmd) {
    if (stepper_finished(s)) return "the forward pass has finished: r restarts it";
    const int cur = s->done - 1; // the last computed node
    switch (cmd) {
    case RUN_STEP: s->target = cur + 1; break;
    case RUN_NEXT_BLOCK: s->target = next_block_target(s, cur); break;
    case RUN_FINISH_BLOCK: {
        int b = s->nodes[cur + 1].block; // the block the next stage belongs to
        s->target = b >= 0 ? stepper_block_last(s, b) : cur + 1;
        break;
    }
    case RUN_CONTINUE: s->target = s->count - 1; break;
    }
    return NULL;
}

void stepper_pause(Stepper *s) { s->target = s->done; }

bool stepper_computed(Stepper *s, int node) {
    s->done = node + 1;
    return node >= s->target || s->breakpoints[node];
}

void stepper_stopped_at(Stepper *s, int node) {
    const int b = s->nodes[node].block;
    // keep the tree short: the block opened for the previous stop closes again
    if (s->auto_open >= 0 && s->auto_open != b) {
        s->open[s->auto_open] = false;
        s->auto_open = -1;
    }
    if (b >= 0 && !s->open[b]) {
        s->open[b] = true;
        s->auto_open = b;
    }
    s->selected = node;
    s->sel_header = false;
}

void stepper_restart(Stepper *s) {
    s->done = 0;
    s->target = 0; // stop at "input", the first thing vit_forward() shows
}

bool stepper_toggle_breakpoint(Stepper *s, int node) {
    if (node < 0 || node >= s->count) return false;
    s->breakpoints[node] = !s->breakpoints[node];
    return s->breakpoints[node];
}

int stepper_toggle_by_name(Stepper *s, const char *name, char *msg, size_t msg_size) {
    int node = stepper_find(s, name);
    if (node >= 0) {
        bool on = stepper_toggle_breakpoint(s, node);
        snprintf(msg, msg_size, "breakpoint %s %s", on ? "set on" : "cleared from", name);
        return 1;
    }
    // a block stage without its block: every block ("grad.attn.probs": every block's gradient)
    const char *asked = name;
    const bool grad = strncmp(name, VIT_GRAD_PREFIX, strlen(VIT_GRAD_PREFIX)) == 0;
    if (grad) name += strlen(VIT_GRAD_PREFIX);
    int matches = 0, set = 0;
    for (int i = 0; i < s->count; i++)
        if (s->nodes[i].block >= 0 && strcmp(s->nodes[i].stage->name, name) == 0) {
            matches++;
            set += s->breakpoints[i];
        }
    if (matches == 0) {
        snprintf(msg, msg_size, "no stage is called '%s' (e.g. blocks.0.attn.probs, attn.probs, "
                 "grad.attn.probs)", asked);
        return 0;
    }
    const bool on = set < matches; // all set: clear them; otherwise set them all
    for (int i = 0; i < s->count; i++)
        if (s->nodes[i].block >= 0 && strcmp(s->nodes[i].stage->name, name) == 0)
            s->breakpoints[i] = on;
    snprintf(msg, msg_size, "breakpoints %s %sblocks.*.%s (%d blocks)",
             on ? "set on" : "cleared from", grad ? VIT_GRAD_PREFIX : "", name, matches);
    return matches;
}

/* ------------------------------------------------------------------ tree */

int stepper_tree_rows(const Stepper *s, TreeRow *rows, int max) {
    int n = 0;
    for (int i = 0; i < s->count && n < max; i++) {
        const int b = s->nodes[i].block;
        if (b >= 0 && (i == 0 || s->nodes[i - 1].block != b))
            rows[n++] = (TreeRow){stepper_block_last(s, b), b, true};
        if (n < max && (b < 0 || s->open[b])) rows[n++] = (TreeRow){i, b, false};
    }
    return n;
}

int stepper_selected_row(const Stepper *s, const TreeRow *rows, int n) {
    const int b = s->nodes[s->selected].block;
    for (int i = 0; i < n; i++) {
        if (rows[i].header && rows[i].block == b && (s->sel_header || !s->open[b])) return i;
        if (!rows[i].header && rows[i].node == s->selected && !s->sel_header) return i;
    }
    return 0;
}

// The tree's lines in a buffer large enough for every node plus every header.
static TreeRow *tree_rows_alloc(const Stepper *s, int *n) {
    TreeRow *rows = vit_malloc((size_t)(s->count + s->depth) * sizeof *rows);
    *n = stepper_tree_rows(s, rows, s->count + s->depth);
    return rows;
}

void stepper_select_row(Stepper *s, int row) {
    int n;
    TreeRow *rows = tree_rows_alloc(s, &n);
    if (row < 0) row = 0;
    if (row >= n) row = n - 1;
    s->selected = rows[row].node;
    s->sel_header = rows[row].header;
    free(rows);
}

void stepper_move(Stepper *s, int delta) {
    int n;
    TreeRow *rows = tree_rows_alloc(s, &n);
    int row = stepper_selected_row(s, rows, n);
    free(rows);
    stepper_select_row(s, row + delta);
}

void stepper_move_node(Stepper *s, int delta) {
    int node = s->selected + delta;
    if (s->sel_header) { // from a header: into the block, or to the stage before it
        const int first = stepper_block_first(s, s->nodes[s->selected].block);
        node = delta > 0 ? first + delta - 1 : first + delta;
    }
    if (node < 0) node = 0;
    if (node >= s->count) node = s->count - 1;
    const int b = s->nodes[node].block;
    if (b >= 0) s->open[b] = true;
    s->selected = node;
    s->sel_header = false;
}

void stepper_set_open(Stepper *s, int b, bool open) {
    if (b < 0 || b >= s->depth) return;
    s->open[b] = open;
    if (s->auto_open == b) s->auto_open = -1; // the learner decided: leave it alone
    if (!open && s->nodes[s->selected].block == b) {
        s->selected = stepper_block_last(s, b);
        s->sel_header = true;
    }
}
