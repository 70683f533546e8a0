/**
 * @file check.h
 * @brief Test helpers: tensor comparison with a tolerance, and golden files.
 *
 * Tolerance (llm.c's check_tensor): an element passes when
 *   |actual − expected| ≤ atol + rtol · |expected|;
 * a NaN passes only against a NaN, an infinity only against the same infinity.
 *
 * A failing comparison prints a short report to stderr: the tensor's (or
 * stage's) name and shape, how many elements failed, the largest difference,
 * the worst element with its index, the first values of both sides, and the
 * NaN and infinities of either side (how many, and where the first is). A
 * series of comparisons (the stages of one forward pass) shares a CheckReport:
 * the first failure is printed in full, the next CHECK_LINES in one line each,
 * the rest are counted ("… and 25 more"), so the first lines name the stage
 * where things went wrong and a failure never prints thousands of lines.
 * Under a failing tensor, one more line says in words what the difference is
 * when a diagnosis of diagnose.h holds over all of it ("      in words: a
 * factor of exactly √Dh = 2 (Dh = 4): the scores were not scaled by 1/√Dh");
 * the assertion's message repeats the first one. No diagnosis, no line.
 *
 * The assertions are macros, so CUnit records the file and line of the test
 * that called them, never this helper's.
 *
 * Golden files are safetensors written by the tools/gen_golden*.py scripts with PyTorch.
 * A golden may carry its own tolerance for a tensor as the metadata entry
 * "tol.NAME" = "ATOL RTOL"; otherwise the checker's defaults apply. When a
 * golden_check() series fails, the report ends with where the golden was made,
 * from its "cpu", "isa" and "torch" entries (when the file has them).
 */
#ifndef VIT_TESTS_CHECK_H
#define VIT_TESTS_CHECK_H

#include <CUnit/CUnit.h>
#include <stdbool.h>

#include "teach/chapter.h"
#include "io/safetensors.h"
#include "base/tensor.h"
#include "model/vit.h"

/* ------------------------------------------------- CUnit's number assertions */

/*
 * CUnit's CU_ASSERT_EQUAL and CU_ASSERT_DOUBLE_EQUAL, made to write both
 * numbers down in record mode (record.h), so the grader compares them itself
 * rather than trusting whether they held. Same meaning as CUnit's: C's ==,
 * and |actual − expected| ≤ |granularity|.
 */
#undef CU_ASSERT_EQUAL
#undef CU_ASSERT_EQUAL_FATAL
#undef CU_ASSERT_DOUBLE_EQUAL
#undef CU_ASSERT_DOUBLE_EQUAL_FATAL
#define CHECK_ASSERT_EQUAL(actual, expected, name, fatal)                                      \
    do { /* each side evaluated once, as CUnit does: it may call the student's function */     \
        const __typeof__(actual) check_actual_ = (actual);                                     \
        const __typeof__(expected) check_expected_ = (expected);                               \
        check_assert_number(check_actual_ == check_expected_, (double)check_actual_,           \
                            (double)check_expected_, -1.0,                                     \
                            name "(" #actual "," #expected ")", __FILE__, __LINE__, fatal);    \
    } while (0)
#define CU_ASSERT_EQUAL(actual, expected) CHECK_ASSERT_EQUAL(actual, expected, "CU_ASSERT_EQUAL", CU_FALSE)
#define CU_ASSERT_EQUAL_FATAL(actual, expected)                                                \
    CHECK_ASSERT_EQUAL(actual, expected, "CU_ASSERT_EQUAL_FATAL", CU_TRUE)
#define CU_ASSERT_DOUBLE_EQUAL(actual, expected, granularity)                                  \
    check_assert_within((double)(actual), (double)(expected), (double)(granularity),           \
                        "CU_ASSERT_DOUBLE_EQUAL(" #actual "," #expected "," #granularity ")",  \
                        __FILE__, __LINE__, CU_FALSE)
#define CU_ASSERT_DOUBLE_EQUAL_FATAL(actual, expected, granularity)                            \
    check_assert_within((double)(actual), (double)(expected), (double)(granularity),           \
                        "CU_ASSERT_DOUBLE_EQUAL_FATAL(" #actual "," #expected "," #granularity \
                        ")", __FILE__, __LINE__, CU_TRUE)
/*
 * How many tensors the forward's trace holds, counted here from the trace
 * contract: 7 outside the blocks (input, patch_embed, tokens, embed, norm,
 * pre_logits, logits) and 15 in each block (norm1, attn.q, .k, .v, .scores,
 * .scaled, .probs, .context, .proj, resid1, norm2, mlp.fc1, .gelu, .fc2, out).
 * Not lib's vit_trace_length(): a stage missing from lib's table would shorten
 * the count the tests hold the trace to as well.
 */
#define TRACE_STAGES(depth) (7 + 15 * (depth))

/** CU_ASSERT_EQUAL's work: @p held is C's ==, the values are recorded as doubles. */
void check_assert_number(bool held, double actual, double expected, double tolerance,
                         const char *condition, const char *file, int line, CU_BOOL fatal);
/** CU_ASSERT_DOUBLE_EQUAL's work: |actual − expected| ≤ |granularity|. */
void check_assert_within(double actual, double expected, double granularity,
                         const char *condition, const char *file, int line, CU_BOOL fatal);

/** Defaults for float32 against PyTorch float32 on short reductions. */
#define CHECK_ATOL 1e-5f
#define CHECK_RTOL 1e-4f

/** One-line reports after the first, full, one of a series; the rest are counted. */
#define CHECK_LINES 10

/** Path of a file under tests/golden/ (static buffer, valid until the next call). */
const char *golden_path(const char *file);

/**
 * One tensor of tests/golden/@p file, owned by the caller (free it). The file
 * is opened for each read, so tests stay independent; a missing file or
 * tensor fails the test fatally with the loader's message.
 */
#define golden_tensor(file, name) golden_tensor_at((file), (name), __FILE__, __LINE__)
Tensor golden_tensor_at(const char *file, const char *name, const char *src, int line);

/**
 * The tolerance tests/golden/@p file gives tensor @p name in its metadata,
 * "tol.NAME" = "ATOL RTOL" (the script that made it says why); a file
 * without one fails the test fatally.
 */
void golden_meta_tolerance(const char *file, const char *name, float *atol, float *rtol);
/**
 * @p actual against tensor @p name of tests/golden/@p file, within the
 * golden's own tolerance for it (golden_meta_tolerance()); with
 * VIT_GOLDEN_REPORT=1, also its largest difference.
 */
void expect_golden_tensor(const char *file, const char *name, const Tensor *actual);
/** The small ViT of tools/gen_golden_vit.py (SMALL there), whose goldens
 *  vit_small*.safetensors several suites check: S 32, p 8, D 64, H 4, L 2, M 256, Y 10. */
extern const VitConfig check_small_config;
/** Its weights' draws (`vit make-weights --seed 7 --std 0.2 --bias-std 0.02 --norm-std 0.1`). */
extern const VitInit check_small_init;
/** The small model's golden batch: how many images, and their seed. */
enum { CHECK_SMALL_BATCH = 2, CHECK_SMALL_INPUT_SEED = 11 };
/** @brief A batch of B images (B, C, S, S) for @p c, uniform in [-1, 1) from
 *         @p seed (vitrng.py's image_batch). */
Tensor check_image_batch(const VitConfig *c, int B, uint64_t seed);
/** The shipped Fashion-MNIST model, data/models/vit-fashion.safetensors, built;
 *  the test stops (fatally) when it cannot be. Free it with vit_free(). */
Vit check_shipped_model(void);

/* ------------------------------------------------------------ one comparison */

/** What one comparison found. */
typedef struct {
    bool shape_ok;     /**< same dimensions and sizes */
    size_t numel;      /**< elements compared */
    size_t bad;        /**< elements outside tolerance (non-finite mismatches included) */
    size_t first_bad;  /**< flat index of the first element outside tolerance */
    size_t worst;      /**< flat index of the worst: the first non-finite mismatch, else the largest excess */
    double max_diff;   /**< largest |actual − expected| over pairs where both are finite */
    size_t finite_pairs; /**< how many pairs those are */
    size_t nan[2];     /**< NaN in actual [0] and expected [1] */
    size_t inf[2];     /**< ±Inf in actual [0] and expected [1] */
    size_t first_nan[2], first_inf[2]; /**< flat index of the first of each */
} TensorDiff;

/** How much a failing comparison prints. */
typedef enum { CHECK_QUIET, CHECK_LINE, CHECK_FULL } CheckDetail;

/** Compare; fills @p d and returns true when shapes match and every element is within tolerance. */
bool tensor_diff(TensorDiff *d, const Tensor *actual, const Tensor *expected, float atol,
                 float rtol);
/** Print what tensor_diff() found about @p label: several lines (CHECK_FULL), one, or none. */
void tensor_diff_print(const TensorDiff *d, const Tensor *actual, const Tensor *expected,
                       float atol, float rtol, const char *label, CheckDetail detail);
/** The one-line summary, e.g. "(2, 10): 20 of 20 elements outside 2e-05 + 0.0001·|ref|, max |diff| 0.05". */
void tensor_diff_summary(char *buf, size_t size, const TensorDiff *d, const Tensor *actual,
                         const Tensor *expected, float atol, float rtol);

/**
 * @brief Fill @p x (n floats) with NaN before an operation writes it.
 *
 * An output buffer is poisoned before each backend or variant writes it, so an
 * element the operation never writes stays NaN and fails the comparison, rather
 * than passing on the numbers an earlier call left there.
 */
void check_poison(float *x, size_t n);

/**
 * Compare two tensors; on mismatch print the full report to stderr naming @p label.
 * Returns true when shapes match and every element is within tolerance.
 */
bool tensor_close(const Tensor *actual, const Tensor *expected, float atol, float rtol,
                  const char *label);

/**
 * @brief tensor_close() without a word: true when every element of @p actual
 *        is within atol + rtol·|candidate| of @p candidate (same shape).
 *
 * For diagnosing a failure: compare a student's output with what a likely
 * mistake would have produced (no max subtraction, the wrong axis, …).
 */
bool tensor_near(const Tensor *actual, const Tensor *candidate, float atol, float rtol);

/**
 * @brief Name the mistake a failed check most likely is: prints
 *        `    hint: MESSAGE` on stdout. The grader (`make exercise`) shows these
 *        lines beside the test and puts them in the results file.
 */
void check_hint(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/**
 * @brief Whether attention_online() gives softmax(q·kᵀ/√Dh)·v on a small random
 *        case (B = 2, H = 2, N = 5, Dh = 4, one block of MHA_KEY_BLOCK keys),
 *        against the same sums done here in double precision.
 *
 * It is chapter 13's function, and lib's forward runs it whenever nothing reads
 * the (N, N) matrices (mha_forward()'s online road). The earlier stages' tests
 * leave that road to chapter 13 while this is false, or name it when it is.
 */
bool check_attention_online_by_hand(void);

/** CUnit assertion over tensor_close(); the failure names the caller's file and line and @p label. */
#define assert_tensor_close(actual, expected, atol, rtol, label)                               \
    check_assert_close((actual), (expected), (atol), (rtol), (label), __FILE__, __LINE__,      \
                       __func__)
bool check_assert_close(const Tensor *actual, const Tensor *expected, float atol, float rtol,
                        const char *label, const char *src, int line, const char *func);
/** A tensor a test holds besides the two it compares, named for diagnose.c's table. */
typedef struct {
    const char *name;       /**< e.g. "tokens", "x", "w", "gamma" */
    const Tensor *expected; /**< its expected (or given) value */
} CheckStage;
/**
 * assert_tensor_close() for a stage computed from others, which the test has: each a
 * CheckStage after the label, e.g. `{"tokens", &want_tokens}` for an "embed", or
 * `{"x", &x}, {"w", &w}` for a "linear"; a failure can then say which step was left out
 * or done another way (the wrong softmax axis, a weight not transposed, …).
 */
#define assert_tensor_close_from(actual, expected, atol, rtol, label, ...)                     \
    check_assert_close_from((actual), (expected), (atol), (rtol), (label),                     \
                            (const CheckStage[]){__VA_ARGS__, {NULL, NULL}}, __FILE__,         \
                            __LINE__, __func__)
bool check_assert_close_from(const Tensor *actual, const Tensor *expected, float atol,
                             float rtol, const char *label, const CheckStage *known,
                             const char *src, int line, const char *func);

/* ------------------------------------------------------- a series of them */

/** The failures of a series of comparisons: the first in full, CHECK_LINES in a line, the rest counted. */
typedef struct {
    int compared;   /**< comparisons made */
    int failures;   /**< of them, how many failed */
    char first[96]; /**< name of the first that failed */
    char said[360]; /**< the first failure a diagnosis named, "stage: words" (diagnose.h), or "" */
} CheckReport;

/** Count one failure of @p name and say how much of it to print. */
CheckDetail check_report_fail(CheckReport *r, const char *name);
/** Print "… and N more @p what differ" for the failures that were only counted. */
void check_report_end(const CheckReport *r, const char *what);
/** tensor_close() as one comparison of the series @p r. */
bool tensor_close_in(CheckReport *r, const Tensor *actual, const Tensor *expected, float atol,
                     float rtol, const char *label);
/** CUnit assertion that the series had no failure; the message names the first that failed. */
#define assert_report_clean(r, what) check_assert_report((r), (what), __FILE__, __LINE__, __func__)
bool check_assert_report(const CheckReport *r, const char *what, const char *src, int line,
                         const char *func);

/* ------------------------------------------------------------ golden files */

/** Compares a stream of named tensors with a golden file. */
typedef struct {
    SafeTensors golden;
    char file[128];    /* the golden's name under tests/golden/ */
    bool *seen;        /* one per golden tensor */
    float atol, rtol;  /* defaults when the golden names no tolerance */
    int checked;       /* values compared */
    int mismatches;    /* values outside tolerance or of the wrong shape */
    int unpinned;      /* values the code produced that the golden lacks */
    char first_unpinned[96];
    char previous[96]; /* the golden compared last, for the diagnoses (diagnose.h) */
    int head_dim;      /* Dh as the golden shows it (0: it does not), once looked up */
    bool head_dim_looked;
    CheckReport report; /* the mismatches, printed first in full, then a line each */
    bool loaded;
    bool *stop;        /* a chapter's stop flag, set at the first mismatch (NULL: none) */
} GoldenCheck;

/** Open tests/golden/@p file; CU-asserts (at the caller's line) that it loads. */
#define golden_open(g, file) golden_open_at((g), (file), __FILE__, __LINE__)
bool golden_open_at(GoldenCheck *g, const char *file, const char *src, int line);
/** VIT_GOLDEN_REPORT=1: golden_check() prints every value's largest difference and how much of its tolerance it uses. */
bool golden_report_wanted(void);
/** A TraceFn comparing each named tensor with the golden of the same name. */
void golden_check(void *golden_check, const char *name, const Tensor *t);
/**
 * Assert every golden was seen, nothing mismatched and nothing was unpinned;
 * then close. The failure names the caller's line and the first stage that differed.
 * A chapter stopped at its first wrong value (g->stop) never produced the rest:
 * those are counted in a line, not asserted.
 */
#define golden_finish(g) golden_finish_at((g), __FILE__, __LINE__)
void golden_finish_at(GoldenCheck *g, const char *src, int line);
/** Close without asserting anything (a golden only opened, or inspected by hand). */
void golden_close(GoldenCheck *g);

/**
 * Run a chapter silently with its values compared against tests/golden/@p file.
 * At the first value outside its tolerance the chapter stops at its next section
 * (ch_section()): what follows rests on that value and would only repeat it.
 */
#define check_chapter_against_golden(run, file) \
    check_chapter_against_golden_at((run), (file), __FILE__, __LINE__)
void check_chapter_against_golden_at(ChapterFn run, const char *file, const char *src, int line);

#endif
