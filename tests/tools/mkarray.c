/*
 * mkarray.c -- write an array file from raw C-order bytes, for the SQL tests.
 *
 *   mkarray [-s] [-c codec] [-l clevel] [-n a,b,c] OUT RAW DTYPE SHAPE CHUNKS BLOCKS
 *
 * SHAPE, CHUNKS and BLOCKS are comma-separated lists ("" for a 0-d array); RAW holds
 * prod(SHAPE) items of DTYPE (a NumPy dtype string such as "<f8"). -s writes a sparse frame
 * (a directory), -c picks the codec (blosclz, lz4, lz4hc, zlib, zstd), -l the level and -n
 * stores dimension names. Exit status 0 on success.
 */
#include "caterva.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int parse_list(const char *s, int64_t *a, int max) {
  int n = 0;
  if (*s == 0) return 0;
  for (;;) {
    char *end;
    if (n >= max) return -1;
    a[n++] = strtoll(s, &end, 10);
    if (end == s) return -1;
    if (*end == 0) return n;
    if (*end != ',') return -1;
    s = end + 1;
  }
}

static int codec_id(const char *s) {
  if (strcmp(s, "blosclz") == 0) return CATERVA_BLOSCLZ;
  if (strcmp(s, "lz4") == 0) return CATERVA_LZ4;
  if (strcmp(s, "lz4hc") == 0) return CATERVA_LZ4HC;
  if (strcmp(s, "zlib") == 0) return CATERVA_ZLIB;
  if (strcmp(s, "zstd") == 0) return CATERVA_ZSTD;
  return -1;
}

static uint8_t *read_file(const char *path, long *len) {
  FILE *f = fopen(path, "rb");
  uint8_t *buf = NULL;
  if (f == NULL) return NULL;
  if (fseek(f, 0, SEEK_END) == 0 && (*len = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
    buf = malloc((size_t)*len + 1);
    if (buf && fread(buf, 1, (size_t)*len, f) != (size_t)*len) {
      free(buf);
      buf = NULL;
    }
  }
  fclose(f);
  return buf;
}

int main(int argc, char **argv) {
  caterva_array_params p;
  caterva_dtype_info info;
  caterva_ctx *ctx = NULL;
  caterva_array *a = NULL;
  int64_t shape[CATERVA_MAX_DIM], chunks[CATERVA_MAX_DIM], blocks[CATERVA_MAX_DIM];
  char *names[CATERVA_MAX_DIM], *namebuf = NULL;
  int opt, sparse = 0, codec = CATERVA_ZSTD, clevel = 5, ndim, k, rc = 1;
  const char *dimnames = NULL;
  uint8_t *raw = NULL;
  long rawlen = 0;
  while ((opt = getopt(argc, argv, "sc:l:n:")) != -1) {
    switch (opt) {
      case 's': sparse = 1; break;
      case 'c': codec = codec_id(optarg); break;
      case 'l': clevel = atoi(optarg); break;
      case 'n': dimnames = optarg; break;
      default: goto usage;
    }
  }
  if (argc - optind != 6 || codec < 0) goto usage;
  ndim = parse_list(argv[optind + 3], shape, CATERVA_MAX_DIM);
  if (ndim < 0 || parse_list(argv[optind + 4], chunks, CATERVA_MAX_DIM) != ndim ||
      parse_list(argv[optind + 5], blocks, CATERVA_MAX_DIM) != ndim)
    goto usage;
  if (caterva_dtype_parse(argv[optind + 2], &info) != CATERVA_OK || info.itemsize < 1) {
    fprintf(stderr, "mkarray: bad dtype %s\n", argv[optind + 2]);
    return 1;
  }
  raw = read_file(argv[optind + 1], &rawlen);
  if (raw == NULL) {
    fprintf(stderr, "mkarray: cannot read %s\n", argv[optind + 1]);
    return 1;
  }
  caterva_array_params_init(&p);
  p.ndim = ndim;
  for (k = 0; k < ndim; k++) {
    p.shape[k] = shape[k];
    p.chunkshape[k] = (int32_t)chunks[k];
    p.blockshape[k] = (int32_t)blocks[k];
  }
  p.itemsize = info.itemsize;
  p.dtype = argv[optind + 2];
  p.cparams.codec = codec;
  p.cparams.clevel = clevel;
  p.store = sparse ? CATERVA_STORE_SPARSE : CATERVA_STORE_CONTIGUOUS;
  p.path = argv[optind];
  if (caterva_ctx_new(1, &ctx) != CATERVA_OK) goto done;
  if (caterva_array_from_buffer(ctx, &p, raw, rawlen, &a) < 0) {
    fprintf(stderr, "mkarray: %s\n", caterva_ctx_errmsg(ctx));
    goto done;
  }
  if (dimnames) {
    char *s;
    namebuf = strdup(dimnames);
    for (k = 0, s = namebuf; k < ndim && s; k++) {
      names[k] = s;
      s = strchr(s, ',');
      if (s) *s++ = 0;
    }
    if (k != ndim || caterva_array_set_dim_names(ctx, a, (const char *const *)names) < 0) {
      fprintf(stderr, "mkarray: cannot store names: %s\n", caterva_ctx_errmsg(ctx));
      goto done;
    }
  }
  rc = 0;
done:
  caterva_array_free(a);
  caterva_ctx_free(ctx);
  free(raw);
  free(namebuf);
  return rc;
usage:
  fprintf(stderr, "usage: mkarray [-s] [-c codec] [-l clevel] [-n a,b,c] OUT RAW DTYPE SHAPE "
                  "CHUNKS BLOCKS\n");
  return 2;
}
