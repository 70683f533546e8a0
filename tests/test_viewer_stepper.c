/**
 * @file test_viewer_stepper.c
 * @brief The viewer's debugger logic on a recorded trace: where `s`, `n`, `f`,
 *        `c` and breakpoints stop, restart, the tree (viewer/stepper.h), and
 *        the history of copies under its memory budget (viewer/history.h).
 */
#include <CUnit/CUnit.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "../viewer/history.h"
#include "../viewer/stepper.h"
#include "model/vit.h"
#include "train/step_view.h"

/* A recorded trace of a tiny model (2 blocks), fed back name by name as
 * vit_forward() would: the viewer adds "patches" right after "input". */
typedef struct {
    TraceRecorder rec;
    int next; // next trace entry to feed
    bool patches_due;
} Replay;

// A tiny model: 2 blocks of 2 heads, width 8, on 32×32 RGB pictures of 4 patches.
static const VitConfig tiny = {.image_size = 32, .patch_size = 16, .channels = 3, .dim = 8,
                               .depth = 2, .heads = 2, .mlp_dim = 16, .num_classes = 5,
                               .ln_eps = 1e-6f};

static Replay record_tiny_trace(void) {
    const VitInit init = vit_init_timm(1);
    Vit vit;
    VitError err;
    Replay r = {0};
    CU_ASSERT_EQUAL_FATAL(vit_build_random(&vit, &tiny, &init, &err), VIT_OK);
    Tensor input = tensor_new(4, 1, 3, 32, 32);
    CU_ASSERT_EQUAL(vit_forward(&vit, &input, trace_record, &r.rec, &err), VIT_OK);
    tensor_free(&input);
    vit_free(&vit);
    return r;
}

// Feed stages until the stepper says stop; returns the node stopped at, or -1 at the end.
static int run_until_stop(Stepper *s, Replay *r) {
    for (;;) {
        const char *name;
        if (r->patches_due) name = "patches", r->patches_due = false;
        else if (r->next < r->rec.count) name = r->rec.entries[r->next++].name;
        else return -1;
        if (strcmp(name, "input") == 0) r->patches_due = true;
        int node = stepper_find(s, name);
        CU_ASSERT_EQUAL(node, s->done); // every stage arrives, in order
        if (stepper_computed(s, node)) {
            stepper_stopped_at(s, node);
            return node;
        }
    }
}

static const char *stop_name(Stepper *s, Replay *r, RunCommand cmd) {
    CU_ASSERT_PTR_NULL(stepper_command(s, cmd));
    int node = run_until_stop(s, r);
    return node < 0 ? "(end)" : s->nodes[node].name;
}

static void test_nodes_follow_the_trace(void) {
    Replay r = record_tiny_trace();
    Stepper s;
    stepper_init(&s, 2);
    CU_ASSERT_EQUAL(s.count, 8 + 15 * 2);
    CU_ASSERT_EQUAL(r.rec.count + 1, s.count); // the trace plus "patches"
    CU_ASSERT_STRING_EQUAL(s.nodes[0].name, "input");
    CU_ASSERT_STRING_EQUAL(s.nodes[1].name, "patches");
    CU_ASSERT_STRING_EQUAL(s.nodes[5].name, "blocks.0.norm1");
    CU_ASSERT_STRING_EQUAL(s.nodes[s.count - 1].name, "logits");
    for (int i = 0, node = 0; i < r.rec.count; i++, node++) {
        if (node == 1) node++; // skip "patches"
        CU_ASSERT_STRING_EQUAL(s.nodes[node].name, r.rec.entries[i].name);
    }
    CU_ASSERT_EQUAL(stepper_block_first(&s, 1), 5 + 15);
    CU_ASSERT_EQUAL(stepper_block_last(&s, 1), 5 + 30 - 1);
    CU_ASSERT_EQUAL(stepper_find(&s, "blocks.1.attn.probs"), 20 + 6);
    CU_ASSERT_EQUAL(stepper_find(&s, "blocks.2.attn.probs"), -1);
    Stepper base;
    stepper_init(&base, 12);
    CU_ASSERT_EQUAL(base.count, 188); // ViT-B/16: 187 traced stages + patches
    stepper_free(&base);
    stepper_free(&s);
    trace_recorder_free(&r.rec);
}

// The tiny model's backward pass, recorded: grad.logits … grad.input.
static Replay record_tiny_backward(void) {
    const VitInit init = vit_init_timm(1);
    Vit vit;
    VitGrads grads;
    VitError err;
    Replay r = {0};
    CU_ASSERT_EQUAL_FATAL(vit_build_random(&vit, &tiny, &init, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(vit_train_prepare(&vit, VIT_KEEP_INPUTS, 1, &err), VIT_OK);
    Tensor input = tensor_new(4, 1, 3, 32, 32);
    CU_ASSERT_EQUAL(vit_forward(&vit, &input, NULL, NULL, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(vit_grads_init(&grads, &vit, &err), VIT_OK);
    const float dlogits[5] = {0, 0, 1, 0, 0};
    CU_ASSERT_EQUAL(vit_backward(&vit, &grads, dlogits, trace_record, &r.rec, &err), VIT_OK);
    vit_grads_free(&grads);
    tensor_free(&input);
    vit_free(&vit);
    return r;
}

// The backward's nodes are the gradients vit_backward() emits, in its order,
// and n / f walk its blocks from the last to the first.
static void test_backward_nodes_and_blocks(void) {
    Replay r = record_tiny_backward();
    Stepper f, s;
    stepper_init(&f, 2);
    stepper_init_backward(&s, &f);
    CU_ASSERT_EQUAL(s.count, f.count - 1); // every stage but the viewer's own "patches"
    CU_ASSERT_EQUAL_FATAL(r.rec.count, s.count);
    for (int i = 0; i < s.count; i++) CU_ASSERT_STRING_EQUAL(s.nodes[i].name, r.rec.entries[i].name);
    CU_ASSERT_STRING_EQUAL(s.nodes[0].name, "grad.logits");
    CU_ASSERT_STRING_EQUAL(s.nodes[s.count - 1].name, "grad.input");
    CU_ASSERT_EQUAL(s.nodes[stepper_find(&s, "grad.blocks.1.out")].block, 1);
    CU_ASSERT_EQUAL(run_until_stop(&s, &r), 0); // paused at grad.logits
    CU_ASSERT_STRING_EQUAL(stop_name(&s, &r, RUN_NEXT_BLOCK), "grad.blocks.1.norm1");
    CU_ASSERT_STRING_EQUAL(stop_name(&s, &r, RUN_STEP), "grad.blocks.0.out");
    CU_ASSERT_STRING_EQUAL(stop_name(&s, &r, RUN_FINISH_BLOCK), "grad.blocks.0.norm1");
    CU_ASSERT_STRING_EQUAL(stop_name(&s, &r, RUN_NEXT_BLOCK), "grad.input"); // none left: the end
    CU_ASSERT_TRUE(stepper_finished(&s));
    // breakpoints by name: a gradient's, and every block's gradient of a stage
    char msg[160];
    CU_ASSERT_EQUAL(stepper_toggle_by_name(&s, "grad.blocks.0.attn.probs", msg, sizeof msg), 1);
    CU_ASSERT_TRUE(s.breakpoints[stepper_find(&s, "grad.blocks.0.attn.probs")]);
    CU_ASSERT_EQUAL(stepper_toggle_by_name(&s, "grad.attn.q", msg, sizeof msg), 2);
    CU_ASSERT_STRING_EQUAL(msg, "breakpoints set on grad.blocks.*.attn.q (2 blocks)");
    CU_ASSERT_EQUAL(stepper_toggle_by_name(&s, "grad.nothing", msg, sizeof msg), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "'grad.nothing'"));
    stepper_free(&s);
    stepper_free(&f);
    trace_recorder_free(&r.rec);
}

// A training step's debugger: its trace (train_step_view_run() on a small
// run of Fashion-MNIST images) is the forward's nodes, then the second half's:
// the backward's, then "optim.update." + each parameter, in the optimizer's order.
static void test_training_step_nodes(void) {
    const VitConfig small = {.image_size = 28, .patch_size = 7, .channels = 1, .dim = 8,
                             .depth = 2, .heads = 2, .mlp_dim = 16, .num_classes = 10,
                             .ln_eps = 1e-6f};
    Dataset d;
    Trainer t;
    TrainStepView v;
    VitError err;
    TrainConfig c = train_defaults();
    c.epochs = 1, c.batch = 4, c.warmup_epochs = 0;
    CU_ASSERT_EQUAL_FATAL(dataset_fashion_mnist_load_first(&d, NULL, "train", 8, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(trainer_init(&t, &small, &c, &d, &err), VIT_OK);
    CU_ASSERT_EQUAL_FATAL(train_step_view_open(&v, &t, &err), VIT_OK);
    Replay r = {0};
    CU_ASSERT_EQUAL_FATAL(train_step_view_run(&v, trace_record, &r.rec, &err), VIT_OK);
    const char **names = vit_malloc((size_t)v.copy.opt.count * sizeof *names);
    for (int i = 0; i < v.copy.opt.count; i++) names[i] = v.copy.opt.params[i].name;
    Stepper f, s;
    stepper_init(&f, small.depth);
    stepper_init_train_step(&s, &f, names, v.copy.opt.count);
    CU_ASSERT_EQUAL_FATAL(r.rec.count, (f.count - 1) + s.count); // all but the viewer's "patches"
    const int first = f.count - 1;
    for (int i = 0; i < s.count; i++) CU_ASSERT_STRING_EQUAL(s.nodes[i].name, r.rec.entries[first + i].name);
    CU_ASSERT_STRING_EQUAL(s.nodes[0].name, "grad.logits");
    const int last = s.count - 1, updates = s.count - v.copy.opt.count;
    CU_ASSERT_STRING_EQUAL(s.nodes[updates].name, "optim.update.cls_token");
    CU_ASSERT_STRING_EQUAL(s.nodes[last].name, "optim.update.head.bias");
    CU_ASSERT_TRUE(stepper_is_update(&s.nodes[last]) && !stepper_is_update(&s.nodes[updates - 1]));
    CU_ASSERT_EQUAL(s.nodes[stepper_find(&s, "optim.update.blocks.1.mlp.fc1.weight")].block, -1);
    TreeRow rows[256];
    int outside = 0; // the nodes outside the blocks: the updates among them
    for (int i = 0; i < s.count; i++) outside += s.nodes[i].block < 0;
    CU_ASSERT_EQUAL(outside, (updates - 15 * small.depth) + v.copy.opt.count);
    CU_ASSERT_EQUAL(stepper_tree_rows(&s, rows, 256), outside + small.depth); // blocks folded
    r.next = first; // the second half, fed as the debugger hears it
    CU_ASSERT_EQUAL(run_until_stop(&s, &r), 0); // paused at grad.logits
    CU_ASSERT_PTR_NULL(stepper_command(&s, RUN_CONTINUE));
    CU_ASSERT_EQUAL(run_until_stop(&s, &r), last);
    CU_ASSERT_TRUE(stepper_finished(&s));
    free(names);
    stepper_free(&s);
    stepper_free(&f);
    trace_recorder_free(&r.rec);
    train_step_view_free(&v);
    trainer_free(&t);
    dataset_free(&d);
}

static void test_step_next_finish(void) {
    Replay r = record_tiny_trace();
    Stepper s;
    stepper_init(&s, 2);
    CU_ASSERT_EQUAL(run_until_stop(&s, &r), 0); // the pass starts paused at the input
    CU_ASSERT_STRING_EQUAL(stop_name(&s, &r, RUN_STEP), "patches");
    CU_ASSERT_STRING_EQUAL(stop_name(&s, &r, RUN_STEP), "patch_embed");
    CU_ASSERT_STRING_EQUAL(stop_name(&s, &r, RUN_NEXT_BLOCK), "blocks.0.out");
    CU_ASSERT_STRING_EQUAL(stop_name(&s, &r, RUN_STEP), "blocks.1.norm1");
    CU_ASSERT_STRING_EQUAL(stop_name(&s, &r, RUN_STEP), "blocks.1.attn.q");
    CU_ASSERT_STRING_EQUAL(stop_name(&s, &r, RUN_FINISH_BLOCK), "blocks.1.out");
    CU_ASSERT_STRING_EQUAL(stop_name(&s, &r, RUN_FINISH_BLOCK), "norm"); // no block: one step
    CU_ASSERT_STRING_EQUAL(stop_name(&s, &r, RUN_NEXT_BLOCK), "logits"); // no block left: the end
    CU_ASSERT_TRUE(stepper_finished(&s));
    CU_ASSERT_PTR_NOT_NULL(stepper_command(&s, RUN_STEP)); // "finished: r restarts"
    stepper_free(&s);
    trace_recorder_free(&r.rec);
}

static void test_next_block_from_inside_a_block(void) {
    Replay r = record_tiny_trace();
    Stepper s;
    stepper_init(&s, 2);
    run_until_stop(&s, &r);
    stepper_toggle_breakpoint(&s, stepper_find(&s, "blocks.0.attn.k"));
    CU_ASSERT_STRING_EQUAL(stop_name(&s, &r, RUN_CONTINUE), "blocks.0.attn.k");
    CU_ASSERT_STRING_EQUAL(stop_name(&s, &r, RUN_NEXT_BLOCK), "blocks.1.out");
    stepper_free(&s);
    trace_recorder_free(&r.rec);
}

static void test_breakpoints_stop_every_run(void) {
    Replay r = record_tiny_trace();
    Stepper s;
    stepper_init(&s, 2);
    char msg[160];
    run_until_stop(&s, &r);
    CU_ASSERT_EQUAL(stepper_toggle_by_name(&s, "attn.probs", msg, sizeof msg), 2); // every block
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "set on"));
    CU_ASSERT_EQUAL(stepper_toggle_by_name(&s, "blocks.1.mlp.gelu", msg, sizeof msg), 1);
    CU_ASSERT_EQUAL(stepper_toggle_by_name(&s, "blocks.7.attn.probs", msg, sizeof msg), 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "no stage"));
    CU_ASSERT_STRING_EQUAL(stop_name(&s, &r, RUN_CONTINUE), "blocks.0.attn.probs");
    // a breakpoint inside the block stops `f` before the block's end, as in a debugger
    CU_ASSERT_STRING_EQUAL(stop_name(&s, &r, RUN_NEXT_BLOCK), "blocks.1.attn.probs");
    CU_ASSERT_STRING_EQUAL(stop_name(&s, &r, RUN_FINISH_BLOCK), "blocks.1.mlp.gelu");
    CU_ASSERT_STRING_EQUAL(stop_name(&s, &r, RUN_CONTINUE), "logits");
    // toggling the family again clears both
    CU_ASSERT_EQUAL(stepper_toggle_by_name(&s, "attn.probs", msg, sizeof msg), 2);
    CU_ASSERT_FALSE(s.breakpoints[stepper_find(&s, "blocks.0.attn.probs")]);
    CU_ASSERT_FALSE(s.breakpoints[stepper_find(&s, "blocks.1.attn.probs")]);
    stepper_free(&s);
    trace_recorder_free(&r.rec);
}

static void test_pause_and_restart(void) {
    Replay r = record_tiny_trace();
    Stepper s;
    stepper_init(&s, 2);
    run_until_stop(&s, &r);
    stepper_toggle_breakpoint(&s, stepper_find(&s, "norm"));
    CU_ASSERT_PTR_NULL(stepper_command(&s, RUN_CONTINUE));
    // a key pressed while patch_embed is computed: the run stops at the next stage
    for (int i = 0; i < 2; i++) {
        const char *name = i == 0 ? "patches" : r.rec.entries[r.next++].name;
        CU_ASSERT_FALSE(stepper_computed(&s, stepper_find(&s, name)));
    }
    r.patches_due = false;
    stepper_pause(&s);
    const int paused = run_until_stop(&s, &r);
    CU_ASSERT_STRING_EQUAL(s.nodes[paused].name, "tokens");
    // restart: progress forgotten, breakpoints kept, first stop the input again
    stepper_restart(&s);
    CU_ASSERT_EQUAL(s.done, 0);
    CU_ASSERT_TRUE(s.breakpoints[stepper_find(&s, "norm")]);
    r.next = 0;
    CU_ASSERT_EQUAL(run_until_stop(&s, &r), 0);
    CU_ASSERT_STRING_EQUAL(stop_name(&s, &r, RUN_CONTINUE), "norm");
    stepper_free(&s);
    trace_recorder_free(&r.rec);
}

static void test_tree_rows_and_selection(void) {
    Stepper s;
    stepper_init(&s, 2);
    TreeRow rows[64];
    // all blocks closed: 5 stages, 2 block lines, 3 stages
    int n = stepper_tree_rows(&s, rows, 64);
    CU_ASSERT_EQUAL(n, 5 + 2 + 3);
    CU_ASSERT_TRUE(rows[5].header);
    CU_ASSERT_EQUAL(rows[5].block, 0);
    CU_ASSERT_EQUAL(rows[5].node, stepper_block_last(&s, 0)); // a closed block shows its out
    // stopping inside block 1 opens it; the selection is that stage
    s.done = stepper_find(&s, "blocks.1.attn.v") + 1;
    stepper_stopped_at(&s, s.done - 1);
    n = stepper_tree_rows(&s, rows, 64);
    CU_ASSERT_EQUAL(n, 10 + 15);
    int sel = stepper_selected_row(&s, rows, n);
    CU_ASSERT_EQUAL(rows[sel].node, stepper_find(&s, "blocks.1.attn.v"));
    CU_ASSERT_FALSE(rows[sel].header);
    // up moves by lines: attn.k, attn.q, norm1, then the block's own line
    stepper_move(&s, -4);
    CU_ASSERT_TRUE(s.sel_header);
    stepper_move(&s, -1);
    CU_ASSERT_TRUE(s.sel_header); // the closed block 0
    CU_ASSERT_EQUAL(s.selected, stepper_block_last(&s, 0));
    // closing block 1 from inside moves the selection to its line
    s.selected = stepper_find(&s, "blocks.1.norm2"), s.sel_header = false;
    stepper_set_open(&s, 1, false);
    CU_ASSERT_TRUE(s.sel_header);
    CU_ASSERT_EQUAL(s.selected, stepper_block_last(&s, 1));
    CU_ASSERT_EQUAL(stepper_tree_rows(&s, rows, 64), 10);
    // walking stages in order opens the blocks on the way
    s.selected = stepper_find(&s, "embed"), s.sel_header = false;
    stepper_move_node(&s, 1);
    CU_ASSERT_STRING_EQUAL(s.nodes[s.selected].name, "blocks.0.norm1");
    CU_ASSERT_TRUE(s.open[0]);
    stepper_move_node(&s, -2);
    CU_ASSERT_STRING_EQUAL(s.nodes[s.selected].name, "tokens");
    stepper_free(&s);
}

static void test_stops_close_the_block_they_opened(void) {
    Stepper s;
    stepper_init(&s, 2);
    stepper_stopped_at(&s, stepper_find(&s, "blocks.0.attn.q"));
    CU_ASSERT_TRUE(s.open[0]);
    stepper_stopped_at(&s, stepper_find(&s, "blocks.0.attn.k")); // same block: stays open
    CU_ASSERT_TRUE(s.open[0]);
    stepper_stopped_at(&s, stepper_find(&s, "blocks.1.attn.k"));
    CU_ASSERT_FALSE(s.open[0]); // opened by a stop, closed by the next
    CU_ASSERT_TRUE(s.open[1]);
    stepper_set_open(&s, 0, true); // opened by the learner: left alone
    stepper_stopped_at(&s, stepper_find(&s, "norm"));
    CU_ASSERT_TRUE(s.open[0]);
    CU_ASSERT_FALSE(s.open[1]);
    stepper_free(&s);
}

/* ---------------------------------------------------------------- history */

static Tensor filled(int n, float value) {
    Tensor t = tensor_new(2, 1, n);
    for (int i = 0; i < n; i++) t.data[i] = value + (float)i;
    return t;
}

static void test_history_records_copies_and_stats(void) {
    History h;
    history_init(&h, 4, 1 << 20, 0);
    Tensor t = filled(10, 1); // 1 … 10
    history_record(&h, 2, &t, 0.25);
    t.data[0] = 99; // the history kept a copy
    const HistEntry *e = history_get(&h, 2);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_TRUE(e->kept);
    CU_ASSERT_EQUAL(e->t.data[0], 1);
    CU_ASSERT_EQUAL(e->stats.min, 1);
    CU_ASSERT_EQUAL(e->stats.max, 10);
    CU_ASSERT_DOUBLE_EQUAL(e->seconds, 0.25, 1e-12);
    CU_ASSERT_EQUAL(h.held, 10 * sizeof(float));
    CU_ASSERT_PTR_NULL(history_get(&h, 1)); // not computed
    history_clear(&h);
    CU_ASSERT_PTR_NULL(history_get(&h, 2));
    CU_ASSERT_EQUAL(h.held, 0);
    tensor_free(&t);
    history_free(&h);
}

static void test_history_budget_drops_oldest_but_the_pinned(void) {
    History h;
    history_init(&h, 6, 3 * 100 * sizeof(float), 0); // room for three 100-float tensors
    Tensor t = filled(100, 0);
    for (int node = 0; node < 6; node++) history_record(&h, node, &t, 0);
    CU_ASSERT(h.held <= h.budget);
    CU_ASSERT_TRUE(history_get(&h, 0)->kept); // pinned (the input)
    CU_ASSERT_FALSE(history_get(&h, 1)->kept); // the oldest went first
    CU_ASSERT_FALSE(history_get(&h, 2)->kept);
    CU_ASSERT_FALSE(history_get(&h, 3)->kept);
    CU_ASSERT_TRUE(history_get(&h, 4)->kept);
    CU_ASSERT_TRUE(history_get(&h, 5)->kept);
    // dropped values keep their statistics and shape
    CU_ASSERT_EQUAL(history_get(&h, 1)->stats.max, 99);
    CU_ASSERT_EQUAL(history_get(&h, 1)->t.shape[1], 100);
    CU_ASSERT_PTR_NULL(history_get(&h, 1)->t.data);
    // a tensor larger than the whole budget: statistics only, nothing else dropped
    Tensor big = filled(1000, 0);
    history_record(&h, 3, &big, 0);
    CU_ASSERT_FALSE(history_get(&h, 3)->kept);
    CU_ASSERT_EQUAL(history_get(&h, 3)->stats.max, 999);
    CU_ASSERT_TRUE(history_get(&h, 5)->kept);
    tensor_free(&big);
    tensor_free(&t);
    history_free(&h);
}

static void test_history_size_of_vit_base(void) {
    VitConfig cfg;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_config_for_arch(&cfg, "vit-base", &err), VIT_OK);
    // by hand from the contract's shapes (docs/contract.md), N = 197, D = 768, H = 12, M = 3072, floats:
    const size_t N = 197, D = 768, H = 12, M = 3072, P = 196, pix = 3 * 224 * 224;
    const size_t block = 7 * N * D      // norm1, context, proj, resid1, norm2, fc2, out
                         + 3 * N * D    // q, k, v as (H, N, Dh)
                         + 3 * H * N * N // scores, scaled, probs
                         + 2 * N * M;   // fc1, gelu
    const size_t outside = pix + pix + P * D // input, patches, patch_embed
                           + 3 * N * D + D + 1000; // tokens, embed, norm, pre_logits, logits
    size_t per_block;
    const size_t total = history_bytes_for(&cfg, &per_block);
    CU_ASSERT_EQUAL(per_block, block * sizeof(float));
    CU_ASSERT_EQUAL(total, (outside + 12 * block) * sizeof(float));
    CU_ASSERT_EQUAL(total, 201410656); // 192 MiB: under the 256 MiB default, and 300 MB
    CU_ASSERT(total < HISTORY_DEFAULT_BUDGET);
}

CU_TestInfo tests_viewer_stepper[] = {
    {"nodes follow the trace", test_nodes_follow_the_trace},
    {"step, next block, finish block", test_step_next_finish},
    {"backward: its nodes, blocks last to first", test_backward_nodes_and_blocks},
    {"a training step: the backward, then each update", test_training_step_nodes},
    {"next block from inside a block", test_next_block_from_inside_a_block},
    {"breakpoints stop every run", test_breakpoints_stop_every_run},
    {"pause and restart", test_pause_and_restart},
    {"tree rows and selection", test_tree_rows_and_selection},
    {"stops close the block they opened", test_stops_close_the_block_they_opened},
    {"history records copies and stats", test_history_records_copies_and_stats},
    {"history budget drops oldest but the pinned", test_history_budget_drops_oldest_but_the_pinned},
    {"history size of ViT-B/16", test_history_size_of_vit_base},
    CU_TEST_INFO_NULL,
};
