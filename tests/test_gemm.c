/**
 * @file test_gemm.c
 * @brief lib/gemm/gemm.h: every backend and every tiled micro-kernel, against the
 *        naive loops and against PyTorch (goldens by tools/gen_golden_gemm.py).
 *
 * What is checked:
 *   - naive, tiled (each micro-kernel variant this CPU runs), blas, and the
 *     dispatching matmul()/matmul_bt() under each backend reproduce PyTorch's
 *     float64 products on small shapes (full outputs) and on ViT-B's qkv
 *     projection 197×768×2304 (64 sampled elements, all row and column sums);
 *   - tiled and blas equal naive on odd shapes that cross every block size,
 *     and tiled on every edge residue of its tiles (M, N from 1 to two tiles + 1);
 *   - tiled gives the same bits for 1, 2 or 3 threads, and may be called from
 *     several threads at once;
 *   - vit_set_threads() caps the thread count at vit_thread_limit();
 *   - the backend and kernel switches behave as gemm.h documents.
 *
 * Inputs are uniform in [-1, 1), drawn from PCG32 exactly as the golden script
 * draws them: rng_seed(seed), then a (M,K), then b in its storage order.
 *
 * Tolerance. float32 has unit roundoff u = 2⁻²⁴ ≈ 6e-8. A sum of K products
 * is rounded once per term; with |a|,|b| < 1 the terms are ~1/4 in size and
 * the partial sums grow like √k/3, so the rounding errors, of random sign,
 * add up to a standard deviation of about u·K/4 (the blocked order of the
 * tiled kernel and BLAS is, if anything, more accurate than the naive one).
 * The largest of ~450k elements sits near 5σ ≈ 1.3·u·K, and a difference of
 * two float32 results near 1.9·u·K; we allow 4·u·K (e.g. 1.8e-4 for K = 768).
 * A sum of n outputs adds n independent errors: √n times that. A real bug —
 * a dropped or doubled term, a wrong edge — is typically off by ~0.1 or more.
 * Under `make sanitize` (VIT_SANITIZE=1, everything many times slower) the
 * qkv product is checked against its golden only, not a second time against
 * naive, and naive itself is not re-run on it (the small goldens already hold
 * naive to PyTorch); every fast backend is still checked on it.
 */
#include <CUnit/CUnit.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef VIT_HAVE_BLAS
#include <cblas.h>
#endif

#include "check.h"
#include "gemm/gemm.h"
#include "base/rng.h"
#include "base/util.h"

/* ------------------------------------------------------------ helpers */

static const float unit_roundoff = 0x1p-24f;

// Tolerance of one output element: a float32 sum of K products (see top).
static float element_atol(int K) { return 4.0f * unit_roundoff * (float)K; }

static bool sanitizing(void) {
    const char *s = getenv("VIT_SANITIZE");
    return s && *s && strcmp(s, "0") != 0;
}

/** The inputs of one product: a (M,K) and b, (K,N) or (N,K) when bt. */
typedef struct {
    int M, K, N;
    bool bt; // b transposed: out = a · bᵀ (matmul_bt)
    float *a, *b;
} Operands;

// Draws a then b uniform in [-1, 1) from rng_seed(seed), as gen_golden_gemm.py does.
// Exact-size buffers, so AddressSanitizer catches any read past an edge.
static Operands operands_new(int M, int K, int N, bool bt, uint64_t seed) {
    Operands op = {M, K, N, bt, vit_malloc((size_t)M * K * sizeof(float)),
                   vit_malloc((size_t)K * N * sizeof(float))};
    Rng rng;
    rng_seed(&rng, seed);
    rng_fill_uniform(&rng, op.a, (size_t)M * K, -1.0f, 1.0f);
    rng_fill_uniform(&rng, op.b, (size_t)K * N, -1.0f, 1.0f);
    return op;
}

static void operands_free(Operands *op) {
    free(op->a);
    free(op->b);
}

typedef void GemmFn(float *out, const float *a, const float *b, int M, int K, int N);

/** One implementation under test and the switches it needs. */
typedef struct {
    char label[40];      // e.g. "tiled/avx2", "matmul[blas]"
    GemmFn *ab, *abt;    // the a·b and a·bᵀ entry points
    const char *kernel;  // tiled micro-kernel to force (NULL: the default)
    GemmBackend backend; // what matmul()/matmul_bt() dispatch to
} Impl;

enum { MAX_IMPLS = 12 };
static const char *const kernel_names[] = {"avx512", "avx2", "portable"};

// Fills impls with naive, tiled once per micro-kernel this CPU runs, blas, and
// (with dispatch) matmul()/matmul_bt() under each backend. Returns the count.
static int list_impls(Impl *impls, bool dispatch) {
    int n = 0;
    impls[n++] = (Impl){"naive", matmul_naive, matmul_bt_naive, NULL, GEMM_NAIVE};
    for (size_t k = 0; k < sizeof kernel_names / sizeof kernel_names[0]; k++) {
        if (!gemm_set_tiled_kernel(kernel_names[k])) continue; // CPU lacks it
        impls[n] = (Impl){"", matmul_tiled, matmul_bt_tiled, kernel_names[k], GEMM_TILED};
        snprintf(impls[n++].label, sizeof impls[0].label, "tiled/%s", kernel_names[k]);
    }
    gemm_set_tiled_kernel(NULL);
    impls[n++] = (Impl){"blas", matmul_blas, matmul_bt_blas, NULL, GEMM_BLAS};
    if (dispatch)
        for (GemmBackend b = GEMM_NAIVE; b <= GEMM_BLAS; b++) {
            impls[n] = (Impl){"", matmul, matmul_bt, NULL, b};
            snprintf(impls[n++].label, sizeof impls[0].label, "matmul[%s]",
                     gemm_backend_name(b));
        }
    return n;
}

// out = the product, computed by im. out starts as NaN: an element the
// backend never writes (an edge tile skipped) fails, instead of passing on
// what the previous backend left in the buffer.
static void impl_run(const Impl *im, float *out, const Operands *op) {
    check_poison(out, (size_t)op->M * op->N);
    gemm_set_tiled_kernel(im->kernel);
    gemm_set_backend(im->backend);
    (op->bt ? im->abt : im->ab)(out, op->a, op->b, op->M, op->K, op->N);
    gemm_use_choice(); // the defaults again
    gemm_set_tiled_kernel(NULL);
}

// Compares out (M,N) with want, printing a report naming the case on failure.
static bool outputs_close(const float *out, const float *want, int M, int N, float atol,
                          const char *impl, const char *what) {
    char label[128];
    snprintf(label, sizeof label, "%.39s %.80s", impl, what);
    Tensor got = tensor_view((float *)out, 2, M, N), expected = tensor_view((float *)want, 2, M, N);
    return tensor_close(&got, &expected, atol, 0.0f, label);
}

/* ------------------------------------------------- against PyTorch goldens */

/** A small product whose whole output tests/golden/gemm_small.safetensors pins. */
typedef struct {
    const char *name; // tensor name in the golden
    int M, K, N;
    bool bt;
    uint64_t seed;
} GoldenCase;

// The same table as SMALL_CASES in tools/gen_golden_gemm.py.
static const GoldenCase small_cases[] = {
    {"ab_1x1x1", 1, 1, 1, false, 11},          {"abt_1x1x1", 1, 1, 1, true, 12},
    {"ab_1x7x1", 1, 7, 1, false, 13},          {"abt_1x7x1", 1, 7, 1, true, 14},
    {"ab_3x5x7", 3, 5, 7, false, 15},          {"abt_3x5x7", 3, 5, 7, true, 16},
    {"ab_17x33x65", 17, 33, 65, false, 17},    {"abt_17x33x65", 17, 33, 65, true, 18},
    {"ab_65x257x513", 65, 257, 513, false, 19}, {"abt_150x300x37", 150, 300, 37, true, 20},
};
enum { N_SMALL_CASES = sizeof small_cases / sizeof small_cases[0] };

static bool golden_open_file(SafeTensors *st, const char *file) {
    VitError err;
    if (st_open(st, golden_path(file), &err) == VIT_OK) return true;
    fprintf(stderr, "\n    %s\n", err.msg);
    CU_FAIL("golden file did not load");
    return false;
}

// Reads a golden tensor and checks its shape; returns false (after a CUnit
// failure) when it is missing or shaped differently.
static bool golden_read(const SafeTensors *st, const char *name, Tensor *t, int rows, int cols) {
    VitError err;
    if (st_read_tensor(st, name, t, &err) != VIT_OK) {
        fprintf(stderr, "\n    %s\n", err.msg);
        CU_FAIL("golden tensor missing");
        return false;
    }
    bool shaped = cols > 0 ? t->ndim == 2 && t->shape[0] == rows && t->shape[1] == cols
                           : t->ndim == 1 && t->shape[0] == rows;
    CU_ASSERT_TRUE(shaped);
    if (!shaped) tensor_free(t);
    return shaped;
}

static void test_every_backend_matches_pytorch_small(void) {
    SafeTensors st;
    if (!golden_open_file(&st, "gemm_small.safetensors")) return;
    // the golden pins exactly these cases: none unchecked, none missing
    CU_ASSERT_EQUAL(st.count, N_SMALL_CASES);
    Impl impls[MAX_IMPLS];
    int n_impls = list_impls(impls, true);
    for (int c = 0; c < N_SMALL_CASES; c++) {
        const GoldenCase *gc = &small_cases[c];
        Tensor want;
        if (!golden_read(&st, gc->name, &want, gc->M, gc->N)) continue;
        Operands op = operands_new(gc->M, gc->K, gc->N, gc->bt, gc->seed);
        float *out = vit_malloc((size_t)gc->M * gc->N * sizeof(float));
        for (int i = 0; i < n_impls; i++) {
            impl_run(&impls[i], out, &op);
            CU_ASSERT_TRUE(outputs_close(out, want.data, gc->M, gc->N, element_atol(gc->K),
                                         impls[i].label, gc->name));
        }
        free(out);
        operands_free(&op);
        tensor_free(&want);
    }
    st_close(&st);
}

// The qkv golden: 64 sampled elements, row sums and column sums (see the script).
typedef struct {
    Tensor index, samples, row_sums, col_sums;
} QkvGolden;

enum { QKV_M = 197, QKV_K = 768, QKV_N = 2304, QKV_SEED = 21, QKV_SAMPLES = 64 };

// Checks one full qkv output against the pinned values.
static void check_qkv(const float *out, const QkvGolden *g, const char *impl) {
    // 64 sampled elements, each a float32 sum of K products
    float samples[QKV_SAMPLES];
    for (int s = 0; s < QKV_SAMPLES; s++) {
        int i = (int)g->index.data[2 * s], j = (int)g->index.data[2 * s + 1];
        samples[s] = out[(size_t)i * QKV_N + j];
    }
    Tensor got = tensor_view(samples, 1, QKV_SAMPLES);
    char label[64];
    snprintf(label, sizeof label, "%.40s qkv samples", impl);
    CU_ASSERT_TRUE(tensor_close(&got, &g->samples, element_atol(QKV_K), 0.0f, label));

    // every element once in a row sum and once in a column sum, summed in double
    float rows[QKV_M], cols[QKV_N];
    for (int i = 0; i < QKV_M; i++) {
        double s = 0;
        for (int j = 0; j < QKV_N; j++) s += out[(size_t)i * QKV_N + j];
        rows[i] = (float)s;
    }
    for (int j = 0; j < QKV_N; j++) {
        double s = 0;
        for (int i = 0; i < QKV_M; i++) s += out[(size_t)i * QKV_N + j];
        cols[j] = (float)s;
    }
    // n independent errors grow like √n: √2304 = 48, √197 < 15
    got = tensor_view(rows, 1, QKV_M);
    snprintf(label, sizeof label, "%.40s qkv row sums", impl);
    CU_ASSERT_TRUE(tensor_close(&got, &g->row_sums, 48.0f * element_atol(QKV_K), 0.0f, label));
    got = tensor_view(cols, 1, QKV_N);
    snprintf(label, sizeof label, "%.40s qkv column sums", impl);
    CU_ASSERT_TRUE(tensor_close(&got, &g->col_sums, 15.0f * element_atol(QKV_K), 0.0f, label));
}

static void test_every_backend_matches_pytorch_vitb_qkv(void) {
    SafeTensors st;
    if (!golden_open_file(&st, "gemm_vitb_qkv.safetensors")) return;
    CU_ASSERT_EQUAL(st.count, 4);
    QkvGolden g = {0};
    bool ok = golden_read(&st, "qkv.sample_index", &g.index, QKV_SAMPLES, 2) &&
              golden_read(&st, "qkv.samples", &g.samples, QKV_SAMPLES, 0) &&
              golden_read(&st, "qkv.row_sums", &g.row_sums, QKV_M, 0) &&
              golden_read(&st, "qkv.col_sums", &g.col_sums, QKV_N, 0);
    if (ok) {
        Operands op = operands_new(QKV_M, QKV_K, QKV_N, true, QKV_SEED);
        float *out = vit_malloc((size_t)QKV_M * QKV_N * sizeof(float));
        Impl impls[MAX_IMPLS];
        // the dispatchers are checked on the small cases; here each kernel once
        int n_impls = list_impls(impls, false);
        for (int i = 0; i < n_impls; i++) {
            // naive takes seconds under the sanitizers; the small goldens already
            // hold it to PyTorch's values
            if (sanitizing() && impls[i].backend == GEMM_NAIVE) continue;
            impl_run(&impls[i], out, &op);
            check_qkv(out, &g, impls[i].label);
        }
        free(out);
        operands_free(&op);
    }
    tensor_free(&g.index), tensor_free(&g.samples), tensor_free(&g.row_sums);
    tensor_free(&g.col_sums);
    st_close(&st);
}

/* ---------------------------------------------------- against the naive loops */

// ref = the naive product, the reference.
// independent: the naive products are held to PyTorch by their own tests
static void naive_product(float *ref, const Operands *op) {
    check_poison(ref, (size_t)op->M * op->N); // a hole in the reference fails too
    if (op->bt) matmul_bt_naive(ref, op->a, op->b, op->M, op->K, op->N);
    else matmul_naive(ref, op->a, op->b, op->M, op->K, op->N);
}

static void test_fast_backends_match_naive_on_odd_shapes(void) {
    // M×K×N: tiny, prime, one past a tile or block, ViT's own products
    static const int shapes[][3] = {
        {1, 1, 1},      {1, 7, 1},     {7, 1, 1},       {1, 1, 7},       {3, 5, 7},
        {17, 33, 65},   {13, 255, 29}, {13, 256, 29},   {13, 257, 29},   {65, 257, 513},
        {145, 70, 3},   {5, 20, 6200}, {1, 768, 2304},  {197, 64, 197},  {197, 197, 64},
        {197, 768, 2304}, // last: left out under the sanitizers (see below)
    };
    size_t n_shapes = sizeof shapes / sizeof shapes[0];
    // Under the sanitizers the tiled kernel runs unoptimised and checked, about
    // 1 GFLOP/s, and this last product would take several seconds; the qkv
    // golden test still runs it through every fast backend there.
    if (sanitizing()) n_shapes--;
    Impl impls[MAX_IMPLS];
    int n_impls = list_impls(impls, false);
    for (size_t s = 0; s < n_shapes; s++)
        for (int bt = 0; bt <= 1; bt++) {
            int M = shapes[s][0], K = shapes[s][1], N = shapes[s][2];
            Operands op = operands_new(M, K, N, bt, 100 + s);
            size_t n = (size_t)M * N;
            float *ref = vit_malloc(n * sizeof(float)), *out = vit_malloc(n * sizeof(float));
            naive_product(ref, &op);
            char what[64];
            snprintf(what, sizeof what, "%dx%dx%d %s vs naive", M, K, N, bt ? "a·bᵀ" : "a·b");
            for (int i = 1; i < n_impls; i++) { // impls[0] is naive itself
                impl_run(&impls[i], out, &op);
                CU_ASSERT_TRUE(outputs_close(out, ref, M, N, element_atol(K), impls[i].label,
                                             what));
            }
            free(ref);
            free(out);
            operands_free(&op);
        }
}

static void check_every_edge_residue(int M_MAX, int K, int N_MAX) {
    Operands op = operands_new(M_MAX, K, N_MAX, false, 7);
    float *ref = vit_malloc((size_t)M_MAX * N_MAX * sizeof(float));
    float *out = vit_malloc((size_t)M_MAX * N_MAX * sizeof(float));
    Impl impls[MAX_IMPLS];
    int n_impls = list_impls(impls, false), failures = 0;
    for (int bt = 0; bt <= 1; bt++) {
        op.bt = bt; // the same numbers read as (K,N) or (N,K)
        for (int M = 1; M <= M_MAX; M++)
            for (int N = 1; N <= N_MAX; N++) {
                op.M = M, op.N = N;
                naive_product(ref, &op);
                for (int i = 0; i < n_impls; i++) {
                    if (!impls[i].kernel) continue; // tiled variants only
                    impl_run(&impls[i], out, &op);
                    char what[48];
                    snprintf(what, sizeof what, "%dx%dx%d bt=%d", M, K, N, bt);
                    if (!outputs_close(out, ref, M, N, element_atol(K), impls[i].label, what))
                        failures++;
                }
            }
    }
    CU_ASSERT_EQUAL(failures, 0);
    free(ref);
    free(out);
    operands_free(&op);
}

static void test_tiled_handles_every_edge_residue(void) {
    // M and N from 1 to two of the biggest tiles + 1 (12 rows, 32 columns):
    // every way a tile can be cut by the edge, for each micro-kernel. At
    // K = 11 these products are small ones (gemm.c's small kernel: every
    // column edge of its vectors, every row edge of its 8 rows); at K = 267
    // they take the blocking loops, a whole k block and a shallow one of 11,
    // which packs 8 columns of k in registers (8×8 transposes, rows past the
    // edge zeroed there) and the last 3 one by one.
    enum { M_MAX = 2 * 12 + 1, N_MAX = 2 * 32 + 1 };
    for (int K = 11; K <= GEMM_TILED_KC + 11; K += GEMM_TILED_KC)
        check_every_edge_residue(M_MAX, K, N_MAX);
}

/* ------------------------------------------------------------- threads */

// OpenMP's thread count set directly, not through vit_set_threads(), which
// caps it at the cores: on a 2-core machine 3 threads would become 2, and
// the test below would no longer see a split that leaves a thread an uneven
// share. The tiled kernel calls no OpenBLAS, so its limit does not apply.
static void set_openmp_threads(int threads) {
#ifdef _OPENMP
    omp_set_num_threads(threads);
#else
    (void)threads;
#endif
}

// out = a·b (or a·bᵀ, or out += aᵀ·b from zeros) with the tiled kernel on
// `threads` threads.
static void tiled_product(float *out, const Operands *op, int form, int threads) {
    set_openmp_threads(threads);
    const int M = op->M, K = op->K, N = op->N;
    check_poison(out, (size_t)M * N); // an unwritten element differs from itself (NaN)
    if (form == 2) { // op->a read as (K,M): the backward pass's weight gradients
        memset(out, 0, (size_t)M * N * sizeof(float));
        gemm_acc_on(GEMM_TILED, out, op->a, op->b, true, false, M, K, N);
    } else (form ? matmul_bt_tiled : matmul_tiled)(out, op->a, op->b, M, K, N);
}

static void test_tiled_same_bits_for_any_thread_count(void) {
    // each element is summed in the same order whoever computes it, so the
    // split between threads must not change a single bit; neither must
    // threads side by side packing a together (more than one thread) instead
    // of each for itself (one thread). Every kernel, a·b, a·bᵀ and aᵀ·b; a
    // 13-row a (one whole sliver of 12 and an edge) with a shallow last k
    // block (1001 = 3·256 + 233).
    static const int shapes[][3] = {{150, 300, 520}, {13, 1001, 700}}; // 47 and 18 MFLOP
    int saved = vit_get_threads();
    for (int k = 0; k < 3; k++) {
        if (!gemm_set_tiled_kernel(kernel_names[k])) continue; // CPU lacks it
        for (int s = 0; s < 2; s++)
            for (int form = 0; form <= 2; form++) {
                const int M = shapes[s][0], K = shapes[s][1], N = shapes[s][2];
                Operands op = operands_new(M, K, N, form == 1, 31 + s);
                float *one = vit_malloc((size_t)M * N * sizeof(float));
                float *many = vit_malloc((size_t)M * N * sizeof(float));
                tiled_product(one, &op, form, 1);
                for (int threads = 2; threads <= 3; threads++) {
                    tiled_product(many, &op, form, threads);
                    const bool same = memcmp(one, many, (size_t)M * N * sizeof(float)) == 0;
                    if (!same)
                        fprintf(stderr, "\n    %s %dx%dx%d form %d: %d threads differ from one\n",
                                kernel_names[k], M, K, N, form, threads);
                    CU_ASSERT_TRUE(same);
                }
                free(one);
                free(many);
                operands_free(&op);
            }
    }
    gemm_set_tiled_kernel(NULL);
    set_openmp_threads(saved);
}

// vit_set_threads() keeps within vit_thread_limit(): the cores this process
// may run on and, with OpenBLAS, the threads it was built for (its build line
// says "MAX_THREADS=64"); 0 or less means the limit itself.
static void test_set_threads_stays_within_the_limit(void) {
    const int saved = vit_get_threads(), limit = vit_thread_limit();
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    CU_ASSERT(limit >= 1);
    CU_ASSERT(online < 1 || limit <= online);
#ifdef VIT_HAVE_BLAS
    const char *built_for = strstr(openblas_get_config(), "MAX_THREADS=");
    if (built_for) CU_ASSERT(limit <= atoi(built_for + strlen("MAX_THREADS=")));
#endif
#ifdef _OPENMP
    char line[256];
    const int asked[] = {limit + 1000, 0, -3, 1};
    const int want[] = {limit, limit, limit, 1};
    for (size_t i = 0; i < sizeof asked / sizeof asked[0]; i++) {
        vit_set_threads(asked[i]);
        CU_ASSERT_EQUAL(vit_get_threads(), want[i]);
    }
    // and says what was asked for while it holds
    char want_text[64];
    vit_set_threads(limit + 1000);
    snprintf(want_text, sizeof want_text, "(%d asked for; at most %d, ", limit + 1000, limit);
    CU_ASSERT_PTR_NOT_NULL(strstr(vit_describe_threads(line, sizeof line), want_text));
    vit_set_threads(1);
    CU_ASSERT_PTR_NULL(strstr(vit_describe_threads(line, sizeof line), "asked for"));
    CU_ASSERT_EQUAL(strncmp(line, "1 thread (at most ", strlen("1 thread (at most ")), 0);
#endif
    vit_set_threads(saved);
}

// The first m rows of op's product, (m, N), as a product of their own: a's
// first m rows, or its first m columns when a is read as (K,M) (form 2).
static void first_rows_product(float *out, const Operands *op, int form, int m) {
    Operands top = *op;
    top.M = m;
    float *columns = NULL;
    if (form == 2) {
        columns = vit_malloc((size_t)op->K * m * sizeof(float));
        for (int k = 0; k < op->K; k++)
            memcpy(columns + (size_t)k * m, op->a + (size_t)k * op->M, (size_t)m * sizeof(float));
        top.a = columns;
    }
    tiled_product(out, &top, form, 1);
    free(columns);
}

static void test_small_products_same_bits_as_blocking(void) {
    // gemm.c's small kernel sums each element over k in the order the blocking
    // loops do (one k block, fused multiply-adds from zero, then written or
    // added), so a row of out must come out the same bits either way. The
    // blocking loops' rows: those of a product too tall for the small kernel
    // (GEMM_TILED_SMALL_ROWS + 44 rows); the small kernel's: the first m rows
    // alone. An attention head's shapes (N 50, Dh 16), a classifier's (10
    // columns) and an odd one; every kernel, a·b, a·bᵀ and aᵀ·b.
    static const int shapes[][2] = {{16, 50}, {50, 16}, {64, 10}, {11, 65}}; // K, N
    static const int rows[] = {50, 13};
    enum { TALL = GEMM_TILED_SMALL_ROWS + 44 };
    int saved = vit_get_threads();
    for (int k = 0; k < 3; k++) {
        if (!gemm_set_tiled_kernel(kernel_names[k])) continue; // CPU lacks it
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++)
            for (int form = 0; form <= 2; form++) {
                const int K = shapes[s][0], N = shapes[s][1];
                Operands op = operands_new(TALL, K, N, form == 1, 41 + s);
                float *tall = vit_malloc((size_t)TALL * N * sizeof(float));
                float *small = vit_malloc((size_t)TALL * N * sizeof(float));
                tiled_product(tall, &op, form, 1);
                for (size_t r = 0; r < sizeof rows / sizeof rows[0]; r++) {
                    first_rows_product(small, &op, form, rows[r]);
                    const bool same =
                        memcmp(tall, small, (size_t)rows[r] * N * sizeof(float)) == 0;
                    if (!same)
                        fprintf(stderr, "\n    %s %dx%dx%d form %d: the small product differs\n",
                                kernel_names[k], rows[r], K, N, form);
                    CU_ASSERT_TRUE(same);
                }
                free(tall);
                free(small);
                operands_free(&op);
            }
    }
    gemm_set_tiled_kernel(NULL);
    set_openmp_threads(saved);
}

static void test_tiled_can_be_called_from_many_threads(void) {
    // no hidden shared state: four products at once, each checked against naive
    enum { CALLS = 4, M = 40, K = 70, N = 90 };
    Operands op[CALLS];
    float *ref[CALLS], *out[CALLS];
    for (int c = 0; c < CALLS; c++) {
        op[c] = operands_new(M, K, N, c % 2, 40 + c);
        ref[c] = vit_malloc(M * N * sizeof(float));
        out[c] = vit_malloc(M * N * sizeof(float));
        check_poison(out[c], (size_t)M * N);
        naive_product(ref[c], &op[c]);
    }
#pragma omp parallel for num_threads(CALLS)
    for (int c = 0; c < CALLS; c++)
        (op[c].bt ? matmul_bt_tiled : matmul_tiled)(out[c], op[c].a, op[c].b, M, K, N);
    for (int c = 0; c < CALLS; c++) {
        CU_ASSERT_TRUE(outputs_close(out[c], ref[c], M, N, element_atol(K), "tiled", "in a team"));
        free(ref[c]);
        free(out[c]);
        operands_free(&op[c]);
    }
}

/* ------------------------------------------------------------ switches */

static void test_backend_switch(void) {
    GemmBackend saved = gemm_get_backend();
    CU_ASSERT_STRING_EQUAL(gemm_backend_name(GEMM_NAIVE), "naive");
    CU_ASSERT_STRING_EQUAL(gemm_backend_name(GEMM_TILED), "tiled");
    CU_ASSERT_STRING_EQUAL(gemm_backend_name(GEMM_BLAS), "blas");
    // the default is what gemm_choice() chose: tiled or blas (naive only when
    // VIT_GEMM asks), and tiled in a build without BLAS
    const GemmChoice *choice = gemm_choice();
    CU_ASSERT_EQUAL(saved, choice->backend);
    const char *forced = getenv("VIT_GEMM");
    if (!forced || strcmp(forced, "naive")) CU_ASSERT_NOT_EQUAL(choice->backend, GEMM_NAIVE);
    if (!gemm_have_blas()) CU_ASSERT_EQUAL(choice->backend, GEMM_TILED);
    gemm_set_backend(GEMM_NAIVE);
    CU_ASSERT_EQUAL(gemm_get_backend(), GEMM_NAIVE);
    gemm_set_backend(GEMM_TILED);
    CU_ASSERT_EQUAL(gemm_get_backend(), GEMM_TILED);
    // asking for BLAS in a build without it selects tiled
    gemm_set_backend(GEMM_BLAS);
    // independent: whether this build has BLAS is the build's fact, not a result
    const GemmBackend chosen = gemm_have_blas() ? GEMM_BLAS : GEMM_TILED;
    CU_ASSERT_EQUAL(gemm_get_backend(), chosen);
    // a backend set holds for products of every size
    CU_ASSERT_EQUAL(gemm_backend_for(50, 16, 50), chosen);
    CU_ASSERT_EQUAL(gemm_backend_for(197, 768, 2304), chosen);
    // and gemm_use_choice() goes back to the defaults, one for each side of GEMM_SMALL_FLOPS
    gemm_use_choice();
    CU_ASSERT_EQUAL(gemm_get_backend(), saved);
    CU_ASSERT_EQUAL(gemm_backend_for(197, 768, 2304), choice->backend); // 697 MFLOP
    CU_ASSERT_EQUAL(gemm_backend_for(3200, 64, 192), choice->small_backend); // 79 MFLOP
    CU_ASSERT_EQUAL(gemm_backend_for(50, 16, 50), choice->small_backend);
    if (!gemm_have_blas()) CU_ASSERT_EQUAL(choice->small_backend, GEMM_TILED);
}

static void test_tiled_kernel_switch(void) {
    const char *best = gemm_tiled_kernel();
    bool known = false;
    for (size_t k = 0; k < sizeof kernel_names / sizeof kernel_names[0]; k++)
        known |= strcmp(best, kernel_names[k]) == 0;
    CU_ASSERT_TRUE(known);
    // the portable kernel runs everywhere; unknown names change nothing
    CU_ASSERT_TRUE(gemm_set_tiled_kernel("portable"));
    CU_ASSERT_STRING_EQUAL(gemm_tiled_kernel(), "portable");
    CU_ASSERT_FALSE(gemm_set_tiled_kernel("sse9"));
    CU_ASSERT_STRING_EQUAL(gemm_tiled_kernel(), "portable");
    CU_ASSERT_TRUE(gemm_set_tiled_kernel(NULL));
    CU_ASSERT_STRING_EQUAL(gemm_tiled_kernel(), best);
}

CU_TestInfo tests_gemm[] = {
    {"every backend matches PyTorch on small shapes", test_every_backend_matches_pytorch_small},
    {"every backend matches PyTorch on ViT-B qkv 197x768x2304",
     test_every_backend_matches_pytorch_vitb_qkv},
    {"tiled and blas match naive on odd shapes", test_fast_backends_match_naive_on_odd_shapes},
    {"tiled handles every edge residue", test_tiled_handles_every_edge_residue},
    {"tiled gives the same bits for any thread count", test_tiled_same_bits_for_any_thread_count},
    {"a small product gives the blocking loops' bits", test_small_products_same_bits_as_blocking},
    {"tiled can be called from many threads", test_tiled_can_be_called_from_many_threads},
    {"vit_set_threads stays within the limit", test_set_threads_stays_within_the_limit},
    {"backend switch", test_backend_switch},
    {"tiled kernel switch", test_tiled_kernel_switch},
    CU_TEST_INFO_NULL,
};
