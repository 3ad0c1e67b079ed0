/*
 * fn_reduce_group.c -- the calendar groups of caterva_reduce: "time:month" and the like in
 * its axes argument. Parses a group's text, numbers the groups of the indices of a box from
 * the coordinate's calendar (core/labels.c does the calendar arithmetic) and gives each
 * group's key as the SQL value of the output row.
 *
 *   name:year        the year                          INTEGER  2023
 *   name:month       the month of the year             INTEGER  1 .. 12
 *   name:season      DJF, MAM, JJA, SON                TEXT     'DJF' (December counts with
 *                                                               the January of its winter's
 *                                                               name, as xarray's time.season)
 *   name:dayofyear   the day of the year               INTEGER  1 .. 360/365/366
 *   name:N days      periods of N days from 1970-01-01 TEXT     the period's first day
 *   name:N months    periods of N months from January  TEXT     '2023-04-01'
 *   name:N years     periods of N years from year 0    TEXT     '2020-01-01'
 *
 * Units may be singular or plural ("1 month", "3 months", "7 days", "1 year"); N from 1 to
 * 100000. The groups of a box are the distinct keys of its indices, in increasing key order
 * (season: DJF, MAM, JJA, SON).
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include "vtab_internal.h"

#include <stdlib.h>
#include <string.h>

int cvRedGroupParse(const char *z, int n, CvRedGroup *pGroup) {
  static const struct { const char *zName; int eField; } aField[] = {
      {"year", CATERVA_FIELD_YEAR},           {"month", CATERVA_FIELD_MONTH},
      {"season", CATERVA_FIELD_SEASON},       {"dayofyear", CATERVA_FIELD_DAYOFYEAR}};
  static const struct { const char *zName; int eField; } aUnit[] = {
      {"day", CATERVA_FIELD_DAYS},     {"days", CATERVA_FIELD_DAYS},
      {"month", CATERVA_FIELD_MONTHS}, {"months", CATERVA_FIELD_MONTHS},
      {"year", CATERVA_FIELD_YEARS},   {"years", CATERVA_FIELD_YEARS}};
  size_t i;
  int j = 0, nDigit = 0;
  int64_t nEvery = 0;
  memset(pGroup, 0, sizeof(*pGroup));
  for (i = 0; i < sizeof(aField) / sizeof(aField[0]); i++) {
    if ((int)strlen(aField[i].zName) == n && sqlite3_strnicmp(z, aField[i].zName, n) == 0) {
      pGroup->eField = aField[i].eField;
      pGroup->nEvery = 1;
      return SQLITE_OK;
    }
  }
  while (j < n && z[j] >= '0' && z[j] <= '9' && nDigit < 7) {
    nEvery = nEvery * 10 + (z[j++] - '0');
    nDigit++;
  }
  if (nDigit == 0 || nEvery < 1 || nEvery > 100000) return SQLITE_ERROR;
  while (j < n && z[j] == ' ') j++;
  for (i = 0; i < sizeof(aUnit) / sizeof(aUnit[0]); i++) {
    if ((int)strlen(aUnit[i].zName) == n - j &&
        sqlite3_strnicmp(z + j, aUnit[i].zName, n - j) == 0) {
      pGroup->eField = aUnit[i].eField;
      pGroup->nEvery = nEvery;
      return SQLITE_OK;
    }
  }
  return SQLITE_ERROR;
}

static int cvCmpKey(const void *a, const void *b) {
  int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
  return x < y ? -1 : x > y;
}

/* The position of key x in the sorted, distinct a[0..n), which holds it. */
static int32_t cvKeyFind(const int64_t *a, int32_t n, int64_t x) {
  int32_t lo = 0, hi = n - 1;
  while (lo < hi) {
    int32_t mid = lo + (hi - lo) / 2;
    if (a[mid] < x) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

int cvRedGroupBuild(caterva_ctx *pCtx, const caterva_labels *pLab, int64_t iLo, int64_t iHi,
                    const int64_t *aList, int nList, CvRedGroup *pGroup, char **pzErr) {
  int64_t n = iHi - iLo + 1, j, *aKey = 0;
  int32_t nKey = 0, i;
  int rc = SQLITE_OK;
  (void)pCtx;
  pGroup->aGid = sqlite3_malloc64(sizeof(int32_t) * (sqlite3_uint64)n);
  aKey = sqlite3_malloc64(sizeof(int64_t) * (sqlite3_uint64)n);
  if (pGroup->aGid == 0 || aKey == 0) {
    rc = SQLITE_NOMEM;
    goto group_build_out;
  }
  if (n > INT32_MAX) {
    *pzErr = sqlite3_mprintf("caterva_reduce: too many indices to group");
    rc = SQLITE_ERROR;
    goto group_build_out;
  }
  for (j = 0; j < n; j++) {
    int64_t key = 0;
    if (!cvInSorted(aList, nList, iLo + j)) continue; /* not read: any group will do */
    if (caterva_labels_field(pLab, pGroup->eField, pGroup->nEvery, iLo + j, &key) != CATERVA_OK) {
      *pzErr = sqlite3_mprintf("caterva_reduce: index %lld of the time dimension lies outside "
                               "years 1..9999", (long long)(iLo + j));
      rc = SQLITE_ERROR;
      goto group_build_out;
    }
    aKey[nKey++] = key;
  }
  qsort(aKey, (size_t)nKey, sizeof(int64_t), cvCmpKey);
  for (i = 0, j = 0; i < nKey; i++)
    if (j == 0 || aKey[i] != aKey[j - 1]) aKey[j++] = aKey[i];
  pGroup->nGroup = (int32_t)j;
  pGroup->aKey = aKey;
  aKey = 0;
  pGroup->aFirst = sqlite3_malloc64(sizeof(int64_t) * (sqlite3_uint64)(pGroup->nGroup + 1));
  if (pGroup->aFirst == 0) {
    rc = SQLITE_NOMEM;
    goto group_build_out;
  }
  for (i = 0; i < pGroup->nGroup; i++) pGroup->aFirst[i] = -1;
  for (j = 0; j < n; j++) {
    int64_t key = 0;
    int32_t g = 0;
    if (cvInSorted(aList, nList, iLo + j) &&
        caterva_labels_field(pLab, pGroup->eField, pGroup->nEvery, iLo + j, &key) == CATERVA_OK)
      g = cvKeyFind(pGroup->aKey, pGroup->nGroup, key);
    else
      g = -1;
    pGroup->aGid[j] = g < 0 ? 0 : g;
    if (g >= 0 && pGroup->aFirst[g] < 0) pGroup->aFirst[g] = iLo + j;
  }
group_build_out:
  sqlite3_free(aKey);
  return rc;
}

void cvRedGroupResult(sqlite3_context *pCtx, const caterva_labels *pLab,
                      const CvRedGroup *pGroup, int64_t iGroup) {
  static const char *azSeason[4] = {"DJF", "MAM", "JJA", "SON"};
  int64_t key = pGroup->aKey[iGroup];
  char zBuf[32];
  switch (pGroup->eField) {
    case CATERVA_FIELD_SEASON:
      sqlite3_result_text(pCtx, azSeason[key & 3], 3, SQLITE_STATIC);
      break;
    case CATERVA_FIELD_DAYS:
    case CATERVA_FIELD_MONTHS:
    case CATERVA_FIELD_YEARS:
      if (caterva_labels_period_format(pLab, pGroup->eField, pGroup->nEvery, key, zBuf,
                                       sizeof(zBuf)) == CATERVA_OK)
        sqlite3_result_text(pCtx, zBuf, -1, SQLITE_TRANSIENT);
      else
        sqlite3_result_null(pCtx);
      break;
    default: sqlite3_result_int64(pCtx, key); break;
  }
}

void cvRedGroupFree(CvRedGroup *pGroup) {
  sqlite3_free(pGroup->aGid);
  sqlite3_free(pGroup->aKey);
  sqlite3_free(pGroup->aFirst);
  memset(pGroup, 0, sizeof(*pGroup));
}
