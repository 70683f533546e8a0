/**
 * @file finite.c
 * @brief vit_check_finite(): after a forward pass, are the logits numbers? If not, where
 *        did the first NaN or infinity appear, and do the weights hold one?
 *
 * A NaN spreads: one in a weight reaches every token after the next attention,
 * and the logits are then NaN for every class: a table of "nan" probabilities
 * at best, a confident-looking "0.0000 class 0" at worst (a softmax that took
 * the NaN row for a masked one did that here once). Checking the K logits
 * costs nothing; only when they are not finite is the pass run again with a
 * tracer that looks at every stage, to name the first one that went wrong.
 */
#include "model/vit.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/** How many NaN and infinities a block of floats holds. */
typedef struct {
    size_t nan, inf;
} NonFinite;

static NonFinite count_non_finite(const float *x, size_t n) {
    NonFinite c = {0, 0};
    for (size_t i = 0; i < n; i++) {
        if (isnan(x[i])) c.nan++;
        else if (isinf(x[i])) c.inf++;
    }
    return c;
}

// "3 NaN and 1 infinite value"
static void describe(char *buf, size_t size, NonFinite c) {
    if (c.nan && c.inf)
        snprintf(buf, size, "%zu NaN and %zu infinite value%s", c.nan, c.inf, c.inf == 1 ? "" : "s");
    else if (c.nan) snprintf(buf, size, "%zu NaN", c.nan);
    else snprintf(buf, size, "%zu infinite value%s", c.inf, c.inf == 1 ? "" : "s");
}

/** The first stage of a pass that holds a non-finite value (a TraceFn's user data). */
typedef struct {
    char stage[64];
    NonFinite count;
} FirstBad;

static void find_first_bad(void *user, const char *name, const Tensor *t) {
    FirstBad *f = user;
    if (f->stage[0]) return;
    NonFinite c = count_non_finite(t->data, t->numel);
    if (c.nan + c.inf == 0) return;
    snprintf(f->stage, sizeof f->stage, "%s", name);
    f->count = c;
}

// The first parameter (in state_dict order) holding a non-finite value: its
// name and count written to `out`; false when every parameter is finite.
static bool first_bad_param(const Vit *vit, char *out, size_t size) {
    int n = vit_params(vit, NULL);
    VitParam *params = vit_malloc(sizeof *params * (size_t)n);
    vit_params(vit, params);
    bool found = false;
    for (int i = 0; i < n && !found; i++) {
        if (!params[i].data) continue; // an int8 file's weight: integers, with checked scales
        NonFinite c = count_non_finite(params[i].data, params[i].numel);
        if (c.nan + c.inf == 0) continue;
        char what[96], total[VIT_NUM_BUF];
        describe(what, sizeof what, c);
        snprintf(out, size, "'%s' (%s of %s values)", params[i].name, what,
                 vit_thousands(total, (int64_t)params[i].numel));
        found = true;
    }
    free(params);
    return found;
}

VitStatus vit_check_finite(Vit *vit, const Tensor *input, VitError *err) {
    Tensor logits = vit_logits(vit);
    NonFinite bad = count_non_finite(logits.data, logits.numel);
    if (bad.nan + bad.inf == 0) return VIT_OK;
    char logit_text[96];
    describe(logit_text, sizeof logit_text, bad);
    // run again, looking at every stage this time
    FirstBad first = {{0}, {0, 0}};
    VitError ignored;
    if (vit_forward(vit, input, find_first_bad, &first, &ignored) != VIT_OK || !first.stage[0])
        snprintf(first.stage, sizeof first.stage, "logits");
    char stage_text[96], param[192], cause[320];
    describe(stage_text, sizeof stage_text, first.count);
    if (first_bad_param(vit, param, sizeof param))
        snprintf(cause, sizeof cause, "the weights hold them, first in %s", param);
    else if (!strcmp(first.stage, "input"))
        snprintf(cause, sizeof cause, "the input already holds them: check how it was made (its "
                 "file, its mean and std)");
    else
        snprintf(cause, sizeof cause, "the weights and the input are finite, so values grew "
                 "past what float32 can hold");
    return vit_fail(err, VIT_ERR_INPUT,
                    "the logits are not finite (%s of %zu): the first stage with NaN or infinity "
                    "is %s (%s); %s", logit_text, logits.numel, first.stage, stage_text, cause);
}
