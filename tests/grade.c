/**
 * @file grade.c
 * @brief Grade mode: each test of an answer key in a child process, with a
 *        time limit, its report shortened, its hints kept, a score and
 *        Gradescope's results.json.
 *
 * The grader never runs a test: a test server (serve.h), started once per
 * grade (the student's in its box), forks one process per test; the grader
 * reads that process's output and verdict through two pipes while it waits, and
 * kills the server, box and test, when the time is up or when the grader itself
 * is interrupted. The server never runs a test either (and so never starts
 * OpenMP's threads, which a fork would not copy).
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
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fileio.h"
#include "record.h"
#include "base/util.h"
#include "serve.h"
#include "verdict.h"

enum {
    CAPTURE_MAX = 256 * 1024, // bytes of a test's output kept; the rest is read and dropped
    RECORD_MAX = 256 << 20,   // bytes of a test's record read; a longer one is judged cut
    REFERENCE_TIMEOUT = 3600, // seconds lib's own code may take to make its record
    LINE_MAX_SHOWN = 400,     // bytes of one line shown (escaped)
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
    bool near;      // failed, but a near miss (verdict.h): half its points
    double seconds;
    Text detail;  // the failure, as shown and as put in the results file
    double given; // > 0: the time limit was raised to this for lib's sake (run_one())
    double lib;   // lib's own time on the test then
} Outcome;

// The server running the test being run (serve.h), for the signal handler.
static volatile sig_atomic_t running_server;
static const int stop_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
enum { STOP_SIGNALS = sizeof stop_signals / sizeof stop_signals[0] };

// The grader is stopped (Ctrl-C): take the test being run with it, then stop as asked.
static void on_stop(int sig) {
    server_stop_from_signal((pid_t)running_server);
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
        if (name && (strncmp(name, "CU_", 3) == 0 || strcmp(name, "grade_record_main") == 0)) break;
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

// Record mode, in the process that runs the test (`run --record FD SUITE/TEST`,
// or forked by the test server, serve.h): run that one test, NAME, with every
// check written to FD (record.h), then the end mark; exit. Nothing here decides
// a verdict: the grader judges the record in a process of its own.
static void record_test(const char *program, const char *name, int fd) {
    GradeTest *g;
    if (grade_select(&g, &name, 1, program) != 1) exit(2);
    fcntl(fd, F_SETFD, FD_CLOEXEC);   // the programs a test starts (vit) do not get it
    setvbuf(stdout, NULL, _IOLBF, 0); // a report on stderr and a hint on stdout stay in order
    install_crash_handlers();
    record_start(fd);
    CU_run_test(g->suite, g->test);
    fflush(stdout);
    fflush(stderr);
    record_end();
    free(g);
    CU_cleanup_registry();
    exit(0); // exit, not _exit: a sanitizer's leak check runs, and its report is captured
}

int grade_record_main(const char *program, int argc, char **argv) {
    char *end = NULL;
    const long fd = argc == 2 ? strtol(argv[0], &end, 10) : -1;
    if (argc != 2 || !end || *end || fd < 3 || fd > 1023 || fcntl((int)fd, F_GETFD) < 0) {
        fprintf(stderr, "usage: %s --record FD SUITE/TEST (FD: an open descriptor, 3 or more)\n",
                program);
        return 2;
    }
    GradeTest *g;
    const int n = grade_select(&g, (const char *const *)argv + 1, 1, program);
    free(g);
    if (n != 1) {
        if (n > 1) fprintf(stderr, "%s: --record runs one test, SUITE/TEST; not a suite\n", program);
        return 2;
    }
    record_test(program, argv[1], (int)fd);
    return 2; // not reached
}

int grade_serve_main(const char *program, int argc, char **argv) {
    return serve_main(program, argc, argv, record_test);
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
                    const Verdict *v, const char *program, const GradeTest *g) {
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
    // the checks that failed, as the grader judged them
    if (v) {
        unsigned listed = 0;
        for (int k = 0; k < v->listed; k++) {
            if (v->times[k] > 1) text_add(d, "failed %u times: %s\n", v->times[k], shown(esc, v->line[k]));
            else text_add(d, "failed: %s\n", shown(esc, v->line[k]));
            listed += v->times[k];
        }
        if ((unsigned)v->failed > listed)
            text_add(d, "... and %u more failed checks\n", (unsigned)v->failed - listed);
    }
    for (int k = 0; k < n_hints; k++) text_add(d, "hint: %s\n", shown(esc, hints[k]));
    if (more_hints) text_add(d, "... and %d more hints\n", more_hints);
}

/* ------------------------------------------------------------ one test */

// What `--grade` was asked.
typedef struct {
    const char *json, *title, *build_log;
    char **student;           // --student CMD...: runs the student's code (else this runner)
    int n_student;
    bool lib_alone;           // no --student: the code graded is lib's own
    const char *runner_shown; // the runner a student reruns a test with, in messages
    const char *records;      // --records DIR: lib's records of the tests, kept between grades
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
    const char **except; // --except SUITE/TEST: left out of what the names select
    int n_except;
    char *key_text[MAX_INPUTS]; // the KEY files read, owning the names in them
    int n_keys;
    const char **weighed;  // a KEY's `weight N NAME` lines: NAME (a suite or SUITE/TEST) ...
    int *weights;          // ... is worth N points a test; a test no line names is worth 1
    int n_weights;
    bool list;             // --list: print each test's points and what it is, run nothing
} GradeArgs;

/** What one test's process did, before anything is judged of it. */
typedef struct {
    char *output;     ///< its stdout and stderr, at most CAPTURE_MAX bytes (owned)
    size_t dropped;   ///< bytes past that
    char *record;     ///< what it wrote on the record pipe (owned), at most RECORD_MAX bytes
    size_t record_len;
    bool record_cut;  ///< it wrote more than RECORD_MAX: the rest was dropped
    int status;       ///< its wait status
    bool timed_out;   ///< killed at the time limit
    bool lost;        ///< the server that ran it ended before saying how it ended
    double seconds;   ///< wall time
} ChildRun;

static void child_free(ChildRun *c) {
    free(c->output);
    free(c->record);
    memset(c, 0, sizeof *c);
}

// Appends what is readable on fd to a growing *buf (at most max bytes kept,
// *cut when more came); false at end of file.
static bool drain_grow(int fd, char **buf, size_t *len, size_t *cap, size_t max, bool *cut) {
    char chunk[65536];
    for (;;) {
        ssize_t n = read(fd, chunk, sizeof chunk);
        if (n > 0) {
            size_t keep = *len + (size_t)n <= max ? (size_t)n : max - *len;
            *cut = *cut || keep < (size_t)n;
            if (*len + keep > *cap) {
                *cap = (*len + keep) * 2;
                *buf = vit_realloc(*buf, *cap);
            }
            memcpy(*buf + *len, chunk, keep);
            *len += keep;
            continue;
        }
        if (n == 0) return false;
        if (errno == EINTR) continue;
        return errno == EAGAIN || errno == EWOULDBLOCK; // nothing more for now
    }
}

// The servers that start the tests (serve.h): lib's own runner's, and the
// student's (in its box) unless lib is graded alone. Each runs until the grade
// ends, or until a test of it runs out of time.
static TestServer servers[2];

// The server started by CMD..., started when it is first asked for.
static TestServer *server_for(char *const *cmd, int n_cmd) {
    for (int i = 0; i < 2; i++) {
        TestServer *s = &servers[i];
        bool same = s->cmd && s->n_cmd == n_cmd;
        for (int k = 0; same && k < n_cmd; k++) same = strcmp(s->cmd[k], cmd[k]) == 0;
        if (same) return s;
    }
    for (int i = 0; i < 2; i++)
        if (!servers[i].cmd) {
            servers[i] = (TestServer){.cmd = cmd, .n_cmd = n_cmd, .sock = -1, .log = -1};
            return &servers[i];
        }
    return NULL; // two are all a grade starts
}

static void servers_stop(void) {
    for (int i = 0; i < 2; i++) server_stop(&servers[i], false);
}

// Runs test NAME on the server started by CMD..., reading its output and its
// record while it runs, for at most `timeout` seconds; at the limit the server
// is killed with it (the next test starts another). On false, *error says why
// it could not start.
static bool run_child(ChildRun *c, Text *error, char *const *cmd, int n_cmd, const char *name,
                      double timeout) {
    memset(c, 0, sizeof *c);
    TestServer *server = server_for(cmd, n_cmd);
    char why[4096];
    if (!server || !server_up(server, why, sizeof why)) {
        text_add(error, "could not run: could not start %s: %s\n", cmd[0], server ? why : "too many servers");
        return false;
    }
    int out[2], rec[2];
    if (pipe2(out, O_CLOEXEC) != 0) {
        text_add(error, "could not run: pipe: %s\n", strerror(errno));
        return false;
    }
    if (pipe2(rec, O_CLOEXEC) != 0) {
        text_add(error, "could not run: pipe: %s\n", strerror(errno));
        close(out[0]), close(out[1]);
        return false;
    }
    const double t0 = vit_now();
    const bool sent = server_send(server, name, out[1], rec[1]);
    close(out[1]); // the test's process has its own copies now
    close(rec[1]);
    if (!sent) {
        server_stop(server, true);
        text_add(error, "could not run: the server that starts the tests did not take %s\n", name);
        close(out[0]), close(rec[0]);
        return false;
    }
    running_server = server->pid;
    fcntl(out[0], F_SETFL, O_NONBLOCK);
    fcntl(rec[0], F_SETFL, O_NONBLOCK);

    char *output = vit_malloc(CAPTURE_MAX + 1), *record = NULL;
    size_t out_len = 0, dropped = 0, rec_len = 0, rec_cap = 0;
    bool out_open = true, rec_open = true, exited = false, timed_out = false, cut = false,
         lost = false;
    int status = 0;
    double exit_time = 0;
    while (out_open || rec_open || !exited) {
        const int sock = exited ? -1 : server->sock, log = server->log;
        struct pollfd p[4] = {{out_open ? out[0] : -1, POLLIN, 0}, {rec_open ? rec[0] : -1, POLLIN, 0},
                              {sock, POLLIN, 0}, {log, POLLIN, 0}};
        poll(p, 4, 20);
        if (out_open) out_open = drain(out[0], output, &out_len, CAPTURE_MAX, &dropped);
        if (rec_open) rec_open = drain_grow(rec[0], &record, &rec_len, &rec_cap, RECORD_MAX, &cut);
        server_read_log(server);
        double now = vit_now();
        if (!exited) {
            const int got = server_status(server, &status);
            if (got != 0) {
                exited = true, lost = got < 0; // lost: the server ended (it is stopped)
                exit_time = now;
            } else if (now - t0 > timeout) {
                server_stop(server, true); // the test, whatever it started, and the box
                timed_out = exited = true;
                exit_time = now;
            }
        } else if (now - exit_time > 2.0) {
            break; // something outside the test's group holds a pipe open: stop reading
        }
    }
    running_server = 0;
    close(out[0]);
    close(rec[0]);
    output[out_len] = '\0';
    *c = (ChildRun){.output = output, .dropped = dropped, .record = record, .record_len = rec_len,
                    .record_cut = cut, .status = status, .timed_out = timed_out, .lost = lost,
                    .seconds = vit_now() - t0};
    return true;
}

/* ------------------------------------------------------------ the reference */

// lib's own record of a test: what the test checks and what it should find.
typedef struct {
    char *data;
    size_t len;
    double seconds; // lib's time on the test when the record was made
    bool now;       // made in this run (else read from --records)
} Reference;

// The identity of this runner, which a kept reference must have been made by.
typedef struct {
    uint64_t size;
    int64_t sec, nsec;
    double seconds;
    uint32_t name_len;
} ReferenceHead;

static const char reference_magic[] = "vit-reference-record 1\n";

static bool this_runner(ReferenceHead *h) {
    struct stat st;
    memset(h, 0, sizeof *h);
    if (stat("/proc/self/exe", &st) != 0) return false;
    h->size = (uint64_t)st.st_size;
    h->sec = st.st_mtim.tv_sec;
    h->nsec = st.st_mtim.tv_nsec;
    return true;
}

// DIR/HASH.rec for test NAME: one file per test, named by a hash of its name.
static void reference_path(char *buf, size_t size, const char *dir, const char *name) {
    uint64_t h = 1469598103934665603ull; // FNV-1a
    for (const char *p = name; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
    snprintf(buf, size, "%s/%016llx.rec", dir, (unsigned long long)h);
}

// The kept reference of NAME, when this runner made it; false otherwise.
static bool reference_load(Reference *ref, const char *dir, const char *name) {
    char path[4096];
    reference_path(path, sizeof path, dir, name);
    char *data;
    size_t size;
    VitError err;
    ReferenceHead want, got;
    const size_t magic = sizeof reference_magic - 1, head = magic + sizeof got;
    if (!this_runner(&want) ||
        file_read_all(&data, &size, path, RECORD_MAX + 4096, "a reference record", &err) != VIT_OK)
        return false;
    bool ok = size >= head && memcmp(data, reference_magic, magic) == 0;
    if (ok) memcpy(&got, data + magic, sizeof got);
    ok = ok && got.size == want.size && got.sec == want.sec && got.nsec == want.nsec &&
         size - head >= got.name_len && got.name_len == strlen(name) &&
         memcmp(data + head, name, got.name_len) == 0;
    if (!ok) {
        free(data);
        return false;
    }
    const size_t at = head + got.name_len;
    ref->len = size - at;
    ref->data = vit_malloc(ref->len + 1);
    memcpy(ref->data, data + at, ref->len);
    ref->seconds = got.seconds;
    ref->now = false;
    free(data);
    return true;
}

// Keeps the reference of NAME in DIR for the next grade (a temporary file
// renamed: two grades at once each write a whole one). Failing, it is only
// made again next time.
static void reference_keep(const Reference *ref, const char *dir, const char *name) {
    char path[4096], tmp[4200];
    reference_path(path, sizeof path, dir, name);
    snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
    ReferenceHead h;
    if (!this_runner(&h)) return;
    h.seconds = ref->seconds;
    h.name_len = (uint32_t)strlen(name);
    int fd = mkstemp(tmp);
    if (fd < 0) return;
    FILE *f = fdopen(fd, "wb");
    bool ok = f && fwrite(reference_magic, 1, sizeof reference_magic - 1, f) == sizeof reference_magic - 1 &&
              fwrite(&h, sizeof h, 1, f) == 1 && fwrite(name, 1, h.name_len, f) == h.name_len &&
              fwrite(ref->data, 1, ref->len, f) == ref->len;
    ok = f && fclose(f) == 0 && ok;
    if (!f) close(fd);
    if (!ok || rename(tmp, path) != 0) unlink(tmp);
}

// lib's record of test NAME: kept in a->records (unless `now`), else made now
// by this runner, which holds lib alone, and then kept. On false, *error says
// why there is none (lib's own code failed or could not run the test).
static bool reference_get(Reference *ref, Text *error, const GradeArgs *a, const char *name, bool now) {
    memset(ref, 0, sizeof *ref);
    if (!now && a->records && reference_load(ref, a->records, name)) return true;
    ChildRun c;
    char *self[] = {"/proc/self/exe"};
    if (!run_child(&c, error, self, 1, name, REFERENCE_TIMEOUT)) return false;
    Record r;
    char why[256] = "";
    const bool whole = !c.record_cut && WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0 &&
                       record_read(&r, c.record ? c.record : "", c.record_len, why, sizeof why);
    if (c.record) record_free(&r);
    if (!whole) {
        char esc[LINE_MAX_SHOWN];
        text_add(error, "lib's own code could not run this test here (%s); its output:\n",
                 why[0] ? why : "it did not finish");
        for (char *line = c.output, *next; line && *line; line = next) {
            next = strchr(line, '\n');
            if (next) *next++ = '\0';
            text_add(error, "%s\n", shown(esc, line));
        }
        child_free(&c);
        return false;
    }
    *ref = (Reference){.data = c.record, .len = c.record_len, .seconds = c.seconds, .now = true};
    c.record = NULL;
    child_free(&c);
    if (a->records) reference_keep(ref, a->records, name);
    return true;
}

/* ------------------------------------------------------------ the verdict */

// The outcome of the student's run: passed only when its record is whole and
// the verdict (verdict.h) finds nothing wrong; otherwise why, its report, the
// checks that failed and its hints. limit: the time it had; lib: lib's own
// time on the test (for a timeout's message), or -1.
static Outcome judge(ChildRun *c, const Reference *ref, double limit, double lib,
                     const char *runner, const GradeTest *g) {
    Outcome o = {.seconds = c->seconds};
    const int status = c->status;
    Record s, r;
    char damage[256] = "", ignored[8], why[600] = "", sig[256];
    const bool whole = record_read(&s, c->record ? c->record : "", c->record_len, damage, sizeof damage);
    record_read(&r, ref->data, ref->len, ignored, sizeof ignored);
    // the test's own wait status, as the server saw it (serve.h)
    const int signal_no = WIFSIGNALED(status) ? WTERMSIG(status) : 0;
    const int exit_status = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (c->timed_out && lib >= 0) {
        snprintf(why, sizeof why, "timed out after %.3g s (an endless loop? lib's own code took "
                 "%.2g s on this test, here and now)", limit, lib);
    } else if (c->timed_out) {
        snprintf(why, sizeof why, "timed out after %.3g s (an endless loop?)", limit);
    } else if (c->lost) {
        snprintf(why, sizeof why, "stopped before the test finished: the process that started it "
                 "ended too (does the code kill other processes?)");
    } else if (signal_no) {
        signal_words(sig, sizeof sig, signal_no);
        snprintf(why, sizeof why, "crashed: %s", sig);
    } else if (c->record_cut) {
        snprintf(why, sizeof why, "the test's record of its checks passed %d MB: stopped reading it",
                 RECORD_MAX >> 20);
    } else if (!whole && (strstr(c->output, "Sanitizer") || strstr(c->output, ": runtime error: "))) {
        snprintf(why, sizeof why, "stopped by a sanitizer (exit status %d): its report follows",
                 exit_status);
    } else if (s.damaged) {
        snprintf(why, sizeof why, "the test's record of its checks is damaged: %s (does the code "
                 "write to a file descriptor it was not given?)", damage);
    } else if (!whole) {
        snprintf(why, sizeof why,
                 "stopped before the test finished: exit status %d (does the code call exit()?)",
                 exit_status);
    } else if (exit_status != 0) {
        snprintf(why, sizeof why,
                 "the test finished, then the process exited with status %d (a leak or an error "
                 "a sanitizer found?)", exit_status);
    }
    const Verdict v = verdict_judge(&s, &r);
    o.passed = !why[0] && v.passed;
    o.near = !why[0] && v.near_miss;
    if (!o.passed) compose(&o, why[0] ? why : NULL, c->output, c->dropped, whole ? &v : NULL, runner, g);
    record_free(&s);
    record_free(&r);
    child_free(c);
    return o;
}

// lib graded on its own (no --student): the answer is lib's code, the same as
// the reference's, so one run is both (a second would only repeat it: chapter
// 12's test replays the whole chapter), with the reference's time limit; a run
// that passes is kept as the reference of the grades that follow.
static Outcome run_lib_alone(const GradeArgs *a, const GradeTest *g, const char *name) {
    Outcome o = {0};
    ChildRun c;
    if (!run_child(&c, &o.detail, a->student, a->n_student, name, REFERENCE_TIMEOUT)) return o;
    Reference ref = {.len = c.record_len, .seconds = c.seconds, .now = true};
    ref.data = vit_malloc(c.record_len + 1); // judge() frees the run's own
    if (c.record_len) memcpy(ref.data, c.record, c.record_len);
    o = judge(&c, &ref, REFERENCE_TIMEOUT, -1, a->runner_shown, g);
    if (o.passed && a->records) reference_keep(&ref, a->records, name);
    free(ref.data);
    return o;
}

// One test, within its time limit: --timeout (30 s) at least, and more when
// lib's own code needs more. A test still running at the limit is not judged
// yet: lib's own code is timed on the same test, here and now, and if five
// times that is longer than the limit, the test runs again with that long (on
// a busy 2-core machine lib's own ViT-B/16 tests take 14 to 25 s, and a right
// answer written more slowly must not lose its point to the machine). A
// timeout then says how long lib took.
static Outcome run_one(const GradeArgs *a, const GradeTest *g) {
    Outcome o = {0};
    char name[1024];
    snprintf(name, sizeof name, "%s/%s", g->suite->pName, g->test->pName);
    if (a->lib_alone) return run_lib_alone(a, g, name);
    Reference ref;
    if (!reference_get(&ref, &o.detail, a, name, false)) return o;
    ChildRun c;
    if (!run_child(&c, &o.detail, a->student, a->n_student, name, a->timeout)) {
        free(ref.data);
        return o;
    }
    double limit = a->timeout, lib = -1, first = 0;
    if (c.timed_out) {
        if (!ref.now) { // lib's time here and now, not when the reference was kept
            free(ref.data);
            if (!reference_get(&ref, &o.detail, a, name, true)) {
                child_free(&c);
                return o;
            }
        }
        lib = ref.seconds;
        if (5 * lib > limit) {
            first = c.seconds, limit = 5 * lib;
            child_free(&c);
            if (!run_child(&c, &o.detail, a->student, a->n_student, name, limit)) {
                free(ref.data);
                return o;
            }
        }
    }
    o = judge(&c, &ref, limit, lib, a->runner_shown, g);
    free(ref.data);
    o.seconds += first;
    if (first > 0) o.given = limit, o.lib = lib;
    return o;
}

/* ------------------------------------------------------------ the run */


static void usage(FILE *f, const char *program) {
    fprintf(f,
            "usage: %s --grade [--key FILE] [--json FILE] [--timeout SECONDS] [--title TEXT]\n"
            "       [--source FILE]... [--build-log FILE] [--build-failed] [--records DIR]\n"
            "       [--points P] [--visibility V] [--baseline FILE] [--except SUITE/TEST]...\n"
            "       [--list] [SUITE[/TEST]]...\n"
            "       [--student CMD...]\n"
            "Runs each selected test twice, each time in a process of its own: with lib's code\n"
            "(this runner) and with the student's (--student CMD..., the student's runner and\n"
            "whatever boxes it, started once as a server, CMD... --serve 3, that forks each\n"
            "test as CMD... --record 3 SUITE/TEST would run it). Each run writes down its\n"
            "checks; this process, which never runs the student's code, judges the student's\n"
            "against lib's. Time limit %.0f s a test, more when lib's own code takes more than a\n"
            "fifth of it. Prints PASS or FAIL for each, what a failure printed (shortened), the\n"
            "checks that failed and its hints, and last the line 'N passed, M failed'. Without\n"
            "--student, lib's own code is graded: one run is both the record and the answer. Exit\n"
            "status 0 when nothing failed, 1 otherwise, 2 bad usage. A test is worth 1 point, or\n"
            "N when a line 'weight N SUITE[/TEST]' of a KEY names it; --list prints each\n"
            "test's points and name and runs nothing.\n"
            "--records DIR keeps lib's records there for the next grade. --json FILE also\n"
            "writes Gradescope's results.json there, worth --points P (shared by the tests;\n"
            "default 1 a test), with --visibility V (visible, hidden, after_due_date,\n"
            "after_published; default visible).\n",
            program, GRADE_TIMEOUT);
}

// A KEY's line `weight N NAME`: each test of NAME (a suite, or SUITE/TEST) is
// worth N points, 1 to GRADE_WEIGHT_MAX, instead of 1.
static int add_weight(GradeArgs *a, char *line, const char *path, const char *program) {
    char *end;
    const long w = strtol(line + 7, &end, 10);
    if (end == line + 7 || *end != ' ' || w < 1 || w > GRADE_WEIGHT_MAX) {
        char esc[LINE_MAX_SHOWN], e2[LINE_MAX_SHOWN];
        fprintf(stderr, "%s: %s: '%s' is not 'weight N SUITE[/TEST]' with N from 1 to %d\n",
                program, shown(esc, path), shown(e2, line), GRADE_WEIGHT_MAX);
        return 2;
    }
    while (*end == ' ') end++;
    a->weighed = vit_realloc(a->weighed, sizeof *a->weighed * (size_t)(a->n_weights + 1));
    a->weights = vit_realloc(a->weights, sizeof *a->weights * (size_t)(a->n_weights + 1));
    a->weighed[a->n_weights] = end;
    a->weights[a->n_weights++] = (int)w;
    return 0;
}

// The lines of a KEY file become names to grade, and weights.
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
        if (strncmp(line, "weight ", 7) == 0) {
            if (add_weight(a, line, path, program)) return 2;
            continue;
        }
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
    static char *self[] = {"/proc/self/exe"}; // no --student: lib's own code is graded
    a->student = self;
    a->n_student = 1;
    a->lib_alone = true;
    a->runner_shown = program;
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
        } else if (options && strcmp(arg, "--list") == 0) {
            a->list = true;
        } else if (options && strcmp(arg, "--student") == 0) {
            // the rest is the command: it runs `CMD... --record 3 SUITE/TEST` for each test
            if (!has_value) {
                fprintf(stderr, "%s: --student needs a command (the student's runner)\n", program);
                return 2;
            }
            a->student = argv + i + 1;
            a->n_student = argc - i - 1;
            a->lib_alone = false;
            a->runner_shown = argv[argc - 1];
            break;
        } else if (options && arg[0] == '-' && arg[1] == '-') {
            static const char *const with_value[] = {"--key", "--json", "--timeout", "--title",
                                                     "--source", "--build-log", "--records", "--except",
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
            } else if (strcmp(arg, "--records") == 0) {
                a->records = v;
            } else if (strcmp(arg, "--except") == 0) {
                a->except = vit_realloc(a->except, sizeof *a->except * (size_t)(a->n_except + 1));
                a->except[a->n_except++] = v;
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
    free(a->weighed);
    free(a->weights);
    free(a->except);
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
    double earned; ///< points of the tests passed that the untouched skeleton fails (near miss: half)
    double lost;   ///< points of the tests failed that the untouched skeleton passes
    double max;    ///< points of the tests the untouched skeleton fails: all there is to earn
    int kept;      ///< the tests the untouched skeleton passes
} Score;

// What a test earned of its weight w: all of it passed, half for a near miss
// (verdict.h), else nothing.
static double test_points(const Outcome *o, int w) { return o->passed ? w : o->near ? 0.5 * w : 0; }

// With a --baseline, a test the untouched skeleton already passes (its output
// does not depend on the student's code, or only says what zeros say: "softmax
// ignores an added constant" holds for all zeros) earns nothing, and failing
// it costs its points: so the skeleton scores 0, whatever the key holds, and a
// solution that breaks what the skeleton got right pays for it. Without one,
// every test earns its points.
static Score run_score(const GradeArgs *a, const GradeTest *tests, const int *weight,
                       const Outcome *out, int n) {
    Score sc = {0};
    for (int i = 0; i < n; i++) {
        const bool kept = a->baseline && in_baseline(a->baseline, &tests[i]);
        sc.kept += kept;
        sc.max += kept ? 0 : weight[i];
        sc.earned += kept ? 0 : test_points(&out[i], weight[i]);
        sc.lost += kept && !out[i].passed ? weight[i] : 0;
    }
    return sc;
}
static double score_points(const Score *sc) {
    return sc->earned > sc->lost ? sc->earned - sc->lost : 0;
}

static double hundredths(double x) { return (double)(long long)(x * 100 + 0.5) / 100; }

static bool write_json(const GradeArgs *a, const GradeTest *tests, const int *weight,
                       const Outcome *out, int n, const Score *sc, double seconds,
                       const char *summary, const char *program) {
    // --points P: the exercise is worth P, shared by the tests that earn in
    // proportion to their weights (Gradescope's assignment is then set to P);
    // else each test is worth its weight
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
        const double worth = weight[i] * each;
        const double score = kept ? (out[i].passed ? 0 : -worth) : test_points(&out[i], weight[i]) * each;
        cJSON_AddNumberToObject(t, "score", hundredths(score));
        cJSON_AddNumberToObject(t, "max_score", kept ? 0 : hundredths(worth));
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

// Each selected test's points: the last `weight` line of the KEYs that names
// it, else 1. A weight line that names no selected test is a slip in the KEY.
static int *test_weights(const GradeArgs *a, const GradeTest *tests, int n, const char *program) {
    int *w = vit_calloc((size_t)(n > 0 ? n : 1), sizeof *w);
    for (int i = 0; i < n; i++) w[i] = 1;
    for (int k = 0; k < a->n_weights; k++) {
        int matched = 0;
        for (int i = 0; i < n; i++)
            if (names_test(a->weighed[k], tests[i].suite, tests[i].test)) w[i] = a->weights[k], matched++;
        if (matched == 0) {
            char esc[LINE_MAX_SHOWN];
            fprintf(stderr, "%s: 'weight %d %s' names no test the key grades\n", program,
                    a->weights[k], shown(esc, a->weighed[k]));
            free(w);
            return NULL;
        }
    }
    return w;
}

// --list: each test's points and name, a tab between, as an exercise's README
// shows them; a test the untouched skeleton passes (--baseline) earns nothing.
static void list_points(const GradeArgs *a, const GradeTest *tests, const int *weight, int n) {
    int total = 0;
    for (int i = 0; i < n; i++) {
        if (a->baseline && in_baseline(a->baseline, &tests[i]))
            printf("0 (the skeleton passes it: failing it costs %d)", weight[i]);
        else
            printf("%d", weight[i]), total += weight[i];
        printf("\t%s/%s\n", tests[i].suite->pName, tests[i].test->pName);
    }
    printf("%d\tin all\n", total);
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
    int *weight = n < 0 ? NULL : test_weights(&a, tests, n, program);
    for (int i = 0; weight && i < n; i++) { // --except: named tests left out (a quicker first grade)
        char name[1024];
        snprintf(name, sizeof name, "%s/%s", tests[i].suite->pName, tests[i].test->pName);
        bool out = false;
        for (int k = 0; k < a.n_except && !out; k++) out = strcmp(a.except[k], name) == 0;
        if (!out) continue;
        memmove(&tests[i], &tests[i + 1], sizeof *tests * (size_t)(n - i - 1));
        memmove(&weight[i], &weight[i + 1], sizeof *weight * (size_t)(n - i - 1));
        n--, i--;
    }
    if (!weight || (a.json && !a.list && !json_destination_ok(&a, program))) {
        free_args(&a);
        free(tests);
        free(weight);
        return 2;
    }
    if (a.list) {
        list_points(&a, tests, weight, n);
        free_args(&a);
        free(tests);
        free(weight);
        return 0;
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
                 " (more when lib's own code needs more than a fifth of that)");
    fputs(text_str(&head), stdout);
    fflush(stdout);

    if (a.records && mkdir(a.records, 0755) != 0 && errno != EEXIST) {
        char e2[LINE_MAX_SHOWN];
        fprintf(stderr, "%s: --records %s: %s (lib's records are not kept)\n", program,
                shown(e2, a.records), strerror(errno));
        a.records = NULL;
    }
    install_stop_handlers();
    Outcome *out = vit_calloc((size_t)n, sizeof *out);
    int passed = 0;
    double t0 = vit_now();
    for (int i = 0; i < n; i++) {
        if (a.build_failed) text_add(&out[i].detail, "not run: the code did not compile\n");
        else out[i] = run_one(&a, &tests[i]);
        passed += out[i].passed;
        printf("%s  %s/%s", out[i].passed ? "PASS" : "FAIL", tests[i].suite->pName,
               tests[i].test->pName);
        if (weight[i] != 1) printf("  (%d points)", weight[i]);
        if (out[i].seconds >= 1.0) printf("  (%.1f s)", out[i].seconds);
        if (out[i].near) printf("  (a near miss: half its points)");
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
    servers_stop(); // and their boxes, with whatever a test left running in them
    double seconds = vit_now() - t0;
    const Score sc = run_score(&a, tests, weight, out, n);
    char score[96], points[256] = "";
    if (a.baseline && sc.kept == 0)
        snprintf(points, sizeof points, "score: %g of %g (the untouched skeleton passes none of "
                 "these tests)\n", score_points(&sc), sc.max);
    else if (a.baseline)
        snprintf(points, sizeof points, "score: %g of %g (the %d test%s the untouched skeleton "
                 "already passes earn%s nothing; failing one costs its points%s)\n",
                 score_points(&sc), sc.max, sc.kept, sc.kept == 1 ? "" : "s",
                 sc.kept == 1 ? "s" : "", sc.lost ? ": here it cost some" : "");
    else if (a.n_weights)
        snprintf(points, sizeof points, "score: %g of %g\n", score_points(&sc), sc.max);
    snprintf(score, sizeof score, "%d passed, %d failed", passed, n - passed);
    text_add(&head, "%s%s\n", points, score);
    printf("%s%s\n", points, score);
    fflush(stdout);

    bool json_ok = !a.json || write_json(&a, tests, weight, out, n, &sc, seconds, text_str(&head), program);
    for (int i = 0; i < n; i++) free(out[i].detail.s);
    free(out);
    free(weight);
    free(head.s);
    free(tests);
    free_args(&a);
    if (!json_ok) return 2;
    return passed == n ? 0 : 1;
}
