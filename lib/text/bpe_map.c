/*
 * bpe_map.c: the hash maps of the byte-level BPE tokenizer (bpe_int.h):
 * byte strings -> int64 (vocabulary, symbols, word cache) and uint64 ->
 * uint64 (merges), open addressing with linear probing.
 */
#include "text/bpe_int.h"

#include <stdlib.h>
#include <string.h>

#include "base/hash.h"
#include "base/rng.h"

void smap_free(smap *m)
{
	free(m->slot);
	free(m->ent);
	free(m->pool);
	memset(m, 0, sizeof *m);
}

int64_t smap_get(const smap *m, const void *k, size_t len)
{
	uint64_t h, i;

	if (!m->cap)
		return -1;
	h = lc_hash_bytes(k, len);
	for (i = h & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		uint64_t s = m->slot[i];
		const struct sent *e;
		if (!s)
			return -1;
		e = &m->ent[s - 1];
		if (e->hash == h && e->len == len && memcmp(m->pool + e->off, k, len) == 0)
			return e->val;
	}
}

static int smap_grow(smap *m)
{
	uint64_t nc = m->cap ? 2 * m->cap : 1024, *ns = calloc(nc, sizeof *ns);

	if (!ns)
		return -1;
	for (uint64_t e = 0; e < m->n; e++) {
		uint64_t i = m->ent[e].hash & (nc - 1);
		while (ns[i])
			i = (i + 1) & (nc - 1);
		ns[i] = e + 1;
	}
	free(m->slot);
	m->slot = ns;
	m->cap = nc;
	return 0;
}

/* Sets k -> v (replacing); -1 when out of memory. */
int smap_put(smap *m, const void *k, size_t len, int64_t v)
{
	uint64_t h = lc_hash_bytes(k, len), i;

	if ((m->n + 1) * 2 > m->cap && smap_grow(m) < 0)
		return -1;
	for (i = h & (m->cap - 1); m->slot[i]; i = (i + 1) & (m->cap - 1)) {
		struct sent *e = &m->ent[m->slot[i] - 1];
		if (e->hash == h && e->len == len && memcmp(m->pool + e->off, k, len) == 0) {
			e->val = v;
			return 0;
		}
	}
	if (m->n == m->ecap) {
		uint64_t nc = m->ecap ? 2 * m->ecap : 1024;
		struct sent *ne = realloc(m->ent, nc * sizeof *ne);
		if (!ne)
			return -1;
		m->ent = ne;
		m->ecap = nc;
	}
	if (m->plen + len + 1 > m->pcap) {
		uint64_t nc = m->pcap ? 2 * m->pcap : 65536;
		char *np;
		while (nc < m->plen + len + 1)
			nc *= 2;
		if (!(np = realloc(m->pool, nc)))
			return -1;
		m->pool = np;
		m->pcap = nc;
	}
	memcpy(m->pool + m->plen, k, len);
	m->pool[m->plen + len] = 0;
	m->ent[m->n] = (struct sent){ m->plen, len, h, v };
	m->plen += len + 1;
	m->slot[i] = ++m->n;
	return 0;
}

const char *smap_key(const smap *m, int64_t e, size_t *len)
{
	*len = m->ent[e].len;
	return m->pool + m->ent[e].off;
}

void umap_free(umap *m)
{
	free(m->key);
	free(m->val);
	memset(m, 0, sizeof *m);
}

int umap_get(const umap *m, uint64_t k, uint64_t *v)
{
	if (!m->cap)
		return 0;
	k++;
	for (uint64_t i = lc_mix64(k) & (m->cap - 1);; i = (i + 1) & (m->cap - 1)) {
		if (!m->key[i])
			return 0;
		if (m->key[i] == k) {
			*v = m->val[i];
			return 1;
		}
	}
}

int umap_put(umap *m, uint64_t k, uint64_t v)
{
	uint64_t i;

	if ((m->n + 1) * 2 > m->cap) {
		uint64_t nc = m->cap ? 2 * m->cap : 1024;
		uint64_t *nk = calloc(nc, sizeof *nk), *nv = calloc(nc, sizeof *nv);
		if (!nk || !nv) {
			free(nk);
			free(nv);
			return -1;
		}
		for (uint64_t j = 0; j < m->cap; j++)
			if (m->key[j]) {
				for (i = lc_mix64(m->key[j]) & (nc - 1); nk[i]; i = (i + 1) & (nc - 1))
					;
				nk[i] = m->key[j];
				nv[i] = m->val[j];
			}
		free(m->key);
		free(m->val);
		m->key = nk;
		m->val = nv;
		m->cap = nc;
	}
	k++;
	for (i = lc_mix64(k) & (m->cap - 1); m->key[i] && m->key[i] != k; i = (i + 1) & (m->cap - 1))
		;
	if (!m->key[i])
		m->n++;
	m->key[i] = k;
	m->val[i] = v;
	return 0;
}

