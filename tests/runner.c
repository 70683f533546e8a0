/**
 * @file runner.c
 * @brief One CUnit runner for every suite: `build/tests/run [SUITE[/TEST]]...`,
 *        and the grader: `build/tests/run --grade [options] SUITE[/TEST]...`.
 *
 * The suite table comes from suites.h, which the Makefile generates from the
 * names of the tests/test_*.c files. With no argument every suite runs; with
 * arguments only the named suites (or single tests) run, which is how a class
 * checks one exercise: `build/tests/run ch03_softmax`. A name that matches
 * nothing stops the run (exit 2) and lists the suites there are.
 * `--except PATTERN` (any number of them, before the names) leaves out each
 * test whose "suite/test" name matches the shell pattern: `make test` leaves
 * out each chapter's "chapter matches PyTorch golden", which its exercise
 * checks run twice (lib's own answers to each exercise's key, graded).
 * Exit status: 0 when everything ran and passed, 1 otherwise, 2 bad usage.
 *
 * `--grade` runs the selected tests one by one, each in a process of its own
 * with a time limit, and scores them (grade.h): that is what `make exercise`
 * runs, with a student's functions linked in place of lib's.
 */
#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>
#include <fnmatch.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "grade.h"
#include "run_suites.h"
#include "base/util.h"

#define SUITE(name) extern CU_TestInfo tests_##name[];
#include "suites.h"
#undef SUITE

static CU_SuiteInfo all_suites[] = {
#define SUITE(name) {#name, NULL, NULL, NULL, NULL, tests_##name},
#include "suites.h"
#undef SUITE
    CU_SUITE_INFO_NULL,
};

// Is test t of suite s one that a --except pattern names?
static bool excepted(CU_pSuite s, CU_pTest t, char *const *patterns, int n) {
    char name[1024];
    snprintf(name, sizeof name, "%s/%s", s->pName, t->pName);
    for (int i = 0; i < n; i++)
        if (fnmatch(patterns[i], name, 0) == 0) return true;
    return false;
}

// Keep only the suites and tests named ("suite" or "suite/test"; all of them
// when none is), less those a --except pattern names.
static bool select_tests(char **names, int n_names, char *const *except, int n_except) {
    GradeTest *keep = NULL;
    int n = n_names > 0 ? grade_select(&keep, (const char *const *)names, n_names, "run") : 0;
    if (n < 0) return false;
    int left_out = 0;
    for (CU_pSuite s = CU_get_registry()->pSuite; s; s = s->pNext) {
        bool any = false;
        for (CU_pTest t = s->pTest; t; t = t->pNext) {
            bool on = n_names == 0;
            for (int i = 0; i < n && !on; i++) on = keep[i].test == t;
            if (on && excepted(s, t, except, n_except)) on = false, left_out++;
            CU_set_test_active(t, on ? CU_TRUE : CU_FALSE);
            any = any || on;
        }
        CU_set_suite_active(s, any ? CU_TRUE : CU_FALSE);
    }
    free(keep);
    if (n_except > 0) printf("run: %d tests left out by --except\n", left_out);
    return true;
}

// The default matrix product is measured once and remembered (lib/gemm/gemm_choice.c);
// the tests keep that memory beside the runner, in the build tree, rather than in
// the user's ~/.cache. The `vit` and `vitview` runs of the tests inherit it.
// They also remember a timing however busy the machine is (VIT_GEMM_QUIET=0):
// otherwise, beside other work, each `vit` a test starts would time the
// backends again and could pick the other one, and two runs a test expects to
// agree bit for bit would not. (The busy case has tests of its own.)
static void keep_gemm_choice_in_build(void) {
    if (!getenv("VIT_GEMM_QUIET")) setenv("VIT_GEMM_QUIET", "0", 1);
    char exe[1024];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (getenv("VIT_GEMM_CACHE") || n <= 0) return;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash) return;
    snprintf(slash + 1, sizeof exe - (size_t)(slash + 1 - exe), "gemm-choice");
    setenv("VIT_GEMM_CACHE", exe, 1);
}

// OpenMP's threads sleep while they wait (lib's util.c sets OMP_WAIT_POLICY=passive
// before main(), here as in every program): on a busy machine, spinning threads
// burned the cores the others were waiting for, and a suite of 8 s took minutes.
// Every process the runner starts (a graded test, `vit` from a test) inherits it.

int main(int argc, char **argv) {
    if (argc > 1 && strcmp(argv[1], "--help") == 0) {
        printf("usage: %s [--except PATTERN]... [SUITE[/TEST]]...\n"
               "                                     run the tests (all of them by default), less\n"
               "                                     those whose SUITE/TEST matches a PATTERN\n"
               "       %s --grade [options] SUITE... grade them, each in a process of its own\n"
               "                                     (%s --grade --help)\n",
               argv[0], argv[0], argv[0]);
        return 0;
    }
    keep_gemm_choice_in_build();
    if (CU_initialize_registry() != CUE_SUCCESS) return 1;
    if (CU_register_suites(all_suites) != CUE_SUCCESS) {
        fprintf(stderr, "run: cannot register suites: %s\n", CU_get_error_msg());
        CU_cleanup_registry();
        return 1;
    }
    if (argc > 1 && strcmp(argv[1], "--record") == 0) {
        int status = grade_record_main(argv[0], argc - 2, argv + 2);
        CU_cleanup_registry();
        return status;
    }
    if (argc > 1 && strcmp(argv[1], "--grade") == 0) {
        int status = grade_main(argv[0], argc - 2, argv + 2);
        CU_cleanup_registry();
        return status;
    }
    // the plain run: [--except PATTERN]... [SUITE[/TEST]]...
    char *except[64];
    int n_except = 0, first = 1;
    while (first + 1 < argc && strcmp(argv[first], "--except") == 0 && n_except < 64) {
        except[n_except++] = argv[first + 1];
        first += 2;
    }
    if (argc > 1 && !select_tests(argv + first, argc - first, except, n_except)) {
        CU_cleanup_registry();
        return 2;
    }
    const int status = run_suites();
    CU_cleanup_registry();
    return status;
}
