/**
 * @file test_viewer_complete.c
 * @brief Tab completion of stage names (viewer/complete.h) over a forward and
 *        a backward pass of 2 blocks (and 12, for "blocks.1" against "blocks.10").
 */
#include <CUnit/CUnit.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "../viewer/complete.h"

typedef struct {
    Stepper f, b;
} Passes;

static Passes passes(int depth) {
    Passes p;
    stepper_init(&p.f, depth);
    stepper_init_backward(&p.b, &p.f);
    return p;
}

static void passes_free(Passes *p) {
    stepper_free(&p->f);
    stepper_free(&p->b);
}

// Completes @p typed; checks the count, the completed text and the list.
static void expect(const Passes *p, const char *typed, int count, const char *out,
                   const char *list) {
    char got[64], got_list[512];
    const int n = complete_stage(&p->f, &p->b, typed, got, sizeof got, got_list, sizeof got_list);
    if (n != count || strcmp(got, out) != 0 || (list && strcmp(got_list, list) != 0))
        fprintf(stderr, "\n    '%s': %d matches, '%s', list '%s'\n", typed, n, got, got_list);
    CU_ASSERT_EQUAL(n, count);
    CU_ASSERT_STRING_EQUAL(got, out);
    if (list) CU_ASSERT_STRING_EQUAL(got_list, list);
}

static void test_a_prefix_grows_to_what_the_matches_share(void) {
    Passes p = passes(2);
    expect(&p, "blocks.1.attn.s", 2, "blocks.1.attn.sc",
           "blocks.1.attn.scaled  blocks.1.attn.scores");
    expect(&p, "blocks.1.attn.pro", 2, "blocks.1.attn.pro",
           "blocks.1.attn.probs  blocks.1.attn.proj");
    expect(&p, "inp", 1, "input", "input");
    expect(&p, "grad.blocks.0.o", 1, "grad.blocks.0.out", "grad.blocks.0.out");
    expect(&p, "pat", 2, "patch", "patch_embed  patches"); // the viewer's own stage too
    expect(&p, "grad.pat", 1, "grad.patch_embed", NULL); // … which has no gradient
    expect(&p, "blocks.0.attn.q", 1, "blocks.0.attn.q", NULL); // complete already
    passes_free(&p);
}

// "attn.probs" sets a breakpoint on every block: the short names complete too, once each.
static void test_block_stages_without_their_block(void) {
    Passes p = passes(2);
    expect(&p, "attn.p", 2, "attn.pro", "attn.probs  attn.proj");
    expect(&p, "grad.attn.p", 2, "grad.attn.pro", "grad.attn.probs  grad.attn.proj");
    expect(&p, "mlp.", 3, "mlp.", "mlp.fc1  mlp.fc2  mlp.gelu");
    expect(&p, "norm", 3, "norm", "norm  norm1  norm2"); // the final LayerNorm and both blocks'
    passes_free(&p);
}

static void test_nothing_matches(void) {
    Passes p = passes(2);
    expect(&p, "zzz", 0, "zzz", "");
    expect(&p, "Input", 0, "Input", ""); // names are lower case, matched as they are
    expect(&p, "blocks.2.", 0, "blocks.2.", ""); // no third block
    passes_free(&p);
}

static void test_empty_prefix_lists_every_name(void) {
    Passes p = passes(2);
    // 8 + 15·2 forward nodes ("patches" among them), the same less "patches"
    // backward, and the 15 block stages on their own, plain and with "grad."
    CU_ASSERT_EQUAL(p.f.count, 38);
    CU_ASSERT_EQUAL(p.b.count, 37);
    const int all = 38 + 37 + 15 + 15;
    char out[64], list[8192];
    CU_ASSERT_EQUAL(complete_stage(&p.f, &p.b, "", out, sizeof out, list, sizeof list), all);
    CU_ASSERT_STRING_EQUAL(out, "");
    // sorted as strcmp sorts: "attn.context" first, "tokens" last
    const char *first = "attn.context  attn.k  attn.probs  attn.proj  attn.q  ";
    CU_ASSERT_EQUAL(strncmp(list, first, strlen(first)), 0);
    const char *last = strrchr(list, ' ');
    CU_ASSERT_PTR_NOT_NULL_FATAL(last);
    CU_ASSERT_STRING_EQUAL(last, " tokens");
    int separators = 0;
    for (const char *c = list; (c = strstr(c, "  ")) != NULL; c += 2) separators++;
    CU_ASSERT_EQUAL(separators, all - 1); // each name once
    CU_ASSERT_PTR_NULL(strstr(list, "…"));
    // only the forward pass: no "grad." names at all
    CU_ASSERT_EQUAL(complete_stage(&p.f, NULL, "", out, sizeof out, NULL, 0), 38 + 15);
    CU_ASSERT_EQUAL(complete_stage(&p.f, NULL, "grad.", out, sizeof out, NULL, 0), 0);
    passes_free(&p);
}

static void test_a_short_list_is_cut_at_a_name(void) {
    Passes p = passes(2);
    char out[64], list[32];
    // 31 bytes of room, 4 of them kept for " …": a third name would end at byte 32
    CU_ASSERT_EQUAL(complete_stage(&p.f, &p.b, "attn.", out, sizeof out, list, sizeof list), 8);
    CU_ASSERT_STRING_EQUAL(out, "attn.");
    CU_ASSERT_STRING_EQUAL(list, "attn.context  attn.k …");
    char tiny[4]; // no room even for " …": empty, never overrun
    CU_ASSERT_EQUAL(complete_stage(&p.f, &p.b, "attn.", out, sizeof out, tiny, sizeof tiny), 8);
    CU_ASSERT_STRING_EQUAL(tiny, "");
    char exact[sizeof "attn.probs  attn.proj"]; // exactly enough: all of it, no " …"
    CU_ASSERT_EQUAL(complete_stage(&p.f, &p.b, "attn.p", out, sizeof out, exact, sizeof exact), 2);
    CU_ASSERT_STRING_EQUAL(exact, "attn.probs  attn.proj");
    char short_out[6]; // the completion is cut to its buffer too
    CU_ASSERT_EQUAL(complete_stage(&p.f, &p.b, "inp", short_out, sizeof short_out, NULL, 0), 1);
    CU_ASSERT_STRING_EQUAL(short_out, "input");
    char shorter[4];
    CU_ASSERT_EQUAL(complete_stage(&p.f, &p.b, "inp", shorter, sizeof shorter, NULL, 0), 1);
    CU_ASSERT_STRING_EQUAL(shorter, "inp");
    passes_free(&p);
}

// With 12 blocks "blocks.1" also starts blocks.10 and blocks.11: it cannot grow.
static void test_block_numbers_share_digits(void) {
    Passes p = passes(12);
    char out[64], list[4096];
    CU_ASSERT_EQUAL(complete_stage(&p.f, &p.b, "blocks.1", out, sizeof out, list, sizeof list),
                    3 * 15);
    CU_ASSERT_STRING_EQUAL(out, "blocks.1");
    CU_ASSERT_PTR_NOT_NULL(strstr(list, "blocks.1.attn.probs"));
    CU_ASSERT_PTR_NOT_NULL(strstr(list, "blocks.10.mlp.fc1"));
    CU_ASSERT_PTR_NOT_NULL(strstr(list, "blocks.11.out"));
    CU_ASSERT_PTR_NULL(strstr(list, "blocks.2"));
    CU_ASSERT_EQUAL(strncmp(list, "blocks.1.attn.context  ", 23), 0);
    // "blocks.1." is block 1 alone
    CU_ASSERT_EQUAL(complete_stage(&p.f, &p.b, "blocks.1.", out, sizeof out, NULL, 0), 15);
    CU_ASSERT_EQUAL(complete_stage(&p.f, &p.b, "blocks.11.m", out, sizeof out, NULL, 0), 3);
    CU_ASSERT_STRING_EQUAL(out, "blocks.11.mlp.");
    passes_free(&p);
}

CU_TestInfo tests_viewer_complete[] = {
    {"a prefix grows to what the matches share", test_a_prefix_grows_to_what_the_matches_share},
    {"block stages without their block", test_block_stages_without_their_block},
    {"nothing matches", test_nothing_matches},
    {"empty prefix lists every name", test_empty_prefix_lists_every_name},
    {"a short list is cut at a name", test_a_short_list_is_cut_at_a_name},
    {"block numbers share digits", test_block_numbers_share_digits},
    CU_TEST_INFO_NULL,
};
