/**
 * @file runner.c
 * @brief One CUnit runner for every suite: `build/tests/run [SUITE[/TEST]]...`.
 *
 * The suite table comes from suites.h, which the Makefile generates from the
 * names of the tests/test_*.c files. With no argument every suite runs; with
 * arguments only the named suites (or single tests) run, which is how a class
 * checks one exercise: `build/tests/run ch03_softmax`.
 * Exit status: 0 when everything ran and passed, 1 otherwise.
 */
#include <CUnit/Basic.h>
#include <CUnit/CUnit.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#define SUITE(name) extern CU_TestInfo tests_##name[];
#include "suites.h"
#undef SUITE

static CU_SuiteInfo all_suites[] = {
#define SUITE(name) {#name, NULL, NULL, NULL, NULL, tests_##name},
#include "suites.h"
#undef SUITE
    CU_SUITE_INFO_NULL,
};

// Keep only the suites and tests named on the command line ("suite" or "suite/test").
static int select_tests(int argc, char **argv) {
    int matched = 0;
    for (CU_pSuite s = CU_get_registry()->pSuite; s; s = s->pNext) {
        bool any_suite = false;
        for (CU_pTest t = s->pTest; t; t = t->pNext) {
            bool keep = false;
            for (int i = 1; i < argc; i++) {
                const char *slash = strchr(argv[i], '/');
                size_t len = slash ? (size_t)(slash - argv[i]) : strlen(argv[i]);
                if (strlen(s->pName) != len || strncmp(s->pName, argv[i], len) != 0) continue;
                if (!slash || strcmp(slash + 1, t->pName) == 0) keep = true;
            }
            CU_set_test_active(t, keep ? CU_TRUE : CU_FALSE);
            if (keep) { any_suite = true; matched++; }
        }
        CU_set_suite_active(s, any_suite ? CU_TRUE : CU_FALSE);
    }
    return matched;
}

int main(int argc, char **argv) {
    if (CU_initialize_registry() != CUE_SUCCESS) return 1;
    if (CU_register_suites(all_suites) != CUE_SUCCESS) {
        fprintf(stderr, "run: cannot register suites: %s\n", CU_get_error_msg());
        CU_cleanup_registry();
        return 1;
    }
    if (argc > 1 && select_tests(argc, argv) == 0) {
        fprintf(stderr, "run: no suite or test matches; suites are:");
        for (CU_pSuite s = CU_get_registry()->pSuite; s; s = s->pNext)
            fprintf(stderr, " %s", s->pName);
        fprintf(stderr, "\n");
        CU_cleanup_registry();
        return 2;
    }
    CU_basic_set_mode(CU_BRM_VERBOSE);
    CU_basic_run_tests();
    unsigned failures = CU_get_number_of_failures();
    unsigned failed_runs = CU_get_number_of_suites_failed() + CU_get_number_of_tests_failed();
    CU_cleanup_registry();
    return (failures || failed_runs) ? 1 : 0;
}
