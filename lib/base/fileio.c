#include "base/fileio.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdio_ext.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int lc_copy_file(const char *from, const char *to, lc_err *err)
{
	FILE *a = fopen(from, "rb"), *b;
	char buf[65536];
	size_t n;
	int rc = 0;

	if (!a)
		return lc_fail(err, "%s: %s", from, strerror(errno));
	if (!(b = fopen(to, "wb"))) {
		fclose(a);
		return lc_fail(err, "%s: %s", to, strerror(errno));
	}
	while ((n = fread(buf, 1, sizeof buf, a)) > 0)
		if (fwrite(buf, 1, n, b) != n) {
			rc = lc_fail(err, "%s: %s", to, strerror(errno));
			break;
		}
	if (ferror(a))
		rc = lc_fail(err, "%s: read error", from);
	fclose(a);
	if (fclose(b) != 0 && rc == 0)
		rc = lc_fail(err, "%s: %s", to, strerror(errno));
	return rc;
}


int lc_write_file(const char *path, const char *s, size_t n, lc_err *err)
{
	FILE *f = fopen(path, "wb");
	int rc = 0;

	if (!f)
		return lc_fail(err, "%s: %s", path, strerror(errno));
	if (fwrite(s, 1, n, f) != n)
		rc = lc_fail(err, "%s: %s", path, strerror(errno));
	if (fclose(f) != 0 && rc == 0)
		rc = lc_fail(err, "%s: %s", path, strerror(errno));
	return rc;
}

int lc_fsync_path(const char *path, lc_err *err)
{
	int fd = open(path, O_RDONLY), rc = 0;
	struct stat st;

	if (fd < 0 && errno == EACCES && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
		return 0;   /* a directory one may write but not read: its entries unsynced */
	if (fd < 0)
		return lc_fail(err, "%s: %s", path, strerror(errno));
	if (fsync(fd) < 0 && errno != EINVAL)    /* EINVAL: a directory on some file systems */
		rc = lc_fail(err, "%s: %s", path, strerror(errno));
	close(fd);
	return rc;
}

void lc_parent_dir(const char *path, char *dir, size_t n)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		snprintf(dir, n, ".");
	else
		snprintf(dir, n, "%.*s", slash == path ? 1 : (int)(slash - path), path);
}

int lc_same_file(const char *a, const char *b)
{
	struct stat x, y;

	return a && b && stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev &&
	       x.st_ino == y.st_ino;
}

int lc_path_is_fd(const char *path, int fd)
{
	struct stat x, y;

	return stat(path, &x) == 0 && fstat(fd, &y) == 0 && x.st_dev == y.st_dev &&
	       x.st_ino == y.st_ino;
}

const char *lc_input_at(const char *path, int n, char *const *inputs)
{
	for (int i = 0; i < (n ? n : 1); i++) {
		const char *in = n ? inputs[i] : "-";

		if (strcmp(in, "-") ? lc_same_file(in, path) : lc_path_is_fd(path, STDIN_FILENO))
			return in;
	}
	return NULL;
}

/* x, the input's, is the regular file that standard output writes to */
static int refuse_output(const struct stat *x, const char *label, lc_err *err)
{
	struct stat y;

	if (fstat(STDOUT_FILENO, &y) == 0 && S_ISREG(x->st_mode) && S_ISREG(y.st_mode) &&
	    x->st_dev == y.st_dev && x->st_ino == y.st_ino) {
		__fpurge(stdout);
		return lc_fail(err, "%s: the input is the output file", label);
	}
	return 0;
}

int lc_input_not_output(FILE *in, const char *label, lc_err *err)
{
	struct stat x;

	return in != stdout && fstat(fileno(in), &x) == 0 ? refuse_output(&x, label, err) : 0;
}

/* A directory of documents: its files but hidden ones (textin's list) */
static int dir_not_output(const char *path, lc_err *err)
{
	DIR *d = opendir(path);
	struct dirent *e;
	struct stat x;
	int rc = 0;

	while (d && rc == 0 && (e = readdir(d))) {
		char p[4096];
		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof p, "%s/%s", path, e->d_name);
		if (stat(p, &x) == 0)
			rc = refuse_output(&x, p, err);
	}
	if (d)
		closedir(d);
	return rc;
}

int lc_path_not_output(const char *path, lc_err *err)
{
	struct stat x;

	if (strcmp(path, "-") == 0)
		return lc_input_not_output(stdin, "stdin", err);
	if (stat(path, &x) < 0)
		return 0;
	if (!S_ISDIR(x.st_mode))
		return refuse_output(&x, path, err);
	return dir_not_output(path, err);
}

enum lc_file_kind lc_file_kind(const char *path)
{
	struct stat sb;

	if (stat(path, &sb) < 0 || S_ISDIR(sb.st_mode))
		return LC_FILE_NONE;
	return S_ISREG(sb.st_mode) ? LC_FILE_REG : LC_FILE_OTHER;
}

int lc_regular_file(const char *path, lc_err *err)
{
	struct stat sb;

	if (stat(path, &sb) < 0)
		return lc_fail(err, "%s: %s", path, strerror(errno));
	if (!S_ISREG(sb.st_mode))
		return lc_fail(err, "%s: not a regular file", path);
	return 0;
}

int lc_small_file(const char *path, uint64_t max, const char *what, lc_err *err)
{
	struct stat sb;

	if (lc_regular_file(path, err) < 0 || stat(path, &sb) < 0)
		return -1;
	if ((uint64_t)sb.st_size > max)
		return lc_fail(err, "%s: %llu bytes, more than a %s may hold (%llu)", path,
		               (unsigned long long)sb.st_size, what, (unsigned long long)max);
	return 0;
}
