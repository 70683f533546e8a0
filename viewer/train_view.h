/**
 * @file train_view.h
 * @brief What the training screen (`vitview --train`) shows, apart from how it
 *        is drawn: the curves, the run's progress, the panel of pictures, the
 *        [cls] attention, the layers' health and the confusion matrix, the
 *        choices the keys make, and where each pane goes.
 *
 * The loop (tui_train_run.c) copies what the run has done into a TrainView
 * after each redraw interval; tui_train.c draws it; train_view_key() changes
 * the choices. Nothing here includes curses or runs the model, so the
 * charts' scaling, the layout and the keys are tested without a terminal
 * (suite viewer_train).
 *
 * Shape legend: W columns of a chart, H its rows, Y classes, L layers,
 * P pictures of the panel, G = S/p patches per side.
 */
#ifndef VIEWER_TRAIN_VIEW_H
#define VIEWER_TRAIN_VIEW_H

#include <stdbool.h>
#include <stdint.h>

#include "colour.h"
#include "layout.h"

/** @defgroup viewer_train Viewer training screen
 *  @brief `vitview --train`: a training run drawn while it runs.
 *  @{
 */

/** Smallest terminal the training screen draws in, in columns. */
#define TRAIN_MIN_COLS 64
/** ... and in rows. */
#define TRAIN_MIN_ROWS 20
/** The redraw interval's default, in milliseconds (+ and − halve and double it). */
#define TRAIN_REDRAW_MS 250
/** The shortest redraw interval + allows. */
#define TRAIN_REDRAW_MIN_MS 50
/** The longest redraw interval − allows. */
#define TRAIN_REDRAW_MAX_MS 8000
/** The share of the time redraws may take: after one that took t seconds, the next waits t / this. */
#define TRAIN_WATCH_BUDGET 0.03
/** Most pictures the panel holds. */
#define TRAIN_PANEL_MAX 8

/** A growing list of numbers: one value per step (or per epoch). */
typedef struct {
    float *v;  /**< (n) the values */
    int n;     /**< how many */
    int cap;   /**< room allocated */
} Series;

/** @brief Append @p value to @p s, growing it. */
void series_push(Series *s, float value);
/** @brief Free @p s and zero it. */
void series_free(Series *s);

/** One layer group's health after a step (the layers table). */
typedef struct {
    char name[32];      /**< e.g. "blocks.3" or "patch_embed" */
    double grad_norm;   /**< ‖∇θ‖ of its parameters */
    double weight_norm; /**< ‖θ‖ */
    double update_ratio; /**< ‖Δθ‖ / ‖θ‖ of the last step: around 1e-3 is healthy */
} LayerHealth;

/** What the lower right pane shows when the screen is too small for both. */
typedef enum {
    DETAIL_LAYERS,    /**< the layers table */
    DETAIL_CONFUSION, /**< the confusion matrix */
} TrainDetail;

/** Where each pane of the training screen goes. */
typedef struct {
    int cols;       /**< terminal width this layout is for */
    int rows;       /**< height */
    bool too_small; /**< below TRAIN_MIN_COLS × TRAIN_MIN_ROWS: a note instead */
    bool both;      /**< room for the layers table and the confusion matrix at once */
    Rect title;     /**< top row: the run's progress */
    Rect loss;      /**< the loss curves */
    Rect accuracy;  /**< the accuracy curves */
    Rect lr;        /**< the learning-rate schedule under them */
    Rect facts;     /**< the last numbers in words */
    Rect attention; /**< [cls] attention over the chosen picture */
    Rect pictures;  /**< the panel of pictures and their predictions */
    Rect layers;    /**< the layers table (both, or the shared pane) */
    Rect confusion; /**< the confusion matrix (both, or the shared pane) */
    Rect status;    /**< bottom row: paused or running, the keys */
    int sep_x;      /**< the column of the line between the two halves */
} TrainLayout;

/** @brief The training screen's panes for a @p cols × @p rows terminal. */
TrainLayout train_layout(int cols, int rows);

/** What a key asks of the loop. */
typedef enum {
    TV_UNHANDLED = -1, /**< no binding took it */
    TV_NONE = 0,       /**< handled: redraw */
    TV_PANEL,          /**< the picture, layer or head changed: recompute the panel now */
    TV_STEP,           /**< take one optimizer step (paused) */
    TV_DEBUG,          /**< open the debugger on the next step (paused), on a copy */
    TV_QUIT,           /**< stop the run as Ctrl-C does: a checkpoint, then leave */
} TrainAction;

/** Everything the training screen shows and the keys choose. */
typedef struct {
    /* the run */
    int64_t step;          /**< steps taken */
    int64_t total_steps;   /**< steps in the run */
    int steps_per_epoch;   /**< ⌊images / B⌋ */
    int epochs;            /**< E */
    double images_per_s;   /**< training speed so far */
    double eta_s;          /**< seconds left, at that speed */
    double lr;             /**< the learning rate of the last step */
    double grad_norm;      /**< the gradient's global norm at the last step */
    float *schedule;       /**< (total_steps) the learning rate of every step, known in advance */
    Series train_loss;     /**< per step: the batch's loss */
    Series train_acc;      /**< per step: the batch's accuracy, 0 to 1 */
    Series val_loss;       /**< per epoch: the validation loss */
    Series val_acc;        /**< per epoch: the validation accuracy */
    bool finished;         /**< every step taken */
    char model[96];        /**< the architecture in words, for the title */
    /* the health of the layers */
    LayerHealth *layers;   /**< (layer_rows) after the last step measured */
    int layer_rows;        /**< how many groups; 0 before the first measure */
    /* the confusion matrix of the last validation */
    int classes;           /**< Y */
    int *confusion;        /**< (Y, Y): row = true class, column = predicted; NULL: none yet */
    char (*class_names)[24]; /**< (Y) short class names, escaped */
    /* the panel */
    int S;                 /**< the pictures' side */
    int pictures;          /**< P, at most TRAIN_PANEL_MAX */
    Rgb *thumbs;           /**< (P, S, S) the pictures in terminal colours */
    int *truth;            /**< (P) each picture's label */
    int *predicted;        /**< (P) the model's class for it now */
    float *prob;           /**< (P) its probability */
    int grid;              /**< G */
    float *attention;      /**< (G, G) [cls]'s attention to each patch, chosen picture, layer, head */
    float attention_cls;   /**< [cls]'s attention to itself */
    bool has_panel;        /**< predicted, prob and attention are filled */
    /* the choices */
    int depth;             /**< L */
    int heads;             /**< H */
    int picture;           /**< the picture whose attention is drawn */
    int layer;             /**< its layer */
    int head;              /**< its head */
    int redraw_ms;         /**< how often the screen is redrawn while running */
    bool paused;           /**< no steps until space */
    TrainDetail detail;    /**< the shared pane's content (Tab) */
    bool help;             /**< the key list is open */
    /* the measure of what watching costs */
    double train_seconds;  /**< wall time inside optimizer steps */
    double watch_seconds;  /**< wall time redrawing and computing the panel */
    double redraw_seconds; /**< what the last redraw with the panel took (the next
                                costs about as much) */
    char message[160];     /**< feedback for the last key */
    /* the terminal */
    ColourMode colour;     /**< what it shows */
    bool utf8;             /**< braille dots and half blocks */
    TrainLayout layout;    /**< the panes for its size */
} TrainView;

/**
 * @brief Set up an empty view for a run: its sizes, its schedule, its pictures.
 * @param[in] schedule  (total_steps) the learning rate of each step (copied)
 */
void train_view_init(TrainView *v, int depth, int heads, int classes, int grid,
                     int64_t total_steps, int steps_per_epoch, int epochs,
                     const float *schedule);
/** @brief Free what @p v owns and zero it. */
void train_view_free(TrainView *v);
/** @brief The one place a new terminal size is taken in. */
void train_view_resize(TrainView *v, int cols, int rows);
/** @brief Set the feedback message (printf-style). */
void train_view_message(TrainView *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** @brief The fraction of wall time spent watching (redraws and the panel), 0 to 1. */
double train_view_overhead(const TrainView *v);
/**
 * @brief Is it time to redraw while the run runs? When @p since_s seconds have
 *        passed since the last redraw: at least the redraw interval, and at
 *        least what the last redraw took divided by TRAIN_WATCH_BUDGET, so
 *        that redraws take at most that share of the time (on a slow or busy
 *        machine the screen waits longer; after a slow redraw, once).
 */
bool train_view_redraw_due(const TrainView *v, double since_s);
/** @brief The epoch (from 1) the next step is in, or the last when finished. */
int train_view_epoch(const TrainView *v);

/**
 * @brief Change the view for a key: space pauses and resumes, . steps while
 *        paused, d opens the debugger on the next step while paused, } { the picture, j k the layer, [ ] and digits the head,
 *        + − the redraw interval, Tab the shared pane, ? the help, q stops.
 *        Arrow keys arrive as j and k (tui_train_run.c translates them).
 */
TrainAction train_view_key(TrainView *v, int key);

/** One binding of the training screen: its keys, how the help names them, what they do. */
typedef struct {
    int keys[6];                               /**< key codes, 0-terminated */
    const char *label;                         /**< e.g. "} {" */
    const char *help;                          /**< what they do */
    TrainAction (*fn)(TrainView *v, int key);  /**< the action */
} TrainKey;
/** @brief The training screen's bindings, for the help; @p count receives how many. */
const TrainKey *train_view_keys(int *count);

/* ------------------------------------------------------------ charts */

/**
 * @brief One value per chart column: the x axis spans @p total steps, so the
 *        curve grows from left to right as the run goes on; column c is the
 *        mean of the values of steps ⌊c·total/W⌋ … ⌊(c+1)·total/W⌋ − 1 that
 *        exist (at least one step each), NaN where none does yet.
 * @param[out] out  (W)
 * @param[in]  y    (n) one value per step, n ≤ total
 */
void chart_columns(float *out, int W, const float *y, int n, int64_t total);

/**
 * @brief The y range a chart shows for @p n values: from 0 (or the lowest, when
 *        negative) to the highest plus a twentieth; [0, 1] when there are none.
 */
void chart_range(float *lo, float *hi, const float *v, int n);

/**
 * @brief A line through one value per dot column, as braille dots: a cell is
 *        2 dots wide and 4 high, so @p W × @p H cells hold 2W × 4H dots. Each
 *        dot column's value sets the dot at its height; a jump from the
 *        previous column fills the dots between, so the line is unbroken.
 * @param[out] cells  (H, W) the eight dot bits of each cell (U+2800 + bits), cleared first
 * @param[in]  y      (2W) values; NaN: no dot
 * @param[in]  lo, hi the values at the bottom and the top dot
 */
void chart_dots(uint8_t *cells, int W, int H, const float *y, float lo, float hi);

/** @brief The row (0 = top) of a value on an @p H-row chart from @p lo to @p hi; -1 for NaN. */
int chart_row(float value, float lo, float hi, int H);

/** @} */
#endif
