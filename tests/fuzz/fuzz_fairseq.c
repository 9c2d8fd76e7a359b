/* libFuzzer target: a fairseq checkpoint (zip + the unpickler in
 * checkpoint mode) on arbitrary bytes, then the translation of its
 * arguments. Accepted tensors must be readable. Seeds: the pickles of the
 * tiny checkpoints in tests/data/fairseq, zipped as torch.save writes them. */
#include <stdint.h>
#include <stdlib.h>

#include "weights/fairseq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	lc_err err;
	tz_file *f = tz_parse_ckpt(data, size, "fuzz", "model", &err);

	if (f) {
		volatile uint8_t x = 0;
		json_t *c = fs_config(f, "fuzz", NULL, &err);
		for (uint32_t i = 0; i < tz_count(f); i++) {
			const st_tensor *t = tz_at(f, i);
			for (uint64_t j = 0; j < t->nbytes; j += 61)
				x ^= t->data[j];
			if (t->nbytes)
				x ^= t->data[t->nbytes - 1];
		}
		(void)x;
		json_decref(c);
		tz_close(f);
	}
	return 0;
}
