/**
 * @file gemm_choice.c
 * @brief Which backend matmul() uses when nobody says: measured once on this
 *        machine, remembered in a small file (gemm.h, gemm_choice()).
 *
 * It times the backends by name (gemm.c) and never calls matmul() and its
 * dispatch (gemm_dispatch.c), which is what asks it: gemm_dispatch.c says why.
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
 * run it, and products under GEMM_SMALL_FLOPS take that answer
 * (gemm_dispatch.c's gemm_backend_for()). This is FFTW's "wisdom" in
 * miniature: the answer is written to $XDG_CACHE_HOME/vit-from-scratch/gemm-choice (else
 * ~/.cache/…), keyed by the CPU, OpenBLAS's build and kernel, the tiled
 * micro-kernel and the thread count (one answer for each thread count a run
 * has used), so later runs skip the ~0.2 s of timing
 * and, above all, make the same choice: the two backends round differently,
 * and a choice that flipped between runs would change results in the last bits.
 *
 * The timing is bounded in time: after a warm-up, each workload is timed in
 * rounds, each backend once a round, until ROUNDS_BUDGET seconds are spent
 * (at least MIN_ROUNDS rounds, at most MAX_ROUNDS). A slow or busy machine
 * gets fewer rounds, not a longer wait.
 *
 * An answer is remembered only when it was measured on a quiet machine. One
 * measured while other programs use the cores says little about the backends
 * (both are slowed, by different amounts), and once written it would decide
 * every later run. So three rules, with F = 0.9 (VIT_GEMM_QUIET):
 *   1. the timing had at least F of its threads' cores: this process's CPU
 *      time against the wall-clock time of its threads (OpenMP's threads spin
 *      while they wait, so on a quiet machine they count as busy);
 *   2. other programs used at most 1 − F of the CPUs this process may run on
 *      meanwhile: the kernel's count of those CPUs' busy time (/proc/stat,
 *      time stolen by a hypervisor included) less this process's own, with
 *      a margin of two clock ticks per CPU, that count's resolution. This
 *      sees load on the cores the timing did not use, which still shares the
 *      memory and the clock, load that rule 1 misses (before this rule, an
 *      answer of tiled 146 and OpenBLAS 187 GFLOP/s, measured beside two
 *      busy loops, was written down on a machine where the tiled kernel
 *      runs near 400, and chose the backend of every run after it);
 *   3. the two halves of the rounds agree: on each workload, each backend's
 *      typical (median) round in the first half is within 2 (1 − F) of its
 *      typical round in the second, 20 %, so load that came or went during
 *      the timing shows. Twice rule 2's share, as a quiet machine's rounds
 *      vary more than its idle time does: on a 2-core Zen 4 the tiled
 *      kernel's rounds of the large product came at two speeds, near 165 and
 *      200 GFLOP/s, and the halves' medians, often 10 % apart, often failed
 *      a 10 % rule. (Nor is it asked that the same backend win both
 *      halves: where the two are within a few percent, as on that machine,
 *      the winner changes between halves however quiet it is, and nothing
 *      would ever be remembered.)
 * An answer that fails one is used for this run only, and gemm_choice_describe()
 * says which rule it failed. VIT_GEMM_QUIET=F sets F; 0 remembers every answer
 * and trusts every remembered one.
 *
 * A remembered answer is also checked, cheaply: a run that reads it times
 * the large product on the remembered backend once (check_gflops(): about
 * 20 ms on a 2-core virtual machine, less with more cores). When that runs
 * more than RECHECK_FASTER times as fast as the figure remembered, the figure
 * was taken on a busy machine: everything is measured again, and remembered
 * if the machine is quiet now.
 *
 * The cache is a file of this program's own. It is read only when it is a
 * regular file owned by this user whose first line starts with CACHE_MARK;
 * it is opened without following a symbolic link and without waiting (a
 * FIFO would block a plain open until someone writes to it). It is written
 * only where nothing is, or over such a file. Anything else at that path (a
 * link, a FIFO, somebody's notes) is left as it was: the run measures, and
 * says why its answer was not remembered.
 *
 * Settings: VIT_GEMM=naive|tiled|blas forces a backend (no timing);
 * VIT_GEMM_CACHE=FILE keeps the answer in FILE instead, and VIT_GEMM_CACHE=off
 * measures every time without writing anything. A cache that cannot be read
 * or written only costs the timing; it is never an error.
 */
#include "gemm/gemm.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/fileio.h"
#include "base/util.h"

#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef VIT_HAVE_BLAS
#include <cblas.h>
#endif

enum { MIN_ROUNDS = 2, MAX_ROUNDS = 8 }; // timed rounds of each workload, after one warm-up
static const double ROUNDS_BUDGET = 0.1; // seconds of rounds per workload, once MIN_ROUNDS are done
static const double BLAS_MARGIN = 1.02;   // OpenBLAS must be this much faster to be chosen
static const double QUIET_SHARE = 0.9;    // F, the default of VIT_GEMM_QUIET
enum { CHECK_WARM_ROWS = 32 };            // the warm-up of the check of a remembered answer
static const double RECHECK_FASTER = 1.25; // a check this much faster than the cache: measure again
/** The first line of every cache file starts with this, and only theirs: it
 *  is what marks a file as one this program may read and replace. Never
 *  change it (a cache without it is somebody else's file, kept forever). */
static const char CACHE_MARK[] = "# vit-from-scratch: ";

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

/** Names the two workloads, and the revision of lib's tiled kernel that ran
 *  them, in the cache key: change it when either changes (an answer about other
 *  products, or about an older kernel, is measured again). Revision 2: small
 *  products skip the packing (gemm.c, "Small products"). */
#define TIMED_WORKLOADS "vit-b-qkv, fashion-shard-block; tiled revision 2"
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


/** The operands of a workload's products, and one output per thread. */
typedef struct {
    float *a, *b, *out;
    size_t out_len; ///< floats in one thread's output
} Operands;

static Operands operands_new(const Workload *w, int copies) {
    Operands op;
    size_t a_len, b_len;
    workload_sizes(w, &a_len, &b_len, &op.out_len);
    op.a = vit_malloc(a_len * sizeof *op.a);
    op.b = vit_malloc(b_len * sizeof *op.b);
    op.out = vit_calloc((size_t)copies * op.out_len, sizeof *op.out); // the ADD forms read it
    // any values time the same, but not calloc's zeros: untouched pages all
    // map to one page of zeros, which reads faster than memory does
    for (size_t i = 0; i < a_len; i++) op.a[i] = (float)(i & 7) * 0.25f - 0.75f;
    for (size_t i = 0; i < b_len; i++) op.b[i] = (float)(i & 3) * 0.25f - 0.5f;
    return op;
}

static void operands_free(Operands *op) {
    free(op->a);
    free(op->b);
    free(op->out);
}

static double seconds_on(GemmBackend backend, const Operands *op, const Workload *w, int threads) {
    return seconds_of(backend, op->out, op->a, op->b, op->out_len, w, threads);
}

/** What measure() found on one workload; [0] is the tiled backend, [1] OpenBLAS. */
typedef struct {
    double gflops[2];         ///< each backend's best round
    double half_gflops[2][2]; ///< [h][backend]: the typical (median) round of the first
                              ///< (h = 0) and of the second half of the rounds (rule 3)
    double share;             ///< the part of its threads' cores the timing had (rule 1)
} Timing;

// The median of n values (n >= 1), which it sorts. Rule 3 compares the
// halves' medians, not their best rounds: on a Zen 4 the tiled kernel's rounds
// came in two speeds, 176 and 205 GFLOP/s, and whether a half held one of the
// fast ones made the halves' best differ by 15 % on a quiet machine. A median
// is the typical round: one fast or slow round moves it little, or not at all.
static double median(double *v, int n) {
    for (int i = 1; i < n; i++) // insertion sort: at most MAX_ROUNDS values
        for (int j = i; j > 0 && v[j - 1] > v[j]; j--) {
            const double swap = v[j];
            v[j] = v[j - 1], v[j - 1] = swap;
        }
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// Each backend's GFLOP/s on workload w, the two timed in turn so that a noisy
// moment (another process, the clock ramping up) falls on both: one warm-up,
// then rounds until ROUNDS_BUDGET seconds are spent (MIN_ROUNDS to
// MAX_ROUNDS). share is 1 on a quiet machine (OpenMP's threads spin while
// they wait, so they count), 0.5 when as many other programs compete.
// [measure]
static Timing measure(const Workload *w, int threads) {
    const GemmBackend backends[2] = {GEMM_TILED, GEMM_BLAS};
    const int copies = w->per_thread ? threads : 1; // one out per thread
    Operands op = operands_new(w, copies);
    const double wall0 = vit_now(), cpu0 = vit_process_cpu_seconds();
    for (int b = 0; b < 2; b++) seconds_on(backends[b], &op, w, threads); // warm-up
    double seconds[MAX_ROUNDS][2];
    int rounds = 0;
    const double start = vit_now();
    while (rounds < MIN_ROUNDS || (rounds < MAX_ROUNDS && vit_now() - start < ROUNDS_BUDGET)) {
        for (int b = 0; b < 2; b++) seconds[rounds][b] = seconds_on(backends[b], &op, w, threads);
        rounds++;
    }
    const double wall = vit_now() - wall0, cpu = vit_process_cpu_seconds() - cpu0;
    Timing t = {.share = wall > 0 && threads > 0 ? cpu / (wall * threads) : 1.0};
    const double gflop = copies * workload_flop(w) / 1e9;
    const int half = rounds / 2; // the first half's rounds; the second has the rest
    for (int b = 0; b < 2; b++) {
        double best = INFINITY, column[MAX_ROUNDS];
        for (int r = 0; r < rounds; r++) {
            column[r] = seconds[r][b];
            if (column[r] < best) best = column[r];
        }
        t.gflops[b] = gflop / best;
        t.half_gflops[0][b] = gflop / median(column, half);
        t.half_gflops[1][b] = gflop / median(column + half, rounds - half);
    }
    operands_free(&op);
    return t;
}
// [measure]

// GFLOP/s of one backend on the large product now. Every run that reads the
// cache pays for this (15 to 20 ms on a 2-core virtual machine: 4 to fill
// the operands' 10 MB, 5 for OpenBLAS's first start, 5 for the product;
// less on a machine with more cores), so the product is timed once, after
// one of its first CHECK_WARM_ROWS rows has started the threads and the
// library's buffers. Once is enough: noise only makes a product slower, and
// a slower check never sends the choice to be measured again.
static double check_gflops(GemmBackend backend, int threads) {
    Operands op = operands_new(&LARGE, 1);
    const TimedProduct *p = &LARGE.products[0];
    const TimedProduct warm = {p->form, CHECK_WARM_ROWS, p->K, p->N, 1};
    const Workload warm_up = {&warm, 1, false};
    seconds_on(backend, &op, &warm_up, threads);
    const double seconds = seconds_on(backend, &op, &LARGE, threads);
    operands_free(&op);
    return workload_flop(&LARGE) / 1e9 / seconds;
}

/* ------------------------------------------------------------------ load */

// Why a measurement is not worth remembering, into why, or "" when it is:
// the three rules of the opening comment, with F = quiet.
static void judge_load(char *why, size_t size, const Timing t[2], const VitLoad *before,
                       const VitLoad *after, int threads, double quiet) {
    why[0] = '\0';
    const double share = t[0].share < t[1].share ? t[0].share : t[1].share;
    if (share < quiet) { // 1
        snprintf(why, size, "the timing had %.0f%% of %d core%s", 100 * share, threads,
                 threads == 1 ? "" : "s");
        return;
    }
    const double wall = after->wall - before->wall, others = vit_load_others(before, after);
    if (others >= 0) { // 2
        const double share_of_others = others / before->cpus;
        const double margin = 2.0 / ((double)sysconf(_SC_CLK_TCK) * wall); // a tick at each reading
        if (share_of_others > 1 - quiet + margin) {
            snprintf(why, size, "other programs used %.0f%% of the %d CPU%s it may run on",
                     100 * share_of_others, before->cpus, before->cpus == 1 ? "" : "s");
            return;
        }
    }
    static const char *const backend_names[2] = {"tiled", "blas"};
    static const char *const workload_names[2] = {"197x768x2304", "a training shard's block"};
    const double agree = 1 - 2 * (1 - quiet); // the slower half's share of the faster's, at least
    for (int w = 0; w < 2; w++) // 3
        for (int b = 0; b < 2; b++) {
            const double first = t[w].half_gflops[0][b], second = t[w].half_gflops[1][b];
            const double lower = first < second ? first : second, higher = first + second - lower;
            if (!(lower >= agree * higher)) {
                snprintf(why, size, "%s ran at %.0f then %.0f GFLOP/s on %s in the timing's "
                         "two halves", backend_names[b], first, second, workload_names[w]);
                return;
            }
        }
}

/* ----------------------------------------------------------------- cache */

// A cache holds one answer per thread count of this machine, each a block
// from its "cpu=" line to the next: runs with 1 thread and with 2 keep theirs
// side by side, and neither measures again because the other ran last.
enum { CACHE_BLOCKS = 8, CACHE_TEXT = 4096 }; // more than any cache of ours holds

// What the answer depends on, one "name=value" line each: a cache written
// with any other CPU, library, kernel or thread count is measured again.
static void cache_key(char *key, size_t size, int threads) {
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
             gemm_tiled_kernel(), threads, TIMED_WORKLOADS);
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

/** What is at the cache's path. */
typedef enum {
    CACHE_ABSENT,  ///< nothing (or no cache at all): a new file may go there
    CACHE_OURS,    ///< one of this program's caches: read, and may be replaced
    CACHE_FOREIGN, ///< anything else: neither read nor written (choice.not_kept says why)
} CacheKind;

// Up to size - 1 bytes of fd into text, terminated; false on a read error.
static bool read_text(int fd, char *text, size_t size) {
    size_t n = 0;
    while (n < size - 1) {
        const ssize_t got = read(fd, text + n, size - 1 - n);
        if (got < 0 && errno == EINTR) continue;
        if (got < 0) return false;
        if (got == 0) break;
        n += (size_t)got;
    }
    text[n] = '\0';
    return true;
}

// What is at choice.cache; when it is one of ours, its text (the first
// CACHE_TEXT - 1 bytes). Ours means a regular file of this user whose first
// line starts with CACHE_MARK. It is opened without following a symbolic
// link (O_NOFOLLOW: open fails with ELOOP on one) and without blocking
// (O_NONBLOCK: a FIFO opens at once, and fstat() then turns it down).
static CacheKind cache_look(char *text, size_t size) {
    text[0] = '\0';
    if (!choice.cache[0]) return CACHE_ABSENT;
    const int fd = open(choice.cache, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 && (errno == ENOENT || errno == ENOTDIR)) return CACHE_ABSENT; // a write says more
    char why[160] = "";
    struct stat st;
    if (fd < 0 && errno == ELOOP) snprintf(why, sizeof why, "is a symbolic link");
    else if (fd < 0 || fstat(fd, &st) != 0)
        snprintf(why, sizeof why, "cannot be read (%s)", strerror(errno));
    else if (!S_ISREG(st.st_mode)) snprintf(why, sizeof why, "is not a regular file");
    else if (st.st_uid != geteuid()) snprintf(why, sizeof why, "belongs to another user");
    else if (!read_text(fd, text, size))
        snprintf(why, sizeof why, "cannot be read (%s)", strerror(errno));
    else if (strncmp(text, CACHE_MARK, strlen(CACHE_MARK)))
        snprintf(why, sizeof why, "is not a cache of this program (its first line does not "
                 "start with \"%s\")", CACHE_MARK);
    if (fd >= 0) close(fd);
    if (!why[0]) return CACHE_OURS;
    snprintf(choice.not_kept, sizeof choice.not_kept, "%s: left as it was", why);
    text[0] = '\0';
    return CACHE_FOREIGN;
}

// The block after p (the start of a line of a cache's text), or its end.
static const char *next_block(const char *p) {
    const char *next = strstr(p, "\ncpu=");
    return next ? next + 1 : p + strlen(p);
}

// Whether the key at the start of block is key but for its thread count: an
// answer of this machine, program and workloads for another number of threads.
static bool other_threads(const char *block, const char *key) {
    const char *bt = strstr(block, "threads="), *kt = strstr(key, "threads=");
    const char *end = next_block(block);
    if (!bt || !kt || bt >= end || bt - block != kt - key || strncmp(block, key, (size_t)(kt - key)))
        return false; // another CPU, library or kernel
    const char *b_rest = strchr(bt, '\n'), *k_rest = strchr(kt, '\n');
    if (!b_rest || !k_rest || b_rest >= end) return false;
    const size_t k_tail = strlen(k_rest); // "\ntimed=…\n", the key's last line
    if ((size_t)(end - b_rest) < k_tail || strncmp(b_rest, k_rest, k_tail)) return false;
    return strncmp(bt, kt, (size_t)(k_rest - kt)) != 0; // and another thread count
}

// The answer a cache of ours holds for this key, into choice (its block
// starts with the key: the same machine, program and thread count).
static bool cache_parse(const char *text, const char *key) {
    const char *body = strchr(text, '\n'); // after the CACHE_MARK line
    if (!body) return false;
    const char *block = body + 1;
    while (*block && strncmp(block, key, strlen(key))) block = next_block(block);
    if (!*block) return false;
    char name[16], small[16];
    const char *rest = block + strlen(key);
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

// The blocks of old (a cache's text) to keep beside a new answer for key: this
// machine's answers for other thread counts, the last CACHE_BLOCKS - 1 of them
// (each new answer goes last). Anything else (another machine's, an older
// program's, a damaged one) goes.
static void write_kept_blocks(FILE *f, const char *old, const char *key) {
    const char *body = strchr(old, '\n'), *first = body ? body + 1 : "";
    int count = 0, seen = 0;
    for (const char *b = first; *b; b = next_block(b)) count += other_threads(b, key);
    for (const char *b = first; *b; b = next_block(b))
        if (other_threads(b, key) && seen++ >= count - (CACHE_BLOCKS - 1)) {
            const char *end = next_block(b);
            fwrite(b, 1, (size_t)(end - b), f);
            if (end[-1] != '\n') fputc('\n', f);
        }
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
// It is written only where nothing is or over a cache of ours, looked at
// again first (another run may have written one meanwhile). A symbolic link
// is never written through: outfile_open() resolves one when it starts, and
// finding one (o.target is then not o.path) we give up; past that point the
// rename replaces whatever name is at the path, a link included, never a
// link's target. What stays open: a file of another program's put at the path
// between our look and the rename, microseconds later, would be replaced.
static bool cache_write(const char *key) {
    char text[CACHE_TEXT];
    if (!choice.cache[0] || cache_look(text, sizeof text) == CACHE_FOREIGN) return false;
    make_parent_dirs(choice.cache);
    OutFile o;
    VitError err;
    if (outfile_open(&o, choice.cache, &err) != VIT_OK) {
        snprintf(choice.not_kept, sizeof choice.not_kept, "could not be written (%s)", err.msg);
        return false;
    }
    if (strcmp(o.target, o.path) != 0) { // a link appeared since cache_look()
        outfile_discard(&o);
        snprintf(choice.not_kept, sizeof choice.not_kept, "is a symbolic link: left as it was");
        return false;
    }
    fprintf(o.f, "%sthe faster matrix product on this machine (delete it to measure again)\n",
            CACHE_MARK);
    write_kept_blocks(o.f, text, key);
    fprintf(o.f, "%schoice=%s\ntiled_gflops=%.1f\nblas_gflops=%.1f\n", key,
            gemm_backend_name(choice.backend), choice.tiled_gflops, choice.blas_gflops);
    fprintf(o.f, "small_choice=%s\nsmall_tiled_gflops=%.1f\nsmall_blas_gflops=%.1f\n",
            gemm_backend_name(choice.small_backend), choice.small_tiled_gflops,
            choice.small_blas_gflops);
    if (outfile_commit(&o, !ferror(o.f), &err) == VIT_OK) return true;
    snprintf(choice.not_kept, sizeof choice.not_kept, "could not be written (%s)", err.msg);
    return false;
}

/* ---------------------------------------------------------------- choice */

// A setting the environment got wrong: named, escaped (it is the user's text), and ignored.
static void warn_setting(const char *name, const char *value, const char *expected,
                         const char *instead) {
    char shown[96];
    vit_escape(shown, sizeof shown, value);
    fprintf(stderr, "warning: %s=%.40s is not %s; %s\n", name, shown, expected, instead);
}

// F of the three rules (the opening comment): VIT_GEMM_QUIET, else QUIET_SHARE.
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

// Whether the remembered answer in choice survives the quick check: its
// backend, timed now on the large product, is not RECHECK_FASTER times as
// fast as the figure remembered. If it is, why says what the check found.
static bool remembered_holds(int threads, char *why, size_t size) {
    const GemmBackend b = choice.backend;
    const double remembered = b == GEMM_BLAS ? choice.blas_gflops : choice.tiled_gflops;
    const double now = check_gflops(b, threads);
    if (now <= RECHECK_FASTER * remembered) return true; // false for a NaN in the file, too
    snprintf(why, size, "the cache's %s %.0f GFLOP/s on 197x768x2304 was a busy machine's: "
             "%.0f in a check now", gemm_backend_name(b), remembered, now);
    return false;
}

// Times both backends on both workloads and keeps the faster for each size;
// remembers the answer when the machine was quiet (the three rules) and the
// run is not inside a parallel region. recheck: why a remembered answer was
// not used, or "".
static void measure_now(int threads, bool in_parallel, double quiet, const char *key,
                        const char *recheck) {
    const VitLoad before = vit_load_now();
    const Timing t[2] = {measure(&LARGE, threads), measure(&SMALL, threads)};
    const VitLoad after = vit_load_now();
    choice.tiled_gflops = t[0].gflops[0], choice.blas_gflops = t[0].gflops[1];
    choice.small_tiled_gflops = t[1].gflops[0], choice.small_blas_gflops = t[1].gflops[1];
    choice.backend = faster(choice.tiled_gflops, choice.blas_gflops);
    choice.small_backend = faster(choice.small_tiled_gflops, choice.small_blas_gflops);
    char busy[160];
    judge_load(busy, sizeof busy, t, &before, &after, threads, quiet);
    snprintf(choice.how_text, sizeof choice.how_text, "measured now%s%s%s%s%s",
             busy[0] ? ", on a busy machine (" : "", busy, busy[0] ? "): not remembered" : "",
             recheck[0] ? "; " : "", recheck);
    choice.how = choice.how_text;
    if (!busy[0] && !in_parallel) { // right for now, and for later
        choice.remembered = cache_write(key);
    } else if (!choice.not_kept[0]) { // a busy machine, or one thread timed: for now only
        snprintf(choice.not_kept, sizeof choice.not_kept, "was left as it was");
    }
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
#ifdef _OPENMP
    const bool in_parallel = omp_in_parallel(); // timings of one thread: not worth keeping
#else
    const bool in_parallel = false;
#endif
    // as many threads as the run has, within what OpenBLAS was built for:
    // the per-thread workload calls it from every one of them at once
    const int limit = vit_thread_limit();
    const int threads = in_parallel ? 1 : vit_get_threads() < limit ? vit_get_threads() : limit;
    const double quiet = quiet_share();
    char key[1024], text[CACHE_TEXT], recheck[160] = "";
    cache_key(key, sizeof key, threads);
    cache_path();
    if (cache_look(text, sizeof text) == CACHE_OURS && cache_parse(text, key) &&
        (quiet <= 0 || in_parallel || remembered_holds(threads, recheck, sizeof recheck))) {
        choice.how = "cached: measured before on this machine";
        choice.remembered = true;
        return;
    }
    measure_now(threads, in_parallel, quiet, key, recheck);
}
// [choose]

static void choose_once(void) { choose(); }

// [gemm_choice]
const GemmChoice *gemm_choice(void) {
    pthread_once(&choice_once, choose_once);
    return &choice;
}
// [gemm_choice]
