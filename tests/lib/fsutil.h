/* fsutil.h -- file helpers shared by the C tests. */
#ifndef TESTS_FSUTIL_H
#define TESTS_FSUTIL_H

/* Remove a file, or a directory and everything below it (links are not followed). */
void tu_rm_tree(const char *path);

#endif
