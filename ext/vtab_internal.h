/*
 * vtab_internal.h -- what the files of the `caterva` virtual table share.
 *
 *   vtab_main.c     the module table (every sqlite3_module slot), create/connect/disconnect
 *   vtab_error.c    the error helpers every part uses (cvSetError, cvLibError)
 *   vtab_config.c   options, column names, declare_vtab, geometry
 *   vtab_create.c   creating a new array from CREATE VIRTUAL TABLE options
 *   vtab_coord.c    labels of the dimension columns: SQL values to index ranges and back
 *   vtab_vars.c     tables of several variables (arrays of one shape side by side)
 *   vtab_plan.c     xBestIndex, and the bounds xBestIndex and xFilter both apply
 *   vtab_valpred.c  constraints on the value column, checked against block statistics
 *   vtab_cache.c    the LRU cache of decompressed blocks shared by the table's cursors
 *   vtab_cursor.c   xOpen ... xRowid, the scans
 *   vtab_write.c    xUpdate: INSERT, UPDATE, DELETE as cell writes
 *   vtab_txn.c      transactions, savepoints, and what a statement sees
 *   vtab_bcolz.c    bcolz carray and ctable directories as tables of the module
 *
 * Table-lifetime state lives in CvVtab, per-scan state in CvCursor. Include after ext_internal.h
 * and SQLITE_EXTENSION_INIT3.
 */
#ifndef VTAB_INTERNAL_H
#define VTAB_INTERNAL_H

#include "ext_internal.h"

#define CV_MAX_DIM CATERVA_MAX_DIM

/* An inclusive range of coordinates along one dimension (empty when iLo > iHi). */
typedef struct CvRange CvRange;
struct CvRange {
  int64_t iLo;   /* First coordinate in the range */
  int64_t iHi;   /* Last coordinate in the range */
};

/* Item types that xColumn converts itself, without calling cvItemResult (full scans spend
** a good part of their time per row there). */
#define CV_FAST_NONE 0
#define CV_FAST_F8   1   /* float64 in host byte order */
#define CV_FAST_F4   2   /* float32 in host byte order */

typedef struct CvVtab CvVtab;
typedef struct CvRetired CvRetired;
typedef struct CvBcolzTab CvBcolzTab;

/* An array replaced while cursors may still read it (vtab_txn.c). */
struct CvRetired {
  caterva_array *pArr;                /* Freed when the table has no open cursor */
  CvRetired *pNext;
};
typedef struct CvCursor CvCursor;
typedef struct CvOptions CvOptions;
typedef struct CvLabel CvLabel;
typedef struct CvVar CvVar;
typedef struct CvVarPos CvVarPos;

#define CV_MAX_VARS 64   /* arrays of one table */

/* An array of a several-variable table after the first (vtab_vars.c): its own partitioning, item
** type and block cache. */
struct CvVar {
  char *zPath;                        /* Its file or directory */
  caterva_array *pArr;                /* Read-only, or writable once written */
  caterva_lock *pLock;                /* Its .b2lock sidecar, or NULL */
  uint64_t iGen;                      /* Generation counter the array reflects */
  uint64_t iGenLocked;                /* The counter after our last exclusive lock */
  int bWritable;                      /* pArr was opened for writing */
  int bCollected;                     /* killed writers' leftovers removed */
  int bWrote;                         /* Cells written in this transaction */
  uint8_t aFill[16];                  /* The item DELETE writes */
  CvItemType item;                    /* How its items become SQL values */
  int32_t aChunk[CV_MAX_DIM];         /* Chunk shape */
  int32_t aBlock[CV_MAX_DIM];         /* Block shape */
  int64_t aBlkStride[CV_MAX_DIM];     /* Item stride inside a block */
  int64_t aChunkStride[CV_MAX_DIM];   /* Chunk number stride */
  int64_t aBlockStride[CV_MAX_DIM];   /* Block number stride inside a chunk */
  int64_t nBlockItem;                 /* Items per block */
  CvCache cache;                      /* Its decompressed blocks */
};

/* A cursor's current block of one CvVar. */
struct CvVarPos {
  int64_t iChunk;                     /* The block held (-1: none) */
  int32_t iBlock;
  const uint8_t *aData;               /* Its items, or NULL */
  CvCacheEntry *pEntry;               /* Pinned cache entry holding it, or NULL */
  uint8_t *aPriv;                     /* Private buffer when the cache cannot take a block */
  int64_t iPrivChunk;                 /* Block in aPriv (-1: none) */
  int32_t iPrivBlock;
};

/* A dimension's labels (vtab_coord.c). */
struct CvLabel {
  int bOn;                            /* The array has a coordinate for the dimension */
  int bBad;                           /* ... which cannot be read (cvLabelsCheck says why) */
  caterva_labels lab;                 /* Lookups; borrows the array's label vector */
};

/* Constraints on the value column that xFilter received (vtab_valpred.c). */
#define CV_MAX_VALPRED 8
typedef struct CvValPred CvValPred;
struct CvValPred {
  int nOp;                            /* Comparisons in aOp[] / aBound[] */
  int aOp[CV_MAX_VALPRED];            /* CATERVA_CMP_* */
  caterva_bound aBound[CV_MAX_VALPRED];
  int bIsNull, bNotNull;              /* value IS NULL / IS NOT NULL */
  caterva_ctx *pCtx;                  /* Set when attached to an iterator */
  caterva_array *pArr;
  int eType;                          /* CATERVA_STATS_* of pArr */
  int64_t nKept;                      /* Blocks the statistics let through */
};

/* One open caterva table. */
struct CvVtab {
  sqlite3_vtab base;                  /* Base class - must be first */
  CvConn *pConn;                      /* Connection state: the library context */
  sqlite3 *db;                        /* The connection (its busy timeout) */
  char *zPath;                        /* The array's file or directory */
  char **azCol;                       /* Column names, nDim + 1 */
  caterva_array *pArr;                /* The array: read-only, or writable once written */
  CvRetired *pRetired;                /* Arrays replaced while cursors were open */
  caterva_lock *pLock;                /* The .b2lock sidecar, or NULL when it cannot exist */
  int bRemote;                        /* zPath is a URL: read-only, no sidecar */
  int iLibRc;                         /* the last library error cvLibError reported */
  caterva_remote_opts remote;         /* Options of remote access (strings: zEndpoint...) */
  char *zEndpoint, *zRegion;          /* Owned copies the options point at */
  uint64_t iGen;                      /* Generation counter the array reflects */
  uint64_t iGenLocked;                /* The counter after our last exclusive lock */
  int bWritable;                      /* pArr was opened for writing */
  int bCollected;                     /* killed writers' leftovers removed (first xBegin) */
  int bInTxn;                         /* A write transaction is open (we hold LOCK_EX) */
  int bCommitted;                     /* xSync has committed it; xCommit releases */
  int bDirty;                         /* Cells written since the block cache was cleared */
  int bWrote;                         /* Cells written in this transaction */
  int bGroupFailed;                   /* A commit of several arrays failed: reopen them all */
  int bSync;                          /* synchronous: CATERVA_SYNC_FULL, _NORMAL or _OFF */
  int bLockReads;                     /* lock_reads=1: LOCK_SH while cursors are open */
  int nMaxDead;                       /* max_dead=: compaction budget, percent (vtab_txn.c) */
  int bReadLocked;                    /* ... and it is held now */
  int bRange;                         /* range=: rows only where dimension iRangeDim */
  int iRangeDim;                      /* ... lies in [iRangeLo, iRangeHi] (indices; read-only) */
  int64_t iRangeLo, iRangeHi;
  int nCursor;                        /* Open cursors */
  uint8_t aFill[16];                  /* The item DELETE writes (zeros for wider items) */
  int nDim;                           /* Dimensions; the value column is column nDim */
  int64_t aShape[CV_MAX_DIM];         /* Extent of each dimension */
  int32_t aChunk[CV_MAX_DIM];         /* Chunk shape */
  int32_t aBlock[CV_MAX_DIM];         /* Block shape */
  int64_t aBlkStride[CV_MAX_DIM];     /* Item stride of each dimension inside a block */
  int64_t aArrStride[CV_MAX_DIM];     /* Item stride in the whole array (for the rowid) */
  int64_t aChunkStride[CV_MAX_DIM];   /* Chunk number stride of each chunk grid coordinate */
  int64_t aBlockStride[CV_MAX_DIM];   /* Block number stride inside a chunk */
  int64_t nBlockItem;                 /* Items per block */
  CvLabel aLab[CV_MAX_DIM];           /* Labels of each dimension (vtab_coord.c) */
  int nVar;                           /* Arrays after the first (value columns nDim+1...) */
  CvVar *aVar;                        /* Those arrays (vtab_vars.c), or NULL */
  CvItemType item;                    /* How items become SQL values */
  int eFast;                          /* CV_FAST_*: items read inline by xColumn */
  int64_t szCache;                    /* Bytes the block cache may use */
  CvCache cache;                      /* Decompressed blocks shared by the cursors */
  CvBcolzTab *pBcolz;                 /* A bcolz directory (vtab_bcolz.c), else NULL; then
                                      ** only base, pConn, db and zPath above are used */
};


/*
** The members both kinds of cursor begin with: CvCursor (vtab_cursor.c) scanning an array, and
** CvBzCursor (vtab_bcolz.c) scanning a bcolz directory. The module's xNext, xEof and xColumn
** (vtab_cursor.c) read them before they know the kind, so that a row inside a run of cells costs
** no dispatch: nFast counts the further cells xNext reaches by stepping along the last
** dimension alone (in the same block, the same box and the row budget), and is always 0 in
** a bcolz cursor, whose iValueCol is -1.
*/
/* Keeps a rarely taken path out of its caller, so that the caller's common path needs no
** stack frame (xNext and xColumn run once per row). */
#if defined(__GNUC__)
#define CV_NOINLINE __attribute__((noinline))
#else
#define CV_NOINLINE
#endif

#define CV_CURSOR_HEAD                                                                   \
  sqlite3_vtab_cursor base;           /* Base class - must be first */                  \
  int bEof;                           /* No more rows */                                \
  int bBcolz;                         /* A CvBzCursor, else a CvCursor */               \
  int iValueCol;                      /* The column xColumn may read inline (-1: none) */ \
  int64_t nFast;                      /* Steps xNext takes along the last dimension */

/*
** A scan. Each dimension has a sorted list of disjoint ranges ("runs"): one for bounds,
** several for an IN list (consecutive values merged). The scan visits the boxes of the
** cartesian product of the runs in lexicographic order, the blocks of each box in the
** iterator's order, and the cells of each block in C order.
*/
struct CvCursor {
  CV_CURSOR_HEAD
  int bValue;                         /* The query reads the value column */
  int bCached;                        /* Blocks come from the table's cache, on demand */
  int bPrefill;                       /* ... and a miss decodes its slab ahead (cvPrefill) */
  int64_t iPrefillRow;                /* Chunk row of the current box last prefilled, or -1 */
  int bOrdered;                       /* Cells in C order, without the block iterator */
  int bLastBox;                       /* The box being iterated is the last one */
  int64_t nLeft;                      /* Rows still wanted (LIMIT + OFFSET), -1: no limit */
  CvRange *aRun[CV_MAX_DIM];          /* Runs of each dimension */
  int nRun[CV_MAX_DIM];               /* Number of runs of each dimension */
  int iRun[CV_MAX_DIM];               /* Run of each dimension in the current box */
  CvRange aBound[CV_MAX_DIM];         /* Bounds of each dimension, and its run without IN */
  int64_t *aList[CV_MAX_DIM];         /* IN values of a dimension (sorted, unique), or NULL */
  int nList[CV_MAX_DIM];              /* Entries in aList[] */
  caterva_block_iter *pIter;          /* Iterator over the current box */
  const caterva_block *pBlk;          /* Current block (owned by pIter) */
  int64_t iChunk;                     /* Chunk number of the current block */
  int32_t iBlock;                     /* Block number of the current block in its chunk */
  int64_t iSegEnd;                    /* Ordered scans: last coordinate along the last
                                      ** dimension before the block or run ends */
  const uint8_t *aData;               /* Its decompressed items, or NULL if not fetched */
  CvCacheEntry *pEntry;               /* Pinned cache entry aData points into, or NULL */
  uint8_t *aPriv;                     /* Private block buffer when the cache has no room */
  int64_t nPriv;                      /* Its bytes */
  int64_t iPrivChunk;                 /* Chunk of the block held in aPriv (< 0: none) */
  int32_t iPrivBlock;                 /* Block number of the block held in aPriv */
  CvVarPos *aVarPos;                  /* Current block of each further array (nVar) */
  int64_t aCoord[CV_MAX_DIM];         /* Coordinates of the current row */
  int64_t aLabAt[CV_MAX_DIM];         /* Time labels: index whose text is in azLab (-1: none;
                                      ** consecutive rows mostly share one: a row's date is
                                      ** formatted once per run of the later dimensions) */
  int anLab[CV_MAX_DIM];              /* ... its length, or -1 for NULL */
  char azLab[CV_MAX_DIM][48];
  int64_t iOff;                       /* Item offset of aCoord inside the block */
  int64_t iLastEnd, iOffEnd;          /* aCoord[kLast] and iOff at the end of the run: while
                                      ** xNext takes fast steps, the current ones are these
                                      ** minus nFast (cvSyncRun writes them back) */
  int kLast;                          /* nDim - 1: the dimension of the fast steps */
  int eFast;                          /* How xColumn reads the value column (CV_FAST_*) */
  CvValPred val;                      /* Value constraints: blocks they rule out are skipped */
};

/* ---- vtab_main.c ------------------------------------------------------------------------- */

/* Leave a printf-style error message in the table (replacing any earlier one). */
void cvSetError(CvVtab *pTab, const char *zFmt, ...);
/* Report a failed library call rc; returns the SQLite error code to give back. */
int cvLibError(CvVtab *pTab, int rc);

/* ---- vtab_config.c ------------------------------------------------------------------ */

/* Options of CREATE VIRTUAL TABLE, as parsed; strings are sqlite3_malloc'ed. */
struct CvOptions {
  char *zPath;       /* path= (or the first argument without a name) */
  char *zDims;       /* dims=, or NULL */
  char *zValue;      /* value=, or NULL */
  char *zDtype;      /* dtype=, or NULL */
  int64_t nCacheMb;  /* cache_mb= (a default when not given) */
  int bCacheMb;      /* cache_mb= was given */
  char *zShape;      /* creation options (vtab_create.c), or NULL */
  char *zChunks;
  char *zBlocks;
  char *zCodec;
  char *zClevel;
  char *zFilters;
  char *zFill;
  char *zSparse;
  char *zCoords;     /* coords= (creation, vtab_coord.c) */
  int nMore;         /* Further unnamed arguments: the paths of more arrays (vtab_vars.c) */
  char *azMore[CV_MAX_VARS];
  char *zSync;       /* synchronous= full | normal | off */
  char *zLockReads;  /* lock_reads= 0 | 1 */
  char *zMaxDead;    /* max_dead= percent of dead bytes a commit may leave (vtab_txn.c) */
  char *zEndpoint;   /* remote arrays: endpoint=, region=, path_style=, http_connections=, */
  char *zRegion;     /* remote_cache_mb=, http_retries=, http_timeout_ms= (cvRemoteOptions) */
  char *zPathStyle;
  char *zHttpConns;
  char *zRemoteCacheMb;
  char *zHttpRetries;
  char *zHttpTimeoutMs;
  char *zRemoteFetch;  /* remote_fetch= blocks (default) | chunks */
  char *zRange;      /* range= dim:start:stop (cvRangeSetup), or NULL */
  char *zGcGrace;      /* gc_grace= seconds (default 3600) | never: S3 writes' collection */
  char *zBlockChecks;  /* block_checks= on (default) | off */
  char **azValName;  /* Value column names of a converted ctable (1 + nMore; vtab_bcolz.c
                     ** cvBzExpandConverted), or NULL: used when value= is not given */
};

/* The options of remote access among *p, checked, into *pOut (its strings borrow p's). */
int cvRemoteOptions(const CvOptions *p, caterva_remote_opts *pOut, char **pzErr);
/* Whether any of them was given. */
int cvHasRemoteOptions(const CvOptions *p);
/* range= "dim:start:stop" (a dimension column's name or number; indices, stop exclusive, past
** the extent allowed) into pTab->bRange, iRangeDim, iRangeLo, iRangeHi; needs pTab->azCol.
** Nothing to do when zRange is NULL. */
int cvRangeSetup(CvVtab *pTab, const char *zRange, char **pzErr);
/* The full extent of dimension k, narrowed to range= when it restricts k: where a scan of
** the table starts (xBestIndex and xFilter). */
void cvRangeInit(const CvVtab *pTab, int k, CvRange *p);

/* Parse argv[3..argc) of xCreate/xConnect into *pOpt (zeroed first); writes *pzErr on error.
** The caller frees *pOpt with cvOptionsFree in every case. */
int cvOptionsParse(CvOptions *pOpt, int argc, const char *const *argv, char **pzErr);
/* A copy (sqlite3_malloc) of the CREATE VIRTUAL TABLE argument z[0..n) without surrounding blanks
** and, if quoted with ', " or `, without its quotes; NULL when out of memory. */
char *cvDequote(const char *z, int n);
/* Parse an option string "key=value key=value ..." (blank-separated; a value may be quoted
** with ', " or ` to hold blanks) with the names and meanings of CREATE VIRTUAL TABLE's
** options into *pOpt (zeroed first; zOpt may be NULL). Same ownership as cvOptionsParse. */
int cvOptionsParseString(CvOptions *pOpt, const char *zOpt, char **pzErr);
/* fn_io.c: the first option an import does not take (those of a table's file: path, shape,
** dtype, value, fill, synchronous, lock_reads, cache_mb), or NULL. */
const char *cvImportBadOption(const CvOptions *p);

/* fn_io.c: progress and interrupts of an import. cvImportProgressBegin prepares what reports use
** (zProgress: the progress= option, NULL, "stderr" or an SQL function's name, called as
** NAME(items_done, items_total)); cvImportProgressStep is the library's caterva_progress_fn:
** it reports and stops the import when sqlite3_interrupt() was called or the function raised
** an error (zErr then says which; bInterrupted for an interrupt); cvImportProgressEnd frees. */
typedef struct CvImportProgress CvImportProgress;
struct CvImportProgress {
  sqlite3 *db;             /* The connection calling caterva_import() */
  const char *zWhat;       /* What is imported (a variable, a file), for stderr lines */
  sqlite3_stmt *pStmt;     /* SELECT progress(?1, ?2), or NULL */
  sqlite3_stmt *pCheck;    /* SELECT 1, to see sqlite3_interrupt() without pStmt */
  int bStderr;             /* progress=stderr */
  int bInterrupted;        /* stopped by sqlite3_interrupt() */
  char *zErr;              /* Why it stopped, or NULL */
  double t0;               /* Start, in seconds */
};
int cvImportProgressBegin(CvImportProgress *p, sqlite3 *db, const char *zWhat,
                          const char *zProgress, char **pzErr);
int cvImportProgressStep(void *pArg, int64_t nDone, int64_t nTotal);
void cvImportProgressEnd(CvImportProgress *p);
double cvImportNow(void);
/* A CvExtraOption for importers whose one extra option is progress=: pArg is a
** CvProgressOption, zProgress set (sqlite3_malloc'ed) from the option; any other key is an
** error naming the source kind and the options it takes. */
typedef struct CvProgressOption CvProgressOption;
struct CvProgressOption {
  char *zProgress;          /* progress=, or NULL */
  const char *zSource;      /* ".npy", "bcolz": the source kind, for messages */
  const char *zTakes;       /* the options the import takes, for messages */
};
int cvProgressOption(void *pArg, const char *zKey, const char *zVal, char **pzErr);
/* The same for an importer with options of its own: a key that is not one of CREATE VIRTUAL
** TABLE's is passed, dequoted, to xExtra(pArg, zKey, zVal, pzErr), which returns SQLITE_OK
** or an error with *pzErr (e.g. for a key it does not know either). */
typedef int (*CvExtraOption)(void *pArg, const char *zKey, const char *zVal, char **pzErr);
int cvOptionsParseStringExtra(CvOptions *pOpt, const char *zOpt, CvExtraOption xExtra,
                              void *pArg, char **pzErr);
/* Free the strings of *p (not p itself). */
void cvOptionsFree(CvOptions *p);
/* Copy the geometry of the open array pTab->pArr into the table. */
void cvInitGeometry(CvVtab *pTab);
/* Decide how items become SQL values (pTab->item, pTab->eFast) from the file's dtype or the
** dtype= override zDtype (may be NULL); writes *pzErr on a mismatch. */
int cvInitItems(CvVtab *pTab, const char *zDtype, char **pzErr);
/* Column names into azName[0..nDim] (each sqlite3_malloc'ed; the caller frees them). */
int cvColumnNames(CvVtab *pTab, const CvOptions *pOpt, char **azName, char **pzErr);
/* Split dims= into exactly nDim names (each sqlite3_malloc'ed into azName). */
int cvSplitDims(const char *zDims, int nDim, char **azName, char **pzErr);
/* Declare the table's columns (azName[0..nDim]) to SQLite. */
int cvDeclare(sqlite3 *db, CvVtab *pTab, char **azName, char **pzErr);

/* ---- vtab_coord.c ------------------------------------------------------------------------ */

/* Columns: 0..nDim-1 the dimensions (label or index), nDim..nDim+nVar the values (one per
** array), then nDim+nVar+1+k the hidden index column of dimension k. */
/* Read which dimensions have labels from pTab->pArr (called by cvInitGeometry). */
void cvLabelsRefresh(CvVtab *pTab);
/* SQLITE_ERROR with *pzErr when a dimension's coordinate cannot be read. */
int cvLabelsCheck(CvVtab *pTab, char **pzErr);
/* The dimension of column iCol (or -1: the value column), and whether it is the dimension's
** column (*pbLabel: its constraints compare labels when the dimension has them at xFilter
** time) or its hidden index column. */
int cvColumnDim(const CvVtab *pTab, int iCol, int *pbLabel);
/* Narrow the range *p by "dim OP v" (op is CV_OP_EQ ... CV_OP_GT), as SQLite would compare. */
void cvRangeApply(CvRange *p, int op, sqlite3_value *pVal);
/* Narrow the index range *p of dimension k by "column OP value", comparing labels when
** bLabel and the dimension has them, else indices (cvRangeApply). SQLite error code,
** message on pTab. */
int cvBoundApply(CvVtab *pTab, int k, int bLabel, CvRange *p, int op, sqlite3_value *pVal);
/* The same for any labels pLab (of the dimension named zName, for messages): SQLITE_OK, or
** SQLITE_MISMATCH with *pzErr (sqlite3_malloc'ed) for a value of the wrong kind, or
** SQLITE_NOMEM. Used by caterva_reduce too. */
int cvLabelRange(caterva_ctx *pCtx, const caterva_labels *pLab, const char *zName, CvRange *p,
                 int op, sqlite3_value *pVal, char **pzErr);
/* The key of an SQL value compared with labels pLab of the dimension named zName: 0 and
** *pKey; 1 for NULL; -1 with *pzErr (sqlite3_malloc'ed) for a value of the wrong kind. */
int cvValueKey(caterva_ctx *pCtx, const caterva_labels *pLab, const char *zName,
               sqlite3_value *pVal, double *pKey, char **pzErr);
/* The same for dimension k of table pTab. */
int cvLabelKey(CvVtab *pTab, int k, sqlite3_value *pVal, double *pKey, char **pzErr);
/* The index whose label equals pVal exactly (also past the extent, for growth); error with
** a message on pTab otherwise. */
int cvLabelIndexOf(CvVtab *pTab, int k, sqlite3_value *pVal, int64_t *piOut);
/* Index i's label as the SQL result. */
void cvLabelResult(sqlite3_context *pCtx, const CvVtab *pTab, int k, int64_t i);
/* Index i's label of pLab as the SQL result (REAL, or ISO 8601 TEXT for instants). */
void cvLabelsResult(sqlite3_context *pCtx, const caterva_labels *pLab, int64_t i);
/* Store the coordinates of coords= ('lat:-89.5:1.0,time:2023-01-01:1 day') in a new array
** whose dimensions are named azName[0..nDim). */
int cvStoreCoords(caterva_ctx *pCtx, caterva_array *pArr, const char *zCoords, char **azName,
                  int nDim, char **pzErr);

/* ---- vtab_vars.c ------------------------------------------------------------------------- */

/* Open the arrays after the first (pOpt->azMore) and check them against the table's. */
int cvVarsOpen(CvVtab *pTab, const CvOptions *pOpt, char **pzErr);
void cvVarsFree(CvVtab *pTab);
/* At a statement's start: read again the arrays another writer changed; an error when they
** no longer have the table's shape. */
int cvVarsRefresh(CvVtab *pTab);
/* After the first array grew (INSERT): grow every further array to its shape. */
int cvVarsGrow(CvVtab *pTab);
/* Recompute variable p's partitioning after it was opened again (and drop its blocks). */
void cvVarReset(CvVar *p);
/* The item of variable iVar at cell aCoord (through pPos, the cursor's block of it). */
int cvVarItem(CvVtab *pTab, int iVar, CvVarPos *pPos, const int64_t *aCoord,
              const uint8_t **ppItem);
void cvVarPosRelease(CvVar *p, CvVarPos *pPos);
/* The value column name of an array: its `name` attribute (a string), else the file stem
** (sqlite3_malloc'ed; NULL when out of memory). */
char *cvVarName(CvConn *pConn, caterva_array *pArr, const char *zPath);

/* ---- vtab_plan.c ------------------------------------------------------------------------- */

/* Operators of a plan (idxStr), R*Tree style; the encoding is described above cvBestIndex. */
#define CV_OP_EQ     'A'   /* dim = v  (also dim IS v) */
#define CV_OP_LE     'B'   /* dim <= v */
#define CV_OP_LT     'C'   /* dim < v */
#define CV_OP_GE     'D'   /* dim >= v */
#define CV_OP_GT     'E'   /* dim > v */
#define CV_OP_IN     'F'   /* dim IN (...), all values in one xFilter call */
#define CV_OP_LIMIT  'L'   /* LIMIT v */
#define CV_OP_OFFSET 'O'   /* OFFSET v */
#define CV_NO_DIM    '*'   /* the column character of LIMIT and OFFSET */
#define CV_INDEX_DIM 'a'   /* 'a' + k: a bound on dimension k's index */
#define CV_LABEL_DIM '0'   /* '0' + k: a bound on dimension k's label */

/* The plan operator (CV_OP_EQ ... CV_OP_GT) of an SQLite constraint operator; 0 for those a
** plan cannot use. Shared by the bcolz table's planner (vtab_bcolz.c). */
int cvConstraintOp(int eOp);

/* idxNum flags. */
#define CV_PLAN_VALUE   0x01  /* the value column is read: decompress blocks */
#define CV_PLAN_ORDERED 0x02  /* walk the cells in C order (an ORDER BY is consumed) */
#define CV_PLAN_ISNULL  0x04  /* value IS NULL (blocks without NaN are skipped) */
#define CV_PLAN_NOTNULL 0x08  /* value IS NOT NULL (all-NaN blocks are skipped) */

/* Value constraints in idxStr: the operator (CV_OP_EQ ... CV_OP_GT) and this column
** character; IS NULL / IS NOT NULL are the idxNum flags above (vtab_valpred.c). */
#define CV_VALUE_COL     '~'
#define CV_OP_VALNULL    'N'  /* plan-time only: value IS NULL */
#define CV_OP_VALNOTNULL 'M'  /* plan-time only: value IS NOT NULL */

/* xBestIndex. */
int cvBestIndex(sqlite3_vtab *pVtab, sqlite3_index_info *pInfo);
/* Number of blocks the range [iLo, iHi] of one dimension touches (chunk nC, block nB). */
int64_t cvBlocksAlong(int64_t iLo, int64_t iHi, int64_t nC, int64_t nB);

/* ---- vtab_valpred.c ---------------------------------------------------------------------- */

/* Value constraints are passed to xFilter: the dtype has block statistics. */
int cvValUsable(const CvVtab *pTab);
/* The plan operator of an SQLite constraint operator on the value column, 0 if unusable. */
int cvValPlanOp(const CvVtab *pTab, int eOp);
/* Fraction of blocks constraint iCons (plan operator op) is expected to keep. */
double cvValPlanKeep(const CvVtab *pTab, sqlite3_index_info *pInfo, int iCons, int op);
/* xFilter: forget the previous scan's constraints; add "value OP pVal". */
void cvValReset(CvValPred *p);
void cvValAdd(CvValPred *p, int op, sqlite3_value *pVal);
int cvValActive(const CvValPred *p);
/* Let the iterator skip the blocks the constraints rule out. */
void cvValAttach(CvValPred *p, CvVtab *pTab, caterva_block_iter *pIter);

/* ---- vtab_cursor.c ----------------------------------------------------------------------- */

/* xOpen, xClose, xFilter, xNext, xEof, xColumn and xRowid. */
int cvCursorOpen(sqlite3_vtab *pVtab, sqlite3_vtab_cursor **ppCursor);
int cvCursorClose(sqlite3_vtab_cursor *pCursor);
int cvCursorFilter(sqlite3_vtab_cursor *pCursor, int idxNum, const char *idxStr, int argc,
                   sqlite3_value **argv);
int cvCursorNext(sqlite3_vtab_cursor *pCursor);
int cvCursorEof(sqlite3_vtab_cursor *pCursor);
int cvCursorColumn(sqlite3_vtab_cursor *pCursor, sqlite3_context *pCtx, int iCol);
int cvCursorRowid(sqlite3_vtab_cursor *pCursor, sqlite3_int64 *pRowid);

/* ---- vtab_create.c ------------------------------------------------------------------------ */

/* Whether any creation option (shape=, chunks=, ...) was given. */
int cvHasCreateOptions(const CvOptions *p);
/* The error for creation options on a path that exists (writes *pzErr). */
int cvCreateConflict(const CvOptions *p, char **pzErr);
/* Create the array p->zPath from the creation options, atomically (writes *pzErr). */
int cvCreateArray(CvConn *pConn, const CvOptions *p, char **pzErr);
/* The partitioning and compression options (chunks=, blocks=, codec=, clevel=, filters=)
** into *pP, whose ndim is set (other fields as caterva_array_params_init left them). Shared
** by the importers (io_*.c), so their option strings mean what CREATE VIRTUAL TABLE's do. */
int cvCreatePartition(const CvOptions *p, caterva_array_params *pP, char **pzErr);
/* A new array is written under the temporary name cvCreateTempName(zPath) (sqlite3_free it;
** NULL when out of memory), then cvCreatePublish stores the dimension names zDims (may be
** NULL), compacts it (always with bCompact, else only when its dead bytes are a quarter of
** it: a large import is not written twice) and renames it to zPath without replacing
** anything. On failure the caller frees the array and removes the temporary file with
** cvCreateRemoveTemp. */
char *cvCreateTempName(const char *zPath);
int cvCreatePublish(CvConn *pConn, caterva_array *pArr, const char *zPath, const char *zDims,
                    int bCompact, char **pzErr);
void cvCreateRemoveTemp(const char *zTmp);

/* ---- vtab_txn.c ---------------------------------------------------------------------- */

/* xBegin, xSync, xCommit, xRollback, xSavepoint, xRelease, xRollbackTo. */
/* A table over one array's transaction (vtab_txn.c); vtab_txn_hooks.c's cvTxn* pick these
** or those of a table over several arrays (vtab_vars_txn.c). */
int cvOneBegin(CvVtab *pTab);
int cvOneSync(CvVtab *pTab);
int cvOneCommit(CvVtab *pTab);
int cvOneRollback(CvVtab *pTab);
int cvOneSavepoint(CvVtab *pTab, int iSavepoint, int op); /* op: CV_SP_* */
int cvOnePrepareRead(CvVtab *pTab);
int cvTxnBegin(sqlite3_vtab *pVtab);
int cvTxnSync(sqlite3_vtab *pVtab);
int cvTxnCommit(sqlite3_vtab *pVtab);
int cvTxnRollback(sqlite3_vtab *pVtab);
int cvTxnSavepoint(sqlite3_vtab *pVtab, int iSavepoint);
int cvTxnRelease(sqlite3_vtab *pVtab, int iSavepoint);
int cvTxnRollbackTo(sqlite3_vtab *pVtab, int iSavepoint);
/* At the first cursor of a statement (xOpen): reload the array if another handle committed,
** take the shared lock with lock_reads=1 (see the notes in vtab_txn.c). */
int cvStatementStart(CvVtab *pTab);
/* A remote table whose version check cvStatementStart left to the statement's first read:
** cvRemoteVerify makes it now (one HEAD request, nothing when no check is pending) and opens
** the array again when it changed; cvRemoteReopen opens it again after a read failed with
** CATERVA_E_CHANGED (iLibRc). */
int cvRemoteVerify(CvVtab *pTab);
int cvRemoteReopen(CvVtab *pTab);
/* At the start of a scan (xFilter) inside a write transaction: flush our own writes so
** the scan sees them. */
int cvPrepareRead(CvVtab *pTab);
/* File size is part of the write path's correctness: a commit of a contiguous file writes its
** chunks, index and trailer after the committed end, and what they replace stays in the file
** as dead bytes (readers of the previous version may still be reading them). A commit that
** would leave dead bytes past max_dead percent of the live ones writes the packed file instead
** (caterva_schunk_set_commit_pack: a packed copy renamed over it, so readers keep their old
** one); a commit made while a cursor is open commits in place, and the next commit, or
** closing the table, packs the file (caterva_schunk_dead_over, caterva_schunk_compact): with
** the default of 1 the file is within 1% of its live chunks, one index and one
** trailer after every commit. The price is a rewrite of the live bytes about every
** 100/max_dead commits' worth of replaced bytes; max_dead=50 trades size for the old
** amortised rule (at most about 1.5x the packed size). docs/guarantees.md, "File size". */
#define CV_MAX_DEAD_DEFAULT 1
/* The functions that commit on their own (caterva_set_coords, caterva_build_stats) make an
** S3 transaction this many times when another writer keeps committing first (each time from
** the newest version), then give the BUSY error. */
#define CV_S3_TRIES 8
/* max_dead= of p (CV_MAX_DEAD_DEFAULT when absent) into *pOut; SQLITE_ERROR with *pzErr if it
** is not an integer from 0 to 100. */
int cvMaxDeadOption(const CvOptions *p, int *pOut, char **pzErr);
/* Compact sc after a commit when its dead bytes call for it; 1 when it was compacted (blocks
** cached from the old file must go), else 0. */
int cvCompactAfterCommit(caterva_ctx *pCtx, caterva_schunk *sc, int nMaxDead);
/* Commit pArr, one of pTab's arrays, alone: packed at once when the commit would leave dead
** bytes over max_dead and no cursor is open (the compaction xCommit would do). A library
** result code. */
int cvCommitArray(CvVtab *pTab, caterva_array *pArr);

/* xDisconnect: compact a file we wrote when its dead space is large (under the lock). */
void cvCompactOnClose(CvVtab *pTab);
/* Free the retired arrays (no cursor is open). */
void cvFreeRetired(CvVtab *pTab);
/* The fill item of pArr for DELETE and growth: its `_FillValue`, else NaN for floats and
** zero otherwise; given to the array (in memory) and kept in pTab->aFill. */
void cvFillInit(CvVtab *pTab, caterva_array *pArr);
/* The same for any item type: the fill item of pArr into aFill[16]. */
void cvFillInitItem(CvConn *pConn, const CvItemType *pItem, uint8_t *aFill, caterva_array *pArr);
/* Keep an array that cursors may still read until none is open (or free it now). */
int cvRetire(CvVtab *pTab, caterva_array *pArr);
/* Take zPath's lock (*ppLock, opened or created on first use): exclusive (bWrite; the new
** generation counter in *pGen) or shared, waiting up to the connection's busy timeout. */
int cvLockWaitOn(CvVtab *pTab, const char *zPath, caterva_lock **ppLock, int bWrite,
                 uint64_t *pGen);
/* Finish or undo an interrupted group commit whose journal lies next to zPath (an array
** this handle is about to write), holding the locks of the azHeld[0..nHeld) real paths
** already; the other arrays the journal names are locked for the time of it. */
int cvRecover(CvVtab *pTab, const char *zPath, char **azHeld, int nHeld);
int cvBusyTimeout(sqlite3 *db);
/* The real path of zPath (sqlite3_malloc'ed), or NULL when it cannot be resolved or out of
** memory. */
char *cvRealPath(const char *zPath);
/* The first array's part of xBegin, its lock held: reopened for writing if needed, leftovers
** collected once, its transaction begun. */
int cvBeginFirst(CvVtab *pTab);
/* Open the first array again (mode CATERVA_OPEN_READ or _WRITE) and install it. */
int cvReopen(CvVtab *pTab, int mode);
/* The first array's part of a statement's start (reopened if another handle committed). */
int cvStatementStartFirst(CvVtab *pTab);
/* The end of a transaction either way: flags reset, the first array's lock released. */
void cvTxnEnd(CvVtab *pTab);
void cvReleaseMaps(CvVtab *pTab);
void cvSleepMs(int ms);

/* ---- vtab_vars_txn.c: transactions of tables over several arrays ------------------------ */

int cvVarsBegin(CvVtab *pTab);

/* ---- vtab_vars_s3.c: the same for tables over several arrays in S3 ---------------------- */

int cvVarsS3Begin(CvVtab *pTab);
int cvVarsS3Sync(CvVtab *pTab);
int cvVarsS3StatementStart(CvVtab *pTab);

int cvVarsSync(CvVtab *pTab);
int cvVarsCommit(CvVtab *pTab);
int cvVarsRollback(CvVtab *pTab);
int cvVarsSavepoint(CvVtab *pTab, int iSavepoint, int eOp);
/* At a statement's start: every array as of one moment (no group commit half done). */
int cvVarsStatementStart(CvVtab *pTab);
/* Inside a write transaction, before a scan: the further arrays' own writes visible. */
int cvVarsPrepareRead(CvVtab *pTab);
#define CV_SP_SAVE 0
#define CV_SP_RELEASE 1
#define CV_SP_ROLLBACK 2

/* ---- vtab_write.c ------------------------------------------------------------------------- */

/* xUpdate. */
int cvUpdate(sqlite3_vtab *pVtab, int argc, sqlite3_value **argv, sqlite3_int64 *pRowid);

/* ---- vtab_bcolz.c: bcolz directories as tables of the module ----------------------- */

/* xConnect for a path caterva_bcolz_kind() recognises (options already parsed). */
int cvBzConnect(sqlite3 *db, CvConn *pConn, const char *const *argv, const CvOptions *pOpt,
                sqlite3_vtab **ppVtab, char **pzErr);
/* xDisconnect and xDestroy. */
void cvBzFree(CvVtab *pTab);
/* A directory a bcolz ctable was converted into (caterva_bcolz_converted): turn pOpt into
** the options of a several-variable table over its arrays in the ctable's column order
** (zPath the first, azMore the others, azValName the column names). */
int cvBzExpandConverted(CvConn *pConn, CvOptions *pOpt, char **pzErr);
/* The module slots of a bcolz table (vtab_main.c sends its calls here). */
int cvBzBestIndex(sqlite3_vtab *pVtab, sqlite3_index_info *pInfo);
int cvBzOpen(sqlite3_vtab *pVtab, sqlite3_vtab_cursor **ppCursor);
int cvBzClose(sqlite3_vtab_cursor *pCursor);
int cvBzFilter(sqlite3_vtab_cursor *pCursor, int idxNum, const char *idxStr, int argc,
               sqlite3_value **argv);
int cvBzNext(sqlite3_vtab_cursor *pCursor);
int cvBzColumn(sqlite3_vtab_cursor *pCursor, sqlite3_context *pCtx, int iCol);
int cvBzRowid(sqlite3_vtab_cursor *pCursor, sqlite3_int64 *pRowid);
int cvBzUpdate(sqlite3_vtab *pVtab, int argc, sqlite3_value **argv, sqlite3_int64 *pRowid);

#endif /* VTAB_INTERNAL_H */
