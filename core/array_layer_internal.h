/*
 * array_layer_internal.h -- internals of the N-d array layer: the `caterva` and `b2nd` metalayers,
 * NumPy dtype strings, default partitioning, and the chunk/block geometry shared by
 * array.c and array_iter.c. Not installed; names start with cat_.
 */
#ifndef CAT_ARRAY_LAYER_INTERNAL_H
#define CAT_ARRAY_LAYER_INTERNAL_H

#include "cat_internal.h"

/* ---- metalayers (array_meta.c) ------------------------------------------------------ */

#define CAT_META_B2ND "b2nd"
#define CAT_META_CATERVA "caterva"
#define CAT_CATERVA_MAX_DIM 8     /* the caterva library's limit */

/* What an array metalayer says. itemsize is not in it (the frame typesize is). */
typedef struct cat_array_meta {
  int ndim;
  int64_t shape[CATERVA_MAX_DIM];
  int32_t chunkshape[CATERVA_MAX_DIM];
  int32_t blockshape[CATERVA_MAX_DIM];
  int dtype_format;                     /* 0 = NumPy dtype string */
  const char *dtype;                    /* borrowed, not NUL-terminated; NULL: no dtype entry */
  size_t dtype_len;
  int32_t shape_pos[CATERVA_MAX_DIM];   /* decode: offset of shape[k]'s 8 payload bytes after
                                           a D3 marker, or -1 (another int encoding) */
} cat_array_meta;

/* Exact encoded sizes (fixed-width markers, so they depend on ndim and the dtype length only). */
size_t cat_meta_caterva_size(int ndim);
size_t cat_meta_b2nd_size(int ndim, size_t dtype_len);

/* Encode into buf (capacity cap); *len receives the size. The caterva form needs ndim <= 8.
 * m must describe a valid array (see cat_meta_validate). */
int cat_meta_encode_caterva(caterva_ctx *ctx, const cat_array_meta *m, uint8_t *buf, size_t cap,
                            size_t *len);
int cat_meta_encode_b2nd(caterva_ctx *ctx, const cat_array_meta *m, uint8_t *buf, size_t cap,
                         size_t *len);

/* Decode untrusted metalayer bytes. is_b2nd selects the b2nd limits (16 dims, optional dtype)
 * or the caterva ones (8 dims, 5 entries). The result is validated with cat_meta_validate
 * (itemsize unknown here: 1 is used for the size check; see cat_geom_init). The dtype
 * points into buf. */
int cat_meta_decode(caterva_ctx *ctx, const uint8_t *buf, size_t len, int is_b2nd,
                    cat_array_meta *m);

/* Check shapes: ndim in range, shape >= 0, chunk/block shapes > 0 where shape > 0 (>= 0
 * elsewhere), chunk nbytes = prod(extchunkshape) * itemsize fits a chunk. */
int cat_meta_validate(caterva_ctx *ctx, const cat_array_meta *m, int max_ndim, int itemsize);

/* Rewrite the shape in metalayer bytes decoded into m (same length, in place).
 * CATERVA_E_UNSUPPORTED if the writer did not use fixed-width (D3) shape entries. */
int cat_meta_patch_shape(caterva_ctx *ctx, uint8_t *buf, size_t len, const cat_array_meta *m,
                         const int64_t *shape);

/* A dtype string for items of itemsize bytes when none is given: "|S<itemsize>", as
 * c-blosc2's b2nd_create_ctx stores. */
void cat_dtype_default(int itemsize, char *buf, size_t cap);

/* ---- default partitioning (array_meta.c) --------------------------------------------- */

#define CAT_DEFAULT_BLOCK_BYTES (64 * 1024)      /* a fraction of a core's L2 */
#define CAT_DEFAULT_CHUNK_BYTES (4 * 1024 * 1024) /* a few MB */
/* Automatic partitions of an array created with extent 0 along its first axis are chosen
 * for growth along it: chunks of at least CAT_GROWTH_CHUNK_BYTES, at most CAT_GROWTH_EXTENT
 * rows (cat_default_partition). */
#define CAT_GROWTH_EXTENT (1 << 20)
#define CAT_GROWTH_CHUNK_BYTES (1024 * 1024)

/* Fill the zero entries of chunkshape / blockshape (all of one or none) for shape.
 * chunkshape all zero: chosen from shape; blockshape all zero: chosen from chunkshape.
 * Returns CATERVA_E_INVALID when only some entries are zero. */
int cat_default_partition(caterva_ctx *ctx, int ndim, const int64_t *shape, int itemsize,
                          int32_t *chunkshape, int32_t *blockshape);

/* ---- geometry (array_iter.c) -------------------------------------------------------- */

/* Derived sizes of an array's two-level partitioning; see spec §5.2. */
typedef struct cat_geom {
  int ndim;
  int itemsize;
  int64_t shape[CATERVA_MAX_DIM];
  int32_t chunkshape[CATERVA_MAX_DIM];
  int32_t blockshape[CATERVA_MAX_DIM];
  int32_t extchunkshape[CATERVA_MAX_DIM]; /* chunkshape rounded up to a multiple of blockshape */
  int64_t gridshape[CATERVA_MAX_DIM];     /* chunks per axis */
  int32_t blockgrid[CATERVA_MAX_DIM];     /* blocks per chunk per axis */
  int64_t nitems;                         /* prod(shape) */
  int64_t nchunks;                        /* prod(gridshape); 0 with a zero-length axis */
  int32_t nblocks;                        /* blocks per chunk */
  int32_t blockitems;                     /* prod(blockshape) */
  int32_t blocksize;                      /* blockitems * itemsize */
  int32_t chunksize;                      /* prod(extchunkshape) * itemsize */
  int nodata_axis;                        /* first axis whose chunk or block extent is 0, or
                                             -1; such an array holds no item and can never
                                             hold one (see cat_array_check_writable) */
} cat_geom;

/* Compute the geometry of a validated metalayer for itemsize. */
int cat_geom_init(caterva_ctx *ctx, cat_geom *g, const cat_array_meta *m, int itemsize);

/* Grid coordinates of chunk number n (C order), and back. */
void cat_geom_chunk_coords(const cat_geom *g, int64_t n, int64_t *cc);
int64_t cat_geom_chunk_number(const cat_geom *g, const int64_t *cc);

/* Clip [start, stop) to the shape. Returns 1 if the clipped box is non-empty, else 0.
 * NULL start/stop mean the whole array. */
int cat_geom_clip(const cat_geom *g, const int64_t *start, const int64_t *stop, int64_t *cstart,
                  int64_t *cstop);

/* Copy the intersection [lo, hi) of a block (whose item (0,...,0) has global coordinates
 * origin, laid out C-order over blockshape) with a C-order buffer covering the box
 * [bstart, bstart + bshape). to_block: CAT_TO_BLOCK copies buffer -> block, CAT_TO_BUF block ->
 * buffer, CAT_TO_BUF_STREAM the same with non-temporal stores where the buffer allows (x86-64,
 * 8-byte aligned runs; for buffers much larger than the caches; ends with a store fence).
 * Contiguous runs are merged across trailing axes. buf == NULL (with to_block) zeroes the
 * intersection in the block instead; bstart/bshape are then only used for merging runs. */
#define CAT_TO_BUF 0
#define CAT_TO_BLOCK 1
#define CAT_TO_BUF_STREAM 2
void cat_copy_box(const cat_geom *g, uint8_t *block, const int64_t *origin, const int64_t *lo,
                  const int64_t *hi, uint8_t *buf, const int64_t *bstart, const int64_t *bshape,
                  int to_block);

/* Read the rest of an iterator's box (fresh from caterva_block_iter_new or _reset, no filter
 * relied upon: every block of the box is read) into a C-order buffer covering [bstart,
 * bstart + bshape): each block of a plainly compressed chunk is decoded and copied into
 * place at once, on the context's threads, without a batch buffer; other chunks as
 * caterva_block_iter_next serves them. The iterator is exhausted afterwards. */
int cat_block_iter_read_all(caterva_block_iter *it, uint8_t *buf, const int64_t *bstart,
                            const int64_t *bshape);

/* Fill n items of itemsize bytes at dst with the special content of a chunk:
 * zeros (ZERO, UNINIT), NaN (NAN; itemsize 4 or 8) or value (VALUE). */
void cat_fill_items(uint8_t *dst, int64_t n, int itemsize, int special, const uint8_t *value);

/* IEEE half precision to double (exact; blockstats.c). */
double cat_half_to_double(uint16_t h);

#define CAT_FILL_MAX 16   /* widest item a fill value is kept for */

/* ---- the array object (array.c) ------------------------------------------------------ */

typedef struct cat_wentry cat_wentry;
typedef struct cat_bstats cat_bstats;
typedef struct cat_wcache cat_wcache;
typedef struct cat_coord_slot cat_coord_slot;

struct caterva_array {
  caterva_schunk *sc;                 /* owned */
  cat_geom g;
  uint32_t geom_gen;                  /* changes whenever g is set (chunk numbering may change) */
  char *dtype;                        /* b2nd dtype string, or NULL */
  int has_b2nd, has_caterva;          /* which metalayers the frame carries */
  uint8_t fill[CAT_FILL_MAX];         /* the fill item (first itemsize bytes; wider items: 0) */
  int fill_stored;                    /* it comes from the `_FillValue` attribute */
  cat_wcache *wc;                     /* write-back cache of chunk images, or NULL */
  cat_bstats *bs;                     /* block statistics (blockstats.c), or NULL: none */
  int64_t wbudget;                    /* its size in bytes (0: default) */
  cat_coord_slot *coords;             /* coords_ndim coordinates once read, or NULL */
  int coords_ndim;
  int check_blocks;                   /* CATERVA_CHECKS_*: decoded blocks checked against
                                         their statistics (blockstats.c) */
};

/* array_coords.c: forget the coordinates read (they are read again when asked for). */
void cat_array_coords_reset(caterva_array *a);
/* May the array take new_shape? Not beyond the labels of an explicit coordinate. */
int cat_array_coords_allow_shape(caterva_ctx *ctx, caterva_array *a, const int64_t *new_shape);

/* A chunk's statistics record computed ahead (wstore.c), opaque outside blockstats.c. */
typedef struct bs_rec cat_bs_rec;

/* ---- imgpool.c: the write cache's chunk images (slabs huge pages can back) ------------- */

typedef struct cat_imgpool cat_imgpool;
/* A pool of images of size bytes (NULL: no memory). */
cat_imgpool *cat_imgpool_new(size_t size);
/* An image (contents undefined), or NULL without memory. */
uint8_t *cat_imgpool_get(cat_imgpool *p);
/* Give an image from p back (NULL: nothing). */
void cat_imgpool_put(cat_imgpool *p, uint8_t *img);
/* Free p and its slabs: images still out become invalid (p may be NULL). */
void cat_imgpool_free(cat_imgpool *p);
/* Tests: take (hold != 0) or release the lock of the slabs the process keeps (a fork meanwhile
 * must not leave it taken in the child). */
void cat_imgpool_test_hold(int hold);

/* ---- wstore.c: full chunk images compressed on a worker thread (wcache_store.c uses it)  */

typedef struct cat_wstore cat_wstore;
/* A finished job: chunk nchunk's image (the caller's, from its pool) and its compressed bytes
 * (owned; cbytes < 0:
 * the error, errmsg its message), with its statistics record (owned, or NULL). */
typedef struct cat_wdone {
  int64_t nchunk;
  uint8_t *img;
  uint8_t *cbuf;
  int32_t cbytes;
  cat_bs_rec *rec;
  void *arg;                /* a job of the pusher's own (cat_ws_push_fn): its state, owned */
  void (*arg_free)(void *arg);
  char errmsg[CAT_ERRMSG_SIZE];
} cat_wdone;
/* The work of a job pushed with cat_ws_push_fn, in place of compressing d->img whole: it sets
 * d->cbuf, d->cbytes and d->rec like that would (or an error in d->cbytes and d->errmsg),
 * reading only d, cp, g and the statistics' item type of a; run on the worker or on a
 * waiting caller with that thread's ctx. */
typedef void (*cat_ws_fn)(caterva_ctx *ctx, cat_wdone *d, const caterva_cparams *cp,
                          const cat_geom *g, const caterva_array *a);
/* The job of cat_ws_push: d->img compressed whole with its statistics (a cat_ws_fn, for jobs
 * of cat_ws_push_fn that end with it). */
void cat_ws_compress(caterva_ctx *ctx, cat_wdone *d, const caterva_cparams *cp,
                     const cat_geom *g, const caterva_array *a);
/* A queue with its (not yet started) worker for chunks of chunksize bytes; NULL: no memory. */
cat_wstore *cat_ws_new(int32_t chunksize);
/* Queue img, the whole image of a's chunk nchunk (it comes back with the result), to be
 * compressed with cp. The queue must not be full (cat_ws_full: pop first). */
int cat_ws_push(cat_wstore *ws, const caterva_array *a, const caterva_cparams *cp,
                int64_t nchunk, uint8_t *img);
/* Like cat_ws_push for a job that fn does: arg comes back in the result, owned by it (freed
 * with arg_free by cat_ws_done_free); when the push fails (< 0) it stays the caller's. */
int cat_ws_push_fn(cat_wstore *ws, const caterva_array *a, const caterva_cparams *cp,
                   int64_t nchunk, uint8_t *img, cat_ws_fn fn, void *arg,
                   void (*arg_free)(void *arg));
int cat_ws_full(const cat_wstore *ws);
/* Some job queued (ws may be NULL). */
int cat_ws_queued(const cat_wstore *ws);
/* Chunk nchunk queued. */
int cat_ws_holds(const cat_wstore *ws, int64_t nchunk);
/* The oldest job into *out once finished (waiting for it when wait; meanwhile, with ctx, the
 * caller compresses queued chunks itself): 1, or 0 when none is (finished). The caller owns
 * *out: cat_ws_done_free frees all but the image, which goes back where it came from. */
int cat_ws_pop(cat_wstore *ws, caterva_ctx *ctx, int wait, cat_wdone *out);
void cat_ws_done_free(cat_wdone *d);
/* Wait for every job and drop them (a rollback); their images go to pool. */
void cat_ws_discard(cat_wstore *ws, cat_imgpool *pool);
/* Discard, stop the worker, free (ws may be NULL). */
void cat_ws_free(cat_wstore *ws, cat_imgpool *pool);

/* ---- array_txn.c: what wcache.c and array.c build on ------------------------------------ */

/* A NUL-terminated malloc'ed copy of n bytes of s (s may be NULL when n is 0), or NULL. */
char *cat_strndup(const char *s, size_t n);
/* Compression parameters for this array's chunks. */
caterva_cparams cat_array_chunk_cparams(const caterva_array *a);
/* Fill a chunk image with chunk n's current content. */
int cat_array_read_chunk(caterva_ctx *ctx, caterva_array *a, int64_t n, uint8_t *chunkbuf);
/* (Re)derive the geometry and dtype from the frame's metalayers (after a rollback). */
int cat_array_load_meta(caterva_ctx *ctx, caterva_array *a);

/* The one check of every write (caterva_array_begin and cat_array_txn_enter call it): an
 * array whose chunk or block shape has a zero extent holds no item (cat_meta_validate allows
 * it only on an axis of length 0) and cannot take one, since every position would need a
 * chunk or block of no items; writing or growing it is CATERVA_E_READONLY, so that no write
 * path ever divides by that extent. Reading it gives the empty array. */
int cat_array_check_writable(caterva_ctx *ctx, const caterva_array *a);

/* Run a write of the array in a transaction of its own when none is open (file stores),
 * so that its chunks and their statistics land in one commit: enter returns 1 when it
 * opened one (0 otherwise, or an error); leave (with the write's result rc) stores the
 * statistics and commits, or rolls back when rc < 0, and returns the final result. Memory
 * stores get their statistics stored at leave. */
int cat_array_txn_enter(caterva_ctx *ctx, caterva_array *a);
int cat_array_txn_leave(caterva_ctx *ctx, caterva_array *a, int own, int rc);
/* caterva_array_commit in two halves (wcache.c): everything fallible before the commit
 * point (flush the cache, store the statistics), then the super-chunk's commit. The group
 * commit (group.c) runs the first half of every array before the first second half. */
int cat_array_commit_prepare(caterva_ctx *ctx, caterva_array *a);
int cat_array_commit_finish(caterva_ctx *ctx, caterva_array *a, int sync);

/* ---- wcache.c: the write-back cache (above array_txn.c) -------------------------------- */

void cat_wcache_free(cat_wcache *wc);
/* Keep the cache consistent after a resize along the first axis. */
void cat_wcache_reshaped(caterva_array *a);
/* Store the chunks written wholly that the write-behind worker still holds (wstore.c), in
 * the order they were completed: before anything writes chunks other than through the cache
 * or changes the geometry. Entries being filled stay, in the chunk's layout (a resize reads
 * their bits). */
int cat_wcache_settle(caterva_ctx *ctx, caterva_array *a);
/* Store the pending images of the chunks that meet the box [start, stop) (after
 * cat_wcache_settle): a write of the box that follows, not through the cache, then comes after
 * the cells they hold, as it came after them (else their cells would overwrite it at the
 * commit). */
int cat_wcache_store_box(caterva_ctx *ctx, caterva_array *a, const int64_t *start,
                         const int64_t *stop);
/* How many chunks written in part a's writes have left to the worker (tests). */
int64_t cat_wcache_handed(const caterva_array *a);

/* ---- block statistics (blockstats.c) ---------------------------------------------------- */

/* Largest stored form of the statistics: one vlmetalayer chunk holds it (a multiple of 8 so
 * that its padded size stays below the limit), about 38 million chunks of one block. It is
 * read a page at a time (blockstats_stored.c), so its size costs nothing at open. */
#define CAT_BS_MAX (CATERVA_CHUNK_MAX_NBYTES / 8 * 8)

void cat_bs_free(cat_bstats *bs);
/* Keep statistics for a new array without chunks, when its dtype has them. */
int cat_bs_enable_new(caterva_ctx *ctx, caterva_array *a);
/* Take the stored statistics of an opened array when they describe it. */
int cat_bs_load(caterva_ctx *ctx, caterva_array *a);
/* The vlmetalayer the block statistics are stored in (blockstats_stored.c): derived data that
 * each array keeps for its own chunks, not an attribute that a copy takes along. */
#define CAT_BS_ATTR "_caterva_blockstats"
/* The schunk edit hook (arg: the array). */
void cat_bs_edit_hook(void *arg, caterva_ctx *ctx, int op, int64_t pos, const uint8_t *chunk,
                      int32_t cbytes, int special);
/* The remap hook (cat_sc_remap): records follow their chunks, new chunks get new records. */
void cat_bs_remap_hook(void *arg, caterva_ctx *ctx, const int64_t *map, int64_t n,
                       const uint8_t *chunk, int32_t cbytes, int special);
/* Chunk n of a when one item repeats through it: its index entry's special kind, else a
 * stored special chunk's (cat_sc_stored_uniform), except that a stored chunk whose record of
 * statistics is in memory is not looked at (CATERVA_SPECIAL_NONE): it is read through that
 * record, as before, and the small stored chunks of a tiny partition are not parsed once per
 * block. A negative error of the index entry. */
int cat_bs_chunk_uniform(const caterva_array *a, int64_t n, const uint8_t **value,
                         int32_t *vsize);
/* The sum that adding v to 0.0 n times in double gives, as a record of statistics sums a
 * block of one repeated value item by item, in O(binades) steps; 0.0 for n <= 0, a zero or
 * a NaN v (NaN items count as missing). */
double cat_bs_repeat_sum(double v, int64_t n);
/* The uncompressed image of the chunk about to be stored at pos (NULL: none), so that the
 * hook need not decompress it; or, for a raw copy, the record of a's chunk apos. */
void cat_bs_hint(caterva_array *a, int64_t pos, const uint8_t *img);
/* Like cat_bs_hint for a chunk re-encoded only in the blocks where dirty[b] != 0 (img is
 * right there only); the other blocks keep their statistics, which the caller has checked
 * against the chunk before the edit (caterva_array_block_stats). */
void cat_bs_hint_blocks(caterva_array *a, int64_t pos, const uint8_t *img, const uint8_t *dirty);
void cat_bs_hint_copy(caterva_array *b, int64_t pos, caterva_array *a, int64_t apos);
/* The record of chunk bytes (chunk, cbytes) whose image is img, for position n of geometry g;
 * NULL when a keeps no statistics or out of memory (the hook then computes it). Reads only
 * a's statistics' item type, so it may run on another thread while the caller works on a. */
cat_bs_rec *cat_bs_rec_compute(const caterva_array *a, const cat_geom *g, int64_t n,
                               const uint8_t *img, const uint8_t *chunk, int32_t cbytes);
/* Like cat_bs_hint with a record computed ahead for the chunk about to be stored at pos (r
 * NULL: no hint); the caller keeps its reference and drops it after the store. */
void cat_bs_hint_rec(caterva_array *a, int64_t pos, cat_bs_rec *r);
void cat_bs_rec_drop(cat_bs_rec *r);
/* The known and checked record of a's chunk n with a reference for the caller
 * (cat_bs_rec_drop), or NULL: no statistics, or none known (an error here is only that). */
cat_bs_rec *cat_bs_rec_ref(caterva_ctx *ctx, caterva_array *a, int64_t n);
/* Like cat_bs_rec_compute for chunk n re-encoded only in the blocks where dirty[b] != 0 (img
 * right in those), the other blocks' statistics taken from old (a record of cat_bs_rec_ref);
 * chunk/cbytes its new bytes. Reads a's statistics, never changes them (the worker's). */
cat_bs_rec *cat_bs_rec_patched(const caterva_array *a, const cat_geom *g, int64_t n,
                               const uint8_t *img, const uint8_t *dirty, const cat_bs_rec *old,
                               const uint8_t *chunk, int32_t cbytes);
/* r is the record a's chunk n has now. */
int cat_bs_rec_is(const caterva_array *a, int64_t n, const cat_bs_rec *r);
/* While a resize renumbers chunks: the geometry new chunks are computed for (NULL: a->g). */
void cat_bs_set_geom(caterva_array *a, const cat_geom *g);
/* After a resize from old_shape: recompute the chunks whose part inside the shape changed. */
int cat_bs_reshaped(caterva_ctx *ctx, caterva_array *a, const int64_t *old_shape);
/* Write the statistics into the trailer when they changed. */
int cat_bs_store(caterva_ctx *ctx, caterva_array *a);
/* The block starts recorded for chunk nchunk (a->g.nblocks of them) into out: 1, or 0 when
 * none are recorded. Unverified: a remote reader checks them against the chunk's header. */
int cat_bs_block_starts(const caterva_array *a, int64_t nchunk, uint32_t *out);
/* Chunks nchunk[0..n) are about to be asked for their block starts: for a remote array, the
 * records not read yet are fetched in one wave (instead of a wave a page when asked). */
void cat_bs_starts_ahead(const caterva_array *a, const int64_t *nchunk, int n);
/* Are decoded blocks of a checked against their statistics (its CATERVA_CHECKS_* mode)? */
int cat_array_checks_blocks(const caterva_array *a);
/* The record that decoded blocks of chunk nchunk (cbytes bytes at chunk, of which at least the
 * header and block-start table are present) are checked against, or NULL when there is none
 * to check with: checks off, no statistics, or recorded starts that are not the chunk's.
 * Reads only; valid while the array is not modified (iterators require that anyway). */
const cat_bs_rec *cat_bs_check_rec(const caterva_array *a, int64_t nchunk, const uint8_t *chunk,
                                   int32_t cbytes);
/* What differs between block nblock's decoded items (blocksize bytes at data) and r: 0, or
 * the CAT_BS_BAD_* naming the first statistic that does. Touches no context: workers call it. */
#define CAT_BS_BAD_COUNT 1
#define CAT_BS_BAD_NAN 2
#define CAT_BS_BAD_MIN 3
#define CAT_BS_BAD_MAX 4
#define CAT_BS_BAD_SUM 5
int cat_bs_check_block(const caterva_array *a, const cat_bs_rec *r, int64_t nchunk,
                       int32_t nblock, const uint8_t *data);
/* The corrupt-block error (CATERVA_E_CORRUPT) naming the array, the chunk and the block. */
int cat_bs_corrupt(caterva_ctx *ctx, const caterva_array *a, int64_t nchunk, int32_t nblock,
                   int what);
/* Check blocks[0, n) of chunk nchunk, decoded one after the other at data: CATERVA_OK or the
 * corrupt-block error. */
int cat_bs_check_blocks(caterva_ctx *ctx, const caterva_array *a, int64_t nchunk,
                        const uint8_t *chunk, int32_t cbytes, const int32_t *blocks, int32_t n,
                        const uint8_t *data);
/* Transactions: begin, savepoint marks, release, rollback to a mark or to the start, end
 * (commit). */
int cat_bs_begin(caterva_ctx *ctx, caterva_array *a);
int cat_bs_mark(caterva_ctx *ctx, caterva_array *a, int level);
void cat_bs_release(caterva_array *a, int level);
void cat_bs_rollback_to(caterva_array *a, int level);
void cat_bs_rollback(caterva_array *a);
void cat_bs_end(caterva_array *a);
/* Compute the statistics of every chunk that has none (or none that still matches it), for
 * an array whose dtype has statistics (caterva_array_stats_type), inside the caller's
 * transaction (caterva_array_build_stats in array.c opens it). */
int cat_bs_build(caterva_ctx *ctx, caterva_array *a,
                 int (*progress)(void *arg, int64_t done, int64_t total), void *arg);

#endif /* CAT_ARRAY_LAYER_INTERNAL_H */
