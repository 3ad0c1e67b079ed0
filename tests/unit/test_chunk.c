/*
 * test_chunk.c -- chunk round trips: every codec x filter pipeline x typesize x size x
 * nthreads; single-block and item-range decoding against whole-chunk decoding; special and
 * memcpyed chunks; identical output for any number of threads.
 */
#include "cat_internal.h"
#include "chunk_format_internal.h"
#include "tap.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

static const int codecs[] = {CATERVA_BLOSCLZ, CATERVA_LZ4, CATERVA_LZ4HC, CATERVA_ZLIB,
                             CATERVA_ZSTD};
static const int typesizes[] = {1, 2, 3, 4, 8, 16};
static const int32_t sizes[] = {0, 1, 31, 32, 100, 1003, 4096, 70001};

typedef struct pipeline {
  const char *name;
  uint8_t filters[CATERVA_MAX_FILTERS];
  uint8_t meta[CATERVA_MAX_FILTERS];
} pipeline;

static const pipeline pipelines[] = {
    {"nofilter", {0}, {0}},
    {"shuffle", {0, 0, 0, 0, 0, CATERVA_SHUFFLE}, {0}},
    {"bitshuffle", {0, 0, 0, 0, 0, CATERVA_BITSHUFFLE}, {0}},
    {"delta+shuffle", {0, 0, 0, 0, CATERVA_DELTA, CATERVA_SHUFFLE}, {0}},
    {"delta", {0, 0, 0, 0, 0, CATERVA_DELTA}, {0}},
    {"shuffle+bytedelta", {0, 0, 0, 0, CATERVA_SHUFFLE, CATERVA_BYTEDELTA}, {0}},
    {"delta+bitshuffle", {0, 0, 0, 0, CATERVA_DELTA, CATERVA_BITSHUFFLE}, {0}},
};

/* Deterministic data with structure: a slow ramp in every element, some noise, some runs. */
static void fill(uint8_t *p, int32_t n, int ts, unsigned seed) {
  uint32_t x = seed * 2654435761u + 1;
  for (int32_t i = 0; i < n; i++) {
    int32_t e = i / ts, b = i % ts;
    x = x * 1103515245u + 12345u;
    if ((e / 97) % 5 == 3) p[i] = 0;                     /* zero runs */
    else if (b == 0) p[i] = (uint8_t)(e * 3 + (x >> 29)); /* low byte: ramp + noise */
    else p[i] = b < 4 ? (uint8_t)((e >> (8 * b)) & 0xff) : 0; /* high bytes: slow */
  }
}

typedef struct counters {
  int cases, failures;
} counters;

static caterva_ctx *ctx1, *ctx2;
static int planes_hits; /* items read from byte planes (cat_chunk_items_planes) */

/* Items read from the byte planes agree with the source: the first, a middle and the last
 * item of every block, alone and with the next; 0 (another layout) is allowed only where
 * the chunk is not a plain shuffle of its typesize. */
static bool items_planes_ok(const caterva_cparams *cp, const caterva_chunk_info *ci,
                            const uint8_t *c, int32_t cbytes, const uint8_t *src, char *why,
                            size_t whylen) {
  int32_t ts = cp->typesize, nitems = ci->nbytes / ts;
  bool plain_shuffle = ts > 1 && !ci->memcpyed && ci->special == CATERVA_SPECIAL_NONE;
  uint8_t got[2 * 16];
  for (int k = 0; k < CATERVA_MAX_FILTERS; k++)
    if (cp->filters[k] != CATERVA_NOFILTER && cp->filters[k] != CATERVA_SHUFFLE)
      plain_shuffle = false;
  plain_shuffle = plain_shuffle && cat_has_filter(cp->filters, CATERVA_SHUFFLE);
  for (int32_t j = 0; j < ci->nblocks; j++) {
    int32_t first = j * (ci->blocksize / ts), bsize = cat_block_size(ci, j);
    int32_t at[3] = {first, first + bsize / ts / 2, first + bsize / ts - 1};
    for (int a = 0; a < 3; a++)
      for (int32_t n = 1; n <= 2; n++) {
        int rc;
        if (at[a] < 0 || at[a] + n > nitems || bsize % ts != 0 || ci->blocksize % ts != 0 ||
            (at[a] + n - 1) / (ci->blocksize / ts) != j)
          continue;
        rc = cat_chunk_items_planes(ctx1, c, (size_t)cbytes, at[a], n, got);
        if (rc < 0 || (rc == 0 && plain_shuffle) ||
            (rc == 1 && memcmp(got, src + (size_t)at[a] * ts, (size_t)(n * ts)) != 0)) {
          snprintf(why, whylen, "items_planes block %d item %d n %d: %d", j, at[a], n, rc);
          return false;
        }
        planes_hits += rc;
      }
  }
  return true;
}

/* Round trip one configuration; returns true when every check holds. */
static bool roundtrip(const caterva_cparams *cp, const uint8_t *src, int32_t n, char *why,
                      size_t whylen) {
  int32_t cap = n + CATERVA_CHUNK_MAX_OVERHEAD;
  uint8_t *c1 = malloc((size_t)cap + 1), *c2 = malloc((size_t)cap + 1);
  uint8_t *out = malloc((size_t)n + 1), *blk = NULL;
  caterva_chunk_info ci;
  bool ok = false;
  int32_t n1, n2, d;

  n1 = caterva_chunk_compress(ctx1, cp, src, n, c1, cap);
  n2 = caterva_chunk_compress(ctx2, cp, src, n, c2, cap);
  if (n1 <= 0 || n2 != n1 || memcmp(c1, c2, (size_t)n1) != 0) {
    snprintf(why, whylen, "compress: %d vs %d threads=2 (%s)", n1, n2, caterva_ctx_errmsg(ctx1));
    goto done;
  }
  if (caterva_chunk_info_get(c1, (size_t)n1, &ci) < 0 || ci.nbytes != n || ci.cbytes != n1) {
    snprintf(why, whylen, "info");
    goto done;
  }
  for (int t = 0; t < 2; t++) {
    memset(out, 0xAA, (size_t)n + 1);
    d = caterva_chunk_decompress(t ? ctx2 : ctx1, c1, (size_t)n1, out, n);
    if (d != n || memcmp(out, src, (size_t)n) != 0 || out[n] != 0xAA) {
      snprintf(why, whylen, "decompress nthreads=%d: %d (%s)", t + 1, d,
               caterva_ctx_errmsg(t ? ctx2 : ctx1));
      goto done;
    }
  }
  if (ci.special == CATERVA_SPECIAL_NONE && ci.nblocks > 0) {
    /* Every block alone, then the blocks in reverse order as one set. */
    int32_t *list = malloc((size_t)ci.nblocks * sizeof *list);
    blk = malloc((size_t)ci.nblocks * (size_t)ci.blocksize);
    for (int32_t j = 0; j < ci.nblocks; j++) {
      int32_t bs = (j + 1) * ci.blocksize > n ? n - j * ci.blocksize : ci.blocksize;
      int64_t r = caterva_chunk_decompress_blocks(ctx1, c1, (size_t)n1, &j, 1, blk, (size_t)bs);
      if (r != bs || memcmp(blk, src + (size_t)j * ci.blocksize, (size_t)bs) != 0) {
        snprintf(why, whylen, "block %d alone: %lld", j, (long long)r);
        free(list);
        goto done;
      }
      list[j] = ci.nblocks - 1 - j;
    }
    int64_t r = caterva_chunk_decompress_blocks(ctx2, c1, (size_t)n1, list, ci.nblocks, blk,
                                                (size_t)ci.nblocks * (size_t)ci.blocksize);
    for (int32_t i = 0; i < ci.nblocks && r == n; i++) {
      int32_t j = list[i];
      int32_t bs = (j + 1) * ci.blocksize > n ? n - j * ci.blocksize : ci.blocksize;
      if (memcmp(blk + (size_t)i * ci.blocksize, src + (size_t)j * ci.blocksize, (size_t)bs))
        r = -1000;
    }
    free(list);
    if (r != n) {
      snprintf(why, whylen, "reverse block set: %lld", (long long)r);
      goto done;
    }
  }
  if (!items_planes_ok(cp, &ci, c1, n1, src, why, whylen)) goto done;
  if (n >= cp->typesize * 3) {
    int32_t nitems = n / cp->typesize, start = nitems / 3, cnt = nitems / 2;
    d = caterva_chunk_getitems(ctx1, c1, (size_t)n1, start, cnt, out, n);
    if (d != cnt * cp->typesize ||
        memcmp(out, src + (size_t)start * cp->typesize, (size_t)d) != 0) {
      snprintf(why, whylen, "getitems: %d", d);
      goto done;
    }
  }
  ok = true;
done:
  free(c1);
  free(c2);
  free(out);
  free(blk);
  return ok;
}

static void test_matrix(void) {
  int clevel_cycle = 0;
  for (size_t c = 0; c < sizeof codecs / sizeof *codecs; c++) {
    for (size_t f = 0; f < sizeof pipelines / sizeof *pipelines; f++) {
      counters k = {0, 0};
      char why[256] = "";
      for (size_t t = 0; t < sizeof typesizes / sizeof *typesizes; t++) {
        for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
          for (int bmode = 0; bmode < 2; bmode++) {
            caterva_cparams cp;
            int32_t n = sizes[s];
            uint8_t *src = malloc((size_t)n + 1);
            caterva_cparams_init(&cp);
            cp.codec = codecs[c];
            cp.clevel = 1 + (clevel_cycle++ % 9);
            /* zstd at its top levels is slow on big inputs; cover 8-9 on small ones. */
            if (cp.codec == CATERVA_ZSTD && n > 5000 && cp.clevel > 7) cp.clevel = 3;
            cp.typesize = typesizes[t];
            memcpy(cp.filters, pipelines[f].filters, sizeof cp.filters);
            memcpy(cp.filters_meta, pipelines[f].meta, sizeof cp.filters_meta);
            /* explicit small blocks (not a multiple of typesize for odd sizes), or automatic */
            cp.blocksize = bmode ? 256 + 7 * (typesizes[t] % 2) : 0;
            fill(src, n, cp.typesize, (unsigned)(c * 100 + f * 10 + t + s));
            k.cases++;
            char one[200];
            if (!roundtrip(&cp, src, n, one, sizeof one)) {
              if (!k.failures)
                snprintf(why, sizeof why, "ts=%d n=%d blocksize=%d clevel=%d: %s", cp.typesize, n,
                         cp.blocksize, cp.clevel, one);
              k.failures++;
            }
            free(src);
          }
        }
      }
      tap_ok(k.failures == 0, "%s + %s: %d round trips (%s)", cat_codec_name(codecs[c]),
             pipelines[f].name, k.cases, k.failures ? why : "ok");
    }
  }
}

/* Split rule and stream layout: blosclz+shuffle at typesize 4 splits into 4 streams. */
static void test_split_rule(void) {
  caterva_cparams cp;
  uint8_t src[4096], chunk[4096 + 64];
  caterva_chunk_info ci;
  int32_t n;
  fill(src, sizeof src, 4, 7);
  caterva_cparams_init(&cp);
  cp.codec = CATERVA_BLOSCLZ;
  cp.typesize = 4;
  cp.blocksize = 1024;
  n = caterva_chunk_compress(ctx1, &cp, src, sizeof src, chunk, sizeof chunk);
  tap_ok(n > 0 && caterva_chunk_info_get(chunk, (size_t)n, &ci) == 0 && ci.split &&
             (chunk[2] & 0x10) == 0 && chunk[2] >> 5 == 0,
         "blosclz + shuffle, typesize 4: split flag, format id 0 (flags 0x%02x)", chunk[2]);
  cp.codec = CATERVA_LZ4HC;
  n = caterva_chunk_compress(ctx1, &cp, src, sizeof src, chunk, sizeof chunk);
  tap_ok(n > 0 && (chunk[2] & 0x10) && chunk[2] >> 5 == 1 && chunk[22] == 2,
         "lz4hc never splits; format id 1, compcode 2 at 0x16 (flags 0x%02x)", chunk[2]);
  cp.codec = CATERVA_ZSTD;
  cp.clevel = 6;
  n = caterva_chunk_compress(ctx1, &cp, src, sizeof src, chunk, sizeof chunk);
  tap_ok(n > 0 && (chunk[2] & 0x10) && chunk[2] >> 5 == 4, "zstd clevel 6 does not split");
  cp.clevel = 5;
  cp.filters[5] = CATERVA_BITSHUFFLE;
  n = caterva_chunk_compress(ctx1, &cp, src, sizeof src, chunk, sizeof chunk);
  tap_ok(n > 0 && (chunk[2] & 0x10), "bitshuffle alone does not split");
  cp.splitmode = CATERVA_SPLIT_ALWAYS;
  n = caterva_chunk_compress(ctx1, &cp, src, sizeof src, chunk, sizeof chunk);
  tap_ok(n > 0 && !(chunk[2] & 0x10), "ALWAYS splits");
}

static void test_special(void) {
  uint8_t chunk[64], out[800];
  double v = 3.25, d[100];
  float fl[200];
  int32_t n;
  bool all = true;

  n = caterva_chunk_make_special(CATERVA_SPECIAL_VALUE, 800, 8, 0, &v, chunk, sizeof chunk);
  tap_ok(n == 40 && caterva_chunk_decompress(ctx1, chunk, (size_t)n, d, 800) == 800,
         "repeated-value chunk is 32+8 bytes and decodes");
  for (int i = 0; i < 100; i++) all = all && d[i] == 3.25;
  tap_ok(all, "repeated value reproduced");
  n = caterva_chunk_make_special(CATERVA_SPECIAL_NAN, 800, 4, 0, NULL, chunk, sizeof chunk);
  all = n == 32 && caterva_chunk_decompress(ctx1, chunk, (size_t)n, fl, 800) == 800;
  for (int i = 0; i < 200; i++) all = all && isnan(fl[i]);
  tap_ok(all, "NaN chunk decodes to NaN float32");
  tap_ok(caterva_chunk_make_special(CATERVA_SPECIAL_NAN, 800, 2, 0, NULL, chunk, 64) < 0,
         "NaN chunk needs typesize 4 or 8");
  memset(out, 0x55, sizeof out);
  n = caterva_chunk_make_special(CATERVA_SPECIAL_ZERO, 800, 4, 0, NULL, chunk, sizeof chunk);
  all = n == 32 && caterva_chunk_getitems(ctx1, chunk, 32, 10, 20, out, 80) == 80;
  for (int i = 0; i < 80; i++) all = all && out[i] == 0;
  tap_ok(all, "getitems on a zero chunk");

  /* A repeated value of 7 distinct bytes, read whole (1 MB: the fill's copies double up to
   * a size that is no power of two), by blocks starting out of the value's phase (blocksize
   * 100) and by items from an odd start. */
  {
    static const uint8_t pat[7] = {1, 2, 3, 4, 5, 6, 7};
    int32_t nb = 7 * 149797, blk[2] = {1, 3};
    uint8_t sp[64], *whole = malloc((size_t)nb), part[200], items[7 * 40];
    bool ok = whole != NULL;
    n = caterva_chunk_make_special(CATERVA_SPECIAL_VALUE, nb, 7, 0, pat, sp, sizeof sp);
    ok = ok && n == 39 && caterva_chunk_decompress(ctx1, sp, (size_t)n, whole, nb) == nb;
    for (int32_t i = 0; ok && i < nb; i++) ok = whole[i] == pat[i % 7];
    tap_ok(ok, "repeated 7-byte value: %d bytes decoded, every byte in its place", nb);
    free(whole);
    n = caterva_chunk_make_special(CATERVA_SPECIAL_VALUE, 700, 7, 100, pat, sp, sizeof sp);
    ok = n == 39 &&
         caterva_chunk_decompress_blocks(ctx1, sp, (size_t)n, blk, 2, part, sizeof part) == 200;
    for (int k = 0; ok && k < 200; k++) ok = part[k] == pat[(100 * blk[k / 100] + k % 100) % 7];
    tap_ok(ok, "repeated 7-byte value: blocks 1 and 3 of 100 bytes, out of the value's phase");
    ok = caterva_chunk_getitems(ctx1, sp, (size_t)n, 13, 40, items, sizeof items) == 280;
    for (int k = 0; ok && k < 280; k++) ok = items[k] == pat[k % 7];
    tap_ok(ok, "repeated 7-byte value: 40 items from item 13");
  }

  /* All-zero data collapses to a special zero chunk. */
  {
    caterva_cparams cp;
    uint8_t zeros[5000] = {0}, big[5000 + 32];
    caterva_chunk_info ci;
    caterva_cparams_init(&cp);
    n = caterva_chunk_compress(ctx1, &cp, zeros, sizeof zeros, big, sizeof big);
    tap_ok(n == 32 && caterva_chunk_info_get(big, 32, &ci) == 0 &&
               ci.special == CATERVA_SPECIAL_ZERO && big[31] == 0x10,
           "all-zero buffer becomes a 32-byte special-zero chunk");
  }
}

static void test_memcpyed(void) {
  caterva_cparams cp;
  uint8_t src[3000], chunk[3100], out[3000];
  uint32_t x = 99;
  int32_t n;
  for (size_t i = 0; i < sizeof src; i++) src[i] = (uint8_t)((x = x * 1664525u + 1013904223u) >> 24);
  caterva_cparams_init(&cp);
  cp.clevel = 0;
  n = caterva_chunk_compress(ctx1, &cp, src, sizeof src, chunk, sizeof chunk);
  tap_ok(n == 3032 && (chunk[2] & 0x02) && memcmp(chunk + 32, src, 3000) == 0,
         "clevel 0 stores the bytes unfiltered after the header");
  cp.clevel = 5;
  cp.typesize = 1;
  n = caterva_chunk_compress(ctx1, &cp, src, sizeof src, chunk, sizeof chunk);
  tap_ok(n > 0 && n <= 3032 && caterva_chunk_decompress(ctx1, chunk, (size_t)n, out, 3000) == 3000 &&
             memcmp(out, src, 3000) == 0,
         "incompressible data never grows beyond nbytes + 32 (%d)", n);
  tap_ok(caterva_chunk_compress(ctx1, &cp, src, sizeof src, chunk, 100) == CATERVA_E_NOSPACE,
         "too small an output buffer is reported");
  n = caterva_chunk_compress(ctx1, &cp, src, 10, chunk, sizeof chunk);
  tap_ok(n == 42 && (chunk[2] & 0x02), "inputs under 32 bytes are memcpyed");
}

static void test_bad_params(void) {
  caterva_cparams cp;
  uint8_t src[64] = {0}, chunk[128];
  caterva_cparams_init(&cp);
  cp.codec = 3;
  tap_ok(caterva_chunk_compress(ctx1, &cp, src, 64, chunk, 128) == CATERVA_E_UNSUPPORTED &&
             strstr(caterva_ctx_errmsg(ctx1), "codec") != NULL,
         "unknown codec rejected with a message: %s", caterva_ctx_errmsg(ctx1));
  caterva_cparams_init(&cp);
  cp.clevel = 10;
  tap_ok(caterva_chunk_compress(ctx1, &cp, src, 64, chunk, 128) == CATERVA_E_INVALID,
         "clevel 10 rejected");
  caterva_cparams_init(&cp);
  cp.typesize = 2;
  cp.filters[0] = CATERVA_TRUNC_PREC;
  tap_ok(caterva_chunk_compress(ctx1, &cp, src, 64, chunk, 128) == CATERVA_E_INVALID,
         "trunc_prec on typesize 2 rejected");
  caterva_cparams_init(&cp);
  cp.filters[2] = 200;
  tap_ok(caterva_chunk_compress(ctx1, &cp, src, 64, chunk, 128) == CATERVA_E_UNSUPPORTED,
         "unknown filter rejected");
}

/* TRUNC_PREC is lossy: the result equals the input with low mantissa bits cleared. */
static void test_trunc_prec(void) {
  caterva_cparams cp;
  double in[1000], out[1000];
  uint8_t chunk[8000 + 32];
  int32_t n;
  bool ok = true;
  for (int i = 0; i < 1000; i++) in[i] = sin(i * 0.01) * 1000.0;
  caterva_cparams_init(&cp);
  cp.typesize = 8;
  cp.filters[4] = CATERVA_TRUNC_PREC;
  cp.filters_meta[4] = 20; /* keep 20 mantissa bits */
  n = caterva_chunk_compress(ctx1, &cp, in, sizeof in, chunk, sizeof chunk);
  ok = n > 0 && caterva_chunk_decompress(ctx1, chunk, (size_t)n, out, sizeof out) == sizeof out;
  for (int i = 0; i < 1000 && ok; i++) {
    uint64_t a, b;
    memcpy(&a, &in[i], 8);
    memcpy(&b, &out[i], 8);
    ok = b == (a & ~((UINT64_C(1) << 32) - 1));
  }
  tap_ok(ok, "trunc_prec 20 on float64 clears the 32 low mantissa bits");
}

int main(void) {
  if (caterva_ctx_new(1, &ctx1) < 0 || caterva_ctx_new(2, &ctx2) < 0) return 1;
  test_matrix();
  tap_ok(planes_hits > 1000, "%d item reads from byte planes agreed with the source", planes_hits);
  test_split_rule();
  test_special();
  test_memcpyed();
  test_bad_params();
  test_trunc_prec();
  caterva_ctx_free(ctx1);
  caterva_ctx_free(ctx2);
  return tap_done();
}
