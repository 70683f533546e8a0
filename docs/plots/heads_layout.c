/**
 * @file heads_layout.c
 * @brief The book's picture of the heads' permute: lib's heads_split_qkv() on a
 *        tiny fused qkv buffer, memory before and after, as a graphviz graph.
 *
 * Fills a (B, N, 3D) qkv buffer, B = 1, N = 3 tokens, H = 2 heads of Dh = 2
 * (D = 4), whose every number says what it is: 1000·part + 100·head +
 * 10·token + channel, part 0, 1, 2 for q, k, v. heads_split_qkv() copies it
 * into (3, B, H, N, Dh). The program prints, on standard output, a graph for
 * `dot -Tsvg`: the 36 floats of each buffer as a column of cells in address
 * order, top to bottom (a row of 36 would not fit the page), qkv on the left
 * and the function's output on the right; each cell labelled from the number
 * it holds (so the right column shows what the function wrote, not what it
 * should have) and coloured by head; and an arrow from every float of qkv to
 * the cell that holds the same number. scripts/docs.sh builds and runs it for
 * chapter 05's page.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "attention/attention.h"

enum {
    B = 1,              // one image
    N = 3,              // tokens
    H = 2,              // heads
    DH = 2,             // width per head
    D = H * DH,         // width
    PARTS = 3,          // q, k, v
    CELLS = B * N * PARTS * D, // floats in either buffer: 36
};

static const char PART_NAME[PARTS] = {'q', 'k', 'v'};

/** What one float of the buffers stands for. */
typedef struct {
    int part;    // 0 q, 1 k, 2 v
    int head;    // 0 … H-1
    int token;   // 0 … N-1
    int channel; // 0 … DH-1
} Cell;

/** The number that stands for @p c (exact in a float: at most 2000 + 100 + 20 + 1). */
static float encode(Cell c) {
    return (float)(1000 * c.part + 100 * c.head + 10 * c.token + c.channel);
}

/** The inverse of encode(). */
static Cell decode(float v) {
    const int code = (int)lroundf(v);
    return (Cell){code / 1000, code / 100 % 10, code / 10 % 10, code % 10};
}

/** A light fill for each head, a shade darker for k and darker again for v. */
static const char *cell_fill(Cell c) {
    static const char *const fill[H][PARTS] = {
        {"#deebf7", "#b9d6ee", "#8dbde2"}, // head 0: blues
        {"#fde6cf", "#fcc89b", "#f9a868"}, // head 1: oranges
    };
    return fill[c.head][c.part];
}

/** The edges' colour: the head's, darker than any of its fills. */
static const char *head_ink(int head) { return head == 0 ? "#2f6fab" : "#c2561a"; }

/**
 * Fills qkv, (B, N, 3D): token n's row is [q | k | v], each D wide and cut into
 * H heads of DH, the layout timm's reshape(B, N, 3, H, Dh) reads.
 */
static void fill_qkv(float *qkv) {
    for (int n = 0; n < N; n++)
        for (int s = 0; s < PARTS; s++)
            for (int h = 0; h < H; h++)
                for (int c = 0; c < DH; c++)
                    qkv[(n * PARTS + s) * D + h * DH + c] = encode((Cell){s, h, n, c});
}

/** A small grey address. */
static void print_address(int i) {
    printf("<TD BORDER=\"0\"><FONT POINT-SIZE=\"8\" COLOR=\"#777777\">%d</FONT></TD>", i);
}

/** Float @p i of @p buf, labelled and coloured from the number it holds; its port is p<i>. */
static void print_cell(const float *buf, int i) {
    const Cell c = decode(buf[i]);
    printf("<TD PORT=\"p%d\" BGCOLOR=\"%s\">%c h%d t%d c%d</TD>", i, cell_fill(c),
           PART_NAME[c.part], c.head, c.token, c.channel);
}

/**
 * Opens a node of one HTML-like table, cells touching, as memory is drawn,
 * with its title above, one row per line of it.
 */
static void open_table(const char *node, int columns, const char *title) {
    printf("  %s [label=<<TABLE BORDER=\"0\" CELLSPACING=\"0\" CELLBORDER=\"1\""
           " CELLPADDING=\"2\">\n", node);
    for (const char *line = title; *line;) {
        const int length = (int)strcspn(line, "\n");
        printf("      <TR><TD COLSPAN=\"%d\" BORDER=\"0\"><B>%.*s</B></TD></TR>\n", columns,
               length, line);
        line += length + (line[length] == '\n');
    }
}

static void close_table(void) { printf("    </TABLE>>];\n"); }

/**
 * The buffer before, one float a row in address order, top to bottom: beside
 * the first float of each token its number, beside the first of each part the
 * part's letter, then the address and the cell.
 */
static void print_before(const float *qkv) {
    char title[128];
    snprintf(title, sizeof title, "qkv\n(B, N, 3D) = (%d, %d, %d)\ntoken after token,"
             " each [q | k | v]", B, N, PARTS * D);
    open_table("before", 4, title);
    for (int i = 0; i < CELLS; i++) {
        printf("      <TR>");
        if (i % (PARTS * D) == 0)
            printf("<TD ROWSPAN=\"%d\">token %d</TD>", PARTS * D, i / (PARTS * D));
        if (i % D == 0) printf("<TD ROWSPAN=\"%d\">%c</TD>", D, PART_NAME[i / D % PARTS]);
        print_address(i);
        print_cell(qkv, i);
        printf("</TR>\n");
    }
    close_table();
}

/**
 * The buffer after, (3, B, H, N, Dh), one float a row: the cell, its address,
 * and beside each block of N·DH floats its name, read from the block's first
 * float as the function wrote it.
 */
static void print_after(const float *heads) {
    char title[160];
    snprintf(title, sizeof title, "after heads_split_qkv()\n(3, B, H, N, Dh) = (3, %d, %d, %d,"
             " %d)\none (N, Dh) matrix per (q | k | v, head)", B, H, N, DH);
    open_table("after", 3, title);
    for (int i = 0; i < CELLS; i++) {
        printf("      <TR>");
        print_cell(heads, i);
        print_address(i);
        if (i % (N * DH) == 0) {
            const Cell c = decode(heads[i]);
            printf("<TD ROWSPAN=\"%d\" BGCOLOR=\"%s\">%c, head %d<BR/>(N, Dh) = (%d, %d)</TD>",
                   N * DH, cell_fill(c), PART_NAME[c.part], c.head, N, DH);
        }
        printf("</TR>\n");
    }
    close_table();
}

/** The address in @p buf of the number @p v; -1 if it is not there. */
static int address_of(const float *buf, float v) {
    for (int i = 0; i < CELLS; i++)
        if (buf[i] == v) return i;
    return -1;
}

/** Prints the graph; fails if the split left a float that qkv does not hold (no arrow to draw). */
int main(void) {
    float qkv[CELLS], heads[CELLS];
    int source[CELLS]; // source[j]: the address in qkv of the number heads[j] holds
    fill_qkv(qkv);
    for (int j = 0; j < CELLS; j++) heads[j] = NAN; // a cell left unwritten is found below
    heads_split_qkv(heads, qkv, B, N, H, DH);
    for (int j = 0; j < CELLS; j++)
        if ((source[j] = address_of(qkv, heads[j])) < 0) {
            fprintf(stderr, "heads_layout: heads_split_qkv() left %g at %d, which qkv does not"
                    " hold\n", (double)heads[j], j);
            return 1;
        }

    printf("// made by docs/plots/heads_layout.c: heads_split_qkv() on B = %d, N = %d, H = %d,"
           " Dh = %d\n", B, N, H, DH);
    printf("digraph heads_layout {\n");
    printf("  graph [rankdir=LR, ranksep=2.2, splines=line];\n");
    printf("  node [shape=plaintext, fontname=\"Helvetica\", fontsize=9];\n");
    printf("  edge [arrowsize=0.5, penwidth=1.1];\n");
    print_before(qkv);
    print_after(heads);
    for (int j = 0; j < CELLS; j++)
        printf("  before:p%d:e -> after:p%d:w [color=\"%s\"];\n", source[j], j,
               head_ink(decode(heads[j]).head));
    printf("}\n");
    return 0;
}
