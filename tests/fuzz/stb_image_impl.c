/**
 * @file stb_image_impl.c
 * @brief stb_image compiled into the image fuzzer itself, so the fuzzer's
 *        coverage guidance and sanitizers see inside the decoder (the rest of
 *        the project links Debian's prebuilt libstb).
 *
 * Built as Debian builds libstb: without assertions. stb's asserts are debug
 * checks; in the release build a corrupt Huffman code that would trip one
 * comes back as a decode error ("bad huffman code"), which is what users get.
 * Memory errors are still caught by AddressSanitizer.
 */
#define NDEBUG
#define STB_IMAGE_IMPLEMENTATION
#include <stb_image.h>
