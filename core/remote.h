/*
 * remote.h -- byte ranges of objects on HTTP(S) servers and in S3 (remote.c), for the remote
 * frame store (frame_remote.c). Internal to libcaterva.
 *
 * A session (cat_remote) holds the options, the credentials read from the environment once,
 * one curl multi handle (its connections are reused across waves) and counters. A wave
 * (cat_remote_get) sends any number of single-range GETs concurrently and returns when all
 * have their bytes or one has failed for good; transient failures are retried with
 * exponential backoff and jitter inside the wave.
 */
#ifndef CAT_REMOTE_H
#define CAT_REMOTE_H

#include "cat_internal.h"

typedef struct cat_remote cat_remote;

/* One ranged GET of a wave. */
typedef struct cat_get {
  const char *url;     /* borrowed: a URL made by cat_remote_url */
  int64_t off, len;    /* the bytes [off, off + len) */
  uint8_t *dst;        /* len bytes */
  bool short_ok;       /* the object may end inside the range (a probe of unknown size) */
  bool missing_ok;     /* a 404 or 403 answer is an empty result (status says which) */
  bool whole;          /* no Range header: the whole object (at most 4 MiB; a listing) */
  long status;         /* out: the HTTP status of the answer taken */
  char errmsg[CAT_ERRMSG_SIZE];    /* out: with missing_ok, what the refused answer said */
  int64_t got;         /* out: bytes written to dst */
  int64_t size;        /* out: the object's size (Content-Range, or a whole small body) */
  char version[96];    /* out: the ETag, else Last-Modified, else "" */
  int64_t mtime;       /* out: Last-Modified, seconds since the epoch (-1: none) */
  /* When set: the version (ETag or Last-Modified) and size the object should have. An answer
   * of another version (or, without one, of another size) is taken as it is, whatever its
   * length or status, with `changed` set: the object was replaced, the range may not exist */
  const char *expect_version;
  int64_t expect_size;   /* with expect_version; < 0: unknown */
  bool changed;          /* out */
} cat_get;

/* One PUT of a wave (cat_remote_put): the whole object at url. */
enum { CAT_PUT_DONE, CAT_PUT_PRECONDITION, CAT_PUT_UNKNOWN };
typedef struct cat_put {
  const char *url;       /* borrowed */
  const uint8_t *body;   /* borrowed, len bytes */
  int64_t len;
  bool if_none_match;    /* If-None-Match: *  (create only: never over an existing object) */
  const char *if_match;  /* If-Match: <ETag> (replace only that version), or NULL */
  bool no_retry;         /* never sent twice: a failure with no answer or a 5xx gives
                          * CAT_PUT_UNKNOWN, and the caller finds out whether it landed */
  long status;           /* out: HTTP status of the answer taken (0: none) */
  int outcome;           /* out: CAT_PUT_DONE (2xx), CAT_PUT_PRECONDITION (412), CAT_PUT_UNKNOWN */
  char version[96];      /* out: the new object's ETag */
} cat_put;

/* A session for the object at path (http://, https://, s3://). *url receives the URL to
 * request for path (malloc'ed). */
int cat_remote_new(caterva_ctx *ctx, const char *path, const caterva_remote_opts *o,
                   cat_remote **out, char **url);
/* URL of another object of the same session: base (a URL from this session) with its last
 * path segment replaced by leaf (sparse frames: "chunks.b2frame", "0000002A.chunk"). */
char *cat_remote_sibling(const char *base, const char *leaf);
/* One wave: all of g[0..n) concurrently. */
int cat_remote_get(caterva_ctx *ctx, cat_remote *rm, cat_get *g, int n);
/* The object's size and version with one HEAD request. */
int cat_remote_head(caterva_ctx *ctx, cat_remote *rm, const char *url, int64_t *size,
                    char *version, size_t cap);
/* One wave of PUTs, all of p[0..n) concurrently (signed like GETs; the payload is not
 * hashed). Transient failures are retried with backoff unless no_retry; 412 is an outcome,
 * not an error; 403, 404 and other refusals are errors naming the method, the URL, the status
 * and its meaning, and S3's Code and Message (never a credential). */
int cat_remote_put(caterva_ctx *ctx, cat_remote *rm, cat_put *p, int n);
/* One wave of DELETEs of urls[0..n) (a 404 is success: the object is gone). */
int cat_remote_delete(caterva_ctx *ctx, cat_remote *rm, char *const *urls, int n);
/* An object of a listing: its name under the listed prefix, its Last-Modified. */
typedef struct cat_obj {
  char name[64];
  int64_t mtime;
} cat_obj;
/* S3: the objects directly under the session's key taken as a directory (`key/`), by
 * ListObjectsV2 (every page); names longer than 63 bytes or holding '/' are left out.
 * *out malloc'ed. */
int cat_remote_list_dir(caterva_ctx *ctx, cat_remote *rm, cat_obj **out, int64_t *n);
/* The listing's endpoint and the session's key (borrowed): 0 when the session is no s3://
 * URL's (remote_list.c asks; remote.c keeps them). */
int cat_remote_list_target(const cat_remote *rm, const char **list_url, const char **key);
/* Percent-encode s: unreserved characters stay, and '/' too with keep_slash (a key in a URL
 * path; not in a query value). A new string (free), NULL without memory. */
char *cat_remote_percent_encode(const char *s, int keep_slash);
/* A 200 answer to a ranged request is taken when the whole object is at most this big; a
 * listing's page is read into a buffer of this size. */
#define CAT_REMOTE_SMALL_OBJECT ((int64_t)4 << 20)
/* The gc_grace_s option (seconds; < 0: never collect). */
int64_t cat_remote_gc_grace(const cat_remote *rm);
void cat_remote_stats(const cat_remote *rm, caterva_remote_stats *st);
/* Count n bytes as needed by a read (caterva_remote_stats.needed). */
void cat_remote_count_needed(cat_remote *rm, int64_t n);
/* Bytes of fetched ranges the session's store may keep (the cache_bytes option). */
int64_t cat_remote_cache_budget(const cat_remote *rm);
/* The whole_chunks option: chunks are fetched whole, never block by block. */
int cat_remote_whole_chunks(const cat_remote *rm);
/* Ranges of one object closer than this many bytes are worth asking as one request (from the
 * latency and bandwidth measured so far). */
int64_t cat_remote_merge_gap(const cat_remote *rm);
/* The link measured so far: seconds to an answer's first byte, body bytes/s (0: unknown). */
void cat_remote_link(const cat_remote *rm, double *lat_s, double *bw);
/* What a wave of `requests` ranged GETs moving `bytes` in all should cost on the link measured
 * so far, in seconds: the requests spread over the connections, each connection pays the
 * latency once per request it carries and moves its share of the bytes at the measured
 * per-connection rate. 0 while nothing is measured. */
double cat_remote_wave_cost(const cat_remote *rm, int64_t requests, int64_t bytes);
/* The connections a wave may use (the connections option). */
int cat_remote_connections(const cat_remote *rm);
void cat_remote_free(cat_remote *rm);

/* A test transport (tests/fuzz/fuzz_remote.c), never set by the library: every connection
 * libcurl opens is a stream socket the test gives, already connected (one end of a
 * socketpair), instead of a TCP connection, and the test feeds it the server's bytes. All the
 * rest runs as for users: libcurl's HTTP (status lines, headers, chunked bodies), its SigV4
 * signing, and this file's checks of every answer. With a transport set, a wave's loop calls
 * turn() before each turn of libcurl and never waits (in poll, or for a retry's backoff).
 * Process-wide; cat_remote_set_transport(NULL) restores TCP. */
typedef struct cat_remote_transport {
  int (*open)(void *arg);              /* a connected stream socket, or -1 */
  void (*close)(void *arg, int fd);    /* libcurl is done with fd: close it */
  void (*turn)(void *arg);             /* before each turn of a wave's loop */
  void *arg;
} cat_remote_transport;
void cat_remote_set_transport(const cat_remote_transport *t);

#endif /* CAT_REMOTE_H */
