/**
 * @file format.c
 * @brief Human-readable numbers (see format.h).
 */
#include "format.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

char *fmt_si(char *buf, size_t size, double v) {
    static const char *prefix[] = {"", " k", " M", " G", " T"};
    int i = 0;
    while (fabs(v) >= 1000 && i < 4) v /= 1000, i++;
    if (i == 0) snprintf(buf, size, "%.0f", v);
    else snprintf(buf, size, "%.*f%s", fabs(v) < 10 ? 2 : fabs(v) < 100 ? 1 : 0, v, prefix[i]);
    return buf;
}

char *fmt_seconds(char *buf, size_t size, double s) {
    if (s < 1e-3) snprintf(buf, size, "%.0f µs", s * 1e6);
    else if (s < 0.01) snprintf(buf, size, "%.1f ms", s * 1e3);
    else if (s < 1) snprintf(buf, size, "%.0f ms", s * 1e3);
    else snprintf(buf, size, "%.2f s", s);
    return buf;
}

char *fmt_clock(char *buf, size_t size, double seconds) {
    if (!(seconds >= 0) || seconds > 359999) { // NaN, negative, or past 99 hours
        snprintf(buf, size, "-:--:--");
        return buf;
    }
    const int s = (int)(seconds + 0.5);
    snprintf(buf, size, "%d:%02d:%02d", s / 3600, s / 60 % 60, s % 60);
    return buf;
}

char *fmt_progress(char *buf, size_t size, int done, int count, int cells, double seconds,
                   bool utf8) {
    const int filled = count > 0 ? (int)((long)cells * done / count) : 0;
    size_t n = 0;
    if (!utf8 && n + 1 < size) buf[n++] = '[';
    for (int i = 0; i < cells; i++) { // "█" and "░" are 3 bytes each in UTF-8
        const char *cell = utf8 ? (i < filled ? "█" : "░") : (i < filled ? "#" : "-");
        const size_t len = strlen(cell);
        if (n + len >= size) break;
        memcpy(buf + n, cell, len), n += len;
    }
    if (!utf8 && n + 1 < size) buf[n++] = ']';
    char t[32];
    snprintf(buf + n, size - n, " %s", fmt_seconds(t, sizeof t, seconds));
    return buf;
}

char *fmt_shape_axes(char *buf, size_t size, const Tensor *t, const char *axes) {
    int64_t shape[TENSOR_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++) shape[d] = t->shape[d];
    return tensor_shape_format(buf, size, t->ndim, shape, axes);
}

// UTF-8 symbols of the stage table and the viewer's own text, with ASCII spellings.
static const struct {
    const char *utf8, *ascii;
} spellings[] = {
    {"·", "*"},  {"ᵀ", "^T"}, {"√", "sqrt "}, {"×", "x"},  {"²", "^2"}, {"Φ", "Phi"},
    {"→", "->"}, {"←", "<-"}, {"↑", "^"},     {"↓", "v"},  {"…", "..."}, {"—", "-"},
    {"–", "-"},  {"−", "-"},  {"₁", "1"},     {"₂", "2"},  {"µ", "u"},   {"≥", ">="},
    {"≤", "<="}, {"▸", ">"},  {"▾", "v"},     {"●", "*"},  {"▶", ">"},   {"│", "|"},
    {"‖", "|"},  {"∇", "g"},  {"θ", "w"},     {"Δ", "d"},  {"◆", "o"}, // the training screen's
};

char *fmt_ascii(char *buf, size_t size, const char *text) {
    size_t out = 0;
    for (const char *p = text; *p && out + 1 < size;) {
        if ((unsigned char)*p < 0x80) {
            buf[out++] = *p++;
            continue;
        }
        const char *with = "?";
        size_t skip = 1;
        for (size_t i = 0; i < sizeof spellings / sizeof spellings[0]; i++) {
            size_t len = strlen(spellings[i].utf8);
            if (strncmp(p, spellings[i].utf8, len) == 0) {
                with = spellings[i].ascii;
                skip = len;
                break;
            }
        }
        if (skip == 1) // an unknown sequence: skip its continuation bytes too
            while ((p[skip] & 0xC0) == 0x80) skip++;
        for (const char *w = with; *w && out + 1 < size; w++) buf[out++] = *w;
        p += skip;
    }
    buf[out] = '\0';
    return buf;
}
