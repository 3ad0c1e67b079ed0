/*
 * filters.h -- the Blosc2 filter pipeline stages, one block at a time.
 * Exact transforms: shared/spec/blosc2-formats.md section 1.7. Internal to libcaterva.
 *
 * All functions take a block of n bytes (n need not be a multiple of the element size;
 * leftover bytes are handled exactly as the spec says) and never touch memory outside
 * src[0..n) and dst[0..n). src and dst must not overlap unless stated.
 */
#ifndef CAT_FILTERS_H
#define CAT_FILTERS_H

#include <stdint.h>

/* SIMD levels for byte shuffle. cat_simd_best() is what this CPU supports (run-time check,
 * cached after the first call; always CAT_SIMD_GENERIC off x86). Every level produces the
 * same bytes; SSE2/AVX2 code exists for ts = 2, 4, 8 and 16, other sizes run generic code. */
#define CAT_SIMD_GENERIC 0
#define CAT_SIMD_SSE2    1
#define CAT_SIMD_AVX2    2
int cat_simd_best(void);

/* Byte shuffle with element size ts (1..255): out[j*q + i] = in[i*ts + j], q = n / ts;
 * the last n % ts bytes are copied unchanged (ts <= 1 or ts > n: a plain copy). Dispatches to
 * the best SIMD level. Thread-safe; no allocation. */
void cat_shuffle(int32_t ts, int32_t n, const uint8_t *src, uint8_t *dst);
void cat_unshuffle(int32_t ts, int32_t n, const uint8_t *src, uint8_t *dst);
/* The same at a forced level (tests compare levels); a level the CPU lacks falls back to
 * the best one it has below it. */
void cat_shuffle_at(int level, int32_t ts, int32_t n, const uint8_t *src, uint8_t *dst);
void cat_unshuffle_at(int level, int32_t ts, int32_t n, const uint8_t *src, uint8_t *dst);

/* Byte unshuffle from ts planes of q bytes each that need not be contiguous (streams of a
 * block decoded to different places, or stored raw in the chunk): dst[i*ts + j] =
 * planes[j][i] for i in [0, q), q * ts bytes in all; the result of cat_unshuffle on the
 * planes laid end to end. */
void cat_unshuffle_planes(int32_t ts, int32_t q, const uint8_t *const *planes, uint8_t *dst);

/* Bit shuffle (element size ts): ne = floor(n/ts) rounded down to a multiple of 8 elements
 * are transposed into 8*ts bit-rows of ne/8 bytes (row 8j+k holds bit k of byte j of every
 * element, element i at bit i%8 of byte i/8); the remaining n - ne*ts bytes are copied
 * unchanged. Uses 4 KB of stack for ts <= 64. */
void cat_bitshuffle(int32_t ts, int32_t n, const uint8_t *src, uint8_t *dst);
void cat_bitunshuffle(int32_t ts, int32_t n, const uint8_t *src, uint8_t *dst);

/* DELTA (XOR). ts is the chunk typesize; the element width e is ts for 1, 2, 4, 8, else 8
 * when ts is a multiple of 8, else 1.
 * Encoding block 0 of a chunk (block_index == 0): each element XOR the previous element of the
 * same block, the first element kept; ref is not read (may be NULL). This equals c-blosc2
 * when DELTA is the first active filter, the only order it decodes correctly. Any other
 * block: XOR with ref, the first block of the chunk's *unfiltered* data (ref holds at least
 * n bytes).
 * Decoding is in place on buf: block 0 is a running XOR (ref not read); other blocks XOR with
 * ref, which is the already *decoded* block 0 of the chunk (the final output, as the
 * reference decoder does).
 * The n % e bytes after the last whole element are copied by the encoder and left alone by
 * the decoder (c-blosc2 never touches them either). */
void cat_delta_encode(int32_t ts, int32_t block_index, const uint8_t *ref, int32_t n,
                      const uint8_t *src, uint8_t *dst);
void cat_delta_decode(int32_t ts, int32_t block_index, const uint8_t *ref, int32_t n,
                      uint8_t *buf);

/* TRUNC_PREC (lossy, no decoder): prec is filters_meta as a signed byte: p >= 0 keeps p
 * mantissa bits, p < 0 zeroes -p of them. ts must be 4 (23-bit mantissa) or 8 (52 bits);
 * |p| > mantissa bits, or zeroing all of them, is invalid. The n % ts trailing bytes are
 * copied. Returns 0, or CATERVA_E_INVALID for a bad typesize or precision (dst untouched). */
int cat_trunc_prec(int32_t ts, int8_t prec, int32_t n, const uint8_t *src, uint8_t *dst);

/* BYTEDELTA (id 35): ts = filters_meta or, when 0, the typesize (the caller resolves it;
 * ts <= 0 is taken as 1). For each of the ts byte planes of L = n / ts bytes: first byte
 * kept, then differences mod 256; the remaining n - L*ts bytes copied. Decoding is the
 * running sum. (The reference leaves those remaining bytes unwritten; copying them makes
 * the round trip exact.) */
void cat_bytedelta_encode(int32_t ts, int32_t n, const uint8_t *src, uint8_t *dst);
void cat_bytedelta_decode(int32_t ts, int32_t n, const uint8_t *src, uint8_t *dst);

#endif /* CAT_FILTERS_H */
