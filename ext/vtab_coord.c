/*
 * vtab_coord.c -- labels of the `caterva` table's dimension columns: SQL values to index ranges
 * and back, through the library's coordinate lookups (core/labels.c).
 *
 * Columns. Dimension k's column holds its label when the array stores a coordinate for it
 * (REAL for numbers; ISO 8601 TEXT for instants: "<unit> since <date>" units) and its index
 * otherwise. Every dimension also has the hidden column <name>_index with the index, so
 * joins and WHERE clauses can use either. Which dimensions have labels is read again
 * whenever the table reads the array again (cvInitGeometry), so coordinates stored by
 * caterva_set_coords show from the next statement on; the declared column type is the one
 * at connect time.
 *
 * Comparisons (=, <, <=, >, >=, IN; BETWEEN is two of them) on a label column become index
 * ranges with the exact semantics of comparing the column's values: numbers as numbers
 * (equality is exact, so 0.1-steps rarely match: use ranges or caterva_nearest); instants
 * as instants of the array's calendar, to the millisecond. A value of the wrong kind
 * (text for a number label other than a numeric string, a number for a date, a date that
 * does not exist in the calendar) is an error, not an empty result; NULL matches nothing.
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include "vtab_internal.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- index ranges narrowed by SQL values (vtab_plan.c and the label code use them) ---- */

/* Mark the range empty. */
static void cvRangeClear(CvRange *p) {
  p->iLo = 1;
  p->iHi = 0;
}

void cvRangeApply(CvRange *p, int op, sqlite3_value *pVal) {
  int eType = sqlite3_value_numeric_type(pVal);
  if (p->iLo > p->iHi) return;
  if (eType == SQLITE_INTEGER) {
    int64_t v = sqlite3_value_int64(pVal);
    switch (op) {
      case CV_OP_EQ:
        if (v < p->iLo || v > p->iHi) cvRangeClear(p);
        else p->iLo = p->iHi = v;
        break;
      case CV_OP_GE:
        if (v > p->iLo) p->iLo = v;
        break;
      case CV_OP_GT:
        if (v >= p->iHi) cvRangeClear(p);
        else if (v >= p->iLo) p->iLo = v + 1;
        break;
      case CV_OP_LE:
        if (v < p->iHi) p->iHi = v;
        break;
      case CV_OP_LT:
        if (v <= p->iLo) cvRangeClear(p);
        else if (v <= p->iHi) p->iHi = v - 1;
        break;
    }
  } else if (eType == SQLITE_FLOAT) {
    double r = sqlite3_value_double(pVal), lo = (double)p->iLo, hi = (double)p->iHi;
    switch (op) {
      case CV_OP_EQ:
        if (r < lo || r > hi || r != floor(r)) cvRangeClear(p);
        else p->iLo = p->iHi = (int64_t)r;
        break;
      case CV_OP_GE:
        if (r > hi) cvRangeClear(p);
        else if (r > lo) p->iLo = (int64_t)ceil(r);
        break;
      case CV_OP_GT:
        if (r >= hi) cvRangeClear(p);
        else if (r >= lo) p->iLo = (int64_t)floor(r) + 1;
        break;
      case CV_OP_LE:
        if (r < lo) cvRangeClear(p);
        else if (r < hi) p->iHi = (int64_t)floor(r);
        break;
      case CV_OP_LT:
        if (r <= lo) cvRangeClear(p);
        else if (r <= hi) p->iHi = (int64_t)ceil(r) - 1;
        break;
    }
  } else {
    cvRangeClear(p);
  }
}


/* The plan operator as a label comparison. */
static int cvCmpOf(int op) {
  switch (op) {
    case CV_OP_LE: return CATERVA_CMP_LE;
    case CV_OP_LT: return CATERVA_CMP_LT;
    case CV_OP_GE: return CATERVA_CMP_GE;
    case CV_OP_GT: return CATERVA_CMP_GT;
    default: return CATERVA_CMP_EQ;
  }
}

void cvLabelsRefresh(CvVtab *pTab) {
  caterva_ctx *pCtx = pTab->pConn->pCtx;
  for (int k = 0; k < pTab->nDim; k++) {
    CvLabel *p = &pTab->aLab[k];
    caterva_coord c;
    int r = caterva_array_get_coord(pCtx, pTab->pArr, k, &c);
    p->bOn = 0;
    p->bBad = 0;
    if (r == CATERVA_OK && c.kind != CATERVA_COORD_NONE)
      r = caterva_labels_init(pCtx, &p->lab, &c, pTab->aShape[k]);
    if (r < 0) {
      p->bBad = 1;
      continue;
    }
    p->bOn = c.kind != CATERVA_COORD_NONE;
  }
}

int cvLabelsCheck(CvVtab *pTab, char **pzErr) {
  for (int k = 0; k < pTab->nDim; k++) {
    if (!pTab->aLab[k].bBad) continue;
    /* read once more for the library's message */
    caterva_coord c;
    int r = caterva_array_get_coord(pTab->pConn->pCtx, pTab->pArr, k, &c);
    const char *zMsg = caterva_ctx_errmsg(pTab->pConn->pCtx);
    *pzErr = sqlite3_mprintf("caterva: the coordinate of dimension %s cannot be used: %s%s%s",
                             pTab->azCol ? pTab->azCol[k] : "?", caterva_strerror(r < 0 ? r : CATERVA_E_CORRUPT),
                             zMsg[0] ? ": " : "", zMsg);
    return SQLITE_ERROR;
  }
  return SQLITE_OK;
}

int cvColumnDim(const CvVtab *pTab, int iCol, int *pbLabel) {
  *pbLabel = 0;
  if (iCol >= 0 && iCol < pTab->nDim) {
    *pbLabel = 1;
    return iCol;
  }
  iCol -= pTab->nDim + 1 + pTab->nVar; /* the hidden index columns follow the values */
  if (iCol >= 0 && iCol < pTab->nDim) return iCol;
  return -1;
}

int cvValueKey(caterva_ctx *pCtx, const caterva_labels *pLab, const char *zName,
               sqlite3_value *pVal, double *pKey, char **pzErr) {
  int eType = sqlite3_value_type(pVal);
  if (eType == SQLITE_NULL) return 1;
  if (pLab->is_time) {
    if (eType == SQLITE_TEXT &&
        caterva_labels_parse_time(pCtx, pLab, (const char *)sqlite3_value_text(pVal), pKey) ==
            CATERVA_OK)
      return 0;
    *pzErr = sqlite3_mprintf("caterva: %s compares with dates: %s", zName,
                             eType == SQLITE_TEXT ? caterva_ctx_errmsg(pCtx)
                                                  : "give text like '2023-08-01'");
    return -1;
  }
  eType = sqlite3_value_numeric_type(pVal);
  if (eType == SQLITE_INTEGER || eType == SQLITE_FLOAT) {
    *pKey = sqlite3_value_double(pVal);
    return 0;
  }
  *pzErr = sqlite3_mprintf("caterva: %s compares with numbers, not '%s'", zName,
                           eType == SQLITE_BLOB ? "(blob)" : (const char *)sqlite3_value_text(pVal));
  return -1;
}

int cvLabelKey(CvVtab *pTab, int k, sqlite3_value *pVal, double *pKey, char **pzErr) {
  return cvValueKey(pTab->pConn->pCtx, &pTab->aLab[k].lab, pTab->azCol ? pTab->azCol[k] : "?",
                    pVal, pKey, pzErr);
}

/* Intersect *p with [lo, hi]. */
static void cvRangeIntersect(CvRange *p, int64_t lo, int64_t hi) {
  if (lo > p->iLo) p->iLo = lo;
  if (hi < p->iHi) p->iHi = hi;
  if (p->iLo > p->iHi) {
    p->iLo = 1;
    p->iHi = 0;
  }
}

int cvLabelRange(caterva_ctx *pCtx, const caterva_labels *pLab, const char *zName, CvRange *p,
                 int op, sqlite3_value *pVal, char **pzErr) {
  double key;
  int64_t lo, hi;
  int r = cvValueKey(pCtx, pLab, zName, pVal, &key, pzErr);
  if (r < 0) return *pzErr ? SQLITE_MISMATCH : SQLITE_NOMEM;
  if (r > 0) { /* NULL */
    p->iLo = 1;
    p->iHi = 0;
    return SQLITE_OK;
  }
  caterva_labels_range(pLab, cvCmpOf(op), key, &lo, &hi);
  cvRangeIntersect(p, lo, hi);
  return SQLITE_OK;
}

int cvBoundApply(CvVtab *pTab, int k, int bLabel, CvRange *p, int op, sqlite3_value *pVal) {
  char *zErr = 0;
  int rc;
  if (!bLabel || !pTab->aLab[k].bOn) {
    cvRangeApply(p, op, pVal);
    return SQLITE_OK;
  }
  rc = cvLabelRange(pTab->pConn->pCtx, &pTab->aLab[k].lab, pTab->azCol ? pTab->azCol[k] : "?",
                    p, op, pVal, &zErr);
  if (rc != SQLITE_OK) {
    cvSetError(pTab, "%s", zErr ? zErr : "caterva: out of memory");
    sqlite3_free(zErr);
  }
  return rc;
}

int cvLabelIndexOf(CvVtab *pTab, int k, sqlite3_value *pVal, int64_t *piOut) {
  const CvLabel *p = &pTab->aLab[k];
  double key;
  char *zErr = 0;
  int r = cvLabelKey(pTab, k, pVal, &key, &zErr);
  if (r < 0) {
    cvSetError(pTab, "%s", zErr ? zErr : "caterva: out of memory");
    sqlite3_free(zErr);
    return zErr ? SQLITE_MISMATCH : SQLITE_NOMEM;
  }
  if (r > 0) {
    cvSetError(pTab, "caterva: NULL coordinate for %s", pTab->azCol[k]);
    return SQLITE_CONSTRAINT;
  }
  if (!caterva_labels_find(&p->lab, key, piOut)) {
    cvSetError(pTab, "caterva: %s = '%s' is not a label of the dimension (labels match "
                     "exactly; see caterva_nearest)", pTab->azCol[k], sqlite3_value_text(pVal));
    return SQLITE_CONSTRAINT;
  }
  return SQLITE_OK;
}

void cvLabelsResult(sqlite3_context *pCtx, const caterva_labels *pLab, int64_t i) {
  char zBuf[48];
  if (!pLab->is_time) {
    sqlite3_result_double(pCtx, caterva_labels_value(pLab, i));
    return;
  }
  if (caterva_labels_format(pLab, i, zBuf, sizeof zBuf) != CATERVA_OK) {
    sqlite3_result_null(pCtx); /* an instant outside years 1..9999 */
    return;
  }
  sqlite3_result_text(pCtx, zBuf, -1, SQLITE_TRANSIENT);
}

void cvLabelResult(sqlite3_context *pCtx, const CvVtab *pTab, int k, int64_t i) {
  cvLabelsResult(pCtx, &pTab->aLab[k].lab, i);
}

/* ---- coords= at creation ---------------------------------------------------------------- */

/* Split z at ':' into at most nMax fields (pointers into the copy zBuf). */
static int cvSplitColon(char *zBuf, char **az, int nMax) {
  int n = 0;
  char *z = zBuf;
  while (n < nMax) {
    char *zEnd = strchr(z, ':');
    az[n++] = z;
    if (zEnd == 0) break;
    *zEnd = 0;
    z = zEnd + 1;
  }
  return n;
}

/* Is z "DD" or "DD.fff" (the minutes or seconds of a time)? */
static int cvIsTimeField(const char *z) {
  if (!(z[0] >= '0' && z[0] <= '9' && z[1] >= '0' && z[1] <= '9')) return 0;
  if (z[2] == 0) return 1;
  if (z[2] != '.') return 0;
  for (z += 3; *z; z++)
    if (*z < '0' || *z > '9') return 0;
  return 1;
}

/* "N unit" of a time step: N > 0 and the plural unit word for CF units. */
static int cvTimeStep(const char *z, double *pStep, const char **pzUnit) {
  static const char *azUnit[] = {"second", "minute", "hour", "day", "week"};
  char *zEnd = 0;
  double r = strtod(z, &zEnd);
  if (zEnd == z || !(r > 0) || !isfinite(r)) return 0;
  while (*zEnd == ' ') zEnd++;
  for (size_t i = 0; i < sizeof azUnit / sizeof azUnit[0]; i++) {
    size_t n = strlen(azUnit[i]);
    if (strncmp(zEnd, azUnit[i], n) == 0 && (zEnd[n] == 0 || (zEnd[n] == 's' && zEnd[n + 1] == 0))) {
      *pStep = r;
      *pzUnit = azUnit[i];
      return 1;
    }
  }
  return 0;
}

/* One entry "name:..." of coords= into dimension *piDim's coordinate c (strings in zBuf or
** sqlite3_malloc'ed *pzUnits). */
static int cvParseCoordEntry(char *zBuf, char **azName, int nDim, int *piDim, caterva_coord *c,
                             char **pzUnits, char **pzErr) {
  char *az[8], *zEnd;
  int n = cvSplitColon(zBuf, az, 8), i = 1, k;
  memset(c, 0, sizeof *c);
  for (k = 0; k < nDim && sqlite3_stricmp(az[0], azName[k]) != 0; k++) {
  }
  if (k == nDim) {
    *pzErr = sqlite3_mprintf("caterva: coords=: no dimension named \"%s\"", az[0]);
    return SQLITE_ERROR;
  }
  *piDim = k;
  c->kind = CATERVA_COORD_REGULAR;
  if (n >= 3 && strlen(az[1]) >= 10 && az[1][4] == '-' && az[1][7] == '-') {
    /* a date start: the time's minutes and seconds were split off at their colons */
    const char *zUnit;
    char *zDate;
    int nTime = 0;
    if (strchr(az[1], 'T') || strchr(az[1], ' ')) {
      while (nTime < 2 && i + nTime + 1 < n && cvIsTimeField(az[i + nTime + 1])) nTime++;
    }
    zDate = sqlite3_mprintf("%s%s%s%s%s", az[1], nTime > 0 ? ":" : "", nTime > 0 ? az[2] : "",
                            nTime > 1 ? ":" : "", nTime > 1 ? az[3] : "");
    i += 1 + nTime;
    if (zDate == 0) return SQLITE_NOMEM;
    if (i >= n || !cvTimeStep(az[i], &c->step, &zUnit)) {
      *pzErr = sqlite3_mprintf("caterva: coords=: %s needs a step like '1 day' or '6 hour' after "
                               "its start date", az[0]);
      sqlite3_free(zDate);
      return SQLITE_ERROR;
    }
    *pzUnits = sqlite3_mprintf("%ss since %s", zUnit, zDate);
    sqlite3_free(zDate);
    if (*pzUnits == 0) return SQLITE_NOMEM;
    c->units = *pzUnits;
    c->calendar = i + 1 < n ? az[i + 1] : "";
    if (i + 2 < n) goto bad;
    return SQLITE_OK;
  }
  if (n < 3 || n > 4) goto bad;
  c->start = strtod(az[1], &zEnd);
  if (zEnd == az[1] || *zEnd) goto bad;
  c->step = strtod(az[2], &zEnd);
  if (zEnd == az[2] || *zEnd) goto bad;
  c->units = n == 4 ? az[3] : "";
  c->calendar = "";
  return SQLITE_OK;
bad:
  *pzErr = sqlite3_mprintf("caterva: coords=: \"%s\" must be name:start:step[:units] or "
                           "name:YYYY-MM-DD:N second|minute|hour|day[:calendar]", az[0]);
  return SQLITE_ERROR;
}

int cvStoreCoords(caterva_ctx *pCtx, caterva_array *pArr, const char *zCoords, char **azName,
                  int nDim, char **pzErr) {
  char *zCopy = sqlite3_mprintf("%s", zCoords), *z, *zEntry;
  int rc = SQLITE_OK, aSeen[CV_MAX_DIM] = {0};
  if (zCopy == 0) return SQLITE_NOMEM;
  for (z = zCopy; rc == SQLITE_OK && z; z = zEntry) {
    caterva_coord c;
    char *zUnits = 0;
    int k = 0, r;
    zEntry = strchr(z, ',');
    if (zEntry) *zEntry++ = 0;
    while (*z == ' ') z++;
    rc = cvParseCoordEntry(z, azName, nDim, &k, &c, &zUnits, pzErr);
    if (rc == SQLITE_OK && aSeen[k]++) {
      *pzErr = sqlite3_mprintf("caterva: coords=: %s given twice", azName[k]);
      rc = SQLITE_ERROR;
    }
    if (rc == SQLITE_OK) {
      r = caterva_array_set_coord(pCtx, pArr, k, &c);
      if (r < 0) {
        *pzErr = sqlite3_mprintf("caterva: coords=: %s: %s", azName[k], caterva_ctx_errmsg(pCtx));
        rc = r == CATERVA_E_NOMEM ? SQLITE_NOMEM : SQLITE_ERROR;
      }
    }
    sqlite3_free(zUnits);
  }
  sqlite3_free(zCopy);
  return rc;
}
