/*
 * chunk_format_internal.h -- what the chunk decoder (chunk.c) and encoder (chunk_enc.c) share: the
 * header's constants, a parsed chunk, and the block geometry both read. Internal to libcaterva.
 */
#ifndef CAT_CHUNK_FORMAT_INTERNAL_H
#define CAT_CHUNK_FORMAT_INTERNAL_H

#include "cat_internal.h"

#define CAT_HDR CATERVA_CHUNK_HEADER_SIZE
#define CAT_HDR1 16                /* Blosc 1.x header */
#define CAT_MIN_SPLIT_ITEMS1 128   /* Blosc 1.x: split only blocks of >= 128 items ... */
#define CAT_MAX_SPLIT_TS1 16       /* ... of typesize <= 16 */
#define CAT_VERSION_WRITTEN 5
#define CAT_MAX_DICT 32768

/* flags (byte 2) */
#define CAT_F_SHUFFLE_EXT 0x01
#define CAT_F_MEMCPYED 0x02
#define CAT_F_BITSHUFFLE_EXT 0x04
#define CAT_F_DELTA 0x08
#define CAT_F_DONT_SPLIT 0x10
/* blosc2_flags (byte 31) */
#define CAT_B2_DICT 0x01
#define CAT_B2_SPECIAL_SHIFT 4
#define CAT_B2_SPECIAL_MASK 0x70

/* A parsed chunk, ready for decoding blocks. */
typedef struct cat_chunk {
  const uint8_t *p;         /* chunk bytes; cbytes of them are valid */
  caterva_chunk_info info;
  int32_t hdr;              /* header length: 32, or 16 for a Blosc 1.x chunk */
  int32_t full_block;       /* blocks of this size are split (when split); smaller are not */
  bool blosc1_rules;        /* version 2 Blosc 1.x chunk: c-blosc 1.x split and bitshuffle */
  int32_t data_start;       /* first byte a stream may occupy */
  const uint8_t *dict;      /* dictionary or NULL */
  int32_t dictlen;
  const char *why;          /* what is wrong with a rejected header, or NULL */
} cat_chunk;

/* Parse the header (either format) of len bytes at chunk into ck; < 0 when malformed. */
int cat_chunk_parse(const void *chunk, size_t len, cat_chunk *ck);
/* Bytes of block j (the last one may be short). */
int32_t cat_block_size(const caterva_chunk_info *ci, int32_t j);
/* Streams per block: typesize when split (the short last block is never split). */
int32_t cat_block_nstreams(const cat_chunk *ck, int32_t bsize);
bool cat_has_filter(const uint8_t *filters, uint8_t f);
/* A filter code this library implements. */
bool cat_filter_known(uint8_t f);
/* Worth handing n blocks of blocksize bytes to the context's threads? */
bool cat_worth_parallel(const caterva_ctx *ctx, int32_t n, int32_t blocksize);
/* Where block j's streams end when its bytes are present up to hi, read with the decoder's
 * framing; -1 when they run past hi or its start is not in [data_start, hi). */
int32_t cat_block_reach(const cat_chunk *ck, int32_t j, int32_t hi);

#endif /* CAT_CHUNK_FORMAT_INTERNAL_H */
