/*
 * blockstats_stored.c -- the block statistics' records and object (what blockstats.c computes
 * and keeps in step with the chunks), and their stored form: encoded into the trailer at
 * commit, and read back a page of chunk positions at a time, when a position of the page is
 * first asked for, so that opening an array of millions of chunks reads only the stored
 * form's header. The lowest of the three blockstats files: it calls neither of the others.
 *
 * Where it is stored: the vlmetalayer `_caterva_blockstats`, whose content is one msgpack
 * bin (so msgpack readers of user attributes, python-blosc2's vlmeta among them, see an
 * opaque byte string and other readers ignore it). Inside the bin, little-endian:
 *
 *   header, 32 + 8 * ndim bytes
 *     0   4  magic "CvBS"
 *     4   1  layout version (1)
 *     5   1  stats type: 1 float (f64 values), 2 int (i64), 3 uint (u64)
 *     6   1  ndim
 *     7   1  0
 *     8   4  blocks per chunk (u32)
 *    12   4  0
 *    16   8  number of chunks (i64)
 *    24   8  0
 *    32  8n  the array shape the statistics describe (i64 each)
 *   then for every chunk, in chunk order, 16 + 40 * nblocks bytes
 *     0   8  fingerprint of the chunk (u64; 0: this chunk has no statistics)
 *     8   8  0
 *    16      per block, in block order, 40 bytes
 *              0  8  min     8  8  max     16  8  sum
 *             24  4  present items (u32)   28  4  NaN items (u32)
 *             32  4  flags (bit 0: the integer sum overflowed)
 *             36  4  where the block's compressed bytes start in the chunk (its entry of
 *                    the chunk's block-start table; 0: not recorded -- files written
 *                    before it was, memcpyed chunks)
 *   then 0 to 7 zero bytes, so that the vlmetalayer's length (bin header included) is a
 *   multiple of 8 and the trailer compresses it with an 8-byte shuffle.
 *
 * The vlmetalayer is one Blosc2 chunk cut into blocks (frame_format.c), so a page of
 * positions is read by decoding only the blocks its bytes lie in (caterva_chunk_getitems).
 * The header, and the chunk's own uncompressed size, are checked at open; a page whose bytes
 * do not decode leaves its positions without statistics (unknown, never wrong).
 */
#include "blockstats_internal.h"
#include "frame_internal.h"

#include <stdlib.h>

#define BS_MAGIC "CvBS"
#define BS_VERSION 1
#define BS_HEAD 32
#define BS_CHUNK_HEAD 16
#define BS_REC 40
#define BS_FLAG_SUM_OVERFLOW 1u
#define BS_PAGE_BYTES (64 * 1024) /* stored bytes read at a time (at least one position) */
#define BS_READ_BLOCKS_MAX 4096   /* blocks of the stored form decoded at a time */

static size_t per_chunk(const cat_bstats *bs) { return BS_CHUNK_HEAD + (size_t)bs->nblocks * BS_REC; }

/* ---- records and the statistics object ------------------------------------------------ */

void cat_bs_rec_unref(bs_rec *r) {
  if (r != NULL && --r->refs == 0) free(r);
}

/* A record has its blocks' statistics, then their starts (uint32 each). */
bs_rec *cat_bs_rec_new(int32_t nblocks) {
  bs_rec *r = calloc(1, sizeof *r + (size_t)nblocks * (sizeof(caterva_block_stats) + 4));
  if (r != NULL) r->refs = 1;
  return r;
}

uint32_t *cat_bs_rec_starts(bs_rec *r, int32_t nblocks) { return (uint32_t *)(r->b + nblocks); }

void cat_bs_recs_free(bs_rec **rec, int64_t n) {
  for (int64_t i = 0; rec != NULL && i < n; i++) cat_bs_rec_unref(rec[i]);
  cat_ztable_free(rec);
}

/* The statistics a dtype has (CATERVA_STATS_*), and its kind into *kind. */
int cat_bs_stats_type(const char *dtype, int itemsize, int *kind) {
  caterva_dtype_info info;
  *kind = CATERVA_KIND_OPAQUE;
  if (dtype == NULL || caterva_dtype_parse(dtype, &info) != CATERVA_OK || info.big_endian ||
      info.itemsize != itemsize)
    return CATERVA_STATS_NONE;
  *kind = info.kind;
  switch (info.kind) {
  case CATERVA_KIND_FLOAT:
    return itemsize == 2 || itemsize == 4 || itemsize == 8 ? CATERVA_STATS_FLOAT
                                                           : CATERVA_STATS_NONE;
  case CATERVA_KIND_INT:
  case CATERVA_KIND_BOOL:
    return itemsize == 1 || itemsize == 2 || itemsize == 4 || itemsize == 8 ? CATERVA_STATS_INT
                                                                            : CATERVA_STATS_NONE;
  case CATERVA_KIND_UINT:
    return itemsize == 1 || itemsize == 2 || itemsize == 4 || itemsize == 8 ? CATERVA_STATS_UINT
                                                                            : CATERVA_STATS_NONE;
  default: return CATERVA_STATS_NONE;
  }
}

cat_bstats *cat_bs_new(const caterva_array *a, int stype, int kind) {
  cat_bstats *bs = calloc(1, sizeof *bs);
  if (bs == NULL) return NULL;
  bs->stype = stype;
  bs->dkind = kind;
  bs->itemsize = a->g.itemsize;
  bs->nblocks = a->g.nblocks;
  bs->hint_pos = -1;
  return bs;
}

void cat_bs_free(cat_bstats *bs) {
  if (bs == NULL) return;
  cat_bs_enc_drop(bs);
  for (int k = 0; k < bs->nmarks; k++) cat_bs_recs_free(bs->marks[k].rec, bs->marks[k].n);
  free(bs->marks);
  if (bs->lazy != NULL && bs->lazy->loaded != NULL && bs->lazy->page > 0) {
    /* records exist only in the pages read or partly read (an edit reads them all first):
     * the positions of the others are never touched, not even to free them (a calloc'ed
     * array of 8 bytes a chunk that stays out of memory) */
    for (int64_t pg = 0; pg * bs->lazy->page < bs->n; pg++)
      if (bs->lazy->loaded[pg] != BS_PAGE_UNREAD)
        for (int64_t i = pg * bs->lazy->page; i < bs->n && i < (pg + 1) * bs->lazy->page; i++)
          cat_bs_rec_unref(bs->rec[i]);
    cat_ztable_free(bs->rec);
  } else {
    cat_bs_recs_free(bs->rec, bs->n);
  }
  cat_bs_lazy_free(bs->lazy);
  free(bs->scratch);
  free(bs);
}

/* ---- writing ------------------------------------------------------------------------- */

static void put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}
static void put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static int stored_size(const cat_bstats *bs, int ndim, int64_t *size) {
  int64_t per, body;
  if (!cat_mul64(bs->nblocks, BS_REC, &per) || !cat_add64(per, BS_CHUNK_HEAD, &per) ||
      !cat_mul64(per, bs->n, &body) || !cat_add64(body, BS_HEAD + 8 * ndim + 5, size) ||
      *size > CAT_BS_MAX)
    return CATERVA_E_UNSUPPORTED;
  *size = (*size + 7) / 8 * 8; /* padded: 8-byte items compress with shuffle */
  return CATERVA_OK;
}

static uint64_t scalar_bits(caterva_scalar v) { return v.u; }

static void encode_chunk(const cat_bstats *bs, bs_rec *r, uint8_t *p) {
  const uint32_t *st;
  memset(p, 0, per_chunk(bs));
  if (r == NULL) return;
  st = cat_bs_rec_starts(r, bs->nblocks);
  put64(p, r->fp);
  p += BS_CHUNK_HEAD;
  for (int32_t b = 0; b < bs->nblocks; b++, p += BS_REC) {
    const caterva_block_stats *s = &r->b[b];
    put64(p, scalar_bits(s->min));
    put64(p + 8, scalar_bits(s->max));
    put64(p + 16, scalar_bits(s->sum));
    put32(p + 24, (uint32_t)s->nvalid);
    put32(p + 28, (uint32_t)s->nnan);
    put32(p + 32, s->sum_overflow ? BS_FLAG_SUM_OVERFLOW : 0);
    put32(p + 36, st[b]);
  }
}

/* The stored form's header: the msgpack bin 32 lead-in, then the layout's header. */
static void encode_head(const cat_bstats *bs, const cat_geom *g, uint8_t *buf, int64_t size) {
  int64_t body = size - 5;
  uint8_t *p = buf + 5;
  buf[0] = 0xC6; /* msgpack bin 32, big-endian length */
  for (int i = 0; i < 4; i++) buf[1 + i] = (uint8_t)((uint64_t)body >> (24 - 8 * i));
  memset(p, 0, BS_HEAD);
  memcpy(p, BS_MAGIC, 4);
  p[4] = BS_VERSION;
  p[5] = (uint8_t)bs->stype;
  p[6] = (uint8_t)g->ndim;
  put32(p + 8, (uint32_t)bs->nblocks);
  put64(p + 16, (uint64_t)bs->n);
  for (int k = 0; k < g->ndim; k++) put64(p + BS_HEAD + 8 * k, (uint64_t)g->shape[k]);
}

void cat_bs_enc_drop(cat_bstats *bs) {
  cat_bs_recs_free(bs->enc_rec, bs->enc_n);
  free(bs->enc_chunk);
  free(bs->enc_head);
  bs->enc_chunk = bs->enc_head = NULL;
  bs->enc_rec = NULL;
  bs->enc_cbytes = bs->enc_headlen = 0;
  bs->enc_size = bs->enc_n = 0;
}

/* The stored form being built, produced a range at a time (cat_frame_vlmeta_build). */
typedef struct bs_build {
  cat_bstats *bs;
  int64_t body;           /* where position 0's record starts */
  size_t per;             /* bytes per position */
  uint8_t head[5 + BS_HEAD + 8 * CATERVA_MAX_DIM];
  bool head_same;         /* head is what the kept form's starts with */
  uint8_t *one;           /* one position's record, encoded */
} bs_build;

static void copy_part(uint8_t *dst, int64_t off, int64_t len, const uint8_t *src, int64_t at,
                      int64_t n) {
  int64_t lo = at > off ? at : off, hi = at + n < off + len ? at + n : off + len;
  if (lo < hi) memcpy(dst + (lo - off), src + (lo - at), (size_t)(hi - lo));
}

static int64_t first_position(const bs_build *st, int64_t off) {
  return off > st->body ? (off - st->body) / (int64_t)st->per : 0;
}

static void build_fill(void *arg, int64_t off, int32_t len, uint8_t *dst) {
  bs_build *st = arg;
  cat_bstats *bs = st->bs;
  memset(dst, 0, (size_t)len);
  copy_part(dst, off, len, st->head, 0, st->body);
  for (int64_t n = first_position(st, off); n < bs->n; n++) {
    int64_t at = st->body + n * (int64_t)st->per;
    if (at >= off + len) break;
    if (at >= off && at + (int64_t)st->per <= off + len) {
      encode_chunk(bs, bs->rec[n], dst + (at - off));
    } else {
      encode_chunk(bs, bs->rec[n], st->one);
      copy_part(dst, off, len, st->one, at, (int64_t)st->per);
    }
  }
}

static bool build_keep(void *arg, int64_t off, int32_t len) {
  const bs_build *st = arg;
  const cat_bstats *bs = st->bs;
  if (off < st->body && !st->head_same) return false;
  for (int64_t n = first_position(st, off); n < bs->n; n++) {
    if (st->body + n * (int64_t)st->per >= off + len) break;
    if (bs->rec[n] != bs->enc_rec[n]) return false;
  }
  return true;
}

/* The stored chunk the kept form describes, when the trailer still holds it (NULL if not). */
static const uint8_t *kept_chunk(const cat_bstats *bs, const caterva_array *a, int64_t size) {
  const uint8_t *cur;
  int32_t cb;
  if (bs->enc_chunk == NULL || bs->enc_size != size || bs->enc_n != bs->n ||
      cat_sc_vlmeta_is_lazy(a->sc, CAT_BS_ATTR) ||
      cat_sc_vlmeta_chunk(a->sc, CAT_BS_ATTR, &cur, &cb) < 0 ||
      cb != bs->enc_cbytes || memcmp(cur, bs->enc_chunk, (size_t)cb) != 0)
    return NULL;
  return cur;
}

/* After a store: the kept form is the chunk just stored (copy: a copy of it, or NULL). */
static void keep_form(cat_bstats *bs, const bs_build *st, uint8_t *copy, int32_t cbytes,
                      int64_t size) {
  uint8_t *head = malloc((size_t)st->body);
  if (bs->enc_n != bs->n || bs->enc_rec == NULL) {
    cat_bs_recs_free(bs->enc_rec, bs->enc_n);
    bs->enc_n = 0;
    bs->enc_rec = cat_ztable_new(bs->n, sizeof *bs->enc_rec);
  }
  if (copy == NULL || head == NULL || bs->enc_rec == NULL) {
    free(copy);
    free(head);
    cat_bs_enc_drop(bs);
    return;
  }
  bs->enc_n = bs->n;
  for (int64_t n = 0; n < bs->n; n++) {
    bs_rec *r = bs->rec[n];
    if (r == bs->enc_rec[n]) continue;
    if (r != NULL) r->refs++;
    cat_bs_rec_unref(bs->enc_rec[n]);
    bs->enc_rec[n] = r;
  }
  memcpy(head, st->head, (size_t)st->body);
  free(bs->enc_chunk);
  free(bs->enc_head);
  bs->enc_chunk = copy;
  bs->enc_cbytes = cbytes;
  bs->enc_head = head;
  bs->enc_headlen = (int32_t)st->body;
  bs->enc_size = size;
}

/* Encode the records into the vlmetalayer, a batch of blocks at a time, reusing the blocks
 * of the kept form whose positions did not change. */
static int store_form(caterva_ctx *ctx, caterva_array *a, int64_t size) {
  cat_bstats *bs = a->bs;
  bs_build st;
  const uint8_t *old;
  uint8_t *chunk = NULL, *copy;
  int32_t cb = 0;
  int rc;
  memset(&st, 0, sizeof st);
  st.bs = bs;
  st.per = per_chunk(bs);
  st.body = 5 + BS_HEAD + 8 * a->g.ndim;
  encode_head(bs, &a->g, st.head, size);
  old = kept_chunk(bs, a, size);
  st.head_same = old != NULL && bs->enc_headlen == st.body &&
                 memcmp(bs->enc_head, st.head, (size_t)st.body) == 0;
  st.one = malloc(st.per);
  if (st.one == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  rc = cat_frame_vlmeta_build(ctx, (int32_t)size, build_fill, build_keep, &st, old,
                              old != NULL ? bs->enc_cbytes : 0, &chunk, &cb);
  free(st.one);
  if (rc < 0) return rc;
  copy = malloc((size_t)cb);
  if (copy != NULL) memcpy(copy, chunk, (size_t)cb);
  rc = cat_sc_vlmeta_put(ctx, a->sc, CAT_BS_ATTR, chunk, cb, CAT_BS_MAX); /* takes chunk */
  if (rc < 0) {
    free(copy);
    return rc;
  }
  keep_form(bs, &st, copy, cb, size);
  return CATERVA_OK;
}

/* Write the statistics into the trailer (part of the open transaction, if any). */
int cat_bs_store(caterva_ctx *ctx, caterva_array *a) {
  int rc = CATERVA_OK;
  cat_bstats *bs = a->bs;
  const cat_geom *g = &a->g;
  int64_t size;
  if (bs == NULL || !bs->dirty) return CATERVA_OK;
  if (!bs->broken) CAT_TRY(leave, cat_bs_load_all(ctx, bs));
  if (bs->broken || bs->n != g->nchunks || bs->nblocks != g->nblocks ||
      stored_size(bs, g->ndim, &size) < 0) {
    /* Not stored: what the trailer holds keeps its fingerprints, so it is never misread;
     * drop it anyway so that the file does not carry statistics nobody maintains. */
    cat_bs_enc_drop(bs);
    rc = caterva_schunk_vlmeta_delete(ctx, a->sc, CAT_BS_ATTR);
    if (rc == CATERVA_E_NOTFOUND) rc = CATERVA_OK;
    if (rc >= 0) bs->dirty = false;
    if (ctx != NULL && rc >= 0) ctx->errmsg[0] = '\0';
    return rc;
  }
  CAT_TRY(leave, store_form(ctx, a, size));
  bs->dirty = false;
leave:
  return rc;
}

/* ---- reading, a page at a time -------------------------------------------------------- */

void cat_bs_lazy_free(bs_lazy *lz) {
  if (lz == NULL) return;
  if (lz->own) free(lz->chunk);
  free(lz->buf);
  free(lz->loaded);
  caterva_ctx_free(lz->ctx);
  free(lz);
}

/* Bytes [off, off + len) of the stored form into *out (inside lz's buffer, valid until the
 * next read), decoding only the blocks of the vlmetalayer chunk they lie in. */
static int read_range(bs_lazy *lz, int64_t off, int64_t len, const uint8_t **out) {
  caterva_chunk_info ci;
  int32_t blocks[BS_READ_BLOCKS_MAX], nb;
  int64_t b0, need;
  int rc = caterva_chunk_info_get(lz->chunk, (size_t)lz->cbytes, &ci);
  *out = NULL;
  if (rc < 0) return rc;
  if (off < 0 || len < 0 || off + len > ci.nbytes || ci.blocksize <= 0) return CATERVA_E_CORRUPT;
  b0 = off / ci.blocksize;
  nb = len == 0 ? 1 : (int32_t)((off + len - 1) / ci.blocksize - b0 + 1);
  if (nb > BS_READ_BLOCKS_MAX) return CATERVA_E_UNSUPPORTED; /* blocks too small for a page */
  need = (int64_t)nb * ci.blocksize;
  if (need > lz->cap) {
    uint8_t *p = realloc(lz->buf, (size_t)need);
    if (p == NULL) return CATERVA_E_NOMEM;
    lz->buf = p;
    lz->cap = need;
  }
  for (int32_t i = 0; i < nb; i++) blocks[i] = (int32_t)(b0 + i);
  if (lz->sc != NULL && (rc = cat_remote_bytes(lz->ctx, lz->sc, lz->chunk, lz->cbytes, blocks,
                                               nb)) < 0)
    return rc;
  rc = (int)caterva_chunk_decompress_blocks(lz->ctx, lz->chunk, (size_t)lz->cbytes, blocks, nb,
                                            lz->buf, (size_t)lz->cap);
  if (rc < 0) return rc;
  *out = lz->buf + (off - b0 * ci.blocksize);
  return CATERVA_OK;
}

/* The statistics of a block from its stored bytes at q. */
static void decode_block(const uint8_t *q, caterva_block_stats *s) {
  s->min.u = cat_le64(q);
  s->max.u = cat_le64(q + 8);
  s->sum.u = cat_le64(q + 16);
  s->nvalid = cat_le32(q + 24);
  s->nnan = cat_le32(q + 28);
  s->sum_overflow = (cat_le32(q + 32) & BS_FLAG_SUM_OVERFLOW) != 0;
}

/* The record stored at p (NULL for none, or out of memory: *nomem set). */
static bs_rec *decode_chunk(const cat_bstats *bs, const uint8_t *p, bool *nomem) {
  const uint8_t *q = p + BS_CHUNK_HEAD;
  bs_rec *r;
  if (cat_le64(p) == 0) return NULL;
  r = cat_bs_rec_new(bs->nblocks);
  if (r == NULL) {
    *nomem = true;
    return NULL;
  }
  r->fp = cat_le64(p);
  for (int32_t b = 0; b < bs->nblocks; b++, q += BS_REC) {
    cat_bs_rec_starts(r, bs->nblocks)[b] = cat_le32(q + 36);
    decode_block(q, &r->b[b]);
  }
  return r;
}

/* Records for the positions [first, first + n) without one yet (those read alone have
 * theirs) from their stored bytes at p. false: out of memory (the records made stay: a
 * retry makes the others). */
static bool decode_chunks(cat_bstats *bs, const uint8_t *p, int64_t first, int64_t n) {
  bool nomem = false;
  for (int64_t i = 0; i < n && !nomem; i++, p += per_chunk(bs))
    if (bs->rec[first + i] == NULL) bs->rec[first + i] = decode_chunk(bs, p, &nomem);
  return !nomem;
}

/* Read page pg: its records into rec. Bytes that do not decode leave its positions unknown
 * (the page counts as read); CATERVA_E_NOMEM leaves it unread, to be tried again. */
static int load_page(caterva_ctx *ctx, cat_bstats *bs, int64_t pg) {
  bs_lazy *lz = bs->lazy;
  int64_t first = pg * lz->page, n = bs->n - first < lz->page ? bs->n - first : lz->page;
  const uint8_t *p;
  int rc = read_range(lz, lz->body + first * (int64_t)per_chunk(bs),
                      n * (int64_t)per_chunk(bs), &p);
  if (rc >= 0 && !decode_chunks(bs, p, first, n)) {
    lz->loaded[pg] = BS_PAGE_SOME; /* the records made are kept, and freed with bs */
    rc = CATERVA_E_NOMEM;
  }
  if (rc == CATERVA_E_NOMEM) return cat_error(ctx, rc, "out of memory");
  lz->loaded[pg] = BS_PAGE_READ;
  return CATERVA_OK;
}

int64_t cat_bs_page_bytes(cat_bstats *bs, int64_t pg, const uint8_t **out) {
  bs_lazy *lz = bs->lazy;
  int64_t first = pg * lz->page, n = bs->n - first < lz->page ? bs->n - first : lz->page;
  if (read_range(lz, lz->body + first * (int64_t)per_chunk(bs), n * (int64_t)per_chunk(bs),
                 out) < 0)
    return -1;
  return n;
}

int cat_bs_page_block(const cat_bstats *bs, const uint8_t *page, int64_t i, int32_t b,
                      caterva_block_stats *st) {
  const uint8_t *p = page + (size_t)i * per_chunk(bs);
  if (cat_le64(p) == 0) return 0;
  decode_block(p + BS_CHUNK_HEAD + (size_t)b * BS_REC, st);
  return 1;
}

/* Fetch the stored bytes of the pages that positions pos[0..n) lie in (increasing; out of
 * range skipped), or with pos NULL positions 0, step, 2 step..., that are not read yet, in
 * one wave. */
static void fetch_pages(cat_bstats *bs, const int64_t *pos, int64_t n, int64_t step) {
  bs_lazy *lz = bs->lazy;
  caterva_chunk_info ci;
  int32_t *blocks = NULL, nb = 0;
  int64_t per = (int64_t)per_chunk(bs), last = -1;
  if (lz == NULL || lz->sc == NULL ||
      caterva_chunk_info_get(lz->chunk, (size_t)lz->cbytes, &ci) < 0 || ci.blocksize <= 0)
    return;
  blocks = malloc((size_t)ci.nblocks * sizeof *blocks);
  if (blocks == NULL) return;
  for (int64_t k = 0; k < n; k++) {
    int64_t pg = pos != NULL ? pos[k] : k * step, first, cnt, lo, hi;
    if (pg < 0 || pg >= bs->n) continue;
    pg /= lz->page;
    if (pg == last || lz->loaded[pg] == BS_PAGE_READ) continue;
    last = pg;
    first = pg * lz->page;
    cnt = bs->n - first < lz->page ? bs->n - first : lz->page;
    lo = (lz->body + first * per) / ci.blocksize;
    hi = (lz->body + (first + cnt) * per - 1) / ci.blocksize;
    for (int64_t b = lo; b <= hi && b < ci.nblocks; b++)
      if (nb == 0 || blocks[nb - 1] < b) blocks[nb++] = (int32_t)b;
  }
  /* failures are met again, one page at a time, by the reads that follow */
  if (nb > 0) (void)cat_remote_bytes(lz->ctx, lz->sc, lz->chunk, lz->cbytes, blocks, nb);
  free(blocks);
}

void cat_bs_prefetch_pages(cat_bstats *bs, int64_t step) {
  if (bs->lazy == NULL || step < 1) return;
  fetch_pages(bs, NULL, (bs->n + step * bs->lazy->page - 1) / (step * bs->lazy->page),
              step * bs->lazy->page);
}

static int cmp_pos(const void *x, const void *y) {
  int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
  return (a > b) - (a < b);
}

void cat_bs_pages_ahead(cat_bstats *bs, const int64_t *pos, int n) {
  int64_t *sorted;
  if (bs->lazy == NULL || bs->lazy->sc == NULL || n <= 0) return;
  sorted = malloc((size_t)n * sizeof *sorted);
  if (sorted == NULL) return; /* read one page at a time instead */
  memcpy(sorted, pos, (size_t)n * sizeof *sorted);
  qsort(sorted, (size_t)n, sizeof *sorted, cmp_pos);
  fetch_pages(bs, sorted, n, 0);
  free(sorted);
}

/* Position n's record read alone (a query of one cell reads one record, not a page of
 * them); NULL when it has none or its bytes do not decode (its page is read then). */
static bs_rec *load_one(cat_bstats *bs, int64_t n) {
  bs_lazy *lz = bs->lazy;
  const uint8_t *p;
  bool nomem = false;
  if (read_range(lz, lz->body + n * (int64_t)per_chunk(bs), (int64_t)per_chunk(bs), &p) < 0)
    return NULL;
  bs->rec[n] = decode_chunk(bs, p, &nomem);
  if (bs->rec[n] != NULL) lz->loaded[n / lz->page] = BS_PAGE_SOME; /* freed with bs */
  return bs->rec[n];
}

bs_rec *cat_bs_rec_at(cat_bstats *bs, int64_t n) {
  bs_lazy *lz = bs->lazy;
  int64_t pg;
  if (lz == NULL || bs->rec[n] != NULL || lz->loaded[n / lz->page] == BS_PAGE_READ)
    return bs->rec[n];
  pg = n / lz->page;
  if (lz->one_page != pg) {
    lz->one_page = pg;
    if (load_one(bs, n) != NULL) return bs->rec[n];
  }
  (void)load_page(NULL, bs, pg); /* without memory: unknown this time */
  return bs->rec[n];
}

int cat_bs_load_all(caterva_ctx *ctx, cat_bstats *bs) {
  bs_lazy *lz = bs->lazy;
  if (lz == NULL) return CATERVA_OK;
  for (int64_t pg = 0; pg * lz->page < bs->n; pg++)
    if (lz->loaded[pg] != BS_PAGE_READ) {
      int rc = load_page(ctx, bs, pg);
      if (rc < 0) return rc;
    }
  cat_bs_lazy_free(lz);
  bs->lazy = NULL;
  return CATERVA_OK;
}

/* Check the stored form's header (hlen bytes at v of a form of len bytes) against the array:
 * the offset of position 0's record, or -1 when it does not describe the array. */
static int64_t parse_stored(const caterva_array *a, const cat_bstats *bs, const uint8_t *v,
                            int64_t hlen, int64_t len) {
  const cat_geom *g = &a->g;
  int64_t size;
  uint32_t body;
  if (hlen < 5 + BS_HEAD + 8 * g->ndim || v[0] != 0xC6) return -1;
  body = (uint32_t)v[1] << 24 | (uint32_t)v[2] << 16 | (uint32_t)v[3] << 8 | v[4];
  if ((int64_t)body != len - 5 || body < BS_HEAD) return -1;
  v += 5;
  if (memcmp(v, BS_MAGIC, 4) != 0 || v[4] != BS_VERSION || v[5] != bs->stype ||
      v[6] != g->ndim || (int64_t)cat_le32(v + 8) != g->nblocks ||
      (int64_t)cat_le64(v + 16) != g->nchunks)
    return -1;
  if (stored_size(bs, g->ndim, &size) < 0 || size != len) return -1;
  for (int k = 0; k < g->ndim; k++)
    if ((int64_t)cat_le64(v + BS_HEAD + 8 * k) != g->shape[k]) return -1;
  return 5 + BS_HEAD + 8 * g->ndim;
}

/* Set bs up to read the stored form in chunk (cbytes) page by page: 1 when it describes the
 * array, 0 when not, or CATERVA_E_NOMEM. */
static int lazy_init(const caterva_array *a, cat_bstats *bs, const uint8_t *chunk,
                     int32_t cbytes) {
  const uint8_t *head;
  caterva_chunk_info ci;
  int64_t hlen = 5 + BS_HEAD + 8 * a->g.ndim, npages;
  bs_lazy *lz = calloc(1, sizeof *lz);
  int rc = 0;
  if (lz == NULL) return CATERVA_E_NOMEM;
  lz->one_page = -1;
  bs->lazy = lz;
  if (cat_sc_vlmeta_is_lazy(a->sc, CAT_BS_ATTR)) { /* a remote frame's: fetched a page at a time */
    lz->sc = a->sc;
    lz->chunk = (uint8_t *)chunk;
  } else if (cat_sc_vlmeta_is_mapped(a->sc, CAT_BS_ATTR)) { /* a reader's: the array keeps sc */
    lz->chunk = (uint8_t *)chunk;
  } else { /* a writer's: its next commit replaces the vlmetalayer */
    lz->chunk = malloc((size_t)cbytes);
    if (lz->chunk != NULL) memcpy(lz->chunk, chunk, (size_t)cbytes);
    lz->own = true;
  }
  if (lz->chunk == NULL || caterva_ctx_new(1, &lz->ctx) < 0) return CATERVA_E_NOMEM;
  lz->cbytes = cbytes;
  if (caterva_chunk_info_get(chunk, (size_t)cbytes, &ci) < 0 || ci.nbytes < hlen ||
      ci.cbytes != cbytes)
    return 0;
  rc = read_range(lz, 0, hlen, &head);
  if (rc < 0) return rc == CATERVA_E_NOMEM ? rc : 0;
  lz->body = parse_stored(a, bs, head, hlen, ci.nbytes);
  if (lz->body < 0) return 0;
  lz->page = BS_PAGE_BYTES / (int64_t)per_chunk(bs);
  if (lz->page < 1) lz->page = 1;
  npages = (bs->n + lz->page - 1) / lz->page;
  lz->loaded = calloc((size_t)(npages > 0 ? npages : 1), 1);
  return lz->loaded != NULL ? 1 : CATERVA_E_NOMEM;
}

/* At open: take the stored statistics when they describe this array; otherwise the array
 * has none (queries work without them). Only the header is read here; the records are read
 * a page at a time when asked for (cat_bs_rec_at). Never fails but for lack of memory. */
int cat_bs_load(caterva_ctx *ctx, caterva_array *a) {
  int rc = CATERVA_OK, kind, stype = cat_bs_stats_type(a->dtype, a->g.itemsize, &kind);
  const uint8_t *chunk;
  int32_t cbytes;
  cat_bstats *bs = NULL;
  cat_bs_free(a->bs);
  a->bs = NULL;
  if (stype == CATERVA_STATS_NONE || cat_sc_vlmeta_chunk(a->sc, CAT_BS_ATTR, &chunk, &cbytes) < 0)
    goto leave;
  bs = cat_bs_new(a, stype, kind);
  CAT_CHECK(leave, bs != NULL, CATERVA_E_NOMEM, "out of memory");
  bs->n = a->g.nchunks;
  /* pages of positions never asked for are never touched */
  bs->rec = cat_ztable_new(bs->n, sizeof *bs->rec);
  bs->cap = bs->n > 0 ? bs->n : 1;
  CAT_CHECK(leave, bs->rec != NULL, CATERVA_E_NOMEM, "out of memory");
  rc = lazy_init(a, bs, chunk, cbytes);
  /* a writer without them would leave them stale */
  CAT_CHECK(leave, rc != CATERVA_E_NOMEM, CATERVA_E_NOMEM, "out of memory");
  if (rc == 0) goto leave;
  rc = CATERVA_OK;
  a->bs = bs;
  bs = NULL;
leave:
  if (rc > 0) rc = CATERVA_OK;
  cat_bs_free(bs);
  return rc;
}
