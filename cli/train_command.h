/**
 * @file train_command.h
 * @brief `vit train`'s command line, read into the settings of a run
 *        (train/run.h): the one table of its flags, shared by `vit train`
 *        and `vitview --train`, so both read a command line alike.
 */
#ifndef VIT_CLI_TRAIN_COMMAND_H
#define VIT_CLI_TRAIN_COMMAND_H

#include <signal.h>
#include <stdbool.h>

#include "train/run.h"
#include "vit_cli.h"

/** A command line of `vit train`, read. */
typedef struct {
    TrainRunSettings settings; /**< for train_run_open(); its strings are the command
                                    line's or @ref made, its command @ref command */
    bool watch;                /**< --watch: the run in vitview --train on a terminal */
    char *made[5];             /**< the file names made from --out (owned) */
    char command[2048];        /**< the command line, for the model's metadata */
} TrainCommand;

/**
 * @brief Read `vit train`'s flags (argv[0] = "train") into @p c: the flag
 *        table, the defaults (train_defaults()), the file names made from
 *        --out, --threads applied.
 * @param[in]  self  the command's row, for --help and the messages
 * @param[out] help  true when --help was given (and printed)
 * @return VIT_ERR_USAGE for a bad flag; free @p c with train_command_free() either way
 */
VitStatus train_command_parse(TrainCommand *c, const VitCommand *self, int argc, char **argv,
                              bool *help, VitError *err);

/** @brief Free the names train_command_parse() made. */
void train_command_free(TrainCommand *c);

/**
 * @brief From now on SIGINT (Ctrl-C) and SIGTERM ask the run to stop after the
 *        step it is in (train_stop_requested()), and a checkpoint being written
 *        is finished first. A signal the process was started ignoring (SIGINT in
 *        a shell's background job, as after `nohup … &`) stays ignored.
 * @param[out] old  the handlers before, for train_stops_release()
 */
void train_stops_catch(struct sigaction old[2]);
/** @brief The handlers of before train_stops_catch() again. */
void train_stops_release(const struct sigaction old[2]);
/** @brief Whether a stop was asked for since train_stops_catch(). */
bool train_stop_requested(void);

#endif
