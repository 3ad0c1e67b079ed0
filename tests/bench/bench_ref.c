/*
 * bench_ref.c -- reads of libcaterva against the reference c-blosc2, in one process, on one
 * file (not a test: it prints figures). Built only with configure --with-ref-blosc2=PREFIX;
 * run with `make bench-ref`.
 *
 * The file is written by the reference (b2nd, contiguous frame on disk): an N^3 float64
 * array (default N = 400) holding bench_core's data, v = 100*(sin(c0*0.1) + sin(c1*0.1/2) +
 * sin(c2*0.1/3) + 0.5*sin(i*1e-4)), chunks 100^3, blocks 20^3, BloscLZ clevel 5 + shuffle
 * and Zstd clevel 1 + shuffle. Both libraries open it and read: the whole array, slices
 * [k,:,:], [:,k,:] and [:,:,k] for five k, a 10^3 box inside one chunk and one across 8
 * chunks; at 1 and 2 threads (ours: the context's thread count; the reference: the opened
 * super-chunk's decompression context, recreated with blosc2_dparams.nthreads). Runs
 * alternate ours / reference; each figure is the best of R runs (whole: 5, the others: 7),
 * slices averaged over their five k. Every read of ours is compared byte for byte with the
 * reference's read of the same box, and the whole array with the source data.
 *
 * Usage: tests/bench/bench_ref [N [DIR]]   (REF_BLOSC2_COMMIT: the reference's commit, printed)
 */
#include "config.h"
#include "caterva.h"

#include <b2nd.h>
#include <blosc2.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define NK 5         /* positions per slice axis */
#define REP_WHOLE 5  /* best of, whole array */
#define REP_PART 7   /* best of, slices and boxes */

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void fail(const char *what) {
  fprintf(stderr, "bench_ref: %s\n", what);
  exit(1);
}

static void die(caterva_ctx *ctx, const char *what, int rc) {
  fprintf(stderr, "bench_ref: %s: %s (%s)\n", what, caterva_strerror(rc),
          ctx ? caterva_ctx_errmsg(ctx) : "");
  exit(1);
}

/* Both readers of one file, and the buffers they read into. */
typedef struct bench {
  int64_t n;
  caterva_ctx *ctx;   /* ours, with the thread count under test */
  caterva_array *a;   /* ours */
  b2nd_array_t *r;    /* the reference's */
  uint8_t *ours, *theirs;
  size_t cap;
} bench;

/* Read box [start, stop) with both, alternating, best of rep each; check equal bytes. */
static void time_box(bench *b, const int64_t *start, const int64_t *stop, int rep, double *t_ours,
                     double *t_ref) {
  int64_t shape[3], nbytes = 8;
  for (int k = 0; k < 3; k++) {
    shape[k] = stop[k] - start[k];
    nbytes *= shape[k];
  }
  *t_ours = *t_ref = 1e9;
  for (int r = 0; r < rep; r++) {
    double t0 = now();
    int rc = caterva_array_get_slice(b->ctx, b->a, start, stop, b->ours, nbytes);
    double t1 = now();
    if (rc < 0) die(b->ctx, "caterva_array_get_slice", rc);
    if (t1 - t0 < *t_ours) *t_ours = t1 - t0;
    t0 = now();
    rc = b2nd_get_slice_cbuffer(b->r, start, stop, b->theirs, shape, nbytes);
    t1 = now();
    if (rc < 0) fail("b2nd_get_slice_cbuffer failed");
    if (t1 - t0 < *t_ref) *t_ref = t1 - t0;
    if (memcmp(b->ours, b->theirs, (size_t)nbytes) != 0) {
      fprintf(stderr, "bench_ref: box [%lld:%lld, %lld:%lld, %lld:%lld] differs\n",
              (long long)start[0], (long long)stop[0], (long long)start[1], (long long)stop[1],
              (long long)start[2], (long long)stop[2]);
      exit(1);
    }
  }
}

static void row(const char *codec, int th, const char *what, double ours, double ref, double worst) {
  printf("| %s | %d | %s | %.3f | %.3f | %.2f | %.2f |\n", codec, th, what, ours * 1e3, ref * 1e3,
         ours / ref, worst);
  fflush(stdout);
}

/* Slices along axis at NK positions (different chunks, different offsets in the block). */
static void bench_slices(bench *b, const char *codec, int th, int axis) {
  static const char *names[3] = {"slice [k,:,:]", "slice [:,k,:]", "slice [:,:,k]"};
  double so = 0, sr = 0, worst = 0;
  for (int i = 0; i < NK; i++) {
    int64_t start[3] = {0, 0, 0}, stop[3] = {b->n, b->n, b->n};
    int64_t k = (b->n / (NK + 1)) * (i + 1) + 3 * i;
    double to, tr;
    if (k >= b->n) k = b->n - 1;
    start[axis] = k;
    stop[axis] = k + 1;
    time_box(b, start, stop, REP_PART, &to, &tr);
    so += to;
    sr += tr;
    if (to / tr > worst) worst = to / tr;
  }
  row(codec, th, names[axis], so / NK, sr / NK, worst);
}

/* A 10^3 box at origin o + {0, 1, 2} (three positions; best of REP_PART at each, summed). */
static void bench_cube(bench *b, const char *codec, int th, const char *what, int64_t o) {
  double so = 0, sr = 0, worst = 0;
  for (int i = 0; i < 3; i++) {
    int64_t start[3], stop[3];
    double to, tr;
    for (int k = 0; k < 3; k++) {
      start[k] = o + i;
      stop[k] = start[k] + 10;
    }
    time_box(b, start, stop, REP_PART, &to, &tr);
    so += to;
    sr += tr;
    if (to / tr > worst) worst = to / tr;
  }
  row(codec, th, what, so / 3, sr / 3, worst);
}

/* The reference's decompression threads: a new dctx for the opened super-chunk. */
static void ref_threads(b2nd_array_t *r, int th) {
  blosc2_dparams dp = BLOSC2_DPARAMS_DEFAULTS;
  dp.nthreads = (int16_t)th;
  dp.schunk = r->sc;
  blosc2_free_ctx(r->sc->dctx);
  r->sc->dctx = blosc2_create_dctx(dp);
  if (r->sc->dctx == NULL) fail("blosc2_create_dctx failed");
}

/* Write src as the b2nd array at path with the reference. */
static void ref_write(const char *path, int64_t n, const double *src, int compcode, int clevel) {
  blosc2_cparams cp = BLOSC2_CPARAMS_DEFAULTS;
  blosc2_dparams dp = BLOSC2_DPARAMS_DEFAULTS;
  blosc2_storage st = BLOSC2_STORAGE_DEFAULTS;
  int64_t shape[3] = {n, n, n};
  int32_t cshape[3] = {100, 100, 100}, bshape[3] = {20, 20, 20};
  b2nd_array_t *arr = NULL;
  cp.compcode = (uint8_t)compcode;
  cp.clevel = (uint8_t)clevel;
  cp.typesize = 8;
  cp.nthreads = 2;
  for (int i = 0; i < BLOSC2_MAX_FILTERS; i++) cp.filters[i] = BLOSC_NOFILTER;
  cp.filters[BLOSC2_MAX_FILTERS - 1] = BLOSC_SHUFFLE;
  st.contiguous = true;
  st.urlpath = (char *)path;
  st.cparams = &cp;
  st.dparams = &dp;
  blosc2_remove_urlpath(path);
  b2nd_context_t *bctx = b2nd_create_ctx(&st, 3, shape, cshape, bshape, "<f8", DTYPE_NUMPY_FORMAT,
                                         NULL, 0);
  if (bctx == NULL) fail("b2nd_create_ctx failed");
  if (b2nd_from_cbuffer(bctx, &arr, src, n * n * n * 8) < 0) fail("b2nd_from_cbuffer failed");
  b2nd_free(arr);
  b2nd_free_ctx(bctx);
}

typedef struct config {
  const char *name;
  int compcode, clevel;
} config;

static void bench_file(bench *b, const config *c, const char *path, const double *src) {
  size_t nbytes = (size_t)(b->n * b->n * b->n) * 8;
  ref_write(path, b->n, src, c->compcode, c->clevel);
  if (b2nd_open(path, &b->r) < 0) fail("b2nd_open failed");
  for (int th = 1; th <= 2; th++) {
    int rc = caterva_ctx_new(th, &b->ctx);
    if (rc < 0) die(NULL, "caterva_ctx_new", rc);
    rc = caterva_array_open(b->ctx, path, CATERVA_OPEN_READ, &b->a);
    if (rc < 0) die(b->ctx, "caterva_array_open", rc);
    ref_threads(b->r, th);
    {
      int64_t zero[3] = {0, 0, 0}, all[3] = {b->n, b->n, b->n};
      double to, tr;
      time_box(b, zero, all, REP_WHOLE, &to, &tr);
      if (memcmp(b->ours, src, nbytes) != 0) fail("the whole array differs from the source");
      row(c->name, th, "whole array", to, tr, to / tr);
    }
    for (int axis = 0; axis < 3; axis++) bench_slices(b, c->name, th, axis);
    bench_cube(b, c->name, th, "10^3 box in 1 chunk", b->n / 4 + 3);
    bench_cube(b, c->name, th, "10^3 box across 8 chunks", b->n / 4 - 5);
    caterva_array_free(b->a);
    caterva_ctx_free(b->ctx);
  }
  b2nd_free(b->r);
}

int main(int argc, char **argv) {
  static const config configs[] = {{"blosclz-5", BLOSC_BLOSCLZ, 5}, {"zstd-1", BLOSC_ZSTD, 1}};
  bench b = {0};
  const char *dir = argc > 2 ? argv[2] : "/tmp";
  const char *commit = getenv("REF_BLOSC2_COMMIT");
  char path[4096];
  double *src;
  double load[3] = {0, 0, 0};
  b.n = argc > 1 ? atoll(argv[1]) : 400;
  if (b.n < 40 || b.n > 2000) fail("N must be in [40, 2000]");
  b.cap = (size_t)(b.n * b.n * b.n) * 8;
  src = malloc(b.cap);
  b.ours = malloc(b.cap);
  b.theirs = malloc(b.cap);
  if (src == NULL || b.ours == NULL || b.theirs == NULL) fail("out of memory");
  snprintf(path, sizeof path, "%s/bench_ref_%ld.b2nd", dir, (long)getpid());
  for (int64_t c0 = 0, i = 0; c0 < b.n; c0++)
    for (int64_t c1 = 0; c1 < b.n; c1++)
      for (int64_t c2 = 0; c2 < b.n; c2++, i++)
        src[i] = 100 * (sin(c0 * 0.1) + sin(c1 * 0.1 / 2) + sin(c2 * 0.1 / 3) + 0.5 * sin(i * 1e-4));
  memset(b.ours, 0, b.cap); /* fault the pages in */
  memset(b.theirs, 0, b.cap);
  blosc2_init();
  if (getloadavg(load, 3) < 0) load[0] = load[1] = load[2] = -1;
  printf("# %lldx%lldx%lld float64, chunks 100^3, blocks 20^3, a contiguous frame written by the "
         "reference; libcaterva (%s) against c-blosc2 %s (commit %s); load average %.2f %.2f %.2f\n",
         (long long)b.n, (long long)b.n, (long long)b.n, PACKAGE_VERSION,
         blosc2_get_version_string(), commit ? commit : "not given: set REF_BLOSC2_COMMIT",
         load[0], load[1], load[2]);
  printf("# times in ms, best of %d (whole) or %d (others) alternating runs; slices: mean over %d "
         "k; ratio = ours / reference (worst: the largest ratio over the positions)\n",
         REP_WHOLE, REP_PART, NK);
  printf("| codec | threads | read | ours ms | reference ms | ratio | worst |\n");
  printf("|---|---|---|---|---|---|---|\n");
  for (size_t c = 0; c < sizeof configs / sizeof *configs; c++)
    bench_file(&b, &configs[c], path, src);
  blosc2_remove_urlpath(path);
  blosc2_destroy();
  if (getloadavg(load, 3) >= 0)
    printf("# load average at the end: %.2f %.2f %.2f\n", load[0], load[1], load[2]);
  free(src);
  free(b.ours);
  free(b.theirs);
  return 0;
}
