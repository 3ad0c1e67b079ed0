/*
 * test_reduce.c -- caterva_reduce's ways of folding blocks give the same numbers. For arrays
 * of float32, float64 and int16 with absent (NaN) cells, partial chunks and blocks, with and
 * without block statistics, random reductions -- each dimension reduced, kept or grouped by a
 * random group map (groups that come and go inside a block), random boxes, two sub-boxes --
 * are run with 1, 2 and 3 threads, merged (CATERVA_REDUCE_MERGED) and owned (_OWNED), with
 * and without the column fold (_NOCOLS), and with CATERVA_REDUCE_NOMINMAX: every output row
 * is bit-identical to that of one thread, merged, without columns, and the blocks answered by
 * statistics are the same. Each row is also checked against a reference computed here: the
 * count and min and max exactly, the sum within the documented bound (B + 2 + 2Nu) u sum|x|.
 */
#include "caterva.h"
#include "caterva_array.h"
#include "tap.h"
#include "testrng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t rng_state = 0x9E3779B97F4A7C15u;

static uint64_t rnd(void) {
  return test_rng_next(&rng_state);
}

static int64_t rnd_in(int64_t lo, int64_t hi) {
  return lo + (int64_t)(rnd() % (uint64_t)(hi - lo + 1));
}

typedef struct config {
  const char *name, *dtype;
  int nd, is;
  int64_t shape[CATERVA_MAX_DIM];
  int32_t chunks[CATERVA_MAX_DIM], blocks[CATERVA_MAX_DIM];
  int stats;                 /* build block statistics */
} config;

static const config configs[] = {
  {"f4-3d", "float32", 3, 4, {37, 23, 29}, {12, 10, 15}, {5, 4, 6}, 0},
  /* batches of blocks large enough to be shared among threads */
  {"f4-3d-large", "float32", 3, 4, {60, 64, 90}, {20, 32, 45}, {5, 8, 9}, 1},
  {"f4-3d-stats", "float32", 3, 4, {40, 12, 18}, {20, 6, 9}, {10, 1, 9}, 1},
  {"f8-4d", "float64", 4, 8, {13, 7, 6, 11}, {7, 4, 6, 6}, {3, 2, 3, 5}, 1},
  {"f4-2d", "float32", 2, 4, {101, 33}, {40, 33}, {7, 11}, 0},
  {"i2-3d", "int16", 3, 2, {30, 9, 14}, {15, 9, 7}, {4, 3, 7}, 1},
};

/* The array's values as doubles (NaN: absent), C order. */
static double *make_values(const config *c, int64_t n) {
  double *v = malloc((size_t)n * sizeof *v);
  for (int64_t i = 0; v != NULL && i < n; i++) {
    if (c->is == 2) {
      v[i] = (double)((int64_t)(rnd() % 20001) - 10000);
    } else if (rnd() % 13 == 0) {
      v[i] = NAN;
    } else { /* mixed magnitudes */
      double m = (double)(rnd() % 2000001) / 1000.0 - 1000.0;
      v[i] = m * pow(10.0, (double)(rnd() % 7) - 3.0);
      if (c->is == 4) v[i] = (double)(float)v[i];
    }
  }
  return v;
}

static caterva_array *make_array(caterva_ctx *ctx, const config *c, const double *v, int64_t n) {
  caterva_array_params p;
  caterva_array *a = NULL;
  uint8_t *buf = malloc((size_t)n * (size_t)c->is);
  if (buf == NULL) return NULL;
  for (int64_t i = 0; i < n; i++) {
    if (c->is == 8) {
      memcpy(buf + i * 8, &v[i], 8);
    } else if (c->is == 4) {
      float f = (float)v[i];
      memcpy(buf + i * 4, &f, 4);
    } else {
      int16_t s = (int16_t)v[i];
      memcpy(buf + i * 2, &s, 2);
    }
  }
  caterva_array_params_init(&p);
  p.ndim = c->nd;
  p.dtype = c->dtype;
  memcpy(p.shape, c->shape, sizeof p.shape);
  memcpy(p.chunkshape, c->chunks, sizeof p.chunkshape);
  memcpy(p.blockshape, c->blocks, sizeof p.blockshape);
  p.cparams.clevel = 1;
  p.cparams.codec = CATERVA_ZSTD;
  if (caterva_array_from_buffer(ctx, &p, buf, n * c->is, &a) != 0) a = NULL;
  if (a != NULL && c->stats && caterva_array_build_stats(ctx, a, NULL, NULL) != 0) {
    caterva_array_free(a);
    a = NULL;
  }
  free(buf);
  return a;
}

/* A random reduction: dims, the box, and its sub-boxes (one or two, split along dim 0). */
typedef struct job {
  caterva_reduce_dim dims[CATERVA_MAX_DIM];
  int32_t *gid[CATERVA_MAX_DIM];
  int nsub;
  int64_t lo[2][CATERVA_MAX_DIM], hi[2][CATERVA_MAX_DIM];
} job;

static void job_make(const config *c, job *j) {
  memset(j, 0, sizeof *j);
  for (int k = 0; k < c->nd; k++) {
    caterva_reduce_dim *d = &j->dims[k];
    int64_t a = rnd_in(0, c->shape[k] - 1), b = rnd_in(0, c->shape[k] - 1);
    if (rnd() % 3 == 0) a = 0, b = c->shape[k] - 1;
    d->lo = a < b ? a : b;
    d->hi = a < b ? b : a;
    d->mode = (int)(rnd() % 3);
    if (k == 0 && rnd() % 2) d->mode = rnd() % 2 ? CATERVA_RED_GROUP : CATERVA_RED_REDUCE;
    if (k > 0 && rnd() % 2) d->mode = CATERVA_RED_KEEP; /* the column shape, often */
    if (d->mode == CATERVA_RED_GROUP) {
      int64_t n = d->hi - d->lo + 1, span = rnd_in(1, 9);
      d->ngroups = (int32_t)rnd_in(1, 4);
      j->gid[k] = malloc((size_t)n * sizeof(int32_t));
      for (int64_t i = 0; i < n; i++) /* runs of span indices; now and then a random one */
        j->gid[k][i] = rnd() % 5 == 0 ? (int32_t)(rnd() % (uint64_t)d->ngroups)
                                      : (int32_t)((i / span) % d->ngroups);
      d->gid = j->gid[k];
    }
  }
  j->nsub = 1;
  for (int k = 0; k < c->nd; k++) {
    j->lo[0][k] = j->dims[k].lo;
    j->hi[0][k] = j->dims[k].hi;
  }
  if (c->nd > 0 && j->dims[0].hi > j->dims[0].lo && rnd() % 2) { /* two disjoint sub-boxes */
    int64_t cut = rnd_in(j->dims[0].lo, j->dims[0].hi - 1);
    memcpy(j->lo[1], j->lo[0], sizeof j->lo[1]);
    memcpy(j->hi[1], j->hi[0], sizeof j->hi[1]);
    j->hi[0][0] = cut;
    j->lo[1][0] = cut + 1 + (cut + 1 < j->dims[0].hi && rnd() % 2); /* maybe a gap */
    j->nsub = 2;
  }
}

static void job_free(job *j) {
  for (int k = 0; k < CATERVA_MAX_DIM; k++) free(j->gid[k]);
}

/* Run the job with flags on ctx: the rows into *out (malloc'ed), their number into *n. */
static int job_run(caterva_ctx *ctx, caterva_array *a, const job *j, int flags,
                   caterva_reduce_row **out, int64_t *n, int64_t *from_stats) {
  caterva_reduce *r = NULL;
  int rc = caterva_reduce_new(ctx, a, j->dims, flags, &r);
  *out = NULL;
  for (int s = 0; rc == 0 && s < j->nsub; s++) rc = caterva_reduce_add(ctx, r, j->lo[s], j->hi[s]);
  if (rc == 0) {
    *n = caterva_reduce_nrows(r);
    *out = malloc((size_t)*n * sizeof **out);
    for (int64_t i = 0; *out != NULL && i < *n; i++) caterva_reduce_get(r, i, &(*out)[i]);
    *from_stats = caterva_reduce_stats_blocks(r);
  }
  caterva_reduce_free(r);
  return rc == 0 && *out != NULL ? 0 : -1;
}

static int same_bits(double x, double y) { return memcmp(&x, &y, sizeof x) == 0; }

/* Rows equal bit for bit (min and max too when mm). */
static int same_rows(const caterva_reduce_row *x, const caterva_reduce_row *y, int64_t n,
                     int mm) {
  for (int64_t i = 0; i < n; i++) {
    const caterva_reduce_row *p = &x[i], *q = &y[i];
    if (p->n != q->n || p->float_sum != q->float_sum || !same_bits(p->fsum, q->fsum) ||
        p->isum != q->isum || !same_bits(p->mean, q->mean) || !same_bits(p->std, q->std))
      return 0;
    if (mm && p->n > 0 && (memcmp(&p->min, &q->min, sizeof p->min) != 0 ||
                           memcmp(&p->max, &q->max, sizeof p->max) != 0))
      return 0;
  }
  return 1;
}

/* The output row of cell idx, or -1 when the cell is in no sub-box. */
static int64_t cell_row(const config *c, const job *j, const int64_t *idx) {
  int64_t row = 0, in = 0;
  for (int s = 0; s < j->nsub && !in; s++) {
    in = 1;
    for (int k = 0; k < c->nd; k++)
      if (idx[k] < j->lo[s][k] || idx[k] > j->hi[s][k]) in = 0;
  }
  if (!in) return -1;
  for (int k = 0; k < c->nd; k++) {
    const caterva_reduce_dim *d = &j->dims[k];
    int64_t e = d->mode == CATERVA_RED_KEEP ? d->hi - d->lo + 1
                : d->mode == CATERVA_RED_GROUP ? d->ngroups : 1;
    int64_t x = d->mode == CATERVA_RED_KEEP ? idx[k] - d->lo
                : d->mode == CATERVA_RED_GROUP ? d->gid[idx[k] - d->lo] : 0;
    row = row * e + x;
  }
  return row;
}

/* Every row against a reference computed from the values: count, min, max exactly, the sum
** within (B + 2 + 2Nu) u sum|x| (B: items of a block, N: blocks). */
static int check_reference(const config *c, const job *j, const double *v, int64_t ncells,
                           const caterva_reduce_row *rows, int64_t nrows) {
  int64_t *cnt = calloc((size_t)nrows, sizeof *cnt), idx[CATERVA_MAX_DIM] = {0}, nblk = 1;
  long double *sum = calloc((size_t)nrows, sizeof *sum);
  double *abs_ = calloc((size_t)nrows, sizeof *abs_), *mn = malloc((size_t)nrows * 8);
  double *mx = malloc((size_t)nrows * 8), B = 1, u = ldexp(1.0, -53);
  int ok = cnt && sum && abs_ && mn && mx;
  for (int k = 0; k < c->nd; k++) {
    B *= c->blocks[k];
    nblk *= (c->shape[k] + c->blocks[k] - 1) / c->blocks[k] + c->shape[k] / c->chunks[k] + 1;
  }
  for (int64_t i = 0; ok && i < nrows; i++) mn[i] = INFINITY, mx[i] = -INFINITY;
  for (int64_t i = 0; ok && i < ncells; i++) {
    int64_t row = cell_row(c, j, idx);
    if (row >= 0 && v[i] == v[i]) {
      cnt[row]++;
      sum[row] += v[i];
      abs_[row] += fabs(v[i]);
      if (v[i] < mn[row]) mn[row] = v[i];
      if (v[i] > mx[row]) mx[row] = v[i];
    }
    for (int k = c->nd - 1; k >= 0; k--) {
      if (++idx[k] < c->shape[k]) break;
      idx[k] = 0;
    }
  }
  for (int64_t i = 0; ok && i < nrows; i++) {
    const caterva_reduce_row *p = &rows[i];
    double s = p->float_sum ? p->fsum : (double)p->isum;
    double rmin = c->is == 2 ? (double)p->min.i : p->min.f;
    double rmax = c->is == 2 ? (double)p->max.i : p->max.f;
    double bound = (B + 2 + 2 * (double)nblk * u) * u * abs_[i];
    if (p->n != cnt[i] || fabs(s - (double)sum[i]) > bound ||
        (cnt[i] > 0 && (rmin != mn[i] || rmax != mx[i]))) {
      tap_diag("row %lld: n %lld/%lld sum %.17g/%.17Lg min %g/%g max %g/%g", (long long)i,
               (long long)p->n, (long long)cnt[i], s, sum[i], rmin, mn[i], rmax, mx[i]);
      ok = 0;
    }
  }
  free(cnt);
  free(sum);
  free(abs_);
  free(mn);
  free(mx);
  return ok;
}

/* The ways to run a reduction: threads and flags. */
static const struct {
  int ctx, flags;
} ways[] = {
  {0, CATERVA_REDUCE_OWNED},  {1, 0}, {1, CATERVA_REDUCE_MERGED},
  {1, CATERVA_REDUCE_OWNED},  {2, 0}, {2, CATERVA_REDUCE_OWNED | CATERVA_REDUCE_NOCOLS},
  {2, CATERVA_REDUCE_MERGED}, {0, 0},
};

static void run_config(caterva_ctx **ctx, const config *c, int njobs) {
  int64_t ncells = 1;
  double *v;
  caterva_array *a;
  int ok_ref = 1, ok_same = 1, ok_stats = 1, ok_mm = 1, ok_run = 1;
  int64_t nstats = 0;
  for (int k = 0; k < c->nd; k++) ncells *= c->shape[k];
  v = make_values(c, ncells);
  a = v ? make_array(ctx[0], c, v, ncells) : NULL;
  if (!tap_ok(a != NULL, "%s: array written (%s)", c->name, caterva_ctx_errmsg(ctx[0]))) {
    free(v);
    return;
  }
  for (int t = 0; t < njobs; t++) {
    job j;
    caterva_reduce_row *base = NULL, *other = NULL;
    int64_t nb = 0, no = 0, sb = 0, so = 0;
    job_make(c, &j);
    if (job_run(ctx[0], a, &j, CATERVA_REDUCE_MERGED | CATERVA_REDUCE_NOCOLS, &base, &nb, &sb)) {
      ok_run = 0;
      tap_diag("%s job %d: %s", c->name, t, caterva_ctx_errmsg(ctx[0]));
    } else {
      ok_ref = ok_ref && check_reference(c, &j, v, ncells, base, nb);
      nstats += sb;
    }
    for (size_t w = 0; base && w < sizeof ways / sizeof ways[0]; w++) {
      if (job_run(ctx[ways[w].ctx], a, &j, ways[w].flags, &other, &no, &so) != 0) {
        ok_run = 0;
        continue;
      }
      if (no != nb || !same_rows(base, other, nb, 1)) {
        ok_same = 0;
        tap_diag("%s job %d: %d threads, flags %d differ", c->name, t, ways[w].ctx + 1,
                 ways[w].flags);
      }
      if (so != sb) ok_stats = 0;
      free(other);
      other = NULL;
    }
    for (int w = 0; base && w < 3; w++) { /* without minima and maxima: the rest the same */
      if (job_run(ctx[w], a, &j, CATERVA_REDUCE_NOMINMAX, &other, &no, &so) != 0) {
        ok_run = 0;
        continue;
      }
      if (no != nb || !same_rows(base, other, nb, 0)) ok_mm = 0;
      free(other);
      other = NULL;
    }
    free(base);
    job_free(&j);
  }
  tap_ok(ok_run, "%s: %d random reductions run in %d ways", c->name, njobs,
         (int)(sizeof ways / sizeof ways[0]) + 4);
  tap_ok(ok_ref, "%s: counts, minima and maxima exact, sums within the bound", c->name);
  tap_ok(ok_same, "%s: 1, 2, 3 threads, merged, owned, with and without columns: every row "
         "bit-identical", c->name);
  tap_ok(ok_stats, "%s: the same blocks answered by statistics in every way (%lld in all)",
         c->name, (long long)nstats);
  tap_ok(ok_mm, "%s: without minima and maxima, counts, sums and means bit-identical", c->name);
  caterva_array_free(a);
  free(v);
}

int main(void) {
  caterva_ctx *ctx[3] = {NULL, NULL, NULL};
  const char *env = getenv("CATERVA_REDUCE_JOBS");
  int njobs = env ? atoi(env) : 60;
  for (int i = 0; i < 3; i++)
    if (caterva_ctx_new(i + 1, &ctx[i]) != 0) return tap_ok(0, "contexts"), tap_done();
  for (size_t i = 0; i < sizeof configs / sizeof configs[0]; i++)
    run_config(ctx, &configs[i], njobs);
  for (int i = 0; i < 3; i++) caterva_ctx_free(ctx[i]);
  return tap_done();
}
