/* fsutil.h -- file helpers shared by the C tests. */
#ifndef TESTS_FSUTIL_H
#define TESTS_FSUTIL_H

#include <stddef.h>
#include <stdint.h>

/* Remove a file, or a directory and everything below it (links are not followed). */
void tu_rm_tree(const char *path);

/* Create a directory and its missing parents; 0, or -1 when one cannot be made. */
int tu_mkdir_p(const char *path);

/* Write n bytes to a new (or truncated) file; 0, or -1 on any error. */
int tu_write_file(const char *path, const void *p, size_t n);

/* A file's bytes in a new buffer (malloc'ed, the caller frees it; at least one byte allocated)
 * and their count in *len; NULL when it cannot be read whole. */
uint8_t *tu_read_file(const char *path, size_t *len);

/* The size of a file in bytes, or -1 when it cannot be stat'ed. */
int64_t tu_file_size(const char *path);

#endif
