/*
 * porter.c: NLTK's Porter stemmer, NLTK_EXTENSIONS mode (see porter.h).
 *
 * Written from the published algorithm (Porter 1980) and NLTK's documented
 * departures from it. Each step works in place on a word of n bytes;
 * a rule list is applied as NLTK applies it: the first rule whose suffix
 * matches decides, and if its condition fails the word stays as it is.
 */
#include "text/porter.h"

#include <string.h>

typedef struct {
	char *s;
	size_t n;
} word;

static int is_vowel(char c)
{
	return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u';
}

/* NLTK's _is_consonant: 'y' is a consonant at the start or after a vowel. */
static int cons(const char *s, size_t i)
{
	size_t j = i;
	int c;

	if (is_vowel(s[i]))
		return 0;
	if (s[i] != 'y')
		return 1;
	while (j > 0 && s[j - 1] == 'y')
		j--;
	/* s[j..i] are all 'y'; each alternates with the one before it */
	if (j == 0)
		c = 1;                 /* a leading y is a consonant */
	else
		c = !cons(s, j - 1) ? 1 : 0;   /* y after a vowel: consonant */
	return ((i - j) & 1) ? !c : c;
}

/* m in [C](VC)^m[V]: the number of vowel-consonant transitions. */
static size_t measure(const char *s, size_t n)
{
	size_t m = 0, i;
	int prev = -1, c;

	for (i = 0; i < n; i++) {
		if (is_vowel(s[i]))
			c = 0;
		else if (s[i] == 'y')
			c = (i == 0) ? 1 : !prev;
		else
			c = 1;
		if (prev == 0 && c == 1)
			m++;
		prev = c;
	}
	return m;
}

static int contains_vowel(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!cons(s, i))
			return 1;
	return 0;
}

static int ends_double_consonant(const char *s, size_t n)
{
	return n >= 2 && s[n - 1] == s[n - 2] && cons(s, n - 1);
}

static int ends_cvc(const char *s, size_t n)
{
	if (n >= 3 && cons(s, n - 3) && !cons(s, n - 2) && cons(s, n - 1) &&
	    s[n - 1] != 'w' && s[n - 1] != 'x' && s[n - 1] != 'y')
		return 1;
	return n == 2 && !cons(s, 0) && cons(s, 1);     /* NLTK extension */
}

static int ends(const word *w, const char *suf)
{
	size_t k = strlen(suf);

	return w->n >= k && memcmp(w->s + w->n - k, suf, k) == 0;
}

/* Replaces the last `cut` bytes with rep (never longer than the word). */
static void replace(word *w, size_t cut, const char *rep)
{
	size_t k = strlen(rep);

	memcpy(w->s + w->n - cut, rep, k);
	w->n = w->n - cut + k;
}

/* Conditions on the stem s[0..n). */
enum cond { ANY, M_GT0, M_GT1, ION, LOGI, E_RULE, NOT_LSZ, LL };

typedef struct {
	const char *suf;
	const char *rep;
	enum cond cond;
} rule;

static int cond_ok(enum cond c, const word *w, size_t stem_n)
{
	const char *s = w->s;

	switch (c) {
	case ANY: return 1;
	case M_GT0: return measure(s, stem_n) > 0;
	case M_GT1: return measure(s, stem_n) > 1;
	case ION: return measure(s, stem_n) > 1 &&
	                 (s[stem_n - 1] == 's' || s[stem_n - 1] == 't');
	case LOGI: return measure(s, stem_n + 1) > 0;   /* the 'l' stays with the stem */
	case E_RULE: return measure(s, stem_n) == 1 && ends_cvc(s, stem_n);
	case NOT_LSZ: return s[w->n - 1] != 'l' && s[w->n - 1] != 's' && s[w->n - 1] != 'z';
	case LL: return measure(s, w->n - 1) > 1;
	}
	return 0;
}

/* NLTK's _apply_rule_list. suf "*d" is the double-consonant rule (its
 * replacement is the doubled letter once); "" matches every word. */
static void apply_rules(word *w, const rule *r, size_t nr)
{
	size_t i, k;

	for (i = 0; i < nr; i++) {
		if (strcmp(r[i].suf, "*d") == 0) {
			if (ends_double_consonant(w->s, w->n)) {
				if (cond_ok(r[i].cond, w, w->n - 2))
					w->n -= 1;
				return;
			}
			continue;
		}
		if (!ends(w, r[i].suf))
			continue;
		k = strlen(r[i].suf);
		if (cond_ok(r[i].cond, w, w->n - k))
			replace(w, k, r[i].rep);
		return;
	}
}

static void step1a(word *w)
{
	static const rule r[] = {
		{ "sses", "ss", ANY }, { "ies", "i", ANY }, { "ss", "ss", ANY }, { "s", "", ANY },
	};

	if (w->n == 4 && ends(w, "ies")) {
		replace(w, 3, "ie");
		return;
	}
	apply_rules(w, r, sizeof r / sizeof r[0]);
}

static void step1b(word *w)
{
	static const rule r[] = {
		{ "at", "ate", ANY }, { "bl", "ble", ANY }, { "iz", "ize", ANY },
		{ "*d", "", NOT_LSZ }, { "", "e", E_RULE },
	};
	size_t k;

	if (ends(w, "ied")) {
		replace(w, 3, w->n == 4 ? "ie" : "i");
		return;
	}
	if (ends(w, "eed")) {
		if (measure(w->s, w->n - 3) > 0)
			replace(w, 3, "ee");
		return;
	}
	if (ends(w, "ed") && contains_vowel(w->s, w->n - 2))
		k = 2;
	else if (ends(w, "ing") && contains_vowel(w->s, w->n - 3))
		k = 3;
	else
		return;
	w->n -= k;
	apply_rules(w, r, sizeof r / sizeof r[0]);
}

static void step1c(word *w)
{
	/* NLTK: y -> i when the stem is longer than one letter and ends in a consonant */
	if (ends(w, "y") && w->n - 1 > 1 && cons(w->s, w->n - 2))
		w->s[w->n - 1] = 'i';
}

static void step2(word *w)
{
	static const rule r[] = {
		{ "ational", "ate", M_GT0 }, { "tional", "tion", M_GT0 },
		{ "enci", "ence", M_GT0 }, { "anci", "ance", M_GT0 },
		{ "izer", "ize", M_GT0 }, { "bli", "ble", M_GT0 },
		{ "alli", "al", M_GT0 }, { "entli", "ent", M_GT0 },
		{ "eli", "e", M_GT0 }, { "ousli", "ous", M_GT0 },
		{ "ization", "ize", M_GT0 }, { "ation", "ate", M_GT0 },
		{ "ator", "ate", M_GT0 }, { "alism", "al", M_GT0 },
		{ "iveness", "ive", M_GT0 }, { "fulness", "ful", M_GT0 },
		{ "ousness", "ous", M_GT0 }, { "aliti", "al", M_GT0 },
		{ "iviti", "ive", M_GT0 }, { "biliti", "ble", M_GT0 },
		{ "fulli", "ful", M_GT0 }, { "logi", "log", LOGI },
	};

	/* NLTK applies alli -> al first and, if it fires, runs step 2 again */
	while (ends(w, "alli") && measure(w->s, w->n - 4) > 0)
		replace(w, 4, "al");
	apply_rules(w, r, sizeof r / sizeof r[0]);
}

static void step3(word *w)
{
	static const rule r[] = {
		{ "icate", "ic", M_GT0 }, { "ative", "", M_GT0 }, { "alize", "al", M_GT0 },
		{ "iciti", "ic", M_GT0 }, { "ical", "ic", M_GT0 }, { "ful", "", M_GT0 },
		{ "ness", "", M_GT0 },
	};

	apply_rules(w, r, sizeof r / sizeof r[0]);
}

static void step4(word *w)
{
	static const rule r[] = {
		{ "al", "", M_GT1 }, { "ance", "", M_GT1 }, { "ence", "", M_GT1 },
		{ "er", "", M_GT1 }, { "ic", "", M_GT1 }, { "able", "", M_GT1 },
		{ "ible", "", M_GT1 }, { "ant", "", M_GT1 }, { "ement", "", M_GT1 },
		{ "ment", "", M_GT1 }, { "ent", "", M_GT1 }, { "ion", "", ION },
		{ "ou", "", M_GT1 }, { "ism", "", M_GT1 }, { "ate", "", M_GT1 },
		{ "iti", "", M_GT1 }, { "ous", "", M_GT1 }, { "ive", "", M_GT1 },
		{ "ize", "", M_GT1 },
	};

	apply_rules(w, r, sizeof r / sizeof r[0]);
}

static void step5a(word *w)
{
	size_t m;

	if (!ends(w, "e"))
		return;
	m = measure(w->s, w->n - 1);
	if (m > 1 || (m == 1 && !ends_cvc(w->s, w->n - 1)))
		w->n -= 1;
}

static void step5b(word *w)
{
	static const rule r[] = { { "ll", "l", LL } };

	apply_rules(w, r, 1);
}

/* NLTK_EXTENSIONS irregular forms: word -> stem, looked up before anything. */
static const char *const irregular[][2] = {
	{ "skies", "sky" }, { "sky", "sky" }, { "dying", "die" }, { "lying", "lie" },
	{ "tying", "tie" }, { "news", "news" }, { "innings", "inning" },
	{ "inning", "inning" }, { "outings", "outing" }, { "outing", "outing" },
	{ "cannings", "canning" }, { "canning", "canning" }, { "howe", "howe" },
	{ "proceed", "proceed" }, { "exceed", "exceed" }, { "succeed", "succeed" },
};

size_t porter_stem(const char *in, size_t len, char *out)
{
	word w = { out, len };
	size_t i;

	for (i = 0; i < sizeof irregular / sizeof irregular[0]; i++)
		if (strlen(irregular[i][0]) == len && memcmp(irregular[i][0], in, len) == 0) {
			w.n = strlen(irregular[i][1]);
			memcpy(out, irregular[i][1], w.n);
			out[w.n] = 0;
			return w.n;
		}
	memcpy(out, in, len);
	out[len] = 0;
	if (len <= 2)
		return len;
	step1a(&w);
	step1b(&w);
	step1c(&w);
	step2(&w);
	step3(&w);
	step4(&w);
	step5a(&w);
	step5b(&w);
	out[w.n] = 0;
	return w.n;
}
