/**
 * @file chapters.h
 * @brief The body of every chapter program, so the tests can run them too.
 *
 * Each chapter file defines `chapterNN_run()`; its own `main()` (compiled out
 * with -DCHAPTER_NO_MAIN) hands it to chapter_main(). The test runner links
 * the same functions and replays them silently against PyTorch goldens.
 */
#ifndef VIT_CHAPTERS_H
#define VIT_CHAPTERS_H

#include "teach/chapter.h"

/** @brief Chapter 01 · The dot product: similarity, angles, Q·Kᵀ. */
void chapter01_run(Chapter *ch);
/** @brief Chapter 02 · Scaling by 1/√Dh: why scores are divided before softmax. */
void chapter02_run(Chapter *ch);
/** @brief Chapter 03 · Softmax: stable evaluation, masking and temperature. */
void chapter03_run(Chapter *ch);

/** @brief Chapter 04 · Attention: one head, its attention matrix, masks. */
void chapter04_run(Chapter *ch);
/** @brief Chapter 05 · Multi-head attention: fused QKV, heads, merge, projection. */
void chapter05_run(Chapter *ch);
/** @brief Chapter 06 · Patch embedding: an image as 196 tokens, unfold + linear = convolution. */
void chapter06_run(Chapter *ch);
/** @brief Chapter 07 · The [cls] token and position embeddings; permutation symmetry. */
void chapter07_run(Chapter *ch);
/** @brief Chapter 08 · The encoder block: pre-norm attention and MLP on a residual stream. */
void chapter08_run(Chapter *ch);
/** @brief Chapter 09 · ViT-Base/16: the whole model, stage by stage. */
void chapter09_run(Chapter *ch);
/** @brief Chapter 10 · Learning by gradient: the loss, backpropagation checked, one AdamW step. */
void chapter10_run(Chapter *ch);
/** @brief Chapter 11 · Training a ViT: Fashion-MNIST, the loop, its curves, the trained model. */
void chapter11_run(Chapter *ch);
/** @brief Chapter 12 · What did it learn? Attention maps, rollout, and testing them. */
void chapter12_run(Chapter *ch);
/** @brief Chapter 13 · Attention at scale: O(N²), chunked and online softmax, sparse and linear attention. */
void chapter13_run(Chapter *ch);
/** @brief Chapter 14 · Making it fast: from the textbook loops to the fastest kernel, against the peak on paper. */
void chapter14_run(Chapter *ch);
/** @brief Chapter 15 · Smaller numbers: bf16 and int8 from the bits up, and what they cost the trained model. */
void chapter15_run(Chapter *ch);

/** @brief The peak on paper in GFLOP/s: cores × GHz × FMA units × SIMD lanes × 2. */
double ch14_theoretical_gflops(int cores, double ghz, int fma_units, int lanes);
/** @brief The first of @p n times over the smallest of all of them, the first included. */
double ch14_first_to_fastest(const double *seconds, int n);

#endif
