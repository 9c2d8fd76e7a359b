/* libFuzzer target: the pytorch_model.bin reader (zip + restricted
 * unpickler) on arbitrary bytes. Accepted tensors must be readable. */
#include <stdint.h>
#include <stdlib.h>

#include "weights/torchzip.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	lc_err err;
	tz_file *f = tz_parse(data, size, "fuzz", &err);

	if (f) {
		volatile uint8_t x = 0;
		for (uint32_t i = 0; i < tz_count(f); i++) {
			const st_tensor *t = tz_at(f, i);
			for (uint64_t j = 0; j < t->nbytes; j += 61)
				x ^= t->data[j];
			if (t->nbytes)
				x ^= t->data[t->nbytes - 1];
		}
		(void)x;
		tz_close(f);
	}
	return 0;
}
