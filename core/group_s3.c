/*
 * group_s3.c -- one commit across several arrays in S3 (sparse frames under s3:// prefixes),
 * which has no write of several objects at once. docs/guarantees.md ("Tables over several
 * arrays in S3") has the protocol and why it holds; in short:
 *
 *   - The arrays of a group are named by their prefixes; the smallest is the leader. Every
 *     member carries a mark, the vlmetalayer `_caterva_group` (a msgpack str of the text
 *     below), in its own chunks.b2frame, added by a commit of its own the first time a group
 *     table writes it (enrollment, If-Match like any commit). A commit of a marked array
 *     outside a group commit is refused (frame_s3.c): from the version that carries the mark
 *     on, only group commits write the members, and they are ordered by the leader's index.
 *   - A group commit: (1) every changed member other than the leader uploads its chunks and
 *     stages its new index as `chunks.b2frame.<txn>.pending` (If-None-Match: *); (2) the
 *     leader commits as a single array does (If-Match on its version), its mark carrying the
 *     record -- for each staged member its position, the staged length and the ETag of the
 *     chunks.b2frame it replaces (the base): this PUT is the commit point; (3) each staged
 *     index is copied to the member's chunks.b2frame with If-Match: <base> (roll-forward),
 *     then the staged object is deleted.
 *   - Whoever writes the group next rolls the leader's record forward first (a member whose
 *     chunks.b2frame is still at its base gets the staged index, If-Match: <base>); any other
 *     version there means it was rolled forward already (nobody else writes a member).
 *   - A reader of the group reads the leader, then the members, then checks the leader is
 *     still at the same version: the members hold its commit unless one is still at a base
 *     the record names (its roll-forward has not landed: the reader waits, or reports it).
 *
 * Mark text: "caterva-group 1\n", "txn <16 hex>\n", one "member <s3 url>\n" per member in
 * byte order, then on the leader one "pend <position> <length> <base ETag>\n" per staged
 * member.
 */
#include "array_layer_internal.h"
#include "frame_internal.h"
#include "frame_s3.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define GS_MAGIC "caterva-group 1"
#define GS_TEXT_MAX ((int64_t)1 << 20)
#define GS_ROLL_TRIES 4

typedef struct gs_pend {
  int k;                   /* position of the member in the sorted list */
  int64_t len;             /* bytes of its staged index */
  char base[CAT_RVERSION]; /* the chunks.b2frame version the staged index replaces */
} gs_pend;

typedef struct gs_mark {
  char txn[17];
  int n;                          /* members */
  char *mem[CATERVA_GROUP_MAX];   /* their prefixes, sorted (owned) */
  int npend;
  gs_pend pend[CATERVA_GROUP_MAX];
} gs_mark;

/* The table's arrays by prefix: sorted[j] is the prefix of a[idx[j]]. */
typedef struct gs_set {
  int n;
  char *sorted[CATERVA_GROUP_MAX];
  int idx[CATERVA_GROUP_MAX];
} gs_set;

static void mark_free(gs_mark *m) {
  for (int i = 0; i < m->n; i++) free(m->mem[i]);
  memset(m, 0, sizeof *m);
}

static void set_free(gs_set *s) {
  for (int i = 0; i < s->n; i++) free(s->sorted[i]);
  s->n = 0;
}

/* path with exactly one trailing '/' (malloc'ed). */
static char *norm_prefix(const char *path) {
  size_t n = strlen(path);
  char *p;
  while (n > 0 && path[n - 1] == '/') n--;
  p = malloc(n + 2);
  if (p == NULL) return NULL;
  memcpy(p, path, n);
  p[n] = '/';
  p[n + 1] = '\0';
  return p;
}

static int set_build(caterva_ctx *ctx, caterva_array **a, int n, gs_set *s) {
  int rc = CATERVA_OK;
  memset(s, 0, sizeof *s);
  CAT_CHECK(leave, a != NULL && n >= 1 && n <= CATERVA_GROUP_MAX, CATERVA_E_INVALID,
            "a group commit in S3 takes 1 to %d arrays", CATERVA_GROUP_MAX);
  for (int i = 0; i < n; i++) {
    caterva_schunk *sc = a[i]->sc;
    char *p;
    int k;
    CAT_CHECK(leave, sc->remote != NULL && sc->path != NULL && cat_path_is_s3(sc->path) &&
                         sc->store == CATERVA_STORE_SPARSE,
              CATERVA_E_INVALID, "a group commit in S3 takes sparse frames under s3:// prefixes");
    p = norm_prefix(sc->path);
    CAT_CHECK(leave, p != NULL, CATERVA_E_NOMEM, "out of memory");
    CAT_CHECK(leave, strcspn(p, " \t\r\n") == strlen(p), CATERVA_E_INVALID,
              "'%s': a prefix of a group in S3 holds no blank", p);
    for (k = s->n; k > 0 && strcmp(s->sorted[k - 1], p) > 0; k--) {
      s->sorted[k] = s->sorted[k - 1];
      s->idx[k] = s->idx[k - 1];
    }
    s->sorted[k] = p;
    s->idx[k] = i;
    s->n++;
    CAT_CHECK(leave, (k == 0 || strcmp(s->sorted[k - 1], p) != 0) &&
                         (k + 1 == s->n || strcmp(s->sorted[k + 1], p) != 0),
              CATERVA_E_INVALID, "'%s' is named twice in one group commit", p);
  }
leave:
  if (rc < 0) set_free(s);
  return rc;
}

/* ---- the mark ---------------------------------------------------------------------------- */

static int mark_encode(caterva_ctx *ctx, const gs_mark *m, uint8_t **out, int32_t *len) {
  int64_t n = 64;
  char *t;
  uint8_t *b;
  size_t at;
  for (int i = 0; i < m->n; i++) n += 8 + (int64_t)strlen(m->mem[i]);
  n += (int64_t)m->npend * (48 + CAT_RVERSION);
  if (n > GS_TEXT_MAX) return cat_error(ctx, CATERVA_E_OVERFLOW, "group mark too large");
  b = malloc((size_t)n + 5);
  if (b == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  t = (char *)b + 5;
  at = (size_t)snprintf(t, (size_t)n, "%s\ntxn %s\n", GS_MAGIC, m->txn);
  for (int i = 0; i < m->n; i++)
    at += (size_t)snprintf(t + at, (size_t)n - at, "member %s\n", m->mem[i]);
  for (int i = 0; i < m->npend; i++)
    at += (size_t)snprintf(t + at, (size_t)n - at, "pend %d %lld %s\n", m->pend[i].k,
                           (long long)m->pend[i].len, m->pend[i].base);
  b[0] = 0xdb; /* msgpack str 32, so msgpack readers of the attributes read it */
  b[1] = (uint8_t)(at >> 24);
  b[2] = (uint8_t)(at >> 16);
  b[3] = (uint8_t)(at >> 8);
  b[4] = (uint8_t)at;
  *out = b;
  *len = (int32_t)(at + 5);
  return CATERVA_OK;
}

/* One line of t[0..n) from *off (without its '\n') into line (cap bytes): 0 at the end. */
static int next_line(const char *t, size_t n, size_t *off, char *line, size_t cap) {
  size_t e = *off;
  if (e >= n) return 0;
  while (e < n && t[e] != '\n') e++;
  if (e == n || e - *off >= cap) return -1;
  memcpy(line, t + *off, e - *off);
  line[e - *off] = '\0';
  *off = e + 1;
  return 1;
}

static int mark_decode(caterva_ctx *ctx, const uint8_t *b, int32_t len, gs_mark *m) {
  char line[4096 + CAT_RVERSION];
  const char *t;
  size_t n, off = 0, hl;
  int r, rc = CATERVA_OK;
  memset(m, 0, sizeof *m);
  CAT_CHECK(leave, len >= 2 && (b[0] == 0xd9 || b[0] == 0xda || b[0] == 0xdb), CATERVA_E_CORRUPT,
            "vlmetalayer %s is not a msgpack str", CAT_S3_GROUP_VLMETA);
  hl = b[0] == 0xd9 ? 2 : b[0] == 0xda ? 3 : 5;
  CAT_CHECK(leave, (size_t)len >= hl, CATERVA_E_CORRUPT, "vlmetalayer %s: short",
            CAT_S3_GROUP_VLMETA);
  n = hl == 2 ? b[1] : hl == 3 ? ((size_t)b[1] << 8 | b[2])
                               : ((size_t)b[1] << 24 | (size_t)b[2] << 16 | (size_t)b[3] << 8 | b[4]);
  CAT_CHECK(leave, n == (size_t)len - hl, CATERVA_E_CORRUPT, "vlmetalayer %s: length",
            CAT_S3_GROUP_VLMETA);
  t = (const char *)b + hl;
  CAT_CHECK(leave, next_line(t, n, &off, line, sizeof line) == 1 && strcmp(line, GS_MAGIC) == 0,
            CATERVA_E_CORRUPT, "vlmetalayer %s: not a group mark of this version",
            CAT_S3_GROUP_VLMETA);
  CAT_CHECK(leave, next_line(t, n, &off, line, sizeof line) == 1 && strncmp(line, "txn ", 4) == 0 &&
                       strlen(line + 4) < sizeof m->txn,
            CATERVA_E_CORRUPT, "vlmetalayer %s: txn", CAT_S3_GROUP_VLMETA);
  snprintf(m->txn, sizeof m->txn, "%s", line + 4);
  while ((r = next_line(t, n, &off, line, sizeof line)) == 1) {
    if (strncmp(line, "member ", 7) == 0 && m->npend == 0) {
      CAT_CHECK(leave, m->n < CATERVA_GROUP_MAX && line[7] != '\0', CATERVA_E_CORRUPT,
                "vlmetalayer %s: members", CAT_S3_GROUP_VLMETA);
      m->mem[m->n] = cat_strndup(line + 7, strlen(line + 7));
      CAT_CHECK(leave, m->mem[m->n] != NULL, CATERVA_E_NOMEM, "out of memory");
      CAT_CHECK(leave, m->n == 0 || strcmp(m->mem[m->n - 1], m->mem[m->n]) < 0,
                CATERVA_E_CORRUPT, "vlmetalayer %s: members out of order", CAT_S3_GROUP_VLMETA);
      m->n++;
    } else if (strncmp(line, "pend ", 5) == 0) {
      gs_pend *p = &m->pend[m->npend];
      long long k = -1, l = -1;
      int used = 0;
      CAT_CHECK(leave, m->npend < m->n &&
                           sscanf(line + 5, "%lld %lld %n", &k, &l, &used) == 2 && used > 0 &&
                           k >= 0 && k < m->n && l > 0 && l <= INT32_MAX &&
                           line[5 + used] != '\0' && strlen(line + 5 + used) < CAT_RVERSION,
                CATERVA_E_CORRUPT, "vlmetalayer %s: pend", CAT_S3_GROUP_VLMETA);
      p->k = (int)k;
      p->len = l;
      snprintf(p->base, sizeof p->base, "%s", line + 5 + used);
      m->npend++;
    } else {
      CAT_FAIL(leave, CATERVA_E_CORRUPT, "vlmetalayer %s: unknown line", CAT_S3_GROUP_VLMETA);
    }
  }
  CAT_CHECK(leave, r == 0 && m->n >= 1, CATERVA_E_CORRUPT, "vlmetalayer %s: torn",
            CAT_S3_GROUP_VLMETA);
leave:
  if (rc < 0) mark_free(m);
  return rc;
}

/* The mark of sc: 1 (in *m), 0 none, < 0 an error. */
static int mark_get(caterva_ctx *ctx, caterva_schunk *sc, gs_mark *m) {
  uint8_t *v = NULL;
  int32_t len = 0;
  int rc = caterva_schunk_vlmeta_get(ctx, sc, CAT_S3_GROUP_VLMETA, &v, &len);
  memset(m, 0, sizeof *m);
  if (rc == CATERVA_E_NOTFOUND) {
    if (ctx != NULL) ctx->errmsg[0] = '\0';
    return 0;
  }
  if (rc >= 0) rc = mark_decode(ctx, v, len, m);
  free(v);
  return rc < 0 ? rc : 1;
}

/* Does m name path's prefix? A mark that does not came with a copy of a member (caterva_copy
 * copies the attributes): it means nothing for the copy. */
static int names_prefix(const gs_mark *m, const char *path) {
  char *p = norm_prefix(path);
  int found = 0;
  if (p == NULL) return CATERVA_E_NOMEM;
  for (int i = 0; i < m->n && !found; i++) found = strcmp(m->mem[i], p) == 0;
  free(p);
  return found;
}

int cat_s3_group_member(caterva_ctx *ctx, caterva_schunk *sc) {
  gs_mark m;
  int rc = mark_get(ctx, sc, &m);
  if (rc == 1) {
    rc = names_prefix(&m, sc->path);
    if (rc == CATERVA_E_NOMEM) rc = cat_error(ctx, rc, "out of memory");
  }
  mark_free(&m);
  return rc;
}

static bool same_members(const gs_mark *m, const gs_set *s) {
  if (m->n != s->n) return false;
  for (int i = 0; i < m->n; i++)
    if (strcmp(m->mem[i], s->sorted[i]) != 0) return false;
  return true;
}

static int set_mark(caterva_ctx *ctx, caterva_schunk *sc, const gs_mark *m) {
  uint8_t *b = NULL;
  int32_t len = 0;
  int rc = mark_encode(ctx, m, &b, &len);
  if (rc >= 0) rc = caterva_schunk_vlmeta_set(ctx, sc, CAT_S3_GROUP_VLMETA, b, len);
  free(b);
  return rc;
}

/* A mark naming the members of s and a new transaction identity (no record). */
static void mark_of(const gs_set *s, gs_mark *m) {
  static unsigned counter;
  struct timespec ts;
  uint64_t h = 14695981039346656037ULL;
  uint64_t v[3];
  memset(m, 0, sizeof *m);
  clock_gettime(CLOCK_REALTIME, &ts);
  v[0] = (uint64_t)getpid();
  v[1] = __atomic_fetch_add(&counter, 1, __ATOMIC_RELAXED);
  v[2] = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
  for (int i = 0; i < 3; i++)
    for (int k = 0; k < 8; k++) h = (h ^ ((v[i] >> (8 * k)) & 0xff)) * 1099511628211ULL;
  snprintf(m->txn, sizeof m->txn, "%016llx", (unsigned long long)h);
  m->n = s->n;
  for (int i = 0; i < s->n; i++) m->mem[i] = s->sorted[i]; /* borrowed: not mark_free'd */
}

/* ---- roll-forward -------------------------------------------------------------------------- */

static void staged_leaf(char *leaf, size_t cap, const char *txn) {
  snprintf(leaf, cap, "%s.%s.pending", CAT_SPARSE_INDEX, txn);
}

/* Fetch a staged index of len bytes into a new buffer: 1, or 0 when it is gone. */
static int fetch_staged(caterva_ctx *ctx, cat_remote *rm, const char *url, int64_t len,
                        uint8_t **out) {
  cat_get g;
  int rc;
  memset(&g, 0, sizeof g);
  g.url = url;
  g.len = len;
  g.missing_ok = true;
  g.short_ok = true;
  g.dst = malloc((size_t)len);
  if (g.dst == NULL) return cat_error(ctx, CATERVA_E_NOMEM, "out of memory");
  rc = cat_remote_get(ctx, rm, &g, 1);
  if (rc >= 0 && (g.status == 404 || g.status == 403)) rc = 0;
  else if (rc >= 0 && g.got != len)
    rc = cat_error(ctx, CATERVA_E_CORRUPT, "'%s': %lld bytes, the record says %lld", url,
                   (long long)g.got, (long long)len);
  else if (rc >= 0) rc = 1;
  if (rc == 1) *out = g.dst;
  else free(g.dst);
  return rc;
}

/* Copy the staged index of record p to sc's chunks.b2frame with If-Match: <base>. body: its
 * bytes, or NULL to fetch them. 1 published by this call (*version its ETag), 0 published
 * already (chunks.b2frame is no longer at the base), < 0 an error. */
static int roll_one(caterva_ctx *ctx, caterva_schunk *sc, const char *txn, const gs_pend *p,
                    const uint8_t *body, char *version) {
  cat_remote *rm = cat_rstore_session(sc);
  char leaf[64], *iurl, *purl;
  uint8_t *own = NULL;
  int rc = CATERVA_OK;
  staged_leaf(leaf, sizeof leaf, txn);
  iurl = cat_remote_sibling(cat_rstore_url(sc), CAT_SPARSE_INDEX);
  purl = cat_remote_sibling(cat_rstore_url(sc), leaf);
  CAT_CHECK(leave, iurl != NULL && purl != NULL, CATERVA_E_NOMEM, "out of memory");
  for (int attempt = 0; attempt < GS_ROLL_TRIES; attempt++) {
    char cur[CAT_RVERSION];
    int64_t size = -1;
    int outcome;
    long status;
    if (attempt > 0) cat_pause_ms(100 << attempt);
    CAT_TRY(leave, cat_remote_head(ctx, rm, iurl, &size, cur, sizeof cur));
    if (strcmp(cur, p->base) != 0) {
      rc = 0; /* nobody else writes a member: it was rolled forward */
      goto leave;
    }
    if (body == NULL) {
      rc = fetch_staged(ctx, rm, purl, p->len, &own);
      CAT_TRY(leave, rc);
      if (rc == 0) continue; /* deleted after its roll-forward: the HEAD says so */
      body = own;
    }
    CAT_TRY(leave, cat_s3_put_index(ctx, rm, iurl, body, p->len, p->base, version, &outcome,
                                    &status));
    if (outcome == CAT_PUT_DONE) {
      rc = 1;
      goto leave;
    }
    /* 412 or no answer: the next HEAD says whether it (or another writer's) landed */
  }
  CAT_FAIL(leave, CATERVA_E_REMOTE,
           "'%s': the roll-forward of a committed group transaction (%s) did not land "
           "(retries exhausted); the next write of the group finishes it", sc->path, txn);
leave:
  if (rc >= 0) { /* rolled forward: the staged copy is needed no more (best effort) */
    char *u[1] = {purl};
    if (purl != NULL) (void)cat_remote_delete(ctx, rm, u, 1);
  }
  free(own);
  free(iurl);
  free(purl);
  return rc;
}

/* Roll the record in the leader's mark forward where a member's handle is still at its base
 * (a handle that holds another version is opened again by the caller anyway). */
static int roll_record(caterva_ctx *ctx, caterva_array **a, const gs_set *s, const gs_mark *m,
                       int *reopen) {
  for (int i = 0; i < m->npend; i++) {
    const gs_pend *p = &m->pend[i];
    int j = s->idx[p->k];
    char version[CAT_RVERSION];
    int rc;
    if (strcmp(cat_rstore_version(a[j]->sc), p->base) != 0) continue;
    rc = roll_one(ctx, a[j]->sc, m->txn, p, NULL, version);
    if (rc < 0) return rc;
    reopen[j] = 1;
  }
  return CATERVA_OK;
}

/* ---- the API ------------------------------------------------------------------------------ */

/* Enroll array i: a commit of its own that adds the mark. 1 when it lost to another writer
 * (open it again and retry). */
static int enroll(caterva_ctx *ctx, caterva_array *arr, const gs_set *s) {
  gs_mark m;
  caterva_schunk *sc = arr->sc;
  int rc;
  mark_of(s, &m);
  CAT_TRY(leave, caterva_array_begin(ctx, arr));
  rc = set_mark(ctx, sc, &m);
  if (rc >= 0) {
    sc->s3_group = true;
    rc = caterva_array_commit(ctx, arr, CATERVA_SYNC_FULL);
    sc->s3_group = false;
  }
  if (rc < 0 && caterva_schunk_in_txn(sc)) (void)caterva_array_rollback(ctx, arr);
  if (rc == CATERVA_E_BUSY) rc = 1;
leave:
  return rc;
}

int caterva_group_s3_ready(caterva_ctx *ctx, caterva_array **a, int n, int *reopen) {
  gs_set s;
  gs_mark m;
  int rc, again = 0;
  memset(&m, 0, sizeof m);
  CAT_TRY(out, set_build(ctx, a, n, &s));
  for (int i = 0; i < n; i++) reopen[i] = 0;
  for (int i = 0; i < n; i++) {
    rc = mark_get(ctx, a[i]->sc, &m);
    CAT_TRY(leave, rc);
    if (rc == 1 && names_prefix(&m, a[i]->sc->path) == 0) rc = 0; /* a copy's */
    CAT_CHECK(leave, rc == 0 || same_members(&m, &s), CATERVA_E_READONLY,
              "'%s' belongs to a group of arrays in S3 led by '%s' (%d arrays): it is written "
              "only through a table over exactly those arrays", a[i]->sc->path, m.mem[0], m.n);
    if (i == s.idx[0] && rc == 1) CAT_TRY(leave, roll_record(ctx, a, &s, &m, reopen));
    mark_free(&m);
  }
  for (int i = 0; i < n; i++) again |= reopen[i];
  for (int i = 0; i < n && !again; i++) {
    rc = cat_s3_group_member(ctx, a[i]->sc);
    CAT_TRY(leave, rc);
    if (rc == 1) continue;
    rc = enroll(ctx, a[i], &s);
    CAT_TRY(leave, rc);
    reopen[i] = rc; /* lost: open it again; won: its handle is at the new version */
    again |= rc;
  }
  rc = again;
leave:
  mark_free(&m);
  set_free(&s);
out:
  return rc;
}

/* Step 1: member i's index staged under the transaction's name, its record in *p. */
static int stage_member(caterva_ctx *ctx, caterva_array *arr, const gs_mark *mem, int k,
                        cat_s3stage *st, gs_pend *p) {
  caterva_schunk *sc = arr->sc;
  int rc;
  staged_leaf(st->leaf, sizeof st->leaf, mem->txn);
  CAT_TRY(leave, set_mark(ctx, sc, mem));
  sc->s3stage = st;
  sc->s3_group = true;
  rc = caterva_array_commit(ctx, arr, CATERVA_SYNC_FULL);
  sc->s3stage = NULL;
  sc->s3_group = false;
  CAT_TRY(leave, rc);
  p->k = k;
  p->len = st->len;
  snprintf(p->base, sizeof p->base, "%s", st->base);
leave:
  return rc;
}

int caterva_group_s3_commit(caterva_ctx *ctx, caterva_array **a, const int *written, int n,
                            int *reopen) {
  gs_set s;
  gs_mark m;
  cat_s3stage *st = NULL;
  int rc, lead;
  int64_t first = -1, grace, committed;
  CAT_TRY(out, set_build(ctx, a, n, &s));
  for (int i = 0; i < n; i++) reopen[i] = 0;
  lead = s.idx[0];
  mark_of(&s, &m);
  st = calloc((size_t)n, sizeof *st);
  CAT_CHECK(leave, st != NULL, CATERVA_E_NOMEM, "out of memory");
  for (int j = 1; j < s.n; j++) {
    int i = s.idx[j];
    if (!written[i]) continue;
    rc = stage_member(ctx, a[i], &m, j, &st[i], &m.pend[m.npend]);
    if (rc < 0) goto undo;
    reopen[i] = 1; /* its handle holds the staged state until the roll-forward */
    m.npend++;
    if (first < 0 || st[i].start_ms < first) first = st[i].start_ms;
  }
  /* the staged chunks must not be collectable before the record names them */
  grace = cat_remote_gc_grace(cat_rstore_session(a[lead]->sc));
  CAT_CHECK(undo, first < 0 || grace < 0 || grace > INT64_MAX / 1000 ||
                      (cat_mono_ms() - first) * 2 <= grace * 1000,
            CATERVA_E_REMOTE, "'%s': staging this transaction took longer than half of gc_grace "
            "(%lld s); nothing of it is visible: run it again", a[lead]->sc->path,
            (long long)grace);
  /* step 2: the leader's commit carries the record: the commit point */
  CAT_TRY(undo, set_mark(ctx, a[lead]->sc, &m));
  a[lead]->sc->s3_group = true;
  rc = caterva_array_commit(ctx, a[lead], CATERVA_SYNC_FULL);
  a[lead]->sc->s3_group = false;
  if (rc < 0) goto undo;
  committed = cat_mono_ms();
  /* step 3: roll forward; a failure leaves it to the next writer (the group is committed) */
  for (int q = 0; q < m.npend; q++) {
    int i = s.idx[m.pend[q].k];
    char version[CAT_RVERSION];
    int r = roll_one(ctx, a[i]->sc, m.txn, &m.pend[q], st[i].body, version);
    if (r == 1) {
      /* a collection long after the commit point might take chunks of a later group
       * commit staged meanwhile (they are younger than this commit point): none then */
      bool fresh = grace < 0 || grace > INT64_MAX / 1000 ||
                   (cat_mono_ms() - committed) * 2 <= grace * 1000;
      cat_s3_staged_published(ctx, a[i]->sc, &st[i], version, fresh);
      reopen[i] = 0;
    }
  }
  for (int i = 0; i < n; i++)
    if (reopen[i]) cat_rstore_forsake(a[i]->sc);
  if (ctx != NULL) ctx->errmsg[0] = '\0';
  rc = CATERVA_OK;
  goto leave;
undo:
  /* nothing is visible (or, after a commit point whose answer was lost, the next writer
   * finds out): the staged handles are read again */
  for (int i = 0; i < n; i++)
    if (reopen[i]) cat_rstore_forsake(a[i]->sc);
leave:
  for (int i = 0; st != NULL && i < n; i++) cat_s3stage_clear(&st[i]);
  free(st);
  for (int i = 0; i < m.n; i++) m.mem[i] = NULL; /* borrowed from s */
  set_free(&s);
out:
  return rc;
}

int caterva_group_s3_consistent(caterva_ctx *ctx, caterva_array **a, int n) {
  gs_set s;
  gs_mark m;
  int rc;
  CAT_TRY(out, set_build(ctx, a, n, &s));
  rc = mark_get(ctx, a[s.idx[0]]->sc, &m);
  if (rc == 1) {
    rc = 1;
    for (int q = 0; q < m.npend && same_members(&m, &s); q++)
      if (strcmp(cat_rstore_version(a[s.idx[m.pend[q].k]]->sc), m.pend[q].base) == 0) rc = 0;
  } else if (rc == 0) {
    rc = 1;
  }
  mark_free(&m);
  set_free(&s);
out:
  return rc;
}

int caterva_group_s3_leader(caterva_ctx *ctx, caterva_array **a, int n) {
  gs_set s;
  int rc;
  CAT_TRY(out, set_build(ctx, a, n, &s));
  rc = s.idx[0];
  set_free(&s);
out:
  return rc;
}
