/*
 * wstore.c -- chunks compressed on a thread of their own while the caller fills the next
 * ones (write-behind for loads and UPDATEs).
 *
 * A load in C order completes chunk after chunk; compressing each on the thread that
 * produces the rows held that thread up to a fifth of its time. wcache_store.c hands a completed
 * image here (cat_ws_push); a worker compresses it with the array's parameters and computes
 * its block statistics, and wcache_store.c takes the results back in the order they were handed
 * over (cat_ws_pop) and stores them itself: the super-chunk, the statistics and every file
 * stay on the caller's thread, and the chunks reach the file in the same order as without
 * the worker, so the bytes written are the same.
 *
 * A job may also bring its own work (cat_ws_push_fn): wcache_store.c hands over so a chunk an
 * UPDATE has left written in part, to be patched against a copy of the stored chunk.
 *
 * The queue holds at most CAT_WS_DEPTH images and CAT_WS_BYTES (bounded memory: a transposed
 * load of the demo grid completes 13 chunks at once); a full queue makes the
 * caller wait for the oldest. Errors of a job (out of memory) come back with it and fail
 * the caller's next store, that is, its statement. Nothing here reads the array's state but
 * the parameters copied at push time and the statistics' item type, which do not change while
 * jobs are queued (every operation that could change them drains or discards the queue
 * first; see wcache_store.c and wcache.c).
 */
#include "array_layer_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CAT_WS_DEPTH 32
#define CAT_WS_BYTES (64 * 1024 * 1024)

enum { WS_QUEUED, WS_RUNNING, WS_DONE };

typedef struct ws_job {
  int state;                /* WS_* */
  cat_wdone d;              /* the result, handed to the caller by cat_ws_pop */
  caterva_cparams cp;       /* the array's chunk parameters */
  cat_geom g;               /* its geometry */
  const caterva_array *a;   /* for the statistics' item type (cat_bs_rec_compute) */
  cat_ws_fn fn;             /* NULL: compress d.img whole */
} ws_job;

struct cat_wstore {
  pthread_t thread;
  int started, quit;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  caterva_ctx *wctx;        /* the worker's context (one thread, its own codec state) */
  ws_job q[CAT_WS_DEPTH];   /* ring: jobs head .. head + n - 1, in the order handed over */
  int head, n, depth;
  uint64_t mask;            /* bit nchunk % 64 of every queued job (the caller's own: set and
                             * recomputed by push and pop on its thread) */
};

static ws_job *ws_at(cat_wstore *ws, int i) { return &ws->q[(ws->head + i) % CAT_WS_DEPTH]; }

/* The oldest queued job (the worker's) or the newest (a waiting caller's), NULL: none. */
static ws_job *ws_next(cat_wstore *ws, int newest) {
  for (int i = 0; i < ws->n; i++) {
    ws_job *j = ws_at(ws, newest ? ws->n - 1 - i : i);
    if (j->state == WS_QUEUED) return j;
  }
  return NULL;
}

void cat_ws_compress(caterva_ctx *ctx, cat_wdone *d, const caterva_cparams *cp,
                     const cat_geom *g, const caterva_array *a) {
  int32_t cap = g->chunksize + CATERVA_CHUNK_MAX_OVERHEAD;
  d->cbuf = malloc((size_t)cap);
  if (d->cbuf == NULL) {
    d->cbytes = CATERVA_E_NOMEM;
    snprintf(d->errmsg, sizeof d->errmsg, "out of memory");
    return;
  }
  d->cbytes = caterva_chunk_compress(ctx, cp, d->img, g->chunksize, d->cbuf, cap);
  if (d->cbytes < 0) {
    snprintf(d->errmsg, sizeof d->errmsg, "%s", caterva_ctx_errmsg(ctx));
    return;
  }
  d->rec = cat_bs_rec_compute(a, g, d->nchunk, d->img, d->cbuf, d->cbytes);
}

static void ws_run(caterva_ctx *ctx, ws_job *j) {
  (j->fn != NULL ? j->fn : cat_ws_compress)(ctx, &j->d, &j->cp, &j->g, j->a);
}

static void *ws_main(void *arg) {
  cat_wstore *ws = arg;
  pthread_mutex_lock(&ws->mu);
  for (;;) {
    ws_job *j;
    while (!ws->quit && (j = ws_next(ws, 0)) == NULL) pthread_cond_wait(&ws->cv, &ws->mu);
    if (ws->quit) break;
    j->state = WS_RUNNING;
    pthread_mutex_unlock(&ws->mu);
    ws_run(ws->wctx, j);
    pthread_mutex_lock(&ws->mu);
    j->state = WS_DONE;
    pthread_cond_broadcast(&ws->cv);
  }
  pthread_mutex_unlock(&ws->mu);
  return NULL;
}

cat_wstore *cat_ws_new(int32_t chunksize) {
  cat_wstore *ws = calloc(1, sizeof *ws);
  if (ws == NULL) return NULL;
  if (caterva_ctx_new(1, &ws->wctx) != CATERVA_OK) {
    free(ws);
    return NULL;
  }
  ws->depth = chunksize > 0 ? CAT_WS_BYTES / chunksize : CAT_WS_DEPTH;
  ws->depth = ws->depth < 2 ? 2 : ws->depth > CAT_WS_DEPTH ? CAT_WS_DEPTH : ws->depth;
  pthread_mutex_init(&ws->mu, NULL);
  pthread_cond_init(&ws->cv, NULL);
  return ws;
}

int cat_ws_full(const cat_wstore *ws) { return ws->n >= ws->depth; }

int cat_ws_queued(const cat_wstore *ws) { return ws != NULL && ws->n > 0; }

int cat_ws_holds(const cat_wstore *ws, int64_t nchunk) {
  if (ws == NULL || !(ws->mask >> (nchunk & 63) & 1)) return 0;
  for (int i = 0; i < ws->n; i++)
    if (ws->q[(ws->head + i) % CAT_WS_DEPTH].d.nchunk == nchunk) return 1;
  return 0;
}

int cat_ws_push(cat_wstore *ws, const caterva_array *a, const caterva_cparams *cp,
                int64_t nchunk, uint8_t *img) {
  return cat_ws_push_fn(ws, a, cp, nchunk, img, NULL, NULL, NULL);
}

int cat_ws_push_fn(cat_wstore *ws, const caterva_array *a, const caterva_cparams *cp,
                   int64_t nchunk, uint8_t *img, cat_ws_fn fn, void *arg,
                   void (*arg_free)(void *arg)) {
  int rc = CATERVA_OK;
  pthread_mutex_lock(&ws->mu);
  if (ws->n >= ws->depth) {
    rc = CATERVA_E_INVALID; /* the caller pops first */
    goto leave;
  }
  if (!ws->started) {
    if (pthread_create(&ws->thread, NULL, ws_main, ws) != 0) {
      rc = CATERVA_E_THREAD;
      goto leave;
    }
    ws->started = 1;
  }
  ws_job *j = &ws->q[(ws->head + ws->n) % CAT_WS_DEPTH];
  memset(j, 0, sizeof *j);
  j->state = WS_QUEUED;
  j->d.nchunk = nchunk;
  j->d.img = img;
  j->cp = *cp;
  j->g = a->g;
  j->a = a;
  j->fn = fn;
  j->d.arg = arg;
  j->d.arg_free = arg_free;
  ws->n++;
  ws->mask |= (uint64_t)1 << (nchunk & 63);
  pthread_cond_broadcast(&ws->cv);
leave:
  pthread_mutex_unlock(&ws->mu);
  return rc;
}

int cat_ws_pop(cat_wstore *ws, caterva_ctx *ctx, int wait, cat_wdone *out) {
  int got = 0;
  pthread_mutex_lock(&ws->mu);
  while (wait && ws->n > 0 && ws_at(ws, 0)->state != WS_DONE) {
    /* a caller that must wait compresses the newest queued chunk itself meanwhile (the
     * last chunks of a load complete together: the worker alone would take them in turn) */
    ws_job *j = ctx != NULL ? ws_next(ws, 1) : NULL;
    if (j == NULL) {
      pthread_cond_wait(&ws->cv, &ws->mu);
      continue;
    }
    j->state = WS_RUNNING;
    pthread_mutex_unlock(&ws->mu);
    ws_run(ctx, j);
    pthread_mutex_lock(&ws->mu);
    j->state = WS_DONE;
  }
  if (ws->n > 0 && ws_at(ws, 0)->state == WS_DONE) {
    *out = ws_at(ws, 0)->d;
    ws->head = (ws->head + 1) % CAT_WS_DEPTH;
    ws->n--;
    ws->mask = 0;
    for (int i = 0; i < ws->n; i++) ws->mask |= (uint64_t)1 << (ws_at(ws, i)->d.nchunk & 63);
    got = 1;
  }
  pthread_mutex_unlock(&ws->mu);
  return got;
}

void cat_ws_done_free(cat_wdone *d) {
  if (d->arg != NULL && d->arg_free != NULL) d->arg_free(d->arg);
  free(d->cbuf);
  cat_bs_rec_drop(d->rec);
  memset(d, 0, sizeof *d);
}

void cat_ws_discard(cat_wstore *ws, cat_imgpool *pool) {
  cat_wdone d;
  while (ws != NULL && cat_ws_pop(ws, NULL, 1, &d)) {
    cat_imgpool_put(pool, d.img);
    cat_ws_done_free(&d);
  }
}

void cat_ws_free(cat_wstore *ws, cat_imgpool *pool) {
  if (ws == NULL) return;
  cat_ws_discard(ws, pool);
  pthread_mutex_lock(&ws->mu);
  ws->quit = 1;
  pthread_cond_broadcast(&ws->cv);
  pthread_mutex_unlock(&ws->mu);
  if (ws->started) pthread_join(ws->thread, NULL);
  pthread_mutex_destroy(&ws->mu);
  pthread_cond_destroy(&ws->cv);
  caterva_ctx_free(ws->wctx);
  free(ws);
}
