/*
 * bench_core.c -- N-d array benchmark (not a test: it prints figures).
 *
 * A 400x400x400 float64 array, v = 100*(sin(c0*0.1) + sin(c1*0.1/2) + sin(c2*0.1/3)
 * + 0.5*sin(i*1e-4)), chunks 100^3, blocks 20^3; BloscLZ clevel 5 + shuffle, and Zstd
 * clevel 1 + shuffle; nthreads 1 and 2; in memory and from a contiguous file. Times:
 * compress the whole array, decompress it whole, slices [k,:,:], [:,k,:], [:,:,k] (median
 * over 7 values of k), a 10^3 box inside one chunk and one across 8 chunks (median of 51).
 * memcpy of the whole buffer is printed as the floor. Compression is the best of two runs,
 * whole decompression the best of three.
 *
 * Usage: tests/bench/bench_core [N]   (N = edge length, default 400)
 */
#include "caterva.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmpd(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmpd);
  return v[n / 2];
}

static void die(caterva_ctx *ctx, const char *what, int rc) {
  fprintf(stderr, "%s: %s (%s)\n", what, caterva_strerror(rc), caterva_ctx_errmsg(ctx));
  exit(1);
}

/* Median time of slice [k,:,:] (axis 0), [:,k,:] or [:,:,k] over 7 k. */
static double bench_slice(caterva_ctx *ctx, caterva_array *a, int64_t n, int axis, double *buf) {
  double t[7];
  for (int r = 0; r < 7; r++) {
    int64_t start[3] = {0, 0, 0}, stop[3] = {n, n, n};
    int64_t k = (n / 8) * (r + 1) + r; /* different chunks and in-block offsets */
    start[axis] = k;
    stop[axis] = k + 1;
    double t0 = now();
    int rc = caterva_array_get_slice(ctx, a, start, stop, buf, n * n * 8);
    if (rc < 0) die(ctx, "slice", rc);
    t[r] = now() - t0;
  }
  return median(t, 7);
}

static double bench_box(caterva_ctx *ctx, caterva_array *a, const int64_t *origin, double *buf,
                        const double *ref, int64_t n) {
  double t[51];
  for (int r = 0; r < 51; r++) {
    int64_t start[3], stop[3];
    for (int k = 0; k < 3; k++) {
      start[k] = origin[k] + (r % 3);
      stop[k] = start[k] + 10;
    }
    double t0 = now();
    int rc = caterva_array_get_slice(ctx, a, start, stop, buf, 1000 * 8);
    if (rc < 0) die(ctx, "box", rc);
    t[r] = now() - t0;
    if (buf[0] != ref[(start[0] * n + start[1]) * n + start[2]]) {
      fprintf(stderr, "box value mismatch\n");
      exit(1);
    }
  }
  return median(t, 51);
}

typedef struct config {
  const char *name;
  int codec, clevel;
} config;

int main(int argc, char **argv) {
  int64_t n = argc > 1 ? atoll(argv[1]) : 400;
  size_t nbytes = (size_t)(n * n * n) * 8;
  double *src = malloc(nbytes), *out = malloc(nbytes), *slice = malloc((size_t)(n * n) * 8);
  static const config configs[] = {{"blosclz-5", CATERVA_BLOSCLZ, 5}, {"zstd-1", CATERVA_ZSTD, 1}};
  char path[] = "/tmp/bench_core_XXXXXX";
  int64_t in_one[3] = {n / 4 + 3, n / 4 + 3, n / 4 + 3};
  int64_t across[3] = {n / 4 - 5, n / 4 - 5, n / 4 - 5};
  double t0;

  for (int64_t c0 = 0, i = 0; c0 < n; c0++)
    for (int64_t c1 = 0; c1 < n; c1++)
      for (int64_t c2 = 0; c2 < n; c2++, i++)
        src[i] = 100 * (sin(c0 * 0.1) + sin(c1 * 0.1 / 2) + sin(c2 * 0.1 / 3) + 0.5 * sin(i * 1e-4));
  memset(out, 0, nbytes); /* fault the pages in: time the copy, not the kernel */
  t0 = now();
  memcpy(out, src, nbytes);
  printf("# %lldx%lldx%lld float64 (%.0f MB), chunks 100^3, blocks 20^3; memcpy of it: %.3f s\n",
         (long long)n, (long long)n, (long long)n, nbytes / 1e6, now() - t0);
  printf("| codec | threads | store | ratio | compress s | decompress s | slice [k,:,:] ms | "
         "slice [:,k,:] ms | slice [:,:,k] ms | 10^3 box in 1 chunk ms | 10^3 box across 8 ms |\n");
  printf("|---|---|---|---|---|---|---|---|---|---|---|\n");
  int fd = mkstemp(path);
  if (fd >= 0) close(fd);
  for (size_t c = 0; c < sizeof configs / sizeof *configs; c++) {
    for (int th = 1; th <= 2; th++) {
      for (int store = 0; store < 2; store++) {
        caterva_ctx *ctx;
        caterva_array *a = NULL;
        caterva_array_params p;
        int rc;
        caterva_ctx_new(th, &ctx);
        caterva_array_params_init(&p);
        p.ndim = 3;
        for (int k = 0; k < 3; k++) {
          p.shape[k] = n;
          p.chunkshape[k] = 100;
          p.blockshape[k] = 20;
        }
        p.itemsize = 8;
        p.dtype = "<f8";
        p.cparams.codec = configs[c].codec;
        p.cparams.clevel = configs[c].clevel;
        p.store = store ? CATERVA_STORE_CONTIGUOUS : CATERVA_STORE_MEMORY;
        p.path = store ? path : NULL;
        double tc = 1e9;
        for (int rep = 0; rep < 2; rep++) { /* best of two: the first pays for cold memory */
          if (a != NULL) caterva_array_free(a);
          a = NULL;
          if (store) unlink(path);
          t0 = now();
          rc = caterva_array_from_buffer(ctx, &p, src, (int64_t)nbytes, &a);
          if (rc < 0) die(ctx, "from_buffer", rc);
          if (now() - t0 < tc) tc = now() - t0;
        }
        if (store) { /* reopen: the reads come from the file */
          caterva_array_free(a);
          rc = caterva_array_open(ctx, path, CATERVA_OPEN_READ, &a);
          if (rc < 0) die(ctx, "open", rc);
        }
        double ratio = (double)caterva_schunk_nbytes(caterva_array_schunk(a)) /
                       (double)caterva_schunk_cbytes(caterva_array_schunk(a));
        double td = 1e9;
        for (int r = 0; r < 3; r++) {
          t0 = now();
          rc = caterva_array_to_buffer(ctx, a, out, (int64_t)nbytes);
          if (rc < 0) die(ctx, "to_buffer", rc);
          if (now() - t0 < td) td = now() - t0;
        }
        if (memcmp(out, src, nbytes) != 0) {
          fprintf(stderr, "round trip mismatch\n");
          return 1;
        }
        double s0 = bench_slice(ctx, a, n, 0, slice), s1 = bench_slice(ctx, a, n, 1, slice);
        double s2 = bench_slice(ctx, a, n, 2, slice);
        double b1 = bench_box(ctx, a, in_one, slice, src, n);
        double b8 = bench_box(ctx, a, across, slice, src, n);
        printf("| %s | %d | %s | %.2f | %.3f | %.3f | %.2f | %.2f | %.2f | %.3f | %.3f |\n",
               configs[c].name, th, store ? "file" : "memory", ratio, tc, td, s0 * 1e3,
               s1 * 1e3, s2 * 1e3, b1 * 1e3, b8 * 1e3);
        fflush(stdout);
        caterva_array_free(a);
        caterva_ctx_free(ctx);
      }
    }
  }
  unlink(path);
  free(src);
  free(out);
  free(slice);
  return 0;
}
