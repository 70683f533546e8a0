/**
 * @file test_viewer_export.c
 * @brief The viewer's export (viewer/export.h): .npy files identical byte for
 *        byte to numpy.save's (tests/golden/export_*.npy, written by
 *        tools/gen_golden_export.py), a safetensors file lib's reader reads
 *        back with its metadata, file names from stage names, and failures
 *        that name the file and leave nothing behind.
 */
#include <CUnit/CUnit.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../viewer/export.h"
#include "../viewer/prompt_line.h"
#include "check.h"
#include "cli_run.h"
#include "io/safetensors.h"

enum { PATH_SIZE = 512 };



// Exports @p t to DIR/NAME.npy and compares it with tests/golden/NAME.npy byte for byte.
static void expect_as_numpy(const ScratchDir *dir, const Tensor *t, const char *name) {
    char file[64], path[PATH_SIZE];
    snprintf(file, sizeof file, "%s.npy", name);
    scratch_file(dir, file, path, sizeof path);
    VitError err;
    CU_ASSERT_EQUAL_FATAL(export_npy(t, path, &err), VIT_OK);
    size_t got_size = 0, want_size = 0;
    unsigned char *got = (unsigned char *)read_whole_file(path, &got_size);
    unsigned char *want = (unsigned char *)read_whole_file(golden_path(file), &want_size);
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    CU_ASSERT_PTR_NOT_NULL_FATAL(want); // tools/gen_golden_export.py writes it
    size_t first = 0; // the first byte that differs, for the message
    while (first < got_size && first < want_size && got[first] == want[first]) first++;
    if (got_size != want_size || first < got_size)
        fprintf(stderr, "\n    %s: %zu bytes, numpy's %zu; first difference at byte %zu\n", name,
                got_size, want_size, first);
    CU_ASSERT_EQUAL(got_size, want_size);
    CU_ASSERT_EQUAL(first, want_size);
    CU_ASSERT_FATAL(got_size >= 10);
    CU_ASSERT_EQUAL(10 + (got[8] | got[9] << 8), 128); // the data starts aligned, at 128
    free(got);
    free(want);
}

static void test_npy_is_what_numpy_writes(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    // the values tools/gen_golden_export.py gives numpy, built again here
    Tensor small = tensor_new(3, 2, 3, 4);
    for (size_t i = 0; i < small.numel; i++) small.data[i] = (float)i * 0.25f - 1.0f;
    expect_as_numpy(&dir, &small, "export_small");
    Tensor vec = tensor_new(1, 5);
    for (size_t i = 0; i < vec.numel; i++) vec.data[i] = 1.5f - (float)i * 0.75f;
    expect_as_numpy(&dir, &vec, "export_vec");
    // (B, H, N, N): head 0 has the rows a, b, c, head 1 the rows c, b, a
    const float rows[3][3] = {{1, 0, 0}, {0.5f, 0.5f, 0}, {0.25f, 0.25f, 0.5f}};
    Tensor probs = tensor_new(4, 1, 2, 3, 3);
    for (int h = 0; h < 2; h++)
        for (int r = 0; r < 3; r++)
            memcpy(&probs.data[(h * 3 + r) * 3], rows[h ? 2 - r : r], sizeof rows[0]);
    expect_as_numpy(&dir, &probs, "export_probs");
    Tensor scalar = tensor_scalar(2.5f);
    expect_as_numpy(&dir, &scalar, "export_scalar");
    tensor_free(&small);
    tensor_free(&vec);
    tensor_free(&probs);
    tensor_free(&scalar);
    scratch_remove(&dir);
}

// The header's own arithmetic for shapes the goldens do not have: numpy's
// spare spaces depend on the first size's digits, the padding on the rest.
static void test_npy_header_for_long_sizes(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char path[PATH_SIZE];
    scratch_file(&dir, "wide.npy", path, sizeof path);
    Tensor t = tensor_new(2, 1, 123456);
    VitError err;
    CU_ASSERT_EQUAL_FATAL(export_npy(&t, path, &err), VIT_OK);
    size_t size = 0;
    char *got = read_whole_file(path, &size);
    CU_ASSERT_PTR_NOT_NULL_FATAL(got);
    const size_t header = 10 + ((unsigned char)got[8] | (unsigned char)got[9] << 8);
    CU_ASSERT_EQUAL(header, 128);
    CU_ASSERT_EQUAL(size, header + 123456 * sizeof(float));
    CU_ASSERT_EQUAL(got[header - 1], '\n');
    const char dict[] = "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 123456), }";
    CU_ASSERT_EQUAL(memcmp(got + 10, dict, strlen(dict)), 0);
    for (size_t i = 10 + strlen(dict); i < header - 1; i++) CU_ASSERT_EQUAL(got[i], ' ');
    free(got);
    tensor_free(&t);
    scratch_remove(&dir);
}

static void test_safetensors_reads_back_with_its_stage(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char path[PATH_SIZE];
    scratch_file(&dir, "probs.safetensors", path, sizeof path);
    Tensor t = tensor_new(4, 1, 2, 3, 3);
    for (size_t i = 0; i < t.numel; i++) t.data[i] = (float)i / 16.0f - 0.5f;
    VitError err;
    const char *stage = "blocks.3.attn.probs";
    CU_ASSERT_EQUAL_FATAL(export_safetensors(&t, stage, path, &err), VIT_OK);
    SafeTensors st;
    CU_ASSERT_EQUAL_FATAL(st_open(&st, path, &err), VIT_OK);
    CU_ASSERT_EQUAL(st.count, 1);
    const StTensor *e = st_find(&st, stage);
    CU_ASSERT_PTR_NOT_NULL_FATAL(e);
    CU_ASSERT_EQUAL(e->dtype, ST_F32);
    CU_ASSERT_EQUAL(e->ndim, 4);
    Tensor back = {0};
    CU_ASSERT_EQUAL_FATAL(st_read_tensor(&st, stage, &back, &err), VIT_OK);
    CU_ASSERT(tensor_same_shape(&back, &t));
    CU_ASSERT_EQUAL(memcmp(back.data, t.data, t.numel * sizeof(float)), 0); // bit for bit
    CU_ASSERT_PTR_NOT_NULL_FATAL(st_meta(&st, "stage"));
    CU_ASSERT_STRING_EQUAL(st_meta(&st, "stage"), stage);
    CU_ASSERT_PTR_NOT_NULL_FATAL(st_meta(&st, "producer"));
    CU_ASSERT_STRING_EQUAL(st_meta(&st, "producer"), "vitview");
    CU_ASSERT_EQUAL(st.meta_count, 2);
    st_close(&st);
    tensor_free(&back);
    tensor_free(&t);
    scratch_remove(&dir);
}

static void test_default_path_from_the_stage(void) {
    char buf[96];
    export_default_path(buf, sizeof buf, "blocks.3.attn.probs", "npy");
    CU_ASSERT_STRING_EQUAL(buf, "vitview-blocks.3.attn.probs.npy");
    export_default_path(buf, sizeof buf, "grad.blocks.11.mlp.fc1", "safetensors");
    CU_ASSERT_STRING_EQUAL(buf, "vitview-grad.blocks.11.mlp.fc1.safetensors");
    // nothing that leaves the folder or needs quoting in a shell
    export_default_path(buf, sizeof buf, "../a b/c*\xc3\xa9", "npy");
    CU_ASSERT_STRING_EQUAL(buf, "vitview-.._a_b_c___.npy");
    export_default_path(buf, sizeof buf, "", "npy");
    CU_ASSERT_STRING_EQUAL(buf, "vitview-tensor.npy");
    char small[12];
    export_default_path(small, sizeof small, "blocks.3.attn.probs", "npy");
    CU_ASSERT_STRING_EQUAL(small, "vitview-blo"); // cut, never overrun
}

static void test_failures_name_the_file_and_leave_nothing(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char missing[PATH_SIZE];
    scratch_file(&dir, "no-such-folder/x.npy", missing, sizeof missing);
    Tensor t = tensor_new(2, 2, 3);
    VitError err;
    CU_ASSERT_EQUAL(export_npy(&t, missing, &err), VIT_ERR_INPUT);
    CU_ASSERT(mentions(&err, missing, "No such file or directory"));
    CU_ASSERT_EQUAL(export_safetensors(&t, "embed", missing, &err), VIT_ERR_INPUT);
    CU_ASSERT(mentions(&err, missing, "No such file or directory"));
    CU_ASSERT_EQUAL(scratch_count(&dir), 0);
    // a folder where the file should go is not replaced
    char sub[PATH_SIZE];
    scratch_file(&dir, "sub", sub, sizeof sub);
    CU_ASSERT_EQUAL_FATAL(mkdir(sub, 0700), 0);
    CU_ASSERT_EQUAL(export_npy(&t, sub, &err), VIT_ERR_INPUT);
    CU_ASSERT(mentions(&err, sub, "is a directory"));
    CU_ASSERT_EQUAL(scratch_count(&dir), 1);
    // a tensor whose values are gone (the history dropped them): nothing is written
    char file[PATH_SIZE];
    scratch_file(&dir, "gone.npy", file, sizeof file);
    Tensor gone = t;
    gone.data = NULL;
    CU_ASSERT_EQUAL(export_npy(&gone, file, &err), VIT_ERR_INPUT);
    CU_ASSERT(mentions(&err, file, "no values"));
    CU_ASSERT_EQUAL(export_safetensors(&gone, "embed", file, &err), VIT_ERR_INPUT);
    CU_ASSERT(mentions(&err, file, "no values"));
    CU_ASSERT_EQUAL(scratch_count(&dir), 1);
    tensor_free(&t);
    scratch_remove(&dir);
}

// Exports a 4 MB tensor over @p path in a child limited to 64 KiB files (`ulimit -f`);
// returns the child's exit status: 0 when the export failed as it should.
static int export_past_file_limit(const char *path, bool npy, const char *msg_path) {
    fflush(NULL);
    pid_t pid = fork();
    CU_ASSERT_FATAL(pid >= 0);
    if (pid == 0) {
        struct rlimit rl = {64 * 1024, 64 * 1024};
        if (setrlimit(RLIMIT_FSIZE, &rl) != 0) _exit(3);
        Tensor t = tensor_new(1, 1 << 20);
        VitError err;
        VitStatus s = npy ? export_npy(&t, path, &err) : export_safetensors(&t, "x", path, &err);
        FILE *f = fopen(msg_path, "w");
        if (f) fputs(err.msg, f), fclose(f);
        tensor_free(&t);
        _exit(s == VIT_ERR_INPUT ? 0 : 5);
    }
    int status;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

static void test_existing_file_replaced_only_on_success(void) {
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char path[PATH_SIZE], msg_path[PATH_SIZE];
    scratch_file(&dir, "old.npy", path, sizeof path);
    scratch_file(&dir, "message", msg_path, sizeof msg_path);
    for (int npy = 1; npy >= 0; npy--) {
        write_text(path, "precious");
        CU_ASSERT_EQUAL(export_past_file_limit(path, npy, msg_path), 0);
        CU_ASSERT(has_text(path, "precious")); // the write failed: the old file stays
        char *msg = read_whole_file(msg_path, NULL);
        CU_ASSERT_PTR_NOT_NULL_FATAL(msg);
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, path));
        CU_ASSERT_PTR_NOT_NULL(strstr(msg, "write failed: File too large"));
        free(msg);
        CU_ASSERT_EQUAL(scratch_count(&dir), 2); // the old file and the message: no temporary
    }
    // and a complete write takes its place
    Tensor vec = tensor_new(1, 5);
    for (size_t i = 0; i < vec.numel; i++) vec.data[i] = 1.5f - (float)i * 0.75f;
    VitError err;
    CU_ASSERT_EQUAL(export_npy(&vec, path, &err), VIT_OK);
    CU_ASSERT(same_bytes(path, golden_path("export_vec.npy")));
    CU_ASSERT_EQUAL(scratch_count(&dir), 2);
    tensor_free(&vec);
    scratch_remove(&dir);
}

/* ------------------------------------------- the e prompt (prompt_line.h) */

// A small grey model like the shipped one: 28×28, patch 4, 2 blocks of 2 heads.
static const VitConfig small_cfg = {.image_size = 28, .patch_size = 4, .channels = 1, .dim = 8,
                                    .depth = 2, .heads = 2, .mlp_dim = 16, .num_classes = 10,
                                    .ln_eps = 1e-6f};

static void record(void *user, const char *name, const Tensor *t) {
    State *s = user;
    const int node = stepper_find(&s->stepper, name);
    if (node >= 0) history_record(&s->history, node, t, 0);
}

// A state showing blocks.0.resid1, (1, 50, 8), of one forward pass of the model.
static void state_showing_a_stage(State *s, Vit *vit) {
    const VitInit init = {.seed = 5, .std = 0.3f, .bias_std = 0.1f, .norm_std = 0.1f};
    VitError err;
    CU_ASSERT_EQUAL_FATAL(vit_build_random(vit, &small_cfg, &init, &err), VIT_OK);
    state_init(s, &vit->config, 1 << 22);
    Tensor x = tensor_new(4, 1, 1, 28, 28);
    for (size_t i = 0; i < x.numel; i++) x.data[i] = (float)(i % 7) * 0.1f;
    CU_ASSERT_EQUAL_FATAL(vit_forward(vit, &x, record, s, &err), VIT_OK);
    tensor_free(&x);
    s->stepper.selected = stepper_find(&s->stepper, "blocks.0.resid1");
    s->stepper.sel_header = false;
    CU_ASSERT_FATAL(s->stepper.selected >= 0);
}

// Types @p text into the line as keys, one character at a time; how many were kept.
static size_t type_keys(State *s, const char *text) {
    size_t kept = 0;
    for (; *text; text++) kept += prompt_line_type(s, (unsigned char)*text);
    return kept;
}

// Entries in a folder, "." and ".." aside.
static int entries(const char *folder) {
    DIR *d = opendir(folder);
    if (!d) return -1;
    int n = 0;
    for (const struct dirent *e; (e = readdir(d));)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

// A name of 320 characters, longer than the 255 the line once held, is written
// under that name, whole: cut at 255 it was written as another file.
static void test_prompt_exports_under_the_whole_name(void) {
    State s;
    Vit vit;
    state_showing_a_stage(&s, &vit);
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    char folder[PATH_SIZE], name[2 * PATH_SIZE];
    snprintf(folder, sizeof folder, "%s/%0150d", dir.path, 0); // 150 '0's: a long folder name
    CU_ASSERT_EQUAL_FATAL(mkdir(folder, 0700), 0);
    snprintf(name, sizeof name, "%s/%0160d.npy", folder, 1); // a long file name in it
    CU_ASSERT_FATAL(strlen(name) > 300);
    prompt_line_open(&s, PROMPT_EXPORT);
    CU_ASSERT_EQUAL(type_keys(&s, name), strlen(name));
    CU_ASSERT_FALSE(s.prompt_overflow);
    prompt_line_export(&s);
    CU_ASSERT_PTR_NOT_NULL(strstr(s.message, "wrote …"));   // the end of the name, shown
    CU_ASSERT_PTR_NOT_NULL(strstr(s.message, "01.npy (blocks.0.resid1, 400 values)"));
    size_t size = 0;
    char *got = read_whole_file(name, &size);
    CU_ASSERT_PTR_NOT_NULL(got);
    CU_ASSERT_EQUAL(size, 128 + 400 * sizeof(float)); // the header and (1, 50, 8) floats
    free(got);
    CU_ASSERT_EQUAL(entries(folder), 1); // that file, and no other
    scratch_remove(&dir);
    state_free(&s);
    vit_free(&vit);
}

// More than the line holds (PATH_MAX − 1 characters, as long as a path may be) is
// refused as it is typed, and the line is then refused whole: no file is written
// under the part that fitted.
static void test_prompt_refuses_a_name_longer_than_the_line(void) {
    State s;
    Vit vit;
    state_showing_a_stage(&s, &vit);
    ScratchDir dir;
    CU_ASSERT_FATAL(scratch_make(&dir));
    const size_t room = sizeof s.prompt - 1;
    char *name = malloc(room + 64);
    CU_ASSERT_PTR_NOT_NULL_FATAL(name);
    int n = snprintf(name, room + 64, "%s/", dir.path);
    while ((size_t)n < room + 10) name[n++] = 'x'; // a file name past the line's end
    name[n] = '\0';
    prompt_line_open(&s, PROMPT_EXPORT);
    CU_ASSERT_EQUAL(type_keys(&s, name), room); // what fits, and not one more
    CU_ASSERT_EQUAL(strlen(s.prompt), room);
    CU_ASSERT_TRUE(s.prompt_overflow);
    CU_ASSERT_PTR_NOT_NULL(strstr(s.message, "the line is full"));
    prompt_line_export(&s);
    CU_ASSERT_PTR_NOT_NULL(strstr(s.message, "nothing done"));
    prompt_line_erase(&s); // taking a character back does not make it what was typed
    prompt_line_export(&s);
    CU_ASSERT_PTR_NOT_NULL(strstr(s.message, "nothing done"));
    CU_ASSERT_EQUAL(scratch_count(&dir), 0);
    // a new line starts empty and whole
    prompt_line_open(&s, PROMPT_EXPORT);
    CU_ASSERT_FALSE(s.prompt_overflow);
    CU_ASSERT_STRING_EQUAL(s.prompt, "");
    free(name);
    scratch_remove(&dir);
    state_free(&s);
    vit_free(&vit);
}

CU_TestInfo tests_viewer_export[] = {
    {"npy is what numpy.save writes", test_npy_is_what_numpy_writes},
    {"npy header for long sizes", test_npy_header_for_long_sizes},
    {"safetensors reads back with its stage", test_safetensors_reads_back_with_its_stage},
    {"default path from the stage", test_default_path_from_the_stage},
    {"failures name the file and leave nothing", test_failures_name_the_file_and_leave_nothing},
    {"existing file replaced only on success", test_existing_file_replaced_only_on_success},
    {"the e prompt exports under the whole name", test_prompt_exports_under_the_whole_name},
    {"the e prompt refuses a name longer than its line",
     test_prompt_refuses_a_name_longer_than_the_line},
    CU_TEST_INFO_NULL,
};
