/*
 * frame_remote_open.c -- opening a frame on an HTTP(S) server or in S3: which kind of frame
 * the URL holds (a contiguous frame, else `<url>/chunks.b2frame`, a sparse frame), its header,
 * offsets index and trailer fetched in the open's waves (a large one read by range:
 * frame_remote_tail.c), and the checks of a writer's open. The store those fill is
 * frame_remote.c's.
 */
#include "frame_remote_internal.h"

/* Bytes off .. off + len - 1 of url into dst, one request; g holds the answer's version. */
static int get_range(caterva_ctx *ctx, cat_rstore *rs, cat_get *g, const char *url, int64_t off,
                     int64_t len, uint8_t *dst) {
  memset(g, 0, sizeof *g);
  g->url = url;
  g->off = off;
  g->len = len;
  g->dst = dst;
  return cat_remote_get(ctx, rs->rm, g, 1);
}

/* The rest of chunks.b2frame after the probe's len bytes, fetched whole into *frame (which
 * grows to the object's size). */
static int sparse_rest(caterva_ctx *ctx, cat_rstore *rs, cat_get *probe) {
  cat_get more;
  uint8_t *frame;
  int rc = CATERVA_OK;
  CAT_CHECK(leave, probe->size <= INT32_MAX, CATERVA_E_CORRUPT,
            "'%s' is too large for an index", probe->url);
  frame = realloc(probe->dst, (size_t)probe->size);
  CAT_CHECK(leave, frame != NULL, CATERVA_E_NOMEM, "out of memory");
  probe->dst = frame;
  CAT_TRY(leave, get_range(ctx, rs, &more, probe->url, probe->got, probe->size - probe->got,
                           frame + probe->got));
  probe->got = probe->size;
leave:
  return rc;
}

/* A reader's large chunks.b2frame (more after its header than the two first requests of
 * cat_rs_open_tail): its index and trailer read by range, the block statistics when asked
 * for. 1 when done so, 0 when it is to be fetched whole. Writers fetch it whole: their commit
 * rewrites every entry and record. */
static int sparse_by_range(caterva_ctx *ctx, caterva_schunk *sc, cat_rstore *rs,
                           cat_get *probe) {
  int rc;
  if (sc->writable || probe->size <= probe->got) return 0;
  rc = cat_frame_parse_header_part(ctx, sc, probe->dst, (size_t)probe->got, (size_t)probe->size,
                                   CAT_FRAME_SPARSE);
  if (rc == CATERVA_E_NOSPACE) return 0; /* a header longer than the probe */
  if (rc < 0) return rc;
  if (sc->frame_len != probe->size)
    return cat_error(ctx, CATERVA_E_CORRUPT, "'%s' holds %lld bytes, its header says %lld",
                     probe->url, (long long)probe->size, (long long)sc->frame_len);
  if (sc->frame_len - sc->header_len <= CAT_RTAIL_HEAD + CAT_RTAIL_END) return 0;
  rc = cat_rs_open_tail(ctx, sc, rs, sc->header_len, probe->dst, probe->got);
  return rc < 0 ? rc : 1;
}

static int open_sparse(caterva_ctx *ctx, caterva_schunk *sc, cat_rstore *rs, cat_get *probe) {
  int64_t tstart = 0;
  int rc = CATERVA_OK;
  sc->store = CATERVA_STORE_SPARSE;
  snprintf(rs->version, sizeof rs->version, "%s", probe->version);
  rs->index_mtime = probe->mtime;
  rs->iurl = strdup(probe->url);
  CAT_CHECK(leave, rs->iurl != NULL, CATERVA_E_NOMEM, "out of memory");
  CAT_TRY(leave, rc = sparse_by_range(ctx, sc, rs, probe));
  if (rc == 1) {
    rc = CATERVA_OK;
    goto leave;
  }
  if (probe->size > probe->got) CAT_TRY(leave, sparse_rest(ctx, rs, probe)); /* a second wave */
  CAT_TRY(leave, cat_frame_parse_header(ctx, sc, probe->dst, (size_t)probe->got,
                                        CAT_FRAME_SPARSE));
  CAT_TRY(leave, cat_frame_parse_trailer(ctx, sc, probe->dst, sc->header_len, &tstart));
  CAT_TRY(leave, cat_frame_parse_index(ctx, sc, probe->dst, sc->header_len,
                                       tstart - sc->header_len));
  rc = CATERVA_OK;
leave:
  return rc;
}

static int open_contiguous(caterva_ctx *ctx, caterva_schunk *sc, cat_rstore *rs,
                           cat_get *probe) {
  uint8_t *tail = NULL, *head = probe->dst;
  int64_t have = probe->got, idx, tstart = 0, wstart;
  int rc = CATERVA_OK;
  sc->store = CATERVA_STORE_CONTIGUOUS;
  snprintf(rs->version, sizeof rs->version, "%s", probe->version);
  CAT_CHECK(leave, have >= CAT_FH_SIZE, CATERVA_E_CORRUPT, "'%s' is too short for a frame",
            rs->url);
  /* the header's fixed part says how long the whole header is */
  CAT_CHECK(leave, probe->size >= have, CATERVA_E_REMOTE, "'%s': the server gave no size",
            rs->url);
  rc = cat_frame_parse_header_part(ctx, sc, head, (size_t)have, (size_t)probe->size,
                                   CAT_FRAME_CONTIGUOUS);
  if (rc == CATERVA_E_NOSPACE) { /* a header longer than the probe: fetch the rest */
    cat_get g;
    CAT_CHECK(leave, sc->header_len <= INT32_MAX, CATERVA_E_CORRUPT, "header too long");
    head = realloc(probe->dst, (size_t)sc->header_len);
    CAT_CHECK(leave, head != NULL, CATERVA_E_NOMEM, "out of memory");
    probe->dst = head;
    CAT_TRY(leave, get_range(ctx, rs, &g, rs->url, have, sc->header_len - have, head + have));
    have = sc->header_len;
    rc = cat_frame_parse_header_part(ctx, sc, head, (size_t)have, (size_t)probe->size,
                                     CAT_FRAME_CONTIGUOUS);
  }
  CAT_TRY(leave, rc);
  CAT_CHECK(leave, probe->size < 0 || probe->size >= sc->frame_len, CATERVA_E_CORRUPT,
            "'%s' holds %lld bytes, its header says %lld", rs->url, (long long)probe->size,
            (long long)sc->frame_len);
  CAT_CHECK(leave, sc->cbytes <= sc->frame_len - sc->header_len - CAT_TRAILER_MIN,
            CATERVA_E_CORRUPT, "frame: chunk section of %lld bytes exceeds the frame",
            (long long)sc->cbytes);
  sc->section = sc->cbytes;
  idx = sc->header_len + sc->cbytes;
  if (have < sc->frame_len && sc->nchunks > 0 &&
      sc->frame_len - idx > CAT_RTAIL_HEAD + CAT_RTAIL_END) {
    CAT_CHECK(leave, sc->frame_len - idx <= INT32_MAX, CATERVA_E_UNSUPPORTED,
              "'%s': index and trailer of %lld bytes", rs->url, (long long)(sc->frame_len - idx));
    rc = cat_rs_open_tail(ctx, sc, rs, idx, probe->dst, probe->got);
    goto leave;
  }
  if (have >= sc->frame_len) {
    wstart = 0;
    tail = head;
  } else { /* the index and the trailer: a second wave */
    cat_get g;
    CAT_CHECK(leave, sc->frame_len - idx <= INT32_MAX, CATERVA_E_UNSUPPORTED,
              "'%s': index and trailer of %lld bytes", rs->url, (long long)(sc->frame_len - idx));
    wstart = idx;
    tail = malloc((size_t)(sc->frame_len - idx));
    CAT_CHECK(leave, tail != NULL, CATERVA_E_NOMEM, "out of memory");
    CAT_TRY(leave, get_range(ctx, rs, &g, rs->url, idx, sc->frame_len - idx, tail));
    CAT_CHECK(leave, rs->version[0] == '\0' || strcmp(g.version, rs->version) == 0,
              CATERVA_E_IO, "'%s' changed while it was being opened", rs->url);
  }
  CAT_TRY(leave, cat_frame_parse_trailer_at(ctx, sc, tail, wstart, idx, &tstart));
  CAT_TRY(leave, cat_frame_parse_index(ctx, sc, tail + (idx - wstart), 0, tstart - idx));
  rc = CATERVA_OK;
leave:
  if (tail != head) free(tail);
  return rc;
}

/* The first CAT_RPROBE bytes of url into g (a 403, 404 or redirect is an empty answer). */
static int probe_get(caterva_ctx *ctx, cat_rstore *rs, cat_get *g, const char *url) {
  memset(g, 0, sizeof *g);
  g->url = url;
  g->len = CAT_RPROBE;
  g->short_ok = true;
  g->missing_ok = true;
  g->dst = malloc(CAT_RPROBE);
  if (g->dst == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  return cat_remote_get(ctx, rs->rm, g, 1);
}

static bool answered(const cat_get *g) { return g->status == 200 || g->status == 206; }

/* Do the probe's bytes start like a frame (the msgpack header's magic)? */
static bool looks_like_frame(const cat_get *g) {
  return answered(g) && g->got >= 10 && memcmp(g->dst + 2, "b2frame", 8) == 0;
}

/* Which kind of frame is at rs->url, with its header (and, when small, all of it): the URL
 * itself is asked first -- a contiguous frame, one request -- and only when that is not a
 * frame, `<url>/chunks.b2frame` (a sparse frame; asked first when the URL ends with '/'). */
static int open_kind(caterva_ctx *ctx, caterva_schunk *sc, cat_rstore *rs, cat_get *g,
                     const char *iurl) {
  size_t n = strlen(rs->url);
  int rc = CATERVA_OK;
  bool dir = n > 0 && rs->url[n - 1] == '/';
  if (!dir) {
    CAT_TRY(leave, probe_get(ctx, rs, &g[0], rs->url));
    if (looks_like_frame(&g[0])) return open_contiguous(ctx, sc, rs, &g[0]);
  }
  CAT_TRY(leave, probe_get(ctx, rs, &g[1], iurl));
  if (answered(&g[1])) return open_sparse(ctx, sc, rs, &g[1]);
  if (!dir && answered(&g[0])) /* not a frame: the header parser says why */
    return open_contiguous(ctx, sc, rs, &g[0]);
  for (int k = dir; k < 2; k++) /* 416 to a range from byte 0: the object exists, empty */
    CAT_CHECK(leave, g[k].status != 416, CATERVA_E_CORRUPT,
              "'%s' is an empty object (0 bytes), not a Blosc2 frame", g[k].url);
  rc = cat_error(ctx, g[dir].status == 404 ? CATERVA_E_NOTFOUND : CATERVA_E_REMOTE, "%s",
                 g[dir].errmsg[0] ? g[dir].errmsg : "not found");
leave:
  return rc;
}

/* A remote frame opened for writing: a sparse frame in S3 whose index has an ETag. New chunk
 * numbers start above every one its index names (a number taken by an object no index names
 * is found at the commit: its PUT fails with 412 and takes another). */
static int check_writable(caterva_ctx *ctx, caterva_schunk *sc, const char *path) {
  int rc = CATERVA_OK;
  CAT_CHECK(leave, cat_path_is_s3(path), CATERVA_E_READONLY,
            "'%s': http(s):// arrays are read-only; arrays are written to "
            "s3://bucket/prefix/ (a sparse frame)", path);
  CAT_CHECK(leave, sc->store == CATERVA_STORE_SPARSE, CATERVA_E_READONLY,
            "'%s' is a contiguous frame (one object), which is read-only in S3: convert it to a "
            "sparse prefix, e.g. SELECT caterva_copy('%s', 's3://bucket/prefix/'), and write "
            "there", path, path);
  CAT_CHECK(leave, sc->remote->version[0] != '\0', CATERVA_E_UNSUPPORTED,
            "'%s': the server gives no ETag for chunks.b2frame: no conditional commit possible",
            path);
  sc->next_file = 0;
  for (int64_t i = 0; i < sc->nchunks; i++)
    if (sc->entries[i] >= sc->next_file) sc->next_file = sc->entries[i] + 1;
leave:
  return rc;
}

/* A new remote store for path attached to sc (sc owns it from here, whatever follows). */
static int rstore_attach(caterva_ctx *ctx, caterva_schunk *sc, const char *path,
                         const caterva_remote_opts *o, cat_rstore **out) {
  cat_rstore *rs = calloc(1, sizeof *rs);
  int rc = CATERVA_OK;
  *out = rs;
  CAT_CHECK(leave, rs != NULL, CATERVA_E_NOMEM, "out of memory");
  pthread_mutex_init(&rs->mu, NULL);
  sc->remote = rs;
  CAT_TRY(leave, cat_remote_new(ctx, path, o, &rs->rm, &rs->url));
  rs->budget = cat_remote_cache_budget(rs->rm);
leave:
  return rc;
}

int cat_remote_open_new(caterva_ctx *ctx, caterva_schunk *sc, const char *path,
                        const caterva_remote_opts *o) {
  cat_rstore *rs;
  int rc = CATERVA_OK;
  CAT_CHECK(leave, cat_path_is_s3(path), CATERVA_E_READONLY,
            "'%s': http(s):// URLs are read-only; arrays are written to s3://bucket/prefix/",
            path);
  CAT_CHECK(leave, sc->store == CATERVA_STORE_SPARSE, CATERVA_E_INVALID,
            "'%s': arrays in S3 are sparse frames (a prefix of chunk objects)", path);
  CAT_TRY(leave, rstore_attach(ctx, sc, path, o, &rs));
  rs->index_mtime = -1;
leave:
  return rc;
}

int cat_remote_open(caterva_ctx *ctx, caterva_schunk *sc, const char *path,
                    const caterva_remote_opts *o) {
  cat_rstore *rs = NULL;
  cat_get g[2];
  char *iurl = NULL;
  int rc = CATERVA_OK;
  memset(g, 0, sizeof g);
  CAT_TRY(leave, rstore_attach(ctx, sc, path, o, &rs));
  iurl = cat_remote_sibling(rs->url, CAT_RSPARSE_INDEX);
  CAT_CHECK(leave, iurl != NULL, CATERVA_E_NOMEM, "out of memory");
  CAT_TRY(leave, open_kind(ctx, sc, rs, g, iurl));
  sc->wend = sc->frame_len;
  if (sc->writable) CAT_TRY(leave, check_writable(ctx, sc, path));
leave:
  free(g[0].dst);
  free(g[1].dst);
  free(iurl);
  return rc;
}
