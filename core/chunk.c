/*
 * chunk.c -- the Blosc2 chunk format, reading: parse a chunk; decompress it, any set of its
 * blocks, or a range of its items; what a reader of some blocks needs. Writing chunks is in
 * chunk_enc.c. Format: shared/spec/blosc2-formats.md §1.
 *
 * Chunk layout (all integers little-endian):
 *
 *   0      1          2      3         4        8          12       16
 *   +------+----------+------+---------+--------+----------+--------+
 *   |versn |versionlz |flags |typesize | nbytes |blocksize | cbytes |
 *   +------+----------+------+---------+--------+----------+--------+
 *   16           22          23            24               30       31
 *   +------------+-----------+-------------+----------------+--------+-------------+
 *   | filters[6] |udcompcode |compcode_meta| filters_meta[6]| flags2 | blosc2_flags|
 *   +------------+-----------+-------------+----------------+--------+-------------+
 *   32: int32 bstarts[nblocks] | [int32 dsize, dict] | streams of each block:
 *       { int32 csize, payload }   csize 0: zeros; < 0: run of byte -csize (+1 token byte);
 *                                  == neblock: raw bytes; else a codec stream.
 *
 * Special chunks (blosc2_flags bits 4-6) are header-only (plus the value for repeated-value
 * chunks); memcpyed chunks (flags bit 1) hold the raw bytes right after the header.
 *
 * Blosc 1.x chunks (flags bits 0 and 2 not both set) have only the first 16 bytes of that
 * header; the block-start table or the memcpyed bytes follow at offset 16, and the filters
 * come from the flags. See cat_parse_blosc1 and shared/spec/bcolz-format.md section 3.
 */
#include "chunk_format_internal.h"
#include "filters.h"

#include <math.h>
#include <stdlib.h>


/* ---- header parsing ------------------------------------------------------------------- */

bool cat_filter_known(uint8_t f) {
  return f == CATERVA_NOFILTER || f == CATERVA_SHUFFLE || f == CATERVA_BITSHUFFLE ||
         f == CATERVA_DELTA || f == CATERVA_TRUNC_PREC || f == CATERVA_BYTEDELTA;
}

/* Fields common to every chunk kind: sizes, version, special kind. */
static int cat_parse_fixed(const uint8_t *h, size_t len, caterva_chunk_info *ci) {
  uint8_t flags = h[2], b2flags = h[31];
  memset(ci, 0, sizeof *ci);
  ci->version = h[0];
  ci->typesize = h[3];
  ci->nbytes = cat_le32s(h + 4);
  ci->blocksize = cat_le32s(h + 8);
  ci->cbytes = cat_le32s(h + 12);
  memcpy(ci->filters, h + 16, CATERVA_MAX_FILTERS);
  memcpy(ci->filters_meta, h + 24, CATERVA_MAX_FILTERS);
  ci->special = (b2flags & CAT_B2_SPECIAL_MASK) >> CAT_B2_SPECIAL_SHIFT;
  ci->memcpyed = (flags & CAT_F_MEMCPYED) != 0;
  ci->has_dict = (b2flags & CAT_B2_DICT) != 0;
  ci->split = (flags & CAT_F_DONT_SPLIT) == 0;
  ci->header_size = CAT_HDR;
  if (ci->version < 2 || ci->version > 5) return ci->version == 6 ? CATERVA_E_UNSUPPORTED
                                                                  : CATERVA_E_CORRUPT;
  if (h[30] & 0x01) return CATERVA_E_UNSUPPORTED; /* variable-length blocks */
  if (ci->nbytes < 0 || ci->cbytes < CAT_HDR || (size_t)ci->cbytes > len)
    return CATERVA_E_CORRUPT;
  if (ci->special > CATERVA_SPECIAL_UNINIT) return CATERVA_E_CORRUPT;
  if (ci->version == 3) { /* Blosc2 alpha chunks had no sixth filter slot */
    ci->filters[5] = 0;
    ci->filters_meta[5] = 0;
  }
  if (ci->blocksize <= 0) {
    if (ci->nbytes > 0) return CATERVA_E_CORRUPT;
    ci->blocksize = 0;
  }
  if (ci->blocksize > ci->nbytes) ci->blocksize = ci->nbytes;
  ci->nblocks = ci->blocksize > 0 ? (int32_t)cat_ceil_div64(ci->nbytes, ci->blocksize) : 0;
  return CATERVA_OK;
}

/* Codec of a regular chunk: format id in flags bits 5-7, or the byte at 0x16 for id 6. */
static int cat_parse_codec(const uint8_t *h, caterva_chunk_info *ci) {
  int fid = h[2] >> 5;
  if (fid == 6) {
    int cc = h[22];
    ci->codec = cat_codec_format_id(cc) >= 0 ? cc : -1;
  } else {
    ci->codec = cat_codec_from_format_id(fid);
  }
  return ci->codec < 0 ? CATERVA_E_UNSUPPORTED : CATERVA_OK;
}

static int cat_parse_special(caterva_chunk_info *ci) {
  if (ci->special == CATERVA_SPECIAL_VALUE) {
    /* The value's size is what follows the header; header byte 3 may be capped. */
    ci->typesize = ci->cbytes - CAT_HDR;
    if (ci->typesize < 1 || ci->typesize > 255 || ci->nbytes % ci->typesize != 0)
      return CATERVA_E_CORRUPT;
  } else if (ci->cbytes != CAT_HDR) {
    return CATERVA_E_CORRUPT;
  }
  if (ci->special == CATERVA_SPECIAL_NAN && ci->typesize != 4 && ci->typesize != 8)
    return CATERVA_E_CORRUPT;
  if (ci->special == CATERVA_SPECIAL_NAN && ci->nbytes % ci->typesize != 0)
    return CATERVA_E_CORRUPT;
  return CATERVA_OK;
}

/* Regular chunks: the block-start table and optional dictionary must fit in cbytes. */
static int cat_parse_regular(const uint8_t *h, cat_chunk *ck) {
  caterva_chunk_info *ci = &ck->info;
  int64_t table_end = CAT_HDR + 4 * (int64_t)ci->nblocks;
  int rc = cat_parse_codec(h, ci);
  if (rc < 0) return rc;
  if (ci->typesize < 1) return CATERVA_E_CORRUPT;
  for (int i = 0; i < CATERVA_MAX_FILTERS; i++)
    if (!cat_filter_known(ci->filters[i])) return CATERVA_E_UNSUPPORTED;
  if (table_end > ci->cbytes) return CATERVA_E_CORRUPT;
  ck->data_start = (int32_t)table_end;
  if (ci->has_dict) {
    if (ci->codec != CATERVA_ZSTD && ci->codec != CATERVA_LZ4 && ci->codec != CATERVA_LZ4HC)
      return CATERVA_E_UNSUPPORTED;
    if (table_end + 4 > ci->cbytes) return CATERVA_E_CORRUPT;
    ck->dictlen = cat_le32s(h + table_end);
    if (ck->dictlen < 1 || ck->dictlen > CAT_MAX_DICT || table_end + 4 + ck->dictlen > ci->cbytes)
      return CATERVA_E_CORRUPT;
    ck->dict = h + table_end + 4;
    ck->data_start = (int32_t)(table_end + 4 + ck->dictlen);
  }
  return CATERVA_OK;
}

/* ---- Blosc 1.x chunks -------------------------------------------------------------------
 *
 *   0       1          2      3         4        8           12       16
 *   +-------+----------+------+---------+--------+-----------+--------+----------------------+
 *   |versn  |versionlz |flags |typesize | nbytes | blocksize | cbytes | bstarts[nblocks] ... |
 *   +-------+----------+------+---------+--------+-----------+--------+----------------------+
 *   flags: 0x01 byte shuffle, 0x02 memcpyed, 0x04 bitshuffle (never with 0x01: that pair marks
 *   the 32-byte header), 0x08 delta (c-blosc2 only), 0x10 dont-split, bits 5-7 codec format
 *   (0 blosclz, 1 lz4/lz4hc, 2 snappy, 3 zlib, 4 zstd).
 *
 * Version 2 is every c-blosc 1.x release. Its decoder splits a full block into typesize streams
 * iff dont-split is clear, typesize <= 16 and the block holds >= 128 items (chunks written
 * before the dont-split flag existed rely on that rule); a short last block, or the only
 * block when blocksize exceeds nbytes, is never split; it rejects flag 0x08; its bitshuffle
 * leaves a block whose item count is not a multiple of 8 as it is. Versions 3-5 come from
 * c-blosc2's Blosc1-compatible API and follow the Blosc2 rules (dont-split alone decides;
 * blocksize clamped to nbytes; 0x08 means DELTA). Streams are framed as in Blosc2 chunks. */

#define CAT_WHY(msg) (ck->why = (msg), CATERVA_E_CORRUPT)

static int cat_blosc1_codec(cat_chunk *ck, int fid) {
  caterva_chunk_info *ci = &ck->info;
  ci->codec = fid == 2 ? CATERVA_SNAPPY : cat_codec_from_format_id(fid);
  if (ci->codec < 0) {
    ck->why = "Blosc 1.x chunk with an unknown codec format";
    return CATERVA_E_UNSUPPORTED;
  }
  if (ci->codec == CATERVA_SNAPPY && !cat_codec_available(CATERVA_SNAPPY)) {
    ck->why = "snappy chunk, but libcaterva was built without snappy";
    return CATERVA_E_UNSUPPORTED;
  }
  return CATERVA_OK;
}

/* Sizes, version and filters of a 16-byte header. */
static int cat_parse_blosc1_fixed(const uint8_t *h, size_t len, cat_chunk *ck) {
  caterva_chunk_info *ci = &ck->info;
  uint8_t flags = h[2];
  ci->version = h[0];
  ci->typesize = h[3];
  ci->nbytes = cat_le32s(h + 4);
  ci->blocksize = cat_le32s(h + 8);
  ci->cbytes = cat_le32s(h + 12);
  ci->memcpyed = (flags & CAT_F_MEMCPYED) != 0;
  ci->header_size = CAT_HDR1;
  ck->hdr = CAT_HDR1;
  ck->blosc1_rules = ci->version == 2;
  if (ci->version < 2 || ci->version > 5) return CAT_WHY("Blosc 1.x chunk: unknown version");
  if (ci->nbytes < 0) return CAT_WHY("Blosc 1.x chunk: negative nbytes");
  if (ci->cbytes < CAT_HDR1) return CAT_WHY("Blosc 1.x chunk: cbytes below the 16-byte header");
  if ((size_t)ci->cbytes > len) return CAT_WHY("Blosc 1.x chunk: cbytes beyond the buffer");
  if (ci->typesize < 1) return CAT_WHY("Blosc 1.x chunk: typesize 0");
  if ((flags & CAT_F_DELTA) && ck->blosc1_rules) {
    ck->why = "Blosc 1.x chunk (version 2) with the reserved flag 0x08";
    return CATERVA_E_UNSUPPORTED;
  }
  if (ci->blocksize <= 0 && ci->nbytes > 0) return CAT_WHY("Blosc 1.x chunk: blocksize <= 0");
  if (ci->blocksize < 0) ci->blocksize = 0;
  /* c-blosc 1.x treats a block larger than nbytes as the short last block (not split). */
  ck->full_block = ck->blosc1_rules ? ci->blocksize : 0;
  if (ci->blocksize > ci->nbytes) ci->blocksize = ci->nbytes;
  if (!ck->blosc1_rules) ck->full_block = ci->blocksize;
  ci->nblocks = ci->blocksize > 0 ? (int32_t)cat_ceil_div64(ci->nbytes, ci->blocksize) : 0;
  if (flags & CAT_F_BITSHUFFLE_EXT) ci->filters[CATERVA_MAX_FILTERS - 1] = CATERVA_BITSHUFFLE;
  if (flags & CAT_F_SHUFFLE_EXT) ci->filters[CATERVA_MAX_FILTERS - 1] = CATERVA_SHUFFLE;
  if (flags & CAT_F_DELTA) ci->filters[CATERVA_MAX_FILTERS - 2] = CATERVA_DELTA;
  ci->split = (flags & CAT_F_DONT_SPLIT) == 0;
  if (ck->blosc1_rules && (ci->typesize > CAT_MAX_SPLIT_TS1 ||
                           ck->full_block / ci->typesize < CAT_MIN_SPLIT_ITEMS1))
    ci->split = 0;
  return CATERVA_OK;
}

static int cat_parse_blosc1(const uint8_t *h, size_t len, cat_chunk *ck) {
  caterva_chunk_info *ci = &ck->info;
  int64_t table_end;
  int rc = cat_parse_blosc1_fixed(h, len, ck);
  if (rc < 0) return rc;
  if (ci->memcpyed) {
    /* The codec bits of a memcpyed chunk say what was tried; the bytes are plain. */
    ci->codec = (h[2] >> 5) == 2 ? CATERVA_SNAPPY : cat_codec_from_format_id(h[2] >> 5);
    if ((int64_t)ci->cbytes != (int64_t)ci->nbytes + CAT_HDR1)
      return CAT_WHY("Blosc 1.x memcpyed chunk: cbytes is not nbytes + 16");
    return CATERVA_OK;
  }
  rc = cat_blosc1_codec(ck, h[2] >> 5);
  if (rc < 0) return rc;
  table_end = CAT_HDR1 + 4 * (int64_t)ci->nblocks;
  if (table_end > ci->cbytes) return CAT_WHY("Blosc 1.x chunk: block table beyond cbytes");
  ck->data_start = (int32_t)table_end;
  return CATERVA_OK;
}

int cat_chunk_parse(const void *chunk, size_t len, cat_chunk *ck) {
  const uint8_t *h = chunk;
  int rc;
  memset(ck, 0, sizeof *ck);
  if (chunk == NULL || len < CAT_HDR1) return CAT_WHY("chunk shorter than its header");
  ck->p = h;
  if ((h[2] & (CAT_F_SHUFFLE_EXT | CAT_F_BITSHUFFLE_EXT)) !=
      (CAT_F_SHUFFLE_EXT | CAT_F_BITSHUFFLE_EXT))
    return cat_parse_blosc1(h, len, ck);
  if (len < CAT_HDR) return CAT_WHY("chunk shorter than its header");
  ck->hdr = CAT_HDR;
  rc = cat_parse_fixed(h, len, &ck->info);
  if (rc < 0) return rc;
  ck->full_block = ck->info.blocksize;
  if (ck->info.special != CATERVA_SPECIAL_NONE) return cat_parse_special(&ck->info);
  if (ck->info.memcpyed) {
    ck->info.codec = cat_codec_from_format_id(h[2] >> 5);
    if ((int64_t)ck->info.cbytes != (int64_t)ck->info.nbytes + CAT_HDR) return CATERVA_E_CORRUPT;
    return CATERVA_OK;
  }
  return cat_parse_regular(h, ck);
}

int caterva_chunk_info_get(const void *chunk, size_t len, caterva_chunk_info *info) {
  cat_chunk ck;
  int rc = cat_chunk_parse(chunk, len, &ck);
  if (rc < 0) return rc;
  *info = ck.info;
  return CATERVA_OK;
}

static int cat_parse_ctx(caterva_ctx *ctx, const void *chunk, size_t len, cat_chunk *ck) {
  int rc = cat_chunk_parse(chunk, len, ck);
  if (rc < 0 && ck->why != NULL) return cat_error(ctx, rc, "%s", ck->why);
  if (rc == CATERVA_E_UNSUPPORTED)
    return cat_error(ctx, rc, "chunk uses an unsupported codec, filter or format version");
  if (rc < 0) return cat_error(ctx, rc, "malformed chunk header");
  return rc;
}

int caterva_chunk_info_ctx(caterva_ctx *ctx, const void *chunk, size_t len,
                           caterva_chunk_info *info) {
  cat_chunk ck;
  int rc = cat_parse_ctx(ctx, chunk, len, &ck);
  if (rc < 0) return rc;
  *info = ck.info;
  return CATERVA_OK;
}

/* ---- block geometry -------------------------------------------------------------------- */

int32_t cat_block_size(const caterva_chunk_info *ci, int32_t j) {
  int32_t left = ci->nbytes - j * ci->blocksize;
  return left < ci->blocksize ? left : ci->blocksize;
}

/* Streams per block: typesize when split (the short last block is never split). */
int32_t cat_block_nstreams(const cat_chunk *ck, int32_t bsize) {
  const caterva_chunk_info *ci = &ck->info;
  if (ci->split && bsize == ck->full_block && ci->typesize > 1 && bsize % ci->typesize == 0 &&
      bsize / ci->typesize >= 1)
    return ci->typesize;
  return 1;
}

bool cat_has_filter(const uint8_t *filters, uint8_t f) {
  for (int i = 0; i < CATERVA_MAX_FILTERS; i++)
    if (filters[i] == f) return true;
  return false;
}

/* ---- what a reader of some blocks needs (remote frames) -------------------------------- */

int cat_chunk_span_init(const uint8_t *chunk, int32_t have, int32_t cbytes, cat_chunk_span *sp,
                        int32_t *need) {
  cat_chunk ck;
  int32_t hlen;
  int rc;
  memset(sp, 0, sizeof *sp);
  *need = 0;
  if (have < CAT_HDR) {
    *need = CAT_HDR;
    return CATERVA_E_NOSPACE;
  }
  if ((chunk[2] & (CAT_F_SHUFFLE_EXT | CAT_F_BITSHUFFLE_EXT)) !=
      (CAT_F_SHUFFLE_EXT | CAT_F_BITSHUFFLE_EXT)) {
    sp->whole_only = true; /* a Blosc 1.x chunk: no block-level reads */
    sp->cbytes = cbytes;
    return CATERVA_OK;
  }
  /* the block-start table and a dictionary's length must be there before parsing */
  if (cat_le32s(chunk + 12) != cbytes) return CATERVA_E_CORRUPT;
  rc = cat_parse_fixed(chunk, (size_t)cbytes, &ck.info);
  if (rc < 0) return rc;
  hlen = CAT_HDR;
  if (ck.info.special == CATERVA_SPECIAL_NONE && !ck.info.memcpyed) {
    int64_t h = CAT_HDR + 4 * (int64_t)ck.info.nblocks + 4;
    hlen = h < cbytes ? (int32_t)h : cbytes;
  }
  if (have < hlen) {
    *need = hlen;
    return CATERVA_E_NOSPACE;
  }
  rc = cat_chunk_parse(chunk, (size_t)cbytes, &ck);
  if (rc < 0) return rc;
  sp->cbytes = cbytes;
  sp->nblocks = ck.info.nblocks;
  sp->blocksize = ck.info.blocksize;
  sp->nbytes = ck.info.nbytes;
  if (ck.info.special != CATERVA_SPECIAL_NONE) {
    sp->whole_only = true; /* a header and at most a value */
  } else if (ck.info.memcpyed) {
    sp->plain = true;
    sp->prefix = CAT_HDR;
  } else {
    sp->prefix = ck.data_start;
    sp->delta_ref = cat_has_filter(ck.info.filters, CATERVA_DELTA);
    sp->table = CAT_HDR;
  }
  return CATERVA_OK;
}

int32_t cat_block_reach(const cat_chunk *ck, int32_t j, int32_t hi) {
  int32_t bsize = cat_block_size(&ck->info, j), nstreams = cat_block_nstreams(ck, bsize);
  int32_t bstart = cat_le32s(ck->p + CAT_HDR + 4 * (size_t)j);
  cat_rdr r;
  if (bstart < ck->data_start || bstart >= hi || hi > ck->info.cbytes) return -1;
  cat_rdr_init(&r, ck->p + bstart, (size_t)(hi - bstart));
  for (int32_t k = 0; k < nstreams; k++) { /* the framing cat_decode_stream reads */
    int32_t csize;
    uint8_t token;
    const uint8_t *payload;
    if (!cat_rdr_le32(&r, &csize)) return -1;
    if (csize < 0 && !cat_rdr_u8(&r, &token)) return -1;
    if (csize > 0 && !cat_rdr_bytes(&r, (size_t)csize, &payload)) return -1;
  }
  return (int32_t)(hi - (int32_t)cat_rdr_left(&r));
}

int32_t cat_chunk_span_reach(const uint8_t *chunk, int32_t cbytes, int32_t j, int32_t hi) {
  cat_chunk ck;
  if (cat_chunk_parse(chunk, (size_t)cbytes, &ck) < 0 || ck.info.special != CATERVA_SPECIAL_NONE ||
      ck.info.memcpyed || j < 0 || j >= ck.info.nblocks)
    return -1;
  return cat_block_reach(&ck, j, hi);
}

/* ---- special and memcpyed content ------------------------------------------------------ */

/* Fill n bytes at dst (which starts at byte offset off of the chunk) with the chunk's
 * repeated pattern: zeros, NaN or a value of size ts. One period is written in the phase of
 * off, then the filled part is copied after itself (always a whole number of periods): a
 * byte loop with a division per byte took about 1.5 ms for a 1 MB chunk, a fill region's
 * every block read paying it. */
static void cat_fill_pattern(const cat_chunk *ck, int64_t off, uint8_t *dst, int64_t n) {
  const caterva_chunk_info *ci = &ck->info;
  static const uint8_t nan32[4] = {0x00, 0x00, 0xC0, 0x7F};
  static const uint8_t nan64[8] = {0, 0, 0, 0, 0, 0, 0xF8, 0x7F};
  const uint8_t *pat = NULL;
  int ts = ci->typesize;
  if (ci->special == CATERVA_SPECIAL_NAN) pat = ts == 4 ? nan32 : nan64;
  if (ci->special == CATERVA_SPECIAL_VALUE) pat = ck->p + CAT_HDR;
  if (pat == NULL) {
    memset(dst, 0, (size_t)n); /* zeros, and uninitialised chunks read as zeros */
    return;
  }
  int64_t have = n < ts ? n : ts;
  for (int64_t i = 0; i < have; i++) dst[i] = pat[(off + i) % ts];
  while (have < n) {
    int64_t k = have < n - have ? have : n - have;
    memcpy(dst + have, dst, (size_t)k);
    have += k;
  }
}

/* Copy bytes [off, off+n) of a special or memcpyed chunk's content. */
static void cat_copy_plain(const cat_chunk *ck, int64_t off, uint8_t *dst, int64_t n) {
  if (ck->info.memcpyed && ck->info.special == CATERVA_SPECIAL_NONE)
    memcpy(dst, ck->p + ck->hdr + off, (size_t)n);
  else
    cat_fill_pattern(ck, off, dst, n);
}

/* ---- decoding one block ---------------------------------------------------------------- */

/* Decode one stream at r into out (neblock bytes). */
static int cat_decode_stream(cat_scratch *s, const cat_chunk *ck, cat_rdr *r, uint8_t *out,
                             int32_t neblock) {
  int32_t csize;
  const uint8_t *payload;
  uint8_t token;
  if (!cat_rdr_le32(r, &csize)) return CATERVA_E_CORRUPT;
  if (csize == 0) {
    memset(out, 0, (size_t)neblock);
    return CATERVA_OK;
  }
  if (csize < 0) {
    /* A run: the byte is -csize; one token byte (bit 0 set) follows. */
    if (csize < -255 || !cat_rdr_u8(r, &token) || !(token & 1)) return CATERVA_E_CORRUPT;
    memset(out, (uint8_t)(-csize), (size_t)neblock);
    return CATERVA_OK;
  }
  if (!cat_rdr_bytes(r, (size_t)csize, &payload)) return CATERVA_E_CORRUPT;
  if (csize == neblock) {
    memcpy(out, payload, (size_t)neblock);
    return CATERVA_OK;
  }
  int32_t got = cat_codec_decompress(s, ck->info.codec, payload, csize, out, neblock, ck->dict,
                                     ck->dictlen);
  return got == neblock ? CATERVA_OK : CATERVA_E_CORRUPT;
}

/* Version 2 chunks (c-blosc 1.x): a block whose item count is not a multiple of 8 was not
 * bitshuffled at all; later versions bitshuffle the multiple-of-8 part and copy the rest. */
static bool cat_bitshuffle_whole_or_none(const cat_chunk *ck, int32_t bsize) {
  return ck->info.version == 2 && (bsize / ck->info.typesize) % 8 != 0;
}

/* Undo the filter pipeline (slots 5 down to 0) on a block of bsize bytes held in scratch
 * buffer a, leaving the result in dst; b is a second scratch buffer. Steps that move bytes
 * (shuffles, bytedelta) alternate between a and b, and the last of them writes straight into
 * dst; DELTA works in place. ref is the decoded block 0 of the chunk (DELTA, blocks > 0). */
static void cat_unfilter(const cat_chunk *ck, int32_t j, uint8_t *a, uint8_t *b,
                         uint8_t *dst, int32_t bsize, const uint8_t *ref) {
  const caterva_chunk_info *ci = &ck->info;
  uint8_t *cur = a;
  int last_moving = -1;
  for (int i = CATERVA_MAX_FILTERS - 1; i >= 0; i--) {
    uint8_t f = ci->filters[i];
    if (f == CATERVA_SHUFFLE || f == CATERVA_BITSHUFFLE || f == CATERVA_BYTEDELTA) last_moving = i;
  }
  for (int i = CATERVA_MAX_FILTERS - 1; i >= 0; i--) {
    uint8_t f = ci->filters[i], meta = ci->filters_meta[i];
    uint8_t *out = i == last_moving ? dst : (cur == a ? b : a);
    switch (f) {
    case CATERVA_SHUFFLE: cat_unshuffle(meta ? meta : ci->typesize, bsize, cur, out); break;
    case CATERVA_BITSHUFFLE:
      if (cat_bitshuffle_whole_or_none(ck, bsize)) memcpy(out, cur, (size_t)bsize);
      else cat_bitunshuffle(ci->typesize, bsize, cur, out);
      break;
    case CATERVA_BYTEDELTA: cat_bytedelta_decode(meta ? meta : ci->typesize, bsize, cur, out); break;
    case CATERVA_DELTA: cat_delta_decode(ci->typesize, j, ref, bsize, cur); continue;
    default: continue; /* NOFILTER, TRUNC_PREC (lossy: nothing to undo) */
    }
    cur = out;
  }
  if (cur != dst) memcpy(dst, cur, (size_t)bsize);
}

/* Whether a block of bsize bytes of ci is a shuffle of its items' bytes with nothing else to
 * undo (TRUNC_PREC changes values before the shuffle, not how they decode): its streams are
 * then the items' byte planes, one stream holding them all or one stream a plane. */
static bool cat_shuffle_only(const caterva_chunk_info *ci, int32_t bsize) {
  int nshuffle = 0;
  if (ci->typesize < 2 || bsize % ci->typesize != 0) return false;
  for (int i = 0; i < CATERVA_MAX_FILTERS; i++) {
    uint8_t f = ci->filters[i], meta = ci->filters_meta[i];
    if (f == CATERVA_SHUFFLE && (meta == 0 || meta == ci->typesize)) nshuffle++;
    else if (f != CATERVA_NOFILTER && f != CATERVA_TRUNC_PREC) return false;
  }
  return nshuffle == 1;
}

/* Such a block of 4-byte items (the common float32 case): cat_decode_planes unshuffles its
 * streams where they are. */
static bool cat_planes_ok(const cat_chunk *ck, int32_t bsize, int32_t nstreams) {
  return ck->info.typesize == 4 && (nstreams == 1 || nstreams == 4) &&
         cat_shuffle_only(&ck->info, bsize);
}

/* Decode the streams of such a block (cat_planes_ok) at r and unshuffle them into dst. A
 * stream stored raw (incompressible bytes, as the low bytes of float mantissas are) is read
 * where it lies in the chunk, not copied to buf first. */
static int cat_decode_planes(cat_scratch *s, const cat_chunk *ck, cat_rdr *r, int32_t bsize,
                             int32_t nstreams, uint8_t *buf, uint8_t *dst) {
  const int32_t neblock = bsize / nstreams, q = bsize / 4;
  const uint8_t *base[4], *planes[4];
  for (int32_t k = 0; k < nstreams; k++) {
    cat_rdr peek = *r;
    int32_t csize;
    const uint8_t *payload;
    if (cat_rdr_le32(&peek, &csize) && csize == neblock &&
        cat_rdr_bytes(&peek, (size_t)neblock, &payload)) {
      base[k] = payload;
      *r = peek;
      continue;
    }
    int rc = cat_decode_stream(s, ck, r, buf + (size_t)k * (size_t)neblock, neblock);
    if (rc < 0) return rc;
    base[k] = buf + (size_t)k * (size_t)neblock;
  }
  for (int32_t b = 0; b < 4; b++)
    planes[b] = nstreams == 4 ? base[b] : base[0] + (size_t)b * (size_t)q;
  cat_unshuffle_planes(4, q, planes, dst);
  return CATERVA_OK;
}

/* Decode block j of a regular chunk into dst (its size bytes) using worker w's scratch. */
static int cat_decode_block(caterva_ctx *ctx, int w, const cat_chunk *ck, int32_t j,
                            uint8_t *dst, const uint8_t *ref) {
  const caterva_chunk_info *ci = &ck->info;
  int32_t bsize = cat_block_size(ci, j);
  int32_t nstreams = cat_block_nstreams(ck, bsize);
  int32_t neblock = bsize / nstreams;
  int32_t bstart = cat_le32s(ck->p + ck->hdr + 4 * (size_t)j);
  bool filtered = false;
  uint8_t *buf = dst, *tmp = NULL;
  cat_rdr r;
  int rc;

  for (int i = 0; i < CATERVA_MAX_FILTERS; i++)
    if (ci->filters[i] != CATERVA_NOFILTER && ci->filters[i] != CATERVA_TRUNC_PREC) filtered = true;
  if (bstart < ck->data_start || bstart >= ci->cbytes) return CATERVA_E_CORRUPT;
  if (filtered) {
    buf = cat_scratch_get(ctx, w, 0, (size_t)bsize);
    tmp = cat_scratch_get(ctx, w, 1, (size_t)bsize);
    if (buf == NULL || tmp == NULL) return CATERVA_E_NOMEM;
  }
  cat_rdr_init(&r, ck->p + bstart, (size_t)(ci->cbytes - bstart));
  if (filtered && cat_planes_ok(ck, bsize, nstreams)) {
    rc = cat_decode_planes(&ctx->scratch[w], ck, &r, bsize, nstreams, buf, dst);
    if (rc < 0) return rc;
    __atomic_fetch_add(&ctx->blocks_decompressed, 1, __ATOMIC_RELAXED);
    return CATERVA_OK;
  }
  for (int32_t s = 0; s < nstreams; s++) {
    rc = cat_decode_stream(&ctx->scratch[w], ck, &r, buf + (size_t)s * neblock, neblock);
    if (rc < 0) return rc;
  }
  __atomic_fetch_add(&ctx->blocks_decompressed, 1, __ATOMIC_RELAXED);
  if (filtered) cat_unfilter(ck, j, buf, tmp, dst, bsize, ref);
  return CATERVA_OK;
}

/* ---- items read from byte planes ------------------------------------------------------- */

/* Block j of ck (a regular chunk) is such a shuffle (cat_shuffle_only). */
static bool cat_planes_only(const cat_chunk *ck, int32_t j) {
  const caterva_chunk_info *ci = &ck->info;
  return ci->special == CATERVA_SPECIAL_NONE && !ci->memcpyed &&
         cat_shuffle_only(ci, cat_block_size(ci, j));
}

/* cat_stream_bytes for a stream (csize bytes at src) whose codec reads bytes without decoding
 * it (their positions listed in scratch 2, the codec's scratch in scratch 0). */
static int cat_stream_bytes_at(caterva_ctx *ctx, int codec, const uint8_t *src, int32_t csize,
                               int32_t neblock, int32_t q, int32_t i, int32_t n, int32_t ts,
                               uint8_t *out) {
  int32_t np = neblock / q * n, *pos;
  size_t cap = cat_codec_bytes_at_scratch(codec, csize);
  uint8_t *ops = cat_scratch_get(ctx, 0, 0, cap), *got;
  pos = (int32_t *)(void *)cat_scratch_get(ctx, 0, 2, (size_t)np * (sizeof *pos + 1));
  if (ops == NULL || pos == NULL) return CATERVA_E_NOMEM;
  got = (uint8_t *)(pos + np);
  for (int32_t p = 0; p < neblock / q; p++)
    for (int32_t m = 0; m < n; m++) pos[p * n + m] = p * q + i + m;
  if (cat_codec_bytes_at(codec, src, csize, neblock, pos, np, got, ops, cap) != np)
    return CATERVA_E_CORRUPT;
  for (int32_t p = 0; p < neblock / q; p++)
    for (int32_t m = 0; m < n; m++) out[p + (size_t)m * (size_t)ts] = got[p * n + m];
  return CATERVA_OK;
}

/* From the stream at r (neblock bytes decoded), holding planes of q bytes each: byte i + m
 * of its plane p into out[p + m * ts] (out already offset to the stream's first plane). */
static int cat_stream_bytes(caterva_ctx *ctx, const cat_chunk *ck, cat_rdr *r, int32_t neblock,
                            int32_t q, int32_t i, int32_t n, uint8_t *out) {
  int32_t csize, ts = ck->info.typesize;
  const uint8_t *src;
  uint8_t token, *buf;
  size_t at;
  if (!cat_rdr_le32(r, &csize)) return CATERVA_E_CORRUPT;
  if (csize <= 0) { /* zeros, or a run of the byte -csize (a token byte follows) */
    if (csize < -255 || (csize < 0 && (!cat_rdr_u8(r, &token) || !(token & 1))))
      return CATERVA_E_CORRUPT;
    for (int32_t p = 0; p < neblock / q; p++)
      for (int32_t m = 0; m < n; m++) out[p + (size_t)m * (size_t)ts] = (uint8_t)(-csize);
    return CATERVA_OK;
  }
  if (!cat_rdr_bytes(r, (size_t)csize, &src)) return CATERVA_E_CORRUPT;
  /* a stream that compresses well: its tokens take less room than its output */
  at = csize != neblock ? cat_codec_bytes_at_scratch(ck->info.codec, csize) : 0;
  if (at > 0 && at * 2 < (size_t)neblock)
    return cat_stream_bytes_at(ctx, ck->info.codec, src, csize, neblock, q, i, n, ts, out);
  if (csize != neblock) {
    buf = cat_scratch_get(ctx, 0, 0, (size_t)neblock);
    if (buf == NULL) return CATERVA_E_NOMEM;
    if (cat_codec_decompress(&ctx->scratch[0], ck->info.codec, src, csize, buf, neblock,
                             ck->dict, ck->dictlen) != neblock)
      return CATERVA_E_CORRUPT;
    src = buf;
  }
  for (int32_t p = 0; p < neblock / q; p++)
    for (int32_t m = 0; m < n; m++)
      out[p + (size_t)m * (size_t)ts] = src[(size_t)p * (size_t)q + (size_t)(i + m)];
  return CATERVA_OK;
}

int cat_chunk_items_planes(caterva_ctx *ctx, const void *chunk, size_t len, int32_t item,
                           int32_t n, uint8_t *out) {
  cat_chunk ck;
  int64_t first, j;
  int32_t ts, bsize, nstreams, q, bstart;
  cat_rdr r;
  int rc = cat_parse_ctx(ctx, chunk, len, &ck);
  if (rc < 0) return rc;
  ts = ck.info.typesize;
  first = (int64_t)item * ts;
  if (item < 0 || n < 1 || ts < 1 || ck.info.blocksize <= 0 ||
      first + (int64_t)n * ts > ck.info.nbytes)
    return 0;
  j = first / ck.info.blocksize;
  if ((first + (int64_t)n * ts - 1) / ck.info.blocksize != j || !cat_planes_only(&ck, (int32_t)j))
    return 0;
  bsize = cat_block_size(&ck.info, (int32_t)j);
  nstreams = cat_block_nstreams(&ck, bsize); /* 1 or ts */
  q = bsize / ts;
  bstart = cat_le32s(ck.p + ck.hdr + 4 * (size_t)j);
  if (bstart < ck.data_start || bstart >= ck.info.cbytes)
    return cat_error(ctx, CATERVA_E_CORRUPT, "corrupt chunk data (block %d starts outside)",
                     (int)j);
  cat_rdr_init(&r, ck.p + bstart, (size_t)(ck.info.cbytes - bstart));
  for (int32_t s = 0; s < nstreams; s++) {
    rc = cat_stream_bytes(ctx, &ck, &r, bsize / nstreams, q,
                          (int32_t)((first - j * ck.info.blocksize) / ts), n,
                          out + (size_t)s * (size_t)(ts / nstreams));
    if (rc < 0) return cat_error(ctx, rc, "corrupt chunk data (a stream does not decode)");
  }
  return 1;
}

/* ---- decoding sets of blocks, in parallel ---------------------------------------------- */

typedef struct cat_dec_job {
  caterva_ctx *ctx;
  const cat_chunk *ck;
  const int32_t *blocks;
  uint8_t *dst;
  const uint8_t *ref;
  int32_t skip;    /* blocks[skip] was decoded beforehand (block 0 as DELTA reference) */
} cat_dec_job;

static int cat_dec_task(void *arg, int64_t t, int w) {
  cat_dec_job *job = arg;
  if (t == job->skip) return CATERVA_OK;
  return cat_decode_block(job->ctx, w, job->ck, job->blocks[t],
                          job->dst + (size_t)t * (size_t)job->ck->info.blocksize, job->ref);
}

/* Whether to hand a batch to the pool: waking threads costs tens of microseconds. */
bool cat_worth_parallel(const caterva_ctx *ctx, int32_t n, int32_t blocksize) {
  return ctx->pool != NULL && n >= 2 && (int64_t)n * blocksize >= 64 * 1024;
}

/* DELTA blocks other than 0 are XORed with the decoded block 0: decode it first, into the
 * output when it is requested, else into the reference buffer. */
static int cat_prepare_ref(caterva_ctx *ctx, const cat_chunk *ck, const int32_t *blocks,
                           int32_t n, uint8_t *dst, cat_dec_job *job) {
  job->skip = -1;
  job->ref = NULL;
  if (!cat_has_filter(ck->info.filters, CATERVA_DELTA)) return CATERVA_OK;
  for (int32_t i = 0; i < n; i++) {
    if (blocks[i] == 0) {
      uint8_t *at = dst + (size_t)i * (size_t)ck->info.blocksize;
      job->skip = i;
      job->ref = at;
      return cat_decode_block(ctx, 0, ck, 0, at, NULL);
    }
  }
  uint8_t *ref = cat_scratch_get(ctx, 0, 2, (size_t)ck->info.blocksize);
  if (ref == NULL) return CATERVA_E_NOMEM;
  job->ref = ref;
  return cat_decode_block(ctx, 0, ck, 0, ref, NULL);
}

static int64_t cat_decode_blocks(caterva_ctx *ctx, const cat_chunk *ck, const int32_t *blocks,
                                 int32_t n, uint8_t *dst) {
  const caterva_chunk_info *ci = &ck->info;
  cat_dec_job job = {ctx, ck, blocks, dst, NULL, -1};
  int64_t total = 0;
  int rc;

  for (int32_t i = 0; i < n; i++) {
    int64_t off = (int64_t)blocks[i] * ci->blocksize;
    int32_t bsize = cat_block_size(ci, blocks[i]);
    total += bsize;
    if (ci->special != CATERVA_SPECIAL_NONE || ci->memcpyed)
      cat_copy_plain(ck, off, dst + (size_t)i * (size_t)ci->blocksize, bsize);
  }
  if (ci->special != CATERVA_SPECIAL_NONE || ci->memcpyed) return total;
  rc = cat_prepare_ref(ctx, ck, blocks, n, dst, &job);
  if (rc < 0) return rc;
  if (cat_worth_parallel(ctx, n, ci->blocksize))
    rc = cat_pool_run(ctx->pool, n, cat_dec_task, &job);
  else
    for (int32_t t = 0; t < n && rc >= 0; t++) rc = cat_dec_task(&job, t, 0);
  return rc < 0 ? rc : total;
}

static int cat_check_blocks(caterva_ctx *ctx, const cat_chunk *ck, const int32_t *blocks,
                            int32_t n, size_t dstcap) {
  size_t need = 0;
  if (n < 0 || (n > 0 && blocks == NULL)) return cat_error(ctx, CATERVA_E_INVALID, "bad block list");
  for (int32_t i = 0; i < n; i++) {
    size_t end;
    if (blocks[i] < 0 || blocks[i] >= ck->info.nblocks)
      return cat_error(ctx, CATERVA_E_RANGE, "block %d out of range [0, %d)", (int)blocks[i],
                       (int)ck->info.nblocks);
    end = (size_t)i * (size_t)ck->info.blocksize + (size_t)cat_block_size(&ck->info, blocks[i]);
    if (end > need) need = end;
  }
  if (dstcap < need)
    return cat_error(ctx, CATERVA_E_NOSPACE, "output buffer too small for %d blocks", (int)n);
  return CATERVA_OK;
}

int64_t caterva_chunk_decompress_blocks(caterva_ctx *ctx, const void *chunk, size_t len,
                                        const int32_t *blocks, int32_t nblocks, void *dst,
                                        size_t dstcap) {
  cat_chunk ck;
  int64_t rc = cat_parse_ctx(ctx, chunk, len, &ck);
  if (rc < 0) return rc;
  rc = cat_check_blocks(ctx, &ck, blocks, nblocks, dstcap);
  if (rc < 0) return rc;
  rc = cat_decode_blocks(ctx, &ck, blocks, nblocks, dst);
  if (rc < 0) return cat_error(ctx, (int)rc, "corrupt chunk data (a stream does not decode)");
  return rc;
}

/* ---- decoding blocks straight to a consumer --------------------------------------------- */

typedef struct cat_each_job {
  caterva_ctx *ctx;
  const cat_chunk *ck;       /* nreq parsed chunks */
  const cat_chunk_req *req;
  const int64_t *first;      /* first[i]: task number of req[i]'s first block; first[nreq] */
  int32_t nreq;
  const uint8_t *ref;        /* DELTA (one chunk at a time): decoded block 0, else NULL */
  int32_t skip;              /* position of block 0 in the request when ref holds it, or -1 */
  cat_block_fn fn;
  const cat_groups *groups;  /* blocks that must not run at once, or NULL */
} cat_each_job;

/* The request holding task t (bisection over first). */
static int32_t cat_each_req(const cat_each_job *job, int64_t t) {
  int32_t lo = 0, hi = job->nreq - 1;
  while (lo < hi) {
    int32_t mid = lo + (hi - lo + 1) / 2;
    if (job->first[mid] <= t) lo = mid;
    else hi = mid - 1;
  }
  return lo;
}

/* Decode one requested block into worker w's slot 3 (a memcpyed chunk's block is handed out
 * where it lies) and pass it on. */
static int cat_each_task(void *arg, int64_t t, int w) {
  cat_each_job *job = arg;
  int32_t r = cat_each_req(job, t), i = (int32_t)(t - job->first[r]);
  const cat_chunk *ck = &job->ck[r];
  const caterva_chunk_info *ci = &ck->info;
  int32_t j = job->req[r].blocks[i];
  int64_t off = (int64_t)j * ci->blocksize;
  uint8_t *out;
  int rc;
  if (i == job->skip) return job->fn(job->req[r].arg, j, job->ref, w);
  if (ci->memcpyed && ci->special == CATERVA_SPECIAL_NONE)
    return job->fn(job->req[r].arg, j, ck->p + ck->hdr + off, w);
  out = cat_scratch_get(job->ctx, w, 3, (size_t)ci->blocksize);
  if (out == NULL) return CATERVA_E_NOMEM;
  if (ci->special != CATERVA_SPECIAL_NONE) {
    cat_fill_pattern(ck, off, out, cat_block_size(ci, j));
  } else {
    rc = cat_decode_block(job->ctx, w, ck, j, out, job->ref);
    if (rc < 0) return rc;
  }
  return job->fn(job->req[r].arg, j, out, w);
}

static bool cat_is_delta(const cat_chunk *ck) {
  return ck->info.special == CATERVA_SPECIAL_NONE && !ck->info.memcpyed &&
         cat_has_filter(ck->info.filters, CATERVA_DELTA);
}

/* DELTA: decode block 0, the reference of the others, into worker 0's slot 2 first. */
static int cat_each_ref(caterva_ctx *ctx, const cat_chunk *ck, const cat_chunk_req *req,
                        cat_each_job *job) {
  uint8_t *ref = cat_scratch_get(ctx, 0, 2, (size_t)ck->info.blocksize);
  if (ref == NULL) return CATERVA_E_NOMEM;
  job->ref = ref;
  job->skip = -1;
  for (int32_t i = 0; i < req->n && job->skip < 0; i++)
    if (req->blocks[i] == 0) job->skip = i;
  return cat_decode_block(ctx, 0, ck, 0, ref, NULL);
}

/* A task per chunk: its requested blocks in order, one after the other. */
static int cat_each_chunk_task(void *arg, int64_t r, int w) {
  cat_each_job *job = arg;
  int rc = CATERVA_OK;
  for (int64_t t = job->first[r]; t < job->first[r + 1] && rc >= 0; t++)
    rc = cat_each_task(job, t, w);
  return rc;
}

/* A task per group (cat_chunks_decode_groups): its blocks in its order, one after the
 * other. */
static int cat_each_group_task(void *arg, int64_t g, int w) {
  cat_each_job *job = arg;
  const cat_groups *gr = job->groups;
  int rc = CATERVA_OK;
  for (int64_t i = gr->first[g]; i < gr->first[g + 1] && rc >= 0; i++)
    rc = cat_each_task(job, gr->order[i], w);
  return rc;
}

/* Run tasks [0, ntasks) of job, on the pool when there are enough bytes to share: a task per
 * chunk when there are chunks enough to keep every thread busy (threads then write apart in
 * the destination: blocks next to each other share cache lines there), else per block. */
static int cat_each_run(cat_each_job *job, int64_t ntasks, int32_t blocksize) {
  int rc = CATERVA_OK;
  if (job->groups != NULL && job->groups->n > 1 && ntasks <= INT32_MAX &&
      cat_worth_parallel(job->ctx, (int32_t)ntasks, blocksize))
    return cat_pool_run(job->ctx->pool, job->groups->n, cat_each_group_task, job);
  if (job->groups != NULL) { /* one group, or not worth the threads: all in task order */
    for (int64_t t = 0; t < ntasks && rc >= 0; t++) rc = cat_each_task(job, t, 0);
    return rc;
  }
  if (ntasks <= INT32_MAX && cat_worth_parallel(job->ctx, (int32_t)ntasks, blocksize)) {
    if (job->nreq >= 4 * job->ctx->nthreads)
      return cat_pool_run(job->ctx->pool, job->nreq, cat_each_chunk_task, job);
    return cat_pool_run(job->ctx->pool, ntasks, cat_each_task, job);
  }
  for (int64_t t = 0; t < ntasks && rc >= 0; t++) rc = cat_each_task(job, t, 0);
  return rc;
}

/* Chunks with DELTA need their own block 0 as reference: one chunk per run. */
static int cat_each_delta(cat_each_job *job, cat_chunk *ck, const cat_chunk_req *req,
                          int32_t nreq) {
  int rc = CATERVA_OK;
  int64_t first[2] = {0, 0};
  for (int32_t r = 0; r < nreq && rc >= 0; r++) {
    job->ck = &ck[r];
    job->req = &req[r];
    job->first = first;
    job->nreq = 1;
    job->ref = NULL;
    job->skip = -1;
    first[1] = req[r].n;
    if (cat_is_delta(&ck[r])) rc = cat_each_ref(job->ctx, &ck[r], &req[r], job);
    if (rc >= 0 && job->groups != NULL) /* task numbers are the batch's: in order, here */
      for (int32_t t = 0; t < req[r].n && rc >= 0; t++) rc = cat_each_task(job, t, 0);
    else if (rc >= 0)
      rc = cat_each_run(job, req[r].n, ck[r].info.blocksize);
  }
  return rc;
}

int64_t cat_chunks_decode_each(caterva_ctx *ctx, const cat_chunk_req *req, int32_t nreq,
                               cat_block_fn fn) {
  return cat_chunks_decode_groups(ctx, req, nreq, fn, NULL);
}

int64_t cat_chunks_decode_groups(caterva_ctx *ctx, const cat_chunk_req *req, int32_t nreq,
                                 cat_block_fn fn, const cat_groups *groups) {
  cat_each_job job = {ctx, NULL, req, NULL, nreq, NULL, -1, fn, groups};
  cat_chunk *ck = NULL;
  int64_t *first = NULL, total = 0;
  int64_t rc = CATERVA_OK;
  bool delta = false;
  int32_t bs = 0;
  if (nreq <= 0) return 0;
  ck = malloc((size_t)nreq * sizeof *ck);
  first = malloc(((size_t)nreq + 1) * sizeof *first);
  if (ck == NULL || first == NULL) {
    rc = cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
    goto leave;
  }
  first[0] = 0;
  for (int32_t r = 0; r < nreq; r++) {
    rc = cat_parse_ctx(ctx, req[r].chunk, req[r].len, &ck[r]);
    if (rc >= 0)
      rc = cat_check_blocks(ctx, &ck[r], req[r].blocks, req[r].n,
                            (size_t)req[r].n * (size_t)ck[r].info.blocksize);
    if (rc < 0) goto leave;
    for (int32_t i = 0; i < req[r].n; i++) total += cat_block_size(&ck[r].info, req[r].blocks[i]);
    first[r + 1] = first[r] + req[r].n;
    delta = delta || cat_is_delta(&ck[r]);
    if (ck[r].info.blocksize > bs) bs = ck[r].info.blocksize;
  }
  job.ck = ck;
  job.first = first;
  rc = delta ? cat_each_delta(&job, ck, req, nreq) : cat_each_run(&job, first[nreq], bs);
  if (rc == CATERVA_E_NOMEM) rc = cat_error(ctx, (int)rc, "out of memory");
  else if (rc < 0) rc = cat_error(ctx, (int)rc, "corrupt chunk data (a stream does not decode)");
leave:
  free(ck);
  free(first);
  return rc < 0 ? rc : total;
}

/* Block list 0..n-1 in a scratch buffer of the context. */
static int32_t *cat_all_blocks(caterva_ctx *ctx, int32_t n) {
  int32_t *all = (int32_t *)(void *)cat_scratch_get(ctx, 0, 2, (size_t)n * sizeof *all + 1);
  if (all == NULL) return NULL;
  for (int32_t i = 0; i < n; i++) all[i] = i;
  return all;
}

int32_t caterva_chunk_decompress(caterva_ctx *ctx, const void *chunk, size_t len, void *dst,
                                 int32_t dstcap) {
  cat_chunk ck;
  int64_t rc = cat_parse_ctx(ctx, chunk, len, &ck);
  int32_t *all;
  if (rc < 0) return (int32_t)rc;
  if (dstcap < ck.info.nbytes)
    return cat_error(ctx, CATERVA_E_NOSPACE, "output buffer of %d bytes, chunk holds %d",
                     (int)dstcap, (int)ck.info.nbytes);
  if (ck.info.special != CATERVA_SPECIAL_NONE || ck.info.memcpyed) {
    cat_copy_plain(&ck, 0, dst, ck.info.nbytes);
    return ck.info.nbytes;
  }
  if (ck.info.nblocks == 0) return 0;
  /* The DELTA reference shares scratch slot 2; block 0 is in the list, so it lands in dst. */
  all = cat_all_blocks(ctx, ck.info.nblocks);
  if (all == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  rc = cat_decode_blocks(ctx, &ck, all, ck.info.nblocks, dst);
  if (rc < 0) return cat_error(ctx, (int)rc, "corrupt chunk data (a stream does not decode)");
  return ck.info.nbytes;
}

int32_t caterva_chunk_getitems(caterva_ctx *ctx, const void *chunk, size_t len, int32_t start,
                               int32_t nitems, void *dst, int32_t dstcap) {
  cat_chunk ck;
  int64_t rc = cat_parse_ctx(ctx, chunk, len, &ck);
  int64_t ts, first, end, b0, b1;
  if (rc < 0) return (int32_t)rc;
  ts = ck.info.typesize > 0 ? ck.info.typesize : 1;
  first = (int64_t)start * ts;
  end = first + (int64_t)nitems * ts;
  if (start < 0 || nitems < 0 || end > ck.info.nbytes)
    return cat_error(ctx, CATERVA_E_RANGE, "items [%d, %d) outside the chunk", (int)start,
                     (int)(start + nitems));
  if (dstcap < end - first) return cat_error(ctx, CATERVA_E_NOSPACE, "output buffer too small");
  if (nitems == 0) return 0;
  if (ck.info.special != CATERVA_SPECIAL_NONE || ck.info.memcpyed) {
    cat_copy_plain(&ck, first, dst, end - first);
    return (int32_t)(end - first);
  }
  b0 = first / ck.info.blocksize;
  b1 = (end - 1) / ck.info.blocksize;
  {
    int32_t n = (int32_t)(b1 - b0 + 1);
    size_t need = ((size_t)n * (size_t)ck.info.blocksize + 7) & ~(size_t)7; /* list aligned */
    uint8_t *tmp = malloc(need + (size_t)n * sizeof(int32_t));
    int32_t *list = (int32_t *)(void *)(tmp + need);
    if (tmp == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
    for (int32_t i = 0; i < n; i++) list[i] = (int32_t)(b0 + i);
    rc = cat_decode_blocks(ctx, &ck, list, n, tmp);
    if (rc >= 0) memcpy(dst, tmp + (first - b0 * ck.info.blocksize), (size_t)(end - first));
    free(tmp);
  }
  if (rc < 0) return cat_error(ctx, (int)rc, "corrupt chunk data (a stream does not decode)");
  return (int32_t)(end - first);
}

