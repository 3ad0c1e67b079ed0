/*
 * pool.c -- a fixed pool of worker threads that run batches of independent tasks.
 *
 * One batch at a time: cat_pool_run publishes (fn, arg, ntasks), wakes the workers, takes
 * tasks itself, and returns once every task has finished. Tasks are handed out through an
 * atomic counter, so a batch of uneven blocks balances itself.
 *
 * The caller waits for the batch's tasks, not for the workers: on a busy machine a worker
 * may be woken long after the caller has run every task itself, and waiting for it to check
 * in cost a scheduler time slice per batch (a reduction of the demo grid, some 340 batches,
 * took twice as long with 2 threads as with 1 while other processes held the second CPU). A
 * worker joins a batch under the mutex (`active`), and the next batch is published only when
 * no worker is inside the previous one, so a late worker never takes a task number of one
 * batch with the function of another; it finds the counter past the end and goes back to
 * sleep.
 *
 * Besides batches, a pool runs posted tasks (cat_pool_post): work the caller does not wait
 * for, taken by the first idle worker, batches first. cat_pool_free runs what is left of them
 * before it returns, so nothing posted outlives the pool.
 */
#include "cat_internal.h"

#include <pthread.h>
#include <stdlib.h>

/* A posted task (cat_pool_post), in a FIFO list under mu. */
typedef struct cat_post {
  void (*fn)(void *);
  void *arg;
  struct cat_post *next;
} cat_post;

struct cat_pool {
  int nthreads;            /* workers + the calling thread */
  pthread_t *threads;      /* nthreads - 1 workers */
  int nstarted;            /* workers actually started */
  pthread_mutex_t mu;
  pthread_cond_t wake;     /* a new batch, or shutdown */
  pthread_cond_t done;     /* the batch's last task finished, or the last worker left */
  uint64_t generation;     /* incremented per batch */
  bool shutdown;
  /* the current batch */
  cat_task_fn fn;
  void *arg;
  int64_t ntasks;
  int64_t next;            /* next task to hand out (atomic) */
  int64_t pending;         /* tasks not finished yet (atomic) */
  int active;              /* workers inside the batch (under mu) */
  int first_error;         /* first negative task result (atomic CAS) */
  cat_post *post_head, *post_tail; /* posted tasks not taken yet (under mu) */
};

/* The oldest posted task, out of the list (under mu), or NULL. */
static cat_post *post_take(cat_pool *pool) {
  cat_post *t = pool->post_head;
  if (t != NULL && (pool->post_head = t->next) == NULL) pool->post_tail = NULL;
  return t;
}

/* Run a posted task and free it. */
static void post_run(cat_post *t) {
  t->fn(t->arg);
  free(t);
}

typedef struct cat_worker_arg {
  cat_pool *pool;
  int id;
} cat_worker_arg;

/* Run tasks of the current batch until none is left; the one who finishes the last task
** tells the caller. */
static void cat_pool_drain(cat_pool *pool, cat_task_fn fn, void *arg, int64_t ntasks,
                           int worker) {
  for (;;) {
    int64_t t = __atomic_fetch_add(&pool->next, 1, __ATOMIC_RELAXED);
    if (t >= ntasks) break;
    int rc = fn(arg, t, worker);
    if (rc < 0) {
      int expected = 0;
      __atomic_compare_exchange_n(&pool->first_error, &expected, rc, false, __ATOMIC_RELAXED,
                                  __ATOMIC_RELAXED);
    }
    if (__atomic_sub_fetch(&pool->pending, 1, __ATOMIC_ACQ_REL) == 0) {
      pthread_mutex_lock(&pool->mu);
      pthread_cond_broadcast(&pool->done);
      pthread_mutex_unlock(&pool->mu);
    }
  }
}

static void *cat_worker_main(void *p) {
  cat_worker_arg *wa = p;
  cat_pool *pool = wa->pool;
  int id = wa->id;
  uint64_t seen = 0;
  free(wa);
  pthread_mutex_lock(&pool->mu);
  for (;;) {
    while (!pool->shutdown && pool->generation == seen && pool->post_head == NULL)
      pthread_cond_wait(&pool->wake, &pool->mu);
    if (pool->shutdown) break;
    if (pool->generation == seen) { /* a posted task */
      cat_post *t = post_take(pool);
      pthread_mutex_unlock(&pool->mu);
      post_run(t);
      pthread_mutex_lock(&pool->mu);
      continue;
    }
    seen = pool->generation;
    cat_task_fn fn = pool->fn;
    void *arg = pool->arg;
    int64_t ntasks = pool->ntasks;
    pool->active++;
    pthread_mutex_unlock(&pool->mu);
    cat_pool_drain(pool, fn, arg, ntasks, id);
    pthread_mutex_lock(&pool->mu);
    if (--pool->active == 0) pthread_cond_broadcast(&pool->done);
  }
  pthread_mutex_unlock(&pool->mu);
  return NULL;
}

int cat_pool_new(int nthreads, cat_pool **out) {
  cat_pool *pool;
  *out = NULL;
  pool = calloc(1, sizeof *pool);
  if (pool == NULL) return CATERVA_E_NOMEM;
  pool->nthreads = nthreads;
  pthread_mutex_init(&pool->mu, NULL);
  pthread_cond_init(&pool->wake, NULL);
  pthread_cond_init(&pool->done, NULL);
  pool->threads = calloc((size_t)nthreads, sizeof *pool->threads);
  if (pool->threads == NULL) goto fail;
  for (int i = 1; i < nthreads; i++) {
    cat_worker_arg *wa = malloc(sizeof *wa);
    if (wa == NULL) goto fail;
    wa->pool = pool;
    wa->id = i;
    if (pthread_create(&pool->threads[pool->nstarted], NULL, cat_worker_main, wa) != 0) {
      free(wa);
      cat_pool_free(pool);
      return CATERVA_E_THREAD;
    }
    pool->nstarted++;
  }
  *out = pool;
  return CATERVA_OK;
fail:
  cat_pool_free(pool);
  return CATERVA_E_NOMEM;
}

void cat_pool_free(cat_pool *pool) {
  if (pool == NULL) return;
  pthread_mutex_lock(&pool->mu);
  pool->shutdown = true;
  pthread_cond_broadcast(&pool->wake);
  pthread_mutex_unlock(&pool->mu);
  for (int i = 0; i < pool->nstarted; i++) pthread_join(pool->threads[i], NULL);
  for (cat_post *t; (t = post_take(pool)) != NULL;) post_run(t); /* posted, not taken */
  pthread_mutex_destroy(&pool->mu);
  pthread_cond_destroy(&pool->wake);
  pthread_cond_destroy(&pool->done);
  free(pool->threads);
  free(pool);
}

int cat_pool_post(cat_pool *pool, void (*fn)(void *), void *arg) {
  cat_post *t;
  if (pool == NULL || pool->nstarted == 0 || (t = malloc(sizeof *t)) == NULL) return -1;
  t->fn = fn;
  t->arg = arg;
  t->next = NULL;
  pthread_mutex_lock(&pool->mu);
  if (pool->post_tail != NULL) pool->post_tail->next = t;
  else pool->post_head = t;
  pool->post_tail = t;
  pthread_cond_signal(&pool->wake);
  pthread_mutex_unlock(&pool->mu);
  return 0;
}

int cat_pool_run(cat_pool *pool, int64_t ntasks, cat_task_fn fn, void *arg) {
  int rc = 0;
  if (pool == NULL || ntasks <= 1 || pool->nstarted == 0) {
    for (int64_t t = 0; t < ntasks; t++) {
      int r = fn(arg, t, 0);
      if (r < 0 && rc == 0) rc = r;
    }
    return rc;
  }
  pthread_mutex_lock(&pool->mu);
  /* a worker still inside the previous batch must leave it before next is reset */
  while (pool->active > 0) pthread_cond_wait(&pool->done, &pool->mu);
  pool->fn = fn;
  pool->arg = arg;
  pool->ntasks = ntasks;
  pool->next = 0;
  pool->pending = ntasks;
  pool->first_error = 0;
  pool->generation++;
  pthread_cond_broadcast(&pool->wake);
  pthread_mutex_unlock(&pool->mu);

  cat_pool_drain(pool, fn, arg, ntasks, 0);

  pthread_mutex_lock(&pool->mu);
  while (__atomic_load_n(&pool->pending, __ATOMIC_ACQUIRE) > 0)
    pthread_cond_wait(&pool->done, &pool->mu);
  rc = __atomic_load_n(&pool->first_error, __ATOMIC_RELAXED);
  pthread_mutex_unlock(&pool->mu);
  return rc;
}
