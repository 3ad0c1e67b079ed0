/*
 * frame_remote_internal.h -- what the remote store's files share: frame_remote.c (the store
 * and its chunks), frame_remote_open.c (the open) and frame_remote_tail.c (a large frame's
 * index and trailer read by range): the store's structure and the calls between them. Not a
 * public interface.
 */
#ifndef CATERVA_FRAME_REMOTE_INTERNAL_H
#define CATERVA_FRAME_REMOTE_INTERNAL_H

#include "frame_s3.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define CAT_RPROBE (64 * 1024)         /* first bytes asked for at open */
#define CAT_RSMALL_CHUNK (32 * 1024)   /* chunks this small are fetched whole */
#define CAT_RCHECK 16                  /* bytes of chunks.b2frame a version check asks for (not
                                        * 1: some S3 servers misread "bytes=0-0") */
#define CAT_RMAXREQ (2 * 1024 * 1024)  /* larger ranges are split: several connections */
#define CAT_RSPARSE_INDEX "chunks.b2frame"

typedef struct rrange { int64_t lo, hi; } rrange;

typedef struct cat_rchunk {
  uint8_t *buf;          /* cbytes bytes once the header is known, else NULL */
  int32_t cbytes;
  int32_t have;          /* bytes [0, have) are present (the header part) */
  uint8_t *blk;          /* per block: 1 when its bytes are present and checked */
  cat_chunk_span sp;
  bool whole;            /* every byte is present */
  int pins;
  uint64_t used;         /* tick of the last use */
  int64_t entry;         /* the index entry the bytes are of (a writer changes entries) */
  int64_t next;          /* a lazy index: entry i + 1 when in the same block of the index */
  int64_t i;             /* the chunk's number */
} cat_rchunk;

struct cat_rstore {
  cat_remote *rm;
  char *url;             /* contiguous: the frame; sparse: the directory */
  char *iurl;            /* sparse: `<url>/chunks.b2frame` (owned); contiguous: NULL */
  char version[96];      /* of the frame object (cat_rs_frame_url) */
  /* the chunks touched and still cached or pinned: records malloc'ed (they never move), found
   * by chunk number in an open-addressing table of tabcap (a power of 2) slots */
  cat_rchunk **tab;
  int64_t tabcap, ntab;
  int64_t cached, budget;
  uint64_t tick;
  pthread_mutex_t mu;    /* the store's lock (see the notes at the top) */
  bool pending;          /* the version check is left to the next read (check_later) */
  bool changed;          /* an answer or a HEAD showed another version */
  cat_s3w *w;            /* a writer's chunks not uploaded yet (frame_s3.c), or NULL */
  int64_t index_mtime;   /* sparse: when chunks.b2frame was written (seconds; -1 unknown) */
  uint8_t **retired;     /* bytes of chunks replaced while a reader had them pinned */
  int64_t nretired;
  /* large frames read by range at open (cat_rs_open_tail): bytes [tail_off, frame_len) of the
   * frame object -- offsets index and trailer -- of which the ranges in have[] are present */
  uint8_t *tail;
  int64_t tail_off;
  rrange *have;
  int64_t nhave, caphave;
};

/* A piece of a wave: bytes [off, off + len) of chunk i (or of the frame when i < 0) go to
 * dst. */
typedef struct rpiece {
  int64_t i;
  const char *url;
  int64_t off, len;      /* object offsets */
  uint8_t *dst;
} rpiece;

/* A contiguous frame's index and trailer are read by range (frame_remote_tail.c) when more
 * than these two bytes counts lie after its chunks: the first CAT_RTAIL_HEAD bytes from the
 * index on, and the last CAT_RTAIL_END bytes of the frame. */
#define CAT_RTAIL_HEAD (64 * 1024)
#define CAT_RTAIL_END (16 * 1024)

/* The frame object: the contiguous frame, or a sparse frame's chunks.b2frame (header, offsets
 * index and trailer). Its answers are judged against rs->version; chunk objects of a sparse
 * frame are never rewritten under their names. */
static inline const char *cat_rs_frame_url(const cat_rstore *rs) {
  return rs->iurl != NULL ? rs->iurl : rs->url;
}

/* Fetch the byte ranges orig[0..norig) of the store's objects (frame_remote.c): merged where
 * close, split where large, answers checked against the frame's version. The lock held. */
int cat_rs_run_pieces(caterva_ctx *ctx, cat_rstore *rs, const caterva_schunk *sc,
                      const rpiece *orig, int64_t norig);
/* Read the index and trailer of a large frame object at open, by range (frame_remote_tail.c);
 * idx: where the index starts; seed: the object's first nseed bytes, already fetched (the
 * open's probe: what of them lies from idx on is not asked again), borrowed. */
int cat_rs_open_tail(caterva_ctx *ctx, caterva_schunk *sc, cat_rstore *rs, int64_t idx,
                     const uint8_t *seed, int64_t nseed);

#endif
