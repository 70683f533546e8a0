/**
 * @file grade.h
 * @brief Grade mode of the test runner: `build/tests/run --grade SUITE[/TEST]...`.
 *
 * The answer key of an exercise is a list of suites and tests of the normal
 * runner (its KEY file). The grader is this runner, linked with lib alone,
 * and it never runs a student's code itself. Each test of the key runs twice,
 * each time in a process of its own that runs only that test (`--record`,
 * record.h) and writes down every check it makes:
 *
 *  - once with lib's own code (this runner): the reference, kept in
 *    `--records DIR` for the next grades until the runner is rebuilt;
 *  - once with the student's (`--student CMD...`: the student's runner, and
 *    whatever boxes it), its stdout and stderr captured through a pipe,
 *    stdin from /dev/null, in a process group of its own, no other
 *    descriptor of the grader's open in it.
 *
 * Those processes are forked by a test server (serve.h): `CMD... --serve 3`,
 * started once per grade (the box, its limits and the runner's start are paid
 * once, not for each test), and again after a test that ran out of time.
 *
 * The student's record is then judged against lib's here (verdict.h): the
 * test must have returned, made the same checks, and found by the reference's
 * measure what lib's code found. So a student's function that crashes, loops
 * for ever, calls exit() or forges a verdict fails that one test and never
 * the grader:
 *
 *  - a test still running at the time limit (30 s, `--timeout SECONDS`) is
 *    killed with its whole group and its server (box and all); lib's own code is then timed on the same
 *    test, here and now, and when five times that is longer than the limit
 *    the test runs again with that long: a busy machine must not fail a right
 *    answer. What still times out is reported "timed out after N s (an
 *    endless loop? lib's own code took T s on this test, here and now)"; one
 *    killed by a signal is reported "crashed: SIGSEGV (a read or write outside
 *    an array?)" and so on, with the functions it was in ("crashed in
 *    softmax() <- chapter03_run()", from a handler on a stack of its own; the
 *    runner is linked with -rdynamic for the names);
 *  - a test whose record has no end mark (exit() in the student's code), or
 *    is damaged (bytes written on a descriptor the code was not given), fails
 *    and says so.
 *
 * For each test it prints PASS or FAIL and the name; for a failure the
 * captured report shortened (what was expected, what came out, the worst
 * element and the largest difference, as tests/check.c prints them: the
 * first GRADE_REPORT_LINES lines), the checks that failed as the verdict found
 * them (file:line and what was asserted, or the tensor and how it differs) and
 * every `hint:` line the test printed (check_hint()). The
 * last line is the score, `N passed, M failed`, alone on its line; the exit
 * status is 0 only when nothing failed (1 otherwise, 2 for bad usage).
 *
 * Options:
 *  - `--key FILE`: add the lines of FILE to the selection (an exercise's KEY:
 *    one SUITE or SUITE/TEST per line; blank lines and lines starting with `#`
 *    are skipped); every line must name something, or the run stops (exit 2).
 *    A line `weight N SUITE[/TEST]` makes each test it names worth N points
 *    (1 to GRADE_WEIGHT_MAX) instead of 1; it must name a test of the key;
 *  - `--list`: print each selected test's points and name (a tab between;
 *    with `--baseline`, the tests the skeleton passes as 0) and a last line
 *    with the total, and run nothing: the table an exercise's README shows;
 *  - `--json FILE`: also write Gradescope's results.json (score, max_score,
 *    execution_time, output, visibility, and per test name, score, max_score,
 *    status and output) through an OutFile: atomically, and never over an
 *    input (the KEY, a `--source`, the build log);
 *  - `--timeout SECONDS`: each test's time limit, at least;
 *  - `--student CMD...` (last: the rest of the line is the command): run the
 *    student's code as `CMD... --record 3 SUITE/TEST` (make exercise passes
 *    bubblewrap's box and the student's runner); without it, lib's own code
 *    is graded;
 *  - `--records DIR`: keep lib's records of the tests there;
 *  - `--except SUITE/TEST`: leave that test out of what the names select;
 *  - `--baseline FILE`: the tests the untouched skeleton passes ("SUITE/TEST"
 *    a line): they earn nothing and failing one costs its points, and the line
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
/** Distinct hint lines shown per test. */
#define GRADE_HINT_LINES 8
/** Lines of the compiler's messages shown. */
#define GRADE_BUILD_LINES 40
/** The most points a KEY's `weight` line may give one test. */
#define GRADE_WEIGHT_MAX 10

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

/**
 * @brief `run --record FD SUITE/TEST`: run one test with every check written
 *        to descriptor FD (record.h), for the grader to judge; exits.
 * @return 2 for bad usage (otherwise it does not return)
 */
int grade_record_main(const char *program, int argc, char **argv);

/**
 * @brief `run --serve FD`: the grader's test server (serve.h), which runs each
 *        test the grader asks for as `--record` would, in a forked process.
 * @return 2 for bad usage (otherwise it does not return)
 */
int grade_serve_main(const char *program, int argc, char **argv);

#endif
