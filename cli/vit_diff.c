/**
 * @file vit_diff.c
 * @brief `vit diff`: two traces compared stage by stage; where is the first difference?
 *
 * The recipe: parse the flags → open both traces (st_open(): regular files
 * only) → tracediff_compare() (lib/explain/tracediff.h), which refuses traces that
 * cannot be compared → print the first difference and a summary.
 *
 * Exit status: 0 when every stage agrees, 1 when one differs (and for a file
 * that cannot be read or is not a trace), 2 for bad usage and for traces that
 * cannot be compared (other stages, other shapes, another batch): asking to
 * compare them is the mistake, as the issue that introduced the command
 * decided.
 */
#include <stdio.h>

#include "explain/tracediff.h"
#include "vit_cli.h"

/** The largest tolerance: the largest number vit_parse_float() takes. */
#define TOLERANCE_MAX 3.4e38

static const char description[] =
    "Compares two traces of a forward pass, as 'vit trace' writes them, stage by\n"
    "stage in forward order, and reports the first stage where they differ: its\n"
    "name and shape, how many of its elements differ, the worst element with its\n"
    "index and both values, and how many later stages differ too. Every stage\n"
    "after a mistake inherits it, so the first stage that differs is where to look.\n"
    "\n"
    "TRACE is the one under test, REFERENCE the one it should match. An element a\n"
    "of TRACE agrees with the element b of REFERENCE when\n"
    "  |a - b| <= ATOL + RTOL * |b|\n"
    "A NaN agrees only with a NaN, an infinity only with the same infinity. The\n"
    "defaults are ten times those of the test suites (which compare float32 with\n"
    "float64 references), because two float32 implementations each round, and\n"
    "the rounding grows through the blocks; a real mistake (a missing bias, a\n"
    "transposed weight) is off by about the size of the values themselves.\n"
    "\n"
    "Both traces must hold the same stages with the same shapes: traces of models\n"
    "of another depth or width, or of another batch, cannot be compared, and the\n"
    "message says which stage and which sizes differ.\n"
    "\n"
    "Exit status 0: every stage agrees (the largest differences are printed).\n"
    "1: a stage differs, or a file cannot be read or is not a trace. 2: bad usage,\n"
    "or traces that cannot be compared.\n";

static const char examples[] =
    "  vit trace --weights mine.safetensors cat.png --out mine-trace.safetensors\n"
    "  vit trace --weights ref.safetensors cat.png --out ref-trace.safetensors\n"
    "  vit diff mine-trace.safetensors ref-trace.safetensors\n"
    "  vit diff mine-trace.safetensors ref-trace.safetensors --atol 1e-3 --rtol 1e-2\n";

/**
 * @brief `vit diff`: parse → open both traces → compare → report.
 * @param[in] self        this command's row of the command table
 * @param[in] argc, argv  its command line, argv[0] = "diff"
 * @param[out] err        the message on failure, or the verdict when a stage differs
 * @return the exit status: VIT_OK (agree), VIT_ERR_INPUT (a stage differs, a bad file)
 *         or VIT_ERR_USAGE (bad usage, traces that cannot be compared)
 */
VitStatus cmd_diff(const VitCommand *self, int argc, char **argv, VitError *err) {
    float atol = TRACEDIFF_ATOL, rtol = TRACEDIFF_RTOL;
    const char *paths[2] = {NULL, NULL};
    // A tolerance is any finite number >= 0: a huge one (1e30) is an odd request
    // but a clear one. The bound is the parser's own (vit_parse_float() takes
    // numbers up to 3.4e38, just under the largest float, and calls the rest, with
    // infinity and NaN, "not a finite number"). A bound like 1e30 would refuse
    // "1e30" itself: the value is parsed into a float, and 1e30 as a float is
    // 1.0000000150e30.
    CliOption options[] = {
        {"--atol", CLI_FLOAT, &atol, "ATOL", "absolute tolerance, a finite number >= 0",
         .show_default = true, .lo = 0, .hi = TOLERANCE_MAX},
        {"--rtol", CLI_FLOAT, &rtol, "RTOL",
         "relative tolerance, times |REFERENCE|, a finite number >= 0", .show_default = true,
         .lo = 0, .hi = TOLERANCE_MAX},
    };
    CliSpec spec = {.command = self, .description = description, .examples = examples,
                    .options = options, .option_count = sizeof options / sizeof options[0],
                    .positional = "TRACE REFERENCE", .max_positional = 2, .positionals = paths};

    // 1. parse
    bool help;
    VitStatus s = cli_parse(&spec, argc, argv, &help, err);
    if (s != VIT_OK || help) return s;
    if (spec.positional_count != 2)
        return vit_fail(err, VIT_ERR_USAGE,
                        "'vit diff' needs two traces, TRACE and REFERENCE, got %d (see 'vit diff "
                        "--help')", spec.positional_count);

    // 2. open both; a file that cannot be read, or is not a trace, is bad input
    TraceFile trace, ref;
    if ((s = trace_file_open(&trace, paths[0], err)) != VIT_OK) return s;
    if ((s = trace_file_open(&ref, paths[1], err)) != VIT_OK) {
        trace_file_close(&trace);
        return s;
    }

    // 3. compare; traces that cannot be compared are a usage error
    TraceView a = trace_file_view(&trace), b = trace_file_view(&ref);
    TraceDiff d;
    s = tracediff_compare(&d, &a, &b, atol, rtol, err);
    if (s != VIT_OK) s = VIT_ERR_USAGE;

    // 4. the first difference (or the agreement) and the summary; names come escaped
    if (s == VIT_OK) {
        char report[2048], summary[1024];
        printf("%s\n", tracediff_report(report, sizeof report, &d, "\n  "));
        printf("summary: %s\n", tracediff_summary(summary, sizeof summary, &d));
        if (d.differ > 0)
            s = vit_fail(err, VIT_ERR_INPUT, "%s differs from %s, first at %s", paths[0],
                         paths[1], d.first.name);
    }
    trace_file_close(&ref);
    trace_file_close(&trace);
    return s;
}
