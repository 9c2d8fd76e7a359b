/* libFuzzer target: config.json on arbitrary bytes, through the registry,
 * the architecture's parser and the declaration of its parameters. A
 * configuration it accepts must declare a consistent flat layout. Any
 * JSON it parses, written back as transformers writes it (cfg_dump_hf,
 * lc-convert's writer), must read back equal. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "arch/arch.h"
#include "weights/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	lc_err err;
	lc_config c;
	json_t *root = cfg_parse((const char *)data, size, "fuzz", &err);
	lc_params *p = NULL;
	void *w;

	if (!root)
		return 0;
	for (int ascii = 0; ascii < 2; ascii++) {
		char *text = cfg_dump_hf(root, ascii);
		json_t *back = text ? cfg_parse(text, strlen(text), "fuzz dump", &err) : NULL;
		if (!text || !back || !json_equal(root, back))
			abort();
		json_decref(back);
		free(text);
	}
	if (arch_config_json(root, "fuzz", &c, &err) == 0 &&
	    (w = arch_weights_new(&c, NULL, &p, &err))) {
		uint64_t off = 0;
		for (uint32_t i = 0; i < params_count(p); i++) {
			const lc_param *e = params_at(p, i);
			if (e->off != off || e->numel == 0 || params_find(p, e->name) != e)
				abort();
			off += e->numel;
		}
		if (off != params_total(p))
			abort();
		arch_weights_free(&c, w, p);
	}
	json_decref(root);
	return 0;
}
