/**
 * @file vit_info.c
 * @brief `vit info`: what vit_build() found in a weights file, and how it mapped it.
 *
 * The recipe: parse the flags → vit_build() → print the configuration it
 * inferred → print its map (canonical timm name ← name in the file, how) →
 * list the file's tensors that no parameter used.
 */
#include <stdio.h>
#include <string.h>

#include "gemm/gemm.h"
#include "model/vit.h"
#include "gemm/gemm_lowp.h"
#include "vit_cli.h"

static const char description[] =
    "Loads a weights file exactly as vit trace does and shows what it found:\n"
    "  - the naming convention the file follows (timm, Hugging Face or torchvision);\n"
    "  - the configuration, inferred from the tensors' shapes (the number of heads\n"
    "    and the LayerNorm epsilon cannot be seen in shapes: they come from the\n"
    "    file's __metadata__, else from the convention);\n"
    "  - for every parameter, its canonical (timm) name, its name in the file, and\n"
    "    how it was mapped: used in place from the file (float32), converted to\n"
    "    float32 (from F16, BF16 or F64), or zeros for a bias the file lacks;\n"
    "  - tensors of the file that no parameter uses;\n"
    "  - how this machine runs it: the threads (at most the cores this process may\n"
    "    run on, and what OpenBLAS was built for: --threads and OMP_NUM_THREADS are\n"
    "    capped there), and which matrix product is the default (the project's own\n"
    "    kernel or OpenBLAS, whichever was measured faster here; VIT_GEMM=tiled|blas\n"
    "    forces one).\n"
    "Run it first when a checkpoint does not load or its results look wrong.\n";

static const char examples[] =
    "  vit make-weights --arch vit-tiny --seed 1 --out tiny.safetensors\n"
    "  vit info --weights tiny.safetensors\n";

static const char *convention_name(const char *source) {
    if (!strcmp(source, "timm")) return "timm (VisionTransformer)";
    if (!strcmp(source, "hf")) return "Hugging Face (ViTForImageClassification)";
    if (!strcmp(source, "torchvision")) return "torchvision (vit_b_16)";
    return source;
}

// One row per size: what it is, its letter in the shape legend, its value, where it came from.
static void print_config(const Vit *vit) {
    const VitConfig *c = &vit->config;
    const int grid = c->image_size / c->patch_size;
    char patches[96], params[VIT_NUM_BUF], bytes[VIT_NUM_BUF], eps[VIT_NUM_BUF];
    snprintf(patches, sizeof patches, "%d x %d = %d patches, N = %d tokens with [cls]", grid,
             grid, vit_num_patches(c), vit_num_tokens(c));
    snprintf(eps, sizeof eps, "%g", (double)c->ln_eps);
    vit_bytes(bytes, 4.0 * (double)vit_param_count(c));
    char note[160]; // a quantized file's Linear weights are a byte each, not four
    if (vit->int8_only) {
        char int8_bytes[VIT_NUM_BUF];
        snprintf(note, sizeof note, "%s in float32; in this file, its Linear weights int8: %s",
                 bytes, vit_bytes(int8_bytes, (double)vit->file.size));
    } else {
        snprintf(note, sizeof note, "%s", bytes);
    }
    char heads_note[80], eps_note[80]; // where the loader found them
    snprintf(heads_note, sizeof heads_note, "%s%s", strncmp(vit->heads_from, "not", 3) ? "from " : "",
             vit->heads_from);
    snprintf(eps_note, sizeof eps_note, "%s%s", strncmp(vit->eps_from, "not", 3) ? "from " : "",
             vit->eps_from);
    const struct {
        const char *what, *symbol;
        int value;          // printed unless text is set
        const char *text;   // the value as text, or NULL
        const char *note;   // or NULL
    } rows[] = {
        {"image size", "S", c->image_size, NULL, NULL},
        {"patch size", "p", c->patch_size, NULL, patches},
        {"channels", "C", c->channels, NULL, NULL},
        {"width", "D", c->dim, NULL, NULL},
        {"depth (blocks)", "L", c->depth, NULL, NULL},
        {"heads", "H", c->heads, NULL, heads_note},
        {"head width", "Dh", c->dim / c->heads, NULL, NULL},
        {"MLP width", "M", c->mlp_dim, NULL, NULL},
        {"classes", "Y", c->num_classes, NULL, NULL},
        {"LayerNorm eps", "", 0, eps, eps_note},
        {"parameters", "", 0, vit_thousands(params, vit_param_count(c)), note},
    };
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        char value[VIT_NUM_BUF];
        if (rows[i].text) snprintf(value, sizeof value, "%s", rows[i].text);
        else snprintf(value, sizeof value, "%d", rows[i].value);
        if (rows[i].note)
            printf("  %-15s %-3s %-11s %s\n", rows[i].what, rows[i].symbol, value, rows[i].note);
        else printf("  %-15s %-3s %s\n", rows[i].what, rows[i].symbol, value);
    }
}

// How this machine will run it: threads and what caps them (vit_describe_threads()),
// and which matrix product (gemm_choice()).
static void print_compute(void) {
    char gemm[1024], threads[256];
    gemm_choice_describe(gemm, sizeof gemm);
    printf("compute: %s; matrix products: %s\n", vit_describe_threads(threads, sizeof threads),
           gemm);
    printf("  (%s)\n", vit_describe_wait());
    char lowp[256];
    gemm_lowp_describe(lowp, sizeof lowp);
    printf("  smaller numbers (--precision): %s\n", lowp);
    const GemmChoice *choice = gemm_choice();
    char safe[1024], why[4 * sizeof choice->not_kept]; // both hold a path from the environment
    if (choice->remembered)
        printf("  (the choice is kept in %s; VIT_GEMM=tiled|blas forces one)\n",
               vit_escape(safe, sizeof safe, choice->cache));
    else if (choice->cache[0] && choice->tiled_gflops > 0)
        printf("  (this choice is not remembered: %s %s; VIT_GEMM=tiled|blas forces one)\n",
               vit_escape(safe, sizeof safe, choice->cache),
               vit_escape(why, sizeof why, choice->not_kept));
    printf("\n");
}

// Tensor names come from the file: they are escaped before they reach the terminal.
enum { SAFE_NAME = 4 * sizeof(((VitMapEntry *)0)->source) };

// The map as a table whose columns are as wide as their widest entry.
static void print_map(const Vit *vit) {
    int w_canon = (int)strlen("parameter"), w_source = (int)strlen("name in the file");
    int in_place = 0, zeros = 0;
    char source[SAFE_NAME];
    for (int i = 0; i < vit->map_count; i++) {
        const VitMapEntry *m = &vit->map[i];
        int a = (int)strlen(m->canonical), b = (int)strlen(vit_escape(source, sizeof source, m->source));
        if (a > w_canon) w_canon = a;
        if (b > w_source) w_source = b;
        if (!strcmp(m->source, "-")) zeros++;
        else if (strstr(m->how, "in place")) in_place++;
    }
    printf("  %-*s  %-*s  %s\n", w_canon, "parameter", w_source, "name in the file", "how");
    for (int i = 0; i < vit->map_count; i++) {
        const VitMapEntry *m = &vit->map[i];
        printf("  %-*s  %-*s  %s\n", w_canon, m->canonical, w_source,
               vit_escape(source, sizeof source, m->source), m->how);
    }
    printf("\n%d parameters: %d used in place, %d converted or copied, %d zeros\n",
           vit->map_count, in_place, vit->map_count - in_place - zeros, zeros);
}

static bool is_mapped(const Vit *vit, const char *name) {
    for (int i = 0; i < vit->map_count; i++)
        if (!strcmp(vit->map[i].source, name)) return true;
    return false;
}

static void print_unused(const Vit *vit) {
    int unused = 0;
    for (int i = 0; i < vit->file.count; i++) unused += !is_mapped(vit, vit->file.tensors[i].name);
    if (!unused) {
        printf("every tensor in the file is used\n");
        return;
    }
    printf("%d tensor%s in the file not used:\n", unused, unused == 1 ? "" : "s");
    char name[1024];
    for (int i = 0; i < vit->file.count; i++)
        if (!is_mapped(vit, vit->file.tensors[i].name))
            printf("  %s\n", vit_escape(name, sizeof name, vit->file.tensors[i].name));
}

/**
 * @brief `vit info`: parse → build → print the configuration, the map and unused tensors.
 * @param[in] self        this command's row of the command table
 * @param[in] argc, argv  its command line, argv[0] = "info"
 * @param[out] err        the message on failure
 * @return the exit status: VIT_OK, VIT_ERR_INPUT or VIT_ERR_USAGE
 */
VitStatus cmd_info(const VitCommand *self, int argc, char **argv, VitError *err) {
    const char *weights = NULL;
    CliOption options[] = {
        {"--weights", CLI_STRING, &weights, "FILE",
         "the model: safetensors with timm, Hugging Face or torchvision names", .required = true},
    };
    CliSpec spec = {.command = self, .description = description, .examples = examples,
                    .options = options, .option_count = sizeof options / sizeof options[0]};

    // 1. parse
    bool help;
    VitStatus s = cli_parse(&spec, argc, argv, &help, err);
    if (s != VIT_OK || help) return s;

    // 2. build, as vit trace would
    Vit vit;
    if ((s = vit_build(&vit, weights, err)) != VIT_OK) return s;

    // 3. report
    char size[VIT_NUM_BUF], path[1024];
    printf("%s: %s names, %d tensors, %s\n\n", vit_escape(path, sizeof path, weights),
           convention_name(vit.source),
           vit.file.count, vit_bytes(size, (double)vit.file.size));
    print_config(&vit);
    printf("\n");
    print_compute();
    print_map(&vit);
    print_unused(&vit);
    vit_free(&vit);
    return VIT_OK;
}
