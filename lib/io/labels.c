/**
 * @file labels.c
 * @brief Loading class names from a text file, a Hugging Face config.json or
 *        a weights file's metadata.
 */
#include "io/labels.h"
#include "base/fileio.h"

#include <cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef VIT_DATA_DIR
#define VIT_DATA_DIR "data" ///< data/ when $VIT_DATA_DIR is unset (the build may set it)
#endif

const char *vit_data_path(char *buf, size_t size, const char *relative) {
    const char *dir = getenv("VIT_DATA_DIR");
    snprintf(buf, size, "%s/%s", dir && *dir ? dir : VIT_DATA_DIR, relative);
    return buf;
}

static char *copy_name(const char *name, size_t len) {
    while (len > 0 && (name[len - 1] == '\n' || name[len - 1] == '\r' || name[len - 1] == ' '))
        len--;
    char *s = vit_malloc(len + 1);
    memcpy(s, name, len);
    s[len] = '\0';
    return s;
}

VitStatus labels_load(Labels *l, const char *path, VitError *err) {
    memset(l, 0, sizeof *l);
    char *text;
    size_t size;
    VitStatus s = file_read_all(&text, &size, path, LABELS_MAX_BYTES, "a labels file", err);
    if (s != VIT_OK) return s;
    // one name per line; a last line without its newline is a name too
    size_t lines = 0;
    for (size_t i = 0; i < size; i++) lines += text[i] == '\n';
    if (size > 0 && text[size - 1] != '\n') lines++;
    if (lines == 0 || lines > LABELS_MAX) {
        char n[VIT_NUM_BUF];
        s = lines == 0 ? vit_fail(err, VIT_ERR_INPUT, "%s: no labels in the file", path)
                       : vit_fail(err, VIT_ERR_INPUT, "%s: %s lines, more than the %d labels a "
                                  "model may have", path, vit_thousands(n, (int64_t)lines),
                                  LABELS_MAX);
        free(text);
        return s;
    }
    l->names = vit_malloc(lines * sizeof(char *));
    for (const char *p = text, *end = text + size; p < end && l->count < (int)lines;) {
        const char *nl = memchr(p, '\n', (size_t)(end - p));
        size_t len = nl ? (size_t)(nl - p) : (size_t)(end - p);
        l->names[l->count++] = copy_name(p, len);
        p += len + 1;
    }
    free(text);
    return VIT_OK;
}

VitStatus labels_load_hf_config(Labels *l, const char *path, VitError *err) {
    memset(l, 0, sizeof *l);
    cJSON *root;
    VitStatus status = file_read_json(&root, path, err);
    if (status != VIT_OK) return status;
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "id2label");
    if (!map) { // a config.json without names: fine, there are none
        cJSON_Delete(root);
        return VIT_OK;
    }
    int n = cJSON_IsObject(map) ? cJSON_GetArraySize(map) : 0;
    if (n <= 0 || n > LABELS_MAX) {
        cJSON_Delete(root);
        return vit_fail(err, VIT_ERR_INPUT, "%s: \"id2label\" is not an object of between 1 and "
                        "%d \"id\": \"name\" pairs", path, LABELS_MAX);
    }
    l->names = vit_calloc((size_t)n, sizeof(char *));
    l->count = n;
    for (const cJSON *item = map->child; item; item = item->next) {
        char *end;
        long id = strtol(item->string, &end, 10);
        if (end == item->string || *end || id < 0 || id >= n || !cJSON_IsString(item) ||
            l->names[id]) {
            status = vit_fail(err, VIT_ERR_INPUT,
                              "%s: id2label entry \"%s\" is not a unique id in 0..%d with a name",
                              path, item->string, n - 1);
            break;
        }
        l->names[id] = vit_strdup(item->valuestring);
    }
    cJSON_Delete(root);
    if (status != VIT_OK) labels_free(l);
    return status;
}

VitStatus labels_load_metadata(Labels *labels, const SafeTensors *weights, VitError *err) {
    memset(labels, 0, sizeof *labels);
    const char *text = weights ? st_meta(weights, "class_names") : NULL;
    if (!text) return VIT_OK; // no names of its own: fine
    const char *file = weights->label ? weights->label : "the weights";
    cJSON *root = cJSON_ParseWithOpts(text, NULL, true);
    const int n = cJSON_IsArray(root) ? cJSON_GetArraySize(root) : 0;
    VitStatus s = VIT_OK;
    if (!root)
        s = vit_fail(err, VIT_ERR_INPUT, "%s: __metadata__ \"class_names\" is not valid JSON "
                     "(expected an array of the class names, e.g. [\"cat\", \"dog\"])", file);
    else if (!cJSON_IsArray(root))
        s = vit_fail(err, VIT_ERR_INPUT, "%s: __metadata__ \"class_names\" is not a JSON array "
                     "(expected the class names in class order, e.g. [\"cat\", \"dog\"])", file);
    else if (n == 0 || n > LABELS_MAX)
        s = vit_fail(err, VIT_ERR_INPUT, "%s: __metadata__ \"class_names\" holds %d names "
                     "(expected between 1 and %d)", file, n, LABELS_MAX);
    int i = 0;
    for (const cJSON *item = root ? root->child : NULL; s == VIT_OK && item; item = item->next, i++)
        if (!cJSON_IsString(item))
            s = vit_fail(err, VIT_ERR_INPUT, "%s: __metadata__ \"class_names\": entry %d is %s, "
                         "not a string (a name)", file, i,
                         cJSON_IsNumber(item) ? "a number" : cJSON_IsNull(item) ? "null"
                         : cJSON_IsBool(item) ? "a boolean" : cJSON_IsArray(item) ? "an array"
                         : "an object");
    if (s == VIT_OK) {
        labels->names = vit_calloc((size_t)n, sizeof(char *));
        labels->count = n;
        i = 0;
        for (const cJSON *item = root->child; item; item = item->next)
            labels->names[i++] = vit_strdup(item->valuestring);
    }
    cJSON_Delete(root);
    return s;
}

VitStatus labels_for_weights(Labels *labels, const char *labels_file, const char *config_json,
                             const SafeTensors *weights, int classes, VitError *err) {
    memset(labels, 0, sizeof *labels);
    // the first source that has names: a file given, config.json's id2label, the metadata
    const char *source = labels_file ? labels_file : config_json, *what = "has", *unit = "labels";
    VitStatus s = VIT_OK;
    if (labels_file) s = labels_load(labels, labels_file, err);
    else if (config_json) s = labels_load_hf_config(labels, config_json, err), what = "id2label has";
    if (s == VIT_OK && labels->count == 0 && !labels_file && weights) {
        s = labels_load_metadata(labels, weights, err);
        source = weights->label ? weights->label : "the weights";
        what = "__metadata__ \"class_names\" has", unit = "names";
    }
    if (s != VIT_OK) return s;
    if (labels->count > 0 && labels->count != classes) {
        s = vit_fail(err, VIT_ERR_INPUT, "%s: %s %d %s but the model has %d classes", source,
                     what, labels->count, unit, classes);
        labels_free(labels);
        return s;
    }
    if (labels->count > 0 || labels_file || classes != 1000) return VIT_OK;
    // a 1000-class head without names of its own: ImageNet-1k, if the list is there
    char path[4096];
    VitError ignored; // a missing list only costs the names
    if (labels_load(labels, vit_data_path(path, sizeof path, "labels/imagenet1k.txt"), &ignored) ==
            VIT_OK && labels->count != classes)
        labels_free(labels);
    return VIT_OK;
}

const char *labels_name(const Labels *l, int i) {
    return l && i >= 0 && i < l->count ? l->names[i] : NULL;
}

void labels_free(Labels *l) {
    for (int i = 0; i < l->count; i++) free(l->names[i]);
    free(l->names);
    memset(l, 0, sizeof *l);
}
