/*
 * caterva_frame.h -- super-chunks and Blosc2 frames (part of the public interface; include
 * caterva.h, which includes this file).
 *
 * A super-chunk is an ordered sequence of chunks of equal uncompressed size (chunksize),
 * plus fixed metalayers (named byte strings of fixed length, in the frame header) and
 * variable-length metalayers (named byte strings, compressed, in the frame trailer).
 * It lives in one of three stores:
 *   - memory: a contiguous frame image owned by the object;
 *   - a contiguous frame file (.b2nd, .b2frame): one file;
 *   - a sparse frame: a directory holding chunks.b2frame (header, index, trailer) and one
 *     file per chunk named %08X.chunk.
 * Zero, NaN and uninitialised chunks are kept as special index entries without data.
 *
 * Opening a file reads the header, the trailer and the offsets index only; chunks are read
 * on demand. Updates to a file are written so that a process dying mid-write leaves the
 * file readable with its previous content (see README, "Guarantees", and frame_file.c):
 * a contiguous file grows by appending the new chunk, index and trailer and then rewriting
 * a few header bytes in place, so until it is compacted (automatically, when dead bytes
 * outweigh live ones, and when a writable schunk with dead bytes is freed) its chunk section
 * holds unreferenced bytes; bytes after frame_len (an interrupted update) are ignored when
 * reading and truncated when opening for writing.
 */
#ifndef CATERVA_FRAME_H
#define CATERVA_FRAME_H

#ifndef CATERVA_H
#error "include caterva.h instead"
#endif

/** @defgroup schunk Super-chunks and frames
 * @{ */
typedef struct caterva_schunk caterva_schunk;

#define CATERVA_MAX_METALAYERS 16
#define CATERVA_MAX_VLMETALAYERS 8192
#define CATERVA_METALAYER_NAME_MAX 31

/** Storage kinds. */
#define CATERVA_STORE_MEMORY     0
#define CATERVA_STORE_CONTIGUOUS 1  /**< one file */
#define CATERVA_STORE_SPARSE     2  /**< a directory */

/** Open modes. */
#define CATERVA_OPEN_READ  0
#define CATERVA_OPEN_WRITE 1

/** Create an empty super-chunk.
 * @param[in]  cp         compression parameters for chunks compressed by this schunk (copied)
 * @param[in]  chunksize  uncompressed bytes of every chunk (> 0)
 * @param[in]  store      CATERVA_STORE_*
 * @param[in]  path       file or directory for file stores (must not exist); NULL for memory
 * @param[out] out        the new super-chunk, owned by the caller (caterva_schunk_free)
 * Metalayers must be added before the first chunk is appended. */
int caterva_schunk_new(caterva_ctx *ctx, const caterva_cparams *cp, int32_t chunksize, int store,
                       const char *path, caterva_schunk **out);

/** Open an existing frame: a contiguous frame file or a sparse frame directory (detected).
 * @param[in]  mode  CATERVA_OPEN_READ or CATERVA_OPEN_WRITE */
int caterva_schunk_open(caterva_ctx *ctx, const char *path, int mode, caterva_schunk **out);
/** The same, for a path that may be a URL (caterva_storage.h): o gives the options of remote
 * access (NULL: the defaults); remote frames open with CATERVA_OPEN_WRITE only when they are
 * sparse frames in S3 (caterva_storage.h). */
int caterva_schunk_open_ex(caterva_ctx *ctx, const char *path, int mode,
                           const caterva_remote_opts *o, caterva_schunk **out);
/** What a remote super-chunk has fetched so far (zeros for a local one). */
void caterva_schunk_remote_stats(const caterva_schunk *sc, caterva_remote_stats *st);
/** Blocks of the offsets index read so far (decoded, or read at the wanted entries only) when
 * the index is read a block at a time (a read-only open of a large index), or -1 when it was
 * decoded whole. */
int64_t caterva_schunk_index_blocks(const caterva_schunk *sc);

/** Open a contiguous frame held in memory. The bytes are copied; the result is a memory store. */
int caterva_schunk_open_buffer(caterva_ctx *ctx, const void *frame, size_t len,
                               caterva_schunk **out);

/** Write the super-chunk as a new frame at path (contiguous file or sparse directory).
 * path must not exist. The schunk itself is unchanged. */
int caterva_schunk_save(caterva_ctx *ctx, caterva_schunk *sc, const char *path, int store);
/** caterva_schunk_save to a path that may be a URL: `s3://bucket/prefix/` receives a sparse
 * frame (store must be CATERVA_STORE_SPARSE) laid out as a local sparse directory: every
 * chunk object created with `If-None-Match: *`, then `chunks.b2frame` the same way, which is
 * the point where the array appears whole (CATERVA_E_EXISTS when the prefix holds one
 * already). o gives the options of remote access (NULL: defaults and the environment).
 * http(s):// URLs are read-only (CATERVA_E_READONLY). */
int caterva_schunk_save_ex(caterva_ctx *ctx, caterva_schunk *sc, const char *path, int store,
                           const caterva_remote_opts *o);

/** Serialise the super-chunk as a contiguous frame into a new malloc'ed buffer (caller frees). */
int caterva_schunk_to_buffer(caterva_ctx *ctx, caterva_schunk *sc, uint8_t **out, int64_t *len);

/** Release; for file stores, pending state is already on disk. NULL accepted. */
void caterva_schunk_free(caterva_schunk *sc);

/* -- properties (never fail) -- */
int64_t caterva_schunk_nchunks(const caterva_schunk *sc);
int32_t caterva_schunk_chunksize(const caterva_schunk *sc);
int caterva_schunk_typesize(const caterva_schunk *sc);
int caterva_schunk_store(const caterva_schunk *sc);
/** Sum of the uncompressed sizes of all chunks. */
int64_t caterva_schunk_nbytes(const caterva_schunk *sc);
/** Stored bytes of chunks (frame "cbytes"). For a contiguous file this is the length of its
 * chunk section, which includes unreferenced bytes until the file is compacted. */
int64_t caterva_schunk_cbytes(const caterva_schunk *sc);
/** Total frame bytes (header, chunks, index, trailer) as it would be written or is on disk. */
int64_t caterva_schunk_frame_len(const caterva_schunk *sc);
/** Compression parameters recorded in the frame header (borrowed; valid while sc lives). */
const caterva_cparams *caterva_schunk_cparams(const caterva_schunk *sc);

/* -- chunks -- */

/** Special kind of chunk i as recorded in the index (CATERVA_SPECIAL_ZERO/NAN/UNINIT) without
 * reading it, CATERVA_SPECIAL_NONE for a stored chunk, or a negative error. */
int caterva_schunk_chunk_special(const caterva_schunk *sc, int64_t i);

/** Borrow the compressed bytes of chunk i. For a special index entry, a header-only special
 * chunk is synthesised. *chunk stays valid until the next call that modifies sc or frees it;
 * it may be used concurrently from several threads for reading.
 * @param[out] chunk   the chunk's bytes
 * @param[out] cbytes  its length (the chunk header's cbytes, checked against the store) */
int caterva_schunk_get_chunk(caterva_ctx *ctx, caterva_schunk *sc, int64_t i,
                             const uint8_t **chunk, int32_t *cbytes);

/** Decompress chunk i into dst (capacity dstcap >= chunksize). Returns bytes written. */
int32_t caterva_schunk_decompress_chunk(caterva_ctx *ctx, caterva_schunk *sc, int64_t i,
                                        void *dst, int32_t dstcap);

/** Compress nbytes (== chunksize) of src with the schunk's cparams and append it. All-zero
 * data is stored as a special zero index entry. Returns the new number of chunks.
 * As in Blosc2, the last chunk may be shorter than chunksize (nothing can follow it); every
 * other chunk, inserted or updated, holds exactly chunksize bytes. */
int64_t caterva_schunk_append_buffer(caterva_ctx *ctx, caterva_schunk *sc, const void *src,
                                     int32_t nbytes);
/** Append an already compressed chunk (copied; validated). Special header-only chunks of kind
 * zero/NaN/uninit become special index entries. Returns the new number of chunks. */
int64_t caterva_schunk_append_chunk(caterva_ctx *ctx, caterva_schunk *sc, const void *chunk,
                                    int32_t cbytes);
/** Replace chunk i with a compressed chunk (copied; validated). */
int caterva_schunk_update_chunk(caterva_ctx *ctx, caterva_schunk *sc, int64_t i,
                                const void *chunk, int32_t cbytes);
/** Insert a compressed chunk at position i (0 <= i <= nchunks). */
int caterva_schunk_insert_chunk(caterva_ctx *ctx, caterva_schunk *sc, int64_t i,
                                const void *chunk, int32_t cbytes);
/** Delete chunk i. */
int caterva_schunk_delete_chunk(caterva_ctx *ctx, caterva_schunk *sc, int64_t i);

/* -- fixed metalayers (frame header; raw bytes, at most CATERVA_MAX_METALAYERS) -- */

/** Number of metalayers, and the name of metalayer k (borrowed). */
int caterva_schunk_meta_count(const caterva_schunk *sc);
const char *caterva_schunk_meta_name(const caterva_schunk *sc, int k);
/** Borrow the content of metalayer name; valid until sc is modified or freed.
 * Returns CATERVA_E_NOTFOUND when absent. */
int caterva_schunk_meta_get(const caterva_schunk *sc, const char *name, const uint8_t **content,
                            int32_t *len);
/** Add a metalayer (only while the schunk has no chunks). */
int caterva_schunk_meta_add(caterva_ctx *ctx, caterva_schunk *sc, const char *name,
                            const void *content, int32_t len);
/** Overwrite an existing metalayer with content of the same length. */
int caterva_schunk_meta_update(caterva_ctx *ctx, caterva_schunk *sc, const char *name,
                               const void *content, int32_t len);

/* -- variable-length metalayers (frame trailer; user attributes) -- */

int caterva_schunk_vlmeta_count(const caterva_schunk *sc);
const char *caterva_schunk_vlmeta_name(const caterva_schunk *sc, int k);
/** Get the decompressed content of vlmetalayer name into a new malloc'ed buffer (caller
 * frees). Returns CATERVA_E_NOTFOUND when absent. */
int caterva_schunk_vlmeta_get(caterva_ctx *ctx, caterva_schunk *sc, const char *name,
                              uint8_t **content, int32_t *len);
/** Add or replace vlmetalayer name (content compressed and stored in the trailer). */
int caterva_schunk_vlmeta_set(caterva_ctx *ctx, caterva_schunk *sc, const char *name,
                              const void *content, int32_t len);
/** Delete vlmetalayer name (CATERVA_E_NOTFOUND when absent). */
int caterva_schunk_vlmeta_delete(caterva_ctx *ctx, caterva_schunk *sc, const char *name);
/** Whether buf starts with one whole msgpack value (nesting at most 32 levels) whose every
 * declared element and byte is present. Check attribute bytes with it before handing them to
 * msgpack-c, whose unpacker allocates for the element count a header declares before it
 * sees the elements (a lying count asks for gigabytes). */
int caterva_msgpack_complete(const void *buf, size_t len);
/* -- transactions (file stores opened for writing or created) -- */

/** Open a transaction: from here until caterva_schunk_commit or _rollback, chunk edits,
 * metalayer updates and vlmetalayer changes are written where no committed byte lives and
 * are not visible to other openers of the file; the object itself reads its own changes.
 * One commit makes all of them durable at one commit point (see txn.c, frame_file.c).
 * A failure of an edit inside the transaction leaves the transaction as it was before it.
 * The caller provides mutual exclusion between writers (caterva_lock_*).
 * @return CATERVA_OK; CATERVA_E_INVALID (memory store, or already open),
 *         CATERVA_E_READONLY, CATERVA_E_NOMEM. */
int caterva_schunk_begin(caterva_ctx *ctx, caterva_schunk *sc);
/** 1 while a transaction is open. */
int caterva_schunk_in_txn(const caterva_schunk *sc);
/** Remember the current state as savepoint `level` (SQLite's xSavepoint numbering); marks
 * at or above level are dropped first. */
int caterva_schunk_savepoint(caterva_ctx *ctx, caterva_schunk *sc, int level);
/** Forget the savepoints at or above level (RELEASE). */
int caterva_schunk_release(caterva_ctx *ctx, caterva_schunk *sc, int level);
/** Undo everything after savepoint level (which stays); a level below every mark undoes
 * everything since begin. The file loses what was written after the mark. */
int caterva_schunk_rollback_to(caterva_ctx *ctx, caterva_schunk *sc, int level);
#define CATERVA_SYNC_OFF 0    /**< no sync: atomic against a process crash only */
#define CATERVA_SYNC_FULL 1   /**< durable when the commit returns */
#define CATERVA_SYNC_NORMAL 2 /**< contiguous files: the new index and trailer are synced
                                   before the header names them, the header is not: a power
                                   loss may undo the last commit, never tear one (the next
                                   commit's sync, or closing the handle, makes it durable);
                                   sparse frames: the same as CATERVA_SYNC_FULL */
/** Make the transaction durable. sync: CATERVA_SYNC_FULL (any value other than 0 and
 * CATERVA_SYNC_NORMAL), CATERVA_SYNC_NORMAL, or 0, which skips the fsyncs (the commit is
 * atomic but may be lost, or a contiguous file torn, by a power failure). On failure before
 * the commit point the file is unchanged and the transaction stays open for
 * caterva_schunk_rollback (only); a failure after it leaves the object unusable
 * (CATERVA_E_IO on later calls) and the file in either state. */
int caterva_schunk_commit(caterva_ctx *ctx, caterva_schunk *sc, int sync);
/** Undo the transaction: the file is byte-identical to what it was at begin (a contiguous
 * file is truncated back; new sparse chunk files are removed). */
int caterva_schunk_rollback(caterva_ctx *ctx, caterva_schunk *sc);

/** Move the frame's file or directory to path, which must not exist (CATERVA_E_EXISTS; the
 * move is atomic: creating under a temporary name and renaming publishes a complete frame). */
int caterva_schunk_rename(caterva_ctx *ctx, caterva_schunk *sc, const char *path);

/** 1 when the frame on disk has changed since this object read or committed it (another
 * handle committed or compacted it: reopen to see it), 0 when not. Cheap: one header read
 * (contiguous) or one stat (sparse). */
int caterva_schunk_stale(caterva_ctx *ctx, caterva_schunk *sc);

/** As caterva_schunk_stale, at the start of a statement, but a remote frame sends nothing
 * now: its version is checked by the statement's first read instead, against the version
 * every answer from the frame object carries (so the check costs no round trip of its own;
 * a sparse frame's chunks are objects of their own, so a GET of the first bytes of
 * chunks.b2frame rides that read's first wave), or by one HEAD request when that read needs
 * no request (caterva_schunk_verify). When the object changed, that first read fails with
 * CATERVA_E_CHANGED before any byte of the new version is used (a chunk object the change
 * removed included), and caterva_schunk_stale then says 1 without a request: open the array
 * again and read again. Later reads of the same statement that find a change fail with
 * CATERVA_E_IO, as before. Local frames: caterva_schunk_stale. */
int caterva_schunk_stale_later(caterva_ctx *ctx, caterva_schunk *sc);

/** The check caterva_schunk_stale_later left pending, now (one HEAD request), for a reader
 * about to answer from bytes it kept itself: 1 changed (the context's message says so, as
 * for CATERVA_E_CHANGED), 0 not (or nothing pending), or a negative error code. */
int caterva_schunk_verify(caterva_ctx *ctx, caterva_schunk *sc);

/** Remove what killed writers left (never part of any committed state): the chunk files of a
 * sparse frame that its committed index does not refer to, and the temporary files named after
 * the frame whose process no longer exists on this machine -- `<path>.tmp<pid>.<n>` (atomic
 * rewrites and compactions), `<dir>/chunks.b2frame.tmp<pid>.<n>` (sparse index), and
 * `<path>.creating-<pid>`, `<path>.importing-<pid>`, `<path>.tmp-<pid>` (a creation or an
 * import: a file or a directory). A live process's file is
 * kept. The caller holds the exclusive lock (caterva_lock_exclusive) so that no writer is
 * between writing a chunk file and committing it; the handle must be open for writing, have no
 * transaction open, and be current (CATERVA_E_BUSY when the frame changed since it read it:
 * reopen). With dry_run nothing is removed (any handle; then files of a writer in flight count
 * too). *removed (may be NULL): the number of names removed or, dry, found. A name that
 * cannot be removed gives CATERVA_E_IO after the others are tried. Local frames only. */
int caterva_schunk_collect(caterva_ctx *ctx, caterva_schunk *sc, int dry_run, int64_t *removed);

/** Bytes inside a contiguous file's chunk section that no index entry refers to. */
int64_t caterva_schunk_dead_bytes(const caterva_schunk *sc);
/** 1 when a contiguous file's dead bytes are more than pct percent of its live ones (pct < 0:
 * never), else 0. Inside a transaction, of the bytes written so far (its chunks count, the
 * index and trailer it will replace not yet): what the commit would leave. */
int caterva_schunk_dead_over(const caterva_schunk *sc, int pct);
/** Rewrite a contiguous file packed (temporary file + rename: readers holding the old file
 * keep reading it) when its dead bytes are at least a quarter of it, or always with force.
 * Not inside a transaction. Other stores: nothing to do. */
int caterva_schunk_compact(caterva_ctx *ctx, caterva_schunk *sc, int force);

/** Commits of a contiguous file that would leave more dead bytes than pct percent of the
 * live ones write the packed file instead: a new file renamed over the path, as
 * caterva_schunk_compact writes, so that such a commit and the compaction that would follow
 * it are one write and one sync instead of two (the old file is left as it was: a failure
 * before the rename is rolled back as any failed commit). -1 (the default): never. A group
 * commit (caterva_array_commit_group) never packs, whatever is set. */
void caterva_schunk_set_commit_pack(caterva_schunk *sc, int pct);

#define CATERVA_SC_NO_AUTOCOMPACT 1 /**< never compact on its own (after edits, on free) */
#define CATERVA_SC_RETAIN_MAPS    2 /**< keep replaced file maps until freed: pointers from
                                         caterva_schunk_get_chunk stay valid across commits */
#define CATERVA_SC_NOSYNC         4 /**< sparse frames: write chunk files and chunks.b2frame
                                       without fsync (a commit with sync = 0 skips the fsyncs
                                       of contiguous files too): an OS crash or power loss may
                                       lose the last commits, never a process crash */
/** Set behaviour flags (CATERVA_SC_*). */
void caterva_schunk_set_flags(caterva_schunk *sc, int flags);
/** Give back the file maps and chunk bytes that CATERVA_SC_RETAIN_MAPS kept since the last
 * call (each commit of a contiguous file replaces its map): every pointer obtained from
 * caterva_schunk_get_chunk before this call becomes invalid, so call it only when none is in
 * use (a table with no open cursor). Without it they are kept until sc is freed.
 * With a ctx that has threads, the maps are unmapped on one of them after this returns:
 * where the last map of a file that a packed commit or a compaction replaced goes, the
 * kernel frees that file's pages and blocks (about a millisecond for a few megabytes), which
 * the caller then does not wait for. caterva_ctx_free waits for those still to run. ctx may
 * be NULL: everything is given back here. */
void caterva_schunk_release_maps(caterva_ctx *ctx, caterva_schunk *sc);
/** @} */

/** @defgroup lock Locking between processes (c-blosc2's `.b2lock` protocol, lock.c)
 * A sidecar file beside the frame (`<path>.b2lock`, or `<dir>/.b2lock` for a sparse frame)
 * locked with flock(): exclusive by a writer, shared by a reader re-reading the index, and a
 * 64-bit little-endian generation counter at byte 8 that every exclusive acquisition
 * increments. Each caterva_lock has its own open file description, so two handles in one
 * process exclude each other as two processes do. Nothing here waits.
 * @{ */
typedef struct caterva_lock caterva_lock;
/** Open (creating it if missing) the sidecar of the frame at path. *out is owned by the
 * caller (caterva_lock_free, which also releases a held lock). CATERVA_E_IO when it cannot
 * be opened (e.g. a read-only directory without a sidecar). */
int caterva_lock_open(caterva_ctx *ctx, const char *path, caterva_lock **out);
/** The same for a writer of an array that must exist already: when nothing is at path, the
 * error opening it gives (CATERVA_E_IO or CATERVA_E_NOTFOUND), and no sidecar is created. */
int caterva_lock_open_writer(caterva_ctx *ctx, const char *path, caterva_lock **out);
/** The same for a reader: opens the sidecar only when it exists (CATERVA_E_NOTFOUND
 * otherwise), so that reading creates no file. */
int caterva_lock_open_existing(caterva_ctx *ctx, const char *path, caterva_lock **out);
/** Take the exclusive lock without waiting and increment the generation counter (its new
 * value in *gen, may be NULL). CATERVA_E_BUSY when another handle holds the lock. */
int caterva_lock_exclusive(caterva_ctx *ctx, caterva_lock *lk, uint64_t *gen);
/** Take the shared lock without waiting; CATERVA_E_BUSY while a writer holds it. */
int caterva_lock_shared(caterva_ctx *ctx, caterva_lock *lk);
/** While holding the exclusive lock: increment the generation counter once more (its new value
 * in *gen, may be NULL), telling readers that the frame changed again (the group commit does
 * it after its last array commits: caterva_array_commit_group). */
int caterva_lock_bump(caterva_ctx *ctx, caterva_lock *lk, uint64_t *gen);
/** Release whatever lock lk holds (NULL and "not held" accepted). */
int caterva_lock_release(caterva_lock *lk);
/** Read the generation counter without locking (0 for a new sidecar). */
int caterva_lock_generation(caterva_ctx *ctx, caterva_lock *lk, uint64_t *gen);
void caterva_lock_free(caterva_lock *lk);
/** @} */

#endif /* CATERVA_FRAME_H */
