/*
 * interop_sql.c -- the cases of the interop writer test that are written THROUGH SQL (w42-w45):
 * the statements each runs in a new connection with the built extension loaded (see SQLCASES
 * in interop_cases.c), the content they must leave, computed here in C from the same formulas,
 * and the `_FillValue` attribute and `.b2lock` generation counter they must leave with it.
 */
#include "interop.h"

#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The column names of a SQL case: dims= or the extension's default d0, d1, ... */
void sql_colnames(const icase *c, const sqlcase *s, char names[MAXD][32]) {
  const char *p = s->dims;
  for (int k = 0; k < c->ndim; k++) {
    size_t n = 0;
    if (*p) {
      while (p[n] && p[n] != ',') n++;
      snprintf(names[k], 32, "%.*s", (int)n, p);
      p += n + (p[n] == ',');
    } else {
      snprintf(names[k], 32, "d%d", k);
    }
  }
}

/* F(c) as SQL over the column names (see SQLCASES). */
static void sql_formula(const icase *c, const sqlcase *s, char names[MAXD][32], char *out,
                        size_t cap) {
  size_t n = (size_t)snprintf(out, cap, "((");
  for (int k = 0; k < c->ndim && n < cap; k++)
    n += (size_t)snprintf(out + n, cap - n, "%s * %lld + ", names[k], (long long)s->mul[k]);
  if (n < cap)
    snprintf(out + n, cap - n, "%lld) %% %lld) * %.17g + %.17g", (long long)s->add,
             (long long)s->mod, s->scale, s->off);
}

/* INSERT of every cell with first coordinate lo..hi (the other dimensions whole), v = F. */
static void sql_insert_rows(const icase *c, const sqlcase *s, char names[MAXD][32], int64_t lo,
                            int64_t hi, char *out, size_t cap) {
  char f[512], cols[512] = "", coords[1024] = "";
  int64_t stride = 1, ncells;
  size_t nc = 0, nk = 0;
  for (int k = 1; k < c->ndim; k++) stride *= c->shape[k];
  ncells = (hi - lo + 1) * stride;
  sql_formula(c, s, names, f, sizeof f);
  for (int k = 0; k < c->ndim; k++) {
    int64_t inner = 1;
    for (int j = k + 1; j < c->ndim; j++) inner *= c->shape[j];
    nc += (size_t)snprintf(cols + nc, sizeof cols - nc, "%s, ", names[k]);
    if (k == 0)
      nk += (size_t)snprintf(coords + nk, sizeof coords - nk, "%lld + i / %lld AS %s",
                             (long long)lo, (long long)inner, names[k]);
    else
      nk += (size_t)snprintf(coords + nk, sizeof coords - nk, ", i / %lld %% %lld AS %s",
                             (long long)inner, (long long)c->shape[k], names[k]);
  }
  snprintf(out, cap,
           "INSERT INTO t(%svalue) SELECT %s%s FROM (WITH RECURSIVE r(i) AS (SELECT 0 UNION ALL "
           "SELECT i + 1 FROM r WHERE i < %lld) SELECT %s FROM r)",
           cols, cols, f, (long long)(ncells - 1), coords);
}

int sql_statements(const icase *c, const sqlcase *s, const char *path, sql_stmt *st, int *ntxn) {
  char names[MAXD][32], shape[256] = "", chunks[256] = "", blocks[256] = "", box[1024] = "";
  size_t a = 0, b = 0, d = 0, x = 0;
  int n = 0;
  const dtype_desc *dt = find_dtype(c->dtype);
  sql_colnames(c, s, names);
  for (int k = 0; k < c->ndim; k++) {
    a += (size_t)snprintf(shape + a, sizeof shape - a, "%s%lld", k ? "," : "",
                          (long long)(k ? c->shape[k] : s->shape0));
    b += (size_t)snprintf(chunks + b, sizeof chunks - b, "%s%d", k ? "," : "", c->chunks[k]);
    d += (size_t)snprintf(blocks + d, sizeof blocks - d, "%s%d", k ? "," : "", c->blocks[k]);
    x += (size_t)snprintf(box + x, sizeof box - x, "%s%s BETWEEN %lld AND %lld", k ? " AND " : "",
                          names[k], (long long)s->del_lo[k], (long long)s->del_hi[k]);
  }
  snprintf(st[n++].text, sizeof st->text,
           "CREATE VIRTUAL TABLE t USING caterva('%s', shape='%s', dtype='%s', chunks='%s', "
           "blocks='%s', %s%s%s%s%s%s)",
           path, shape, dt->name, chunks, blocks, s->opts, *s->dims ? ", dims='" : "", s->dims,
           *s->dims ? "'" : "", *s->fill ? ", fill=" : "", s->fill);
  sql_insert_rows(c, s, names, 0, s->shape0 - 1, st[n++].text, sizeof st->text);
  if (s->grow_first)
    sql_insert_rows(c, s, names, s->grow_lo, s->grow_hi, st[n++].text, sizeof st->text);
  if (s->txn) snprintf(st[n++].text, sizeof st->text, "BEGIN");
  snprintf(st[n++].text, sizeof st->text,
           "UPDATE t SET value = value * %.17g + %.17g WHERE %s BETWEEN %lld AND %lld", s->umul,
           s->uadd, names[0], (long long)s->upd_lo, (long long)s->upd_hi);
  if (s->txn) {
    /* a savepoint whose changes (all cells, and growth past the final extent) vanish */
    snprintf(st[n++].text, sizeof st->text, "SAVEPOINT s");
    snprintf(st[n++].text, sizeof st->text, "UPDATE t SET value = value + 1");
    sql_insert_rows(c, s, names, s->grow_hi + 5, s->grow_hi + 5, st[n++].text, sizeof st->text);
    snprintf(st[n++].text, sizeof st->text, "ROLLBACK TO s");
    snprintf(st[n++].text, sizeof st->text, "RELEASE s");
  }
  snprintf(st[n].text, sizeof st->text,
           "UPDATE t SET value = 'not a number' WHERE %s = 0", names[0]);
  st[n++].must_fail = 1;
  snprintf(st[n++].text, sizeof st->text, "DELETE FROM t WHERE %s", box);
  if (!s->grow_first)
    sql_insert_rows(c, s, names, s->grow_lo, s->grow_hi, st[n++].text, sizeof st->text);
  if (s->txn) snprintf(st[n++].text, sizeof st->text, "COMMIT");
  /* the first INSERT (and the growth with grow_first), then one transaction or every
   * statement after it (the failing one too: it took the lock before it failed) */
  *ntxn = (s->grow_first ? 2 : 1) + (s->txn ? 1 : 4 - s->grow_first);
  return n;
}

/* The SQL value of F at linear coordinates cc, as SQLite computes it. */
static double sql_f(const icase *c, const sqlcase *s, const int64_t *cc, int is_float) {
  int64_t x = s->add;
  for (int k = 0; k < c->ndim; k++) x += s->mul[k] * cc[k];
  x %= s->mod;
  if (is_float) return (double)x * s->scale + s->off;
  return (double)(x * (int64_t)s->scale + (int64_t)s->off);
}

/* Round v to what the column stores (float32 rounds; integers are exact here). */
static double sql_store(const dtype_desc *dt, double v) {
  return dt->kind == K_FLOAT && dt->itemsize == 4 ? (double)(float)v : v;
}

uint8_t *sql_expected(const icase *c, const dtype_desc *dt, const geom *g, const sqlcase *s) {
  int is_float = dt->kind == K_FLOAT;
  double fill = *s->fill ? strtod(s->fill, NULL) : is_float ? NAN : 0.0;
  uint8_t *raw = malloc((size_t)(g->nitems * dt->itemsize));
  int64_t cc[MAXD] = {0}, zero[MAXD] = {0};
  if (raw == NULL) return NULL;
  for (int64_t i = 0; i < g->nitems; i++) {
    int in_box = 1;
    double x = fill;
    for (int k = 0; k < c->ndim; k++) in_box &= cc[k] >= s->del_lo[k] && cc[k] <= s->del_hi[k];
    if (cc[0] < s->shape0) {
      x = sql_store(dt, sql_f(c, s, cc, is_float));
      if (cc[0] >= s->upd_lo && cc[0] <= s->upd_hi) {
        if (is_float) x = sql_store(dt, x * s->umul + s->uadd);
        else x = (double)((int64_t)x * (int64_t)s->umul + (int64_t)s->uadd);
      }
      if (in_box) x = fill;
    } else if (cc[0] >= s->grow_lo && cc[0] <= s->grow_hi) {
      x = sql_store(dt, sql_f(c, s, cc, is_float));
    }
    if (is_float) put_float(raw + i * dt->itemsize, x, dt->itemsize);
    else put_le(raw + i * dt->itemsize, (uint64_t)(int64_t)x, dt->itemsize);
    next_in_box(cc, zero, c->shape, c->ndim);
  }
  return raw;
}

void pack_sql_fill(const dtype_desc *dt, const sqlcase *s, msgpack_sbuffer *sb) {
  msgpack_packer pk;
  mp_start(sb, &pk);
  if (dt->kind == K_FLOAT) msgpack_pack_double(&pk, *s->fill ? strtod(s->fill, NULL) : NAN);
  else msgpack_pack_int64(&pk, *s->fill ? strtoll(s->fill, NULL, 10) : 0);
}

/* Statements marked must_fail must fail with the dtype message. The connection is closed
 * before it returns. */
int write_sql_case(const icase *c, const sqlcase *s, const char *path, int *ntxn, char *err,
                   size_t errcap) {
  sql_stmt *st = calloc(MAX_SQL_STMTS, sizeof *st);
  sqlite3 *db = NULL;
  char *msg = NULL;
  int n, rc = -1;
  if (st == NULL) return -1;
  n = sql_statements(c, s, path, st, ntxn);
  db = open_ext_db(err, errcap);
  if (db == NULL) goto leave;
  for (int i = 0; i < n; i++) {
    int r = sqlite3_exec(db, st[i].text, NULL, NULL, &msg);
    if (st[i].must_fail ? r == SQLITE_OK || msg == NULL || !strstr(msg, "does not fit")
                        : r != SQLITE_OK) {
      snprintf(err, errcap, "statement %d %s: %.300s: %s", i + 1,
               st[i].must_fail ? "did not fail as it must" : "failed", st[i].text,
               msg ? msg : "(no message)");
      goto leave;
    }
    sqlite3_free(msg);
    msg = NULL;
  }
  rc = 0;
leave:
  sqlite3_free(msg);
  if (db != NULL && sqlite3_close(db) != SQLITE_OK && rc == 0) {
    snprintf(err, errcap, "sqlite3_close: %s", sqlite3_errmsg(db));
    rc = -1;
  }
  free(st);
  return rc;
}

int64_t sidecar_counter(const icase *c, const char *path) {
  char lp[4200];
  size_t len = 0;
  uint8_t *b;
  int64_t v = -1;
  snprintf(lp, sizeof lp, c->sparse ? "%s/.b2lock" : "%s.b2lock", path);
  b = slurp(lp, &len);
  if (b != NULL && len >= 16) v = (int64_t)get_le(b + 8, 8);
  free(b);
  return v;
}

void describe_sql(const icase *c, const sqlcase *s, char *out, size_t cap) {
  char names[MAXD][32], f[512], box[512] = "";
  size_t n = 0;
  sql_colnames(c, s, names);
  sql_formula(c, s, names, f, sizeof f);
  for (int k = 0; k < c->ndim; k++)
    n += (size_t)snprintf(box + n, sizeof box - n, "%s%s %lld..%lld", k ? ", " : "", names[k],
                          (long long)s->del_lo[k], (long long)s->del_hi[k]);
  snprintf(out, cap,
           "written through SQL (statements in \"sql\"): every cell with %s < %lld set to v = %s "
           "(c_k = the coordinates; SQLite int64 arithmetic, double once a REAL enters; float32 "
           "rounds the double); then rows %s %lld..%lld: v = v * %g + %g; then the box %s reset "
           "to the fill value %s; then rows %s %lld..%lld (growth) set to v = F as above; every "
           "other cell added by growth holds the fill value",
           names[0], (long long)s->shape0, f, names[0], (long long)s->upd_lo,
           (long long)s->upd_hi, s->umul, s->uadd, box,
           *s->fill                                ? s->fill
           : find_dtype(c->dtype)->kind == K_FLOAT ? "NaN (the default)"
                                                   : "0 (the default)",
           names[0], (long long)s->grow_lo, (long long)s->grow_hi);
  if (s->grow_first) {
    size_t len = strlen(out);
    snprintf(out + len, cap - len, " (the growth statement runs right after the first INSERT)");
  }
}
