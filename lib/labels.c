/**
 * @file labels.c
 * @brief Loading class names from a text file or a Hugging Face config.json.
 */
#include "labels.h"

#include <cJSON.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef VIT_DATA_DIR
#define VIT_DATA_DIR "data" ///< data/ when $VIT_DATA_DIR is unset (the build may set it)
#endif

enum { MAX_LABELS = 1000000 };

const char *vit_data_path(char *buf, size_t size, const char *relative) {
    const char *dir = getenv("VIT_DATA_DIR");
    snprintf(buf, size, "%s/%s", dir && *dir ? dir : VIT_DATA_DIR, relative);
    return buf;
}

static void add_name(Labels *l, int *cap, const char *name, size_t len) {
    if (l->count == *cap) {
        *cap = *cap ? 2 * *cap : 1024;
        l->names = vit_realloc(l->names, (size_t)*cap * sizeof(char *));
    }
    while (len > 0 && (name[len - 1] == '\n' || name[len - 1] == '\r' || name[len - 1] == ' '))
        len--;
    char *s = vit_malloc(len + 1);
    memcpy(s, name, len);
    s[len] = '\0';
    l->names[l->count++] = s;
}

VitStatus labels_load(Labels *l, const char *path, VitError *err) {
    memset(l, 0, sizeof *l);
    FILE *f = fopen(path, "r");
    if (!f) return vit_fail(err, VIT_ERR_INPUT, "%s: cannot open: %s", path, strerror(errno));
    char *line = NULL;
    size_t cap_line = 0;
    ssize_t n;
    int cap = 0;
    while ((n = getline(&line, &cap_line, f)) >= 0 && l->count < MAX_LABELS)
        add_name(l, &cap, line, (size_t)n);
    free(line);
    fclose(f);
    if (l->count == 0) return vit_fail(err, VIT_ERR_INPUT, "%s: no labels in the file", path);
    return VIT_OK;
}

static char *read_text(const char *path, VitError *err, VitStatus *status) {
    FILE *f = fopen(path, "rb");
    if (!f) {
        *status = vit_fail(err, VIT_ERR_INPUT, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    size_t cap = 4096, len = 0;
    char *buf = vit_malloc(cap);
    size_t got;
    while ((got = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += got;
        if (len + 1 == cap) {
            if (cap > (64u << 20)) break; // a config.json is kilobytes
            cap *= 2;
            buf = vit_realloc(buf, cap);
        }
    }
    fclose(f);
    buf[len] = '\0';
    return buf;
}

VitStatus labels_load_hf_config(Labels *l, const char *path, VitError *err) {
    memset(l, 0, sizeof *l);
    VitStatus status = VIT_OK;
    char *text = read_text(path, err, &status);
    if (!text) return status;
    cJSON *root = cJSON_Parse(text);
    free(text);
    if (!root) return vit_fail(err, VIT_ERR_INPUT, "%s: not valid JSON", path);
    const cJSON *map = cJSON_GetObjectItemCaseSensitive(root, "id2label");
    int n = cJSON_IsObject(map) ? cJSON_GetArraySize(map) : 0;
    if (n <= 0 || n > MAX_LABELS) {
        cJSON_Delete(root);
        return vit_fail(err, VIT_ERR_INPUT, "%s: no \"id2label\" object", path);
    }
    l->names = vit_calloc((size_t)n, sizeof(char *));
    l->count = n;
    for (const cJSON *item = map->child; item; item = item->next) {
        char *end;
        long id = strtol(item->string, &end, 10);
        if (*end || id < 0 || id >= n || !cJSON_IsString(item) || l->names[id]) {
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

const char *labels_name(const Labels *l, int i) {
    return l && i >= 0 && i < l->count ? l->names[i] : NULL;
}

void labels_free(Labels *l) {
    for (int i = 0; i < l->count; i++) free(l->names[i]);
    free(l->names);
    memset(l, 0, sizeof *l);
}
