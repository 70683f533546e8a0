/**
 * @file complete.c
 * @brief complete_stage(): the names a prompt accepts, filtered by a prefix (see complete.h).
 */
#include "complete.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"

/** A candidate name: a node's full name (56 bytes) or "grad." + a block stage's. */
typedef char Name[64];

typedef struct {
    Name *names; // the matches so far
    int count;
    const char *typed;
    size_t typed_len;
} Matches;

static void consider(Matches *m, const char *prefix, const char *name) {
    Name full;
    snprintf(full, sizeof full, "%s%s", prefix, name);
    if (strncmp(full, m->typed, m->typed_len) == 0) memcpy(m->names[m->count++], full, sizeof full);
}

// A pass's nodes by their full names, and its block stages by their short ones
// ("attn.probs"; "grad.attn.probs" when the pass is the backward).
static void consider_pass(Matches *m, const Stepper *s) {
    if (!s) return;
    for (int i = 0; i < s->count; i++) {
        const PipeNode *n = &s->nodes[i];
        consider(m, "", n->name);
        if (n->block >= 0)
            consider(m, strncmp(n->name, VIT_GRAD_PREFIX, strlen(VIT_GRAD_PREFIX)) == 0
                            ? VIT_GRAD_PREFIX : "",
                     n->stage->name);
    }
}

static int by_name(const void *a, const void *b) { return strcmp(a, b); }

// The matches, two spaces apart, whole names only; " …" (4 bytes) says some did not fit.
static void write_list(char *list, size_t size, const Name *names, int count) {
    if (!list || size == 0) return;
    static const char more[] = " …";
    size_t total = 0;
    for (int i = 0; i < count; i++) total += (i ? 2 : 0) + strlen(names[i]);
    size_t room = size - 1; // bytes the names may take
    if (total > room) room = room > strlen(more) ? room - strlen(more) : 0; // and " …" after them
    size_t n = 0;
    int i = 0;
    for (; i < count; i++) {
        const size_t len = strlen(names[i]), sep = i ? 2 : 0;
        if (n + sep + len > room) break;
        memcpy(list + n, "  ", sep);
        memcpy(list + n + sep, names[i], len);
        n += sep + len;
    }
    if (i < count && n + strlen(more) < size) {
        memcpy(list + n, more, strlen(more));
        n += strlen(more);
    }
    list[n] = '\0';
}

int complete_stage(const Stepper *forward, const Stepper *backward, const char *typed, char *out,
                   size_t size, char *list, size_t list_size) {
    if (!typed) typed = "";
    // each node at most twice: its full name and, in a block, its short one
    const int most = 2 * ((forward ? forward->count : 0) + (backward ? backward->count : 0));
    Matches m = {vit_malloc(sizeof(Name) * (size_t)(most > 0 ? most : 1)), 0, typed,
                 strlen(typed)};
    consider_pass(&m, forward);
    consider_pass(&m, backward);
    qsort(m.names, (size_t)m.count, sizeof(Name), by_name);
    int distinct = 0; // the same short name comes from every block: keep one
    for (int i = 0; i < m.count; i++)
        if (distinct == 0 || strcmp(m.names[distinct - 1], m.names[i]) != 0)
            memmove(m.names[distinct++], m.names[i], sizeof(Name));
    // the longest prefix all share: the first and the last in sorted order share it
    size_t common = m.typed_len;
    if (distinct > 0) {
        const char *a = m.names[0], *z = m.names[distinct - 1];
        common = 0;
        while (a[common] && a[common] == z[common]) common++;
    }
    if (size > 0) {
        const char *from = distinct > 0 ? m.names[0] : typed;
        const size_t len = common < size - 1 ? common : size - 1;
        memcpy(out, from, len);
        out[len] = '\0';
    }
    write_list(list, list_size, m.names, distinct);
    free(m.names);
    return distinct;
}
