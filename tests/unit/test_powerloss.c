/*
 * test_powerloss.c -- what a power loss can leave of commits to a contiguous frame file, at
 * each synchronous level (caterva_schunk_commit's sync: FULL, NORMAL, OFF).
 *
 * The model of the disk: after a power loss it holds what the file held at its last sync,
 * plus any subset of the writes made since then, each one whole, not at all or -- a write
 * longer than one 512-byte sector -- torn after its first sectors; a truncation since the
 * last sync is kept or not. The library's own calls are recorded as they happen
 * (cat_io_observe), and after every write and at the return of every commit each image the
 * disk could hold is built, written to a file and opened the way a reader opens it after a
 * restart; its chunks must be one of the committed states:
 *
 *   FULL    while a commit runs, the state before it or the new one; once it returned,
 *           the new one only (durable);
 *   NORMAL  while a commit runs, the state before it, the new one, or the one before the
 *           state before it (the previous commit's header may be unsynced); once it
 *           returned, the new one or the one before: at most the last commit is lost,
 *           never an unreadable or mixed file; after closing the handle, the last one;
 *   OFF     no promise; the same replay finds images a reader refuses or that hold no
 *           committed state -- which shows the check can fail, and fails the way NORMAL
 *           would if the sync before its header write were dropped.
 *
 * It also counts the syncs of one commit: two with FULL, one with NORMAL.
 */
#include "frame_internal.h" /* sc->fd: the descriptor whose writes are the frame's */
#include "fsutil.h"
#include "tap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CS 16384               /* bytes of a chunk: 4096 int32 items */
#define NITEMS (CS / 4)
#define MAXCHUNKS 16
#define MAXSTATES 16
#define MAXPENDING 8            /* 3^8 images per check at most */
#define SECTOR 512

static caterva_ctx *ctx;
static char tmpdir[256], imgpath[300];

/* A committed state: the version of every chunk (see item()). */
typedef struct state {
  int n;
  int ver[MAXCHUNKS];
} state;

/* One change not yet synced. */
typedef struct op {
  int kind;                    /* CAT_IO_WRITE or CAT_IO_TRUNCATE */
  int64_t off;                 /* where written, or the new length */
  uint8_t *buf;
  size_t n;
} op;

/* The recorder: what the disk holds for sure, what may reach it, and what is allowed. */
typedef struct rec {
  int fd;                      /* the frame's descriptor, -1 before it is known */
  uint8_t *durable;
  size_t dlen;
  op pending[MAXPENDING];
  int npending;
  state states[MAXSTATES];
  int nstates;                 /* states[nstates - 1]: the last committed one */
  int lo, hi;                  /* images must hold a state in states[lo .. hi] */
  int64_t syncs, images, bad, unexpected;
  char why[256];               /* the first failure seen */
} rec;

static rec R;

/* Item k of chunk i in version v: item 0 is v * 64 + i, the others hashed from it, so that a
 * chunk does not compress to less than a sector (its writes can be torn). */
static int32_t item(int v, int i, int k) {
  uint32_t x = (uint32_t)(v * 64 + i), h;
  if (k == 0) return (int32_t)x;
  h = x * 2654435761u + (uint32_t)k * 40503u;
  h ^= h >> 13;
  h *= 0x5bd1e995u;
  return (int32_t)(h ^ (h >> 15));
}

/* ---- images -------------------------------------------------------------------------------- */

static int apply(uint8_t **img, size_t *len, const op *o, size_t n) {
  if (o->kind == CAT_IO_TRUNCATE) {
    size_t to = (size_t)o->off;
    if (to > *len) {
      uint8_t *p = realloc(*img, to ? to : 1);
      if (p == NULL) return -1;
      memset(p + *len, 0, to - *len);
      *img = p;
    }
    *len = to;
    return 0;
  }
  if ((size_t)o->off + n > *len) {
    size_t to = (size_t)o->off + n;
    uint8_t *p = realloc(*img, to);
    if (p == NULL) return -1;
    memset(p + *len, 0, to - *len);
    *img = p;
    *len = to;
  }
  memcpy(*img + o->off, o->buf, n);
  return 0;
}

/* Bytes of op o that reach the disk under choice c: 0 none, 1 all, 2 its first sectors. */
static size_t kept(const op *o, int c) {
  size_t half;
  if (c == 0) return 0;
  if (c == 1 || o->kind != CAT_IO_WRITE || o->n <= SECTOR) return o->n;
  half = (o->n / 2) / SECTOR * SECTOR;
  return half ? half : SECTOR;
}

/* The state an image holds: its index in R.states, -1 when it holds none, -2 when a reader
 * refuses it. */
static int image_state(const uint8_t *img, size_t len) {
  caterva_schunk *sc = NULL;
  int32_t *buf = malloc(CS);
  state got;
  int found = -2;
  FILE *f = fopen(imgpath, "wb");
  if (f == NULL || buf == NULL || (len > 0 && fwrite(img, 1, len, f) != len)) {
    if (f) fclose(f);
    free(buf);
    return -2;
  }
  fclose(f);
  if (caterva_schunk_open(ctx, imgpath, CATERVA_OPEN_READ, &sc) < 0) goto leave;
  got.n = (int)caterva_schunk_nchunks(sc);
  if (got.n < 0 || got.n > MAXCHUNKS) goto leave;
  for (int i = 0; i < got.n; i++) {
    if (caterva_schunk_decompress_chunk(ctx, sc, i, buf, CS) != CS) goto leave;
    if (buf[0] < 0 || buf[0] % 64 != i) goto leave;
    got.ver[i] = buf[0] / 64;
    for (int k = 1; k < NITEMS; k++)
      if (buf[k] != item(got.ver[i], i, k)) goto leave;
  }
  found = -1;
  for (int s = R.nstates - 1; s >= 0 && found == -1; s--)
    if (R.states[s].n == got.n && memcmp(R.states[s].ver, got.ver, (size_t)got.n * sizeof(int)) == 0)
      found = s;
leave:
  caterva_schunk_free(sc);
  free(buf);
  return found;
}

/* Every image the disk may hold now: each pending op none / whole / torn. */
static void check_images(const char *when) {
  int choice[MAXPENDING], total = 1;
  for (int k = 0; k < R.npending; k++) total *= 3;
  memset(choice, 0, sizeof choice);
  for (int c = 0; c < total; c++) {
    uint8_t *img = malloc(R.dlen ? R.dlen : 1);
    size_t len = R.dlen;
    int s, v = c;
    if (img == NULL) return;
    memcpy(img, R.durable, R.dlen);
    for (int k = 0; k < R.npending; k++, v /= 3) {
      size_t n = kept(&R.pending[k], v % 3);
      if (n > 0 || (v % 3 != 0 && R.pending[k].kind == CAT_IO_TRUNCATE))
        (void)apply(&img, &len, &R.pending[k], n);
    }
    s = image_state(img, len);
    R.images++;
    if (s < R.lo || s > R.hi) {
      if (R.bad++ == 0)
        snprintf(R.why, sizeof R.why, "%s: image %d of %d (%zu bytes) holds %s %d, allowed %d..%d",
                 when, c, total, len, s == -2 ? "nothing readable" : "state", s, R.lo, R.hi);
    }
    free(img);
  }
}

/* ---- the recorder ---------------------------------------------------------------------- */

static void forget_pending(void) {
  for (int k = 0; k < R.npending; k++) free(R.pending[k].buf);
  R.npending = 0;
}

static void on_io(void *arg, int kind, int fd, int64_t off, const void *buf, size_t n) {
  (void)arg;
  if (kind == CAT_IO_RENAME) R.unexpected++;
  if (fd != R.fd || R.fd < 0) return;
  if (kind == CAT_IO_SYNC) {
    R.syncs++;
    for (int k = 0; k < R.npending; k++)
      (void)apply(&R.durable, &R.dlen, &R.pending[k], R.pending[k].n);
    forget_pending();
    return;
  }
  if (R.npending == MAXPENDING) {
    R.unexpected++;
    return;
  }
  R.pending[R.npending].kind = kind;
  R.pending[R.npending].off = off;
  R.pending[R.npending].n = n;
  R.pending[R.npending].buf = n ? malloc(n) : NULL;
  if (n && R.pending[R.npending].buf == NULL) {
    R.unexpected++;
    return;
  }
  if (n) memcpy(R.pending[R.npending].buf, buf, n);
  R.npending++;
  check_images(kind == CAT_IO_WRITE ? "after a write" : "after a truncation");
}

/* ---- the run ------------------------------------------------------------------------------ */

static int put_chunk(caterva_schunk *sc, int i, int ver, int append) {
  static int32_t data[NITEMS];
  static uint8_t cbuf[CS + CATERVA_CHUNK_MAX_OVERHEAD];
  caterva_cparams cp;
  int32_t cb;
  for (int k = 0; k < NITEMS; k++) data[k] = item(ver, i, k);
  caterva_cparams_init(&cp);
  cp.typesize = 4;
  cp.clevel = 1;
  cb = caterva_chunk_compress(ctx, &cp, data, CS, cbuf, (int32_t)sizeof cbuf);
  if (cb < 0) return cb;
  if (append) return caterva_schunk_append_chunk(ctx, sc, cbuf, cb) < 0 ? -1 : 0;
  return caterva_schunk_update_chunk(ctx, sc, i, cbuf, cb);
}

static void push_state(const state *s) {
  if (R.nstates < MAXSTATES) R.states[R.nstates++] = *s;
}

static const char *level_name(int sync) {
  return sync == CATERVA_SYNC_FULL ? "FULL" : sync == CATERVA_SYNC_NORMAL ? "NORMAL" : "OFF";
}

/* Six transactions at one sync level (two with OFF, whose unsynced writes pile up: every
 * subset of them is an image), every image checked; returns the images found bad. */
static int64_t run(int sync) {
  int ntxn = sync == CATERVA_SYNC_OFF ? 2 : 6;
  const char *ln = level_name(sync);
  char path[300];
  caterva_schunk *sc = NULL;
  caterva_cparams cp;
  state st;
  size_t len;
  int ok = 1, nsync_first = -1;
  snprintf(path, sizeof path, "%s/frame_%s.b2nd", tmpdir, ln);
  memset(&R, 0, sizeof R);
  R.fd = -1;
  memset(&st, 0, sizeof st);
  caterva_cparams_init(&cp);
  cp.typesize = 4;
  cp.clevel = 1;
  /* the initial frame: four chunks, version 1 */
  ok = caterva_schunk_new(ctx, &cp, CS, CATERVA_STORE_CONTIGUOUS, path, &sc) == 0;
  for (int i = 0; ok && i < 4; i++) ok = put_chunk(sc, i, 1, 1) == 0;
  caterva_schunk_free(sc);
  sc = NULL;
  st.n = 4;
  for (int i = 0; i < 4; i++) st.ver[i] = 1;
  push_state(&st);
  ok = ok && caterva_schunk_open(ctx, path, CATERVA_OPEN_WRITE, &sc) == 0;
  if (!tap_ok(ok, "%s: a frame of 4 chunks written and opened", ln)) {
    tap_diag("%s", caterva_ctx_errmsg(ctx));
    caterva_schunk_free(sc);
    return -1;
  }
  caterva_schunk_set_flags(sc, CATERVA_SC_NO_AUTOCOMPACT);
  R.durable = tu_read_file(path, &len);
  R.dlen = len;
  R.fd = sc->fd;
  cat_io_observe(on_io, NULL);
  for (int t = 0; ok && t < ntxn; t++) {
    int64_t s0 = R.syncs;
    /* during the commit: the state before, the new one, and with NORMAL the one before */
    R.hi = R.nstates;
    R.lo = R.nstates - 1 - (sync == CATERVA_SYNC_NORMAL && R.nstates >= 2);
    if (sync == CATERVA_SYNC_OFF) R.lo = 0;
    ok = caterva_schunk_begin(ctx, sc) == 0;
    st.ver[t % st.n] = t + 2;
    ok = ok && put_chunk(sc, t % st.n, t + 2, 0) == 0;
    if (t % 2 == 1) { /* a second chunk, or a new one */
      if (t == 3 && st.n < MAXCHUNKS) {
        st.ver[st.n] = t + 2;
        ok = ok && put_chunk(sc, st.n, t + 2, 1) == 0;
        st.n++;
      } else {
        st.ver[(t + 2) % st.n] = t + 2;
        ok = ok && put_chunk(sc, (t + 2) % st.n, t + 2, 0) == 0;
      }
    }
    push_state(&st);
    ok = ok && caterva_schunk_commit(ctx, sc, sync) == 0;
    if (!ok) tap_diag("%s: transaction %d: %s", ln, t, caterva_ctx_errmsg(ctx));
    if (nsync_first < 0) nsync_first = (int)(R.syncs - s0);
    /* once it returned */
    R.hi = R.nstates - 1;
    R.lo = sync == CATERVA_SYNC_FULL ? R.hi : sync == CATERVA_SYNC_NORMAL ? R.hi - 1 : 0;
    check_images("after the commit returned");
  }
  tap_ok(ok, "%s: %d transactions committed (updates, two-chunk updates%s)", ln, ntxn,
         ntxn > 3 ? ", an append" : "");
  /* closing the handle */
  R.lo = R.hi = R.nstates - 1;
  if (sync == CATERVA_SYNC_OFF) R.lo = 0;
  caterva_schunk_free(sc);
  check_images("after the handle was closed");
  cat_io_observe(NULL, NULL);
  forget_pending();
  free(R.durable);
  tap_diag("%s: %lld images checked, %lld outside the allowed states, %lld syncs in all",
           ln, (long long)R.images, (long long)R.bad, (long long)R.syncs);
  if (R.bad) tap_diag("%s: first: %s", ln, R.why);
  if (sync == CATERVA_SYNC_FULL)
    tap_ok(nsync_first == 2, "FULL: a commit syncs twice (index and trailer, then the header): %d",
           nsync_first);
  if (sync == CATERVA_SYNC_NORMAL)
    tap_ok(nsync_first == 1, "NORMAL: a commit syncs once (index and trailer): %d", nsync_first);
  tap_ok(R.unexpected == 0, "%s: no rename, no more than %d unsynced changes", ln, MAXPENDING);
  return R.bad;
}

int main(void) {
  int64_t bad;
  const char *t = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/test_powerloss.XXXXXX", t && *t ? t : "/tmp");
  if (mkdtemp(tmpdir) == NULL || caterva_ctx_new(1, &ctx) != 0) {
    tap_ok(0, "setup");
    return tap_done();
  }
  snprintf(imgpath, sizeof imgpath, "%s/image.b2nd", tmpdir);

  bad = run(CATERVA_SYNC_FULL);
  tap_ok(bad == 0, "FULL: every image a power loss can leave is the state before the commit "
                   "or after it, and only the new one once the commit returned");
  bad = run(CATERVA_SYNC_NORMAL);
  tap_ok(bad == 0, "NORMAL: every image is a committed state, at most the last commit lost "
                   "once a commit returned, the last one after close");
  bad = run(CATERVA_SYNC_OFF);
  tap_ok(bad > 0, "OFF (no sync): the same replay finds %lld images that are unreadable or "
                  "hold no committed state (the check can fail)", (long long)bad);

  tu_rm_tree(tmpdir);
  caterva_ctx_free(ctx);
  return tap_done();
}
