/**
 * @file image.c
 * @brief Decoding with stb_image, Pillow-exact grey conversion and resampling,
 *        crops, presets and a model's own preprocessing metadata.
 */
#include "io/image.h"
#include "base/fileio.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <stb_image.h>

/* --------------------------------------------------------------- decoding */
/*
 * stb_image decodes; before it does, we read each format's header ourselves:
 * a size must be checked before stb takes memory for it, a message must print
 * the size as the file states it (PNG's are unsigned 32-bit and BMP's signed
 * 32-bit: an int would print a width of 0xFFFFFFFC as -4), and stb's info
 * call loses the reason of a refusal (stb_refusal). stb's own reading of the
 * size is then checked again: the decoder's word is final.
 */

Image image_new(int width, int height, int channels) {
    Image img = {width, height, channels, vit_calloc((size_t)width * height * channels + 1, 1)};
    return img;
}

void image_free(Image *img) {
    free(img->pixels);
    memset(img, 0, sizeof *img);
}

/** Every message about a size names both limits, so the reader knows what would pass. */
#define SIZE_LIMITS "(limits: %d pixels a side, %ld pixels in all)"

// Check the header's dimensions before decoding: a tiny file can claim a huge
// image. long long holds any format's field exactly as the file states it.
static VitStatus check_dimensions(long long w, long long h, const char *label, VitError *err) {
    if (w <= 0 || h <= 0)
        return vit_fail(err, VIT_ERR_INPUT, "%s: image has zero size (%lld×%lld)", label, w, h);
    if (w > IMAGE_MAX_SIDE || h > IMAGE_MAX_SIDE)
        return vit_fail(err, VIT_ERR_INPUT,
                        "%s: image of %lld×%lld pixels has a side longer than %d pixels "
                        SIZE_LIMITS, label, w, h, IMAGE_MAX_SIDE, IMAGE_MAX_SIDE,
                        (long)IMAGE_MAX_PIXELS);
    if (w * h > IMAGE_MAX_PIXELS) // both sides at most 65535: no overflow
        return vit_fail(err, VIT_ERR_INPUT,
                        "%s: image of %lld×%lld pixels is larger than the %ld-pixel limit "
                        SIZE_LIMITS, label, w, h, (long)IMAGE_MAX_PIXELS, IMAGE_MAX_SIDE,
                        (long)IMAGE_MAX_PIXELS);
    return VIT_OK;
}

/** The formats we accept; stb_image knows more (GIF, PSD, HDR, PIC, TGA) that we keep out. */
typedef enum {
    FORMAT_UNKNOWN, /**< none of those below: refused */
    FORMAT_PNG,     /**< PNG */
    FORMAT_JPEG,    /**< JPEG */
    FORMAT_BMP,     /**< Windows bitmap */
    FORMAT_PNM      /**< binary PPM (P6) or PGM (P5), 8 bits */
} ImageFormat;

static ImageFormat sniff_format(const unsigned char *d, size_t n) {
    if (n >= 8 && memcmp(d, "\x89PNG\r\n\x1a\n", 8) == 0) return FORMAT_PNG;
    if (n >= 3 && d[0] == 0xff && d[1] == 0xd8 && d[2] == 0xff) return FORMAT_JPEG;
    if (n >= 2 && d[0] == 'B' && d[1] == 'M') return FORMAT_BMP;
    if (n >= 2 && d[0] == 'P' && (d[1] == '5' || d[1] == '6')) return FORMAT_PNM;
    return FORMAT_UNKNOWN;
}

// Header fields: PNG and JPEG store them big-endian, BMP little-endian.
static uint32_t be32(const unsigned char *p) {
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

static uint32_t le32(const unsigned char *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static unsigned le16(const unsigned char *p) { return (unsigned)p[0] | (unsigned)p[1] << 8; }

// stb's reason for a failure, safe to print: it can quote raw bytes of the
// file (an unknown PNG chunk's name), which must not reach the terminal as is.
static const char *stb_reason(char *buf, size_t size) {
    const char *r = stbi_failure_reason();
    size_t i = 0;
    for (; r && r[i] && i + 1 < size; i++)
        buf[i] = (r[i] >= 0x20 && r[i] < 0x7f) ? r[i] : '?';
    buf[i] = '\0';
    return buf;
}

/* PNG */

// A PNG's chunks up to its pixel data, walked as stb walks them (length, type,
// data, CRC, which stb ignores). stbi_info refuses a large IHDR size (a side
// over 2^24, or over 2^30 bytes) and a palette image (colour type 3) without a
// PLTE chunk, and then reports only "unknown image type"; we report the size
// as IHDR states it (unsigned 32-bit) and the missing palette.
static VitStatus png_check(const unsigned char *d, size_t size, const char *label,
                           VitError *err) {
    bool palette = false, has_plte = false;
    for (uint64_t p = 8; p + 8 <= size; p += 12 + (uint64_t)be32(d + p)) {
        const unsigned char *type = d + p + 4, *body = d + p + 8;
        if (memcmp(type, "IHDR", 4) == 0 && be32(d + p) == 13 && size - (p + 8) >= 13) {
            VitStatus s = check_dimensions(be32(body), be32(body + 4), label, err);
            if (s != VIT_OK) return s;
            palette = body[9] == 3;
        } else if (memcmp(type, "PLTE", 4) == 0) {
            has_plte = true;
        } else if (memcmp(type, "IDAT", 4) == 0 || memcmp(type, "IEND", 4) == 0) {
            break; // the palette must come before the pixels
        }
    }
    if (palette && !has_plte)
        return vit_fail(err, VIT_ERR_INPUT,
                        "%s: palette PNG (colour type 3) has no PLTE chunk before its pixels: "
                        "the palette is missing",
                        label);
    return VIT_OK;
}

/* JPEG */

// stb_image 2.27 (Debian 12) writes past a 257-entry array when a JPEG Huffman
// table (DHT segment) declares more than 256 codes (CVE-2021-28021). We refuse
// such files before stb sees them, walking the markers the way stb does:
// segments by their length, anything else (padding, entropy-coded scan data)
// byte by byte, since progressive JPEGs carry new tables between scans.
static unsigned char byte_at(const unsigned char *d, size_t n, size_t i) {
    return i < n ? d[i] : 0; // stb reads zeros past the end
}

// One DHT segment: false if a table declares more than 256 codes. Each table it
// defines sets bit (class · 4 + id) of *defined (class 0 is DC, 1 is AC).
static bool dht_valid(const unsigned char *d, size_t n, size_t at, unsigned *defined) {
    // as stb: L = length - 2; while (L > 0) { class/id, 16 counts, symbols }
    long remaining = ((long)byte_at(d, n, at) << 8 | byte_at(d, n, at + 1)) - 2;
    size_t p = at + 2;
    while (remaining > 0 && p < n) {
        unsigned table = byte_at(d, n, p), cls = table >> 4, id = table & 15;
        if (cls <= 1 && id <= 3) *defined |= 1u << (cls * 4 + id);
        long total = 0;
        for (int k = 0; k < 16; k++) total += byte_at(d, n, p + 1 + (size_t)k);
        if (total > 256) return false;
        p += 17 + (size_t)total;
        remaining -= 17 + total;
    }
    return true;
}

/** What a walk over a JPEG's markers found. */
typedef struct {
    size_t sof;       // where the first frame header (SOFn) starts, or 0
    bool bad_dht;     // a Huffman table declares more than 256 codes
    int missing;      // a scan uses a table no DHT defined before it: class · 4 + id; -1 none
} JpegWalk;

// stb 2.27 decodes a scan with whatever Huffman tables its components name,
// defined or not, and an undefined one is uninitialised memory: its codes
// index outside the table (a heap read the fuzzer found). The scan header
// (SOS): length (2), components Ns (1), Ns × (id, DC table << 4 | AC table),
// spectral start Ss, end Se, approximation Ah << 4 | Al. Which tables a scan
// decodes with, as stb uses them: DC when Ss = 0 and Ah = 0 (baseline, or a
// first DC pass), AC when Se > 0.
static int scan_missing_table(const unsigned char *d, size_t n, size_t at, unsigned defined) {
    unsigned ns = byte_at(d, n, at + 2);
    size_t after = at + 3 + 2 * (size_t)ns;
    unsigned ss = byte_at(d, n, after), se = byte_at(d, n, after + 1);
    unsigned ah = byte_at(d, n, after + 2) >> 4;
    for (unsigned c = 0; c < ns && c < 4; c++) {
        unsigned tables = byte_at(d, n, at + 4 + 2 * (size_t)c), dc = tables >> 4, ac = tables & 15;
        if (ss == 0 && ah == 0 && dc <= 3 && !(defined >> dc & 1)) return (int)dc;
        if (se > 0 && ac <= 3 && !(defined >> (4 + ac) & 1)) return 4 + (int)ac;
    }
    return -1;
}

// The walk over the markers, as stb walks them (see above).
static JpegWalk jpeg_walk(const unsigned char *d, size_t n) {
    JpegWalk w = {0, false, -1};
    unsigned defined = 0;
    size_t i = 2;
    while (i + 1 < n) {
        unsigned marker = d[i + 1];
        bool standalone = marker == 0x00 || marker == 0x01 || marker == 0xff ||
                          (marker >= 0xd0 && marker <= 0xd9); // stuffing, TEM, RSTn, SOI, EOI
        if (d[i] != 0xff || standalone) {
            i++;
            continue;
        }
        if (marker == 0xc4 && !dht_valid(d, n, i + 2, &defined)) {
            w.bad_dht = true;
            return w;
        }
        if (marker == 0xda && w.missing < 0) w.missing = scan_missing_table(d, n, i + 2, defined);
        // SOFn: markers C0 to CF except DHT C4, JPG C8 and DAC CC
        bool frame = marker >= 0xc0 && marker <= 0xcf && marker != 0xc4 && marker != 0xc8 &&
                     marker != 0xcc;
        if (frame && w.sof == 0) w.sof = i;
        size_t len = (size_t)byte_at(d, n, i + 2) << 8 | byte_at(d, n, i + 3);
        i += 2 + (len >= 2 ? len : 2);
    }
    return w;
}

// stb decodes baseline and progressive Huffman JPEGs (SOF0 to SOF2) of 8-bit
// samples whose height is in the frame header; for any other its info reports
// only "unknown image type", so we name what is not supported. The frame
// header: length (2 bytes), sample bits (1), height (2), width (2).
static VitStatus jpeg_check(const unsigned char *d, size_t n, const char *label, VitError *err) {
    JpegWalk walk = jpeg_walk(d, n);
    if (walk.bad_dht)
        return vit_fail(err, VIT_ERR_INPUT, "%s: cannot decode image: corrupt JPEG Huffman table",
                        label);
    if (walk.missing >= 0)
        return vit_fail(err, VIT_ERR_INPUT,
                        "%s: cannot decode image: a JPEG scan uses Huffman table %s %d, which the "
                        "file does not define before it",
                        label, walk.missing < 4 ? "DC" : "AC", walk.missing % 4);
    const size_t sof = walk.sof;
    if (sof == 0) return VIT_OK; // no frame header: stb will refuse the file
    unsigned marker = d[sof + 1], bits = byte_at(d, n, sof + 4);
    unsigned h = (unsigned)byte_at(d, n, sof + 5) << 8 | byte_at(d, n, sof + 6);
    unsigned w = (unsigned)byte_at(d, n, sof + 7) << 8 | byte_at(d, n, sof + 8);
    if (marker > 0xc2)
        return vit_fail(err, VIT_ERR_INPUT,
                        "%s: JPEG coding process SOF%u (lossless, hierarchical or "
                        "arithmetic-coded) is not supported",
                        label, marker - 0xc0);
    if (bits != 8)
        return vit_fail(err, VIT_ERR_INPUT,
                        "%s: JPEG of %u-bit samples is not supported (only 8-bit)", label, bits);
    if (h == 0)
        return vit_fail(err, VIT_ERR_INPUT,
                        "%s: JPEG of height 0 (the height given later, by a DNL marker) is not "
                        "supported",
                        label);
    return check_dimensions(w, h, label, err);
}

/* PPM/PGM */

// Reads the numbers of a binary PPM/PGM header (width, height, maxval) the way
// stb does: whitespace (isspace) and '#' comments between them. Returns where
// the pixels start (after the one whitespace that follows maxval), or 0 when a
// number is missing or has more than 18 digits. stb's int parser overflows
// from 10 digits, but no such number reaches it: the checks refuse it first.
static size_t pnm_header(const unsigned char *data, size_t size, long long numbers[3]) {
    size_t i = 2;
    for (int k = 0; k < 3; k++) {
        while (i < size && (isspace(data[i]) || data[i] == '#')) {
            if (data[i] == '#')
                while (i < size && data[i] != '\n' && data[i] != '\r') i++;
            else i++;
        }
        int digits = 0;
        numbers[k] = 0;
        while (i < size && isdigit(data[i])) {
            if (++digits > 18) return 0;
            numbers[k] = numbers[k] * 10 + (data[i++] - '0');
        }
        if (digits == 0) return 0;
    }
    return i + 1;
}

// Binary PPM/PGM pitfalls of stb_image 2.27: header numbers can overflow its
// parser, pixels cut short are read as zeros without complaint, and 16-bit
// files (maxval > 255) overflow a buffer when converted to 8 bits. Refuse all three.
static VitStatus pnm_check(const unsigned char *data, size_t size, const char *label,
                          VitError *err) {
    long long n[3];
    size_t start = pnm_header(data, size, n);
    if (start == 0)
        return vit_fail(err, VIT_ERR_INPUT,
                        "%s: cannot decode image: malformed PPM/PGM header (a number is missing "
                        "or longer than 18 digits)",
                        label);
    if (n[2] > 65535) // not 16-bit either: the format stops there
        return vit_fail(err, VIT_ERR_INPUT,
                        "%s: PPM/PGM maxval %lld is out of range (at most 65535)", label, n[2]);
    if (n[2] > 255)
        return vit_fail(err, VIT_ERR_INPUT,
                        "%s: 16-bit PPM/PGM (maxval %lld) is not supported; save it with 8 bits",
                        label, n[2]);
    VitStatus s = check_dimensions(n[0], n[1], label, err);
    if (s != VIT_OK) return s;
    size_t channels = data[1] == '6' ? 3 : 1;
    if (size < start || size - start < (size_t)n[0] * (size_t)n[1] * channels)
        return vit_fail(err, VIT_ERR_INPUT, "%s: cannot decode image: pixel data is truncated",
                        label);
    return VIT_OK;
}

/* BMP */

/** The fields of a BMP header that stb reads. */
typedef struct {
    uint32_t offset;       // where the pixels start
    uint32_t header;       // size of the info header: 12 (OS/2), 40, 56, 108 or 124
    uint32_t compression;  // 0 none, 3 bit fields; others (RLE, JPEG, PNG) stb refuses
    unsigned bpp;          // bits per pixel
    long long width;       // signed in the file: negative is invalid
    long long height;      // signed in the file: negative means rows stored top first
} BmpHeader;

// The OS/2 header stores 16-bit unsigned sizes, the others 32-bit signed ones.
static BmpHeader bmp_header(const unsigned char *d) {
    BmpHeader b = {.offset = le32(d + 10), .header = le32(d + 14)};
    if (b.header == 12) {
        b.width = le16(d + 18), b.height = le16(d + 20), b.bpp = le16(d + 24);
    } else {
        b.width = (int32_t)le32(d + 18), b.height = (int32_t)le32(d + 22);
        b.bpp = le16(d + 28), b.compression = le32(d + 30);
    }
    return b;
}

// The palette index of pixel x of a row: 1, 4 or 8 bits a pixel, high bits first.
static unsigned bmp_index(const unsigned char *row, long long x, unsigned bpp) {
    if (bpp == 8) return row[x];
    if (bpp == 4) return (row[x / 2] >> (x % 2 ? 0 : 4)) & 15;
    return (row[x / 8] >> (7 - x % 8)) & 1;
}

// stb sizes a BMP's palette as (offset − 14 − header) / 4 entries, and then
// neither refuses an empty one nor checks the pixels' indices against it: an
// index past its end reads uninitialised memory as a colour. (For OS/2 files,
// whose entries are 3 bytes, stb 2.27 counts four entries too few.) The rows
// are all in the file (bmp_check), `row` bytes apart.
static VitStatus bmp_palette_check(const unsigned char *d, const BmpHeader *b, uint64_t row,
                                   const char *label, VitError *err) {
    if (b->header == 12)
        return vit_fail(err, VIT_ERR_INPUT,
                        "%s: OS/2 BMP with a palette is not supported (stb misreads its palette)",
                        label);
    long long entries = ((long long)b->offset - 14 - b->header) / 4;
    if (entries <= 0)
        return vit_fail(err, VIT_ERR_INPUT,
                        "%s: BMP of %u bits per pixel has no palette (its pixels start at byte "
                        "%u, right after the header)",
                        label, b->bpp, b->offset);
    if (entries > 256)
        return vit_fail(err, VIT_ERR_INPUT,
                        "%s: BMP palette of %lld entries is longer than 256 (the pixels must "
                        "follow the palette)",
                        label, entries);
    if (entries >= 1 << b->bpp) return VIT_OK; // every index has its entry
    for (long long y = 0; y < llabs(b->height); y++)
        for (long long x = 0; x < b->width; x++) {
            unsigned v = bmp_index(d + b->offset + (uint64_t)y * row, x, b->bpp);
            if (v >= entries)
                return vit_fail(err, VIT_ERR_INPUT,
                                "%s: BMP pixel uses palette entry %u, past the end of its "
                                "%lld-entry palette",
                                label, v, entries);
        }
    return VIT_OK;
}

// stb reads an uncompressed BMP whose pixels are cut short as zeros too: a
// 79-byte file could claim 2106×30988 pixels and cost 200 MB to "decode".
// Rows are padded to 4 bytes; the pixels start at the header's offset. A
// negative height is valid (rows stored top first): the image is |h| rows.
static VitStatus bmp_check(const unsigned char *d, size_t size, const char *label,
                           VitError *err) {
    uint32_t header = size >= 18 ? le32(d + 14) : 0;
    if (header != 12 && header != 40 && header != 56 && header != 108 && header != 124)
        return VIT_OK; // a header stb does not know: it refuses the file before any size
    if (size < 14 + (size_t)header)
        return vit_fail(err, VIT_ERR_INPUT, "%s: cannot decode image: BMP header is truncated",
                        label);
    BmpHeader b = bmp_header(d);
    if (b.width < 0)
        return vit_fail(err, VIT_ERR_INPUT, "%s: BMP width is negative (%lld)", label, b.width);
    VitStatus s = check_dimensions(b.width, llabs(b.height), label, err);
    if (s != VIT_OK) return s;
    if (b.compression == 3 ? b.bpp != 16 && b.bpp != 32 : b.compression != 0)
        return VIT_OK; // RLE &c., or bit fields of 8 or 24 bits: stb refuses them
    if (b.bpp != 1 && b.bpp != 4 && b.bpp != 8 && b.bpp != 16 && b.bpp != 24 && b.bpp != 32)
        return vit_fail(err, VIT_ERR_INPUT,
                        "%s: BMP of %u bits per pixel is not supported (only 1, 4, 8, 16, 24 "
                        "or 32)",
                        label, b.bpp);
    uint64_t row = ((uint64_t)b.bpp * (uint64_t)b.width + 31) / 32 * 4;
    if ((uint64_t)b.offset + row * (uint64_t)llabs(b.height) > size)
        return vit_fail(err, VIT_ERR_INPUT, "%s: cannot decode image: pixel data is truncated",
                        label);
    return b.bpp <= 8 ? bmp_palette_check(d, &b, row, label, err) : VIT_OK;
}

/* all formats */

// Our own reading of the header, for the checks above.
static VitStatus header_check(ImageFormat format, const unsigned char *d, size_t size,
                              const char *label, VitError *err) {
    switch (format) {
    case FORMAT_PNG: return png_check(d, size, label, err);
    case FORMAT_JPEG: return jpeg_check(d, size, label, err);
    case FORMAT_BMP: return bmp_check(d, size, label, err);
    case FORMAT_PNM: return pnm_check(d, size, label, err);
    default: return VIT_OK;
    }
}

// stbi_info asks each of stb's decoders in turn and, when all refuse, reports
// only "unknown image type": the reason of the one that read the file is
// lost. That decoder's load reads the header exactly as its info does, so it
// fails at the same place, before taking memory for pixels: ask it instead.
static VitStatus stb_refusal(const unsigned char *data, size_t size, const char *label,
                             VitError *err) {
    int w, h, comp;
    char reason[64];
    stbi_image_free(stbi_load_from_memory(data, (int)size, &w, &h, &comp, 3)); // NULL
    return vit_fail(err, VIT_ERR_INPUT, "%s: cannot decode image: %s", label,
                    stb_reason(reason, sizeof reason));
}

VitStatus image_load_memory(Image *img, const unsigned char *data, size_t size,
                            const char *label, VitError *err) {
    memset(img, 0, sizeof *img);
    if (size == 0) return vit_fail(err, VIT_ERR_INPUT, "%s: file is empty", label);
    if (size > (size_t)INT32_MAX)
        return vit_fail(err, VIT_ERR_INPUT, "%s: file is larger than 2 GB", label);
    ImageFormat format = sniff_format(data, size);
    if (format == FORMAT_UNKNOWN)
        return vit_fail(err, VIT_ERR_INPUT,
                        "%s: not an image I can decode (PNG, JPEG, BMP, PPM/PGM)", label);
    VitStatus s = header_check(format, data, size, label, err);
    if (s != VIT_OK) return s;
    int w, h, comp;
    char reason[64];
    if (!stbi_info_from_memory(data, (int)size, &w, &h, &comp))
        return stb_refusal(data, size, label, err);
    // stb's reading, checked too; its info gives a top-down BMP's height negative, as stored
    if ((s = check_dimensions(w, format == FORMAT_BMP ? llabs(h) : h, label, err)) != VIT_OK)
        return s;
    unsigned char *rgb = stbi_load_from_memory(data, (int)size, &w, &h, &comp, 3);
    if (!rgb)
        return vit_fail(err, VIT_ERR_INPUT, "%s: cannot decode image: %s", label,
                        stb_reason(reason, sizeof reason));
    if ((s = check_dimensions(w, h, label, err)) != VIT_OK) { // the decoder's word is final
        stbi_image_free(rgb);
        return s;
    }
    *img = image_new(w, h, 3);
    memcpy(img->pixels, rgb, (size_t)w * h * 3);
    stbi_image_free(rgb);
    return VIT_OK;
}

VitStatus image_load(Image *img, const char *path, VitError *err) {
    memset(img, 0, sizeof *img);
    char *data;
    size_t size;
    // a regular file only (a FIFO would hang, /dev/zero never end), and under stb's int limit
    VitStatus s = file_read_all(&data, &size, path, (size_t)INT32_MAX, "an image", err);
    if (s != VIT_OK) return s;
    s = image_load_memory(img, (const unsigned char *)data, size, path, err);
    free(data);
    return s;
}

/* ------------------------------------------------------------- resampling */
/*
 * Pillow's resampler (libImaging/Resample.c), reproduced so our pixels equal
 * the ones HF and torchvision feed their models. For each output pixel a
 * window of input pixels is weighted by the filter; when shrinking by a factor
 * s the filter is stretched by s, which averages (antialiases) instead of
 * skipping pixels. Weights become 22-bit fixed point; each pass rounds and
 * clips to 8 bits, as Pillow does.
 */

enum { PRECISION_BITS = 32 - 8 - 2 };

/** Pillow's fixed-point form of one axis's resampling weights. */
typedef struct {
    int ksize;   // weights per output pixel (the widest window)
    int *bounds; // (out, 2): first input index, count
    int *k;      // (out, ksize) weights × 2²², rounded half away from zero
} Coeffs;

// Fixed-point weights of outputs first … first + count − 1 of an in_size → out_size resize.
static Coeffs precompute(int in_size, long out_size, long first, int count, ImageFilter filter) {
    ResampleAxis ax = resample_axis(in_size, out_size, first, count, filter);
    Coeffs c = {.ksize = ax.ksize};
    c.bounds = vit_malloc(sizeof(int) * 2 * (size_t)count);
    c.k = vit_calloc((size_t)count * c.ksize, sizeof(int));
    for (int i = 0; i < count; i++) {
        c.bounds[2 * i] = ax.first[i];
        c.bounds[2 * i + 1] = ax.count[i];
        for (int j = 0; j < ax.count[i]; j++) {
            double v = ax.weights[(size_t)i * ax.ksize + j] * (1 << PRECISION_BITS);
            c.k[(size_t)i * c.ksize + j] = (int)(v < 0 ? v - 0.5 : v + 0.5);
        }
    }
    resample_axis_free(&ax);
    return c;
}

static unsigned char clip8(int v) {
    v >>= PRECISION_BITS;
    return (unsigned char)(v < 0 ? 0 : v > 255 ? 255 : v);
}

// One horizontal pass over rows [row0, row0 + out->height) of src; each
// channel alike (Pillow's 8-bit passes for one band and for three are the same sums).
static void resample_horizontal(Image *out, const Image *src, int row0, const Coeffs *c) {
    const int C = src->channels;
    for (int y = 0; y < out->height; y++) {
        const unsigned char *in = src->pixels + (size_t)(y + row0) * src->width * C;
        unsigned char *o = out->pixels + (size_t)y * out->width * C;
        for (int x = 0; x < out->width; x++) {
            const int *k = c->k + (size_t)x * c->ksize;
            int xmin = c->bounds[2 * x], n = c->bounds[2 * x + 1];
            for (int ch = 0; ch < C; ch++) {
                int acc = 1 << (PRECISION_BITS - 1);
                for (int i = 0; i < n; i++) acc += in[(size_t)(xmin + i) * C + ch] * k[i];
                o[(size_t)x * C + ch] = clip8(acc);
            }
        }
    }
}

// One vertical pass; bounds are relative to src's first row.
static void resample_vertical(Image *out, const Image *src, const Coeffs *c, int row_shift) {
    const size_t row = (size_t)src->width * src->channels; // bytes in a row, channels interleaved
    for (int y = 0; y < out->height; y++) {
        const int *k = c->k + (size_t)y * c->ksize;
        int ymin = c->bounds[2 * y] - row_shift, n = c->bounds[2 * y + 1];
        unsigned char *o = out->pixels + (size_t)y * row;
        for (size_t x = 0; x < row; x++) {
            int acc = 1 << (PRECISION_BITS - 1);
            for (int i = 0; i < n; i++) acc += src->pixels[(size_t)(ymin + i) * row + x] * k[i];
            o[x] = clip8(acc);
        }
    }
}

// The window [left, left + cw) × [top, top + ch) of src resized to width × height:
// exactly those pixels of image_resize() followed by image_crop(), computed
// without the rest (a resize to a huge size before a small crop stays cheap).
static Image resize_window(const Image *src, long width, long height, int left, int top, int cw,
                           int ch, ImageFilter filter) {
    bool horizontal = width != src->width, vertical = height != src->height;
    // the source rows the output rows read: all of a window when resampling vertically
    Coeffs cv = {0};
    int first = top, last = top + ch;
    if (vertical) {
        cv = precompute(src->height, height, top, ch, filter);
        first = cv.bounds[0];
        last = cv.bounds[2 * (ch - 1)] + cv.bounds[2 * (ch - 1) + 1];
    }
    // pass 1, horizontal (Pillow's order), over just those rows
    Image rows;
    if (horizontal) {
        Coeffs chz = precompute(src->width, width, left, cw, filter);
        rows = image_new(cw, last - first, src->channels);
        resample_horizontal(&rows, src, first, &chz);
        free(chz.bounds), free(chz.k);
    } else {
        rows = image_crop(src, left, first, cw, last - first);
    }
    if (!vertical) return rows;
    // pass 2, vertical
    Image out = image_new(cw, ch, src->channels);
    resample_vertical(&out, &rows, &cv, first);
    image_free(&rows);
    free(cv.bounds), free(cv.k);
    return out;
}

Image image_resize(const Image *src, int width, int height, ImageFilter filter) {
    return resize_window(src, width, height, 0, 0, width, height, filter);
}

Image image_crop(const Image *src, int left, int top, int width, int height) {
    const int C = src->channels;
    Image out = image_new(width, height, C);
    for (int y = 0; y < height; y++)
        memcpy(out.pixels + (size_t)y * width * C,
               src->pixels + ((size_t)(top + y) * src->width + left) * C, (size_t)width * C);
    return out;
}

/* ------------------------------------------------------------------- grey */
/*
 * Pillow's convert("L") (libImaging/Convert.c, rgb2l): ITU-R 601-2 luma,
 * 299/1000 R + 587/1000 G + 114/1000 B, in 16-bit fixed point. The weights
 * are those thousandths of 2^16 rounded (19595.264 → 19595, 38469.632 →
 * 38470, 7471.104 → 7471); they sum to 65536 exactly, so (v, v, v) gives v
 * back; adding 2^15 before the shift rounds to nearest.
 */

enum { LUMA_R = 19595, LUMA_G = 38470, LUMA_B = 7471 }; // × 2^-16

Image image_to_grey(const Image *src) {
    if (src->channels == 1) return image_crop(src, 0, 0, src->width, src->height);
    Image out = image_new(src->width, src->height, 1);
    const size_t n = (size_t)src->width * src->height;
    for (size_t i = 0; i < n; i++) {
        const unsigned char *p = src->pixels + i * 3;
        out.pixels[i] = (unsigned char)((LUMA_R * p[0] + LUMA_G * p[1] + LUMA_B * p[2] + 32768) >> 16);
    }
    return out;
}

// A grey image as R = G = B, as Pillow's convert("RGB") of an "L" image.
static Image grey_to_rgb(const Image *src) {
    Image out = image_new(src->width, src->height, 3);
    const size_t n = (size_t)src->width * src->height;
    for (size_t i = 0; i < n; i++)
        out.pixels[3 * i] = out.pixels[3 * i + 1] = out.pixels[3 * i + 2] = src->pixels[i];
    return out;
}

/* ---------------------------------------------------------------- presets */

// The shorter side each preset resizes to, for a model of side S (0: straight to S×S).
static int resize_straight(int S) { (void)S; return 0; }
// timm: crop_pct 0.9, scale_size = floor(S / crop_pct), e.g. 224 → 248
static int resize_timm(int S) { return (int)floor(S / 0.9); }
// torchvision's ImageClassification: resize 256, crop 224; scaled for other S
static int resize_torchvision(int S) { return (int)lround(S * 256.0 / 224.0); }
// Fashion-MNIST's own: the shorter side to S, so a 28×28 picture is left as it is
static int resize_to_side(int S) { return S; }

/** One preset: how it resizes, filters, colours and normalises. */
typedef struct {
    const char *name;
    int (*resize_short)(int S);
    ImageFilter filter;
    int channels;
    float mean[IMAGE_MAX_CHANNELS], std[IMAGE_MAX_CHANNELS];
} PresetRow;

/** Every preset, the one table the names, the help and the messages come from. */
static const PresetRow PRESETS[] = {
    {"hf", resize_straight, FILTER_BILINEAR, 3, {0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}},
    {"timm", resize_timm, FILTER_BICUBIC, 3, {0.5f, 0.5f, 0.5f}, {0.5f, 0.5f, 0.5f}},
    {"torchvision", resize_torchvision, FILTER_BILINEAR, 3, {0.485f, 0.456f, 0.406f},
     {0.229f, 0.224f, 0.225f}},
    // the published statistics of Fashion-MNIST's training pixels (dataset.h)
    {"fashion-mnist", resize_to_side, FILTER_BILINEAR, 1, {0.2860f}, {0.3530f}},
};
enum { PRESET_COUNT = sizeof PRESETS / sizeof PRESETS[0] };

VitStatus image_preprocess_preset(Preprocess *p, const char *name, int S, VitError *err) {
    memset(p, 0, sizeof *p);
    p->crop = S;
    for (int i = 0; i < PRESET_COUNT; i++) {
        const PresetRow *r = &PRESETS[i];
        if (strcmp(name, r->name) != 0) continue;
        *p = (Preprocess){.name = r->name, .resize_short = r->resize_short(S), .crop = S,
                          .filter = r->filter, .channels = r->channels};
        memcpy(p->mean, r->mean, sizeof p->mean);
        memcpy(p->std, r->std, sizeof p->std);
        return VIT_OK;
    }
    char known[128] = "";
    for (int i = 0; i < PRESET_COUNT; i++)
        snprintf(known + strlen(known), sizeof known - strlen(known), "%s%s", i ? ", " : "",
                 PRESETS[i].name);
    char shown[64];
    return vit_fail(err, VIT_ERR_USAGE, "unknown preprocessing preset '%s' (known: %s)",
                    vit_escape(shown, sizeof shown, name), known);
}

// One value for a grey channel from three: their luma-weighted sum, as the
// grey pixels are made (equal values stay exactly what they are).
static float luma_of(const float v[3]) {
    if (v[0] == v[1] && v[1] == v[2]) return v[0];
    return (float)(0.299 * v[0] + 0.587 * v[1] + 0.114 * v[2]);
}

VitStatus image_preprocess_set_channels(Preprocess *p, int channels, VitError *err) {
    if (channels != 1 && channels != 3)
        return vit_fail(err, VIT_ERR_INPUT, "pictures have 1 channel (grey) or 3 (RGB); a model "
                        "of %d channels cannot read them", channels);
    if (p->channels == channels) return VIT_OK;
    if (channels == 1) {
        p->mean[0] = luma_of(p->mean), p->std[0] = luma_of(p->std);
        p->mean[1] = p->mean[2] = p->std[1] = p->std[2] = 0;
    } else {
        p->mean[1] = p->mean[2] = p->mean[0];
        p->std[1] = p->std[2] = p->std[0];
    }
    p->channels = channels;
    return VIT_OK;
}

VitStatus image_preprocess_parse_values(float *out, int channels, const char *text, const char *what,
                                  VitStatus status, bool positive, VitError *err) {
    float v[IMAGE_MAX_CHANNELS];
    int n = 0;
    bool ok = text != NULL;
    for (const char *p = text; ok;) {
        char *end;
        errno = 0;
        const double x = strtod(p, &end);
        ok = end != p && errno == 0 && isfinite(x) && fabs(x) <= 3.4e38 && n < IMAGE_MAX_CHANNELS;
        if (!ok) break;
        if (positive && !(x > 0))
            return vit_fail(err, status, "%s: %g must be greater than 0", what, x);
        v[n++] = (float)x;
        if (*end == '\0') break;
        ok = *end == ',';
        p = end + 1;
    }
    if (!ok || (n != 1 && n != channels)) {
        char shown[128];
        vit_escape(shown, sizeof shown, text ? text : "");
        return channels == 1
                   ? vit_fail(err, status, "%s: expected one number (the model has 1 channel), "
                              "got '%s'", what, shown)
                   : vit_fail(err, status, "%s: expected one number or %d separated by commas "
                              "(%s), got '%s'", what, channels, channels == 3 ? "R,G,B" : "one "
                              "per channel", shown);
    }
    for (int c = 0; c < channels; c++) out[c] = v[n == 1 ? 0 : c];
    return VIT_OK;
}

VitStatus image_preprocess_for_model(Preprocess *p, const char *preset, const char *fallback,
                               const SafeTensors *weights, int image_size, int channels,
                               VitError *err) {
    const char *label = weights && weights->label ? weights->label : "the weights";
    const char *named = weights ? st_meta(weights, "preprocess") : NULL;
    // 1. the preset: the one asked for, else the file's own, else the convention's
    VitStatus s = image_preprocess_preset(p, preset ? preset : named ? named : fallback, image_size, err);
    if (s != VIT_OK && !preset && named) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        return vit_fail(err, VIT_ERR_INPUT, "%s: __metadata__ \"preprocess\": %s", label, why);
    }
    // 2. grey or RGB, as the model reads
    if (s == VIT_OK && (s = image_preprocess_set_channels(p, channels, err)) != VIT_OK) {
        char why[sizeof err->msg];
        snprintf(why, sizeof why, "%s", err->msg);
        return vit_fail(err, s, "%s: %s", label, why);
    }
    // 3. the normalisation the model was trained with, when its file says
    static const char *const keys[2] = {"mean", "std"};
    float *const values[2] = {p->mean, p->std};
    for (int k = 0; k < 2 && s == VIT_OK; k++) {
        const char *text = weights ? st_meta(weights, keys[k]) : NULL;
        if (!text) continue;
        char what[1200];
        snprintf(what, sizeof what, "%s: __metadata__ \"%s\"", label, keys[k]);
        s = image_preprocess_parse_values(values[k], channels, text, what, VIT_ERR_INPUT, k == 1, err);
    }
    return s;
}

void image_to_chw(float *out, const Image *img, const float *mean, const float *std) {
    // out is (C, H, W); pixels are (H, W, C)
    const int C = img->channels;
    const size_t hw = (size_t)img->width * img->height;
    for (int c = 0; c < C; c++)
        for (size_t i = 0; i < hw; i++)
            out[c * hw + i] = ((float)img->pixels[i * C + c] / 255.0f - mean[c]) / std[c];
}

// torchvision's Resize(int): the shorter side becomes `side`, the longer keeps the ratio
// (truncated, as int() does). Long: a 1 × 60 000 000 strip makes a very long side.
static void short_side_size(int w, int h, int side, long *ow, long *oh) {
    if (w <= h) *ow = side, *oh = (long)side * h / w;
    else *oh = side, *ow = (long)side * w / h;
}

void image_preprocess(float *out, const Image *img, const Preprocess *p) {
    const int S = p->crop;
    // 1. the model's colours: grey as Pillow's convert("L"), or grey repeated as RGB
    Image converted = {0};
    if (img->channels != p->channels)
        converted = p->channels == 1 ? image_to_grey(img) : grey_to_rgb(img);
    const Image *src = converted.pixels ? &converted : img;
    // 2. the model's size
    Image sized;
    if (src->width == S && src->height == S) {
        sized = image_crop(src, 0, 0, S, S); // already S×S: no resampling
    } else if (p->resize_short == 0) {
        sized = image_resize(src, S, S, p->filter);
    } else {
        long w, h;
        short_side_size(src->width, src->height, p->resize_short, &w, &h);
        // torchvision's CenterCrop: offsets rounded half to even, as Python's round();
        // resize_short >= S for every preset, so the crop lies inside
        int left = (int)lrint((double)(w - S) / 2.0), top = (int)lrint((double)(h - S) / 2.0);
        sized = resize_window(src, w, h, left, top, S, S, p->filter);
    }
    image_free(&converted);
    // 3. the model's numbers
    image_to_chw(out, &sized, p->mean, p->std);
    image_free(&sized);
}
