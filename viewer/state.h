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

#include <limits.h>
#include <stdbool.h>

#include "colour.h"
#include "history.h"
#include "importance.h"
#include "io/labels.h"
#include "layout.h"
#include "stepper.h"
#include "frames.h"
#include "explain/occlusion.h"
#include "gemm/gemm_lowp.h"
#include "explain/patching.h"
#include "model/vit.h"
#include "train/step_view.h"

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

/** How an attention map's colours are scaled (key A). */
typedef enum {
    SCALE_RANGE, /**< the data's own range, lowest to highest */
    SCALE_ZERO,  /**< 0 to the largest value */
    SCALE_UNIT,  /**< 0 to 1, the whole range a probability can take */
    SCALE_MODES  /**< how many there are */
} ScaleMode;

/** Which pane the arrow keys move in. */
typedef enum {
    FOCUS_TREE, /**< arrows select stages */
    FOCUS_VIEW, /**< arrows scroll numbers, move the query token or the ranking */
} Focus;

/** What the attention view shows of the chosen query (key a). */
typedef enum {
    ATTN_MAP,     /**< the N × N map, and the query's row over the image */
    ATTN_HEADS,   /**< every head's row for the query over the image, on one scale */
    ATTN_ROLLOUT, /**< the rollout through this block: the query's row over the image */
    ATTN_SOFTMAX, /**< the query's row through scores → scaled → probs, and at a temperature */
    ATTN_LAYERS,  /**< every layer × every head, the query's row each (bertviz's model view) */
    ATTN_VIEWS    /**< how many there are */
} AttnView;

/** What a key asks the main loop to do before the next pass (ACT_REQUEST). */
typedef enum {
    REQ_NONE,       /**< nothing */
    REQ_PICTURE,    /**< the shipped picture request_arg places on (+1 or -1) */
    REQ_TEST_IMAGE, /**< Fashion-MNIST's test image number request_arg */
    REQ_HEAD,       /**< switch head request_head of block request_block off, or back on;
                         request_head -1: the block's whole attention */
    REQ_PATCH,      /**< mask patch request_arg of the input, or unmask it */
    REQ_PAINT,      /**< paint the pixel under the painting cursor white, or black if it is light */
    REQ_PRECISION,  /**< the Linear layers in the next number: fp32 → bf16 → int8 → fp32 (Q) */
    REQ_UNDO,       /**< undo every what-if: the unmodified pass again */
    REQ_BACKWARD,   /**< step through the gradients of class request_arg (-1: the predicted) */
    REQ_FORWARD,    /**< leave the backward pass: the forward's stages again */
    REQ_IMPORTANCE, /**< measure head importance for the picture (I), then show it */
    REQ_OCCLUSION,  /**< each patch of the pass's input blacked out in turn, beside the
                         attention maps, with their deletion tests (O) */
    REQ_PATCHING,   /**< one token of the next shipped picture's stream put into the
                         pass's, every (block, token) in turn (C) */
    REQ_FRAME,      /**< the film's place request_arg: a snapshot of the training, or the
                         model as loaded, on the same picture (( )) */
} Request;

/** What the status row is reading. */
typedef enum {
    PROMPT_BREAKPOINT, /**< a stage name, for a breakpoint */
    PROMPT_TEST_IMAGE, /**< a test image's number */
    PROMPT_CLASS,      /**< a class, for the backward pass */
    PROMPT_GOTO,       /**< a stage to show (/) */
    PROMPT_EXPORT,     /**< a file to write the shown tensor to (e) */
    PROMPT_WATCH,      /**< a threshold: stop where a stage's |value| exceeds it (W) */
} PromptKind;

/** A 2-D slice of a tensor that a view draws. */
typedef struct {
    const float *data; /**< rows × cols, row-major (borrowed) */
    int rows;          /**< e.g. N tokens */
    int cols;          /**< e.g. D features */
} Mat;

/** The viewer's state. */
typedef struct {
    const VitConfig *cfg; /**< the model's sizes */
    const Vit *model;     /**< the model, read only: the logit lens applies its final norm and
                               head to the stream (NULL: no lens) */
    char title[560];      /**< the model, the film's frame and the picture, for the title row */
    Stepper stepper;      /**< the pass shown: progress, breakpoints, selection, tree */
    History history;      /**< the pass shown: its computed tensors */
    bool backward;        /**< the pass shown is the backward one (gradients) */
    Stepper other_stepper; /**< the pass not shown, kept as it was (swapped by state_show()) */
    History other_history; /**< its tensors */
    int backward_class;   /**< the class whose logit the backward differentiates */
    const TrainStepView *step; /**< a training step's debugger (state_init_train_step()):
                                    the backward is the batch's loss's, then AdamW's
                                    updates; NULL for the picture's passes */
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
    AttnView attn_view;   /**< map, every head, rollout, softmax or layers (attention stages) */
    bool lens;            /**< block stages show the logit lens strip instead (Y) */
    bool neuron;          /**< attention stages show the cursor's score taken apart (N) */
    bool fingerprints;    /**< every stage shows the head fingerprints table instead (F) */
    int fingerprint_sort; /**< its rows by HEAD_FINGERPRINT_DISTANCE … _CLS, or -1: layer order (S) */
    int fingerprint_scroll; /**< its first row shown */
    bool positions;       /**< the embed stage shows position similarity instead (E) */
    int pos_y;            /**< its patch: grid row */
    int pos_x;            /**< ... and column */
    OcclusionComparison occlusion; /**< O: the input's occlusion and attention maps, shown on
                               the input and attention stages (maps.data NULL: none) */
    Patching patching;    /**< C: the pass's input as A, the next shipped picture as B, shown
                               on block stages (prob NULL: none) */
    char patching_b[64];  /**< B's file name, escaped, for the view's title */
    int play_ms;          /**< S: a step every play_ms milliseconds by itself (0: no play) */
    float temperature;    /**< ATTN_SOFTMAX: the live row is softmax(scaled / temperature);
                               the logits stage: softmax(logits / temperature) */
    ScaleMode scale;      /**< how attention maps and their rows over the image are scaled */
    float opacity;        /**< how much an overlay's colour covers the image (o), 0.3 to 0.9 */
    bool locked;          /**< a matrix view's colour scale is held (#): stages compared fairly */
    float locked_lo;      /**< ... its lowest value */
    float locked_hi;      /**< ... its highest */
    bool hide_tree;       /**< the tree is hidden, the view takes its room (t) */
    bool zoom;            /**< maps drawn at full resolution around the cursor (Z) */
    int cursor_row;       /**< the cell cursor of a matrix view: its row (a token) */
    int cursor_col;       /**< ... and its column (a feature) */
    int key;              /**< the attention map's cursor column: a key token (H J K L) */
    char compare[56];     /**< the stage differences are taken from (=), or "" */
    float watch;          /**< stop at a stage whose largest |value| exceeds this; 0: off */
    const char *weights_path; /**< the model's file, or NULL (random weights): not to be
                                   overwritten by an export (borrowed) */
    const char *picture_path; /**< the picture's file, or "" (borrowed, as weights_path) */
    FilmView film;        /**< the training's film beside the weights, and the frame shown
                               (( ); owned) */
    int other_pictures;   /**< how many shipped pictures } { can switch to besides the one
                               shown: at 0 they say so rather than rerun the same picture */
    /* what-if experiments: what the next pass changes, against the unmodified one */
    bool *heads_off;      /**< (L, H) heads switched off */
    bool *masked;         /**< (P) patches of the input painted black */
    signed char *painted; /**< (S, S) pixels painted by hand (P): 1 white, -1 black, 0 as loaded */
    LowpPrecision precision; /**< the number the Linear layers run in (Q): LOWP_FP32 as
                                  loaded, or LOWP_BF16, LOWP_INT8 (vit_set_precision()) */
    bool painting;        /**< P on the input: the arrows move a pixel cursor, space paints */
    int paint_y;          /**< the painting cursor's pixel row */
    int paint_x;          /**< the painting cursor's pixel column */
    History baseline;     /**< the unmodified pass, recorded at the first what-if */
    float *moved;         /**< (nodes) max |this pass − baseline| per stage; NAN: not compared */
    Request request;      /**< what the main loop does before the next pass */
    int request_arg;      /**< its number: a step, a test image, a patch */
    int request_block;    /**< REQ_HEAD: the block */
    int request_head;     /**< REQ_HEAD: the head, or -1 for all */
    ImportanceView importance; /**< head importance for the picture (I) */
    /* screen */
    bool help;            /**< the key list is open */
    int help_scroll;      /**< first line of the key list shown */
    bool prompting;       /**< the status row is reading a line */
    PromptKind prompt_kind; /**< what the line is for */
    char prompt[PATH_MAX]; /**< what has been typed: as long as any path may be
                                (prompt_line.h types into it, never cutting) */
    bool prompt_overflow; /**< a key was refused because the line was full: the
                               line is not what was typed, and Enter refuses it */
    char message[200];    /**< feedback for the last action, shown in the title row */
    bool running;         /**< the forward pass is running (any key pauses) */
    double run_seconds;   /**< how long the running pass has run: past 0.3 s the status row
                               shows its progress */
    int run_out;          /**< while a pass left for a new one runs out unseen: the stages it
                               has done (the status row says so); 0 otherwise */
    ColourMode colour;    /**< what the terminal can show */
    bool utf8;            /**< the terminal takes UTF-8 (half blocks, arrows) */
    Layout layout;        /**< pane rectangles for the current size */
} State;

/**
 * @brief Set up the state for a model.
 * @param[in] budget  most bytes the history holds (HISTORY_DEFAULT_BUDGET)
 */
void state_init(State *s, const VitConfig *cfg, size_t budget);
/**
 * @brief Make the state a training step's debugger: after the forward of the
 *        step's batch, the backward of its loss and AdamW's update of each
 *        parameter of @p step (borrowed) as the second pass's nodes.
 */
void state_init_train_step(State *s, const TrainStepView *step, size_t budget);
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
/**
 * @brief The matrix the view shows of @p t: attention_map() on an attention
 *        stage (the head, or the heads' mean or max), else tensor_slice() of
 *        the selected plane. The picture and the numbers show the same one.
 * @param[out] scratch  N·N floats, used for the mean and the max
 */
Mat state_shown_matrix(const State *s, const Tensor *t, float *scratch);
/**
 * @brief What of @p t that matrix is, for headings: "head 2 of 4", "mean over
 *        heads", "channel 1 of 3 (G)", or "" for a tensor without planes.
 */
void state_plane_name(const State *s, const Tensor *t, char *buf, size_t size);
/** Values per line when the numeric grid shows a vector. */
#define NUMBERS_PER_LINE 8

/** @brief Lines of the numeric grid for @p m: its rows, or a vector NUMBERS_PER_LINE a line. */
int numbers_rows(Mat m);
/**
 * @brief Show the backward pass's stages (true) or the forward's (false): the
 *        pass shown and the other swap places, each kept as it was.
 */
void state_show(State *s, bool backward);
/** @brief The forward pass's history, whichever pass is shown. */
const History *state_forward_history(const State *s);
/** @brief The forward pass's stepper, whichever pass is shown. */
const Stepper *state_forward_stepper(const State *s);
/** @brief The backward pass's entry for a forward stage's node (its gradient), or NULL. */
const HistEntry *state_gradient_of(const State *s, const char *forward_name);
/** @brief How far node @p node moved in the what-if (max |Δ|); NAN: not compared, or
 *         the backward pass is shown. */
float state_moved(const State *s, int node);

/**
 * @brief A token in words, one numbering everywhere: "cls" for token 0, else
 *        "token t (r,c)" with the patch's row and column in the grid (patch t − 1).
 */
void token_label(char *buf, size_t size, int token, int grid);
/**
 * @brief Move a query (or key) token across the patch grid: @p dr rows and
 *        @p dc columns, stopping at the edges; from cls, any move enters the
 *        grid at its first patch (token 1). Returns the new token.
 */
int token_step(int token, int dr, int dc, int grid);

/**
 * @brief The softmax of one row at a temperature: out = softmax(scaled / T),
 *        by lib's softmax(), so that at T = 1 it is the recorded probabilities
 *        bit for bit. T → 0 puts everything on the largest score, T → ∞ spreads
 *        it evenly.
 * @param[out] out  (N)
 */
void softmax_at_temperature(float *out, const float *scaled, int N, float T);
/** @brief The entropy of a distribution, in nats: −Σ p ln p (0 ln 0 = 0). */
double entropy_nats(const float *p, int N);

/**
 * @brief With a reference stage chosen (=): the selected stage's matrix minus
 *        the reference's, into @p out, when both are recorded in the pass shown
 *        with the same shape. "resid1 − embed" is the attention's output.
 * @param[out] out  as many floats as the selected tensor holds
 * @return false when there is nothing to compare (no reference, another shape, not kept)
 */
bool state_compare(const State *s, const HistEntry *e, float *out);
/**
 * @brief The cell under the cursor in words, at full precision:
 *        "token 13 (1,5) · feature 33 = 0.1234567", or for an attention map
 *        "q token 9 (1,2) → k token 41 (5,5) = 0.005759123" (the view's caption
 *        names the head).
 */
void state_cursor_text(const State *s, Mat m, char *buf, size_t size);

/** The statistics of the matrix a view shows (one head, one channel, or a fusion). */
typedef struct {
    float min;   /**< the smallest finite value */
    float max;   /**< the largest finite value */
    double mean; /**< over the finite values */
    double std;  /**< population standard deviation over the finite values */
} MatStats;

/** @brief min, max, mean and std of @p m's finite values (all 0 when there are none). */
MatStats mat_stats(Mat m);
/**
 * @brief A window of @p m, at most @p rows × @p cols, placed so that cell
 *        (@p row, @p col) is inside it and as central as the edges allow, copied
 *        into @p buf: the zoom's full-resolution view around a cursor.
 * @param[out] r0, c0  the window's first row and column in @p m
 */
Mat mat_window(Mat m, int row, int col, int rows, int cols, float *buf, int *r0, int *c0);

/** @brief Is any what-if in force (a head off, a patch masked, a smaller number)? */
bool state_whatif(const State *s);
/** @brief The first stage, in pass order, that differs from the unmodified pass; -1: none. */
int state_first_moved(const State *s);
/**
 * @brief Close every view that takes the stage's place (Y I O N F E C, and painting):
 *        one is shown at a time, so the key that opens one calls this first.
 */
void state_close_views(State *s);
/** @brief How many pixels of the input are painted by hand (P). */
int state_painted(const State *s);
/** @brief The what-ifs in words: "head 2 of blocks.3 off, patch 12 masked". */
void state_whatif_text(const State *s, char *buf, size_t size);
/**
 * @brief What a what-if did, for the title row, the outcome first: "what-if:
 *        Ankle boot 0.9954 → 0.9721 · head 2 of blocks.3 off · first change:
 *        blocks.3.attn.probs · u undoes".
 */
void state_whatif_summary(const State *s, char *buf, size_t size);
/** @brief Softmax probabilities of a (1, Y) logits entry, in double: @p p is (Y). */
void logits_probs(double *p, const Tensor *logits);
/**
 * @brief The same at a temperature: \f$ p = \mathrm{softmax}(z / T) \f$, T > 0 (the
 *        logits stage's + −). T < 1 sharpens, T > 1 flattens; the order of the
 *        classes never changes, only how sure the model sounds.
 */
void logits_probs_at(double *p, const Tensor *logits, double T);
/** @brief Forget the what-ifs and the unmodified pass recorded for them. */
void state_whatif_clear(State *s);

/** @brief Keep plane, query and scroll positions inside the selected tensor. */
void state_clamp(State *s);
/** @brief Patches per side of the image, S/p (14 for ViT-B/16). */
int state_grid(const State *s);

/** @} */
#endif
