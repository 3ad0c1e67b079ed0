/*
 * codecs.c -- the stream codecs of Blosc2 chunks: BloscLZ (ours), LZ4, LZ4HC, zlib and Zstd
 * (the system libraries), and Snappy for reading Blosc 1.x chunks (libsnappy, optional).
 * A stream is one codec block with no framing of its own; the chunk layer stores its length
 * in front of it.
 */
#include "cat_internal.h"
#include "blosclz.h"

#include <limits.h>
#include <lz4.h>
#include <lz4hc.h>
#include <stdlib.h>
#include <zlib.h>
#include <zstd.h>
#include <zstd_errors.h>
#ifdef HAVE_SNAPPY
#include <snappy-c.h>
#endif

/* compcode -> chunk-header format id (flags bits 5-7). */
int cat_codec_format_id(int codec) {
  switch (codec) {
  case CATERVA_BLOSCLZ: return 0;
  case CATERVA_LZ4:
  case CATERVA_LZ4HC: return 1;
  case CATERVA_ZLIB: return 3;
  case CATERVA_ZSTD: return 4;
  default: return -1;
  }
}

int cat_codec_from_format_id(int format_id) {
  switch (format_id) {
  case 0: return CATERVA_BLOSCLZ;
  case 1: return CATERVA_LZ4;
  case 3: return CATERVA_ZLIB;
  case 4: return CATERVA_ZSTD;
  default: return -1;
  }
}

const char *cat_codec_name(int codec) {
  switch (codec) {
  case CATERVA_BLOSCLZ: return "blosclz";
  case CATERVA_LZ4: return "lz4";
  case CATERVA_LZ4HC: return "lz4hc";
  case CATERVA_ZLIB: return "zlib";
  case CATERVA_ZSTD: return "zstd";
  case CATERVA_SNAPPY: return "snappy";
  default: return "unknown";
  }
}

bool cat_codec_available(int codec) {
#ifdef HAVE_SNAPPY
  if (codec == CATERVA_SNAPPY) return true;
#endif
  return cat_codec_format_id(codec) >= 0;
}

/* The reference maps clevel 1..9 onto Zstd levels this way (spec 1.8). */
static int cat_zstd_level(int clevel) {
  if (clevel < 8) return 2 * clevel - 1;
  if (clevel == 8) return ZSTD_maxCLevel() - 2;
  return ZSTD_maxCLevel();
}

static int32_t cat_zstd_compress(cat_scratch *s, int clevel, const uint8_t *in, int32_t n,
                                 uint8_t *out, int32_t cap) {
  size_t r;
  if (s->zcctx == NULL && (s->zcctx = ZSTD_createCCtx()) == NULL) return CATERVA_E_NOMEM;
  r = ZSTD_compressCCtx(s->zcctx, out, (size_t)cap, in, (size_t)n, cat_zstd_level(clevel));
  if (ZSTD_isError(r)) {
    /* Output too small is the ordinary "store it raw" outcome. */
    return ZSTD_getErrorCode(r) == ZSTD_error_dstSize_tooSmall ? 0 : CATERVA_E_CODEC;
  }
  return (int32_t)r;
}

static int32_t cat_zlib_compress(int clevel, const uint8_t *in, int32_t n, uint8_t *out,
                                 int32_t cap) {
  uLongf dlen = (uLongf)cap;
  int zr = compress2(out, &dlen, in, (uLong)n, clevel);
  if (zr == Z_BUF_ERROR) return 0;
  if (zr != Z_OK) return zr == Z_MEM_ERROR ? CATERVA_E_NOMEM : CATERVA_E_CODEC;
  return (int32_t)dlen;
}

/* BloscLZ is the fast codec: a stream that saves little costs many short tokens to decode for
 * few bytes gained, so below a clevel-dependent saving it is stored raw instead, and the
 * encoder stops as soon as its output passes that size. Minimum saving: 3/8 at clevel 1-3,
 * 1/4 at 4-6, 1/8 at 7-8, anything at 9. (On a shuffled smooth float64 field this stores one
 * 16%-saving byte plane raw: the chunk is 3% larger and decodes 1.3x faster.) */
static int32_t cat_blosclz_cap(int clevel, int32_t n, int32_t cap) {
  int keep_8ths = clevel <= 3 ? 5 : clevel <= 6 ? 6 : clevel <= 8 ? 7 : 8;
  int32_t worth = (int32_t)(((int64_t)n * keep_8ths) / 8);
  return keep_8ths < 8 && worth < cap ? worth : cap;
}

int32_t cat_codec_compress(cat_scratch *s, int codec, int clevel, const uint8_t *in, int32_t n,
                           uint8_t *out, int32_t cap) {
  if (cap <= 0) return 0;
  switch (codec) {
  case CATERVA_BLOSCLZ:
    return cat_blosclz_compress(clevel, in, n, out, cat_blosclz_cap(clevel, n, cap));
  case CATERVA_LZ4:
    return LZ4_compress_fast((const char *)in, (char *)out, n, cap, 10 - clevel);
  case CATERVA_LZ4HC:
    return LZ4_compress_HC((const char *)in, (char *)out, n, cap, clevel);
  case CATERVA_ZLIB: return cat_zlib_compress(clevel, in, n, out, cap);
  case CATERVA_ZSTD: return cat_zstd_compress(s, clevel, in, n, out, cap);
  default: return CATERVA_E_UNSUPPORTED;
  }
}

/* zlib streams carry their own length; inflate must end exactly at nout bytes. */
static int32_t cat_zlib_decompress(const uint8_t *in, int32_t n, uint8_t *out, int32_t nout) {
  uLongf dlen = (uLongf)nout;
  uLong slen = (uLong)n;
  int zr = uncompress2(out, &dlen, in, &slen);
  if (zr != Z_OK || dlen != (uLongf)nout) return CATERVA_E_CORRUPT;
  return nout;
}

static int32_t cat_zstd_decompress(cat_scratch *s, const uint8_t *in, int32_t n, uint8_t *out,
                                   int32_t nout, const uint8_t *dict, int32_t dictlen) {
  size_t r;
  if (s->zdctx == NULL && (s->zdctx = ZSTD_createDCtx()) == NULL) return CATERVA_E_NOMEM;
  if (dict != NULL)
    r = ZSTD_decompress_usingDict(s->zdctx, out, (size_t)nout, in, (size_t)n, dict,
                                  (size_t)dictlen);
  else
    r = ZSTD_decompressDCtx(s->zdctx, out, (size_t)nout, in, (size_t)n);
  if (ZSTD_isError(r) || r != (size_t)nout) return CATERVA_E_CORRUPT;
  return nout;
}

static int32_t cat_lz4_decompress(const uint8_t *in, int32_t n, uint8_t *out, int32_t nout,
                                  const uint8_t *dict, int32_t dictlen) {
  int r;
  if (dict != NULL)
    r = LZ4_decompress_safe_usingDict((const char *)in, (char *)out, n, nout, (const char *)dict,
                                      dictlen);
  else
    r = LZ4_decompress_safe((const char *)in, (char *)out, n, nout);
  return r == nout ? nout : CATERVA_E_CORRUPT;
}

#ifdef HAVE_SNAPPY
/* A raw snappy stream (no framing) states its uncompressed length first; it must be nout. */
static int32_t cat_snappy_decompress(const uint8_t *in, int32_t n, uint8_t *out, int32_t nout) {
  size_t ulen = 0;
  if (snappy_uncompressed_length((const char *)in, (size_t)n, &ulen) != SNAPPY_OK ||
      ulen != (size_t)nout)
    return CATERVA_E_CORRUPT;
  if (snappy_uncompress((const char *)in, (size_t)n, (char *)out, &ulen) != SNAPPY_OK ||
      ulen != (size_t)nout)
    return CATERVA_E_CORRUPT;
  return nout;
}
#endif

size_t cat_codec_bytes_at_scratch(int codec, int32_t n) {
  return codec == CATERVA_BLOSCLZ && n > 0 ? CAT_BLOSCLZ_AT_SCRATCH(n) : 0;
}

int32_t cat_codec_bytes_at(int codec, const uint8_t *in, int32_t n, int32_t nout,
                           const int32_t *pos, int32_t npos, uint8_t *out, void *scratch,
                           size_t cap) {
  if (codec != CATERVA_BLOSCLZ) return CATERVA_E_UNSUPPORTED;
  return cat_blosclz_bytes_at(in, n, nout, pos, npos, out, scratch, cap);
}

int32_t cat_codec_decompress(cat_scratch *s, int codec, const uint8_t *in, int32_t n,
                             uint8_t *out, int32_t nout, const uint8_t *dict, int32_t dictlen) {
  switch (codec) {
  case CATERVA_BLOSCLZ: return cat_blosclz_decompress(in, n, out, nout);
  case CATERVA_LZ4:
  case CATERVA_LZ4HC: return cat_lz4_decompress(in, n, out, nout, dict, dictlen);
  case CATERVA_ZLIB: return cat_zlib_decompress(in, n, out, nout);
  case CATERVA_ZSTD: return cat_zstd_decompress(s, in, n, out, nout, dict, dictlen);
#ifdef HAVE_SNAPPY
  case CATERVA_SNAPPY: return cat_snappy_decompress(in, n, out, nout);
#endif
  default: return CATERVA_E_UNSUPPORTED;
  }
}

void cat_codec_scratch_free(cat_scratch *s) {
  ZSTD_freeCCtx(s->zcctx);
  ZSTD_freeDCtx(s->zdctx);
  s->zcctx = s->zdctx = NULL;
}
