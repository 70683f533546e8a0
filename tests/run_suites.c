/**
 * @file run_suites.c
 * @brief Each suite in a child process, a few at once, reports in order
 *        (run_suites.h says why).
 *
 * The parent never runs a test, nor anything of OpenMP (a process that has
 * used OpenMP's threads cannot safely fork children that use them again). It
 * starts the children, keeps each one's output in a temporary file until the
 * suites before it have printed theirs, and adds up the summaries the
 * children send it after every test. A child that dies leaves the summary of
 * the tests it finished; the test it was in is counted as failed. A child
 * still running at the time limit is killed, and counts as one that died.
 */
#include "run_suites.h"

#include <CUnit/CUnit.h>
#include <CUnit/TestRun.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"
#include "book_place.h"
#include "gemm/gemm.h"

enum { JOBS_MAX = 8, SLOWEST_SHOWN = 5 };

// A suite's time limit, by default: some five times the slowest suite's on a
// busy machine (ch11_training, 130 s in a make test beside other work), so
// only a test that never returns meets it. VIT_TEST_TIMEOUT=S sets it.
#define SUITE_SECONDS_DEFAULT 600.0

/** One suite's run: its child, what it sent and what it printed. */
typedef struct {
    CU_pSuite suite;
    pid_t pid;             // 0 until started
    int summary_fd;        // the read end of the pipe the child sends its summaries on
    FILE *output;          // the child's stdout and stderr, printed in turn
    double started, seconds;
    bool done;
    bool timed_out;        // killed at the time limit
    int status;            // waitpid()'s
    CU_RunSummary summary; // the last one the child sent: the tests it finished
    bool summary_final;    // sent after the suite's last test
    bool in_test;          // the child's last word was a test's start: it died in that test
    char test[128];        // that test's name
} SuiteRun;

/* ------------------------------------------------------------ in the child */

/** What a child tells the runner as each test starts and ends. */
typedef struct {
    CU_RunSummary s; // the tests finished so far
    int final;       // after the suite's last test
    int in_test;     // sent as a test starts: a child that dies now died in it
    char test[128];  // that test's name
} ChildNews;

// Sent as each test starts and ends, so a child that dies has told what it
// finished and where it was (its output may not say: a sanitizer's report
// follows the test's line). Sent whole or not at all: a pipe writes up to
// PIPE_BUF bytes at once.
static int child_summary_fd = -1;

static void send_summary(bool final, const char *test) {
    ChildNews msg = {*CU_get_run_summary(), final, test != NULL, ""};
    if (test) snprintf(msg.test, sizeof msg.test, "%s", test);
    _Static_assert(sizeof msg <= PIPE_BUF, "one write() on a pipe");
    if (child_summary_fd < 0) return; // the suite runs in the runner's own process
    if (write(child_summary_fd, &msg, sizeof msg) != (ssize_t)sizeof msg) {
        // the parent reads it; nothing else to do if it is gone
    }
}

// CUnit's own report, as its basic mode prints it in verbose mode.
static void on_suite_start(const CU_pSuite suite) {
    printf("\nSuite: %s", suite->pName);
}

// Is the environment variable var set to this suite's name?
static bool named_by(const char *var, const CU_pSuite suite) {
    const char *v = getenv(var);
    return v && strcmp(v, suite->pName) == 0;
}

// How the runner's own tests (tests/test_runner.c) plant trouble in a suite's
// first test, to see it reported at its stage and the other suites run on:
// VIT_TEST_CRASH=SUITE dies of a signal (SIGSEGV), VIT_TEST_FAIL=SUITE fails
// an assertion, VIT_TEST_HANG=SUITE never returns (the time limit ends it).
static void plant_trouble(const CU_pSuite suite) {
    static CU_pSuite planted; // the suite whose first test has had its trouble
    if (planted == suite) return;
    planted = suite;
    if (named_by("VIT_TEST_CRASH", suite)) raise(SIGSEGV);
    if (named_by("VIT_TEST_FAIL", suite))
        CU_assertImplementation(CU_FALSE, __LINE__, "VIT_TEST_FAIL names this suite: its first "
                                "test fails", __FILE__, "", CU_FALSE);
    if (named_by("VIT_TEST_HANG", suite))
        for (;;) pause();
}

static void on_test_start(const CU_pTest test, const CU_pSuite suite) {
    printf("\n  Test: %s ...", test->pName);
    fflush(stdout); // on disk before the test runs: a crash shows where it was
    send_summary(false, test->pName);
    plant_trouble(suite);
}

static void on_test_complete(const CU_pTest test, const CU_pSuite suite,
                             const CU_pFailureRecord failure) {
    (void)test, (void)suite;
    if (!failure) printf("passed");
    else printf("FAILED");
    int i = 1;
    for (CU_pFailureRecord f = failure; f; f = f->pNext, i++)
        printf("\n    %d. %s:%u  - %s", i, f->strFileName ? f->strFileName : "",
               f->uiLineNumber, f->strCondition ? f->strCondition : "");
    fflush(stdout);
    send_summary(false, NULL);
}

static void on_suite_init_failure(const CU_pSuite suite) {
    printf("\nWARNING - Suite initialization failed for '%s'.", suite->pName);
}

static void on_suite_cleanup_failure(const CU_pSuite suite) {
    printf("\nWARNING - Suite cleanup failed for '%s'.", suite->pName);
}

static void set_handlers(void) {
    CU_set_suite_start_handler(on_suite_start);
    CU_set_test_start_handler(on_test_start);
    CU_set_test_complete_handler(on_test_complete);
    CU_set_suite_init_failure_handler(on_suite_init_failure);
    CU_set_suite_cleanup_failure_handler(on_suite_cleanup_failure);
    CU_set_all_test_complete_handler(NULL);
}

// Each suite's threads when the runner chose them (run_suites() says when), else 0.
static int threads_each;

static void use_threads_each(void) {
    if (threads_each <= 0) return;
    char n[16];
    snprintf(n, sizeof n, "%d", threads_each);
    setenv("OMP_NUM_THREADS", n, 1); // and the programs the tests start
    vit_set_threads(threads_each);
}

static void run_in_child(SuiteRun *r, int summary_fd) {
    child_summary_fd = summary_fd;
    use_threads_each();
    dup2(fileno(r->output), STDOUT_FILENO);
    dup2(fileno(r->output), STDERR_FILENO);
    setvbuf(stdout, NULL, _IOLBF, 0); // stdout and stderr share the file: keep their order
    setvbuf(stderr, NULL, _IONBF, 0);
    set_handlers();
    CU_run_suite(r->suite);
    send_summary(true, NULL);
    fflush(stdout);
    CU_cleanup_registry();
    exit(0); // not _exit(): a leak checker reports at exit
}

/* ----------------------------------------------------------- in the parent */

// How many suites run at once; 0: in this process, no children.
static int jobs_wanted(int suites) {
    const char *v = getenv("VIT_TEST_JOBS");
    if (v && *v) {
        char *end;
        long n = strtol(v, &end, 10);
        if (*end == '\0' && n >= 0 && n <= 64) return (int)n;
        fprintf(stderr, "run: VIT_TEST_JOBS=%s is not a number of suites from 0 to 64; "
                        "running one at a time\n", v);
        return 1;
    }
    if (suites == 1) return 0; // one suite (or one test): here, where gdb stops in it
    const int cores = vit_thread_limit();
    return cores < 1 ? 1 : cores > JOBS_MAX ? JOBS_MAX : cores;
}

// The default matrix product is measured once, by a child, before the suites
// start: children starting side by side would each measure it, on a machine
// the others keep busy, and could remember different answers.
static void choose_matrix_product_first(void) {
    fflush(NULL);
    const pid_t pid = fork();
    if (pid == 0) {
        use_threads_each(); // the answer is kept per thread count: the suites' own
        (void)gemm_choice();
        _exit(0);
    }
    if (pid > 0) waitpid(pid, NULL, 0);
}

// The parent keeps SIGCHLD blocked while suites run, so that it can sleep
// until a child ends or a time limit passes (wait_for_one()); each child gets
// the signal mask the runner had before.
static sigset_t mask_before;

static bool start(SuiteRun *r) {
    int fds[2];
    r->output = tmpfile();
    if (!r->output || pipe(fds) != 0) {
        fprintf(stderr, "run: cannot start suite %s: %s\n", r->suite->pName, strerror(errno));
        if (r->output) fclose(r->output);
        r->output = NULL;
        return false;
    }
    fflush(NULL); // nothing buffered here may be printed twice, by the child too
    r->started = vit_now();
    r->pid = fork();
    if (r->pid == 0) {
        sigprocmask(SIG_SETMASK, &mask_before, NULL);
        close(fds[0]);
        run_in_child(r, fds[1]);
    }
    close(fds[1]);
    r->summary_fd = fds[0];
    if (r->pid < 0) {
        fprintf(stderr, "run: cannot start suite %s: %s\n", r->suite->pName, strerror(errno));
        close(fds[0]);
        fclose(r->output);
        r->output = NULL;
        return false;
    }
    return true;
}

// The summaries the child sent (all in the pipe once it has ended): keep the last.
static void read_summaries(SuiteRun *r) {
    ChildNews msg;
    while (read(r->summary_fd, &msg, sizeof msg) == (ssize_t)sizeof msg) {
        r->summary = msg.s, r->summary_final = msg.final != 0, r->in_test = msg.in_test != 0;
        msg.test[sizeof msg.test - 1] = '\0';
        snprintf(r->test, sizeof r->test, "%s", msg.test);
    }
    close(r->summary_fd);
}

static bool crashed(const SuiteRun *r) {
    return !r->summary_final || !WIFEXITED(r->status) || WEXITSTATUS(r->status) != 0;
}

// A suite's time limit, in seconds: VIT_TEST_TIMEOUT's, else the default. Read once.
static double time_limit(void) {
    static double limit = 0;
    if (limit > 0) return limit;
    limit = SUITE_SECONDS_DEFAULT;
    const char *v = getenv("VIT_TEST_TIMEOUT");
    if (v && *v) {
        char *end;
        const double seconds = strtod(v, &end);
        if (*end == '\0' && seconds > 0) limit = seconds;
        else fprintf(stderr, "run: VIT_TEST_TIMEOUT=%s is not a number of seconds above 0; "
                             "each suite gets %.0f s\n", v, limit);
    }
    return limit;
}

// "CRASHED", or "TIMED OUT" for a suite killed at the time limit.
static const char *end_label(const SuiteRun *r) {
    return r->timed_out ? "TIMED OUT" : "CRASHED";
}

// How the child ended, when it did not end well: "ended by signal 11 (Segmentation fault)".
static void describe_end(char *buf, size_t size, const SuiteRun *r) {
    if (r->pid <= 0) snprintf(buf, size, "could not be started");
    else if (r->timed_out)
        snprintf(buf, size, "ran past the time limit of %g s (VIT_TEST_TIMEOUT) and was "
                 "ended by signal %d (%s)", time_limit(), SIGKILL, strsignal(SIGKILL));
    else if (WIFSIGNALED(r->status))
        snprintf(buf, size, "ended by signal %d (%s)", WTERMSIG(r->status),
                 strsignal(WTERMSIG(r->status)));
    else if (WIFEXITED(r->status) && WEXITSTATUS(r->status) != 0)
        snprintf(buf, size, "exited with status %d", WEXITSTATUS(r->status));
    else snprintf(buf, size, "ended before its last test");
}

static void print_report(SuiteRun *r) {
    if (r->output) {
        rewind(r->output);
        char buf[8192];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, r->output)) > 0) fwrite(buf, 1, n, stdout);
        fclose(r->output);
        r->output = NULL;
    }
    if (crashed(r)) {
        char how[160];
        describe_end(how, sizeof how, r);
        if (r->in_test)
            printf("\n  %s in test \"%s\": the suite's process %s; the test failed, and "
                   "the rest of %s did not run", end_label(r), r->test, how, r->suite->pName);
        else printf("\n  %s: the suite's process %s after its last test", end_label(r), how);
    }
    printf("\n  wall time: %.1f s", r->seconds);
    fflush(stdout);
}

// Kills each suite still running at the time limit (it ends, and is waited
// for, like any other); returns the seconds until the next one's limit.
static double stop_overdue(SuiteRun *runs, int n, double limit) {
    double next = limit;
    const double now = vit_now();
    for (int i = 0; i < n; i++) {
        SuiteRun *r = &runs[i];
        if (r->pid <= 0 || r->done || r->timed_out) continue;
        const double left = r->started + limit - now;
        if (left <= 0) {
            // only the suite's own process: a program a test started ends by
            // its own time limit (tests/cli_run.c)
            kill(r->pid, SIGKILL);
            r->timed_out = true;
        } else if (left < next) next = left;
    }
    return next;
}

// Sleeps until a child ends (SIGCHLD, blocked, arrives) or the seconds pass.
static void sleep_until_a_child_ends(double seconds) {
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    const struct timespec wait = {(time_t)seconds, (long)((seconds - (double)(time_t)seconds) * 1e9)};
    sigtimedwait(&chld, NULL, &wait); // a signal, the time up or EINTR: the caller looks again
}

// Waits for a child to end, killing those that run past the time limit; true
// when it was one of the suites' (or none is left).
static bool wait_for_one(SuiteRun *runs, int n, double limit) {
    int status;
    pid_t pid;
    for (;;) {
        pid = waitpid(-1, &status, WNOHANG);
        if (pid > 0 || (pid < 0 && errno != EINTR)) break;
        if (pid == 0) sleep_until_a_child_ends(stop_overdue(runs, n, limit));
    }
    if (pid < 0) { // no child left (cannot happen while one runs): none is waited for again
        for (int i = 0; i < n; i++)
            if (runs[i].pid > 0 && !runs[i].done) runs[i].done = true, read_summaries(&runs[i]);
        return true;
    }
    for (int i = 0; i < n; i++)
        if (runs[i].pid == pid && pid > 0 && !runs[i].done) {
            runs[i].status = status;
            runs[i].seconds = vit_now() - runs[i].started;
            runs[i].done = true;
            read_summaries(&runs[i]);
            return true;
        }
    return false;
}

// The suite in this process (VIT_TEST_JOBS=0, or only one suite): what gdb
// needs to stop in a test; a crash then ends the run.
static void run_here(SuiteRun *r) {
    r->started = vit_now();
    set_handlers();
    fflush(NULL);
    CU_run_suite(r->suite);
    r->summary = *CU_get_run_summary();
    r->summary_final = true;
    r->status = 0, r->pid = getpid(); // "exited with 0"
    r->seconds = vit_now() - r->started;
    r->done = true;
    fflush(stdout);
}

/* --------------------------------------------------------------- summary */

static int slower_first(const void *a, const void *b) {
    const double x = (*(const SuiteRun *const *)a)->seconds,
                 y = (*(const SuiteRun *const *)b)->seconds;
    return (x < y) - (x > y);
}

// A suite's failed tests, as its stage counts them: those that failed, and
// the one its process died in (or, when it died between tests or its set-up
// failed, one for the suite).
static unsigned failures_of(const SuiteRun *r) {
    const unsigned n = r->summary.nTestsFailed + (crashed(r) ? 1 : 0);
    return n == 0 && r->summary.nSuitesFailed > 0 ? 1 : n;
}

// The failing stages in the book's order (the runs are in that order), each
// with its chapter and its failed tests: the first is where to start reading,
// since the later stages build on it. Nothing when all passed.
//   first wrong stage: chapter 05 multi-head attention (3 tests): start there
//   also wrong: chapter 09 the whole forward pass (1 test)
static void print_failing_stages(const SuiteRun *runs, int n) {
    bool first = true;
    int i = 0;
    while (i < n) {
        const BookPlace *stage = book_place(runs[i].suite->pName);
        unsigned failed = 0;
        do failed += failures_of(&runs[i++]); // this suite and the rest of its stage
        while (i < n && book_same_stage(stage, book_place(runs[i].suite->pName)));
        if (failed == 0) continue;
        char chapter[24] = "";
        if (stage && stage->chapter > 0)
            snprintf(chapter, sizeof chapter, "chapter %02d ", stage->chapter);
        printf("%s%s%s (%u test%s)%s\n", first ? "first wrong stage: " : "also wrong: ", chapter,
               stage ? stage->stage : runs[i - 1].suite->pName, failed, failed == 1 ? "" : "s",
               first ? ": start there" : "");
        first = false;
    }
}

// CUnit's table, added up over the children; a crashed suite counts as failed,
// and so does the test it died in. Then the failing stages.
static bool print_summary(SuiteRun *runs, int n, double wall, int jobs) {
    unsigned suites_failed = 0, tests_run = 0, tests_failed = 0, tests_inactive = 0;
    unsigned asserts = 0, asserts_failed = 0, crashes = 0;
    for (int i = 0; i < n; i++) {
        const CU_RunSummary *s = &runs[i].summary;
        const unsigned died = crashed(&runs[i]) ? 1 : 0, in_test = runs[i].in_test && died ? 1 : 0;
        crashes += died;
        suites_failed += s->nSuitesFailed + died;
        tests_run += s->nTestsRun + in_test, tests_failed += s->nTestsFailed + in_test;
        tests_inactive += s->nTestsInactive;
        asserts += s->nAsserts, asserts_failed += s->nAssertsFailed;
    }
    const CU_pTestRegistry reg = CU_get_registry();
    printf("\n\nRun Summary:    Type  Total    Ran Passed Failed Inactive\n");
    printf("              suites %6u %6d    n/a %6u %8u\n", reg->uiNumberOfSuites, n,
           suites_failed, reg->uiNumberOfSuites - (unsigned)n);
    printf("               tests %6u %6u %6u %6u %8u\n", reg->uiNumberOfTests, tests_run,
           tests_run - tests_failed, tests_failed, tests_inactive);
    printf("             asserts %6u %6u %6u %6u      n/a\n\n", asserts, asserts,
           asserts - asserts_failed, asserts_failed);
    for (int i = 0; i < n; i++)
        if (crashed(&runs[i])) {
            char how[160];
            describe_end(how, sizeof how, &runs[i]);
            printf("%s: suite %s: its process %s\n", end_label(&runs[i]), runs[i].suite->pName,
                   how);
        }
    printf("Wall time = %.1f s for %d suites, %d at a time", wall, n, jobs);
    SuiteRun **order = malloc(sizeof *order * (size_t)(n > 0 ? n : 1));
    if (order) {
        for (int i = 0; i < n; i++) order[i] = &runs[i];
        qsort(order, (size_t)n, sizeof *order, slower_first);
        printf("; the slowest:");
        for (int i = 0; i < n && i < SLOWEST_SHOWN; i++)
            printf("%s %s %.1f s", i ? "," : "", order[i]->suite->pName, order[i]->seconds);
        free(order);
    }
    printf("\n");
    print_failing_stages(runs, n);
    return suites_failed == 0 && tests_failed == 0 && asserts_failed == 0 && crashes == 0;
}

// How many threads each suite gets. Side by side on a quiet machine, every
// suite keeps OpenMP's default (all the cores): two suites of two threads on
// two cores lose nothing, their threads sleep while they wait. Beside other
// programs that keep the cores busy they lose a great deal: every parallel
// loop waits at its end for its slowest thread, and a thread that has lost
// its core to a busy neighbour holds up the others (a suite took 4 times
// its quiet time). So when other programs kept at least half a core busy in
// a quarter-second look before the suites start, each suite runs on one
// thread. OMP_NUM_THREADS set by hand is kept. Returns a line for the header.
static void choose_threads(char *why, size_t size) {
    why[0] = '\0';
    if (getenv("OMP_NUM_THREADS")) return;
    const VitLoad before = vit_load_now();
    usleep(250 * 1000);
    const VitLoad after = vit_load_now();
    const double others = vit_load_others(&before, &after);
    if (others < 0.5) return; // quiet, or it cannot tell
    threads_each = 1;
    snprintf(why, size, "; other programs kept %.1f of %d cores busy: one thread each", others,
             after.cpus);
}

/* ------------------------------------------------------------------ the run */

int run_suites(void) {
    int n = 0;
    for (CU_pSuite s = CU_get_registry()->pSuite; s; s = s->pNext) n += s->fActive ? 1 : 0;
    SuiteRun *runs = calloc((size_t)(n > 0 ? n : 1), sizeof *runs);
    if (!runs) return 1;
    int k = 0;
    for (CU_pSuite s = CU_get_registry()->pSuite; s; s = s->pNext)
        if (s->fActive) runs[k++].suite = s;
    const int jobs = jobs_wanted(n);
    printf("\n     CUnit - A unit testing framework for C - Version %s\n", CU_VERSION);
    if (jobs == 0) {
        printf("     %d suite%s in this process, one after another\n", n, n == 1 ? "" : "s");
        const double t0 = vit_now();
        for (int i = 0; i < n; i++) run_here(&runs[i]);
        const bool passed = print_summary(runs, n, vit_now() - t0, 1);
        free(runs);
        return passed ? 0 : 1;
    }
    char threads_why[128];
    choose_threads(threads_why, sizeof threads_why);
    printf("     %d suites, each in a process of its own, %d at a time%s\n", n, jobs, threads_why);
    choose_matrix_product_first();
    const double limit = time_limit(), t0 = vit_now();
    sigset_t chld;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &mask_before);
    int next_start = 0, next_print = 0, running = 0;
    while (next_print < n) {
        for (; next_start < n && running < jobs; next_start++)
            if (start(&runs[next_start])) running++;
            else runs[next_start].done = true;
        if (running > 0 && wait_for_one(runs, n, limit)) running--;
        while (next_print < n && runs[next_print].done) print_report(&runs[next_print++]);
    }
    sigprocmask(SIG_SETMASK, &mask_before, NULL);
    const bool passed = print_summary(runs, n, vit_now() - t0, jobs);
    free(runs);
    return passed ? 0 : 1;
}
