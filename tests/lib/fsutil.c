/* fsutil.c -- file helpers shared by the C tests. */
#define _XOPEN_SOURCE 700
#include "fsutil.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int tu_mkdir_p(const char *path) {
  char buf[4096];
  size_t n = strlen(path);
  if (n == 0 || n >= sizeof buf) return -1;
  memcpy(buf, path, n + 1);
  for (size_t i = 1; i <= n; i++) {
    if (buf[i] == '/' || buf[i] == '\0') {
      char save = buf[i];
      buf[i] = '\0';
      if (mkdir(buf, 0777) != 0 && errno != EEXIST) return -1;
      buf[i] = save;
    }
  }
  return 0;
}

int tu_write_file(const char *path, const void *p, size_t n) {
  FILE *f = fopen(path, "wb");
  int ok;
  if (f == NULL) return -1;
  ok = (n == 0 || fwrite(p, 1, n, f) == n);
  ok = fclose(f) == 0 && ok;
  return ok ? 0 : -1;
}

uint8_t *tu_read_file(const char *path, size_t *len) {
  struct stat st;
  FILE *f;
  uint8_t *buf;
  *len = 0;
  if (stat(path, &st) != 0 || (f = fopen(path, "rb")) == NULL) return NULL;
  buf = malloc(st.st_size > 0 ? (size_t)st.st_size : 1);
  if (buf != NULL && fread(buf, 1, (size_t)st.st_size, f) != (size_t)st.st_size) {
    free(buf);
    buf = NULL;
  }
  fclose(f);
  if (buf != NULL) *len = (size_t)st.st_size;
  return buf;
}

int64_t tu_file_size(const char *path) {
  struct stat st;
  return stat(path, &st) == 0 ? (int64_t)st.st_size : -1;
}
