/*
 * error.c -- error texts and messages (cat_error, cat_wrap_error), contexts and their
 * scratch memory.
 */
#include "cat_internal.h"

#include <stdio.h>
#include <stdlib.h>

static const char *const cat_errtext[] = {
    "success",                                  /* 0 */
    "invalid argument",                         /* -1 */
    "out of memory",                            /* -2 */
    "corrupt data",                             /* -3 */
    "unsupported feature",                      /* -4 */
    "input/output error",                       /* -5 */
    "output buffer too small",                  /* -6 */
    "index out of range",                       /* -7 */
    "codec error",                              /* -8 */
    "not found",                                /* -9 */
    "already exists",                           /* -10 */
    "size overflow",                            /* -11 */
    "cannot start thread",                      /* -12 */
    "read-only",                                /* -13 */
    "locked by another writer",                 /* -14 */
    "interrupted",                              /* -15 */
    "remote request failed",                    /* -16 */
    "changed since it was opened",              /* -17 */
};

const char *caterva_strerror(int rc) {
  if (rc > 0 || rc <= CATERVA_E_LAST_) return "unknown error";
  return cat_errtext[-rc];
}

int cat_error(caterva_ctx *ctx, int rc, const char *fmt, ...) {
  va_list ap;
  if (ctx == NULL) return rc;
  va_start(ap, fmt);
  vsnprintf(ctx->errmsg, sizeof ctx->errmsg, fmt, ap);
  va_end(ap);
  return rc;
}

int cat_wrap_error(caterva_ctx *ctx, int rc, const char *what) {
  char msg[CAT_ERRMSG_SIZE];
  snprintf(msg, sizeof msg, "%s", ctx != NULL ? ctx->errmsg : "");
  if (msg[0] == '\0') snprintf(msg, sizeof msg, "%s", caterva_strerror(rc));
  return cat_error(ctx, rc, "%s: %s", what, msg);
}

void caterva_cparams_init(caterva_cparams *cp) {
  memset(cp, 0, sizeof *cp);
  cp->codec = CATERVA_ZSTD;
  cp->clevel = 5;
  cp->typesize = 8;
  cp->blocksize = 0;
  cp->splitmode = CATERVA_SPLIT_FORWARD_COMPAT;
  cp->filters[CATERVA_MAX_FILTERS - 1] = CATERVA_SHUFFLE;
}

int caterva_ctx_new(int nthreads, caterva_ctx **out) {
  caterva_ctx *ctx = NULL;
  int rc = CATERVA_OK;

  *out = NULL;
  if (nthreads < 1) nthreads = 1;
  ctx = calloc(1, sizeof *ctx);
  if (ctx == NULL) return CATERVA_E_NOMEM;
  ctx->nthreads = nthreads;
  ctx->scratch = calloc((size_t)nthreads, sizeof *ctx->scratch);
  if (ctx->scratch == NULL) {
    rc = CATERVA_E_NOMEM;
    goto fail;
  }
  if (nthreads > 1) {
    rc = cat_pool_new(nthreads, &ctx->pool);
    if (rc < 0) goto fail;
  }
  *out = ctx;
  return CATERVA_OK;
fail:
  caterva_ctx_free(ctx);
  return rc;
}

void caterva_ctx_free(caterva_ctx *ctx) {
  if (ctx == NULL) return;
  cat_pool_free(ctx->pool);
  if (ctx->scratch != NULL) {
    for (int w = 0; w < ctx->nthreads; w++) {
      for (int k = 0; k < 4; k++) free(ctx->scratch[w].buf[k]);
      cat_codec_scratch_free(&ctx->scratch[w]);
    }
    free(ctx->scratch);
  }
  free(ctx);
}

int caterva_ctx_nthreads(const caterva_ctx *ctx) { return ctx->nthreads; }

const char *caterva_ctx_errmsg(const caterva_ctx *ctx) { return ctx->errmsg; }

void caterva_ctx_set_interrupt(caterva_ctx *ctx, int (*fn)(void *arg), void *arg) {
  ctx->interrupt = fn;
  ctx->interrupt_arg = arg;
}

int64_t caterva_ctx_blocks_decompressed(const caterva_ctx *ctx) {
  return __atomic_load_n(&ctx->blocks_decompressed, __ATOMIC_RELAXED);
}

uint8_t *cat_scratch_get(caterva_ctx *ctx, int w, int which, size_t n) {
  cat_scratch *s = &ctx->scratch[w];
  if (s->cap[which] < n) {
    /* Grow geometrically so alternating sizes do not reallocate every time. */
    size_t want = n < 4096 ? 4096 : n;
    if (want < s->cap[which] * 2 && s->cap[which] * 2 > s->cap[which]) want = s->cap[which] * 2;
    uint8_t *p = malloc(want);
    if (p == NULL) return NULL;
    free(s->buf[which]);
    s->buf[which] = p;
    s->cap[which] = want;
  }
  return s->buf[which];
}
