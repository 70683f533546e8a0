/**
 * @file book_place.c
 * @brief The suites' places in the book, from book_order.h (book_place.h says why).
 */
#include "book_place.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

// The table, one row per suite, in the book's order.
static const BookPlace places[] = {
#define BOOK_SUITE(name, chapter, stage) {#name, chapter, stage},
#include "book_order.h"
#undef BOOK_SUITE
};
enum { PLACES = sizeof places / sizeof places[0] };

const BookPlace *book_place(const char *suite) {
    for (int i = 0; i < PLACES; i++)
        if (strcmp(places[i].suite, suite) == 0) return &places[i];
    return NULL;
}

bool book_same_stage(const BookPlace *a, const BookPlace *b) {
    return a && b && a->chapter == b->chapter && strcmp(a->stage, b->stage) == 0;
}

// The number "5" or "05" names chapter 5; anything else 0.
static int chapter_number(const char *text) {
    if (!isdigit((unsigned char)text[0])) return 0;
    char *end;
    const long n = strtol(text, &end, 10);
    return *end == '\0' && strlen(text) <= 2 && n >= 1 && n <= 99 ? (int)n : 0;
}

int book_chapter_named(const char *text) {
    const int n = chapter_number(text);
    for (int i = 0; i < PLACES; i++) {
        // a chapter's own suite is "chNN_name": NN and name are what a learner types
        const char *s = places[i].suite;
        if (places[i].chapter == 0 || strncmp(s, "ch", 2) != 0) continue;
        if (n == places[i].chapter) return n;
        if (strcmp(text, s + 2) == 0 || strcmp(text, s + 5) == 0) return places[i].chapter;
    }
    return 0;
}

bool book_up_to(const char *suite, int chapter) {
    int last = -1; // chapter's last row
    for (int i = 0; i < PLACES; i++)
        if (places[i].chapter == chapter) last = i;
    const BookPlace *p = book_place(suite);
    return p && last >= 0 && p - places <= last;
}

const char *book_chapter_stage(int chapter) {
    for (int i = 0; i < PLACES; i++)
        if (places[i].chapter == chapter && chapter != 0) return places[i].stage;
    return NULL;
}

int book_chapters(void) {
    int last = 0;
    for (int i = 0; i < PLACES; i++)
        if (places[i].chapter > last) last = places[i].chapter;
    return last;
}
