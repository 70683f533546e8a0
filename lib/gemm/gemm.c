/**
 * @file gemm.c
 * @brief Matrix multiplication's backends: naive reference, own tiled kernel,
 *        OpenBLAS, each called by name.
 *
 * Which one matmul() calls is decided in two other files, and the calls go
 * one way only (a → b: a calls b):
 *   gemm_dispatch.c → gemm_choice.c → gemm.c,   gemm_dispatch.c → gemm.c
 * gemm_dispatch.c has matmul(), matmul_bt() and matmul_*_acc(), which take the
 * backend gemm_set_backend() set, else the default; gemm_choice.c chooses the
 * default once, by timing the backends here; this file calls neither, so it
 * can be read, tested and timed on its own.
 *
 * Shapes (row-major, float32):
 *   a (M,K)    left operand, always K-contiguous
 *   b (K,N)    right operand for matmul, or (N,K) for matmul_bt ("b transposed")
 *   out (M,N)  the product
 *
 * The naive loops are the definition; the tiled kernel computes the same sums
 * in another order, 40–200× faster on one core. How it gets there is
 * explained in the long comment that opens the "tiled" section below: read
 * that first, then the code top to bottom (micro-kernel, packing, the
 * blocking loops, threads).
 *
 * Deliberately omitted: alpha/beta scaling, strided (non-contiguous)
 * operands, and any other precision than float32.
 */
#include "gemm/gemm.h"
#include "base/util.h"

#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef VIT_HAVE_BLAS
#include <cblas.h>
#endif

/* ----------------------------------------------------------------- naive */

// [matmul_naive]
void matmul_naive(float *out, const float *a, const float *b, int M, int K, int N) {
    // a is (M,K), b is (K,N), out is (M,N)
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float sum = 0.0f;
            for (int k = 0; k < K; k++) sum += a[(size_t)i * K + k] * b[(size_t)k * N + j];
            out[(size_t)i * N + j] = sum;
        }
}
// [matmul_naive]

// [matmul_bt_naive]
void matmul_bt_naive(float *out, const float *a, const float *b, int M, int K, int N) {
    // a is (M,K), b is (N,K), out is (M,N)
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float sum = 0.0f;
            for (int k = 0; k < K; k++) sum += a[(size_t)i * K + k] * b[(size_t)j * K + k];
            out[(size_t)i * N + j] = sum;
        }
}
// [matmul_bt_naive]

/* ----------------------------------------------------------------- tiled
 *
 * Why the naive loops are slow. Two reasons.
 *  - Memory. out(i,j) needs row i of a and column j of b. For 1024×1024
 *    matrices each operand is 4 MB, far more than the 32–64 KB of L1 cache
 *    next to the arithmetic units, so loads keep coming from slower levels;
 *    in matmul_naive the column of b is even strided (one cache line per value).
 *  - Arithmetic. `sum += a·b` is one long chain: each addition waits for the
 *    previous one (~4 cycles), and the compiler may not reorder float sums to
 *    use SIMD. So the loop does one multiply-add per ~4 cycles where an AVX2
 *    core could do 2 × 8 per cycle: 64 times more.
 * On the 2-core AMD Zen 4 this was tuned on: naive 0.5–2.5 GFLOP/s, tiled
 * ~190 GFLOP/s, about what OpenBLAS reaches (see `make bench`).
 *
 * The tiled kernel (the "GotoBLAS/BLIS" scheme) fixes this in three layers:
 *
 * 1. Blocking. Cut the product into blocks small enough to stay in a cache
 *    while they are reused:
 *
 *        for jc in steps of NC:             columns of out and b
 *          for pc in steps of KC:           the shared dimension k
 *            pack b[pc:+KC, jc:+NC]         → b_panel  (KC×NC, L3/L2)
 *            for ic in steps of MC:         rows of out and a
 *              pack a[ic:+MC, pc:+KC]       → a_block  (MC×KC, L2)
 *              for jr in steps of NR:       one NR-wide sliver of b_panel (L1)
 *                for ir in steps of MR:     one MR-tall sliver of a_block
 *                  micro-kernel: out[ic+ir:+MR, jc+jr:+NR] += a_sliver · b_sliver
 *
 *    A b sliver (KC×NR floats, 16 KB) stays in L1 while the whole a_block
 *    (MC×KC, ~150 KB) streams past it from L2; the a_block is reused for
 *    every sliver of the b_panel. Each float loaded from main memory is used
 *    hundreds of times.
 *
 * 2. Packing. Before use, a block is copied into the exact order the
 *    micro-kernel reads it: a_block as MR-tall slivers stored column by
 *    column (for each k: MR values of a), b_panel as NR-wide slivers stored
 *    row by row (for each k: NR values of b). The micro-kernel then reads both
 *    strictly sequentially, and the copy absorbs the layout of b: matmul and
 *    matmul_bt differ *only* in pack_b(). Slivers at the edges are padded with
 *    zeros to a whole tile, so the micro-kernel never needs to know about
 *    edges: it computes a whole tile, and the caller keeps the valid part.
 *
 * 3. The micro-kernel. An MR×NR tile of out (e.g. 6×16 floats = 12 AVX
 *    registers of 8 floats) is held in registers for the whole k loop. Each
 *    step k loads NR values of b (2 registers), and for each of the MR rows
 *    broadcasts one value of a and does a fused multiply-add into the row's
 *    accumulators: 12 FMAs (192 flops) for 2 loads and 6 broadcasts. The 12
 *    accumulators are 12 independent chains, enough to keep both FMA units
 *    busy while each FMA waits for its previous one. That is what lets the
 *    arithmetic run near its peak.
 *
 * On top, OpenMP hands rectangles of out to the threads (gemm_tiled()).
 *
 * Instruction sets. The build targets generic x86-64 (SSE2 only), so the
 * micro-kernel is compiled several times with __attribute__((target(...)))
 * for wider vector units and the best one this CPU supports is picked at run
 * time with __builtin_cpu_supports() ("function multiversioning").
 */

// Blocking sizes, in floats. KC·NR·4 bytes (the b sliver: 16 KB for NR = 16)
// fits a 32 KB L1 with room for the a sliver; MC·KC·4 bytes (the a_block,
// 144 KB) fits well inside a 1 MB L2. MC is rounded down to a multiple of the
// kernel's MR at run time. The kernel is near peak over a wide range of these
// (KC 192–512, MC 96–288 measured within noise on a Zen 4).
enum { KC = GEMM_TILED_KC, MC = GEMM_TILED_MC, NC = GEMM_TILED_NC }; // gemm.h says what each is
// Largest a that threads pack once together rather than each for itself.
enum { A_WHOLE_MAX_BYTES = 4 << 20 };

// Largest micro-kernel tile any variant uses (for the edge scratch tile).
enum { MR_MAX = 16, NR_MAX = 32 };

// Vectors via GCC/Clang vector extensions: `v8f x; x * y` multiplies 8 floats
// lane by lane, and the compiler emits whatever instructions the function's
// target has (SSE, AVX, AVX-512). A scalar in an expression is broadcast.
typedef float v4f __attribute__((vector_size(16)));  ///< SSE / NEON: 128 bits
typedef float v8f __attribute__((vector_size(32)));  ///< AVX2: 256 bits
typedef float v16f __attribute__((vector_size(64))); ///< AVX-512: 512 bits

// `acc += a * b` must become one fused multiply-add (FMA) instruction. GCC in
// ISO C mode (-std=c11) refuses to fuse separate operations (-ffp-contract=off)
// unless a function asks for it; Clang fuses within one expression by default.
#if defined(__clang__)
#define FUSE_MULTIPLY_ADD
#define UNROLL _Pragma("clang loop unroll(full)")
#else
#define FUSE_MULTIPLY_ADD __attribute__((optimize("fp-contract=fast"))) ///< let GCC fuse a*b+c
#define UNROLL _Pragma("GCC unroll 16") ///< unroll the next loop fully
#endif

#if defined(__x86_64__) || defined(__i386__)
#define VIT_GEMM_X86 1
#include <cpuid.h>
#include <immintrin.h> // the masked stores of pack_a()
#endif

/**
 * A micro-kernel computes one MR×NR tile of out:
 *   c[i][j] (+)= Σ_k a_sliver[k][i] · b_sliver[k][j]      i < MR, j < NR
 * a_sliver is kc×MR (packed), b_sliver is kc×NR (packed), c has row stride ldc.
 * With accumulate false the tile is overwritten (first k block), else added to.
 */
typedef void MicroKernel(int kc, const float *a_sliver, const float *b_sliver, float *c,
                         size_t ldc, bool accumulate);

/// DEFINE_MICRO_KERNEL stamps out the micro-kernel for one vector type. It is a
/// macro only because C has no templates: every variant is this same code.
///   NAME   function name           TARGET  instruction-set attribute (or nothing)
///   VEC    vector type (v8f …)      MR_     rows of the tile (broadcast values of a)
///   NV_    vectors per row, so NR = NV_ · (floats per VEC)
/// acc[MR][NV] is the tile of out held in registers; every loop has a constant
/// trip count and is fully unrolled, so acc never touches memory inside the k loop.
// [DEFINE_MICRO_KERNEL]
#define DEFINE_MICRO_KERNEL(NAME, TARGET, VEC, MR_, NV_)                                    \
    TARGET FUSE_MULTIPLY_ADD static void NAME(int kc, const float *a, const float *b,      \
                                              float *c, size_t ldc, bool accumulate) {     \
        enum { MR = MR_, NV = NV_, VL = (int)(sizeof(VEC) / sizeof(float)) };              \
        VEC acc[MR][NV];                                                                   \
        UNROLL for (int i = 0; i < MR; i++) {                                              \
            /* ask for this row of the c tile now; it is needed only after the k loop */   \
            __builtin_prefetch(c + (size_t)i * ldc, 1);                                    \
            __builtin_prefetch(c + (size_t)i * ldc + NV * VL - 1, 1);                      \
            UNROLL for (int v = 0; v < NV; v++) acc[i][v] = (VEC){0};                      \
        }                                                                                  \
        for (int k = 0; k < kc; k++, a += MR, b += NV * VL) {                              \
            VEC bk[NV]; /* row k of the b sliver: NR floats */                             \
            UNROLL for (int v = 0; v < NV; v++) memcpy(&bk[v], b + v * VL, sizeof(VEC));   \
            UNROLL for (int i = 0; i < MR; i++)                                            \
                UNROLL for (int v = 0; v < NV; v++) acc[i][v] += a[i] * bk[v];             \
        }                                                                                  \
        UNROLL for (int i = 0; i < MR; i++)                                                \
            UNROLL for (int v = 0; v < NV; v++) {                                          \
                float *cv = c + (size_t)i * ldc + (size_t)v * VL;                          \
                if (accumulate) {                                                          \
                    VEC old;                                                               \
                    memcpy(&old, cv, sizeof(VEC));                                         \
                    acc[i][v] += old;                                                      \
                }                                                                          \
                memcpy(cv, &acc[i][v], sizeof(VEC)); /* unaligned store */                 \
            }                                                                              \
    }
// [DEFINE_MICRO_KERNEL]

/** The operands of one product, as the tiled code passes them around. */
typedef struct {
    float *out;       // (M,N)
    const float *a;   // (M,K)
    const float *b;   // (K,N), or (N,K) when b_transposed
    bool b_transposed;
    int M, K, N;
    bool a_transposed; // a is (K,M): out = aᵀ · b (the _at_acc products)
    bool accumulate;   // out += the product, instead of out = it (the _acc products)
    const float *a_packed; // all of a, packed by the whole team (pack_a_whole()), else NULL
} GemmArgs;

/*
 * Small products. An attention head's products are tiny and oddly shaped: the
 * scores Q·Kᵀ of a Fashion-MNIST head are 50×16 times 16×50, its backward's
 * dV = Pᵀ·dO 50×50 times 50×16. For those, packing a and b and computing the
 * edge tiles in a scratch tile cost as much as the arithmetic: in a training
 * step on one thread, perf put 23 % of the time in packing, transposing and
 * edge tiles, 26 % in the micro-kernel. A product whose b fits in SMALL_B_FLOATS
 * (after padding its rows to whole vectors) and that runs on one thread skips
 * all of it: b is read in place (or copied once into a padded (K, ldb) array
 * when it is stored transposed or its rows are not whole vectors), a is never
 * packed, and a SMALL_MR × VL tile of out is computed per step straight from
 * them. Each sum runs over k in order from zero, fused multiply-adds, and is then
 * written or added to out: the same operations in the same order as the tiled
 * kernel's on a product of K ≤ KC, so the two give the same bits.
 */
enum { SMALL_MR = 8, SMALL_M_MAX = GEMM_TILED_SMALL_ROWS, SMALL_B_FLOATS = GEMM_TILED_SMALL_B };

/** out (+)= op(a)·b for b (K,N) stored with row stride ldb, rows padded to whole VECs. */
typedef void SmallKernel(const GemmArgs *g, const float *b, size_t ldb);

/// DEFINE_SMALL_KERNEL stamps out the small-product kernel for one vector type
/// (one VEC of columns at a time, SMALL_MR rows of out; rows past M read row
/// M − 1 of a again and are never stored).
// [DEFINE_SMALL_KERNEL]
#define DEFINE_SMALL_KERNEL(NAME, TARGET, VEC)                                               \
    TARGET FUSE_MULTIPLY_ADD static void NAME(const GemmArgs *g, const float *b, size_t ldb) { \
        enum { VL = (int)(sizeof(VEC) / sizeof(float)) };                                   \
        const size_t M = (size_t)g->M, K = (size_t)g->K, N = (size_t)g->N;                  \
        /* a's entry (i, k) is a[i·sa + k·sk]: (M,K) stored, or (K,M) when transposed */    \
        const size_t sa = g->a_transposed ? 1 : K, sk = g->a_transposed ? M : 1;            \
        for (size_t j = 0; j < N; j += VL) {                                                \
            const size_t cols = N - j < VL ? N - j : VL;                                    \
            for (size_t i = 0; i < M; i += SMALL_MR) {                                      \
                VEC acc[SMALL_MR];                                                          \
                const float *a_row[SMALL_MR];                                               \
                UNROLL for (int r = 0; r < SMALL_MR; r++) {                                 \
                    acc[r] = (VEC){0};                                                      \
                    a_row[r] = g->a + (i + r < M ? i + r : M - 1) * sa;                     \
                }                                                                           \
                for (size_t k = 0; k < K; k++) {                                            \
                    VEC bk;                                                                 \
                    memcpy(&bk, b + k * ldb + j, sizeof bk);                                \
                    UNROLL for (int r = 0; r < SMALL_MR; r++) acc[r] += a_row[r][k * sk] * bk; \
                }                                                                           \
                for (size_t r = 0; r < SMALL_MR && i + r < M; r++) {                        \
                    float *o = g->out + (i + r) * N + j;                                    \
                    if (cols == VL) { /* as the micro-kernel: acc, or acc + old */          \
                        if (g->accumulate) {                                                \
                            VEC old;                                                        \
                            memcpy(&old, o, sizeof old);                                    \
                            acc[r] += old;                                                  \
                        }                                                                   \
                        memcpy(o, &acc[r], sizeof acc[r]);                                  \
                        continue;                                                           \
                    }                                                                       \
                    float sums[VL];                                                         \
                    memcpy(sums, &acc[r], sizeof sums);                                     \
                    for (size_t c = 0; c < cols; c++)                                       \
                        o[c] = g->accumulate ? o[c] + sums[c] : sums[c];                    \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
    }
// [DEFINE_SMALL_KERNEL]

// Portable: 128-bit vectors, which every x86-64 (SSE2) and ARM64 (NEON) CPU has.
// 4×8 tile = 8 accumulator registers of the 16 SSE has.
DEFINE_MICRO_KERNEL(micro_kernel_portable, , v4f, 4, 2)
DEFINE_SMALL_KERNEL(small_kernel_portable, , v4f)
#ifdef VIT_GEMM_X86
// AVX2 + FMA (Intel Haswell 2013+, AMD Zen): 6×16 tile = 12 of 16 ymm registers.
DEFINE_MICRO_KERNEL(micro_kernel_avx2, __attribute__((target("avx2,fma"))), v8f, 6, 2)
DEFINE_SMALL_KERNEL(small_kernel_avx2, __attribute__((target("avx2,fma"))), v8f)
// AVX-512 (Intel Skylake-X+, AMD Zen 4+): 12×32 tile = 24 of 32 zmm registers,
// the tile BLIS uses on Skylake-X.
DEFINE_MICRO_KERNEL(micro_kernel_avx512, __attribute__((target("avx512f"))), v16f, 12, 2)
DEFINE_SMALL_KERNEL(small_kernel_avx512, __attribute__((target("avx512f"))), v16f)

static bool cpu_has_avx512(void) {
    __builtin_cpu_init(); // reads CPUID once; cheap afterwards
    return __builtin_cpu_supports("avx512f");
}
static bool cpu_has_avx2(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
#endif
static bool cpu_has_any(void) { return true; }

/** One micro-kernel variant and the tile it computes. */
typedef struct {
    const char *name;           // "avx512", "avx2", "portable"
    int mr, nr;                 // tile of out: mr rows × nr columns (≤ MR_MAX × NR_MAX)
    MicroKernel *run;
    SmallKernel *small;         // the small products' kernel, VL = nr / 2 columns wide
    bool (*cpu_can_run)(void);  // does this CPU have the instructions?
    bool avx2_packing;          // transpose while packing with AVX2 (see transpose_rows())
    bool avx512_packing;        // … and b's slivers with AVX-512 (transpose_rows_16())
} KernelVariant;

// Widest first; the last one runs anywhere.
// [kernel_variants]
static const KernelVariant kernel_variants[] = {
#ifdef VIT_GEMM_X86
    {"avx512", 12, 32, micro_kernel_avx512, small_kernel_avx512, cpu_has_avx512, true, true},
    {"avx2", 6, 16, micro_kernel_avx2, small_kernel_avx2, cpu_has_avx2, true, false},
#endif
    {"portable", 4, 8, micro_kernel_portable, small_kernel_portable, cpu_has_any, false, false},
};
// [kernel_variants]
enum { N_VARIANTS = sizeof kernel_variants / sizeof kernel_variants[0] };

#ifdef VIT_GEMM_X86
// The CPU's family as CPUID leaf 1 gives it: the base family, plus the
// extended family when the base one is 0xF (AMD's Zen CPUs are 0x17 and up).
// Asked once: in a virtual machine CPUID traps to the hypervisor, which cost
// more than a 50 × 16 × 50 product when it was asked for every one.
static unsigned cpu_family(void) {
    static int family = -1; // the answer, once known; atomic, as threads may ask at once
    int known = __atomic_load_n(&family, __ATOMIC_RELAXED);
    if (known >= 0) return (unsigned)known;
    unsigned eax, ebx, ecx, edx, f = 0;
    if (__get_cpuid(1, &eax, &ebx, &ecx, &edx)) {
        const unsigned base = (eax >> 8) & 0xF;
        f = base == 0xF ? base + ((eax >> 20) & 0xFF) : base;
    }
    __atomic_store_n(&family, (int)f, __ATOMIC_RELAXED);
    return f;
}
#endif

// Wider vectors are not always faster. AMD's Zen 4 (family 0x19) runs a
// 512-bit FMA as two 256-bit halves, so AVX-512 adds no arithmetic there, and
// on a Zen 4 the avx2 kernel measured ~5% faster (smaller tiles waste less at
// the edges). Zen 5 (family 0x1A) has full 512-bit units: there the avx512
// kernel measured 1.8 times the avx2 one (395 against 218 GFLOP/s on
// ViT-B/16's 197 × 768 × 2304, 2 threads). So only the AMD families known to
// split are passed over; Intel's, and AMD's newer ones, run it.
// [worth_running]
static bool worth_running(const KernelVariant *kv) {
#ifdef VIT_GEMM_X86
    if (strcmp(kv->name, "avx512") == 0 && __builtin_cpu_is("amd") && cpu_family() <= 0x19)
        return false;
#endif
    return kv->cpu_can_run();
}
// [worth_running]

static const KernelVariant *forced_variant; // set by gemm_set_tiled_kernel(), else NULL

// [current_variant]
static const KernelVariant *current_variant(void) {
    if (forced_variant) return forced_variant;
    for (int v = 0; v < N_VARIANTS; v++)
        if (worth_running(&kernel_variants[v])) return &kernel_variants[v];
    return &kernel_variants[N_VARIANTS - 1];
}
// [current_variant]

bool gemm_set_tiled_kernel(const char *name) {
    if (!name || !*name) {
        forced_variant = NULL;
        return true;
    }
    for (int v = 0; v < N_VARIANTS; v++)
        if (strcmp(kernel_variants[v].name, name) == 0 && kernel_variants[v].cpu_can_run()) {
            forced_variant = &kernel_variants[v];
            return true;
        }
    return false;
}

const char *gemm_tiled_kernel(void) { return current_variant()->name; }

void gemm_tiled_tile(int *mr, int *nr) {
    const KernelVariant *kv = current_variant();
    *mr = kv->mr, *nr = kv->nr;
}

/* --------------------------------------------------------------- packing */

static int min_int(int x, int y) { return x < y ? x : y; }

/*
 * Two of the packings are transposes: a sliver of a is stored column by
 * column although a is stored by rows, and so is a sliver of b when b is
 * stored (N,K), as every linear layer's weight is. Copied one float at a
 * time, they took 17 % of the time of ViT-B/16's qkv product and 32 % of its
 * fc2 on a 2-core Zen 4 (perf record, 2 threads). With AVX2 the copy goes
 * 8 × 8 floats at a time: load 8 floats from each of 8 rows, transpose the 8
 * registers, store 8 columns; then packing took 8 % and 11 %.
 * transpose_rows() does that for one group of ≤ 8 rows.
 */
#ifdef VIT_GEMM_X86
// [transpose_rows]
/// Transposes the 8×8 floats r[0..7] (r[i][j] → r[j][i]) in three rounds of
/// interleaving: single floats of two rows, then pairs of floats, then
/// 128-bit halves. Each line compiles to one shuffle instruction.
__attribute__((target("avx2"))) static inline void transpose_8x8(v8f r[8]) {
    v8f t[8], u[8];
    for (int i = 0; i < 8; i += 2) { // t: rows i and i+1 interleaved float by float
        t[i] = __builtin_shufflevector(r[i], r[i + 1], 0, 8, 1, 9, 4, 12, 5, 13);
        t[i + 1] = __builtin_shufflevector(r[i], r[i + 1], 2, 10, 3, 11, 6, 14, 7, 15);
    }
    for (int i = 0; i < 8; i += 4) // u: pairs of t interleaved pair by pair
        for (int h = 0; h < 2; h++) {
            u[i + 2 * h] = __builtin_shufflevector(t[i + h], t[i + h + 2], 0, 1, 8, 9, 4, 5, 12, 13);
            u[i + 2 * h + 1] =
                __builtin_shufflevector(t[i + h], t[i + h + 2], 2, 3, 10, 11, 6, 7, 14, 15);
        }
    for (int i = 0; i < 4; i++) { // columns 0–3 are the low halves, 4–7 the high halves
        r[i] = __builtin_shufflevector(u[i], u[i + 4], 0, 1, 2, 3, 8, 9, 10, 11);
        r[i + 4] = __builtin_shufflevector(u[i], u[i + 4], 4, 5, 6, 7, 12, 13, 14, 15);
    }
}

/// dst[k·dst_stride + i] ← src[i·src_stride + k] for i < lanes ≤ 8 and k < kc
/// rounded down to a multiple of 8; lanes i ≥ rows get zeros (rows may be ≤ 0).
/// Each store writes `lanes` floats, nothing more (a masked store when
/// lanes < 8), so a transpose never writes past what it was asked to fill.
/// Returns how many k it did; the caller copies the remaining kc % 8.
__attribute__((target("avx2"))) static int transpose_rows(float *dst, size_t dst_stride,
                                                          const float *src, size_t src_stride,
                                                          int rows, int lanes, int kc) {
    const __m256i mask = _mm256_cmpgt_epi32(_mm256_set1_epi32(lanes),
                                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    int k = 0;
    for (; k + 8 <= kc; k += 8) {
        v8f r[8];
        for (int i = 0; i < 8; i++)
            if (i < rows) memcpy(&r[i], src + (size_t)i * src_stride + k, sizeof(v8f));
            else r[i] = (v8f){0};
        transpose_8x8(r);
        for (int j = 0; j < 8; j++) {
            float *d = dst + (size_t)(k + j) * dst_stride;
            if (lanes == 8) memcpy(d, &r[j], sizeof(v8f));
            else _mm256_maskstore_ps(d, mask, (__m256)r[j]);
        }
    }
    return k;
}
// [transpose_rows]

/// The same for 16×16 floats in 512-bit registers, one round more: floats,
/// pairs, 128-bit quarters, 256-bit halves. Column c of the input ends in
/// r[TRANSPOSED_16[c]] (the rounds leave the columns in that order).
static const int TRANSPOSED_16[16] = {0, 4, 8, 12, 2, 6, 10, 14, 1, 5, 9, 13, 3, 7, 11, 15};
__attribute__((target("avx512f"))) static inline void transpose_16x16(v16f r[16]) {
    v16f t[16];
    for (int i = 0; i < 16; i += 2) { // rows i and i+1, float by float, in each 128 bits
        t[i] = __builtin_shufflevector(r[i], r[i + 1], 0, 16, 1, 17, 4, 20, 5, 21, 8, 24, 9,
                                       25, 12, 28, 13, 29);
        t[i + 1] = __builtin_shufflevector(r[i], r[i + 1], 2, 18, 3, 19, 6, 22, 7, 23, 10, 26,
                                           11, 27, 14, 30, 15, 31);
    }
    for (int i = 0; i < 16; i += 4) // pair by pair: 4 × 4 blocks, transposed, in each 128 bits
        for (int h = 0; h < 2; h++) {
            r[i + 2 * h] = __builtin_shufflevector(t[i + h], t[i + h + 2], 0, 1, 16, 17, 4, 5,
                                                   20, 21, 8, 9, 24, 25, 12, 13, 28, 29);
            r[i + 2 * h + 1] = __builtin_shufflevector(t[i + h], t[i + h + 2], 2, 3, 18, 19, 6,
                                                       7, 22, 23, 10, 11, 26, 27, 14, 15, 30, 31);
        }
    for (int i = 0; i < 16; i += 8) // 128-bit quarters of rows 4 apart
        for (int h = 0; h < 4; h++) {
            t[i + 2 * h] = __builtin_shufflevector(r[i + h], r[i + h + 4], 0, 1, 2, 3, 16, 17,
                                                   18, 19, 8, 9, 10, 11, 24, 25, 26, 27);
            t[i + 2 * h + 1] = __builtin_shufflevector(r[i + h], r[i + h + 4], 4, 5, 6, 7, 20,
                                                       21, 22, 23, 12, 13, 14, 15, 28, 29, 30, 31);
        }
    for (int h = 0; h < 8; h++) { // 256-bit halves of rows 8 apart
        r[2 * h] = __builtin_shufflevector(t[h], t[h + 8], 0, 1, 2, 3, 4, 5, 6, 7, 16, 17, 18,
                                           19, 20, 21, 22, 23);
        r[2 * h + 1] = __builtin_shufflevector(t[h], t[h + 8], 8, 9, 10, 11, 12, 13, 14, 15, 24,
                                               25, 26, 27, 28, 29, 30, 31);
    }
}

/// transpose_rows() for up to 16 rows at a time (lanes ≤ 16). Each block reads
/// 16 floats of each row, a whole 64-byte cache line when the row is aligned,
/// so no line has to stay in the L1 cache from one block to the next.
__attribute__((target("avx512f"))) static int transpose_rows_16(float *dst, size_t dst_stride,
                                                               const float *src,
                                                               size_t src_stride, int rows,
                                                               int lanes, int kc) {
    const __mmask16 mask = (__mmask16)((1u << lanes) - 1);
    int k = 0;
    for (; k + 16 <= kc; k += 16) {
        v16f r[16];
        for (int i = 0; i < 16; i++)
            if (i < rows) memcpy(&r[i], src + (size_t)i * src_stride + k, sizeof(v16f));
            else r[i] = (v16f){0};
        transpose_16x16(r);
        for (int c = 0; c < 16; c++) {
            float *d = dst + (size_t)(k + c) * dst_stride;
            if (lanes == 16) memcpy(d, &r[TRANSPOSED_16[c]], sizeof(v16f));
            else _mm512_mask_storeu_ps(d, mask, (__m512)r[TRANSPOSED_16[c]]);
        }
    }
    return k;
}
#endif

// a_block ← a[i0:i0+mc, k0:k0+kc] as ceil(mc/mr) slivers; sliver s holds rows
// i0+s·mr … +mr column by column: a_block[s][k][r] = a[i0+s·mr+r][k0+k].
// Rows past mc are zeros. When a is stored transposed, (K,M), "row i of a" is
// column i of the stored matrix: the sliver's k-th column is then a contiguous
// piece of stored row k0+k (the mirror image of pack_b()'s two cases).
// Nothing is written outside the slivers, so slivers can be packed in any
// order, by any thread.
static void pack_a(float *a_block, const GemmArgs *g, const KernelVariant *kv, int i0, int mc,
                   int k0, int kc) {
    const int mr = kv->mr;
    for (int s = 0; s * mr < mc; s++) {
        float *dst = a_block + (size_t)s * mr * kc;
        int rows = min_int(mr, mc - s * mr);
        if (g->a_transposed) {
            for (int k = 0; k < kc; k++) {
                const float *src = g->a + (size_t)(k0 + k) * g->M + i0 + s * mr;
                for (int r = 0; r < rows; r++) dst[(size_t)k * mr + r] = src[r];
                for (int r = rows; r < mr; r++) dst[(size_t)k * mr + r] = 0.0f;
            }
            continue;
        }
        const float *src = g->a + (size_t)(i0 + s * mr) * g->K + k0;
        int done = 0;
#ifdef VIT_GEMM_X86
        // the whole sliver in one pass: the avx512 kernel's 12 rows in one
        // 16-row transpose, the avx2 kernel's 6 in one 8-row transpose
        if (kv->avx512_packing && mr <= 16)
            done = transpose_rows_16(dst, (size_t)mr, src, (size_t)g->K, rows, mr, kc);
        else if (kv->avx2_packing && mr <= 8)
            done = transpose_rows(dst, (size_t)mr, src, (size_t)g->K, rows, mr, kc);
#endif
        for (int r = 0; r < mr; r++) // the rest one float at a time
            for (int k = done; k < kc; k++)
                dst[(size_t)k * mr + r] = r < rows ? src[(size_t)r * g->K + k] : 0.0f;
    }
}

// b_panel ← b[k0:k0+kc, j0:j0+nc] as ceil(nc/nr) slivers; sliver s holds
// columns j0+s·nr … +nr row by row: b_panel[s][k][c] = b[k0+k][j0+s·nr+c].
// Columns past nc are zeros. This is the only place the layout of b matters.
static void pack_b(float *b_panel, const GemmArgs *g, const KernelVariant *kv, int k0, int kc,
                   int j0, int nc) {
    const int nr = kv->nr;
    for (int s = 0; s * nr < nc; s++) {
        float *dst = b_panel + (size_t)s * nr * kc;
        int j = j0 + s * nr, cols = min_int(nr, nc - s * nr);
        if (!g->b_transposed) {
            // b is (K,N): row k of the sliver is a contiguous piece of row k0+k of b
            // (a loop, not memcpy(): a call for every 64 bytes cost more than the copy)
            for (int k = 0; k < kc; k++) {
                float *row = dst + (size_t)k * nr;
                const float *src = g->b + (size_t)(k0 + k) * g->N + j;
                for (int c = 0; c < cols; c++) row[c] = src[c];
                for (int c = cols; c < nr; c++) row[c] = 0.0f;
            }
            continue;
        }
        // b is (N,K): column c of the sliver is a piece of row j+c of b, so
        // this is a transpose. One group of 8 rows of b at a time (16 with
        // AVX-512, a cache line of each): more rows read side by side would,
        // with K a multiple of 1024 floats, all fall in the same few sets of
        // the L1 cache and evict each other.
        const float *src = g->b + (size_t)j * g->K + k0;
        int done = 0;
#ifdef VIT_GEMM_X86
        if (kv->avx512_packing && nr % 16 == 0)
            for (int c0 = 0; c0 < nr; c0 += 16)
                done = transpose_rows_16(dst + c0, (size_t)nr, src + (size_t)c0 * g->K,
                                         (size_t)g->K, cols - c0, 16, kc);
        else if (kv->avx2_packing)
            for (int c0 = 0; c0 < nr; c0 += 8)
                done = transpose_rows(dst + c0, (size_t)nr, src + (size_t)c0 * g->K,
                                      (size_t)g->K, cols - c0, 8, kc);
#endif
        // the rest one float at a time, writing the sliver in order (reading
        // the nr rows side by side measured ~2× faster than the reverse)
        for (int k = done; k < kc; k++) {
            float *row = dst + (size_t)k * nr;
            for (int c = 0; c < cols; c++) row[c] = src[(size_t)c * g->K + k];
            for (int c = cols; c < nr; c++) row[c] = 0.0f;
        }
    }
}

/* ---------------------------------------------------------- the 5 loops */

// out[i0:i0+mc, j0:j0+nc] (+)= a_block · b_panel, one micro-kernel call per tile.
// Tiles cut by the edge of out are computed whole into a scratch tile and only
// the valid part is copied out. (The extra rows/columns are thrown away; the
// zeros packed there just keep them from being garbage such as NaN or slow
// denormal numbers.)
// [macro_kernel]
static void macro_kernel(const GemmArgs *g, const KernelVariant *kv, const float *a_block,
                         const float *b_panel, int i0, int mc, int j0, int nc, int kc,
                         bool accumulate) {
    for (int jr = 0; jr < nc; jr += kv->nr) {
        int cols = min_int(kv->nr, nc - jr);
        const float *b_sliver = b_panel + (size_t)jr * kc;
        for (int ir = 0; ir < mc; ir += kv->mr) {
            int rows = min_int(kv->mr, mc - ir);
            const float *a_sliver = a_block + (size_t)ir * kc;
            float *c = g->out + (size_t)(i0 + ir) * g->N + (j0 + jr);
            if (rows == kv->mr && cols == kv->nr) {
                kv->run(kc, a_sliver, b_sliver, c, (size_t)g->N, accumulate);
                continue;
            }
            float tile[MR_MAX * NR_MAX];
            kv->run(kc, a_sliver, b_sliver, tile, (size_t)kv->nr, false);
            for (int r = 0; r < rows; r++)
                for (int col = 0; col < cols; col++) {
                    float t = tile[r * kv->nr + col];
                    float *o = c + (size_t)r * g->N + col;
                    *o = accumulate ? *o + t : t;
                }
        }
    }
}
// [macro_kernel]

/** One thread's packing buffers, sized for the largest blocks a product needs. */
typedef struct {
    float *a_block; // MC×KC: MR-tall slivers of a
    float *b_panel; // KC×NC: NR-wide slivers of b
    bool on_heap;   // malloc'ed (else the caller's small arrays: nothing to free)
} PackBuffers;

// A product whose blocks fit in this many floats each (16 KB) packs into
// arrays on the caller's stack: for the tiny products of attention heads,
// two malloc() and free() cost about as much as the arithmetic.
enum { SMALL_PACK_FLOATS = 4096 };
typedef struct {
    _Alignas(64) float a_block[SMALL_PACK_FLOATS];
    _Alignas(64) float b_panel[SMALL_PACK_FLOATS];
} SmallPack;

// Buffers for product g: `small` when both blocks fit in it (small may be NULL).
static PackBuffers pack_buffers_new(const GemmArgs *g, const KernelVariant *kv, SmallPack *small) {
    int mr = kv->mr, nr = kv->nr;
    // only as large as this product needs, so small products stay small
    int rows = g->a_packed ? 0 : min_int(MC / mr * mr, (g->M + mr - 1) / mr * mr);
    int cols = min_int(NC, (g->N + nr - 1) / nr * nr);
    int depth = min_int(KC, g->K);
    const size_t a_floats = (size_t)rows * depth, b_floats = (size_t)depth * cols;
    if (small && a_floats <= SMALL_PACK_FLOATS && b_floats <= SMALL_PACK_FLOATS)
        return (PackBuffers){small->a_block, small->b_panel, false};
    return (PackBuffers){vit_malloc_aligned(a_floats * sizeof(float)),
                         vit_malloc_aligned(b_floats * sizeof(float)), true};
}

static void pack_buffers_free(PackBuffers *p) {
    if (!p->on_heap) return;
    free(p->a_block);
    free(p->b_panel);
}

// All of a packed at once: k block by k block (KC deep, the last one
// shallower), each block all of a's rows as pack_a() lays them out, M rounded
// up to whole slivers (m_pad rows). The block that starts at k0 starts at
// k0·m_pad floats (every block before it is KC deep), and in it the sliver
// of row i (a multiple of mr) starts at i·kc.
static size_t a_rows_padded(const GemmArgs *g, const KernelVariant *kv) {
    return (size_t)(g->M + kv->mr - 1) / kv->mr * kv->mr;
}
static size_t a_whole_offset(const GemmArgs *g, const KernelVariant *kv, int i, int k0, int kc) {
    return (size_t)k0 * a_rows_padded(g, kv) + (size_t)i * kc;
}

// Called by every thread of a team: together they pack all of a into a_whole,
// one sliver of one k block at a time, and wait for each other at the end.
static void pack_a_whole(float *a_whole, const GemmArgs *g, const KernelVariant *kv) {
    const int mr = kv->mr, slivers = (g->M + mr - 1) / mr, blocks = (g->K + KC - 1) / KC;
#pragma omp for schedule(static)
    for (int u = 0; u < blocks * slivers; u++) {
        const int k0 = u / slivers * KC, i = u % slivers * mr;
        const int kc = min_int(KC, g->K - k0);
        pack_a(a_whole + a_whole_offset(g, kv, i, k0, kc), g, kv, i, min_int(mr, g->M - i), k0,
               kc);
    }
}

// out[i_begin:i_end, j_begin:j_end] = a[i_begin:i_end, :] · b[:, j_begin:j_end]
// on the calling thread: the blocking loops of the comment above.
// [gemm_rectangle]
static void gemm_rectangle(const GemmArgs *g, const KernelVariant *kv, PackBuffers *buf,
                           int i_begin, int i_end, int j_begin, int j_end) {
    int mc_max = MC / kv->mr * kv->mr;
    for (int jc = j_begin; jc < j_end; jc += NC) {
        int nc = min_int(NC, j_end - jc);
        for (int pc = 0; pc < g->K; pc += KC) {
            int kc = min_int(KC, g->K - pc);
            pack_b(buf->b_panel, g, kv, pc, kc, jc, nc);
            for (int ic = i_begin; ic < i_end; ic += mc_max) {
                int mc = min_int(mc_max, i_end - ic);
                const float *a_block = buf->a_block;
                if (g->a_packed) a_block = g->a_packed + a_whole_offset(g, kv, ic, pc, kc);
                else pack_a(buf->a_block, g, kv, ic, mc, pc, kc);
                // the first k block writes out (adds to it when accumulating),
                // later ones add to it
                macro_kernel(g, kv, a_block, buf->b_panel, ic, mc, jc, nc, kc,
                             g->accumulate || pc > 0);
            }
        }
    }
}
// [gemm_rectangle]

// [gemm_small]
// A product for the small kernel (see "Small products" above): on one thread,
// M ≤ SMALL_M_MAX, K ≤ KC (one k block, as the tiled kernel would sum it), b
// within SMALL_B_FLOATS once its rows are padded to whole vectors. b is read in
// place when it is stored (K,N) with whole vectors already, else copied into a
// padded array on the stack. Returns false, having done nothing, otherwise.
static bool gemm_small(const GemmArgs *g, const KernelVariant *kv) {
    const int vl = kv->nr / 2;
    const size_t ldb = (size_t)(g->N + vl - 1) / vl * vl;
    if (g->M > SMALL_M_MAX || g->K > KC || ldb * (size_t)g->K > SMALL_B_FLOATS) return false;
    if (!g->b_transposed && ldb == (size_t)g->N) {
        kv->small(g, g->b, ldb);
        return true;
    }
    _Alignas(64) float b[SMALL_B_FLOATS];
    for (int k = 0; k < g->K; k++) {
        float *row = b + (size_t)k * ldb;
        for (int j = 0; j < g->N; j++)
            row[j] = g->b_transposed ? g->b[(size_t)j * g->K + k] : g->b[(size_t)k * g->N + j];
        for (size_t j = (size_t)g->N; j < ldb; j++) row[j] = 0.0f; // never stored, but not garbage
    }
    kv->small(g, b, ldb);
    return true;
}
// [gemm_small]

/* ------------------------------------------------------------ threads */

// How many threads one product deserves: starting a team costs a few
// microseconds, so small products run on the caller's thread, as do calls made
// from inside someone else's parallel region (the cores are busy already).
static int threads_for(const GemmArgs *g) {
    double flops = 2.0 * g->M * g->K * g->N;
    if (flops < 2e6) return 1;
#ifdef _OPENMP
    if (omp_in_parallel()) return 1;
#endif
    return vit_get_threads();
}

// Cut out into a grid of rows_split × cols_split rectangles, at most max_tasks
// of them, each at least one micro-kernel tile. Prefer the grid with the most
// rectangles (every thread busy), then the one whose rectangles have the
// smallest half-perimeter (rows + columns): that is the least packing per
// rectangle (it packs rows×K of a and K×cols of b) and the squarest work.
// E.g. 2 threads on (197,2304): 1×2, two 197×1152 halves.
static void choose_grid(int max_tasks, int M, int N, int mr, int nr, int *rows_split,
                        int *cols_split) {
    int units_m = (M + mr - 1) / mr, units_n = (N + nr - 1) / nr;
    int best_tasks = 0;
    double best_half_perimeter = 0;
    for (int rs = 1; rs <= max_tasks && rs <= units_m; rs++) {
        int cs = min_int(max_tasks / rs, units_n);
        double half_perimeter = (double)M / rs + (double)N / cs;
        if (rs * cs > best_tasks ||
            (rs * cs == best_tasks && half_perimeter < best_half_perimeter)) {
            best_tasks = rs * cs;
            best_half_perimeter = half_perimeter;
            *rows_split = rs;
            *cols_split = cs;
        }
    }
}

// Start of part p of n when [0, len) is cut in n nearly equal parts made of
// whole units of `unit` (so every part but the last is whole tiles).
static int split_point(int len, int unit, int p, int n) {
    int units = (len + unit - 1) / unit;
    int start = (int)((long long)units * p / n) * unit;
    return start < len ? start : len;
}

// The whole product. out is cut into one rectangle per thread; each thread runs
// the blocking loops on its rectangle with its own packing buffers. No two
// threads write the same element of out, so no locks are needed.
// (Handing out smaller rectangles dynamically measured slower here: every
// extra rectangle repeats some packing, and the team still waits for its
// slowest thread at the end of the parallel region.)
// [gemm_tiled_args]
static void gemm_tiled_args(GemmArgs g) {
    const int M = g.M, N = g.N;
    if (M <= 0 || N <= 0) return;
    if (g.K <= 0) {
        // an empty sum is zero: nothing to add, or zeros to write
        if (!g.accumulate) memset(g.out, 0, (size_t)M * N * sizeof(float));
        return;
    }
    const KernelVariant *kv = current_variant();
    int threads = threads_for(&g), rows_split = 1, cols_split = 1;
    if (threads > 1) choose_grid(threads, M, N, kv->mr, kv->nr, &rows_split, &cols_split);
    int tasks = rows_split * cols_split; // = threads, unless out is too small to cut so often
    if (tasks == 1) { // on this thread: no team to start, and a small product packs on the stack
        if (gemm_small(&g, kv)) return;
        SmallPack small;
        PackBuffers buf = pack_buffers_new(&g, kv, &small);
        gemm_rectangle(&g, kv, &buf, 0, M, 0, N);
        pack_buffers_free(&buf);
        return;
    }
    // Threads side by side (cols_split > 1) use the same rows of a. Each would
    // pack them all for itself, the same copy twice; when all of a packed fits
    // easily in the L2 or L3 cache (batch 1 of ViT-B/16: at most 2.5 MB),
    // they pack it once together instead.
    const size_t a_whole_bytes = a_rows_padded(&g, kv) * g.K * sizeof(float);
    float *a_whole = NULL;
    if (cols_split > 1 && a_whole_bytes <= A_WHOLE_MAX_BYTES)
        a_whole = vit_malloc_aligned(a_whole_bytes);
#pragma omp parallel num_threads(tasks)
    {
        GemmArgs mine = g;
        if (a_whole) {
            pack_a_whole(a_whole, &g, kv); // ends when every thread is done
            mine.a_packed = a_whole;
        }
        PackBuffers buf = pack_buffers_new(&mine, kv, NULL);
#pragma omp for schedule(static, 1)
        for (int t = 0; t < tasks; t++) {
            int r = t / cols_split, c = t % cols_split;
            gemm_rectangle(&mine, kv, &buf, split_point(M, kv->mr, r, rows_split),
                           split_point(M, kv->mr, r + 1, rows_split),
                           split_point(N, kv->nr, c, cols_split),
                           split_point(N, kv->nr, c + 1, cols_split));
        }
        pack_buffers_free(&buf);
    }
    free(a_whole);
}
// [gemm_tiled_args]

static void gemm_tiled(float *out, const float *a, const float *b, bool b_transposed, int M,
                       int K, int N) {
    gemm_tiled_args((GemmArgs){.out = out, .a = a, .b = b, .b_transposed = b_transposed,
                               .M = M, .K = K, .N = N});
}

// [matmul_tiled]
void matmul_tiled(float *out, const float *a, const float *b, int M, int K, int N) {
    gemm_tiled(out, a, b, false, M, K, N);
}
// [matmul_tiled]

void matmul_bt_tiled(float *out, const float *a, const float *b, int M, int K, int N) {
    gemm_tiled(out, a, b, true, M, K, N);
}

/* ------------------------------------------------------------------ blas */

bool gemm_have_blas(void) {
#ifdef VIT_HAVE_BLAS
    return true;
#else
    return false;
#endif
}

// [matmul_blas]
void matmul_blas(float *out, const float *a, const float *b, int M, int K, int N) {
#ifdef VIT_HAVE_BLAS
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a, K, b, N, 0.0f, out,
                N);
#else
    matmul_tiled(out, a, b, M, K, N);
#endif
}
// [matmul_blas]

void matmul_bt_blas(float *out, const float *a, const float *b, int M, int K, int N) {
#ifdef VIT_HAVE_BLAS
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, a, K, b, K, 0.0f, out, N);
#else
    matmul_bt_tiled(out, a, b, M, K, N);
#endif
}

/* ---------------------------------------------------------------- names */

const char *gemm_backend_name(GemmBackend backend) {
    switch (backend) {
    case GEMM_NAIVE: return "naive";
    case GEMM_TILED: return "tiled";
    case GEMM_BLAS: return "blas";
    }
    return "?";
}

/* ------------------------------------------------- accumulating products
 *
 * The backward pass adds each gradient to what is there (a weight used
 * twice, or a tensor that feeds two layers, collects both contributions), and
 * needs a layout no forward uses: dW = doutᵀ·x reads its left operand
 * transposed. These are the three layouts as products out += …, in the
 * same three implementations: naive loops, the tiled kernel (the only change
 * is in pack_a() and in not overwriting out on the first k block) and
 * cblas_sgemm with beta = 1, all three behind gemm_acc_on(). matmul_acc() and
 * its twins, which pick the backend, are in gemm_dispatch.c.
 */

void matmul_acc_naive(float *out, const float *a, const float *b, int M, int K, int N) {
    // a is (M,K), b is (K,N), out is (M,N)
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float sum = 0.0f;
            for (int k = 0; k < K; k++) sum += a[(size_t)i * K + k] * b[(size_t)k * N + j];
            out[(size_t)i * N + j] += sum;
        }
}

void matmul_bt_acc_naive(float *out, const float *a, const float *b, int M, int K, int N) {
    // a is (M,K), b is (N,K), out is (M,N)
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float sum = 0.0f;
            for (int k = 0; k < K; k++) sum += a[(size_t)i * K + k] * b[(size_t)j * K + k];
            out[(size_t)i * N + j] += sum;
        }
}

void matmul_at_acc_naive(float *out, const float *a, const float *b, int M, int K, int N) {
    // a is (K,M), b is (K,N), out is (M,N)
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float sum = 0.0f;
            for (int k = 0; k < K; k++) sum += a[(size_t)k * M + i] * b[(size_t)k * N + j];
            out[(size_t)i * N + j] += sum;
        }
}

// [gemm_acc_on]
void gemm_acc_on(GemmBackend backend, float *out, const float *a, const float *b, bool at, bool bt,
                 int M, int K, int N) {
    if (M <= 0 || N <= 0 || K <= 0) return; // an empty sum adds nothing
    switch (backend) {
    case GEMM_NAIVE:
        if (at) matmul_at_acc_naive(out, a, b, M, K, N);
        else if (bt) matmul_bt_acc_naive(out, a, b, M, K, N);
        else matmul_acc_naive(out, a, b, M, K, N);
        return;
    case GEMM_BLAS:
#ifdef VIT_HAVE_BLAS
        // beta = 1: cblas_sgemm's own out = alpha·op(a)·op(b) + beta·out
        cblas_sgemm(CblasRowMajor, at ? CblasTrans : CblasNoTrans, bt ? CblasTrans : CblasNoTrans,
                    M, N, K, 1.0f, a, at ? M : K, b, bt ? K : N, 1.0f, out, N);
        return;
#endif
        break; // built without BLAS: the tiled kernel
    case GEMM_TILED: break;
    }
    gemm_tiled_args((GemmArgs){.out = out, .a = a, .b = b, .b_transposed = bt, .M = M, .K = K,
                               .N = N, .a_transposed = at, .accumulate = true});
}
// [gemm_acc_on]
