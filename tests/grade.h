/**
 * @file grade.h
 * @brief Grade mode of the test runner: `build/tests/run --grade SUITE[/TEST]...`.
 *
 * The answer key of an exercise is a list of suites and tests of the normal
 * runner (its KEY file). Grading runs each of them in a child process of its
 * own, so a student's function that crashes, loops for ever or calls exit()
 * fails that one test and never the grader:
 *
 *  - the child runs only that CUnit test, its stdout and stderr captured
 *    through a pipe, stdin from /dev/null, in a process group of its own;
 *  - a child that runs past the time limit (30 s, `--timeout SECONDS`) is
 *    killed with its whole group. With `--reference RUNNER` (the runner linked
 *    with lib alone) lib's own code is then timed on the same test, here and
 *    now, and when five times that is longer than the limit the test runs
 *    again with that long: a busy machine must not fail a right answer. What
 *    still times out is reported "timed out after N s (an endless loop? lib's
 *    own code took T s on this test, here and now)"; one killed by a signal is reported "crashed: SIGSEGV (a
 *    read or write outside an array?)" and so on, with the functions it was
 *    in ("crashed in softmax() <- chapter03_run()", from a handler on a stack
 *    of its own; the runner is linked with -rdynamic for the names);
 *  - the child reports its verdict on a second pipe once the test has
 *    finished, so a test that ends any other way (exit() in the student's
 *    code) fails and says so instead of passing.
 *
 * For each test it prints PASS or FAIL and the name; for a failure the
 * captured report shortened (what was expected, what came out, the worst
 * element and the largest difference, as tests/check.c prints them: the
 * first GRADE_REPORT_LINES lines), the failed assertions (file:line and what
 * was asserted) and every `hint:` line the test printed (check_hint()). The
 * last line is the score, `N passed, M failed`, alone on its line; the exit
 * status is 0 only when nothing failed (1 otherwise, 2 for bad usage).
 *
 * Options:
 *  - `--key FILE`: add the lines of FILE to the selection (an exercise's KEY:
 *    one SUITE or SUITE/TEST per line; blank lines and lines starting with `#`
 *    are skipped); every line must name something, or the run stops (exit 2);
 *  - `--json FILE`: also write Gradescope's results.json (score, max_score,
 *    execution_time, output, visibility, and per test name, score, max_score,
 *    status and output) through an OutFile: atomically, and never over an
 *    input (the KEY, a `--source`, the build log);
 *  - `--timeout SECONDS`: each test's time limit, at least;
 *  - `--reference RUNNER`: the runner that times lib's own code on a test that
 *    ran past the limit (make exercise passes the normal build/tests/run);
 *  - `--baseline FILE`: the tests the untouched skeleton passes ("SUITE/TEST"
 *    a line): they earn nothing and failing one costs a point, and the line
 *    `score: S of M` comes before the count (make exercise makes the file);
 *  - `--points P`, `--visibility V`: results.json worth P (shared by the
 *    tests that earn points), with Gradescope's visibility V;
 *  - `--title TEXT`: a line printed first and put in the results' output;
 *  - `--source FILE`: a file the grade is about (a student's .c), named in the
 *    output and protected from `--json`;
 *  - `--build-log FILE`: the compiler's messages, shown first (warnings);
 *  - `--build-failed`: the student's code did not compile or link: nothing
 *    runs, every selected test fails with the compiler's messages (the normal
 *    runner, linked with lib alone, reports for a build that could not be made).
 */
#ifndef VIT_TESTS_GRADE_H
#define VIT_TESTS_GRADE_H

#include <CUnit/CUnit.h>

/** Default time limit of one test, in seconds (ViT-B tests take a few under load). */
#define GRADE_TIMEOUT 30.0
/** Lines of a failure's captured report shown (and put in the results file). */
#define GRADE_REPORT_LINES 16
/** Failed assertions shown per test; the rest are counted. */
#define GRADE_ASSERT_LINES 5
/** Distinct hint lines shown per test. */
#define GRADE_HINT_LINES 8
/** Lines of the compiler's messages shown. */
#define GRADE_BUILD_LINES 40

/** One selected test. */
typedef struct {
    CU_pSuite suite; /**< its suite in the registry */
    CU_pTest test;   /**< the test */
} GradeTest;

/**
 * @brief The tests named by @p names ("SUITE" or "SUITE/TEST"), in the order
 *        named, each once.
 * @param[out] out  the tests (free() it); NULL when there are none
 * @param[in] names, count  what to select
 * @param[in] program  the name that starts a message
 * @return how many, or -1 when a name matches nothing (said on stderr, with
 *         the suites there are)
 */
int grade_select(GradeTest **out, const char *const *names, int count, const char *program);

/**
 * @brief `run --grade ...`: grade the selected tests, each in a child process.
 * @param[in] program     how the runner was called (argv[0]), for messages
 * @param[in] argc, argv  the arguments after `--grade`
 * @return the exit status: 0 all passed, 1 some failed, 2 bad usage
 */
int grade_main(const char *program, int argc, char **argv);

#endif
