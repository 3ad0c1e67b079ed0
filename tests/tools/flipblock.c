/*
 * flipblock.c -- damage one block of an array file on disk, for the block-check tests: the
 * byte in the middle of block NBLOCK's compressed bytes in chunk NCHUNK is XORed with MASK
 * (default 0x01), in the contiguous frame file or the sparse frame's chunk file that holds it.
 *
 *   flipblock PATH NCHUNK NBLOCK [MASK]
 *
 * Prints the file changed and the byte's offset in it. Exit status 0 on success.
 */
#include "caterva.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static uint32_t le32(const uint8_t *p) {
  return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Where the chunk's n bytes lie in file f (exactly once), or -1. */
static long find_once(const char *f, const uint8_t *chunk, size_t n) {
  FILE *fp = fopen(f, "rb");
  uint8_t *buf = NULL;
  long size, at = -1;
  int seen = 0;
  if (fp == NULL) return -1;
  if (fseek(fp, 0, SEEK_END) == 0 && (size = ftell(fp)) > 0 && (size_t)size >= n &&
      fseek(fp, 0, SEEK_SET) == 0 && (buf = malloc((size_t)size)) != NULL &&
      fread(buf, 1, (size_t)size, fp) == (size_t)size) {
    for (long i = 0; i + (long)n <= size; i++)
      if (buf[i] == chunk[0] && memcmp(buf + i, chunk, n) == 0 && seen++ == 0) at = i;
  }
  free(buf);
  fclose(fp);
  return seen == 1 ? at : -1;
}

static int flip(const char *f, long off, int mask) {
  FILE *fp = fopen(f, "r+b");
  int c, ok;
  if (fp == NULL) return -1;
  ok = fseek(fp, off, SEEK_SET) == 0 && (c = fgetc(fp)) != EOF && fseek(fp, off, SEEK_SET) == 0 &&
       fputc(c ^ mask, fp) != EOF;
  return fclose(fp) == 0 && ok ? 0 : -1;
}

int main(int argc, char **argv) {
  caterva_ctx *ctx = NULL;
  caterva_array *a = NULL;
  const uint8_t *chunk;
  uint8_t *copy = NULL;
  int32_t cbytes, nblocks, bsize, nbytes, nb;
  long at = -1;
  uint32_t lo, hi;
  char file[4096];
  struct stat st;
  int rc = 1, mask;
  if (argc != 4 && argc != 5) {
    fprintf(stderr, "usage: flipblock PATH NCHUNK NBLOCK [MASK]\n");
    return 2;
  }
  nb = atoi(argv[3]);
  mask = argc == 5 ? (int)strtol(argv[4], NULL, 0) : 1;
  if (caterva_ctx_new(1, &ctx) < 0 || caterva_array_open(ctx, argv[1], CATERVA_OPEN_READ, &a) < 0 ||
      caterva_schunk_get_chunk(ctx, caterva_array_schunk(a), atoll(argv[2]), &chunk, &cbytes) < 0) {
    fprintf(stderr, "flipblock: %s\n", ctx ? caterva_ctx_errmsg(ctx) : "no context");
    goto leave;
  }
  /* Blosc2 chunk header: nbytes at 4, blocksize at 8, the block-start table at 32 */
  nbytes = (int32_t)le32(chunk + 4);
  bsize = (int32_t)le32(chunk + 8);
  nblocks = bsize > 0 ? (nbytes + bsize - 1) / bsize : 0;
  if (cbytes < 32 + 4 * nblocks || nb < 0 || nb >= nblocks || (chunk[2] & 0x02)) {
    fprintf(stderr, "flipblock: no block %d in that chunk (or a memcpyed chunk)\n", nb);
    goto leave;
  }
  lo = le32(chunk + 32 + 4 * (size_t)nb);
  hi = nb + 1 < nblocks ? le32(chunk + 32 + 4 * (size_t)(nb + 1)) : (uint32_t)cbytes;
  copy = malloc((size_t)cbytes);
  if (copy == NULL || lo >= hi || hi > (uint32_t)cbytes) goto leave;
  memcpy(copy, chunk, (size_t)cbytes);
  caterva_array_free(a); /* the file's map goes before the file changes */
  a = NULL;
  if (stat(argv[1], &st) == 0 && S_ISDIR(st.st_mode)) {
    DIR *d = opendir(argv[1]);
    struct dirent *de;
    while (d != NULL && at < 0 && (de = readdir(d)) != NULL) {
      if (strstr(de->d_name, ".chunk") == NULL) continue;
      snprintf(file, sizeof file, "%s/%s", argv[1], de->d_name);
      at = find_once(file, copy, (size_t)cbytes);
    }
    if (d != NULL) closedir(d);
  } else {
    snprintf(file, sizeof file, "%s", argv[1]);
    at = find_once(file, copy, (size_t)cbytes);
  }
  if (at < 0 || flip(file, at + (long)(lo + (hi - lo) / 2), mask) < 0) {
    fprintf(stderr, "flipblock: the chunk's bytes were not found once in the file\n");
    goto leave;
  }
  printf("%s %ld\n", file, at + (long)(lo + (hi - lo) / 2));
  rc = 0;
leave:
  free(copy);
  caterva_array_free(a);
  caterva_ctx_free(ctx);
  return rc;
}
