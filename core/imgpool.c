/*
 * imgpool.c -- the write cache's chunk images, carved from slabs that transparent huge pages
 * can back.
 *
 * A load whose rows come in a transposed order (time fastest) writes each row into another
 * 4 KiB page of the chunk images (a block row apart): with images of about a megabyte,
 * malloc'ed one by one (separate mappings, never 2 MiB-aligned), every such row paid a TLB
 * miss. Images of 256 KiB or more are therefore taken from slabs of about 8 MiB, aligned to
 * 2 MiB and advised MADV_HUGEPAGE (a hint: the kernel may back them with small pages), and
 * given back to a free list; the slabs are released with the pool. Smaller images are plain
 * malloc/free. Measured: the transposed load of 365x180x360 float32 in the shell went from
 * 3.62-3.72 s to 3.10-3.18 s (same machine, alternating builds).
 *
 * A released slab is kept for the next pool of the process (a load after a load, a table
 * after a table), up to SLAB_KEEP bytes in all (the oldest go first), advised MADV_FREE: its
 * pages stay where they are unless the kernel needs the memory, so the next pool's images are
 * not fresh pages that the kernel zeroes on the writing thread (a transposed load of 200^3
 * float64 completes 8 of its 16 chunks at once and needs 16 images, 66 MB: zeroing them took
 * that thread about 0.12 s per load). Pages the kernel took back come back zeroed on their
 * first write, as fresh ones do.
 */
#include "array_layer_internal.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#if defined(__linux__)
#include <sys/mman.h>
#endif

#define POOL_MIN_IMAGE ((size_t)256 << 10)
#define POOL_ALIGN ((size_t)2 << 20)
#define POOL_SLAB_TARGET ((size_t)8 << 20)
#define SLAB_KEEP ((size_t)128 << 20)
#define SLAB_KEEP_N 64

/* ---- slabs, and the process's released ones ---------------------------------------------- */

typedef struct kept_slab {
  void *p;
  size_t bytes;
} kept_slab;

static pthread_mutex_t keep_mu = PTHREAD_MUTEX_INITIALIZER;
static kept_slab keep[SLAB_KEEP_N]; /* oldest first */
static int nkeep;
static size_t keep_bytes;
static pthread_once_t keep_once = PTHREAD_ONCE_INIT;

/* A fork waits until no other thread holds keep_mu, so that the child's copy of it is free
 * (a child that takes or frees slabs would otherwise wait for a thread it does not have).
 * glibc drops these handlers when a dlopen'ed library that set them is unloaded. */
static void keep_lock(void) { pthread_mutex_lock(&keep_mu); }
static void keep_unlock(void) { pthread_mutex_unlock(&keep_mu); }
static void keep_atfork(void) { (void)pthread_atfork(keep_lock, keep_unlock, keep_unlock); }

static void keep_enter(void) {
  (void)pthread_once(&keep_once, keep_atfork);
  keep_lock();
}

void cat_imgpool_test_hold(int hold) {
  if (hold) keep_enter();
  else keep_unlock();
}

#if defined(__linux__)
/* bytes (a multiple of POOL_ALIGN) at a POOL_ALIGN boundary: a map cut to the boundary. */
static void *slab_map(size_t bytes) {
  uint8_t *m = mmap(NULL, bytes + POOL_ALIGN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
                    -1, 0);
  size_t head;
  if (m == MAP_FAILED) return NULL;
  head = (POOL_ALIGN - ((uintptr_t)m & (POOL_ALIGN - 1))) & (POOL_ALIGN - 1);
  if (head > 0) munmap(m, head);
  munmap(m + head + bytes, POOL_ALIGN - head);
#if defined(MADV_HUGEPAGE)
  (void)madvise(m + head, bytes, MADV_HUGEPAGE);
#endif
  return m + head;
}

static void slab_unmap(void *slab, size_t bytes) { munmap(slab, bytes); }
#else
static void *slab_map(size_t bytes) {
  void *slab = NULL;
  return posix_memalign(&slab, POOL_ALIGN, bytes) == 0 ? slab : NULL;
}

static void slab_unmap(void *slab, size_t bytes) {
  (void)bytes;
  free(slab);
}
#endif

/* Kept slab i out of the list (the order, oldest first, is kept). */
static kept_slab keep_remove(int i) {
  kept_slab k = keep[i];
  keep_bytes -= k.bytes;
  nkeep--;
  memmove(&keep[i], &keep[i + 1], (size_t)(nkeep - i) * sizeof keep[0]);
  return k;
}

/* A slab of bytes: the last one of that size the process released, else a new one (NULL:
 * no memory). */
static void *slab_take(size_t bytes) {
  void *slab = NULL;
  keep_enter();
  for (int i = nkeep - 1; i >= 0 && slab == NULL; i--)
    if (keep[i].bytes == bytes) slab = keep_remove(i).p;
  keep_unlock();
  return slab != NULL ? slab : slab_map(bytes);
}

/* Release a slab: kept for the next pool, the oldest kept ones unmapped to make room (the
 * slabs a process freed last are those its next statement takes); unmapped when it is
 * larger than all the room. */
static void slab_give(void *slab, size_t bytes) {
  kept_slab drop[SLAB_KEEP_N];
  int ndrop = 0;
#if defined(__linux__) && defined(MADV_FREE)
  if (bytes <= SLAB_KEEP && madvise(slab, bytes, MADV_FREE) == 0) {
    keep_enter();
    while (nkeep > 0 && (nkeep == SLAB_KEEP_N || keep_bytes + bytes > SLAB_KEEP))
      drop[ndrop++] = keep_remove(0);
    keep[nkeep++] = (kept_slab){slab, bytes};
    keep_bytes += bytes;
    keep_unlock();
    slab = NULL;
  }
#endif
  for (int i = 0; i < ndrop; i++) slab_unmap(drop[i].p, drop[i].bytes);
  if (slab != NULL) slab_unmap(slab, bytes);
}

/* ---- pools --------------------------------------------------------------------------------- */

struct cat_imgpool {
  size_t size;         /* bytes per image */
  size_t per;          /* images per slab (0: plain malloc) */
  void **slabs;        /* owned */
  int nslabs, capslabs;
  uint8_t **free;      /* free images, a stack */
  size_t nfree, capfree;
};

cat_imgpool *cat_imgpool_new(size_t size) {
  cat_imgpool *p = calloc(1, sizeof *p);
  if (p == NULL) return NULL;
  p->size = size;
  if (size >= POOL_MIN_IMAGE) p->per = size >= POOL_SLAB_TARGET ? 1 : POOL_SLAB_TARGET / size;
  return p;
}

static size_t slab_bytes(const cat_imgpool *p) {
  return (p->per * p->size + POOL_ALIGN - 1) & ~(POOL_ALIGN - 1);
}

/* A new slab's images onto the free list; 0, or -1 without memory. */
static int add_slab(cat_imgpool *p) {
  size_t bytes = slab_bytes(p);
  void *slab = NULL;
  if (p->nslabs == p->capslabs) {
    int cap = p->capslabs ? 2 * p->capslabs : 8;
    void **s = realloc(p->slabs, (size_t)cap * sizeof *s);
    if (s == NULL) return -1;
    p->slabs = s;
    p->capslabs = cap;
  }
  size_t total = ((size_t)p->nslabs + 1) * p->per; /* every image, once all are back */
  if (total > p->capfree) {
    size_t cap = p->capfree ? 2 * p->capfree : 16;
    while (cap < total) cap *= 2;
    uint8_t **f = realloc(p->free, cap * sizeof *f);
    if (f == NULL) return -1;
    p->free = f;
    p->capfree = cap;
  }
  if ((slab = slab_take(bytes)) == NULL) return -1;
  p->slabs[p->nslabs++] = slab;
  for (size_t i = p->per; i > 0; i--) p->free[p->nfree++] = (uint8_t *)slab + (i - 1) * p->size;
  return 0;
}

uint8_t *cat_imgpool_get(cat_imgpool *p) {
  if (p->per == 0) return malloc(p->size);
  if (p->nfree == 0 && add_slab(p) < 0) return NULL;
  return p->free[--p->nfree];
}

void cat_imgpool_put(cat_imgpool *p, uint8_t *img) {
  if (img == NULL) return;
  if (p->per == 0) {
    free(img);
    return;
  }
  /* room for every image of every slab was made when the slab was added */
  p->free[p->nfree++] = img;
}

void cat_imgpool_free(cat_imgpool *p) {
  if (p == NULL) return;
  for (int i = 0; i < p->nslabs; i++) slab_give(p->slabs[i], slab_bytes(p));
  free(p->slabs);
  free(p->free);
  free(p);
}
