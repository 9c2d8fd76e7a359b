/* libFuzzer target: a fairseq checkpoint (zip + the unpickler in
 * checkpoint mode) on arbitrary bytes, then the translation of its
 * arguments. Accepted tensors must be readable. An input that starts like
 * a zip is the file; anything else is its data.pkl, zipped here with
 * storages "0" to "7" (4 KiB of zeros each), so that mutations reach the
 * unpickler rather than the zip's checksums. Seeds: the tiny checkpoints
 * of tests/data/fairseq with a one-tensor state dict, and their pickles
 * (tests/gen/make_fairseq_ckpt.py). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <archive.h>
#include <archive_entry.h>

#include "weights/fairseq.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void add(struct archive *a, const char *name, const void *p, size_t n)
{
	struct archive_entry *e = archive_entry_new();

	archive_entry_set_pathname(e, name);
	archive_entry_set_filetype(e, AE_IFREG);
	archive_entry_set_perm(e, 0644);
	archive_entry_set_size(e, (la_int64_t)n);
	archive_write_header(a, e);
	archive_write_data(a, p, n);
	archive_entry_free(e);
}

/* data.pkl and the storages as a stored zip; NULL if it does not fit */
static void *wrap(const uint8_t *pkl, size_t n, size_t *len)
{
	static const unsigned char zero[4096];
	size_t cap = n + 8 * sizeof zero + 65536, used = 0;
	char *buf = malloc(cap);
	struct archive *a = archive_write_new();

	archive_write_set_format_zip(a);
	archive_write_set_options(a, "zip:compression=store");
	archive_write_open_memory(a, buf, cap, &used);
	add(a, "archive/data.pkl", pkl, n);
	for (int i = 0; i < 8; i++) {
		char name[32];
		snprintf(name, sizeof name, "archive/data/%d", i);
		add(a, name, zero, sizeof zero);
	}
	archive_write_close(a);
	archive_write_free(a);
	*len = used;
	return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	lc_err err;
	tz_file *f;
	void *z = NULL;

	if (size >= 4 && !memcmp(data, "PK\3\4", 4)) {
		f = tz_parse_ckpt(data, size, "fuzz", "model", &err);
	} else {
		size_t zl;
		if (!(z = wrap(data, size, &zl)))
			return 0;
		f = tz_parse_ckpt(z, zl, "fuzz", "model", &err);
	}
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
	free(z);
	return 0;
}
