/**
 * @file util.h
 * @brief Errors, memory and clocks: the plumbing every other file leans on.
 *
 * Error convention (@ref contract_errors): a library function that can fail because
 * of what a user handed it (a file, a number, a shape) returns a ::VitStatus
 * and writes one readable sentence into a ::VitError. Only a program's `main`
 * decides to exit, and its exit code is the status itself:
 * 0 ok, 1 bad input, 2 bad usage.
 *
 * Memory: a size that comes from a file or a flag is checked before memory
 * is taken for it, in one place per resource (vit_check_memory(), and
 * vit_checked_mul() for the arithmetic), and the allocation itself goes
 * through vit_try_malloc(), which returns NULL instead of aborting, so the
 * caller can say what it was for. vit_malloc() and friends, which print the
 * size and abort, are for the small, fixed allocations a program makes for
 * itself, where running out of memory is not something a message could fix.
 *
 * Terminal safety: a string that came from a file (a tensor name, a label, a
 * file name) may hold escape sequences or newlines. vit_escape() makes it
 * printable; vit_print_error() escapes a whole message on its way to stderr.
 */
#ifndef VIT_UTIL_H
#define VIT_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

/** @defgroup util Errors, memory and time
 *  @brief The plumbing: status codes, error messages, allocation, clocks.
 *
 *  Used by every chapter (its errors and allocations; @ref chapter14 "chapter 14" also reads its clock).
 *  Pinned by the suites @ref test_gemm.c "gemm" and @ref test_train.c "train", among others
 *  (@ref answer_keys "the answer keys").
 *  @{
 */

/** What went wrong, as a program's exit code. */
typedef enum {
    VIT_OK = 0,        /**< success */
    VIT_ERR_INPUT = 1, /**< bad input: a file, an image, weights, a shape */
    VIT_ERR_USAGE = 2, /**< bad usage: unknown flag, malformed number */
} VitStatus;

/** One human-readable sentence describing the last failure. */
typedef struct {
    char msg[1024]; /**< e.g. "w.safetensors: header length 9999 exceeds the file size 100" */
} VitError;

/**
 * @brief Write a printf-style message into @p err (if not NULL).
 * @param[out] err     where the message goes; may be NULL
 * @param[in]  status  the status to return
 * @param[in]  fmt     printf format
 * @return @p status, so a failure reads `return vit_fail(err, VIT_ERR_INPUT, "...")`.
 */
VitStatus vit_fail(VitError *err, VitStatus status, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/** @brief malloc that aborts with a message when memory runs out. */
void *vit_malloc(size_t bytes);
/** @brief calloc that aborts with a message when memory runs out. */
void *vit_calloc(size_t count, size_t size);
/** @brief realloc that aborts with a message when memory runs out. */
void *vit_realloc(void *p, size_t bytes);
/** @brief strdup that aborts with a message when memory runs out. */
char *vit_strdup(const char *s);
/** @brief 64-byte aligned allocation (for SIMD-friendly buffers); free with free(). */
void *vit_malloc_aligned(size_t bytes);
/**
 * @brief 64-byte aligned allocation that may fail: NULL when the memory cannot be had.
 *
 * For buffers whose size the user chose (activations, batches): the caller
 * turns NULL into a message naming what the memory was for.
 */
void *vit_try_malloc_aligned(size_t bytes);

/**
 * @brief The most memory this process may still take, in bytes: the machine's
 *        physical memory, or what is left under an address-space or data
 *        limit (ulimit -v / -d) after what the process uses already.
 */
double vit_memory_limit(void);

/**
 * @brief Refuse work that needs more memory than the process may take, before allocating it.
 *
 * Sizes come from users (flags, files), and asking the allocator for terabytes
 * ends in an abort or the kernel's OOM killer, not in a message.
 * @param[in] bytes  what the work will allocate
 * @param[in] what   names the work in the message, e.g. "the parameters"
 * @param[out] err   the message on failure
 * @return VIT_OK, or VIT_ERR_INPUT "WHAT would need X of memory, more than …".
 */
VitStatus vit_check_memory(double bytes, const char *what, VitError *err);

/**
 * @brief Multiply sizes, refusing overflow.
 * @param[out] out  a·b when it fits in size_t
 * @param[in]  a, b  the factors
 * @return true when the product fits, false on overflow.
 */
bool vit_checked_mul(size_t *out, size_t a, size_t b);

/** @brief Seconds on a monotonic clock, for timing stages and benchmarks. */
double vit_now(void);

/** @brief Processor seconds this process has used, all its threads together. */
double vit_process_cpu_seconds(void);

/**
 * What the CPUs this process may run on have done, anyone's work: two readings,
 * one before and one after, tell how busy other programs kept them meanwhile
 * (vit_load_others()). Read from the kernel's per-CPU lines of /proc/stat.
 */
typedef struct {
    double wall;      /**< vit_now() */
    double own;       /**< vit_process_cpu_seconds() */
    double cpus_busy; /**< seconds the CPUs this process may run on were busy, anyone's work */
    int cpus;         /**< how many CPUs that counts; 0 when /proc/stat could not be read */
} VitLoad;

/** @brief A reading of the clocks and of the CPUs' busy time, now. */
VitLoad vit_load_now(void);

/**
 * @brief How many of the CPUs other programs kept busy between two readings,
 *        on average: 1.5 for one busy loop on a whole CPU and another on half
 *        of one. Busy time less this process's own.
 * @return the CPUs, or -1 when the readings cannot tell (no /proc/stat, the
 *         CPUs changed, or no time between them).
 */
double vit_load_others(const VitLoad *before, const VitLoad *after);

/**
 * @brief Parse a whole string as an int in [lo, hi].
 * @return VIT_OK, or VIT_ERR_USAGE with a message naming @p what.
 */
VitStatus vit_parse_int(int *out, const char *s, int lo, int hi, const char *what, VitError *err);

/**
 * @brief Parse a whole string as a finite float.
 * @return VIT_OK, or VIT_ERR_USAGE with a message naming @p what.
 */
VitStatus vit_parse_float(float *out, const char *s, const char *what, VitError *err);

/** Size of a buffer for vit_thousands(): any int64_t with separators fits. */
#define VIT_NUM_BUF 32

/** @brief Write @p n with thousands separators, e.g. 86567656 → "86,567,656"; returns @p buf. */
char *vit_thousands(char buf[VIT_NUM_BUF], int64_t n);

/** @brief Write a byte count for people, in powers of 1000: "346.3 MB", "5.1 kB", "12 bytes". */
char *vit_bytes(char buf[VIT_NUM_BUF], double bytes);

/**
 * @brief Copy @p s into @p out (size bytes, always terminated) so that it is safe
 *        to print on a terminal.
 *
 * Printable ASCII and well-formed UTF-8 pass unchanged (so "café" and "224×224"
 * stay as they are). Everything a terminal could act on is written out
 * instead: newline, tab and carriage return as `\n`, `\t`, `\r`; other control
 * bytes (ESC, BEL, DEL), C1 controls, bidirectional overrides and bytes that
 * are not UTF-8 as `\xNN`. The output is cut at a character boundary.
 * @return @p out
 */
char *vit_escape(char *out, size_t size, const char *s);

/**
 * @brief Print `PROGRAM: MESSAGE` on stderr as one line, the message escaped
 *        (it may quote names and bytes from a file).
 */
void vit_print_error(const char *program, const VitError *err);

/**
 * @name Threads
 * How many threads the parallel loops and OpenBLAS use has a ceiling,
 * vit_thread_limit(): the cores this process may run on (more threads than
 * cores only take turns), and the most threads OpenBLAS was built for
 * (Debian's: 64; more threads calling it at once overrun its tables and
 * corrupt memory). Every way in respects it: vit_set_threads() caps what it
 * is asked for, and an OMP_NUM_THREADS above it is brought down to it before
 * main() runs (a constructor in util.c), in every program that links lib.
 * @{
 */
/** @brief The most threads a run uses: the fewer of the cores this process
 *         may run on and OpenBLAS's build maximum (when built with it). */
int vit_thread_limit(void);
/** @brief Use @p n threads for OpenMP loops and for OpenBLAS (n <= 0: all
 *         cores), at most vit_thread_limit(). */
void vit_set_threads(int n);
/** @brief How many threads parallel regions will use (within vit_thread_limit(),
 *         unless a program set OpenMP's count itself). */
int vit_get_threads(void);
/**
 * @brief The thread count for people, and what bounds it, e.g. "2 threads
 *        (1000 asked for; at most 2: the cores this process may run on;
 *        OpenBLAS takes up to 64)".
 * @return @p buf
 */
char *vit_describe_threads(char *buf, size_t size);
/** @brief How idle OpenMP threads wait, for people: "waiting threads sleep
 *         (OMP_WAIT_POLICY=passive)", lib's choice unless set by hand (util.c says why). */
const char *vit_describe_wait(void);
/** @} */
/** @brief One line naming the compute back ends this build has, e.g. "OpenMP, OpenBLAS". */
const char *vit_build_info(void);

/** @} */
#endif
