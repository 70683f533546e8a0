/**
 * @file tui_draw.h
 * @brief Drawing pieces the views share (tui_view.c, tui_attention.c): the
 *        colour legend, heatmaps, the picture and values laid over it.
 */
#ifndef VIEWER_TUI_DRAW_H
#define VIEWER_TUI_DRAW_H

#include "heatmap.h"
#include "tui.h"

/** @addtogroup viewer_tui
 *  @{
 */

/** @brief The smaller of two ints. */
static inline int mini(int a, int b) { return a < b ? a : b; }
/** @brief The larger of two ints. */
static inline int maxi(int a, int b) { return a > b ? a : b; }

/**
 * @brief "lo ▀▀▀▀▀▀▀▀ hi": the colour scale, right-aligned in the @p w columns
 *        from @p x (left-aligned when @p left). @return columns used (0: no room)
 */
int legend_draw(const State *s, int y, int x, int w, const HeatScale *sc, bool left);
/** @brief legend_draw() with the value @p mark (NAN: none) ticked on its bar. */
int legend_draw_mark(const State *s, int y, int x, int w, const HeatScale *sc, bool left,
                     float mark);
/**
 * @brief The colour scale of an attention map or row, as State::ops_scale asks:
 *        the data's range, 0 to its largest value, or 0 to 1.
 */
HeatScale map_scale(const State *s, const float *v, size_t n);
/**
 * @brief Matrix @p m as a heatmap in @p area: pooled by cell means when larger,
 *        grown by a whole factor when smaller. The scale is the data's range,
 *        not the pooled cells'. @p cells_w × @p cells_h receive the cells drawn.
 */
HeatScale heat_draw(const State *s, Rect area, Mat m, int *cells_w, int *cells_h);
/** @brief heat_draw() on a scale of the caller's (NULL: the data's range). */
HeatScale heat_draw_on(const State *s, Rect area, Mat m, const HeatScale *scale, int *cells_w,
                       int *cells_h);
/** @brief Row labels beside a heatmap of @p rows rows from row @p first (a zoom's
 *         window, or 0): the first and the last, row 0 of token rows as "cls". */
void token_axis(const State *s, Rect r, int cells_h, int first, int rows, bool tokens);
/** @brief The input picture resampled to @p w × @p h pixels (malloc'd), or NULL. */
Rgb *picture(const State *s, int w, int h);
/** @brief Draw a @p w × @p h pixel picture at (y, x), two pixel rows per cell in colour. */
void picture_draw(const State *s, int y, int x, const Rgb *px, int w, int h);
/** @brief While painting (P), mark the cursor's input pixel on a picture drawn @p w × @p h. */
void paint_cursor_mark(const State *s, Rgb *px, int w, int h);
/** @brief A square's side in columns fitting @p rows × @p cols cells; its pixel height. */
int square_side(const State *s, int rows, int cols, int *px_h);
/** @brief square_side() for the picture: a small image grows by a whole factor. */
int picture_side(const State *s, int rows, int cols, int *px_h);
/**
 * @brief One value per patch (@p patch_t on [0, 1]) laid over the picture,
 *        side × px_h pixels at (y, x); patch @p mark (or -1) drawn white, or Q
 *        without colour.
 */
void patches_over_image(const State *s, int y, int x, int side, int px_h, const float *patch_t,
                        RampKind kind, int mark);

/** @brief A bar of @p frac (0 to 1) of @p w cells at (y, x), eighth blocks at its end in UTF-8. */
void bar_draw(const State *s, int y, int x, int w, double frac);

/** @brief Is the logit lens strip shown for the selected stage (Y on, a forward block stage)? */
bool lens_shown(const State *s);
/** @brief The logit lens strip (tui_lens.c): a row per depth, its top class and bars. */
void lens_view(const State *s, Rect r);
/** @brief Key Y: the logit lens strip on or off. */
UiAction cmd_lens(State *s, int key);

/** @brief Is the head fingerprints table shown (F on, the forward pass)? */
bool fingerprints_shown(const State *s);
/** @brief The head fingerprints table (tui_fingerprints.c): a row per head, sorted as asked. */
void fingerprints_view(const State *s, Rect r);
/** @brief Key F: the head fingerprints table on or off. */
UiAction cmd_fingerprints(State *s, int key);

/** @brief Is position similarity shown (E on, the embed stage, a model)? */
bool positions_shown(const State *s);
/** @brief Position similarity (tui_positions.c): one patch's cosines on the grid. */
void positions_view(const State *s, Rect r);
/** @brief Key E: position similarity on or off. */
UiAction cmd_positions(State *s, int key);

/** @brief Is occlusion shown for the selected stage (computed by O; the input or an
 *         attention stage)? */
bool occlusion_shown(const State *s);
/** @brief Occlusion beside the attention maps (tui_occlusion.c), each with its deletion test. */
void occlusion_view(const State *s, Rect r);
/** @brief Key O: ask for occlusion beside the attention maps, or drop it. */
UiAction cmd_occlusion(State *s, int key);
/** @brief Is the neuron view shown for the selected stage (N on, a forward attention stage)? */
bool neuron_shown(const State *s);
/** @brief The neuron view (tui_neuron.c): the cursor's score from q_i and k_j to its probability. */
void neuron_view(const State *s, Rect r);
/** @brief Key N: the neuron view on or off. */
UiAction cmd_neuron(State *s, int key);

/** @brief Is activation patching shown (computed by C; a forward block stage)? */
bool patching_shown(const State *s);
/** @brief Activation patching (tui_patch.c): the selected block's row over the patches. */
void patching_view(const State *s, Rect r);
/** @brief Key C: ask for activation patching against the next shipped picture, or drop it. */
UiAction cmd_patching(State *s, int key);

/** The names of the head modes, by HeadMode: "head", "mean over heads", "max over heads". */
extern const char *const head_mode_names[];
/** @brief The attention views of an (B, H, N, N) tensor, as State::attn_view asks. */
void attention_view(const State *s, Rect r, const Tensor *t);

/** @} */
#endif
