/**
 * @file gemm_choice.c
 * @brief Which backend matmul() uses when nobody says: measured once on this
 *        machine, remembered in a small file (gemm.h, gemm_choice()).
 *
 * A BLAS library is only as fast as the kernel it picks for the CPU it finds.
 * Debian's OpenBLAS 0.3.21 picks well on the CPUs it knows and falls back to
 * its SSE3 kernels ("Prescott") on newer ones it does not, four times slower
 * than it could be. Rather than trust either, the first product times both
 * backends on ViT-B/16's QKV projection, (197, 768)·(2304, 768)ᵀ, and keeps
 * the faster; OpenBLAS must win by 2 % to be chosen, so a tie keeps the
 * project's own kernel. The winner need not be the same for small products:
 * on a Zen 4 the two kernels were within a few percent on ViT-B/16's, while
 * OpenBLAS was 1.1 to 2 times as fast on the linear layers of the small
 * model `vit train` trains (one thread each) and 1.8 to 4 times on its
 * attention's (50 × 16 × 50). So the same is done on the products of one
 * block of that model's training step, forward and backward, for a shard of
 * 64 images, the whole list on each thread at once as the training shards
 * run it, and products under GEMM_SMALL_FLOPS take that answer (gemm.c's
 * gemm_backend_for()). This is FFTW's "wisdom" in miniature: the answer is
 * written to $XDG_CACHE_HOME/vit-from-scratch/gemm-choice (else
 * ~/.cache/…), keyed by the CPU, OpenBLAS's build and kernel, the tiled
 * micro-kernel and the thread count, so later runs skip the ~0.2 s of timing
 * and, above all, make the same choice: the two backends round differently,
 * and a choice that flipped between runs would change results in the last bits.
 *
 * A measurement taken while other programs use the cores says little about
 * the backends (both are slowed, by different amounts): measure() also
 * reports the share of the cores the timing got (this process's CPU time
 * against the wall-clock time of its threads), and an answer measured with
 * less than 90 % of them is used for this run only, never remembered
 * (VIT_GEMM_QUIET=F sets that share: 0 remembers every answer).
 *
 * Settings: VIT_GEMM=naive|tiled|blas forces a backend (no timing);
 * VIT_GEMM_CACHE=FILE keeps the answer in FILE instead, and VIT_GEMM_CACHE=off
 * measures every time without writing anything. A cache that cannot be read
 * or written only costs the timing; it is never an error.
 */
#include "gemm.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fileio.h"
#include "util.h"

#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef VIT_HAVE_BLAS
#include <cblas.h>
#endif

enum { TIMED_ROUNDS = 8 }; // after one warm-up, the best of 8 for each backend
static const double BLAS_MARGIN = 1.02; // OpenBLAS must be this much faster to be chosen
static const double QUIET_SHARE = 0.9;  // a timing with less of the cores is not remembered

static GemmChoice choice;
static pthread_once_t choice_once = PTHREAD_ONCE_INIT;

// [gemm_blas_core]
const char *gemm_blas_core(void) {
#ifdef VIT_HAVE_BLAS
    return openblas_get_corename();
#else
    return "";
#endif
}
// [gemm_blas_core]

/* ---------------------------------------------------------------- timing */

/** How a timed product reads its operands: out (M,N) = a·bᵀ or a·b as a
 *  forward pass computes them, or out += a·b, aᵀ·b or a·bᵀ as the backward
 *  pass adds its gradients (gemm.h). */
typedef enum {
    FORWARD_BT, ///< out = a · bᵀ, b (N,K): a linear layer, attention's scores
    FORWARD,    ///< out = a · b: attention's weighted values
    ADD,        ///< out += a · b: a linear layer's dx, attention's dq
    ADD_AT,     ///< out += aᵀ · b, a (K,M): a weight's gradient, attention's dk and dv
    ADD_BT,     ///< out += a · bᵀ: attention's dprobs
} ProductForm;

/** One product of a timed workload, `count` times over. */
typedef struct {
    ProductForm form;
    int M, K, N, count;
} TimedProduct;

/** What measure() times: products run on all threads, or (per_thread) the
 *  whole list on each thread at once, as the training shards run it. */
typedef struct {
    const TimedProduct *products;
    int n_products;
    bool per_thread;
} Workload;

// ViT-B/16's qkv projection, one image: out (197, 2304) = x (197, 768) · W (2304, 768)ᵀ
static const TimedProduct VIT_B_QKV[] = {{FORWARD_BT, 197, 768, 2304, 1}};

// One block of the shipped Fashion-MNIST model, forward and backward, for a
// training shard of 64 images: 64 × 50 = 3200 tokens of width 64, and 64 × 4
// heads = 256 attention products of 50 tokens by 16 for each form. The tiny
// attention products are a sixth of its FLOPs, and the two backends differ
// most there: timing the qkv product alone chose wrongly on a Zen 5 with the
// avx2 kernel (a tie, 237 against 235 GFLOP/s, where whole training steps
// with OpenBLAS were 10 % faster). (M, K, N) as gemm.h names them.
static const TimedProduct SHARD_BLOCK[] = {
    // forward: qkv, each head's scores q·kᵀ and weighted values probs·v, proj, fc1, fc2
    {FORWARD_BT, 3200, 64, 192, 1}, {FORWARD_BT, 50, 16, 50, 256}, {FORWARD, 50, 50, 16, 256},
    {FORWARD_BT, 3200, 64, 64, 1}, {FORWARD_BT, 3200, 64, 128, 1}, {FORWARD_BT, 3200, 128, 64, 1},
    // backward of the four linear layers, in the order qkv, proj, fc1, fc2:
    // dx += dout·W, then dW += doutᵀ·x
    {ADD, 3200, 192, 64, 1}, {ADD_AT, 192, 3200, 64, 1},
    {ADD, 3200, 64, 64, 1}, {ADD_AT, 64, 3200, 64, 1},
    {ADD, 3200, 128, 64, 1}, {ADD_AT, 128, 3200, 64, 1},
    {ADD, 3200, 64, 128, 1}, {ADD_AT, 64, 3200, 128, 1},
    // backward of each head's attention: dprobs += dout·vᵀ, dv += probsᵀ·dout,
    // dq += ds·k, dk += dsᵀ·q
    {ADD_BT, 50, 16, 50, 256}, {ADD_AT, 50, 50, 16, 256},
    {ADD, 50, 50, 16, 256}, {ADD_AT, 50, 50, 16, 256},
};

/** Names the two workloads in the cache key: change it when either changes. */
#define TIMED_WORKLOADS "vit-b-qkv, fashion-shard-block"
/** The entries of a static array. */
#define COUNT_OF(x) ((int)(sizeof(x) / sizeof((x)[0])))
static const Workload LARGE = {VIT_B_QKV, COUNT_OF(VIT_B_QKV), false},
                      SMALL = {SHARD_BLOCK, COUNT_OF(SHARD_BLOCK), true};

static void product(GemmBackend backend, float *out, const float *a, const float *b,
                    const TimedProduct *p) {
    const bool blas = backend == GEMM_BLAS;
    switch (p->form) {
    case FORWARD_BT:
        (blas ? matmul_bt_blas : matmul_bt_tiled)(out, a, b, p->M, p->K, p->N);
        break;
    case FORWARD: (blas ? matmul_blas : matmul_tiled)(out, a, b, p->M, p->K, p->N); break;
    case ADD: gemm_acc_on(backend, out, a, b, false, false, p->M, p->K, p->N); break;
    case ADD_AT: gemm_acc_on(backend, out, a, b, true, false, p->M, p->K, p->N); break;
    case ADD_BT: gemm_acc_on(backend, out, a, b, false, true, p->M, p->K, p->N); break;
    }
}

static void workload(GemmBackend backend, float *out, const float *a, const float *b,
                     const Workload *w) {
    for (int i = 0; i < w->n_products; i++)
        for (int r = 0; r < w->products[i].count; r++) product(backend, out, a, b, &w->products[i]);
}

// The largest a, b and out any product of w reads or writes, in floats.
static void workload_sizes(const Workload *w, size_t *a_len, size_t *b_len, size_t *out_len) {
    *a_len = *b_len = *out_len = 0;
    for (int i = 0; i < w->n_products; i++) {
        const TimedProduct *p = &w->products[i];
        const size_t a = (size_t)p->M * p->K, b = (size_t)p->K * p->N, o = (size_t)p->M * p->N;
        if (a > *a_len) *a_len = a;
        if (b > *b_len) *b_len = b;
        if (o > *out_len) *out_len = o;
    }
}

static double workload_flop(const Workload *w) {
    double flop = 0;
    for (int i = 0; i < w->n_products; i++) {
        const TimedProduct *p = &w->products[i];
        flop += 2.0 * p->count * p->M * p->K * p->N;
    }
    return flop;
}

// Seconds of the workload once, or of `threads` of it side by side
// (per_thread): inside the parallel region each backend runs on the calling
// thread only, as in a training shard.
static double seconds_of(GemmBackend backend, float *out, const float *a, const float *b,
                         size_t out_len, const Workload *w, int threads) {
    const double t0 = vit_now();
    if (!w->per_thread) {
        workload(backend, out, a, b, w);
    } else {
#pragma omp parallel num_threads(threads)
        {
#ifdef _OPENMP
            const int t = omp_get_thread_num();
#else
            const int t = 0;
#endif
            workload(backend, out + (size_t)t * out_len, a, b, w);
        }
    }
    return vit_now() - t0;
}

static double process_cpu_seconds(void) { // every thread of this process
    struct timespec t;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) != 0) return 0;
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

// Best GFLOP/s of each backend on shape s, the two timed in turn so that a
// noisy moment (another process, the clock ramping up) falls on both; *share
// is the part of `threads` cores the timing had: 1 on a quiet machine
// (OpenMP's threads spin while they wait, so they count), 0.5 when as many
// other programs compete.
// [measure]
static void measure(const Workload *w, double *tiled_gflops, double *blas_gflops, double *share,
                    int threads) {
    const int copies = w->per_thread ? threads : 1; // one out per thread
    size_t a_len, b_len, out_len;
    workload_sizes(w, &a_len, &b_len, &out_len);
    float *a = vit_malloc(a_len * sizeof *a), *b = vit_malloc(b_len * sizeof *b);
    float *out = vit_calloc((size_t)copies * out_len, sizeof *out); // the ADD forms read it
    for (size_t i = 0; i < a_len; i++) a[i] = (float)(i % 7) * 0.25f - 0.75f;
    for (size_t i = 0; i < b_len; i++) b[i] = (float)(i % 5) * 0.25f - 0.5f;
    double best[2] = {1e30, 1e30};
    const double wall0 = vit_now(), cpu0 = process_cpu_seconds();
    for (int round = 0; round <= TIMED_ROUNDS; round++)
        for (int which = 0; which < 2; which++) {
            const double sec =
                seconds_of(which ? GEMM_BLAS : GEMM_TILED, out, a, b, out_len, w, threads);
            if (round > 0 && sec < best[which]) best[which] = sec; // round 0 warms up
        }
    const double wall = vit_now() - wall0, cpu = process_cpu_seconds() - cpu0;
    *share = wall > 0 && threads > 0 ? cpu / (wall * threads) : 1.0;
    const double flop = copies * workload_flop(w);
    *tiled_gflops = flop / best[0] / 1e9;
    *blas_gflops = flop / best[1] / 1e9;
    free(a);
    free(b);
    free(out);
}
// [measure]

/* ----------------------------------------------------------------- cache */

// What the answer depends on, one "name=value" line each: a cache written
// with any other CPU, library, kernel or thread count is measured again.
static void cache_key(char *key, size_t size) {
    // the first processor's name, family and model (a cloud's "AMD EPYC" may be
    // any of several generations: the family and model tell them apart)
    char cpu[256] = "unknown", name[160] = "", family[16] = "", model[16] = "";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f) && strcmp(line, "\n")) {
            const char *value = strchr(line, ':');
            if (!value) continue;
            value += value[1] == ' ' ? 2 : 1;
            const size_t n = strcspn(value, "\n");
            if (!strncmp(line, "model name", 10))
                snprintf(name, sizeof name, "%.*s", (int)n, value);
            else if (!strncmp(line, "cpu family", 10))
                snprintf(family, sizeof family, "%.*s", (int)n, value);
            else if (!strncmp(line, "model\t", 6))
                snprintf(model, sizeof model, "%.*s", (int)n, value);
        }
        fclose(f);
        if (name[0]) snprintf(cpu, sizeof cpu, "%s (family %s, model %s)", name, family, model);
    }
#ifdef VIT_HAVE_BLAS
    const char *blas = openblas_get_config();
#else
    const char *blas = "none";
#endif
    // timed: which workloads were measured, so an answer to other ones is measured again
    snprintf(key, size, "cpu=%s\nblas=%s\nkernel=%s\nthreads=%d\ntimed=%s\n", cpu, blas,
             gemm_tiled_kernel(), vit_get_threads(), TIMED_WORKLOADS);
}

// The cache file's path into choice.cache, or "" when there is none.
static void cache_path(void) {
    const char *set = getenv("VIT_GEMM_CACHE"), *xdg = getenv("XDG_CACHE_HOME"),
               *home = getenv("HOME");
    choice.cache[0] = '\0';
    if (set && !strcmp(set, "off")) return;
    if (set && *set) snprintf(choice.cache, sizeof choice.cache, "%s", set);
    else if (xdg && *xdg == '/')
        snprintf(choice.cache, sizeof choice.cache, "%s/vit-from-scratch/gemm-choice", xdg);
    else if (home && *home == '/')
        snprintf(choice.cache, sizeof choice.cache, "%s/.cache/vit-from-scratch/gemm-choice", home);
}

static bool parse_backend(const char *s, GemmBackend *out) {
    static const GemmBackend all[] = {GEMM_NAIVE, GEMM_TILED, GEMM_BLAS};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (!strcmp(s, gemm_backend_name(all[i]))) {
            *out = all[i];
            return true;
        }
    return false;
}

// The cached answer, when the file exists and was written for this key.
static bool cache_read(const char *key) {
    FILE *f = choice.cache[0] ? fopen(choice.cache, "r") : NULL;
    if (!f) return false;
    char text[2048];
    const size_t n = fread(text, 1, sizeof text - 1, f);
    fclose(f);
    text[n] = '\0';
    const char *body = strchr(text, '\n'); // after the comment line
    if (!body || strncmp(body + 1, key, strlen(key))) return false;
    char name[16], small[16];
    const char *rest = body + 1 + strlen(key);
    if (sscanf(rest,
               "choice=%15s\ntiled_gflops=%lf\nblas_gflops=%lf\nsmall_choice=%15s\n"
               "small_tiled_gflops=%lf\nsmall_blas_gflops=%lf",
               name, &choice.tiled_gflops, &choice.blas_gflops, small, &choice.small_tiled_gflops,
               &choice.small_blas_gflops) != 6 ||
        !parse_backend(name, &choice.backend) || choice.backend == GEMM_NAIVE ||
        !parse_backend(small, &choice.small_backend) || choice.small_backend == GEMM_NAIVE)
        return false;
    return true;
}

static void make_parent_dirs(const char *path) {
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s", path);
    for (char *p = dir + 1; *p; p++)
        if (*p == '/') {
            *p = '\0';
            if (mkdir(dir, 0755) != 0 && errno != EEXIST) return;
            *p = '/';
        }
}

// Whether the cache now holds the choice (no cache: only the timing is lost).
static bool cache_write(const char *key) {
    if (!choice.cache[0]) return false;
    make_parent_dirs(choice.cache);
    OutFile o;
    VitError err;
    if (outfile_open(&o, choice.cache, &err) != VIT_OK) return false;
    fprintf(o.f, "# vit-from-scratch: the faster matrix product on this machine (delete it to measure again)\n");
    fprintf(o.f, "%schoice=%s\ntiled_gflops=%.1f\nblas_gflops=%.1f\n", key,
            gemm_backend_name(choice.backend), choice.tiled_gflops, choice.blas_gflops);
    fprintf(o.f, "small_choice=%s\nsmall_tiled_gflops=%.1f\nsmall_blas_gflops=%.1f\n",
            gemm_backend_name(choice.small_backend), choice.small_tiled_gflops,
            choice.small_blas_gflops);
    return outfile_commit(&o, !ferror(o.f), &err) == VIT_OK;
}

/* ---------------------------------------------------------------- choice */

// A setting the environment got wrong: named, escaped (it is the user's text), and ignored.
static void warn_setting(const char *name, const char *value, const char *expected,
                         const char *instead) {
    char shown[96];
    vit_escape(shown, sizeof shown, value);
    fprintf(stderr, "warning: %s=%.40s is not %s; %s\n", name, shown, expected, instead);
}

// The least share of the cores a timing must have had to be remembered.
static double quiet_share(void) {
    const char *set = getenv("VIT_GEMM_QUIET");
    if (!set || !*set) return QUIET_SHARE;
    char *end;
    const double v = strtod(set, &end);
    if (*end == '\0' && v >= 0) return v;
    char instead[32];
    snprintf(instead, sizeof instead, "using %g", QUIET_SHARE);
    warn_setting("VIT_GEMM_QUIET", set, "a share of the cores, 0 or more", instead);
    return QUIET_SHARE;
}

// OpenBLAS only when it is at least BLAS_MARGIN faster: a tie keeps our own kernel
static GemmBackend faster(double tiled_gflops, double blas_gflops) {
    return blas_gflops > BLAS_MARGIN * tiled_gflops ? GEMM_BLAS : GEMM_TILED;
}

// [choose]
static void choose(void) {
    const char *forced = getenv("VIT_GEMM");
    snprintf(choice.blas_core, sizeof choice.blas_core, "%s", gemm_blas_core());
    if (forced && *forced && strcmp(forced, "auto")) {
        if (!parse_backend(forced, &choice.backend)) {
            warn_setting("VIT_GEMM", forced, "naive, tiled, blas or auto", "measuring instead");
        } else {
            if (choice.backend == GEMM_BLAS && !gemm_have_blas()) choice.backend = GEMM_TILED;
            choice.small_backend = choice.backend;
            choice.how = "set by VIT_GEMM";
            return;
        }
    }
    if (!gemm_have_blas()) {
        choice.backend = choice.small_backend = GEMM_TILED;
        choice.how = "the only fast backend in this build (no OpenBLAS)";
        return;
    }
    char key[1024];
    cache_key(key, sizeof key);
    cache_path();
    if (cache_read(key)) {
        choice.how = "cached: measured before on this machine";
        choice.remembered = true;
        return;
    }
#ifdef _OPENMP
    const bool in_parallel = omp_in_parallel(); // timings of one thread: not worth keeping
#else
    const bool in_parallel = false;
#endif
    double share, small_share;
    const double quiet = quiet_share();
    const int threads = in_parallel ? 1 : vit_get_threads();
    measure(&LARGE, &choice.tiled_gflops, &choice.blas_gflops, &share, threads);
    measure(&SMALL, &choice.small_tiled_gflops, &choice.small_blas_gflops, &small_share, threads);
    if (small_share < share) share = small_share;
    choice.backend = faster(choice.tiled_gflops, choice.blas_gflops);
    choice.small_backend = faster(choice.small_tiled_gflops, choice.small_blas_gflops);
    choice.how = "measured now";
    if (share < quiet) { // other programs had the cores: right for now, perhaps not later
        snprintf(choice.how_text, sizeof choice.how_text,
                 "measured now, on a busy machine (the timing had %.0f%% of %d core%s): not "
                 "remembered", 100 * share, threads, threads == 1 ? "" : "s");
        choice.how = choice.how_text;
    } else if (!in_parallel) {
        choice.remembered = cache_write(key);
    }
}
// [choose]

static void choose_once(void) { choose(); }

// [gemm_choice]
const GemmChoice *gemm_choice(void) {
    pthread_once(&choice_once, choose_once);
    return &choice;
}
// [gemm_choice]

void gemm_choice_describe(char *buf, size_t size) {
    const GemmChoice *c = gemm_choice();
    const GemmBackend now = gemm_get_backend();
    char blas[64] = "", measured[320] = "";
    if (gemm_have_blas()) snprintf(blas, sizeof blas, "OpenBLAS's kernel: %.31s", c->blas_core);
    if (c->tiled_gflops > 0)
        snprintf(measured, sizeof measured,
                 "; tiled (%s) %.0f, blas %.0f GFLOP/s on 197x768x2304; under %.0f MFLOP: "
                 "%s (tiled %.0f, blas %.0f GFLOP/s on a training shard's block, one per thread)",
                 gemm_tiled_kernel(), c->tiled_gflops, c->blas_gflops, GEMM_SMALL_FLOPS / 1e6,
                 gemm_backend_name(c->small_backend), c->small_tiled_gflops,
                 c->small_blas_gflops);
    if (now != c->backend) // bench and the tests switch backends themselves
        snprintf(buf, size, "%s (set by the program%s%s)", gemm_backend_name(now),
                 blas[0] ? "; " : "", blas);
    else
        snprintf(buf, size, "%s (%s%s%s%s)", gemm_backend_name(now), c->how, measured,
                 blas[0] ? "; " : "", blas);
}
