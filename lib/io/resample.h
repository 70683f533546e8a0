/**
 * @file resample.h
 * @brief Separable resampling weights shared by image resizing and
 *        position-embedding interpolation.
 *
 * For output sample i of a 1-D resize from n_in to n_out samples, the centre
 * in input coordinates is c = (i + ½)·s with s = n_in/n_out; the inputs j in
 * [c − r, c + r] get weights f((j + ½ − c)/max(s, 1)), normalised to sum 1,
 * where f is the filter and r its support (× s when shrinking). Stretching the
 * filter when shrinking averages neighbouring inputs instead of skipping them
 * (antialiasing). This is Pillow's Resample.c, and also what
 * torch.nn.functional.interpolate(..., antialias=True) computes.
 */
#ifndef VIT_RESAMPLE_H
#define VIT_RESAMPLE_H

/** @defgroup resample Resampling
 *  @brief Antialiased separable filters: bilinear (triangle) and bicubic (Keys, a = −½).
 *
 *  Taught in @ref chapter13 "chapter 13" (position embeddings for bigger images). Pinned by the
 *  suites @ref test_resample.c "resample" (@ref answer_keys "the answer keys").
 *  @{
 */

/** The filters we resample with. */
typedef enum {
    FILTER_BILINEAR, /**< triangle, support 1 */
    FILTER_BICUBIC,  /**< cubic convolution with a = −0.5, support 2 */
} ImageFilter;

/** The input window and weights of some output samples along one axis. */
typedef struct {
    int ksize;       /**< weights per output sample (the widest window) */
    int *first;      /**< (count) first input index of each output's window */
    int *count;      /**< (count) inputs in each window */
    double *weights; /**< (count, ksize) normalised weights */
} ResampleAxis;

/**
 * @brief Weights for outputs @p out_first … @p out_first + @p out_count − 1 of a
 *        resize of one axis from @p n_in to @p n_out samples.
 *
 * Asking for a window rather than every output lets a resize followed by a
 * crop compute only the pixels it keeps, even when the resized image would be
 * huge (a 2 × 800 000 strip resized to a shorter side of 256).
 */
ResampleAxis resample_axis(int n_in, long n_out, long out_first, int out_count,
                           ImageFilter filter);
/** @brief Free the weights. */
void resample_axis_free(ResampleAxis *axis);

/**
 * @brief Resize a grid of vectors, e.g. a position-embedding table.
 * @param[out] out  (out_h, out_w, D)
 * @param[in]  in   (in_h, in_w, D)
 * Width first, then height, in float arithmetic with double weights.
 */
void resample_grid(float *out, const float *in, int in_h, int in_w, int out_h, int out_w, int D,
                   ImageFilter filter);

/** @} */
#endif
