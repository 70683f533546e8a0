/**
 * @file trace_timing.h
 * @brief A stopwatch for the trace: how long each stage of a forward pass took.
 *
 * A ::StageClock is a TraceFn. Handed to vit_forward(), it charges the time
 * since the previous stage was handed over to the stage that has just
 * arrived, summed over the blocks (and over passes, if it stays running).
 * Another listener can ride along: the clock calls it for every stage and
 * restarts after it returns, so what that listener does is not counted.
 *
 * Shape legend: none; stages are named as in @ref contract and indexed in
 * vit_stage_at() order.
 *
 * What it omits: per-block times (block stages are summed), CPU time (the
 * clock is wall time, vit_now()), and any attempt to make timings repeatable:
 * they vary from run to run and from machine to machine.
 */
#ifndef VIT_REPORT_H
#define VIT_REPORT_H

#include "base/trace.h"

/** @defgroup report Stage timing
 *  @brief Wall-clock time per trace stage, gathered by a TraceFn.
 *
 *  Taught in @ref chapter09 "chapter 09" (where the time of a forward pass goes). Pinned by the suites
 *  @ref test_ch09_vit_base.c "ch09_vit_base" (@ref answer_keys "the answer keys").
 *  @{
 */

/** Most distinct stages a StageClock keeps apart (the contract has 22). */
#define STAGE_CLOCK_MAX 32

/** Time per stage of the forward passes it listened to. */
typedef struct {
    double seconds[STAGE_CLOCK_MAX]; /**< per stage in vit_stage_at() order, blocks summed */
    double last;                     /**< vit_now() when the previous stage was handed over */
    TraceFn next;                    /**< another listener, called untimed; NULL for none */
    void *next_user;                 /**< passed to next */
} StageClock;

/**
 * @brief Zero the times and start the clock; call it just before vit_forward().
 * @param[out] clock      the stopwatch
 * @param[in]  next       a listener to pass every stage on to, or NULL
 * @param[in]  next_user  its user pointer
 */
void stage_clock_start(StageClock *clock, TraceFn next, void *next_user);

/**
 * @brief The TraceFn: charge the time since the previous stage to @p name's
 *        stage, then call the next listener. Names outside the contract are
 *        passed on but not timed.
 * @param[in,out] user_clock  a StageClock*, as the TraceFn's user pointer
 * @param[in]     name   e.g. "blocks.3.attn.probs"
 * @param[in]     t      the stage's tensor, handed on unchanged
 */
void stage_clock_trace(void *user_clock, const char *name, const Tensor *t);

/**
 * @brief Seconds charged to a stage, all blocks together.
 * @param[in] clock  the stopwatch
 * @param[in] stage  a trace name ("norm", "blocks.0.attn.probs") or a block
 *                   stage's suffix ("attn.probs")
 * @return 0 for a name that is not a stage
 */
double stage_clock_seconds(const StageClock *clock, const char *stage);

/** @} */
#endif
