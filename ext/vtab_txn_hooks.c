/*
 * vtab_txn_hooks.c -- the table's transaction methods (xBegin, xSync, xCommit, xRollback,
 * xSavepoint, xRelease, xRollbackTo) and the statement hooks of its cursors: each picks the
 * table over one array's version (vtab_txn.c) or the several arrays' (vtab_vars_txn.c).
 */
#include "config.h"

#include "ext_internal.h"
SQLITE_EXTENSION_INIT3

#include "vtab_internal.h"

/* Writes to a table over several arrays (in S3: vtab_vars_s3.c; http(s) refuses as one
** array does). */
static int cvVarsWrite(const CvVtab *pTab) {
  return pTab->nVar > 0 && (!pTab->bRemote || sqlite3_strnicmp(pTab->zPath, "s3://", 5) == 0);
}

int cvTxnBegin(sqlite3_vtab *pVtab) {
  CvVtab *pTab = (CvVtab *)pVtab;
  if (!pTab->bInTxn && cvVarsWrite(pTab)) return cvVarsBegin(pTab);
  return cvOneBegin(pTab);
}

int cvTxnSync(sqlite3_vtab *pVtab) {
  CvVtab *pTab = (CvVtab *)pVtab;
  if (pTab->bInTxn && pTab->nVar > 0) return cvVarsSync(pTab);
  return cvOneSync(pTab);
}

int cvTxnCommit(sqlite3_vtab *pVtab) {
  CvVtab *pTab = (CvVtab *)pVtab;
  if (pTab->bInTxn && pTab->nVar > 0) return cvVarsCommit(pTab);
  return cvOneCommit(pTab);
}

int cvTxnRollback(sqlite3_vtab *pVtab) {
  CvVtab *pTab = (CvVtab *)pVtab;
  if (pTab->bInTxn && pTab->nVar > 0) return cvVarsRollback(pTab);
  return cvOneRollback(pTab);
}

static int cvTxnSp(sqlite3_vtab *pVtab, int iSavepoint, int op) {
  CvVtab *pTab = (CvVtab *)pVtab;
  if (pTab->bInTxn && pTab->nVar > 0) return cvVarsSavepoint(pTab, iSavepoint, op);
  return cvOneSavepoint(pTab, iSavepoint, op);
}

int cvTxnSavepoint(sqlite3_vtab *pVtab, int iSavepoint) {
  return cvTxnSp(pVtab, iSavepoint, CV_SP_SAVE);
}

int cvTxnRelease(sqlite3_vtab *pVtab, int iSavepoint) {
  return cvTxnSp(pVtab, iSavepoint, CV_SP_RELEASE);
}

int cvTxnRollbackTo(sqlite3_vtab *pVtab, int iSavepoint) {
  return cvTxnSp(pVtab, iSavepoint, CV_SP_ROLLBACK);
}

int cvStatementStart(CvVtab *pTab) {
  if (pTab->nVar > 0) return cvVarsStatementStart(pTab);
  return cvStatementStartFirst(pTab);
}

int cvPrepareRead(CvVtab *pTab) {
  int rc;
  if (!pTab->bInTxn) return SQLITE_OK;
  rc = cvOnePrepareRead(pTab);
  if (rc == SQLITE_OK && pTab->nVar > 0) rc = cvVarsPrepareRead(pTab);
  return rc;
}
