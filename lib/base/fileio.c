#include "base/fileio.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

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

