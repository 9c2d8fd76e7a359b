#include "text/span.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/nprand.h"
#include "base/rng.h"

/* np.round: half to even, in the default rounding mode */
static int64_t round_even(double x)
{
	return (int64_t)nearbyint(x);
}

void span_counts(int64_t len, double density, double mean_span, int64_t *nnoise,
                 int64_t *nspans)
{
	int64_t nn = round_even((double)len * density), ns;

	if (nn < 1)
		nn = 1;
	if (nn > len - 1)
		nn = len - 1;
	ns = round_even((double)nn / mean_span);
	*nnoise = nn;
	*nspans = ns < 1 ? 1 : ns;
}

int64_t span_num_sentinels(int64_t max_source_positions, double density, double mean_span)
{
	return round_even((double)round_even((double)(max_source_positions - 2) * density) /
	                  mean_span);
}

double span_pick(const double *set, int n, uint64_t seed, uint64_t index)
{
	uint64_t x = lc_mix64(lc_mix64(seed ^ 0x7370616e5f6c656eull) + index);   /* "span_len" */

	return set[x % (uint64_t)n];   /* a bias of n / 2^64 at most */
}

static int grow(void *pp, int64_t *cap, int64_t need, size_t size)
{
	void *q;

	if (need <= *cap)
		return 0;
	if (!(q = realloc(*(void **)pp, (size_t)need * size)))
		return -1;
	*(void **)pp = q;
	*cap = need;
	return 0;
}

/* random_segmentation(n, k) of the authors: writes into seg[k] the
 * lengths; a (n - 1 bytes) is scratch. */
static void segment(nprand *g, uint8_t *a, int64_t n, int64_t k, int64_t *seg)
{
	int64_t s = 0;

	for (int64_t i = 0; i < n - 1; i++)
		a[i] = i < k - 1;
	nprand_shuffle(g, a, (size_t)(n - 1), 1);
	seg[0] = 1;
	for (int64_t i = 0; i < n - 1; i++) {
		if (a[i])
			seg[++s] = 1;   /* item i + 1 starts a new segment */
		else
			seg[s]++;
	}
}

int span_corrupt(const span_opts *o, const int32_t *tokens, int64_t n, int64_t head,
                 int64_t tail, uint32_t np_seed, span_out *out, lc_err *err)
{
	int64_t len = n - head - tail, nn, ns, *seg = NULL, keep, k, p, body_tgt;
	const int32_t *body = tokens + head;
	nprand g;

	if (head < 0 || tail < 0)
		return lc_fail(err, "negative ends");
	out->len = len > 0 ? len : 0;
	out->nnoise = out->nspans = 0;
	if (len < 0) {
		lc_fail(err, "%lld tokens, fewer than the %lld + %lld kept at the ends", (long long)n,
		        (long long)head, (long long)tail);
		return SPAN_SHORT;
	}
	if (len < 2) {
		lc_fail(err, "a body of %lld token%s is too short to noise (the authors' code fails "
		        "on it)", (long long)len, len == 1 ? "" : "s");
		return SPAN_SHORT;
	}
	if (len - 1 > (int64_t)UINT32_MAX)
		return lc_fail(err, "a body of %lld tokens: at most 2^32 can be noised", (long long)len);
	span_counts(len, o->density, o->mean_span, &nn, &ns);
	if (len - nn < ns || nn < ns) {
		lc_fail(err, "a body of %lld tokens is too short: %lld noise tokens in %lld spans "
		        "leave %lld tokens for the %lld spans between them", (long long)len,
		        (long long)nn, (long long)ns, (long long)(len - nn), (long long)ns);
		return SPAN_SHORT;
	}
	if ((o->max_spans > 0 && ns > o->max_spans) ||
	    (o->step < 0 && ns - 1 > (int64_t)o->sentinel) ||
	    (o->step > 0 && ns - 1 > (int64_t)INT32_MAX - o->sentinel))
		return lc_fail(err, "%lld noise spans, more than the sentinels available (%lld)",
		               (long long)ns, (long long)(o->max_spans > 0 ? o->max_spans :
		               o->step < 0 ? (int64_t)o->sentinel + 1 : (int64_t)INT32_MAX -
		               o->sentinel + 1));
	if (grow(&out->mask, &out->cap_mask, len, 1) < 0 ||
	    grow(&out->src, &out->cap_src, head + len - nn + ns + tail, sizeof(int32_t)) < 0 ||
	    grow(&out->tgt, &out->cap_tgt, head + nn + ns + tail, sizeof(int32_t)) < 0 ||
	    !(seg = malloc(2 * (size_t)ns * sizeof *seg)))
		return lc_fail(err, "out of memory");
	out->nnoise = nn;
	out->nspans = ns;

	/* the mask: noise segments first, then the rest, as the authors draw them */
	nprand_seed(&g, np_seed);
	segment(&g, out->mask, nn, ns, seg + ns);
	segment(&g, out->mask, len - nn, ns, seg);
	p = 0;
	for (k = 0; k < ns; k++) {
		memset(out->mask + p, 0, (size_t)seg[k]);
		p += seg[k];
		memset(out->mask + p, 1, (size_t)seg[ns + k]);
		p += seg[ns + k];
	}

	/* source and target */
	memcpy(out->src, tokens, (size_t)head * sizeof *tokens);
	memcpy(out->tgt, tokens, (size_t)head * sizeof *tokens);
	out->nsrc = out->ntgt = head;
	p = 0;
	for (k = 0; k < ns; k++) {
		int32_t s = o->sentinel + (int32_t)(o->step * k);

		memcpy(out->src + out->nsrc, body + p, (size_t)seg[k] * sizeof *body);
		out->nsrc += seg[k];
		p += seg[k];
		out->src[out->nsrc++] = s;
		out->tgt[out->ntgt++] = s;
		memcpy(out->tgt + out->ntgt, body + p, (size_t)seg[ns + k] * sizeof *body);
		out->ntgt += seg[ns + k];
		p += seg[ns + k];
	}
	free(seg);
	body_tgt = out->ntgt - head;
	keep = o->truncate_target > 0 && body_tgt > o->truncate_target ? o->truncate_target : body_tgt;
	out->truncated = keep < body_tgt;
	out->ntgt = head + keep;
	memcpy(out->src + out->nsrc, tokens + n - tail, (size_t)tail * sizeof *tokens);
	memcpy(out->tgt + out->ntgt, tokens + n - tail, (size_t)tail * sizeof *tokens);
	out->nsrc += tail;
	out->ntgt += tail;
	return 0;
}

void span_out_free(span_out *out)
{
	free(out->src);
	free(out->tgt);
	free(out->mask);
	memset(out, 0, sizeof *out);
}
