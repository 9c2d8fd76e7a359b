#include "weights/config.h"

static json_t *checked(json_t *root, const json_error_t *je, const char *path, lc_err *err)
{
	if (!root) {
		lc_fail(err, "%s: %s (line %d)", path, je->text, je->line);
		return NULL;
	}
	if (!json_is_object(root)) {
		json_decref(root);
		lc_fail(err, "%s: not a JSON object", path);
		return NULL;
	}
	return root;
}

json_t *cfg_load(const char *path, lc_err *err)
{
	json_error_t je;

	return checked(json_load_file(path, JSON_REJECT_DUPLICATES, &je), &je, path, err);
}

json_t *cfg_parse(const char *buf, size_t len, const char *label, lc_err *err)
{
	json_error_t je;

	return checked(json_loadb(buf, len, JSON_REJECT_DUPLICATES, &je), &je, label, err);
}

static const json_t *get(const json_t *root, const char *key)
{
	const json_t *v = json_object_get(root, key);
	return v && !json_is_null(v) ? v : NULL;
}

int cfg_int(const json_t *root, const char *key, int def, int lo, int hi, int *out,
            const char *path, lc_err *err)
{
	const json_t *v = get(root, key);

	if (!v) {
		if (def == CFG_REQUIRED)
			return lc_fail(err, "%s: \"%s\" is missing", path, key);
		*out = def;
		return 0;
	}
	if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi)
		return lc_fail(err, "%s: \"%s\" must be an integer in [%d, %d]", path, key, lo, hi);
	*out = (int)json_integer_value(v);
	return 0;
}

int cfg_bool(const json_t *root, const char *key, int def, int *out, const char *path,
             lc_err *err)
{
	const json_t *v = get(root, key);

	if (!v) {
		*out = def;
		return 0;
	}
	if (!json_is_boolean(v))
		return lc_fail(err, "%s: \"%s\" must be true or false", path, key);
	*out = json_is_true(v);
	return 0;
}

int cfg_num(const json_t *root, const char *key, double def, double lo, double hi, double *out,
            const char *path, lc_err *err)
{
	const json_t *v = get(root, key);

	if (!v) {
		*out = def;
		return 0;
	}
	if (!json_is_number(v) || !(json_number_value(v) >= lo && json_number_value(v) <= hi))
		return lc_fail(err, "%s: \"%s\" must be a number in [%g, %g]", path, key, lo, hi);
	*out = json_number_value(v);
	return 0;
}

int cfg_str(const json_t *root, const char *key, const char *def, const char **out,
            const char *path, lc_err *err)
{
	const json_t *v = get(root, key);

	if (!v) {
		*out = def;
		return 0;
	}
	if (!json_is_string(v))
		return lc_fail(err, "%s: \"%s\" must be a string", path, key);
	*out = json_string_value(v);
	return 0;
}
