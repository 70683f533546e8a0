/**
 * @file labels.h
 * @brief Class names for the logits: a text file, a Hugging Face config.json,
 *        or the weights file's own metadata.
 *
 * A 1000-class head without names of its own gets the ImageNet-1k names of
 * data/labels/imagenet1k.txt (one per line, in class order). A Hugging Face
 * checkpoint's config.json carries them as "id2label": {"0": "tench, …", …};
 * the project's own models carry them in their safetensors `__metadata__` as
 * "class_names": a JSON array of the Y names in class order, e.g.
 * ["T-shirt/top", "Trouser", …].
 */
#ifndef VIT_LABELS_H
#define VIT_LABELS_H

#include "base/util.h"
#include "io/safetensors.h"

/** @defgroup labels Class labels
 *  @brief Index → name for the classifier's outputs.
 *
 *  Used in @ref chapter12 "chapter 12" (the names of the classes the model chooses). Pinned by the suites
 *  @ref test_classify.c "classify" and @ref test_resample.c "resample" (@ref answer_keys "the answer keys").
 *  @{
 */

/** Names of the classes, index-aligned with the logits. */
typedef struct {
    char **names; /**< count strings */
    int count;    /**< number of classes named */
} Labels;

/** Most names a labels file may hold. */
#define LABELS_MAX 1000000
/** Largest labels file read: a million names of 64 bytes. */
#define LABELS_MAX_BYTES (64u << 20)

/**
 * @brief Read one name per line (trailing whitespace trimmed; empty lines are names too).
 * @return VIT_ERR_INPUT for a file that is not a regular file, is larger than
 *         LABELS_MAX_BYTES, or holds no line or more than LABELS_MAX.
 */
VitStatus labels_load(Labels *labels, const char *path, VitError *err);
/**
 * @brief Read "id2label" from a Hugging Face config.json; ids must be 0…n-1.
 *
 * A config.json without "id2label" is fine: @p labels is then empty (count 0).
 * One whose "id2label" is malformed is refused, naming the key at fault.
 */
VitStatus labels_load_hf_config(Labels *labels, const char *config_path, VitError *err);
/**
 * @brief Read "class_names" from a weights file's `__metadata__`: a JSON array of strings.
 *
 * A file without the key is fine: @p labels is then empty (count 0).
 * @param[out] labels   the names, in class order
 * @param[in] weights   the open weights file (NULL or zeroed: no names)
 * @param[out] err      the message on failure
 * @return VIT_ERR_INPUT, naming the file and the key, for a value that is not
 *         valid JSON, not an array, empty, longer than LABELS_MAX, or holds
 *         anything but strings (the message says which entry).
 */
VitStatus labels_load_metadata(Labels *labels, const SafeTensors *weights, VitError *err);
/**
 * @brief The class names for a model with @p classes outputs, as every program finds them.
 *
 * In order: @p labels_file if given; else the "id2label" of @p config_json (a
 * Hugging Face config.json beside the weights) if it has one; else the
 * "class_names" of the weights' metadata (labels_load_metadata()) if it has
 * them; else, for 1000 classes, the ImageNet-1k list of
 * data/labels/imagenet1k.txt if it is there; else none (count 0: programs
 * print "class N").
 * @param[out] labels       the names; empty when there are none
 * @param[in] labels_file   a file of names given by the user, or NULL
 * @param[in] config_json   the model's config.json, or NULL
 * @param[in] weights       the open weights file (e.g. Vit::file), or NULL
 * @param[in] classes       Y, the model's number of classes
 * @param[out] err          the message on failure
 * @return VIT_ERR_INPUT when a file given or found is unreadable or malformed
 *         (the weights' "class_names" too: the message names the file and the
 *         key), or names another number of classes than @p classes (the
 *         message says both).
 */
VitStatus labels_for_weights(Labels *labels, const char *labels_file, const char *config_json,
                             const SafeTensors *weights, int classes, VitError *err);
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
