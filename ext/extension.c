/*
 * extension.c -- entry point of the caterva SQLite extension (caterva.so).
 *
 * Loading: `.load ./caterva` in the sqlite3 shell, or sqlite3_load_extension(db, path, 0, &err).
 * SQLite derives the entry point name sqlite3_caterva_init from the file name.
 */
#include "config.h"

#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1

#include "caterva.h"

#include <string.h>

/* caterva_version() -> the library version string. */
static void catervaVersionFunc(sqlite3_context *pCtx, int argc, sqlite3_value **argv) {
  (void)argc;
  (void)argv;
  sqlite3_result_text(pCtx, PACKAGE_VERSION, -1, SQLITE_STATIC);
}

int sqlite3_caterva_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi);

#ifdef _WIN32
__declspec(dllexport)
#endif
int sqlite3_caterva_init(sqlite3 *db, char **pzErrMsg, const sqlite3_api_routines *pApi) {
  int rc;
  SQLITE_EXTENSION_INIT2(pApi);
  (void)pzErrMsg;
  rc = sqlite3_create_function(db, "caterva_version", 0,
                               SQLITE_UTF8 | SQLITE_DETERMINISTIC | SQLITE_INNOCUOUS, NULL,
                               catervaVersionFunc, NULL, NULL);
  return rc;
}
