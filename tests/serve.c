/**
 * @file serve.c
 * @brief The test server (serve.h): the grader starts it once per grade, in
 *        the box, and it forks one process per test.
 */
#include "serve.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum {
    NAME_MAX_BYTES = 1024, // a test's "SUITE/TEST"
    START_SECONDS = 120,   // a box and a runner (a sanitizer's) starting on a busy machine
    STOP_SECONDS = 5,      // a server asked to end, before it is killed
};

static const char ready_word[] = "ready";

/* ------------------------------------------------- the socket's messages */

// Sends BYTES with descriptors FDS attached (SCM_RIGHTS: the receiver gets its own copies).
static bool send_fds(int sock, const void *bytes, size_t len, const int *fds, int n_fds) {
    struct iovec iov = {(void *)bytes, len};
    union {
        char buf[CMSG_SPACE(2 * sizeof(int))];
        struct cmsghdr align;
    } control;
    memset(&control, 0, sizeof control);
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1};
    if (n_fds > 0) {
        m.msg_control = control.buf;
        m.msg_controllen = CMSG_SPACE((size_t)n_fds * sizeof(int));
        struct cmsghdr *c = CMSG_FIRSTHDR(&m);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN((size_t)n_fds * sizeof(int));
        memcpy(CMSG_DATA(c), fds, (size_t)n_fds * sizeof(int));
    }
    ssize_t n;
    do n = sendmsg(sock, &m, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n == (ssize_t)len;
}

// Receives one message (at most size bytes) and the two descriptors it must
// carry: its length, 0 when the socket closed, -1 for a message without them.
static ssize_t receive_fds(int sock, char *bytes, size_t size, int fds[2]) {
    struct iovec iov = {bytes, size};
    union {
        char buf[CMSG_SPACE(2 * sizeof(int))];
        struct cmsghdr align;
    } control;
    struct msghdr m = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control.buf,
                       .msg_controllen = sizeof control.buf};
    ssize_t n;
    do n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    if (n <= 0) return n < 0 ? -1 : 0;
    int got = 0;
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
        if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
            const int k = (int)((c->cmsg_len - CMSG_LEN(0)) / sizeof(int));
            for (int i = 0; i < k; i++) {
                int fd;
                memcpy(&fd, CMSG_DATA(c) + (size_t)i * sizeof(int), sizeof fd);
                if (got < 2) fds[got] = fd;
                else close(fd);
                got++;
            }
        }
    if (got == 2 && !(m.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) return n;
    for (int i = 0; i < got && i < 2; i++) close(fds[i]);
    return -1;
}

/* ---------------------------------------------------- the server's side */

// The test being run, for the handler that ends the server.
static volatile sig_atomic_t running_test;

// Stopped by the grader (SIGTERM): the test goes first, whatever it started in its group.
static void on_term(int sig) {
    (void)sig;
    const pid_t test = (pid_t)running_test;
    if (test > 0) kill(-test, SIGKILL);
    _exit(143);
}

// In the forked process: the descriptors a test gets (stdin /dev/null, stdout
// and stderr OUT, 3 RECORD, nothing else of the server's), a group of its own,
// and an end with the server's; then the test.
static void start_test(const char *program, const char *name, int out, int record, pid_t server,
                       void (*run_test)(const char *, const char *, int)) {
    signal(SIGTERM, SIG_DFL);
    signal(SIGPIPE, SIG_DFL);
    setpgid(0, 0);
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    if (getppid() != server) _exit(127); // the server ended before the line above
    const int o = fcntl(out, F_DUPFD_CLOEXEC, 10), r = fcntl(record, F_DUPFD_CLOEXEC, 10);
    const int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (o < 0 || r < 0 || null < 0 || dup2(null, 0) < 0 || dup2(o, 1) < 0 || dup2(o, 2) < 0 ||
        dup2(r, 3) < 0)
        _exit(127);
    close_range(4, ~0u, 0);
    run_test(program, name, 3);
    _exit(127); // run_test() does not return
}

// Waits for test PID to end; its whole group is killed first (what it left running).
static int test_ended(pid_t pid) {
    siginfo_t info;
    int status = 0;
    // WNOWAIT: it stays a zombie, so its group id cannot be reused before the kill
    while (waitid(P_PID, (id_t)pid, &info, WEXITED | WNOWAIT) != 0 && errno == EINTR) {
    }
    kill(-pid, SIGKILL);
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    running_test = 0;
    return status;
}

int serve_main(const char *program, int argc, char **argv,
               void (*run_test)(const char *program, const char *name, int record_fd)) {
    char *end = NULL;
    const long fd = argc == 1 ? strtol(argv[0], &end, 10) : -1;
    int type = 0;
    socklen_t type_len = sizeof type;
    if (argc != 1 || !end || *end || fd < 3 || fd > 1023 ||
        getsockopt((int)fd, SOL_SOCKET, SO_TYPE, &type, &type_len) != 0 || type != SOCK_SEQPACKET) {
        fprintf(stderr, "usage: %s --serve FD (FD: the grader's socket, 3 or more)\n", program);
        return 2;
    }
    const int sock = (int)fd;
    fcntl(sock, F_SETFD, FD_CLOEXEC);
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_term;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    fflush(stdout);
    fflush(stderr);
    if (!send_fds(sock, ready_word, sizeof ready_word - 1, NULL, 0)) exit(1);
    const pid_t self = getpid();
    for (;;) {
        char name[NAME_MAX_BYTES + 1];
        int fds[2];
        const ssize_t n = receive_fds(sock, name, NAME_MAX_BYTES, fds);
        if (n == 0) break; // the grader is done
        if (n < 0) exit(1);
        name[n] = '\0';
        const pid_t pid = fork();
        if (pid == 0) {
            close(sock);
            start_test(program, name, fds[0], fds[1], self, run_test);
        }
        close(fds[0]);
        close(fds[1]);
        int status = 127 << 8; // as a test that could not start
        if (pid > 0) {
            setpgid(pid, pid); // also done by the test: whichever runs first
            running_test = pid;
            status = test_ended(pid);
        }
        const int32_t word = status;
        if (!send_fds(sock, &word, sizeof word, NULL, 0)) exit(1);
    }
    exit(0); // exit, not _exit: under a sanitizer, its end-of-run checks
}

/* ---------------------------------------------------- the grader's side */

static double seconds_now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void server_read_log(TestServer *s) {
    if (s->log < 0) return;
    char chunk[4096];
    for (;;) {
        const ssize_t n = read(s->log, chunk, sizeof chunk);
        if (n > 0) {
            const size_t room = sizeof s->said - 1 - s->said_len;
            const size_t keep = (size_t)n < room ? (size_t)n : room;
            memcpy(s->said + s->said_len, chunk, keep);
            s->said_len += keep;
            s->said[s->said_len] = '\0';
            continue;
        }
        if (n < 0 && errno == EINTR) continue;
        if (n == 0) { // it closed its output (or ended)
            close(s->log);
            s->log = -1;
        }
        return;
    }
}

// In the forked child: the server's descriptors (the socket as 3, its own
// output to the log pipe, nothing else of the grader's), then CMD... --serve 3.
static void exec_server(const TestServer *s, int sock, int log) {
    for (int sig = 1; sig < NSIG; sig++)
        if (sig != SIGKILL && sig != SIGSTOP) signal(sig, SIG_DFL);
    setpgid(0, 0);
    const int k = fcntl(sock, F_DUPFD_CLOEXEC, 10), l = fcntl(log, F_DUPFD_CLOEXEC, 10);
    const int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (k < 0 || l < 0 || null < 0 || dup2(null, 0) < 0 || dup2(l, 1) < 0 || dup2(l, 2) < 0 ||
        dup2(k, 3) < 0)
        _exit(127);
    close_range(4, ~0u, 0);
    char **argv = calloc((size_t)s->n_cmd + 3, sizeof *argv);
    if (!argv) _exit(127);
    for (int i = 0; i < s->n_cmd; i++) argv[i] = s->cmd[i];
    argv[s->n_cmd] = "--serve";
    argv[s->n_cmd + 1] = "3";
    execvp(argv[0], argv);
    fprintf(stderr, "could not start %s: %s\n", argv[0], strerror(errno));
    _exit(127);
}

// Waits for the server's process to end, for at most `seconds`; kills its
// group first when it has ended (a box's helpers), or when the time is up.
static void reap(TestServer *s, double seconds) {
    const double t0 = seconds_now();
    siginfo_t info;
    for (;;) {
        memset(&info, 0, sizeof info);
        const int got = waitid(P_PID, (id_t)s->pid, &info, WEXITED | WNOHANG | WNOWAIT);
        if ((got == 0 && info.si_pid == s->pid) || (got < 0 && errno == ECHILD)) break;
        if (seconds_now() - t0 > seconds) break;
        server_read_log(s);
        struct timespec nap = {0, 5 * 1000 * 1000};
        nanosleep(&nap, NULL);
    }
    kill(-s->pid, SIGKILL);
    while (waitpid(s->pid, NULL, 0) < 0 && errno == EINTR) {
    }
}

void server_stop(TestServer *s, bool now) {
    if (s->pid <= 0) return;
    if (now) kill(s->pid, SIGTERM); // a box ends with its whole namespace; a server, with its test
    close(s->sock);
    reap(s, now ? 1.0 : STOP_SECONDS);
    server_read_log(s);
    if (s->log >= 0) close(s->log);
    s->pid = 0;
    s->sock = s->log = -1;
}

void server_stop_from_signal(pid_t server) {
    if (server > 0) kill(server, SIGTERM);
}

bool server_up(TestServer *s, char *why, size_t why_size) {
    if (s->pid > 0) return true;
    s->said_len = 0;
    s->said[0] = '\0';
    int pair[2], log[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) {
        snprintf(why, why_size, "socketpair: %s", strerror(errno));
        return false;
    }
    if (pipe2(log, O_CLOEXEC) != 0) {
        snprintf(why, why_size, "pipe: %s", strerror(errno));
        close(pair[0]), close(pair[1]);
        return false;
    }
    fflush(stdout);
    fflush(stderr);
    const pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, why_size, "fork: %s", strerror(errno));
        close(pair[0]), close(pair[1]), close(log[0]), close(log[1]);
        return false;
    }
    if (pid == 0) exec_server(s, pair[1], log[1]);
    setpgid(pid, pid); // also done by the child: whichever runs first
    close(pair[1]);
    close(log[1]);
    fcntl(log[0], F_SETFL, O_NONBLOCK);
    s->pid = pid;
    s->sock = pair[0];
    s->log = log[0];
    // its first word says it is ready; until then, what it says is kept
    const double t0 = seconds_now();
    char word[sizeof ready_word];
    ssize_t n = -1;
    while (seconds_now() - t0 < START_SECONDS) {
        struct pollfd p[2] = {{s->sock, POLLIN, 0}, {s->log, POLLIN, 0}};
        poll(p, s->log >= 0 ? 2 : 1, 100);
        server_read_log(s);
        n = recv(s->sock, word, sizeof word, MSG_DONTWAIT);
        if (n >= 0 || (errno != EAGAIN && errno != EINTR)) break;
    }
    if (n == (ssize_t)sizeof ready_word - 1 && memcmp(word, ready_word, (size_t)n) == 0) return true;
    server_stop(s, true);
    snprintf(why, why_size, "%s%s%s", n < 0 ? "it did not say it was ready" : "it ended as it started",
             s->said_len ? "; it said:\n" : "", s->said);
    return false;
}

bool server_send(TestServer *s, const char *name, int out_fd, int record_fd) {
    const size_t len = strlen(name);
    const int fds[2] = {out_fd, record_fd};
    return s->pid > 0 && len > 0 && len <= NAME_MAX_BYTES && send_fds(s->sock, name, len, fds, 2);
}

int server_status(TestServer *s, int *status) {
    if (s->pid <= 0) return -1;
    int32_t word;
    const ssize_t n = recv(s->sock, &word, sizeof word, MSG_DONTWAIT);
    if (n == (ssize_t)sizeof word) {
        *status = word;
        return 1;
    }
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return 0;
    server_stop(s, true); // it ended, or said something else than a status
    return -1;
}
