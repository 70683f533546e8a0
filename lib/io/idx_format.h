/**
 * @file idx_format.h
 * @brief IDX files, the format of MNIST and Fashion-MNIST: images and labels
 *        as unsigned bytes, gzip-compressed or plain, read through zlib.
 *
 * The format (Y. LeCun, yann.lecun.com/exdb/mnist), every number big-endian:
 *
 *     offset  bytes  what
 *     0       4      magic: 0x00, 0x00, the element type (0x08 = unsigned byte),
 *                    the number of dimensions (3 for images, 1 for labels)
 *     4       4·n    the size of each dimension, a 32-bit unsigned integer
 *     4+4·n   …      the elements, row-major (the last dimension varies fastest)
 *
 * So an images file starts 0x00000803, count, rows, cols, then count×rows×cols
 * pixels (0 = background, 255 = ink, one byte each); a labels file starts
 * 0x00000801, count, then count class indices. The Fashion-MNIST files ship
 * gzip-compressed (`train-images-idx3-ubyte.gz`); zlib reads a gzip file and
 * a plain one alike (gzread passes plain bytes through), so either may be given.
 *
 * Shapes: an IdxImages holds (count, rows, cols) bytes, image i's pixel (y, x) at
 * `pixels[(i·rows + y)·cols + x]`; an IdxLabels holds (count) bytes.
 *
 * Every file goes through the project's reading rules (@ref contract_files):
 * only a regular file is opened (a FIFO or a directory is refused at once,
 * never read), and the sizes in the header are checked (rows and columns in
 * 1..IDX_MAX_SIDE, count in 1..IDX_MAX_COUNT, the total against the memory the
 * process may take) before memory is taken for them. The data must be exactly
 * as long as the header says: a short file and one with bytes after its last
 * image are both refused, saying how many images there were. A program that
 * needs only the first images reads them alone (idx_read_images_first()): the
 * header is checked all the same, but the bytes after the images read, and
 * the gzip trailer's CRC, are not.
 *
 * Deliberately omitted: the other IDX element types (signed byte, short, int,
 * float, double) and other numbers of dimensions, writing IDX files, and bytes
 * after the end of a gzip stream (zlib stops reading at them, so they are not
 * seen; bytes after the data inside the stream are refused).
 */
#ifndef VIT_IDX_H
#define VIT_IDX_H

#include "base/util.h"

/** @defgroup idx IDX files
 *  @brief MNIST's image and label files: a big-endian header, then unsigned bytes.
 *
 *  Image i's pixel (y, x) is byte
 *  \f[ \text{pixels}[(i \cdot \text{rows} + y) \cdot \text{cols} + x] \f]
 *  of the data that follows the 16-byte header.
 *
 *  Taught in @ref chapter11 "chapter 11" (the data). Pinned by the suites @ref test_idx.c "idx"
 *  (@ref answer_keys "the answer keys").
 *  @{
 */

/** Magic number of an IDX file of unsigned bytes in 3 dimensions: images. */
#define IDX_MAGIC_IMAGES 0x00000803u
/** Magic number of an IDX file of unsigned bytes in 1 dimension: labels. */
#define IDX_MAGIC_LABELS 0x00000801u
/** Most rows (and most columns) an image may have: 1024. */
#define IDX_MAX_SIDE 1024
/** Most images or labels one file may hold: 2²⁴ = 16,777,216 (MNIST has 70,000). */
#define IDX_MAX_COUNT (1 << 24)

/** A set of grey images, every one rows×cols bytes. */
typedef struct {
    int count;             /**< how many images, e.g. 60000 */
    int rows;              /**< image height, e.g. 28 */
    int cols;              /**< image width, e.g. 28 */
    unsigned char *pixels; /**< (count, rows, cols) bytes, row-major; free with idx_images_free() */
} IdxImages;

/** A set of labels, one byte each. */
typedef struct {
    int count;             /**< how many labels, e.g. 60000 */
    unsigned char *labels; /**< (count) bytes, each a class index; free with idx_labels_free() */
} IdxLabels;

/**
 * @brief Read an IDX images file (magic 0x00000803), gzip-compressed or plain.
 * @param[out] out   the images; all zero (no memory held) on failure
 * @param[in]  path  the file, e.g. "/usr/share/datasets/fashion-mnist/train-images-idx3-ubyte.gz"
 * @param[out] err   on failure one sentence naming the file and the problem:
 *                   "PATH: cannot open: No such file or directory",
 *                   "PATH: is a labels file, not images (magic 0x00000801)",
 *                   "PATH: ends after 2 of 3 images", "PATH: corrupt gzip data (zlib: …)", …
 * @return VIT_OK, or VIT_ERR_INPUT.
 */
VitStatus idx_read_images(IdxImages *out, const char *path, VitError *err);

/**
 * @brief Read an IDX labels file (magic 0x00000801), gzip-compressed or plain.
 * @param[out] out   the labels; all zero (no memory held) on failure
 * @param[in]  path  the file, e.g. "…/train-labels-idx1-ubyte.gz"
 * @param[out] err   the message on failure, as for idx_read_images()
 * @return VIT_OK, or VIT_ERR_INPUT.
 */
VitStatus idx_read_labels(IdxLabels *out, const char *path, VitError *err);

/**
 * @brief Read only the first @p count images of an IDX images file, gzip-compressed
 *        or plain, without decompressing the rest.
 *
 * For a program that needs a few images of a large file: the first 64 of
 * Fashion-MNIST's 60,000 are read in a fraction of the time the whole file
 * takes. Checked as idx_read_images() checks: the file is opened by the same
 * rules, the header is checked in full (its magic, rows and columns, and its
 * count in 1..IDX_MAX_COUNT), and the first @p count images must all be there.
 * Not checked, because they lie after the images read: that nothing follows
 * the file's last image, and the gzip trailer (the CRC-32 of the whole data
 * and its length; zlib decompresses ahead, so it may still meet the trailer,
 * and refuse a bad one, when the file ends soon after the images read). When
 * @p count is the file's whole count, both are checked, as idx_read_images()
 * does.
 * @param[out] out    the images (out->count = count); all zero (no memory held) on failure
 * @param[in]  path   the file, as for idx_read_images()
 * @param[in]  count  how many, 1 to the number the file holds
 * @param[out] err    the message on failure, as for idx_read_images(), and
 *                    "PATH: holds 10,000 images, fewer than the 20,000 asked for",
 *                    "PATH: asked for the first 0 images; ask for 1 or more"
 * @return VIT_OK, or VIT_ERR_INPUT.
 */
VitStatus idx_read_images_first(IdxImages *out, const char *path, int count, VitError *err);

/**
 * @brief Read only the first @p count labels of an IDX labels file, as
 *        idx_read_images_first() reads images (the same checks, and the same
 *        two left unchecked for a prefix).
 * @param[out] out    the labels (out->count = count); all zero (no memory held) on failure
 * @param[in]  path   the file, e.g. "…/train-labels-idx1-ubyte.gz"
 * @param[in]  count  how many, 1 to the number the file holds
 * @param[out] err    the message on failure, as for idx_read_images_first()
 * @return VIT_OK, or VIT_ERR_INPUT.
 */
VitStatus idx_read_labels_first(IdxLabels *out, const char *path, int count, VitError *err);

/** @brief Free the pixels and zero the struct (a zeroed struct is fine too). */
void idx_images_free(IdxImages *x);
/** @brief Free the labels and zero the struct (a zeroed struct is fine too). */
void idx_labels_free(IdxLabels *x);

/** @} */
#endif
