/*
 * spm: encoding and decoding (see spm.h); tokenizer.c finds the model file.
 *
 * The encoder is SentencePiece 0.1.97's unigram Model::EncodeOptimized
 * (Viterbi without a stored lattice) run over a sliding window of the
 * normalized text: best[i] is the best path ending at byte i. Whenever no
 * lattice node spans the current start position s, every path passes
 * through s, so the best path up to s is final and is emitted; the window
 * then moves on. Path scores keep accumulating across cuts exactly as in
 * SentencePiece, so the float rounding, and hence every tie, is the same.
 */
#include "text/spm_int.h"
#include "text/utf8.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define WANT (64u << 10)        /* normalized bytes produced per refill */

typedef struct bpnode {
	float score;             /* best path score ending here */
	int32_t id;              /* piece id of the last node */
	int64_t start;           /* its start (window-relative), -1 if unset */
} bpnode;

struct spm_work {
	spm_buf nb;              /* normalized text of the window */
	bpnode *bp;              /* [bpcap] best paths, window-relative */
	size_t bpcap;
	size_t *stack;           /* backtracking scratch */
	size_t scap;
};

/* --- output --- */

static int out_reserve(spm_enc *e, size_t extra)
{
	if (e->n + extra > e->icap) {
		size_t cap = e->icap ? e->icap : 1024;
		int32_t *q;
		while (cap < e->n + extra)
			cap *= 2;
		q = realloc(e->ids, cap * sizeof *q);
		if (!q)
			return -1;
		e->ids = q;
		e->icap = cap;
	}
	return 0;
}

static int piece_append(spm_enc *e, const char *s, size_t n, int sep)
{
	if (e->plen + n + 2 > e->pcap) {
		size_t cap = e->pcap ? e->pcap : 4096;
		char *q;
		while (cap < e->plen + n + 2)
			cap *= 2;
		q = realloc(e->pieces, cap);
		if (!q)
			return -1;
		e->pieces = q;
		e->pcap = cap;
	}
	if (sep && e->plen)
		e->pieces[e->plen++] = ' ';
	memcpy(e->pieces + e->plen, s, n);
	e->plen += n;
	e->pieces[e->plen] = 0;
	return 0;
}

/* Appends one token; an unknown run continuing the previous one merges. */
static int emit(const spm_model *m, spm_enc *e, unsigned flags, int32_t id,
                const char *surf, size_t len, int *last_unk)
{
	const int pieces = flags & SPM_ENC_PIECES;

	if (id == m->unk_id) {
		if (m->byte_fallback) {
			if (out_reserve(e, len) < 0)
				return -1;
			for (size_t i = 0; i < len; i++) {
				int32_t b = m->byte_id[(uint8_t)surf[i]];
				e->ids[e->n++] = b;
				if (pieces && piece_append(e, m->strs + m->pieces[b].off,
				                           m->pieces[b].len, 1) < 0)
					return -1;
			}
			*last_unk = 0;
			return 0;
		}
		if (*last_unk)
			return pieces ? piece_append(e, surf, len, 0) : 0;
		*last_unk = 1;
	} else {
		*last_unk = 0;
	}
	if (out_reserve(e, 1) < 0)
		return -1;
	e->ids[e->n++] = id;
	if (pieces) {
		if (id != m->unk_id) {
			size_t n;
			surf = spm_piece(m, id, &n);
			len = n;
		}
		if (piece_append(e, surf, len, 1) < 0)
			return -1;
	}
	return 0;
}

static int work_bp(struct spm_work *w, size_t need)
{
	if (need > w->bpcap) {
		size_t cap = w->bpcap ? w->bpcap : 4096;
		bpnode *q;
		while (cap < need)
			cap *= 2;
		q = realloc(w->bp, cap * sizeof *q);
		if (!q)
			return -1;
		w->bp = q;
		w->bpcap = cap;
	}
	return 0;
}

/* Emits the best path from window position cut to end (a cut point). */
static int emit_path(const spm_model *m, spm_enc *e, unsigned flags, struct spm_work *w,
                     size_t cut, size_t end, int *last_unk, lc_err *err)
{
	size_t k = 0, pos = end;

	while (pos > cut) {
		if (k == w->scap) {
			size_t cap = w->scap ? w->scap * 2 : 1024;
			size_t *q = realloc(w->stack, cap * sizeof *q);
			if (!q)
				return lc_fail(err, "out of memory");
			w->stack = q;
			w->scap = cap;
		}
		w->stack[k++] = pos;
		if (w->bp[pos].start < (int64_t)cut)
			return lc_fail(err, "internal error: broken best path");
		pos = (size_t)w->bp[pos].start;
	}
	while (k > 0) {
		size_t en = w->stack[--k];
		size_t st = (size_t)w->bp[en].start;
		if (emit(m, e, flags, w->bp[en].id, w->nb.p + st, en - st, last_unk) < 0)
			return lc_fail(err, "out of memory");
	}
	return 0;
}

static inline size_t one_char_len(uint8_t c)
{
	static const uint8_t t[16] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4};
	return t[c >> 4];
}

/* Encodes one sentence (SentencePieceProcessor::Encode without options). */
static int encode_sentence(const spm_model *m, const uint8_t *text, size_t len,
                           unsigned flags, spm_enc *e, lc_err *err)
{
	struct spm_work *w = e->w;
	spm_normst st;
	size_t s = 0, cut = 0, max_end = 0, fin = 0, look;
	const float unk_score = m->min_score - 10.0f;
	const spm_da *da = m->da;
	const uint32_t nda = m->nda;
	int last_unk = 0;

	look = m->max_key > 4 ? m->max_key : 4;
	w->nb.len = 0;
	spm_normalize_init(&st, &m->norm, m, text, len);
	if (work_bp(w, 1) < 0)
		return lc_fail(err, "out of memory");
	w->bp[0].score = 0.0f;
	w->bp[0].start = -1;
	w->bp[0].id = -1;
	for (;;) {
		int done = st.phase == 2;
		size_t nlen, limit;

		if (!done && s + look > fin) {
			size_t old = w->nb.len;
			/* move the window first when most of it is behind us */
			if (cut > WANT && cut > old / 2) {
				size_t keep = old - cut;
				memmove(w->nb.p, w->nb.p + cut, keep);
				w->nb.len = keep;
				for (size_t i = 0; i <= keep; i++) {
					w->bp[i] = w->bp[i + cut];
					if (w->bp[i].start >= 0)
						w->bp[i].start -= (int64_t)cut;
				}
				s -= cut;
				max_end -= cut;
				fin -= cut;
				cut = 0;
				old = keep;
			}
			if (spm_normalize_more(&st, &w->nb, WANT, &fin) < 0)
				return lc_fail(err, "out of memory");
			if (work_bp(w, w->nb.len + 1) < 0)
				return lc_fail(err, "out of memory");
			for (size_t i = old + 1; i <= w->nb.len; i++) {
				w->bp[i].start = -1;
				w->bp[i].score = 0.0f;
				w->bp[i].id = -1;
			}
			/* the trailing spaces trimmed at the end leave no nodes behind:
			 * none was made past fin */
			continue;
		}
		nlen = done ? w->nb.len : fin;
		limit = done ? nlen : (fin >= look ? fin - look + 1 : 0);
		if (s >= nlen)
			break;
		while (s < limit && s < nlen) {
			const uint8_t *nb = (const uint8_t *)w->nb.p;
			bpnode *bp = w->bp;
			const float till = bp[s].score;
			size_t mblen = one_char_len(nb[s]);
			int has_single = 0;
			int32_t node = 0;

			if (max_end <= s && s > cut) {
				if (emit_path(m, e, flags, w, cut, s, &last_unk, err) < 0)
					return -1;
				cut = s;
			}
			if (mblen > nlen - s)
				mblen = nlen - s;
			for (size_t k = s; k < nlen; k++) {
				uint32_t t = (uint32_t)(da[node].base + nb[k]);
				int32_t id;
				if (t >= nda || da[t].check != node)
					break;
				node = (int32_t)t;
				id = da[t].val;
				if (id < 0)
					continue;
				const spm_pc *pc = &m->pieces[id];
				if (pc->type == SPM_UNUSED)
					continue;
				size_t length = k + 1 - s;
				bpnode *tg = &bp[k + 1];
				double sc = pc->type == SPM_USER_DEFINED ?
				            (double)((float)length * m->max_score) - 0.1 :
				            (double)pc->score;
				double cand = sc + (double)till;
				if (tg->start == -1 || cand > (double)tg->score) {
					tg->score = (float)cand;
					tg->start = (int64_t)s;
					tg->id = id;
				}
				if (length == mblen)
					has_single = 1;
				if (k + 1 > max_end)
					max_end = k + 1;
			}
			if (!has_single) {
				bpnode *tg = &bp[s + mblen];
				float cand = unk_score + till;
				if (tg->start == -1 || cand > tg->score) {
					tg->score = cand;
					tg->start = (int64_t)s;
					tg->id = m->unk_id;
				}
				if (s + mblen > max_end)
					max_end = s + mblen;
			}
			s += mblen;
		}
		if (done && s >= nlen)
			break;
	}
	if (w->nb.len > cut && emit_path(m, e, flags, w, cut, w->nb.len, &last_unk, err) < 0)
		return -1;
	return 0;
}

static int marker_at(const char *p, size_t n, int *num, size_t *mlen)
{
	size_t i = 10;
	int v = 0;

	if (n < 12 || memcmp(p, "<extra_id_", 10) != 0)
		return 0;
	if (p[i] == '0') {
		i++;
	} else {
		while (i < n && i < 12 && p[i] >= '0' && p[i] <= '9')
			v = v * 10 + (p[i++] - '0');
		if (i == 10)
			return 0;
	}
	if (i >= n || p[i] != '>')
		return 0;
	*num = v;
	*mlen = i + 1;
	return 1;
}

int spm_encode(const spm_model *m, const char *text, size_t len, unsigned flags,
               spm_enc *e, lc_err *err)
{
	size_t pos = 0;

	e->n = 0;
	e->plen = 0;
	if ((flags & SPM_ENC_PIECES) && piece_append(e, "", 0, 0) < 0)
		return lc_fail(err, "out of memory");   /* pieces is "" at least */
	if (!e->w && !(e->w = calloc(1, sizeof *e->w)))
		return lc_fail(err, "out of memory");
	if ((flags & SPM_ENC_EOS) && m->eos_id < 0)
		return lc_fail(err, "the model has no end-of-sentence piece \"%s\"", m->eos_piece);
	if ((flags & SPM_ENC_EXTRA) && m->extra_base >= 0) {
		for (;;) {
			const char *q = memmem(text + pos, len - pos, "<extra_id_", 10);
			int num, dummy = 0;
			size_t mlen;

			while (q && !marker_at(q, len - (size_t)(q - text), &num, &mlen))
				q = memmem(q + 1, len - (size_t)(q + 1 - text), "<extra_id_", 10);
			if (!q)
				break;
			/* T5Tokenizer's markers strip the whitespace (str.isspace)
			 * on both sides (AddedToken lstrip and rstrip): the text
			 * before one, and the text after it */
			if (encode_sentence(m, (const uint8_t *)text + pos,
			                    utf8_py_rstrip_len(text + pos, (size_t)(q - text) - pos),
			                    flags, e, err) < 0)
				return -1;
			if (emit(m, e, flags, m->extra_base + SPM_EXTRA_IDS - 1 - num,
			         NULL, 0, &dummy) < 0)
				return lc_fail(err, "out of memory");
			pos = (size_t)(q - text) + mlen;
			pos += utf8_py_lstrip_off(text + pos, len - pos);
		}
	}
	if (encode_sentence(m, (const uint8_t *)text + pos, len - pos, flags, e, err) < 0)
		return -1;
	if (flags & SPM_ENC_EOS) {
		int dummy = 0;
		if (emit(m, e, flags, m->eos_id, NULL, 0, &dummy) < 0)
			return lc_fail(err, "out of memory");
	}
	return 0;
}

void spm_enc_free(spm_enc *e)
{
	if (e->w) {
		free(e->w->nb.p);
		free(e->w->bp);
		free(e->w->stack);
		free(e->w);
	}
	free(e->ids);
	free(e->pieces);
	memset(e, 0, sizeof *e);
}

/* --- decoding --- */

static int put(spm_buf *b, const char *s, size_t n)
{
	if (spm_buf_grow(b, n) < 0)
		return -1;
	memcpy(b->p + b->len, s, n);
	b->len += n;
	return 0;
}

/* ProcessBytePieces: the bytes of byte pieces ids[lo..hi) as UTF-8, each
 * invalid byte as U+FFFD. */
static int put_bytes(const spm_model *m, spm_buf *b, const int32_t *pid, size_t lo, size_t hi)
{
	uint8_t tmp[256];
	size_t n = 0;

	while (lo < hi || n) {
		/* collect up to 256 bytes, keeping an incomplete last character for the next round */
		while (lo < hi && n < sizeof tmp) {
			const spm_pc *pc = &m->pieces[pid[lo++]];
			const char *s = m->strs + pc->off;
			int v = 0;
			for (int i = 3; i < 5; i++)
				v = v * 16 + (s[i] <= '9' ? s[i] - '0' : s[i] - 'A' + 10);
			tmp[n++] = (uint8_t)v;
		}
		size_t off = 0;
		while (off < n) {
			size_t mb;
			if (lo < hi && n - off < 4)
				break;          /* may continue in the next round */
			if (spm_utf8_valid(tmp + off, n - off, &mb)) {
				if (put(b, (const char *)tmp + off, mb) < 0)
					return -1;
			} else if (put(b, "\xef\xbf\xbd", 3) < 0) {
				return -1;
			}
			off += mb;
		}
		memmove(tmp, tmp + off, n - off);
		n -= off;
		if (lo >= hi && n == 0)
			break;
	}
	return 0;
}

int spm_decode(const spm_model *m, const int32_t *ids, size_t n,
               char **out, size_t *outlen, size_t *cap, lc_err *err)
{
	spm_buf b = {*out, 0, *cap};
	int32_t *pid = NULL;
	size_t byte_start = 0;
	int32_t vocab = spm_vocab_size(m);
	int rc = -1;

	pid = malloc((n ? n : 1) * sizeof *pid);
	if (!pid)
		goto oom;
	for (size_t i = 0; i < n; i++) {
		if (ids[i] < 0 || ids[i] >= vocab) {
			lc_fail(err, "invalid id %ld at position %zu (the vocabulary has %ld)",
			        (long)ids[i], i + 1, (long)vocab);
			goto out;
		}
		/* Decode(ids) goes through the pieces and back, as SentencePiece does */
		if (ids[i] >= m->npieces) {
			pid[i] = ids[i];
		} else {
			const spm_pc *pc = &m->pieces[ids[i]];
			pid[i] = spm_piece_to_id(m, m->strs + pc->off, pc->len);
		}
	}
	/* SentencePieceProcessor::Decode: a leading U+2581 is dropped from the
	 * first pieces when the normalizer adds a dummy prefix or removes extra
	 * whitespace; with remove_extra_whitespaces every leading one goes. */
	int is_bos_ws = 1, bos_ws_seen = 0;
	const int strip = m->norm.add_dummy_prefix || m->norm.remove_extra_ws;
	for (size_t i = 0; i <= n; i++) {
		int t;
		if (i < n && pid[i] < m->npieces && m->pieces[pid[i]].type == SPM_BYTE)
			continue;
		if (put_bytes(m, &b, pid, byte_start, i) < 0)
			goto oom;
		byte_start = i + 1;
		if (i == n)
			break;
		if (bos_ws_seen || b.len > 0)
			is_bos_ws = 0;
		bos_ws_seen = 0;
		t = spm_type_of(m, pid[i]);
		if (t == SPM_CONTROL)
			continue;
		if (t == SPM_UNKNOWN) {
			if (put(&b, m->unk_surface, strlen(m->unk_surface)) < 0)
				goto oom;
			continue;
		}
		size_t len;
		const char *s = spm_piece(m, pid[i], &len);
		if (is_bos_ws && strip && len >= 3 && memcmp(s, "\xe2\x96\x81", 3) == 0) {
			s += 3;
			len -= 3;
			bos_ws_seen = !m->norm.remove_extra_ws;
		}
		for (size_t k = 0; k < len;) {
			if (k + 3 <= len && memcmp(s + k, "\xe2\x96\x81", 3) == 0) {
				if (put(&b, " ", 1) < 0)
					goto oom;
				k += 3;
			} else {
				if (put(&b, s + k, 1) < 0)
					goto oom;
				k++;
			}
		}
	}
	if (m->has_denorm) {
		spm_buf d = {NULL, 0, 0};
		if (spm_normalize(&m->denorm, NULL, b.p ? b.p : "", b.len, &d) < 0) {
			free(d.p);
			goto oom;
		}
		free(b.p);
		b = d;
	}
	if (spm_buf_grow(&b, 0) < 0)
		goto oom;
	b.p[b.len] = 0;
	rc = 0;
	goto out;
oom:
	lc_fail(err, "out of memory");
out:
	free(pid);
	*out = b.p;
	*cap = b.cap;
	*outlen = rc == 0 ? b.len : 0;
	return rc;
}

