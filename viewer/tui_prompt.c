/**
 * @file tui_prompt.c
 * @brief The line typed in the status row: a breakpoint (B), a stage to go to
 *        (/), a test image (T), a class (D), a file to export to (e), a
 *        threshold to watch (W). Tab completes stage names.
 */
#include "tui.h"
#include "complete.h"
#include "export.h"
#include "fileio.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

// What the status row asks, for each kind of line.
static void prompt_question(const State *s, char *buf, size_t size) {
    char path[160];
    switch (s->prompt_kind) {
    case PROMPT_TEST_IMAGE: snprintf(buf, size, " Fashion-MNIST test image (0-9999): "); break;
    case PROMPT_CLASS:
        snprintf(buf, size, " backward of the logit of class (0-%d): ", s->cfg->num_classes - 1);
        break;
    case PROMPT_GOTO: snprintf(buf, size, " go to stage (Tab completes): "); break;
    case PROMPT_EXPORT:
        export_default_path(path, sizeof path, state_node(s)->name, "npy");
        snprintf(buf, size, " export to (Enter: %s; .safetensors for safetensors): ", path);
        break;
    case PROMPT_WATCH:
        snprintf(buf, size, " stop where |value| exceeds (0: off; now %g): ", (double)s->watch);
        break;
    default:
        snprintf(buf, size, " breakpoint at (blocks.5.attn.probs, attn.probs for all, - none; "
                 "Tab completes): ");
    }
}

void prompt_draw(const State *s, Rect r) {
    char ask[320];
    prompt_question(s, ask, sizeof ask);
    int x = r.x + ui_text(r.y, r.x, r.w, ROLE_STATUS, ask);
    x += ui_text(r.y, x, r.x + r.w - x, ROLE_STATUS, s->prompt);
    ui_text(r.y, x, r.x + r.w - x, ROLE_KEY, "_");
}

// The stepper of the pass a stage name belongs to: "grad.…" the backward's.
static Stepper *pass_of(State *s, const char *name) {
    const bool grad = strncmp(name, VIT_GRAD_PREFIX, strlen(VIT_GRAD_PREFIX)) == 0;
    return grad == s->backward ? &s->stepper : &s->other_stepper;
}

// Enter on a number (a test image, a class): ask the main loop for it.
static UiAction number_entered(State *s) {
    char *end;
    const long n = strtol(s->prompt, &end, 10);
    const bool test = s->prompt_kind == PROMPT_TEST_IMAGE;
    const long most = test ? 1 << 30 : s->cfg->num_classes - 1;
    if (!s->prompt[0] || *end || n < 0 || n > most) {
        if (test) state_message(s, "'%s' is not a test image number (0-9999)", s->prompt);
        else state_message(s, "'%s' is not a class (0-%ld)", s->prompt, most);
        return ACT_NONE;
    }
    s->request = test ? REQ_TEST_IMAGE : REQ_BACKWARD;
    s->request_arg = (int)n;
    return ACT_REQUEST;
}

static void breakpoint_entered(State *s) {
    if (!strcmp(s->prompt, "-")) { // every breakpoint of both passes off
        Stepper *both[2] = {&s->stepper, &s->other_stepper};
        int cleared = 0;
        for (int p = 0; p < 2; p++)
            for (int i = 0; i < both[p]->count; i++)
                cleared += both[p]->breakpoints[i], both[p]->breakpoints[i] = false;
        state_message(s, "%d breakpoint%s cleared", cleared, cleared == 1 ? "" : "s");
        return;
    }
    if (s->prompt[0])
        stepper_toggle_by_name(pass_of(s, s->prompt), s->prompt, s->message, sizeof s->message);
}

// /: show the stage named, in the pass shown (the other pass's names say so).
static void goto_entered(State *s) {
    const int node = stepper_find(&s->stepper, s->prompt);
    if (node < 0) {
        const bool other = stepper_find(&s->other_stepper, s->prompt) >= 0;
        state_message(s, other ? "%s is in the %s pass: d switches to it"
                               : "no stage is called '%s' (Tab completes)",
                      s->prompt, s->backward ? "forward" : "backward");
        return;
    }
    stepper_move_node(&s->stepper, node - s->stepper.selected);
    state_clamp(s);
}

// e: write the tensor shown to a file, .npy unless the name ends in .safetensors.
static void export_entered(State *s) {
    const PipeNode *n = state_node(s);
    const HistEntry *e = state_entry(s);
    char path[256];
    if (s->prompt[0]) snprintf(path, sizeof path, "%s", s->prompt);
    else export_default_path(path, sizeof path, n->name, "npy");
    if (!e || !e->kept) {
        state_message(s, "%s: nothing to export (not computed yet, or dropped)", n->name);
        return;
    }
    VitError err;
    const char *inputs[2][2] = {{s->weights_path, "the weights"}, {s->picture_path, "the picture"}};
    for (int i = 0; i < 2; i++) // never over the files the pass reads
        if (inputs[i][0] && inputs[i][0][0] &&
            file_check_not_input(path, "the export", inputs[i][0], inputs[i][1], &err) != VIT_OK) {
            char safe[200];
            state_message(s, "%s", vit_escape(safe, sizeof safe, err.msg));
            return;
        }
    const size_t len = strlen(path), ext = strlen(".safetensors");
    const bool st = len > ext && !strcmp(path + len - ext, ".safetensors");
    VitStatus status = st ? export_safetensors(&e->t, n->name, path, &err)
                          : export_npy(&e->t, path, &err);
    char safe[200];
    if (status != VIT_OK) state_message(s, "%s", vit_escape(safe, sizeof safe, err.msg));
    else state_message(s, "wrote %s (%s, %zu values)", vit_escape(safe, sizeof safe, path),
                       n->name, e->t.numel);
}

static void watch_entered(State *s) {
    char *end;
    const double v = strtod(s->prompt, &end);
    if (!s->prompt[0] || *end || !(v >= 0) || v > 1e30) {
        state_message(s, "'%s' is not a threshold (a number ≥ 0)", s->prompt);
        return;
    }
    s->watch = (float)v;
    if (v > 0) state_message(s, "the pass stops at a stage whose |value| exceeds %g", v);
    else state_message(s, "no watch");
}

// Tab: complete a stage name as far as it is unique, and list the candidates.
static void complete_typed(State *s) {
    const Stepper *fwd = state_forward_stepper(s);
    const Stepper *bwd = s->backward ? &s->stepper : &s->other_stepper;
    char out[256], list[200];
    const int n = complete_stage(fwd, bwd, s->prompt, out, sizeof out, list, sizeof list);
    snprintf(s->prompt, sizeof s->prompt, "%s", out);
    if (n == 0) state_message(s, "no stage starts with '%s'", s->prompt);
    else if (n > 1) state_message(s, "%s", list);
    else s->message[0] = '\0';
}

static UiAction entered(State *s) {
    s->prompting = false;
    switch (s->prompt_kind) {
    case PROMPT_TEST_IMAGE:
    case PROMPT_CLASS: return number_entered(s);
    case PROMPT_GOTO: goto_entered(s); break;
    case PROMPT_EXPORT: export_entered(s); break;
    case PROMPT_WATCH: watch_entered(s); break;
    default: breakpoint_entered(s);
    }
    return ACT_NONE;
}

UiAction prompt_key(State *s, int key) {
    size_t len = strlen(s->prompt);
    const bool names = s->prompt_kind == PROMPT_BREAKPOINT || s->prompt_kind == PROMPT_GOTO;
    if (key == 27) { // Esc
        s->prompting = false;
        state_message(s, "nothing done");
    } else if (key == '\n' || key == '\r' || key == KEY_ENTER) {
        return entered(s);
    } else if (key == '\t' && names) {
        complete_typed(s);
    } else if (key == KEY_BACKSPACE || key == 127 || key == 8) {
        if (len) s->prompt[len - 1] = '\0';
    } else if (key >= 32 && key < 127 && len + 1 < sizeof s->prompt) {
        s->prompt[len] = (char)key;
        s->prompt[len + 1] = '\0';
    }
    return ACT_NONE;
}
