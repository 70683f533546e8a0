/**
 * @file stepper.h
 * @brief The debugger's brain: the pipeline's stages, how far the forward pass
 *        has run, where it stops next, breakpoints, and the tree of stages.
 *
 * vit_forward() calls the viewer back after every stage (trace.h). The viewer
 * tells the stepper "node i is computed" and the stepper answers whether to
 * stop there: when the node is the target of the last command (s, n, f, c) or
 * carries a breakpoint. Stopping means entering the UI loop inside the
 * callback, which is why a trace callback can be a breakpoint.
 *
 * The pipeline is the trace contract (@ref contract) in forward order, with
 * one extra node the viewer computes itself: "patches", the image cut into
 * flattened patches (what the convolution of patch_embed reads), right after
 * "input". For ViT-B/16 that is 7 + 15·12 + 1 = 188 nodes.
 *
 * Nothing here knows about the terminal; the tests drive it with a list of
 * trace names.
 */
#ifndef VIEWER_STEPPER_H
#define VIEWER_STEPPER_H

#include <stdbool.h>
#include <stddef.h>

#include "model/trace_stages.h"

/** @defgroup viewer_stepper Viewer stepping
 *  @brief Stages, progress, run commands, breakpoints and the tree.
 *  @{
 */

/** One stage of this model's forward pass, as the viewer lists it. */
typedef struct {
    char name[56];         /**< full name, e.g. "blocks.3.attn.probs", "grad.blocks.3.attn.probs" */
    const VitStage *stage; /**< its row in the stage table (formula, axes, …) */
    int block;             /**< encoder block index, or -1 outside the blocks */
} PipeNode;

/** What the learner asked the forward pass to do. */
typedef enum {
    RUN_STEP,         /**< `s`: compute one more stage */
    RUN_NEXT_BLOCK,   /**< `n`: run through the next block, stop at its `out` */
    RUN_FINISH_BLOCK, /**< `f`: run to the `out` of the block the next stage belongs to */
    RUN_CONTINUE,     /**< `c`: run to the next breakpoint or the end */
} RunCommand;

/** One line of the tree: a stage, or the header of a (collapsible) block. */
typedef struct {
    int node;    /**< the stage on this line; for a header, the block's last stage ("out") */
    int block;   /**< block index, or -1 */
    bool header; /**< true for the "blocks.N" line itself */
} TreeRow;

/** Progress, breakpoints and the tree's state. */
typedef struct {
    PipeNode *nodes;   /**< count stages in the order the pass computes them */
    int count;         /**< number of nodes, 8 + 15·L */
    int depth;         /**< L blocks */
    int done;          /**< stages computed so far; the last computed is done − 1 */
    int target;        /**< the run stops once this node is computed */
    bool *breakpoints; /**< per node */
    bool *open;        /**< per block: expanded in the tree */
    int auto_open;     /**< the block a stop opened (closed again at the next stop), or -1 */
    int selected;      /**< the node shown in the info and view panes */
    bool sel_header;   /**< the selection is the block's header line (showing its "out") */
} Stepper;

/** The stage the viewer adds after "input": the image cut into patches. */
extern const VitStage stepper_patches_stage;
/** @brief The stage of each parameter's update in a training step's debugger. */
extern const VitStage stepper_update_stage;

/** @brief Build the node list for @p depth blocks; stops after the first node ("input"). */
void stepper_init(Stepper *s, int depth);
/**
 * @brief The backward pass's nodes: @p forward's in reverse order, each named
 *        `grad.` + the stage ("grad.logits" first, "grad.input" last), without
 *        the viewer's own "patches"; stops after the first node.
 */
void stepper_init_backward(Stepper *s, const Stepper *forward);
/**
 * @brief The nodes of a training step after its forward: the backward's
 *        (stepper_init_backward()), then one per parameter, "optim.update." +
 *        its name, in the optimizer's order (AdamW's change to it), outside the
 *        blocks' folds; stops after the first node.
 * @param[in] params  @p count parameter names, e.g. "blocks.0.attn.qkv.weight"
 */
void stepper_init_train_step(Stepper *s, const Stepper *forward, const char *const *params,
                             int count);
/** @brief Whether @p n is one of the optimizer's nodes (stepper_init_train_step()). */
bool stepper_is_update(const PipeNode *n);
/** @brief Free the node list and flags. */
void stepper_free(Stepper *s);

/** @brief The node called @p name, or -1. */
int stepper_find(const Stepper *s, const char *name);
/** @brief Index of block @p b's first node (its norm1). */
int stepper_block_first(const Stepper *s, int b);
/** @brief Index of block @p b's last node (its out). */
int stepper_block_last(const Stepper *s, int b);
/** @brief true once every node is computed. */
bool stepper_finished(const Stepper *s);

/**
 * @brief Start a run: set the node to stop at.
 * @return NULL when the forward pass will run, or a sentence saying why not
 *         (it has already finished).
 */
const char *stepper_command(Stepper *s, RunCommand cmd);
/** @brief Stop at the next node computed (a key pressed while running). */
void stepper_pause(Stepper *s);
/**
 * @brief Node @p node has just been computed (nodes arrive in order).
 * @return true when the run should stop here: the target is reached or the
 *         node has a breakpoint.
 */
bool stepper_computed(Stepper *s, int node);
/** @brief Select the node the run stopped at and open its block in the tree. */
void stepper_stopped_at(Stepper *s, int node);
/** @brief Forget all progress (breakpoints stay); the next run stops at "input". */
void stepper_restart(Stepper *s);

/** @brief Toggle the breakpoint on @p node; returns its new state. */
bool stepper_toggle_breakpoint(Stepper *s, int node);
/**
 * @brief Toggle breakpoints by name: a full name ("blocks.5.attn.probs"), or a
 *        block stage without the block ("attn.probs": every block; set on all
 *        unless all are set, then cleared on all).
 * @param[out] msg  a sentence for the status line
 * @return the number of breakpoints changed; 0 for an unknown name
 */
int stepper_toggle_by_name(Stepper *s, const char *name, char *msg, size_t msg_size);

/**
 * @brief The tree's lines given which blocks are open.
 * @param[out] rows  up to @p max lines
 * @return how many lines
 */
int stepper_tree_rows(const Stepper *s, TreeRow *rows, int max);
/** @brief Which of @p rows holds the selection (0 when none does). */
int stepper_selected_row(const Stepper *s, const TreeRow *rows, int n);
/** @brief Move the selection to line @p row of the current tree. */
void stepper_select_row(Stepper *s, int row);
/** @brief Move the selection by @p delta lines of the tree (clamped). */
void stepper_move(Stepper *s, int delta);
/** @brief Move the selection by @p delta stages in forward order, opening blocks on the way. */
void stepper_move_node(Stepper *s, int delta);
/** @brief Open or close block @p b; a selection inside a closed block moves to its header. */
void stepper_set_open(Stepper *s, int b, bool open);

/** @} */
#endif
