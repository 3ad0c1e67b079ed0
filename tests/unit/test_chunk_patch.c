/*
 * test_chunk_patch.c -- re-encoding only the changed blocks of a chunk (cat_chunk_patch in
 * core/chunk.c, used by the write cache in core/wcache.c), byte by byte.
 *
 * For every codec, filter pipeline (none, shuffle, bitshuffle, bytedelta, trunc_prec), typesize
 * 1, 2, 4, 8 and 16, split on and off, and chunks whose last block is short, a chunk (whose
 * block 1 is random bytes, stored raw inside the compressed chunk) is
 * compressed, some of its blocks are changed (none, one, the first, the last, every other,
 * all), and the chunk is patched with those blocks flagged:
 *  - the patched chunk decodes to exactly the new content (trunc_prec, which is lossy: to
 *    what the whole compression of the new content decodes to);
 *  - every block not flagged keeps its compressed bytes, byte for byte (block j's bytes run
 *    from its start to the next block's start in the chunks we write);
 *  - the patched chunk is byte-identical to compressing the new content whole (the codecs
 *    are deterministic, so that is what a patch must produce).
 * With two threads (blocks encoded in parallel), zstd chunks of one, two and six blocks, whole
 * and patched, are byte for byte those one thread writes.
 * Chunks whose blocks cannot be copied are refused with CATERVA_E_UNSUPPORTED (the caller then
 * compresses whole), each kind tested: special chunks (zeros, a repeated value), memcpyed
 * chunks (clevel 0 and incompressible data), DELTA, a zstd dictionary chunk (from the golden
 * set, when ../shared is there), a Blosc 1.x chunk, and chunks whose block size, typesize,
 * filters or codec format differ from the parameters asked for. Truncated and bit-flipped old
 * chunks are refused or patched without reading outside them.
 * cat_chunk_build (a chunk compressed from bytes produced a batch of blocks at a time, the
 * block statistics' stored form) gives, for every case above, exactly the chunk of a whole
 * compression, with the old chunk and the unchanged blocks kept (only the changed blocks'
 * bytes produced) and without; and so for contents of several batches, all-zero contents,
 * clevel 0, tiny contents and DELTA.
 * Through the array API: a cell write into one block of a stored chunk, flushed, leaves the
 * other blocks' compressed bytes as they were, and the array reads back right; a chunk whose
 * cells are all written is stored without reading the old one (its file replaced by garbage
 * first), while a one-cell write into such a chunk fails.
 */
#include "cat_internal.h"
#include "caterva.h"
#include "caterva_array.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CAP(n) ((n) + CATERVA_CHUNK_MAX_OVERHEAD)

static uint32_t rng = 12345;
static uint32_t next_rand(void) {
  rng = rng * 1103515245u + 12345u;
  return rng >> 8;
}

/* Slowly rising little-endian items of ts bytes with a little noise (with floats, float32
 * or float64 numbers, for trunc_prec): every codec and filter compresses them, not to runs. */
static void make_data(uint8_t *p, int32_t n, int ts, int floats, int seed) {
  memset(p, 0, (size_t)n);
  for (int32_t k = 0; k < n / ts; k++) {
    uint32_t v = (uint32_t)(k / (ts == 1 ? 32 : 5) + seed * 3) + (next_rand() % 64 == 0);
    double d = 1000.0 + v * 0.125;
    float f = (float)d;
    if (floats && ts == 8) memcpy(p + k * ts, &d, 8);
    else if (floats && ts == 4) memcpy(p + k * ts, &f, 4);
    else
      for (int b = 0; b < ts && b < 4; b++) p[k * ts + b] = (uint8_t)(v >> (8 * b));
  }
}

static int32_t le32(const uint8_t *p) {
  return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                   (uint32_t)p[3] << 24);
}

/* Compressed bytes of block j of a chunk we wrote: from its start to the next one's. */
static void block_range(const uint8_t *c, int32_t j, int32_t nblocks, int32_t *start,
                        int32_t *len) {
  int32_t cb = le32(c + 12);
  *start = le32(c + 32 + 4 * j);
  *len = (j + 1 < nblocks ? le32(c + 32 + 4 * (j + 1)) : cb) - *start;
}

/* A producer of bytes for cat_chunk_build: p's, counting what it was asked for. */
typedef struct bsrc {
  const uint8_t *p;
  const uint8_t *dirty;  /* per block: changed (NULL: nothing is kept) */
  int32_t bs;
  int64_t asked;
} bsrc;

static void t_fill(void *arg, int64_t off, int32_t len, uint8_t *dst) {
  bsrc *s = arg;
  memcpy(dst, s->p + off, (size_t)len);
  s->asked += len;
}

static bool t_keep(void *arg, int64_t off, int32_t len) {
  const bsrc *s = arg;
  (void)len;
  return s->dirty != NULL && !s->dirty[off / s->bs];
}

/* cat_chunk_build of src (n bytes), keeping the blocks dirty does not flag from old (NULL:
 * none), equals want byte for byte; *asked: the bytes it produced. */
static int build_equal(caterva_ctx *ctx, const caterva_cparams *cp, const uint8_t *src, int32_t n,
                       const uint8_t *dirty, int32_t bs, const uint8_t *old, int32_t oldlen,
                       const uint8_t *want, int32_t wantlen, int64_t *asked) {
  bsrc s = {src, dirty, bs, 0};
  uint8_t *out = NULL;
  int32_t cb = 0;
  int rc = cat_chunk_build(ctx, cp, n, t_fill, dirty != NULL ? t_keep : NULL, &s, old, oldlen,
                           &out, &cb);
  int ok = rc == 0 && cb == wantlen && memcmp(out, want, (size_t)cb) == 0;
  free(out);
  if (asked != NULL) *asked = s.asked;
  return ok;
}

typedef struct pcase {
  int codec, typesize, split;
  uint8_t filter, meta;
  int32_t nbytes, blocksize;
} pcase;

/* One pipeline, every dirty pattern: decoded content, copied blocks, identity. */
static void run_case(caterva_ctx *ctx, const pcase *pc) {
  caterva_cparams cp;
  int32_t n = pc->nbytes, bs = pc->blocksize, nblocks = (n + bs - 1) / bs;
  uint8_t *src = malloc((size_t)n), *src2 = malloc((size_t)n), *dec = malloc((size_t)n);
  uint8_t *c0 = malloc(CAP(n)), *c1 = malloc(CAP(n)), *c2 = malloc(CAP(n));
  uint8_t *dirty = malloc((size_t)nblocks);
  int32_t cb0, cb1, cb2;
  caterva_cparams_init(&cp);
  cp.codec = pc->codec;
  cp.clevel = 5;
  cp.typesize = pc->typesize;
  cp.blocksize = bs;
  cp.splitmode = pc->split ? CATERVA_SPLIT_ALWAYS : CATERVA_SPLIT_NEVER;
  memset(cp.filters, 0, sizeof cp.filters);
  cp.filters[5] = pc->filter;
  cp.filters_meta[5] = pc->meta;
  if (pc->filter == CATERVA_BYTEDELTA) cp.filters[4] = CATERVA_SHUFFLE;
  make_data(src, n, pc->typesize, pc->filter == CATERVA_TRUNC_PREC, 1);
  /* block 1 incompressible: its streams are stored raw inside the compressed chunk */
  if (pc->filter != CATERVA_TRUNC_PREC)
    for (int32_t i = bs; i < 2 * bs && i < n; i++) src[i] = (uint8_t)next_rand();
  cb0 = caterva_chunk_compress(ctx, &cp, src, n, c0, CAP(n));
  if (cb0 <= 0 || cb0 >= n + 32) {
    tap_ok(0, "codec %d filter %d ts %d: the test data compresses (%d)", pc->codec, pc->filter,
           pc->typesize, (int)cb0);
    cb0 = -1;
  }
  for (int pat = 0; pat < 6 && cb0 > 0; pat++) {
    int ok_copy = 1, ndirty = 0;
    memcpy(src2, src, (size_t)n);
    for (int32_t j = 0; j < nblocks; j++) {
      dirty[j] = pat == 1 ? j == nblocks / 2 : pat == 2 ? j == 0 : pat == 3 ? j == nblocks - 1
                 : pat == 4 ? j % 2 == 0 : pat == 5;
      ndirty += dirty[j];
      if (dirty[j]) { /* change a few items of the block (at least one byte) */
        int32_t lo = j * bs, hi = lo + bs < n ? lo + bs : n;
        for (int32_t i = lo; i < hi; i += 1 + (int32_t)(next_rand() % 97)) src2[i] ^= 0x5a;
      }
    }
    cb1 = cat_chunk_patch(ctx, &cp, c0, cb0, src2, n, dirty, c1, CAP(n));
    cb2 = caterva_chunk_compress(ctx, &cp, src2, n, c2, CAP(n));
    if (pc->filter != CATERVA_TRUNC_PREC) {
      int64_t asked = 0, want_asked = 0;
      for (int32_t j = 0; j < nblocks; j++)
        if (dirty[j]) want_asked += j + 1 < nblocks ? bs : n - j * bs;
      int same = build_equal(ctx, &cp, src2, n, dirty, bs, c0, cb0, c2, cb2, &asked) &&
                 build_equal(ctx, &cp, src2, n, NULL, bs, NULL, 0, c2, cb2, NULL);
      tap_ok(same && (cb2 == n + 32 || asked == want_asked),
             "codec %d filter %d/%d ts %d split %d, %d bytes in %d blocks, %d changed: built a "
             "batch at a time, with the unchanged blocks kept (%lld of %lld bytes produced) and "
             "without, equal to a whole compression", pc->codec, pc->filter, pc->meta,
             pc->typesize, pc->split, n, nblocks, ndirty, (long long)asked,
             (long long)want_asked);
    }
    if (cb2 == n + 32) { /* the whole compression is memcpyed: a patch would be larger */
      tap_ok(cb1 == CATERVA_E_UNSUPPORTED, "codec %d filter %d ts %d pattern %d: the new "
             "content does not compress, the patch is refused (%d)", pc->codec, pc->filter,
             pc->typesize, pat, (int)cb1);
      continue;
    }
    if (cb1 < 0) {
      tap_ok(0, "codec %d filter %d ts %d split %d n %d bs %d pattern %d: patch refused (%d)",
             pc->codec, pc->filter, pc->typesize, pc->split, n, bs, pat, (int)cb1);
      continue;
    }
    /* trunc_prec is lossy: the content is then what the whole compression decodes to */
    if (pc->filter == CATERVA_TRUNC_PREC &&
        caterva_chunk_decompress(ctx, c2, (size_t)cb2, src2, n) != n)
      tap_ok(0, "the whole compression decodes");
    memset(dec, 0xEE, (size_t)n);
    for (int32_t j = 0; j < nblocks; j++) {
      int32_t s0, l0, s1, l1;
      if (dirty[j]) continue;
      block_range(c0, j, nblocks, &s0, &l0);
      block_range(c1, j, nblocks, &s1, &l1);
      ok_copy &= l0 == l1 && memcmp(c0 + s0, c1 + s1, (size_t)l0) == 0;
    }
    tap_ok(caterva_chunk_decompress(ctx, c1, (size_t)cb1, dec, n) == n &&
               memcmp(dec, src2, (size_t)n) == 0 && ok_copy && cb1 == cb2 &&
               memcmp(c1, c2, (size_t)cb1) == 0,
           "codec %d filter %d/%d ts %d split %d, %d bytes in %d blocks, %d changed: decodes "
           "to the new content, unchanged blocks' bytes copied, equal to a whole compression",
           pc->codec, pc->filter, pc->meta, pc->typesize, pc->split, n, nblocks, ndirty);
  }
  free(src);
  free(src2);
  free(dec);
  free(c0);
  free(c1);
  free(c2);
  free(dirty);
}

static void pipelines(caterva_ctx *ctx) {
  static const int codecs[] = {CATERVA_BLOSCLZ, CATERVA_LZ4, CATERVA_LZ4HC, CATERVA_ZLIB,
                               CATERVA_ZSTD};
  static const uint8_t filters[][2] = {{CATERVA_NOFILTER, 0},  {CATERVA_SHUFFLE, 0},
                                       {CATERVA_BITSHUFFLE, 0}, {CATERVA_BYTEDELTA, 0},
                                       {CATERVA_TRUNC_PREC, 20}};
  static const int typesizes[] = {1, 2, 4, 8, 16};
  for (size_t c = 0; c < sizeof codecs / sizeof *codecs; c++)
    for (size_t f = 0; f < sizeof filters / sizeof *filters; f++)
      for (size_t t = 0; t < sizeof typesizes / sizeof *typesizes; t++) {
        int ts = typesizes[t];
        if (filters[f][0] == CATERVA_TRUNC_PREC && ts != 4 && ts != 8) continue;
        for (int split = 0; split < 2; split++) {
          /* whole blocks, and a short last block */
          pcase a = {codecs[c], ts, split, filters[f][0], filters[f][1], 512 * ts * 8, 512 * ts};
          pcase b = {codecs[c], ts, split, filters[f][0], filters[f][1], 300 * ts * 7 + 5 * ts,
                     300 * ts};
          run_case(ctx, &a);
          run_case(ctx, &b);
        }
      }
}

/* With two threads, fewer blocks than threads (a one-cell commit re-encodes one block) are
 * encoded stream by stream, the streams as tasks (core/chunk_enc.c): the chunks, whole and
 * patched, must be byte for byte those one thread writes, and run_case's checks must hold. */
static void two_threads(caterva_ctx *ctx1, caterva_ctx *ctx2) {
  static const uint8_t filters[][2] = {{CATERVA_NOFILTER, 0}, {CATERVA_SHUFFLE, 0},
                                       {CATERVA_BYTEDELTA, 0}, {CATERVA_TRUNC_PREC, 20}};
  static const int typesizes[] = {2, 4, 8, 16};
  int same = 0, cases = 0;
  for (size_t f = 0; f < sizeof filters / sizeof *filters; f++)
    for (size_t t = 0; t < sizeof typesizes / sizeof *typesizes; t++) {
      int ts = typesizes[t];
      int32_t bs = 4608 * ts;
      if (filters[f][0] == CATERVA_TRUNC_PREC && ts != 4 && ts != 8) continue;
      for (int shape = 0; shape < 3; shape++) {
        /* one block; one block and a short one; six blocks */
        int32_t n = shape == 0 ? bs : shape == 1 ? bs + 7 * ts : 6 * bs;
        pcase pc = {CATERVA_ZSTD, ts, 1, filters[f][0], filters[f][1], n, bs};
        caterva_cparams cp;
        uint8_t *src = malloc((size_t)n), *a = malloc(CAP(n)), *b = malloc(CAP(n));
        uint8_t *pa = malloc(CAP(n)), *pb = malloc(CAP(n)), dirty[6] = {0};
        int32_t na, nb, npa, npb;
        run_case(ctx2, &pc);
        caterva_cparams_init(&cp);
        cp.codec = CATERVA_ZSTD;
        cp.clevel = 5;
        cp.typesize = ts;
        cp.blocksize = bs;
        cp.splitmode = CATERVA_SPLIT_ALWAYS;
        memset(cp.filters, 0, sizeof cp.filters);
        cp.filters[5] = filters[f][0];
        cp.filters_meta[5] = filters[f][1];
        if (filters[f][0] == CATERVA_BYTEDELTA) cp.filters[4] = CATERVA_SHUFFLE;
        make_data(src, n, ts, filters[f][0] == CATERVA_TRUNC_PREC, 2);
        na = caterva_chunk_compress(ctx1, &cp, src, n, a, CAP(n));
        nb = caterva_chunk_compress(ctx2, &cp, src, n, b, CAP(n));
        src[n - 1] ^= 0x33; /* the last block changes */
        dirty[(n - 1) / bs] = 1;
        npa = cat_chunk_patch(ctx1, &cp, a, na, src, n, dirty, pa, CAP(n));
        npb = cat_chunk_patch(ctx2, &cp, a, na, src, n, dirty, pb, CAP(n));
        cases++;
        same += na > 0 && na == nb && memcmp(a, b, (size_t)na) == 0 && npa > 0 && npa == npb &&
                memcmp(pa, pb, (size_t)npa) == 0;
        free(src);
        free(a);
        free(b);
        free(pa);
        free(pb);
      }
    }
  tap_ok(cases > 0 && same == cases, "zstd, split, 1 and 2 threads: %d of %d chunks (whole "
         "and patched in their last block) byte-identical", same, cases);
}

/* A patch of old with parameters cp must be refused. */
static void refused(caterva_ctx *ctx, const caterva_cparams *cp, const uint8_t *old,
                    int32_t oldlen, int32_t n, const char *what) {
  uint8_t *src = calloc(1, (size_t)n), *out = malloc(CAP(n));
  int32_t nb = cp->blocksize ? (n + cp->blocksize - 1) / cp->blocksize : 1;
  uint8_t *dirty = calloc(1, (size_t)(nb > 0 ? nb : 1));
  int32_t rc;
  dirty[0] = 1;
  rc = cat_chunk_patch(ctx, cp, old, oldlen, src, n, dirty, out, CAP(n));
  tap_ok(rc == CATERVA_E_UNSUPPORTED, "%s: refused, compressed whole instead (%d)", what,
         (int)rc);
  free(src);
  free(out);
  free(dirty);
}

static void base_cparams(caterva_cparams *cp) {
  caterva_cparams_init(cp);
  cp->codec = CATERVA_LZ4;
  cp->clevel = 5;
  cp->typesize = 4;
  cp->blocksize = 4096;
  cp->splitmode = CATERVA_SPLIT_NEVER;
}

/* A Blosc 1.x chunk of the same bytes as a Blosc2 one without filters: the 16-byte header,
 * the block starts moved 16 bytes down. */
static int32_t to_blosc1(const uint8_t *c, int32_t cb, int32_t nblocks, uint8_t *out) {
  memcpy(out, c, 16);
  out[0] = 2;
  out[2] = (uint8_t)(0x10 | (c[2] & 0xE0)); /* dont-split, the codec format, no shuffle */
  memcpy(out + 16, c + 32, (size_t)(cb - 32));
  for (int32_t j = 0; j < nblocks; j++) {
    int32_t s = le32(out + 16 + 4 * j) - 16;
    for (int k = 0; k < 4; k++) out[16 + 4 * j + k] = (uint8_t)(s >> (8 * k));
  }
  cb -= 16;
  for (int k = 0; k < 4; k++) out[12 + k] = (uint8_t)(cb >> (8 * k));
  return cb;
}

static void refusals(caterva_ctx *ctx) {
  enum { N = 4096 * 6 };
  caterva_cparams cp, other;
  uint8_t *src = malloc(N), *c = malloc(CAP(N)), *b1 = malloc(CAP(N)), *dec = malloc(N);
  uint8_t val[4] = {1, 2, 3, 4};
  int32_t cb;
  base_cparams(&cp);
  make_data(src, N, 4, 0, 2);
  cb = caterva_chunk_make_special(CATERVA_SPECIAL_ZERO, N, 4, 4096, NULL, c, CAP(N));
  refused(ctx, &cp, c, cb, N, "a special chunk of zeros");
  cb = caterva_chunk_make_special(CATERVA_SPECIAL_VALUE, N, 4, 4096, val, c, CAP(N));
  refused(ctx, &cp, c, cb, N, "a special repeated-value chunk");
  other = cp;
  other.clevel = 0;
  cb = caterva_chunk_compress(ctx, &other, src, N, c, CAP(N));
  refused(ctx, &cp, c, cb, N, "a memcpyed chunk (clevel 0)");
  for (int i = 0; i < N; i++) src[i] = (uint8_t)next_rand();
  cb = caterva_chunk_compress(ctx, &cp, src, N, c, CAP(N));
  tap_ok(cb == N + 32, "random bytes are stored memcpyed (%d bytes)", (int)cb);
  refused(ctx, &cp, c, cb, N, "a memcpyed chunk (incompressible)");
  make_data(src, N, 4, 0, 3);
  other = cp;
  other.filters[4] = CATERVA_DELTA;
  cb = caterva_chunk_compress(ctx, &other, src, N, c, CAP(N));
  refused(ctx, &other, c, cb, N, "DELTA (every block is encoded against block 0)");
  cb = caterva_chunk_compress(ctx, &cp, src, N, c, CAP(N));
  other = cp;
  other.blocksize = 2048;
  refused(ctx, &other, c, cb, N, "another block size");
  other = cp;
  other.typesize = 8;
  refused(ctx, &other, c, cb, N, "another typesize");
  other = cp;
  other.filters[5] = CATERVA_BITSHUFFLE;
  refused(ctx, &other, c, cb, N, "other filters");
  other = cp;
  other.codec = CATERVA_ZSTD;
  refused(ctx, &other, c, cb, N, "another codec format");
  other = cp;
  other.codec = CATERVA_LZ4HC; /* the same format: lz4 blocks decode alike */
  {
    uint8_t dirty[6] = {0, 1, 0, 0, 0, 0};
    int32_t r = cat_chunk_patch(ctx, &other, c, cb, src, N, dirty, b1, CAP(N));
    tap_ok(r > 0 && caterva_chunk_decompress(ctx, b1, (size_t)r, dec, N) == N &&
               memcmp(dec, src, N) == 0,
           "LZ4 blocks kept in a chunk re-encoded with LZ4HC (one format): decodes right");
  }
  other = cp;
  other.filters[5] = CATERVA_NOFILTER;
  cb = caterva_chunk_compress(ctx, &other, src, N, c, CAP(N));
  cb = to_blosc1(c, cb, 6, b1);
  tap_ok(caterva_chunk_decompress(ctx, b1, (size_t)cb, dec, N) == N && memcmp(dec, src, N) == 0,
         "the hand-made Blosc 1.x chunk decodes to its data");
  refused(ctx, &other, b1, cb, N, "a Blosc 1.x chunk");
  free(src);
  free(c);
  free(b1);
  free(dec);
}

/* A chunk of the golden set's zstd dictionary case, when the golden set is there. */
static void dictionary(caterva_ctx *ctx) {
  const char *dir = getenv("CATERVA_GOLDEN") ? getenv("CATERVA_GOLDEN") : "../shared/golden";
  char path[1024];
  caterva_schunk *sc = NULL;
  const uint8_t *chunk;
  int32_t cbytes;
  caterva_chunk_info ci;
  caterva_cparams cp;
  snprintf(path, sizeof path, "%s/s25_f64_2d_zstd_dict.b2nd", dir);
  if (caterva_schunk_open(ctx, path, CATERVA_OPEN_READ, &sc) < 0) {
    tap_diag("no %s: the dictionary case is not run", path);
    return;
  }
  if (caterva_schunk_get_chunk(ctx, sc, 0, &chunk, &cbytes) == 0 &&
      caterva_chunk_info_get(chunk, (size_t)cbytes, &ci) == 0) {
    tap_ok(ci.has_dict, "the golden chunk has a dictionary");
    caterva_cparams_init(&cp);
    cp.codec = ci.codec;
    cp.typesize = ci.typesize;
    cp.blocksize = ci.blocksize;
    cp.splitmode = ci.split ? CATERVA_SPLIT_ALWAYS : CATERVA_SPLIT_NEVER;
    memcpy(cp.filters, ci.filters, sizeof cp.filters);
    memcpy(cp.filters_meta, ci.filters_meta, sizeof cp.filters_meta);
    refused(ctx, &cp, chunk, cbytes, ci.nbytes, "a zstd dictionary chunk (golden s25)");
  } else {
    tap_ok(0, "chunk 0 of %s", path);
  }
  caterva_schunk_free(sc);
}

/* Through the array API: a write into one block changes only that block's bytes. */
static void through_array(caterva_ctx *ctx) {
  caterva_array_params p;
  caterva_array *a = NULL;
  enum { D0 = 64, D1 = 64 };
  static double buf[D0 * D1], back[D0 * D1];
  const uint8_t *c;
  uint8_t *before = NULL;
  int32_t cb0 = 0, cb1 = 0, nblocks = 16, same = 1;
  int64_t coord[2] = {5, 40}, lo[2] = {0, 0}, hi[2] = {D0, D1};
  double v = -1.0;
  caterva_array_params_init(&p);
  p.ndim = 2;
  p.shape[0] = D0;
  p.shape[1] = D1;
  p.chunkshape[0] = D0;
  p.chunkshape[1] = D1;
  p.blockshape[0] = 16;
  p.blockshape[1] = 16;
  p.dtype = "float64";
  p.cparams.codec = CATERVA_ZSTD;
  for (int i = 0; i < D0 * D1; i++) buf[i] = i * 0.25 + (i % 7);
  if (caterva_array_from_buffer(ctx, &p, buf, sizeof buf, &a) < 0 ||
      caterva_schunk_get_chunk(ctx, caterva_array_schunk(a), 0, &c, &cb0) < 0) {
    tap_ok(0, "array created: %s", caterva_ctx_errmsg(ctx));
    caterva_array_free(a);
    return;
  }
  before = malloc((size_t)cb0);
  memcpy(before, c, (size_t)cb0);
  buf[coord[0] * D1 + coord[1]] = v;
  tap_ok(caterva_array_set_item(ctx, a, coord, &v) == 0 && caterva_array_flush(ctx, a) == 0 &&
             caterva_schunk_get_chunk(ctx, caterva_array_schunk(a), 0, &c, &cb1) == 0,
         "one cell written and flushed");
  /* cell (5, 40) lies in block (0, 2): block number 2 of the 4 x 4 grid */
  for (int32_t j = 0; j < nblocks; j++) {
    int32_t s0, l0, s1, l1;
    if (j == 2) continue;
    block_range(before, j, nblocks, &s0, &l0);
    block_range(c, j, nblocks, &s1, &l1);
    same &= l0 == l1 && memcmp(before + s0, c + s1, (size_t)l0) == 0;
  }
  {
    int32_t s0, l0, s1, l1;
    block_range(before, 2, nblocks, &s0, &l0);
    block_range(c, 2, nblocks, &s1, &l1);
    tap_ok(same && (l0 != l1 || memcmp(before + s0, c + s1, (size_t)l0) != 0),
           "the 15 blocks not written keep their compressed bytes; block 2 changed");
  }
  tap_ok(caterva_array_get_slice(ctx, a, lo, hi, back, sizeof back) == 0 &&
             memcmp(back, buf, sizeof buf) == 0,
         "the array reads back with the one cell changed");
  free(before);
  caterva_array_free(a);
}

/* A chunk whose cells are all written is compressed from the cache alone, never read: its
 * stored file in a sparse frame is replaced by garbage first; writing every cell of it
 * succeeds and reads back, while writing one cell of another damaged chunk fails (that write
 * must read the chunk, and the garbage is detected). */
static void whole_chunk_not_read(caterva_ctx *ctx) {
  char dir[256], path[512], file[600];
  caterva_array_params p;
  caterva_array *a = NULL;
  enum { D0 = 32, D1 = 16 };
  static double buf[D0 * D1], back[D0 * D1];
  uint8_t junk[64];
  int64_t lo[2] = {0, 0}, hi[2] = {D0, D1};
  int ok = 1, rc;
  const char *t = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/test_chunk_patch.XXXXXX", t && *t ? t : "/tmp");
  if (mkdtemp(dir) == NULL) {
    tap_ok(0, "temporary directory");
    return;
  }
  snprintf(path, sizeof path, "%s/a.b2frame", dir);
  caterva_array_params_init(&p);
  p.ndim = 2;
  p.shape[0] = D0;
  p.shape[1] = D1;
  p.chunkshape[0] = 16; /* two chunks: rows 0-15 and 16-31 */
  p.chunkshape[1] = D1;
  p.blockshape[0] = 4;
  p.blockshape[1] = D1;
  p.dtype = "float64";
  p.store = CATERVA_STORE_SPARSE;
  p.path = path;
  for (int i = 0; i < D0 * D1; i++) buf[i] = i * 0.5;
  ok = caterva_array_from_buffer(ctx, &p, buf, sizeof buf, &a) == 0;
  caterva_array_free(a);
  a = NULL;
  memset(junk, 0xA5, sizeof junk);
  for (int c = 0; c < 2 && ok; c++) { /* both chunk files: 00000000.chunk, 00000001.chunk */
    FILE *f;
    snprintf(file, sizeof file, "%s/%08X.chunk", path, c);
    f = fopen(file, "wb");
    ok = f != NULL && fwrite(junk, 1, sizeof junk, f) == sizeof junk;
    if (f != NULL) fclose(f);
  }
  ok = ok && caterva_array_open(ctx, path, CATERVA_OPEN_WRITE, &a) == 0;
  for (int64_t r = 0; r < 16 && ok; r++)
    for (int64_t c = 0; c < D1 && ok; c++) {
      int64_t coord[2] = {r, c};
      double v = -(double)(r * D1 + c);
      buf[r * D1 + c] = v;
      ok = caterva_array_set_item(ctx, a, coord, &v) == 0;
    }
  ok = ok && caterva_array_flush(ctx, a) == 0;
  tap_ok(ok, "every cell of a chunk whose stored bytes are garbage written: stored without "
             "reading them (%s)", ok ? "" : caterva_ctx_errmsg(ctx));
  {
    int64_t coord[2] = {20, 3};
    double v = 1.0;
    rc = caterva_array_set_item(ctx, a, coord, &v);
    if (rc == 0) rc = caterva_array_flush(ctx, a);
    tap_ok(rc < 0, "one cell of the other damaged chunk: its stored bytes are read and refused "
                   "(%d: %s)", rc, caterva_ctx_errmsg(ctx));
  }
  caterva_array_free(a);
  a = NULL;
  ok = caterva_array_open(ctx, path, CATERVA_OPEN_READ, &a) == 0;
  hi[0] = 16;
  tap_ok(ok && caterva_array_get_slice(ctx, a, lo, hi, back, 16 * D1 * sizeof(double)) == 0 &&
             memcmp(back, buf, 16 * D1 * sizeof(double)) == 0,
         "the chunk written whole reads back");
  caterva_array_free(a);
  snprintf(file, sizeof file, "rm -rf '%s'", dir);
  if (system(file) != 0) tap_diag("could not remove %s", dir);
}

/* The old chunk comes from a file: truncated and bit-flipped chunks must be refused or
 * patched without reading outside them (checked by the ASan/UBSan build); a result the patch
 * accepts must be a chunk the decoder reads to its size or refuses cleanly. */
static void damaged_old(caterva_ctx *ctx) {
  enum { N = 4096 * 6 };
  caterva_cparams cp;
  uint8_t *src = malloc(N), *c = malloc(CAP(N)), *bad = malloc(CAP(N)), *out = malloc(CAP(N));
  uint8_t *dec = malloc(N), dirty[6] = {1, 0, 1, 0, 0, 1};
  int32_t cb, calls = 0, refused_n = 0, decodable = 1;
  base_cparams(&cp);
  make_data(src, N, 4, 0, 5);
  cb = caterva_chunk_compress(ctx, &cp, src, N, c, CAP(N));
  for (int32_t len = 0; len < cb; len += 1 + len / 16) { /* truncations */
    int32_t r = cat_chunk_patch(ctx, &cp, c, len, src, N, dirty, out, CAP(N));
    calls++;
    refused_n += r < 0;
  }
  for (int k = 0; k < 3000; k++) { /* one to three flipped bits */
    int32_t r;
    memcpy(bad, c, (size_t)cb);
    for (int f = 0; f <= k % 3; f++) bad[next_rand() % (uint32_t)cb] ^= (uint8_t)(1u << (next_rand() % 8));
    r = cat_chunk_patch(ctx, &cp, bad, cb, src, N, dirty, out, CAP(N));
    calls++;
    refused_n += r < 0;
    if (r > 0) {
      int32_t d = caterva_chunk_decompress(ctx, out, (size_t)r, dec, N);
      decodable &= d == N || d < 0;
    }
  }
  tap_ok(decodable && refused_n > 0 && refused_n < calls,
         "%d damaged old chunks: %d refused, the others patched into chunks the decoder reads "
         "or refuses cleanly", (int)calls, (int)refused_n);
  free(src);
  free(c);
  free(bad);
  free(out);
  free(dec);
}

/* Contents of several batches (4 MiB of blocks each), all-zero ones, clevel 0, tiny ones and
 * DELTA, built and compared with whole compressions; a patch of the many-batch one. */
static void built(caterva_ctx *ctx) {
  int32_t n = 9 * 1024 * 1024 + 4000, bs = 16 * 1024, nblocks = (n + bs - 1) / bs;
  uint8_t *src = malloc((size_t)n), *c0 = malloc(CAP(n)), *c1 = malloc(CAP(n));
  uint8_t *dirty = calloc((size_t)nblocks, 1);
  int32_t cb0, cb1;
  int64_t asked = 0;
  int same;
  caterva_cparams cp;
  base_cparams(&cp);
  cp.codec = CATERVA_ZSTD;
  cp.typesize = 8;
  cp.blocksize = bs;
  make_data(src, n, 8, 0, 3);
  cb0 = caterva_chunk_compress(ctx, &cp, src, n, c0, CAP(n));
  tap_ok(cb0 > 0 && build_equal(ctx, &cp, src, n, NULL, bs, NULL, 0, c0, cb0, NULL),
         "%d bytes in %d blocks (3 batches): built equal to a whole compression", n, nblocks);
  for (int32_t j = 0; j < nblocks; j += 97) {
    dirty[j] = 1;
    src[(int64_t)j * bs + 5] ^= 0x21;
  }
  dirty[nblocks - 1] = 1;
  src[n - 1] ^= 0x42;
  cb1 = caterva_chunk_compress(ctx, &cp, src, n, c1, CAP(n));
  same = build_equal(ctx, &cp, src, n, dirty, bs, c0, cb0, c1, cb1, &asked);
  tap_ok(same && asked == 6 * (int64_t)bs + (n - (int64_t)(nblocks - 1) * bs),
         "7 of %d blocks changed across the batches: only they are produced (%lld bytes), "
         "equal to a whole compression", nblocks, (long long)asked);
  memset(src, 0, (size_t)n);
  cb1 = caterva_chunk_compress(ctx, &cp, src, n, c1, CAP(n));
  tap_ok(cb1 == 32 && build_equal(ctx, &cp, src, n, NULL, bs, NULL, 0, c1, cb1, NULL),
         "all-zero content: the special zero chunk, built as compressed");
  make_data(src, 4096, 8, 0, 5);
  cp.clevel = 0;
  cb1 = caterva_chunk_compress(ctx, &cp, src, 4096, c1, CAP(4096));
  tap_ok(build_equal(ctx, &cp, src, 4096, NULL, bs, NULL, 0, c1, cb1, NULL),
         "clevel 0: memcpyed, built as compressed");
  cp.clevel = 5;
  cb1 = caterva_chunk_compress(ctx, &cp, src, 24, c1, CAP(24));
  tap_ok(build_equal(ctx, &cp, src, 24, NULL, bs, NULL, 0, c1, cb1, NULL),
         "24 bytes: memcpyed, built as compressed");
  cp.filters[4] = CATERVA_DELTA;
  cp.blocksize = 512;
  cb1 = caterva_chunk_compress(ctx, &cp, src, 4096, c1, CAP(4096));
  tap_ok(build_equal(ctx, &cp, src, 4096, NULL, 512, NULL, 0, c1, cb1, NULL),
         "DELTA (every block against block 0): built as compressed");
  free(src);
  free(c0);
  free(c1);
  free(dirty);
}

int main(void) {
  caterva_ctx *ctx = NULL, *ctx2 = NULL;
  if (caterva_ctx_new(1, &ctx) < 0 || caterva_ctx_new(2, &ctx2) < 0) return 1;
  pipelines(ctx);
  two_threads(ctx, ctx2);
  refusals(ctx);
  dictionary(ctx);
  damaged_old(ctx);
  through_array(ctx);
  whole_chunk_not_read(ctx);
  built(ctx);
  caterva_ctx_free(ctx);
  caterva_ctx_free(ctx2);
  return tap_done();
}
