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
#include "array_internal.h"

#include "caterva_reduce.h"

#include <math.h>
#include <stdlib.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#define RED_SLOT_BUDGET ((int64_t)4 << 20) /* bytes of slots: bounds a batch's blocks */
#define RED_ROWS_MAX_BYTES ((int64_t)1 << 31)

/* A row's part of one block (or of one block's statistics). */
typedef struct red_part {
  int64_t n;
  double sum;           /* float items, or an integer sum past int64 (over) */
  caterva_scalar mn, mx;
  /* the fields above are all that floats without deviations use */
  int64_t isum;
  int over;
  double k, s1, s2;     /* STD: the shift (first value), sum of x - k, sum of (x - k)^2 */
} red_part;

/* An output row. */
typedef struct red_row {
  int64_t n;
  double s, c;          /* the float sum s + c (Neumaier), or an integer sum past int64 */
  double m2;            /* STD: sum of squared deviations from the mean */
  int64_t isum;
  int over;
  caterva_scalar mn, mx;
} red_row;

/* One block's parts. */
typedef struct red_slot {
  int64_t nchunk;
  int64_t nparts;               /* product of nloc */
  int32_t nloc[CATERVA_MAX_DIM];/* distinct local coordinates along each dimension */
  int32_t *glob[CATERVA_MAX_DIM]; /* local coordinate -> output coordinate */
  int32_t *lidx[CATERVA_MAX_DIM]; /* index - start -> local coordinate */
  red_part *part;
} red_slot;

/* A block answered by its statistics, waiting for its turn. */
typedef struct red_queued {
  int64_t nchunk, row;
  int64_t region, next;           /* owned folding: its owner, the owner's next entry or -1 */
  red_part part;
} red_queued;

struct caterva_reduce {
  caterva_ctx *ctx;               /* of the caterva_reduce_add running */
  caterva_array *a;
  int nd, flags, std, stype, kind, itemsize;
  caterva_reduce_dim dims[CATERVA_MAX_DIM];
  int32_t *gids[CATERVA_MAX_DIM]; /* owned copies of the group maps */
  int64_t ext[CATERVA_MAX_DIM];   /* output coordinates along each dimension */
  int64_t stride[CATERVA_MAX_DIM];/* of the output rows, C order */
  int64_t nrows;
  red_row *rows;
  int64_t sublo[CATERVA_MAX_DIM], subhi[CATERVA_MAX_DIM]; /* the sub-box being added */
  red_slot *slots;
  int32_t nslots;
  red_part *partbuf;              /* every slot's parts */
  int64_t maxparts;               /* parts a slot has room for */
  int soa;                        /* floats without deviations: parts as four arrays */
  int32_t *idxbuf;                /* every slot's index lists */
  int64_t seq0;                   /* sequence number of slots[0] in the current batch */
  red_queued *queue;
  int64_t nqueue, capqueue, headqueue;
  int64_t from_stats;
  /* owned folding (caterva_reduce_add, see red_own): a region is the blocks sharing their
     span along every kept dimension; each worker folds and merges the blocks of the regions
     it is handed, so no two touch a row at once */
  int rows_mapped;                /* rows come from mmap (rows_alloc) */
  int cols;                       /* blocks folded as columns (cols_ok) */
  int minmax;                     /* minima and maxima kept up (not CATERVA_REDUCE_NOMINMAX) */
  int own;
  int64_t rfirst[CATERVA_MAX_DIM];/* kept dimensions: global block column of the box's first */
  int64_t rstride[CATERVA_MAX_DIM];/* of the regions, C order (0: not kept) */
  int64_t nregions;
  int64_t *qhead, *qtail;         /* per region: its next queued entry to merge, its last */
  red_slot *wslots;               /* one per worker */
  red_part *wpartbuf;
  int32_t *widxbuf;
  int32_t nwslots;
};

/* ---- folding values into parts ---------------------------------------------------------- */

static void part_init(const caterva_reduce *r, red_part *p) {
  p->n = 0;
  p->sum = 0;
  if (r->stype == CATERVA_STATS_FLOAT) {
    p->mn.f = INFINITY;
    p->mx.f = -INFINITY;
    if (r->std) p->k = p->s1 = p->s2 = 0;
    return;
  }
  p->isum = 0;
  p->over = 0;
  p->k = p->s1 = p->s2 = 0;
  if (0) {
  } else if (r->stype == CATERVA_STATS_INT) {
    p->mn.i = INT64_MAX;
    p->mx.i = INT64_MIN;
  } else {
    p->mn.u = UINT64_MAX;
    p->mx.u = 0;
  }
}

static inline __attribute__((always_inline)) void part_f(red_part *p, double v, int std) {
  if (std) {
    double d;
    if (p->n == 0) p->k = v;
    d = v - p->k;
    p->s1 += d;
    p->s2 += d * d;
  }
  p->n++;
  p->sum += v;
  if (v < p->mn.f) p->mn.f = v;
  if (v > p->mx.f) p->mx.f = v;
}

/* Add v to an integer sum; past int64 it continues in double. */
static inline void isum_add(int64_t *is, int *over, double *fs, int64_t v) {
  int64_t t;
  if (*over) {
    *fs += (double)v;
  } else if (__builtin_add_overflow(*is, v, &t)) {
    *over = 1;
    *fs = (double)*is + (double)v;
  } else {
    *is = t;
  }
}

static inline void usum_add(int64_t *is, int *over, double *fs, uint64_t v) {
  if (!*over && v <= (uint64_t)INT64_MAX && *is <= INT64_MAX - (int64_t)v) {
    *is += (int64_t)v;
    return;
  }
  if (!*over) {
    *over = 1;
    *fs = (double)*is;
  }
  *fs += (double)v;
}

static inline void part_shift(red_part *p, double v, int std) {
  if (std) {
    double d;
    if (p->n == 0) p->k = v;
    d = v - p->k;
    p->s1 += d;
    p->s2 += d * d;
  }
}

static inline void part_i(red_part *p, int64_t v, int std) {
  part_shift(p, (double)v, std);
  p->n++;
  isum_add(&p->isum, &p->over, &p->sum, v);
  if (v < p->mn.i) p->mn.i = v;
  if (v > p->mx.i) p->mx.i = v;
}

static inline void part_u(red_part *p, uint64_t v, int std) {
  part_shift(p, (double)v, std);
  p->n++;
  usum_add(&p->isum, &p->over, &p->sum, v);
  if (v < p->mn.u) p->mn.u = v;
  if (v > p->mx.u) p->mx.u = v;
}

/* How a run of items finds its parts: all in part[0], item j in part[j], or in part[lidx[j]]. */
#define RED_ONE   0
#define RED_IDENT 1
#define RED_LIDX  2

/* Fold m items at q into their parts (mode RED_*). Floats: the common cases -- a run into
** one part without deviations, and std or not as a constant -- get loops of their own. */
#define RED_RUN_F(NAME, T, CONV, PRESENT)                                                  \
  static void NAME##_loop(red_part *part, const int32_t *lidx, const uint8_t *q, int64_t m, \
                          int mode, const int std) {                                      \
    for (int64_t j = 0; j < m; j++) {                                                     \
      T t;                                                                                \
      memcpy(&t, q + (size_t)j * sizeof t, sizeof t);                                     \
      if (PRESENT(t))                                                                     \
        part_f(mode == RED_ONE ? part : part + (mode == RED_IDENT ? j : lidx[j]), CONV(t),   \
               std);                                                                      \
    }                                                                                     \
  }                                                                                       \
  static void NAME(red_part *part, const int32_t *lidx, const uint8_t *q, int64_t m,       \
                   int mode, int std) {                                                   \
    if (mode == RED_ONE && !std) {                                                        \
      double s = 0, mn = part->mn.f, mx = part->mx.f;                                     \
      int64_t n = 0;                                                                      \
      for (int64_t j = 0; j < m; j++) {                                                   \
        T t;                                                                              \
        memcpy(&t, q + (size_t)j * sizeof t, sizeof t);                                   \
        if (PRESENT(t)) {                                                                 \
          double v = CONV(t);                                                             \
          n++;                                                                            \
          s += v;                                                                         \
          mn = v < mn ? v : mn;                                                           \
          mx = v > mx ? v : mx;                                                           \
        }                                                                                 \
      }                                                                                   \
      part->n += n;                                                                       \
      part->sum += s;                                                                     \
      part->mn.f = mn;                                                                    \
      part->mx.f = mx;                                                                    \
    } else if (mode == RED_ONE) {                                                         \
      double s = 0, mn = part->mn.f, mx = part->mx.f, k = part->k, s1 = part->s1,         \
             s2 = part->s2;                                                               \
      int64_t n = part->n;                                                                \
      for (int64_t j = 0; j < m; j++) {                                                   \
        T t;                                                                              \
        memcpy(&t, q + (size_t)j * sizeof t, sizeof t);                                   \
        if (PRESENT(t)) {                                                                 \
          double v = CONV(t), d;                                                          \
          if (n++ == 0) k = v;                                                            \
          d = v - k;                                                                      \
          s1 += d;                                                                        \
          s2 += d * d;                                                                    \
          s += v;                                                                         \
          mn = v < mn ? v : mn;                                                           \
          mx = v > mx ? v : mx;                                                           \
        }                                                                                 \
      }                                                                                   \
      part->n = n;                                                                        \
      part->sum += s;                                                                     \
      part->mn.f = mn;                                                                    \
      part->mx.f = mx;                                                                    \
      part->k = k;                                                                        \
      part->s1 = s1;                                                                      \
      part->s2 = s2;                                                                      \
    } else if (std) {                                                                     \
      NAME##_loop(part, lidx, q, m, mode, 1);                                             \
    } else {                                                                              \
      NAME##_loop(part, lidx, q, m, mode, 0);                                             \
    }                                                                                     \
  }
/* Integers: one loop. */
#define RED_RUN(NAME, T, CONV, ADD)                                                        \
  static void NAME(red_part *part, const int32_t *lidx, const uint8_t *q, int64_t m,       \
                   int mode, int std) {                                                   \
    for (int64_t j = 0; j < m; j++) {                                                     \
      T t;                                                                                \
      memcpy(&t, q + (size_t)j * sizeof t, sizeof t);                                     \
      ADD(mode == RED_ONE ? part : part + (mode == RED_IDENT ? j : lidx[j]), CONV(t), std);  \
    }                                                                                     \
  }
#define RED_NOTNAN(t) ((t) == (t))
#define RED_HALFOK(t) ((t & 0x7C00) != 0x7C00 || (t & 0x3FF) == 0)
#define RED_ID(t) (t)
#define RED_BOOL(t) ((int64_t)((t) != 0))
RED_RUN_F(run_f8, double, RED_ID, RED_NOTNAN)
RED_RUN_F(run_f4, float, (double), RED_NOTNAN)
RED_RUN_F(run_f2, uint16_t, cat_half_to_double, RED_HALFOK)
RED_RUN(run_b1, uint8_t, RED_BOOL, part_i)
RED_RUN(run_i1, int8_t, (int64_t), part_i)
RED_RUN(run_i2, int16_t, (int64_t), part_i)
RED_RUN(run_i4, int32_t, (int64_t), part_i)
RED_RUN(run_i8, int64_t, RED_ID, part_i)
RED_RUN(run_u1, uint8_t, (uint64_t), part_u)
RED_RUN(run_u2, uint16_t, (uint64_t), part_u)
RED_RUN(run_u4, uint32_t, (uint64_t), part_u)
RED_RUN(run_u8, uint64_t, RED_ID, part_u)

/*
 * Floats without deviations -- the common case -- keep a slot's parts as four arrays (sums,
 * counts, minima, maxima; counts as doubles, exact below 2^53) rather than as structs: a run
 * along a kept dimension then updates consecutive elements of each array, a loop the
 * compiler vectorises, where the structs made it 4 scattered loads and stores per item.
 */
typedef struct red_soa {
  double *s, *n, *mn, *mx;
} red_soa;

#if defined(__x86_64__) && defined(__SSE2__)
#include <emmintrin.h>
/* Items of 4 or 8 bytes (float32, float64) into parts [0, m), two at a time: absent (NaN)
** items add 0 to the sum and to the count (their mask is clear), and compare false, so that
** minpd and maxpd keep the part's value -- what the scalar loop does, item for item, in the
** same order. 1 when done, 0 for other item sizes. */
static int red_ident_vec(double *s, double *n, double *mn, double *mx, const uint8_t *q,
                         int64_t m, size_t sz) {
  const __m128d one = _mm_set1_pd(1.0);
  int64_t j = 0;
  if (sz != 4 && sz != 8) return 0;
  for (; j + 2 <= m; j += 2) {
    __m128d v = sz == 4 ? _mm_cvtps_pd(_mm_castsi128_ps(_mm_loadl_epi64((const void *)(q + j * 4))))
                        : _mm_loadu_pd((const double *)(const void *)(q + j * 8));
    __m128d ok = _mm_cmpeq_pd(v, v);
    _mm_storeu_pd(s + j, _mm_add_pd(_mm_loadu_pd(s + j), _mm_and_pd(v, ok)));
    _mm_storeu_pd(n + j, _mm_add_pd(_mm_loadu_pd(n + j), _mm_and_pd(one, ok)));
    _mm_storeu_pd(mn + j, _mm_min_pd(v, _mm_loadu_pd(mn + j)));
    _mm_storeu_pd(mx + j, _mm_max_pd(v, _mm_loadu_pd(mx + j)));
  }
  for (; j < m; j++) {
    double v;
    if (sz == 4) {
      float f;
      memcpy(&f, q + j * 4, 4);
      v = f;
    } else {
      memcpy(&v, q + j * 8, 8);
    }
    s[j] += v == v ? v : 0.0;
    n[j] += v == v ? 1.0 : 0.0;
    mn[j] = v < mn[j] ? v : mn[j];
    mx[j] = v > mx[j] ? v : mx[j];
  }
  return 1;
}
#else
static int red_ident_vec(double *s, double *n, double *mn, double *mx, const uint8_t *q,
                         int64_t m, size_t sz) {
  (void)s, (void)n, (void)mn, (void)mx, (void)q, (void)m, (void)sz;
  return 0;
}
#endif

#define RED_SOA(NAME, T, CONV, PRESENT)                                                    \
  static void NAME(const red_soa *a, int64_t base, const int32_t *lidx, const uint8_t *q,   \
                   int64_t m, int mode) {                                                 \
    double *s = a->s + base, *n = a->n + base, *mn = a->mn + base, *mx = a->mx + base;      \
    if (mode == RED_ONE) {                                                                \
      double ls = 0, ln = 0, lmn = mn[0], lmx = mx[0];                                    \
      for (int64_t j = 0; j < m; j++) {                                                   \
        T t;                                                                              \
        memcpy(&t, q + (size_t)j * sizeof t, sizeof t);                                   \
        if (PRESENT(t)) {                                                                 \
          double v = CONV(t);                                                             \
          ln += 1;                                                                        \
          ls += v;                                                                        \
          lmn = v < lmn ? v : lmn;                                                        \
          lmx = v > lmx ? v : lmx;                                                        \
        }                                                                                 \
      }                                                                                   \
      s[0] += ls;                                                                         \
      n[0] += ln;                                                                         \
      mn[0] = lmn;                                                                        \
      mx[0] = lmx;                                                                        \
    } else if (mode == RED_IDENT && red_ident_vec(s, n, mn, mx, q, m, sizeof(T))) {      \
      /* done with vector instructions */                                                 \
    } else if (mode == RED_IDENT) {                                                       \
      for (int64_t j = 0; j < m; j++) {                                                   \
        T t;                                                                              \
        double v;                                                                         \
        int ok;                                                                           \
        memcpy(&t, q + (size_t)j * sizeof t, sizeof t);                                   \
        v = CONV(t);                                                                      \
        ok = PRESENT(t);                                                                  \
        s[j] = ok ? s[j] + v : s[j];                                                      \
        n[j] += ok;                                                                       \
        mn[j] = v < mn[j] ? v : mn[j]; /* false for NaN */                                \
        mx[j] = v > mx[j] ? v : mx[j];                                                    \
      }                                                                                   \
    } else {                                                                              \
      for (int64_t j = 0; j < m; j++) {                                                   \
        T t;                                                                              \
        memcpy(&t, q + (size_t)j * sizeof t, sizeof t);                                   \
        if (PRESENT(t)) {                                                                 \
          double v = CONV(t);                                                             \
          int32_t l = lidx[j];                                                            \
          s[l] += v;                                                                      \
          n[l] += 1;                                                                      \
          mn[l] = v < mn[l] ? v : mn[l];                                                  \
          mx[l] = v > mx[l] ? v : mx[l];                                                  \
        }                                                                                 \
      }                                                                                   \
    }                                                                                     \
  }
RED_SOA(soa_f8, double, RED_ID, RED_NOTNAN)
RED_SOA(soa_f4, float, (double), RED_NOTNAN)
RED_SOA(soa_f2, uint16_t, cat_half_to_double, RED_HALFOK)


/*
 * Columns: a block whose first dimension is reduced or grouped and whose others are all kept
 * (a climatology folds time into every (lat, lon)). For each kept position its items along
 * dimension 0 are added in increasing order -- the order in which slot_fill's runs add them,
 * with the same operations, so the results are bit-identical -- but in registers: a part is
 * loaded and stored once per run of one group instead of once per item. mm: 0 when minima
 * and maxima are not wanted (CATERVA_REDUCE_NOMINMAX).
 */
#if defined(__x86_64__) && defined(__SSE2__)
static inline __attribute__((always_inline)) __m128d cols_load2(const uint8_t *p, size_t sz) {
  return sz == 4 ? _mm_cvtps_pd(_mm_castsi128_ps(_mm_loadl_epi64((const void *)p)))
                 : _mm_loadu_pd((const double *)(const void *)p);
}

/* One vector of items into its accumulators (absent items: see red_ident_vec). */
#define COLS_STEP(V, S, N, MN, MX)                                                         \
  do {                                                                                    \
    __m128d ok_ = _mm_cmpeq_pd(V, V);                                                     \
    S = _mm_add_pd(S, _mm_and_pd(V, ok_));                                                \
    N = _mm_add_pd(N, _mm_and_pd(one, ok_));                                              \
    if (mm) {                                                                             \
      MN = _mm_min_pd(V, MN);                                                             \
      MX = _mm_max_pd(V, MX);                                                             \
    }                                                                                     \
  } while (0)

/* Positions [0, 2w) (w: 1 or 2) of parts p (counts, minima, maxima at the same offsets of n,
** mn, mx) from the items at q, tstride bytes apart, from t on while lidx keeps the same
** group; returns where it stopped. The accumulators are plain variables, to stay in
** registers. */
static inline __attribute__((always_inline)) int64_t
cols_vec_run(const red_soa *a, int64_t p, const int32_t *lidx, int64_t t, const uint8_t *q,
             int64_t nt, size_t tstride, size_t sz, const int w, const int mm) {
  const __m128d one = _mm_set1_pd(1.0), inf = _mm_set1_pd(INFINITY);
  const int32_t l = lidx ? lidx[t] : 0;
  __m128d s0 = _mm_loadu_pd(a->s + p), n0 = _mm_loadu_pd(a->n + p);
  __m128d mn0 = mm ? _mm_loadu_pd(a->mn + p) : inf, mx0 = mm ? _mm_loadu_pd(a->mx + p) : inf;
  __m128d s1 = s0, n1 = n0, mn1 = mn0, mx1 = mx0;
  if (w == 2) {
    s1 = _mm_loadu_pd(a->s + p + 2);
    n1 = _mm_loadu_pd(a->n + p + 2);
    if (mm) {
      mn1 = _mm_loadu_pd(a->mn + p + 2);
      mx1 = _mm_loadu_pd(a->mx + p + 2);
    }
  }
  for (; t < nt && (lidx ? lidx[t] : 0) == l; t++) {
    const uint8_t *at = q + (size_t)t * tstride;
    __m128d v0 = cols_load2(at, sz);
    COLS_STEP(v0, s0, n0, mn0, mx0);
    if (w == 2) {
      __m128d v1 = cols_load2(at + 2 * sz, sz);
      COLS_STEP(v1, s1, n1, mn1, mx1);
    }
  }
  _mm_storeu_pd(a->s + p, s0);
  _mm_storeu_pd(a->n + p, n0);
  if (mm) {
    _mm_storeu_pd(a->mn + p, mn0);
    _mm_storeu_pd(a->mx + p, mx0);
  }
  if (w == 2) {
    _mm_storeu_pd(a->s + p + 2, s1);
    _mm_storeu_pd(a->n + p + 2, n1);
    if (mm) {
      _mm_storeu_pd(a->mn + p + 2, mn1);
      _mm_storeu_pd(a->mx + p + 2, mx1);
    }
  }
  return t;
}

static inline __attribute__((always_inline)) int64_t
cols_vec_mm(const red_soa *a, int64_t base, const int32_t *lidx, int64_t lstr, const uint8_t *q,
            int64_t nt, size_t tstride, int64_t m, size_t sz, const int mm) {
  int64_t j = 0;
  for (; j + 4 <= m; j += 4)
    for (int64_t t = 0; t < nt;)
      t = cols_vec_run(a, base + (lidx ? lidx[t] : 0) * lstr + j, lidx, t, q + (size_t)j * sz,
                       nt, tstride, sz, 2, mm);
  for (; j + 2 <= m; j += 2)
    for (int64_t t = 0; t < nt;)
      t = cols_vec_run(a, base + (lidx ? lidx[t] : 0) * lstr + j, lidx, t, q + (size_t)j * sz,
                       nt, tstride, sz, 1, mm);
  return j;
}

/* Positions [0, j) of m with vector instructions (items of 4 or 8 bytes); returns j. */
static int64_t cols_vec(const red_soa *a, int64_t base, const int32_t *lidx, int64_t lstr,
                        const uint8_t *q, int64_t nt, size_t tstride, int64_t m, size_t sz,
                        int mm) {
  if (sz != 4 && sz != 8) return 0;
  return mm ? cols_vec_mm(a, base, lidx, lstr, q, nt, tstride, m, sz, 1)
            : cols_vec_mm(a, base, lidx, lstr, q, nt, tstride, m, sz, 0);
}
#else
static int64_t cols_vec(const red_soa *a, int64_t base, const int32_t *lidx, int64_t lstr,
                        const uint8_t *q, int64_t nt, size_t tstride, int64_t m, size_t sz,
                        int mm) {
  (void)a, (void)base, (void)lidx, (void)lstr, (void)q, (void)nt, (void)tstride, (void)m;
  (void)sz, (void)mm;
  return 0;
}
#endif

/* Kept positions [0, m) of parts base + lidx[t] * lstr (lidx NULL: base) from the items
** q[t * tstride + j] for t in [0, nt). */
#define RED_COLS(NAME, T, CONV, PRESENT)                                                   \
  static void NAME(const red_soa *a, int64_t base, const int32_t *lidx, int64_t lstr,      \
                   const uint8_t *q, int64_t nt, size_t tstride, int64_t m, int mm) {      \
    for (int64_t j = cols_vec(a, base, lidx, lstr, q, nt, tstride, m, sizeof(T), mm);      \
         j < m; j++) {                                                                    \
      for (int64_t t = 0; t < nt;) {                                                      \
        int32_t l = lidx ? lidx[t] : 0;                                                   \
        int64_t p = base + l * lstr + j;                                                  \
        double s = a->s[p], n = a->n[p], mn = a->mn[p], mx = a->mx[p];                    \
        for (; t < nt && (lidx ? lidx[t] : 0) == l; t++) {                                \
          T x;                                                                            \
          double v;                                                                       \
          int ok;                                                                         \
          memcpy(&x, q + (size_t)t * tstride + (size_t)j * sizeof x, sizeof x);           \
          v = CONV(x);                                                                    \
          ok = PRESENT(x);                                                                \
          s = ok ? s + v : s;                                                             \
          n += ok;                                                                        \
          mn = v < mn ? v : mn; /* false for NaN */                                       \
          mx = v > mx ? v : mx;                                                           \
        }                                                                                 \
        a->s[p] = s;                                                                      \
        a->n[p] = n;                                                                      \
        a->mn[p] = mn;                                                                    \
        a->mx[p] = mx;                                                                    \
      }                                                                                   \
    }                                                                                     \
  }
RED_COLS(cols_f8, double, RED_ID, RED_NOTNAN)
RED_COLS(cols_f4, float, (double), RED_NOTNAN)
RED_COLS(cols_f2, uint16_t, cat_half_to_double, RED_HALFOK)

typedef void (*red_cols_fn)(const red_soa *, int64_t, const int32_t *, int64_t, const uint8_t *,
                            int64_t, size_t, int64_t, int);

/* Whether blocks are folded as columns: floats without deviations, dimension 0 reduced or
** grouped, every other one kept. */
static int cols_ok(const caterva_reduce *r) {
  if (!r->soa || r->nd < 2 || r->dims[0].mode == CATERVA_RED_KEEP) return 0;
  for (int k = 1; k < r->nd; k++)
    if (r->dims[k].mode != CATERVA_RED_KEEP) return 0;
  return 1;
}

/* The next position of the counter cnt over dimensions lo .. hi - 1 (the last fastest) of
** extents ext, moving *boff by the block strides bstr: 1, or 0 after the last position. */
static inline int box_step(int64_t *cnt, const int64_t *ext, const int64_t *bstr, int lo,
                           int hi, int64_t *boff) {
  for (int k = hi - 1; k >= lo; k--) {
    if (++cnt[k] < ext[k]) {
      *boff += bstr[k];
      return 1;
    }
    cnt[k] = 0;
    *boff -= (ext[k] - 1) * bstr[k];
  }
  return 0;
}

/* Fold the block's part of the box into slot sl as columns (cols_ok; the slot's nloc,
** parts and their strides lstr set, its parts reset). */
static void fill_cols(const caterva_reduce *r, const red_slot *sl, const red_soa *a,
                      const caterva_block *blk, const int64_t *lstr, const int64_t *bstr) {
  const int nd = r->nd;
  const red_cols_fn fn = r->itemsize == 8 ? cols_f8 : r->itemsize == 4 ? cols_f4 : cols_f2;
  const int32_t *lidx0 = r->dims[0].mode == CATERVA_RED_GROUP ? sl->lidx[0] : NULL;
  const size_t sz = (size_t)r->itemsize;
  int64_t cnt[CATERVA_MAX_DIM] = {0}, ext[CATERVA_MAX_DIM], boff = 0;
  for (int k = 0; k < nd; k++) {
    ext[k] = blk->stop[k] - blk->start[k];
    boff += (blk->start[k] - blk->origin[k]) * bstr[k];
  }
  for (;;) { /* every position of dimensions 1 .. nd - 2 */
    int64_t loff = 0;
    int k;
    for (k = 1; k < nd - 1; k++) loff += cnt[k] * lstr[k];
    fn(a, loff, lidx0, lstr[0], blk->data + (size_t)boff * sz, ext[0], (size_t)bstr[0] * sz,
       ext[nd - 1], r->minmax);
    if (!box_step(cnt, ext, bstr, 1, nd - 1, &boff)) break;
  }
}

typedef void (*red_soa_fn)(const red_soa *, int64_t, const int32_t *, const uint8_t *, int64_t,
                           int);

static red_soa_fn soa_fn(const caterva_reduce *r) {
  return r->itemsize == 8 ? soa_f8 : r->itemsize == 4 ? soa_f4 : soa_f2;
}

/* Slot sl's four arrays. */
static red_soa slot_soa(const caterva_reduce *r, const red_slot *sl) {
  red_soa a;
  a.s = (double *)(void *)sl->part;
  a.n = a.s + r->maxparts;
  a.mn = a.n + r->maxparts;
  a.mx = a.mn + r->maxparts;
  return a;
}

/* Reset parts [0, n) of the four arrays. */
static void soa_init(red_soa *a, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    a->s[i] = 0;
    a->n[i] = 0;
    a->mn[i] = INFINITY;
    a->mx[i] = -INFINITY;
  }
}

typedef void (*red_run_fn)(red_part *, const int32_t *, const uint8_t *, int64_t, int, int);

static red_run_fn run_fn(const caterva_reduce *r) {
  switch (r->kind * 16 + r->itemsize) {
    case CATERVA_KIND_FLOAT * 16 + 8: return run_f8;
    case CATERVA_KIND_FLOAT * 16 + 4: return run_f4;
    case CATERVA_KIND_FLOAT * 16 + 2: return run_f2;
    case CATERVA_KIND_BOOL * 16 + 1: return run_b1;
    case CATERVA_KIND_INT * 16 + 1: return run_i1;
    case CATERVA_KIND_INT * 16 + 2: return run_i2;
    case CATERVA_KIND_INT * 16 + 4: return run_i4;
    case CATERVA_KIND_INT * 16 + 8: return run_i8;
    case CATERVA_KIND_UINT * 16 + 1: return run_u1;
    case CATERVA_KIND_UINT * 16 + 2: return run_u2;
    case CATERVA_KIND_UINT * 16 + 4: return run_u4;
    case CATERVA_KIND_UINT * 16 + 8: return run_u8;
    default: return NULL;
  }
}

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
  const red_run_fn run = run_fn(r);
  int64_t lstr[CATERVA_MAX_DIM], bstr[CATERVA_MAX_DIM], cnt[CATERVA_MAX_DIM];
  int64_t ext[CATERVA_MAX_DIM] = {0}, m, boff = 0, loff = 0;
  int last, mode;
  const red_soa_fn srun = r->soa ? soa_fn(r) : NULL;
  red_soa soa = slot_soa(r, sl);
  sl->nchunk = blk->nchunk;
  sl->nparts = 1;
  if (nd == 0) {
    if (r->soa) {
      soa_init(&soa, 1);
      srun(&soa, 0, NULL, blk->data, 1, RED_ONE);
      return;
    }
    part_init(r, sl->part);
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
  if (r->soa) soa_init(&soa, sl->nparts);
  else
    for (int64_t i = 0; i < sl->nparts; i++) part_init(r, &sl->part[i]);
  if (r->cols) {
    fill_cols(r, sl, &soa, blk, lstr, bstr);
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
  part_init(r, &q->part);
  q->part.n = st.nvalid;
  q->part.mn = st.min;
  q->part.mx = st.max;
  if (r->stype == CATERVA_STATS_FLOAT) q->part.sum = st.sum.f;
  else if (r->stype == CATERVA_STATS_INT) q->part.isum = st.sum.i;
  else usum_add(&q->part.isum, &q->part.over, &q->part.sum, st.sum.u);
  r->from_stats++;
  return 0;
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
  CAT_CHECK(leave, run_fn(r) != NULL, CATERVA_E_UNSUPPORTED,
            "reduce: items of dtype %s are not numbers", caterva_array_dtype(a));
  CAT_TRY(leave, take_dims(ctx, r, dims));
  r->rows = rows_alloc(r->nrows, &r->rows_mapped);
  CAT_CHECK(leave, r->rows != NULL, CATERVA_E_NOMEM, "out of memory");
  slots_size(r);
  regions_init(r);
  r->cols = cols_ok(r) && !(flags & CATERVA_REDUCE_NOCOLS);
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
      caterva_array_has_stats(r->a))
    caterva_block_iter_set_filter(it, red_keep, r);
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
