/*
 * array_iter.c -- the block iterator over a box of an array (geometry in array_geom.c):
 * its read-ahead of decompressed blocks, and the portions a remote box is fetched in. Reading
 * a whole box and visiting every block on the context's threads are in array_visit.c.
 */
#include "block_iter_internal.h"

#include <pthread.h>
#include <stdlib.h>

/* ---- the block iterator --------------------------------------------------------------- */

/*
 * Read-ahead (CATERVA_ITER_READAHEAD). While the caller consumes batch k, a thread of the
 * iterator's own decompresses batch k + 1 into a second buffer; next() then swaps buffers
 * instead of decompressing. Everything that touches the schunk (chunk lookup, statistics
 * filters) stays on the caller's thread: the worker gets a stable chunk pointer (mapped file
 * or the schunk's chunk cache, both fixed while the array is not modified, which iterators
 * require anyway), a copy of the block numbers and a context of its own (own scratch, no
 * pool, so it never competes with the caller's batches); its decompressed blocks are added
 * to the caller's counter when the batch is taken. The next chunk's block list is computed
 * (and filtered) once, when the job is planned, and reused when the chunk is entered.
 */
typedef struct cat_readahead {
  pthread_t thread;
  int started;                       /* thread running */
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int state;                         /* RA_IDLE, RA_QUEUED, RA_DONE */
  int quit;
  caterva_ctx *wctx;                 /* the worker's context */
  /* the job */
  const uint8_t *chunk;
  int32_t cbytes;
  int64_t nchunk;
  int32_t pos, nb;                   /* sel entries [pos, pos + nb) of chunk nchunk */
  int32_t *blocks;                   /* their block numbers (cap batch_max) */
  uint8_t *buf;                      /* destination; swapped with the iterator's data */
  size_t bufcap;
  int64_t rc;
  int64_t counted;                   /* wctx's blocks counter already passed on */
  /* the next chunk's block list, planned ahead (valid when peek_valid) */
  int peek_valid;
  int64_t peek_cc[CATERVA_MAX_DIM];
  int32_t *peek_sel, peek_n, peek_cap;
} cat_readahead;

enum { RA_IDLE, RA_QUEUED, RA_DONE };

#define ITER_BATCH_BYTES (16 * 1024 * 1024) /* decompressed blocks kept at once */
/* ... with a read-ahead: a batch is consumed right after the worker wrote it, so that it is
** read from the cache (whole chunks of megabytes were read from memory: 0.83-0.85x the shell's
** generate_series for a full scan of a 200^3 float64 array, 0.88-0.92x with these) */
#define ITER_READAHEAD_BYTES (512 * 1024)

/* The bytes (decompressed) of selected blocks fetched ahead at once from a remote array;
** smaller portions when a thread fetches the next one meanwhile (the first costs a wave the
** caller waits for, the others overlap what the caller does with the blocks). */
#define ITER_REMOTE_PORTION ((int64_t)48 << 20)
#define ITER_FETCHAHEAD_PORTION ((int64_t)16 << 20)
/* chunks the filter's look-ahead is told about at a time */
#define ITER_AHEAD_CHUNKS 256
#define ITER_REMOTE_MAX_CHUNKS 4096

/* A chunk's filtered selection made while its portion was planned (remote arrays). */
typedef struct cat_planned_sel {
  int64_t nchunk;
  int32_t *sel;                      /* n block numbers (malloc'ed, or NULL when n is 0) */
  int32_t n;
} cat_planned_sel;

static void ra_free(cat_readahead *ra);
static void fa_stop(caterva_block_iter *it);
static void planned_clear(caterva_block_iter *it);
static int ready_chunk(caterva_block_iter *it, int64_t nchunk);

static void unpin(caterva_block_iter *it) {
  if (it->pinned >= 0) cat_sc_unpin(it->sc, it->pinned);
  it->pinned = -1;
}

void caterva_block_iter_free(caterva_block_iter *it) {
  if (it == NULL) return;
  unpin(it);
  fa_stop(it);
  planned_clear(it);
  free(it->planned);
  cat_fa_free(it->fa);
  ra_free(it->ra);
  free(it->sel);
  free(it->data);
  free(it->whole);
  free(it->fill);
  free(it);
}

int caterva_block_iter_reset(caterva_block_iter *it, const int64_t *start,
                             const int64_t *stop) {
  const cat_geom *g = it->g;
  cat_iter_ra_discard(it);
  unpin(it);
  fa_stop(it);
  planned_clear(it);
  it->nvisit = it->nplanned = 0;
  it->have_chunk = 0;
  it->nsel = it->pos = 0;
  it->batch_lo = it->batch_hi = 0;
  it->done = !cat_geom_clip(g, start, stop, it->start, it->stop) || g->nchunks == 0;
  for (int k = 0; !it->done && k < g->ndim; k++) {
    it->c0[k] = it->start[k] / g->chunkshape[k];
    it->c1[k] = cat_ceil_div64(it->stop[k], g->chunkshape[k]);
  }
  return CATERVA_OK;
}

int caterva_block_iter_new(caterva_ctx *ctx, caterva_array *a, const int64_t *start,
                           const int64_t *stop, int flags, caterva_block_iter **out) {
  int rc = CATERVA_OK;
  caterva_block_iter *it = NULL;
  const cat_geom *g;
  *out = NULL;
  CAT_CHECK(leave, a != NULL, CATERVA_E_INVALID, "no array");
  g = &a->g;
  it = calloc(1, sizeof *it);
  CAT_CHECK(leave, it != NULL, CATERVA_E_NOMEM, "out of memory");
  it->ctx = ctx;
  it->a = a;
  it->sc = a->sc;
  it->g = g;
  it->flags = flags;
  it->fill_kind = -1;
  it->pinned = -1;
  it->blk.blockshape = g->blockshape;
  caterva_block_iter_reset(it, start, stop);
  {
    int ra = (flags & CATERVA_ITER_READAHEAD) != 0;
    int64_t bm = (ra ? ITER_READAHEAD_BYTES : ITER_BATCH_BYTES) /
                 (g->blocksize > 0 ? g->blocksize : 1);
    int64_t minb = ra ? 2 : 4 * (int64_t)(ctx ? ctx->nthreads : 1);
    if (bm < minb) bm = minb;
    if (bm > g->nblocks) bm = g->nblocks;
    if (bm < 1) bm = 1;
    it->batch_max = (int32_t)bm;
  }

leave:
  if (rc < 0) caterva_block_iter_free(it);
  else *out = it;
  return rc;
}

void caterva_block_iter_set_filter(caterva_block_iter *it,
                                   int (*keep)(void *arg, int64_t nchunk, int32_t nblock),
                                   void *arg) {
  if (it == NULL) return;
  it->keep = keep;
  it->keep_arg = arg;
}

void caterva_block_iter_set_filter_ahead(caterva_block_iter *it,
                                         int (*ahead)(void *arg, const int64_t *nchunk, int n)) {
  if (it == NULL) return;
  it->keep_ahead = ahead;
}

void caterva_block_iter_set_filter_by_value(caterva_block_iter *it, int on) {
  if (it != NULL) it->keep_by_value = on != 0;
}

void caterva_block_iter_set_owner(caterva_block_iter *it,
                                  int64_t (*owner)(void *arg, const caterva_block *blk),
                                  void *arg) {
  if (it == NULL) return;
  it->owner = owner;
  it->owner_arg = arg;
}

/* Drop the blocks of sel[0, *n) of chunk nchunk that the filter rejects. Every block of a
 * special chunk (zeros, NaN, one repeated value: in the index, or stored as bytes and at hand,
 * cat_bs_chunk_uniform) holds that one value: a filter that decides by the values alone
 * answers for the first as for every one (a grown array of a million fill chunks of 32
 * blocks: a million questions instead of 32 million). */
static int filter_sel(caterva_block_iter *it, int64_t nchunk, int32_t *sel, int32_t *n) {
  int32_t j = 0, vsize;
  const uint8_t *value;
  /* (an entry that does not read: each block's question reports it) */
  int special = it->keep_by_value && *n > 1 ? cat_bs_chunk_uniform(it->a, nchunk, &value, &vsize)
                                            : CATERVA_SPECIAL_NONE;
  if (special > CATERVA_SPECIAL_NONE) {
    int r = it->keep(it->keep_arg, nchunk, sel[0]);
    if (r < 0) return r;
    if (r == 0) *n = 0;
    return CATERVA_OK;
  }
  for (int32_t i = 0; i < *n; i++) {
    int r = it->keep(it->keep_arg, nchunk, sel[i]);
    if (r < 0) return r;
    if (r) sel[j++] = sel[i];
  }
  *n = j;
  return CATERVA_OK;
}

/* Make sure the fill buffer holds one block of the given special content. */
static int prepare_fill(caterva_block_iter *it, int kind, const uint8_t *value, int vsize) {
  caterva_ctx *ctx = it->ctx;
  int rc = CATERVA_OK;
  const cat_geom *g = it->g;
  if (kind == CATERVA_SPECIAL_NAN)
    CAT_CHECK(leave, g->itemsize == 4 || g->itemsize == 8, CATERVA_E_CORRUPT,
              "NaN chunk in an array of %d-byte items", g->itemsize);
  if (kind == CATERVA_SPECIAL_VALUE)
    CAT_CHECK(leave, vsize >= 1 && vsize <= 255 && g->blocksize % vsize == 0, CATERVA_E_CORRUPT,
              "repeated-value chunk with a %d-byte value", vsize);
  if (it->fill == NULL) {
    it->fill = malloc((size_t)g->blocksize);
    CAT_CHECK(leave, it->fill != NULL, CATERVA_E_NOMEM, "out of memory");
  }
  if (kind == CATERVA_SPECIAL_UNINIT) kind = CATERVA_SPECIAL_ZERO; /* reads as zeros */
  if (it->fill_kind == kind &&
      (kind != CATERVA_SPECIAL_VALUE ||
       (it->fill_vsize == vsize && memcmp(it->fill_value, value, (size_t)vsize) == 0)))
    goto leave;
  if (kind == CATERVA_SPECIAL_VALUE) {
    cat_fill_items(it->fill, g->blocksize / vsize, vsize, kind, value);
    memcpy(it->fill_value, value, (size_t)vsize);
    it->fill_vsize = vsize;
  } else {
    cat_fill_items(it->fill, g->blockitems, g->itemsize, kind, NULL);
  }
  it->fill_kind = kind;
leave:
  return rc;
}

/* Decide how the current chunk's blocks are served and read what that needs. */
static int open_chunk_data(caterva_block_iter *it, int64_t nchunk) {
  caterva_ctx *ctx = it->ctx;
  int rc = CATERVA_OK;
  const cat_geom *g = it->g;
  caterva_chunk_info info;
  int special;
  it->batch_lo = it->batch_hi = 0;
  if (it->flags & CATERVA_ITER_NODATA) {
    it->serve = SERVE_NODATA;
    goto leave;
  }
  special = caterva_schunk_chunk_special(it->sc, nchunk);
  CAT_TRY(leave, special);
  if (special != CATERVA_SPECIAL_NONE) {
    it->serve = SERVE_FILL;
    rc = prepare_fill(it, special, NULL, 0);
    goto leave;
  }
  unpin(it);
  if (!ready_chunk(it, nchunk)) {
    CAT_TRY(leave, cat_sc_get_chunk_blocks(ctx, it->sc, nchunk, it->sel, it->nsel, &it->chunk,
                                           &it->cbytes));
    if (cat_sc_is_remote(it->sc)) it->pinned = nchunk;
  }
  rc = caterva_chunk_info_get(it->chunk, (size_t)it->cbytes, &info);
  CAT_CHECK(leave, rc >= 0, rc, "chunk %lld: malformed header", (long long)nchunk);
  CAT_CHECK(leave, info.nbytes == g->chunksize, CATERVA_E_CORRUPT,
            "chunk %lld holds %d bytes, the array's chunks hold %d", (long long)nchunk,
            (int)info.nbytes, (int)g->chunksize);
  if (info.special != CATERVA_SPECIAL_NONE) {
    it->serve = SERVE_FILL;
    rc = prepare_fill(it, info.special, it->chunk + CATERVA_CHUNK_HEADER_SIZE,
                      it->cbytes - CATERVA_CHUNK_HEADER_SIZE);
  } else if (info.blocksize == g->blocksize && info.nblocks == g->nblocks) {
    it->serve = SERVE_BLOCKS;
  } else {
    /* A writer that chose its own blocksize: the array's blocks are still at
       b * blocksize of the decompressed chunk, so decompress it whole. */
    if (it->whole == NULL) {
      it->whole = malloc((size_t)g->chunksize);
      CAT_CHECK(leave, it->whole != NULL, CATERVA_E_NOMEM, "out of memory");
    }
    if (cat_sc_is_remote(it->sc)) /* all of its bytes, then */
      CAT_TRY(leave, caterva_schunk_get_chunk(ctx, it->sc, nchunk, &it->chunk, &it->cbytes));
    CAT_TRY(leave, caterva_chunk_decompress(ctx, it->chunk, (size_t)it->cbytes, it->whole,
                                            g->chunksize));
    it->serve = SERVE_WHOLE;
  }
leave:
  return rc;
}

/* The blocks of chunk cc that intersect the box, in C order, that the filter keeps: their
** numbers into *psel (grown as needed, capacity *pcap), their count into *pn. */
static int chunk_sel(caterva_block_iter *it, const int64_t *cc, int32_t **psel, int32_t *pcap,
                     int32_t *pn) {
  caterva_ctx *ctx = it->ctx;
  int rc = CATERVA_OK;
  const cat_geom *g = it->g;
  int64_t n = 1;
  int32_t b0[CATERVA_MAX_DIM], b1[CATERVA_MAX_DIM], bc[CATERVA_MAX_DIM];
  int32_t bstride[CATERVA_MAX_DIM];
  int32_t *sel;
  *pn = 0;
  for (int k = 0; k < g->ndim; k++) {
    int64_t base = cc[k] * g->chunkshape[k];
    int64_t lo = it->start[k] > base ? it->start[k] : base;
    int64_t hi = base + g->chunkshape[k];
    if (hi > it->stop[k]) hi = it->stop[k];
    b0[k] = (int32_t)((lo - base) / g->blockshape[k]);
    b1[k] = (int32_t)cat_ceil_div64(hi - base, g->blockshape[k]);
    n *= b1[k] - b0[k];
  }
  if (n > *pcap) {
    int32_t *p = realloc(*psel, (size_t)n * sizeof *p);
    CAT_CHECK(leave, p != NULL, CATERVA_E_NOMEM, "out of memory");
    *psel = p;
    *pcap = (int32_t)n;
  }
  sel = *psel;
  /* Block numbers in C order over [b0, b1). */
  for (int k = g->ndim - 1, s = 1; k >= 0; k--) {
    bstride[k] = s;
    s *= g->blockgrid[k];
    bc[k] = b0[k];
  }
  for (int64_t i = 0; i < n; i++) {
    int32_t num = 0;
    int k;
    for (k = 0; k < g->ndim; k++) num += bc[k] * bstride[k];
    sel[i] = num;
    for (k = g->ndim - 1; k >= 0; k--) {
      if (++bc[k] < b1[k]) break;
      bc[k] = b0[k];
    }
  }
  *pn = (int32_t)n;
  if (it->keep != NULL) rc = filter_sel(it, cat_geom_chunk_number(g, cc), sel, pn);
leave:
  return rc;
}

static int next_chunk(const caterva_block_iter *it, int64_t *cc);

/* ---- selections made ahead -------------------------------------------------------------- */

static void planned_clear(caterva_block_iter *it) {
  for (int32_t i = it->planned_head; i < it->nplanned_sel; i++) free(it->planned[i].sel);
  it->planned_head = it->nplanned_sel = 0;
}

/* The selection kept for chunk nchunk, or NULL. The entries' chunk numbers increase (a box's
** chunks in C order), so a binary search finds it. */
static cat_planned_sel *planned_find(caterva_block_iter *it, int64_t nchunk) {
  int32_t lo = it->planned_head, hi = it->nplanned_sel;
  while (lo < hi) {
    int32_t mid = lo + (hi - lo) / 2;
    if (it->planned[mid].nchunk < nchunk) lo = mid + 1;
    else hi = mid;
  }
  return lo < it->nplanned_sel && it->planned[lo].nchunk == nchunk ? &it->planned[lo] : NULL;
}

/* Keep a copy of chunk nchunk's filtered selection sel[0, n) for when it is entered. */
static int planned_add(caterva_block_iter *it, int64_t nchunk, const int32_t *sel, int32_t n) {
  caterva_ctx *ctx = it->ctx;
  int rc = CATERVA_OK;
  cat_planned_sel *e;
  if (it->nplanned_sel > 0 && it->nplanned_sel == it->planned_cap && it->planned_head > 0) {
    memmove(it->planned, it->planned + it->planned_head,
            (size_t)(it->nplanned_sel - it->planned_head) * sizeof *it->planned);
    it->nplanned_sel -= it->planned_head;
    it->planned_head = 0;
  }
  if (it->nplanned_sel == it->planned_cap) {
    int32_t cap = it->planned_cap ? 2 * it->planned_cap : 64;
    cat_planned_sel *p = realloc(it->planned, (size_t)cap * sizeof *p);
    CAT_CHECK(leave, p != NULL, CATERVA_E_NOMEM, "out of memory");
    it->planned = p;
    it->planned_cap = cap;
  }
  e = &it->planned[it->nplanned_sel];
  e->nchunk = nchunk;
  e->n = n;
  e->sel = NULL;
  if (n > 0) {
    e->sel = malloc((size_t)n * sizeof *sel);
    CAT_CHECK(leave, e->sel != NULL, CATERVA_E_NOMEM, "out of memory");
    memcpy(e->sel, sel, (size_t)n * sizeof *sel);
  }
  it->nplanned_sel++;
leave:
  return rc;
}

/* The filtered selection of the chunk at cc into *psel (capacity *pcap), *pn: the one kept
** when its portion was planned, else chunk_sel's. With keep set, kept for entering (the filter
** sees each block once). */
static int chunk_sel_once(caterva_block_iter *it, const int64_t *cc, int32_t **psel,
                          int32_t *pcap, int32_t *pn, int keep) {
  caterva_ctx *ctx = it->ctx;
  int rc = CATERVA_OK;
  int64_t nchunk = cat_geom_chunk_number(it->g, cc);
  cat_planned_sel *e = it->keep != NULL ? planned_find(it, nchunk) : NULL;
  if (e == NULL) {
    CAT_TRY(leave, chunk_sel(it, cc, psel, pcap, pn));
    if (keep && it->keep != NULL) rc = planned_add(it, nchunk, *psel, *pn);
    goto leave;
  }
  if (e->n > *pcap) {
    int32_t *p = realloc(*psel, (size_t)e->n * sizeof *p);
    CAT_CHECK(leave, p != NULL, CATERVA_E_NOMEM, "out of memory");
    *psel = p;
    *pcap = e->n;
  }
  if (e->n > 0) memcpy(*psel, e->sel, (size_t)e->n * sizeof *e->sel);
  *pn = e->n;
leave:
  return rc;
}

/* Entering chunk nchunk: forget the selections kept for it and the chunks before it. */
static void planned_pass(caterva_block_iter *it, int64_t nchunk) {
  while (it->planned_head < it->nplanned_sel && it->planned[it->planned_head].nchunk <= nchunk)
    free(it->planned[it->planned_head++].sel);
  if (it->planned_head == it->nplanned_sel) it->planned_head = it->nplanned_sel = 0;
}

/* The filter's look-ahead told about the box's chunks from `from` on (up to
** ITER_AHEAD_CHUNKS of them); *covered receives how many it made ready (at least 1). */
static int filter_ahead(caterva_block_iter *it, const int64_t *from, int64_t *covered) {
  int64_t cc[CATERVA_MAX_DIM], num[ITER_AHEAD_CHUNKS];
  int n = 0, more = 1, r;
  memcpy(cc, from, sizeof cc);
  while (more && n < ITER_AHEAD_CHUNKS) {
    num[n++] = cat_geom_chunk_number(it->g, cc);
    more = next_chunk(it, cc);
  }
  r = it->keep_ahead(it->keep_arg, num, n);
  if (r < 0) return r;
  *covered = r > 0 ? r : 1;
  return CATERVA_OK;
}

/* A remote array whose offsets index is read a block at a time: the index blocks of the box's
** chunks from `from` on (as many as one portion may take) fetched in one wave, since the
** selections and the look-ahead below ask for the chunks' entries one at a time. */
static int index_ahead(caterva_block_iter *it, const int64_t *from) {
  int64_t cc[CATERVA_MAX_DIM], *num = malloc(ITER_REMOTE_MAX_CHUNKS * sizeof *num);
  int n = 0, more = 1, rc;
  if (num == NULL) return CATERVA_OK; /* each entry is then fetched when asked for */
  memcpy(cc, from, sizeof cc);
  while (more && n < ITER_REMOTE_MAX_CHUNKS) {
    num[n++] = cat_geom_chunk_number(it->g, cc);
    more = next_chunk(it, cc);
  }
  rc = cat_sc_index_ahead(it->ctx, it->sc, num, n);
  free(num);
  return rc;
}

/* The recorded block starts of the wanted chunks (their statistics' records, fetched in one
** wave for a remote array), so that their blocks are fetched by range; none: the chunk's
** start table is fetched first. */
static void wants_starts(caterva_block_iter *it, cat_want *w, int n) {
  int64_t *nchunk = malloc((size_t)(n > 0 ? n : 1) * sizeof *nchunk);
  if (nchunk != NULL) {
    for (int k = 0; k < n; k++) nchunk[k] = w[k].nchunk;
    cat_bs_starts_ahead(it->a, nchunk, n);
    free(nchunk);
  }
  for (int k = 0; k < n; k++) {
    uint32_t *st = malloc((size_t)it->g->nblocks * sizeof *st);
    if (st != NULL && cat_bs_block_starts(it->a, w[k].nchunk, st)) {
      w[k].starts = st; /* owned by the list */
      st = NULL;
    }
    free(st);
  }
}

/* A remote array: what a portion of the box needs -- from chunk `from` on (its selection is
** it->sel when use_cur), up to `portion` bytes of selected blocks -- as a list of wants
** (*w, *n: malloc'ed, free with cat_wants_free). *nchunks receives the chunks of the box it
** covers, *more whether chunks of the box follow them (then `from` is the next one). */
static int remote_wants(caterva_block_iter *it, int64_t *from, int use_cur, int64_t portion,
                        cat_want **wout, int *nout, int64_t *nchunks, int *more) {
  caterva_ctx *ctx = it->ctx;
  const cat_geom *g = it->g;
  cat_want *w = NULL;
  int32_t *sel = NULL, cap = 0;
  int64_t bytes = 0, ahead = 0; /* ahead: chunks of this call made ready by the look-ahead */
  int n = 0, rc = CATERVA_OK;
  *nchunks = 0;
  *more = 1;
  w = calloc(ITER_REMOTE_MAX_CHUNKS, sizeof *w);
  CAT_CHECK(leave, w != NULL, CATERVA_E_NOMEM, "out of memory");
  CAT_TRY(leave, index_ahead(it, from));
  while (*more && n < ITER_REMOTE_MAX_CHUNKS && (bytes < portion || n == 0)) {
    int32_t nsel = 0;
    if (it->keep != NULL && it->keep_ahead != NULL && *nchunks >= ahead) {
      int64_t c;
      CAT_TRY(leave, filter_ahead(it, from, &c));
      ahead = *nchunks + c;
    }
    if (use_cur && *nchunks == 0) { /* the current chunk: its selection is it->sel */
      nsel = it->nsel;
      if (nsel > 0) {
        sel = malloc((size_t)nsel * sizeof *sel);
        CAT_CHECK(leave, sel != NULL, CATERVA_E_NOMEM, "out of memory");
        memcpy(sel, it->sel, (size_t)nsel * sizeof *sel);
      }
    } else {
      cap = 0;
      CAT_TRY(leave, chunk_sel_once(it, from, &sel, &cap, &nsel, 1));
    }
    (*nchunks)++;
    if (nsel > 0) {
      w[n].nchunk = cat_geom_chunk_number(g, from);
      w[n].blocks = sel;
      w[n].nblocks = nsel;
      bytes += (int64_t)nsel * g->blocksize;
      n++;
    } else {
      free(sel);
    }
    sel = NULL;
    *more = next_chunk(it, from);
  }
  wants_starts(it, w, n);
leave:
  free(sel);
  if (rc < 0) {
    cat_wants_free(w, n);
    w = NULL;
    n = 0;
  }
  *wout = w;
  *nout = n;
  return rc;
}

/* Fetch what a portion of the box needs, in a few waves for all its chunks at once. */
static int plan_remote_from(caterva_block_iter *it, const int64_t *from, int use_cur,
                            int64_t portion, int64_t *nchunks) {
  cat_want *w = NULL;
  int64_t cc[CATERVA_MAX_DIM];
  int n = 0, more, rc;
  memcpy(cc, from, sizeof cc);
  rc = remote_wants(it, cc, use_cur, portion, &w, &n, nchunks, &more);
  if (rc >= 0) rc = cat_sc_prefetch(it->ctx, it->sc, w, n);
  cat_wants_free(w, n);
  return rc;
}

/* Move to the box's first chunk, or the next one: 0 past the last. */
int cat_iter_step_chunk(caterva_block_iter *it) {
  if (it->have_chunk) return next_chunk(it, it->cc);
  memcpy(it->cc, it->c0, sizeof it->cc);
  it->have_chunk = 1;
  return 1;
}

/* ---- remote fetch-ahead ---------------------------------------------------------------- */

/*
 * A scan of a remote box (not CATERVA_ITER_NODATA) that spans several portions: when the
 * caller enters a portion, its chunks are pinned and their bytes kept at hand (it->ready), and
 * the iterator's fetch-ahead thread (fetchahead.c) fetches the next portion meanwhile, so the
 * transfers overlap the caller's decompression and whatever it does with the blocks (SQLite's
 * rows). The thread holds the store's lock while it fetches; the caller reads the pinned
 * chunks without asking the store, and anything else it asks of the store waits for the
 * thread. The first portion is fetched by the caller (its first wave also checks the
 * object's version, frame_remote.c).
 */

/* Is chunk nchunk one of the current portion's (its bytes then at it->chunk)? */
static int ready_chunk(caterva_block_iter *it, int64_t nchunk) {
  for (int k = 0; k < it->nready; k++)
    if (it->ready[k].nchunk == nchunk && it->ready_chunk[k] != NULL) {
      it->chunk = it->ready_chunk[k];
      it->cbytes = it->ready_cbytes[k];
      return 1;
    }
  return 0;
}

/* Let go of the current portion's chunks. */
static void ready_release(caterva_block_iter *it) {
  for (int k = 0; k < it->nready; k++)
    if (it->ready_chunk[k] != NULL) cat_sc_unpin(it->sc, it->ready[k].nchunk);
  cat_wants_free(it->ready, it->nready);
  free(it->ready_chunk);
  free(it->ready_cbytes);
  it->ready = NULL;
  it->ready_chunk = NULL;
  it->ready_cbytes = NULL;
  it->nready = 0;
}

/* Wait for the thread, drop its job and the current portion (a reset, the end). */
static void fa_stop(caterva_block_iter *it) {
  cat_want *w;
  int n;
  int64_t nc;
  if (it->fa != NULL && cat_fa_take(it->fa, it->ctx, -1, &w, &n, &nc) > 0) cat_wants_free(w, n);
  ready_release(it);
}

/* Make w[0..n) (fetched: by the thread or the caller) the current portion: each chunk pinned
** with its bytes at hand. A chunk that cannot be had for lack of memory is left to
** open_chunk_data; any other failure (a request that exhausted its retries) is the error,
** at once: asking for the portion's other chunks would pay the retry cycle once per chunk
** (issue 39). Takes w. */
static int ready_set(caterva_block_iter *it, cat_want *w, int n) {
  int rc = CATERVA_OK;
  it->ready = w;
  it->nready = n;
  it->ready_chunk = calloc((size_t)(n > 0 ? n : 1), sizeof *it->ready_chunk);
  it->ready_cbytes = calloc((size_t)(n > 0 ? n : 1), sizeof *it->ready_cbytes);
  if (it->ready_chunk == NULL || it->ready_cbytes == NULL) {
    ready_release(it);
    return CATERVA_OK;
  }
  for (int k = 0; k < n && rc >= 0; k++) {
    rc = cat_sc_get_chunk_blocks(it->ctx, it->sc, w[k].nchunk, w[k].blocks, w[k].nblocks,
                                 &it->ready_chunk[k], &it->ready_cbytes[k]);
    if (rc < 0) it->ready_chunk[k] = NULL;
    if (rc == CATERVA_E_NOMEM) rc = CATERVA_OK;
  }
  return rc;
}

/* Entering the chunk at it->cc, the first not fetched yet: its portion, fetched by the thread
** (when it was the job) or now; then the next portion goes to the thread. */
static int plan_remote(caterva_block_iter *it) {
  int64_t n = 0, tag = it->nchunk, next[CATERVA_MAX_DIM];
  cat_want *w = NULL;
  int nw = 0, more = 0, rc = CATERVA_OK;
  ready_release(it);
  memcpy(next, it->cc, sizeof next);
  if (it->fa != NULL && (rc = cat_fa_take(it->fa, it->ctx, tag, &w, &nw, &n)) != 0) {
    CAT_TRY(leave, rc); /* the job failed for good */
    rc = CATERVA_OK;
    more = 1;
    for (int64_t k = 0; k < n && more; k++) more = next_chunk(it, next);
  } else {
    CAT_TRY(leave, remote_wants(it, next, 1, ITER_FETCHAHEAD_PORTION, &w, &nw, &n, &more));
    CAT_TRY(leave, cat_sc_prefetch(it->ctx, it->sc, w, nw));
  }
  it->nplanned = it->nvisit - 1 + n;
  rc = ready_set(it, w, nw);
  w = NULL;
  CAT_TRY(leave, rc);
  if (more && it->fa == NULL) it->fa = cat_fa_new();
  if (more && it->fa != NULL) {
    int64_t tag2 = cat_geom_chunk_number(it->g, next), n2 = 0;
    int more2;
    CAT_TRY(leave, remote_wants(it, next, 0, ITER_FETCHAHEAD_PORTION, &w, &nw, &n2, &more2));
    if (cat_fa_submit(it->fa, it->ctx, it->sc, w, nw, tag2, n2) == CATERVA_OK) w = NULL;
  }
leave:
  cat_wants_free(w, nw);
  return rc;
}

int caterva_block_iter_prefetch(caterva_block_iter *it, int64_t max_bytes) {
  int64_t n = 0;
  if (it == NULL || it->done || !cat_sc_is_remote(it->sc) || it->have_chunk) return CATERVA_OK;
  return plan_remote_from(it, it->c0, 0, max_bytes > 0 ? max_bytes : ITER_REMOTE_PORTION, &n);
}

/* Enter the chunk at it->cc: its valid items and the blocks to visit (planned ahead by the
** read-ahead, or computed now). */
int cat_iter_enter_chunk(caterva_block_iter *it) {
  int rc = CATERVA_OK;
  const cat_geom *g = it->g;
  cat_readahead *ra = it->ra;
  for (int k = 0; k < g->ndim; k++) {
    int64_t base = it->cc[k] * g->chunkshape[k];
    it->clo[k] = base;
    it->chi[k] = base + g->chunkshape[k] < g->shape[k] ? base + g->chunkshape[k] : g->shape[k];
  }
  it->nchunk = cat_geom_chunk_number(g, it->cc);
  if (ra != NULL && ra->peek_valid &&
      memcmp(ra->peek_cc, it->cc, sizeof(int64_t) * (size_t)g->ndim) == 0) {
    int32_t *t = it->sel, tc = it->selcap;
    it->sel = ra->peek_sel;
    it->selcap = ra->peek_cap;
    it->nsel = ra->peek_n;
    ra->peek_sel = t;
    ra->peek_cap = tc;
    ra->peek_valid = 0;
  } else {
    if (ra != NULL) ra->peek_valid = 0;
    CAT_TRY(leave, chunk_sel_once(it, it->cc, &it->sel, &it->selcap, &it->nsel, 0));
    planned_pass(it, it->nchunk);
  }
  it->pos = 0;
  if (cat_sc_is_remote(it->sc) && it->nvisit++ >= it->nplanned &&
      !(it->flags & CATERVA_ITER_NODATA))
    CAT_TRY(leave, plan_remote(it));
  if (it->nsel > 0) rc = open_chunk_data(it, it->nchunk);
leave:
  return rc;
}

/* Advance cc to the next chunk of the box in C order; 0 when past the last. */
static int next_chunk(const caterva_block_iter *it, int64_t *cc) {
  for (int k = it->g->ndim - 1; k >= 0; k--) {
    if (++cc[k] < it->c1[k]) return 1;
    cc[k] = it->c0[k];
  }
  return 0;
}

/* ---- read-ahead ------------------------------------------------------------------------ */

static void *ra_main(void *arg) {
  cat_readahead *ra = arg;
  pthread_mutex_lock(&ra->mu);
  for (;;) {
    while (!ra->quit && ra->state != RA_QUEUED) pthread_cond_wait(&ra->cv, &ra->mu);
    if (ra->quit) break;
    pthread_mutex_unlock(&ra->mu);
    int64_t r = caterva_chunk_decompress_blocks(ra->wctx, ra->chunk, (size_t)ra->cbytes,
                                                ra->blocks, ra->nb, ra->buf, ra->bufcap);
    pthread_mutex_lock(&ra->mu);
    ra->rc = r;
    ra->state = RA_DONE;
    pthread_cond_broadcast(&ra->cv);
  }
  pthread_mutex_unlock(&ra->mu);
  return NULL;
}

/* A read-ahead for an iterator with batches of up to batch_max blocks; NULL when memory or a
** context cannot be had (the iterator then simply reads as it goes). */
static cat_readahead *ra_new(int32_t batch_max) {
  cat_readahead *ra = calloc(1, sizeof *ra);
  if (ra == NULL) return NULL;
  ra->blocks = malloc((size_t)batch_max * sizeof *ra->blocks);
  if (ra->blocks == NULL || caterva_ctx_new(1, &ra->wctx) != CATERVA_OK) {
    free(ra->blocks);
    free(ra);
    return NULL;
  }
  pthread_mutex_init(&ra->mu, NULL);
  pthread_cond_init(&ra->cv, NULL);
  return ra;
}

static void ra_free(cat_readahead *ra) {
  if (ra == NULL) return;
  if (ra->started) {
    pthread_mutex_lock(&ra->mu);
    ra->quit = 1;
    pthread_cond_broadcast(&ra->cv);
    pthread_mutex_unlock(&ra->mu);
    pthread_join(ra->thread, NULL);
  }
  pthread_mutex_destroy(&ra->mu);
  pthread_cond_destroy(&ra->cv);
  caterva_ctx_free(ra->wctx);
  free(ra->blocks);
  free(ra->buf);
  free(ra->peek_sel);
  free(ra);
}

/* Wait for the job in flight, if any, and pass its decompressed blocks on to the caller's
** counter. Returns 1 when a finished job is there to take, 0 when there was none. */
static int ra_finish(caterva_block_iter *it) {
  cat_readahead *ra = it->ra;
  int64_t n;
  int had;
  pthread_mutex_lock(&ra->mu);
  while (ra->state == RA_QUEUED) pthread_cond_wait(&ra->cv, &ra->mu);
  had = ra->state == RA_DONE;
  ra->state = RA_IDLE;
  pthread_mutex_unlock(&ra->mu);
  if (!had) return 0;
  n = caterva_ctx_blocks_decompressed(ra->wctx);
  if (it->ctx != NULL) __atomic_fetch_add(&it->ctx->blocks_decompressed, n - ra->counted,
                                          __ATOMIC_RELAXED);
  ra->counted = n;
  return 1;
}

/* Drop whatever was read ahead (a reset, the end). */
void cat_iter_ra_discard(caterva_block_iter *it) {
  if (it->ra == NULL) return;
  ra_finish(it);
  it->ra->peek_valid = 0;
}

/* Take the job when it is batch sel[pos, pos + nb) of chunk nchunk: 1 (its blocks are now in
** it->data), 0 when there is no such job, or the job's error. */
static int ra_take(caterva_block_iter *it, int64_t nchunk, int32_t pos, int32_t nb) {
  cat_readahead *ra = it->ra;
  uint8_t *t;
  size_t tc;
  if (!ra_finish(it)) return 0;
  if (ra->nchunk != nchunk || ra->pos != pos || ra->nb != nb ||
      memcmp(ra->blocks, it->sel + pos, (size_t)nb * sizeof *ra->blocks) != 0)
    return 0;
  if (ra->rc < 0)
    return cat_error(it->ctx, (int)ra->rc, "%s", caterva_ctx_errmsg(ra->wctx));
  t = it->data;
  tc = it->datacap;
  it->data = ra->buf;
  it->datacap = ra->bufcap;
  ra->buf = t;
  ra->bufcap = tc;
  return 1;
}

/* Hand batch blocks[0, nb) of a chunk to the worker (sel[pos, ...) of chunk nchunk). Nothing
** happens when its buffer or thread cannot be had: the caller then reads it itself. */
static void ra_submit(caterva_block_iter *it, const uint8_t *chunk, int32_t cbytes,
                      int64_t nchunk, int32_t pos, int32_t nb, const int32_t *blocks) {
  cat_readahead *ra = it->ra;
  size_t need = (size_t)nb * (size_t)it->g->blocksize;
  if (need > ra->bufcap) {
    free(ra->buf);
    ra->bufcap = 0;
    ra->buf = malloc(need);
    if (ra->buf == NULL) return;
    ra->bufcap = need;
  }
  if (!ra->started) {
    if (pthread_create(&ra->thread, NULL, ra_main, ra) != 0) return;
    ra->started = 1;
  }
  memcpy(ra->blocks, blocks, (size_t)nb * sizeof *blocks);
  pthread_mutex_lock(&ra->mu);
  ra->chunk = chunk;
  ra->cbytes = cbytes;
  ra->nchunk = nchunk;
  ra->pos = pos;
  ra->nb = nb;
  ra->state = RA_QUEUED;
  pthread_cond_broadcast(&ra->cv);
  pthread_mutex_unlock(&ra->mu);
}

/* After batch [batch_lo, batch_hi) is loaded: start on the batch after it, in this chunk or
** in the next one of the box (whose block list is planned now, once). Chunks that are not
** plainly compressed blocks (special values, other blocksizes) are left to the caller, and
** so is any error met here: it comes again, and is reported, when the caller gets there. */
static void ra_plan_next(caterva_block_iter *it) {
  cat_readahead *ra = it->ra;
  const cat_geom *g = it->g;
  const uint8_t *chunk;
  int32_t cbytes, nb;
  int64_t cc[CATERVA_MAX_DIM], nchunk;
  caterva_chunk_info info;
  if (it->batch_hi < it->nsel) {
    nb = it->nsel - it->batch_hi;
    if (nb > it->batch_max) nb = it->batch_max;
    ra_submit(it, it->chunk, it->cbytes, it->nchunk, it->batch_hi, nb, it->sel + it->batch_hi);
    return;
  }
  memcpy(cc, it->cc, sizeof cc);
  if (ra->peek_valid || !next_chunk(it, cc)) return;
  if (chunk_sel(it, cc, &ra->peek_sel, &ra->peek_cap, &ra->peek_n) < 0) return;
  memcpy(ra->peek_cc, cc, sizeof cc);
  ra->peek_valid = 1;
  if (ra->peek_n == 0) return;
  nchunk = cat_geom_chunk_number(g, cc);
  if (caterva_schunk_chunk_special(it->sc, nchunk) != CATERVA_SPECIAL_NONE) return;
  if (caterva_schunk_get_chunk(it->ctx, it->sc, nchunk, &chunk, &cbytes) < 0) return;
  if (caterva_chunk_info_get(chunk, (size_t)cbytes, &info) < 0 ||
      info.special != CATERVA_SPECIAL_NONE || info.nbytes != g->chunksize ||
      info.blocksize != g->blocksize || info.nblocks != g->nblocks)
    return;
  nb = ra->peek_n < it->batch_max ? ra->peek_n : it->batch_max;
  ra_submit(it, chunk, cbytes, nchunk, 0, nb, ra->peek_sel);
}

/* Whether a read-ahead is worth starting: asked for, threads to spare, and a batch after the
** one just loaded (a box of one batch never starts a thread). */
static int want_readahead(const caterva_block_iter *it) {
  int64_t cc[CATERVA_MAX_DIM];
  if (!(it->flags & CATERVA_ITER_READAHEAD) || (it->flags & CATERVA_ITER_NODATA) ||
      it->ctx == NULL || it->ctx->nthreads < 2 || cat_sc_is_remote(it->sc))
    return 0;
  if (it->batch_hi < it->nsel) return 1;
  memcpy(cc, it->cc, sizeof cc);
  return next_chunk(it, cc);
}

/* Decompress the next batch of selected blocks, starting at it->pos (or take it from the
** read-ahead), then let the read-ahead start on the batch after it. */
static int load_batch(caterva_block_iter *it) {
  caterva_ctx *ctx = it->ctx;
  int rc = CATERVA_OK;
  const cat_geom *g = it->g;
  int32_t nb = it->nsel - it->pos;
  size_t need;
  if (nb > it->batch_max) nb = it->batch_max;
  need = (size_t)nb * (size_t)g->blocksize;
  if (it->ra != NULL) {
    rc = ra_take(it, it->nchunk, it->pos, nb);
    if (rc < 0) goto leave;
    if (rc == 1) {
      rc = CATERVA_OK;
      goto loaded;
    }
  }
  if (need > it->datacap) { /* grows to the largest batch seen; point lookups stay small */
    free(it->data);
    it->datacap = 0;
    it->data = malloc(need);
    CAT_CHECK(leave, it->data != NULL, CATERVA_E_NOMEM, "out of memory");
    it->datacap = need;
  }
  CAT_TRY(leave, caterva_chunk_decompress_blocks(ctx, it->chunk, (size_t)it->cbytes,
                                                 it->sel + it->pos, nb, it->data, need));
loaded:
  CAT_TRY(leave, cat_bs_check_blocks(ctx, it->a, it->nchunk, it->chunk, it->cbytes,
                                     it->sel + it->pos, nb, it->data));
  it->batch_lo = it->pos;
  it->batch_hi = it->pos + nb;
  if (it->ra == NULL && want_readahead(it)) it->ra = ra_new(it->batch_max);
  if (it->ra != NULL) ra_plan_next(it);
leave:
  return rc;
}

/* Block nblock of the chunk whose valid items are [clo, chi): its grid coordinates into bc,
** its first item's global coordinates into origin and its part of the box into [start,
** stop). Reads only the box and the geometry, so workers may call it. */
void cat_iter_block_box(const caterva_block_iter *it, const int64_t *clo, const int64_t *chi,
                        int32_t nblock, int32_t *bc, int64_t *origin, int64_t *start,
                        int64_t *stop) {
  const cat_geom *g = it->g;
  int32_t rest = nblock;
  for (int k = g->ndim - 1; k >= 0; k--) {
    bc[k] = rest % g->blockgrid[k];
    rest /= g->blockgrid[k];
  }
  for (int k = 0; k < g->ndim; k++) {
    int64_t o = clo[k] + (int64_t)bc[k] * g->blockshape[k];
    int64_t hi = o + g->blockshape[k];
    if (hi > chi[k]) hi = chi[k];
    if (hi > it->stop[k]) hi = it->stop[k];
    origin[k] = o;
    start[k] = o > it->start[k] ? o : it->start[k];
    stop[k] = hi;
  }
}

int caterva_block_iter_next(caterva_block_iter *it, const caterva_block **blk) {
  int rc;
  const cat_geom *g;
  caterva_block *b;
  *blk = NULL;
  if (it == NULL || it->done) return 0;
  g = it->g;
  b = &it->blk;
  while (it->pos >= it->nsel) {
    if (!cat_iter_step_chunk(it)) {
      it->done = 1;
      return 0;
    }
    rc = cat_iter_enter_chunk(it);
    if (rc < 0) {
      it->done = 1;
      return rc;
    }
    b->nchunk = it->nchunk;
  }
  cat_iter_block_box(it, it->clo, it->chi, it->sel[it->pos], it->bc, b->origin, b->start, b->stop);
  b->nblock = it->sel[it->pos];
  b->uniform = it->serve == SERVE_FILL && cat_iter_fill_uniform(it);
  switch (it->serve) {
  case SERVE_BLOCKS:
    if (it->pos >= it->batch_hi) {
      rc = load_batch(it);
      if (rc < 0) {
        it->done = 1;
        return rc;
      }
    }
    b->data = it->data + (size_t)(it->pos - it->batch_lo) * (size_t)g->blocksize;
    break;
  case SERVE_FILL: b->data = it->fill; break;
  case SERVE_WHOLE: b->data = it->whole + (size_t)b->nblock * (size_t)g->blocksize; break;
  default: b->data = NULL; break;
  }
  it->pos++;
  *blk = b;
  return 1;
}

