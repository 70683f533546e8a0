/**
 * @file grade.c
 * @brief Grade mode: each test of an answer key in a child process, with a
 *        time limit, its report shortened, its hints kept, a score and
 *        Gradescope's results.json.
 *
 * The parent never runs a test (and so never starts OpenMP's threads, which a
 * fork would not copy): it forks one child per test, reads the child's output
 * and verdict through two pipes while it waits, and kills the child's process
 * group when the time is up or when the grader itself is interrupted.
 */
#include "grade.h"

#include <CUnit/TestRun.h>
#include <cjson/cJSON.h>
#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fileio.h"
#include "util.h"

enum {
    CAPTURE_MAX = 256 * 1024, // bytes of a test's output kept; the rest is read and dropped
    VERDICT_MAX = 16 * 1024,  // the verdict pipe: PASS/FAIL and a few assertions
    LINE_MAX_SHOWN = 400,     // bytes of one line shown (escaped)
    CONDITION_MAX = 120,      // bytes of a failed assertion's condition shown
    MAX_INPUTS = 32,          // --key, --source and --build-log files
};

/* ------------------------------------------------------------- text buffer */

// A growing string: what one test's failure says, or the whole submission's.
typedef struct {
    char *s;
    size_t len, cap;
} Text;

static void text_add(Text *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void text_add(Text *t, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (t->len + (size_t)n + 1 > t->cap) {
        t->cap = (t->len + (size_t)n + 1) * 2;
        t->s = vit_realloc(t->s, t->cap);
    }
    va_start(ap, fmt);
    vsnprintf(t->s + t->len, t->cap - t->len, fmt, ap);
    va_end(ap);
    t->len += (size_t)n;
}

static const char *text_str(const Text *t) { return t->s ? t->s : ""; }

// One line of what a test printed, safe for a terminal: control bytes written out.
static const char *shown(char buf[LINE_MAX_SHOWN], const char *line) {
    return vit_escape(buf, LINE_MAX_SHOWN, line);
}

/* --------------------------------------------------------------- selection */

// "suite" or "suite/test": does it name test t of suite s?
static bool names_test(const char *name, CU_pSuite s, CU_pTest t) {
    const char *slash = strchr(name, '/');
    size_t len = slash ? (size_t)(slash - name) : strlen(name);
    if (strlen(s->pName) != len || strncmp(s->pName, name, len) != 0) return false;
    return !slash || strcmp(slash + 1, t->pName) == 0;
}

int grade_select(GradeTest **out, const char *const *names, int count, const char *program) {
    int n = 0, cap = 0;
    GradeTest *list = NULL;
    for (int i = 0; i < count; i++) {
        int matched = 0;
        for (CU_pSuite s = CU_get_registry()->pSuite; s; s = s->pNext)
            for (CU_pTest t = s->pTest; t; t = t->pNext) {
                if (!names_test(names[i], s, t)) continue;
                matched++;
                bool again = false;
                for (int k = 0; k < n && !again; k++) again = list[k].test == t;
                if (again) continue;
                if (n == cap) list = vit_realloc(list, sizeof *list * (size_t)(cap = cap ? 2 * cap : 64));
                list[n++] = (GradeTest){s, t};
            }
        if (matched == 0) {
            char esc[LINE_MAX_SHOWN];
            fprintf(stderr, "%s: no suite or test is named '%s'; suites are:", program,
                    shown(esc, names[i]));
            for (CU_pSuite s = CU_get_registry()->pSuite; s; s = s->pNext)
                fprintf(stderr, " %s", s->pName);
            fprintf(stderr, "\n");
            free(list);
            *out = NULL;
            return -1;
        }
    }
    *out = list;
    return n;
}

/* ------------------------------------------------------------- one test */

// What happened to one test.
typedef struct {
    bool passed;
    double seconds;
    Text detail;  // the failure, as shown and as put in the results file
    double given; // > 0: the time limit was raised to this for lib's sake (run_one())
    double lib;   // lib's own time on the test then
} Outcome;

// The process group of the test being run, for the signal handler.
static volatile sig_atomic_t running_group;
static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
enum { STOP_SIGNALS = sizeof stop_signals / sizeof stop_signals[0] };

// The grader is stopped (Ctrl-C): take the test being run with it, then stop as asked.
static void on_stop(int sig) {
    pid_t group = (pid_t)running_group;
    if (group > 0) kill(-group, SIGKILL);
    signal(sig, SIG_DFL);
    raise(sig);
}

static void install_stop_handlers(void) {
    for (int i = 0; i < STOP_SIGNALS; i++) {
        struct sigaction old, sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_stop;
        sigemptyset(&sa.sa_mask);
        if (sigaction(stop_signals[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
            sigaction(stop_signals[i], &sa, NULL);
    }
}

#if defined(__SANITIZE_ADDRESS__)
#define GRADE_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define GRADE_SANITIZER 1
#endif
#endif

#ifndef GRADE_SANITIZER
// A crash in the child: say in which functions ("crashed in softmax() <- chapter03_run()"),
// then die of the same signal. The runner is linked with -rdynamic, so dladdr() knows the
// global functions; a static one shows as "?". Runs on its own stack: a recursion without
// end overflows the normal one.
static void on_crash(int sig) {
    void *frames[32];
    int n = backtrace(frames, 32), named = 0, repeats = 0;
    char line[600];
    size_t len = (size_t)snprintf(line, sizeof line, "crashed in ");
    const char *previous = NULL;
    bool last_unknown = false;
    for (int i = 1; i < n && named < 5 && len < sizeof line - 120; i++) {
        Dl_info info;
        bool found = dladdr(frames[i], &info) != 0;
        const char *name = found && info.dli_sname ? info.dli_sname : NULL;
        if (!name && found && info.dli_fname && strstr(info.dli_fname, "/libc.")) continue;
        if (name && (strcmp(name, "on_crash") == 0 || strncmp(name, "__libc", 6) == 0)) continue;
        if (name && (strncmp(name, "CU_", 3) == 0 || strcmp(name, "child_run") == 0)) break;
        if (!name && last_unknown) continue;
        if (name && previous && strcmp(name, previous) == 0) { // a function calling itself
            repeats++;
            continue;
        }
        len += (size_t)snprintf(line + len, sizeof line - len, "%s%s%s", named ? " <- " : "",
                                name ? name : "?", name ? "()" : "");
        last_unknown = !name;
        previous = name;
        named++;
    }
    if (repeats >= 8)
        len += (size_t)snprintf(line + len, sizeof line - len,
                                " (%s() calls itself again and again: a recursion that never "
                                "stops?)", previous ? previous : "?");
    if (named) {
        line[len++] = '\n';
        ssize_t w = write(2, line, len);
        (void)w;
    }
    signal(sig, SIG_DFL);
    raise(sig);
}

#endif

static void install_crash_handlers(void) {
#ifndef GRADE_SANITIZER // a sanitizer's own report says more: leave its handlers alone
    static char alt[64 * 1024];
    stack_t ss = {.ss_sp = alt, .ss_size = sizeof alt};
    sigaltstack(&ss, NULL);
    void *warm[2];
    backtrace(warm, 2); // loads what backtrace() needs now, not inside the handler
    static const int crash_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL};
    for (size_t i = 0; i < sizeof crash_signals / sizeof *crash_signals; i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_crash;
        sa.sa_flags = SA_ONSTACK | SA_RESETHAND | SA_NODEFER;
        sigemptyset(&sa.sa_mask);
        sigaction(crash_signals[i], &sa, NULL);
    }
#endif
}

static bool same_text(const char *a, const char *b) { return strcmp(a ? a : "", b ? b : "") == 0; }

// The child: run one CUnit test, its output into out_fd, its verdict into verdict_fd.
static void child_run(const GradeTest *g, int out_fd, int verdict_fd) {
    for (int i = 0; i < STOP_SIGNALS; i++) signal(stop_signals[i], SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    setpgid(0, 0);
    int null = open("/dev/null", O_RDONLY);
    if (null >= 0) {
        dup2(null, 0);
        close(null);
    }
    dup2(out_fd, 1);
    dup2(out_fd, 2);
    close(out_fd);
    setvbuf(stdout, NULL, _IOLBF, 0); // a report on stderr and a hint on stdout stay in order
    install_crash_handlers();
    CU_ErrorCode rc = CU_run_test(g->suite, g->test);
    fflush(stdout);
    fflush(stderr);
    bool passed = rc == CUE_SUCCESS && CU_get_number_of_tests_failed() == 0 &&
                  CU_get_number_of_failure_records() == 0;
    FILE *v = fdopen(verdict_fd, "w");
    if (v) {
        fprintf(v, "%s %u\n", passed ? "PASS" : "FAIL", CU_get_number_of_failure_records());
        if (rc != CUE_SUCCESS) fprintf(v, "CUnit: %s\n", CU_get_error_msg());
        // the distinct assertions that failed (one in a loop fails many times), and how often
        CU_pFailureRecord distinct[GRADE_ASSERT_LINES];
        unsigned times[GRADE_ASSERT_LINES];
        int n = 0;
        for (CU_pFailureRecord f = CU_get_failure_list(); f; f = f->pNext) {
            int k = 0;
            while (k < n && !(distinct[k]->uiLineNumber == f->uiLineNumber &&
                              same_text(distinct[k]->strFileName, f->strFileName) &&
                              same_text(distinct[k]->strCondition, f->strCondition)))
                k++;
            if (k < n) times[k]++;
            else if (n < GRADE_ASSERT_LINES) distinct[n] = f, times[n++] = 1;
        }
        for (int k = 0; k < n; k++) {
            // one line each: a condition never spans lines in the verdict
            // and short: the report above already says in full what differed
            char cond[LINE_MAX_SHOWN];
            snprintf(cond, sizeof cond, "%s", distinct[k]->strCondition ? distinct[k]->strCondition : "");
            for (char *c = cond; *c; c++)
                if (*c == '\n' || *c == '\r') *c = ' ';
            size_t cut = CONDITION_MAX;
            if (strlen(cond) > cut) {
                while (cut > 0 && (cond[cut] & 0xC0) == 0x80) cut--; // not inside a UTF-8 character
                memcpy(cond + cut, "...", 4);
            }
            fprintf(v, "%u %s:%u: %s\n", times[k],
                    distinct[k]->strFileName ? distinct[k]->strFileName : "?",
                    distinct[k]->uiLineNumber, cond);
        }
        fclose(v);
    }
    CU_cleanup_registry();
    exit(0); // exit, not _exit: a sanitizer's leak check runs, and its report is captured
}

// Appends what is readable on fd to buf (at most max bytes kept); false at end of file.
static bool drain(int fd, char *buf, size_t *len, size_t max, size_t *dropped) {
    char chunk[8192];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n > 0) {
            size_t keep = *len + (size_t)n <= max ? (size_t)n : max - *len;
            memcpy(buf + *len, chunk, keep);
            *len += keep;
            *dropped += (size_t)n - keep;
            continue;
        }
        if (n == 0) return false;
        if (errno == EINTR) continue;
        return errno == EAGAIN || errno == EWOULDBLOCK; // nothing more for now
    }
}

// "SIGSEGV (a read or write outside an array?)" and the like.
static void signal_words(char *buf, size_t size, int sig) {
    static const struct {
        int sig;
        const char *name, *why;
    } known[] = {
        {SIGSEGV, "SIGSEGV", "a read or write outside an array?"},
        {SIGBUS, "SIGBUS", "a misaligned pointer, or a read past the end of a mapped file?"},
        {SIGFPE, "SIGFPE", "an integer division by zero?"},
        {SIGABRT, "SIGABRT", "abort(): an assert() failed, or the C library found the heap "
                             "damaged (a write outside an array, a double free?)"},
        {SIGILL, "SIGILL", "an illegal instruction: a function that forgot to return a value, "
                           "or a damaged stack?"},
        {SIGTRAP, "SIGTRAP", "a trap: undefined behaviour the compiler caught?"},
        {SIGKILL, "SIGKILL", "killed from outside: out of memory?"},
        {SIGTERM, "SIGTERM", "stopped from outside"},
        {SIGPIPE, "SIGPIPE", "a write to a closed pipe"},
        {SIGXCPU, "SIGXCPU", "over the CPU time limit"},
    };
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (known[i].sig == sig) {
            snprintf(buf, size, "%s (%s)", known[i].name, known[i].why);
            return;
        }
    snprintf(buf, size, "signal %d (%s)", sig, strsignal(sig));
}

// Is this line of a test's output one of check_hint()'s? Then *text is what it says.
static bool hint_line(const char *line, const char **text) {
    while (*line == ' ' || *line == '\t') line++;
    if (strncmp(line, "hint:", 5) != 0) return false;
    line += 5;
    while (*line == ' ') line++;
    *text = line;
    return true;
}

// The failure's text: why it stopped, the report, the assertions, the hints.
static void compose(Outcome *o, const char *why, char *output, size_t dropped,
                    const char *verdict, const char *program, const GradeTest *g) {
    char esc[LINE_MAX_SHOWN];
    Text *d = &o->detail;
    if (why) text_add(d, "%s\n", why);
    // the report: every non-empty line but the hints, the first GRADE_REPORT_LINES of them
    const char *hints[GRADE_HINT_LINES];
    int n_hints = 0, more_hints = 0, lines = 0;
    for (char *line = output, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        size_t len = strlen(line);
        while (len && (line[len - 1] == ' ' || line[len - 1] == '\r')) line[--len] = '\0';
        if (!len || strspn(line, "=") == len) continue; // nothing, or a sanitizer's rule line
        const char *h;
        if (hint_line(line, &h)) {
            bool seen = false;
            for (int k = 0; k < n_hints && !seen; k++) seen = strcmp(hints[k], h) == 0;
            if (seen) continue;
            if (n_hints < GRADE_HINT_LINES) hints[n_hints++] = h;
            else more_hints++;
            continue;
        }
        if (lines++ >= GRADE_REPORT_LINES) continue;
        const char *body = line; // check.c indents by 4: keep its relative indent
        for (int k = 0; k < 4 && *body == ' '; k++) body++;
        text_add(d, "%s\n", shown(esc, body));
    }
    if (lines > GRADE_REPORT_LINES || dropped)
        text_add(d, "... %d more lines%s; all of it: %s '%s/%s'\n",
                 lines > GRADE_REPORT_LINES ? lines - GRADE_REPORT_LINES : 0,
                 dropped ? " (and more output than was kept)" : "", program, g->suite->pName,
                 g->test->pName);
    // the assertions that failed, from the verdict: "PASS|FAIL COUNT" then file:line lines
    if (verdict && *verdict) {
        unsigned count = 0;
        sscanf(verdict, "%*s %u", &count);
        const char *line = strchr(verdict, '\n');
        unsigned listed = 0;
        while (line && line[1]) {
            line++;
            const char *end = strchr(line, '\n');
            char one[LINE_MAX_SHOWN];
            size_t len = end ? (size_t)(end - line) : strlen(line);
            if (len >= sizeof one) len = sizeof one - 1;
            memcpy(one, line, len);
            one[len] = '\0';
            unsigned times = 0;
            int skip = 0;
            if (strncmp(one, "CUnit: ", 7) == 0) {
                text_add(d, "%s\n", shown(esc, one));
            } else if (sscanf(one, "%u %n", &times, &skip) == 1 && skip > 0) {
                if (times > 1) text_add(d, "failed %u times: %s\n", times, shown(esc, one + skip));
                else text_add(d, "failed: %s\n", shown(esc, one + skip));
                listed += times;
            }
            line = end;
        }
        if (count > listed)
            text_add(d, "... and %u more failed assertions elsewhere\n", count - listed);
    }
    for (int k = 0; k < n_hints; k++) text_add(d, "hint: %s\n", shown(esc, hints[k]));
    if (more_hints) text_add(d, "... and %d more hints\n", more_hints);
}

/** What one test's child did, before anything is judged of it. */
typedef struct {
    char *output;    ///< its stdout and stderr, at most CAPTURE_MAX bytes (owned)
    size_t dropped;  ///< bytes past that
    char *verdict;   ///< what it wrote on the verdict pipe (owned)
    int status;      ///< its wait status
    bool timed_out;  ///< killed at the time limit
    double seconds;  ///< wall time
} ChildRun;

// Run one test in a child; wait for it at most `timeout` seconds. On false,
// o->detail says why it could not run.
static bool run_child(ChildRun *c, Outcome *o, const GradeTest *g, double timeout) {
    memset(c, 0, sizeof *c);
    int out[2], ver[2];
    double t0 = vit_now();
    if (pipe2(out, O_CLOEXEC) != 0) {
        text_add(&o->detail, "could not run: pipe: %s\n", strerror(errno));
        return false;
    }
    if (pipe2(ver, O_CLOEXEC) != 0) {
        text_add(&o->detail, "could not run: pipe: %s\n", strerror(errno));
        close(out[0]);
        close(out[1]);
        return false;
    }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        text_add(&o->detail, "could not run: fork: %s\n", strerror(errno));
        close(out[0]), close(out[1]), close(ver[0]), close(ver[1]);
        return false;
    }
    if (pid == 0) {
        close(out[0]);
        close(ver[0]);
        child_run(g, out[1], ver[1]);
    }
    setpgid(pid, pid); // also done by the child: whichever runs first
    running_group = pid;
    close(out[1]);
    close(ver[1]);
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    fcntl(ver[0], F_SETFL, O_NONBLOCK);

    char *output = vit_malloc(CAPTURE_MAX + 1), *verdict = vit_malloc(VERDICT_MAX + 1);
    size_t out_len = 0, ver_len = 0, dropped = 0, ver_dropped = 0;
    bool out_open = true, ver_open = true, exited = false, timed_out = false;
    int status = 0;
    double exit_time = 0;
    while (out_open || ver_open) {
        struct pollfd p[2] = {{out_open ? out[0] : -1, POLLIN, 0}, {ver_open ? ver[0] : -1, POLLIN, 0}};
        poll(p, 2, 20);
        if (out_open) out_open = drain(out[0], output, &out_len, CAPTURE_MAX, &dropped);
        if (ver_open) ver_open = drain(ver[0], verdict, &ver_len, VERDICT_MAX, &ver_dropped);
        double now = vit_now();
        if (!exited) {
            siginfo_t info = {0};
            // WNOWAIT: the child stays a zombie, so its group id cannot be reused yet
            if (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOHANG | WNOWAIT) == 0 && info.si_pid == pid) {
                kill(-pid, SIGKILL); // whatever it left behind in its group
                exited = true;
                exit_time = now;
            } else if (now - t0 > timeout) {
                kill(-pid, SIGKILL);
                timed_out = exited = true;
                exit_time = now;
            }
        } else if (now - exit_time > 2.0) {
            break; // something outside the group holds a pipe open: stop reading
        }
    }
    waitpid(pid, &status, 0);
    running_group = 0;
    close(out[0]);
    close(ver[0]);
    output[out_len] = '\0';
    verdict[ver_len] = '\0';
    *c = (ChildRun){.output = output, .dropped = dropped, .verdict = verdict, .status = status,
                    .timed_out = timed_out, .seconds = vit_now() - t0};
    return true;
}

// How long lib's own code takes on test g, here and now: the reference runner
// (the normal one, linked with lib alone) grading that test by itself. -1 when
// it cannot say (it could not run, or lib's own code failed the test).
static double reference_seconds(const char *reference, const GradeTest *g) {
    char name[1024];
    snprintf(name, sizeof name, "%s/%s", g->suite->pName, g->test->pName);
    fflush(stdout);
    fflush(stderr);
    const double t0 = vit_now();
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        setpgid(0, 0); // a group of its own, which a Ctrl-C of the grader's stops too
        int null = open("/dev/null", O_RDWR);
        if (null >= 0) dup2(null, 0), dup2(null, 1), dup2(null, 2);
        execl(reference, reference, "--grade", "--timeout", "3600", "--", name, (char *)NULL);
        _exit(127);
    }
    setpgid(pid, pid);
    running_group = pid;
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    running_group = 0;
    const double seconds = vit_now() - t0;
    return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? seconds : -1;
}

// The outcome of a child's run: passed only when it finished and said PASS;
// otherwise why, its report and its hints. limit: the time it had; lib: lib's
// own time on the test (for a timeout's message), or -1.
static Outcome judge(ChildRun *c, double limit, double lib, const char *program,
                     const GradeTest *g) {
    Outcome o = {.seconds = c->seconds};
    const int status = c->status;
    const char *verdict = c->verdict, *output = c->output;
    char why[512] = "", sig[256];
    bool finished = strncmp(verdict, "PASS ", 5) == 0 || strncmp(verdict, "FAIL ", 5) == 0;
    if (c->timed_out && lib >= 0) {
        snprintf(why, sizeof why, "timed out after %.3g s (an endless loop? lib's own code took "
                 "%.2g s on this test, here and now)", limit, lib);
    } else if (c->timed_out) {
        snprintf(why, sizeof why, "timed out after %.3g s (an endless loop?)", limit);
    } else if (WIFSIGNALED(status)) {
        signal_words(sig, sizeof sig, WTERMSIG(status));
        snprintf(why, sizeof why, "crashed: %s", sig);
    } else if (!finished && (strstr(output, "Sanitizer") || strstr(output, ": runtime error: "))) {
        snprintf(why, sizeof why, "stopped by a sanitizer (exit status %d): its report follows",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    } else if (!finished) {
        snprintf(why, sizeof why,
                 "stopped before the test finished: exit status %d (does the code call exit()?)",
                 WIFEXITED(status) ? WEXITSTATUS(status) : -1);
    } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
        snprintf(why, sizeof why,
                 "the test finished, then the process exited with status %d (a leak or an error "
                 "a sanitizer found?)", WEXITSTATUS(status));
    }
    o.passed = !why[0] && strncmp(verdict, "PASS ", 5) == 0;
    if (!o.passed) compose(&o, why[0] ? why : NULL, c->output, c->dropped,
                           finished ? verdict : NULL, program, g);
    free(c->output);
    free(c->verdict);
    return o;
}

// One test, within its time limit: --timeout (30 s) at least, and more when
// lib's own code needs more. A test still running at the limit is not judged
// yet: the reference runner times lib on the same test, here and now, and if
// five times that is longer than the limit, the test runs again with that long
// (on a busy 2-core machine lib's own ViT-B/16 tests take 14 to 25 s, and a
// right answer written more slowly must not lose its point to the machine).
// A timeout then says how long lib took.
static Outcome run_one(const GradeTest *g, double timeout, const char *reference,
                       const char *program) {
    Outcome o = {0};
    ChildRun c;
    if (!run_child(&c, &o, g, timeout)) return o;
    if (!c.timed_out || !reference) return judge(&c, timeout, -1, program, g);
    const double lib = reference_seconds(reference, g), longer = 5 * lib;
    if (lib < 0 || longer <= timeout) return judge(&c, timeout, lib, program, g);
    free(c.output);
    free(c.verdict);
    const double first = c.seconds;
    if (!run_child(&c, &o, g, longer)) return o;
    o = judge(&c, longer, lib, program, g);
    o.seconds += first;
    o.given = longer, o.lib = lib;
    return o;
}

/* ------------------------------------------------------------ the run */

typedef struct {
    const char *json, *title, *build_log;
    const char *reference; // the runner linked with lib alone, to time lib's own code
    double points;          // --points: what the exercise is worth in results.json; 0: 1 a test
    char *baseline;         // --baseline: the tests the untouched skeleton passes, one a line
    const char *visibility; // --visibility: Gradescope's, e.g. "after_due_date"
    const char *inputs[MAX_INPUTS], *input_roles[MAX_INPUTS];
    int n_inputs;
    const char *sources[MAX_INPUTS];
    int n_sources;
    double timeout;
    bool build_failed;
    const char **names; // what to grade, in order
    int n_names;
    char *key_text[MAX_INPUTS]; // the KEY files read, owning the names in them
    int n_keys;
} GradeArgs;

static void usage(FILE *f, const char *program) {
    fprintf(f,
            "usage: %s --grade [--key FILE] [--json FILE] [--timeout SECONDS] [--title TEXT]\n"
            "       [--source FILE]... [--build-log FILE] [--build-failed] [--reference RUNNER]\n"
            "       [SUITE[/TEST]]...\n"
            "Runs each selected test in a process of its own (time limit %.0f s; with --reference,\n"
            "more when lib's own code, timed by RUNNER, takes more than a fifth of it), prints PASS or\n"
            "FAIL for each, what a failure printed (shortened) and its hints, and last the line\n"
            "'N passed, M failed'. Exit status 0 when nothing failed, 1 otherwise, 2 bad usage.\n"
            "--json FILE also writes Gradescope's results.json there, worth --points P (shared\n"
            "by the tests; default 1 a test), with --visibility V (visible, hidden,\n"
            "after_due_date, after_published; default visible).\n",
            program, GRADE_TIMEOUT);
}

// The lines of a KEY file become names to grade.
static int add_key(GradeArgs *a, const char *path, const char *program) {
    char *data;
    size_t size;
    VitError err;
    if (a->n_keys == MAX_INPUTS) {
        fprintf(stderr, "%s: too many --key files\n", program);
        return 2;
    }
    if (file_read_all(&data, &size, path, 1 << 20, "an answer key (KEY file)", &err) != VIT_OK) {
        vit_print_error(program, &err);
        return 2;
    }
    a->key_text[a->n_keys++] = data;
    int lines = 0;
    for (char *line = data, *next; line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        while (*line == ' ' || *line == '\t') line++;
        size_t len = strlen(line);
        while (len && strchr(" \t\r", line[len - 1])) line[--len] = '\0';
        if (!len || line[0] == '#') continue;
        a->names = vit_realloc(a->names, sizeof *a->names * (size_t)(a->n_names + 1));
        a->names[a->n_names++] = line;
        lines++;
    }
    if (lines == 0) {
        char esc[LINE_MAX_SHOWN];
        fprintf(stderr, "%s: %s names no suite or test\n", program, shown(esc, path));
        return 2;
    }
    return 0;
}

static int add_input(GradeArgs *a, const char *path, const char *role, const char *program) {
    if (a->n_inputs == MAX_INPUTS) {
        fprintf(stderr, "%s: too many input files\n", program);
        return 2;
    }
    a->inputs[a->n_inputs] = path;
    a->input_roles[a->n_inputs++] = role;
    return 0;
}

static int parse_args(GradeArgs *a, const char *program, int argc, char **argv) {
    memset(a, 0, sizeof *a);
    a->timeout = GRADE_TIMEOUT;
    bool options = true;
    for (int i = 0; i < argc; i++) {
        const char *arg = argv[i];
        bool has_value = i + 1 < argc;
        int rc = 0;
        if (options && strcmp(arg, "--") == 0) {
            options = false;
        } else if (options && strcmp(arg, "--help") == 0) {
            usage(stdout, program);
            exit(0);
        } else if (options && strcmp(arg, "--build-failed") == 0) {
            a->build_failed = true;
        } else if (options && arg[0] == '-' && arg[1] == '-') {
            static const char *const with_value[] = {"--key", "--json", "--timeout", "--title",
                                                     "--source", "--build-log", "--reference",
                                                     "--points", "--visibility", "--baseline"};
            bool known = false;
            for (size_t k = 0; k < sizeof with_value / sizeof *with_value; k++)
                known = known || strcmp(arg, with_value[k]) == 0;
            if (!known) {
                fprintf(stderr, "%s: unknown option %s (see --grade --help)\n", program, arg);
                return 2;
            }
            if (!has_value) {
                fprintf(stderr, "%s: %s needs a value\n", program, arg);
                return 2;
            }
            const char *v = argv[++i];
            if (strcmp(arg, "--key") == 0) {
                rc = add_key(a, v, program);
                if (!rc) rc = add_input(a, v, "--key", program);
            } else if (strcmp(arg, "--json") == 0) {
                a->json = v;
            } else if (strcmp(arg, "--title") == 0) {
                a->title = v;
            } else if (strcmp(arg, "--reference") == 0) {
                a->reference = v;
            } else if (strcmp(arg, "--baseline") == 0) {
                size_t size;
                VitError err;
                free(a->baseline);
                if (file_read_all(&a->baseline, &size, v, 1 << 20, "the skeleton's passing tests",
                                  &err) != VIT_OK) {
                    vit_print_error(program, &err);
                    return 2;
                }
                rc = add_input(a, v, "--baseline", program);
            } else if (strcmp(arg, "--visibility") == 0) {
                static const char *const kinds[] = {"visible", "hidden", "after_due_date",
                                                    "after_published"};
                bool ok = false;
                for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) ok = ok || !strcmp(v, kinds[k]);
                if (!ok) {
                    char esc[LINE_MAX_SHOWN];
                    fprintf(stderr, "%s: --visibility is visible, hidden, after_due_date or "
                            "after_published (Gradescope's); not '%s'\n", program, shown(esc, v));
                    return 2;
                }
                a->visibility = v;
            } else if (strcmp(arg, "--points") == 0) {
                VitError err;
                float p;
                if (vit_parse_float(&p, v, "--points", &err) != VIT_OK || !(p > 0 && p <= 1e6)) {
                    char esc[LINE_MAX_SHOWN];
                    fprintf(stderr, "%s: --points takes what the exercise is worth, more than 0; "
                            "not '%s'\n", program, shown(esc, v));
                    return 2;
                }
                a->points = p;
            } else if (strcmp(arg, "--source") == 0) {
                if (a->n_sources == MAX_INPUTS) {
                    fprintf(stderr, "%s: too many --source files\n", program);
                    return 2;
                }
                a->sources[a->n_sources++] = v;
                rc = add_input(a, v, "--source", program);
            } else if (strcmp(arg, "--build-log") == 0) {
                a->build_log = v;
                rc = add_input(a, v, "--build-log", program);
            } else { // --timeout
                VitError err;
                float t;
                if (vit_parse_float(&t, v, "--timeout", &err) != VIT_OK || !(t > 0 && t <= 86400)) {
                    fprintf(stderr, "%s: --timeout takes seconds, more than 0 and at most 86400; "
                            "not '%s'\n", program, v);
                    return 2;
                }
                a->timeout = t;
            }
        } else {
            a->names = vit_realloc(a->names, sizeof *a->names * (size_t)(a->n_names + 1));
            a->names[a->n_names++] = arg;
        }
        if (rc) return rc;
    }
    if (a->n_names == 0) {
        fprintf(stderr, "%s: --grade needs the tests to grade: SUITE, SUITE/TEST or --key FILE\n",
                program);
        usage(stderr, program);
        return 2;
    }
    return 0;
}

static void free_args(GradeArgs *a) {
    free(a->baseline);
    for (int i = 0; i < a->n_keys; i++) free(a->key_text[i]);
    free(a->names);
}

// Refuse a --json that is one of the inputs, or that cannot be written, before any test runs.
static bool json_destination_ok(const GradeArgs *a, const char *program) {
    VitError err;
    for (int i = 0; i < a->n_inputs; i++)
        if (file_check_not_input(a->json, "--json", a->inputs[i], a->input_roles[i], &err) != VIT_OK) {
            vit_print_error(program, &err);
            return false;
        }
    OutFile o;
    if (outfile_open(&o, a->json, &err) != VIT_OK) {
        vit_print_error(program, &err);
        return false;
    }
    outfile_discard(&o);
    return true;
}

// Whether the untouched skeleton passes test g: its "SUITE/TEST" is a line of
// the --baseline file.
static bool in_baseline(const char *baseline, const GradeTest *g) {
    char name[1024];
    snprintf(name, sizeof name, "%s/%s", g->suite->pName, g->test->pName);
    const size_t n = strlen(name);
    for (const char *line = baseline; line && *line;) {
        const char *end = strchr(line, '\n');
        const size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len == n && strncmp(line, name, n) == 0) return true;
        line = end ? end + 1 : NULL;
    }
    return false;
}

/** The grade in points (run_score()). */
typedef struct {
    int earned;  ///< tests passed that the untouched skeleton fails
    int lost;    ///< tests failed that the untouched skeleton passes: a point each
    int max;     ///< the tests the untouched skeleton fails: all there is to earn
    int kept;    ///< the tests the untouched skeleton passes
} Score;

// With a --baseline, a test the untouched skeleton already passes (its output
// does not depend on the student's code, or only says what zeros say: "softmax
// ignores an added constant" holds for all zeros) earns nothing, and failing
// it costs a point: so the skeleton scores 0, whatever the key holds, and a
// solution that breaks what the skeleton got right pays for it. Without one,
// every test is a point.
static Score run_score(const GradeArgs *a, const GradeTest *tests, const Outcome *out, int n) {
    Score sc = {0};
    for (int i = 0; i < n; i++) {
        const bool kept = a->baseline && in_baseline(a->baseline, &tests[i]);
        sc.kept += kept;
        sc.max += !kept;
        sc.earned += !kept && out[i].passed;
        sc.lost += kept && !out[i].passed;
    }
    return sc;
}
static int score_points(const Score *sc) {
    return sc->earned > sc->lost ? sc->earned - sc->lost : 0;
}

static double hundredths(double x) { return (double)(long long)(x * 100 + 0.5) / 100; }

static bool write_json(const GradeArgs *a, const GradeTest *tests, const Outcome *out, int n,
                       const Score *sc, double seconds, const char *summary, const char *program) {
    // --points P: the exercise is worth P, shared equally by the tests that earn
    // (Gradescope's assignment is then set to P, not to a count of tests); else 1 a test
    const double total = a->points > 0 ? a->points : sc->max, each = sc->max ? total / sc->max : 0;
    cJSON *root = cJSON_CreateObject(), *list = cJSON_CreateArray();
    cJSON_AddNumberToObject(root, "score", hundredths(score_points(sc) * each));
    cJSON_AddNumberToObject(root, "max_score", hundredths(total));
    cJSON_AddNumberToObject(root, "execution_time", hundredths(seconds));
    cJSON_AddStringToObject(root, "output", summary);
    cJSON_AddStringToObject(root, "visibility", a->visibility ? a->visibility : "visible");
    cJSON_AddItemToObject(root, "tests", list);
    for (int i = 0; i < n; i++) {
        char name[512];
        snprintf(name, sizeof name, "%s/%s", tests[i].suite->pName, tests[i].test->pName);
        cJSON *t = cJSON_CreateObject();
        cJSON_AddStringToObject(t, "name", name);
        const bool kept = a->baseline && in_baseline(a->baseline, &tests[i]);
        const double score = kept ? (out[i].passed ? 0 : -each) : out[i].passed ? each : 0;
        cJSON_AddNumberToObject(t, "score", hundredths(score));
        cJSON_AddNumberToObject(t, "max_score", kept ? 0 : hundredths(each));
        cJSON_AddStringToObject(t, "status", out[i].passed ? "passed" : "failed");
        cJSON_AddStringToObject(t, "output", text_str(&out[i].detail));
        cJSON_AddItemToArray(list, t);
    }
    char *json = cJSON_Print(root);
    cJSON_Delete(root);
    OutFile o;
    VitError err;
    bool ok = json && outfile_open(&o, a->json, &err) == VIT_OK;
    if (ok) {
        bool wrote = fputs(json, o.f) >= 0 && fputc('\n', o.f) != EOF;
        ok = outfile_commit(&o, wrote, &err) == VIT_OK;
    }
    if (!ok) vit_print_error(program, &err);
    free(json);
    return ok;
}

// The compiler's messages: the first GRADE_BUILD_LINES lines, escaped, into t (and *whole).
static void add_build_log(Text *t, const char *path, const char *program) {
    char *data;
    size_t size;
    VitError err;
    if (file_read_all(&data, &size, path, 4u << 20, "the compiler's messages", &err) != VIT_OK) {
        vit_print_error(program, &err);
        return;
    }
    int lines = 0;
    char esc[LINE_MAX_SHOWN];
    for (char *line = data, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = '\0';
        if (lines++ < GRADE_BUILD_LINES) text_add(t, "  %s\n", shown(esc, line));
    }
    if (lines > GRADE_BUILD_LINES) {
        text_add(t, "  ... %d more lines in %s\n", lines - GRADE_BUILD_LINES, shown(esc, path));
    }
    free(data);
}

int grade_main(const char *program, int argc, char **argv) {
    GradeArgs a;
    int rc = parse_args(&a, program, argc, argv);
    if (rc) {
        free_args(&a);
        return rc;
    }
    GradeTest *tests;
    int n = grade_select(&tests, a.names, a.n_names, program);
    if (n < 0 || (a.json && !json_destination_ok(&a, program))) {
        free_args(&a);
        free(tests);
        return 2;
    }

    Text head = {0}; // what the whole submission's output starts with
    char esc[LINE_MAX_SHOWN];
    if (a.title) text_add(&head, "%s\n", shown(esc, a.title));
    for (int i = 0; i < a.n_sources; i++) text_add(&head, "graded: %s\n", shown(esc, a.sources[i]));
    if (a.build_log) {
        Text log = {0};
        add_build_log(&log, a.build_log, program);
        if (log.len)
            text_add(&head, "%s\n%s", a.build_failed ? "the code did not compile:"
                                                    : "the compiler's warnings:", text_str(&log));
        free(log.s);
    } else if (a.build_failed) {
        text_add(&head, "the code did not compile\n");
    }
    if (!a.build_failed)
        text_add(&head, "%d test%s, each in a process of its own, at most %.3g s each%s\n", n,
                 n == 1 ? "" : "s", a.timeout,
                 a.reference ? " (more when lib's own code needs more than a fifth of that)" : "");
    fputs(text_str(&head), stdout);
    fflush(stdout);

    install_stop_handlers();
    Outcome *out = vit_calloc((size_t)n, sizeof *out);
    int passed = 0;
    double t0 = vit_now();
    for (int i = 0; i < n; i++) {
        if (a.build_failed) text_add(&out[i].detail, "not run: the code did not compile\n");
        else out[i] = run_one(&tests[i], a.timeout, a.reference, program);
        passed += out[i].passed;
        printf("%s  %s/%s", out[i].passed ? "PASS" : "FAIL", tests[i].suite->pName,
               tests[i].test->pName);
        if (out[i].seconds >= 1.0) printf("  (%.1f s)", out[i].seconds);
        if (out[i].given > 0)
            printf("  (given %.3g s: lib's own code took %.2g s on this test here)", out[i].given,
                   out[i].lib);
        printf("\n");
        if (!out[i].passed && !a.build_failed) // indented under its name
            for (const char *p = text_str(&out[i].detail); *p;) {
                const char *end = strchr(p, '\n');
                size_t len = end ? (size_t)(end - p) : strlen(p);
                printf("      %.*s\n", (int)len, p);
                p += len + (end != NULL);
            }
        fflush(stdout);
    }
    double seconds = vit_now() - t0;
    const Score sc = run_score(&a, tests, out, n);
    char score[96], points[256] = "";
    if (a.baseline)
        snprintf(points, sizeof points, "score: %d of %d (the %d test%s the untouched skeleton "
                 "already passes earn%s nothing; failing one costs a point%s)\n",
                 score_points(&sc), sc.max, sc.kept, sc.kept == 1 ? "" : "s",
                 sc.kept == 1 ? "s" : "", sc.lost ? ": here it cost some" : "");
    snprintf(score, sizeof score, "%d passed, %d failed", passed, n - passed);
    text_add(&head, "%s%s\n", points, score);
    printf("%s%s\n", points, score);
    fflush(stdout);

    bool json_ok = !a.json || write_json(&a, tests, out, n, &sc, seconds, text_str(&head), program);
    for (int i = 0; i < n; i++) free(out[i].detail.s);
    free(out);
    free(head.s);
    free(tests);
    free_args(&a);
    if (!json_ok) return 2;
    return passed == n ? 0 : 1;
}
