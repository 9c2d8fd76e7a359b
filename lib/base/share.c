#include "base/share.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/fileio.h"

/* The Makefile gives these to this object alone (so that changing them
 * rebuilds nothing else): the installed share directory, and the build
 * tree's share/ with the bin directory whose programs use it. */
#ifndef LC_SHAREDIR
#define LC_SHAREDIR "/usr/local/share/lc"
#endif
#ifndef LC_TREE_SHARE
#define LC_TREE_SHARE ""
#endif
#ifndef LC_TREE_BIN
#define LC_TREE_BIN ""
#endif

static int is_dir(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

/* Whether a and b name the same directory (links and ".." resolved). */
static int same_dir(const char *a, const char *b)
{
	return is_dir(a) && lc_same_file(a, b);
}

/* The directory of the running program into buf[n]: 0, or -1 when it
 * cannot be known. */
static int exe_dir(char *buf, size_t n)
{
	ssize_t len = readlink("/proc/self/exe", buf, n - 1);
	char *slash;

	if (len <= 0 || (size_t)len >= n - 1)
		return -1;
	buf[len] = '\0';
	if (buf[0] != '/' || !(slash = strrchr(buf, '/')))
		return -1;
	slash[slash == buf] = '\0';     /* "/lc-x" -> "/" */
	return 0;
}

enum share_from share_dir(char *buf, size_t n)
{
	const char *env = getenv("LC_SHARE");
	char dir[4096], cand[4096 + 16];
	size_t len;

	if (env && *env) {
		snprintf(buf, n, "%s", env);
		return SHARE_ENV;
	}
	if (exe_dir(dir, sizeof dir) == 0) {
		if (LC_TREE_BIN[0] && same_dir(dir, LC_TREE_BIN) && is_dir(LC_TREE_SHARE)) {
			snprintf(buf, n, "%s", LC_TREE_SHARE);
			return SHARE_TREE;
		}
		len = strlen(dir);
		if (len >= 4 && !strcmp(dir + len - 4, "/bin")) {
			snprintf(cand, sizeof cand, "%.*s/share/lc", (int)(len - 4), dir);
			if (is_dir(cand)) {
				snprintf(buf, n, "%s", cand);
				return SHARE_INSTALLED;
			}
		}
	}
	snprintf(buf, n, "%s", LC_SHAREDIR);
	return SHARE_COMPILED;
}

const char *share_path(const char *name, char *buf, size_t n, enum share_from *from)
{
	char dir[4096];
	enum share_from f = share_dir(dir, sizeof dir);

	snprintf(buf, n, "%s/%s", dir, name);
	if (from)
		*from = f;
	return buf;
}

const char *share_from_name(enum share_from from)
{
	switch (from) {
	case SHARE_ENV: return "from $LC_SHARE";
	case SHARE_TREE: return "the build tree's share/";
	case SHARE_INSTALLED: return "the installed share directory next to the program's bin/";
	case SHARE_COMPILED: break;
	}
	return "the compiled-in SHAREDIR: the program is neither in the build tree "
	       "nor next to a share/lc directory";
}
