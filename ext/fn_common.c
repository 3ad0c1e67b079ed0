/*
 * fn_common.c -- what the SQL functions share: library errors as SQL errors, JSON text, and
 * boxes given as '[start]', '[stop]' with their BLOB results. Calls none of the fn_*.c files.
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include <math.h>
#include <stdlib.h>
#include <string.h>

void cvResultLibError(sqlite3_context *pCtx, CvConn *pConn, const char *zWhat, int rc) {
  const char *zMsg = caterva_ctx_errmsg(pConn->pCtx);
  char *z;
  if (rc == CATERVA_E_NOMEM) {
    sqlite3_result_error_nomem(pCtx);
    return;
  }
  z = sqlite3_mprintf("caterva: %s: %s%s%s", zWhat, caterva_strerror(rc), zMsg[0] ? ": " : "",
                      zMsg);
  sqlite3_result_error(pCtx, z ? z : "caterva: error", -1);
  sqlite3_free(z);
}

/* Append n bytes of z as a JSON string. */
void cvJsonString(sqlite3_str *pStr, const char *z, size_t n) {
  size_t i;
  sqlite3_str_appendchar(pStr, 1, '"');
  for (i = 0; i < n; i++) {
    unsigned char c = (unsigned char)z[i];
    if (c == '"' || c == '\\') sqlite3_str_appendf(pStr, "\\%c", c);
    else if (c == '\n') sqlite3_str_appendall(pStr, "\\n");
    else if (c == '\t') sqlite3_str_appendall(pStr, "\\t");
    else if (c < 0x20) sqlite3_str_appendf(pStr, "\\u%04x", c);
    else sqlite3_str_appendchar(pStr, 1, (char)c);
  }
  sqlite3_str_appendchar(pStr, 1, '"');
}

void cvJsonDouble(sqlite3_str *pStr, double r) {
  if (isnan(r) || isinf(r)) sqlite3_str_appendall(pStr, "null");
  else sqlite3_str_appendf(pStr, "%!.15g", r);
}

static const char *cvParseIntArray(const char *z, int nDim, int64_t *a) {
  int n = 0;
  while (*z == ' ' || *z == '\t' || *z == '\n' || *z == '\r') z++;
  if (*z++ != '[') return "is not a JSON array of integers";
  for (;;) {
    int64_t v = 0;
    int bNeg = 0, nDigit = 0;
    while (*z == ' ' || *z == '\t' || *z == '\n' || *z == '\r') z++;
    if (*z == ']' && n == 0) {
      z++;
      break;
    }
    if (*z == '-') bNeg = 1, z++;
    while (*z >= '0' && *z <= '9') {
      if (v > (INT64_MAX - 9) / 10) return "holds an integer out of range";
      v = v * 10 + (*z++ - '0');
      nDigit++;
    }
    if (nDigit == 0) return "is not a JSON array of integers";
    if (n >= nDim) return "has more entries than the array has dimensions";
    a[n++] = bNeg ? -v : v;
    while (*z == ' ' || *z == '\t' || *z == '\n' || *z == '\r') z++;
    if (*z == ',') {
      z++;
      continue;
    }
    if (*z++ != ']') return "is not a JSON array of integers";
    break;
  }
  while (*z == ' ' || *z == '\t' || *z == '\n' || *z == '\r') z++;
  if (*z) return "is not a JSON array of integers";
  if (n != nDim) return "has fewer entries than the array has dimensions";
  return 0;
}

int cvBoxArgsShape(sqlite3_context *pCtx, const char *zFunc, int nDim, const int64_t *aShape,
                   sqlite3_value *pStart, sqlite3_value *pStop, int64_t *aStart, int64_t *aStop) {
  sqlite3_value *apArg[2];
  int k, i;
  apArg[0] = pStart;
  apArg[1] = pStop;
  for (k = 0; k < nDim; k++) {
    aStart[k] = 0;
    aStop[k] = aShape[k];
  }
  for (i = 0; i < 2; i++) {
    const char *z;
    const char *zErr;
    if (apArg[i] == 0 || sqlite3_value_type(apArg[i]) == SQLITE_NULL) continue;  /* default */
    if (sqlite3_value_type(apArg[i]) == SQLITE_INTEGER && nDim >= 1) {
      /* a row number along the first dimension, the others whole */
      (i == 0 ? aStart : aStop)[0] = sqlite3_value_int64(apArg[i]);
      continue;
    }
    z = (const char *)sqlite3_value_text(apArg[i]);
    zErr = z ? cvParseIntArray(z, nDim, i == 0 ? aStart : aStop) : "is not text";
    if (zErr) {
      char *zMsg = sqlite3_mprintf("%s: %s %s", zFunc, i == 0 ? "start" : "stop", zErr);
      sqlite3_result_error(pCtx, zMsg ? zMsg : "caterva: bad box", -1);
      sqlite3_free(zMsg);
      return 0;
    }
  }
  for (k = 0; k < nDim; k++) {
    if (aStart[k] < 0 || aStart[k] > aStop[k] || aStop[k] > aShape[k]) {
      char *zMsg = sqlite3_mprintf("%s: dimension %d: [%lld, %lld) is not inside "
                                   "[0, %lld) with start <= stop", zFunc, k, (long long)aStart[k],
                                   (long long)aStop[k], (long long)aShape[k]);
      sqlite3_result_error(pCtx, zMsg ? zMsg : "caterva: box out of range", -1);
      sqlite3_free(zMsg);
      return 0;
    }
  }
  return 1;
}

int cvResultBox(sqlite3_context *pCtx, double nByte, int (*xFill)(void *, uint8_t *, int64_t),
                void *pArg) {
  uint8_t *aBuf;
  int rc;
  if (nByte > (double)sqlite3_limit(sqlite3_context_db_handle(pCtx), SQLITE_LIMIT_LENGTH, -1)) {
    sqlite3_result_error_toobig(pCtx);
    return SQLITE_OK;
  }
  if (nByte == 0) {
    sqlite3_result_zeroblob(pCtx, 0);
    return SQLITE_OK;
  }
  aBuf = sqlite3_malloc64((sqlite3_uint64)nByte);
  if (aBuf == 0) {
    sqlite3_result_error_nomem(pCtx);
    return SQLITE_OK;
  }
  rc = xFill(pArg, aBuf, (int64_t)nByte);
  if (rc < 0) {
    sqlite3_free(aBuf);
    return rc;
  }
  sqlite3_result_blob64(pCtx, aBuf, (sqlite3_uint64)nByte, sqlite3_free);
  return SQLITE_OK;
}

int cvInSorted(const int64_t *a, int n, int64_t x) {
  int lo = 0, hi = n - 1;
  if (a == 0) return 1;
  while (lo <= hi) {
    int mid = lo + (hi - lo) / 2;
    if (a[mid] == x) return 1;
    if (a[mid] < x) lo = mid + 1;
    else hi = mid - 1;
  }
  return 0;
}
