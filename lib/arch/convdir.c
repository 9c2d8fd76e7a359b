/*
 * convdir.c: the converters' shared steps (see convdir.h).
 */
#include "arch/convdir.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "arch/model.h"
#include "base/fileio.h"
#include "base/sigclean.h"
#include "weights/config.h"

/* Files a conversion writes itself. */
static const char *const written[] = { "config.json", "model.safetensors",
                                        "tokenizer_config.json" };

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

/* What a failed conversion wrote into dir, then dir. */
static void remove_partial(const char *dir)
{
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

/* A conversion interrupted (SIGINT, SIGTERM, SIGHUP) while it writes
 * removes what it wrote (gigabytes, for a large model) and dies of the
 * signal (base/sigclean.h): the paths are made before it is armed. */
enum { NWRITTEN = sizeof written / sizeof *written,
       NPARTIAL = NWRITTEN + sizeof copied / sizeof *copied };
static char partial[NPARTIAL + 1][PATH_MAX];       /* the files, then the directory */
static const char *partial_p[NPARTIAL];

static void guard(const char *dir)
{
	for (int i = 0; i < NPARTIAL; i++) {
		snprintf(partial[i], PATH_MAX, "%s/%s", dir,
		         i < NWRITTEN ? written[i] : copied[i - NWRITTEN]);
		partial_p[i] = partial[i];
	}
	snprintf(partial[NPARTIAL], PATH_MAX, "%s", dir);
	sigclean_begin(partial_p, NPARTIAL, partial[NPARTIAL]);
}

static void note(const convdir *cv, const char *what)
{
	if (cv->progress)
		cv->progress(cv->ctx, what);
}

/* Whether directory dir holds a *.pt file. */
static int has_pt(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = 0;

	while (d && !found && (e = readdir(d))) {
		size_t n = strlen(e->d_name);
		found = n > 3 && !strcmp(e->d_name + n - 3, ".pt");
	}
	if (d)
		closedir(d);
	return found;
}

int convdir_open(convdir *cv, const char *src, const char *dst, int max_len,
                 void (*progress)(void *ctx, const char *what), void *ctx, lc_err *err)
{
	struct stat st;

	memset(cv, 0, sizeof *cv);
	cv->src = src;
	{
		/* "out/" (tab completion's) names the directory "out"; its
		 * parent must exist, said as such (not as the temporary's
		 * "out/.tmp-PID-0: No such file or directory") */
		size_t n = strlen(dst);
		char parent[PATH_MAX], *slash;
		while (n > 1 && dst[n - 1] == '/')
			n--;
		if (n >= sizeof cv->dstbuf)
			return lc_fail(err, "%s: path too long", dst);
		memcpy(cv->dstbuf, dst, n);
		cv->dstbuf[n] = 0;
		dst = cv->dst = cv->dstbuf;
		snprintf(parent, sizeof parent, "%s", dst);
		if ((slash = strrchr(parent, '/')) && slash != parent) {
			*slash = 0;
			if (stat(parent, &st) < 0)
				return lc_fail(err, "%s: its directory %s: %s", dst, parent, strerror(errno));
			if (!S_ISDIR(st.st_mode))
				return lc_fail(err, "%s: its directory %s is not a directory", dst, parent);
		}
	}
	cv->max_len = max_len;
	cv->progress = progress;
	cv->ctx = ctx;
	if (max_len < 1 || max_len > (1 << 24))
		return lc_fail(err, "--max-len %d is outside 1..%d", max_len, 1 << 24);
	if (stat(dst, &st) == 0)
		return lc_fail(err, "%s exists; lc-convert writes a new directory", dst);
	if (stat(src, &st) == 0 && !S_ISDIR(st.st_mode))
		return lc_fail(err, "%s: not a directory: lc-convert reads a transformers model "
		               "directory (config.json and its weights; a fairseq .pt is read by "
		               "lc-encode, lc-decode and lc-train directly)", src);
	snprintf(cv->cfg_path, sizeof cv->cfg_path, "%s/config.json", src);
	if (stat(cv->cfg_path, &st) < 0 && errno == ENOENT && has_pt(src))
		return lc_fail(err, "%s: a fairseq checkpoint's directory (a .pt, no config.json): "
		               "lc-encode, lc-decode and lc-train read it directly; lc-convert "
		               "converts transformers model directories", src);
	if (!(cv->scfg = cfg_load(cv->cfg_path, err)))
		return -1;
	return arch_config_json(cv->scfg, cv->cfg_path, &cv->sc, err);
}

json_t *convdir_config(const convdir *cv, const char *cls, const char *name, lc_err *err)
{
	json_t *root = json_deep_copy(cv->scfg), *arch = json_array();

	if (!root || !arch || json_array_append_new(arch, json_string(cls)) < 0) {
		json_decref(root);
		json_decref(arch);
		lc_fail(err, "out of memory");
		return NULL;
	}
	json_object_set_new(root, "architectures", arch);   /* takes arch, even when it fails */
	json_object_set_new(root, "_name_or_path", json_string(name ? name : cv->dst));
	json_object_set_new(root, "max_position_embeddings", json_integer(cv->max_len));
	return root;
}

void convdir_bart_generation(const convdir *cv, json_t *root)
{
	const lc_gencfg *g = model_generation(cv->m);

	/* where config.json gives the settings, the source model read them
	 * with BartConfig's rules (model.c's bart_defaults) */
	if (!cv->sc.arch || !cv->sc.arch->hf_bart || !g->source || strcmp(g->source, "config.json"))
		return;
	if (g->forced_eos >= 0)
		json_object_set_new(root, "forced_eos_token_id", json_integer(g->forced_eos));
	if (g->forced_bos >= 0)
		json_object_set_new(root, "forced_bos_token_id", json_integer(g->forced_bos));
}

int convdir_read(convdir *cv, lc_err *err)
{
	note(cv, "reading the model");
	return (cv->m = model_open(cv->src, 0, err)) ? 0 : -1;
}

int convdir_target(convdir *cv, json_t *dcfg, lc_err *err)
{
	uint64_t n;

	cv->dcfg = dcfg;
	if (!dcfg || arch_config_json(dcfg, "the converted config.json", &cv->c, err) < 0 ||
	    !(cv->w = arch_weights_new(&cv->c, NULL, &cv->p, err)))
		return -1;
	n = params_total(cv->p);
	if (!(cv->base = malloc((n ? n : 1) * sizeof *cv->base)))
		return lc_fail(err, "out of memory for %llu parameters", (unsigned long long)n);
	note(cv, "converting the weights");
	return 0;
}

int convdir_source(const convdir *cv, const char *name, const lc_param *e, float *to,
                   const lc_param **se, lc_err *err)
{
	*se = params_find(model_params(cv->m), name);
	if (*se && *(*se)->slot)
		return 1;
	memset(to, 0, e->numel * sizeof *to);
	if (e->flags & PARAM_OPTIONAL)
		return 0;
	return lc_fail(err, "%s: no tensor %s", cv->src, name);
}

int convdir_write(convdir *cv, lc_err *err)
{
	char tmp[PATH_MAX], path[PATH_MAX];

	note(cv, "writing");
	/* not mkdtemp, which makes it 0700: a model directory is made as
	 * mkdir makes one (0777 less the umask), as lc-train's are */
	for (int i = 0;; i++) {
		int e;

		snprintf(tmp, sizeof tmp, "%s.tmp-%ld-%d", cv->dst, (long)getpid(), i);
		/* armed before the mkdir: a signal right after it, before
		 * guard, would otherwise leave the directory (the handler's
		 * rmdir of one not made fails, of a stale empty one of this
		 * pid's name removes it) */
		sigclean_begin(NULL, 0, tmp);
		if (mkdir(tmp, 0777) == 0)
			break;
		e = errno;
		sigclean_end();
		if (e != EEXIST || i == 99)
			return lc_fail(err, "%s: %s", tmp, strerror(e));
	}
	guard(tmp);
	snprintf(path, sizeof path, "%s/model.safetensors", tmp);
	if (params_write(cv->p, cv->base, path, err) < 0 ||
	    convdir_write_json(tmp, "config.json", cv->dcfg, 1, err) < 0 ||
	    convdir_tokenizer(cv->src, tmp, cv->max_len, err) < 0)
		goto fail;
	/* on disk before the rename names them (after a power cut, a model
	 * directory of empty files would otherwise look complete), and the
	 * rename itself after it */
	for (int i = 0; i < NPARTIAL; i++)
		if (access(partial[i], F_OK) == 0 && lc_fsync_path(partial[i], err) < 0)
			goto fail;
	if (lc_fsync_path(tmp, err) < 0)
		goto fail;
	if (rename(tmp, cv->dst) < 0) {
		lc_fail(err, "%s: %s", cv->dst, strerror(errno));
		goto fail;
	}
	sigclean_end();
	{
		char parent[PATH_MAX];
		lc_parent_dir(cv->dst, parent, sizeof parent);
		return lc_fsync_path(parent, err);
	}
fail:
	remove_partial(tmp);
	sigclean_end();
	return -1;
}

void convdir_close(convdir *cv)
{
	free(cv->base);
	if (cv->w)
		arch_weights_free(&cv->c, cv->w, cv->p);
	model_free(cv->m);
	json_decref(cv->scfg);
	json_decref(cv->dcfg);
	memset(cv, 0, sizeof *cv);
}
