/*
 * test_chunk_malformed.c -- chunks that lie: truncated, bit-flipped, and headers with
 * impossible fields. Every call must return a negative code (or, for a flip that keeps the
 * chunk well-formed, a successful decode) and never read or write out of bounds; the suite
 * runs under ASan and UBSan to catch the latter.
 */
#include "cat_internal.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>

static caterva_ctx *ctx;

static int32_t make_chunk(int codec, const uint8_t *filters, uint8_t *dst, int32_t cap,
                          uint8_t *src, int32_t n) {
  caterva_cparams cp;
  caterva_cparams_init(&cp);
  cp.codec = codec;
  cp.typesize = 4;
  cp.blocksize = 1024;
  memcpy(cp.filters, filters, CATERVA_MAX_FILTERS);
  /* int32 items growing slowly, with a little noise in the low byte */
  for (int32_t i = 0; i < n; i++) src[i] = i % 4 == 0 ? (uint8_t)(i / 64 + i % 3) : i % 4 == 1 ? (uint8_t)(i >> 12) : 0;
  return caterva_chunk_compress(ctx, &cp, src, n, dst, cap);
}

/* Decode the chunk in every way, with an output buffer exactly as large as the header says
 * (capped), and report whether the whole decode succeeded. */
static int decode_all_ways(const uint8_t *chunk, size_t len, uint8_t *out, int32_t cap) {
  caterva_chunk_info ci;
  int32_t j = 0;
  int rc = caterva_chunk_decompress(ctx, chunk, len, out, cap);
  if (caterva_chunk_info_get(chunk, len, &ci) == 0 && ci.nblocks > 0 && ci.blocksize <= cap) {
    j = ci.nblocks - 1;
    caterva_chunk_decompress_blocks(ctx, chunk, len, &j, 1, out, (size_t)cap);
    caterva_chunk_getitems(ctx, chunk, len, 0, 1, out, cap);
  }
  return rc;
}

static void test_truncation(int codec, const char *name) {
  static const uint8_t shuffle[6] = {0, 0, 0, 0, CATERVA_DELTA, CATERVA_SHUFFLE};
  uint8_t src[8192], chunk[8192 + 32], out[8192];
  int32_t n = make_chunk(codec, shuffle, chunk, sizeof chunk, src, sizeof src);
  int bad = 0;
  for (int32_t len = 0; len < n; len++) {
    uint8_t *copy = malloc((size_t)len + 1); /* exact-size copy: ASan sees any overread */
    memcpy(copy, chunk, (size_t)len);
    if (decode_all_ways(copy, (size_t)len, out, sizeof out) >= 0) bad++;
    free(copy);
  }
  tap_ok(n > 0 && bad == 0, "%s: every truncation (%d lengths) is rejected", name, n);
}

static void test_bitflips(int codec, const char *name) {
  static const uint8_t shuffle[6] = {0, 0, 0, 0, 0, CATERVA_SHUFFLE};
  uint8_t src[8192], chunk[8192 + 32], out[8192];
  int32_t n = make_chunk(codec, shuffle, chunk, sizeof chunk, src, sizeof src);
  int rejected = 0, wrong = 0, tries = 0;
  uint32_t x = 12345;
  for (int t = 0; t < 3000; t++) {
    uint8_t *copy = malloc((size_t)n);
    int32_t pos = t < 32 * 8 ? t / 8 : (int32_t)((x = x * 1664525u + 1013904223u) % (uint32_t)n);
    memcpy(copy, chunk, (size_t)n);
    copy[pos] ^= (uint8_t)(1u << (t % 8));
    tries++;
    if (decode_all_ways(copy, (size_t)n, out, sizeof out) < 0) rejected++;
    else if (memcmp(out, src, sizeof src) != 0) wrong++;
    free(copy);
  }
  /* Blosc2 chunks carry no checksum, so a flip inside a raw stream yields other bytes; what
   * matters is that nothing crashes and structural damage is caught. */
  tap_ok(rejected > 0, "%s: %d bit flips, %d rejected, %d decoded to other bytes, no crash", name,
         tries, rejected, wrong);
}

static void put32(uint8_t *p, int32_t v) { cat_put_le32(p, (uint32_t)v); }

static void test_lying_headers(void) {
  static const uint8_t shuffle[6] = {0, 0, 0, 0, 0, CATERVA_SHUFFLE};
  uint8_t src[4096], good[4096 + 32], c[4096 + 64], out[4096];
  int32_t n = make_chunk(CATERVA_LZ4, shuffle, good, sizeof good, src, sizeof src);
  struct {
    const char *what;
    int off, size;
    int32_t value;
    int expect;
  } lies[] = {
      {"nbytes negative", 4, 4, -5, CATERVA_E_CORRUPT},
      {"nbytes huge", 4, 4, INT32_MAX, CATERVA_E_CORRUPT},
      {"blocksize zero", 8, 4, 0, CATERVA_E_CORRUPT},
      {"blocksize negative", 8, 4, -1, CATERVA_E_CORRUPT},
      {"blocksize 1: block table beyond cbytes", 8, 4, 1, CATERVA_E_CORRUPT},
      {"cbytes beyond buffer", 12, 4, 1 << 20, CATERVA_E_CORRUPT},
      {"cbytes below header", 12, 4, 31, CATERVA_E_CORRUPT},
      {"bstart 0", 32, 4, 0, CATERVA_E_CORRUPT},
      {"bstart beyond cbytes", 32, 4, 1 << 20, CATERVA_E_CORRUPT},
      {"bstart negative", 32, 4, -40, CATERVA_E_CORRUPT},
      {"version 1", 0, 1, 1, CATERVA_E_CORRUPT},
      {"version 6 (variable-length blocks)", 0, 1, 6, CATERVA_E_UNSUPPORTED},
      {"codec format 2 (snappy)", 2, 1, 0x05 | (2 << 5), CATERVA_E_UNSUPPORTED},
      {"codec format 6 with unknown compcode 99", 22, 1, 99, CATERVA_E_UNSUPPORTED},
      {"special kind 5", 31, 1, 0x50, CATERVA_E_CORRUPT},
      {"unknown filter 99", 21, 1, 99, CATERVA_E_UNSUPPORTED},
      /* Without both extended bits the chunk reads as Blosc 1.x: its block table would start
       * at byte 16, inside what is really the extended header (filters 0: bstart 0). */
      {"extended bits cleared: a Blosc 1.x chunk whose block table is wrong", 2, 1, 0x20,
       CATERVA_E_CORRUPT},
      {"memcpyed with cbytes != nbytes + 32", 2, 1, 0x27, CATERVA_E_CORRUPT},
      {"dictionary flag without a valid size", 31, 1, 0x01, CATERVA_E_CORRUPT},
  };
  tap_ok(n > 0 && n < 4096 && !(good[2] & 0x02), "compressed lz4 chunk for header lies (%d bytes)", n);
  for (size_t i = 0; i < sizeof lies / sizeof *lies; i++) {
    memcpy(c, good, (size_t)n);
    if (lies[i].size == 4) put32(c + lies[i].off, lies[i].value);
    else c[lies[i].off] = (uint8_t)lies[i].value;
    if (lies[i].off == 22) c[2] = 0x05 | (6 << 5);
    int rc = caterva_chunk_decompress(ctx, c, (size_t)n, out, sizeof out);
    tap_ok(rc == lies[i].expect, "%s: %d (%s)", lies[i].what, rc, caterva_ctx_errmsg(ctx));
  }
  /* Stream-level lies in the first block's first stream. */
  {
    int32_t bstart = cat_le32s(good + 32);
    memcpy(c, good, (size_t)n);
    put32(c + bstart, -256);
    tap_ok(caterva_chunk_decompress(ctx, c, (size_t)n, out, sizeof out) == CATERVA_E_CORRUPT,
           "run of byte 256 rejected");
    put32(c + bstart, -7);
    c[bstart + 4] = 0x02;
    tap_ok(caterva_chunk_decompress(ctx, c, (size_t)n, out, sizeof out) == CATERVA_E_CORRUPT,
           "run token without bit 0 rejected");
    put32(c + bstart, n);
    tap_ok(caterva_chunk_decompress(ctx, c, (size_t)n, out, sizeof out) == CATERVA_E_CORRUPT,
           "stream longer than the chunk rejected");
  }
  tap_ok(caterva_chunk_decompress(ctx, good, (size_t)n, out, 100) == CATERVA_E_NOSPACE,
         "short output buffer reported, nothing written past it");
  {
    int32_t blk = 5;
    tap_ok(caterva_chunk_decompress_blocks(ctx, good, (size_t)n, &blk, 1, out, sizeof out) ==
               CATERVA_E_RANGE,
           "block number out of range rejected");
  }
  tap_ok(caterva_chunk_decompress(ctx, NULL, 0, out, sizeof out) == CATERVA_E_CORRUPT,
         "NULL chunk rejected");
}

/* ---- Blosc 1.x chunks (16-byte header) ----------------------------------------------------
 * Made from our Blosc2 chunks: header cut to 16 bytes, filters into the flags, block starts
 * moved by -16 (typesize 4 and 1024-byte blocks: the version-2 split rule agrees). */
static int32_t make_blosc1(int codec, uint8_t shuffle_flag, uint8_t *dst, uint8_t *src,
                           int32_t n) {
  static const uint8_t shuffle[6] = {0, 0, 0, 0, 0, CATERVA_SHUFFLE};
  static const uint8_t none[6] = {0, 0, 0, 0, 0, 0};
  uint8_t b2[8192 + 64];
  caterva_chunk_info ci;
  int32_t cb = make_chunk(codec, shuffle_flag ? shuffle : none, b2, sizeof b2, src, n);
  if (cb <= 0 || caterva_chunk_info_get(b2, (size_t)cb, &ci) < 0 || ci.special) return -1;
  memcpy(dst, b2, 16);
  dst[0] = 2;
  dst[2] = (uint8_t)((b2[2] & 0xf2) | shuffle_flag);
  cat_put_le32(dst + 12, (uint32_t)(cb - 16));
  memcpy(dst + 16, b2 + 32, (size_t)cb - 32);
  for (int32_t j = 0; !ci.memcpyed && j < ci.nblocks; j++)
    cat_put_le32(dst + 16 + 4 * j, (uint32_t)(cat_le32s(b2 + 32 + 4 * j) - 16));
  return cb - 16;
}

static void test_blosc1_damage(int codec, const char *name) {
  uint8_t src[8192], chunk[8192 + 64], out[8192];
  int32_t n = make_blosc1(codec, 0x01, chunk, src, sizeof src);
  int bad = 0, rejected = 0, tries = 0;
  uint32_t x = 777;
  caterva_chunk_info ci;
  tap_ok(n > 0 && caterva_chunk_info_get(chunk, (size_t)n, &ci) == 0 && ci.header_size == 16 &&
             caterva_chunk_decompress(ctx, chunk, (size_t)n, out, sizeof out) == (int)sizeof out &&
             memcmp(out, src, sizeof src) == 0,
         "Blosc 1.x %s chunk (flags 0x%02x) decodes", name, n > 0 ? chunk[2] : 0);
  for (int32_t len = 0; len < n; len++) {
    uint8_t *copy = malloc((size_t)len + 1);
    memcpy(copy, chunk, (size_t)len);
    if (decode_all_ways(copy, (size_t)len, out, sizeof out) >= 0) bad++;
    free(copy);
  }
  tap_ok(n > 0 && bad == 0, "Blosc 1.x %s: every truncation (%d lengths) is rejected", name, n);
  for (int t = 0; t < 2000; t++) {
    uint8_t *copy = malloc((size_t)n);
    int32_t pos = t < 16 * 8 ? t / 8 : (int32_t)((x = x * 1664525u + 1013904223u) % (uint32_t)n);
    memcpy(copy, chunk, (size_t)n);
    copy[pos] ^= (uint8_t)(1u << (t % 8));
    tries++;
    if (decode_all_ways(copy, (size_t)n, out, sizeof out) < 0) rejected++;
    free(copy);
  }
  tap_ok(rejected > 0, "Blosc 1.x %s: %d bit flips, %d rejected, no crash", name, tries,
         rejected);
}

static void test_blosc1_lies(void) {
  uint8_t src[4096], good[4096 + 64], c[4096 + 64], out[8192];
  int32_t n = make_blosc1(CATERVA_LZ4, 0x01, good, src, sizeof src);
  struct {
    const char *what;
    int off, size;
    int32_t value;
    int expect;
    const char *msg;
  } lies[] = {
      {"nbytes negative", 4, 4, -5, CATERVA_E_CORRUPT, "negative nbytes"},
      {"nbytes larger than the blocks", 4, 4, 4096 + 1024, CATERVA_E_CORRUPT, NULL},
      {"nbytes smaller: streams longer than the blocks", 4, 4, 3000, CATERVA_E_CORRUPT, NULL},
      {"blocksize zero", 8, 4, 0, CATERVA_E_CORRUPT, "blocksize"},
      {"blocksize 1: block table beyond cbytes", 8, 4, 1, CATERVA_E_CORRUPT, "block table"},
      {"blocksize 2048: streams do not decode", 8, 4, 2048, CATERVA_E_CORRUPT, NULL},
      {"cbytes beyond buffer", 12, 4, 1 << 20, CATERVA_E_CORRUPT, "beyond the buffer"},
      {"cbytes below header", 12, 4, 15, CATERVA_E_CORRUPT, "below the 16-byte header"},
      {"cbytes cuts the last stream", 12, 4, n - 1, CATERVA_E_CORRUPT, NULL},
      {"typesize 0", 3, 1, 0, CATERVA_E_CORRUPT, "typesize 0"},
      {"typesize 8: other streams", 3, 1, 8, CATERVA_E_CORRUPT, NULL},
      {"bstart 0", 16, 4, 0, CATERVA_E_CORRUPT, NULL},
      {"bstart inside the block table", 16, 4, 20, CATERVA_E_CORRUPT, NULL},
      {"bstart beyond cbytes", 16, 4, 1 << 20, CATERVA_E_CORRUPT, NULL},
      {"bstart negative", 16, 4, -40, CATERVA_E_CORRUPT, NULL},
      {"version 1", 0, 1, 1, CATERVA_E_CORRUPT, "unknown version"},
      {"version 6", 0, 1, 6, CATERVA_E_CORRUPT, "unknown version"},
      {"version 2 with flag 0x08", 2, 1, 0x21 | 0x08, CATERVA_E_UNSUPPORTED, "0x08"},
      {"codec format 5", 2, 1, 0x01 | (5 << 5), CATERVA_E_UNSUPPORTED, "unknown codec"},
      {"codec format 7", 2, 1, 0x01 | (7 << 5), CATERVA_E_UNSUPPORTED, "unknown codec"},
      {"lz4 streams read as zlib", 2, 1, 0x01 | (3 << 5), CATERVA_E_CORRUPT, NULL},
      {"memcpyed with cbytes != nbytes + 16", 2, 1, 0x23, CATERVA_E_CORRUPT, "nbytes + 16"},
      {"bitshuffle instead of shuffle", 2, 1, 0x24, -1, NULL},
  };
  tap_ok(n > 0 && !(good[2] & 0x02) && good[0] == 2, "Blosc 1.x lz4 chunk for header lies (%d bytes)",
         n);
  for (size_t i = 0; i < sizeof lies / sizeof *lies; i++) {
    int rc;
    memcpy(c, good, (size_t)n);
    if (lies[i].size == 4) put32(c + lies[i].off, lies[i].value);
    else c[lies[i].off] = (uint8_t)lies[i].value;
    rc = caterva_chunk_decompress(ctx, c, (size_t)n, out, sizeof out);
    if (lies[i].expect == -1) /* a flag that changes the filter: other bytes, no error */
      tap_ok(rc == (int)sizeof src && memcmp(out, src, sizeof src) != 0, "%s: %d", lies[i].what,
             rc);
    else
      tap_ok(rc == lies[i].expect &&
                 (lies[i].msg == NULL || strstr(caterva_ctx_errmsg(ctx), lies[i].msg) != NULL),
             "%s: %d (%s)", lies[i].what, rc, caterva_ctx_errmsg(ctx));
  }
  /* A snappy chunk: garbage streams are corrupt with libsnappy, unsupported without it. */
  memcpy(c, good, (size_t)n);
  c[2] = 0x01 | (2 << 5);
  {
    int rc = caterva_chunk_decompress(ctx, c, (size_t)n, out, sizeof out);
    if (cat_codec_available(CATERVA_SNAPPY))
      tap_ok(rc == CATERVA_E_CORRUPT, "snappy chunk with lz4 streams: %d (%s)", rc,
             caterva_ctx_errmsg(ctx));
    else
      tap_ok(rc == CATERVA_E_UNSUPPORTED &&
                 strstr(caterva_ctx_errmsg(ctx), "built without snappy") != NULL,
             "snappy chunk in a build without snappy: %d (%s)", rc, caterva_ctx_errmsg(ctx));
  }
  /* A memcpyed snappy chunk needs no codec. */
  memcpy(c, good, 16);
  c[2] = 0x02 | (2 << 5);
  put32(c + 12, 16 + 64);
  put32(c + 4, 64);
  memcpy(c + 16, src, 64);
  tap_ok(caterva_chunk_decompress(ctx, c, 80, out, sizeof out) == 64 && memcmp(out, src, 64) == 0,
         "memcpyed snappy chunk reads in any build");
  /* nbytes 0: c-blosc 1.x writes a header-only memcpyed chunk with blocksize 1. */
  {
    static const uint8_t empty[16] = {2, 1, 0x12, 8, 0, 0, 0, 0, 1, 0, 0, 0, 16, 0, 0, 0};
    caterva_chunk_info ci;
    tap_ok(caterva_chunk_info_get(empty, 16, &ci) == 0 && ci.nbytes == 0 && ci.nblocks == 0 &&
               caterva_chunk_decompress(ctx, empty, 16, out, 0) == 0,
           "empty Blosc 1.x chunk");
    tap_ok(caterva_chunk_decompress(ctx, empty, 15, out, 0) == CATERVA_E_CORRUPT,
           "15 bytes: shorter than the Blosc 1.x header");
  }
}

int main(void) {
  static const int codecs[] = {CATERVA_BLOSCLZ, CATERVA_LZ4, CATERVA_LZ4HC, CATERVA_ZLIB,
                               CATERVA_ZSTD};
  if (caterva_ctx_new(1, &ctx) < 0) return 1;
  for (size_t i = 0; i < sizeof codecs / sizeof *codecs; i++) {
    test_truncation(codecs[i], cat_codec_name(codecs[i]));
    test_bitflips(codecs[i], cat_codec_name(codecs[i]));
  }
  test_lying_headers();
  for (size_t i = 0; i < sizeof codecs / sizeof *codecs; i++)
    test_blosc1_damage(codecs[i], cat_codec_name(codecs[i]));
  test_blosc1_lies();
  caterva_ctx_free(ctx);
  return tap_done();
}
