/**
 * @file lr_points.c
 * @brief The points of the book's learning-rate picture: lib's lr_at() at every step of a run.
 *
 *     lr_points TOTAL WARMUP PEAK FLOOR
 *
 * prints TOTAL lines "step η", for docs/plots/lr_schedule.gp; scripts/docs.sh
 * passes the schedule chapter 10 printed (its steps, warm-up, peak and floor),
 * so the curve is lib's own lr_at(), the function the chapter teaches, at every
 * step where the chapter's table shows ten of them.
 */
#include <stdio.h>
#include <stdlib.h>

#include "train/optim.h"

/** Prints the schedule's rate at each step; exit 2 on bad arguments. */
int main(int argc, char **argv) {
    if (argc != 5) {
        fprintf(stderr, "usage: lr_points TOTAL WARMUP PEAK FLOOR\n");
        return 2;
    }
    const LrSchedule s = {.total_steps = atoi(argv[1]), .warmup_steps = atoi(argv[2]),
                          .peak_lr = atof(argv[3]), .min_lr = atof(argv[4]), .warmup_start = 0.0};
    VitError err;
    if (lr_schedule_check(&s, &err) != VIT_OK) {
        fprintf(stderr, "lr_points: %s\n", err.msg);
        return 2;
    }
    for (int step = 0; step < s.total_steps; step++) printf("%d %.6e\n", step, lr_at(&s, step));
    return 0;
}
