/**
 * @file test_runner.c
 * @brief The test runner itself (tests/runner.c, tests/run_suites.c): a suite
 *        that crashes or hangs stops nothing, the report reads the same however
 *        many suites run at once, the suites report in the book's order, the
 *        end of a run names the first wrong stage, and `--up-to` keeps the
 *        stages down to a chapter's.
 *
 * Each case runs this very runner again, as a program, on a few tests, and
 * reads what it printed; the last one reads the order table itself.
 */
#include <CUnit/CUnit.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_run.h"

// This runner's own path: the program the cases run.
static const char *runner_path(void) {
    static char path[1024];
    const ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    path[n > 0 ? n : 0] = '\0';
    return path;
}

// The runner run with args (NULL-ended) and, for that run only, the
// environment variables env gives ("NAME", "value", ..., NULL).
static CliResult run_runner(const char *const *env, const char *const *args) {
    for (int i = 0; env[i]; i += 2) setenv(env[i], env[i + 1], 1);
    CliResult r = cli_run_program(runner_path(), args);
    for (int i = 0; env[i]; i += 2) unsetenv(env[i]);
    return r;
}

// The runner on ch01, ch02 and ch03 with VIT_TEST_JOBS=jobs and, when crash
// is not NULL, VIT_TEST_CRASH=crash.
static CliResult run_three(const char *jobs, const char *crash) {
    setenv("VIT_TEST_JOBS", jobs, 1);
    if (crash) setenv("VIT_TEST_CRASH", crash, 1);
    CliResult r = cli_run_program(runner_path(), (const char *const[]){
                                      "ch01_dot_product", "ch02_scaling", "ch03_softmax", NULL});
    unsetenv("VIT_TEST_JOBS");
    unsetenv("VIT_TEST_CRASH");
    return r;
}

// The number in a column of the summary's row ("tests"; column 1 = Total,
// 2 = Ran, 3 = Passed, 4 = Failed, 5 = Inactive); -1 for "n/a" or no such row.
static long summary_cell(const char *out, const char *row, int column) {
    char key[32];
    snprintf(key, sizeof key, "\n%20s ", row);
    const char *at = strstr(out, key);
    if (!at) return -1;
    char cells[5][16] = {{0}};
    if (sscanf(at + strlen(key), "%15s %15s %15s %15s %15s", cells[0], cells[1], cells[2],
               cells[3], cells[4]) != 5 || column < 1 || column > 5)
        return -1;
    char *end;
    const long v = strtol(cells[column - 1], &end, 10);
    return *end ? -1 : v;
}

static void test_a_crash_stops_nothing(void) {
    CliResult r = run_three("2", "ch01_dot_product");
    CU_ASSERT_EQUAL(r.status, 1);
    const char *out = r.out ? r.out : "";
    // the crashed suite is named, with its signal and the test it was in
    // (signal 11, or 6 where a sanitizer catches the fault and aborts)
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "CRASHED: suite ch01_dot_product: its process ended by signal "));
    const char *ch01 = strstr(out, "Suite: ch01_dot_product"), *ch02 = strstr(out, "Suite: ch02_scaling"),
               *ch03 = strstr(out, "Suite: ch03_softmax");
    CU_ASSERT_FATAL(ch01 && ch02 && ch03);
    CU_ASSERT(ch01 < ch02 && ch02 < ch03); // in the suites' order
    const char *crash = strstr(ch01, "\n  CRASHED in test \"chapter matches PyTorch golden\"");
    CU_ASSERT(crash && crash < ch02);
    // the other two ran to their end and passed: the only failure is the crashed test
    CU_ASSERT_PTR_NULL(strstr(ch02, "FAILED"));
    CU_ASSERT_EQUAL(summary_cell(out, "tests", 4), 1);
    CU_ASSERT_EQUAL(summary_cell(out, "suites", 2), 3);
    CU_ASSERT_EQUAL(summary_cell(out, "suites", 4), 1); // failed: the crashed one
    CU_ASSERT(summary_cell(out, "tests", 2) > 2);
    cli_result_free(&r);
}

// The report without its first lines (which say how many run at once), its
// last (the wall times) and each suite's wall time: from the first suite to
// the summary's end.
static const char *report_body(char *out) {
    char *wall = strstr(out, "Wall time = ");
    if (wall) *wall = '\0';
    for (char *line; (line = strstr(out, "\n  wall time: "));) {
        const char *next = line + 1 + strcspn(line + 1, "\n"); // the next line's "\n", or the end
        memmove(line, next, strlen(next) + 1);
    }
    const char *first = strstr(out, "\nSuite: ");
    return first ? first : "";
}

static void test_the_report_does_not_depend_on_the_jobs(void) {
    CliResult one = run_three("1", NULL), two = run_three("3", NULL);
    CU_ASSERT_EQUAL(one.status, 0);
    CU_ASSERT_EQUAL(two.status, 0);
    CU_ASSERT_FATAL(one.out && two.out);
    CU_ASSERT_PTR_NOT_NULL(strstr(one.out, ", 1 at a time"));
    CU_ASSERT_PTR_NOT_NULL(strstr(two.out, ", 3 at a time"));
    CU_ASSERT_EQUAL(summary_cell(one.out, "tests", 4), 0);
    CU_ASSERT(summary_cell(one.out, "tests", 2) > 2);
    CU_ASSERT_STRING_EQUAL(report_body(one.out), report_body(two.out));
    cli_result_free(&one);
    cli_result_free(&two);
}

static void test_a_wrong_jobs_value_is_named(void) {
    CliResult r = run_three("lots", NULL);
    CU_ASSERT_EQUAL(r.status, 0); // it still runs, one suite at a time
    CU_ASSERT_TRUE(r.err && strstr(r.err, "VIT_TEST_JOBS=lots is not a number"));
    CU_ASSERT_TRUE(r.out && strstr(r.out, ", 1 at a time"));
    cli_result_free(&r);
}

// Grade mode's tests are started by a test server (tests/serve.h): lib graded
// alone passes, each test in a process of its own, and the server mode refuses
// a descriptor that is not the grader's socket.
static void test_grade_mode_runs_tests_through_its_server(void) {
    CliResult r = run_runner((const char *const[]){NULL},
                             (const char *const[]){"--grade", "ch01_dot_product/dot of small vectors",
                                                   "ch01_dot_product/dot is symmetric and linear", NULL});
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_TRUE(r.out && strstr(r.out, "2 tests, each in a process of its own"));
    CU_ASSERT_TRUE(r.out && strstr(r.out, "\n2 passed, 0 failed\n"));
    cli_result_free(&r);
    r = run_runner((const char *const[]){NULL}, (const char *const[]){"--serve", "1", NULL});
    CU_ASSERT_EQUAL(r.status, 2);
    CU_ASSERT_TRUE(r.err && strstr(r.err, "--serve FD (FD: the grader's socket"));
    cli_result_free(&r);
}

// One quick test of a chapter at each end of the book and of a command-line
// suite, named in the reverse of the book's order (and attention_cli comes
// first in the alphabet).
static const char *const three_ends[] = {"attention_cli/what it refuses",
                                         "ch14_making_it_fast/an empty sum (K = 0) is zero",
                                         "ch01_dot_product/dot of small vectors", NULL};

static void test_suites_report_in_the_books_order(void) {
    CliResult r = run_runner((const char *const[]){"VIT_TEST_JOBS", "2", NULL}, three_ends);
    CU_ASSERT_EQUAL(r.status, 0);
    const char *out = r.out ? r.out : "";
    const char *ch01 = strstr(out, "\nSuite: ch01_dot_product"),
               *ch14 = strstr(out, "\nSuite: ch14_making_it_fast"),
               *cli = strstr(out, "\nSuite: attention_cli");
    CU_ASSERT_FATAL(ch01 && ch14 && cli);
    CU_ASSERT(ch01 < ch14); // chapter 01 before chapter 14
    CU_ASSERT(ch14 < cli);  // the chapters before the programs
    CU_ASSERT_EQUAL(summary_cell(out, "tests", 2), 3);
    CU_ASSERT_PTR_NULL(strstr(out, "wrong")); // all passed: no stage named
    cli_result_free(&r);
}

// The text from the line that starts with `start` to the end.
static const char *from_line(const char *out, const char *start) {
    char key[128];
    snprintf(key, sizeof key, "\n%s", start);
    const char *at = strstr(out, key);
    return at ? at + 1 : "";
}

static void test_the_first_wrong_stage_is_named_last(void) {
    // chapter 14's test fails, chapter 01's crashes; the command-line suite passes
    CliResult r = run_runner((const char *const[]){"VIT_TEST_JOBS", "2", "VIT_TEST_FAIL",
                                                   "ch14_making_it_fast", "VIT_TEST_CRASH",
                                                   "ch01_dot_product", NULL},
                             three_ends);
    CU_ASSERT_EQUAL(r.status, 1);
    const char *out = r.out ? r.out : "";
    CU_ASSERT_STRING_EQUAL(from_line(out, "first wrong stage"),
                           "first wrong stage: chapter 01 the dot product (1 test): start there\n"
                           "also wrong: chapter 14 making it fast (1 test)\n");
    CU_ASSERT_EQUAL(summary_cell(out, "tests", 4), 2);
    cli_result_free(&r);
}

static void test_a_hung_suite_is_stopped(void) {
    CliResult r = run_runner(
        (const char *const[]){"VIT_TEST_JOBS", "2", "VIT_TEST_HANG", "ch01_dot_product",
                              "VIT_TEST_TIMEOUT", "1", NULL},
        (const char *const[]){"ch01_dot_product/dot of small vectors",
                              "ch14_making_it_fast/an empty sum (K = 0) is zero", NULL});
    CU_ASSERT_EQUAL(r.status, 1);
    const char *out = r.out ? r.out : "";
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\n  TIMED OUT in test \"dot of small vectors\": the "
                                       "suite's process ran past the time limit of 1 s"));
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "\nTIMED OUT: suite ch01_dot_product: its process ran "
                                       "past the time limit of 1 s (VIT_TEST_TIMEOUT) and was "
                                       "ended by signal 9"));
    // the other suite ran, and passed
    CU_ASSERT_PTR_NOT_NULL(strstr(out, "Test: an empty sum (K = 0) is zero ...passed"));
    CU_ASSERT_STRING_EQUAL(from_line(out, "first wrong stage"),
                           "first wrong stage: chapter 01 the dot product (1 test): start there\n");
    cli_result_free(&r);
}

// The suites `--list` prints, by name, one per line ("" when it printed none).
static void listed_suites(char *names, size_t size, const char *out) {
    names[0] = '\0';
    for (const char *line = out; *line;) {
        const char *end = line + strcspn(line, "\n"), *last = end;
        while (last > line && last[-1] != ' ') last--; // the last column: the suite
        if (line[0] != 'r') // not run's header line
            snprintf(names + strlen(names), size - strlen(names), "%.*s ", (int)(end - last), last);
        line = *end ? end + 1 : end;
    }
}

static void test_up_to_keeps_the_stages_down_to_a_chapter(void) {
    // lib's base, chapters 01 to 05 and the suites of what they teach (dot, softmax, attention, mha);
    // given as a number or as a name, as make exercise takes CH
    const char *ways[] = {"05", "5", "05_multi_head", "multi_head"};
    for (int i = 0; i < 4; i++) {
        CliResult r = run_runner((const char *const[]){NULL},
                                 (const char *const[]){"--up-to", ways[i], "--list", NULL});
        CU_ASSERT_EQUAL(r.status, 0);
        char names[1024];
        listed_suites(names, sizeof names, r.out ? r.out : "");
        CU_ASSERT_STRING_EQUAL(names, "tensor rng fileio ops gemm ch01_dot_product dot ch02_scaling "
                                      "ch03_softmax softmax ch04_attention attention ch05_multi_head mha ");
        CU_ASSERT_TRUE(r.out && strstr(r.out, "run: up to chapter 05, multi-head attention: 14 suites"));
        cli_result_free(&r);
    }
    // the last chapter keeps none of the programs' suites
    CliResult r = run_runner((const char *const[]){NULL},
                             (const char *const[]){"--up-to", "15", "--list", NULL});
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_TRUE(r.out && strstr(r.out, "15  smaller numbers              quantize\n"));
    CU_ASSERT_TRUE(r.out && !strstr(r.out, "attention_cli") && !strstr(r.out, "viewer_"));
    cli_result_free(&r);
}

static void test_a_bad_up_to_is_named(void) {
    const char *bad[] = {"16", "00", "5x", "ch05", ""};
    for (int i = 0; i < 5; i++) {
        CliResult r = run_runner((const char *const[]){NULL},
                                 (const char *const[]){"--up-to", bad[i], NULL});
        CU_ASSERT_EQUAL(r.status, 2);
        char said[128];
        snprintf(said, sizeof said, "run: --up-to %s names no chapter: give a chapter from 01 to 15",
                 bad[i]);
        CU_ASSERT_TRUE(r.err && strstr(r.err, said));
        CU_ASSERT_TRUE(r.out && !strstr(r.out, "Suite:")); // nothing ran
        cli_result_free(&r);
    }
    CliResult r = run_runner((const char *const[]){NULL},
                             (const char *const[]){"--up-to", "05", "ch03_softmax", NULL});
    CU_ASSERT_EQUAL(r.status, 2);
    CU_ASSERT_TRUE(r.err && strstr(r.err, "--up-to chooses the suites itself"));
    cli_result_free(&r);
}

// The order table, read as the runner reads it.
static const struct {
    const char *suite;
    int chapter;
    const char *stage;
} rows[] = {
#define BOOK_SUITE(name, chapter, stage) {#name, chapter, stage},
#include "book_order.h"
#undef BOOK_SUITE
};
enum { ROWS = sizeof rows / sizeof rows[0] };

static void test_the_order_table_goes_through_the_book(void) {
    // chapters 01 to 15 in turn, each stage opened by the chapter's own suite;
    // no chapter-less row between two chapters (lib's base comes before them all)
    int chapter = 0, first_chapter_row = -1, last_chapter_row = -1;
    for (int i = 0; i < ROWS; i++) {
        if (rows[i].chapter == 0) continue;
        if (first_chapter_row < 0) first_chapter_row = i;
        last_chapter_row = i;
        CU_ASSERT(rows[i].chapter == chapter || rows[i].chapter == chapter + 1);
        if (rows[i].chapter == chapter + 1) {
            char own[16];
            snprintf(own, sizeof own, "ch%02d_", rows[i].chapter);
            CU_ASSERT_EQUAL(strncmp(rows[i].suite, own, 5), 0);
        }
        chapter = rows[i].chapter;
    }
    CU_ASSERT_EQUAL(chapter, 15);
    CU_ASSERT_EQUAL(strcmp(rows[first_chapter_row].suite, "ch01_dot_product"), 0);
    for (int i = first_chapter_row; i <= last_chapter_row; i++) CU_ASSERT(rows[i].chapter > 0);
    // a stage's rows stay together: a stage name met again is the row before's
    for (int i = 1; i < ROWS; i++)
        for (int j = 0; j < i - 1; j++)
            if (strcmp(rows[j].stage, rows[i].stage) == 0) {
                CU_ASSERT_STRING_EQUAL(rows[i - 1].stage, rows[i].stage);
                CU_ASSERT_EQUAL(rows[j].chapter, rows[i].chapter);
            }
}

CU_TestInfo tests_runner[] = {
    {"a crash stops nothing", test_a_crash_stops_nothing},
    {"the report does not depend on the jobs", test_the_report_does_not_depend_on_the_jobs},
    {"a wrong VIT_TEST_JOBS is named", test_a_wrong_jobs_value_is_named},
    {"suites report in the book's order", test_suites_report_in_the_books_order},
    {"the first wrong stage is named last", test_the_first_wrong_stage_is_named_last},
    {"a hung suite is stopped at the time limit", test_a_hung_suite_is_stopped},
    {"--up-to keeps the stages down to a chapter", test_up_to_keeps_the_stages_down_to_a_chapter},
    {"a bad --up-to is named", test_a_bad_up_to_is_named},
    {"the order table goes through the book", test_the_order_table_goes_through_the_book},
    {"grade mode runs tests through its server", test_grade_mode_runs_tests_through_its_server},
    CU_TEST_INFO_NULL,
};
