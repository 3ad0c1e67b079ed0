/*
 * ztable.c -- tables with one slot per chunk position (pointers to records or to cached
 * chunks) whose slots start zero and whose untouched pages stay out of memory.
 *
 * Such a table holds 8 bytes a chunk (8 MB at a million chunks), and a reader touches only
 * the slots of the positions it reads. From the heap, calloc zeroes it whole whenever glibc
 * reuses memory for it, which it does from the second open in a process on (the first free of
 * a large block raises its mmap threshold): 23 ms at a million chunks, a Dask worker's case.
 * So a table of ZT_MAP_MIN bytes or more is an anonymous map, whose pages are zero until
 * written. A table starts with a header of ZT_HDR bytes: its length in bytes and whether it
 * is a map, so that resize and free need no other record of it.
 */
#include "cat_internal.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define ZT_HDR 16
#define ZT_MAP_MIN ((size_t)1 << 20)

static bool zt_bytes(int64_t n, size_t elem, size_t *bytes) {
  if (n < 1) n = 1;
  if (elem == 0 || (uint64_t)n > (SIZE_MAX - ZT_HDR) / elem) return false;
  *bytes = ZT_HDR + (size_t)n * elem;
  return true;
}

static void *zt_at(uint8_t *base, size_t bytes, size_t mapped) {
  memcpy(base, &bytes, sizeof bytes);
  memcpy(base + sizeof bytes, &mapped, sizeof mapped);
  return base + ZT_HDR;
}

static uint8_t *zt_base(void *t, size_t *bytes, size_t *mapped) {
  uint8_t *base = (uint8_t *)t - ZT_HDR;
  memcpy(bytes, base, sizeof *bytes);
  memcpy(mapped, base + sizeof *bytes, sizeof *mapped);
  return base;
}

void *cat_ztable_new(int64_t n, size_t elem) {
  size_t bytes;
  uint8_t *base;
  if (!zt_bytes(n, elem, &bytes)) return NULL;
  if (bytes < ZT_MAP_MIN) {
    base = calloc(1, bytes);
    return base != NULL ? zt_at(base, bytes, 0) : NULL;
  }
  base = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return base != MAP_FAILED ? zt_at(base, bytes, 1) : NULL;
}

void *cat_ztable_resize(void *t, int64_t n, size_t elem) {
  size_t bytes, old, mapped;
  uint8_t *base;
  void *c;
  if (t == NULL) return cat_ztable_new(n, elem);
  if (!zt_bytes(n, elem, &bytes)) return NULL;
  base = zt_base(t, &old, &mapped);
  if (mapped) {
    base = mremap(base, old, bytes, MREMAP_MAYMOVE);
    return base != MAP_FAILED ? zt_at(base, bytes, 1) : NULL;
  }
  if (bytes < ZT_MAP_MIN) {
    base = realloc(base, bytes);
    return base != NULL ? zt_at(base, bytes, 0) : NULL;
  }
  c = cat_ztable_new(n, elem); /* grown past the heap's share: into a map */
  if (c == NULL) return NULL;
  memcpy(c, t, (old < bytes ? old : bytes) - ZT_HDR);
  free(base);
  return c;
}

void cat_ztable_free(void *t) {
  size_t bytes, mapped;
  uint8_t *base;
  if (t == NULL) return;
  base = zt_base(t, &bytes, &mapped);
  if (mapped) munmap(base, bytes);
  else free(base);
}
