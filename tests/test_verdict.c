/**
 * @file test_verdict.c
 * @brief The grader's records and verdicts (record.h, verdict.h): a record
 *        read back whole, a damaged one refused wherever it is cut, and the
 *        student's checks judged by lib's.
 *
 * A record is written by code under test, so reading one must survive
 * anything: every cut of a real record, lengths that lie, a shape whose
 * product overflows. The verdict must take nothing from the student's side
 * that the reference can say: the expected tensor, the tolerance, the path.
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "record.h"
#include "verdict.h"

// The bytes the record functions write while `write` runs, through a temporary file.
typedef void (*Writer)(void);
static char *written(Writer write_record, size_t *size) {
    FILE *f = tmpfile();
    CU_ASSERT_PTR_NOT_NULL_FATAL(f);
    const int before = record_start(fileno(f)); // this test may itself run in record mode
    write_record();
    record_start(before);
    const long n = lseek(fileno(f), 0, SEEK_END); // written with write(): no stdio buffer
    CU_ASSERT_FATAL(n >= 0);
    char *data = malloc((size_t)n + 1);
    CU_ASSERT_EQUAL_FATAL(pread(fileno(f), data, (size_t)n, 0), n);
    fclose(f);
    *size = (size_t)n;
    return data;
}

static float values[6] = {1, 2, 3, 4, 5, 6};
static float lib_values[6] = {1, 2, 3, 4, 5, 6.00001f};
static float wrong_values[6] = {1, 2, 3, 4, 5, 7};

static Tensor view(float *data) {
    return (Tensor){.data = data, .ndim = 2, .shape = {2, 3}, .numel = 6};
}

// A test's record: an assertion, a number, a tensor against a fixed expected side.
static void write_right(void) {
    Tensor got = view(values), want = view(values);
    record_bool(true, 10, "tests/test_x.c", "p != NULL");
    record_number(true, 12.0, 12.0, -1.0, 11, "tests/test_x.c", "CU_ASSERT_EQUAL(dot(a, b, 3),12.0f)");
    record_tensor("softmax", &got, &want, 1e-5f, 1e-4f);
    record_end();
}

static void write_wrong_tensor(void) {
    Tensor got = view(wrong_values), want = view(values);
    record_bool(true, 10, "tests/test_x.c", "p != NULL");
    record_number(true, 12.0, 12.0, -1.0, 11, "tests/test_x.c", "CU_ASSERT_EQUAL(dot(a, b, 3),12.0f)");
    record_tensor("softmax", &got, &want, 1e-5f, 1e-4f);
    record_end();
}

// A forger's: the tensor it says it compared with is its own wrong answer.
static void write_forged_expected(void) {
    Tensor got = view(wrong_values), want = view(wrong_values);
    record_bool(true, 10, "tests/test_x.c", "p != NULL");
    record_number(true, 12.0, 12.0, -1.0, 11, "tests/test_x.c", "CU_ASSERT_EQUAL(dot(a, b, 3),12.0f)");
    record_tensor("softmax", &got, &want, 1e-5f, 1e-4f);
    record_end();
}

// A right answer comparing two outputs of its own (in place against out of
// place), both a rounding away from lib's: judged by its own comparison.
static void write_own_comparison(void) {
    Tensor got = view(lib_values), want = view(lib_values);
    record_bool(true, 10, "tests/test_x.c", "p != NULL");
    record_number(true, 12.0, 12.0, -1.0, 11, "tests/test_x.c", "CU_ASSERT_EQUAL(dot(a, b, 3),12.0f)");
    record_tensor("softmax", &got, &want, 0.0f, 0.0f);
    record_end();
}

static void write_reference_own(void) { // lib's record of that same exact (0 tolerance) test
    Tensor got = view(values), want = view(values);
    record_bool(true, 10, "tests/test_x.c", "p != NULL");
    record_number(true, 12.0, 12.0, -1.0, 11, "tests/test_x.c", "CU_ASSERT_EQUAL(dot(a, b, 3),12.0f)");
    record_tensor("softmax", &got, &want, 0.0f, 0.0f);
    record_end();
}

static void write_wrong_number(void) { // says the == held; the number says otherwise
    Tensor got = view(values), want = view(values);
    record_bool(true, 10, "tests/test_x.c", "p != NULL");
    record_number(true, 0.0, 12.0, -1.0, 11, "tests/test_x.c", "CU_ASSERT_EQUAL(dot(a, b, 3),12.0f)");
    record_tensor("softmax", &got, &want, 1e-5f, 1e-4f);
    record_end();
}

static void write_failing(void) { // lib's own code failing its test: the == did not hold
    record_number(false, 0.0, 12.0, -1.0, 11, "tests/test_x.c", "CU_ASSERT_EQUAL(dot(a, b, 3),12.0f)");
    record_end();
}

static void write_early_end(void) { // an end mark before the checks: the record of a forger
    record_bool(true, 10, "tests/test_x.c", "p != NULL");
    record_end();
}

static void write_no_end(void) {
    record_bool(true, 10, "tests/test_x.c", "p != NULL");
}

// Near misses: 6 against 6.001 (100 times atol 1e-5 is 1e-3, rtol off), 6 against 7.
static float near_values[6] = {1, 2, 3, 4, 5, 6.0005f};
static void write_reference_exact(void) {
    Tensor got = view(values), want = view(values);
    record_tensor("gelu", &got, &want, 1e-5f, 0.0f);
    record_sum(true, 20, "tests/test_x.c", "");
    record_end();
}
static void write_near(void) {
    Tensor got = view(near_values), want = view(values);
    record_tensor("gelu", &got, &want, 1e-5f, 0.0f);
    record_sum(false, 20, "tests/test_x.c", "assert_tensor_close(gelu) ...");
    record_end();
}
static void write_far(void) {
    Tensor got = view(wrong_values), want = view(values);
    record_tensor("gelu", &got, &want, 1e-5f, 0.0f);
    record_sum(false, 20, "tests/test_x.c", "assert_tensor_close(gelu) ...");
    record_end();
}

static Record read_back(Writer w, bool *whole) {
    size_t size;
    char *data = written(w, &size), why[200];
    Record r;
    *whole = record_read(&r, data, size, why, sizeof why);
    free(data);
    return r;
}

static Verdict judged(Writer student, Writer reference) {
    bool whole_s, whole_r;
    Record s = read_back(student, &whole_s), r = read_back(reference, &whole_r);
    CU_ASSERT_TRUE(whole_r);
    Verdict v = verdict_judge(&s, &r);
    record_free(&s);
    record_free(&r);
    return v;
}

static void test_a_record_reads_back_whole(void) {
    bool whole;
    Record r = read_back(write_right, &whole);
    CU_ASSERT_TRUE(whole);
    CU_ASSERT_TRUE(r.ended);
    CU_ASSERT_EQUAL_FATAL(r.count, 3);
    CU_ASSERT_EQUAL(r.entries[0].kind, RECORD_BOOL);
    CU_ASSERT_EQUAL(r.entries[0].line, 10);
    CU_ASSERT_STRING_EQUAL(r.entries[0].file, "tests/test_x.c");
    CU_ASSERT_EQUAL(r.entries[1].kind, RECORD_NUMBER);
    CU_ASSERT_DOUBLE_EQUAL(r.entries[1].expected_number, 12.0, 0.0);
    CU_ASSERT_EQUAL(r.entries[2].kind, RECORD_TENSOR);
    CU_ASSERT_STRING_EQUAL(r.entries[2].text, "softmax");
    CU_ASSERT_EQUAL(r.entries[2].actual.numel, 6);
    CU_ASSERT_EQUAL(r.entries[2].actual.shape[1], 3);
    CU_ASSERT_DOUBLE_EQUAL(r.entries[2].expected.data[5], 6.0, 0.0);
    record_free(&r);
}

// Every prefix of a real record is refused (or, cut at an entry's end, read
// without its end mark), and never read past its end: ASan watches.
static void test_every_cut_is_refused(void) {
    size_t size;
    char *data = written(write_right, &size), why[200];
    for (size_t n = 0; n < size; n++) {
        char *cut = malloc(n ? n : 1); // exactly n bytes: a read past them is caught
        memcpy(cut, data, n);
        Record r;
        CU_ASSERT_FALSE(record_read(&r, cut, n, why, sizeof why));
        CU_ASSERT_FALSE(r.ended);
        record_free(&r);
        free(cut);
    }
    free(data);
}

// Lengths that lie: a huge text, a tensor of 2^31 × 2^31 × … elements, a
// kind that is none, bytes after the end mark.
static void test_lying_lengths_are_refused(void) {
    size_t size;
    char *data = written(write_right, &size), why[200];
    Record r;
    char *bad = malloc(size + 8);

    memcpy(bad, data, size);
    bad[0] = 'Q'; // no such kind
    CU_ASSERT_FALSE(record_read(&r, bad, size, why, sizeof why));
    CU_ASSERT_PTR_NOT_NULL(strstr(why, "damaged"));
    CU_ASSERT_TRUE(r.damaged);
    record_free(&r);

    memcpy(bad, data, size);
    bad[5] = (char)0xff, bad[6] = (char)0xff; // the file name's length: 65535
    CU_ASSERT_FALSE(record_read(&r, bad, size, why, sizeof why));
    record_free(&r);

    memcpy(bad, data, size);
    memcpy(bad + size, "ZZZZZZZZ", 8); // something after the end mark
    CU_ASSERT_FALSE(record_read(&r, bad, size + 8, why, sizeof why));
    CU_ASSERT_TRUE(r.damaged);
    record_free(&r);
    free(bad);
    free(data);

    // a tensor of shape (65536, 65536, 65536, 65536): the product overflows
    char forged[64];
    size_t n = 0;
    const unsigned line = 1;
    const unsigned short none = 0;
    const float tol = 0;
    forged[n++] = 'T';
    memcpy(forged + n, &line, 4), n += 4;
    memcpy(forged + n, &none, 2), n += 2;
    memcpy(forged + n, &none, 2), n += 2;
    memcpy(forged + n, &tol, 4), n += 4;
    memcpy(forged + n, &tol, 4), n += 4;
    forged[n++] = 4;
    for (int i = 0; i < 4; i++) {
        const int dim = 65536;
        memcpy(forged + n, &dim, 4), n += 4;
    }
    CU_ASSERT_FALSE(record_read(&r, forged, n, why, sizeof why));
    CU_ASSERT_EQUAL(r.count, 0);
    record_free(&r);
}

static void test_a_right_record_passes(void) {
    Verdict v = judged(write_right, write_right);
    CU_ASSERT_TRUE(v.passed);
    CU_ASSERT_EQUAL(v.checked, 3);
    CU_ASSERT_EQUAL(v.failed, 0);
}

static void test_a_wrong_tensor_fails_by_the_reference(void) {
    Verdict v = judged(write_wrong_tensor, write_right);
    CU_ASSERT_FALSE(v.passed);
    CU_ASSERT_EQUAL(v.failed, 1);
    CU_ASSERT_PTR_NOT_NULL(strstr(v.line[0], "softmax: (2, 3): 1 of 6 elements"));
}

// The student's side says it compared its answer with its answer: the
// reference's expected side decides.
static void test_a_forged_expected_side_fails(void) {
    Verdict v = judged(write_forged_expected, write_right);
    CU_ASSERT_FALSE(v.passed);
    CU_ASSERT_PTR_NOT_NULL(strstr(v.line[0], "not what lib computes"));
}

static void test_its_own_comparison_within_rounding_passes(void) {
    Verdict v = judged(write_own_comparison, write_reference_own);
    CU_ASSERT_TRUE(v.passed);
}

static void test_a_number_is_judged_not_believed(void) {
    Verdict v = judged(write_wrong_number, write_right);
    CU_ASSERT_FALSE(v.passed);
    CU_ASSERT_PTR_NOT_NULL(strstr(v.line[0], "got 0, expected 12"));
}

static void test_fewer_checks_fail(void) {
    Verdict v = judged(write_early_end, write_right);
    CU_ASSERT_FALSE(v.passed);
    CU_ASSERT_PTR_NOT_NULL(strstr(v.line[0], "the test made 1 checks with this code and 3 with lib's"));
}

static void test_no_end_mark_fails(void) {
    Verdict v = judged(write_no_end, write_right);
    CU_ASSERT_FALSE(v.passed);
    bool whole;
    Record r = read_back(write_no_end, &whole); // stopped, not damaged: the process ended early
    CU_ASSERT_FALSE(whole);
    CU_ASSERT_FALSE(r.damaged);
    record_free(&r);
}

static void test_a_failing_reference_judges_nothing(void) {
    Verdict v = judged(write_right, write_failing);
    CU_ASSERT_FALSE(v.passed);
    CU_ASSERT_TRUE(v.reference_failed);
}

// A tanh GELU where the erf one belongs is off by 4.7e-4: within 100 times the
// tolerance, a near miss (half its points); a GELU of zeros is not.
static void test_a_near_miss_is_told_from_a_miss(void) {
    Verdict near = judged(write_near, write_reference_exact);
    CU_ASSERT_FALSE(near.passed);
    CU_ASSERT_TRUE(near.near_miss);
    CU_ASSERT_EQUAL(near.listed, 1); // the sum of the comparison is not listed again
    Verdict far = judged(write_far, write_reference_exact);
    CU_ASSERT_FALSE(far.passed);
    CU_ASSERT_FALSE(far.near_miss);
    Verdict number = judged(write_wrong_number, write_right); // an == is never near
    CU_ASSERT_FALSE(number.near_miss);
    Verdict path = judged(write_early_end, write_right);
    CU_ASSERT_FALSE(path.near_miss);
}

CU_TestInfo tests_verdict[] = {
    {"a record reads back whole", test_a_record_reads_back_whole},
    {"every cut of a record is refused", test_every_cut_is_refused},
    {"lengths that lie are refused", test_lying_lengths_are_refused},
    {"a right record passes", test_a_right_record_passes},
    {"a wrong tensor fails, by the reference's expected side", test_a_wrong_tensor_fails_by_the_reference},
    {"a forged expected side fails", test_a_forged_expected_side_fails},
    {"its own comparison, within rounding of lib's, passes", test_its_own_comparison_within_rounding_passes},
    {"a number is judged, not believed", test_a_number_is_judged_not_believed},
    {"fewer checks than lib's fail", test_fewer_checks_fail},
    {"a record without its end mark fails", test_no_end_mark_fails},
    {"a reference that fails judges nothing", test_a_failing_reference_judges_nothing},
    {"a near miss is told from a miss", test_a_near_miss_is_told_from_a_miss},
    CU_TEST_INFO_NULL,
};
