/*
 * frame_s3.c -- writes to sparse frames under an s3://bucket/prefix/: the chunks a writer
 * holds until its commit, the commit protocol (frame_s3.h), and the upload of a whole
 * super-chunk to a new prefix (caterva_schunk_save_ex).
 *
 * The objects are a local sparse frame's files: `chunks.b2frame` and `XXXXXXXX.chunk`, so a
 * copy of the prefix is a directory every reader opens. Objects that no index names any more
 * (replaced chunks, those of a transaction that lost its commit or was killed) are left
 * where they are; nothing here deletes an object a reader of an older version may still be
 * reading.
 */
#include "frame_s3.h"

#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <time.h>

/* Pending chunks are uploaded in waves of at most this many bytes or objects. */
#define CAT_S3_WAVE_BYTES ((int64_t)64 << 20)
#define CAT_S3_WAVE_OBJECTS 256
/* Fresh numbers tried for one chunk whose number was taken meanwhile. */
#define CAT_S3_RENUMBER_MAX 64
/* Index PUTs sent again after finding the index still at the base version. */
#define CAT_S3_PUBLISH_TRIES 4

typedef struct s3_chunk {
  int64_t num;
  uint8_t *bytes;  /* owned */
  int32_t cbytes;
} s3_chunk;

/* A chunk object this writer saw leave the index (or that a lost commit of its uploaded),
 * and when. */
typedef struct s3_gone {
  int64_t num, when;
} s3_gone;

struct cat_s3w {
  s3_chunk *c;
  int64_t n, cap;
  s3_gone *gone;
  int64_t ngone, capgone;
  int64_t last_collect;  /* time of the last collection (0: none yet) */
};

int cat_path_is_s3(const char *path) {
  return path != NULL && strncasecmp(path, "s3://", 5) == 0;
}

void cat_s3w_free(cat_s3w *w) {
  if (w == NULL) return;
  for (int64_t k = 0; k < w->n; k++) free(w->c[k].bytes);
  free(w->c);
  free(w->gone);
  free(w);
}

/* Remember that chunk num left every index (or never entered one) at time when. Best effort:
 * out of memory, it is simply not remembered (a later collection by age finds it). */
static void note_gone(cat_s3w *w, int64_t num, int64_t when) {
  if (w->ngone == w->capgone) {
    int64_t cap = w->capgone ? 2 * w->capgone : 64;
    s3_gone *g = realloc(w->gone, (size_t)cap * sizeof *g);
    if (g == NULL) return;
    w->gone = g;
    w->capgone = cap;
  }
  w->gone[w->ngone].num = num;
  w->gone[w->ngone++].when = when;
}

static int64_t gone_since(const cat_s3w *w, int64_t num) {
  for (int64_t k = 0; k < w->ngone; k++)
    if (w->gone[k].num == num) return w->gone[k].when;
  return -1;
}

static int64_t find(const cat_s3w *w, int64_t num) {
  for (int64_t k = w != NULL ? w->n - 1 : -1; k >= 0; k--)
    if (w->c[k].num == num) return k;
  return -1;
}

int cat_s3_pending(const cat_s3w *w, int64_t num, const uint8_t **p, int32_t *cbytes) {
  int64_t k = find(w, num);
  if (k < 0) return 0;
  *p = w->c[k].bytes;
  *cbytes = w->c[k].cbytes;
  return 1;
}

static void drop_at(cat_s3w *w, int64_t k) {
  free(w->c[k].bytes);
  w->c[k] = w->c[--w->n];
}

int cat_s3_put(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *chunk, int32_t cbytes,
               int64_t num) {
  cat_s3w **wp, *w;
  uint8_t *copy = malloc(cbytes > 0 ? (size_t)cbytes : 1);
  int rc = CATERVA_OK;
  if (copy == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  memcpy(copy, chunk, (size_t)cbytes);
  cat_rstore_lock(sc);
  wp = cat_rstore_writes(sc);
  if (*wp == NULL && (*wp = calloc(1, sizeof **wp)) == NULL) goto nomem;
  w = *wp;
  if (w->n == w->cap) {
    int64_t cap = w->cap ? 2 * w->cap : 64;
    s3_chunk *c = realloc(w->c, (size_t)cap * sizeof *c);
    if (c == NULL) goto nomem;
    w->c = c;
    w->cap = cap;
  }
  w->c[w->n].num = num;
  w->c[w->n].bytes = copy;
  w->c[w->n].cbytes = cbytes;
  w->n++;
  cat_rstore_unlock(sc);
  return rc;
nomem:
  cat_rstore_unlock(sc);
  free(copy);
  return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
}

void cat_s3_forget(caterva_schunk *sc, int64_t num) {
  cat_s3w *w;
  int64_t k;
  cat_rstore_lock(sc);
  w = *cat_rstore_writes(sc);
  if ((k = find(w, num)) >= 0) drop_at(w, k);
  cat_rstore_unlock(sc);
}

static char *chunk_url(const char *base, int64_t num) {
  char leaf[32];
  snprintf(leaf, sizeof leaf, "%08llX.chunk", (unsigned long long)num);
  return cat_remote_sibling(base, leaf);
}

/* ---- uploading chunks ---------------------------------------------------------------------- */

/* One object to create: its number (changed when the first one was taken), its bytes. */
typedef struct s3_up {
  int64_t num;
  const uint8_t *bytes;
  int32_t cbytes;
  bool done;
} s3_up;

/* Upload u[0..n) with If-None-Match: *, in waves; each number found taken (412: an object of
 * another writer, or one left by a killed one) is replaced by *next (then incremented) and
 * sent again. */
static int upload(caterva_ctx *ctx, cat_remote *rm, const char *base, s3_up *u, int64_t n,
                  int64_t *next) {
  cat_put *p = NULL;
  char **urls = NULL;
  int64_t *who = NULL, left = n, tries = 0;
  int rc = CATERVA_OK;
  int64_t cap = n < CAT_S3_WAVE_OBJECTS ? n : CAT_S3_WAVE_OBJECTS;
  if (n == 0) return CATERVA_OK;
  p = calloc((size_t)cap, sizeof *p);
  urls = calloc((size_t)cap, sizeof *urls);
  who = calloc((size_t)cap, sizeof *who);
  CAT_CHECK(leave, p != NULL && urls != NULL && who != NULL, CATERVA_E_NOMEM, "out of memory");
  while (left > 0) {
    int m = 0;
    int64_t bytes = 0;
    for (int64_t k = 0; k < n && m < cap; k++) {
      if (u[k].done || (m > 0 && bytes + u[k].cbytes > CAT_S3_WAVE_BYTES)) continue;
      urls[m] = chunk_url(base, u[k].num);
      CAT_CHECK(leave, urls[m] != NULL, CATERVA_E_NOMEM, "out of memory");
      memset(&p[m], 0, sizeof p[m]);
      p[m].url = urls[m];
      p[m].body = u[k].bytes;
      p[m].len = u[k].cbytes;
      p[m].if_none_match = true;
      who[m++] = k;
      bytes += u[k].cbytes;
    }
    rc = cat_remote_put(ctx, rm, p, m);
    for (int q = 0; q < m && rc >= 0; q++) {
      s3_up *x = &u[who[q]];
      if (p[q].outcome == CAT_PUT_DONE) {
        x->done = true;
        left--;
      } else if (p[q].outcome == CAT_PUT_PRECONDITION) {
        CAT_CHECK(leave, ++tries <= CAT_S3_RENUMBER_MAX * (n < 16 ? n : 16), CATERVA_E_BUSY,
                  "'%s': chunk numbers keep being taken by another writer", base);
        CAT_CHECK(leave, *next <= 0xffffffffLL, CATERVA_E_OVERFLOW,
                  "sparse frame: out of file numbers");
        x->num = (*next)++;
      } else {
        CAT_FAIL(leave, CATERVA_E_REMOTE, "PUT of a chunk of '%s': no answer", base);
      }
    }
    for (int q = 0; q < m; q++) {
      free(urls[q]);
      urls[q] = NULL;
    }
    CAT_TRY(leave, rc);
  }
leave:
  for (int64_t q = 0; urls != NULL && q < cap; q++) free(urls[q]);
  free(urls);
  free(p);
  free(who);
  return rc;
}

/* ---- publishing the index ---------------------------------------------------------------- */

/* The index object of plan pl in one new malloc'ed buffer. */
static int index_bytes(caterva_ctx *ctx, const cat_plan *pl, uint8_t **out, int64_t *len) {
  int64_t n = pl->header_len + pl->index_len + pl->trailer_len;
  uint8_t *b = malloc((size_t)n);
  if (b == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  memcpy(b, pl->header, (size_t)pl->header_len);
  if (pl->index_len > 0) memcpy(b + pl->header_len, pl->index, (size_t)pl->index_len);
  memcpy(b + pl->header_len + pl->index_len, pl->trailer, (size_t)pl->trailer_len);
  *out = b;
  *len = n;
  return CATERVA_OK;
}

static int busy(caterva_ctx *ctx, const char *url) {
  return cat_error(ctx, CATERVA_E_BUSY,
                   "'%s': another writer committed first (the index changed since this "
                   "transaction began); nothing of this transaction is visible: run it again",
                   url);
}

/* After an index PUT with no answer or a 5xx: what the index holds now. 1 ours (landed,
 * *version set), 0 still the base version (not landed), < 0 an error. An index that is
 * neither ours nor the base tells nothing: another writer may have committed instead of this
 * transaction, or after it on top of it (then this one is visible). Neither BUSY ("nothing
 * visible") nor success can be said, so it is an error saying so, and this transaction's
 * chunks are not taken for garbage. */
static int find_out(caterva_ctx *ctx, cat_remote *rm, const char *iurl, const uint8_t *body,
                    int64_t len, const char *base, char *version) {
  cat_get g;
  int rc;
  memset(&g, 0, sizeof g);
  g.url = iurl;
  g.off = 0;
  g.len = len + 1; /* one byte more: a longer object is not ours */
  g.short_ok = true;
  g.missing_ok = true;
  g.dst = malloc((size_t)g.len);
  if (g.dst == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  rc = cat_remote_get(ctx, rm, &g, 1);
  if (rc < 0) {
    char msg[CAT_ERRMSG_SIZE];
    snprintf(msg, sizeof msg, "%s", caterva_ctx_errmsg(ctx));
    rc = cat_error(ctx, CATERVA_E_REMOTE, "the commit of '%s' may or may not have landed "
                   "(its index PUT got no usable answer, and reading it back failed: %s): "
                   "open the array again to see", iurl, msg);
  } else if ((g.status == 200 || g.status == 206) && g.got == len &&
             memcmp(g.dst, body, (size_t)len) == 0) {
    snprintf(version, CAT_RVERSION, "%s", g.version);
    rc = 1;
  } else if (base[0] != '\0' ? strcmp(g.version, base) == 0 : g.status == 404) {
    rc = 0;
  } else {
    rc = cat_error(ctx, CATERVA_E_REMOTE, "the commit of '%s' may or may not have landed: its "
                   "index PUT got no usable answer, and the index has changed since (another "
                   "writer committed, instead of this transaction or after it): open the array "
                   "again to see whether this transaction's changes are there", iurl);
  }
  free(g.dst);
  return rc;
}

void cat_pause_ms(int ms) {
  struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

int cat_s3_put_index(caterva_ctx *ctx, cat_remote *rm, const char *iurl, const uint8_t *body,
                     int64_t len, const char *base, char *version, int *outcome, long *status) {
  cat_put p;
  int rc = CATERVA_OK;
  memset(&p, 0, sizeof p);
  p.url = iurl;
  p.body = body;
  p.len = len;
  p.no_retry = true;
  if (base[0] != '\0') p.if_match = base;
  else p.if_none_match = true;
  CAT_TRY(leave, cat_remote_put(ctx, rm, &p, 1));
  *outcome = p.outcome;
  *status = p.status;
  if (p.outcome != CAT_PUT_DONE) goto leave;
  snprintf(version, CAT_RVERSION, "%s", p.version);
  if (version[0] == '\0') { /* no ETag in the answer: ask for it */
    int64_t size;
    CAT_TRY(leave, cat_remote_head(ctx, rm, iurl, &size, version, CAT_RVERSION));
  }
leave:
  return rc;
}

/* Replace the index at iurl by body with If-Match: base (If-None-Match: * when base is "":
 * a new prefix): the commit point. *version receives the new ETag. */
static int publish(caterva_ctx *ctx, cat_remote *rm, const char *iurl, const uint8_t *body,
                   int64_t len, const char *base, char *version) {
  int rc = CATERVA_OK;
  for (int attempt = 0;; attempt++) {
    int outcome;
    long status;
    CAT_TRY(leave, cat_s3_put_index(ctx, rm, iurl, body, len, base, version, &outcome, &status));
    if (outcome == CAT_PUT_DONE) return CATERVA_OK;
    if (outcome == CAT_PUT_PRECONDITION) {
      if (base[0] != '\0') return busy(ctx, iurl);
      return cat_error(ctx, CATERVA_E_EXISTS, "'%s' exists already", iurl);
    }
    /* no answer, or a 5xx: it may have landed. Never sent again before knowing. */
    rc = find_out(ctx, rm, iurl, body, len, base, version);
    if (rc != 0) return rc < 0 ? rc : CATERVA_OK;
    CAT_CHECK(leave, attempt + 1 < CAT_S3_PUBLISH_TRIES, CATERVA_E_REMOTE,
              "PUT %s: HTTP %ld, and it did not land (retries exhausted); nothing of this "
              "transaction is visible", iurl, status);
    cat_pause_ms(100 << attempt);
  }
leave:
  return rc;
}

/* ---- the commit --------------------------------------------------------------------------- */

/* Renumber chunk old to new in entries[0..n) and in the transaction's list. */
static void renumber(caterva_schunk *sc, int64_t *entries, int64_t n, int64_t old, int64_t new) {
  for (int64_t i = 0; i < n; i++)
    if (entries[i] == old) entries[i] = new;
  if (entries != sc->entries)
    for (int64_t i = 0; i < sc->nchunks; i++)
      if (sc->entries[i] == old) sc->entries[i] = new;
  for (int64_t k = 0; k < sc->nwritten; k++)
    if (sc->written[k] == old) sc->written[k] = new;
}

/* Upload the pending chunks that entries[0..n) name (the lock held). */
static int upload_pending(caterva_ctx *ctx, caterva_schunk *sc, cat_s3w *w, int64_t *entries,
                          int64_t n) {
  s3_up *u = NULL;
  int64_t nu = 0, *live = NULL, nlive = 0;
  int rc = CATERVA_OK;
  if (w == NULL || w->n == 0) return CATERVA_OK;
  CAT_TRY(leave, cat_file_live_chunks(ctx, sc, &live, &nlive));
  if (entries != sc->entries) { /* the caller's index, not sc's: check against it */
    free(live);
    live = NULL;
    nlive = 0;
    if (n > 0) {
      live = malloc((size_t)n * sizeof *live);
      CAT_CHECK(leave, live != NULL, CATERVA_E_NOMEM, "out of memory");
      for (int64_t i = 0; i < n; i++)
        if (entries[i] >= 0) live[nlive++] = entries[i];
      /* sorted for cat_file_is_live */
      for (int64_t a = 1; a < nlive; a++)
        for (int64_t b = a; b > 0 && live[b - 1] > live[b]; b--) {
          int64_t t = live[b];
          live[b] = live[b - 1];
          live[b - 1] = t;
        }
    }
  }
  u = calloc((size_t)w->n, sizeof *u);
  CAT_CHECK(leave, u != NULL, CATERVA_E_NOMEM, "out of memory");
  for (int64_t k = 0; k < w->n; k++)
    if (cat_file_is_live(live, nlive, w->c[k].num)) {
      u[nu].num = w->c[k].num;
      u[nu].bytes = w->c[k].bytes;
      u[nu].cbytes = w->c[k].cbytes;
      nu++;
    }
  CAT_TRY(leave, upload(ctx, cat_rstore_session(sc), cat_rstore_url(sc), u, nu, &sc->next_file));
  /* the numbers that were taken meanwhile: the index names the new ones */
  for (int64_t q = 0, k = 0; q < nu; q++) {
    while (k < w->n && !cat_file_is_live(live, nlive, w->c[k].num)) k++;
    if (k < w->n && u[q].num != w->c[k].num) {
      renumber(sc, entries, n, w->c[k].num, u[q].num);
      w->c[k].num = u[q].num;
    }
    k++;
  }
leave:
  free(u);
  free(live);
  return rc;
}

/* ---- collecting unreferenced chunk objects --------------------------------------------- */

/* A staged index of a group commit: "chunks.b2frame.<id>.pending" (group_s3.c). */
static bool is_staged_name(const char *name) {
  size_t n = strlen(name), p = strlen(CAT_SPARSE_INDEX ".");
  return n > p + 8 && strncmp(name, CAT_SPARSE_INDEX ".", p) == 0 &&
         strcmp(name + n - 8, ".pending") == 0;
}

/* After a commit (the lock held): delete the chunk objects that no index names any more and
 * that left the last index more than the grace period ago -- so that a statement still
 * reading an older version on another machine finds them. S3 does not say when an object
 * left an index, so an object goes only when that is known to be long enough ago:
 *  - it is named neither by the new index nor by the one the transaction started from
 *    (`replaced`), and that one was written more than the grace ago (then no index since
 *    named it), and the object itself was written more than the grace ago (a transaction
 *    uploading it right now has not published its index yet); or
 *  - this writer saw it leave the index (or its own lost commit upload it) more than the
 *    grace ago.
 * Best effort: a failure leaves the objects for the next writer. At most once per half the
 * grace per store. */
static void collect(caterva_ctx *ctx, caterva_schunk *sc, cat_s3w *w, const int64_t *replaced,
                    int64_t nreplaced, int64_t base_mtime, int64_t now) {
  cat_remote *rm = cat_rstore_session(sc);
  int64_t grace = cat_remote_gc_grace(rm), nobj = 0, *live = NULL, nlive = 0, nurl = 0;
  cat_obj *obj = NULL;
  char **urls = NULL;
  if (grace < 0 || (w->last_collect > 0 && now - w->last_collect < grace / 2)) return;
  w->last_collect = now;
  if (cat_remote_list_dir(ctx, rm, &obj, &nobj) < 0 ||
      cat_file_live_chunks(ctx, sc, &live, &nlive) < 0)
    goto leave;
  if (nobj > 0 && (urls = calloc((size_t)nobj, sizeof *urls)) == NULL) goto leave;
  for (int64_t k = 0; k < nobj && nurl < CAT_S3_WAVE_OBJECTS * 4; k++) {
    int64_t num = cat_file_chunk_number(obj[k].name), left;
    bool by_age = true;
    if (num < 0 && is_staged_name(obj[k].name) && obj[k].mtime >= 0 &&
        now - obj[k].mtime > grace) { /* a staged index no pending group commit names */
      urls[nurl] = cat_remote_sibling(cat_rstore_url(sc), obj[k].name);
      if (urls[nurl] != NULL) nurl++;
      continue;
    }
    if (num < 0 || cat_file_is_live(live, nlive, num)) continue;
    for (int64_t q = 0; q < nreplaced; q++) by_age &= replaced[q] != num;
    by_age = by_age && base_mtime >= 0 && now - base_mtime > grace && obj[k].mtime >= 0 &&
             now - obj[k].mtime > grace;
    left = gone_since(w, num);
    if (!by_age && !(left >= 0 && now - left > grace)) continue;
    urls[nurl] = chunk_url(cat_rstore_url(sc), num);
    if (urls[nurl] != NULL) nurl++;
  }
  for (int64_t k = 0; k < nurl; k += CAT_S3_WAVE_OBJECTS) {
    int m = (int)(nurl - k < CAT_S3_WAVE_OBJECTS ? nurl - k : CAT_S3_WAVE_OBJECTS);
    if (cat_remote_delete(ctx, rm, urls + k, m) < 0) break;
  }
leave:
  for (int64_t k = 0; k < nurl; k++) free(urls[k]);
  free(urls);
  free(obj);
  free(live);
}

int64_t cat_mono_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void cat_s3stage_clear(cat_s3stage *st) {
  if (st == NULL) return;
  free(st->body);
  free(st->replaced);
  st->body = NULL;
  st->replaced = NULL;
  st->len = st->nreplaced = 0;
}

/* A commit of an array that carries a group mark, outside a group commit: refused (the
 * group's writers publish its index only after their record, group_s3.c). The mark is
 * looked for in the version the transaction started from (the commit's If-Match is that
 * version), so a mark published meanwhile makes the commit BUSY and its retry sees it. */
static int check_group_mark(caterva_ctx *ctx, caterva_schunk *sc) {
  int rc;
  if (sc->s3_group) return CATERVA_OK;
  rc = cat_s3_group_member(ctx, sc);
  if (rc <= 0) return rc;
  return cat_error(ctx, CATERVA_E_READONLY,
                   "'%s' belongs to a group of arrays in S3 that commit together (vlmetalayer "
                   "%s): it is written only through a table over all of them", sc->path,
                   CAT_S3_GROUP_VLMETA);
}

/* The staged path of cat_s3_commit (the lock held): the index created under st->leaf. */
static int stage(caterva_ctx *ctx, caterva_schunk *sc, cat_s3w *w, const cat_plan *pl,
                 uint8_t **body, int64_t len, int64_t **replaced, int64_t nreplaced,
                 int64_t start) {
  cat_s3stage *st = sc->s3stage;
  cat_put p;
  char *url = cat_remote_sibling(cat_rstore_url(sc), st->leaf);
  int rc = CATERVA_OK;
  CAT_CHECK(leave, url != NULL, CATERVA_E_NOMEM, "out of memory");
  memset(&p, 0, sizeof p);
  p.url = url;
  p.body = *body;
  p.len = len;
  p.if_none_match = true;
  CAT_TRY(leave, cat_remote_put(ctx, cat_rstore_session(sc), &p, 1));
  /* the name is this transaction's alone: a 412 means a retry found its first try landed */
  CAT_CHECK(leave, p.outcome != CAT_PUT_UNKNOWN, CATERVA_E_REMOTE,
            "PUT %s: no answer (HTTP %ld); nothing of this transaction is visible", url,
            p.status);
  cat_s3stage_clear(st);
  st->body = *body;
  st->len = len;
  *body = NULL;
  st->replaced = *replaced;
  st->nreplaced = nreplaced;
  *replaced = NULL;
  snprintf(st->base, sizeof st->base, "%s", cat_rstore_version(sc));
  st->base_mtime = *cat_rstore_index_mtime(sc);
  st->start_ms = start;
  sc->header_len = pl->header_len;
  sc->frame_len = pl->frame_len;
  while (w != NULL && w->n > 0) drop_at(w, w->n - 1); /* uploaded */
leave:
  free(url);
  return rc;
}

void cat_s3_staged_published(caterva_ctx *ctx, caterva_schunk *sc, cat_s3stage *st,
                             const char *version, bool do_collect) {
  cat_s3w *w;
  int64_t now = (int64_t)time(NULL);
  cat_rstore_lock(sc);
  snprintf(cat_rstore_version(sc), CAT_RVERSION, "%s", version);
  cat_rstore_committed(sc);
  *cat_rstore_index_mtime(sc) = now;
  w = *cat_rstore_writes(sc);
  if (w == NULL && (w = *cat_rstore_writes(sc) = calloc(1, sizeof *w)) == NULL) goto leave;
  while (w->n > 0) drop_at(w, w->n - 1);
  for (int64_t k = 0; k < st->nreplaced; k++) note_gone(w, st->replaced[k], now);
  if (do_collect) collect(ctx, sc, w, st->replaced, st->nreplaced, st->base_mtime, now);
leave:
  cat_rstore_unlock(sc);
}

int cat_s3_commit(caterva_ctx *ctx, caterva_schunk *sc, int64_t *entries, int64_t n,
                  int64_t nbytes, int64_t cbytes) {
  cat_plan pl;
  cat_s3w *w;
  uint8_t *body = NULL;
  int64_t len = 0, *replaced = NULL, nreplaced = 0, grace, base_mtime, now;
  int64_t start = cat_mono_ms();
  char *iurl = NULL, version[CAT_RVERSION];
  int rc = CATERVA_OK;
  memset(&pl, 0, sizeof pl);
  cat_rstore_lock(sc);
  w = *cat_rstore_writes(sc);
  CAT_CHECK(leave, cat_path_is_s3(sc->path), CATERVA_E_READONLY,
            "'%s': only arrays in S3 (s3://bucket/prefix/) are writable remotely", sc->path);
  iurl = cat_remote_sibling(cat_rstore_url(sc), CAT_SPARSE_INDEX);
  CAT_CHECK(leave, iurl != NULL, CATERVA_E_NOMEM, "out of memory");
  grace = cat_remote_gc_grace(cat_rstore_session(sc));
  CAT_TRY(leave, check_group_mark(ctx, sc));
  CAT_TRY(leave, upload_pending(ctx, sc, w, entries, n));
  pl.entries = entries;
  pl.cbytes = cbytes;
  rc = cat_plan_finish(ctx, sc, CAT_FRAME_SPARSE, &pl, n, nbytes);
  pl.entries = NULL;
  CAT_TRY(leave, rc);
  CAT_TRY(leave, index_bytes(ctx, &pl, &body, &len));
  /* chunks uploaded longer ago than half the grace might be collected by another writer
   * (they are named by no index yet): such a commit is given up */
  CAT_CHECK(leave,
            grace < 0 || grace > INT64_MAX / 1000 || (cat_mono_ms() - start) * 2 <= grace * 1000,
            CATERVA_E_REMOTE,
            "'%s': uploading this transaction's chunks took longer than half of gc_grace (%lld "
            "s); nothing of it is visible: run it again", sc->path, (long long)grace);
  CAT_TRY(leave, cat_txn_replaced(ctx, sc, &replaced, &nreplaced));
  if (sc->s3stage != NULL) {
    rc = stage(ctx, sc, w, &pl, &body, len, &replaced, nreplaced, start);
    goto leave;
  }
  rc = publish(ctx, cat_rstore_session(sc), iurl, body, len, cat_rstore_version(sc), version);
  if (rc == CATERVA_E_BUSY && w != NULL) /* uploaded for nothing: garbage from now on */
    for (int64_t k = 0; k < w->n; k++) note_gone(w, w->c[k].num, (int64_t)time(NULL));
  CAT_TRY(leave, rc);
  snprintf(cat_rstore_version(sc), CAT_RVERSION, "%s", version);
  cat_rstore_committed(sc);
  sc->header_len = pl.header_len;
  sc->frame_len = pl.frame_len;
  base_mtime = *cat_rstore_index_mtime(sc);
  now = (int64_t)time(NULL);
  *cat_rstore_index_mtime(sc) = now;
  if (w == NULL && (w = *cat_rstore_writes(sc) = calloc(1, sizeof *w)) == NULL) goto leave;
  /* everything pending is now uploaded or named by no index */
  while (w->n > 0) drop_at(w, w->n - 1);
  for (int64_t k = 0; k < nreplaced; k++) note_gone(w, replaced[k], now);
  collect(ctx, sc, w, replaced, nreplaced, base_mtime, now);
leave:
  free(replaced);
  cat_rstore_unlock(sc);
  free(body);
  free(iurl);
  cat_plan_free(&pl);
  return rc;
}

/* ---- a whole super-chunk to a new prefix ---------------------------------------------------- */

static int save_s3(caterva_ctx *ctx, caterva_schunk *sc, const char *path,
                   const caterva_remote_opts *o) {
  cat_remote *rm = NULL;
  char *url = NULL, *iurl = NULL, version[CAT_RVERSION];
  s3_up *u = NULL;
  uint8_t **tmp = NULL, *body = NULL;
  int64_t nu = 0, next = 0, cbytes = 0, len = 0, ahead = 0, *entries = NULL;
  cat_plan pl;
  int rc = CATERVA_OK;
  memset(&pl, 0, sizeof pl);
  CAT_TRY(leave, cat_remote_new(ctx, path, o, &rm, &url));
  iurl = cat_remote_sibling(url, CAT_SPARSE_INDEX);
  CAT_CHECK(leave, iurl != NULL, CATERVA_E_NOMEM, "out of memory");
  /* an array there already: say so before uploading anything under its prefix */
  rc = cat_remote_head(ctx, rm, iurl, &len, version, sizeof version);
  CAT_CHECK(leave, rc == CATERVA_E_NOTFOUND, rc < 0 ? rc : CATERVA_E_EXISTS,
            "'%s' holds an array already", path);
  rc = CATERVA_OK;
  len = 0;
  if (sc->nchunks > 0) {
    u = calloc((size_t)sc->nchunks, sizeof *u);
    tmp = calloc((size_t)sc->nchunks, sizeof *tmp);
    entries = malloc((size_t)sc->nchunks * sizeof *entries);
    CAT_CHECK(leave, u != NULL && tmp != NULL && entries != NULL, CATERVA_E_NOMEM,
              "out of memory");
  }
  for (int64_t i = 0; i < sc->nchunks; i++) {
    const uint8_t *p;
    int32_t cb;
    entries[i] = sc->entries[i];
    if (sc->entries[i] < 0) continue;
    CAT_TRY(leave, cat_file_stored_ahead(ctx, sc, i, &ahead));
    CAT_TRY(leave, cat_file_stored_chunk(ctx, sc, i, false, &p, &cb, &tmp[i]));
    if (tmp[i] == NULL && sc->remote != NULL) { /* a cache entry the next fetch may drop */
      tmp[i] = malloc((size_t)cb);
      CAT_CHECK(leave, tmp[i] != NULL, CATERVA_E_NOMEM, "out of memory");
      memcpy(tmp[i], p, (size_t)cb);
      p = tmp[i];
    }
    u[nu].num = nu;
    u[nu].bytes = p;
    u[nu].cbytes = cb;
    entries[i] = nu++;
    cbytes += cb;
  }
  next = nu;
  CAT_TRY(leave, upload(ctx, rm, url, u, nu, &next));
  for (int64_t i = 0, q = 0; i < sc->nchunks; i++)
    if (entries[i] >= 0) entries[i] = u[q++].num;
  pl.entries = entries;
  pl.cbytes = cbytes;
  rc = cat_plan_finish(ctx, sc, CAT_FRAME_SPARSE, &pl, sc->nchunks, sc->nbytes);
  pl.entries = NULL;
  CAT_TRY(leave, rc);
  CAT_TRY(leave, index_bytes(ctx, &pl, &body, &len));
  CAT_TRY(leave, publish(ctx, rm, iurl, body, len, "", version));
leave:
  for (int64_t i = 0; tmp != NULL && i < sc->nchunks; i++) free(tmp[i]);
  free(tmp);
  free(u);
  free(entries);
  free(body);
  free(iurl);
  free(url);
  cat_plan_free(&pl);
  cat_remote_free(rm);
  return rc;
}

int caterva_schunk_save_ex(caterva_ctx *ctx, caterva_schunk *sc, const char *path, int store,
                           const caterva_remote_opts *o) {
  if (sc == NULL || path == NULL)
    return cat_error(ctx, CATERVA_E_INVALID, "schunk_save: NULL argument");
  if (!caterva_path_is_remote(path)) return caterva_schunk_save(ctx, sc, path, store);
  if (!cat_path_is_s3(path))
    return cat_error(ctx, CATERVA_E_READONLY, "'%s': http(s):// URLs are read-only; arrays "
                     "are written to s3://bucket/prefix/ (a sparse frame)", path);
  if (store != CATERVA_STORE_SPARSE)
    return cat_error(ctx, CATERVA_E_INVALID, "'%s': arrays in S3 are written as sparse frames "
                     "(a prefix of chunk objects): save with the sparse store", path);
  if (sc->broken) return cat_error(ctx, CATERVA_E_IO, "schunk unusable after a failed update");
  return save_s3(ctx, sc, path, o);
}
