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
 * UndefinedBehaviorSanitizer is off inside stb (it stays on for all of our
 * code). On corrupt files stb_image 2.27 computes `NULL + 0` (an empty first
 * PNG IDAT chunk, stbi__parse_png_file) and shifts a 32-bit value by 33 (its
 * JPEG bit reader, stbi__grow_buffer_unsafe, once the bit count underflows).
 * Both are undefined in C but touch no memory on the machines we build for,
 * the decode then fails cleanly, and the decoder is Debian's to fix: the
 * files are regression tests in tests/data/bad/. Out-of-bounds reads and
 * writes inside stb are still caught by AddressSanitizer, which is what
 * would make a bad image dangerous.
 */
#define NDEBUG
#define STB_IMAGE_IMPLEMENTATION
#pragma clang attribute push(__attribute__((no_sanitize("undefined"))), apply_to = function)
#include <stb_image.h>
#pragma clang attribute pop
