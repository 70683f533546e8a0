/**
 * @file diagnose.h
 * @brief A failed comparison's mistake in words: cheap, exact tests of what came out
 *        against what was expected.
 *
 * When a stage's tensor differs from its golden, check.c prints how much; diagnose()
 * says what, when it can tell. Each diagnosis is a computed test over every element,
 * within the comparison's own tolerance (four times it for a candidate recomputed here
 * in float, such as a softmax or a GELU), and only one that holds is said:
 *
 * | diagnosis | holds when | e.g. |
 * | --- | --- | --- |
 * | unwritten | every element is NaN, or every one is 0 | the output never written |
 * | a stage before | got = the expected tensor of the stage it is computed from | a step skipped |
 * | a factor | got = c · expected for one c ≠ 1 | the scores not scaled by 1/√Dh |
 * | transposed | got = expected with its last two axes swapped | K·Qᵀ for Q·Kᵀ |
 * | shifted by one | got[…, i, …] = expected[…, i ± 1, …] along one axis | an index off by one |
 * | an offset | got − expected is one constant, one per row, or one per feature | a missing mean or bias |
 * | a factor per row | each row is the expected times a constant of its own | rows never divided by their sum |
 * | the stage's own | the wrong softmax axis, the unscaled scores' softmax, GELU's tanh form, … | |
 *
 * Which diagnoses fit a stage, and the words that say what they mean there, come from
 * the stage's name ("scaled", "probs", "gelu", "embed", …): one table in diagnose.c.
 * When none holds, nothing is said; a diagnosis never names a mistake it has not checked.
 */
#ifndef VIT_TESTS_DIAGNOSE_H
#define VIT_TESTS_DIAGNOSE_H

#include <stdbool.h>
#include <stddef.h>

#include "base/tensor.h"

/** What a diagnosis may look at besides the two tensors (all optional). */
typedef struct {
    int head_dim; /**< Dh, when the caller knows it (e.g. from the golden's q), else 0 */
    /**
     * The expected tensor of another stage, @p name, into @p out (the diagnoser frees
     * it with tensor_free()); false when there is no such stage. NULL: none are known.
     */
    bool (*expected_of)(void *user, const char *name, Tensor *out);
    void *user;           /**< handed to expected_of */
    const char *previous; /**< the stage compared just before this one, or NULL */
} DiagnoseContext;

/**
 * @brief Say in words what @p got is, when one of the diagnoses holds over all of it.
 * @param[out] words   one sentence, e.g. "a factor of exactly √Dh = 8 (Dh = 64): the scores
 *                     were not scaled by 1/√Dh"; "" when nothing holds
 * @param[in] stage    the stage's (or tensor's) name, e.g. "blocks.0.attn.scaled"
 * @param[in] got, expected  the same shape
 * @param[in] atol, rtol     the comparison's tolerance
 * @param[in] ctx      other stages and sizes, or NULL
 * @return true when @p words says something
 */
bool diagnose(char *words, size_t size, const char *stage, const Tensor *got,
              const Tensor *expected, float atol, float rtol, const DiagnoseContext *ctx);

#endif
