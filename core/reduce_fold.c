/*
 * reduce_fold.c -- a block's values folded into the parts of its slot: the per-item kernels
 * for every item type (with and without deviations), the four-array form of floats without
 * deviations (vectorised), and the column fold of climatology shapes. reduce.c decides which
 * parts a block's runs go to and merges the parts into rows; the numbers and their bounds are
 * described there.
 */
#include "reduce_state_internal.h"

#include <string.h>

void cat_red_part_init(const caterva_reduce *r, red_part *p) {
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
  if (r->stype == CATERVA_STATS_INT) {
    p->mn.i = INT64_MAX;
    p->mx.i = INT64_MIN;
  } else {
    p->mn.u = UINT64_MAX;
    p->mx.u = 0;
  }
}

/* The shifted sums of the deviations (std): the first value of the part is the shift. */
static inline __attribute__((always_inline)) void part_shift(red_part *p, double v, int std) {
  if (std) {
    double d;
    if (p->n == 0) p->k = v;
    d = v - p->k;
    p->s1 += d;
    p->s2 += d * d;
  }
}

static inline __attribute__((always_inline)) void part_f(red_part *p, double v, int std) {
  part_shift(p, v, std);
  p->n++;
  p->sum += v;
  if (v < p->mn.f) p->mn.f = v;
  if (v > p->mx.f) p->mx.f = v;
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
int cat_red_cols_ok(const caterva_reduce *r) {
  if (!r->soa || r->nd < 2 || r->dims[0].mode == CATERVA_RED_KEEP) return 0;
  for (int k = 1; k < r->nd; k++)
    if (r->dims[k].mode != CATERVA_RED_KEEP) return 0;
  return 1;
}

/* Fold the block's part of the box into slot sl as columns (cat_red_cols_ok; the slot's nloc,
** parts and their strides lstr set, its parts reset). */
void cat_red_fill_cols(const caterva_reduce *r, const red_slot *sl, const red_soa *a,
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

red_soa_fn cat_red_soa_fn(const caterva_reduce *r) {
  return r->itemsize == 8 ? soa_f8 : r->itemsize == 4 ? soa_f4 : soa_f2;
}

/* Reset parts [0, n) of the four arrays. */
void cat_red_soa_init(red_soa *a, int64_t n) {
  for (int64_t i = 0; i < n; i++) {
    a->s[i] = 0;
    a->n[i] = 0;
    a->mn[i] = INFINITY;
    a->mx[i] = -INFINITY;
  }
}

red_run_fn cat_red_run_fn(const caterva_reduce *r) {
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
