/*
 * frame_internal.h -- internals of the super-chunk and frame layer, shared by
 * frame_format.c (bytes of headers, trailers and indices, and of a whole contiguous frame),
 * frame_file.c and the files below it (files and directories, and where a stored chunk's
 * bytes are: frame_plan.c, frame_sparse.c, frame_contig.c, frame_stored.c, frame_pack.c,
 * sharing frame_disk_internal.h), schunk.c (the
 * caterva_schunk object) and txn.c (the open transaction). schunk.c and txn.c use the frame
 * files, frame_file.c uses frame_format.c, and neither frame file calls into schunk.c
 * (frame_file.c only tells txn.c about the sparse chunk files a transaction writes).
 * Not installed.
 */
#ifndef CAT_FRAME_INTERNAL_H
#define CAT_FRAME_INTERNAL_H

#include "cat_internal.h"

/* ---- fixed header part (spec 3.1): byte offsets of the values, after their markers ---- */
#define CAT_FH_SIZE 87
#define CAT_FH_HEADER_LEN 11 /* D2 at 10 */
#define CAT_FH_FRAME_LEN 16  /* CF at 15 */
#define CAT_FH_GENERAL 25    /* A4 at 24, then four flag bytes */
#define CAT_FH_TYPE 26
#define CAT_FH_CODEC 27
#define CAT_FH_OTHER 28
#define CAT_FH_NBYTES 30     /* D3 at 29 */
#define CAT_FH_CBYTES 39     /* D3 at 38 */
#define CAT_FH_TYPESIZE 48   /* D2 at 47 */
#define CAT_FH_BLOCKSIZE 53  /* D2 at 52 */
#define CAT_FH_CHUNKSIZE 58  /* D2 at 57 */
#define CAT_FH_VLMETA 68     /* C2 false / C3 true */
#define CAT_FH_FILTERS 71    /* D8 06 at 69 */
#define CAT_FH_UDCODEC 77
#define CAT_FH_CODEC_META 78
#define CAT_FH_FILTERS_META 79
#define CAT_FH_OTHER2 85
/* Bytes [15, 69) hold everything a chunk or attribute change alters: frame_len, flags,
 * nbytes, cbytes, typesize, blocksize, chunksize, nthreads and the vlmetalayer flag. They lie
 * in the first disk sector, so rewriting them is the commit point of a contiguous file. */
#define CAT_FH_COMMIT_START 15
#define CAT_FH_COMMIT_END 69

#define CAT_FRAME_CONTIGUOUS 0
#define CAT_FRAME_SPARSE 1

#define CAT_TRAILER_TAIL 23 /* CE u32 trailer_len, D8 00 + 16 fingerprint bytes */
#define CAT_TRAILER_MIN 35  /* an empty trailer */

/* Headers up to this size are committed in place with one write (one disk sector). */
#define CAT_ATOMIC_HEADER_MAX 512

/* Largest decompressed offsets index / vlmetalayer we accept (the index also scales with
 * the frame size: a tiny frame cannot describe an enormous number of chunks, see
 * cat_frame_parse_index). */
#define CAT_INDEX_MAX_FIXED (64 * 1024 * 1024)
#define CAT_INDEX_MAX_RATIO 16384
#define CAT_VLMETA_MAX (64 * 1024 * 1024)
/* A read-only contiguous file with more chunks than this reads its index a block at a time
 * (frame_index.c); smaller indices are decoded and checked whole at open. */
#define CAT_INDEX_LAZY_MIN 65536
/* A reader's contiguous file of at most this many bytes is read whole into memory at open
 * instead of mapped (frame_contig.c). */
#define CAT_READ_WHOLE_MAX 65536
/* Slots of sc->data a page of memory holds. */
#define CAT_DATA_PAGE 512
/* Contents at least this large are kept decoded beside their chunk (cat_vlmeta.raw). */
#define CAT_VLMETA_KEEP_RAW (32 * 1024)

/* Special index entries: top byte 0x80 | kind, other bytes 0. */
#define CAT_ENTRY_SPECIAL(kind) ((int64_t)(((uint64_t)(0x80 | (kind))) << 56))

typedef struct cat_meta {
  char name[CATERVA_METALAYER_NAME_MAX + 1];
  uint8_t *content; /* raw bytes, malloc'ed (NULL when len is 0) */
  int32_t len;
} cat_meta;

typedef struct cat_vlmeta {
  char *name;       /* malloc'ed, NUL-terminated */
  uint8_t *chunk;   /* the content as a complete compressed chunk, malloc'ed; when lazy,
                     * borrowed from a remote frame's window (frame_remote.c), of which only
                     * its header part is present until cat_remote_bytes fetches blocks */
  int32_t cbytes;
  uint8_t *raw;     /* NULL, or the content chunk decodes to (rawlen bytes, malloc'ed): kept
                     * by vlmeta_set beside the chunk it compressed, so that the next set
                     * finds the changed blocks without decoding the chunk */
  int32_t rawlen;
  bool lazy;
  bool mapped;      /* chunk borrowed from a read-only schunk's file map, which it keeps until
                     * it is freed (never remapped: only writers remap), so not freed here */
} cat_vlmeta;

/* A file map given up while readers might still point into it (retain_maps). */
typedef struct cat_map {
  void *p;
  size_t n;
  struct cat_map *next;
} cat_map;

typedef struct cat_txn cat_txn;
typedef struct cat_rstore cat_rstore;
typedef struct cat_lazy_index cat_lazy_index;

struct caterva_schunk {
  int store;                 /* CATERVA_STORE_* */
  bool writable;             /* opened with CATERVA_OPEN_WRITE, or created */
  bool broken;               /* a file commit failed after its commit point: no more writes */
  char *path;                /* file or directory; NULL for memory stores */
  uint8_t fixed[CAT_FH_SIZE];/* fixed header template (kept as read; patched on write) */
  caterva_cparams cp;        /* compression parameters from the header */
  int typesize;              /* header typesize */
  int32_t blocksize;         /* header blocksize (0: unknown/automatic) */
  int32_t chunksize;         /* header chunksize */
  int64_t nchunks;
  int64_t nbytes;            /* sum of the chunks' uncompressed sizes */
  int64_t cbytes;            /* header cbytes: chunk section length / sum of chunk files */
  int64_t *entries;          /* nchunks index entries: offsets, file numbers or specials;
                              * NULL while lazy_index reads them a block at a time */
  cat_lazy_index *lazy_index;/* frame_index.c, or NULL: entries holds the whole index */
  const char *lazy_vlmeta;   /* while a remote trailer is parsed: the vlmetalayer whose
                              * content is borrowed (cat_vlmeta.lazy), not copied */
  uint8_t **data;            /* NULL, or nchunks pointers: owned chunk bytes (memory store)
                              * or cached chunk files (sparse store) */
  uint8_t *data_pages;       /* a sparse reader's data (a cat_ztable): per CAT_DATA_PAGE
                              * slots, whether one is set (only those are freed), else NULL */
  cat_meta meta[CATERVA_MAX_METALAYERS];
  int nmeta;
  cat_vlmeta *vlmeta;
  int nvlmeta;
  /* The frame image chunks are read from: an owned copy (memory store opened from a
   * buffer; a reader's contiguous file of at most CAT_READ_WHOLE_MAX bytes, read whole) or a
   * read-only map of the file (contiguous store). */
  const uint8_t *base;
  size_t base_len;           /* bytes of the image (the file's length when it was mapped) */
  size_t map_len;            /* bytes the map reserves (>= base_len): a file that grows
                              * within them is read through the same map (frame_file.c) */
  bool base_mapped;
  bool base_kept;            /* a reader's file (map or copy): base stays, unchanged, until the
                              * schunk is freed, so pointers into it may be kept (the lazy
                              * index, vlmetalayers) */
  int64_t header_len;        /* header length of the image / file on disk */
  int64_t section;           /* bytes of the image's chunk section (its header cbytes) */
  int fd;                    /* contiguous store opened for writing, else -1 */
  int rfd;                   /* contiguous store opened for reading: the descriptor behind
                              * the map (cat_file_copy_mapped), else -1 */
  int64_t frame_len;         /* file stores: frame bytes on disk; memory: cached, -1 stale */
  int64_t dead;              /* contiguous file: unreferenced bytes inside the chunk section */
  int64_t next_file;         /* sparse: number for the next chunk file */
  int64_t *written;          /* sparse: chunk files written while a transaction is open
                              * (frame_file.c keeps the list, txn.c drops or keeps them) */
  int64_t nwritten, capwritten;
  uint8_t special[3][2][CATERVA_CHUNK_HEADER_SIZE]; /* synthesised chunks: kind x (full, last) */
  bool special_ok[3][2];
  caterva_ctx *ictx;         /* private context, created on demand (frame_len of memory) */
  int64_t wend;              /* contiguous file: end of the bytes written (frame_len, or
                              * beyond it while a transaction holds uncommitted chunks) */
  uint8_t *pend;             /* contiguous writer: the last chunks the open transaction wrote,
                              * the file's bytes [pend_off, pend_off + pend_len) = [.., wend),
                              * held here until a commit in place or a cut needs them on disk
                              * (a packed commit takes them from here: they are never written
                              * to a file it replaces; emptied, more than 1 MiB of it is
                              * freed); frame_contig.c */
  int64_t pend_off;
  size_t pend_len, pend_cap;
  cat_txn *txn;              /* open transaction (txn.c), or NULL */
  bool no_autocompact;       /* never compact on our own (the caller holds the lock) */
  bool retain_maps;          /* keep old maps until freed (CATERVA_SC_RETAIN_MAPS) */
  bool nosync;               /* sparse: chunk files and index not fsync'ed (CATERVA_SC_NOSYNC) */
  bool header_unsynced;      /* contiguous: the last commit's header write was not synced
                              * (CATERVA_SYNC_NORMAL); the next sync of the file covers it */
  bool keep_replaced;        /* sparse: a commit keeps the chunk files it replaces (group.c) */
  int commit_pack;           /* contiguous: a commit leaving more dead bytes than this percent
                              * of the live ones packs the file (txn.c); -1: never */
  int syncfd;                /* sparse: the directory, opened before chunk files were written
                              * without an fsync each (cat_file_put_copies); the next synced
                              * commit makes them durable with one syncfs on it; else -1 */
  cat_map *retired;          /* maps kept alive by retain_maps (n == 0: malloc'ed bytes) */
  uint64_t seen_ino;         /* inode of the file (contiguous) or chunks.b2frame (sparse) */
  int64_t seen_mtime;        /* sparse: modification time of chunks.b2frame, ns */
  cat_edit_hook edit_hook;   /* told about every chunk edit (block statistics), or NULL */
  cat_remap_hook remap_hook; /* told about every cat_sc_remap, or NULL */
  void *edit_arg;
  cat_rstore *remote;        /* a frame on an HTTP(S) server or in S3 (frame_remote.c), read
                              * only; NULL for local and memory stores */
  bool s3_group;             /* S3: this commit belongs to a group commit (group_s3.c), which
                              * may write an array that carries a group mark */
  struct cat_s3stage *s3stage; /* S3: the commit stages its index under a pending name
                              * instead of publishing it (group_s3.c), or NULL */
};

/* ---- frame_format.c: bytes <-> schunk fields ---------------------------------------- */

/* Parse the fixed header part and the metalayers of a frame image of len bytes into sc
 * (fixed, cp, typesize, blocksize, chunksize, nbytes, cbytes, nchunks, header_len,
 * frame_len, meta). frame_type: CAT_FRAME_CONTIGUOUS or CAT_FRAME_SPARSE. */
int cat_frame_parse_header(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *frame,
                           size_t len, int frame_type);
/* The same when only the first `have` of the frame's `total` bytes are at frame (a remote
 * frame): CATERVA_E_NOSPACE, with header_len set, when the header is longer than have. */
int cat_frame_parse_header_part(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *frame,
                                size_t have, size_t total, int frame_type);
/* Parse the trailer (vlmetalayers) of the frame; it must start at or after min_start.
 * Stores the trailer start in *start. */
int cat_frame_parse_trailer(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *frame,
                            int64_t min_start, int64_t *start);
/* The same over a window: win holds the frame's bytes from offset wstart (<= min_start) to
 * frame_len (a remote frame's tail, fetched alone). */
int cat_frame_parse_trailer_at(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *win,
                               int64_t wstart, int64_t min_start, int64_t *start);
/* Where a trailer's parts lie, from its first `have` bytes at t (of tlen): the end of its
 * lead-in (the vlmetalayer map and the array header after it) in *lead, and for the first
 * *n (at most max) vlmetalayers their names and content offsets (from the trailer start,
 * each at a bin32 header). 1 when the lead-in is complete, 0 when more bytes are needed, -1
 * when malformed (cat_frame_parse_trailer_at then says why). */
typedef struct cat_trailer_item {
  const uint8_t *name;
  uint32_t nlen;
  int64_t off;
} cat_trailer_item;
int cat_frame_trailer_items(const uint8_t *t, int64_t have, int64_t tlen, cat_trailer_item *it,
                            int max, int *n, int64_t *lead);
/* Decode the offsets index chunk at frame + pos (avail bytes up to the trailer) into
 * sc->entries and validate every entry. Returns the index chunk's size (0 without chunks). */
int cat_frame_parse_index(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *frame,
                          int64_t pos, int64_t avail);

/* Check index entry i (e) of sc as cat_frame_parse_index does. */
int cat_frame_check_entry(caterva_ctx *ctx, const caterva_schunk *sc, int64_t i, int64_t e);

/* ---- frame_index.c: the offsets index read a block at a time -------------------------- */

/* Can the index chunk at `chunk` (its header present; avail bytes up to the trailer) of a
 * read-only contiguous frame be read a block at a time? Its header's facts into *ci (may be
 * NULL). */
bool cat_index_lazy_ok(const caterva_schunk *sc, const uint8_t *chunk, int64_t avail,
                       caterva_chunk_info *ci);
/* When cat_index_lazy_ok: set sc->lazy_index to read the index chunk at `chunk` (which must
 * stay valid until the schunk is freed) a block at a time, and return the chunk's size; 0
 * when it must be decoded whole. remote: the chunk lies in a remote frame's window, of which
 * a block's bytes are fetched (cat_remote_bytes_locked) before it is decoded. */
int cat_index_lazy_attach(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *chunk,
                          int64_t avail, bool remote);
/* At the open of a read-only contiguous file (sc->base its map): when its index chunk at pos
 * (avail bytes up to the trailer) is large and cut into blocks, set sc->lazy_index instead
 * of decoding it and return the chunk's size; 0 when it must be decoded whole. */
int cat_index_try_lazy(caterva_ctx *ctx, caterva_schunk *sc, int64_t pos, int64_t avail);
void cat_index_lazy_free(cat_lazy_index *lz);
/* Index entry i (0 <= i < nchunks) into *e: from sc->entries, or by decoding (and checking)
 * the block of the index it lies in. CATERVA_E_CORRUPT when that block is malformed. Takes
 * a remote store's lock when it must fetch. */
int cat_sc_entry(caterva_ctx *ctx, const caterva_schunk *sc, int64_t i, int64_t *e);
/* Entries idx[0, n) into e[0, n), and when next is not NULL into next[k] entry idx[k] + 1
 * when it lies in the same block of the index (the whole index: any), else -1. A remote
 * index fetches the blocks they need in one wave. The remote store's lock held (when sc is
 * remote). */
int cat_sc_entries_locked(caterva_ctx *ctx, const caterva_schunk *sc, const int64_t *idx, int n,
                          int64_t *e, int64_t *next);
/* The bytes of the index blocks that entries idx[0, n) lie in, fetched in one wave (a remote
 * lazy index; nothing otherwise). The remote store's lock held. */
int cat_sc_index_ahead_locked(caterva_ctx *ctx, const caterva_schunk *sc, const int64_t *idx,
                              int n);
/* Make sc->entries hold the whole index (decoded and checked) for a caller that needs every
 * entry or changes them (writers, copies, compaction). Nothing when it does already. */
int cat_sc_index_load(caterva_ctx *ctx, caterva_schunk *sc);
/* Blocks of the index decoded so far by cat_sc_entry, or -1 when the index was decoded whole. */
int64_t cat_sc_index_blocks_decoded(const caterva_schunk *sc);

/* Fill a fixed header template for a new frame. */
int cat_frame_fixed_init(caterva_ctx *ctx, uint8_t fixed[CAT_FH_SIZE], const caterva_cparams *cp,
                         int32_t chunksize);
/* A copy of sc->fixed with the given values patched in. */
void cat_frame_fixed_patch(const caterva_schunk *sc, uint8_t out[CAT_FH_SIZE], int frame_type,
                           int64_t header_len, int64_t frame_len, int64_t nbytes,
                           int64_t cbytes);
/* Length of the header (fixed part + metalayers) as cat_frame_build_header writes it. */
int64_t cat_frame_header_len(const caterva_schunk *sc);
/* Build the whole header into a new malloc'ed buffer of *len bytes. */
int cat_frame_build_header(caterva_ctx *ctx, const caterva_schunk *sc, int frame_type,
                           int64_t frame_len, int64_t nbytes, int64_t cbytes, uint8_t **out,
                           int64_t *len);
/* Build the trailer (sc->vlmeta) into a new malloc'ed buffer. */
int cat_frame_build_trailer(caterva_ctx *ctx, const caterva_schunk *sc, uint8_t **out,
                            int32_t *len);
/* Build the offsets index chunk of n entries into a new malloc'ed buffer (n > 0). */
int cat_frame_build_index(caterva_ctx *ctx, const int64_t *entries, int64_t n, uint8_t **out,
                          int32_t *len);
/* Compress a vlmetalayer payload into a new malloc'ed chunk. */
int cat_frame_vlmeta_compress(caterva_ctx *ctx, const void *content, int32_t len, uint8_t **out,
                              int32_t *cbytes);
/* The same, reusing the compressed blocks of old (oldlen bytes: this vlmetalayer's previous
 * chunk) whose content did not change: only the changed blocks are compressed, and the
 * result is byte-identical to cat_frame_vlmeta_compress (the block statistics, rewritten at
 * every commit, change one chunk's records in a one-cell commit). Compresses whole when old
 * cannot be patched (another length, special, memcpyed). */
int cat_frame_vlmeta_recompress(caterva_ctx *ctx, const uint8_t *old, int32_t oldlen,
                                const uint8_t *oldraw, int32_t oldrawlen, const void *content,
                                int32_t len, uint8_t **out, int32_t *cbytes);
/* The chunk cat_frame_vlmeta_compress makes of a payload of len bytes that fill produces a
 * batch of blocks at a time (never held whole); with old, blocks keep accepts are copied from
 * it (cat_chunk_build). *out malloc'ed, owned by the caller. */
int cat_frame_vlmeta_build(caterva_ctx *ctx, int32_t len, cat_fill_fn fill, cat_keep_fn keep,
                           void *arg, const uint8_t *old, int32_t oldlen, uint8_t **out,
                           int32_t *cbytes);
/* Parse a whole contiguous frame image (header, trailer, index) into sc; sets sc->section. */
int cat_frame_parse_contiguous(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *frame,
                               size_t len);

/* ---- schunk.c: the caterva_schunk object ------------------------------------------------ */

/* A new, empty schunk of the given store (no file, no chunks). */
caterva_schunk *cat_sc_alloc(int store);
/* The compressed chunk of vlmetalayer name (borrowed: valid until the vlmetalayers change),
 * or CATERVA_E_NOTFOUND. Reading it a few blocks at a time is the caller's business. */
int cat_sc_vlmeta_chunk(const caterva_schunk *sc, const char *name, const uint8_t **chunk,
                        int32_t *cbytes);
/* Is vlmetalayer name's chunk a remote frame's lazy one (cat_vlmeta.lazy)? */
bool cat_sc_vlmeta_is_lazy(const caterva_schunk *sc, const char *name);
/* Is it borrowed from a read-only schunk's file map (cat_vlmeta.mapped): valid, unchanged,
 * until the schunk is freed? */
bool cat_sc_vlmeta_is_mapped(const caterva_schunk *sc, const char *name);
/* caterva_schunk_vlmeta_set with a content of up to max bytes (at most
 * CATERVA_CHUNK_MAX_NBYTES): the block statistics of very large arrays. */
int cat_sc_vlmeta_set_max(caterva_ctx *ctx, caterva_schunk *sc, const char *name,
                          const void *content, int32_t len, int32_t max);
/* Set vlmetalayer name to chunk (cbytes bytes, already compressed, e.g. by
 * cat_frame_vlmeta_build; its content at most max bytes). Takes ownership of chunk whatever
 * the outcome. No decoded copy is kept beside it. */
int cat_sc_vlmeta_put(caterva_ctx *ctx, caterva_schunk *sc, const char *name, uint8_t *chunk,
                      int32_t cbytes, int32_t max);

/* ---- frame_file.c (and frame_sparse.c, frame_contig.c, frame_stored.c, frame_pack.c):
 * files and directories ----------------------------------------------------------------- */

/* Borrow the bytes of stored (non-special) chunk i: from sc->data, the image, a sparse chunk
 * file or (contiguous, inside a transaction) past the committed section. When the chunk must
 * be read from a file and cache is false, the bytes are returned in *tmp (caller frees),
 * else cached in sc->data. */
int cat_file_stored_chunk(caterva_ctx *ctx, caterva_schunk *sc, int64_t i, bool cache,
                          const uint8_t **p, int32_t *cbytes, uint8_t **tmp);
/* The size of stored (non-special) chunk i, as cat_file_stored_chunk gives it, without
 * reading the bytes of a chunk the open transaction wrote (its header only). */
int cat_file_stored_size(caterva_ctx *ctx, caterva_schunk *sc, int64_t i, int32_t *cbytes);
/* 1 with chunk i's bytes borrowed in *p and *cbytes when they lie in a local contiguous
 * frame's map within max bytes of the next chunk's start (a frame written in order: a special
 * chunk stored as bytes, 32 to 287 of them), without reading anything but the index; 0 when
 * not (a larger or remote chunk, a sparse frame, bytes of the open transaction, an entry that
 * does not read: the chunk's readers report those). */
int cat_file_small_chunk(const caterva_schunk *sc, int64_t i, int32_t max, const uint8_t **p,
                         int32_t *cbytes);
/* Before a loop that reads every stored chunk of sc in index order (a copy): for a remote sc,
 * when the loop reaches chunk i at or past *next, the stored chunks from i on are fetched
 * whole in one wave, as many as 16 MiB of chunksize allow (2 to 64), and *next moves past
 * them; nothing for a local one. An error of the wave is returned (the loop's own reads would
 * meet it). */
int cat_file_stored_ahead(caterva_ctx *ctx, caterva_schunk *sc, int64_t i, int64_t *next);
/* Copy n bytes at p, which lie in the read-only map of a contiguous file, into buf with
 * pread on the descriptor behind that map (the same file: cheaper than faulting the pages
 * in for a reader that looks at each byte once). 1 when copied; 0 when p is not in the
 * current map, there is no descriptor, or the read fails (the caller then reads p). */
int cat_file_copy_mapped(caterva_schunk *sc, const uint8_t *p, size_t n, uint8_t *buf);

/* Open the frame file or directory at path into sc (store, entries, metas, image). */
int cat_file_open(caterva_ctx *ctx, caterva_schunk *sc, const char *path, int mode);
/* Create the file or directory for a new, empty schunk (path must not exist). */
int cat_file_create(caterva_ctx *ctx, caterva_schunk *sc);
/* Write a stored chunk where no committed byte lives (contiguous: at sc->wend; sparse: a new
 * file number) and give its index entry. Nothing refers to it until a commit. */
int cat_file_put_chunk(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *chunk,
                       int32_t cbytes, int64_t *entry);
/* For each position i < n with map[i] < 0, write a copy of one stored chunk where no
 * committed byte lives and set entries[i] (other entries are not touched): contiguous, in
 * large writes after sc->wend, one copy per position (c-blosc2 updates a chunk of a
 * contiguous frame in place, so index entries must not share stored bytes); sparse, one new
 * file per position, without an fsync each: the next synced commit makes them durable at
 * once (syncfs) before it writes the index that names them. All or nothing: on failure no
 * copy is left and no entry written. */
int cat_file_put_copies(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *chunk,
                        int32_t cbytes, const int64_t *map, int64_t n, int64_t *entries);
/* Forget the chunk put last at entry (an edit that failed after putting it). */
void cat_file_drop_chunk(caterva_schunk *sc, int64_t entry);
/* Make the index entries/n/nbytes durable, with everything written so far: contiguous,
 * index and trailer after sc->wend, sync, then the header (all of it with full_header: a
 * metalayer changed; else the commit bytes); sparse, chunks.b2frame replaced, whose header
 * records cbytes (the sum of the chunk files). sync: CATERVA_SYNC_FULL, _NORMAL (contiguous:
 * no sync after the header write; sparse: full) or _OFF (no fsync). */
int cat_file_commit(caterva_ctx *ctx, caterva_schunk *sc, int64_t *entries, int64_t n,
                    int64_t nbytes, int64_t cbytes, bool full_header, int sync);
/* Contiguous: cut the file back to len bytes (a rollback). Other stores: nothing. */
int cat_file_truncate_to(caterva_ctx *ctx, caterva_schunk *sc, int64_t len);
/* Contiguous: the size of the uncommitted chunk at index entry (past the committed section),
 * from its header alone. */
int cat_file_pending_size(caterva_ctx *ctx, caterva_schunk *sc, int64_t entry, int32_t *len);
/* Contiguous: read the uncommitted chunk at index entry (past the committed section) into
 * a new malloc'ed buffer. */
int cat_file_read_pending(caterva_ctx *ctx, caterva_schunk *sc, int64_t entry, uint8_t **out,
                          int32_t *len);
/* Rewrite the whole frame (contiguous: packed, via a temporary file and rename; sparse:
 * chunks.b2frame). Used when the header changes size. */
int cat_file_rewrite(caterva_ctx *ctx, caterva_schunk *sc);
/* Read sparse chunk file number num (whole file) into a new malloc'ed buffer. */
int cat_file_read_chunk(caterva_ctx *ctx, const caterva_schunk *sc, int64_t num, uint8_t **out,
                        int32_t *len);
/* 1 when the file on disk no longer holds the state sc was read or committed as (another
 * writer committed, or compacted), 0 when it does. */
int cat_file_stale(caterva_ctx *ctx, caterva_schunk *sc);
/* malloc'ed "dir/name" (NULL when out of memory). */
char *cat_path_join(const char *dir, const char *name);
/* The number of a sparse chunk file's name "XXXXXXXX.chunk" (8 upper-case hex digits), or -1. */
int64_t cat_file_chunk_number(const char *name);
/* Sparse: the file numbers sc's index refers to, sorted, in a new malloc'ed array (*live, NULL
 * when *n is 0); test one with cat_file_is_live. */
int cat_file_live_chunks(caterva_ctx *ctx, const caterva_schunk *sc, int64_t **live, int64_t *n);
bool cat_file_is_live(const int64_t *live, int64_t n, int64_t num);
/* frame_collect.c: remove (or, dry_run, count) what killed writers left: unreferenced sparse
 * chunk files, temporary files of processes that are gone. See caterva_schunk_collect. */
int cat_file_collect(caterva_ctx *ctx, caterva_schunk *sc, bool dry_run, int64_t *removed);
/* Keep p (malloc'ed chunk bytes replaced by an edit) until sc is freed, when readers may
 * hold pointers into it (retain_maps); else free it. */
void cat_file_retire_bytes(caterva_schunk *sc, void *p);
/* Free the maps and bytes kept by retain_maps (nothing may point into them any more); with
 * ctx's threads the maps are unmapped on one of them (cat_pool_post). */
void cat_file_release_retired(caterva_ctx *ctx, caterva_schunk *sc);
/* Remove a sparse chunk file that the index no longer references (best effort). */
void cat_file_unlink_chunk(const caterva_schunk *sc, int64_t num);
/* Sparse chunk files written while sc->txn is open, in order: sc->written[0..nwritten).
 * Remove those after the first keep (a rollback), or forget them all (the end of the
 * transaction; the list's memory is kept for the next one). */
void cat_file_unlink_written(caterva_schunk *sc, int64_t keep);
void cat_file_forget_written(caterva_schunk *sc);
/* The journal copy of a group commit next to the frame at path: `<path>.cvjournal` (a
 * trailing '/' left out; malloc'ed, NULL when out of memory). Opening a frame for writing
 * fails with CATERVA_E_BUSY while one exists (group.c finishes it). */
#define CAT_JOURNAL_SUFFIX ".cvjournal"
char *cat_file_journal_name(const char *path);
/* Save sc as a new frame at path. */
int cat_file_save(caterva_ctx *ctx, caterva_schunk *sc, const char *path, int store);
/* Serialise sc as a packed contiguous frame into a new malloc'ed buffer. */
int cat_frame_to_buffer(caterva_ctx *ctx, caterva_schunk *sc, uint8_t **out, int64_t *len);
/* Size of the packed contiguous frame of sc. */
int cat_frame_packed_len(caterva_ctx *ctx, caterva_schunk *sc, int64_t *len);
/* Release the file resources of sc (map, descriptor); compacts a contiguous file with
 * much dead space first. */
void cat_file_close(caterva_schunk *sc);

/* ---- frame_remote.c: frames on HTTP(S) servers and in S3 ---------------------------------- */

/* Open the remote frame at path (a URL) read-only into sc (store: its kind of frame). */
int cat_remote_open(caterva_ctx *ctx, caterva_schunk *sc, const char *path,
                    const caterva_remote_opts *o);
void cat_remote_close(caterva_schunk *sc);
/* 1 when the object changed since it was opened (one HEAD request), 0 when not. */
int cat_remote_stale(caterva_ctx *ctx, caterva_schunk *sc);
/* Leave the version check to the next read (caterva_schunk_stale_later): 1 when a change is
 * known already, else 0. */
int cat_remote_check_later(caterva_schunk *sc);
/* The pending check now (one HEAD): 1 changed, 0 not or nothing pending, < 0 an error. */
int cat_remote_verify(caterva_ctx *ctx, caterva_schunk *sc);
void cat_remote_stats_of(const caterva_schunk *sc, caterva_remote_stats *st);
/* Fetch, in as few waves as it takes, the bytes of the wanted blocks of the wanted chunks
 * (cat_want in cat_internal.h). */
int cat_remote_prefetch(caterva_ctx *ctx, caterva_schunk *sc, const cat_want *w, int n);
/* Chunk i's bytes with at least the given blocks present (all of them when nblocks < 0):
 * only those may be decoded. *p stays valid until the chunk is dropped from the cache, which
 * never happens while it is pinned. */
int cat_remote_chunk(caterva_ctx *ctx, caterva_schunk *sc, int64_t i, const int32_t *blocks,
                     int32_t nblocks, const uint8_t **p, int32_t *cbytes);
void cat_remote_pin(caterva_schunk *sc, int64_t i, int delta);
/* A chunk of cbytes bytes at `chunk` that lies in a remote frame's window of its offsets
 * index and trailer (a lazy vlmetalayer's content): make the given blocks' bytes present
 * (all of them when nblocks < 0), fetching what is missing in one wave; blocks whose streams
 * run past their range make the whole chunk fetched. CATERVA_OK at once for bytes of no
 * window (local frames, or bytes held whole). */
int cat_remote_bytes(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *chunk, int32_t cbytes,
                     const int32_t *blocks, int32_t nblocks);
/* The same with the store's lock held (a remote lazy index, frame_index.c). */
int cat_remote_bytes_locked(caterva_ctx *ctx, const caterva_schunk *sc, const uint8_t *chunk,
                            int32_t cbytes, const int32_t *blocks, int32_t nblocks);
/* Entries idx[0, n) of a remote frame's lazy index (cat_sc_entries_locked under the store's
 * lock). */
int cat_remote_entries(caterva_ctx *ctx, const caterva_schunk *sc, const int64_t *idx, int n,
                       int64_t *e);

/* ---- txn.c: the open transaction -------------------------------------------------------- */

/* A header (meta_changed) or trailer change inside a transaction: made durable at commit. */
int cat_txn_note_change(caterva_schunk *sc, bool meta_changed);
/* Whether the open transaction's commit writes in place (false: it would rewrite a contiguous
 * file whose header changed length, through a temporary file and rename). */
bool cat_txn_commit_in_place(const caterva_schunk *sc);
/* Sparse: the chunk files of the committed state that the open transaction's index no longer
 * names (*nums malloc'ed, owned by the caller; NULL and 0 for other stores). */
int cat_txn_replaced(caterva_ctx *ctx, const caterva_schunk *sc, int64_t **nums, int64_t *n);

#endif /* CAT_FRAME_INTERNAL_H */
