/**
 * @file shards.c
 * @brief Data-parallel training on one machine (shards.h): vit_forward_backward()
 *        with the batch split into shards, one per thread, each on a replica of
 *        the model that shares its weights.
 *
 * Shape legend: B batch, B_s the images of shard s, Y classes.
 *
 * Why. A small model's operations are too small to share between threads:
 * a (6400 × 64) · (64 × 192) product, a softmax over 50 numbers. Splitting
 * each one costs more in waking and waiting than it saves, so two threads
 * trained the Fashion-MNIST model barely faster than one. Splitting the
 * batch instead gives each thread a whole forward and backward pass of its
 * own, with no waiting until the end: the way PyTorch's DistributedDataParallel
 * splits a batch over GPUs, here over cores. Like DDP, it wraps the model from
 * outside: the model, its forward and its backward know nothing of shards,
 * and whoever trains holds this object (the Trainer, train.h).
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

#include "train/shards.h"
#include "base/util.h"
#include "model/vit_internal.h"

/** The model, its replicas and their gradients. */
struct VitShards {
    Vit *vit;           /**< the model whose batches are split (borrowed) */
    int count;          /**< shards; 1: the model itself, no replica */
    Vit *replicas;      /**< (count) the model's weights, activations of their own; NULL for 1 */
    VitGrads *grads;    /**< (count) each replica's gradients; NULL for 1 */
    float *losses;      /**< (count) each shard's mean loss; NULL for 1 */
};

// Shard s of a batch of B split n ways: images [first, first + count).
static void shard_range(int B, int n, int s, int *first, int *count) {
    *first = (int)((long)B * s / n);
    *count = (int)((long)B * (s + 1) / n) - *first;
}

void vit_shards_free(VitShards *sh) {
    if (!sh) return;
    for (int s = 0; sh->replicas && s < sh->count; s++) {
        vit_acts_free(&sh->replicas[s]); // their weights are the model's
        vit_grads_free(&sh->grads[s]);
    }
    free(sh->replicas);
    free(sh->grads);
    free(sh->losses);
    free(sh);
}

// Replica s: the model's sizes and weights, activations and gradients of its own
// for its share of a batch of B.
static VitStatus replica_init(VitShards *sh, int s, int B, VitError *err) {
    int first, count;
    shard_range(B, sh->count, s, &first, &count);
    Vit *r = &sh->replicas[s];
    r->config = sh->vit->config;
    r->weights = sh->vit->weights; // borrowed: the same parameters, read by every shard
    VitStatus st = vit_train_prepare(r, VIT_KEEP_DEFAULT, count, err);
    return st == VIT_OK ? vit_grads_init(&sh->grads[s], sh->vit, err) : st;
}

VitStatus vit_shards_new(VitShards **shards, Vit *vit, int n, int B, VitError *err) {
    *shards = NULL;
    if (n < 1 || n > B)
        return vit_fail(err, VIT_ERR_USAGE, "%d shards of a batch of %d: give 1 to %d", n, B, B);
    VitShards *sh = vit_calloc(1, sizeof *sh);
    sh->vit = vit;
    sh->count = n;
    VitStatus st = VIT_OK;
    if (n == 1) { // one shard: the model itself, prepared for training
        st = vit_train_prepare(vit, VIT_KEEP_DEFAULT, B, err);
    } else {
        sh->losses = vit_calloc((size_t)n, sizeof *sh->losses);
        sh->replicas = vit_calloc((size_t)n, sizeof *sh->replicas);
        sh->grads = vit_calloc((size_t)n, sizeof *sh->grads);
        for (int s = 0; s < n && st == VIT_OK; s++) st = replica_init(sh, s, B, err);
    }
    if (st != VIT_OK) vit_shards_free(sh);
    else *shards = sh;
    return st;
}

// Adds scale · from into to, n floats.
static void add_scaled(float *to, const float *from, size_t n, float scale) {
    for (size_t i = 0; i < n; i++) to[i] += scale * from[i];
}

// Each shard's forward, loss and backward on its slice of the batch, one thread
// per shard; VIT_OK, or the first failing shard's status and message.
static VitStatus run_shards(VitShards *sh, const Tensor *input, const int *targets,
                            float smoothing, VitError *err) {
    // input is (B, C, S, S), targets (B); shard s reads its slice of both, in place
    const int B = input->shape[0], n = sh->count;
    const size_t image = input->numel / (size_t)B;
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
    return failed;
}

VitStatus vit_shards_forward_backward(VitShards *sh, VitGrads *grads, const Tensor *input,
                                      const int *targets, float smoothing, float *loss,
                                      VitError *err) {
    Vit *vit = sh->vit;
    if (sh->count == 1) // the model itself: the unsplit step
        return vit_forward_backward(vit, grads, input, targets, smoothing, loss, NULL, NULL, err);
    const int n = sh->count, Y = vit->config.num_classes;
    char got[64];
    if (input->ndim != 4)
        return vit_fail(err, VIT_ERR_INPUT, "input has shape %s, the model expects (B, %d, %d, %d)",
                        tensor_shape_str(input, got, sizeof got), vit->config.channels,
                        vit->config.image_size, vit->config.image_size);
    const int B = input->shape[0];
    VitStatus st = vit_check_targets(vit, B, targets, smoothing, err); // the batch's image numbers
    if (st != VIT_OK) return st;
    if (B < n) return vit_fail(err, VIT_ERR_INPUT, "a batch of %d split into %d shards", B, n);
    if (grads->floats != sh->grads[0].floats)
        return vit_fail(err, VIT_ERR_INPUT, "the gradients hold %zu floats; this model has %zu "
                        "parameters", grads->floats, sh->grads[0].floats);
    // the batch's logits go where vit_logits() reads them, as after an unsplit step
    if ((st = vit_acts_ensure(vit, B, err)) != VIT_OK) return st;
    if ((st = run_shards(sh, input, targets, smoothing, err)) != VIT_OK) return st;
    // the batch's loss, gradients and logits from the shards', shard 0 first
    double total = 0;
    for (int s = 0; s < n; s++) {
        int first, count;
        shard_range(B, n, s, &first, &count);
        const float w = (float)count / (float)B; // B_s / B
        total += (double)w * sh->losses[s];
        add_scaled(grads->memory, sh->grads[s].memory, grads->floats, w);
        memcpy(vit->acts.logits + (size_t)first * Y, sh->replicas[s].acts.logits,
               sizeof(float) * (size_t)count * Y);
    }
    *loss = (float)total;
    return VIT_OK;
}
