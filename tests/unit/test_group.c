/*
 * test_group.c -- one commit across several arrays (core/group.c): a group commit shows all
 * arrays' changes and leaves no journal; every counted I/O call of one failed in turn (EIO
 * and ENOSPC, once and sticky) in a forked child leaves, once caterva_group_recover has run
 * on each array, both arrays in the old or both in the new state and no journal (a sticky
 * failure also defeats the writer's own undo and leaves the journal: the recovery puts the
 * arrays back; until then the arrays refuse to open for writing); a torn journal copy is removed without touching the arrays; an array named
 * twice is refused before anything is written.
 */
#include "fsutil.h"
#include "tap.h"

#include "caterva.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define ROWS 7
#define COLS 6
#define NCELL (ROWS * COLS)

static caterva_ctx *ctx;
static char tmpdir[256];

static int exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

static void journal_of(const char *path, char *out, size_t n) {
  snprintf(out, n, "%s.cvjournal", path);
}

/* A ROWSxCOLS int32 array at path (sparse directory or file), every item v. */
static int make(const char *path, int sparse, int32_t v) {
  caterva_array_params p;
  caterva_array *a = NULL;
  int32_t buf[NCELL];
  int rc;
  for (int i = 0; i < NCELL; i++) buf[i] = v;
  caterva_array_params_init(&p);
  p.ndim = 2;
  p.shape[0] = ROWS;
  p.shape[1] = COLS;
  p.chunkshape[0] = 3;
  p.chunkshape[1] = 4;
  p.blockshape[0] = 1;
  p.blockshape[1] = 2;
  p.dtype = "int32";
  p.store = sparse ? CATERVA_STORE_SPARSE : CATERVA_STORE_CONTIGUOUS;
  p.path = path;
  rc = caterva_array_from_buffer(ctx, &p, buf, sizeof buf, &a);
  caterva_array_free(a);
  return rc;
}

/* The array's rows and the value all its items hold, or -1000 when they differ. */
static int32_t uniform(const char *path, int64_t *rows) {
  caterva_array *a = NULL;
  int32_t *buf = NULL, v = -1000;
  int64_t n;
  *rows = -1;
  if (caterva_array_open(ctx, path, CATERVA_OPEN_READ, &a) < 0) return -2000;
  *rows = caterva_array_shape(a)[0];
  n = *rows * COLS;
  buf = malloc((size_t)n * sizeof *buf);
  if (buf != NULL && caterva_array_to_buffer(ctx, a, buf, n * (int64_t)sizeof *buf) >= 0) {
    v = buf[0];
    for (int64_t i = 1; i < n; i++)
      if (buf[i] != v) v = -1000;
  }
  free(buf);
  caterva_array_free(a);
  return v;
}

/* Open both for writing, set every item to v and grow both by one row of v, commit as one. */
static int group_write(const char *pa, const char *pb, int32_t v) {
  caterva_array *arr[2] = {NULL, NULL};
  int rc = 0;
  const char *paths[2] = {pa, pb};
  for (int k = 0; k < 2 && rc >= 0; k++) {
    int64_t shape[2];
    rc = caterva_array_open(ctx, paths[k], CATERVA_OPEN_WRITE, &arr[k]);
    if (rc >= 0) rc = caterva_array_begin(ctx, arr[k]);
    if (rc >= 0) caterva_array_set_fill(ctx, arr[k], &v, 0);
    shape[0] = rc >= 0 ? caterva_array_shape(arr[k])[0] + 1 : 0;
    shape[1] = COLS;
    if (rc >= 0) rc = caterva_array_resize(ctx, arr[k], shape);
    for (int64_t i = 0; i < shape[0] && rc >= 0; i++)
      for (int64_t j = 0; j < COLS && rc >= 0; j++) {
        int64_t c[2] = {i, j};
        rc = caterva_array_set_item(ctx, arr[k], c, &v);
      }
  }
  if (rc >= 0) rc = caterva_array_commit_group(ctx, arr, 2, 1, NULL);
  for (int k = 0; k < 2; k++) {
    if (arr[k] != NULL && caterva_schunk_in_txn(caterva_array_schunk(arr[k])))
      (void)caterva_array_rollback(ctx, arr[k]);
    caterva_array_free(arr[k]);
  }
  return rc;
}

static void paths_for(const char *tag, char *pa, char *pb, size_t n) {
  snprintf(pa, n, "%s/%s_a.b2nd", tmpdir, tag);
  snprintf(pb, n, "%s/%s_b.b2frame", tmpdir, tag);
}

static void test_commit(void) {
  char pa[512], pb[512], ja[600], jb[600];
  int64_t ra, rb;
  int32_t va, vb;
  paths_for("commit", pa, pb, sizeof pa);
  journal_of(pa, ja, sizeof ja);
  journal_of(pb, jb, sizeof jb);
  tap_ok(make(pa, 0, 1) >= 0 && make(pb, 1, 1) >= 0, "two arrays created");
  tap_ok(group_write(pa, pb, 5) >= 0, "a group commit of a contiguous and a sparse array");
  va = uniform(pa, &ra);
  vb = uniform(pb, &rb);
  tap_ok(va == 5 && vb == 5 && ra == ROWS + 1 && rb == ROWS + 1,
         "both arrays hold the new values and the new shape (%d/%d, %lld/%lld rows)", (int)va,
         (int)vb, (long long)ra, (long long)rb);
  tap_ok(!exists(ja) && !exists(jb), "no journal copy remains");
  tap_ok(caterva_group_journal(ctx, pa, NULL, NULL) == CATERVA_GROUP_NONE &&
             caterva_group_journal(ctx, pb, NULL, NULL) == CATERVA_GROUP_NONE,
         "caterva_group_journal reports none");
}

/* Run group_write in a child whose n-th counted I/O call fails; its exit status. */
static int child_write(const char *pa, const char *pb, int64_t n, int err, int sticky, int32_t v) {
  pid_t pid = fork();
  int status = 0;
  if (pid == 0) {
    caterva_test_fail_io(n, err, sticky);
    _exit(group_write(pa, pb, v) >= 0 ? 0 : 1);
  }
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

static void sweep(int err, int sticky) {
  char pa[512], pb[512], ja[600], jb[600], tag[64];
  int64_t n, ra, rb;
  int bad = 0, nold = 0, nnew = 0, njournal = 0, done = 0;
  snprintf(tag, sizeof tag, "sweep_%s_%d", err == EIO ? "eio" : "enospc", sticky);
  paths_for(tag, pa, pb, sizeof pa);
  journal_of(pa, ja, sizeof ja);
  journal_of(pb, jb, sizeof jb);
  for (n = 1; n < 400 && !done; n++) {
    int32_t va, vb;
    int st, outcome_a = 0, outcome_b = 0;
    tu_rm_tree(pa);
    tu_rm_tree(pb);
    if (make(pa, 0, 1) < 0 || make(pb, 1, 1) < 0) {
      bad++;
      break;
    }
    st = child_write(pa, pb, n, err, sticky, 9);
    if (exists(ja) || exists(jb)) {
      caterva_array *w = NULL;
      int r = caterva_array_open(ctx, exists(ja) ? pa : pb, CATERVA_OPEN_WRITE, &w);
      caterva_array_free(w);
      njournal++;
      if (r != CATERVA_E_BUSY) {
        bad++;
        tap_ok(0, "n=%lld: an array with a journal opened for writing (%d)", (long long)n, r);
      }
    }
    if (caterva_group_recover(ctx, pa, &outcome_a) < 0 ||
        caterva_group_recover(ctx, pb, &outcome_b) < 0) {
      bad++;
      tap_ok(0, "n=%lld: recovery failed: %s", (long long)n, caterva_ctx_errmsg(ctx));
      continue;
    }
    va = uniform(pa, &ra);
    vb = uniform(pb, &rb);
    if (exists(ja) || exists(jb)) {
      bad++;
      tap_ok(0, "n=%lld: a journal copy remains after the recovery", (long long)n);
    } else if (va == 9 && vb == 9 && ra == ROWS + 1 && rb == ROWS + 1) {
      nnew++;
      done = st == 0; /* the failure fell past the last counted call */
    } else if (va == 1 && vb == 1 && ra == ROWS && rb == ROWS) {
      nold++;
      if (st == 0) {
        bad++;
        tap_ok(0, "n=%lld: the commit reported success, the arrays are old", (long long)n);
      }
    } else {
      bad++;
      tap_ok(0, "n=%lld: a: %d (%lld rows), b: %d (%lld rows): neither both old nor both new",
             (long long)n, (int)va, (long long)ra, (int)vb, (long long)rb);
    }
  }
  tap_ok(bad == 0 && done && n > 5,
         "%s%s at each of %lld counted calls of a group commit: after recovery both arrays "
         "old (%d) or both new (%d), %d runs left a journal", err == EIO ? "EIO" : "ENOSPC",
         sticky ? " (sticky)" : "", (long long)(n - 2), nold, nnew, njournal);
  if (sticky)
    tap_ok(njournal > 0, "a sticky failure left a journal (its arrays refused to writers "
                         "until the recovery finished it)");
}

/* A copy that does not parse was written before any array committed: removed, arrays kept. */
static void test_torn(void) {
  char pa[512], pb[512], ja[600];
  int64_t ra, rb;
  int outcome = -1;
  paths_for("torn", pa, pb, sizeof pa);
  journal_of(pa, ja, sizeof ja);
  make(pa, 0, 3);
  make(pb, 1, 3);
  tu_write_file(ja, "CVGROUP1 torn", 13);
  tap_ok(caterva_group_journal(ctx, pa, NULL, NULL) == CATERVA_GROUP_STALE,
         "a torn journal copy reads as stale");
  tap_ok(caterva_group_recover(ctx, pa, &outcome) >= 0 && outcome == CATERVA_GROUP_STALE &&
             !exists(ja) && uniform(pa, &ra) == 3 && uniform(pb, &rb) == 3,
         "the recovery removes it and leaves the arrays as they are");
}

static void test_twice(void) {
  char pa[512], pb[512], ja[600];
  caterva_array *arr[2] = {NULL, NULL};
  int64_t c[2] = {0, 0}, r;
  int32_t v = 4;
  int rc;
  paths_for("twice", pa, pb, sizeof pa);
  journal_of(pa, ja, sizeof ja);
  make(pa, 0, 2);
  rc = caterva_array_open(ctx, pa, CATERVA_OPEN_WRITE, &arr[0]);
  if (rc >= 0) rc = caterva_array_open(ctx, pa, CATERVA_OPEN_WRITE, &arr[1]);
  for (int k = 0; k < 2 && rc >= 0; k++) {
    rc = caterva_array_begin(ctx, arr[k]);
    if (rc >= 0) rc = caterva_array_set_item(ctx, arr[k], c, &v);
  }
  if (rc >= 0) rc = caterva_array_commit_group(ctx, arr, 2, 1, NULL);
  tap_ok(rc == CATERVA_E_INVALID && !exists(ja), "an array named twice is refused (%d), no journal",
         rc);
  for (int k = 0; k < 2; k++) {
    if (arr[k] != NULL) (void)caterva_array_rollback(ctx, arr[k]);
    caterva_array_free(arr[k]);
  }
  tap_ok(uniform(pa, &r) == 2, "and the array is unchanged");
}

int main(void) {
  const char *t = getenv("TMPDIR");
  snprintf(tmpdir, sizeof tmpdir, "%s/test_group.XXXXXX", t && *t ? t : "/tmp");
  if (mkdtemp(tmpdir) == NULL) return tap_skip_all("cannot create a temporary directory");
  if (caterva_ctx_new(1, &ctx) != 0) return tap_skip_all("no context");
  test_commit();
  sweep(EIO, 0);
  sweep(ENOSPC, 1);
  sweep(EIO, 1);
  test_torn();
  test_twice();
  caterva_ctx_free(ctx);
  tu_rm_tree(tmpdir);
  return tap_done();
}
