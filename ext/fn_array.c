/*
 * fn_array.c -- the SQL functions of the caterva extension.
 *
 *   caterva_version()                 the package version
 *   caterva_info(path)                JSON text describing the array in the file (dims: the
 *                                     names of the dimension columns a table gets by default)
 *   caterva_slice(path [, start, stop])
 *                                     BLOB of the items of the box [start, stop) (JSON arrays
 *                                     of integers; default: the whole array), C order, bytes
 *                                     as stored (little-endian for '<' dtypes)
 *   caterva_blocks_read()             blocks this connection has decompressed so far
 *
 * caterva_info and caterva_slice read files, so they are SQLITE_DIRECTONLY: usable in SQL
 * the user runs, not from triggers or views of a database file someone else wrote.
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include <math.h>
#include <msgpack.h>
#include <stdlib.h>
#include <string.h>

/* Nesting accepted when converting attributes to JSON. */
#define CV_JSON_MAX_DEPTH 32

/* caterva_version() -> the library version string. */
static void cvVersionFunc(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  (void)argc;
  (void)argv;
  sqlite3_result_text(pCtx, PACKAGE_VERSION, -1, SQLITE_STATIC);
}

/* caterva_blocks_read() -> blocks decompressed through this connection's context. */
static void cvBlocksReadFunc(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  CvConn *pConn = (CvConn *)sqlite3_user_data(pCtx);
  (void)argc;
  (void)argv;
  sqlite3_result_int64(pCtx, caterva_ctx_blocks_decompressed(pConn->pCtx));
}

/* The path the first argument names (a table of the connection resolves to its file), or 0
** after an error result. */
static const char *cvPathArg(sqlite3_context *pCtx, CvConn *pConn, sqlite3_value *pPath,
                             const char *zFunc) {
  const char *zPath = (const char *)sqlite3_value_text(pPath);
  void *pTab;
  if (zPath == 0 || zPath[0] == 0) {
    char *z = sqlite3_mprintf("%s: the first argument must be a table or a file name", zFunc);
    sqlite3_result_error(pCtx, z ? z : zFunc, -1);
    sqlite3_free(z);
    return 0;
  }
  return cvConnResolve(pConn, sqlite3_context_db_handle(pCtx), zPath, &pTab);
}

/* The array at zPath from the connection's cache, else opened; 0 when it does not open
** (*pRc the library's error, no result set). */
static caterva_array *cvOpenPath(CvConn *pConn, const char *zPath, int *pRc) {
  caterva_array *pArr = 0;
  *pRc = cvConnArrayGet(pConn, zPath, &pArr);
  return *pRc < 0 ? 0 : pArr;
}

static void cvOpenError(sqlite3_context *pCtx, CvConn *pConn, const char *zPath, int rc) {
  char *zWhat = sqlite3_mprintf("cannot open \"%s\"", zPath);
  cvResultLibError(pCtx, pConn, zWhat ? zWhat : zPath, rc);
  sqlite3_free(zWhat);
}

caterva_array *cvOpenArg(sqlite3_context *pCtx, CvConn *pConn, sqlite3_value *pPath,
                         const char *zFunc) {
  const char *zPath = cvPathArg(pCtx, pConn, pPath, zFunc);
  caterva_array *pArr;
  int rc;
  if (zPath == 0) return 0;
  pArr = cvOpenPath(pConn, zPath, &rc);
  if (pArr == 0) cvOpenError(pCtx, pConn, zPath, rc);
  return pArr;
}

/* A cached array borrowed for the rest of a statement's run: SQLite's auxiliary data of the
** path argument, kept while the statement runs with the same path and dropped at its reset.
** Later calls in the run skip the stat() that validates the cache (a syscall costs as much
** as decoding a small box), and the statement reads one state of the file. */
typedef struct CvArgArray {
  CvConn *pConn;          /* a reference */
  caterva_array *pArr;    /* a borrow from the connection's array cache */
} CvArgArray;

static void cvArgArrayFree(void *p) {
  CvArgArray *pAux = (CvArgArray *)p;
  cvConnArrayPut(pAux->pConn, pAux->pArr);
  cvConnUnref(pAux->pConn);
  sqlite3_free(pAux);
}

/* Keep pArr, if cached, for the statement's later calls with the same first argument. */
static void cvArgArrayKeep(sqlite3_context *pCtx, CvConn *pConn, caterva_array *pArr) {
  CvArgArray *pAux = sqlite3_malloc(sizeof(*pAux));
  if (pAux == 0) return;
  if (!cvConnArrayRetain(pConn, pArr)) {
    sqlite3_free(pAux);
    return;
  }
  pAux->pConn = cvConnRef(pConn);
  pAux->pArr = pArr;
  sqlite3_set_auxdata(pCtx, 0, pAux, cvArgArrayFree); /* pAux is SQLite's from here */
}

/* The array the first argument of caterva_info/caterva_slice names, or (*pzBcolz) the bcolz
** directory it names; 0 and *pzBcolz 0 after an error result. The statement's kept array
** is used first, then the array cache (one stat() for a cached array); only a path that
** does not open as an array is looked at as a bcolz directory. */
static caterva_array *cvOpenArrayOrBcolz(sqlite3_context *pCtx, CvConn *pConn,
                                         sqlite3_value *pPath, const char *zFunc,
                                         const char **pzBcolz) {
  CvArgArray *pAux = (CvArgArray *)sqlite3_get_auxdata(pCtx, 0);
  const char *zPath;
  caterva_array *pArr;
  int rc;
  *pzBcolz = 0;
  if (pAux != 0 && cvConnArrayRetain(pConn, pAux->pArr)) return pAux->pArr;
  zPath = cvPathArg(pCtx, pConn, pPath, zFunc);
  if (zPath == 0) return 0;
  pArr = cvOpenPath(pConn, zPath, &rc);
  if (pArr != 0) cvArgArrayKeep(pCtx, pConn, pArr);
  else if (cvBzIsPath(zPath)) *pzBcolz = zPath;   /* fn_io_bcolz.c */
  else cvOpenError(pCtx, pConn, zPath, rc);
  return pArr;
}

/* ---- JSON ----------------------------------------------------------------------------- */

static void cvJsonInt64Array(sqlite3_str *pStr, const int64_t *a, int n) {
  int i;
  sqlite3_str_appendchar(pStr, 1, '[');
  for (i = 0; i < n; i++) sqlite3_str_appendf(pStr, "%s%lld", i ? "," : "", (long long)a[i]);
  sqlite3_str_appendchar(pStr, 1, ']');
}

static void cvJsonInt32Array(sqlite3_str *pStr, const int32_t *a, int n) {
  int i;
  sqlite3_str_appendchar(pStr, 1, '[');
  for (i = 0; i < n; i++) sqlite3_str_appendf(pStr, "%s%d", i ? "," : "", (int)a[i]);
  sqlite3_str_appendchar(pStr, 1, ']');
}

/* Append a msgpack object as JSON. Binary and extension values, and anything nested too
** deeply, become null; map keys that are not strings are written as strings. */
static void cvJsonMsgpack(sqlite3_str *pStr, const msgpack_object *o, int nDepth) {
  uint32_t i;
  if (nDepth > CV_JSON_MAX_DEPTH) {
    sqlite3_str_appendall(pStr, "null");
    return;
  }
  switch (o->type) {
    case MSGPACK_OBJECT_BOOLEAN:
      sqlite3_str_appendall(pStr, o->via.boolean ? "true" : "false");
      break;
    case MSGPACK_OBJECT_POSITIVE_INTEGER:
      sqlite3_str_appendf(pStr, "%llu", (unsigned long long)o->via.u64);
      break;
    case MSGPACK_OBJECT_NEGATIVE_INTEGER:
      sqlite3_str_appendf(pStr, "%lld", (long long)o->via.i64);
      break;
    case MSGPACK_OBJECT_FLOAT32:
    case MSGPACK_OBJECT_FLOAT64:
      cvJsonDouble(pStr, o->via.f64);
      break;
    case MSGPACK_OBJECT_STR:
      cvJsonString(pStr, o->via.str.ptr, o->via.str.size);
      break;
    case MSGPACK_OBJECT_ARRAY:
      sqlite3_str_appendchar(pStr, 1, '[');
      for (i = 0; i < o->via.array.size; i++) {
        if (i) sqlite3_str_appendchar(pStr, 1, ',');
        cvJsonMsgpack(pStr, &o->via.array.ptr[i], nDepth + 1);
      }
      sqlite3_str_appendchar(pStr, 1, ']');
      break;
    case MSGPACK_OBJECT_MAP:
      sqlite3_str_appendchar(pStr, 1, '{');
      for (i = 0; i < o->via.map.size; i++) {
        const msgpack_object *pKey = &o->via.map.ptr[i].key;
        if (i) sqlite3_str_appendchar(pStr, 1, ',');
        if (pKey->type == MSGPACK_OBJECT_STR) {
          cvJsonString(pStr, pKey->via.str.ptr, pKey->via.str.size);
        } else {
          /* Render the key as JSON, then quote that text. */
          sqlite3_str *pKeyStr = sqlite3_str_new(0);
          char *zKey;
          cvJsonMsgpack(pKeyStr, pKey, nDepth + 1);
          zKey = sqlite3_str_finish(pKeyStr);
          cvJsonString(pStr, zKey ? zKey : "", zKey ? strlen(zKey) : 0);
          sqlite3_free(zKey);
        }
        sqlite3_str_appendchar(pStr, 1, ':');
        cvJsonMsgpack(pStr, &o->via.map.ptr[i].val, nDepth + 1);
      }
      sqlite3_str_appendchar(pStr, 1, '}');
      break;
    default:
      sqlite3_str_appendall(pStr, "null");
      break;
  }
}

/* What a remote array fetched so far (the bytes served from its range cache are not
** counted): "remote":{...}, for measuring pushdown over a network, with the blocks of its
** offsets index read so far when it is read a block at a time. Nothing for local ones. */
static void cvJsonRemote(sqlite3_str *pStr, const caterva_schunk *pSc) {
  caterva_remote_stats st;
  int64_t nIdx = caterva_schunk_index_blocks(pSc);
  caterva_schunk_remote_stats(pSc, &st);
  if (st.requests == 0) return;
  sqlite3_str_appendf(pStr, "\"remote\":{\"waves\":%lld,\"requests\":%lld,\"retries\":%lld,"
                      "\"bytes\":%lld,\"needed\":%lld", (long long)st.waves,
                      (long long)st.requests, (long long)st.retries, (long long)st.bytes,
                      (long long)st.needed);
  if (nIdx >= 0) sqlite3_str_appendf(pStr, ",\"index_blocks\":%lld", (long long)nIdx);
  sqlite3_str_appendall(pStr, "},");
}

/* Append the value of attribute zName (msgpack bytes) as JSON. */
static void cvJsonAttribute(sqlite3_str *pStr, CvConn *pConn, caterva_schunk *pSc,
                            const char *zName) {
  uint8_t *aVal = 0;
  int32_t nVal = 0;
  msgpack_unpacked up;
  size_t off = 0;
  if (caterva_schunk_vlmeta_get(pConn->pCtx, pSc, zName, &aVal, &nVal) < 0) {
    sqlite3_str_appendall(pStr, "null");
    return;
  }
  msgpack_unpacked_init(&up);
  if (caterva_msgpack_complete(aVal, (size_t)nVal) &&
      msgpack_unpack_next(&up, (const char *)aVal, (size_t)nVal, &off) == MSGPACK_UNPACK_SUCCESS)
    cvJsonMsgpack(pStr, &up.data, 0);
  else
    sqlite3_str_appendall(pStr, "null");
  msgpack_unpacked_destroy(&up);
  free(aVal);
}

static const char *cvCodecName(int iCodec) {
  switch (iCodec) {
    case CATERVA_BLOSCLZ: return "blosclz";
    case CATERVA_LZ4: return "lz4";
    case CATERVA_LZ4HC: return "lz4hc";
    case CATERVA_ZLIB: return "zlib";
    case CATERVA_ZSTD: return "zstd";
    default: return 0;
  }
}

static const char *cvFilterName(int iFilter) {
  switch (iFilter) {
    case CATERVA_SHUFFLE: return "shuffle";
    case CATERVA_BITSHUFFLE: return "bitshuffle";
    case CATERVA_DELTA: return "delta";
    case CATERVA_TRUNC_PREC: return "trunc_prec";
    case CATERVA_BYTEDELTA: return "bytedelta";
    default: return 0;
  }
}

/* Append the compression parameters recorded in the frame. */
static void cvJsonCparams(sqlite3_str *pStr, const caterva_cparams *pCp) {
  const char *zCodec = cvCodecName(pCp->codec);
  int i, n = 0;
  if (zCodec) sqlite3_str_appendf(pStr, ",\"codec\":\"%s\"", zCodec);
  else sqlite3_str_appendf(pStr, ",\"codec\":\"codec%d\"", pCp->codec);
  sqlite3_str_appendf(pStr, ",\"clevel\":%d,\"filters\":[", pCp->clevel);
  for (i = 0; i < CATERVA_MAX_FILTERS; i++) {
    const char *zName = cvFilterName(pCp->filters[i]);
    if (pCp->filters[i] == CATERVA_NOFILTER) continue;
    if (zName) sqlite3_str_appendf(pStr, "%s\"%s\"", n++ ? "," : "", zName);
    else sqlite3_str_appendf(pStr, "%s\"filter%d\"", n++ ? "," : "", pCp->filters[i]);
  }
  sqlite3_str_appendchar(pStr, 1, ']');
}

/* The dimension names a table gets by default: the file's, else d0, d1, ... */
static void cvJsonDims(sqlite3_str *pStr, CvConn *pConn, caterva_array *pArr) {
  int nDim = caterva_array_ndim(pArr), i;
  char **azName = 0;
  if (caterva_array_get_dim_names(pConn->pCtx, pArr, &azName) != CATERVA_OK) azName = 0;
  sqlite3_str_appendchar(pStr, 1, '[');
  for (i = 0; i < nDim; i++) {
    if (i) sqlite3_str_appendchar(pStr, 1, ',');
    if (azName && azName[i]) cvJsonString(pStr, azName[i], strlen(azName[i]));
    else sqlite3_str_appendf(pStr, "\"d%d\"", i);
  }
  sqlite3_str_appendchar(pStr, 1, ']');
  if (azName) caterva_array_free_names(azName, nDim);
}

/* caterva_info(path) -> JSON text. */
static void cvInfoFunc(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  CvConn *pConn = (CvConn *)sqlite3_user_data(pCtx);
  caterva_array *pArr;
  caterva_schunk *pSc;
  sqlite3_str *pStr;
  const char *zDtype;
  int nDim, i, n, nOut;
  int64_t nBytes, cBytes;
  char *zJson;
  const char *zBcolz;
  (void)argc;
  pArr = cvOpenArrayOrBcolz(pCtx, pConn, argv[0], "caterva_info", &zBcolz);
  if (zBcolz) cvBzInfo(pCtx, pConn, zBcolz);
  if (pArr == 0) return;
  pSc = caterva_array_schunk(pArr);
  nDim = caterva_array_ndim(pArr);
  zDtype = caterva_array_dtype(pArr);
  nBytes = caterva_array_nitems(pArr) * caterva_array_itemsize(pArr);
  cBytes = caterva_schunk_cbytes(pSc);
  pStr = sqlite3_str_new(sqlite3_context_db_handle(pCtx));
  sqlite3_str_appendf(pStr, "{\"ndim\":%d,\"dims\":", nDim);
  cvJsonDims(pStr, pConn, pArr);
  sqlite3_str_appendall(pStr, ",\"shape\":");
  cvJsonInt64Array(pStr, caterva_array_shape(pArr), nDim);
  sqlite3_str_appendall(pStr, ",\"chunkshape\":");
  cvJsonInt32Array(pStr, caterva_array_chunkshape(pArr), nDim);
  sqlite3_str_appendall(pStr, ",\"blockshape\":");
  cvJsonInt32Array(pStr, caterva_array_blockshape(pArr), nDim);
  sqlite3_str_appendall(pStr, ",\"dtype\":");
  if (zDtype) cvJsonString(pStr, zDtype, strlen(zDtype));
  else sqlite3_str_appendall(pStr, "null");
  sqlite3_str_appendf(pStr, ",\"itemsize\":%d", caterva_array_itemsize(pArr));
  cvJsonCparams(pStr, caterva_schunk_cparams(pSc));
  sqlite3_str_appendf(pStr, ",\"nchunks\":%lld,\"nbytes\":%lld,\"cbytes\":%lld,\"ratio\":",
                      (long long)caterva_schunk_nchunks(pSc), (long long)nBytes,
                      (long long)cBytes);
  if (cBytes > 0) cvJsonDouble(pStr, floor(1000.0 * (double)nBytes / (double)cBytes + 0.5) / 1e3);
  else sqlite3_str_appendall(pStr, "null");
  sqlite3_str_appendf(pStr, ",\"storage\":\"%s\",",
                      caterva_schunk_store(pSc) == CATERVA_STORE_SPARSE ? "sparse" : "contiguous");
  {
    /* what killed writers left (the next writer removes it), or in-flight files of a writer:
    ** unreferenced chunk files, temporary files and a copy of a group commit's journal */
    int64_t nLeft = 0;
    if (caterva_schunk_collect(pConn->pCtx, pSc, 1, &nLeft) >= 0) { /* local files only */
      const char *zPath = cvPathArg(pCtx, pConn, argv[0], "caterva_info");
      int eJournal = zPath ? caterva_group_journal(pConn->pCtx, zPath, 0, 0) : CATERVA_GROUP_NONE;
      sqlite3_str_appendf(pStr, "\"leftovers\":%lld,\"journal\":\"%s\",",
                          (long long)nLeft + (eJournal > 0),
                          eJournal == CATERVA_GROUP_PENDING ? "pending"
                          : eJournal == CATERVA_GROUP_STALE ? "stale" : "none");
    }
  }
  {
    /* a table's own handle: what its queries fetched (the function keeps a handle of its own) */
    void *pTab = 0;
    const char *zArg = (const char *)sqlite3_value_text(argv[0]);
    if (zArg) (void)cvConnResolve(pConn, sqlite3_context_db_handle(pCtx), zArg, &pTab);
    cvJsonRemote(pStr, caterva_array_schunk(pTab ? cvTableArray(pTab) : pArr));
  }
  sqlite3_str_appendall(pStr, "\"metalayers\":[");
  n = caterva_schunk_meta_count(pSc);
  for (i = 0; i < n; i++) {
    const char *zName = caterva_schunk_meta_name(pSc, i);
    if (i) sqlite3_str_appendchar(pStr, 1, ',');
    cvJsonString(pStr, zName ? zName : "", zName ? strlen(zName) : 0);
  }
  /* Block statistics (fn_stats.c) are reported as a flag, not as an attribute. */
  sqlite3_str_appendf(pStr, "],\"blockstats\":%s", caterva_array_has_stats(pArr) ? "true" : "false");
  sqlite3_str_appendall(pStr, ",\"attributes\":{");
  n = caterva_schunk_vlmeta_count(pSc);
  for (i = 0, nOut = 0; i < n; i++) {
    const char *zName = caterva_schunk_vlmeta_name(pSc, i);
    if (zName == 0 || strcmp(zName, "_caterva_blockstats") == 0) continue;
    if (nOut++) sqlite3_str_appendchar(pStr, 1, ',');
    cvJsonString(pStr, zName, strlen(zName));
    sqlite3_str_appendchar(pStr, 1, ':');
    cvJsonAttribute(pStr, pConn, pSc, zName);
  }
  sqlite3_str_appendchar(pStr, 1, '}');
  cvInfoCoords(pStr, pConn, pArr);
  sqlite3_str_appendchar(pStr, 1, '}');
  cvConnArrayPut(pConn, pArr);
  if (sqlite3_str_errcode(pStr) == SQLITE_NOMEM) {
    sqlite3_free(sqlite3_str_finish(pStr));
    sqlite3_result_error_nomem(pCtx);
    return;
  }
  zJson = sqlite3_str_finish(pStr);
  sqlite3_result_text(pCtx, zJson, -1, sqlite3_free);
}

/*
** Parse a JSON array of nDim integers ("[1, 2, 3]") into a. Returns 0 on success, else a
** static description of what is wrong.
*/

int cvBoxArgs(sqlite3_context *pCtx, const char *zFunc, caterva_array *pArr,
              sqlite3_value *pStart, sqlite3_value *pStop, int64_t *aStart, int64_t *aStop) {
  return cvBoxArgsShape(pCtx, zFunc, caterva_array_ndim(pArr), caterva_array_shape(pArr), pStart,
                        pStop, aStart, aStop);
}

/* caterva_slice's fill: the box of an array, through the library. */
typedef struct CvSliceFill {
  CvConn *pConn;
  caterva_array *pArr;
  const int64_t *aStart, *aStop;
} CvSliceFill;

static int cvSliceFill(void *pArg, uint8_t *aBuf, int64_t nByte) {
  CvSliceFill *p = (CvSliceFill *)pArg;
  return caterva_array_get_slice(p->pConn->pCtx, p->pArr, p->aStart, p->aStop, aBuf, nByte);
}

/* caterva_slice(path [, start, stop]) -> BLOB of the box's items in C order. */
static void cvSliceFunc(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  CvConn *pConn = (CvConn *)sqlite3_user_data(pCtx);
  caterva_array *pArr;
  int64_t aStart[CATERVA_MAX_DIM], aStop[CATERVA_MAX_DIM];
  double nByte;
  int k, rc;
  CvSliceFill fill;
  const char *zBcolz;
  if (argc == 2) {
    sqlite3_result_error(pCtx, "caterva_slice: give both start and stop, or neither", -1);
    return;
  }
  pArr = cvOpenArrayOrBcolz(pCtx, pConn, argv[0], "caterva_slice", &zBcolz);
  if (zBcolz) cvBzSlice(pCtx, pConn, zBcolz, argc, argv);
  if (pArr == 0) return;
  if (!cvBoxArgs(pCtx, "caterva_slice", pArr, argc == 3 ? argv[1] : 0, argc == 3 ? argv[2] : 0,
                 aStart, aStop))
    goto slice_out;
  nByte = caterva_array_itemsize(pArr);
  for (k = 0; k < caterva_array_ndim(pArr); k++) nByte *= (double)(aStop[k] - aStart[k]);
  fill = (CvSliceFill){pConn, pArr, aStart, aStop};
  rc = cvResultBox(pCtx, nByte, cvSliceFill, &fill);
  if (rc < 0) cvResultLibError(pCtx, pConn, "caterva_slice", rc);
slice_out:
  cvConnArrayPut(pConn, pArr);
}

/* Register one function holding a reference to pConn. */
static int cvCreateFunction(sqlite3 *db, CvConn *pConn, const char *zName, int nArg, int eFlags,
                            void (*xFunc)(sqlite3_context *, int, sqlite3_value **)) {
  return sqlite3_create_function_v2(db, zName, nArg, SQLITE_UTF8 | eFlags, cvConnRef(pConn),
                                    xFunc, 0, 0, cvConnUnref);
}

int cvRegisterFunctions(sqlite3 *db, CvConn *pConn) {
  int rc;
  rc = cvCreateFunction(db, pConn, "caterva_version", 0,
                        SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, cvVersionFunc);
  if (rc == SQLITE_OK)
    rc = cvCreateFunction(db, pConn, "caterva_blocks_read", 0, SQLITE_INNOCUOUS, cvBlocksReadFunc);
  if (rc == SQLITE_OK)
    rc = cvCreateFunction(db, pConn, "caterva_info", 1, SQLITE_DIRECTONLY, cvInfoFunc);
  if (rc == SQLITE_OK)
    rc = cvCreateFunction(db, pConn, "caterva_slice", 1, SQLITE_DIRECTONLY, cvSliceFunc);
  if (rc == SQLITE_OK)
    rc = cvCreateFunction(db, pConn, "caterva_slice", 2, SQLITE_DIRECTONLY, cvSliceFunc);
  if (rc == SQLITE_OK)
    rc = cvCreateFunction(db, pConn, "caterva_slice", 3, SQLITE_DIRECTONLY, cvSliceFunc);
  return rc;
}
