/**
 * @file runner.c
 * @brief One CUnit runner for every suite: `build/tests/run [SUITE[/TEST]]...`,
 *        and the grader: `build/tests/run --grade [options] SUITE[/TEST]...`.
 *
 * The suites are registered in the book's order, from the one table of them,
 * book_order.h (the Makefile stops while a tests/test_*.c file has no row
 * there), so they run and report in that order and the first failure printed
 * is at the earliest stage of the book that is wrong. With no argument every
 * suite runs; with arguments only the named suites (or single tests) run,
 * which is how a class checks one exercise: `build/tests/run ch03_softmax`. A
 * name that matches nothing stops the run (exit 2) and lists the suites there
 * are. `--up-to NN` runs the stages down to chapter NN's (book_place.h): what
 * must work by the end of that chapter. `--list` prints the suites that would
 * run, in order, each with its chapter and stage, and runs none.
 * `--except PATTERN` (any number of them, before the names) leaves out each
 * test whose "suite/test" name matches the shell pattern: `make test` leaves
 * out each chapter's "chapter matches PyTorch golden", which its exercise
 * checks run (lib's own answers to each exercise's key, graded).
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

#include "book_place.h"
#include "grade.h"
#include "run_suites.h"
#include "base/util.h"

#define BOOK_SUITE(name, chapter, stage) extern CU_TestInfo tests_##name[];
#include "book_order.h"
#undef BOOK_SUITE

// in the book's order: the order they run and report in
static CU_SuiteInfo all_suites[] = {
#define BOOK_SUITE(name, chapter, stage) {#name, NULL, NULL, NULL, NULL, tests_##name},
#include "book_order.h"
#undef BOOK_SUITE
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

// The plain run's options, which come before the names:
// [--except PATTERN]... [--up-to NN] [--list] [SUITE[/TEST]]...
typedef struct {
    char *except[64]; // --except patterns
    int n_except;
    int up_to;        // --up-to's chapter; 0: every stage
    bool list;        // --list: print the suites, run none
    char **names;     // the suites and tests named
    int n_names;
} RunOptions;

// Reads the options; false (said why on stderr) on bad usage.
static bool read_options(RunOptions *o, int argc, char **argv) {
    int i = 1;
    for (; i < argc && strncmp(argv[i], "--", 2) == 0; i++) {
        const char *value = i + 1 < argc ? argv[i + 1] : NULL;
        const bool takes_value = strcmp(argv[i], "--except") == 0 || strcmp(argv[i], "--up-to") == 0;
        if (takes_value && !value) {
            fprintf(stderr, "run: %s needs a value (%s --help)\n", argv[i], argv[0]);
            return false;
        }
        if (strcmp(argv[i], "--list") == 0) {
            o->list = true;
        } else if (strcmp(argv[i], "--except") == 0) {
            if (o->n_except == 64) {
                fprintf(stderr, "run: at most 64 --except patterns\n");
                return false;
            }
            o->except[o->n_except++] = argv[++i];
        } else if (strcmp(argv[i], "--up-to") == 0) {
            o->up_to = book_chapter_named(argv[++i]);
            if (o->up_to == 0) {
                fprintf(stderr, "run: --up-to %s names no chapter: give a chapter from 01 to %02d, "
                                "as in make test CH=05\n", argv[i], book_chapters());
                return false;
            }
        } else {
            fprintf(stderr, "run: %s is not an option of the plain run (%s --help)\n", argv[i],
                    argv[0]);
            return false;
        }
    }
    o->names = argv + i, o->n_names = argc - i;
    if (o->up_to > 0 && o->n_names > 0) {
        fprintf(stderr, "run: --up-to chooses the suites itself: name no suite with it\n");
        return false;
    }
    return true;
}

// Keep only the suites and tests named ("suite" or "suite/test"; all of them
// when none is), or those of the stages --up-to keeps, less those a --except
// pattern names.
static bool select_tests(const RunOptions *o) {
    GradeTest *keep = NULL;
    int n = o->n_names > 0
                ? grade_select(&keep, (const char *const *)o->names, o->n_names, "run") : 0;
    if (n < 0) return false;
    int left_out = 0, suites = 0;
    for (CU_pSuite s = CU_get_registry()->pSuite; s; s = s->pNext) {
        bool any = false;
        const bool in_stages = o->up_to == 0 || book_up_to(s->pName, o->up_to);
        for (CU_pTest t = s->pTest; t; t = t->pNext) {
            bool on = o->n_names == 0 && in_stages;
            for (int i = 0; i < n && !on; i++) on = keep[i].test == t;
            if (on && excepted(s, t, o->except, o->n_except)) on = false, left_out++;
            CU_set_test_active(t, on ? CU_TRUE : CU_FALSE);
            any = any || on;
        }
        CU_set_suite_active(s, any ? CU_TRUE : CU_FALSE);
        suites += any ? 1 : 0;
    }
    free(keep);
    if (o->n_except > 0) printf("run: %d tests left out by --except\n", left_out);
    if (o->up_to > 0)
        printf("run: up to chapter %02d, %s: %d suites (lib's base and chapters 01 to %02d; "
               "the later chapters' and the programs' suites left out)\n",
               o->up_to, book_chapter_stage(o->up_to), suites, o->up_to);
    return true;
}

// --list: the suites that would run, in order, each with its chapter and stage.
static void list_suites(void) {
    for (CU_pSuite s = CU_get_registry()->pSuite; s; s = s->pNext) {
        const BookPlace *p = book_place(s->pName);
        if (!s->fActive || !p) continue;
        char chapter[12] = "--";
        if (p->chapter > 0) snprintf(chapter, sizeof chapter, "%02d", p->chapter);
        printf("%s  %-28s %s\n", chapter, p->stage, s->pName);
    }
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
        printf("usage: %s [--except PATTERN]... [--up-to NN] [--list] [SUITE[/TEST]]...\n"
               "                                     run the tests (all of them by default), in\n"
               "                                     the book's order, less those whose SUITE/TEST\n"
               "                                     matches a PATTERN; --up-to NN: only the\n"
               "                                     stages down to chapter NN's; --list: print\n"
               "                                     the suites, each with its chapter and stage\n"
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
    if (argc > 1 && strcmp(argv[1], "--serve") == 0) {
        int status = grade_serve_main(argv[0], argc - 2, argv + 2);
        CU_cleanup_registry();
        return status;
    }
    if (argc > 1 && strcmp(argv[1], "--grade") == 0) {
        int status = grade_main(argv[0], argc - 2, argv + 2);
        CU_cleanup_registry();
        return status;
    }
    // the plain run
    RunOptions options = {0};
    if (!read_options(&options, argc, argv) || !select_tests(&options)) {
        CU_cleanup_registry();
        return 2;
    }
    if (options.list) {
        list_suites();
        CU_cleanup_registry();
        return 0;
    }
    const int status = run_suites();
    CU_cleanup_registry();
    return status;
}
