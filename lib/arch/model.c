#include "arch/model.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/dtype.h"
#include "base/fileio.h"
#include "base/share.h"
#include "compute/compute.h"
#include "weights/config.h"
#include "weights/fairseq.h"
#include "weights/safetensors.h"
#include "weights/torchzip.h"

struct lc_model {
	char *dir;
	lc_config cfg;
	lc_gencfg gen;
	char gen_src[32];           /* the file gen came from */
	char *cfg_src;              /* where the configuration came from (--info) */
	char *cfg_text;             /* a fairseq checkpoint's config.json text, or NULL */
	lc_params *params;
	void *weights;
	st_file *st;
	tz_file *tz;
	uint64_t nparams, nbytes;
	char fp[17];
};

/* A fast 64-bit hash (FNV-style over 8-byte words). */
static uint64_t hash_bytes(uint64_t h, const void *p, uint64_t n)
{
	const unsigned char *s = p;
	uint64_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t w;
		memcpy(&w, s + i, 8);
		h = (h ^ w) * 0x100000001b3ull;
		h ^= h >> 29;
	}
	for (; i < n; i++)
		h = (h ^ s[i]) * 0x100000001b3ull;
	return h;
}

/* A zip archive (pytorch_model.bin) starts with "PK\\3\\4". */
static int is_zip(const char *path)
{
	unsigned char b[4] = { 0 };
	FILE *f = fopen(path, "rb");
	int r = 0;

	if (f) {
		r = fread(b, 1, 4, f) == 4 && b[0] == 'P' && b[1] == 'K' && b[2] == 3 && b[3] == 4;
		fclose(f);
	}
	return r;
}

/* Whether a model file is there: anything but a directory, so that one
 * that is not a regular file (a link to /dev/zero, a FIFO) is refused as
 * such (lc_regular_file, lc_small_file) before any open, not taken for
 * absent. */
static int file_exists(const char *path)
{
	return lc_file_kind(path) != LC_FILE_NONE;
}

static const st_tensor *at_st(const void *f, uint32_t i) { return st_at(f, i); }
static void rel_st(const void *f, const st_tensor *t) { st_release(f, t); }

/* eos_token_id: an id, or a list of them (transformers stops at any; the
 * first is the one beam search ends its hypotheses with). */
static int eos_ids(const json_t *root, const char *path, lc_gencfg *g, lc_err *err)
{
	const json_t *v = json_object_get(root, "eos_token_id"), *x;
	size_t i;

	if (!v || json_is_null(v))
		return 0;
	if (json_is_array(v) && json_array_size(v) > 0) {
		if (json_array_size(v) > LC_GEN_EOS_MAX)
			return lc_fail(err, "%s: \"eos_token_id\" lists %zu ids: lc takes %d at most",
			               path, json_array_size(v), LC_GEN_EOS_MAX);
		json_array_foreach(v, i, x) {
			if (!json_is_integer(x) || json_integer_value(x) < 0 ||
			    json_integer_value(x) > INT32_MAX)
				return lc_fail(err, "%s: \"eos_token_id\" must be an id or a list of ids",
				               path);
			if (i)
				g->eos_extra[i - 1] = (int)json_integer_value(x);
		}
		g->eos = (int)json_integer_value(json_array_get(v, 0));
		g->neos_extra = (int)json_array_size(v) - 1;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > INT32_MAX)
		return lc_fail(err, "%s: \"eos_token_id\" must be an id or a list of ids", path);
	g->eos = (int)json_integer_value(v);
	return 0;
}

/* The first key transformers would apply and lc does not, set to
 * something other than its default (null, an empty list, the neutral
 * number); NULL when none is. */
static const char *ignored_key(const json_t *root)
{
	static const struct { const char *key; double neutral; } keys[] = {
		{ "bad_words_ids", NAN }, { "suppress_tokens", NAN }, { "begin_suppress_tokens", NAN },
		{ "forced_decoder_ids", NAN }, { "sequence_bias", NAN }, { "force_words_ids", NAN },
		{ "constraints", NAN }, { "exponential_decay_length_penalty", NAN },
		{ "penalty_alpha", NAN }, { "num_beam_groups", 1 }, { "diversity_penalty", 0 },
		{ "encoder_repetition_penalty", 1 }, { "encoder_no_repeat_ngram_size", 0 },
		{ "typical_p", 1 }, { "epsilon_cutoff", 0 }, { "eta_cutoff", 0 },
		{ "renormalize_logits", 0 }, { "guidance_scale", 1 },
	};

	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
		const json_t *v = json_object_get(root, keys[i].key);
		if (!v || json_is_null(v) || json_is_false(v) ||
		    (json_is_array(v) && json_array_size(v) == 0) ||
		    (json_is_object(v) && json_object_size(v) == 0) ||
		    (json_is_number(v) && json_number_value(v) == keys[i].neutral))
			continue;
		return keys[i].key;
	}
	return NULL;
}

/* Python's truth of a JSON value (BartConfig tests the key so): false for
 * absent, null, false, 0, "", [] and {}. */
static int truthy(const json_t *v)
{
	if (!v || json_is_null(v) || json_is_false(v))
		return 0;
	if (json_is_number(v))
		return json_number_value(v) != 0;
	if (json_is_string(v))
		return json_string_length(v) > 0;
	if (json_is_array(v))
		return json_array_size(v) > 0;
	if (json_is_object(v))
		return json_object_size(v) > 0;
	return 1;
}

/* Generation settings from a BART config.json (no generation_config.json,
 * or one "_from_model_config"), as transformers 4.36.2 makes them: its
 * BartConfig (LSG's subclasses it) fills forced_eos_token_id with 2 when
 * the key is absent, sets forced_bos_token_id to bos_token_id for the old
 * CNN checkpoints' "force_bos_token_to_be_generated": true (where no
 * forced_bos_token_id is given), and a key set to null is None:
 * eos_token_id null never stops at an eos, decoder_start_token_id null
 * starts with bos_token_id (BartConfig's 0 when absent; null as well:
 * generate() refuses). GenerationConfig.from_model_config copies them. */
static int bart_defaults(const json_t *root, const char *path, const char *src, lc_gencfg *g,
                         lc_err *err)
{
	const json_t *fb = json_object_get(root, "force_bos_token_to_be_generated");
	const json_t *bos = json_object_get(root, "bos_token_id");
	int b = CFG_UNSET;

	if (cfg_int(root, "bos_token_id", 0, 0, INT32_MAX, &b, path, err) < 0)
		return -1;
	if (bos && json_is_null(bos))
		b = -1;
	if (!json_object_get(root, "forced_eos_token_id")) {
		g->forced_eos = 2;
		g->forced_eos_default = 1;
		g->source = src;
	}
	if (truthy(fb) && g->forced_bos < 0 && b >= 0) {
		g->forced_bos = b;
		g->source = src;
	}
	if (json_is_null(json_object_get(root, "eos_token_id"))) {
		g->eos_none = 1;
		g->source = src;
	}
	if (json_is_null(json_object_get(root, "decoder_start_token_id"))) {
		g->decoder_start = b;
		g->start_none = b < 0;
		g->source = src;
	}
	return 0;
}

/* All of g unset (-1, NAN, none). */
static void gencfg_reset(lc_gencfg *g)
{
	g->num_beams = g->max_new = g->min_new = g->min_length = g->no_repeat_ngram = -1;
	g->early_stopping = g->forced_bos = g->forced_eos = g->eos = g->decoder_start = -1;
	g->neos_extra = g->eos_none = g->start_none = g->forced_eos_default = 0;
	g->ignored = NULL;
	g->length_penalty = g->repetition_penalty = NAN;
	g->source = NULL;
}

int model_gencfg_parse(const json_t *root, const char *path, const char *src, int hf_bart,
                       lc_gencfg *g, lc_err *err)
{
	const json_t *es;
	int v;
	double x;

	gencfg_reset(g);
	if (!json_is_object(root))
		return lc_fail(err, "%s: not a JSON object", path);
#define INT(key, lo, hi, field) do { if (cfg_int(root, key, CFG_UNSET, lo, hi, &v, path, err) < 0) return -1; \
	if (v != CFG_UNSET) { field = v; g->source = src; } } while (0)
#define NUM(key, lo, hi, field) do { if (cfg_num(root, key, NAN, lo, hi, &x, path, err) < 0) return -1; \
	if (!isnan(x)) { field = x; g->source = src; } } while (0)
	INT("num_beams", 1, 1024, g->num_beams);
	/* 1 leaves no token after the decoder start (generate() makes one all
	 * the same, with a warning, and no forced eos): refused, not ignored */
	INT("max_length", 2, 1 << 24, v);
	if (v != CFG_UNSET)
		g->max_new = v - 1;
	INT("max_new_tokens", 1, 1 << 24, g->max_new);
	INT("min_length", 0, 1 << 24, g->min_length);
	INT("min_new_tokens", 0, 1 << 24, g->min_new);
	INT("no_repeat_ngram_size", 0, 1 << 20, g->no_repeat_ngram);
	INT("forced_bos_token_id", 0, INT32_MAX, g->forced_bos);
	INT("forced_eos_token_id", 0, INT32_MAX, g->forced_eos);
	if (strcmp(src, "generation_config.json") == 0) {
		/* transformers generates with this file's own: the decoder start
		 * (else its bos_token_id; neither: generate() refuses), its eos
		 * (none: no stop at an eos), not config.json's */
		INT("decoder_start_token_id", 0, INT32_MAX, g->decoder_start);
		if (g->decoder_start < 0)   /* generate() starts with bos_token_id then */
			INT("bos_token_id", 0, INT32_MAX, g->decoder_start);
		g->start_none = g->decoder_start < 0;
		if (g->start_none)  /* the file that refuses it, named */
			g->source = src;
		if (eos_ids(root, path, g, err) < 0)
			return -1;
		g->eos_none = g->eos < 0;
	} else if (hf_bart && bart_defaults(root, path, src, g, err) < 0) {
		return -1;
	}
	g->ignored = ignored_key(root);
	if (g->eos >= 0 || g->ignored)
		g->source = src;
	NUM("length_penalty", -1e6, 1e6, g->length_penalty);
	NUM("repetition_penalty", 1e-6, 1e6, g->repetition_penalty);
#undef INT
#undef NUM
	es = json_object_get(root, "early_stopping");
	if (json_is_boolean(es)) {
		g->early_stopping = json_is_true(es);
		g->source = src;
	} else if (json_is_string(es) && !strcmp(json_string_value(es), "never")) {
		g->early_stopping = 2;
		g->source = src;
	} else if (es && !json_is_null(es)) {
		return lc_fail(err, "%s: \"early_stopping\" must be true, false or \"never\"", path);
	}
	return 0;
}

/* transformers' GenerationConfig: generation_config.json when the directory
 * has one, else the same keys of config.json; config.json's also when
 * generation_config.json was made from it ("_from_model_config": true), as
 * generate() then rebuilds the settings from config.json (with a warning
 * when they differ: someone edited config.json's). */
static int read_generation(lc_model *m, lc_err *err)
{
	char path[4096], *src = m->gen_src;
	json_t *root;
	int rc;

	gencfg_reset(&m->gen);
	snprintf(path, sizeof path, "%s/generation_config.json", m->dir);
	if (!file_exists(path))
		snprintf(path, sizeof path, "%s/config.json", m->dir);
	if (!file_exists(path) && m->tz && tz_meta(m->tz))
		return 0;   /* a fairseq checkpoint's directory: none */
	if (!(root = cfg_load(path, err)))
		return -1;
	if (json_is_true(json_object_get(root, "_from_model_config"))) {
		char cpath[4096];
		snprintf(cpath, sizeof cpath, "%s/config.json", m->dir);
		if (file_exists(cpath)) {
			json_decref(root);
			snprintf(path, sizeof path, "%s", cpath);
			if (!(root = cfg_load(path, err)))
				return -1;
		}
	}
	snprintf(src, sizeof m->gen_src, "%s", strrchr(path, '/') ? strrchr(path, '/') + 1 : path);
	rc = model_gencfg_parse(root, path, src, m->cfg.arch && m->cfg.arch->hf_bart, &m->gen, err);
	json_decref(root);
	return rc;
}
static const st_tensor *at_tz(const void *f, uint32_t i) { return tz_at(f, i); }

/* When dir is the default model directory (model_locate with no -m and no
 * $LC_MODEL), says so in front of err, with where the default came from,
 * so that a program run with nothing set says which directory it tried
 * and why. */
static void default_why(const char *dir, lc_err *err)
{
	const char *m = getenv("LC_MODEL");
	char def[4096];
	enum share_from from;

	if (m && *m)
		return;
	share_path("models/demo", def, sizeof def, &from);
	if (!strcmp(dir, def))
		lc_prefix(err, "the default model (%s; use -m or $LC_MODEL)", share_from_name(from));
}

static int ends_pt(const char *s)
{
	size_t n = strlen(s);
	return n > 3 && !strcmp(s + n - 3, ".pt");
}

/* A model directory without config.json may hold one fairseq checkpoint:
 * 1 and *pt (malloc'd) when it holds exactly one *.pt, 0 when none, -1
 * and err listing them when several. */
static int find_pt(const char *dir, char **pt, lc_err *err)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char list[768] = "";
	int n = 0;

	*pt = NULL;
	if (!d)     /* a directory it may not read: say why, not "no config.json" */
		return errno == ENOENT ? 0 : lc_fail(err, "%s: %s", dir, strerror(errno));
	while ((e = readdir(d))) {
		char p[4096];
		if (!ends_pt(e->d_name))
			continue;
		snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
		if (!file_exists(p))
			continue;
		if (n++ == 0 && !(*pt = strdup(p))) {
			closedir(d);
			return lc_fail(err, "out of memory");
		}
		if (strlen(list) + strlen(e->d_name) + 8 < sizeof list)
			snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", n > 1 ? ", " : "",
			         e->d_name);
	}
	closedir(d);
	if (n > 1) {
		free(*pt);
		*pt = NULL;
		return lc_fail(err, "%s: no config.json and %d fairseq checkpoints (%s): give one with "
		               "-m %s/FILE.pt", dir, n, list, dir);
	}
	return n;
}

/* A fairseq checkpoint: its state dict and its arguments as the config
 * (weights/fairseq.h); the arguments' JSON goes into the fingerprint. */
static int open_fairseq(lc_model *m, const char *pt, uint64_t *h, lc_err *err)
{
	json_t *c;
	const char *src;
	char *dump, label[4200];

	if (!(m->tz = tz_open_ckpt(pt, "model", err)) || !(c = fs_config(m->tz, pt, &src, err)))
		return -1;
	snprintf(label, sizeof label, "%s (fairseq %s)", pt, src);
	if (arch_config_json(c, label, &m->cfg, err) < 0) {
		json_decref(c);
		return -1;
	}
	dump = cfg_dump_hf(c, 1);
	json_decref(c);
	if (!dump || !(m->cfg_src = strdup(label))) {
		free(dump);
		return lc_fail(err, "%s: out of memory", pt);
	}
	*h = hash_bytes(*h, dump, strlen(dump));
	m->cfg_text = dump;   /* what a directory of this model writes as config.json */
	return 0;
}

lc_model *model_open(const char *dir, unsigned flags, lc_err *err)
{
	lc_model *m = calloc(1, sizeof *m);
	char *path = NULL, *wfile = NULL;
	size_t plen;
	uint64_t h = 0xcbf29ce484222325ull;
	struct stat sb;

	if (!m) {
		lc_fail(err, "out of memory");
		return NULL;
	}
	if (cmp_init(err) < 0)
		goto fail;
	if (stat(dir, &sb) < 0) {
		lc_fail(err, "%s: %s", dir, strerror(errno));
		goto fail;
	}
	if (S_ISREG(sb.st_mode)) {
		const char *slash = strrchr(dir, '/');
		if (!(wfile = strdup(dir)))
			goto oom;
		m->dir = slash ? strndup(dir, (size_t)(slash - dir)) : strdup(".");
	} else if (S_ISDIR(sb.st_mode)) {
		m->dir = strdup(dir);
	} else {
		lc_fail(err, "%s: not a directory", dir);
		goto fail;
	}
	if (!m->dir)
		goto oom;
	plen = strlen(m->dir) + 64;
	if (!(path = malloc(plen)))
		goto oom;
	snprintf(path, plen, "%s/" MODEL_FRESH_MARK, m->dir);
	if (!(flags & MODEL_FRESH) && file_exists(path)) {
		lc_fail(err, "%s: an lc-train run's directory before its first checkpoint (random "
		        "initial weights; killed or still running): run lc-train again to train it",
		        m->dir);
		goto fail;
	}
	snprintf(path, plen, "%s/config.json", m->dir);
	if (wfile ? ends_pt(wfile) : !file_exists(path)) {
		int r = wfile ? 1 : find_pt(m->dir, &wfile, err);
		if (r < 0)
			goto fail;
		if (r == 0) {
			lc_fail(err, "%s: no config.json (nor a fairseq checkpoint, *.pt)", m->dir);
			goto fail;
		}
		if (lc_regular_file(wfile, err) < 0 || open_fairseq(m, wfile, &h, err) < 0 ||
		    read_generation(m, err) < 0)
			goto fail;
	} else {
		FILE *f;
		char buf[4096];
		size_t got;
		if (arch_config(path, &m->cfg, err) < 0 || read_generation(m, err) < 0)
			goto fail;
		if (!(m->cfg_src = strdup(path)))
			goto oom;
		f = fopen(path, "rb");
		while (f && (got = fread(buf, 1, sizeof buf, f)) > 0)
			h = hash_bytes(h, buf, got);
		if (f)
			fclose(f);
	}
	if (!(m->weights = arch_weights_new(&m->cfg, NULL, &m->params, err)))
		goto fail;
	if (!wfile) {
		snprintf(path, plen, "%s/model.safetensors", m->dir);
		if (!file_exists(path)) {
			snprintf(path, plen, "%s/pytorch_model.bin", m->dir);
			if (!file_exists(path)) {
				lc_fail(err, "%s: no model.safetensors or pytorch_model.bin", m->dir);
				goto fail;
			}
		}
		if (!(wfile = strdup(path)))
			goto oom;
	}
	if (!m->tz && lc_regular_file(wfile, err) < 0)
		goto fail;
	if (m->tz) {
		if (params_bind_tensors(m->params, at_tz, NULL, m->tz, tz_count(m->tz), wfile, err) < 0)
			goto fail;
	} else if (is_zip(wfile)) {
		if (!(m->tz = tz_open(wfile, err)) ||
		    params_bind_tensors(m->params, at_tz, NULL, m->tz, tz_count(m->tz), wfile, err) < 0)
			goto fail;
	} else {
		if (!(m->st = st_open(wfile, err)) ||
		    params_bind_tensors(m->params, at_st, flags & MODEL_COPY ? rel_st : NULL, m->st,
		                        st_count(m->st), wfile, err) < 0)
			goto fail;
	}
	for (uint32_t i = 0; i < params_count(m->params); i++) {
		const lc_param *e = params_at(m->params, i);
		const char *what;
		int64_t bad = *e->slot ? lc_first_nonfinite(*e->slot, e->numel, &what) : -1;
		/* a NaN weight would make every output NaN, silently */
		if (bad >= 0) {
			lc_fail(err, "%s: tensor \"%s\": element %lld is %s%s", wfile, e->name,
			        (long long)bad, what, strcmp(what, "NaN") ? " (or a float64 weight "
			        "beyond float32's range, 3.4e38)" : "");
			goto fail;
		}
		m->nparams += e->numel;
		/* unchanged while the model is open: bf16 products keep a copy */
		if (*e->slot)
			cmp_constant(*e->slot, (int64_t)e->numel);
		h = hash_bytes(h, e->name, strlen(e->name));
		if (e->src) {   /* absent optional parameters are zeros */
			m->nbytes += e->src->nbytes;
			/* float32's bytes from the copy, the same bytes: the
			 * mapping's pages stay given back */
			if (e->src->dtype == ST_F32 && *e->slot)
				h = hash_bytes(h, *e->slot, e->src->nbytes);
			else {
				h = hash_bytes(h, e->src->data, e->src->nbytes);
				st_release(m->st, e->src);
			}
		}
	}
	snprintf(m->fp, sizeof m->fp, "%016llx", (unsigned long long)h);
	free(path);
	free(wfile);
	return m;
oom:
	lc_fail(err, "%s: out of memory", dir);
fail:
	default_why(dir, err);
	free(path);
	free(wfile);
	model_free(m);
	return NULL;
}

void model_free(lc_model *m)
{
	if (!m)
		return;
	for (uint32_t i = 0; m->params && i < params_count(m->params); i++) {
		const lc_param *e = params_at(m->params, i);
		if (*e->slot)
			cmp_constant_drop(*e->slot);
	}
	if (m->cfg.arch)
		arch_weights_free(&m->cfg, m->weights, m->params);
	st_close(m->st);
	tz_close(m->tz);
	free(m->cfg_src);
	free(m->cfg_text);
	free(m->dir);
	free(m);
}

const lc_config *model_config(const lc_model *m) { return &m->cfg; }
const char *model_dir(const lc_model *m) { return m->dir; }
const char *model_config_text(const lc_model *m) { return m->cfg_text; }
const void *model_weights(const lc_model *m) { return m->weights; }
const lc_params *model_params(const lc_model *m) { return m->params; }
const char *model_config_source(const lc_model *m) { return m->cfg_src; }
const lc_gencfg *model_generation(const lc_model *m) { return &m->gen; }
uint64_t model_nparams(const lc_model *m) { return m->nparams; }
uint64_t model_nbytes(const lc_model *m) { return m->nbytes; }
const char *model_fingerprint(const lc_model *m) { return m->fp; }

const float *model_tensor(const lc_model *m, const char *name, uint32_t rank,
                          const uint64_t *dims, lc_err *err)
{
	const lc_param *e = params_find(m->params, name);
	int same;

	if (!e) {
		lc_fail(err, "%s: no parameter \"%s\"", m->dir, name);
		return NULL;
	}
	same = e->rank == rank;
	for (uint32_t i = 0; same && i < rank; i++)
		same = e->dims[i] == dims[i];
	if (!same) {
		lc_fail(err, "%s: parameter \"%s\" is not of the shape asked for", m->dir, name);
		return NULL;
	}
	return *e->slot;
}

void model_info(const lc_model *m, FILE *f)
{
	fprintf(f, "model\t%s\n", m->dir);
	fprintf(f, "config\t%s\n", m->cfg_src);
	fprintf(f, "fingerprint\t%s\n", m->fp);
	fprintf(f, "architecture\t%s\n", m->cfg.arch->name);
	m->cfg.arch->info(&m->cfg, f);
	fprintf(f, "parameters\t%llu\nweight_bytes\t%llu\n", (unsigned long long)m->nparams,
	        (unsigned long long)m->nbytes);
}

int model_write_random(const char *dir, uint64_t seed, lc_err *err)
{
	lc_config c;
	lc_params *p = NULL;
	void *w = NULL;
	float *base = NULL;
	char *path = NULL;
	size_t plen = strlen(dir) + 64;
	int rc = -1;

	if (!(path = malloc(plen)))
		return lc_fail(err, "out of memory");
	snprintf(path, plen, "%s/config.json", dir);
	if (arch_config(path, &c, err) < 0 || !(w = arch_weights_new(&c, NULL, &p, err)))
		goto out;
	if (!(base = malloc((params_total(p) ? params_total(p) : 1) * sizeof *base))) {
		lc_fail(err, "out of memory for %llu parameters", (unsigned long long)params_total(p));
		goto out;
	}
	params_init(p, base, seed);
	/* whole or not at all: written beside, then renamed into place (path
	 * ends ".tmp"; without those 4 bytes it names the file) */
	snprintf(path, plen, "%s/model.safetensors.tmp", dir);
	if ((rc = params_write(p, base, path, err)) == 0) {
		char to[4096];
		snprintf(to, sizeof to, "%.*s", (int)strlen(path) - 4, path);
		if (rename(path, to) < 0)
			rc = lc_fail(err, "%s: %s", to, strerror(errno));
	}
	if (rc < 0)
		unlink(path);
out:
	if (w)
		arch_weights_free(&c, w, p);
	free(base);
	free(path);
	return rc;
}

const char *model_locate(const char *opt, char *buf, size_t n)
{
	const char *m = getenv("LC_MODEL");

	if (opt && *opt)
		snprintf(buf, n, "%s", opt);
	else if (m && *m)
		snprintf(buf, n, "%s", m);
	else
		share_path("models/demo", buf, n, NULL);
	return buf;
}
