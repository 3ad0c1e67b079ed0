/* fsutil.c -- file helpers shared by the C tests. */
#define _XOPEN_SOURCE 700
#include "fsutil.h"

#include <ftw.h>
#include <stdio.h>
#include <sys/stat.h>

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *f) {
  (void)st;
  (void)flag;
  (void)f;
  return remove(path);
}

void tu_rm_tree(const char *path) {
  struct stat st;
  if (lstat(path, &st) != 0) return;
  if (S_ISDIR(st.st_mode)) (void)nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
  else (void)remove(path);
}
