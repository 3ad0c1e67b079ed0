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
 *   - blocks written in part are completed from the stored chunk's own blocks, decoded on
 *     the worker and, in parallel, on the caller's thread; a stored chunk of another block
 *     size is rebuilt whole, not patched;
 *   - the image pool (imgpool.c): images of a slab are 2 MiB-aligned in their slab, distinct,
 *     do not overlap, are writable whole, and come back for reuse; small ones are malloc'ed;
 *     a freed pool's slabs serve the next pool without fresh pages.
 */
#define _XOPEN_SOURCE 700
#include "array_layer_internal.h"
#include "fsutil.h"
#include "tap.h"

#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static char tmpdir[256];

enum { T = 7, Y = 6, X = 10 };              /* shape; chunks 2x3x4, blocks 1x3x2 */
static const double FILL = 7.25;

static double cell(int64_t t, int64_t y, int64_t x, int gen) {
  return (double)(t * 1000 + y * 100 + x) + 0.5 * gen;
}

/* A new float64 array of 3 dimensions at path: shape, chunks and blocks by 3 each (geo),
 * every cell FILL. */
static caterva_array *make_geo(caterva_ctx *ctx, const char *path, int sparse,
                               const int64_t geo[9]) {
  caterva_array_params p;
  caterva_array *a = NULL;
  caterva_array_params_init(&p);
  p.ndim = 3;
  for (int k = 0; k < 3; k++) {
    p.shape[k] = geo[k];
    p.chunkshape[k] = (int32_t)geo[3 + k];
    p.blockshape[k] = (int32_t)geo[6 + k];
  }
  p.dtype = "float64";
  p.store = sparse ? CATERVA_STORE_SPARSE : CATERVA_STORE_CONTIGUOUS;
  p.path = path;
  tu_rm_tree(path);
  return caterva_array_create(ctx, &p, CATERVA_FILL_VALUE, &FILL, &a) < 0 ? NULL : a;
}

static caterva_array *make(caterva_ctx *ctx, const char *path, int sparse) {
  static const int64_t geo[9] = {T, Y, X, 2, 3, 4, 1, 3, 2};
  caterva_array *a = make_geo(ctx, path, sparse, geo);
  if (a == NULL) return NULL;
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

/* Cells written one by one into part of a chunk (pending in the write cache, over a chunk
 * stored before), then a slice over them in the same transaction: the slice came last, it
 * wins (the pending image must not overwrite it at the commit). */
static void test_slice_over_pending(caterva_ctx *ctx) {
  for (int sparse = 0; sparse < 2; sparse++) {
    char path[300];
    int64_t start[3] = {0, 0, 0}, stop[3] = {2, 3, 4}, bad = -1;
    double box[2 * 3 * 4];
    snprintf(path, sizeof path, "%s/pending-%d.b2nd", tmpdir, sparse);
    caterva_array *a = make(ctx, path, sparse);
    int ok = a != NULL && caterva_array_begin(ctx, a) >= 0 && write_all(ctx, a, T, 0, 1) >= 0 &&
             caterva_array_commit(ctx, a, 0) >= 0 && caterva_array_begin(ctx, a) >= 0;
    for (int64_t x = 0; ok && x < 2; x++) { /* two cells of chunk 0 */
      int64_t c[3] = {0, 0, x};
      double v = cell(0, 0, x, 3);
      ok = caterva_array_set_item(ctx, a, c, &v) >= 0;
    }
    for (int64_t i = 0; i < 2 * 3 * 4; i++) box[i] = cell(i / 12, i / 4 % 3, i % 4, 2);
    ok = ok && caterva_array_set_slice(ctx, a, start, stop, box, sizeof box) >= 0 &&
         caterva_array_commit(ctx, a, 0) >= 0;
    if (ok) {
      bad = 0;
      ok = caterva_array_get_slice(ctx, a, start, stop, box, sizeof box) >= 0;
      for (int64_t i = 0; ok && i < 2 * 3 * 4; i++)
        bad += box[i] != cell(i / 12, i / 4 % 3, i % 4, 2);
    }
    tap_ok(ok && bad == 0, "%s: cells set one by one, then a slice over them in the same "
                           "transaction: the slice wins (%lld cells wrong)",
           sparse ? "sparse" : "contiguous", (long long)bad);
    caterva_array_free(a);
  }
}

/* ---- chunks written in part, left behind (wcache.c, leave_behind) ---- */

/* Time step t0 written chunk after chunk, as an UPDATE over the table's own scan writes it:
 * each chunk is left written in part for the next. */
static int write_step(caterva_ctx *ctx, caterva_array *a, int64_t t0, int gen) {
  for (int64_t cy = 0; cy < Y; cy += 3)
    for (int64_t cx = 0; cx < X; cx += 4)
      for (int64_t y = cy; y < cy + 3 && y < Y; y++)
        for (int64_t x = cx; x < cx + 4 && x < X; x++) {
          int64_t c[3] = {t0, y, x};
          double v = cell(t0, y, x, gen);
          if (caterva_array_set_item(ctx, a, c, &v) < 0) return -1;
        }
  return 0;
}

/* Cells wrong against generation 1 with time step t the generation gens[t] (0: 1). */
static int64_t check_steps(caterva_ctx *ctx, caterva_array *a, const int *gens) {
  int64_t start[3] = {0, 0, 0}, stop[3] = {T, Y, X}, bad = 0;
  double buf[T * Y * X];
  if (caterva_array_get_slice(ctx, a, start, stop, buf, sizeof buf) < 0) return -1;
  for (int64_t i = 0; i < T * Y * X; i++) {
    int64_t t = i / (Y * X);
    bad += buf[i] != cell(t, i / X % Y, i % X, gens[t] ? gens[t] : 1);
  }
  return bad;
}

/* Blocks whose statistics (min, max, valid items) disagree with the stored chunks. */
static int64_t check_block_stats(caterva_ctx *ctx, caterva_array *a) {
  const cat_geom *g = &a->g;
  int64_t bad = 0;
  uint8_t *img = malloc((size_t)g->chunksize);
  for (int64_t n = 0; img != NULL && n < g->nchunks; n++) {
    int64_t cc[3];
    if (cat_array_read_chunk(ctx, a, n, img) < 0) return -1;
    cat_geom_chunk_coords(g, n, cc);
    for (int32_t b = 0; b < g->nblocks; b++) {
      caterva_block_stats st;
      int64_t bc[3] = {b / (g->blockgrid[1] * g->blockgrid[2]), b / g->blockgrid[2] % g->blockgrid[1],
                       b % g->blockgrid[2]}, nv = 0;
      double mn = 1e300, mx = -1e300;
      for (int64_t i = 0; i < g->blockitems; i++) {
        int64_t t = cc[0] * g->chunkshape[0] + bc[0] * g->blockshape[0] + i / (g->blockshape[1] * g->blockshape[2]);
        int64_t y = cc[1] * g->chunkshape[1] + bc[1] * g->blockshape[1] + i / g->blockshape[2] % g->blockshape[1];
        int64_t x = cc[2] * g->chunkshape[2] + bc[2] * g->blockshape[2] + i % g->blockshape[2];
        double v;
        if (t >= T || y >= Y || x >= X) continue;
        memcpy(&v, img + ((size_t)b * (size_t)g->blockitems + (size_t)i) * 8, 8);
        mn = v < mn ? v : mn;
        mx = v > mx ? v : mx;
        nv++;
      }
      bad += caterva_array_block_stats(ctx, a, n, b, &st) != 1 || st.nvalid != nv ||
             (nv > 0 && (st.min.f != mn || st.max.f != mx));
    }
  }
  free(img);
  return img == NULL ? -1 : bad;
}

/* An UPDATE of one time step with nthreads over a committed load; the chunks handed over. */
static int64_t update_step(int nthreads, const char *path, int sparse, int64_t *bad) {
  caterva_ctx *ctx = NULL;
  caterva_array *a = NULL;
  int gens[T] = {0};
  int64_t handed = -1;
  *bad = -1;
  gens[2] = 2;
  if (caterva_ctx_new(nthreads, &ctx) < 0 || (a = make(ctx, path, sparse)) == NULL) goto leave;
  if (caterva_array_begin(ctx, a) < 0 || write_all(ctx, a, T, 0, 1) < 0 ||
      caterva_array_commit(ctx, a, 0) < 0 || caterva_array_begin(ctx, a) < 0 ||
      write_step(ctx, a, 2, 2) < 0)
    goto leave;
  handed = cat_wcache_handed(a);
  if (caterva_array_commit(ctx, a, 0) < 0) goto leave;
  *bad = check_steps(ctx, a, gens);
  if (*bad == 0) *bad = check_block_stats(ctx, a);
leave:
  caterva_array_free(a);
  caterva_ctx_free(ctx);
  return handed;
}

/* fn (an UPDATE's test: the chunks handed over, its wrong cells in *bad) with 1 and with 2
 * threads, each into its own array named after stem; 1 when the two arrays' files are the
 * same. */
static int both_ways(int64_t (*fn)(int nthreads, const char *path, int sparse, int64_t *bad),
                     const char *stem, int sparse, int64_t handed[2], int64_t bad[2]) {
  char p[2][300];
  for (int i = 0; i < 2; i++) {
    snprintf(p[i], sizeof p[i], "%s/%s%d-%d.b2nd", tmpdir, stem, i + 1, sparse);
    handed[i] = fn(i + 1, p[i], sparse, &bad[i]);
  }
  return same_files(p[0], p[1], sparse);
}

static void test_left_behind(caterva_ctx *ctx) {
  for (int sparse = 0; sparse < 2; sparse++) {
    int64_t h[2], bad[2];
    int same = both_ways(update_step, "step", sparse, h, bad);
    /* 6 chunks in the step's chunk row: the last is not left before the commit */
    tap_ok(h[0] == 0 && h[1] == 5 && bad[0] == 0 && bad[1] == 0 && same,
           "%s: one time step written chunk after chunk over stored chunks: %lld of 6 chunks "
           "handed over in part (1 thread: %lld), cells and every block's statistics right "
           "(%lld, %lld wrong), the same bytes as with 1 thread", sparse ? "sparse" : "contiguous",
           (long long)h[1], (long long)h[0], (long long)bad[1], (long long)bad[0]);
  }
  /* written again after being handed over, ROLLBACK TO, ROLLBACK */
  for (int sparse = 0; sparse < 2; sparse++) {
    char path[300], copy[300], cmd[1000];
    int gens[T] = {0};
    int64_t bad[3] = {-1, -1, -1}, h = -1;
    snprintf(path, sizeof path, "%s/again-%d.b2nd", tmpdir, sparse);
    snprintf(copy, sizeof copy, "%s/again-%d.copy", tmpdir, sparse);
    caterva_array *a = make(ctx, path, sparse);
    int ok = a != NULL && caterva_array_begin(ctx, a) >= 0 && write_all(ctx, a, T, 0, 1) >= 0 &&
             caterva_array_commit(ctx, a, 0) >= 0;
    /* step 3 twice in one transaction: the second pass writes every handed chunk again */
    ok = ok && caterva_array_begin(ctx, a) >= 0 && write_step(ctx, a, 3, 3) >= 0 &&
         write_step(ctx, a, 3, 4) >= 0;
    h = ok ? cat_wcache_handed(a) : -1;
    ok = ok && caterva_array_commit(ctx, a, 0) >= 0;
    gens[3] = 4;
    if (ok) bad[0] = check_steps(ctx, a, gens);
    /* step 4, a savepoint, step 5 handed over, ROLLBACK TO, step 1 after it */
    ok = ok && caterva_array_begin(ctx, a) >= 0 && write_step(ctx, a, 4, 5) >= 0 &&
         caterva_array_savepoint(ctx, a, 1) >= 0 && write_step(ctx, a, 5, 6) >= 0 &&
         caterva_array_rollback_to(ctx, a, 1) >= 0 && write_step(ctx, a, 1, 7) >= 0 &&
         caterva_array_commit(ctx, a, 0) >= 0;
    gens[4] = 5, gens[1] = 7;
    if (ok) bad[1] = check_steps(ctx, a, gens);
    snprintf(cmd, sizeof cmd, "rm -rf '%s' && cp -r '%s' '%s'", copy, path, copy);
    ok = ok && system(cmd) == 0;
    /* chunks handed over, then ROLLBACK: the file as it was */
    ok = ok && caterva_array_begin(ctx, a) >= 0 && write_step(ctx, a, 0, 8) >= 0 &&
         write_step(ctx, a, 6, 8) >= 0 && caterva_array_rollback(ctx, a) >= 0;
    if (ok) bad[2] = check_steps(ctx, a, gens) + !same_files(path, copy, sparse);
    /* 5 in the first pass, the sixth as the second begins, none after the first rewrite;
     * none with one thread (nothing is handed over then) */
    tap_ok(ok && h == (caterva_ctx_nthreads(ctx) >= 2 ? 6 : 0) && bad[0] == 0 && bad[1] == 0 && bad[2] == 0,
           "%s: a time step written again after its chunks were handed over (%lld of 12 left "
           "handed: the first rewrite stops it), ROLLBACK TO past handed chunks, ROLLBACK: cells and file "
           "right (wrong: %lld, %lld, %lld)", sparse ? "sparse" : "contiguous", (long long)h,
           (long long)bad[0], (long long)bad[1], (long long)bad[2]);
    caterva_array_free(a);
  }
}

/* Blocks written in part: time steps 1 and 6 through blocks 4 steps deep, each chunk's
 * stored blocks decoded to complete them (patch_image), 64 KiB a chunk, so that a context
 * with a pool decodes them on both threads: the first chunk on the worker, the last on the
 * caller's thread at the commit. */
enum { PT = 8, PY = 64, PX = 64 };

/* Every cell with generation 1, or (steps) steps 1 and 6 with generation 2, chunk after
 * chunk as an UPDATE's scan writes them: each chunk is left for the next. */
static int write_part(caterva_ctx *ctx, caterva_array *a, int steps) {
  for (int64_t cy = 0; cy < PY; cy += 32)
    for (int64_t t = 0; t < PT; t++)
      for (int64_t i = 0; i < 32 * PX; i++) {
        int64_t c[3] = {t, cy + i / PX, i % PX};
        double v = cell(t, c[1], c[2], steps ? 2 : 1);
        if (steps && t != 1 && t != 6) continue;
        if (caterva_array_set_item(ctx, a, c, &v) < 0) return -1;
      }
  return 0;
}

/* An array loaded, then steps 1 and 6 rewritten, with nthreads; the chunks handed over, and
 * in *bad its wrong cells (-1: it failed). */
static int64_t part_blocks(int nthreads, const char *path, int sparse, int64_t *bad) {
  static const int64_t geo[9] = {PT, PY, PX, 8, 32, 64, 4, 16, 32};
  caterva_ctx *ctx = NULL;
  caterva_array *a = NULL;
  int64_t start[3] = {0, 0, 0}, stop[3] = {PT, PY, PX}, handed = -1;
  double *buf = malloc((size_t)PT * PY * PX * sizeof *buf);
  *bad = -1;
  if (buf == NULL || caterva_ctx_new(nthreads, &ctx) < 0 ||
      (a = make_geo(ctx, path, sparse, geo)) == NULL || caterva_array_begin(ctx, a) < 0 ||
      write_part(ctx, a, 0) < 0 || caterva_array_commit(ctx, a, 0) < 0 ||
      caterva_array_begin(ctx, a) < 0 || write_part(ctx, a, 1) < 0)
    goto leave;
  handed = cat_wcache_handed(a);
  if (caterva_array_commit(ctx, a, 0) < 0 ||
      caterva_array_get_slice(ctx, a, start, stop, buf, (int64_t)PT * PY * PX * 8) < 0)
    goto leave;
  *bad = 0;
  for (int64_t i = 0; i < PT * PY * PX; i++) {
    int64_t t = i / (PY * PX);
    *bad += buf[i] != cell(t, i / PX % PY, i % PX, t == 1 || t == 6 ? 2 : 1);
  }
leave:
  free(buf);
  caterva_array_free(a);
  caterva_ctx_free(ctx);
  return handed;
}

/* fn (an UPDATE's test whose first chunk goes to the worker) with 1 and with 2 threads, contiguous
 * and sparse: no wrong cell, one chunk handed over with 2 threads, none with 1, the same bytes
 * both ways; what tells what fn checks. */
static void one_chunk_handed(int64_t (*fn)(int nthreads, const char *path, int sparse,
                                           int64_t *bad),
                             const char *stem, const char *what) {
  for (int sparse = 0; sparse < 2; sparse++) {
    int64_t h[2], bad[2];
    int same = both_ways(fn, stem, sparse, h, bad);
    tap_ok(bad[0] == 0 && bad[1] == 0 && h[0] == 0 && h[1] == 1 && same,
           "%s: %s (wrong cells: %lld with 1 thread, %lld with 2, whose first chunk went to the "
           "worker: %lld handed), the same bytes both ways", sparse ? "sparse" : "contiguous",
           what, (long long)bad[0], (long long)bad[1], (long long)h[1]);
  }
}

static void test_part_blocks(void) {
  one_chunk_handed(part_blocks, "part", "two time steps through blocks 4 steps deep: every "
                   "block written in part completed from its stored items");
}

/* Chunk 0 of a loaded array stored again with blocks half the array's (the same bytes when
 * decoded: a foreign or hostile file's chunk), then one cell of it and one of chunk 1 written
 * with nthreads (with 2, chunk 0 is left to the worker): the patch must refuse that chunk
 * before decoding any of its blocks into a block of the array's size, and the chunk is
 * rebuilt whole. The chunks handed over, and in *bad the wrong cells (-1: it failed). */
static int64_t foreign_blocks(int nthreads, const char *path, int sparse, int64_t *bad) {
  static const int64_t geo[9] = {PT, PY, PX, 8, 32, 64, 4, 16, 32};
  caterva_ctx *ctx = NULL;
  caterva_array *a = NULL;
  caterva_cparams cp;
  int64_t start[3] = {0, 0, 0}, stop[3] = {PT, PY, PX}, c0[3] = {1, 2, 3}, c1[3] = {1, 40, 3};
  int64_t handed = -1, n = (int64_t)PT * PY * PX;
  const uint8_t *chunk;
  int32_t len, cap, clen;
  double *buf = malloc((size_t)n * sizeof *buf), v = -1;
  uint8_t *raw = NULL, *cbuf = NULL;
  *bad = -1;
  if (buf == NULL || caterva_ctx_new(nthreads, &ctx) < 0 ||
      (a = make_geo(ctx, path, sparse, geo)) == NULL || caterva_array_begin(ctx, a) < 0 ||
      write_part(ctx, a, 0) < 0 || caterva_array_commit(ctx, a, 0) < 0)
    goto leave;
  cp = *caterva_schunk_cparams(a->sc);
  cp.blocksize = a->g.blocksize / 2;
  cap = a->g.chunksize + CATERVA_CHUNK_MAX_OVERHEAD;
  if ((raw = malloc((size_t)a->g.chunksize)) == NULL || (cbuf = malloc((size_t)cap)) == NULL ||
      caterva_schunk_get_chunk(ctx, a->sc, 0, &chunk, &len) < 0 ||
      caterva_chunk_decompress(ctx, chunk, (size_t)len, raw, a->g.chunksize) < 0 ||
      (clen = caterva_chunk_compress(ctx, &cp, raw, a->g.chunksize, cbuf, cap)) < 0 ||
      caterva_array_begin(ctx, a) < 0 ||
      caterva_schunk_update_chunk(ctx, a->sc, 0, cbuf, clen) < 0 ||
      caterva_array_commit(ctx, a, 0) < 0 || caterva_array_begin(ctx, a) < 0 ||
      caterva_array_set_item(ctx, a, c0, &v) < 0 || caterva_array_set_item(ctx, a, c1, &v) < 0)
    goto leave;
  handed = cat_wcache_handed(a);
  if (caterva_array_commit(ctx, a, 0) < 0 ||
      caterva_array_get_slice(ctx, a, start, stop, buf, n * 8) < 0)
    goto leave;
  *bad = 0;
  for (int64_t i = 0; i < n; i++) {
    int64_t t = i / (PY * PX), y = i / PX % PY, x = i % PX;
    bool set = t == 1 && x == 3 && (y == 2 || y == 40);
    *bad += buf[i] != (set ? -1 : cell(t, y, x, 1));
  }
leave:
  free(raw);
  free(cbuf);
  free(buf);
  caterva_array_free(a);
  caterva_ctx_free(ctx);
  return handed;
}

static void test_foreign_blocks(void) {
  one_chunk_handed(foreign_blocks, "foreign", "a stored chunk whose blocks are half the "
                   "array's, written in part: rebuilt whole, not patched");
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

/* Minor page faults of writing every byte of n images of size bytes from a new pool, which is
 * returned (images given back). */
static long write_images(cat_imgpool **out, size_t size, int n) {
  cat_imgpool *p = cat_imgpool_new(size);
  uint8_t *img[4];
  struct rusage r0, r1;
  int got = 0;
  getrusage(RUSAGE_SELF, &r0);
  for (; p != NULL && got < n; got++) {
    if ((img[got] = cat_imgpool_get(p)) == NULL) break;
    memset(img[got], 0x5a, size);
  }
  getrusage(RUSAGE_SELF, &r1);
  for (int i = 0; i < got; i++) cat_imgpool_put(p, img[i]);
  *out = p;
  return got == n ? r1.ru_minflt - r0.ru_minflt : -1;
}

/* A freed pool's slabs serve the next pool of the process: writing its images whole takes
 * (almost) no page fault, where the same writes into fresh slabs (a pool made while the
 * kept ones are taken) fault in every page or huge page. */
static void test_pool_kept(void) {
  /* one image to a slab of 36 MiB: more than malloc ever keeps for reuse itself (its
   * threshold for maps stops at 32 MiB), so without the pool's own keeping every slab of
   * this size is a new map */
  size_t size = (size_t)36 << 20;
  cat_imgpool *p1 = NULL, *p2 = NULL, *p3 = NULL;
  long f1 = write_images(&p1, size, 1), f2, f3;
  cat_imgpool_free(p1);
  f2 = write_images(&p2, size, 1); /* the slab p1 gave back */
  f3 = write_images(&p3, size, 1); /* a new slab */
  tap_ok(f1 >= 0 && f2 >= 0 && f3 > 0 && f2 * 4 < f3,
         "image pool: a freed pool's slab is reused by the next one (minor faults writing an "
         "image of 36 MiB: first pool %ld, next pool %ld, a pool of a new slab %ld)", f1, f2, f3);
  cat_imgpool_free(p2);
  cat_imgpool_free(p3);
}

/* When the kept slabs fill their room, a slab freed later displaces the oldest ones: the
 * process's next pool finds what its last statement freed (a load of another layout after
 * a load of the demo's). 20 slabs of 6 MiB are freed first, then one of 36 MiB. */
static void test_pool_kept_newest(void) {
  size_t small = (size_t)6 << 20, big = (size_t)36 << 20;
  cat_imgpool *old = NULL, *p1 = NULL, *p2 = NULL;
  long f1, f2;
  int ok = write_images(&old, small, 4) >= 0;
  for (int i = 0; ok && i < 16; i++) ok = cat_imgpool_get(old) != NULL; /* 20 slabs in all */
  f1 = write_images(&p1, big, 1);
  cat_imgpool_free(old); /* 120 MiB kept */
  cat_imgpool_free(p1);  /* 36 MiB more: the oldest make room */
  f2 = write_images(&p2, big, 1);
  tap_ok(ok && f1 > 0 && f2 >= 0 && f2 * 4 < f1,
         "image pool: a slab freed when the kept ones fill their room displaces the oldest "
         "(minor faults writing a 36 MiB image: new slab %ld, the next pool's %ld)", f1, f2);
  cat_imgpool_free(p2);
}

static int held;

/* Holds the kept slabs' lock for 200 ms. */
static void *pool_hold(void *arg) {
  (void)arg;
  cat_imgpool_test_hold(1);
  __atomic_store_n(&held, 1, __ATOMIC_RELEASE);
  usleep(200 * 1000);
  cat_imgpool_test_hold(0);
  return NULL;
}

/* A process that forks while another of its threads holds the lock of the slabs it keeps
 * (freeing or taking one): the child can take and free slabs itself. A child that hangs is
 * killed after 10 s. */
static void test_pool_fork(void) {
  pthread_t th;
  pid_t pid = -1;
  int st = 0, waited = 0, started = pthread_create(&th, NULL, pool_hold, NULL) == 0;
  while (started && !__atomic_load_n(&held, __ATOMIC_ACQUIRE)) usleep(1000);
  if (started && (pid = fork()) == 0) {
    cat_imgpool *p = cat_imgpool_new((size_t)1 << 20); /* images in slabs (not malloc) */
    int ok = p != NULL && cat_imgpool_get(p) != NULL;
    cat_imgpool_free(p);
    _exit(ok ? 0 : 1);
  }
  for (; pid > 0 && waited < 10000 && waitpid(pid, &st, WNOHANG) == 0; waited++) usleep(1000);
  if (pid > 0 && waited == 10000) {
    kill(pid, SIGKILL);
    waitpid(pid, &st, 0);
  }
  if (started) pthread_join(th, NULL);
  tap_ok(pid > 0 && waited < 10000 && WIFEXITED(st) && WEXITSTATUS(st) == 0,
         "image pool: a child forked while another thread held the kept slabs' lock takes and "
         "frees slabs (%s)", waited == 10000 ? "it hung" : "it did not hang");
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
  test_slice_over_pending(ctx);
  test_left_behind(ctx);
  test_part_blocks();
  test_foreign_blocks();
  test_rollback(ctx);
  test_twice(ctx);
  test_orders(ctx);
  test_long_chunk(ctx);
  test_stats(ctx);
  test_pool();
  test_pool_kept_newest(); /* first: no 36 MiB slab is kept yet */
  test_pool_kept();
  test_pool_fork();
  caterva_ctx_free(ctx);
  tu_rm_tree(tmpdir);
  return tap_done();
}
