/*
 * cpstats.c -- copy the block statistics record of one array file into another, for the
 * remote tests: the target then holds statistics (and recorded block starts) written for other
 * chunk bytes, as when a foreign writer changes chunks and keeps our trailer.
 *
 *   cpstats FROM TO
 *
 * Exit status 0 on success.
 */
#include "caterva.h"

#include <stdio.h>
#include <stdlib.h>

#define ATTR "_caterva_blockstats"

int main(int argc, char **argv) {
  caterva_ctx *ctx = NULL;
  caterva_array *from = NULL, *to = NULL;
  caterva_schunk *sc;
  uint8_t *v = NULL;
  int32_t len = 0;
  int rc = 1;
  if (argc != 3) {
    fprintf(stderr, "usage: cpstats FROM TO\n");
    return 2;
  }
  if (caterva_ctx_new(1, &ctx) < 0 ||
      caterva_array_open(ctx, argv[1], CATERVA_OPEN_READ, &from) < 0 ||
      caterva_schunk_vlmeta_get(ctx, caterva_array_schunk(from), ATTR, &v, &len) < 0 ||
      caterva_array_open(ctx, argv[2], CATERVA_OPEN_WRITE, &to) < 0)
    goto leave;
  sc = caterva_array_schunk(to);
  if (caterva_schunk_begin(ctx, sc) < 0 || caterva_schunk_vlmeta_set(ctx, sc, ATTR, v, len) < 0 ||
      caterva_schunk_commit(ctx, sc, 1) < 0)
    goto leave;
  rc = 0;
leave:
  if (rc != 0) fprintf(stderr, "cpstats: %s\n", ctx ? caterva_ctx_errmsg(ctx) : "no context");
  free(v);
  caterva_array_free(from);
  caterva_array_free(to);
  caterva_ctx_free(ctx);
  return rc;
}
