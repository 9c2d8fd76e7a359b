#include "text/rematch.h"

pcre2_code *re_compile(const char *pattern, uint32_t options, int *code, PCRE2_SIZE *offset)
{
	pcre2_code *re = pcre2_compile((PCRE2_SPTR)pattern, PCRE2_ZERO_TERMINATED, options, code,
	                               offset, NULL);

	if (re)
		pcre2_jit_compile(re, PCRE2_JIT_COMPLETE);   /* none: the interpreter */
	return re;
}

int re_match(const pcre2_code *re, const char *s, size_t len, size_t off, uint32_t options,
             pcre2_match_data *md)
{
	int rc = pcre2_match(re, (PCRE2_SPTR)s, len, off, options, md, NULL);

	if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
		rc = pcre2_match(re, (PCRE2_SPTR)s, len, off, options | PCRE2_NO_JIT, md, NULL);
	return rc;
}
