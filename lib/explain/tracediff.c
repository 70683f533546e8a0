/**
 * @file tracediff.c
 * @brief Comparing two traces stage by stage: the first stage that differs, and how.
 *
 * Shape legend: stages have the contract's shapes (@ref contract), e.g.
 * (B, H, N, N) for the attention probabilities; here every stage is a flat
 * array of numel floats, its flat index turned back into one index per axis
 * only for the report.
 *
 * The order of work: check that the traces can be compared at all (each
 * stage once, the same stages, the same shapes), before a single value is
 * compared, so "they differ" never hides "they are different things"; then
 * compare every element of every stage of the reference, in its order.
 * Names are looked up through a sorted index (n log n), not a search per
 * stage, since a file's header may hold any number of them.
 *
 * What it omits: stages compared in parallel, an early stop at the first
 * difference (the later stages are counted, which costs one more pass over
 * the data), and statistics other than the largest differences.
 */
#include "explain/tracediff.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/trace_stages.h"

/* ------------------------------------------------------------ one stage */

bool tracediff_stage(TraceStageDiff *s, const Tensor *a, const Tensor *b, float atol,
                     float rtol) {
    // a and b are (numel) here: the shape only matters for the report's index
    memset(s, 0, sizeof *s);
    s->ndim = b->ndim;
    memcpy(s->shape, b->shape, sizeof s->shape);
    s->numel = b->numel;
    if (!tensor_same_shape(a, b)) { // the caller checks shapes; this only keeps memory safe
        s->bad = b->numel;
        s->a = s->b = NAN;
        return false;
    }
    bool worst_nonfinite = false;   // a NaN or infinity that differs beats any finite difference
    double worst_diff = -1;
    for (size_t i = 0; i < b->numel; i++) {
        const double x = a->data[i], y = b->data[i];
        if (isnan(x) && isnan(y)) continue;   // NaN agrees with NaN
        if (isinf(y) && x == y) continue;     // and an infinity with the same infinity
        if (!isfinite(x) || !isfinite(y)) {   // a NaN or infinity against anything else
            if (!worst_nonfinite) s->worst = i;
            worst_nonfinite = true;
            s->bad++;
            continue;
        }
        const double diff = fabs(x - y);
        s->finite++;
        if (diff > s->max_abs) s->max_abs = diff;
        const double tol = (double)atol + (double)rtol * fabs(y);
        if (y != 0 && rtol * fabs(y) >= atol && diff / fabs(y) > s->max_rel)
            s->max_rel = diff / fabs(y);
        const double used = diff == 0 ? 0 : tol > 0 ? diff / tol : INFINITY;
        if (used > s->max_used) s->max_used = used;
        if (diff <= tol) continue; // |a − b| ≤ atol + rtol·|b|: they agree
        s->bad++;
        if (!worst_nonfinite && diff > worst_diff) {
            worst_diff = diff;
            s->worst = i;
        }
    }
    if (s->bad == 0) return true;
    // the worst element's flat index, one index per axis (row-major: the last axis varies fastest)
    size_t rest = s->worst;
    for (int k = s->ndim - 1; k >= 0; k--) {
        const size_t n = s->shape[k] > 0 ? (size_t)s->shape[k] : 1;
        s->worst_at[k] = (int)(rest % n);
        rest /= n;
    }
    s->a = a->data[s->worst];
    s->b = b->data[s->worst];
    return false;
}

/* --------------------------------------------------------- comparability */

/** One name of a trace, for the sorted index. */
typedef struct {
    const char *name;
    int index; // its place in the trace
} NameRef;

static int compare_names(const void *x, const void *y) {
    return strcmp(((const NameRef *)x)->name, ((const NameRef *)y)->name);
}

// The names of `v` sorted, for find_stage(); NULL (and a message) when one appears twice.
static NameRef *sort_names(const TraceView *v, const TraceView *trace, const TraceView *ref,
                           VitError *err) {
    NameRef *sorted = vit_malloc(sizeof *sorted * (size_t)(v->count > 0 ? v->count : 1));
    for (int i = 0; i < v->count; i++) sorted[i] = (NameRef){v->stages[i].name, i};
    qsort(sorted, (size_t)v->count, sizeof *sorted, compare_names);
    for (int i = 1; i < v->count; i++)
        if (strcmp(sorted[i - 1].name, sorted[i].name) == 0) {
            vit_fail(err, VIT_ERR_INPUT, "cannot compare %s with %s: stage '%s' appears twice in %s",
                     trace->label, ref->label, sorted[i].name, v->label);
            free(sorted);
            return NULL;
        }
    return sorted;
}

// The stage of `v` called `name`, or NULL.
static const TraceEntry *find_stage(const TraceView *v, const NameRef *sorted, const char *name) {
    const NameRef key = {name, 0};
    const NameRef *hit = bsearch(&key, sorted, (size_t)v->count, sizeof *sorted, compare_names);
    return hit ? &v->stages[hit->index] : NULL;
}

// The first stage of `has`, in its order, that `lacks` does not have; NULL when none.
static const char *first_missing(const TraceView *has, const TraceView *lacks,
                                 const NameRef *lacks_sorted) {
    for (int i = 0; i < has->count; i++)
        if (!find_stage(lacks, lacks_sorted, has->stages[i].name)) return has->stages[i].name;
    return NULL;
}

/** What a letter of the stage table's axes means (the glossary's words). */
static const struct {
    const char *letter, *what;
} axis_words[] = {
    {"B", "batch"}, {"C", "number of channels"}, {"S", "image side"},
    {"P", "number of patches"}, {"N", "number of tokens"}, {"D", "width"},
    {"H", "number of heads"}, {"Dh", "head width"}, {"M", "MLP width"},
    {"Y", "number of classes"},
};

// ", a different batch B (2 vs 1)" for the axes of a contract stage whose sizes differ;
// "" for a stage outside the contract or of another number of axes.
static void differing_axes(char *buf, size_t size, const char *name, const Tensor *a,
                           const Tensor *b) {
    buf[0] = '\0';
    const VitStage *stage = vit_stage_find(name, NULL);
    if (!stage || a->ndim != b->ndim) return;
    char seen[TENSOR_MAX_DIMS][4] = {{0}};
    size_t used = 0;
    const char *axis = stage->axes;
    for (int k = 0; k < b->ndim && *axis; k++) {
        const size_t len = strcspn(axis, ",");
        char letter[4];
        snprintf(letter, sizeof letter, "%.*s", (int)(len < 3 ? len : 3), axis);
        axis += len + (axis[len] == ',');
        bool repeated = false; // (B, C, S, S): say S once
        for (int j = 0; j < k; j++) repeated |= strcmp(seen[j], letter) == 0;
        snprintf(seen[k], sizeof seen[k], "%s", letter);
        if (a->shape[k] == b->shape[k] || repeated) continue;
        const char *what = letter;
        for (size_t w = 0; w < sizeof axis_words / sizeof axis_words[0]; w++)
            if (!strcmp(axis_words[w].letter, letter)) what = axis_words[w].what;
        if (used < size)
            used += (size_t)snprintf(buf + used, size - used, "%s a different %s %s (%d vs %d)",
                                     used ? " and" : ",", what, letter, a->shape[k], b->shape[k]);
    }
}

// Same names, each once, same shapes; else the reason, naming what differs first.
static VitStatus check_comparable(const TraceView *trace, const TraceView *ref,
                                  const NameRef *trace_sorted, const NameRef *ref_sorted,
                                  VitError *err) {
    const char *missing = first_missing(ref, trace, trace_sorted);
    const TraceView *has = ref, *lacks = trace;
    if (!missing) {
        missing = first_missing(trace, ref, ref_sorted);
        has = trace, lacks = ref;
    }
    if (missing)
        return vit_fail(err, VIT_ERR_INPUT,
                        "cannot compare %s with %s: different stages: %s has '%s', %s does not "
                        "(%s has %d stage%s, %s %d)",
                        trace->label, ref->label, has->label, missing, lacks->label, trace->label,
                        trace->count, trace->count == 1 ? "" : "s", ref->label, ref->count);
    for (int i = 0; i < ref->count; i++) {
        const TraceEntry *b = &ref->stages[i], *a = find_stage(trace, trace_sorted, b->name);
        if (tensor_same_shape(&a->t, &b->t)) continue;
        char sa[96], sb[96], axes[256];
        differing_axes(axes, sizeof axes, b->name, &a->t, &b->t);
        return vit_fail(err, VIT_ERR_INPUT,
                        "cannot compare %s with %s: different shapes: %s is %s in %s but %s in "
                        "%s%s",
                        trace->label, ref->label, b->name, tensor_shape_str(&a->t, sa, sizeof sa),
                        trace->label, tensor_shape_str(&b->t, sb, sizeof sb), ref->label, axes);
    }
    return VIT_OK;
}

/* ------------------------------------------------------------ two traces */

TraceView trace_view(const TraceRecorder *rec, const char *label) {
    return (TraceView){label, rec->entries, rec->count};
}

VitStatus tracediff_compare(TraceDiff *d, const TraceView *trace, const TraceView *ref,
                            float atol, float rtol, VitError *err) {
    memset(d, 0, sizeof *d);
    d->atol = atol, d->rtol = rtol;
    // 1. can they be compared? each stage once, the same stages, the same shapes
    NameRef *trace_sorted = sort_names(trace, trace, ref, err);
    NameRef *ref_sorted = trace_sorted ? sort_names(ref, trace, ref, err) : NULL;
    VitStatus s = ref_sorted ? check_comparable(trace, ref, trace_sorted, ref_sorted, err)
                             : VIT_ERR_INPUT;
    // 2. every stage of the reference, in its (forward) order
    for (int i = 0; s == VIT_OK && i < ref->count; i++) {
        const TraceEntry *b = &ref->stages[i], *a = find_stage(trace, trace_sorted, b->name);
        TraceStageDiff st;
        const bool agree = tracediff_stage(&st, &a->t, &b->t, atol, rtol);
        st.name = b->name;
        st.index = i;
        if (!agree && d->differ++ == 0) d->first = st;
        if (st.max_abs > d->max_abs) d->max_abs = st.max_abs, d->max_abs_stage = st.name;
        if (st.max_rel > d->max_rel) d->max_rel = st.max_rel, d->max_rel_stage = st.name;
        if (st.max_used > d->max_used) d->max_used = st.max_used, d->max_used_stage = st.name;
        d->last = st;
        d->stages++;
    }
    free(trace_sorted);
    free(ref_sorted);
    return s;
}

/* ------------------------------------------------------------- the report */

/** Room for a stage's name, escaped: a name from a file may be anything. */
enum { NAME_TEXT = 256 };

// A value as a learner reads it: "NaN" whatever its sign bit, "inf", "-inf", else 6 digits.
static const char *num(char *buf, size_t size, double v) {
    if (isnan(v)) snprintf(buf, size, "NaN");
    else snprintf(buf, size, "%.6g", v);
    return buf;
}

// "(1, 12, 197, 197)"
static const char *shape_str(char *buf, size_t size, const TraceStageDiff *s) {
    int64_t shape[TENSOR_MAX_DIMS];
    for (int k = 0; k < s->ndim; k++) shape[k] = s->shape[k];
    return tensor_shape_format(buf, size, s->ndim, shape, NULL);
}

// "[0, 5, 10, 3]"
static const char *index_str(char *buf, size_t size, const TraceStageDiff *s) {
    size_t used = (size_t)snprintf(buf, size, "[");
    for (int k = 0; k < s->ndim && used < size; k++)
        used += (size_t)snprintf(buf + used, size - used, "%s%d", k ? ", " : "", s->worst_at[k]);
    if (used < size) snprintf(buf + used, size - used, "]");
    return buf;
}

char *tracediff_report(char *buf, size_t size, const TraceDiff *d, const char *sep) {
    if (size == 0) return buf;
    if (d->differ == 0) {
        snprintf(buf, size, "no stage differs: all %d stage%s within %g + %g·|ref|", d->stages,
                 d->stages == 1 ? "" : "s", (double)d->atol, (double)d->rtol);
        return buf;
    }
    const TraceStageDiff *f = &d->first;
    char name[NAME_TEXT], shape[96], at[96], va[32], vb[32], bad[VIT_NUM_BUF], numel[VIT_NUM_BUF];
    char md[96];
    char before[64], later[64];
    if (f->finite == 0) snprintf(md, sizeof md, "no element is finite on both sides");
    else snprintf(md, sizeof md, "max |diff| %.3g%s", f->max_abs,
                  f->finite < f->numel ? " where both are finite" : "");
    if (f->index == 0) snprintf(before, sizeof before, "it is the first stage");
    else if (f->index == 1) snprintf(before, sizeof before, "the stage before it agrees");
    else snprintf(before, sizeof before, "the %d stages before it agree", f->index);
    const int more = d->differ - 1;
    if (more == 0) snprintf(later, sizeof later, "no later stage differs");
    else snprintf(later, sizeof later, "%d later stage%s differ%s too", more, more == 1 ? "" : "s",
                  more == 1 ? "s" : "");
    snprintf(buf, size,
             "first difference at %s %s: %s of %s elements outside %g + %g·|ref|%s"
             "worst at %s: %s vs %s in the reference (%s)%s%s%s%s",
             vit_escape(name, sizeof name, f->name), shape_str(shape, sizeof shape, f),
             vit_thousands(bad, (int64_t)f->bad),
             vit_thousands(numel, (int64_t)f->numel), (double)d->atol, (double)d->rtol, sep,
             index_str(at, sizeof at, f), num(va, sizeof va, f->a), num(vb, sizeof vb, f->b), md,
             sep, before, sep, later);
    return buf;
}

char *tracediff_summary(char *buf, size_t size, const TraceDiff *d) {
    if (size == 0) return buf;
    char first[NAME_TEXT], last[NAME_TEXT], end[2 * NAME_TEXT];
    if (d->differ == 0) {
        if (!d->max_abs_stage) {
            snprintf(buf, size, "0 of %d stages differ; the traces are identical", d->stages);
            return buf;
        }
        char rel[NAME_TEXT + 64] = "";
        if (d->max_rel_stage)
            snprintf(rel, sizeof rel, ", largest relative difference %.3g (%s)", d->max_rel,
                     vit_escape(last, sizeof last, d->max_rel_stage));
        vit_escape(end, sizeof end, d->max_used_stage ? d->max_used_stage : "none");
        snprintf(buf, size, "0 of %d stages differ; largest |diff| %.3g (%s)%s; the closest call "
                 "uses %.2g%% of the tolerance (%s)", d->stages, d->max_abs,
                 vit_escape(first, sizeof first, d->max_abs_stage), rel, 100 * d->max_used, end);
        return buf;
    }
    const TraceStageDiff *f = &d->first, *l = &d->last;
    vit_escape(first, sizeof first, f->name);
    vit_escape(last, sizeof last, l->name);
    if (f->index == l->index) snprintf(end, sizeof end, "it is the last stage");
    else if (l->bad == 0)
        snprintf(end, sizeof end, "the last, %s, agrees (max |diff| %.3g)", last, l->max_abs);
    else if (l->finite < l->numel)
        snprintf(end, sizeof end, "the last, %s, differs too (it holds NaN or infinities)", last);
    else snprintf(end, sizeof end, "the last, %s, differs too, by up to %.3g", last, l->max_abs);
    snprintf(buf, size, "%d of %d stages differ, the first %s (stage %d of %d); %s", d->differ,
             d->stages, first, f->index + 1, d->stages, end);
    return buf;
}

/* ------------------------------------------------------------ trace files */

VitStatus trace_file_open(TraceFile *f, const char *path, VitError *err) {
    memset(f, 0, sizeof *f);
    VitStatus s = st_open(&f->st, path, err);
    if (s != VIT_OK) return s;
    const SafeTensors *st = &f->st;
    // 1. a trace: some tensor is named like a stage; each a float tensor of at most 4 axes
    int stages = 0;
    double copy_bytes = 0; // what the tensors that cannot be used in place need
    for (int i = 0; i < st->count; i++) {
        const StTensor *e = &st->tensors[i];
        stages += vit_stage_find(e->name, NULL) != NULL;
        if (e->dtype != ST_F32 && e->dtype != ST_F16 && e->dtype != ST_BF16 && e->dtype != ST_F64)
            s = vit_fail(err, VIT_ERR_INPUT, "%s: tensor '%s' has dtype %s; a trace holds float "
                         "tensors", path, e->name, st_dtype_name(e->dtype));
        else if (e->ndim > TENSOR_MAX_DIMS)
            s = vit_fail(err, VIT_ERR_INPUT, "%s: tensor '%s' has %d dimensions; a trace's "
                         "stages have at most %d", path, e->name, e->ndim, TENSOR_MAX_DIMS);
        for (int k = 0; s == VIT_OK && k < e->ndim; k++)
            if (e->shape[k] > INT_MAX)
                s = vit_fail(err, VIT_ERR_INPUT, "%s: tensor '%s' has a dimension of %lld; a "
                             "trace's are below %d", path, e->name, (long long)e->shape[k],
                             INT_MAX);
        if (s != VIT_OK) break;
        if (e->dtype != ST_F32 || (uintptr_t)e->bytes % _Alignof(float) != 0)
            copy_bytes += (double)e->numel * sizeof(float);
    }
    if (s == VIT_OK && stages == 0)
        s = vit_fail(err, VIT_ERR_INPUT,
                     "%s: not a trace: %s named like a stage of the forward pass ('input', "
                     "'blocks.0.attn.probs', 'logits', ...); 'vit trace' writes traces", path,
                     st->count ? "none of its tensors is" : "it holds no tensors, none");
    if (s == VIT_OK) s = vit_check_memory(copy_bytes, "converting the trace to float32", err);
    if (s != VIT_OK) {
        trace_file_close(f);
        return s;
    }
    // 2. view each tensor: in place in the map when it is aligned float32, else converted
    f->entries = vit_calloc((size_t)(st->count > 0 ? st->count : 1), sizeof *f->entries);
    for (int i = 0; i < st->count; i++) {
        const StTensor *e = &st->tensors[i];
        int shape[TENSOR_MAX_DIMS] = {0};
        for (int k = 0; k < e->ndim; k++) shape[k] = (int)e->shape[k];
        const float *data = NULL;
        int owned = 0;
        if (e->numel > 0 && (s = st_get_f32(st, e, &data, &owned, err)) != VIT_OK) break;
        f->entries[i].name = e->name; // borrowed from st: not freed by trace_file_close()
        f->entries[i].t = tensor_view_shape((float *)data, e->ndim, shape);
        f->entries[i].t.owns_data = owned != 0;
        f->count++;
    }
    if (s != VIT_OK) trace_file_close(f);
    return s;
}

TraceView trace_file_view(const TraceFile *f) {
    return (TraceView){f->st.label, f->entries, f->count};
}

void trace_file_close(TraceFile *f) {
    for (int i = 0; i < f->count; i++) tensor_free(&f->entries[i].t);
    free(f->entries);
    st_close(&f->st);
    memset(f, 0, sizeof *f);
}
