/*
 * vtab_config.c -- configuring a `caterva` table when it is created or connected: the
 * options of CREATE VIRTUAL TABLE (vtab_main.c lists them), the column names, the CREATE TABLE
 * statement given to sqlite3_declare_vtab, the item type and the array's geometry.
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include "vtab_internal.h"

#include <string.h>

#define CV_DEFAULT_CACHE_MB 64

/* ---- options -------------------------------------------------------------------------- */

void cvOptionsFree(CvOptions *p) {
  sqlite3_free(p->zPath);
  sqlite3_free(p->zDims);
  sqlite3_free(p->zValue);
  sqlite3_free(p->zDtype);
  sqlite3_free(p->zShape);
  sqlite3_free(p->zChunks);
  sqlite3_free(p->zBlocks);
  sqlite3_free(p->zCodec);
  sqlite3_free(p->zClevel);
  sqlite3_free(p->zFilters);
  sqlite3_free(p->zFill);
  sqlite3_free(p->zSparse);
  sqlite3_free(p->zCoords);
  for (int i = 0; i < p->nMore; i++) sqlite3_free(p->azMore[i]);
  sqlite3_free(p->zSync);
  sqlite3_free(p->zLockReads);
  sqlite3_free(p->zMaxDead);
  sqlite3_free(p->zEndpoint);
  sqlite3_free(p->zRegion);
  sqlite3_free(p->zPathStyle);
  sqlite3_free(p->zHttpConns);
  sqlite3_free(p->zRemoteCacheMb);
  sqlite3_free(p->zHttpRetries);
  sqlite3_free(p->zHttpTimeoutMs);
  sqlite3_free(p->zRemoteFetch);
  sqlite3_free(p->zRange);
  sqlite3_free(p->zGcGrace);
  sqlite3_free(p->zBlockChecks);
  if (p->azValName) {
    for (int i = 0; i < p->nMore + 1; i++) sqlite3_free(p->azValName[i]);
    sqlite3_free(p->azValName);
  }
}

/* A copy of z[0..n) with surrounding blanks removed and, if quoted with ', " or `, the quotes
** removed and doubled quotes undone. */
char *cvDequote(const char *z, int n) {
  char *zOut;
  int i, j;
  while (n > 0 && (z[0] == ' ' || z[0] == '\t' || z[0] == '\n' || z[0] == '\r')) z++, n--;
  while (n > 0 && (z[n - 1] == ' ' || z[n - 1] == '\t' || z[n - 1] == '\n' || z[n - 1] == '\r'))
    n--;
  zOut = sqlite3_malloc(n + 1);
  if (zOut == 0) return 0;
  if (n >= 2 && (z[0] == '\'' || z[0] == '"' || z[0] == '`') && z[n - 1] == z[0]) {
    char q = z[0];
    for (i = 1, j = 0; i < n - 1; i++) {
      zOut[j++] = z[i];
      if (z[i] == q && z[i + 1] == q) i++;
    }
    zOut[j] = 0;
  } else {
    memcpy(zOut, z, (size_t)n);
    zOut[n] = 0;
  }
  return zOut;
}

/* Parse a non-negative decimal integer (at most 10^12). Returns non-zero on success. */
static int cvParseCount(const char *z, int64_t *pN) {
  int64_t n = 0;
  if (*z == 0) return 0;
  for (; *z; z++) {
    if (*z < '0' || *z > '9' || n > 1000000000000LL / 10) return 0;
    n = n * 10 + (*z - '0');
  }
  *pN = n;
  return 1;
}

/* Parse one argument of CREATE VIRTUAL TABLE into p; a key that is not one of its options
** goes to xExtra when there is one (cvOptionsParseStringExtra), else is an error. */
static int cvParseArg(CvOptions *p, const char *zArg, CvExtraOption xExtra, void *pArg,
                      char **pzErr) {
  const char *zEq = 0, *z;
  char *zKey = 0, *zVal = 0, **pzSlot = 0;
  int rc = SQLITE_OK;
  for (z = zArg; *z == ' ' || *z == '\t'; z++) {
  }
  if (*z != '\'' && *z != '"' && *z != '`') zEq = strchr(z, '=');
  if (zEq == 0) {
    zKey = sqlite3_mprintf("path");
    zVal = cvDequote(z, (int)strlen(z));
  } else {
    zKey = cvDequote(z, (int)(zEq - z));
    zVal = cvDequote(zEq + 1, (int)strlen(zEq + 1));
  }
  if (zKey == 0 || zVal == 0) {
    rc = SQLITE_NOMEM;
    goto parse_arg_out;
  }
  if (zEq == 0 && p->zPath) {
    /* a further array of a several-variable table */
    if (p->nMore == CV_MAX_VARS - 1) {
      *pzErr = sqlite3_mprintf("caterva: at most %d arrays in one table", CV_MAX_VARS);
      rc = SQLITE_ERROR;
      goto parse_arg_out;
    }
    p->azMore[p->nMore++] = zVal;
    zVal = 0;
    goto parse_arg_out;
  }
  if (sqlite3_stricmp(zKey, "path") == 0) pzSlot = &p->zPath;
  else if (sqlite3_stricmp(zKey, "dims") == 0) pzSlot = &p->zDims;
  else if (sqlite3_stricmp(zKey, "value") == 0) pzSlot = &p->zValue;
  else if (sqlite3_stricmp(zKey, "dtype") == 0) pzSlot = &p->zDtype;
  else if (sqlite3_stricmp(zKey, "shape") == 0) pzSlot = &p->zShape;
  else if (sqlite3_stricmp(zKey, "chunks") == 0) pzSlot = &p->zChunks;
  else if (sqlite3_stricmp(zKey, "blocks") == 0) pzSlot = &p->zBlocks;
  else if (sqlite3_stricmp(zKey, "codec") == 0) pzSlot = &p->zCodec;
  else if (sqlite3_stricmp(zKey, "clevel") == 0) pzSlot = &p->zClevel;
  else if (sqlite3_stricmp(zKey, "filters") == 0) pzSlot = &p->zFilters;
  else if (sqlite3_stricmp(zKey, "fill") == 0) pzSlot = &p->zFill;
  else if (sqlite3_stricmp(zKey, "sparse") == 0) pzSlot = &p->zSparse;
  else if (sqlite3_stricmp(zKey, "coords") == 0) pzSlot = &p->zCoords;
  else if (sqlite3_stricmp(zKey, "synchronous") == 0) pzSlot = &p->zSync;
  else if (sqlite3_stricmp(zKey, "lock_reads") == 0) pzSlot = &p->zLockReads;
  else if (sqlite3_stricmp(zKey, "max_dead") == 0) pzSlot = &p->zMaxDead;
  else if (sqlite3_stricmp(zKey, "endpoint") == 0) pzSlot = &p->zEndpoint;
  else if (sqlite3_stricmp(zKey, "region") == 0) pzSlot = &p->zRegion;
  else if (sqlite3_stricmp(zKey, "path_style") == 0) pzSlot = &p->zPathStyle;
  else if (sqlite3_stricmp(zKey, "http_connections") == 0) pzSlot = &p->zHttpConns;
  else if (sqlite3_stricmp(zKey, "remote_cache_mb") == 0) pzSlot = &p->zRemoteCacheMb;
  else if (sqlite3_stricmp(zKey, "http_retries") == 0) pzSlot = &p->zHttpRetries;
  else if (sqlite3_stricmp(zKey, "http_timeout_ms") == 0) pzSlot = &p->zHttpTimeoutMs;
  else if (sqlite3_stricmp(zKey, "remote_fetch") == 0) pzSlot = &p->zRemoteFetch;
  else if (sqlite3_stricmp(zKey, "range") == 0) pzSlot = &p->zRange;
  else if (sqlite3_stricmp(zKey, "gc_grace") == 0) pzSlot = &p->zGcGrace;
  else if (sqlite3_stricmp(zKey, "block_checks") == 0) pzSlot = &p->zBlockChecks;
  else if (sqlite3_stricmp(zKey, "cache_mb") == 0) {
    p->bCacheMb = 1;
    if (!cvParseCount(zVal, &p->nCacheMb) || p->nCacheMb > 1048576) {
      *pzErr = sqlite3_mprintf("caterva: cache_mb must be an integer from 0 to 1048576, not \"%s\"",
                               zVal);
      rc = SQLITE_ERROR;
    }
    goto parse_arg_out;
  } else if (xExtra) {
    rc = xExtra(pArg, zKey, zVal, pzErr);
    goto parse_arg_out;
  } else {
    *pzErr = sqlite3_mprintf("caterva: unknown option \"%s\" (known: path, dims, value, dtype, "
                             "cache_mb, synchronous, lock_reads, max_dead, range, block_checks; to create: shape, chunks, blocks, codec, "
                             "clevel, filters, fill, sparse, coords; remote: endpoint, region, "
                             "path_style, http_connections, remote_cache_mb, http_retries, "
                             "http_timeout_ms, remote_fetch, gc_grace)", zKey);
    rc = SQLITE_ERROR;
    goto parse_arg_out;
  }
  if (*pzSlot) {
    *pzErr = sqlite3_mprintf("caterva: option \"%s\" given twice", zKey);
    rc = SQLITE_ERROR;
    goto parse_arg_out;
  }
  *pzSlot = zVal;
  zVal = 0;
parse_arg_out:
  sqlite3_free(zKey);
  sqlite3_free(zVal);
  return rc;
}

/* ---- range= ---------------------------------------------------------------------------- */

/* The dimension named by z[0..n): a column name (without case) or a number. -1 if none. */
static int cvRangeDim(const CvVtab *pTab, const char *z, int n) {
  int k, i = 0;
  for (k = 0; k < pTab->nDim; k++)
    if ((int)strlen(pTab->azCol[k]) == n && sqlite3_strnicmp(pTab->azCol[k], z, n) == 0) return k;
  if (n == 0 || n > 2) return -1;
  for (k = 0; k < n; k++) {
    if (z[k] < '0' || z[k] > '9') return -1;
    i = i * 10 + (z[k] - '0');
  }
  return i < pTab->nDim ? i : -1;
}

/*
** range='dim:start:stop' restricts the table to the rows whose index along dim lies in
** [start, stop): the pieces a distributed query gives each task. The bound is where every
** scan starts (cvRangeInit), so the pushdown of other constraints works inside it. The dim
** is the last ':' field but two, so that a dimension name may hold ':'.
*/
int cvRangeSetup(CvVtab *pTab, const char *zRange, char **pzErr) {
  const char *zStop, *zStart;
  char *zNum = 0;
  int64_t iStart = 0, iStop = 0;
  int k = 0, rc = SQLITE_ERROR;
  if (zRange == 0) return SQLITE_OK;
  zStop = strrchr(zRange, ':');
  zStart = zStop ? zStop - 1 : 0;
  while (zStart && zStart >= zRange && *zStart != ':') zStart--;
  if (zStop == 0 || zStart < zRange) goto range_setup_out;
  k = cvRangeDim(pTab, zRange, (int)(zStart - zRange));
  zNum = sqlite3_mprintf("%.*s", (int)(zStop - zStart - 1), zStart + 1);
  if (zNum == 0) return SQLITE_NOMEM;
  if (k < 0 || !cvParseCount(zNum, &iStart) || !cvParseCount(zStop + 1, &iStop) ||
      iStart > iStop)
    goto range_setup_out;
  pTab->bRange = 1;
  pTab->iRangeDim = k;
  pTab->iRangeLo = iStart;
  pTab->iRangeHi = iStop - 1;
  rc = SQLITE_OK;
range_setup_out:
  sqlite3_free(zNum);
  if (rc == SQLITE_ERROR)
    *pzErr = sqlite3_mprintf("caterva: range= must be dim:start:stop with a dimension (a column "
                             "name or number)%s and indices 0 <= start <= stop, not \"%s\"",
                             k < 0 ? " of the table" : "", zRange);
  return rc;
}

void cvRangeInit(const CvVtab *pTab, int k, CvRange *p) {
  p->iLo = 0;
  p->iHi = pTab->aShape[k] - 1;
  if (!pTab->bRange || k != pTab->iRangeDim) return;
  if (pTab->iRangeLo > p->iLo) p->iLo = pTab->iRangeLo;
  if (pTab->iRangeHi < p->iHi) p->iHi = pTab->iRangeHi;
}

int cvHasRemoteOptions(const CvOptions *p) {
  return p->zEndpoint || p->zRegion || p->zPathStyle || p->zHttpConns || p->zRemoteCacheMb ||
         p->zHttpRetries || p->zHttpTimeoutMs || p->zRemoteFetch || p->zGcGrace;
}

/* An integer option within [lo, hi] into *pOut (unchanged when not given). */
static int cvIntOption(const char *zName, const char *zVal, int64_t lo, int64_t hi,
                       int64_t *pOut, char **pzErr) {
  int64_t v;
  if (zVal == 0) return SQLITE_OK;
  if (!cvParseCount(zVal, &v) || v < lo || v > hi) {
    *pzErr = sqlite3_mprintf("caterva: %s must be an integer from %lld to %lld, not \"%s\"",
                             zName, (long long)lo, (long long)hi, zVal);
    return SQLITE_ERROR;
  }
  *pOut = v;
  return SQLITE_OK;
}

int cvMaxDeadOption(const CvOptions *p, int *pOut, char **pzErr) {
  int64_t v = CV_MAX_DEAD_DEFAULT;
  int rc = cvIntOption("max_dead", p->zMaxDead, 0, 100, &v, pzErr);
  if (rc == SQLITE_OK) *pOut = (int)v;
  return rc;
}

int cvRemoteOptions(const CvOptions *p, caterva_remote_opts *pOut, char **pzErr) {
  int64_t nConns = 0, nCache = 0, nRetries = -1, nTimeout = 0, bPath = -1, nGrace = 3600;
  int rc = SQLITE_OK;
  caterva_remote_opts_init(pOut);
  if (p->zPathStyle) {
    if (sqlite3_stricmp(p->zPathStyle, "1") == 0 || sqlite3_stricmp(p->zPathStyle, "on") == 0) bPath = 1;
    else if (sqlite3_stricmp(p->zPathStyle, "0") == 0 || sqlite3_stricmp(p->zPathStyle, "off") == 0) bPath = 0;
    else {
      *pzErr = sqlite3_mprintf("caterva: path_style must be 0 or 1, not \"%s\"", p->zPathStyle);
      return SQLITE_ERROR;
    }
  }
  if (rc == SQLITE_OK) rc = cvIntOption("http_connections", p->zHttpConns, 1, 64, &nConns, pzErr);
  if (rc == SQLITE_OK) rc = cvIntOption("remote_cache_mb", p->zRemoteCacheMb, 1, 1048576, &nCache, pzErr);
  if (rc == SQLITE_OK) rc = cvIntOption("http_retries", p->zHttpRetries, 0, 20, &nRetries, pzErr);
  if (rc == SQLITE_OK) rc = cvIntOption("http_timeout_ms", p->zHttpTimeoutMs, 100, 3600000, &nTimeout, pzErr);
  if (p->zGcGrace && sqlite3_stricmp(p->zGcGrace, "never") == 0) nGrace = -1;
  else if (rc == SQLITE_OK)
    rc = cvIntOption("gc_grace", p->zGcGrace, 1, (int64_t)100 * 365 * 86400, &nGrace, pzErr);
  if (rc != SQLITE_OK) return rc;
  if (p->zEndpoint && sqlite3_strnicmp(p->zEndpoint, "http://", 7) != 0 &&
      sqlite3_strnicmp(p->zEndpoint, "https://", 8) != 0) {
    *pzErr = sqlite3_mprintf("caterva: endpoint must be an http:// or https:// URL, not \"%s\"",
                             p->zEndpoint);
    return SQLITE_ERROR;
  }
  pOut->endpoint = p->zEndpoint;
  pOut->region = p->zRegion;
  pOut->path_style = (int)bPath;
  pOut->connections = (int)nConns;
  pOut->cache_bytes = nCache * 1024 * 1024;
  pOut->retries = nRetries < 0 ? 0 : nRetries == 0 ? -1 : (int)nRetries;
  pOut->timeout_ms = (int)nTimeout;
  pOut->gc_grace_s = nGrace;
  if (p->zBlockChecks) {
    if (sqlite3_stricmp(p->zBlockChecks, "on") == 0 || strcmp(p->zBlockChecks, "1") == 0)
      pOut->block_checks = CATERVA_CHECKS_ON;
    else if (sqlite3_stricmp(p->zBlockChecks, "off") == 0 || strcmp(p->zBlockChecks, "0") == 0)
      pOut->block_checks = CATERVA_CHECKS_OFF;
    else {
      *pzErr = sqlite3_mprintf("caterva: block_checks must be on or off, not \"%s\"",
                               p->zBlockChecks);
      return SQLITE_ERROR;
    }
  }
  if (p->zRemoteFetch) {
    if (sqlite3_stricmp(p->zRemoteFetch, "chunks") == 0) pOut->whole_chunks = 1;
    else if (sqlite3_stricmp(p->zRemoteFetch, "blocks") != 0) {
      *pzErr = sqlite3_mprintf("caterva: remote_fetch must be blocks or chunks, not \"%s\"",
                               p->zRemoteFetch);
      return SQLITE_ERROR;
    }
  }
  return SQLITE_OK;
}

int cvOptionsParse(CvOptions *pOpt, int argc, const char *const *argv, char **pzErr) {
  int i, rc = SQLITE_OK;
  memset(pOpt, 0, sizeof(*pOpt));
  pOpt->nCacheMb = CV_DEFAULT_CACHE_MB;
  for (i = 3; i < argc && rc == SQLITE_OK; i++) rc = cvParseArg(pOpt, argv[i], 0, 0, pzErr);
  if (rc != SQLITE_OK) return rc;
  if (pOpt->zPath == 0 || pOpt->zPath[0] == 0) {
    *pzErr = sqlite3_mprintf("caterva: no file given: USING caterva('path' [, option=value ...])");
    return SQLITE_ERROR;
  }
  return SQLITE_OK;
}

int cvOptionsParseString(CvOptions *pOpt, const char *zOpt, char **pzErr) {
  return cvOptionsParseStringExtra(pOpt, zOpt, 0, 0, pzErr);
}

int cvOptionsParseStringExtra(CvOptions *pOpt, const char *zOpt, CvExtraOption xExtra,
                              void *pArg, char **pzErr) {
  const char *z = zOpt ? zOpt : "";
  int rc = SQLITE_OK;
  memset(pOpt, 0, sizeof(*pOpt));
  pOpt->nCacheMb = CV_DEFAULT_CACHE_MB;
  while (rc == SQLITE_OK) {
    const char *zStart;
    char q = 0, *zArg;
    while (*z == ' ' || *z == '\t' || *z == '\n' || *z == '\r') z++;
    if (*z == 0) break;
    for (zStart = z; *z && (q || (*z != ' ' && *z != '\t' && *z != '\n' && *z != '\r')); z++) {
      if (q == 0 && (*z == '\'' || *z == '"' || *z == '`')) q = *z;
      else if (q && *z == q) q = 0;
    }
    if (q) {
      *pzErr = sqlite3_mprintf("caterva: unterminated quote in options \"%s\"", zOpt);
      return SQLITE_ERROR;
    }
    zArg = sqlite3_mprintf("%.*s", (int)(z - zStart), zStart);
    if (zArg == 0) return SQLITE_NOMEM;
    if (strchr(zArg, '=') == 0 || zArg[0] == '=') {
      *pzErr = sqlite3_mprintf("caterva: \"%s\" is not an option=value pair", zArg);
      rc = SQLITE_ERROR;
    } else {
      rc = cvParseArg(pOpt, zArg, xExtra, pArg, pzErr);
    }
    sqlite3_free(zArg);
  }
  return rc;
}

/* ---- columns -------------------------------------------------------------------------- */

/* On failure the names already split are freed and their slots set to 0 (found by
** tests/fuzz/fuzz_sql: a dims= with too many names leaked the first ones). */
int cvSplitDims(const char *zDims, int nDim, char **azName, char **pzErr) {
  const char *z = zDims;
  int i = 0, rc = SQLITE_OK;
  for (;;) {
    const char *zEnd = strchr(z, ',');
    int n = zEnd ? (int)(zEnd - z) : (int)strlen(z);
    if (i < nDim) {
      azName[i] = cvDequote(z, n);
      if (azName[i] == 0) {
        rc = SQLITE_NOMEM;
        break;
      }
    }
    i++;
    if (zEnd == 0) break;
    z = zEnd + 1;
  }
  if (rc == SQLITE_OK && (i != nDim || (nDim == 0 && zDims[0] != 0))) {
    *pzErr = sqlite3_mprintf("caterva: dims= gives %d names but the array has %d dimensions", i,
                             nDim);
    rc = SQLITE_ERROR;
  }
  if (rc != SQLITE_OK) {
    for (int k = 0; k < i && k < nDim; k++) {
      sqlite3_free(azName[k]);
      azName[k] = 0;
    }
  }
  return rc;
}

/* Check that column names are non-empty and distinct (SQLite compares them without case). */
static int cvCheckNames(char **azName, int nName) {
  int i, j;
  for (i = 0; i < nName; i++) {
    if (azName[i] == 0 || azName[i][0] == 0) return 0;
    for (j = 0; j < i; j++)
      if (sqlite3_stricmp(azName[i], azName[j]) == 0) return 0;
  }
  return 1;
}

/*
** Column names: azName[0..nDim) for the dimensions, azName[nDim] for the value. From the
** options, else the file's dimension names (ignored unless usable), else d0, d1, ...
*/
/* Value column names: value= (one name per array, comma-separated), else a converted
** ctable's column names, else "value" for one array, else each array's name (cvVarName). */
static int cvValueNames(CvVtab *pTab, const CvOptions *pOpt, char **azName, char **pzErr) {
  int nDim = pTab->nDim, nVal = pTab->nVar + 1, j;
  if (pOpt->zValue && nVal > 1) {
    int rc = cvSplitDims(pOpt->zValue, nVal, azName + nDim, pzErr);
    if (rc != SQLITE_OK && *pzErr) {
      sqlite3_free(*pzErr);
      *pzErr = sqlite3_mprintf("caterva: value= must name each of the %d arrays", nVal);
    }
    return rc;
  }
  if (pOpt->zValue == 0 && pOpt->azValName) {   /* a converted ctable's column names */
    for (j = 0; j < nVal; j++) {
      azName[nDim + j] = sqlite3_mprintf("%s", pOpt->azValName[j]);
      if (azName[nDim + j] == 0) return SQLITE_NOMEM;
    }
    return SQLITE_OK;
  }
  if (nVal == 1) {
    azName[nDim] = sqlite3_mprintf("%s", pOpt->zValue ? pOpt->zValue : "value");
    return azName[nDim] ? SQLITE_OK : SQLITE_NOMEM;
  }
  azName[nDim] = cvVarName(pTab->pConn, pTab->pArr, pTab->zPath);
  for (j = 1; j < nVal && azName[nDim + j - 1]; j++)
    azName[nDim + j] = cvVarName(pTab->pConn, pTab->aVar[j - 1].pArr, pTab->aVar[j - 1].zPath);
  return azName[nDim + nVal - 1] ? SQLITE_OK : SQLITE_NOMEM;
}

int cvColumnNames(CvVtab *pTab, const CvOptions *pOpt, char **azName, char **pzErr) {
  int nDim = pTab->nDim, nVal = pTab->nVar + 1, i, rc;
  rc = cvValueNames(pTab, pOpt, azName, pzErr);
  if (rc != SQLITE_OK) return rc;
  if (pOpt->zDims) {
    rc = cvSplitDims(pOpt->zDims, nDim, azName, pzErr);
    if (rc != SQLITE_OK) return rc;
  } else {
    char **azFile = 0;
    if (caterva_array_get_dim_names(pTab->pConn->pCtx, pTab->pArr, &azFile) == CATERVA_OK) {
      for (i = 0; i < nDim; i++) azName[i] = sqlite3_mprintf("%s", azFile[i]);
      caterva_array_free_names(azFile, nDim);
      for (i = 0; i < nDim; i++)
        if (azName[i] == 0) return SQLITE_NOMEM;
    }
    if (!cvCheckNames(azName, nDim + nVal)) {
      for (i = 0; i < nDim; i++) {
        sqlite3_free(azName[i]);
        azName[i] = sqlite3_mprintf("d%d", i);
        if (azName[i] == 0) return SQLITE_NOMEM;
      }
    }
  }
  if (!cvCheckNames(azName, nDim + nVal)) {
    *pzErr = sqlite3_mprintf("caterva: column names must be non-empty and distinct "
                             "(see the dims= and value= options)");
    return SQLITE_ERROR;
  }
  /* the hidden <dim>_index columns must not collide with a visible one */
  for (i = 0; i < nDim; i++) {
    for (int j = 0; j < nDim + nVal; j++) {
      size_t n = strlen(azName[i]);
      if (sqlite3_strnicmp(azName[j], azName[i], (int)n) == 0 &&
          sqlite3_stricmp(azName[j] + n, "_index") == 0) {
        *pzErr = sqlite3_mprintf("caterva: column %s collides with the hidden index column of "
                                 "%s (rename it with dims= or value=)", azName[j], azName[i]);
        return SQLITE_ERROR;
      }
    }
  }
  return rc;
}

int cvDeclare(sqlite3 *db, CvVtab *pTab, char **azName, char **pzErr) {
  sqlite3_str *pStr = sqlite3_str_new(db);
  char *zSql;
  int i, rc;
  sqlite3_str_appendall(pStr, "CREATE TABLE x(");
  for (i = 0; i < pTab->nDim; i++) {
    const CvLabel *pL = &pTab->aLab[i];
    sqlite3_str_appendf(pStr, "\"%w\" %s, ", azName[i],
                        !pL->bOn ? "INTEGER" : pL->lab.is_time ? "TEXT" : "REAL");
  }
  sqlite3_str_appendf(pStr, "\"%w\" %s", azName[pTab->nDim], cvItemTypeDecl(&pTab->item));
  for (i = 0; i < pTab->nVar; i++)
    sqlite3_str_appendf(pStr, ", \"%w\" %s", azName[pTab->nDim + 1 + i],
                        cvItemTypeDecl(&pTab->aVar[i].item));
  for (i = 0; i < pTab->nDim; i++)
    sqlite3_str_appendf(pStr, ", \"%w_index\" INTEGER HIDDEN", azName[i]);
  sqlite3_str_appendall(pStr, ")");
  zSql = sqlite3_str_finish(pStr);
  if (zSql == 0) return SQLITE_NOMEM;
  rc = sqlite3_declare_vtab(db, zSql);
  if (rc != SQLITE_OK) *pzErr = sqlite3_mprintf("caterva: %s", sqlite3_errmsg(db));
  sqlite3_free(zSql);
  return rc;
}

/* ---- items and geometry --------------------------------------------------------------- */

int cvInitItems(CvVtab *pTab, const char *zDtype, char **pzErr) {
  if (zDtype == 0) zDtype = caterva_array_dtype(pTab->pArr);
  if (cvItemTypeInit(&pTab->item, zDtype, caterva_array_itemsize(pTab->pArr), pzErr)) {
    char *zMsg = *pzErr;
    *pzErr = sqlite3_mprintf("caterva: %s", zMsg);
    sqlite3_free(zMsg);
    return SQLITE_ERROR;
  }
  if (pTab->item.eKind == CV_ITEM_FLOAT && !pTab->item.bSwap) {
    if (pTab->item.szItem == 8) pTab->eFast = CV_FAST_F8;
    else if (pTab->item.szItem == 4) pTab->eFast = CV_FAST_F4;
  }
  return SQLITE_OK;
}

void cvInitGeometry(CvVtab *pTab) {
  const int64_t *aShape = caterva_array_shape(pTab->pArr);
  const int32_t *aChunk = caterva_array_chunkshape(pTab->pArr);
  const int32_t *aBlock = caterva_array_blockshape(pTab->pArr);
  int64_t nBlk = 1, nArr = 1, nChunkGrid = 1, nBlockGrid = 1;
  int k;
  pTab->nDim = caterva_array_ndim(pTab->pArr);
  for (k = pTab->nDim - 1; k >= 0; k--) {
    pTab->aShape[k] = aShape[k];
    pTab->aChunk[k] = aChunk[k];
    pTab->aBlock[k] = aBlock[k];
    pTab->aBlkStride[k] = nBlk;
    pTab->aArrStride[k] = nArr;
    pTab->aChunkStride[k] = nChunkGrid;
    pTab->aBlockStride[k] = nBlockGrid;
    nBlk *= aBlock[k];
    nArr *= aShape[k];
    if (aChunk[k] > 0) nChunkGrid *= (aShape[k] + aChunk[k] - 1) / aChunk[k];
    if (aBlock[k] > 0) nBlockGrid *= (aChunk[k] + aBlock[k] - 1) / aBlock[k];
  }
  pTab->nBlockItem = nBlk;
  cvLabelsRefresh(pTab);
}
