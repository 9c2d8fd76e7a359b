#include "train/adamw.h"

#include <math.h>
#include <string.h>

void adamw_update(float *w, const float *g, float *m, float *v, uint64_t n, int64_t t,
                  double lr, const adamw_opts *o, int decay)
{
	double b1 = o->beta1, b2 = o->beta2;
	double c1 = 1.0 - pow(b1, (double)t), c2 = 1.0 - pow(b2, (double)t);
	double wd = decay ? lr * o->weight_decay : 0;

	for (uint64_t i = 0; i < n; i++) {
		double mi = b1 * m[i] + (1 - b1) * g[i];
		double vi = b2 * v[i] + (1 - b2) * (double)g[i] * g[i];
		m[i] = (float)mi;
		v[i] = (float)vi;
		w[i] = (float)(w[i] - wd * w[i] - lr * (mi / c1) / (sqrt(vi / c2) + o->eps));
	}
}

double grad_clip(float *g, uint64_t n, double max_norm)
{
	double ss = 0, norm;

	for (uint64_t i = 0; i < n; i++)
		ss += (double)g[i] * g[i];
	norm = sqrt(ss);
	if (max_norm > 0 && norm > max_norm) {
		float s = (float)(max_norm / norm);
		for (uint64_t i = 0; i < n; i++)
			g[i] *= s;
	}
	return norm;
}

double lr_at(enum lr_sched s, double base, int64_t t, int64_t warmup)
{
	double tt = t < 1 ? 1.0 : (double)t, w = (double)warmup;

	if (s == LR_INVSQRT) {
		if (warmup <= 0)
			return base / sqrt(tt);
		return base * fmin(tt / w, sqrt(w / tt));
	}
	if (warmup > 0 && tt < w)
		return base * tt / w;
	return base;
}

int lr_sched_parse(const char *s, enum lr_sched *out)
{
	if (!strcmp(s, "constant"))
		*out = LR_CONSTANT;
	else if (!strcmp(s, "invsqrt") || !strcmp(s, "inverse-sqrt"))
		*out = LR_INVSQRT;
	else
		return -1;
	return 0;
}

const char *lr_sched_name(enum lr_sched s)
{
	return s == LR_INVSQRT ? "invsqrt" : "constant";
}
