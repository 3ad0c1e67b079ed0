/*
 * wcache_txn.c -- transactions on arrays: begin, savepoints (a copy of the pending images,
 * not a flush), release, rollback to a savepoint, commit (the cache flushed, the statistics
 * stored, then the super-chunk's commit) and rollback (the cache discarded).
 */
#include "write_cache_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Copies of the n pending entries of src into a new array *out (n may be 0). */
static int copy_pending(caterva_ctx *ctx, caterva_array *a, cat_wentry **out, int *n) {
  const cat_wcache *wc = a->wc;
  size_t nb = cat_wcache_bits_words(&a->g) * sizeof(uint64_t);
  int k = 0;
  *out = NULL;
  *n = 0;
  for (int i = 0; wc != NULL && i < wc->n; i++) k += wc->e[i].nchunk >= 0;
  if (k == 0) return CATERVA_OK;
  if ((k = cat_wcache_normalize_all(ctx, a)) < 0) return k;
  k = 0;
  for (int i = 0; i < wc->n; i++) k += wc->e[i].nchunk >= 0;
  *out = calloc((size_t)k, sizeof **out);
  if (*out == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  for (int i = 0, j = 0; i < wc->n; i++) {
    const cat_wentry *e = &wc->e[i];
    cat_wentry *c;
    if (e->nchunk < 0) continue;
    c = &(*out)[j++];
    *c = *e;
    c->img = malloc((size_t)a->g.chunksize);
    c->bits = malloc(nb);
    *n = j;
    if (c->img == NULL || c->bits == NULL) {
      cat_wcache_entries_free(*out, j, NULL);
      *out = NULL;
      *n = 0;
      return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
    }
    memcpy(c->img, e->img, (size_t)a->g.chunksize);
    memcpy(c->bits, e->bits, nb);
  }
  return CATERVA_OK;
}

/* Make the cache hold exactly the images of mark m (copied again: the mark stays). */
static int restore_pending(caterva_ctx *ctx, caterva_array *a, const cat_wmark *m) {
  size_t nb = cat_wcache_bits_words(&a->g) * sizeof(uint64_t);
  int rc = CATERVA_OK;
  cat_wcache_discard(a);
  for (int i = 0; m != NULL && i < m->n; i++) {
    cat_wentry *e;
    CAT_TRY(leave, cat_wcache_claim(ctx, a, m->e[i].nchunk, &e));
    e->perm = -1; /* the copies are in the chunk's layout */
    memcpy(e->img, m->e[i].img, (size_t)a->g.chunksize);
    memcpy(e->bits, m->e[i].bits, nb);
    e->nset = m->e[i].nset;
  }
leave:
  return rc;
}

int caterva_array_begin(caterva_ctx *ctx, caterva_array *a) {
  int rc = cat_array_check_writable(ctx, a);
  if (rc < 0) return rc;
  rc = caterva_array_flush(ctx, a); /* what came before is not part of it */
  if (rc < 0) return rc;
  rc = caterva_schunk_begin(ctx, a->sc);
  if (rc < 0) return rc;
  rc = cat_bs_begin(ctx, a);
  if (rc < 0) (void)caterva_schunk_rollback(ctx, a->sc);
  return rc;
}

/* Store what the worker holds. A failure cannot be reported where this runs (SQLite drops
 * the messages of xSavepoint and xRelease), so it is kept: every later call fails with it
 * until the transaction rolls back (its writes are incomplete). */
static void settle_or_stick(caterva_ctx *ctx, caterva_array *a) {
  int rc = cat_wcache_reap(ctx, a, 1);
  cat_wcache_handed_reset(a->wc);
  if (rc >= 0) return;
  a->wc->stuck = rc;
  snprintf(a->wc->stuckmsg, sizeof a->wc->stuckmsg, "%s", ctx != NULL ? ctx->errmsg : "");
  cat_ws_discard(a->wc->ws, a->wc->pool);
}

int caterva_array_savepoint(caterva_ctx *ctx, caterva_array *a, int level) {
  cat_wcache *wc;
  int rc = CATERVA_OK, k = 0;
  CAT_CHECK(leave, a != NULL, CATERVA_E_INVALID, "no array");
  CAT_TRY(leave, cat_wcache_get(ctx, a));
  wc = a->wc;
  /* what the worker holds belongs before the mark; a transaction already failing is
   * reported by its next write, read or commit, which SQLite gives the message of */
  if (!wc->stuck) settle_or_stick(ctx, a);
  cat_wcache_drop_marks(wc, level);
  for (int i = 0; i < wc->n; i++) k += wc->e[i].nchunk >= 0;
  if ((int64_t)k * a->g.chunksize > CAT_WMARK_COPY_MAX) CAT_TRY(leave, caterva_array_flush(ctx, a));
  if (wc->nmarks == wc->capmarks) {
    int cap = wc->capmarks ? 2 * wc->capmarks : 8;
    cat_wmark *p = realloc(wc->marks, (size_t)cap * sizeof *p);
    CAT_CHECK(leave, p != NULL, CATERVA_E_NOMEM, "out of memory");
    wc->marks = p;
    wc->capmarks = cap;
  }
  wc->marks[wc->nmarks].level = level;
  CAT_TRY(leave, copy_pending(ctx, a, &wc->marks[wc->nmarks].e, &wc->marks[wc->nmarks].n));
  rc = caterva_schunk_savepoint(ctx, a->sc, level);
  if (rc >= 0) rc = cat_bs_mark(ctx, a, level);
  if (rc >= 0) wc->nmarks++;
  else cat_wcache_entries_free(wc->marks[wc->nmarks].e, wc->marks[wc->nmarks].n, NULL);
leave:
  return rc;
}

int caterva_array_release(caterva_ctx *ctx, caterva_array *a, int level) {
  if (a == NULL) return cat_error(ctx, CATERVA_E_INVALID, "no array");
  if (a->wc != NULL && !a->wc->stuck) settle_or_stick(ctx, a); /* a statement's end */
  cat_wcache_drop_marks(a->wc, level);
  cat_bs_release(a, level);
  return caterva_schunk_release(ctx, a->sc, level);
}

int caterva_array_rollback_to(caterva_ctx *ctx, caterva_array *a, int level) {
  const cat_wmark *m = NULL;
  int rc;
  if (a == NULL) return cat_error(ctx, CATERVA_E_INVALID, "no array");
  cat_wcache_drop_marks(a->wc, level + 1);
  if (a->wc != NULL) cat_ws_discard(a->wc->ws, a->wc->pool); /* all of it came after the mark */
  rc = caterva_schunk_rollback_to(ctx, a->sc, level);
  if (rc >= 0) cat_bs_rollback_to(a, level);
  if (rc >= 0) rc = cat_array_load_meta(ctx, a);
  if (a->wc != NULL && a->wc->nmarks > 0) m = &a->wc->marks[a->wc->nmarks - 1];
  if (rc >= 0) rc = restore_pending(ctx, a, m);
  else cat_wcache_discard(a);
  return rc;
}

int cat_array_commit_prepare(caterva_ctx *ctx, caterva_array *a) {
  int rc = caterva_array_flush(ctx, a);
  if (rc < 0) return rc;
  /* the statistics go into the trailer this commit writes */
  rc = cat_bs_store(ctx, a);
  if (rc < 0) return rc;
  cat_wcache_drop_marks(a->wc, -1);
  return CATERVA_OK;
}

int cat_array_commit_finish(caterva_ctx *ctx, caterva_array *a, int sync) {
  int rc = caterva_schunk_commit(ctx, a->sc, sync);
  if (rc >= 0) cat_bs_end(a);
  return rc;
}

int caterva_array_commit(caterva_ctx *ctx, caterva_array *a, int sync) {
  int rc = cat_array_commit_prepare(ctx, a);
  return rc < 0 ? rc : cat_array_commit_finish(ctx, a, sync);
}

int caterva_array_rollback(caterva_ctx *ctx, caterva_array *a) {
  int rc, rc2;
  if (a == NULL) return cat_error(ctx, CATERVA_E_INVALID, "no array");
  cat_wcache_drop_marks(a->wc, -1);
  cat_wcache_discard(a);
  if (a->wc != NULL) a->wc->stuck = 0;
  rc = caterva_schunk_rollback(ctx, a->sc);
  cat_bs_rollback(a);
  rc2 = cat_array_load_meta(ctx, a);
  return rc < 0 ? rc : rc2;
}
