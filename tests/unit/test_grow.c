/* base/grow: the capacity doubles from the first to what is needed, the
 * contents kept; absurd sizes are refused with the array unchanged. */
#include <stdint.h>
#include <stdlib.h>

#include "base/grow.h"
#include "t.h"

static void test_grow(void)
{
	int *a = NULL;
	size_t cap = 0;

	T_EQ_I(lc_grow(&a, &cap, 1, sizeof *a, 4), 0);
	T_OK(a != NULL && cap == 4, "first: cap %zu", cap);
	for (int i = 0; i < 4; i++)
		a[i] = i;
	T_EQ_I(lc_grow(&a, &cap, 4, sizeof *a, 4), 0);
	T_OK(cap == 4, "room already: cap %zu", cap);
	T_EQ_I(lc_grow(&a, &cap, 5, sizeof *a, 4), 0);
	T_OK(cap == 8, "doubled: cap %zu", cap);
	T_EQ_I(lc_grow(&a, &cap, 33, sizeof *a, 4), 0);
	T_OK(cap == 64, "doubled until it holds 33: cap %zu", cap);
	T_OK(a[0] == 0 && a[3] == 3, "contents kept");
	{
		int *before = a;
		T_EQ_I(lc_grow(&a, &cap, SIZE_MAX / 2 + 2, sizeof *a, 4), -1);
		T_OK(a == before && cap == 64, "an absurd size: refused, unchanged");
	}
	free(a);
}

int main(void)
{
	T_RUN(test_grow);
	return t_done();
}
