/**
 * @file labels.h
 * @brief Class names for the logits: a text file, or a Hugging Face config.json.
 *
 * A 1000-class head without names of its own gets the ImageNet-1k names of
 * data/labels/imagenet1k.txt (one per line, in class order). A Hugging Face
 * checkpoint's config.json carries them as "id2label": {"0": "tench, …", …}.
 */
#ifndef VIT_LABELS_H
#define VIT_LABELS_H

#include "util.h"

/** @defgroup labels Class labels
 *  @brief Index → name for the classifier's outputs.
 *  @{
 */

/** Names of the classes, index-aligned with the logits. */
typedef struct {
    char **names; /**< count strings */
    int count;    /**< number of classes named */
} Labels;

/** @brief Read one name per line (trailing whitespace trimmed; empty lines are names too). */
VitStatus labels_load(Labels *labels, const char *path, VitError *err);
/** @brief Read "id2label" from a Hugging Face config.json; ids must be 0…n-1. */
VitStatus labels_load_hf_config(Labels *labels, const char *config_path, VitError *err);
/** @brief The name of class @p i, or NULL when out of range. */
const char *labels_name(const Labels *labels, int i);
/** @brief Free the names and zero the struct. */
void labels_free(Labels *labels);

/**
 * @brief Path of a file in the project's data/ folder: $VIT_DATA_DIR if set,
 *        else the data/ folder of the source tree this was built from.
 * @param[out] buf  receives the path
 */
const char *vit_data_path(char *buf, size_t size, const char *relative);

/** @} */
#endif
