/**
 * @file state.h
 * @brief Everything the viewer knows, in one struct, apart from how it is drawn.
 *
 * Following ncdu and htop: the State holds the model's
 * sizes, the stepper (progress, breakpoints, selection, the tree), the history
 * of computed tensors and the view options. Drawing functions read it through
 * a const pointer; key handlers change it. Nothing here includes curses, so
 * the choices a view makes (which slice of a tensor, which head, which query)
 * are tested without a terminal.
 */
#ifndef VIEWER_STATE_H
#define VIEWER_STATE_H

#include <stdbool.h>

#include "colour.h"
#include "history.h"
#include "labels.h"
#include "layout.h"
#include "stepper.h"
#include "vit.h"

/** @defgroup viewer_state Viewer state
 *  @brief The one struct the panes draw from and the keys change.
 *  @{
 */

/** Which picture suits a stage's tensor. */
typedef enum {
    VIEW_IMAGE,     /**< "input": the picture with its patch grid */
    VIEW_PATCHES,   /**< "patches": the picture and the (P, C·p·p) matrix */
    VIEW_MATRIX,    /**< tokens × features (one head's for q/k/v): a heatmap */
    VIEW_ATTENTION, /**< (H, N, N) scores or probabilities: a map and a query over the image */
    VIEW_VECTOR,    /**< "pre_logits": one row of D features */
    VIEW_LOGITS,    /**< "logits": the top classes as bars */
} ViewKind;

/** How the attention view combines heads. */
typedef enum {
    HEADS_ONE,  /**< the selected head */
    HEADS_MEAN, /**< the average over heads */
    HEADS_MAX,  /**< the largest over heads */
} HeadMode;

/** Which pane the arrow keys move in. */
typedef enum {
    FOCUS_TREE, /**< arrows select stages */
    FOCUS_VIEW, /**< arrows scroll numbers, move the query token or the ranking */
} Focus;

/** A 2-D slice of a tensor that a view draws. */
typedef struct {
    const float *data; /**< rows × cols, row-major (borrowed) */
    int rows;          /**< e.g. N tokens */
    int cols;          /**< e.g. D features */
} Mat;

/** The viewer's state. */
typedef struct {
    const VitConfig *cfg; /**< the model's sizes */
    char title[160];      /**< the model and the picture, for the title row */
    Stepper stepper;      /**< progress, breakpoints, selection, tree */
    History history;      /**< computed tensors */
    Labels labels;        /**< class names, possibly none (owned) */
    /* view options, kept across stages so a choice survives a step */
    int plane;            /**< head (or channel) of 4-d tensors */
    HeadMode heads;       /**< one head, mean or max (attention maps) */
    int query;            /**< query token of the attention overlay, 0 = cls */
    bool numbers;         /**< numeric grid instead of the heatmap */
    int scroll_row;       /**< first row of the numeric grid */
    int scroll_col;       /**< first column of the numeric grid */
    int rank_offset;      /**< first rank shown in the logits view */
    Focus focus;          /**< where the arrows go */
    /* screen */
    bool help;            /**< the key list is open */
    int help_scroll;      /**< first line of the key list shown */
    bool prompting;       /**< the status row is reading a breakpoint name */
    char prompt[64];      /**< what has been typed */
    char message[200];    /**< feedback for the last action, shown in the title row */
    bool running;         /**< the forward pass is running (any key pauses) */
    ColourMode colour;    /**< what the terminal can show */
    bool utf8;            /**< the terminal takes UTF-8 (half blocks, arrows) */
    Layout layout;        /**< pane rectangles for the current size */
} State;

/**
 * @brief Set up the state for a model.
 * @param[in] budget  most bytes the history holds (HISTORY_DEFAULT_BUDGET)
 */
void state_init(State *s, const VitConfig *cfg, size_t budget);
/** @brief Free what the state owns (labels included). */
void state_free(State *s);
/** @brief The one place a new terminal size is taken in: recompute the layout. */
void state_resize(State *s, int cols, int rows);
/** @brief Set the feedback message (printf-style). */
void state_message(State *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/** @brief The node shown in the info and view panes. */
const PipeNode *state_node(const State *s);
/** @brief Its history entry, or NULL when not computed yet. */
const HistEntry *state_entry(const State *s);
/** @brief The view that suits a stage, from its table row's name. */
ViewKind view_kind_for(const VitStage *stage);

/** @brief Planes (heads or channels) a tensor offers: shape[1] of a 4-d tensor, else 1. */
int tensor_planes(const Tensor *t);
/**
 * @brief The matrix a view draws from a tensor, batch 0: (R, C) of a (B, R, C)
 *        tensor, plane @p plane of a (B, H, R, C) tensor, and a (B, X) vector as one row.
 */
Mat tensor_slice(const Tensor *t, int plane);
/**
 * @brief An attention map (B, H, N, N) for one head, or reduced over heads into @p scratch.
 * @param[out] scratch  N·N floats, used for HEADS_MEAN and HEADS_MAX
 */
Mat attention_map(const Tensor *t, int plane, HeadMode mode, float *scratch);
/** Values per line when the numeric grid shows a vector. */
#define NUMBERS_PER_LINE 8

/** @brief Lines of the numeric grid for @p m: its rows, or a vector NUMBERS_PER_LINE a line. */
int numbers_rows(Mat m);
/** @brief Keep plane, query and scroll positions inside the selected tensor. */
void state_clamp(State *s);
/** @brief Patches per side of the image, S/p (14 for ViT-B/16). */
int state_grid(const State *s);

/** @} */
#endif
