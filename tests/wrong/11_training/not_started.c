// hint: is the exercise's TODO still there?
/**
 * @file train_step.c
 * @brief A wrong train_step.c for exercise 11 (tests/wrong/): not started, the skeleton's placeholder still there, so every step is refused.
 *
 * `make test` checks that the grader fails it and prints the hint above.
 */
#include "train/train.h"

#include <math.h>

VitStatus trainer_step(Trainer *t, TrainStep *out, VitError *err) {
    // t->images is (B, C, S, S), t->labels (B); B = t->config.batch
    (void)t, (void)out;
    return vit_fail(err, VIT_ERR_INPUT, "trainer_step() is not written yet (exercise 11's "
                    "TODO)"); // WRONG: the placeholder, not deleted
}
