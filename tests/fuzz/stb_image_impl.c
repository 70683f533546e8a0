/**
 * @file stb_image_impl.c
 * @brief stb_image compiled into the image fuzzer itself, so the fuzzer's
 *        coverage guidance and sanitizers see inside the decoder (the rest of
 *        the project links Debian's prebuilt libstb).
 */
#define STB_IMAGE_IMPLEMENTATION
#include <stb_image.h>
