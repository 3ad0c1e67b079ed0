/*
 * blockstats_internal.h -- what the block statistics' files share: the in-memory records and
 * the statistics object (blockstats.c keeps them in step with the chunks; blockstats_stored.c
 * reads and writes their stored form, a page of positions at a time; blockstats_check.c checks
 * decoded blocks against them). Not installed; names start with cat_bs_.
 */
#ifndef CAT_BLOCKSTATS_INTERNAL_H
#define CAT_BLOCKSTATS_INTERNAL_H

#include "array_layer_internal.h"

/* One immutable, reference-counted record per chunk position (the snapshot of a savepoint is
 * an array of record pointers, so savepoints cost a pointer per chunk). */
struct bs_rec {
  int refs;
  bool verified;          /* fp was checked against (or computed from) the chunk's bytes */
  bool stale;             /* fp was checked and differs: never used to answer or to skip a
                           * block, only to check decoded blocks whose starts agree */
  uint64_t fp;            /* fingerprint of the chunk */
  caterva_block_stats b[]; /* blocks per chunk, then their starts (uint32 each) */
};
typedef struct bs_rec bs_rec;

typedef struct bs_mark {
  int level;              /* savepoint level; INT32_MIN: the start of the transaction */
  int64_t n;
  bs_rec **rec;
} bs_mark;

enum { BS_PAGE_UNREAD = 0, BS_PAGE_READ = 1, BS_PAGE_SOME = 2 };

/* The stored records not read yet (blockstats_stored.c): the stored form's compressed bytes,
 * decoded a page of positions at a time when a position of the page is first asked for. */
typedef struct bs_lazy {
  uint8_t *chunk;         /* a copy of the vlmetalayer's chunk (own), or borrowed: the
                           * frame's own lazy one (remote, sc set), whose blocks are fetched
                           * when read, or a read-only file's, in its map */
  int32_t cbytes;
  bool own;               /* chunk is a copy, freed with this */
  caterva_schunk *sc;     /* set when chunk is borrowed from a remote frame */
  int64_t body;           /* offset of position 0's record in the stored form */
  int64_t page;           /* positions per page */
  uint8_t *loaded;        /* per page: BS_PAGE_READ once read (its records, or NULL ones, are
                           * in rec), BS_PAGE_SOME when some of its positions have records
                           * (read alone, or before memory ran out), else BS_PAGE_UNREAD */
  int64_t one_page;       /* the page a position was last read alone from, or -1: the first
                           * position asked for in an unread page is read alone, the next
                           * one reads the page (the positions read alone keep their records) */
  uint8_t *buf;           /* the blocks of the last page read, decoded */
  int64_t cap;
  caterva_ctx *ctx;       /* decodes the pages (read paths have no context of their own) */
} bs_lazy;

struct cat_bstats {
  int stype;              /* CATERVA_STATS_* */
  int dkind, itemsize;    /* how items are read */
  int32_t nblocks;        /* blocks per chunk */
  int64_t n;              /* chunk positions */
  bs_rec **rec;           /* n records, NULL: unknown (or, with lazy, maybe not read yet) */
  int64_t cap;            /* room in rec (>= n); grows geometrically, so appending chunk
                           * after chunk (a table growing by a million rows) stays linear */
  bs_lazy *lazy;          /* stored records not read yet, or NULL: rec is complete */
  bool dirty;             /* differs from what the trailer holds */
  bool broken;            /* positions lost (out of memory): nothing is trusted or stored */
  bs_mark *marks;         /* begin mark first, then savepoints in increasing level */
  int nmarks, capmarks;
  int64_t hint_pos;       /* chunk position of the hint, -1: none */
  const uint8_t *hint_img;/* its uncompressed image (with hint_dirty: right only in the
                           * blocks flagged there) */
  const uint8_t *hint_dirty; /* NULL, or per block: changed (the others kept their bytes) */
  bs_rec *hint_rec;       /* or its record, taken from another array (a raw copy), or
                           * computed ahead (wstore.c) */
  bool hint_ahead;        /* hint_rec was computed ahead: it holds only when the chunk is
                           * stored as the bytes it was computed from (not as a special
                           * entry), which its fingerprint tells */
  const cat_geom *geom;   /* geometry of new chunks while a resize renumbers them, or NULL */
  uint8_t *scratch;       /* verify(): a chunk's bytes copied from the file */
  size_t scratch_cap;
  /* What the last cat_bs_store built, so that the next one re-encodes only the blocks of the
   * stored form whose positions' records changed, copying the others' compressed bytes.
   * Records are immutable once installed, so a record pointer identifies its encoding;
   * enc_rec holds a reference on each, so a pointer cannot be freed and reused for another
   * record while it is compared. enc_chunk is a copy of the chunk stored, compared with the
   * vlmetalayer's before its blocks are reused (a rolled-back trailer holds another). */
  uint8_t *enc_chunk;     /* enc_cbytes bytes, or NULL: the next store encodes every block */
  int32_t enc_cbytes;
  uint8_t *enc_head;      /* its first enc_headlen bytes decoded (bin lead-in and header) */
  int32_t enc_headlen;
  int64_t enc_size;       /* its decoded length */
  bs_rec **enc_rec;       /* enc_n records encoded in it, by position */
  int64_t enc_n;
};

/* blockstats.c */
/* Statistics of block nb of chunk cc (its coordinates in g's chunk grid), whose image is blk. */
void cat_bs_block_compute(const cat_bstats *bs, const cat_geom *g, const int64_t *cc,
                          int32_t nb, const uint8_t *blk, caterva_block_stats *s);

/* blockstats_stored.c: records, the object, the stored form */
void cat_bs_rec_unref(bs_rec *r);
bs_rec *cat_bs_rec_new(int32_t nblocks);
uint32_t *cat_bs_rec_starts(bs_rec *r, int32_t nblocks);
/* Frees the records of rec[0..n) and the table (a cat_ztable). */
void cat_bs_recs_free(bs_rec **rec, int64_t n);
int cat_bs_stats_type(const char *dtype, int itemsize, int *kind);
cat_bstats *cat_bs_new(const caterva_array *a, int stype, int kind);
/* Forget the kept stored form (the next store encodes every position). */
void cat_bs_enc_drop(cat_bstats *bs);
void cat_bs_lazy_free(bs_lazy *lz);
/* The record at position n, its page read first when it was not (NULL: none known). */
bs_rec *cat_bs_rec_at(cat_bstats *bs, int64_t n);
/* Read every page not read yet, so that rec is complete (before records are moved, copied
 * or written). CATERVA_E_NOMEM when a page could not be read for lack of memory. */
int cat_bs_load_all(caterva_ctx *ctx, cat_bstats *bs);
/* The stored bytes of page pg's positions, read without making records: their number, with
 * the bytes in *out (valid until the next page is read); negative when they cannot be read. */
int64_t cat_bs_page_bytes(cat_bstats *bs, int64_t pg, const uint8_t **out);
/* Statistics read from a remote frame: fetch the stored bytes of every step-th page not read
 * yet in one wave (the sample of caterva_array_stats_selectivity); nothing otherwise. */
void cat_bs_prefetch_pages(cat_bstats *bs, int64_t step);
/* The same for the pages of positions pos[0..n) (any order; out of range skipped). */
void cat_bs_pages_ahead(cat_bstats *bs, const int64_t *pos, int n);
/* Block b of position i of such bytes: 1 with its statistics in *st, 0 when the position has
 * none. */
int cat_bs_page_block(const cat_bstats *bs, const uint8_t *page, int64_t i, int32_t b,
                      caterva_block_stats *st);
/* Pages of stored records the selectivity estimate reads at most, spread over the array. */
#define CAT_BS_SAMPLE_PAGES 64

#endif /* CAT_BLOCKSTATS_INTERNAL_H */
