#include "base/err.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int lc_fail(lc_err *err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return -1;
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof err->msg, fmt, ap);
	va_end(ap);
	return -1;
}

int lc_prefix(lc_err *err, const char *fmt, ...)
{
	char head[512], old[sizeof err->msg];
	va_list ap;

	if (!err)
		return -1;
	va_start(ap, fmt);
	vsnprintf(head, sizeof head, fmt, ap);
	va_end(ap);
	memcpy(old, err->msg, sizeof old);
	snprintf(err->msg, sizeof err->msg, "%s: %s", head, old);
	return -1;
}
