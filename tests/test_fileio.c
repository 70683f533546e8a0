/**
 * @file test_fileio.c
 * @brief Files (lib/base/fileio.h): what is read must be a regular file, what is
 *        written never destroys anything, and the terminal sees no raw bytes.
 *
 * Everything happens in a scratch directory: device nodes are made there
 * (when the tests run as root, as in CI) and never touched in the real /dev.
 * Signals and resource limits are tried in a forked child, so the runner
 * itself is never killed.
 */
#include <CUnit/CUnit.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "cli_run.h"
#include "base/fileio.h"
#include "io/safetensors.h"

enum { PATH_SIZE = 512 };


// Writes `text` to `path` through an OutFile; the status of the whole write.
static VitStatus write_out(const char *path, const char *text, VitError *err) {
    OutFile o;
    VitStatus s = outfile_open(&o, path, err);
    if (s != VIT_OK) return s;
    bool ok = fputs(text, o.f) >= 0;
    return outfile_commit(&o, ok, err);
}


/* ---------------------------------------------------------------- reading */

static void test_reading_takes_regular_files_only(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char fifo[PATH_SIZE], file[PATH_SIZE];
    scratch_file(&dir, "pipe", fifo, sizeof fifo);
    scratch_file(&dir, "a.txt", file, sizeof file);
    CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
    write_text(file, "hello");
    int fd;
    size_t size;
    VitError err;
    // a FIFO with no writer would block open() for ever: refused at once instead
    CU_ASSERT_EQUAL(file_open_regular(&fd, &size, fifo, "an image", &err), VIT_ERR_INPUT);
    CU_ASSERT(mentions(&err, fifo, "is a FIFO (named pipe), not an image"));
    CU_ASSERT_EQUAL(file_open_regular(&fd, &size, dir.path, "an image", &err), VIT_ERR_INPUT);
    CU_ASSERT(mentions(&err, "is a directory, not an image", NULL));
    // /dev/zero never ends: a character device is not a file to read to its end
    CU_ASSERT_EQUAL(file_open_regular(&fd, &size, "/dev/zero", "a labels file", &err),
                    VIT_ERR_INPUT);
    CU_ASSERT(mentions(&err, "/dev/zero: is a character device, not a labels file", NULL));
    char missing[PATH_SIZE];
    scratch_file(&dir, "missing", missing, sizeof missing);
    CU_ASSERT_EQUAL(file_open_regular(&fd, &size, missing, "an image", &err), VIT_ERR_INPUT);
    CU_ASSERT(mentions(&err, "cannot open: No such file or directory", NULL));
    // a regular file: opened, its size known, and blocking again
    CU_ASSERT_EQUAL_FATAL(file_open_regular(&fd, &size, file, "a file", &err), VIT_OK);
    CU_ASSERT_EQUAL(size, 5);
    char buf[8] = {0};
    CU_ASSERT_EQUAL(read(fd, buf, sizeof buf), 5);
    close(fd);

    char *data;
    CU_ASSERT_EQUAL(file_read_all(&data, &size, file, 5, "a file", &err), VIT_OK);
    CU_ASSERT_STRING_EQUAL(data, "hello");
    free(data);
    // a size limit is checked before anything is read
    CU_ASSERT_EQUAL(file_read_all(&data, &size, file, 4, "a labels file", &err), VIT_ERR_INPUT);
    CU_ASSERT_PTR_NULL(data);
    CU_ASSERT(mentions(&err, "5 bytes is larger than the 4 bytes a labels file may have", NULL));
    const void *map;
    CU_ASSERT_EQUAL(file_map(&map, &size, fifo, "a safetensors file", &err), VIT_ERR_INPUT);
    CU_ASSERT(mentions(&err, "is a FIFO (named pipe), not a safetensors file", NULL));
    scratch_remove(&dir);
}

// Map a file, cut it to nothing behind the map's back, touch the map: a child
// process with the guard must say which file changed and exit 1.
static void test_truncated_map_is_a_message(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char path[PATH_SIZE], err_path[PATH_SIZE];
    scratch_file(&dir, "w.bin", path, sizeof path);
    scratch_file(&dir, "stderr", err_path, sizeof err_path);
    FILE *f = fopen(path, "wb");
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    for (int i = 0; i < 3 * 4096; i++) fputc(i & 0xff, f);
    fclose(f);
    fflush(NULL);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        freopen(err_path, "w", stderr);
        file_guard_mapped("guarded", NULL);
        const void *map;
        size_t size;
        VitError err;
        if (file_map(&map, &size, path, "a file", &err) != VIT_OK) _exit(3);
        if (truncate(path, 0) != 0) _exit(4);
        volatile unsigned char sum = 0;
        for (size_t i = 0; i < size; i++) sum += ((const unsigned char *)map)[i];
        (void)sum;
        _exit(5); // not reached: the first read past the new end raises SIGBUS
    }
    int status;
    waitpid(pid, &status, 0);
    CU_ASSERT_TRUE(WIFEXITED(status));
    CU_ASSERT_EQUAL(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 1);
    char *said = read_whole_file(err_path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(said);
    char want[PATH_SIZE + 128];
    snprintf(want, sizeof want, "guarded: %s: the file was truncated or replaced while it was in use",
             path);
    if (strncmp(said, want, strlen(want)) != 0) fprintf(stderr, "\n    child said '%s'\n", said);
    CU_ASSERT_EQUAL(strncmp(said, want, strlen(want)), 0);
    free(said);
    scratch_remove(&dir);
}

/* ---------------------------------------------------------------- writing */

static void test_new_file_honours_the_umask(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    const mode_t masks[] = {022, 077, 002};
    for (size_t i = 0; i < sizeof masks / sizeof masks[0]; i++) {
        char path[PATH_SIZE], name[32];
        snprintf(name, sizeof name, "new%zu", i);
        scratch_file(&dir, name, path, sizeof path);
        mode_t old = umask(masks[i]);
        VitError err;
        VitStatus s = write_out(path, "x", &err);
        umask(old);
        CU_ASSERT_EQUAL(s, VIT_OK);
        struct stat sb;
        CU_ASSERT_EQUAL_FATAL(stat(path, &sb), 0);
        CU_ASSERT_EQUAL(sb.st_mode & 0777, 0666 & ~masks[i]);
    }
    CU_ASSERT_EQUAL(scratch_count(&dir), 3); // no temporary file left
    scratch_remove(&dir);
}

static void test_replacing_keeps_mode_and_follows_links(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char file[PATH_SIZE], link[PATH_SIZE], dangling[PATH_SIZE], nowhere[PATH_SIZE];
    scratch_file(&dir, "old.txt", file, sizeof file);
    scratch_file(&dir, "link", link, sizeof link);
    scratch_file(&dir, "dangling", dangling, sizeof dangling);
    scratch_file(&dir, "nowhere", nowhere, sizeof nowhere);
    write_text(file, "old");
    CU_ASSERT_EQUAL(chmod(file, 0640), 0);
    VitError err;
    CU_ASSERT_EQUAL(write_out(file, "new", &err), VIT_OK);
    CU_ASSERT(has_text(file, "new"));
    struct stat sb;
    CU_ASSERT_EQUAL(stat(file, &sb), 0);
    CU_ASSERT_EQUAL(sb.st_mode & 07777, 0640); // the file's own mode, not the umask's
    // root replacing someone else's file leaves it theirs
    if (geteuid() == 0 && chown(file, 1234, 5678) == 0) {
        CU_ASSERT_EQUAL(write_out(file, "root wrote this", &err), VIT_OK);
        CU_ASSERT_EQUAL(stat(file, &sb), 0);
        CU_ASSERT_TRUE(sb.st_uid == 1234 && sb.st_gid == 5678);
        CU_ASSERT_EQUAL(sb.st_mode & 07777, 0640);
    }

    // a link is written through: the target changes, the link stays a link
    CU_ASSERT_EQUAL_FATAL(symlink("old.txt", link), 0);
    CU_ASSERT_EQUAL(write_out(link, "through the link", &err), VIT_OK);
    CU_ASSERT(has_text(file, "through the link"));
    CU_ASSERT_EQUAL(lstat(link, &sb), 0);
    CU_ASSERT_TRUE(S_ISLNK(sb.st_mode));
    // a link to nothing is refused, as cp refuses it
    CU_ASSERT_EQUAL_FATAL(symlink("nowhere", dangling), 0);
    CU_ASSERT_EQUAL(write_out(dangling, "x", &err), VIT_ERR_INPUT);
    CU_ASSERT(mentions(&err, dangling, "symbolic link to a file that does not exist"));
    CU_ASSERT_EQUAL(lstat(nowhere, &sb), -1);
    CU_ASSERT_EQUAL(scratch_count(&dir), 3); // old.txt, link, dangling
    scratch_remove(&dir);
}

// A FIFO, a directory, a device node (root only: mknod) and links to them:
// refused, and still what they were.
static void test_non_regular_destinations_are_refused(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char fifo[PATH_SIZE], sub[PATH_SIZE], dev[PATH_SIZE], to_fifo[PATH_SIZE], to_dev[PATH_SIZE];
    scratch_file(&dir, "pipe", fifo, sizeof fifo);
    scratch_file(&dir, "sub", sub, sizeof sub);
    scratch_file(&dir, "null", dev, sizeof dev);
    scratch_file(&dir, "to-pipe", to_fifo, sizeof to_fifo);
    scratch_file(&dir, "to-null", to_dev, sizeof to_dev);
    CU_ASSERT_EQUAL_FATAL(mkfifo(fifo, 0600), 0);
    CU_ASSERT_EQUAL_FATAL(mkdir(sub, 0700), 0);
    CU_ASSERT_EQUAL_FATAL(symlink("pipe", to_fifo), 0);
    // a character device like /dev/null (1, 3), made here, never the real one
    bool have_dev = mknod(dev, S_IFCHR | 0666, makedev(1, 3)) == 0;
    if (have_dev) CU_ASSERT_EQUAL_FATAL(symlink("null", to_dev), 0);
    const struct {
        const char *path, *kind;
        mode_t type;
    } cases[] = {
        {fifo, "is a FIFO (named pipe), not a regular file", S_IFIFO},
        {to_fifo, "is a FIFO (named pipe), not a regular file", S_IFIFO},
        {sub, "is a directory, not a regular file", S_IFDIR},
        {dev, "is a character device, not a regular file", S_IFCHR},
        {to_dev, "is a character device, not a regular file", S_IFCHR},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        if (!have_dev && cases[i].type == S_IFCHR) continue;
        VitError err;
        CU_ASSERT_EQUAL(write_out(cases[i].path, "x", &err), VIT_ERR_INPUT);
        CU_ASSERT(mentions(&err, cases[i].path, cases[i].kind));
        struct stat sb;
        CU_ASSERT_EQUAL(stat(cases[i].path, &sb), 0);
        CU_ASSERT_EQUAL(sb.st_mode & S_IFMT, cases[i].type);
    }
    CU_ASSERT_EQUAL(scratch_count(&dir), have_dev ? 5 : 3); // no temporary file anywhere
    scratch_remove(&dir);
}

static void test_discard_and_failure_leave_the_old_file(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char file[PATH_SIZE];
    scratch_file(&dir, "keep.txt", file, sizeof file);
    write_text(file, "precious");
    OutFile o;
    VitError err;
    CU_ASSERT_EQUAL_FATAL(outfile_open(&o, file, &err), VIT_OK);
    fputs("half a file", o.f);
    CU_ASSERT_EQUAL(scratch_count(&dir), 2); // the temporary file beside it
    outfile_discard(&o);
    CU_ASSERT(has_text(file, "precious"));
    // a write that failed (ok = false): the reason is errno's, nothing replaced
    CU_ASSERT_EQUAL_FATAL(outfile_open(&o, file, &err), VIT_OK);
    errno = ENOSPC;
    CU_ASSERT_EQUAL(outfile_commit(&o, false, &err), VIT_ERR_INPUT);
    CU_ASSERT(mentions(&err, file, "write failed: No space left on device"));
    CU_ASSERT(has_text(file, "precious"));
    CU_ASSERT_EQUAL(scratch_count(&dir), 1);
    scratch_remove(&dir);
}

// A child that writes a file and stops itself with `sig` half way: the
// temporary file is gone, the old file intact, and the child died of `sig`.
static void signal_mid_write(int sig) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char file[PATH_SIZE];
    scratch_file(&dir, "out.txt", file, sizeof file);
    write_text(file, "precious");
    fflush(NULL);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        // the default action, as a shell's foreground program has it (a
        // background job inherits SIGINT ignored, and then rightly survives)
        signal(sig, SIG_DFL);
        OutFile o;
        VitError err;
        if (outfile_open(&o, file, &err) != VIT_OK) _exit(3);
        fputs("half a file", o.f);
        fflush(o.f);
        raise(sig);
        _exit(4); // not reached
    }
    int status;
    waitpid(pid, &status, 0);
    CU_ASSERT_TRUE(WIFSIGNALED(status));
    CU_ASSERT_EQUAL(WIFSIGNALED(status) ? WTERMSIG(status) : 0, sig);
    CU_ASSERT(has_text(file, "precious"));
    CU_ASSERT_EQUAL(scratch_count(&dir), 1);
    scratch_remove(&dir);
}

// vit train's Ctrl-C: the program's own handler asks it to stop at the next
// safe point, and it said so (file_writes_finish_on_stop()). A checkpoint
// being written when the signal comes is finished, not removed: before, the
// temporary file was deleted under the writer and the rename failed ("write
// failed: No such file or directory"), so the checkpoint was lost.
static volatile sig_atomic_t stop_seen;
static void note_stop(int sig) {
    (void)sig;
    stop_seen = 1;
}

static void test_a_stop_the_program_handles_lets_the_write_finish(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char file[PATH_SIZE];
    scratch_file(&dir, "checkpoint", file, sizeof file);
    write_text(file, "the previous checkpoint");
    fflush(NULL);
    const int sigs[] = {SIGINT, SIGTERM};
    for (int i = 0; i < 2; i++) {
        pid_t pid = fork();
        CU_ASSERT_FATAL(pid >= 0);
        if (pid == 0) {
            struct sigaction sa;
            memset(&sa, 0, sizeof sa);
            sa.sa_handler = note_stop;
            sigemptyset(&sa.sa_mask);
            sigaction(sigs[i], &sa, NULL);
            file_writes_finish_on_stop(true);
            OutFile o;
            VitError err;
            if (outfile_open(&o, file, &err) != VIT_OK) _exit(3);
            fputs("half a ", o.f);
            raise(sigs[i]);
            fputs("checkpoint", o.f);
            if (!stop_seen) _exit(4);                              // the program heard it
            if (outfile_commit(&o, true, &err) != VIT_OK) _exit(5); // and the write finished
            _exit(0);
        }
        int status;
        waitpid(pid, &status, 0);
        CU_ASSERT_TRUE(WIFEXITED(status));
        CU_ASSERT_EQUAL(WIFEXITED(status) ? WEXITSTATUS(status) : -1, 0);
        CU_ASSERT(has_text(file, "half a checkpoint"));
        CU_ASSERT_EQUAL(scratch_count(&dir), 1); // no temporary file left
        write_text(file, "the previous checkpoint");
    }
    scratch_remove(&dir);
}

static void test_signal_mid_write_removes_the_temporary(void) {
    struct sigaction before, after;
    sigaction(SIGINT, NULL, &before);
    const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) signal_mid_write(sigs[i]);
    // and when nothing is being written, the program's own handlers are back
    OutFile o;
    VitError err;
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char file[PATH_SIZE];
    scratch_file(&dir, "out.txt", file, sizeof file);
    CU_ASSERT_EQUAL_FATAL(outfile_open(&o, file, &err), VIT_OK);
    CU_ASSERT_EQUAL(outfile_commit(&o, true, &err), VIT_OK);
    sigaction(SIGINT, NULL, &after);
    CU_ASSERT_PTR_EQUAL(after.sa_handler, before.sa_handler);
    scratch_remove(&dir);
}

// `ulimit -f`: a write past the limit is an error (EFBIG), not death by SIGXFSZ.
static void test_file_size_limit_is_a_message(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char file[PATH_SIZE], err_path[PATH_SIZE];
    scratch_file(&dir, "big.safetensors", file, sizeof file);
    scratch_file(&dir, "message", err_path, sizeof err_path);
    fflush(NULL);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        struct rlimit rl = {64 * 1024, 64 * 1024};
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(3);
        Tensor t = tensor_new(1, 1 << 20); // 4 MB of zeros
        StWriter w = {0};
        st_writer_add(&w, "x", &t);
        VitError err;
        VitStatus s = st_writer_save(&w, file, &err);
        FILE *f = fopen(err_path, "w");
        if (f) fputs(err.msg, f), fclose(f);
        _exit(s == VIT_ERR_INPUT ? 0 : 5);
    }
    int status;
    waitpid(pid, &status, 0);
    CU_ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    char *msg = read_whole_file(err_path, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(msg);
    CU_ASSERT_PTR_NOT_NULL(strstr(msg, "write failed: File too large"));
    free(msg);
    CU_ASSERT_EQUAL(scratch_count(&dir), 1); // only the message: no output, no temporary
    scratch_remove(&dir);
}

static void test_output_that_is_an_input(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char in[PATH_SIZE], other[PATH_SIZE], hard[PATH_SIZE], soft[PATH_SIZE], dotted[PATH_SIZE];
    scratch_file(&dir, "in.bin", in, sizeof in);
    scratch_file(&dir, "other.bin", other, sizeof other);
    scratch_file(&dir, "hard.bin", hard, sizeof hard);
    scratch_file(&dir, "soft.bin", soft, sizeof soft);
    scratch_file(&dir, "./in.bin", dotted, sizeof dotted);
    write_text(in, "input");
    write_text(other, "other");
    CU_ASSERT_EQUAL_FATAL(link(in, hard), 0);
    CU_ASSERT_EQUAL_FATAL(symlink("in.bin", soft), 0);
    VitError err;
    const char *same[] = {in, hard, soft, dotted};
    for (size_t i = 0; i < sizeof same / sizeof same[0]; i++) {
        CU_ASSERT_EQUAL(file_check_not_input(same[i], "--out", in, "--weights", &err),
                        VIT_ERR_INPUT);
        CU_ASSERT(mentions(&err, "--out is the same file as --weights", in));
    }
    CU_ASSERT_EQUAL(file_check_not_input(other, "--out", in, "--weights", &err), VIT_OK);
    char fresh[PATH_SIZE];
    scratch_file(&dir, "fresh.bin", fresh, sizeof fresh); // not there yet: nothing to lose
    CU_ASSERT_EQUAL(file_check_not_input(fresh, "--out", in, "--weights", &err), VIT_OK);
    CU_ASSERT_EQUAL(file_check_not_input(in, "--out", NULL, "--labels", &err), VIT_OK);
    CU_ASSERT(has_text(in, "input"));
    scratch_remove(&dir);
}

/* --------------------------------------------------------------- terminal */

static void test_escape_for_the_terminal(void) {
    char out[128];
    const struct {
        const char *in, *want;
    } cases[] = {
        {"blocks.0.attn.qkv.weight", "blocks.0.attn.qkv.weight"},
        {"caf\xc3\xa9 224\xc3\x97" "224", "caf\xc3\xa9 224\xc3\x97" "224"}, // UTF-8 passes
        {"a\nb\tc\rd", "a\\nb\\tc\\rd"},
        {"\x1b]0;pwned\x07title", "\\x1b]0;pwned\\x07title"}, // retitling the terminal
        {"\x1b[2J", "\\x1b[2J"},                              // clearing it
        {"x\x7fy", "x\\x7fy"},
        {"\xc2\x9b" "31m", "\\xc2\\x9b31m"},       // C1 CSI, the 8-bit escape
        {"\xe2\x80\xae" "evil", "\\xe2\\x80\\xaeevil"}, // right-to-left override
        {"bad \xff\xfe utf8 \xc3", "bad \\xff\\xfe utf8 \\xc3"},
        {"\xed\xa0\x80", "\\xed\\xa0\\x80"},       // a UTF-16 surrogate is not UTF-8
        {"", ""},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        vit_escape(out, sizeof out, cases[i].in);
        if (strcmp(out, cases[i].want) != 0)
            fprintf(stderr, "\n    case %zu: got '%s', want '%s'\n", i, out, cases[i].want);
        CU_ASSERT_STRING_EQUAL(out, cases[i].want);
    }
    // cut short at a whole piece: never half an escape or half a character
    vit_escape(out, 6, "ab\x1b" "cd");
    CU_ASSERT_STRING_EQUAL(out, "ab");
    vit_escape(out, 4, "a\xc3\xa9\xc3\xa9");
    CU_ASSERT_STRING_EQUAL(out, "a\xc3\xa9");
    vit_escape(out, 1, "abc");
    CU_ASSERT_STRING_EQUAL(out, "");
}

// Two outputs are one file when they lead to one place: the same inode when
// both exist (a link of either kind, another spelling), else the same folder
// and name once the folders are resolved.
static void test_one_file_under_two_names(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char a[PATH_SIZE], dotted[PATH_SIZE], sym[PATH_SIZE], hard[PATH_SIZE], other[PATH_SIZE];
    char fresh[PATH_SIZE], fresh_dotted[PATH_SIZE], fresh_other[PATH_SIZE];
    scratch_file(&dir, "a", a, sizeof a);
    scratch_file(&dir, "./a", dotted, sizeof dotted);
    scratch_file(&dir, "sym", sym, sizeof sym);
    scratch_file(&dir, "hard", hard, sizeof hard);
    scratch_file(&dir, "other", other, sizeof other);
    scratch_file(&dir, "new", fresh, sizeof fresh);
    scratch_file(&dir, "sub/../new", fresh_dotted, sizeof fresh_dotted);
    scratch_file(&dir, "new2", fresh_other, sizeof fresh_other);
    write_text(a, "a");
    write_text(other, "other");
    CU_ASSERT_EQUAL_FATAL(symlink(a, sym), 0);
    CU_ASSERT_EQUAL_FATAL(link(a, hard), 0);
    char sub[PATH_SIZE];
    CU_ASSERT_EQUAL_FATAL(mkdir(scratch_file(&dir, "sub", sub, sizeof sub), 0755), 0);
    CU_ASSERT_TRUE(file_same(a, a));
    CU_ASSERT_TRUE(file_same(a, dotted));
    CU_ASSERT_TRUE(file_same(a, sym));
    CU_ASSERT_TRUE(file_same(hard, a));
    CU_ASSERT_FALSE(file_same(a, other));
    CU_ASSERT_TRUE(file_same(fresh, fresh_dotted)); // neither exists yet
    CU_ASSERT_FALSE(file_same(fresh, fresh_other));
    CU_ASSERT_FALSE(file_same(fresh, a));
    // a link to a file yet to be made is that file (writing through it would
    // replace what the other output wrote); a loop of links ends
    char dangling[PATH_SIZE], loop_a[PATH_SIZE], loop_b[PATH_SIZE];
    scratch_file(&dir, "dangling", dangling, sizeof dangling);
    scratch_file(&dir, "loop-a", loop_a, sizeof loop_a);
    scratch_file(&dir, "loop-b", loop_b, sizeof loop_b);
    CU_ASSERT_EQUAL_FATAL(symlink("new", dangling), 0); // relative: beside the link
    CU_ASSERT_EQUAL_FATAL(symlink(loop_b, loop_a), 0);
    CU_ASSERT_EQUAL_FATAL(symlink(loop_a, loop_b), 0);
    CU_ASSERT_TRUE(file_same(dangling, fresh));
    CU_ASSERT_FALSE(file_same(dangling, fresh_other));
    CU_ASSERT_FALSE(file_same(loop_a, fresh));
    scratch_remove(&dir);
}

// outfile_check(): what outfile_open() would say, before any work, leaving nothing behind.
static void test_an_output_is_checked_before_the_work(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char ok[PATH_SIZE], nowhere[PATH_SIZE], folder[PATH_SIZE];
    scratch_file(&dir, "model.safetensors", ok, sizeof ok);
    scratch_file(&dir, "no-such-folder/model.safetensors", nowhere, sizeof nowhere);
    scratch_file(&dir, "folder", folder, sizeof folder);
    CU_ASSERT_EQUAL_FATAL(mkdir(folder, 0755), 0);
    VitError err;
    CU_ASSERT_EQUAL(outfile_check(ok, &err), VIT_OK);
    CU_ASSERT_EQUAL(outfile_check(nowhere, &err), VIT_ERR_INPUT);
    CU_ASSERT_TRUE(mentions(&err, "no-such-folder/model.safetensors", "cannot write"));
    CU_ASSERT_EQUAL(outfile_check(folder, &err), VIT_ERR_INPUT);
    CU_ASSERT_TRUE(mentions(&err, "is a directory", NULL));
    CU_ASSERT_EQUAL(scratch_count(&dir), 1); // the folder alone: no file, no temporary
    scratch_remove(&dir);
}

CU_TestInfo tests_fileio[] = {
    {"reading takes regular files only", test_reading_takes_regular_files_only},
    {"a map truncated under us is a message", test_truncated_map_is_a_message},
    {"a new file honours the umask", test_new_file_honours_the_umask},
    {"replacing keeps the mode, follows links", test_replacing_keeps_mode_and_follows_links},
    {"devices, FIFOs, directories are refused", test_non_regular_destinations_are_refused},
    {"discard and failure keep the old file", test_discard_and_failure_leave_the_old_file},
    {"a signal mid-write removes the temporary", test_signal_mid_write_removes_the_temporary},
    {"a stop the program handles lets the write finish",
     test_a_stop_the_program_handles_lets_the_write_finish},
    {"a file size limit is a message", test_file_size_limit_is_a_message},
    {"an output that is an input is refused", test_output_that_is_an_input},
    {"one file under two names", test_one_file_under_two_names},
    {"an output is checked before the work", test_an_output_is_checked_before_the_work},
    {"strings are escaped for the terminal", test_escape_for_the_terminal},
    CU_TEST_INFO_NULL,
};
