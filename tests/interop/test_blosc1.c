/*
 * test_blosc1.c -- Blosc 1.x chunks (16-byte header) written by the real c-blosc 1.x
 * (Debian's libblosc, linked by this test only) decode byte-exactly with our decoder, whole,
 * block by block and by item range.
 *
 * Matrix: codecs (every one libblosc lists) x noshuffle/shuffle/bitshuffle x typesizes
 * 1,2,3,4,8,16 x clevels 0-9 x sizes from 0 bytes to several MB x forced blocksizes x split
 * modes, on data that compresses well, badly and not at all. make check runs the matrix in
 * full on the small sizes and thinned on the large ones; BLOSC1_FULL=1 (make check-blosc1-full)
 * runs every combination at every size.
 *
 * Also: chunks in the form c-blosc2's Blosc1-compatible API writes (version 3, 4, 5 with the
 * 16-byte header), and chunks from before the dont-split flag (version 2, bit clear, not split).
 */
#include "cat_internal.h"
#include "tap.h"

#include <blosc.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

/* Exported by libblosc 1.21 but missing from Debian's blosc.h. */
void blosc_set_splitmode(int splitmode);

static caterva_ctx *ctx;

/* What the matrix saw, to prove it covered the interesting kinds of chunks. */
static struct {
  long chunks, bad, blocks, memcpyed, split, unsplit, bitshuffled, short_last, raw_streams;
  long lib_failed, per_codec[8];
  long snappy_refused;   /* snappy chunks refused with "built without snappy" (no libsnappy) */
} st;

static uint32_t rng = 2463534242u;
static uint32_t next_rand(void) {
  rng ^= rng << 13;
  rng ^= rng >> 17;
  rng ^= rng << 5;
  return rng;
}

/* Three kinds of content: a slowly varying series of typesize-byte items (compresses well),
 * the same with random low bytes (badly), and random bytes (not at all: raw streams). */
static void fill(uint8_t *buf, size_t n, int ts, int kind) {
  for (size_t i = 0; i < n; i++) {
    size_t item = i / (size_t)ts, byte = i % (size_t)ts;
    uint8_t smooth = byte == 0 ? (uint8_t)(item * 3) : byte == 1 ? (uint8_t)(item >> 6) : 0;
    switch (kind) {
    case 0: buf[i] = smooth; break;
    case 1: buf[i] = byte == 0 ? (uint8_t)next_rand() : smooth; break;
    default: buf[i] = (uint8_t)next_rand(); break;
    }
  }
}

/* Walk the streams of every block as the c-blosc 1.x decoder would, to count raw streams. */
static void count_raw(const uint8_t *c, const caterva_chunk_info *ci) {
  for (int32_t j = 0; j < ci->nblocks; j++) {
    int32_t bsize = j == ci->nblocks - 1 ? ci->nbytes - j * ci->blocksize : ci->blocksize;
    int32_t ns = ci->split && bsize == ci->blocksize ? ci->typesize : 1;
    int32_t pos = cat_le32s(c + 16 + 4 * j);
    for (int32_t s = 0; s < ns && pos >= 0 && pos + 4 <= ci->cbytes; s++) {
      int32_t cs = cat_le32s(c + pos);
      if (cs == bsize / ns) st.raw_streams++;
      pos += 4 + (cs > 0 ? cs : 0);
    }
  }
}

/* Our decoder on one libblosc chunk: whole, every block, and an item range. */
static bool check_chunk(const uint8_t *c, int32_t cbytes, const uint8_t *src, int32_t nbytes,
                        uint8_t *out, uint8_t *blk) {
  caterva_chunk_info ci;
  int32_t got;
  /* A build without libsnappy refuses every snappy chunk that is not memcpyed (it needs the
   * codec) with a clear error, never wrong bytes. */
  if (!cat_codec_available(CATERVA_SNAPPY) && (c[2] >> 5) == 2 && !(c[2] & 0x02) && nbytes > 0) {
    got = caterva_chunk_decompress(ctx, c, (size_t)cbytes, out, nbytes);
    if (got != CATERVA_E_UNSUPPORTED ||
        strstr(caterva_ctx_errmsg(ctx), "built without snappy") == NULL)
      return false;
    st.snappy_refused++;
    return true;
  }
  if (caterva_chunk_info_get(c, (size_t)cbytes, &ci) < 0 || ci.header_size != 16 ||
      ci.version != 2 || ci.nbytes != nbytes || ci.cbytes != cbytes)
    return false;
  got = caterva_chunk_decompress(ctx, c, (size_t)cbytes, out, nbytes);
  if (got != nbytes || (nbytes > 0 && memcmp(out, src, (size_t)nbytes) != 0)) return false;
  /* One block at a time: the first, the last and one in between (the same code decodes
   * every block of the whole chunk above). */
  for (int32_t k = 0; k < 3 && k < ci.nblocks; k++) {
    int32_t j = k == 0 ? 0 : k == 1 ? ci.nblocks - 1 : (int32_t)(next_rand() % (uint32_t)ci.nblocks);
    int64_t off = (int64_t)j * ci.blocksize, want = nbytes - off;
    if (want > ci.blocksize) want = ci.blocksize;
    if (caterva_chunk_decompress_blocks(ctx, c, (size_t)cbytes, &j, 1, blk,
                                        (size_t)ci.blocksize) != want ||
        memcmp(blk, src + off, (size_t)want) != 0)
      return false;
    st.blocks++;
  }
  if (nbytes / ci.typesize > 2) {
    int32_t nitems = nbytes / ci.typesize, start = (int32_t)(next_rand() % (uint32_t)(nitems / 2));
    int32_t count = 1 + (int32_t)(next_rand() % (uint32_t)(nitems - start - 1));
    if (caterva_chunk_getitems(ctx, c, (size_t)cbytes, start, count, out, nbytes) !=
            count * ci.typesize ||
        memcmp(out, src + (size_t)start * ci.typesize, (size_t)count * ci.typesize) != 0)
      return false;
  }
  if (ci.memcpyed) st.memcpyed++;
  else if (ci.split) st.split++;
  else st.unsplit++;
  if (!ci.memcpyed && (c[2] & 0x04)) st.bitshuffled++;
  if (!ci.memcpyed && ci.blocksize > 0 && nbytes % ci.blocksize != 0) st.short_last++;
  if (!ci.memcpyed) count_raw(c, &ci);
  return true;
}

typedef struct matrix {
  const int *clevels;
  int nclevels;
  const int *typesizes;
  int ntypesizes;
  const int *splitmodes;
  int nsplitmodes;
} matrix;

/* Every codec x shuffle x (the matrix's) typesize, clevel and split mode at one size and
 * forced blocksize. Returns the number of chunks that failed. */
static long run_size(const matrix *m, int32_t nbytes, int32_t forced, uint8_t *src, uint8_t *c,
                     uint8_t *out, uint8_t *blk) {
  static const char *codecs[] = {"blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd"};
  long bad = 0;
  for (int ti = 0; ti < m->ntypesizes; ti++) {
    int ts = m->typesizes[ti];
    fill(src, (size_t)nbytes, ts, (int)(next_rand() % 3));
    for (int ci = 0; ci < 6; ci++) {
      for (int shuf = 0; shuf < 3; shuf++) {
        for (int li = 0; li < m->nclevels; li++) {
          for (int si = 0; si < m->nsplitmodes; si++) {
            int mode = m->splitmodes[si];
            int32_t cb;
            blosc_set_splitmode(mode);
            cb = blosc_compress_ctx(m->clevels[li], shuf, (size_t)ts, (size_t)nbytes, src, c,
                                    (size_t)nbytes + 16, codecs[ci], (size_t)forced, 1);
            if (cb <= 0) {
              tap_diag("libblosc failed: %s ts %d clevel %d n %d", codecs[ci], ts,
                       m->clevels[li], (int)nbytes);
              bad++;
              continue;
            }
            /* ALWAYS_SPLIT makes c-blosc 1.x split blocks its own decoder does not split
             * (typesize > 16, < 128 items): only where it reads its chunk back must we. */
            if (mode == BLOSC_ALWAYS_SPLIT &&
                blosc_decompress_ctx(c, out, (size_t)nbytes, 1) != nbytes) {
              st.lib_failed++;
              if (caterva_chunk_decompress(ctx, c, (size_t)cb, out, nbytes) >= 0 &&
                  nbytes > 0 && memcmp(out, src, (size_t)nbytes) == 0)
                continue; /* we read what it cannot: still the right bytes */
              if (caterva_chunk_decompress(ctx, c, (size_t)cb, out, nbytes) >= 0) {
                tap_diag("wrong bytes without an error: %s ts %d n %d", codecs[ci], ts,
                         (int)nbytes);
                bad++;
              }
              continue;
            }
            st.chunks++;
            st.per_codec[ci]++;
            if (!check_chunk(c, cb, src, nbytes, out, blk)) {
              if (bad < 10)
                tap_diag("mismatch: %s shuffle %d ts %d clevel %d n %d blocksize %d split %d "
                         "flags 0x%02x (%s)", codecs[ci], shuf, ts, m->clevels[li], (int)nbytes,
                         (int)forced, mode, c[2], caterva_ctx_errmsg(ctx));
              bad++;
            }
          }
        }
      }
    }
  }
  blosc_set_splitmode(BLOSC_FORWARD_COMPAT_SPLIT);
  return bad;
}

/* Under AddressSanitizer every allocation libblosc makes per call is an mmap: the sanitizer
 * build runs a thinned matrix (clevels 0, 1, 9; blocksizes automatic and 4096), the plain
 * build the whole default one. */
#if defined(__SANITIZE_ADDRESS__)
#define SAN_THIN 1
#else
#define SAN_THIN 0
#endif

static void test_matrix(bool full) {
  static const int all_levels[] = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, few_levels[] = {0, 1, 5, 9};
  static const int san_levels[] = {0, 1, 9};
  static const int32_t san_forced[] = {0, 4096};
  static const int all_ts[] = {1, 2, 3, 4, 8, 16}, large_ts[] = {4, 8, 2};
  static const int large_levels[] = {1, 9};
  static const int all_modes[] = {BLOSC_FORWARD_COMPAT_SPLIT, BLOSC_AUTO_SPLIT,
                                  BLOSC_NEVER_SPLIT, BLOSC_ALWAYS_SPLIT};
  static const int32_t small[] = {0, 1, 15, 16, 17, 100, 127, 128, 129, 1000, 4099, 40000};
  static const int32_t large[] = {200003, 1 << 20, 4 * 1024 * 1024 + 5};
  static const int32_t forced[] = {0, 64, 512, 4096, 100000};
  matrix fullm = {all_levels, 10, all_ts, 6, all_modes, 1};
  bool thin_san = SAN_THIN && !full;
  const int32_t *forced_list = thin_san ? san_forced : forced;
  size_t nforced = thin_san ? 2 : sizeof forced / sizeof *forced;
  matrix modes = {few_levels, 4, all_ts, 6, all_modes, 4};
  /* The large sizes dominate the run time: make check gives each one typesize. */
  matrix thin = {large_levels, 2, large_ts, 1, all_modes, 1};
  int32_t maxn = large[2];
  uint8_t *src = malloc((size_t)maxn), *c = malloc((size_t)maxn + 16);
  uint8_t *out = malloc((size_t)maxn), *blk = malloc((size_t)maxn);
  long bad = 0;
  if (src == NULL || c == NULL || out == NULL || blk == NULL) abort();
  /* Below 128 bytes c-blosc 1.x stores every chunk memcpyed: one blocksize is enough. */
  if (thin_san) {
    fullm.clevels = san_levels;
    fullm.nclevels = 3;
    thin.nclevels = 1;
  }
  for (size_t i = 0; i < sizeof small / sizeof *small; i++)
    for (size_t f = 0; f < (small[i] < 128 && !full ? 1 : nforced); f++)
      bad += run_size(&fullm, small[i], forced_list[f], src, c, out, blk);
  tap_ok(bad == 0, "small sizes x forced blocksizes x every codec, shuffle, typesize, clevel%s",
         thin_san ? " (thinned under ASan)" : "");
  tap_diag("%.1f s cpu", (double)clock() / CLOCKS_PER_SEC);
  for (size_t i = 0; i < sizeof small / sizeof *small; i += 3)
    bad += run_size(&modes, small[i] * 3 + 1, 0, src, c, out, blk);
  tap_ok(bad == 0, "every split mode (forward-compat, auto, never, always)");
  tap_diag("%.1f s cpu", (double)clock() / CLOCKS_PER_SEC);
  for (size_t i = 0; i < sizeof large / sizeof *large; i++) {
    for (size_t f = 0; f < (full ? sizeof forced / sizeof *forced : 2); f++) {
      thin.typesizes = large_ts + i;
      bad += run_size(full ? &fullm : &thin, large[i], forced[f] == 64 ? 65536 : forced[f], src,
                      c, out, blk);
      if (full) bad += run_size(&modes, large[i], forced[f], src, c, out, blk);
    }
  }
  tap_ok(bad == 0, "sizes up to 4 MiB (%s matrix)", full ? "full" : "thinned");
  tap_diag("%.1f s cpu", (double)clock() / CLOCKS_PER_SEC);
  st.bad += bad;
  free(src);
  free(c);
  free(out);
  free(blk);
}

/* The Blosc1-compatible API of c-blosc2 2.x writes the body of a Blosc2 chunk behind a 16-byte
 * header with version 3, 4 (and 5 today); Blosc2 rules apply (dont-split alone decides, the
 * bitshuffle of a block with a partial group of 8 items, DELTA from flag 0x08). We make such
 * chunks from our own Blosc2 chunks: header cut to 16 bytes, block starts moved by -16. */
static int32_t to_blosc1_header(const uint8_t *b2, int32_t cb, int version, uint8_t *out) {
  caterva_chunk_info ci;
  uint8_t flags;
  if (caterva_chunk_info_get(b2, (size_t)cb, &ci) < 0 || ci.special != CATERVA_SPECIAL_NONE)
    return -1;
  flags = (uint8_t)(b2[2] & 0xfa); /* keep memcpyed, delta, dont-split, codec format */
  if (ci.filters[5] == CATERVA_SHUFFLE) flags |= 0x01;
  if (ci.filters[5] == CATERVA_BITSHUFFLE) flags |= 0x04;
  memcpy(out, b2, 16);
  out[0] = (uint8_t)version;
  out[2] = flags;
  cat_put_le32(out + 12, (uint32_t)(cb - 16));
  memcpy(out + 16, b2 + 32, (size_t)cb - 32);
  if (!ci.memcpyed)
    for (int32_t j = 0; j < ci.nblocks; j++)
      cat_put_le32(out + 16 + 4 * j, (uint32_t)(cat_le32s(b2 + 32 + 4 * j) - 16));
  return cb - 16;
}

static void test_blosc2_compat_versions(void) {
  static const uint8_t pipelines[][6] = {{0, 0, 0, 0, 0, CATERVA_SHUFFLE},
                                         {0, 0, 0, 0, 0, CATERVA_BITSHUFFLE},
                                         {0, 0, 0, 0, CATERVA_DELTA, CATERVA_SHUFFLE},
                                         {0, 0, 0, 0, 0, 0}};
  static const int codecs[] = {CATERVA_BLOSCLZ, CATERVA_LZ4, CATERVA_ZLIB, CATERVA_ZSTD};
  enum { N = 9000 };
  uint8_t src[N], b2[N + 64], b1[N + 64], out[N];
  long ok = 0, tried = 0, split_small = 0;
  for (int v = 3; v <= 5; v++) {
    for (size_t p = 0; p < sizeof pipelines / sizeof *pipelines; p++) {
      for (size_t k = 0; k < sizeof codecs / sizeof *codecs; k++) {
        /* blocksize 400, typesize 4: 100 items per block, split by Blosc2 rules although a
         * version-2 reader would not split it; 9000 bytes leave a short last block of 200 */
        caterva_cparams cp;
        int32_t cb, cb1;
        caterva_cparams_init(&cp);
        cp.codec = codecs[k];
        cp.typesize = 4;
        cp.clevel = 5;
        cp.blocksize = 400;
        cp.splitmode = CATERVA_SPLIT_ALWAYS;
        memcpy(cp.filters, pipelines[p], 6);
        fill(src, N, 4, (int)(tried % 2));
        cb = caterva_chunk_compress(ctx, &cp, src, N, b2, sizeof b2);
        cb1 = cb > 0 ? to_blosc1_header(b2, cb, v, b1) : -1;
        tried++;
        if (cb1 > 0 && caterva_chunk_decompress(ctx, b1, (size_t)cb1, out, N) == N &&
            memcmp(out, src, N) == 0) {
          int32_t j = 7;
          caterva_chunk_info ci;
          caterva_chunk_info_get(b1, (size_t)cb1, &ci);
          if (caterva_chunk_decompress_blocks(ctx, b1, (size_t)cb1, &j, 1, out, N) == 400 &&
              memcmp(out, src + 7 * 400, 400) == 0)
            ok++;
          if (ci.split && !ci.memcpyed) split_small++;
        } else {
          tap_diag("version %d pipeline %zu codec %d: %s", v, p, codecs[k],
                   caterva_ctx_errmsg(ctx));
        }
      }
    }
  }
  tap_ok(ok == tried && split_small > 0,
         "16-byte header, versions 3-5 (c-blosc2 Blosc1 API): %ld of %ld chunks decode, "
         "%ld split with 100-item blocks", ok, tried, split_small);
}

/* Chunks written before the dont-split flag existed have bit 4 clear and are split exactly
 * when typesize <= 16 and a full block holds >= 128 items. Clearing the bit on libblosc's
 * unsplit chunks that fail that test must not change how they decode. */
static void test_pre_split_flag(void) {
  static const struct { int ts; int32_t n, bs; } cases[] = {
      {32, 65536, 8192}, {24, 48000, 4800}, {4, 20000, 256}, {8, 30000, 800}, {2, 5000, 200}};
  static const char *codecs[] = {"blosclz", "lz4", "zlib", "zstd"};
  uint8_t *src = malloc(65536), *c = malloc(65536 + 16), *out = malloc(65536);
  long ok = 0, tried = 0;
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    for (int k = 0; k < 4; k++) {
      int32_t cb;
      fill(src, (size_t)cases[i].n, cases[i].ts, 0);
      cb = blosc_compress_ctx(5, 1, (size_t)cases[i].ts, (size_t)cases[i].n, src, c,
                              (size_t)cases[i].n + 16, codecs[k], (size_t)cases[i].bs, 1);
      if (cb <= 0 || (c[2] & 0x02) || !(c[2] & 0x10)) {
        tap_diag("case %zu %s: not a compressed unsplit chunk (flags 0x%02x)", i, codecs[k],
                 cb > 0 ? c[2] : 0);
        tried++;
        continue;
      }
      c[2] &= (uint8_t)~0x10;
      tried++;
      if (caterva_chunk_decompress(ctx, c, (size_t)cb, out, cases[i].n) == cases[i].n &&
          memcmp(out, src, (size_t)cases[i].n) == 0 &&
          blosc_decompress_ctx(c, out, (size_t)cases[i].n, 1) == cases[i].n)
        ok++;
    }
  }
  tap_ok(ok == tried && tried == 20,
         "version 2 without the dont-split bit: compatibility split rule (%ld of %ld)", ok,
         tried);
  free(src);
  free(c);
  free(out);
}

/* BLOSC1_SEEDS=dir: write small libblosc chunks as fuzz seeds (tests/fuzz/corpus/chunk/b1_*):
 * every codec with noshuffle, shuffle and bitshuffle, split and not, a short last block,
 * memcpyed and empty chunks. */
static void write_seeds(const char *dir) {
  static const char *codecs[] = {"blosclz", "lz4", "lz4hc", "snappy", "zlib", "zstd"};
  static const struct { int shuf, ts, clevel; int32_t n, bs; } kinds[] = {
      {1, 4, 5, 3000, 1024}, {2, 8, 5, 2600, 512}, {0, 2, 9, 1500, 0}, {1, 16, 1, 4100, 2048}};
  uint8_t src[5000], c[5000 + 16];
  int written = 0;
  for (int k = 0; k < 6; k++) {
    for (size_t i = 0; i < sizeof kinds / sizeof *kinds; i++) {
      char path[512];
      FILE *f;
      int32_t cb;
      fill(src, (size_t)kinds[i].n, kinds[i].ts, (int)(i % 2));
      cb = blosc_compress_ctx(kinds[i].clevel, kinds[i].shuf, (size_t)kinds[i].ts,
                              (size_t)kinds[i].n, src, c, sizeof c, codecs[k],
                              (size_t)kinds[i].bs, 1);
      if (i == 3 && k == 0) cb = blosc_compress_ctx(0, 1, 4, 200, src, c, sizeof c, "lz4", 0, 1);
      if (i == 3 && k == 1) cb = blosc_compress_ctx(5, 1, 8, 0, src, c, sizeof c, "lz4", 0, 1);
      snprintf(path, sizeof path, "%s/b1_%s_%zu.chunk", dir, codecs[k], i);
      if (cb > 0 && (f = fopen(path, "wb")) != NULL) {
        written += fwrite(c, 1, (size_t)cb, f) == (size_t)cb;
        fclose(f);
      }
    }
  }
  tap_ok(written == 24, "wrote %d seeds to %s", written, dir);
}

int main(void) {
  const char *full = getenv("BLOSC1_FULL");
  if (caterva_ctx_new(1, &ctx) < 0) return 1;
  blosc_init();
  tap_diag("libblosc %s, codecs %s", blosc_get_version_string(), blosc_list_compressors());
  tap_ok(strstr(blosc_list_compressors(), "snappy") != NULL,
         "libblosc lists every codec bcolz writes");
  if (getenv("BLOSC1_SEEDS") != NULL) {
    write_seeds(getenv("BLOSC1_SEEDS"));
    blosc_destroy();
    caterva_ctx_free(ctx);
    return tap_done();
  }
  test_matrix(full != NULL && *full != '\0' && *full != '0');
  tap_diag("decoded %ld chunks (and %ld single blocks): %ld memcpyed, %ld split, %ld unsplit, "
           "%ld bitshuffled, %ld with a short last block, %ld raw streams",
           st.chunks, st.blocks, st.memcpyed, st.split, st.unsplit, st.bitshuffled,
           st.short_last, st.raw_streams);
  tap_diag("per codec: blosclz %ld, lz4 %ld, lz4hc %ld, snappy %ld, zlib %ld, zstd %ld",
           st.per_codec[0], st.per_codec[1], st.per_codec[2], st.per_codec[3], st.per_codec[4],
           st.per_codec[5]);
  tap_diag("always-split chunks libblosc cannot read back (skipped, we must not return wrong "
           "bytes): %ld", st.lib_failed);
  tap_ok(st.bad == 0 && st.chunks > 0 && st.memcpyed > 0 && st.split > 0 && st.unsplit > 0 &&
             st.bitshuffled > 0 && st.short_last > 0 && st.raw_streams > 0,
         "%ld Blosc 1.x chunks from libblosc decoded byte-exactly (or, for snappy without "
         "libsnappy, refused), every kind seen", st.chunks);
  if (cat_codec_available(CATERVA_SNAPPY))
    tap_ok(st.snappy_refused == 0, "built with libsnappy: no snappy chunk refused");
  else
    tap_ok(st.snappy_refused > 0 && st.snappy_refused <= st.per_codec[3],
           "built without libsnappy: %ld of the %ld snappy chunks refused with 'built without "
           "snappy' (the others are memcpyed or empty and need no codec)",
           st.snappy_refused, st.per_codec[3]);
  test_blosc2_compat_versions();
  test_pre_split_flag();
  blosc_destroy();
  caterva_ctx_free(ctx);
  return tap_done();
}
