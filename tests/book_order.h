/*
 * The test suites in the book's order: the one table of them. (No include
 * guard: it is a list that each includer expands with its own BOOK_SUITE.)
 *
 *   BOOK_SUITE(suite, chapter, stage)
 *
 * suite   the suite's name: tests/test_<suite>.c defines CU_TestInfo tests_<suite>[]
 * chapter the chapter whose stage it checks, 1 to 15, or 0 for none
 * stage   a short name of that stage, printed when one of its tests fails
 *
 * The runner runs the suites, and prints their reports, in this order: lib's
 * base operations first, then each chapter's stage (its own suite, then the
 * lib suites of what that chapter teaches), then lib's parts no chapter teaches,
 * then the programs. So the first failing stage a run prints is the earliest
 * stage of the book that is wrong, where a learner should start reading.
 * `build/tests/run --up-to NN` runs the rows down to chapter NN's last one.
 *
 * The rows of one stage stay together, and the chapters go up. A new
 * tests/test_<suite>.c needs its row here: the Makefile stops, naming it,
 * while it has none (and while a row names a suite that has no file).
 */

/* What every chapter computes with: tensors, random numbers, files, the
   operations and the matrix product. */
BOOK_SUITE(tensor,              0,  "base operations")
BOOK_SUITE(rng,                 0,  "base operations")
BOOK_SUITE(fileio,              0,  "base operations")
BOOK_SUITE(ops,                 0,  "base operations")
BOOK_SUITE(gemm,                0,  "base operations")

/* The chapters, each with the lib suites of what it teaches. */
BOOK_SUITE(ch01_dot_product,    1,  "the dot product")
BOOK_SUITE(dot,                 1,  "the dot product")
BOOK_SUITE(ch02_scaling,        2,  "scaling by 1/sqrt(Dh)")
BOOK_SUITE(ch03_softmax,        3,  "softmax")
BOOK_SUITE(softmax,             3,  "softmax")
BOOK_SUITE(ch04_attention,      4,  "one attention head")
BOOK_SUITE(attention,           4,  "one attention head")
BOOK_SUITE(ch05_multi_head,     5,  "multi-head attention")
BOOK_SUITE(mha,                 5,  "multi-head attention")
BOOK_SUITE(ch06_patch_embedding, 6, "patch embedding")
BOOK_SUITE(patch,               6,  "patch embedding")
BOOK_SUITE(image,               6,  "patch embedding")
BOOK_SUITE(ch07_tokens,         7,  "[cls] token and positions")
BOOK_SUITE(ch08_encoder_block,  8,  "the encoder block")
BOOK_SUITE(layernorm,           8,  "the encoder block")
BOOK_SUITE(gelu,                8,  "the encoder block")
BOOK_SUITE(ch09_vit_base,       9,  "the whole forward pass")
BOOK_SUITE(vit,                 9,  "the whole forward pass")
BOOK_SUITE(stages,              9,  "the whole forward pass")
BOOK_SUITE(params,              9,  "the whole forward pass")
BOOK_SUITE(diff,                9,  "the whole forward pass")
BOOK_SUITE(safetensors,         9,  "the whole forward pass")
BOOK_SUITE(weights,             9,  "the whole forward pass")
BOOK_SUITE(hf_config,           9,  "the whole forward pass")
BOOK_SUITE(torchvision,         9,  "the whole forward pass")
BOOK_SUITE(ch10_learning,       10, "the backward pass")
BOOK_SUITE(backward,            10, "the backward pass")
BOOK_SUITE(vit_backward,        10, "the backward pass")
BOOK_SUITE(ch11_training,       11, "training")
BOOK_SUITE(optim,               11, "training")
BOOK_SUITE(idx,                 11, "training")
BOOK_SUITE(dataset,             11, "training")
BOOK_SUITE(train,               11, "training")
BOOK_SUITE(cnn,                 11, "training")
BOOK_SUITE(film,                11, "training")
BOOK_SUITE(ch12_attention_maps, 12, "attention maps")
BOOK_SUITE(rollout,             12, "attention maps")
BOOK_SUITE(ch13_attention_at_scale, 13, "attention at scale")
BOOK_SUITE(attention_online,    13, "attention at scale")
BOOK_SUITE(attention_approx,    13, "attention at scale")
BOOK_SUITE(attention_distance,  13, "attention at scale")
BOOK_SUITE(attention_floors,    13, "attention at scale")
BOOK_SUITE(resample,            13, "attention at scale")
BOOK_SUITE(ch14_making_it_fast, 14, "making it fast")
BOOK_SUITE(gemm_choice,         14, "making it fast")
/* Chapter 15, then its kernels (the int8 and bf16 products), the model's
   Linear layers in those numbers, and the quantized weights file. */
BOOK_SUITE(ch15_smaller_numbers, 15, "smaller numbers")
BOOK_SUITE(gemm_lowp,           15, "smaller numbers")
BOOK_SUITE(precision,           15, "smaller numbers")
BOOK_SUITE(quantize,            15, "smaller numbers")

/* lib's parts that no chapter teaches: a training run's records, and the
   tools that ask what the model learned. */
BOOK_SUITE(train_run,           0,  "training runs")
BOOK_SUITE(step_view,           0,  "training runs")
BOOK_SUITE(head_off,            0,  "what the model learned")
BOOK_SUITE(head_importance,     0,  "what the model learned")
BOOK_SUITE(head_fingerprints,   0,  "what the model learned")
BOOK_SUITE(lens,                0,  "what the model learned")
BOOK_SUITE(occlusion,           0,  "what the model learned")
BOOK_SUITE(patching,            0,  "what the model learned")
BOOK_SUITE(position_similarity, 0,  "what the model learned")
BOOK_SUITE(score_parts,         0,  "what the model learned")

/* The programs: `vit`, then the viewer, then both against a hostile user,
   then the tests' own tools (the hints, the grader's verdicts, this runner). */
BOOK_SUITE(cli,                 0,  "the vit command")
BOOK_SUITE(classify,            0,  "the vit command")
BOOK_SUITE(attention_cli,       0,  "the vit command")
BOOK_SUITE(eval_cli,            0,  "the vit command")
BOOK_SUITE(grad_cli,            0,  "the vit command")
BOOK_SUITE(train_cli,           0,  "the vit command")
BOOK_SUITE(train_hostile,       0,  "the vit command")
BOOK_SUITE(viewer_layout,       0,  "the viewer")
BOOK_SUITE(viewer_heatmap,      0,  "the viewer")
BOOK_SUITE(viewer_render,       0,  "the viewer")
BOOK_SUITE(viewer_views,        0,  "the viewer")
BOOK_SUITE(viewer_stepper,      0,  "the viewer")
BOOK_SUITE(viewer_complete,     0,  "the viewer")
BOOK_SUITE(viewer_defaults,     0,  "the viewer")
BOOK_SUITE(viewer_export,       0,  "the viewer")
BOOK_SUITE(viewer_frames,       0,  "the viewer")
BOOK_SUITE(viewer_importance,   0,  "the viewer")
BOOK_SUITE(viewer_train,        0,  "the viewer")
BOOK_SUITE(viewer_whatif,       0,  "the viewer")
BOOK_SUITE(robust,              0,  "whole programs")
BOOK_SUITE(check_diagnose,      0,  "the tests' own tools")
BOOK_SUITE(hints,               0,  "the tests' own tools")
BOOK_SUITE(verdict,             0,  "the tests' own tools")
BOOK_SUITE(runner,              0,  "the tests' own tools")
