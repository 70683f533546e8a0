/**
 * @file export.h
 * @brief The tensor on screen, written to a file a notebook opens:
 *        NumPy's .npy (`numpy.load`) or safetensors (`safetensors.torch.load_file`).
 *
 * A .npy file (NumPy's format version 1.0) is
 *   [6 bytes: magic "\x93NUMPY"] [2 bytes: version 1, 0]
 *   [2 bytes: header length H, little-endian uint16]
 *   [H bytes: a Python dict literal,
 *             `{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3, 4), }`,
 *             padded with spaces and ending in '\n']
 *   [the float32 values, little-endian, row-major (C order)]
 * where 10 + H is a multiple of 64, so the data starts aligned. The header is
 * laid out byte for byte as `numpy.save` (NumPy 1.24) lays it out: the spare
 * spaces it leaves after the dict so the first axis can grow in place
 * (21 − the digits of the first size), then at least one space of padding up
 * to the alignment. A 1-d shape is `(5,)`, a scalar's `()`. For a tensor of
 * up to four sizes the prefix and header always come to 128 bytes.
 *
 * Both writers go through fileio.h's OutFile: a temporary file beside the
 * destination, renamed over it only when complete, so a failure never leaves
 * half a file and never destroys the file that was there.
 *
 * What it omits: other dtypes than float32, Fortran order, big-endian hosts
 * (the values are written as the machine holds them), and NumPy's format
 * versions 2.0 and 3.0 (for headers over 64 KiB, which four sizes never need).
 */
#ifndef VIEWER_EXPORT_H
#define VIEWER_EXPORT_H

#include <stddef.h>

#include "base/tensor.h"
#include "base/util.h"

/** @defgroup viewer_export Viewer export
 *  @brief The current stage's tensor as a .npy or safetensors file for a notebook.
 *  @{
 */

/**
 * @brief Write @p t as a NumPy .npy file (version 1.0, '<f4', C order).
 * @param[in] t     the tensor, 0 to 4 dimensions
 * @param[in] path  the destination; an existing regular file is replaced only on success
 * @param[out] err  on failure "PATH: cannot write: No such file or directory", …
 * @return VIT_OK, or VIT_ERR_INPUT with nothing left behind.
 */
VitStatus export_npy(const Tensor *t, const char *path, VitError *err);

/**
 * @brief Write @p t as a safetensors file holding one F32 tensor called @p name.
 *
 * The `__metadata__` says where it came from: `"stage": name` and
 * `"producer": "vitview"`.
 * @param[in] t     the tensor
 * @param[in] name  the stage, e.g. "blocks.3.attn.probs": the tensor's name in the file
 * @param[in] path  the destination; an existing regular file is replaced only on success
 * @param[out] err  the message on failure, naming @p path
 * @return VIT_OK, or VIT_ERR_INPUT with nothing left behind.
 */
VitStatus export_safetensors(const Tensor *t, const char *name, const char *path, VitError *err);

/**
 * @brief The file name an export gets when the learner names none:
 *        "vitview-" + @p stage + "." + @p ext, e.g. "vitview-blocks.3.attn.probs.npy".
 *
 * Characters outside [A-Za-z0-9._-] (a '/' among them) become '_', so the name
 * is one plain file in the current folder.
 * @param[out] buf    receives the name, always terminated (cut if @p size is too small)
 * @param[in]  size   bytes in @p buf
 * @param[in]  stage  the stage's name; empty or NULL gives "tensor"
 * @param[in]  ext    the extension without the dot, e.g. "npy" or "safetensors"
 */
void export_default_path(char *buf, size_t size, const char *stage, const char *ext);

/** @} */
#endif
