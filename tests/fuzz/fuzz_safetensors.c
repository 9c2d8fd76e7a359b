/* libFuzzer target: the safetensors header validator on arbitrary bytes.
 * A file it accepts must have every tensor's bytes inside the image. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "weights/safetensors.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	lc_err err;
	st_file *f = st_parse(data, size, "fuzz", &err);

	if (f) {
		volatile uint8_t x = 0;
		for (uint32_t i = 0; i < st_count(f); i++) {
			const st_tensor *t = st_at(f, i);
			if (t->data < data || t->data + t->nbytes > data + size)
				abort();
			if (t->nbytes)
				x ^= t->data[0] ^ t->data[t->nbytes - 1];
			if (st_find(f, t->name) == NULL)
				abort();
		}
		(void)x;
		st_close(f);
	}
	return 0;
}
