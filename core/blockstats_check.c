/*
 * blockstats_check.c -- decoded blocks checked against their recorded statistics (issue 39):
 * which record a chunk's decoded blocks are checked with, the comparison, and the
 * corrupt-block error. The statistics themselves are blockstats.c's.
 */
#include "blockstats_internal.h"
#include "frame_internal.h"

/* ---- checking decoded blocks ------------------------------------------------------------ */

/*
 * A block decoded from chunk bytes is checked against its record when the record was written
 * for those bytes as far as the chunk's layout tells: every block start recorded for the chunk
 * equals the chunk's own block-start table. The record's fingerprint is not asked: a byte
 * flipped inside a block changes it as much as another writer's new chunk does, and checking
 * it would read the whole chunk. The check computes the block's statistics from the decoded
 * items exactly as the writer did (cat_bs_block_compute: the same items, order and types, so the sum
 * agrees bit for bit) and compares all of them: present and NaN counts, min, max, sum, the
 * overflow flag.
 *
 * What it cannot see: chunks without recorded starts (special chunks, memcpyed chunks, files
 * written before the starts were recorded, chunks of another blocksize), arrays without
 * statistics, and a change that leaves every statistic of the block as it was. A writer that
 * rewrote a chunk into blocks of exactly the same compressed sizes and kept our trailer looks
 * like damage to it (block_checks=off reads such a file).
 */

int cat_array_checks_blocks(const caterva_array *a) {
  if (a->check_blocks != CATERVA_CHECKS_DEFAULT) return a->check_blocks == CATERVA_CHECKS_ON;
  return 1;
}

void caterva_array_set_block_checks(caterva_array *a, int mode) {
  if (a != NULL && (mode == CATERVA_CHECKS_DEFAULT || mode == CATERVA_CHECKS_ON ||
                    mode == CATERVA_CHECKS_OFF))
    a->check_blocks = mode;
}

int caterva_array_block_checks(const caterva_array *a) {
  return a != NULL && a->bs != NULL && !a->bs->broken && cat_array_checks_blocks(a);
}

const cat_bs_rec *cat_bs_check_rec(const caterva_array *a, int64_t nchunk, const uint8_t *chunk,
                                   int32_t cbytes) {
  cat_bstats *bs = a->bs;
  cat_chunk_span sp;
  int32_t need;
  const uint32_t *st;
  bs_rec *r;
  if (bs == NULL || bs->broken || !cat_array_checks_blocks(a) || nchunk < 0 ||
      nchunk >= bs->n || bs->n != a->g.nchunks || bs->nblocks != a->g.nblocks ||
      chunk == NULL || (r = cat_bs_rec_at(bs, nchunk)) == NULL ||
      cat_chunk_span_init(chunk, cbytes, cbytes, &sp, &need) < 0 || sp.table == 0 || sp.plain ||
      sp.whole_only || sp.nblocks != bs->nblocks || sp.nbytes != a->g.chunksize ||
      sp.blocksize != a->g.blocksize)
    return NULL;
  st = cat_bs_rec_starts(r, bs->nblocks);
  for (int32_t j = 0; j < bs->nblocks; j++)
    if (st[j] == 0 || st[j] != cat_le32(chunk + sp.table + 4 * (size_t)j)) return NULL;
  return r;
}

/* Which statistic of s differs from the recorded w (CAT_BS_BAD_*), or 0. */
static int stats_differ(const caterva_block_stats *s, const caterva_block_stats *w) {
  if (s->nvalid != w->nvalid) return CAT_BS_BAD_COUNT;
  if (s->nnan != w->nnan) return CAT_BS_BAD_NAN;
  if (s->nvalid == 0) return 0; /* min, max and sum are the starting values on both sides */
  if (s->min.u != w->min.u) return CAT_BS_BAD_MIN;
  if (s->max.u != w->max.u) return CAT_BS_BAD_MAX;
  if (s->sum_overflow != w->sum_overflow || s->sum.u != w->sum.u) return CAT_BS_BAD_SUM;
  return 0;
}

int cat_bs_check_block(const caterva_array *a, const cat_bs_rec *r, int64_t nchunk,
                       int32_t nblock, const uint8_t *data) {
  int64_t cc[CATERVA_MAX_DIM];
  caterva_block_stats s;
  if (r == NULL || nblock < 0 || nblock >= a->bs->nblocks) return 0;
  cat_geom_chunk_coords(&a->g, nchunk, cc);
  cat_bs_block_compute(a->bs, &a->g, cc, nblock, data, &s);
  return stats_differ(&s, &r->b[nblock]);
}

int cat_bs_corrupt(caterva_ctx *ctx, const caterva_array *a, int64_t nchunk, int32_t nblock,
                   int what) {
  static const char *const names[] = {"", "count of present items", "count of NaN items",
                                      "minimum", "maximum", "sum"};
  const char *path = a->sc != NULL && a->sc->path != NULL ? a->sc->path : "(in memory)";
  const char *q = strchr(path, '?'); /* a presigned URL's signature stays out of messages */
  if (what < 1 || what > CAT_BS_BAD_SUM) what = CAT_BS_BAD_SUM;
  return cat_error(ctx, CATERVA_E_CORRUPT,
                   "corrupt block: %.*s%s, chunk %lld, block %d: its decoded values disagree "
                   "with the block's recorded statistics (%s)",
                   q != NULL ? (int)(q - path) : (int)strlen(path), path, q != NULL ? "?..." : "",
                   (long long)nchunk, (int)nblock, names[what]);
}

int cat_bs_check_blocks(caterva_ctx *ctx, const caterva_array *a, int64_t nchunk,
                        const uint8_t *chunk, int32_t cbytes, const int32_t *blocks, int32_t n,
                        const uint8_t *data) {
  const cat_bs_rec *r = cat_bs_check_rec(a, nchunk, chunk, cbytes);
  for (int32_t i = 0; r != NULL && i < n; i++) {
    int what = cat_bs_check_block(a, r, nchunk, blocks[i],
                                  data + (size_t)i * (size_t)a->g.blocksize);
    if (what != 0) return cat_bs_corrupt(ctx, a, nchunk, blocks[i], what);
  }
  return CATERVA_OK;
}
