/**
 * @file test_gemm_choice.c
 * @brief The default matrix product: measured once, remembered, forced by
 *        VIT_GEMM, and reported by `vit info` (lib/gemm_choice.c).
 *
 * The choice is made once per process, so each case runs the real `vit info`
 * in a process of its own with the variables set, and reads its "compute:"
 * line and the cache file it leaves. What is checked is the behaviour, not
 * which backend wins: that depends on the machine (and is `make bench`'s job).
 */
#include <CUnit/CUnit.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_run.h"
#include "gemm.h"
#include "util.h"
#include "vit.h"

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

// A cache written for another machine, a damaged one, or one that cannot be
// written: measured again, never an error.
static void test_a_cache_that_does_not_fit_is_measured_again(void) {
    if (!gemm_have_blas()) return; // nothing is measured: the case above checks that
    Setup s;
    CU_ASSERT_FATAL(setup(&s));
    static const char another_machine[] =
        "# another machine\ncpu=Some Other CPU\nblas=x\nkernel=avx2\nthreads=2\nchoice=tiled\n"
        "tiled_gflops=1.0\nblas_gflops=1.0\n";
    const char *others[] = {another_machine, "garbage\n\x01\x02 not a cache", ""};
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
    // and really busy: as many programs spinning as the run has threads, each
    // core shared by two, so the timing has about half of them
    enum { MAX_SPINNERS = 64 };
    const int threads = vit_get_threads() < MAX_SPINNERS ? vit_get_threads() : MAX_SPINNERS;
    pid_t spinner[MAX_SPINNERS];
    int started = 0;
    for (; started < threads; started++) {
        spinner[started] = fork();
        if (spinner[started] == 0) for (;;) {} // killed below
        if (spinner[started] < 0) break;
    }
    r = info_quiet(&s, NULL, s.cache, NULL); // the default share, 90 %
    for (int i = 0; i < started; i++) kill(spinner[i], SIGKILL), waitpid(spinner[i], NULL, 0);
    CU_ASSERT_EQUAL(started, threads);
    CU_ASSERT_EQUAL(r.status, 0);
    CU_ASSERT_PTR_NOT_NULL(strstr(products_line(&r), "(measured now, on a busy machine"));
    cli_result_free(&r);
    CU_ASSERT_EQUAL(scratch_count(&s.dir), 1);
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
    {"a busy measurement is not remembered", test_a_busy_measurement_is_not_remembered},
    {"an unknown VIT_GEMM or VIT_GEMM_QUIET is named", test_an_unknown_vit_gemm_is_named},
    CU_TEST_INFO_NULL,
};
