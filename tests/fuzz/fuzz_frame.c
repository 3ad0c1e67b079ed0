/*
 * fuzz_frame.c -- libFuzzer target: open arbitrary bytes as a contiguous Blosc2 frame, then
 * borrow and decompress every chunk and every vlmetalayer, and serialise the result again.
 * Any outcome but a crash, a sanitizer report or a hang is fine; a frame we accept and
 * re-serialise must be accepted again.
 */
#include "caterva.h"

#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Cap what a lying header can make the target itself allocate. */
#define FUZZ_MAX_CHUNKSIZE (1 << 22)
#define FUZZ_MAX_CHUNKS 4096

static void decode_chunks(caterva_ctx *ctx, caterva_schunk *sc) {
  int32_t cs = caterva_schunk_chunksize(sc);
  uint8_t *buf;
  if (cs <= 0 || cs > FUZZ_MAX_CHUNKSIZE) return;
  buf = malloc((size_t)cs);
  if (buf == NULL) return;
  for (int64_t i = 0; i < caterva_schunk_nchunks(sc) && i < FUZZ_MAX_CHUNKS; i++) {
    const uint8_t *p;
    int32_t cb;
    (void)caterva_schunk_chunk_special(sc, i);
    if (caterva_schunk_get_chunk(ctx, sc, i, &p, &cb) == 0)
      (void)caterva_chunk_decompress(ctx, p, (size_t)cb, buf, cs);
  }
  free(buf);
}

static void decode_vlmeta(caterva_ctx *ctx, caterva_schunk *sc) {
  for (int k = 0; k < caterva_schunk_vlmeta_count(sc); k++) {
    uint8_t *v = NULL;
    int32_t len;
    (void)caterva_schunk_vlmeta_get(ctx, sc, caterva_schunk_vlmeta_name(sc, k), &v, &len);
    free(v);
  }
  for (int k = 0; k < caterva_schunk_meta_count(sc); k++) {
    const uint8_t *m;
    int32_t len;
    (void)caterva_schunk_meta_get(sc, caterva_schunk_meta_name(sc, k), &m, &len);
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static caterva_ctx *ctx;
  caterva_schunk *sc = NULL, *again = NULL;
  uint8_t *buf = NULL;
  int64_t len = 0;
  if (ctx == NULL && caterva_ctx_new(1, &ctx) < 0) return 0;
  if (caterva_schunk_open_buffer(ctx, data, size, &sc) < 0) return 0;
  decode_chunks(ctx, sc);
  decode_vlmeta(ctx, sc);
  if (caterva_schunk_nchunks(sc) <= FUZZ_MAX_CHUNKS &&
      caterva_schunk_to_buffer(ctx, sc, &buf, &len) == 0) {
    if (caterva_schunk_open_buffer(ctx, buf, (size_t)len, &again) < 0)
      abort(); /* we wrote a frame we cannot read */
    caterva_schunk_free(again);
    free(buf);
  }
  caterva_schunk_free(sc);
  return 0;
}
