/**
 * @file stb_image_impl.c
 * @brief stb_image compiled into the image fuzzer itself, so the fuzzer's
 *        coverage guidance and sanitizers see inside the decoder (the rest of
 *        the project links Debian's prebuilt libstb).
 *
 * Built as Debian builds libstb: without assertions. stb's asserts are debug
 * checks; in the release build a corrupt Huffman code that would trip one
 * comes back as a decode error ("bad huffman code"), which is what users get.
 *
 * One UBSan check is off inside stb: pointer-overflow, which flags
 * `NULL + 0` when a PNG's first IDAT chunk is empty (stb_image.h 2.27,
 * stbi__parse_png_file). Adding zero to a null pointer is undefined in C but
 * harmless on every compiler, and the decoder is Debian's to fix. Out-of-bounds
 * reads and writes are still caught by AddressSanitizer.
 */
#define NDEBUG
#define STB_IMAGE_IMPLEMENTATION
#pragma clang attribute push(__attribute__((no_sanitize("pointer-overflow"))), apply_to = function)
#include <stb_image.h>
#pragma clang attribute pop
