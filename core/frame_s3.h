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
/* The bytes of pending chunk num (the lock held), or 0 when it is not pending. */
int cat_s3_pending(const cat_s3w *w, int64_t num, const uint8_t **p, int32_t *cbytes);
void cat_s3w_free(cat_s3w *w);

#endif /* CAT_FRAME_S3_H */
