/**
 * @file test_gemm_choice.c
 * @brief The default matrix product: measured once, remembered, forced by
 *        VIT_GEMM, and reported by `vit info` (lib/gemm/gemm_choice.c).
 *
 * The choice is made once per process, so each case runs the real `vit info`
 * in a process of its own with the variables set, and reads its "compute:"
 * line and the cache file it leaves. What is checked is the behaviour, not
 * which backend wins: that depends on the machine (and is `make bench`'s job).
 * Also here, as the choice's timing is where too many threads did harm: the
 * thread count a run asks for is capped at vit_thread_limit().
 */
#include <CUnit/CUnit.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "check.h"
#include "cli_run.h"
#include "gemm/gemm.h"
#include "base/util.h"
#include "model/vit.h"

enum { PATH_SIZE = 512 };

/** A scratch folder with a small model in it. */
typedef struct {
    ScratchDir dir;
    char weights[PATH_SIZE], cache[PATH_SIZE];
} Setup;

static bool setup(Setup *s) {
    if (!scratch_make(&s->dir)) return false;
    scratch_file(&s->dir, "w.safetensors", s->weights, sizeof s->weights);
    scratch_file(&s->dir, "gemm-choice", s->cache, sizeof s->cache);
    VitConfig cfg = {.image_size = 28, .patch_size = 4, .channels = 1, .dim = 32, .depth = 1,
                     .heads = 2, .mlp_dim = 64, .num_classes = 10, .ln_eps = 1e-6f};
    VitInit init = vit_init_timm(1);
    Vit vit;
    VitError err;
    bool ok = vit_build_random(&vit, &cfg, &init, &err) == VIT_OK;
    if (ok) {
        ok = vit_save(&vit, s->weights, &err) == VIT_OK;
        vit_free(&vit);
    }
    return ok;
}

// Sets variable `name` to `value` (NULL: unsets it), returning its old value (free it).
static char *set_var(const char *name, const char *value) {
    char *old = getenv(name) ? strdup(getenv(name)) : NULL;
    if (value) setenv(name, value, 1);
    else unsetenv(name);
    return old;
}

// `vit info` with VIT_GEMM, VIT_GEMM_CACHE and VIT_GEMM_QUIET as given (NULL:
// unset); the runner's own settings come back afterwards.
static CliResult info_quiet(const Setup *s, const char *gemm, const char *cache, const char *quiet) {
    char *old_gemm = set_var("VIT_GEMM", gemm), *old_cache = set_var("VIT_GEMM_CACHE", cache);
    char *old_quiet = set_var("VIT_GEMM_QUIET", quiet);
    CliResult r = VIT_RUN("info", "--weights", s->weights);
    free(set_var("VIT_GEMM", old_gemm)), free(set_var("VIT_GEMM_CACHE", old_cache));
    free(set_var("VIT_GEMM_QUIET", old_quiet));
    free(old_gemm), free(old_cache), free(old_quiet);
    return r;
}

// The same, remembering every measurement however busy the machine is (the
// tests run beside other work: the busy case has tests of its own, below).
static CliResult info_with(const Setup *s, const char *gemm, const char *cache) {
    return info_quiet(s, gemm, cache, "0");
}

// The "compute:" line's text after "matrix products: ", or "" (static storage).
static const char *products_line(const CliResult *r) {
    static char line[512];
    line[0] = '\0';
    const char *at = r->out ? strstr(r->out, "matrix products: ") : NULL;
    if (at) {
        at += strlen("matrix products: ");
        snprintf(line, sizeof line, "%.*s", (int)strcspn(at, "\n"), at);
    }
    return line;
}

// true when the file at path holds text somewhere.
static bool file_holds(const char *path, const char *text) {
    char *got = read_whole_file(path, NULL);
    const bool holds = got && strstr(got, text);
    free(got);
    return holds;
}

static bool starts_with(const char *s, const char *prefix) {
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

static void test_vit_gemm_forces_a_backend(void) {
    Setup s;
    CU_ASSERT_FATAL(setup(&s));
    CliResult r = info_with(&s, "tiled", s.cache);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_TRUE(starts_with(products_line(&r), "tiled (set by VIT_GEMM"));
    cli_result_free(&r);
    r = info_with(&s, "blas", s.cache);
    CU_ASSERT_EQUAL(r.status, 0);
    // without OpenBLAS in the build, asking for it gives the tiled kernel
    CU_ASSERT_TRUE(starts_with(products_line(&r), gemm_have_blas() ? "blas (set by VIT_GEMM"
                                                                   : "tiled ("));
    cli_result_free(&r);
    CU_ASSERT_EQUAL(scratch_count(&s.dir), 1); // forcing measures nothing and keeps nothing
    scratch_remove(&s.dir);
}

static void test_measured_once_then_remembered(void) {
    Setup s;
    CU_ASSERT_FATAL(setup(&s));
    if (!gemm_have_blas()) { // one fast backend: nothing to measure or keep
        CliResult r = info_with(&s, NULL, s.cache);
        CU_ASSERT_EQUAL(r.status, 0);
        CU_ASSERT_TRUE(starts_with(products_line(&r), "tiled (the only fast backend"));
        cli_result_free(&r);
        CU_ASSERT_EQUAL(scratch_count(&s.dir), 1);
        scratch_remove(&s.dir);
        return;
    }
    CliResult r = info_with(&s, NULL, s.cache);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_STRING_EQUAL(r.err, "");
    const char *line = products_line(&r);
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "(measured now; tiled ("));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "GFLOP/s on 197x768x2304"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, s.cache)); // says where the choice is kept
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "(the choice is kept in "));
    char first[16] = "";
    sscanf(line, "%15s", first);
    cli_result_free(&r);
    // the file names the choice the run printed, and the cpu and threads it holds for
    char want[64];
    snprintf(want, sizeof want, "choice=%s\n", first);
    CU_ASSERT_TRUE(file_holds(s.cache, want));
    CU_ASSERT_TRUE(file_holds(s.cache, "\nthreads="));
    CU_ASSERT_TRUE(file_holds(s.cache, "\ncpu="));
    // and the choice for small products, which the run printed too
    const char *small = strstr(line, "; under 100 MFLOP: ");
    CU_ASSERT_PTR_NOT_NULL_FATAL(small);
    char small_first[16] = "";
    sscanf(small + strlen("; under 100 MFLOP: "), "%15s", small_first);
    snprintf(want, sizeof want, "small_choice=%s\n", small_first);
    CU_ASSERT_TRUE(file_holds(s.cache, want));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "GFLOP/s on a training shard's block, one per thread)"));
    // the next run reads it: the same choice, nothing timed
    r = info_with(&s, NULL, s.cache);
    CU_ASSERT_EQUAL(r.status, 0);
    line = products_line(&r);
    CU_ASSERT_TRUE(starts_with(line, first));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, "(cached: measured before on this machine"));
    cli_result_free(&r);
    // what the file says is what the run does: the choices written the other
    // way round (each size the other backend) are read back as they are
    char *text = read_whole_file(s.cache, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    const bool tiled_first = strstr(text, "\nchoice=tiled\n") != NULL;
    const bool tiled_small = strstr(text, "\nsmall_choice=tiled\n") != NULL;
    char *at = strstr(text, "\nchoice="), *small_at = strstr(text, "\nsmall_choice=");
    CU_ASSERT_FATAL(at && small_at);
    char swapped[2048];
    snprintf(swapped, sizeof swapped, "%.*s\nchoice=%s\ntiled_gflops=1.0\nblas_gflops=1.0\n"
             "small_choice=%s\nsmall_tiled_gflops=1.0\nsmall_blas_gflops=1.0\n", (int)(at - text),
             text, tiled_first ? "blas" : "tiled", tiled_small ? "blas" : "tiled");
    free(text);
    write_text(s.cache, swapped);
    r = info_with(&s, NULL, s.cache);
    CU_ASSERT_EQUAL(r.status, 0);
    line = products_line(&r);
    CU_ASSERT_TRUE(starts_with(line, tiled_first ? "blas (cached" : "tiled (cached"));
    CU_ASSERT_PTR_NOT_NULL(strstr(line, tiled_small ? "; under 100 MFLOP: blas ("
                                                    : "; under 100 MFLOP: tiled ("));
    cli_result_free(&r);
    // the key names what was timed: an answer about other products is measured again
    CU_ASSERT_TRUE(file_holds(s.cache, "\ntimed="));
    text = read_whole_file(s.cache, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    char *timed = strstr(text, "\ntimed="), older[2048];
    CU_ASSERT_PTR_NOT_NULL_FATAL(timed);
    snprintf(older, sizeof older, "%.*s\ntimed=qkv of 64 images%s", (int)(timed - text), text,
             strchr(timed + 1, '\n'));
    free(text);
    write_text(s.cache, older);
    r = info_with(&s, NULL, s.cache);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(products_line(&r), "(measured now;"));
    cli_result_free(&r);
    CU_ASSERT_FALSE(file_holds(s.cache, "qkv of 64 images")); // rewritten
    scratch_remove(&s.dir);
}

// `vit info` on `threads` threads (OMP_NUM_THREADS), remembering every measurement.
static CliResult info_on_threads(const Setup *s, const char *threads) {
    char *old = set_var("OMP_NUM_THREADS", threads);
    CliResult r = info_with(s, NULL, s->cache);
    free(set_var("OMP_NUM_THREADS", old));
    free(old);
    return r;
}

// Runs on 1 and on 2 threads each keep their answer: neither measures again
// because the other ran last, and another machine's answer is not kept.
static void test_each_thread_count_keeps_its_answer(void) {
    if (!gemm_have_blas() || vit_thread_limit() < 2) return; // nothing measured, or one count
    Setup s;
    CU_ASSERT_FATAL(setup(&s));
    const char *runs[][2] = {{"1", "(measured now;"}, {"2", "(measured now;"},
                             {"1", "(cached"},        {"2", "(cached"}};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        CliResult r = info_on_threads(&s, runs[i][0]);
        CU_ASSERT_EQUAL(r.status, 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(products_line(&r), runs[i][1]));
        cli_result_free(&r);
    }
    CU_ASSERT_TRUE(file_holds(s.cache, "\nthreads=1\n"));
    CU_ASSERT_TRUE(file_holds(s.cache, "\nthreads=2\n"));
    // another machine's block in the file: dropped when an answer is written
    char *text = read_whole_file(s.cache, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    char *one = strstr(text, "cpu="), grown[4096];
    CU_ASSERT_PTR_NOT_NULL_FATAL(one);
    snprintf(grown, sizeof grown, "%.*scpu=Some Other CPU\nblas=x\nkernel=avx2\nthreads=3\n"
             "timed=x\nchoice=tiled\ntiled_gflops=1.0\nblas_gflops=1.0\nsmall_choice=tiled\n"
             "small_tiled_gflops=1.0\nsmall_blas_gflops=1.0\n%s", (int)(one - text), text, one);
    free(text);
    write_text(s.cache, grown);
    CliResult r = info_on_threads(&s, "2");
    CU_ASSERT_PTR_NOT_NULL(strstr(products_line(&r), "(cached")); // found after the other block
    cli_result_free(&r);
    char *gone = strstr(grown, "threads=1\n"); // the 1-thread answer made unreadable
    CU_ASSERT_PTR_NOT_NULL_FATAL(gone);
    gone[8] = '7';
    write_text(s.cache, grown);
    r = info_on_threads(&s, "1");
    CU_ASSERT_PTR_NOT_NULL(strstr(products_line(&r), "(measured now;"));
    cli_result_free(&r);
    CU_ASSERT_FALSE(file_holds(s.cache, "Some Other CPU"));
    CU_ASSERT_TRUE(file_holds(s.cache, "\nthreads=2\n")); // kept beside the new one
    CU_ASSERT_TRUE(file_holds(s.cache, "\nthreads=1\n"));
    scratch_remove(&s.dir);
}

// A cache written for another machine, a damaged one, or one that cannot be
// written: measured again, never an error.
static void test_a_cache_that_does_not_fit_is_measured_again(void) {
    if (!gemm_have_blas()) return; // nothing is measured: the case above checks that
    Setup s;
    CU_ASSERT_FATAL(setup(&s));
    static const char another_machine[] =
        "# vit-from-scratch: another machine's\ncpu=Some Other CPU\nblas=x\nkernel=avx2\n"
        "threads=2\nchoice=tiled\ntiled_gflops=1.0\nblas_gflops=1.0\n";
    // a cache of ours (its first line) for another machine, damaged, or cut short
    const char *others[] = {another_machine, "# vit-from-scratch: Some Other CPU\n\x01\x02 damaged",
                            "# vit-from-scratch: the faster matrix product\ncpu=Some Other CPU"};
    for (size_t i = 0; i < sizeof others / sizeof others[0]; i++) {
        write_text(s.cache, others[i]);
        CliResult r = info_with(&s, NULL, s.cache);
        CU_ASSERT_EQUAL(r.status, 0);
        CU_ASSERT_STRING_EQUAL(r.err, "");
        CU_ASSERT_PTR_NOT_NULL(strstr(products_line(&r), "(measured now;"));
        cli_result_free(&r);
        CU_ASSERT_FALSE(file_holds(s.cache, "Some Other CPU")); // rewritten for this one
        CU_ASSERT_TRUE(file_holds(s.cache, "\nchoice="));
    }
    char unwritable[PATH_SIZE];
    write_text(s.cache, "a file where a folder would have to be");
    snprintf(unwritable, sizeof unwritable, "%.*s/gemm-choice", PATH_SIZE - 16, s.cache); // under a file
    CliResult r = info_with(&s, NULL, unwritable);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_STRING_EQUAL(r.err, "");
    CU_ASSERT_PTR_NOT_NULL(strstr(products_line(&r), "(measured now;"));
    CU_ASSERT_PTR_NULL(strstr(r.out, "the choice is kept in")); // it could not be written
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "(this choice is not remembered: "));
    cli_result_free(&r);
    CU_ASSERT_TRUE(file_holds(s.cache, "a file where a folder")); // left as it was
    r = info_with(&s, NULL, "off"); // off: measured, kept nowhere
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(products_line(&r), "(measured now;"));
    CU_ASSERT_PTR_NULL(strstr(r.out, "the choice is kept in"));
    cli_result_free(&r);
    CU_ASSERT_EQUAL(scratch_count(&s.dir), 2); // the weights and the cache file, nothing else
    scratch_remove(&s.dir);
}

// A timing that had less of the cores than VIT_GEMM_QUIET asks (here more than
// all of them: always) is used for the run and not remembered.
static void test_a_busy_measurement_is_not_remembered(void) {
    if (!gemm_have_blas()) return; // nothing is measured
    Setup s;
    CU_ASSERT_FATAL(setup(&s));
    CliResult r = info_quiet(&s, NULL, s.cache, "2");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_STRING_EQUAL(r.err, "");
    CU_ASSERT_PTR_NOT_NULL(strstr(products_line(&r), "(measured now, on a busy machine (the timing had "));
    CU_ASSERT_PTR_NOT_NULL(strstr(products_line(&r), "): not remembered; tiled ("));
    CU_ASSERT_PTR_NULL(strstr(r.out, "the choice is kept in")); // nor does vit info claim it is
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "(this choice is not remembered: "));
    cli_result_free(&r);
    CU_ASSERT_EQUAL(scratch_count(&s.dir), 1); // the weights only: no cache file
    scratch_remove(&s.dir);
}

/* ------------------------------------------------------------ a busy machine */

enum { MAX_SPINNERS = 64 };

/** Programs that keep a core busy, as `yes > /dev/null` would. */
typedef struct {
    pid_t pid[MAX_SPINNERS];
    int count;
} Spinners;

// Starts n of them (at most MAX_SPINNERS); false when one could not start.
static bool spinners_start(Spinners *sp, int n) {
    for (sp->count = 0; sp->count < n && sp->count < MAX_SPINNERS; sp->count++) {
        const pid_t pid = fork();
        if (pid == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL); // gone with the runner, should it die first
            for (;;) {}
        }
        if (pid < 0) return false;
        sp->pid[sp->count] = pid;
    }
    return true;
}

static void spinners_stop(Spinners *sp) {
    for (int i = 0; i < sp->count; i++) kill(sp->pid[i], SIGKILL), waitpid(sp->pid[i], NULL, 0);
    sp->count = 0;
}

// The CPUs this process may run on.
static int cores_here(void) {
    cpu_set_t set;
    return sched_getaffinity(0, sizeof set, &set) == 0 ? CPU_COUNT(&set) : 1;
}

// The load reading rule 2 and the test runner use (vit_load_others()): a busy
// loop beside this process is seen. (That this process's own work is not
// counted cannot be told apart from other suites running beside this one.)
static void test_the_load_reading_sees_a_busy_loop(void) {
    const VitLoad a = vit_load_now();
    if (a.cpus == 0) return; // no /proc/stat: nothing to read
    CU_ASSERT_EQUAL(vit_load_others(&a, &a), -1.0); // no time between them
    CU_ASSERT_EQUAL(a.cpus, cores_here());
    // one loop elsewhere for 0.3 s: about one CPU (at least half of one, on a
    // machine busy enough to halve it; more when others are busy too)
    Spinners sp;
    CU_ASSERT_FATAL(spinners_start(&sp, 1));
    const VitLoad c = vit_load_now();
    usleep(300 * 1000);
    const VitLoad d = vit_load_now();
    spinners_stop(&sp);
    const double one_loop = vit_load_others(&c, &d);
    CU_ASSERT(one_loop >= 0.5 && one_loop <= a.cpus + 0.1);
}

static bool exists(const char *path) {
    struct stat st;
    return lstat(path, &st) == 0;
}

// The case: an answer measured beside busy loops was written and then
// chose the backend of every later, idle run. With the default rules
// (VIT_GEMM_QUIET unset), a timing beside busy loops is used for its run only.
// First a loop on every core, then, with the run on one thread, a loop on
// every other core: there the run's own thread has its core to itself, and
// only the machine's count of other programs' time shows the load (the code
// before that rule wrote this cache). Once the loops are gone, the next run
// measures again, and keeps the answer when it had the cores.
static void test_busy_loops_keep_the_answer_from_being_remembered(void) {
    if (!gemm_have_blas()) return; // nothing is measured
    Setup s;
    CU_ASSERT_FATAL(setup(&s));
    const int cores = cores_here();
    Spinners sp;
    CU_ASSERT(spinners_start(&sp, cores));
    CliResult r = info_quiet(&s, NULL, s.cache, NULL);
    spinners_stop(&sp);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(products_line(&r), "(measured now, on a busy machine ("));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "(this choice is not remembered: "));
    cli_result_free(&r);
    CU_ASSERT_FALSE(exists(s.cache));
    if (cores >= 2) {
        char *old_omp = set_var("OMP_NUM_THREADS", "1");
        CU_ASSERT(spinners_start(&sp, cores - 1));
        r = info_quiet(&s, NULL, s.cache, NULL);
        spinners_stop(&sp);
        free(set_var("OMP_NUM_THREADS", old_omp)), free(old_omp);
        CU_ASSERT_EQUAL(r.status, 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(products_line(&r), "(measured now, on a busy machine ("));
        cli_result_free(&r);
        CU_ASSERT_FALSE(exists(s.cache));
    }
    // the loops gone: measured again; kept if this run had the cores (the
    // tests may run beside other work, so either is right, said truly)
    r = info_quiet(&s, NULL, s.cache, NULL);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(products_line(&r), "(measured now"));
    if (strstr(r.out, "(the choice is kept in ")) {
        CU_ASSERT_TRUE(file_holds(s.cache, "# vit-from-scratch: "));
    } else {
        CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "(this choice is not remembered: "));
        CU_ASSERT_FALSE(exists(s.cache));
    }
    cli_result_free(&r);
    scratch_remove(&s.dir);
}

// A remembered answer whose figures a quick check shows to be far too low (a
// busy machine's) is measured again, and written over when the new timing is
// kept. VIT_GEMM_QUIET=0.01 keeps the check and remembers nearly any timing,
// so that the test does not depend on the machine being idle; 0 trusts the
// cache as it is.
static void test_a_cache_a_check_contradicts_is_measured_again(void) {
    if (!gemm_have_blas()) return;
    Setup s;
    CU_ASSERT_FATAL(setup(&s));
    CliResult r = info_with(&s, NULL, s.cache); // a true cache, for this machine
    CU_ASSERT_EQUAL(r.status, 0);
    cli_result_free(&r);
    char *text = read_whole_file(s.cache, NULL);
    CU_ASSERT_PTR_NOT_NULL_FATAL(text);
    char *figures = strstr(text, "\nchoice=");
    CU_ASSERT_PTR_NOT_NULL_FATAL(figures);
    char busy[2048];
    snprintf(busy, sizeof busy, "%.*s\nchoice=blas\ntiled_gflops=1.0\nblas_gflops=2.0\n"
             "small_choice=blas\nsmall_tiled_gflops=1.0\nsmall_blas_gflops=2.0\n",
             (int)(figures - text), text);
    free(text);
    write_text(s.cache, busy);
    r = info_with(&s, NULL, s.cache); // 0: trusted
    CU_ASSERT_PTR_NOT_NULL(strstr(products_line(&r), "blas (cached: measured before"));
    cli_result_free(&r);
    r = info_quiet(&s, NULL, s.cache, "0.01");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_STRING_EQUAL(r.err, "");
    const char *line = products_line(&r);
    CU_ASSERT_TRUE(starts_with(line, "blas (measured now; the cache's blas 2 GFLOP/s on "
                                     "197x768x2304 was a busy machine's: ") ||
                   starts_with(line, "tiled (measured now; the cache's blas 2 GFLOP/s on "
                                     "197x768x2304 was a busy machine's: "));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "(the choice is kept in "));
    cli_result_free(&r);
    CU_ASSERT_FALSE(file_holds(s.cache, "\nblas_gflops=2.0\n")); // rewritten
    CU_ASSERT_TRUE(file_holds(s.cache, "# vit-from-scratch: "));
    scratch_remove(&s.dir);
}

/* ------------------------------------------------- what the cache file is */

// A FIFO named as the cache: opened without waiting for a writer, refused
// as not a regular file, and left a FIFO (the code before this hung here).
static void test_a_fifo_as_the_cache_does_not_hang(void) {
    if (!gemm_have_blas()) return; // no cache is opened
    Setup s;
    CU_ASSERT_FATAL(setup(&s));
    char fifo[PATH_SIZE];
    scratch_file(&s.dir, "fifo", fifo, sizeof fifo);
    CU_ASSERT_FATAL(mkfifo(fifo, 0600) == 0);
    for (int run = 0; run < 2; run++) { // and the next run alike
        CliResult r = info_with(&s, NULL, fifo);
        CU_ASSERT_EQUAL(r.status, 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(products_line(&r), "(measured now;"));
        CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "fifo is not a regular file: left as it was;"));
        cli_result_free(&r);
    }
    struct stat st;
    CU_ASSERT_TRUE(lstat(fifo, &st) == 0 && S_ISFIFO(st.st_mode));
    scratch_remove(&s.dir);
}

// A symbolic link named as the cache is neither read nor written through,
// whether it leads to somebody's notes or to a cache of ours.
static void test_a_symbolic_link_as_the_cache_is_not_followed(void) {
    if (!gemm_have_blas()) return;
    Setup s;
    CU_ASSERT_FATAL(setup(&s));
    char notes[PATH_SIZE], link[PATH_SIZE], copy[PATH_SIZE];
    scratch_file(&s.dir, "notes.txt", notes, sizeof notes);
    scratch_file(&s.dir, "link", link, sizeof link);
    scratch_file(&s.dir, "copy", copy, sizeof copy);
    write_text(notes, "my notes\n");
    CU_ASSERT_FATAL(symlink(notes, link) == 0);
    CliResult r = info_with(&s, NULL, link);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(products_line(&r), "(measured now;"));
    CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "link is a symbolic link: left as it was;"));
    cli_result_free(&r);
    CU_ASSERT_TRUE(has_text(notes, "my notes\n"));
    // a link to a true cache: not read through either (measured), and the cache untouched
    r = info_with(&s, NULL, s.cache);
    cli_result_free(&r);
    copy_file(s.cache, copy);
    CU_ASSERT_FATAL(unlink(link) == 0 && symlink(s.cache, link) == 0);
    r = info_with(&s, NULL, link);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(products_line(&r), "(measured now;"));
    cli_result_free(&r);
    CU_ASSERT_TRUE(same_bytes(s.cache, copy));
    struct stat st;
    CU_ASSERT_TRUE(lstat(link, &st) == 0 && S_ISLNK(st.st_mode));
    scratch_remove(&s.dir);
}

// A file that is not one of its caches (no "# vit-from-scratch: " first line,
// or another user's) is never replaced: the run measures and says why.
static void test_a_file_not_of_ours_is_left_as_it_was(void) {
    if (!gemm_have_blas()) return;
    Setup s;
    CU_ASSERT_FATAL(setup(&s));
    const char *files[] = {"my notes\n", "", "# vit-from-scratch\nno space after the colon\n",
                           "garbage\n\x01\x02 not a cache"};
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        write_text(s.cache, files[i]);
        CliResult r = info_with(&s, NULL, s.cache);
        CU_ASSERT_EQUAL(r.status, 0);
        CU_ASSERT_STRING_EQUAL(r.err, "");
        CU_ASSERT_PTR_NOT_NULL(strstr(products_line(&r), "(measured now;"));
        CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "gemm-choice is not a cache of this program"));
        cli_result_free(&r);
        CU_ASSERT_TRUE(has_text(s.cache, files[i]));
    }
    if (geteuid() == 0) { // root can hand a cache of ours to another user: then it is theirs
        write_text(s.cache, "# vit-from-scratch: nobody's\n");
        CU_ASSERT_FATAL(chown(s.cache, 65534, 65534) == 0);
        CliResult r = info_with(&s, NULL, s.cache);
        CU_ASSERT_EQUAL(r.status, 0);
        CU_ASSERT_PTR_NOT_NULL(strstr(r.out, "gemm-choice belongs to another user: left as it was"));
        cli_result_free(&r);
        CU_ASSERT_TRUE(has_text(s.cache, "# vit-from-scratch: nobody's\n"));
    }
    CU_ASSERT_EQUAL(scratch_count(&s.dir), 2); // no temporary file left beside it
    scratch_remove(&s.dir);
}

/* ---------------------------------------------------------------- threads */

// `vit classify` in a scratch cache, with OMP_NUM_THREADS as given (NULL:
// unset) and any extra flags; *seconds gets how long it took.
static CliResult classify_timed(const Setup *s, const char *omp, const char *threads,
                                double *seconds) {
    char image[PATH_SIZE];
    snprintf(image, sizeof image, "%s/data/img_grey.png", VIT_TEST_DIR);
    char *old_omp = set_var("OMP_NUM_THREADS", omp), *old_cache = set_var("VIT_GEMM_CACHE", s->cache);
    const double t0 = vit_now();
    CliResult r = threads ? VIT_RUN("classify", "--weights", s->weights, "--threads", threads, image)
                          : VIT_RUN("classify", "--weights", s->weights, image);
    *seconds = vit_now() - t0;
    free(set_var("OMP_NUM_THREADS", old_omp)), free(set_var("VIT_GEMM_CACHE", old_cache));
    free(old_omp), free(old_cache);
    return r;
}

// More threads than the machine has, or than OpenBLAS was built for, are
// capped: OMP_NUM_THREADS=200 crashed `vit classify` inside OpenBLAS (built
// for 64 threads), and --threads 1000 took seconds and remembered a choice
// for 1000 threads. Both now run as a normal run does, with its result, and
// the cache they share is kept for the capped count.
static void test_thread_counts_above_the_limit_are_capped(void) {
    Setup s;
    CU_ASSERT_FATAL(setup(&s));
    const int limit = vit_thread_limit();
    double seconds;
    CliResult normal = classify_timed(&s, NULL, NULL, &seconds);
    CU_ASSERT_EQUAL_FATAL(normal.status, 0);
    const char *asked[][2] = {{"200", NULL}, {NULL, "1000"}};
    for (int i = 0; i < 2; i++) {
        CliResult r = classify_timed(&s, asked[i][0], asked[i][1], &seconds);
        CU_ASSERT_EQUAL(r.status, 0);
        CU_ASSERT_STRING_EQUAL(r.out, normal.out); // the same top classes, the same digits
        CU_ASSERT(seconds < 30);
        if (r.status != 0 || seconds >= 30)
            fprintf(stderr, "\n    OMP_NUM_THREADS=%s --threads %s: status %d after %.1f s\n",
                    asked[i][0] ? asked[i][0] : "-", asked[i][1] ? asked[i][1] : "-", r.status,
                    seconds);
        cli_result_free(&r);
    }
    cli_result_free(&normal);
    if (gemm_have_blas()) { // the cache is for the thread count the runs used
        char want[32];
        snprintf(want, sizeof want, "\nthreads=%d\n", limit);
        CU_ASSERT_TRUE(file_holds(s.cache, want));
    }
    // and `vit info` says so, and why
    char *old_omp = set_var("OMP_NUM_THREADS", "200");
    CliResult r = info_with(&s, NULL, s.cache);
    free(set_var("OMP_NUM_THREADS", old_omp)), free(old_omp);
    char want[128];
    snprintf(want, sizeof want, "compute: %d thread%s (200 asked for by OMP_NUM_THREADS; at most %d, ",
             limit, limit == 1 ? "" : "s", limit);
    if (limit < 200) CU_ASSERT_PTR_NOT_NULL(strstr(r.out, want));
    cli_result_free(&r);
    scratch_remove(&s.dir);
}

static void test_an_unknown_vit_gemm_is_named(void) {
    Setup s;
    CU_ASSERT_FATAL(setup(&s));
    CliResult r = info_with(&s, "fastest", "off");
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "VIT_GEMM=fastest is not naive, tiled, blas or auto"));
    CU_ASSERT_PTR_NULL(strstr(products_line(&r), "set by VIT_GEMM"));
    cli_result_free(&r);
    r = info_quiet(&s, NULL, "off", "lots"); // and a share that is not a number
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(r.err, "VIT_GEMM_QUIET=lots is not a share of the cores"));
    CU_ASSERT_PTR_NOT_NULL(strstr(products_line(&r), "(measured now"));
    cli_result_free(&r);
    scratch_remove(&s.dir);
}

CU_TestInfo tests_gemm_choice[] = {
    {"VIT_GEMM forces a backend", test_vit_gemm_forces_a_backend},
    {"measured once, then remembered", test_measured_once_then_remembered},
    {"a cache that does not fit is measured again", test_a_cache_that_does_not_fit_is_measured_again},
    {"each thread count keeps its answer", test_each_thread_count_keeps_its_answer},
    {"the load reading sees a busy loop", test_the_load_reading_sees_a_busy_loop},
    {"a busy measurement is not remembered", test_a_busy_measurement_is_not_remembered},
    {"busy loops keep the answer from being remembered",
     test_busy_loops_keep_the_answer_from_being_remembered},
    {"a cache a quick check contradicts is measured again",
     test_a_cache_a_check_contradicts_is_measured_again},
    {"a FIFO as the cache does not hang", test_a_fifo_as_the_cache_does_not_hang},
    {"a symbolic link as the cache is not followed", test_a_symbolic_link_as_the_cache_is_not_followed},
    {"a file not of ours is left as it was", test_a_file_not_of_ours_is_left_as_it_was},
    {"thread counts above the limit are capped", test_thread_counts_above_the_limit_are_capped},
    {"an unknown VIT_GEMM or VIT_GEMM_QUIET is named", test_an_unknown_vit_gemm_is_named},
    CU_TEST_INFO_NULL,
};
