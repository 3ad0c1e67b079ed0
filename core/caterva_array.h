/*
 * caterva_array.h -- N-dimensional arrays with two levels of partitioning (part of the public
 * interface; include caterva.h, which includes this file).
 *
 * An array of shape S is cut into chunks of chunkshape C (one Blosc2 chunk each, in C order
 * over the chunk grid) and every chunk into blocks of blockshape B (the chunk's Blosc2 blocks,
 * in C order over the block grid). Edge chunks and blocks are padded; padding reads as
 * nothing. The geometry is stored in the `caterva` and `b2nd` metalayers of the frame; new
 * arrays carry both, and reading accepts either.
 */
#ifndef CATERVA_ARRAY_H
#define CATERVA_ARRAY_H

#ifndef CATERVA_H
#error "include caterva.h instead"
#endif

/** @defgroup array N-d arrays
 * @{ */
typedef struct caterva_array caterva_array;

#define CATERVA_MAX_DIM 16         /**< b2nd's limit; the caterva metalayer allows 8 */
#define CATERVA_DTYPE_MAX 255      /**< longest dtype string stored */

/** Parameters for creating an array. Initialise with caterva_array_params_init. */
typedef struct caterva_array_params {
  int ndim;                             /**< 0 .. CATERVA_MAX_DIM */
  int64_t shape[CATERVA_MAX_DIM];       /**< extents, >= 0 */
  int32_t chunkshape[CATERVA_MAX_DIM];  /**< 0 in every dimension: chosen automatically
                                             (about 4 MiB, halving the longest axis) */
  int32_t blockshape[CATERVA_MAX_DIM];  /**< 0 in every dimension: chosen automatically
                                             (about 64 KiB, chunks a multiple of blocks) */
  int itemsize;                         /**< bytes per item, 1..255; 0: from dtype */
  const char *dtype;                    /**< NumPy dtype string ("<f8") or a common name
                                             ("float64", stored as "<f8"); NULL: "|S<itemsize>"
                                             (opaque items, as c-blosc2 does) */
  caterva_cparams cparams;              /**< typesize is forced to itemsize */
  int store;                            /**< CATERVA_STORE_* */
  const char *path;                     /**< file or directory for file stores, else NULL */
} caterva_array_params;

/** Zero shapes, itemsize 0, dtype NULL, default cparams, memory store. */
void caterva_array_params_init(caterva_array_params *p);

/** How a new array's items start out. */
#define CATERVA_FILL_ZEROS  0
#define CATERVA_FILL_VALUE  1   /**< every item = fill_value (itemsize bytes) */
#define CATERVA_FILL_UNINIT 2
#define CATERVA_FILL_NAN    3   /**< float32/float64 only */

/** Create an array filled as requested. path must not exist. Zero, NaN and uninit fills are
 * stored as special index entries (no chunk data); a value fill as repeated-value chunks
 * (padding included, as the reference's b2nd_full). Uninitialised items read as zeros. */
int caterva_array_create(caterva_ctx *ctx, const caterva_array_params *p, int fill,
                         const void *fill_value, caterva_array **out);
/** Create an array from a C-order buffer of prod(shape) * itemsize bytes. Padding is zero. */
int caterva_array_from_buffer(caterva_ctx *ctx, const caterva_array_params *p, const void *buf,
                              int64_t buflen, caterva_array **out);
/** Open an array from a contiguous frame file or sparse directory carrying a `b2nd` or
 * `caterva` metalayer (b2nd preferred). The item size is the frame's typesize; the frame's
 * chunk size and number of chunks must agree with the metalayer (else CATERVA_E_CORRUPT).
 * A frame with neither metalayer gives CATERVA_E_NOTFOUND. */
int caterva_array_open(caterva_ctx *ctx, const char *path, int mode, caterva_array **out);
/** The same for a path that may be a URL (http://, https://, s3://; see caterva_storage.h):
 * o gives the options of remote access (NULL: defaults). Remote arrays are read-only. */
int caterva_array_open_ex(caterva_ctx *ctx, const char *path, int mode,
                          const caterva_remote_opts *o, caterva_array **out);
/** Wrap an open super-chunk (ownership passes to the array, also on failure). */
int caterva_array_from_schunk(caterva_ctx *ctx, caterva_schunk *sc, caterva_array **out);
/** Save an array to a new file or directory (metalayers and attributes included). */
int caterva_array_save(caterva_ctx *ctx, caterva_array *a, const char *path, int store);
void caterva_array_free(caterva_array *a);

/* -- dtypes (NumPy dtype strings as stored in the b2nd metalayer) -- */

/** Kinds of items. */
#define CATERVA_KIND_OPAQUE    0  /**< bytes with no known meaning (structured types, ...) */
#define CATERVA_KIND_BOOL      1  /**< |b1 */
#define CATERVA_KIND_INT       2  /**< |i1 <i2 <i4 <i8 */
#define CATERVA_KIND_UINT      3  /**< |u1 <u2 <u4 <u8 */
#define CATERVA_KIND_FLOAT     4  /**< <f2 <f4 <f8 */
#define CATERVA_KIND_COMPLEX   5  /**< <c8 <c16 */
#define CATERVA_KIND_BYTES     6  /**< |S<n>, |V<n> */
#define CATERVA_KIND_UNICODE   7  /**< <U<n> (n UCS-4 code points, 4n bytes) */
#define CATERVA_KIND_DATETIME  8  /**< <M8[unit] (int64) */
#define CATERVA_KIND_TIMEDELTA 9  /**< <m8[unit] (int64) */

/** What a dtype string says. */
typedef struct caterva_dtype_info {
  int kind;        /**< CATERVA_KIND_* */
  int itemsize;    /**< bytes per item; 0 when the text does not say */
  int big_endian;  /**< items are stored big-endian ('>' prefix) */
} caterva_dtype_info;

/** Parse a NumPy dtype string ("<f8", "|i1", "|S10", "<M8[ns]", "<U4") or a common name
 * ("float64", "int32", "uint8", "bool", "float32", ...).
 * @param[out] info  always filled; unrecognised text gives CATERVA_KIND_OPAQUE, itemsize 0
 * @return CATERVA_OK, or CATERVA_E_INVALID when the text was not recognised. */
int caterva_dtype_parse(const char *dtype, caterva_dtype_info *info);
/** Write the canonical NumPy string of a recognised dtype text ("float64" -> "<f8") into buf
 * (capacity cap, NUL-terminated). CATERVA_E_INVALID if unrecognised, CATERVA_E_NOSPACE. */
int caterva_dtype_canonical(const char *dtype, char *buf, size_t cap);

/* -- properties (borrowed pointers, valid while the array lives and is not resized) -- */
int caterva_array_ndim(const caterva_array *a);
const int64_t *caterva_array_shape(const caterva_array *a);
const int32_t *caterva_array_chunkshape(const caterva_array *a);
const int32_t *caterva_array_blockshape(const caterva_array *a);
int caterva_array_itemsize(const caterva_array *a);
/** NumPy dtype string from the b2nd metalayer, or NULL for caterva-only files. */
const char *caterva_array_dtype(const caterva_array *a);
int64_t caterva_array_nitems(const caterva_array *a);
caterva_schunk *caterva_array_schunk(caterva_array *a);

/* -- data -- */

/** Copy the whole array into a C-order buffer (capacity cap bytes). */
int caterva_array_to_buffer(caterva_ctx *ctx, caterva_array *a, void *buf, int64_t cap);
/** Copy the box [start, stop) into a C-order buffer of prod(stop-start) * itemsize bytes,
 * decompressing only the blocks that intersect it. */
int caterva_array_get_slice(caterva_ctx *ctx, caterva_array *a, const int64_t *start,
                            const int64_t *stop, void *buf, int64_t cap);
/** Write the box [start, stop) from a C-order buffer. */
int caterva_array_set_slice(caterva_ctx *ctx, caterva_array *a, const int64_t *start,
                            const int64_t *stop, const void *buf, int64_t buflen);
/** Change the shape (grow: new items take the fill value, see caterva_array_get_fill;
 * shrink: items outside are dropped). The chunk
 * and block shapes stay; chunks are deleted and zero chunks inserted where the chunk grid
 * changes, surviving chunks are not recompressed (except edge chunks whose padding becomes
 * items and is cleared). Both metalayers are rewritten in place. */
int caterva_array_resize(caterva_ctx *ctx, caterva_array *a, const int64_t *new_shape);
/** Append a C-order buffer along axis; its shape equals the array's except along axis. */
int caterva_array_append(caterva_ctx *ctx, caterva_array *a, const void *buf, int64_t buflen,
                         int axis);
/** Copy into a new array with other partitioning, compression or store (p->shape,
 * p->itemsize and p->dtype are ignored: they come from a; zero chunk/block shapes are chosen
 * automatically). User attributes are copied. With the same partitioning and compression the
 * compressed chunks are copied as they are. */
int caterva_array_copy(caterva_ctx *ctx, caterva_array *a, const caterva_array_params *p,
                       caterva_array **out);

/* -- user attributes (vlmetalayers; values are msgpack bytes by convention) -- */
int caterva_array_attr_get(caterva_ctx *ctx, caterva_array *a, const char *name,
                           uint8_t **value, int32_t *len);
int caterva_array_attr_set(caterva_ctx *ctx, caterva_array *a, const char *name,
                           const void *value, int32_t len);
/** Dimension names (`_ARRAY_DIMENSIONS` attribute, a msgpack array of strings).
 * get: *names is a malloc'ed array of ndim malloc'ed strings, or NULL (rc CATERVA_E_NOTFOUND)
 * when absent; free with caterva_array_free_names. */
int caterva_array_get_dim_names(caterva_ctx *ctx, caterva_array *a, char ***names);
int caterva_array_set_dim_names(caterva_ctx *ctx, caterva_array *a, const char *const *names);
void caterva_array_free_names(char **names, int n);

/* -- coordinates: labels of a dimension's indices (the `_coords` attribute) -- */

/** Kinds of coordinate. */
#define CATERVA_COORD_NONE     0  /**< the dimension is labelled by its indices */
#define CATERVA_COORD_REGULAR  1  /**< label(i) = start + step * i */
#define CATERVA_COORD_EXPLICIT 2  /**< label(i) = values[i], strictly monotonic */

/** A dimension's coordinate. Labels are numbers; with units "<unit> since <date>" (CF
 * conventions) they are instants in calendar `calendar`: see caterva_labels. */
typedef struct caterva_coord {
  int kind;              /**< CATERVA_COORD_* */
  double start, step;    /**< REGULAR: finite, step != 0 */
  int64_t nvalues;       /**< EXPLICIT: labels given, at least the dimension's extent (more
                              are labels for indices the array may grow into) */
  const double *values;  /**< EXPLICIT: nvalues finite labels, strictly increasing or
                              strictly decreasing */
  const char *units;     /**< NULL or "" (none), e.g. "degrees_north" or
                              "days since 2000-01-01 00:00:00" */
  const char *calendar;  /**< NULL or "" (standard), or a CF calendar: standard, gregorian,
                              proleptic_gregorian, noleap, 365_day, all_leap, 366_day,
                              360_day; only meaningful with "since" units */
} caterva_coord;

/** Dimension dim's coordinate into *out (kind CATERVA_COORD_NONE when it has none). The
 * pointers in *out are owned by the array and valid until the next caterva_array_set_coord
 * on it, a rollback, or caterva_array_free. Reads the `_coords` attribute once.
 * @return CATERVA_OK, CATERVA_E_INVALID (dim out of range) or CATERVA_E_CORRUPT (a malformed
 * attribute, with a message). */
int caterva_array_get_coord(caterva_ctx *ctx, caterva_array *a, int dim, caterva_coord *out);
/** Set (c->kind REGULAR or EXPLICIT) or remove (c NULL or kind NONE) dimension dim's
 * coordinate; c's contents are copied. The `_coords` attribute is rewritten in the array's
 * transaction (or at once when none is open, like every attribute). Units with "since" are
 * checked (unit, date, calendar); an explicit vector shorter than the extent, not strictly
 * monotonic or not finite is CATERVA_E_INVALID. */
int caterva_array_set_coord(caterva_ctx *ctx, caterva_array *a, int dim, const caterva_coord *c);

/** A coordinate prepared for lookups over indices [0, n): labels become keys that compare
 * like the labels (numbers as they are; instants as milliseconds from 1970-01-01 counted in
 * the coordinate's calendar), searched by bisection (both directions) or arithmetic. Pure
 * functions: the struct borrows c's values. */
typedef struct caterva_labels {
  caterva_coord c;       /**< borrowed */
  int64_t n;             /**< indices searched */
  int dir;               /**< +1 labels increase with the index, -1 they decrease */
  int is_time;           /**< units "<unit> since <date>" */
  int calendar;          /**< CATERVA_CAL_* */
  double origin_ms;      /**< the reference date's key */
  double unit_ms;        /**< milliseconds per unit */
  int resolution;        /**< time text: 0 "YYYY-MM-DD", 1 "...THH:MM:SS", 2 "...:SS.sss" */
} caterva_labels;

#define CATERVA_CAL_STANDARD  0  /**< Julian before 1582-10-15, Gregorian from then */
#define CATERVA_CAL_PROLEPTIC 1  /**< proleptic_gregorian */
#define CATERVA_CAL_NOLEAP    2  /**< noleap, 365_day */
#define CATERVA_CAL_ALLLEAP   3  /**< all_leap, 366_day */
#define CATERVA_CAL_360       4  /**< 360_day */

/** Prepare c for indices [0, n). CATERVA_E_INVALID (message) for bad units or calendar. */
int caterva_labels_init(caterva_ctx *ctx, caterva_labels *l, const caterva_coord *c, int64_t n);
/** Index i's label (any i >= 0 for a regular coordinate; i < nvalues for an explicit one). */
double caterva_labels_value(const caterva_labels *l, int64_t i);
/** Index i's key: the label, or for time the instant in milliseconds rounded to 1 ms. */
double caterva_labels_key(const caterva_labels *l, int64_t i);
/** Indices [*lo, *hi] of [0, n) whose key compares to k as op says (CATERVA_CMP_*): exact,
 * by bisection over the monotonic keys. Empty when *lo > *hi. NaN k matches nothing. */
void caterva_labels_range(const caterva_labels *l, int op, double k, int64_t *lo, int64_t *hi);
/** Comparisons, for caterva_labels_range (EQ..GE) and caterva_block_stats_may_match (all). */
#define CATERVA_CMP_EQ      1
#define CATERVA_CMP_LT      2
#define CATERVA_CMP_LE      3
#define CATERVA_CMP_GT      4
#define CATERVA_CMP_GE      5
#define CATERVA_CMP_ISNULL  6   /**< the item is missing (NaN) */
#define CATERVA_CMP_NOTNULL 7
/** The index whose key equals k exactly, looking beyond n too (regular: any index >= 0;
 * explicit: all nvalues labels), for writes that grow the array. 1 and *idx when found, 0
 * when no label equals k. */
int caterva_labels_find(const caterva_labels *l, double k, int64_t *idx);
/** The index in [0, n) of the label nearest to key k (the lower index on a tie); -1 when
 * n == 0 or k is NaN. */
int64_t caterva_labels_nearest(const caterva_labels *l, double k);
/** Time coordinates: index i's instant as ISO 8601 text at the coordinate's resolution
 * ("2023-08-01", "2023-08-01T06:00:00" or "...T06:00:00.250") into buf (cap >= 32).
 * CATERVA_E_RANGE when the year is outside 1..9999. */
int caterva_labels_format(const caterva_labels *l, int64_t i, char *buf, size_t cap);
/** Time coordinates: the key of ISO 8601 text "YYYY-MM-DD", optionally followed by "T" or a
 * space and "HH:MM", "HH:MM:SS" or "HH:MM:SS.fff" (and "Z"), a date of the coordinate's
 * calendar. CATERVA_E_INVALID (message naming the text) otherwise. */
int caterva_labels_parse_time(caterva_ctx *ctx, const caterva_labels *l, const char *text,
                              double *key);
/** The label of key k (time: the number of units since the reference date). */
double caterva_labels_from_key(const caterva_labels *l, double k);

/** Calendar fields of a time coordinate's instants, for grouping (caterva_labels_field). */
#define CATERVA_FIELD_YEAR      1  /**< the year */
#define CATERVA_FIELD_MONTH     2  /**< 1 .. 12 */
#define CATERVA_FIELD_SEASON    3  /**< 0 DJF (December, January, February), 1 MAM, 2 JJA, 3 SON */
#define CATERVA_FIELD_DAYOFYEAR 4  /**< 1 .. the year's days in the calendar (360, 365, 366) */
/** Periods of `every` calendar units, numbered from absolute origins so that they do not
 * depend on the array or the box: DAYS from day 0 = 1970-01-01 of the calendar (every 7:
 * weeks starting on 1970-01-01's weekday), MONTHS from January of year 0 (every 3: quarters
 * January-March, ...), YEARS from year 0 (every 10: 2020-2029, ...). */
#define CATERVA_FIELD_DAYS      5
#define CATERVA_FIELD_MONTHS    6
#define CATERVA_FIELD_YEARS     7
/** Index i's field (CATERVA_FIELD_*; every >= 1 for the periods, ignored otherwise) into
 * *key: the value listed above, or the period's number. CATERVA_E_RANGE when the coordinate
 * is not a time or the instant lies outside years 1..9999; CATERVA_E_INVALID for an unknown
 * field. Pure. */
int caterva_labels_field(const caterva_labels *l, int field, int64_t every, int64_t i,
                         int64_t *key);
/** The first day of period `key` of a DAYS, MONTHS or YEARS field as "YYYY-MM-DD" into buf
 * (cap >= 11). CATERVA_E_RANGE outside years 1..9999, CATERVA_E_INVALID for other fields. */
int caterva_labels_period_format(const caterva_labels *l, int field, int64_t every,
                                 int64_t key, char *buf, size_t cap);

/* -- fill value, cell writes, transactions -- */

/** The fill item: what caterva_array_resize gives new cells and what a caller resets
 * deleted cells to. It comes from the `_FillValue` attribute (a msgpack number: float64 for
 * float32/float64 dtypes, an integer for integer and bool dtypes) when the file has one;
 * otherwise it is zero until set. Copies itemsize bytes into item (capacity cap).
 * @return 1 when the value comes from the attribute, 0 when not, CATERVA_E_INVALID. */
int caterva_array_get_fill(const caterva_array *a, void *item, int cap);
/** Set the fill item (itemsize bytes, at most 16); with persist, also store it as the
 * `_FillValue` attribute (float32/float64, integer and bool dtypes only, else
 * CATERVA_E_UNSUPPORTED; unsigned values above 2^63-1 are refused). */
int caterva_array_set_fill(caterva_ctx *ctx, caterva_array *a, const void *item, int persist);

/** Write one item at coord (inside the shape, else CATERVA_E_RANGE) through the array's
 * write-back cache of decompressed chunks. A chunk all of whose items inside the shape have
 * been written is compressed without being read (loads in C order stream): inside a
 * transaction, with a context of two or more threads, on a worker thread of the array's own
 * while the caller goes on (at most 32 such chunks, 64 MiB, wait at a time), and stored by a
 * later call on the caller's thread (a later write, a flush, a savepoint or its release, a
 * resize, set_slice, commit), in the order the chunks were completed (the file's bytes are
 * those of a single-threaded load); else at once. Other chunks are completed from the
 * stored chunk when the cache needs room, at caterva_array_flush, at a savepoint and at
 * commit. Reads (slices, iterators) do not see items still in the cache: flush first. An
 * error storing a chunk fails the call that stores it; at a savepoint or a release, where
 * SQLite cannot report it, it fails every later write and flush (so commit) of the
 * transaction instead (its writes are incomplete) until caterva_array_rollback. */
int caterva_array_set_item(caterva_ctx *ctx, caterva_array *a, const int64_t *coord,
                           const void *item);
/** Store every chunk image held by the write-back cache. */
int caterva_array_flush(caterva_ctx *ctx, caterva_array *a);
/** 1 when the write-back cache holds images not yet stored. */
int caterva_array_pending(const caterva_array *a);
/** Bytes of chunk images the write-back cache may hold (at least one chunk; default
 * 64 MiB). */
void caterva_array_set_write_cache(caterva_array *a, int64_t nbytes);

/** Transactions over the array's super-chunk (caterva_schunk_begin and the following): the
 * shape and both metalayers are part of them (a rollback restores the geometry), and the
 * write-back cache is flushed before a savepoint and a commit and discarded by rollbacks. */
int caterva_array_begin(caterva_ctx *ctx, caterva_array *a);
int caterva_array_savepoint(caterva_ctx *ctx, caterva_array *a, int level);
int caterva_array_release(caterva_ctx *ctx, caterva_array *a, int level);
int caterva_array_rollback_to(caterva_ctx *ctx, caterva_array *a, int level);
/** sync: CATERVA_SYNC_FULL, CATERVA_SYNC_NORMAL or CATERVA_SYNC_OFF (caterva_schunk_commit). */
int caterva_array_commit(caterva_ctx *ctx, caterva_array *a, int sync);
int caterva_array_rollback(caterva_ctx *ctx, caterva_array *a);

/* -- one commit across several arrays (group.c) -- */

#define CATERVA_GROUP_MAX 128    /**< arrays of one group commit */
#define CATERVA_GROUP_NONE 0     /**< no journal next to the array */
#define CATERVA_GROUP_PENDING 1  /**< a group commit was interrupted before its commit point */
#define CATERVA_GROUP_STALE 2    /**< a journal copy left after its group committed (or torn) */

/** Commit the open transactions of n arrays (local files, distinct) as one: after a crash at
 * any instant, caterva_group_recover finds every array in its state at begin or every one in
 * its new state. The caller holds every array's exclusive lock from begin until this returns;
 * locks (n entries, may be NULL or hold NULLs) get their generation counters incremented
 * once more after the last array commits (caterva_lock_bump). The journal is a file
 * `<path>.cvjournal` next to every array while the commit runs (the protocol is in group.c).
 * sync = 0 skips the fsyncs; any other value is CATERVA_SYNC_FULL (a group commit always
 * syncs each array fully: its journal is removed only once every array is durable). On failure the files are as they were at begin -- or, if even
 * putting them back failed, the journal stays for the next writer's recovery -- and every
 * array object must be rolled back (caterva_array_rollback; those that had committed report
 * that no transaction is open) and opened again. A commit that would rewrite a contiguous
 * file whole (its metalayers changed length) fails with CATERVA_E_UNSUPPORTED. */
int caterva_array_commit_group(caterva_ctx *ctx, caterva_array **a, int n, int sync,
                               caterva_lock **locks);
/** The journal next to the array at path: CATERVA_GROUP_NONE, _PENDING or _STALE, and in
 * *paths (caller frees with caterva_group_free_paths; may be NULL) the real paths of the
 * arrays it names (none when the journal is torn), *n of them. Reads only. */
int caterva_group_journal(caterva_ctx *ctx, const char *path, char ***paths, int *n);
void caterva_group_free_paths(char **paths, int n);
/** Finish the group commit whose journal lies next to path: a pending one puts every array
 * it names back to its state before it (CATERVA_GROUP_PENDING in *outcome), a stale copy is
 * removed (CATERVA_GROUP_STALE); then no copy of it remains. The caller holds the exclusive
 * lock of every array caterva_group_journal names, and reopens handles of them afterwards.
 * Sparse chunk files of the undone commit are left to caterva_schunk_collect. */
int caterva_group_recover(caterva_ctx *ctx, const char *path, int *outcome);

/* -- one commit across several arrays in S3 (group_s3.c; docs/guarantees.md) -- */

/** Before a write transaction over the arrays a[0..n) (sparse frames under s3:// prefixes,
 * opened for writing at their newest version, no transaction open): rolls forward the group
 * commit the leader's record names, and marks every array as a member of the group (an
 * unmarked one gets a commit of its own adding the mark). reopen (n ints, out): the handles
 * that no longer hold the newest version.
 * @return 0 ready; 1 some reopen[i] set: open those arrays again and call again;
 *         CATERVA_E_READONLY when an array belongs to a group of other arrays; other errors. */
int caterva_group_s3_ready(caterva_ctx *ctx, caterva_array **a, int n, int *reopen);
/** Commit the open transactions of a[0..n) as one: written[i] says array i changed; the
 * leader (the smallest prefix) always commits (it carries the record), other unwritten
 * arrays stay in their transaction for the caller to roll back. reopen (out): handles that
 * must be opened again before their next use (on failure, every one staged; on success, a
 * member whose roll-forward is left to the next writer).
 * @return CATERVA_OK committed; CATERVA_E_BUSY another writer committed first (nothing
 *         visible); other errors (nothing visible, unless the message says the commit may
 *         have landed). */
int caterva_group_s3_commit(caterva_ctx *ctx, caterva_array **a, const int *written, int n,
                            int *reopen);
/** Do the handles a[0..n), read after the leader, hold one group commit's state? 1 yes (when
 * the leader has not changed since it was read), 0 a member's roll-forward has not landed
 * (wait, or let the group's next write finish it), < 0 an error. */
int caterva_group_s3_consistent(caterva_ctx *ctx, caterva_array **a, int n);
/** The position in a[0..n) of the group's leader (the smallest prefix), or a negative error. */
int caterva_group_s3_leader(caterva_ctx *ctx, caterva_array **a, int n);

/* -- block statistics (blockstats.c) -- */

/** Per-block statistics: for numeric and boolean little-endian dtypes, every block of every
 * chunk has min, max, sum and the counts of present and missing (NaN) items inside the
 * shape (padding excluded). Arrays created by this library keep them; files from other
 * writers have none until caterva_array_build_stats. Every write of the array (cells,
 * slices, resize, append, copy, transactions with their savepoints and rollbacks) keeps
 * them exact in the same commit as the data: they are stored in the frame's trailer
 * (vlmetalayer `_caterva_blockstats`, layout in blockstats.c). Each chunk's statistics carry
 * a fingerprint of the chunk's stored bytes, checked before first use, so statistics of a
 * chunk that another writer changed are never used (they read as unknown). */

/** How the values of a caterva_block_stats are typed (caterva_array_stats_type). */
#define CATERVA_STATS_NONE  0   /**< the dtype has no statistics */
#define CATERVA_STATS_FLOAT 1   /**< min, max and sum in .f (float16/32/64; NaN is missing) */
#define CATERVA_STATS_INT   2   /**< in .i (int8..int64, bool) */
#define CATERVA_STATS_UINT  3   /**< in .u (uint8..uint64) */

typedef union caterva_scalar {
  double f;
  int64_t i;
  uint64_t u;
} caterva_scalar;

typedef struct caterva_block_stats {
  caterva_scalar min, max;  /**< of the present items (meaningless when nvalid is 0) */
  caterva_scalar sum;       /**< of the present items (integers: exact unless sum_overflow) */
  int64_t nvalid;           /**< items inside the shape that are present (not NaN) */
  int64_t nnan;             /**< items inside the shape that are NaN */
  int sum_overflow;         /**< integer sum did not fit 64 bits (sum unusable) */
} caterva_block_stats;

/** CATERVA_STATS_* for a's dtype (NONE for big-endian, opaque, complex, string items). */
int caterva_array_stats_type(const caterva_array *a);
/** 1 when a keeps block statistics (created here, or stored ones were found or built). */
int caterva_array_has_stats(const caterva_array *a);
/** Statistics of block nblock of chunk nchunk. Returns 1 and fills *st when they are known
 * and exact (the chunk's fingerprint is checked on first use, which reads its stored bytes
 * but decompresses nothing), 0 when unknown, or a negative error. */
int caterva_array_block_stats(caterva_ctx *ctx, caterva_array *a, int64_t nchunk,
                              int32_t nblock, caterva_block_stats *st);
/** Ready the statistics of chunks nchunk[0..n) (numbers in any order) to be asked of
 * caterva_array_block_stats: for a remote array, the chunks among the first of them whose
 * fingerprints are not checked yet (about 48 MB of chunks, counted at their decoded size) are
 * fetched together, in a few waves, and checked, instead of one wave each when asked. Returns
 * how many of nchunk[] it covered from the first on (n for a local array, where it does
 * nothing), or a negative error (the transfers' or out of memory). */
int caterva_array_block_stats_ahead(caterva_ctx *ctx, caterva_array *a, const int64_t *nchunk,
                                    int n);
/** Compute and store the statistics of every chunk that lacks them (decompressing those
 * chunks), in one commit (the array must be writable; inside an open transaction they
 * become part of it). progress (may be NULL) is called after each chunk with the chunks
 * done and the total; a nonzero return stops with CATERVA_E_INVALID and nothing stored.
 * CATERVA_E_UNSUPPORTED when the dtype has no statistics. */
int caterva_array_build_stats(caterva_ctx *ctx, caterva_array *a,
                              int (*progress)(void *arg, int64_t done, int64_t total),
                              void *arg);


/** Block checks: a block decoded from chunk bytes (scans, slices, boxes, reductions that
 * decode; local and remote) is checked against its recorded statistics when they were
 * recorded for these chunk bytes (their block starts agree with the chunk's); a block whose
 * items disagree fails the read with CATERVA_E_CORRUPT, "corrupt block: <path>, chunk N,
 * block M". Blosc2 chunks carry no checksum: this is what catches a flipped byte in a block's
 * compressed bytes. Chunks without recorded statistics are not checked (see guarantees.md). */
#define CATERVA_CHECKS_DEFAULT 0  /**< the library's default: on */
#define CATERVA_CHECKS_ON 1
#define CATERVA_CHECKS_OFF 2
/** Set the check mode of a (CATERVA_CHECKS_*; other values are ignored). */
void caterva_array_set_block_checks(caterva_array *a, int mode);
/** 1 when blocks decoded from a are checked (the mode is on and a has statistics), else 0. */
int caterva_array_block_checks(const caterva_array *a);

/** A bound of a comparison, as SQL gives it: an integer or a double (not NaN). */
typedef struct caterva_bound {
  int is_int;
  int64_t i;
  double f;
} caterva_bound;

/** 0 when the statistics prove that no item of the block satisfies "item OP bound"
 * (compared exactly, as SQLite compares an INTEGER or REAL column with a number; missing
 * items never satisfy a comparison), 1 when some item may. */
int caterva_block_stats_may_match(int stype, const caterva_block_stats *st, int op,
                                  const caterva_bound *b);
/** The fraction of a's blocks that may hold an item matching "item OP bound", from the
 * statistics as loaded (fingerprints not checked: an estimate for query planning; blocks
 * without statistics count as matching). 1.0 without statistics. */
double caterva_array_stats_selectivity(const caterva_array *a, int op, const caterva_bound *b);

/* -- block iterator -- */

/** One block's intersection with the box being iterated. */
typedef struct caterva_block {
  int64_t start[CATERVA_MAX_DIM];   /**< first global coordinate of the intersection */
  int64_t stop[CATERVA_MAX_DIM];    /**< one past the last */
  int64_t origin[CATERVA_MAX_DIM];  /**< global coordinate of the block's item (0,...,0) */
  const int32_t *blockshape;        /**< the array's blockshape (items laid out in C order) */
  const uint8_t *data;              /**< decompressed block (prod(blockshape) items), or NULL
                                         with CATERVA_ITER_NODATA; valid until the next call */
  int64_t nchunk;                   /**< chunk number */
  int32_t nblock;                   /**< block number inside the chunk */
  int uniform;                      /**< 1 when every item of data equals the first (a block
                                         of a zero/NaN/repeated-value chunk, served without
                                         decompression): a caller may work on one item */
} caterva_block;

#define CATERVA_ITER_NODATA 1   /**< visit the blocks but decompress nothing */
/** Decompress the next batch of blocks on a thread of the iterator's own while the caller
 * works on the current one (contexts with 2 threads or more; ignored otherwise). For scans
 * that use every block they visit: the batch after the current one is decompressed even
 * when the caller then stops. Blocks decompressed ahead are counted in ctx when the job is
 * collected: taken, or dropped by a reset or free. */
#define CATERVA_ITER_READAHEAD 2

/** Iterate over the blocks intersecting the box [start, stop) (clipped to the shape; NULL
 * start/stop: the whole array), each exactly once, in C order of chunks and, within a chunk,
 * C order of blocks. Blocks lying wholly in padding are skipped. The needed blocks of a chunk
 * are decompressed together (in parallel on ctx's threads, at most 16 MiB at a time) into
 * memory owned by the iterator; blocks of zero/NaN/uninit/repeated-value chunks are served
 * from one filled block without decompression. The array must not be modified while an
 * iterator over it is in use. */
typedef struct caterva_block_iter caterva_block_iter;
int caterva_block_iter_new(caterva_ctx *ctx, caterva_array *a, const int64_t *start,
                           const int64_t *stop, int flags, caterva_block_iter **out);
/** Start again over another box of the same array, keeping the iterator's buffers (for
 * many small boxes, e.g. lookups). Returns CATERVA_OK. */
int caterva_block_iter_reset(caterva_block_iter *it, const int64_t *start, const int64_t *stop);
/** Advance. Returns 1 and sets *blk (borrowed, valid until the next call) for a block, 0 at
 * the end, or a negative error. */
int caterva_block_iter_next(caterva_block_iter *it, const caterva_block **blk);
/** Visit only the blocks for which keep(arg, nchunk, nblock) returns 1 (0 skips the block
 * without decompressing it; a negative value stops the iteration with that error). NULL
 * removes the filter. Applies from the next chunk entered (set it before the first next). */
void caterva_block_iter_set_filter(caterva_block_iter *it,
                                   int (*keep)(void *arg, int64_t nchunk, int32_t nblock),
                                   void *arg);
/** With a filter set: ahead(arg, nchunk, n) is told, before the filter is asked about
 * chunks nchunk[0..n) of a remote array, that it will be, and returns how many of them (from
 * the first on, at least 1) it made ready, or a negative error that stops the iteration. A
 * filter that reads block statistics passes caterva_array_block_stats_ahead there. NULL: none. */
void caterva_block_iter_set_filter_ahead(caterva_block_iter *it,
                                         int (*ahead)(void *arg, const int64_t *nchunk, int n));
/** Declare the filter's answer a function of the block's values alone (a filter on block
 * statistics; not one that, say, claims a cache entry per block): the blocks of a special
 * chunk (zeros, NaN, one repeated value) are then all kept or all skipped on its answer for
 * the first of them. Off by default: the filter is asked about every block. */
void caterva_block_iter_set_filter_by_value(caterva_block_iter *it, int on);
void caterva_block_iter_free(caterva_block_iter *it);
/** Called by caterva_block_iter_visit for each block, with its place in the visiting order
 * (seq: 0, 1, 2, ... in the iterator's C order) and the worker running it (0 ..
 * caterva_ctx_nthreads - 1; calls with the same worker never overlap). blk and its data are
 * valid only during the call. A negative return fails the visit. */
typedef int (*caterva_block_visit_fn)(void *arg, const caterva_block *blk, int64_t seq,
                                      int worker);
/** Called on the caller's thread once the blocks numbered [seq_lo, seq_hi) have all been
 * visited (the batches follow one another in order). A negative return fails the visit. */
typedef int (*caterva_block_done_fn)(void *arg, int64_t seq_lo, int64_t seq_hi);
/** For caterva_block_iter_visit: blocks for which owner(arg, blk) gives the same value (blk
 * describes the block: its box, origin, chunk and block numbers; data is NULL) are handed to
 * the visit function one at a time, in sequence order, by one worker per batch, while
 * blocks of different owners go to the threads at once. A caller whose blocks of different
 * owners touch disjoint results can thus fold each block into them from the worker, without
 * locks, in an order that does not depend on the number of threads. NULL removes it. */
void caterva_block_iter_set_owner(caterva_block_iter *it,
                                  int64_t (*owner)(void *arg, const caterva_block *blk),
                                  void *arg);
/** Visit every remaining block of the iterator's box (those its filter keeps) at once:
 * batches of at most max_batch blocks (values outside 1..8192 mean 8192) are decompressed
 * and handed to fn on ctx's threads, then done (may be NULL) is called for the batch; blocks
 * of special chunks are handed out on the caller's thread. Which blocks form a batch depends
 * on the box, the filter, max_batch and the storage (a remote array's batches hold one chunk
 * each), never on the number of threads, so a caller that combines the blocks' results in
 * sequence order in done gets the same result with any number of threads. Remote arrays are
 * read as next() reads them (fetched ahead in waves).
 * The iterator is at its end afterwards (reset it to use it again). Not with
 * CATERVA_ITER_NODATA (CATERVA_E_INVALID). */
int caterva_block_iter_visit(caterva_block_iter *it, int32_t max_batch,
                             caterva_block_visit_fn fn, caterva_block_done_fn done, void *arg);
/** For a remote array: fetch now, in a few concurrent waves, the bytes of the blocks the
 * iterator's box needs (those its filter keeps), up to about max_bytes of blocks
 * (decompressed size; <= 0: a default of 48 MiB), so that later reads of those blocks -- by
 * this iterator, or one block at a time by other iterators -- find them in the array's cache.
 * Call it before the first caterva_block_iter_next. Nothing happens for local arrays. */
int caterva_block_iter_prefetch(caterva_block_iter *it, int64_t max_bytes);
/** @} */

#endif /* CATERVA_ARRAY_H */
