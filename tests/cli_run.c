/**
 * @file cli_run.c
 * @brief Running the real `vit` program from a test, with a timeout; scratch directories.
 */
#include "cli_run.h"

#include <CUnit/CUnit.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/util.h"

extern char **environ;

static const char *temp_root(void) {
    const char *dir = getenv("TMPDIR");
    return dir && *dir ? dir : "/tmp";
}

// BUILD/NAME for the runner BUILD/tests/run (static storage).
static const char *sibling_program(char *path, size_t size, const char *name) {
    char self[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) {
        snprintf(path, size, "build/%s", name);
        return path;
    }
    self[n] = '\0';
    char *slash = strrchr(self, '/'); // BUILD/tests/run → BUILD/tests
    if (slash) *slash = '\0';
    snprintf(path, size, "%s/../%s", self, name);
    return path;
}

const char *cli_program(void) {
    static char path[PATH_MAX + 16];
    return sibling_program(path, sizeof path, "vit");
}

const char *cli_viewer_program(void) {
    static char path[PATH_MAX + 16];
    return sibling_program(path, sizeof path, "vitview");
}

bool mentions(const VitError *err, const char *a, const char *b) {
    bool ok = strstr(err->msg, a) && (!b || strstr(err->msg, b));
    if (!ok) fprintf(stderr, "\n    message '%s' does not mention '%s'%s%s\n", err->msg, a,
                     b ? " and " : "", b ? b : "");
    return ok;
}

void write_text(const char *path, const char *text) {
    FILE *f = fopen(path, "w");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    fputs(text, f);
    fclose(f);
}

bool has_text(const char *path, const char *text) {
    char *got = read_whole_file(path, NULL);
    bool same = got && strcmp(got, text) == 0;
    free(got);
    return same;
}

char *read_whole_file(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 4096, len = 0;
    char *buf = vit_malloc(cap);
    size_t got;
    while ((got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (cap - len - 1 == 0) buf = vit_realloc(buf, cap *= 2);
    }
    fclose(f);
    buf[len] = '\0';
    if (size) *size = len;
    return buf;
}

bool same_bytes(const char *a, const char *b) {
    size_t na = 0, nb = 0;
    char *x = read_whole_file(a, &na), *y = read_whole_file(b, &nb);
    bool same = x && y && na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return same;
}

void copy_file(const char *from, const char *to) {
    size_t n;
    char *bytes = read_whole_file(from, &n);
    CU_ASSERT_PTR_NOT_NULL_FATAL(bytes);
    FILE *f = fopen(to, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    CU_ASSERT_EQUAL(fwrite(bytes, 1, n, f), n);
    fclose(f);
    free(bytes);
}

void expect_failure(CliResult r, int status, const char *program, const char *const *needles) {
    size_t len = strlen(r.err), plen = strlen(program);
    bool one_line = len > 0 && strchr(r.err, '\n') == r.err + len - 1;
    bool found = strncmp(r.err, program, plen) == 0 && r.err[plen] == ':';
    for (const char *const *n = needles; *n; n++) found = found && strstr(r.err, *n);
    if (r.status != status || !one_line || !found || r.out[0])
        fprintf(stderr, "\n    expected exit %d mentioning '%s'; got exit %d: %s%s", status,
                needles[0], r.status, r.err, r.out);
    CU_ASSERT_EQUAL(r.status, status);
    CU_ASSERT_TRUE(one_line);
    CU_ASSERT_TRUE(found);
    CU_ASSERT_STRING_EQUAL(r.out, "");
    cli_result_free(&r);
}

// A temporary file to catch one output stream; its descriptor, and its name in `path`.
static int capture_file(char *path, size_t size, const char *stream) {
    snprintf(path, size, "%s/vit-cli-%s-XXXXXX", temp_root(), stream);
    return mkstemp(path);
}

// Waits for the child up to `seconds`; kills it after that. Returns its exit status
// (128 + signal when killed), or -1 on timeout.
static int wait_with_timeout(pid_t pid, double seconds) {
    const struct timespec tick = {0, 2 * 1000 * 1000}; // 2 ms
    double t0 = vit_now();
    for (;;) {
        int st;
        pid_t r = waitpid(pid, &st, WNOHANG);
        if (r == pid) return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        if (r < 0 && errno != EINTR) return -1;
        if (vit_now() - t0 > seconds) {
            kill(pid, SIGKILL);
            waitpid(pid, &st, 0);
            fprintf(stderr, "\n    vit: killed after %.0f s\n", seconds);
            return -1;
        }
        nanosleep(&tick, NULL);
    }
}

bool cli_start(CliChild *c, const char *program, const char *const *args) {
    memset(c, 0, sizeof *c);
    c->pid = -1;
    int argc = 0;
    while (args[argc]) argc++;
    char **argv = vit_calloc((size_t)argc + 2, sizeof(char *));
    argv[0] = (char *)program;
    for (int i = 0; i < argc; i++) argv[i + 1] = (char *)args[i];
    c->out_fd = capture_file(c->out_path, sizeof c->out_path, "out");
    c->err_fd = capture_file(c->err_path, sizeof c->err_path, "err");
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&actions, c->out_fd, 1);
    posix_spawn_file_actions_adddup2(&actions, c->err_fd, 2);
    // the program starts with the default action for the signals tests send,
    // whatever the runner inherited (a shell's background job ignores SIGINT)
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    sigset_t defaults, none;
    sigemptyset(&defaults);
    sigemptyset(&none);
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) sigaddset(&defaults, sigs[i]);
    posix_spawnattr_setsigdefault(&attr, &defaults);
    posix_spawnattr_setsigmask(&attr, &none);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
    int rc = c->out_fd < 0 || c->err_fd < 0
                 ? EIO
                 : posix_spawn(&c->pid, program, &actions, &attr, argv, environ);
    posix_spawnattr_destroy(&attr);
    posix_spawn_file_actions_destroy(&actions);
    free(argv);
    if (rc != 0) {
        fprintf(stderr, "\n    cannot run %s: %s (was it built? make builds it)\n", program,
                strerror(rc));
        c->pid = -1;
    }
    return rc == 0;
}

CliResult cli_finish(CliChild *c) {
    CliResult r = {.status = -1};
    if (c->pid > 0) r.status = wait_with_timeout(c->pid, CLI_TIMEOUT);
    if (c->out_fd >= 0) close(c->out_fd);
    if (c->err_fd >= 0) close(c->err_fd);
    r.out = c->out_path[0] ? read_whole_file(c->out_path, NULL) : NULL;
    r.err = c->err_path[0] ? read_whole_file(c->err_path, NULL) : NULL;
    if (!r.out) r.out = vit_strdup("");
    if (!r.err) r.err = vit_strdup("");
    if (c->out_path[0]) unlink(c->out_path);
    if (c->err_path[0]) unlink(c->err_path);
    memset(c, 0, sizeof *c);
    return r;
}

CliResult cli_run_program(const char *program, const char *const *args) {
    CliChild c;
    cli_start(&c, program, args);
    return cli_finish(&c);
}

CliResult cli_run(const char *const *args) { return cli_run_program(cli_program(), args); }

void cli_result_free(CliResult *r) {
    free(r->out);
    free(r->err);
    memset(r, 0, sizeof *r);
}

/* ------------------------------------------------------------ scratch dirs */

bool scratch_make(ScratchDir *d) {
    snprintf(d->path, sizeof d->path, "%s/vit-cli-test-XXXXXX", temp_root());
    if (mkdtemp(d->path)) return true;
    fprintf(stderr, "\n    cannot make a directory %s: %s\n", d->path, strerror(errno));
    d->path[0] = '\0';
    return false;
}

char *scratch_file(const ScratchDir *d, const char *name, char *buf, size_t size) {
    snprintf(buf, size, "%s/%s", d->path, name);
    return buf;
}

int scratch_count(const ScratchDir *d) {
    DIR *dir = opendir(d->path);
    if (!dir) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(dir));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(dir);
    return n;
}

// Removes a directory tree (the tests make at most one level of subdirectories).
static void remove_tree(const char *path) {
    DIR *dir = opendir(path);
    if (dir) {
        for (struct dirent *e; (e = readdir(dir));) {
            if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
            char child[1024];
            snprintf(child, sizeof child, "%s/%s", path, e->d_name);
            struct stat sb;
            if (lstat(child, &sb) == 0 && S_ISDIR(sb.st_mode)) remove_tree(child);
            else unlink(child);
        }
        closedir(dir);
    }
    rmdir(path);
}

void scratch_remove(ScratchDir *d) {
    if (d->path[0]) remove_tree(d->path);
    d->path[0] = '\0';
}
