/**
 * @file fileio.h
 * @brief Files: read only what is a regular file, write so that nothing is ever lost.
 *
 * Every file the project reads or writes goes through here, so the rules hold
 * in one place (@ref contract_files):
 *
 * Reading. A path is opened without blocking and its type checked on the
 * open descriptor: a FIFO would hang the program, a character device
 * (`/dev/zero`) never ends, a directory is not data. Anything but a regular
 * file is refused with a message that says what it is. Sizes are checked
 * before memory is taken for them.
 *
 * Mapping. Weights are mmap'ed, not copied. If another process truncates
 * the file while it is mapped, touching the lost pages raises SIGBUS; a
 * program that calls file_guard_mapped() then says which file changed under
 * it and exits 1 instead of dying with "Bus error".
 *
 * Writing. An output is written to a temporary file in the destination's own
 * folder and renamed over it only once complete, so a failure or a signal
 * never leaves half a file where the old one was, and a signal (SIGINT,
 * SIGTERM, SIGHUP, SIGQUIT) removes the temporary file on the way out (unless
 * the program stops in good order by itself: file_writes_finish_on_stop()). What
 * is at the destination is respected:
 *  - a new path is created with mode 0666 minus the umask, as any tool does;
 *  - an existing regular file keeps its mode (and, for root, its owner);
 *  - a symbolic link is followed: its target is replaced, the link stays;
 *    a link to nothing is refused, as `cp` refuses it;
 *  - anything else (a device such as /dev/null, a FIFO, a directory) is
 *    refused: renaming over it would replace it.
 * And an output that is the same file as one of the run's inputs (compared
 * by device and inode, so links and other spellings of the path are caught)
 * is refused by file_check_not_input() before any work starts.
 *
 * What it omits: writing through a non-regular file (`--out /dev/stdout`),
 * fsync'ing the directory after the rename, locking against other writers,
 * and keeping hard links: the new file takes the name, so another name of
 * the old file (a second hard link) still shows the old contents.
 */
#ifndef VIT_FILEIO_H
#define VIT_FILEIO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

#include "base/util.h"

/** @defgroup fileio Files
 *  @brief Reading regular files only, mapping with a guard, writing atomically.
 *
 *  Used in @ref chapter11 "chapter 11" (reading the shipped model's training log); `vit train`'s
 *  checkpoints and models are written through it, by the safetensors writer. Pinned by the suites
 *  @ref test_fileio.c "fileio" (@ref answer_keys "the answer keys").
 *  @{
 */

/**
 * @brief Open @p path for reading if it is a regular file.
 * @param[out] fd    the open descriptor (blocking, close-on-exec)
 * @param[out] size  the file's size in bytes
 * @param[in]  path  the file
 * @param[in]  what  what the file should be, for messages: "a safetensors file", "an image"
 * @param[out] err   on failure "PATH: cannot open: REASON" or "PATH: is a FIFO (named pipe),
 *                   not WHAT"
 * @return VIT_OK, or VIT_ERR_INPUT.
 */
VitStatus file_open_regular(int *fd, size_t *size, const char *path, const char *what,
                            VitError *err);

/**
 * @brief Read a whole regular file of at most @p max_bytes into memory.
 * @param[out] data  the bytes, with a NUL after them; free() them
 * @param[out] size  how many
 * @param[in]  path, what  as for file_open_regular()
 * @param[in]  max_bytes   a larger file is refused, naming both sizes
 * @param[out] err   the message on failure
 * @return VIT_OK, or VIT_ERR_INPUT (also when the file shrinks while being read).
 */
VitStatus file_read_all(char **data, size_t *size, const char *path, size_t max_bytes,
                        const char *what, VitError *err);

/** Largest JSON file file_read_json() reads; a Hugging Face config.json is kilobytes. */
#define FILE_MAX_JSON (64u << 20)

struct cJSON;
/**
 * @brief Read and parse a JSON file (at most FILE_MAX_JSON bytes).
 * @param[out] root  the parsed document; free it with cJSON_Delete()
 * @param[in]  path  the file, e.g. a Hugging Face config.json
 * @param[out] err   "PATH: is a directory, not a JSON file", "PATH: not valid JSON (the parser stopped at byte offset 12)", …
 */
VitStatus file_read_json(struct cJSON **root, const char *path, VitError *err);

/** @brief "a directory", "a FIFO (named pipe)", "a character device", … for a st_mode. */
const char *file_kind(mode_t mode);

/**
 * @brief Map a regular file read-only, and register it with the SIGBUS guard.
 * @param[out] map   the mapping; release it with file_unmap()
 * @param[out] size  its size (never 0: an empty file is refused)
 * @param[in]  path, what  as for file_open_regular()
 * @param[out] err   the message on failure
 */
VitStatus file_map(const void **map, size_t *size, const char *path, const char *what,
                   VitError *err);
/** @brief Unmap what file_map() mapped and forget it. */
void file_unmap(const void *map, size_t size);
/**
 * @brief Let the pages wholly inside bytes [p, p + n) of a file_map() mapping
 *        leave memory (madvise MADV_DONTNEED): what was read from them is not
 *        needed for now (a copy was made), and if read again they come back
 *        from the file, unchanged, since the mapping is private and read-only.
 */
void file_map_release(const void *p, size_t n);

/**
 * @brief Turn SIGBUS on a mapped file (truncated by another process) into a message.
 *
 * The handler prints `PROGRAM: FILE: the file was truncated or replaced while
 * it was in use (it is read through a memory map)` and exits with status 1.
 * A SIGBUS outside every mapped file is left to kill the program as usual.
 * @param[in] program  the name that starts the message, e.g. "vit"
 * @param[in] before_exit  called first, e.g. to give the terminal back (may be NULL)
 */
void file_guard_mapped(const char *program, void (*before_exit)(void));

/** An output being written: a temporary file, renamed over its destination by outfile_commit(). */
typedef struct {
    FILE *f;        /**< write the contents here */
    char *path;     /**< the destination as given, for messages */
    char *target;   /**< where the file goes: @p path, or a symbolic link's target */
    char *tmp;      /**< the temporary file beside the target */
    int slot;       /**< its place in the signal handler's list of files to remove */
} OutFile;

/**
 * @brief Start writing @p path: check what is there, create the temporary file.
 * @param[out] o     the output; on failure nothing is left to clean up
 * @param[in] path   the destination
 * @param[out] err   the message on failure, naming @p path
 * @return VIT_OK, or VIT_ERR_INPUT for a destination that cannot or must not be replaced.
 */
VitStatus outfile_open(OutFile *o, const char *path, VitError *err);
/**
 * @brief Finish: flush, give the file its mode, rename it over the destination.
 * @param[in,out] o  the output, closed and freed whatever happens
 * @param[in] ok     false when writing the contents failed: discard instead
 *                   (the message then says "write failed" with errno's reason)
 * @param[out] err   the message on failure
 * @return VIT_OK, or VIT_ERR_INPUT with the temporary file removed.
 */
VitStatus outfile_commit(OutFile *o, bool ok, VitError *err);
/** @brief Give up: close and remove the temporary file; the destination is untouched. */
void outfile_discard(OutFile *o);

/**
 * @brief Say whether the program stops in good order on SIGINT and SIGTERM by
 *        itself (its own handlers, installed before the write began).
 *
 * By default a signal during a write removes the temporary file and then does
 * what the program had set up. A program whose handlers only ask it to stop
 * at the next safe point (`vit train`: after the current step, with a
 * checkpoint) turns this on: a write under way then finishes, and the
 * checkpoint being saved when Ctrl-C comes is kept, not lost.
 * @param[in] on  true from the moment the handlers are installed, false after
 */
void file_writes_finish_on_stop(bool on);

/**
 * @brief Check, before any work, that @p path could be written: what is there
 *        may be replaced and a temporary file can be made beside it.
 *
 * A long run (`vit train`) calls it for each output before its first step, so
 * a folder that does not exist or cannot be written is a message at once, not
 * after an hour. It makes the temporary file and removes it; nothing else changes.
 * @param[in] path  the destination
 * @param[out] err  the message outfile_open() would give
 * @return VIT_OK, or VIT_ERR_INPUT.
 */
VitStatus outfile_check(const char *path, VitError *err);

/**
 * @brief Whether two paths name one file: the same inode when both exist (a
 *        hard or symbolic link, `./x` and `x`), else the same place once their
 *        folders are resolved (two outputs yet to be written).
 */
bool file_same(const char *a, const char *b);

/** A file a program reads or writes, and how the user named it. */
typedef struct {
    const char *path; /**< NULL: not given (skipped) */
    const char *role; /**< how the user named it, e.g. "--out" or "IMAGE" */
} FileRole;

/**
 * @brief Refuse two outputs of one program that are one file (the same path
 *        spelled two ways, a link to the other, a hard link): the second
 *        written would replace the first (file_same()).
 * @param[in] outputs, n  the files written; a NULL path is skipped
 * @param[out] err        names both roles and both paths
 * @return VIT_OK, or VIT_ERR_USAGE
 */
VitStatus file_check_distinct(const FileRole *outputs, int n, VitError *err);

/**
 * @brief Refuse an output that is one of the run's inputs.
 *
 * Both paths are resolved by the file system (stat), so `./w.safetensors`, a
 * symbolic link or a hard link to the input are all recognised.
 * @param[in] out, out_role  the output's path and what it is, e.g. "--out"
 * @param[in] in, in_role    an input's path and what it is, e.g. "--weights"
 * @param[out] err  "OUT: --out is the same file as --weights (IN): refusing to overwrite an input"
 * @return VIT_OK when they differ (or either does not exist yet), else VIT_ERR_INPUT.
 */
VitStatus file_check_not_input(const char *out, const char *out_role, const char *in,
                               const char *in_role, VitError *err);

/** @} */
#endif
