/**
 * @file chapter.c
 * @brief Word-wrapped prose and pinned values for the chapter programs.
 */
#include "teach/chapter.h"
#include "base/util.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { DEFAULT_WIDTH = 78 };

static int wrap_width(const Chapter *ch) { return ch->width > 20 ? ch->width : DEFAULT_WIDTH; }

// Visible width of the UTF-8 text in [s, s+n): continuation bytes take no column.
static int columns(const char *s, size_t n) {
    int cols = 0;
    for (size_t i = 0; i < n; i++)
        if (((unsigned char)s[i] & 0xc0) != 0x80) cols++;
    return cols;
}

static void underline(FILE *f, const char *text, char c) {
    for (int i = columns(text, strlen(text)); i > 0; i--) fputc(c, f);
    fputc('\n', f);
}

void ch_title(Chapter *ch, const char *number, const char *title) {
    if (!ch->out) return;
    char line[256];
    snprintf(line, sizeof line, "Chapter %s · %s", number, title);
    fprintf(ch->out, "%s\n", line);
    underline(ch->out, line, '=');
    fputc('\n', ch->out);
}

bool ch_section(Chapter *ch, const char *heading) {
    if (ch->stop) return false;
    if (!ch->out) return true;
    fprintf(ch->out, "%s\n", heading);
    underline(ch->out, heading, '-');
    fputc('\n', ch->out);
    return true;
}

// Greedy word wrap; explicit newlines in the text start new lines. Each line
// starts with `mark` ("" for none).
static void print_wrapped(FILE *f, const char *text, int width, const char *mark) {
    int col = 0;
    bool line_start = true;
    const char *p = text;
    while (*p) {
        if (*p == '\n') {
            fprintf(f, "%s\n", line_start ? mark : "");
            col = 0, line_start = true, p++;
            continue;
        }
        if (*p == ' ') { p++; continue; }
        size_t len = strcspn(p, " \n");
        int w = columns(p, len);
        if (col > 0 && col + 1 + w > width) { fputc('\n', f); col = 0, line_start = true; }
        if (line_start) fputs(mark, f), line_start = false;
        if (col > 0) { fputc(' ', f); col++; }
        fwrite(p, 1, len, f);
        col += w;
        p += len;
    }
    fprintf(f, "%s\n", line_start ? mark : "");
}

// The book's pages carry the explanation; their output boxes show the
// numbers. So when the book captures a chapter (scripts/docs.sh sets
// VIT_CHAPTER_PROSE=marked), every line of ch_say()'s prose starts with the
// ASCII record separator, for the capture to tell prose from tables and
// values; a terminal never sees it.
static const char *prose_mark(void) {
    const char *m = getenv("VIT_CHAPTER_PROSE");
    return m && strcmp(m, "marked") == 0 ? CHAPTER_PROSE_MARK : "";
}

// A wrapped paragraph and the blank line after it, each line starting with `mark`.
static void paragraph(Chapter *ch, const char *mark, const char *fmt, va_list ap) {
    char *text = NULL;
    if (vasprintf(&text, fmt, ap) < 0) text = NULL;
    if (!text) return;
    print_wrapped(ch->out, text, wrap_width(ch), mark);
    fprintf(ch->out, "%s\n", mark); // the blank line after a paragraph is the paragraph's
    free(text);
}

void ch_say(Chapter *ch, const char *fmt, ...) {
    if (!ch->out) return;
    va_list ap;
    va_start(ap, fmt);
    paragraph(ch, prose_mark(), fmt, ap);
    va_end(ap);
}

void ch_verdict(Chapter *ch, const char *fmt, ...) {
    if (!ch->out) return;
    va_list ap;
    va_start(ap, fmt);
    paragraph(ch, "", fmt, ap);
    va_end(ap);
}

void ch_line(Chapter *ch, const char *fmt, ...) {
    if (!ch->out) return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(ch->out, fmt, ap);
    va_end(ap);
    fputc('\n', ch->out);
}

void ch_pin(Chapter *ch, const char *name, const Tensor *t) {
    if (ch->pin) ch->pin(ch->pin_user, name, t);
}

float ch_value(Chapter *ch, const char *name, float value) {
    Tensor t = tensor_view(&value, 0);
    ch_pin(ch, name, &t);
    return value;
}

float ch_valuef(Chapter *ch, float value, const char *fmt, ...) {
    char name[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    return ch_value(ch, name, value);
}

float ch_max_diff(Chapter *ch, const char *name, const float *a, const float *b, size_t n) {
    Tensor ta = tensor_view((float *)a, 1, (int)n), tb = tensor_view((float *)b, 1, (int)n);
    return ch_value(ch, name, tensor_max_abs_diff(&ta, &tb));
}

void ch_show(Chapter *ch, const char *name, const Tensor *t) {
    ch_pin(ch, name, t);
    if (!ch->out) return;
    tensor_print(ch->out, name, t);
    fputc('\n', ch->out);
}


static int compare_doubles(const void *x, const void *y) {
    const double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

double speed_median(const double *v, int n) {
    double s[100];
    if (n > (int)(sizeof s / sizeof s[0])) n = (int)(sizeof s / sizeof s[0]);
    memcpy(s, v, sizeof(double) * (size_t)n);
    qsort(s, (size_t)n, sizeof s[0], compare_doubles);
    return n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
}

// [compare]
SpeedVerdict speed_verdict(const double *ratios, int n, double *lo, double *mid, double *hi) {
    double l = ratios[0], h = ratios[0];
    for (int i = 1; i < n; i++) {
        if (ratios[i] < l) l = ratios[i];
        if (ratios[i] > h) h = ratios[i];
    }
    if (lo) *lo = l;
    if (hi) *hi = h;
    if (mid) *mid = speed_median(ratios, n);
    if (l >= SPEED_MARGIN) return SPEED_FASTER;          // every round beyond +10 %
    if (h <= 1 / SPEED_MARGIN) return SPEED_SLOWER;      // every round beyond -10 %
    if (l >= 1 / SPEED_MARGIN && h <= SPEED_MARGIN) return SPEED_SAME; // every round within 10 %
    return SPEED_NOISY;
}

SpeedVerdict speed_compare(char *buf, size_t size, const double *ratios, int n, const char *what,
                         const char *against) {
    double lo, mid, hi;
    const SpeedVerdict v = speed_verdict(ratios, n, &lo, &mid, &hi);
    char words[64];
    if (v == SPEED_FASTER && mid >= 1.5) snprintf(words, sizeof words, "%.1f times faster than", mid);
    else if (v == SPEED_FASTER) snprintf(words, sizeof words, "%.0f%% faster than", 100 * (mid - 1));
    else if (v == SPEED_SLOWER && 1 / mid >= 1.5)
        snprintf(words, sizeof words, "%.1f times slower than", 1 / mid);
    else if (v == SPEED_SLOWER) snprintf(words, sizeof words, "%.0f%% slower than", 100 * (1 - mid));
    else snprintf(words, sizeof words, "about as fast as");
    const char *side = lo > 1   ? "every round was faster, but not every one beyond the 10% margin"
                       : hi < 1 ? "every round was slower, but not every one beyond the 10% margin"
                                : "some rounds were faster and some slower";
    if (v == SPEED_NOISY)
        snprintf(buf, size, "Against %s this run was too noisy to tell: over %d interleaved "
                 "rounds the speed ratio ran from %.2f to %.2f (median %.2f); %s.",
                 against, n, lo, hi, mid, side);
    else
        snprintf(buf, size, "On this machine %s %s %s: the speed ratio was %.2f in the median "
                 "of %d interleaved rounds, and between %.2f and %.2f in every one.",
                 what, words, against, mid, n, lo, hi);
    return v;
}
// [compare]

static bool is_help(const char *arg) { return strcmp(arg, "--help") == 0 || strcmp(arg, "-h") == 0; }

static ChapterKnob *knob_named(ChapterKnob *knobs, int count, const char *name, size_t length) {
    for (int k = 0; k < count; k++)
        if (strlen(knobs[k].name) == length && strncmp(knobs[k].name, name, length) == 0)
            return &knobs[k];
    return NULL;
}

// One knob's value from its text: whole, in range, a multiple of what it must be.
static VitStatus set_knob(ChapterKnob *k, const char *text, VitError *err) {
    char what[96];
    snprintf(what, sizeof what, "--%s", k->name);
    int v;
    VitStatus s = vit_parse_int(&v, text, k->min, k->max, what, err);
    if (s != VIT_OK) return s;
    if (k->multiple > 1 && v % k->multiple != 0)
        return vit_fail(err, VIT_ERR_USAGE, "--%s takes a multiple of %d, not %d", k->name,
                        k->multiple, v);
    k->value = v;
    return VIT_OK;
}

VitStatus chapter_parse_knobs(int argc, char **argv, ChapterKnob *knobs, int count, VitError *err) {
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strncmp(arg, "--", 2) != 0)
            return vit_fail(err, VIT_ERR_USAGE, "unknown argument '%s' (try --help)", arg);
        const char *name = arg + 2, *equals = strchr(name, '=');
        const size_t length = equals ? (size_t)(equals - name) : strlen(name);
        ChapterKnob *k = knob_named(knobs, count, name, length);
        if (!k) return vit_fail(err, VIT_ERR_USAGE, "unknown option '%s' (try --help)", arg);
        const char *text = equals ? equals + 1 : i + 1 < argc ? argv[++i] : NULL;
        if (!text) return vit_fail(err, VIT_ERR_USAGE, "--%s needs a value", k->name);
        VitStatus s = set_knob(k, text, err);
        if (s != VIT_OK) return s;
    }
    return VIT_OK;
}

static void print_help(const char *program, const char *about, const ChapterKnob *knobs,
                       int count) {
    printf("usage: %s%s\n\n%s\n", program, count ? " [--NAME VALUE]..." : "", about);
    if (count) printf("\nThe numbers of its experiments (the defaults are what the book prints "
                      "and the tests pin):\n");
    for (int k = 0; k < count; k++) {
        printf("  --%-12s %s (default %d; %d to %d", knobs[k].name, knobs[k].meaning,
               knobs[k].value, knobs[k].min, knobs[k].max);
        if (knobs[k].multiple > 1) printf(", a multiple of %d", knobs[k].multiple);
        printf(")\n");
    }
    printf("\nIt prints its explanation to standard output and exits 0.\n");
}

// After a run with changed knobs: the command that repeats it.
static void print_rerun(const char *program, const ChapterKnob *knobs, const int *defaults,
                        int count) {
    bool changed = false;
    for (int k = 0; k < count; k++) changed |= knobs[k].value != defaults[k];
    if (!changed) return;
    printf("\nThis run again: %s", program);
    for (int k = 0; k < count; k++)
        if (knobs[k].value != defaults[k]) printf(" --%s %d", knobs[k].name, knobs[k].value);
    printf("\n(without options, the book's run)\n");
}

int chapter_main_knobs(int argc, char **argv, ChapterFn run, const char *about,
                       ChapterKnob *knobs, int count) {
    for (int i = 1; i < argc; i++)
        if (is_help(argv[i])) {
            print_help(argv[0], about, knobs, count);
            return VIT_OK;
        }
    enum { MAX_KNOBS = 16 };
    int defaults[MAX_KNOBS];
    for (int k = 0; k < count && k < MAX_KNOBS; k++) defaults[k] = knobs[k].value;
    VitError err;
    if (count > MAX_KNOBS || chapter_parse_knobs(argc, argv, knobs, count, &err) != VIT_OK) {
        fprintf(stderr, "%s: %s\n", argv[0], count > MAX_KNOBS ? "too many knobs" : err.msg);
        return VIT_ERR_USAGE;
    }
    Chapter ch = {.out = stdout, .width = DEFAULT_WIDTH};
    run(&ch);
    print_rerun(argv[0], knobs, defaults, count);
    return VIT_OK;
}

int chapter_main(int argc, char **argv, ChapterFn run, const char *about) {
    return chapter_main_knobs(argc, argv, run, about, NULL, 0);
}
