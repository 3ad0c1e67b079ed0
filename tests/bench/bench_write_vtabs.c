/*
 * bench_write_vtabs.c -- the virtual tables bench_write times against: bench_grid (the source
 * of every load), bench_sink (the floor of an INSERT into any virtual table) and bench_usink
 * (the floor of an UPDATE of any virtual table). What each one measures is said above it.
 */
#include "bench_write_vtabs.h"

#include <stdlib.h>
#include <string.h>

/* ---- the source: bench_grid(n0, n1, n2[, ord]) yields (time, lat, lon) in C order (lon
 * fastest), or with ord = 1 transposed (time fastest, then lat, then lon) -------------- */

typedef struct {
  sqlite3_vtab_cursor base;
  sqlite3_int64 c[3], n[3], row;
  int fast[3];   /* the dimensions from the fastest-varying to the slowest */
} GridCursor;

static int gridConnect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                       sqlite3_vtab **pp, char **err) {
  sqlite3_vtab *v;
  int rc;
  (void)aux, (void)argc, (void)argv, (void)err;
  rc = sqlite3_declare_vtab(db, "CREATE TABLE x(time INTEGER, lat INTEGER, lon INTEGER, "
                                "n0 HIDDEN, n1 HIDDEN, n2 HIDDEN, ord HIDDEN)");
  if (rc != SQLITE_OK) return rc;
  v = sqlite3_malloc(sizeof(*v));
  if (v == NULL) return SQLITE_NOMEM;
  memset(v, 0, sizeof(*v));
  *pp = v;
  return SQLITE_OK;
}

static int gridDisconnect(sqlite3_vtab *v) {
  sqlite3_free(v);
  return SQLITE_OK;
}

/* The three extents are required (equality constraints on n0, n1, n2); ord is optional. */
static int gridBestIndex(sqlite3_vtab *v, sqlite3_index_info *info) {
  int i, seen = 0;
  (void)v;
  for (i = 0; i < info->nConstraint; i++) {
    int col = info->aConstraint[i].iColumn;
    if (col >= 3 && col <= 6 && info->aConstraint[i].op == SQLITE_INDEX_CONSTRAINT_EQ) {
      if (!info->aConstraint[i].usable) return SQLITE_CONSTRAINT;
      info->aConstraintUsage[i].argvIndex = col - 2;
      info->aConstraintUsage[i].omit = 1;
      seen |= 1 << (col - 3);
    }
  }
  if ((seen & 7) != 7) return SQLITE_CONSTRAINT;
  info->idxNum = seen >> 3; /* ord given: argv[3] */
  info->estimatedCost = 1e6;
  info->estimatedRows = 1000000;
  return SQLITE_OK;
}

static int gridOpen(sqlite3_vtab *v, sqlite3_vtab_cursor **pp) {
  GridCursor *c = sqlite3_malloc(sizeof(*c));
  (void)v;
  if (c == NULL) return SQLITE_NOMEM;
  memset(c, 0, sizeof(*c));
  *pp = &c->base;
  return SQLITE_OK;
}

static int gridClose(sqlite3_vtab_cursor *c) {
  sqlite3_free(c);
  return SQLITE_OK;
}

static int gridFilter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc,
                      sqlite3_value **argv) {
  GridCursor *c = (GridCursor *)cur;
  int k;
  int ord = idxNum && argc > 3 ? (int)sqlite3_value_int64(argv[3]) : 0;
  (void)idxStr;
  for (k = 0; k < 3; k++) {
    c->n[k] = k < argc ? sqlite3_value_int64(argv[k]) : 0;
    c->c[k] = 0;
    c->fast[k] = ord == 1 ? k : 2 - k;
  }
  c->row = 0;
  if (c->n[0] <= 0 || c->n[1] <= 0 || c->n[2] <= 0) c->n[c->fast[2]] = 0;  /* empty */
  return SQLITE_OK;
}

static int gridNext(sqlite3_vtab_cursor *cur) {
  GridCursor *c = (GridCursor *)cur;
  int a = c->fast[0], b = c->fast[1];
  c->row++;
  if (++c->c[a] == c->n[a]) {
    c->c[a] = 0;
    if (++c->c[b] == c->n[b]) {
      c->c[b] = 0;
      c->c[c->fast[2]]++;
    }
  }
  return SQLITE_OK;
}

static int gridEof(sqlite3_vtab_cursor *cur) {
  GridCursor *c = (GridCursor *)cur;
  return c->c[c->fast[2]] >= c->n[c->fast[2]];
}

static int gridColumn(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  GridCursor *c = (GridCursor *)cur;
  sqlite3_result_int64(ctx, col < 3 ? c->c[col] : c->n[col - 3]);
  return SQLITE_OK;
}

static int gridRowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  *rowid = ((GridCursor *)cur)->row;
  return SQLITE_OK;
}

sqlite3_module bench_grid_module = {
    0, 0, gridConnect, gridBestIndex, gridDisconnect, 0, gridOpen, gridClose,
    gridFilter, gridNext, gridEof, gridColumn, gridRowid, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

/* ---- bench_sink: a virtual table whose xUpdate reads its arguments and keeps nothing ------
 * INSERT INTO sink SELECT ... costs what SQLite spends on the source and on handing each row
 * to a virtual table's xUpdate (OP_VUpdate): the rest of a caterva INSERT is the extension's. */

static int sinkConnect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                       sqlite3_vtab **pp, char **err) {
  sqlite3_vtab *v;
  int rc;
  (void)aux, (void)argc, (void)argv, (void)err;
  rc = sqlite3_declare_vtab(db, "CREATE TABLE x(time INTEGER, lat INTEGER, lon INTEGER, "
                                "value REAL)");
  if (rc != SQLITE_OK) return rc;
  v = sqlite3_malloc(sizeof(*v));
  if (v == NULL) return SQLITE_NOMEM;
  memset(v, 0, sizeof(*v));
  *pp = v;
  return SQLITE_OK;
}

static int sinkBestIndex(sqlite3_vtab *v, sqlite3_index_info *info) {
  (void)v;
  info->estimatedCost = 1.0;
  info->estimatedRows = 1;
  return SQLITE_OK;
}

static int sinkFilter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc,
                      sqlite3_value **argv) {
  (void)cur, (void)idxNum, (void)idxStr, (void)argc, (void)argv;
  return SQLITE_OK;
}

static int sinkEof(sqlite3_vtab_cursor *cur) {
  (void)cur;
  return 1;  /* always empty */
}

/* Reads its arguments (as any xUpdate must: their types and values) and keeps nothing. */
static volatile double sink_total;
static int sinkUpdate(sqlite3_vtab *v, int argc, sqlite3_value **argv, sqlite3_int64 *rowid) {
  double t = 0;
  int i;
  (void)v;
  for (i = 0; i < argc; i++) {
    switch (sqlite3_value_type(argv[i])) {
      case SQLITE_INTEGER: t += (double)sqlite3_value_int64(argv[i]); break;
      case SQLITE_FLOAT: t += sqlite3_value_double(argv[i]); break;
      default: break;
    }
  }
  sink_total += t;
  *rowid = 0;
  return SQLITE_OK;
}

sqlite3_module bench_sink_module = {
    0, sinkConnect, sinkConnect, sinkBestIndex, gridDisconnect, gridDisconnect, gridOpen,
    gridClose, sinkFilter, gridNext, sinkEof, gridColumn, gridRowid, sinkUpdate,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

/* ---- bench_usink(d0, d1, d2, n0, n1, n2 [, hidden]): the floor of an UPDATE of a virtual table
 * A grid of n0 x n1 x n2 cells with dimension columns named d0, d1, d2 and a value column
 * (with `hidden`, also the caterva table's hidden columns d0_index, d1_index, d2_index, and
 * the coordinates reported unchanged to an UPDATE, as the caterva table reports them); an
 * equality on a dimension fixes it (as the caterva table's pushdown does); values are computed,
 * not stored; xUpdate reads its arguments and keeps nothing. UPDATE ... WHERE d = K on it costs
 * what SQLite spends on any virtual table's UPDATE of those rows (the scan, its two passes
 * through an ephemeral table, the xUpdate calls): nothing is decoded or stored. */

typedef struct {
  sqlite3_vtab base;
  sqlite3_int64 n[3];
  int hidden; /* the caterva table's hidden <dim>_index columns too, reported unchanged */
} USink;

typedef struct {
  sqlite3_vtab_cursor base;
  sqlite3_int64 lo[3], hi[3], c[3];
  int eof;
} USinkCursor;

static int usinkConnect(sqlite3 *db, void *aux, int argc, const char *const *argv,
                        sqlite3_vtab **pp, char **err) {
  USink *v;
  char *sql;
  int rc, k;
  (void)aux;
  if (argc != 9 && !(argc == 10 && strcmp(argv[9], "hidden") == 0)) {
    *err = sqlite3_mprintf("bench_usink(d0, d1, d2, n0, n1, n2 [, hidden])");
    return SQLITE_ERROR;
  }
  if (argc == 10)
    sql = sqlite3_mprintf("CREATE TABLE x(%s INTEGER, %s INTEGER, %s INTEGER, value REAL, "
                          "%s_index INTEGER HIDDEN, %s_index INTEGER HIDDEN, "
                          "%s_index INTEGER HIDDEN)", argv[3], argv[4], argv[5], argv[3],
                          argv[4], argv[5]);
  else
    sql = sqlite3_mprintf("CREATE TABLE x(%s INTEGER, %s INTEGER, %s INTEGER, value REAL)",
                          argv[3], argv[4], argv[5]);
  rc = sql ? sqlite3_declare_vtab(db, sql) : SQLITE_NOMEM;
  sqlite3_free(sql);
  if (rc != SQLITE_OK) return rc;
  v = sqlite3_malloc(sizeof(*v));
  if (v == NULL) return SQLITE_NOMEM;
  memset(v, 0, sizeof(*v));
  for (k = 0; k < 3; k++) v->n[k] = atoll(argv[6 + k]);
  v->hidden = argc == 10;
  *pp = &v->base;
  return SQLITE_OK;
}

static int usinkBestIndex(sqlite3_vtab *v, sqlite3_index_info *info) {
  int i, n = 0, mask = 0;
  (void)v;
  for (i = 0; i < info->nConstraint; i++) {
    int col = info->aConstraint[i].iColumn;
    if (col >= 0 && col < 3 && info->aConstraint[i].usable &&
        info->aConstraint[i].op == SQLITE_INDEX_CONSTRAINT_EQ && !(mask & (1 << col))) {
      info->aConstraintUsage[i].argvIndex = ++n;
      info->aConstraintUsage[i].omit = 1;
      mask |= 1 << col;
    }
  }
  info->idxNum = mask;
  info->estimatedCost = 1e6 / (1 + n * 100);
  return SQLITE_OK;
}

static int usinkOpen(sqlite3_vtab *v, sqlite3_vtab_cursor **pp) {
  USinkCursor *c = sqlite3_malloc(sizeof(*c));
  (void)v;
  if (c == NULL) return SQLITE_NOMEM;
  memset(c, 0, sizeof(*c));
  *pp = &c->base;
  return SQLITE_OK;
}

static int usinkFilter(sqlite3_vtab_cursor *cur, int idxNum, const char *idxStr, int argc,
                       sqlite3_value **argv) {
  USinkCursor *c = (USinkCursor *)cur;
  USink *v = (USink *)cur->pVtab;
  int k, a = 0;
  (void)idxStr;
  c->eof = 0;
  for (k = 0; k < 3; k++) {
    c->lo[k] = 0, c->hi[k] = v->n[k];
    if ((idxNum & (1 << k)) && a < argc) {
      sqlite3_int64 x = sqlite3_value_int64(argv[a++]);
      c->lo[k] = x, c->hi[k] = x + 1;
      if (x < 0 || x >= v->n[k]) c->eof = 1;
    }
    c->c[k] = c->lo[k];
    if (c->lo[k] >= c->hi[k]) c->eof = 1;
  }
  return SQLITE_OK;
}

static int usinkNext(sqlite3_vtab_cursor *cur) {
  USinkCursor *c = (USinkCursor *)cur;
  int k;
  for (k = 2; k >= 0; k--) {
    if (++c->c[k] < c->hi[k]) return SQLITE_OK;
    c->c[k] = c->lo[k];
  }
  c->eof = 1;
  return SQLITE_OK;
}

static int usinkEof(sqlite3_vtab_cursor *cur) { return ((USinkCursor *)cur)->eof; }

static int usinkColumn(sqlite3_vtab_cursor *cur, sqlite3_context *ctx, int col) {
  USinkCursor *c = (USinkCursor *)cur;
  if (((USink *)cur->pVtab)->hidden) {
    /* as the caterva table answers an UPDATE: coordinates reported unchanged */
    if (col != 3 && sqlite3_vtab_nochange(ctx)) return SQLITE_OK;
    if (col > 3) col -= 4;
  }
  if (col < 3) sqlite3_result_int64(ctx, c->c[col]);
  else sqlite3_result_double(ctx, (double)(c->c[0] + c->c[1] + c->c[2]) * 0.25);
  return SQLITE_OK;
}

static int usinkRowid(sqlite3_vtab_cursor *cur, sqlite3_int64 *rowid) {
  USinkCursor *c = (USinkCursor *)cur;
  USink *v = (USink *)cur->pVtab;
  *rowid = (c->c[0] * v->n[1] + c->c[1]) * v->n[2] + c->c[2];
  return SQLITE_OK;
}

sqlite3_module bench_usink_module = {
    0, usinkConnect, usinkConnect, usinkBestIndex, gridDisconnect, gridDisconnect, usinkOpen,
    gridClose, usinkFilter, usinkNext, usinkEof, usinkColumn, usinkRowid, sinkUpdate,
    0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
};

