/*
 * frame_remote_tail.c -- a large frame on a server: its offsets index and trailer read by
 * range at open, and the block statistics' bytes fetched a block at a time when a query needs
 * them (cat_remote_bytes), as are the blocks of a large offsets index (read a block at a time
 * by frame_index.c). The frame object is a contiguous frame, or a sparse frame's
 * chunks.b2frame (its header, index and trailer, no chunks). The remote store itself is
 * frame_remote.c.
 */
#include "frame_remote_internal.h"

/* ---- the offsets index and trailer of a frame, by range ------------------------------------ */

/*
 * A large frame object's bytes after its chunk section (none in chunks.b2frame) -- the offsets
 * index, then the trailer -- are not fetched whole at open: the block statistics in the trailer grow with the
 * chunk count (0.65 MB at a million chunks). The open's second wave asks for the first
 * CAT_RTAIL_HEAD bytes from the index on (the index's header; a small index whole, the
 * trailer's lead-in after it) and the last CAT_RTAIL_END bytes of the frame (the trailer's
 * length; the contents of small vlmetalayers stored last); what the parts then say is still
 * missing is asked in further waves. Everything is fetched but the content of the statistics'
 * vlmetalayer and a large offsets index (one frame_index.c reads a block at a time), of which
 * only their chunks' header parts: the statistics read their blocks as their pages are asked
 * for, the index as entries are (cat_remote_bytes). rs->tail holds the bytes at their place, rs->have
 * says which are present; the parsers read only present bytes.
 */
#define CAT_RTAIL_LEAD (4 * 1024)      /* the trailer's lead-in, first guess */
#define CAT_RTAIL_WAVES 6              /* waves after the first to find every part */
#define CAT_RTAIL_ITEMS 64             /* more vlmetalayers: the trailer fetched whole */
#define CAT_RTAIL_NEED 256
#define CAT_RLAZY_VLMETA "_caterva_blockstats"

static uint8_t *tail_at(const cat_rstore *rs, int64_t off) { return rs->tail + (off - rs->tail_off); }

/* How many bytes from object offset lo on are present in the window (0 when lo is not). */
static int64_t tail_run(const cat_rstore *rs, int64_t lo) {
  for (int64_t k = 0; k < rs->nhave; k++)
    if (rs->have[k].lo <= lo && lo < rs->have[k].hi) return rs->have[k].hi - lo;
  return 0;
}

/* Note bytes [lo, hi) present (have[] stays sorted, its ranges apart). */
static int tail_mark(cat_rstore *rs, int64_t lo, int64_t hi) {
  int64_t k = 0, m;
  if (rs->nhave == rs->caphave) {
    int64_t cap = rs->caphave > 0 ? 2 * rs->caphave : 16;
    rrange *r = realloc(rs->have, (size_t)cap * sizeof *r);
    if (r == NULL) return CATERVA_E_NOMEM;
    rs->have = r;
    rs->caphave = cap;
  }
  while (k < rs->nhave && rs->have[k].hi < lo) k++;
  for (m = k; m < rs->nhave && rs->have[m].lo <= hi; m++) {
    if (rs->have[m].lo < lo) lo = rs->have[m].lo;
    if (rs->have[m].hi > hi) hi = rs->have[m].hi;
  }
  memmove(&rs->have[k + 1], &rs->have[m], (size_t)(rs->nhave - m) * sizeof *rs->have);
  rs->nhave += 1 - (m - k);
  rs->have[k] = (rrange){lo, hi};
  return CATERVA_OK;
}

/* The missing parts of [lo, hi) (inside the window) added to need[*n] (at most
 * CAT_RTAIL_NEED). */
static void tail_want_max(const cat_rstore *rs, const caterva_schunk *sc, rrange *need, int *n,
                          int max, int64_t lo, int64_t hi) {
  if (lo < rs->tail_off) lo = rs->tail_off;
  if (hi > sc->frame_len) hi = sc->frame_len;
  while (lo < hi && *n < max) {
    int64_t run = tail_run(rs, lo), end = hi;
    if (run > 0) {
      lo += run;
      continue;
    }
    for (int64_t k = 0; k < rs->nhave; k++)
      if (rs->have[k].lo > lo && rs->have[k].lo < end) end = rs->have[k].lo;
    need[(*n)++] = (rrange){lo, end};
    lo = end;
  }
}

static void tail_want(const cat_rstore *rs, const caterva_schunk *sc, rrange *need, int *n,
                      int64_t lo, int64_t hi) {
  tail_want_max(rs, sc, need, n, CAT_RTAIL_NEED, lo, hi);
}

/* Fetch need[0, n) into the window: one wave. needed: count them as bytes a read needs. */
static int tail_fetch(caterva_ctx *ctx, cat_rstore *rs, const caterva_schunk *sc,
                      const rrange *need, int n, bool needed) {
  rpiece *p = calloc((size_t)(n > 0 ? n : 1), sizeof *p);
  int rc = CATERVA_OK;
  CAT_CHECK(leave, p != NULL, CATERVA_E_NOMEM, "out of memory");
  for (int k = 0; k < n; k++) {
    p[k] = (rpiece){-1, cat_rs_frame_url(rs), need[k].lo, need[k].hi - need[k].lo,
                    tail_at(rs, need[k].lo)};
    if (needed) cat_remote_count_needed(rs->rm, p[k].len);
  }
  CAT_TRY(leave, cat_rs_run_pieces(ctx, rs, sc, p, n));
  for (int k = 0; k < n; k++)
    CAT_CHECK(leave, tail_mark(rs, need[k].lo, need[k].hi) >= 0, CATERVA_E_NOMEM, "out of memory");
leave:
  free(p);
  return rc;
}

/* The header part of the chunk of clen bytes at object offset c (its header, block-start
 * table and dictionary): what reading it a block at a time needs first. */
static void want_chunk_head(const cat_rstore *rs, const caterva_schunk *sc, rrange *need, int *n,
                            int64_t c, int32_t clen) {
  cat_chunk_span sp;
  int32_t more = 0;
  int64_t run;
  tail_want(rs, sc, need, n, c, c + CATERVA_CHUNK_HEADER_SIZE);
  run = tail_run(rs, c);
  if (run < CATERVA_CHUNK_HEADER_SIZE) return;
  if (cat_chunk_span_init(tail_at(rs, c), (int32_t)(run < clen ? run : clen), clen, &sp, &more) ==
      CATERVA_E_NOSPACE)
    tail_want(rs, sc, need, n, c, c + more);
}

/* What a vlmetalayer's content at c (its bin32 header, object offset) needs: all of it, or
 * for the statistics the header part of its chunk. */
static void plan_content(const cat_rstore *rs, const caterva_schunk *sc, rrange *need, int *n,
                         const cat_trailer_item *it, int64_t c, int64_t end) {
  const uint8_t *h;
  int32_t clen;
  bool lazy = it->nlen == strlen(CAT_RLAZY_VLMETA) &&
              memcmp(it->name, CAT_RLAZY_VLMETA, it->nlen) == 0;
  tail_want(rs, sc, need, n, c, c + 5);
  if (tail_run(rs, c) < 5) return;
  h = tail_at(rs, c);
  clen = cat_be32(h + 1) > INT32_MAX ? -1 : (int32_t)cat_be32(h + 1);
  if (h[0] != 0xc6 || clen < CATERVA_CHUNK_HEADER_SIZE || clen > end - c - 5) return; /* the
                                                              * parser says what is wrong */
  c += 5;
  if (!lazy) {
    tail_want(rs, sc, need, n, c, c + clen);
    return;
  }
  want_chunk_head(rs, sc, need, n, c, clen);
  /* errors: the statistics' reader finds the chunk unusable (no statistics) */
}

/* What the open still needs of the window, into need[*n]: the offsets index whole, the
 * trailer's lead-in, the contents (plan_content). Nothing more once all is there. */
static int tail_plan(caterva_ctx *ctx, cat_rstore *rs, const caterva_schunk *sc, rrange *need,
                     int *n) {
  cat_trailer_item it[CAT_RTAIL_ITEMS];
  int64_t idx = rs->tail_off, fl = sc->frame_len, tl = fl - CAT_TRAILER_TAIL, tlen, ts, lead = 0;
  int32_t icb;
  int ni = 0, r;
  *n = 0;
  tail_want(rs, sc, need, n, idx, idx + CATERVA_CHUNK_HEADER_SIZE);
  tail_want(rs, sc, need, n, tl, fl);
  if (*n > 0) return CATERVA_OK;
  if (tail_at(rs, tl)[0] != 0xce)
    return cat_error(ctx, CATERVA_E_CORRUPT, "frame trailer: missing length marker");
  tlen = cat_be32(tail_at(rs, tl) + 1);
  if (tlen < CAT_TRAILER_MIN || tlen > fl - idx)
    return cat_error(ctx, CATERVA_E_CORRUPT, "frame trailer: bad length %lld", (long long)tlen);
  ts = fl - tlen;
  icb = cat_le32s(tail_at(rs, idx) + 12);
  if (icb < CATERVA_CHUNK_HEADER_SIZE || icb > ts - idx)
    return cat_error(ctx, CATERVA_E_CORRUPT, "offsets index chunk at %lld is malformed",
                     (long long)idx);
  if (cat_index_lazy_ok(sc, tail_at(rs, idx), ts - idx, NULL))
    want_chunk_head(rs, sc, need, n, idx, icb); /* its blocks: when entries are asked for */
  else
    tail_want(rs, sc, need, n, idx, idx + icb);
  tail_want(rs, sc, need, n, ts, ts + (tlen < CAT_RTAIL_LEAD ? tlen : CAT_RTAIL_LEAD));
  if (tail_run(rs, ts) < (tlen < CAT_RTAIL_LEAD ? tlen : CAT_RTAIL_LEAD)) return CATERVA_OK;
  r = cat_frame_trailer_items(tail_at(rs, ts), tail_run(rs, ts), tlen, it, CAT_RTAIL_ITEMS, &ni,
                              &lead);
  if (r != 1 || ni >= CAT_RTAIL_ITEMS) { /* long, or malformed: all of it for the parser */
    tail_want(rs, sc, need, n, ts, fl);
    return CATERVA_OK;
  }
  for (int k = 0; k < ni; k++) plan_content(rs, sc, need, n, &it[k], ts + it[k].off, tl);
  return CATERVA_OK;
}

/* The probe's bytes (the object's first nseed) that lie in the window, marked present. */
static int tail_seed(cat_rstore *rs, const caterva_schunk *sc, const uint8_t *seed,
                     int64_t nseed) {
  int64_t lo = rs->tail_off, hi = nseed < sc->frame_len ? nseed : sc->frame_len;
  if (seed == NULL || hi <= lo) return CATERVA_OK;
  memcpy(tail_at(rs, lo), seed + lo, (size_t)(hi - lo));
  return tail_mark(rs, lo, hi);
}

/* Open's second wave and what follows for a large frame object (see above); idx: where its
 * offsets index starts. Then the trailer and the index are parsed from the window. */
int cat_rs_open_tail(caterva_ctx *ctx, caterva_schunk *sc, cat_rstore *rs, int64_t idx,
                     const uint8_t *seed, int64_t nseed) {
  rrange *need = malloc(CAT_RTAIL_NEED * sizeof *need);
  int64_t tstart = 0, fl = sc->frame_len;
  int n = 0, rc = CATERVA_OK;
  CAT_CHECK(leave, need != NULL, CATERVA_E_NOMEM, "out of memory");
  rs->tail_off = idx;
  rs->tail = calloc(1, (size_t)(fl - idx)); /* zeros where nothing was fetched: no RSS */
  CAT_CHECK(leave, rs->tail != NULL, CATERVA_E_NOMEM, "out of memory");
  CAT_CHECK(leave, tail_seed(rs, sc, seed, nseed) >= 0, CATERVA_E_NOMEM, "out of memory");
  if (fl - CAT_RTAIL_END <= idx + CAT_RTAIL_HEAD) {
    tail_want(rs, sc, need, &n, idx, fl);
  } else {
    tail_want(rs, sc, need, &n, idx, idx + CAT_RTAIL_HEAD);
    tail_want(rs, sc, need, &n, fl - CAT_RTAIL_END, fl);
  }
  for (int wave = 0;; wave++) {
    if (n == 0) CAT_TRY(leave, tail_plan(ctx, rs, sc, need, &n));
    if (n == 0) break;
    CAT_CHECK(leave, wave <= CAT_RTAIL_WAVES, CATERVA_E_CORRUPT,
              "'%s': its offsets index and trailer not found in %d waves", cat_rs_frame_url(rs),
              wave);
    CAT_TRY(leave, tail_fetch(ctx, rs, sc, need, n, false));
    n = 0;
  }
  sc->lazy_vlmeta = CAT_RLAZY_VLMETA;
  rc = cat_frame_parse_trailer_at(ctx, sc, rs->tail, idx, idx, &tstart);
  sc->lazy_vlmeta = NULL;
  CAT_TRY(leave, rc);
  rc = cat_index_lazy_attach(ctx, sc, rs->tail, tstart - idx, true);
  if (rc == 0) { /* decoded whole: it must all be there (tail_plan asked for it) */
    int32_t icb = cat_le32s(rs->tail + 12);
    CAT_CHECK(leave, icb >= CATERVA_CHUNK_HEADER_SIZE && tail_run(rs, idx) >= icb,
              CATERVA_E_CORRUPT, "offsets index chunk at %lld is malformed", (long long)idx);
    rc = cat_frame_parse_index(ctx, sc, rs->tail, 0, tstart - idx);
  }
  CAT_TRY(leave, rc);
  rc = CATERVA_OK;
leave:
  free(need);
  return rc;
}

/* Block j of the chunk at c (cbytes, layout sp; its header part present): [*lo, *hi). false
 * when its start is not a start (the chunk is then fetched whole). */
static bool span_block(const uint8_t *c, int32_t cbytes, const cat_chunk_span *sp, int32_t j,
                       int32_t *lo, int32_t *hi) {
  if (j < 0 || j >= sp->nblocks) return false;
  *lo = cat_le32s(c + sp->table + 4 * (size_t)j);
  *hi = cbytes;
  if (*lo < sp->prefix || *lo >= cbytes) return false;
  for (int32_t b = 0; b < sp->nblocks; b++) {
    int32_t s = cat_le32s(c + sp->table + 4 * (size_t)b);
    if (s > *lo && s < *hi) *hi = s;
  }
  return true;
}

/* The wanted blocks of the chunk at object offset base (see cat_remote_bytes), the lock held.
 * A block's bytes are wanted whole or not at all (max: what need holds). */
static int bytes_locked(caterva_ctx *ctx, cat_rstore *rs, const caterva_schunk *sc, int64_t base,
                        int32_t cbytes, const int32_t *blocks, int32_t nb) {
  const uint8_t *c = tail_at(rs, base);
  int max = nb > 0 && nb < INT32_MAX / 4 ? 2 * nb + 16 : 16;
  rrange *need = malloc((size_t)max * sizeof *need);
  cat_chunk_span sp;
  int64_t run = tail_run(rs, base);
  int32_t more, lo, hi;
  int n = 0, rc = CATERVA_OK;
  bool whole = nb < 0 || run < CATERVA_CHUNK_HEADER_SIZE ||
               cat_chunk_span_init(c, (int32_t)(run < cbytes ? run : cbytes), cbytes, &sp, &more) < 0 ||
               sp.whole_only || sp.plain || sp.nblocks <= 0;
  CAT_CHECK(leave, need != NULL, CATERVA_E_NOMEM, "out of memory");
  for (int32_t k = -1; !whole && k < nb; k++) {
    int32_t j = k < 0 ? 0 : blocks[k];
    if (k < 0 && !sp.delta_ref) continue;
    whole = !span_block(c, cbytes, &sp, j, &lo, &hi);
    if (!whole) tail_want_max(rs, sc, need, &n, max, base + lo, base + hi);
    whole |= n >= max;
  }
  if (!whole && n > 0) CAT_TRY(leave, tail_fetch(ctx, rs, sc, need, n, true));
  for (int32_t k = -1; !whole && k < nb; k++) { /* streams inside their block's bytes? */
    int32_t j = k < 0 ? 0 : blocks[k];
    if (k < 0 && !sp.delta_ref) continue;
    whole = !span_block(c, cbytes, &sp, j, &lo, &hi) || cat_chunk_span_reach(c, cbytes, j, hi) < 0;
  }
  if (whole) {
    n = 0;
    tail_want_max(rs, sc, need, &n, max, base, base + cbytes);
    CAT_CHECK(leave, n < max, CATERVA_E_UNSUPPORTED, "chunk in too many pieces");
    if (n > 0) CAT_TRY(leave, tail_fetch(ctx, rs, sc, need, n, true));
  }
leave:
  free(need);
  return rc;
}

int cat_remote_bytes_locked(caterva_ctx *ctx, const caterva_schunk *sc, const uint8_t *chunk,
                            int32_t cbytes, const int32_t *blocks, int32_t nblocks) {
  cat_rstore *rs = sc->remote;
  if (rs == NULL || rs->tail == NULL || cbytes < CATERVA_CHUNK_HEADER_SIZE || chunk < rs->tail ||
      chunk - rs->tail > sc->frame_len - rs->tail_off - cbytes)
    return CATERVA_OK;
  return bytes_locked(ctx, rs, sc, rs->tail_off + (chunk - rs->tail), cbytes, blocks, nblocks);
}

int cat_remote_bytes(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *chunk, int32_t cbytes,
                     const int32_t *blocks, int32_t nblocks) {
  cat_rstore *rs = sc->remote;
  int rc;
  if (rs == NULL) return CATERVA_OK;
  pthread_mutex_lock(&rs->mu);
  rc = cat_remote_bytes_locked(ctx, sc, chunk, cbytes, blocks, nblocks);
  pthread_mutex_unlock(&rs->mu);
  return rc;
}

/* ---- the offsets index read a block at a time (frame_index.c) ------------------------------ */

int cat_remote_entries(caterva_ctx *ctx, const caterva_schunk *sc, const int64_t *idx, int n,
                       int64_t *e) {
  cat_rstore *rs = sc->remote;
  int rc;
  pthread_mutex_lock(&rs->mu);
  rc = cat_sc_entries_locked(ctx, sc, idx, n, e, NULL);
  pthread_mutex_unlock(&rs->mu);
  return rc;
}

int cat_sc_index_ahead(caterva_ctx *ctx, const caterva_schunk *sc, const int64_t *idx, int n) {
  cat_rstore *rs = sc->remote;
  int rc;
  if (rs == NULL || sc->lazy_index == NULL || n <= 0) return CATERVA_OK;
  pthread_mutex_lock(&rs->mu);
  rc = cat_sc_index_ahead_locked(ctx, sc, idx, n);
  pthread_mutex_unlock(&rs->mu);
  return rc;
}
