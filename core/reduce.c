/*
 * reduce.c -- count, sum, mean, min, max and standard deviation of an array over some of
 * its dimensions, kept dimensions giving a row per index and grouped ones a row per group,
 * in one pass over the blocks of the box (caterva_reduce.h).
 *
 * How. caterva_block_iter_visit decompresses the box's blocks in batches on the context's
 * threads. Each block is folded into a part of its own (a slot): one partial accumulator
 * per output row the block touches, numbered locally (the block's distinct groups along
 * each grouped dimension, its indices along each kept one). Merged path: when a batch is
 * complete, the slots are merged into the output rows (rows split among the threads) in
 * sequence order. Owned path (with one thread, or enough block columns of the kept
 * dimensions for the threads; see red_own): the worker that decoded a block merges its
 * slot at once, the iterator handing all blocks of one column to one worker in order.
 * Blocks that their statistics answer (wholly inside the sub-box and inside one output row)
 * are queued when the iterator's filter meets them and merged just before the first decoded
 * block of a later-or-same chunk (of the same column, owned). So every row combines its
 * parts in one fixed order -- per chunk in C order: its statistics blocks, then its decoded
 * blocks -- with the same operations on either path, whatever the number of threads, the
 * batch sizes or the reading path (local or remote).
 *
 * Numbers. Inside a block, a row's present values are added in C order in double (exact
 * conversions from every integer up to 2^53 and every float dtype); a block's part is then
 * added to the row's sum with Neumaier's compensated summation. With u = 2^-53, B the items
 * of a block and N the parts added to a row, the float sum s' of the values x_i (exact sum
 * s) satisfies |s' - s| <= (B + 2 + 2N u) u sum|x_i| (B - 1 for the sequential sum inside
 * a block, 2 for Neumaier's bound, N u for its second-order term): for the demo grid's
 * 4,500-item blocks, about 5e-13 of sum|x_i|, however many cells. Integer sums are exact
 * in int64 and continue in double past it. Variances: inside a block, the sums of d and
 * d^2 with d = x - k, k the row's first value in the block (shifted data: no cancellation
 * for data far from 0), give the block's M2 = sum d^2 - (sum d)^2 / n; parts are combined
 * with Chan, Golub and LeVeque's update M2 = M2a + M2b + delta^2 na nb / n.
 */
#include "reduce_state_internal.h"

#include <stdlib.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#define RED_SLOT_BUDGET ((int64_t)4 << 20) /* bytes of slots: bounds a batch's blocks */
#define RED_ROWS_MAX_BYTES ((int64_t)1 << 31)

/* ---- one block into its slot (on any worker) ------------------------------------------ */

/* The local coordinates of the block's indices [start, stop) along dimension k. */
static void slot_axis(const caterva_reduce *r, red_slot *sl, int k, int64_t start,
                      int64_t stop) {
  const caterva_reduce_dim *d = &r->dims[k];
  int32_t n = 0;
  for (int64_t j = start; j < stop; j++) {
    int32_t g = d->mode == CATERVA_RED_GROUP ? d->gid[j - d->lo] : (int32_t)(j - d->lo);
    int32_t l = d->mode == CATERVA_RED_GROUP ? 0 : n;
    if (d->mode == CATERVA_RED_GROUP) /* few distinct groups in a block: a linear search */
      while (l < n && sl->glob[k][l] != g) l++;
    if (l == n) sl->glob[k][n++] = g;
    sl->lidx[k][j - start] = l;
  }
  sl->nloc[k] = n;
}

/* Fold the block's part of the box into slot sl. */
static void slot_fill(const caterva_reduce *r, red_slot *sl, const caterva_block *blk) {
  const int nd = r->nd;
  const red_run_fn run = cat_red_run_fn(r);
  int64_t lstr[CATERVA_MAX_DIM], bstr[CATERVA_MAX_DIM], cnt[CATERVA_MAX_DIM];
  int64_t ext[CATERVA_MAX_DIM] = {0}, m, boff = 0, loff = 0;
  int last, mode;
  const red_soa_fn srun = r->soa ? cat_red_soa_fn(r) : NULL;
  red_soa soa = slot_soa(r, sl);
  sl->nchunk = blk->nchunk;
  sl->nparts = 1;
  if (nd == 0) {
    if (r->soa) {
      cat_red_soa_init(&soa, 1);
      srun(&soa, 0, NULL, blk->data, 1, RED_ONE);
      return;
    }
    cat_red_part_init(r, sl->part);
    run(sl->part, NULL, blk->data, 1, RED_ONE, r->std);
    return;
  }
  for (int k = 0; k < nd; k++) {
    ext[k] = blk->stop[k] - blk->start[k];
    if (r->dims[k].mode == CATERVA_RED_REDUCE) sl->nloc[k] = 1;
    else slot_axis(r, sl, k, blk->start[k], blk->stop[k]);
    cnt[k] = 0;
  }
  for (int k = nd - 1; k >= 0; k--) {
    lstr[k] = sl->nparts;
    sl->nparts *= sl->nloc[k];
    bstr[k] = k == nd - 1 ? 1 : bstr[k + 1] * blk->blockshape[k + 1];
  }
  if (r->soa) cat_red_soa_init(&soa, sl->nparts);
  else
    for (int64_t i = 0; i < sl->nparts; i++) cat_red_part_init(r, &sl->part[i]);
  if (r->cols) {
    cat_red_fill_cols(r, sl, &soa, blk, lstr, bstr);
    return;
  }
  /* trailing reduced axes that the block covers whole join the run */
  last = nd - 1;
  m = ext[last];
  while (last > 0 && r->dims[last].mode == CATERVA_RED_REDUCE &&
         r->dims[last - 1].mode == CATERVA_RED_REDUCE && ext[last] == blk->blockshape[last]) {
    last--;
    m *= ext[last];
  }
  mode = r->dims[last].mode == CATERVA_RED_REDUCE ? RED_ONE
         : r->dims[last].mode == CATERVA_RED_KEEP  ? RED_IDENT
                                                   : RED_LIDX;
  for (int k = 0; k < nd; k++) boff += (blk->start[k] - blk->origin[k]) * bstr[k];
  for (;;) {
    const uint8_t *q = blk->data + (size_t)boff * (size_t)r->itemsize;
    int k;
    loff = 0;
    for (k = 0; k < last; k++)
      if (r->dims[k].mode != CATERVA_RED_REDUCE) loff += sl->lidx[k][cnt[k]] * lstr[k];
    if (r->soa) srun(&soa, loff, sl->lidx[last], q, m, mode);
    else run(sl->part + loff, sl->lidx[last], q, m, mode, r->std);
    if (!box_step(cnt, ext, bstr, 0, last, &boff)) break;
  }
}

/* caterva_block_visit_fn */
static int red_visit(void *arg, const caterva_block *blk, int64_t seq, int worker) {
  caterva_reduce *r = arg;
  (void)worker;
  slot_fill(r, &r->slots[seq - r->seq0], blk);
  return CATERVA_OK;
}

/* ---- merging parts into rows (the caller's thread, in order) --------------------------- */

static double row_sum(const red_row *w, int stype) {
  return stype == CATERVA_STATS_FLOAT || w->over ? w->s + w->c : (double)w->isum;
}

static double part_sum(const red_part *p, int stype) {
  return stype == CATERVA_STATS_FLOAT || p->over ? p->sum : (double)p->isum;
}

/* Neumaier's compensated addition of v to s + c. The rounding error of s + v is found with
** Knuth's TwoSum, which needs no comparison of magnitudes (no branch to mispredict) and gives
** the same, exact, error as Neumaier's ordered form. */
static inline void neumaier(double *s, double *c, double v) {
  double t = *s + v, z = t - *s;
  *c += (*s - (t - z)) + (v - z);
  *s = t;
}

static inline void row_merge(const caterva_reduce *r, red_row *w, const red_part *p) {
  if (p->n == 0) return;
  if (!r->std && r->stype == CATERVA_STATS_FLOAT) { /* the common case, short */
    if (r->minmax) {
      double mn = w->n == 0 ? INFINITY : w->mn.f, mx = w->n == 0 ? -INFINITY : w->mx.f;
      w->mn.f = p->mn.f < mn ? p->mn.f : mn;
      w->mx.f = p->mx.f > mx ? p->mx.f : mx;
    }
    neumaier(&w->s, &w->c, p->sum);
    w->n += p->n;
    return;
  }
  if (r->std) {
    double m2 = p->s2 - p->s1 * p->s1 / (double)p->n;
    if (m2 < 0) m2 = 0;
    if (w->n > 0) {
      double d = part_sum(p, r->stype) / (double)p->n - row_sum(w, r->stype) / (double)w->n;
      m2 += d * d * ((double)w->n * (double)p->n / (double)(w->n + p->n));
    }
    w->m2 += m2;
  }
  if (r->stype == CATERVA_STATS_FLOAT) {
    if (w->n == 0 || p->mn.f < w->mn.f) w->mn.f = p->mn.f;
    if (w->n == 0 || p->mx.f > w->mx.f) w->mx.f = p->mx.f;
    neumaier(&w->s, &w->c, p->sum);
  } else {
    if (r->stype == CATERVA_STATS_INT) {
      if (w->n == 0 || p->mn.i < w->mn.i) w->mn.i = p->mn.i;
      if (w->n == 0 || p->mx.i > w->mx.i) w->mx.i = p->mx.i;
    } else {
      if (w->n == 0 || p->mn.u < w->mn.u) w->mn.u = p->mn.u;
      if (w->n == 0 || p->mx.u > w->mx.u) w->mx.u = p->mx.u;
    }
    int64_t t;
    if (!w->over && !p->over && !__builtin_add_overflow(w->isum, p->isum, &t)) {
      w->isum = t; /* exact */
    } else {
      if (!w->over) { /* the row's sum moves to double */
        w->over = 1;
        w->s = (double)w->isum;
        w->c = 0;
      }
      neumaier(&w->s, &w->c, part_sum(p, r->stype));
    }
  }
  w->n += p->n;
}

/* Merge the queued statistics blocks of chunks up to nchunk (all: INT64_MAX) whose rows lie
** in [rlo, rhi), from entry *head on. */
static void queue_merge(caterva_reduce *r, int64_t *head, int64_t nchunk, int64_t rlo,
                        int64_t rhi) {
  while (*head < r->nqueue && r->queue[*head].nchunk <= nchunk) {
    const red_queued *q = &r->queue[(*head)++];
    if (q->row >= rlo && q->row < rhi) row_merge(r, &r->rows[q->row], &q->part);
  }
}

/* Merge slot sl's parts whose rows lie in [rlo, rhi) into them. */
/* Part i of slot sl (copied out of the four arrays when the slot has them). */
static inline const red_part *slot_part(const caterva_reduce *r, const red_slot *sl,
                                        const red_soa *a, int64_t i, red_part *tmp) {
  if (!r->soa) return &sl->part[i];
  tmp->n = (int64_t)a->n[i];
  tmp->sum = a->s[i];
  tmp->mn.f = a->mn[i];
  tmp->mx.f = a->mx[i];
  return tmp;
}

/* slot_merge for floats without deviations (the four arrays): row_merge's short case,
** inline, along runs of the last dimension. */
static void slot_merge_soa(caterva_reduce *r, const red_slot *sl, int64_t rlo, int64_t rhi) {
  const int nd = r->nd, last = nd - 1;
  const red_soa a = slot_soa(r, sl);
  const int64_t nl = sl->nloc[last];
  const int64_t sl_last = r->dims[last].mode == CATERVA_RED_REDUCE ? 0 : r->stride[last];
  int32_t cnt[CATERVA_MAX_DIM] = {0};
  for (int64_t i = 0; i < sl->nparts; i += nl) {
    int64_t row0 = 0;
    int k;
    for (k = 0; k < last; k++)
      if (r->dims[k].mode != CATERVA_RED_REDUCE) row0 += sl->glob[k][cnt[k]] * r->stride[k];
    for (int64_t c = 0; c < nl; c++) {
      int64_t row = row0 + (sl_last ? sl->glob[last][c] * sl_last : 0);
      red_row *w;
      if (a.n[i + c] == 0 || row < rlo || row >= rhi) continue;
      w = &r->rows[row];
      if (r->minmax) {
        double mn = w->n == 0 ? INFINITY : w->mn.f, mx = w->n == 0 ? -INFINITY : w->mx.f;
        w->mn.f = a.mn[i + c] < mn ? a.mn[i + c] : mn;
        w->mx.f = a.mx[i + c] > mx ? a.mx[i + c] : mx;
      }
      neumaier(&w->s, &w->c, a.s[i + c]);
      w->n += (int64_t)a.n[i + c];
    }
    for (k = last - 1; k >= 0; k--) {
      if (++cnt[k] < sl->nloc[k]) break;
      cnt[k] = 0;
    }
  }
}

static void slot_merge(caterva_reduce *r, const red_slot *sl, int64_t rlo, int64_t rhi) {
  int32_t cnt[CATERVA_MAX_DIM];
  const int nd = r->nd;
  red_soa soa = slot_soa(r, sl);
  red_part tmp;
  if (nd > 0 && r->soa) {
    slot_merge_soa(r, sl, rlo, rhi);
    return;
  }
  if (nd == 0) {
    if (rlo == 0) row_merge(r, r->rows, slot_part(r, sl, &soa, 0, &tmp));
    return;
  }
  memset(cnt, 0, sizeof cnt);
  for (int64_t i = 0; i < sl->nparts; i++) {
    int64_t row = 0;
    int k;
    for (k = 0; k < nd; k++)
      if (r->dims[k].mode != CATERVA_RED_REDUCE) row += sl->glob[k][cnt[k]] * r->stride[k];
    if (row >= rlo && row < rhi) row_merge(r, &r->rows[row], slot_part(r, sl, &soa, i, &tmp));
    for (k = nd - 1; k >= 0; k--) {
      if (++cnt[k] < sl->nloc[k]) break;
      cnt[k] = 0;
    }
  }
}

/* The merge of a batch: slots [0, nslot) and the queue, on ntask tasks (rows split evenly). */
typedef struct red_merge {
  caterva_reduce *r;
  int32_t nslot;
  int ntask;
} red_merge;

/* cat_task_fn: task t merges, in sequence order, the parts of rows of its share. Every row
** is merged by one task in the same order as with one task: the results do not depend on
** the number of tasks. */
static int merge_task(void *arg, int64_t t, int w) {
  const red_merge *m = arg;
  caterva_reduce *r = m->r;
  int64_t rlo = r->nrows * t / m->ntask, rhi = r->nrows * (t + 1) / m->ntask;
  int64_t head = r->headqueue;
  (void)w;
  for (int32_t i = 0; i < m->nslot; i++) {
    queue_merge(r, &head, r->slots[i].nchunk, rlo, rhi);
    slot_merge(r, &r->slots[i], rlo, rhi);
  }
  queue_merge(r, &head, INT64_MAX, rlo, rhi);
  return CATERVA_OK;
}

/* Merge the first nslot slots and the queue into the rows, on the context's threads when
** there is enough to share. */
static void merge_batch(caterva_reduce *r, int32_t nslot) {
  red_merge m = {r, nslot, 1};
  int64_t nparts = r->nqueue - r->headqueue;
  for (int32_t i = 0; i < nslot; i++) nparts += r->slots[i].nparts;
  if (r->ctx != NULL && r->ctx->pool != NULL && nparts >= 8192 && r->nrows >= 64)
    m.ntask = r->ctx->nthreads;
  if (m.ntask > 1) (void)cat_pool_run(r->ctx->pool, m.ntask, merge_task, &m);
  else (void)merge_task(&m, 0, 0);
  r->headqueue = r->nqueue = 0;
}

/* caterva_block_done_fn */
static int red_done(void *arg, int64_t lo, int64_t hi) {
  caterva_reduce *r = arg;
  merge_batch(r, (int32_t)(hi - lo));
  r->seq0 = hi;
  return CATERVA_OK;
}

/* ---- blocks answered by their statistics ----------------------------------------------- */

static int64_t region_of(const caterva_reduce *r, const int64_t *origin);
static void queue_link(caterva_reduce *r, int64_t reg, int64_t i);
static int slots_alloc(caterva_ctx *ctx, const caterva_reduce *r, int32_t n, red_slot **slots,
                       red_part **pb, int32_t **ib);

/* The iterator's filter: queue a block that its statistics answer (0), else keep it (1).
** That needs the block wholly inside the sub-box and one output row: one index along
** every kept dimension, one group along every grouped one. */
static int red_keep(void *arg, int64_t nchunk, int32_t nblock) {
  caterva_reduce *r = arg;
  const cat_geom *g = &r->a->g;
  int64_t lo[CATERVA_MAX_DIM], hi[CATERVA_MAX_DIM], n = nchunk, row = 0;
  int32_t b = nblock;
  caterva_block_stats st;
  red_queued *q;
  int rc;
  for (int k = g->ndim - 1; k >= 0; k--) {
    int64_t cc = n % g->gridshape[k], bc = b % g->blockgrid[k];
    const caterva_reduce_dim *d = &r->dims[k];
    n /= g->gridshape[k];
    b /= g->blockgrid[k];
    lo[k] = cc * g->chunkshape[k] + bc * g->blockshape[k];
    hi[k] = lo[k] + g->blockshape[k] - 1;
    if (hi[k] > cc * g->chunkshape[k] + g->chunkshape[k] - 1)
      hi[k] = cc * g->chunkshape[k] + g->chunkshape[k] - 1;
    if (hi[k] > g->shape[k] - 1) hi[k] = g->shape[k] - 1;
    if (lo[k] < r->sublo[k] || hi[k] > r->subhi[k]) return 1;
    if (d->mode == CATERVA_RED_KEEP) {
      if (lo[k] != hi[k]) return 1;
      row += (lo[k] - d->lo) * r->stride[k];
    } else if (d->mode == CATERVA_RED_GROUP) {
      int32_t g0 = d->gid[lo[k] - d->lo];
      for (int64_t j = lo[k] + 1; j <= hi[k]; j++)
        if (d->gid[j - d->lo] != g0) return 1;
      row += g0 * r->stride[k];
    }
  }
  rc = caterva_array_block_stats(r->ctx, r->a, nchunk, nblock, &st);
  if (rc <= 0) return rc < 0 ? rc : 1;
  if (st.sum_overflow) return 1;
  if (r->nqueue == r->capqueue) {
    int64_t cap = r->capqueue ? 2 * r->capqueue : 256;
    red_queued *p = realloc(r->queue, (size_t)cap * sizeof *p);
    if (p == NULL) return cat_error(r->ctx, CATERVA_E_NOMEM, "out of memory");
    r->queue = p;
    r->capqueue = cap;
  }
  q = &r->queue[r->nqueue];
  q->nchunk = nchunk;
  q->row = row;
  q->next = -1;
  q->region = r->own ? region_of(r, lo) : 0;
  if (r->own) queue_link(r, q->region, r->nqueue);
  r->nqueue++;
  cat_red_part_init(r, &q->part);
  q->part.n = st.nvalid;
  q->part.mn = st.min;
  q->part.mx = st.max;
  if (r->stype == CATERVA_STATS_FLOAT) q->part.sum = st.sum.f;
  else if (r->stype == CATERVA_STATS_INT) q->part.isum = st.sum.i;
  else usum_add(&q->part.isum, &q->part.over, &q->part.sum, st.sum.u);
  r->from_stats++;
  return 0;
}

/* The filter's look-ahead: the statistics of the chunks it will ask about, checked together. */
static int red_ahead(void *arg, const int64_t *nchunk, int n) {
  caterva_reduce *r = arg;
  return caterva_array_block_stats_ahead(r->ctx, r->a, nchunk, n);
}

/* ---- owned folding ------------------------------------------------------------------------ */

/*
 * red_own. With enough regions for the threads (or one thread), caterva_reduce_add folds a
 * block and merges its parts into the rows at once, on the worker that decoded it: the
 * iterator hands the blocks of one region (caterva_block_iter_set_owner) to one worker at a
 * time, in sequence order, and regions touch disjoint rows. Each row still receives its
 * parts in the fixed order of the merged path -- per chunk, its statistics blocks (queued
 * per region), then its decoded blocks in C order -- with the same arithmetic, so both paths
 * give bit-identical results, for any number of threads; only the slots stay in the cache
 * and no batch waits for a merge.
 */

/* The global block column of index x along dimension k (blocks restart at every chunk). */
static int64_t block_col(const cat_geom *g, int k, int64_t x) {
  return x / g->chunkshape[k] * g->blockgrid[k] + x % g->chunkshape[k] / g->blockshape[k];
}

/* The region of the block whose first item is at origin. */
static int64_t region_of(const caterva_reduce *r, const int64_t *origin) {
  int64_t reg = 0;
  for (int k = 0; k < r->nd; k++)
    if (r->rstride[k] > 0)
      reg += (block_col(&r->a->g, k, origin[k]) - r->rfirst[k]) * r->rstride[k];
  return reg;
}

/* The regions of the box: its block columns along every kept dimension. */
static void regions_init(caterva_reduce *r) {
  r->nregions = 1;
  for (int k = r->nd - 1; k >= 0; k--) {
    const caterva_reduce_dim *d = &r->dims[k];
    r->rstride[k] = 0;
    if (d->mode != CATERVA_RED_KEEP) continue;
    r->rfirst[k] = block_col(&r->a->g, k, d->lo);
    r->rstride[k] = r->nregions;
    /* at most one region per kept index: no more than the rows */
    r->nregions *= block_col(&r->a->g, k, d->hi) - r->rfirst[k] + 1;
  }
}

/* cat_block_iter owner: the region. */
static int64_t red_owner(void *arg, const caterva_block *blk) {
  return region_of(arg, blk->origin);
}

/* Append queue entry i to region reg's list (the caller's thread, between batches). */
static void queue_link(caterva_reduce *r, int64_t reg, int64_t i) {
  if (r->qhead[reg] < 0) r->qhead[reg] = i; /* empty, or every entry merged */
  else r->queue[r->qtail[reg]].next = i;
  r->qtail[reg] = i;
}

/* Merge region reg's queued statistics blocks of chunks up to nchunk. */
static void queue_merge_region(caterva_reduce *r, int64_t reg, int64_t nchunk) {
  int64_t i = r->qhead[reg];
  while (i >= 0 && r->queue[i].nchunk <= nchunk) {
    row_merge(r, &r->rows[r->queue[i].row], &r->queue[i].part);
    i = r->queue[i].next;
  }
  r->qhead[reg] = i;
}

/* caterva_block_visit_fn, owned: worker's slot, merged at once into the region's rows. */
static int red_visit_own(void *arg, const caterva_block *blk, int64_t seq, int worker) {
  caterva_reduce *r = arg;
  red_slot *sl = &r->wslots[worker];
  (void)seq;
  queue_merge_region(r, region_of(r, blk->origin), blk->nchunk);
  slot_fill(r, sl, blk);
  slot_merge(r, sl, 0, r->nrows);
  return CATERVA_OK;
}

/* Ready the owned path for nthreads workers: their slots and the regions' queue lists. */
static int own_prepare(caterva_ctx *ctx, caterva_reduce *r, int nthreads) {
  int rc = CATERVA_OK;
  if (r->qhead == NULL) {
    r->qhead = malloc((size_t)r->nregions * sizeof *r->qhead);
    r->qtail = malloc((size_t)r->nregions * sizeof *r->qtail);
    CAT_CHECK(leave, r->qhead != NULL && r->qtail != NULL, CATERVA_E_NOMEM, "out of memory");
  }
  for (int64_t i = 0; i < r->nregions; i++) r->qhead[i] = r->qtail[i] = -1;
  if (r->nwslots < nthreads) {
    free(r->wslots);
    free(r->wpartbuf);
    free(r->widxbuf);
    r->nwslots = 0;
    CAT_TRY(leave, slots_alloc(ctx, r, nthreads, &r->wslots, &r->wpartbuf, &r->widxbuf));
    r->nwslots = nthreads;
  }
leave:
  return rc;
}

/* Whether caterva_reduce_add folds owned: forced by a flag, else with one thread or regions
** enough to share among the threads. */
static int own_wanted(const caterva_reduce *r, int nthreads) {
  if (r->flags & CATERVA_REDUCE_MERGED) return 0;
  if (r->flags & CATERVA_REDUCE_OWNED) return 1;
  return nthreads == 1 || r->nregions >= 4 * (int64_t)nthreads;
}

/* ---- the API ------------------------------------------------------------------------------- */

/* Rows this many bytes or more are mapped anonymously, with transparent huge pages asked for
** (Linux): a monthly climatology's 50 MB of rows then costs a few faults of 2 MiB instead of
** 12,000 of 4 KiB, each zeroing its page -- about a fifth of its time. */
#define RED_ROWS_MAP_BYTES ((size_t)8 << 20)

/* n zeroed rows (NULL when memory cannot be had); *mapped says how to free them. */
static red_row *rows_alloc(int64_t n, int *mapped) {
  size_t bytes = (size_t)n * sizeof(red_row);
  *mapped = 0;
#if defined(__linux__) && defined(MAP_ANONYMOUS) && defined(MADV_HUGEPAGE)
  if (bytes >= RED_ROWS_MAP_BYTES) {
    void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) {
      (void)madvise(p, bytes, MADV_HUGEPAGE); /* a hint: refused, the pages are small */
      *mapped = 1;
      return p;
    }
  }
#endif
  return calloc((size_t)n, sizeof(red_row));
}

static void rows_free(red_row *rows, int64_t n, int mapped) {
#if defined(__linux__) && defined(MAP_ANONYMOUS) && defined(MADV_HUGEPAGE)
  if (mapped) {
    munmap(rows, (size_t)n * sizeof(red_row));
    return;
  }
#endif
  (void)n, (void)mapped;
  free(rows);
}

/* The most blocks the box can have, capped at cap (batches never need more slots). */
static int64_t box_blocks(const caterva_reduce *r, int64_t cap) {
  const cat_geom *g = &r->a->g;
  int64_t n = 1;
  for (int k = 0; k < r->nd && n < cap; k++) {
    int64_t lo = r->dims[k].lo, hi = r->dims[k].hi, bs = g->blockshape[k];
    int64_t cs = g->chunkshape[k];
    /* blocks restart at every chunk: one more per chunk boundary crossed */
    n *= (hi - lo + bs) / bs + hi / cs - lo / cs + 1;
  }
  return n < cap ? n : cap;
}

/* The index entries a slot needs (its parts: r->maxparts). */
static int64_t slot_nidx(const caterva_reduce *r) {
  int64_t nidx = 0;
  for (int k = 0; k < r->nd; k++)
    if (r->dims[k].mode != CATERVA_RED_REDUCE) nidx += 2 * (int64_t)r->a->g.blockshape[k];
  return nidx > 0 ? nidx : 1;
}

/* n slots, each with room for the most parts a block can have and its index lists, in three
** allocations (*slots, *pb, *ib: the caller frees them, also after an error). */
static int slots_alloc(caterva_ctx *ctx, const caterva_reduce *r, int32_t n, red_slot **slots,
                       red_part **pb, int32_t **ib) {
  int rc = CATERVA_OK;
  const cat_geom *g = &r->a->g;
  int64_t nidx = slot_nidx(r);
  *slots = calloc((size_t)n, sizeof **slots);
  *pb = malloc((size_t)n * (size_t)r->maxparts * sizeof **pb);
  *ib = malloc((size_t)n * (size_t)nidx * sizeof **ib);
  CAT_CHECK(leave, *slots != NULL && *pb != NULL && *ib != NULL, CATERVA_E_NOMEM,
            "out of memory");
  for (int32_t i = 0; i < n; i++) {
    red_slot *sl = &(*slots)[i];
    int32_t *idx = *ib + (size_t)i * (size_t)nidx;
    sl->part = *pb + (size_t)i * (size_t)r->maxparts;
    for (int k = 0; k < r->nd; k++) {
      if (r->dims[k].mode == CATERVA_RED_REDUCE) continue;
      sl->glob[k] = idx;
      sl->lidx[k] = idx + g->blockshape[k];
      idx += 2 * (int64_t)g->blockshape[k];
    }
    sl->nparts = 0;
  }
leave:
  return rc;
}

/* The most parts a block can have. */
static void slots_size(caterva_reduce *r) {
  const cat_geom *g = &r->a->g;
  int64_t nparts = 1;
  for (int k = 0; k < r->nd; k++) {
    int64_t e = g->blockshape[k];
    if (r->dims[k].mode == CATERVA_RED_REDUCE) continue;
    if (e > r->dims[k].hi - r->dims[k].lo + 1) e = r->dims[k].hi - r->dims[k].lo + 1;
    nparts *= e;
  }
  r->maxparts = nparts;
}

/* Slots for the blocks of a batch of the merged path, made when it first runs (a small box
** gets few; the owned path needs none: megabytes not mapped and unmapped for nothing). */
static int slots_new(caterva_ctx *ctx, caterva_reduce *r) {
  int64_t per;
  if (r->slots != NULL && r->partbuf != NULL && r->idxbuf != NULL) return CATERVA_OK;
  free(r->slots); /* what a failed attempt left */
  free(r->partbuf);
  free(r->idxbuf);
  r->slots = NULL;
  r->partbuf = NULL;
  r->idxbuf = NULL;
  per = r->maxparts * (int64_t)sizeof(red_part) + slot_nidx(r) * (int64_t)sizeof(int32_t);
  r->nslots = (int32_t)(RED_SLOT_BUDGET / per);
  if (r->nslots < 1) r->nslots = 1;
  r->nslots = (int32_t)box_blocks(r, r->nslots < 8192 ? r->nslots : 8192);
  return slots_alloc(ctx, r, r->nslots, &r->slots, &r->partbuf, &r->idxbuf);
}

/* Check dims and take them (group maps copied); the output rows' strides. */
static int take_dims(caterva_ctx *ctx, caterva_reduce *r, const caterva_reduce_dim *dims) {
  int rc = CATERVA_OK;
  const int64_t *shape = caterva_array_shape(r->a);
  r->nrows = 1;
  for (int k = r->nd - 1; k >= 0; k--) {
    const caterva_reduce_dim *d = &dims[k];
    int64_t n = d->hi - d->lo + 1;
    CAT_CHECK(leave, d->lo >= 0 && d->lo <= d->hi && d->hi < shape[k], CATERVA_E_INVALID,
              "reduce: dimension %d: box %lld..%lld outside 0..%lld", k, (long long)d->lo,
              (long long)d->hi, (long long)shape[k] - 1);
    CAT_CHECK(leave, d->mode >= CATERVA_RED_REDUCE && d->mode <= CATERVA_RED_GROUP,
              CATERVA_E_INVALID, "reduce: dimension %d: mode %d", k, d->mode);
    r->dims[k] = *d;
    r->dims[k].gid = NULL;
    if (d->mode == CATERVA_RED_GROUP) {
      CAT_CHECK(leave, d->gid != NULL && d->ngroups >= 1, CATERVA_E_INVALID,
                "reduce: dimension %d: no groups", k);
      r->gids[k] = malloc((size_t)n * sizeof(int32_t));
      CAT_CHECK(leave, r->gids[k] != NULL, CATERVA_E_NOMEM, "out of memory");
      for (int64_t j = 0; j < n; j++)
        CAT_CHECK(leave, d->gid[j] >= 0 && d->gid[j] < d->ngroups, CATERVA_E_INVALID,
                  "reduce: dimension %d: group %d of index %lld outside 0..%d", k,
                  (int)d->gid[j], (long long)(d->lo + j), (int)d->ngroups - 1);
      memcpy(r->gids[k], d->gid, (size_t)n * sizeof(int32_t));
      r->dims[k].gid = r->gids[k];
    }
    r->ext[k] = d->mode == CATERVA_RED_KEEP ? n : d->mode == CATERVA_RED_GROUP ? d->ngroups : 1;
    r->stride[k] = r->nrows;
    CAT_CHECK(leave, cat_mul64(r->nrows, r->ext[k], &r->nrows) &&
                         r->nrows <= RED_ROWS_MAX_BYTES / (int64_t)sizeof(red_row),
              CATERVA_E_RANGE, "reduce: too many output rows (more than %lld)",
              (long long)(RED_ROWS_MAX_BYTES / (int64_t)sizeof(red_row)));
  }
leave:
  return rc;
}

int caterva_reduce_new(caterva_ctx *ctx, caterva_array *a, const caterva_reduce_dim *dims,
                       int flags, caterva_reduce **out) {
  int rc = CATERVA_OK;
  caterva_reduce *r = NULL;
  caterva_dtype_info info;
  *out = NULL;
  CAT_CHECK(leave, a != NULL && (dims != NULL || caterva_array_ndim(a) == 0),
            CATERVA_E_INVALID, "reduce: no array or no dimensions");
  r = calloc(1, sizeof *r);
  CAT_CHECK(leave, r != NULL, CATERVA_E_NOMEM, "out of memory");
  r->a = a;
  r->nd = caterva_array_ndim(a);
  r->flags = flags;
  r->std = (flags & CATERVA_REDUCE_STD) != 0;
  r->stype = caterva_array_stats_type(a);
  r->itemsize = caterva_array_itemsize(a);
  CAT_CHECK(leave, r->stype != CATERVA_STATS_NONE &&
                       caterva_dtype_parse(caterva_array_dtype(a), &info) == CATERVA_OK,
            CATERVA_E_UNSUPPORTED, "reduce: items of dtype %s are not numbers",
            caterva_array_dtype(a) ? caterva_array_dtype(a) : "(none)");
  r->kind = info.kind;
  r->soa = r->stype == CATERVA_STATS_FLOAT && !r->std;
  CAT_CHECK(leave, cat_red_run_fn(r) != NULL, CATERVA_E_UNSUPPORTED,
            "reduce: items of dtype %s are not numbers", caterva_array_dtype(a));
  CAT_TRY(leave, take_dims(ctx, r, dims));
  r->rows = rows_alloc(r->nrows, &r->rows_mapped);
  CAT_CHECK(leave, r->rows != NULL, CATERVA_E_NOMEM, "out of memory");
  slots_size(r);
  regions_init(r);
  r->cols = cat_red_cols_ok(r) && !(flags & CATERVA_REDUCE_NOCOLS);
  r->minmax = !(flags & CATERVA_REDUCE_NOMINMAX);
leave:
  if (rc < 0) caterva_reduce_free(r);
  else *out = r;
  return rc;
}

int caterva_reduce_add(caterva_ctx *ctx, caterva_reduce *r, const int64_t *lo,
                       const int64_t *hi) {
  int rc = CATERVA_OK;
  caterva_block_iter *it = NULL;
  int64_t start[CATERVA_MAX_DIM], stop[CATERVA_MAX_DIM];
  int nthreads;
  for (int k = 0; k < r->nd; k++) {
    CAT_CHECK(leave, lo[k] >= r->dims[k].lo && hi[k] <= r->dims[k].hi && lo[k] <= hi[k],
              CATERVA_E_INVALID, "reduce: a sub-box outside the box");
    r->sublo[k] = start[k] = lo[k];
    r->subhi[k] = hi[k];
    stop[k] = hi[k] + 1;
  }
  nthreads = ctx != NULL ? ctx->nthreads : 1;
  r->own = own_wanted(r, nthreads);
  if (r->own) CAT_TRY(leave, own_prepare(ctx, r, nthreads));
  else CAT_TRY(leave, slots_new(ctx, r));
  CAT_TRY(leave, caterva_block_iter_new(ctx, r->a, start, stop, 0, &it));
  if (r->nd > 0 && !r->std && !(r->flags & CATERVA_REDUCE_NOSTATS) &&
      caterva_array_has_stats(r->a)) {
    caterva_block_iter_set_filter(it, red_keep, r);
    caterva_block_iter_set_filter_ahead(it, red_ahead);
  }
  r->seq0 = 0;
  r->ctx = ctx;
  r->headqueue = r->nqueue = 0;
  if (r->own) {
    caterva_block_iter_set_owner(it, red_owner, r);
    rc = caterva_block_iter_visit(it, 0, red_visit_own, NULL, r);
    for (int64_t reg = 0; rc >= 0 && reg < r->nregions; reg++) /* those after the last block */
      queue_merge_region(r, reg, INT64_MAX);
    r->nqueue = 0;
  } else {
    rc = caterva_block_iter_visit(it, r->nslots, red_visit, red_done, r);
    if (rc >= 0) merge_batch(r, 0); /* statistics blocks after the last decoded one */
  }
leave:
  caterva_block_iter_free(it);
  return rc;
}

int64_t caterva_reduce_nrows(const caterva_reduce *r) { return r ? r->nrows : 0; }

int64_t caterva_reduce_coord(const caterva_reduce *r, int64_t row, int dim) {
  const caterva_reduce_dim *d = &r->dims[dim];
  int64_t c = row / r->stride[dim] % r->ext[dim];
  if (d->mode == CATERVA_RED_REDUCE) return -1;
  return d->mode == CATERVA_RED_KEEP ? d->lo + c : c;
}

void caterva_reduce_get(const caterva_reduce *r, int64_t row, caterva_reduce_row *out) {
  const red_row *w = &r->rows[row];
  memset(out, 0, sizeof *out);
  out->n = w->n;
  out->float_sum = r->stype == CATERVA_STATS_FLOAT || w->over;
  out->fsum = out->float_sum ? w->s + w->c : (double)w->isum;
  out->isum = w->isum;
  out->min = w->mn;
  out->max = w->mx;
  out->mean = w->n > 0 ? row_sum(w, r->stype) / (double)w->n : NAN;
  out->std = w->n > 0 && r->std ? sqrt(w->m2 / (double)w->n) : NAN;
}

int64_t caterva_reduce_stats_blocks(const caterva_reduce *r) { return r ? r->from_stats : 0; }

void caterva_reduce_free(caterva_reduce *r) {
  if (r == NULL) return;
  free(r->partbuf);
  free(r->idxbuf);
  for (int k = 0; k < CATERVA_MAX_DIM; k++) free(r->gids[k]);
  free(r->slots);
  free(r->queue);
  rows_free(r->rows, r->nrows, r->rows_mapped);
  free(r->qhead);
  free(r->qtail);
  free(r->wslots);
  free(r->wpartbuf);
  free(r->widxbuf);
  free(r);
}
