/**
 * @file chapter.c
 * @brief Word-wrapped prose and pinned values for the chapter programs.
 */
#include "teach/chapter.h"
#include "base/util.h"

#include <stdarg.h>
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

void ch_section(Chapter *ch, const char *heading) {
    if (!ch->out) return;
    fprintf(ch->out, "%s\n", heading);
    underline(ch->out, heading, '-');
    fputc('\n', ch->out);
}

// Greedy word wrap; explicit newlines in the text start new lines.
static void print_wrapped(FILE *f, const char *text, int width) {
    int col = 0;
    const char *p = text;
    while (*p) {
        if (*p == '\n') { fputc('\n', f); col = 0; p++; continue; }
        if (*p == ' ') { p++; continue; }
        size_t len = strcspn(p, " \n");
        int w = columns(p, len);
        if (col > 0 && col + 1 + w > width) { fputc('\n', f); col = 0; }
        if (col > 0) { fputc(' ', f); col++; }
        fwrite(p, 1, len, f);
        col += w;
        p += len;
    }
    fputc('\n', f);
}

void ch_say(Chapter *ch, const char *fmt, ...) {
    if (!ch->out) return;
    va_list ap;
    va_start(ap, fmt);
    char *text = NULL;
    if (vasprintf(&text, fmt, ap) < 0) text = NULL;
    va_end(ap);
    if (!text) return;
    print_wrapped(ch->out, text, wrap_width(ch));
    fputc('\n', ch->out);
    free(text);
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


int chapter_main(int argc, char **argv, ChapterFn run, const char *about) {
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            printf("usage: %s\n\n%s\n\nIt prints its explanation to standard output and exits 0.\n",
                   argv[0], about);
            return VIT_OK;
        }
        fprintf(stderr, "%s: unknown argument '%s' (try --help)\n", argv[0], argv[i]);
        return VIT_ERR_USAGE;
    }
    Chapter ch = {.out = stdout, .width = DEFAULT_WIDTH};
    run(&ch);
    return VIT_OK;
}
