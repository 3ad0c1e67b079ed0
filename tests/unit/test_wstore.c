/*
 * test_wstore.c -- chunks written wholly, compressed on the write-behind worker (wstore.c):
 *
 *   - a load with 2 threads writes the same bytes as with 1 thread (the chunks reach the file
 *     in the same order), contiguous and sparse, for a C-order and a transposed order;
 *   - growth right after full edge chunks were handed to the worker gives the padding that
 *     becomes real the fill value (the worker's chunk is stored before the resize fills it;
 *     repeated, since without that ordering the result depends on the worker's timing);
 *   - set_slice over chunks the worker holds wins over them;
 *   - ROLLBACK TO a savepoint drops chunks handed over after it, and ROLLBACK all of them:
 *     the file is byte-identical to the one before;
 *   - a chunk written wholly twice (the second time while its first image may still be with
 *     the worker) keeps the second values;
 *   - block statistics of chunks stored from the worker equal those computed from the file;
 *   - the image pool (imgpool.c): images of a slab are 2 MiB-aligned in their slab, distinct,
 *     do not overlap, are writable whole, and come back for reuse; small ones are malloc'ed.
 */
#define _XOPEN_SOURCE 700
#include "array_internal.h"
#include "fsutil.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char tmpdir[256];

enum { T = 7, Y = 6, X = 10 };              /* shape; chunks 2x3x4, blocks 1x3x2 */
static const double FILL = 7.25;

static double cell(int64_t t, int64_t y, int64_t x, int gen) {
  return (double)(t * 1000 + y * 100 + x) + 0.5 * gen;
}

static caterva_array *make(caterva_ctx *ctx, const char *path, int sparse) {
  caterva_array_params p;
  caterva_array *a = NULL;
  caterva_array_params_init(&p);
  p.ndim = 3;
  p.shape[0] = T, p.shape[1] = Y, p.shape[2] = X;
  p.chunkshape[0] = 2, p.chunkshape[1] = 3, p.chunkshape[2] = 4;
  p.blockshape[0] = 1, p.blockshape[1] = 3, p.blockshape[2] = 2;
  p.dtype = "float64";
  p.store = sparse ? CATERVA_STORE_SPARSE : CATERVA_STORE_CONTIGUOUS;
  p.path = path;
  tu_rm_tree(path);
  if (caterva_array_create(ctx, &p, CATERVA_FILL_VALUE, &FILL, &a) < 0) return NULL;
  if (caterva_array_set_fill(ctx, a, &FILL, 1) < 0) { /* what growth fills new cells with */
    caterva_array_free(a);
    return NULL;
  }
  return a;
}

/* Every cell of the box [0, nt) x Y x X with generation gen, in C order (0), transposed (1:
 * t fastest, then y, then x) or y fastest (2: then t, then x). */
static int write_all(caterva_ctx *ctx, caterva_array *a, int64_t nt, int transposed, int gen) {
  int64_t c[3];
  for (int64_t i = 0; i < nt * Y * X; i++) {
    if (transposed == 1) c[0] = i % nt, c[1] = i / nt % Y, c[2] = i / (nt * Y);
    else if (transposed == 2) c[1] = i % Y, c[0] = i / Y % nt, c[2] = i / (nt * Y);
    else c[0] = i / (Y * X), c[1] = i / X % Y, c[2] = i % X;
    double v = cell(c[0], c[1], c[2], gen);
    if (caterva_array_set_item(ctx, a, c, &v) < 0) return -1;
  }
  return 0;
}

/* Every file byte of the array at path (a file, or a sparse directory's files in order). */
static uint8_t *slurp(const char *path, int sparse, size_t *len) {
  char name[512];
  uint8_t *out = NULL;
  *len = 0;
  for (int i = -1; i < 4096; i++) {
    uint8_t *b, *p;
    size_t n;
    if (!sparse && i >= 0) break;
    if (sparse && i < 0) snprintf(name, sizeof name, "%s/chunks.b2frame", path);
    else if (sparse) snprintf(name, sizeof name, "%s/%08X.chunk", path, (unsigned)i);
    else snprintf(name, sizeof name, "%s", path);
    if ((b = tu_read_file(name, &n)) == NULL) continue;
    p = realloc(out, *len + n + 1);
    if (p == NULL) {
      free(b);
      free(out);
      return NULL;
    }
    memcpy(p + *len, b, n);
    free(b);
    out = p;
    *len += n;
  }
  return out;
}

static int same_files(const char *p1, const char *p2, int sparse) {
  size_t n1, n2;
  uint8_t *a = slurp(p1, sparse, &n1), *b = slurp(p2, sparse, &n2);
  int same = a != NULL && b != NULL && n1 == n2 && memcmp(a, b, n1) == 0;
  free(a);
  free(b);
  return same;
}

/* The array's cells against gen for t < nt and the fill beyond; 0 when all agree. */
static int64_t check_cells(caterva_ctx *ctx, caterva_array *a, int64_t nt, int gen) {
  int64_t start[3] = {0, 0, 0}, stop[3];
  int64_t n = caterva_array_shape(a)[0] * Y * X, bad = 0;
  double *buf = malloc((size_t)n * sizeof *buf);
  stop[0] = caterva_array_shape(a)[0], stop[1] = Y, stop[2] = X;
  if (buf == NULL || caterva_array_get_slice(ctx, a, start, stop, buf, n * 8) < 0) {
    free(buf);
    return -1;
  }
  for (int64_t i = 0; i < n; i++) {
    int64_t t = i / (Y * X), y = i / X % Y, x = i % X;
    double want = t < nt ? cell(t, y, x, gen) : FILL;
    bad += buf[i] != want;
  }
  free(buf);
  return bad;
}

/* A load in one transaction with nthreads; the file path. */
static int load(int nthreads, const char *path, int sparse, int transposed) {
  caterva_ctx *ctx = NULL;
  caterva_array *a = NULL;
  int rc = -1;
  if (caterva_ctx_new(nthreads, &ctx) < 0 || (a = make(ctx, path, sparse)) == NULL) goto leave;
  if (caterva_array_begin(ctx, a) < 0 || write_all(ctx, a, T, transposed, 0) < 0 ||
      caterva_array_commit(ctx, a, 0) < 0)
    goto leave;
  rc = check_cells(ctx, a, T, 0) == 0 ? 0 : -1;
leave:
  caterva_array_free(a);
  caterva_ctx_free(ctx);
  return rc;
}

static void test_same_bytes(void) {
  for (int sparse = 0; sparse < 2; sparse++)
    for (int tr = 0; tr < 2; tr++) {
      char p1[300], p2[300];
      snprintf(p1, sizeof p1, "%s/one-%d-%d.b2nd", tmpdir, sparse, tr);
      snprintf(p2, sizeof p2, "%s/two-%d-%d.b2nd", tmpdir, sparse, tr);
      int ok = load(1, p1, sparse, tr) == 0 && load(2, p2, sparse, tr) == 0;
      tap_ok(ok && same_files(p1, p2, sparse),
             "%s, %s order: a load with 2 threads writes the same bytes as with 1",
             sparse ? "sparse" : "contiguous", tr ? "transposed" : "C");
    }
}

/* Full edge chunks (t = 6 of 7: chunk row 3 has t 6 real, t 7 padding) handed to the worker,
 * then growth to 9: t 7 and 8 must read the fill. */
static void test_growth(caterva_ctx *ctx) {
  int64_t bad_runs = 0, runs = 40;
  for (int r = 0; r < runs; r++) {
    char path[300];
    int64_t shape[3] = {9, Y, X};
    snprintf(path, sizeof path, "%s/grow.b2nd", tmpdir);
    caterva_array *a = make(ctx, path, r & 1);
    int ok = a != NULL && caterva_array_begin(ctx, a) >= 0 && write_all(ctx, a, T, 0, 1) >= 0 &&
             caterva_array_resize(ctx, a, shape) >= 0 && caterva_array_commit(ctx, a, 0) >= 0 &&
             check_cells(ctx, a, T, 1) == 0;
    bad_runs += !ok;
    caterva_array_free(a);
  }
  tap_ok(bad_runs == 0, "growth right after full edge chunks: the new rows read the fill "
                        "(%lld of %lld runs wrong)", (long long)bad_runs, (long long)runs);
}

static void test_set_slice(caterva_ctx *ctx) {
  char path[300];
  int64_t start[3] = {0, 0, 0}, stop[3] = {T, Y, X}, n = T * Y * X, bad;
  double *buf = malloc((size_t)n * sizeof *buf);
  snprintf(path, sizeof path, "%s/slice.b2nd", tmpdir);
  caterva_array *a = make(ctx, path, 0);
  for (int64_t i = 0; buf != NULL && i < n; i++) buf[i] = cell(i / (Y * X), i / X % Y, i % X, 2);
  int ok = a != NULL && buf != NULL && caterva_array_begin(ctx, a) >= 0 &&
           write_all(ctx, a, T, 0, 1) >= 0 &&
           caterva_array_set_slice(ctx, a, start, stop, buf, n * 8) >= 0 &&
           caterva_array_commit(ctx, a, 0) >= 0;
  bad = ok ? check_cells(ctx, a, T, 2) : -1;
  tap_ok(bad == 0, "set_slice after full chunks went to the worker: its values win (%lld wrong)",
         (long long)bad);
  caterva_array_free(a);
  free(buf);
}

static void test_rollback(caterva_ctx *ctx) {
  for (int sparse = 0; sparse < 2; sparse++) {
    char path[300], copy[300], cmd[1000];
    snprintf(path, sizeof path, "%s/rb-%d.b2nd", tmpdir, sparse);
    snprintf(copy, sizeof copy, "%s/rb-%d.copy", tmpdir, sparse);
    caterva_array *a = make(ctx, path, sparse);
    int ok = a != NULL && caterva_array_begin(ctx, a) >= 0 && write_all(ctx, a, T, 0, 1) >= 0 &&
             caterva_array_commit(ctx, a, 1) >= 0;
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s' '%s'", copy, path, copy);
    ok = ok && system(cmd) == 0;
    /* a savepoint after half of the rows, the rest handed over, ROLLBACK TO it */
    ok = ok && caterva_array_begin(ctx, a) >= 0 && write_all(ctx, a, 4, 0, 3) >= 0 &&
         caterva_array_savepoint(ctx, a, 1) >= 0 && write_all(ctx, a, T, 0, 4) >= 0 &&
         caterva_array_rollback_to(ctx, a, 1) >= 0 && caterva_array_flush(ctx, a) >= 0;
    int64_t start[3] = {4, 0, 0}, stop[3] = {T, Y, X}, bad = 0;
    double tail[3 * Y * X];
    ok = ok && caterva_array_get_slice(ctx, a, start, stop, tail, sizeof tail) >= 0;
    for (int64_t i = 0; ok && i < 3 * Y * X; i++)
      bad += tail[i] != cell(4 + i / (Y * X), i / X % Y, i % X, 1);
    tap_ok(ok && bad == 0, "%s: ROLLBACK TO a savepoint drops the chunks handed over after it "
                           "(%lld cells wrong)", sparse ? "sparse" : "contiguous", (long long)bad);
    ok = ok && caterva_array_rollback(ctx, a) >= 0;
    tap_ok(ok && same_files(path, copy, sparse) && check_cells(ctx, a, T, 1) == 0,
           "%s: ROLLBACK after chunks went to the worker leaves the file byte-identical",
           sparse ? "sparse" : "contiguous");
    caterva_array_free(a);
  }
}

/* Rows arriving with another dimension than the last fastest fill images in their own order
 * (wcache.c, perm): chunks completed that way, chunks written in part over committed ones
 * (their other cells from the file), a savepoint's copies and ROLLBACK TO, growth with such
 * images pending, and the edge chunks of the shape (t 6 of 7, x 8-9 of 10) all read back. */
static void test_orders(caterva_ctx *ctx) {
  for (int order = 1; order <= 2; order++)
    for (int sparse = 0; sparse < 2; sparse++) {
      char path[300];
      int64_t shape[3] = {9, Y, X}, bad[4] = {-1, -1, -1, -1};
      snprintf(path, sizeof path, "%s/order-%d-%d.b2nd", tmpdir, order, sparse);
      caterva_array *a = make(ctx, path, sparse);
      int ok = a != NULL && caterva_array_begin(ctx, a) >= 0 &&
               write_all(ctx, a, T, order, 1) >= 0 && caterva_array_commit(ctx, a, 0) >= 0;
      if (ok) bad[0] = check_cells(ctx, a, T, 1);
      /* the first 3 time steps (1.5 chunk rows) again: partial chunks completed from the file */
      ok = ok && caterva_array_begin(ctx, a) >= 0 && write_all(ctx, a, 3, order, 2) >= 0 &&
           caterva_array_commit(ctx, a, 0) >= 0;
      if (ok) {
        int64_t start[3] = {0, 0, 0}, stop[3] = {T, Y, X}, n = T * Y * X;
        double *buf = malloc((size_t)n * sizeof *buf);
        bad[1] = buf == NULL || caterva_array_get_slice(ctx, a, start, stop, buf, n * 8) < 0;
        for (int64_t i = 0; buf != NULL && bad[1] >= 0 && i < n; i++)
          bad[1] += buf[i] != cell(i / (Y * X), i / X % Y, i % X, i / (Y * X) < 3 ? 2 : 1);
        free(buf);
      }
      /* a savepoint with images pending, more rows, ROLLBACK TO it, growth, commit */
      ok = ok && caterva_array_begin(ctx, a) >= 0 && write_all(ctx, a, 5, order, 3) >= 0 &&
           caterva_array_savepoint(ctx, a, 1) >= 0 && write_all(ctx, a, T, order, 4) >= 0 &&
           caterva_array_rollback_to(ctx, a, 1) >= 0 && write_all(ctx, a, T, order, 3) >= 0 &&
           caterva_array_resize(ctx, a, shape) >= 0 && caterva_array_commit(ctx, a, 0) >= 0;
      if (ok) bad[2] = check_cells(ctx, a, T, 3);
      /* a write of part of the rows, then a flush and a read inside the transaction */
      ok = ok && caterva_array_begin(ctx, a) >= 0 && write_all(ctx, a, T, order, 5) >= 0 &&
           caterva_array_flush(ctx, a) >= 0;
      if (ok) bad[3] = check_cells(ctx, a, T, 5);
      ok = ok && caterva_array_rollback(ctx, a) >= 0 && check_cells(ctx, a, T, 3) == 0;
      tap_ok(ok && bad[0] == 0 && bad[1] == 0 && bad[2] == 0 && bad[3] == 0,
             "%s, %s fastest: loaded, rewritten in part, savepoint and ROLLBACK TO with growth, "
             "flushed: every cell right (wrong: %lld, %lld, %lld, %lld)",
             sparse ? "sparse" : "contiguous", order == 1 ? "t" : "y", (long long)bad[0],
             (long long)bad[1], (long long)bad[2], (long long)bad[3]);
      caterva_array_free(a);
    }
}

/* A chunk 40,000 items long in blocks of one along that dimension: block numbers past 32,767
 * in the write cache's per-dimension tables (written in C order, and transposed). */
static void test_long_chunk(caterva_ctx *ctx) {
  enum { L = 40000 };
  for (int tr = 0; tr < 2; tr++) {
    char path[300];
    caterva_array_params p;
    caterva_array *a = NULL;
    int64_t bad = -1, start[2] = {0, 0}, stop[2] = {L, 2};
    int32_t *buf = malloc((size_t)L * 2 * sizeof *buf);
    int ok;
    snprintf(path, sizeof path, "%s/long-%d.b2nd", tmpdir, tr);
    caterva_array_params_init(&p);
    p.ndim = 2;
    p.shape[0] = L, p.shape[1] = 2;
    p.chunkshape[0] = L, p.chunkshape[1] = 2;
    p.blockshape[0] = 1, p.blockshape[1] = 2;
    p.dtype = "int32";
    p.store = CATERVA_STORE_CONTIGUOUS;
    p.path = path;
    tu_rm_tree(path);
    ok = buf != NULL && caterva_array_create(ctx, &p, CATERVA_FILL_ZEROS, NULL, &a) >= 0 &&
         caterva_array_begin(ctx, a) >= 0;
    for (int64_t i = 0; ok && i < 2 * L; i++) {
      int64_t c[2] = {tr ? i % L : i / 2, tr ? i / L : i % 2};
      int32_t v = (int32_t)(c[0] * 2 + c[1]);
      ok = caterva_array_set_item(ctx, a, c, &v) >= 0;
    }
    ok = ok && caterva_array_commit(ctx, a, 0) >= 0 &&
         caterva_array_get_slice(ctx, a, start, stop, buf, (int64_t)L * 2 * 4) >= 0;
    if (ok) bad = 0;
    for (int64_t i = 0; ok && i < 2 * L; i++) bad += buf[i] != (int32_t)i;
    tap_ok(ok && bad == 0, "a chunk of %d blocks along one dimension, written %s: every cell "
           "right (%lld wrong%s%s)", L, tr ? "transposed" : "in C order", (long long)bad,
           ok ? "" : "; ", ok ? "" : caterva_ctx_errmsg(ctx));
    caterva_array_free(a);
    free(buf);
  }
}

static void test_twice(caterva_ctx *ctx) {
  char path[300];
  snprintf(path, sizeof path, "%s/twice.b2nd", tmpdir);
  caterva_array *a = make(ctx, path, 0);
  int ok = a != NULL && caterva_array_begin(ctx, a) >= 0;
  for (int gen = 0; ok && gen < 6; gen++) ok = write_all(ctx, a, T, gen & 1, gen) >= 0;
  ok = ok && caterva_array_commit(ctx, a, 0) >= 0;
  tap_ok(ok && check_cells(ctx, a, T, 5) == 0,
         "every chunk written wholly six times in one transaction keeps the last values");
  caterva_array_free(a);
}

static void test_stats(caterva_ctx *ctx) {
  char path[300];
  int64_t nchunks, bad = 0, have = 0;
  snprintf(path, sizeof path, "%s/stats.b2nd", tmpdir);
  if (load(2, path, 0, 0) < 0) {
    tap_ok(0, "load for the statistics");
    return;
  }
  caterva_array *a = NULL;
  int ok = caterva_array_open(ctx, path, CATERVA_OPEN_READ, &a) >= 0;
  nchunks = ok ? a->g.nchunks : 0;
  for (int64_t n = 0; ok && n < nchunks; n++) {
    caterva_block_stats st;
    int r = caterva_array_block_stats(ctx, a, n, 0, &st);
    have += r == 1;
    /* the same block computed from the chunk as stored */
    uint8_t *img = malloc((size_t)a->g.chunksize);
    if (img == NULL || cat_array_read_chunk(ctx, a, n, img) < 0) {
      bad++;
      free(img);
      continue;
    }
    double mn = 1e300, mx = -1e300;
    for (int64_t i = 0; i < a->g.blockitems; i++) {
      double v;
      memcpy(&v, img + i * 8, 8);
      mn = v < mn ? v : mn;
      mx = v > mx ? v : mx;
    }
    bad += r != 1 || st.min.f != mn || st.max.f != mx || st.nvalid != a->g.blockitems;
    free(img);
  }
  tap_ok(ok && have == nchunks && bad == 0,
         "statistics of chunks stored from the worker: %lld of %lld chunks have them, %lld "
         "disagree with the stored bytes", (long long)have, (long long)nchunks, (long long)bad);
  caterva_array_free(a);
}

/* Images of 1 MiB + 8 bytes (7 a slab) and of 1000 bytes (malloc). */
static void test_pool(void) {
  size_t sizes[2] = {((size_t)1 << 20) + 8, 1000};
  for (int k = 0; k < 2; k++) {
    cat_imgpool *p = cat_imgpool_new(sizes[k]);
    uint8_t *img[20];
    int ok = p != NULL, aligned = 0;
    for (int i = 0; ok && i < 20; i++) {
      img[i] = cat_imgpool_get(p);
      ok = img[i] != NULL;
      if (ok) memset(img[i], i + 1, sizes[k]);
      if (ok) aligned += ((uintptr_t)img[i] & (((uintptr_t)2 << 20) - 1)) == 0;
    }
    for (int i = 0; ok && i < 20; i++) /* each still holds its own bytes: no overlap */
      ok = img[i][0] == i + 1 && img[i][sizes[k] - 1] == i + 1;
    for (int i = 0; ok && i < 20; i++) cat_imgpool_put(p, img[i]);
    uint8_t *again = ok ? cat_imgpool_get(p) : NULL;
    int reused = 0;
    for (int i = 0; again != NULL && i < 20; i++) reused |= again == img[i];
    if (again != NULL) cat_imgpool_put(p, again);
    cat_imgpool_free(p);
    tap_ok(ok && (k == 1 || (aligned >= 3 && reused)),
           "image pool, images of %zu bytes: 20 distinct writable images%s", sizes[k],
           k == 0 ? ", each slab's first 2 MiB-aligned, given back and reused" : " (malloc)");
  }
}

int main(void) {
  const char *t = getenv("TMPDIR");
  caterva_ctx *ctx = NULL;
  snprintf(tmpdir, sizeof tmpdir, "%s/test_wstore.XXXXXX", t && *t ? t : "/tmp");
  if (mkdtemp(tmpdir) == NULL) return tap_skip_all("cannot create a temporary directory");
  if (caterva_ctx_new(getenv("WS_THREADS") ? atoi(getenv("WS_THREADS")) : 2, &ctx) < 0) return tap_skip_all("no context");
  test_same_bytes();
  test_growth(ctx);
  test_set_slice(ctx);
  test_rollback(ctx);
  test_twice(ctx);
  test_orders(ctx);
  test_long_chunk(ctx);
  test_stats(ctx);
  test_pool();
  caterva_ctx_free(ctx);
  tu_rm_tree(tmpdir);
  return tap_done();
}
