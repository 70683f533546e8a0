/**
 * @file verdict.c
 * @brief The student's record of a test judged against lib's (verdict.h).
 */
#include "verdict.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "base/util.h"

// Is t the same tensor in both runs, bit for bit (an input, a golden)?
static bool same_bits(const Tensor *a, const Tensor *b) {
    if (!tensor_same_shape(a, b)) return false;
    return a->numel == 0 || memcmp(a->data, b->data, a->numel * sizeof(float)) == 0;
}

// Is the student's tensor comparison s right, by the reference r's measure? On
// false, *why says what is wrong.
static bool tensor_right(const RecordEntry *s, const RecordEntry *r, char *why, size_t size) {
    TensorDiff d;
    char summary[400];
    if (same_bits(&s->expected, &r->expected)) {
        if (tensor_diff(&d, &s->actual, &r->expected, r->atol, r->rtol)) return true;
        tensor_diff_summary(summary, sizeof summary, &d, &s->actual, &r->expected, r->atol, r->rtol);
        snprintf(why, size, "%s: %s", r->text, summary);
        return false;
    }
    // both sides came from the student's code: the test's own comparison...
    if (!tensor_diff(&d, &s->actual, &s->expected, r->atol, r->rtol)) {
        tensor_diff_summary(summary, sizeof summary, &d, &s->actual, &s->expected, r->atol, r->rtol);
        snprintf(why, size, "%s: %s", r->text, summary);
        return false;
    }
    // ...and the side it compared with must be lib's answer, near enough
    const float atol = fmaxf(10 * r->atol, 1e-4f), rtol = fmaxf(10 * r->rtol, 1e-3f);
    if (tensor_diff(&d, &s->expected, &r->expected, atol, rtol)) return true;
    tensor_diff_summary(summary, sizeof summary, &d, &s->expected, &r->expected, atol, rtol);
    snprintf(why, size, "%s: what it was compared with is not what lib computes: %s", r->text,
             summary);
    return false;
}

// a and b the same number (NaN the same as NaN)?
static bool same_number(double a, double b) { return a == b || (isnan(a) && isnan(b)); }

// Is the number a near lib's b, as a float computed another way is?
static bool near_number(double a, double b, double tolerance) {
    return same_number(a, b) || fabs(a - b) <= fmax(10 * tolerance, 1e-4) + 1e-3 * fabs(b);
}

// Is the student's comparison of two numbers s right, by the reference r's
// measure? The same rules as tensor_right(); for C's == (tolerance < 0) the
// student's number must be lib's: lib's made the == hold, whatever the types.
static bool number_right(const RecordEntry *s, const RecordEntry *r, char *why, size_t size) {
    const bool same_expected = memcmp(&s->expected_number, &r->expected_number, sizeof(double)) == 0;
    const double want = r->tolerance < 0 ? r->actual_number : r->expected_number;
    bool ok;
    if (same_expected && r->tolerance < 0) {
        ok = same_number(s->actual_number, r->actual_number);
    } else if (same_expected) {
        ok = fabs(s->actual_number - r->expected_number) <= r->tolerance;
    } else { // both sides came from the student's code: its own comparison, near lib's
        const bool held = r->tolerance < 0 ? s->value
                                           : fabs(s->actual_number - s->expected_number) <= r->tolerance;
        ok = held && near_number(s->expected_number, r->expected_number, r->tolerance) &&
             near_number(s->actual_number, r->actual_number, r->tolerance);
    }
    if (!ok && same_expected)
        snprintf(why, size, "%s:%u: %.200s: got %.9g, expected %.9g", r->file, r->line, r->text,
                 s->actual_number, want);
    else if (!ok)
        snprintf(why, size, "%s:%u: %.200s: got %.9g against %.9g; lib's code: %.9g against %.9g",
                 r->file, r->line, r->text, s->actual_number, s->expected_number,
                 r->actual_number, r->expected_number);
    return ok;
}

// Would the failed comparison s hold within VERDICT_NEAR times r's tolerance,
// against r's own expected side (not one the student's code computed)?
static bool near_miss(const RecordEntry *s, const RecordEntry *r) {
    if (r->kind == RECORD_TENSOR) {
        TensorDiff d;
        return same_bits(&s->expected, &r->expected) &&
               tensor_diff(&d, &s->actual, &r->expected, VERDICT_NEAR * r->atol, VERDICT_NEAR * r->rtol);
    }
    return r->kind == RECORD_NUMBER && r->tolerance > 0 &&
           memcmp(&s->expected_number, &r->expected_number, sizeof(double)) == 0 &&
           fabs(s->actual_number - r->expected_number) <= VERDICT_NEAR * r->tolerance;
}

// Is s the same check as r (the same assertion, or the same comparison)?
static bool same_check(const RecordEntry *s, const RecordEntry *r) {
    if (s->kind != r->kind) return false;
    if (r->kind == RECORD_TENSOR) return strcmp(s->text, r->text) == 0;
    return s->line == r->line && strcmp(s->file, r->file) == 0;
}

static void describe(char *buf, size_t size, const RecordEntry *e) {
    if (e->kind == RECORD_TENSOR) snprintf(buf, size, "the comparison '%.100s'", e->text);
    else snprintf(buf, size, "the assertion at %.100s:%u", e->file, e->line);
}

// One failure, listed unless it repeats one already listed (a check in a loop).
static void fail(Verdict *v, const char *line) {
    v->failed++;
    for (int k = 0; k < v->listed; k++)
        if (strcmp(v->line[k], line) == 0) {
            v->times[k]++;
            return;
        }
    if (v->listed < VERDICT_LINES) {
        snprintf(v->line[v->listed], sizeof v->line[0], "%s", line);
        v->times[v->listed++] = 1;
    }
}

// Did lib's own code pass every check of its record?
static bool reference_passes(const Record *r) {
    for (int i = 0; i < r->count; i++) {
        const RecordEntry *e = &r->entries[i];
        if ((e->kind == RECORD_BOOL || e->kind == RECORD_SUM || e->kind == RECORD_NUMBER) && !e->value)
            return false;
        TensorDiff d;
        if (e->kind == RECORD_TENSOR && !tensor_diff(&d, &e->actual, &e->expected, e->atol, e->rtol))
            return false;
    }
    return r->ended;
}

Verdict verdict_judge(const Record *student, const Record *reference) {
    Verdict v = {0};
    char line[480];
    if (!reference_passes(reference)) {
        v.reference_failed = true;
        fail(&v, "lib's own code fails this test here: the test cannot judge yours");
        return v;
    }
    const int n = student->count < reference->count ? student->count : reference->count;
    bool near = true;           // every failure so far a near miss
    bool tensor_failed = false; // a tensor comparison has failed
    int i = 0;
    for (; i < n; i++) {
        const RecordEntry *s = &student->entries[i], *r = &reference->entries[i];
        if (!same_check(s, r)) break;
        v.checked++;
        if ((r->kind == RECORD_BOOL || r->kind == RECORD_SUM) && !s->value) {
            // the student's process wrote the condition (with its numbers); it decides nothing.
            // A sum of tensor comparisons that failed is said by them: not listed again.
            const bool said = r->kind == RECORD_SUM && tensor_failed;
            v.failed += said;
            near = near && said;
            if (!said) {
                snprintf(line, sizeof line, "%s:%u: %s", r->file, r->line, s->text);
                fail(&v, line);
            }
        } else if ((r->kind == RECORD_NUMBER && !number_right(s, r, line, sizeof line)) ||
                   (r->kind == RECORD_TENSOR && !tensor_right(s, r, line, sizeof line))) {
            near = near && near_miss(s, r);
            tensor_failed = tensor_failed || r->kind == RECORD_TENSOR;
            fail(&v, line);
        }
    }
    if (student->ended && i == n && student->count != reference->count) {
        // one stopped checking before the other: the path differs at the first missing check
        char what[160];
        describe(what, sizeof what, i < reference->count ? &reference->entries[i] : &student->entries[i]);
        snprintf(line, sizeof line, "the test made %d checks with this code and %d with lib's; "
                 "%s %s", student->count, reference->count, what,
                 i < reference->count ? "was never reached" : "was not made with lib's code");
        fail(&v, line);
    } else if (i < n && v.failed == 0) {
        char want[160], got[160];
        describe(want, sizeof want, &reference->entries[i]);
        describe(got, sizeof got, &student->entries[i]);
        snprintf(line, sizeof line, "the test went another way than with lib's code: check %d was %s, "
                 "with lib's %s", i + 1, got, want);
        fail(&v, line);
    } else if (i < n) {
        v.failed++; // a path changed by a failure already listed
    }
    v.passed = v.failed == 0 && student->ended;
    v.near_miss = !v.passed && near && v.failed > 0 && student->ended && i == n &&
                  student->count == reference->count;
    return v;
}
