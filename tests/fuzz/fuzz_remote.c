/*
 * fuzz_remote.c -- libFuzzer target: open a remote array and query it (a slice, a scan, a
 * reduction, a version check), over http:// or s3:// (signed with credentials, with a session
 * token, or anonymous), contiguous or sparse, with every byte the "server" sends chosen by the
 * fuzzer. The library runs as for users -- libcurl parses the status lines, headers and
 * (chunked) bodies and signs S3 requests with SigV4, remote.c checks every answer,
 * frame_remote.c parses frame headers, indexes, chunk headers and blocks -- except that
 * libcurl's connections are sockets of a socketpair fed by this file (cat_remote_transport,
 * remote.h): no network, no waiting.
 *
 * Input: two scenario bytes, then answers, each [delay u8][piece u8][length u16 LE][bytes].
 *   byte 0: bit 0 the sparse array's name (else the contiguous one's), bit 1 the URL ends with
 *           '/', bits 2-3 http / s3 signed / s3 signed with a session token / s3 anonymous,
 *           bit 4 whole_chunks, bit 5 no retries, bit 6 a 1-byte cache.
 *   byte 1: bit 0 a slice, bit 1 a scan, bit 2 a reduction (whole box: from statistics), bit 3
 *           a reduction of a part (decoded), bit 4 caterva_schunk_stale (a HEAD), bit 5
 *           caterva_schunk_stale_later then a slice, bits 6-7 which boxes.
 * The n-th connection libcurl opens gets the n-th answer (none left: the server closes at
 * once), written after `delay` turns of the wave's loop, `piece` * 16 bytes a turn (0: all at
 * once), then the server's side is shut: answers of one wave arrive in the order the delays
 * say, cut where the pieces say; an answer longer than its Content-Length runs into the next
 * request on a reused connection, as from a broken server.
 *
 * libcurl 7.88 calls connect() even when the socket option callback says the socket is
 * connected already (newer versions do not): connect() is interposed here to succeed on the
 * sockets this file handed out, and passes every other call on.
 *
 * Checks beyond "no crash, no sanitizer report, no hang": a signed S3 request carries a SigV4
 * Authorization header, and every connection is closed when the array is.
 *
 * Recording seeds (tests/fuzz/record_remote.sh): with FUZZ_REMOTE_UPSTREAM=host:port and
 * FUZZ_REMOTE_RECORD=file, each connection's request is sent to that real server instead (with
 * "Connection: close" added, unsigned), its answer is passed on, and the input (the scenario
 * bytes and the answers in connection order) is written to file: replaying it gives the same
 * exchange.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RTLD_NEXT */
#endif
#include "caterva.h"
#include "caterva_array.h"
#include "remote.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FUZZ_MAX_BYTES (1 << 20)   /* a slice the target itself allocates */
#define FUZZ_MAX_CONNS 64   /* then connecting fails (cheaply) */
#define FUZZ_HOST "http://127.0.0.1:9"
#define FUZZ_BUCKET "caterva-test"  /* tests/remote/servers.py's, for recording */

typedef struct answer {
  const uint8_t *p;
  size_t n;
  int delay, piece;
} answer;

typedef struct conn {
  int mine, theirs;   /* the server's end, libcurl's end (-1: closed) */
  int ans;            /* index into answers, or -1: none */
  size_t pos;         /* bytes of the answer written */
  int wait;
  int shut;
  char req[4096];     /* the request, as far as read */
  size_t nreq;
} conn;

static struct {
  answer ans[FUZZ_MAX_CONNS];
  int nans;
  conn c[FUZZ_MAX_CONNS];
  int nc;
  int signed_s3;          /* requests must carry a SigV4 Authorization */
  /* recording */
  const char *upstream;
  uint8_t *rec[FUZZ_MAX_CONNS];
  size_t nrec[FUZZ_MAX_CONNS];
} T;

/* libcurl's connect() of a socket handed out here succeeds at once (see the top). */
int connect(int fd, const struct sockaddr *sa, socklen_t len) {
  static int (*next)(int, const struct sockaddr *, socklen_t);
  for (int i = 0; i < T.nc; i++)
    if (T.c[i].theirs == fd) return 0;
  if (next == NULL) *(void **)&next = dlsym(RTLD_NEXT, "connect");
  if (next == NULL) {
    errno = ENOSYS;
    return -1;
  }
  return next(fd, sa, len);
}

static int t_open(void *arg) {
  int sv[2];
  conn *c;
  (void)arg;
  if (T.nc >= FUZZ_MAX_CONNS) return -1;
  if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0) return -1;
  fcntl(sv[0], F_SETFL, O_NONBLOCK);
  c = &T.c[T.nc];
  memset(c, 0, sizeof *c);
  c->mine = sv[0];
  c->theirs = sv[1];
  c->ans = T.upstream != NULL ? -1 : T.nc < T.nans ? T.nc : -1;
  if (c->ans >= 0) c->wait = T.ans[c->ans].delay;
  T.nc++;
  return sv[1];
}

/* Read what libcurl sent on c (requests are small: they stay in the socket until then). */
static void read_request(conn *c) {
  ssize_t k;
  while (c->nreq < sizeof c->req - 1 &&
         (k = recv(c->mine, c->req + c->nreq, sizeof c->req - 1 - c->nreq, MSG_DONTWAIT)) > 0)
    c->nreq += (size_t)k;
  c->req[c->nreq] = '\0';
}

/* A signed session's every request carries a SigV4 signature made by libcurl. */
static void check_request(conn *c) {
  const char *r = c->req;
  if (!T.signed_s3 || c->nreq == 0) return;
  if (strncmp(r, "GET ", 4) != 0 && strncmp(r, "HEAD ", 5) != 0) return;
  if (strstr(r, "\r\n\r\n") == NULL) return; /* not all of it was sent */
  if (strstr(r, "Authorization: AWS4-HMAC-SHA256 Credential=") == NULL ||
      strstr(r, "Signature=") == NULL || strstr(r, "x-amz-content-sha256:") == NULL) {
    fprintf(stderr, "fuzz_remote: an unsigned request of a signed session:\n%s\n", r);
    abort();
  }
}

static void t_close(void *arg, int fd) {
  (void)arg;
  for (int i = 0; i < T.nc; i++)
    if (T.c[i].theirs == fd) {
      read_request(&T.c[i]);
      check_request(&T.c[i]);
      close(T.c[i].mine);
      T.c[i].mine = -1;
      T.c[i].theirs = -1;
    }
  close(fd);
}

/* ---- recording: the answer of a real server ------------------------------------------------ */

static int connect_upstream(void) {
  char host[64];
  const char *colon = strrchr(T.upstream, ':');
  struct sockaddr_in sa;
  int fd;
  if (colon == NULL || (size_t)(colon - T.upstream) >= sizeof host) return -1;
  snprintf(host, sizeof host, "%.*s", (int)(colon - T.upstream), T.upstream);
  memset(&sa, 0, sizeof sa);
  sa.sin_family = AF_INET;
  sa.sin_port = htons((uint16_t)atoi(colon + 1));
  if (inet_pton(AF_INET, host, &sa.sin_addr) != 1) return -1;
  if ((fd = socket(AF_INET, SOCK_STREAM, 0)) < 0) return -1;
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static void record_one(int i) {
  conn *c = &T.c[i];
  char *eol = strstr(c->req, "\r\n");
  uint8_t buf[65536], *all = NULL;
  size_t n = 0;
  ssize_t k;
  int fd = connect_upstream();
  if (fd < 0 || eol == NULL) {
    fprintf(stderr, "fuzz_remote: cannot reach %s\n", T.upstream);
    exit(2);
  }
  /* the request line, "Connection: close" (one answer per connection), the rest */
  if (write(fd, c->req, (size_t)(eol + 2 - c->req)) < 0 ||
      write(fd, "Connection: close\r\n", 19) < 0 ||
      write(fd, eol + 2, c->nreq - (size_t)(eol + 2 - c->req)) < 0)
    exit(2);
  while ((k = read(fd, buf, sizeof buf)) > 0) {
    all = realloc(all, n + (size_t)k);
    if (all == NULL) exit(2);
    memcpy(all + n, buf, (size_t)k);
    n += (size_t)k;
  }
  close(fd);
  if (n > 65535) {
    fprintf(stderr, "fuzz_remote: an answer of %zu bytes (at most 65535 recordable)\n", n);
    exit(2);
  }
  T.rec[i] = all;
  T.nrec[i] = n;
  T.ans[i].p = all;
  T.ans[i].n = n;
  c->ans = i;
}

/* ---- a turn: each connection gets the next piece of its answer ------------------------------- */

static void t_turn(void *arg) {
  (void)arg;
  for (int i = 0; i < T.nc; i++) {
    conn *c = &T.c[i];
    const answer *a;
    size_t want;
    ssize_t k;
    if (c->mine < 0 || c->shut) continue;
    if (T.upstream != NULL && c->ans < 0) {
      read_request(c);
      if (strstr(c->req, "\r\n\r\n") == NULL) continue;
      record_one(i);
    }
    if (c->ans < 0) { /* no answer: the server closes */
      shutdown(c->mine, SHUT_WR);
      c->shut = 1;
      continue;
    }
    if (c->wait > 0) {
      c->wait--;
      continue;
    }
    a = &T.ans[c->ans];
    want = a->n - c->pos;
    if (a->piece > 0 && want > (size_t)a->piece * 16) want = (size_t)a->piece * 16;
    if (want > 0) {
      k = send(c->mine, a->p + c->pos, want, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (k > 0) c->pos += (size_t)k;
      else if (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK) c->pos = a->n; /* gone */
    }
    if (c->pos >= a->n) {
      shutdown(c->mine, SHUT_WR);
      c->shut = 1;
    }
  }
}

/* ---- the input -------------------------------------------------------------------------------- */

static void parse_answers(const uint8_t *p, size_t n) {
  T.nans = 0;
  while (n >= 4 && T.nans < FUZZ_MAX_CONNS) {
    answer *a = &T.ans[T.nans++];
    size_t len = (size_t)p[2] | (size_t)p[3] << 8;
    a->delay = p[0] & 15;
    a->piece = p[1];
    p += 4, n -= 4;
    if (len > n) len = n;
    a->p = p;
    a->n = len;
    p += len, n -= len;
  }
}

/* ---- the queries ------------------------------------------------------------------------------ */

/* Box number v of a: [start, stop) inside the shape. */
static void box(caterva_array *a, int v, int64_t *start, int64_t *stop) {
  const int64_t *shape = caterva_array_shape(a);
  for (int k = 0; k < caterva_array_ndim(a); k++) {
    int64_t s = shape[k];
    switch (v) {
    case 0: start[k] = s / 4, stop[k] = s - s / 4; break;
    case 1: start[k] = 0, stop[k] = s; break;
    case 2: start[k] = s / 2, stop[k] = s / 2 + (s > 0); break;
    default: start[k] = s / 3, stop[k] = s; break;
    }
  }
}

static void slice(caterva_ctx *ctx, caterva_array *a, int v) {
  int64_t start[CATERVA_MAX_DIM], stop[CATERVA_MAX_DIM], bytes = caterva_array_itemsize(a);
  uint8_t *buf;
  box(a, v, start, stop);
  for (int k = 0; k < caterva_array_ndim(a); k++) {
    if (stop[k] - start[k] > FUZZ_MAX_BYTES) return;
    bytes *= stop[k] - start[k];
    if (bytes > FUZZ_MAX_BYTES) return;
  }
  buf = malloc((size_t)bytes + 1);
  if (buf != NULL) (void)caterva_array_get_slice(ctx, a, start, stop, buf, bytes);
  free(buf);
}

static void scan(caterva_ctx *ctx, caterva_array *a, int v) {
  int64_t start[CATERVA_MAX_DIM], stop[CATERVA_MAX_DIM];
  caterva_block_iter *it = NULL;
  const caterva_block *blk;
  int n = 0;
  box(a, v, start, stop);
  if (caterva_block_iter_new(ctx, a, start, stop, 0, &it) < 0) return;
  while (n++ < 4096 && caterva_block_iter_next(it, &blk) == 1) {
  }
  caterva_block_iter_free(it);
}

static void reduce(caterva_ctx *ctx, caterva_array *a, int v) {
  int64_t start[CATERVA_MAX_DIM], stop[CATERVA_MAX_DIM], lo[CATERVA_MAX_DIM],
      hi[CATERVA_MAX_DIM];
  caterva_reduce_dim d[CATERVA_MAX_DIM];
  caterva_reduce *r = NULL;
  int nd = caterva_array_ndim(a);
  box(a, v, start, stop);
  for (int k = 0; k < nd; k++) {
    if (stop[k] <= start[k]) return;
    memset(&d[k], 0, sizeof d[k]);
    d[k].mode = k == 0 && v == 0 ? CATERVA_RED_KEEP : CATERVA_RED_REDUCE;
    d[k].lo = lo[k] = start[k];
    d[k].hi = hi[k] = stop[k] - 1;
    if (d[k].mode == CATERVA_RED_KEEP && hi[k] - lo[k] > 4096) return;
  }
  if (caterva_reduce_new(ctx, a, d, 0, &r) < 0) return;
  if (caterva_reduce_add(ctx, r, lo, hi) == 0) {
    caterva_reduce_row row;
    for (int64_t i = 0; i < caterva_reduce_nrows(r); i++) caterva_reduce_get(r, i, &row);
  }
  caterva_reduce_free(r);
}

/* For tests of findings (replay_fuzz_remote.sh): FUZZ_REMOTE_EXPECT names a text one of the
 * input's errors must hold; FUZZ_REMOTE_DEBUG prints each step's message. */
static const char *expect;
static int expect_seen, debug;

static void step(caterva_ctx *ctx, const char *what) {
  const char *m = caterva_ctx_errmsg(ctx);
  if (debug) fprintf(stderr, "fuzz_remote: after %s: %s\n", what, m != NULL ? m : "");
  if (expect != NULL && m != NULL && strstr(m, expect) != NULL) expect_seen = 1;
}

static void queries(caterva_ctx *ctx, caterva_array *a, int q) {
  int v = (q >> 6) & 3;
  caterva_schunk *sc = caterva_array_schunk(a);
  if (q & 1) slice(ctx, a, v), step(ctx, "slice");
  if (q & 2) scan(ctx, a, v ^ 1), step(ctx, "scan");
  if (q & 4) reduce(ctx, a, 1), step(ctx, "reduction");
  if (q & 8) reduce(ctx, a, v == 1 ? 0 : v), step(ctx, "partial reduction");
  if (q & 16) (void)caterva_schunk_stale(ctx, sc), step(ctx, "stale");
  if (q & 32) {
    (void)caterva_schunk_stale_later(ctx, sc);
    if (caterva_schunk_verify(ctx, sc) == 0) slice(ctx, a, v ^ 2);
    step(ctx, "verify and slice");
  }
}

/* The environment of the scenario: S3 credentials (tests/remote/sigv4.py's, for recording). */
static void set_env(int proto) {
  unsetenv("AWS_SESSION_TOKEN");
  unsetenv("AWS_NO_SIGN_REQUEST");
  setenv("AWS_ACCESS_KEY_ID", proto == 2 ? "CATERVATESTKEY000002" : "CATERVATESTKEY000001", 1);
  setenv("AWS_SECRET_ACCESS_KEY", proto == 2 ? "caterva/Test+Secret/two/fedcba9876543210"
                                             : "caterva/Test+Secret/one/0123456789abcdef", 1);
  if (proto == 2) setenv("AWS_SESSION_TOKEN", "caterva-test-session-token-2", 1);
  if (proto == 3) setenv("AWS_NO_SIGN_REQUEST", "YES", 1);
}

static void write_recording(const char *path, const uint8_t *scen) {
  FILE *f = fopen(path, "wb");
  if (f == NULL) exit(2);
  fwrite(scen, 1, 2, f);
  for (int i = 0; i < T.nc; i++) {
    uint8_t h[4] = {0, 0, (uint8_t)(T.nrec[i] & 255), (uint8_t)(T.nrec[i] >> 8)};
    fwrite(h, 1, 4, f);
    if (T.nrec[i] > 0) fwrite(T.rec[i], 1, T.nrec[i], f);
    free(T.rec[i]);
    T.rec[i] = NULL;
    T.nrec[i] = 0;
  }
  if (fclose(f) != 0) exit(2);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static caterva_ctx *ctx;
  static const cat_remote_transport tr = {t_open, t_close, t_turn, NULL};
  caterva_remote_opts o;
  caterva_array *a = NULL;
  char path[128];
  int proto;
  const char *name;
  if (size < 2) return 0;
  if (ctx == NULL && caterva_ctx_new(1, &ctx) < 0) return 0;
  expect = getenv("FUZZ_REMOTE_EXPECT");
  debug = getenv("FUZZ_REMOTE_DEBUG") != NULL;
  expect_seen = 0;
  cat_remote_set_transport(&tr);
  T.upstream = getenv("FUZZ_REMOTE_UPSTREAM");
  T.nc = 0;
  parse_answers(data + 2, size - 2);
  proto = (data[0] >> 2) & 3;
  T.signed_s3 = proto == 1 || proto == 2;
  set_env(proto);
  caterva_remote_opts_init(&o);
  o.whole_chunks = (data[0] >> 4) & 1;
  o.retries = (data[0] & 32) ? -1 : 0;
  o.cache_bytes = (data[0] & 64) ? 1 : 0;
  name = (data[0] & 1) ? "s.b2frame" : "c.b2nd";
  if (proto == 0) {
    snprintf(path, sizeof path, "%s/%s%s", FUZZ_HOST, name, (data[0] & 2) ? "/" : "");
  } else {
    o.endpoint = FUZZ_HOST;
    o.region = "us-east-1";
    snprintf(path, sizeof path, "s3://%s/%s%s", FUZZ_BUCKET, name, (data[0] & 2) ? "/" : "");
  }
  if (caterva_array_open_ex(ctx, path, CATERVA_OPEN_READ, &o, &a) == 0) {
    step(ctx, "open");
    queries(ctx, a, data[1]);
    caterva_array_free(a);
  } else {
    step(ctx, "open (failed)");
  }
  if (expect != NULL && !expect_seen) {
    fprintf(stderr, "fuzz_remote: no error said '%s'\n", expect);
    abort();
  }
  for (int i = 0; i < T.nc; i++)
    if (T.c[i].mine >= 0) {
      fprintf(stderr, "fuzz_remote: connection %d left open after the array was closed\n", i);
      abort();
    }
  if (T.upstream != NULL && getenv("FUZZ_REMOTE_RECORD") != NULL)
    write_recording(getenv("FUZZ_REMOTE_RECORD"), data);
  cat_remote_set_transport(NULL);
  return 0;
}
