/**
 * @file fileio.c
 * @brief Reading regular files only, mapping with a SIGBUS guard, atomic writing
 *        that follows links, keeps modes and cleans up on signals (see fileio.h).
 */
#include "base/fileio.h"

#include <cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------------- reading */

const char *file_kind(mode_t mode) {
    if (S_ISREG(mode)) return "a regular file";
    if (S_ISDIR(mode)) return "a directory";
    if (S_ISFIFO(mode)) return "a FIFO (named pipe)";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISLNK(mode)) return "a symbolic link";
    return "not a regular file";
}

VitStatus file_open_regular(int *fd, size_t *size, const char *path, const char *what,
                            VitError *err) {
    *fd = -1;
    // O_NONBLOCK: opening a FIFO must not wait for a writer before we can look at it
    int d = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (d < 0) return vit_fail(err, VIT_ERR_INPUT, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(d, &sb) != 0) {
        VitStatus s = vit_fail(err, VIT_ERR_INPUT, "%s: cannot stat: %s", path, strerror(errno));
        close(d);
        return s;
    }
    if (!S_ISREG(sb.st_mode)) {
        close(d);
        return vit_fail(err, VIT_ERR_INPUT, "%s: is %s, not %s", path, file_kind(sb.st_mode),
                        what);
    }
    fcntl(d, F_SETFL, fcntl(d, F_GETFL) & ~O_NONBLOCK);
    *fd = d;
    *size = (size_t)sb.st_size;
    return VIT_OK;
}

VitStatus file_read_all(char **data, size_t *size, const char *path, size_t max_bytes,
                        const char *what, VitError *err) {
    *data = NULL;
    *size = 0;
    int fd;
    size_t n;
    VitStatus s = file_open_regular(&fd, &n, path, what, err);
    if (s != VIT_OK) return s;
    if (n > max_bytes) {
        char have[VIT_NUM_BUF], most[VIT_NUM_BUF];
        close(fd);
        return vit_fail(err, VIT_ERR_INPUT, "%s: %s is larger than the %s %s may have", path,
                        vit_bytes(have, (double)n), vit_bytes(most, (double)max_bytes), what);
    }
    char *buf = vit_malloc(n + 1);
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            s = r < 0 ? vit_fail(err, VIT_ERR_INPUT, "%s: read failed: %s", path, strerror(errno))
                      : vit_fail(err, VIT_ERR_INPUT, "%s: the file shrank while it was read", path);
            break;
        }
        got += (size_t)r;
    }
    close(fd);
    if (s != VIT_OK) {
        free(buf);
        return s;
    }
    buf[n] = '\0';
    *data = buf;
    *size = n;
    return VIT_OK;
}

VitStatus file_read_json(cJSON **root, const char *path, VitError *err) {
    *root = NULL;
    char *text;
    size_t size;
    VitStatus s = file_read_all(&text, &size, path, FILE_MAX_JSON, "a JSON file", err);
    if (s != VIT_OK) return s;
    const char *end = NULL;
    *root = cJSON_ParseWithLengthOpts(text, size, &end, false);
    if (!*root) {
        size_t at = end && end >= text && end <= text + size ? (size_t)(end - text) : 0;
        s = vit_fail(err, VIT_ERR_INPUT, "%s: not valid JSON (the parser stopped at byte offset %zu)", path, at);
    }
    free(text);
    return s;
}

/* ---------------------------------------------------------------- mapping */

/*
 * The guard's list of mapped files. Slots are claimed and released by the
 * thread that loads models (one at a time); the handler only reads them.
 */
enum { MAX_MAPPED = 16, LABEL_SIZE = 512 };
static struct {
    _Atomic(const char *) begin; // NULL: a free slot
    size_t size;
    char label[LABEL_SIZE];      // the path, escaped for the terminal
} mapped[MAX_MAPPED];
static const char *guard_program = "vit";
static void (*guard_before_exit)(void);

static void say(const char *s) {
    size_t len = strlen(s);
    while (len > 0) {
        ssize_t w = write(STDERR_FILENO, s, len);
        if (w <= 0) return;
        s += w, len -= (size_t)w;
    }
}

// Set by the first thread that reports: threads reading the same truncated map
// fault together, and their messages would interleave.
static atomic_flag reporting = ATOMIC_FLAG_INIT;

static void on_sigbus(int sig, siginfo_t *info, void *context) {
    (void)context;
    const char *addr = info ? (const char *)info->si_addr : NULL;
    for (int i = 0; i < MAX_MAPPED; i++) {
        const char *begin = atomic_load(&mapped[i].begin);
        if (!begin || addr < begin || addr >= begin + mapped[i].size) continue;
        if (atomic_flag_test_and_set(&reporting))
            for (;;) pause(); // another thread is saying it, then ends the process
        if (guard_before_exit) guard_before_exit();
        say(guard_program), say(": "), say(mapped[i].label);
        say(": the file was truncated or replaced while it was in use (it is read through a "
            "memory map); run again once nothing else is writing it\n");
        _exit(VIT_ERR_INPUT);
    }
    signal(sig, SIG_DFL); // not one of our files: a real bug, die as usual
    raise(sig);
}

void file_guard_mapped(const char *program, void (*before_exit)(void)) {
    guard_program = program;
    guard_before_exit = before_exit;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
}

VitStatus file_map(const void **map, size_t *size, const char *path, const char *what,
                   VitError *err) {
    *map = NULL;
    *size = 0;
    int fd;
    size_t n;
    VitStatus s = file_open_regular(&fd, &n, path, what, err);
    if (s != VIT_OK) return s;
    if (n == 0) {
        close(fd);
        return vit_fail(err, VIT_ERR_INPUT, "%s: file is empty", path);
    }
    void *m = mmap(NULL, n, PROT_READ, MAP_PRIVATE, fd, 0);
    int saved = errno;
    close(fd); // the mapping keeps the file alive
    if (m == MAP_FAILED)
        return vit_fail(err, VIT_ERR_INPUT, "%s: cannot map: %s", path, strerror(saved));
    for (int i = 0; i < MAX_MAPPED; i++) // no free slot: mapped, but unguarded
        if (!atomic_load(&mapped[i].begin)) {
            mapped[i].size = n;
            vit_escape(mapped[i].label, sizeof mapped[i].label, path);
            atomic_store(&mapped[i].begin, (const char *)m);
            break;
        }
    *map = m;
    *size = n;
    return VIT_OK;
}

void file_map_release(const void *p, size_t n) {
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE), at = (uintptr_t)p;
    const uintptr_t begin = (at + page - 1) / page * page, end = (at + n) / page * page;
    if (end > begin) madvise((void *)begin, end - begin, MADV_DONTNEED);
}

void file_unmap(const void *map, size_t size) {
    if (!map) return;
    for (int i = 0; i < MAX_MAPPED; i++)
        if (atomic_load(&mapped[i].begin) == map) atomic_store(&mapped[i].begin, NULL);
    munmap((void *)map, size);
}

/* ---------------------------------------------------------------- writing */

/*
 * Temporary files being written, for the signal handler to remove. A slot
 * holds the path; the handlers are installed while any slot is in use and
 * the signal dispositions from before are put back when the last one goes.
 */
enum { MAX_OUTPUTS = 8 };
static _Atomic(const char *) live[MAX_OUTPUTS];
static int live_count;
static const int cleanup_signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
enum { CLEANUP_SIGNALS = sizeof cleanup_signals / sizeof cleanup_signals[0] };
static struct sigaction saved_actions[CLEANUP_SIGNALS], saved_xfsz;

static atomic_bool finish_on_stop; // file_writes_finish_on_stop()

static void remove_live_files(int sig, siginfo_t *info, void *context) {
    int k = 0;
    while (k < CLEANUP_SIGNALS - 1 && cleanup_signals[k] != sig) k++;
    const struct sigaction *before = &saved_actions[k];
    // The program stops in good order on SIGINT and SIGTERM itself (vit train:
    // after the step, with a checkpoint), and said so: the file being written
    // is finished too. Its own handler runs; nothing is removed.
    const bool own_handler = (before->sa_flags & SA_SIGINFO) ||
                             (before->sa_handler != SIG_DFL && before->sa_handler != SIG_IGN);
    if ((sig == SIGINT || sig == SIGTERM) && own_handler && atomic_load(&finish_on_stop)) {
        if (before->sa_flags & SA_SIGINFO) before->sa_sigaction(sig, info, context);
        else before->sa_handler(sig);
        return;
    }
    for (int i = 0; i < MAX_OUTPUTS; i++) {
        const char *p = atomic_load(&live[i]);
        if (p) unlink(p);
    }
    // put back what was there before us and deliver the signal again: with the
    // default action the program ends as it would have, killed by that signal
    sigaction(sig, before, NULL);
    raise(sig);
}

void file_writes_finish_on_stop(bool on) { atomic_store(&finish_on_stop, on); }

// Registers a temporary file's name, installing the handlers for the first; its slot or -1.
static int live_add(const char *tmp) {
    int slot = -1;
    for (int i = 0; i < MAX_OUTPUTS && slot < 0; i++)
        if (!atomic_load(&live[i])) slot = i;
    if (slot < 0) return -1;
    if (live_count++ == 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = remove_live_files;
        sa.sa_flags = SA_SIGINFO;
        sigemptyset(&sa.sa_mask);
        for (int i = 0; i < CLEANUP_SIGNALS; i++) {
            sigaction(cleanup_signals[i], NULL, &saved_actions[i]);
            if (saved_actions[i].sa_handler != SIG_IGN) // nohup's SIGHUP stays ignored
                sigaction(cleanup_signals[i], &sa, NULL);
        }
        // past `ulimit -f` a write then fails with EFBIG (a message) instead of killing us
        struct sigaction ignore;
        memset(&ignore, 0, sizeof ignore);
        ignore.sa_handler = SIG_IGN;
        sigaction(SIGXFSZ, &ignore, &saved_xfsz);
    }
    atomic_store(&live[slot], tmp);
    return slot;
}

static void live_remove(int slot) {
    if (slot < 0) return;
    atomic_store(&live[slot], NULL);
    if (--live_count == 0) {
        for (int i = 0; i < CLEANUP_SIGNALS; i++) sigaction(cleanup_signals[i], &saved_actions[i], NULL);
        sigaction(SIGXFSZ, &saved_xfsz, NULL);
    }
}

// "DIR/NAME.tmpXXXXXX" beside target, the name shortened if it would pass NAME_MAX.
static char *temp_name(const char *target) {
    const char *slash = strrchr(target, '/');
    size_t dir_len = slash ? (size_t)(slash - target) + 1 : 0;
    size_t base_len = strlen(target) - dir_len;
    const char suffix[] = ".tmpXXXXXX";
    if (base_len + sizeof suffix - 1 > NAME_MAX) base_len = NAME_MAX - (sizeof suffix - 1);
    char *tmp = vit_malloc(dir_len + base_len + sizeof suffix);
    memcpy(tmp, target, dir_len + base_len);
    memcpy(tmp + dir_len + base_len, suffix, sizeof suffix);
    return tmp;
}

static mode_t current_umask(void) {
    mode_t mask = umask(0);
    umask(mask);
    return mask;
}

// Where the output goes and with which mode/owner: new path, regular file or a link to one.
static VitStatus resolve_target(OutFile *o, struct stat *keep, bool *exists, VitError *err) {
    const char *path = o->path;
    struct stat lsb;
    *exists = false;
    if (lstat(path, &lsb) != 0) {
        if (errno != ENOENT)
            return vit_fail(err, VIT_ERR_INPUT, "%s: cannot write: %s", path, strerror(errno));
        o->target = vit_strdup(path); // a new file
        return VIT_OK;
    }
    if (S_ISLNK(lsb.st_mode)) {
        o->target = realpath(path, NULL);
        if (!o->target)
            return errno == ENOENT
                       ? vit_fail(err, VIT_ERR_INPUT, "%s: is a symbolic link to a file that does "
                                  "not exist; not writing through it", path)
                       : vit_fail(err, VIT_ERR_INPUT, "%s: cannot follow the symbolic link: %s",
                                  path, strerror(errno));
        if (stat(o->target, keep) != 0)
            return vit_fail(err, VIT_ERR_INPUT, "%s: cannot write: %s", path, strerror(errno));
    } else {
        o->target = vit_strdup(path);
        *keep = lsb;
    }
    if (!S_ISREG(keep->st_mode))
        return vit_fail(err, VIT_ERR_INPUT, "%s: is %s, not a regular file: refusing to replace it",
                        path, file_kind(keep->st_mode));
    if (access(o->target, W_OK) != 0)
        return vit_fail(err, VIT_ERR_INPUT, "%s: cannot write: %s", path, strerror(errno));
    *exists = true;
    return VIT_OK;
}

static void outfile_free(OutFile *o) {
    free(o->path);
    free(o->target);
    free(o->tmp);
    memset(o, 0, sizeof *o);
    o->slot = -1;
}

VitStatus outfile_open(OutFile *o, const char *path, VitError *err) {
    memset(o, 0, sizeof *o);
    o->slot = -1;
    o->path = vit_strdup(path);
    struct stat keep;
    bool exists;
    VitStatus s = resolve_target(o, &keep, &exists, err);
    if (s != VIT_OK) {
        outfile_free(o);
        return s;
    }
    // The handlers go in before the file exists: a signal can reach any thread
    // of the process (OpenMP's workers too), so blocking it in this one would
    // not close the gap between creating the file and registering its name.
    // mkstemp() writes the final name into the same buffer the handler reads.
    o->tmp = temp_name(o->target);
    o->slot = live_add(o->tmp);
    int fd = mkstemp(o->tmp);
    if (fd < 0) {
        s = vit_fail(err, VIT_ERR_INPUT, "%s: cannot write: %s", path, strerror(errno));
        live_remove(o->slot);
        outfile_free(o);
        return s;
    }
    // the mode it will have: the old file's, or what the umask allows a new one
    mode_t mode = exists ? keep.st_mode & 07777 : 0666 & ~current_umask();
    if (exists && (keep.st_uid != geteuid() || keep.st_gid != getegid()))
        (void)!fchown(fd, keep.st_uid, keep.st_gid); // root keeps the owner; others cannot
    if (fchmod(fd, mode) != 0 || !(o->f = fdopen(fd, "wb"))) {
        s = vit_fail(err, VIT_ERR_INPUT, "%s: cannot write: %s", path, strerror(errno));
        close(fd);
        unlink(o->tmp);
        live_remove(o->slot);
        outfile_free(o);
        return s;
    }
    return VIT_OK;
}

void outfile_discard(OutFile *o) {
    if (o->f) fclose(o->f);
    if (o->tmp) unlink(o->tmp);
    live_remove(o->slot);
    outfile_free(o);
}

VitStatus outfile_commit(OutFile *o, bool ok, VitError *err) {
    int saved = ok ? 0 : (errno ? errno : EIO);
    // flushed and on the disk before the rename, so the name never points at half a file
    if (ok && (fflush(o->f) != 0 || fsync(fileno(o->f)) != 0)) ok = false, saved = errno;
    if (fclose(o->f) != 0 && ok) ok = false, saved = errno;
    o->f = NULL;
    if (ok && rename(o->tmp, o->target) != 0) ok = false, saved = errno;
    if (ok) {
        live_remove(o->slot);
        outfile_free(o);
        return VIT_OK;
    }
    VitStatus s = vit_fail(err, VIT_ERR_INPUT, "%s: write failed: %s", o->path, strerror(saved));
    outfile_discard(o);
    return s;
}

VitStatus outfile_check(const char *path, VitError *err) {
    OutFile o;
    VitStatus s = outfile_open(&o, path, err);
    if (s == VIT_OK) outfile_discard(&o);
    return s;
}

/* ------------------------------------------------------- inputs, outputs */

// Where a path leads once links and "." or ".." are resolved: the file itself
// when it exists; else, for a link to a file yet to be made, where the link
// leads; else its folder resolved and its own name (a file yet to be made).
// NULL when not even the folder exists, or past `links` links (a loop). free() it.
static char *resolved_path(const char *path, int links) {
    char *whole = realpath(path, NULL);
    if (whole) return whole;
    char target[PATH_MAX];
    const ssize_t n = links > 0 ? readlink(path, target, sizeof target - 1) : -1;
    if (n > 0) { // the link's target, read from the link's own folder
        target[n] = '\0';
        const char *slash = strrchr(path, '/');
        if (target[0] == '/' || !slash) return resolved_path(target, links - 1);
        const size_t dir_len = (size_t)(slash - path) + 1, size = dir_len + (size_t)n + 1;
        char *joined = vit_malloc(size);
        snprintf(joined, size, "%.*s%s", (int)dir_len, path, target);
        char *out = resolved_path(joined, links - 1);
        free(joined);
        return out;
    }
    const char *slash = strrchr(path, '/');
    const char *name = slash ? slash + 1 : path;
    char *dir = slash ? vit_strdup(path) : vit_strdup(".");
    if (slash) dir[slash == path ? 1 : slash - path] = '\0'; // "/x": the folder is "/"
    char *folder = realpath(dir, NULL);
    free(dir);
    if (!folder) return NULL;
    const size_t size = strlen(folder) + strlen(name) + 2;
    char *out = vit_malloc(size);
    snprintf(out, size, "%s/%s", folder, name);
    free(folder);
    return out;
}

bool file_same(const char *a, const char *b) {
    struct stat sa, sb;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0) // both exist: one file has one inode
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    char *ra = resolved_path(a, 40), *rb = resolved_path(b, 40); // 40: Linux's own limit
    const bool same = ra && rb ? strcmp(ra, rb) == 0 : strcmp(a, b) == 0;
    free(ra);
    free(rb);
    return same;
}

VitStatus file_check_not_input(const char *out, const char *out_role, const char *in,
                               const char *in_role, VitError *err) {
    struct stat a, b;
    if (!out || !in || stat(out, &a) != 0 || stat(in, &b) != 0) return VIT_OK;
    if (a.st_dev != b.st_dev || a.st_ino != b.st_ino) return VIT_OK;
    return vit_fail(err, VIT_ERR_INPUT,
                    "%s: %s is the same file as %s (%s): refusing to overwrite an input", out,
                    out_role, in_role, in);
}

VitStatus file_check_distinct(const FileRole *outputs, int n, VitError *err) {
    for (int i = 0; i < n; i++)
        for (int j = i + 1; j < n; j++) {
            if (!outputs[i].path || !outputs[j].path) continue;
            if (!file_same(outputs[i].path, outputs[j].path)) continue;
            char a[512], b[512];
            return vit_fail(err, VIT_ERR_USAGE, "%s %s and %s %s are one file: each output "
                            "needs a file of its own", outputs[i].role,
                            vit_escape(a, sizeof a, outputs[i].path), outputs[j].role,
                            vit_escape(b, sizeof b, outputs[j].path));
        }
    return VIT_OK;
}
