/*
 * array_txn.c -- what the write cache (wcache.c) and the block statistics' writers build on:
 * an array's metadata read from its metalayers, its chunk parameters, whole-chunk reads, the
 * one check every write passes (cat_array_check_writable), and the implicit transaction a
 * single write runs in when none is open.
 *
 * Layering inside the array files (each calls only those before it):
 *   array_meta.c, array_iter.c, array_coords.c, labels.c  geometry, metalayers, coordinates
 *   blockstats.c                                          per-block statistics
 *   array_txn.c                                           this file
 *   wcache*.c                                             write-back cache, explicit transactions
 *   array.c                                               the public array API
 */
#include "array_layer_internal.h"

#include <stdio.h>
#include <stdlib.h>

char *cat_strndup(const char *s, size_t n) {
  char *d = malloc(n + 1);
  if (d) {
    if (n > 0) memcpy(d, s, n); /* an empty msgpack string may have a NULL pointer */
    d[n] = '\0';
  }
  return d;
}

/* Compression parameters for this array's chunks: the frame's, with the array's item size
 * and block size (blocks must be the array's blocks). */
caterva_cparams cat_array_chunk_cparams(const caterva_array *a) {
  caterva_cparams cp = *caterva_schunk_cparams(a->sc);
  cp.typesize = a->g.itemsize;
  cp.blocksize = a->g.blocksize;
  return cp;
}

int cat_array_load_meta(caterva_ctx *ctx, caterva_array *a) {
  int rc = CATERVA_OK;
  const uint8_t *content = NULL;
  int32_t len = 0;
  cat_array_meta m;
  cat_array_coords_reset(a);
  a->has_b2nd = caterva_schunk_meta_get(a->sc, CAT_META_B2ND, &content, &len) >= 0;
  a->has_caterva = caterva_schunk_meta_get(a->sc, CAT_META_CATERVA, &content, &len) >= 0;
  CAT_CHECK(leave, a->has_b2nd || a->has_caterva, CATERVA_E_NOTFOUND,
            "the frame has neither a b2nd nor a caterva metalayer: not an N-d array");
  if (a->has_b2nd) CAT_TRY(leave, caterva_schunk_meta_get(a->sc, CAT_META_B2ND, &content, &len));
  CAT_TRY(leave, cat_meta_decode(ctx, content, (size_t)len, a->has_b2nd, &m));
  CAT_TRY(leave, cat_geom_init(ctx, &a->g, &m, caterva_schunk_typesize(a->sc)));
  a->geom_gen++;
  free(a->dtype);
  a->dtype = NULL;
  if (m.dtype != NULL) {
    caterva_dtype_info info;
    a->dtype = cat_strndup(m.dtype, m.dtype_len);
    CAT_CHECK(leave, a->dtype != NULL, CATERVA_E_NOMEM, "out of memory");
    if (caterva_dtype_parse(a->dtype, &info) == CATERVA_OK && info.itemsize > 0)
      CAT_CHECK(leave, info.itemsize == a->g.itemsize, CATERVA_E_CORRUPT,
                "dtype %s has %d-byte items but the frame's typesize is %d", a->dtype,
                info.itemsize, a->g.itemsize);
  }
  CAT_CHECK(leave, caterva_schunk_nchunks(a->sc) == a->g.nchunks, CATERVA_E_CORRUPT,
            "the frame has %lld chunks, the array's shape needs %lld",
            (long long)caterva_schunk_nchunks(a->sc), (long long)a->g.nchunks);
  CAT_CHECK(leave, a->g.nchunks == 0 || caterva_schunk_chunksize(a->sc) == a->g.chunksize,
            CATERVA_E_CORRUPT, "the frame's chunks hold %d bytes, the array's need %d",
            (int)caterva_schunk_chunksize(a->sc), (int)a->g.chunksize);
leave:
  return rc;
}

/* Fill a chunk image with chunk n's current content. */
int cat_array_read_chunk(caterva_ctx *ctx, caterva_array *a, int64_t n, uint8_t *chunkbuf) {
  int rc = CATERVA_OK;
  int special = caterva_schunk_chunk_special(a->sc, n);
  CAT_TRY(leave, special);
  if (special == CATERVA_SPECIAL_ZERO || special == CATERVA_SPECIAL_UNINIT) {
    memset(chunkbuf, 0, (size_t)a->g.chunksize);
  } else if (special == CATERVA_SPECIAL_NAN) {
    cat_fill_items(chunkbuf, a->g.chunksize / a->g.itemsize, a->g.itemsize, special, NULL);
  } else {
    CAT_TRY(leave, caterva_schunk_decompress_chunk(ctx, a->sc, n, chunkbuf, a->g.chunksize));
  }
  rc = CATERVA_OK;
leave:
  return rc;
}

int cat_array_check_writable(caterva_ctx *ctx, const caterva_array *a) {
  int k = a->g.nodata_axis, rc = CATERVA_OK;
  CAT_CHECK(leave, k < 0, CATERVA_E_READONLY,
            "dimension %d has a %s extent of 0: the array can hold no data and cannot be "
            "written or grown (copy it with positive chunk and block shapes)",
            k, a->g.chunkshape[k] == 0 ? "chunk" : "block");
leave:
  return rc;
}

int cat_array_txn_enter(caterva_ctx *ctx, caterva_array *a) {
  int rc = cat_array_check_writable(ctx, a);
  if (rc < 0) return rc;
  if (caterva_schunk_store(a->sc) == CATERVA_STORE_MEMORY || caterva_schunk_in_txn(a->sc))
    return 0;
  rc = caterva_schunk_begin(ctx, a->sc);
  if (rc < 0) return rc;
  rc = cat_bs_begin(ctx, a);
  if (rc < 0) {
    caterva_schunk_rollback(ctx, a->sc);
    return rc;
  }
  return 1;
}

int cat_array_txn_leave(caterva_ctx *ctx, caterva_array *a, int own, int rc) {
  char keep[CAT_ERRMSG_SIZE];
  if (!own) {
    if (rc >= 0 && caterva_schunk_store(a->sc) == CATERVA_STORE_MEMORY)
      rc = cat_bs_store(ctx, a);
    return rc;
  }
  if (rc >= 0) rc = cat_bs_store(ctx, a);
  if (rc >= 0) rc = caterva_schunk_commit(ctx, a->sc, 1);
  if (rc >= 0) {
    cat_bs_end(a);
    return rc;
  }
  snprintf(keep, sizeof keep, "%s", ctx != NULL ? ctx->errmsg : "");
  (void)caterva_schunk_rollback(ctx, a->sc);
  cat_bs_rollback(a);
  (void)cat_array_load_meta(ctx, a);
  if (ctx != NULL) snprintf(ctx->errmsg, sizeof ctx->errmsg, "%s", keep);
  return rc;
}
