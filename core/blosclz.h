/*
 * blosclz.h -- the BloscLZ codec (Blosc2 compcode 0), our own encoder and decoder.
 * Stream format: shared/spec/blosc2-formats.md section 2. Internal to libcaterva.
 */
#ifndef CAT_BLOSCLZ_H
#define CAT_BLOSCLZ_H

#include <stddef.h>
#include <stdint.h>

/* Compress n bytes of in into out (capacity maxout) at clevel 1..9 (higher searches harder;
 * clevel <= 0 compresses nothing, > 9 acts as 9).
 * Returns the stream length (> 0, < n), or 0 when the input is not worth compressing (n < 16)
 * or the stream would not fit in maxout or would not be shorter than n (the caller stores it
 * raw). Never writes past out + maxout; out's contents are unspecified when 0 is returned.
 * The stream starts and ends with a literal run, as the reference decoder requires.
 * Reentrant; uses up to 64 KiB of stack for its hash table. */
int32_t cat_blosclz_compress(int clevel, const uint8_t *in, int32_t n, uint8_t *out,
                             int32_t maxout);

/* Decode a stream of n bytes into exactly nout bytes at out.
 * Returns nout on success or CATERVA_E_CORRUPT when the stream is malformed, truncated,
 * references before the start of the output, or does not produce exactly nout bytes (also for
 * NULL buffers, n <= 0 or nout <= 0). Never reads past in + n nor writes past out + nout;
 * out's contents are unspecified on failure. Follows the reference decoder's acceptance rules
 * (spec section 2). */
int32_t cat_blosclz_decompress(const uint8_t *in, int32_t n, uint8_t *out, int32_t nout);
/* Scratch bytes cat_blosclz_bytes_at needs for an n-byte stream (its tokens, listed). */
#define CAT_BLOSCLZ_AT_SCRATCH(n) (((size_t)(n) / 2 + 1) * 12)
/* The bytes at positions pos[0..npos) of the nout-byte output of the n-byte stream at in,
 * into out[0..npos), without making the output (cost: the stream's tokens, listed in scratch
 * of CAT_BLOSCLZ_AT_SCRATCH(n) bytes of cap). Returns npos, or CATERVA_E_CORRUPT when the
 * decoder would reject the stream (or a position lies outside the output). */
int32_t cat_blosclz_bytes_at(const uint8_t *in, int32_t n, int32_t nout, const int32_t *pos,
                             int32_t npos, uint8_t *out, void *scratch, size_t cap);

#endif /* CAT_BLOSCLZ_H */
