/*
 * blockstats.c -- per-block statistics: computed when a chunk is stored, kept exact through
 * every edit, transaction, savepoint and rollback, stored in the frame's trailer in the
 * same commit as the data, and asked "can this block hold an item matching a predicate".
 *
 * What is kept, per block of every chunk, over the items inside the array's shape (padding
 * excluded): min, max and sum of the present items, the number of present items and the
 * number of NaN items (float dtypes; NaN reads as NULL in SQL). Values are typed by the
 * dtype's kind: float16/32/64 as double, signed integers and bool as int64, unsigned
 * integers as uint64 (CATERVA_STATS_*). An integer sum that overflows 64 bits is flagged.
 *
 * Where it is stored: the vlmetalayer `_caterva_blockstats` (its layout, and how it is read a
 * page of chunk positions at a time, in blockstats_stored.c). The checking of decoded blocks
 * against the statistics is blockstats_check.c's.
 *
 * The fingerprint is a 64-bit hash of the chunk's stored bytes (for zero/NaN/uninit index
 * entries, which have no bytes, a constant per kind). A reader checks it against the
 * chunk before it first trusts the chunk's statistics, so statistics written for other
 * bytes (another writer changed the chunk and kept our trailer) are never used, and a
 * shape other than the recorded one discards them all. Our own writer never relies on
 * this: every edit of a chunk recomputes its statistics (the schunk tells us through its
 * edit hook), transactions keep snapshots of them at every savepoint, and commit writes
 * them with the index and the trailer.
 *
 * The block starts let a remote reader ask for a chunk's header and the blocks it needs in one
 * wave (frame_remote.c checks them against the header that arrives in the same wave: a start
 * recorded for other bytes costs a second wave, never a wrong block).
 *
 * In memory: one immutable, reference-counted record per chunk position (the snapshot of a
 * savepoint is an array of record pointers, so savepoints cost a pointer per chunk).
 */
#include "blockstats_internal.h"
#include "frame_internal.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>

/* ---- records and the statistics object ------------------------------------------------ */

/* Record the block starts of chunk bytes in r (left 0 when the chunk has no table). */
static void rec_set_starts(bs_rec *r, int32_t nblocks, const uint8_t *chunk, int32_t cbytes) {
  cat_chunk_span sp;
  int32_t need;
  uint32_t *st = cat_bs_rec_starts(r, nblocks);
  if (chunk == NULL || cat_chunk_span_init(chunk, cbytes, cbytes, &sp, &need) < 0 ||
      sp.table == 0 || sp.plain || sp.whole_only || sp.nblocks != nblocks)
    return;
  for (int32_t j = 0; j < nblocks; j++) st[j] = cat_le32(chunk + sp.table + 4 * (size_t)j);
}

static void marks_drop(cat_bstats *bs, int level) {
  while (bs->nmarks > 0 && bs->marks[bs->nmarks - 1].level >= level) {
    bs_mark *m = &bs->marks[--bs->nmarks];
    cat_bs_recs_free(m->rec, m->n);
  }
}

/* A copy of rec[0..n) with a reference taken on each record. */
static bs_rec **recs_dup(bs_rec *const *rec, int64_t n) {
  bs_rec **c = cat_ztable_new(n, sizeof *c);
  if (c == NULL) return NULL;
  for (int64_t i = 0; i < n; i++) {
    c[i] = rec[i];
    if (c[i] != NULL) c[i]->refs++;
  }
  return c;
}

int caterva_array_stats_type(const caterva_array *a) {
  int kind;
  return a == NULL ? CATERVA_STATS_NONE : cat_bs_stats_type(a->dtype, a->g.itemsize, &kind);
}

int caterva_array_has_stats(const caterva_array *a) {
  return a != NULL && a->bs != NULL && !a->bs->broken;
}

double cat_half_to_double(uint16_t h) {
  int e = h >> 10 & 0x1F, m = h & 0x3FF;
  double v;
  if (e == 0) v = ldexp((double)m, -24);
  else if (e == 31) v = m ? NAN : INFINITY;
  else v = ldexp((double)(m | 0x400), e - 25);
  return h & 0x8000 ? -v : v;
}

/* ---- fingerprints --------------------------------------------------------------------- */

static inline uint64_t rd64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

static inline uint64_t lane(uint64_t h, uint64_t w) {
  h ^= w * 0x9E3779B97F4A7C15ull;
  h = (h << 29 | h >> 35) * 0xBF58476D1CE4E5B9ull;
  return h;
}

/* A 64-bit hash of n bytes: four independent lanes over 32-byte strides (fast enough to
 * check a chunk before trusting its statistics), never 0. */
static uint64_t fingerprint(const uint8_t *p, size_t n) {
  /* the lanes in locals, so that they stay in registers (three times faster than an array) */
  uint64_t h0 = 0x243F6A8885A308D3ull, h1 = 0x13198A2E03707344ull, h2 = 0xA4093822299F31D0ull,
           h3 = 0x082EFA98EC4E6C89ull;
  size_t i = 0;
  uint64_t r;
  uint8_t tail[8];
  for (; i + 32 <= n; i += 32) {
    h0 = lane(h0, rd64(p + i));
    h1 = lane(h1, rd64(p + i + 8));
    h2 = lane(h2, rd64(p + i + 16));
    h3 = lane(h3, rd64(p + i + 24));
  }
  for (; i + 8 <= n; i += 8) h0 = lane(h0, rd64(p + i));
  memset(tail, 0, sizeof tail);
  memcpy(tail, p + i, n - i);
  h1 = lane(h1, rd64(tail));
  r = lane(lane(lane(lane((uint64_t)n, h0), h1), h2), h3);
  r ^= r >> 31;
  return r ? r : 1;
}

static uint64_t special_fp(int kind) { return 0x5350454349414C00ull | (uint64_t)kind; }

/* ---- computing ------------------------------------------------------------------------ */

static void acc_init(caterva_block_stats *s, int stype) {
  memset(s, 0, sizeof *s);
  if (stype == CATERVA_STATS_FLOAT) {
    s->min.f = INFINITY;
    s->max.f = -INFINITY;
  } else if (stype == CATERVA_STATS_INT) {
    s->min.i = INT64_MAX;
    s->max.i = INT64_MIN;
  } else {
    s->min.u = UINT64_MAX;
    s->max.u = 0;
  }
}

/* Fold n consecutive items at p into s, one after the other: a NaN counts as missing, any other
 * item as present, into min, max and sum (floats summed as doubles in item order; an integer
 * sum that overflows is flagged). The running statistics stay in locals (registers): the block
 * check recomputes every decoded block's statistics, so this loop is on every read's path.
 * Floats take one pass without branches: min and max skip a NaN by their comparison alone
 * (`v < mn ? v : mn` keeps mn for a NaN, as the test did before), NaNs are counted, and the sum
 * is done again skipping them only when there was one, so the result is that of adding the
 * present items in order. */
#define RUN_F(T, CONV)                                                                     \
  {                                                                                        \
    double mn = s->min.f, mx = s->max.f, sm = s->sum.f;                                    \
    int64_t nn = 0;                                                                        \
    for (j = 0; j < n; j++) {                                                              \
      T x_;                                                                                \
      double v;                                                                            \
      memcpy(&x_, p + (size_t)j * sizeof x_, sizeof x_);                                   \
      v = CONV(x_);                                                                        \
      nn += v != v;                                                                        \
      mn = v < mn ? v : mn;                                                                \
      mx = v > mx ? v : mx;                                                                \
      sm += v;                                                                             \
    }                                                                                      \
    if (nn > 0) {                                                                          \
      sm = s->sum.f;                                                                       \
      for (j = 0; j < n; j++) {                                                            \
        T x_;                                                                              \
        double v;                                                                          \
        memcpy(&x_, p + (size_t)j * sizeof x_, sizeof x_);                                 \
        v = CONV(x_);                                                                      \
        if (v == v) sm += v;                                                               \
      }                                                                                    \
    }                                                                                      \
    s->min.f = mn;                                                                         \
    s->max.f = mx;                                                                         \
    s->sum.f = sm;                                                                         \
    s->nvalid += n - nn;                                                                   \
    s->nnan += nn;                                                                         \
  }                                                                                        \
  break;
#define RUN_I(T, U, F, CONV)                                                               \
  {                                                                                        \
    U mn = s->min.F, mx = s->max.F, sm = s->sum.F;                                         \
    int ov = 0;                                                                            \
    for (j = 0; j < n; j++) {                                                              \
      T x_;                                                                                \
      U v;                                                                                 \
      memcpy(&x_, p + (size_t)j * sizeof x_, sizeof x_);                                   \
      v = CONV(x_);                                                                        \
      if (v < mn) mn = v;                                                                  \
      if (v > mx) mx = v;                                                                  \
      ov |= __builtin_add_overflow(sm, v, &sm);                                            \
    }                                                                                      \
    s->min.F = mn;                                                                         \
    s->max.F = mx;                                                                         \
    s->sum.F = sm;                                                                         \
    s->nvalid += n;                                                                        \
    if (ov) s->sum_overflow = 1;                                                           \
  }                                                                                        \
  break;
#define ID(x) (x)
#define BOOLV(x) ((int64_t)((x) != 0))
static void acc_run(const cat_bstats *bs, caterva_block_stats *s, const uint8_t *p, int64_t n) {
  int64_t j;
  switch (bs->stype * 16 + bs->itemsize) {
  case CATERVA_STATS_FLOAT * 16 + 2: RUN_F(uint16_t, cat_half_to_double)
  case CATERVA_STATS_FLOAT * 16 + 4: RUN_F(float, (double))
  case CATERVA_STATS_FLOAT * 16 + 8: RUN_F(double, ID)
  case CATERVA_STATS_INT * 16 + 1:
    if (bs->dkind == CATERVA_KIND_BOOL) {
      RUN_I(uint8_t, int64_t, i, BOOLV)
    }
    RUN_I(int8_t, int64_t, i, (int64_t))
  case CATERVA_STATS_INT * 16 + 2: RUN_I(int16_t, int64_t, i, (int64_t))
  case CATERVA_STATS_INT * 16 + 4: RUN_I(int32_t, int64_t, i, (int64_t))
  case CATERVA_STATS_INT * 16 + 8: RUN_I(int64_t, int64_t, i, ID)
  case CATERVA_STATS_UINT * 16 + 1: RUN_I(uint8_t, uint64_t, u, (uint64_t))
  case CATERVA_STATS_UINT * 16 + 2: RUN_I(uint16_t, uint64_t, u, (uint64_t))
  case CATERVA_STATS_UINT * 16 + 4: RUN_I(uint32_t, uint64_t, u, (uint64_t))
  case CATERVA_STATS_UINT * 16 + 8: RUN_I(uint64_t, uint64_t, u, ID)
  default: break;
  }
}
#undef RUN_F
#undef RUN_I
#undef ID
#undef BOOLV

/* The items of block nb of chunk cc that lie inside the shape: ext[k] items along each
 * axis (0 along some axis: none). */
static int64_t block_extent(const cat_geom *g, const int64_t *cc, int32_t nb, int64_t *ext) {
  int64_t total = 1;
  int32_t rest = nb;
  for (int k = g->ndim - 1; k >= 0; k--) {
    int64_t bk = rest % g->blockgrid[k], inchunk = bk * g->blockshape[k];
    int64_t global = cc[k] * g->chunkshape[k] + inchunk;
    int64_t e = g->blockshape[k];
    rest /= g->blockgrid[k];
    if (e > g->chunkshape[k] - inchunk) e = g->chunkshape[k] - inchunk;
    if (e > g->shape[k] - global) e = g->shape[k] - global;
    ext[k] = e > 0 ? e : 0;
    total *= ext[k];
  }
  return total;
}

/* Statistics of one block image (blockitems items in C order over the blockshape). */
void cat_bs_block_compute(const cat_bstats *bs, const cat_geom *g, const int64_t *cc, int32_t nb,
                          const uint8_t *blk, caterva_block_stats *s) {
  int64_t ext[CATERVA_MAX_DIM], idx[CATERVA_MAX_DIM] = {0}, stride[CATERVA_MAX_DIM], total;
  int nd = g->ndim, k;
  acc_init(s, bs->stype);
  if ((total = block_extent(g, cc, nb, ext)) == 0) return;
  if (nd == 0 || total == g->blockitems) { /* the whole block: its items in C order */
    acc_run(bs, s, blk, total);
    return;
  }
  for (k = nd - 1, stride[nd - 1] = 1; k > 0; k--)
    stride[k - 1] = stride[k] * g->blockshape[k];
  for (;;) {
    int64_t off = 0;
    for (k = 0; k < nd - 1; k++) off += idx[k] * stride[k];
    acc_run(bs, s, blk + (size_t)off * (size_t)g->itemsize, ext[nd - 1]);
    for (k = nd - 2; k >= 0; k--) {
      if (++idx[k] < ext[k]) break;
      idx[k] = 0;
    }
    if (k < 0) break;
  }
}

/* A record for chunk n computed from its uncompressed image. */
static bs_rec *rec_compute(const cat_bstats *bs, const cat_geom *g, int64_t n,
                           const uint8_t *img, uint64_t fp) {
  int64_t cc[CATERVA_MAX_DIM];
  bs_rec *r = cat_bs_rec_new(bs->nblocks);
  if (r == NULL) return NULL;
  cat_geom_chunk_coords(g, n, cc);
  for (int32_t b = 0; b < bs->nblocks; b++)
    cat_bs_block_compute(bs, g, cc, b, img + (size_t)b * (size_t)g->blocksize, &r->b[b]);
  r->fp = fp;
  r->verified = true;
  return r;
}

/* The statistics of one item alone, into one. */
static void item_stats(const cat_bstats *bs, const uint8_t *item, caterva_block_stats *one) {
  acc_init(one, bs->stype);
  acc_run(bs, one, item, 1);
}

/* One addition of a cat_bs_repeat_sum, and whether the sum can go on changing. */
static bool repeat_step(double *s, double a) {
  double before = *s;
  *s += a;
  return *s != before && !isinf(*s);
}

/* Whether every partial sum k * a (k <= n) is a double, so that each addition is exact: a's
 * significant bits and n's together fit in 53 (3, 2.5 and other short values; not 0.1). */
static bool repeat_exact(double a, int64_t n) {
  int e;
  uint64_t m = (uint64_t)ldexp(frexp(a, &e), 53); /* a's significand as an integer */
  int bits = 64 - __builtin_clzll(m) - __builtin_ctzll(m);
  int nbits = 64 - __builtin_clzll((uint64_t)n);
  return bits + nbits <= 53 && isfinite(a * (double)n);
}

/* The additions of cat_bs_repeat_sum one binade at a time. */
static double repeat_steps(double a, int64_t n) {
  double s = 0.0;
  int64_t k = 0;
  while (k < n) {
    int e;
    double u, q = 0.0, fl = 0.0, fq = 0.0;
    int64_t big = (int64_t)1 << 53, d, j;
    bool alone;
    frexp(s, &e); /* s in [2^(e-1), 2^e), spaced u = 2^(e-53) apart */
    u = ldexp(1.0, e - 53);
    alone = s < DBL_MIN || e >= DBL_MAX_EXP || a >= ldexp(1.0, e) - s; /* leaves the binade */
    if (!alone) {
      q = a / u; /* exact: a scaling by a power of two, below 2^53 */
      fl = floor(q);
      fq = q - fl;
      alone = fq == 0.5; /* a tie: rounded to even, which depends on s */
    }
    if (alone) { /* one real addition */
      k++;
      if (!repeat_step(&s, a)) break;
      continue;
    }
    d = (int64_t)(fq > 0.5 ? fl + 1.0 : fl); /* each addition adds d spacings exactly */
    if (d == 0) break;                       /* s + a rounds back to s from now on */
    /* additions i = 0, 1, ... stay in the binade while s/u + i*d + q < 2^53 */
    j = (big - (int64_t)(s / u) - (int64_t)fl - 1) / d + 1;
    if (j > n - k) j = n - k;
    s += (double)(j * d) * u; /* exact: a multiple of u no larger than 2^e */
    k += j;
  }
  return s;
}

double cat_bs_repeat_sum(double v, int64_t n) {
  /* the blocks of a chunk ask with the same value and count, one after the other */
  static _Thread_local struct { uint64_t vbits; int64_t n; double sum; } last = {0, 0, 0.0};
  double a = fabs(v), s;
  uint64_t vbits;
  if (!(a > 0.0) || n <= 0) return 0.0; /* zero; NaN counts as missing */
  memcpy(&vbits, &v, sizeof vbits);
  if (last.n == n && last.vbits == vbits) return last.sum;
  s = isfinite(a) && repeat_exact(a, n) ? a * (double)n : repeat_steps(a, n);
  last.vbits = vbits;
  last.n = n;
  last.sum = v < 0 ? -s : s;
  return last.sum;
}

/* The statistics of block b (of chunk coordinates cc) whose items all equal the item whose
 * own statistics are one: a float sum as acc_run's additions give it (cat_bs_repeat_sum),
 * which a record of the same values holds. */
static void uniform_block(const cat_bstats *bs, const cat_geom *g, const int64_t *cc, int32_t b,
                          const caterva_block_stats *one, caterva_block_stats *s) {
  int64_t ext[CATERVA_MAX_DIM], cnt = block_extent(g, cc, b, ext);
  acc_init(s, bs->stype);
  if (cnt == 0) return;
  *s = *one;
  s->nvalid = one->nvalid * cnt;
  s->nnan = one->nnan * cnt;
  if (bs->stype == CATERVA_STATS_FLOAT) s->sum.f = one->nvalid ? cat_bs_repeat_sum(one->sum.f, cnt) : 0.0;
  else if (bs->stype == CATERVA_STATS_INT)
    s->sum_overflow = __builtin_mul_overflow(one->sum.i, cnt, &s->sum.i);
  else s->sum_overflow = __builtin_mul_overflow(one->sum.u, (uint64_t)cnt, &s->sum.u);
}

/* A record for chunk n whose items all equal one item (a special chunk). */
static bs_rec *rec_uniform(const cat_bstats *bs, const cat_geom *g, int64_t n,
                           const uint8_t *item, uint64_t fp) {
  int64_t cc[CATERVA_MAX_DIM];
  bs_rec *r = cat_bs_rec_new(bs->nblocks);
  caterva_block_stats one;
  if (r == NULL) return NULL;
  cat_geom_chunk_coords(g, n, cc);
  item_stats(bs, item, &one);
  for (int32_t b = 0; b < bs->nblocks; b++) uniform_block(bs, g, cc, b, &one, &r->b[b]);
  r->fp = fp;
  r->verified = true;
  return r;
}

/* The one item of a chunk that its index entry says is special (zeros, NaN, uninitialized:
 * read as zeros) into item; false when it has none here (NaN of a size without one). */
static bool special_item(const cat_geom *g, int special, uint8_t *item) {
  memset(item, 0, 16);
  if (special != CATERVA_SPECIAL_NAN) return true;
  if (g->itemsize != 4 && g->itemsize != 8) return false;
  cat_fill_items(item, 1, g->itemsize, special, NULL);
  return true;
}

/* The record of chunk n stored as chunk bytes (decompressed here unless img is given) or
 * as a special index entry. NULL when it cannot be computed (the chunk is then unknown). */
static bs_rec *rec_for_chunk(caterva_ctx *ctx, const cat_bstats *bs, const cat_geom *g,
                             int64_t n, const uint8_t *chunk, int32_t cbytes, int special,
                             const uint8_t *img) {
  uint8_t item[16] = {0};
  uint8_t *buf = NULL;
  bs_rec *r = NULL;
  if (chunk == NULL)
    return special_item(g, special, item) ? rec_uniform(bs, g, n, item, special_fp(special))
                                          : NULL;
  if (img != NULL) {
    r = rec_compute(bs, g, n, img, fingerprint(chunk, (size_t)cbytes));
  } else {
    buf = malloc((size_t)g->chunksize);
    if (buf != NULL && caterva_chunk_decompress(ctx, chunk, (size_t)cbytes, buf, g->chunksize) ==
                           g->chunksize)
      r = rec_compute(bs, g, n, buf, fingerprint(chunk, (size_t)cbytes));
    free(buf);
  }
  if (r != NULL) rec_set_starts(r, bs->nblocks, chunk, cbytes);
  return r;
}

/* The record of chunk n (new bytes chunk) re-encoded only in the blocks flagged in dirty
 * (their items in img), the others' statistics taken from old. Reads bs, never changes it. */
static bs_rec *rec_patched(const cat_bstats *bs, const cat_geom *g, int64_t n,
                           const uint8_t *img, const uint8_t *dirty, const bs_rec *old,
                           const uint8_t *chunk, int32_t cbytes) {
  int64_t cc[CATERVA_MAX_DIM];
  bs_rec *r = cat_bs_rec_new(bs->nblocks);
  if (r == NULL) return NULL;
  memcpy(r->b, old->b, (size_t)bs->nblocks * sizeof *r->b);
  cat_geom_chunk_coords(g, n, cc);
  for (int32_t b = 0; b < bs->nblocks; b++)
    if (dirty[b]) cat_bs_block_compute(bs, g, cc, b, img + (size_t)b * (size_t)g->blocksize, &r->b[b]);
  r->fp = fingerprint(chunk, (size_t)cbytes);
  r->verified = true;
  return r;
}

/* The record of chunk n after an edit that re-encoded only the blocks flagged in
 * bs->hint_dirty (their items are in bs->hint_img): the old record's other blocks, checked
 * against the chunk before the edit, stay; without one, computed from the new chunk. */
static bs_rec *rec_patch(caterva_ctx *ctx, const cat_bstats *bs, const cat_geom *g, int64_t n,
                         const uint8_t *chunk, int32_t cbytes, const bs_rec *old) {
  if (chunk == NULL || old == NULL || !old->verified)
    return rec_for_chunk(ctx, bs, g, n, chunk, cbytes, CATERVA_SPECIAL_NONE, NULL);
  return rec_patched(bs, g, n, bs->hint_img, bs->hint_dirty, old, chunk, cbytes);
}

/* ---- keeping records in step with the chunks ----------------------------------------- */

/* Make room for (or remove) the position pos. false: out of memory. */
static bool positions_shift(cat_bstats *bs, int op, int64_t pos) {
  if (op == CAT_EDIT_INSERT) {
    bs_rec **p = bs->rec;
    if (bs->n + 1 > bs->cap) {
      int64_t cap = bs->cap < 16 ? 16 : bs->cap;
      while (cap < bs->n + 1) cap *= 2;
      p = cat_ztable_resize(bs->rec, cap, sizeof *p);
      if (p == NULL) return false;
      bs->rec = p;
      bs->cap = cap;
    }
    memmove(p + pos + 1, p + pos, (size_t)(bs->n - pos) * sizeof *p);
    p[pos] = NULL;
    bs->n++;
  } else if (op == CAT_EDIT_DELETE) {
    cat_bs_rec_unref(bs->rec[pos]);
    memmove(bs->rec + pos, bs->rec + pos + 1, (size_t)(bs->n - pos - 1) * sizeof *bs->rec);
    bs->n--;
  }
  return true;
}

void cat_bs_edit_hook(void *arg, caterva_ctx *ctx, int op, int64_t pos, const uint8_t *chunk,
                      int32_t cbytes, int special) {
  caterva_array *a = arg;
  cat_bstats *bs = a->bs;
  bs_rec *r = NULL;
  if (bs == NULL || bs->broken) return;
  bs->dirty = true;
  if (cat_bs_load_all(NULL, bs) < 0) { /* records move: every one is read first */
    bs->broken = true;
    return;
  }
  /* an edit outside the array's chunk grid (a caller editing the super-chunk directly) has
   * no position to describe: the statistics are dropped, never computed for it */
  if (pos < 0 || pos > bs->n || (op != CAT_EDIT_INSERT && pos == bs->n) ||
      (op != CAT_EDIT_DELETE && pos >= (bs->geom != NULL ? bs->geom : &a->g)->nchunks) ||
      !positions_shift(bs, op, pos)) {
    bs->broken = true;
    return;
  }
  if (op == CAT_EDIT_DELETE) return;
  if (bs->hint_pos == pos && bs->hint_rec != NULL &&
      (!bs->hint_ahead || (chunk != NULL && bs->hint_rec->fp == fingerprint(chunk, (size_t)cbytes)))) {
    r = bs->hint_rec;
    r->refs++;
  } else if (bs->hint_pos == pos && bs->hint_dirty != NULL) {
    r = rec_patch(ctx, bs, bs->geom != NULL ? bs->geom : &a->g, pos, chunk, cbytes,
                  bs->rec[pos]);
  } else {
    r = rec_for_chunk(ctx, bs, bs->geom != NULL ? bs->geom : &a->g, pos, chunk, cbytes, special,
                      bs->hint_pos == pos ? bs->hint_img : NULL);
  }
  if (r != NULL) rec_set_starts(r, bs->nblocks, chunk, cbytes);
  /* the starts of a record installed again were just rewritten in place: its pointer no
   * longer identifies its encoding */
  if (r != NULL && r == bs->rec[pos]) cat_bs_enc_drop(bs);
  cat_bs_rec_unref(bs->rec[pos]);
  bs->rec[pos] = r; /* NULL (out of memory, undecodable): unknown, never wrong */
}

/* True when chunk n of g lies wholly inside the shape (its record then depends only on its
 * bytes, not on its position). */
static bool chunk_inside(const cat_geom *g, int64_t n) {
  int64_t cc[CATERVA_MAX_DIM];
  cat_geom_chunk_coords(g, n, cc);
  for (int k = 0; k < g->ndim; k++)
    if ((cc[k] + 1) * g->chunkshape[k] > g->shape[k]) return false;
  return true;
}

void cat_bs_remap_hook(void *arg, caterva_ctx *ctx, const int64_t *map, int64_t n,
                       const uint8_t *chunk, int32_t cbytes, int special) {
  caterva_array *a = arg;
  cat_bstats *bs = a->bs;
  const cat_geom *g;
  bs_rec **rec, *inner = NULL;
  bool have_inner = false;
  if (bs == NULL || bs->broken) return;
  bs->dirty = true;
  if (cat_bs_load_all(NULL, bs) < 0) {
    bs->broken = true;
    return;
  }
  g = bs->geom != NULL ? bs->geom : &a->g;
  rec = cat_ztable_new(n, sizeof *rec);
  if (rec == NULL) {
    bs->broken = true;
    return;
  }
  for (int64_t i = 0; i < n; i++) {
    if (map[i] >= 0) {
      if (map[i] < bs->n) rec[i] = bs->rec[map[i]];
      if (map[i] < bs->n) bs->rec[map[i]] = NULL;
    } else if (!chunk_inside(g, i)) {
      rec[i] = rec_for_chunk(ctx, bs, g, i, chunk, cbytes, special, NULL);
    } else {
      /* the new chunks inside the shape share one record (a million of them cost one) */
      if (!have_inner) inner = rec_for_chunk(ctx, bs, g, i, chunk, cbytes, special, NULL);
      have_inner = true;
      if (inner != NULL) inner->refs++;
      rec[i] = inner;
    }
  }
  cat_bs_rec_unref(inner);
  cat_bs_recs_free(bs->rec, bs->n); /* the removed chunks' records */
  bs->rec = rec;
  bs->n = n;
  bs->cap = n > 0 ? n : 1;
}

void cat_bs_hint(caterva_array *a, int64_t pos, const uint8_t *img) {
  if (a->bs == NULL) return;
  a->bs->hint_pos = img != NULL ? pos : -1;
  a->bs->hint_img = img;
  a->bs->hint_rec = NULL;
  a->bs->hint_dirty = NULL;
  a->bs->hint_ahead = false;
}

void cat_bs_hint_blocks(caterva_array *a, int64_t pos, const uint8_t *img, const uint8_t *dirty) {
  cat_bs_hint(a, pos, img);
  if (a->bs != NULL && img != NULL) a->bs->hint_dirty = dirty;
}

void cat_bs_hint_copy(caterva_array *b, int64_t pos, caterva_array *a, int64_t apos) {
  if (b->bs == NULL) return;
  b->bs->hint_pos = -1;
  b->bs->hint_img = NULL;
  b->bs->hint_rec = NULL;
  b->bs->hint_dirty = NULL;
  b->bs->hint_ahead = false;
  if (a->bs == NULL || a->bs->broken || apos < 0 || apos >= a->bs->n ||
      cat_bs_rec_at(a->bs, apos) == NULL || !a->bs->rec[apos]->verified ||
      a->bs->stype != b->bs->stype ||
      a->bs->nblocks != b->bs->nblocks)
    return;
  b->bs->hint_pos = pos;
  b->bs->hint_rec = a->bs->rec[apos];
}

cat_bs_rec *cat_bs_rec_compute(const caterva_array *a, const cat_geom *g, int64_t n,
                               const uint8_t *img, const uint8_t *chunk, int32_t cbytes) {
  const cat_bstats *bs = a->bs;
  if (bs == NULL || chunk == NULL || cbytes <= 0) return NULL;
  return rec_compute(bs, g, n, img, fingerprint(chunk, (size_t)cbytes));
}

void cat_bs_hint_rec(caterva_array *a, int64_t pos, cat_bs_rec *r) {
  cat_bs_hint(a, -1, NULL);
  if (a->bs == NULL || r == NULL) return;
  a->bs->hint_pos = pos;
  a->bs->hint_rec = r;
  a->bs->hint_ahead = true;
}

cat_bs_rec *cat_bs_rec_patched(const caterva_array *a, const cat_geom *g, int64_t n,
                               const uint8_t *img, const uint8_t *dirty, const cat_bs_rec *old,
                               const uint8_t *chunk, int32_t cbytes) {
  if (a->bs == NULL || old == NULL || chunk == NULL || cbytes <= 0) return NULL;
  return rec_patched(a->bs, g, n, img, dirty, old, chunk, cbytes);
}

cat_bs_rec *cat_bs_rec_ref(caterva_ctx *ctx, caterva_array *a, int64_t n) {
  caterva_block_stats st;
  bs_rec *r;
  if (caterva_array_block_stats(ctx, a, n, 0, &st) != 1) return NULL; /* checks it first */
  /* a chunk of one repeated item answers from that item, with no record or an unchecked one */
  r = cat_bs_rec_at(a->bs, n);
  if (r == NULL || r->stale || !r->verified) return NULL;
  r->refs++;
  return r;
}

int cat_bs_rec_is(const caterva_array *a, int64_t n, const cat_bs_rec *r) {
  return a->bs != NULL && !a->bs->broken && n >= 0 && n < a->bs->n && cat_bs_rec_at(a->bs, n) == r;
}

void cat_bs_rec_drop(cat_bs_rec *r) { cat_bs_rec_unref(r); }

/* Start keeping statistics for an array that has no chunks yet. */
int cat_bs_enable_new(caterva_ctx *ctx, caterva_array *a) {
  int kind, stype = cat_bs_stats_type(a->dtype, a->g.itemsize, &kind);
  (void)ctx;
  if (stype == CATERVA_STATS_NONE || a->bs != NULL || caterva_schunk_nchunks(a->sc) != 0)
    return CATERVA_OK;
  a->bs = cat_bs_new(a, stype, kind);
  if (a->bs == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  a->bs->dirty = true;
  return CATERVA_OK;
}

void cat_bs_set_geom(caterva_array *a, const cat_geom *g) {
  if (a->bs != NULL) a->bs->geom = g;
}

/* After a resize: the records follow their chunks (the edit hook saw the deletions and
 * insertions), but chunks whose part inside the shape changed without being rewritten
 * (edge chunks along an axis whose extent changed) are recomputed now. */
int cat_bs_reshaped(caterva_ctx *ctx, caterva_array *a, const int64_t *old_shape) {
  cat_bstats *bs = a->bs;
  const cat_geom *g = &a->g;
  int64_t cc[CATERVA_MAX_DIM];
  if (bs == NULL || bs->broken) return CATERVA_OK;
  bs->dirty = true;
  if (bs->n != g->nchunks || bs->nblocks != g->nblocks || cat_bs_load_all(NULL, bs) < 0) {
    bs->broken = true;
    return CATERVA_OK;
  }
  for (int64_t n = 0; n < g->nchunks; n++) {
    bool edge = false;
    const uint8_t *chunk;
    int32_t cbytes;
    int special;
    cat_geom_chunk_coords(g, n, cc);
    for (int k = 0; k < g->ndim; k++) {
      int64_t lo = cc[k] * g->chunkshape[k], hi = lo + g->chunkshape[k];
      bool was_cut = old_shape[k] < hi, is_cut = g->shape[k] < hi;
      if (old_shape[k] != g->shape[k] && (was_cut || is_cut) && old_shape[k] > lo) edge = true;
    }
    if (!edge) continue;
    cat_bs_rec_unref(bs->rec[n]);
    bs->rec[n] = NULL;
    special = caterva_schunk_chunk_special(a->sc, n);
    if (special < 0) continue;
    if (special != CATERVA_SPECIAL_NONE) {
      bs->rec[n] = rec_for_chunk(ctx, bs, g, n, NULL, 0, special, NULL);
    } else if (caterva_schunk_get_chunk(ctx, a->sc, n, &chunk, &cbytes) >= 0) {
      bs->rec[n] = rec_for_chunk(ctx, bs, g, n, chunk, cbytes, CATERVA_SPECIAL_NONE, NULL);
    }
  }
  if (ctx != NULL) ctx->errmsg[0] = '\0';
  return CATERVA_OK;
}

/* ---- transactions -------------------------------------------------------------------- */

int cat_bs_mark(caterva_ctx *ctx, caterva_array *a, int level) {
  cat_bstats *bs = a->bs;
  bs_mark *m;
  int rc;
  if (bs == NULL) return CATERVA_OK;
  rc = cat_bs_load_all(ctx, bs); /* a mark copies every record */
  if (rc < 0) return rc;
  marks_drop(bs, level);
  if (bs->nmarks == bs->capmarks) {
    int cap = bs->capmarks ? 2 * bs->capmarks : 8;
    bs_mark *p = realloc(bs->marks, (size_t)cap * sizeof *p);
    if (p == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
    bs->marks = p;
    bs->capmarks = cap;
  }
  m = &bs->marks[bs->nmarks];
  m->level = level;
  m->n = bs->n;
  m->rec = recs_dup(bs->rec, bs->n);
  if (m->rec == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  bs->nmarks++;
  return CATERVA_OK;
}

int cat_bs_begin(caterva_ctx *ctx, caterva_array *a) {
  if (a->bs != NULL) marks_drop(a->bs, INT32_MIN);
  return cat_bs_mark(ctx, a, INT32_MIN);
}

void cat_bs_release(caterva_array *a, int level) {
  if (a->bs != NULL) marks_drop(a->bs, level > INT32_MIN ? level : INT32_MIN + 1);
}

/* Put back the records of the newest mark left after dropping those above level (the
 * transaction's start when none). Out of memory: the statistics are no longer trusted. */
void cat_bs_rollback_to(caterva_array *a, int level) {
  cat_bstats *bs = a->bs;
  bs_rec **c;
  bs_mark *m;
  if (bs == NULL) return;
  marks_drop(bs, level == INT32_MAX ? level : level + 1);
  if (level <= INT32_MIN) marks_drop(bs, INT32_MIN + 1);
  if (bs->nmarks == 0) {
    bs->broken = true;
    return;
  }
  m = &bs->marks[bs->nmarks - 1];
  c = recs_dup(m->rec, m->n);
  if (c == NULL) {
    bs->broken = true;
    return;
  }
  cat_bs_recs_free(bs->rec, bs->n);
  bs->rec = c;
  bs->n = m->n;
  bs->cap = m->n > 0 ? m->n : 1;
  bs->dirty = true;
}

void cat_bs_rollback(caterva_array *a) {
  if (a->bs == NULL) return;
  cat_bs_rollback_to(a, INT32_MIN);
  marks_drop(a->bs, INT32_MIN);
}

void cat_bs_end(caterva_array *a) {
  if (a->bs != NULL) marks_drop(a->bs, INT32_MIN);
}

/* ---- reading ------------------------------------------------------------------------- */

void cat_bs_starts_ahead(const caterva_array *a, const int64_t *nchunk, int n) {
  cat_bstats *bs = a->bs;
  if (bs != NULL && !bs->broken && bs->n == a->g.nchunks && bs->nblocks == a->g.nblocks)
    cat_bs_pages_ahead(bs, nchunk, n);
}

int cat_bs_block_starts(const caterva_array *a, int64_t nchunk, uint32_t *out) {
  cat_bstats *bs = a->bs;
  bs_rec *r;
  const uint32_t *st;
  if (bs == NULL || bs->broken || nchunk < 0 || nchunk >= bs->n || bs->n != a->g.nchunks ||
      bs->nblocks != a->g.nblocks || (r = cat_bs_rec_at(bs, nchunk)) == NULL)
    return 0;
  st = cat_bs_rec_starts(r, bs->nblocks);
  for (int32_t j = 0; j < bs->nblocks; j++)
    if (st[j] == 0) return 0;
  memcpy(out, st, (size_t)bs->nblocks * sizeof *out);
  return 1;
}

/* The bytes to hash for a chunk at p: a copy read from the file when the chunk lies in a
** file's map (cheaper than faulting its pages in), else p itself. */
static const uint8_t *verify_bytes(cat_bstats *bs, caterva_schunk *sc, const uint8_t *p,
                                   size_t n) {
  if (n > bs->scratch_cap) {
    uint8_t *b = realloc(bs->scratch, n);
    if (b == NULL) return p;
    bs->scratch = b;
    bs->scratch_cap = n;
  }
  return cat_file_copy_mapped(sc, p, n, bs->scratch) ? bs->scratch : p;
}

/* Check a loaded record against the chunk's bytes. */
static int verify(caterva_ctx *ctx, caterva_array *a, int64_t n, bs_rec *r) {
  int special = caterva_schunk_chunk_special(a->sc, n);
  const uint8_t *chunk;
  int32_t cbytes;
  int rc;
  if (special < 0) return special;
  if (special != CATERVA_SPECIAL_NONE) return r->fp == special_fp(special);
  rc = caterva_schunk_get_chunk(ctx, a->sc, n, &chunk, &cbytes);
  if (rc < 0) return rc;
  return r->fp == fingerprint(verify_bytes(a->bs, a->sc, chunk, (size_t)cbytes), (size_t)cbytes);
}

/* Check record r of chunk n, once: verified, or marked stale. */
static int verify_once(caterva_ctx *ctx, caterva_array *a, int64_t n, bs_rec *r) {
  int rc;
  if (r->verified || r->stale) return CATERVA_OK;
  rc = verify(ctx, a, n, r);
  if (rc < 0) return rc;
  /* not the chunk's: other bytes, or these bytes damaged; kept for the block check
   * (cat_bs_check_rec) */
  if (rc == 0) r->stale = true;
  else r->verified = true;
  return CATERVA_OK;
}

/* caterva_array_block_stats_ahead's budget of chunk bytes for one call (decoded sizes) */
#define BS_AHEAD_BYTES ((int64_t)48 << 20)

int caterva_array_block_stats_ahead(caterva_ctx *ctx, caterva_array *a, const int64_t *nchunk,
                                    int n) {
  cat_bstats *bs;
  cat_want *w = NULL;
  int nw = 0, k = 0, rc = CATERVA_OK;
  int64_t bytes = 0;
  CAT_CHECK(leave, a != NULL && (nchunk != NULL || n <= 0), CATERVA_E_INVALID,
            "no array or chunk list");
  bs = a->bs;
  if (bs == NULL || bs->broken || bs->n != a->g.nchunks || !cat_sc_is_remote(a->sc)) {
    k = n;
    goto leave;
  }
  w = calloc((size_t)(n > 0 ? n : 1), sizeof *w);
  CAT_CHECK(leave, w != NULL, CATERVA_E_NOMEM, "out of memory");
  CAT_TRY(leave, cat_sc_index_ahead(ctx, a->sc, nchunk, n)); /* their entries: one wave */
  for (; k < n && (bytes < BS_AHEAD_BYTES || nw == 0); k++) {
    bs_rec *r;
    if (nchunk[k] < 0 || nchunk[k] >= bs->n) continue;
    r = cat_bs_rec_at(bs, nchunk[k]);
    if (r == NULL || r->verified || r->stale ||
        caterva_schunk_chunk_special(a->sc, nchunk[k]) != CATERVA_SPECIAL_NONE)
      continue;
    w[nw].nchunk = nchunk[k];
    w[nw].nblocks = -1; /* the whole chunk: its fingerprint covers every byte */
    nw++;
    bytes += a->g.chunksize;
  }
  if (nw < 2) goto leave; /* one chunk: its check fetches it alone anyway */
  CAT_TRY(leave, cat_sc_prefetch(ctx, a->sc, w, nw));
  for (int j = 0; j < nw; j++) {
    bs_rec *r = cat_bs_rec_at(bs, w[j].nchunk);
    if (r != NULL) CAT_TRY(leave, verify_once(ctx, a, w[j].nchunk, r));
  }
leave:
  free(w);
  return rc < 0 ? rc : k;
}

int cat_bs_chunk_uniform(const caterva_array *a, int64_t n, const uint8_t **value,
                         int32_t *vsize) {
  const cat_bstats *bs = a->bs;
  int special = caterva_schunk_chunk_special(a->sc, n);
  *value = NULL;
  *vsize = 0;
  if (special != CATERVA_SPECIAL_NONE || (bs != NULL && n < bs->n && bs->rec[n] != NULL))
    return special;
  return cat_sc_stored_uniform(a->sc, n, value, vsize);
}

/* Block nblock of chunk nchunk when the chunk is special (zeros, NaN, uninitialized, one
 * repeated item: its index entry, or its bytes when at hand, cat_bs_chunk_uniform): its
 * statistics from the chunk's one item, exact whatever records are stored, without reading
 * or making a record (a value predicate over a grown array of a million fill chunks asked a
 * record of each: 1.7 GB). 1 with *st, 0 when the chunk is not such a chunk (or its entry
 * does not read: the record's check reports it; or its repeated value is not one item). */
static int special_stats(const cat_bstats *bs, const caterva_array *a, int64_t nchunk,
                         int32_t nblock, caterva_block_stats *st) {
  const cat_geom *g = bs->geom != NULL ? bs->geom : &a->g;
  int64_t cc[CATERVA_MAX_DIM];
  uint8_t item[255];
  const uint8_t *value;
  int32_t vsize;
  caterva_block_stats one;
  int special = cat_bs_chunk_uniform(a, nchunk, &value, &vsize);
  if (special == CATERVA_SPECIAL_VALUE) {
    if (vsize != g->itemsize) return 0;
    memcpy(item, value, (size_t)vsize);
  } else if (special <= CATERVA_SPECIAL_NONE || !special_item(g, special, item)) {
    return 0;
  }
  cat_geom_chunk_coords(g, nchunk, cc);
  item_stats(bs, item, &one);
  uniform_block(bs, g, cc, nblock, &one, st);
  return 1;
}

int caterva_array_block_stats(caterva_ctx *ctx, caterva_array *a, int64_t nchunk,
                              int32_t nblock, caterva_block_stats *st) {
  int rc = 0;
  cat_bstats *bs;
  bs_rec *r;
  CAT_CHECK(leave, a != NULL && st != NULL, CATERVA_E_INVALID, "no array or output");
  bs = a->bs;
  if (bs == NULL || bs->broken || nchunk < 0 || nchunk >= bs->n || nblock < 0 ||
      nblock >= bs->nblocks || bs->n != a->g.nchunks)
    goto leave;
  rc = special_stats(bs, a, nchunk, nblock, st);
  if (rc != 0) goto leave;
  r = cat_bs_rec_at(bs, nchunk);
  if (r == NULL || r->stale) goto leave;
  CAT_TRY(leave, verify_once(ctx, a, nchunk, r));
  if (r->stale) goto leave;
  *st = r->b[nblock];
  rc = 1;
leave:
  return rc;
}

/* ---- building ------------------------------------------------------------------------ */

/* Known and checked statistics for chunk n, else compute them. */
static int build_one(caterva_ctx *ctx, caterva_array *a, int64_t n) {
  int rc = CATERVA_OK, special;
  cat_bstats *bs = a->bs;
  caterva_block_stats st;
  const uint8_t *chunk = NULL;
  int32_t cbytes = 0;
  CAT_TRY(leave, caterva_array_block_stats(ctx, a, n, 0, &st));
  if (rc == 1) goto leave;
  CAT_TRY(leave, special = caterva_schunk_chunk_special(a->sc, n));
  if (special == CATERVA_SPECIAL_NONE)
    CAT_TRY(leave, caterva_schunk_get_chunk(ctx, a->sc, n, &chunk, &cbytes));
  /* a record caterva_array_block_stats did not use (an array of no blocks) is replaced:
   * overwritten, it leaked (tests/fuzz/fuzz_sql) */
  cat_bs_rec_unref(bs->rec[n]);
  bs->rec[n] = rec_for_chunk(ctx, bs, &a->g, n, chunk, cbytes, special, NULL);
  CAT_CHECK(leave, bs->rec[n] != NULL, CATERVA_E_CORRUPT,
            "chunk %lld cannot be decompressed for statistics", (long long)n);
  bs->dirty = true;
leave:
  return rc;
}

int cat_bs_build(caterva_ctx *ctx, caterva_array *a,
                 int (*progress)(void *arg, int64_t done, int64_t total), void *arg) {
  int rc = CATERVA_OK, kind, stype = cat_bs_stats_type(a->dtype, a->g.itemsize, &kind);
  if (a->bs != NULL && (a->bs->broken || a->bs->n != a->g.nchunks)) {
    cat_bs_free(a->bs);
    a->bs = NULL;
  }
  if (a->bs == NULL) {
    a->bs = cat_bs_new(a, stype, kind);
    CAT_CHECK(leave, a->bs != NULL, CATERVA_E_NOMEM, "out of memory");
    a->bs->n = a->g.nchunks;
    a->bs->rec = cat_ztable_new(a->bs->n, sizeof *a->bs->rec);
    a->bs->cap = a->bs->n > 0 ? a->bs->n : 1;
    CAT_CHECK(leave, a->bs->rec != NULL, CATERVA_E_NOMEM, "out of memory");
    a->bs->dirty = true;
  }
  CAT_TRY(leave, cat_bs_load_all(ctx, a->bs));
  for (int64_t n = 0; n < a->g.nchunks; n++) {
    CAT_TRY(leave, build_one(ctx, a, n));
    if (progress != NULL && progress(arg, n + 1, a->g.nchunks) != 0)
      CAT_FAIL(leave, CATERVA_E_INVALID, "building statistics was interrupted");
  }
  a->bs->dirty = true;
leave:
  return rc;
}

/* ---- predicates ---------------------------------------------------------------------- */

/* Exact three-way comparisons of a statistic with a bound (-1, 0, 1). */
static int cmp_i64_f(int64_t x, double f) {
  double t;
  if (f >= 9223372036854775808.0) return -1;
  if (f < -9223372036854775808.0) return 1;
  t = trunc(f);
  if (x != (int64_t)t) return x < (int64_t)t ? -1 : 1;
  return t == f ? 0 : (f > t ? -1 : 1);
}

static int cmp_f_i64(double x, int64_t i) { return -cmp_i64_f(i, x); }

static int cmp_stat(int stype, caterva_scalar v, const caterva_bound *b) {
  switch (stype) {
  case CATERVA_STATS_FLOAT:
    if (b->is_int) return cmp_f_i64(v.f, b->i);
    return v.f < b->f ? -1 : v.f > b->f;
  case CATERVA_STATS_INT:
    if (b->is_int) return v.i < b->i ? -1 : v.i > b->i;
    return cmp_i64_f(v.i, b->f);
  default:
    /* SQL reads items above INT64_MAX as REAL (rounded): compare what SQL compares, which
     * is monotone in the item, so min and max still bound it */
    if (v.u > (uint64_t)INT64_MAX) return b->is_int ? cmp_f_i64((double)v.u, b->i)
                                                    : ((double)v.u < b->f ? -1 : (double)v.u > b->f);
    if (b->is_int) return v.i < b->i ? -1 : v.i > b->i;
    return cmp_i64_f(v.i, b->f);
  }
}

int caterva_block_stats_may_match(int stype, const caterva_block_stats *st, int op,
                                  const caterva_bound *b) {
  if (op == CATERVA_CMP_ISNULL) return st->nnan > 0;
  if (op == CATERVA_CMP_NOTNULL) return st->nvalid > 0;
  if (st->nvalid == 0) return 0;
  if (b == NULL || (!b->is_int && b->f != b->f)) return 1;
  switch (op) {
  case CATERVA_CMP_EQ: return cmp_stat(stype, st->min, b) <= 0 && cmp_stat(stype, st->max, b) >= 0;
  case CATERVA_CMP_LT: return cmp_stat(stype, st->min, b) < 0;
  case CATERVA_CMP_LE: return cmp_stat(stype, st->min, b) <= 0;
  case CATERVA_CMP_GT: return cmp_stat(stype, st->max, b) > 0;
  case CATERVA_CMP_GE: return cmp_stat(stype, st->max, b) >= 0;
  default: return 1;
  }
}

/* Blocks of positions [first, first + n) whose statistics allow a match (a position without
 * a record: all of its blocks). */
static int64_t keep_recs(cat_bstats *bs, int64_t first, int64_t n, int op, const caterva_bound *b) {
  int64_t keep = 0;
  for (int64_t i = first; i < first + n; i++) {
    const bs_rec *r = bs->rec[i];
    if (r == NULL) {
      keep += bs->nblocks;
      continue;
    }
    for (int32_t k = 0; k < bs->nblocks; k++)
      keep += caterva_block_stats_may_match(bs->stype, &r->b[k], op, b);
  }
  return keep;
}

/* Blocks of page pg (n positions, not read yet) whose stored statistics allow a match, read
 * without keeping records (unreadable: all of them). */
static int64_t page_keep(cat_bstats *bs, int64_t pg, int64_t n, int op, const caterva_bound *b) {
  const uint8_t *page = NULL;
  caterva_block_stats st;
  int64_t keep = 0;
  if (cat_bs_page_bytes(bs, pg, &page) != n) return n * bs->nblocks;
  for (int64_t i = 0; i < n; i++)
    for (int32_t k = 0; k < bs->nblocks; k++)
      keep += !cat_bs_page_block(bs, page, i, k, &st) ||
              caterva_block_stats_may_match(bs->stype, &st, op, b);
  return keep;
}

double caterva_array_stats_selectivity(const caterva_array *a, int op, const caterva_bound *b) {
  cat_bstats *bs = a != NULL ? a->bs : NULL;
  int64_t keep = 0, total = 0, page, npages, step;
  if (bs == NULL || bs->broken || bs->n == 0 || bs->nblocks == 0) return 1.0;
  if (bs->lazy == NULL)
    return (double)keep_recs(bs, 0, bs->n, op, b) / ((double)bs->n * (double)bs->nblocks);
  /* stored records not read yet: an estimate from CAT_BS_SAMPLE_PAGES pages spread over the
   * array when it has more, each read without keeping its records (an estimate should not
   * cost what the array holds) */
  page = bs->lazy->page;
  npages = (bs->n + page - 1) / page;
  step = npages > CAT_BS_SAMPLE_PAGES ? npages / CAT_BS_SAMPLE_PAGES : 1;
  cat_bs_prefetch_pages(bs, step);
  for (int64_t pg = 0; pg < npages; pg += step) {
    int64_t first = pg * page, n = bs->n - first < page ? bs->n - first : page, k;
    if (bs->lazy->loaded[pg] == BS_PAGE_READ)
      k = keep_recs(bs, first, n, op, b);
    else
      k = page_keep(bs, pg, n, op, b);
    keep += k;
    total += n * bs->nblocks;
  }
  return total > 0 ? (double)keep / (double)total : 1.0;
}
