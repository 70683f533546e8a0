/**
 * @file tui_prompt.c
 * @brief The line typed in the status row: a breakpoint (B), a stage to go to
 *        (/), a test image (T), a class (D), a file to export to (e), a
 *        threshold to watch (W). Tab completes stage names.
 *
 * This file draws the line and dispatches its keys; the line itself (typed
 * whole or refused, never cut) and the export are prompt_line.c's, which the
 * tests reach without a terminal.
 */
#include "tui.h"
#include "complete.h"
#include "export.h"
#include "prompt_line.h"

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
    // a line longer than the room left shows its end, where the typing is, after
    // "…" (the line holds printable ASCII only: one byte is one column)
    const int room = r.x + r.w - x - 1; // and one column for the cursor
    const char *typed = s->prompt;
    const size_t len = strlen(typed);
    if (room > 1 && len > (size_t)room) {
        x += ui_text(r.y, x, 1, ROLE_STATUS, "…");
        typed += len - (size_t)(room - 1);
    }
    x += ui_text(r.y, x, r.x + r.w - x, ROLE_STATUS, typed);
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
    s->message[0] = '\0'; // an earlier miss's error no longer applies; the status row says where
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
    char out[sizeof s->prompt], list[200];
    const int n = complete_stage(fwd, bwd, s->prompt, out, sizeof out, list, sizeof list);
    snprintf(s->prompt, sizeof s->prompt, "%s", out);
    if (n == 0) state_message(s, "no stage starts with '%s'", s->prompt);
    else if (n > 1) state_message(s, "%s", list);
    else s->message[0] = '\0';
}

static UiAction entered(State *s) {
    s->prompting = false;
    if (!prompt_line_whole(s)) return ACT_NONE; // keys were refused: not what was typed
    switch (s->prompt_kind) {
    case PROMPT_TEST_IMAGE:
    case PROMPT_CLASS: return number_entered(s);
    case PROMPT_GOTO: goto_entered(s); break;
    case PROMPT_EXPORT: prompt_line_export(s); break;
    case PROMPT_WATCH: watch_entered(s); break;
    default: breakpoint_entered(s);
    }
    return ACT_NONE;
}

UiAction prompt_key(State *s, int key) {
    const bool names = s->prompt_kind == PROMPT_BREAKPOINT || s->prompt_kind == PROMPT_GOTO;
    if (key == 27) { // Esc
        s->prompting = false;
        state_message(s, "nothing done");
    } else if (key == '\n' || key == '\r' || key == KEY_ENTER) {
        return entered(s);
    } else if (key == '\t' && names) {
        complete_typed(s);
    } else if (key == KEY_BACKSPACE || key == 127 || key == 8) {
        prompt_line_erase(s);
    } else {
        (void)prompt_line_type(s, key); // a full line refuses the key and says so
    }
    return ACT_NONE;
}
