/* libFuzzer target: a model directory's generation settings
 * (generation_config.json, or config.json's generation keys read as
 * BartConfig fills them in) on arbitrary bytes. The first byte picks the
 * file (bit 0: generation_config.json) and BART's defaults (bit 1); the
 * rest is the JSON. Settings it accepts must be in the ranges the search
 * takes: every id >= -1, at most 15 more eos ids, each an id. */
#include <stdint.h>
#include <stdlib.h>

#include "arch/model.h"
#include "weights/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	lc_err err;
	lc_gencfg g;
	json_t *root;

	if (!size || !(root = cfg_parse((const char *)data + 1, size - 1, "fuzz", &err)))
		return 0;
	if (model_gencfg_parse(root, "fuzz", data[0] & 1 ? "generation_config.json" : "config.json",
	                       data[0] & 2, &g, &err) == 0) {
		if (g.eos < -1 || g.decoder_start < -1 || g.forced_bos < -1 || g.forced_eos < -1 ||
		    g.neos_extra < 0 || g.neos_extra > LC_GEN_EOS_MAX - 1 || (g.neos_extra && g.eos < 0))
			abort();
		for (int i = 0; i < g.neos_extra; i++)
			if (g.eos_extra[i] < 0)
				abort();
		if (g.max_new == 0 || g.num_beams == 0)
			abort();
	}
	json_decref(root);
	return 0;
}
