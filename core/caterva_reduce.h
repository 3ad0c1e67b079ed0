/*
 * caterva_reduce.h -- reductions of an array over some of its dimensions, optionally
 * grouping one or more dimensions (e.g. a time dimension by month): count, sum, mean, min,
 * max and standard deviation of every output row, in one pass over the blocks.
 *
 * Included by caterva.h. Threading: a caterva_reduce belongs to one thread at a time; its
 * work runs on the context's threads and the results do not depend on how many there are.
 */
#ifndef CATERVA_REDUCE_H
#define CATERVA_REDUCE_H

/** What becomes of a dimension. */
#define CATERVA_RED_REDUCE 0  /**< reduced away: one output coordinate */
#define CATERVA_RED_KEEP   1  /**< one output coordinate per index of the box */
#define CATERVA_RED_GROUP  2  /**< one output coordinate per group of indices */

/** One dimension of a reduction. */
typedef struct caterva_reduce_dim {
  int mode;             /**< CATERVA_RED_* */
  int64_t lo, hi;       /**< the box along the dimension, inclusive: 0 <= lo <= hi < extent */
  const int32_t *gid;   /**< GROUP: gid[j] in [0, ngroups) is the group of index lo + j, for
                             j in [0, hi - lo] (copied by caterva_reduce_new) */
  int32_t ngroups;      /**< GROUP: at least 1 */
} caterva_reduce_dim;

/** Flags of caterva_reduce_new. */
#define CATERVA_REDUCE_STD     1  /**< compute standard deviations too (every block is then
                                       decompressed: block statistics hold no squares) */
#define CATERVA_REDUCE_NOSTATS 2  /**< never answer a block from its statistics */
/** How caterva_reduce_add combines blocks; both give bit-identical results, so these are for
 * tests and measurements (by default: owned with one thread, or with at least 4 block
 * columns of kept dimensions per thread; merged otherwise). */
#define CATERVA_REDUCE_MERGED  4  /**< blocks folded into parts of their own, merged into the
                                       rows after each batch on the caller's thread */
#define CATERVA_REDUCE_OWNED   8  /**< blocks of the same columns along the kept dimensions
                                       folded and merged one after the other by one thread,
                                       columns on all threads at once */
#define CATERVA_REDUCE_NOCOLS 16  /**< for tests: never fold a block as columns (the first
                                       dimension reduced or grouped, all others kept, floats
                                       without deviations), the same results otherwise */
/** Minima and maxima are not needed: they may be left out (then unspecified in
 * caterva_reduce_get), which saves time on floats. */
#define CATERVA_REDUCE_NOMINMAX 32

/** The results of one output row. */
typedef struct caterva_reduce_row {
  int64_t n;            /**< present (non-NaN) cells */
  int float_sum;        /**< 1: the sum is fsum (float items, or an integer sum past int64);
                             0: isum */
  double fsum;
  int64_t isum;
  caterva_scalar min, max; /**< typed as caterva_array_stats_type says; meaningless when n is 0 */
  double mean;          /**< sum / n; NaN when n is 0 */
  double std;           /**< population standard deviation (divisor n); NaN when n is 0 or
                             without CATERVA_REDUCE_STD */
} caterva_reduce_row;

/** A reduction in progress (opaque). */
typedef struct caterva_reduce caterva_reduce;

/** Prepare a reduction of a (numeric items: caterva_array_stats_type not NONE) over the box
 * and modes given by dims[0 .. ndim). Output rows are numbered in C order over the
 * dimensions, dimension k having hi - lo + 1 coordinates when kept, ngroups when grouped
 * and 1 when reduced. a is borrowed and must stay unmodified while r lives.
 * @return CATERVA_OK and *out (free with caterva_reduce_free), CATERVA_E_INVALID (a bad
 * box, mode or group), CATERVA_E_UNSUPPORTED (not numbers), CATERVA_E_RANGE (more than
 * 2 GiB of output rows) or CATERVA_E_NOMEM, with a message in ctx. */
int caterva_reduce_new(caterva_ctx *ctx, caterva_array *a, const caterva_reduce_dim *dims,
                       int flags, caterva_reduce **out);
/** Fold the cells of the sub-box [lo[k], hi[k]] (inside the box) into the rows: blocks are
 * decompressed and folded on ctx's threads, and the blocks' parts are combined in a fixed
 * order (chunks in C order; in each, the blocks answered by statistics, then the others in C
 * order), so results are bit-identical for any number of threads. A block lying wholly
 * inside the sub-box and inside one output row is answered from its statistics when the
 * array has them (not with CATERVA_REDUCE_STD or _NOSTATS). Call it once per sub-box of
 * disjoint sub-boxes (e.g. the runs of an IN list). Returns CATERVA_OK or a negative error
 * (reading or decompressing), with a message in ctx. */
int caterva_reduce_add(caterva_ctx *ctx, caterva_reduce *r, const int64_t *lo,
                       const int64_t *hi);
/** The number of output rows. */
int64_t caterva_reduce_nrows(const caterva_reduce *r);
/** Output row `row`'s coordinate along dimension dim: the index (kept), the group number
 * (grouped) or -1 (reduced). */
int64_t caterva_reduce_coord(const caterva_reduce *r, int64_t row, int dim);
/** The results of output row `row` (0 <= row < nrows) into *out. */
void caterva_reduce_get(const caterva_reduce *r, int64_t row, caterva_reduce_row *out);
/** Blocks answered from their statistics so far (for tests). */
int64_t caterva_reduce_stats_blocks(const caterva_reduce *r);
/** Free (NULL is fine). */
void caterva_reduce_free(caterva_reduce *r);

#endif /* CATERVA_REDUCE_H */
