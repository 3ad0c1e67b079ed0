/*
 * frame_disk_internal.h -- what the files of the frame-on-disk layer share among themselves
 * (frame_plan.c, frame_sparse.c, frame_contig.c, frame_stored.c, frame_pack.c, frame_file.c,
 * each calling only those before it). The layer's interface to the rest of the library is
 * frame_internal.h ("frame_file.c: files and directories").
 */
#ifndef CATERVA_FRAME_DISK_INTERNAL_H
#define CATERVA_FRAME_DISK_INTERNAL_H

#include "frame_internal.h"

#include <sys/types.h>

#define io_fail cat_io_error

/* A sparse frame's index file, in its directory. */
#define CAT_SPARSE_INDEX "chunks.b2frame"

/* ---- frame_plan.c: a new frame version's pieces; atomic replacement of a file ------------ */

/* The header, index and trailer of a new version of a frame (each malloc'ed, owned; freed by
 * cat_plan_free with entries). */
typedef struct cat_plan {
  uint8_t *header, *index, *trailer;
  int64_t header_len;
  int32_t index_len, trailer_len;
  int64_t *entries; /* the new index */
  int64_t cbytes, frame_len;
} cat_plan;

void cat_plan_free(cat_plan *pl);
/* Index, trailer and header of pl for its n entries (pl->entries, pl->cbytes set by the
 * caller) and nbytes. */
int cat_plan_finish(caterva_ctx *ctx, caterva_schunk *sc, int frame_type, cat_plan *pl,
                    int64_t n, int64_t nbytes);
/* Write a sparse frame's chunks.b2frame (header, index, trailer of pl) at path, atomically. */
int cat_plan_write_sparse(caterva_ctx *ctx, const char *path, const cat_plan *pl, bool sync);

/* Fills the temporary file fd (named path) of cat_write_atomic. */
typedef int (*cat_emit_fn)(caterva_ctx *ctx, void *arg, int fd, const char *path);
/* Write a complete new version of path: emit() fills a temporary file in the same
 * directory, which is synced (with sync) and renamed over path. */
int cat_write_atomic(caterva_ctx *ctx, const char *path, cat_emit_fn emit, void *arg, bool sync);

/* ---- frame_sparse.c: sparse directories -------------------------------------------------- */

/* malloc'ed path of chunk file num in dir (NULL when out of memory). */
char *cat_sparse_chunk_path(const char *dir, int64_t num);
/* Write chunk file num in dir (fdatasync'ed with sync); no partial file left on failure. */
int cat_sparse_write_chunk(caterva_ctx *ctx, const char *dir, int64_t num, const uint8_t *chunk,
                           int32_t cbytes, bool sync);
int cat_sparse_open(caterva_ctx *ctx, caterva_schunk *sc);
/* cat_file_put_chunk, cat_file_put_copies of a sparse directory. */
int cat_sparse_put(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *chunk, int32_t cbytes,
                   int64_t *entry);
int cat_sparse_put_copies(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *chunk,
                          int32_t cbytes, const int64_t *map, int64_t n, int64_t *entries);
/* Replace chunks.b2frame with the index entries/n (header: nbytes, cbytes). */
int cat_sparse_write_index(caterva_ctx *ctx, caterva_schunk *sc, int64_t *entries, int64_t n,
                           int64_t nbytes, int64_t cbytes, bool sync);
/* Make the chunk files written without an fsync durable (syncfs) before an index names them. */
int cat_sparse_sync_pending(caterva_ctx *ctx, caterva_schunk *sc);

/* ---- frame_contig.c: contiguous files ----------------------------------------------------- */

/* Map the file behind fd (kept when the same file still fits the map's reservation). */
int cat_contig_remap(caterva_ctx *ctx, caterva_schunk *sc, int fd);
/* Release the map (or keep it with retain_maps). */
void cat_contig_unmap(caterva_schunk *sc);
int cat_contig_open(caterva_ctx *ctx, caterva_schunk *sc);
/* cat_file_put_chunk, cat_file_put_copies and cat_file_commit of a contiguous file. */
int cat_contig_put(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *chunk, int32_t cbytes,
                   int64_t *entry);
int cat_contig_put_copies(caterva_ctx *ctx, caterva_schunk *sc, const uint8_t *chunk,
                          int32_t cbytes, const int64_t *map, int64_t n, int64_t *entries);
int cat_contig_commit(caterva_ctx *ctx, caterva_schunk *sc, int64_t *entries, int64_t n,
                      int64_t nbytes, bool full_header, int sync);
/* The written end moved back to len (a chunk dropped, a savepoint rolled back): the chunks
 * held in memory past it dropped, the file truncated to it. */
int cat_contig_cut(caterva_ctx *ctx, caterva_schunk *sc, int64_t len);
/* The chunks held in memory dropped, their buffer freed (after a packed rewrite holds them,
 * and when the file is closed). */
void cat_contig_pend_free(caterva_schunk *sc);

/* ---- frame_pack.c: packed rewrites --------------------------------------------------------- */

/* Rewrite a contiguous file packed (temporary file + rename) and switch sc to it. */
int cat_pack_rewrite_contiguous(caterva_ctx *ctx, caterva_schunk *sc);

#endif
