/*
 * frame_remote.c -- frames on HTTP(S) servers and in S3: the remote store of a super-chunk
 * (opened by frame_remote_open.c).
 *
 * Opening a contiguous frame costs one wave when it is small, else two: the first asks for
 * the first CAT_RPROBE bytes of `<url>` (its header says where its index and trailer are),
 * the second for the index and the trailer. When `<url>` is not a frame (a 404 for a
 * directory's name, a redirect), `<url>/chunks.b2frame` is asked next: a sparse frame (one
 * wave less when the URL ends with '/', which says "a directory" up front).
 *
 * Chunks are fetched in waves too (cat_remote_prefetch): first the header and block-start
 * table of every chunk a read needs that is not known yet, then the bytes of the blocks it
 * needs -- a block's bytes run from its start to the next block's start, and are checked
 * with the decoder's framing once they are there (cat_chunk_span_reach): a chunk whose
 * streams would run further is fetched whole -- plus the prefix every block needs (the
 * dictionary) and block 0 under DELTA. A chunk is fetched whole instead when it is small or
 * when most of it is needed; ranges of one object closer than what one more request costs
 * on the link (measured latency x bandwidth, at least 4 KiB: cat_remote_merge_gap) are asked
 * as one. A chunk's bytes live in a buffer of its size, of which only the fetched parts are
 * ever read: each block is marked present when its bytes have arrived and checked.
 *
 * Fetched chunks stay while their bytes fit in the session's cache budget; the least recently
 * used ones (never one pinned by a reader) are dropped first, with their records: a record is
 * made for a chunk when a read first touches it, so that the store's memory follows what is
 * cached, not the chunk count. Index entries are read through frame_index.c (a large index of
 * a contiguous frame: a block at a time, the blocks of one wave of chunks in one wave). A reader pins the chunk it reads
 * from (cat_remote_pin): its bytes stay until it unpins them.
 *
 * The frame's version (ETag, else Last-Modified) read at open is compared with every answer:
 * an object that changed underneath gives an error for that read. A statement's first read
 * checks the version (cat_remote_check_later; a sparse frame's check rides that read's first
 * wave as a GET of the first bytes of chunks.b2frame: ride_check), else cat_remote_stale (one
 * HEAD request) does, and a change has the statement open the frame again. A sparse frame in
 * S3 opened for writing is changed by frame_s3.c: the chunks its transaction wrote are read
 * from memory until they are uploaded (sync_slot), and every slot holds the bytes of one
 * index entry.
 *
 * Threads: every entry point below takes the store's lock for all it does, network included,
 * so that an iterator's fetch-ahead thread (array_iter.c) may fetch the next part of a scan
 * while the caller reads chunks it pinned before (their bytes never move while pinned).
 */
#include "frame_remote_internal.h"

/* ---- helpers ------------------------------------------------------------------------------ */

static char *chunk_url(const cat_rstore *rs, int64_t num) {
  char leaf[32];
  snprintf(leaf, sizeof leaf, "%08llX.chunk", (unsigned long long)num);
  return cat_remote_sibling(rs->url, leaf);
}

/* Where the bytes of the chunk of index entry e start in its object (contiguous: inside the
 * frame). */
static int64_t chunk_off(const caterva_schunk *sc, int64_t e) {
  return sc->store == CATERVA_STORE_SPARSE ? 0 : sc->header_len + e;
}

/* Upper bound of chunk c's size from the index (contiguous frames: the distance to the next
 * chunk or to the end of the section), or -1: sparse frames, and a lazy index where the next
 * entry lies in another block of the index (the chunk's header then says; learn_header bounds
 * it by the section). The whole index is walked for the nearest greater offset; a lazy one
 * gives entry i + 1, which is that offset in a frame written in order and a bound above it
 * otherwise. */
static int64_t chunk_room(const caterva_schunk *sc, const cat_rchunk *c) {
  int64_t e = c->entry, next = sc->section;
  if (sc->store == CATERVA_STORE_SPARSE) return -1;
  if (sc->lazy_index != NULL) return c->next > e && c->next < next ? c->next - e : -1;
  for (int64_t k = 0; k < sc->nchunks; k++)
    if (sc->entries[k] > e && sc->entries[k] < next) next = sc->entries[k];
  return next - e;
}

/* ---- the records of the chunks touched: a table by chunk number ----------------------------- */

static int64_t rec_home(const cat_rstore *rs, int64_t i) {
  return (int64_t)(((uint64_t)i * 0x9E3779B97F4A7C15ull) >> 20) & (rs->tabcap - 1);
}

static cat_rchunk *rec_find(const cat_rstore *rs, int64_t i) {
  if (rs->tabcap == 0) return NULL;
  for (int64_t h = rec_home(rs, i);; h = (h + 1) & (rs->tabcap - 1)) {
    if (rs->tab[h] == NULL) return NULL;
    if (rs->tab[h]->i == i) return rs->tab[h];
  }
}

static void rec_put(cat_rstore *rs, cat_rchunk *c) {
  int64_t h = rec_home(rs, c->i);
  while (rs->tab[h] != NULL) h = (h + 1) & (rs->tabcap - 1);
  rs->tab[h] = c;
}

/* Chunk i's record, made (empty: entry -1) when there is none. */
static int rec_get(caterva_ctx *ctx, cat_rstore *rs, int64_t i, cat_rchunk **out) {
  cat_rchunk *c = rec_find(rs, i);
  if (c == NULL && 2 * (rs->ntab + 1) > rs->tabcap) { /* at most half full */
    int64_t cap = rs->tabcap > 0 ? 2 * rs->tabcap : 64, old = rs->tabcap;
    cat_rchunk **t = calloc((size_t)cap, sizeof *t), **was = rs->tab;
    if (t == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
    rs->tab = t;
    rs->tabcap = cap;
    for (int64_t k = 0; k < old; k++)
      if (was[k] != NULL) rec_put(rs, was[k]);
    free(was);
  }
  if (c == NULL) {
    c = calloc(1, sizeof *c);
    if (c == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
    c->i = i;
    c->entry = c->next = -1;
    rec_put(rs, c);
    rs->ntab++;
  }
  *out = c;
  return CATERVA_OK;
}

/* Take record c out of the table and free it (its bytes dropped before). The slots after it
 * up to an empty one are placed again, so that every record stays reachable from its home. */
static void rec_remove(cat_rstore *rs, cat_rchunk *c) {
  int64_t h = rec_home(rs, c->i), mask = rs->tabcap - 1;
  while (rs->tab[h] != c) h = (h + 1) & mask;
  rs->tab[h] = NULL;
  for (int64_t k = (h + 1) & mask; rs->tab[k] != NULL; k = (k + 1) & mask) {
    cat_rchunk *m = rs->tab[k];
    rs->tab[k] = NULL;
    rec_put(rs, m);
  }
  rs->ntab--;
  free(c);
}

/* Free chunk c's bytes (the record stays, its entry too). */
static void rchunk_drop(cat_rstore *rs, cat_rchunk *c) {
  if (c->buf != NULL) rs->cached -= c->cbytes;
  free(c->buf);
  free(c->blk);
  c->buf = NULL;
  c->blk = NULL;
  c->cbytes = c->have = 0;
  memset(&c->sp, 0, sizeof c->sp);
  c->whole = false;
}

/* Drop least recently used chunks (not pinned, not in `keep` tick) until add more bytes
 * fit the budget (or nothing more can go); their records go too. */
static void make_room(cat_rstore *rs, int64_t add, uint64_t keep) {
  while (rs->cached + add > rs->budget) {
    cat_rchunk *lru = NULL;
    for (int64_t h = 0; h < rs->tabcap; h++) {
      cat_rchunk *c = rs->tab[h];
      if (c != NULL && c->buf != NULL && c->pins == 0 && c->used < keep &&
          (lru == NULL || c->used < lru->used))
        lru = c;
    }
    if (lru == NULL) return;
    rchunk_drop(rs, lru);
    rec_remove(rs, lru);
  }
}

/* Index entry of chunk i into *e, and into *next entry i + 1 when a lazy index has it at
 * hand (chunk_room). The lock held. */
static int entry_of(caterva_ctx *ctx, const caterva_schunk *sc, int64_t i, int64_t *e,
                    int64_t *next) {
  if (i < 0 || i >= sc->nchunks)
    return cat_error(ctx, CATERVA_E_RANGE, "chunk %lld out of range", (long long)i);
  return cat_sc_entries_locked(ctx, sc, &i, 1, e, next);
}

/* Chunk i's record (*out), for index entry e (next: see entry_of) that sc has now: emptied
 * when its bytes are of another entry (bytes a reader has pinned are kept until the store
 * closes), and filled from a writer's pending chunk. The lock held. */
static int sync_slot(caterva_ctx *ctx, cat_rstore *rs, caterva_schunk *sc, int64_t i, int64_t e,
                     int64_t next, cat_rchunk **out) {
  cat_rchunk *c = NULL;
  const uint8_t *p;
  int32_t cb;
  int rc;
  if (i < 0 || i >= sc->nchunks)
    return cat_error(ctx, CATERVA_E_RANGE, "chunk %lld out of range", (long long)i);
  if ((rc = rec_get(ctx, rs, i, &c)) < 0) return rc;
  *out = c;
  if (c->buf != NULL && c->entry != e) {
    if (c->pins > 0) {
      uint8_t **r = realloc(rs->retired, (size_t)(rs->nretired + 1) * sizeof *r);
      if (r == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
      rs->retired = r;
      r[rs->nretired++] = c->buf;
      c->buf = NULL; /* kept among the retired */
      rs->cached -= c->cbytes;
    }
    rchunk_drop(rs, c);
  }
  c->entry = e;
  c->next = next;
  if (c->buf == NULL && c->entry >= 0 && cat_s3_pending(rs->w, c->entry, &p, &cb)) {
    c->buf = malloc((size_t)cb);
    if (c->buf == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
    memcpy(c->buf, p, (size_t)cb);
    c->cbytes = c->have = cb;
    c->whole = true;
    rs->cached += cb;
  }
  return CATERVA_OK;
}

void cat_rstore_lock(caterva_schunk *sc) { pthread_mutex_lock(&sc->remote->mu); }
void cat_rstore_unlock(caterva_schunk *sc) { pthread_mutex_unlock(&sc->remote->mu); }
cat_remote *cat_rstore_session(const caterva_schunk *sc) { return sc->remote->rm; }
const char *cat_rstore_url(const caterva_schunk *sc) { return sc->remote->url; }
char *cat_rstore_version(caterva_schunk *sc) { return sc->remote->version; }
cat_s3w **cat_rstore_writes(caterva_schunk *sc) { return &sc->remote->w; }
int64_t *cat_rstore_index_mtime(caterva_schunk *sc) { return &sc->remote->index_mtime; }

void cat_rstore_committed(caterva_schunk *sc) {
  sc->remote->changed = false;
  sc->remote->pending = false;
}

void cat_rstore_forsake(caterva_schunk *sc) {
  pthread_mutex_lock(&sc->remote->mu);
  sc->remote->changed = true;
  pthread_mutex_unlock(&sc->remote->mu);
}

/* Ask for pieces in as few requests as the merge rule allows: one wave. Pieces of the same
 * object closer than the merge gap are one request into a temporary buffer. */
static int cmp_piece(const void *a, const void *b) {
  const rpiece *x = a, *y = b;
  int c = strcmp(x->url, y->url);
  if (c != 0) return c;
  return (x->off > y->off) - (x->off < y->off);
}

/* Pieces longer than CAT_RMAXREQ cut in parts (new array in *out, *nout). */
static int split_pieces(const rpiece *p, int64_t n, rpiece **out, int64_t *nout) {
  int64_t m = 0;
  rpiece *q;
  for (int64_t k = 0; k < n; k++) m += (p[k].len + CAT_RMAXREQ - 1) / CAT_RMAXREQ;
  q = malloc((size_t)(m > 0 ? m : 1) * sizeof *q);
  if (q == NULL) return CATERVA_E_NOMEM;
  m = 0;
  for (int64_t k = 0; k < n; k++)
    for (int64_t at = 0; at < p[k].len; at += CAT_RMAXREQ) {
      q[m] = p[k];
      q[m].off += at;
      q[m].dst += at;
      q[m].len = p[k].len - at < CAT_RMAXREQ ? p[k].len - at : CAT_RMAXREQ;
      m++;
    }
  *out = q;
  *nout = m;
  return CATERVA_OK;
}

/* Is answer g of the frame object from the version opened (its ETag or Last-Modified, else its
 * size)? A change found by the first read after check_later is CATERVA_E_CHANGED (nothing of
 * it was used: the caller opens the frame again), later ones an error for the statement. */
static int check_answer(caterva_ctx *ctx, cat_rstore *rs, const caterva_schunk *sc,
                        const cat_get *g) {
  bool same;
  if (strcmp(g->url, cat_rs_frame_url(rs)) != 0) return CATERVA_OK;
  same = !g->changed && (g->version[0] != '\0' && rs->version[0] != '\0'
                             ? strcmp(g->version, rs->version) == 0
                             : g->size < 0 || g->size == sc->frame_len);
  if (same) return CATERVA_OK;
  rs->changed = true;
  if (rs->pending)
    return cat_error(ctx, CATERVA_E_CHANGED, "'%s' changed since it was opened (version %s, "
                     "now %s)", g->url, rs->version, g->version);
  return cat_error(ctx, CATERVA_E_IO, "'%s' changed while it was being read (version %s, now "
                   "%s): run the statement again", g->url, rs->version, g->version);
}

/* Ask the answers of gets to the frame object to be judged against the version opened (the
 * object's size is the frame's length, chunks.b2frame's too). */
static void expect_version(const cat_rstore *rs, const caterva_schunk *sc, cat_get *g, int64_t n) {
  for (int64_t q = 0; q < n; q++)
    if (strcmp(g[q].url, cat_rs_frame_url(rs)) == 0) {
      g[q].expect_version = rs->version;
      g[q].expect_size = sc->frame_len;
    }
}

/* After a wave's answers are checked: the statement's pending check is done when one of them
 * came from the frame object. */
static void checked(cat_rstore *rs, const cat_get *g, int64_t n) {
  for (int64_t q = 0; q < n && rs->pending; q++)
    if (strcmp(g[q].url, cat_rs_frame_url(rs)) == 0) rs->pending = false;
}

/* The statement's pending version check of a sparse frame, whose chunks live in objects of
 * their own: when no request of the wave asks chunks.b2frame, a GET of its first CAT_RCHECK
 * bytes rides the wave (g has room for it at g[ng]; buf receives them), judged by check_answer like
 * any other. The wave's other requests then take a refusal as an answer (missing_ok), so that
 * a chunk object removed by the commit the check finds reads as that change (the statement
 * opens the frame again), not as a missing object; refused() reports the others as before.
 * 1 when the check was added. */
static int ride_check(const cat_rstore *rs, const caterva_schunk *sc, cat_get *g, int64_t ng,
                      uint8_t *buf) {
  if (!rs->pending || sc->store != CATERVA_STORE_SPARSE) return 0;
  for (int64_t q = 0; q < ng; q++)
    if (strcmp(g[q].url, cat_rs_frame_url(rs)) == 0) return 0;
  for (int64_t q = 0; q < ng; q++) g[q].missing_ok = true;
  memset(&g[ng], 0, sizeof g[ng]);
  g[ng].url = cat_rs_frame_url(rs);
  g[ng].len = CAT_RCHECK;
  g[ng].dst = buf;
  return 1;
}

/* After the answers of a wave that carried the check were judged: a request refused (a 404,
 * 403 or redirect) is the error it would have been without missing_ok. */
static int refused(caterva_ctx *ctx, const cat_get *g, int64_t ng) {
  for (int64_t q = 0; q < ng; q++)
    if (g[q].missing_ok && g[q].errmsg[0] != '\0')
      return cat_error(ctx, g[q].status == 404 ? CATERVA_E_NOTFOUND : CATERVA_E_REMOTE, "%s",
                       g[q].errmsg);
  return CATERVA_OK;
}

int cat_rs_run_pieces(caterva_ctx *ctx, cat_rstore *rs, const caterva_schunk *sc,
                      const rpiece *orig, int64_t norig) {
  cat_get *g = NULL;
  rpiece *p = NULL;
  int64_t *first = NULL, ng = 0, nall, n = 0, gap = cat_remote_merge_gap(rs->rm);
  uint8_t buf[CAT_RCHECK];
  int rc = CATERVA_OK;
  if (norig == 0) return CATERVA_OK;
  CAT_TRY(leave, split_pieces(orig, norig, &p, &n) < 0
                     ? cat_error(ctx, CATERVA_E_NOMEM, "out of memory") : 0);
  CAT_CHECK(leave, n <= INT32_MAX / 2, CATERVA_E_OVERFLOW, "too many ranges");
  qsort(p, (size_t)n, sizeof *p, cmp_piece);
  g = calloc((size_t)n + 1, sizeof *g); /* + 1: ride_check */
  first = calloc((size_t)n + 1, sizeof *first);
  CAT_CHECK(leave, g != NULL && first != NULL, CATERVA_E_NOMEM, "out of memory");
  for (int64_t k = 0; k < n;) {
    int64_t end = p[k].off + p[k].len, m = k + 1, useful = p[k].len;
    /* merged: closer than the gap, and what lies between them at most a quarter of what the
     * request carries that is needed (fetched bytes stay within 1.25x of the needed ones) */
    while (m < n && strcmp(p[m].url, p[k].url) == 0 && p[m].off <= end + gap &&
           p[m].off + p[m].len - p[k].off <= CAT_RMAXREQ &&
           4 * (p[m].off > end ? p[m].off - end : 0) <= useful + p[m].len) {
      useful += p[m].len;
      if (p[m].off + p[m].len > end) end = p[m].off + p[m].len;
      m++;
    }
    first[ng] = k;
    g[ng].url = p[k].url;
    g[ng].off = p[k].off;
    g[ng].len = end - p[k].off;
    if (m == k + 1) {
      g[ng].dst = p[k].dst;
    } else {
      g[ng].dst = malloc((size_t)g[ng].len);
      CAT_CHECK(leave, g[ng].dst != NULL, CATERVA_E_NOMEM, "out of memory");
    }
    ng++;
    k = m;
  }
  first[ng] = n;
  nall = ng + ride_check(rs, sc, g, ng, buf);
  expect_version(rs, sc, g, nall);
  CAT_TRY(leave, cat_remote_get(ctx, rs->rm, g, (int)nall));
  for (int64_t q = 0; q < nall; q++) CAT_TRY(leave, check_answer(ctx, rs, sc, &g[q]));
  CAT_TRY(leave, refused(ctx, g, nall));
  checked(rs, g, nall);
  for (int64_t q = 0; q < ng; q++) {
    if (first[q + 1] - first[q] > 1)
      for (int64_t k = first[q]; k < first[q + 1]; k++)
        memcpy(p[k].dst, g[q].dst + (p[k].off - g[q].off), (size_t)p[k].len);
  }
leave:
  for (int64_t q = 0; g != NULL && q < ng; q++)
    if (first[q + 1] - first[q] > 1) free(g[q].dst);
  free(g);
  free(first);
  free(p);
  return rc;
}

void cat_remote_close(caterva_schunk *sc) {
  cat_rstore *rs = sc->remote;
  if (rs == NULL) return;
  for (int64_t h = 0; h < rs->tabcap; h++)
    if (rs->tab[h] != NULL) {
      rchunk_drop(rs, rs->tab[h]);
      free(rs->tab[h]);
    }
  free(rs->tab);
  for (int64_t k = 0; k < rs->nretired; k++) free(rs->retired[k]);
  free(rs->retired);
  cat_s3w_free(rs->w);
  free(rs->tail);
  free(rs->have);
  cat_remote_free(rs->rm);
  free(rs->iurl);
  free(rs->url);
  pthread_mutex_destroy(&rs->mu);
  free(rs);
  sc->remote = NULL;
}

int cat_remote_check_later(caterva_schunk *sc) {
  cat_rstore *rs = sc->remote;
  int rc = 1;
  pthread_mutex_lock(&rs->mu);
  if (!rs->changed) {
    rs->pending = true;
    rc = 0;
  }
  pthread_mutex_unlock(&rs->mu);
  return rc;
}

static int stale_locked(caterva_ctx *ctx, caterva_schunk *sc);

/* The pending check, the lock held. */
static int verify_locked(caterva_ctx *ctx, caterva_schunk *sc) {
  int rc = sc->remote->pending ? stale_locked(ctx, sc) : 0;
  if (rc == 1) (void)cat_error(ctx, CATERVA_E_CHANGED, "'%s' changed since it was opened",
                               sc->remote->url);
  return rc;
}

int cat_remote_verify(caterva_ctx *ctx, caterva_schunk *sc) {
  int rc;
  pthread_mutex_lock(&sc->remote->mu);
  rc = verify_locked(ctx, sc);
  pthread_mutex_unlock(&sc->remote->mu);
  return rc;
}

int cat_remote_stale(caterva_ctx *ctx, caterva_schunk *sc) {
  int rc;
  pthread_mutex_lock(&sc->remote->mu);
  rc = stale_locked(ctx, sc);
  pthread_mutex_unlock(&sc->remote->mu);
  return rc;
}

static int stale_locked(caterva_ctx *ctx, caterva_schunk *sc) {
  cat_rstore *rs = sc->remote;
  char version[96], *url = NULL;
  int64_t size = -1;
  int rc;
  if (rs->changed) return 1;
  rs->pending = false;
  if (sc->store == CATERVA_STORE_SPARSE) {
    url = cat_remote_sibling(rs->url, CAT_RSPARSE_INDEX);
    if (url == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  }
  rc = cat_remote_head(ctx, rs->rm, url != NULL ? url : rs->url, &size, version, sizeof version);
  free(url);
  if (rc < 0) return rc;
  rs->changed = strcmp(version, rs->version) != 0 ||
                (sc->store == CATERVA_STORE_CONTIGUOUS && size >= 0 && size != sc->frame_len);
  return rs->changed ? 1 : 0;
}

void cat_remote_stats_of(const caterva_schunk *sc, caterva_remote_stats *st) {
  if (sc->remote == NULL) {
    memset(st, 0, sizeof *st);
    return;
  }
  pthread_mutex_lock(&sc->remote->mu);
  cat_remote_stats(sc->remote->rm, st);
  pthread_mutex_unlock(&sc->remote->mu);
}

/* ---- fetching chunks ------------------------------------------------------------------- */

/* Piece for bytes [lo, hi) of chunk i. */
static void piece(rpiece *p, int64_t *n, const caterva_schunk *sc, cat_rchunk *c, int64_t i,
                  const char *url, int64_t lo, int64_t hi) {
  p[*n].i = i;
  p[*n].url = url;
  p[*n].off = chunk_off(sc, c->entry) + lo;
  p[*n].len = hi - lo;
  p[*n].dst = c->buf + lo;
  (*n)++;
}

/* Where each block's bytes end: the next block's start, or cbytes (regular chunks). */
typedef struct bstart { int32_t at, j; } bstart;
static int cmp_bstart(const void *a, const void *b) {
  const bstart *x = a, *y = b;
  return (x->at > y->at) - (x->at < y->at);
}

/* Block ranges of a regular chunk: ends[j] from the block-start table (which is present).
 * A start outside [prefix, cbytes) makes the chunk whole_only (the decoder then says why). */
static int block_ends(cat_rchunk *c, int32_t **out) {
  int32_t n = c->sp.nblocks, *ends;
  bstart *v;
  *out = NULL;
  if (c->sp.plain || c->sp.whole_only || n == 0) return CATERVA_OK;
  v = malloc((size_t)n * sizeof *v);
  ends = malloc((size_t)n * sizeof *ends);
  if (v == NULL || ends == NULL) {
    free(v);
    free(ends);
    return CATERVA_E_NOMEM;
  }
  for (int32_t j = 0; j < n; j++) {
    v[j].at = cat_le32s(c->buf + c->sp.table + 4 * (size_t)j);
    v[j].j = j;
    if (v[j].at < c->sp.prefix || v[j].at >= c->cbytes) c->sp.whole_only = true;
  }
  qsort(v, (size_t)n, sizeof *v, cmp_bstart);
  for (int32_t k = n - 1, next = c->cbytes; k >= 0; k--) {
    ends[v[k].j] = next;
    if (k == 0 || v[k - 1].at != v[k].at) next = v[k].at;
  }
  free(v);
  *out = ends;
  return CATERVA_OK;
}

static void block_range(const cat_rchunk *c, const int32_t *ends, int32_t j, int32_t *lo,
                        int32_t *hi) {
  if (c->sp.plain) {
    int64_t a = c->sp.prefix + (int64_t)j * c->sp.blocksize;
    int64_t b = a + c->sp.blocksize;
    if (b > c->sp.prefix + (int64_t)c->sp.nbytes) b = c->sp.prefix + (int64_t)c->sp.nbytes;
    *lo = (int32_t)a;
    *hi = (int32_t)b;
  } else {
    *lo = cat_le32s(c->buf + c->sp.table + 4 * (size_t)j);
    *hi = ends[j];
  }
}

/* Learn chunk i's size from its first `got` bytes at tmp: a buffer of cbytes bytes. size:
 * the size of the chunk's object as its answer said (sparse frames; -1 unknown), which bounds
 * cbytes as the index does in a contiguous frame (a header claiming 2 GiB in a small object
 * would make a buffer of 2 GiB). */
static int learn_header(caterva_ctx *ctx, cat_rstore *rs, caterva_schunk *sc, cat_rchunk *c,
                        const uint8_t *tmp, int64_t got, int64_t size, uint64_t keep) {
  int64_t i = c->i, room = chunk_room(sc, c);
  int32_t cb;
  if (room < 0 && size >= 0) room = size;
  if (room < 0 && sc->store == CATERVA_STORE_CONTIGUOUS) room = sc->section - c->entry;
  if (got < CATERVA_CHUNK_HEADER_SIZE)
    return cat_error(ctx, CATERVA_E_CORRUPT, "chunk %lld is shorter than its header",
                     (long long)i);
  cb = cat_le32s(tmp + 12);
  if (cb < CATERVA_CHUNK_HEADER_SIZE || (room >= 0 && cb > room))
    return cat_error(ctx, CATERVA_E_CORRUPT, "chunk %lld: bad compressed size %d",
                     (long long)i, (int)cb);
  make_room(rs, cb, keep);
  c->buf = malloc((size_t)cb);
  if (c->buf == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  c->cbytes = cb;
  rs->cached += cb;
  c->have = (int32_t)(got < cb ? got : cb);
  memcpy(c->buf, tmp, (size_t)c->have);
  c->whole = c->have == cb;
  return CATERVA_OK;
}

/* After new header bytes: parse the layout once enough of it is there. 1 when known. */
static int learn_layout(caterva_ctx *ctx, cat_rchunk *c, int64_t i, int32_t *need) {
  int rc;
  if (c->sp.cbytes > 0) return 1;
  rc = cat_chunk_span_init(c->buf, c->whole ? c->cbytes : c->have, c->cbytes, &c->sp, need);
  if (rc == CATERVA_E_NOSPACE) return 0;
  if (rc < 0) return cat_error(ctx, rc, "chunk %lld: malformed header", (long long)i);
  if (c->sp.nblocks > 0 && !c->sp.whole_only) {
    c->blk = calloc((size_t)c->sp.nblocks, 1);
    if (c->blk == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  }
  return 1;
}

/* Block runs of a wanted selection (consecutive block numbers lie next to each other). */
static int64_t runs_of(const cat_want *w) {
  int64_t runs = 0;
  for (int32_t k = 0; k < w->nblocks; k++)
    if (k == 0 || w->blocks[k] != w->blocks[k - 1] + 1) runs++;
  return runs;
}

static bool hints_usable(const cat_want *w, int64_t nblk, int64_t room);

/* Should the first wave fetch the wanted chunks whole (contiguous frames, whose index gives
 * their sizes), saving the second wave? When it is faster on the link measured so far -- the
 * blocks cost a wave of headers, then a wave of one request per run of blocks with their
 * bytes; whole chunks one wave of one request and all the bytes each (cat_remote_wave_cost)
 * -- and fetches at most four times the bytes the blocks need. */
static bool whole_upfront(const cat_rstore *rs, const caterva_schunk *sc, const cat_want *w,
                          cat_rchunk *const *recs, int n, int64_t nblk, int64_t guess) {
  int64_t chunks = 0, runs = 0, part = 0, all = 0, hinted = 0;
  double t_blocks, t_whole;
  if (sc->store != CATERVA_STORE_CONTIGUOUS) return false;
  for (int k = 0; k < n; k++) {
    int64_t room = recs[k] != NULL ? chunk_room(sc, recs[k]) : -1;
    if (room < 0) continue;
    chunks++;
    hinted += hints_usable(&w[k], nblk, room);
    all += room;
    if (w[k].nblocks < 0 || (int64_t)w[k].nblocks >= nblk) {
      runs++;
      part += room;
    } else {
      runs += runs_of(&w[k]);
      part += room * w[k].nblocks / nblk;
    }
  }
  /* blocks whose starts were recorded come with the headers: one wave */
  t_blocks = hinted == chunks
                 ? cat_remote_wave_cost(rs->rm, chunks + runs, chunks * guess + part)
                 : cat_remote_wave_cost(rs->rm, chunks, chunks * guess) +
                       cat_remote_wave_cost(rs->rm, runs, part);
  t_whole = cat_remote_wave_cost(rs->rm, chunks, all);
  /* bytes count too (object stores bill them): never more than four times what is needed */
  return chunks > 0 && t_whole > 0 && t_whole <= t_blocks && all <= 4 * (part + chunks * guess);
}

/* A range of wanted blocks asked with the header (from the block starts recorded when the
 * chunk was written): blocks w->blocks[b0, b1) of chunk i, predicted at [lo, hi). */
typedef struct rspec {
  int q;                 /* its get */
  int64_t i;
  const cat_want *w;
  int32_t b0, b1;
  int32_t lo, hi;
} rspec;

/* Where block j ends by the recorded starts: the next larger start, else the chunk's end. */
static int64_t hinted_end(const uint32_t *st, int64_t nblk, int32_t j, int64_t room) {
  int64_t end = room;
  for (int64_t b = 0; b < nblk; b++)
    if (st[b] > st[j] && st[b] < end) end = st[b];
  return end;
}

/* The recorded starts of chunk w (room bytes) usable? */
static bool hints_usable(const cat_want *w, int64_t nblk, int64_t room) {
  if (w->starts == NULL || room < 0 || w->nblocks <= 0) return false;
  for (int64_t b = 0; b < nblk; b++) /* after the header and the block-start table */
    if (w->starts[b] < CATERVA_CHUNK_HEADER_SIZE + 4 * nblk || w->starts[b] >= room) return false;
  for (int32_t k = 0; k < w->nblocks; k++)
    if (w->blocks[k] < 0 || w->blocks[k] >= nblk) return false;
  return true;
}

/* Add gets for the wanted blocks of w (runs of blocks lying next to each other: one get). */
static int add_specs(caterva_ctx *ctx, cat_get *g, int *ng, rspec *sp, int *nsp, const cat_want *w,
                     const char *url, int64_t base, int64_t nblk, int64_t room) {
  int rc = CATERVA_OK;
  for (int32_t k = 0; k < w->nblocks;) {
    int32_t m = k + 1;
    int64_t lo = w->starts[w->blocks[k]];
    int64_t hi = hinted_end(w->starts, nblk, w->blocks[k], room);
    while (m < w->nblocks && w->starts[w->blocks[m]] == hi) {
      hi = hinted_end(w->starts, nblk, w->blocks[m], room);
      m++;
    }
    g[*ng].url = url;
    g[*ng].off = base + lo;
    g[*ng].len = hi - lo;
    g[*ng].dst = malloc((size_t)(hi - lo));
    CAT_CHECK(leave, g[*ng].dst != NULL, CATERVA_E_NOMEM, "out of memory");
    sp[*nsp] = (rspec){*ng, w->nchunk, w, k, m, (int32_t)lo, (int32_t)hi};
    (*ng)++;
    (*nsp)++;
    k = m;
  }
leave:
  return rc;
}

/* After the header wave: take the blocks asked with it when the header says they lie where
 * the recorded starts said (else they are asked again in the next wave). */
static void take_specs(caterva_ctx *ctx, cat_rstore *rs, const cat_get *g, const rspec *sp,
                       int nsp) {
  for (int s = 0; s < nsp; s++) {
    cat_rchunk *c = rec_find(rs, sp[s].i);
    if (c == NULL) continue;
    int32_t need, *ends = NULL, lo, hi;
    bool ok = true;
    if (c->buf == NULL || c->whole || g[sp[s].q].got != sp[s].hi - sp[s].lo ||
        learn_layout(ctx, c, sp[s].i, &need) != 1 || c->blk == NULL || c->sp.plain ||
        block_ends(c, &ends) < 0 || ends == NULL) {
      free(ends);
      continue;
    }
    for (int32_t k = sp[s].b0; k < sp[s].b1 && ok; k++) {
      int32_t j = sp[s].w->blocks[k];
      block_range(c, ends, j, &lo, &hi);
      ok = lo == (int32_t)sp[s].w->starts[j] && hi <= sp[s].hi && lo >= sp[s].lo &&
           hi <= c->cbytes;
    }
    if (ok) {
      memcpy(c->buf + sp[s].lo, g[sp[s].q].dst, (size_t)(sp[s].hi - sp[s].lo));
      for (int32_t k = sp[s].b0; k < sp[s].b1; k++) {
        int32_t j = sp[s].w->blocks[k];
        block_range(c, ends, j, &lo, &hi);
        if (c->blk[j] == 0)
          c->blk[j] = cat_chunk_span_reach(c->buf, c->cbytes, j, hi) >= 0 ? 1 : 3;
      }
      cat_remote_count_needed(rs->rm, sp[s].hi - sp[s].lo);
    }
    free(ends);
  }
}

/* Wave 1: the first bytes of every wanted stored chunk not seen yet (all of it when small,
 * or when wanted whole and its size is known from the index), and with them the wanted
 * blocks of chunks whose block starts were recorded when they were written. */
static int wave_headers(caterva_ctx *ctx, cat_rstore *rs, caterva_schunk *sc,
                        const cat_want *w, cat_rchunk *const *recs, int n, char **urls,
                        uint64_t keep) {
  cat_get *g = NULL;
  rspec *sp = NULL;
  cat_rchunk **who = calloc((size_t)n, sizeof *who);
  int64_t guess, nblk, cap = n;
  int ng = 0, nh = 0, nsp = 0, nall, rc = CATERVA_OK;
  uint8_t buf[CAT_RCHECK];
  bool upfront;
  for (int k = 0; k < n; k++) cap += w[k].nblocks > 0 ? w[k].nblocks : 0;
  g = calloc((size_t)cap + 1, sizeof *g); /* + 1: ride_check */
  sp = calloc((size_t)cap, sizeof *sp);
  CAT_CHECK(leave, g != NULL && sp != NULL && who != NULL, CATERVA_E_NOMEM, "out of memory");
  nblk = sc->blocksize > 0 ? cat_ceil_div64(sc->chunksize, sc->blocksize) : 1024;
  guess = CATERVA_CHUNK_HEADER_SIZE + 4 + 4 * nblk;
  upfront = cat_remote_whole_chunks(rs->rm) || whole_upfront(rs, sc, w, recs, n, nblk, guess);
  for (int k = 0; k < n; k++) {
    cat_rchunk *c = recs[k];
    int64_t room, len = guess;
    bool dup = false;
    if (c == NULL || c->buf != NULL) continue;
    room = chunk_room(sc, c);
    for (int q = 0; q < nh; q++) dup |= who[q] == c;
    if (dup) continue;
    /* small, or wanted whole or mostly: the whole chunk at once when the index says its
     * size (contiguous frames) */
    if (room >= 0 && (room <= CAT_RSMALL_CHUNK || room <= 2 * guess || w[k].nblocks < 0 ||
                      2 * (int64_t)w[k].nblocks >= nblk || upfront))
      len = room;
    else if (room < 0 && w[k].nblocks < 0)
      len = (int64_t)sc->chunksize + CATERVA_CHUNK_HEADER_SIZE + 4 * guess; /* at most */
    g[ng].url = urls[k];
    g[ng].off = chunk_off(sc, c->entry);
    g[ng].len = len;
    g[ng].short_ok = room < 0; /* a chunk file may be shorter than asked */
    g[ng].dst = malloc((size_t)len);
    CAT_CHECK(leave, g[ng].dst != NULL, CATERVA_E_NOMEM, "out of memory");
    who[nh++] = c;
    ng++;
    if (len == guess && !cat_remote_whole_chunks(rs->rm) && hints_usable(&w[k], nblk, room))
      CAT_TRY(leave, add_specs(ctx, g, &ng, sp, &nsp, &w[k], urls[k], chunk_off(sc, c->entry),
                               nblk, room));
  }
  if (ng == 0) goto leave;
  nall = ng + (int)ride_check(rs, sc, g, ng, buf);
  expect_version(rs, sc, g, nall);
  CAT_TRY(leave, cat_remote_get(ctx, rs->rm, g, nall));
  for (int q = 0; q < nall; q++) CAT_TRY(leave, check_answer(ctx, rs, sc, &g[q]));
  CAT_TRY(leave, refused(ctx, g, nall));
  checked(rs, g, nall);
  for (int q = 0, h = 0; q < ng; q++) {
    bool spec = false;
    for (int s = 0; s < nsp && !spec; s++) spec = sp[s].q == q;
    if (spec) continue;
    CAT_TRY(leave, learn_header(ctx, rs, sc, who[h++], g[q].dst, g[q].got,
                                sc->store == CATERVA_STORE_SPARSE ? g[q].size : -1, keep));
    cat_remote_count_needed(rs->rm, g[q].got);
  }
  take_specs(ctx, rs, g, sp, nsp);
leave:
  for (int q = 0; g != NULL && q < ng; q++) free(g[q].dst);
  free(g);
  free(sp);
  free(who);
  return rc;
}

static int cmp_i64pair(const void *a, const void *b) {
  const int64_t *x = a, *y = b;
  return (x[0] > y[0]) - (x[0] < y[0]);
}

/* Is one request for the rest of the chunk (whole_bytes) cheaper on this link than the n
 * pieces p (merged as run_pieces will, and sent concurrently)? Unknown link: no. */
static bool whole_cheaper(cat_remote *rm, const rpiece *p, int64_t n, int64_t whole_bytes) {
  double t_whole;
  int64_t (*r)[2], gap = cat_remote_merge_gap(rm), runs = 0, bytes = 0, end = -1;
  if (n <= 1 || (t_whole = cat_remote_wave_cost(rm, 1, whole_bytes)) <= 0) return false;
  r = malloc((size_t)n * sizeof *r);
  if (r == NULL) return false;
  for (int64_t k = 0; k < n; k++) r[k][0] = p[k].off, r[k][1] = p[k].off + p[k].len;
  qsort(r, (size_t)n, sizeof *r, cmp_i64pair);
  for (int64_t k = 0; k < n; k++) {
    if (end < 0 || r[k][0] > end + gap) runs++, bytes += r[k][1] - r[k][0];
    else if (r[k][1] > end) bytes += r[k][1] - end;
    if (r[k][1] > end) end = r[k][1];
  }
  free(r);
  return t_whole <= cat_remote_wave_cost(rm, runs, bytes);
}

/* The pieces chunk c still lacks for want wk: header part, prefix, blocks, or the whole. */
static int add_pieces(cat_rstore *rs, caterva_schunk *sc, cat_rchunk *c, int64_t i,
                      const cat_want *wk, const char *url, const int32_t *ends, rpiece *p,
                      int64_t *np, bool *complex, bool whole) {
  int32_t need = 0, lo, hi;
  int64_t total = 0, first = *np;
  *complex = false;
  if (c->whole) return CATERVA_OK;
  if (c->sp.cbytes == 0) { /* the layout is not known: the header part first */
    cat_chunk_span tmp;
    int r = cat_chunk_span_init(c->buf, c->have, c->cbytes, &tmp, &need);
    if (r != CATERVA_E_NOSPACE || need <= c->have || need > c->cbytes) need = c->cbytes;
    piece(p, np, sc, c, i, url, c->have, need);
    return CATERVA_OK;
  }
  if (wk->nblocks < 0 || c->sp.whole_only || c->cbytes <= CAT_RSMALL_CHUNK || whole) goto whole;
  if (c->have < c->sp.prefix) total += c->sp.prefix - c->have;
  for (int32_t k = -1; k < wk->nblocks; k++) {
    int32_t j = k < 0 ? 0 : wk->blocks[k];
    if (k < 0 && !c->sp.delta_ref) continue;
    if (j < 0 || j >= c->sp.nblocks) goto whole; /* let the decoder say what is wrong */
    if (c->blk[j]) continue;
    block_range(c, ends, j, &lo, &hi);
    total += hi - lo;
  }
  if (total * 2 > c->cbytes) goto whole;
  if (c->have < c->sp.prefix) piece(p, np, sc, c, i, url, c->have, c->sp.prefix);
  for (int32_t k = -1; k < wk->nblocks; k++) {
    int32_t j = k < 0 ? 0 : wk->blocks[k];
    if ((k < 0 && !c->sp.delta_ref) || c->blk[j]) continue;
    block_range(c, ends, j, &lo, &hi);
    if (c->blk[j] == 2) continue; /* asked already in this round */
    c->blk[j] = 2;
    piece(p, np, sc, c, i, url, lo, hi);
  }
  if (whole_cheaper(rs->rm, p + first, *np - first, c->cbytes - c->have)) {
    for (int32_t j = 0; j < c->sp.nblocks; j++)
      if (c->blk[j] == 2) c->blk[j] = 0;
    *np = first;
    goto whole;
  }
  *complex = true;
  return CATERVA_OK;
whole:
  piece(p, np, sc, c, i, url, c->have, c->cbytes);
  return CATERVA_OK;
}

/* After a round: mark what arrived (blocks are checked with the decoder's framing). */
static void mark_pieces(cat_rchunk *c, const int32_t *ends, const rpiece *p, int64_t np,
                        int64_t i) {
  for (int64_t q = 0; q < np; q++) {
    int32_t lo = (int32_t)(p[q].dst - c->buf), hi = lo + (int32_t)p[q].len;
    if (p[q].i != i) continue;
    if (lo == c->have) c->have = hi;
    if (hi == c->cbytes && lo <= c->have) c->whole = true;
  }
  if (c->whole) {
    c->have = c->cbytes;
    return;
  }
  for (int32_t j = 0; c->blk != NULL && j < c->sp.nblocks; j++) {
    int32_t lo, hi;
    if (c->blk[j] != 2) continue;
    block_range(c, ends, j, &lo, &hi);
    /* streams running past the next block's start: fetch the chunk whole next round */
    c->blk[j] = c->sp.plain || cat_chunk_span_reach(c->buf, c->cbytes, j, hi) >= 0 ? 1 : 3;
  }
}

/* The records of the wanted chunks into recs[k] (NULL for chunks not stored: specials), and
 * their objects' URLs into urls[k]. Their index entries first: a lazy index fetches the
 * blocks they lie in in one wave. */
static int want_records(caterva_ctx *ctx, cat_rstore *rs, caterva_schunk *sc, const cat_want *w,
                        int n, uint64_t keep, cat_rchunk **recs, char **urls, int64_t *cap) {
  int64_t *idx = malloc(3 * (size_t)n * sizeof *idx), *e = idx + n, *next = idx + 2 * n;
  int rc = CATERVA_OK;
  CAT_CHECK(leave, idx != NULL, CATERVA_E_NOMEM, "out of memory");
  for (int k = 0; k < n; k++) {
    idx[k] = w[k].nchunk;
    CAT_CHECK(leave, idx[k] >= 0 && idx[k] < sc->nchunks, CATERVA_E_RANGE,
              "chunk %lld out of range", (long long)idx[k]);
  }
  CAT_TRY(leave, cat_sc_entries_locked(ctx, sc, idx, n, e, next));
  for (int k = 0; k < n; k++) {
    if (e[k] < 0) continue;
    CAT_TRY(leave, sync_slot(ctx, rs, sc, idx[k], e[k], next[k], &recs[k]));
    recs[k]->used = keep;
    urls[k] = sc->store == CATERVA_STORE_SPARSE ? chunk_url(rs, e[k]) : rs->url;
    CAT_CHECK(leave, urls[k] != NULL, CATERVA_E_NOMEM, "out of memory");
    *cap += 3 + (w[k].nblocks > 0 ? w[k].nblocks : 0);
  }
leave:
  free(idx);
  return rc;
}

static int prefetch_locked(caterva_ctx *ctx, caterva_schunk *sc, const cat_want *w, int n) {
  cat_rstore *rs = sc->remote;
  char **urls = NULL;
  cat_rchunk **recs = NULL;
  rpiece *p = NULL;
  int64_t cap = 0, np;
  int rc = CATERVA_OK;
  uint64_t keep;
  if (rs == NULL || n <= 0) return CATERVA_OK;
  keep = ++rs->tick;
  urls = calloc((size_t)n, sizeof *urls);
  recs = calloc((size_t)n, sizeof *recs);
  CAT_CHECK(leave, urls != NULL && recs != NULL, CATERVA_E_NOMEM, "out of memory");
  CAT_TRY(leave, want_records(ctx, rs, sc, w, n, keep, recs, urls, &cap));
  CAT_TRY(leave, wave_headers(ctx, rs, sc, w, recs, n, urls, keep));
  p = malloc((size_t)(cap > 0 ? cap : 1) * sizeof *p);
  CAT_CHECK(leave, p != NULL, CATERVA_E_NOMEM, "out of memory");
  for (int round = 0; round < 4; round++) {
    int32_t **ends = calloc((size_t)n, sizeof *ends);
    CAT_CHECK(leave, ends != NULL, CATERVA_E_NOMEM, "out of memory");
    np = 0;
    for (int k = 0; k < n && rc >= 0; k++) {
      int64_t i = w[k].nchunk;
      cat_rchunk *c = recs[k];
      bool complex = false;
      int32_t need;
      cat_want wk = w[k];
      if (c == NULL || c->whole) continue;
      if (learn_layout(ctx, c, i, &need) == 1 && c->blk != NULL) {
        bool redo = false;
        for (int32_t j = 0; j < c->sp.nblocks; j++) redo |= c->blk[j] == 3;
        if (redo) wk.nblocks = -1;
        if ((rc = block_ends(c, &ends[k])) < 0) break;
      }
      rc = add_pieces(rs, sc, c, i, &wk, urls[k], ends[k], p, &np, &complex,
                      cat_remote_whole_chunks(rs->rm) != 0);
    }
    for (int64_t q = 0; q < np; q++) cat_remote_count_needed(rs->rm, p[q].len);
    if (rc >= 0 && np > 0) rc = cat_rs_run_pieces(ctx, rs, sc, p, np);
    for (int k = 0; k < n && rc >= 0; k++) {
      int64_t i = w[k].nchunk;
      if (recs[k] != NULL && recs[k]->buf != NULL) mark_pieces(recs[k], ends[k], p, np, i);
    }
    for (int k = 0; k < n; k++) free(ends[k]);
    free(ends);
    CAT_TRY(leave, rc);
    if (np == 0) break;
  }
leave:
  for (int k = 0; urls != NULL && k < n; k++)
    if (urls[k] != rs->url) free(urls[k]);
  free(urls);
  free(recs);
  free(p);
  return rc;
}

int cat_remote_prefetch(caterva_ctx *ctx, caterva_schunk *sc, const cat_want *w, int n) {
  int rc;
  if (sc->remote == NULL || n <= 0) return CATERVA_OK;
  pthread_mutex_lock(&sc->remote->mu);
  rc = prefetch_locked(ctx, sc, w, n);
  pthread_mutex_unlock(&sc->remote->mu);
  return rc;
}

/* Are chunk i's wanted blocks (all when nblocks < 0) there? */
static bool have_blocks(const cat_rchunk *c, const int32_t *blocks, int32_t nblocks) {
  if (c->whole) return true;
  if (c->buf == NULL || c->sp.cbytes == 0 || nblocks < 0 || c->blk == NULL ||
      c->have < c->sp.prefix)
    return false;
  if (c->sp.delta_ref && c->blk[0] != 1) return false;
  for (int32_t k = 0; k < nblocks; k++)
    if (blocks[k] < 0 || blocks[k] >= c->sp.nblocks || c->blk[blocks[k]] != 1) return false;
  return true;
}

int cat_remote_chunk(caterva_ctx *ctx, caterva_schunk *sc, int64_t i, const int32_t *blocks,
                     int32_t nblocks, const uint8_t **p, int32_t *cbytes) {
  cat_rstore *rs = sc->remote;
  cat_rchunk *c;
  int64_t e, next;
  int rc;
  pthread_mutex_lock(&rs->mu);
  CAT_TRY(leave, entry_of(ctx, sc, i, &e, &next));
  CAT_TRY(leave, sync_slot(ctx, rs, sc, i, e, next, &c));
  if (rs->pending && have_blocks(c, blocks, nblocks)) { /* no request would check it */
    rc = verify_locked(ctx, sc);
    CAT_TRY(leave, rc);
    CAT_CHECK(leave, rc == 0, CATERVA_E_CHANGED, "'%s' changed since it was opened", rs->url);
  }
  if (!have_blocks(c, blocks, nblocks)) {
    cat_want w = {i, blocks, nblocks, NULL};
    CAT_TRY(leave, prefetch_locked(ctx, sc, &w, 1));
    CAT_CHECK(leave, have_blocks(c, blocks, nblocks), CATERVA_E_CORRUPT,
              "chunk %lld: its bytes could not all be fetched", (long long)i);
  }
  c->used = ++rs->tick;
  *p = c->buf;
  *cbytes = c->cbytes;
  rc = CATERVA_OK;
leave:
  pthread_mutex_unlock(&rs->mu);
  return rc;
}

void cat_remote_pin(caterva_schunk *sc, int64_t i, int delta) {
  cat_rstore *rs = sc->remote;
  cat_rchunk *c;
  if (rs == NULL || i < 0 || i >= sc->nchunks) return;
  pthread_mutex_lock(&rs->mu);
  c = rec_find(rs, i);
  if (c != NULL && c->entry >= 0 && c->pins + delta >= 0) c->pins += delta;
  pthread_mutex_unlock(&rs->mu);
}
