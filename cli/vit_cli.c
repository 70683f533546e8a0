/**
 * @file vit_cli.c
 * @brief The `vit` program's flag parser and help printer.
 *
 * Each subcommand describes its flags once, as a table of CliOption rows that
 * point at its own variables (see vit_cli.h). From that one table cli_parse()
 * reads argv and cli_print_help() writes the help page, usage line included.
 *
 * Accepted syntax: `--flag VALUE` or `--flag=VALUE`, in any order; a flag
 * given twice keeps its last value; `-h` or `--help` anywhere prints the help
 * and nothing else runs; `--` ends the flags. Everything that is wrong with a
 * command line is a usage error (exit status 2) whose message names the flag.
 */
#include "vit_cli.h"

#include "train/dataset.h"
#include "base/fileio.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---------------------------------------------------------------- parsing */

static CliOption *find_option(CliSpec *spec, const char *flag, size_t len) {
    for (int i = 0; i < spec->option_count; i++)
        if (strlen(spec->options[i].flag) == len && strncmp(spec->options[i].flag, flag, len) == 0)
            return &spec->options[i];
    return NULL;
}

static bool is_help(const char *arg) { return !strcmp(arg, "-h") || !strcmp(arg, "--help"); }

// Stores one flag's text value into its variable, checking kind and range.
static VitStatus set_value(CliOption *o, const char *text, VitError *err) {
    switch (o->kind) {
    case CLI_STRING:
        if (!*text)
            return vit_fail(err, VIT_ERR_USAGE, "%s: expected %s, got nothing", o->flag, o->metavar);
        *(const char **)o->value = text;
        return VIT_OK;
    case CLI_INT:
        return vit_parse_int(o->value, text, (int)o->lo, (int)o->hi, o->flag, err);
    case CLI_FLAG: *(bool *)o->value = true; return VIT_OK;
    case CLI_FLOAT: {
        float v;
        VitStatus s = vit_parse_float(&v, text, o->flag, err);
        if (s != VIT_OK) return s;
        // the bounds as floats too: "--label-smoothing 0.99" is read as the float
        // nearest 0.99, a little above the double 0.99, and must still be in range
        if (v < (float)o->lo || v > (float)o->hi)
            return vit_fail(err, VIT_ERR_USAGE, "%s: %g is out of range [%g, %g]", o->flag,
                            (double)v, o->lo, o->hi);
        *(float *)o->value = v;
        return VIT_OK;
    }
    }
    return VIT_OK;
}

static VitStatus usage_error(const CliSpec *spec, VitError *err, const char *what, const char *arg) {
    return vit_fail(err, VIT_ERR_USAGE, "%s '%s' for 'vit %s' (see 'vit %s --help')", what, arg,
                    spec->command->name, spec->command->name);
}

/**
 * @brief Fill a subcommand's variables from its command line.
 *
 * @param[in,out] spec        the flags; each given flag's variable is set and its `given` marked
 * @param[in] argc, argv      the command line, argv[0] being the subcommand's name
 * @param[out] help_shown     true when -h/--help was asked for: the help went to stdout and
 *                            the command should stop, successfully
 * @param[out] err            the message on failure
 * @return VIT_OK, or VIT_ERR_USAGE naming the flag (unknown, missing, missing value, bad number).
 */
VitStatus cli_parse(CliSpec *spec, int argc, char **argv, bool *help_shown, VitError *err) {
    *help_shown = false;
    // help wins over everything else on the line, even over mistakes before it
    for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++)
        if (is_help(argv[i])) {
            cli_print_help(stdout, spec);
            *help_shown = true;
            return VIT_OK;
        }
    spec->positional_count = 0;
    bool flags_done = false;
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (!flags_done && !strcmp(arg, "--")) {
            flags_done = true;
            continue;
        }
        if (flags_done || arg[0] != '-' || arg[1] == '\0') { // a positional argument
            if (spec->positional_count >= spec->max_positional)
                return usage_error(spec, err, "unexpected argument", arg);
            spec->positionals[spec->positional_count++] = arg;
            continue;
        }
        const char *eq = strchr(arg, '=');
        CliOption *o = find_option(spec, arg, eq ? (size_t)(eq - arg) : strlen(arg));
        if (!o) return usage_error(spec, err, "unknown option", arg);
        if (o->kind == CLI_FLAG) { // a switch: its presence is its value
            if (eq) return vit_fail(err, VIT_ERR_USAGE, "%s takes no value", o->flag);
            *(bool *)o->value = true;
            o->given = true;
            continue;
        }
        const char *value = eq ? eq + 1 : (i + 1 < argc ? argv[i + 1] : NULL);
        if (!eq) {
            // "--weights --out x": the next word is a flag, not this flag's value
            if (!value || (value[0] == '-' && value[1] == '-'))
                return vit_fail(err, VIT_ERR_USAGE, "%s needs a value (%s)", o->flag, o->metavar);
            i++;
        }
        VitStatus s = set_value(o, value, err);
        if (s != VIT_OK) return s;
        o->given = true;
    }
    for (int i = 0; i < spec->option_count; i++) {
        const CliOption *o = &spec->options[i];
        if (o->required && !o->given)
            return vit_fail(err, VIT_ERR_USAGE, "'vit %s' needs %s %s (see 'vit %s --help')",
                            spec->command->name, o->flag, o->metavar, spec->command->name);
    }
    return VIT_OK;
}

/**
 * @brief true when @p flag appeared on the command line cli_parse() read.
 * @param[in] spec  the parsed command line
 * @param[in] flag  e.g. "--threads"
 */
bool cli_given(const CliSpec *spec, const char *flag) {
    for (int i = 0; i < spec->option_count; i++)
        if (!strcmp(spec->options[i].flag, flag)) return spec->options[i].given;
    return false;
}

/**
 * @brief Use @p threads threads if `--threads` was given; otherwise leave OpenMP's default
 *        (the OMP_NUM_THREADS environment variable, else every core).
 * @param[in] spec     the parsed command line
 * @param[in] threads  the value of --threads
 */
void cli_apply_threads(const CliSpec *spec, int threads) {
    if (cli_given(spec, "--threads")) vit_set_threads(threads);
}

/**
 * @brief The precision --precision names.
 * @param[out] p     LOWP_FP32 when @p name is NULL (the flag not given)
 * @param[in]  name  "fp32", "bf16", "int8", or NULL
 * @return VIT_ERR_USAGE naming the three for anything else
 */
VitStatus cli_precision(LowpPrecision *p, const char *name, VitError *err) {
    *p = LOWP_FP32;
    if (!name || lowp_precision_parse(name, p)) return VIT_OK;
    char shown[64];
    return vit_fail(err, VIT_ERR_USAGE, "--precision: '%s' is not fp32, bf16 or int8",
                    vit_escape(shown, sizeof shown, name));
}

/**
 * @brief Run @p vit's Linear layers in the precision --precision names (vit_set_precision()).
 * @param[in] name  "fp32", "bf16", "int8", or NULL: as the weights file has them (int8
 *                  for a file `vit quantize` wrote, else fp32), nothing changed
 */
VitStatus cli_set_precision(Vit *vit, const char *name, VitError *err) {
    if (!name) return VIT_OK;
    LowpPrecision p;
    VitStatus s = cli_precision(&p, name, err);
    return s == VIT_OK ? vit_set_precision(vit, p, err) : s;
}

/* ------------------------------------------------------------------ files */

/**
 * @brief Refuse an output that is the same file as one of the command's inputs.
 *
 * Run before any work, so `--out` given the weights' path is a message at
 * once, not a destroyed checkpoint after the computation (fileio.h).
 * @param[in] out, out_role  the output's path (NULL: none) and its flag, e.g. "--trace"
 * @param[in] inputs, n      the files the command reads
 * @param[out] err           names both roles and both paths
 * @return VIT_OK, or VIT_ERR_INPUT.
 */
VitStatus cli_check_output(const char *out, const char *out_role, const CliInput *inputs, int n,
                           VitError *err) {
    for (int i = 0; out && i < n; i++) {
        VitStatus s = file_check_not_input(out, out_role, inputs[i].path, inputs[i].role, err);
        if (s != VIT_OK) return s;
    }
    return VIT_OK;
}

/**
 * @brief Refuse two outputs of one command that are one file (the same path
 *        spelled two ways, a link to the other, a hard link): the second
 *        written would replace the first (fileio.h, file_same()).
 * @param[in] outputs, n  the files the command writes; a NULL path is skipped
 * @param[out] err        names both flags and both paths
 * @return VIT_OK, or VIT_ERR_USAGE.
 */
VitStatus cli_check_distinct_outputs(const CliInput *outputs, int n, VitError *err) {
    return file_check_distinct(outputs, n, err);
}

/**
 * @brief The folder `--data` names: "fashion-mnist" is Debian's
 *        (FASHION_MNIST_DIR); anything else is a folder holding the same files.
 */
const char *cli_data_dir(const char *data) {
    return strcmp(data, "fashion-mnist") == 0 ? FASHION_MNIST_DIR : data;
}

/**
 * @brief Put the data's folder in front of a message about its contents:
 *        "the training set has 320 images: …" → "DIR: the training set has …".
 */
void cli_name_the_folder(VitError *err, const char *dir) {
    char shown[512], msg[sizeof err->msg];
    snprintf(msg, sizeof msg, "%s", err->msg);
    (void)vit_fail(err, VIT_ERR_INPUT, "%s: %s", vit_escape(shown, sizeof shown, dir), msg);
}

/* ------------------------------------------------------------------- help */

enum { HELP_WIDTH = 80 };

// Appends one word to the usage line, starting a new indented line when it would pass HELP_WIDTH.
static void usage_word(FILE *f, int *col, int indent, const char *word) {
    int len = (int)strlen(word);
    if (*col + 1 + len > HELP_WIDTH) {
        fprintf(f, "\n%*s", indent, "");
        *col = indent;
    }
    fprintf(f, " %s", word);
    *col += 1 + len;
}

// "usage: vit trace --weights FILE ... [--threads N]": required flags first, then
// optional ones in brackets, then positional arguments.
static void print_usage(FILE *f, const CliSpec *spec) {
    int indent = fprintf(f, "usage: vit %s", spec->command->name), col = indent;
    char word[128];
    for (int required = 1; required >= 0; required--)
        for (int i = 0; i < spec->option_count; i++) {
            const CliOption *o = &spec->options[i];
            if (o->required != required) continue;
            const char *space = o->metavar[0] ? " " : "";
            snprintf(word, sizeof word, required ? "%s%s%s" : "[%s%s%s]", o->flag, space,
                     o->metavar);
            usage_word(f, &col, indent, word);
        }
    if (spec->positional) usage_word(f, &col, indent, spec->positional);
    fputc('\n', f);
}

// Writes text to f, wrapped at `width` columns, continuation lines indented by `indent`.
static void print_wrapped(FILE *f, const char *text, int col, int indent, int width) {
    while (*text) {
        while (*text == ' ') text++;
        int len = (int)strcspn(text, " ");
        if (col > indent && col + 1 + len > width) {
            fprintf(f, "\n%*s", indent, "");
            col = indent;
        } else if (col > indent) {
            fputc(' ', f);
            col++;
        }
        fprintf(f, "%.*s", len, text);
        col += len;
        text += len;
    }
    fputc('\n', f);
}

static void print_option(FILE *f, const CliOption *o, int column) {
    char head[96], help[512];
    snprintf(head, sizeof head, "  %s%s%s", o->flag, o->metavar[0] ? " " : "", o->metavar);
    size_t used = (size_t)snprintf(help, sizeof help, "%s", o->help);
    if (o->required && used < sizeof help) snprintf(help + used, sizeof help - used, " (required)");
    else if (o->show_default && o->kind == CLI_INT && used < sizeof help)
        snprintf(help + used, sizeof help - used, " (default %d)", *(const int *)o->value);
    else if (o->show_default && o->kind == CLI_FLOAT && used < sizeof help)
        snprintf(help + used, sizeof help - used, " (default %g)", (double)*(const float *)o->value);
    fprintf(f, "%-*s", column, head);
    print_wrapped(f, help, column, column, HELP_WIDTH);
}

/**
 * @brief Write a subcommand's help page: summary, usage, description, flags, examples,
 *        exit statuses. The flags' lines come from the same table cli_parse() reads.
 * @param[out] f     where to write (stdout for --help)
 * @param[in] spec   the subcommand
 */
void cli_print_help(FILE *f, const CliSpec *spec) {
    fprintf(f, "vit %s: %s\n\n", spec->command->name, spec->command->summary);
    print_usage(f, spec);
    if (spec->description) fprintf(f, "\n%s", spec->description);
    // the flag column is as wide as the widest "  --flag VALUE", plus two spaces
    int column = (int)strlen("  -h, --help") + 2;
    for (int i = 0; i < spec->option_count; i++) {
        int w = (int)(strlen(spec->options[i].flag) + strlen(spec->options[i].metavar)) + 3 + 2;
        if (w > column) column = w;
    }
    fprintf(f, "\noptions:\n");
    for (int i = 0; i < spec->option_count; i++) print_option(f, &spec->options[i], column);
    fprintf(f, "%-*s%s\n", column, "  -h, --help", "show this help and exit");
    if (spec->more_help) {
        fputc('\n', f);
        spec->more_help(f);
    }
    if (spec->examples) fprintf(f, "\nexamples:\n%s", spec->examples);
    fprintf(f, "\n%s", CLI_EXIT_HELP);
}

