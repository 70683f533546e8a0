/**
 * @file prompt_line.c
 * @brief The status row's line: prompt_line_type(), prompt_line_export() and
 *        the rest (see prompt_line.h).
 */
#include "prompt_line.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "export.h"
#include "base/fileio.h"

void prompt_line_open(State *s, PromptKind kind) {
    s->prompting = true;
    s->prompt_kind = kind;
    s->prompt[0] = '\0';
    s->prompt_overflow = false;
}

bool prompt_line_type(State *s, int ch) {
    if (ch < 32 || ch >= 127) return false;
    const size_t len = strlen(s->prompt);
    if (len + 1 >= sizeof s->prompt) { // no room for it and the NUL: refused, and said
        s->prompt_overflow = true;
        state_message(s, "the line is full (%zu characters): the rest was not typed; Esc "
                      "cancels", sizeof s->prompt - 1);
        return false;
    }
    s->prompt[len] = (char)ch;
    s->prompt[len + 1] = '\0';
    return true;
}

void prompt_line_erase(State *s) {
    const size_t len = strlen(s->prompt);
    if (len) s->prompt[len - 1] = '\0';
}

bool prompt_line_whole(State *s) {
    if (!s->prompt_overflow) return true;
    // Backspace does not bring back what was refused: the line is still not
    // what was typed, so it is not used at all
    state_message(s, "nothing done: what was typed is longer than the %zu characters the line "
                  "holds", sizeof s->prompt - 1);
    return false;
}

// @p text escaped for the terminal (it quotes a file name, which may hold escape
// sequences) in @p out; when too long for it, its end behind "…": a message about a
// file ends in what happened to it, and a name cut at its end reads as another file.
static char *escaped_tail(char *out, size_t size, const char *text) {
    const size_t room = 4 * strlen(text) + 1; // vit_escape: at most four characters a byte
    char *all = vit_malloc(room);
    vit_escape(all, room, text);
    const size_t len = strlen(all), ellipsis = strlen("…");
    if (len < size) {
        memcpy(out, all, len + 1);
    } else {
        const char *from = all + len - (size - 1 - ellipsis);
        while ((*from & 0xC0) == 0x80) from++; // start on a whole UTF-8 character
        snprintf(out, size, "…%s", from);
    }
    free(all);
    return out;
}

void prompt_line_export(State *s) {
    if (!prompt_line_whole(s)) return;
    const PipeNode *n = state_node(s);
    const HistEntry *e = state_entry(s);
    if (!e || !e->kept) {
        state_message(s, "%s: nothing to export (not computed yet, or dropped)", n->name);
        return;
    }
    // the name as typed, whole (the line is as long as a path may be); a
    // default one only when nothing was typed
    char fallback[256];
    export_default_path(fallback, sizeof fallback, n->name, "npy");
    const char *path = s->prompt[0] ? s->prompt : fallback;
    VitError err;
    char safe[sizeof s->message];
    const char *inputs[2][2] = {{s->weights_path, "the weights"}, {s->picture_path, "the picture"}};
    for (int i = 0; i < 2; i++) // never over the files the pass reads
        if (inputs[i][0] && inputs[i][0][0] &&
            file_check_not_input(path, "the export", inputs[i][0], inputs[i][1], &err) != VIT_OK) {
            state_message(s, "%s", escaped_tail(safe, sizeof safe, err.msg));
            return;
        }
    const size_t len = strlen(path), ext = strlen(".safetensors");
    const bool st = len > ext && !strcmp(path + len - ext, ".safetensors");
    VitStatus status = st ? export_safetensors(&e->t, n->name, path, &err)
                          : export_npy(&e->t, path, &err);
    if (status != VIT_OK) {
        state_message(s, "%s", escaped_tail(safe, sizeof safe, err.msg));
    } else {
        char shown[64]; // a long name shows its end: the title row has room for little more
        state_message(s, "wrote %s (%s, %zu values)", escaped_tail(shown, sizeof shown, path),
                      n->name, e->t.numel);
    }
}
