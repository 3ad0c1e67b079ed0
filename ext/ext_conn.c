/*
 * ext_conn.c -- the per-connection state of the caterva extension (CvConn).
 *
 * Each connection that loads the extension gets one library context, shared by the virtual
 * table module and the SQL functions, so that caterva_blocks_read() counts exactly the
 * blocks this connection decompressed. The module and each function hold a reference;
 * SQLite calls their destructors one by one, and the last one frees the context.
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Threads the library may use to decompress blocks of one chunk in parallel. */
#define CV_MAX_THREADS 4

/* The number of threads: the CPUs online, at most CV_MAX_THREADS; the environment variable
** CATERVA_THREADS (1 to CV_MAX_THREADS) overrides it (tests/fuzz/fuzz_sql and tests/unit/test_alloc_fail
** use 1: one thread per connection, allocations in a repeatable order). */
static int cvThreads(void) {
  const char *z = getenv("CATERVA_THREADS");
  long nCpu = sysconf(_SC_NPROCESSORS_ONLN);
  if (z && z[0] >= '1' && z[0] <= '0' + CV_MAX_THREADS && z[1] == 0) return z[0] - '0';
  return nCpu < 1 ? 1 : nCpu > CV_MAX_THREADS ? CV_MAX_THREADS : (int)nCpu;
}

/* Was sqlite3_interrupt() called? SQLite 3.40 has no sqlite3_is_interrupted(); a statement
** prepared or stepped on an interrupted connection fails with SQLITE_INTERRUPT. */
int cvConnInterrupted(CvConn *p) {
  sqlite3_stmt *pStmt = 0;
  int rc = sqlite3_prepare_v2(p->db, "SELECT 1", -1, &pStmt, 0);
  if (rc == SQLITE_OK) rc = sqlite3_step(pStmt);
  sqlite3_finalize(pStmt);
  return rc == SQLITE_INTERRUPT;
}

/* The library's interrupt callback: called now and then during remote transfers (about
** every 20-50 ms). */
static int cvConnInterruptedFn(void *pArg) { return cvConnInterrupted((CvConn *)pArg); }

int cvArrayOpen(CvConn *pConn, const char *zPath, int mode, const caterva_remote_opts *pRem,
                caterva_array **ppArr) {
  return caterva_array_open_ex(pConn->pCtx, zPath, mode, pRem, ppArr);
}

int cvConnNew(sqlite3 *db, CvConn **ppConn) {
  CvConn *p;
  int nThread = cvThreads();
  *ppConn = 0;
  p = sqlite3_malloc(sizeof(*p));
  if (p == 0) return SQLITE_NOMEM;
  p->nRef = 1;
  p->db = db;
  p->pCtx = 0;
  p->pTables = 0;
  p->pArrCache = 0;
  if (caterva_ctx_new(nThread, &p->pCtx) != CATERVA_OK &&
      caterva_ctx_new(1, &p->pCtx) != CATERVA_OK) {
    sqlite3_free(p);
    return SQLITE_NOMEM;
  }
  caterva_ctx_set_interrupt(p->pCtx, cvConnInterruptedFn, p);
  *ppConn = p;
  return SQLITE_OK;
}

CvConn *cvConnRef(CvConn *p) {
  p->nRef++;
  return p;
}

void cvConnUnref(void *pArg) {
  CvConn *p = (CvConn *)pArg;
  if (p == 0 || --p->nRef > 0) return;
  cvConnArrayCacheFree(p);
  caterva_ctx_free(p->pCtx);
  sqlite3_free(p);
}

int cvConnAddTable(CvConn *p, const char *zSchema, const char *zName, const char *zPath,
                   void *pTab) {
  CvTableRef *pRef = sqlite3_malloc(sizeof(*pRef));
  if (pRef == 0) return SQLITE_NOMEM;
  pRef->zSchema = sqlite3_mprintf("%s", zSchema);
  pRef->zName = sqlite3_mprintf("%s", zName);
  if (pRef->zSchema == 0 || pRef->zName == 0) {
    sqlite3_free(pRef->zSchema);
    sqlite3_free(pRef->zName);
    sqlite3_free(pRef);
    return SQLITE_NOMEM;
  }
  pRef->zPath = zPath;
  pRef->pTab = pTab;
  pRef->pNext = p->pTables;
  p->pTables = pRef;
  return SQLITE_OK;
}

void cvConnRemoveTable(CvConn *p, void *pTab) {
  for (CvTableRef **pp = &p->pTables; *pp; pp = &(*pp)->pNext) {
    CvTableRef *pRef = *pp;
    if (pRef->pTab != pTab) continue;
    *pp = pRef->pNext;
    sqlite3_free(pRef->zSchema);
    sqlite3_free(pRef->zName);
    sqlite3_free(pRef);
    return;
  }
}

int cvConnRenameTable(CvConn *p, void *pTab, const char *zNew) {
  for (CvTableRef *pRef = p->pTables; pRef; pRef = pRef->pNext) {
    char *z;
    if (pRef->pTab != pTab) continue;
    z = sqlite3_mprintf("%s", zNew);
    if (z == 0) return SQLITE_NOMEM;
    sqlite3_free(pRef->zName);
    pRef->zName = z;
  }
  return SQLITE_OK;
}

/* Does "schema.name" or "name" (zArg) name table pRef? */
static int cvTableRefMatches(const CvTableRef *pRef, const char *zArg) {
  size_t nSchema = strlen(pRef->zSchema);
  if (sqlite3_stricmp(zArg, pRef->zName) == 0) return 1;
  return sqlite3_strnicmp(zArg, pRef->zSchema, (int)nSchema) == 0 && zArg[nSchema] == '.' &&
         sqlite3_stricmp(zArg + nSchema + 1, pRef->zName) == 0;
}

/* Might the schema hold a table zTable (in schema zSchema, or any when NULL)? Asked without
** compiling a statement, which a path (the common argument) would make fail at a cost of a
** parse and an error message per call; 1 when the library cannot tell. */
static int cvTableMayExist(sqlite3 *db, const char *zSchema, const char *zTable) {
  if (sqlite3_api->table_column_metadata == 0) return 1;
  return sqlite3_table_column_metadata(db, zSchema, zTable, 0, 0, 0, 0, 0, 0) == SQLITE_OK;
}

/* Connect table zArg ("name" or "schema.name") if the schema has it; errors are ignored (the
** argument is then a path). */
static void cvConnectByName(sqlite3 *db, const char *zArg) {
  const char *zDot = strchr(zArg, '.');
  sqlite3_stmt *pStmt = 0;
  char *zSql = 0, *zSchema = 0;
  if (zDot && strchr(zDot + 1, '.') == 0) {
    zSchema = sqlite3_mprintf("%.*s", (int)(zDot - zArg), zArg);
    if (zSchema && cvTableMayExist(db, zSchema, zDot + 1))
      zSql = sqlite3_mprintf("SELECT 0 FROM \"%w\".\"%w\"", zSchema, zDot + 1);
  } else if (cvTableMayExist(db, 0, zArg)) {
    zSql = sqlite3_mprintf("SELECT 0 FROM \"%w\"", zArg);
  }
  if (zSql) (void)sqlite3_prepare_v2(db, zSql, -1, &pStmt, 0);
  sqlite3_finalize(pStmt);
  sqlite3_free(zSql);
  sqlite3_free(zSchema);
}

/* Rank of a schema in SQLite's search for an unqualified name: temp, main, the others. */
static int cvSchemaRank(const char *zSchema) {
  return sqlite3_stricmp(zSchema, "temp") == 0 ? 0 : sqlite3_stricmp(zSchema, "main") == 0 ? 1 : 2;
}

static const CvTableRef *cvConnFind(CvConn *p, const char *zArg) {
  const CvTableRef *pFound = 0;
  /* Among the connected tables, the first match in "temp", then "main", then the others, as
  ** SQLite resolves an unqualified name; a qualified one matches one table at most. */
  for (const CvTableRef *pRef = p->pTables; pRef; pRef = pRef->pNext) {
    if (!cvTableRefMatches(pRef, zArg)) continue;
    if (pFound == 0 || cvSchemaRank(pRef->zSchema) < cvSchemaRank(pFound->zSchema))
      pFound = pRef;
  }
  return pFound;
}

/* Could an unqualified zArg name a table in a schema SQLite searches before pFound's? */
static int cvHiddenByEarlier(sqlite3 *db, const CvTableRef *pFound, const char *zArg) {
  int iRank = cvSchemaRank(pFound->zSchema);
  if (sqlite3_stricmp(zArg, pFound->zName) != 0) return 0; /* qualified */
  return (iRank > 0 && cvTableMayExist(db, "temp", zArg)) ||
         (iRank > 1 && cvTableMayExist(db, "main", zArg));
}

const char *cvConnResolve(CvConn *p, sqlite3 *db, const char *zArg, void **ppTab) {
  const CvTableRef *pFound = cvConnFind(p, zArg);
  *ppTab = 0;
  /* Not connected yet, or hidden from an unqualified name by a table of a schema SQLite
  ** searches first that is not connected yet: connect what SQLite would read. */
  if (db && (pFound == 0 || cvHiddenByEarlier(db, pFound, zArg))) {
    cvConnectByName(db, zArg);
    pFound = cvConnFind(p, zArg);
  }
  if (pFound == 0) return zArg;
  *ppTab = pFound->pTab;
  return pFound->zPath;
}
