/**
 * @file shards.c
 * @brief Data-parallel training on one machine: vit_forward_backward() with
 *        the batch split into shards, one per thread, each on a replica of
 *        the model that shares its weights (vit_train_shards()).
 *
 * Shape legend: B batch, B_s the images of shard s, Y classes.
 *
 * Why. A small model's operations are too small to share between threads:
 * a (6400 × 64) · (64 × 192) product, a softmax over 50 numbers. Splitting
 * each one costs more in waking and waiting than it saves, so two threads
 * trained the Fashion-MNIST model barely faster than one. Splitting the
 * batch instead gives each thread a whole forward and backward pass of its
 * own, with no waiting until the end: the way PyTorch's DistributedDataParallel
 * splits a batch over GPUs, here over cores.
 *
 * The arithmetic. The loss of the batch is the mean over its B images, so
 * with shard s holding B_s of them and its own mean loss L_s,
 *   L = Σ_s (B_s / B) · L_s,   ∂L/∂θ = Σ_s (B_s / B) · ∂L_s/∂θ,
 * which is what is computed: each replica's gradients into its own buffers,
 * then added into the model's, shard 0 first. Inside a shard every operation
 * runs on one thread (OpenMP's nested regions are inactive, OpenBLAS is held
 * to one thread), so a shard's numbers do not depend on the thread count, and
 * neither does the sum: the same shards give the same weights bit for bit on
 * any number of threads. They differ from the unsharded step's in the last
 * bits (sums taken in another order), as PyTorch's on another GPU count do.
 */
#include <stdlib.h>
#include <string.h>

#ifdef _OPENMP
#include <omp.h>
#endif
#ifdef VIT_HAVE_BLAS
#include <cblas.h>
#endif

#include "util.h"
#include "vit.h"
#include "vit_internal.h"

/** The replicas, their gradients, and the batch's logits gathered from them. */
struct VitShards {
    int count;          /**< shards */
    Vit *replicas;      /**< (count) the model's weights, activations of their own */
    VitGrads *grads;    /**< (count) each replica's gradients */
    float *losses;      /**< (count) each shard's mean loss */
    float *logits;      /**< (B, Y) the last sharded step's logits, in batch order */
    int logits_room;    /**< the batch they have room for */
    int logits_batch;   /**< B of those logits; 0 when the model's own are newer */
};

// Shard s of a batch of B split n ways: images [first, first + count).
static void shard_range(int B, int n, int s, int *first, int *count) {
    *first = (int)((long)B * s / n);
    *count = (int)((long)B * (s + 1) / n) - *first;
}

void vit_shards_free(Vit *vit) {
    VitShards *sh = vit->shards;
    if (!sh) return;
    for (int s = 0; s < sh->count; s++) {
        vit_acts_free(&sh->replicas[s]);
        vit_grads_free(&sh->grads[s]);
    }
    free(sh->replicas);
    free(sh->grads);
    free(sh->losses);
    free(sh->logits);
    free(sh);
    vit->shards = NULL;
}

VitStatus vit_train_shards(Vit *vit, int n, int B, VitError *err) {
    if (n < 1 || n > B)
        return vit_fail(err, VIT_ERR_USAGE, "%d shards of a batch of %d: give 1 to %d", n, B, B);
    vit_shards_free(vit);
    if (n == 1) return vit_train_prepare(vit, VIT_KEEP_DEFAULT, B, err);
    VitShards *sh = vit_calloc(1, sizeof *sh);
    sh->count = n;
    sh->replicas = vit_calloc((size_t)n, sizeof *sh->replicas);
    sh->grads = vit_calloc((size_t)n, sizeof *sh->grads);
    sh->losses = vit_calloc((size_t)n, sizeof *sh->losses);
    sh->logits = vit_calloc((size_t)B * (size_t)vit->config.num_classes, sizeof *sh->logits);
    sh->logits_room = B;
    vit->shards = sh;
    VitStatus st = VIT_OK;
    for (int s = 0; s < n && st == VIT_OK; s++) {
        int first, count;
        shard_range(B, n, s, &first, &count);
        Vit *r = &sh->replicas[s];
        r->config = vit->config;
        r->weights = vit->weights; // borrowed: the same parameters, read by every shard
        if ((st = vit_train_prepare(r, VIT_KEEP_DEFAULT, count, err)) == VIT_OK)
            st = vit_grads_init(&sh->grads[s], vit, err);
    }
    if (st != VIT_OK) vit_shards_free(vit);
    return st;
}

const float *vit_shards_logits(const Vit *vit, int *B) {
    const VitShards *sh = vit->shards;
    if (!sh || sh->logits_batch == 0) return NULL;
    *B = sh->logits_batch;
    return sh->logits;
}

void vit_shards_stale(Vit *vit) {
    if (vit->shards) vit->shards->logits_batch = 0;
}

// Adds scale · from into to, n floats.
static void add_scaled(float *to, const float *from, size_t n, float scale) {
    for (size_t i = 0; i < n; i++) to[i] += scale * from[i];
}

VitStatus vit_forward_backward_sharded(Vit *vit, VitGrads *grads, const Tensor *input,
                                       const int *targets, float smoothing, float *loss,
                                       VitError *err) {
    // input is (B, C, S, S), targets (B); each shard's slice of both, in order
    VitShards *sh = vit->shards;
    const int B = input->shape[0], n = sh->count, Y = vit->config.num_classes;
    const size_t image = input->numel / (size_t)B;
    if (B < n) return vit_fail(err, VIT_ERR_INPUT, "a batch of %d split into %d shards", B, n);
    if (grads->floats != sh->grads[0].floats)
        return vit_fail(err, VIT_ERR_INPUT, "the gradients hold %zu floats; this model has %zu "
                        "parameters", grads->floats, sh->grads[0].floats);
    if (B > sh->logits_room) { // a larger batch than the shards were made for
        free(sh->logits);
        sh->logits = vit_calloc((size_t)B * (size_t)Y, sizeof *sh->logits);
        sh->logits_room = B;
    }
    VitStatus *status = vit_calloc((size_t)n, sizeof *status);
    VitError *errors = vit_calloc((size_t)n, sizeof *errors);
    const int threads = vit_get_threads(); // before OpenBLAS's, which may set OpenMP's too
#ifdef VIT_HAVE_BLAS
    openblas_set_num_threads(1); // each shard's products on its own thread
#endif
#ifdef _OPENMP
    const int levels = omp_get_max_active_levels();
    omp_set_max_active_levels(1); // the operations inside a shard: one thread
#endif
    // OpenBLAS's OpenMP build sets OpenMP's thread count with its own: hence num_threads
#pragma omp parallel for schedule(static, 1) num_threads(threads < n ? threads : n)
    for (int s = 0; s < n; s++) {
        int first, count;
        shard_range(B, n, s, &first, &count);
        int shape[4] = {count, input->shape[1], input->shape[2], input->shape[3]};
        const Tensor part = tensor_view_shape(input->data + (size_t)first * image, 4, shape);
        vit_grads_zero(&sh->grads[s]);
        status[s] = vit_forward_backward(&sh->replicas[s], &sh->grads[s], &part, targets + first,
                                         smoothing, &sh->losses[s], NULL, NULL, &errors[s]);
    }
#ifdef _OPENMP
    omp_set_max_active_levels(levels);
#endif
    vit_set_threads(threads); // OpenMP and OpenBLAS back to the run's thread count
    VitStatus failed = VIT_OK;
    for (int s = 0; s < n && failed == VIT_OK; s++)
        if ((failed = status[s]) != VIT_OK && err) *err = errors[s]; // the first shard's message
    free(status);
    free(errors);
    if (failed != VIT_OK) return failed;
    // the batch's loss, gradients and logits from the shards', shard 0 first
    double total = 0;
    for (int s = 0; s < n; s++) {
        int first, count;
        shard_range(B, n, s, &first, &count);
        const float w = (float)count / (float)B; // B_s / B
        total += (double)w * sh->losses[s];
        add_scaled(grads->memory, sh->grads[s].memory, grads->floats, w);
        memcpy(sh->logits + (size_t)first * Y, sh->replicas[s].acts.logits,
               sizeof(float) * (size_t)count * Y);
    }
    sh->logits_batch = B;
    *loss = (float)total;
    return VIT_OK;
}
