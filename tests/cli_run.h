/**
 * @file cli_run.h
 * @brief Test helpers: run the real `vit` program and capture what it says;
 *        scratch directories for the files it reads and writes.
 *
 * The program is found next to the test runner: the runner is
 * BUILD/tests/run, so the program is BUILD/vit (build/vit in a normal build,
 * build/sanitize/vit under `make sanitize`, whose ASAN_OPTIONS it inherits,
 * so a leak in the program fails the test that ran it).
 */
#ifndef VIT_TESTS_CLI_RUN_H
#define VIT_TESTS_CLI_RUN_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/util.h" // VitError

/** What one run of the program did. */
typedef struct {
    int status;  /**< exit status; 128 + N when killed by signal N; -1 when it could not run */
    char *out;   /**< everything it wrote to stdout (NUL-terminated, owned) */
    char *err;   /**< everything it wrote to stderr (NUL-terminated, owned) */
} CliResult;

/** Seconds a run may take before it is killed and counted as a failure. */
#define CLI_TIMEOUT 120.0

/** @brief Path of the `vit` program belonging to this runner (static storage). */
const char *cli_program(void);
/** @brief Path of the `vitview` program belonging to this runner (static storage). */
const char *cli_viewer_program(void);

/**
 * @brief Run `vit args...` with stdin from /dev/null, stdout and stderr captured.
 * @param[in] args  the arguments after the program name, NULL-terminated
 * @return the result; free it with cli_result_free()
 */
CliResult cli_run(const char *const *args);

/** @brief Like cli_run() for another program, e.g. cli_viewer_program(). */
CliResult cli_run_program(const char *program, const char *const *args);

/** A program started with cli_start() and not yet waited for. */
typedef struct {
    pid_t pid;          /**< the child, or -1 */
    int out_fd, err_fd; /**< where its stdout and stderr go */
    char out_path[512]; /**< those files */
    char err_path[512]; /**< (removed by cli_finish()) */
} CliChild;

/** @brief Start `program args...` as cli_run() would, without waiting; false if it could not start. */
bool cli_start(CliChild *c, const char *program, const char *const *args);
/** @brief Wait for it (killed after CLI_TIMEOUT seconds) and collect what it said. */
CliResult cli_finish(CliChild *c);

/** Run `vit` with the given arguments: `CliResult r = VIT_RUN("info", "--weights", w);` */
#define VIT_RUN(...) cli_run((const char *const[]){__VA_ARGS__, NULL})

/** @brief Free the captured output. */
void cli_result_free(CliResult *r);

/** A fresh directory under $TMPDIR (or /tmp), removed with its contents at the end. */
typedef struct {
    char path[256]; /**< the directory; empty when it could not be made */
} ScratchDir;

/** @brief Make a new scratch directory; false (and a message) on failure. */
bool scratch_make(ScratchDir *d);
/** @brief "DIR/name" written into @p buf; returns @p buf. */
char *scratch_file(const ScratchDir *d, const char *name, char *buf, size_t size);
/** @brief Number of entries in the directory (files left behind show up here). */
int scratch_count(const ScratchDir *d);
/** @brief Remove the files in the directory, then the directory. */
void scratch_remove(ScratchDir *d);

/** @brief The whole contents of a file (owned, NUL-terminated) or NULL; @p size gets its length. */
char *read_whole_file(const char *path, size_t *size);
/** @brief true when @p err's message holds @p a (and @p b, unless NULL); says what it holds if not. */
bool mentions(const VitError *err, const char *a, const char *b);
/** @brief Write @p text to @p path (CU-asserts that the file opened). */
void write_text(const char *path, const char *text);
/** @brief true when the file exists and holds exactly @p text. */
bool has_text(const char *path, const char *text);
/** @brief true when both files exist and hold the same bytes. */
bool same_bytes(const char *a, const char *b);
/** @brief Copy a file's bytes to @p to (CU-asserts that it worked). */
void copy_file(const char *from, const char *to);

/**
 * @brief Assert a failed run: exit @p status, nothing on stdout, and exactly one
 *        line on stderr that starts with `PROGRAM:` and holds every one of the
 *        NULL-terminated @p needles. Frees @p r.
 */
void expect_failure(CliResult r, int status, const char *program, const char *const *needles);

/** `EXPECT_FAILURE(VIT_RUN(...), 1, "part of the message", ...)` for `vit`. */
#define EXPECT_FAILURE(run, status, ...) \
    expect_failure((run), (status), "vit", (const char *const[]){__VA_ARGS__, NULL})
/** The same for `vitview`. */
#define EXPECT_VIEWER_FAILURE(run, status, ...) \
    expect_failure((run), (status), "vitview", (const char *const[]){__VA_ARGS__, NULL})

#endif
