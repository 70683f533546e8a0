/**
 * @file complete.h
 * @brief Tab completion of stage names in the viewer's prompts (go to, breakpoint, compare).
 *
 * The names a prompt accepts are
 *  - every node of the forward and the backward pass, by its full name:
 *    "input", "patches", "blocks.3.attn.probs", "grad.blocks.3.attn.probs";
 *  - every block stage without its block, which a breakpoint sets on all the
 *    blocks at once (stepper_toggle_by_name()): "attn.probs", "mlp.fc1", and
 *    "grad.attn.probs" for the backward's.
 *
 * Tab works as in a shell: what was typed grows to the longest prefix all
 * the names it starts share, and when that leaves a choice, the choices are
 * listed. Typing "blocks.1.attn.s" gives "blocks.1.attn.sc" and the list
 * "blocks.1.attn.scaled  blocks.1.attn.scores".
 *
 * Nothing here knows about the terminal.
 */
#ifndef VIEWER_COMPLETE_H
#define VIEWER_COMPLETE_H

#include <stddef.h>

#include "stepper.h"

/** @defgroup viewer_complete Viewer completion
 *  @brief Stage names completed from a prefix, as a shell completes file names.
 *  @{
 */

/**
 * @brief Complete @p typed against the stage names of both passes.
 * @param[in] forward   the forward pass's nodes (may be NULL)
 * @param[in] backward  the backward pass's nodes, "grad." names (may be NULL)
 * @param[in] typed     what the prompt holds, e.g. "blocks.1.attn.s"
 * @param[out] out      the longest common prefix of every match, at least @p typed
 *                      (just @p typed when nothing matches); cut to @p size − 1 bytes
 * @param[in]  size     bytes in @p out
 * @param[out] list     the matches, sorted, each once, separated by two spaces;
 *                      at most @p list_size − 1 bytes, whole names only, and
 *                      ending in " …" when some did not fit (may be NULL)
 * @param[in]  list_size  bytes in @p list
 * @return how many different names start with @p typed (0: none)
 */
int complete_stage(const Stepper *forward, const Stepper *backward, const char *typed, char *out,
                   size_t size, char *list, size_t list_size);

/** @} */
#endif
