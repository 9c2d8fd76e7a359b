/*
 * jsonl: records from JSON Lines files, one JSON object per line, the way
 * data sets are exported (Hugging Face datasets' to_json: {"id": ...,
 * "article": ..., "abstract": ...}). The one definition of what a good
 * line is, for every reader of JSON Lines (lc-tokenize, lc-gsg-split and
 * lc-train through jsonl_open; lc-rouge --jsonl, text/rouge_jsonl.h,
 * through jsonl_parse).
 *
 * A reader takes its lines from textin (textin.h, split by lines), so
 * plain, compressed (.jsonl.gz, .zst, .xz, ...) and archived files,
 * directories and standard input work as they do for text. Each line
 * gives a record: the string value of each field asked for, and a name,
 * the value of the id field when one is asked for and the line has it,
 * else "FILE:LINE" as textin names lines (FILE being the archive member
 * in an archive). A string id names the record as it is, an integer one
 * in decimal: the id 7 and the id "7" give the same name, "7", so that a
 * document named by lc-tokenize --id pairs in lc-rouge --jsonl with a
 * reference of either id ("007" is another name).
 *
 * A line that is empty or only white space is skipped (it is no record
 * and not a bad line); a UTF-8 byte order mark at the start of a line is
 * ignored. Any other line is bad unless it is one JSON object, in valid
 * UTF-8, without \u0000 in its strings or a key given twice, whose id
 * field, if present and not null (or always, with id_required), is a
 * string that jsonl_check_name accepts (not empty, at most LC_MAX_NAME =
 * 4096 bytes, no control character) or an integer, and in which every
 * field asked for is a string (the empty string too). A bad line is an
 * error "FILE:LINE: why" (byte positions count from the line's start, a
 * byte order mark included; a message about a field of a record with an
 * id names the id too), or with skip_bad is skipped and counted.
 */
#ifndef LC_JSONL_H
#define LC_JSONL_H

#include <stddef.h>
#include <stdint.h>

#include "base/err.h"

#define JSONL_MAX_FIELDS 4

typedef struct jsonl_spec {
	const char *field[JSONL_MAX_FIELDS];  /* the string fields of every record, [nfield] */
	int nfield;                           /* 1 to JSONL_MAX_FIELDS */
	const char *id;                       /* the field naming a record; NULL: none */
	int id_required;                      /* a line without the id field, or with null, is bad */
	int skip_bad;                         /* skip and count bad lines instead of failing */
} jsonl_spec;

typedef struct jsonl_rec {
	const char *name;                     /* the id, or the line's "FILE:LINE" */
	const char *where;                    /* the line's "FILE:LINE" */
	int has_id;                           /* name is the id field's, not where */
	const char *text[JSONL_MAX_FIELDS];   /* field i's UTF-8 value, [len[i]] + NUL */
	size_t len[JSONL_MAX_FIELDS];
	/* private */
	void *root;
	char *namebuf;
} jsonl_rec;

/* Parses line[len] (without its "\n"); where ("FILE:LINE") names it in
 * messages and is its default name. 1: a record in *r (valid until the
 * next call with r or jsonl_rec_free); 0: a blank line; -1: a bad line,
 * err saying "WHERE: why". */
int jsonl_parse(const jsonl_spec *s, const char *line, size_t len, const char *where,
                jsonl_rec *r, lc_err *err);
void jsonl_rec_free(jsonl_rec *r);

/* 0 if name[len] can name a record (not empty, at most LC_MAX_NAME bytes,
 * no control character: a name every output format can hold), else -1
 * and err says "WHAT is empty", "WHAT is longer than ... bytes (\"...\")"
 * or "WHAT holds a control character (byte N, after \"...\")", WHAT
 * being fmt formatted (e.g. "FILE:LINE: the id field \"id\""). */
int jsonl_check_name(const char *name, size_t len, lc_err *err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

typedef struct jsonl jsonl;

/* path as textin_open takes it (NULL or "-": standard input). *s is
 * copied; its strings must outlive the reader. An lc stream is refused
 * when it is read: it holds no JSON Lines. */
jsonl *jsonl_open(const char *path, const jsonl_spec *s, lc_err *err);
/* 1: the next record in *r (valid until the next call); 0: no more;
 * -1: a read error or, without skip_bad, a bad line. */
int jsonl_next(jsonl *j, const jsonl_rec **r, lc_err *err);
/* Bad lines skipped so far, and the message of the first (NULL if none). */
uint64_t jsonl_skipped(const jsonl *j);
const char *jsonl_first_bad(const jsonl *j);
void jsonl_close(jsonl *j);

/* Room for a tally's message. */
#define LC_JSONL_MSG 1200

/* The bad lines skipped over all the inputs of a run, for the one warning
 * at its end. Start from {0}. */
typedef struct jsonl_tally {
	uint64_t n;
	char *first;                /* the first one's message */
} jsonl_tally;
/* Adds what j skipped (before jsonl_close); -1 when out of memory. */
int jsonl_tally_add(jsonl_tally *t, const jsonl *j, lc_err *err);
/* Adds one line skipped, msg saying why ("FILE:LINE: why"). */
int jsonl_tally_note(jsonl_tally *t, const char *msg, lc_err *err);
/* "skipped N bad JSON line(s) (the first: ...)" into buf[n]; 0 (and
 * nothing written) when none was skipped, else 1. */
int jsonl_tally_msg(const jsonl_tally *t, char *buf, size_t n);
void jsonl_tally_free(jsonl_tally *t);

#endif
