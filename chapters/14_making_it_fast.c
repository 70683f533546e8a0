/**
 * @file 14_making_it_fast.c
 * @brief Chapter 14 · Making it fast: from the textbook loops to the fastest kernel, against the peak on paper.
 *
 * A ViT spends almost all its time in matrix products,
 * \f[ \text{out}_{ij} = \sum_{k} a_{ik}\, b_{kj}, \qquad 2MKN \text{ floating-point operations}. \f]
 * The chapter takes the product from matmul_naive() to lib's fast kernel one
 * idea at a time (the loop order, cache blocking, packing with a register
 * tile, SIMD, threads; lib/gemm/gemm_steps.h and lib/gemm/gemm.c), timing each step
 * on the reader's machine, then measures the best sgemm it can, sets it beside
 * the peak on paper (cores × clock × FMA units × SIMD lanes × 2), runs
 * ViT-B/16's forward pass against both, and ends with the lesson of a library
 * that runs the wrong kernel for a CPU it does not know.
 *
 * Every number printed is pinned by name and checked against PyTorch by
 * tests/test_ch14_making_it_fast.c (tools/gen_golden_ch14.py), except the
 * timings and what this machine is: its thread count, cache sizes, SIMD
 * instructions, the kernels OpenBLAS and lib picked. Those are printed only.
 * Every comparison of two timings is drawn from interleaved rounds (A, B, A,
 * B, ...), and the prose draws a conclusion only when every round agrees
 * beyond a 10 % margin (speed_compare(), pinned by the tests); otherwise it says
 * the run was too noisy to tell.
 *
 * Run: `build/chapters/14_making_it_fast`
 * (and `OPENBLAS_CORETYPE=Prescott build/chapters/14_making_it_fast` to see
 * OpenBLAS run its SSE3 kernels).
 */
#include <math.h>
#include <stdarg.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "teach/chapter.h"
#include "chapters.h"
#include "gemm/gemm.h"
#include "gemm/gemm_steps.h"
#include "model/params.h"
#include "base/rng.h"
#include "io/safetensors.h"
#include "model/trace_stages.h"
#include "model/trace_timing.h"
#include "base/tensor.h"
#include "base/util.h"
#include "model/vit.h"

enum {
    MAX_ROUNDS = 25,  // the most timed rounds the command line may ask for
    FORWARD_RUNS = 3, // ViT-B/16's forward pass: the median of 3 after an untimed one
    FMA_UNITS = 2,    // FMA units per core assumed for the peak on paper (recent x86)
    // the timed product: the shape of ViT-B/16's attention output projection
    TM = 197, TK = 768, TN = 768,
    // the checked product: no size a multiple of any block, every block edge crossed
    CM = 70, CK = 300, CN = 530,
    // the two large products that measure the peak
    SQ = 1024,             // 1024 × 1024 × 1024
    QM = 197, QK = 768, QN = 2304, // ViT-B/16's q, k, v projection, x · Wᵀ
    CACHE_LINE = 64,       // bytes per cache line on x86-64 (and most ARM) CPUs
};
// Other programs keeping this many CPUs busy (on average, /proc/stat) make a
// comparison with a product on all threads too noisy to tell.
// The timed rounds of every comparison, after one untimed run of each step: a
// learner may ask for more (build/chapters/14_making_it_fast --rounds 11).
enum { KNOB_ROUNDS, KNOBS };
static ChapterKnob knobs[KNOBS] = {
    [KNOB_ROUNDS] = {.name = "rounds", .meaning = "timed rounds of every comparison, interleaved",
                      .value = 5, .min = 3, .max = MAX_ROUNDS},
};
static int rounds(void) { return knobs[KNOB_ROUNDS].value; }
static const double BUSY_CPUS = 0.5;
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
    double rounds[MAX_ROUNDS][N_STEPS]; // seconds of every step in every round
    double seconds[N_STEPS];        // the median of each step's rounds: the ladder's times
    double others;        // CPUs other programs kept busy while the ladder was timed (-1: unknown)
    double peak_gflops;   // the best sgemm measured on a large product
    double qkv_gflops[2]; // tiled, blas on ViT-B/16's q, k, v projection, each at its best
    double qkv_ratios[MAX_ROUNDS]; // blas's speed over tiled's on that product, round by round
    double qkv_others;    // CPUs other programs kept busy while the large products were timed
    double paper_gflops;  // the peak on paper, 0 when the clock cannot be read
    int threads;          // what vit_get_threads() said at the start
} Work;

/* ------------------------------------------------------------ helpers */

// [peak_on_paper]
double ch14_theoretical_gflops(int cores, double ghz, int fma_units, int lanes) {
    return cores * ghz * fma_units * lanes * 2.0; // 2 FLOPs, a multiply and an add, per FMA
}
// [peak_on_paper]

// [first_to_fastest]
double ch14_first_to_fastest(const double *seconds, int n) {
    double fastest = seconds[0];
    for (int i = 1; i < n; i++)
        if (seconds[i] < fastest) fastest = seconds[i];
    return seconds[0] / fastest;
}
// [first_to_fastest]

// The whole ladder timed on the timed product: one untimed run of each step
// (fresh memory touched, threads started, a clock ramped up; matmul_naive()
// has nothing to warm up that the others do not), then the rounds the knob asks for (5 in the book), each
// running every step once in turn, so that load coming and going falls on all
// of them. A step's time is the median of its rounds.
// [time_ladder]
static void time_ladder(Work *w) {
    for (int i = NAIVE + 1; i < N_STEPS; i++) {
        vit_set_threads(STEPS[i].one_thread ? 1 : w->threads);
        STEPS[i].run(w->out, w->a, w->b, TM, TK, TN);
    }
    const VitLoad before = vit_load_now();
    for (int r = 0; r < rounds(); r++)
        for (int i = 0; i < N_STEPS; i++) {
            vit_set_threads(STEPS[i].one_thread ? 1 : w->threads);
            const double t0 = vit_now();
            STEPS[i].run(w->out, w->a, w->b, TM, TK, TN);
            w->rounds[r][i] = vit_now() - t0;
        }
    const VitLoad after = vit_load_now();
    vit_set_threads(w->threads);
    w->others = vit_load_others(&before, &after);
    for (int i = 0; i < N_STEPS; i++) {
        double t[MAX_ROUNDS] = {0};
        for (int r = 0; r < rounds(); r++) t[r] = w->rounds[r][i];
        w->seconds[i] = speed_median(t, rounds());
    }
}
// [time_ladder]

// [gflops]
static double gflops(double flops, double seconds) { return flops / seconds / 1e9; }
// [gflops]

// A step's label with its runs of spaces made one: "matmul_tiled SIMD micro-kernel, 1 thread".
static const char *step_name(char *buf, size_t size, int i) {
    size_t n = 0;
    for (const char *c = STEPS[i].label; *c && n + 1 < size; c++)
        if (!(*c == ' ' && n && buf[n - 1] == ' ')) buf[n++] = *c;
    buf[n] = 0;
    return buf;
}

// One line of the ladder: the step, its time and its speed on the timed product.
static void ladder_line(Chapter *ch, const Work *w, int i) {
    const double flops = 2.0 * TM * TK * TN;
    ch_line(ch, "    %-44s %9.2f ms %8.1f GFLOP/s", STEPS[i].label, 1e3 * w->seconds[i],
            gflops(flops, w->seconds[i]));
}

// A comparison with a product on all threads, timed while other programs kept
// `others` CPUs busy: a product on all threads waits for whichever of its
// threads lost its core, so the rounds measure the other programs as much as
// the kernels, and no conclusion is drawn.
static SpeedVerdict busy_verdict(Chapter *ch, const double *ratios, int n, double others,
                                const char *against) {
    double lo, mid, hi;
    speed_verdict(ratios, n, &lo, &mid, &hi);
    ch_say(ch, "Against %s this run was too noisy to tell: other programs kept %.1f CPUs "
               "busy while it was timed, and a product on all threads waits for whichever "
               "thread has lost its core to them (the %d rounds ran from %.2f to %.2f "
               "times the speed, median %.2f). Run the chapter again on an idle machine.",
           against, others, n, lo, hi, mid);
    return SPEED_NOISY;
}

// A step's line of the ladder printed, then its comparison with another step
// (`against`), from the rounds: in each, the other's time over this one's
// (speed ∝ 1 / seconds).
// [run_rung]
static SpeedVerdict rung(Chapter *ch, const Work *w, int i, int against, const char *what,
                        const char *against_words) {
    ladder_line(ch, w, i);
    ch_line(ch, "%s", "");
    double ratios[MAX_ROUNDS] = {0};
    for (int r = 0; r < rounds(); r++) ratios[r] = w->rounds[r][against] / w->rounds[r][i];
    char sentence[512];
    if (!(STEPS[i].one_thread && STEPS[against].one_thread) && w->others >= BUSY_CPUS)
        return busy_verdict(ch, ratios, rounds(), w->others, against_words);
    const SpeedVerdict v = speed_compare(sentence, sizeof sentence, ratios, rounds(), what,
                                       against_words);
    ch_say(ch, "%s", sentence);
    return v;
}
// [run_rung]

// A cache's size in bytes, the data (or unified) cache of that level: from the
// kernel's /sys/devices/system/cpu/cpu0/cache/ when it says, else from
// sysconf(); 0 when neither does. *source names where it came from.
// [cache_bytes]
static long cache_bytes(int level, const char **source) {
    for (int idx = 0; idx < 16; idx++) {
        char path[96], type[32] = "", size[32] = "";
        int lv = 0;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/level", idx);
        FILE *f = fopen(path, "r");
        if (!f) break;
        const bool got = fscanf(f, "%d", &lv) == 1;
        fclose(f);
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/type", idx);
        if (got && lv == level && (f = fopen(path, "r"))) {
            if (fscanf(f, "%31s", type) != 1) type[0] = 0;
            fclose(f);
        }
        if (!got || lv != level || !strcmp(type, "Instruction") || !type[0]) continue;
        snprintf(path, sizeof path, "/sys/devices/system/cpu/cpu0/cache/index%d/size", idx);
        long n = 0;
        char unit = 0;
        if ((f = fopen(path, "r"))) {
            if (fscanf(f, "%31s", size) != 1) size[0] = 0;
            fclose(f);
        }
        if (sscanf(size, "%ld%c", &n, &unit) >= 1 && n > 0) {
            *source = "/sys/devices/system/cpu/cpu0/cache";
            return unit == 'K' ? n << 10 : unit == 'M' ? n << 20 : n;
        }
    }
    const int name = level == 1   ? _SC_LEVEL1_DCACHE_SIZE
                     : level == 2 ? _SC_LEVEL2_CACHE_SIZE
                                  : _SC_LEVEL3_CACHE_SIZE;
    const long v = sysconf(name);
    *source = "sysconf()";
    return v > 0 ? v : 0;
}
// [cache_bytes]

// "1,048,576 bytes", or "an unknown number of bytes" when the machine did not say.
static const char *bytes_or_unknown(char *buf, size_t size, long bytes) {
    if (bytes <= 0) return "unknown (the machine does not say)";
    char n[VIT_NUM_BUF];
    snprintf(buf, size, "%s bytes", vit_thousands(n, bytes));
    return buf;
}

// The clock in GHz: the kernel's highest clock for cpu0 when cpufreq is there,
// else the first "cpu MHz" of /proc/cpuinfo (the clock at that moment), else 0.
// [clock_ghz]
static double clock_ghz(const char **source) {
    FILE *f = fopen("/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq", "r");
    long khz = 0;
    if (f) {
        const bool got = fscanf(f, "%ld", &khz) == 1;
        fclose(f);
        if (got && khz > 0) {
            *source = "/sys/devices/system/cpu/cpu0/cpufreq/cpuinfo_max_freq, the highest clock";
            return khz / 1e6;
        }
    }
    if ((f = fopen("/proc/cpuinfo", "r"))) {
        char line[256];
        double mhz = 0;
        while (fgets(line, sizeof line, f))
            if (!strncmp(line, "cpu MHz", 7) && sscanf(strchr(line, ':') ? strchr(line, ':') + 1
                                                                          : "",
                                                       "%lf", &mhz) == 1)
                break;
        fclose(f);
        if (mhz > 0) {
            *source = "/proc/cpuinfo's \"cpu MHz\", the clock at that moment (a boost "
                      "clock can be higher)";
            return mhz / 1e3;
        }
    }
    *source = "nowhere: neither cpufreq nor /proc/cpuinfo gives it here";
    return 0;
}
// [clock_ghz]

// Floats per vector of lib's micro-kernel in use (gemm_tiled_kernel()).
static int kernel_lanes(const char *kernel) {
    return !strcmp(kernel, "avx512") ? 16 : !strcmp(kernel, "avx2") ? 8 : 4;
}

/* ----------------------------------------------------------- sections */

static void the_work(Chapter *ch) {
    if (!ch_section(ch, "1. The work, and how it is timed")) return;
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
               "threads, a clock speeding up). Then the whole ladder runs %d times over, "
               "every step once in each round, one after the other, so that another "
               "program that comes and goes slows all the steps, not just one. A step's "
               "time is the median of its %d rounds.", rounds(), rounds());
    ch_say(ch, "A comparison takes the ratio of two steps' speeds in each round. It "
               "draws a conclusion (faster, slower, about as fast) only when all %d "
               "ratios agree: all at least %.1f, all at most 1/%.1f, or all between the "
               "two. The range of %d rounds holds the true median ratio 15 times out "
               "of 16 (it misses only when all %d fall on the same side of it, "
               "2 · (1/2)^%d = 1/16). Otherwise the chapter says the run was too noisy "
               "to tell, and prints the range. Times and speeds are this run's, on this "
               "machine: they vary from run to run and from machine to machine.",
           rounds(), SPEED_MARGIN, SPEED_MARGIN, rounds(), rounds(), rounds());
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
    if (!ch_section(ch, "2. Same sums, different order")) return;
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
    if (!ch_section(ch, "3. The textbook loop")) return;
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
               "The whole ladder is timed now, in rounds; on this machine:",
           TN, stride, CACHE_LINE, per_line);
    // [naive_rung]
    time_ladder(w);
    ladder_line(ch, w, NAIVE);
    // [naive_rung]
    ch_line(ch, "%s", "");
    if (w->others >= 0)
        ch_verdict(ch, "While the ladder was timed, other programs kept %.1f of this machine's "
                   "CPUs busy on average (/proc/stat).", w->others);
}

static void loop_order(Chapter *ch, Work *w) {
    if (!ch_section(ch, "4. Step 1: the loop order")) return;
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
    rung(ch, w, IKJ, NAIVE, "the loop order alone made it", "the textbook loop");
}

static void blocking(Chapter *ch, Work *w) {
    if (!ch_section(ch, "5. Step 2: cache blocking")) return;
    char big[VIT_NUM_BUF], small[VIT_NUM_BUF], b_size[VIT_NUM_BUF];
    char l1[VIT_NUM_BUF + 64], l2[VIT_NUM_BUF + 64], l3[VIT_NUM_BUF + 64];
    const char *src1 = "", *src2 = "", *src3 = "";
    // [caches]
    const long l1_bytes = cache_bytes(1, &src1), l2_bytes = cache_bytes(2, &src2),
               l3_bytes = cache_bytes(3, &src3);
    // [caches]
    const float reads_ikj = ch_value(ch, "blocked.b_reads_ikj", (float)TM * TK * TN);
    const float reads_blocked = ch_value(ch, "blocked.b_reads_blocked", (float)TK * TN);
    const long b_bytes = 4L * TK * TN;
    ch_say(ch, "In matmul_ikj() every row of a walks the whole of b: %s floats read "
               "for the product, b's %s floats %d times over. A core keeps recently used "
               "data in caches: a small, fast L1 and a larger L2 of its own, then an L3 "
               "shared by the cores, larger and slower still. This machine reports (from "
               "%s):",
           vit_thousands(big, (int64_t)reads_ikj), vit_thousands(small, (int64_t)reads_blocked),
           TM, src2);
    ch_line(ch, "    L1 data %s, L2 %s, L3 %s", bytes_or_unknown(l1, sizeof l1, l1_bytes),
            bytes_or_unknown(l2, sizeof l2, l2_bytes), bytes_or_unknown(l3, sizeof l3, l3_bytes));
    ch_line(ch, "%s", "");
    char fits[200];
    if (l2_bytes == 0)
        snprintf(fits, sizeof fits, "this machine does not say whether it fits in L2");
    else
        snprintf(fits, sizeof fits, "%s this machine's L2", b_bytes > l2_bytes
                                                                ? "more than"
                                                                : "no more than");
    ch_say(ch, "b is %s bytes, %s%s.", vit_thousands(b_size, b_bytes), fits,
           l2_bytes && b_bytes > l2_bytes ? ": each row of a fetches it again from "
                                            "further away than L2"
                                          : "");
    char block[VIT_NUM_BUF];
    const float block_bytes = ch_value(ch, "blocked.b_block_bytes",
                                       4.0f * GEMM_STEP_KC * GEMM_STEP_NC);
    const char *block_fits = l2_bytes == 0                     ? "(this machine's L2 size unknown)"
                             : (long)block_bytes <= l2_bytes / 2 ? "at most half this machine's L2"
                             : (long)block_bytes <= l2_bytes     ? "within this machine's L2"
                                                                 : "more than this machine's L2";
    ch_say(ch, "Blocking cuts b into blocks of %d rows and %d columns, %s bytes, %s, and "
               "lets every row of a use a block before moving on to the next. Each block "
               "is fetched from afar once and can then be read from a nearer cache by all "
               "%d rows: reads of b from afar drop from %s floats to %s, %d times fewer. "
               "The sums are the same, so out is zeroed first and each block adds its part "
               "(the loop is the same ikj inside each block):",
           GEMM_STEP_KC, GEMM_STEP_NC, vit_thousands(block, (int64_t)block_bytes), block_fits,
           TM, vit_thousands(big, (int64_t)reads_ikj), vit_thousands(small, (int64_t)reads_blocked),
           (int)ch_value(ch, "blocked.reuse", reads_ikj / reads_blocked));
    // [intensity]
    // FLOPs per byte of b fetched from afar: 2 FLOPs (a multiply and an add) per
    // multiply-add, M·K·N of them, over the bytes of b each loop brings from afar
    const float per_byte_ikj = ch_value(ch, "blocked.intensity_ikj", 2.0f * TM * TK * TN / (4.0f * reads_ikj));
    const float per_byte_blocked =
        ch_value(ch, "blocked.intensity_blocked", 2.0f * TM * TK * TN / (4.0f * reads_blocked));
    // [intensity]
    ch_say(ch, "Said as arithmetic intensity, the FLOPs done per byte of b brought from "
               "afar: the ikj loop does %.1f (one multiply-add per float it fetches), the "
               "blocked loop %.1f, %d times more. The lower it is, the more the speed "
               "depends on how fast the far cache or memory delivers bytes rather than on "
               "the arithmetic. This chapter does not measure those rates; the timing "
               "below says whether the difference mattered here.",
           per_byte_ikj, per_byte_blocked, (int)lroundf(per_byte_blocked / per_byte_ikj));
    const SpeedVerdict v = rung(ch, w, BLOCKED, IKJ, "blocking made the loop", "the step before");
    if (v == SPEED_FASTER)
        ch_verdict(ch, "Blocking paid here. The next steps make the arithmetic itself faster, "
                   "and keep the blocks.");
    else if (v != SPEED_NOISY)
        ch_verdict(ch, "So on its own blocking did not pay here. It changes where b is read "
                   "from, not the instructions: the ikj loop still does two loads, a "
                   "multiply, an add and a store for each multiply-add, one float at a "
                   "time. The next steps change that, and keep the blocks.");
}

static void packing(Chapter *ch, Work *w) {
    if (!ch_section(ch, "6. Step 3: packing and a register tile")) return;
    const float tile[2] = {GEMM_STEP_MR, GEMM_STEP_NR};
    Tensor tt = tensor_view((float *)tile, 1, 2);
    ch_pin(ch, "packed.tile", &tt);
    const int sums = (int)ch_value(ch, "packed.sums", (float)(GEMM_STEP_MR * GEMM_STEP_NR));
    const int loads = (int)ch_value(ch, "packed.loads_per_k", (float)(GEMM_STEP_MR + GEMM_STEP_NR));
    char sliver[VIT_NUM_BUF], l1[VIT_NUM_BUF + 64];
    const char *src = "";
    const long l1_bytes = cache_bytes(1, &src);
    const float sliver_bytes = ch_value(ch, "packed.b_sliver_bytes",
                                        4.0f * GEMM_STEP_KC * GEMM_STEP_NR);
    ch_say(ch, "To spend fewer instructions on each multiply-add, compute a small tile of "
               "out at once. "
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
               "(one sliver, %d × %d floats = %s bytes, is read again for every tile of "
               "the a block; this machine's L1 data cache holds %s%s), a's as %d-tall "
               "slivers stored column by column, the edges padded with zeros so the "
               "kernel always computes whole tiles. The micro-kernel, in plain C "
               "(lib/gemm/gemm_steps.c):",
           GEMM_STEP_NR, GEMM_STEP_KC, GEMM_STEP_NR,
           vit_thousands(sliver, (int64_t)sliver_bytes), bytes_or_unknown(l1, sizeof l1, l1_bytes),
           l1_bytes == 0                          ? ""
           : (long)sliver_bytes * 4 <= l1_bytes ? ", room for the sliver four times over"
           : (long)sliver_bytes <= l1_bytes     ? ", room for the sliver"
                                                : ", less than the sliver",
           GEMM_STEP_MR);
    ch_line(ch, "    for k < kc:  for r < %d:  for c < %d:  acc[r][c] += a_sliver[k][r] · b_sliver[k][c]",
            GEMM_STEP_MR, GEMM_STEP_NR);
    ch_line(ch, "%s", "");
    // [packed_rung]
    rung(ch, w, PACKED, BLOCKED, "packing and the tile made it", "the blocked loop");
    double ratios[MAX_ROUNDS] = {0};
    for (int r = 0; r < rounds(); r++) ratios[r] = w->rounds[r][IKJ] / w->rounds[r][PACKED];
    char sentence[512];
    speed_compare(sentence, sizeof sentence, ratios, rounds(), "they made it", "matmul_ikj()");
    ch_say(ch, "%s", sentence);
    // [packed_rung]
}

// The largest block each cache allows, Goto and van de Geijn's rule: a kc × NR
// sliver of b in half of L1 (the a sliver streams through the other half), an
// mc × kc block of a in half of L2; and BLIS's third level, a kc × nc panel of
// b in half of L3; 0 when
// the machine does not say the cache's size.
// [block_bounds]
static long bound_in(long cache_bytes, long floats_per_unit) {
    return cache_bytes > 0 ? cache_bytes / 2 / (4 * floats_per_unit) : 0;
}
// [block_bounds]

static void bound_line(Chapter *ch, const char *block, const char *rule, long bound, int used) {
    char b[VIT_NUM_BUF], u[VIT_NUM_BUF];
    ch_line(ch, "    %-12s %-24s %12s %6s", block, rule, bound ? vit_thousands(b, bound) : "unknown",
            vit_thousands(u, used));
}

static void block_sizes(Chapter *ch) {
    const float blocks[3] = {GEMM_TILED_KC, GEMM_TILED_MC, GEMM_TILED_NC};
    Tensor tb = tensor_view((float *)blocks, 1, 3);
    ch_pin(ch, "simd.tiled_blocks", &tb);
    int mr, nr;
    gemm_tiled_tile(&mr, &nr);
    const char *src = "";
    const long l1 = cache_bytes(1, &src), l2 = cache_bytes(2, &src), l3 = cache_bytes(3, &src);
    const long kc = bound_in(l1, nr), mc = bound_in(l2, GEMM_TILED_KC),
               nc = bound_in(l3, GEMM_TILED_KC);
    ch_say(ch, "How big should the blocks be? Goto and van de Geijn's answer (the design of "
               "GotoBLAS, then OpenBLAS and BLIS) reads it off the caches: the micro-kernel "
               "keeps one kc × NR sliver of b in L1 while slivers of a stream past it, so "
               "kc · NR floats should fill about half of L1; the mc × kc block of a those "
               "slivers come from should fill about half of L2; and BLIS, which added a "
               "third level, puts the kc × nc panel of b in about half of L3. For lib's \"%s\" kernel (a %d × %d tile, NR = %d) and this "
               "machine's caches, the largest each rule allows, beside lib's sizes "
               "(lib/gemm/gemm.h):", gemm_tiled_kernel(), mr, nr, nr);
    ch_line(ch, "    %-12s %-24s %12s %6s", "block", "rule", "this machine", "lib");
    bound_line(ch, "kc (depth)", "L1 / 2 / (4 bytes · NR)", kc, GEMM_TILED_KC);
    bound_line(ch, "mc (rows)", "L2 / 2 / (4 bytes · kc)", mc, GEMM_TILED_MC);
    bound_line(ch, "nc (columns)", "L3 / 2 / (4 bytes · kc)", nc, GEMM_TILED_NC);
    ch_line(ch, "%s", "");
    const bool known = kc && mc && nc;
    const bool within = GEMM_TILED_KC <= kc && GEMM_TILED_MC <= mc && GEMM_TILED_NC <= nc;
    ch_say(ch, "%s The rule gives an upper end, not an optimum: a smaller mc wastes less at "
               "the edges of a 197-row product, and lib's sizes were measured on one machine "
               "to be as fast as their neighbours (lib/gemm/gemm.c says which).",
           !known  ? "This machine does not report every cache's size, so the rule cannot be "
                     "applied in full here."
           : within ? "lib's sizes are within what this machine's caches allow."
                    : "Some of lib's sizes are beyond what this machine's caches allow: its "
                      "blocks spill to the next cache, which costs time in every pass.");
}

static void simd(Chapter *ch, Work *w) {
    if (!ch_section(ch, "7. Step 4: the real micro-kernel, SIMD")) return;
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
    rung(ch, w, TILED_1, PACKED, "the SIMD micro-kernel made it", "the plain-C one");
    block_sizes(ch);
}

static void threads(Chapter *ch, Work *w) {
    if (!ch_section(ch, "8. Step 5: threads")) return;
    ch_say(ch, "The outputs are independent, so the cores can share them: matmul_tiled() "
               "cuts out into one rectangle per thread (OpenMP), and no two threads write "
               "the same output. Each thread packs its own blocks of b; a, whose rows "
               "threads side by side share, the team packs once together when it is small "
               "(this a, %d × %d floats, is). This run uses %d threads:", TM, TK, w->threads);
    if (w->threads == 1) {
        ladder_line(ch, w, TILED);
        ch_line(ch, "%s", "");
        ch_say(ch, "With one thread there is nothing to share; run it on a machine with "
                   "more cores (or OMP_NUM_THREADS unset) to see this step.");
        return;
    }
    // [threads_rung]
    const SpeedVerdict v = rung(ch, w, TILED, TILED_1, "all threads made it", "one thread");
    // [threads_rung]
    double r[MAX_ROUNDS] = {0}, mid;
    for (int i = 0; i < rounds(); i++) r[i] = w->rounds[i][TILED_1] / w->rounds[i][TILED];
    speed_verdict(r, rounds(), NULL, &mid, NULL);
    if (v == SPEED_FASTER && mid <= 1.05 * w->threads)
        ch_verdict(ch, "That is %.0f%% of the %d× that %d threads could give if nothing were "
                   "lost: a parallel product waits for its slowest thread at the end, and "
                   "a product of %d rows gives each thread only so much work.",
               100 * mid / w->threads, w->threads, w->threads, TM);
    else if (v == SPEED_FASTER)
        ch_verdict(ch, "That is more than the %d× of %d threads sharing the work evenly; the "
                   "timings alone do not say why.", w->threads, w->threads);
    else if (v != SPEED_NOISY)
        ch_verdict(ch, "Here threads did not pay on this product.");
}

static void openblas(Chapter *ch, Work *w) {
    if (!ch_section(ch, "9. Step 6: OpenBLAS")) return;
    if (gemm_have_blas())
        ch_say(ch, "OpenBLAS is the BLAS library Linux distributions commonly ship for "
                   "these products (cblas_sgemm). It uses the same scheme, with "
                   "micro-kernels written in assembly for each CPU family, and picks one "
                   "when it starts; here it "
                   "picked \"%s\". matmul_blas(), all threads:", gemm_blas_core());
    else
        ch_verdict(ch, "This build has no OpenBLAS (make BLAS=0, or the library is not "
                   "installed), so matmul_blas() runs matmul_tiled() again:");
    // [ladder]
    rung(ch, w, BLAS, TILED, "OpenBLAS, on this product, was", "lib's tiled kernel");
    ch_say(ch, "The whole ladder, (%d, %d) · (%d, %d), %d threads for the last two, each "
               "time the median of its %d rounds:", TM, TK, TK, TN, w->threads, rounds());
    for (int i = 0; i < N_STEPS; i++) ladder_line(ch, w, i);
    // [ladder]
    ch_line(ch, "%s", "");
    char name[64];
    // [first_line]
    int fastest = 0;
    for (int i = 1; i < N_STEPS; i++)
        if (w->seconds[i] < w->seconds[fastest]) fastest = i;
    const double x = ch14_first_to_fastest(w->seconds, N_STEPS);
    double r[MAX_ROUNDS] = {0}, lo, hi;
    for (int i = 0; i < rounds(); i++) r[i] = w->rounds[i][NAIVE] / w->rounds[i][fastest];
    const SpeedVerdict v = speed_verdict(r, rounds(), &lo, NULL, &hi);
    // [first_line]
    if (v == SPEED_FASTER)
        ch_verdict(ch, "From the first line to the fastest (%s, %.2f ms), the same sums got "
                   "%.0f times faster: %.2f ms / %.2f ms, from the table (between %.0f and "
                   "%.0f times in each round).",
               step_name(name, sizeof name, fastest), 1e3 * w->seconds[fastest], x,
               1e3 * w->seconds[NAIVE], 1e3 * w->seconds[fastest], lo, hi);
    else
        ch_verdict(ch, "From the first line to the fastest (%s), the table gives %.0f times "
                   "faster, but the rounds ran from %.2f to %.2f times: too noisy to tell.",
               step_name(name, sizeof name, fastest), x, lo, hi);
}

// GFLOP/s of the tiled and the blas kernel on one product (b (K,N), or (N,K) when bt),
// each at its best round, and in ratios[] blas's speed over tiled's in each round:
// one untimed run of each, then the knob's rounds of tiled, blas. Returns the CPUs
// other programs kept busy meanwhile (-1: unknown).
// [time_fast_pair]
static double time_fast_pair(double gf[2], double ratios[MAX_ROUNDS], int M, int K, int N, bool bt,
                             int threads) {
    float *a = vit_malloc(sizeof(float) * M * K), *b = vit_malloc(sizeof(float) * K * N);
    float *out = vit_malloc(sizeof(float) * M * N);
    Rng rng;
    rng_seed(&rng, TIMED_SEED + 1);
    rng_fill_uniform(&rng, a, (size_t)M * K, -1.0f, 1.0f);
    rng_fill_uniform(&rng, b, (size_t)K * N, -1.0f, 1.0f);
    StepFn *const pair[2] = {bt ? matmul_bt_tiled : matmul_tiled, bt ? matmul_bt_blas : matmul_blas};
    vit_set_threads(threads);
    for (int i = 0; i < 2; i++) pair[i](out, a, b, M, K, N);
    double best[2] = {1e30, 1e30};
    const VitLoad before = vit_load_now();
    for (int r = 0; r < rounds(); r++) {
        double t[2];
        for (int i = 0; i < 2; i++) {
            const double t0 = vit_now();
            pair[i](out, a, b, M, K, N);
            t[i] = vit_now() - t0;
            if (t[i] < best[i]) best[i] = t[i];
        }
        ratios[r] = t[0] / t[1];
    }
    const VitLoad after = vit_load_now();
    for (int i = 0; i < 2; i++) gf[i] = gflops(2.0 * M * K * N, best[i]);
    free(a);
    free(b);
    free(out);
    return vit_load_others(&before, &after);
}
// [time_fast_pair]

static void peak(Chapter *ch, Work *w) {
    if (!ch_section(ch, "10. The best measured, and the peak on paper")) return;
    double square[2], square_ratios[MAX_ROUNDS];
    const double others1 = time_fast_pair(square, square_ratios, SQ, SQ, SQ, false, w->threads);
    w->qkv_others = time_fast_pair(w->qkv_gflops, w->qkv_ratios, QM, QK, QN, true, w->threads);
    w->qkv_others = w->qkv_others > others1 ? w->qkv_others : others1;
    char f1[VIT_NUM_BUF], f2[VIT_NUM_BUF];
    const float qshape[3] = {QM, QK, QN};
    Tensor tq = tensor_view((float *)qshape, 1, 3);
    ch_pin(ch, "peak.qkv_shape", &tq);
    ch_say(ch, "How fast can this machine multiply matrices at all? A large product gives "
               "the kernels every chance: (%d, %d) · (%d, %d), %s FLOPs, and ViT-B/16's "
               "q, k, v projection x · Wᵀ, (%d, %d) · (%d, %d)ᵀ, %s FLOPs. Both fast "
               "kernels, %d threads, GFLOP/s of each one's fastest of %d interleaved "
               "rounds (after an untimed run of each):",
           (int)ch_value(ch, "peak.square_n", SQ), SQ, SQ, SQ,
           vit_thousands(f1, (int64_t)ch_value(ch, "peak.square_flops", 2.0f * SQ * SQ * SQ)),
           QM, QK, QN, QK,
           vit_thousands(f2, (int64_t)ch_value(ch, "peak.qkv_flops", 2.0f * QM * QK * QN)),
           w->threads, rounds());
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
    ch_say(ch, "The best of the four, %.1f GFLOP/s, is the best this chapter measured here: "
               "a measurement, not the machine's peak.", w->peak_gflops);
    // [peak_on_paper_used]
    const char *clock_src = "";
    const double ghz = round(clock_ghz(&clock_src) * 1e3) / 1e3; // the clock as printed
    const long online = sysconf(_SC_NPROCESSORS_ONLN);
    const int cores = online > 0 && online < w->threads ? (int)online : w->threads;
    const char *kernel = gemm_tiled_kernel();
    const int lanes = kernel_lanes(kernel);
    const double paper = ch14_theoretical_gflops(cores, ghz, FMA_UNITS, lanes);
    w->paper_gflops = paper;
    // [peak_on_paper_used]
    ch_say(ch, "The peak on paper is what the hardware could do if every cycle of every "
               "core finished its FMAs: cores × clock × FMA units per core × SIMD lanes × "
               "2 FLOPs per FMA (a multiply and an add). Here: %d cores (the threads the "
               "products ran on, one per CPU; two hyper-threads of one core would share "
               "its FMA units), the clock read from %s, %d FMA units per core (an "
               "assumption: recent x86 cores have two), and %d float lanes, those of lib's "
               "\"%s\" kernel (8 for AVX2, 16 for AVX-512).",
           cores, clock_src, FMA_UNITS, lanes, kernel);
    if (ghz > 0)
        ch_line(ch, "    %d × %.3f GHz × %d × %d × 2 = %.1f GFLOP/s on paper; best measured "
                    "%.1f, %.0f%% of it",
                cores, ghz, FMA_UNITS, lanes, paper, w->peak_gflops,
                100 * w->peak_gflops / paper);
    else
        ch_line(ch, "    the clock cannot be read here, so there is no peak on paper; best "
                    "measured %.1f GFLOP/s", w->peak_gflops);
    ch_line(ch, "%s", "");
    if (ghz > 0 && w->peak_gflops > paper)
        ch_verdict(ch, "The best measured is above the peak on paper, which no product can be: "
                   "so an input of the formula is wrong for this machine. Most likely the "
                   "cores ran at a boost clock above the one read, or they have more FMA "
                   "units than the %d assumed.",
               FMA_UNITS);
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

// ViT-B/16 in memory (vit_base_in_memory()) and the one random image every
// timing of it uses; false (and said) when it cannot be built.
static bool timed_model(Chapter *ch, Vit *vit, void **blob, Tensor *image) {
    VitError err;
    if (vit_base_in_memory(vit, blob, &err) != VIT_OK) {
        ch_verdict(ch, "cannot build ViT-B/16: %s", err.msg);
        free(*blob);
        return false;
    }
    *image = tensor_new(4, 1, 3, 224, 224);
    Rng rng;
    rng_seed(&rng, TIMED_SEED + 3);
    rng_fill_uniform(&rng, image->data, image->numel, -1.0f, 1.0f);
    return true;
}

// Median seconds of FORWARD_RUNS forward passes of one image, no listener,
// after an untimed one (which also allocates the activations); *fastest gets
// the fastest of them.
// [time_forward]
static double time_forward(Vit *vit, const Tensor *image, double *fastest, VitError *err) {
    double t[FORWARD_RUNS];
    if (vit_forward(vit, image, NULL, NULL, err) != VIT_OK) return -1;
    for (int r = 0; r < FORWARD_RUNS; r++) {
        const double t0 = vit_now();
        if (vit_forward(vit, image, NULL, NULL, err) != VIT_OK) return -1;
        t[r] = vit_now() - t0;
    }
    *fastest = t[0];
    for (int r = 1; r < FORWARD_RUNS; r++)
        if (t[r] < *fastest) *fastest = t[r];
    return speed_median(t, FORWARD_RUNS);
}
// [time_forward]

static void vit_base(Chapter *ch, Work *w) {
    if (!ch_section(ch, "11. ViT-B/16 against the best measured")) return;
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
    Tensor image;
    VitError err;
    if (!timed_model(ch, &vit, &blob, &image)) return;
    // [forward]
    double fastest = 0;
    const double sec = time_forward(&vit, &image, &fastest, &err);
    char choice[1024];
    gemm_choice_describe(choice, sizeof choice);
    // [forward]
    if (sec < 0) {
        ch_verdict(ch, "the forward pass failed: %s", err.msg);
    } else {
        const double rate = gflop / sec, best_rate = gflop / fastest;
        char paper[64] = "";
        if (w->paper_gflops > 0)
            snprintf(paper, sizeof paper, ", %.0f%% of the peak on paper", 100 * rate / w->paper_gflops);
        ch_line(ch, "    vit_forward(): %.0f ms, %.1f GFLOP/s = %.0f%% of the best measured%s, "
                    "%d threads",
                1e3 * sec, rate, 100 * rate / w->peak_gflops, paper, w->threads);
        ch_line(ch, "    matmul: %s", choice);
        ch_line(ch, "%s", "");
        const int n = (int)ch_value(ch, "vit.tokens", (float)vit_num_tokens(&cfg));
        const int dh = (int)ch_value(ch, "vit.head_dim", (float)(cfg.dim / cfg.heads));
        if (best_rate < w->peak_gflops / SPEED_MARGIN)
            ch_verdict(ch, "Even its fastest of the %d runs, %.1f GFLOP/s, is more than 10%% "
                       "below the best measured. Its products are small beside those of "
                       "section 10 (%d rows: tiles at the edges are partly wasted, each "
                       "thread gets less work), the two N × N products of attention are "
                       "smaller still ((%d, %d) · (%d, %d) per head), and LayerNorm, "
                       "softmax, GELU and the additions do little arithmetic for the memory "
                       "they read and write.",
                   FORWARD_RUNS, best_rate, n, n, dh, dh, n);
        else
            ch_verdict(ch, "Its fastest of the %d runs, %.1f GFLOP/s, is not more than 10%% "
                       "below the best measured in section 10, whose products are larger "
                       "and simpler: either the forward pass ran well or section 10's "
                       "timings were slowed by something else on this machine, and this "
                       "run cannot tell which. Run the chapter again when the machine is "
                       "idle.",
                   FORWARD_RUNS, best_rate);
    }
    tensor_free(&image);
    vit_free(&vit);
    free(blob);
}

static void wrong_kernel(Chapter *ch, Work *w) {
    if (!ch_section(ch, "12. A library that does not know your CPU")) return;
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
        ch_verdict(ch, "Here OpenBLAS picked \"%s\"%s. On that product, in section 10, its best "
                   "was %.1f GFLOP/s against %.1f for lib's tiled kernel.",
               gemm_blas_core(),
               getenv("OPENBLAS_CORETYPE") ? " (as OPENBLAS_CORETYPE told it)" : "",
               w->qkv_gflops[1], w->qkv_gflops[0]);
        if (w->qkv_others >= BUSY_CPUS)
            busy_verdict(ch, w->qkv_ratios, rounds(), w->qkv_others, "lib's tiled kernel");
        else {
            char sentence[512];
            speed_compare(sentence, sizeof sentence, w->qkv_ratios, rounds(), "OpenBLAS was",
                         "lib's tiled kernel");
            ch_say(ch, "%s", sentence);
        }
    } else {
        ch_verdict(ch, "This build has no OpenBLAS, so nothing here can pick a wrong kernel.");
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

/* ------------------------------------------- the forward, stage by stage */

// What bounds a stage of the trace: the big products (compute), attention's
// products, one pair per head, or the passes over memory around them.
enum { KIND_PRODUCT, KIND_ATTENTION, KIND_MEMORY, KINDS };
static const char *const KIND_LABEL[KINDS] = {
    [KIND_PRODUCT] = "the big products (patches, q k v, proj, fc1, fc2, head)",
    [KIND_ATTENTION] = "attention's products, per head (scores, context)",
    [KIND_MEMORY] = "passes over memory (LayerNorm, softmax, GELU, adds, copies)",
};

static int stage_kind(const char *name) {
    static const char *const products[] = {"patch_embed", "attn.q", "attn.k", "attn.v",
                                           "attn.proj", "mlp.fc1", "mlp.fc2", "logits"};
    for (size_t i = 0; i < sizeof products / sizeof *products; i++)
        if (strcmp(name, products[i]) == 0) return KIND_PRODUCT;
    if (strcmp(name, "attn.scores") == 0 || strcmp(name, "attn.context") == 0)
        return KIND_ATTENTION;
    return KIND_MEMORY;
}

// One pass with the stopwatch listening (the recipe: every stage written and
// handed over) and one without (the fused block), @p n rounds in turn: seconds
// of each pass per round, and each stage's seconds summed over the traced passes.
// The stopwatch starts again for each traced pass, so the plain passes between
// them are charged to no stage.
// [time_traced_and_plain]
static bool time_traced_and_plain(Vit *vit, const Tensor *image, double stage_s[STAGE_CLOCK_MAX],
                                  double *traced, double *plain, int n, VitError *err) {
    if (vit_forward(vit, image, NULL, NULL, err) != VIT_OK) return false; // warm
    for (int r = 0; r < n; r++) {
        StageClock clock;
        double t0 = vit_now();
        stage_clock_start(&clock, NULL, NULL);
        if (vit_forward(vit, image, stage_clock_trace, &clock, err) != VIT_OK) return false;
        traced[r] = vit_now() - t0;
        for (int i = 0; i < STAGE_CLOCK_MAX; i++) stage_s[i] += clock.seconds[i];
        t0 = vit_now();
        if (vit_forward(vit, image, NULL, NULL, err) != VIT_OK) return false;
        plain[r] = vit_now() - t0;
    }
    return true;
}
// [time_traced_and_plain]

// The three kinds' rows: ms per traced pass, share of their sum, GFLOP/s.
static void kind_rows(Chapter *ch, const double stage_s[STAGE_CLOCK_MAX], const VitConfig *cfg,
                      int n, double kind_ms[KINDS], double kind_gflops[KINDS]) {
    double flops[KINDS] = {0};
    for (int i = 0; i < vit_stage_count(); i++) {
        const VitStage *st = vit_stage_at(i);
        char name[64];
        snprintf(name, sizeof name, st->per_block ? "blocks.0.%s" : "%s", st->name);
        const int k = stage_kind(st->name), copies = st->per_block ? cfg->depth : 1;
        kind_ms[k] += 1e3 * stage_s[i] / n;
        flops[k] += vit_stage_flops(cfg, 1, name) * copies;
    }
    double total_ms = 0;
    for (int k = 0; k < KINDS; k++) total_ms += kind_ms[k];
    ch_line(ch, "    %-62s %8s %6s %8s", "stages of the traced pass (mean of the passes)", "ms",
            "share", "GFLOP/s");
    for (int k = 0; k < KINDS; k++) {
        kind_gflops[k] = kind_ms[k] > 0 ? flops[k] / (kind_ms[k] / 1e3) / 1e9 : 0;
        ch_line(ch, "    %-62s %8.1f %5.0f%% %8.1f", KIND_LABEL[k], kind_ms[k],
                100 * kind_ms[k] / total_ms, kind_gflops[k]);
    }
}

static void where_time_goes(Chapter *ch, Work *w) {
    if (!ch_section(ch, "13. Where the forward's time goes, and what fusing saves")) return;
    ch_say(ch, "Section 11 timed the forward pass whole. Chapter 09's stopwatch, "
               "stage_clock_trace() (lib/model/trace_timing.c), splits it: it listens to "
               "the trace and charges the time between two stages to the second. A "
               "listener has a price: the forward then writes every stage the trace "
               "names, each in a pass of its own, and attention keeps its (N, N) "
               "matrices. Here are %d passes with it, each followed by one without, "
               "the stages summed over the 12 blocks and grouped by what bounds them:",
           rounds());
    Vit vit;
    void *blob = NULL;
    Tensor image;
    VitError err;
    if (!timed_model(ch, &vit, &blob, &image)) return;
    double stage_s[STAGE_CLOCK_MAX] = {0}, traced[MAX_ROUNDS], plain[MAX_ROUNDS], ratios[MAX_ROUNDS];
    if (!time_traced_and_plain(&vit, &image, stage_s, traced, plain, rounds(), &err)) {
        ch_verdict(ch, "the forward pass failed: %s", err.msg);
    } else {
        const double traced_ms = 1e3 * speed_median(traced, rounds());
        const double plain_ms = 1e3 * speed_median(plain, rounds());
        const double gflop = vit_forward_flops(&vit.config, 1) / 1e9;
        double kind_ms[KINDS] = {0}, kind_gflops[KINDS] = {0};
        kind_rows(ch, stage_s, &vit.config, rounds(), kind_ms, kind_gflops);
        ch_line(ch, "    %-62s %8.1f %6s %8.1f", "the traced pass, whole (median)", traced_ms, "",
                gflop / (traced_ms / 1e3));
        ch_line(ch, "    %-62s %8.1f %6s %8.1f", "the plain pass, nobody listening (median)",
                plain_ms, "", gflop / (plain_ms / 1e3));
        ch_line(ch, "%s", "");
        const double stages_ms = kind_ms[KIND_PRODUCT] + kind_ms[KIND_ATTENTION] + kind_ms[KIND_MEMORY];
        ch_verdict(ch, "The big products took %.0f%% of the traced pass, at %.1f GFLOP/s, "
                   "%.0f%% of the best measured in section 10. The passes over memory took "
                   "%.1f ms, %.0f%%, at %.1f GFLOP/s: they do almost no arithmetic, but read "
                   "and write each activation once more, at the speed of memory, not of the "
                   "FMA units.",
                   100 * kind_ms[KIND_PRODUCT] / stages_ms, kind_gflops[KIND_PRODUCT],
                   100 * kind_gflops[KIND_PRODUCT] / w->peak_gflops, kind_ms[KIND_MEMORY],
                   100 * kind_ms[KIND_MEMORY] / stages_ms, kind_gflops[KIND_MEMORY]);
        ch_say(ch, "Nobody listening, vit_block_forward() hands each block to "
                   "vit_block_forward_fused() (lib/model/block_fused.c), which computes the "
                   "same sums in fewer passes: q, k and v as one product of the fused (3D, D) "
                   "weight timm stores; each product starting from its bias, and from the "
                   "residual stream when it ends a branch, so the bias and residual passes "
                   "disappear into the product's own writes; GELU in place; attention online, "
                   "without the (N, N) matrices (chapter 13). Only the order of the additions "
                   "changes, and the vit suite pins the fused block against PyTorch.");
        for (int r = 0; r < rounds(); r++) ratios[r] = traced[r] / plain[r];
        char sentence[512];
        speed_compare(sentence, sizeof sentence, ratios, rounds(), "the plain pass was",
                      "the traced pass");
        ch_verdict(ch, "%s Its %.1f GFLOP/s are %.0f%% of the best measured in section 10.",
                   sentence, gflop / (plain_ms / 1e3),
                   100 * (gflop / (plain_ms / 1e3)) / w->peak_gflops);
    }
    tensor_free(&image);
    vit_free(&vit);
    free(blob);
}

/* ------------------------------------------------- beside other work */

// A busy loop in a child process, as a second terminal, a build or a browser
// takes a core from under the forward pass; busy_stop() ends it. The child only
// spins (a process forked from one with threads may run little else).
// [busy_loop]
static pid_t busy_start(void) {
    const pid_t pid = fork();
    if (pid == 0) {
        volatile unsigned long spins = 0;
        for (;;) spins++;
    }
    return pid;
}

static void busy_stop(pid_t pid) {
    if (pid <= 0) return;
    kill(pid, SIGKILL);
    waitpid(pid, NULL, 0);
}
// [busy_loop]

// @p n rounds, each a pass alone and a pass beside one busy loop: the speed
// ratios (beside over alone) and the median seconds of each.
static bool time_beside_busy(Vit *vit, const Tensor *image, double *ratios, int n,
                             double *alone_s, double *beside_s, VitError *err) {
    double alone[MAX_ROUNDS], beside[MAX_ROUNDS];
    if (vit_forward(vit, image, NULL, NULL, err) != VIT_OK) return false; // warm
    for (int r = 0; r < n; r++) {
        double t0 = vit_now();
        if (vit_forward(vit, image, NULL, NULL, err) != VIT_OK) return false;
        alone[r] = vit_now() - t0;
        const pid_t busy = busy_start();
        t0 = vit_now();
        const VitStatus s = vit_forward(vit, image, NULL, NULL, err);
        beside[r] = vit_now() - t0;
        busy_stop(busy);
        if (busy < 0 || s != VIT_OK) return false;
        ratios[r] = alone[r] / beside[r];
    }
    *alone_s = speed_median(alone, n);
    *beside_s = speed_median(beside, n);
    return true;
}

static void beside_other_work(Chapter *ch, Work *w) {
    if (!ch_section(ch, "14. Beside other work")) return;
    ch_say(ch, "Everything so far was timed on a machine doing little else. A learner's "
               "machine is seldom like that: a build, a browser, a second terminal. Each "
               "parallel loop of the forward pass ends at a barrier, where the team of "
               "threads waits for its slowest member, and a thread that shares its core "
               "with another program is slow. How the others wait matters too. GNU's "
               "OpenMP lets a waiting thread spin for a while, burning a core in the "
               "hope that work comes soon; on a busy machine that core may be the very one "
               "the slow thread needs. So every program of this project tells OpenMP's "
               "threads to sleep while they wait (OMP_WAIT_POLICY=passive, set in "
               "lib/base/util.c before main() runs; `vit info` says so). Here the plain "
               "pass runs %d times alone and %d times beside one busy loop, in turn:",
           rounds(), rounds());
    Vit vit;
    void *blob = NULL;
    Tensor image;
    VitError err;
    if (!timed_model(ch, &vit, &blob, &image)) return;
    double ratios[MAX_ROUNDS], alone = 0, beside = 0;
    if (!time_beside_busy(&vit, &image, ratios, rounds(), &alone, &beside, &err)) {
        ch_verdict(ch, "the forward pass failed, or no busy loop could be started: %s",
                   err.msg);
    } else {
        const int cores = vit_thread_limit();
        // a fair share of the cores: threads + 1 loop taking turns on `cores`
        const double fair = w->threads + 1 > cores ? (double)(w->threads + 1) / cores : 1.0;
        ch_line(ch, "    alone: %.0f ms; beside one busy loop: %.0f ms (medians)", 1e3 * alone,
                1e3 * beside);
        ch_line(ch, "    %d threads on %d cores; %s", w->threads, cores, vit_describe_wait());
        ch_line(ch, "%s", "");
        char sentence[512];
        const SpeedVerdict v = speed_compare(sentence, sizeof sentence, ratios, rounds(),
                                             "beside one busy loop the forward pass was",
                                             "its time alone");
        ch_verdict(ch, "%s", sentence);
        const double slower = beside / alone;
        if (v != SPEED_SLOWER)
            ch_verdict(ch, "With rounds that do not agree, this run cannot say how the "
                       "slowdown compares with a fair share of the cores (%d threads and one "
                       "loop taking turns on %d cores: %.2f times).",
                       w->threads, cores, fair);
        else if (slower <= fair * 1.25)
            ch_verdict(ch, "The medians give %.2f times the time alone, within a quarter of "
                       "what a fair share of the cores costs (%d threads and one loop taking "
                       "turns on %d cores: %.2f times).",
                       slower, w->threads, cores, fair);
        else
            ch_verdict(ch, "The medians give %.2f times the time alone, more than a quarter "
                       "above what a fair share of the cores costs (%d threads and one loop "
                       "taking turns on %d cores: %.2f times): more than the share of the "
                       "cores it lost, as if at each barrier the whole team waited for the "
                       "thread the busy loop slowed down.",
                       slower, w->threads, cores, fair);
    }
    ch_say(ch, "`make bench` (benchmarks/shared.sh) measures this properly: the forward "
               "pass beside 2 and 12 busy loops and beside a parallel rebuild of this "
               "project, with threads that sleep and with OpenMP's spinning default, "
               "against PyTorch's under the same load.");
    tensor_free(&image);
    vit_free(&vit);
    free(blob);
}

static void whats_next(Chapter *ch) {
    if (!ch_section(ch, "What's next")) return;
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
    where_time_goes(ch, &w);
    beside_other_work(ch, &w);
    whats_next(ch);
    free(w.a);
    free(w.b);
    free(w.out);
}

#ifndef CHAPTER_NO_MAIN
int main(int argc, char **argv) {
    return chapter_main_knobs(argc, argv, chapter14_run,
                              "Chapter 14: from the textbook loops to the fastest kernel, timed here.",
                              knobs, KNOBS);
}
#endif
