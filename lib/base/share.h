/*
 * share: where the programs' run-time files are (the tokenizer
 * spiece.model, the demo model models/demo, the samples): the source
 * tree's share/, installed as PREFIX/share/lc. The one place that
 * decides, in this order:
 *
 *   1. $LC_SHARE, when set and not empty;
 *   2. the build tree's share/, when the running program is one of the
 *      build tree's own ($(O)/bin/NAME): `make` and then build/bin/NAME
 *      works with nothing set;
 *   3. PREFIX/share/lc, when the running program is PREFIX/bin/NAME and
 *      that directory exists: an installed program finds its files
 *      whatever PREFIX it was installed to, with no rebuild;
 *   4. the SHAREDIR compiled in (config.mk), whether or not it exists.
 *
 * The running program is /proc/self/exe (symbolic links resolved); where
 * that cannot be read, 2 and 3 are skipped. Nothing is cached: each call
 * looks again.
 */
#ifndef LC_SHARE_H
#define LC_SHARE_H

#include <stddef.h>

enum share_from {
	SHARE_ENV = 1,          /* $LC_SHARE */
	SHARE_TREE = 2,         /* the build tree's share/ */
	SHARE_INSTALLED = 3,    /* PREFIX/share/lc next to PREFIX/bin */
	SHARE_COMPILED = 4,     /* the compiled-in SHAREDIR */
};

/* Writes the share directory into buf[n] (cut to fit); returns where it
 * came from. */
enum share_from share_dir(char *buf, size_t n);

/* Writes DIR/name into buf[n] (cut to fit), DIR as share_dir; returns
 * buf. Sets *from, when from is non-NULL. */
const char *share_path(const char *name, char *buf, size_t n, enum share_from *from);

/* How messages name a source: "from $LC_SHARE", "the build tree's
 * share/", "the installed share directory next to the program's bin/",
 * "the compiled-in SHAREDIR (...why...)". */
const char *share_from_name(enum share_from from);

#endif
