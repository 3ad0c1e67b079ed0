/*
 * ext_internal.h -- internal interface between the files of the caterva SQLite extension.
 *
 * One prefix per part, as SQLite's fts5 does:
 *   ext_main.c       entry point sqlite3_caterva_init; only registers the module and functions
 *   ext_conn.c       the per-connection state (CvConn) the module and the functions share
 *   ext_item.c       how array items become SQL values, and SQL values items
 *   vtab_*.c         the `caterva` virtual table (vtab_internal.h lists its files)
 *   fn_common.c      what the functions share: errors, JSON text, boxes and their BLOBs
 *   fn_arrcache.c    the arrays the SQL functions keep open between calls
 *   fn_array.c       caterva_info(), caterva_slice(), caterva_blocks_read(), caterva_version()
 *   fn_coords.c      caterva_set_coords(), caterva_nearest()
 *   fn_stats.c       caterva_build_stats(), caterva_stats_check()
 *   fn_reduce.c      caterva_reduce(), a table-valued function
 *   fn_reduce_group.c  its calendar groups ("time:month", "time:1 month", ...)
 *   fn_io.c          caterva_import() (dispatched by the source's format), caterva_export(),
 *                    caterva_png(); fn_io_npy.c, fn_io_netcdf.c, fn_io_bcolz.c,
 *                    fn_io_export.c and fn_io_png.c do each format, on fn_io_progress.c
 *                    (options, progress reports, interrupts)
 *
 * Each file calls only files listed after it in its group's order (no circles): ext_main ->
 * vtab_main, fn_* -> fn_common, fn_io_progress -> vtab_* parts -> vtab_error -> ext_item,
 * ext_conn.
 *
 * Files other than ext_main.c include this header and then SQLITE_EXTENSION_INIT3.
 * Nothing here parses bytes of the Blosc2 formats: that is the libraries' job (caterva.h,
 * caterva_io.h).
 */
#ifndef EXT_INTERNAL_H
#define EXT_INTERNAL_H

#include <sqlite3ext.h>

#include <stdint.h>

#include "caterva_io.h"

/*
** The per-connection state (ext_conn.c), shared by everything one database connection
** registers: the library context that decompresses (so caterva_ctx_blocks_decompressed()
** counts the blocks this connection decompressed) and a reference count, because the module
** and each SQL function hold it and SQLite calls their destructors one by one.
*/
typedef struct CvConn CvConn;
typedef struct CvTableRef CvTableRef;
typedef struct CvArrCache CvArrCache;
struct CvConn {
  caterva_ctx *pCtx;      /* Library context of this connection */
  sqlite3 *db;            /* The connection (sqlite3_interrupt() stops remote transfers) */
  int nRef;               /* Registrations still holding this object */
  CvTableRef *pTables;    /* The caterva tables open in this connection */
  CvArrCache *pArrCache;  /* Arrays the SQL functions keep open (fn_arrcache.c), or NULL */
};

/* A caterva table open in a connection, so that functions taking '<table or path>' find it. */
struct CvTableRef {
  char *zSchema;          /* "main", "temp" or an attached schema */
  char *zName;            /* The table's name */
  const char *zPath;      /* The table's array file (owned by the table) */
  void *pTab;             /* The table (a CvVtab of vtab_internal.h) */
  CvTableRef *pNext;
};

/* A new connection state holding one reference (the caller's); SQLITE_NOMEM on failure. Its
** library context stops remote transfers once sqlite3_interrupt(db) was called. */
int cvConnNew(sqlite3 *db, CvConn **ppConn);
/* 1 when sqlite3_interrupt() was called on p's connection (SQLite 3.40 has no
** sqlite3_is_interrupted(): costs the preparation of a statement, so call it now and then). */
int cvConnInterrupted(CvConn *p);
/* Open the array at zPath, a file, a directory or a URL (http://, https://, s3://; pRem: the
** options of remote access, NULL for the defaults), through the connection's context. */
int cvArrayOpen(CvConn *pConn, const char *zPath, int mode, const caterva_remote_opts *pRem,
                caterva_array **ppArr);
/* Record the open table pTab named zSchema.zName, whose file is zPath (which must outlive the
** record: the table owns it). SQLITE_NOMEM on failure. */
int cvConnAddTable(CvConn *p, const char *zSchema, const char *zName, const char *zPath,
                   void *pTab);
/* Forget table pTab (no-op when it was never recorded). */
void cvConnRemoveTable(CvConn *p, void *pTab);
/* ALTER TABLE RENAME of table pTab to zNew. SQLITE_NOMEM on failure (the old name stays). */
int cvConnRenameTable(CvConn *p, void *pTab, const char *zNew);
/* What a '<table or path>' argument names: when zArg is "name" or "schema.name" of a caterva
** table open in this connection (names compared as SQLite does, case-insensitively), that
** table's file, with *ppTab set to the table; otherwise zArg itself, a path, with *ppTab NULL.
** A table of the schema that is not connected yet (a new connection, a renamed table) is
** connected first by preparing a statement on db that names it. The result points into the
** table or into zArg. */
const char *cvConnResolve(CvConn *p, sqlite3 *db, const char *zArg, void **ppTab);
/* The array of table pTab (a CvVtab found by cvConnResolve). */
caterva_array *cvTableArray(void *pTab);
/* Take and drop a reference (the last release frees the context). */
CvConn *cvConnRef(CvConn *p);
void cvConnUnref(void *p);

/* fn_arrcache.c: arrays opened read-only by path for the SQL functions, kept open while their
** file provably has not changed. cvConnArrayGet: *ppArr borrowed until cvConnArrayPut (a
** negative library error, message in pConn->pCtx, and *ppArr = NULL on failure).
** cvConnArrayRetain: one more borrow of a cached pArr (1), or 0 when pArr is not cached.
** cvConnArrayCacheFree: close them all (the connection ends). */
int cvConnArrayGet(CvConn *pConn, const char *zPath, caterva_array **ppArr);
int cvConnArrayRetain(CvConn *pConn, caterva_array *pArr);
void cvConnArrayPut(CvConn *pConn, caterva_array *pArr);
void cvConnArrayCacheFree(CvConn *pConn);

/* Helpers of fn_array.c shared by the other SQL functions (fn_io.c, io_*.c, png.c).
** cvOpenArg: open the array named by pPath, a caterva table of this connection or a file
** (read-only: a table's committed state); NULL after setting an error on pCtx (zFunc names
** the function in the message). Give it back with cvConnArrayPut (it may stay open).
** cvResultLibError: report a failed library call rc ("caterva: zWhat: ...") on pCtx.
** cvBoxArgs: the box [aStart, aStop) given by two JSON arrays of integers, as caterva_slice
** takes them (a NULL pointer or SQL NULL: the whole extent; an integer: a position along
** the first dimension, the others whole); 0 after reporting an error. cvBoxArgsShape: the same for nDim
** extents aShape (bcolz carrays).
** cvResultBox: the function's result, a BLOB of nByte bytes (computed in a double, so an
** overflowing product is refused too) that xFill(pArg, aBuf, nByte) fills: refused beyond
** SQLITE_LIMIT_LENGTH, an empty BLOB for 0 bytes. Returns xFill's negative library error code
** (the BLOB freed, the caller reports it), SQLITE_OK otherwise (result or error set). */
caterva_array *cvOpenArg(sqlite3_context *pCtx, CvConn *pConn, sqlite3_value *pPath,
                         const char *zFunc);
void cvResultLibError(sqlite3_context *pCtx, CvConn *pConn, const char *zWhat, int rc);
/* Is index x one of the sorted a[0..n) (every index when a is NULL)? (fn_common.c) */
int cvInSorted(const int64_t *a, int n, int64_t x);
int cvBoxArgs(sqlite3_context *pCtx, const char *zFunc, caterva_array *pArr,
              sqlite3_value *pStart, sqlite3_value *pStop, int64_t *aStart, int64_t *aStop);
int cvBoxArgsShape(sqlite3_context *pCtx, const char *zFunc, int nDim, const int64_t *aShape,
                   sqlite3_value *pStart, sqlite3_value *pStop, int64_t *aStart, int64_t *aStop);
int cvResultBox(sqlite3_context *pCtx, double nByte, int (*xFill)(void *, uint8_t *, int64_t),
                void *pArg);

/* Register the module and the functions. Each takes its own references to pConn. */
int cvRegisterVtab(sqlite3 *db, CvConn *pConn);
int cvRegisterFunctions(sqlite3 *db, CvConn *pConn);
/* fn_coords.c: caterva_set_coords(), caterva_nearest(). */
int cvRegisterCoordFunctions(sqlite3 *db, CvConn *pConn);
/* Append ,"coords":{...} for caterva_info(). */
void cvInfoCoords(sqlite3_str *pStr, CvConn *pConn, caterva_array *pArr);
/* fn_array.c: JSON output. */
void cvJsonString(sqlite3_str *pStr, const char *z, size_t n);
void cvJsonDouble(sqlite3_str *pStr, double r);
/* fn_stats.c: caterva_build_stats(); fn_reduce.c: the caterva_reduce table-valued function. */
int cvRegisterStats(sqlite3 *db, CvConn *pConn);  /* also registers caterva_reduce */
int cvRegisterReduce(sqlite3 *db, CvConn *pConn);
/* fn_reduce_group.c: the calendar groups of caterva_reduce ("time:month", "time:7 days"). */
typedef struct CvRedGroup CvRedGroup;
struct CvRedGroup {
  int eField;           /* CATERVA_FIELD_* */
  int64_t nEvery;       /* periods: calendar units per period; 1 otherwise */
  int32_t *aGid;        /* group of each index of the box (iLo + j) */
  int32_t nGroup;
  int64_t *aKey;        /* each group's key (caterva_labels_field), increasing */
  int64_t *aFirst;      /* each group's first index in the box */
};
/* The group text z[0..n) (after "name:"): SQLITE_OK and *pGroup, or SQLITE_ERROR. */
int cvRedGroupParse(const char *z, int n, CvRedGroup *pGroup);
/* Number the groups of the indices [iLo, iHi] of a time coordinate (only those of the
** sorted list aList[0..nList) when aList is not NULL). SQLITE_OK, SQLITE_NOMEM, or
** SQLITE_ERROR with *pzErr (sqlite3_malloc'ed). */
int cvRedGroupBuild(caterva_ctx *pCtx, const caterva_labels *pLab, int64_t iLo, int64_t iHi,
                    const int64_t *aList, int nList, CvRedGroup *pGroup, char **pzErr);
/* Group iGroup's key as the SQL result (INTEGER, or TEXT for seasons and periods). */
void cvRedGroupResult(sqlite3_context *pCtx, const caterva_labels *pLab,
                      const CvRedGroup *pGroup, int64_t iGroup);
/* Free what cvRedGroupBuild allocated (and reset the struct). */
void cvRedGroupFree(CvRedGroup *pGroup);
/* fn_io.c: caterva_import() and caterva_export(). */
int cvRegisterIo(sqlite3 *db, CvConn *pConn);
/* fn_io_export.c: caterva_export(src, dst [, start, stop]), registered by cvRegisterIo. */
void cvExportFunc(sqlite3_context *pCtx, int argc, sqlite3_value **argv);
void cvCopyFunc(sqlite3_context *pCtx, int argc, sqlite3_value **argv); /* fn_copy.c */
/* fn_io_png.c: caterva_png(src [, start, stop [, options]]), registered by cvRegisterIo. */
void cvPngFunc(sqlite3_context *pCtx, int argc, sqlite3_value **argv);

/* The importers caterva_import() dispatches to (fn_io_npy.c, fn_io_netcdf.c, fn_io_bcolz.c): convert
** source zSrc into a new array zDst (an error if it exists); zVar (may be NULL) chooses what to
** import, zOpt (may be NULL) is the importer's option string. Each sets the SQL result (or an
** error) on pCtx. */
void cvImportNpy(sqlite3_context *pCtx, CvConn *pConn, const char *zSrc, const char *zDst,
                 const char *zVar, const char *zOpt);
void cvImportNetcdf(sqlite3_context *pCtx, CvConn *pConn, const char *zSrc, const char *zDst,
                    const char *zVar, const char *zOpt);
void cvImportBcolz(sqlite3_context *pCtx, CvConn *pConn, const char *zSrc, const char *zDst,
                   const char *zVar, const char *zOpt);
typedef void (*CvImporter)(sqlite3_context *pCtx, CvConn *pConn, const char *zSrc,
                           const char *zDst, const char *zVar, const char *zOpt);
/* fn_io_s3.c: import with xImport into a local temporary directory, then upload the array to
** the new prefix zDst (s3://; http(s) refused); bSeveral: the import would make several arrays
** (refused, saying what to do instead). Sets the SQL result on pCtx. */
void cvImportToS3(sqlite3_context *pCtx, CvConn *pConn, CvImporter xImport, int bSeveral,
                  const char *zSrc, const char *zDst, const char *zVar, const char *zOpt);

/* fn_io_bcolz.c: bcolz directories in caterva_info() and caterva_slice(). cvBzIsPath: zPath is
** a bcolz carray or ctable directory, or a converted ctable; the two others set the
** function's result. */
int cvBzIsPath(const char *zPath);
void cvBzInfo(sqlite3_context *pCtx, CvConn *pConn, const char *zPath);
void cvBzSlice(sqlite3_context *pCtx, CvConn *pConn, const char *zPath, int argc,
               sqlite3_value **argv);

/*
** How the items of an array become SQL values (see "The SQL surface" in design.md).
*/
#define CV_ITEM_BLOB   0   /* raw item bytes */
#define CV_ITEM_INT    1   /* signed integer of 1, 2, 4 or 8 bytes */
#define CV_ITEM_UINT   2   /* unsigned integer; above INT64_MAX becomes REAL */
#define CV_ITEM_BOOL   3   /* 0 or 1 */
#define CV_ITEM_FLOAT  4   /* float16/32/64; NaN becomes NULL */
#define CV_ITEM_TIME   5   /* datetime64/timedelta64 as int64; NaT becomes NULL */
#define CV_ITEM_UCS4   6   /* NumPy <U<n>: UCS-4 code points, as UTF-8 TEXT */

typedef struct CvItemType CvItemType;
struct CvItemType {
  int eKind;        /* CV_ITEM_* */
  int szItem;       /* Bytes per item */
  int bBigEndian;   /* Items are stored most significant byte first */
  int bSwap;        /* Their byte order is not the host's */
  char zName[24];   /* The dtype's text, for messages ("<f4"; "bytes" without one) */
};

/* Decide how items of dtype zDtype (may be NULL) and szItem bytes are exposed. On a mismatch
** between the dtype and szItem, returns non-zero and writes an sqlite3_mprintf'ed message. */
int cvItemTypeInit(CvItemType *pType, const char *zDtype, int szItem, char **pzErr);
/* The SQL type name of the value column ("INTEGER", "REAL", "BLOB", "TEXT"). */
const char *cvItemTypeDecl(const CvItemType *pType);
/* Convert an SQL value to an item (szItem bytes at aOut) exactly, or return non-zero and
** write an sqlite3_mprintf'ed message: a value the dtype cannot hold is an error, never a
** silent conversion (vtab_write.c has the table of what each dtype accepts). */
int cvValueToItem(const CvItemType *pType, sqlite3_value *pVal, uint8_t *aOut, char **pzErr);
/* The exact int64 value of an INTEGER, or of a REAL with an integral value in range: 0, else
** non-zero (ext_item.c). */
int cvExactInt(sqlite3_value *pVal, int64_t *piOut);
/* With bNumeric, text that SQLite's numeric affinity converts becomes that number (in
** place); returns the value's type (ext_item.c). */
int cvNumericText(sqlite3_value *pVal, int bNumeric);
/* Store v as an integer, bool or datetime item; non-zero when it does not fit. */
int cvPutChecked(const CvItemType *pType, int64_t v, uint8_t *aOut);
/* The number d as an item; non-zero when the dtype cannot hold it (NaN: floats only). */
int cvNumberToItem(const CvItemType *pType, double d, uint8_t *aOut);
/* IEEE 754 binary16 to double. */
double cvHalfToDouble(uint16_t h);
/* Return the item at p (szItem bytes) as the result of a function or column. */
void cvItemResult(sqlite3_context *pCtx, const CvItemType *pType, const uint8_t *p);

/*
** The block cache (vtab_cache.c). Entries hold one decompressed block each, keyed by
** (chunk number, block number in the chunk). A cursor pins the entry it reads from; pinned
** entries are never evicted, so a second cursor on the same table (a self-join, a
** correlated subquery) cannot pull data from under the first one.
*/
typedef struct CvCache CvCache;
typedef struct CvCacheEntry CvCacheEntry;

struct CvCacheEntry {
  int64_t iChunk;               /* Key: chunk number */
  int32_t iBlock;               /* Key: block number inside the chunk */
  int nPin;                     /* Cursors currently reading this entry */
  int bValid;                   /* aData holds the block (else being filled or unused) */
  CvCacheEntry *pHashNext;      /* Next entry in the same hash bucket */
  CvCacheEntry *pLruPrev;       /* Toward the most recently used end */
  CvCacheEntry *pLruNext;       /* Toward the least recently used end */
  uint8_t *aData;               /* The decompressed block (CvCache.szBlock bytes) */
};

struct CvCache {
  int64_t szBlock;              /* Bytes per block */
  int nMax;                     /* Most entries held (0: the cache is disabled) */
  int nEntry;                   /* Entries allocated so far */
  int nValid;                   /* Of them, valid (hashed) ones */
  int nHash;                    /* Buckets in apHash (a power of two) */
  CvCacheEntry **apHash;        /* Hash table of valid entries */
  CvCacheEntry *pLruFirst;      /* Most recently used */
  CvCacheEntry *pLruLast;       /* Least recently used */
  int64_t nHit, nMiss;          /* Statistics */
};

/* Set up a cache for blocks of szBlock bytes using at most nByte bytes. Never fails: a cache
** too small for one block is simply disabled. */
void cvCacheInit(CvCache *p, int64_t szBlock, int64_t nByte);
void cvCacheClear(CvCache *p);
/* Look up a block; on a hit the entry comes back pinned. */
CvCacheEntry *cvCacheLookup(CvCache *p, int64_t iChunk, int32_t iBlock);
/* Claim an entry for a block that missed: a new one or the least recently used unpinned one.
** Comes back pinned and not yet valid; the caller fills aData and calls cvCacheCommit, or
** cvCacheUnpin to give it up. NULL when every entry is pinned or out of memory. */
CvCacheEntry *cvCacheClaim(CvCache *p, int64_t iChunk, int32_t iBlock);
void cvCacheCommit(CvCache *p, CvCacheEntry *pEntry);
void cvCacheUnpin(CvCache *p, CvCacheEntry *pEntry);
/* Forget every block (the array was written): pinned entries stay with their cursors but are
** no longer found, and are recycled once unpinned. */
void cvCacheInvalidate(CvCache *p);
/* Blocks of another size from now on (the array was replaced by one with other blocks): the
** cache starts anew. SQLITE_BUSY, and nothing changes, while a cursor reads an entry. */
int cvCacheResize(CvCache *p, int64_t szBlock, int64_t nByte);

#endif /* EXT_INTERNAL_H */
