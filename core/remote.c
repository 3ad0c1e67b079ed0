/*
 * remote.c -- byte ranges of objects on HTTP(S) servers and in S3, through libcurl.
 *
 * A wave is a set of single-range GETs run together on the session's multi handle: HTTP/2
 * multiplexing when the server offers it over TLS, else up to `connections` connections;
 * connections stay open from one wave to the next. Every answer is checked before its bytes
 * count:
 *   206  Content-Range must start at the asked offset and the body must hold exactly the
 *        bytes it announces (fewer: a truncated body, retried);
 *   200  the server ignored Range: accepted only for a small object (the slice is taken from
 *        the body), else an error (never a download of a large object);
 *   416  the range starts past the end: an empty answer for a probe, else an error;
 *   429, 500, 502, 503 (S3's SlowDown), 504, connection failures, timeouts, truncated
 *        bodies: retried up to `retries` times with exponential backoff and jitter;
 *   others (403, 404, ...): an error naming the method, the URL (its query string, which may
 *        hold a presigned signature, left out), the status, and S3's Code and Message.
 * Nothing is remembered of a failed request. The context's interrupt function is asked
 * between polls: a wave stops within about 50 ms of it returning non-zero.
 *
 * S3 requests are signed by libcurl (CURLOPT_AWS_SIGV4, "aws:amz:<region>:s3"), with the
 * x-amz-content-sha256: UNSIGNED-PAYLOAD header added here (this libcurl does not) and
 * x-amz-security-token for temporary credentials. The secret is passed to libcurl only.
 */
#include "remote.h"

#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <time.h>

#define CAT_REMOTE_DEF_CONNS 8
#define CAT_REMOTE_MAX_CONNS 64
#define CAT_REMOTE_DEF_CACHE ((int64_t)64 << 20)
#define CAT_REMOTE_DEF_RETRIES 4
#define CAT_REMOTE_DEF_TIMEOUT_MS 30000
#define CAT_REMOTE_BACKOFF_MS 100
#define CAT_REMOTE_BACKOFF_MAX_MS 5000
#define CAT_REMOTE_ERRBODY 2048
/* Until a large body shows the link's rate, decisions assume this many bytes/s per connection
 * (about what one connection to an object store gives); smaller bodies arrive in one burst
 * from the socket buffers and tell nothing about it. */
#define CAT_REMOTE_ASSUMED_BW 25e6
#define CAT_REMOTE_BW_SAMPLE (64 * 1024)

void caterva_remote_opts_init(caterva_remote_opts *o) {
  memset(o, 0, sizeof *o);
  o->path_style = -1;
}

/* An ASCII prefix in any case: strncasecmp's first call in a process (its binding, the
 * locale's tables) cost a local open more than the comparison. */
static bool has_scheme(const char *path, const char *scheme) {
  for (; *scheme != '\0'; path++, scheme++) {
    char c = *path >= 'A' && *path <= 'Z' ? (char)(*path - 'A' + 'a') : *path;
    if (c != *scheme) return false;
  }
  return true;
}

int caterva_path_is_remote(const char *path) {
  return path != NULL &&
         (has_scheme(path, "http://") || has_scheme(path, "https://") || has_scheme(path, "s3://"));
}

char *cat_remote_sibling(const char *base, const char *leaf) {
  size_t n = strlen(base), m = strlen(leaf);
  char *s = malloc(n + m + 2);
  if (s == NULL) return NULL;
  memcpy(s, base, n);
  if (n == 0 || s[n - 1] != '/') s[n++] = '/';
  memcpy(s + n, leaf, m + 1);
  return s;
}

#ifndef HAVE_CURL

int caterva_remote_available(void) { return 0; }

int cat_remote_new(caterva_ctx *ctx, const char *path, const caterva_remote_opts *o,
                   cat_remote **out, char **url) {
  (void)o;
  *out = NULL;
  *url = NULL;
  return cat_error(ctx, CATERVA_E_UNSUPPORTED,
                   "'%s': this build reads no remote arrays (configured without libcurl)", path);
}
int cat_remote_get(caterva_ctx *ctx, cat_remote *rm, cat_get *g, int n) {
  (void)rm, (void)g, (void)n;
  return cat_error(ctx, CATERVA_E_UNSUPPORTED, "built without libcurl");
}
int cat_remote_head(caterva_ctx *ctx, cat_remote *rm, const char *url, int64_t *size,
                    char *version, size_t cap) {
  (void)rm, (void)url, (void)size, (void)version, (void)cap;
  return cat_error(ctx, CATERVA_E_UNSUPPORTED, "built without libcurl");
}
int cat_remote_put(caterva_ctx *ctx, cat_remote *rm, cat_put *p, int n) {
  (void)rm, (void)p, (void)n;
  return cat_error(ctx, CATERVA_E_UNSUPPORTED, "built without libcurl");
}
int cat_remote_delete(caterva_ctx *ctx, cat_remote *rm, char *const *urls, int n) {
  (void)rm, (void)urls, (void)n;
  return cat_error(ctx, CATERVA_E_UNSUPPORTED, "built without libcurl");
}
int cat_remote_list_dir(caterva_ctx *ctx, cat_remote *rm, cat_obj **out, int64_t *n) {
  (void)rm;
  *out = NULL;
  *n = 0;
  return cat_error(ctx, CATERVA_E_UNSUPPORTED, "built without libcurl");
}
int64_t cat_remote_gc_grace(const cat_remote *rm) {
  (void)rm;
  return -1;
}
void cat_remote_stats(const cat_remote *rm, caterva_remote_stats *st) {
  (void)rm;
  memset(st, 0, sizeof *st);
}
void cat_remote_count_needed(cat_remote *rm, int64_t n) { (void)rm, (void)n; }
int64_t cat_remote_cache_budget(const cat_remote *rm) {
  (void)rm;
  return 0;
}
int cat_remote_whole_chunks(const cat_remote *rm) {
  (void)rm;
  return 0;
}
int64_t cat_remote_merge_gap(const cat_remote *rm) {
  (void)rm;
  return 4096;
}
void cat_remote_link(const cat_remote *rm, double *lat_s, double *bw) {
  (void)rm;
  *lat_s = *bw = 0;
}
double cat_remote_wave_cost(const cat_remote *rm, int64_t requests, int64_t bytes) {
  (void)rm, (void)requests, (void)bytes;
  return 0;
}
int cat_remote_connections(const cat_remote *rm) {
  (void)rm;
  return 1;
}
void cat_remote_free(cat_remote *rm) { (void)rm; }
void cat_remote_set_transport(const cat_remote_transport *t) { (void)t; }

#else /* HAVE_CURL */

#include <curl/curl.h>
#include <pthread.h>

struct cat_remote {
  CURLM *multi;
  char *sigv4;          /* "aws:amz:<region>:s3", or NULL: unsigned */
  char *key_id, *secret, *token;
  char *ca_file;
  int connections, retries;
  long timeout_ms;
  int64_t cache_bytes;
  int whole_chunks;
  int64_t gc_grace_s;   /* see caterva_remote_opts */
  char *list_url;       /* S3: the bucket's URL for ListObjectsV2 (no query), else NULL */
  char *key;            /* S3: the session's object key (not encoded), else NULL */
  uint64_t rng;         /* jitter */
  double lat_s;         /* measured time to the first byte of an answer (moving average) */
  double bw;            /* measured bytes/s of one answer's body (moving average), 0 unknown */
  caterva_remote_stats st;
};

/* One transfer of a wave, and what its answer said. */
typedef struct xfer {
  cat_get *g;
  CURL *easy;
  struct curl_slist *hdrs;
  caterva_ctx *ctx;
  int attempt;
  double not_before;     /* monotonic seconds: a retry waits until then */
  bool running, done;
  bool head;             /* a HEAD request (cat_remote_head) */
  cat_put *put;          /* a PUT (cat_remote_put), else NULL */
  bool del;              /* a DELETE (cat_remote_delete) */
  int64_t upos;          /* bytes of put->body handed to libcurl */
  long status;           /* of the last response seen (the headers of each response reset) */
  bool have_cr, cr_star;
  int64_t cr_first, cr_last, cr_total, clen;
  int64_t body;          /* body bytes seen of this response */
  char etag[96], lastmod[96];
  char err[CAT_REMOTE_ERRBODY];
  size_t nerr;
  const char *abort_why; /* set when the write callback refused the answer */
  bool encoded;          /* the answer has a Content-Encoding other than identity */
  char cerr[CURL_ERROR_SIZE]; /* libcurl's detail of a failed transfer */
  double last_check;     /* last interrupt check */
  bool interrupted;
} xfer;

int caterva_remote_available(void) { return 1; }

/* ---- a test transport (remote.h) ----------------------------------------------------------- */

static cat_remote_transport transport;
static bool have_transport;

void cat_remote_set_transport(const cat_remote_transport *t) {
  have_transport = t != NULL;
  if (t != NULL) transport = *t;
}

static curl_socket_t tr_open(void *arg, curlsocktype purpose, struct curl_sockaddr *addr) {
  int fd = transport.open(transport.arg);
  (void)arg, (void)purpose, (void)addr;
  return fd >= 0 ? (curl_socket_t)fd : CURL_SOCKET_BAD;
}

static int tr_sockopt(void *arg, curl_socket_t fd, curlsocktype purpose) {
  (void)arg, (void)fd, (void)purpose;
  return CURL_SOCKOPT_ALREADY_CONNECTED;
}

static int tr_close(void *arg, curl_socket_t fd) {
  (void)arg;
  transport.close(transport.arg, (int)fd);
  return 0;
}

/* Connections of e go to the test transport when one is set. */
static void use_transport(CURL *e) {
  if (!have_transport) return;
  curl_easy_setopt(e, CURLOPT_OPENSOCKETFUNCTION, tr_open);
  curl_easy_setopt(e, CURLOPT_SOCKOPTFUNCTION, tr_sockopt);
  curl_easy_setopt(e, CURLOPT_CLOSESOCKETFUNCTION, tr_close);
}

static double now_s(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc = CURLE_OK;
static void curl_init(void) { curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT); }

static char *dupstr(const char *s) { return s != NULL ? strdup(s) : NULL; }

static const char *env_nonempty(const char *name) {
  const char *v = getenv(name);
  return v != NULL && *v != '\0' ? v : NULL;
}

/* ---- URLs ---------------------------------------------------------------------------------- */

char *cat_remote_percent_encode(const char *s, int keep_slash) {
  size_t n = strlen(s);
  char *out = n < SIZE_MAX / 3 ? malloc(3 * n + 1) : NULL, *p = out;
  if (out == NULL) return NULL;
  for (const unsigned char *k = (const unsigned char *)s; *k; k++) {
    if ((*k >= 'A' && *k <= 'Z') || (*k >= 'a' && *k <= 'z') || (*k >= '0' && *k <= '9') ||
        *k == '-' || *k == '.' || *k == '_' || *k == '~' || (keep_slash && *k == '/')) {
      *p++ = (char)*k;
    } else {
      snprintf(p, 4, "%%%02X", *k);
      p += 3;
    }
  }
  *p = '\0';
  return out;
}

static char *encode_key(const char *key) { return cat_remote_percent_encode(key, 1); }

/* s3://bucket/key as the URL to request. */
static int s3_url(caterva_ctx *ctx, const char *path, const caterva_remote_opts *o,
                  const char *region, char **url, char **list_url) {
  const char *b = path + 5, *slash = strchr(b, '/');
  const char *endpoint = o->endpoint && *o->endpoint ? o->endpoint
                                                     : env_nonempty("AWS_ENDPOINT_URL");
  char *key = NULL, *ep = NULL;
  int rc = CATERVA_OK, path_style = o->path_style;
  size_t nb, n;
  CAT_CHECK(leave, slash != NULL && slash > b && slash[1] != '\0', CATERVA_E_INVALID,
            "'%s' is not s3://bucket/key", path);
  nb = (size_t)(slash - b);
  if (endpoint == NULL) {
    n = strlen(region) + 32;
    ep = malloc(n);
    CAT_CHECK(leave, ep != NULL, CATERVA_E_NOMEM, "out of memory");
    snprintf(ep, n, "https://s3.%s.amazonaws.com", region);
    if (path_style < 0) path_style = 0;
  } else {
    ep = strdup(endpoint);
    CAT_CHECK(leave, ep != NULL, CATERVA_E_NOMEM, "out of memory");
    if (path_style < 0) path_style = 1;
  }
  n = strlen(ep);
  while (n > 0 && ep[n - 1] == '/') ep[--n] = '\0';
  CAT_CHECK(leave, strncasecmp(ep, "http://", 7) == 0 || strncasecmp(ep, "https://", 8) == 0,
            CATERVA_E_INVALID, "S3 endpoint '%s' is not an http:// or https:// URL", ep);
  key = encode_key(slash + 1);
  CAT_CHECK(leave, key != NULL, CATERVA_E_NOMEM, "out of memory");
  n = strlen(ep) + nb + strlen(key) + 8;
  *url = malloc(n);
  CAT_CHECK(leave, *url != NULL, CATERVA_E_NOMEM, "out of memory");
  *list_url = malloc(n);
  CAT_CHECK(leave, *list_url != NULL, CATERVA_E_NOMEM, "out of memory");
  if (path_style) {
    snprintf(*url, n, "%s/%.*s/%s", ep, (int)nb, b, key);
    snprintf(*list_url, n, "%s/%.*s", ep, (int)nb, b);
  } else { /* virtual host: scheme://bucket.host/key */
    const char *host = strstr(ep, "://") + 3;
    snprintf(*url, n, "%.*s%.*s.%s/%s", (int)(host - ep), ep, (int)nb, b, host, key);
    snprintf(*list_url, n, "%.*s%.*s.%s/", (int)(host - ep), ep, (int)nb, b, host);
  }
leave:
  free(key);
  free(ep);
  return rc;
}

/* The URL without its query string (which may carry a presigned signature), for messages. */
static void redact(const char *url, char *out, size_t cap) {
  const char *q = strchr(url, '?');
  snprintf(out, cap, "%.*s%s", q ? (int)(q - url) : (int)strlen(url), url, q ? "?..." : "");
}

/* ---- the session ------------------------------------------------------------------------- */

int cat_remote_new(caterva_ctx *ctx, const char *path, const caterva_remote_opts *o,
                   cat_remote **out, char **url) {
  caterva_remote_opts def;
  cat_remote *rm = NULL;
  const char *region, *nosign;
  int rc = CATERVA_OK;
  *out = NULL;
  *url = NULL;
  if (o == NULL) {
    caterva_remote_opts_init(&def);
    o = &def;
  }
  pthread_once(&curl_once, curl_init);
  CAT_CHECK(leave, curl_init_rc == CURLE_OK, CATERVA_E_IO, "libcurl: %s",
            curl_easy_strerror(curl_init_rc));
  rm = calloc(1, sizeof *rm);
  CAT_CHECK(leave, rm != NULL, CATERVA_E_NOMEM, "out of memory");
  rm->connections = o->connections > 0 ? o->connections : CAT_REMOTE_DEF_CONNS;
  if (rm->connections > CAT_REMOTE_MAX_CONNS) rm->connections = CAT_REMOTE_MAX_CONNS;
  rm->retries = o->retries > 0 ? o->retries : o->retries < 0 ? 0 : CAT_REMOTE_DEF_RETRIES;
  rm->timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : CAT_REMOTE_DEF_TIMEOUT_MS;
  rm->cache_bytes = o->cache_bytes > 0 ? o->cache_bytes : CAT_REMOTE_DEF_CACHE;
  rm->whole_chunks = o->whole_chunks != 0;
  rm->gc_grace_s = o->gc_grace_s != 0 ? o->gc_grace_s : 3600;
  rm->rng = (uint64_t)(now_s() * 1e6) | 1;
  rm->ca_file = dupstr(o->ca_file && *o->ca_file ? o->ca_file : env_nonempty("CURL_CA_BUNDLE"));
  rm->multi = curl_multi_init();
  CAT_CHECK(leave, rm->multi != NULL, CATERVA_E_NOMEM, "libcurl: cannot make a multi handle");
  curl_multi_setopt(rm->multi, CURLMOPT_PIPELINING, (long)CURLPIPE_MULTIPLEX);
  curl_multi_setopt(rm->multi, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)rm->connections);
  curl_multi_setopt(rm->multi, CURLMOPT_MAX_HOST_CONNECTIONS, (long)rm->connections);
  if (strncasecmp(path, "s3://", 5) == 0) {
    region = o->region && *o->region ? o->region : env_nonempty("AWS_REGION");
    if (region == NULL) region = env_nonempty("AWS_DEFAULT_REGION");
    if (region == NULL) region = "us-east-1";
    CAT_TRY(leave, s3_url(ctx, path, o, region, url, &rm->list_url));
    rm->key = strdup(strchr(path + 5, '/') + 1);
    CAT_CHECK(leave, rm->key != NULL, CATERVA_E_NOMEM, "out of memory");
    nosign = env_nonempty("AWS_NO_SIGN_REQUEST");
    if ((nosign == NULL || strcasecmp(nosign, "yes") != 0) &&
        env_nonempty("AWS_ACCESS_KEY_ID") && env_nonempty("AWS_SECRET_ACCESS_KEY")) {
      size_t n = strlen(region) + 16;
      rm->sigv4 = malloc(n);
      CAT_CHECK(leave, rm->sigv4 != NULL, CATERVA_E_NOMEM, "out of memory");
      snprintf(rm->sigv4, n, "aws:amz:%s:s3", region);
      rm->key_id = strdup(getenv("AWS_ACCESS_KEY_ID"));
      rm->secret = strdup(getenv("AWS_SECRET_ACCESS_KEY"));
      rm->token = dupstr(env_nonempty("AWS_SESSION_TOKEN"));
      CAT_CHECK(leave, rm->key_id != NULL && rm->secret != NULL, CATERVA_E_NOMEM,
                "out of memory");
    }
  } else {
    *url = strdup(path);
    CAT_CHECK(leave, *url != NULL, CATERVA_E_NOMEM, "out of memory");
  }
  *out = rm;
  rm = NULL;
leave:
  cat_remote_free(rm);
  if (rc < 0) {
    free(*url);
    *url = NULL;
  }
  return rc;
}

void cat_remote_free(cat_remote *rm) {
  if (rm == NULL) return;
  if (rm->multi != NULL) curl_multi_cleanup(rm->multi);
  if (rm->secret != NULL) {
    memset(rm->secret, 0, strlen(rm->secret));
    free(rm->secret);
  }
  free(rm->key_id);
  free(rm->token);
  free(rm->list_url);
  free(rm->key);
  free(rm->sigv4);
  free(rm->ca_file);
  free(rm);
}

void cat_remote_stats(const cat_remote *rm, caterva_remote_stats *st) { *st = rm->st; }
void cat_remote_count_needed(cat_remote *rm, int64_t n) { rm->st.needed += n; }
int64_t cat_remote_cache_budget(const cat_remote *rm) { return rm->cache_bytes; }
int cat_remote_whole_chunks(const cat_remote *rm) { return rm->whole_chunks; }

/* Bytes that cost about as much to receive as one more request: ranges of one object closer
 * than this are asked as one. From what the link showed so far (latency x bandwidth), within
 * [4 KiB, 64 KiB] (larger merges fetched several times the bytes needed for little gain on
 * the benchmark's link); 4 KiB before anything was measured. */
int64_t cat_remote_merge_gap(const cat_remote *rm) {
  double g = rm->lat_s * (rm->bw > 0 ? rm->bw : CAT_REMOTE_ASSUMED_BW);
  if (!(g >= 4096.0)) return 4096;
  return g > 65536.0 ? 65536 : (int64_t)g;
}

int cat_remote_connections(const cat_remote *rm) { return rm->connections; }

double cat_remote_wave_cost(const cat_remote *rm, int64_t requests, int64_t bytes) {
  int64_t conns = rm->connections > 0 ? rm->connections : 1;
  int64_t per = requests / conns + (requests % conns != 0); /* one connection's, in turn */
  double lat, bw;
  cat_remote_link(rm, &lat, &bw);
  if (lat <= 0 || requests <= 0) return 0;
  return (double)per * lat + (double)bytes / (bw * (double)(requests < conns ? requests : conns));
}

void cat_remote_link(const cat_remote *rm, double *lat_s, double *bw) {
  *lat_s = rm->lat_s;
  *bw = rm->bw > 0 ? rm->bw : CAT_REMOTE_ASSUMED_BW;
}

/* Learn the link from a finished answer: its time to the first byte after the request was
 * sent, and the rate of a body of at least CAT_REMOTE_BW_SAMPLE bytes. */
static void learn_link(cat_remote *rm, CURL *e, int64_t body) {
  curl_off_t pre = 0, start = 0, total = 0;
  double lat, bw;
  if (curl_easy_getinfo(e, CURLINFO_PRETRANSFER_TIME_T, &pre) != CURLE_OK ||
      curl_easy_getinfo(e, CURLINFO_STARTTRANSFER_TIME_T, &start) != CURLE_OK ||
      curl_easy_getinfo(e, CURLINFO_TOTAL_TIME_T, &total) != CURLE_OK || start < pre)
    return;
  lat = (double)(start - pre) / 1e6;
  rm->lat_s = rm->lat_s > 0 ? 0.7 * rm->lat_s + 0.3 * lat : lat;
  if (body >= CAT_REMOTE_BW_SAMPLE && total > start) {
    bw = (double)body / ((double)(total - start) / 1e6);
    rm->bw = rm->bw > 0 ? 0.7 * rm->bw + 0.3 * bw : bw;
  }
}

/* ---- answers ------------------------------------------------------------------------------- */

static void header_value(const char *line, size_t n, char *out, size_t cap) {
  const char *v = memchr(line, ':', n);
  size_t len;
  out[0] = '\0';
  if (v == NULL) return;
  v++;
  len = n - (size_t)(v - line);
  while (len > 0 && (*v == ' ' || *v == '\t')) v++, len--;
  while (len > 0 && (v[len - 1] == '\r' || v[len - 1] == '\n' || v[len - 1] == ' ')) len--;
  if (len >= cap) len = cap - 1;
  memcpy(out, v, len);
  out[len] = '\0';
}

static bool header_is(const char *line, size_t n, const char *name) {
  size_t k = strlen(name);
  return n > k && line[k] == ':' && strncasecmp(line, name, k) == 0;
}

/* "bytes a-b/total" or "bytes * /total". */
static void parse_content_range(xfer *x, const char *v) {
  long long a, b, t;
  char star;
  if (sscanf(v, "bytes %lld-%lld/%lld", &a, &b, &t) == 3 && a >= 0 && b >= a && t > b) {
    x->have_cr = true;
    x->cr_first = a, x->cr_last = b, x->cr_total = t;
  } else if (sscanf(v, "bytes %c/%lld", &star, &t) == 2 && star == '*' && t >= 0) {
    x->cr_star = true;
    x->cr_total = t;
  }
}

static size_t on_header(char *line, size_t size, size_t nitems, void *arg) {
  xfer *x = arg;
  size_t n = size * nitems;
  char v[128];
  if (n >= 5 && strncmp(line, "HTTP/", 5) == 0) { /* a new response (after 100, redirects) */
    const char *sp = memchr(line, ' ', n);
    x->status = sp != NULL ? strtol(sp + 1, NULL, 10) : 0;
    x->have_cr = x->cr_star = false;
    x->clen = -1;
    x->body = 0;
    x->nerr = 0;
    x->encoded = false;
    x->etag[0] = x->lastmod[0] = '\0';
  } else if (header_is(line, n, "Content-Encoding")) {
    header_value(line, n, v, sizeof v);
    x->encoded = v[0] != '\0' && strcasecmp(v, "identity") != 0;
  } else if (header_is(line, n, "Content-Range")) {
    header_value(line, n, v, sizeof v);
    parse_content_range(x, v);
  } else if (header_is(line, n, "Content-Length")) {
    header_value(line, n, v, sizeof v);
    x->clen = strtoll(v, NULL, 10);
  } else if (header_is(line, n, "ETag")) {
    header_value(line, n, x->etag, sizeof x->etag);
  } else if (header_is(line, n, "Last-Modified")) {
    header_value(line, n, x->lastmod, sizeof x->lastmod);
  }
  return n;
}

/* Copy the part of [from, from + n) of the object that falls in the asked range. */
static void take(cat_get *g, int64_t from, const char *data, size_t n) {
  int64_t lo = from > g->off ? from : g->off;
  int64_t hi = from + (int64_t)n < g->off + g->len ? from + (int64_t)n : g->off + g->len;
  if (hi > lo) {
    memcpy(g->dst + (lo - g->off), data + (lo - from), (size_t)(hi - lo));
    if (hi - g->off > g->got) g->got = hi - g->off;
  }
}

static size_t on_body(char *data, size_t size, size_t nitems, void *arg) {
  xfer *x = arg;
  cat_get *g = x->g;
  size_t n = size * nitems;
  if (x->put != NULL || x->del) { /* only an error's text is of interest */
    if (x->nerr < sizeof x->err - 1) {
      size_t k = n < sizeof x->err - 1 - x->nerr ? n : sizeof x->err - 1 - x->nerr;
      memcpy(x->err + x->nerr, data, k);
      x->nerr += k;
    }
  } else if ((x->status == 206 || x->status == 200) && x->encoded) {
    /* nothing asked for an encoding: these bytes are not the object's */
    x->abort_why = "an answer with a Content-Encoding that was not asked for";
    return 0;
  } else if (x->status == 206) {
    if (!x->have_cr || x->cr_first != g->off || x->body + (int64_t)n > g->len) {
      x->abort_why = !x->have_cr ? "a 206 answer without a usable Content-Range"
                     : x->cr_first != g->off ? "a 206 answer for other bytes than asked"
                                             : "more bytes than asked";
      return 0;
    }
    take(g, g->off + x->body, data, n);
  } else if (x->status == 200) {
    if (x->clen > CAT_REMOTE_SMALL_OBJECT || x->body + (int64_t)n > CAT_REMOTE_SMALL_OBJECT) {
      x->abort_why = "the server ignored the Range header and sent the whole object, which "
                     "is too large to take that way";
      return 0;
    }
    take(g, x->body, data, n);
  } else if (x->nerr < sizeof x->err - 1) {
    size_t k = n < sizeof x->err - 1 - x->nerr ? n : sizeof x->err - 1 - x->nerr;
    memcpy(x->err + x->nerr, data, k);
    x->nerr += k;
  }
  x->body += (int64_t)n;
  return n;
}

static int on_progress(void *arg, curl_off_t dt, curl_off_t dn, curl_off_t ut, curl_off_t un) {
  xfer *x = arg;
  double t = now_s();
  (void)dt, (void)dn, (void)ut, (void)un;
  if (t - x->last_check < 0.02) return 0;
  x->last_check = t;
  if (cat_interrupted(x->ctx)) x->interrupted = true;
  return x->interrupted ? 1 : 0;
}

/* The text of an S3-style <Tag>...</Tag> in an error body, or "". */
static void xml_tag(const char *body, const char *tag, char *out, size_t cap) {
  char open[32];
  const char *a, *b;
  out[0] = '\0';
  snprintf(open, sizeof open, "<%s>", tag);
  if ((a = strstr(body, open)) == NULL) return;
  a += strlen(open);
  if ((b = strchr(a, '<')) == NULL) return;
  snprintf(out, cap, "%.*s", (int)(b - a), a);
  for (char *p = out; *p; p++)
    if ((unsigned char)*p < 0x20) *p = ' ';
}

/* ---- transfers ----------------------------------------------------------------------------- */

/* The body of a PUT, handed to libcurl as it asks (again from the start on a retry). */
static size_t on_read(char *buf, size_t size, size_t nitems, void *arg) {
  xfer *x = arg;
  int64_t left = x->put->len - x->upos, n = (int64_t)(size * nitems);
  if (n > left) n = left;
  if (n > 0) memcpy(buf, x->put->body + x->upos, (size_t)n);
  x->upos += n;
  return (size_t)n;
}

/* libcurl rewinds a body to send the request again by itself (a reused connection that closed
 * with no answer), even a PUT the server may have applied: never a no_retry PUT (the commit
 * point), whose transfer fails instead so that the caller finds out what landed. */
static int on_seek(void *arg, curl_off_t off, int origin) {
  xfer *x = arg;
  if (x->put->no_retry && off < x->upos) return CURL_SEEKFUNC_FAIL;
  if (origin != SEEK_SET || off < 0 || off > x->put->len) return CURL_SEEKFUNC_CANTSEEK;
  x->upos = off;
  return CURL_SEEKFUNC_OK;
}

/* The conditions of a PUT (signed with the rest). libcurl's "Expect: 100-continue" stays:
 * this libcurl (7.88) signs an "Expect:" header that removes it as if it were sent. */
static int write_headers(xfer *x) {
  char line[160];
  struct curl_slist *h = NULL;
  if (x->put->if_none_match && (h = curl_slist_append(NULL, "If-None-Match: *")) == NULL)
    return CATERVA_E_NOMEM;
  x->hdrs = h;
  if (x->put->if_match != NULL) {
    snprintf(line, sizeof line, "If-Match: %.120s", x->put->if_match);
    if ((h = curl_slist_append(x->hdrs, line)) == NULL) return CATERVA_E_NOMEM;
    x->hdrs = h;
  }
  return CATERVA_OK;
}

static int setup(cat_remote *rm, xfer *x) {
  cat_get *g = x->g;
  char range[64];
  CURL *e = curl_easy_init();
  if (e == NULL) return CATERVA_E_NOMEM;
  x->easy = e;
  curl_easy_setopt(e, CURLOPT_URL, g->url);
  curl_easy_setopt(e, CURLOPT_PRIVATE, x);
  curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(e, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_2TLS);
  /* wait for a connection being set up to say whether it multiplexes (HTTP/2 over TLS);
   * plain http:// never does, and waiting would queue a wave's first requests in turn */
  if (strncasecmp(g->url, "https://", 8) == 0) curl_easy_setopt(e, CURLOPT_PIPEWAIT, 1L);
  curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, rm->timeout_ms);
  curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, rm->timeout_ms < 10000 ? rm->timeout_ms : 10000L);
  curl_easy_setopt(e, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 1L);
  curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 2L);
  if (rm->ca_file != NULL) curl_easy_setopt(e, CURLOPT_CAINFO, rm->ca_file);
  curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
  curl_easy_setopt(e, CURLOPT_HEADERDATA, x);
  curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
  curl_easy_setopt(e, CURLOPT_WRITEDATA, x);
  curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
  curl_easy_setopt(e, CURLOPT_XFERINFODATA, x);
  curl_easy_setopt(e, CURLOPT_USERAGENT, "caterva-sqlite");
  curl_easy_setopt(e, CURLOPT_ERRORBUFFER, x->cerr);
  use_transport(e);
  if (x->head) {
    curl_easy_setopt(e, CURLOPT_NOBODY, 1L);
  } else if (x->put != NULL) {
    curl_easy_setopt(e, CURLOPT_UPLOAD, 1L);
    curl_easy_setopt(e, CURLOPT_READFUNCTION, on_read);
    curl_easy_setopt(e, CURLOPT_READDATA, x);
    curl_easy_setopt(e, CURLOPT_SEEKFUNCTION, on_seek);
    curl_easy_setopt(e, CURLOPT_SEEKDATA, x);
    curl_easy_setopt(e, CURLOPT_INFILESIZE_LARGE, (curl_off_t)x->put->len);
  } else if (x->del) {
    curl_easy_setopt(e, CURLOPT_CUSTOMREQUEST, "DELETE");
  } else if (g->whole) {
    /* no Range: a listing */
  } else {
    snprintf(range, sizeof range, "%lld-%lld", (long long)g->off,
             (long long)(g->off + g->len - 1));
    curl_easy_setopt(e, CURLOPT_RANGE, range);
  }
  if (x->put != NULL && write_headers(x) < 0) return CATERVA_E_NOMEM;
  if (rm->sigv4 != NULL) {
    struct curl_slist *h = curl_slist_append(x->hdrs, "x-amz-content-sha256: UNSIGNED-PAYLOAD");
    if (h != NULL && rm->token != NULL) {
      size_t n = strlen(rm->token) + 32;
      char *t = malloc(n);
      struct curl_slist *h2 = NULL;
      if (t != NULL) {
        snprintf(t, n, "x-amz-security-token: %s", rm->token);
        h2 = curl_slist_append(h, t);
        free(t);
      }
      if (h2 == NULL) {
        curl_slist_free_all(h);
        x->hdrs = h = NULL;
      }
    }
    if (h == NULL) return CATERVA_E_NOMEM;
    x->hdrs = h;
    curl_easy_setopt(e, CURLOPT_AWS_SIGV4, rm->sigv4);
    curl_easy_setopt(e, CURLOPT_USERNAME, rm->key_id);
    curl_easy_setopt(e, CURLOPT_PASSWORD, rm->secret);
  }
  if (x->hdrs != NULL) curl_easy_setopt(e, CURLOPT_HTTPHEADER, x->hdrs);
  return CATERVA_OK;
}

static void release(cat_remote *rm, xfer *x) {
  if (x->easy != NULL) {
    if (x->running) curl_multi_remove_handle(rm->multi, x->easy);
    curl_easy_cleanup(x->easy);
  }
  curl_slist_free_all(x->hdrs);
  x->easy = NULL;
  x->hdrs = NULL;
  x->running = false;
}

static int start(cat_remote *rm, xfer *x) {
  int rc;
  release(rm, x);
  x->g->got = 0;
  x->status = 0;
  x->have_cr = x->cr_star = false;
  x->clen = -1;
  x->body = 0;
  x->nerr = 0;
  x->abort_why = NULL;
  x->encoded = false;
  x->cerr[0] = '\0';
  x->upos = 0;
  if ((rc = setup(rm, x)) < 0) return rc;
  if (curl_multi_add_handle(rm->multi, x->easy) != CURLM_OK) return CATERVA_E_NOMEM;
  x->running = true;
  rm->st.requests++;
  return CATERVA_OK;
}

static bool retryable_curl(CURLcode c) {
  switch (c) {
  case CURLE_COULDNT_CONNECT: case CURLE_OPERATION_TIMEDOUT: case CURLE_RECV_ERROR:
  case CURLE_SEND_ERROR: case CURLE_GOT_NOTHING: case CURLE_PARTIAL_FILE: case CURLE_HTTP2:
  case CURLE_HTTP2_STREAM: case CURLE_SSL_CONNECT_ERROR: case CURLE_WEIRD_SERVER_REPLY:
    return true;
  default:
    return false;
  }
}

static bool retryable_status(long s) {
  return s == 429 || s == 500 || s == 502 || s == 503 || s == 504;
}

/* Schedule x again after a backoff (exponential, with jitter), if it has retries left. */
static bool retry_later(cat_remote *rm, xfer *x) {
  double ms;
  if (x->attempt >= rm->retries) return false;
  ms = CAT_REMOTE_BACKOFF_MS * (double)(1 << (x->attempt < 10 ? x->attempt : 10));
  if (ms > CAT_REMOTE_BACKOFF_MAX_MS) ms = CAT_REMOTE_BACKOFF_MAX_MS;
  rm->rng ^= rm->rng << 13, rm->rng ^= rm->rng >> 7, rm->rng ^= rm->rng << 17;
  ms *= 0.5 + 0.5 * (double)(rm->rng % 1000) / 1000.0;
  x->attempt++;
  x->not_before = have_transport ? 0 : now_s() + ms / 1000.0;
  release(rm, x);
  rm->st.retries++;
  return true;
}

/* Why a transfer failed in libcurl: its code's text, its detail when that says more. */
static void curl_why(const xfer *x, CURLcode cc, bool exhausted, char *out, size_t cap) {
  const char *what = curl_easy_strerror(cc);
  bool more = x->cerr[0] != '\0' && strcmp(x->cerr, what) != 0;
  snprintf(out, cap, "%.60s%s%.90s%s", what, more ? ": " : "", more ? x->cerr : "",
           exhausted ? " (retries exhausted)" : "");
}

static const char *method_of(const xfer *x) {
  return x->head ? "HEAD" : x->put != NULL ? "PUT" : x->del ? "DELETE" : "GET";
}

/* What an answer that will not be retried said: method, URL, bytes, why, S3 Code/Message. */
static void describe(const xfer *x, const char *why, char *out, size_t cap) {
  char url[512], s3code[96] = "", s3msg[256] = "", body[CAT_REMOTE_ERRBODY];
  redact(x->g->url, url, sizeof url);
  memcpy(body, x->err, x->nerr);
  body[x->nerr] = '\0';
  xml_tag(body, "Code", s3code, sizeof s3code);
  xml_tag(body, "Message", s3msg, sizeof s3msg);
  /* bounded parts: the whole fits a context's message */
  if (x->head || x->put != NULL || x->del)
    snprintf(out, cap, "%s %.150s: %.160s%s%.60s%s%.90s", method_of(x), url, why,
             *s3code ? ": " : "", s3code, *s3msg ? ": " : "", s3msg);
  else
    snprintf(out, cap, "%s %.150s (bytes %lld-%lld): %.160s%s%.60s%s%.90s", method_of(x), url,
             (long long)x->g->off, (long long)(x->g->off + x->g->len - 1), why,
             *s3code ? ": " : "", s3code, *s3msg ? ": " : "", s3msg);
}

static int fail(caterva_ctx *ctx, const xfer *x, int code, const char *why) {
  char msg[CAT_ERRMSG_SIZE];
  describe(x, why, msg, sizeof msg);
  return cat_error(ctx, code, "%s", msg);
}

static int month_of(const char *m) {
  static const char *names[] = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
  for (int k = 0; k < 12; k++)
    if (strncmp(m, names[k], 3) == 0) return k;
  return -1;
}

/* An HTTP date ("Sun, 06 Nov 1994 08:49:37 GMT") in seconds since the epoch, or -1. */
static int64_t http_date(const char *s) {
  struct tm tm;
  char mon[4];
  int d, y, h, mi, sec;
  memset(&tm, 0, sizeof tm);
  if (sscanf(s, "%*3s, %d %3s %d %d:%d:%d", &d, mon, &y, &h, &mi, &sec) != 6) return -1;
  if ((tm.tm_mon = month_of(mon)) < 0 || y < 1970 || y > 9999) return -1;
  tm.tm_mday = d, tm.tm_year = y - 1900, tm.tm_hour = h, tm.tm_min = mi, tm.tm_sec = sec;
  return (int64_t)timegm(&tm);
}

/* Does the answer come from another version of the object than g expects? */
static bool answer_changed(const cat_get *g, const xfer *x) {
  int64_t size = x->have_cr || x->cr_star ? x->cr_total : x->status == 200 ? x->clen : -1;
  if (g->expect_version == NULL || x->status >= 500 || x->status == 429) return false;
  if (g->expect_version[0] != '\0' && (x->etag[0] != '\0' || x->lastmod[0] != '\0'))
    return strcmp(g->expect_version, x->etag[0] ? x->etag : x->lastmod) != 0;
  return g->expect_size >= 0 && size >= 0 && size != g->expect_size;
}

/* What a refused write means, for its message. */
static const char *write_refusal(long status) {
  switch (status) {
  case 403: return "HTTP 403: access denied (the credentials may not write here, or are wrong)";
  case 404: return "HTTP 404: no such bucket";
  case 412: return "HTTP 412: precondition failed";
  default: return NULL;
  }
}

/* Judge a finished PUT or DELETE: 1 done (its outcome in put->outcome), 0 retry scheduled,
 * < 0 an error. A PUT with no_retry is not sent again after a failure whose effect is unknown
 * (no answer, a 5xx): its outcome is CAT_PUT_UNKNOWN and the caller finds out. */
static int finish_write(caterva_ctx *ctx, cat_remote *rm, xfer *x, CURLcode cc) {
  cat_put *p = x->put;
  bool again = p == NULL || !p->no_retry;
  char why[200];
  const char *what;
  if (cc != CURLE_OK || (x->status >= 500 || x->status == 429 || x->status == 409)) {
    bool transient = cc != CURLE_OK ? retryable_curl(cc) : true;
    if (transient && again && retry_later(rm, x)) return 0;
    if (transient && !again) {
      p->status = x->status;
      p->outcome = CAT_PUT_UNKNOWN;
      return 1;
    }
    if (cc != CURLE_OK)
      curl_why(x, cc, transient, why, sizeof why);
    else
      snprintf(why, sizeof why, "HTTP %ld (retries exhausted)", x->status);
    return fail(ctx, x, CATERVA_E_REMOTE, why);
  }
  if (p != NULL) {
    p->status = x->status;
    snprintf(p->version, sizeof p->version, "%s", x->etag);
  }
  if (x->status == 200 || x->status == 201 || x->status == 204 ||
      (x->del && x->status == 404)) {
    if (p != NULL) p->outcome = CAT_PUT_DONE;
    return 1;
  }
  if (x->status == 412 && p != NULL) {
    p->outcome = CAT_PUT_PRECONDITION;
    return 1;
  }
  what = write_refusal(x->status);
  if (what == NULL) {
    snprintf(why, sizeof why, "HTTP %ld", x->status);
    what = why;
  }
  return fail(ctx, x, x->status == 403 ? CATERVA_E_REMOTE
                      : x->status == 404 ? CATERVA_E_NOTFOUND : CATERVA_E_REMOTE, what);
}

/* Judge a finished transfer: 1 done, 0 retry scheduled, < 0 an error. */
static int finish(caterva_ctx *ctx, cat_remote *rm, xfer *x, CURLcode cc) {
  cat_get *g = x->g;
  char why[200];
  int64_t expect;
  rm->st.bytes += x->body;
  if (x->interrupted) return cat_error(ctx, CATERVA_E_INTERRUPT, "interrupted");
  if (x->put != NULL || x->del) return finish_write(ctx, rm, x, cc);
  if (x->abort_why != NULL) return fail(ctx, x, CATERVA_E_REMOTE, x->abort_why);
  if (cc != CURLE_OK) {
    if (retryable_curl(cc) && retry_later(rm, x)) return 0;
    curl_why(x, cc, retryable_curl(cc), why, sizeof why);
    return fail(ctx, x, CATERVA_E_REMOTE, why);
  }
  snprintf(g->version, sizeof g->version, "%s", x->etag[0] ? x->etag : x->lastmod);
  g->mtime = http_date(x->lastmod);
  g->status = x->status;
  if (answer_changed(g, x)) { /* judged by the caller: the object was replaced */
    g->changed = true;
    g->got = 0;
    return 1;
  }
  if (x->status == 200 || x->status == 206) learn_link(rm, x->easy, x->body);
  if (x->head) {
    if (x->status != 200) goto status;
    g->size = x->clen;
    return 1;
  }
  if (x->status == 206) {
    g->size = x->cr_total;
    expect = x->cr_last - x->cr_first + 1;
    if (x->body > expect)
      return fail(ctx, x, CATERVA_E_REMOTE, "a body longer than its Content-Range");
    if (x->body < expect || (x->clen >= 0 && x->body < x->clen)) {
      if (retry_later(rm, x)) return 0;
      return fail(ctx, x, CATERVA_E_REMOTE, "truncated answers (retries exhausted)");
    }
  } else if (x->status == 200) {
    if (x->clen >= 0 && x->body < x->clen) {
      if (retry_later(rm, x)) return 0;
      return fail(ctx, x, CATERVA_E_REMOTE, "truncated answers (retries exhausted)");
    }
    g->size = x->body;
  } else if (x->status == 416 && g->short_ok) {
    g->size = x->cr_star ? x->cr_total : -1;
    g->got = 0;
    return 1;
  } else {
    goto status;
  }
  if (g->got < g->len && !(g->short_ok && g->size >= 0 && g->off + g->got == g->size))
    return fail(ctx, x, CATERVA_E_CORRUPT,
                "the object ends before the bytes its frame refers to");
  return 1;
status:
  if (retryable_status(x->status) && retry_later(rm, x)) return 0;
  snprintf(why, sizeof why, "HTTP %ld%s", x->status,
           retryable_status(x->status) ? " (retries exhausted)"
           : x->status >= 300 && x->status < 400 ? " (a redirect: not followed)" : "");
  if (g->missing_ok && x->status >= 300 && x->status < 500) { /* a probe: not this one */
    g->got = 0;
    describe(x, why, g->errmsg, sizeof g->errmsg);
    return 1;
  }
  return fail(ctx, x, x->status == 404 ? CATERVA_E_NOTFOUND : CATERVA_E_REMOTE, why);
}

/* Run the transfers until all are done or one fails for good. */
static int run(caterva_ctx *ctx, cat_remote *rm, xfer *x, int n) {
  int rc = CATERVA_OK, left = n, still = 0;
  for (int i = 0; i < n; i++) CAT_TRY(leave, start(rm, &x[i]));
  rm->st.waves++;
  while (left > 0) {
    CURLMsg *msg;
    int queued;
    double t = now_s();
    if (cat_interrupted(ctx)) CAT_FAIL(leave, CATERVA_E_INTERRUPT, "interrupted");
    if (have_transport) transport.turn(transport.arg);
    for (int i = 0; i < n; i++)
      if (!x[i].done && !x[i].running && x[i].not_before <= t) CAT_TRY(leave, start(rm, &x[i]));
    CAT_CHECK(leave, curl_multi_perform(rm->multi, &still) == CURLM_OK, CATERVA_E_IO,
              "libcurl: curl_multi_perform failed");
    while ((msg = curl_multi_info_read(rm->multi, &queued)) != NULL) {
      xfer *xi = NULL;
      if (msg->msg != CURLMSG_DONE) continue;
      curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&xi);
      if (xi == NULL) continue;
      CAT_TRY(leave, rc = finish(ctx, rm, xi, msg->data.result));
      if (rc == 1) {
        xi->done = true;
        release(rm, xi);
        left--;
      }
      rc = CATERVA_OK;
    }
    if (left > 0) curl_multi_poll(rm->multi, NULL, 0, have_transport ? 0 : 50, NULL);
  }
leave:
  for (int i = 0; i < n; i++) release(rm, &x[i]);
  return rc;
}

int cat_remote_get(caterva_ctx *ctx, cat_remote *rm, cat_get *g, int n) {
  xfer *x;
  int rc;
  if (n <= 0) return CATERVA_OK;
  x = calloc((size_t)n, sizeof *x);
  if (x == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  for (int i = 0; i < n; i++) {
    x[i].g = &g[i];
    x[i].ctx = ctx;
    g[i].got = 0;
    g[i].size = -1;
    g[i].status = 0;
    g[i].version[0] = '\0';
    g[i].mtime = -1;
    g[i].errmsg[0] = '\0';
    g[i].changed = false;
  }
  rc = run(ctx, rm, x, n);
  free(x);
  return rc;
}

int cat_remote_head(caterva_ctx *ctx, cat_remote *rm, const char *url, int64_t *size,
                    char *version, size_t cap) {
  cat_get g;
  xfer x;
  int rc;
  memset(&g, 0, sizeof g);
  memset(&x, 0, sizeof x);
  g.url = url;
  g.size = -1;
  x.g = &g;
  x.ctx = ctx;
  x.head = true;
  rc = run(ctx, rm, &x, 1);
  if (rc >= 0) {
    *size = g.size;
    snprintf(version, cap, "%s", g.version);
  }
  return rc;
}

/* n transfers for a PUT (p) or DELETE (urls) wave, run and freed: the caller's request
 * records (p) get their outcome. */
static int run_writes(caterva_ctx *ctx, cat_remote *rm, cat_put *p, char *const *urls, int n) {
  xfer *x;
  cat_get *g;
  int rc;
  if (n <= 0) return CATERVA_OK;
  x = calloc((size_t)n, sizeof *x);
  g = calloc((size_t)n, sizeof *g);
  if (x == NULL || g == NULL) {
    free(x);
    free(g);
    return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  }
  for (int i = 0; i < n; i++) {
    x[i].g = &g[i];
    x[i].ctx = ctx;
    if (p != NULL) {
      g[i].url = p[i].url;
      x[i].put = &p[i];
      p[i].status = 0;
      p[i].outcome = CAT_PUT_UNKNOWN;
      p[i].version[0] = '\0';
    } else {
      g[i].url = urls[i];
      x[i].del = true;
    }
  }
  rc = run(ctx, rm, x, n);
  free(x);
  free(g);
  return rc;
}

int cat_remote_put(caterva_ctx *ctx, cat_remote *rm, cat_put *p, int n) {
  return run_writes(ctx, rm, p, NULL, n);
}

int cat_remote_delete(caterva_ctx *ctx, cat_remote *rm, char *const *urls, int n) {
  return run_writes(ctx, rm, NULL, urls, n);
}

int64_t cat_remote_gc_grace(const cat_remote *rm) { return rm->gc_grace_s; }

/* What a listing of the key's directory asks for (remote_list.c). */
int cat_remote_list_target(const cat_remote *rm, const char **list_url, const char **key) {
  *list_url = rm->list_url;
  *key = rm->key;
  return rm->list_url != NULL && rm->key != NULL;
}

#endif /* HAVE_CURL */
