/**
 * @file topk.c
 * @brief The indices of the K largest values (see ops.h): the top classes of
 *        the logits for `vit classify`, chapter 09 and the viewer.
 *
 * Complexity: O(n log k) time, no memory beyond @p idx.
 *
 * Why a heap: we only need the k best, in order, not all n sorted. Keeping
 * the k best seen so far in a sorted list costs O(k) per insertion, O(n·k) in
 * all: minutes for a million classes and `--top 1000000`. A binary heap with
 * the *worst* of the k kept at its root answers "does value i beat the worst
 * one kept?" in O(1) and replaces that one in O(log k). Only the k survivors
 * are then sorted (heapsort, in place: O(k log k)).
 *
 * The heap lives in idx[0..size): the children of position p are 2p+1 and
 * 2p+2. Its rule: every parent ranks after both its children, so idx[0]
 * ranks last of all (a "min-heap" on ranks_before()).
 */
#include "ops/ops.h"

#include <math.h>
#include <stdbool.h>

// Does a rank before b? Larger first, NaN last, lower index on ties.
// This is a strict total order, so the result does not depend on the algorithm.
// [ranks_before]
static bool ranks_before(const float *v, int a, int b) {
    if (isnan(v[a]) != isnan(v[b])) return !isnan(v[a]);
    if (!isnan(v[a]) && v[a] != v[b]) return v[a] > v[b];
    return a < b;
}
// [ranks_before]

// heap is (size) indices into v. Moves heap[at] down, swapping it with the
// child that ranks last, until both children rank before it: O(log size).
static void sift_down(int *heap, const float *v, size_t size, size_t at) {
    for (;;) {
        size_t worst = at, left = 2 * at + 1, right = left + 1;
        if (left < size && ranks_before(v, heap[worst], heap[left])) worst = left;
        if (right < size && ranks_before(v, heap[worst], heap[right])) worst = right;
        if (worst == at) return; // the rule holds again
        int moved = heap[at];
        heap[at] = heap[worst];
        heap[worst] = moved;
        at = worst;
    }
}

// heap is (size) indices. Orders any array into a heap, bottom up: O(size).
static void heapify(int *heap, const float *v, size_t size) {
    for (size_t p = size / 2; p-- > 0;) sift_down(heap, v, size, p);
}

// heap is (size) indices obeying the heap rule; afterwards they are sorted,
// the one that ranks first at heap[0]. The root (the worst) goes to the end,
// the heap shrinks by one, repeat: O(size log size).
static void sort_heap(int *heap, const float *v, size_t size) {
    for (size_t end = size; end > 1; end--) {
        int worst = heap[0];
        heap[0] = heap[end - 1];
        heap[end - 1] = worst;
        sift_down(heap, v, end - 1, 0);
    }
}

// [ops_top_k]
int ops_top_k(int *idx, int k, const float *v, int n) {
    // idx is (min(k, n)), v is (n)
    if (k > n) k = n;
    if (k <= 0) return 0; // nothing asked for (or nothing to rank): idx is not touched
    // 1. the first k values are the k best seen so far
    for (int i = 0; i < k; i++) idx[i] = i;
    heapify(idx, v, (size_t)k);
    // 2. each later value that beats the worst kept (the root) replaces it
    for (int i = k; i < n; i++) {
        if (!ranks_before(v, i, idx[0])) continue; // O(1) for most of them
        idx[0] = i;
        sift_down(idx, v, (size_t)k, 0);
    }
    // 3. the k survivors, best first
    sort_heap(idx, v, (size_t)k);
    return k;
}
// [ops_top_k]
