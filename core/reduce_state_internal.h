/*
 * reduce_state_internal.h -- what reduce.c (slots, merging, the owned path, the API) and
 * reduce_fold.c (folding a block's values into a slot's parts) share: the reduction's
 * state, its parts and rows, and the few small steps both take.
 */
#ifndef CAT_REDUCE_STATE_INTERNAL_H
#define CAT_REDUCE_STATE_INTERNAL_H

#include "array_layer_internal.h"

#include "caterva_reduce.h"

#include <math.h>

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

/*
 * Floats without deviations -- the common case -- keep a slot's parts as four arrays (sums,
 * counts, minima, maxima; counts as doubles, exact below 2^53) rather than as structs: a run
 * along a kept dimension then updates consecutive elements of each array, a loop the
 * compiler vectorises, where the structs made it 4 scattered loads and stores per item.
 */
typedef struct red_soa {
  double *s, *n, *mn, *mx;
} red_soa;

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

/* Slot sl's four arrays. */
static inline red_soa slot_soa(const caterva_reduce *r, const red_slot *sl) {
  red_soa a;
  a.s = (double *)(void *)sl->part;
  a.n = a.s + r->maxparts;
  a.mn = a.n + r->maxparts;
  a.mx = a.mn + r->maxparts;
  return a;
}

/* How a run of items finds its parts: all in part[0], item j in part[j], or in part[lidx[j]]. */
#define RED_ONE   0
#define RED_IDENT 1
#define RED_LIDX  2

/* ---- reduce_fold.c ---------------------------------------------------------------------- */

/* Reset a part for r's items. */
void cat_red_part_init(const caterva_reduce *r, red_part *p);
/* Reset parts [0, n) of the four arrays. */
void cat_red_soa_init(red_soa *a, int64_t n);

/* Fold m items at q into parts (mode RED_*), with deviations when std. */
typedef void (*red_run_fn)(red_part *, const int32_t *, const uint8_t *, int64_t, int, int);
red_run_fn cat_red_run_fn(const caterva_reduce *r);
/* The same for floats without deviations, into the four arrays at offset base. */
typedef void (*red_soa_fn)(const red_soa *, int64_t, const int32_t *, const uint8_t *, int64_t,
                           int);
red_soa_fn cat_red_soa_fn(const caterva_reduce *r);

/* Whether blocks are folded as columns: floats without deviations, dimension 0 reduced or
 * grouped, every other one kept. */
int cat_red_cols_ok(const caterva_reduce *r);
/* Fold the block's part of the box into slot sl as columns (cat_red_cols_ok; the slot's nloc,
 * parts and their strides lstr set, its parts reset). */
void cat_red_fill_cols(const caterva_reduce *r, const red_slot *sl, const red_soa *a,
                       const caterva_block *blk, const int64_t *lstr, const int64_t *bstr);

#endif
