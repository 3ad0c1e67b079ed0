/*
 * fetchahead.c -- a thread that fetches the next portion of a remote scan while the caller
 * reads the current one (array_iter.c plans the portions; frame_remote.c fetches them).
 *
 * One job at a time: cat_fa_submit hands the thread a list of wanted blocks (ownership
 * passes to the job), cat_fa_take waits for it and gives the list back when it is the one the
 * caller now needs. The thread fetches with a context of its own whose interrupt function
 * is a flag: the caller's interrupt function may be called only on the caller's thread (the
 * extension's asks SQLite), so the caller polls it while it waits for the job and raises the
 * flag, and raises it when it drops the job; the thread's transfers then stop within about
 * 50 ms. A job that failed for good (a request that exhausted its retries, a refusal, a
 * corrupt answer) is the caller's error when it takes the job, with the thread's message:
 * asking again, chunk after chunk, would pay the retry cycle once per pending chunk (issue 39:
 * a server gone in the middle of a scan failed the statement 23 s after it went). An
 * interrupted job, or one short of memory, is dropped: the caller fetches whatever is still
 * missing itself and reports what goes wrong then. A failed fetch-ahead never gives a wrong row.
 */
#include "cat_internal.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

enum { FA_IDLE, FA_QUEUED, FA_DONE };

struct cat_fetchahead {
  pthread_t thread;
  int started;
  pthread_mutex_t mu;
  pthread_cond_t cv;
  int state, quit;
  int cancel;            /* read by the thread's interrupt function (atomic) */
  caterva_ctx *wctx;
  /* the job */
  caterva_schunk *sc;
  cat_want *w;
  int n;
  int64_t tag, nchunks;
  int rc;                        /* the job's outcome, and its message when < 0 */
  char errmsg[CAT_ERRMSG_SIZE];
};

static int fa_cancelled(void *arg) {
  cat_fetchahead *fa = arg;
  return __atomic_load_n(&fa->cancel, __ATOMIC_RELAXED);
}

static void fa_cancel(cat_fetchahead *fa) { __atomic_store_n(&fa->cancel, 1, __ATOMIC_RELAXED); }

static void *fa_main(void *arg) {
  cat_fetchahead *fa = arg;
  int rc;
  pthread_mutex_lock(&fa->mu);
  for (;;) {
    while (!fa->quit && fa->state != FA_QUEUED) pthread_cond_wait(&fa->cv, &fa->mu);
    if (fa->quit) break;
    pthread_mutex_unlock(&fa->mu);
    rc = cat_sc_prefetch(fa->wctx, fa->sc, fa->w, fa->n); /* see the notes at the top */
    pthread_mutex_lock(&fa->mu);
    fa->rc = rc;
    if (rc < 0) snprintf(fa->errmsg, sizeof fa->errmsg, "%s", caterva_ctx_errmsg(fa->wctx));
    fa->state = FA_DONE;
    pthread_cond_broadcast(&fa->cv);
  }
  pthread_mutex_unlock(&fa->mu);
  return NULL;
}

cat_fetchahead *cat_fa_new(void) {
  cat_fetchahead *fa = calloc(1, sizeof *fa);
  if (fa == NULL) return NULL;
  if (caterva_ctx_new(1, &fa->wctx) != CATERVA_OK) {
    free(fa);
    return NULL;
  }
  caterva_ctx_set_interrupt(fa->wctx, fa_cancelled, fa);
  pthread_mutex_init(&fa->mu, NULL);
  pthread_cond_init(&fa->cv, NULL);
  return fa;
}

void cat_wants_free(cat_want *w, int n) {
  for (int k = 0; w != NULL && k < n; k++) {
    free((int32_t *)w[k].blocks);
    free((uint32_t *)w[k].starts);
  }
  free(w);
}

/* Wait for the job in flight, the lock held; every 50 ms the caller's interrupt function
 * (ctx, may be NULL) is asked, and when it says stop the thread is told to. */
static void fa_settle(cat_fetchahead *fa, caterva_ctx *ctx) {
  while (fa->state == FA_QUEUED) {
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_nsec += 50000000L;
    if (t.tv_nsec >= 1000000000L) t.tv_sec++, t.tv_nsec -= 1000000000L;
    (void)pthread_cond_timedwait(&fa->cv, &fa->mu, &t);
    if (fa->state == FA_QUEUED && cat_interrupted(ctx)) fa_cancel(fa);
  }
}

int cat_fa_submit(cat_fetchahead *fa, caterva_ctx *ctx, caterva_schunk *sc, cat_want *w,
                  int n, int64_t tag, int64_t nchunks) {
  int rc = CATERVA_OK;
  pthread_mutex_lock(&fa->mu);
  fa_settle(fa, ctx);
  if (!fa->started) {
    if (pthread_create(&fa->thread, NULL, fa_main, fa) != 0) {
      rc = CATERVA_E_THREAD;
      goto leave;
    }
    fa->started = 1;
  }
  cat_wants_free(fa->w, fa->n);
  __atomic_store_n(&fa->cancel, 0, __ATOMIC_RELAXED);
  fa->sc = sc;
  fa->w = w;
  fa->n = n;
  fa->tag = tag;
  fa->nchunks = nchunks;
  fa->rc = CATERVA_OK;
  fa->state = FA_QUEUED;
  pthread_cond_broadcast(&fa->cv);
leave:
  pthread_mutex_unlock(&fa->mu);
  return rc;
}

int cat_fa_take(cat_fetchahead *fa, caterva_ctx *ctx, int64_t tag, cat_want **w, int *n,
                int64_t *nchunks) {
  int had, failed;
  char msg[CAT_ERRMSG_SIZE];
  pthread_mutex_lock(&fa->mu);
  if (tag < 0) fa_cancel(fa); /* dropped: no need to finish it */
  fa_settle(fa, ctx);
  had = fa->state == FA_DONE && fa->tag == tag;
  /* failed for good: the caller's error (see the notes at the top) */
  failed = had && fa->rc < 0 && fa->rc != CATERVA_E_INTERRUPT && fa->rc != CATERVA_E_NOMEM
               ? fa->rc : 0;
  if (failed) snprintf(msg, sizeof msg, "%s", fa->errmsg);
  if (had && !failed) {
    *w = fa->w;
    *n = fa->n;
    *nchunks = fa->nchunks;
  } else {
    cat_wants_free(fa->w, fa->n);
  }
  fa->w = NULL;
  fa->n = 0;
  fa->state = FA_IDLE;
  pthread_mutex_unlock(&fa->mu);
  if (failed) return cat_error(ctx, failed, "%s", msg);
  return had;
}

void cat_fa_free(cat_fetchahead *fa) {
  if (fa == NULL) return;
  pthread_mutex_lock(&fa->mu);
  fa_cancel(fa);
  fa_settle(fa, NULL);
  fa->quit = 1;
  pthread_cond_broadcast(&fa->cv);
  pthread_mutex_unlock(&fa->mu);
  if (fa->started) pthread_join(fa->thread, NULL);
  cat_wants_free(fa->w, fa->n);
  pthread_mutex_destroy(&fa->mu);
  pthread_cond_destroy(&fa->cv);
  caterva_ctx_free(fa->wctx);
  free(fa);
}
