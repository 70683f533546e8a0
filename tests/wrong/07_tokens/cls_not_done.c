// hint: tokens_prepend_cls wrote only zeros
/**
 * @file tokens_cls.c
 * @brief A wrong tokens_cls.c for exercise 07 (tests/wrong/): tokens_add_positions() done, tokens_prepend_cls() still the skeleton's placeholder.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "model/tokens.h"

#include <stddef.h>
#include <string.h>

void tokens_prepend_cls(float *tokens, const float *patch_embed, const float *cls, int B, int P,
                        int D) {
    // patch_embed is (B, P, D), cls is (D), tokens is (B, P + 1, D)
    const size_t N = (size_t)P + 1;
    // WRONG: the TODO not done yet, the skeleton's placeholder still there
    memset(tokens, 0, sizeof(float) * (size_t)B * N * D); // placeholder: delete it
    (void)patch_embed, (void)cls;
}
