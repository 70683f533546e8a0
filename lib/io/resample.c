/**
 * @file resample.c
 * @brief Antialiased separable resampling weights (Pillow / PyTorch antialias=True).
 */
#include "io/resample.h"
#include "base/util.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double triangle(double x) {
    x = fabs(x);
    return x < 1.0 ? 1.0 - x : 0.0;
}

// [keys_cubic]
static double keys_cubic(double x) {
    const double a = -0.5; // Keys (1981); Pillow and PyTorch's antialiased bicubic use it
    x = fabs(x);
    if (x < 1.0) return ((a + 2.0) * x - (a + 3.0)) * x * x + 1;
    if (x < 2.0) return (((x - 5) * x + 8) * x - 4) * a;
    return 0.0;
}
// [keys_cubic]

// [resample_axis]
ResampleAxis resample_axis(int n_in, long n_out, long out_first, int out_count,
                           ImageFilter filter) {
    double (*f)(double) = filter == FILTER_BICUBIC ? keys_cubic : triangle;
    double support = filter == FILTER_BICUBIC ? 2.0 : 1.0;
    double scale = (double)n_in / n_out;
    double stretch = scale < 1.0 ? 1.0 : scale; // only widen the filter when shrinking
    support *= stretch;
    ResampleAxis ax = {.ksize = (int)ceil(support) * 2 + 1};
    ax.first = vit_malloc(sizeof(int) * (size_t)out_count);
    ax.count = vit_malloc(sizeof(int) * (size_t)out_count);
    ax.weights = vit_calloc((size_t)out_count * ax.ksize, sizeof(double));
    for (int i = 0; i < out_count; i++) {
        double center = ((double)(out_first + i) + 0.5) * scale;
        int lo = (int)(center - support + 0.5), hi = (int)(center + support + 0.5);
        if (lo < 0) lo = 0;
        if (hi > n_in) hi = n_in;
        double *w = ax.weights + (size_t)i * ax.ksize, total = 0.0;
        for (int j = 0; j < hi - lo; j++) {
            w[j] = f((j + lo - center + 0.5) / stretch);
            total += w[j];
        }
        for (int j = 0; j < hi - lo; j++)
            if (total != 0.0) w[j] /= total;
        ax.first[i] = lo;
        ax.count[i] = hi - lo;
    }
    return ax;
}
// [resample_axis]

void resample_axis_free(ResampleAxis *ax) {
    free(ax->first);
    free(ax->count);
    free(ax->weights);
    memset(ax, 0, sizeof *ax);
}

// [resample_grid]
void resample_grid(float *out, const float *in, int in_h, int in_w, int out_h, int out_w, int D,
                   ImageFilter filter) {
    // in is (in_h, in_w, D), tmp is (in_h, out_w, D), out is (out_h, out_w, D)
    ResampleAxis ax = resample_axis(in_w, out_w, 0, out_w, filter);
    ResampleAxis ay = resample_axis(in_h, out_h, 0, out_h, filter);
    float *tmp = vit_calloc((size_t)in_h * out_w * D, sizeof(float));
    for (int y = 0; y < in_h; y++)
        for (int x = 0; x < out_w; x++) {
            const double *w = ax.weights + (size_t)x * ax.ksize;
            float *t = tmp + ((size_t)y * out_w + x) * D;
            for (int j = 0; j < ax.count[x]; j++) {
                const float *src = in + ((size_t)y * in_w + ax.first[x] + j) * D;
                for (int d = 0; d < D; d++) t[d] += (float)w[j] * src[d];
            }
        }
    memset(out, 0, sizeof(float) * (size_t)out_h * out_w * D);
    for (int y = 0; y < out_h; y++) {
        const double *w = ay.weights + (size_t)y * ay.ksize;
        for (int j = 0; j < ay.count[y]; j++) {
            const float *src = tmp + (size_t)(ay.first[y] + j) * out_w * D;
            float *o = out + (size_t)y * out_w * D;
            for (size_t k = 0; k < (size_t)out_w * D; k++) o[k] += (float)w[j] * src[k];
        }
    }
    free(tmp);
    resample_axis_free(&ax);
    resample_axis_free(&ay);
}
// [resample_grid]
