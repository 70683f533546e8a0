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

#include "chapter.h"

/** @brief Chapter 01 · The dot product: similarity, angles, Q·Kᵀ. */
void chapter01_run(Chapter *ch);
/** @brief Chapter 02 · Scaling by 1/√d: why scores are divided before softmax. */
void chapter02_run(Chapter *ch);
/** @brief Chapter 03 · Softmax: stable evaluation, masking and temperature. */
void chapter03_run(Chapter *ch);

#endif
