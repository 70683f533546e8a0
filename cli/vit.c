/**
 * @file vit.c
 * @brief `vit`: the Vision Transformer from the command line.
 *
 *     vit make-weights --arch vit-tiny --seed 1 --out tiny.safetensors
 *     vit info --weights tiny.safetensors
 *     vit trace --weights tiny.safetensors --input x.safetensors --out trace.safetensors
 *     vit classify --weights tiny.safetensors photo.jpg --top 5
 *     vit grad --weights tiny.safetensors photo.jpg --target 3 --out grads.safetensors
 *     vit step --weights tiny.safetensors photo.jpg --target 3 --steps 10
 *     vit train --epochs 2 --limit 5000 --out quick.safetensors
 *     vit eval --weights quick.safetensors --split val
 *     vit attention --weights quick.safetensors shirt.png --out rollout.png
 *     vit lens --weights quick.safetensors shirt.png
 *     vit heads --weights quick.safetensors shirt.png
 *     vit occlusion --weights quick.safetensors shirt.png
 *     vit score --weights quick.safetensors shirt.png --layer 0 --head 0 --query 0 --key 1
 *     vit fingerprints --weights quick.safetensors shirt.png
 *     vit positions --weights quick.safetensors --row 3 --col 3
 *     vit patch --weights quick.safetensors boot.png sneaker.png
 *
 * main() only finds the subcommand in a table and runs it; each subcommand
 * lives in its own file (vit_make_weights.c, vit_classify.c, vit_trace.c,
 * vit_info.c, vit_diff.c, vit_grad.c, vit_step.c, vit_train.c, vit_eval.c,
 * vit_attention.c, vit_lens.c, vit_heads.c, vit_occlusion.c, vit_score.c,
 * vit_fingerprints.c, vit_positions.c, vit_patch.c) and is itself a recipe:
 * parse the flags → build the model → run → write.
 * A new subcommand is one file and one row of `commands`.
 *
 * Errors are one line on stderr, `vit: <message>`, and the exit status says
 * whose fault it was: 0 ok, 1 bad input, 2 bad usage (util.h).
 */
#include <stdio.h>
#include <string.h>

#include "base/fileio.h"
#include "vit_cli.h"

static VitStatus cmd_help(const VitCommand *self, int argc, char **argv, VitError *err);

/** Every subcommand: what the user types, the function that runs it, one line of help. */
static const VitCommand commands[] = {
    {"make-weights", cmd_make_weights, "write a ViT with random weights (one truncated normal, std 0.02)"},
    {"classify", cmd_classify, "name what is in images: the top classes with probabilities"},
    {"trace", cmd_trace, "run a forward pass and save every intermediate tensor to a file"},
    {"info", cmd_info, "show the configuration in a weights file and how it was loaded"},
    {"diff", cmd_diff, "compare two traces stage by stage: the first stage that differs"},
    {"grad", cmd_grad, "run forward and backward on a batch: save the loss and every gradient"},
    {"step", cmd_step, "train on one batch for N AdamW steps, printing the loss of each"},
    {"train", cmd_train, "train a ViT on Fashion-MNIST: epochs, validation, checkpoints, resume"},
    {"eval", cmd_eval, "accuracy, per-class scores and confusion matrix on Fashion-MNIST"},
    {"quantize", cmd_quantize, "write a weights file with its Linear weights in int8 (about 1/4 the size)"},
    {"attention", cmd_attention, "where the model looks: attention rollout or a layer's map, as a PNG"},
    {"lens", cmd_lens, "the logit lens: the model's answer read after every block"},
    {"heads", cmd_heads, "which attention heads the prediction needs: each switched off in turn"},
    {"occlusion", cmd_occlusion, "each patch blacked out in turn, beside the attention maps"},
    {"score", cmd_score, "one attention score taken apart: q⊙k, sum, scale, softmax"},
    {"fingerprints", cmd_fingerprints, "each head's attention distance, entropy and share on [cls]"},
    {"positions", cmd_positions, "one patch position's embedding against every other's, on the grid"},
    {"patch", cmd_patch, "activation patching: one token of picture B's stream put into A's pass"},
    {"help", cmd_help, "show the help of a command: vit help trace"},
};
enum { COMMAND_COUNT = sizeof commands / sizeof commands[0] };

static const VitCommand *find_command(const char *name) {
    for (int i = 0; i < COMMAND_COUNT; i++)
        if (strcmp(commands[i].name, name) == 0) return &commands[i];
    return NULL;
}

static void print_usage(FILE *f) {
    fprintf(f, "usage: vit COMMAND [OPTIONS]\n"
               "       vit COMMAND --help   the help of one command, with an example\n"
               "       vit --help           an overview\n"
               "\ncommands:\n");
    for (int i = 0; i < COMMAND_COUNT; i++)
        fprintf(f, "  %-14s%s\n", commands[i].name, commands[i].summary);
}

static void print_help(FILE *f) {
    fprintf(f, "vit: a Vision Transformer (ViT) in plain C, from the command line.\n\n");
    print_usage(f);
    fprintf(f,
            "\n"
            "A first session, on a small random model (its predictions mean nothing, but\n"
            "every number in it is reproducible and can be compared with PyTorch):\n"
            "\n"
            "  vit make-weights --arch vit-tiny --seed 1 --out tiny.safetensors\n"
            "  vit info --weights tiny.safetensors\n"
            "  vit trace --weights tiny.safetensors --input x.safetensors \\\n"
            "            --out trace.safetensors\n"
            "\n"
            "where x.safetensors holds the images as a tensor named 'input' of shape\n"
            "(B, 3, 224, 224) (see vit trace --help). Weights from timm, Hugging Face or\n"
            "torchvision work too.\n"
            "\n%s", CLI_EXIT_HELP);
}

// `vit help [COMMAND]`: the same as `vit COMMAND --help`, or `vit --help`.
static VitStatus cmd_help(const VitCommand *self, int argc, char **argv, VitError *err) {
    if (argc < 2) {
        print_help(stdout);
        return VIT_OK;
    }
    if (argc > 2)
        return vit_fail(err, VIT_ERR_USAGE, "'vit help' takes one command name, got %d", argc - 1);
    const VitCommand *cmd = find_command(argv[1]);
    if (!cmd)
        return vit_fail(err, VIT_ERR_USAGE, "unknown command '%s' (try 'vit --help')", argv[1]);
    if (cmd == self) return cmd_help(self, 1, argv, err); // `vit help help`: the overview
    char *help_argv[] = {argv[1], "--help", NULL};
    return cmd->run(cmd, 2, help_argv, err);
}

int main(int argc, char **argv) {
    // 1. which command?
    if (argc < 2) {
        print_usage(stderr);
        return VIT_ERR_USAGE;
    }
    if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
        print_help(stdout);
        return VIT_OK;
    }
    const VitCommand *cmd = find_command(argv[1]);
    VitError err = {{0}};
    if (!cmd) {
        vit_fail(&err, VIT_ERR_USAGE, "unknown command '%s' (try 'vit --help')", argv[1]);
        vit_print_error("vit", &err);
        return VIT_ERR_USAGE;
    }
    // 2. run it: it parses its flags, builds, runs and writes. A weights file cut
    // short by another process while mapped is a message, not "Bus error".
    file_guard_mapped("vit", NULL);
    VitStatus status = cmd->run(cmd, argc - 1, argv + 1, &err);
    // 3. one line for whatever went wrong
    if (status != VIT_OK) vit_print_error("vit", &err); // escaped: it may quote a file's bytes
    return (int)status;
}
