#include "base/grow.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int lc_grow(void *pp, size_t *cap, size_t need, size_t elem, size_t first)
{
	size_t nc = *cap ? *cap : first ? first : 1;
	void *p, *q;

	if (need <= *cap)
		return 0;
	while (nc < need) {
		if (nc > SIZE_MAX / 2)
			return -1;
		nc *= 2;
	}
	if (elem && nc > SIZE_MAX / elem)
		return -1;
	/* the pointer read and written as bytes: pp may point at any T * */
	memcpy(&p, pp, sizeof p);
	if (!(q = realloc(p, nc * elem)))
		return -1;
	memcpy(pp, &q, sizeof q);
	*cap = nc;
	return 0;
}
