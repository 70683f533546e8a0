/**
 * @file topk.c
 * @brief The indices of the K largest values (see ops.h): the top classes of
 *        the logits for `vit classify`, chapter 09 and the viewer.
 */
#include "ops.h"

#include <math.h>
#include <stdbool.h>

// Does a rank before b? Larger first, NaN last, lower index on ties.
static bool ranks_before(const float *v, int a, int b) {
    if (isnan(v[a]) != isnan(v[b])) return !isnan(v[a]);
    if (!isnan(v[a]) && v[a] != v[b]) return v[a] > v[b];
    return a < b;
}

int top_k(int *idx, int k, const float *v, int n) {
    if (k > n) k = n;
    int have = 0;
    // insertion into a sorted list of k: O(n·k), fine for k ≤ a screenful
    for (int i = 0; i < n; i++) {
        int pos = have;
        while (pos > 0 && ranks_before(v, i, idx[pos - 1])) pos--;
        if (pos >= k) continue;
        int last = have < k ? have : k - 1;
        for (int j = last; j > pos; j--) idx[j] = idx[j - 1];
        idx[pos] = i;
        if (have < k) have++;
    }
    return have;
}
