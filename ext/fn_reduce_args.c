/*
 * fn_reduce_args.c -- caterva_reduce's op and axes arguments, as the table-valued function
 * and the named tables both take them.
 *
 *   op    a statistic -- count, sum, mean (or avg), min, max, std -- or a comma list of them
 *         ("mean,min,max"), or stats (all six); each statistic once
 *   axes  a comma list of dimension names or numbers, each reduced, or grouped when followed
 *         by ":group" ("time:month"); the dimensions not named are kept
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include "fn_reduce_internal.h"

#include <stdlib.h>
#include <string.h>

static const struct {
  const char *zName;
  int eStat;
} aRedStat[] = {{"count", CV_RED_COUNT}, {"sum", CV_RED_SUM}, {"mean", CV_RED_MEAN},
                {"avg", CV_RED_MEAN},     {"min", CV_RED_MIN}, {"max", CV_RED_MAX},
                {"std", CV_RED_STD}};

#define CV_RED_OPS_KNOWN "count, sum, mean, avg, min, max, std, stats, or a comma list of them"

/* Add statistic i of aRedStat to p: SQLITE_ERROR with *pzErr when it is there already. */
static int cvRedOpsAdd(CvRedOps *p, int i, char **pzErr) {
  int j;
  for (j = 0; j < p->nStat; j++) {
    if (p->aStat[j] == aRedStat[i].eStat) {
      *pzErr = sqlite3_mprintf("caterva_reduce: op lists %s twice%s", p->azName[j],
                               strcmp(p->azName[j], aRedStat[i].zName) == 0
                                   ? ""
                                   : " (mean and avg are one statistic)");
      return SQLITE_ERROR;
    }
  }
  p->aStat[p->nStat] = aRedStat[i].eStat;
  p->azName[p->nStat++] = aRedStat[i].zName;
  return SQLITE_OK;
}

/* One item z[0..n) of the op list into p. */
static int cvRedOpsItem(const char *z, int n, CvRedOps *p, char **pzErr) {
  size_t i;
  int rc = SQLITE_OK;
  if (n == 5 && sqlite3_strnicmp(z, "stats", 5) == 0) {
    for (i = 0; i < sizeof(aRedStat) / sizeof(aRedStat[0]) && rc == SQLITE_OK; i++)
      if (aRedStat[i].eStat != CV_RED_MEAN || strcmp(aRedStat[i].zName, "mean") == 0)
        rc = cvRedOpsAdd(p, (int)i, pzErr);
    return rc;
  }
  for (i = 0; i < sizeof(aRedStat) / sizeof(aRedStat[0]); i++)
    if ((int)strlen(aRedStat[i].zName) == n && sqlite3_strnicmp(z, aRedStat[i].zName, n) == 0)
      return cvRedOpsAdd(p, (int)i, pzErr);
  *pzErr = sqlite3_mprintf("caterva_reduce: unknown op '%.*s' (" CV_RED_OPS_KNOWN ")", n, z);
  return SQLITE_ERROR;
}

/* The next item of a comma-separated list at *pz: its first character in *pzItem and its
** length without surrounding blanks returned; *pz moves past the item's comma (*pbLast 0),
** or to the terminating NUL after the last item (*pbLast 1: 'a,' has an empty last item). */
static int cvListItem(const char **pz, const char **pzItem, int *pbLast) {
  const char *z = *pz, *zEnd = strchr(z, ',');
  int n;
  if (zEnd == 0) zEnd = z + strlen(z);
  while (z < zEnd && (*z == ' ' || *z == '\t')) z++;
  n = (int)(zEnd - z);
  while (n > 0 && (z[n - 1] == ' ' || z[n - 1] == '\t')) n--;
  *pzItem = z;
  *pbLast = *zEnd == 0;
  *pz = *zEnd ? zEnd + 1 : zEnd;
  return n;
}

int cvRedOpsParse(const char *zOp, CvRedOps *p, char **pzErr) {
  const char *z = zOp;
  int rc = SQLITE_OK, nItem = 0, bStats = 0;
  memset(p, 0, sizeof(*p));
  if (zOp == 0 || zOp[0] == 0) {
    *pzErr = sqlite3_mprintf("caterva_reduce: op is %s (" CV_RED_OPS_KNOWN ")",
                             zOp ? "empty" : "NULL");
    return SQLITE_ERROR;
  }
  while (rc == SQLITE_OK) {
    const char *zItem;
    int bLast, n = cvListItem(&z, &zItem, &bLast);
    bStats |= n == 5 && sqlite3_strnicmp(zItem, "stats", 5) == 0;
    rc = cvRedOpsItem(zItem, n, p, pzErr);
    nItem++;
    if (bLast) break;
  }
  p->bValue = nItem == 1 && !bStats;
  return rc;
}

int cvRedOpsHas(const CvRedOps *p, int eStat) {
  int j;
  for (j = 0; j < p->nStat; j++)
    if (p->aStat[j] == eStat) return 1;
  return 0;
}

void cvRedFreeNames(char **az, int n) {
  int k;
  for (k = 0; az && k < n; k++) sqlite3_free(az[k]);
  sqlite3_free(az);
}

/* One entry of axes, z[0..n): a dimension's name or number, then ":" and a group. */
static int cvRedAxesItem(int nDim, char **az, const char *z, int n, int *aMode,
                         CvRedGroup *aGroup, char **pzErr) {
  const char *zColon = n > 0 ? memchr(z, ':', (size_t)n) : 0;
  int nName = zColon ? (int)(zColon - z) : n, j, iFound = -1;
  while (nName > 0 && (z[nName - 1] == ' ' || z[nName - 1] == '\t')) nName--;
  for (j = 0; j < nDim && iFound < 0; j++)
    if ((int)strlen(az[j]) == nName && sqlite3_strnicmp(az[j], z, nName) == 0) iFound = j;
  if (iFound < 0 && nName > 0 && nName < 4 && strspn(z, "0123456789") >= (size_t)nName) {
    iFound = atoi(z);
    if (iFound >= nDim) iFound = -1;
  }
  if (iFound < 0) {
    *pzErr = sqlite3_mprintf("caterva_reduce: no dimension '%.*s' (the array has %d)", nName,
                             z, nDim);
    return SQLITE_ERROR;
  }
  aMode[iFound] = CATERVA_RED_REDUCE;
  if (zColon) {
    const char *zG = zColon + 1;
    int nG = n - (int)(zG - z);
    while (nG > 0 && *zG == ' ') zG++, nG--;
    cvRedGroupFree(&aGroup[iFound]);
    if (cvRedGroupParse(zG, nG, &aGroup[iFound]) != SQLITE_OK) {
      *pzErr = sqlite3_mprintf("caterva_reduce: unknown group '%.*s' of %s (year, month, "
                               "season, dayofyear, or 'N days', 'N months', 'N years')", nG,
                               zG, az[iFound]);
      return SQLITE_ERROR;
    }
    aMode[iFound] = CATERVA_RED_GROUP;
  }
  return SQLITE_OK;
}

int cvRedAxesParse(int nDim, char **az, const char *zAxes, int *aMode, CvRedGroup *aGroup,
                   char **pzErr) {
  const char *z = zAxes;
  int k, rc = SQLITE_OK;
  int bAll = zAxes == 0 || zAxes[0] == 0;
  for (k = 0; k < nDim; k++) aMode[k] = bAll ? CATERVA_RED_REDUCE : CATERVA_RED_KEEP;
  while (!bAll && *z && rc == SQLITE_OK) {
    const char *zItem;
    int bLast, n = cvListItem(&z, &zItem, &bLast);
    rc = cvRedAxesItem(nDim, az, zItem, n, aMode, aGroup, pzErr);
  }
  return rc;
}
