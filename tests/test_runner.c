/**
 * @file test_runner.c
 * @brief The test runner itself (tests/run_suites.c): a suite that crashes
 *        stops nothing, and the report reads the same however many suites
 *        run at once.
 *
 * Each case runs this very runner again, as a program, on three chapter
 * suites, and reads what it printed.
 */
#include <CUnit/CUnit.h>
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

CU_TestInfo tests_runner[] = {
    {"a crash stops nothing", test_a_crash_stops_nothing},
    {"the report does not depend on the jobs", test_the_report_does_not_depend_on_the_jobs},
    {"a wrong VIT_TEST_JOBS is named", test_a_wrong_jobs_value_is_named},
    CU_TEST_INFO_NULL,
};
