/*
 * replay_fuzz.c -- runs every file of the corpus directories given on the command line through
 * a fuzz target's LLVMFuzzerTestOneInput, without libFuzzer, and reports TAP. A crash or a
 * sanitizer report fails the test; returning normally passes.
 */
#include "tap.h"

#include <dirent.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path) {
  FILE *f = fopen(path, "rb");
  uint8_t *buf = NULL;
  long sz;
  if (f == NULL) return -1;
  if (fseek(f, 0, SEEK_END) != 0 || (sz = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
    fclose(f);
    return -1;
  }
  buf = malloc((size_t)sz + 1);
  if (buf == NULL || fread(buf, 1, (size_t)sz, f) != (size_t)sz) {
    free(buf);
    fclose(f);
    return -1;
  }
  fclose(f);
  LLVMFuzzerTestOneInput(buf, (size_t)sz);
  free(buf);
  return 0;
}

int main(int argc, char **argv) {
  int files = 0;
  for (int a = 1; a < argc; a++) {
    DIR *d = opendir(argv[a]);
    struct dirent *e;
    if (d == NULL) {
      tap_ok(0, "open corpus directory %s", argv[a]);
      continue;
    }
    while ((e = readdir(d)) != NULL) {
      char path[4096];
      if (e->d_name[0] == '.') continue;
      snprintf(path, sizeof path, "%s/%s", argv[a], e->d_name);
      tap_ok(replay_file(path) == 0, "replay %s", e->d_name);
      files++;
    }
    closedir(d);
  }
  tap_ok(files > 0, "corpus holds %d inputs", files);
  return tap_done();
}
