/*
 * convdir.c: the converters' shared steps (see convdir.h).
 */
#include "arch/convdir.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fileio.h"
#include "weights/config.h"

/* Files copied unchanged when present. */
static const char *const copied[] = {
	"vocab.json", "merges.txt", "tokenizer.json", "special_tokens_map.json",
	"added_tokens.json", "generation_config.json",
};

void convdir_tile_positions(const float *old, uint64_t n, float *new, uint64_t rows, uint64_t d)
{
	memcpy(new, old, 2 * d * sizeof *new);
	for (uint64_t k = 0; k + 2 < rows; k++)
		memcpy(new + (2 + k) * d, old + (2 + k % (n - 2)) * d, d * sizeof *new);
}

int convdir_write_json(const char *dir, const char *name, const json_t *root, int ascii,
                       lc_err *err)
{
	char path[PATH_MAX];
	char *s = cfg_dump_hf(root, ascii);
	FILE *f;
	size_t n;
	int rc = 0;

	if (!s)
		return lc_fail(err, "out of memory");
	snprintf(path, sizeof path, "%s/%s", dir, name);
	n = strlen(s);
	if (!(f = fopen(path, "wb")))
		rc = lc_fail(err, "%s: %s", path, strerror(errno));
	else if (fwrite(s, 1, n, f) != n) {
		rc = lc_fail(err, "%s: %s", path, strerror(errno));
		fclose(f);
	} else if (fclose(f) != 0)
		rc = lc_fail(err, "%s: %s", path, strerror(errno));
	free(s);
	return rc;
}

/* dir/name from src/name, if src has it */
static int copy_if(const char *src, const char *dir, const char *name, lc_err *err)
{
	char a[PATH_MAX], b[PATH_MAX];

	snprintf(a, sizeof a, "%s/%s", src, name);
	snprintf(b, sizeof b, "%s/%s", dir, name);
	if (access(a, F_OK) != 0)
		return 0;
	return lc_copy_file(a, b, err);
}

int convdir_commit(const lc_params *p, const float *base, const json_t *cfg, const char *src,
                   int max_len, const char *tmp, const char *dst, lc_err *err)
{
	char path[PATH_MAX];

	snprintf(path, sizeof path, "%s/model.safetensors", tmp);
	if (params_write(p, base, path, err) < 0 ||
	    convdir_write_json(tmp, "config.json", cfg, 1, err) < 0 ||
	    convdir_tokenizer(src, tmp, max_len, err) < 0)
		return -1;
	if (rename(tmp, dst) < 0)
		return lc_fail(err, "%s: %s", dst, strerror(errno));
	return 0;
}

int convdir_tokenizer(const char *src, const char *dir, int max_len, lc_err *err)
{
	char path[PATH_MAX];
	json_t *tcfg;
	int rc;

	snprintf(path, sizeof path, "%s/tokenizer_config.json", src);
	if (access(path, F_OK) == 0) {
		if (!(tcfg = cfg_load(path, err)))
			return -1;
		json_object_set_new(tcfg, "model_max_length", json_integer(max_len));
		rc = convdir_write_json(dir, "tokenizer_config.json", tcfg, 0, err);
		json_decref(tcfg);
		if (rc < 0)
			return -1;
	}
	for (size_t i = 0; i < sizeof copied / sizeof *copied; i++)
		if (copy_if(src, dir, copied[i], err) < 0)
			return -1;
	return 0;
}

void convdir_remove(const char *dir)
{
	static const char *const written[] = { "config.json", "model.safetensors",
	                                        "tokenizer_config.json" };
	char p[PATH_MAX];

	for (size_t i = 0; i < sizeof written / sizeof *written; i++) {
		snprintf(p, sizeof p, "%s/%s", dir, written[i]);
		unlink(p);
	}
	for (size_t i = 0; i < sizeof copied / sizeof *copied; i++) {
		snprintf(p, sizeof p, "%s/%s", dir, copied[i]);
		unlink(p);
	}
	rmdir(dir);
}
