/**
 * @file util.c
 * @brief Errors, memory, clocks, number parsing and thread control.
 *
 * Threads: the count is bounded by vit_thread_limit() (util.h says why), and
 * a constructor below applies that bound to OMP_NUM_THREADS before main().
 */
#include "base/util.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef VIT_HAVE_BLAS
#include <cblas.h>
#endif

VitStatus vit_fail(VitError *err, VitStatus status, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return status;
}

static void out_of_memory(size_t bytes) {
    fprintf(stderr, "vit: out of memory allocating %zu bytes\n", bytes);
    abort();
}

void *vit_malloc(size_t bytes) {
    void *p = malloc(bytes ? bytes : 1);
    if (!p) out_of_memory(bytes);
    return p;
}

void *vit_calloc(size_t count, size_t size) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) out_of_memory(count * size);
    return p;
}

void *vit_realloc(void *p, size_t bytes) {
    void *q = realloc(p, bytes ? bytes : 1);
    if (!q) out_of_memory(bytes);
    return q;
}

char *vit_strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = vit_malloc(n);
    memcpy(p, s, n);
    return p;
}

void *vit_malloc_aligned(size_t bytes) {
    // aligned_alloc wants a size that is a multiple of the alignment
    size_t rounded = (bytes + 63) / 64 * 64;
    void *p = aligned_alloc(64, rounded ? rounded : 64);
    if (!p) out_of_memory(bytes);
    return p;
}

void *vit_try_malloc_aligned(size_t bytes) {
    if (bytes > SIZE_MAX - 63) return NULL;
    size_t rounded = (bytes + 63) / 64 * 64;
    return aligned_alloc(64, rounded ? rounded : 64);
}

// Bytes of address space and of data (heap and private mappings) in use now,
// from /proc/self/statm (pages: total, resident, shared, text, lib, data, dirty).
static void memory_in_use(double *address_space, double *data) {
    *address_space = *data = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    unsigned long total, resident, shared, text, lib, data_pages;
    if (f && fscanf(f, "%lu %lu %lu %lu %lu %lu", &total, &resident, &shared, &text, &lib,
                    &data_pages) == 6) {
        double page = (double)sysconf(_SC_PAGESIZE);
        *address_space = (double)total * page;
        *data = (double)data_pages * page;
    }
    if (f) fclose(f);
}

double vit_memory_limit(void) {
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    double limit = pages > 0 && page > 0 ? (double)pages * (double)page : INFINITY;
    // ulimit -v and -d: the allocator fails at these long before memory runs out,
    // and what the process already uses counts against them
    double in_use[2];
    memory_in_use(&in_use[0], &in_use[1]);
    const int resources[] = {RLIMIT_AS, RLIMIT_DATA};
    for (size_t i = 0; i < sizeof resources / sizeof resources[0]; i++) {
        struct rlimit rl;
        if (getrlimit(resources[i], &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) continue;
        double left = (double)rl.rlim_cur - in_use[i];
        if (left < limit) limit = left > 0 ? left : 0;
    }
    return limit;
}

VitStatus vit_check_memory(double bytes, const char *what, VitError *err) {
    double have = vit_memory_limit();
    if (bytes <= have) return VIT_OK;
    char need_s[VIT_NUM_BUF], have_s[VIT_NUM_BUF];
    return vit_fail(err, VIT_ERR_INPUT, "%s would need %s of memory, more than the %s this "
                    "process may use", what, vit_bytes(need_s, bytes), vit_bytes(have_s, have));
}

bool vit_checked_mul(size_t *out, size_t a, size_t b) {
    if (a != 0 && b > SIZE_MAX / a) return false;
    *out = a * b;
    return true;
}

double vit_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

double vit_process_cpu_seconds(void) {
    struct timespec t;
    if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t) != 0) return 0;
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

// The kernel's per-CPU lines of /proc/stat read "cpuN user nice system idle
// iowait irq softirq steal guest guest_nice", in clock ticks since boot.
// Busy is all but idle and iowait (guest time is counted in user already);
// steal is time a hypervisor gave this CPU to another machine.
VitLoad vit_load_now(void) {
    VitLoad r = {.wall = vit_now(), .own = vit_process_cpu_seconds()};
    cpu_set_t mine;
    const bool know_mine = sched_getaffinity(0, sizeof mine, &mine) == 0;
    const long ticks_per_second = sysconf(_SC_CLK_TCK);
    FILE *f = ticks_per_second > 0 ? fopen("/proc/stat", "r") : NULL;
    if (!f) return r;
    unsigned long long busy = 0;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "cpu", 3) || line[3] < '0' || line[3] > '9') continue; // not a CPU's own
        int cpu;
        unsigned long long user, nice, system, idle, iowait, irq, softirq, steal = 0;
        if (sscanf(line + 3, "%d %llu %llu %llu %llu %llu %llu %llu %llu", &cpu, &user, &nice,
                   &system, &idle, &iowait, &irq, &softirq, &steal) < 8)
            continue;
        if (know_mine && (cpu < 0 || cpu >= CPU_SETSIZE || !CPU_ISSET(cpu, &mine))) continue;
        busy += user + nice + system + irq + softirq + steal;
        r.cpus++;
    }
    fclose(f);
    r.cpus_busy = (double)busy / (double)ticks_per_second;
    return r;
}

double vit_load_others(const VitLoad *before, const VitLoad *after) {
    const double wall = after->wall - before->wall;
    if (before->cpus <= 0 || before->cpus != after->cpus || wall <= 0) return -1;
    const double others = (after->cpus_busy - before->cpus_busy) - (after->own - before->own);
    return others > 0 ? others / wall : 0;
}

VitStatus vit_parse_int(int *out, const char *s, int lo, int hi, const char *what, VitError *err) {
    if (!s || !*s) return vit_fail(err, VIT_ERR_USAGE, "%s: expected an integer, got nothing", what);
    errno = 0;
    char *end = NULL;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0')
        return vit_fail(err, VIT_ERR_USAGE, "%s: '%s' is not an integer", what, s);
    if (errno == ERANGE || v < lo || v > hi) // quoted as written: a clamped long would lie
        return vit_fail(err, VIT_ERR_USAGE, "%s: %s is out of range [%d, %d]", what, s, lo, hi);
    *out = (int)v;
    return VIT_OK;
}

VitStatus vit_parse_float(float *out, const char *s, const char *what, VitError *err) {
    if (!s || !*s) return vit_fail(err, VIT_ERR_USAGE, "%s: expected a number, got nothing", what);
    errno = 0;
    char *end = NULL;
    double v = strtod(s, &end);
    if (errno || *end != '\0' || !isfinite(v) || fabs(v) > 3.4e38)
        return vit_fail(err, VIT_ERR_USAGE, "%s: '%s' is not a finite number", what, s);
    *out = (float)v;
    return VIT_OK;
}

char *vit_thousands(char buf[VIT_NUM_BUF], int64_t n) {
    char digits[VIT_NUM_BUF];
    // the magnitude as unsigned, so that INT64_MIN has one too
    uint64_t magnitude = n < 0 ? -(uint64_t)n : (uint64_t)n;
    int len = snprintf(digits, sizeof digits, "%llu", (unsigned long long)magnitude);
    char *p = buf;
    if (n < 0) *p++ = '-';
    for (int i = 0; i < len; i++) {
        if (i > 0 && (len - i) % 3 == 0) *p++ = ',';
        *p++ = digits[i];
    }
    *p = '\0';
    return buf;
}

char *vit_bytes(char buf[VIT_NUM_BUF], double bytes) {
    static const char *const units[] = {"kB", "MB", "GB", "TB", "PB", "EB"};
    if (!(bytes < 1e21)) { // beyond exabytes (or not a number): say so plainly
        snprintf(buf, VIT_NUM_BUF, "%.3g bytes", bytes);
        return buf;
    }
    if (bytes < 1000) {
        snprintf(buf, VIT_NUM_BUF, "%.0f bytes", bytes);
        return buf;
    }
    int u = 0;
    for (bytes /= 1000; bytes >= 1000 && u < 5; u++) bytes /= 1000;
    snprintf(buf, VIT_NUM_BUF, "%.1f %s", bytes, units[u]);
    return buf;
}

/* -------------------------------------------------------------- escaping */

// Length of the well-formed UTF-8 sequence at s (2 to 4 bytes), or 0; *cp gets its code point.
static int utf8_sequence(const unsigned char *s, uint32_t *cp) {
    int len = s[0] >= 0xf0 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc0 ? 2 : 0;
    if (len == 0 || s[0] > 0xf4) return 0;
    uint32_t v = s[0] & (0x7f >> len);
    for (int i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) return 0; // also stops at the terminating NUL
        v = v << 6 | (s[i] & 0x3f);
    }
    static const uint32_t smallest[] = {0, 0, 0x80, 0x800, 0x10000};
    if (v < smallest[len] || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return 0;
    *cp = v;
    return len;
}

// Code points a terminal acts on or that reorder text: C1 controls, bidi controls.
static bool unsafe_code_point(uint32_t cp) {
    return (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) ||
           (cp >= 0x2066 && cp <= 0x2069) || cp == 0x200e || cp == 0x200f;
}

char *vit_escape(char *out, size_t size, const char *s) {
    if (size == 0) return out;
    const unsigned char *p = (const unsigned char *)(s ? s : "");
    size_t used = 0;
    while (*p) {
        char piece[16];
        int take = 1; // input bytes this piece stands for
        uint32_t cp = 0;
        int seq = *p >= 0x80 ? utf8_sequence(p, &cp) : 0;
        if (*p >= 0x20 && *p < 0x7f) {
            piece[0] = (char)*p, piece[1] = '\0';
        } else if (seq && !unsafe_code_point(cp)) {
            memcpy(piece, p, (size_t)seq), piece[seq] = '\0';
            take = seq;
        } else if (*p == '\n' || *p == '\t' || *p == '\r') {
            snprintf(piece, sizeof piece, "\\%c", *p == '\n' ? 'n' : *p == '\t' ? 't' : 'r');
        } else { // a control byte, or a sequence we do not pass: every byte in hex
            int n = seq ? seq : 1, at = 0;
            for (int i = 0; i < n; i++) at += snprintf(piece + at, sizeof piece - (size_t)at, "\\x%02x", p[i]);
            take = n;
        }
        size_t len = strlen(piece);
        if (used + len >= size) break; // never half a piece
        memcpy(out + used, piece, len);
        used += len;
        p += take;
    }
    out[used] = '\0';
    return out;
}

void vit_print_error(const char *program, const VitError *err) {
    char safe[4 * sizeof err->msg];
    vit_escape(safe, sizeof safe, err->msg[0] ? err->msg : "failed");
    fprintf(stderr, "%s: %s\n", program, safe);
}

/* --------------------------------------------------------------- threads */

// What bounds the thread count, found once by vit_thread_limit().
static int cores_allowed;   // the cores this process may run on, e.g. 2
static int blas_built_for;  // OpenBLAS's MAX_THREADS, e.g. 64; 0: no OpenBLAS, or it does not say
// The last count a program asked for that was cut to the limit, and who asked
// (NULL: the program, through vit_set_threads()); 0 when the last one fitted.
static int threads_asked;
static const char *threads_asked_by;

// The CPUs this process may run on: its affinity (taskset, a container's
// cpuset), which may be fewer than the machine's; else the online ones.
static int cores_available(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return CPU_COUNT(&set);
    const long online = sysconf(_SC_NPROCESSORS_ONLN); // e.g. more than 1024 CPUs: too many for set
    return online > 0 && online < INT_MAX ? (int)online : 1;
}

// The most threads OpenBLAS was compiled for, from its build line, e.g.
// "OpenBLAS 0.3.21 ... USE_OPENMP Cooperlake MAX_THREADS=64"; 0 when unknown.
// Its tables of per-thread buffers have that many rows: more threads calling
// it at once (each thread of a parallel loop may) write past them.
static int blas_max_threads(void) {
#ifdef VIT_HAVE_BLAS
    const char *config = openblas_get_config();
    const char *at = config ? strstr(config, "MAX_THREADS=") : NULL;
    if (at) {
        const long n = strtol(at + strlen("MAX_THREADS="), NULL, 10);
        if (n > 0 && n < INT_MAX) return (int)n;
    }
#endif
    return 0;
}

int vit_thread_limit(void) {
    // the constructor below asks first, before main(): no other thread exists yet
    if (cores_allowed == 0) {
        blas_built_for = blas_max_threads();
        cores_allowed = cores_available();
    }
    return blas_built_for > 0 && blas_built_for < cores_allowed ? blas_built_for : cores_allowed;
}

void vit_set_threads(int n) {
    const int limit = vit_thread_limit();
    threads_asked = n > limit ? n : 0; // remembered for vit_describe_threads()
    threads_asked_by = NULL;
    if (n <= 0 || n > limit) n = limit;
#ifdef VIT_HAVE_BLAS
    openblas_set_num_threads(n); // first: its OpenMP build sets OpenMP's count as well
#endif
#ifdef _OPENMP
    omp_set_num_threads(n);
#endif
}

// Before main(), in every program that links lib (vit, vitview, the chapters,
// bench, the test runner: each uses this file, so the linker always takes
// it, constructor and all): OpenMP read OMP_NUM_THREADS when it started, and a
// count above the limit would reach the first parallel region, and OpenBLAS
// from every thread of it, before any flag is parsed (OMP_NUM_THREADS=200
// crashed `vit classify` in the GEMM choice's timing). So it is cut to the
// limit here, once. A program's constructors run after those of the
// libraries it loads, so OpenMP and OpenBLAS are ready by now.
__attribute__((constructor)) static void threads_within_limit_at_start(void) {
#ifdef _OPENMP
    const int asked = omp_get_max_threads();
    if (asked <= vit_thread_limit()) return;
    vit_set_threads(asked);
    threads_asked_by = getenv("OMP_NUM_THREADS") ? "OMP_NUM_THREADS" : "OpenMP's default";
#endif
}

// OpenMP's threads wait for work (at a loop's end, between products) by spinning,
// GNU's default for a while: on a shared machine a spinning thread burns the core
// that its team's slowest thread, descheduled by other work, is waiting for, and
// every barrier then waits a whole time slice (beside one busy loop the ViT-B/16
// forward took several times its quiet time). Told to sleep instead
// (OMP_WAIT_POLICY=passive), waiting threads give the cores back; quiet, `make
// bench` measures what the wake-ups cost. libgomp reads the variable once, when
// it is loaded, before any code of ours runs, and a variable set before then is
// lost (the C library sets up the environment again after the program's
// .preinit_array): so, as the first thing any program that links lib does, the
// program sets it and starts itself again (glibc hands constructors argc, argv
// and envp). The programs it starts inherit it. A policy or spin count set by
// hand is kept; under valgrind, whose /proc/self/exe is valgrind itself, nothing
// is done.
__attribute__((constructor)) static void openmp_waits_asleep(int argc, char **argv, char **envp) {
    (void)argc, (void)envp;
#ifdef _OPENMP
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT") || !argv || !argv[0]) return;
    const char *preload = getenv("LD_PRELOAD");
    if (preload && strstr(preload, "vgpreload")) return;
    setenv("OMP_WAIT_POLICY", "passive", 1);
    execv("/proc/self/exe", argv); // returns only when it fails: then this run spins,
    unsetenv("OMP_WAIT_POLICY");   // and vit_describe_wait() must not say otherwise
#else
    (void)argv;
#endif
}

const char *vit_describe_wait(void) {
    const char *policy = getenv("OMP_WAIT_POLICY"), *spin = getenv("GOMP_SPINCOUNT");
    static char buf[160];
    if (spin && !policy)
        snprintf(buf, sizeof buf, "waiting threads spin %.40s times, then sleep (GOMP_SPINCOUNT)",
                 spin);
    else if (policy && strcasecmp(policy, "passive") == 0)
        snprintf(buf, sizeof buf, "waiting threads sleep (OMP_WAIT_POLICY=passive)");
    else if (policy && strcasecmp(policy, "active") == 0)
        snprintf(buf, sizeof buf, "waiting threads spin (OMP_WAIT_POLICY=active)");
    else
        snprintf(buf, sizeof buf, "waiting threads spin a while, then sleep (OpenMP's default)");
    return buf;
}

int vit_get_threads(void) {
#ifdef _OPENMP
    return omp_get_max_threads();
#else
    return 1;
#endif
}

char *vit_describe_threads(char *buf, size_t size) {
    const int n = vit_get_threads(), limit = vit_thread_limit();
    char asked[64] = "", other[64] = "";
    if (threads_asked > 0)
        snprintf(asked, sizeof asked, "%d asked for%s%s; ", threads_asked,
                 threads_asked_by ? " by " : "", threads_asked_by ? threads_asked_by : "");
    const bool by_cores = limit == cores_allowed; // else OpenBLAS's maximum is the lower
    if (by_cores && blas_built_for > 0)
        snprintf(other, sizeof other, "; OpenBLAS is built for up to %d", blas_built_for);
    else if (!by_cores)
        snprintf(other, sizeof other, "; this process may run on %d cores", cores_allowed);
    snprintf(buf, size, "%d thread%s (%sat most %d, %s%s)", n, n == 1 ? "" : "s", asked, limit,
             by_cores ? "the cores this process may run on" : "what OpenBLAS was built for", other);
    return buf;
}

const char *vit_build_info(void) {
#if defined(_OPENMP) && defined(VIT_HAVE_BLAS)
    return "OpenMP + OpenBLAS";
#elif defined(_OPENMP)
    return "OpenMP, no BLAS (own tiled GEMM)";
#elif defined(VIT_HAVE_BLAS)
    return "OpenBLAS, no OpenMP";
#else
    return "single-threaded, no BLAS (own tiled GEMM)";
#endif
}
