/**
 * @file 14_making_it_fast.c
 * @brief Chapter 14 · Making it fast: from the textbook loops to the machine's peak.
 *
 * A ViT spends almost all its time in matrix products,
 * \f[ \text{out}_{ij} = \sum_{k} a_{ik}\, b_{kj}, \qquad 2MKN \text{ floating-point operations}. \f]
 * The chapter takes the product from matmul_naive() to lib's fast kernel one
 * idea at a time (the loop order, cache blocking, packing with a register
 * tile, SIMD, threads; lib/gemm/gemm_steps.h and lib/gemm/gemm.c), timing each step
 * on the reader's machine, then measures the machine's peak, runs ViT-B/16's
 * forward pass against it, and ends with the lesson of a library that runs
 * the wrong kernel for a CPU it does not know.
 *
 * Every number printed is pinned by name and checked against PyTorch by
 * tests/test_ch14_making_it_fast.c (tools/gen_golden_ch14.py), except the
 * timings and what this machine is: its thread count, cache sizes, SIMD
 * instructions, the kernels OpenBLAS and lib picked. Those are printed only,
 * and every comparison of two timings is worded from the measurements.
 *
 * Run: `build/chapters/14_making_it_fast`
 * (and `OPENBLAS_CORETYPE=Prescott build/chapters/14_making_it_fast` to see
 * OpenBLAS run its SSE3 kernels).
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "teach/chapter.h"
#include "chapters.h"
#include "gemm/gemm.h"
#include "gemm/gemm_steps.h"
#include "model/params.h"
#include "base/rng.h"
#include "io/safetensors.h"
#include "model/trace_stages.h"
#include "base/tensor.h"
#include "base/util.h"
#include "model/vit.h"

enum {
    RUNS = 3, // every timing: one untimed run, then the median (the peak: the best) of 3
    // the timed product: the shape of ViT-B/16's attention output projection
    TM = 197, TK = 768, TN = 768,
    // the checked product: no size a multiple of any block, every block edge crossed
    CM = 70, CK = 300, CN = 530,
    // the two large products that measure the peak
    SQ = 1024,             // 1024 × 1024 × 1024
    QM = 197, QK = 768, QN = 2304, // ViT-B/16's q, k, v projection, x · Wᵀ
    CACHE_LINE = 64,       // bytes per cache line on x86-64 (and most ARM) CPUs
};
static const uint64_t CHECK_SEED = 14; // a then b of the checked product, uniform in [-1, 1)
static const uint64_t TIMED_SEED = 140;

/** One rung of the ladder: a function computing out = a · b, and how to run it. */
typedef void StepFn(float *out, const float *a, const float *b, int M, int K, int N);
typedef struct {
    const char *pin;   // its name in the golden: "check.NAME.sample"
    const char *label; // what the tables show
    StepFn *run;
    bool one_thread;   // run with vit_set_threads(1)
} Step;

// The ladder, in order. The last three are lib's real kernels (lib/gemm/gemm.h).
enum { NAIVE, IKJ, BLOCKED, PACKED, TILED_1, TILED, BLAS, N_STEPS };
// [steps]
static const Step STEPS[N_STEPS] = {
    [NAIVE] = {"naive", "matmul_naive    ijk, the textbook", matmul_naive, true},
    [IKJ] = {"ikj", "matmul_ikj      loop order", matmul_ikj, true},
    [BLOCKED] = {"blocked", "matmul_blocked  cache blocking", matmul_blocked, true},
    [PACKED] = {"packed", "matmul_packed   packing, register tile", matmul_packed, true},
    [TILED_1] = {"tiled_1", "matmul_tiled    SIMD micro-kernel, 1 thread", matmul_tiled, true},
    [TILED] = {"tiled", "matmul_tiled    all threads", matmul_tiled, false},
    [BLAS] = {"blas", "matmul_blas     OpenBLAS, all threads", matmul_blas, false},
};
// [steps]

typedef struct {
    float *a, *b, *out;   // the timed product (TM, TK) · (TK, TN)
    double seconds[N_STEPS];
    double peak_gflops;   // the best sgemm measured on a large product
    double qkv_gflops[2]; // tiled, blas on ViT-B/16's q, k, v projection
    int threads;          // what vit_get_threads() said at the start
} Work;

/* ------------------------------------------------------------ helpers */

static int compare_doubles(const void *x, const void *y) {
    const double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

// Seconds of one step on one product, with the step's threads: one untimed run
// (page faults, threads starting, a clock ramping up), then the median of RUNS,
// or the best of them.
// [time_step]
static double time_step(const Step *s, float *out, const float *a, const float *b, int M, int K,
                        int N, int threads, bool best) {
    double t[RUNS];
    vit_set_threads(s->one_thread ? 1 : threads);
    s->run(out, a, b, M, K, N);
    for (int r = 0; r < RUNS; r++) {
        const double t0 = vit_now();
        s->run(out, a, b, M, K, N);
        t[r] = vit_now() - t0;
    }
    vit_set_threads(threads);
    qsort(t, RUNS, sizeof t[0], compare_doubles);
    return best ? t[0] : t[RUNS / 2];
}
// [time_step]

// [gflops]
static double gflops(double flops, double seconds) { return flops / seconds / 1e9; }
// [gflops]

// "3.8 times faster than", "6% faster than", "about as fast as", "4% slower
// than" or "1.6 times slower than": the words for speed `now` against speed
// `before`, from the two measurements.
// [speed_words]
static const char *speed_words(char *buf, size_t size, double now, double before) {
    const double r = now / before;
    if (r >= 1.1) snprintf(buf, size, "%.1f times faster than", r);
    else if (r >= 1.02) snprintf(buf, size, "%.0f%% faster than", 100 * (r - 1));
    else if (r > 1 / 1.02) snprintf(buf, size, "about as fast as");
    else if (r > 1 / 1.1) snprintf(buf, size, "%.0f%% slower than", 100 * (1 - r));
    else snprintf(buf, size, "%.1f times slower than", 1 / r);
    return buf;
}
// [speed_words]

// One line of the ladder: the step, its time and its speed on the timed product.
static void ladder_line(Chapter *ch, const Work *w, int i) {
    const double flops = 2.0 * TM * TK * TN;
    ch_line(ch, "    %-44s %9.2f ms %8.1f GFLOP/s", STEPS[i].label, 1e3 * w->seconds[i],
            gflops(flops, w->seconds[i]));
}

// A step timed on the timed product, its line printed, and how it compares with
// the step before (or with another one, `against`).
// [run_rung]
static double run_rung(Chapter *ch, Work *w, int i, int against, char *words, size_t size) {
    w->seconds[i] = time_step(&STEPS[i], w->out, w->a, w->b, TM, TK, TN, w->threads, false);
    ladder_line(ch, w, i);
    ch_line(ch, "%s", "");
    speed_words(words, size, w->seconds[against], w->seconds[i]); // speed ∝ 1 / seconds
    return w->seconds[against] / w->seconds[i];
}
// [run_rung]

// [cache_bytes]
static long cache_bytes(int name) {
    const long v = sysconf(name);
    return v > 0 ? v : 0;
}
// [cache_bytes]

/* ----------------------------------------------------------- sections */

static void the_work(Chapter *ch) {
    ch_section(ch, "1. The work, and how it is timed");
    const float shape[3] = {TM, TK, TN};
    Tensor t = tensor_view((float *)shape, 1, 3);
    ch_pin(ch, "timed.shape", &t);
    char flops[VIT_NUM_BUF], bytes[VIT_NUM_BUF], bb[VIT_NUM_BUF];
    const float f = ch_value(ch, "timed.flops", 2.0f * TM * TK * TN);
    const float b_bytes = ch_value(ch, "timed.b_bytes", 4.0f * TK * TN);
    ch_say(ch, "Every step below computes the same product, out (%d, %d) = a (%d, %d) · b "
               "(%d, %d): the shape of ViT-B/16's attention output projection. Each of "
               "the %d × %d outputs is a sum of %d products, so the work is "
               "2 · %d · %d · %d = %s floating-point operations (FLOPs: a multiply and "
               "an add per term). The three matrices hold %s bytes, b alone %s.",
           TM, TN, TM, TK, TK, TN, TM, TN, TK, TM, TK, TN,
           vit_thousands(flops, (int64_t)f),
           vit_thousands(bytes, (int64_t)ch_value(ch, "timed.bytes",
                                                  4.0f * (TM * TK + TK * TN + TM * TN))),
           vit_thousands(bb, (int64_t)b_bytes));
    ch_say(ch, "Speed is measured in GFLOP/s: FLOPs / seconds / 10⁹. Each step runs "
               "once untimed (the first run pays for touching fresh memory, starting "
               "threads, a clock speeding up), then %d times, and the median time is kept, "
               "so one slow run (another program on the cores) does not count. Times and speeds are "
               "this run's, on this machine: they vary from run to run and from "
               "machine to machine, and every comparison below is computed from them.",
           RUNS);
}

// out[r][c] for the rows and columns the chapter pins: both sides of every block edge.
static const int SAMPLE_ROWS[] = {0, 63, 64, CM - 1};
static const int SAMPLE_COLS[] = {0, 1, 2, 3, 4, 5, 6, 7, 508, 509, 510, 511, 512, 513, 514, 515,
                                  522, 523, 524, 525, 526, 527, 528, 529};
enum {
    S_ROWS = sizeof SAMPLE_ROWS / sizeof SAMPLE_ROWS[0],
    S_COLS = sizeof SAMPLE_COLS / sizeof SAMPLE_COLS[0],
};

// Pins a sample of out and the sum of all its entries; returns the sum.
// [pin_check]
static double pin_check(Chapter *ch, const char *step, const float *out) {
    float sample[S_ROWS * S_COLS];
    for (int r = 0; r < S_ROWS; r++)
        for (int c = 0; c < S_COLS; c++)
            sample[r * S_COLS + c] = out[(size_t)SAMPLE_ROWS[r] * CN + SAMPLE_COLS[c]];
    Tensor t = tensor_view(sample, 2, S_ROWS, S_COLS);
    char name[64];
    snprintf(name, sizeof name, "check.%s.sample", step);
    ch_pin(ch, name, &t);
    double sum = 0;
    for (size_t i = 0; i < (size_t)CM * CN; i++) sum += out[i];
    return ch_valuef(ch, (float)sum, "check.%s.sum", step);
}
// [pin_check]

static void same_sums(Chapter *ch, Work *w) {
    ch_section(ch, "2. Same sums, different order");
    const float blocks[5] = {GEMM_STEP_MC, GEMM_STEP_KC, GEMM_STEP_NC, GEMM_STEP_MR, GEMM_STEP_NR};
    Tensor tb = tensor_view((float *)blocks, 1, 5);
    ch_pin(ch, "blocks", &tb);
    const float shape[3] = {CM, CK, CN};
    Tensor ts = tensor_view((float *)shape, 1, 3);
    ch_pin(ch, "check.shape", &ts);
    ch_say(ch, "The steps change the order of the additions, never what is added. Before "
               "timing anything, each computes a product whose sizes are no multiple of "
               "any block size: (%d, %d) · (%d, %d), a and b uniform in [-1, 1) (seed %d). "
               "The teaching steps work on blocks of %d rows, %d values of k and %d "
               "columns, with a %d × %d tile, so this product crosses an edge of every "
               "block in every direction and ends on cut-short ones. PyTorch computes "
               "the same product in float64; the tests hold every step to it, here "
               "three entries (the first; the first of the last row and column blocks; "
               "the last) and the sum of all %d × %d:",
           CM, CK, CK, CN, (int)CHECK_SEED, GEMM_STEP_MC, GEMM_STEP_KC, GEMM_STEP_NC,
           GEMM_STEP_MR, GEMM_STEP_NR, CM, CN);
    float *a = vit_malloc(sizeof(float) * CM * CK), *b = vit_malloc(sizeof(float) * CK * CN);
    float *out = vit_malloc(sizeof(float) * CM * CN);
    Rng rng;
    rng_seed(&rng, CHECK_SEED);
    rng_fill_uniform(&rng, a, (size_t)CM * CK, -1.0f, 1.0f);
    rng_fill_uniform(&rng, b, (size_t)CK * CN, -1.0f, 1.0f);
    ch_line(ch, "    %-44s %10s %12s %12s %10s", "step", "out[0][0]", "out[64][512]",
            "out[69][529]", "sum");
    char first[128] = "";
    bool same_digits = true;
    // [check]
    for (int i = 0; i < N_STEPS; i++) {
        vit_set_threads(STEPS[i].one_thread ? 1 : w->threads);
        STEPS[i].run(out, a, b, CM, CK, CN);
        vit_set_threads(w->threads);
        const double sum = pin_check(ch, STEPS[i].pin, out);
        char digits[128];
        snprintf(digits, sizeof digits, "%10.4f %12.4f %12.4f %10.2f", out[0],
                 out[(size_t)64 * CN + 512], out[(size_t)CM * CN - 1], sum);
        if (i == 0) snprintf(first, sizeof first, "%s", digits);
        same_digits = same_digits && strcmp(first, digits) == 0;
        ch_line(ch, "    %-44s %s", STEPS[i].label, digits);
    }
    // [check]
    ch_line(ch, "%s", "");
    ch_say(ch, "%s: a float sum depends on the order of its terms, so the steps differ "
               "in the last bits of float32, and the tests allow for that.",
           same_digits ? "They agree in every digit shown, yet they are not all equal"
                       : "They agree to within the last digit shown");
    free(a);
    free(b);
    free(out);
}

static void naive(Chapter *ch, Work *w) {
    ch_section(ch, "3. The textbook loop");
    ch_say(ch, "matmul_naive() (lib/gemm/gemm.c) is the definition written as three loops, i, "
               "j, then k: one output at a time, a dot product of row i of a and column "
               "j of b.");
    ch_line(ch, "    for i, for j:  sum = 0;  for k: sum += a[i][k] · b[k][j];  out[i][j] = sum");
    ch_line(ch, "%s", "");
    const int stride = (int)ch_value(ch, "naive.column_stride_bytes", 4.0f * TN);
    const int per_line = (int)ch_value(ch, "cache_line_floats", CACHE_LINE / 4.0f);
    ch_say(ch, "It is slow for two reasons. Memory: the column of b is read with a "
               "stride of %d floats, %d bytes, so every value comes from a different "
               "cache line. A line is %d bytes on x86-64 CPUs, %d floats, and the loop "
               "uses one of them before moving on. Arithmetic: `sum +=` is one chain in "
               "which each addition waits for the one before (a few cycles each), and "
               "the compiler may not reorder float additions to run several at once. "
               "On this machine:", TN, stride, CACHE_LINE, per_line);
    // [naive_rung]
    w->seconds[NAIVE] = time_step(&STEPS[NAIVE], w->out, w->a, w->b, TM, TK, TN, w->threads, false);
    ladder_line(ch, w, NAIVE);
    // [naive_rung]
    ch_line(ch, "%s", "");
}

static void loop_order(Chapter *ch, Work *w) {
    ch_section(ch, "4. Step 1: the loop order");
    ch_say(ch, "Swap the two inner loops. With k outside j, row i of out becomes a sum of "
               "rows of b, each scaled by one number a[i][k]:");
    ch_line(ch, "    for i:  out[i][:] = 0;  for k:  for j: out[i][j] += a[i][k] · b[k][j]");
    ch_line(ch, "%s", "");
    const int ops = (int)ch_value(ch, "ikj.memory_ops_per_madd", 3.0f);
    ch_say(ch, "The innermost loop now walks a row of b and a row of out with stride 1, "
               "using every float of every cache line, and its updates do not depend on "
               "each other. It does more memory operations than before (%d per "
               "multiply-add: load b, load out, store out, where naive kept its sum in a "
               "register), but they are sequential and independent. matmul_ikj() in "
               "lib/gemm/gemm_steps.c:", ops);
    char words[64];
    run_rung(ch, w, IKJ, NAIVE, words, sizeof words);
    ch_say(ch, "On this machine the loop order alone made it %s the textbook loop.", words);
}

static void blocking(Chapter *ch, Work *w) {
    ch_section(ch, "5. Step 2: cache blocking");
    char big[VIT_NUM_BUF], small[VIT_NUM_BUF], l2[VIT_NUM_BUF], b_size[VIT_NUM_BUF];
    const long l2_bytes = cache_bytes(_SC_LEVEL2_CACHE_SIZE);
    const float reads_ikj = ch_value(ch, "blocked.b_reads_ikj", (float)TM * TK * TN);
    const float reads_blocked = ch_value(ch, "blocked.b_reads_blocked", (float)TK * TN);
    const long b_bytes = 4L * TK * TN;
    char fits[160];
    if (l2_bytes == 0)
        snprintf(fits, sizeof fits, "this machine does not report its L2's size");
    else if (b_bytes > l2_bytes)
        snprintf(fits, sizeof fits, "this machine's L2 holds %s bytes: b does not fit",
                 vit_thousands(l2, l2_bytes));
    else
        snprintf(fits, sizeof fits, "this machine's L2 holds %s bytes: b fits here, but "
                 "not in a smaller L2", vit_thousands(l2, l2_bytes));
    ch_say(ch, "In matmul_ikj() every row of a walks the whole of b: %s floats read "
               "for the product, b's %s floats %d times over. A core keeps recently used "
               "data in caches: a small, fast L1 and a larger L2 of its own, then an L3 "
               "shared by the cores, larger and slower still. b is %s bytes "
               "(%s); wherever b does not fit in L2, each row of a fetches it again "
               "from further away.",
           vit_thousands(big, (int64_t)reads_ikj), vit_thousands(small, (int64_t)reads_blocked),
           TM, vit_thousands(b_size, b_bytes), fits);
    char block[VIT_NUM_BUF];
    const float block_bytes = ch_value(ch, "blocked.b_block_bytes",
                                       4.0f * GEMM_STEP_KC * GEMM_STEP_NC);
    ch_say(ch, "Blocking cuts b into blocks of %d rows and %d columns, %s bytes, and lets "
               "every row of a use a block before moving on to the next. Each block is "
               "fetched from afar once and then read from the L2 cache by all %d rows: "
               "reads of b from beyond L2 drop from %s floats to %s, %d times fewer. The "
               "sums are the same, so out is zeroed first and each block adds its part "
               "(the loop is the same ikj inside each block):",
           GEMM_STEP_KC, GEMM_STEP_NC, vit_thousands(block, (int64_t)block_bytes), TM,
           vit_thousands(big, (int64_t)reads_ikj), vit_thousands(small, (int64_t)reads_blocked),
           (int)ch_value(ch, "blocked.reuse", reads_ikj / reads_blocked));
    char words[64];
    const double r = run_rung(ch, w, BLOCKED, IKJ, words, sizeof words);
    const char *why =
        r >= 1.25 ? "Here the loop was waiting for memory often enough for the blocks to "
                    "pay. The next steps make the arithmetic itself faster, and blocking is "
                    "what keeps that faster arithmetic fed."
        : r > 0.8 ? "That is the lesson of this step: the ikj loop was not waiting for "
                    "memory but for its own instructions (two loads, a multiply, an add and "
                    "a store for each multiply-add, one float at a time), so feeding it "
                    "faster changes little. Blocking pays once the arithmetic is fast enough "
                    "to wait for memory, which is what the next steps make it."
                  : "The ikj loop was not waiting for memory but for its own instructions "
                    "(two loads, a multiply, an add and a store for each multiply-add, one "
                    "float at a time), so there was nothing for blocking to win, and the "
                    "blocks can cost something: shorter inner loops, restarted more often, and "
                    "rows of b read in pieces instead of one long stream that the CPU's "
                    "prefetcher follows easily. Blocking pays once the arithmetic is fast "
                    "enough to wait for memory, which is what the next steps make it.";
    ch_say(ch, "On this machine blocking made the loop %s the step before. %s", words, why);
}

static void packing(Chapter *ch, Work *w) {
    ch_section(ch, "6. Step 3: packing and a register tile");
    const float tile[2] = {GEMM_STEP_MR, GEMM_STEP_NR};
    Tensor tt = tensor_view((float *)tile, 1, 2);
    ch_pin(ch, "packed.tile", &tt);
    const int sums = (int)ch_value(ch, "packed.sums", (float)(GEMM_STEP_MR * GEMM_STEP_NR));
    const int loads = (int)ch_value(ch, "packed.loads_per_k", (float)(GEMM_STEP_MR + GEMM_STEP_NR));
    char sliver[VIT_NUM_BUF];
    ch_say(ch, "The fix for the instructions is to compute a small tile of out at once. "
               "A micro-kernel keeps a %d × %d tile, %d sums, in local variables (its "
               "loops written out in full, so that they can stay in registers) for a whole "
               "block of k; each step k "
               "loads %d values of a and %d of b and does %d multiply-adds with them: "
               "%.3f loads per multiply-add, against the ikj loop's %d memory operations.",
           GEMM_STEP_MR, GEMM_STEP_NR, sums, GEMM_STEP_MR, GEMM_STEP_NR, sums,
           ch_value(ch, "packed.loads_per_madd", (float)loads / (float)sums),
           (int)ch_value(ch, "ikj.memory_ops_per_madd", 3.0f));
    ch_say(ch, "For the kernel to read a and b strictly in order, each block is first "
               "copied (packed) into slivers: b's as %d-wide slivers stored row by row "
               "(one sliver, %d × %d floats = %s bytes, stays in the L1 cache while the "
               "whole a block streams past it), a's as %d-tall slivers stored column by "
               "column, the edges padded with zeros so the kernel always computes whole "
               "tiles. The micro-kernel, in plain C (lib/gemm/gemm_steps.c):",
           GEMM_STEP_NR, GEMM_STEP_KC, GEMM_STEP_NR,
           vit_thousands(sliver, (int64_t)ch_value(ch, "packed.b_sliver_bytes",
                                                   4.0f * GEMM_STEP_KC * GEMM_STEP_NR)),
           GEMM_STEP_MR);
    ch_line(ch, "    for k < kc:  for r < %d:  for c < %d:  acc[r][c] += a_sliver[k][r] · b_sliver[k][c]",
            GEMM_STEP_MR, GEMM_STEP_NR);
    ch_line(ch, "%s", "");
    char words[64], words_ikj[64];
    // [packed_rung]
    run_rung(ch, w, PACKED, BLOCKED, words, sizeof words);
    speed_words(words_ikj, sizeof words_ikj, w->seconds[IKJ], w->seconds[PACKED]);
    // [packed_rung]
    ch_say(ch, "On this machine that is %s the blocked loop and %s matmul_ikj().", words,
           words_ikj);
}

static void simd(Chapter *ch, Work *w) {
    ch_section(ch, "7. Step 4: the real micro-kernel, SIMD");
    const float lanes[3] = {4, 8, 16};
    Tensor tl = tensor_view((float *)lanes, 1, 3);
    ch_pin(ch, "simd.floats_per_vector", &tl);
    ch_say(ch, "One instruction can work on a whole vector of floats: %d of them in a "
               "128-bit SSE register (every x86-64 CPU), %d in a 256-bit AVX2 register, %d "
               "in a 512-bit AVX-512 one, and a fused multiply-add (FMA) does the multiply "
               "and the add in one instruction. lib is built for generic x86-64, which "
               "only promises SSE2 (so a compiler can turn the plain-C kernel of the step "
               "before into 128-bit SSE at best, without FMA), and lib/gemm/gemm.c compiles its "
               "micro-kernel once per "
               "instruction set (DEFINE_MICRO_KERNEL, with GCC's vector types) and picks "
               "at run time, with __builtin_cpu_supports(), the best this CPU has. This "
               "CPU says:", (int)lanes[0], (int)lanes[1], (int)lanes[2]);
    // [cpu]
    __builtin_cpu_init();
    ch_line(ch, "    sse3 %-3s  avx2 %-3s  fma %-3s  avx512f %-3s",
            __builtin_cpu_supports("sse3") ? "yes" : "no",
            __builtin_cpu_supports("avx2") ? "yes" : "no",
            __builtin_cpu_supports("fma") ? "yes" : "no",
            __builtin_cpu_supports("avx512f") ? "yes" : "no");
    // [cpu]
    ch_line(ch, "%s", "");
    ch_say(ch, "and lib runs its \"%s\" micro-kernel here (lib/gemm/gemm.h lists each one's "
               "tile; on AMD's Zen 4 lib prefers avx2 to avx512, because Zen 4 splits a "
               "512-bit operation into two 256-bit halves, while Zen 5 does not). The "
               "packing, the blocking "
               "loops and the edges are the step before's, written once for every "
               "kernel. matmul_tiled() on one thread (vit_set_threads(1)):",
           gemm_tiled_kernel());
    char words[64];
    run_rung(ch, w, TILED_1, PACKED, words, sizeof words);
    ch_say(ch, "On this machine the SIMD micro-kernel is %s the plain-C one.", words);
}

static void threads(Chapter *ch, Work *w) {
    ch_section(ch, "8. Step 5: threads");
    ch_say(ch, "The outputs are independent, so the cores can share them: matmul_tiled() "
               "cuts out into one rectangle per thread (OpenMP), and no two threads write "
               "the same output. Each thread packs its own blocks of b; a, whose rows "
               "threads side by side share, the team packs once together when it is small "
               "(this a, %d × %d floats, is). This run uses %d threads:", TM, TK, w->threads);
    char words[64];
    // [threads_rung]
    const double r = run_rung(ch, w, TILED, TILED_1, words, sizeof words);
    // [threads_rung]
    if (w->threads > 1 && r <= 1.05 * w->threads)
        ch_say(ch, "That is %s one thread, %.0f%% of the %d× that %d threads could give if "
                   "nothing were lost. Threads cost a little to start and wait for the "
                   "slowest one at the end, and a product of %d rows gives each thread only "
                   "so much work; a busy machine (another program on the cores) costs more.",
               words, 100 * r / w->threads, w->threads, w->threads, TM);
    else if (w->threads > 1)
        ch_say(ch, "That is %s one thread, more than the %d× of %d threads sharing the "
                   "work evenly. It happens: each core brings its own L1 and L2 cache, so "
                   "each thread's share may fit better, and a one-thread run that was slowed "
                   "by something else on the machine makes the ratio look better still.",
               words, w->threads, w->threads);
    else
        ch_say(ch, "With one thread there is nothing to share; run it on a machine with "
                   "more cores (or OMP_NUM_THREADS unset) to see this step.");
}

static void openblas(Chapter *ch, Work *w) {
    ch_section(ch, "9. Step 6: OpenBLAS");
    if (gemm_have_blas())
        ch_say(ch, "OpenBLAS is the BLAS library Linux distributions commonly ship for "
                   "these products (cblas_sgemm). It uses the same scheme, with "
                   "micro-kernels written in assembly for each CPU family, and picks one "
                   "when it starts; here it "
                   "picked \"%s\". matmul_blas(), all threads:", gemm_blas_core());
    else
        ch_say(ch, "This build has no OpenBLAS (make BLAS=0, or the library is not "
                   "installed), so matmul_blas() runs matmul_tiled() again:");
    char words[64];
    // [ladder]
    run_rung(ch, w, BLAS, TILED, words, sizeof words);
    ch_say(ch, "On this machine, on this product, OpenBLAS is %s lib's tiled kernel.", words);
    ch_say(ch, "The whole ladder, (%d, %d) · (%d, %d), %d threads for the last two:", TM, TK,
           TK, TN, w->threads);
    for (int i = 0; i < N_STEPS; i++) ladder_line(ch, w, i);
    // [ladder]
    ch_line(ch, "%s", "");
    ch_say(ch, "From the first line to the fastest, the same sums got %.0f times faster.",
           w->seconds[NAIVE] / (w->seconds[TILED] < w->seconds[BLAS] ? w->seconds[TILED]
                                                                     : w->seconds[BLAS]));
}

// GFLOP/s of the tiled and the blas kernel on one product (b (K,N), or (N,K) when bt).
// [time_fast_pair]
static void time_fast_pair(double gf[2], int M, int K, int N, bool bt, int threads) {
    float *a = vit_malloc(sizeof(float) * M * K), *b = vit_malloc(sizeof(float) * K * N);
    float *out = vit_malloc(sizeof(float) * M * N);
    Rng rng;
    rng_seed(&rng, TIMED_SEED + 1);
    rng_fill_uniform(&rng, a, (size_t)M * K, -1.0f, 1.0f);
    rng_fill_uniform(&rng, b, (size_t)K * N, -1.0f, 1.0f);
    const Step pair[2] = {{"tiled", "", bt ? matmul_bt_tiled : matmul_tiled, false},
                          {"blas", "", bt ? matmul_bt_blas : matmul_blas, false}};
    for (int i = 0; i < 2; i++)
        gf[i] = gflops(2.0 * M * K * N, time_step(&pair[i], out, a, b, M, K, N, threads, true));
    free(a);
    free(b);
    free(out);
}
// [time_fast_pair]

static void peak(Chapter *ch, Work *w) {
    ch_section(ch, "10. The machine's peak");
    double square[2];
    time_fast_pair(square, SQ, SQ, SQ, false, w->threads);
    time_fast_pair(w->qkv_gflops, QM, QK, QN, true, w->threads);
    char f1[VIT_NUM_BUF], f2[VIT_NUM_BUF];
    const float qshape[3] = {QM, QK, QN};
    Tensor tq = tensor_view((float *)qshape, 1, 3);
    ch_pin(ch, "peak.qkv_shape", &tq);
    ch_say(ch, "How fast can this machine multiply matrices at all? A large product gives "
               "the kernels every chance: (%d, %d) · (%d, %d), %s FLOPs, and ViT-B/16's "
               "q, k, v projection x · Wᵀ, (%d, %d) · (%d, %d)ᵀ, %s FLOPs. Both fast "
               "kernels, %d threads, GFLOP/s:",
           (int)ch_value(ch, "peak.square_n", SQ), SQ, SQ, SQ,
           vit_thousands(f1, (int64_t)ch_value(ch, "peak.square_flops", 2.0f * SQ * SQ * SQ)),
           QM, QK, QN, QK,
           vit_thousands(f2, (int64_t)ch_value(ch, "peak.qkv_flops", 2.0f * QM * QK * QN)),
           w->threads);
    ch_line(ch, "    %-28s %8s %8s", "product", "tiled", "blas");
    char name[64];
    snprintf(name, sizeof name, "%d x %d x %d", SQ, SQ, SQ);
    ch_line(ch, "    %-28s %8.1f %8.1f", name, square[0], square[1]);
    snprintf(name, sizeof name, "%d x %d x %d (x W^T)", QM, QK, QN);
    ch_line(ch, "    %-28s %8.1f %8.1f", name, w->qkv_gflops[0], w->qkv_gflops[1]);
    ch_line(ch, "%s", "");
    // [peak]
    w->peak_gflops = square[0];
    const double all[4] = {square[0], square[1], w->qkv_gflops[0], w->qkv_gflops[1]};
    for (int i = 1; i < 4; i++)
        if (all[i] > w->peak_gflops) w->peak_gflops = all[i];
    // [peak]
    ch_say(ch, "Each figure is the best of %d runs after an untimed one. The best of the "
               "four, %.1f GFLOP/s, is what this chapter calls the "
               "machine's peak: not the number on the box (cores × clock × FLOPs per "
               "cycle, which no real product reaches), but the best sgemm measured here.",
           RUNS, w->peak_gflops);
}

/* -------------------------------------------- ViT-B/16, weights in memory */

// Appends printf-style text to the header being written (no overflow: the
// buffer is sized for the whole table, and snprintf stops at its end anyway).
static void append(char *buf, size_t size, size_t *len, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void append(char *buf, size_t size, size_t *len, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    const int n = vsnprintf(buf + *len, size - *len, fmt, ap);
    va_end(ap);
    if (n > 0) *len = *len + (size_t)n < size ? *len + (size_t)n : size - 1;
}

// Fills one tensor: LayerNorm scales 1, biases and shifts 0, weights a repeating
// table of small numbers (a forward pass takes as long whatever the values are).
// [fill_param]
static void fill_param(float *dst, size_t n, VitParamKind kind, const float *table, size_t len) {
    if (kind == VIT_PARAM_NORM_SCALE) {
        for (size_t i = 0; i < n; i++) dst[i] = 1.0f;
    } else if (kind != VIT_PARAM_WEIGHT) {
        memset(dst, 0, n * sizeof *dst);
    } else {
        for (size_t i = 0; i < n; i += len)
            memcpy(dst + i, table, (n - i < len ? n - i : len) * sizeof *dst);
    }
}
// [fill_param]

// ViT-B/16 as a safetensors file in memory, timm's names, ready for vit_build_from():
// no 346 MB file written, no 86 million random numbers drawn. *blob is the
// caller's to free after vit_free().
// [vit_base_in_memory]
static VitStatus vit_base_in_memory(Vit *vit, void **blob, VitError *err) {
    VitConfig cfg;
    VitStatus s = vit_config_for_arch(&cfg, "vit-base", err);
    if (s != VIT_OK) return s;
    const size_t header_size = 1 << 16;
    char *header = vit_malloc(header_size);
    size_t len = 0, offset = 0;
    append(header, header_size, &len, "{");
    VitParamIter it = vit_param_iter(cfg.depth, VIT_ORDER_FORWARD, VIT_QKV_FUSED);
    for (const VitParamSpec *p; (p = vit_param_next(&it));) {
        char name[96];
        int shape[4], ndim = vit_param_shape(p, &cfg, shape);
        const size_t bytes = 4 * (size_t)vit_param_numel(p, &cfg);
        append(header, header_size, &len, "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[",
               offset ? "," : "", vit_param_name(name, sizeof name, p, it.block));
        for (int d = 0; d < ndim; d++)
            append(header, header_size, &len, "%s%d", d ? "," : "", shape[d]);
        append(header, header_size, &len, "],\"data_offsets\":[%zu,%zu]}", offset, offset + bytes);
        offset += bytes;
    }
    append(header, header_size, &len, "}");
    while (len % 8) header[len++] = ' '; // the data starts 8-byte aligned
    const size_t total = 8 + len + offset;
    unsigned char *file = vit_malloc_aligned(total);
    for (int i = 0; i < 8; i++) // the header's length, little-endian
        file[i] = (unsigned char)((uint64_t)len >> (8 * i));
    memcpy(file + 8, header, len);
    free(header);
    float table[4093]; // a prime length, so rows of a weight do not repeat in step
    Rng rng;
    rng_seed(&rng, TIMED_SEED + 2);
    rng_fill_uniform(&rng, table, sizeof table / sizeof *table, -0.03f, 0.03f);
    float *data = (float *)(file + 8 + len);
    it = vit_param_iter(cfg.depth, VIT_ORDER_FORWARD, VIT_QKV_FUSED);
    for (const VitParamSpec *p; (p = vit_param_next(&it));) {
        const size_t n = (size_t)vit_param_numel(p, &cfg);
        fill_param(data, n, p->kind, table, sizeof table / sizeof *table);
        data += n;
    }
    *blob = file;
    SafeTensors st;
    s = st_parse(&st, file, total, "ViT-B/16 (in memory)", err);
    if (s != VIT_OK) return s;
    return vit_build_from(vit, &st, err);
}
// [vit_base_in_memory]

// Median seconds of RUNS forward passes of one image, no listener, after an
// untimed one (which also allocates the activations).
// [time_forward]
static double time_forward(Vit *vit, const Tensor *image, VitError *err) {
    double t[RUNS];
    if (vit_forward(vit, image, NULL, NULL, err) != VIT_OK) return -1;
    for (int r = 0; r < RUNS; r++) {
        const double t0 = vit_now();
        if (vit_forward(vit, image, NULL, NULL, err) != VIT_OK) return -1;
        t[r] = vit_now() - t0;
    }
    qsort(t, RUNS, sizeof t[0], compare_doubles);
    return t[RUNS / 2];
}
// [time_forward]

static void vit_base(Chapter *ch, Work *w) {
    ch_section(ch, "11. ViT-B/16 against the peak");
    VitConfig cfg;
    vit_config_for_arch(&cfg, "vit-base", NULL);
    char bytes[VIT_NUM_BUF];
    const float gflop = ch_value(ch, "vit.gflop", (float)(vit_forward_flops(&cfg, 1) / 1e9));
    ch_say(ch, "Now the whole model: one 224 × 224 image through ViT-B/16, %.1f GFLOP "
               "(vit_forward_flops(), Chapter 09's count), with the backend matmul() "
               "uses by default. The values of the weights do not change the time, so "
               "instead of drawing 86 million random numbers (Chapter 09 does, in "
               "seconds) the chapter fills %s bytes of timm-named tensors with a "
               "repeating pattern, in memory, and hands them to vit_build_from() as if "
               "they were a file.",
           gflop, vit_thousands(bytes, (int64_t)ch_value(ch, "vit.weight_bytes",
                                                         4.0f * (float)vit_param_count(&cfg))));
    Vit vit;
    void *blob = NULL;
    VitError err;
    if (vit_base_in_memory(&vit, &blob, &err) != VIT_OK) {
        ch_say(ch, "cannot build ViT-B/16: %s", err.msg);
        free(blob);
        return;
    }
    Tensor image = tensor_new(4, 1, 3, 224, 224);
    Rng rng;
    rng_seed(&rng, TIMED_SEED + 3);
    rng_fill_uniform(&rng, image.data, image.numel, -1.0f, 1.0f);
    // [forward]
    const double sec = time_forward(&vit, &image, &err);
    char choice[1024];
    gemm_choice_describe(choice, sizeof choice);
    // [forward]
    if (sec < 0) {
        ch_say(ch, "the forward pass failed: %s", err.msg);
    } else {
        const double rate = gflop / sec;
        ch_line(ch, "    vit_forward(): %.0f ms, %.1f GFLOP/s = %.0f%% of the peak, %d threads",
                1e3 * sec, rate, 100 * rate / w->peak_gflops, w->threads);
        ch_line(ch, "    matmul: %s", choice);
        ch_line(ch, "%s", "");
        const int n = (int)ch_value(ch, "vit.tokens", (float)vit_num_tokens(&cfg));
        const int dh = (int)ch_value(ch, "vit.head_dim", (float)(cfg.dim / cfg.heads));
        if (rate > 1.05 * w->peak_gflops)
            ch_say(ch, "The forward pass ran faster than the peak measured moments before, "
                       "which is unlikely on a quiet machine: most likely some of the peak's "
                       "timings were slowed by something else running on this one. The peak is only as good "
                       "as the timings behind it; run the chapter again when the machine is "
                       "idle.");
        else
            ch_say(ch, "The forward pass runs %s the peak. Its products are small beside the "
                       "peak's (%d rows: tiles at the edges are partly wasted, each thread "
                       "gets less work), the two N × N products of attention are smaller "
                       "still ((%d, %d) · (%d, %d) per head), and LayerNorm, softmax, GELU "
                       "and the additions read and write memory for little arithmetic.",
                   rate >= 0.9 * w->peak_gflops ? "close to" : "below", n, n, dh, dh, n);
    }
    tensor_free(&image);
    vit_free(&vit);
    free(blob);
}

static void wrong_kernel(Chapter *ch, Work *w) {
    ch_section(ch, "12. A library that does not know your CPU");
    ch_say(ch, "OpenBLAS chooses its kernels by asking the CPU its family and model. A "
               "CPU newer than the library is not in its table, and a build may then fall "
               "back to kernels for a far older one. Debian 12 ships OpenBLAS 0.3.21; on a "
               "newer Intel Xeon with AVX-512 it ran its SSE3 \"Prescott\" kernels, from "
               "2004: 128-bit vectors and no FMA. Measured there once: on the q, k, "
               "v product of section 10, 71 GFLOP/s for OpenBLAS against 270 for lib's "
               "tiled kernel, and ViT-B/16's forward pass in 811 ms against 282 ms. On "
               "an AMD EPYC (Zen 4) the same library picks \"Cooperlake\", an AVX-512 "
               "kernel, within a few percent of lib's on ViT-B/16's products and faster "
               "on the small products of the model chapter 11 trains.");
    if (gemm_have_blas()) {
        char words[64];
        speed_words(words, sizeof words, w->qkv_gflops[1], w->qkv_gflops[0]);
        ch_say(ch, "Here OpenBLAS picked \"%s\"%s and, on that product, was %s lib's "
                   "tiled kernel (section 10: %.1f against %.1f GFLOP/s).",
               gemm_blas_core(),
               getenv("OPENBLAS_CORETYPE") ? " (as OPENBLAS_CORETYPE told it)" : "",
               words, w->qkv_gflops[1], w->qkv_gflops[0]);
    } else {
        ch_say(ch, "This build has no OpenBLAS, so nothing here can pick a wrong kernel.");
    }
    char choice[1024];
    // [choice]
    gemm_choice_describe(choice, sizeof choice);
    const GemmChoice *c = gemm_choice();
    // [choice]
    // the file's path, with the reader's home written ~ (it is theirs, not the book's)
    char cache[256];
    const char *home = getenv("HOME");
    const size_t home_len = home ? strlen(home) : 0;
    if (home_len > 1 && !strncmp(c->cache, home, home_len) && c->cache[home_len] == '/') {
        char tilde[4096];
        snprintf(tilde, sizeof tilde, "~%s", c->cache + home_len);
        vit_escape(cache, sizeof cache, tilde);
    } else {
        vit_escape(cache, sizeof cache, c->cache); // a path from $XDG_CACHE_HOME or VIT_GEMM_CACHE
    }
    ch_say(ch, "That is why lib does not take a library's speed on trust. The first time "
               "a program asks for the default backend, gemm_choice() (lib/gemm/gemm_choice.c) "
               "times both kernels on that q, k, v product, and on the small products of "
               "one block of chapter 11's training step, forward and backward for 64 "
               "Fashion-MNIST images, the whole list on each thread as training runs it. "
               "For each size it keeps OpenBLAS "
               "only when it is measurably faster (a tie keeps lib's own): products under "
               "GEMM_SMALL_FLOPS, %.0f MFLOP, take the small one's answer. It remembers "
               "both for this CPU, library, kernel and thread count%s%s, when the machine "
               "was quiet while it timed (VIT_GEMM=tiled or blas overrules them). In this "
               "run:", GEMM_SMALL_FLOPS / 1e6,
               cache[0] ? " in " : "", cache);
    ch_line(ch, "    %s", choice);
    ch_line(ch, "%s", "");
    ch_say(ch, "To see the slow kernel on your own machine, tell OpenBLAS which CPU to "
               "believe it has (its builds for many CPUs read OPENBLAS_CORETYPE when they "
               "start), and run this chapter again:");
    ch_line(ch, "    OPENBLAS_CORETYPE=Prescott build/chapters/14_making_it_fast");
    ch_line(ch, "%s", "");
    ch_say(ch, "Sections 9 and 10 then time OpenBLAS's SSE3 kernel, and gemm_choice() "
               "measures again (the kernel is part of what it remembers) and picks lib's "
               "if it is faster. A fast library is fast only on the machines it knows: "
               "measure on yours.");
}

static void whats_next(Chapter *ch) {
    ch_section(ch, "What's next");
    ch_say(ch, "The steps are in lib/gemm/gemm_steps.c and lib/gemm/gemm_blocked.c, the real kernel "
               "in lib/gemm/gemm.c, whose long comment retells this chapter for matmul_tiled(). "
               "`make bench` times the kernels, the forward pass and a training step at "
               "more sizes, and exercise 14 asks you to write matmul_blocked() yourself.");
}

void chapter14_run(Chapter *ch) {
    ch_title(ch, "14", "Making it fast");
    ch_say(ch, "Chapter 09 found that the matrix products do almost all of a ViT's work. "
               "This chapter takes one product from the textbook loops to the fastest "
               "kernel on this machine, one idea at a time, and times every step.");
    Work w = {
        .a = vit_malloc(sizeof(float) * TM * TK),
        .b = vit_malloc(sizeof(float) * TK * TN),
        .out = vit_malloc(sizeof(float) * TM * TN),
        .threads = vit_get_threads(),
    };
    Rng rng;
    rng_seed(&rng, TIMED_SEED);
    rng_fill_uniform(&rng, w.a, (size_t)TM * TK, -1.0f, 1.0f);
    rng_fill_uniform(&rng, w.b, (size_t)TK * TN, -1.0f, 1.0f);
    the_work(ch);
    same_sums(ch, &w);
    naive(ch, &w);
    loop_order(ch, &w);
    blocking(ch, &w);
    packing(ch, &w);
    simd(ch, &w);
    threads(ch, &w);
    openblas(ch, &w);
    peak(ch, &w);
    vit_base(ch, &w);
    wrong_kernel(ch, &w);
    whats_next(ch);
    free(w.a);
    free(w.b);
    free(w.out);
}

#ifndef CHAPTER_NO_MAIN
int main(int argc, char **argv) {
    return chapter_main(argc, argv, chapter14_run,
                        "Chapter 14: from the textbook loops to the machine's peak, timed here.");
}
#endif
