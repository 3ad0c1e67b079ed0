/*
 * cat_internal.h -- shared internals of libcaterva: msgpack readers, the thread pool, block
 * decoding to a consumer, chunk edit hooks, the context and the codecs, on top of the base
 * (cat_base.h: errors, byte order, checked arithmetic, file calls).
 * Not installed; names here start with cat_ and are not exported from the shared library.
 */
#ifndef CAT_INTERNAL_H
#define CAT_INTERNAL_H

#include "cat_base.h"

/* ---- msgpack values over a cursor (mpread.c) ----------------------------------------- */

/* Any msgpack integer as int64 (uint64 above INT64_MAX is refused). */
bool cat_mp_int(cat_rdr *r, int64_t *v);
/* Map or array header of any width: the number of entries. */
bool cat_mp_map(cat_rdr *r, uint32_t *n);
bool cat_mp_array(cat_rdr *r, uint32_t *n);
/* A str of any width; its bytes are borrowed from the cursor's buffer. */
bool cat_mp_str(cat_rdr *r, const uint8_t **p, uint32_t *n);
/* Any msgpack float (float32, float64) or integer, as a double. */
bool cat_mp_number(cat_rdr *r, double *v);
/* The C6 marker and u32 length of a bin32 (the payload is not consumed). */
bool cat_mp_bin32_len(cat_rdr *r, uint32_t *n);
/* A nil (consumed), or false (nothing consumed). */
bool cat_mp_nil(cat_rdr *r);
/* Skip one value of any type, nesting at most depth levels. */
bool cat_mp_skip(cat_rdr *r, int depth);

/* ---- thread pool ---------------------------------------------------------------------- */

/* Runs fn(arg, task, worker) for task in [0, ntasks) on up to nthreads threads (the caller is
 * one of them). worker is in [0, nthreads) and identifies the per-thread scratch slot.
 * Returns the first negative value returned by a task (the remaining tasks still run or are
 * skipped), else 0. */
typedef int (*cat_task_fn)(void *arg, int64_t task, int worker);
typedef struct cat_pool cat_pool;
int cat_pool_new(int nthreads, cat_pool **out);
void cat_pool_free(cat_pool *pool);
int cat_pool_run(cat_pool *pool, int64_t ntasks, cat_task_fn fn, void *arg);
/* fn(arg) run later on one of the pool's workers, the caller not waiting for it: 0, or -1
 * when the pool has no worker or no memory for it (then the caller runs it itself). Posted
 * tasks run before cat_pool_free returns. */
int cat_pool_post(cat_pool *pool, void (*fn)(void *), void *arg);

/* ---- decoding blocks straight to their consumer (chunk.c) ------------------------------ */

/* Called once per requested block with its decoded bytes (valid only during the call: in
 * worker w's scratch, or in the chunk itself), from up to ctx->nthreads threads at once; arg
 * is the request's, nblock the block's number in its chunk. A negative return fails the
 * whole call (reported as corrupt data unless it is CATERVA_E_NOMEM). */
typedef int (*cat_block_fn)(void *arg, int32_t nblock, const uint8_t *data, int w);
/* Blocks blocks[0, n) of one chunk (len bytes at chunk), and the argument for fn. */
typedef struct cat_chunk_req {
  const uint8_t *chunk;
  size_t len;
  const int32_t *blocks;
  int32_t n;
  void *arg;
} cat_chunk_req;
/* Decode the requested blocks of nreq chunks (each checked like
 * caterva_chunk_decompress_blocks) and hand each to fn, all of them as one batch of tasks on
 * the context's pool when it is large enough (chunks filtered with DELTA: one batch each).
 * Returns the bytes decoded or a negative error (with a message in ctx). */
int64_t cat_chunks_decode_each(caterva_ctx *ctx, const cat_chunk_req *req, int32_t nreq,
                               cat_block_fn fn);
/* Blocks that must be handed to fn one after the other, in order: group g is the blocks
 * numbered order[first[g] .. first[g + 1]), increasing (a block's number: its place in the
 * requests, req[0]'s blocks first), every block in exactly one group. */
typedef struct cat_groups {
  const int64_t *order;
  const int64_t *first;      /* n + 1 entries */
  int64_t n;
} cat_groups;
/* cat_chunks_decode_each, but a group's blocks are decoded and handed to fn by one task, in
 * increasing order (groups run at once on the pool's threads; with DELTA chunks, or when the batch
 * is too small to share, every block runs on the caller's thread in request order). */
int64_t cat_chunks_decode_groups(caterva_ctx *ctx, const cat_chunk_req *req, int32_t nreq,
                                 cat_block_fn fn, const cat_groups *groups);

/* ---- what a reader of some blocks of a chunk needs (chunk.c; remote frames) ------------ */

typedef struct cat_chunk_span {
  int32_t cbytes, nbytes, blocksize, nblocks;
  int32_t prefix;    /* bytes [0, prefix) every block needs: header, block starts, dictionary */
  int32_t table;     /* offset of the block-start table (0: none) */
  bool plain;        /* memcpyed: block j is bytes [prefix + j * blocksize, ...) */
  bool delta_ref;    /* DELTA: every block needs block 0 too */
  bool whole_only;   /* special or Blosc 1.x: read it whole */
} cat_chunk_span;
/* The layout of a chunk of cbytes bytes whose first `have` are present. CATERVA_E_NOSPACE
 * with *need set when the header part to parse is longer than have. */
int cat_chunk_span_init(const uint8_t *chunk, int32_t have, int32_t cbytes, cat_chunk_span *sp,
                        int32_t *need);
/* With block j's bytes present in [its start, hi): the offset where its streams end, read
 * with the decoder's framing, or -1 when they run past hi (the chunk is then read whole). */
int32_t cat_chunk_span_reach(const uint8_t *chunk, int32_t cbytes, int32_t j, int32_t hi);

/* Items [item, item + n) of a chunk (len bytes) whose block holding them is split into the
 * byte planes of a shuffle of its typesize and has no other filter to undo (the layout of a
 * frame's offsets index), read from the planes' streams without decoding the block: zero,
 * run and raw streams cost nothing, a codec stream is decoded into ctx's scratch (worker 0).
 * Writes n * typesize bytes to out and returns 1; 0 when the chunk or block has another
 * layout or the items do not lie in one block (decode the block then); a negative error
 * (with a message) when a stream does not decode. */
int cat_chunk_items_planes(caterva_ctx *ctx, const void *chunk, size_t len, int32_t item,
                           int32_t n, uint8_t *out);

/* ---- re-encoding the changed blocks of a chunk (chunk.c; the write cache) ---------------- */

/* The chunk old (oldlen bytes) with every block j where dirty[j] != 0 compressed anew from
 * src (the chunk's new content, nbytes; only those blocks' bytes are read) and every other
 * block's compressed bytes copied as they are; the block-start table is rewritten. Writes it
 * to dst and returns its cbytes. CATERVA_E_UNSUPPORTED (no message) when old's blocks are
 * not encoded as cp would encode them (see chunk.c: special, memcpyed, dictionary, DELTA,
 * another block size, typesize, split, filters or codec format; Blosc 1.x) or the result
 * would not be smaller than the memcpyed chunk: compress src whole instead. dirty has one
 * flag per block of old; dstcap as for caterva_chunk_compress. */
int32_t cat_chunk_patch(caterva_ctx *ctx, const caterva_cparams *cp, const void *old,
                        int32_t oldlen, const void *src, int32_t nbytes, const uint8_t *dirty,
                        void *dst, int32_t dstcap);
/* True when old's blocks are encoded as cp would encode nbytes bytes, so that cat_chunk_patch
 * can patch it (the checks it makes before any work); then old has cp's block size, and each
 * of its blocks decodes to that many bytes. Reads the header only. */
bool cat_chunk_patchable(const caterva_cparams *cp, const void *old, int32_t oldlen,
                         int32_t nbytes);

/* Writes bytes [off, off + len) of a content being compressed into dst. */
typedef void (*cat_fill_fn)(void *arg, int64_t off, int32_t len, uint8_t *dst);
/* True when bytes [off, off + len) are what the old chunk holds (its block may be copied). */
typedef bool (*cat_keep_fn)(void *arg, int64_t off, int32_t len);

/* The chunk caterva_chunk_compress makes of nbytes bytes, produced by fill a batch of blocks
 * at a time (never held whole). With old (oldlen bytes, a chunk of the same content length
 * that cat_chunk_patch could patch) and keep, every block keep accepts is copied from old
 * instead of being produced. On success *out is a malloc'ed chunk of *cbytes bytes, owned by
 * the caller; negative with a message otherwise. */
int cat_chunk_build(caterva_ctx *ctx, const caterva_cparams *cp, int32_t nbytes,
                    cat_fill_fn fill, cat_keep_fn keep, void *arg, const void *old,
                    int32_t oldlen, uint8_t **out, int32_t *cbytes);

/* ---- remote reads (schunk.c, frame_remote.c) --------------------------------------------- */

/* Blocks a reader is about to decode from chunk nchunk (nblocks < 0: the whole chunk). */
typedef struct cat_want {
  int64_t nchunk;
  const int32_t *blocks;
  int32_t nblocks;
  /* where the chunk's blocks start, as recorded when it was written (all of its blocks), or
   * NULL: then the blocks may be asked with the header, in the same wave (checked against
   * the header when it arrives) */
  const uint32_t *starts;
} cat_want;
/* A super-chunk read from a server: 1, else 0. */
int cat_sc_is_remote(const caterva_schunk *sc);
/* Stored chunk i's content when one item repeats through it and its bytes are at hand
 * without reading anything but the index (a special chunk stored as bytes in a local
 * contiguous frame: cat_file_small_chunk): CATERVA_SPECIAL_ZERO, _NAN, _UNINIT or _VALUE (its
 * value's bytes borrowed in *value, *vsize of them), else CATERVA_SPECIAL_NONE (a regular
 * chunk, or not known so cheaply). Index entries that are special: caterva_schunk_chunk_special. */
int cat_sc_stored_uniform(const caterva_schunk *sc, int64_t i, const uint8_t **value,
                          int32_t *vsize);
/* Fetch what the wants need, in few waves (remote super-chunks; nothing to do otherwise). */
int cat_sc_prefetch(caterva_ctx *ctx, caterva_schunk *sc, const cat_want *w, int n);
/* A remote frame whose offsets index is read a block at a time: the index blocks that chunks
 * idx[0, n) lie in, fetched in one wave (a reader about to ask for their entries one at a
 * time, e.g. through caterva_schunk_chunk_special). Nothing to do otherwise. */
int cat_sc_index_ahead(caterva_ctx *ctx, const caterva_schunk *sc, const int64_t *idx, int n);
/* caterva_schunk_get_chunk for a reader that decodes only blocks[0..nblocks) (remote: only
 * those are fetched), pinned until cat_sc_unpin (remote: the bytes stay while pinned). */
int cat_sc_get_chunk_blocks(caterva_ctx *ctx, caterva_schunk *sc, int64_t i,
                            const int32_t *blocks, int32_t nblocks, const uint8_t **chunk,
                            int32_t *cbytes);
void cat_sc_unpin(caterva_schunk *sc, int64_t i);

/* A fetch-ahead thread for remote scans (fetchahead.c). cat_fa_new: NULL when no thread can be
 * had (the caller then fetches as it goes). cat_fa_submit: fetch w[0..n) of sc on the thread
 * (w and each w[k].blocks are malloc'ed; the job owns them from then on; tag >= 0 and
 * nchunks are the caller's names for the portion); waits for a job in flight first. ctx is
 * the caller's: its interrupt function is asked only on the caller's thread, while it waits.
 * cat_fa_take: waits for the job; 1 and its list (now the caller's, free with cat_wants_free)
 * when it carries tag, else 0 (a job for something else is dropped; tag < 0 stops the job in
 * flight first); < 0 when the job carrying tag failed for good (its message set in ctx, its
 * list freed): a request that exhausted its retries is reported once, not once per chunk. */
typedef struct cat_fetchahead cat_fetchahead;
cat_fetchahead *cat_fa_new(void);
int cat_fa_submit(cat_fetchahead *fa, caterva_ctx *ctx, caterva_schunk *sc, cat_want *w,
                  int n, int64_t tag, int64_t nchunks);
int cat_fa_take(cat_fetchahead *fa, caterva_ctx *ctx, int64_t tag, cat_want **w, int *n,
                int64_t *nchunks);
void cat_fa_free(cat_fetchahead *fa);
void cat_wants_free(cat_want *w, int n); /* frees w, and each blocks and starts */

/* ---- chunk edit notifications (schunk.c -> blockstats.c) ------------------------------ */

/* After every successful chunk edit of a super-chunk, its hook (if any) learns what changed:
 * op CAT_EDIT_UPDATE / _INSERT (append: insert at the end) / _DELETE at position pos, with
 * the stored chunk bytes (NULL for deletions and for special index entries, whose kind is
 * given as CATERVA_SPECIAL_*). The hook cannot fail the edit. */
#define CAT_EDIT_UPDATE 1
#define CAT_EDIT_INSERT 2
#define CAT_EDIT_DELETE 3
typedef void (*cat_edit_hook)(void *arg, caterva_ctx *ctx, int op, int64_t pos,
                              const uint8_t *chunk, int32_t cbytes, int special);
/* After a successful cat_sc_remap: new position i holds old chunk map[i], or (map[i] < 0) a
 * new chunk, the stored bytes chunk/cbytes or (chunk NULL) a special entry of kind special. */
typedef void (*cat_remap_hook)(void *arg, caterva_ctx *ctx, const int64_t *map, int64_t n,
                               const uint8_t *chunk, int32_t cbytes, int special);
void cat_sc_set_edit_hook(caterva_schunk *sc, cat_edit_hook fn, cat_remap_hook remap, void *arg);

/* Renumber the chunks in one edit (a resize of an array): new position i (0 <= i < n) holds
 * old chunk map[i] when map[i] >= 0, else a copy of the chunk `fill` (fill_bytes, a full
 * chunksize chunk; header-only zero/NaN chunks become special entries; NULL when map has
 * no negative entry). The old positions
 * map names must increase strictly; the chunks it does not name are removed. Costs time
 * linear in the old and new chunk counts (a loop of single-chunk edits copies the index at
 * each one). Like every edit, durable for file stores outside a transaction, and all or
 * nothing: a failure leaves the super-chunk as it was. */
int cat_sc_remap(caterva_ctx *ctx, caterva_schunk *sc, const int64_t *map, int64_t n,
                 const void *fill, int32_t fill_bytes);

/* ---- context ------------------------------------------------------------------------- */

/* Per-worker scratch buffers, grown on demand and kept for reuse. */
typedef struct cat_scratch {
  uint8_t *buf[4];  /* 0, 1: filter stages; 2: DELTA reference, block lists; 3: a decoded
                       block handed to a cat_chunk_decode_each callback */
  size_t cap[4];
  void *zcctx;  /* ZSTD_CCtx, created on first use */
  void *zdctx;  /* ZSTD_DCtx, created on first use */
} cat_scratch;

struct caterva_ctx {
  int nthreads;               /* >= 1 */
  cat_pool *pool;             /* NULL when nthreads == 1 */
  cat_scratch *scratch;       /* nthreads slots */
  int64_t blocks_decompressed;/* running count, updated atomically */
  char errmsg[CAT_ERRMSG_SIZE];
  int (*interrupt)(void *arg);/* caterva_ctx_set_interrupt, or NULL */
  void *interrupt_arg;
};

/* Did the context's interrupt function ask to stop? */
static inline bool cat_interrupted(caterva_ctx *ctx) {
  return ctx != NULL && ctx->interrupt != NULL && ctx->interrupt(ctx->interrupt_arg) != 0;
}

/* Returns scratch buffer `which` (0..3) of worker w with at least n bytes, or NULL. */
uint8_t *cat_scratch_get(caterva_ctx *ctx, int w, int which, size_t n);

/* ---- tables of one slot per chunk position (ztable.c) ----------------------------------- */

/* A table of n slots of elem bytes, zero (a large one is a map: its untouched pages stay out
 * of memory, never zeroed by the heap), or NULL (out of memory). Resized (slots past the old
 * end not set; NULL: out of memory, t unchanged) and freed only by these. */
void *cat_ztable_new(int64_t n, size_t elem);
void *cat_ztable_resize(void *t, int64_t n, size_t elem);
void cat_ztable_free(void *t);

/* ---- codecs (codecs.c) ----------------------------------------------------------------- */

/* Compress n bytes with the codec at clevel 1..9 into out (capacity cap). Returns the
 * compressed size, 0 when the output does not fit in cap (the caller then stores the stream
 * raw), or a negative error. s holds reusable codec state of the calling worker. */
int32_t cat_codec_compress(cat_scratch *s, int codec, int clevel, const uint8_t *in, int32_t n,
                           uint8_t *out, int32_t cap);
/* Decompress exactly nout bytes; returns nout or CATERVA_E_CORRUPT (never out of bounds).
 * dict/dictlen: the chunk's dictionary (zstd, lz4), or NULL/0. */
int32_t cat_codec_decompress(cat_scratch *s, int codec, const uint8_t *in, int32_t n,
                             uint8_t *out, int32_t nout, const uint8_t *dict, int32_t dictlen);
/* Scratch bytes cat_codec_bytes_at needs for an n-byte stream of codec; 0 when the codec
 * cannot read bytes without decoding the stream (only blosclz can). */
size_t cat_codec_bytes_at_scratch(int codec, int32_t n);
/* The bytes at positions pos[0..npos) of the nout-byte output of the n-byte stream at in,
 * into out, without decoding the stream (scratch: cat_codec_bytes_at_scratch bytes). Returns
 * npos, or CATERVA_E_CORRUPT where decoding would fail. */
int32_t cat_codec_bytes_at(int codec, const uint8_t *in, int32_t n, int32_t nout,
                           const int32_t *pos, int32_t npos, uint8_t *out, void *scratch,
                           size_t cap);
/* Release the codec state held in s. */
void cat_codec_scratch_free(cat_scratch *s);
/* Chunk-header format id (flags bits 5-7) of a compcode, or -1. */
int cat_codec_format_id(int codec);
/* compcode of a format id found in a chunk header (lz4 and lz4hc share one), or -1. */
int cat_codec_from_format_id(int format_id);
const char *cat_codec_name(int codec);
/* Whether this build decodes codec (snappy is optional). */
bool cat_codec_available(int codec);

#endif /* CAT_INTERNAL_H */
