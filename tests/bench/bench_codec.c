/*
 * bench_codec.c -- chunk codec throughput, measured against baselines in the same run.
 *
 * For 64 MB of a smooth float64 field and of an int32 ramp, cut into 4 MB chunks, and for
 * each codec with SHUFFLE at clevel 5, nthreads 1 and 2:
 *   - our chunk compress / decompress throughput (MB/s of uncompressed data) and ratio;
 *   - the codec library alone on the same data, unfiltered, in the same block sizes
 *     (compress / decompress), and memcpy of the same bytes (decompression and memcpy: best of 9);
 *   - overhead = our decompress time / (codec alone decompress + one memcpy).
 * Not a test: it prints figures. Usage: tests/bench/bench_codec [MB]
 */
#include "cat_internal.h"
#include "blosclz.h"

#include <lz4.h>
#include <lz4hc.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <zlib.h>
#include <zstd.h>

#define CHUNK (4 << 20)

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

typedef struct run {
  double comp_s, decomp_s, ratio;
} run;

/* Our chunks: compress all, then decompress all (best of reps). */
static run bench_ours(caterva_ctx *ctx, const caterva_cparams *cp, const uint8_t *src,
                      size_t n, uint8_t *tmp, uint8_t *out) {
  run r = {1e9, 1e9, 0};
  size_t nch = n / CHUNK, slot = CHUNK + CATERVA_CHUNK_MAX_OVERHEAD;
  int32_t *clen = malloc(nch * sizeof *clen);
  size_t total = 0;
  for (int rep = 0; rep < 2; rep++) {
    double t0 = now();
    total = 0;
    for (size_t c = 0; c < nch; c++) {
      clen[c] = caterva_chunk_compress(ctx, cp, src + c * CHUNK, CHUNK, tmp + c * slot, (int32_t)slot);
      if (clen[c] < 0) { fprintf(stderr, "compress: %s\n", caterva_ctx_errmsg(ctx)); exit(1); }
      total += (size_t)clen[c];
    }
    double t = now() - t0;
    if (t < r.comp_s) r.comp_s = t;
  }
  for (int rep = 0; rep < 9; rep++) {
    double t0 = now();
    for (size_t c = 0; c < nch; c++)
      if (caterva_chunk_decompress(ctx, tmp + c * slot, (size_t)clen[c], out + c * CHUNK, CHUNK) != CHUNK) {
        fprintf(stderr, "decompress: %s\n", caterva_ctx_errmsg(ctx));
        exit(1);
      }
    double t = now() - t0;
    if (t < r.decomp_s) r.decomp_s = t;
  }
  if (memcmp(out, src, nch * CHUNK) != 0) { fprintf(stderr, "round trip mismatch\n"); exit(1); }
  r.ratio = (double)(nch * CHUNK) / (double)total;
  free(clen);
  return r;
}

/* The codec library alone, unfiltered, on blocks of the size our chunks used. */
static int32_t raw_comp(int codec, const uint8_t *in, int32_t n, uint8_t *out, int32_t cap) {
  uLongf dl = (uLongf)cap;
  switch (codec) {
  case CATERVA_BLOSCLZ: return cat_blosclz_compress(5, in, n, out, cap);
  case CATERVA_LZ4: return LZ4_compress_fast((const char *)in, (char *)out, n, cap, 5);
  case CATERVA_LZ4HC: return LZ4_compress_HC((const char *)in, (char *)out, n, cap, 5);
  case CATERVA_ZLIB: return compress2(out, &dl, in, (uLong)n, 5) == Z_OK ? (int32_t)dl : 0;
  default: return (int32_t)ZSTD_compress(out, (size_t)cap, in, (size_t)n, 9);
  }
}

static void raw_decomp(int codec, ZSTD_DCtx *dctx, const uint8_t *in, int32_t n, uint8_t *out,
                       int32_t nout) {
  uLongf dl = (uLongf)nout;
  switch (codec) {
  case CATERVA_BLOSCLZ: cat_blosclz_decompress(in, n, out, nout); break;
  case CATERVA_LZ4:
  case CATERVA_LZ4HC: LZ4_decompress_safe((const char *)in, (char *)out, n, nout); break;
  case CATERVA_ZLIB: uncompress(out, &dl, in, (uLong)n); break;
  default: ZSTD_decompressDCtx(dctx, out, (size_t)nout, in, (size_t)n); break;
  }
}

static run bench_alone(int codec, int32_t bsize, const uint8_t *src, size_t n, uint8_t *tmp,
                       uint8_t *out) {
  run r = {1e9, 1e9, 0};
  size_t nb = n / (size_t)bsize, slot = (size_t)bsize + 1024, total = 0;
  int32_t *clen = malloc(nb * sizeof *clen);
  ZSTD_DCtx *dctx = ZSTD_createDCtx();
  double t0 = now();
  for (size_t b = 0; b < nb; b++) {
    clen[b] = raw_comp(codec, src + b * bsize, bsize, tmp + b * slot, (int32_t)slot);
    total += (size_t)(clen[b] > 0 ? clen[b] : bsize);
  }
  r.comp_s = now() - t0;
  for (int rep = 0; rep < 9; rep++) {
    t0 = now();
    for (size_t b = 0; b < nb; b++)
      if (clen[b] > 0) raw_decomp(codec, dctx, tmp + b * slot, clen[b], out + b * bsize, bsize);
      else memcpy(out + b * bsize, src + b * bsize, (size_t)bsize);
    double t = now() - t0;
    if (t < r.decomp_s) r.decomp_s = t;
  }
  r.ratio = (double)(nb * (size_t)bsize) / (double)total;
  ZSTD_freeDCtx(dctx);
  free(clen);
  return r;
}

static double bench_memcpy(const uint8_t *src, size_t n, uint8_t *out) {
  double best = 1e9;
  for (int rep = 0; rep < 9; rep++) {
    double t0 = now();
    memcpy(out, src, n);
    double t = now() - t0;
    if (t < best) best = t;
  }
  return best;
}

int main(int argc, char **argv) {
  size_t mb = argc > 1 ? (size_t)atoi(argv[1]) : 64;
  size_t n = mb << 20;
  uint8_t *f64 = malloc(n), *i32 = malloc(n), *out = malloc(n);
  uint8_t *tmp = malloc(n + n / 4 + (n / CHUNK + 1) * 1024 + (1 << 20));
  static const int codecs[] = {CATERVA_BLOSCLZ, CATERVA_LZ4, CATERVA_LZ4HC, CATERVA_ZLIB,
                               CATERVA_ZSTD};
  struct { const char *name; uint8_t *data; int ts; } sets[] = {
      {"smooth float64", f64, 8}, {"int32 ramp", i32, 4}};
  double *d = (double *)(void *)f64;
  int32_t *v = (int32_t *)(void *)i32;
  if (n < CHUNK) n = CHUNK;
  for (size_t i = 0; i < n / 8; i++) d[i] = 100.0 * (sin(i * 1e-3) + 0.5 * sin(i * 3.7e-5));
  for (size_t i = 0; i < n / 4; i++) v[i] = (int32_t)i;
  memset(out, 0, n);
  memset(tmp, 0, n / 2);
  double mc = bench_memcpy(f64, n, out);
  printf("# %zu MB per data set, 4 MB chunks, clevel 5, SHUFFLE; MB/s of uncompressed data\n", n >> 20);
  printf("# memcpy: %.0f MB/s\n", (n >> 20) / mc);
  printf("| data | codec | threads | ratio | compress MB/s | decompress MB/s | codec alone ratio | codec alone comp MB/s | codec alone decomp MB/s | decomp / (alone + memcpy) |\n");
  printf("|---|---|---|---|---|---|---|---|---|---|\n");
  for (size_t s = 0; s < 2; s++) {
    for (size_t c = 0; c < sizeof codecs / sizeof *codecs; c++) {
      caterva_cparams cp;
      caterva_cparams_init(&cp);
      cp.codec = codecs[c];
      cp.typesize = sets[s].ts;
      if (getenv("BENCH_BLOCKSIZE")) cp.blocksize = atoi(getenv("BENCH_BLOCKSIZE"));
      for (int th = 1; th <= 2; th++) {
        caterva_ctx *ctx;
        caterva_ctx_new(th, &ctx);
        run ours = bench_ours(ctx, &cp, sets[s].data, n, tmp, out);
        /* The block size our chunks pick, so the codec alone sees the same pieces. */
        caterva_chunk_info ci;
        int32_t cl = caterva_chunk_compress(ctx, &cp, sets[s].data, CHUNK, tmp, CHUNK + 64);
        caterva_chunk_info_get(tmp, (size_t)cl, &ci);
        run alone = bench_alone(codecs[c], ci.blocksize, sets[s].data, n, tmp, out);
        double mb_ = (double)(n >> 20);
        printf("| %s | %s | %d | %.2f | %.0f | %.0f | %.2f | %.0f | %.0f | %.2f |\n", sets[s].name,
               cat_codec_name(codecs[c]), th, ours.ratio, mb_ / ours.comp_s, mb_ / ours.decomp_s,
               alone.ratio, mb_ / alone.comp_s, mb_ / alone.decomp_s,
               ours.decomp_s / (alone.decomp_s + mc));
        fflush(stdout);
        caterva_ctx_free(ctx);
      }
    }
  }
  free(f64);
  free(i32);
  free(out);
  free(tmp);
  return 0;
}
