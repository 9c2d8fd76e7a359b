#include "arch/arch.h"

#include <string.h>

#include "arch/bart.h"
#include "arch/bartls.h"
#include "arch/locost.h"
#include "arch/lsg.h"
#include "arch/topdown.h"
#include "weights/config.h"

/* Every architecture lc runs: one line each. */
static const lc_arch *const archs[] = {
	&arch_locost,
	&arch_bart,
	&arch_lsg_bart,
	&arch_bart_ls,
	&arch_bart_topdown,
};

#define NARCH (sizeof archs / sizeof *archs)

const lc_arch *arch_find(const json_t *root, const char *path, lc_err *err)
{
	const json_t *a = json_object_get(root, "architectures"), *v;
	const char *mt = NULL;
	size_t i, k;
	char known[512];
	size_t o = 0;

	if (a && !json_is_null(a)) {
		if (!json_is_array(a) || json_array_size(a) == 0)
			goto bad_arch;
		json_array_foreach(a, i, v) {
			if (!json_is_string(v))
				goto bad_arch;
			for (k = 0; k < NARCH; k++)
				for (const char *const *c = archs[k]->hf_classes; c && *c; c++)
					if (!strcmp(*c, json_string_value(v)))
						return archs[k];
		}
	}
	if (cfg_str(root, "model_type", NULL, &mt, path, err) < 0)
		return NULL;
	if (mt) {
		for (k = 0; k < NARCH; k++)
			if (archs[k]->model_type && !strcmp(archs[k]->model_type, mt))
				return archs[k];
	}
	if (!mt && (!a || json_is_null(a)))
		return &arch_locost;
	known[0] = 0;
	for (k = 0; k < NARCH; k++)
		for (const char *const *c = archs[k]->hf_classes; c && *c && o < sizeof known; c++)
			o += (size_t)snprintf(known + o, sizeof known - o, "%s%s", o ? ", " : "", *c);
	v = a && json_is_array(a) ? json_array_get(a, 0) : NULL;
	lc_fail(err, "%s: architecture \"%s\" is not one lc runs (lc runs %s)", path,
	        v && json_is_string(v) ? json_string_value(v) : mt, known);
	return NULL;
bad_arch:
	lc_fail(err, "%s: \"architectures\" must be a non-empty list of strings", path);
	return NULL;
}

int arch_config_json(const json_t *root, const char *label, lc_config *c, lc_err *err)
{
	memset(c, 0, sizeof *c);
	if (!(c->arch = arch_find(root, label, err)))
		return -1;
	return c->arch->config(root, label, c, err);
}

int arch_config(const char *path, lc_config *c, lc_err *err)
{
	json_t *root = cfg_load(path, err);
	int rc;

	memset(c, 0, sizeof *c);
	if (!root)
		return -1;
	rc = arch_config_json(root, path, c, err);
	json_decref(root);
	return rc;
}

void *arch_weights_new(const lc_config *c, float *base, lc_params **pp, lc_err *err)
{
	lc_params *p = params_new();
	void *w = p ? c->arch->declare(c, p) : NULL;

	if (!w || params_status(p, err) < 0) {
		if (!w)
			lc_fail(err, "out of memory declaring the parameters");
		arch_weights_free(c, w, p);
		return NULL;
	}
	if (base)
		params_bind_flat(p, base);
	*pp = p;
	return w;
}

void arch_weights_free(const lc_config *c, void *w, lc_params *p)
{
	if (w)
		c->arch->weights_free(w);
	params_free(p);
}

int arch_config_check(const char *path, lc_err *err)
{
	lc_config c;
	lc_params *p = NULL;
	void *w;

	if (arch_config(path, &c, err) < 0)
		return -1;
	if (!(w = arch_weights_new(&c, NULL, &p, err)))
		return lc_prefix(err, "%s", path);
	arch_weights_free(&c, w, p);
	return 0;
}
