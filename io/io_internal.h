/*
 * io_internal.h -- what the converters of libcaterva-io share: core's public interface and
 * its base (cat_base.h: errors, byte order, checked arithmetic, the file calls with the
 * fault-injection hook). Nothing here reaches into the engine's internals.
 */
#ifndef IO_INTERNAL_H
#define IO_INTERNAL_H

#include "cat_base.h"
#include "caterva_io.h"

#endif /* IO_INTERNAL_H */
