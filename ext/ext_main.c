/*
 * ext_main.c -- entry point of the caterva SQLite extension (caterva.so).
 *
 * Loading: `.load ./caterva` in the sqlite3 shell, or sqlite3_load_extension(db, path, 0, &err).
 * SQLite derives the entry point name sqlite3_caterva_init from the file name.
 *
 * This file only registers: it creates the connection's state (ext_conn.c) and hands it to the
 * virtual table module (vtab_main.c) and the SQL functions (fn_array.c), which take their own
 * references. It is the one file with SQLITE_EXTENSION_INIT1.
 */
#include "config.h"

#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1

#include "ext_internal.h"

int sqlite3_caterva_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi);

#ifdef _WIN32
__declspec(dllexport)
#endif
int sqlite3_caterva_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi) {
  CvConn *pConn = 0;
  int rc;
  SQLITE_EXTENSION_INIT2(pApi);
  rc = cvConnNew(db, &pConn);
  if (rc == SQLITE_OK) rc = cvRegisterVtab(db, pConn);
  if (rc == SQLITE_OK) rc = cvRegisterFunctions(db, pConn);
  if (rc == SQLITE_OK) rc = cvRegisterIo(db, pConn);
  if (rc == SQLITE_OK) rc = cvRegisterCoordFunctions(db, pConn);
  if (rc == SQLITE_OK) rc = cvRegisterStats(db, pConn);
  if (rc != SQLITE_OK && pzErrMsg)
    *pzErrMsg = sqlite3_mprintf("caterva: cannot register the extension: %s", sqlite3_errstr(rc));
  cvConnUnref(pConn);  /* the registrations hold their own references */
  return rc;
}
