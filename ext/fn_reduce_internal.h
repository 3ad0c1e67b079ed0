/*
 * fn_reduce_internal.h -- what the files of caterva_reduce share.
 *
 *   fn_reduce.c        the module: the table-valued function and the named tables, their
 *                      planning, computing and rows
 *   fn_reduce_named.c  CREATE VIRTUAL TABLE ... USING caterva_reduce(arr, op, axes): the
 *                      arguments, the columns named after the dimensions and statistics,
 *                      and their map onto the function's columns
 *   fn_reduce_args.c   the op argument (a statistic or a list of them) and the axes argument
 *   fn_reduce_group.c  the calendar groups of the axes argument
 *
 * Include after ext_internal.h and SQLITE_EXTENSION_INIT3.
 */
#ifndef FN_REDUCE_INTERNAL_H
#define FN_REDUCE_INTERNAL_H

#include "ext_internal.h"

/* The columns of the table-valued function; a named table maps its own onto these. */
#define CV_RED_NDIM   CATERVA_MAX_DIM
#define CV_RED_VALUE  (CV_RED_NDIM)
#define CV_RED_N      (CV_RED_NDIM + 1)
#define CV_RED_ARR    (CV_RED_NDIM + 2)
#define CV_RED_OP     (CV_RED_NDIM + 3)
#define CV_RED_AXES   (CV_RED_NDIM + 4)
#define CV_RED_INDEX  (CV_RED_NDIM + 5)   /* d0_index ... d15_index */
#define CV_RED_STAT   (CV_RED_INDEX + CV_RED_NDIM) /* count, sum, mean, min, max, std */
#define CV_RED_NCOL   (CV_RED_STAT + CV_RED_NSTAT)

/* In idxStr: CV_RED_KEY_DIM + k, a bound on the group keys of dimension k (named tables). */
#define CV_RED_KEY_DIM 'A'

/* The statistics, numbered as the function's hidden columns: CV_RED_STAT + s - 1. */
#define CV_RED_COUNT 1
#define CV_RED_SUM   2
#define CV_RED_MEAN  3
#define CV_RED_MIN   4
#define CV_RED_MAX   5
#define CV_RED_STD   6
#define CV_RED_NSTAT 6

/* The op argument, parsed: the statistics it lists, in its order ('stats' stands for all
** six, count ... std). A single statistic (not 'stats') is the function's `value`. */
typedef struct CvRedOps CvRedOps;
struct CvRedOps {
  int nStat;                       /* statistics listed, 1 .. CV_RED_NSTAT */
  int aStat[CV_RED_NSTAT];         /* CV_RED_COUNT ... CV_RED_STD */
  const char *azName[CV_RED_NSTAT];/* each one's name as listed ("avg" stays "avg"; static) */
  int bValue;                      /* one statistic, not 'stats': it is `value` */
};

/* fn_reduce_args.c */

/* Parse op (e.g. "mean", "mean,min,max", "stats") into *p. SQLITE_OK, or SQLITE_ERROR with
** *pzErr naming the unknown or repeated statistic (sqlite3_malloc'ed; NULL when out of
** memory). */
int cvRedOpsParse(const char *zOp, CvRedOps *p, char **pzErr);
/* Does p list statistic eStat? */
int cvRedOpsHas(const CvRedOps *p, int eStat);

/* Parse axes (a comma list of dimension names or numbers, each optionally ":group"; NULL or
** empty: all reduced) against the nDim names az: aMode[k] becomes CATERVA_RED_REDUCE, _GROUP
** (with aGroup[k] parsed) or _KEEP. SQLITE_OK, or SQLITE_ERROR with *pzErr. */
int cvRedAxesParse(int nDim, char **az, const char *zAxes, int *aMode, CvRedGroup *aGroup,
                   char **pzErr);
/* Free an array of n names from sqlite3_malloc (NULL is fine). */
void cvRedFreeNames(char **az, int n);

/* fn_reduce_named.c */

/* A table made by CREATE VIRTUAL TABLE ... USING caterva_reduce(arr, op[, axes]). */
typedef struct CvRedNamed CvRedNamed;
struct CvRedNamed {
  char *zArr, *zOp, *zAxes;        /* the arguments, dequoted (zAxes may be NULL) */
  int nDim;
  char **azDim;                    /* the dimensions' names when the table was made */
  int aMode[CV_RED_NDIM];          /* CATERVA_RED_* of each dimension */
  int aKeyInt[CV_RED_NDIM];        /* grouped with INTEGER keys (year, month, dayofyear):
                                   ** numeric bounds on its column choose its groups' cells */
  int nCol;
  int *aMap;                       /* the table's column i is the function's column aMap[i] */
};

/* Make the named table's schema from the CREATE VIRTUAL TABLE arguments argv[3 ..argc):
** SQLITE_OK with *ppNamed and *pzSql (the CREATE TABLE text for sqlite3_declare_vtab, from
** sqlite3_malloc), or an error with *pzErr. */
int cvRedNamedNew(sqlite3 *db, CvConn *pConn, int argc, const char *const *argv,
                  CvRedNamed **ppNamed, char **pzSql, char **pzErr);
/* Free (NULL is fine). */
void cvRedNamedFree(CvRedNamed *p);

#endif /* FN_REDUCE_INTERNAL_H */
