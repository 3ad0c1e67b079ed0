/*
 * frame_s3.h -- sparse frames under an s3://bucket/prefix/ that a writer changes
 * (frame_s3.c), and what it needs of the remote store (frame_remote.c). Internal to
 * libcaterva.
 *
 * The commit protocol (docs/guarantees.md, "Arrays in S3"): chunks written by a transaction
 * stay in memory (pending) until its commit, which uploads those its new index names, each
 * under a new number with If-None-Match: * (a number taken meanwhile -- 412 -- is replaced by
 * a fresh one), then replaces chunks.b2frame with If-Match: <the ETag the transaction started
 * from>: that PUT is the commit point. Its 412 is CATERVA_E_BUSY (another writer committed
 * first; nothing of this transaction is visible). A failed or unanswered index PUT is never
 * sent again blindly: the index is read back, and the writer reports success when it holds
 * the bytes sent, sends it again when it still holds the base version, and reports BUSY
 * otherwise.
 */
#ifndef CAT_FRAME_S3_H
#define CAT_FRAME_S3_H

#include "frame_disk_internal.h"
#include "remote.h"

/* Chunks a writer holds until they are uploaded (frame_s3.c). */
typedef struct cat_s3w cat_s3w;

/* ---- frame_remote.c: what the writes use of the remote store ---------------------------- */

/* The store's lock (the fetch-ahead thread shares the session and the pending chunks). */
void cat_rstore_lock(caterva_schunk *sc);
void cat_rstore_unlock(caterva_schunk *sc);
cat_remote *cat_rstore_session(const caterva_schunk *sc);
/* The prefix's URL (ends without the leaf; cat_remote_sibling adds one). */
const char *cat_rstore_url(const caterva_schunk *sc);
/* The version (ETag) of chunks.b2frame this store reflects: a buffer of CAT_RVERSION bytes. */
#define CAT_RVERSION 96
char *cat_rstore_version(caterva_schunk *sc);
/* A commit published a new version: no reopen is due. */
void cat_rstore_committed(caterva_schunk *sc);
/* What this store holds is not what is published (a staged group commit that did not
 * become visible, or was published by another writer): caterva_schunk_stale says 1, so the
 * array is opened again before it is read or written. */
void cat_rstore_forsake(caterva_schunk *sc);
/* When the index this store reflects was written (seconds since the epoch, -1 unknown). */
int64_t *cat_rstore_index_mtime(caterva_schunk *sc);
/* The pending chunks of a writable store (NULL until the first write). */
cat_s3w **cat_rstore_writes(caterva_schunk *sc);
/* A store for a prefix that is to be created (nothing fetched; sparse, writable). */
int cat_remote_open_new(caterva_ctx *ctx, caterva_schunk *sc, const char *path,
                        const caterva_remote_opts *o);

/* ---- frame_s3.c ------------------------------------------------------------------------- */

/* 1 when path is an s3:// URL. */
int cat_path_is_s3(const char *path);
/* cat_sparse_put for a store in S3: the chunk stays pending under a new number. The lock is
 * taken inside. */
int cat_s3_put(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *chunk, int32_t cbytes,
               int64_t num);
/* A pending chunk dropped (rollback, replaced): never uploaded. Uploaded ones are left to
 * the collection of unreferenced objects. */
void cat_s3_forget(caterva_schunk *sc, int64_t num);
/* cat_sparse_write_index for a store in S3: the commit protocol above. */
int cat_s3_commit(caterva_ctx *ctx, caterva_schunk *sc, int64_t *entries, int64_t n,
                  int64_t nbytes, int64_t cbytes);
/* A commit that stages its index (sc->s3stage, group_s3.c): the chunks are uploaded as
 * usual, the index is created under `leaf` (If-None-Match: *) instead of replacing
 * chunks.b2frame, and nothing is published. The store keeps its version (the base) until
 * cat_s3_staged_published. */
typedef struct cat_s3stage {
  char leaf[64];                /* in: the pending object's name in the prefix */
  uint8_t *body;                /* out: the index bytes staged (owned) */
  int64_t len;
  char base[CAT_RVERSION];      /* out: the version of chunks.b2frame they replace */
  int64_t *replaced, nreplaced; /* out: the chunks the commit took out of the index */
  int64_t base_mtime;           /* out: when the base was written (-1 unknown) */
  int64_t start_ms;             /* out: when the commit began uploading (monotonic ms) */
} cat_s3stage;
void cat_s3stage_clear(cat_s3stage *st);
/* The staged index became chunks.b2frame at version (by this writer): the store reflects
 * it; with collect, unreferenced objects are collected as after a commit. */
void cat_s3_staged_published(caterva_ctx *ctx, caterva_schunk *sc, cat_s3stage *st,
                             const char *version, bool collect);
/* The vlmetalayer that marks an array written only through group commits (group_s3.c). */
#define CAT_S3_GROUP_VLMETA "_caterva_group"
/* 1 when sc carries a group mark that names its own prefix (a member: group_s3.c), 0 when
 * not (no mark, or a copy's), < 0 an error. */
int cat_s3_group_member(caterva_ctx *ctx, caterva_schunk *sc);
/* Milliseconds on the monotonic clock (durations only). */
int64_t cat_mono_ms(void);
/* Sleep ms milliseconds (the pause between tries of a commit step). */
void cat_pause_ms(int ms);
/* One conditional PUT of an index object: If-Match: base, or If-None-Match: * when base is ""
 * (a new prefix); never resent by the transport (a commit point is found out, not retried).
 * *outcome is the put's CAT_PUT_* and *status its HTTP status; when it is CAT_PUT_DONE,
 * version (CAT_RVERSION bytes) receives the new ETag, asked for with a HEAD when the answer
 * had none. < 0 only for an error that is not the PUT's answer. */
int cat_s3_put_index(caterva_ctx *ctx, cat_remote *rm, const char *iurl, const uint8_t *body,
                     int64_t len, const char *base, char *version, int *outcome, long *status);
/* The bytes of pending chunk num (the lock held), or 0 when it is not pending. */
int cat_s3_pending(const cat_s3w *w, int64_t num, const uint8_t **p, int32_t *cbytes);
void cat_s3w_free(cat_s3w *w);

#endif /* CAT_FRAME_S3_H */
