/*
 * fuzz_chunk.c -- libFuzzer target: decode arbitrary bytes as a chunk (Blosc2, or Blosc 1.x with
 * the 16-byte header; seeds b1_* come from libblosc), whole, block by
 * block and by item range. Any outcome but a crash, a sanitizer report or a hang is fine;
 * a successful whole decode must agree with the block-by-block decode.
 */
#include "caterva.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Cap what a lying header can make us allocate. */
#define FUZZ_MAX_NBYTES (1 << 18) /* larger chunks take the same paths, only slower */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static caterva_ctx *ctx;
  caterva_chunk_info ci;
  uint8_t *whole = NULL, *blk = NULL;
  if (ctx == NULL && caterva_ctx_new(1, &ctx) < 0) return 0;
  if (caterva_chunk_info_get(data, size, &ci) < 0) return 0;
  if (ci.nbytes > FUZZ_MAX_NBYTES) return 0;
  whole = malloc((size_t)ci.nbytes + 1);
  blk = malloc((size_t)ci.blocksize + 1);
  if (whole == NULL || blk == NULL) goto done;
  int32_t n = caterva_chunk_decompress(ctx, data, size, whole, ci.nbytes);
  for (int32_t j = 0; j < ci.nblocks && j < 64; j++) {
    int64_t r = caterva_chunk_decompress_blocks(ctx, data, size, &j, 1, blk, (size_t)ci.blocksize);
    if (n == ci.nbytes && r > 0 && memcmp(blk, whole + (size_t)j * ci.blocksize, (size_t)r) != 0)
      abort(); /* the two decoding paths disagree */
  }
  if (ci.typesize > 0 && ci.nbytes / ci.typesize > 2)
    caterva_chunk_getitems(ctx, data, size, 1, ci.nbytes / ci.typesize - 2, whole, ci.nbytes);
done:
  free(whole);
  free(blk);
  return 0;
}
