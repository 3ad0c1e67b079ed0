/*
 * txn.c -- transactions on a file-backed super-chunk: many chunk edits, metalayer and
 * vlmetalayer changes made durable by one commit point, or undone without a trace.
 *
 * How (frame_file.c has the byte-level crash order of one commit):
 *   begin      remember the committed state (index, sizes, metalayers, vlmetalayers);
 *   edits      every new chunk is written where no committed byte lives -- after the
 *              written end of a contiguous file, or to a new file number of a sparse frame --
 *              and the new index is kept in memory only (schunk.c skips cat_file_commit);
 *   commit     one index, one trailer, one header write (contiguous: after an fsync of
 *              everything before it); sparse: chunks.b2frame replaced by rename, then the
 *              chunk files no longer referenced are removed;
 *   rollback   the contiguous file is truncated back to its committed length and new sparse
 *              chunk files are removed, so the frame is byte-identical to before begin; the
 *              in-memory state is restored from the remembered one.
 * Savepoints are marks: copies of the same state plus the written end (contiguous) or the
 * number of new files (sparse) at the time; ROLLBACK TO a mark truncates / removes what
 * followed it. Marks carry the level numbers of SQLite's xSavepoint: a rollback to level L
 * restores the newest mark at or below L, or the state at begin when the transaction
 * joined after L was opened.
 */
#include "frame_internal.h"

#include <stdlib.h>

/* What a rollback restores. */
typedef struct cat_mark {
  int level;                    /* savepoint level (-1 for the state at begin) */
  int64_t nchunks, nbytes, cbytes, dead, wend, next_file, nnew;
  int32_t chunksize, blocksize;
  int64_t *entries;             /* copy of the index */
  cat_meta meta[CATERVA_MAX_METALAYERS];
  int nmeta;
  cat_vlmeta *vlmeta;           /* deep copy */
  int nvlmeta;
  bool meta_dirty;
} cat_mark;

struct cat_txn {
  cat_mark begin;               /* the committed state */
  cat_mark *marks;              /* savepoints, oldest first, levels increasing */
  int nmarks, capmarks;
  bool meta_dirty;              /* the header's metalayers must be rewritten at commit */
  bool failed;                  /* a commit failed before its commit point: roll back only */
};

static void mark_free(cat_mark *m) {
  free(m->entries);
  for (int k = 0; k < m->nmeta; k++) free(m->meta[k].content);
  /* vlmeta is NULL when taking the mark ran out of memory before copying them
   * (tests/unit/test_alloc_fail) */
  for (int k = 0; m->vlmeta != NULL && k < m->nvlmeta; k++) {
    free(m->vlmeta[k].name);
    free(m->vlmeta[k].chunk);
    free(m->vlmeta[k].raw);
  }
  free(m->vlmeta);
  memset(m, 0, sizeof *m);
}

static void *dup_bytes(const void *p, size_t n) {
  void *d = malloc(n ? n : 1);
  if (d != NULL && n) memcpy(d, p, n);
  return d;
}

static int copy_metas(cat_meta *dst, const cat_meta *src, int n) {
  for (int k = 0; k < n; k++) {
    dst[k] = src[k];
    dst[k].content = dup_bytes(src[k].content, (size_t)src[k].len);
    if (dst[k].content == NULL) return CATERVA_E_NOMEM;
  }
  return CATERVA_OK;
}

static int copy_vlmetas(cat_vlmeta **dst, const cat_vlmeta *src, int n) {
  *dst = n ? calloc((size_t)n, sizeof **dst) : NULL;
  if (n && *dst == NULL) return CATERVA_E_NOMEM;
  for (int k = 0; k < n; k++) {
    (*dst)[k].name = strdup(src[k].name);
    (*dst)[k].chunk = dup_bytes(src[k].chunk, (size_t)src[k].cbytes);
    (*dst)[k].cbytes = src[k].cbytes;
    if ((*dst)[k].name == NULL || (*dst)[k].chunk == NULL) return CATERVA_E_NOMEM;
  }
  return CATERVA_OK;
}

/* Remember sc's current state in m. */
static int mark_take(caterva_ctx *ctx, const caterva_schunk *sc, int level, cat_mark *m) {
  int rc;
  memset(m, 0, sizeof *m);
  m->level = level;
  m->nchunks = sc->nchunks;
  m->nbytes = sc->nbytes;
  m->cbytes = sc->cbytes;
  m->dead = sc->dead;
  m->wend = sc->wend;
  m->next_file = sc->next_file;
  m->nnew = sc->nwritten;
  m->chunksize = sc->chunksize;
  m->blocksize = sc->blocksize;
  m->meta_dirty = sc->txn != NULL && sc->txn->meta_dirty;
  if (sc->nchunks > 0) {
    m->entries = dup_bytes(sc->entries, (size_t)sc->nchunks * sizeof *sc->entries);
    if (m->entries == NULL) goto nomem;
  }
  m->nmeta = sc->nmeta;
  m->nvlmeta = sc->nvlmeta;
  if (copy_metas(m->meta, sc->meta, sc->nmeta) < 0) goto nomem;
  if (copy_vlmetas(&m->vlmeta, sc->vlmeta, sc->nvlmeta) < 0) goto nomem;
  return CATERVA_OK;
nomem:
  mark_free(m);
  rc = cat_error(ctx, CATERVA_E_NOMEM, "out of memory remembering a transaction state");
  return rc;
}

/* Put the state of m back: the file first (so a failure leaves memory as it was), then the
 * in-memory index, metalayers and vlmetalayers (ownership of m's copies moves to sc, so m
 * is emptied; callers that keep the mark take it again). */
static int mark_restore(caterva_ctx *ctx, caterva_schunk *sc, cat_mark *m) {
  int rc = CATERVA_OK;
  if (sc->store == CATERVA_STORE_CONTIGUOUS && sc->wend > m->wend)
    CAT_TRY(leave, cat_file_truncate_to(ctx, sc, m->wend));
  if (sc->store == CATERVA_STORE_SPARSE) cat_file_unlink_written(sc, m->nnew);
  if (sc->data != NULL)
    for (int64_t i = 0; i < sc->nchunks; i++) cat_file_retire_bytes(sc, sc->data[i]);
  free(sc->data);
  sc->data = NULL;
  free(sc->entries);
  sc->entries = m->entries;
  m->entries = NULL;
  sc->nchunks = m->nchunks;
  sc->nbytes = m->nbytes;
  sc->cbytes = m->cbytes;
  sc->dead = m->dead;
  sc->wend = m->wend;
  sc->next_file = m->next_file;
  sc->chunksize = m->chunksize;
  sc->blocksize = m->blocksize;
  for (int k = 0; k < sc->nmeta; k++) free(sc->meta[k].content);
  memcpy(sc->meta, m->meta, sizeof sc->meta);
  sc->nmeta = m->nmeta;
  m->nmeta = 0;
  for (int k = 0; k < sc->nvlmeta; k++) {
    free(sc->vlmeta[k].name);
    free(sc->vlmeta[k].chunk);
    free(sc->vlmeta[k].raw);
  }
  free(sc->vlmeta);
  sc->vlmeta = m->vlmeta;
  sc->nvlmeta = m->nvlmeta;
  m->vlmeta = NULL;
  m->nvlmeta = 0;
  sc->txn->meta_dirty = m->meta_dirty;
  memset(sc->special_ok, 0, sizeof sc->special_ok);
leave:
  return rc;
}

static void txn_free(cat_txn *t) {
  if (t == NULL) return;
  mark_free(&t->begin);
  for (int k = 0; k < t->nmarks; k++) mark_free(&t->marks[k]);
  free(t->marks);
  free(t);
}

int cat_txn_note_change(caterva_schunk *sc, bool meta_changed) {
  if (meta_changed) sc->txn->meta_dirty = true;
  return CATERVA_OK;
}

static int check_txn(caterva_ctx *ctx, const caterva_schunk *sc, bool want_open) {
  if (sc == NULL) return cat_error(ctx, CATERVA_E_INVALID, "schunk is NULL");
  if (want_open && sc->txn == NULL)
    return cat_error(ctx, CATERVA_E_INVALID, "no transaction is open");
  if (!want_open && sc->txn != NULL)
    return cat_error(ctx, CATERVA_E_INVALID, "a transaction is already open");
  return CATERVA_OK;
}

int caterva_schunk_begin(caterva_ctx *ctx, caterva_schunk *sc) {
  cat_txn *t = NULL;
  int rc = check_txn(ctx, sc, false);
  if (rc < 0) return rc;
  CAT_CHECK(fail, sc->store != CATERVA_STORE_MEMORY, CATERVA_E_INVALID,
            "transactions need a file store");
  CAT_CHECK(fail, sc->writable, CATERVA_E_READONLY, "schunk was opened read-only");
  CAT_CHECK(fail, !sc->broken, CATERVA_E_IO, "schunk unusable after a failed file update");
  t = calloc(1, sizeof *t);
  CAT_CHECK(fail, t != NULL, CATERVA_E_NOMEM, "out of memory");
  CAT_TRY(fail, mark_take(ctx, sc, -1, &t->begin));
  sc->txn = t;
  return CATERVA_OK;
fail:
  txn_free(t);
  return rc;
}

int caterva_schunk_in_txn(const caterva_schunk *sc) { return sc != NULL && sc->txn != NULL; }

/* Drop the marks at or above level. */
static void drop_marks(cat_txn *t, int level) {
  while (t->nmarks > 0 && t->marks[t->nmarks - 1].level >= level)
    mark_free(&t->marks[--t->nmarks]);
}

int caterva_schunk_savepoint(caterva_ctx *ctx, caterva_schunk *sc, int level) {
  cat_txn *t;
  int rc = check_txn(ctx, sc, true);
  if (rc < 0) return rc;
  t = sc->txn;
  drop_marks(t, level);
  if (t->nmarks == t->capmarks) {
    int cap = t->capmarks ? 2 * t->capmarks : 8;
    cat_mark *p = realloc(t->marks, (size_t)cap * sizeof *p);
    if (p == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
    t->marks = p;
    t->capmarks = cap;
  }
  rc = mark_take(ctx, sc, level, &t->marks[t->nmarks]);
  if (rc >= 0) t->nmarks++;
  return rc;
}

int caterva_schunk_release(caterva_ctx *ctx, caterva_schunk *sc, int level) {
  int rc = check_txn(ctx, sc, true);
  if (rc < 0) return rc;
  drop_marks(sc->txn, level);
  return CATERVA_OK;
}

/* A deep copy of a mark. */
static int mark_dup(caterva_ctx *ctx, const cat_mark *src, cat_mark *dst) {
  *dst = *src;
  dst->entries = NULL;
  dst->vlmeta = NULL;
  dst->nmeta = dst->nvlmeta = 0;
  if (src->nchunks > 0 &&
      (dst->entries = dup_bytes(src->entries, (size_t)src->nchunks * sizeof *src->entries)) == NULL)
    goto nomem;
  dst->nmeta = src->nmeta;
  if (copy_metas(dst->meta, src->meta, src->nmeta) < 0) goto nomem;
  dst->nvlmeta = src->nvlmeta;
  if (copy_vlmetas(&dst->vlmeta, src->vlmeta, src->nvlmeta) < 0) goto nomem;
  return CATERVA_OK;
nomem:
  mark_free(dst);
  return cat_error(ctx, CATERVA_E_NOMEM, "out of memory restoring a savepoint");
}

int caterva_schunk_rollback_to(caterva_ctx *ctx, caterva_schunk *sc, int level) {
  cat_txn *t;
  cat_mark copy;
  int rc = check_txn(ctx, sc, true);
  if (rc < 0) return rc;
  t = sc->txn;
  drop_marks(t, level + 1);
  /* The mark survives a ROLLBACK TO: restore from a copy of it. */
  rc = mark_dup(ctx, t->nmarks > 0 ? &t->marks[t->nmarks - 1] : &t->begin, &copy);
  if (rc < 0) return rc;
  rc = mark_restore(ctx, sc, &copy);
  mark_free(&copy);
  return rc;
}

int caterva_schunk_rollback(caterva_ctx *ctx, caterva_schunk *sc) {
  cat_txn *t;
  int rc = check_txn(ctx, sc, true);
  if (rc < 0) return rc;
  t = sc->txn;
  if (sc->broken) {
    /* failed after its commit point: the file holds either state; touch nothing */
    rc = cat_error(ctx, CATERVA_E_IO, "the transaction failed after its commit point");
  } else {
    rc = mark_restore(ctx, sc, &t->begin);
  }
  if (rc < 0) {
    /* The file could not be cut back: what lies past frame_len is ignored by readers and
     * cut by the next writer; this object no longer matches it. */
    sc->broken = true;
  }
  cat_file_forget_written(sc);
  sc->txn = NULL;
  txn_free(t);
  return rc;
}

/* Sparse: after the commit, remove the files that neither the new index refers to. */
static void remove_unreferenced(caterva_schunk *sc, const cat_txn *t) {
  int64_t *live = NULL, n = 0;
  if (cat_file_live_chunks(NULL, sc, &live, &n) < 0) return;
  /* a group commit (group.c) keeps the committed state's files until its journal is gone */
  for (int64_t i = 0; i < t->begin.nchunks && !sc->keep_replaced; i++) {
    int64_t num = t->begin.entries[i];
    if (num >= 0 && !cat_file_is_live(live, n, num)) cat_file_unlink_chunk(sc, num);
  }
  for (int64_t k = 0; k < sc->nwritten; k++)
    if (!cat_file_is_live(live, n, sc->written[k])) cat_file_unlink_chunk(sc, sc->written[k]);
  free(live);
}

/* Chunk files written by the open transaction (sparse) are recorded for its rollback. */
static bool header_in_place(const caterva_schunk *sc) {
  return cat_frame_header_len(sc) == sc->header_len && sc->header_len <= CAT_ATOMIC_HEADER_MAX;
}

bool cat_txn_commit_in_place(const caterva_schunk *sc) {
  return sc->txn == NULL || sc->store != CATERVA_STORE_CONTIGUOUS || !sc->txn->meta_dirty ||
         header_in_place(sc);
}

int cat_txn_replaced(caterva_ctx *ctx, const caterva_schunk *sc, int64_t **nums, int64_t *n) {
  int64_t *live = NULL, nlive = 0;
  int rc = CATERVA_OK;
  *nums = NULL;
  *n = 0;
  if (sc->txn == NULL || sc->store != CATERVA_STORE_SPARSE || sc->txn->begin.nchunks == 0)
    return CATERVA_OK;
  CAT_TRY(leave, cat_file_live_chunks(ctx, sc, &live, &nlive));
  *nums = malloc((size_t)sc->txn->begin.nchunks * sizeof **nums);
  CAT_CHECK(leave, *nums != NULL, CATERVA_E_NOMEM, "out of memory");
  for (int64_t i = 0; i < sc->txn->begin.nchunks; i++) {
    int64_t num = sc->txn->begin.entries[i];
    if (num >= 0 && !cat_file_is_live(live, nlive, num)) (*nums)[(*n)++] = num;
  }
leave:
  free(live);
  return rc;
}

int caterva_schunk_dead_over(const caterva_schunk *sc, int pct) {
  /* in a transaction the commit adds the old index and trailer to the dead bytes, and a new
   * index and trailer of about their size to the live ones: the bytes written so far tell */
  int64_t live;
  if (sc == NULL || sc->store != CATERVA_STORE_CONTIGUOUS || pct < 0 || sc->dead <= 0) return 0;
  live = (sc->txn != NULL ? sc->wend : sc->frame_len) - sc->dead;
  /* dead <= the file's length < 2^63 / 100 for any file this can write: no overflow */
  return sc->dead * 100 > (int64_t)pct * live;
}

void caterva_schunk_set_commit_pack(caterva_schunk *sc, int pct) {
  if (sc != NULL) sc->commit_pack = pct < 0 ? -1 : pct;
}

int caterva_schunk_commit(caterva_ctx *ctx, caterva_schunk *sc, int sync) {
  cat_txn *t;
  int rc = check_txn(ctx, sc, true);
  if (rc < 0) return rc;
  t = sc->txn;
  CAT_CHECK(leave, !t->failed, CATERVA_E_IO, "an earlier commit of this transaction failed");
  if (sc->store == CATERVA_STORE_CONTIGUOUS &&
      ((t->meta_dirty && !header_in_place(sc)) || caterva_schunk_dead_over(sc, sc->commit_pack))) {
    /* a header that cannot be rewritten in one sector, or a commit that a compaction would
     * follow: the whole frame, packed, renamed over */
    rc = cat_file_rewrite(ctx, sc);
  } else {
    rc = cat_file_commit(ctx, sc, sc->entries, sc->nchunks, sc->nbytes, sc->cbytes,
                         t->meta_dirty,
                         sync == CATERVA_SYNC_NORMAL ? CATERVA_SYNC_NORMAL
                                                     : sync ? CATERVA_SYNC_FULL : CATERVA_SYNC_OFF);
  }
  if (rc < 0) {
    if (!sc->broken) t->failed = true; /* nothing committed: the caller rolls back */
    goto leave;
  }
  if (sc->store == CATERVA_STORE_SPARSE) remove_unreferenced(sc, t);
  cat_file_forget_written(sc);
  sc->txn = NULL;
  txn_free(t);
leave:
  return rc;
}

int64_t caterva_schunk_dead_bytes(const caterva_schunk *sc) { return sc != NULL ? sc->dead : 0; }

int caterva_schunk_compact(caterva_ctx *ctx, caterva_schunk *sc, int force) {
  int rc = check_txn(ctx, sc, false);
  if (rc < 0) return rc;
  if (sc->store != CATERVA_STORE_CONTIGUOUS || !sc->writable) return CATERVA_OK;
  if (!force && (sc->dead == 0 || sc->dead * 4 < sc->frame_len)) return CATERVA_OK;
  return cat_file_rewrite(ctx, sc);
}

void caterva_schunk_set_flags(caterva_schunk *sc, int flags) {
  if (sc == NULL) return;
  sc->no_autocompact = (flags & CATERVA_SC_NO_AUTOCOMPACT) != 0;
  sc->retain_maps = (flags & CATERVA_SC_RETAIN_MAPS) != 0;
  sc->nosync = (flags & CATERVA_SC_NOSYNC) != 0;
}

void caterva_schunk_release_maps(caterva_ctx *ctx, caterva_schunk *sc) {
  if (sc != NULL) cat_file_release_retired(ctx, sc);
}

int caterva_schunk_rename(caterva_ctx *ctx, caterva_schunk *sc, const char *path) {
  char *copy = NULL;
  int rc = CATERVA_OK;
  CAT_CHECK(leave, sc != NULL && path != NULL && sc->path != NULL, CATERVA_E_INVALID,
            "rename: needs a file store and a path");
  copy = strdup(path);
  CAT_CHECK(leave, copy != NULL, CATERVA_E_NOMEM, "out of memory");
  CAT_TRY(leave, cat_io_rename_noreplace(ctx, sc->path, path));
  cat_io_sync_parent(path);
  free(sc->path);
  sc->path = copy;
  copy = NULL;
leave:
  free(copy);
  return rc;
}

int caterva_schunk_collect(caterva_ctx *ctx, caterva_schunk *sc, int dry_run, int64_t *removed) {
  if (sc == NULL) return cat_error(ctx, CATERVA_E_INVALID, "collect: NULL super-chunk");
  return cat_file_collect(ctx, sc, dry_run != 0, removed);
}

int caterva_schunk_stale(caterva_ctx *ctx, caterva_schunk *sc) {
  if (sc == NULL || sc->store == CATERVA_STORE_MEMORY) return 0;
  return cat_file_stale(ctx, sc);
}

int caterva_schunk_stale_later(caterva_ctx *ctx, caterva_schunk *sc) {
  if (sc != NULL && sc->remote != NULL &&
      (sc->store == CATERVA_STORE_CONTIGUOUS || sc->store == CATERVA_STORE_SPARSE))
    return cat_remote_check_later(sc);
  return caterva_schunk_stale(ctx, sc);
}

int caterva_schunk_verify(caterva_ctx *ctx, caterva_schunk *sc) {
  if (sc == NULL || sc->remote == NULL) return 0;
  return cat_remote_verify(ctx, sc);
}
