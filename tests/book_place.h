/**
 * @file book_place.h
 * @brief Where each test suite sits in the book: its chapter and its stage,
 *        read from the one table of them, book_order.h.
 *
 * The runner registers the suites in that table's order, so it runs them and
 * prints their reports in the book's order; at the end of a run it names the
 * failing stages in the same order (run_suites.h), and `--up-to NN` keeps the
 * stages down to chapter NN's (book_up_to()).
 */
#ifndef TESTS_BOOK_PLACE_H
#define TESTS_BOOK_PLACE_H

#include <stdbool.h>

/** One row of book_order.h. */
typedef struct {
    const char *suite; ///< the suite's name, e.g. "ch05_multi_head"
    int chapter;       ///< 1 to 14, or 0: no chapter's (lib's base, the programs)
    const char *stage; ///< e.g. "multi-head attention"
} BookPlace;

/** @brief The row of a suite; NULL for a suite the table does not have. */
const BookPlace *book_place(const char *suite);

/** @brief Is this row in the same stage as that one (the same chapter and stage name)? */
bool book_same_stage(const BookPlace *a, const BookPlace *b);

/**
 * @brief The chapter a learner names: "5", "05", "05_multi_head" or
 *        "multi_head", as `make exercise CH=...` reads it (a chapter's suite is
 *        chNN_name). Returns 1 to 14, or 0 when @p text names no chapter.
 */
int book_chapter_named(const char *text);

/**
 * @brief Is this suite's row at or above chapter @p chapter's last row? Those
 *        are the suites `--up-to` keeps: lib's base, chapters 01 to @p chapter
 *        and the lib suites each teaches, but nothing of the later chapters,
 *        of lib's parts no chapter teaches, nor of the programs.
 */
bool book_up_to(const char *suite, int chapter);

/** @brief The last chapter that has a stage: 14. */
int book_chapters(void);

/** @brief The chapter's stage name, e.g. "multi-head attention" for 5; NULL if none. */
const char *book_chapter_stage(int chapter);

#endif
