/**
 * @file bench.c
 * @brief `make bench`: how fast is each matrix-multiplication backend, a
 *        whole ViT-B/16 forward pass, a training step of a small ViT, and
 *        reading a huge safetensors header?
 *
 * Usage: `build/bench [--threads N] [--kernel K] [--train-result FILE] [--vit-result FILE]
 *        [SECTION...]`
 *
 * Prints, for each section, a table. A product (M,K)·(K,N) costs
 * \f$2MKN\f$ floating-point operations (one multiply and one add per term), so
 * GFLOP/s = 2·M·K·N / seconds / 10⁹. Each figure is the median of several
 * runs after one warm-up run (the warm-up pays for page faults, thread start
 * and cold caches, which a real program pays once). The safetensors section
 * times st_parse() per header entry instead, without a warm-up: a program
 * parses its weights file once. The training section times forward,
 * backward and optimizer of each step separately, and writes its fastest
 * row to --train-result FILE, where tools/bench_torch_train.py (PyTorch
 * doing the same step, run by `make bench` beside this program) reads it.
 * The lowp section times the int8 and bf16 products (gemm_lowp.h) on each
 * path this CPU runs beside the float product of the same shape: GOPS for
 * int8 counts its multiply-adds as float's GFLOP/s does (2·M·K·N).
 * The blas-kernels section runs OpenBLAS with each kernel set this CPU can
 * run, the vit section the ViT-B/16 forward at batch 1 and 8 and `vit
 * classify`'s peak memory, and the targets section compares them with the
 * speed targets, writing --vit-result FILE for tools/bench_torch_vit.py
 * (torchvision's vit_b_16 at its best thread setting, beside ours). Where a
 * target is a ratio of two speeds, the two are timed in turn in one process
 * (forward_beside_square(), the blas-kernels probes), so that the machine's
 * drift from minute to minute does not enter the ratio.
 *
 * Sections run in the order of the `sections` table; naming sections on the
 * command line runs only those. A new section is one function and one row.
 */
#include <cJSON.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/fileio.h"
#include "gemm/gemm.h"
#include "gemm/gemm_lowp.h"
#include "ops/ops.h"
#include "train/optim.h"
#include "base/rng.h"
#include "io/safetensors.h"
#include "train/shards.h"
#include "model/trace_stages.h"
#include "model/trace_timing.h"
#include "base/util.h"
#include "model/vit.h"

/* ------------------------------------------------------------- timing */

enum { MAX_RUNS = 50 };

static int compare_doubles(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

// The median of n ≥ 1 times (sorts them).
static double median_of(double *times, int n) {
    qsort(times, (size_t)n, sizeof times[0], compare_doubles);
    return n % 2 ? times[n / 2] : 0.5 * (times[n / 2 - 1] + times[n / 2]);
}

/** Something to time: one call does the whole piece of work once. */
typedef struct {
    void (*run)(void *user);
    void *user;
} Workload;

/**
 * Median seconds of one call to @p w: an untimed warm-up call (if @p warm_up),
 * then at least @p min_runs timed calls, more while the total stays under
 * @p budget seconds (up to MAX_RUNS).
 */
static double median_seconds(Workload w, bool warm_up, int min_runs, double budget) {
    double times[MAX_RUNS];
    if (warm_up) w.run(w.user);
    int n = 0;
    double spent = 0;
    while (n < MAX_RUNS && (n < min_runs || (n > 0 && spent + times[n - 1] < budget))) {
        double t0 = vit_now();
        w.run(w.user);
        times[n] = vit_now() - t0;
        spent += times[n++];
    }
    return median_of(times, n);
}

/* ------------------------------------------------------------- figures */

/** What the sections measured, for the targets section and --vit-result. */
typedef struct {
    double tiled[3], blas[3];   // GFLOP/s on qkv, fc2 and the large square product (0: not run)
    double blas_core_best[3];   // the best over OpenBLAS's kernels this CPU runs (blas-kernels)
    double tiled_beside_best[3]; // tiled, timed in turn with that best kernel in its process
    char best_core[32];         // the kernel that was best on qkv
    double batch1_ms, batch1_gflops, batch8_images_per_s; // ViT-B/16, the default backend
    double side_forward, side_square; // GFLOP/s of the forward and of our 1024^3, side by side
    double side_ratio;                // the median of their ratios, round by round
    double classify_rss_mb, weights_mb;
} Figures;
enum { QKV, FC2, SQUARE };
static Figures fig;
static const char *vit_result_path; // --vit-result FILE, or NULL

// A --train-result / --vit-result file, written as every output of the project is
// (fileio.h: a temporary file renamed over it; never over an input or a
// non-regular file); the benchmark stops with the message when it cannot.
static void write_result(const char *path, const char *text) {
    OutFile o;
    VitError err;
    if (outfile_open(&o, path, &err) != VIT_OK ||
        outfile_commit(&o, fputs(text, o.f) >= 0, &err) != VIT_OK) {
        fprintf(stderr, "bench: %s\n", err.msg);
        exit(1);
    }
}

/* ---------------------------------------------------------------- GEMM */

/** One product to time: out (M,N) = a (M,K) · b, b being (K,N) or (N,K). */
typedef struct {
    const char *label;  // e.g. "ViT-B qkv"
    int M, K, N;
    bool b_transposed;  // true: matmul_bt, b is (N,K) like a Linear weight
    float *a, *b, *out;
    GemmBackend backend;
} GemmCase;

static void run_gemm_case(void *user) {
    const GemmCase *c = user;
    gemm_set_backend(c->backend);
    if (c->b_transposed) matmul_bt(c->out, c->a, c->b, c->M, c->K, c->N);
    else matmul(c->out, c->a, c->b, c->M, c->K, c->N);
}

// GFLOP/s of one backend on one case.
static double gemm_gflops(GemmCase *c, GemmBackend backend) {
    c->backend = backend;
    // naive takes seconds per call, which dwarfs any warming up: 3 runs; the
    // fast ones get a warm-up and up to a second of runs for a stable median
    bool slow = backend == GEMM_NAIVE;
    double seconds =
        median_seconds((Workload){run_gemm_case, c}, !slow, slow ? 3 : 5, slow ? 0 : 1.0);
    return 2.0 * c->M * c->K * c->N / seconds * 1e-9;
}

// Largest |x - y| over n values, to show that the fast backends agree.
static double max_abs_diff(const float *x, const float *y, size_t n) {
    double worst = 0;
    for (size_t i = 0; i < n; i++) worst = fmax(worst, fabs((double)x[i] - (double)y[i]));
    return worst;
}

// Times naive, tiled and (when built in) blas on one product and prints a row;
// the GFLOP/s go to fig under index `row`.
static void bench_gemm_case(const char *label, int M, int K, int N, bool b_transposed, int row) {
    size_t a_n = (size_t)M * K, b_n = (size_t)K * N, out_n = (size_t)M * N;
    float *a = vit_malloc(a_n * sizeof(float)), *b = vit_malloc(b_n * sizeof(float));
    float *out = vit_malloc(out_n * sizeof(float)), *ref = vit_malloc(out_n * sizeof(float));
    Rng rng;
    rng_seed(&rng, 42);
    rng_fill_uniform(&rng, a, a_n, -1.0f, 1.0f);
    rng_fill_uniform(&rng, b, b_n, -1.0f, 1.0f);

    GemmCase c = {label, M, K, N, b_transposed, a, b, out, GEMM_NAIVE};
    double naive = gemm_gflops(&c, GEMM_NAIVE);
    memcpy(ref, out, out_n * sizeof(float));
    double tiled = gemm_gflops(&c, GEMM_TILED);
    double diff_tiled = max_abs_diff(out, ref, out_n);
    double blas = NAN, diff_blas = NAN;
    if (gemm_have_blas()) {
        blas = gemm_gflops(&c, GEMM_BLAS);
        diff_blas = max_abs_diff(out, ref, out_n);
    }

    fig.tiled[row] = tiled;
    fig.blas[row] = gemm_have_blas() ? blas : 0;
    char shape[48];
    snprintf(shape, sizeof shape, "%dx%dx%d", M, K, N);
    printf("  %-21s %-10s %-15s %8.1f %8.1f", label, b_transposed ? "matmul_bt" : "matmul",
           shape, naive, tiled);
    if (gemm_have_blas()) printf(" %8.1f %11.1fx %10.2fx   %.1e / %.1e\n", blas, tiled / naive,
                                 blas / tiled, diff_tiled, diff_blas);
    else printf(" %8s %11.1fx %11s   %.1e\n", "-", tiled / naive, "-", diff_tiled);
    fflush(stdout);
    free(a);
    free(b);
    free(out);
    free(ref);
}

static void bench_gemm(void) {
    printf("GEMM: GFLOP/s = 2·M·K·N / seconds / 1e9; median of 5+ runs after a warm-up"
           " (naive: of 3 runs)\n");
    printf("  %-21s %-10s %-15s %8s %8s %8s %12s %11s   %s\n", "product", "function", "MxKxN",
           "naive", "tiled", "blas", "tiled/naive", "blas/tiled",
           "max|diff| vs naive: tiled / blas");
    // x (197,768) · W (2304,768)ᵀ: the fused q,k,v projection of one ViT-B/16 image;
    // h (197,3072) · W (768,3072)ᵀ: its MLP's second layer, the longest sum
    bench_gemm_case("ViT-B qkv projection", 197, 768, 2304, true, QKV);
    bench_gemm_case("ViT-B mlp.fc2", 197, 3072, 768, true, FC2);
    bench_gemm_case("square", 1024, 1024, 1024, false, SQUARE);
    gemm_use_choice(); // back to the defaults, by size
    printf("\n");
}

/* ------------------------------------------------- smaller numbers */

/** One int8 or bf16 product to time on one path: out (M,N) = a (M,K) · b (N,K)ᵀ. */
typedef struct {
    int M, K, N;
    const char *path;   // "fp32", "int8 portable", "int8 vnni", "bf16 portable", "bf16 avx512"
    const float *af, *bf;
    float *out;
    const int8_t *a8, *b8;
    const int32_t *b8_sums;
    int32_t *out32;
    const uint16_t *a16, *b16;
} LowpCase;

static void run_lowp_case(void *user) {
    const LowpCase *c = user;
    if (strcmp(c->path, "fp32") == 0) matmul_bt(c->out, c->af, c->bf, c->M, c->K, c->N);
    else if (strcmp(c->path, "int8 portable") == 0) gemm_s8_bt_portable(c->out32, c->a8, c->b8, c->M, c->K, c->N);
    else if (strcmp(c->path, "int8 vnni") == 0) gemm_s8_bt_vnni(c->out32, c->a8, c->b8, c->b8_sums, c->M, c->K, c->N);
    else if (strcmp(c->path, "bf16 portable") == 0) gemm_bf16_bt_portable(c->out, c->a16, c->b16, c->M, c->K, c->N);
    else gemm_bf16_bt_avx512(c->out, c->a16, c->b16, c->M, c->K, c->N);
}

// Billions of multiply-adds ×2 per second (GFLOP/s for float, GOPS for int8), or 0 for a path this CPU lacks.
static double lowp_rate(LowpCase *c, const char *path, bool cpu_has) {
    if (!cpu_has) return 0;
    c->path = path;
    const double seconds = median_seconds((Workload){run_lowp_case, c}, true, 5, 1.0);
    return 2.0 * c->M * c->K * c->N / seconds * 1e-9;
}

static void bench_lowp_case(const char *label, int M, int K, int N) {
    const size_t a_n = (size_t)M * K, b_n = (size_t)N * K, out_n = (size_t)M * N;
    float *af = vit_malloc(a_n * sizeof(float)), *bf = vit_malloc(b_n * sizeof(float));
    float *out = vit_malloc(out_n * sizeof(float));
    int8_t *a8 = vit_malloc(a_n), *b8 = vit_malloc(b_n);
    float *a_scales = vit_malloc((size_t)M * sizeof(float)), *b_scales = vit_malloc((size_t)N * sizeof(float));
    int32_t *sums = vit_malloc((size_t)N * sizeof(int32_t)), *out32 = vit_malloc(out_n * sizeof(int32_t));
    uint16_t *a16 = vit_malloc(a_n * sizeof(uint16_t)), *b16 = vit_malloc(b_n * sizeof(uint16_t));
    Rng rng;
    rng_seed(&rng, 42);
    rng_fill_uniform(&rng, af, a_n, -1.0f, 1.0f);
    rng_fill_uniform(&rng, bf, b_n, -1.0f, 1.0f);
    quantize_rows_s8(a8, a_scales, af, M, K);
    quantize_rows_s8(b8, b_scales, bf, N, K);
    gemm_s8_row_sums(sums, b8, N, K);
    bf16_from_floats(a16, af, a_n);
    bf16_from_floats(b16, bf, b_n);

    LowpCase c = {M, K, N, "", af, bf, out, a8, b8, sums, out32, a16, b16};
    const double fp32 = lowp_rate(&c, "fp32", true);
    const double s8 = lowp_rate(&c, "int8 portable", true);
    const double vnni = lowp_rate(&c, "int8 vnni", gemm_cpu_has_vnni());
    const double b16p = lowp_rate(&c, "bf16 portable", true);
    const double b16x = lowp_rate(&c, "bf16 avx512", gemm_cpu_has_bf16());
    char shape[48], v[16], x[16];
    snprintf(shape, sizeof shape, "%dx%dx%d", M, K, N);
    snprintf(v, sizeof v, vnni > 0 ? "%.1f" : "-", vnni);
    snprintf(x, sizeof x, b16x > 0 ? "%.1f" : "-", b16x);
    const double best_s8 = vnni > s8 ? vnni : s8, best_bf16 = b16x > b16p ? b16x : b16p;
    printf("  %-21s %-15s %8.1f %10.1f %10s %10.1f %11s %9.2fx %9.2fx\n", label, shape, fp32, s8, v,
           b16p, x, best_s8 / fp32, best_bf16 / fp32);
    fflush(stdout);
    free(af), free(bf), free(out), free(a8), free(b8), free(a_scales), free(b_scales);
    free(sums), free(out32), free(a16), free(b16);
}

static void bench_lowp(void) {
    char paths[160];
    gemm_lowp_describe(paths, sizeof paths);
    printf("smaller numbers: out = a · bᵀ in fp32 (matmul_bt, default backend), int8 (int32 sums)"
           " and bf16 (float sums);\n  2·M·K·N / seconds / 1e9 (GFLOP/s, GOPS for int8); median of"
           " 5+ runs after a warm-up; on this CPU: %s\n", paths);
    printf("  %-21s %-15s %8s %10s %10s %10s %11s %10s %10s\n", "product", "MxKxN", "fp32",
           "int8 port.", "int8 vnni", "bf16 port.", "bf16 avx512", "int8/fp32", "bf16/fp32");
    bench_lowp_case("ViT-B qkv projection", 197, 768, 2304);
    bench_lowp_case("ViT-B mlp.fc2", 197, 3072, 768);
    printf("\n");
}

/* ---------------------------------------------------- OpenBLAS's kernels */

/*
 * OpenBLAS picks one set of kernels for the CPU when it loads (its "core",
 * openblas_get_corename()); OPENBLAS_CORETYPE names another. A library that
 * does not know a new CPU falls back to an old core: Debian 12's 0.3.21 runs
 * "Prescott" (SSE3) on recent Intel Xeons. This section times every core this
 * CPU can run, each in a child process (`bench --blas-probe`, the variable set),
 * so the comparison with our kernel is against OpenBLAS at its best.
 */
typedef struct {
    const char *name;    // OPENBLAS_CORETYPE
    const char *needs[6]; // the CPU features its kernels use (__builtin_cpu_supports names)
} BlasCore;

static const BlasCore blas_cores[] = {
    {"Prescott", {"sse3"}},
    {"Haswell", {"avx2", "fma"}},
    {"Zen", {"avx2", "fma"}},
    {"SkylakeX", {"avx512f", "avx512bw", "avx512dq", "avx512vl"}},
    {"Cooperlake", {"avx512f", "avx512bw", "avx512dq", "avx512vl", "avx512bf16"}},
};

static bool cpu_runs(const BlasCore *c) {
#if defined(__x86_64__) && (defined(__clang__) || __GNUC__ >= 12)
    for (int i = 0; i < 6 && c->needs[i]; i++) {
        const char *f = c->needs[i];
        // __builtin_cpu_supports() wants a string literal: one test per name
        bool has = !strcmp(f, "sse3")         ? __builtin_cpu_supports("sse3")
                   : !strcmp(f, "avx2")       ? __builtin_cpu_supports("avx2")
                   : !strcmp(f, "fma")        ? __builtin_cpu_supports("fma")
                   : !strcmp(f, "avx512f")    ? __builtin_cpu_supports("avx512f")
                   : !strcmp(f, "avx512bw")   ? __builtin_cpu_supports("avx512bw")
                   : !strcmp(f, "avx512dq")   ? __builtin_cpu_supports("avx512dq")
                   : !strcmp(f, "avx512vl")   ? __builtin_cpu_supports("avx512vl")
                   : !strcmp(f, "avx512bf16") ? __builtin_cpu_supports("avx512bf16")
                                              : false;
        if (!has) return false;
    }
    return true;
#else
    (void)c;
    return false;
#endif
}

// GFLOP/s of tiled and blas on one product of random numbers, timed in turn
// (tiled then blas, then blas then tiled, …) so that a noisy moment falls on
// both alike: the median of PROBE_ROUNDS calls each, after a warm-up of each.
// (On a 2-core cloud machine single calls of the qkv product ranged over
// ±15 %; with 15 calls the median of our kernel against OpenBLAS's came out
// 0.82 in one run and 0.96 in the next, so it takes 41.)
enum { PROBE_ROUNDS = 41 };
static void tiled_and_blas(int M, int K, int N, bool b_transposed, double *tiled, double *blas) {
    float *a = vit_malloc((size_t)M * K * sizeof(float)), *b = vit_malloc((size_t)K * N * sizeof(float));
    float *out = vit_malloc((size_t)M * N * sizeof(float));
    Rng rng;
    rng_seed(&rng, 42);
    rng_fill_uniform(&rng, a, (size_t)M * K, -1.0f, 1.0f);
    rng_fill_uniform(&rng, b, (size_t)K * N, -1.0f, 1.0f);
    GemmCase c = {"", M, K, N, b_transposed, a, b, out, GEMM_TILED};
    double times[2][PROBE_ROUNDS];
    for (int round = -1; round < PROBE_ROUNDS; round++)
        for (int i = 0; i < 2; i++) {
            const int which = (round & 1) ? 1 - i : i; // 0 tiled, 1 blas; the order alternates
            c.backend = which ? GEMM_BLAS : GEMM_TILED;
            const double t0 = vit_now();
            run_gemm_case(&c);
            if (round >= 0) times[which][round] = vit_now() - t0; // round -1 warms up
        }
    const double flop = 2.0 * M * K * N;
    *tiled = flop / median_of(times[0], PROBE_ROUNDS) / 1e9;
    *blas = flop / median_of(times[1], PROBE_ROUNDS) / 1e9;
    free(a);
    free(b);
    free(out);
}

// `bench --blas-probe`: one line for the parent, OpenBLAS's GFLOP/s on the three
// products and the tiled kernel's, measured beside it.
static void blas_probe(void) {
    double t[3], b[3];
    tiled_and_blas(197, 768, 2304, true, &t[QKV], &b[QKV]);
    tiled_and_blas(197, 3072, 768, true, &t[FC2], &b[FC2]);
    tiled_and_blas(1024, 1024, 1024, false, &t[SQUARE], &b[SQUARE]);
    printf("core=%s qkv=%.2f fc2=%.2f square=%.2f tiled_qkv=%.2f tiled_fc2=%.2f tiled_square=%.2f\n",
           gemm_blas_core(), b[QKV], b[FC2], b[SQUARE], t[QKV], t[FC2], t[SQUARE]);
}

// Runs `bench --threads T MODE` (--blas-probe: the timings; --blas-core: only the
// kernel's name) with OPENBLAS_CORETYPE=core (NULL: unset, so OpenBLAS picks for
// itself); false if it failed.
static bool probe_core(const char *core, const char *mode, char *line, size_t size) {
    int fd[2];
    if (pipe(fd) != 0) return false;
    fflush(stdout);
    const pid_t pid = fork();
    if (pid < 0) {
        close(fd[0]);
        close(fd[1]);
        return false;
    }
    if (pid == 0) {
        char threads[16];
        snprintf(threads, sizeof threads, "%d", vit_get_threads());
        if (core) setenv("OPENBLAS_CORETYPE", core, 1);
        else unsetenv("OPENBLAS_CORETYPE");
        dup2(fd[1], STDOUT_FILENO);
        close(fd[0]);
        close(fd[1]);
        execl("/proc/self/exe", "bench", "--threads", threads, mode, (char *)NULL);
        _exit(127);
    }
    close(fd[1]);
    FILE *f = fdopen(fd[0], "r");
    bool ok = f && fgets(line, (int)size, f) != NULL;
    if (f) fclose(f);
    else close(fd[0]);
    int status;
    waitpid(pid, &status, 0);
    return ok && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

static void bench_blas_kernels(void) {
    if (!gemm_have_blas()) {
        printf("blas-kernels: this build has no OpenBLAS; section skipped\n\n");
        return;
    }
    printf("OpenBLAS's kernels (OPENBLAS_CORETYPE), each in a process of its own, and our tiled kernel\n"
           "timed in turn with it there; GFLOP/s, median of %d calls each\n", PROBE_ROUNDS);
    printf("  %-12s %-11s %19s %19s %19s\n", "core", "", "qkv: blas / tiled", "fc2: blas / tiled",
           "square: blas / tiled");
    // what this process runs, and what OpenBLAS picks when nobody tells it
    // (they differ when OPENBLAS_CORETYPE is set in the environment)
    const char *set = getenv("OPENBLAS_CORETYPE");
    char own[32] = "", line[512];
    snprintf(own, sizeof own, "%s", gemm_blas_core());
    if (set && *set && probe_core(NULL, "--blas-core", line, sizeof line))
        sscanf(line, "core=%31s", own);
    for (size_t i = 0; i < sizeof blas_cores / sizeof blas_cores[0]; i++) {
        const BlasCore *c = &blas_cores[i];
        if (!cpu_runs(c)) {
            printf("  %-12s (this CPU lacks its instructions)\n", c->name);
            continue;
        }
        char got[32];
        double g[3], t[3];
        if (!probe_core(c->name, "--blas-probe", line, sizeof line) ||
            sscanf(line, "core=%31s qkv=%lf fc2=%lf square=%lf tiled_qkv=%lf tiled_fc2=%lf "
                         "tiled_square=%lf", got, &g[0], &g[1], &g[2], &t[0], &t[1], &t[2]) != 7) {
            printf("  %-12s (the probe failed)\n", c->name);
            continue;
        }
        printf("  %-12s %-11s %10.1f / %6.1f %10.1f / %6.1f %10.1f / %6.1f\n", got,
               !strcmp(got, own) ? "(its pick)" : "", g[0], t[0], g[1], t[1], g[2], t[2]);
        for (int r = 0; r < 3; r++)
            if (g[r] > fig.blas_core_best[r]) {
                fig.blas_core_best[r] = g[r];
                fig.tiled_beside_best[r] = t[r];
                if (r == QKV) snprintf(fig.best_core, sizeof fig.best_core, "%s", got);
            }
    }
    if (set && *set)
        printf("  OpenBLAS picks %s on this CPU by itself; OPENBLAS_CORETYPE=%.31s in the "
               "environment makes this run use %s; the best here on qkv: %s\n\n", own, set,
               gemm_blas_core(), fig.best_core);
    else
        printf("  OpenBLAS picks %s on this CPU by itself; the best here on qkv: %s\n\n", own,
               fig.best_core);
}

/* ------------------------------------------------------- ViT-B/16 forward */

/** One forward pass of a model on a batch, for median_seconds(). */
typedef struct {
    Vit *vit;
    Tensor *input;
} ForwardCase;

static void run_forward(void *user) {
    ForwardCase *f = user;
    VitError err;
    if (vit_forward(f->vit, f->input, NULL, NULL, &err) != VIT_OK) {
        fprintf(stderr, "bench: %s\n", err.msg);
        exit(1);
    }
}

// The forward pass and our 1024³ product timed in turn, round after round, so
// that both see the machine in the same state. On a shared machine the speed
// drifts by 10 % and more within a minute, and two figures taken minutes
// apart, as the gemm and vit sections take theirs, carry that drift into
// their ratio. Each round: one forward pass (the default backends), then the
// median of three products.
enum { SIDE_ROUNDS = 9, SIDE_PRODUCTS = 3 };
static void forward_beside_square(ForwardCase *fc, double flops) {
    const int n = 1024;
    const size_t nn = (size_t)n * n;
    float *a = vit_malloc(nn * sizeof(float)), *b = vit_malloc(nn * sizeof(float));
    float *out = vit_malloc(nn * sizeof(float));
    Rng rng;
    rng_seed(&rng, 42);
    rng_fill_uniform(&rng, a, nn, -1.0f, 1.0f);
    rng_fill_uniform(&rng, b, nn, -1.0f, 1.0f);
    GemmCase square = {"square", n, n, n, false, a, b, out, GEMM_TILED};
    double forward[SIDE_ROUNDS], product[SIDE_ROUNDS], ratio[SIDE_ROUNDS];
    for (int r = 0; r < SIDE_ROUNDS; r++) {
        gemm_use_choice(); // the forward pass as vit classify runs it
        const double t0 = vit_now();
        run_forward(fc);
        forward[r] = flops / (vit_now() - t0) / 1e9;
        const double seconds = median_seconds((Workload){run_gemm_case, &square}, r == 0,
                                              SIDE_PRODUCTS, 0);
        product[r] = 2.0 * n * n * n / seconds / 1e9;
        ratio[r] = forward[r] / product[r];
    }
    gemm_use_choice();
    fig.side_forward = median_of(forward, SIDE_ROUNDS);
    fig.side_square = median_of(product, SIDE_ROUNDS);
    fig.side_ratio = median_of(ratio, SIDE_ROUNDS);
    printf("  side by side, %d rounds of one forward pass and %d of our 1024^3 products: "
           "%.1f and %.1f GFLOP/s (medians)\n", SIDE_ROUNDS, SIDE_PRODUCTS, fig.side_forward,
           fig.side_square);
    free(a);
    free(b);
    free(out);
}

// The file `name` in this program's folder (build/), into `path`; false when
// the folder cannot be known.
static bool beside_this_program(char *path, size_t size, const char *name) {
    char exe[512];
    const ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0) return false;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (slash) *slash = '\0';
    snprintf(path, size, "%s/%s", exe, name);
    return true;
}

// The ViT-B/16 weights, written once next to this program (build/bench-vit-base.safetensors)
// so the timed model reads them from the mmap, as `vit classify` does.
static bool vit_base_weights(char *path, size_t size) {
    if (!beside_this_program(path, size, "bench-vit-base.safetensors")) return false;
    if (access(path, R_OK) == 0) return true;
    VitConfig cfg;
    VitError err;
    VitInit init = vit_init_timm(1);
    Vit vit;
    if (vit_config_for_arch(&cfg, "vit-base", &err) || vit_build_random(&vit, &cfg, &init, &err))
        return false;
    printf("(writing %s once: random timm-initialised ViT-B/16, 346 MB)\n", path);
    bool ok = vit_save(&vit, path, &err) == VIT_OK;
    vit_free(&vit);
    return ok;
}

// The `vit` program beside this one, into `path`; false when it is not there.
static bool vit_program(char *path, size_t size) {
    return beside_this_program(path, size, "vit") && access(path, X_OK) == 0;
}

// What the program args[0] printed, run with `args` (its stderr thrown away),
// into `out`; false if it failed.
static bool program_output(char *out, size_t size, const char *const *args) {
    int fd[2];
    if (pipe(fd) != 0) return false;
    fflush(stdout);
    const pid_t pid = fork();
    if (pid < 0) return false;
    if (pid == 0) {
        dup2(fd[1], STDOUT_FILENO);
        close(fd[0]), close(fd[1]);
        if (!freopen("/dev/null", "w", stderr)) _exit(127);
        execv(args[0], (char *const *)args);
        _exit(127);
    }
    close(fd[1]);
    size_t got = 0;
    for (ssize_t n; got + 1 < size && (n = read(fd[0], out + got, size - 1 - got)) > 0;)
        got += (size_t)n;
    out[got] = '\0';
    char drain[4096];
    while (read(fd[0], drain, sizeof drain) > 0) continue;
    close(fd[0]);
    int status;
    return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// `bench --peak-rss PROGRAM ARGS...`: runs PROGRAM (its output thrown away) and
// prints its peak RSS in kB, from wait4()'s rusage; exit 1 if it failed. A process
// of its own, started fresh by exec: a child forked straight from the bench would
// start with the bench's resident pages counted in its peak (fork copies them
// into the child before exec replaces them, and Linux keeps that peak).
static int peak_rss_probe(char **argv) {
    const pid_t pid = fork();
    if (pid < 0) return 1;
    if (pid == 0) {
        if (!freopen("/dev/null", "w", stdout)) _exit(127);
        execv(argv[0], argv);
        _exit(127);
    }
    int status;
    struct rusage ru;
    if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return 1;
    printf("%ld\n", ru.ru_maxrss);
    return 0;
}

// Peak RSS in MB of `vit classify` (the program beside this one) on one photo with
// these weights, its Linear layers in `precision` (NULL: the file's own), through
// `bench --peak-rss`; 0 when it cannot be run here.
static double classify_peak_rss_mb_in(const char *weights, const char *precision) {
    char vit_exe[600], out[64];
    const char *photo = "data/images/chelsea.jpg";
    if (access(photo, R_OK) != 0 || !vit_program(vit_exe, sizeof vit_exe)) return 0;
    const char *args[] = {"/proc/self/exe", "--peak-rss", vit_exe, "classify", "--weights",
                          weights, "--top", "1", photo, precision ? "--precision" : NULL,
                          precision, NULL};
    long kb = 0;
    if (!program_output(out, sizeof out, args) || sscanf(out, "%ld", &kb) != 1) return 0;
    return kb / 1024.0;
}

static double classify_peak_rss_mb(const char *weights) {
    return classify_peak_rss_mb_in(weights, NULL);
}

static void bench_vit(void) {
    char path[600];
    Vit vit;
    VitError err;
    if (!vit_base_weights(path, sizeof path) || vit_build(&vit, path, &err) != VIT_OK) {
        printf("vit: could not write or load the ViT-B/16 weights; section skipped\n\n");
        return;
    }
    const double flops = vit_forward_flops(&vit.config, 1); // every stage (lib/model/trace_stages.h)
    Tensor input = tensor_new(4, 1, 3, 224, 224);
    Rng rng;
    rng_seed(&rng, 7);
    rng_fill_uniform(&rng, input.data, input.numel, -1.0f, 1.0f);
    ForwardCase fc = {&vit, &input};
    printf("ViT-B/16 forward, batch 1, 224×224 (%.1f GFLOP; weights mmap'ed from %s)\n",
           flops / 1e9, vit.source);
    printf("  %-8s %7s %9s %9s\n", "backend", "threads", "ms", "GFLOP/s");
    const GemmBackend saved = gemm_get_backend();
    const int threads = vit_get_threads();
    const GemmBackend backends[] = {GEMM_TILED, GEMM_BLAS};
    for (int b = 0; b < 2; b++) {
        if (backends[b] == GEMM_BLAS && !gemm_have_blas()) continue;
        gemm_set_backend(backends[b]);
        for (int t = threads; t >= 1; t = t > 1 ? 1 : 0) {
            vit_set_threads(t);
            double sec = median_seconds((Workload){run_forward, &fc}, true, 5, 3.0);
            printf("  %-8s %7d %9.1f %9.1f\n", gemm_backend_name(backends[b]), t, 1e3 * sec,
                   flops / sec / 1e9);
            if (t == 1) break;
        }
    }
    vit_set_threads(threads);
    gemm_use_choice();
    // the default backends, as vit classify runs them (saved: the one for its
    // linear layers): batch 1 again for the record, then batch 8
    fig.batch1_ms = 1e3 * median_seconds((Workload){run_forward, &fc}, true, 5, 3.0);
    fig.batch1_gflops = flops / (fig.batch1_ms / 1e3) / 1e9;
    Tensor batch8 = tensor_new(4, 8, 3, 224, 224);
    rng_fill_uniform(&rng, batch8.data, batch8.numel, -1.0f, 1.0f);
    ForwardCase fc8 = {&vit, &batch8};
    const double sec8 = median_seconds((Workload){run_forward, &fc8}, true, 3, 0);
    fig.batch8_images_per_s = 8 / sec8;
    printf("  default (%s; under %.0f MFLOP %s), %d threads: batch 1 %.1f ms (%.1f GFLOP/s); "
           "batch 8 %.0f ms, %.2f images/s\n", gemm_backend_name(saved), GEMM_SMALL_FLOPS / 1e6,
           gemm_backend_name(gemm_choice()->small_backend), threads, fig.batch1_ms, fig.batch1_gflops,
           1e3 * sec8, fig.batch8_images_per_s);
    forward_beside_square(&fc, flops);
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    printf("  peak RSS of this process: %.0f MB (mapped weights pages included)\n",
           ru.ru_maxrss / 1024.0);
    struct stat st;
    fig.weights_mb = stat(path, &st) == 0 ? st.st_size / 1048576.0 : 0;
    fig.classify_rss_mb = classify_peak_rss_mb(path);
    if (fig.classify_rss_mb > 0)
        printf("  peak RSS of vit classify on one photo: %.0f MB, weights file %.0f MB\n\n",
               fig.classify_rss_mb, fig.weights_mb);
    else printf("  vit classify: not run (no build/vit or data/images/chelsea.jpg here)\n\n");
    tensor_free(&batch8);
    tensor_free(&input);
    vit_free(&vit);
}

/* ------------------------------------------- where the forward's time goes */

// The 1-minute load average, or -1 when the system does not say.
static double load_average(void) {
    double load[1];
    return getloadavg(load, 1) == 1 ? load[0] : -1;
}

// The passes are timed by lib's stopwatch (model/trace_timing.h, chapter 09's):
// a listener charging the time from one stage's hand-over to the next to the
// next stage, summed per row of the stage table over the blocks.
enum { PROFILE_ROUNDS = 7 };

// The best rate this machine gives on the forward's own big products (qkv, fc1,
// fc2 at batch 1), over the backends built in: the ceiling a stage is held to.
static double best_product_gflops(void) {
    const int shapes[3][3] = {{197, 768, 2304}, {197, 768, 3072}, {197, 3072, 768}};
    double best = 0;
    Rng rng;
    rng_seed(&rng, 3);
    for (int s = 0; s < 3; s++) {
        const int M = shapes[s][0], K = shapes[s][1], N = shapes[s][2];
        float *a = vit_malloc((size_t)M * K * sizeof(float)), *b = vit_malloc((size_t)N * K * sizeof(float));
        float *out = vit_malloc((size_t)M * N * sizeof(float));
        rng_fill_uniform(&rng, a, (size_t)M * K, -1.0f, 1.0f);
        rng_fill_uniform(&rng, b, (size_t)N * K, -1.0f, 1.0f);
        GemmCase c = {"forward product", M, K, N, true, a, b, out, GEMM_TILED};
        best = fmax(best, gemm_gflops(&c, GEMM_TILED));
        if (gemm_have_blas()) best = fmax(best, gemm_gflops(&c, GEMM_BLAS));
        free(a);
        free(b);
        free(out);
    }
    gemm_use_choice();
    return best;
}

// One row per stage of the table (the blocks' stages summed over the blocks):
// the median over the rounds of its time, its arithmetic, its rate, its share
// of the pass and its rate against the machine's best product.
static void print_profile(const VitConfig *cfg, double rounds[PROFILE_ROUNDS][STAGE_CLOCK_MAX],
                          double total_ms, double best) {
    printf("  %-12s %8s %8s %9s %7s %8s\n", "stage", "ms", "GFLOP", "GFLOP/s", "share",
           "of best");
    for (int i = 0; i < vit_stage_count(); i++) {
        const VitStage *st = vit_stage_at(i);
        double per_round[PROFILE_ROUNDS];
        for (int r = 0; r < PROFILE_ROUNDS; r++) per_round[r] = rounds[r][i];
        const double ms = 1e3 * median_of(per_round, PROFILE_ROUNDS);
        char name[64];
        snprintf(name, sizeof name, st->per_block ? "blocks.0.%s" : "%s", st->name);
        const double gflop = vit_stage_flops(cfg, 1, name) * (st->per_block ? cfg->depth : 1) / 1e9;
        const double rate = ms > 0 ? gflop / (ms / 1e3) : 0;
        if (gflop > 0)
            printf("  %-12s %8.2f %8.3f %9.1f %6.1f%% %7.0f%%\n", st->name, ms, gflop, rate,
                   100 * ms / total_ms, 100 * rate / best);
        else printf("  %-12s %8.2f %8s %9s %6.1f%% %8s\n", st->name, ms, "-", "-",
                    100 * ms / total_ms, "-");
    }
}

// The ViT-B/16 of the bench's weights file (vit_base_weights()) and one random
// image; false, and the section said skipped, when either cannot be had.
static bool vit_base_and_input(Vit *vit, Tensor *input, const char *section) {
    char path[600];
    VitError err;
    if (!vit_base_weights(path, sizeof path) || vit_build(vit, path, &err) != VIT_OK) {
        printf("%s: could not write or load the ViT-B/16 weights; section skipped\n\n", section);
        return false;
    }
    *input = tensor_new(4, 1, 3, 224, 224);
    Rng rng;
    rng_seed(&rng, 7);
    rng_fill_uniform(&rng, input->data, input->numel, -1.0f, 1.0f);
    return true;
}

static void bench_profile(void) {
    Vit vit;
    Tensor input;
    VitError err;
    if (!vit_base_and_input(&vit, &input, "profile")) return;
    const double best = best_product_gflops();
    double rounds[PROFILE_ROUNDS][STAGE_CLOCK_MAX], traced[PROFILE_ROUNDS], plain[PROFILE_ROUNDS];
    ForwardCase fc = {&vit, &input};
    run_forward(&fc); // warm: the weights' pages, the caches, the threads
    for (int r = 0; r < PROFILE_ROUNDS; r++) { // in turn: a profiled pass, then a plain one
        StageClock clock;
        const double t0 = vit_now();
        stage_clock_start(&clock, NULL, NULL);
        if (vit_forward(&vit, &input, stage_clock_trace, &clock, &err) != VIT_OK) {
            fprintf(stderr, "bench: %s\n", err.msg);
            exit(1);
        }
        traced[r] = vit_now() - t0;
        memcpy(rounds[r], clock.seconds, sizeof rounds[r]);
        const double t1 = vit_now();
        run_forward(&fc);
        plain[r] = vit_now() - t1;
    }
    const double traced_ms = 1e3 * median_of(traced, PROFILE_ROUNDS);
    const double plain_ms = 1e3 * median_of(plain, PROFILE_ROUNDS);
    const double flops = vit_forward_flops(&vit.config, 1);
    printf("Where the ViT-B/16 forward's time goes (batch 1, %d threads, medians of %d passes; "
           "the best product here, on the forward's own qkv/fc1/fc2 shapes: %.1f GFLOP/s)\n",
           vit_get_threads(), PROFILE_ROUNDS, best);
    print_profile(&vit.config, rounds, traced_ms, best);
    const double plain_share = 100 * flops / plain_ms / 1e6 / best;
    printf("  the profiled pass (the recipe: every stage written and handed over): %.1f ms, "
           "%.1f GFLOP/s, %.0f%% of the best product rate\n",
           traced_ms, flops / traced_ms / 1e6, 100 * flops / traced_ms / 1e6 / best);
    printf("  the plain pass, timed in turn with it (nobody listens: the fused block, "
           "block_fused.c): %.1f ms, %.1f GFLOP/s, %.0f%% of the best product rate; target "
           ">= 85%%: %s\n  load average now %.2f\n\n",
           plain_ms, flops / plain_ms / 1e6, plain_share, plain_share >= 85 ? "met" : "MISSED",
           load_average());
    tensor_free(&input);
    vit_free(&vit);
}

/* ------------------------------------------------------------ precisions */

enum { PRECISION_ROUNDS = 7, PRECISIONS = 3, AGREEMENT_IMAGES = 8, MEMORY_RUNS = 5 };

// The ViT-B/16 forward, batch 1, with its Linear layers in fp32, bf16 and int8:
// one model per precision, timed in turn round by round, and each one's logits
// against fp32's (the bench's weights are random, so this is the arithmetic's
// error, not an accuracy: chapter 15 and vit eval measure that on the shipped model).
// Size of a file in MB, 0 if it is not there.
static double file_mb(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 ? st.st_size / 1e6 : 0;
}

// ViT-B/16's weights file in int8 (`vit quantize` of the float one), written once beside it.
static bool vit_base_int8_weights(char *path, size_t size, const char *float_path) {
    if (!beside_this_program(path, size, "bench-vit-base-int8.safetensors")) return false;
    if (access(path, R_OK) == 0) return true;
    Vit vit;
    VitError err;
    if (vit_build(&vit, float_path, &err) != VIT_OK) return false;
    const bool ok = vit_save_int8(&vit, path, &err) == VIT_OK;
    vit_free(&vit);
    return ok;
}

// The weights files' sizes and `vit classify`'s peak memory with each: the float
// file in each precision (the copies sit beside the mapped float weights), and the
// int8 file, which holds no float Linear weights.
static void precision_files_and_memory(void) {
    char fp32[600], int8[640];
    if (!vit_base_weights(fp32, sizeof fp32) || !vit_base_int8_weights(int8, sizeof int8, fp32)) {
        printf("  files and memory: could not write the weights files\n");
        return;
    }
    const struct {
        const char *label, *file, *precision;
    } rows[] = {{"fp32", fp32, NULL}, {"bf16", fp32, "bf16"}, {"int8", fp32, "int8"},
                {"int8 file", int8, NULL}};
    // a run's peak varies by several MB (threads' stacks and buffers, the allocator):
    // the median of MEMORY_RUNS runs each, the four in turn
    double runs[4][MEMORY_RUNS], peak[4];
    for (int r = 0; r < MEMORY_RUNS; r++)
        for (int i = 0; i < 4; i++) runs[i][r] = classify_peak_rss_mb_in(rows[i].file, rows[i].precision);
    printf("  %-9s %-30s %9s %22s  (median of %d runs, min-max)\n", "Linears", "weights file",
           "file MB", "vit classify peak MB", MEMORY_RUNS);
    for (int i = 0; i < 4; i++) {
        peak[i] = median_of(runs[i], MEMORY_RUNS);
        const char *name = strrchr(rows[i].file, '/');
        printf("  %-9s %-30s %9.1f %22.1f  (%.1f-%.1f)\n", rows[i].label,
               name ? name + 1 : rows[i].file, file_mb(rows[i].file), peak[i], runs[i][0],
               runs[i][MEMORY_RUNS - 1]);
    }
    const double weights = file_mb(fp32), rest = peak[0] - weights; // beside the weights
    const double file_share = file_mb(int8) / weights, memory_share = (peak[3] - rest) / weights;
    if (peak[0] <= 0 || peak[3] <= 0) {
        printf("  peak memory not measured (needs build/vit and data/images/chelsea.jpg)\n");
        return;
    }
    printf("  targets: the int8 file <= 27 %% of the fp32 one: %s (%.1f %%); its weights in "
           "memory (the peak less fp32's %.0f MB beside its weights) <= 27 %%: %s (%.1f %%)\n",
           file_share <= 0.27 ? "met" : "MISSED", 100 * file_share, rest,
           memory_share <= 0.27 ? "met" : "MISSED", 100 * memory_share);
}

// The shipped Fashion-MNIST model on the 10,000 test images in each precision,
// as `vit eval --precision P` measures it (which runs fp32 beside it).
static void precision_shipped_accuracy(void) {
    const char *model = "data/models/vit-fashion.safetensors";
    static char out[1 << 16];
    printf("  the shipped model (%s) on the 10,000 Fashion-MNIST test images (vit eval):\n", model);
    printf("  %-9s %9s %12s %16s\n", "Linears", "accuracy", "vs fp32", "top-1 agreement");
    bool fp32_printed = false;
    char vit_exe[600];
    for (int i = 0; i < 2; i++) {
        const char *p = i == 0 ? "bf16" : "int8";
        const char *args[] = {vit_exe, "eval", "--weights", model, "--precision", p, NULL};
        double fp32 = 0, ours = 0, agree = 0;
        const bool ran = vit_program(vit_exe, sizeof vit_exe) && program_output(out, sizeof out, args);
        const char *line = ran ? strstr(out, "fp32 accuracy:") : NULL;
        const char *agreement = line ? strstr(line, "top-1 agreement:") : NULL;
        char name[8];
        if (!line || !agreement ||
            sscanf(line, "fp32 accuracy: %lf%%; %7[a-z0-9]: %lf%%", &fp32, name, &ours) != 3 ||
            sscanf(agreement, "top-1 agreement: %lf%%", &agree) != 1) {
            printf("  %-9s not measured (vit eval failed: is the dataset installed?)\n", p);
            continue;
        }
        if (!fp32_printed) printf("  %-9s %8.2f%% %12s %16s\n", "fp32", fp32, "", "");
        fp32_printed = true;
        printf("  %-9s %8.2f%% %+9.2f pt %15.2f%%\n", p, ours, ours - fp32, agree);
    }
}

// Each precision's logits against fp32's (vit[0]'s) on the image all three just
// ran: top-5 classes in common added to same[], the largest |difference| into diff[].
static void logits_beside_fp32(Vit *vit, int *same, double *diff) {
    const int Y = vit[0].config.num_classes;
    const float *ref = vit_logits(&vit[0]).data;
    int ref_top[5];
    ops_top_k(ref_top, 5, ref, Y);
    for (int i = 0; i < PRECISIONS; i++) {
        const float *logits = vit_logits(&vit[i]).data;
        int top[5];
        ops_top_k(top, 5, logits, Y);
        for (int a = 0; a < 5; a++)
            for (int b = 0; b < 5; b++) same[i] += top[a] == ref_top[b];
        for (int y = 0; y < Y; y++) diff[i] = fmax(diff[i], fabs((double)logits[y] - ref[y]));
    }
}

static void bench_precision(void) {
    Vit vit[PRECISIONS];
    Tensor input[PRECISIONS];
    VitError err;
    const LowpPrecision p[PRECISIONS] = {LOWP_FP32, LOWP_BF16, LOWP_INT8};
    for (int i = 0; i < PRECISIONS; i++) {
        if (!vit_base_and_input(&vit[i], &input[i], "precision")) {
            for (int j = 0; j < i; j++) vit_free(&vit[j]), tensor_free(&input[j]);
            return;
        }
        if (vit_set_precision(&vit[i], p[i], &err) != VIT_OK) {
            fprintf(stderr, "bench: %s\n", err.msg);
            exit(1);
        }
    }
    char paths[160];
    gemm_lowp_describe(paths, sizeof paths);
    double times[PRECISIONS][PRECISION_ROUNDS];
    for (int i = 0; i < PRECISIONS; i++) run_forward(&(ForwardCase){&vit[i], &input[i]}); // warm
    for (int r = 0; r < PRECISION_ROUNDS; r++)
        for (int i = 0; i < PRECISIONS; i++) { // in turn, so a busy moment falls on all three
            const double t0 = vit_now();
            run_forward(&(ForwardCase){&vit[i], &input[i]});
            times[i][r] = vit_now() - t0;
        }
    // beside fp32 on a set of images: top-5 classes shared and the largest logit difference
    int same[PRECISIONS] = {0};
    double diff[PRECISIONS] = {0};
    for (int k = 0; k < AGREEMENT_IMAGES; k++) {
        Rng rng;
        rng_seed(&rng, 7 + (uint64_t)k); // image 0 is the one timed
        rng_fill_uniform(&rng, input[0].data, input[0].numel, -1.0f, 1.0f);
        for (int i = 0; i < PRECISIONS; i++) run_forward(&(ForwardCase){&vit[i], &input[0]});
        logits_beside_fp32(vit, same, diff);
    }
    const double fp32_bytes = 4.0 * (double)vit_param_count(&vit[0].config);
    printf("ViT-B/16 forward in smaller numbers (batch 1, %d threads, random weights and image; "
           "medians of %d passes each, timed in turn; load average %.2f)\n  on this CPU: %s\n",
           vit_get_threads(), PRECISION_ROUNDS, load_average(), paths);
    printf("  %-9s %9s %8s %8s %15s %17s %17s\n", "Linears", "ms", "min", "max",
           "speed-up/fp32", "top-5 shared", "max |logit diff|");
    double ms[PRECISIONS];
    for (int i = 0; i < PRECISIONS; i++) {
        double sorted[PRECISION_ROUNDS];
        memcpy(sorted, times[i], sizeof sorted);
        ms[i] = 1e3 * median_of(sorted, PRECISION_ROUNDS);
        printf("  %-9s %9.1f %8.1f %8.1f %14.2fx %13d/%d %17.4f\n", lowp_precision_name(p[i]),
               ms[i], 1e3 * sorted[0], 1e3 * sorted[PRECISION_ROUNDS - 1], ms[0] / ms[i], same[i],
               5 * AGREEMENT_IMAGES, diff[i]);
    }
    printf("  (top-5 and logits: over %d random images, each against fp32's on the same image)\n",
           AGREEMENT_IMAGES);
    printf("  targets: int8 >= 2x fp32's speed: %s (%.2fx); bf16 >= 1.4x: %s (%.2fx)\n",
           ms[0] / ms[2] >= 2 ? "met" : "MISSED", ms[0] / ms[2],
           ms[0] / ms[1] >= 1.4 ? "met" : "MISSED", ms[0] / ms[1]);
    printf("  the Linear weights' copies: int8 %.1f MB, bf16 %.1f MB, beside the %.1f MB of "
           "fp32 parameters\n", vit_lowp_bytes(&vit[2]) / 1e6, vit_lowp_bytes(&vit[1]) / 1e6,
           fp32_bytes / 1e6);
    for (int i = 0; i < PRECISIONS; i++) vit_free(&vit[i]), tensor_free(&input[i]);
    precision_files_and_memory();
    precision_shipped_accuracy();
    printf("\n");
}

/* -------------------------------------------------------------- targets */

// A ratio against its target, with the verdict.
static void target_row(const char *what, double ours, double reference, double target,
                       const char *unit) {
    if (ours <= 0 || reference <= 0) {
        printf("  %-46s not measured (run every section)\n", what);
        return;
    }
    const double ratio = ours / reference;
    printf("  %-46s %8.1f / %8.1f %-8s = %5.2f  target >= %.2f  %s\n", what, ours, reference, unit,
           ratio, target, ratio >= target ? "met" : "MISSED");
}

static void bench_targets(void) {
    printf("targets (PyTorch's side: tools/bench_torch_vit.py, which make bench runs next)\n");
    double best_square = fmax(fmax(fig.tiled[SQUARE], fig.blas[SQUARE]),
                              fmax(fig.blas_core_best[SQUARE], fig.tiled_beside_best[SQUARE]));
    // our kernel against OpenBLAS's best kernel, both timed in turn in one process
    target_row("own GEMM / best OpenBLAS, 197x768x2304", fig.tiled_beside_best[QKV],
               fig.blas_core_best[QKV], 0.90, "GFLOP/s");
    target_row("own GEMM / best OpenBLAS, 197x3072x768", fig.tiled_beside_best[FC2],
               fig.blas_core_best[FC2], 0.90, "GFLOP/s");
    // The forward against the best 1024³ product, from figures timed side by
    // side: the forward against our 1024³ in turn (the vit section), and
    // OpenBLAS against ours in turn (the gemm section in this process,
    // blas-kernels in each kernel's), counted when its best beats ours.
    double blas_over_ours = 1;
    if (fig.tiled[SQUARE] > 0 && fig.blas[SQUARE] > 0)
        blas_over_ours = fmax(blas_over_ours, fig.blas[SQUARE] / fig.tiled[SQUARE]);
    if (fig.tiled_beside_best[SQUARE] > 0)
        blas_over_ours = fmax(blas_over_ours,
                              fig.blas_core_best[SQUARE] / fig.tiled_beside_best[SQUARE]);
    // (the reference printed is the one that makes the ratio the rounds'
    // median ratio, divided by OpenBLAS's edge)
    target_row("ViT-B/16 forward / best sgemm (1024^3)", fig.side_forward,
               fig.side_forward / fig.side_ratio * blas_over_ours, 0.70, "GFLOP/s");
    // The same from the sections' own figures, minutes apart: for the record,
    // with the warning that the machine's drift enters it
    if (fig.batch1_gflops > 0 && best_square > 0)
        printf("  %-46s %8.1f / %8.1f GFLOP/s  = %5.2f  (timed minutes apart: the machine's "
               "drift enters it)\n", "  the same from the sections' figures", fig.batch1_gflops,
               best_square, fig.batch1_gflops / best_square);
    if (fig.classify_rss_mb > 0) {
        const double limit = fig.weights_mb + 64;
        printf("  %-46s %8.0f MB, limit %.0f MB (weights + 64)  %s\n", "vit classify peak RSS",
               fig.classify_rss_mb, limit, fig.classify_rss_mb <= limit ? "met" : "MISSED");
    }
    if (vit_result_path) {
        char text[512];
        snprintf(text, sizeof text, "batch1_ms=%.3f\nbatch8_images_per_s=%.4f\nbatch1_gflops=%.2f\n"
                                    "best_sgemm_gflops=%.2f\nbest_core=%s\ngemm=%s\nthreads=%d\n",
                 fig.batch1_ms, fig.batch8_images_per_s, fig.batch1_gflops, best_square,
                 fig.best_core[0] ? fig.best_core : gemm_blas_core(),
                 gemm_backend_name(gemm_get_backend()), vit_get_threads());
        write_result(vit_result_path, text);
        printf("  (ViT-B/16 figures written to %s for tools/bench_torch_vit.py)\n", vit_result_path);
    }
    printf("\n");
}

/* ------------------------------------------------------ a training step */

/*
 * One training step of the small ViT the project trains on Fashion-MNIST:
 * 28×28 images of 1 channel in 4×4 patches (49 patches + [cls] = 50 tokens),
 * D 64, L 6, H 4, M 128, 10 classes, a batch of 128. A step is what
 * tools/bench_torch_train.py times in PyTorch, in the same three parts:
 *   forward    vit_forward() and loss_cross_entropy() (the loss and d loss / d logits)
 *   backward   vit_backward()
 *   optimizer  vit_grads_zero(), optim_clip_grad_norm(), adamw_step()
 * on a model built here (it owns its weights, so AdamW may write them), with
 * a warm-up + cosine learning rate, the same batch every step. With shards
 * (vit_shards_new(), what `vit train` does), forward and backward are one
 * call, vit_shards_forward_backward(), each shard on its own thread, and are
 * timed together.
 */
static const VitConfig train_config = {.image_size = 28, .patch_size = 4, .channels = 1,
                                       .dim = 64, .depth = 6, .heads = 4, .mlp_dim = 128,
                                       .num_classes = 10, .ln_eps = 1e-6f};
enum { TRAIN_BATCH = 128, TRAIN_WARMUP = 3, TRAIN_STEPS = 20 };

/** Median seconds of each part of a step, and of the whole. */
typedef struct {
    double forward, backward, optimizer, step;
} StepTimes;

/** Everything one training run holds. */
typedef struct {
    Vit vit;
    VitShards *sharded; // the model with each batch split over `shards` threads
    VitGrads grads;
    AdamW opt;
    Tensor input;
    int targets[TRAIN_BATCH];
    float *dlogits;
    LrSchedule schedule;
    int shards;   // 1: forward and backward on all threads; more: the batch split
} BenchTrainRun;

static void train_fail(const char *what, const VitError *err) {
    fprintf(stderr, "bench: train: %s: %s\n", what, err->msg);
    exit(1);
}

static void train_setup(BenchTrainRun *t, int shards) {
    VitError err;
    VitInit init = vit_init_timm(1);
    memset(t, 0, sizeof *t);
    t->shards = shards;
    if (vit_build_random(&t->vit, &train_config, &init, &err)) train_fail("build", &err);
    if (vit_shards_new(&t->sharded, &t->vit, shards, TRAIN_BATCH, &err))
        train_fail("prepare", &err);
    if (vit_grads_init(&t->grads, &t->vit, &err)) train_fail("gradients", &err);
    AdamWConfig cfg = adamw_defaults();
    cfg.weight_decay = 0.05;
    if (adamw_init_vit(&t->opt, &t->vit, &t->grads.weights, &cfg, &err)) train_fail("AdamW", &err);
    const VitConfig *c = &train_config;
    t->input = tensor_new(4, TRAIN_BATCH, c->channels, c->image_size, c->image_size);
    Rng rng;
    rng_seed(&rng, 11);
    rng_fill_uniform(&rng, t->input.data, t->input.numel, -1.0f, 1.0f);
    for (int b = 0; b < TRAIN_BATCH; b++) t->targets[b] = b % c->num_classes;
    t->dlogits = vit_malloc(sizeof(float) * TRAIN_BATCH * (size_t)c->num_classes);
    t->schedule = (LrSchedule){.peak_lr = 1e-3, .min_lr = 0, .warmup_steps = 5,
                               .total_steps = TRAIN_WARMUP + TRAIN_STEPS};
}

static void train_free(BenchTrainRun *t) {
    adamw_free(&t->opt);
    vit_grads_free(&t->grads);
    tensor_free(&t->input);
    free(t->dlogits);
    vit_shards_free(t->sharded);
    vit_free(&t->vit);
}

// One step, its three parts timed into times[0..2] (sharded: forward and
// backward together in times[0], times[1] = 0); returns the loss.
static float train_step(BenchTrainRun *t, int step, double times[3]) {
    VitError err;
    const int Y = train_config.num_classes;
    double t0 = vit_now(), t1, t2;
    float loss;
    if (t->shards > 1) {
        if (vit_shards_forward_backward(t->sharded, &t->grads, &t->input, t->targets, 0.0f,
                                        &loss, &err))
            train_fail("forward and backward", &err);
        t1 = t2 = vit_now();
    } else {
        if (vit_forward(&t->vit, &t->input, NULL, NULL, &err)) train_fail("forward", &err);
        memset(t->dlogits, 0, sizeof(float) * TRAIN_BATCH * (size_t)Y);
        loss = loss_cross_entropy(t->dlogits, t->vit.acts.logits, t->targets, TRAIN_BATCH, Y, 0.0f);
        t1 = vit_now();
        if (vit_backward(&t->vit, &t->grads, t->dlogits, NULL, NULL, &err))
            train_fail("backward", &err);
        t2 = vit_now();
    }
    optim_clip_grad_norm(t->opt.params, t->opt.count, 1.0);
    adamw_step(&t->opt, lr_at(&t->schedule, step));
    vit_grads_zero(&t->grads); // for the next step, as PyTorch's zero_grad()
    double t3 = vit_now();
    times[0] = t1 - t0, times[1] = t2 - t1, times[2] = t3 - t2; // sharded: t1 = t2
    return loss;
}

// The medians of TRAIN_STEPS steps after TRAIN_WARMUP untimed ones; the loss falls meanwhile.
static StepTimes train_time(int shards, float *first_loss, float *last_loss) {
    BenchTrainRun t;
    train_setup(&t, shards);
    double parts[3][TRAIN_STEPS], whole[TRAIN_STEPS], times[3];
    for (int s = 0; s < TRAIN_WARMUP + TRAIN_STEPS; s++) {
        float loss = train_step(&t, s, times);
        if (s == 0) *first_loss = loss;
        *last_loss = loss;
        if (!isfinite(loss)) {
            fprintf(stderr, "bench: train: the loss is not finite at step %d\n", s);
            exit(1);
        }
        if (s < TRAIN_WARMUP) continue;
        for (int k = 0; k < 3; k++) parts[k][s - TRAIN_WARMUP] = times[k];
        whole[s - TRAIN_WARMUP] = times[0] + times[1] + times[2];
    }
    train_free(&t);
    return (StepTimes){median_of(parts[0], TRAIN_STEPS), median_of(parts[1], TRAIN_STEPS),
                       median_of(parts[2], TRAIN_STEPS), median_of(whole, TRAIN_STEPS)};
}

static const char *train_result_path; // --train-result FILE, or NULL

static void bench_train(void) {
    const VitConfig *c = &train_config;
    // forward ≈ vit_forward_flops; backward about twice that (dX and dW of every product)
    const double flops = 3.0 * vit_forward_flops(c, TRAIN_BATCH);
    printf("train: one training step (forward + cross-entropy, backward, clip + AdamW) of a ViT "
           "with S %d, C %d, p %d, D %d, L %d, H %d, M %d, Y %d; batch %d; ~%.1f GFLOP a step "
           "(3x the forward); median of %d steps after %d warm-up steps\n",
           c->image_size, c->channels, c->patch_size, c->dim, c->depth, c->heads, c->mlp_dim,
           c->num_classes, TRAIN_BATCH, flops / 1e9, TRAIN_STEPS, TRAIN_WARMUP);
    printf("  %-8s %7s %6s %9s %8s %8s %8s %8s %8s   %s\n", "backend", "threads", "shards",
           "images/s", "step ms", "fwd ms", "bwd ms", "optim ms", "GFLOP/s", "fwd/bwd/opt %");
    const GemmBackend saved = gemm_get_backend();
    const int threads = vit_get_threads();
    const GemmBackend backends[] = {GEMM_TILED, GEMM_BLAS};
    StepTimes best = {0};
    GemmBackend best_backend = saved;
    int best_threads = threads, best_shards = 1;
    float first = 0, last = 0;
    // each backend on all threads, on one, and on all with the batch in one shard per thread
    const int rows[3][2] = {{threads, 1}, {1, 1}, {threads, threads}};
    for (int b = 0; b < 2; b++) {
        if (backends[b] == GEMM_BLAS && !gemm_have_blas()) continue;
        gemm_set_backend(backends[b]);
        for (int r = 0; r < 3; r++) {
            const int t = rows[r][0], shards = rows[r][1];
            if ((r == 1 && threads == 1) || (r == 2 && shards == 1)) continue; // a row again
            vit_set_threads(t);
            StepTimes st = train_time(shards, &first, &last);
            printf("  %-8s %7d %6d %9.0f %8.1f ", gemm_backend_name(backends[b]), t, shards,
                   TRAIN_BATCH / st.step, 1e3 * st.step);
            if (shards > 1) // forward and backward in one call: one figure for both
                printf("%8.1f %8s %8.1f %8.1f   %3.0f+bwd/%3.0f\n", 1e3 * st.forward, "(in fwd)",
                       1e3 * st.optimizer, flops / st.step / 1e9, 100 * st.forward / st.step,
                       100 * st.optimizer / st.step);
            else
                printf("%8.1f %8.1f %8.1f %8.1f   %3.0f/%3.0f/%3.0f\n", 1e3 * st.forward,
                       1e3 * st.backward, 1e3 * st.optimizer, flops / st.step / 1e9,
                       100 * st.forward / st.step, 100 * st.backward / st.step,
                       100 * st.optimizer / st.step);
            fflush(stdout);
            if (best.step == 0 || st.step < best.step)
                best = st, best_backend = backends[b], best_threads = t, best_shards = shards;
        }
    }
    vit_set_threads(threads);
    gemm_use_choice(); // back to the defaults, by size
    printf("  loss over the %d steps of the last run: %.4f -> %.4f (the same batch: it must fall)\n",
           TRAIN_WARMUP + TRAIN_STEPS, (double)first, (double)last);
    printf("  (with shards, forward and backward are one call: the fwd column holds both)\n");
    printf("  fastest: %s, %d thread%s, %d shard%s, %.0f images/s\n",
           gemm_backend_name(best_backend), best_threads, best_threads == 1 ? "" : "s",
           best_shards, best_shards == 1 ? "" : "s", TRAIN_BATCH / best.step);
    if (train_result_path) {
        char text[512];
        snprintf(text, sizeof text, "images_per_s=%.3f\nstep_s=%.9f\nforward_s=%.9f\nbackward_s=%.9f\n"
                                    "optimizer_s=%.9f\nbackend=%s\nthreads=%d\nshards=%d\nbatch=%d\n",
                 TRAIN_BATCH / best.step, best.step, best.forward, best.backward, best.optimizer,
                 gemm_backend_name(best_backend), best_threads, best_shards, TRAIN_BATCH);
        write_result(train_result_path, text);
        printf("  (fastest row written to %s for tools/bench_torch_train.py)\n", train_result_path);
    }
    printf("\n");
}

/* ------------------------------------------------- safetensors headers */

/*
 * st_parse() on headers of 10^4 … 10^6 entries, built here in memory. A
 * parser that is n log n shows a time per entry that barely grows from row to
 * row; the quadratic one it replaced (a linear search per entry to spot
 * duplicates) grew it tenfold per row: 100,000 entries took 21 s, and a 56 MB
 * header did not finish in 5 minutes. For scale, each row also times cJSON
 * alone on the same text (parsing it into a tree and freeing the tree, both of
 * which st_parse() does); the rest is ours: checking each entry, copying its
 * name, sorting names and byte ranges. That difference is only approximate:
 * the two see the allocator in different states (pages already faulted in or
 * not, free lists long or short), which at a million entries moves either by
 * a few hundred milliseconds.
 */

/** A whole safetensors image in memory: header and data. */
typedef struct {
    unsigned char *buf;
    size_t size, header_len;
    int entries;
} StImage;

/**
 * @p n one-element F32 entries, each with its own 4 bytes, in scrambled order
 * (position k holds entry k·7919 mod n, so the sort has work to do), named
 * @p prefix followed by the entry's number.
 */
static StImage st_image(int n, const char *prefix) {
    size_t cap = (size_t)n * (strlen(prefix) + 80) + 64, len = 8; // 8: the length field
    unsigned char *buf = vit_malloc(cap + 4 * (size_t)n);
    char *p = (char *)buf;
    p[len++] = '{';
    for (int k = 0; k < n; k++) {
        long long i = (long long)k * 7919 % n;
        len += (size_t)snprintf(p + len, cap - len,
                                "\"%s%lld\":{\"dtype\":\"F32\",\"shape\":[1],"
                                "\"data_offsets\":[%lld,%lld]},",
                                prefix, i, 4 * i, 4 * i + 4);
    }
    p[len - 1] = '}';
    StImage im = {buf, len + 4 * (size_t)n, len - 8, n};
    for (int b = 0; b < 8; b++) buf[b] = (unsigned char)((uint64_t)im.header_len >> (8 * b));
    memset(buf + len, 0, 4 * (size_t)n);
    return im;
}

// Times `runs` calls of st_parse() (st_close untimed) and of cJSON alone on
// the same text; prints one row.
static void bench_safetensors_row(const char *label, int n, const char *prefix, int runs) {
    StImage im = st_image(n, prefix);
    double parse[MAX_RUNS], cjson[MAX_RUNS];
    for (int r = 0; r < runs; r++) {
        SafeTensors st;
        VitError err;
        double t0 = vit_now();
        VitStatus s = st_parse(&st, im.buf, im.size, "bench", &err);
        parse[r] = vit_now() - t0;
        if (s != VIT_OK || st.count != n) {
            fprintf(stderr, "bench: generated header refused: %s\n", err.msg);
            exit(1);
        }
        st_close(&st);
        t0 = vit_now();
        cJSON_Delete(cJSON_ParseWithLength((const char *)im.buf + 8, im.header_len));
        cjson[r] = vit_now() - t0;
    }
    double sec = median_of(parse, runs), cj = median_of(cjson, runs);
    char entries[VIT_NUM_BUF];
    printf("  %-26s %10s %9.1f %4d %11.1f %9.0f %14.1f %7.0f%%\n", label,
           vit_thousands(entries, n), im.header_len / 1e6, runs, 1e3 * sec, 1e9 * sec / n,
           1e3 * cj, 100 * cj / sec);
    fflush(stdout);
    free(im.buf);
}

static void bench_safetensors(void) {
    printf("safetensors: st_parse() of generated headers, one-element F32 entries in scrambled"
           " order; median of the runs\n");
    printf("  %-26s %10s %9s %4s %11s %9s %14s %8s\n", "names", "entries", "header MB", "runs",
           "st_parse ms", "ns/entry", "cJSON alone ms", "of it");
    bench_safetensors_row("short (\"t.123\")", 10000, "t.", 9);
    bench_safetensors_row("short", 100000, "t.", 3);
    bench_safetensors_row("short", 1000000, "t.", 1); // 1.5 s a run, and one more GB of heap
    // about 56 MB, the size that hung the quadratic parser: 200-byte names that
    // differ only at the end, so every comparison in the sort reads them whole
    char prefix[201];
    memset(prefix, 'm', 200);
    for (int i = 7; i < 200; i += 8) prefix[i] = '.';
    prefix[200] = '\0';
    bench_safetensors_row("200 bytes, shared prefix", 210000, prefix, 3);
    printf("  (n² would make ns/entry ten times larger per row; n log n adds a constant per"
           " doubling of n)\n\n");
}

/* ------------------------------------------------------------ latency */

enum { LATENCY_PASSES = 7 };

// The ViT-B/16 batch-1 forward as a user runs it (default threads and product,
// nobody listening): the median of a few passes and their spread, on one line
// that benchmarks/shared.sh reads beside other work.
static void bench_latency(void) {
    Vit vit;
    Tensor input;
    if (!vit_base_and_input(&vit, &input, "latency")) return;
    ForwardCase fc = {&vit, &input};
    run_forward(&fc); // warm: the weights' pages, the caches, the threads
    double times[LATENCY_PASSES], lo = INFINITY, hi = 0;
    for (int r = 0; r < LATENCY_PASSES; r++) {
        const double t0 = vit_now();
        run_forward(&fc);
        times[r] = 1e3 * (vit_now() - t0);
        lo = fmin(lo, times[r]), hi = fmax(hi, times[r]);
    }
    printf("latency: ViT-B/16 forward, batch 1, %d threads (%s): median %.1f ms of %d passes "
           "(%.1f to %.1f)\n\n",
           vit_get_threads(), vit_describe_wait(), median_of(times, LATENCY_PASSES),
           LATENCY_PASSES, lo, hi);
    tensor_free(&input);
    vit_free(&vit);
}

/* ------------------------------------------------------------- sections */

/** One part of the benchmark; `build/bench NAME` runs only the named ones. */
typedef struct {
    const char *name;
    const char *what;
    void (*run)(void);
} Section;

static const Section sections[] = {
    {"gemm", "matrix multiplication: naive / tiled / blas", bench_gemm},
    {"blas-kernels", "OpenBLAS with each kernel this CPU runs (OPENBLAS_CORETYPE)",
     bench_blas_kernels},
    {"vit", "ViT-B/16 forward pass, batch 1 and 8: ms, GFLOP/s, peak memory", bench_vit},
    {"profile", "ViT-B/16 forward, stage by stage: ms, GFLOP, GFLOP/s, share, against the best product",
     bench_profile},
    {"latency", "ViT-B/16 forward, batch 1, as a user runs it: median and spread (shared.sh)",
     bench_latency},
    {"targets", "the speed targets: our GEMM against OpenBLAS's best, the forward against the peak",
     bench_targets},
    {"train", "a training step of a small ViT, batch 128: images/s, forward/backward/optimizer",
     bench_train},
    {"lowp", "int8 and bf16 products beside fp32 on ViT-B's qkv and fc2: GOPS, GFLOP/s",
     bench_lowp},
    {"precision", "fp32, bf16, int8: ViT-B/16's forward (ms), files and peak memory; the "
                  "shipped model's accuracy",
     bench_precision},
    {"safetensors", "st_parse() of 10^4 … 10^6-entry and 56 MB headers: ms per entry",
     bench_safetensors},
};
enum { N_SECTIONS = sizeof sections / sizeof sections[0] };

static void usage(FILE *f) {
    fprintf(f, "usage: bench [--threads N] [--kernel K] [--train-result FILE] [--vit-result FILE]\n"
               "             [SECTION...]\n"
               "  Times the compute back ends (GFLOP/s tables), OpenBLAS's kernels, the ViT-B/16\n"
               "  forward against the speed targets, a training step and the safetensors\n"
               "  header parser.\n"
               "  --threads N           use N threads (default: all cores)\n"
               "  --kernel K            tiled micro-kernel: avx512, avx2 or portable (default: best)\n"
               "  --train-result FILE   write the training section's fastest row to FILE\n"
               "                        (read by tools/bench_torch_train.py --c-result)\n"
               "  --vit-result FILE     write the ViT-B/16 figures of the targets section to FILE\n"
               "                        (read by tools/bench_torch_vit.py --c-result)\n"
               "  --help                this text\n"
               "sections (default: all):\n");
    for (int s = 0; s < N_SECTIONS; s++)
        fprintf(f, "  %-13s %s\n", sections[s].name, sections[s].what);
}

static const Section *find_section(const char *name) {
    for (int s = 0; s < N_SECTIONS; s++)
        if (strcmp(sections[s].name, name) == 0) return &sections[s];
    return NULL;
}

static void print_header(void) {
    char gemm[1024];
    gemm_choice_describe(gemm, sizeof gemm);
    printf("bench: %s; tiled micro-kernel: %s; threads: %d\n", vit_build_info(),
           gemm_tiled_kernel(), vit_get_threads());
    printf("default matrix product: %s\n", gemm);
    // other programs running at the same time take cores from the timed code
    double load[1];
    if (getloadavg(load, 1) == 1) printf("load average before: %.2f\n", load[0]);
#if defined(__clang__)
    printf("compiler: clang %s\n\n", __clang_version__);
#elif defined(__GNUC__)
    printf("compiler: gcc %s\n\n", __VERSION__);
#else
    printf("\n");
#endif
}

int main(int argc, char **argv) {
    const Section *chosen[N_SECTIONS];
    int n_chosen = 0;
    VitError err;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else if (strcmp(argv[i], "--threads") == 0) {
            int threads;
            if (i + 1 >= argc) {
                fprintf(stderr, "bench: --threads needs a number\n");
                return VIT_ERR_USAGE;
            }
            if (vit_parse_int(&threads, argv[++i], 1, 1024, "--threads", &err) != VIT_OK) {
                fprintf(stderr, "bench: %s\n", err.msg);
                return VIT_ERR_USAGE;
            }
            vit_set_threads(threads);
        } else if (strcmp(argv[i], "--kernel") == 0) {
            if (i + 1 >= argc || !gemm_set_tiled_kernel(argv[++i])) {
                fprintf(stderr, "bench: --kernel wants avx512, avx2 or portable"
                                " (one this CPU can run)\n");
                return VIT_ERR_USAGE;
            }
        } else if (strcmp(argv[i], "--train-result") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "bench: --train-result needs a file name\n");
                return VIT_ERR_USAGE;
            }
            train_result_path = argv[++i];
        } else if (strcmp(argv[i], "--vit-result") == 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "bench: --vit-result needs a file name\n");
                return VIT_ERR_USAGE;
            }
            vit_result_path = argv[++i];
        } else if (strcmp(argv[i], "--peak-rss") == 0 && i + 1 < argc) { // a memory probe
            return peak_rss_probe(argv + i + 1);
        } else if (strcmp(argv[i], "--blas-probe") == 0) { // the blas-kernels section's child
            blas_probe();
            return 0;
        } else if (strcmp(argv[i], "--blas-core") == 0) { // … when it asks only for the name
            printf("core=%s\n", gemm_blas_core());
            return 0;
        } else if (argv[i][0] != '-' && find_section(argv[i])) {
            if (n_chosen < N_SECTIONS) chosen[n_chosen++] = find_section(argv[i]);
        } else {
            fprintf(stderr, "bench: unknown argument '%s'\n", argv[i]);
            usage(stderr);
            return VIT_ERR_USAGE;
        }
    }
    print_header();
    if (n_chosen == 0)
        for (int s = 0; s < N_SECTIONS; s++) sections[s].run();
    else
        for (int s = 0; s < n_chosen; s++) chosen[s]->run();
    return 0;
}
