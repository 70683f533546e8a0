/**
 * @file run_suites.h
 * @brief The test runner's plain mode: every selected suite in a child process
 *        of its own, a few at once, their reports printed in the suites' order.
 *
 * Why children: a suite that crashes (a segmentation fault, an abort, a
 * sanitizer's report) or hangs ends its own process only. The suites after it still
 * run and the summary still comes, with the crashed suite named and the test
 * it was in. Why a few at once: most suites use one core for most of their
 * time, and the machine has more; each suite's report is held back until the
 * suites before it have printed theirs, so the output reads as if they had run
 * one after another.
 */
#ifndef TESTS_RUN_SUITES_H
#define TESTS_RUN_SUITES_H

/**
 * @brief Run the active suites of CUnit's registry (all, or those the command
 *        line kept), each in a child process, and print CUnit's report for
 *        each, then one summary for all, the wall time and the slowest suites.
 *
 * VIT_TEST_JOBS=N runs N suites at once (1: one after another); by default as
 * many as the cores this process may use, at most 8. (The suites that time
 * the machine, gemm_choice's, accept a busy machine: they run beside the
 * others like any suite.) VIT_TEST_JOBS=0 runs every suite in the runner's
 * own process, as does a run of one suite (or one test): that is what a
 * debugger needs to stop in a test (`gdb --args build/tests/run SUITE/TEST`),
 * and then a crash ends the run. A suite still running after its time limit
 * (VIT_TEST_TIMEOUT=S seconds, 600 by default; none in the runner's own
 * process) is killed: the test it was in fails, TIMED OUT, and the run goes
 * on. The summary ends with the failing stages in the book's order (the
 * suites come in that order, book_place.h), the first one marked "start
 * there". How the runner's own tests plant trouble in SUITE's first test:
 * VIT_TEST_CRASH=SUITE dies of a signal (SIGSEGV), VIT_TEST_FAIL=SUITE fails,
 * VIT_TEST_HANG=SUITE never returns.
 * @return 0 when every test ran and passed, 1 otherwise.
 */
int run_suites(void);

#endif
