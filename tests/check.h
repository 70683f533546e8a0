/**
 * @file check.h
 * @brief Test helpers: tensor comparison with a tolerance, and golden files.
 *
 * Tolerance (llm.c's check_tensor): an element passes when
 *   |actual − expected| ≤ atol + rtol · |expected|.
 * A failing comparison prints the tensor's name, the first values of both
 * sides and the largest difference, so a student sees what went wrong.
 *
 * Golden files are safetensors written by tools/gen_golden.py with PyTorch.
 * A golden may carry its own tolerance for a tensor as the metadata entry
 * "tol.NAME" = "ATOL RTOL"; otherwise the checker's defaults apply.
 */
#ifndef VIT_TESTS_CHECK_H
#define VIT_TESTS_CHECK_H

#include <CUnit/CUnit.h>
#include <stdbool.h>

#include "chapter.h"
#include "safetensors.h"
#include "tensor.h"

/** Defaults for float32 against PyTorch float32 on short reductions. */
#define CHECK_ATOL 1e-5f
#define CHECK_RTOL 1e-4f

/** Path of a file under tests/golden/ (static buffer, valid until the next call). */
const char *golden_path(const char *file);

/**
 * One tensor of tests/golden/@p file, owned by the caller (free it). The file
 * is opened for each read, so tests stay independent; a missing file or
 * tensor fails the test fatally with the loader's message.
 */
Tensor golden_tensor(const char *file, const char *name);

/**
 * Compare two tensors; on mismatch print a report to stderr naming @p label.
 * Returns true when shapes match and every element is within tolerance.
 */
bool tensor_close(const Tensor *actual, const Tensor *expected, float atol, float rtol,
                  const char *label);

/** CUnit assertion wrapping tensor_close(). */
#define assert_tensor_close(actual, expected, atol, rtol, label)                 \
    CU_ASSERT_TRUE(tensor_close((actual), (expected), (atol), (rtol), (label)))

/** Compares a stream of named tensors with a golden file. */
typedef struct {
    SafeTensors golden;
    bool *seen;        /* one per golden tensor */
    float atol, rtol;  /* defaults when the golden names no tolerance */
    int checked;       /* values compared */
    int mismatches;    /* values outside tolerance or of the wrong shape */
    int unpinned;      /* values the code produced that the golden lacks */
    bool loaded;
} GoldenCheck;

/** Open tests/golden/@p file; CU-asserts that it loads. */
bool golden_open(GoldenCheck *g, const char *file);
/** A TraceFn comparing each named tensor with the golden of the same name. */
void golden_check(void *golden_check, const char *name, const Tensor *t);
/** Assert every golden was seen, nothing mismatched and nothing was unpinned; then close. */
void golden_finish(GoldenCheck *g);

/** Run a chapter silently with its values compared against tests/golden/@p file. */
void check_chapter_against_golden(ChapterFn run, const char *file);

#endif
