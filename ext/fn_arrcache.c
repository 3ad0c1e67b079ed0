/*
 * fn_arrcache.c -- arrays kept open between calls of the SQL functions of one connection.
 *
 * caterva_info(), caterva_slice(), caterva_export() and caterva_png() name an array by path
 * (or by a table, which resolves to its path). Opening one maps the file and parses its
 * header, index and attributes, which for small slices costs as much as the slice itself;
 * so the last CV_ARRCACHE_SIZE arrays opened this way stay open, read-only.
 *
 * A cached array is used again only while its file is provably the one it was opened from:
 * the same device, inode, size, mtime and ctime (for a sparse frame, those of the directory
 * and of its index file chunks.b2frame). Every write through any process changes ctime, but
 * file times are coarse (a clock tick, a few ms): a file changed in the same tick as a
 * previous change could keep its ctime. So, as git does with "racily clean" index entries,
 * an array is cached only when its file's last change lies more than CV_ARRCACHE_SETTLE
 * seconds in the past: any later change then gets a later ctime. Arrays of files changed
 * more recently are opened and closed for each call, as before.
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define CV_ARRCACHE_SIZE 4
#define CV_ARRCACHE_SETTLE 2  /* seconds */

/* What identifies one state of a file: compared field by field. */
typedef struct CvFileId {
  dev_t dev;
  ino_t ino;
  off_t size;
  struct timespec mtime, ctime;
} CvFileId;

struct CvArrCache {
  struct CvArrEntry {
    char *zPath;              /* as the caller gave it */
    CvFileId id[2];           /* the file (or directory, and its chunks.b2frame) */
    caterva_array *pArr;
    int nUse;                 /* callers holding it */
    sqlite3_uint64 iTick;     /* last use, for LRU */
  } a[CV_ARRCACHE_SIZE];
  sqlite3_uint64 iTick;
};

static void cvFileIdOf(const struct stat *st, CvFileId *p) {
  memset(p, 0, sizeof(*p));
  p->dev = st->st_dev;
  p->ino = st->st_ino;
  p->size = st->st_size;
  p->mtime = st->st_mtim;
  p->ctime = st->st_ctim;
}

/* The identity of the file at zPath now; 0 when it cannot be had. *pbSettled: its last
** change lies more than CV_ARRCACHE_SETTLE seconds in the past. */
static int cvFileIdGet(const char *zPath, CvFileId *aId, int *pbSettled) {
  struct stat st;
  char *zIndex;
  time_t now = time(0);
  int ok;
  memset(aId, 0, 2 * sizeof(*aId));
  if (stat(zPath, &st) != 0) return 0;
  cvFileIdOf(&st, &aId[0]);
  *pbSettled = st.st_ctim.tv_sec + CV_ARRCACHE_SETTLE < now;
  if (!S_ISDIR(st.st_mode)) return 1;
  zIndex = sqlite3_mprintf("%s/chunks.b2frame", zPath);
  if (zIndex == 0) return 0;
  ok = stat(zIndex, &st) == 0;
  sqlite3_free(zIndex);
  if (!ok) return 0;
  cvFileIdOf(&st, &aId[1]);
  if (st.st_ctim.tv_sec + CV_ARRCACHE_SETTLE >= now) *pbSettled = 0;
  return 1;
}

static int cvFileIdSame(const CvFileId *a, const CvFileId *b) {
  return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
         a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
         a->ctime.tv_sec == b->ctime.tv_sec && a->ctime.tv_nsec == b->ctime.tv_nsec;
}

static void cvArrEntryClear(struct CvArrEntry *e) {
  caterva_array_free(e->pArr);
  sqlite3_free(e->zPath);
  memset(e, 0, sizeof(*e));
}

/* The slot for a new entry: an empty one, else the least recently used one not in use. */
static struct CvArrEntry *cvArrCacheVictim(CvArrCache *p) {
  struct CvArrEntry *pBest = 0;
  int i;
  for (i = 0; i < CV_ARRCACHE_SIZE; i++) {
    struct CvArrEntry *e = &p->a[i];
    if (e->pArr == 0) return e;
    if (e->nUse == 0 && (pBest == 0 || e->iTick < pBest->iTick)) pBest = e;
  }
  return pBest;
}

/* A remote array: a cached handle is used when one HEAD request says the object did not
** change (the functions ask once per statement: fn_array.c keeps the handle for the
** statement's later calls), so its fetched bytes serve repeated queries; else it is opened
** anew. Nothing failed is kept. */
static int cvRemoteArrayGet(CvConn *pConn, CvArrCache *p, const char *zPath,
                            caterva_array **ppArr) {
  struct CvArrEntry *e;
  int i, rc;
  for (i = 0; p && i < CV_ARRCACHE_SIZE; i++) {
    e = &p->a[i];
    if (e->pArr == 0 || strcmp(e->zPath, zPath) != 0) continue;
    if (caterva_schunk_stale(pConn->pCtx, caterva_array_schunk(e->pArr)) == 0) {
      e->nUse++;
      e->iTick = ++p->iTick;
      *ppArr = e->pArr;
      return CATERVA_OK;
    }
    if (e->nUse == 0) cvArrEntryClear(e);
  }
  rc = caterva_array_open_ex(pConn->pCtx, zPath, CATERVA_OPEN_READ, NULL, ppArr);
  if (rc < 0 || p == 0 || (e = cvArrCacheVictim(p)) == 0) return rc;
  if (e->pArr) cvArrEntryClear(e);
  e->zPath = sqlite3_mprintf("%s", zPath);
  if (e->zPath == 0) return CATERVA_OK;
  e->pArr = *ppArr;
  e->nUse = 1;
  e->iTick = ++p->iTick;
  return CATERVA_OK;
}

int cvConnArrayGet(CvConn *pConn, const char *zPath, caterva_array **ppArr) {
  CvArrCache *p = pConn->pArrCache;
  CvFileId aId[2];
  struct CvArrEntry *e;
  int bSettled = 0, bId, i, rc;
  *ppArr = 0;
  if (p == 0) {
    p = pConn->pArrCache = sqlite3_malloc(sizeof(*p));
    if (p) memset(p, 0, sizeof(*p));
  }
  if (caterva_path_is_remote(zPath)) return cvRemoteArrayGet(pConn, p, zPath, ppArr);
  bId = cvFileIdGet(zPath, aId, &bSettled);
  for (i = 0; p && bId && i < CV_ARRCACHE_SIZE; i++) {
    e = &p->a[i];
    if (e->pArr == 0 || strcmp(e->zPath, zPath) != 0) continue;
    if (cvFileIdSame(&e->id[0], &aId[0]) && cvFileIdSame(&e->id[1], &aId[1])) {
      e->nUse++;
      e->iTick = ++p->iTick;
      *ppArr = e->pArr;
      return CATERVA_OK;
    }
    if (e->nUse == 0) cvArrEntryClear(e); /* the file changed: drop the old state */
  }
  rc = caterva_array_open_ex(pConn->pCtx, zPath, CATERVA_OPEN_READ, NULL, ppArr);
  if (rc < 0) return rc;
  /* Keep it only for a settled file whose identity was taken before the open (a change
  ** between stat and open then makes the entry miss next time, never hit wrongly). */
  if (p == 0 || !bId || !bSettled || (e = cvArrCacheVictim(p)) == 0) return CATERVA_OK;
  if (e->pArr) cvArrEntryClear(e);
  e->zPath = sqlite3_mprintf("%s", zPath);
  if (e->zPath == 0) return CATERVA_OK;
  memcpy(e->id, aId, sizeof(aId));
  e->pArr = *ppArr;
  e->nUse = 1;
  e->iTick = ++p->iTick;
  return CATERVA_OK;
}

int cvConnArrayRetain(CvConn *pConn, caterva_array *pArr) {
  CvArrCache *p = pConn->pArrCache;
  int i;
  for (i = 0; p && pArr && i < CV_ARRCACHE_SIZE; i++) {
    if (p->a[i].pArr == pArr) {
      p->a[i].nUse++;
      return 1;
    }
  }
  return 0;
}

void cvConnArrayPut(CvConn *pConn, caterva_array *pArr) {
  CvArrCache *p = pConn->pArrCache;
  int i;
  if (pArr == 0) return;
  for (i = 0; p && i < CV_ARRCACHE_SIZE; i++) {
    if (p->a[i].pArr == pArr) {
      p->a[i].nUse--;
      return;
    }
  }
  caterva_array_free(pArr);
}

void cvConnArrayCacheFree(CvConn *pConn) {
  CvArrCache *p = pConn->pArrCache;
  int i;
  if (p == 0) return;
  for (i = 0; i < CV_ARRCACHE_SIZE; i++) cvArrEntryClear(&p->a[i]);
  sqlite3_free(p);
  pConn->pArrCache = 0;
}
