/**
 * @file safetensors.h
 * @brief Reading and writing the safetensors format.
 *
 * A safetensors file is
 *   [8 bytes: header length L, little-endian u64]
 *   [L bytes: JSON object  name -> {"dtype", "shape", "data_offsets": [begin, end]},
 *             plus an optional "__metadata__": {string: string}]
 *   [the data section: raw little-endian tensor bytes; offsets are relative to it]
 *
 * Reading maps the file with mmap and validates everything before anyone
 * touches a byte: header length within the file, valid JSON, known dtypes,
 * shapes, offsets inside the data section, byte sizes matching the shapes, no
 * two tensors overlapping, no duplicate names. F32 data is used in place; F16,
 * BF16 and F64 are converted to float32 on request. Parsing takes n log n
 * time in the entries (names are sorted once and looked up by binary search;
 * a linear search per entry would be quadratic), so a header of a million
 * entries costs about a second, not hours. Its memory (cJSON's tree, about
 * ten times the header) is checked before it is taken.
 *
 * Writing goes through fileio.h's OutFile: a temporary file in the same
 * folder, renamed over the destination only once complete, so a failure
 * never leaves half a file and a device, a FIFO or an input is never replaced.
 *
 * What it omits: writing dtypes other than F32/F16/BF16; big-endian hosts.
 */
#ifndef VIT_SAFETENSORS_H
#define VIT_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "base/tensor.h"
#include "base/util.h"

/** @defgroup safetensors Safetensors files
 *  @brief Memory-mapped reading and atomic writing of named tensors.
 *
 *  Used from @ref chapter11 "chapter 11" on (the shipped model is a safetensors file; chapters 12 to 14
 *  load it). Pinned by the suites @ref test_safetensors.c "safetensors" and @ref test_weights.c "weights"
 *  (@ref answer_keys "the answer keys").
 *  @{
 */

/** Most dimensions a stored tensor may have (ours need at most 4). */
#define ST_MAX_DIMS 8

/** Element types we recognise. Only the float ones convert to float32. */
typedef enum {
    ST_F32, ST_F16, ST_BF16, ST_F64, ST_I64, ST_I32, ST_I16, ST_I8, ST_U8, ST_BOOL
} StDtype;

/** One tensor's entry in the header, validated. */
typedef struct {
    char *name;                  /**< e.g. "blocks.0.attn.qkv.weight" */
    StDtype dtype;               /**< element type */
    int ndim;                    /**< number of dimensions, 0 … ST_MAX_DIMS */
    int64_t shape[ST_MAX_DIMS];  /**< sizes */
    size_t numel;                /**< product of shape */
    /** byte range [begin, end) inside the data section */ /**@{*/
    size_t begin, end;
    /**@}*/
    const unsigned char *bytes;  /**< begin of the data inside the map */
} StTensor;

/** An open safetensors file (or memory buffer). */
typedef struct {
    char *label;              /**< file path used in messages */
    const unsigned char *buf; /**< whole file contents */
    size_t size;              /**< bytes in buf */
    void *map;                /**< mmap'ed region to unmap, or NULL when parsing a buffer */
    StTensor *tensors;        /**< count entries, in header order */
    int count;                /**< number of tensors */
    int *by_name;             /**< tensor indices sorted by name, for st_find()'s binary search */
    char **meta_keys;         /**< __metadata__ keys */
    char **meta_values;       /**< __metadata__ values */
    int meta_count;           /**< number of metadata pairs */
    int *meta_by_key;         /**< metadata indices sorted by key, for st_meta() */
} SafeTensors;

/** @brief "F32", "BF16", … */
const char *st_dtype_name(StDtype dtype);
/** @brief Bytes per element of @p dtype. */
size_t st_dtype_size(StDtype dtype);

/**
 * @brief Open and validate a file; on failure @p st is left empty and closable.
 * @return VIT_OK, or VIT_ERR_INPUT with a message naming @p path and the problem.
 */
VitStatus st_open(SafeTensors *st, const char *path, VitError *err);
/**
 * @brief Validate a buffer already in memory (borrowed, must outlive @p st).
 * @param[out] st    the parsed file; left empty and closable on failure
 * @param[in] data, size  the bytes of a whole safetensors file
 * @param[in] label  name used in messages
 * @param[out] err   the message on failure
 */
VitStatus st_parse(SafeTensors *st, const void *data, size_t size, const char *label,
                   VitError *err);
/** @brief Unmap and free; safe on a zeroed or failed SafeTensors. */
void st_close(SafeTensors *st);

/** @brief "(3, 224, 224)": a stored shape as tensor_shape_format() writes it, into @p buf, returned. */
char *st_shape_str(char *buf, size_t size, int ndim, const int64_t *shape);
/** @brief The entry called @p name, or NULL. */
const StTensor *st_find(const SafeTensors *st, const char *name);
/** @brief The metadata value for @p key, or NULL. */
const char *st_meta(const SafeTensors *st, const char *key);

/**
 * @brief Float32 values of a float-typed entry.
 *
 * F32 data that is 4-byte aligned in the map is returned in place
 * (*owned = 0); anything else is converted into a new buffer the caller frees
 * (*owned = 1).
 */
VitStatus st_get_f32(const SafeTensors *st, const StTensor *e, const float **out, int *owned,
                     VitError *err);
/**
 * @brief Copy the entry called @p name into a new owned Tensor (at most 4 dims).
 * @return VIT_ERR_INPUT if missing, not a float type or more than 4-d.
 */
VitStatus st_read_tensor(const SafeTensors *st, const char *name, Tensor *out, VitError *err);

/** @brief IEEE half → float. */
float st_f16_to_f32(uint16_t h);
/** @brief bfloat16 → float (the top 16 bits of a float). */
float st_bf16_to_f32(uint16_t h);
/** @brief float → IEEE half, rounding to nearest even. */
uint16_t st_f32_to_f16(float f);
/** @brief float → bfloat16, rounding to nearest even. */
uint16_t st_f32_to_bf16(float f);

/** One tensor queued for writing. */
typedef struct {
    char *name;          /**< tensor name */
    StDtype dtype;       /**< on disk: F32, F16 or BF16 from floats; any from raw bytes */
    int ndim;            /**< dimensions */
    int shape[TENSOR_MAX_DIMS]; /**< sizes */
    const float *data;   /**< borrowed until st_writer_save() returns (float entries) */
    const void *raw;     /**< or the bytes as they are stored (st_writer_add_raw()), borrowed */
    size_t numel;        /**< elements */
} StWriterEntry;

/** Collects tensors and metadata, then writes them in one go. */
typedef struct {
    StWriterEntry *entries; /**< queued tensors in order */
    /** used and allocated entries */ /**@{*/
    int count, cap;
    /**@}*/
    char **meta_keys;       /**< metadata keys */
    char **meta_values;     /**< metadata values */
    int meta_count;         /**< metadata pairs */
} StWriter;

/** @brief Queue @p t (borrowed) under @p name, stored as float32. */
void st_writer_add(StWriter *w, const char *name, const Tensor *t);
/** @brief Queue @p t under @p name, stored as @p dtype (ST_F32, ST_F16 or ST_BF16). */
void st_writer_add_as(StWriter *w, const char *name, const Tensor *t, StDtype dtype);
/**
 * @brief Queue the tensor of @p ndim dimensions @p shape whose bytes @p raw
 *        holds (borrowed), stored as @p dtype byte for byte: integer tensors
 *        such as a quantized weight's ST_I8. A wider type's bytes must already
 *        be little-endian.
 */
void st_writer_add_raw(StWriter *w, const char *name, StDtype dtype, int ndim, const int *shape,
                       const void *raw);
/** @brief Add a `__metadata__` string pair; a key added before gets the new value
 *         (the header's keys stay unique). */
void st_writer_meta(StWriter *w, const char *key, const char *value);
/**
 * @brief Write everything to @p path atomically (temporary file, then rename).
 * @return VIT_OK, or VIT_ERR_INPUT naming the path and the system error.
 */
VitStatus st_writer_save(const StWriter *w, const char *path, VitError *err);
/** @brief Free the queue (not the borrowed data). */
void st_writer_free(StWriter *w);

/** @} */
#endif
