/**
 * @file vit_make_weights.c
 * @brief `vit make-weights`: a ViT with random parameters, each weight from one truncated normal.
 *
 * The recipe: parse the flags → turn them into a VitConfig (a named
 * architecture, then any sizes given on top) → vit_build_random() →
 * vit_save() (atomic: a temporary file renamed into place when complete).
 */
#include <stdio.h>

#include "model/vit.h"
#include "vit_cli.h"

/** Everything the command line can say. Sizes left at 0 come from --arch. */
typedef struct {
    const char *arch;  // "vit-base", …, or NULL
    int dim, depth, heads, mlp_dim, image_size, patch_size, channels, classes;
    int seed;
    float std, bias_std, norm_std;
    const char *out;
    int threads;
} MakeWeightsArgs;

static const char description[] =
    "Writes a Vision Transformer whose parameters are freshly drawn random numbers,\n"
    "by one rule: a truncated normal (std 0.02, cut at ±2) for every weight (the\n"
    "patch projection, every linear layer, the [cls] token and the position\n"
    "embeddings); zeros for biases; LayerNorm scale 1 and shift 0. (timm differs in\n"
    "two places: it draws cls_token with std 1e-6 and leaves the patch convolution\n"
    "at PyTorch's default. One rule keeps the draws easy to reproduce in Python.)\n"
    "The tensors get timm's names (cls_token, blocks.0.attn.qkv.weight, ...), so\n"
    "vit, PyTorch and timm can all load the file.\n"
    "\n"
    "Start from a named architecture with --arch and change any size on top of it,\n"
    "or give at least --dim, --depth and --heads: the other sizes then default to\n"
    "ViT-B/16's (224x224 images, 16x16 patches, 1000 classes), --mlp-dim to 4 x D.\n"
    "Images have 3 channels (RGB); --channels 1 makes a model of grey images, as the\n"
    "project's Fashion-MNIST one.\n"
    "A random model predicts nothing useful, but it is reproducible: the same sizes\n"
    "and seed give the same file, byte for byte, whatever the number of threads.\n"
    "\n"
    "--bias-std and --norm-std depart from timm's init on purpose: the tests' golden\n"
    "generators set them above 0 so that biases and LayerNorm parameters are not\n"
    "zeros and ones, and a bug in how they are used cannot hide. Otherwise leave\n"
    "them at 0.\n";

static const char examples[] =
    "  vit make-weights --arch vit-tiny --seed 1 --out tiny.safetensors\n"
    "  vit make-weights --dim 64 --depth 2 --heads 4 --img 32 --patch 8 \\\n"
    "                   --classes 10 --seed 7 --out small.safetensors\n"
    "  vit make-weights --dim 64 --depth 2 --heads 4 --img 28 --patch 4 \\\n"
    "                   --channels 1 --classes 10 --seed 1 --out grey.safetensors\n";

// The flags as they will build the model, for messages about a bad combination.
static void config_as_flags(char *buf, size_t size, const VitConfig *c) {
    snprintf(buf, size, "--dim %d --depth %d --heads %d --mlp-dim %d --img %d --patch %d "
             "--channels %d --classes %d", c->dim, c->depth, c->heads, c->mlp_dim, c->image_size,
             c->patch_size, c->channels, c->num_classes);
}

// Sizes: the --arch preset (ViT-B/16 without one), then each size flag given on top.
static VitStatus config_from_flags(VitConfig *cfg, const MakeWeightsArgs *a, VitError *err) {
    VitError e;
    if (a->arch && vit_config_for_arch(cfg, a->arch, &e) != VIT_OK)
        return vit_fail(err, VIT_ERR_USAGE, "--arch: %s", e.msg);
    if (!a->arch) {
        const char *missing = !a->dim ? "--dim" : !a->depth ? "--depth" : !a->heads ? "--heads" : NULL;
        if (missing)
            return vit_fail(err, VIT_ERR_USAGE,
                            "'vit make-weights' needs --arch, or --dim, --depth and --heads "
                            "(%s is missing; see 'vit make-weights --help')", missing);
        vit_config_for_arch(cfg, "vit-base", NULL); // image, patch and class defaults
    }
    if (a->dim) cfg->dim = a->dim, cfg->mlp_dim = 4 * a->dim;
    if (a->depth) cfg->depth = a->depth;
    if (a->heads) cfg->heads = a->heads;
    if (a->mlp_dim) cfg->mlp_dim = a->mlp_dim;
    if (a->image_size) cfg->image_size = a->image_size;
    if (a->patch_size) cfg->patch_size = a->patch_size;
    if (a->channels) cfg->channels = a->channels;
    if (a->classes) cfg->num_classes = a->classes;
    // a combination that cannot be built is bad input (1), not bad usage: each flag was fine
    char flags[256];
    config_as_flags(flags, sizeof flags, cfg);
    if (vit_config_check(cfg, &e) != VIT_OK)
        return vit_fail(err, VIT_ERR_INPUT, "cannot build a ViT with %s: %s", flags, e.msg);
    char what[384], count[VIT_NUM_BUF];
    snprintf(what, sizeof what, "a ViT with %s: its %s parameters", flags,
             vit_thousands(count, vit_param_count(cfg)));
    return vit_check_memory(4.0 * (double)vit_param_count(cfg), what, err);
}

/**
 * @brief `vit make-weights`: parse → configure → draw → save.
 * @param[in] self        this command's row of the command table
 * @param[in] argc, argv  its command line, argv[0] = "make-weights"
 * @param[out] err        the message on failure
 * @return the exit status: VIT_OK, VIT_ERR_INPUT or VIT_ERR_USAGE
 */
VitStatus cmd_make_weights(const VitCommand *self, int argc, char **argv, VitError *err) {
    MakeWeightsArgs a = {.std = 0.02f, .bias_std = 0.0f, .norm_std = 0.0f};
// a size: any positive int here; vit_config_check() knows the model's limits
#define SIZE(flag, var, metavar, help) {flag, CLI_INT, var, metavar, help, .lo = 1, .hi = 1 << 30}
// a standard deviation in [0, 10], its default shown in the help
#define STD(flag, var, metavar, help) \
    {flag, CLI_FLOAT, var, metavar, help, .show_default = true, .lo = 0, .hi = 10}
    CliOption options[] = {
        {"--arch", CLI_STRING, &a.arch, "NAME",
         "start from vit-base (D 768, L 12, H 12), vit-small (384, 12, 6) or vit-tiny "
         "(192, 12, 3); all 224x224 images, 16x16 patches, 1000 classes", .required = false},
        SIZE("--dim", &a.dim, "D", "token width; also sets --mlp-dim to 4 x D"),
        SIZE("--depth", &a.depth, "L", "number of encoder blocks"),
        SIZE("--heads", &a.heads, "H", "attention heads; D must be divisible by H"),
        SIZE("--mlp-dim", &a.mlp_dim, "M", "hidden width of each MLP (default 4 x D)"),
        SIZE("--img", &a.image_size, "S", "image side in pixels (default 224)"),
        SIZE("--patch", &a.patch_size, "P", "patch side in pixels; S must be a multiple of P "
                                            "(default 16)"),
        SIZE("--channels", &a.channels, "C", "colour channels of the input images: 3 RGB, 1 "
                                              "grey (default 3)"),
        SIZE("--classes", &a.classes, "Y", "classifier outputs (default 1000)"),
        {"--seed", CLI_INT, &a.seed, "N", "seed of the random numbers (PCG32), 0 to 2147483647",
         .required = true, .lo = 0, .hi = 2147483647.0},
        STD("--std", &a.std, "X", "std of the truncated normal for weights, cls and position "
                                  "embeddings"),
        STD("--bias-std", &a.bias_std, "X", "std of a normal draw for every bias; 0 = timm's "
                                            "zeros; for test goldens"),
        STD("--norm-std", &a.norm_std, "Y", "std of noise on LayerNorm scales (around 1) and "
                                            "shifts (around 0); 0 = timm's; for test goldens"),
        {"--out", CLI_STRING, &a.out, "FILE", "the safetensors file to write", .required = true},
        CLI_OPTION_THREADS(&a.threads),
    };
#undef SIZE
#undef STD
    CliSpec spec = {.command = self, .description = description, .examples = examples,
                    .options = options, .option_count = sizeof options / sizeof options[0]};

    // 1. parse the flags into a configuration and an initialisation
    bool help;
    VitStatus s = cli_parse(&spec, argc, argv, &help, err);
    if (s != VIT_OK || help) return s;
    VitConfig cfg;
    if ((s = config_from_flags(&cfg, &a, err)) != VIT_OK) return s;
    VitInit init = vit_init_timm((uint64_t)a.seed);
    init.std = a.std, init.bias_std = a.bias_std, init.norm_std = a.norm_std;
    cli_apply_threads(&spec, a.threads);

    // 2. build: every parameter drawn from its own PCG32 stream
    double t0 = vit_now();
    Vit vit;
    if ((s = vit_build_random(&vit, &cfg, &init, err)) != VIT_OK) return s;

    // 3. write (atomically), with timm's names
    s = vit_save(&vit, a.out, err);
    vit_free(&vit);
    if (s != VIT_OK) return s;
    char params[VIT_NUM_BUF], bytes[VIT_NUM_BUF], out[1024];
    printf("%s: a random ViT, %s parameters (%s), seed %d, %.2f s\n"
           "  S %d, p %d, C %d, D %d, L %d, H %d, M %d, Y %d\n",
           vit_escape(out, sizeof out, a.out), vit_thousands(params, vit_param_count(&cfg)),
           vit_bytes(bytes, 4.0 * (double)vit_param_count(&cfg)), a.seed, vit_now() - t0,
           cfg.image_size, cfg.patch_size, cfg.channels, cfg.dim, cfg.depth, cfg.heads, cfg.mlp_dim,
           cfg.num_classes);
    return VIT_OK;
}
