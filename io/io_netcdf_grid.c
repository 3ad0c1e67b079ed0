/*
 * io_netcdf_grid.c -- caterva_netcdf_import_grid: the variables of a NetCDF file that share
 * one grid, into a directory of arrays, one per variable, each through caterva_netcdf_import
 * (caterva_netcdf.h says which variables and what each array holds).
 *
 * The steps:
 *   describe      every variable of the file: name, numeric or not, dimensions, coordinate
 *   select_all    "*": the grid, then the variables on it; the others with their reason
 *   select_list   "a,b": those variables, checked to be numeric and on one grid
 *   write_dir     each variable into <tmp>/<name>.b2nd, then <tmp> renamed to the directory
 */
#include "io_internal.h"

#include <stdio.h>
#include <stdlib.h>

void caterva_netcdf_grid_free(caterva_netcdf_grid *g) {
  if (g == NULL) return;
  for (int i = 0; i < g->nitems; i++) {
    free(g->items[i].name);
    free(g->items[i].skipped);
  }
  free(g->items);
  free(g);
}

#ifdef HAVE_NETCDF

#include <errno.h>
#include <ftw.h>
#include <netcdf.h>
#include <sys/stat.h>
#include <unistd.h>

/* Longest variable name used as a file name: <name>.b2nd and the temporary suffix the import
 * adds must fit in a directory entry (255 bytes). */
#define NAME_FILE_MAX 200

/* Room for "(a, b, ...)" of CATERVA_MAX_DIM dimension names. */
#define DIMS_TEXT_MAX ((NC_MAX_NAME + 2) * CATERVA_MAX_DIM + 8)

/* A variable of the file, as the selection sees it. */
typedef struct grid_var {
  char name[NC_MAX_NAME + 1];
  int numeric;                     /* a type caterva_netcdf_import takes */
  int ndim;                        /* -1: more than CATERVA_MAX_DIM */
  int dimids[CATERVA_MAX_DIM];
  int coord;                       /* 1-D and named like its dimension (CF 5) */
  int has_name_att;                /* it has an attribute "name" of its own */
  int64_t nitems;                  /* items (-1: overflow) */
  int selected;
} grid_var;

/* The file's variables, and what the selection made of them. */
typedef struct grid_file {
  const char *path;
  int ncid;
  int nvars;
  grid_var *vars;
  int grid;                        /* the variable whose dimensions are the grid's */
} grid_file;

/* Record libnetcdf's error st and leave. */
#define NC_FAIL(label, f, st)                                                          \
  do {                                                                                 \
    rc = nc_err(ctx, (f)->path, (st));                                                 \
    goto label;                                                                        \
  } while (0)

static int nc_err(caterva_ctx *ctx, const char *path, int st) {
  int code = st == ENOENT || st == ENOTDIR ? CATERVA_E_NOTFOUND
             : st == NC_ENOMEM || st == ENOMEM ? CATERVA_E_NOMEM
             : st > 0 ? CATERVA_E_IO : CATERVA_E_CORRUPT;
  return cat_error(ctx, code, "NetCDF file %s: %s", path, nc_strerror(st));
}

static int is_numeric(nc_type t) {
  return t == NC_BYTE || t == NC_UBYTE || t == NC_SHORT || t == NC_USHORT || t == NC_INT ||
         t == NC_UINT || t == NC_INT64 || t == NC_UINT64 || t == NC_FLOAT || t == NC_DOUBLE;
}

/* A name that can be a file name in the directory. */
static int name_usable(const char *name) {
  return name[0] != 0 && name[0] != '.' && strchr(name, '/') == NULL &&
         strlen(name) <= NAME_FILE_MAX;
}

static int describe_var(caterva_ctx *ctx, grid_file *f, int varid, grid_var *v) {
  int rc = CATERVA_OK, st, nd = 0;
  nc_type t;
  char dname[NC_MAX_NAME + 1];
  st = nc_inq_varname(f->ncid, varid, v->name);
  if (st == NC_NOERR) st = nc_inq_vartype(f->ncid, varid, &t);
  if (st == NC_NOERR) st = nc_inq_varndims(f->ncid, varid, &nd);
  if (st != NC_NOERR) NC_FAIL(leave, f, st);
  v->numeric = is_numeric(t);
  v->has_name_att = nc_inq_att(f->ncid, varid, "name", NULL, NULL) == NC_NOERR;
  v->ndim = nd <= CATERVA_MAX_DIM ? nd : -1;
  v->nitems = 1;
  if (v->ndim < 0) goto leave;
  st = nc_inq_vardimid(f->ncid, varid, v->dimids);
  if (st != NC_NOERR) NC_FAIL(leave, f, st);
  for (int k = 0; k < nd; k++) {
    size_t len = 0;
    st = nc_inq_dimlen(f->ncid, v->dimids[k], &len);
    if (st != NC_NOERR) NC_FAIL(leave, f, st);
    if (v->nitems >= 0 && (len > (size_t)INT64_MAX || !cat_mul64(v->nitems, (int64_t)len,
                                                                  &v->nitems)))
      v->nitems = -1;
  }
  v->coord = nd == 1 && nc_inq_dimname(f->ncid, v->dimids[0], dname) == NC_NOERR &&
             strcmp(dname, v->name) == 0;
leave:
  return rc;
}

static int describe(caterva_ctx *ctx, grid_file *f) {
  int rc = CATERVA_OK, st = nc_open(f->path, NC_NOWRITE, &f->ncid);
  if (st != NC_NOERR) {
    f->ncid = -1;
    NC_FAIL(leave, f, st);
  }
  st = nc_inq_nvars(f->ncid, &f->nvars);
  if (st != NC_NOERR) NC_FAIL(leave, f, st);
  f->vars = calloc(f->nvars > 0 ? (size_t)f->nvars : 1, sizeof *f->vars);
  CAT_CHECK(leave, f->vars != NULL, CATERVA_E_NOMEM, "out of memory");
  for (int i = 0; i < f->nvars; i++) CAT_TRY(leave, describe_var(ctx, f, i, &f->vars[i]));
leave:
  return rc;
}

static int same_dims(const grid_var *a, const grid_var *b) {
  return a->ndim == b->ndim &&
         memcmp(a->dimids, b->dimids, (size_t)(a->ndim > 0 ? a->ndim : 0) * sizeof(int)) == 0;
}

/* "(time, lat, lon)" */
static void dims_text(const grid_file *f, const grid_var *v, char *buf, size_t cap) {
  size_t used = (size_t)snprintf(buf, cap, "(");
  for (int k = 0; k < v->ndim && used < cap; k++) {
    char name[NC_MAX_NAME + 1];
    if (nc_inq_dimname(f->ncid, v->dimids[k], name) != NC_NOERR) strcpy(name, "?");
    used += (size_t)snprintf(buf + used, cap - used, "%s%s", k ? ", " : "", name);
  }
  if (used < cap) snprintf(buf + used, cap - used, ")");
}

/* Can v be one of the arrays at all? */
static int candidate(const grid_var *v) {
  return v->numeric && !v->coord && v->ndim > 0 && v->nitems >= 0 && name_usable(v->name);
}

/* The reason variable i is not imported ("*"), malloc'ed. */
static char *reason(const grid_file *f, int i) {
  const grid_var *v = &f->vars[i], *g = &f->vars[f->grid];
  char mine[DIMS_TEXT_MAX], grid[DIMS_TEXT_MAX], buf[2 * DIMS_TEXT_MAX + 64];
  if (!v->numeric) snprintf(buf, sizeof buf, "not numeric (char, string or a user-defined type)");
  else if (v->coord) snprintf(buf, sizeof buf, "the coordinate variable of dimension %s", v->name);
  else if (v->ndim < 0) snprintf(buf, sizeof buf, "more than %d dimensions", CATERVA_MAX_DIM);
  else if (!name_usable(v->name)) snprintf(buf, sizeof buf, "its name cannot be a file name");
  else if (v->ndim == 0) {
    dims_text(f, g, grid, sizeof grid);
    snprintf(buf, sizeof buf, "a scalar, not on the grid %s", grid);
  } else {
    dims_text(f, v, mine, sizeof mine);
    dims_text(f, g, grid, sizeof grid);
    snprintf(buf, sizeof buf, "on another grid: dimensions %s, not %s", mine, grid);
  }
  return strdup(buf);
}

/* "*": the grid is the dimensions of the candidates with the most dimensions, the set that
 * most of them share, the first in the file on a tie. */
static int select_all(caterva_ctx *ctx, grid_file *f) {
  int rc = CATERVA_OK, best = -1, best_count = 0;
  for (int i = 0; i < f->nvars; i++) {
    int count = 0;
    if (!candidate(&f->vars[i])) continue;
    for (int j = 0; j < f->nvars; j++)
      count += candidate(&f->vars[j]) && same_dims(&f->vars[i], &f->vars[j]);
    if (best < 0 || f->vars[i].ndim > f->vars[best].ndim ||
        (f->vars[i].ndim == f->vars[best].ndim && count > best_count))
      best = i, best_count = count;
  }
  CAT_CHECK(leave, best >= 0, CATERVA_E_NOTFOUND, "NetCDF file %s has no numeric variable with "
            "dimensions other than a coordinate variable", f->path);
  f->grid = best;
  for (int i = 0; i < f->nvars; i++)
    f->vars[i].selected = candidate(&f->vars[i]) && same_dims(&f->vars[i], &f->vars[best]);
leave:
  return rc;
}

/* The variable named name (len bytes), or -1. */
static int find_var(const grid_file *f, const char *name, size_t len) {
  for (int i = 0; i < f->nvars; i++)
    if (strlen(f->vars[i].name) == len && memcmp(f->vars[i].name, name, len) == 0) return i;
  return -1;
}

/* "a, b, c": each must exist, be importable and be on the first one's grid. */
static int select_list(caterva_ctx *ctx, grid_file *f, const char *list) {
  int rc = CATERVA_OK, n = 0;
  const char *s = list;
  f->grid = -1;
  for (;;) {
    const char *e = strchr(s, ',');
    size_t len;
    int i;
    char dims[DIMS_TEXT_MAX], grid[DIMS_TEXT_MAX];
    if (e == NULL) e = s + strlen(s);
    while (s < e && *s == ' ') s++;
    len = (size_t)(e - s);
    while (len > 0 && s[len - 1] == ' ') len--;
    CAT_CHECK(leave, len > 0, CATERVA_E_INVALID, "empty variable name in \"%s\"", list);
    i = find_var(f, s, len);
    CAT_CHECK(leave, i >= 0, CATERVA_E_NOTFOUND, "NetCDF file %s has no variable \"%.*s\"",
              f->path, (int)len, s);
    CAT_CHECK(leave, !f->vars[i].selected, CATERVA_E_INVALID, "variable \"%s\" is named twice",
              f->vars[i].name);
    CAT_CHECK(leave, f->vars[i].numeric, CATERVA_E_UNSUPPORTED, "variable \"%s\" is not "
              "numeric", f->vars[i].name);
    CAT_CHECK(leave, f->vars[i].ndim >= 0 && f->vars[i].nitems >= 0, CATERVA_E_UNSUPPORTED,
              "variable \"%s\" has more than %d dimensions", f->vars[i].name, CATERVA_MAX_DIM);
    CAT_CHECK(leave, name_usable(f->vars[i].name), CATERVA_E_UNSUPPORTED, "variable \"%s\": "
              "its name cannot be a file name", f->vars[i].name);
    if (f->grid < 0) f->grid = i;
    if (!same_dims(&f->vars[i], &f->vars[f->grid])) {
      dims_text(f, &f->vars[i], dims, sizeof dims);
      dims_text(f, &f->vars[f->grid], grid, sizeof grid);
      CAT_FAIL(leave, CATERVA_E_INVALID, "variable \"%s\" has dimensions %s, \"%s\" has %s: "
               "the variables of one import must share one grid", f->vars[i].name, dims,
               f->vars[f->grid].name, grid);
    }
    f->vars[i].selected = 1;
    n++;
    if (*e == 0) break;
    s = e + 1;
  }
  CAT_CHECK(leave, n > 0, CATERVA_E_INVALID, "no variable named in \"%s\"", list);
leave:
  return rc;
}

/* The result's items: "*" lists every variable, a list only the variables it names. */
static int make_result(const grid_file *f, int all, caterva_netcdf_grid *g) {
  g->items = calloc(f->nvars > 0 ? (size_t)f->nvars : 1, sizeof *g->items);
  if (g->items == NULL) return 0;
  for (int i = 0; i < f->nvars; i++) {
    caterva_netcdf_item *it = &g->items[g->nitems];
    if (!all && !f->vars[i].selected) continue;
    g->nitems++;
    it->name = strdup(f->vars[i].name);
    if (it->name == NULL) return 0;
    if (f->vars[i].selected) g->nimported++;
    else if ((it->skipped = reason(f, i)) == NULL) return 0;
  }
  return 1;
}

/* ---- writing ------------------------------------------------------------------------ */

/* Progress over all the variables. */
typedef struct grid_progress {
  caterva_progress_fn fn;
  void *arg;
  int64_t base, total;
} grid_progress;

static int on_progress(void *arg, int64_t done, int64_t total) {
  grid_progress *gp = arg;
  (void)total;
  return gp->fn(gp->arg, gp->base + done, gp->total);
}

/* Store the variable's name as attribute "name" (a msgpack string): the column name the
 * several-variable table gives it. */
static int set_name(caterva_ctx *ctx, caterva_array *a, const char *name) {
  size_t n = strlen(name), off = n < 32 ? 1 : 2;
  uint8_t buf[NAME_FILE_MAX + 2];
  if (n < 32) buf[0] = (uint8_t)(0xa0 | n);      /* fixstr */
  else buf[0] = 0xd9, buf[1] = (uint8_t)n;       /* str8 (n <= NAME_FILE_MAX) */
  memcpy(buf + off, name, n);
  return caterva_array_attr_set(ctx, a, "name", buf, (int32_t)(off + n));
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *f) {
  (void)st;
  (void)flag;
  (void)f;
  return remove(path);
}

/* One variable into dir/<name>.b2nd. */
static int write_var(caterva_ctx *ctx, const grid_file *f, const grid_var *v, const char *tmp,
                     const caterva_netcdf_params *p, grid_progress *gp,
                     caterva_netcdf_stats *stats) {
  int rc = CATERVA_OK;
  caterva_netcdf_params q = *p;
  caterva_array *a = NULL;
  char *path = malloc(strlen(tmp) + strlen(v->name) + 8);
  CAT_CHECK(leave, path != NULL, CATERVA_E_NOMEM, "out of memory");
  sprintf(path, "%s/%s.b2nd", tmp, v->name);
  q.variable = v->name;
  q.array.path = path;
  if (p->progress != NULL) {
    q.progress = on_progress;
    q.progress_arg = gp;
  }
  CAT_TRY(leave, caterva_netcdf_import(ctx, f->path, &q, stats, &a));
  if (!v->has_name_att) CAT_TRY(leave, set_name(ctx, a, v->name));
  gp->base += v->nitems;
leave:
  caterva_array_free(a);
  free(path);
  return rc;
}

static int write_dir(caterva_ctx *ctx, const grid_file *f, const char *dir,
                     const caterva_netcdf_params *p, caterva_netcdf_grid *g) {
  int rc = CATERVA_OK, made = 0, k = 0;
  grid_progress gp = {p->progress, p->progress_arg, 0, 0};
  char *tmp = malloc(strlen(dir) + 32);
  struct stat sb;
  CAT_CHECK(leave, tmp != NULL, CATERVA_E_NOMEM, "out of memory");
  CAT_CHECK(leave, stat(dir, &sb) != 0, CATERVA_E_EXISTS, "%s exists", dir);
  sprintf(tmp, "%s.importing-%ld", dir, (long)getpid());
  (void)nftw(tmp, rm_one, 8, FTW_DEPTH | FTW_PHYS); /* left by a crash of this process id */
  CAT_CHECK(leave, mkdir(tmp, 0777) == 0, CATERVA_E_IO, "cannot create directory %s: %s", tmp,
            strerror(errno));
  made = 1;
  for (int i = 0; i < f->nvars; i++)
    if (f->vars[i].selected && !cat_add64(gp.total, f->vars[i].nitems, &gp.total))
      gp.total = INT64_MAX;
  for (int i = 0; i < f->nvars; i++) {
    if (!f->vars[i].selected) continue;
    while (strcmp(g->items[k].name, f->vars[i].name) != 0) k++;
    CAT_TRY(leave, write_var(ctx, f, &f->vars[i], tmp, p, &gp, &g->items[k].stats));
  }
  CAT_TRY(leave, cat_io_rename_noreplace(ctx, tmp, dir));
  cat_io_sync_parent(dir);
  made = 0;
leave:
  if (made) (void)nftw(tmp, rm_one, 8, FTW_DEPTH | FTW_PHYS);
  free(tmp);
  return rc;
}

int caterva_netcdf_import_grid(caterva_ctx *ctx, const char *src, const char *dir,
                               const caterva_netcdf_params *p, caterva_netcdf_grid **out) {
  int rc = CATERVA_OK, all;
  grid_file f;
  caterva_netcdf_grid *g = NULL;
  memset(&f, 0, sizeof f);
  f.ncid = -1;
  f.path = src;
  *out = NULL;
  CAT_CHECK(leave, src != NULL && dir != NULL && p != NULL && p->variable != NULL,
            CATERVA_E_INVALID, "a grid import needs a source, a directory and variables");
  CAT_CHECK(leave, p->array.store == CATERVA_STORE_CONTIGUOUS ||
            p->array.store == CATERVA_STORE_SPARSE, CATERVA_E_INVALID,
            "a grid import writes files (a contiguous or sparse store)");
  all = strcmp(p->variable, "*") == 0;
  CAT_TRY(leave, describe(ctx, &f));
  CAT_TRY(leave, all ? select_all(ctx, &f) : select_list(ctx, &f, p->variable));
  g = calloc(1, sizeof *g);
  CAT_CHECK(leave, g != NULL && make_result(&f, all, g), CATERVA_E_NOMEM, "out of memory");
  nc_close(f.ncid); /* each variable's import opens the file itself */
  f.ncid = -1;
  CAT_TRY(leave, write_dir(ctx, &f, dir, p, g));
leave:
  if (f.ncid >= 0) nc_close(f.ncid);
  free(f.vars);
  if (rc < 0) caterva_netcdf_grid_free(g);
  else *out = g;
  return rc;
}

#else /* !HAVE_NETCDF */

int caterva_netcdf_import_grid(caterva_ctx *ctx, const char *src, const char *dir,
                               const caterva_netcdf_params *p, caterva_netcdf_grid **out) {
  (void)src;
  (void)dir;
  (void)p;
  *out = NULL;
  return cat_error(ctx, CATERVA_E_UNSUPPORTED, "NetCDF import: libcaterva was built without "
                   "libnetcdf (install libnetcdf-dev and run configure again)");
}

#endif /* HAVE_NETCDF */
